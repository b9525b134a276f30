// SPDX-License-Identifier: MIT OR Apache-2.0
//! Text: a TrueType font found on the machine (or named by the user), rasterised glyph by glyph
//! into one coverage atlas that the planner composes text runs from, with a built-in 8x8 bitmap
//! font for machines without any TrueType font.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Fonts tried in order when the user names none: the DejaVu, Liberation, Noto and Droid sans
/// faces where Debian/Ubuntu/JetPack, Fedora and Arch install them.
const SYSTEM_FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/google-noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/droid/DroidSans.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

/// The value of the `font` property that selects the built-in bitmap font.
pub const BUILTIN: &str = "builtin";

/// Which font the user asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FontRequest {
    /// The first system font found, else the built-in font (with a warning).
    #[default]
    Auto,
    /// The built-in 8x8 bitmap font.
    Builtin,
    /// This TrueType/OpenType file; failing to read it is an error.
    File(PathBuf),
}

impl FontRequest {
    /// Reads the `font` property / configuration value: empty, `builtin`, or a path.
    pub fn parse(text: &str) -> Self {
        match text.trim() {
            "" => Self::Auto,
            t if t.eq_ignore_ascii_case(BUILTIN) => Self::Builtin,
            t => Self::File(PathBuf::from(t)),
        }
    }
}

impl std::fmt::Display for FontRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => Ok(()),
            Self::Builtin => f.write_str(BUILTIN),
            Self::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A font ready to rasterise.
pub enum Typeface {
    TrueType {
        font: Box<fontdue::Font>,
        path: PathBuf,
    },
    Builtin,
}

impl std::fmt::Debug for Typeface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A font that was loaded, and a warning to pass on when it is not what was asked for.
#[derive(Debug)]
pub struct Loaded {
    pub typeface: Typeface,
    pub warning: Option<String>,
}

impl Typeface {
    /// Loads what `request` names. Only an explicitly named file that cannot be used is an error.
    pub fn load(request: &FontRequest) -> Result<Loaded, String> {
        match request {
            FontRequest::Builtin => Ok(Loaded {
                typeface: Typeface::Builtin,
                warning: None,
            }),
            FontRequest::File(path) => Ok(Loaded {
                typeface: Self::from_file(path)?,
                warning: None,
            }),
            FontRequest::Auto => {
                let mut problems = Vec::new();
                for candidate in SYSTEM_FONTS.iter().map(Path::new) {
                    if !candidate.exists() {
                        continue;
                    }
                    match Self::from_file(candidate) {
                        Ok(typeface) => {
                            return Ok(Loaded {
                                typeface,
                                warning: None,
                            });
                        }
                        Err(e) => problems.push(e),
                    }
                }
                let mut warning = String::from(
                    "no TrueType font found (install fonts-dejavu-core or set the font \
                     property to a .ttf file); drawing text with the built-in 8x8 bitmap font",
                );
                for p in problems {
                    warning.push_str("; ");
                    warning.push_str(&p);
                }
                Ok(Loaded {
                    typeface: Typeface::Builtin,
                    warning: Some(warning),
                })
            }
        }
    }

    fn from_file(path: &Path) -> Result<Self, String> {
        let data =
            ferrostream_core::files::read(path, ferrostream_core::files::MAX_ASSET_FILE_BYTES)
                .map_err(|e| format!("cannot read font file: {e}"))?;
        let font =
            fontdue::Font::from_bytes(data, fontdue::FontSettings::default()).map_err(|e| {
                format!(
                    "{} is not a usable TrueType/OpenType font: {e}",
                    path.display()
                )
            })?;
        Ok(Self::TrueType {
            font: Box::new(font),
            path: path.to_owned(),
        })
    }

    /// What the log says about the font.
    pub fn describe(&self) -> String {
        match self {
            Self::TrueType { path, .. } => path.display().to_string(),
            Self::Builtin => "the built-in 8x8 bitmap font".into(),
        }
    }

