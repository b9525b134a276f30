// SPDX-License-Identifier: MIT OR Apache-2.0
//! Settings declared once.
//!
//! An element's settings are one [`Table`]: each entry names the property, its nick and blurb,
//! its type and range (a [`Codec`]), the configuration-file key or keys that set it, where the
//! value lives in the element's configuration struct, and whether it may change while PLAYING.
//! From the table come the `GParamSpec`s, `set_property` and `property`, reading a
//! configuration file, and the rule every element follows: **properties set on the element
//! override the file**. Adding a setting is one entry plus the code that uses the value.
//!
//! ```
//! use ferrostream_core::field;
//! use ferrostream_core::settings::{Float, Table, UInt, setting};
//!
//! #[derive(Clone, Debug, PartialEq)]
//! struct Config { batch_size: u32, threshold: f32 }
//! impl Default for Config {
//!     fn default() -> Self { Self { batch_size: 1, threshold: 0.2 } }
//! }
//!
//! let mut table: Table<Config> = Table::new("property");
//! table
//!     .add(setting::<Config, _>("batch-size", field!(batch_size), UInt::range(1, 1024))
//!         .nick("Batch size").blurb("Frames per engine call"))
//!     .add(setting::<Config, _>("threshold", field!(threshold), Float::unit())
//!         .key("class-attrs-all", "pre-cluster-threshold")
//!         .nick("Threshold").blurb("Minimum confidence"));
//!
//! let ini = ferrostream_core::ini::IniFile::parse(
//!     "/cfg/model.txt".as_ref(),
//!     "[property]\nbatch-size=4\n[class-attrs-all]\npre-cluster-threshold=0.5\n",
//! ).unwrap();
//! let mut file = Config::default();
//! let warnings = table.read_ini(&ini, &mut file, |_, _, _| Ok(false)).unwrap();
//! assert!(warnings.is_empty());
//! assert_eq!(file, Config { batch_size: 4, threshold: 0.5 });
//! table.check(&Config::default()).unwrap();
//! ```
//!
//! Rules every table follows:
//! - A file is held to the property's range: a value the property refuses is an error in the
//!   file too, naming the file, line and key.
//! - A property value that does not parse (a list, a path) is kept as given, shown by the getter,
//!   and fails the element's start naming the property. A setting that may change while
//!   PLAYING keeps its previous value instead, and the caller warns.
//! - The getter of a string property returns the text as it was set.
//! - Enums take the nick or the number, in files and in `gst-launch-1.0` alike.

mod choice;
mod codec;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::ini::{ConfigError, IniFile, Section};

#[cfg(feature = "gst")]
static CAT: std::sync::LazyLock<gst::DebugCategory> = std::sync::LazyLock::new(|| {
    gst::DebugCategory::new(
        "ferrostream-settings",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream element settings"),
    )
});

#[cfg(feature = "gst")]
pub use choice::GEnum;
pub use choice::{Choice, ChoiceValue};
#[cfg(feature = "gst")]
pub use codec::PropertyInfo;
pub use codec::{
    Bool, Codec, Enum, FilePath, Float, Int, List, Mapped, Optional, Pairs, Parsed, Text, UInt,
    UInt64,
};
#[cfg(feature = "gst")]
use gst::glib;

/// The property that names an element's configuration file, for tables that declare one
/// ([`Table::file_property`]).
pub const FILE_PROPERTY: &str = "config-file-path";

/// When a setting may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Read as the element starts: `GST_PARAM_MUTABLE_READY`.
    Ready,
    /// Taken while the element runs: `GST_PARAM_MUTABLE_PLAYING`.
    Playing,
}

/// Where a value comes from, for checks that differ between a file and a property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    File,
    Property,
}

/// A configuration-file key: a section and a name. The section `""` is a file without
/// sections (the top level of a TOML file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub section: &'static str,
    pub name: &'static str,
}

/// Where a setting's value lives in the configuration struct `C`. Made by [`field!`].
pub struct Place<C, T> {
    pub get: fn(&C) -> &T,
    pub get_mut: fn(&mut C) -> &mut T,
}

impl<C, T> Place<C, T> {
    pub const fn new(get: fn(&C) -> &T, get_mut: fn(&mut C) -> &mut T) -> Self {
        Self { get, get_mut }
    }
}

