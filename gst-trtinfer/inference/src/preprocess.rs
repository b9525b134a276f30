// SPDX-License-Identifier: MIT OR Apache-2.0
//! Pre-processing with nvinfer semantics, on the CPU: scale a region of a frame to the network
//! size (stretched, or keeping the aspect ratio with top-left or symmetric padding), convert the
//! colour (RGB/BGR/GRAY), normalise `y = net-scale-factor * (x - offset[c])`, and write NCHW or
//! NHWC f32 / f16 / u8, all in one pass. Sampling is bilinear at pixel centres.
//!
//! [`Letterbox`] records the geometry so that boxes found in network pixels map back to frame
//! pixels exactly.

use ferrostream_core::BBox;

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
        self.width as usize * self.height as usize * self.channels as usize
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

    /// Maps an oriented box (turned by `angle` about its centre) in network pixels to source
    /// pixels: its centre exactly, its size and angle as [`ferrostream_core::oriented::scaled`]
    /// (exact where both axes scale alike, as a letterbox does).
    pub fn to_source_turned(&self, b: BBox, angle: f32) -> (BBox, f32) {
        let (s, angle) =
            ferrostream_core::oriented::scaled(&b, angle, 1.0 / self.scale_x, 1.0 / self.scale_y);
        let centre = self.to_source(BBox::new(
            b.left + b.width / 2.0,
            b.top + b.height / 2.0,
            0.0,
            0.0,
        ));
        let bbox = BBox::new(
            centre.left - s.width / 2.0,
            centre.top - s.height / 2.0,
            s.width,
            s.height,
        );
        (bbox, angle)
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

/// The colour matrix of YUV pixels (what a video's colorimetry says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorMatrix {
    /// BT.601, also where the colorimetry says nothing.
    #[default]
    Bt601,
    Bt709,
    Bt2020,
    Smpte240m,
    Fcc,
}

impl YuvToRgb {
    /// The conversion for `matrix`, with luma in 0..255 (`full_range`) or 16..235.
    pub fn new(matrix: ColorMatrix, full_range: bool) -> Self {
        let (kr, kb): (f64, f64) = match matrix {
            ColorMatrix::Bt601 => (0.299, 0.114),
            ColorMatrix::Bt709 => (0.2126, 0.0722),
            ColorMatrix::Bt2020 => (0.2627, 0.0593),
            ColorMatrix::Smpte240m => (0.212, 0.087),
            ColorMatrix::Fcc => (0.30, 0.11),
        };
        let full = full_range;
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

    /// The fixed-point coefficients `[y_offset, y_gain, r_v, g_u, g_v, b_u]` (12 fractional
    /// bits), for GPU kernels that must convert exactly as [`YuvToRgb::convert`] does.
    pub fn coefficients(&self) -> [i32; 6] {
        [
            self.y_offset,
            self.y_gain,
            self.r_v,
            self.g_u,
            self.g_v,
            self.b_u,
        ]
    }

    /// Luma in full range, for grayscale networks.
    #[inline(always)]
    pub fn luma(&self, y: u8) -> u8 {
        (((y as i32 - self.y_offset) * self.y_gain + (1 << (FX - 1))) >> FX).clamp(0, 255) as u8
    }
}

/// Interleaved 8-bit RGB-family pixels; `rgb` gives the byte offsets of R, G and B in a pixel.
#[derive(Debug, Clone, Copy)]
pub struct PackedImage<'a> {
    pub data: &'a [u8],
    pub stride: usize,
    pub pixel_stride: usize,
    pub rgb: [usize; 3],
    pub width: u32,
    pub height: u32,
}

impl<'a> PackedImage<'a> {
    /// Tightly packed RGB rows (3 bytes a pixel, no padding), as image decoders give them.
    pub fn rgb(data: &'a [u8], width: u32, height: u32) -> Self {
        Self {
            data,
            stride: width as usize * 3,
            pixel_stride: 3,
            rgb: [0, 1, 2],
            width,
            height,
        }
    }
}

/// 8-bit grayscale pixels.
#[derive(Debug, Clone, Copy)]
pub struct GrayImage<'a> {
    pub data: &'a [u8],
    pub stride: usize,
    pub width: u32,
    pub height: u32,
}

