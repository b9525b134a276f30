// SPDX-License-Identifier: MIT OR Apache-2.0
//! How a setting's value is written: as a configuration file's text and (with the `gst` feature)
//! as a property's `GValue` and `GParamSpec`. One [`Codec`] per kind of value.

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[cfg(feature = "gst")]
use gst::glib;
#[cfg(feature = "gst")]
use gst::glib::prelude::ParamSpecBuilderExt;

use super::choice::Choice;

/// What a property needs besides its value: its names, its help text and its flags.
#[cfg(feature = "gst")]
#[derive(Debug, Clone, Copy)]
pub struct PropertyInfo<'a> {
    pub name: &'a str,
    pub nick: &'a str,
    pub blurb: &'a str,
    pub flags: glib::ParamFlags,
}

/// One kind of setting value.
// `from_*` take `&self`: the codec reads the text, the value is what it makes.
#[allow(clippy::wrong_self_convention)]
pub trait Codec: Send + Sync + 'static {
    type Value: Clone + PartialEq + fmt::Debug + Send + Sync + 'static;

    /// Reads a configuration file's text. `dir` is the file's folder (relative paths are
    /// relative to it); a property's text is read with an empty `dir`.
    fn from_text(&self, text: &str, dir: &Path) -> Result<Self::Value, String>;
    /// The text [`Codec::from_text`] reads back as `value`.
    fn to_text(&self, value: &Self::Value) -> String;
    /// Values the table's self-check writes and reads back (the ends of a range, an empty
    /// list, a few items): every one must be a valid property value and a valid file text.
    fn samples(&self) -> Vec<Self::Value>;
    /// Texts the property refuses (just outside its range), which a file must refuse too.
    fn refused(&self) -> Vec<String> {
        Vec::new()
    }
    /// The value a file in `dir` gives for the text of `value` (a relative path lands in
    /// `dir`; everything else reads back as itself).
    fn read_back(&self, value: &Self::Value, _dir: &Path) -> Self::Value {
        value.clone()
    }

    /// The property's `GParamSpec`. By default the property is a string holding the text a
    /// file would hold; numbers, switches and enums override the three property methods.
    #[cfg(feature = "gst")]
    fn param_spec(&self, info: PropertyInfo<'_>, default: &Self::Value) -> glib::ParamSpec {
        string_spec(info, &self.to_text(default))
    }

    #[cfg(feature = "gst")]
    fn to_value(&self, value: &Self::Value) -> glib::Value {
        string_value(self.to_text(value))
    }

    /// A property's value; `Err` for text that does not parse (the property is a string, read
    /// like a file's text with relative paths left as they are).
    #[cfg(feature = "gst")]
    fn from_value(&self, value: &glib::Value) -> Result<Self::Value, String> {
        self.from_text(&string_text(value), Path::new(""))
    }
}

/// The `GParamSpec` of a string property whose default is `default_text` (empty: NULL).
#[cfg(feature = "gst")]
fn string_spec(info: PropertyInfo<'_>, default_text: &str) -> glib::ParamSpec {
    glib::ParamSpecString::builder(info.name)
        .nick(info.nick)
        .blurb(info.blurb)
        .default_value((!default_text.is_empty()).then_some(default_text))
        .flags(info.flags)
        .build()
}

/// A string property's value for `text` (empty: NULL).
#[cfg(feature = "gst")]
fn string_value(text: String) -> glib::Value {
    glib::prelude::ToValue::to_value(&(!text.is_empty()).then_some(text))
}

/// A string property's text (NULL: empty).
#[cfg(feature = "gst")]
fn string_text(value: &glib::Value) -> String {
    value
        .get::<Option<String>>()
        .expect("a string (type checked)")
        .unwrap_or_default()
}

/// The `gst` half of a codec whose property has the value's own GLib type.
#[cfg(feature = "gst")]
macro_rules! plain_value {
    () => {
        fn to_value(&self, value: &Self::Value) -> glib::Value {
            glib::prelude::ToValue::to_value(value)
        }

        fn from_value(&self, value: &glib::Value) -> Result<Self::Value, String> {
            Ok(value.get().expect("the property's type (type checked)"))
        }
    };
}

