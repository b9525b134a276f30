# SPDX-License-Identifier: MIT OR Apache-2.0
"""The ferrostream package against real pipelines: what a probe reads equals what rsmetaexport
writes, changes made in a probe reach downstream elements, frames as arrays are the frame's
bytes, and bad input raises instead of crashing."""

import ctypes
import json
import math
import os
import subprocess
import sys
import textwrap

import ferrostream
import numpy as np
import pytest
from conftest import PIPELINE_TIMEOUT_S, PIPELINES, Gst, checked, media, pull, read_jsonl, rss_bytes, run, stop

import gi  # noqa: E402

gi.require_version("GstVideo", "1.0")
from gi.repository import GstVideo  # noqa: E402

COCO = PIPELINES / "coco_ssd.txt"
TRACKER = PIPELINES / "tracker.toml"


def detect_pipeline(json_path, frames=20, fmt="RGB"):
    return Gst.parse_launch(
        f"filesrc location={media('vtest.avi')} ! decodebin ! videoconvert "
        f"! video/x-raw,format={fmt} ! identity eos-after={frames} "
        f"! rstrtinfer config-file-path={COCO} ! rstracker config-file-path={TRACKER} "
        f"! identity name=probe ! rsmetaexport location={json_path} ! fakesink sync=false"
    )


def box(b):
    return None if b is None else {"left": b.left, "top": b.top, "width": b.width, "height": b.height}


def probe_record(frame):
    """Everything a probe can read of a frame, through attributes (not to_dict)."""
    return {
        "source_id": frame.source_id,
        "pad_index": frame.pad_index,
        "frame_num": frame.frame_num,
        "pts_ns": frame.pts_ns,
        "width": frame.width,
        "height": frame.height,
        "source_width": frame.source_width,
        "source_height": frame.source_height,
        "components_run": frame.components_run,
        "terminated_ids": frame.terminated_ids,
        "objects": [
            {
                "object_id": o.object_id,
                "class_id": o.class_id,
                "label": o.label,
                "confidence": o.confidence,
                "bbox": box(o.bbox),
                "component_id": o.component_id,
                "classifications": [c.label for c in o.classifications],
                "attributes": o.attributes,
                "detector_bbox": box(o.detector_bbox),
                "tracker_bbox": box(o.tracker_bbox),
                "tracker_confidence": o.tracker_confidence,
                "tracker_age": o.tracker_age,
                "parent": o.parent,
            }
            for o in frame.objects
        ],
    }


