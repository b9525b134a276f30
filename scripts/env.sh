# SPDX-License-Identifier: MIT OR Apache-2.0
# Sourced by the other scripts: points Ferrostream at pre-fetched models and footage when a
# directory with them sits beside the checkout (../shared/models, ../shared/media), and puts cargo
# on PATH. Without them, the cache that scripts/fetch-models.sh fills is used.
_fs_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -z "${FERROSTREAM_MODEL_DIR:-}" ] && [ -f "$_fs_repo/../shared/models/centerface.onnx" ]; then
    export FERROSTREAM_MODEL_DIR="$(cd "$_fs_repo/../shared/models" && pwd)"
fi
if [ -z "${FERROSTREAM_MEDIA_DIR:-}" ] && [ -f "$_fs_repo/../shared/media/vtest.avi" ]; then
    export FERROSTREAM_MEDIA_DIR="$(cd "$_fs_repo/../shared/media" && pwd)"
fi
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    . "$HOME/.cargo/env"
fi
# NVRTC installed by scripts/install-nvrtc.sh (for compiling the CUDA kernels where no CUDA
# toolkit is installed): appended, so a toolkit's own NVRTC on LD_LIBRARY_PATH comes first.
for _fs_dir in /usr/local/lib/ferrostream-nvrtc "${HOME:-/nonexistent}/.local/lib/ferrostream-nvrtc"; do
    if [ -d "$_fs_dir" ]; then
        case ":${LD_LIBRARY_PATH:-}:" in
            *":$_fs_dir:"*) ;;
            *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$_fs_dir" ;;
        esac
    fi
done
unset _fs_repo _fs_dir
