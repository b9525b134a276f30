// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsosd`'s settings: the element's properties and the keys of its configuration file
//! (`config-file-path`), declared once in [`SETTINGS`]. The file is the `[osd]` group of a
//! deepstream-app configuration, with per-class sections in nvinfer's style.
//!
//! ```ini
//! [osd]
//! border-width=3
//! text-size=16
//! text-color=1;1;1;1            # r;g;b;a from 0 to 1, or #RRGGBB[AA], or 0xRRGGBBAA
//! text-bg-color=0.3;0.3;0.3;1
//! label-format={label} {id}
//! font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
//! show-clock=1                  # or display-clock
//! clock-x-offset=20             # or x-clock-offset
//! clock-y-offset=20             # or y-clock-offset
//! clock-text-size=18            # or clock-font-size
//! clock-color=1;0;0;1
//! source-text=0=Front door;1=Yard
//! blur-class-ids=0;2
//! blur-mode=pixelate
//! blur-strength=16
//!
//! [class-attrs-all]             # every class
//! border-width=2
//! blur=0                        # 1: blur every class
//!
//! [class-attrs-2]               # class 2 only
//! border-color=0;1;0;1
//! border-width=4
//! bg-color=0;1;0;0.25           # fill inside the box
//! blur=1                        # privacy blur for this class
//! ```
//!
//! Every key of `[osd]` is named like the element property it sets (deepstream-app's names are
//! accepted too) and takes what the property takes, in the same range. Unknown keys and sections
//! give warnings naming them; malformed values are errors naming file, line and key. Properties
//! set on the element override the file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use ferrostream_core::field;
use ferrostream_core::ini::{ConfigError, IniFile};
use ferrostream_core::settings::{
    Bool, Codec, Enum, Field, Float, List, Mapped, Optional, Pairs, Parsed, Place, PropertyInfo,
    Table, Text, UInt, setting,
};
use gst::glib;
use gst::prelude::*;

use crate::color::Rgba;
use crate::font::FontRequest;
use crate::style::{BlurMode, ClassOverride, Style};

/// A property of `id=colour` pairs that sets one colour of each named class's
/// [`ClassOverride`] (`field`), merged with what `[class-attrs-N]` sections set.
macro_rules! class_colors {
    ($name:literal, $field:ident, $blurb:expr) => {
        setting::<Style, _>(
            $name,
            field!(classes),
            Mapped::new(
                Pairs::<i32, Rgba>::separated_by(&[',', ' ']),
                |colors| {
                    colors
                        .into_iter()
                        .map(|(id, c)| {
                            let o = ClassOverride {
                                $field: Some(c),
                                ..ClassOverride::default()
                            };
                            (id, o)
                        })
                        .collect()
                },
                |classes: &BTreeMap<i32, ClassOverride>| {
                    classes
                        .iter()
                        .filter_map(|(id, o)| o.$field.map(|c| (*id, c)))
                        .collect()
                },
            ),
        )
        .merge(|colors, classes| {
            for (id, o) in colors {
                if let Some(c) = o.$field {
                    classes.entry(*id).or_default().$field = Some(c);
                }
            }
        })
        .blurb($blurb)
        .playing()
    };
}

