# SPDX-License-Identifier: MIT OR Apache-2.0
"""The sample applications of examples/python, run as a user runs them (a subprocess of this
Python, the plugin on GST_PLUGIN_PATH), on the project's footage and models. What they print is
checked against what rsmetaexport wrote in the same run, so each sample is shown to report what
the pipeline really produced, and changes made in a probe are shown to reach downstream."""

import json
import os
import pathlib
import re
import subprocess
import sys
from collections import Counter, defaultdict

import gi
import numpy as np
import pytest

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from conftest import REPO, pull, read_jsonl, shared_dir, stop  # noqa: E402
from gi.repository import Gst, GstVideo  # noqa: E402
EXAMPLES = REPO / "examples" / "python"
OWN_TIMEOUT = 300  # the samples' own --timeout (exit 2)
# Seconds for each sample: its own timeout, its shutdown watchdog and start-up, so the sample
# ends (and says why) before the test kills it; a hang fails the test instead of the suite.
TIMEOUT = OWN_TIMEOUT + 120 + 120

# A label as the samples print it: bare, or JSON-quoted (labels with spaces, such as "traffic light").
TOKEN = r'(?:"(?:[^"\\]|\\.)*"|[^\s="\\|]+)'
COUNT = re.compile(rf"({TOKEN})=(\d+)")


def unquote(token):
    return json.loads(token) if token.startswith('"') else token


def parse_counts(text):
    """`car=2 "traffic light"=1` -> Counter; fails on anything else."""
    text = text.strip()
    counts = Counter()
    pos = 0
    while pos < len(text):
        m = COUNT.match(text, pos)
        assert m, f"unparsable counts {text!r} at {pos}"
        counts[unquote(m.group(1))] += int(m.group(2))
        pos = m.end()
        while pos < len(text) and text[pos] == " ":
            pos += 1
    return counts


@pytest.fixture(scope="module")
def env():
    """The environment of the samples: this one, with the models and footage found."""
    e = dict(os.environ)
    e["FERROSTREAM_MODEL_DIR"] = str(shared_dir("FERROSTREAM_MODEL_DIR", "models", "coco_ssdlite_mobilenet_v2.onnx"))
    media = shared_dir("FERROSTREAM_MEDIA_DIR", "media", "vtest.avi")
    for name in ("vtest.avi", "carphone_pristine.mp4"):
        if not (media / name).is_file():
            pytest.fail(f"{name} not found in {media}: run scripts/fetch-models.sh")
    e["FERROSTREAM_MEDIA_DIR"] = str(media)
    e["PYTHONUNBUFFERED"] = "1"
    return e


def run_example(env, cwd, name, *args, expect=0):
    """Runs examples/python/<name>; returns (stdout lines, stderr). Fails on a hang or an exit
    code other than `expect`, showing what the sample printed."""
    command = [sys.executable, str(EXAMPLES / name), *map(str, args), "--timeout", str(OWN_TIMEOUT)]
    try:
        p = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"{name} did not end within {TIMEOUT} s\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    if p.returncode != expect:
        pytest.fail(f"{' '.join(command)} exited {p.returncode}, expected {expect}\n"
                    f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p.stdout.splitlines(), p.stderr


def lines_matching(lines, pattern):
    rx = re.compile(pattern)
    return [m for m in map(rx.fullmatch, lines) if m]


# --- detect_count.py (deepstream-test1) -----------------------------------------------------


def test_detect_count_prints_what_the_json_export_holds(env, tmp_path):
    frames = 20
    out = tmp_path / "detect.jsonl"
    lines, _ = run_example(env, tmp_path, "detect_count.py", "--frames", frames, "--json", out)

    printed = {int(m.group(1)): parse_counts(m.group(2)) for m in lines_matching(lines, r"frame (\d+):(.*)")}
    records = read_jsonl(out)
    exported = {r["frame_num"]: Counter(o["label"] for o in r["objects"]) for r in records}

    assert len(records) == frames, f"--frames {frames} exported {len(records)} frames"
    assert sorted(printed) == list(range(frames)), f"frames printed: {sorted(printed)}"
    assert printed == exported
    total = sum(sum(c.values()) for c in exported.values())
    assert f"done frames={frames} objects={total}" in lines
    # vtest.avi: people walking in every frame (about 4.5 per frame above 0.5).
    people = [c["person"] for c in printed.values()]
    assert min(people) >= 1, f"a frame without people: {people}"
    assert sum(people) >= 2 * frames, f"too few people found: {people}"


def test_detect_count_gives_up_at_its_timeout(env, tmp_path):
    """The whole of vtest.avi takes far longer than a second: the sample ends itself (exit 2)."""
    command = [sys.executable, str(EXAMPLES / "detect_count.py"), "--timeout", "1"]
    try:
        p = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"detect_count.py --timeout 1 did not end within {TIMEOUT} s")
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "error: no end of stream after 1 s" in p.stderr