def assert_close(a, b, path="record"):
    """Equal, floats to float32 precision (the JSON writer prints the shortest float32 form)."""
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, f"{path}: {a} != {b}"
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-4), f"{path}: {a} != {b}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() <= b.keys(), f"{path}: {a} != {b}"
        for k in a:
            assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a} != {b}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_probe_sees_exactly_what_the_json_export_writes(tmp_path):
    out = tmp_path / "objects.jsonl"
    pipeline = detect_pipeline(out)
    seen = {}

    def probe(pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        assert batch is not None and len(batch) == 1
        seen[batch.frames[0].frame_num] = probe_record(batch.frames[0])
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    exported = read_jsonl(out)
    # identity's eos-after may let a frame more through (GStreamer 1.22): frames are matched by
    # number, and every frame exported was seen by the probe.
    assert len(exported) >= 15
    for theirs in exported:
        for o in theirs["objects"]:
            o["classifications"] = [c["label"] for c in o["classifications"]]
        assert_close(seen[theirs["frame_num"]], theirs, f"frame {theirs['frame_num']}")
    people = [o for f in seen.values() for o in f["objects"] if o["label"] == "person"]
    assert len(people) >= 20, "the detector finds the people walking in vtest.avi"
    tracked = {o["object_id"] for o in people if o["object_id"] is not None}
    assert len(tracked) >= 2, "the tracker gives the people ids"


def test_probe_sees_the_keypoints_the_json_export_writes(tmp_path):
    """A pose model's keypoints, as ObjectMeta.keypoints, equal the JSON record's, and lie on
    the people."""
    out = tmp_path / "poses.jsonl"
    pipeline = Gst.parse_launch(
        f"filesrc location={media('vtest.avi')} ! decodebin ! videoconvert "
        f"! identity eos-after=6 ! rstrtinfer config-file-path={PIPELINES / 'yolo11_pose.txt'} "
        f"! identity name=probe ! rsmetaexport location={out} ! fakesink sync=false"
    )
    seen = {}

    def probe(pad, info):
        frame = ferrostream.batch_meta(info.get_buffer()).frames[0]
        seen[frame.frame_num] = [(box(o.bbox), o.keypoints) for o in frame.objects]
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    exported = read_jsonl(out)
    assert len(exported) >= 5
    points = 0
    for theirs in exported:
        ours = seen[theirs["frame_num"]]
        assert len(ours) == len(theirs["objects"]) >= 2
        for (b, keypoints), o in zip(ours, theirs["objects"]):
            assert_close(keypoints, o["keypoints"], f"frame {theirs['frame_num']} keypoints")
            assert [p["name"] for p in keypoints["points"]][:3] == ["nose", "left_eye", "right_eye"]
            assert len(keypoints["skeleton"]) == 19
            for p in keypoints["points"]:
                if p["confidence"] >= 0.5:
                    points += 1
                    # On the person: inside the box, give or take a few pixels.
                    assert b["left"] - 4 <= p["x"] <= b["left"] + b["width"] + 4, (p, b)
                    assert b["top"] - 4 <= p["y"] <= b["top"] + b["height"] + 4, (p, b)
    assert points >= 100


def test_probe_sees_and_changes_the_oriented_boxes_the_json_export_writes(tmp_path):
    """An oriented-box model's angles and turned corners, as ObjectMeta.angle and .corners, equal
    the JSON record's; an angle changed in a probe reaches the JSON."""
    out = tmp_path / "ships.jsonl"
    pipeline = Gst.parse_launch(
        f"filesrc location={media('marina_obb.jpg')} ! jpegdec ! videoconvert "
        f"! rstrtinfer config-file-path={PIPELINES / 'yolov8_obb.txt'} "
        f"! identity name=probe ! identity name=editor ! rsmetaexport location={out} ! fakesink"
    )
    seen = []

    def probe(pad, info):
        frame = ferrostream.batch_meta(info.get_buffer()).frames[0]
        seen.extend((o.label, o.angle, o.corners) for o in frame.objects)
        return Gst.PadProbeReturn.OK

    def editor(pad, info):
        with ferrostream.writable(info) as batch:
            objects = batch.frames[0].objects
            objects[0].angle = None
            objects[1].angle = 0.5
            assert objects[1].angle == 0.5
            b = objects[0].bbox
            right, bottom = b.left + b.width, b.top + b.height
            square = [(b.left, b.top), (right, b.top), (right, bottom), (b.left, bottom)]
            for corner, want in zip(objects[0].corners, square):
                assert all(math.isclose(u, v, abs_tol=1e-3) for u, v in zip(corner, want)), (corner, want)
            with pytest.raises(ValueError):
                objects[2].angle = math.inf
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    pipeline.get_by_name("editor").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(editor))
    run(pipeline)
    [record] = read_jsonl(out)
    objects = record["objects"]
    assert len(seen) == len(objects) >= 100
    ships = 0
    for i, ((label, angle, corners), o) in enumerate(zip(seen, objects)):
        assert label == o["label"]
        assert angle is not None and -math.pi / 4 <= angle <= math.pi / 4
        ships += label == "ship"
        if i == 0:
            assert "angle" not in o and "corners" not in o
        elif i == 1:
            assert o["angle"] == 0.5
            cx = o["bbox"]["left"] + o["bbox"]["width"] / 2
            cy = o["bbox"]["top"] + o["bbox"]["height"] / 2
            # Turned about the unchanged centre.
            assert abs(sum(x for x, _ in o["corners"]) / 4 - cx) < 1e-3
            assert abs(sum(y for _, y in o["corners"]) / 4 - cy) < 1e-3
        else:
            assert_close(angle, o["angle"], f"object {i} angle")
            assert_close([list(c) for c in corners], o["corners"], f"object {i} corners")
    assert ships >= 100


def test_changes_in_a_probe_reach_the_json_export(tmp_path):
    out = tmp_path / "changed.jsonl"
    pipeline = detect_pipeline(out)
    removed, kept = {}, {}

    def probe(pad, info):
        with ferrostream.writable(info) as batch:
            frame = batch.frames[0]
            for obj in frame.objects:
                if obj.bbox.width * obj.bbox.height < 2500:
                    frame.remove_object(obj)
                    removed.setdefault(frame.frame_num, []).append(obj.bbox.as_tuple())
                elif obj.label == "person":
                    obj.label = "visitor"
            frame.set_user_meta("site", {"camera": "hall", "kept": len(frame.objects)})
            frame.add_text(f"{len(frame.objects)} objects", 10, 10, size=20)
            kept[frame.frame_num] = [o.label for o in frame.objects]
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    exported = read_jsonl(out)
    assert len(exported) >= 15
    assert removed, "vtest.avi has small detections to remove"
    for f in exported:
        labels = [o["label"] for o in f["objects"]]
        assert labels == kept[f["frame_num"]]
        assert "person" not in labels
        assert all(o["bbox"]["width"] * o["bbox"]["height"] >= 2500 for o in f["objects"])
        assert f["user_meta"] == {"site": {"camera": "hall", "kept": len(labels)}}
        assert f["display"][0]["kind"] == "text"
        assert f["display"][0]["text"] == f"{len(labels)} objects"
    assert any("visitor" in kept[n] for n in kept)


