#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The do-it-yourself peer: what users write today instead of a batching inference element.

One Python process per --per-process streams (default 8; N/8 processes). Each starts its streams
as gst-launch-1.0 subprocesses that decode the clip and write raw RGB frames of the network's
size to a pipe:

  filesrc location=CLIP ! qtdemux ! h264parse ! DECODE ! videoconvert ! videoscale
      ! video/x-raw,format=RGB,width=W,height=H ! fdsink fd=1

(DECODE: --decode, default "nvh264dec ! cudadownload"), reads them (a thread per stream), batches
one frame of each stream, runs the model with ONNX Runtime (a plain session.run with numpy
input: host to device inside ONNX Runtime; float models get NCHW f32 * --scale, uint8 models the
frames as they are), brings the outputs to numpy and applies a score threshold and NMS there.
The processes start their streams together once every session is made; the line printed last:

  DIY model=NAME streams=N processes=P frames=F seconds=S fps=F fps-sum=X detections=D errors=E

fps is all frames over the time from the first start to the last frame; fps-sum adds each
process's own frames/s.
"""

import argparse
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def stream_command(clip, decode, width, height):
    return (["gst-launch-1.0", "-q", "filesrc", f"location={clip}", "!", "qtdemux", "!", "h264parse", "!"]
            + shlex.split(decode)
            + ["!", "videoconvert", "!", "videoscale", "!",
               f"video/x-raw,format=RGB,width={width},height={height}", "!", "fdsink", "fd=1"])


def read_frames(proc, frames, width, height):
    """Puts each frame of proc's stdout on the queue as an [H, W, 3] uint8 array; None at the end."""
    import numpy as np

    stride = (width * 3 + 3) // 4 * 4  # GStreamer's RGB rows are 4-byte aligned
    size = stride * height
    pipe = proc.stdout
    try:
        while True:
            buf = bytearray(size)
            view = memoryview(buf)
            got = 0
            while got < size:
                n = pipe.readinto(view[got:])
                if not n:
                    break
                got += n
            if got < size:
                break
            frame = np.frombuffer(buf, np.uint8).reshape(height, stride)[:, : width * 3].reshape(height, width, 3)
            frames.put(frame)
    finally:
        frames.put(None)