    /// Vertical metrics of one line of text at `size` pixels.
    pub fn line(&self, size: f32) -> LineMetrics {
        match self {
            Self::TrueType { font, .. } => match font.horizontal_line_metrics(size) {
                Some(m) => LineMetrics {
                    ascent: m.ascent.ceil() as i32,
                    height: (m.ascent - m.descent).ceil() as i32,
                },
                None => LineMetrics {
                    ascent: size.ceil() as i32,
                    height: (size * 1.2).ceil() as i32,
                },
            },
            Self::Builtin => {
                let cell = 8 * builtin_scale(size);
                LineMetrics {
                    ascent: cell,
                    height: cell,
                }
            }
        }
    }

    /// Places the glyphs of `text` in a line whose top-left corner is (0, 0), adding any glyph
    /// not yet in `atlas`. Returns the line's width.
    pub fn layout(
        &self,
        atlas: &mut GlyphAtlas,
        text: &str,
        size: f32,
        out: &mut Vec<PlacedGlyph>,
    ) -> i32 {
        out.clear();
        let line = self.line(size);
        let key_size = (size * 4.0).round() as u32;
        let mut pen = 0.0f32;
        let mut previous: Option<char> = None;
        for c in text.chars() {
            if let (Self::TrueType { font, .. }, Some(p)) = (self, previous) {
                pen += font.horizontal_kern(p, c, size).unwrap_or(0.0);
            }
            previous = Some(c);
            let glyph = atlas.glyph(c, key_size, || self.rasterize(c, size));
            if glyph.width > 0 && glyph.height > 0 {
                out.push(PlacedGlyph {
                    x: pen.round() as i32 + glyph.left,
                    y: line.ascent - glyph.top,
                    glyph,
                });
            }
            pen += glyph.advance;
        }
        pen.ceil() as i32
    }

    fn rasterize(&self, c: char, size: f32) -> Raster {
        match self {
            Self::TrueType { font, .. } => {
                let (m, coverage) = font.rasterize(c, size);
                Raster {
                    width: m.width,
                    height: m.height,
                    left: m.xmin,
                    // fontdue's ymin is the bottom edge relative to the baseline.
                    top: m.ymin + m.height as i32,
                    advance: m.advance_width,
                    coverage,
                }
            }
            Self::Builtin => {
                let s = builtin_scale(size) as usize;
                let rows = builtin_bitmap(c);
                let side = 8 * s;
                let mut coverage = vec![0u8; side * side];
                for (y, row) in coverage.chunks_exact_mut(side).enumerate() {
                    let bits = rows[y / s];
                    for (x, px) in row.iter_mut().enumerate() {
                        if bits & (1 << (x / s)) != 0 {
                            *px = 255;
                        }
                    }
                }
                Raster {
                    width: side,
                    height: side,
                    left: 0,
                    top: side as i32,
                    advance: side as f32,
                    coverage,
                }
            }
        }
    }
}

/// The integer scale of the 8x8 bitmap font for a text size in pixels.
fn builtin_scale(size: f32) -> i32 {
    ((size / 8.0).round() as i32).max(1)
}

/// The 8x8 bitmap of `c` (bit 0 is the leftmost pixel); `?` for characters outside ASCII.
fn builtin_bitmap(c: char) -> [u8; 8] {
    let index = if c.is_ascii() {
        c as usize
    } else {
        '?' as usize
    };
    font8x8::legacy::BASIC_LEGACY[index]
}

/// Vertical metrics of a line of text, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineMetrics {
    /// From the top of the line to the baseline.
    pub ascent: i32,
    /// From the top of the line to the lowest descender.
    pub height: i32,
}

/// A glyph as the rasteriser made it, before it goes into the atlas.
struct Raster {
    width: usize,
    height: usize,
    left: i32,
    top: i32,
    advance: f32,
    coverage: Vec<u8>,
}

/// Where a glyph lies in the atlas and how it sits on the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Glyph {
    pub atlas_x: i32,
    pub atlas_y: i32,
    pub width: i32,
    pub height: i32,
    /// From the pen position to the glyph's left edge.
    pub left: i32,
    /// From the baseline up to the glyph's top edge.
    pub top: i32,
    pub advance: f32,
}

/// A glyph placed in a line of text, relative to the line's top-left corner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlacedGlyph {
    pub x: i32,
    pub y: i32,
    pub glyph: Glyph,
}

