#!/usr/bin/env bash
# Four cameras, one batch: rsstreammux -> rstrtinfer (COCO detector, one engine call per batch)
# -> rstracker -> rstiler (2x2 grid) -> an MP4 file, or a window with --display. At the end it
# prints per-source frames, frames/s and mean objects per frame.
#
# Usage: pipelines/demo-4cam.sh [--source cpu|cuda|nvmm] [--frames N] [--output FILE.mp4]
#                               [--jsonl FILE] [--display] [--config FILE]
#   --source cpu   decode on the CPU (default; works everywhere)
#   --source cuda  decode the H.264 camera with upstream nvh264dec (dGPU); needs nvh264dec
#   --source nvmm  decode the H.264 camera with nvv4l2decoder (Jetson / DeepStream); needs it
#   --frames N     stop each camera after N frames (default: the whole footage)
# Needs the ferrostream plugin (installed, or on GST_PLUGIN_PATH) and the models (see README).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
source_kind=cpu
frames=""
output="demo-4cam.mp4"
jsonl=""
display=0
config="$here/coco_ssd.txt"
while [ $# -gt 0 ]; do
    case "$1" in
        --source) source_kind="$2"; shift 2 ;;
        --frames) frames="$2"; shift 2 ;;
        --output) output="$2"; shift 2 ;;
        --jsonl) jsonl="$2"; shift 2 ;;
        --display) display=1; shift ;;
        --config) config="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

find_media() {
    for dir in ${FERROSTREAM_MEDIA_DIR:-} "$here/../../shared/media" "$cache/media"; do
        [ -f "$dir/$1" ] && { echo "$dir/$1"; return; }
    done
    echo "error: $1 not found (run scripts/fetch-models.sh or set FERROSTREAM_MEDIA_DIR)" >&2
    exit 1
}
have() { gst-inspect-1.0 "$1" >/dev/null 2>&1; }

vtest="$(find_media vtest.avi)"
carphone="$(find_media carphone_pristine.mp4)"
messi="$(find_media messi5.jpg)"
have rstrtinfer || { echo "error: the ferrostream plugin is not installed (meson install, or set GST_PLUGIN_PATH)" >&2; exit 1; }

# The H.264 camera's decoder; the other cameras (MPEG-4 part 2 and JPEG) always decode on the CPU.
case "$source_kind" in
    cpu) h264="qtdemux ! h264parse ! decodebin" ;;
    cuda)
        have nvh264dec || { echo "error: --source cuda needs nvh264dec (gst-plugins-bad built with NVCODEC and an NVIDIA GPU); it is not available here" >&2; exit 1; }
        h264="qtdemux ! h264parse ! nvh264dec ! cudadownload" ;;
    nvmm)
        have nvv4l2decoder || { echo "error: --source nvmm needs nvv4l2decoder (Jetson / DeepStream); it is not available here" >&2; exit 1; }
        h264="qtdemux ! h264parse ! nvv4l2decoder ! nvvideoconvert" ;;
    *) echo "error: --source takes cpu, cuda or nvmm" >&2; exit 2 ;;
esac

limit=""
images=""
if [ -n "$frames" ]; then
    limit="! identity eos-after=$frames"
    images="num-buffers=$frames"
else
    images="num-buffers=300"
fi
fmt="videoconvert ! video/x-raw,format=I420"
cams=(
    "filesrc location=\"$vtest\" ! decodebin ! $fmt $limit"
    "filesrc location=\"$carphone\" ! $h264 ! $fmt $limit"
    "filesrc location=\"$vtest\" ! decodebin ! videoflip video-direction=horiz ! videoscale ! video/x-raw,width=640,height=480 ! $fmt $limit"
    "filesrc location=\"$messi\" ! jpegdec ! $fmt ! imagefreeze $images ! video/x-raw,framerate=5/1"
)

if [ "$display" = 1 ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
    sink="videoconvert ! autovideosink"
    target="a window"
else
    [ "$display" = 1 ] && echo "no display found; writing $output instead"
    # H.264 when x264 is installed (gstreamer1.0-plugins-ugly), else MPEG-4 part 2 from libav.
    # (openh264enc is not used: it fails to initialise on some frame rates and then emits
    # buffers without timestamps.)
    if have x264enc; then enc="x264enc speed-preset=ultrafast ! h264parse"
    else enc="avenc_mpeg4 bitrate=4000000"; fi
    sink="videoconvert ! $enc ! mp4mux ! filesink location=\"$output\""
    target="$output"
fi
jsonl="${jsonl:-$(mktemp --suffix=.jsonl)}"

description="rsstreammux name=mux batch-size=4 batched-push-timeout=200000 \
    ! rstrtinfer config-file-path=\"$config\" batch-size=4 \
    ! rstracker config-file-path=\"$here/tracker.toml\" \
    ! rsmetaexport location=\"$jsonl\" \
    ! rstiler rows=2 columns=2 width=1280 height=720 \
    ! rsosd config-file-path=\"$here/osd.ini\" ! $sink"
for i in 0 1 2 3; do
    description="$description ${cams[$i]} ! queue ! mux.sink_$i"
done

echo "4 cameras ($source_kind decoding) -> $target"
start=$(date +%s.%N)
eval gst-launch-1.0 -q -e "$description"
end=$(date +%s.%N)
python3 - "$jsonl" "$start" "$end" <<'PY'
import json, sys
from collections import defaultdict
path, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
frames, objects = defaultdict(int), defaultdict(int)
for line in open(path):
    f = json.loads(line)
    frames[f["source_id"]] += 1
    objects[f["source_id"]] += len(f["objects"])
secs = end - start
total = sum(frames.values())
for s in sorted(frames):
    print(f"source {s}: frames: {frames[s]}  frames/s: {frames[s] / secs:.1f}  objects per frame: {objects[s] / frames[s]:.2f}")
print(f"all: frames: {total}  time: {secs:.1f} s  frames/s: {total / secs:.1f}")
PY
