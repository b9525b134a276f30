// SPDX-License-Identifier: MIT OR Apache-2.0
//! The geometry of a frame's overlay: which pixels get which colour, independent of the pixel
//! format and of where the pixels live.
//!
//! A [`DrawList`] holds flat arrays of `#[repr(C)]` operations in frame pixels, already clipped
//! to the frame: privacy blurs, alpha-blended rectangle fills (box borders, box and label
//! backgrounds; strokes such as an oriented box's sides, limbs and lines are runs of fills), and
//! text runs, each a rectangle tinted with a colour through coverage. Painters
//! apply them in that order, so text is always on top. A run's coverage is described twice: as
//! the glyphs it is made of, each a rectangle of the planner's [`GlyphAtlas`] (what the GPU
//! painter reads, with the atlas uploaded once), and, unless the planner is told not to, as a
//! rectangle of the list's own 8-bit coverage image composed from those glyphs (what the CPU
//! painter [`crate::paint`] reads).
//!
//! A frame's display elements (the application's own text, rectangles and lines) are planned
//! after its analytics shapes and objects, whatever the `display-*` switches say, so each comes
//! after theirs in its own array (fills over fills, text over text).

use ferrostream_core::display::{MAX_ELEMENTS_PER_FRAME, MAX_TEXTS_PER_FRAME};
use ferrostream_core::keypoints::Keypoints;
use ferrostream_core::{DisplayElement, Frame, FrameAnalytics, Object, ShapeKind};

use crate::color::Rgba;
use crate::font::{ATLAS_WIDTH, GlyphAtlas, PlacedGlyph, Typeface};
use crate::style::{BlurMode, Style};

/// The nearest pixel boundary to `v`, kept far enough from `i32`'s limits that adding a size to
/// it cannot overflow (NaN becomes 0).
fn to_pixel(v: f32) -> i32 {
    v.round()
        .clamp(i32::MIN as f32 / 2.0, i32::MAX as f32 / 2.0) as i32
}

/// A half-open pixel rectangle: columns `x0..x1`, rows `y0..y1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PixelRect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl PixelRect {
    pub const fn new(x0: i32, y0: i32, x1: i32, y1: i32) -> Self {
        Self { x0, y0, x1, y1 }
    }

    pub fn width(&self) -> i32 {
        (self.x1 - self.x0).max(0)
    }

    pub fn height(&self) -> i32 {
        (self.y1 - self.y0).max(0)
    }

    pub fn is_empty(&self) -> bool {
        self.x1 <= self.x0 || self.y1 <= self.y0
    }

    /// The pixels a box covers (a turned box's axis-aligned extent): its edges rounded to the
    /// nearest pixel boundary.
    pub fn of_box(object: &Object, sx: f32, sy: f32) -> Self {
        let b = object.bounding_box();
        Self::new(
            to_pixel(b.left * sx),
            to_pixel(b.top * sy),
            to_pixel(b.right() * sx),
            to_pixel(b.bottom() * sy),
        )
    }

    pub fn intersect(&self, other: &PixelRect) -> PixelRect {
        PixelRect::new(
            self.x0.max(other.x0),
            self.y0.max(other.y0),
            self.x1.min(other.x1),
            self.y1.min(other.y1),
        )
    }
}

/// Blend `color` over every pixel of `rect` (opaque colours replace).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillOp {
    pub rect: PixelRect,
    pub color: Rgba,
}

/// Blend `color` over `rect`, weighted by coverage: pixel (x, y) of the rectangle takes
/// `coverage[offset + (y - rect.y0) * stride + (x - rect.x0)]` of the list's coverage image, which
/// is the largest coverage of the glyphs `glyphs[first_glyph..][..glyph_count]` of the list at
/// that pixel (zero where none is).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextOp {
    pub rect: PixelRect,
    pub offset: u32,
    pub stride: u32,
    pub color: Rgba,
    pub first_glyph: u32,
    pub glyph_count: u32,
}

/// One glyph of a text run: the atlas rectangle of `rect`'s size at (`atlas_x`, `atlas_y`),
/// placed at `rect` in frame pixels (not clipped: the run's rectangle clips it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlyphOp {
    pub rect: PixelRect,
    pub atlas_x: i32,
    pub atlas_y: i32,
}

/// Hide the detail inside `rect`, reading and writing only pixels inside it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlurOp {
    pub rect: PixelRect,
    pub mode: BlurMode,
    /// Pixelation block size or blur radius, in pixels.
    pub strength: i32,
}

/// Everything to draw on one frame of `width` x `height` pixels.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DrawList {
    pub width: i32,
    pub height: i32,
    pub blurs: Vec<BlurOp>,
    pub fills: Vec<FillOp>,
    pub texts: Vec<TextOp>,
    /// The glyphs of the text runs, in atlas coordinates.
    pub glyphs: Vec<GlyphOp>,
    /// The coverage (0: none, 255: full) that text runs refer to; empty when the planner was
    /// told not to compose it.
    pub coverage: Vec<u8>,
}

impl DrawList {
    /// Empties the list (keeping its allocations) for a frame of the given size.
    pub fn reset(&mut self, width: u32, height: u32) {
        self.width = width as i32;
        self.height = height as i32;
        self.blurs.clear();
        self.fills.clear();
        self.texts.clear();
        self.glyphs.clear();
        self.coverage.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.blurs.is_empty() && self.fills.is_empty() && self.texts.is_empty()
    }

    fn frame(&self) -> PixelRect {
        PixelRect::new(0, 0, self.width, self.height)
    }

    fn fill(&mut self, rect: PixelRect, color: Rgba) {
        let rect = rect.intersect(&self.frame());
        if !rect.is_empty() && !color.is_transparent() {
            self.fills.push(FillOp { rect, color });
        }
    }

    fn blur(&mut self, rect: PixelRect, mode: BlurMode, strength: u32) {
        let rect = rect.intersect(&self.frame());
        if !rect.is_empty() && strength > 0 {
            self.blurs.push(BlurOp {
                rect,
                mode,
                strength: strength as i32,
            });
        }
    }

