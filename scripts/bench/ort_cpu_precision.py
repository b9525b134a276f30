#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""ONNX Runtime's CPU provider on a model and on its FP16 conversion (the element's converter,
`cargo run -p ferrostream-inference --example fp16 -- MODEL DIR`): frames per second of each,
one frame of random input a run, for --seconds after warm-up runs. This is why network-mode=fp16
on the CPU provider runs FP32 (the provider computes most FP16 operators in FP32 between casts).

Usage: ort_cpu_precision.py MODEL.onnx FP16.onnx [--shape 1,3,480,640] [--seconds 4] [--threads 0]
Prints: CPU model=NAME fp32=F fp16=H fp16/fp32=R
Needs numpy and onnxruntime.
"""
import argparse
import os
import time

import numpy as np
import onnxruntime as ort

TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(uint8)": np.uint8}


def fps(path, seconds, threads, fixed):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    i = session.get_inputs()[0]
    shape = fixed or [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
    dtype = TYPES[i.type]
    x = (np.random.default_rng(0).random(shape) * (255 if dtype == np.uint8 else 1)).astype(dtype)
    for _ in range(3):
        session.run(None, {i.name: x})
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        session.run(None, {i.name: x})
        runs += 1
    return runs / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("fp16")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--shape", help="the input's shape, e.g. 1,3,480,640 (default: the model's, "
                                    "dynamic dimensions 1)")
    args = ap.parse_args()
    shape = [int(d) for d in args.shape.split(",")] if args.shape else None
    a = fps(args.model, args.seconds, args.threads, shape)
    b = fps(args.fp16, args.seconds, args.threads, shape)
    print(f"CPU model={os.path.basename(args.model)} fp32={a:.1f} fp16={b:.1f} fp16/fp32={b / a:.2f}")


if __name__ == "__main__":
    main()
