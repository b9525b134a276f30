#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Four cameras, one batch: rsmultiurisrcbin (the cameras as URIs, batched by its rsstreammux)
# -> rstrtinfer (COCO detector, one engine call per batch) -> rstracker -> rsanalytics (a zone, a
# crowd limit and a counting line on the two vtest cameras) -> rstiler (2x2 grid) -> rsosd (boxes,
# ids, zones, lines and counts) -> an MP4 file, or a window with --display. It prints which
# inference backend ran and why, and at the end per-source frames, frames/s, mean objects per
# frame, and the people counted.
#
# Cameras 0 and 1 are files (vtest.avi, carphone_pristine.mp4); cameras 2 (vtest mirrored, at
# 640x480) and 3 (a photo at 5 frames/s) have no file of their own, so a local RTSP server
# (GStreamer's, from python3-gi) on 127.0.0.1 serves them, as network cameras.
#
# Usage: pipelines/demo-4cam.sh [--source cpu|cuda|nvmm] [--frames N] [--output FILE.mp4]
#                               [--jsonl FILE] [--display] [--config FILE] [--analytics FILE]
#                               [--rtsp] [--rest [PORT]] [--backend B] [--precision P]
#   --source cpu   decode on the CPU (default; works everywhere)
#   --source cuda  decode the H.264 camera with nvh264dec (dGPU, NVDEC); needs nvh264dec
#   --source nvmm  decode the H.264 camera with nvv4l2decoder (Jetson / DeepStream); needs it
#   --frames N     stop each camera after N frames (default 300; the cameras served over RTSP
#                  never end by themselves)
#   --analytics F  nvdsanalytics-format rules (default: pipelines/analytics_demo.txt)
#   --rtsp         serve all four cameras over RTSP and read them back, as network cameras
#   --rest [PORT]  serve rsmultiurisrcbin's REST API on 127.0.0.1:PORT (default 9000) and run
#                  until interrupted (Ctrl-C), files looping: add and remove cameras with curl
#                  (up to six, in a 3x2 grid); it prints how
#   --backend B    rstrtinfer's backend (default auto: TensorRT where built in; on a machine
#                  without an NVIDIA GPU OpenVINO when the CPU computes BF16/FP16, else ONNX
#                  Runtime); onnxruntime or openvino name one
#   --precision P  network-mode: fp16 (default: the reduced precision where it runs natively,
#                  within the accuracy the tests check), fp32 or int8
# The pipeline is a deepstream-app configuration (written to a temporary folder and printed), run
# by ferrostream-app: the summary gives how fast the cameras delivered and, from the app's
# **PERF lines, how many frames/s the pipeline could take (the cameras pace it).
# Needs ferrostream-app (FERROSTREAM_APP, on PATH, or built in target/) and the models (see
# README).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
source_kind=cpu
frames=""
output="demo-4cam.mp4"
jsonl=""
display=0
config="$here/coco_ssd.txt"
analytics="$here/analytics_demo.txt"
rtsp=0
rest=""
backend=auto
precision=fp16
while [ $# -gt 0 ]; do
    case "$1" in
        --source) source_kind="$2"; shift 2 ;;
        --frames) frames="$2"; shift 2 ;;
        --output) output="$2"; shift 2 ;;
        --jsonl) jsonl="$2"; shift 2 ;;
        --display) display=1; shift ;;
        --config) config="$2"; shift 2 ;;
        --analytics) analytics="$2"; shift 2 ;;
        --rtsp) rtsp=1; shift ;;
        --rest)
            if [ $# -gt 1 ] && [[ "$2" =~ ^[0-9]+$ ]]; then rest="$2"; shift 2; else rest=9000; shift; fi ;;
        --backend) backend="$2"; shift 2 ;;
        --precision) precision="$2"; shift 2 ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
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

# The H.264 camera's decoder: rsurisrcbin's uridecodebin takes the decoder of highest rank.
case "$source_kind" in
    cpu) ;;
    cuda)
        have nvh264dec || { echo "error: --source cuda needs nvh264dec (gst-plugins-bad built with NVCODEC and an NVIDIA GPU); it is not available here" >&2; exit 1; }
        export GST_PLUGIN_FEATURE_RANK="nvh264dec:MAX${GST_PLUGIN_FEATURE_RANK:+,$GST_PLUGIN_FEATURE_RANK}" ;;
    nvmm)
        have nvv4l2decoder || { echo "error: --source nvmm needs nvv4l2decoder (Jetson / DeepStream); it is not available here" >&2; exit 1; }
        export GST_PLUGIN_FEATURE_RANK="nvv4l2decoder:MAX${GST_PLUGIN_FEATURE_RANK:+,$GST_PLUGIN_FEATURE_RANK}" ;;
    *) echo "error: --source takes cpu, cuda or nvmm" >&2; exit 2 ;;