/// Every setting of `rsosd` but `config-file-path` and `stream-priority`.
pub static SETTINGS: LazyLock<Table<Style>> = LazyLock::new(|| {
    let mut t: Table<Style> = Table::new("osd");
    t.file_property(
        "INI file with an [osd] section (keys named like the properties) and [class-attrs-N] \
         sections; properties set on the element override it",
    );
    t.add(flag(
        "display-bbox",
        field!(display_bbox),
        "Draw the objects' boxes",
    ))
    .add(flag(
        "display-text",
        field!(display_text),
        "Draw the objects' labels",
    ))
    .add(
        flag(
            "display-clock",
            field!(display_clock),
            "Draw the local time",
        )
        .alias("show-clock"),
    )
    .add(flag(
        "display-mask",
        field!(display_mask),
        "Draw the objects' instance masks and the frames' class maps",
    ))
    .add(
        setting::<Style, _>(
            "mask-alpha",
            field!(mask_alpha),
            Mapped::new(UInt::range(0, 255), |n| n as u8, |&a: &u8| u32::from(a)),
        )
        .blurb("Opacity of masks and class maps, 0 (none) to 255 (opaque)")
        .playing(),
    )
    .add(flag(
        "display-analytics",
        field!(display_analytics),
        "Draw rsanalytics' regions, lines and directions, and their counts, as its osd-mode \
             asks",
    ))
    .add(flag(
        "display-keypoints",
        field!(display_keypoints),
        "Draw the objects' keypoints and their skeleton (pose models)",
    ))
    .add(
        setting::<Style, _>(
            "keypoint-min-confidence",
            field!(keypoint_min_confidence),
            Float::range(0.0, 1.0),
        )
        .blurb("Keypoints below this confidence, and limbs with an end below it, are not drawn")
        .playing(),
    )
    .add(
        setting::<Style, _>(
            "keypoint-radius",
            field!(keypoint_radius),
            UInt::range(0, 50),
        )
        .blurb("Half the side of a keypoint's dot in pixels (0: no dots)")
        .playing(),
    )
    .add(
        setting::<Style, _>("limb-width", field!(limb_width), UInt::range(0, 50))
            .blurb("Width of the skeleton's limbs in pixels (0: no limbs)")
            .playing(),
    )
    .add(
        setting::<Style, _>("border-width", field!(border_width), UInt::range(0, 100))
            .key("osd", "border-width")
            .key("class-attrs-all", "border-width")
            .blurb("Box border width in pixels")
            .playing(),
    )
    .add(
        setting::<Style, _>("border-color", field!(border_color), OptionalColor)
            .key("osd", "border-color")
            .key("class-attrs-all", "border-color")
            .blurb("Box colour as 0xRRGGBBAA for every class; 0: a palette colour per class")
            .playing(),
    )
    .add(class_colors!(
        "class-colors",
        border_color,
        "Box colours per class: id=colour pairs separated by commas, colours as #RRGGBB, \
         #RRGGBBAA or 0xRRGGBBAA (e.g. \"0=#ff0000,2=#00ff00\")"
    ))
    .add(class_colors!(
        "class-bg-colors",
        bg_color,
        "Fill inside the boxes per class (deepstream-app's bbox-bg-color<N>): id=colour pairs \
         separated by commas, as class-colors (e.g. \"2=#3399ff26\")"
    ))
    .add(
        setting::<Style, _>("bbox-bg-color", field!(bbox_bg_color), Color)
            .key("osd", "bbox-bg-color")
            .key("class-attrs-all", "bg-color")
            .blurb("Fill inside every box as 0xRRGGBBAA (0: none)")
            .playing(),
    )
    .add(
        setting::<Style, _>("text-size", field!(text_size), UInt::range(4, 512))
            .blurb("Label text height in pixels")
            .playing(),
    )
    .add(
        setting::<Style, _>("text-color", field!(text_color), OptionalColor)
            .blurb(
                "Label text colour as 0xRRGGBBAA; 0: black or white, whichever stands out \
                     on the label background",
            )
            .playing(),
    )
    .add(
        setting::<Style, _>("text-bg-color", field!(text_bg_color), OptionalColor)
            .blurb("Label background as 0xRRGGBBAA; 0: the box colour")
            .playing(),
    )
    .add(
        setting::<Style, _>("label-format", field!(label_format), Parsed::new())
            .blurb(
                "Label text from {label}, {id} (tracker id), {confidence}, {classes} \
                     (classifier results) and {source}; empty fields vanish",
            )
            .playing(),
    )
    .add(
        setting::<Style, _>("font", field!(font), Font)
            .nick("Font")
            .blurb(
                "TrueType/OpenType font file for all text; empty: the first system font found \
                 (DejaVu Sans, Liberation Sans, Noto Sans...), else the built-in bitmap font; \
                 \"builtin\": the built-in 8x8 bitmap font",
            ),
    )
    .add(
        setting::<Style, _>(
            "clock-font-size",
            field!(clock_font_size),
            UInt::range(4, 512),
        )
        .alias("clock-text-size")
        .blurb("Clock text height in pixels")
        .playing(),
    )
    .add(
        setting::<Style, _>("clock-color", field!(clock_color), Color)
            .blurb("Clock colour as 0xRRGGBBAA")
            .playing(),
    )
    .add(
        setting::<Style, _>("x-clock-offset", field!(clock_x), UInt::any())
            .alias("clock-x-offset")
            .blurb("Clock distance from the left edge in pixels")
            .playing(),
    )
    .add(
        setting::<Style, _>("y-clock-offset", field!(clock_y), UInt::any())
            .alias("clock-y-offset")
            .blurb("Clock distance from the top edge in pixels")
            .playing(),
    )
    .add(
        setting::<Style, _>("clock-format", field!(clock_format), Text::new())
            .blurb("Clock format (g_date_time_format, like strftime)")
            .playing(),
    )
    .add(
        setting::<Style, _>(
            "source-text",
            field!(source_text),
            Pairs::<u32, String>::separated_by(&[';']),
        )
        .blurb(
            "Text in the bottom-left corner of each source's frames: id=text pairs separated \
                 by ';' (e.g. \"0=Front door;1=Yard\")",
        )
        .playing(),
    )
    .add(
        setting::<Style, _>("blur-class-ids", field!(blur_class_ids), List::<i32>::new())
            .blurb("Classes whose boxes are blurred (privacy), ';'-separated")
            .playing(),
    )
    .add(
        setting::<Style, _>("blur-all", field!(blur_all), Bool)
            .key("class-attrs-all", "blur")
            .file_only(),
    )
    .add(
        setting::<Style, _>("blur-mode", field!(blur_mode), Enum::<BlurMode>::new())
            .blurb("How blurred boxes are hidden")
            .playing(),
    )
    .add(
        setting::<Style, _>("blur-strength", field!(blur_strength), UInt::range(1, 256))
            .blurb("Pixelation block size or blur radius in pixels")
            .playing(),
    );
    t
});