def worker(args):
    import numpy as np

    session = common.make_session(args.model, args.device, args.gpu_id)
    inp = session.get_inputs()[0]
    dtype = common.numpy_type(inp.type)
    dims = common.parse_dims(args.infer_dims)
    shape, order = common.frame_shape(inp.shape, dims, args.order)
    height, width = (shape[0], shape[1]) if order == "nhwc" else (shape[1], shape[2])
    out_names = [o.name for o in session.get_outputs()]
    env = dict(os.environ)
    env.pop("GST_DEBUG", None)

    # Warm up at the batch size the streams give (cuDNN tunes itself on the first runs of a
    # shape), as the element and the bare session are measured warm.
    warm = np.zeros([args.streams] + list(shape), dtype=dtype)
    for _ in range(3):
        session.run(out_names, {inp.name: warm})
    print("READY", flush=True)
    if args.wait_go and sys.stdin.readline().strip() != "GO":
        return 1
    t0 = time.time()
    procs, queues, threads = [], [], []
    for _ in range(args.streams):
        p = subprocess.Popen(stream_command(args.clip, args.decode, width, height), stdout=subprocess.PIPE,
                             stderr=sys.stderr, stdin=subprocess.DEVNULL, bufsize=0, env=env)
        q = queue.Queue(maxsize=args.queue)
        t = threading.Thread(target=read_frames, args=(p, q, width, height), daemon=True)
        t.start()
        procs.append(p)
        queues.append(q)
        threads.append(t)

    frames = batches = detections = 0
    active = list(range(args.streams))
    while active:
        batch, still = [], []
        for i in active:
            item = queues[i].get()
            if item is None:
                continue
            batch.append(item)
            still.append(i)
        active = still
        if not batch:
            break
        x = np.stack(batch)  # [B, H, W, 3] uint8
        if order == "nchw":
            x = x.transpose(0, 3, 1, 2)
        if dtype != np.uint8:
            x = x.astype(np.float32)
            if args.scale != 1.0:
                x *= args.scale
            x = x.astype(dtype, copy=False)
        x = np.ascontiguousarray(x)
        outputs = session.run(out_names, {inp.name: x})
        dets = common.postprocess(args.parser, outputs, args.threshold, args.iou)
        detections += sum(len(d[1]) for d in dets)
        frames += len(batch)
        batches += 1
    t1 = time.time()
    errors = 0
    for p in procs:
        if p.wait() != 0:
            errors += 1
    print("DIY-WORKER " + json.dumps({"streams": args.streams, "frames": frames, "batches": batches,
                                      "detections": detections, "t0": t0, "t1": t1, "errors": errors}), flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="the ONNX file")
    ap.add_argument("--clip", required=True, help="an MP4 file with H.264 video")
    ap.add_argument("--streams", type=int, default=8, help="streams in all (N)")
    ap.add_argument("--per-process", type=int, default=8, help="streams a process handles (default 8)")
    ap.add_argument("--infer-dims", help="C,H,W of the network (default: from the model)")
    ap.add_argument("--order", choices=("nchw", "nhwc"), help="input layout (default: from the model)")
    ap.add_argument("--scale", type=float, default=1 / 255, help="float inputs: pixel * scale (default 1/255)")
    ap.add_argument("--parser", choices=("ssd", "yolov8", "detr"), help="default: guessed from the outputs")
    ap.add_argument("--threshold", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.5)
    ap.add_argument("--decode", default="nvh264dec ! cudadownload",
                    help="the decoder part of each stream's pipeline (default 'nvh264dec ! cudadownload')")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--gpu-id", type=int, default=0)
    ap.add_argument("--queue", type=int, default=8, help="frames buffered per stream")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before everything is stopped")
    ap.add_argument("--name", help="the model's name in the output")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--wait-go", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)

    name = args.name or os.path.splitext(os.path.basename(args.model))[0]
    per = max(1, args.per_process)
    groups = [per] * (args.streams // per) + ([args.streams % per] if args.streams % per else [])
    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    workers = []
    for g in groups:
        cmd = [sys.executable, os.path.abspath(__file__)] + passed + ["--worker", "--wait-go", "--streams", str(g)]
        workers.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    deadline = time.time() + args.timeout
    results, failed = [], 0

    def stop_all():
        for w in workers:
            if w.poll() is None:
                w.kill()

    timer = threading.Timer(args.timeout, stop_all)
    timer.daemon = True
    timer.start()
    try:
        # Everyone's session first, then all streams start together.
        for w in workers:
            line = w.stdout.readline()
            if line.strip() != "READY":
                raise SystemExit(f"diy_peer: a worker did not start (said {line.strip()!r})")
        for w in workers:
            w.stdin.write("GO\n")
            w.stdin.flush()
        for w in workers:
            for line in w.stdout:
                if line.startswith("DIY-WORKER "):
                    results.append(json.loads(line.split(" ", 1)[1]))
            if w.wait() != 0:
                failed += 1
    finally:
        timer.cancel()
        stop_all()
    if time.time() > deadline:
        print(f"DIY model={name} streams={args.streams} error=stopped after {args.timeout:.0f} s", flush=True)
        return 1
    if not results:
        print(f"DIY model={name} streams={args.streams} error=no worker finished", flush=True)
        return 1
    frames = sum(r["frames"] for r in results)
    seconds = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    fps_sum = sum(r["frames"] / (r["t1"] - r["t0"]) for r in results if r["t1"] > r["t0"])
    errors = sum(r["errors"] for r in results) + failed
    print(f"DIY model={name} streams={args.streams} processes={len(groups)} frames={frames} "
          f"seconds={seconds:.3f} fps={frames / max(seconds, 1e-9):.1f} fps-sum={fps_sum:.1f} "
          f"detections={sum(r['detections'] for r in results)} errors={errors}", flush=True)
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
