#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Check that an ONNX model has the expected graph interface.

Usage: check_onnx.py MODEL.onnx NAME

NAME is one of the keys of EXPECTED below. Dimensions written as None must be
symbolic (dynamic); integers must match exactly. Exits non-zero with a message
on any difference.
"""
import sys

import onnx
from onnx import TensorProto

F32, U8 = TensorProto.FLOAT, TensorProto.UINT8

# name -> (inputs, outputs); each a list of (tensor name, element type, shape)
EXPECTED = {
    "coco_ssdlite_mobilenet_v2": (
        [("image_tensor:0", U8, [None, None, None, 3])],
        [("Postprocessor/Slice:0", F32, [None, None, None]),
         ("Postprocessor/ExpandDims_1:0", F32, [None, None, 1, None])],
    ),
    "centerface": (
        [("input.1", F32, ["N", 3, "H", "W"])],
        [("537", F32, ["N", 1, "h4", "w4"]), ("538", F32, ["N", 2, "h4", "w4"]),
         ("539", F32, ["N", 2, "h4", "w4"]), ("540", F32, ["N", 10, "h4", "w4"])],
    ),
    "mobilenet_v2_imagenet": (
        [("input", F32, ["N", 3, 224, 224])],
        [("logits", F32, ["N", 1000])],
    ),
    "pedestrian_ssdlite": (
        [("image_tensor:0", U8, [None, None, None, 3])],
        [("detection_boxes:0", F32, [None, None, None]),
         ("detection_scores:0", F32, [None, None]),
         ("detection_classes:0", F32, [None, None]),
         ("num_detections:0", F32, [None])],
    ),
    "centernet_mobilenetv3": (
        [("tower_0/images:0", F32, [1, 512, 512, 3])],
        [("tower_0/detections", F32, [1, 100, 6])],
    ),
    "yolo11n_pose_960": (
        [("images", F32, ["batch", 3, 960, 960])],
        [("output0", F32, ["batch", 56, 18900])],
    ),
    "yolov8n_obb_1024": (
        [("images", F32, ["batch", 3, 1024, 1024])],
        [("output0", F32, ["batch", 20, 21504])],
    ),
    "face_detection_front_128x128_barracuda": (
        [("input:0", F32, [1, 128, 128, 3])],
        [("Identity:0", F32, [1, 512, 1]), ("Identity_1:0", F32, [1, 384, 1]),
         ("Identity_2:0", F32, [1, 512, 16]), ("Identity_3:0", F32, [1, 384, 16])],
    ),
}


def describe(vi):
    t = vi.type.tensor_type
    dims = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        else:
            dims.append(d.dim_param or "?")
    return vi.name, t.elem_type, dims


def matches(actual, expected):
    name, etype, dims = actual
    ename, eetype, edims = expected
    if name != ename or etype != eetype or len(dims) != len(edims):
        return False
    for d, e in zip(dims, edims):
        if e is None:
            if isinstance(d, int):
                return False
        elif d != e:
            return False
    return True


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in EXPECTED:
        raise SystemExit(__doc__)
    path, key = sys.argv[1], sys.argv[2]
    model = onnx.load(path)
    onnx.checker.check_model(model)
    inits = {i.name for i in model.graph.initializer}
    inputs = [describe(i) for i in model.graph.input if i.name not in inits]
    outputs = [describe(o) for o in model.graph.output]
    exp_in, exp_out = EXPECTED[key]
    errors = []
    for kind, got, want in (("inputs", inputs, exp_in), ("outputs", outputs, exp_out)):
        if len(got) != len(want) or not all(matches(g, w) for g, w in zip(got, want)):
            errors.append(f"{kind}: got {got}, expected {want}")
    if errors:
        raise SystemExit(f"{path}: unexpected graph interface:\n  " + "\n  ".join(errors))
    print(f"{path}: interface OK ({', '.join(n for n, _, _ in inputs)} -> {', '.join(n for n, _, _ in outputs)})")


if __name__ == "__main__":
    main()
