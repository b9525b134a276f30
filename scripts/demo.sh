#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine: installs what is needed, builds the plugin and
# runs the COCO detector (ONNX Runtime on the CPU) over vtest.avi, writing one JSON line of
# objects per frame and printing a summary. Arguments go to pipelines/detect-vtest.sh.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
scripts/setup.sh
. scripts/env.sh
cargo build --release --locked -p gst-ferrostream
export GST_PLUGIN_PATH="$repo/target/release${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
exec pipelines/detect-vtest.sh "$@"