fn parse_number<T: FromStr>(text: &str, what: &str) -> Result<T, String>
where
    T::Err: fmt::Display,
{
    text.trim()
        .parse()
        .map_err(|e| format!("cannot parse `{}` as {what}: {e}", text.trim()))
}

fn range_error<T: fmt::Display + PartialOrd>(
    v: T,
    min: T,
    max: T,
    lowest: T,
    highest: T,
) -> String {
    if min > lowest && max < highest {
        format!("expected {min} to {max}, found {v}")
    } else if min > lowest {
        format!("expected at least {min}, found {v}")
    } else {
        format!("expected at most {max}, found {v}")
    }
}

macro_rules! integer_codec {
    ($(#[$doc:meta])* $codec:ident, $t:ty, $spec:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $codec {
            pub min: $t,
            pub max: $t,
        }

        impl $codec {
            /// Every value of the type.
            pub const fn any() -> Self {
                Self { min: <$t>::MIN, max: <$t>::MAX }
            }

            /// `min..=max`.
            pub const fn range(min: $t, max: $t) -> Self {
                Self { min, max }
            }

            /// `min` and above.
            pub const fn at_least(min: $t) -> Self {
                Self { min, max: <$t>::MAX }
            }
        }

        impl Codec for $codec {
            type Value = $t;

            fn from_text(&self, text: &str, _dir: &Path) -> Result<$t, String> {
                let v: $t = parse_number(text, $what)?;
                if (self.min..=self.max).contains(&v) {
                    Ok(v)
                } else {
                    Err(range_error(v, self.min, self.max, <$t>::MIN, <$t>::MAX))
                }
            }

            fn to_text(&self, value: &$t) -> String {
                value.to_string()
            }

            fn samples(&self) -> Vec<$t> {
                let mut v = vec![self.min, self.max];
                if self.min < self.max {
                    v.push(self.min + 1);
                }
                v
            }

            fn refused(&self) -> Vec<String> {
                let mut v = Vec::new();
                if self.min > <$t>::MIN {
                    v.push((self.min - 1).to_string());
                }
                if self.max < <$t>::MAX {
                    v.push((self.max + 1).to_string());
                }
                v
            }

            #[cfg(feature = "gst")]
            fn param_spec(&self, info: PropertyInfo<'_>, default: &$t) -> glib::ParamSpec {
                glib::$spec::builder(info.name)
                    .nick(info.nick)
                    .blurb(info.blurb)
                    .minimum(self.min)
                    .maximum(self.max)
                    .default_value(*default)
                    .flags(info.flags)
                    .build()
            }

            #[cfg(feature = "gst")]
            plain_value!();
        }
    };
}

integer_codec!(
    /// An unsigned 32-bit number in a range (`guint`).
    UInt,
    u32,
    ParamSpecUInt,
    "an unsigned integer"
);
integer_codec!(
    /// A signed 32-bit number in a range (`gint`).
    Int,
    i32,
    ParamSpecInt,
    "an integer"
);
integer_codec!(
    /// An unsigned 64-bit number in a range (`guint64`).
    UInt64,
    u64,
    ParamSpecUInt64,
    "an unsigned integer"
);

/// A finite `f32` in a range (`gfloat`). NaN and infinity are refused, from a file and from a
/// property alike (a `GParamSpecFloat` range lets them through).
#[derive(Debug, Clone, Copy)]
pub struct Float {
    pub min: f32,
    pub max: f32,
}

impl Float {
    /// Every finite value.
    pub const fn any() -> Self {
        Self {
            min: f32::MIN,
            max: f32::MAX,
        }
    }

    pub const fn range(min: f32, max: f32) -> Self {
        Self { min, max }
    }

    /// `0..=1`: thresholds, confidences, weights.
    pub const fn unit() -> Self {
        Self { min: 0.0, max: 1.0 }
    }

    pub const fn at_least(min: f32) -> Self {
        Self { min, max: f32::MAX }
    }

