#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The bare ONNX Runtime session: the ceiling of an element that runs the same model.

Random input of the model's type, already on the device (an OrtValue on CUDA device 0), I/O
binding with the outputs left on the device, warm-up runs, then timed runs (each synchronised)
for at least --seconds. For each batch size it prints one line:

  BARE model=NAME batch=N runs=R seconds=S fps=F ms-per-batch=M provider=P

or, when that batch size fails, BARE model=NAME batch=N error=TEXT.

  scripts/bench/bare_session.py MODEL.onnx --batch 1,8,16 [--infer-dims 3,640,640 | --input-shape 300,300,3]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="the ONNX file")
    ap.add_argument("--batch", default="1", help="batch sizes, comma-separated (default 1)")
    ap.add_argument("--input-shape", help="one frame's input shape in the model's order, e.g. 300,300,3 "
                    "(a leading batch dimension is replaced)")
    ap.add_argument("--infer-dims", help="C,H,W of the network (nvinfer's infer-dims), laid out by --order")
    ap.add_argument("--order", choices=("nchw", "nhwc"), help="input layout (default: from the model)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--gpu-id", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=2.0, help="least timed time per batch size")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--name", help="the model's name in the output (default: the file's)")
    args = ap.parse_args(argv)

    import numpy as np
    import onnxruntime as ort

    batches = [int(b) for b in args.batch.split(",") if b.strip()]
    name = args.name or os.path.splitext(os.path.basename(args.model))[0]
    session = common.make_session(args.model, args.device, args.gpu_id)
    provider = session.get_providers()[0]
    inp = session.get_inputs()[0]
    dtype = common.numpy_type(inp.type)
    shape, order = common.frame_shape(inp.shape, common.parse_dims(args.infer_dims), args.order,
                                      common.parse_dims(args.input_shape))
    print(f"bare_session: {name}: input {inp.name} {inp.type} {list(inp.shape)} -> [N, {', '.join(map(str, shape))}] "
          f"({order}); outputs {', '.join(o.name for o in session.get_outputs())}; onnxruntime {ort.__version__} "
          f"{provider}", file=sys.stderr, flush=True)
    rng = np.random.default_rng(0)
    dev = "cuda" if args.device == "cuda" else "cpu"
    failed = 0
    for n in batches:
        try:
            full = (n, *shape)
            if np.issubdtype(dtype, np.integer):
                data = rng.integers(0, 256, size=full, dtype=np.int64).astype(dtype)
            else:
                data = rng.random(full, dtype=np.float32).astype(dtype)
            value = ort.OrtValue.ortvalue_from_numpy(data, dev, args.gpu_id if dev == "cuda" else 0)
            io = session.io_binding()
            io.bind_ortvalue_input(inp.name, value)
            for o in session.get_outputs():
                io.bind_output(o.name, dev, args.gpu_id if dev == "cuda" else 0)
            io.synchronize_inputs()
            for _ in range(args.warmup):
                session.run_with_iobinding(io)
            io.synchronize_outputs()
            runs = 0
            t0 = time.perf_counter()
            while True:
                session.run_with_iobinding(io)
                io.synchronize_outputs()
                runs += 1
                elapsed = time.perf_counter() - t0
                if runs >= args.min_runs and elapsed >= args.seconds:
                    break
            print(f"BARE model={name} batch={n} runs={runs} seconds={elapsed:.3f} fps={n * runs / elapsed:.1f} "
                  f"ms-per-batch={1000 * elapsed / runs:.3f} provider={provider}", flush=True)
            del io, value, data
        except Exception as e:  # noqa: BLE001 - one failing batch size must not hide the others
            failed += 1
            text = " ".join(str(e).split())[:300]
            print(f"BARE model={name} batch={n} error={text}", flush=True)
    return 1 if failed == len(batches) else 0


if __name__ == "__main__":
    sys.exit(main())