/// 4:2:0 YUV, planar (I420/YV12, `chroma_step` 1) or semi-planar (NV12/NV21, `chroma_step` 2,
/// with `u` and `v` starting at their first byte in the shared plane).
#[derive(Debug, Clone, Copy)]
pub struct Yuv420Image<'a> {
    pub y: &'a [u8],
    pub y_stride: usize,
    pub u: &'a [u8],
    pub v: &'a [u8],
    pub chroma_stride: usize,
    pub chroma_step: usize,
    pub width: u32,
    pub height: u32,
    pub matrix: YuvToRgb,
}

#[derive(Debug, Clone, Copy)]
enum Planes<'a> {
    Packed(PackedImage<'a>),
    Gray(GrayImage<'a>),
    Yuv420(Yuv420Image<'a>),
}

/// Borrowed pixels of one frame in a supported layout, checked on construction: every row of
/// every plane lies inside its slice, which is what lets the sampling loops index without checks.
#[derive(Debug, Clone, Copy)]
pub struct SourceImage<'a>(Planes<'a>);

/// Whether `rows` rows of `row_bytes` bytes, `stride` apart, fit in `len` bytes.
fn plane_fits(len: usize, stride: usize, row_bytes: usize, rows: usize) -> bool {
    rows > 0 && row_bytes > 0 && stride >= row_bytes && (rows - 1) * stride + row_bytes <= len
}

impl<'a> SourceImage<'a> {
    pub fn packed(image: PackedImage<'a>) -> Result<Self, String> {
        let row_bytes = image.width as usize * image.pixel_stride;
        if image.rgb.iter().any(|&o| o >= image.pixel_stride)
            || !plane_fits(
                image.data.len(),
                image.stride,
                row_bytes,
                image.height as usize,
            )
        {
            return Err(format!(
                "{}x{} packed image with stride {} does not fit its {} bytes",
                image.width,
                image.height,
                image.stride,
                image.data.len()
            ));
        }
        Ok(Self(Planes::Packed(image)))
    }

    pub fn gray(image: GrayImage<'a>) -> Result<Self, String> {
        if !plane_fits(
            image.data.len(),
            image.stride,
            image.width as usize,
            image.height as usize,
        ) {
            return Err(format!(
                "{}x{} gray image with stride {} does not fit its {} bytes",
                image.width,
                image.height,
                image.stride,
                image.data.len()
            ));
        }
        Ok(Self(Planes::Gray(image)))
    }

    pub fn yuv420(image: Yuv420Image<'a>) -> Result<Self, String> {
        let (w, h) = (image.width as usize, image.height as usize);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let chroma_row = cw.saturating_sub(1) * image.chroma_step + 1;
        if image.chroma_step == 0
            || !plane_fits(image.y.len(), image.y_stride, w, h)
            || !plane_fits(image.u.len(), image.chroma_stride, chroma_row, ch)
            || !plane_fits(image.v.len(), image.chroma_stride, chroma_row, ch)
        {
            return Err(format!("{w}x{h} YUV 4:2:0 planes do not fit their buffers"));
        }
        Ok(Self(Planes::Yuv420(image)))
    }
}

impl<'a> SourceImage<'a> {
    pub fn size(&self) -> (u32, u32) {
        match self.0 {
            Planes::Packed(p) => (p.width, p.height),
            Planes::Gray(g) => (g.width, g.height),
            Planes::Yuv420(y) => (y.width, y.height),
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

/// Reusable CPU pre-processor; keeps its sampling tables and row buffers between frames.
#[derive(Debug, Default)]
pub struct Preprocessor {
    xs: AxisTable,
    ys: AxisTable,
    cxs: AxisTable,
    cys: AxisTable,
    /// Blended source rows of the output row being written.
    scratch: Scratch,
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
        if let Planes::Yuv420(_) = src.0 {
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

        let tables = Tables {
            xs: &self.xs.taps,
            ys: &self.ys.taps,
            cxs: &self.cxs.taps,
            cys: &self.cys.taps,
        };
        match src.0 {
            Planes::Packed(image) => {
                writer.write(out, &mut self.scratch, &PackedSource { image, tables })
            }
            Planes::Gray(image) => {
                writer.write(out, &mut self.scratch, &GraySource { image, tables })
            }
            Planes::Yuv420(image) => {
                writer.write(out, &mut self.scratch, &YuvSource { image, tables })
            }
        }
        lb
    }
}

/// The two source rows that one output row samples, able to give the RGB (or luma) value of any
/// output column. One implementation per source layout, so the per-pixel loop is monomorphised.
/// Linear blend of two 8-bit samples with the weight of the second in 1/256.
#[inline(always)]
fn lerp(a: u8, b: u8, w: u32) -> u8 {
    ((a as u32 * (256 - w) + b as u32 * w + 128) >> 8) as u8
}

/// Blends two source rows into `out`, element by element (the vertical half of bilinear
/// scaling; a contiguous loop the compiler vectorises). `step` picks every `step`-th byte.
fn blend_rows(r0: &[u8], r1: &[u8], w: u32, step: usize, out: &mut [u8]) {
    if step == 1 {
        for ((o, &a), &b) in out.iter_mut().zip(r0).zip(r1) {
            *o = lerp(a, b, w);
        }
    } else {
        let pairs = r0.iter().step_by(step).zip(r1.iter().step_by(step));
        for (o, (&a, &b)) in out.iter_mut().zip(pairs) {
            *o = lerp(a, b, w);
        }
    }
}

/// Blends bytes `i0` and `i1` of a vertically blended row (the horizontal half).
///
/// # Safety
/// `i0` and `i1` must be inside `row`. The sources guarantee it: every blended row is as long as
/// a source row (or chroma row), and [`AxisTable::fill`] clamps every index to the plane's width
/// (or chroma width) minus one, so the largest index read is the last byte of a row.
#[inline(always)]
unsafe fn tap(row: &[u8], i0: usize, i1: usize, w: u32) -> u8 {
    debug_assert!(i0.max(i1) < row.len());
    // SAFETY: the caller guarantees both indices are inside `row`.
    unsafe { lerp(*row.get_unchecked(i0), *row.get_unchecked(i1), w) }
}

/// Per-thread rows blended vertically for the current output row.
#[derive(Debug, Default)]
struct Scratch {
    a: Vec<u8>,
    b: Vec<u8>,
    c: Vec<u8>,
}

/// A source image as the row writer sees it: it blends the two source rows of output row `oy`
/// into the scratch rows, then gives the RGB (or luma) value of any output column. One
/// implementation per layout, so the per-pixel loop is monomorphised.
trait RowSource {
    fn prepare(&self, oy: usize, scratch: &mut Scratch);
    /// RGB of output column `ox` of the prepared row.
    fn rgb(&self, scratch: &Scratch, ox: usize) -> [u8; 3];
    /// Luma of output column `ox` of the prepared row.
    fn luma(&self, scratch: &Scratch, ox: usize) -> u8 {
        let [r, g, b] = self.rgb(scratch, ox);
        ((77 * r as u32 + 150 * g as u32 + 29 * b as u32 + 128) >> 8) as u8
    }
}

/// Sampling positions: luma (or packed) columns and rows, chroma columns and rows.
struct Tables<'a> {
    xs: &'a [Tap],
    ys: &'a [Tap],
    cxs: &'a [Tap],
    cys: &'a [Tap],
}

/// The two source rows of tap `t`, each `row_bytes` long (checked slicing, once per row).
fn rows_of(data: &[u8], stride: usize, row_bytes: usize, t: Tap) -> (&[u8], &[u8]) {
    let (r0, r1) = (t.i0 as usize * stride, t.i1 as usize * stride);
    (&data[r0..r0 + row_bytes], &data[r1..r1 + row_bytes])
}

struct PackedSource<'a> {
    image: PackedImage<'a>,
    tables: Tables<'a>,
}

impl RowSource for PackedSource<'_> {
    fn prepare(&self, oy: usize, scratch: &mut Scratch) {
        let p = &self.image;
        let row_bytes = p.width as usize * p.pixel_stride;
        let t = self.tables.ys[oy];
        let (r0, r1) = rows_of(p.data, p.stride, row_bytes, t);
        scratch.a.resize(row_bytes, 0);
        blend_rows(r0, r1, t.w1, 1, &mut scratch.a);
    }

    #[inline(always)]
    fn rgb(&self, scratch: &Scratch, ox: usize) -> [u8; 3] {
        let t = self.tables.xs[ox];
        let ps = self.image.pixel_stride;
        let (c0, c1) = (t.i0 as usize * ps, t.i1 as usize * ps);
        // SAFETY: i1 < width and every channel offset < pixel_stride (checked by
        // `SourceImage::packed`), so c1 + ch is at most the last byte of the row (see `tap`).
        self.image
            .rgb
            .map(|ch| unsafe { tap(&scratch.a, c0 + ch, c1 + ch, t.w1) })
    }
}

struct GraySource<'a> {
    image: GrayImage<'a>,
    tables: Tables<'a>,
}

