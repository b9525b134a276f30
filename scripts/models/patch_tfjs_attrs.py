#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Give an older TF.js graph model the node attributes current TensorFlow requires.

Usage: patch_tfjs_attrs.py IN.json OUT.json

Older TF.js converters left out attributes that TensorFlow 2.x's op definitions now require, and
tf2onnx's TF.js reader imports every node into TensorFlow to learn its output shapes, so the
conversion stops at the first such node. Each missing attribute is implied by the node itself:
- `_FusedConv2D` / `FusedDepthwiseConv2dNative` without `TArgs` (the types of the fused extra
  inputs: bias, PReLU alpha): one entry of the node's type `T` per fused argument (`num_args`,
  or the inputs after the input and the filter). TensorFlow: "NodeDef missing attr 'TArgs'".
- `TopKV2` without `Tk` / `index_type` (the types of k and of the indices, added in TensorFlow
  2.13): int32, the only types older graphs could have. tf2onnx: KeyError 'index_type'.
This script adds exactly those and changes nothing else; OUT.json must sit beside IN.json so the
weight files it names are found.
"""
import json
import sys

FUSED_OPS = {"_FusedConv2D", "FusedDepthwiseConv2dNative"}


def patch(model):
    patched = 0
    for node in model["modelTopology"]["node"]:
        attr = node.setdefault("attr", {})
        if node["op"] in FUSED_OPS and "TArgs" not in attr:
            data_inputs = [i for i in node.get("input", []) if not i.startswith("^")]
            num_args = int(attr.get("num_args", {}).get("i", len(data_inputs) - 2))
            dtype = attr.get("T", {}).get("type", "DT_FLOAT")
            attr["TArgs"] = {"list": {"type": [dtype] * num_args}}
            attr.setdefault("num_args", {"i": str(num_args)})
            patched += 1
        elif node["op"] == "TopKV2" and not {"Tk", "index_type"} <= attr.keys():
            attr.setdefault("Tk", {"type": "DT_INT32"})
            attr.setdefault("index_type", {"type": "DT_INT32"})
            patched += 1
    return patched


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        model = json.load(f)
    patched = patch(model)
    with open(sys.argv[2], "w") as f:
        json.dump(model, f)
    print(f"{sys.argv[2]}: attributes added to {patched} node(s)")


if __name__ == "__main__":
    main()
