#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Exports heavier detectors for GPU benchmarks from their public definitions: YOLOv8s/m and
RT-DETR-L as the `ultralytics` package defines them (its model YAMLs), with random weights drawn
from a fixed seed. No weights are downloaded: the models detect nothing meaningful and exist to
load a GPU the way the real ones do (same layers, shapes and outputs).

    python3 scripts/models/export_ultralytics.py --out DIR [--models yolov8s,yolov8m,rtdetr-l]
        [--seed 0] [--imgsz 640] [--no-check]

Writes DIR/yolov8s_640.onnx, DIR/yolov8m_640.onnx, DIR/rtdetr_l_640.onnx (the size in the name
follows --imgsz): input `images` f32 NCHW [N,3,640,640] (RGB, 0..1), dynamic batch; output
`output0`:
  YOLOv8   [N,84,8400]  cx,cy,w,h in input pixels, then 80 class scores (sigmoid)
  RT-DETR  [N,300,84]   cx,cy,w,h normalised to the input, then 80 class scores (sigmoid)
The same seed gives the same files, byte for byte. Where onnxruntime is installed, each file is
run at batch 1 and 2 on random input and its outputs are printed.
Needs torch and ultralytics (and onnx); never touches the network.
"""
import argparse
import inspect
import os
import sys

# ultralytics must not try to reach the network or install anything.
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_VERBOSE", "false")

FILES = {"yolov8s": "yolov8s_{}.onnx", "yolov8m": "yolov8m_{}.onnx", "rtdetr-l": "rtdetr_l_{}.onnx"}


def build(name):
    from ultralytics.nn.tasks import DetectionModel, RTDETRDetectionModel

    if name.startswith("yolov8"):
        return DetectionModel(f"{name}.yaml", nc=80, verbose=False)
    if name == "rtdetr-l":
        return RTDETRDetectionModel("rtdetr-l.yaml", nc=80, verbose=False)
    raise SystemExit(f"unknown model {name!r} (known: {', '.join(FILES)})")


def export(name, out_dir, seed, imgsz):
    import torch

    torch.manual_seed(seed)
    model = build(name).eval()
    if name == "rtdetr-l":
        # Recent ultralytics releases end RT-DETR's export with their own top-k ([N,300,6]:
        # box, score, class index); keep the decoder's own rows instead (boxes and every class
        # score, [N,300,84]), the layout DETR-family exports share.
        from ultralytics.nn.modules.head import RTDETRDecoder

        RTDETRDecoder.postprocess = lambda self, boxes, scores: torch.cat((boxes, scores), -1)
    for m in model.modules():
        # The inference heads return only the decoded predictions in export mode.
        if hasattr(m, "export"):
            m.export = True
        if hasattr(m, "format"):
            m.format = "onnx"
    path = os.path.join(out_dir, FILES[name].format(imgsz))
    dummy = torch.zeros(1, 3, imgsz, imgsz)
    with torch.no_grad():
        y = model(dummy)
    y = y[0] if isinstance(y, (list, tuple)) else y
    kwargs = dict(input_names=["images"], output_names=["output0"],
                  dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}},
                  opset_version=17, do_constant_folding=True)
    if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
        # A torch without the dynamo exporter (< 2.5): the legacy one is the only one.
        torch.onnx.export(model, dummy, path, **kwargs)
    else:
        try:
            torch.onnx.export(model, dummy, path, dynamo=False, **kwargs)
        except Exception as e:  # the legacy exporter gave up: try the dynamo one
            export_dynamo(name, model, path, imgsz, kwargs["opset_version"], e)
    print(f"{path}: output0 {list(y.shape)} (batch 1)", flush=True)
    return path


def export_dynamo(name, model, path, imgsz, opset, error):
    import torch

    print(f"{name}: the legacy ONNX exporter failed ({type(error).__name__}: {error});"
          " trying dynamo=True", file=sys.stderr, flush=True)
    # torch.export specialises a size-1 dimension: trace at batch 2 to keep the batch dynamic.
    batch = torch.export.Dim("batch", min=1, max=1024)
    dummy = torch.zeros(2, 3, imgsz, imgsz)
    torch.onnx.export(model, (dummy,), path, dynamo=True, input_names=["images"],
                      output_names=["output0"], dynamic_shapes={"x": {0: batch}},
                      opset_version=max(opset, 18), external_data=False)


def check(path):
    """Runs PATH with ONNX Runtime (CPU) at batch 1 and 2 on random input and prints its outputs."""
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        print(f"{path}: onnxruntime is not installed, not checked", flush=True)
        return
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    print(f"{path}: input {inp.name} {inp.shape} {inp.type}", flush=True)
    size = inp.shape[2:]
    rng = np.random.default_rng(0)
    for n in (1, 2):
        x = rng.random((n, 3, *size), dtype=np.float32)
        for o, v in zip(sess.get_outputs(), sess.run(None, {inp.name: x})):
            # YOLOv8 [N,4+C,A] holds one value of every anchor a row; DETR [N,K,4+C] one query.
            yolo = v.shape[1] == 84
            boxes, scores = (v[:, :4], v[:, 4:]) if yolo else (v[..., :4], v[..., 4:])
            print(f"  batch {n}: {o.name} {list(v.shape)}"
                  f" boxes {boxes.min():.4g}..{boxes.max():.4g}"
                  f" scores {scores.min():.4g}..{scores.max():.4g}", flush=True)
        if v.shape[0] != n:
            raise SystemExit(f"{path}: batch {n} gave {v.shape[0]} items: the batch is not dynamic")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to write the .onnx files into")
    ap.add_argument("--models", default="yolov8s,yolov8m,rtdetr-l")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--no-check", action="store_true",
                    help="do not run the exported files with onnxruntime (run where installed)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        path = export(name, args.out, args.seed, args.imgsz)
        if not args.no_check:
            check(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
