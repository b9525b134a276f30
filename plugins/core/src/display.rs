// SPDX-License-Identifier: MIT OR Apache-2.0
//! Display elements: text, rectangles and lines that an application asks `rsosd` to draw on a
//! frame (DeepStream's display meta), in pixels of the frame the metadata describes.
//!
//! They travel in the frame's metadata like objects do: scaling elements and `rstiler` move them
//! with the picture, `rsosd` draws them after the objects, and the JSON export lists them under
//! `display`. Their sizes are bounded ([`MAX_TEXT_BYTES`], [`MAX_TEXT_SIZE`],
//! [`MAX_LINE_WIDTH`]) so that no application can make the painter allocate without limit.

use serde::{Deserialize, Serialize};

/// The longest text of one element, in bytes.
pub const MAX_TEXT_BYTES: usize = 1024;
/// The largest text size, in pixels.
pub const MAX_TEXT_SIZE: u32 = 128;
/// The most text elements of one frame: with the text size bound, this bounds the painter's
/// work and memory per frame whatever an application asks for.
pub const MAX_TEXTS_PER_FRAME: usize = 64;
/// The widest line or border, in pixels.
pub const MAX_LINE_WIDTH: u32 = 64;
/// The most display elements one frame holds.
pub const MAX_ELEMENTS_PER_FRAME: usize = 4096;

/// An RGBA colour, 8 bits per channel, not premultiplied.
pub type Color = [u8; 4];

/// One thing to draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DisplayElement {
    Text(DisplayText),
    Rect(DisplayRect),
    Line(DisplayLine),
}

/// A line of text whose box's top-left corner is at (`x`, `y`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisplayText {
    pub x: f32,
    pub y: f32,
    pub text: String,
    /// Text height in pixels.
    pub size: u32,
    pub color: Color,
    /// Filled behind the text when set.
    #[serde(default)]
    pub background: Option<Color>,
}

/// A rectangle: a border `border_width` pixels wide inside it, and an optional fill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisplayRect {
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    pub border_width: u32,
    pub border_color: Color,
    #[serde(default)]
    pub fill: Option<Color>,
}

/// A straight line from (`x1`, `y1`) to (`x2`, `y2`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisplayLine {
    pub x1: f32,
    pub y1: f32,
    pub x2: f32,
    pub y2: f32,
    pub width: u32,
    pub color: Color,
}

/// Why a display element was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DisplayError {
    #[error("a coordinate is not a finite number")]
    NotFinite,
    #[error("the text is {0} bytes long; at most {MAX_TEXT_BYTES} are drawn")]
    TextTooLong(usize),
    #[error("text size {0} is outside 1..={MAX_TEXT_SIZE} pixels")]
    TextSize(u32),
    #[error("line width {0} is outside 0..={MAX_LINE_WIDTH} pixels")]
    LineWidth(u32),
    #[error("a rectangle's width and height must not be negative")]
    NegativeSize,
    #[error("the frame already has {MAX_ELEMENTS_PER_FRAME} display elements")]
    TooMany,
    #[error("the frame already has {MAX_TEXTS_PER_FRAME} text elements")]
    TooManyTexts,
}

impl DisplayElement {
    /// Checks the element against the bounds the painter accepts.
    pub fn validate(&self) -> Result<(), DisplayError> {
        let finite = |values: &[f32]| values.iter().all(|v| v.is_finite());
        match self {
            DisplayElement::Text(t) => {
                if !finite(&[t.x, t.y]) {
                    return Err(DisplayError::NotFinite);
                }
                if t.text.len() > MAX_TEXT_BYTES {
                    return Err(DisplayError::TextTooLong(t.text.len()));
                }
                if t.size == 0 || t.size > MAX_TEXT_SIZE {
                    return Err(DisplayError::TextSize(t.size));
                }
            }
            DisplayElement::Rect(r) => {
                if !finite(&[r.left, r.top, r.width, r.height]) {
                    return Err(DisplayError::NotFinite);
                }
                if r.width < 0.0 || r.height < 0.0 {
                    return Err(DisplayError::NegativeSize);
                }
                if r.border_width > MAX_LINE_WIDTH {
                    return Err(DisplayError::LineWidth(r.border_width));
                }
            }
            DisplayElement::Line(l) => {
                if !finite(&[l.x1, l.y1, l.x2, l.y2]) {
                    return Err(DisplayError::NotFinite);
                }
                if l.width > MAX_LINE_WIDTH {
                    return Err(DisplayError::LineWidth(l.width));
                }
            }
        }
        Ok(())
    }

    /// The element with every point moved by `map` (a frame scaled, or placed in a mosaic).
    /// Text sizes and line widths stay in output pixels, as object labels and borders do.
    pub fn mapped(&self, map: impl Fn([f32; 2]) -> [f32; 2]) -> Self {
        match self {
            DisplayElement::Text(t) => {
                let [x, y] = map([t.x, t.y]);
                DisplayElement::Text(DisplayText { x, y, ..t.clone() })
            }
            DisplayElement::Rect(r) => {
                let [l, t] = map([r.left, r.top]);
                let [rr, b] = map([r.left + r.width, r.top + r.height]);
                DisplayElement::Rect(DisplayRect {
                    left: l,
                    top: t,
                    width: (rr - l).max(0.0),
                    height: (b - t).max(0.0),
                    ..r.clone()
                })
            }
            DisplayElement::Line(l) => {
                let [x1, y1] = map([l.x1, l.y1]);
                let [x2, y2] = map([l.x2, l.y2]);
                DisplayElement::Line(DisplayLine {
                    x1,
                    y1,
                    x2,
                    y2,
                    ..l.clone()
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_is_tagged_by_kind() {
        let e = DisplayElement::Text(DisplayText {
            x: 10.0,
            y: 20.0,
            text: "3 people".into(),
            size: 16,
            color: [255, 255, 255, 255],
            background: Some([0, 0, 0, 128]),
        });
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "text");
        assert_eq!(v["text"], "3 people");
        assert_eq!(v["background"][3], 128);
        let back: DisplayElement = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn bounds_are_checked() {
        let text = |size, text: &str| {
            DisplayElement::Text(DisplayText {
                x: 0.0,
                y: 0.0,
                text: text.into(),
                size,
                color: [0; 4],
                background: None,
            })
        };
        assert!(text(16, "ok").validate().is_ok());
        assert_eq!(text(0, "x").validate(), Err(DisplayError::TextSize(0)));
        let long = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(
            text(16, &long).validate(),
            Err(DisplayError::TextTooLong(MAX_TEXT_BYTES + 1))
        );
        let line = DisplayElement::Line(DisplayLine {
            x1: f32::NAN,
            y1: 0.0,
            x2: 1.0,
            y2: 1.0,
            width: 2,
            color: [0; 4],
        });
        assert_eq!(line.validate(), Err(DisplayError::NotFinite));
    }

    #[test]
    fn mapping_scales_rectangles() {
        let r = DisplayElement::Rect(DisplayRect {
            left: 10.0,
            top: 10.0,
            width: 20.0,
            height: 10.0,
            border_width: 2,
            border_color: [255, 0, 0, 255],
            fill: None,
        });
        let DisplayElement::Rect(m) = r.mapped(|[x, y]| [x / 2.0, y / 2.0]) else {
            unreachable!()
        };
        assert_eq!((m.left, m.top, m.width, m.height), (5.0, 5.0, 10.0, 5.0));
    }
}
