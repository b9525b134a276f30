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

import os
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import common  # noqa: E402  (examples/python/common.py: options, checks, main loop)


def fmt_bool(value):
    return "true" if value else "false"


def on_element_message(_bus, message):
    """Prints rsanalytics' events: posted while it works on the frame, delivered here in the main
    loop (the "message::element" signal of the bus)."""
    s = message.get_structure()
    if s is not None and s.get_name() == "rsanalytics-line-crossing":
        common.emit(f"bus crossing source={s.get_value('source-id')} frame={s.get_value('frame-num')} "
                    f"line={s.get_value('line')} direction={s.get_value('direction')} "
                    f"object_id={s.get_value('object-id')} class_id={s.get_value('class-id')} "
                    f"forward_total={s.get_value('forward-total')} backward_total={s.get_value('backward-total')}")
    elif s is not None and s.get_name() == "rsanalytics-overcrowding":
        common.emit(f"bus crowding source={s.get_value('source-id')} frame={s.get_value('frame-num')} "
                    f"region={s.get_value('region')} crowded={fmt_bool(s.get_value('crowded'))} "
                    f"count={s.get_value('count')} threshold={s.get_value('threshold')}")


def main():
    parser = common.argument_parser(__doc__, tracker=True)
    parser.add_argument("input", nargs="?", help="video file (default: vtest.avi of $FERROSTREAM_MEDIA_DIR)")
    parser.add_argument("--analytics-config", default=str(common.PIPELINES / "analytics_vtest.txt"),
                        help="rsanalytics rules (nvdsanalytics format)")
    args, ferrostream = common.start(parser)

    pipeline = common.parse_launch(
        f"{common.file_source(args.input, args.frames)}"
        f"! rstrtinfer config-file-path={common.quote(args.config)} "
        f"! rstracker config-file-path={common.quote(args.tracker_config)} "
        f"! rsanalytics name=analytics config-file-path={common.quote(args.analytics_config)} "
        f"{common.meta_export(args.json)}! rsosd name=osd ! {common.video_sink(args.output)}"
    )
    app = common.App(pipeline, args.timeout)
    pipeline.get_bus().connect("message::element", on_element_message)
    totals = {"frames": 0, "crossings": 0, "crowding_changes": 0}
    crowded = {}  # (source, region) -> state in the previous frame
    lines = {}  # (source, line) -> (forward_total, backward_total)

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
                    common.emit(f"meta crossing source={src} frame={num} line={crossing['line']} "
                                f"direction={crossing['direction']} object_id={obj.object_id}")
            analytics = frame.analytics or {}
            for region, state in sorted(analytics.get("overcrowding", {}).items()):
                if state["crowded"] != crowded.get((src, region), False):
                    totals["crowding_changes"] += 1
                    common.emit(f"meta crowding source={src} frame={num} region={region} "
                                f"crowded={fmt_bool(state['crowded'])} count={state['count']} "
                                f"threshold={state['threshold']}")
                crowded[(src, region)] = state["crowded"]
            for line, counts in analytics.get("lines", {}).items():
                lines[(src, line)] = (counts["forward_total"], counts["backward_total"])
        return Gst.PadProbeReturn.OK

    def print_totals():
        for (src, line), (forward, backward) in sorted(lines.items()):
            common.emit(f"total source={src} line={line} forward={forward} backward={backward}")
        common.emit(f"done frames={totals['frames']} crossings={totals['crossings']} "
                    f"crowding_changes={totals['crowding_changes']}")

    pipeline.get_by_name("osd").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, app.probe(osd_sink_probe))
    return app.run(at_end=print_totals)


if __name__ == "__main__":
    sys.exit(main())
