#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Called by meson: builds the plugin and ferrostream-app with cargo and copies them to meson's
# output paths.
# Usage: meson-cargo-build.sh CARGO SOURCE_DIR BUILD_DIR PROFILE PLUGIN_OUTPUT APP_OUTPUT [FEATURES]
set -euo pipefail
cargo="$1" src="$2" build="$3" profile="$4" out="$5" app_out="$6" features="${7:-}"
target="${CARGO_TARGET_DIR:-$build/cargo-target}"
args=(build --manifest-path "$src/Cargo.toml" --target-dir "$target" -p gst-ferrostream
      -p ferrostream-app --locked)
[ "$profile" = release ] && args+=(--release)
# The features are the plugin's (the app registers the same elements in its process).
[ -n "$features" ] && args+=(--features "gst-ferrostream/$features")
"$cargo" "${args[@]}"
cp "$target/$profile/libgstferrostream.so" "$out"
cp "$target/$profile/ferrostream-app" "$app_out"
