# SPDX-License-Identifier: MIT OR Apache-2.0
"""Shared by the benchmark scripts (bare_session.py, diy_peer.py): the model's input layout, an
ONNX Runtime session on the CPU or a CUDA device, and detection post-processing in numpy."""

import numpy as np

ONNX_TYPES = {
    "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8,
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
}


def parse_dims(text):
    """'3;640;640', '3,640,640' or '3x640x640' -> (3, 640, 640); None for None or ''."""
    if not text:
        return None
    for sep in ";x":
        text = text.replace(sep, ",")
    return tuple(int(v) for v in text.split(",") if v.strip())


def numpy_type(onnx_type):
    try:
        return ONNX_TYPES[onnx_type]
    except KeyError:
        raise SystemExit(f"unsupported model input type {onnx_type}") from None


def frame_shape(model_shape, infer_dims=None, order=None, explicit=None):
    """The shape of one frame's input (no batch dimension) and its layout ('nchw' or 'nhwc').

    model_shape is the session input's shape (ints, or strings/None for dynamic dimensions).
    explicit is a shape in the model's order, with or without the batch dimension; otherwise
    infer_dims (C, H, W, as in nvinfer's infer-dims) is laid out by order, which is guessed
    from the model when None (a static last dimension of 1, 3 or 4 channels: NHWC)."""
    rest = list(model_shape[1:])
    static = [d if isinstance(d, int) and d > 0 else None for d in rest]
    if explicit:
        shape = list(explicit)
        if len(shape) == len(model_shape):
            shape = shape[1:]
        order = order or ("nhwc" if len(shape) == 3 and shape[-1] in (1, 3, 4) and shape[0] not in (1, 3, 4) else "nchw")
    else:
        if order is None:
            last, first = (static[-1], static[0]) if static else (None, None)
            order = "nhwc" if last in (1, 3, 4) and first not in (1, 3, 4) else "nchw"
        if infer_dims:
            c, h, w = infer_dims
            shape = [h, w, c] if order == "nhwc" else [c, h, w]
        else:
            if any(d is None for d in static):
                raise SystemExit(f"the model's input {model_shape} has dynamic dimensions: give --infer-dims or --input-shape")
            shape = static
    if len(shape) != len(rest):
        raise SystemExit(f"input shape {shape} does not fit the model's input {model_shape}")
    for want, have in zip(shape, static):
        if have is not None and have != want:
            raise SystemExit(f"input shape {shape} does not fit the model's input {model_shape}")
    return tuple(shape), order


def make_session(path, device, gpu_id=0):
    """An InferenceSession on the CPU or CUDA device gpu_id (the CUDA provider first); exits when
    CUDA is asked for and the installed ONNX Runtime lacks its provider."""
    import onnxruntime as ort

    if device == "cuda":
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise SystemExit(
                f"onnxruntime {ort.__version__} at {ort.__file__} has no CUDAExecutionProvider "
                f"(providers: {', '.join(ort.get_available_providers())})")
        providers = [("CUDAExecutionProvider", {"device_id": gpu_id}), "CPUExecutionProvider"]
    elif device == "cpu":
        providers = ["CPUExecutionProvider"]
    else:
        raise SystemExit(f"unknown device {device} (cuda or cpu)")
    session = ort.InferenceSession(path, providers=providers)
    if device == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider":
        raise SystemExit(f"the session runs on {session.get_providers()}, not CUDA")
    return session


def nms(boxes, scores, iou_threshold, top_k):
    """Greedy non-maximum suppression; boxes [K, 4] as x1, y1, x2, y2. Returns kept indices."""
    order = np.argsort(-scores)[: max(top_k * 10, top_k)]
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    areas = np.maximum(x2 - x1, 0) * np.maximum(y2 - y1, 0)
    keep = []
    while order.size and len(keep) < top_k:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0)
        inter = w * h
        iou = inter / np.maximum(areas[i] + areas[rest] - inter, 1e-9)
        order = rest[iou <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def _classwise_nms(boxes, scores, classes, iou_threshold, top_k):
    if scores.size == 0:
        return boxes[:0], scores[:0], classes[:0]
    # One NMS for all classes: boxes of different classes are moved apart so they never overlap.
    offset = (float(np.abs(boxes).max()) + 1.0) * classes.astype(np.float32)
    keep = nms(boxes + offset[:, None], scores, iou_threshold, top_k)
    return boxes[keep], scores[keep], classes[keep]


def guess_parser(outputs):
    shapes = [o.shape for o in outputs]
    if len(outputs) >= 2 and any(s[-1] == 4 for s in shapes):
        return "ssd"
    return "yolov8"


def postprocess(parser, outputs, threshold=0.25, iou_threshold=0.5, top_k=100):
    """Detections of each image of the batch: a list of (boxes [K, 4], scores [K], classes [K]).

    ssd: per-class scores [B, A, C] and boxes [B, A, 1, 4] or [B, A, 4] (y1, x1, y2, x2).
    yolov8 / detr: one output [B, 4 + C, A] or [B, A, 4 + C] (cx, cy, w, h, class scores)."""
    if parser is None:
        parser = guess_parser(outputs)
    results = []
    if parser == "ssd":
        box_out = next(o for o in outputs if o.shape[-1] == 4)
        score_out = next(o for o in outputs if o is not box_out)
        boxes_all = box_out.reshape(box_out.shape[0], -1, 4)
        for b in range(score_out.shape[0]):
            anchors, classes = np.nonzero(score_out[b] > threshold)
            scores = score_out[b][anchors, classes]
            yxyx = boxes_all[b][anchors]
            boxes = yxyx[:, [1, 0, 3, 2]].astype(np.float32)
            results.append(_classwise_nms(boxes, scores, classes, iou_threshold, top_k))
        return results
    if parser in ("yolov8", "yolo", "detr", "rtdetr"):
        out = outputs[0]
        if out.ndim != 3:
            raise SystemExit(f"{parser}: expected one [B, 4+C, A] output, got {out.shape}")
        if out.shape[1] < out.shape[2] and parser not in ("detr", "rtdetr"):
            out = out.transpose(0, 2, 1)  # [B, A, 4 + C]
        for b in range(out.shape[0]):
            rows = out[b]
            cls = rows[:, 4:]
            conf = cls.max(axis=1)
            sel = conf > threshold
            rows, conf = rows[sel], conf[sel]
            classes = cls[sel].argmax(axis=1)
            cx, cy, w, h = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
            boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1).astype(np.float32)
            results.append(_classwise_nms(boxes, conf, classes, iou_threshold, top_k))
        return results
    raise SystemExit(f"unknown parser {parser} (ssd, yolov8, detr)")
