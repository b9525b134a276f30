#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs everything Ferrostream needs on a Debian 12+ or Ubuntu 22.04+ machine: system packages
# (GStreamer and its development files, decoders, meson, Python with pip),
# a Rust toolchain when none is found, the ONNX Runtime library, and the example models and
# footage. Safe to run again: it skips what is already there.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"

packages=(
    build-essential pkg-config git curl ca-certificates
    libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
    gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
    gstreamer1.0-plugins-bad gstreamer1.0-libav
    meson ninja-build fonts-dejavu-core
    # The RTSP server the rsurisrcbin tests start (GStreamer's RTSP server library, from Python).
    python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-rtsp-server-1.0
    # The Python package's caps checks (GstVideo's VideoInfo).
    gir1.2-gst-plugins-base-1.0
    # ferrostream-app: RTSP output (GStreamer's RTSP server library), H.264 encoding (x264enc).
    libgstrtspserver-1.0-dev gstreamer1.0-plugins-ugly
    # The Python package's environment (a venv of the distribution's Python, seeing python3-gi).
    python3-venv
    # rsmsgbroker: librdkafka (Kafka, linked at build and run time) and the brokers its tests start.
    librdkafka-dev mosquitto rabbitmq-server redis-server
    # The metrics tests check the /metrics output with promtool.
    prometheus
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Python with pip fetches the ONNX Runtime library; any installation of them will do.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
    echo "Installing system packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Rust 1.92 or newer (edition 2024).
if ! command -v cargo >/dev/null 2>&1; then
    [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "Installing the Rust toolchain with rustup..."
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt
    . "$HOME/.cargo/env"
fi

"$repo/scripts/install-onnxruntime.sh"
# OpenVINO (backend=openvino), from its PyPI wheel.
"$repo/scripts/install-openvino.sh"
# NVRTC compiles the CUDA kernels in the tests, so GPU code is checked on machines without a GPU.
"$repo/scripts/install-nvrtc.sh"
# The KServe v2 inference server (PyPI's kserve with ONNX Runtime) that the remote-inference
# tests start on loopback.
"$repo/scripts/install-kserve.sh"

# The ferrostream Python package (built from this tree) with NumPy and pytest, in a virtual
# environment of the distribution's Python (which has PyGObject): ~/.cache/ferrostream/python.
"$repo/scripts/install-python.sh"

# Models and footage: those a provided directory has (FERROSTREAM_MODEL_DIR/FERROSTREAM_MEDIA_DIR,
# or ../shared beside the checkout) are used from there, the others are downloaded into the cache
# (fetch-models.sh sets up the Python tools it needs for that).
. "$repo/scripts/env.sh"
"$repo/scripts/fetch-models.sh"