esac
if [ "$rtsp" = 1 ] && [ "$source_kind" != cpu ]; then
    echo "error: --rtsp serves the H.264 camera as JPEG; leave --source out" >&2; exit 2
fi

python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3   # the one python3-gi belongs to
port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# Served as RTP/JPEG, whose frame sides are multiples of 8 (the photo is scaled to that).
server_log="$(mktemp)"
"$python" "$here/../scripts/rtsp_server.py" "$port" \
    "cam0=filesrc location=\"$vtest\" ! decodebin" \
    "cam1=filesrc location=\"$carphone\" ! qtdemux ! h264parse ! decodebin" \
    "cam2=filesrc location=\"$vtest\" ! decodebin ! videoflip video-direction=horiz ! videoscale ! video/x-raw,width=640,height=480" \
    "cam3=filesrc location=\"$messi\" ! jpegdec ! videoscale ! video/x-raw,width=544,height=336 ! imagefreeze ! video/x-raw,framerate=5/1" \
    >"$server_log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$server_log"' EXIT
for _ in $(seq 100); do grep -q ready "$server_log" && break; sleep 0.1; done
grep -q ready "$server_log" || { echo "error: the RTSP server did not start:" >&2; cat "$server_log" >&2; exit 1; }
if [ "$rtsp" = 1 ]; then
    uris="rtsp://127.0.0.1:$port/cam0,rtsp://127.0.0.1:$port/cam1,rtsp://127.0.0.1:$port/cam2,rtsp://127.0.0.1:$port/cam3"
    echo "serving the cameras at rtsp://127.0.0.1:$port/cam0..cam3"
else
    uris="file://$vtest,file://$carphone,rtsp://127.0.0.1:$port/cam2,rtsp://127.0.0.1:$port/cam3"
fi

# The demo is a deepstream-app configuration run by ferrostream-app: the file format DeepStream
# teams bring, written here because the camera URIs and ports are known only now.
app="${FERROSTREAM_APP:-}"
if [ -z "$app" ]; then
    for candidate in "$(command -v ferrostream-app || true)" "$here/../target/release/ferrostream-app" \
        "$here/../target/debug/ferrostream-app"; do
        [ -n "$candidate" ] && [ -x "$candidate" ] && { app="$candidate"; break; }
    done
fi
[ -n "$app" ] || { echo "error: ferrostream-app not found (cargo build --release -p ferrostream-app, or set FERROSTREAM_APP)" >&2; exit 1; }

workdir="$(mktemp -d)"
trap 'kill $server 2>/dev/null || true; rm -f "$server_log"; rm -rf "$workdir"' EXIT
frames_option=()
if [ -n "$rest" ]; then
    # Runs until interrupted: no frame limit, files loop, room for two more cameras.
    [ -n "$frames" ] && { echo "error: --rest runs until interrupted; leave --frames out" >&2; exit 2; }
    batch=6; http_port="$rest"; file_loop=1; rows=2; columns=3; width=1920
else
    batch=4; http_port=0; file_loop=0; rows=2; columns=2; width=1280
    frames_option=(--frames "${frames:-300}")
fi