    /// Fills the cells of a `cols` x `rows` grid stretched over `area` (left, top, width,
    /// height in list pixels) that `runs` names: `(first cell, cell count, colour)` in row-major
    /// cell order. Cell edges are rounded the same way for every run, so neighbouring cells
    /// never overlap (a translucent colour is blended once per pixel).
    fn cells(
        &mut self,
        area: (f32, f32, f32, f32),
        (cols, rows): (u32, u32),
        runs: impl Iterator<Item = (usize, usize, Rgba)>,
    ) {
        let (left, top, width, height) = area;
        if cols == 0 || rows == 0 || !(width > 0.0 && height > 0.0) {
            return;
        }
        let (cols, rows) = (cols as usize, rows as usize);
        let edge = |origin: f32, size: f32, count: usize, i: usize| {
            (origin + i as f32 * size / count as f32)
                .round()
                .clamp(i32::MIN as f32 / 2.0, i32::MAX as f32 / 2.0) as i32
        };
        for (start, len, color) in runs {
            let end = (start + len).min(cols * rows);
            let mut at = start;
            while at < end {
                let (row, col) = (at / cols, at % cols);
                let stop = end.min((row + 1) * cols);
                let rect = PixelRect::new(
                    edge(left, width, cols, col),
                    edge(top, height, rows, row),
                    edge(left, width, cols, col + (stop - at)),
                    edge(top, height, rows, row + 1),
                );
                self.fill(rect, color);
                at = stop;
            }
        }
    }

    /// A straight stroke `width` pixels thick from `a` to `b` (list pixels), as one fill per
    /// run of columns (rows, for a steep stroke) at the same height.
    fn segment(&mut self, a: [f32; 2], b: [f32; 2], width: i32, color: Rgba) {
        if !a.iter().chain(&b).all(|v| v.is_finite()) || width <= 0 {
            return;
        }
        let steep = (b[1] - a[1]).abs() > (b[0] - a[0]).abs();
        // Work along the major axis: `u` along it, `v` across.
        let (a, b) = if steep {
            ([a[1], a[0]], [b[1], b[0]])
        } else {
            (a, b)
        };
        let (a, b) = if a[0] <= b[0] { (a, b) } else { (b, a) };
        let extent = if steep { self.height } else { self.width };
        let first = (a[0].round() as i64).max(-1) as i32;
        let last = (b[0].round() as i64).min(extent as i64) as i32;
        let slope = if b[0] > a[0] {
            (b[1] - a[1]) / (b[0] - a[0])
        } else {
            0.0
        };
        let across = |u: i32| {
            let v = a[1] + (u as f32 - a[0]) * slope;
            (v.round()
                .clamp(i32::MIN as f32 / 2.0, i32::MAX as f32 / 2.0) as i32)
                - width / 2
        };
        let emit = |u0: i32, u1: i32, v: i32, list: &mut Self| {
            let rect = if steep {
                PixelRect::new(v, u0, v + width, u1)
            } else {
                PixelRect::new(u0, v, u1, v + width)
            };
            list.fill(rect, color);
        };
        let mut start = first;
        while start <= last {
            let v = across(start);
            let mut end = start + 1;
            while end <= last && across(end) == v {
                end += 1;
            }
            emit(start, end, v, self);
            start = end;
        }
    }

    /// An arrow from `a` to `b` with a head of `head` pixels.
    fn arrow(&mut self, a: [f32; 2], b: [f32; 2], width: i32, head: f32, color: Rgba) {
        self.segment(a, b, width, color);
        let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
        let len = (dx * dx + dy * dy).sqrt();
        if len <= 0.0 || len.is_nan() {
            return;
        }
        let (ux, uy) = (dx / len * head, dy / len * head);
        let (c, s) = (0.866_f32, 0.5_f32);
        for s in [s, -s] {
            let tip = [b[0] + ux * c - uy * s, b[1] + ux * s + uy * c];
            self.segment(b, tip, width, color);
        }
    }

    /// An object's skeleton: each limb whose ends are confident enough as a stroke in `color`,
    /// then each confident keypoint as a white dot (frame pixels scaled by `sx`, `sy`).
    fn keypoints(&mut self, style: &Style, k: &Keypoints, (sx, sy): (f32, f32), color: Rgba) {
        let min = style.keypoint_min_confidence;
        for (a, b) in k.limbs(min).take(MAX_LIMBS) {
            self.segment(
                [a.x * sx, a.y * sy],
                [b.x * sx, b.y * sy],
                style.limb_width as i32,
                color,
            );
        }
        let r = style.keypoint_radius as i32;
        if r == 0 {
            return;
        }
        for p in k.points.iter().take(MAX_KEYPOINTS) {
            if p.confidence >= min && p.x.is_finite() && p.y.is_finite() {
                let (x, y) = (to_pixel(p.x * sx), to_pixel(p.y * sy));
                self.fill(
                    PixelRect::new(x - r, y - r, x + r + 1, y + r + 1),
                    KEYPOINT_COLOR,
                );
            }
        }
    }

    /// The sides of a turned box as strokes `width` pixels thick (frame pixels scaled by `sx`,
    /// `sy`).
    fn turned_border(&mut self, object: &Object, (sx, sy): (f32, f32), width: u32, color: Rgba) {
        let corners = object.corners().map(|[x, y]| [x * sx, y * sy]);
        for (i, &a) in corners.iter().enumerate() {
            self.segment(a, corners[(i + 1) % 4], width as i32, color);
        }
    }

    /// A border of `width` pixels along the inside of `rect`.
    fn border(&mut self, rect: PixelRect, width: u32, color: Rgba) {
        let w = (width as i32)
            .min((rect.width() + 1) / 2)
            .min((rect.height() + 1) / 2);
        if w <= 0 {
            return;
        }
        let PixelRect { x0, y0, x1, y1 } = rect;
        self.fill(PixelRect::new(x0, y0, x1, y0 + w), color);
        self.fill(PixelRect::new(x0, y1 - w, x1, y1), color);
        self.fill(PixelRect::new(x0, y0 + w, x0 + w, y1 - w), color);
        self.fill(PixelRect::new(x1 - w, y0 + w, x1, y1 - w), color);
    }

    /// Glyphs laid out by [`Typeface::layout`], with the line's top-left corner at (`x`, `y`), as
    /// one text run of the glyphs of `atlas`, its coverage composed into the list when `compose`
    /// is set (overlapping glyphs take the larger coverage).
    fn text(
        &mut self,
        glyphs: &[PlacedGlyph],
        x: i32,
        y: i32,
        color: Rgba,
        atlas: &[u8],
        compose: bool,
    ) {
        let placed = |p: &PlacedGlyph| {
            PixelRect::new(
                x + p.x,
                y + p.y,
                x + p.x + p.glyph.width,
                y + p.y + p.glyph.height,
            )
        };
        let Some(bounds) = glyphs.iter().map(placed).reduce(|a, b| {
            PixelRect::new(
                a.x0.min(b.x0),
                a.y0.min(b.y0),
                a.x1.max(b.x1),
                a.y1.max(b.y1),
            )
        }) else {
            return;
        };
        let rect = bounds.intersect(&self.frame());
        if rect.is_empty() {
            return;
        }
        let first_glyph = self.glyphs.len();
        for p in glyphs {
            let full = placed(p);
            if !full.intersect(&rect).is_empty() {
                self.glyphs.push(GlyphOp {
                    rect: full,
                    atlas_x: p.glyph.atlas_x,
                    atlas_y: p.glyph.atlas_y,
                });
            }
        }
        let (offset, stride) = if compose {
            self.compose(first_glyph, rect, atlas)
        } else {
            (0, 0)
        };
        self.texts.push(TextOp {
            rect,
            offset: offset as u32,
            stride: stride as u32,
            color,
            first_glyph: first_glyph as u32,
            glyph_count: (self.glyphs.len() - first_glyph) as u32,
        });
    }

