#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs NVRTC, the CUDA runtime compiler that Ferrostream's GPU code uses to compile its CUDA
# kernels, on machines without the CUDA toolkit (the NVIDIA driver alone provides no NVRTC).
#
# Usage: scripts/install-nvrtc.sh [PREFIX]
#
# Takes the libraries from the official PyPI wheel nvidia-cuda-nvrtc-cu12 (x86_64 or aarch64;
# only nvidia/cuda_nvrtc/lib/*, without the unused *.alt.* variants, is kept) and installs them in PREFIX/lib/ferrostream-nvrtc/, with
# libnvrtc.so pointing at libnvrtc.so.12. PREFIX is the first argument, else $PREFIX, else
# /usr/local when run as root and ~/.local otherwise. scripts/env.sh puts that folder on
# LD_LIBRARY_PATH. Does nothing when this version is already installed there.
# NVRTC_VERSION overrides the pinned wheel version.
set -euo pipefail

VERSION="${NVRTC_VERSION:-12.9.86}"
if [ "$(id -u)" = 0 ]; then default_prefix=/usr/local; else default_prefix="$HOME/.local"; fi
PREFIX="${1:-${PREFIX:-$default_prefix}}"
DEST="$PREFIX/lib/ferrostream-nvrtc"

if [ -f "$DEST/libnvrtc.so.12" ] && [ "$(cat "$DEST/VERSION" 2>/dev/null)" = "$VERSION" ]; then
    echo "NVRTC $VERSION already installed: $DEST"
    exit 0
fi

command -v python3 >/dev/null || { echo "error: python3 is needed to download the wheel" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { echo "error: pip is needed (apt-get install python3-pip)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Downloading nvidia-cuda-nvrtc-cu12 $VERSION from PyPI..."
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "nvidia-cuda-nvrtc-cu12==$VERSION"
wheel="$(ls "$tmp"/nvidia_cuda_nvrtc_cu12-*.whl)"
python3 - "$wheel" "$tmp/lib" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
prefix = "nvidia/cuda_nvrtc/lib/"
with zipfile.ZipFile(wheel) as z:
    # The *.alt.* variants (another build of the same API, 110 MB) are not used: skip them.
    names = [n for n in z.namelist()
             if n.startswith(prefix) and not n.endswith("/") and ".alt." not in n]
    if not any(os.path.basename(n) == "libnvrtc.so.12" for n in names):
        sys.exit("error: no nvidia/cuda_nvrtc/lib/libnvrtc.so.12 in " + wheel)
    for n in names:
        with z.open(n) as src, open(os.path.join(out, os.path.basename(n)), "wb") as dst:
            dst.write(src.read())
PY
rm -rf "$DEST"
mkdir -p "$DEST"
for f in "$tmp"/lib/*; do
    case "$f" in
        *.so*) install -m 0755 "$f" "$DEST/" ;;
        *) install -m 0644 "$f" "$DEST/" ;;
    esac
done
ln -sf libnvrtc.so.12 "$DEST/libnvrtc.so"
echo "$VERSION" >"$DEST/VERSION"
echo "Installed NVRTC $VERSION: $DEST"
