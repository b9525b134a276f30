#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The GPU check: runs Ferrostream's GPU tests and benchmarks on an NVIDIA machine that has the
# driver and CUDA but neither GStreamer nor Rust, from a bundle made on a Debian 12 build machine.
#
# Usage:
#   scripts/gpu-check.sh bundle          on the build machine (Debian 12, x86_64): builds the GPU
#                                        test and bench binaries and the plugin, and writes the
#                                        git-ignored folders the GPU machine needs: .gpu/ (the
#                                        tests' bundle, under 60 MiB), .gpu-ort-1/, .gpu-ort-2/, ...
#                                        (ONNX Runtime's GPU build in pieces of at most 60 MiB),
#                                        .gpu-models/, .gpu-models-2/, ... (the tests' models, in
#                                        parts of at most 40 MiB) and .gpu-bench/ (the
#                                        benchmark's clip and wheels); prints their
#                                        sizes and the device calls that carry them (below)
#   scripts/gpu-check.sh stash           on the GPU machine, from the repository root: moves every
#                                        carried .gpu-ort-*/ piece, .gpu-models*/ part and .gpu-bench/ out of the tree
#                                        into the stash ($GPU_CHECK_STASH), checks each piece's
#                                        sha256, and prints which pieces are there and which are
#                                        still missing; safe to repeat
#   scripts/gpu-check.sh run [ARGS...]   on the GPU machine, from the repository root, with .gpu/
#                                        beside it: stashes what the call carries, unpacks the
#                                        bundle, sets up ONNX Runtime (the GPU build when all its
#                                        pieces are in the stash: assembled, checked and unpacked
#                                        there once; else it names the missing pieces and goes on
#                                        with the bundle's CPU build, if any), smoke-checks
#                                        GStreamer's nvcodec and our plugin, runs every test binary
#                                        (--include-ignored --test-threads=1 --nocapture ARGS...;
#                                        GPU tests are #[ignore]d elsewhere) and bench binary
#                                        (--bench), and prints a summary; exits non-zero when
#                                        anything failed. FERROSTREAM_REQUIRE_GPU=1 is set, so
#                                        tests fail instead of skipping without a GPU.
#   scripts/gpu-check.sh bench [ARGS...] on the GPU machine, with .gpu/ beside it and the pieces
#                                        and .gpu-bench/ stashed: the throughput benchmark (ARGS go
#                                        to scripts/gpu_bench.py, e.g. --models yolov8s,yolov8m
#                                        --streams 8,32,64 --precisions fp32,fp16; its --help lists
#                                        them). Steps:
#                                        1. as run: stash, unpack, ONNX Runtime's GPU build (bench
#                                           fails without it);
#                                        2. installs .gpu-bench/wheels (ultralytics and its missing
#                                           needs) into the stash and, for models whose ONNX file
#                                           is missing, runs scripts/models/export_ultralytics.py
#                                           into the stash (once per machine);
#                                        3. scripts/gpu_bench.py: a baseline (16 streams decoded
#                                           and batched by rsstreammux, no inference: the NVDEC
#                                           and demux ceiling), then per model, stream count N and
#                                           precision P (BENCH_PRECISIONS: fp32 and fp16) the
#                                           element pipeline
#                                             filesrc ! qtdemux ! h264parse ! nvh264dec ! queue
#                                             ! mux.sink_i (N times)  rsstreammux batch-size=N
#                                             ! rstrtinfer device=cuda batch-size=N network-mode=P
#                                             ! rstracker ! rsosd ! fakesink sync=false
#                                           (frames/s from PLAYING to EOS, SM and NVDEC busy from
#                                           nvidia-smi dmon, bytes and latency from rstrtinfer's
#                                           summary line), the bare ONNX Runtime CUDA session of
#                                           each P (scripts/bench/bare_session.py: the element's
#                                           ceiling; at fp16 on the FP16 model the element
#                                           converted; with the CUDA provider settings the element
#                                           chose and recorded for that model, P and N) and, for
#                                           a few N, the do-it-yourself Python peer
#                                           (scripts/bench/diy_peer.py, fp32). The element runs
#                                           keep their engine cache (FERROSTREAM_ENGINE_CACHE) in
#                                           engine-cache/ of the logs folder, removed at the end;
#                                           its text records go into bench-logs.tar.gz;
#                                        4. markdown tables (per model, N and P; FP16 against
#                                           FP32), printed last and written to bench.md, with
#                                           bench.json and bench-logs.tar.gz.
#                                        Every run has a time limit and the whole bench stops
#                                        starting runs when BENCH_TOTAL_S is near.
#   scripts/gpu-check.sh local [ARGS...] the same as run, on the build machine, to check the bundle
#                                        and this script without a GPU (tests skip, unless
#                                        FERROSTREAM_REQUIRE_GPU is set in the environment)
#   scripts/gpu-check.sh env             unpacks the bundle and prints run's environment as
#                                        'export' lines, for trying things by hand:
#                                        eval "$(scripts/gpu-check.sh env)"; gst-launch-1.0 ...
#
# Device calls. Each call carries the working tree (about 2 MiB) plus the folders named in its
# carry list, at most 64 MiB in all, so ONNX Runtime's GPU build (about 190 MiB compressed)
# travels in pieces, one call each, into the stash on the GPU machine. The stash lives only as
# long as the machine: it stays warm about 30 s after a call, so make the calls one right after
# the other (a fresh machine has an empty stash: then start again at call 1). bundle prints this
# list with the real folders and sizes; with four pieces it reads:
#   1. command "scripts/gpu-check.sh stash"   carry [".gpu-ort-1", ".gpu-bench"]
#   2. command "scripts/gpu-check.sh stash"   carry [".gpu-ort-2"]
#   3. command "scripts/gpu-check.sh stash"   carry [".gpu-ort-3"]
#   4. command "scripts/gpu-check.sh stash"   carry [".gpu-ort-4"]
#   5. command "scripts/gpu-check.sh run"     carry [".gpu"]
#   6. command "scripts/gpu-check.sh bench --models yolov8s,yolov8m --streams 8,32,64 --diy-streams 0 --baseline 0"
#                                             carry [".gpu"]   timeout_s 600
#   7. command "scripts/gpu-check.sh bench --models rtdetr_l --streams 8,32,64 --diy-streams 0"
#                                             carry [".gpu"]   timeout_s 600
# Each stash call prints what is still missing. run and bench stash what they carry first, so a
# piece or .gpu-bench may also ride along with .gpu when there is room. Without the pieces, run
# alone (carry [".gpu"]) still works, on the CPU build of ONNX Runtime. Settings go before the
# command or after it as gpu_bench.py's options, e.g. "BENCH_MODELS=coco_ssd,yolov8s
# scripts/gpu-check.sh bench" or "scripts/gpu-check.sh bench --models coco_ssd,yolov8s". The
# bench calls are BENCH_CALLS (below): FP32 and FP16 of YOLOv8s/m and RT-DETR-L at N = 8, 32
# and 64 are 18 element runs (each also tunes the CUDA provider at start) and 6 bare sessions,
# more than one call's 10 minutes, so they are split by models; each call writes its own
# bench.md.
#
# What .gpu/ holds:
#   gst.tar.xz    Debian 12's GStreamer 1.22 runtime (the packages in GST_DEBS, unpacked with
#                 dpkg-deb -x into a private prefix, trimmed to the plugins in GST_PLUGINS and the
#                 libraries they, the tools and our binaries need)
#   bin.tar.xz    bin/: the test and bench binaries listed in GPU_TESTS and GPU_BENCHES;
#                 plugins/: libgstferrostream.so (debug info stripped)
#   ort.tar.xz    ort/: libonnxruntime.so (CPU build), as scripts/install-onnxruntime.sh installs
#                 it; left out when the GPU build is bundled, unless GPU_CHECK_ORT=1
#   media/        the footage in GPU_MEDIA (not compressed: it does not shrink)
#   MANIFEST      what run executes, one line each: "test|bench NAME PACKAGE-DIR FILE"; the CPU
#                 build ("ort FILE") and the GPU build ("ort-gpu VERSION PIECES SHA256 ARCHIVE")
# The archives are compressed because unpacked, the binaries and libraries would be about three
# times over the budget; run unpacks them afresh into $GPU_CHECK_ROOT (default
# ${TMPDIR:-/tmp}/ferrostream-gpu), so .gpu/ itself never grows.
# .gpu-ort-N/ (N = 1..PIECES) holds piece N of one xz archive (xz -9e) of the onnxruntime-gpu
# wheel's onnxruntime/ package, without its pure-Python tools (ORT_GPU_KEEP says what stays), and
# PIECE: its index, the count, the sha256 and size of the whole archive and of the piece.
# .gpu-models/ (and .gpu-models-2/, ... when they do not fit into one call) holds the models and
# label files in GPU_MODELS and CONTENTS (its part, "part K N", and every file's sha256): they do
# not compress and would take the tests' bundle over one call's budget, so they travel like the
# benchmark's extras, in stash calls or beside .gpu when there is room; the parts join in the
# stash's test-models/, complete once every part is there, and run points FERROSTREAM_MODEL_DIR
# at it.
# .gpu-bench/ holds the benchmark's 1080p H.264 clip (made from vtest.avi), wheels/ (the wheels
# in BENCH_WHEELS) and CONTENTS (the clip's frame count and every file's sha256).
# The stash ($GPU_CHECK_STASH, default /var/tmp/ferrostream-stash): pieces/NAME-SHA/ (the
# pieces), test-models/ (.gpu-models), ort-gpu/SHA/onnxruntime/ (the unpacked GPU build: ORT_DYLIB_PATH points at its
# capi/libonnxruntime.so.VERSION, its parent goes on PYTHONPATH, capi/ and python3's
# nvidia/cu13/lib and nvidia/cudnn/lib on LD_LIBRARY_PATH), bench/ (.gpu-bench), site/ (the
# installed wheels), models/ (exported models). On a machine without a GPU (nvidia-smi fails)
# the carried folders are linked or copied into the stash instead of moved, so the build
# machine's bundle stays whole.
#
# Logs: one per step, plus summary.txt (the table printed last), go to $OUT when it is set, else
# to $GPU_CHECK_LOGS (default /tmp/gpu-check). A test reports a number by printing a line
#   GPU-RESULT <name> <value> <unit> [note...]
# and every such line appears in the summary, below one row per binary (name, pass/FAIL, seconds).
# bench writes bench.log, bench.md, bench.json and bench-logs.tar.gz there.
#
# Environment (all optional):
#   GPU_CHECK_TESTS, GPU_CHECK_BENCHES   space-separated lists that replace GPU_TESTS/GPU_BENCHES
#   GPU_CHECK_RELEASE=1                  bundle: build tests and the plugin with --release
#   GPU_CHECK_PLUGIN=FILE                bundle: ship this libgstferrostream.so instead of building it
#   GPU_CHECK_ORT=0|1                    bundle: ship no CPU ONNX Runtime (run then uses the GPU
#                                        build or python3's onnxruntime package, if any) or ship
#                                        it also when the GPU build is bundled (default: only when
#                                        it is not)
#   GPU_CHECK_ORT_GPU=0                  bundle: no GPU build (no .gpu-ort-*/); run/bench/env:
#                                        ignore the stashed GPU build
#   GPU_CHECK_BENCH=0                    bundle: no .gpu-bench/
#   GPU_CHECK_BENCH_WHEELS="SPEC..."     bundle: the wheels for .gpu-bench/wheels (default
#                                        BENCH_WHEELS)
#   BENCH_CLIP_FRAMES=N                  bundle: about this many frames in the 30 fps benchmark
#                                        clip (default 300)
#   GPU_CHECK_STASH=DIR                  stash/run/bench: the stash (default /var/tmp/ferrostream-stash)
#   GPU_CHECK_STASH_MOVE=0|1             stash/run/bench: copy or move carried folders (default:
#                                        move where nvidia-smi works, else link or copy)
#   GPU_CHECK_ONLY="NAME..."             run/local: run only these binaries (names as in MANIFEST)
#   GPU_CHECK_TIMEOUT=SECONDS            run/local: limit for each binary (default 240)
#   BENCH_MODELS=a,b                     bench: configurations pipelines/NAME.txt (default
#                                        coco_ssd,yolov8s,yolov8m,rtdetr_l); a model whose ONNX file
#                                        is missing and cannot be exported is skipped with a note
#   BENCH_STREAMS=1,8,...                bench: stream counts N (default 1,8,16,32,64)
#   BENCH_PRECISIONS=fp32,fp16           bench: rstrtinfer network-mode values each model runs at,
#                                        each with a bare session of that precision (default
#                                        fp32,fp16; fp16's bare session runs the FP16 model the
#                                        element wrote into its engine cache)
#   BENCH_ENGINE_CACHE=DIR               bench: FERROSTREAM_ENGINE_CACHE of the element runs, kept
#                                        (default engine-cache/ of the logs folder: emptied
#                                        first, removed at the end)
#   BENCH_GRAPH=8,32, BENCH_GRAPH_MODELS bench: stream counts and models also run with
#                                        cuda-graph=auto (default 8,32 and yolov8s,yolov8m; none
#                                        for a model whose configuration sets cuda-graph itself)
#   BENCH_DIY=8,32 / BENCH_DIY_MODELS    bench: stream counts and models of the do-it-yourself peer
#                                        (default 8,32 and coco_ssd,yolov8s; BENCH_DIY=0: none)
#   BENCH_BASELINE=16                    bench: streams of the decode + rsstreammux baseline (0: none)
#   BENCH_DECODER, BENCH_DEVICE          bench: decoder element (nvh264dec) and rstrtinfer device
#                                        (cuda); e.g. avdec_h264 and cpu to try it without a GPU
#   BENCH_DIY_DECODE                     bench: the DIY streams' decoder part (default
#                                        "nvh264dec ! cudadownload", else BENCH_DECODER)
#   BENCH_BARE_SECONDS=SECONDS           bench: timed time of each bare-session batch size (2)
#   BENCH_RUN_TIMEOUT=SECONDS            bench: limit for each run (default 150)
#   BENCH_TOTAL_S=SECONDS                bench: no run starts after this long (default 540)
#   BENCH_EXPORT_TIMEOUT=SECONDS         bench: limit for exporting models (default 240)
#   BENCH_MODEL_DIR=DIR                  bench: exported models (default the stash's models/)
#   FERROSTREAM_CACHE_DIR                bundle: where downloaded .deb files, wheels, the clip and
#                                        the GPU build's archive are kept
#                                        (default ${XDG_CACHE_HOME:-~/.cache}/ferrostream)
set -euo pipefail