def synthetic(desc, width=320, height=240, frames=3, fmt="RGBA"):
    return Gst.parse_launch(
        f"videotestsrc pattern=black num-buffers={frames} "
        f"! video/x-raw,format={fmt},width={width},height={height},framerate=30/1 {desc}"
    )


def test_removed_objects_are_not_drawn_and_added_ones_and_display_elements_are():
    pipeline = synthetic(
        "! identity name=add ! identity name=remove ! rsosd display-text=false ! appsink name=sink"
    )
    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            frame = batch.frames[0]
            frame.add_object(0, "person", (20, 20, 60, 60))
            frame.add_object(0, "person", (150, 100, 60, 60))
            frame.add_rect(250, 180, 40, 40, border_width=0, fill=(255, 0, 0))
        return Gst.PadProbeReturn.OK

    def remove(pad, info):
        with ferrostream.writable(info) as batch:
            frame = batch.frames[0]
            assert len(frame.objects) == 2
            frame.remove_object(frame.objects[1])
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(add))
    pipeline.get_by_name("remove").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(remove))
    pipeline.set_state(Gst.State.PLAYING)
    try:
        sample = pull(pipeline)
        pixels = np.array(ferrostream.frame_array(sample.get_buffer(), sample.get_caps()))
        batch = ferrostream.batch_meta(sample.get_buffer())
        assert [o.bbox.as_tuple() for o in batch.frames[0].objects] == [(20, 20, 60, 60)]
    finally:
        stop(pipeline)
    # The kept box's border is drawn, the removed box's is not, the display rectangle is red.
    assert pixels[20, 40, :3].any(), "the kept object's top border"
    assert not pixels[100, 170, :3].any(), "the removed object's top border stays black"
    assert not pixels[130, 150, :3].any(), "the removed object's left border stays black"
    assert (pixels[185:215, 255:285, :3] == [255, 0, 0]).all(), "the display rectangle"


def test_added_objects_are_tracked(tmp_path):
    out = tmp_path / "tracked.jsonl"
    pipeline = synthetic(
        f"! identity name=add ! rstracker config-file-path={TRACKER} "
        f"! rsmetaexport location={out} ! fakesink",
        frames=20,
    )

    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            frame = batch.frames[0]
            x = 20 + 3 * frame.frame_num
            frame.add_object(0, "person", (x, 50, 40, 80), confidence=0.9, component_id=1)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(add))
    run(pipeline)
    frames = read_jsonl(out)
    assert len(frames) == 20
    ids = [f["objects"][0]["object_id"] for f in frames if f["objects"]]
    assert len(ids) == 20
    settled = ids[5:]
    assert None not in settled and len(set(settled)) == 1, f"one stable id: {ids}"


@pytest.mark.parametrize(
    "fmt,width,height",
    [("RGB", 322, 242), ("BGRx", 320, 240), ("GRAY8", 322, 241), ("NV12", 322, 242), ("I420", 322, 242)],
)
def test_frame_array_is_the_frames_bytes(fmt, width, height):
    pipeline = Gst.parse_launch(
        f"videotestsrc pattern=smpte num-buffers=1 ! video/x-raw,format={fmt},width={width},height={height} "
        "! appsink name=sink"
    )
    pipeline.set_state(Gst.State.PLAYING)
    try:
        sample = pull(pipeline)
        buffer, caps = sample.get_buffer(), sample.get_caps()
        arrays = ferrostream.frame_array(buffer, caps)
        info = GstVideo.VideoInfo.new_from_caps(caps)
        ok, mapped = buffer.map(Gst.MapFlags.READ)
        assert ok
        raw = np.frombuffer(mapped.data, dtype=np.uint8).copy()
        buffer.unmap(mapped)
    finally:
        stop(pipeline)
    planes = arrays if isinstance(arrays, tuple) else (arrays,)
    assert len(planes) == info.finfo.n_planes
    for p, plane in enumerate(planes):
        assert plane.dtype == np.uint8
        assert not plane.flags.writeable, "a buffer from a sample is read-only"
        rows = plane.shape[0]
        row_bytes = plane.shape[1] * (plane.shape[2] if plane.ndim == 3 else 1)
        stride, offset = info.stride[p], info.offset[p]
        expected = np.stack([raw[offset + r * stride : offset + r * stride + row_bytes] for r in range(rows)])
        assert np.array_equal(plane.reshape(rows, row_bytes), expected), f"plane {p}"
    if len(planes) == 1:
        channels = {"RGB": 3, "BGRx": 4, "GRAY8": 1}[fmt]
        assert planes[0].shape == (height, width, channels)
    else:
        assert planes[0].shape == (height, width)
    with pytest.raises(ValueError):
        planes[0][0, 0] = 1


