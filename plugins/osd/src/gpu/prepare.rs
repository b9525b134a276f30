// SPDX-License-Identifier: MIT OR Apache-2.0
//! The host side of the GPU painter: a draw list turned into the flat arrays `osd.cu` reads (fills
//! and text runs as ops in paint order with their colours converted, blurs grouped into levels of
//! disjoint rectangles and split into per-plane jobs). Plain Rust, so it is tested without a GPU
//! against the CPU painter through an emulation of the kernels.

use std::ops::Range;

use gst_video::VideoFormat;

use crate::color::{Rgba, YuvMatrix};
use crate::font::ATLAS_WIDTH;
use crate::paint::{PlaneShape, colour_bytes};
use crate::plan::{BlurOp, DrawList, GlyphOp, PixelRect};
use crate::style::BlurMode;

/// Side of a tile in samples (`TILE` in `osd.cu`).
pub(crate) const TILE: i32 = 16;
/// Colours remembered while converting the ops' colours (a list uses a few, interleaved).
const COLOUR_CACHE: usize = 16;

/// Plain data that is copied to the GPU byte for byte.
///
/// # Safety
/// The type must be `#[repr(C)]`, with no padding bytes and no pointers, so that every byte of a
/// value is initialised and meaningful to the kernels.
pub(crate) unsafe trait Plain: Copy {}

/// The bytes of `values`, as the GPU reads them.
pub(crate) fn bytes_of<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so all `size_of_val(values)` bytes are initialised; the
    // slice borrows `values`.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// `struct Plane` of `osd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpuPlane {
    pub ptr: u64,
    pub pitch: i32,
    pub width: i32,
    pub height: i32,
    pub first: i32,
    pub channels: i32,
    pub sub: i32,
}

/// `struct Op` of `osd.cu`: a fill, or a text run (`text` 1, with its glyphs), with its colour in
/// the frame's format.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpuOp {
    pub rect: PixelRect,
    pub v: [u8; 4],
    pub alpha: u32,
    pub text: u32,
    pub glyph_first: u32,
    pub glyph_count: u32,
}

/// `struct BlurJob` of `osd.cu`: one blur op on one plane.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpuBlurJob {
    /// The samples entirely inside the op's rectangle.
    pub rect: PixelRect,
    pub plane: i32,
    /// Pixelation block or blur radius, in samples.
    pub size: i32,
    /// First work item in its launch: pixelation block, or sample.
    pub start: u32,
    /// Byte offset of its samples in the scratch buffer (box blur).
    pub scratch: u32,
}

// SAFETY: all of these are #[repr(C)] structs of 4- and 8-byte integers (and byte arrays of four)
// laid out without padding, as the size tests below check.
unsafe impl Plain for GpuPlane {}
// SAFETY: as above.
unsafe impl Plain for GpuOp {}
// SAFETY: as above.
unsafe impl Plain for GpuBlurJob {}
// SAFETY: as above (`struct Glyph` of osd.cu: a PixelRect and two i32).
unsafe impl Plain for GlyphOp {}

/// The blurs of one level: ops whose rectangles are disjoint, so that their jobs run at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Level {
    /// Pixelation jobs (indices into `Prepared::jobs`) and their pixelation blocks.
    pub pixelate: Range<usize>,
    pub blocks: u32,
    /// Box-blur jobs, their samples, and the scratch bytes they need.
    pub blur: Range<usize>,
    pub samples: u32,
    pub scratch: usize,
}

/// Why a draw list cannot go to the GPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    #[error(
        "text run {run} refers to glyph {glyph}, outside the atlas of {rows} rows of {width} pixels or the list's {count} glyphs"
    )]
    Glyph {
        run: usize,
        glyph: usize,
        rows: usize,
        width: usize,
        count: usize,
    },
    #[error("the draw list needs {0}, more than the GPU painter's launches can hold")]
    TooLarge(String),
}

/// A draw list as the kernels read it; kept between frames to reuse its allocations.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// Fills, then text runs, in list order.
    pub ops: Vec<GpuOp>,
    pub jobs: Vec<GpuBlurJob>,
    pub levels: Vec<Level>,
    /// The largest scratch any level needs.
    pub scratch: usize,
    level_of: Vec<usize>,
}

