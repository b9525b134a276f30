// SPDX-License-Identifier: MIT OR Apache-2.0
// Batched pre-processing of frames in device memory into the network's input tensor, with the
// exact arithmetic of the CPU pre-processor (gst-trtinfer/src/preprocess.rs): bilinear taps at
// pixel centres in 1/256 steps, vertical blend then horizontal blend of 8-bit samples, 12-bit
// fixed-point YUV to RGB, then y = scale * (x - offset[c]) converted to f32, f16 or u8.
// Compiled with --fmad=false so every float operation rounds exactly like the CPU's.
//
// blockIdx.z is the frame; each thread writes 1 or 4 adjacent network pixels (all channels).

#define FMT_NV12 0
#define FMT_I420 1
#define FMT_PACKED 2

#define OUT_F32 0
#define OUT_F16 1
#define OUT_U8 2

struct Frame {
    unsigned long long plane[3];
    unsigned int pitch[3];
    unsigned int format;
    unsigned int width, height;
    // Offsets of R, G and B within a packed pixel, and bytes per packed pixel.
    unsigned int rgb[3];
    unsigned int pixel_stride;
    float roi_left, roi_top, step_x, step_y;
    unsigned int pad_x, pad_y, content_w, content_h;
    // YuvToRgb: 12-bit fixed point.
    int y_offset, y_gain, r_v, g_u, g_v, b_u;
    unsigned long long out;
};

struct Params {
    unsigned long long frames;
    unsigned int n_frames;
    unsigned int net_w, net_h;
    unsigned int planar, gray, out_type;
    unsigned int order[3];
    float scale;
    float offsets[3];
    // Whether every row of every plane of every slot starts 16-byte aligned (f32 NCHW only).
    unsigned int vector_stores;
};

struct Tap {
    unsigned int i0, i1, w1;
};

// AxisTable::fill for one output index.
__device__ __forceinline__ Tap make_tap(unsigned int i, float start, float step, unsigned int len, float subsample) {
    float maxv = (float)((len > 1u ? len : 1u) - 1u);
    float centre = __fadd_rn(start, __fmul_rn(__fadd_rn((float)i, 0.5f), step));
    float pos = __fsub_rn(__fmul_rn(centre, subsample), 0.5f);
    pos = fminf(fmaxf(pos, 0.0f), maxv);
    float p0 = floorf(pos);
    Tap t;
    t.i0 = (unsigned int)p0;
    t.i1 = (unsigned int)fminf(__fadd_rn(p0, 1.0f), maxv);
    t.w1 = (unsigned int)roundf(__fmul_rn(__fsub_rn(pos, p0), 256.0f));
    return t;
}

__device__ __forceinline__ unsigned int lerp8(unsigned int a, unsigned int b, unsigned int w) {
    return (a * (256u - w) + b * w + 128u) >> 8;
}

// Bilinear sample of byte `offset` of the pixels at columns tx.i0/tx.i1 (times `step` bytes)
// of rows ty.i0/ty.i1: vertical blend first, then horizontal, as the CPU does.
__device__ __forceinline__ unsigned int sample(const unsigned char* plane, unsigned int pitch, Tap tx, Tap ty,
                                               unsigned int step, unsigned int offset) {
    const unsigned char* r0 = plane + (size_t)ty.i0 * pitch;
    const unsigned char* r1 = plane + (size_t)ty.i1 * pitch;
    unsigned int c0 = tx.i0 * step + offset, c1 = tx.i1 * step + offset;
    unsigned int a = lerp8(__ldg(r0 + c0), __ldg(r1 + c0), ty.w1);
    unsigned int b = lerp8(__ldg(r0 + c1), __ldg(r1 + c1), ty.w1);
    return lerp8(a, b, tx.w1);
}

__device__ __forceinline__ unsigned int clamp_fx(int x) {
    x >>= 12;
    return (unsigned int)(x < 0 ? 0 : (x > 255 ? 255 : x));
}

