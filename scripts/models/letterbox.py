# SPDX-License-Identifier: MIT OR Apache-2.0
"""The pre-processing of the pose and oriented-box configurations in pipelines/ (aspect kept,
symmetric padding of 0, bilinear resize, RGB scaled to 0..1), for the reference scripts beside
this file."""
import cv2
import numpy as np


def letterbox(img, size):
    """`img` (BGR, as OpenCV reads it) as a [1, 3, size, size] f32 tensor, with the scale on each
    axis and the left and top padding."""
    h, w = img.shape[:2]
    scale = min(size / w, size / h)
    cw, ch = round(w * scale), round(h * scale)
    left, top = (size - cw) // 2, (size - ch) // 2
    out = np.zeros((size, size, 3), np.uint8)
    out[top:top + ch, left:left + cw] = cv2.resize(img, (cw, ch), interpolation=cv2.INTER_LINEAR)
    x = out[:, :, ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0
    return x, cw / w, ch / h, left, top