# ---- What the GPU check runs ---------------------------------------------------------------
# Entries are CRATE:TARGET. CRATE is a package name or its directory (e.g. plugins/osd); TARGET
# is an integration test (tests/TARGET.rs) or bench (benches/TARGET.rs) target, or "lib" for the
# crate's unit tests. A listed target that does not exist stops the bundle.
# Targets named here may still be being written: bundle stops on a missing one.
GPU_TESTS=(
    ferrostream-nvmmtestsrc:nvmmtestsrc
    tests:gpu_preprocess
    plugins/osd:gpu_osd
    tests:gpu_pipeline
    tests:onnxruntime_precision
    tests:gpu_ipc
    gst-trtinfer/inference:workers
)
GPU_BENCHES=(
    tests:gpu_preprocess
    tests:ipc
)
# Footage from $FERROSTREAM_MEDIA_DIR (lands in .gpu/media) and models from
# $FERROSTREAM_MODEL_DIR (land in .gpu-models, then the stash's test-models/); run points the
# two variables there.
GPU_MEDIA=(carphone_pristine.mp4 messi5.jpg basketball1.png marina_obb.jpg astronaut.png squirrel_cls.jpg)
GPU_MODELS=(
    coco_ssdlite_mobilenet_v2.onnx object_detection_classes_coco.txt mobilenet_v2_imagenet.onnx
    classification_classes_ILSVRC2012.txt centerface.onnx yolo11n_pose_960.onnx
    yolov8n_obb_1024.onnx dota_v1_classes.txt
)

# GStreamer plugins kept in the private prefix (file libgst<NAME>.so); the rest are removed.
GST_PLUGINS=(
    coreelements app videotestsrc videoconvertscale videorate typefindfunctions playback
    isomp4 videoparsersbad nvcodec imagefreeze png jpeg shm
)
# Debian 12 packages unpacked into the prefix. The libraries that the kept plugins, the tools and
# our binaries need must come from these or be among HOST_LIBS; bundle checks that.
GST_DEBS=(
    libgstreamer1.0-0 gstreamer1.0-tools libgstreamer-plugins-base1.0-0 gstreamer1.0-plugins-base
    gstreamer1.0-plugins-good gstreamer1.0-plugins-bad libgstreamer-plugins-bad1.0-0
    libgstreamer-gl1.0-0 libglib2.0-0 liborc-0.4-0 libunwind8 libdw1 libelf1 libdrm2 libegl1
    libgbm1 libgl1 libglvnd0 libglx0 libgudev-1.0-0 libwayland-client0 libwayland-cursor0
    libwayland-egl1 libwayland-server0 libx11-6 libx11-xcb1 libxcb1 libxau6 libxdmcp6 libbsd0
    libmd0 libudev1 libffi8 libexpat1 libxcb-randr0 libxext6 libpng16-16 libjpeg62-turbo
    # rsmsgbroker's Kafka client.
    librdkafka1 libsasl2-2 libsasl2-modules-db libdb5.3
)
# Libraries kept even when nothing in the bundle links them: loaded by name at run time
# (libgstcuda by our CUDA code, GL by GStreamer's GL library), or what test binaries link.
GST_KEEP_LIBS=(
    libgstcuda-1.0.so.0 libgstgl-1.0.so.0 libEGL.so.1 libGL.so.1 libGLX.so.0 libGLdispatch.so.0
    libgstcheck-1.0.so.0 libgstapp-1.0.so.0 libgstvideo-1.0.so.0
)
# Libraries every Ubuntu 22.04+/Debian 12+ system has (C/C++ runtime and the essential set);
# taken from the GPU machine, not the bundle.
HOST_LIBS=(
    linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1
    libresolv.so.2 libstdc++.so.6 libgcc_s.so.1 libz.so.1 libmount.so.1 libblkid.so.1
    libselinux.so.1 libpcre2-8.so.0 liblzma.so.5 libzstd.so.1 libbz2.so.1.0 libcap.so.2
    libssl.so.3 libcrypto.so.3 liblz4.so.1
)
BUDGET_MIB=60

# ONNX Runtime's GPU build: the onnxruntime-gpu wheel for the GPU machine's python3 (CUDA 13
# build). Of its onnxruntime/ package only these stay: capi/ (the C API library, its CUDA,
# TensorRT and shared provider libraries, the Python binding) and the top-level files that
# `import onnxruntime` reads; transformers/, quantization/, tools/, backend/ and datasets/ are
# pure-Python tools that neither the C API nor InferenceSession needs.
ORT_GPU_VERSION=1.31.1
ORT_GPU_PYTHON=3.12
ORT_GPU_PLATFORM=manylinux_2_28_x86_64
ORT_GPU_KEEP=(__init__.py capi LICENSE ThirdPartyNotices.txt Privacy.md)
# A piece's size limit, and what one device call may carry in all (working tree included).
PIECE_MIB=60
CALL_MIB=64
# The benchmark's extras (.gpu-bench/): wheels that scripts/models/export_ultralytics.py needs
# and the GPU machine's python3 lacks (installed there with --no-deps), and the clip's length.
BENCH_WHEELS=(
    ultralytics==8.4.190 ultralytics-thop==2.2.3 ultralytics-platform==0.1.99 onnxslim==0.1.98
)
BENCH_CLIP=bench-1080p30.mp4
BENCH_CLIP_MAX_MB=10
# The bench calls bundle prints: scripts/gpu_bench.py's options for each "scripts/gpu-check.sh
# bench" call, one call's 10 minutes each (BENCH_TOTAL_S stops starting runs before).
BENCH_CALLS=(
    "--models yolov8s,yolov8m --streams 8,32,64 --diy-streams 0 --baseline 0"
    "--models rtdetr_l --streams 8,32,64 --diy-streams 0"
)
# ---------------------------------------------------------------------------------------------

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gpu="$repo/.gpu"
mode="${1:-}"
[ $# -gt 0 ] && shift

die() { echo "gpu-check: error: $*" >&2; exit 1; }
note() { echo "gpu-check: $*"; }
need() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "'$c' is needed"; done; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
stash="${GPU_CHECK_STASH:-/var/tmp/ferrostream-stash}"
sha256() { sha256sum "$1" | cut -d ' ' -f 1; }
# The value of KEY in a "KEY VALUE..." file (PIECE, CONTENTS).
kv() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }' "$1"; }
bytes() { du -sb "$@" | awk '{ s += $1 } END { print s + 0 }'; }

# ================================== bundle ===================================================

# Prints "PACKAGE-NAME PACKAGE-DIR" for CRATE:TARGET of the given kind (test or bench), or dies
# naming the targets the crate has.
resolve_target() {
    local kind="$1" spec="$2"
    python3 - "$kind" "$spec" "$metadata" "$repo" <<'PY'
import json, os, sys
kind, spec, metadata, repo = sys.argv[1:5]
if ":" not in spec:
    sys.exit(f"gpu-check: error: '{spec}' is not CRATE:TARGET")
crate, target = spec.rsplit(":", 1)
meta = json.load(open(metadata))
pkgs = {p["name"]: p for p in meta["packages"]}
by_dir = {os.path.relpath(os.path.dirname(p["manifest_path"]), repo): p for p in meta["packages"]}
pkg = pkgs.get(crate) or by_dir.get(os.path.normpath(crate))
if pkg is None:
    sys.exit(f"gpu-check: error: {kind} '{spec}': no workspace package or package directory "
             f"'{crate}' (packages: {', '.join(sorted(pkgs))})")
have = [t["name"] for t in pkg["targets"] if kind in t["kind"]]
lib = [t for t in pkg["targets"] if any(k in ("lib", "rlib", "cdylib") for k in t["kind"])]
ok = (target == "lib" and kind == "test" and lib) or target in have
if not ok:
    sys.exit(f"gpu-check: error: {kind} target '{target}' of {pkg['name']} is missing "
             f"(listed as '{spec}'; {pkg['name']} has {kind} targets: "
             f"{', '.join(have) or 'none'})")
print(pkg["name"], os.path.relpath(os.path.dirname(pkg["manifest_path"]), repo))
PY
}

