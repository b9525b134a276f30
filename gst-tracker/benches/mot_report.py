# SPDX-License-Identifier: MIT OR Apache-2.0
"""Scores rstracker (IoU, SORT, ByteTrack) and supervision's ByteTrack on the same synthetic
detections with motmetrics (MOTA, IDF1, ID switches), and compares time per frame.

    python -m venv /tmp/mot && /tmp/mot/bin/pip install "supervision==0.25.1" motmetrics
    cargo run --release -p gst-tracker --example mot_export -- /tmp/mot-data
    /tmp/mot/bin/python gst-tracker/benches/mot_report.py /tmp/mot-data
"""
import os
import sys
import time

import motmetrics as mm
import numpy as np
import supervision as sv


def load(path):
    rows = np.loadtxt(path, delimiter=",", ndmin=2)
    return {int(f): rows[rows[:, 0] == f] for f in np.unique(rows[:, 0])} if len(rows) else {}


def run_supervision(det, frames):
    """supervision's ByteTrack (0.25.1) on the detections; returns MOT rows and us/frame."""
    tracker = sv.ByteTrack(lost_track_buffer=30, frame_rate=30)
    out, spent = [], 0.0
    for f in range(1, frames + 1):
        rows = det.get(f, np.zeros((0, 10)))
        xyxy = np.stack([rows[:, 2], rows[:, 3], rows[:, 2] + rows[:, 4], rows[:, 3] + rows[:, 5]], axis=1) if len(rows) else np.zeros((0, 4))
        d = sv.Detections(xyxy=xyxy.astype(np.float32), confidence=rows[:, 6].astype(np.float32) if len(rows) else np.zeros(0, np.float32),
                          class_id=np.zeros(len(rows), dtype=int))
        start = time.perf_counter()
        tracked = tracker.update_with_detections(d)
        spent += time.perf_counter() - start
        for (x1, y1, x2, y2), tid in zip(tracked.xyxy, tracked.tracker_id):
            out.append([f, tid, x1, y1, x2 - x1, y2 - y1])
    return np.array(out).reshape(-1, 6), spent * 1e6 / frames


def iou_distance(a, b):
    """1 - IoU of [left, top, width, height] rows, NaN where IoU < 0.5 (motmetrics' convention;
    computed here because motmetrics' own helper uses an API NumPy 2 removed)."""
    ax2, ay2 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx2, by2 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.clip(np.minimum(ax2[:, None], bx2[None]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(ay2[:, None], by2[None]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = iw * ih
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    d = 1.0 - inter / np.maximum(union, 1e-9)
    d[d > 0.5] = np.nan
    return d


def score(gt, hyp_rows, frames):
    acc = mm.MOTAccumulator(auto_id=False)
    hyp = {}
    for r in hyp_rows:
        hyp.setdefault(int(r[0]), []).append(r)
    for f in range(1, frames + 1):
        g = gt.get(f, np.zeros((0, 10)))
        h = np.array(hyp.get(f, np.zeros((0, 6)))).reshape(-1, len(hyp_rows[0]) if len(hyp_rows) else 6)
        dist = iou_distance(g[:, 2:6], h[:, 2:6]) if len(g) and len(h) else np.empty((len(g), len(h)))
        acc.update(g[:, 1].astype(int).tolist(), h[:, 1].astype(int).tolist() if len(h) else [], dist, frameid=f)
    m = mm.metrics.create().compute(acc, metrics=["mota", "idf1", "num_switches"], name="x")
    return m["mota"].iloc[0], m["idf1"].iloc[0], int(m["num_switches"].iloc[0])


def main(root):
    print("accuracy (motmetrics, IoU >= 0.5):")
    print(f"{'sequence':<18}{'tracker':<22}{'MOTA':>8}{'IDF1':>8}{'IDSW':>6}")
    for seq in sorted(d for d in os.listdir(root) if d.startswith("accuracy")):
        path = os.path.join(root, seq)
        gt, det = load(os.path.join(path, "gt.txt")), load(os.path.join(path, "det.txt"))
        frames = max(gt)
        sup, _ = run_supervision(det, frames)
        results = [("supervision ByteTrack", sup)]
        for name in ["iou", "sort", "bytetrack"]:
            rows = np.loadtxt(os.path.join(path, f"{name}.txt"), delimiter=",", ndmin=2)[:, :6]
            results.append((f"rstracker {name}", rows))
        for name, rows in results:
            mota, idf1, sw = score(gt, rows, frames)
            print(f"{seq:<18}{name:<22}{mota:>8.3f}{idf1:>8.3f}{sw:>6}")
    print("\ntime per frame (us):")
    print(f"{'objects':>8}{'supervision':>14}{'rs bytetrack':>14}{'speed-up':>10}")
    for seq in sorted((d for d in os.listdir(root) if d.startswith("speed")), key=lambda s: int(s.split("_")[1])):
        path = os.path.join(root, seq)
        det, gt = load(os.path.join(path, "det.txt")), load(os.path.join(path, "gt.txt"))
        _, sup_us = run_supervision(det, max(gt))
        ours = float(open(os.path.join(path, "bytetrack.time")).read())
        print(f"{seq.split('_')[1]:>8}{sup_us:>14.1f}{ours:>14.1f}{sup_us / ours:>9.1f}x")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mot")
