#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs the KServe v2 inference server that the remote-inference tests and the scale-out
# example start (scripts/kserve_server.py): the `kserve` package's ModelServer with ONNX Runtime,
# from PyPI, in a Python virtual environment of its own.
#
# Usage: scripts/install-kserve.sh [DEST]
#
# DEST defaults to ${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}/kserve-venv;
# the tests look there (or at $FERROSTREAM_KSERVE_PYTHON). Does nothing when these versions are
# already installed there.
set -euo pipefail

PACKAGES=(kserve==0.21.0 onnxruntime==1.32.0 numpy==2.4.6)
cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"
DEST="${1:-$cache/kserve-venv}"
stamp="$DEST/ferrostream-packages"

if [ -x "$DEST/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "${PACKAGES[*]}" ]; then
    echo "KServe server already installed: $DEST"
    exit 0
fi

command -v python3 >/dev/null || { echo "error: python3 is needed" >&2; exit 1; }
rm -rf "$DEST"
if ! python3 -m venv "$DEST" >/dev/null 2>&1; then
    # Debian and Ubuntu ship venv separately.
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "Installing python3-venv..."
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv
    rm -rf "$DEST"
    python3 -m venv "$DEST"
fi
echo "Installing ${PACKAGES[*]} from PyPI into $DEST..."
"$DEST/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}"
echo "${PACKAGES[*]}" > "$stamp"
