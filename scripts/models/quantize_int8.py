#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Quantise an image model to INT8 with Q/DQ nodes (ONNX Runtime's static quantisation), for
network-mode=int8 on backend=openvino.

Calibration images: every JPEG/PNG in --images (and, from each, crops at several places and
sizes), pre-processed as pipelines/imagenet_secondary.txt does for MobileNetV2: RGB resized to
224x224, (x - mean) * 0.017352074, NCHW f32. Weights are quantised per channel (int8, symmetric),
activations per tensor (uint8), their ranges calibrated by --method.

Usage: quantize_int8.py MODEL.onnx OUT.onnx --images DIR
Needs onnx, onnxruntime, numpy and pillow from PyPI.
"""
import argparse
import glob
import os

import numpy as np
from PIL import Image
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)

MEAN = np.array([123.675, 116.28, 103.53], dtype=np.float32)
SCALE = 0.017352074


def tensors(images, side):
    for path in images:
        image = Image.open(path).convert("RGB")
        w, h = image.size
        boxes = [(0, 0, w, h)]
        for f in (0.3, 0.5, 0.7):
            cw, ch = int(w * f), int(h * f)
            for x, y in ((0, 0), (w - cw, 0), (0, h - ch), (w - cw, h - ch), ((w - cw) // 2, (h - ch) // 2)):
                boxes.append((x, y, x + cw, y + ch))
        for box in boxes:
            crop = image.crop(box).resize((side, side), Image.BILINEAR)
            x = (np.asarray(crop, dtype=np.float32) - MEAN) * SCALE
            yield x.transpose(2, 0, 1)[None]


class Reader(CalibrationDataReader):
    def __init__(self, name, batches):
        self.items = iter({name: b} for b in batches)

    def get_next(self):
        return next(self.items, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--images", required=True, help="a folder of JPEG/PNG calibration images")
    ap.add_argument("--side", type=int, default=224)
    ap.add_argument("--crops", type=int, default=160,
                    help="calibration tensors at most, evenly chosen (percentile and entropy keep "
                         "every activation of every tensor in memory: about 26 MB each here)")
    ap.add_argument("--method", choices=("minmax", "percentile", "entropy"), default="percentile",
                    help="how activation ranges are calibrated (default percentile: 99.999 %%)")
    args = ap.parse_args()
    images = sorted(glob.glob(os.path.join(args.images, "*.jpg")) + glob.glob(os.path.join(args.images, "*.png")))
    if not images:
        raise SystemExit(f"no JPEG or PNG images in {args.images}")
    import onnx
    name = onnx.load(args.model, load_external_data=False).graph.input[0].name
    batches = list(tensors(images, args.side))
    if len(batches) > args.crops:
        step = len(batches) / args.crops
        batches = [batches[int(i * step)] for i in range(args.crops)]
    method = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
              "entropy": CalibrationMethod.Entropy}[args.method]
    quantize_static(args.model, args.out, Reader(name, batches), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=method)
    print(f"{args.out}: calibrated on {len(batches)} crops of {len(images)} images")


if __name__ == "__main__":
    main()
