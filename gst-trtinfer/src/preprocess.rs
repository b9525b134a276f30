//! Pre-processing with nvinfer semantics, on the CPU: scale a region of a frame to the network
//! size (stretched, or keeping the aspect ratio with top-left or symmetric padding), convert the
//! colour (RGB/BGR/GRAY), normalise `y = net-scale-factor * (x - offset[c])`, and write NCHW or
//! NHWC f32 / f16 / u8, all in one pass. Sampling is bilinear at pixel centres.
//!
//! [`Letterbox`] records the geometry so that boxes found in network pixels map back to frame
//! pixels exactly.

use ferrostream_core::BBox;
use gst_video::prelude::*;
use gst_video::{VideoColorMatrix, VideoColorRange, VideoFormat};

use crate::config::ColorFormat;

/// How the network wants its input.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkInput {
    pub width: u32,
    pub height: u32,
    /// 1 (grayscale) or 3.
    pub channels: u32,
    pub planar: bool,
    pub color: ColorFormat,
    pub scale: f32,
    /// Per-channel offsets, in network channel order.
    pub offsets: [f32; 3],
    pub maintain_aspect_ratio: bool,
    pub symmetric_padding: bool,
}

impl NetworkInput {
    /// Number of elements of one frame's tensor.
    pub fn frame_len(&self) -> usize {
        (self.width * self.height * self.channels) as usize
    }
}

/// The mapping between a region of the source frame and the network input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Letterbox {
    /// Network pixels per source pixel, on each axis.
    pub scale_x: f32,
    pub scale_y: f32,
    /// Top-left corner of the scaled content in the network input.
    pub pad_x: u32,
    pub pad_y: u32,
    /// Size of the scaled content in the network input.
    pub content_w: u32,
    pub content_h: u32,
    /// Top-left corner of the source region.
    pub roi_left: f32,
    pub roi_top: f32,
}

impl Letterbox {
    /// Geometry for scaling `roi` (source pixels) to a `net_w` x `net_h` input.
    pub fn new(roi: BBox, net_w: u32, net_h: u32, maintain_aspect: bool, symmetric: bool) -> Self {
        let (src_w, src_h) = (roi.width.max(1.0), roi.height.max(1.0));
        let (content_w, content_h) = if maintain_aspect {
            let ratio = (net_w as f32 / src_w).min(net_h as f32 / src_h);
            (
                ((src_w * ratio).round() as u32).clamp(1, net_w),
                ((src_h * ratio).round() as u32).clamp(1, net_h),
            )
        } else {
            (net_w, net_h)
        };
        let (pad_x, pad_y) = if symmetric {
            ((net_w - content_w) / 2, (net_h - content_h) / 2)
        } else {
            (0, 0)
        };
        Self {
            scale_x: content_w as f32 / src_w,
            scale_y: content_h as f32 / src_h,
            pad_x,
            pad_y,
            content_w,
            content_h,
            roi_left: roi.left,
            roi_top: roi.top,
        }
    }

    /// Maps a box in network pixels to source-frame pixels.
    pub fn to_source(&self, b: BBox) -> BBox {
        BBox::new(
            (b.left - self.pad_x as f32) / self.scale_x + self.roi_left,
            (b.top - self.pad_y as f32) / self.scale_y + self.roi_top,
            b.width / self.scale_x,
            b.height / self.scale_y,
        )
    }

    /// Maps a box in source-frame pixels to network pixels.
    pub fn to_network(&self, b: BBox) -> BBox {
        BBox::new(
            (b.left - self.roi_left) * self.scale_x + self.pad_x as f32,
            (b.top - self.roi_top) * self.scale_y + self.pad_y as f32,
            b.width * self.scale_x,
            b.height * self.scale_y,
        )
    }
}

/// An element type of a network input tensor.
pub trait TensorElement: Copy + Default + Send + 'static {
    fn from_f32(v: f32) -> Self;
}

impl TensorElement for f32 {
    #[inline]
    fn from_f32(v: f32) -> Self {
        v
    }
}

