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
# shellcheck source=pipelines/demo-common.sh
. "$here/demo-common.sh"
input=""
output="detections-dla-gpu.jsonl"
config="$here/coco_ssd.txt"
demo_options 10 "$@"
demo_input
demo_require rsdlainfer

echo "Detecting objects in $input on every DLA core and the GPU -> $output"
gst-launch-1.0 -m filesrc location="$input" ! decodebin ! videoconvert \
    ! m.sink_0 rsstreammux name=m batch-size=4 \
    ! rsdlainfer config-file-path="$config" dla-core=-1 allow-gpu-fallback=true batch-size=4 \
    ! rsmetaexport location="$output" ! fakesink 2>&1 |
    grep -E "rsdlainfer-engine|WARNING|ERROR" | sed 's/^/  /' || true
echo "$(wc -l <"$output") frames written to $output"
