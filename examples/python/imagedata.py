#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Save a JPEG crop of every new tracked object, read from the frame's pixels in a pad probe.

The Ferrostream counterpart of DeepStream's deepstream-imagedata-multistream:

    filesrc ! decodebin ! videoconvert ! video/x-raw,format=RGB ! rstrtinfer ! rstracker
        ! [rsmetaexport] ! fakesink

A buffer probe on rstracker's src pad maps the frame with ferrostream.frame_array (a NumPy
array over the buffer, no copy), and the first time a tracked object of the chosen label shows
up (its object_id was never seen before) cuts its box out and encodes it as JPEG with GStreamer
(appsrc ! videoconvert ! jpegenc ! appsink: no imaging library needed). For each one it prints

    saved crops/person_7_frame12.jpg object_id=7 frame=12 width=33 height=90

(`skipped object_id=... frame=... reason=...` for a box too small to crop). At the end it prints
`done frames=N saved=M`. It exits 0 at end of stream, 1 on a pipeline error, 2 when --timeout
runs out, 3 when a crop cannot be encoded or written.

    GST_PLUGIN_PATH=target/debug python3 examples/python/imagedata.py --frames 30 --output-dir crops
"""

import argparse
import os
import re
import signal
import sys
import threading
import traceback
from pathlib import Path

import gi
import numpy as np

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


def encode_jpeg(rgb, quality=90):
    """JPEG bytes of an HxWx3 RGB array, encoded by a small GStreamer pipeline."""
    h, w = rgb.shape[:2]
    # GStreamer's RGB rows are padded to a multiple of 4 bytes.
    stride = (w * 3 + 3) & ~3
    rows = np.zeros((h, stride), np.uint8)
    rows[:, : w * 3] = rgb.reshape(h, w * 3)
    pipeline = Gst.parse_launch(
        f"appsrc name=src format=time ! videoconvert ! jpegenc quality={quality} ! appsink name=sink sync=false")
    src = pipeline.get_by_name("src")
    src.set_property("caps", Gst.Caps.from_string(f"video/x-raw,format=RGB,width={w},height={h},framerate=0/1"))
    sink = pipeline.get_by_name("sink")
    try:
        pipeline.set_state(Gst.State.PLAYING)
        buffer = Gst.Buffer.new_wrapped(rows.tobytes())
        buffer.pts = 0
        src.emit("push-buffer", buffer)
        src.emit("end-of-stream")
        sample = sink.emit("try-pull-sample", 10 * Gst.SECOND)
        if sample is None:
            message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
            why = message.parse_error()[0].message if message else "no output within 10 s"
            raise RuntimeError(f"JPEG encoding failed: {why}")
        out = sample.get_buffer()
        ok, info = out.map(Gst.MapFlags.READ)
        if not ok:
            raise RuntimeError("cannot map the encoded JPEG")
        try:
            return bytes(info.data)
        finally:
            out.unmap(info)
    finally:
        pipeline.set_state(Gst.State.NULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--output-dir", default="crops", help="directory for the JPEG crops (created)")
    parser.add_argument("--label", default="person", help="label of the objects to save")
    parser.add_argument("--frames", type=int, default=0, help="stop after N frames (0: the whole file)")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality")
    parser.add_argument("--config", default=str(PIPELINES / "coco_ssd.txt"), help="rstrtinfer configuration")
    parser.add_argument("--tracker-config", default=str(PIPELINES / "tracker.toml"), help="rstracker configuration")
    parser.add_argument("--json", help="also write rsmetaexport's JSON lines (one per frame) to this file")
    parser.add_argument("--timeout", type=int, default=600, help="give up after this many seconds")
    args = parser.parse_args()

    Gst.init(None)
    require_plugin()
    ferrostream = load_ferrostream()

    source = args.input or find_media("vtest.avi")
    if not os.path.isfile(source):
        fail(f"input video {source} not found (set FERROSTREAM_MEDIA_DIR or pass a file)")
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    file_label = re.sub(r"[^A-Za-z0-9_.-]+", "_", args.label)

    export = f"! rsmetaexport location={quote(args.json)} " if args.json else ""
    description = (
        f"filesrc location={quote(source)} ! decodebin ! videoconvert ! video/x-raw,format=RGB "
        f"{frame_limit(args.frames)}"
        f"! rstrtinfer config-file-path={quote(args.config)} "
        f"! rstracker name=tracker config-file-path={quote(args.tracker_config)} "
        f"{export}! fakesink sync=false"
    )
    try:
        pipeline = Gst.parse_launch(description)
    except GLib.Error as e:
        fail(f"cannot build the pipeline: {e.message}")
    guard_frame_limit(pipeline, args.frames)
    app = App(pipeline, args.timeout)
    seen = set()
    totals = {"frames": 0, "saved": 0}

    @app.probe
    def tracker_src_probe(pad, info):
        buffer = info.get_buffer()
        batch = ferrostream.batch_meta(buffer)
        if batch is None:
            return Gst.PadProbeReturn.OK
        caps = pad.get_current_caps()
        for index, frame in enumerate(batch.frames):
            totals["frames"] += 1
            new = [o for o in frame.objects
                   if o.label == args.label and o.object_id is not None and o.object_id not in seen]
            if not new:
                continue
            pixels = ferrostream.frame_array(buffer, caps, index)  # HxWx3, read-only, no copy
            height, width = pixels.shape[:2]
            for obj in new:
                seen.add(obj.object_id)
                b = obj.bbox
                left, top = max(0, int(b.left)), max(0, int(b.top))
                right, bottom = min(width, int(round(b.right))), min(height, int(round(b.bottom)))
                if right - left < 2 or bottom - top < 2:
                    emit(f"skipped object_id={obj.object_id} frame={frame.frame_num} reason=box-outside-frame")
                    continue
                crop = np.ascontiguousarray(pixels[top:bottom, left:right])
                path = out_dir / f"{file_label}_{obj.object_id}_frame{frame.frame_num}.jpg"
                path.write_bytes(encode_jpeg(crop, args.quality))
                totals["saved"] += 1
                emit(f"saved {path} object_id={obj.object_id} frame={frame.frame_num} "
                     f"width={right - left} height={bottom - top}")
            del pixels  # unmaps the frame
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("tracker").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, tracker_src_probe)
    code = app.run()
    if code == 0:
        emit(f"done frames={totals['frames']} saved={totals['saved']}")
    return code


if __name__ == "__main__":
    sys.exit(main())