impl TensorElement for half::f16 {
    #[inline]
    fn from_f32(v: f32) -> Self {
        half::f16::from_f32(v)
    }
}

impl TensorElement for u8 {
    #[inline]
    fn from_f32(v: f32) -> Self {
        // Round half up; the clamp first keeps negative values at 0.
        (v.clamp(0.0, 255.0) + 0.5) as u8
    }
}

/// YUV to RGB conversion for one colour matrix and range, in 12-bit fixed point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YuvToRgb {
    y_offset: i32,
    y_gain: i32,
    r_v: i32,
    g_u: i32,
    g_v: i32,
    b_u: i32,
}

const FX: i32 = 12;

impl YuvToRgb {
    pub fn new(matrix: VideoColorMatrix, range: VideoColorRange) -> Self {
        let (kr, kb): (f64, f64) = match matrix {
            VideoColorMatrix::Bt709 => (0.2126, 0.0722),
            VideoColorMatrix::Bt2020 => (0.2627, 0.0593),
            VideoColorMatrix::Smpte240m => (0.212, 0.087),
            VideoColorMatrix::Fcc => (0.30, 0.11),
            _ => (0.299, 0.114),
        };
        let full = range == VideoColorRange::Range0_255;
        let (y_gain, c_gain) = if full {
            (1.0, 1.0)
        } else {
            (255.0 / 219.0, 255.0 / 224.0)
        };
        let kg = 1.0 - kr - kb;
        let fx = |v: f64| (v * (1 << FX) as f64).round() as i32;
        Self {
            y_offset: if full { 0 } else { 16 },
            y_gain: fx(y_gain),
            r_v: fx(2.0 * (1.0 - kr) * c_gain),
            g_u: fx(-2.0 * (1.0 - kb) * kb / kg * c_gain),
            g_v: fx(-2.0 * (1.0 - kr) * kr / kg * c_gain),
            b_u: fx(2.0 * (1.0 - kb) * c_gain),
        }
    }

    #[inline(always)]
    pub fn convert(&self, y: u8, u: u8, v: u8) -> [u8; 3] {
        let y = (y as i32 - self.y_offset) * self.y_gain + (1 << (FX - 1));
        let (u, v) = (u as i32 - 128, v as i32 - 128);
        let clamp = |x: i32| (x >> FX).clamp(0, 255) as u8;
        [
            clamp(y + self.r_v * v),
            clamp(y + self.g_u * u + self.g_v * v),
            clamp(y + self.b_u * u),
        ]
    }

    /// Luma in full range, for grayscale networks.
    #[inline(always)]
    pub fn luma(&self, y: u8) -> u8 {
        (((y as i32 - self.y_offset) * self.y_gain + (1 << (FX - 1))) >> FX).clamp(0, 255) as u8
    }
}

/// Borrowed pixels of one frame in a supported layout.
#[derive(Debug, Clone, Copy)]
pub enum SourceImage<'a> {
    /// Interleaved 8-bit RGB-family pixels; `rgb` gives the byte offsets of R, G and B.
    Packed {
        data: &'a [u8],
        stride: usize,
        pixel_stride: usize,
        rgb: [usize; 3],
        width: u32,
        height: u32,
    },
    Gray {
        data: &'a [u8],
        stride: usize,
        width: u32,
        height: u32,
    },
    /// 4:2:0 YUV, planar (I420/YV12, `chroma_step` 1) or semi-planar (NV12/NV21, step 2).
    Yuv420 {
        y: &'a [u8],
        y_stride: usize,
        u: &'a [u8],
        v: &'a [u8],
        chroma_stride: usize,
        chroma_step: usize,
        width: u32,
        height: u32,
        matrix: YuvToRgb,
    },
}