    fn checked(&self, v: f32) -> Result<f32, String> {
        if !v.is_finite() {
            Err(format!("expected a finite number, found {v}"))
        } else if (self.min..=self.max).contains(&v) {
            Ok(v)
        } else {
            Err(range_error(v, self.min, self.max, f32::MIN, f32::MAX))
        }
    }
}

impl Codec for Float {
    type Value = f32;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<f32, String> {
        self.checked(parse_number(text, "a number")?)
    }

    fn to_text(&self, value: &f32) -> String {
        value.to_string()
    }

    fn samples(&self) -> Vec<f32> {
        vec![self.min, self.max, self.min / 2.0 + self.max / 2.0]
    }

    fn refused(&self) -> Vec<String> {
        let mut v = vec!["nan".to_owned(), "inf".to_owned()];
        // The nearest floats outside the range (`min - 1` is `min` itself past 2^24).
        if self.min > f32::MIN {
            v.push(self.min.next_down().to_string());
        }
        if self.max < f32::MAX {
            v.push(self.max.next_up().to_string());
        }
        v
    }

    #[cfg(feature = "gst")]
    fn param_spec(&self, info: PropertyInfo<'_>, default: &f32) -> glib::ParamSpec {
        glib::ParamSpecFloat::builder(info.name)
            .nick(info.nick)
            .blurb(info.blurb)
            .minimum(self.min)
            .maximum(self.max)
            .default_value(*default)
            .flags(info.flags)
            .build()
    }

    #[cfg(feature = "gst")]
    fn to_value(&self, value: &f32) -> glib::Value {
        glib::prelude::ToValue::to_value(value)
    }

    #[cfg(feature = "gst")]
    fn from_value(&self, value: &glib::Value) -> Result<f32, String> {
        self.checked(value.get().expect("a float (type checked)"))
    }
}

/// A boolean: `1`, `0`, `true` or `false` in a file, as GKeyFile and TOML write them.
#[derive(Debug, Clone, Copy)]
pub struct Bool;

impl Codec for Bool {
    type Value = bool;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<bool, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            other => Err(format!("expected 1, 0, true or false, found `{other}`")),
        }
    }

    fn to_text(&self, value: &bool) -> String {
        value.to_string()
    }

    fn samples(&self) -> Vec<bool> {
        vec![false, true]
    }

    #[cfg(feature = "gst")]
    fn param_spec(&self, info: PropertyInfo<'_>, default: &bool) -> glib::ParamSpec {
        glib::ParamSpecBoolean::builder(info.name)
            .nick(info.nick)
            .blurb(info.blurb)
            .default_value(*default)
            .flags(info.flags)
            .build()
    }

    #[cfg(feature = "gst")]
    plain_value!();
}

/// Text. `Text::new()` keeps it as given (a file's values are already trimmed);
/// `Text::trimmed()` trims a property's text too; `Text::not_empty()` refuses empty text.
#[derive(Debug, Clone, Copy)]
pub struct Text {
    pub trim: bool,
    pub may_be_empty: bool,
}

impl Text {
    pub const fn new() -> Self {
        Self {
            trim: false,
            may_be_empty: true,
        }
    }

    pub const fn trimmed() -> Self {
        Self {
            trim: true,
            may_be_empty: true,
        }
    }

    pub const fn not_empty() -> Self {
        Self {
            trim: false,
            may_be_empty: false,
        }
    }
}

impl Default for Text {
    fn default() -> Self {
        Self::new()
    }
}

impl Codec for Text {
    type Value = String;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<String, String> {
        let text = if self.trim { text.trim() } else { text };
        if text.is_empty() && !self.may_be_empty {
            return Err("must not be empty".to_owned());
        }
        Ok(text.to_owned())
    }

    fn to_text(&self, value: &String) -> String {
        value.clone()
    }

    fn samples(&self) -> Vec<String> {
        let mut v = vec!["a value".to_owned()];
        if self.may_be_empty {
            v.push(String::new());
        }
        v
    }

    fn refused(&self) -> Vec<String> {
        if self.may_be_empty {
            Vec::new()
        } else {
            vec![String::new()]
        }
    }
}

/// A file's path; empty is none. In a configuration file a relative path is relative to the
/// file's folder; a property's path is taken as given.
#[derive(Debug, Clone, Copy)]
pub struct FilePath;