if [ "$display" = 1 ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
    sink=$'type=2\nsync=0'
    target="a window"
else
    [ "$display" = 1 ] && echo "no display found; writing $output instead"
    case "$output" in /*) ;; *) output="$PWD/$output" ;; esac
    # H.264 in software (x264enc, gstreamer1.0-plugins-ugly) at its fastest preset.
    sink=$'type=3\ncontainer=1\ncodec=1\nenc-type=1\nsw-preset=1\nbitrate=4000000\noutput-file='"$output"
    target="$output"
fi
jsonl="${jsonl:-$workdir/metadata.jsonl}"

# The detector's nvinfer configuration with the demo's backend and precision.
sed -e "s|^\[property\]$|[property]\nbackend=$backend\nnetwork-mode=$precision|" "$config" >"$workdir/pgie.txt"
cat >"$workdir/demo_4cam.txt" <<CONFIG
# deepstream-app configuration of the 4-camera demo (written by pipelines/demo-4cam.sh)
[application]
enable-perf-measurement=1
perf-measurement-interval-sec=5

[source-list]
num-source-bins=4
list=${uris//,/;}
sensor-id-list=cam0;cam1;cam2;cam3
use-nvmultiurisrcbin=1
http-ip=127.0.0.1
http-port=$http_port
max-batch-size=$batch

[source-attr-all]
rtsp-reconnect-interval-sec=5

[streammux]
batch-size=$batch
batched-push-timeout=200000

[primary-gie]
enable=1
config-file=$workdir/pgie.txt
batch-size=$batch
gie-unique-id=1
bbox-border-color0=1;0.2;0.2;1
bbox-border-color2=0.2;0.6;1;1
bbox-bg-color2=0.2;0.6;1;0.15

[tracker]
enable=1
ll-lib-file=/opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so
ll-config-file=$here/tracker.toml
display-tracking-id=1

[nvds-analytics]
enable=1
config-file=$analytics

[tiled-display]
enable=1
rows=$rows
columns=$columns
width=$width
height=720

[osd]
enable=1
border-width=2
text-size=14
show-clock=1
clock-text-size=16
clock-color=1;1;1;1
clock-x-offset=10
clock-y-offset=10

[sink0]
enable=1
$sink

[tests]
file-loop=$file_loop
CONFIG
echo "4 cameras ($source_kind decoding) -> $target"
echo "configuration (deepstream-app format): $workdir/demo_4cam.txt, run by ferrostream-app"
if [ -n "$rest" ]; then
    cat <<HELP
REST API on http://127.0.0.1:$rest (Ctrl-C ends the demo). Add a fifth camera:
  curl -XPOST http://127.0.0.1:$rest/api/v1/stream/add -d '{"key":"sensor","value":{"camera_id":"cam4","camera_name":"extra","camera_url":"file://$carphone","change":"camera_add"}}'
List them:   curl http://127.0.0.1:$rest/api/v1/stream/get-stream-info
Remove it:   curl -XPOST http://127.0.0.1:$rest/api/v1/stream/remove -d '{"key":"sensor","value":{"camera_id":"cam4","change":"camera_remove"}}'
Metrics:     curl http://127.0.0.1:$rest/metrics
HELP
fi
log="$workdir/app.log"
start=$(date +%s.%N)
set +e
"$app" -c "$workdir/demo_4cam.txt" --metadata "$jsonl" "${frames_option[@]}" 2>"$workdir/app.err" \
    | tee "$log" | grep -E '^(inference|  backend=auto)'
status=${PIPESTATUS[0]}
set -e
end=$(date +%s.%N)
if [ "$status" != 0 ]; then
    grep -v '^\*\* NOTICE' "$workdir/app.err" >&2
    exit "$status"
fi
python3 - "$jsonl" "$start" "$end" "$log" <<'PY'
import json, re, sys
from collections import defaultdict
path, start, end, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
frames, objects = defaultdict(int), defaultdict(int)
lines, zone_max, crowded = {}, defaultdict(dict), defaultdict(int)
for line in open(path):
    f = json.loads(line)
    s = f["source_id"]
    frames[s] += 1
    objects[s] += len(f["objects"])
    a = f.get("analytics") or {}
    for name, c in a.get("lines", {}).items():
        lines[(s, name)] = (c["forward_total"], c["backward_total"])
    for name, n in a.get("roi_counts", {}).items():
        zone_max[s][name] = max(zone_max[s].get(name, 0), n)
    crowded[s] += sum(1 for c in a.get("overcrowding", {}).values() if c["crowded"])
secs = end - start
total = sum(frames.values())
for s in sorted(frames):
    print(f"source {s}: frames: {frames[s]}  delivered at {frames[s] / secs:.1f} frames/s  objects per frame: {objects[s] / frames[s]:.2f}")
    counted = [f"line {n}: {fw} forward, {bw} back" for (src, n), (fw, bw) in sorted(lines.items()) if src == s]
    counted += [f"zone {n}: at most {m}" for n, m in sorted(zone_max[s].items())]
    if counted:
        print(f"  {'; '.join(counted)}; crowded frames: {crowded[s]}")
print(f"all: frames: {total}  time: {secs:.1f} s  frames/s: {total / secs:.1f}")
# The cameras pace the run (one serves a photo at 5 frames/s), so frames/s above say how fast
# they delivered. What the pipeline could take is the frames it handled over the time its
# busiest stage was busy (ferrostream-app's last **PERF line).
for line in open(log):
    m = re.search(r"busiest stage (\S+) was busy (\d+)% of the run: the pipeline could take about ([\d.]+) frames/s", line)
    if m:
        print(f"pipeline: busiest stage {m[1]} busy {m[2]}% of the time; it could take about "
              f"{m[3]} frames/s (the cameras set the pace above)")
PY
