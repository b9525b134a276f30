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

(labels sorted by name, JSON-quoted when they have spaces: `"traffic light"=1`), after a line
`source 0 uri=...` per source at the start. At the end it prints one line per source, then the
batches: `done source=0 frames=30 objects=120`, `done batches=31`. URIs may be file paths,
file://, rtsp:// or http(s):// URIs. It exits 0 at end of stream (every source ended), 1 on a
pipeline error, 2 when --timeout runs out.

    GST_PLUGIN_PATH=target/debug python3 examples/python/multistream.py --frames 30
"""

import math
import os
import sys
from collections import Counter, defaultdict

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import common  # noqa: E402  (examples/python/common.py: options, checks, main loop)


def to_uri(value):
    """A URI as given, or the file:// URI of a file path."""
    if "://" in value:
        return value
    if not os.path.isfile(value):
        common.fail(f"input {value} not found (set FERROSTREAM_MEDIA_DIR or pass URIs)")
    return Gst.filename_to_uri(os.path.abspath(value))


def main():
    parser = common.argument_parser(
        __doc__, tracker=True, frames_help="stop each source after N frames (0: all)",
        output_help="write the tiled, drawn video to this MP4 file (default: none)")
    parser.add_argument("uris", nargs="*",
                        help="sources: URIs or file paths (default: vtest.avi and carphone_pristine.mp4 "
                             "of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--tiler-size", default="1280x720", help="tiled output WIDTHxHEIGHT")
    args, ferrostream = common.start(parser)

    defaults = [common.find_media("vtest.avi"), common.find_media("carphone_pristine.mp4")]
    uris = [to_uri(u) for u in (args.uris or defaults)]
    n = len(uris)
    columns = math.ceil(math.sqrt(n))
    rows = math.ceil(n / columns)
    try:
        width, height = (int(v) for v in args.tiler_size.lower().split("x"))
    except ValueError:
        parser.error(f"--tiler-size takes WIDTHxHEIGHT, got {args.tiler_size!r}")
    description = (
        f"rsstreammux name=mux batch-size={n} batched-push-timeout=200000 "
        f"! rstrtinfer config-file-path={common.quote(args.config)} batch-size={n} "
        f"! rstracker config-file-path={common.quote(args.tracker_config)} {common.meta_export(args.json)}"
        f"! rstiler name=tiler rows={rows} columns={columns} width={width} height={height} "
        f"! rsosd ! {common.video_sink(args.output)} "
    )
    for i, uri in enumerate(uris):
        limit = common.frame_limit(args.frames, f"limit{i}") or "! queue "
        description += (f"rsurisrcbin uri={common.quote(uri)} ! videoconvert ! video/x-raw,format=I420 "
                        f"{limit}! mux.sink_{i} ")
    pipeline = common.parse_launch(description)
    app = common.App(pipeline, args.timeout)
    frames = defaultdict(int)
    objects = defaultdict(int)
    batches = [0]

    def tiler_sink_probe(_pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        if batch is None:
            return Gst.PadProbeReturn.OK
        batches[0] += 1
        for frame in batch.frames:
            counts = Counter(obj.label for obj in frame.objects)
            common.emit(f"source {frame.source_id} frame {frame.frame_num}: {common.counts_text(counts)}".rstrip())
            frames[frame.source_id] += 1
            objects[frame.source_id] += sum(counts.values())
        return Gst.PadProbeReturn.OK

    def print_totals():
        for source in range(n):
            common.emit(f"done source={source} frames={frames[source]} objects={objects[source]}")
        common.emit(f"done batches={batches[0]}")

    pipeline.get_by_name("tiler").get_static_pad("sink").add_probe(
        Gst.PadProbeType.BUFFER, app.probe(tiler_sink_probe))
    for i, uri in enumerate(uris):
        common.emit(f"source {i} uri={uri}")
    return app.run(at_end=print_totals)


if __name__ == "__main__":
    sys.exit(main())