impl Codec for FilePath {
    type Value = Option<PathBuf>;

    fn from_text(&self, text: &str, dir: &Path) -> Result<Option<PathBuf>, String> {
        let text = text.trim();
        Ok((!text.is_empty()).then(|| dir.join(text)))
    }

    fn to_text(&self, value: &Option<PathBuf>) -> String {
        value
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    fn samples(&self) -> Vec<Option<PathBuf>> {
        vec![
            None,
            Some("models/m.onnx".into()),
            Some("/abs/m.onnx".into()),
        ]
    }

    fn read_back(&self, value: &Option<PathBuf>, dir: &Path) -> Option<PathBuf> {
        value.as_ref().map(|p| dir.join(p))
    }
}

/// A list of values separated by `;` (or another separator, for items that contain `;`).
/// Blank items are skipped; the property is a string.
pub struct List<T> {
    separator: char,
    /// Empty items are kept (a position in the list means something: `cam-a,,cam-c`).
    keep_blanks: bool,
    item: PhantomData<fn() -> T>,
}

impl<T> List<T> {
    pub const fn new() -> Self {
        Self::separated_by(';')
    }

    pub const fn separated_by(separator: char) -> Self {
        Self {
            separator,
            keep_blanks: false,
            item: PhantomData,
        }
    }

    /// Keeps empty items, for lists where an item's position is its meaning (one entry per
    /// source id); an empty text is still the empty list.
    pub fn keeping_blanks(self) -> Self {
        Self {
            keep_blanks: true,
            ..self
        }
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Codec for List<T>
where
    T: FromStr + fmt::Display + Clone + PartialEq + fmt::Debug + Send + Sync + 'static,
    T::Err: fmt::Display,
{
    type Value = Vec<T>;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<Vec<T>, String> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        text.split(self.separator)
            .map(str::trim)
            .filter(|s| self.keep_blanks || !s.is_empty())
            .map(|item| {
                item.parse()
                    .map_err(|e| format!("cannot parse list item `{item}`: {e}"))
            })
            .collect()
    }

    fn to_text(&self, value: &Vec<T>) -> String {
        let items: Vec<String> = value.iter().map(T::to_string).collect();
        items.join(self.separator.to_string().as_str())
    }

    fn samples(&self) -> Vec<Vec<T>> {
        let mut v = vec![Vec::new()];
        if let (Ok(a), Ok(b)) = ("1".parse(), "2".parse()) {
            v.push(vec![a, b]);
        }
        v
    }
}

/// `key=value` items separated by any of `separators` (`0=Front door;1=Yard`, or
/// `0=#ff0000,2=#00ff00` where values contain `;`); the property is a string.
pub struct Pairs<K, V> {
    separators: &'static [char],
    item: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Pairs<K, V> {
    /// Items separated by any of `separators`; the first one joins them when written.
    pub const fn separated_by(separators: &'static [char]) -> Self {
        assert!(!separators.is_empty());
        Self {
            separators,
            item: PhantomData,
        }
    }
}

impl<K, V> Codec for Pairs<K, V>
where
    K: FromStr + fmt::Display + Ord + Clone + fmt::Debug + Send + Sync + 'static,
    V: FromStr + fmt::Display + Clone + PartialEq + fmt::Debug + Send + Sync + 'static,
    K::Err: fmt::Display,
    V::Err: fmt::Display,
{
    type Value = std::collections::BTreeMap<K, V>;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<Self::Value, String> {
        let mut map = std::collections::BTreeMap::new();
        for item in text.split(self.separators).filter(|s| !s.trim().is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!("`{}` is not `key=value`", item.trim()));
            };
            let key: K = key
                .trim()
                .parse()
                .map_err(|e| format!("`{}` in `{}`: {e}", key.trim(), item.trim()))?;
            let value: V = value
                .trim()
                .parse()
                .map_err(|e| format!("`{}` in `{}`: {e}", value.trim(), item.trim()))?;
            map.insert(key, value);
        }
        Ok(map)
    }

    fn to_text(&self, value: &Self::Value) -> String {
        let items: Vec<String> = value.iter().map(|(k, v)| format!("{k}={v}")).collect();
        items.join(self.separators[0].to_string().as_str())
    }