/// Width of the atlas in pixels; it grows downwards.
pub const ATLAS_WIDTH: usize = 1024;
/// Above this many rows the atlas starts over (many sizes or scripts in one stream).
const ATLAS_MAX_ROWS: usize = 8192;

/// Every glyph rasterised so far, as 8-bit coverage in one image (shelf-packed rows).
#[derive(Debug)]
pub struct GlyphAtlas {
    /// Unique in the process; a new atlas (or one that started over) gets a new one.
    id: u64,
    pixels: Vec<u8>,
    rows: usize,
    glyphs: HashMap<(char, u32), Glyph, BuildHasherDefault<GlyphKeyHasher>>,
    shelf_x: usize,
    shelf_y: usize,
    shelf_height: usize,
}

impl Default for GlyphAtlas {
    fn default() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            pixels: Vec::new(),
            rows: 0,
            glyphs: HashMap::default(),
            shelf_x: 0,
            shelf_y: 0,
            shelf_height: 0,
        }
    }
}

impl GlyphAtlas {
    /// Starts over when the atlas has grown too large; never call it between laying text out
    /// and composing it (laid-out glyphs point into the atlas).
    pub fn trim(&mut self) {
        if self.rows > ATLAS_MAX_ROWS {
            *self = Self::default();
        }
    }

    /// The atlas image: `ATLAS_WIDTH` coverage bytes per row.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    /// Rows of the atlas image.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Identifies what the atlas holds: it changes whenever a glyph is added or the atlas
    /// starts over, and only then, so a copy (on a GPU) is current while it matches.
    pub fn revision(&self) -> (u64, usize) {
        (self.id, self.glyphs.len())
    }

    pub fn len(&self) -> usize {
        self.glyphs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.glyphs.is_empty()
    }

    fn glyph(&mut self, c: char, key_size: u32, rasterize: impl FnOnce() -> Raster) -> Glyph {
        if let Some(g) = self.glyphs.get(&(c, key_size)) {
            return *g;
        }
        let mut r = rasterize();
        if r.coverage.iter().all(|&c| c == 0) {
            // Blank glyphs (spaces) take no room and draw nothing.
            (r.width, r.height) = (0, 0);
        }
        let width = r.width.min(ATLAS_WIDTH - 1);
        if self.shelf_x + width + 1 > ATLAS_WIDTH {
            self.shelf_y += self.shelf_height + 1;
            self.shelf_x = 0;
            self.shelf_height = 0;
        }
        let (x, y) = (self.shelf_x, self.shelf_y);
        let needed_rows = y + r.height;
        if needed_rows > self.rows {
            self.rows = needed_rows;
            self.pixels.resize(self.rows * ATLAS_WIDTH, 0);
        }
        for row in 0..r.height {
            let src = &r.coverage[row * r.width..row * r.width + width];
            let start = (y + row) * ATLAS_WIDTH + x;
            self.pixels[start..start + width].copy_from_slice(src);
        }
        self.shelf_x += width + 1;
        self.shelf_height = self.shelf_height.max(r.height);
        let glyph = Glyph {
            atlas_x: x as i32,
            atlas_y: y as i32,
            width: width as i32,
            height: r.height as i32,
            left: r.left,
            top: r.top,
            advance: r.advance,
        };
        self.glyphs.insert((c, key_size), glyph);
        glyph
    }
}

/// A multiplicative hasher for the atlas's small integer keys: every label looks up each of its
/// characters, and SipHash's resistance to crafted keys buys nothing here.
#[derive(Default)]
struct GlyphKeyHasher(u64);

