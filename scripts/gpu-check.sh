#!/usr/bin/env bash
# The GPU check: runs Ferrostream's GPU tests and benchmarks on an NVIDIA machine that has the
# driver and CUDA but neither GStreamer nor Rust, from a bundle made on a Debian 12 build machine.
#
# Usage:
#   scripts/gpu-check.sh bundle          on the build machine (Debian 12, x86_64): builds the GPU
#                                        test and bench binaries and the plugin, and writes the
#                                        git-ignored folder .gpu/ with everything the GPU machine
#                                        needs (under 60 MiB); prints its size and how to run it
#   scripts/gpu-check.sh run [ARGS...]   on the GPU machine, from the repository root, with .gpu/
#                                        beside it: unpacks the bundle, smoke-checks GStreamer's
#                                        nvcodec and our plugin, runs every test binary
#                                        (--include-ignored --test-threads=1 --nocapture ARGS...;
#                                        GPU tests are #[ignore]d elsewhere) and bench binary
#                                        (--bench), and prints a summary; exits non-zero when
#                                        anything failed. FERROSTREAM_REQUIRE_GPU=1 is set, so
#                                        tests fail instead of skipping without a GPU.
#   scripts/gpu-check.sh local [ARGS...] the same as run, on the build machine, to check the bundle
#                                        and this script without a GPU (tests skip, unless
#                                        FERROSTREAM_REQUIRE_GPU is set in the environment)
#   scripts/gpu-check.sh env             unpacks the bundle and prints run's environment as
#                                        'export' lines, for trying things by hand:
#                                        eval "$(scripts/gpu-check.sh env)"; gst-launch-1.0 ...
#
# What .gpu/ holds:
#   gst.tar.xz    Debian 12's GStreamer 1.22 runtime (the packages in GST_DEBS, unpacked with
#                 dpkg-deb -x into a private prefix, trimmed to the plugins in GST_PLUGINS and the
#                 libraries they, the tools and our binaries need)
#   bin.tar.xz    bin/: the test and bench binaries listed in GPU_TESTS and GPU_BENCHES;
#                 plugins/: libgstferrostream.so (debug info stripped)
#   ort.tar.xz    ort/: libonnxruntime.so (CPU build), as scripts/install-onnxruntime.sh installs it
#   media/        the footage and models in GPU_MEDIA and GPU_MODELS (not compressed: they do not
#                 shrink)
#   MANIFEST      what run executes, one line each: "test|bench NAME PACKAGE-DIR FILE"
# The archives are compressed because unpacked, the binaries and libraries would be about three
# times over the budget; run unpacks them afresh into $GPU_CHECK_ROOT (default
# ${TMPDIR:-/tmp}/ferrostream-gpu), so .gpu/ itself never grows.
#
# Logs: one per step, plus summary.txt (the table printed last), go to $OUT when it is set, else
# to $GPU_CHECK_LOGS (default /tmp/gpu-check). A test reports a number by printing a line
#   GPU-RESULT <name> <value> <unit> [note...]
# and every such line appears in the summary, below one row per binary (name, pass/FAIL, seconds).
#
# Environment (all optional):
#   GPU_CHECK_TESTS, GPU_CHECK_BENCHES   space-separated lists that replace GPU_TESTS/GPU_BENCHES
#   GPU_CHECK_RELEASE=1                  bundle: build tests and the plugin with --release
#   GPU_CHECK_PLUGIN=FILE                bundle: ship this libgstferrostream.so instead of building it
#   GPU_CHECK_ORT=0                      bundle: ship no ONNX Runtime (run then uses the one of
#                                        python3's onnxruntime package, if any)
#   GPU_CHECK_ONLY="NAME..."             run/local: run only these binaries (names as in MANIFEST)
#   GPU_CHECK_TIMEOUT=SECONDS            run/local: limit for each binary (default 240)
#   FERROSTREAM_CACHE_DIR                bundle: where downloaded .deb files are kept
#                                        (default ${XDG_CACHE_HOME:-~/.cache}/ferrostream)
set -euo pipefail

# ---- What the GPU check runs ---------------------------------------------------------------
# Entries are CRATE:TARGET. CRATE is a package name or its directory (e.g. plugins/osd); TARGET
# is an integration test (tests/TARGET.rs) or bench (benches/TARGET.rs) target, or "lib" for the
# crate's unit tests. A listed target that does not exist stops the bundle.
# Targets named here may still be being written: bundle stops on a missing one.
GPU_TESTS=(
    ferrostream-core:nvmmtestsrc
    tests:gpu_preprocess
    plugins/osd:gpu_osd
    tests:gpu_pipeline
)
GPU_BENCHES=(
    tests:gpu_preprocess
)
# Footage from $FERROSTREAM_MEDIA_DIR and models from $FERROSTREAM_MODEL_DIR; both land in
# .gpu/media, where run points both variables.
GPU_MEDIA=(carphone_pristine.mp4 messi5.jpg)
GPU_MODELS=(
    coco_ssdlite_mobilenet_v2.onnx object_detection_classes_coco.txt mobilenet_v2_imagenet.onnx
    classification_classes_ILSVRC2012.txt
)

