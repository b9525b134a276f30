#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""CPU inference backends side by side, in one run on this machine (docs/BENCHMARKS.md).

1. The 4-camera demo, whole (pipelines/demo-4cam.sh --frames F: decoding, batching, inference,
   tracking, analytics, tiling, drawing and H.264 encoding), with ONNX Runtime FP32, OpenVINO
   FP32 and OpenVINO's reduced precision (network-mode=fp16: BF16 or FP16 where the CPU computes
   it), in turn for --rounds rounds: median frames/s and the ratio to ONNX Runtime.
2. The element against the DIY peer (scripts/bench/diy_peer.py: gst-launch-1.0 subprocesses
   into Python, ONNX Runtime, NMS in numpy) on the same --streams streams of
   carphone_pristine.mp4 decoded by avdec_h264, COCO SSDLite: the element's steady frames/s
   (rstrtinfer's summary line) with each backend, the peer's frames/s, and the ratios.

Usage: scripts/bench/cpu_backends.py [--frames 200] [--rounds 3] [--streams 8]
Needs the release plugin (cargo build --release -p gst-ferrostream), the models and the footage
(scripts/setup.sh), and for the DIY peer a Python with numpy and onnxruntime (--python; the
inference server environment of scripts/install-kserve.sh has both).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from gpu_bench import parse_summary  # noqa: E402

CACHE = os.environ.get("FERROSTREAM_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ferrostream")

# (name, backend, network-mode)
BACKENDS = [
    ("ONNX Runtime FP32", "onnxruntime", "fp32"),
    ("OpenVINO FP32", "openvino", "fp32"),
    ("OpenVINO reduced", "openvino", "fp16"),
]


def find(name, dirs):
    for d in dirs:
        if d and os.path.isfile(os.path.join(d, name)):
            return os.path.join(d, name)
    sys.exit(f"error: {name} not found in {dirs} (run scripts/setup.sh)")


def run(cmd, env, timeout):
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done


def demo_fps(env, frames, backend, mode, out):
    done = run([os.path.join(REPO, "pipelines", "demo-4cam.sh"), "--frames", str(frames),
                "--backend", backend, "--precision", mode, "--output", out], env, 900)
    fps = re.search(r"^all: .* frames/s: ([\d.]+)", done.stdout, re.M)
    ran = re.search(r"^inference: (.*)$", done.stdout, re.M)
    if not fps or not ran:
        sys.exit(f"error: no summary from the demo:\n{done.stdout}")
    return float(fps.group(1)), ran.group(1)


def element_fps(env, clip, streams, backend, mode):
    config = os.path.join(REPO, "pipelines", "coco_ssd.txt")
    desc = (f"rsstreammux name=mux batch-size={streams} batched-push-timeout=40000 "
            f"! rstrtinfer config-file-path={config} batch-size={streams} backend={backend} "
            f"network-mode={mode} ! fakesink sync=false")
    for i in range(streams):
        desc += (f" filesrc location={clip} ! qtdemux ! h264parse ! avdec_h264 ! videoconvert "
                 f"! queue ! mux.sink_{i}")
    env = dict(env, GST_DEBUG="*:1,rstrtinfer:4", GST_DEBUG_NO_COLOR="1")
    done = run(["gst-launch-1.0", "-e"] + desc.split(), env, 900)
    summary = parse_summary(done.stdout + done.stderr)
    if not summary or not summary.get("steady"):
        sys.exit(f"error: no summary line from rstrtinfer:\n{done.stderr[-4000:]}")
    return summary["steady"]


def diy_fps(python, env, clip, streams, model):
    done = run([python, os.path.join(HERE, "diy_peer.py"), model, "--clip", clip,
                "--streams", str(streams), "--device", "cpu", "--decode", "avdec_h264",
                "--parser", "ssd", "--infer-dims", "3,300,300", "--order", "nhwc",
                "--threshold", "0.4", "--iou", "0.5"], env, 900)
    line = [l for l in done.stdout.splitlines() if l.startswith("DIY ")]
    fps = re.search(r" fps=([\d.]+)", line[-1]) if line else None
    if not fps:
        sys.exit(f"error: no result from the DIY peer:\n{done.stdout}\n{done.stderr[-4000:]}")
    return float(fps.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=200, help="frames per demo camera")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--streams", type=int, default=8, help="streams of the element/DIY runs")
    ap.add_argument("--plugin-dir", default=os.path.join(REPO, "target", "release"))
    ap.add_argument("--python", default=sys.executable,
                    help="the DIY peer's interpreter, with numpy and onnxruntime")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.plugin_dir, "libgstferrostream.so")):
        sys.exit(f"error: no libgstferrostream.so in {args.plugin_dir} "
                 "(cargo build --release -p gst-ferrostream)")
    registry = tempfile.mkdtemp(prefix="ferrostream-bench-")
    env = dict(os.environ, GST_PLUGIN_PATH=args.plugin_dir,
               GST_REGISTRY=os.path.join(registry, "registry.bin"))
    media = [os.environ.get("FERROSTREAM_MEDIA_DIR"), os.path.join(REPO, "..", "shared", "media"),
             os.path.join(CACHE, "media")]
    models = [os.environ.get("FERROSTREAM_MODEL_DIR"), os.path.join(REPO, "..", "shared", "models"),
              os.path.join(CACHE, "models")]
    clip = find("carphone_pristine.mp4", media)
    model = find("coco_ssdlite_mobilenet_v2.onnx", models)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores")

    rates = {name: [] for name, _, _ in BACKENDS}
    ran = {}
    out = os.path.join(registry, "demo.mp4")
    for r in range(args.rounds):
        for name, backend, mode in BACKENDS:
            fps, ran[name] = demo_fps(env, args.frames, backend, mode, out)
            rates[name].append(fps)
            print(f"round {r + 1}: demo, {name} ({ran[name]}): {fps:.1f} frames/s", flush=True)
    base = statistics.median(rates[BACKENDS[0][0]])
    print(f"\n4-camera demo, --frames {args.frames}, median of {args.rounds}:")
    print("| backend | ran | frames/s | vs ONNX Runtime |\n|---|---|---|---|")
    for name, _, _ in BACKENDS:
        m = statistics.median(rates[name])
        print(f"| {name} | {ran[name]} | {m:.1f} | {m / base:.2f}x |")

    element = {name: element_fps(env, clip, args.streams, b, m) for name, b, m in BACKENDS}
    diy = diy_fps(args.python, env, clip, args.streams, model)
    print(f"\n{args.streams} streams of carphone_pristine.mp4 (avdec_h264), COCO SSDLite:")
    print("| | frames/s | vs DIY |\n|---|---|---|")
    print(f"| DIY peer (Python, ONNX Runtime FP32) | {diy:.1f} | 1.00x |")
    for name, fps in element.items():
        print(f"| element, {name} | {fps:.1f} | {fps / diy:.2f}x |")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