    /// Composes the coverage of the glyphs from `first_glyph` on, inside `rect`, into the
    /// coverage image; returns where it starts and its stride.
    fn compose(&mut self, first_glyph: usize, rect: PixelRect, atlas: &[u8]) -> (usize, usize) {
        let stride = rect.width() as usize;
        let offset = self.coverage.len();
        self.coverage
            .resize(offset + stride * rect.height() as usize, 0);
        for g in &self.glyphs[first_glyph..] {
            let full = g.rect;
            let visible = full.intersect(&rect);
            let width = visible.width() as usize;
            for row in visible.y0..visible.y1 {
                let src = (g.atlas_y + row - full.y0) as usize * ATLAS_WIDTH
                    + (g.atlas_x + visible.x0 - full.x0) as usize;
                let dst =
                    offset + (row - rect.y0) as usize * stride + (visible.x0 - rect.x0) as usize;
                for (d, &c) in self.coverage[dst..dst + width]
                    .iter_mut()
                    .zip(&atlas[src..src + width])
                {
                    *d = (*d).max(c);
                }
            }
        }
        (offset, stride)
    }
}

/// Colour of keypoint dots (limbs take the class colour).
const KEYPOINT_COLOR: Rgba = Rgba::new(255, 255, 255, 255);
/// Bounds on what one object's keypoints can make the planner draw.
const MAX_KEYPOINTS: usize = 256;
const MAX_LIMBS: usize = 512;

/// Background behind the clock and the source text, so that they stay readable on any picture.
const OVERLAY_BACKGROUND: Rgba = Rgba::new(0, 0, 0, 128);

/// Colours of rsanalytics' shapes.
const ROI_COLOR: Rgba = Rgba::new(255, 220, 0, 255);
const CROWDING_COLOR: Rgba = Rgba::new(255, 140, 0, 255);
const CROWDED_COLOR: Rgba = Rgba::new(255, 0, 0, 255);
const LINE_COLOR: Rgba = Rgba::new(0, 220, 255, 255);
const DIRECTION_COLOR: Rgba = Rgba::new(0, 255, 120, 255);

/// Builds draw lists: lays text out in its typeface, with the glyphs rasterised so far, and keeps
/// its scratch space between frames.
#[derive(Debug)]
pub struct Planner {
    typeface: Typeface,
    atlas: GlyphAtlas,
    glyphs: Vec<PlacedGlyph>,
    text: String,
    compose: bool,
}

impl Planner {
    pub fn new(typeface: Typeface) -> Self {
        Self {
            typeface,
            atlas: GlyphAtlas::default(),
            glyphs: Vec::new(),
            text: String::new(),
            compose: true,
        }
    }

    pub fn typeface(&self) -> &Typeface {
        &self.typeface
    }

    /// The glyphs that the text runs of the last list planned refer to. It changes (grows, or
    /// starts over) only while planning, so a list is painted with the atlas as it is right after
    /// the list was planned.
    pub fn atlas(&self) -> &GlyphAtlas {
        &self.atlas
    }

    /// Whether text runs get their coverage composed into the list's coverage image (on by
    /// default). The CPU painter needs it; the GPU painter reads the glyphs from the atlas, so
    /// a planner feeding only that one can skip the work.
    pub fn set_compose_coverage(&mut self, compose: bool) {
        self.compose = compose;
    }

    /// Adds to `list` (already reset to the size of the pixels it will be painted on) the objects
    /// of `frames`, whose boxes are in each frame's own `width` x `height`, then the clock and the
    /// text of source `source_id`.
    pub fn plan(
        &mut self,
        style: &Style,
        frames: &[Frame],
        source_id: u32,
        clock: Option<&str>,
        list: &mut DrawList,
    ) {
        // Lists refer to the atlas only until the next one is planned, so it may start over here.
        self.atlas.trim();
        for frame in frames {
            self.objects(style, frame, list);
        }
        self.overlays(style, clock, source_id, list);
    }

    fn objects(&mut self, style: &Style, frame: &Frame, list: &mut DrawList) {
        let scale = |out: i32, described: u32| {
            if described == 0 {
                1.0
            } else {
                out as f32 / described as f32
            }
        };
        let (sx, sy) = (
            scale(list.width, frame.width),
            scale(list.height, frame.height),
        );
        if style.display_analytics
            && let Some(analytics) = &frame.analytics
        {
            self.analytics(style, analytics, (sx, sy), list);
            if analytics.display_obj_cnt && analytics.osd_mode > 0 {
                self.object_counts(style, frame, analytics, list);
            }
        }
        let alpha = style.mask_alpha;
        let translucent = |c: Rgba| Rgba::new(c.r, c.g, c.b, alpha);
        if let Some(map) = frame.segmentation.as_ref().filter(|_| style.display_mask) {
            let area = (0.0, 0.0, frame.width as f32 * sx, frame.height as f32 * sy);
            let mut at = 0usize;
            let runs = map.runs.iter().filter_map(|&(class, n)| {
                let start = at;
                at += n as usize;
                (class >= 0).then(|| {
                    (
                        start,
                        n as usize,
                        translucent(style.class(class).border_color),
                    )
                })
            });
            list.cells(area, (map.width, map.height), runs);
        }
        for object in &frame.objects {
            let rect = PixelRect::of_box(object, sx, sy);
            // Nothing of a box outside the frame (or empty, or not a number) is shown, not even
            // its label pulled in from beyond the edge.
            if rect.intersect(&list.frame()).is_empty() {
                continue;
            }
            let class = style.class(object.class_id);
            if class.blur {
                list.blur(rect, style.blur_mode, style.blur_strength);
            }
            if let Some(mask) = object.mask.as_ref().filter(|_| style.display_mask) {
                let b = object.detector_bbox;
                let area = (b.left * sx, b.top * sy, b.width * sx, b.height * sy);
                let color = translucent(class.border_color);
                let runs = mask.spans().map(|(start, len)| (start, len, color));
                list.cells(area, (mask.width, mask.height), runs);
            }
            if object.is_turned() {
                // An oriented box: its four sides as strokes (no background: a fill of its
                // axis-aligned extent would cover what lies beside it).
                if style.display_bbox {
                    list.turned_border(object, (sx, sy), class.border_width, class.border_color);
                }
            } else {
                list.fill(rect, class.bg_color);
                if style.display_bbox {
                    list.border(rect, class.border_width, class.border_color);
                }
            }
            if let Some(k) = object
                .keypoints
                .as_ref()
                .filter(|_| style.display_keypoints)
            {
                list.keypoints(style, k, (sx, sy), class.border_color);
            }
            if style.display_text {
                style
                    .label_format
                    .render(object, frame.source_id, &mut self.text);
                let background = style.text_bg_color.unwrap_or(class.border_color);
                self.label(style, rect, background, list);
            }
        }
        // The application's own drawing: after everything else the frame describes, and never
        // switched off by the style (the application asked for exactly these). Elements beyond
        // the per-frame bound are dropped, so that no frame's metadata can make planning
        // arbitrarily long.
        let mut texts = 0;
        for element in frame.display.iter().take(MAX_ELEMENTS_PER_FRAME) {
            if let DisplayElement::Text(_) = element {
                texts += 1;
                if texts > MAX_TEXTS_PER_FRAME {
                    continue;
                }
            }
            self.display_element(element, (sx, sy), list);
        }
    }

