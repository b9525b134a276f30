#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Cost of a Python pad probe that reads every field of 20 objects per frame, against the same
pipeline without the probe.

One 1280x720 RGB frame gets 20 objects (detector and tracker boxes, a classification, an
attribute); that buffer is pushed FRAMES times through `appsrc ! identity ! fakesink`, with and
without a probe on identity's source pad that reads every field of every object (what a
deepstream-test1 style probe does). Runs alternate between the two pipelines; the probe's cost per
frame is the difference of the median run times divided by the frames, and is also timed inside
the probe (the callback's body only, without PyGObject's call into Python).

    GST_PLUGIN_PATH=target/release python3 scripts/bench/python_probe.py [--frames 20000] [--runs 5]

Prints one line per run and a summary:
    PROBE variant=none|probe frames=F seconds=S
    PROBE-SUMMARY objects=20 frames=F median-none=S median-probe=S overhead-us-per-frame=X in-probe-us-per-frame=Y
"""

import argparse
import statistics
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

import ferrostream  # noqa: E402

OBJECTS = 20
ATTRS = True
CAPS = "video/x-raw,format=RGB,width=1280,height=720,framerate=30/1"


def make_buffer():
    """One frame carrying 20 objects, made by a probe (the metadata is the plugin's own)."""
    pipeline = Gst.parse_launch(
        f"videotestsrc num-buffers=1 ! {CAPS} ! identity name=add ! appsink name=sink"
    )

    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            frame = batch.frames[0]
            for i in range(OBJECTS):
                obj = frame.add_object(i % 4, "person", (20 + 60 * i, 100, 50, 120), confidence=0.8)
                obj.tracker_bbox = (22 + 60 * i, 101, 49, 119)
                if ATTRS: obj.set_attribute("speed", 1.5)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, add)
    pipeline.set_state(Gst.State.PLAYING)
    sample = pipeline.get_by_name("sink").emit("try-pull-sample", 30 * Gst.SECOND)
    pipeline.set_state(Gst.State.NULL)
    if sample is None:
        raise SystemExit("no frame made")
    return sample.get_buffer()


def read_everything(pad, info, spent):
    start = time.perf_counter_ns()
    batch = ferrostream.batch_meta(info.get_buffer())
    total = 0.0
    for frame in batch.frames:
        total += frame.source_id + frame.frame_num + frame.width + frame.height
        for o in frame.objects:
            b, d, t = o.bbox, o.detector_bbox, o.tracker_bbox
            total += b.left + b.top + b.width + b.height + d.left + d.top + d.width + d.height
            total += t.left + t.top + t.width + t.height + o.confidence + o.class_id + o.component_id
            _ = (o.object_id, o.label, o.tracker_confidence, o.tracker_age, o.parent)
            _ = (o.classifications, o.attributes)
    spent.append(time.perf_counter_ns() - start)
    return Gst.PadProbeReturn.OK


def run(buffer, frames, probe):
    pipeline = Gst.parse_launch(
        f"appsrc name=src caps={CAPS} format=time block=true max-buffers=8 "
        "! identity name=probe ! fakesink sync=false"
    )
    spent = []
    if probe:
        pipeline.get_by_name("probe").get_static_pad("src").add_probe(
            Gst.PadProbeType.BUFFER, read_everything, spent
        )
    src = pipeline.get_by_name("src")
    pipeline.set_state(Gst.State.PLAYING)
    start = time.perf_counter()
    for _ in range(frames):
        if src.emit("push-buffer", buffer) != Gst.FlowReturn.OK:
            raise SystemExit("push failed")
    src.emit("end-of-stream")
    msg = pipeline.get_bus().timed_pop_filtered(600 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    seconds = time.perf_counter() - start
    pipeline.set_state(Gst.State.NULL)
    if msg is None or msg.type != Gst.MessageType.EOS:
        raise SystemExit(f"the run did not end with EOS: {msg}")
    if probe and len(spent) != frames:
        raise SystemExit(f"the probe ran {len(spent)} times for {frames} frames")
    return seconds, spent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    Gst.init(None)
    buffer = make_buffer()
    assert len(ferrostream.batch_meta(buffer).frames[0].objects) == OBJECTS
    times = {"none": [], "probe": []}
    inside = []
    run(buffer, 1000, True)  # warm-up: module, plugin and caches loaded
    for _ in range(args.runs):
        for variant in ("none", "probe"):
            seconds, spent = run(buffer, args.frames, variant == "probe")
            times[variant].append(seconds)
            inside.extend(spent)
            print(f"PROBE variant={variant} frames={args.frames} seconds={seconds:.3f}", flush=True)
    none, probe = statistics.median(times["none"]), statistics.median(times["probe"])
    overhead = (probe - none) / args.frames * 1e6
    print(
        f"PROBE-SUMMARY objects={OBJECTS} frames={args.frames} median-none={none:.3f} "
        f"median-probe={probe:.3f} overhead-us-per-frame={overhead:.1f} "
        f"in-probe-us-per-frame={statistics.median(inside) / 1000:.1f}"
    )


if __name__ == "__main__":
    main()