def test_batches_give_each_sources_frame():
    pipeline = Gst.parse_launch(
        "rsstreammux name=mux batch-size=2 batched-push-timeout=-1 ! identity name=probe "
        "! identity name=paint ! identity name=after ! fakesink "
        "videotestsrc pattern=black num-buffers=3 ! video/x-raw,format=RGB,width=160,height=120 ! mux.sink_0 "
        "videotestsrc pattern=white num-buffers=3 ! video/x-raw,format=RGB,width=200,height=100 ! mux.sink_1"
    )
    seen = []
    batches = []

    def probe(pad, info):
        buffer, caps = info.get_buffer(), pad.get_current_caps()
        batch = ferrostream.batch_meta(buffer)
        batches.append(sorted(f.source_id for f in batch.frames))
        for i, frame in enumerate(batch.frames):
            pixels = ferrostream.frame_array(buffer, caps, i)
            seen.append((frame.source_id, pixels.shape, int(pixels.min()), int(pixels.max())))
        with pytest.raises(IndexError):
            ferrostream.frame_array(buffer, caps, len(batch))
        return Gst.PadProbeReturn.OK

    painted = []

    def paint(pad, info):
        # Pixels of a batch's frame written in a probe reach the elements downstream.
        with ferrostream.writable(info) as batch:
            for i, frame in enumerate(batch.frames):
                if frame.source_id == 1:
                    pixels = batch.frame_array(pad.get_current_caps(), i)
                    pixels[:10, :10] = 7
                    del pixels
        return Gst.PadProbeReturn.OK

    def after(pad, info):
        buffer = info.get_buffer()
        for i, frame in enumerate(ferrostream.batch_meta(buffer).frames):
            if frame.source_id == 1:
                pixels = ferrostream.frame_array(buffer, pad.get_current_caps(), i)
                painted.append((int(pixels[:10, :10].max()), int(pixels[10:, 10:].min())))
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    pipeline.get_by_name("paint").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(paint))
    pipeline.get_by_name("after").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(after))
    run(pipeline)
    # batched-push-timeout=-1: every batch holds a frame of each source.
    assert batches == [[0, 1]] * 3
    assert sorted(seen) == [(0, (120, 160, 3), 0, 0)] * 3 + [(1, (100, 200, 3), 255, 255)] * 3
    assert painted == [(7, 255)] * 3, painted


def test_changes_need_a_writable_buffer_and_a_current_view():
    pipeline = synthetic("! identity name=add ! identity name=probe ! fakesink", frames=2)
    outcomes = []

    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            batch.frames[0].add_object(0, "person", (10, 10, 20, 20))
        return Gst.PadProbeReturn.OK

    def probe(pad, info):
        frame = ferrostream.batch_meta(info.get_buffer()).frames[0]
        obj = frame.objects[0]
        attempts = [
            lambda: frame.add_text("x", 1, 1),
            lambda: setattr(obj, "label", "car"),
            lambda: frame.remove_object(obj),
            lambda: frame.set_user_meta("k", 1),
            lambda: obj.set_user_meta("k", 1),
        ]
        for attempt in attempts:
            with pytest.raises(ferrostream.NotWritableError):
                attempt()
        assert obj.label == "person", "a refused change changes nothing"
        with ferrostream.writable(info) as first:
            with ferrostream.writable(info) as second:
                second.frames[0].objects[0].label = "second"
            with pytest.raises(ferrostream.StaleMetaError):
                first.frames[0].objects[0].label = "first"
        with pytest.raises(ferrostream.StaleMetaError):
            first.frames[0].add_text("late", 1, 1)
        outcomes.append(ferrostream.batch_meta(info.get_buffer()).frames[0].objects[0].label)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(add))
    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    assert outcomes == ["second", "second"]


def test_bad_input_raises_clear_errors():
    caps = Gst.Caps.from_string("video/x-raw,format=RGB,width=64,height=64")
    buffer = Gst.Buffer.new_allocate(None, 64 * 64 * 3, None)
    assert ferrostream.batch_meta(buffer) is None, "a buffer without metadata has none"
    with pytest.raises(TypeError, match="Gst.Buffer"):
        ferrostream.batch_meta(42)
    with pytest.raises(TypeError, match="Gst.Buffer"):
        ferrostream.batch_meta(caps)
    with pytest.raises(TypeError, match="Gst.Caps"):
        ferrostream.frame_array(buffer, buffer)
    with pytest.raises(ValueError, match="UYVY"):
        ferrostream.frame_array(buffer, Gst.Caps.from_string("video/x-raw,format=UYVY,width=8,height=8"))
    with pytest.raises(ValueError, match="raw video"):
        ferrostream.frame_array(buffer, Gst.Caps.from_string("audio/x-raw"))
    with pytest.raises(IndexError):
        ferrostream.frame_array(buffer, caps, 1)
    small = Gst.Buffer.new_allocate(None, 16, None)
    with pytest.raises(ferrostream.Error, match="cannot map"):
        ferrostream.frame_array(small, caps)
    assert ferrostream.frame_array(buffer, caps).shape == (64, 64, 3)


