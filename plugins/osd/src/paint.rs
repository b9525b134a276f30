// SPDX-License-Identifier: MIT OR Apache-2.0
//! The CPU painter: applies a [`DrawList`] to a frame in system memory, plane by plane.
//!
//! Each plane is described by its channels and chroma subsampling, so one set of loops serves
//! packed RGB (4 bytes per pixel), NV12 (Y + interleaved UV) and I420 (Y, U, V). On subsampled
//! planes fills and text cover every chroma sample they touch (a one-pixel border on an odd
//! column still shows its colour), text coverage is averaged over the chroma block, and blurs
//! take only the chroma samples entirely inside their rectangle, so nothing outside it changes.

use gst_video::{VideoFormat, VideoFrameExt, VideoInfo};

use crate::color::{Rgba, YuvMatrix};
use crate::plan::{BlurOp, DrawList, FillOp, PixelRect, TextOp};
use crate::style::BlurMode;

/// What one byte of a pixel in a plane holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    R,
    G,
    B,
    /// Alpha, or the padding byte of RGBx/BGRx (drawn opaque).
    A,
    Y,
    U,
    V,
}

/// One plane of a format: its channels in byte order and its subsampling (log2).
#[derive(Debug, Clone, Copy)]
struct PlaneLayout {
    channels: &'static [Channel],
    sub_x: u32,
    sub_y: u32,
}

const fn plane(channels: &'static [Channel], sub: u32) -> PlaneLayout {
    PlaneLayout {
        channels,
        sub_x: sub,
        sub_y: sub,
    }
}

use Channel::*;

/// The pixel formats `rsosd` draws on (each has a [`layout`]).
pub const FORMATS: [VideoFormat; 6] = [
    VideoFormat::Rgba,
    VideoFormat::Bgra,
    VideoFormat::Rgbx,
    VideoFormat::Bgrx,
    VideoFormat::Nv12,
    VideoFormat::I420,
];

/// The planes of a format `rsosd` draws on, or `None`.
fn layout(format: VideoFormat) -> Option<&'static [PlaneLayout]> {
    const RGBA: &[PlaneLayout] = &[plane(&[R, G, B, A], 0)];
    const BGRA: &[PlaneLayout] = &[plane(&[B, G, R, A], 0)];
    const NV12: &[PlaneLayout] = &[plane(&[Y], 0), plane(&[U, V], 1)];
    const I420: &[PlaneLayout] = &[plane(&[Y], 0), plane(&[U], 1), plane(&[V], 1)];
    match format {
        VideoFormat::Rgba | VideoFormat::Rgbx => Some(RGBA),
        VideoFormat::Bgra | VideoFormat::Bgrx => Some(BGRA),
        VideoFormat::Nv12 => Some(NV12),
        VideoFormat::I420 => Some(I420),
        _ => None,
    }
}

/// The bytes of colour `c` in a plane of `layout`, in channel order.
fn plane_values(layout: &PlaneLayout, matrix: YuvMatrix, c: Rgba) -> [u8; 4] {
    let yuv = match layout.channels[0] {
        Y | U | V => matrix.yuv(c),
        _ => [0; 3],
    };
    let mut v = [0u8; 4];
    for (slot, channel) in v.iter_mut().zip(layout.channels) {
        *slot = match channel {
            R => c.r,
            G => c.g,
            B => c.b,
            A => 255,
            Y => yuv[0],
            U => yuv[1],
            V => yuv[2],
        };
    }
    v
}

/// The shape of a plane for painters elsewhere (the GPU painter), which follow the same rules.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlaneShape {
    /// Bytes per sample.
    pub channels: u32,
    /// Subsampling (log2), the same horizontally and vertically.
    pub sub: u32,
}

/// The planes of `format`, or `None` when it is not one of [`FORMATS`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn plane_shapes(format: VideoFormat) -> Option<impl Iterator<Item = PlaneShape>> {
    Some(layout(format)?.iter().map(|l| {
        debug_assert_eq!(l.sub_x, l.sub_y);
        PlaneShape {
            channels: l.channels.len() as u32,
            sub: l.sub_x,
        }
    }))
}

