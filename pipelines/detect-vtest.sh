#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Detects objects in a video with the COCO model on ONNX Runtime (CPU) and writes one JSON line
# per frame (rsmetaexport), then prints frames, frames/s and objects per frame.
#
# Usage: pipelines/detect-vtest.sh [--input VIDEO] [--output FILE.jsonl] [--config FILE]
# Needs the ferrostream plugin (installed, or on GST_PLUGIN_PATH) and the models (see README).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=pipelines/demo-common.sh
. "$here/demo-common.sh"
input=""
output="detections.jsonl"
config="$here/coco_ssd.txt"
demo_options 7 "$@"
demo_input
demo_require rstrtinfer

echo "Detecting objects in $input -> $output"
start=$(date +%s.%N)
gst-launch-1.0 -q filesrc location="$input" ! decodebin ! videoconvert \
    ! rstrtinfer config-file-path="$config" \
    ! rsmetaexport location="$output" ! fakesink
end=$(date +%s.%N)
python3 - "$output" "$start" "$end" <<'PY'
import json, sys
from collections import Counter
path, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
frames = [json.loads(line) for line in open(path)]
labels = Counter(o["label"] for f in frames for o in f["objects"])
n = len(frames)
secs = end - start
print(f"frames: {n}  time: {secs:.1f} s  frames/s: {n / secs:.1f}")
print(f"objects per frame: {sum(labels.values()) / max(n, 1):.2f}  ({', '.join(f'{l} {c / max(n, 1):.2f}' for l, c in labels.most_common(5))})")
PY