/// The [`Place`] of a field of the configuration struct: `field!(batch_size)`,
/// `field!(tensorrt.network_mode)`.
#[macro_export]
macro_rules! field {
    ($($path:ident).+) => {
        $crate::settings::Place::new(|c| &c.$($path).+, |c| &mut c.$($path).+)
    };
}

type CheckFn<T> = Box<dyn Fn(&T, Source) -> Result<(), String> + Send + Sync>;
/// How a new value combines with the one already there ([`Field::merge`]).
type MergeFn<T> = fn(&T, &mut T);

/// One setting: start one with [`setting`], describe it with the builder methods, then
/// [`Table::add`] it.
// Without `gst` the property side (nick, blurb, change) is never read.
#[cfg_attr(not(feature = "gst"), allow(dead_code))]
pub struct Field<C, K: Codec> {
    name: &'static str,
    nick: &'static str,
    blurb: &'static str,
    change: Change,
    /// `None`: the default key, the name in the table's section.
    keys: Option<Vec<KeyName>>,
    property: bool,
    place: Place<C, K::Value>,
    codec: K,
    checks: Vec<CheckFn<K::Value>>,
    merge: Option<MergeFn<K::Value>>,
}

#[derive(Debug, Clone, Copy)]
enum KeyName {
    /// A name in the table's own section.
    Own(&'static str),
    In(Key),
}

/// Starts a setting: the property `name`, stored at `place`, of the kind `codec`. Its file key
/// is `name` in the table's section unless [`Field::key`] or [`Field::alias`] says otherwise.
///
/// The closures of [`field!`] need the configuration type before a builder method is called on
/// the result, so name it: `setting::<Config, _>("batch-size", field!(batch_size), ..).nick(..)`.
pub fn setting<C, K: Codec>(
    name: &'static str,
    place: Place<C, K::Value>,
    codec: K,
) -> Field<C, K> {
    Field {
        name,
        nick: name,
        blurb: "",
        change: Change::Ready,
        keys: None,
        property: true,
        place,
        codec,
        checks: Vec::new(),
        merge: None,
    }
}

impl<C, K: Codec> Field<C, K> {
    pub fn nick(mut self, nick: &'static str) -> Self {
        self.nick = nick;
        self
    }

    pub fn blurb(mut self, blurb: &'static str) -> Self {
        self.blurb = blurb;
        self
    }

    /// The setting may change while the element runs (the element applies the new value).
    pub fn playing(mut self) -> Self {
        self.change = Change::Playing;
        self
    }

    fn keys_mut(&mut self) -> &mut Vec<KeyName> {
        self.keys.get_or_insert_with(Vec::new)
    }

    /// A key in another section, or under another name; the first `key` or `alias` replaces
    /// the default key, so list every key the setting has.
    pub fn key(mut self, section: &'static str, name: &'static str) -> Self {
        self.keys_mut().push(KeyName::In(Key { section, name }));
        self
    }

    /// Another name in the table's section that sets the same value (an older name of the key).
    /// The property's own name stays a key.
    pub fn alias(mut self, name: &'static str) -> Self {
        if self.keys.is_none() {
            let own = self.name;
            self.keys_mut().push(KeyName::Own(own));
        }
        self.keys_mut().push(KeyName::Own(name));
        self
    }

    /// The setting has no configuration-file key (a property only).
    pub fn no_key(mut self) -> Self {
        self.keys = Some(Vec::new());
        self
    }

    /// The setting is a file key only, with no property.
    pub fn file_only(mut self) -> Self {
        self.property = false;
        self
    }

    /// A check beyond the codec's range, run on file and property values alike (`Source` says
    /// which, for the rare check that differs).
    pub fn check(
        mut self,
        check: impl Fn(&K::Value, Source) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push(Box::new(check));
        self
    }

    /// How a new value combines with the one already there: a file key's with what the file
    /// set before, a property's with the file's. Without it the new value replaces the old.
    pub fn merge(mut self, merge: fn(&K::Value, &mut K::Value)) -> Self {
        self.merge = Some(merge);
        self
    }