/// Raw video formats the CPU path reads.
pub const SUPPORTED_FORMATS: &[VideoFormat] = &[
    VideoFormat::Rgb,
    VideoFormat::Bgr,
    VideoFormat::Rgba,
    VideoFormat::Bgra,
    VideoFormat::Argb,
    VideoFormat::Abgr,
    VideoFormat::Rgbx,
    VideoFormat::Bgrx,
    VideoFormat::Xrgb,
    VideoFormat::Xbgr,
    VideoFormat::Gray8,
    VideoFormat::Nv12,
    VideoFormat::Nv21,
    VideoFormat::I420,
    VideoFormat::Yv12,
];

impl<'a> SourceImage<'a> {
    /// Views a mapped video frame.
    pub fn from_frame(
        frame: &'a gst_video::VideoFrameRef<&'a gst::BufferRef>,
    ) -> Result<Self, String> {
        let info = frame.info();
        let (width, height) = (info.width(), info.height());
        let plane = |i: u32| -> Result<&'a [u8], String> {
            frame
                .plane_data(i)
                .map_err(|e| format!("cannot read plane {i}: {e}"))
        };
        let stride = |i: usize| info.stride()[i] as usize;
        let packed = |pixel_stride: usize, rgb: [usize; 3]| -> Result<Self, String> {
            Ok(SourceImage::Packed {
                data: plane(0)?,
                stride: stride(0),
                pixel_stride,
                rgb,
                width,
                height,
            })
        };
        let matrix = YuvToRgb::new(info.colorimetry().matrix(), info.colorimetry().range());
        let yuv = |u_plane: u32, v_plane: u32, offsets: (usize, usize), step: usize| {
            let u = plane(u_plane)?;
            let v = plane(v_plane)?;
            Ok::<_, String>(SourceImage::Yuv420 {
                y: plane(0)?,
                y_stride: stride(0),
                u: &u[offsets.0..],
                v: &v[offsets.1..],
                chroma_stride: stride(u_plane as usize),
                chroma_step: step,
                width,
                height,
                matrix,
            })
        };
        match info.format() {
            VideoFormat::Rgb => packed(3, [0, 1, 2]),
            VideoFormat::Bgr => packed(3, [2, 1, 0]),
            VideoFormat::Rgba | VideoFormat::Rgbx => packed(4, [0, 1, 2]),
            VideoFormat::Bgra | VideoFormat::Bgrx => packed(4, [2, 1, 0]),
            VideoFormat::Argb | VideoFormat::Xrgb => packed(4, [1, 2, 3]),
            VideoFormat::Abgr | VideoFormat::Xbgr => packed(4, [3, 2, 1]),
            VideoFormat::Gray8 => Ok(SourceImage::Gray {
                data: plane(0)?,
                stride: stride(0),
                width,
                height,
            }),
            VideoFormat::Nv12 => yuv(1, 1, (0, 1), 2),
            VideoFormat::Nv21 => yuv(1, 1, (1, 0), 2),
            VideoFormat::I420 => yuv(1, 2, (0, 0), 1),
            VideoFormat::Yv12 => yuv(2, 1, (0, 0), 1),
            other => Err(format!("unsupported video format {other:?}")),
        }
    }

    pub fn size(&self) -> (u32, u32) {
        match *self {
            SourceImage::Packed { width, height, .. }
            | SourceImage::Gray { width, height, .. }
            | SourceImage::Yuv420 { width, height, .. } => (width, height),
        }
    }
}

/// Bilinear sampling positions along one axis: for every output pixel, the two source indices
/// and the weight of the second in 1/256.
#[derive(Debug, Default)]
struct AxisTable {
    taps: Vec<Tap>,
}

#[derive(Debug, Clone, Copy)]
struct Tap {
    i0: u32,
    i1: u32,
    w1: u32,
}