impl RowSource for GraySource<'_> {
    fn prepare(&self, oy: usize, scratch: &mut Scratch) {
        let g = &self.image;
        let t = self.tables.ys[oy];
        let (r0, r1) = rows_of(g.data, g.stride, g.width as usize, t);
        scratch.a.resize(g.width as usize, 0);
        blend_rows(r0, r1, t.w1, 1, &mut scratch.a);
    }

    #[inline(always)]
    fn rgb(&self, scratch: &Scratch, ox: usize) -> [u8; 3] {
        let g = self.luma(scratch, ox);
        [g, g, g]
    }

    #[inline(always)]
    fn luma(&self, scratch: &Scratch, ox: usize) -> u8 {
        let t = self.tables.xs[ox];
        // SAFETY: i0, i1 < width (see `tap`).
        unsafe { tap(&scratch.a, t.i0 as usize, t.i1 as usize, t.w1) }
    }
}

struct YuvSource<'a> {
    image: Yuv420Image<'a>,
    tables: Tables<'a>,
}

impl YuvSource<'_> {
    #[inline(always)]
    fn raw_luma(&self, scratch: &Scratch, ox: usize) -> u8 {
        let t = self.tables.xs[ox];
        // SAFETY: i0, i1 < width (see `tap`).
        unsafe { tap(&scratch.a, t.i0 as usize, t.i1 as usize, t.w1) }
    }
}