    fn samples(&self) -> Vec<Self::Value> {
        let mut v = vec![std::collections::BTreeMap::new()];
        if let (Ok(key), Ok(value)) = ("1".parse(), "2".parse()) {
            v.push([(key, value)].into_iter().collect());
        }
        v
    }
}

/// A value with its own text form (`FromStr` and `Display` that read each other back); the
/// property is a string.
pub struct Parsed<T>(PhantomData<fn() -> T>);

impl<T> Parsed<T> {
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Parsed<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Codec for Parsed<T>
where
    T: FromStr + fmt::Display + Clone + PartialEq + fmt::Debug + Send + Sync + 'static,
    T::Err: fmt::Display,
{
    type Value = T;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<T, String> {
        text.trim().parse().map_err(|e: T::Err| e.to_string())
    }

    fn to_text(&self, value: &T) -> String {
        value.to_string()
    }

    fn samples(&self) -> Vec<T> {
        Vec::new()
    }
}

/// An optional value of a string-property codec: empty text is none.
pub struct Optional<K>(pub K);

impl<K: Codec> Codec for Optional<K> {
    type Value = Option<K::Value>;

    fn from_text(&self, text: &str, dir: &Path) -> Result<Option<K::Value>, String> {
        if text.trim().is_empty() {
            Ok(None)
        } else {
            self.0.from_text(text, dir).map(Some)
        }
    }

    fn to_text(&self, value: &Option<K::Value>) -> String {
        value
            .as_ref()
            .map(|v| self.0.to_text(v))
            .unwrap_or_default()
    }

    fn samples(&self) -> Vec<Option<K::Value>> {
        let mut v = vec![None];
        v.extend(
            self.0
                .samples()
                .into_iter()
                .filter(|s| !self.0.to_text(s).is_empty())
                .map(Some),
        );
        v
    }

