# SPDX-License-Identifier: MIT OR Apache-2.0
"""What the sample applications of examples/python share (as DeepStream's apps/common does for
its Python samples): the options every sample has, the start-up checks, pipeline-text helpers,
the frame limit behind --frames, the main loop with its exit codes, and label formatting.

It is not a program; a sample imports it from its own directory:

    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    import common

The exit codes of every sample, set by App:

    0  end of stream (also after Ctrl-C, which ends the stream)
    1  a pipeline error (printed as `error: ...` on stderr), or a pipeline that does not start
    2  no end of stream within --timeout seconds
    3  an exception in a pad probe
    4  the pipeline did not stop within SHUTDOWN_WATCHDOG_S (120 s) (a watchdog ends the
       process; after a failure it exits with that failure's code)

Failures at start (no plugin, no package, no input, a pipeline that does not parse) print
`error: ...` and exit 1; bad options exit 2 (argparse).
"""

import argparse
import json
import os
import re
import signal
import sys
import threading
import traceback
from pathlib import Path

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PIPELINES = REPO / "pipelines"


# --- options and start-up -------------------------------------------------------------------



# The longest stopping a pipeline may take, however loaded the machine, before the sample gives
# up on it (exit 4).
SHUTDOWN_WATCHDOG_S = 120

def argument_parser(doc, *, tracker=False, output=True,
                    frames_help="stop after N frames (0: the whole file)",
                    json_help="also write rsmetaexport's JSON lines (one per frame) to this file",
                    output_help="write the drawn video to this MP4 file (default: no video output)"):
    """An argparse parser described by the first paragraph of `doc` (the sample's docstring),
    with the options the samples share: --frames, --config (rstrtinfer), --tracker-config
    (rstracker, with `tracker`), --json (rsmetaexport) and --output (with `output`); the *_help
    texts replace the usual ones where a sample says more. The sample adds its own options and
    positional arguments, then calls start (or parse_args and init)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=0, help=frames_help)
    parser.add_argument("--config", default=str(PIPELINES / "coco_ssd.txt"), help="rstrtinfer configuration")
    if tracker:
        parser.add_argument("--tracker-config", default=str(PIPELINES / "tracker.toml"),
                            help="rstracker configuration")
    parser.add_argument("--json", help=json_help)
    if output:
        parser.add_argument("--output", help=output_help)
    return parser


def start(parser):
    """parse_args, then init: returns (args, the ferrostream module)."""
    return parse_args(parser), init()


def parse_args(parser):
    """Adds --timeout (last in --help) and parses the command line."""
    parser.add_argument("--timeout", type=int, default=600, help="give up after this many seconds")
    return parser.parse_args()


def init():
    """Initialises GStreamer, checks that it has the Ferrostream plugin and returns the
    ferrostream package (imported after Gst.init). The package is checked against the plugin
    GStreamer loads: a package and plugin of different builds fail here, not in the first
    probe."""
    Gst.init(None)
    if Gst.ElementFactory.find("rstrtinfer") is None:
        fail("the ferrostream GStreamer plugin is not installed: install it (meson install) or put "
             "the directory of libgstferrostream.so on GST_PLUGIN_PATH")
    try:
        import ferrostream
    except ImportError as e:
        fail(f"the ferrostream Python package is not installed (scripts/install-python.sh): {e}")
    try:
        ferrostream.plugin_path()
    except ferrostream.Error as e:
        fail(f"ferrostream: {e}")
    return ferrostream


def fail(message, code=1):
    """Prints `error: message` on stderr and exits."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def find_media(name):
    """A footage file from $FERROSTREAM_MEDIA_DIR, the shared checkout beside this one, or the
    cache scripts/fetch-models.sh fills."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ferrostream"
    dirs = [os.environ.get("FERROSTREAM_MEDIA_DIR"), REPO.parent / "shared" / "media", cache / "media"]
    for d in dirs:
        if d and (Path(d) / name).is_file():
            return str(Path(d) / name)
    return str(Path(dirs[0] or cache / "media") / name)


# --- pipeline text --------------------------------------------------------------------------


def quote(path):
    """A value for gst_parse_launch, quoted."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def file_source(path, frames, caps=None):
    """Pipeline text that decodes a video file to raw video (`filesrc ! decodebin ! videoconvert`,
    then `caps` when given) and ends after `frames` frames (frame_limit). Without `path`, vtest.avi
    (find_media). Fails when the file does not exist."""
    path = path or find_media("vtest.avi")
    if not os.path.isfile(path):
        fail(f"input video {path} not found (set FERROSTREAM_MEDIA_DIR or pass a file)")
    caps = f"! {caps} " if caps else ""
    return f"filesrc location={quote(path)} ! decodebin ! videoconvert {caps}{frame_limit(frames)}"


def frame_limit(frames, name="limit"):
    """Pipeline text that ends a source after `frames` frames (nothing for 0: the whole stream).
    identity returns EOS on the buffer after the last one, which stops the source; parse_launch
    drops what still follows it."""
    if frames <= 0:
        return ""
    return f"! queue ! identity name={name} eos-after={frames + 1} "


def meta_export(path):
    """Pipeline text for rsmetaexport writing JSON lines to `path` (nothing without a path)."""
    return f"! rsmetaexport location={quote(path)} " if path else ""


