#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Detect objects in a video file and count them per class in every frame.

The Ferrostream counterpart of DeepStream's deepstream-test1:

    filesrc ! decodebin ! videoconvert ! rstrtinfer ! [rsmetaexport] ! rsosd ! sink

A buffer probe on rsosd's sink pad reads the metadata with the ferrostream package and prints
one line per frame:

    frame 12: person=3 car=1

(labels sorted by name, JSON-quoted when they have spaces: `"traffic light"=1`; a frame
without objects prints `frame 12:`). At the end it prints
`done frames=N objects=M`. It exits 0 at end of stream, 1 on a pipeline error (printed as
`error: ...` on stderr) and 2 when --timeout runs out.

    GST_PLUGIN_PATH=target/debug python3 examples/python/detect_count.py --frames 30
"""

import argparse
import json
import os
import re
import signal
import sys
import threading
import traceback
from collections import Counter
from pathlib import Path

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PIPELINES = REPO / "pipelines"


def find_media(name):
    """A footage file from $FERROSTREAM_MEDIA_DIR, the shared checkout beside this one, or the
    cache scripts/fetch-models.sh fills."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ferrostream"
    dirs = [os.environ.get("FERROSTREAM_MEDIA_DIR"), REPO.parent / "shared" / "media", cache / "media"]
    for d in dirs:
        if d and (Path(d) / name).is_file():
            return str(Path(d) / name)
    return str(Path(dirs[0] or cache / "media") / name)


_emit_lock = threading.Lock()


def emit(line):
    """Prints one whole line (probes run in streaming threads, the bus watch in the main one)."""
    with _emit_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def fail(message, code=1):
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def require_plugin():
    """Fails with a clear message when GStreamer has no Ferrostream plugin."""
    if Gst.ElementFactory.find("rstrtinfer") is None:
        fail("the ferrostream GStreamer plugin is not installed: install it (meson install) or put "
             "the directory of libgstferrostream.so on GST_PLUGIN_PATH")


def load_ferrostream():
    """The ferrostream package (imported after Gst.init), checked against the plugin GStreamer
    loads: a package and plugin of different builds fail here, not in the first probe."""
    try:
        import ferrostream
    except ImportError as e:
        fail(f"the ferrostream Python package is not installed (scripts/install-python.sh): {e}")
    try:
        ferrostream.plugin_path()
    except ferrostream.Error as e:
        fail(f"ferrostream: {e}")
    return ferrostream


def quote(path):
    """A value for gst_parse_launch, quoted."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def frame_limit(frames, name="limit"):
    """Pipeline text that ends a source after `frames` frames (nothing for 0: the whole stream).
    identity returns EOS on the buffer after the last one, which stops the source."""
    if frames <= 0:
        return ""
    return f"! queue ! identity name={name} eos-after={frames + 1} "


def guard_frame_limit(pipeline, frames, name="limit"):
    """identity (GStreamer 1.22) returns EOS only once: a frame the decoder still had in flight
    can follow it. Drop those, so exactly `frames` frames go on."""
    element = pipeline.get_by_name(name)
    if element is None or frames <= 0:
        return
    seen = [0]

    def probe(_pad, _info):
        seen[0] += 1
        return Gst.PadProbeReturn.OK if seen[0] <= frames else Gst.PadProbeReturn.DROP

    element.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe)


class App:
    """Runs a pipeline until EOS, an error, Ctrl-C or a deadline; remembers the exit code."""

    def __init__(self, pipeline, timeout):
        self.pipeline = pipeline
        self.timeout = timeout
        self.loop = GLib.MainLoop()
        self.code = None

    def stop(self, code):
        if self.code is None:
            self.code = code
        GLib.idle_add(self.loop.quit)

    def probe(self, func):
        """Wraps a pad probe: an exception in it stops the program (exit 3) instead of being
        printed and forgotten by PyGObject."""

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

    def run(self):
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
        watchdog = threading.Timer(30, lambda: os._exit(self.code or 4))
        watchdog.daemon = True
        watchdog.start()
        self.pipeline.set_state(Gst.State.NULL)
        bus.remove_signal_watch()
        watchdog.cancel()
        return self.code


def label_token(label):
    """A label as printed: bare, or JSON-quoted when it has spaces, '=', quotes or is empty
    ("traffic light" is a COCO label)."""
    return label if re.fullmatch(r'[^\s="\\|]+', label) else json.dumps(label)


def counts_text(counts):
    """`car=1 person=3`: labels sorted by name."""
    return " ".join(f"{label_token(label)}={n}" for label, n in sorted(counts.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--frames", type=int, default=0, help="stop after N frames (0: the whole file)")
    parser.add_argument("--config", default=str(PIPELINES / "coco_ssd.txt"), help="rstrtinfer configuration")
    parser.add_argument("--json", help="also write rsmetaexport's JSON lines (one per frame) to this file")
    parser.add_argument("--output", help="write the drawn video to this MP4 file (default: no video output)")
    parser.add_argument("--timeout", type=int, default=600, help="give up after this many seconds")
    args = parser.parse_args()

    Gst.init(None)
    require_plugin()
    ferrostream = load_ferrostream()

    source = args.input or find_media("vtest.avi")
    if not os.path.isfile(source):
        fail(f"input video {source} not found (set FERROSTREAM_MEDIA_DIR or pass a file)")

    export = f"! rsmetaexport location={quote(args.json)} " if args.json else ""
    if args.output:
        sink = f"videoconvert ! avenc_mpeg4 bitrate=4000000 ! mp4mux ! filesink location={quote(args.output)}"
    else:
        sink = "fakesink sync=false"
    description = (
        f"filesrc location={quote(source)} ! decodebin ! videoconvert {frame_limit(args.frames)}"
        f"! rstrtinfer config-file-path={quote(args.config)} {export}"
        f"! rsosd name=osd ! {sink}"
    )
    try:
        pipeline = Gst.parse_launch(description)
    except GLib.Error as e:
        fail(f"cannot build the pipeline: {e.message}")
    guard_frame_limit(pipeline, args.frames)
    app = App(pipeline, args.timeout)
    totals = {"frames": 0, "objects": 0}

    @app.probe
    def osd_sink_probe(_pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        if batch is None:
            return Gst.PadProbeReturn.OK
        for frame in batch.frames:
            counts = Counter(obj.label for obj in frame.objects)
            emit(f"frame {frame.frame_num}: {counts_text(counts)}".rstrip())
            totals["frames"] += 1
            totals["objects"] += sum(counts.values())
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("osd").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, osd_sink_probe)
    code = app.run()
    if code == 0:
        emit(f"done frames={totals['frames']} objects={totals['objects']}")
    return code


if __name__ == "__main__":
    sys.exit(main())
