# SPDX-License-Identifier: MIT OR Apache-2.0
# Sourced by the demo scripts beside it (detect-vtest.sh, detect-dla-gpu.sh, pose-vtest.sh): the
# options and checks they share. Not meant to be run on its own.

cache="${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}"

# demo_options HELP_END ARGS...: --input, --output and --config into `input`, `output` and
# `config` (the caller sets its defaults first); --help prints lines 2 to HELP_END of the caller.
demo_options() {
    local help_end=$1
    shift
    while [ $# -gt 0 ]; do
        case "$1" in
            --input) input="$2"; shift 2 ;;
            --output) output="$2"; shift 2 ;;
            --config) config="$2"; shift 2 ;;
            -h|--help) sed -n "2,${help_end}p" "$0"; exit 0 ;;
            *) echo "unknown option $1" >&2; exit 2 ;;
        esac
    done
}

# demo_input: without --input, vtest.avi from $FERROSTREAM_MEDIA_DIR or the cache; fails when no
# video is there.
demo_input() {
    if [ -z "$input" ]; then
        for dir in ${FERROSTREAM_MEDIA_DIR:-} "$cache/media"; do
            [ -f "$dir/vtest.avi" ] && input="$dir/vtest.avi" && break
        done
    fi
    [ -n "$input" ] && [ -f "$input" ] || {
        echo "error: input video not found (run scripts/fetch-models.sh or pass --input)" >&2
        exit 1
    }
}

# demo_require ELEMENT: fails unless GStreamer finds the ferrostream element ELEMENT.
demo_require() {
    gst-inspect-1.0 "$1" >/dev/null 2>&1 || {
        echo "error: the ferrostream plugin is not installed (meson install, or set GST_PLUGIN_PATH)" >&2
        exit 1
    }
}
