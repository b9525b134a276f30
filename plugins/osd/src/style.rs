// SPDX-License-Identifier: MIT OR Apache-2.0
//! What `rsosd` draws and how it looks: the resolved settings, shared by the properties and the
//! configuration file, with the parsers both use.

use std::collections::BTreeMap;

use ferrostream_core::Object;

use crate::color::Rgba;
use crate::font::FontRequest;

ferrostream_core::choice_enum! {
    /// How the inside of a privacy box is hidden (property `blur-mode`).
    #[derive(Default)]
    pub enum BlurMode: "GstRsOsdBlurMode" {
        /// Blocks of `blur-strength` pixels, each filled with its mean.
        #[default]
        Pixelate = 0 => ("pixelate", "Pixelate"),
        /// Three box blurs of radius `blur-strength` (close to a Gaussian).
        Blur = 1 => ("blur", "Blur"),
    }
}

/// What a `[class-attrs-N]` section or `class-colors` sets for one class; unset fields use the
/// element-wide values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassOverride {
    pub border_color: Option<Rgba>,
    pub border_width: Option<u32>,
    pub bg_color: Option<Rgba>,
    pub blur: Option<bool>,
}

/// The resolved look of one class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassStyle {
    pub border_color: Rgba,
    pub border_width: u32,
    /// Fill inside the box (transparent: none).
    pub bg_color: Rgba,
    pub blur: bool,
}

/// The colour of a class without a configured colour: hues spaced by the golden ratio, so that
/// neighbouring and distant class ids alike get clearly different, bright colours (class 0 red).
pub fn palette_color(class_id: i32) -> Rgba {
    const GOLDEN: f64 = 0.618_033_988_749_895;
    let hue = (class_id as f64 * GOLDEN).rem_euclid(1.0) * 6.0;
    let (saturation, value) = (0.8, 1.0);
    let sector = hue.floor();
    let f = hue - sector;
    let (p, q, t) = (
        value * (1.0 - saturation),
        value * (1.0 - saturation * f),
        value * (1.0 - saturation * (1.0 - f)),
    );
    let (r, g, b) = match sector as u32 {
        0 => (value, t, p),
        1 => (q, value, p),
        2 => (p, value, t),
        3 => (p, q, value),
        4 => (t, p, value),
        _ => (value, p, q),
    };
    let c = |v: f64| (v * 255.0).round() as u8;
    Rgba::new(c(r), c(g), c(b), 255)
}

/// Black or white, whichever contrasts more with `background`.
pub fn contrasting_text(background: Rgba) -> Rgba {
    let luma = 299 * background.r as u32 + 587 * background.g as u32 + 114 * background.b as u32;
    if luma > 150_000 {
        Rgba::BLACK
    } else {
        Rgba::WHITE
    }
}

/// Everything that decides what is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Style {
    pub display_bbox: bool,
    pub display_text: bool,
    pub display_clock: bool,
    pub border_width: u32,
    /// One border colour for every class; `None` picks from the palette by class id.
    pub border_color: Option<Rgba>,
    /// Fill inside every box (transparent: none).
    pub bbox_bg_color: Rgba,
    pub classes: BTreeMap<i32, ClassOverride>,
    pub text_size: u32,
    /// Label text colour; `None` picks black or white, whichever stands out on the label's
    /// background.
    pub text_color: Option<Rgba>,
    /// Label background; `None` uses the box's border colour.
    pub text_bg_color: Option<Rgba>,
    pub label_format: LabelFormat,
    pub font: FontRequest,
    pub clock_font_size: u32,
    pub clock_color: Rgba,
    pub clock_x: u32,
    pub clock_y: u32,
    /// `strftime`-style format of the clock (GLib's `g_date_time_format`).
    pub clock_format: String,
    /// Text drawn in the bottom-left corner of the frames of each source.
    pub source_text: BTreeMap<u32, String>,
    pub blur_class_ids: Vec<i32>,
    /// Blur every class (`[class-attrs-all] blur=1`).
    pub blur_all: bool,
    pub blur_mode: BlurMode,
    pub blur_strength: u32,
    /// Draw objects' instance masks and frames' class maps, in the class colour at `mask_alpha`.
    pub display_mask: bool,
    pub mask_alpha: u8,
    /// Draw rsanalytics' regions, lines and directions, and their counts, as its `osd-mode`
    /// asks.
    pub display_analytics: bool,
    /// Draw objects' keypoints (dots) and their skeleton (limbs in the class colour).
    pub display_keypoints: bool,
    /// Keypoints below this confidence, and limbs with an end below it, are not drawn.
    pub keypoint_min_confidence: f32,
    /// Half the side of a keypoint's dot, in pixels.
    pub keypoint_radius: u32,
    pub limb_width: u32,
}

