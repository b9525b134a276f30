#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Reference people and keypoints of a YOLOv8/YOLO11-pose ONNX model on frames of a video, from
ONNX Runtime's Python API with the pre-processing of pipelines/yolo11_pose.txt (aspect kept,
symmetric padding of 0, bilinear resize, RGB scaled to 0..1), as the tests' expected values.

Needs Python packages onnxruntime, numpy and opencv-python-headless (pip install them into any
virtual environment). Usage: pose_reference.py MODEL VIDEO FRAME [FRAME...]
Prints, per frame, each person of score >= 0.5 after NMS (IoU 0.45): the box (left, top, right,
bottom) and the 17 keypoints (x, y, confidence), in frame pixels, rounded to 0.1."""
import sys

import cv2
import numpy as np
import onnxruntime as ort
from letterbox import letterbox


def people(session, img, min_score=0.5, iou=0.45):
    size = session.get_inputs()[0].shape[2]
    x, sx, sy, dx, dy = letterbox(img, size)
    p = session.run(None, {session.get_inputs()[0].name: x})[0][0]
    boxes = np.stack([p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2], 1)
    kept = []
    for i in np.argsort(-p[4], kind="stable"):
        if p[4, i] < min_score:
            break
        b = boxes[i]
        overlaps = False
        for j in kept:
            c = boxes[j]
            iw = max(0.0, min(b[2], c[2]) - max(b[0], c[0]))
            ih = max(0.0, min(b[3], c[3]) - max(b[1], c[1]))
            inter = iw * ih
            union = (b[2] - b[0]) * (b[3] - b[1]) + (c[2] - c[0]) * (c[3] - c[1]) - inter
            overlaps |= union > 0 and inter / union > iou
        if not overlaps:
            kept.append(i)
    result = []
    for i in kept:
        box = [(boxes[i][0] - dx) / sx, (boxes[i][1] - dy) / sy,
               (boxes[i][2] - dx) / sx, (boxes[i][3] - dy) / sy]
        k = p[5:, i].reshape(-1, 3)
        points = [((kx - dx) / sx, (ky - dy) / sy, kc) for kx, ky, kc in k]
        result.append((float(p[4, i]), box, points))
    return result


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
    video = cv2.VideoCapture(sys.argv[2])
    wanted = sorted(int(f) for f in sys.argv[3:])
    index = 0
    while wanted:
        ok, img = video.read()
        if not ok:
            sys.exit(f"the video ends before frame {wanted[0]}")
        if index == wanted[0]:
            wanted.pop(0)
            for score, box, points in people(session, img):
                print(f"frame {index} score {score:.3f} box {[round(float(v), 1) for v in box]}")
                print("  points", [(round(float(x), 1), round(float(y), 1), round(float(c), 2)) for x, y, c in points])
        index += 1


if __name__ == "__main__":
    main()
