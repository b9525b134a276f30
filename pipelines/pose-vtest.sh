#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Body poses of the people in a video: YOLO11n-pose (COCO's 17 keypoints) on ONNX Runtime (CPU),
# tracked, drawn by rsosd (boxes, ids, keypoints and limbs) into an H.264 MP4 (a WebM with VP8
# where no H.264 encoder is installed), with one JSON line per frame (rsmetaexport) beside it.
# Prints frames, frames/s and people per frame.
#
# Usage: pipelines/pose-vtest.sh [--input VIDEO] [--output FILE.mp4] [--json FILE.jsonl]
#                                [--frames N] [--config FILE]
# Needs the ferrostream plugin (installed, or on GST_PLUGIN_PATH) and the models (see README).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=pipelines/demo-common.sh
. "$here/demo-common.sh"
input=""
output="poses.mp4"
json=""
frames=-1
config="$here/yolo11_pose.txt"
while [ $# -gt 0 ]; do
    case "$1" in
        --input) input="$2"; shift 2 ;;
        --output) output="$2"; shift 2 ;;
        --json) json="$2"; shift 2 ;;
        --frames) frames="$2"; shift 2 ;;
        --config) config="$2"; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[[ "$frames" =~ ^-?[0-9]+$ ]] || { echo "error: --frames takes a number, not '$frames'" >&2; exit 2; }
demo_input
demo_require rstrtinfer
[ -n "$json" ] || json="${output%.*}.jsonl"

# H.264 in MP4 where an encoder is installed (x264enc: gstreamer1.0-plugins-ugly; openh264enc:
# gstreamer1.0-plugins-bad), else VP8 in WebM (gstreamer1.0-plugins-good).
if gst-inspect-1.0 x264enc >/dev/null 2>&1; then
    encode=(x264enc tune=zerolatency speed-preset=veryfast ! h264parse ! mp4mux)
elif gst-inspect-1.0 openh264enc >/dev/null 2>&1; then
    encode=(openh264enc bitrate=4000000 ! h264parse ! mp4mux)
else
    encode=(vp8enc deadline=1 target-bitrate=4000000 ! webmmux)
    output="${output%.*}.webm"
fi

echo "Drawing poses of $input -> $output (metadata: $json)"
start=$(date +%s.%N)
gst-launch-1.0 -q filesrc location="$input" ! decodebin ! identity eos-after="$frames" \
    ! videoconvert ! rstrtinfer config-file-path="$config" ! rstracker \
    ! rsmetaexport location="$json" ! rsosd ! videoconvert ! "${encode[@]}" \
    ! filesink location="$output"
end=$(date +%s.%N)
python3 - "$json" "$start" "$end" <<'PY'
import json, sys
path, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
frames = [json.loads(line) for line in open(path)]
n = len(frames)
people = sum(1 for f in frames for o in f["objects"] if o.get("keypoints"))
secs = end - start
print(f"frames: {n}  time: {secs:.1f} s  frames/s: {n / secs:.1f}")
print(f"people with keypoints per frame: {people / max(n, 1):.2f}")
PY
