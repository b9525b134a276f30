#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The whole test suite on a fresh Debian/Ubuntu machine: installs what is needed, then checks
# formatting and lints and runs every test (unit, element and end-to-end, on real models).
#
# `scripts/test.sh --under-load [N]` runs the tests beside N busy processes (default 3, on top of
# the machine's own work), as a loaded CI machine would: waits that depend on timing show up.
set -euo pipefail
load=0
if [[ "${1:-}" == "--under-load" ]]; then
    load="${2:-3}"
    [[ "$load" =~ ^[0-9]+$ ]] || { echo "usage: $0 [--under-load [N]]" >&2; exit 2; }
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
scripts/setup.sh
. scripts/env.sh
export G_DEBUG=fatal-warnings
# A fresh checkout gains nothing from incremental compilation, and its caches take gigabytes.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
target="${CARGO_TARGET_DIR:-target}"
[[ "$target" == /* ]] || target="$repo/$target"
mkdir -p "$target"
# The builds below take about 8 GB in the target folder; say so before a full disk stops them.
free_kb=$(df -Pk "$target" | awk 'NR == 2 {print $4}')
echo "== disk: $((free_kb / 1024 / 1024)) GB free for $target"
if (( free_kb < 10 * 1024 * 1024 )); then
    echo "warning: less than 10 GB free beside $target; the builds may stop with 'No space left on device'" >&2
fi
echo "== licence lines"
# Every source file names the licence in its first lines (after a shebang).
missing=$(find . \( -path ./target -o -path ./.git -o -name node_modules -o -path ./build \) -prune -o \
    -type f \( -name '*.rs' -o -name '*.py' -o -name '*.pyi' -o -name '*.sh' -o -name '*.c' \
    -o -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name meson.build \) -print \
    | while read -r f; do head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT OR Apache-2.0' || echo "$f"; done)
if [[ -n "$missing" ]]; then
    echo "source files without an SPDX-License-Identifier line:" >&2
    echo "$missing" >&2
    exit 1
fi
echo "== import circles"
python3 scripts/check-import-cycles.py
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The TensorRT backend cannot run here (the SDK is not installable): its C++ shim is compiled
# against Ferrostream's declarations of the TensorRT API, linted, and unit-tested (layouts,
# engine cache, build options, the "TensorRT not installed" path).
echo "== TensorRT backend: compile check"
export FERROSTREAM_TENSORRT_COMPILE_CHECK=1
cargo clippy -p ferrostream-inference -p gst-trtinfer -p gst-dlainfer \
    --features ferrostream-inference/tensorrt,gst-trtinfer/tensorrt,gst-dlainfer/tensorrt \
    --all-targets --locked -- -D warnings
# The inference crate is usable without GStreamer: with no features it must not depend on it
# (nor build anything that needs it), and it builds, lints and tests alone.
echo "== inference crate without GStreamer"
tree=$(cargo tree -p ferrostream-inference --no-default-features -e normal,build --locked)
if grep -Eq 'gstreamer|glib' <<<"$tree"; then
    echo "ferrostream-inference --no-default-features depends on GStreamer or GLib:" >&2
    echo "$tree" >&2
    exit 1
fi
cargo clippy -p ferrostream-inference --no-default-features --all-targets --locked -- -D warnings
if (( load > 0 )); then
    echo "== running the tests beside $load busy processes"
    busy=()
    for _ in $(seq "$load"); do
        (while :; do :; done) &
        busy+=("$!")
    done
    trap 'kill "${busy[@]}" 2>/dev/null || true' EXIT
fi
echo "== cargo test"
# A test binary that hangs is killed after 15 minutes (the slowest takes about one), so a
# deadlock fails the run with the name of the test still running instead of stalling it.
host="$(rustc -vV | sed -n 's/^host: //p')"
runner_var="CARGO_TARGET_$(echo "$host" | tr 'a-z-' 'A-Z_')_RUNNER"
export "$runner_var"="timeout --kill-after=30 900"
log="$target/test-output.txt"
{
    # The Python extension module is built and tested by pytest below (it has no Rust tests,
    # and its library must not land in target/debug, where GStreamer looks for plugins).
    cargo test --workspace --exclude ferrostream-python --locked --no-fail-fast 2>&1
    cargo test -p ferrostream-inference --features tensorrt --lib --locked --no-fail-fast 2>&1
    cargo test -p ferrostream-inference --no-default-features --locked --no-fail-fast 2>&1
} | tee "$log"
# The Python package (built from this tree) and the C example, against the plugin built above.
echo "== Python package and C example (pytest)"
cargo build -p gst-ferrostream --locked
scripts/install-python.sh
venv="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}/python"
pylog="$target/pytest-output.txt"
# Each test has watchdogs of its own; this one stops the whole run if one of them cannot.
GST_PLUGIN_PATH="$target/debug" timeout --kill-after=30 1800 \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tee "$pylog"
pypassed=$(grep -Eo '[0-9]+ passed' "$pylog" | tail -1 | grep -Eo '[0-9]+' || echo 0)
passed=$(grep -Eo '^test result: .* ([0-9]+) passed' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result:' "$log" | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
echo "$passed Rust tests passed, $failed failed; $pypassed Python tests passed"
echo "== disk: the target folder takes $(du -sh "$target" | cut -f1)"