impl AxisTable {
    /// `count` output samples starting at source coordinate `start`, `step` source pixels apart,
    /// on an axis of `len` pixels; `subsample` converts to a subsampled plane (chroma: 0.5).
    fn fill(&mut self, count: u32, start: f32, step: f32, len: u32, subsample: f32) {
        self.taps.clear();
        let max = (len.max(1) - 1) as f32;
        self.taps.extend((0..count).map(|i| {
            let centre = start + (i as f32 + 0.5) * step;
            let pos = (centre * subsample - 0.5).clamp(0.0, max);
            let p0 = pos.floor();
            Tap {
                i0: p0 as u32,
                i1: (p0 + 1.0).min(max) as u32,
                w1: ((pos - p0) * 256.0).round() as u32,
            }
        }));
    }
}

/// Bilinear blend of four 8-bit samples with weights in 1/256.
#[inline(always)]
fn lerp2(a: u8, b: u8, c: u8, d: u8, wx: u32, wy: u32) -> u8 {
    let top = a as u32 * (256 - wx) + b as u32 * wx;
    let bottom = c as u32 * (256 - wx) + d as u32 * wx;
    ((top * (256 - wy) + bottom * wy + (1 << 15)) >> 16) as u8
}

/// Reusable CPU pre-processor; keeps its sampling tables between frames.
#[derive(Debug, Default)]
pub struct Preprocessor {
    xs: AxisTable,
    ys: AxisTable,
    cxs: AxisTable,
    cys: AxisTable,
}

impl Preprocessor {
    /// Writes the tensor of one frame region into `out` (`net.frame_len()` elements) and returns
    /// the geometry used.
    pub fn run<T: TensorElement>(
        &mut self,
        src: &SourceImage<'_>,
        roi: BBox,
        net: &NetworkInput,
        out: &mut [T],
    ) -> Letterbox {
        assert_eq!(out.len(), net.frame_len(), "tensor slot size");
        let lb = Letterbox::new(
            roi,
            net.width,
            net.height,
            net.maintain_aspect_ratio,
            net.symmetric_padding,
        );
        let (src_w, src_h) = src.size();
        let (step_x, step_y) = (1.0 / lb.scale_x, 1.0 / lb.scale_y);
        self.xs.fill(lb.content_w, roi.left, step_x, src_w, 1.0);
        self.ys.fill(lb.content_h, roi.top, step_y, src_h, 1.0);
        if let SourceImage::Yuv420 { .. } = src {
            self.cxs
                .fill(lb.content_w, roi.left, step_x, src_w.div_ceil(2), 0.5);
            self.cys
                .fill(lb.content_h, roi.top, step_y, src_h.div_ceil(2), 0.5);
        }

        let channels = net.channels as usize;
        let plane_len = (net.width * net.height) as usize;
        let writer = RowWriter::<T>::new(net, &lb);

        // Padding first (only where the content does not cover).
        if lb.content_w != net.width || lb.content_h != net.height {
            let pad = writer.pad();
            for (i, v) in out.iter_mut().enumerate() {
                let c = if net.planar {
                    i / plane_len
                } else {
                    i % channels
                };
                *v = pad[c];
            }
        }

        let (xs, ys, cxs, cys) = (
            &self.xs.taps[..],
            &self.ys.taps[..],
            &self.cxs.taps[..],
            &self.cys.taps[..],
        );
        match *src {
            SourceImage::Packed {
                data,
                stride,
                pixel_stride,
                rgb,
                ..
            } => writer.write(out, |oy| PackedRow {
                row0: &data[ys[oy].i0 as usize * stride..],
                row1: &data[ys[oy].i1 as usize * stride..],
                wy: ys[oy].w1,
                xs,
                pixel_stride,
                rgb,
            }),
            SourceImage::Gray { data, stride, .. } => writer.write(out, |oy| GrayRow {
                row0: &data[ys[oy].i0 as usize * stride..],
                row1: &data[ys[oy].i1 as usize * stride..],
                wy: ys[oy].w1,
                xs,
            }),
            SourceImage::Yuv420 {
                y,
                y_stride,
                u,
                v,
                chroma_stride,
                chroma_step,
                matrix,
                ..
            } => writer.write(out, |oy| {
                let (c0, c1) = (
                    cys[oy].i0 as usize * chroma_stride,
                    cys[oy].i1 as usize * chroma_stride,
                );
                YuvRow {
                    y0: &y[ys[oy].i0 as usize * y_stride..],
                    y1: &y[ys[oy].i1 as usize * y_stride..],
                    wy: ys[oy].w1,
                    u0: &u[c0..],
                    u1: &u[c1..],
                    v0: &v[c0..],
                    v1: &v[c1..],
                    cwy: cys[oy].w1,
                    xs,
                    cxs,
                    step: chroma_step,
                    matrix,
                }
            }),
        }
        lb
    }
}

