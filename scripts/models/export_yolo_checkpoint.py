#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Exports a trained Ultralytics checkpoint (.pt: YOLOv8 / YOLO11 detect, pose or OBB) to ONNX,
and/or writes its class names.

    python3 scripts/models/export_yolo_checkpoint.py CKPT.pt [--onnx OUT.onnx] [--imgsz 640]
        [--names OUT.txt]

--names writes the checkpoint's class names (its model's `names`, in index order) one per line.
It needs only the Python standard library: the checkpoint's pickle is read with stand-in classes,
so no code from it runs and neither torch nor ultralytics is imported.

--onnx loads the checkpoint with ultralytics (BatchNorm fused, FP32) and exports it with torch's
legacy ONNX exporter, opset 17: input `images` f32 NCHW [batch,3,S,S] (RGB, 0..1, S = --imgsz),
dynamic batch; output `output0` [batch,C,A], one column per anchor (A = (S/8)^2 + (S/16)^2 +
(S/32)^2):
  detect  C = 4 + classes                     cx,cy,w,h in input pixels, class scores (sigmoid)
  pose    C = 4 + classes + 3 * keypoints     then x,y (input pixels), visibility (sigmoid) per
                                              keypoint
  OBB     C = 4 + classes + 1                 then the box angle in radians
The same checkpoint and package versions give the same file, byte for byte. Needs torch,
ultralytics and onnx for --onnx; never touches the network.
"""
import argparse
import inspect
import os
import pickle
import sys
import zipfile

# ultralytics must not try to reach the network or install anything.
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_VERBOSE", "false")


class _Stub:
    """Stands in for every class the checkpoint's pickle names (modules, tensors, ...)."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __call__(self, *args, **kwargs):  # reconstructor functions (torch._utils._rebuild_*)
        return _Stub()


class _StubUnpickler(pickle.Unpickler):
    SAFE = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
            ("builtins", "slice")}

    def find_class(self, module, name):
        if (module, name) in self.SAFE:
            return super().find_class(module, name)
        return type(name, (_Stub,), {"__module__": module})

    def persistent_load(self, pid):  # tensor storages: not needed
        return None


def read_names(path):
    """The class names of checkpoint PATH (a torch zip archive), without torch."""
    with zipfile.ZipFile(path) as z:
        pkls = [n for n in z.namelist() if n.endswith("/data.pkl")]
        if len(pkls) != 1:
            raise SystemExit(f"{path}: not a torch checkpoint archive (data.pkl: {pkls})")
        with z.open(pkls[0]) as f:
            ckpt = _StubUnpickler(f).load()
    model = ckpt.get("ema") or ckpt.get("model")  # the one ultralytics loads
    state = getattr(model, "state", None)
    names = state.get("names") if isinstance(state, dict) else None
    if isinstance(names, dict):
        names = [names[i] for i in sorted(names)]
    if not names or not all(isinstance(n, str) and n and "\n" not in n for n in names):
        raise SystemExit(f"{path}: no class names found in the checkpoint")
    return names


def export(ckpt_path, out, imgsz):
    import onnx
    import torch
    from ultralytics.nn.tasks import load_checkpoint

    model, ckpt = load_checkpoint(ckpt_path, device="cpu", fuse=True)
    model = model.float().eval()
    for p in model.parameters():
        p.requires_grad = False
    for m in model.modules():
        # The inference heads return only the decoded predictions in export mode; their anchors
        # are computed once for the traced input size.
        if hasattr(m, "export"):
            m.export = True
        if hasattr(m, "format"):
            m.format = "onnx"
        if hasattr(m, "dynamic"):
            m.dynamic = False
    print(f"{ckpt_path}: task {getattr(model, 'task', None)}, {len(model.names)} classes,"
          f" keypoints {getattr(model, 'kpt_shape', None)}, trained with ultralytics"
          f" {ckpt.get('version')}", flush=True)
    dummy = torch.zeros(1, 3, imgsz, imgsz)
    with torch.no_grad():
        y = model(dummy)
    y = y[0] if isinstance(y, (list, tuple)) else y
    kwargs = dict(input_names=["images"], output_names=["output0"],
                  dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}},
                  opset_version=17, do_constant_folding=True)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(model, dummy, out, **kwargs)
    # The legacy exporter leaves the output's channel and anchor dimensions symbolic: pin them.
    m = onnx.load(out)
    for d, v in zip(m.graph.output[0].type.tensor_type.shape.dim[1:], y.shape[1:]):
        d.ClearField("dim_param")
        d.dim_value = int(v)
    onnx.checker.check_model(m)
    onnx.save(m, out)
    print(f"{out}: images [batch,3,{imgsz},{imgsz}] -> output0 [batch,"
          f"{','.join(str(int(v)) for v in y.shape[1:])}]", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="the ultralytics .pt file")
    ap.add_argument("--onnx", help="export the model to this ONNX file")
    ap.add_argument("--imgsz", type=int, default=640, help="input width and height (default 640)")
    ap.add_argument("--names", help="write the class names to this file, one per line")
    args = ap.parse_args(argv)
    if not args.onnx and not args.names:
        ap.error("nothing to do: give --onnx and/or --names")
    if args.imgsz <= 0 or args.imgsz % 32:
        ap.error(f"--imgsz {args.imgsz} is not a positive multiple of 32")
    if args.names:
        names = read_names(args.checkpoint)
        with open(args.names, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(n + "\n" for n in names))
        print(f"{args.names}: {len(names)} class names", flush=True)
    if args.onnx:
        export(args.checkpoint, args.onnx, args.imgsz)
    return 0


if __name__ == "__main__":
    sys.exit(main())
