#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Builds the `ferrostream` Python package (a Rust extension module, one abi3 wheel for CPython
# 3.9+) and installs it, with NumPy and pytest, into a virtual environment of the distribution's
# Python that also sees the distribution's PyGObject (python3-gi):
#
#   . "${FERROSTREAM_CACHE_DIR:-$HOME/.cache/ferrostream}/python/bin/activate"
#   python3 -c "import ferrostream"
#
# Usage: scripts/install-python.sh [VENV]   (VENV defaults to the directory above)
# Rebuilds the wheel every time (cargo makes that quick when nothing changed).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
venv="${1:-$cache/python}"
PACKAGES=(maturin==1.16.0 numpy==2.2.6 pytest==8.4.2)
# The distribution's interpreter: PyGObject comes from its packages, not from PyPI.
python=/usr/bin/python3
[ -x "$python" ] || python="$(command -v python3)"
stamp="$venv/ferrostream-packages"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${PACKAGES[*]}" ]; then
    rm -rf "$venv"
    "$python" -m venv --system-site-packages "$venv"
    echo "Installing ${PACKAGES[*]} from PyPI into $venv..."
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}"
    echo "${PACKAGES[*]}" > "$stamp"
fi
. "$repo/scripts/env.sh"
echo "Building the ferrostream wheel..."
rm -rf "$repo/target/wheels"
# Built in a target directory of its own: the extension module (libferrostream.so) must never
# sit in a directory GStreamer scans for plugins (target/release, target/debug).
CARGO_TARGET_DIR="$repo/target/python" PYO3_PYTHON="$venv/bin/python" \
    "$venv/bin/maturin" build --quiet --release --locked \
    --manifest-path "$repo/python/Cargo.toml" --interpreter "$venv/bin/python" \
    --out "$repo/target/wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --force-reinstall \
    --no-deps "$repo"/target/wheels/ferrostream-*.whl
"$venv/bin/python" -c "import ferrostream; print('ferrostream', ferrostream.__version__, 'installed in $venv')"
