#!/usr/bin/env python3
"""Exports heavier detectors for GPU benchmarks from their public definitions: YOLOv8s/m and
RT-DETR-L as the `ultralytics` package defines them (its model YAMLs), with random weights drawn
from a fixed seed. No weights are downloaded: the models detect nothing meaningful and exist to
load a GPU the way the real ones do (same layers, shapes and outputs).

    python3 scripts/models/export_ultralytics.py --out DIR [--models yolov8s,yolov8m,rtdetr-l]

Writes DIR/yolov8s_640.onnx, DIR/yolov8m_640.onnx, DIR/rtdetr_l_640.onnx: input `images`
f32 NCHW [N,3,640,640] (RGB, 0..1), dynamic batch; output `output0`:
  YOLOv8   [N,84,8400]  cx,cy,w,h in input pixels, then 80 class scores (sigmoid)
  RT-DETR  [N,300,84]   cx,cy,w,h normalised to the input, then 80 class scores (sigmoid)
Needs torch and ultralytics (and onnx); never touches the network.
"""
import argparse
import os
import sys

# ultralytics must not try to reach the network or install anything.
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_VERBOSE", "false")

FILES = {"yolov8s": "yolov8s_640.onnx", "yolov8m": "yolov8m_640.onnx", "rtdetr-l": "rtdetr_l_640.onnx"}


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
    path = os.path.join(out_dir, FILES[name])
    dummy = torch.zeros(1, 3, imgsz, imgsz)
    with torch.no_grad():
        y = model(dummy)
    y = y[0] if isinstance(y, (list, tuple)) else y
    kwargs = dict(input_names=["images"], output_names=["output0"],
                  dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}},
                  opset_version=17, do_constant_folding=True)
    try:
        torch.onnx.export(model, dummy, path, dynamo=False, **kwargs)
    except TypeError:
        torch.onnx.export(model, dummy, path, **kwargs)
    print(f"{path}: output0 {list(y.shape)} (batch 1)", flush=True)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to write the .onnx files into")
    ap.add_argument("--models", default="yolov8s,yolov8m,rtdetr-l")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--imgsz", type=int, default=640)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        export(name, args.out, args.seed, args.imgsz)
    return 0


if __name__ == "__main__":
    sys.exit(main())
