// SPDX-License-Identifier: MIT OR Apache-2.0
//! Colours: what users write (`#ff0000`, `0xff0000ff`, DeepStream's `1;0;0;1`), and how an RGB
//! colour becomes component values of a frame's format (BT.601/709/2020, full or limited range,
//! as the caps' colorimetry says).

use gst_video::{VideoColorMatrix, VideoColorRange, VideoInfo};

/// A straight (not premultiplied) 8-bit RGBA colour.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Rgba {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub a: u8,
}

impl Rgba {
    pub const fn new(r: u8, g: u8, b: u8, a: u8) -> Self {
        Self { r, g, b, a }
    }

    pub const WHITE: Rgba = Rgba::new(255, 255, 255, 255);
    pub const BLACK: Rgba = Rgba::new(0, 0, 0, 255);
    /// Draws nothing: fills in it are dropped.
    pub const TRANSPARENT: Rgba = Rgba::new(0, 0, 0, 0);

    /// From nvdsosd's packed `0xRRGGBBAA`.
    pub const fn from_u32(v: u32) -> Self {
        let [r, g, b, a] = v.to_be_bytes();
        Self { r, g, b, a }
    }

    /// To nvdsosd's packed `0xRRGGBBAA`.
    pub const fn to_u32(self) -> u32 {
        u32::from_be_bytes([self.r, self.g, self.b, self.a])
    }

    /// The same colour with another opacity.
    pub const fn with_alpha(self, a: u8) -> Self {
        Self { a, ..self }
    }

    pub fn is_transparent(self) -> bool {
        self.a == 0
    }
}

/// `0xRRGGBBAA`, which [`Rgba::from_str`](std::str::FromStr) reads back.
impl std::fmt::Display for Rgba {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0x{:08x}", self.to_u32())
    }
}

/// The metadata's colours (`ferrostream_core::display::Color`), `[r, g, b, a]`.
impl From<[u8; 4]> for Rgba {
    fn from([r, g, b, a]: [u8; 4]) -> Self {
        Self { r, g, b, a }
    }
}

impl std::str::FromStr for Rgba {
    type Err = String;

    /// Reads `#RRGGBB`, `#RRGGBBAA`, `0xRRGGBBAA`, or DeepStream's `r;g;b;a` with components
    /// from 0 to 1 (alpha optional).
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim().trim_end_matches(';');
        let hex = |digits: &str| -> Result<Self, String> {
            let value = u32::from_str_radix(digits, 16)
                .map_err(|_| format!("`{text}` is not a hexadecimal colour"))?;
            match digits.len() {
                6 => Ok(Self::from_u32((value << 8) | 0xff)),
                8 => Ok(Self::from_u32(value)),
                _ => Err(format!(
                    "`{text}` needs 6 (RRGGBB) or 8 (RRGGBBAA) hexadecimal digits"
                )),
            }
        };
        if let Some(digits) = t.strip_prefix('#') {
            return hex(digits);
        }
        if let Some(digits) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            return hex(digits);
        }
        let parts: Vec<&str> = t.split(';').map(str::trim).collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(format!(
                "`{text}` is not a colour: use #RRGGBB, #RRGGBBAA, 0xRRGGBBAA or r;g;b;a with \
                 components from 0 to 1"
            ));
        }
        let mut c = [255u8; 4];
        for (slot, part) in c.iter_mut().zip(&parts) {
            let v: f32 = part
                .parse()
                .map_err(|_| format!("`{part}` in colour `{text}` is not a number"))?;
            if !(0.0..=1.0).contains(&v) {
                return Err(format!(
                    "`{part}` in colour `{text}` is outside 0..1 (components are fractions)"
                ));
            }
            *slot = (v * 255.0).round() as u8;
        }
        Ok(Self::new(c[0], c[1], c[2], c[3]))
    }
}

/// How one RGB colour maps to Y'CbCr for a frame's colorimetry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YuvMatrix {
    kr: f32,
    kb: f32,
    full_range: bool,
}