# --- multistream.py (deepstream-test3) ------------------------------------------------------


def mp4_frame_times(path):
    """The presentation times (ns) of the video frames in the MP4 file at `path`, in file order."""
    pipeline = Gst.parse_launch(f'filesrc location="{path}" ! qtdemux ! appsink name=sink sync=false')
    pipeline.set_state(Gst.State.PLAYING)
    sink = pipeline.get_by_name("sink")
    times = []
    try:
        while (sample := sink.emit("try-pull-sample", 10 * Gst.SECOND)) is not None:
            times.append(sample.get_buffer().pts)
        assert sink.get_property("eos"), f"{path} did not play to its end"
    finally:
        stop(pipeline)
    return times


def test_multistream_writes_a_video_that_plays(env, tmp_path):
    """The tiled video: a frame per batch (at least one per frame of a source), at times that
    strictly increase over the sources' half second."""
    frames = 15
    video = tmp_path / "multi.mp4"
    run_example(env, tmp_path, "multistream.py", "--frames", frames, "--output", video)
    times = mp4_frame_times(video)
    assert len(times) >= frames, f"{len(times)} frames in the video"
    assert Gst.CLOCK_TIME_NONE not in times, times
    assert all(a < b for a, b in zip(times, times[1:])), f"frame times do not increase: {times}"
    assert times[-1] - times[0] > 300 * Gst.MSECOND, f"the video lasts {times[-1] - times[0]} ns: {times}"


def test_multistream_reports_every_source(env, tmp_path):
    frames = 15
    out = tmp_path / "multi.jsonl"
    lines, _ = run_example(env, tmp_path, "multistream.py", "--frames", frames, "--json", out)

    printed = {}
    for m in lines_matching(lines, r"source (\d+) frame (\d+):(.*)"):
        key = (int(m.group(1)), int(m.group(2)))
        assert key not in printed, f"source {key[0]} frame {key[1]} printed twice"
        printed[key] = parse_counts(m.group(3))
    exported = {(r["source_id"], r["frame_num"]): Counter(o["label"] for o in r["objects"]) for r in read_jsonl(out)}

    for source in (0, 1):
        got = sorted(f for s, f in printed if s == source)
        assert got == list(range(frames)), f"source {source}: frames {got}"
        objects = sum(sum(c.values()) for (s, _), c in printed.items() if s == source)
        assert f"done source={source} frames={frames} objects={objects}" in lines
    assert printed == exported
    # vtest.avi (source 0) has people walking; carphone_pristine.mp4 (source 1) a man in a car.
    for source in (0, 1):
        with_people = sum(1 for (s, _), c in printed.items() if s == source and c["person"] > 0)
        assert with_people >= frames // 2, f"source {source}: people in only {with_people} of {frames} frames"
    # Tracked: the tracker gave ids in both sources.
    ids = defaultdict(set)
    for r in read_jsonl(out):
        ids[r["source_id"]].update(o["object_id"] for o in r["objects"] if o.get("object_id") is not None)
    assert ids[0] and ids[1], f"tracker ids per source: {dict(ids)}"


# --- imagedata.py (deepstream-imagedata-multistream) ----------------------------------------


def decoded_rgb(path, index=0):
    """Frame `index` of an image or video file, decoded by GStreamer (decodebin) to RGB,
    independently of the samples."""
    pipeline = Gst.parse_launch(
        f"filesrc location={json.dumps(str(path))} ! decodebin ! videoconvert ! video/x-raw,format=RGB "
        "! appsink name=sink sync=false")
    pipeline.set_state(Gst.State.PLAYING)
    try:
        for _ in range(index + 1):
            sample = pull(pipeline)
        info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
        buf = sample.get_buffer()
        data = np.frombuffer(buf.extract_dup(0, buf.get_size()), np.uint8)
        rows = data[: info.stride[0] * info.height].reshape(info.height, info.stride[0])
        return rows[:, : info.width * 3].reshape(info.height, info.width, 3)
    finally:
        stop(pipeline)


