#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs the OpenVINO runtime that rstrtinfer's backend=openvino loads at run time.
#
# Usage: scripts/install-openvino.sh [PREFIX]
#
# Takes OpenVINO's C library, core library, device plugins (CPU, Intel GPU, NPU, AUTO, HETERO),
# the ONNX and IR front ends and TBB from the official PyPI wheel (x86_64 or aarch64) and
# installs them together into PREFIX/lib/ferrostream-openvino/ (they find each other there).
# PREFIX defaults to /usr/local when run as root and to ~/.local otherwise; rstrtinfer looks in
# both. Elsewhere, point OPENVINO_DYLIB_PATH at libopenvino_c.so. Then checks that the runtime
# loads and lists its devices.
set -euo pipefail

VERSION="${OPENVINO_VERSION:-2026.4.1}"
if [ "$(id -u)" = 0 ]; then default_prefix=/usr/local; else default_prefix="$HOME/.local"; fi
PREFIX="${1:-$default_prefix}"
DIR="$PREFIX/lib/ferrostream-openvino"
# The front ends for other model formats are left out.
SKIP='_(paddle|pytorch|tensorflow|tensorflow_lite|jax|gguf)_frontend\.'

check() {
    python3 - "$1" <<'PY'
import ctypes, glob, os, sys
lib = sorted(glob.glob(os.path.join(sys.argv[1], "libopenvino_c.so.*")))
if not lib:
    sys.exit(f"error: no libopenvino_c.so.* in {sys.argv[1]}")
ov = ctypes.CDLL(lib[-1])
class Version(ctypes.Structure):
    _fields_ = [("build", ctypes.c_char_p), ("description", ctypes.c_char_p)]
class Devices(ctypes.Structure):
    _fields_ = [("devices", ctypes.POINTER(ctypes.c_char_p)), ("size", ctypes.c_size_t)]
v = Version()
core = ctypes.c_void_p()
devices = Devices()
if ov.ov_get_openvino_version(ctypes.byref(v)) != 0 or ov.ov_core_create(ctypes.byref(core)) != 0:
    sys.exit(f"error: {lib[-1]} does not start")
if ov.ov_core_get_available_devices(core, ctypes.byref(devices)) != 0:
    sys.exit("error: OpenVINO lists no devices")
names = [devices.devices[i].decode() for i in range(devices.size)]
if "CPU" not in names:
    sys.exit(f"error: OpenVINO's CPU plugin did not load (devices: {names})")
print(f"OpenVINO {v.build.decode().split('-')[0]} at {lib[-1]}; devices: {' '.join(names)}")
PY
}

if [ "$(cat "$DIR/VERSION" 2>/dev/null)" = "$VERSION" ] && check "$DIR" >/dev/null 2>&1; then
    echo "OpenVINO $VERSION already installed: $DIR"
    exit 0
fi

command -v python3 >/dev/null || { echo "error: python3 is needed to download the wheel" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { echo "error: pip is needed (apt-get install python3-pip)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "Downloading openvino $VERSION from PyPI..."
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "openvino==$VERSION"
wheel="$(ls "$tmp"/openvino-*.whl)"
python3 - "$wheel" "$tmp/libs" "$SKIP" <<'PY'
import os, re, sys, zipfile
wheel, out, skip = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("openvino/libs/") and not n.endswith("/")]
    if not any(os.path.basename(n).startswith("libopenvino_c.so") for n in names):
        sys.exit("error: no libopenvino_c.so in " + wheel)
    for n in names:
        if skip.search(os.path.basename(n)):
            continue
        with z.open(n) as src, open(os.path.join(out, os.path.basename(n)), "wb") as dst:
            dst.write(src.read())
PY
rm -rf "$DIR.partial"
mkdir -p "$(dirname "$DIR")"
mv "$tmp/libs" "$DIR.partial"
chmod -R a+rX "$DIR.partial"
check "$DIR.partial" >/dev/null || { rm -rf "$DIR.partial"; exit 1; }
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
echo "$VERSION" >"$DIR/VERSION"
check "$DIR"