def test_bad_values_are_refused_in_a_probe():
    pipeline = synthetic("! identity name=probe ! fakesink", frames=1)
    refused = []

    def probe(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            frame = batch.frames[0]
            obj = frame.add_object(0, "person", (1, 2, 3, 4))
            cases = {
                "size 0 text": (ValueError, lambda: frame.add_text("x", 1, 1, size=0)),
                "NaN box": (ValueError, lambda: setattr(obj, "bbox", (float("nan"), 0, 1, 1))),
                "negative box": (ValueError, lambda: frame.add_object(0, "x", (0, 0, -5, 1))),
                "long label": (ValueError, lambda: setattr(obj, "label", "x" * 200)),
                "not JSON": (TypeError, lambda: frame.set_user_meta("k", object())),
                "huge value": (ValueError, lambda: frame.set_user_meta("k", "x" * 70000)),
                "bad colour": (TypeError, lambda: frame.add_line(0, 0, 1, 1, color="red")),
                "bad box type": (TypeError, lambda: frame.add_object(0, "x", "box")),
            }
            for name, (kind, attempt) in cases.items():
                with pytest.raises(kind):
                    attempt()
                refused.append(name)
            assert obj.label == "person" and obj.bbox.as_tuple() == (1, 2, 3, 4)
            assert len(frame.objects) == 1
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    assert len(refused) == 8


def test_ten_thousand_probe_calls_do_not_grow_memory():
    frames = 10_000
    pipeline = synthetic(
        "! identity name=add ! identity name=read ! fakesink", width=64, height=64, frames=frames, fmt="GRAY8"
    )
    rss = {}
    count = [0]

    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            frame = batch.frames[0]
            for i in range(20):
                frame.add_object(i % 3, "person", (i, i, 10, 10), confidence=0.5)
            frame.set_user_meta("n", count[0])
            frame.add_text("count", 1, 1)
        return Gst.PadProbeReturn.OK

    def read(pad, info):
        buffer = info.get_buffer()
        frame = ferrostream.batch_meta(buffer).frames[0]
        total = 0.0
        for o in frame.objects:
            b = o.bbox
            total += b.left + b.top + b.width + b.height + o.confidence + o.class_id
            _ = (o.label, o.object_id, o.tracker_bbox, o.detector_bbox, o.parent, o.attributes)
        assert len(frame.objects) == 20 and total > 0
        pixels = ferrostream.frame_array(buffer, pad.get_current_caps())
        assert pixels.shape == (64, 64, 1)
        count[0] += 1
        if count[0] in (2_000, frames):
            rss[count[0]] = rss_bytes()
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(add))
    pipeline.get_by_name("read").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(read))
    run(pipeline, timeout=600)
    assert count[0] == frames
    growth = rss[frames] - rss[2_000]
    assert growth < 8 * 1024 * 1024, f"memory grew by {growth / 1e6:.1f} MB over 8,000 probe calls"


def test_the_module_documents_itself():
    doc = ferrostream.__doc__
    assert "batch_meta" in doc and "writable" in doc
    for name in ("batch_meta", "writable", "frame_array"):
        assert getattr(ferrostream, name).__doc__, name
    assert ferrostream.plugin_path().endswith("libgstferrostream.so")


def test_counts_follow_edits_and_arrays_hold_the_buffer():
    pipeline = synthetic("! identity name=probe ! fakesink", frames=1)
    done = []

    def probe(pad, info):
        caps = pad.get_current_caps()
        with ferrostream.writable(info, caps) as batch:
            frame = batch.frames[0]
            frame.add_object(0, "person", (1, 1, 5, 5))
            frame.add_object(0, "person", (10, 1, 5, 5))
            assert batch.object_count == 2 and "objects=2" in repr(frame)
            frame.remove_object(frame.objects[0])
            assert batch.object_count == 1 and len(frame.to_dict()["objects"]) == 1
            pixels = batch.frame_array(caps)
            assert pixels.flags.writeable
            pixels[0, 0] = (1, 2, 3, 4)
            # While an array of the buffer lives, the buffer is shared: no metadata change.
            with pytest.raises(ferrostream.NotWritableError, match="frame array"):
                frame.add_text("x", 1, 1)
            with pytest.raises(ferrostream.NotWritableError, match="frame array"):
                batch.frame_array(caps)
            del pixels
            frame.add_text("after", 1, 1)
            done.append(frame.display[0]["text"])
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    assert done == ["after"]


