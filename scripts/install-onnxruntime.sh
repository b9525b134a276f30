#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs the ONNX Runtime shared library that rstrtinfer loads at run time.
#
# Usage: scripts/install-onnxruntime.sh [PREFIX]
#
# Takes libonnxruntime from the official PyPI wheel (CPU execution provider; x86_64 or aarch64)
# and installs it as PREFIX/lib/libonnxruntime.so. PREFIX defaults to /usr/local when run as root
# (found through the system library path) and to ~/.local otherwise (found by rstrtinfer in
# ~/.local/lib). For GPU execution providers install a GPU build of ONNX Runtime instead and point
# ORT_DYLIB_PATH at its libonnxruntime.so.
set -euo pipefail

VERSION="${ONNXRUNTIME_VERSION:-1.31.1}"
if [ "$(id -u)" = 0 ]; then default_prefix=/usr/local; else default_prefix="$HOME/.local"; fi
PREFIX="${1:-$default_prefix}"
LIB="$PREFIX/lib/libonnxruntime.so.$VERSION"

if [ -f "$LIB" ]; then
    echo "ONNX Runtime $VERSION already installed: $LIB"
    exit 0
fi

command -v python3 >/dev/null || { echo "error: python3 is needed to download the wheel" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { echo "error: pip is needed (apt-get install python3-pip)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Downloading onnxruntime $VERSION from PyPI..."
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "onnxruntime==$VERSION"
wheel="$(ls "$tmp"/onnxruntime-*.whl)"
python3 - "$wheel" "$tmp/lib" <<'PY'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if os.path.basename(n).startswith("libonnxruntime.so")]
    if not names:
        sys.exit("error: no libonnxruntime.so in " + wheel)
    for n in names:
        with z.open(n) as src, open(os.path.join(out, os.path.basename(n)), "wb") as dst:
            dst.write(src.read())
PY
src="$(ls "$tmp"/lib/libonnxruntime.so* | head -n 1)"
mkdir -p "$PREFIX/lib"
install -m 0644 "$src" "$LIB"
ln -sf "libonnxruntime.so.$VERSION" "$PREFIX/lib/libonnxruntime.so.1"
ln -sf "libonnxruntime.so.$VERSION" "$PREFIX/lib/libonnxruntime.so"
if [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
echo "Installed ONNX Runtime $VERSION: $LIB"