impl Default for Style {
    fn default() -> Self {
        Self {
            display_bbox: true,
            display_text: true,
            display_clock: false,
            border_width: 3,
            border_color: None,
            bbox_bg_color: Rgba::default(),
            classes: BTreeMap::new(),
            text_size: 16,
            text_color: None,
            text_bg_color: None,
            label_format: LabelFormat::default(),
            font: FontRequest::Auto,
            clock_font_size: 18,
            clock_color: Rgba::WHITE,
            clock_x: 10,
            clock_y: 10,
            clock_format: "%Y-%m-%d %H:%M:%S".into(),
            source_text: BTreeMap::new(),
            blur_class_ids: Vec::new(),
            blur_all: false,
            blur_mode: BlurMode::default(),
            blur_strength: 16,
            display_mask: true,
            mask_alpha: 96,
            display_analytics: true,
            display_keypoints: true,
            keypoint_min_confidence: 0.5,
            keypoint_radius: 2,
            limb_width: 2,
        }
    }
}

impl Style {
    /// The look of class `class_id`.
    pub fn class(&self, class_id: i32) -> ClassStyle {
        let o = self.classes.get(&class_id);
        ClassStyle {
            border_color: o
                .and_then(|o| o.border_color)
                .or(self.border_color)
                .unwrap_or_else(|| palette_color(class_id)),
            border_width: o.and_then(|o| o.border_width).unwrap_or(self.border_width),
            bg_color: o.and_then(|o| o.bg_color).unwrap_or(self.bbox_bg_color),
            blur: o
                .and_then(|o| o.blur)
                .unwrap_or_else(|| self.blur_all || self.blur_class_ids.contains(&class_id)),
        }
    }
}

/// A label template: literal text and `{label}`, `{id}`, `{confidence}`, `{classes}`,
/// `{source}` fields. Fields without a value (an untracked object's id) vanish with the space
/// around them.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelFormat {
    pieces: Vec<Piece>,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Label,
    Id,
    Confidence,
    Classes,
    Source,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Field(Field),
}

/// The label format used when none is configured.
pub const DEFAULT_LABEL_FORMAT: &str = "{label} {id} {confidence} {classes}";

impl Default for LabelFormat {
    fn default() -> Self {
        DEFAULT_LABEL_FORMAT.parse().expect("the default parses")
    }
}

impl std::fmt::Display for LabelFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for LabelFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(format!("label format `{text}`: `{{` without `}}`"));
            };
            let name = &rest[open + 1..open + close];
            let field = match name {
                "label" => Field::Label,
                "id" => Field::Id,
                "confidence" => Field::Confidence,
                "classes" => Field::Classes,
                "source" => Field::Source,
                other => {
                    return Err(format!(
                        "label format `{text}`: unknown field `{{{other}}}` (use {{label}}, \
                         {{id}}, {{confidence}}, {{classes}} or {{source}})"
                    ));
                }
            };
            pieces.push(Piece::Field(field));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self {
            pieces,
            text: text.to_owned(),
        })
    }
}

impl LabelFormat {
    /// Writes the label of `object` (from source `source_id`) into `out`.
    pub fn render(&self, object: &Object, source_id: u32, out: &mut String) {
        use std::fmt::Write;
        out.clear();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Field(Field::Label) if object.label.is_empty() => {
                    let _ = write!(out, "class {}", object.class_id);
                }
                Piece::Field(Field::Label) => out.push_str(&object.label),
                Piece::Field(Field::Id) => {
                    if let Some(id) = object.object_id {
                        let _ = write!(out, "{id}");
                    }
                }
                // Objects the tracker predicts without a detection have no confidence.
                Piece::Field(Field::Confidence) if object.confidence > 0.0 => {
                    let _ = write!(out, "{:.2}", object.confidence);
                }
                Piece::Field(Field::Confidence) => {}
                Piece::Field(Field::Classes) => {
                    for (i, c) in object.classifications.iter().enumerate() {
                        if i > 0 {
                            out.push(' ');
                        }
                        out.push_str(&c.label);
                    }
                }
                Piece::Field(Field::Source) => {
                    let _ = write!(out, "{source_id}");
                }
            }
        }
        collapse_spaces(out);
    }
}