# Reads cargo's JSON messages on stdin; prints the executable of test/bench TARGET of PACKAGE.
pick_executable() {
    python3 -c '
import json, sys
kind, pkg, target = sys.argv[1:4]
found = []
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    t = m["target"]
    pid = m["package_id"]
    same_pkg = ("#" + pkg + "@") in pid or pid.startswith(pkg + " ") or pid.endswith("#" + pkg) or ("/" + pkg + "#") in pid
    if target == "lib":
        hit = m["profile"]["test"] and any(k in ("lib", "rlib", "cdylib") for k in t["kind"])
    else:
        hit = t["name"] == target and kind in t["kind"]
    if hit and same_pkg:
        found.append(m["executable"])
if not found:
    sys.exit("gpu-check: error: cargo built no executable for %s target %s of %s" % (kind, target, pkg))
print(found[-1])
' "$@"
}

# Builds the test and bench binaries and the plugin into $stage/bin, $stage/plugins and the
# MANIFEST lines into $stage/manifest.
bundle_binaries() {
    local -a tests benches profile=()
    if [ -n "${GPU_CHECK_TESTS+x}" ]; then read -r -a tests <<<"$GPU_CHECK_TESTS"; else tests=("${GPU_TESTS[@]}"); fi
    if [ -n "${GPU_CHECK_BENCHES+x}" ]; then read -r -a benches <<<"$GPU_CHECK_BENCHES"; else benches=("${GPU_BENCHES[@]}"); fi
    [ "${GPU_CHECK_RELEASE:-0}" = 1 ] && profile=(--release)
    mkdir -p "$stage/bin" "$stage/plugins"
    : >"$stage/manifest"

    metadata="$stage/metadata.json"
    (cd "$repo" && cargo metadata --no-deps --format-version 1 >"$metadata")
    # Resolve everything first, so a missing target stops the bundle before any build.
    local -a jobs=()
    local spec kind resolved
    for spec in "${tests[@]}"; do resolved="$(resolve_target test "$spec")" || exit 1; jobs+=("test $spec $resolved"); done
    for spec in "${benches[@]}"; do resolved="$(resolve_target bench "$spec")" || exit 1; jobs+=("bench $spec $resolved"); done

    local job pkg dir target exe file json
    for job in "${jobs[@]}"; do
        read -r kind spec pkg dir <<<"$job"
        target="${spec##*:}"
        note "building $kind $pkg:$target"
        json="$stage/cargo.json"
        if [ "$kind" = bench ]; then
            (cd "$repo" && cargo bench -p "$pkg" --bench "$target" --no-run --message-format=json-render-diagnostics >"$json") ||
                die "cargo could not build bench $pkg:$target"
        elif [ "$target" = lib ]; then
            (cd "$repo" && cargo test "${profile[@]}" -p "$pkg" --lib --no-run --message-format=json-render-diagnostics >"$json") ||
                die "cargo could not build the unit tests of $pkg"
        else
            (cd "$repo" && cargo test "${profile[@]}" -p "$pkg" --test "$target" --no-run --message-format=json-render-diagnostics >"$json") ||
                die "cargo could not build test $pkg:$target"
        fi
        exe="$(pick_executable "$kind" "$pkg" "$target" <"$json")" || exit 1
        file="$kind.$pkg.$target"
        strip --strip-debug -o "$stage/bin/$file" "$exe"
        echo "$kind $pkg:$target $dir bin/$file" >>"$stage/manifest"
    done

    local so="${GPU_CHECK_PLUGIN:-}"
    if [ -z "$so" ]; then
        note "building the plugin (gst-ferrostream)"
        (cd "$repo" && cargo build "${profile[@]}" -p gst-ferrostream --lib --message-format=json-render-diagnostics >"$stage/cargo.json") ||
            die "cargo could not build gst-ferrostream"
        so="$(python3 -c '
import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gstferrostream":
            for f in m["filenames"]:
                if f.endswith(".so"):
                    print(f)
' <"$stage/cargo.json" | tail -n 1)"
        [ -n "$so" ] || die "cargo built no libgstferrostream.so"
    fi
    [ -f "$so" ] || die "plugin $so not found"
    strip --strip-debug -o "$stage/plugins/libgstferrostream.so" "$so"
}