def test_imagedata_saves_a_jpeg_of_each_new_person(env, tmp_path):
    frames = 30
    crops = tmp_path / "crops"
    out = tmp_path / "imagedata.jsonl"
    lines, _ = run_example(env, tmp_path, "imagedata.py", "--frames", frames, "--output-dir", crops, "--json", out)

    saved = lines_matching(lines, r"saved (.+) object_id=(\d+) frame=(\d+) width=(\d+) height=(\d+)")
    skipped = {int(m.group(1)) for m in lines_matching(lines, r"skipped object_id=(\d+) frame=\d+ reason=\S+")}
    assert saved, "no crop saved:\n" + "\n".join(lines)
    ids = [int(m.group(2)) for m in saved]
    assert len(ids) == len(set(ids)), f"an object saved twice: {ids}"
    assert f"done frames={frames} saved={len(saved)}" in lines

    # Every tracked person of the run, saved once, in the frame it was first reported in.
    first_seen = {}
    for r in read_jsonl(out):
        for o in r["objects"]:
            if o["label"] == "person" and o.get("object_id") is not None:
                first_seen.setdefault(o["object_id"], r["frame_num"])
    assert set(ids) | skipped == set(first_seen)
    for m in saved:
        assert first_seen[int(m.group(2))] == int(m.group(3)), m.group(0)

    for m in saved:
        path = pathlib.Path(m.group(1))
        if not path.is_absolute():
            path = tmp_path / path
        data = path.read_bytes()
        assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9", f"{path} is not a JPEG"
        image = decoded_rgb(path)
        assert image.shape == (int(m.group(5)), int(m.group(4)), 3), (path, image.shape)
        assert image.std() > 5, f"{path} is a flat picture"

    # The first crop is the box's pixels of that frame (JPEG loses a little).
    m = saved[0]
    frame = decoded_rgb(pathlib.Path(env["FERROSTREAM_MEDIA_DIR"]) / "vtest.avi", int(m.group(3)))
    crop = decoded_rgb(pathlib.Path(m.group(1)) if pathlib.Path(m.group(1)).is_absolute() else tmp_path / m.group(1))
    record = next(r for r in read_jsonl(out) if r["frame_num"] == int(m.group(3)))
    box = next(o["bbox"] for o in record["objects"] if o.get("object_id") == int(m.group(2)))
    left, top = max(0, int(box["left"])), max(0, int(box["top"]))
    h, w = crop.shape[:2]
    expected = frame[top:top + h, left:left + w].astype(np.int16)
    diff = np.abs(crop.astype(np.int16) - expected).mean()
    # About 2.3 at quality 90; red and blue swapped give about 9.5.
    assert diff < 6, f"crop differs from the frame's pixels by {diff:.1f} on average"
    elsewhere = np.abs(crop.astype(np.int16) - frame[:h, :w].astype(np.int16)).mean()
    assert elsewhere > diff, "the crop matches another part of the frame as well as its box"


# --- custom_logic.py --------------------------------------------------------------------------


def test_custom_logic_changes_reach_the_json_downstream(env, tmp_path):
    frames, min_area = 20, 2500
    out = tmp_path / "custom.jsonl"
    lines, _ = run_example(env, tmp_path, "custom_logic.py", "--frames", frames, "--min-area", min_area,
                           "--relabel", "person=pedestrian", "--json", out)

    printed = {}
    for m in lines_matching(lines, r"frame (\d+): kept=(\d+) removed=(\d+) relabelled=(\d+) \|(.*)"):
        printed[int(m.group(1))] = (int(m.group(2)), int(m.group(3)), int(m.group(4)), parse_counts(m.group(5)))
    records = read_jsonl(out)
    assert len(records) == frames
    assert sorted(printed) == [r["frame_num"] for r in records] == list(range(frames))

    labels = Counter()
    removed = 0
    for r in records:
        meta = r.get("user_meta", {}).get("custom_logic")
        assert meta is not None, f"frame {r['frame_num']} has no custom_logic user metadata: {r.get('user_meta')}"
        kept = Counter(o["label"] for o in r["objects"])
        assert meta["kept"] == len(r["objects"])
        assert meta["labels"] == dict(kept)
        assert meta["min_area"] == min_area
        assert printed[r["frame_num"]] == (meta["kept"], meta["removed"], meta["relabelled"], kept)
        for o in r["objects"]:
            b = o["bbox"]
            assert b["width"] * b["height"] >= min_area, f"frame {r['frame_num']}: a box below the min area: {b}"
        texts = [d["text"] for d in r.get("display", []) if d.get("kind") == "text"]
        assert any(t.startswith(f"{meta['kept']} objects") for t in texts), texts
        labels.update(kept)
        removed += meta["removed"]
    assert labels["pedestrian"] > 0, labels
    assert "person" not in labels, labels
    assert removed > 0, "no object was below the min area: the filter was not exercised"
    assert f"done frames={frames} removed={removed} relabelled={labels['pedestrian']}" in lines