    fn checked(&self, value: K::Value, source: Source) -> Result<K::Value, String> {
        for check in &self.checks {
            check(&value, source)?;
        }
        Ok(value)
    }
}

/// What a [`Table`] needs of a setting, whatever its value type.
trait Entry<C>: Send + Sync {
    fn name(&self) -> &'static str;
    // Read only by the property side.
    #[cfg_attr(not(feature = "gst"), allow(dead_code))]
    fn change(&self) -> Change;
    fn is_property(&self) -> bool;
    fn keys(&self, own_section: &'static str) -> Vec<Key>;
    fn read(&self, text: &str, dir: &Path, source: Source, into: &mut C) -> Result<(), String>;
    fn copy(&self, from: &C, into: &mut C);
    fn render(&self, from: &C) -> String;
    /// The texts of the codec's samples a property takes, and of the default.
    fn sample_texts(&self, defaults: &C) -> Vec<String>;
    fn self_check(&self, defaults: &C) -> Result<(), String>;
    #[cfg(feature = "gst")]
    fn param_spec(&self, defaults: &C) -> glib::ParamSpec;
    #[cfg(feature = "gst")]
    fn set_value(&self, value: &glib::Value, into: &mut C) -> Result<(), String>;
    #[cfg(feature = "gst")]
    fn value(&self, from: &C) -> glib::Value;
}

impl<C: 'static, K: Codec> Entry<C> for Field<C, K> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn change(&self) -> Change {
        self.change
    }

    fn is_property(&self) -> bool {
        self.property
    }

    fn keys(&self, own_section: &'static str) -> Vec<Key> {
        let own = |name| Key {
            section: own_section,
            name,
        };
        match &self.keys {
            None => vec![own(self.name)],
            Some(keys) => keys
                .iter()
                .map(|k| match *k {
                    KeyName::Own(name) => own(name),
                    KeyName::In(key) => key,
                })
                .collect(),
        }
    }

    fn read(&self, text: &str, dir: &Path, source: Source, into: &mut C) -> Result<(), String> {
        let value = self.checked(self.codec.from_text(text, dir)?, source)?;
        let target = (self.place.get_mut)(into);
        match self.merge {
            Some(merge) => merge(&value, target),
            None => *target = value,
        }
        Ok(())
    }

    fn copy(&self, from: &C, into: &mut C) {
        let value = (self.place.get)(from);
        let target = (self.place.get_mut)(into);
        match self.merge {
            Some(merge) => merge(value, target),
            None => *target = value.clone(),
        }
    }

    fn render(&self, from: &C) -> String {
        self.codec.to_text((self.place.get)(from))
    }

    fn sample_texts(&self, defaults: &C) -> Vec<String> {
        let mut texts: Vec<String> = self
            .codec
            .samples()
            .iter()
            .filter(|s| self.checked((*s).clone(), Source::Property).is_ok())
            .map(|s| self.codec.to_text(s))
            .collect();
        texts.push(self.render(defaults));
        texts
    }

    fn self_check(&self, defaults: &C) -> Result<(), String> {
        let name = self.name;
        let dir = Path::new("/configuration/folder");
        let mut samples = self.codec.samples();
        samples.push((self.place.get)(defaults).clone());
        for sample in samples {
            if self.checked(sample.clone(), Source::File).is_err() {
                continue;
            }
            let text = self.codec.to_text(&sample);
            let read = self.codec.from_text(&text, dir).map_err(|e| {
                format!("{name}: the file refuses `{text}`, the text of {sample:?}: {e}")
            })?;
            let expected = self.codec.read_back(&sample, dir);
            if read != expected {
                return Err(format!(
                    "{name}: `{text}` reads back as {read:?}, not {expected:?}"
                ));
            }
            #[cfg(feature = "gst")]
            if self.property {
                let spec = self.param_spec(defaults);
                let value = self.codec.to_value(&sample);
                if !takes(&spec, &value) {
                    return Err(format!("{name}: the property refuses {sample:?}"));
                }
                let back = self.codec.from_value(&value);
                if back.as_ref() != Ok(&sample) {
                    return Err(format!(
                        "{name}: {sample:?} set as a property reads back as {back:?}"
                    ));
                }
            }
        }
        for text in self.codec.refused() {
            if let Ok(v) = self.codec.from_text(&text, dir) {
                return Err(format!(
                    "{name}: the property refuses `{text}` but a file takes it as {v:?}"
                ));
            }
        }
        #[cfg(feature = "gst")]
        if self.property {
            let spec = self.param_spec(defaults);
            let default = self.value(defaults);
            if !takes(&spec, &default) {
                return Err(format!(
                    "{name}: the default is outside the property's range"
                ));
            }
        }
        Ok(())
    }