# Downloads (once, into the cache) and unpacks GST_DEBS into $stage/gst, then trims it.
bundle_gstreamer() {
    local cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}/gpu-debs"
    mkdir -p "$cache"
    local -a missing=() apt_opts=()
    local p f
    for p in "${GST_DEBS[@]}"; do
        compgen -G "$cache/${p}_*_amd64.deb" >/dev/null || compgen -G "$cache/${p}_*_all.deb" >/dev/null || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        note "downloading ${#missing[@]} Debian packages into $cache"
        [ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)
        (cd "$cache" && apt-get "${apt_opts[@]}" download "${missing[@]}") ||
            die "apt-get download failed (run 'apt-get update' first?)"
    fi
    local g="$stage/gst"
    mkdir -p "$g"
    for p in "${GST_DEBS[@]}"; do
        # The newest cached version of each package.
        f="$(printf '%s\n' "$cache/${p}_"*.deb | sort -V | tail -n 1)"
        dpkg-deb -x "$f" "$g"
    done

    # Trim: documentation, headers, data and tools nobody runs; plugins not in GST_PLUGINS.
    rm -rf "${g:?}/usr/share" "${g:?}/etc" "${g:?}/usr/include" "${g:?}/usr/lib/$multiarch/pkgconfig"
    find "$g/usr/bin" -mindepth 1 ! -name gst-inspect-1.0 ! -name gst-launch-1.0 -delete
    local pdir="$g/usr/lib/$multiarch/gstreamer-1.0" keep name
    for f in "$pdir"/*; do
        name="$(basename "$f" .so)"; name="${name#libgst}"
        keep=0
        for p in "${GST_PLUGINS[@]}"; do [ "$p" = "$name" ] && keep=1; done
        [ $keep = 1 ] || rm -rf "$f"
    done
    for p in "${GST_PLUGINS[@]}"; do
        [ -f "$pdir/libgst$p.so" ] || die "plugin $p (libgst$p.so) is in none of GST_DEBS"
    done
    rm -f "$g/usr/lib/$multiarch/gstreamer1.0/gstreamer-1.0/gst-ptp-helper" \
        "$g/usr/lib/$multiarch/gstreamer1.0/gstreamer-1.0/gst-completion-helper"

    # Keep only the libraries reachable from the tools, the plugin scanner, the kept plugins, our
    # binaries and GST_KEEP_LIBS; fail when one of those needs a library that is neither in the
    # prefix nor in HOST_LIBS.
    python3 - "$g" "$multiarch" "$stage" "${GST_KEEP_LIBS[*]}" "${HOST_LIBS[*]}" <<'PY'
import os, subprocess, sys
g, ma, stage, dlopened, host = sys.argv[1:6]
libdirs = [os.path.join(g, "usr/lib", ma), os.path.join(g, "lib", ma)]
host = set(host.split())

def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    return [l.split("[", 1)[1].split("]", 1)[0] for l in out.splitlines() if "(NEEDED)" in l]

def find(name):
    for d in libdirs:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None

def is_elf(p):
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False

roots = []
for top in (os.path.join(g, "usr/bin"), os.path.join(g, "usr/lib", ma, "gstreamer-1.0"),
            os.path.join(g, "usr/lib", ma, "gstreamer1.0"), os.path.join(stage, "bin"),
            os.path.join(stage, "plugins")):
    for dp, _, files in os.walk(top):
        roots += [os.path.join(dp, f) for f in files if is_elf(os.path.join(dp, f))]
for name in dlopened.split():
    p = find(name)
    if p is None:
        sys.exit(f"gpu-check: error: {name} (in GST_KEEP_LIBS) is in none of GST_DEBS")
    roots.append(p)

keep, missing, todo = set(), {}, list(roots)
while todo:
    path = todo.pop()
    for name in needed(path):
        p = find(name)
        if p is None:
            if name not in host:
                missing.setdefault(name, []).append(os.path.relpath(path, stage))
            continue
        real = os.path.realpath(p)
        keep.add(p)
        if real not in keep:
            keep.add(real)
            todo.append(real)
for p in roots:
    keep.add(p)
    keep.add(os.path.realpath(p))
if missing:
    for name, users in sorted(missing.items()):
        print(f"gpu-check: error: {name}, needed by {', '.join(sorted(set(users))[:3])}, is not "
              f"in the bundle: add its Debian package to GST_DEBS (dpkg -S {name})", file=sys.stderr)
    sys.exit(1)
removed = 0
for d in libdirs:
    for dp, dirs, files in os.walk(d):
        if os.path.basename(dp) in ("gstreamer-1.0", "gstreamer1.0") or "/gstreamer" in dp[len(d):]:
            continue
        for f in files:
            p = os.path.join(dp, f)
            if p not in keep and (".so" in f or f.endswith(".a")):
                os.unlink(p)
                removed += 1
# Folders left empty (gio modules, dri, ...).
for d in libdirs:
    for dp, dirs, files in os.walk(d, topdown=False):
        if dp != d and not os.listdir(dp):
            os.rmdir(dp)
print(f"gpu-check: GStreamer prefix: {len(keep)} library files kept, {removed} unused removed")
PY
}

# ONNX Runtime (CPU build), found where scripts/install-onnxruntime.sh puts it.
find_onnxruntime() {
    local v="${ONNXRUNTIME_VERSION:-1.31.1}" d
    for d in "${ORT_DYLIB_PATH:+$(dirname "$ORT_DYLIB_PATH")}" /usr/local/lib "$HOME/.local/lib"; do
        [ -n "$d" ] && [ -f "$d/libonnxruntime.so.$v" ] && { echo "$d/libonnxruntime.so.$v"; return 0; }
    done
    [ -n "${ORT_DYLIB_PATH:-}" ] && [ -f "$ORT_DYLIB_PATH" ] && { readlink -f "$ORT_DYLIB_PATH"; return 0; }
    return 1
}

# Finds FILE in a ':'-separated list of folders.
find_in_dirs() {
    local dirs="$1" file="$2" d
    local IFS=:
    for d in $dirs; do [ -n "$d" ] && [ -f "$d/$file" ] && { echo "$d/$file"; return 0; }; done
    return 1
}

# ---- ONNX Runtime's GPU build, in pieces ------------------------------------------------------

# Prints the onnxruntime-gpu wheel in the cache folder $1, downloading it first when it is not there.
ort_gpu_wheel() {
    local cache="$1" whl
    mkdir -p "$cache"
    whl="$(compgen -G "$cache/onnxruntime_gpu-$ORT_GPU_VERSION-*.whl" | sort | tail -n 1 || true)"
    if [ -z "$whl" ]; then
        note "downloading onnxruntime-gpu $ORT_GPU_VERSION (about 250 MB) into $cache" >&2
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$ORT_GPU_PYTHON" \
            --implementation cp --platform "$ORT_GPU_PLATFORM" -d "$cache" \
            "onnxruntime-gpu==$ORT_GPU_VERSION" >&2 ||
            die "pip could not download onnxruntime-gpu==$ORT_GPU_VERSION (or set GPU_CHECK_ORT_GPU=0)"
        whl="$(compgen -G "$cache/onnxruntime_gpu-$ORT_GPU_VERSION-*.whl" | sort | tail -n 1 || true)"
        [ -n "$whl" ] || die "pip downloaded no onnxruntime_gpu-$ORT_GPU_VERSION-*.whl into $cache"
    fi
    echo "$whl"
}

# Prints the xz archive of wheel $2's onnxruntime/ package trimmed to ORT_GPU_KEEP, building it
# first (xz -9e takes minutes) when the cache folder $1 has none for this wheel (by its sha256).
ort_gpu_archive() {
    local cache="$1" whl="$2" wsha archive x
    wsha="$(sha256 "$whl")"
    archive="$cache/onnxruntime-gpu-$ORT_GPU_VERSION-${wsha:0:16}.tar.xz"
    if [ ! -f "$archive" ]; then
        note "packing onnxruntime-gpu $ORT_GPU_VERSION with xz -9e: several minutes, once (cached as $archive)" >&2
        x="$(mktemp -d "${TMPDIR:-/tmp}/gpu-ort.XXXXXX")"
        python3 - "$whl" "$x" "$ORT_GPU_VERSION" "${ORT_GPU_KEEP[@]}" >&2 <<'PY' || { rm -rf "$x"; exit 1; }
import os, sys, zipfile
whl, dest, version, keep = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4:])
n = 0
with zipfile.ZipFile(whl) as z:
    for info in z.infolist():
        parts = info.filename.split("/")
        if info.is_dir() or parts[0] != "onnxruntime" or len(parts) < 2 or parts[1] not in keep:
            continue
        path = z.extract(info, dest)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(path, mode)
        n += 1
lib = os.path.join(dest, "onnxruntime", "capi", f"libonnxruntime.so.{version}")
init = os.path.join(dest, "onnxruntime", "__init__.py")
if not (os.path.isfile(lib) and os.path.isfile(init)):
    sys.exit(f"gpu-check: error: {os.path.basename(whl)} has no onnxruntime/__init__.py or "
             f"onnxruntime/capi/libonnxruntime.so.{version}")
print(f"gpu-check: {n} files of {os.path.basename(whl)} kept ({', '.join(sorted(keep))})")
PY
        tar -C "$x" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - onnxruntime |
            xz -9e -T2 >"$archive.partial" || { rm -rf "$x" "$archive.partial"; die "could not compress onnxruntime-gpu"; }
        mv "$archive.partial" "$archive"
        rm -rf "$x"
    fi
    echo "$archive"
}

# Splits archive $2 into the fewest pieces of at most PIECE_MIB, of about equal size, in the
# folders $repo/$3-1, $repo/$3-2, ..., each with a PIECE file naming it (name $1); removes the
# folders of an earlier bundle. Pieces already there for the same archive are kept as they are.
# Prints "COUNT ARCHIVE-SHA256".
write_pieces() {
    local name="$1" archive="$2" prefix="$3"
    local size limit count asha i dir file same=1
    size="$(stat -c %s "$archive")"
    limit=$((PIECE_MIB * 1048576))
    count=$(((size + limit - 1) / limit))
    asha="$(sha256 "$archive")"
    for i in $(seq 1 "$count"); do
        dir="$repo/$prefix-$i"
        file="$(basename "$archive").$i"
        if [ ! -f "$dir/PIECE" ] || [ "$(kv "$dir/PIECE" archive-sha256)" != "$asha" ] ||
            [ "$(kv "$dir/PIECE" count)" != "$count" ] || [ ! -f "$dir/$file" ] ||
            [ "$(stat -c %s "$dir/$file")" != "$(kv "$dir/PIECE" piece-bytes)" ]; then
            same=0
        fi
    done
    [ -d "$repo/$prefix-$((count + 1))" ] && same=0
    if [ $same = 0 ]; then
        rm -rf "${repo:?}/$prefix"-*
        local tmp="$stage/pieces"
        mkdir -p "$tmp"
        split -n "$count" -d -a 3 "$archive" "$tmp/p."
        for i in $(seq 1 "$count"); do
            dir="$repo/$prefix-$i"
            file="$(basename "$archive").$i"
            mkdir -p "$dir"
            mv "$tmp/p.$(printf %03d $((i - 1)))" "$dir/$file"
            {
                echo "# Piece $i of $count of $(basename "$archive"), written by scripts/gpu-check.sh bundle;"
                echo "# scripts/gpu-check.sh stash collects the pieces on the GPU machine."
                echo "name $name"
                echo "archive $(basename "$archive")"
                echo "archive-sha256 $asha"
                echo "archive-bytes $size"
                echo "piece $i"
                echo "count $count"
                echo "piece-file $file"
                echo "piece-sha256 $(sha256 "$dir/$file")"
                echo "piece-bytes $(stat -c %s "$dir/$file")"
                echo "folder $prefix-$i"
            } >"$dir/PIECE"
        done
    fi
    echo "$count $asha"
}

# ---- The benchmark's extras (.gpu-bench/) ---------------------------------------------------

# Prints the benchmark clip, made first (and cached in $1/media) when it is not there:
# BENCH_CLIP_FRAMES frames of vtest.avi (found in the folders of $2) scaled to 1920x1080 at
# 30 fps, H.264 (x264enc, 6 Mbit/s, a key frame every 2 s) in MP4.
bench_clip() {
    local cache="$1" media_dirs="$2" frames="${BENCH_CLIP_FRAMES:-300}" src out got size
    out="$cache/media/bench-1080p30-${frames}f.mp4"
    if [ ! -f "$out" ]; then
        need gst-launch-1.0 gst-inspect-1.0
        src="$(find_in_dirs "$media_dirs" vtest.avi)" ||
            die "vtest.avi (the benchmark clip's source) not found in FERROSTREAM_MEDIA_DIR or $cache/media"
        if ! gst-inspect-1.0 x264enc >/dev/null 2>&1; then
            # x264enc is in gstreamer1.0-plugins-ugly, which the test suite does not need.
            local sudo=""
            [ "$(id -u)" -eq 0 ] || sudo=sudo
            note "installing gstreamer1.0-plugins-ugly (x264enc, to encode the benchmark clip)" >&2
            { $sudo apt-get update -qq &&
                DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
                    gstreamer1.0-plugins-ugly; } >&2 ||
                die "cannot install gstreamer1.0-plugins-ugly (x264enc); or set GPU_CHECK_BENCH=0"
            gst-inspect-1.0 x264enc >/dev/null 2>&1 ||
                die "GStreamer's x264enc is still missing after installing gstreamer1.0-plugins-ugly"
        fi
        note "encoding the benchmark clip: $frames frames of 1920x1080 H.264 (cached as $out)" >&2
        mkdir -p "$cache/media"
        # vtest.avi has 10 frames a second: a third of the frames are cut from it (identity stops
        # the decoder; after videorate it would let a burst of duplicates through), so the clip
        # has about, not exactly, $frames frames: the count in .gpu-bench/CONTENTS is the real one.
        gst-launch-1.0 -q filesrc location="$src" ! decodebin ! identity eos-after="$(((frames + 2) / 3))" \
            ! videoconvert ! videoscale ! video/x-raw,width=1920,height=1080,pixel-aspect-ratio=1/1 \
            ! videorate ! video/x-raw,framerate=30/1 ! videoconvert ! video/x-raw,format=I420 \
            ! x264enc speed-preset=fast bitrate=6000 key-int-max=60 ! h264parse ! mp4mux \
            ! filesink location="$out.partial" >&2 ||
            { rm -f "$out.partial"; die "could not encode the benchmark clip (vtest.avi needs gstreamer1.0-libav)"; }
        got="$(python3 "$repo/scripts/gpu_bench.py" --count-frames "$out.partial")" ||
            { rm -f "$out.partial"; die "the benchmark clip is no readable MP4"; }
        [ "$got" -ge $((frames * 9 / 10)) ] && [ "$got" -le $((frames * 11 / 10 + 10)) ] ||
            { rm -f "$out.partial"; die "the benchmark clip has $got frames, not about $frames"; }
        size="$(stat -c %s "$out.partial")"
        [ "$size" -le $((BENCH_CLIP_MAX_MB * 1000000)) ] ||
            { rm -f "$out.partial"; die "the benchmark clip is $size bytes, over $BENCH_CLIP_MAX_MB MB: lower BENCH_CLIP_FRAMES"; }
        mv "$out.partial" "$out"
    fi
    echo "$out"
}

# Prints the wheels of GPU_CHECK_BENCH_WHEELS (default BENCH_WHEELS, NAME==VERSION each) in the
# cache folder $1, downloading the missing ones for the GPU machine's python3.
bench_wheels() {
    local cache="$1" spec name ver f
    local -a specs
    if [ -n "${GPU_CHECK_BENCH_WHEELS+x}" ]; then read -r -a specs <<<"$GPU_CHECK_BENCH_WHEELS"; else specs=("${BENCH_WHEELS[@]}"); fi
    mkdir -p "$cache"
    for spec in "${specs[@]}"; do
        [[ "$spec" == *==* ]] || die "bench wheel '$spec' is not NAME==VERSION"
        name="${spec%%==*}" ver="${spec#*==}"
        name="${name//-/_}"
        f="$(compgen -G "$cache/${name}-${ver}-*.whl" | head -n 1 || true)"
        if [ -z "$f" ]; then
            python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$ORT_GPU_PYTHON" \
                --implementation cp --platform "$ORT_GPU_PLATFORM" -d "$cache" "$spec" >&2 ||
                die "pip could not download $spec (or set GPU_CHECK_BENCH_WHEELS / GPU_CHECK_BENCH=0)"
            f="$(compgen -G "$cache/${name}-${ver}-*.whl" | head -n 1 || true)"
            [ -n "$f" ] || die "pip downloaded no ${name}-${ver}-*.whl into $cache"
        fi
        echo "$f"
    done
}

# Writes $repo/.gpu-bench: the clip, wheels/ and CONTENTS.
bundle_bench() {
    local cachedir="$1" media_dirs="$2" clip frames f rel dir="$repo/.gpu-bench"
    local -a wheels
    clip="$(bench_clip "$cachedir" "$media_dirs")" || exit 1
    frames="$(python3 "$repo/scripts/gpu_bench.py" --count-frames "$clip")"
    bench_wheels "$cachedir/bench-wheels" >"$stage/bench-wheels" || exit 1
    mapfile -t wheels <"$stage/bench-wheels"
    rm -rf "$dir"
    mkdir -p "$dir/wheels"
    install -m 0644 "$clip" "$dir/$BENCH_CLIP"
    for f in "${wheels[@]}"; do [ -n "$f" ] && install -m 0644 "$f" "$dir/wheels/"; done
    {
        echo "# The benchmark's extras, written by scripts/gpu-check.sh bundle; scripts/gpu-check.sh"
        echo "# stash moves this folder into the stash on the GPU machine (as bench/)."
        echo "name bench"
        echo "clip $BENCH_CLIP $frames"
        (cd "$dir" && find . -type f ! -name CONTENTS | sed 's|^\./||' | sort) | while read -r rel; do
            echo "file $(sha256 "$dir/$rel") $rel"
        done
    } >"$dir/CONTENTS"
}

# Writes $repo/.gpu-models (and .gpu-models-2, ... where they do not fit into one call): the files
# $@ (the tests' models and labels), each folder with a CONTENTS naming its part of test-models.
MODELS_PART_MIB=40
bundle_models() {
    local f part=1 size=0 fsize dir
    local -a parts=()
    rm -rf "$repo"/.gpu-models "$repo"/.gpu-models-[0-9]*
    for f in "$@"; do
        fsize="$(stat -c %s "$f")"
        if [ "$size" -gt 0 ] && [ $((size + fsize)) -gt $((MODELS_PART_MIB * 1048576)) ]; then
            part=$((part + 1))
            size=0
        fi
        size=$((size + fsize))
        parts[$part]+="$f"$'\n'
    done
    local count=$part id
    # The bundle's id: parts of one bundle join, a part of another replaces them.
    id="$(for f in "$@"; do echo "$(sha256 "$f") $(basename "$f")"; done | sha256sum | cut -c1-16)"
    for part in $(seq 1 "$count"); do
        dir="$repo/.gpu-models"
        [ "$part" = 1 ] || dir="$repo/.gpu-models-$part"
        mkdir -p "$dir"
        {
            echo "# The GPU tests' models, written by scripts/gpu-check.sh bundle; scripts/gpu-check.sh"
            echo "# stash moves this folder into the stash on the GPU machine (part of test-models/)."
            echo "name test-models"
            echo "part $part $count $id"
            while IFS= read -r f; do
                [ -n "$f" ] || continue
                install -m 0644 "$f" "$dir/"
                echo "file $(sha256 "$dir/$(basename "$f")") $(basename "$f")"
            done <<<"${parts[$part]}"
        } >"$dir/CONTENTS"
    done
}

# Prints the device calls that carry the folders: each stash call carries pieces and extras
# (first fit, in order) under CALL_MIB with the working tree; run and bench carry .gpu/.
print_calls() {
    local tree="$1"
    shift
    BENCH_CALL_ARGS="$(printf '%s\n' "${BENCH_CALLS[@]}")" python3 - "$tree" "$((CALL_MIB * 1048576))" "$@" <<'PY'
import os, sys
tree, limit = int(sys.argv[1]), int(sys.argv[2])
items = [(a.rsplit("=", 1)[0], int(a.rsplit("=", 1)[1])) for a in sys.argv[3:]]
room = limit - tree - 512 * 1024  # a margin for what else travels
mib = lambda b: f"{b / 1048576:.1f} MiB"
final = [it for it in items if it[0] == ".gpu"]
extra = [it for it in items if it[0] != ".gpu"]
calls = []  # [folders, bytes]
last = [[n for n, _ in final], sum(b for _, b in final)]
for name, size in extra:
    if size > room:
        sys.exit(f"gpu-check: error: {name} ({mib(size)}) does not fit into one device call "
                 f"({mib(room)} beside the working tree)")
    for c in calls + [last]:
        if c[1] + size <= room:
            c[0].append(name)
            c[1] += size
            break
    else:
        calls.append([[name], size])
if last[1] > room:
    sys.exit(f"gpu-check: error: .gpu and what rides with it ({mib(last[1])}) do not fit into one call")
print(f"Device calls, one right after the other while the machine is warm (each carries the working "
      f"tree, {mib(tree)}, and at most {mib(limit)} in all):")
k = 0
fmt = lambda folders: "[" + ", ".join(f'"{f}"' for f in folders) + "]"
for folders, size in calls:
    k += 1
    print(f'  {k}. command "scripts/gpu-check.sh stash"   carry {fmt(folders)}   ({mib(size + tree)})')
if final:
    k += 1
    print(f'  {k}. command "scripts/gpu-check.sh run"     carry {fmt(last[0])}   ({mib(last[1] + tree)})')
    for args in [a for a in os.environ["BENCH_CALL_ARGS"].splitlines() if a.strip()] or [""]:
        k += 1
        command = " ".join(["scripts/gpu-check.sh bench", args.strip()]).strip()
        print(f'  {k}. command "{command}"   carry [".gpu"]   timeout_s 600   '
              f'({mib(final[0][1] + tree)})')
print("Each stash call prints which pieces are still missing; when the machine went back in between "
      "(its stash is then empty), start again at call 1.")
PY
}

bundle() {
    need cargo python3 apt-get dpkg-deb readelf strip xz tar du split sha256sum
    [ "$(uname -m)" = x86_64 ] || die "bundle builds x86_64 binaries for the GPU machine: run it on an x86_64 machine"
    multiarch=x86_64-linux-gnu
    . "$repo/scripts/env.sh"
    local cachedir="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
    local media_dirs="${FERROSTREAM_MEDIA_DIR:-}:$cachedir/media" model_dirs="${FERROSTREAM_MODEL_DIR:-}:$cachedir/models"
    local ort_gpu="${GPU_CHECK_ORT_GPU:-1}" with_bench="${GPU_CHECK_BENCH:-1}"

    stage="$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")"
    trap 'rm -rf "$stage"' EXIT

    # Footage and models first: cheap to check, and a missing one should stop us before building.
    local -a media_files=() model_files=()
    local f src
    for f in "${GPU_MEDIA[@]}"; do
        src="$(find_in_dirs "$media_dirs" "$f")" || die "media file $f not found in FERROSTREAM_MEDIA_DIR or $cachedir/media (scripts/fetch-models.sh fetches it)"
        media_files+=("$src")
    done
    for f in "${GPU_MODELS[@]}"; do
        src="$(find_in_dirs "$model_dirs" "$f")" || die "model file $f not found in FERROSTREAM_MODEL_DIR or $cachedir/models (scripts/fetch-models.sh fetches it)"
        model_files+=("$src")
    done
    # The CPU build of ONNX Runtime: by default only when the GPU build is not bundled.
    local ort="" want_ort="${GPU_CHECK_ORT:-}"
    [ -z "$want_ort" ] && { if [ "$ort_gpu" = 0 ]; then want_ort=1; else want_ort=0; fi; }
    if [ "$want_ort" != 0 ]; then
        ort="$(find_onnxruntime)" || die "libonnxruntime.so.${ONNXRUNTIME_VERSION:-1.31.1} not found: run scripts/install-onnxruntime.sh (or set GPU_CHECK_ORT=0)"
    fi
    # The GPU build's wheel: downloaded before the long builds, so a failure comes early.
    local ort_gpu_whl=""
    [ "$ort_gpu" != 0 ] && { ort_gpu_whl="$(ort_gpu_wheel "$cachedir/ort-gpu")" || exit 1; }

    bundle_binaries
    bundle_gstreamer

    mkdir -p "$gpu"
    rm -rf "${gpu:?}/media" "$gpu/gst.tar.xz" "$gpu/bin.tar.xz" "$gpu/MANIFEST" "$gpu"/*.partial
    note "compressing"
    tar -C "$stage" -cf - gst | xz -T0 -6 >"$gpu/gst.tar.xz.partial"
    tar -C "$stage" -cf - bin plugins | xz -T0 -6 >"$gpu/bin.tar.xz.partial"
    mv "$gpu/gst.tar.xz.partial" "$gpu/gst.tar.xz"
    mv "$gpu/bin.tar.xz.partial" "$gpu/bin.tar.xz"
    if [ -n "$ort" ]; then
        # Compressing ONNX Runtime takes a while: reuse the archive while the library is unchanged.
        local stamp
        stamp="$(basename "$ort") $(stat -c '%s %Y' "$ort")"
        if [ ! -f "$gpu/ort.tar.xz" ] || [ "$(cat "$gpu/ort.stamp" 2>/dev/null)" != "$stamp" ]; then
            mkdir -p "$stage/ort"
            cp "$ort" "$stage/ort/"
            tar -C "$stage" -cf - ort | xz -T0 -6 >"$gpu/ort.tar.xz.partial"
            mv "$gpu/ort.tar.xz.partial" "$gpu/ort.tar.xz"
            echo "$stamp" >"$gpu/ort.stamp"
        fi
    else
        rm -f "$gpu/ort.tar.xz" "$gpu/ort.stamp"
    fi
    mkdir -p "$gpu/media"
    for f in "${media_files[@]}"; do install -m 0644 "$f" "$gpu/media/"; done
    bundle_models "${model_files[@]}"

    # ONNX Runtime's GPU build: one archive, in pieces .gpu-ort-1/, .gpu-ort-2/, ...
    local ort_gpu_file="" ort_gpu_count="" ort_gpu_sha=""
    if [ -n "$ort_gpu_whl" ]; then
        ort_gpu_file="$(ort_gpu_archive "$cachedir/ort-gpu" "$ort_gpu_whl")" || exit 1
        read -r ort_gpu_count ort_gpu_sha < <(write_pieces ort-gpu "$ort_gpu_file" .gpu-ort)
        [ -n "$ort_gpu_sha" ] || die "could not split the GPU build into pieces"
    else
        rm -rf "${repo:?}"/.gpu-ort-*
    fi
    # The benchmark's clip and wheels: .gpu-bench/.
    if [ "$with_bench" != 0 ]; then
        bundle_bench "$cachedir" "$media_dirs"
    else
        rm -rf "${repo:?}/.gpu-bench"
    fi

    {
        echo "# Written by scripts/gpu-check.sh bundle; read by scripts/gpu-check.sh run."
        echo "multiarch $multiarch"
        [ -n "$ort" ] && echo "ort ort/$(basename "$ort")"
        [ -n "$ort_gpu_sha" ] && echo "ort-gpu $ORT_GPU_VERSION $ort_gpu_count $ort_gpu_sha $(basename "$ort_gpu_file")"
        cat "$stage/manifest"
    } >"$gpu/MANIFEST"

    # Report.
    local total tree
    total="$(bytes "$gpu")"
    echo
    echo "Bundle $gpu:"
    for f in gst.tar.xz bin.tar.xz ort.tar.xz media; do
        [ -e "$gpu/$f" ] && printf '  %-12s %10s   (unpacked %s)\n' "$f" "$(mib "$(bytes "$gpu/$f")")" \
            "$(case "$f" in
                gst.tar.xz) mib "$(bytes "$stage/gst")" ;;
                bin.tar.xz) mib "$(bytes "$stage/bin" "$stage/plugins")" ;;
                ort.tar.xz) mib "$(stat -c %s "$ort")" ;;
                media) mib "$(bytes "$gpu/media")" ;;
            esac)"
    done
    printf '  %-12s %10s   (budget %d MiB)\n' total "$(mib "$total")" "$BUDGET_MIB"
    sed -n 's/^\(test\|bench\) \([^ ]*\) .*/    \1 \2/p' "$gpu/MANIFEST"
    [ "$total" -le $((BUDGET_MIB * 1048576)) ] || die "the bundle is over $BUDGET_MIB MiB"
    local -a carried=(".gpu=$total")
    if [ -n "$ort_gpu_sha" ]; then
        echo "ONNX Runtime $ORT_GPU_VERSION GPU build: $(basename "$ort_gpu_file"), $(mib "$(stat -c %s "$ort_gpu_file")"), sha256 ${ort_gpu_sha:0:16}..., in $ort_gpu_count pieces:"
        for f in $(seq 1 "$ort_gpu_count"); do
            printf '  %-12s %10s\n' ".gpu-ort-$f" "$(mib "$(bytes "$repo/.gpu-ort-$f")")"
            carried+=(".gpu-ort-$f=$(bytes "$repo/.gpu-ort-$f")")
        done
    fi
    local models
    for models in "$repo"/.gpu-models "$repo"/.gpu-models-[0-9]*; do
        [ -d "$models" ] || continue
        echo "Test models $(basename "$models"): $(mib "$(bytes "$models")") ($(grep -c '^file ' "$models/CONTENTS") files)"
        carried+=("$(basename "$models")=$(bytes "$models")")
    done
    if [ -d "$repo/.gpu-bench" ]; then
        echo "Benchmark extras .gpu-bench: $(mib "$(bytes "$repo/.gpu-bench")") ($(kv "$repo/.gpu-bench/CONTENTS" clip | awk '{ print $1 ", " $2 " frames" }'); $(find "$repo/.gpu-bench/wheels" -name '*.whl' | wc -l) wheels)"
        carried+=(".gpu-bench=$(bytes "$repo/.gpu-bench")")
    fi
    tree="$(cd "$repo" && git ls-files -z -co --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -n 1 | cut -f1)"
    echo "The working tree that travels with each call: $(mib "${tree:-0}")"
    echo
    print_calls "${tree:-0}" "${carried[@]}"
}