/// Trims and squeezes runs of spaces left by empty fields.
fn collapse_spaces(text: &mut String) {
    let mut previous_space = true;
    text.retain(|c| {
        let keep = !(c == ' ' && previous_space);
        previous_space = c == ' ';
        keep
    });
    while text.ends_with(' ') {
        text.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrostream_core::{BBox, Classification};

    fn object() -> Object {
        Object::new(0, "person".into(), 0.876, BBox::new(0.0, 0.0, 1.0, 1.0), 1)
    }

    fn render(format: &str, o: &Object) -> String {
        let mut out = String::new();
        format
            .parse::<LabelFormat>()
            .unwrap()
            .render(o, 3, &mut out);
        out
    }

    #[test]
    fn label_fields() {
        let mut o = object();
        assert_eq!(render(DEFAULT_LABEL_FORMAT, &o), "person 0.88");
        o.object_id = Some(12);
        o.classifications.push(Classification {
            component_id: 2,
            class_id: 805,
            label: "soccer ball".into(),
            prob: 0.9,
        });
        assert_eq!(
            render(DEFAULT_LABEL_FORMAT, &o),
            "person 12 0.88 soccer ball"
        );
        assert_eq!(
            render("#{id}: {label} (cam {source})", &o),
            "#12: person (cam 3)"
        );
        o.label = "".into();
        assert_eq!(render("{label}", &o), "class 0");
        o.confidence = 0.0;
        assert_eq!(render("{confidence} {id}", &o), "12");
    }

    #[test]
    fn bad_label_formats() {
        assert!(
            "{label} {score}"
                .parse::<LabelFormat>()
                .unwrap_err()
                .contains("unknown field `{score}`")
        );
        assert!("{label".parse::<LabelFormat>().is_err());
    }

    #[test]
    fn class_styles() {
        let mut style = Style {
            blur_class_ids: vec![1],
            ..Style::default()
        };
        style.classes.insert(
            2,
            ClassOverride {
                border_color: Some(Rgba::new(1, 2, 3, 255)),
                border_width: Some(7),
                ..ClassOverride::default()
            },
        );
        assert_eq!(style.class(0).border_color, Rgba::new(255, 51, 51, 255));
        assert_eq!(style.class(13).border_color, palette_color(13));
        assert!(style.class(1).blur && !style.class(0).blur);
        assert_eq!(style.class(2).border_color, Rgba::new(1, 2, 3, 255));
        assert_eq!(style.class(2).border_width, 7);
        assert_eq!(style.class(3).border_width, 3);
        style.border_color = Some(Rgba::BLACK);
        assert_eq!(style.class(0).border_color, Rgba::BLACK);
        assert_eq!(style.class(2).border_color, Rgba::new(1, 2, 3, 255));
    }

    #[test]
    fn palette_colours_are_bright_and_distinct() {
        let colors: Vec<Rgba> = (0..91).map(palette_color).collect();
        for (i, a) in colors.iter().enumerate() {
            assert_eq!(a.r.max(a.g).max(a.b), 255, "class {i}: {a:?}");
            for (j, b) in colors.iter().enumerate().skip(i + 1) {
                let distance = (a.r.abs_diff(b.r) as u32)
                    + (a.g.abs_diff(b.g) as u32)
                    + (a.b.abs_diff(b.b) as u32);
                // Within any 12 consecutive ids, colours are far apart.
                if j - i < 12 {
                    assert!(distance > 60, "classes {i} and {j}: {a:?} {b:?}");
                }
            }
        }
        // COCO's person (0), car (2) and sports ball (36) are told apart.
        assert_ne!(palette_color(0), palette_color(36));
        assert_ne!(palette_color(2), palette_color(36));
    }

    #[test]
    fn automatic_text_colour_contrasts_with_the_background() {
        assert_eq!(contrasting_text(Rgba::new(255, 255, 51, 255)), Rgba::BLACK);
        assert_eq!(contrasting_text(Rgba::new(51, 255, 255, 255)), Rgba::BLACK);
        assert_eq!(contrasting_text(Rgba::new(255, 51, 51, 255)), Rgba::WHITE);
        assert_eq!(contrasting_text(Rgba::new(40, 40, 200, 255)), Rgba::WHITE);
    }
}