    #[cfg(feature = "gst")]
    fn param_spec(&self, defaults: &C) -> glib::ParamSpec {
        let mutable = match self.change {
            Change::Ready => gst::PARAM_FLAG_MUTABLE_READY,
            Change::Playing => gst::PARAM_FLAG_MUTABLE_PLAYING,
        };
        let info = PropertyInfo {
            name: self.name,
            nick: self.nick,
            blurb: self.blurb,
            flags: glib::ParamFlags::READWRITE | mutable,
        };
        self.codec.param_spec(info, (self.place.get)(defaults))
    }

    #[cfg(feature = "gst")]
    fn set_value(&self, value: &glib::Value, into: &mut C) -> Result<(), String> {
        let value = self.checked(self.codec.from_value(value)?, Source::Property)?;
        *(self.place.get_mut)(into) = value;
        Ok(())
    }

    #[cfg(feature = "gst")]
    fn value(&self, from: &C) -> glib::Value {
        self.codec.to_value((self.place.get)(from))
    }
}

/// A setting of another table, reached through a part of this table's configuration.
struct Nested<C, D: 'static> {
    inner: &'static dyn Entry<D>,
    get: fn(&C) -> &D,
    get_mut: fn(&mut C) -> &mut D,
}

impl<C: 'static, D: 'static> Entry<C> for Nested<C, D> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn change(&self) -> Change {
        self.inner.change()
    }

    fn is_property(&self) -> bool {
        true
    }

    fn keys(&self, _own_section: &'static str) -> Vec<Key> {
        Vec::new()
    }

    fn read(&self, text: &str, dir: &Path, source: Source, into: &mut C) -> Result<(), String> {
        self.inner.read(text, dir, source, (self.get_mut)(into))
    }

    fn copy(&self, from: &C, into: &mut C) {
        self.inner.copy((self.get)(from), (self.get_mut)(into))
    }

    fn render(&self, from: &C) -> String {
        self.inner.render((self.get)(from))
    }

    fn sample_texts(&self, defaults: &C) -> Vec<String> {
        self.inner.sample_texts((self.get)(defaults))
    }

    fn self_check(&self, defaults: &C) -> Result<(), String> {
        self.inner.self_check((self.get)(defaults))
    }

    #[cfg(feature = "gst")]
    fn param_spec(&self, defaults: &C) -> glib::ParamSpec {
        self.inner.param_spec((self.get)(defaults))
    }

    #[cfg(feature = "gst")]
    fn set_value(&self, value: &glib::Value, into: &mut C) -> Result<(), String> {
        self.inner.set_value(value, (self.get_mut)(into))
    }

    #[cfg(feature = "gst")]
    fn value(&self, from: &C) -> glib::Value {
        self.inner.value((self.get)(from))
    }
}

/// The values of an element's properties, which of them were set, and the configuration file
/// named by `config-file-path`: the properties set override the file in [`Table::resolve`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Props<C> {
    /// Every setting's property value (the defaults until set).
    pub values: C,
    /// The configuration file, when the table has [`FILE_PROPERTY`] and it was set.
    file: Option<PathBuf>,
    set: BTreeSet<&'static str>,
    /// String properties' text as set, which their getter returns.
    texts: BTreeMap<&'static str, Option<String>>,
    /// Properties whose value was refused, with the reason: start fails naming them.
    errors: BTreeMap<&'static str, String>,
}

impl<C> Props<C> {
    pub fn new(values: C) -> Self {
        Self {
            values,
            file: None,
            set: BTreeSet::new(),
            texts: BTreeMap::new(),
            errors: BTreeMap::new(),
        }
    }

    /// Whether the property `name` was set on the element.
    pub fn is_set(&self, name: &str) -> bool {
        self.set.contains(name)
    }

