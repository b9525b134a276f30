#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Line crossings and crowding, as they happen: from rsanalytics' bus messages and from the
metadata of every frame.

The Ferrostream counterpart of DeepStream's deepstream-nvdsanalytics-test:

    filesrc ! decodebin ! videoconvert ! rstrtinfer ! rstracker ! rsanalytics
        ! [rsmetaexport] ! rsosd ! sink

rsanalytics (configured in nvdsanalytics' format, default pipelines/analytics_vtest.txt) posts
an element message for every line crossing (`rsanalytics-line-crossing`) and every change of an
overcrowding region (`rsanalytics-overcrowding`). The bus watch prints them:

    bus crossing source=0 frame=6 line=Path direction=forward object_id=2 class_id=0 forward_total=1 backward_total=0
    bus crowding source=0 frame=18 region=Crowd crowded=true count=4 threshold=4

and a buffer probe on rsosd's sink pad reads the same results from the metadata
(obj.analytics["crossed"], frame.analytics["overcrowding"], frame.analytics["lines"]):

    meta crossing source=0 frame=6 line=Path direction=forward object_id=2
    meta crowding source=0 frame=18 region=Crowd crowded=true count=4 threshold=4

(`meta crowding` when a region's state differs from the previous frame's; regions start
clear). At the end: `total source=0 line=Path forward=1 backward=0` for every line, then
`done frames=N crossings=K crowding_changes=M`. It exits 0 at end of stream, 1 on a pipeline
error, 2 when --timeout runs out, 3 when the probe fails.

    GST_PLUGIN_PATH=target/debug python3 examples/python/analytics_events.py --frames 30
"""

import argparse
import os
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


def fmt_bool(value):
    return "true" if value else "false"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--frames", type=int, default=0, help="stop after N frames (0: the whole file)")
    parser.add_argument("--config", default=str(PIPELINES / "coco_ssd.txt"), help="rstrtinfer configuration")
    parser.add_argument("--tracker-config", default=str(PIPELINES / "tracker.toml"), help="rstracker configuration")
    parser.add_argument("--analytics-config", default=str(PIPELINES / "analytics_vtest.txt"),
                        help="rsanalytics rules (nvdsanalytics format)")
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
        f"! rstrtinfer config-file-path={quote(args.config)} "
        f"! rstracker config-file-path={quote(args.tracker_config)} "
        f"! rsanalytics name=analytics config-file-path={quote(args.analytics_config)} {export}"
        f"! rsosd name=osd ! {sink}"
    )
    try:
        pipeline = Gst.parse_launch(description)
    except GLib.Error as e:
        fail(f"cannot build the pipeline: {e.message}")
    guard_frame_limit(pipeline, args.frames)
    app = App(pipeline, args.timeout)
    totals = {"frames": 0, "crossings": 0, "crowding_changes": 0}
    crowded = {}  # (source, region) -> state in the previous frame
    lines = {}  # (source, line) -> (forward_total, backward_total)

    # Bus messages: posted by rsanalytics while it works on the frame, delivered here in the
    # main loop.
    plain_on_message = app.on_message

    def on_message(bus, message):
        s = message.get_structure() if message.type == Gst.MessageType.ELEMENT else None
        if s is not None and s.get_name() == "rsanalytics-line-crossing":
            emit(f"bus crossing source={s.get_value('source-id')} frame={s.get_value('frame-num')} "
                 f"line={s.get_value('line')} direction={s.get_value('direction')} "
                 f"object_id={s.get_value('object-id')} class_id={s.get_value('class-id')} "
                 f"forward_total={s.get_value('forward-total')} backward_total={s.get_value('backward-total')}")
        elif s is not None and s.get_name() == "rsanalytics-overcrowding":
            emit(f"bus crowding source={s.get_value('source-id')} frame={s.get_value('frame-num')} "
                 f"region={s.get_value('region')} crowded={fmt_bool(s.get_value('crowded'))} "
                 f"count={s.get_value('count')} threshold={s.get_value('threshold')}")
        return plain_on_message(bus, message)

    app.on_message = on_message

    @app.probe
    def osd_sink_probe(_pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        if batch is None:
            return Gst.PadProbeReturn.OK
        for frame in batch.frames:
            totals["frames"] += 1
            src, num = frame.source_id, frame.frame_num
            for obj in frame.objects:
                for crossing in (obj.analytics or {}).get("crossed", []):
                    totals["crossings"] += 1
                    emit(f"meta crossing source={src} frame={num} line={crossing['line']} "
                         f"direction={crossing['direction']} object_id={obj.object_id}")
            analytics = frame.analytics or {}
            for region, state in sorted(analytics.get("overcrowding", {}).items()):
                if state["crowded"] != crowded.get((src, region), False):
                    totals["crowding_changes"] += 1
                    emit(f"meta crowding source={src} frame={num} region={region} "
                         f"crowded={fmt_bool(state['crowded'])} count={state['count']} "
                         f"threshold={state['threshold']}")
                crowded[(src, region)] = state["crowded"]
            for line, counts in analytics.get("lines", {}).items():
                lines[(src, line)] = (counts["forward_total"], counts["backward_total"])
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("osd").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, osd_sink_probe)
    code = app.run()
    if code == 0:
        for (src, line), (forward, backward) in sorted(lines.items()):
            emit(f"total source={src} line={line} forward={forward} backward={backward}")
        emit(f"done frames={totals['frames']} crossings={totals['crossings']} "
             f"crowding_changes={totals['crowding_changes']}")
    return code


if __name__ == "__main__":
    sys.exit(main())