    fn read_back(&self, value: &Option<K::Value>, dir: &Path) -> Option<K::Value> {
        value.as_ref().map(|v| self.0.read_back(v, dir))
    }
}

/// One of the values of a [`choice_enum!`](crate::choice_enum): its nick or its number in a
/// file; an enum property.
pub struct Enum<E>(PhantomData<fn() -> E>);

impl<E> Enum<E> {
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<E> Default for Enum<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Choice> Codec for Enum<E> {
    type Value = E;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<E, String> {
        E::from_text(text)
    }

    fn to_text(&self, value: &E) -> String {
        value.nick().to_owned()
    }

    fn samples(&self) -> Vec<E> {
        E::VALUES.iter().map(|v| v.value).collect()
    }

    #[cfg(feature = "gst")]
    fn param_spec(&self, info: PropertyInfo<'_>, default: &E) -> glib::ParamSpec {
        glib::ParamSpecEnum::builder_with_default(info.name, super::GEnum(*default))
            .nick(info.nick)
            .blurb(info.blurb)
            .flags(info.flags)
            .build()
    }

    #[cfg(feature = "gst")]
    fn to_value(&self, value: &E) -> glib::Value {
        glib::prelude::ToValue::to_value(&super::GEnum(*value))
    }

    #[cfg(feature = "gst")]
    fn from_value(&self, value: &glib::Value) -> Result<E, String> {
        Ok(value
            .get::<super::GEnum<E>>()
            .expect("the property's enum (type checked)")
            .0)
    }
}

/// A value stored in another type than the property's: `gie-unique-id` is a `guint` property
/// kept as an `i32`, `segmentation-output-order` a `guint` kept as a `bool`.
pub struct Mapped<K: Codec, T> {
    inner: K,
    into: fn(K::Value) -> T,
    from: fn(&T) -> K::Value,
}

impl<K: Codec, T> Mapped<K, T> {
    /// `into` turns the property's value into the stored one; `from` turns it back.
    pub const fn new(inner: K, into: fn(K::Value) -> T, from: fn(&T) -> K::Value) -> Self {
        Self { inner, into, from }
    }
}

impl<K, T> Codec for Mapped<K, T>
where
    K: Codec,
    T: Clone + PartialEq + fmt::Debug + Send + Sync + 'static,
{
    type Value = T;

    fn from_text(&self, text: &str, dir: &Path) -> Result<T, String> {
        self.inner.from_text(text, dir).map(self.into)
    }

    fn to_text(&self, value: &T) -> String {
        self.inner.to_text(&(self.from)(value))
    }

    fn samples(&self) -> Vec<T> {
        self.inner.samples().into_iter().map(self.into).collect()
    }

    fn refused(&self) -> Vec<String> {
        self.inner.refused()
    }

    fn read_back(&self, value: &T, dir: &Path) -> T {
        (self.into)(self.inner.read_back(&(self.from)(value), dir))
    }

    #[cfg(feature = "gst")]
    fn param_spec(&self, info: PropertyInfo<'_>, default: &T) -> glib::ParamSpec {
        self.inner.param_spec(info, &(self.from)(default))
    }

    #[cfg(feature = "gst")]
    fn to_value(&self, value: &T) -> glib::Value {
        self.inner.to_value(&(self.from)(value))
    }

    #[cfg(feature = "gst")]
    fn from_value(&self, value: &glib::Value) -> Result<T, String> {
        self.inner.from_value(value).map(self.into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_range_checked_in_files() {
        let batch = UInt::range(1, 1024);
        assert_eq!(batch.from_text(" 8 ", Path::new("/")), Ok(8));
        let err = batch.from_text("0", Path::new("/")).unwrap_err();
        assert_eq!(err, "expected 1 to 1024, found 0");
        assert!(
            batch
                .from_text("eight", Path::new("/"))
                .unwrap_err()
                .contains("`eight`")
        );
        assert_eq!(batch.refused(), vec!["0".to_owned(), "1025".to_owned()]);
        let threshold = Float::unit();
        assert!(threshold.from_text("NaN", Path::new("/")).is_err());
        assert!(threshold.from_text("1.5", Path::new("/")).is_err());
        assert_eq!(threshold.from_text("0.25", Path::new("/")), Ok(0.25));
        assert_eq!(Int::at_least(-1).refused(), vec!["-2".to_owned()]);
    }

    #[test]
    fn paths_in_files_are_relative_to_the_file() {
        let dir = Path::new("/cfg");
        assert_eq!(
            FilePath.from_text("m.onnx", dir),
            Ok(Some(PathBuf::from("/cfg/m.onnx")))
        );
        assert_eq!(
            FilePath.from_text("/abs/m.onnx", dir),
            Ok(Some(PathBuf::from("/abs/m.onnx")))
        );
        assert_eq!(FilePath.from_text("  ", dir), Ok(None));
        assert_eq!(
            FilePath.from_text("m.onnx", Path::new("")),
            Ok(Some(PathBuf::from("m.onnx")))
        );
    }

    #[test]
    fn lists_skip_blank_items_and_name_the_bad_one() {
        let ids = List::<i32>::new();
        assert_eq!(ids.from_text("0; 2;;", Path::new("")), Ok(vec![0, 2]));
        assert_eq!(ids.to_text(&vec![0, 2]), "0;2");
        assert!(
            ids.from_text("1;x", Path::new(""))
                .unwrap_err()
                .contains("`x`")
        );
        let names = List::<String>::separated_by(',');
        assert_eq!(
            names.from_text("a, b", Path::new("")),
            Ok(vec!["a".to_owned(), "b".to_owned()])
        );
        let optional = Optional(List::<u32>::new());
        assert_eq!(optional.from_text("", Path::new("")), Ok(None));
        assert_eq!(
            optional.from_text("8;16", Path::new("")),
            Ok(Some(vec![8, 16]))
        );
    }

    #[test]
    fn mapped_values_convert_both_ways() {
        let order = Mapped::new(UInt::range(0, 1), |n| n == 1, |&hwc: &bool| u32::from(hwc));
        assert_eq!(order.from_text("1", Path::new("")), Ok(true));
        assert_eq!(order.to_text(&false), "0");
        assert_eq!(order.samples(), vec![false, true, true]);
        assert!(order.from_text("2", Path::new("")).is_err());
    }
}
