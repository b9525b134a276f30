# SPDX-License-Identifier: MIT OR Apache-2.0
"""Per-frame latency records (rsstreammux latency-tracking=true) as a probe reads them: every
element that had the frame, in order, with sane times, equal to what rsmetaexport writes."""

import ferrostream
from conftest import PIPELINES, Gst, checked, read_jsonl, run

COCO = PIPELINES / "coco_ssd.txt"
TRACKER = PIPELINES / "tracker.toml"
FRAMES = 6


def pipeline(json_path, tracking):
    return Gst.parse_launch(
        f"rsstreammux name=mux batch-size=2 batched-push-timeout=-1 latency-tracking={str(tracking).lower()} "
        f"! rstrtinfer name=infer config-file-path={COCO} "
        f"! rstracker name=tracker config-file-path={TRACKER} "
        f"! rsmetaexport name=export location={json_path} ! fakesink sync=false "
        f"videotestsrc num-buffers={FRAMES} ! video/x-raw,format=RGB,width=320,height=240 ! mux.sink_0 "
        f"videotestsrc pattern=ball num-buffers={FRAMES} ! video/x-raw,format=RGB,width=320,height=240 "
        "! mux.sink_1"
    )


def read_latencies(json_path, tracking):
    """Runs the pipeline; returns what a probe after rsmetaexport read per (source, frame), and
    the exported records."""
    p = pipeline(json_path, tracking)
    seen = {}

    def probe(pad, info):
        batch = ferrostream.batch_meta(info.get_buffer())
        for frame in batch.frames:
            seen[(frame.source_id, frame.frame_num)] = frame.latency
        return Gst.PadProbeReturn.OK

    p.get_by_name("export").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, checked(probe))
    run(p)
    return seen, read_jsonl(json_path)


def test_latency_lists_every_element_in_order_as_exported(tmp_path):
    out = tmp_path / "objects.jsonl"
    seen, exported = read_latencies(out, tracking=True)
    assert len(seen) == 2 * FRAMES
    assert len(exported) == 2 * FRAMES
    for record in exported:
        key = (record["source_id"], record["frame_num"])
        latency = seen[key]
        assert latency is not None, key
        # The probe after rsmetaexport reads exactly what it wrote.
        assert latency == record["latency"], key
        names = [c["component"] for c in latency["components"]]
        assert names == ["mux", "infer", "tracker", "export"], key
        entries = [c["entry_ns"] for c in latency["components"]]
        assert entries == sorted(entries), key
        assert latency["components"][0]["entry_ns"] == latency["origin_ns"]
        for c in latency["components"]:
            assert c["entry_ns"] <= c["exit_ns"], c
        assert latency["end_to_end_ns"] == latency["components"][-1]["exit_ns"] - latency["origin_ns"]
        in_elements = sum(c["exit_ns"] - c["entry_ns"] for c in latency["components"])
        assert latency["end_to_end_ns"] >= in_elements


def test_no_latency_without_tracking(tmp_path):
    out = tmp_path / "objects.jsonl"
    seen, exported = read_latencies(out, tracking=False)
    assert len(seen) == 2 * FRAMES
    assert all(latency is None for latency in seen.values())
    assert all("latency" not in record for record in exported)