    /// One display element, its points scaled from frame to list pixels like object boxes; its
    /// text size and line widths stay in pixels, as labels' and borders' do. An element outside
    /// [`DisplayElement::validate`]'s bounds is not drawn: they keep a bad element from making
    /// the planner lay out or rasterise without limit.
    fn display_element(
        &mut self,
        element: &DisplayElement,
        (sx, sy): (f32, f32),
        list: &mut DrawList,
    ) {
        if element.validate().is_err() {
            return;
        }
        match element {
            DisplayElement::Text(t) => {
                let extent = self.lay_out(&t.text, t.size);
                let at = (to_pixel(t.x * sx), to_pixel(t.y * sy));
                // Without a background only the glyphs are drawn: `fill` drops transparent fills.
                let background = t.background.map_or(Rgba::TRANSPARENT, Rgba::from);
                self.place(at, extent, background, Rgba::from(t.color), list);
            }
            DisplayElement::Rect(r) => {
                let rect = PixelRect::new(
                    to_pixel(r.left * sx),
                    to_pixel(r.top * sy),
                    to_pixel((r.left + r.width) * sx),
                    to_pixel((r.top + r.height) * sy),
                );
                if let Some(fill) = r.fill {
                    list.fill(rect, Rgba::from(fill));
                }
                list.border(rect, r.border_width, Rgba::from(r.border_color));
            }
            DisplayElement::Line(l) => list.segment(
                [l.x1 * sx, l.y1 * sy],
                [l.x2 * sx, l.y2 * sy],
                l.width as i32,
                Rgba::from(l.color),
            ),
        }
    }

    /// rsanalytics' shapes, with their labels (osd-mode 1) and counts (osd-mode 2).
    fn analytics(
        &mut self,
        style: &Style,
        analytics: &FrameAnalytics,
        (sx, sy): (f32, f32),
        list: &mut DrawList,
    ) {
        if analytics.osd_mode == 0 {
            return;
        }
        let width = (style.border_width as i32).max(1);
        let at = |p: &[f32; 2]| [p[0] * sx, p[1] * sy];
        for shape in &analytics.shapes {
            let points: Vec<[f32; 2]> = shape.points.iter().map(at).collect();
            let label = shape.label.as_ref();
            let (color, text) = match shape.kind {
                ShapeKind::Roi => {
                    let count = analytics.roi_counts.get(label).copied().unwrap_or(0);
                    (ROI_COLOR, format!("{label}: {count}"))
                }
                ShapeKind::Overcrowding => match analytics.overcrowding.get(label) {
                    Some(c) if c.crowded => (
                        CROWDED_COLOR,
                        format!("{label}: {}/{} crowded", c.count, c.threshold),
                    ),
                    Some(c) => (
                        CROWDING_COLOR,
                        format!("{label}: {}/{}", c.count, c.threshold),
                    ),
                    None => (CROWDING_COLOR, label.to_owned()),
                },
                ShapeKind::Line => {
                    let counts = analytics.lines.get(label);
                    let (f, b) = counts.map_or((0, 0), |c| (c.forward_total, c.backward_total));
                    (LINE_COLOR, format!("{label}: {f} fwd, {b} back"))
                }
                ShapeKind::Direction => (DIRECTION_COLOR, label.to_owned()),
            };
            match (shape.kind, points.as_slice()) {
                (ShapeKind::Roi | ShapeKind::Overcrowding, corners) => {
                    for (i, &p) in corners.iter().enumerate() {
                        list.segment(p, corners[(i + 1) % corners.len()], width, color);
                    }
                }
                (ShapeKind::Line, &[l0, l1, a0, a1]) => {
                    list.segment(l0, l1, width + 1, color);
                    list.arrow(a0, a1, width, 12.0, color);
                }
                (ShapeKind::Direction, &[a0, a1]) => list.arrow(a0, a1, width, 12.0, color),
                _ => continue,
            }
            // Labels sit at the first point; a crowd region's at its lowest, so that a zone and
            // a crowd limit drawn on the same polygon both read.
            let anchor = match shape.kind {
                ShapeKind::Overcrowding => points.iter().max_by(|a, b| a[1].total_cmp(&b[1])),
                _ => points.first(),
            };
            let Some(anchor) = anchor else {
                continue;
            };
            self.text = if analytics.osd_mode >= 2 {
                text
            } else {
                label.to_owned()
            };
            let (x, y) = (anchor[0].round() as i32, anchor[1].round() as i32);
            self.label(style, PixelRect::new(x, y, x, y), color, list);
        }
    }

    /// The objects per class (`display-obj-cnt`), in the top-left corner (below the clock).
    fn object_counts(
        &mut self,
        style: &Style,
        frame: &Frame,
        analytics: &FrameAnalytics,
        list: &mut DrawList,
    ) {
        use std::fmt::Write;
        let mut text = String::new();
        for (class, n) in &analytics.object_counts {
            let label = frame
                .objects
                .iter()
                .find(|o| o.class_id == *class)
                .map_or_else(|| format!("class {class}"), |o| o.label.to_string());
            let gap = if text.is_empty() { "" } else { "  " };
            let _ = write!(text, "{gap}{label}: {n}");
        }
        let extent = self.lay_out(&text, style.text_size);
        let y = if style.display_clock {
            style.clock_y as i32 + 2 * style.clock_font_size as i32
        } else {
            10
        };
        let color = style.text_color.unwrap_or(Rgba::WHITE);
        self.place((10, y), extent, OVERLAY_BACKGROUND, color, list);
    }

