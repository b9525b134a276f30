#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Called by meson: builds the plugin with cargo and copies it to meson's output path.
# Usage: meson-cargo-build.sh CARGO SOURCE_DIR BUILD_DIR PROFILE OUTPUT [FEATURES]
set -euo pipefail
cargo="$1" src="$2" build="$3" profile="$4" out="$5" features="${6:-}"
target="${CARGO_TARGET_DIR:-$build/cargo-target}"
args=(build --manifest-path "$src/Cargo.toml" --target-dir "$target" -p gst-ferrostream --locked)
[ "$profile" = release ] && args+=(--release)
[ -n "$features" ] && args+=(--features "$features")
"$cargo" "${args[@]}"
cp "$target/$profile/libgstferrostream.so" "$out"
