#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Detect objects in a video file and count them per class in every frame.

The Ferrostream counterpart of DeepStream's deepstream-test1:

    filesrc ! decodebin ! videoconvert ! rstrtinfer ! [rsmetaexport] ! rsosd ! sink

A buffer probe on rsosd's sink pad reads the metadata with the ferrostream package and prints
one line per frame:

    frame 12: car=1 person=3

(labels sorted by name, JSON-quoted when they have spaces: `"traffic light"=1`; a frame
without objects prints `frame 12:`). At the end it prints
`done frames=N objects=M`. It exits 0 at end of stream, 1 on a pipeline error (printed as
`error: ...` on stderr) and 2 when --timeout runs out.

    GST_PLUGIN_PATH=target/debug python3 examples/python/detect_count.py --frames 30
"""

import os
import sys
from collections import Counter

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import common  # noqa: E402  (examples/python/common.py: options, checks, main loop)


def main():
    parser = common.argument_parser(__doc__)
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    args, ferrostream = common.start(parser)

    pipeline = common.parse_launch(
        f"{common.file_source(args.input, args.frames)}"
        f"! rstrtinfer config-file-path={common.quote(args.config)} {common.meta_export(args.json)}"
        f"! rsosd name=osd ! {common.video_sink(args.output)}"
    )
    app = common.App(pipeline, args.timeout)
    totals = {"frames": 0, "objects": 0}

    def osd_sink_probe(_pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        if batch is None:
            return Gst.PadProbeReturn.OK
        for frame in batch.frames:
            counts = Counter(obj.label for obj in frame.objects)
            common.emit(f"frame {frame.frame_num}: {common.counts_text(counts)}".rstrip())
            totals["frames"] += 1
            totals["objects"] += sum(counts.values())
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("osd").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, app.probe(osd_sink_probe))
    return app.run(at_end=lambda: common.emit(f"done frames={totals['frames']} objects={totals['objects']}"))


if __name__ == "__main__":
    sys.exit(main())
