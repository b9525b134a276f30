#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Change the analytics results in a pad probe before the rest of the pipeline sees them.

    filesrc ! decodebin ! videoconvert ! rstrtinfer ! rstracker
        ! [probe: drop, relabel, draw, attach] ! rsosd ! [rsmetaexport] ! sink

The probe on rstracker's src pad takes the buffer's metadata writable
(`with ferrostream.writable(info) as batch:`) and, in every frame,

- removes the objects whose box is smaller than --min-area square pixels,
- relabels objects (--relabel person=pedestrian, repeatable),
- adds a text overlay with the count of objects kept (rsosd draws it),
- attaches user metadata under the key "custom_logic" (frame.set_user_meta), which rsmetaexport
  writes into the JSON (--json FILE) and rsmsgbroker into its payloads.

For each frame it prints

    frame 12: kept=5 removed=2 relabelled=3 | car=2 pedestrian=3

(after the bar the objects kept per label, JSON-quoted when they have spaces), and at the end
`done frames=N removed=M relabelled=K`. It exits 0 at end of stream, 1 on a pipeline error, 2
when --timeout runs out, 3 when the probe fails.

    GST_PLUGIN_PATH=target/debug python3 examples/python/custom_logic.py --frames 30 \\
        --min-area 2500 --relabel person=pedestrian --json out.jsonl
"""

import argparse
import os
import sys
from collections import Counter

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import common  # noqa: E402  (examples/python/common.py: options, checks, main loop)


def parse_relabel(values):
    """{OLD: NEW} of the --relabel OLD=NEW options."""
    mapping = {}
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old or not new:
            raise argparse.ArgumentTypeError(f"--relabel takes OLD=NEW, got {value!r}")
        mapping[old] = new
    return mapping


def main():
    parser = common.argument_parser(
        __doc__, tracker=True,
        json_help="write rsmetaexport's JSON lines (one per frame, after the probe) here")
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--min-area", type=float, default=2000.0,
                        help="remove objects whose box covers fewer square pixels")
    parser.add_argument("--relabel", action="append", default=[], metavar="OLD=NEW",
                        help="rename label OLD to NEW (repeatable)")
    args = common.parse_args(parser)
    try:
        relabel = parse_relabel(args.relabel)
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))
    ferrostream = common.init()

    pipeline = common.parse_launch(
        f"{common.file_source(args.input, args.frames)}"
        f"! rstrtinfer config-file-path={common.quote(args.config)} "
        f"! rstracker name=tracker config-file-path={common.quote(args.tracker_config)} "
        f"! rsosd {common.meta_export(args.json)}! {common.video_sink(args.output)}"
    )
    app = common.App(pipeline, args.timeout)
    totals = Counter()

    def tracker_src_probe(_pad, info):
        with ferrostream.writable(info) as batch:
            if batch is None:
                return Gst.PadProbeReturn.OK
            for frame in batch.frames:
                removed = relabelled = 0
                for obj in list(frame.objects):
                    box = obj.bbox
                    if box.width * box.height < args.min_area:
                        frame.remove_object(obj)
                        removed += 1
                    elif obj.label in relabel:
                        obj.label = relabel[obj.label]
                        relabelled += 1
                labels = Counter(obj.label for obj in frame.objects)
                kept = sum(labels.values())
                summary = ", ".join(f"{label} {n}" for label, n in sorted(labels.items())) or "nothing"
                frame.add_text(f"{kept} objects: {summary}", 10, 10, size=20,
                               color=(255, 255, 255), background=(0, 0, 0, 160))
                frame.set_user_meta("custom_logic", {
                    "kept": kept,
                    "removed": removed,
                    "relabelled": relabelled,
                    "min_area": args.min_area,
                    "labels": dict(sorted(labels.items())),
                })
                common.emit(f"frame {frame.frame_num}: kept={kept} removed={removed} relabelled={relabelled} | "
                            f"{common.counts_text(labels)}".rstrip())
                totals.update(frames=1, removed=removed, relabelled=relabelled)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("tracker").get_static_pad("src").add_probe(
        Gst.PadProbeType.BUFFER, app.probe(tracker_src_probe))
    return app.run(at_end=lambda: common.emit(
        f"done frames={totals['frames']} removed={totals['removed']} relabelled={totals['relabelled']}"))


if __name__ == "__main__":
    sys.exit(main())
