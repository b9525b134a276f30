//! The geometry of a frame's overlay: which pixels get which colour, independent of the pixel
//! format and of where the pixels live.
//!
//! A [`DrawList`] holds three flat arrays of `#[repr(C)]` operations in frame pixels, already
//! clipped to the frame: privacy blurs, alpha-blended rectangle fills (box borders, box and label
//! backgrounds), and glyphs (a rectangle of the [`GlyphAtlas`](crate::font::GlyphAtlas) tinted
//! with a colour). Painters apply them in that order, so text is always on top. The CPU painter is
//! [`crate::paint`]; a GPU painter takes the same arrays and the atlas image.

use ferrostream_core::{Frame, Object};

use crate::color::Rgba;
use crate::font::{GlyphAtlas, PlacedGlyph, Typeface};
use crate::style::{BlurMode, Style};

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

    /// The pixels a box covers: its edges rounded to the nearest pixel boundary.
    pub fn of_box(object: &Object, sx: f32, sy: f32) -> Self {
        let b = object.bbox();
        let r = |v: f32| {
            v.round()
                .clamp(i32::MIN as f32 / 2.0, i32::MAX as f32 / 2.0) as i32
        };
        Self::new(
            r(b.left * sx),
            r(b.top * sy),
            r(b.right() * sx),
            r(b.bottom() * sy),
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

/// Blend `color` over `rect`, weighted by the atlas coverage whose pixel (`atlas_x`, `atlas_y`)
/// lies under the rectangle's top-left corner.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlyphOp {
    pub rect: PixelRect,
    pub atlas_x: i32,
    pub atlas_y: i32,
    pub color: Rgba,
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
    pub glyphs: Vec<GlyphOp>,
}

impl DrawList {
    /// Empties the list (keeping its allocations) for a frame of the given size.
    pub fn reset(&mut self, width: u32, height: u32) {
        self.width = width as i32;
        self.height = height as i32;
        self.blurs.clear();
        self.fills.clear();
        self.glyphs.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.blurs.is_empty() && self.fills.is_empty() && self.glyphs.is_empty()
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

    /// Glyphs laid out by [`Typeface::layout`], with the line's top-left corner at (`x`, `y`).
    fn text(&mut self, glyphs: &[PlacedGlyph], x: i32, y: i32, color: Rgba) {
        let frame = self.frame();
        for p in glyphs {
            let g = &p.glyph;
            let full = PixelRect::new(x + p.x, y + p.y, x + p.x + g.width, y + p.y + g.height);
            let rect = full.intersect(&frame);
            if rect.is_empty() {
                continue;
            }
            self.glyphs.push(GlyphOp {
                rect,
                atlas_x: g.atlas_x + (rect.x0 - full.x0),
                atlas_y: g.atlas_y + (rect.y0 - full.y0),
                color,
            });
        }
    }
}

/// Background behind the clock and the source text, so that they stay readable on any picture.
const OVERLAY_BACKGROUND: Rgba = Rgba::new(0, 0, 0, 128);

/// Builds draw lists; keeps its scratch space between frames.
#[derive(Debug, Default)]
pub struct Planner {
    glyphs: Vec<PlacedGlyph>,
    text: String,
}

impl Planner {
    /// Adds the objects of `frame`, whose boxes are in `frame.width` x `frame.height` pixels,
    /// scaled to the list's size.
    pub fn objects(
        &mut self,
        style: &Style,
        typeface: &Typeface,
        atlas: &mut GlyphAtlas,
        frame: &Frame,
        list: &mut DrawList,
    ) {
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
        for object in &frame.objects {
            let rect = PixelRect::of_box(object, sx, sy);
            let class = style.class(object.class_id);
            if class.blur {
                list.blur(rect, style.blur_mode, style.blur_strength);
            }
            list.fill(rect, class.bg_color);
            if style.display_bbox {
                list.border(rect, class.border_width, class.border_color);
            }
            if style.display_text {
                style
                    .label_format
                    .render(object, frame.source_id, &mut self.text);
                let background = style.text_bg_color.unwrap_or(class.border_color);
                self.label(style, typeface, atlas, rect, background, list);
            }
        }
    }

    /// Adds the frame-wide text: the clock and the source's text.
    pub fn overlays(
        &mut self,
        style: &Style,
        typeface: &Typeface,
        atlas: &mut GlyphAtlas,
        clock: Option<&str>,
        source_id: u32,
        list: &mut DrawList,
    ) {
        if let Some(clock) = clock {
            let size = style.clock_font_size as f32;
            self.text.clear();
            self.text.push_str(clock);
            self.boxed_text(
                typeface,
                atlas,
                size,
                (style.clock_x as i32, style.clock_y as i32),
                style.clock_color,
                list,
            );
        }
        if let Some(text) = style.source_text.get(&source_id) {
            let size = style.text_size as f32;
            let line = typeface.line(size);
            let margin = 10;
            self.text.clear();
            self.text.push_str(text);
            self.boxed_text(
                typeface,
                atlas,
                size,
                (
                    margin,
                    list.height - margin - line.height - 2 * padding(size),
                ),
                style.text_color.unwrap_or(Rgba::WHITE),
                list,
            );
        }
    }

    /// `self.text` on a translucent background whose top-left corner is `at`.
    fn boxed_text(
        &mut self,
        typeface: &Typeface,
        atlas: &mut GlyphAtlas,
        size: f32,
        at: (i32, i32),
        color: Rgba,
        list: &mut DrawList,
    ) {
        if self.text.is_empty() {
            return;
        }
        let width = typeface.layout(atlas, &self.text, size, &mut self.glyphs);
        let line = typeface.line(size);
        let pad = padding(size);
        let (x, y) = at;
        list.fill(
            PixelRect::new(x, y, x + width + 2 * pad, y + line.height + 2 * pad),
            OVERLAY_BACKGROUND,
        );
        list.text(&self.glyphs, x + pad, y + pad, color);
    }

    /// The label in `self.text` on a filled background above the box (inside it when there is
    /// no room above), kept inside the frame.
    fn label(
        &mut self,
        style: &Style,
        typeface: &Typeface,
        atlas: &mut GlyphAtlas,
        boxed: PixelRect,
        background: Rgba,
        list: &mut DrawList,
    ) {
        if self.text.is_empty() {
            return;
        }
        let size = style.text_size as f32;
        let width = typeface.layout(atlas, &self.text, size, &mut self.glyphs);
        let line = typeface.line(size);
        let pad = padding(size);
        let (w, h) = (width + 2 * pad, line.height + 2 * pad);
        let x = boxed.x0.min(list.width - w).max(0);
        let above = boxed.y0 - h;
        let y = if above >= 0 { above } else { boxed.y0 };
        let y = y.min(list.height - h).max(0);
        list.fill(PixelRect::new(x, y, x + w, y + h), background);
        let color = style
            .text_color
            .unwrap_or_else(|| crate::style::contrasting_text(background));
        list.text(&self.glyphs, x + pad, y + pad, color);
    }
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
        let mut atlas = GlyphAtlas::default();
        Planner::default().objects(style, &Typeface::Builtin, &mut atlas, frame, &mut list);
        list
    }

    fn boxes_only() -> Style {
        Style {
            display_text: false,
            ..Style::default()
        }
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
        // Entirely outside: nothing.
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
        // Glyphs lie on their label and are drawn in the text colour.
        let first = list.fills[0].rect;
        let on_first: Vec<&GlyphOp> = list
            .glyphs
            .iter()
            .filter(|g| g.rect.intersect(&first) == g.rect)
            .collect();
        assert_eq!(on_first.len(), 10, "ten visible characters");
        assert!(list.glyphs.iter().all(|g| g.color == Rgba::WHITE));
    }

    #[test]
    fn glyphs_clipped_at_the_frame_keep_their_atlas_offset() {
        let mut list = DrawList::default();
        list.reset(20, 20);
        let glyph = crate::font::Glyph {
            atlas_x: 100,
            atlas_y: 50,
            width: 8,
            height: 8,
            left: 0,
            top: 8,
            advance: 8.0,
        };
        list.text(&[PlacedGlyph { x: 0, y: 0, glyph }], -3, 15, Rgba::WHITE);
        assert_eq!(
            list.glyphs,
            vec![GlyphOp {
                rect: PixelRect::new(0, 15, 5, 20),
                atlas_x: 103,
                atlas_y: 50,
                color: Rgba::WHITE
            }]
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
        let mut atlas = GlyphAtlas::default();
        let mut planner = Planner::default();
        planner.objects(&style, &Typeface::Builtin, &mut atlas, &frame, &mut list);
        planner.overlays(
            &style,
            &Typeface::Builtin,
            &mut atlas,
            Some("12:00"),
            0,
            &mut list,
        );
        assert_eq!(list.blurs.len(), 1);
        assert_eq!(list.blurs[0].rect, PixelRect::new(10, 10, 40, 40));
        // Border (4) + clock background + source text background.
        assert_eq!(list.fills.len(), 6);
        let clock_bg = list.fills[4].rect;
        assert_eq!((clock_bg.x0, clock_bg.y0), (10, 10));
        let text_bg = list.fills[5].rect;
        assert_eq!(text_bg.y1, 100 - 10);
        // "12:00" has 5 glyphs, "Gate" 4.
        assert_eq!(list.glyphs.len(), 9);
    }
}