    /// The configuration file named by `config-file-path`.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Names the configuration file (`None` or an empty path: none).
    pub fn set_file(&mut self, path: Option<PathBuf>) {
        self.file = path.filter(|p| !p.as_os_str().is_empty());
    }

    /// The configuration file read with `load`, or `defaults()` when none is named; with the
    /// file's warnings. What [`Table::resolve`] then applies the properties over.
    pub fn read_file<E: fmt::Display>(
        &self,
        defaults: impl FnOnce() -> C,
        load: impl FnOnce(&Path) -> Result<(C, Vec<String>), E>,
    ) -> Result<(C, Vec<String>), String> {
        match self.file() {
            Some(path) => load(path).map_err(|e| e.to_string()),
            None => Ok((defaults(), Vec::new())),
        }
    }
}

/// An element's settings: see the [module documentation](self).
pub struct Table<C> {
    section: &'static str,
    /// The blurb of `config-file-path`, for elements that read a configuration file.
    #[cfg_attr(not(feature = "gst"), allow(dead_code))]
    file_blurb: Option<&'static str>,
    entries: Vec<Box<dyn Entry<C>>>,
    ignored: Vec<Ignored>,
}

/// A key that files may hold and that the element does not use.
struct Ignored {
    key: Key,
    /// Why, for the warning a file that holds it gets; `None`: no warning.
    reason: Option<&'static str>,
    /// Checks the key's text: a value the key could never have is an error all the same.
    check: Option<TextCheck>,
}

type TextCheck = Box<dyn Fn(&str, &Path) -> Result<(), String> + Send + Sync>;

