//! `rsosd`'s configuration file (`config-file-path`): the `[osd]` group of a deepstream-app
//! configuration, with per-class sections in nvinfer's style.
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
//! accepted too). Unknown keys and sections give warnings naming them; malformed values are
//! errors naming file, line and key. Properties set on the element override the file.

use std::path::Path;

use ferrostream_core::ini::{ConfigError, Entry, IniFile};

use crate::color::Rgba;
use crate::font::FontRequest;
use crate::style::{ClassOverride, Style, parse_class_colors, parse_source_text};

/// Reads `path` over the default style. Returns the style and the warnings to post.
pub fn load(path: &Path) -> Result<(Style, Vec<String>), ConfigError> {
    parse(&IniFile::load(path)?)
}

/// Reads a parsed configuration file.
pub fn parse(file: &IniFile) -> Result<(Style, Vec<String>), ConfigError> {
    let mut style = Style::default();
    let mut warnings = Vec::new();
    for section in &file.sections {
        let name = section.name.as_str();
        if name == "osd" {
            for entry in &section.entries {
                if !osd_key(file, entry, &mut style)? {
                    warnings.push(format!(
                        "{}:{}: unknown key `{}` in [osd] ignored",
                        file.path.display(),
                        entry.line,
                        entry.key
                    ));
                }
            }
        } else if let Some(class) = name.strip_prefix("class-attrs-") {
            let mut o = ClassOverride::default();
            for entry in &section.entries {
                if !class_key(file, entry, &mut o)? {
                    warnings.push(format!(
                        "{}:{}: unknown key `{}` in [{name}] ignored",
                        file.path.display(),
                        entry.line,
                        entry.key
                    ));
                }
            }
            if class == "all" {
                apply_to_all(&mut style, o);
            } else {
                let id: i32 = class.parse().map_err(|_| ConfigError {
                    path: file.path.clone(),
                    line: section.line,
                    message: format!("section [{name}]: `{class}` is not a class id or `all`"),
                })?;
                style.classes.insert(id, o);
            }
        } else {
            warnings.push(format!(
                "{}:{}: section [{name}] is not for rsosd; ignored",
                file.path.display(),
                section.line
            ));
        }
    }
    Ok((style, warnings))
}

fn apply_to_all(style: &mut Style, o: ClassOverride) {
    if let Some(c) = o.border_color {
        style.border_color = Some(c);
    }
    if let Some(w) = o.border_width {
        style.border_width = w;
    }
    if let Some(c) = o.bg_color {
        style.bbox_bg_color = c;
    }
    if let Some(blur) = o.blur {
        style.blur_all = blur;
    }
}

fn color(file: &IniFile, entry: &Entry) -> Result<Rgba, ConfigError> {
    entry.value.parse().map_err(|e| file.error(entry, e))
}

fn parsed<T>(
    file: &IniFile,
    entry: &Entry,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, ConfigError> {
    parse(&entry.value).map_err(|e| file.error(entry, e))
}

/// The range of each size of the file and of the element's property of the same name: a glyph
/// atlas or a blur kernel is sized from them.
pub const RANGES: [(&str, u32, u32); 5] = [
    ("border-width", 0, 100),
    ("text-size", 4, 512),
    ("clock-font-size", 4, 512),
    ("blur-strength", 1, 256),
    ("mask-alpha", 0, 255),
];

/// The range of `key` in [`RANGES`].
pub fn range(key: &str) -> (u32, u32) {
    RANGES
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, min, max)| (min, max))
        .expect("a key of RANGES")
}

/// A size of the file, within the range of its property (`name`: the key as the property is
/// named, for the key's other spellings).
fn sized(file: &IniFile, entry: &Entry, name: &str) -> Result<u32, ConfigError> {
    let v: u32 = file.value(entry)?;
    let (min, max) = range(name);
    if !(min..=max).contains(&v) {
        return Err(file.error(entry, format!("expected {min} to {max}, found {v}")));
    }
    Ok(v)
}

/// Applies one `[osd]` key; `false` when the key is unknown.
fn osd_key(file: &IniFile, entry: &Entry, s: &mut Style) -> Result<bool, ConfigError> {
    match entry.key.as_str() {
        "display-bbox" => s.display_bbox = file.bool_value(entry)?,
        "display-text" => s.display_text = file.bool_value(entry)?,
        "display-clock" | "show-clock" => s.display_clock = file.bool_value(entry)?,
        "border-width" => s.border_width = sized(file, entry, "border-width")?,
        "border-color" => s.border_color = Some(color(file, entry)?),
        "class-colors" => {
            for (id, c) in parsed(file, entry, parse_class_colors)? {
                s.classes.entry(id).or_default().border_color = Some(c);
            }
        }
        "bbox-bg-color" => s.bbox_bg_color = color(file, entry)?,
        "text-size" => s.text_size = sized(file, entry, "text-size")?,
        "text-color" => s.text_color = Some(color(file, entry)?),
        "text-bg-color" => s.text_bg_color = Some(color(file, entry)?),
        "label-format" => s.label_format = parsed(file, entry, |v| v.parse())?,
        "font" => {
            s.font = match FontRequest::parse(&entry.value) {
                FontRequest::File(path) => {
                    FontRequest::File(file.resolve_path(&path.to_string_lossy()))
                }
                other => other,
            }
        }
        "clock-font-size" | "clock-text-size" => {
            s.clock_font_size = sized(file, entry, "clock-font-size")?
        }
        "clock-color" => s.clock_color = color(file, entry)?,
        "x-clock-offset" | "clock-x-offset" => s.clock_x = file.value(entry)?,
        "y-clock-offset" | "clock-y-offset" => s.clock_y = file.value(entry)?,
        "clock-format" => s.clock_format = entry.value.clone(),
        "source-text" => s.source_text = parsed(file, entry, parse_source_text)?,
        "blur-class-ids" => s.blur_class_ids = file.list_value(entry)?,
        "blur-mode" => s.blur_mode = parsed(file, entry, |v| v.parse())?,
        "blur-strength" => s.blur_strength = sized(file, entry, "blur-strength")?,
        "display-mask" => s.display_mask = file.bool_value(entry)?,
        "mask-alpha" => s.mask_alpha = sized(file, entry, "mask-alpha")? as u8,
        "display-analytics" => s.display_analytics = file.bool_value(entry)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies one `[class-attrs-*]` key; `false` when the key is unknown.
fn class_key(file: &IniFile, entry: &Entry, o: &mut ClassOverride) -> Result<bool, ConfigError> {
    match entry.key.as_str() {
        "border-color" => o.border_color = Some(color(file, entry)?),
        "border-width" => o.border_width = Some(sized(file, entry, "border-width")?),
        "bg-color" => o.bg_color = Some(color(file, entry)?),
        "blur" => o.blur = Some(file.bool_value(entry)?),
        _ => return Ok(false),
    }
    Ok(true)
}
