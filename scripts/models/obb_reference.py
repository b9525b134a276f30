#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Reference oriented boxes of a YOLOv8/YOLO11-OBB ONNX model on an image, from ONNX Runtime's
Python API with the pre-processing of pipelines/yolov8_obb.txt (aspect kept, symmetric padding of
0, bilinear resize, RGB scaled to 0..1), as the tests' expected values.

Boxes are put in the form rstrtinfer gives them, the one nearest upright (sides swapped where
the box is turned by a quarter turn or more either way, angle in [-pi/4, pi/4)), and suppressed
class by class by their exact rotated IoU, as rstrtinfer clusters them.

Needs Python packages onnxruntime, numpy and opencv-python-headless (pip install them into any
virtual environment). Usage: obb_reference.py MODEL IMAGE [MIN_SCORE]
Prints one line per box of score >= MIN_SCORE (default 0.5), most confident first:
class score cx cy w h angle, in image pixels (angle in radians, clockwise on the screen)."""
import math
import sys

import cv2
import numpy as np
import onnxruntime as ort
from letterbox import letterbox

PRE_CLUSTER = 0.3
NMS_IOU = 0.45


def corners(cx, cy, w, h, angle):
    c, s = math.cos(angle), math.sin(angle)
    return [(cx + x * c - y * s, cy + x * s + y * c)
            for x, y in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))]


def area(poly):
    n = len(poly)
    return abs(sum(poly[i][0] * poly[(i + 1) % n][1] - poly[(i + 1) % n][0] * poly[i][1]
                   for i in range(n))) / 2 if n >= 3 else 0.0


def clip(subject, window):
    out = subject
    for i in range(len(window)):
        a, b = window[i], window[(i + 1) % len(window)]
        side = lambda p: (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])  # noqa: E731
        points, out = out, []
        for j in range(len(points)):
            p, q = points[j], points[(j + 1) % len(points)]
            sp, sq = side(p), side(q)
            if sp >= 0:
                out.append(p)
            if (sp >= 0) != (sq >= 0):
                t = sp / (sp - sq)
                out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
        if not out:
            break
    return out


def rotated_iou(a, b):
    pa, pb = corners(*a), corners(*b)
    inter = area(clip(pa, pb))
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def boxes(session, img, min_score):
    size = session.get_inputs()[0].shape[2]
    x, sx, sy, dx, dy = letterbox(img, size)
    p = session.run(None, {session.get_inputs()[0].name: x})[0][0]
    classes = p.shape[0] - 5
    found = []
    for i in range(p.shape[1]):
        scores = p[4:4 + classes, i]
        c = int(np.argmax(scores))
        if scores[c] < PRE_CLUSTER:
            continue
        w, h, angle = float(p[2, i]), float(p[3, i]), float(p[4 + classes, i])
        quarters = math.floor((angle + math.pi / 4) / (math.pi / 2))
        if quarters % 2:
            w, h = h, w
        angle -= quarters * math.pi / 2
        found.append((c, float(scores[c]), (float(p[0, i]), float(p[1, i]), w, h, angle)))
    found.sort(key=lambda d: -d[1])
    kept = []
    for d in found:
        if all(k[0] != d[0] or rotated_iou(k[2], d[2]) <= NMS_IOU for k in kept):
            kept.append(d)
    result = []
    for c, score, (cx, cy, w, h, angle) in kept:
        if score >= min_score:
            result.append((c, score, ((cx - dx) / sx, (cy - dy) / sy, w / sx, h / sy, angle)))
    return result


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
    img = cv2.imread(sys.argv[2], cv2.IMREAD_COLOR)
    if img is None:
        sys.exit(f"cannot read {sys.argv[2]}")
    min_score = float(sys.argv[3]) if len(sys.argv) == 4 else 0.5
    for c, score, (cx, cy, w, h, angle) in boxes(session, img, min_score):
        print(f"{c} {score:.3f} {cx:.1f} {cy:.1f} {w:.1f} {h:.1f} {angle:.4f}")


if __name__ == "__main__":
    main()
