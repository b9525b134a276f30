// SPDX-License-Identifier: MIT OR Apache-2.0
//! A key's value, read the way deepstream-app reads it (GLib key file types: integers,
//! booleans as `1`/`0`/`true`/`false`, `;`-separated lists, RGBA colours as four numbers in
//! 0..1, paths relative to the configuration file).

use std::path::{Path, PathBuf};

/// An RGBA colour, each channel in 0..1.
pub type Rgba = [f64; 4];

/// A value as written, with the folder its relative paths are resolved against.
#[derive(Debug, Clone, Copy)]
pub struct Value<'a> {
    pub text: &'a str,
    pub base: &'a Path,
    /// The number a numbered key ends with (`bbox-border-color2`: 2).
    pub index: u32,
}

impl<'a> Value<'a> {
    pub fn new(text: &'a str, base: &'a Path) -> Self {
        Self {
            text,
            base,
            index: 0,
        }
    }

    /// The text, trimmed; an error when empty.
    pub fn string(&self) -> Result<String, String> {
        let t = self.text.trim();
        if t.is_empty() {
            return Err("expected a value, found nothing".into());
        }
        Ok(t.to_owned())
    }

    pub fn int(&self) -> Result<i64, String> {
        self.text
            .trim()
            .parse::<i64>()
            .map_err(|_| format!("expected an integer, found `{}`", self.text))
    }

    /// An integer in `lo..=hi`.
    pub fn int_in(&self, lo: i64, hi: i64) -> Result<i64, String> {
        let v = self.int()?;
        if v < lo || v > hi {
            return Err(format!("expected {lo} to {hi}, found {v}"));
        }
        Ok(v)
    }

    /// A non-negative integer that fits in 32 bits.
    pub fn uint(&self) -> Result<u32, String> {
        Ok(self.int_in(0, i64::from(u32::MAX))? as u32)
    }

    /// A finite number.
    pub fn float(&self) -> Result<f64, String> {
        let v: f64 = self
            .text
            .trim()
            .parse()
            .map_err(|_| format!("expected a number, found `{}`", self.text))?;
        if !v.is_finite() {
            return Err(format!("expected a finite number, found `{}`", self.text));
        }
        Ok(v)
    }

    pub fn boolean(&self) -> Result<bool, String> {
        match self.text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            other => Err(format!("expected 1, 0, true or false, found `{other}`")),
        }
    }

    /// A path, relative ones resolved against the configuration file's folder.
    pub fn path(&self) -> Result<PathBuf, String> {
        let text = self.string()?;
        let p = Path::new(&text);
        Ok(if p.is_absolute() {
            p.to_owned()
        } else {
            self.base.join(p)
        })
    }

    /// A `;`-separated list of integers (blank items skipped).
    pub fn ints(&self) -> Result<Vec<i64>, String> {
        self.items()
            .map(|item| {
                item.parse::<i64>()
                    .map_err(|_| format!("expected integers separated by `;`, found `{item}`"))
            })
            .collect()
    }

    /// A `;`-separated list of words (blank items skipped).
    pub fn strings(&self) -> Vec<String> {
        self.items().map(str::to_owned).collect()
    }

    fn items(&self) -> impl Iterator<Item = &'a str> {
        self.text
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// An RGBA colour: four numbers in 0..1 separated by `;`.
    pub fn rgba(&self) -> Result<Rgba, String> {
        let items: Vec<&str> = self.items().collect();
        let err = || {
            format!(
                "expected a colour as r;g;b;a in 0..1, found `{}`",
                self.text
            )
        };
        if items.len() != 4 {
            return Err(err());
        }
        let mut c = [0.0; 4];
        for (slot, item) in c.iter_mut().zip(items) {
            let v: f64 = item.parse().map_err(|_| err())?;
            if !(0.0..=1.0).contains(&v) {
                return Err(err());
            }
            *slot = v;
        }
        Ok(c)
    }
}

/// A colour as rsosd's properties take it: `0xRRGGBBAA`.
pub fn rgba_hex(c: Rgba) -> String {
    let byte = |v: f64| (v * 255.0).round().clamp(0.0, 255.0) as u32;
    format!(
        "0x{:02x}{:02x}{:02x}{:02x}",
        byte(c[0]),
        byte(c[1]),
        byte(c[2]),
        byte(c[3])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Value<'_> {
        Value::new(text, Path::new("/cfg"))
    }

    #[test]
    fn numbers_booleans_lists_colours_and_paths() {
        assert_eq!(v(" 42 ").uint(), Ok(42));
        assert!(v("-1").uint().is_err());
        assert!(v("4294967296").uint().is_err());
        assert_eq!(v("-1").int(), Ok(-1));
        assert!(v("nan").float().is_err());
        assert_eq!(v("TRUE").boolean(), Ok(true));
        assert!(v("yes").boolean().is_err());
        assert_eq!(v("0;2;;").ints(), Ok(vec![0, 2]));
        assert!(v("a;b").ints().is_err());
        assert_eq!(v("1;0;0.5;1").rgba(), Ok([1.0, 0.0, 0.5, 1.0]));
        assert!(v("1;0;2;1").rgba().is_err());
        assert!(v("1;0;0").rgba().is_err());
        assert_eq!(rgba_hex([1.0, 0.0, 0.5, 1.0]), "0xff0080ff");
        assert_eq!(v("m/a.onnx").path(), Ok(PathBuf::from("/cfg/m/a.onnx")));
        assert_eq!(v("/abs").path(), Ok(PathBuf::from("/abs")));
        assert!(v(" ").path().is_err());
    }
}