# ================================== stash ====================================================

# Whether carried folders are moved into the stash: on the GPU machine (nvidia-smi works) or
# with GPU_CHECK_STASH_MOVE=1. Otherwise they are linked or copied, and stay in the tree.
stash_moves() {
    case "${GPU_CHECK_STASH_MOVE:-}" in
        1) return 0 ;;
        0) return 1 ;;
    esac
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

# place FILE DEST move|copy: moves FILE to DEST, or hard-links (else copies) it there.
place() {
    if [ "$3" = move ]; then mv -f "$1" "$2"; else ln -f "$1" "$2" 2>/dev/null || cp -f "$1" "$2"; fi
}

# Takes the carried piece folder $1 (with its PIECE file) into $stash/pieces/NAME-SHA/ as
# piece.NNN and PIECE.NNN, after checking the piece's sha256; $2 is move or copy.
stash_piece() {
    local d="$1" how="$2" label name sha idx count file psha got group old n
    label="$(basename "$d")"
    name="$(kv "$d/PIECE" name)" sha="$(kv "$d/PIECE" archive-sha256)" idx="$(kv "$d/PIECE" piece)"
    count="$(kv "$d/PIECE" count)" file="$(kv "$d/PIECE" piece-file)" psha="$(kv "$d/PIECE" piece-sha256)"
    if ! [[ "$name" =~ ^[A-Za-z0-9._-]+$ && "$sha" =~ ^[0-9a-f]{64}$ && "$psha" =~ ^[0-9a-f]{64}$ &&
        "$idx" =~ ^[0-9]+$ && "$count" =~ ^[0-9]+$ && "$file" =~ ^[A-Za-z0-9._-]+$ ]] ||
        [ "$idx" -lt 1 ] || [ "$idx" -gt "$count" ]; then
        note "$label: its PIECE file is incomplete or garbled: left alone"
        return 0
    fi
    if [ ! -f "$d/$file" ]; then
        note "$label: $file is missing: left alone"
        return 0
    fi
    got="$(sha256 "$d/$file")"
    if [ "$got" != "$psha" ]; then
        note "$label: piece $idx of $name is damaged (sha256 ${got:0:16}..., expected ${psha:0:16}...): not stashed"
        return 0
    fi
    group="$stash/pieces/$name-${sha:0:16}"
    # Pieces of another archive of the same name (an earlier bundle) make way.
    for old in "$stash/pieces/$name"-*; do
        if [ -d "$old" ] && [ "$old" != "$group" ]; then rm -rf "$old"; fi
    done
    mkdir -p "$group"
    n="$(printf %03d "$idx")"
    place "$d/$file" "$group/piece.$n" "$how"
    cp -f "$d/PIECE" "$group/PIECE.$n"
    [ "$how" = move ] && rm -rf "$d"
    note "$label: piece $idx of $count of $name (${sha:0:16}) stashed"
}