impl RowSource for YuvSource<'_> {
    fn prepare(&self, oy: usize, scratch: &mut Scratch) {
        let i = &self.image;
        let width = i.width as usize;
        let t = self.tables.ys[oy];
        let (y0, y1) = rows_of(i.y, i.y_stride, width, t);
        scratch.a.resize(width, 0);
        blend_rows(y0, y1, t.w1, 1, &mut scratch.a);
        // Chroma rows, de-interleaved (NV12/NV21) to one byte per chroma sample.
        let chroma_w = width.div_ceil(2);
        let chroma_row = (chroma_w - 1) * i.chroma_step + 1;
        let ct = self.tables.cys[oy];
        let (u0, u1) = rows_of(i.u, i.chroma_stride, chroma_row, ct);
        let (v0, v1) = rows_of(i.v, i.chroma_stride, chroma_row, ct);
        scratch.b.resize(chroma_w, 0);
        scratch.c.resize(chroma_w, 0);
        blend_rows(u0, u1, ct.w1, i.chroma_step, &mut scratch.b);
        blend_rows(v0, v1, ct.w1, i.chroma_step, &mut scratch.c);
    }

    #[inline(always)]
    fn rgb(&self, scratch: &Scratch, ox: usize) -> [u8; 3] {
        let t = self.tables.cxs[ox];
        let (c0, c1) = (t.i0 as usize, t.i1 as usize);
        // SAFETY: c0, c1 < chroma width, the length of the blended chroma rows (see `tap`).
        let (u, v) = unsafe { (tap(&scratch.b, c0, c1, t.w1), tap(&scratch.c, c0, c1, t.w1)) };
        self.image.matrix.convert(self.raw_luma(scratch, ox), u, v)
    }

    #[inline(always)]
    fn luma(&self, scratch: &Scratch, ox: usize) -> u8 {
        self.image.matrix.luma(self.raw_luma(scratch, ox))
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

    /// Writes every content row of `out` (the whole tensor of one frame).
    fn write(&self, out: &mut [T], scratch: &mut Scratch, source: &impl RowSource) {
        let (width, rows) = (self.width, self.content_h);
        let (first, last) = (self.pad_y * width, (self.pad_y + rows) * width);
        let rows_out = if self.planar && !self.gray {
            let (p0, rest) = out.split_at_mut(self.plane_len);
            let (p1, p2) = rest.split_at_mut(self.plane_len);
            ContentRows::Planar([p0, p1, p2].map(|p| &mut p[first..last]))
        } else {
            let channels = if self.gray { 1 } else { 3 };
            ContentRows::Packed(&mut out[first * channels..last * channels])
        };
        self.write_rows(rows_out, scratch, source);
    }

    fn write_rows(&self, rows: ContentRows<'_, T>, scratch: &mut Scratch, source: &impl RowSource) {
        let [o0, o1, o2] = self.order;
        let [l0, l1, l2] = &self.lut;
        let (width, w) = (self.width, self.content_w);
        match rows {
            ContentRows::Planar([p0, p1, p2]) => {
                for (r, ((a, b), c)) in p0
                    .chunks_exact_mut(width)
                    .zip(p1.chunks_exact_mut(width))
                    .zip(p2.chunks_exact_mut(width))
                    .enumerate()
                {
                    source.prepare(r, scratch);
                    let range = self.pad_x..self.pad_x + w;
                    for (ox, ((a, b), c)) in a[range.clone()]
                        .iter_mut()
                        .zip(b[range.clone()].iter_mut())
                        .zip(c[range].iter_mut())
                        .enumerate()
                    {
                        let px = source.rgb(scratch, ox);
                        *a = l0[px[o0] as usize];
                        *b = l1[px[o1] as usize];
                        *c = l2[px[o2] as usize];
                    }
                }
            }
            ContentRows::Packed(out) if self.gray => {
                for (r, out_row) in out.chunks_exact_mut(width).enumerate() {
                    source.prepare(r, scratch);
                    for (ox, o) in out_row[self.pad_x..self.pad_x + w].iter_mut().enumerate() {
                        *o = l0[source.luma(scratch, ox) as usize];
                    }
                }
            }
            ContentRows::Packed(out) => {
                for (r, out_row) in out.chunks_exact_mut(width * 3).enumerate() {
                    source.prepare(r, scratch);
                    let content = &mut out_row[self.pad_x * 3..(self.pad_x + w) * 3];
                    for (ox, o) in content.chunks_exact_mut(3).enumerate() {
                        let px = source.rgb(scratch, ox);
                        o[0] = l0[px[o0] as usize];
                        o[1] = l1[px[o1] as usize];
                        o[2] = l2[px[o2] as usize];
                    }
                }
            }
        }
    }
}

