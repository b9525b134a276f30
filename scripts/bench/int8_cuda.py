#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Does network-mode=int8 pay on ONNX Runtime's CUDA provider? Bare sessions of one model in
FP32, FP16 (the element's conversion, when given) and INT8 with Q/DQ nodes, same batch.

The INT8 model is made here with ONNX Runtime's static quantisation: Q/DQ format, weights per
channel and activations per tensor, both signed and symmetric (the form TensorRT also takes),
calibrated on --calibration random inputs: the speed does not depend on the data (for accuracy,
scripts/models/quantize_int8.py calibrates on real frames). Each model runs in
scripts/bench/bare_session.py (input on the device, I/O binding, outputs left there); the last
lines are

  INT8 model=NAME batch=N fp32=F fp16=H int8=I int8/fp32=R int8/fp16=S

Usage: int8_cuda.py MODEL.onnx --batch 32 --infer-dims 3,640,640 [--fp16 MODEL-fp16.onnx]
       [--provider-options K=V,...] [--calibration 8] [--seconds 3] [--quantization-tools DIR]
Needs onnx, onnxruntime (the GPU build) and numpy.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def quantise(model, out, shape, count, tools=None):
    import onnxruntime as ort

    if tools:
        # A build trimmed of its Python tools (the GPU check's): take `quantization` from DIR.
        ort.__path__.append(tools)
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    name = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()[0].name
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter({name: rng.random(shape, dtype=np.float32)} for _ in range(count))

        def get_next(self):
            return next(self.items, None)

    prepared = out + ".pre.onnx"
    quant_pre_process(model, prepared, skip_symbolic_shape=True)
    quantize_static(prepared, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    os.remove(prepared)


def bare_fps(model, args, label):
    cmd = [sys.executable, os.path.join(HERE, "bare_session.py"), model, "--batch", str(args.batch),
           "--infer-dims", args.infer_dims, "--seconds", str(args.seconds), "--name", label]
    if args.provider_options:
        cmd += ["--provider-options", args.provider_options]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    sys.stdout.write(out.stdout)
    m = re.search(r"fps=([0-9.]+)", out.stdout)
    if not m:
        sys.stderr.write(out.stderr[-2000:])
        return None
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--fp16", help="the element's FP16 conversion of MODEL")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--infer-dims", default="3,640,640")
    ap.add_argument("--provider-options", help="CUDA provider options for every session")
    ap.add_argument("--calibration", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--quantization-tools", metavar="DIR",
                    help="a folder holding onnxruntime's `quantization` package, for an "
                         "onnxruntime installed without it")
    args = ap.parse_args()
    dims = [int(d) for d in args.infer_dims.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        int8 = os.path.join(tmp, "int8.onnx")
        quantise(args.model, int8, [1] + dims, args.calibration, args.quantization_tools)
        fps = {"fp32": bare_fps(args.model, args, "fp32"),
               "fp16": bare_fps(args.fp16, args, "fp16") if args.fp16 else None,
               "int8": bare_fps(int8, args, "int8")}
    ratio = lambda a, b: f"{a / b:.2f}" if a and b else "-"  # noqa: E731
    name = os.path.basename(args.model)
    print(f"INT8 model={name} batch={args.batch} " + " ".join(f"{k}={v or '-'}" for k, v in fps.items())
          + f" int8/fp32={ratio(fps['int8'], fps['fp32'])} int8/fp16={ratio(fps['int8'], fps['fp16'])}")


if __name__ == "__main__":
    main()
