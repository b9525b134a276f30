#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The bare ONNX Runtime session: the ceiling of an element that runs the same model.

Random input of the model's input type (uint8, float32 or float16: an FP16 conversion of a model
takes float16), already on the device (an OrtValue on CUDA device 0), I/O binding with the
outputs left on the device, warm-up runs, then timed runs (each synchronised) for at least
--seconds. For each batch size it prints one line:

  BARE model=NAME batch=N runs=R seconds=S fps=F ms-per-batch=M provider=P input-type=T

or, when that batch size fails, BARE model=NAME batch=N error=TEXT.

--provider-options passes ONNX Runtime CUDA provider options (as an element recorded them:
prefer_nhwc, cudnn_conv_algo_search, enable_cuda_graph, use_tf32, ...). With
enable_cuda_graph=1 each batch size gets a session of its own (one captured graph per session)
and outputs allocated before the first run, so the replayed graph writes where it was captured.

  scripts/bench/bare_session.py MODEL.onnx --batch 1,8,16 [--infer-dims 3,640,640 | --input-shape 300,300,3]
      [--provider-options prefer_nhwc=1,cudnn_conv_algo_search=HEURISTIC]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def parse_options(text):
    """'k=v,k=v' -> {k: v} (strings, as ONNX Runtime takes provider options)."""
    options = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--provider-options: '{item}' is not KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def make_session(path, device, gpu_id, options):
    """common.make_session, with OPTIONS (a dict) added to the CUDA provider's when given."""
    if not options:
        return common.make_session(path, device, gpu_id)
    import onnxruntime as ort

    if device != "cuda":
        raise SystemExit("--provider-options are CUDA provider options: they need --device cuda")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        raise SystemExit(
            f"onnxruntime {ort.__version__} at {ort.__file__} has no CUDAExecutionProvider "
            f"(providers: {', '.join(ort.get_available_providers())})")
    cuda = {"device_id": str(gpu_id), **options}
    session = ort.InferenceSession(path, providers=[("CUDAExecutionProvider", cuda), "CPUExecutionProvider"])
    if session.get_providers()[0] != "CUDAExecutionProvider":
        raise SystemExit(f"the session runs on {session.get_providers()}, not CUDA")
    return session


def effective_options(session, options):
    """The CUDA provider's value of each key of OPTIONS as the session reports it."""
    have = session.get_provider_options().get("CUDAExecutionProvider", {})
    return {k: have.get(k, "?") for k in options}


def wants_cuda_graph(options):
    return str(options.get("enable_cuda_graph", "0")).strip().lower() in ("1", "true")


def output_values(session, n, gpu_id, probe):
    """OrtValues on CUDA device GPU_ID for every output at batch N: shapes from the model where
    only the leading (batch) dimension is symbolic, else from PROBE() (the shapes of one run)."""
    import numpy as np
    import onnxruntime as ort

    types = {**common.ONNX_TYPES, "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}
    outputs = session.get_outputs()
    shapes = [[n if i == 0 and not isinstance(d, int) else d for i, d in enumerate(o.shape)] for o in outputs]
    if not all(isinstance(d, int) and d >= 0 for s in shapes for d in s):
        shapes = probe()
    values = {}
    for o, shape in zip(outputs, shapes):
        if o.type not in types:
            raise SystemExit(f"unsupported model output type {o.type} ({o.name})")
        values[o.name] = ort.OrtValue.ortvalue_from_shape_and_type(list(shape), types[o.type], "cuda", gpu_id)
    return values


def time_batch(session, data, args, options, graph):
    """Binds DATA (one batch) on the device and the outputs there, warms up, then runs until
    --min-runs and --seconds are reached. Returns (runs, seconds)."""
    import onnxruntime as ort

    dev = "cuda" if args.device == "cuda" else "cpu"
    dev_id = args.gpu_id if dev == "cuda" else 0
    inp = session.get_inputs()[0]
    value = ort.OrtValue.ortvalue_from_numpy(data, dev, dev_id)
    io = session.io_binding()
    io.bind_ortvalue_input(inp.name, value)
    if graph:
        def probe():
            plain = make_session(args.model, args.device, args.gpu_id, {**options, "enable_cuda_graph": "0"})
            return [o.shape for o in plain.run(None, {inp.name: data})]

        outputs = output_values(session, data.shape[0], dev_id, probe)
        for name, out in outputs.items():
            io.bind_ortvalue_output(name, out)
    else:
        for o in session.get_outputs():
            io.bind_output(o.name, dev, dev_id)
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
            return runs, elapsed


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
    ap.add_argument("--provider-options", metavar="K=V,K=V",
                    help="CUDA provider options, e.g. prefer_nhwc=1,cudnn_conv_algo_search=HEURISTIC,"
                         "enable_cuda_graph=0,use_tf32=1 (default: ONNX Runtime's)")
    ap.add_argument("--seconds", type=float, default=2.0, help="least timed time per batch size")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--name", help="the model's name in the output (default: the file's)")
    args = ap.parse_args(argv)

    import numpy as np
    import onnxruntime as ort

    batches = [int(b) for b in args.batch.split(",") if b.strip()]
    name = args.name or os.path.splitext(os.path.basename(args.model))[0]
    options = parse_options(args.provider_options)
    graph = wants_cuda_graph(options)
    session = make_session(args.model, args.device, args.gpu_id, options)
    provider = session.get_providers()[0]
    inp = session.get_inputs()[0]
    dtype = common.numpy_type(inp.type)
    input_type = np.dtype(dtype).name
    shape, order = common.frame_shape(inp.shape, common.parse_dims(args.infer_dims), args.order,
                                      common.parse_dims(args.input_shape))
    applied = ", ".join(f"{k}={v}" for k, v in effective_options(session, options).items())
    print(f"bare_session: {name}: input {inp.name} {inp.type} {list(inp.shape)} -> [N, {', '.join(map(str, shape))}] "
          f"({order}); outputs {', '.join(o.name for o in session.get_outputs())}; onnxruntime {ort.__version__} "
          f"{provider}; provider options: {applied or 'defaults'}", file=sys.stderr, flush=True)
    rng = np.random.default_rng(0)
    failed = 0
    for i, n in enumerate(batches):
        try:
            full = (n, *shape)
            if np.issubdtype(dtype, np.integer):
                data = rng.integers(0, 256, size=full, dtype=np.int64).astype(dtype)
            else:
                data = rng.random(full, dtype=np.float32).astype(dtype)
            if graph and i > 0:
                # A captured graph replays one shape: a new session for each batch size.
                session = None
                session = make_session(args.model, args.device, args.gpu_id, options)
            runs, elapsed = time_batch(session, data, args, options, graph)
            print(f"BARE model={name} batch={n} runs={runs} seconds={elapsed:.3f} fps={n * runs / elapsed:.1f} "
                  f"ms-per-batch={1000 * elapsed / runs:.3f} provider={provider} input-type={input_type}", flush=True)
            del data
        except Exception as e:  # noqa: BLE001 - one failing batch size must not hide the others
            failed += 1
            text = " ".join(str(e).split())[:300]
            print(f"BARE model={name} batch={n} error={text}", flush=True)
    return 1 if failed == len(batches) else 0


if __name__ == "__main__":
    sys.exit(main())