# --- analytics_events.py (deepstream-nvdsanalytics-test) ------------------------------------


def test_analytics_events_agree_with_the_json_export(env, tmp_path):
    # vtest.avi: a person crosses the line at frame 6; the square is crowded from frame 18 on and off.
    frames = 40
    out = tmp_path / "analytics.jsonl"
    lines, _ = run_example(env, tmp_path, "analytics_events.py", "--frames", frames, "--json", out)
    records = read_jsonl(out)
    assert len(records) == frames

    crossing = r"(\d+) frame=(\d+) line=(\S+) direction=(forward|backward) object_id=(\d+)"
    bus_crossings = [(int(m.group(2)), m.group(3), m.group(4), int(m.group(5)))
                     for m in lines_matching(lines, rf"bus crossing source={crossing} class_id=-?\d+ "
                                                    r"forward_total=\d+ backward_total=\d+")]
    meta_crossings = [(int(m.group(2)), m.group(3), m.group(4), int(m.group(5)))
                      for m in lines_matching(lines, rf"meta crossing source={crossing}")]
    json_crossings = [(r["frame_num"], c["line"], c["direction"], o["object_id"])
                      for r in records for o in r["objects"]
                      for c in (o.get("analytics") or {}).get("crossed", [])]
    assert json_crossings, "nobody crossed the line in the first frames of vtest.avi"
    assert sorted(bus_crossings) == sorted(meta_crossings) == sorted(json_crossings)

    # Totals: the last frame's line counts, the totals printed, and the crossings seen agree.
    last = records[-1]["analytics"]["lines"]
    assert {name for _, name, _, _ in json_crossings} <= set(last), (last, json_crossings)
    for line, counts in last.items():
        assert f"total source=0 line={line} forward={counts['forward_total']} backward={counts['backward_total']}" in lines
        for direction in ("forward", "backward"):
            seen = sum(1 for _, name, d, _ in json_crossings if name == line and d == direction)
            assert counts[f"{direction}_total"] == seen, (line, direction, counts)

    crowd = r"(\d+) frame=(\d+) region=(\S+) crowded=(true|false) count=(\d+) threshold=(\d+)"
    bus_crowding = [(int(m.group(2)), m.group(3), m.group(4) == "true", int(m.group(5)))
                    for m in lines_matching(lines, rf"bus crowding source={crowd}")]
    meta_crowding = [(int(m.group(2)), m.group(3), m.group(4) == "true", int(m.group(5)))
                     for m in lines_matching(lines, rf"meta crowding source={crowd}")]
    state, json_crowding = {}, []
    for r in records:
        for region, c in sorted(((r.get("analytics") or {}).get("overcrowding") or {}).items()):
            if c["crowded"] != state.get(region, False):
                json_crowding.append((r["frame_num"], region, c["crowded"], c["count"]))
            state[region] = c["crowded"]
    assert json_crowding, "the square never became crowded in the first frames of vtest.avi"
    assert bus_crowding == meta_crowding == json_crowding
    assert (f"done frames={frames} crossings={len(json_crossings)} "
            f"crowding_changes={len(json_crowding)}") in lines


# --- every sample: a pipeline error is an exit code and a message -----------------------------


@pytest.mark.parametrize("name", ["detect_count.py", "multistream.py", "imagedata.py",
                                  "custom_logic.py", "analytics_events.py"])
def test_samples_report_a_pipeline_error(env, tmp_path, name):
    args = ["--frames", 3, "--config", tmp_path / "no-such-config.txt"]
    if name == "imagedata.py":
        args += ["--output-dir", tmp_path / "crops"]
    lines, err = run_example(env, tmp_path, name, *args, expect=1)
    assert re.search(r"^error: .*no-such-config\.txt", err, re.M), err
    assert not any(line.startswith("done") for line in lines), lines