impl<C: 'static> Table<C> {
    /// A table whose keys are in `section` unless a setting says otherwise.
    pub fn new(section: &'static str) -> Self {
        Self {
            section,
            file_blurb: None,
            entries: Vec::new(),
            ignored: Vec::new(),
        }
    }

    /// The element reads a configuration file named by the property [`FILE_PROPERTY`]
    /// (described by `blurb`), which comes first among the properties; [`Props::read_file`]
    /// reads it.
    pub fn file_property(&mut self, blurb: &'static str) -> &mut Self {
        self.file_blurb = Some(blurb);
        self
    }

    /// Whether `name` is this table's [`FILE_PROPERTY`].
    #[cfg(feature = "gst")]
    fn is_file_property(&self, name: &str) -> bool {
        self.file_blurb.is_some() && name == FILE_PROPERTY
    }

    pub fn add<K: Codec>(&mut self, field: Field<C, K>) -> &mut Self {
        self.entries.push(Box::new(field));
        self
    }

    /// Properties that are settings of another table, held in the part `place` of this table's
    /// configuration: `[class-attrs-all]`'s `pre-cluster-threshold` is also an element
    /// property. They take their names, types, ranges and help from `table`; files reach them
    /// through that table, so here they have no key.
    pub fn nested<D: 'static>(
        &mut self,
        place: Place<C, D>,
        table: &'static Table<D>,
        names: &[&'static str],
    ) -> &mut Self {
        for name in names {
            let inner = table
                .entries
                .iter()
                .find(|e| e.name() == *name)
                .unwrap_or_else(|| panic!("the nested table has no setting `{name}`"));
            self.entries.push(Box::new(Nested {
                inner: inner.as_ref(),
                get: place.get,
                get_mut: place.get_mut,
            }));
        }
        self
    }

    /// A key that files may hold and that is read no further: a warning names it and `reason`.
    pub fn ignore(
        &mut self,
        section: &'static str,
        name: &'static str,
        reason: &'static str,
    ) -> &mut Self {
        self.ignored.push(Ignored {
            key: Key { section, name },
            reason: Some(reason),
            check: None,
        });
        self
    }

    /// A key that files may hold and that needs nothing done: its text is checked with `codec`
    /// and then dropped, without a warning (nvdsanalytics' `obj-cnt-win-in-ms`, which
    /// DeepStream's sample files carry, and whose meaning the element has by design).
    pub fn accept(
        &mut self,
        section: &'static str,
        name: &'static str,
        codec: impl Codec,
    ) -> &mut Self {
        self.ignored.push(Ignored {
            key: Key { section, name },
            reason: None,
            check: Some(Box::new(move |text, dir| {
                codec.from_text(text, dir).map(drop)
            })),
        });
        self
    }

    /// The names of the settings that are properties, in table order.
    pub fn property_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries
            .iter()
            .filter(|e| e.is_property())
            .map(|e| e.name())
    }

    fn property(&self, name: &str) -> Option<&dyn Entry<C>> {
        self.entries
            .iter()
            .find(|e| e.is_property() && e.name() == name)
            .map(|e| e.as_ref())
    }

    /// The sections this table reads.
    fn sections(&self) -> BTreeSet<&'static str> {
        self.entries
            .iter()
            .flat_map(|e| e.keys(self.section))
            .chain(self.ignored.iter().map(|i| i.key))
            .map(|k| k.section)
            .collect()
    }

    /// Reads the entries of `section` of `ini` as if they were in `[as_section]` (a section of
    /// a family, such as `[class-attrs-3]` read with the keys every class section has). Unknown
    /// and ignored keys add a warning naming the file, line and key.
    pub fn read_section(
        &self,
        ini: &IniFile,
        section: &Section,
        as_section: &'static str,
        into: &mut C,
        warnings: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        self.read_entries(ini, section, as_section, into, warnings, |_| {})
    }

    /// [`Table::read_section`] into `props`, marking each setting the section gives as set: a
    /// section that overrides another key by key (`[class-attrs-3]` over `[class-attrs-all]`)
    /// is then applied with [`Table::resolve`].
    pub fn read_section_as_set(
        &self,
        ini: &IniFile,
        section: &Section,
        as_section: &'static str,
        props: &mut Props<C>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let mut set = Vec::new();
        self.read_entries(
            ini,
            section,
            as_section,
            &mut props.values,
            warnings,
            |name| set.push(name),
        )?;
        props.set.extend(set);
        Ok(())
    }

    fn read_entries(
        &self,
        ini: &IniFile,
        section: &Section,
        as_section: &'static str,
        into: &mut C,
        warnings: &mut Vec<String>,
        mut read: impl FnMut(&'static str),
    ) -> Result<(), ConfigError> {
        for entry in &section.entries {
            let place = format!("{}:{}", ini.path.display(), entry.line);
            if let Some(setting) = self.find_key(as_section, &entry.key) {
                setting
                    .read(&entry.value, ini.base_dir(), Source::File, into)
                    .map_err(|m| ini.error(entry, m))?;
                read(setting.name());
            } else if let Some(ignored) = self
                .ignored
                .iter()
                .find(|i| i.key.section == as_section && i.key.name == entry.key)
            {
                if let Some(check) = &ignored.check {
                    check(&entry.value, ini.base_dir()).map_err(|m| ini.error(entry, m))?;
                }
                if let Some(reason) = ignored.reason {
                    warnings.push(format!(
                        "{place}: key `{}`{} is not supported and was ignored: {reason}",
                        entry.key,
                        in_section(&section.name)
                    ));
                }
            } else {
                warnings.push(format!(
                    "{place}: unknown key `{}`{} ignored",
                    entry.key,
                    in_section(&section.name)
                ));
            }
        }
        Ok(())
    }

    fn find_key(&self, section: &str, name: &str) -> Option<&dyn Entry<C>> {
        self.entries
            .iter()
            .find(|e| {
                e.keys(self.section)
                    .iter()
                    .any(|k| k.section == section && k.name == name)
            })
            .map(|e| e.as_ref())
    }

    /// Reads a configuration file into `into` (the defaults, or what the file is read over).
    /// Sections the table has no key in go to `other`, which reads them and returns `true`, or
    /// returns `false` for a section it does not know either (a warning). Returns the warnings.
    pub fn read_ini(
        &self,
        ini: &IniFile,
        into: &mut C,
        mut other: impl FnMut(&Section, &mut C, &mut Vec<String>) -> Result<bool, ConfigError>,
    ) -> Result<Vec<String>, ConfigError> {
        let own = self.sections();
        let mut warnings = Vec::new();
        for section in &ini.sections {
            if let Some(&name) = own.get(section.name.as_str()) {
                self.read_section(ini, section, name, into, &mut warnings)?;
            } else if !other(section, into, &mut warnings)? {
                warnings.push(format!(
                    "{}:{}: unknown section [{}] ignored",
                    ini.path.display(),
                    section.line,
                    section.name
                ));
            }
        }
        Ok(warnings)
    }

    /// The configuration `file` (read from a file, or the defaults) with every property set on
    /// the element applied over it; the first refused property value is an error naming it.
    pub fn resolve(&self, mut file: C, props: &Props<C>) -> Result<C, String> {
        if let Some((name, error)) = props.errors.iter().next() {
            return Err(format!("property `{name}`: {error}"));
        }
        for entry in &self.entries {
            if props.set.contains(entry.name()) {
                entry.copy(&props.values, &mut file);
            }
        }
        Ok(file)
    }

    /// Sets the property `name` from its text, as `gst-launch-1.0` or a configuration would
    /// give it (a path is taken as given): for programs that hold an element's settings
    /// without GStreamer. `None` when the table has no such property; a refused value leaves
    /// the setting as it was.
    pub fn set_text(
        &self,
        props: &mut Props<C>,
        name: &str,
        text: &str,
    ) -> Option<Result<(), String>> {
        let entry = self.property(name)?;
        let result = entry.read(text, Path::new(""), Source::Property, &mut props.values);
        if result.is_ok() {
            props.set.insert(entry.name());
            props.errors.remove(entry.name());
            props.texts.remove(entry.name());
        }
        Some(result)
    }

    /// Checks the table against itself: names and keys unique, every sample value of every
    /// setting written as a file's text and as a property and read back the same, values
    /// outside a property's range refused by files too, and resolving one property changes that
    /// setting and no other. Each element's unit tests call it with its defaults.
    pub fn check(&self, defaults: &C) -> Result<(), String>
    where
        C: Clone,
    {
        let mut names = BTreeSet::new();
        let mut keys = BTreeMap::new();
        for entry in &self.entries {
            let name = entry.name();
            if !is_valid_name(name) {
                return Err(format!("`{name}` is not a valid property name"));
            }
            if !names.insert(name) {
                return Err(format!("two settings are named `{name}`"));
            }
            for key in entry.keys(self.section) {
                if let Some(other) = keys.insert(key, name) {
                    return Err(format!(
                        "the key `{}` in [{}] is both `{other}` and `{name}`",
                        key.name, key.section
                    ));
                }
            }
            entry.self_check(defaults)?;
        }
        for Ignored { key, .. } in &self.ignored {
            if let Some(name) = keys.get(key) {
                return Err(format!(
                    "the key `{}` in [{}] is ignored and also `{name}`",
                    key.name, key.section
                ));
            }
        }
        let dir = Path::new("/configuration/folder");
        for entry in &self.entries {
            for text in entry.sample_texts(defaults) {
                let mut values = defaults.clone();
                entry
                    .read(&text, dir, Source::Property, &mut values)
                    .map_err(|e| format!("{}: `{text}`: {e}", entry.name()))?;
                let mut props = Props::new(values);
                props.set.insert(entry.name());
                let resolved = self.resolve(defaults.clone(), &props)?;
                for other in &self.entries {
                    let expected = if other.name() == entry.name() {
                        other.render(&props.values)
                    } else {
                        other.render(defaults)
                    };
                    if other.render(&resolved) != expected {
                        return Err(format!(
                            "setting `{}` to `{text}` changed `{}`",
                            entry.name(),
                            other.name()
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(feature = "gst")]
impl<C: 'static> Table<C> {
    /// The `GParamSpec`s of the settings that are properties, with defaults from `defaults`.
    pub fn param_specs(&self, defaults: &C) -> Vec<glib::ParamSpec> {
        use glib::prelude::ParamSpecBuilderExt;
        use gst::prelude::GstParamSpecBuilderExt;
        let file = self.file_blurb.map(|blurb| {
            glib::ParamSpecString::builder(FILE_PROPERTY)
                .nick("Config file")
                .blurb(blurb)
                .mutable_ready()
                .build()
        });
        file.into_iter()
            .chain(
                self.entries
                    .iter()
                    .filter(|e| e.is_property())
                    .map(|e| e.param_spec(defaults)),
            )
            .collect()
    }

    /// Sets the property `name`, or returns `None` when the table has no such property. A
    /// value that does not parse is refused: a setting read at start keeps the text and fails
    /// [`Table::resolve`]; one that may change while PLAYING keeps its previous value. Either
    /// way the caller gets the reason to log or post.
    pub fn set_property(
        &self,
        props: &mut Props<C>,
        name: &str,
        value: &glib::Value,
    ) -> Option<Result<(), String>> {
        if self.is_file_property(name) {
            let path = value.get::<Option<String>>().map_err(|e| e.to_string());
            return Some(path.map(|p| props.set_file(p.map(PathBuf::from))));
        }
        let entry = self.property(name)?;
        let name = entry.name();
        let result = entry.set_value(value, &mut props.values);
        if value.type_() == glib::Type::STRING {
            props
                .texts
                .insert(name, value.get::<Option<String>>().expect("a string"));
        }
        match (&result, entry.change()) {
            (Ok(()), _) => {
                props.errors.remove(name);
                props.set.insert(name);
            }
            (Err(e), Change::Ready) => {
                props.errors.insert(name, e.clone());
                props.set.insert(name);
            }
            (Err(_), Change::Playing) => {
                if props.set.contains(name) {
                    let text = entry.render(&props.values);
                    props.texts.insert(name, (!text.is_empty()).then_some(text));
                } else {
                    props.texts.remove(name);
                }
            }
        }
        Some(result)
    }

    /// [`Table::set_property`] as an element's `set_property` uses it: a refused value is
    /// logged on `element`, saying what follows (the next start fails naming it, or a setting
    /// that may change while PLAYING keeps its previous value). Returns whether the value was
    /// taken; `false` too for a property the table does not have (logged as a bug).
    pub fn set_on(
        &self,
        element: &gst::Element,
        props: &mut Props<C>,
        pspec: &glib::ParamSpec,
        value: &glib::Value,
    ) -> bool {
        let name = pspec.name();
        match self.set_property(props, name, value) {
            Some(Ok(())) => true,
            Some(Err(e)) => {
                let then = match self.property(name).map(|entry| entry.change()) {
                    Some(Change::Playing) => "the previous value stays",
                    _ => "the element will not start with it",
                };
                gst::error!(CAT, obj = element, "{name}: {e}; {then}");
                false
            }
            None => {
                gst::error!(
                    CAT,
                    obj = element,
                    "{name} is not a setting of this element"
                );
                false
            }
        }
    }

    /// The property `name`'s value, or `None` when the table has no such property.
    pub fn property_value(&self, props: &Props<C>, name: &str) -> Option<glib::Value> {
        if self.is_file_property(name) {
            let path = props.file().map(|p| p.display().to_string());
            return Some(glib::prelude::ToValue::to_value(&path));
        }
        let entry = self.property(name)?;
        Some(match props.texts.get(entry.name()) {
            Some(text) => glib::prelude::ToValue::to_value(text),
            None => entry.value(&props.values),
        })
    }

    /// The settings whose property default differs between `base` and `defaults`: what a
    /// subclass with other defaults installs again on its own class.
    pub fn param_specs_differing(&self, base: &C, defaults: &C) -> Vec<glib::ParamSpec> {
        self.entries
            .iter()
            .filter(|e| e.is_property() && e.render(base) != e.render(defaults))
            .map(|e| e.param_spec(defaults))
            .collect()
    }
}

/// Whether the property `spec` takes `value` as it is: validating a copy changes nothing.
/// (`ParamSpec::value_is_valid` needs the bindings' `v2_74` feature, which no crate enables.)
#[cfg(feature = "gst")]
fn takes(spec: &glib::ParamSpec, value: &glib::Value) -> bool {
    use glib::translate::{ToGlibPtr, ToGlibPtrMut};
    if !value.type_().is_a(spec.value_type()) {
        return false;
    }
    let mut copy = value.clone();
    // SAFETY: a valid spec and a valid value of a type the spec applies to (checked above).
    let changed = unsafe {
        glib::gobject_ffi::g_param_value_validate(spec.to_glib_none().0, copy.to_glib_none_mut().0)
    };
    changed == 0
}

/// ` in [name]`, or nothing for the sectionless top level of a file.
fn in_section(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" in [{name}]")
    }
}

/// GLib's rule for property names: a letter, then letters, digits, `-` or `_`.
fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests;