impl Hasher for GlyphKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coverage(atlas: &GlyphAtlas, g: &Glyph) -> u32 {
        let mut sum = 0;
        for y in 0..g.height {
            for x in 0..g.width {
                let i = (g.atlas_y + y) as usize * ATLAS_WIDTH + (g.atlas_x + x) as usize;
                sum += atlas.pixels()[i] as u32;
            }
        }
        sum
    }

    #[test]
    fn builtin_font_draws_letters_and_caches_them() {
        let face = Typeface::Builtin;
        let mut atlas = GlyphAtlas::default();
        let mut placed = Vec::new();
        let width = face.layout(&mut atlas, "AB A", 16.0, &mut placed);
        assert_eq!(width, 64, "four 16-pixel cells");
        // The space has no pixels, so three glyphs are placed; 'A' is cached once.
        assert_eq!(placed.len(), 3);
        assert_eq!(atlas.len(), 3);
        assert_eq!(placed[0].glyph, placed[2].glyph);
        assert_eq!(placed[2].x, 48);
        assert!(coverage(&atlas, &placed[0].glyph) > 20 * 255);
    }

    #[test]
    fn system_truetype_font_renders_text() {
        // The set-up scripts install fonts-dejavu-core, so a system font must be found.
        let loaded = Typeface::load(&FontRequest::Auto).unwrap();
        assert!(loaded.warning.is_none(), "{:?}", loaded.warning);
        let face = loaded.typeface;
        assert!(matches!(face, Typeface::TrueType { .. }), "{face:?}");
        let mut atlas = GlyphAtlas::default();
        let mut placed = Vec::new();
        let width = face.layout(&mut atlas, "person 12", 20.0, &mut placed);
        assert!((60..140).contains(&width), "width {width}");
        let line = face.line(20.0);
        assert_eq!(placed.len(), 8, "every character but the space has pixels");
        for p in &placed {
            assert!(p.y >= 0 && p.y + p.glyph.height <= line.height + 1, "{p:?}");
            assert!(coverage(&atlas, &p.glyph) > 0);
        }
        // Nine distinct characters, the space included.
        assert_eq!(atlas.len(), 9);
        // The glyphs advance left to right.
        assert!(placed.windows(2).all(|w| w[0].x < w[1].x));
    }

    #[test]
    fn named_font_that_is_missing_is_an_error() {
        let err = Typeface::load(&FontRequest::File("/nonexistent/font.ttf".into())).unwrap_err();
        assert!(err.contains("/nonexistent/font.ttf"), "{err}");
        let not_a_font =
            std::env::temp_dir().join(format!("ferrostream-not-a-font-{}.ttf", std::process::id()));
        std::fs::write(&not_a_font, b"plain text, not a font").unwrap();
        let err = Typeface::load(&FontRequest::File(not_a_font.clone())).unwrap_err();
        let _ = std::fs::remove_file(&not_a_font);
        assert!(err.contains("not a usable"), "{err}");
    }

    #[test]
    fn atlas_wraps_into_new_shelves() {
        let face = Typeface::Builtin;
        let mut atlas = GlyphAtlas::default();
        let mut placed = Vec::new();
        // 64-pixel glyphs: 15 fit in a 1024-wide shelf, the 16th starts the next one.
        face.layout(&mut atlas, "ABCDEFGHIJKLMNOP", 64.0, &mut placed);
        assert_eq!(placed[14].glyph.atlas_y, 0);
        assert_eq!(placed[15].glyph.atlas_y, 65);
        assert_eq!(placed[15].glyph.atlas_x, 0);
        assert_eq!(atlas.pixels().len(), (65 + 64) * ATLAS_WIDTH);
        assert_eq!(atlas.rows(), 65 + 64);
    }

    #[test]
    fn revision_changes_with_new_glyphs_and_new_atlases() {
        let face = Typeface::Builtin;
        let mut atlas = GlyphAtlas::default();
        let mut placed = Vec::new();
        let empty = atlas.revision();
        face.layout(&mut atlas, "AB", 16.0, &mut placed);
        let two = atlas.revision();
        assert_ne!(empty, two);
        // Glyphs already there change nothing.
        face.layout(&mut atlas, "BA", 16.0, &mut placed);
        assert_eq!(atlas.revision(), two);
        face.layout(&mut atlas, "C", 16.0, &mut placed);
        assert_ne!(atlas.revision(), two);
        // Another atlas with the same glyphs is told apart.
        let mut other = GlyphAtlas::default();
        face.layout(&mut other, "AB", 16.0, &mut placed);
        assert_ne!(other.revision(), two);
    }
}
