#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The scale-out example, measured on one machine: GStreamer pipelines running the COCO detector
# on a KServe v2 server (scripts/kserve_server.py, ONNX Runtime on the CPU) against the same
# pipeline running the model in-process. Each run decodes FRAMES frames of vtest.avi (768x576)
# and infers every one.
#
#   scripts/bench/scaleout.sh [FRAMES]
#
# Prints one line per run:
#   SCALEOUT run=NAME pipelines=P frames=F seconds=S fps=F loopback-bytes-per-frame=B
# and the added time per frame of the remote runs against the local one. Needs the plugin on
# GST_PLUGIN_PATH (cargo build --release -p gst-ferrostream puts it in target/release), the
# models (scripts/fetch-models.sh) and the server (scripts/install-kserve.sh).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$repo/scripts/env.sh"
frames="${1:-300}"
export GST_PLUGIN_PATH="${GST_PLUGIN_PATH:-$repo/target/release}"
python="${FERROSTREAM_KSERVE_PYTHON:-${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}/kserve-venv/bin/python}"
media="${FERROSTREAM_MEDIA_DIR:-$repo/../shared/media}"
[ -f "$media/vtest.avi" ] || media="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}/media"
models="${FERROSTREAM_MODEL_DIR:-${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}/models}"
model="$models/coco_ssdlite_mobilenet_v2.onnx"
[ -f "$model" ] || { echo "error: $model not found: run scripts/fetch-models.sh" >&2; exit 1; }
threads="$(nproc)"
port="${SCALEOUT_PORT:-18411}"

"$python" "$repo/scripts/kserve_server.py" --model "$model" --name coco \
    --grpc-port "$port" --http-port "$((port + 1))" --threads "$threads" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

pipeline() {
    gst-launch-1.0 -q filesrc location="$media/vtest.avi" ! decodebin ! videoconvert \
        ! identity eos-after="$frames" \
        ! rstrtinfer config-file-path="$repo/pipelines/coco_ssd.txt" "$@" ! fakesink
}

lo_bytes() { awk '/^ *lo:/ { printf "%.0f\n", $2 + $10 }' /proc/net/dev; }

# run NAME P ARGS...: P pipelines at once with ARGS; prints the line and returns the seconds.
run() {
    local name="$1" count="$2"
    shift 2
    local before after t0 t1 i
    before="$(lo_bytes)"
    t0="$(date +%s.%N)"
    for i in $(seq "$count"); do pipeline "$@" & done
    wait $(jobs -p | grep -v "^$server\$")
    t1="$(date +%s.%N)"
    after="$(lo_bytes)"
    python3 - "$name" "$count" "$frames" "$t0" "$t1" "$before" "$after" <<'PY'
import sys
name, count, frames, t0, t1, before, after = sys.argv[1:]
count, frames = int(count), int(frames)
seconds = float(t1) - float(t0)
total = count * frames
# Loopback counts each byte twice (sent and received on lo).
per_frame = (int(after) - int(before)) / 2 / total
print(f"SCALEOUT run={name} pipelines={count} frames={total} seconds={seconds:.1f} "
      f"fps={total / seconds:.1f} loopback-bytes-per-frame={per_frame:.0f}")
PY
}

remote="backend=kserve server-url=127.0.0.1:$port model-name=coco"
run local 1 backend=onnxruntime device=cpu threads="$threads"
run remote-1-in-flight 1 $remote requests-in-flight=1
run remote-4-in-flight 1 $remote requests-in-flight=4
run remote-two-pipelines 2 $remote requests-in-flight=4