/// The planes of a frame: their shapes and sizes in samples.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlaneDims {
    pub shape: PlaneShape,
    pub width: i32,
    pub height: i32,
}

impl Prepared {
    /// Prepares `list` (for a `format` frame whose planes are `planes`), its text runs reading
    /// an atlas of `atlas_rows` rows.
    pub fn prepare(
        &mut self,
        list: &DrawList,
        format: VideoFormat,
        matrix: YuvMatrix,
        planes: &[PlaneDims],
        atlas_rows: usize,
    ) -> Result<(), PrepareError> {
        check_glyphs(list, atlas_rows)?;
        self.prepare_ops(list, format, matrix)?;
        self.prepare_blurs(&list.blurs, planes)
    }

    /// Whether a text run is among the ops.
    pub fn draws_text(&self) -> bool {
        self.ops.iter().any(|op| op.text != 0)
    }

    fn prepare_ops(
        &mut self,
        list: &DrawList,
        format: VideoFormat,
        matrix: YuvMatrix,
    ) -> Result<(), PrepareError> {
        self.ops.clear();
        let count = list.fills.len() + list.texts.len();
        if count > u32::MAX as usize {
            return Err(PrepareError::TooLarge(format!(
                "{count} fills and text runs"
            )));
        }
        // Colours convert with floating point; a list has a few, so each is converted once.
        let mut cache = [(Rgba::default(), [0u8; 4]); COLOUR_CACHE];
        let (mut cached, mut next) = (0, 0);
        let mut convert = |c: Rgba| {
            if let Some((_, v)) = cache[..cached].iter().find(|(k, _)| *k == c) {
                return *v;
            }
            let v = colour_bytes(format, matrix, c);
            cache[next] = (c, v);
            next = (next + 1) % COLOUR_CACHE;
            cached = (cached + 1).min(COLOUR_CACHE);
            v
        };
        for f in &list.fills {
            self.ops.push(GpuOp {
                rect: f.rect,
                v: convert(f.color),
                alpha: f.color.a as u32,
                ..GpuOp::default()
            });
        }
        for t in &list.texts {
            self.ops.push(GpuOp {
                rect: t.rect,
                v: convert(t.color),
                alpha: t.color.a as u32,
                text: 1,
                glyph_first: t.first_glyph,
                glyph_count: t.glyph_count,
            });
        }
        Ok(())
    }

    /// Splits the blurs into levels (an op goes one level after the last earlier op it
    /// overlaps) and each op into a job per plane.
    fn prepare_blurs(
        &mut self,
        blurs: &[BlurOp],
        planes: &[PlaneDims],
    ) -> Result<(), PrepareError> {
        self.jobs.clear();
        self.levels.clear();
        self.scratch = 0;
        self.level_of.clear();
        for (i, op) in blurs.iter().enumerate() {
            let level = blurs[..i]
                .iter()
                .zip(&self.level_of)
                .filter(|(earlier, _)| !earlier.rect.intersect(&op.rect).is_empty())
                .map(|(_, &l)| l + 1)
                .max()
                .unwrap_or(0);
            self.level_of.push(level);
        }
        let count = self.level_of.iter().map(|l| l + 1).max().unwrap_or(0);
        for level in 0..count {
            let mut l = Level::default();
            for mode in [BlurMode::Pixelate, BlurMode::Blur] {
                let begin = self.jobs.len();
                let (mut items, mut scratch) = (0u64, 0u64);
                for (op, _) in blurs
                    .iter()
                    .zip(&self.level_of)
                    .filter(|(op, l)| **l == level && op.mode == mode)
                {
                    for (index, p) in planes.iter().enumerate() {
                        let s = p.shape.sub;
                        // Plane::inside: the samples entirely inside the rectangle.
                        let m = (1i64 << s) - 1;
                        let r = PixelRect::new(
                            ((op.rect.x0 as i64 + m) >> s) as i32,
                            ((op.rect.y0 as i64 + m) >> s) as i32,
                            op.rect.x1 >> s,
                            op.rect.y1 >> s,
                        )
                        .intersect(&PixelRect::new(0, 0, p.width, p.height));
                        if r.is_empty() {
                            continue;
                        }
                        let size = (op.strength >> s).max(1);
                        let (w, h) = (r.width() as u64, r.height() as u64);
                        self.jobs.push(GpuBlurJob {
                            rect: r,
                            plane: index as i32,
                            size,
                            start: items as u32,
                            scratch: scratch as u32,
                        });
                        items += match mode {
                            // One block per pixelation block...
                            BlurMode::Pixelate => w.div_ceil(size as u64) * h.div_ceil(size as u64),
                            // ...one thread per sample.
                            BlurMode::Blur => w * h,
                        };
                        scratch += w * h * p.shape.channels as u64;
                        // Grid sizes and offsets are 32-bit on the GPU.
                        if items > i32::MAX as u64 || scratch > u32::MAX as u64 {
                            return Err(PrepareError::TooLarge(
                                "blurs of more than 2^31 samples or pixelation blocks at once"
                                    .into(),
                            ));
                        }
                    }
                }
                let range = begin..self.jobs.len();
                match mode {
                    BlurMode::Pixelate => {
                        l.pixelate = range;
                        l.blocks = items as u32;
                    }
                    BlurMode::Blur => {
                        l.blur = range;
                        l.samples = items as u32;
                        l.scratch = scratch as usize;
                    }
                }
            }
            self.scratch = self.scratch.max(l.scratch);
            self.levels.push(l);
        }
        Ok(())
    }
}