/// The two source rows that one output row samples, able to give the RGB (or luma) value of any
/// output column. One implementation per source layout, so the per-pixel loop is monomorphised.
trait RowSampler {
    /// RGB of output column `ox`.
    fn rgb(&self, ox: usize) -> [u8; 3];
    /// Luma of output column `ox`.
    fn luma(&self, ox: usize) -> u8 {
        let [r, g, b] = self.rgb(ox);
        ((77 * r as u32 + 150 * g as u32 + 29 * b as u32 + 128) >> 8) as u8
    }
}

struct PackedRow<'a> {
    row0: &'a [u8],
    row1: &'a [u8],
    wy: u32,
    xs: &'a [Tap],
    pixel_stride: usize,
    rgb: [usize; 3],
}

impl RowSampler for PackedRow<'_> {
    #[inline(always)]
    fn rgb(&self, ox: usize) -> [u8; 3] {
        let t = self.xs[ox];
        let (c0, c1) = (
            t.i0 as usize * self.pixel_stride,
            t.i1 as usize * self.pixel_stride,
        );
        self.rgb.map(|ch| {
            lerp2(
                self.row0[c0 + ch],
                self.row0[c1 + ch],
                self.row1[c0 + ch],
                self.row1[c1 + ch],
                t.w1,
                self.wy,
            )
        })
    }
}

struct GrayRow<'a> {
    row0: &'a [u8],
    row1: &'a [u8],
    wy: u32,
    xs: &'a [Tap],
}

impl RowSampler for GrayRow<'_> {
    #[inline(always)]
    fn rgb(&self, ox: usize) -> [u8; 3] {
        let g = self.luma(ox);
        [g, g, g]
    }

    #[inline(always)]
    fn luma(&self, ox: usize) -> u8 {
        let t = self.xs[ox];
        let (x0, x1) = (t.i0 as usize, t.i1 as usize);
        lerp2(
            self.row0[x0],
            self.row0[x1],
            self.row1[x0],
            self.row1[x1],
            t.w1,
            self.wy,
        )
    }
}

struct YuvRow<'a> {
    y0: &'a [u8],
    y1: &'a [u8],
    wy: u32,
    u0: &'a [u8],
    u1: &'a [u8],
    v0: &'a [u8],
    v1: &'a [u8],
    cwy: u32,
    xs: &'a [Tap],
    cxs: &'a [Tap],
    step: usize,
    matrix: YuvToRgb,
}

impl YuvRow<'_> {
    #[inline(always)]
    fn raw_luma(&self, ox: usize) -> u8 {
        let t = self.xs[ox];
        let (x0, x1) = (t.i0 as usize, t.i1 as usize);
        lerp2(
            self.y0[x0],
            self.y0[x1],
            self.y1[x0],
            self.y1[x1],
            t.w1,
            self.wy,
        )
    }
}

impl RowSampler for YuvRow<'_> {
    #[inline(always)]
    fn rgb(&self, ox: usize) -> [u8; 3] {
        let t = self.cxs[ox];
        let (c0, c1) = (t.i0 as usize * self.step, t.i1 as usize * self.step);
        let u = lerp2(
            self.u0[c0],
            self.u0[c1],
            self.u1[c0],
            self.u1[c1],
            t.w1,
            self.cwy,
        );
        let v = lerp2(
            self.v0[c0],
            self.v0[c1],
            self.v1[c0],
            self.v1[c1],
            t.w1,
            self.cwy,
        );
        self.matrix.convert(self.raw_luma(ox), u, v)
    }

    #[inline(always)]
    fn luma(&self, ox: usize) -> u8 {
        self.matrix.luma(self.raw_luma(ox))
    }
}

