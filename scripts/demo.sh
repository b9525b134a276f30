#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The main job on a fresh Debian/Ubuntu machine: installs what is needed, builds the plugin and
# runs the 4-camera demo: a deepstream-app configuration run by ferrostream-app (rsmultiurisrcbin
# -> COCO detector on the CPU -> rstracker -> rsanalytics -> rstiler -> rsosd -> demo-4cam.mp4),
# printing per-camera frames and objects, and how many frames/s the pipeline could take.
# Arguments go to pipelines/demo-4cam.sh (e.g. --frames 100, --display, --source cuda).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
scripts/setup.sh
. scripts/env.sh
cargo build --release --locked -p gst-ferrostream -p ferrostream-app
export FERROSTREAM_APP="$repo/target/release/ferrostream-app"
export GST_PLUGIN_PATH="$repo/target/release${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
exec pipelines/demo-4cam.sh "$@"