def test_misuse_is_refused_with_a_reason():
    pipeline = synthetic("! identity name=probe ! fakesink", frames=1)
    done = []

    def probe(pad, info):
        caps = pad.get_current_caps()
        block = ferrostream.writable(info, caps)
        with block as batch:
            frame = batch.frames[0]
            obj = frame.add_object(0, "person", (1, 1, 5, 5))
            with pytest.raises(ValueError, match="finite"):
                obj.confidence = float("nan")
            with pytest.raises(ValueError, match="finite"):
                frame.add_text("x", float("inf"), 1)
            with pytest.raises(ValueError):
                frame.set_user_meta("k", float("nan"))
            assert obj.confidence == 1.0
            kept = batch.frame_array(caps)
        # An array kept past the block is reported: the frame has gone on.
        with pytest.raises(ValueError, match="entered once"):
            with block:
                pass
        done.append(kept.shape)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    with pytest.warns(RuntimeWarning, match="outlive"):
        run(pipeline)
    assert done == [(240, 320, 4)]


def test_parents_come_from_the_same_frame_and_read_only_views_stay_read_only():
    pipeline = Gst.parse_launch(
        "rsstreammux name=mux batch-size=2 batched-push-timeout=-1 ! identity name=probe ! fakesink "
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=48 ! mux.sink_0 "
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=48 ! mux.sink_1"
    )
    done = []

    def probe(pad, info):
        seen = ferrostream.batch_meta(info.get_buffer())
        with ferrostream.writable(info) as batch:
            # batched-push-timeout=-1: the batch waits for both sources, however slow the machine.
            first, second = batch.frames[0], batch.frames[1]
            person = first.add_object(0, "person", (1, 1, 20, 20))
            with pytest.raises(ValueError, match="parent"):
                second.add_object(1, "face", (2, 2, 5, 5), parent=person)
            first.add_object(1, "face", (2, 2, 5, 5), parent=person)
            assert [o.parent for o in first.objects] == [None, 0]
            assert 0 in first.components_run
        # The view taken before the block is read-only, whatever happened to the buffer since.
        with pytest.raises(ferrostream.NotWritableError, match="read-only"):
            seen.frames[0].add_text("x", 1, 1)
        done.append(len(batch))
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    assert done == [2]


def test_dlpack_export_keeps_read_only_frames_read_only():
    caps = Gst.Caps.from_string("video/x-raw,format=RGB,width=8,height=4")
    buffer = Gst.Buffer.new_wrapped(bytes(range(96)))
    pixels = ferrostream.frame_array(buffer, caps)
    plane = pixels.base
    assert plane.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="read-only"):
        plane.__dlpack__()
    with pytest.raises(BufferError, match="device"):
        plane.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    exported = np.from_dlpack(plane)
    assert np.array_equal(exported, pixels) and not exported.flags.writeable


def nested(depth):
    """A user-metadata value `depth` levels deep: dicts and lists in turn around a number."""
    value = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def test_user_meta_past_the_depth_limit_is_refused_and_at_it_reads_back_everywhere(tmp_path):
    """User metadata nested past MAX_USER_DEPTH is refused when set, naming the limit (126 deep
    was taken, then read back as {}); a value at the limit reads back the same from a later
    probe's view, from to_dict() and from the JSON export."""
    out = tmp_path / "deep.jsonl"
    limit = ferrostream.MAX_USER_DEPTH
    deepest = nested(limit)
    pipeline = synthetic(
        f"! identity name=add ! identity name=read ! rsmetaexport location={out} ! fakesink", frames=1
    )
    seen = []

    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            frame = batch.frames[0]
            obj = frame.add_object(0, "person", (1, 1, 5, 5))
            for target in (frame, obj):
                for depth in (limit + 1, 124, 126):
                    with pytest.raises(ValueError, match=f"at most {limit}"):
                        target.set_user_meta("deep", nested(depth))
                target.set_user_meta("deep", deepest)
            circular = []
            circular.append(circular)
            with pytest.raises(ValueError, match=f"at most {limit}"):
                frame.set_user_meta("circular", circular)
        return Gst.PadProbeReturn.OK

    def read(pad, info):
        frame = ferrostream.batch_meta(info.get_buffer()).frames[0]
        obj = frame.objects[0]
        record = frame.to_dict()
        seen.append([frame.user_meta, obj.user_meta, record["user_meta"], record["objects"][0]["user_meta"],
                     obj.to_dict()["user_meta"]])
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(add))
    pipeline.get_by_name("read").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(read))
    run(pipeline)
    assert seen == [[{"deep": deepest}] * 5]
    [record] = read_jsonl(out)
    assert record["user_meta"] == record["objects"][0]["user_meta"] == {"deep": deepest}