/// The content rows of the output tensor: full network-width rows.
enum ContentRows<'a, T> {
    /// NHWC or single-channel rows.
    Packed(&'a mut [T]),
    /// The same rows of the three planes of an NCHW tensor.
    Planar([&'a mut [T]; 3]),
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

    /// Tightly packed RGBA pixels as a source image.
    fn rgba(data: &[u8], width: u32, height: u32) -> SourceImage<'_> {
        SourceImage::packed(PackedImage {
            data,
            stride: 4 * width as usize,
            pixel_stride: 4,
            rgb: [0, 1, 2],
            width,
            height,
        })
        .unwrap()
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
        let src = rgba(&data, 4, 2);
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
        let src = rgba(&data, 4, 2);
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
        let src = rgba(&data, 4, 1);
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
        let src = SourceImage::yuv420(Yuv420Image {
            y: &y,
            y_stride: w as usize,
            u: &uv,
            v: &uv[1..],
            chroma_stride: w as usize,
            chroma_step: 2,
            width: w,
            height: h,
            matrix: YuvToRgb::new(ColorMatrix::Bt601, false),
        })
        .unwrap();
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
    fn images_whose_rows_do_not_fit_are_rejected() {
        fn img(data: &[u8], stride: usize) -> PackedImage<'_> {
            PackedImage {
                data,
                stride,
                pixel_stride: 4,
                rgb: [0, 1, 2],
                width: 4,
                height: 2,
            }
        }
        let data = vec![0u8; 2 * 16];
        assert!(SourceImage::packed(img(&data, 16)).is_ok());
        assert!(
            SourceImage::packed(img(&data[..31], 16)).is_err(),
            "one byte short"
        );
        assert!(
            SourceImage::packed(img(&data, 12)).is_err(),
            "stride shorter than a row"
        );
        let padded = vec![0u8; 20 + 16];
        assert!(
            SourceImage::packed(img(&padded, 20)).is_ok(),
            "no padding needed after the last row"
        );
        let yuv = |u: &'static [u8]| Yuv420Image {
            y: &[0; 16],
            y_stride: 4,
            u,
            v: u,
            chroma_stride: 2,
            chroma_step: 1,
            width: 4,
            height: 4,
            matrix: YuvToRgb::new(ColorMatrix::Bt601, false),
        };
        assert!(SourceImage::yuv420(yuv(&[0; 4])).is_ok());
        assert!(SourceImage::yuv420(yuv(&[0; 3])).is_err());
    }

    #[test]
    fn f16_output() {
        let data = rgba_image(1, 1, |_, _| [255, 0, 0, 255]);
        let src = rgba(&data, 1, 1);
        let mut n = net(1, 1, ColorFormat::Rgb, true);
        n.scale = 1.0 / 255.0;
        let mut out = vec![half::f16::ZERO; 3];
        Preprocessor::default().run(&src, BBox::new(0.0, 0.0, 1.0, 1.0), &n, &mut out);
        assert_eq!(out[0].to_f32(), 1.0);
        assert_eq!(out[1].to_f32(), 0.0);
    }
}
