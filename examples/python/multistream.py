#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Detect and track objects in several streams batched together, and count them per source.

The Ferrostream counterpart of DeepStream's deepstream-test3:

    rsurisrcbin uri=URI0 ! videoconvert ! queue ! mux.sink_0
    rsurisrcbin uri=URI1 ! videoconvert ! queue ! mux.sink_1    ...
    rsstreammux name=mux batch-size=N ! rstrtinfer batch-size=N ! rstracker ! [rsmetaexport]
        ! rstiler ! rsosd ! sink

A buffer probe on rstiler's sink pad (where the batch still holds one frame per source) prints
one line per frame of the batch:

    source 0 frame 5: car=1 person=2

(labels sorted by name, JSON-quoted when they have spaces: `"traffic light"=1`), and at the end one line per source, then the batches: `done source=0 frames=30 objects=120`,
`done batches=31`. URIs may be file paths, file://, rtsp:// or http(s):// URIs. It exits 0 at
end of stream (every source ended), 1 on a pipeline error, 2 when --timeout runs out.

    GST_PLUGIN_PATH=target/debug python3 examples/python/multistream.py --frames 30
"""

import argparse
import json
import math
import os
import re
import signal
import sys
import threading
import traceback
from collections import Counter, defaultdict
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


def to_uri(value):
    if "://" in value:
        return value
    if not os.path.isfile(value):
        fail(f"input {value} not found (set FERROSTREAM_MEDIA_DIR or pass URIs)")
    return Gst.filename_to_uri(os.path.abspath(value))


def label_token(label):
    """A label as printed: bare, or JSON-quoted when it has spaces, '=', quotes or is empty
    ("traffic light" is a COCO label)."""
    return label if re.fullmatch(r'[^\s="\\|]+', label) else json.dumps(label)


def counts_text(counts):
    """`car=1 person=3`: labels sorted by name."""
    return " ".join(f"{label_token(label)}={n}" for label, n in sorted(counts.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("uris", nargs="*",
                        help="sources: URIs or file paths (default: vtest.avi and carphone_pristine.mp4 "
                             "of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--frames", type=int, default=0, help="stop each source after N frames (0: all)")
    parser.add_argument("--config", default=str(PIPELINES / "coco_ssd.txt"), help="rstrtinfer configuration")
    parser.add_argument("--tracker-config", default=str(PIPELINES / "tracker.toml"), help="rstracker configuration")
    parser.add_argument("--json", help="also write rsmetaexport's JSON lines (one per frame) to this file")
    parser.add_argument("--output", help="write the tiled, drawn video to this MP4 file (default: none)")
    parser.add_argument("--tiler-size", default="1280x720", help="tiled output WIDTHxHEIGHT")
    parser.add_argument("--timeout", type=int, default=600, help="give up after this many seconds")
    args = parser.parse_args()

    Gst.init(None)
    require_plugin()
    ferrostream = load_ferrostream()

    uris = [to_uri(u) for u in (args.uris or [find_media("vtest.avi"), find_media("carphone_pristine.mp4")])]
    n = len(uris)
    columns = math.ceil(math.sqrt(n))
    rows = math.ceil(n / columns)
    try:
        width, height = (int(v) for v in args.tiler_size.lower().split("x"))
    except ValueError:
        parser.error(f"--tiler-size takes WIDTHxHEIGHT, got {args.tiler_size!r}")
    export = f"! rsmetaexport location={quote(args.json)} " if args.json else ""
    if args.output:
        sink = f"videoconvert ! avenc_mpeg4 bitrate=4000000 ! mp4mux ! filesink location={quote(args.output)}"
    else:
        sink = "fakesink sync=false"
    description = (
        f"rsstreammux name=mux batch-size={n} batched-push-timeout=200000 "
        f"! rstrtinfer config-file-path={quote(args.config)} batch-size={n} "
        f"! rstracker config-file-path={quote(args.tracker_config)} {export}"
        f"! rstiler name=tiler rows={rows} columns={columns} width={width} height={height} "
        f"! rsosd ! {sink} "
    )
    for i, uri in enumerate(uris):
        limit = frame_limit(args.frames, f"limit{i}") or "! queue "
        description += (f"rsurisrcbin uri={quote(uri)} ! videoconvert ! video/x-raw,format=I420 "
                        f"{limit}! mux.sink_{i} ")
    try:
        pipeline = Gst.parse_launch(description)
    except GLib.Error as e:
        fail(f"cannot build the pipeline: {e.message}")
    for i in range(n):
        guard_frame_limit(pipeline, args.frames, f"limit{i}")
    app = App(pipeline, args.timeout)
    frames = defaultdict(int)
    objects = defaultdict(int)
    batches = [0]

    @app.probe
    def tiler_sink_probe(_pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        if batch is None:
            return Gst.PadProbeReturn.OK
        batches[0] += 1
        for frame in batch.frames:
            counts = Counter(obj.label for obj in frame.objects)
            emit(f"source {frame.source_id} frame {frame.frame_num}: {counts_text(counts)}".rstrip())
            frames[frame.source_id] += 1
            objects[frame.source_id] += sum(counts.values())
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("tiler").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, tiler_sink_probe)
    for i, uri in enumerate(uris):
        emit(f"source {i} uri={uri}")
    code = app.run()
    if code == 0:
        for source in range(n):
            emit(f"done source={source} frames={frames[source]} objects={objects[source]}")
        emit(f"done batches={batches[0]}")
    return code


if __name__ == "__main__":
    sys.exit(main())