/// Checks that every glyph of every text run lies in the list and in the atlas, so that no
/// kernel reads outside either.
fn check_glyphs(list: &DrawList, atlas_rows: usize) -> Result<(), PrepareError> {
    for (run, t) in list.texts.iter().enumerate() {
        let range = t.first_glyph as usize..t.first_glyph as usize + t.glyph_count as usize;
        let error = |glyph| PrepareError::Glyph {
            run,
            glyph,
            rows: atlas_rows,
            width: ATLAS_WIDTH,
            count: list.glyphs.len(),
        };
        if range.end > list.glyphs.len() {
            return Err(error(range.end - 1));
        }
        for (i, g) in list.glyphs[range.clone()].iter().enumerate() {
            let (w, h) = (
                g.rect.x1 as i64 - g.rect.x0 as i64,
                g.rect.y1 as i64 - g.rect.y0 as i64,
            );
            let fits = w >= 0
                && h >= 0
                && g.atlas_x >= 0
                && g.atlas_y >= 0
                && g.atlas_x as i64 + w <= ATLAS_WIDTH as i64
                && g.atlas_y as i64 + h <= atlas_rows as i64;
            if !fits {
                return Err(error(range.start + i));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod emulate {
    //! The kernels of `osd.cu`, line for line in Rust, run on host memory: the tests check the
    //! preparation and the kernels' rules against the CPU painter without a GPU.
    // Channel loops index several arrays, as the CUDA code does.
    #![allow(clippy::needless_range_loop)]

    use super::*;

    fn blend(d: u32, s: u32, a: u32) -> u32 {
        let v = s * a + d * (255 - a) + 128;
        (v + (v >> 8)) >> 8
    }

    /// `covering` of osd.cu: the samples the op touches, before clipping to the plane.
    fn covering(op: &GpuOp, sub: i32) -> (i64, i64, i64, i64) {
        let m = (1i64 << sub) - 1;
        let r = &op.rect;
        (
            (r.x0 >> sub) as i64,
            (r.y0 >> sub) as i64,
            (r.x1 as i64 + m) >> sub,
            (r.y1 as i64 + m) >> sub,
        )
    }

    fn coverage_at(op: &GpuOp, glyphs: &[GlyphOp], atlas: &[u8], px: i32, py: i32) -> u32 {
        let r = &op.rect;
        if px < r.x0 || px >= r.x1 || py < r.y0 || py >= r.y1 {
            return 0;
        }
        let mut c = 0;
        let first = op.glyph_first as usize;
        for g in &glyphs[first..first + op.glyph_count as usize] {
            let q = &g.rect;
            if px >= q.x0 && px < q.x1 && py >= q.y0 && py < q.y1 {
                let i = (g.atlas_y + py - q.y0) as usize * ATLAS_WIDTH
                    + (g.atlas_x + px - q.x0) as usize;
                c = c.max(atlas[i] as u32);
            }
        }
        c
    }

    /// A frame in host memory: per plane, its descriptor (`ptr` is the plane's offset in
    /// `memory`).
    pub(crate) struct HostFrame<'a> {
        pub memory: &'a mut [u8],
        pub planes: Vec<GpuPlane>,
    }

    impl HostFrame<'_> {
        fn at(&self, p: &GpuPlane, x: i32, y: i32) -> usize {
            p.ptr as usize + y as usize * p.pitch as usize + x as usize * p.channels as usize
        }
    }

    /// `osd_paint_tiles` on `plane`: every tile lists the ops touching it, in order, and
    /// applies them to its samples.
    pub(crate) fn paint_tiles(
        frame: &mut HostFrame,
        ops: &[GpuOp],
        glyphs: &[GlyphOp],
        atlas: &[u8],
        plane: usize,
    ) {
        let pl = frame.planes[plane];
        let tiles_x = (pl.width + TILE - 1) / TILE;
        let tiles_y = (pl.height + TILE - 1) / TILE;
        let mut hits = Vec::new();
        for tile in 0..tiles_x * tiles_y {
            let (tx0, ty0) = ((tile % tiles_x) * TILE, (tile / tiles_x) * TILE);
            let (tx1, ty1) = ((tx0 + TILE).min(pl.width), (ty0 + TILE).min(pl.height));
            hits.clear();
            for op in ops {
                let (x0, y0, x1, y1) = covering(op, pl.sub);
                if x0 < tx1 as i64 && x1 > tx0 as i64 && y0 < ty1 as i64 && y1 > ty0 as i64 {
                    hits.push(*op);
                }
            }
            for sy in ty0..ty1 {
                for sx in tx0..tx1 {
                    let at = frame.at(&pl, sx, sy);
                    let mut d = [0u32; 4];
                    for c in 0..pl.channels as usize {
                        d[c] = frame.memory[at + c] as u32;
                    }
                    let span = 1 << pl.sub;
                    for op in &hits {
                        let (x0, y0, x1, y1) = covering(op, pl.sub);
                        let (x, y) = (sx as i64, sy as i64);
                        if !(x >= x0 && x < x1 && y >= y0 && y < y1) {
                            continue;
                        }
                        let v = &op.v[pl.first as usize..];
                        if op.text != 0 {
                            let mut sum = 0;
                            for dy in 0..span {
                                for dx in 0..span {
                                    sum += coverage_at(
                                        op,
                                        glyphs,
                                        atlas,
                                        sx * span + dx,
                                        sy * span + dy,
                                    );
                                }
                            }
                            let cov = sum >> (2 * pl.sub);
                            let a = if op.alpha == 255 {
                                cov
                            } else {
                                (cov * op.alpha + 127) / 255
                            };
                            for c in 0..pl.channels as usize {
                                d[c] = blend(d[c], v[c] as u32, a);
                            }
                        } else {
                            for c in 0..pl.channels as usize {
                                d[c] = if op.alpha == 255 {
                                    v[c] as u32
                                } else {
                                    blend(d[c], v[c] as u32, op.alpha)
                                };
                            }
                        }
                    }
                    for c in 0..pl.channels as usize {
                        frame.memory[at + c] = d[c] as u8;
                    }
                }
            }
        }
    }

    pub(crate) fn pixelate(frame: &mut HostFrame, jobs: &[GpuBlurJob]) {
        for job in jobs {
            let pl = frame.planes[job.plane as usize];
            let size = job.size as i64;
            let across = ((job.rect.x1 - job.rect.x0) as i64 + size - 1) / size;
            let down = ((job.rect.y1 - job.rect.y0) as i64 + size - 1) / size;
            for local in 0..across * down {
                let bx = job.rect.x0 as i64 + (local % across) * size;
                let by = job.rect.y0 as i64 + (local / across) * size;
                let (x1, y1) = (
                    (bx + size).min(job.rect.x1 as i64),
                    (by + size).min(job.rect.y1 as i64),
                );
                let w = (x1 - bx) as u32;
                let n = w * (y1 - by) as u32;
                let mut s = [0u32; 4];
                for k in 0..n {
                    let at = frame.at(&pl, bx as i32 + (k % w) as i32, by as i32 + (k / w) as i32);
                    for c in 0..pl.channels as usize {
                        s[c] += frame.memory[at + c] as u32;
                    }
                }
                for k in 0..n {
                    let at = frame.at(&pl, bx as i32 + (k % w) as i32, by as i32 + (k / w) as i32);
                    for c in 0..pl.channels as usize {
                        frame.memory[at + c] = ((s[c] + n / 2) / n) as u8;
                    }
                }
            }
        }
    }

    /// `box_at` of osd.cu: the box filter of radius `r` at sample `i` of a line of `n`.
    fn box_at(line: &dyn Fn(usize) -> u8, n: i32, i: i32, r: i32) -> u8 {
        let window = 2 * r as u32 + 1;
        let last = n - 1;
        let (mut a, mut b) = (i - r, i + r);
        let mut sum = 0u32;
        if a < 0 {
            sum += (-a) as u32 * line(0) as u32;
            a = 0;
        }
        if b > last {
            sum += (b - last) as u32 * line(last as usize) as u32;
            b = last;
        }
        for k in a..=b {
            sum += line(k as usize) as u32;
        }
        ((sum + window / 2) / window) as u8
    }

    /// Three times `osd_blur_rows` then `osd_blur_cols` over `jobs`.
    pub(crate) fn blur(frame: &mut HostFrame, jobs: &[GpuBlurJob], scratch: &mut [u8]) {
        for _ in 0..3 {
            for job in jobs {
                let pl = frame.planes[job.plane as usize];
                let ch = pl.channels as usize;
                let (w, h) = (job.rect.width(), job.rect.height());
                for row in 0..h {
                    let start = frame.at(&pl, job.rect.x0, job.rect.y0 + row);
                    for col in 0..w {
                        for c in 0..ch {
                            let memory = &frame.memory;
                            let out = job.scratch as usize + (row * w + col) as usize * ch + c;
                            scratch[out] =
                                box_at(&|i| memory[start + i * ch + c], w, col, job.size);
                        }
                    }
                }
            }
            for job in jobs {
                let pl = frame.planes[job.plane as usize];
                let ch = pl.channels as usize;
                let (w, h) = (job.rect.width(), job.rect.height());
                for row in 0..h {
                    for col in 0..w {
                        let out = frame.at(&pl, job.rect.x0 + col, job.rect.y0 + row);
                        for c in 0..ch {
                            let base = job.scratch as usize + col as usize * ch + c;
                            let line = |i: usize| scratch[base + i * w as usize * ch];
                            frame.memory[out + c] = box_at(&line, h, row, job.size);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::emulate::{self, HostFrame};
    use super::*;
    use crate::font::{FontRequest, Typeface};
    use crate::paint::{FORMATS, Painter, plane_shapes};
    use crate::plan::{FillOp, Planner};
    use crate::style::Style;
    use ferrostream_core::{BBox, Frame, Object};
    use gst_video::VideoColorMatrix;
    use std::mem::size_of;

    /// xorshift32: reproducible noise without a dependency.
    pub(crate) struct Rng(u32);

    impl Rng {
        pub fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 17;
            self.0 ^= self.0 << 5;
            self.0
        }

        pub fn below(&mut self, n: u32) -> i32 {
            (self.next() % n.max(1)) as i32
        }
    }

    #[test]
    fn gpu_structs_have_no_padding() {
        assert_eq!(size_of::<GpuPlane>(), 8 + 6 * 4);
        assert_eq!(size_of::<GpuOp>(), 16 + 4 + 4 * 4);
        assert_eq!(size_of::<GpuBlurJob>(), 16 + 4 * 4);
        assert_eq!(size_of::<GlyphOp>(), 24);
    }

    /// A list with everything the painters do: boxes partly off the frame and overlapping,
    /// translucent fills, labels, clock and source text, and blurs of both kinds that overlap.
    fn random_list(planner: &mut Planner, width: u32, height: u32, rng: &mut Rng) -> DrawList {
        let mut frame = Frame::new(0, 0, width, height);
        let (w, h) = (width as i32, height as i32);
        for i in 0..12 {
            let bw = 1 + rng.below(w as u32 / 2 + 8);
            let bh = 1 + rng.below(h as u32 / 2 + 8);
            let x = rng.below(w as u32 + 10) - 8;
            let y = rng.below(h as u32 + 10) - 8;
            let mut o = Object::new(
                i % 4,
                ["person", "car", "bike", "dog"][i as usize % 4].into(),
                0.5,
                BBox::new(x as f32, y as f32, bw as f32, bh as f32),
                1,
            );
            o.object_id = Some(i as u64);
            frame.objects.push(o);
        }
        let mut style = Style {
            blur_class_ids: vec![3],
            bbox_bg_color: Rgba::new(10, 200, 30, 60),
            text_size: [8, 11, 16][rng.below(3) as usize] as u32,
            blur_strength: 1 + rng.below(9) as u32,
            // Opaque, translucent or automatic (black or white) text.
            text_color: [
                None,
                Some(Rgba::new(250, 20, 90, 255)),
                Some(Rgba::new(20, 250, 90, 77)),
            ][rng.below(3) as usize],
            ..Style::default()
        };
        style.source_text.insert(0, "Gate 4".into());
        let mut list = DrawList::default();
        list.reset(width, height);
        planner.plan(&style, &[frame], 0, Some("12:34:56"), &mut list);
        for _ in 0..10 {
            let x0 = rng.below(w as u32 + 4) - 2;
            let y0 = rng.below(h as u32 + 4) - 2;
            let rect = PixelRect::new(x0, y0, x0 + 1 + rng.below(20), y0 + 1 + rng.below(20));
            let alpha = [255, 0, 1, 128, 254][rng.below(5) as usize];
            let color = Rgba::new(rng.next() as u8, rng.next() as u8, rng.next() as u8, alpha);
            // The planner clips its fills; so do these.
            let rect = rect.intersect(&PixelRect::new(0, 0, w, h));
            if !rect.is_empty() {
                list.fills.push(FillOp { rect, color });
            }
        }
        for i in 0..6 {
            let x0 = rng.below(w as u32);
            let y0 = rng.below(h as u32);
            let rect = PixelRect::new(
                x0,
                y0,
                x0 + 1 + rng.below(w as u32),
                y0 + 1 + rng.below(h as u32),
            )
            .intersect(&PixelRect::new(0, 0, w, h));
            list.blurs.push(BlurOp {
                rect,
                mode: if i % 2 == 0 {
                    BlurMode::Pixelate
                } else {
                    BlurMode::Blur
                },
                strength: 1 + rng.below(12),
            });
        }
        list
    }

    /// A frame of noise with padded rows: plane offsets, pitches and rows.
    fn noise(
        format: VideoFormat,
        width: u32,
        height: u32,
        pad: usize,
        rng: &mut Rng,
    ) -> (Vec<u8>, Vec<(usize, usize, usize)>) {
        let mut layout = Vec::new();
        let mut size = 0;
        for shape in plane_shapes(format).unwrap() {
            let span = 1 << shape.sub;
            let row = (width as usize).div_ceil(span) * shape.channels as usize;
            let rows = (height as usize).div_ceil(span);
            layout.push((size, row + pad, rows));
            size += (row + pad) * rows;
        }
        let mut memory: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
        // Padding holds a sentinel that painting must leave alone.
        for &(offset, pitch, rows) in &layout {
            for r in 0..rows {
                memory[offset + r * pitch + pitch - pad..offset + (r + 1) * pitch].fill(0xA5);
            }
        }
        (memory, layout)
    }

    /// Every format, odd sizes and padded pitches: the preparation and the kernels' rules (as
    /// emulated) give the CPU painter's bytes exactly.
    #[test]
    fn emulated_kernels_match_the_cpu_painter() {
        let typeface = Typeface::load(&FontRequest::Auto).unwrap().typeface;
        let mut planner = Planner::new(typeface);
        let mut rng = Rng(0x9e37_79b9);
        let mut checked_text = 0;
        for (width, height) in [(33u32, 17u32), (1, 1), (2, 3), (97, 61), (160, 91)] {
            for format in FORMATS {
                for matrix in [
                    YuvMatrix::new(VideoColorMatrix::Bt601, false),
                    YuvMatrix::new(VideoColorMatrix::Bt709, true),
                ] {
                    let list = random_list(&mut planner, width, height, &mut rng);
                    let pad = rng.below(9) as usize;
                    let (original, layout) = noise(format, width, height, pad, &mut rng);

                    let mut cpu = original.clone();
                    {
                        let mut rest: &mut [u8] = &mut cpu;
                        let mut planes = Vec::new();
                        for &(_, pitch, rows) in &layout {
                            let (plane, tail) = rest.split_at_mut(pitch * rows);
                            planes.push((plane, pitch));
                            rest = tail;
                        }
                        Painter::default()
                            .paint_planes(&list, format, matrix, &mut planes)
                            .unwrap();
                    }

                    let mut dims = Vec::new();
                    let mut planes = Vec::new();
                    let mut first = 0;
                    for (shape, &(offset, pitch, rows)) in
                        plane_shapes(format).unwrap().zip(&layout)
                    {
                        let width = (width as i32 + (1 << shape.sub) - 1) >> shape.sub;
                        dims.push(PlaneDims {
                            shape,
                            width,
                            height: rows as i32,
                        });
                        planes.push(GpuPlane {
                            ptr: offset as u64,
                            pitch: pitch as i32,
                            width,
                            height: rows as i32,
                            first,
                            channels: shape.channels as i32,
                            sub: shape.sub as i32,
                        });
                        first += shape.channels as i32;
                    }
                    let mut prep = Prepared::default();
                    let atlas = planner.atlas();
                    prep.prepare(&list, format, matrix, &dims, atlas.rows())
                        .unwrap();
                    let mut gpu = original.clone();
                    let mut frame = HostFrame {
                        memory: &mut gpu,
                        planes,
                    };
                    let mut scratch = vec![0u8; prep.scratch];
                    for level in &prep.levels {
                        emulate::pixelate(&mut frame, &prep.jobs[level.pixelate.clone()]);
                        emulate::blur(&mut frame, &prep.jobs[level.blur.clone()], &mut scratch);
                    }
                    for plane in 0..dims.len() {
                        emulate::paint_tiles(
                            &mut frame,
                            &prep.ops,
                            &list.glyphs,
                            atlas.pixels(),
                            plane,
                        );
                    }
                    let what = format!("{format:?} {width}x{height} pad {pad}");
                    let differ = cpu.iter().zip(&gpu).filter(|(a, b)| a != b).count();
                    assert_eq!(differ, 0, "{what}: {differ} bytes differ");
                    if cpu != original && !list.texts.is_empty() {
                        checked_text += 1;
                    }
                }
            }
        }
        assert!(checked_text > 20, "too few lists drew text: {checked_text}");
    }

    #[test]
    fn ops_are_fills_then_runs_with_their_glyphs_and_colours() {
        let mut planner = Planner::new(Typeface::Builtin);
        let mut frame = Frame::new(0, 0, 64, 64);
        frame.objects.push(Object::new(
            0,
            "ab".into(),
            0.5,
            BBox::new(0.0, 30.0, 40.0, 20.0),
            1,
        ));
        let mut list = DrawList::default();
        list.reset(64, 64);
        let style = Style {
            label_format: "{label}".parse().unwrap(),
            ..Style::default()
        };
        planner.plan(&style, &[frame], 0, None, &mut list);
        // Border (4 fills), label background, one run of two glyphs.
        assert_eq!(
            (list.fills.len(), list.texts.len(), list.glyphs.len()),
            (5, 1, 2)
        );
        let mut prep = Prepared::default();
        let shapes: Vec<_> = plane_shapes(VideoFormat::Nv12).unwrap().collect();
        let dims = [
            PlaneDims {
                shape: shapes[0],
                width: 64,
                height: 64,
            },
            PlaneDims {
                shape: shapes[1],
                width: 32,
                height: 32,
            },
        ];
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt601, false);
        prep.prepare(
            &list,
            VideoFormat::Nv12,
            matrix,
            &dims,
            planner.atlas().rows(),
        )
        .unwrap();
        assert_eq!(prep.ops.len(), 6);
        for (op, f) in prep.ops.iter().zip(&list.fills) {
            assert_eq!((op.rect, op.text, op.alpha), (f.rect, 0, f.color.a as u32));
            let [y, u, v] = matrix.yuv(f.color);
            assert_eq!(op.v, [y, u, v, 0]);
        }
        let run = prep.ops[5];
        assert_eq!((run.text, run.glyph_first, run.glyph_count), (1, 0, 2));
        assert_eq!(run.rect, list.texts[0].rect);
        assert!(prep.draws_text());
        assert!(prep.levels.is_empty());
    }

    #[test]
    fn overlapping_blurs_go_to_later_levels() {
        let op = |x0, y0, x1, y1, mode| BlurOp {
            rect: PixelRect::new(x0, y0, x1, y1),
            mode,
            strength: 4,
        };
        let list = DrawList {
            width: 100,
            height: 100,
            blurs: vec![
                op(0, 0, 10, 10, BlurMode::Pixelate),
                op(20, 0, 30, 10, BlurMode::Blur),
                op(5, 5, 25, 8, BlurMode::Blur),
                op(50, 50, 60, 60, BlurMode::Pixelate),
                op(6, 6, 7, 7, BlurMode::Pixelate),
            ],
            ..DrawList::default()
        };
        let mut prep = Prepared::default();
        let shapes: Vec<_> = plane_shapes(VideoFormat::Nv12).unwrap().collect();
        let dims = [
            PlaneDims {
                shape: shapes[0],
                width: 100,
                height: 100,
            },
            PlaneDims {
                shape: shapes[1],
                width: 50,
                height: 50,
            },
        ];
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt709, false);
        prep.prepare(&list, VideoFormat::Nv12, matrix, &dims, 0)
            .unwrap();
        assert_eq!(prep.levels.len(), 3);
        // Level 0: ops 0 and 3 (pixelate), 1 (blur); level 1: op 2; level 2: op 4. Pixelation
        // counts blocks, the box blur samples.
        let rects = |r: &Range<usize>| -> Vec<PixelRect> {
            prep.jobs[r.clone()].iter().map(|j| j.rect).collect()
        };
        assert_eq!(
            rects(&prep.levels[0].pixelate),
            vec![
                PixelRect::new(0, 0, 10, 10),
                PixelRect::new(0, 0, 5, 5),
                PixelRect::new(50, 50, 60, 60),
                PixelRect::new(25, 25, 30, 30),
            ]
        );
        assert_eq!(prep.levels[0].blocks, 9 + 9 + 9 + 9);
        assert_eq!(
            rects(&prep.levels[0].blur),
            vec![PixelRect::new(20, 0, 30, 10), PixelRect::new(10, 0, 15, 5)]
        );
        assert_eq!(prep.levels[0].samples, 100 + 25);
        assert_eq!(prep.levels[0].scratch, 100 + 25 * 2);
        let starts: Vec<u32> = prep.jobs.iter().map(|j| j.start).collect();
        assert_eq!(starts, vec![0, 9, 18, 27, 0, 100, 0, 60, 0]);
        // Op 2 on chroma: rows 5..8 hold chroma rows 3..4, entirely inside.
        assert_eq!(
            rects(&prep.levels[1].blur),
            vec![PixelRect::new(5, 5, 25, 8), PixelRect::new(3, 3, 12, 4)]
        );
        // Op 4 covers no chroma sample entirely.
        assert_eq!(
            rects(&prep.levels[2].pixelate),
            vec![PixelRect::new(6, 6, 7, 7)]
        );
        assert_eq!(prep.scratch, 150);
    }

    #[test]
    fn glyphs_outside_the_atlas_are_refused() {
        let mut planner = Planner::new(Typeface::Builtin);
        let mut frame = Frame::new(0, 0, 64, 64);
        frame.objects.push(Object::new(
            0,
            "a".into(),
            0.5,
            BBox::new(0.0, 30.0, 40.0, 20.0),
            1,
        ));
        let mut list = DrawList::default();
        list.reset(64, 64);
        planner.plan(&Style::default(), &[frame], 0, None, &mut list);
        let shape = plane_shapes(VideoFormat::Rgba).unwrap().next().unwrap();
        let dims = [PlaneDims {
            shape,
            width: 64,
            height: 64,
        }];
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt709, false);
        let mut prep = Prepared::default();
        let rows = planner.atlas().rows();
        prep.prepare(&list, VideoFormat::Rgba, matrix, &dims, rows)
            .unwrap();
        let err = prep
            .prepare(&list, VideoFormat::Rgba, matrix, &dims, rows - 1)
            .unwrap_err();
        assert!(matches!(err, PrepareError::Glyph { run: 0, .. }), "{err}");
        list.texts[0].glyph_count += 100;
        assert!(
            prep.prepare(&list, VideoFormat::Rgba, matrix, &dims, rows)
                .is_err()
        );
    }
}