def test_a_c_application_cannot_attach_metadata_too_deep_to_read():
    """A C application's edits skip the package's checks. A frame value 126 deep makes the frame's
    record nest 128 deep, past what serde_json reads (it once read back as {} in Python): the
    plugin refuses it, naming MAX_USER_DEPTH, and the frame reads as it was."""
    abi = ctypes.CDLL(ferrostream.plugin_path())
    glib = ctypes.CDLL("libglib-2.0.so.0")
    for name, restype, argtypes in [
        ("ferrostream_probe_make_writable", ctypes.c_void_p, [ctypes.c_void_p]),
        ("ferrostream_batch_get", ctypes.c_void_p, [ctypes.c_void_p]),
        ("ferrostream_batch_revision", ctypes.c_uint64, [ctypes.c_void_p]),
        ("ferrostream_batch_edit", ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p,
                                                  ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                                  ctypes.POINTER(ctypes.c_void_p)]),
    ]:
        getattr(abi, name).restype, getattr(abi, name).argtypes = restype, argtypes
    glib.g_free.argtypes = [ctypes.c_void_p]
    pipeline = synthetic("! identity name=add ! identity name=read ! fakesink", frames=1)
    edits = []

    def add(pad, info):
        with ferrostream.writable(info, pad.get_current_caps()):
            pass
        # PyGObject keeps the GstPadProbeInfo pointer right after the object header.
        info_ptr = ctypes.c_void_p.from_address(id(info) + object.__basicsize__).value
        buffer = abi.ferrostream_probe_make_writable(info_ptr)
        revision = abi.ferrostream_batch_revision(abi.ferrostream_batch_get(buffer))
        edit = json.dumps({"op": "set_frame_user_meta", "frame": 0, "key": "deep", "value": nested(126)}).encode()
        error = ctypes.c_void_p()
        code = abi.ferrostream_batch_edit(buffer, revision, edit, len(edit), None, None, ctypes.byref(error))
        edits.append((code, ctypes.string_at(error.value).decode() if error.value else None))
        glib.g_free(error)
        return Gst.PadProbeReturn.OK

    def read(pad, info):
        frame = ferrostream.batch_meta(info.get_buffer()).frames[0]
        code, message = edits[0]
        assert code != 0 and f"at most {ferrostream.MAX_USER_DEPTH}" in message, (code, message)
        assert frame.user_meta == {} and "user_meta" not in frame.to_dict()
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("add").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(add))
    pipeline.get_by_name("read").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(read))
    run(pipeline)
    assert len(edits) == 1


# Tests that watch a process's stderr or peak memory run their probe in a child process of their
# own; it prints its results as one line of JSON.
CHILD_PRELUDE = """
import json, resource
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
import ferrostream


# What work(pad, info) returns in a buffer probe on one 320x240 RGBA frame.
def in_probe(work):
    pipeline = Gst.parse_launch(
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=320,height=240,framerate=30/1 "
        "! identity name=probe ! fakesink"
    )
    results = []

    def probe(pad, info):
        results.append(work(pad, info))
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe)
    pipeline.set_state(Gst.State.PLAYING)
    end = Gst.MessageType.EOS | Gst.MessageType.ERROR
    msg = pipeline.get_bus().timed_pop_filtered(60 * Gst.SECOND, end)
    pipeline.set_state(Gst.State.NULL)
    assert msg is not None and msg.type == Gst.MessageType.EOS, "the pipeline did not end"
    return results[0]
"""