impl YuvMatrix {
    /// The matrix and range of `info`. Unknown or RGB matrices on YUV frames fall back to what
    /// GStreamer assumes for unlabelled video: BT.709 from 720 lines up, BT.601 below.
    pub fn for_info(info: &VideoInfo) -> Self {
        let colorimetry = info.colorimetry();
        let matrix = match colorimetry.matrix() {
            VideoColorMatrix::Unknown | VideoColorMatrix::Rgb if info.height() >= 720 => {
                VideoColorMatrix::Bt709
            }
            VideoColorMatrix::Unknown | VideoColorMatrix::Rgb => VideoColorMatrix::Bt601,
            m => m,
        };
        Self::new(matrix, colorimetry.range() == VideoColorRange::Range0_255)
    }

    /// A given matrix and range (tests, benchmarks, painters without caps).
    pub fn new(matrix: VideoColorMatrix, full_range: bool) -> Self {
        // Kr and Kb of each standard (ITU-R BT.601/709/2020, SMPTE 240M, FCC 73.682).
        let (kr, kb) = match matrix {
            VideoColorMatrix::Bt601 => (0.299, 0.114),
            VideoColorMatrix::Bt2020 => (0.2627, 0.0593),
            VideoColorMatrix::Smpte240m => (0.212, 0.087),
            VideoColorMatrix::Fcc => (0.30, 0.11),
            _ => (0.2126, 0.0722),
        };
        Self { kr, kb, full_range }
    }

    /// `[Y, Cb, Cr]` of an RGB colour.
    pub fn yuv(&self, c: Rgba) -> [u8; 3] {
        let (r, g, b) = (c.r as f32 / 255.0, c.g as f32 / 255.0, c.b as f32 / 255.0);
        let kg = 1.0 - self.kr - self.kb;
        let y = self.kr * r + kg * g + self.kb * b;
        let cb = (b - y) / (2.0 * (1.0 - self.kb));
        let cr = (r - y) / (2.0 * (1.0 - self.kr));
        let (y, cb, cr) = if self.full_range {
            (255.0 * y, 128.0 + 255.0 * cb, 128.0 + 255.0 * cr)
        } else {
            (16.0 + 219.0 * y, 128.0 + 224.0 * cb, 128.0 + 224.0 * cr)
        };
        let q = |v: f32| v.round().clamp(0.0, 255.0) as u8;
        [q(y), q(cb), q(cr)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_notation() {
        assert_eq!("#ff8000".parse(), Ok(Rgba::new(255, 128, 0, 255)));
        assert_eq!("#ff800080".parse(), Ok(Rgba::new(255, 128, 0, 128)));
        assert_eq!("0x00ff00ff".parse(), Ok(Rgba::new(0, 255, 0, 255)));
        assert_eq!("1;0;0;1".parse(), Ok(Rgba::new(255, 0, 0, 255)));
        assert_eq!("0.3;0.3;0.3;1;".parse(), Ok(Rgba::new(77, 77, 77, 255)));
        assert_eq!("0;0;1".parse(), Ok(Rgba::new(0, 0, 255, 255)));
        assert!("red".parse::<Rgba>().is_err());
        assert!("#ff80".parse::<Rgba>().is_err());
        assert!(
            "2;0;0;1"
                .parse::<Rgba>()
                .unwrap_err()
                .contains("outside 0..1")
        );
    }

    #[test]
    fn packed_round_trip() {
        let c = Rgba::from_u32(0x11223344);
        assert_eq!(c, Rgba::new(0x11, 0x22, 0x33, 0x44));
        assert_eq!(c.to_u32(), 0x11223344);
    }

    #[test]
    fn known_yuv_values() {
        let bt601 = YuvMatrix::new(VideoColorMatrix::Bt601, false);
        assert_eq!(bt601.yuv(Rgba::WHITE), [235, 128, 128]);
        assert_eq!(bt601.yuv(Rgba::BLACK), [16, 128, 128]);
        // Pure red in BT.601 limited range: (81, 90, 240).
        assert_eq!(bt601.yuv(Rgba::new(255, 0, 0, 255)), [81, 90, 240]);
        let bt709 = YuvMatrix::new(VideoColorMatrix::Bt709, false);
        // Pure red in BT.709 limited range: (63, 102, 240).
        assert_eq!(bt709.yuv(Rgba::new(255, 0, 0, 255)), [63, 102, 240]);
        let full = YuvMatrix::new(VideoColorMatrix::Bt601, true);
        assert_eq!(full.yuv(Rgba::WHITE), [255, 128, 128]);
    }
}
