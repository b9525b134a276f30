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

import os
import re
import sys
from pathlib import Path

import gi
import numpy as np

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import common  # noqa: E402  (examples/python/common.py: options, checks, main loop)



# The longest one crop's JPEG encoding may take on a loaded machine.
ENCODE_TIMEOUT_S = 120

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
        sample = sink.emit("try-pull-sample", ENCODE_TIMEOUT_S * Gst.SECOND)
        if sample is None:
            message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
            why = message.parse_error()[0].message if message else f"no output within {ENCODE_TIMEOUT_S} s"
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
    parser = common.argument_parser(__doc__, tracker=True, output=False)
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--output-dir", default="crops", help="directory for the JPEG crops (created)")
    parser.add_argument("--label", default="person", help="label of the objects to save")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality")
    args, ferrostream = common.start(parser)

    source = common.file_source(args.input, args.frames, caps="video/x-raw,format=RGB")
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    file_label = re.sub(r"[^A-Za-z0-9_.-]+", "_", args.label)

    pipeline = common.parse_launch(
        f"{source}! rstrtinfer config-file-path={common.quote(args.config)} "
        f"! rstracker name=tracker config-file-path={common.quote(args.tracker_config)} "
        f"{common.meta_export(args.json)}! fakesink sync=false"
    )
    app = common.App(pipeline, args.timeout)
    seen = set()
    totals = {"frames": 0, "saved": 0}

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
                    common.emit(f"skipped object_id={obj.object_id} frame={frame.frame_num} "
                                "reason=box-outside-frame")
                    continue
                crop = np.ascontiguousarray(pixels[top:bottom, left:right])
                path = out_dir / f"{file_label}_{obj.object_id}_frame{frame.frame_num}.jpg"
                path.write_bytes(encode_jpeg(crop, args.quality))
                totals["saved"] += 1
                common.emit(f"saved {path} object_id={obj.object_id} frame={frame.frame_num} "
                            f"width={right - left} height={bottom - top}")
            del pixels  # unmaps the frame
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("tracker").get_static_pad("src").add_probe(
        Gst.PadProbeType.BUFFER, app.probe(tracker_src_probe))
    return app.run(at_end=lambda: common.emit(f"done frames={totals['frames']} saved={totals['saved']}"))


if __name__ == "__main__":
    sys.exit(main())