    /// Adds the frame-wide text: the clock and the source's text.
    fn overlays(
        &mut self,
        style: &Style,
        clock: Option<&str>,
        source_id: u32,
        list: &mut DrawList,
    ) {
        if let Some(clock) = clock {
            let extent = self.lay_out(clock, style.clock_font_size);
            let at = (style.clock_x as i32, style.clock_y as i32);
            self.place(at, extent, OVERLAY_BACKGROUND, style.clock_color, list);
        }
        if let Some(text) = style.source_text.get(&source_id) {
            let extent = self.lay_out(text, style.text_size);
            let margin = 10;
            let at = (margin, list.height - margin - extent.height);
            let color = style.text_color.unwrap_or(Rgba::WHITE);
            self.place(at, extent, OVERLAY_BACKGROUND, color, list);
        }
    }

    /// The label in `self.text` on a filled background above the box (inside it when there is
    /// no room above), kept inside the frame.
    fn label(&mut self, style: &Style, boxed: PixelRect, background: Rgba, list: &mut DrawList) {
        let text = std::mem::take(&mut self.text);
        let extent = self.lay_out(&text, style.text_size);
        self.text = text;
        let x = boxed.x0.min(list.width - extent.width).max(0);
        let above = boxed.y0 - extent.height;
        let y = if above >= 0 { above } else { boxed.y0 };
        let y = y.min(list.height - extent.height).max(0);
        let color = style
            .text_color
            .unwrap_or_else(|| crate::style::contrasting_text(background));
        self.place((x, y), extent, background, color, list);
    }

    /// Lays `text` out at `size` pixels into `self.glyphs`; returns the size of its box.
    fn lay_out(&mut self, text: &str, size: u32) -> Extent {
        let size = size as f32;
        let width = self
            .typeface
            .layout(&mut self.atlas, text, size, &mut self.glyphs);
        let padding = padding(size);
        Extent {
            width: width + 2 * padding,
            height: self.typeface.line(size).height + 2 * padding,
            padding,
            empty: text.is_empty(),
        }
    }

    /// The text last laid out, on `background`, its box's top-left corner at `at`.
    fn place(
        &self,
        at: (i32, i32),
        extent: Extent,
        background: Rgba,
        color: Rgba,
        list: &mut DrawList,
    ) {
        if extent.empty {
            return;
        }
        let (x, y) = at;
        list.fill(
            PixelRect::new(x, y, x + extent.width, y + extent.height),
            background,
        );
        let p = extent.padding;
        list.text(
            &self.glyphs,
            x + p,
            y + p,
            color,
            self.atlas.pixels(),
            self.compose,
        );
    }
}

/// The box of a line of text.
#[derive(Debug, Clone, Copy)]
struct Extent {
    width: i32,
    height: i32,
    padding: i32,
    empty: bool,
}

