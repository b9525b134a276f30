#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Jetson: one detector on every DLA core and the GPU at once (rsdlainfer dla-core=-1 with
# allow-gpu-fallback): each batch goes to the worker expected to finish it first, results leave
# in order. Writes one JSON line per frame (rsmetaexport) and prints the engine message, which
# lists the workers (DLA0, DLA1, GPU) and what each runs on.
#
# Usage: pipelines/detect-dla-gpu.sh [--input VIDEO] [--output FILE.jsonl] [--config FILE]
# On a machine without a DLA the element runs one engine on the GPU or CPU instead and says so
# in a warning; the pipeline is the same.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
input=""
output="detections-dla-gpu.jsonl"
config="$here/coco_ssd.txt"
while [ $# -gt 0 ]; do
    case "$1" in
        --input) input="$2"; shift 2 ;;
        --output) output="$2"; shift 2 ;;
        --config) config="$2"; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "$input" ]; then
    for dir in ${FERROSTREAM_MEDIA_DIR:-} "$cache/media"; do
        [ -f "$dir/vtest.avi" ] && input="$dir/vtest.avi" && break
    done
fi
[ -n "$input" ] && [ -f "$input" ] || { echo "error: input video not found (run scripts/fetch-models.sh or pass --input)" >&2; exit 1; }
gst-inspect-1.0 rsdlainfer >/dev/null 2>&1 || { echo "error: the ferrostream plugin is not installed (meson install, or set GST_PLUGIN_PATH)" >&2; exit 1; }

echo "Detecting objects in $input on every DLA core and the GPU -> $output"
gst-launch-1.0 -m filesrc location="$input" ! decodebin ! videoconvert \
    ! m.sink_0 rsstreammux name=m batch-size=4 \
    ! rsdlainfer config-file-path="$config" dla-core=-1 allow-gpu-fallback=true batch-size=4 \
    ! rsmetaexport location="$output" ! fakesink 2>&1 |
    grep -E "rsdlainfer-engine|WARNING|ERROR" | sed 's/^/  /' || true
echo "$(wc -l <"$output") frames written to $output"