def video_sink(path):
    """A sink: an H.264 MP4 file at `path` (x264enc when installed, else openh264enc; not
    avenc_mpeg4, whose output times are invalid in Debian 12's gst-libav), or fakesink without
    one."""
    if path:
        if Gst.ElementFactory.find("x264enc"):
            encoder = "x264enc speed-preset=ultrafast"
        else:
            encoder = "openh264enc bitrate=4000000"
        return f"videoconvert ! {encoder} ! h264parse ! mp4mux ! filesink location={quote(path)}"
    return "fakesink sync=false"


def parse_launch(description):
    """Gst.parse_launch, failing with a message when the text does not parse. The frame limits
    (frame_limit: every identity with eos-after) are made exact: each lets eos-after - 1 frames
    through."""
    try:
        pipeline = Gst.parse_launch(description)
    except GLib.Error as e:
        fail(f"cannot build the pipeline: {e.message}")
    limits = []
    pipeline.iterate_all_by_element_factory_name("identity").foreach(limits.append)
    for element in limits:
        eos_after = element.get_property("eos-after")
        if eos_after > 0:
            # GStreamer 1.22's identity returns EOS at eos-after only once: frames still in flight pass after it.
            _drop_after(element.get_static_pad("src"), eos_after - 1)
    return pipeline


def _drop_after(pad, frames):
    """Lets `frames` buffers through `pad` and drops the ones after them."""
    seen = [0]

    def probe(_pad, _info):
        seen[0] += 1
        return Gst.PadProbeReturn.OK if seen[0] <= frames else Gst.PadProbeReturn.DROP

    pad.add_probe(Gst.PadProbeType.BUFFER, probe)


# --- running --------------------------------------------------------------------------------


_emit_lock = threading.Lock()


def emit(line):
    """Prints one whole line (probes run in streaming threads, the bus watch in the main one)."""
    with _emit_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class App:
    """Runs a pipeline until EOS, an error, Ctrl-C or a deadline; remembers the exit code (see
    the module's docstring). Ctrl-C sends EOS, so the run ends as at the end of the file."""

    def __init__(self, pipeline, timeout):
        self.pipeline = pipeline
        self.timeout = timeout
        self.loop = GLib.MainLoop()
        self.code = None

    def stop(self, code):
        """Ends the main loop with exit code `code` (the first code set wins)."""
        if self.code is None:
            self.code = code
        GLib.idle_add(self.loop.quit)

    def probe(self, func):
        """Wraps a pad probe, `pad.add_probe(Gst.PadProbeType.BUFFER, app.probe(func))`: an
        exception in it stops the program (exit 3) instead of being printed and forgotten by
        PyGObject."""

        def wrapper(pad, info):
            try:
                return func(pad, info)
            except Exception:  # noqa: BLE001 - reported and ends the run
                traceback.print_exc()
                print("error: the pad probe failed", file=sys.stderr, flush=True)
                self.stop(3)
                return Gst.PadProbeReturn.OK

        return wrapper

    def on_message(self, _bus, message):
        """The bus watch: EOS ends the run (0), an error too (1); warnings are printed."""
        t = message.type
        if t == Gst.MessageType.EOS:
            self.stop(0)
        elif t == Gst.MessageType.ERROR:
            err, debug = message.parse_error()
            src = message.src.get_path_string() if message.src else "pipeline"
            print(f"error: {src}: {err.message}\n{debug or ''}", file=sys.stderr, flush=True)
            self.stop(1)
        elif t == Gst.MessageType.WARNING:
            err, _debug = message.parse_warning()
            print(f"warning: {message.src.get_name()}: {err.message}", file=sys.stderr, flush=True)
        return True

    def on_timeout(self):
        print(f"error: no end of stream after {self.timeout} s", file=sys.stderr, flush=True)
        self.stop(2)
        return False

    def on_interrupt(self):
        print("interrupted: ending the stream", file=sys.stderr, flush=True)
        self.pipeline.send_event(Gst.Event.new_eos())
        return True

    def run(self, at_end=None):
        """Plays the pipeline, runs the main loop, sets the pipeline to NULL; returns the exit
        code. After a clean end of stream (exit code 0) it calls `at_end` first: the sample
        prints its totals there. The bus has a signal watch while it runs: a sample may connect
        to its "message" signals."""
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message", self.on_message)
        GLib.timeout_add_seconds(self.timeout, self.on_timeout)
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, self.on_interrupt)
        if self.pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            message = bus.timed_pop_filtered(Gst.SECOND, Gst.MessageType.ERROR)
            if message is not None:
                self.on_message(bus, message)
            else:
                print("error: the pipeline did not start", file=sys.stderr, flush=True)
                self.code = 1
        if self.code is None:
            self.loop.run()
        # Never hang on the way out either.
        watchdog = threading.Timer(SHUTDOWN_WATCHDOG_S, lambda: os._exit(4))
        watchdog.daemon = True
        watchdog.start()
        self.pipeline.set_state(Gst.State.NULL)
        bus.remove_signal_watch()
        watchdog.cancel()
        if self.code == 0 and at_end is not None:
            at_end()
        return self.code


# --- output ---------------------------------------------------------------------------------


def label_token(label):
    """A label as printed: bare, or JSON-quoted when it has spaces, '=', quotes or is empty
    ("traffic light" is a COCO label)."""
    return label if re.fullmatch(r'[^\s="\\|]+', label) else json.dumps(label)


def counts_text(counts):
    """`car=1 person=3`: labels sorted by name."""
    return " ".join(f"{label_token(label)}={n}" for label, n in sorted(counts.items()))