/// A switch that may change while PLAYING.
fn flag(name: &'static str, place: Place<Style, bool>, blurb: &'static str) -> Field<Style, Bool> {
    setting(name, place, Bool).blurb(blurb).playing()
}

/// The keys of a `[class-attrs-N]` section: what one class overrides.
pub static CLASS_SETTINGS: LazyLock<Table<ClassOverride>> = LazyLock::new(|| {
    let mut t: Table<ClassOverride> = Table::new(CLASS_SECTION);
    t.add(
        setting::<ClassOverride, _>("border-color", field!(border_color), OptionalColor)
            .file_only(),
    )
    .add(
        setting::<ClassOverride, _>(
            "border-width",
            field!(border_width),
            Optional(UInt::range(0, 100)),
        )
        .file_only(),
    )
    .add(setting::<ClassOverride, _>("bg-color", field!(bg_color), OptionalColor).file_only())
    .add(setting::<ClassOverride, _>("blur", field!(blur), Optional(Bool)).file_only());
    t
});

/// The name [`CLASS_SETTINGS`] reads every `[class-attrs-N]` section as.
const CLASS_SECTION: &str = "class-attrs-N";

/// Reads `path` over the default style. Returns the style and the warnings to post.
pub fn load(path: &Path) -> Result<(Style, Vec<String>), ConfigError> {
    parse(&IniFile::load(path)?)
}

/// Reads a parsed configuration file.
pub fn parse(file: &IniFile) -> Result<(Style, Vec<String>), ConfigError> {
    let mut style = Style::default();
    let warnings = SETTINGS.read_ini(file, &mut style, |section, style, warnings| {
        let Some(class) = section.name.strip_prefix("class-attrs-") else {
            return Ok(false);
        };
        let id: i32 = class.parse().map_err(|_| ConfigError {
            path: file.path.clone(),
            line: section.line,
            message: format!(
                "section [{}]: `{class}` is not a class id or `all`",
                section.name
            ),
        })?;
        let mut o = ClassOverride::default();
        CLASS_SETTINGS.read_section(file, section, CLASS_SECTION, &mut o, warnings)?;
        style.classes.insert(id, o);
        Ok(true)
    })?;
    Ok((style, warnings))
}

/// Checks `clock-format` against the current time: an error names it (the element's start fails
/// with it; a change while running keeps the previous style).
pub fn check_clock_format(format: &str) -> Result<(), String> {
    glib::DateTime::now_local()
        .and_then(|now| now.format(format))
        .map(drop)
        .map_err(|_| {
            format!("clock-format `{format}` is not a valid date format (see g_date_time_format)")
        })
}

/// A colour: `#RRGGBB`, `#RRGGBBAA`, `0xRRGGBBAA` or `r;g;b;a` in a file; a `0xRRGGBBAA`
/// number as a property.
struct Color;

impl Codec for Color {
    type Value = Rgba;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<Rgba, String> {
        text.parse()
    }

    fn to_text(&self, value: &Rgba) -> String {
        value.to_string()
    }

    fn samples(&self) -> Vec<Rgba> {
        vec![Rgba::TRANSPARENT, Rgba::WHITE, Rgba::new(255, 0, 0, 128)]
    }

    fn param_spec(&self, info: PropertyInfo<'_>, default: &Rgba) -> glib::ParamSpec {
        glib::ParamSpecUInt::builder(info.name)
            .nick(info.nick)
            .blurb(info.blurb)
            .default_value(default.to_u32())
            .flags(info.flags)
            .build()
    }

    fn to_value(&self, value: &Rgba) -> glib::Value {
        value.to_u32().to_value()
    }

    fn from_value(&self, value: &glib::Value) -> Result<Rgba, String> {
        Ok(Rgba::from_u32(value.get().expect("a guint (type checked)")))
    }
}