/// The bytes colour `c` gives each plane of `format`, plane after plane (NV12 and I420: Y, U,
/// V; packed RGB: the four bytes of a pixel): each plane takes the next `channels` of them.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn colour_bytes(format: VideoFormat, matrix: YuvMatrix, c: Rgba) -> [u8; 4] {
    let mut out = [0u8; 4];
    let mut at = 0;
    for l in layout(format).unwrap_or_default() {
        let n = l.channels.len();
        if at + n > out.len() {
            break;
        }
        out[at..at + n].copy_from_slice(&plane_values(l, matrix, c)[..n]);
        at += n;
    }
    out
}

/// Why a frame could not be painted.
#[derive(Debug, thiserror::Error)]
pub enum PaintError {
    #[error("rsosd cannot draw on {0:?} frames")]
    Format(VideoFormat),
    #[error(
        "the frame is {frame_width}x{frame_height} but the draw list was made for {list_width}x{list_height}"
    )]
    Size {
        frame_width: u32,
        frame_height: u32,
        list_width: i32,
        list_height: i32,
    },
    #[error("cannot write plane {plane}: {cause}")]
    Plane { plane: u32, cause: String },
}

/// Paints draw lists on frames in system memory, keeping its scratch space between frames.
#[derive(Debug, Default)]
pub struct Painter {
    /// Per-column coverage sums of text on subsampled planes.
    columns: Vec<u16>,
    /// Mean coverage per chroma sample of a row of text.
    means: Vec<u8>,
}

impl Painter {
    /// Draws `list` on a mapped, writable frame.
    pub fn paint_frame(
        &mut self,
        list: &DrawList,
        frame: &mut gst_video::VideoFrameRef<&mut gst::BufferRef>,
    ) -> Result<(), PaintError> {
        let info: &VideoInfo = frame.info();
        let format = info.format();
        let planes = layout(format).ok_or(PaintError::Format(format))?;
        if info.width() as i32 != list.width || info.height() as i32 != list.height {
            return Err(PaintError::Size {
                frame_width: info.width(),
                frame_height: info.height(),
                list_width: list.width,
                list_height: list.height,
            });
        }
        if list.is_empty() {
            return Ok(());
        }
        let matrix = YuvMatrix::for_info(info);
        for (index, layout) in planes.iter().enumerate() {
            let stride = frame.plane_stride()[index] as usize;
            let data = frame
                .plane_data_mut(index as u32)
                .map_err(|e| PaintError::Plane {
                    plane: index as u32,
                    cause: e.to_string(),
                })?;
            self.paint_plane(list, *layout, matrix, data, stride)
                .map_err(|cause| PaintError::Plane {
                    plane: index as u32,
                    cause,
                })?;
        }
        Ok(())
    }

    /// Draws `list` on a frame given as planes of bytes with their strides, e.g. memory the
    /// caller owns (benchmarks, painters outside GStreamer buffers).
    pub fn paint_planes(
        &mut self,
        list: &DrawList,
        format: VideoFormat,
        matrix: YuvMatrix,
        planes: &mut [(&mut [u8], usize)],
    ) -> Result<(), PaintError> {
        let layouts = layout(format).ok_or(PaintError::Format(format))?;
        if planes.len() < layouts.len() {
            return Err(PaintError::Plane {
                plane: planes.len() as u32,
                cause: format!("{format:?} has {} planes", layouts.len()),
            });
        }
        for (index, (layout, (data, stride))) in layouts.iter().zip(planes.iter_mut()).enumerate() {
            self.paint_plane(list, *layout, matrix, data, *stride)
                .map_err(|cause| PaintError::Plane {
                    plane: index as u32,
                    cause,
                })?;
        }
        Ok(())
    }

    fn paint_plane(
        &mut self,
        list: &DrawList,
        layout: PlaneLayout,
        matrix: YuvMatrix,
        data: &mut [u8],
        stride: usize,
    ) -> Result<(), String> {
        let width = (list.width + (1 << layout.sub_x) - 1) >> layout.sub_x;
        let height = (list.height + (1 << layout.sub_y) - 1) >> layout.sub_y;
        let row = width as usize * layout.channels.len();
        let needed = if height > 0 {
            (height as usize - 1) * stride + row
        } else {
            0
        };
        if stride < row || data.len() < needed {
            return Err(format!(
                "{} bytes with stride {stride} cannot hold {height} rows of {row} bytes",
                data.len()
            ));
        }
        Plane {
            data,
            stride,
            layout,
            width,
            height,
            matrix,
            last_color: (None, [0; 4]),
            columns: &mut self.columns,
            means: &mut self.means,
        }
        .paint(list);
        Ok(())
    }
}