/// Writes the content rows of the network tensor from row samplers. Normalisation
/// (`scale * (x - offset[c])` and the conversion to the tensor type) is a 256-entry table per
/// channel, since the scaled pixel is 8-bit as in nvinfer.
struct RowWriter<T> {
    width: usize,
    plane_len: usize,
    pad_x: usize,
    pad_y: usize,
    content_w: usize,
    content_h: usize,
    planar: bool,
    gray: bool,
    /// Network channel c takes element order[c] of an RGB triple.
    order: [usize; 3],
    lut: [[T; 256]; 3],
}

impl<T: TensorElement> RowWriter<T> {
    fn new(net: &NetworkInput, lb: &Letterbox) -> Self {
        let mut lut = [[T::default(); 256]; 3];
        for (c, table) in lut.iter_mut().enumerate() {
            for (v, entry) in table.iter_mut().enumerate() {
                *entry = T::from_f32(net.scale * (v as f32 - net.offsets[c]));
            }
        }
        Self {
            width: net.width as usize,
            plane_len: (net.width * net.height) as usize,
            pad_x: lb.pad_x as usize,
            pad_y: lb.pad_y as usize,
            content_w: lb.content_w as usize,
            content_h: lb.content_h as usize,
            planar: net.planar,
            gray: net.channels == 1,
            order: if net.color == ColorFormat::Bgr {
                [2, 1, 0]
            } else {
                [0, 1, 2]
            },
            lut,
        }
    }

    /// The normalised value of padding, per channel.
    fn pad(&self) -> [T; 3] {
        [self.lut[0][0], self.lut[1][0], self.lut[2][0]]
    }