/// A colour with a fallback when unset: empty in a file, 0 as a property.
struct OptionalColor;

impl Codec for OptionalColor {
    type Value = Option<Rgba>;

    fn from_text(&self, text: &str, dir: &Path) -> Result<Option<Rgba>, String> {
        Optional(Color).from_text(text, dir)
    }

    fn to_text(&self, value: &Option<Rgba>) -> String {
        value.map(|c| c.to_string()).unwrap_or_default()
    }

    fn samples(&self) -> Vec<Option<Rgba>> {
        vec![None, Some(Rgba::WHITE), Some(Rgba::new(255, 0, 0, 128))]
    }

    fn param_spec(&self, info: PropertyInfo<'_>, default: &Option<Rgba>) -> glib::ParamSpec {
        Color.param_spec(info, &default.unwrap_or(Rgba::TRANSPARENT))
    }

    fn to_value(&self, value: &Option<Rgba>) -> glib::Value {
        value.map_or(0, Rgba::to_u32).to_value()
    }

    fn from_value(&self, value: &glib::Value) -> Result<Option<Rgba>, String> {
        let packed: u32 = value.get().expect("a guint (type checked)");
        Ok((packed != 0).then(|| Rgba::from_u32(packed)))
    }
}

/// The `font`: empty (a system font), `builtin`, or a font file, relative to the configuration
/// file's folder when it comes from the file.
struct Font;

impl Codec for Font {
    type Value = FontRequest;

    fn from_text(&self, text: &str, dir: &Path) -> Result<FontRequest, String> {
        Ok(match FontRequest::parse(text) {
            FontRequest::File(path) => FontRequest::File(dir.join(path)),
            other => other,
        })
    }

    fn to_text(&self, value: &FontRequest) -> String {
        value.to_string()
    }

    fn samples(&self) -> Vec<FontRequest> {
        vec![
            FontRequest::Auto,
            FontRequest::Builtin,
            FontRequest::File("fonts/Sans.ttf".into()),
        ]
    }

    fn read_back(&self, value: &FontRequest, dir: &Path) -> FontRequest {
        match value {
            FontRequest::File(path) => FontRequest::File(dir.join(path)),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_tables_check_out() {
        SETTINGS.check(&Style::default()).unwrap();
        CLASS_SETTINGS.check(&ClassOverride::default()).unwrap();
    }

    #[test]
    fn class_colors_and_source_text_read_their_pairs() {
        let none = Path::new("");
        let colors = Pairs::<i32, Rgba>::separated_by(&[',', ' ']);
        let c = colors.from_text("0=#ff0000, 2=0x00ff0080", none).unwrap();
        assert_eq!(c[&0], Rgba::new(255, 0, 0, 255));
        assert_eq!(c[&2], Rgba::new(0, 255, 0, 128));
        assert!(colors.from_text("0:#ff0000", none).is_err());
        assert!(colors.from_text("x=#ff0000", none).is_err());
        let texts = Pairs::<u32, String>::separated_by(&[';']);
        let t = texts.from_text("0=Front door; 1=Yard", none).unwrap();
        assert_eq!((t[&0].as_str(), t[&1].as_str()), ("Front door", "Yard"));
        assert!(texts.from_text("Front door", none).is_err());
    }

    #[test]
    fn class_sections_and_class_colors_combine() {
        let ini = IniFile::parse(
            Path::new("/cfg/osd.txt"),
            "[class-attrs-2]\nborder-width=4\nblur=1\n[osd]\nclass-colors=2=#00ff00,3=#0000ff\n\
             font=fonts/a.ttf\n[class-attrs-all]\nbg-color=#00000080\nblur=1\n[other]\n",
        )
        .unwrap();
        let (style, warnings) = parse(&ini).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("[other]"), "{warnings:?}");
        let two = &style.classes[&2];
        assert_eq!(
            (two.border_width, two.blur, two.border_color),
            (Some(4), Some(true), Some(Rgba::new(0, 255, 0, 255)))
        );
        assert_eq!(
            style.classes[&3].border_color,
            Some(Rgba::new(0, 0, 255, 255))
        );
        assert_eq!(style.bbox_bg_color, Rgba::new(0, 0, 0, 128));
        assert!(style.blur_all);
        assert_eq!(style.font, FontRequest::File("/cfg/fonts/a.ttf".into()));
        let err = parse(&IniFile::parse(Path::new("o.txt"), "[class-attrs-x]\n").unwrap());
        assert!(err.unwrap_err().message.contains("`x` is not a class id"));
        let err =
            parse(&IniFile::parse(Path::new("o.txt"), "[osd]\ntext-size=99999999\n").unwrap());
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("expected 4 to 512, found 99999999")
        );
    }
}
