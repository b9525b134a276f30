// SPDX-License-Identifier: MIT OR Apache-2.0
// Anchor selection for detector outputs left in device memory: one thread per (batch item,
// anchor) computes the anchor's best class score (times the objectness for YOLOv5) or reads its
// heat-map value, compares it with the lowest pre-cluster threshold exactly as the host parser
// does (strict > for the maximum, so NaN never wins and the first maximum is kept; >= against
// the threshold), and appends the anchors that pass, with every value of their row, to a
// compact list: a few kilobytes cross to the host instead of whole output tensors. The host
// decodes those rows with the same code it uses for rows it gathers itself
// (gst-trtinfer/src/parse.rs), so the detections are identical.
//
// Output buffer: u32 count, u32 pad, then records of (2 + row_len) 4-byte words:
// item, anchor, row values (f32). Records come in any order; the host sorts them.

struct Group {
    unsigned long long ptr;
    unsigned long long item_stride;  // elements between batch items
    unsigned int offset, anchor_stride, elem_stride, count;
    unsigned int is_half, pad;
};

struct Params {
    Group groups[4];
    unsigned long long out;
    unsigned int n_items, anchors, n_groups, row_len;
    unsigned int mode;  // 0: best class, 1: one value
    unsigned int start, count;
    int objectness;     // row index of YOLOv5's objectness, or -1
    float min_threshold;
    unsigned int capacity;
};

__device__ __forceinline__ float half_to_float(unsigned short bits) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}

__device__ __forceinline__ float load(const Group& g, unsigned int item, unsigned int anchor,
                                      unsigned int j) {
    unsigned long long idx = g.item_stride * item + g.offset +
                             (unsigned long long)anchor * g.anchor_stride +
                             (unsigned long long)j * g.elem_stride;
    if (g.is_half) {
        return half_to_float(((const unsigned short*)g.ptr)[idx]);
    }
    return ((const float*)g.ptr)[idx];
}

__device__ float row_value(const Params& p, unsigned int item, unsigned int anchor,
                           unsigned int r) {
    for (unsigned int gi = 0; gi < p.n_groups; ++gi) {
        if (r < p.groups[gi].count) {
            return load(p.groups[gi], item, anchor, r);
        }
        r -= p.groups[gi].count;
    }
    return 0.0f;
}

extern "C" __global__ void select_anchors(const Params p) {
    unsigned int anchor = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int item = blockIdx.y;
    if (anchor >= p.anchors || item >= p.n_items) {
        return;
    }
    float score;
    if (p.mode == 0) {
        float best = -3.40282347e+38f;  // f32::MIN, the host parser's starting value
        for (unsigned int c = 0; c < p.count; ++c) {
            float v = row_value(p, item, anchor, p.start + c);
            if (v > best) {
                best = v;
            }
        }
        score = p.objectness >= 0 ? row_value(p, item, anchor, (unsigned int)p.objectness) * best
                                  : best;
    } else {
        score = row_value(p, item, anchor, p.start);
    }
    if (!(score >= p.min_threshold)) {
        return;
    }
    unsigned int slot = atomicAdd((unsigned int*)p.out, 1u);
    if (slot >= p.capacity) {
        return;
    }
    unsigned int* rec = (unsigned int*)p.out + 2 + (unsigned long long)slot * (2 + p.row_len);
    rec[0] = item;
    rec[1] = anchor;
    float* values = (float*)(rec + 2);
    for (unsigned int r = 0; r < p.row_len; ++r) {
        values[r] = row_value(p, item, anchor, r);
    }
}