# Takes the carried folder $1 (with its CONTENTS file: "name NAME", "file SHA256 PATH" lines)
# into $stash/NAME/, replacing what was there, after checking every file; $2 is move or copy.
stash_folder() {
    local d="$1" how="$2" label name key sum rel bad=0 files=0 dest
    label="$(basename "$d")"
    name="$(kv "$d/CONTENTS" name)"
    if ! [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] || [ "$name" = pieces ] || [ "$name" = ort-gpu ]; then
        note "$label: its CONTENTS file names no usable folder: left alone"
        return 0
    fi
    while read -r key sum rel; do
        [ "$key" = file ] || continue
        files=$((files + 1))
        if [ ! -f "$d/$rel" ] || [ "$(sha256 "$d/$rel")" != "$sum" ]; then
            note "$label: $rel is missing or damaged"
            bad=1
        fi
    done <"$d/CONTENTS"
    [ $bad = 0 ] || { note "$label: not stashed"; return 0; }
    dest="$stash/$name"
    if [ -n "$(kv "$d/CONTENTS" part)" ]; then
        stash_part "$d" "$how" "$dest"
        return 0
    fi
    rm -rf "$dest.partial"
    if [ "$how" = move ]; then
        mv "$d" "$dest.partial"
    else
        cp -al "$d" "$dest.partial" 2>/dev/null || { rm -rf "$dest.partial"; cp -a "$d" "$dest.partial"; }
    fi
    rm -rf "$dest"
    mv "$dest.partial" "$dest"
    note "$label: $files files stashed as $name"
}