/// Space between text and the edge of its background.
fn padding(size: f32) -> i32 {
    ((size / 8.0).round() as i32).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrostream_core::BBox;

    fn frame_with(boxes: &[BBox]) -> Frame {
        let mut frame = Frame::new(0, 0, 200, 100);
        for b in boxes {
            frame
                .objects
                .push(Object::new(0, "person".into(), 0.9, *b, 1));
        }
        frame
    }

    fn plan(style: &Style, frame: &Frame, width: u32, height: u32) -> DrawList {
        let mut list = DrawList::default();
        list.reset(width, height);
        Planner::new(Typeface::Builtin).plan(
            style,
            std::slice::from_ref(frame),
            0,
            None,
            &mut list,
        );
        list
    }

    fn boxes_only() -> Style {
        Style {
            display_text: false,
            ..Style::default()
        }
    }

    /// A GPU painter mirrors these structs; their layout is part of the contract.
    #[test]
    fn op_layouts_are_plain_c() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<Rgba>(), 4);
        assert_eq!(size_of::<PixelRect>(), 16);
        assert_eq!(size_of::<FillOp>(), 20);
        assert_eq!(offset_of!(FillOp, color), 16);
        assert_eq!(size_of::<TextOp>(), 36);
        assert_eq!(offset_of!(TextOp, offset), 16);
        assert_eq!(offset_of!(TextOp, stride), 20);
        assert_eq!(offset_of!(TextOp, color), 24);
        assert_eq!(offset_of!(TextOp, first_glyph), 28);
        assert_eq!(offset_of!(TextOp, glyph_count), 32);
        assert_eq!(size_of::<GlyphOp>(), 24);
        assert_eq!(offset_of!(GlyphOp, atlas_x), 16);
        assert_eq!(offset_of!(GlyphOp, atlas_y), 20);
        assert_eq!(size_of::<BlurOp>(), 24);
        assert_eq!(offset_of!(BlurOp, mode), 16);
        assert_eq!(offset_of!(BlurOp, strength), 20);
        assert_eq!(BlurMode::Pixelate as u32, 0);
        assert_eq!(BlurMode::Blur as u32, 1);
    }

    #[test]
    fn border_is_four_rects_inside_the_box() {
        let list = plan(
            &boxes_only(),
            &frame_with(&[BBox::new(10.0, 20.0, 50.0, 30.0)]),
            200,
            100,
        );
        let rects: Vec<PixelRect> = list.fills.iter().map(|f| f.rect).collect();
        assert_eq!(
            rects,
            vec![
                PixelRect::new(10, 20, 60, 23),
                PixelRect::new(10, 47, 60, 50),
                PixelRect::new(10, 23, 13, 47),
                PixelRect::new(57, 23, 60, 47),
            ]
        );
        assert!(
            list.fills
                .iter()
                .all(|f| f.color == Style::default().class(0).border_color)
        );
    }

    #[test]
    fn boxes_scale_to_the_surface_and_clip_at_edges() {
        // Described at 200x100, drawn on 400x200; partly off the left and bottom edges.
        let list = plan(
            &boxes_only(),
            &frame_with(&[BBox::new(-10.0, 80.0, 40.0, 40.0)]),
            400,
            200,
        );
        let frame = PixelRect::new(0, 0, 400, 200);
        assert!(!list.fills.is_empty());
        for f in &list.fills {
            assert_eq!(f.rect.intersect(&frame), f.rect, "clipped: {f:?}");
            assert!(!f.rect.is_empty());
        }
        // Only the top and right edges are visible: the left and bottom ones are off frame.
        assert_eq!(list.fills.len(), 2);
        assert_eq!(list.fills[0].rect, PixelRect::new(0, 160, 60, 163));
        assert_eq!(list.fills[1].rect, PixelRect::new(57, 163, 60, 200));
        // Entirely outside, or empty: nothing, not even a label.
        let list = plan(
            &Style::default(),
            &frame_with(&[
                BBox::new(300.0, 10.0, 20.0, 20.0),
                BBox::new(50.0, 50.0, 0.0, 0.0),
            ]),
            200,
            100,
        );
        assert!(list.is_empty(), "{list:?}");
        let list = plan(
            &boxes_only(),
            &frame_with(&[BBox::new(300.0, 10.0, 20.0, 20.0)]),
            200,
            100,
        );
        assert!(list.is_empty());
    }

    #[test]
    fn label_sits_above_the_box_or_inside_at_the_top() {
        let style = Style {
            display_bbox: false,
            ..Style::default()
        };
        let list = plan(
            &style,
            &frame_with(&[
                BBox::new(20.0, 50.0, 60.0, 40.0),
                BBox::new(190.0, 0.0, 10.0, 10.0),
            ]),
            200,
            100,
        );
        // "person 0.90" in the 16-pixel bitmap font: 11 cells, padding 2.
        let (w, h) = (11 * 16 + 4, 16 + 4);
        assert_eq!(list.fills[0].rect, PixelRect::new(20, 50 - h, 20 + w, 50));
        // No room above: inside at the top, shifted left to stay in the frame.
        assert_eq!(list.fills[1].rect, PixelRect::new(200 - w, 0, 200, h));
        // One text run per label, on the label, in the text colour: ten characters of 16
        // pixels, the space taking no coverage.
        assert_eq!(list.texts.len(), 2);
        let first = list.fills[0].rect;
        let run = list.texts[0];
        assert_eq!(run.rect.intersect(&first), run.rect);
        assert_eq!(
            run.rect,
            PixelRect::new(22, 50 - h + 2, 22 + 11 * 16, 50 - 2)
        );
        assert!(list.texts.iter().all(|t| t.color == Rgba::WHITE));
        // The space (the seventh cell) has no coverage; the letters have some.
        let cell = |i: u32| -> u32 {
            (0..16)
                .flat_map(|y| (0..16).map(move |x| (x, y)))
                .map(|(x, y)| {
                    list.coverage[(run.offset + y * run.stride + i * 16 + x) as usize] as u32
                })
                .sum()
        };
        assert_eq!(cell(6), 0);
        assert!((0..11).filter(|&i| i != 6).all(|i| cell(i) > 0));
    }

    #[test]
    fn text_runs_clip_at_the_frame_and_compose_their_glyphs() {
        let mut list = DrawList::default();
        list.reset(20, 20);
        // A 4x4 atlas glyph at (2, 1) whose coverage is 10 * row + column + 1.
        let mut atlas = vec![0u8; ATLAS_WIDTH * 8];
        for r in 0..4 {
            for c in 0..4 {
                atlas[(1 + r) * ATLAS_WIDTH + 2 + c] = (10 * r + c + 1) as u8;
            }
        }
        let glyph = crate::font::Glyph {
            atlas_x: 2,
            atlas_y: 1,
            width: 4,
            height: 4,
            left: 0,
            top: 4,
            advance: 4.0,
        };
        let glyphs = [
            PlacedGlyph { x: 0, y: 0, glyph },
            // Overlaps the first by two columns: the larger coverage wins.
            PlacedGlyph { x: 2, y: 0, glyph },
        ];
        // Two columns off the left edge, one row off the bottom.
        list.text(&glyphs, -2, 17, Rgba::WHITE, &atlas, true);
        assert_eq!(list.texts.len(), 1);
        let t = list.texts[0];
        assert_eq!(t.rect, PixelRect::new(0, 17, 4, 20));
        assert_eq!(t.stride, 4);
        // Both glyphs are recorded where they lie, unclipped, with their atlas corner.
        assert_eq!((t.first_glyph, t.glyph_count), (0, 2));
        assert_eq!(
            list.glyphs,
            vec![
                GlyphOp {
                    rect: PixelRect::new(-2, 17, 2, 21),
                    atlas_x: 2,
                    atlas_y: 1
                },
                GlyphOp {
                    rect: PixelRect::new(0, 17, 4, 21),
                    atlas_x: 2,
                    atlas_y: 1
                },
            ]
        );
        let rows: Vec<&[u8]> = list.coverage.chunks(4).collect();
        // Columns 0-1: first glyph's columns 2-3, overlapped by the second's 0-1 (smaller).
        assert_eq!(
            rows,
            vec![&[3, 4, 3, 4][..], &[13, 14, 13, 14], &[23, 24, 23, 24]]
        );
    }

    /// The glyphs of a run describe exactly its composed coverage (what the GPU painter relies
    /// on), and a planner told not to compose coverage gives the same list without it.
    #[test]
    fn glyphs_describe_the_composed_coverage() {
        let loaded = Typeface::load(&crate::font::FontRequest::Auto).unwrap();
        let mut planner = Planner::new(loaded.typeface);
        let mut style = Style::default();
        style.source_text.insert(0, "Gate 4 - Wq".into());
        let frame = frame_with(&[
            BBox::new(5.0, 40.0, 50.0, 30.0),
            BBox::new(150.0, 2.0, 60.0, 30.0),
        ]);
        let mut list = DrawList::default();
        list.reset(200, 100);
        planner.plan(
            &style,
            std::slice::from_ref(&frame),
            0,
            Some("12:00"),
            &mut list,
        );
        assert!(list.texts.len() >= 3);
        let atlas = planner.atlas().pixels();
        for t in &list.texts {
            let glyphs = &list.glyphs[t.first_glyph as usize..][..t.glyph_count as usize];
            for y in t.rect.y0..t.rect.y1 {
                for x in t.rect.x0..t.rect.x1 {
                    let from_glyphs = glyphs
                        .iter()
                        .filter(|g| {
                            x >= g.rect.x0 && x < g.rect.x1 && y >= g.rect.y0 && y < g.rect.y1
                        })
                        .map(|g| {
                            atlas[(g.atlas_y + y - g.rect.y0) as usize * ATLAS_WIDTH
                                + (g.atlas_x + x - g.rect.x0) as usize]
                        })
                        .max()
                        .unwrap_or(0);
                    let composed = list.coverage[(t.offset
                        + (y - t.rect.y0) as u32 * t.stride
                        + (x - t.rect.x0) as u32)
                        as usize];
                    assert_eq!(from_glyphs, composed, "({x}, {y})");
                }
            }
        }
        planner.set_compose_coverage(false);
        let mut bare = DrawList::default();
        bare.reset(200, 100);
        planner.plan(
            &style,
            std::slice::from_ref(&frame),
            0,
            Some("12:00"),
            &mut bare,
        );
        assert!(bare.coverage.is_empty());
        assert_eq!((&bare.fills, &bare.glyphs), (&list.fills, &list.glyphs));
        let strip = |t: &TextOp| (t.rect, t.color, t.first_glyph, t.glyph_count);
        assert!(
            bare.texts
                .iter()
                .map(strip)
                .eq(list.texts.iter().map(strip))
        );
    }

    #[test]
    fn blur_classes_and_overlays() {
        let mut style = boxes_only();
        style.blur_class_ids = vec![0];
        style.source_text.insert(0, "Gate".into());
        let frame = frame_with(&[BBox::new(10.0, 10.0, 30.0, 30.0)]);
        let mut list = DrawList::default();
        list.reset(200, 100);
        Planner::new(Typeface::Builtin).plan(&style, &[frame], 0, Some("12:00"), &mut list);
        assert_eq!(list.blurs.len(), 1);
        assert_eq!(list.blurs[0].rect, PixelRect::new(10, 10, 40, 40));
        // Border (4) + clock background + source text background.
        assert_eq!(list.fills.len(), 6);
        let clock_bg = list.fills[4].rect;
        assert_eq!((clock_bg.x0, clock_bg.y0), (10, 10));
        let text_bg = list.fills[5].rect;
        assert_eq!(text_bg.y1, 100 - 10);
        // One run for the clock, one for the source text.
        assert_eq!(list.texts.len(), 2);
    }

    #[test]
    fn masks_and_class_maps_fill_their_cells_once() {
        use ferrostream_core::mask::{ClassMap, InstanceMask};
        let style = Style {
            display_bbox: false,
            ..boxes_only()
        };
        // A 4x2 mask over a 40x20 box at (10, 10): cells of 10x10 pixels.
        let mut frame = frame_with(&[BBox::new(10.0, 10.0, 40.0, 20.0)]);
        frame.objects[0].mask = Some(InstanceMask::from_cells(
            4,
            2,
            [true, true, false, true, false, false, true, true].into_iter(),
        ));
        let list = plan(&style, &frame, 200, 100);
        let rects: Vec<PixelRect> = list.fills.iter().map(|f| f.rect).collect();
        assert_eq!(
            rects,
            vec![
                PixelRect::new(10, 10, 30, 20),
                PixelRect::new(40, 10, 50, 20),
                PixelRect::new(30, 20, 50, 30),
            ]
        );
        let colour = style.class(0).border_color;
        assert!(
            list.fills
                .iter()
                .all(|f| f.color == Rgba::new(colour.r, colour.g, colour.b, 96))
        );
        // Not drawn when display-mask is off.
        let off = Style {
            display_mask: false,
            ..style.clone()
        };
        assert!(plan(&off, &frame, 200, 100).fills.is_empty());
        // A class map over the whole 200x100 frame drawn at 400x200: 2x2 cells of 200x100.
        let mut frame = frame_with(&[]);
        frame.segmentation = Some(ClassMap::from_cells(2, 2, 3, 1, &[0, -1, 2, 2]));
        let list = plan(&style, &frame, 400, 200);
        let fills: Vec<(PixelRect, Rgba)> = list.fills.iter().map(|f| (f.rect, f.color)).collect();
        let tint = |c: i32| {
            let c = style.class(c).border_color;
            Rgba::new(c.r, c.g, c.b, 96)
        };
        assert_eq!(
            fills,
            vec![
                (PixelRect::new(0, 0, 200, 100), tint(0)),
                (PixelRect::new(0, 100, 400, 200), tint(2)),
            ]
        );
    }

    #[test]
    fn an_oriented_box_is_drawn_as_its_four_turned_sides() {
        // A 60x20 box centred at (100, 50), turned 30 degrees clockwise.
        let mut frame = frame_with(&[BBox::new(70.0, 40.0, 60.0, 20.0)]);
        frame.objects[0].angle = Some(30f32.to_radians());
        let style = boxes_only();
        let list = plan(&style, &frame, 200, 100);
        let border = style.class(0).border_color;
        let pixels = covered(&list, border);
        let corners = frame.objects[0].corners();
        // Every corner and every side's middle is drawn; the centre and the axis-aligned
        // box's own corners (off the turned box) are not.
        for (i, &[x, y]) in corners.iter().enumerate() {
            let [nx, ny] = corners[(i + 1) % 4];
            for [px, py] in [[x, y], [(x + nx) / 2.0, (y + ny) / 2.0]] {
                let near = pixels.iter().any(|&(cx, cy)| {
                    (cx as f32 + 0.5 - px).abs() <= 2.0 && (cy as f32 + 0.5 - py).abs() <= 2.0
                });
                assert!(near, "nothing drawn near ({px:.1}, {py:.1})");
            }
        }
        for p in [(100, 50), (129, 41), (71, 59)] {
            assert!(!pixels.contains(&p), "{p:?} drawn");
        }
        // A stroke of border-width pixels: about perimeter x width pixels.
        let expected = 2.0 * (60.0 + 20.0) * style.class(0).border_width as f32;
        let n = pixels.len() as f32;
        assert!((n - expected).abs() < 0.25 * expected, "{n} pixels");
        // At angle 0 it is the plain box.
        frame.objects[0].angle = Some(0.0);
        let plain = plan(&style, &frame, 200, 100);
        frame.objects[0].angle = None;
        assert_eq!(plain.fills, plan(&style, &frame, 200, 100).fills);
    }

    /// The pixels the fills of `list` in `color` cover.
    fn covered(list: &DrawList, color: Rgba) -> std::collections::BTreeSet<(i32, i32)> {
        let mut out = std::collections::BTreeSet::new();
        for f in list.fills.iter().filter(|f| f.color == color) {
            for y in f.rect.y0..f.rect.y1 {
                for x in f.rect.x0..f.rect.x1 {
                    out.insert((x, y));
                }
            }
        }
        out
    }

    #[test]
    fn analytics_shapes_and_counts_are_drawn_as_asked() {
        use ferrostream_core::{Crowding, LineCounts, Shape};
        let style = Style {
            border_width: 1,
            ..Style::default()
        };
        let mut frame = frame_with(&[]);
        let mut analytics = FrameAnalytics {
            osd_mode: 2,
            shapes: vec![
                Shape {
                    kind: ShapeKind::Roi,
                    label: "zone".into(),
                    points: vec![[10.0, 10.0], [50.0, 10.0], [50.0, 40.0], [10.0, 40.0]],
                },
                Shape {
                    kind: ShapeKind::Overcrowding,
                    label: "crowd".into(),
                    points: vec![[100.0, 50.0], [150.0, 50.0], [125.0, 90.0]],
                },
                Shape {
                    kind: ShapeKind::Line,
                    label: "gate".into(),
                    points: vec![[180.0, 0.0], [180.0, 100.0], [170.0, 50.0], [190.0, 50.0]],
                },
            ],
            ..Default::default()
        };
        analytics.roi_counts.insert("zone".into(), 2);
        analytics.overcrowding.insert(
            "crowd".into(),
            Crowding {
                count: 3,
                threshold: 3,
                crowded: true,
            },
        );
        analytics.lines.insert(
            "gate".into(),
            LineCounts {
                forward_total: 4,
                ..Default::default()
            },
        );
        frame.analytics = Some(analytics.clone());
        // Drawn at twice the described size.
        let list = plan(&style, &frame, 400, 200);
        let roi = covered(&list, ROI_COLOR);
        // The rectangle's outline: its corners and edges, not its inside.
        for p in [
            (20, 20),
            (60, 20),
            (100, 20),
            (100, 50),
            (100, 80),
            (20, 80),
        ] {
            assert!(roi.contains(&p), "{p:?} of the region's outline");
        }
        assert!(!roi.contains(&(60, 50)), "inside the region");
        // The crowded region is red; its slanted edges are continuous, one pixel per row.
        let crowded = covered(&list, CROWDED_COLOR);
        for y in 100..=180 {
            assert!(crowded.iter().any(|&(_, py)| py == y), "row {y}");
        }
        assert!(covered(&list, CROWDING_COLOR).is_empty());
        // The line is a vertical stroke at x = 360 over the whole height.
        let line = covered(&list, LINE_COLOR);
        assert!((0..200).all(|y| line.contains(&(360, y)) || line.contains(&(359, y))));
        // Labels with counts (osd-mode 2) are text runs; names only with osd-mode 1; nothing
        // with osd-mode 0 or display-analytics off.
        assert_eq!(list.texts.len(), 3);
        let text_width = |mode: u32, display: bool| {
            let mut f = frame.clone();
            f.analytics = Some(FrameAnalytics {
                osd_mode: mode,
                ..analytics.clone()
            });
            let style = Style {
                display_analytics: display,
                ..style.clone()
            };
            let list = plan(&style, &f, 400, 200);
            (
                list.fills.len(),
                list.texts.iter().map(|t| t.rect.width()).sum::<i32>(),
            )
        };
        let (_, full_text) = text_width(2, true);
        let (_, names_text) = text_width(1, true);
        assert!(
            names_text > 0 && names_text < full_text,
            "{names_text} {full_text}"
        );
        assert_eq!(text_width(0, true), (0, 0));
        assert_eq!(text_width(2, false), (0, 0));
        // display-obj-cnt adds one line of objects per class.
        let mut f = frame.clone();
        let mut counted = analytics.clone();
        counted.display_obj_cnt = true;
        counted.object_counts.insert(0, 2);
        f.analytics = Some(counted);
        assert_eq!(plan(&style, &f, 400, 200).texts.len(), 4);
    }

    #[test]
    fn display_elements_are_drawn_scaled_and_invalid_ones_skipped() {
        use ferrostream_core::{DisplayLine, DisplayRect, DisplayText};
        // Everything of the style's own switched off: the elements are drawn anyway.
        let style = Style {
            display_bbox: false,
            display_text: false,
            display_analytics: false,
            ..Style::default()
        };
        let (red, green, white) = ([255, 0, 0, 255], [0, 255, 0, 255], [255, 255, 255, 255]);
        let blue = [0, 0, 255, 128];
        let text = |x, y, text: &str, size, background| {
            DisplayElement::Text(DisplayText {
                x,
                y,
                text: text.into(),
                size,
                color: white,
                background,
            })
        };
        let mut frame = frame_with(&[]);
        frame.display = vec![
            DisplayElement::Rect(DisplayRect {
                left: 10.0,
                top: 20.0,
                width: 30.0,
                height: 10.0,
                border_width: 2,
                border_color: red,
                fill: Some(blue),
            }),
            DisplayElement::Line(DisplayLine {
                x1: 0.0,
                y1: 50.0,
                x2: 100.0,
                y2: 50.0,
                width: 3,
                color: green,
            }),
            text(50.0, 10.0, "Hi", 16, None),
            text(150.0, 60.0, "A", 8, Some([0, 0, 0, 255])),
            // Each breaks a bound: none is drawn.
            DisplayElement::Rect(DisplayRect {
                left: 0.0,
                top: 0.0,
                width: -5.0,
                height: 5.0,
                border_width: 1,
                border_color: red,
                fill: Some(red),
            }),
            DisplayElement::Line(DisplayLine {
                x1: 0.0,
                y1: 0.0,
                x2: 10.0,
                y2: 10.0,
                width: ferrostream_core::display::MAX_LINE_WIDTH + 1,
                color: red,
            }),
            text(0.0, 0.0, "no size", 0, Some(red)),
            text(f32::NAN, 0.0, "nowhere", 16, Some(red)),
        ];
        // Described at 200x100, drawn at 400x200: every point doubles; sizes stay in pixels.
        let list = plan(&style, &frame, 400, 200);
        let fills: Vec<(PixelRect, Rgba)> = list.fills.iter().map(|f| (f.rect, f.color)).collect();
        let (red, green, blue) = (Rgba::from(red), Rgba::from(green), Rgba::from(blue));
        assert_eq!(
            fills,
            vec![
                // The rectangle (20, 40)-(80, 60): filled, then a 2-pixel border inside.
                (PixelRect::new(20, 40, 80, 60), blue),
                (PixelRect::new(20, 40, 80, 42), red),
                (PixelRect::new(20, 58, 80, 60), red),
                (PixelRect::new(20, 42, 22, 58), red),
                (PixelRect::new(78, 42, 80, 58), red),
                // The line at y = 100, 3 pixels thick, from x = 0 to 200 inclusive.
                (PixelRect::new(0, 99, 201, 102), green),
                // Only the second text has a background: 8-pixel cell plus 1 of padding around.
                (PixelRect::new(300, 120, 310, 130), Rgba::BLACK),
            ]
        );
        let runs: Vec<(PixelRect, Rgba)> = list.texts.iter().map(|t| (t.rect, t.color)).collect();
        assert_eq!(
            runs,
            vec![
                // "Hi" at (100, 20), inside 2 pixels of padding: two 16-pixel cells.
                (PixelRect::new(102, 22, 134, 38), Rgba::WHITE),
                (PixelRect::new(301, 121, 309, 129), Rgba::WHITE),
            ]
        );
        // Drawn at the described size, nothing moves.
        let list = plan(&style, &frame, 200, 100);
        assert_eq!(list.fills[0].rect, PixelRect::new(10, 20, 40, 30));
        assert_eq!(list.texts[0].rect, PixelRect::new(52, 12, 84, 28));
        // A border 0 wide is no border.
        let DisplayElement::Rect(r) = &mut frame.display[0] else {
            unreachable!()
        };
        r.border_width = 0;
        frame.display.truncate(1);
        let list = plan(&style, &frame, 200, 100);
        assert_eq!(list.fills.len(), 1);
        assert!(list.texts.is_empty());
    }
}