struct Plane<'a> {
    data: &'a mut [u8],
    stride: usize,
    layout: PlaneLayout,
    /// Size in samples.
    width: i32,
    height: i32,
    matrix: YuvMatrix,
    last_color: (Option<Rgba>, [u8; 4]),
    columns: &'a mut Vec<u16>,
    means: &'a mut Vec<u8>,
}

/// `d` blended towards `s` by `a`/255, rounded.
#[inline(always)]
fn blend(d: u8, s: u8, a: u32) -> u8 {
    // 16-bit arithmetic is exact here (at most 255 * 255 + 128 + 255 < 65536) and lets the
    // compiler blend eight samples per vector instruction.
    let a = a as u16;
    let v = s as u16 * a + d as u16 * (255 - a) + 128;
    ((v + (v >> 8)) >> 8) as u8
}

impl Plane<'_> {
    fn step(&self) -> usize {
        self.layout.channels.len()
    }

    /// The plane's bytes for colour `c`, in channel order.
    fn values(&self, c: Rgba) -> [u8; 4] {
        plane_values(&self.layout, self.matrix, c)
    }

    /// The samples of this plane that `r` (frame pixels) touches.
    fn covering(&self, r: &PixelRect) -> PixelRect {
        let (sx, sy) = (self.layout.sub_x, self.layout.sub_y);
        PixelRect::new(
            r.x0 >> sx,
            r.y0 >> sy,
            (r.x1 + (1 << sx) - 1) >> sx,
            (r.y1 + (1 << sy) - 1) >> sy,
        )
        .intersect(&PixelRect::new(0, 0, self.width, self.height))
    }

    /// The samples of this plane that lie entirely inside `r`.
    fn inside(&self, r: &PixelRect) -> PixelRect {
        let (sx, sy) = (self.layout.sub_x, self.layout.sub_y);
        PixelRect::new(
            (r.x0 + (1 << sx) - 1) >> sx,
            (r.y0 + (1 << sy) - 1) >> sy,
            r.x1 >> sx,
            r.y1 >> sy,
        )
        .intersect(&PixelRect::new(0, 0, self.width, self.height))
    }

    fn paint(&mut self, list: &DrawList) {
        // Samples of 1, 2 or 4 bytes: a constant size lets every pixel loop store whole samples.
        match self.step() {
            1 => self.paint_samples::<1>(list),
            2 => self.paint_samples::<2>(list),
            4 => self.paint_samples::<4>(list),
            n => unreachable!("no format has {n}-byte samples"),
        }
    }

    fn paint_samples<const N: usize>(&mut self, list: &DrawList) {
        for op in &list.blurs {
            self.blur::<N>(op);
        }
        for op in &list.fills {
            self.fill::<N>(op);
        }
        for op in &list.texts {
            self.text::<N>(op, &list.coverage);
        }
    }

    /// Row `y`, samples `x0..x1`, as whole samples.
    fn samples<const N: usize>(&mut self, y: i32, x0: i32, x1: i32) -> &mut [[u8; N]] {
        let start = y as usize * self.stride;
        let row = &mut self.data[start + x0 as usize * N..start + x1 as usize * N];
        row.as_chunks_mut::<N>().0
    }

    /// The plane's bytes for colour `c`; consecutive ops mostly share a colour (the glyphs of
    /// a list), so the last conversion is kept.
    fn sample_values<const N: usize>(&mut self, c: Rgba) -> [u8; N] {
        if self.last_color.0 != Some(c) {
            self.last_color = (Some(c), self.values(c));
        }
        let v = self.last_color.1;
        std::array::from_fn(|i| v[i])
    }

    fn fill<const N: usize>(&mut self, op: &FillOp) {
        let r = self.covering(&op.rect);
        if r.is_empty() {
            return;
        }
        let v = self.sample_values::<N>(op.color);
        let a = op.color.a as u32;
        for y in r.y0..r.y1 {
            let row = self.samples::<N>(y, r.x0, r.x1);
            if a == 255 {
                row.fill(v);
            } else {
                for p in row {
                    for c in 0..N {
                        p[c] = blend(p[c], v[c], a);
                    }
                }
            }
        }
    }

    fn text<const N: usize>(&mut self, op: &TextOp, coverage: &[u8]) {
        let r = self.covering(&op.rect);
        let (w, h) = (op.rect.width() as usize, op.rect.height() as usize);
        let (offset, stride) = (op.offset as usize, op.stride as usize);
        // Lists made by the planner always hold their runs' coverage; a foreign list that does
        // not draws nothing instead of reading out of bounds.
        let covered = h == 0 || (stride >= w && offset + (h - 1) * stride + w <= coverage.len());
        if r.is_empty() || !covered {
            return;
        }
        let v = self.sample_values::<N>(op.color);
        let alpha = op.color.a as u32;
        match (self.layout.sub_x, self.layout.sub_y) {
            (0, 0) => {
                for y in r.y0..r.y1 {
                    let start = offset + (y - op.rect.y0) as usize * stride;
                    let line = &coverage[start..start + w];
                    let row = self.samples::<N>(y, r.x0, r.x1);
                    blend_line(row, line, v, alpha);
                }
            }
            (1, 1) => self.text_2x2(op, coverage, r, v, alpha),
            (sx, sy) => unreachable!("no format is subsampled {sx}x{sy}"),
        }
    }

    /// Text on a plane subsampled 2x2 (NV12/I420 chroma): each sample takes the mean coverage
    /// of its four pixels, those outside the run's rectangle counting as zero.
    fn text_2x2<const N: usize>(
        &mut self,
        op: &TextOp,
        coverage: &[u8],
        r: PixelRect,
        v: [u8; N],
        alpha: u32,
    ) {
        let rect = op.rect;
        let w = rect.width() as usize;
        let (offset, stride) = (op.offset as usize, op.stride as usize);
        // Per column of the run, the coverage of the two frame rows of a sample row, with a
        // zero column on each side for samples that straddle the rectangle's edges; then the
        // mean over each sample's 2x2 pixels.
        let mut columns = std::mem::take(self.columns);
        columns.clear();
        columns.resize(w + 2, 0);
        let mut means = std::mem::take(self.means);
        for y in r.y0..r.y1 {
            columns.fill(0);
            for fy in (2 * y).max(rect.y0)..(2 * y + 2).min(rect.y1) {
                let start = offset + (fy - rect.y0) as usize * stride;
                for (sum, &c) in columns[1..=w].iter_mut().zip(&coverage[start..start + w]) {
                    *sum += c as u16;
                }
            }
            // Sample x covers frame columns 2x and 2x + 1, i.e. `columns[2x - x0 + 1..][..2]`.
            let first = (2 * r.x0 - rect.x0 + 1) as usize;
            means.clear();
            means.extend(
                columns[first..]
                    .chunks(2)
                    .map(|pair| (pair.iter().sum::<u16>() / 4) as u8),
            );
            let row = self.samples::<N>(y, r.x0, r.x1);
            blend_line(row, &means, v, alpha);
        }
        *self.columns = columns;
        *self.means = means;
    }

    fn blur<const N: usize>(&mut self, op: &BlurOp) {
        let r = self.inside(&op.rect);
        if r.is_empty() {
            return;
        }
        let strength = (op.strength >> self.layout.sub_x).max(1);
        match op.mode {
            BlurMode::Pixelate => self.pixelate::<N>(r, strength),
            BlurMode::Blur => {
                for _ in 0..3 {
                    self.box_blur::<N>(r, strength);
                }
            }
        }
    }

    /// Replaces blocks of `block` x `block` samples (anchored at the rectangle's corner) by
    /// their mean.
    fn pixelate<const N: usize>(&mut self, r: PixelRect, block: i32) {
        let mut by = r.y0;
        while by < r.y1 {
            let ey = (by + block).min(r.y1);
            let mut bx = r.x0;
            while bx < r.x1 {
                let ex = (bx + block).min(r.x1);
                let mut sum = [0u32; N];
                for y in by..ey {
                    for p in self.samples::<N>(y, bx, ex) {
                        for c in 0..N {
                            sum[c] += p[c] as u32;
                        }
                    }
                }
                let n = ((ex - bx) * (ey - by)) as u32;
                let mean = sum.map(|s| ((s + n / 2) / n) as u8);
                for y in by..ey {
                    self.samples::<N>(y, bx, ex).fill(mean);
                }
                bx = ex;
            }
            by = ey;
        }
    }

    /// One horizontal and one vertical box blur of radius `radius`, edges repeated inside `r`.
    fn box_blur<const N: usize>(&mut self, r: PixelRect, radius: i32) {
        let (w, h) = (r.width() as usize, r.height() as usize);
        let mut line = vec![0u8; w.max(h)];
        let mut out = vec![0u8; w.max(h)];
        for c in 0..N {
            for y in r.y0..r.y1 {
                let row = self.samples::<N>(y, r.x0, r.x1);
                for (l, p) in line.iter_mut().zip(row.iter()) {
                    *l = p[c];
                }
                blur_line(&line[..w], &mut out[..w], radius as usize);
                for (o, p) in out.iter().zip(row.iter_mut()) {
                    p[c] = *o;
                }
            }
            for x in r.x0..r.x1 {
                let offset = x as usize * N + c;
                for (i, y) in (r.y0..r.y1).enumerate() {
                    line[i] = self.data[y as usize * self.stride + offset];
                }
                blur_line(&line[..h], &mut out[..h], radius as usize);
                for (i, y) in (r.y0..r.y1).enumerate() {
                    self.data[y as usize * self.stride + offset] = out[i];
                }
            }
        }
    }
}

