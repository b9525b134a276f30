#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Build mobilenet_v2_imagenet.onnx from torchvision's MobileNetV2 ImageNet weights.

The weights come as a legacy (pre-zip) torch ``.pth`` file. It is read here
without torch: the file is a short series of pickles followed by the raw
tensor storages, so a restricted unpickler plus numpy is enough.

The graph is written with the ``onnx`` helpers (opset 13): BatchNorm layers
are folded into the preceding convolutions, ReLU6 becomes Clip(0, 6).

  input  : "input"  float32 [N,3,224,224]  RGB, (x/255 - mean) / std
  output : "logits" float32 [N,1000]

Usage: build_mobilenet_v2.py WEIGHTS.pth OUT.onnx
"""
import collections
import pickle
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BN_EPS = 1e-5

# ---------------------------------------------------------------------------
# Legacy torch serialisation reader
# ---------------------------------------------------------------------------
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = np.dtype(STORAGE_DTYPES[name]).newbyteorder("<")


class _Storage:
    def __init__(self, dtype, numel):
        self.dtype = dtype
        self.numel = numel
        self.data = None  # filled after the main pickle has been read


class _LazyTensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset = storage, offset
        self.size, self.stride = tuple(size), tuple(stride)

    def numpy(self):
        base = self.storage.data
        item = base.itemsize
        arr = np.lib.stride_tricks.as_strided(
            base[self.offset:],
            shape=self.size,
            strides=tuple(s * item for s in self.stride),
        )
        return np.array(arr, dtype=base.dtype.newbyteorder("="))


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks, *rest):
    return data


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, storages):
        super().__init__(f)
        self.storages = storages

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_tensor":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from the weights file")

    def persistent_load(self, pid):
        kind = pid[0].decode() if isinstance(pid[0], bytes) else pid[0]
        if kind != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent id {kind!r}")
        storage_type, root_key, _location, numel, view_metadata = pid[1:]
        if view_metadata is not None:
            raise pickle.UnpicklingError("storage views are not supported")
        if root_key not in self.storages:
            self.storages[root_key] = _Storage(storage_type.dtype, numel)
        return self.storages[root_key]


def load_legacy_state_dict(path):
    with open(path, "rb") as f:
        if f.read(2) == b"PK":
            raise SystemExit(f"{path}: zip-format torch file; this reader handles the legacy format only")
        f.seek(0)
        magic = pickle.load(f)
        if magic != LEGACY_MAGIC:
            raise SystemExit(f"{path}: not a legacy torch file (bad magic number)")
        protocol = pickle.load(f)
        if protocol != 1001:
            raise SystemExit(f"{path}: unsupported torch protocol version {protocol}")
        sys_info = pickle.load(f)
        if not sys_info.get("little_endian", True):
            raise SystemExit(f"{path}: big-endian torch files are not supported")
        storages = {}
        obj = _Unpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            st = storages[key]
            (numel,) = struct.unpack("<q", f.read(8))
            if numel != st.numel:
                raise SystemExit(f"{path}: storage {key}: size {numel} != expected {st.numel}")
            nbytes = numel * st.dtype.itemsize
            buf = f.read(nbytes)
            if len(buf) != nbytes:
                raise SystemExit(f"{path}: truncated storage data")
            st.data = np.frombuffer(buf, dtype=st.dtype)
        if f.read(1):
            raise SystemExit(f"{path}: trailing data after the last storage")
    return collections.OrderedDict((k, v.numpy()) for k, v in obj.items())


# ---------------------------------------------------------------------------
# Graph
# ---------------------------------------------------------------------------
# torchvision MobileNetV2 (width 1.0): t (expansion), c (channels), n (repeats), s (stride)
SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
           (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


class Builder:
    def __init__(self, sd):
        self.sd = sd
        self.used = set()
        self.nodes = []
        self.inits = [numpy_helper.from_array(np.array(0.0, np.float32), "c0"),
                      numpy_helper.from_array(np.array(6.0, np.float32), "c6")]
        self.n = 0

    def _name(self, kind):
        self.n += 1
        return f"{kind}_{self.n}"

    def get(self, key):
        self.used.add(key)
        return self.sd[key]

    def conv_bn(self, x, conv, bn, stride, groups, relu6):
        w = self.get(conv + ".weight").astype(np.float32)
        gamma = self.get(bn + ".weight").astype(np.float32)
        beta = self.get(bn + ".bias").astype(np.float32)
        mean = self.get(bn + ".running_mean").astype(np.float32)
        var = self.get(bn + ".running_var").astype(np.float32)
        if bn + ".num_batches_tracked" in self.sd:
            self.used.add(bn + ".num_batches_tracked")
        scale = gamma / np.sqrt(var + np.float32(BN_EPS))
        wf = (w * scale[:, None, None, None]).astype(np.float32)
        bf = (beta - mean * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(wf, conv + ".w"))
        self.inits.append(numpy_helper.from_array(bf, conv + ".b"))
        k = w.shape[2]
        pad = (k - 1) // 2
        y = self._name("conv")
        self.nodes.append(helper.make_node(
            "Conv", [x, conv + ".w", conv + ".b"], [y],
            group=groups, kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride]))
        if relu6:
            x, y = y, self._name("relu6")
            self.nodes.append(helper.make_node("Clip", [x, "c0", "c6"], [y]))
        return y

    def add(self, a, b):
        y = self._name("add")
        self.nodes.append(helper.make_node("Add", [a, b], [y]))
        return y


def build(sd):
    b = Builder(sd)
    x = b.conv_bn("input", "features.0.0", "features.0.1", 2, 1, True)
    inp, idx = 32, 1
    for t, c, n, s in SETTING:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = inp * t
            p = f"features.{idx}.conv"
            h = x
            j = 0
            if t != 1:
                h = b.conv_bn(h, f"{p}.0.0", f"{p}.0.1", 1, 1, True)
                j = 1
            h = b.conv_bn(h, f"{p}.{j}.0", f"{p}.{j}.1", stride, hidden, True)
            h = b.conv_bn(h, f"{p}.{j + 1}", f"{p}.{j + 2}", 1, 1, False)
            x = b.add(x, h) if (stride == 1 and inp == c) else h
            inp = c
            idx += 1
    x = b.conv_bn(x, "features.18.0", "features.18.1", 1, 1, True)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    b.inits.append(numpy_helper.from_array(b.get("classifier.1.weight").astype(np.float32), "fc.w"))
    b.inits.append(numpy_helper.from_array(b.get("classifier.1.bias").astype(np.float32), "fc.b"))
    b.nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1))

    unused = set(sd) - b.used
    if unused:
        raise SystemExit(f"weights not used by the MobileNetV2 graph: {sorted(unused)[:5]} ...")

    graph = helper.make_graph(
        b.nodes, "mobilenet_v2_imagenet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="handbuilt-from-torchvision-state-dict")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sd = load_legacy_state_dict(sys.argv[1])
    model = build(sd)
    onnx.save(model, sys.argv[2])
    print(f"wrote {sys.argv[2]} ({len(model.graph.node)} nodes, {len(model.graph.initializer)} initializers)")


if __name__ == "__main__":
    main()