__device__ __forceinline__ unsigned short f32_to_f16(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

__device__ __forceinline__ void store(const Params& p, unsigned long long out, size_t index, float v) {
    if (p.out_type == OUT_F32) {
        ((float*)out)[index] = v;
    } else if (p.out_type == OUT_F16) {
        ((unsigned short*)out)[index] = f32_to_f16(v);
    } else {
        float c = fminf(fmaxf(v, 0.0f), 255.0f);
        ((unsigned char*)out)[index] = (unsigned char)__fadd_rn(c, 0.5f);
    }
}

// The network-channel values (before normalisation) of output pixel (ox, oy) of frame f; zero
// in the padding.
__device__ __forceinline__ void pixel_values(const Frame& f, const Params& p, unsigned int ox, unsigned int oy,
                                             unsigned int value[3]) {
    value[0] = value[1] = value[2] = 0u;
    bool content = ox >= f.pad_x && ox < f.pad_x + f.content_w && oy >= f.pad_y && oy < f.pad_y + f.content_h;
    if (!content) {
        return;
    }
    unsigned int cx = ox - f.pad_x, cy = oy - f.pad_y;
    Tap tx = make_tap(cx, f.roi_left, f.step_x, f.width, 1.0f);
    Tap ty = make_tap(cy, f.roi_top, f.step_y, f.height, 1.0f);
    unsigned int rgb[3];
    if (f.format == FMT_PACKED) {
        const unsigned char* plane = (const unsigned char*)f.plane[0];
        for (int c = 0; c < 3; ++c) {
            rgb[c] = sample(plane, f.pitch[0], tx, ty, f.pixel_stride, f.rgb[c]);
        }
        if (p.gray) {
            value[0] = (77u * rgb[0] + 150u * rgb[1] + 29u * rgb[2] + 128u) >> 8;
            return;
        }
    } else {
        unsigned int luma = sample((const unsigned char*)f.plane[0], f.pitch[0], tx, ty, 1u, 0u);
        int yy = ((int)luma - f.y_offset) * f.y_gain + (1 << 11);
        if (p.gray) {
            value[0] = clamp_fx(yy);
            return;
        }
        unsigned int cw = (f.width + 1u) / 2u, ch = (f.height + 1u) / 2u;
        Tap ctx = make_tap(cx, f.roi_left, f.step_x, cw, 0.5f);
        Tap cty = make_tap(cy, f.roi_top, f.step_y, ch, 0.5f);
        unsigned int u, v;
        if (f.format == FMT_NV12) {
            const unsigned char* uv = (const unsigned char*)f.plane[1];
            u = sample(uv, f.pitch[1], ctx, cty, 2u, 0u);
            v = sample(uv, f.pitch[1], ctx, cty, 2u, 1u);
        } else {
            u = sample((const unsigned char*)f.plane[1], f.pitch[1], ctx, cty, 1u, 0u);
            v = sample((const unsigned char*)f.plane[2], f.pitch[2], ctx, cty, 1u, 0u);
        }
        int uu = (int)u - 128, vv = (int)v - 128;
        rgb[0] = clamp_fx(yy + f.r_v * vv);
        rgb[1] = clamp_fx(yy + f.g_u * uu + f.g_v * vv);
        rgb[2] = clamp_fx(yy + f.b_u * uu);
    }
    for (int c = 0; c < 3; ++c) {
        value[c] = rgb[p.order[c]];
    }
}

// Each thread makes PIXELS horizontally adjacent output pixels, so that an f32 NCHW tensor is
// written with 16-byte stores when rows and slots are 16-byte aligned (checked per launch:
// `vector_stores`), and the frame descriptor is read once per PIXELS pixels. One pixel per
// thread keeps more threads in flight for small tensors; the host picks per network.
template <int PIXELS>
__device__ __forceinline__ void preprocess_pixels(const Params& p) {
    unsigned int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * PIXELS;
    unsigned int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox0 >= p.net_w || oy >= p.net_h || blockIdx.z >= p.n_frames) {
        return;
    }
    const Frame& f = ((const Frame*)p.frames)[blockIdx.z];
    size_t plane_len = (size_t)p.net_w * p.net_h;
    unsigned int channels = p.gray ? 1u : 3u;
    unsigned int value[PIXELS][3];
#pragma unroll
    for (int i = 0; i < PIXELS; ++i) {
        if (ox0 + i < p.net_w) {
            pixel_values(f, p, ox0 + i, oy, value[i]);
        }
    }
    size_t pixel0 = (size_t)oy * p.net_w + ox0;
    if (PIXELS == 4 && p.vector_stores && p.planar && p.out_type == OUT_F32 && ox0 + 4 <= p.net_w) {
        for (unsigned int c = 0; c < channels; ++c) {
            float4 v;
            v.x = __fmul_rn(p.scale, __fsub_rn((float)value[0][c], p.offsets[c]));
            v.y = __fmul_rn(p.scale, __fsub_rn((float)value[1 % PIXELS][c], p.offsets[c]));
            v.z = __fmul_rn(p.scale, __fsub_rn((float)value[2 % PIXELS][c], p.offsets[c]));
            v.w = __fmul_rn(p.scale, __fsub_rn((float)value[3 % PIXELS][c], p.offsets[c]));
            *(float4*)((float*)f.out + c * plane_len + pixel0) = v;
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < PIXELS; ++i) {
        if (ox0 + i >= p.net_w) {
            break;
        }
        size_t pixel = pixel0 + i;
        for (unsigned int c = 0; c < channels; ++c) {
            float v = __fmul_rn(p.scale, __fsub_rn((float)value[i][c], p.offsets[c]));
            size_t index = p.planar ? c * plane_len + pixel : pixel * channels + c;
            store(p, f.out, index, v);
        }
    }
}

extern "C" __global__ void preprocess_x1(const Params p) {
    preprocess_pixels<1>(p);
}

extern "C" __global__ void preprocess_x4(const Params p) {
    preprocess_pixels<4>(p);
}