def run_child(code, env=None):
    """Runs CHILD_PRELUDE and `code` in a new Python; returns (the JSON it printed, its stderr)."""
    try:
        p = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(code)], env=env,
                           capture_output=True, text=True, timeout=PIPELINE_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child process did not end within {PIPELINE_TIMEOUT_S} s\nstderr:\n{e.stderr}")
    if p.returncode != 0:
        pytest.fail(f"the child process failed ({p.returncode})\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return json.loads(p.stdout.splitlines()[-1]), p.stderr


HUGE = 200 * 1024 * 1024


def assert_refused_before_copied(setup, call, refusal):
    """In a child process's probe: `setup` makes an argument of HUGE bytes, `call` hands it to the
    package. It must raise ValueError naming `refusal`, and the peak memory grow by less than a
    tenth of HUGE (a copy of the argument would be HUGE)."""
    result, _ = run_child(f"""
        SIZE = {HUGE}
        {setup}
        def work(pad, info):
            with ferrostream.writable(info, pad.get_current_caps()) as batch:
                frame = batch.frames[0]
                frame.set_user_meta("warm", 1)
                before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                try:
                    {call}
                    refused = None
                except ValueError as e:
                    refused = str(e)
                after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                return {{"refused": refused, "growth": (after - before) * 1024}}

        print(json.dumps(in_probe(work)))
    """)
    assert result["refused"] and refusal in result["refused"], result
    assert result["growth"] < HUGE // 10, f"the peak memory grew by {result['growth'] / 1e6:.0f} MB"


@pytest.mark.parametrize("value", ['"x" * SIZE', '["x" * 1000] * (SIZE // 1000)'], ids=["str", "list"])
def test_a_value_over_the_size_bound_is_refused_before_it_is_copied(value):
    """A 200 MB value is refused without a copy of it (a 400 MB string once peaked at 2.4 GB)."""
    assert_refused_before_copied(f"huge = {value}", 'frame.set_user_meta("big", huge)',
                                 f"at most {ferrostream.MAX_USER_VALUE_BYTES}")


@pytest.mark.parametrize(
    "call, refusal",
    [
        ("frame.set_user_meta(huge, 1)", "the key is longer than 256 bytes"),
        ("frame.add_object(0, huge, (1, 1, 2, 2))", "the label is longer than 128 bytes"),
        ("frame.add_text(huge, 1, 1)", "the text is longer than 1024 bytes"),
    ],
    ids=["key", "label", "text"],
)
def test_a_string_over_its_bound_is_refused_before_it_is_copied(call, refusal):
    """Keys, labels and display texts of 200 MB are refused as values are: before a copy."""
    assert_refused_before_copied('huge = "x" * SIZE', call, refusal)


def test_caps_that_describe_no_frame_are_refused_without_criticals():
    """ANY, EMPTY and unfixed caps given to frame_array or writable raise, naming the problem,
    and GStreamer prints no CRITICAL assertion first (G_DEBUG=fatal-warnings would abort)."""
    env = {k: v for k, v in os.environ.items() if k != "G_DEBUG"}
    outcomes, stderr = run_child("""
        def refusal(call):
            try:
                call()
            except Exception as e:
                return [type(e).__name__, str(e)]
            return None

        bad = {"ANY": Gst.Caps.new_any(), "EMPTY": Gst.Caps.new_empty(),
               "not fixed": Gst.Caps.from_string("video/x-raw,format=RGB,width=[16,64],height=64")}
        buffer = Gst.Buffer.new_allocate(None, 64 * 64 * 3, None)
        outcomes = {f"frame_array {n}": refusal(lambda: ferrostream.frame_array(buffer, c)) for n, c in bad.items()}
        outcomes.update(in_probe(lambda pad, info: {
            f"writable {n}": refusal(lambda: ferrostream.writable(info, c).__enter__()) for n, c in bad.items()
        }))
        print(json.dumps(outcomes))
    """, env=env)
    assert "CRITICAL" not in stderr, stderr
    assert len(outcomes) == 6
    for name, outcome in outcomes.items():
        assert outcome is not None, f"{name} was accepted"
        kind, message = outcome
        problem = name.split(" ", 1)[1]
        assert kind == "ValueError" and problem in message, f"{name}: {kind}: {message}"


def test_writable_refuses_caps_the_buffer_is_too_small_for():
    """Caps that claim a larger frame than the buffer holds (640x480 or 65535x65535 on 320x240)
    are refused, naming both, and no batch of their size is attached (boxes would be scaled by
    it downstream)."""
    pipeline = synthetic("! identity name=probe ! fakesink", frames=1)
    done = []
    lies = {
        "640x480": r"640x480 RGBA frame of 1228800 bytes; the buffer holds 307200 bytes",
        "65535x65535": r"width=\(int\)65535, height=\(int\)65535.* lay out .*; the buffer holds 307200 bytes",
    }

    def probe(pad, info):
        for size, refusal in lies.items():
            width, height = size.split("x")
            lying = Gst.Caps.from_string(f"video/x-raw,format=RGBA,width={width},height={height},framerate=30/1")
            with pytest.raises(ValueError, match=refusal):
                with ferrostream.writable(info, lying):
                    pass
        # An NVMM buffer's size says nothing of its frame: its caps are bounded instead.
        wide = Gst.Caps.from_string("video/x-raw(memory:NVMM),format=RGBA,width=40000,height=16")
        with pytest.raises(ValueError, match=r"40000x16 frame, larger than 32768 pixels a side"):
            with ferrostream.writable(info, wide):
                pass
        assert ferrostream.batch_meta(info.get_buffer()) is None
        with ferrostream.writable(info, pad.get_current_caps()) as batch:
            done.append((batch.frames[0].width, batch.frames[0].height))
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probe").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(pipeline)
    assert done == [(320, 240)]