/// Blends `v` over each sample of `row`, weighted by `coverage` (one byte per sample) times
/// `alpha`. Written for whole rows so that it vectorises; zero coverage leaves a sample as it
/// was.
#[inline(always)]
fn blend_line<const N: usize>(row: &mut [[u8; N]], coverage: &[u8], v: [u8; N], alpha: u32) {
    if alpha == 255 {
        for (p, &c) in row.iter_mut().zip(coverage) {
            for i in 0..N {
                p[i] = blend(p[i], v[i], c as u32);
            }
        }
    } else {
        for (p, &c) in row.iter_mut().zip(coverage) {
            let a = (c as u32 * alpha + 127) / 255;
            for i in 0..N {
                p[i] = blend(p[i], v[i], a);
            }
        }
    }
}

/// Box filter of radius `r` over `src` (edge samples repeated), into `dst`.
fn blur_line(src: &[u8], dst: &mut [u8], r: usize) {
    let n = src.len();
    let at = |i: isize| src[i.clamp(0, n as isize - 1) as usize] as u32;
    let window = 2 * r as u32 + 1;
    let mut sum: u32 = (-(r as isize)..=r as isize).map(at).sum();
    for (i, d) in dst.iter_mut().enumerate() {
        *d = ((sum + window / 2) / window) as u8;
        let i = i as isize;
        sum = sum + at(i + r as isize + 1) - at(i - r as isize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gst_video::VideoColorMatrix;

    fn rgba_list(ops: Vec<FillOp>) -> DrawList {
        DrawList {
            width: 8,
            height: 4,
            fills: ops,
            ..DrawList::default()
        }
    }

    #[test]
    fn blend_is_exact_at_the_ends_and_rounds() {
        for d in [0u8, 17, 200, 255] {
            assert_eq!(blend(d, 99, 255), 99);
            assert_eq!(blend(d, 99, 0), d);
        }
        assert_eq!(blend(0, 255, 128), 128);
        assert_eq!(blend(100, 200, 51), 120);
    }

    #[test]
    fn opaque_and_translucent_fills_on_bgrx() {
        let list = rgba_list(vec![
            FillOp {
                rect: PixelRect::new(1, 1, 3, 2),
                color: Rgba::new(10, 20, 30, 255),
            },
            FillOp {
                rect: PixelRect::new(5, 0, 6, 1),
                color: Rgba::new(255, 255, 255, 128),
            },
        ]);
        let mut data = vec![0u8; 8 * 4 * 4];
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt601, false);
        Painter::default()
            .paint_planes(&list, VideoFormat::Bgrx, matrix, &mut [(&mut data, 32)])
            .unwrap();
        assert_eq!(&data[32 + 4..32 + 8], &[30, 20, 10, 255]);
        assert_eq!(&data[32 + 8..32 + 12], &[30, 20, 10, 255]);
        assert_eq!(&data[20..24], &[128, 128, 128, 128]);
        let painted = [9usize, 10, 5];
        for (i, px) in data.chunks_exact(4).enumerate() {
            if !painted.contains(&i) {
                assert_eq!(px, &[0, 0, 0, 0], "pixel {i}");
            }
        }
    }

    #[test]
    fn odd_border_on_nv12_colours_its_chroma_sample() {
        let list = rgba_list(vec![FillOp {
            rect: PixelRect::new(3, 1, 4, 2),
            color: Rgba::new(255, 0, 0, 255),
        }]);
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt601, false);
        let mut y = vec![16u8; 8 * 4];
        let mut uv = vec![128u8; 8 * 2];
        Painter::default()
            .paint_planes(
                &list,
                VideoFormat::Nv12,
                matrix,
                &mut [(&mut y, 8), (&mut uv, 8)],
            )
            .unwrap();
        assert_eq!(y[8 + 3], 81);
        assert_eq!(y.iter().filter(|&&v| v != 16).count(), 1);
        // Chroma sample (1, 0) covers pixels x 2..4, y 0..2.
        assert_eq!(&uv[2..4], &[90, 240]);
        assert_eq!(uv.iter().filter(|&&v| v != 128).count(), 2);
    }

    #[test]
    fn text_chroma_takes_the_mean_coverage_of_its_pixels() {
        // Full coverage on pixels (3..5, 1..3): chroma sample (1, 0) sees one of its four pixels
        // covered, (2, 0) two, (1, 1) one, (2, 1) two... with rows 1..3 split over chroma rows
        // 0 and 1.
        let list = DrawList {
            width: 8,
            height: 4,
            texts: vec![TextOp {
                rect: PixelRect::new(3, 1, 5, 3),
                offset: 0,
                stride: 2,
                color: Rgba::new(255, 255, 255, 255),
                first_glyph: 0,
                glyph_count: 0,
            }],
            coverage: vec![255; 4],
            ..DrawList::default()
        };
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt601, true);
        let mut y = vec![0u8; 8 * 4];
        let mut u = vec![0u8; 4 * 2];
        let mut v = vec![0u8; 4 * 2];
        Painter::default()
            .paint_planes(
                &list,
                VideoFormat::I420,
                matrix,
                &mut [(&mut y, 8), (&mut u, 4), (&mut v, 4)],
            )
            .unwrap();
        let covered: Vec<usize> = (0..32).filter(|&i| y[i] == 255).collect();
        assert_eq!(covered, vec![8 + 3, 8 + 4, 16 + 3, 16 + 4]);
        assert_eq!(y.iter().filter(|&&v| v != 0).count(), 4);
        // White's chroma is 128: blended by a quarter (one pixel of four) it gives 32.
        assert_eq!(u, vec![0, 32, 32, 0, 0, 32, 32, 0]);
        assert_eq!(v, u);
    }

    #[test]
    fn text_outside_its_coverage_is_not_drawn() {
        let list = DrawList {
            width: 8,
            height: 4,
            texts: vec![TextOp {
                rect: PixelRect::new(0, 0, 4, 4),
                offset: 10,
                stride: 4,
                color: Rgba::WHITE,
                first_glyph: 0,
                glyph_count: 0,
            }],
            coverage: vec![255; 12],
            ..DrawList::default()
        };
        let mut data = vec![0u8; 8 * 4 * 4];
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt601, false);
        Painter::default()
            .paint_planes(&list, VideoFormat::Rgba, matrix, &mut [(&mut data, 32)])
            .unwrap();
        assert!(data.iter().all(|&b| b == 0));
    }

    #[test]
    fn blur_line_is_a_box_filter() {
        let src = [0u8, 0, 90, 0, 0];
        let mut dst = [0u8; 5];
        blur_line(&src, &mut dst, 1);
        assert_eq!(dst, [0, 30, 30, 30, 0]);
        let flat = [7u8; 6];
        let mut dst = [0u8; 6];
        blur_line(&flat, &mut dst, 4);
        assert_eq!(dst, flat);
    }

    #[test]
    fn every_supported_format_has_a_layout() {
        for f in FORMATS {
            assert!(layout(f).is_some(), "{f:?}");
        }
        assert!(layout(VideoFormat::Yuy2).is_none());
    }
}