# GStreamer plugins kept in the private prefix (file libgst<NAME>.so); the rest are removed.
GST_PLUGINS=(
    coreelements app videotestsrc videoconvertscale videorate typefindfunctions playback
    isomp4 videoparsersbad nvcodec imagefreeze png jpeg
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
)
BUDGET_MIB=60
# ---------------------------------------------------------------------------------------------

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gpu="$repo/.gpu"
mode="${1:-}"
[ $# -gt 0 ] && shift

die() { echo "gpu-check: error: $*" >&2; exit 1; }
note() { echo "gpu-check: $*"; }
need() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "'$c' is needed"; done; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
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

bundle() {
    need cargo python3 apt-get dpkg-deb readelf strip xz tar du
    [ "$(uname -m)" = x86_64 ] || die "bundle builds x86_64 binaries for the GPU machine: run it on an x86_64 machine"
    multiarch=x86_64-linux-gnu
    . "$repo/scripts/env.sh"
    local cachedir="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
    local media_dirs="${FERROSTREAM_MEDIA_DIR:-}:$cachedir/media" model_dirs="${FERROSTREAM_MODEL_DIR:-}:$cachedir/models"

    stage="$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")"
    trap 'rm -rf "$stage"' EXIT

    # Footage and models first: cheap to check, and a missing one should stop us before building.
    local -a media_files=()
    local f src
    for f in "${GPU_MEDIA[@]}"; do
        src="$(find_in_dirs "$media_dirs" "$f")" || die "media file $f not found in FERROSTREAM_MEDIA_DIR or $cachedir/media (scripts/fetch-models.sh fetches it)"
        media_files+=("$src")
    done
    for f in "${GPU_MODELS[@]}"; do
        src="$(find_in_dirs "$model_dirs" "$f")" || die "model file $f not found in FERROSTREAM_MODEL_DIR or $cachedir/models (scripts/fetch-models.sh fetches it)"
        media_files+=("$src")
    done
    local ort=""
    if [ "${GPU_CHECK_ORT:-1}" != 0 ]; then
        ort="$(find_onnxruntime)" || die "libonnxruntime.so.${ONNXRUNTIME_VERSION:-1.31.1} not found: run scripts/install-onnxruntime.sh (or set GPU_CHECK_ORT=0)"
    fi

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
    {
        echo "# Written by scripts/gpu-check.sh bundle; read by scripts/gpu-check.sh run."
        echo "multiarch $multiarch"
        [ -n "$ort" ] && echo "ort ort/$(basename "$ort")"
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
    tree="$(cd "$repo" && git ls-files -z -co --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -n 1 | cut -f1)"
    echo "  the working tree that travels with it: $(mib "${tree:-0}")"
    echo
    echo "Run it on the GPU machine, from a copy of the working tree with the ignored folder .gpu/:"
    echo "  command \"scripts/gpu-check.sh run\"  carry [\".gpu\"]"
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
    local libpath="$gst/usr/lib/$multiarch:$gst/lib/$multiarch"
    [ -n "$ort_file" ] && libpath="$libpath:$root/ort"
    for d in "${cuda_dirs[@]}"; do libpath="$libpath:$d"; done
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
    export FERROSTREAM_MEDIA_DIR="$gpu/media" FERROSTREAM_MODEL_DIR="$gpu/media"
    if [ -n "$ort_file" ]; then
        export ORT_DYLIB_PATH="$root/$ort_file"
    else
        # No ONNX Runtime in the bundle: take python3's onnxruntime package, if there is one.
        f="$(python3 -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[-1])' 2>/dev/null || true)"
        [ -n "$f" ] && export ORT_DYLIB_PATH="$f"
    fi
    export G_DEBUG=fatal-warnings
    export RUST_BACKTRACE=1
    [ "$mode" = run ] && export FERROSTREAM_REQUIRE_GPU=1

    echo "== environment"
    echo "bundle:          $root (from $gpu)"
    echo "libcuda.so.1:    ${libcuda:-not found}"
    echo "libnvrtc:        ${libnvrtc:-not found}"
    echo "ONNX Runtime:    ${ORT_DYLIB_PATH:-not found}"
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

# Prints the run environment as shell exports, for trying things by hand on the GPU machine.
print_env() {
    root="${GPU_CHECK_ROOT:-${TMPDIR:-/tmp}/ferrostream-gpu}"
    unpack
    setup_env >&2
    local v
    for v in LD_LIBRARY_PATH GST_PLUGIN_SYSTEM_PATH GST_PLUGIN_PATH GST_PLUGIN_SCANNER GST_REGISTRY \
        GST_DEBUG_NO_COLOR GIO_MODULE_DIR GIO_USE_VFS PATH FERROSTREAM_MEDIA_DIR FERROSTREAM_MODEL_DIR \
        ORT_DYLIB_PATH G_DEBUG RUST_BACKTRACE FERROSTREAM_REQUIRE_GPU; do
        [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    return 0
}

case "$mode" in
    bundle) bundle "$@" ;;
    run | local) run_checks "$@" ;;
    env) mode=run; print_env ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "usage: scripts/gpu-check.sh bundle | run [TEST-ARGS...] | local [TEST-ARGS...] | env (see --help)" ;;
esac