    fn write<S: RowSampler>(&self, out: &mut [T], row: impl Fn(usize) -> S) {
        let [o0, o1, o2] = self.order;
        let [l0, l1, l2] = &self.lut;
        for oy in 0..self.content_h {
            let sampler = row(oy);
            let first = (oy + self.pad_y) * self.width + self.pad_x;
            if self.gray {
                for (ox, o) in out[first..first + self.content_w].iter_mut().enumerate() {
                    *o = l0[sampler.luma(ox) as usize];
                }
            } else if self.planar {
                let (p0, rest) = out.split_at_mut(self.plane_len);
                let (p1, p2) = rest.split_at_mut(self.plane_len);
                let range = first..first + self.content_w;
                for (ox, ((a, b), c)) in p0[range.clone()]
                    .iter_mut()
                    .zip(p1[range.clone()].iter_mut())
                    .zip(p2[range].iter_mut())
                    .enumerate()
                {
                    let px = sampler.rgb(ox);
                    *a = l0[px[o0] as usize];
                    *b = l1[px[o1] as usize];
                    *c = l2[px[o2] as usize];
                }
            } else {
                let row_out = &mut out[first * 3..(first + self.content_w) * 3];
                for (ox, o) in row_out.chunks_exact_mut(3).enumerate() {
                    let px = sampler.rgb(ox);
                    o[0] = l0[px[o0] as usize];
                    o[1] = l1[px[o1] as usize];
                    o[2] = l2[px[o2] as usize];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(w: u32, h: u32, color: ColorFormat, planar: bool) -> NetworkInput {
        NetworkInput {
            width: w,
            height: h,
            channels: if color == ColorFormat::Gray { 1 } else { 3 },
            planar,
            color,
            scale: 1.0,
            offsets: [0.0; 3],
            maintain_aspect_ratio: false,
            symmetric_padding: false,
        }
    }

    #[test]
    fn letterbox_symmetric_arithmetic() {
        // 768x576 into 300x300 keeping aspect: 300x225 content, 37 rows of padding on top.
        let lb = Letterbox::new(BBox::new(0.0, 0.0, 768.0, 576.0), 300, 300, true, true);
        assert_eq!(
            (lb.content_w, lb.content_h, lb.pad_x, lb.pad_y),
            (300, 225, 0, 37)
        );
        let src = BBox::new(100.0, 200.0, 50.0, 120.0);
        let back = lb.to_source(lb.to_network(src));
        for (a, b) in [
            (back.left, 100.0),
            (back.top, 200.0),
            (back.width, 50.0),
            (back.height, 120.0),
        ] {
            assert!((a - b).abs() < 1e-3, "{back:?}");
        }
        // The network corner of the content maps to the frame corner, the far corner to the far corner.
        let corner = lb.to_source(BBox::new(0.0, 37.0, 300.0, 225.0));
        assert!((corner.left).abs() < 1e-4 && (corner.top).abs() < 1e-4);
        assert!((corner.right() - 768.0).abs() < 1e-3 && (corner.bottom() - 576.0).abs() < 1e-3);
    }

    #[test]
    fn letterbox_top_left_and_stretch() {
        let lb = Letterbox::new(BBox::new(0.0, 0.0, 200.0, 100.0), 100, 100, true, false);
        assert_eq!(
            (lb.content_w, lb.content_h, lb.pad_x, lb.pad_y),
            (100, 50, 0, 0)
        );
        let b = lb.to_source(BBox::new(10.0, 10.0, 20.0, 20.0));
        assert_eq!(b, BBox::new(20.0, 20.0, 40.0, 40.0));
        let lb = Letterbox::new(BBox::new(0.0, 0.0, 200.0, 100.0), 100, 100, false, false);
        assert_eq!((lb.scale_x, lb.scale_y), (0.5, 1.0));
        // A region of interest: boxes come back in full-frame coordinates.
        let lb = Letterbox::new(BBox::new(50.0, 30.0, 100.0, 100.0), 50, 50, false, false);
        assert_eq!(
            lb.to_source(BBox::new(0.0, 0.0, 50.0, 50.0)),
            BBox::new(50.0, 30.0, 100.0, 100.0)
        );
    }

    fn rgba_image(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 4]) -> Vec<u8> {
        let mut v = Vec::new();
        for y in 0..h {
            for x in 0..w {
                v.extend_from_slice(&f(x, y));
            }
        }
        v
    }

    #[test]
    fn identity_size_copies_pixels_in_requested_order() {
        let data = rgba_image(4, 2, |x, y| [(x * 10) as u8, (y * 20) as u8, 200, 255]);
        let src = SourceImage::Packed {
            data: &data,
            stride: 16,
            pixel_stride: 4,
            rgb: [0, 1, 2],
            width: 4,
            height: 2,
        };
        let mut pre = Preprocessor::default();
        let mut out = vec![0u8; 4 * 2 * 3];
        pre.run(
            &src,
            BBox::new(0.0, 0.0, 4.0, 2.0),
            &net(4, 2, ColorFormat::Rgb, false),
            &mut out,
        );
        // NHWC RGB: pixel (3,1) = [30, 20, 200].
        assert_eq!(&out[(4 + 3) * 3..(4 + 3) * 3 + 3], &[30, 20, 200]);
        let mut planar = vec![0f32; 4 * 2 * 3];
        pre.run(
            &src,
            BBox::new(0.0, 0.0, 4.0, 2.0),
            &net(4, 2, ColorFormat::Bgr, true),
            &mut planar,
        );
        // NCHW BGR: channel 0 is blue, channel 2 is red.
        assert_eq!(planar[4 + 3], 200.0);
        assert_eq!(planar[2 * 8 + 4 + 3], 30.0);
    }

    #[test]
    fn normalisation_and_padding() {
        let data = rgba_image(4, 2, |_, _| [100, 100, 100, 255]);
        let src = SourceImage::Packed {
            data: &data,
            stride: 16,
            pixel_stride: 4,
            rgb: [0, 1, 2],
            width: 4,
            height: 2,
        };
        let mut n = net(4, 4, ColorFormat::Rgb, true);
        n.maintain_aspect_ratio = true;
        n.symmetric_padding = true;
        n.scale = 0.5;
        n.offsets = [10.0, 20.0, 30.0];
        let mut out = vec![0f32; 4 * 4 * 3];
        let lb = Preprocessor::default().run(&src, BBox::new(0.0, 0.0, 4.0, 2.0), &n, &mut out);
        assert_eq!((lb.pad_y, lb.content_h), (1, 2));
        // Row 0 is padding: 0.5 * (0 - offset).
        assert_eq!(out[0], -5.0);
        assert_eq!(out[16], -10.0);
        // Row 1 is content: 0.5 * (100 - offset).
        assert_eq!(out[4], 45.0);
        assert_eq!(out[32 + 4], 35.0);
        assert_eq!(out[3 * 4], -5.0, "row 3 is padding again");
    }

    #[test]
    fn downscale_averages_neighbours() {
        // Columns alternate 0 and 200: halving the width samples between them.
        let data = rgba_image(4, 1, |x, _| {
            if x % 2 == 0 {
                [0, 0, 0, 255]
            } else {
                [200, 200, 200, 255]
            }
        });
        let src = SourceImage::Packed {
            data: &data,
            stride: 16,
            pixel_stride: 4,
            rgb: [0, 1, 2],
            width: 4,
            height: 1,
        };
        let mut out = vec![0f32; 2 * 3];
        Preprocessor::default().run(
            &src,
            BBox::new(0.0, 0.0, 4.0, 1.0),
            &net(2, 1, ColorFormat::Rgb, false),
            &mut out,
        );
        assert_eq!(out[0], 100.0);
        assert_eq!(out[3], 100.0);
    }

    #[test]
    fn nv12_converts_with_bt601_limited_range() {
        // Y=81, U=90, V=240 is pure red (255,0,0) in BT.601 limited range.
        let (w, h) = (4u32, 2u32);
        let y = vec![81u8; (w * h) as usize];
        let uv: Vec<u8> = [90u8, 240].repeat((w / 2) as usize);
        let src = SourceImage::Yuv420 {
            y: &y,
            y_stride: w as usize,
            u: &uv,
            v: &uv[1..],
            chroma_stride: w as usize,
            chroma_step: 2,
            width: w,
            height: h,
            matrix: YuvToRgb::new(VideoColorMatrix::Bt601, VideoColorRange::Range16_235),
        };
        let mut out = vec![0u8; (w * h * 3) as usize];
        Preprocessor::default().run(
            &src,
            BBox::new(0.0, 0.0, w as f32, h as f32),
            &net(w, h, ColorFormat::Rgb, false),
            &mut out,
        );
        for px in out.chunks(3) {
            assert!(px[0] >= 253 && px[1] <= 2 && px[2] <= 2, "{px:?}");
        }
        let mut gray = vec![0u8; (w * h) as usize];
        Preprocessor::default().run(
            &src,
            BBox::new(0.0, 0.0, w as f32, h as f32),
            &net(w, h, ColorFormat::Gray, true),
            &mut gray,
        );
        assert_eq!(gray[0], 76, "luma of red in full range: (81-16)*255/219");
    }

    #[test]
    fn f16_output() {
        let data = rgba_image(1, 1, |_, _| [255, 0, 0, 255]);
        let src = SourceImage::Packed {
            data: &data,
            stride: 4,
            pixel_stride: 4,
            rgb: [0, 1, 2],
            width: 1,
            height: 1,
        };
        let mut n = net(1, 1, ColorFormat::Rgb, true);
        n.scale = 1.0 / 255.0;
        let mut out = vec![half::f16::ZERO; 3];
        Preprocessor::default().run(&src, BBox::new(0.0, 0.0, 1.0, 1.0), &n, &mut out);
        assert_eq!(out[0].to_f32(), 1.0);
        assert_eq!(out[1].to_f32(), 0.0);
    }
}