# Takes part K of N of a folder (CONTENTS "part K N ID", its files checked) into $3: its files
# join those of the other parts of bundle ID (parts of another bundle are dropped); once every
# part is there, $3/CONTENTS lists them all (before that, the folder counts as not stashed).
stash_part() {
    local d="$1" how="$2" dest="$3" label k n id k2 f key sum rel
    label="$(basename "$d")"
    read -r k n id <<<"$(kv "$d/CONTENTS" part)"
    if ! [[ "$k" =~ ^[0-9]+$ && "$n" =~ ^[0-9]+$ && "$id" =~ ^[0-9a-f]+$ ]] \
        || [ "$k" -lt 1 ] || [ "$k" -gt "$n" ]; then
        note "$label: its part line is not \"part K N ID\": left alone"
        return 0
    fi
    while read -r key sum rel; do
        [ "$key" = file ] || continue
        if ! [[ "$rel" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
            note "$label: $rel is no plain file name: not stashed"
            return 0
        fi
    done <"$d/CONTENTS"
    mkdir -p "$dest"
    for f in "$dest"/CONTENTS.part-*; do
        [ -f "$f" ] || continue
        [ "$(kv "$f" part | cut -d ' ' -f 3)" = "$id" ] || rm -f "$f"
    done
    while read -r key sum rel; do
        [ "$key" = file ] || continue
        if [ "$how" = move ]; then mv -f "$d/$rel" "$dest/$rel"; else cp -f "$d/$rel" "$dest/$rel"; fi
    done <"$d/CONTENTS"
    cp "$d/CONTENTS" "$dest/CONTENTS.part-$k"
    [ "$how" = move ] && rm -rf "$d"
    rm -f "$dest/CONTENTS"
    for k2 in $(seq 1 "$n"); do
        [ -f "$dest/CONTENTS.part-$k2" ] || { note "$label: part $k of $n of $(basename "$dest") stashed"; return 0; }
    done
    { echo "name $(basename "$dest")"; cat "$dest"/CONTENTS.part-* | grep '^file '; } >"$dest/CONTENTS.partial"
    mv "$dest/CONTENTS.partial" "$dest/CONTENTS"
    note "$label: part $k of $n stashed; $(basename "$dest") is complete ($(grep -c '^file ' "$dest/CONTENTS") files)"
}

# Takes every carried .gpu-*/ folder with a PIECE or CONTENTS file into the stash.
stash_carried() {
    local how=copy d
    stash_moves && how=move
    mkdir -p "$stash/pieces"
    for d in "$repo"/.gpu-*; do
        [ -d "$d" ] || continue
        if [ -f "$d/PIECE" ]; then
            stash_piece "$d" "$how"
        elif [ -f "$d/CONTENTS" ]; then
            stash_folder "$d" "$how"
        fi
    done
}

# Prints what the stash holds: for each archive the pieces present and missing, the extras.
stash_status() {
    local group f name count sha prefix i want_count="" want_sha="" seen_want=0
    local -a have miss
    echo "== stash $stash"
    if [ -f "$gpu/MANIFEST" ]; then
        read -r _ _ want_count want_sha _ < <(awk '$1 == "ort-gpu"' "$gpu/MANIFEST"; echo) || true
    fi
    for group in "$stash/pieces"/*; do
        [ -d "$group" ] || continue
        f="$(compgen -G "$group/PIECE.*" | head -n 1 || true)"
        [ -n "$f" ] || continue
        name="$(kv "$f" name)" count="$(kv "$f" count)" sha="$(kv "$f" archive-sha256)"
        prefix="$(kv "$f" folder)"
        prefix="${prefix%-*}"
        [ "$sha" = "$want_sha" ] && seen_want=1
        have=() miss=()
        for i in $(seq 1 "$count"); do
            if [ -f "$group/piece.$(printf %03d "$i")" ]; then have+=("$i"); else miss+=("$i"); fi
        done
        if [ ${#miss[@]} = 0 ]; then
            echo "$name ${sha:0:16}: all $count pieces present"
        else
            echo "$name ${sha:0:16}: pieces present: ${have[*]:-none}; missing: ${miss[*]} of $count" \
                "(carry$(for i in "${miss[@]}"; do printf ' %s-%s' "${prefix:-.gpu-ort}" "$i"; done))"
        fi
        [ -f "$stash/$name/${sha:0:16}/.complete" ] && echo "  unpacked in $stash/$name/${sha:0:16}"
    done
    if [ -n "$want_sha" ] && [ $seen_want = 0 ]; then
        if [ -f "$stash/ort-gpu/${want_sha:0:16}/.complete" ]; then
            echo "ort-gpu ${want_sha:0:16}: unpacked in $stash/ort-gpu/${want_sha:0:16}"
        else
            echo "ort-gpu ${want_sha:0:16} (named by .gpu/MANIFEST): none of its $want_count pieces stashed;" \
                "missing: $(seq -s ' ' 1 "$want_count")"
        fi
    fi
    for f in "$stash"/*/CONTENTS; do
        [ -f "$f" ] || continue
        echo "$(kv "$f" name): $(grep -c '^file ' "$f") files in $(dirname "$f")"
    done
    [ -f "$stash/test-models/CONTENTS" ] ||
        echo "test-models: not stashed (carry .gpu-models and every .gpu-models-N bundle wrote)"
    [ -f "$stash/bench/CONTENTS" ] || echo "bench: not stashed (carry .gpu-bench)"
}

run_stash() {
    need sha256sum awk
    stash_carried
    stash_status
}

# Sets ort_gpu_dir (the folder holding the unpacked GPU build's onnxruntime/ package) and
# ort_gpu_version when .gpu/MANIFEST names a GPU build and all its pieces are in the stash:
# the first time they are joined, checked against the archive's sha256 and unpacked into
# $stash/ort-gpu/SHA. Otherwise sets ort_gpu_missing to the reason and returns 1.
ort_gpu_prepare() {
    ort_gpu_dir="" ort_gpu_missing="" ort_gpu_version=""
    local line ver count sha archive group dest i got
    local -a miss=() parts=()
    line="$(awk '$1 == "ort-gpu"' "$gpu/MANIFEST" 2>/dev/null || true)"
    [ -n "$line" ] || { ort_gpu_missing="not bundled"; return 1; }
    read -r _ ver count sha archive <<<"$line"
    dest="$stash/ort-gpu/${sha:0:16}"
    if [ ! -f "$dest/.complete" ]; then
        group="$stash/pieces/ort-gpu-${sha:0:16}"
        for i in $(seq 1 "$count"); do
            parts+=("$group/piece.$(printf %03d "$i")")
            [ -f "${parts[-1]}" ] || miss+=("$i")
        done
        if [ ${#miss[@]} -gt 0 ]; then
            ort_gpu_missing="pieces missing from the stash: ${miss[*]} of $count (carry$(for i in "${miss[@]}"; do printf ' .gpu-ort-%s' "$i"; done) with scripts/gpu-check.sh stash)"
            return 1
        fi
        note "assembling ONNX Runtime's GPU build ($archive) from $count pieces into $dest"
        got="$(cat "${parts[@]}" | sha256sum | cut -d ' ' -f 1)"
        if [ "$got" != "$sha" ]; then
            rm -rf "$group"
            ort_gpu_missing="the joined pieces are damaged (sha256 ${got:0:16}..., expected ${sha:0:16}...): removed; stash them again"
            return 1
        fi
        rm -rf "$dest.partial"
        mkdir -p "$dest.partial"
        if command -v xz >/dev/null 2>&1; then
            cat "${parts[@]}" | xz -dc -T0 | tar -C "$dest.partial" -xf - || { ort_gpu_missing="could not unpack $archive"; return 1; }
        else
            cat "${parts[@]}" | python3 -c '
import sys, tarfile
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz") as t:
    if hasattr(tarfile, "fully_trusted_filter"):
        t.extractall(sys.argv[1], filter="fully_trusted")
    else:
        t.extractall(sys.argv[1])
' "$dest.partial" || { ort_gpu_missing="could not unpack $archive"; return 1; }
        fi
        [ -f "$dest.partial/onnxruntime/capi/libonnxruntime.so.$ver" ] ||
            { ort_gpu_missing="$archive holds no onnxruntime/capi/libonnxruntime.so.$ver"; return 1; }
        rm -rf "$dest"
        mv "$dest.partial" "$dest"
        touch "$dest/.complete"
    fi
    ort_gpu_dir="$dest" ort_gpu_version="$ver"
}

# Prints the folders of python3's NVIDIA wheels that hold CUDA $1's libraries (nvidia/cu$1/lib:
# cudart, cuBLAS, ...) and cuDNN's (nvidia/cudnn/lib), which ONNX Runtime's CUDA provider loads.
nvidia_lib_dirs() {
    local major="$1"
    {
        python3 -c '
import os, sys
try:
    import nvidia
except ImportError:
    sys.exit(0)
for p in nvidia.__path__:
    for sub in sys.argv[1:]:
        d = os.path.join(p, sub, "lib")
        if os.path.isdir(d):
            print(d)
' "cu$major" cudnn 2>/dev/null || true
        compgen -G "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cu$major/lib" || true
        compgen -G "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib" || true
    } | awk 'NF && !seen[$0]++'
}

# ================================== run / local ==============================================

# Unpacks the bundle into $root (afresh each time).
unpack() {
    [ -f "$gpu/MANIFEST" ] || die "no bundle in $gpu: run 'scripts/gpu-check.sh bundle' on the build machine"
    rm -rf "$root"
    mkdir -p "$root"
    local a
    for a in "$gpu"/*.tar.xz; do
        if command -v xz >/dev/null 2>&1; then
            tar -C "$root" -xJf "$a"
        else
            python3 -c '
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    if hasattr(tarfile, "fully_trusted_filter"):
        t.extractall(sys.argv[2], filter="fully_trusted")
    else:
        t.extractall(sys.argv[2])
' "$a" "$root"
        fi
    done
}

# Where FILE is: among cuda_dirs, in the loader's cache, or anywhere under the usual roots. Prints
# the path; returns 2 when the loader finds it by itself, 1 when it is nowhere.
cuda_lib() {
    local file="$1" d p
    for d in "${cuda_dirs[@]}"; do [ -e "$d/$file" ] && { echo "$d/$file"; return 0; }; done
    p="$(ldconfig -p 2>/dev/null | awk -v f="$file" '$1 == f { print $NF; exit }')"
    [ -n "$p" ] && { echo "$p"; return 2; }
    p="$(find /usr/local /opt /usr/lib /usr/lib64 -maxdepth 8 -name "$file" -not -path '*/stubs/*' 2>/dev/null | head -n 1)"
    [ -n "$p" ] && { echo "$p"; return 0; }
    return 1
}

setup_env() {
    multiarch="$(awk '$1 == "multiarch" { print $2 }' "$gpu/MANIFEST")"
    local ort_file gst="$root/gst" d
    ort_file="$(awk '$1 == "ort" { print $2 }' "$gpu/MANIFEST")"

    cuda_dirs=()
    local cuda="${CUDA_HOME:-/usr/local/cuda}"
    for d in "$cuda/lib64" "$cuda/targets/x86_64-linux/lib" /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
        /usr/local/lib/ferrostream-nvrtc "$HOME/.local/lib/ferrostream-nvrtc"; do
        [ -d "$d" ] && cuda_dirs+=("$d")
    done
    # ONNX Runtime's GPU build, when all its pieces are in the stash.
    local ort_gpu_capi="" cuda_major
    local -a nvidia_dirs=()
    ort_gpu_dir=""
    if [ "${GPU_CHECK_ORT_GPU:-1}" != 0 ]; then
        if ort_gpu_prepare; then
            ort_gpu_capi="$ort_gpu_dir/onnxruntime/capi"
            cuda_major="$(sed -n "s/^cuda_version *= *['\"]\([0-9]*\).*/\1/p" "$ort_gpu_capi/build_and_package_info.py" 2>/dev/null)"
            mapfile -t nvidia_dirs < <(nvidia_lib_dirs "${cuda_major:-13}")
        elif [ "$ort_gpu_missing" != "not bundled" ]; then
            note "ONNX Runtime's GPU build is not used: $ort_gpu_missing"
        fi
    fi
    local libpath="$gst/usr/lib/$multiarch:$gst/lib/$multiarch"
    if [ -n "$ort_gpu_capi" ]; then
        libpath="$libpath:$ort_gpu_capi"
    elif [ -n "$ort_file" ]; then
        libpath="$libpath:$root/ort"
    fi
    for d in "${cuda_dirs[@]}"; do libpath="$libpath:$d"; done
    # After the CUDA toolkit's own folders, so our NVRTC and CUDA code load what they did before;
    # the CUDA provider takes from here what the toolkit lacks (cuDNN, cuFFT, cuRAND, ...).
    for d in "${nvidia_dirs[@]}"; do libpath="$libpath:$d"; done
    local libcuda libnvrtc="" f rc
    rc=0; libcuda="$(cuda_lib libcuda.so.1)" || rc=$?
    [ $rc = 0 ] && libpath="$libpath:$(dirname "$libcuda")"
    for f in libnvrtc.so.13 libnvrtc.so.12 libnvrtc.so; do
        rc=0; libnvrtc="$(cuda_lib "$f")" || rc=$?
        [ $rc = 0 ] && libpath="$libpath:$(dirname "$libnvrtc")"
        [ $rc != 1 ] && break
    done
    export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

    unset GST_PLUGIN_PATH_1_0 GST_PLUGIN_SYSTEM_PATH_1_0 GST_REGISTRY_1_0 GST_PLUGIN_SCANNER_1_0 GST_DEBUG
    export GST_PLUGIN_SYSTEM_PATH="$gst/usr/lib/$multiarch/gstreamer-1.0"
    export GST_PLUGIN_PATH="$root/plugins"
    export GST_PLUGIN_SCANNER="$gst/usr/lib/$multiarch/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner"
    export GST_REGISTRY="$root/registry.bin"
    export GST_DEBUG_NO_COLOR=1
    # GLib's modules of the host must not be loaded into the bundled GLib.
    export GIO_MODULE_DIR="$gst/usr/lib/$multiarch/gio/modules" GIO_USE_VFS=local
    export PATH="$gst/usr/bin:$PATH"
    export FERROSTREAM_MEDIA_DIR="$gpu/media" FERROSTREAM_MODEL_DIR="$stash/test-models"
    [ -f "$stash/test-models/CONTENTS" ] ||
        note "the tests' models are not in the stash: carry .gpu-models (written by bundle) in this call or a stash call before it"
    local ort_kind="CPU build"
    if [ -n "$ort_gpu_capi" ]; then
        # The GPU build for the plugin (ORT_DYLIB_PATH) and for python3 (import onnxruntime).
        export ORT_DYLIB_PATH="$ort_gpu_capi/libonnxruntime.so.$ort_gpu_version"
        export PYTHONPATH="$ort_gpu_dir${PYTHONPATH:+:$PYTHONPATH}"
        ort_kind="GPU build, CUDA ${cuda_major:-?}; also for python3 through PYTHONPATH"
    elif [ -n "$ort_file" ]; then
        export ORT_DYLIB_PATH="$root/$ort_file"
    else
        # No ONNX Runtime in the bundle: take python3's onnxruntime package, if there is one.
        f="$(python3 -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[-1])' 2>/dev/null || true)"
        [ -n "$f" ] && export ORT_DYLIB_PATH="$f"
        ort_kind="python3's onnxruntime package"
    fi
    export G_DEBUG=fatal-warnings
    export RUST_BACKTRACE=1
    [ "$mode" = run ] && export FERROSTREAM_REQUIRE_GPU=1

    echo "== environment"
    echo "bundle:          $root (from $gpu)"
    echo "libcuda.so.1:    ${libcuda:-not found}"
    echo "libnvrtc:        ${libnvrtc:-not found}"
    echo "ONNX Runtime:    ${ORT_DYLIB_PATH:-not found}${ORT_DYLIB_PATH:+ ($ort_kind)}"
    [ -n "$ort_gpu_capi" ] && echo "CUDA/cuDNN libs: ${nvidia_dirs[*]:-none found (no nvidia wheels for python3)}"
    echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
    echo "FERROSTREAM_REQUIRE_GPU=${FERROSTREAM_REQUIRE_GPU:-}"
}

# Summary rows: one entry each in row_name, row_result, row_secs.
row_name=() row_result=() row_secs=() step_logs=()
failed=0
add_row() { row_name+=("$1"); row_result+=("$2"); row_secs+=("$3"); }

write_summary() {
    {
        echo "== GPU check summary${gpu_name:+ ($gpu_name)}"
        printf '%-44s %-6s %8s\n' "binary / check" result seconds
        local i
        for i in "${!row_name[@]}"; do
            printf '%-44s %-6s %8s\n' "${row_name[$i]}" "${row_result[$i]}" "${row_secs[$i]}"
        done
        if [ ${#step_logs[@]} -gt 0 ]; then
            local results
            results="$(grep -aho 'GPU-RESULT .*' "${step_logs[@]}" 2>/dev/null | tr -d '\r' || true)"
            if [ -n "$results" ]; then
                echo
                printf '%-36s %12s %-10s %s\n' result value unit note
                echo "$results" | awk '{ note = ""; for (i = 5; i <= NF; i++) note = note (i > 5 ? " " : "") $i;
                                          printf "%-36s %12s %-10s %s\n", $2, $3, $4, note }'
            fi
        fi
    } >"$logs/summary.txt"
}

# step [-q] NAME LOGFILE COMMAND...: runs COMMAND, tees its output to LOGFILE (with -q: only
# writes it there, and shows its end when it fails), records a row.
step() {
    local quiet=0 t0 t1 rc
    [ "$1" = -q ] && { quiet=1; shift; }
    local name="$1" log="$2"
    shift 2
    [[ " ${step_logs[*]} " == *" $log "* ]] || step_logs+=("$log")
    echo
    echo "== $name"
    echo "== $name" >>"$log"
    local first
    first=$(($(wc -l <"$log") + 1))
    t0="$(date +%s.%N)"
    set +e
    if [ $quiet = 1 ]; then
        "$@" >>"$log" 2>&1
        rc=$?
        if [ $rc = 0 ]; then echo "ok (output in $(basename "$log"))"; else tail -n "+$first" "$log" | tail -n 40; fi
    else
        "$@" 2>&1 | tee -a "$log"
        rc=${PIPESTATUS[0]}
    fi
    set -e
    t1="$(date +%s.%N)"
    local secs result=pass
    secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
    if [ "$rc" != 0 ]; then
        result=FAIL
        failed=1
        [ "$rc" = 124 ] && echo "gpu-check: $name ran past ${timeout}s and was stopped" | tee -a "$log"
        echo "gpu-check: $name FAILED (exit status $rc)" | tee -a "$log"
    fi
    add_row "$name" "$result" "$secs"
    write_summary
}

gst_inspect() { timeout -k 5 120 gst-inspect-1.0 "$@"; }

run_checks() {
    need tar awk tee timeout
    root="${GPU_CHECK_ROOT:-${TMPDIR:-/tmp}/ferrostream-gpu}"
    logs="${OUT:-${GPU_CHECK_LOGS:-/tmp/gpu-check}}"
    timeout="${GPU_CHECK_TIMEOUT:-240}"
    mkdir -p "$logs"
    rm -f "$logs"/*.log "$logs/summary.txt" "$logs/logs.tar.gz"
    stash_carried
    unpack
    setup_env

    echo
    echo "== GPU"
    gpu_name=""
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; then
        gpu_name="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
    else
        echo "no NVIDIA GPU (nvidia-smi missing or failing)"
        [ "$mode" = run ] && { add_row nvidia-smi FAIL 0; failed=1; }
    fi

    local smoke="$logs/smoke.log"
    step -q "gst-inspect:coreelements" "$smoke" gst_inspect coreelements
    if [ -n "$gpu_name" ] || [ "$mode" = run ] || [ -n "${FERROSTREAM_REQUIRE_GPU:-}" ]; then
        step -q "gst-inspect:nvh264dec" "$smoke" gst_inspect nvh264dec
    else
        # Without a GPU the plugin loads but registers no element.
        step -q "gst-inspect:nvcodec" "$smoke" gst_inspect nvcodec
    fi
    step -q "gst-inspect:rsosd" "$smoke" gst_inspect rsosd

    local kind name dir file logname label
    local -a args
    while read -r kind name dir file; do
        case "$kind" in test | bench) ;; *) continue ;; esac
        if [ -n "${GPU_CHECK_ONLY:-}" ] && ! [[ " $GPU_CHECK_ONLY " == *" $name "* ]]; then continue; fi
        if [ "$kind" = bench ]; then args=(--bench); else args=(--include-ignored --test-threads=1 --nocapture "$@"); fi
        logname="$kind-${name//[:\/]/-}.log"
        # Like cargo: from the package's folder, with CARGO_MANIFEST_DIR pointing at it.
        label="$name"
        [ "$kind" = bench ] && label="$name (bench)"
        step "$label" "$logs/$logname" env -C "$repo/$dir" CARGO_MANIFEST_DIR="$repo/$dir" \
            timeout -k 10 "$timeout" "$root/$file" "${args[@]}"
    done <"$gpu/MANIFEST"

    # Only 8 files come back from the GPU machine: bundle the logs when there are more.
    if [ "$(find "$logs" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
        (cd "$logs" && tar -czf logs.tar.gz -- *.log)
        rm -f "$logs"/*.log
    fi
    echo
    cat "$logs/summary.txt"
    echo "(logs in $logs)"
    return $failed
}

# ================================== bench ====================================================

run_bench() {
    need tar awk tee timeout python3
    local t0
    t0="$(date +%s)"
    root="${GPU_CHECK_ROOT:-${TMPDIR:-/tmp}/ferrostream-gpu}"
    logs="${OUT:-${GPU_CHECK_LOGS:-/tmp/gpu-check}}"
    mkdir -p "$logs"
    rm -f "$logs/bench.log" "$logs/bench.md" "$logs/bench.json" "$logs/bench-logs.tar.gz"
    stash_carried
    unpack
    setup_env
    local device="${BENCH_DEVICE:-cuda}"
    if [ -z "$ort_gpu_dir" ] && [ "$device" != cpu ]; then
        die "bench needs ONNX Runtime's GPU build: ${ort_gpu_missing:-not found}"
    fi

    # The clip and the wheels: in the stash, or still in the tree.
    local bdir="$stash/bench" clip frames
    [ -f "$bdir/CONTENTS" ] || bdir="$repo/.gpu-bench"
    [ -f "$bdir/CONTENTS" ] || die "no benchmark extras: carry .gpu-bench (written by bundle) in a stash call first"
    read -r clip frames <<<"$(kv "$bdir/CONTENTS" clip)"
    clip="$bdir/$clip"
    [ -f "$clip" ] || die "the benchmark clip $clip is missing"

    # The wheels that exporting models needs, installed once into the stash.
    local site="$stash/site" stamp f
    local -a whls=()
    mapfile -t whls < <(compgen -G "$bdir/wheels/*.whl" | sort || true)
    if [ ${#whls[@]} -gt 0 ]; then
        stamp="$(for f in "${whls[@]}"; do basename "$f"; done | sha256sum | cut -c 1-16)"
        if [ "$(cat "$site/.stamp" 2>/dev/null)" != "$stamp" ]; then
            note "installing ${#whls[@]} wheels into $site"
            rm -rf "$site"
            mkdir -p "$site"
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
                --target "$site" "${whls[@]}" ||
                die "could not install the bench wheels"
            echo "$stamp" >"$site/.stamp"
        fi
        export BENCH_EXPORT_PYTHONPATH="$site"
    fi
    local models="${BENCH_MODEL_DIR:-$stash/models}"
    mkdir -p "$models"
    export FERROSTREAM_MODEL_DIR="$models:$FERROSTREAM_MODEL_DIR"
    # A benchmark measures: a GLib warning must not end it (the tests keep fatal-warnings).
    unset G_DEBUG FERROSTREAM_REQUIRE_GPU
    export PYTHONUNBUFFERED=1

    echo
    echo "== bench (clip $(basename "$clip"), $frames frames a stream; no run starts after ${BENCH_TOTAL_S:-540} s)"
    set +e
    python3 "$repo/scripts/gpu_bench.py" --clip "$clip" --clip-frames "$frames" --out "$logs" \
        --model-dir "$models" --device "$device" --deadline "$((t0 + ${BENCH_TOTAL_S:-540}))" "$@" 2>&1 |
        tee "$logs/bench.log"
    local rc=${PIPESTATUS[0]}
    set -e
    return "$rc"
}

# Prints the run environment as shell exports, for trying things by hand on the GPU machine.
print_env() {
    root="${GPU_CHECK_ROOT:-${TMPDIR:-/tmp}/ferrostream-gpu}"
    stash_carried >&2
    unpack
    setup_env >&2
    local v
    for v in LD_LIBRARY_PATH GST_PLUGIN_SYSTEM_PATH GST_PLUGIN_PATH GST_PLUGIN_SCANNER GST_REGISTRY \
        GST_DEBUG_NO_COLOR GIO_MODULE_DIR GIO_USE_VFS PATH FERROSTREAM_MEDIA_DIR FERROSTREAM_MODEL_DIR \
        ORT_DYLIB_PATH PYTHONPATH G_DEBUG RUST_BACKTRACE FERROSTREAM_REQUIRE_GPU; do
        [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    return 0
}

case "$mode" in
    bundle) bundle "$@" ;;
    stash) run_stash ;;
    run | local) run_checks "$@" ;;
    bench) run_bench "$@" ;;
    env) mode=run; print_env ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "usage: scripts/gpu-check.sh bundle | stash | run [TEST-ARGS...] | bench [BENCH-ARGS...] | local [TEST-ARGS...] | env (see --help)" ;;
esac
