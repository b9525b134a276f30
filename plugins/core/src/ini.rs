// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reader for DeepStream-style INI configuration files (GKeyFile syntax).
//!
//! `[section]` headers, `key=value` lines, `#` or `;` comments on their own line, lists separated
//! by `;`. Every entry remembers its line so that errors can name file, line and key.

use std::path::{Path, PathBuf};
use std::str::FromStr;

/// An error in a configuration file, naming where it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub name: String,
    pub line: usize,
    pub entries: Vec<Entry>,
}

/// A parsed INI file.
#[derive(Debug, Clone, PartialEq)]
pub struct IniFile {
    pub path: PathBuf,
    pub sections: Vec<Section>,
}

impl IniFile {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = crate::files::read_text(path).map_err(|e| ConfigError {
            path: path.to_owned(),
            line: 0,
            message: format!("cannot read configuration file: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text`, attributing errors to `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let mut sections: Vec<Section> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(ConfigError {
                        path: path.to_owned(),
                        line,
                        message: format!("malformed section header `{trimmed}`"),
                    });
                };
                sections.push(Section {
                    name: name.trim().to_owned(),
                    line,
                    entries: Vec::new(),
                });
                continue;
            }
            let Some((key, value)) = trimmed.split_once('=') else {
                return Err(ConfigError {
                    path: path.to_owned(),
                    line,
                    message: format!("expected `key=value`, found `{trimmed}`"),
                });
            };
            let Some(section) = sections.last_mut() else {
                return Err(ConfigError {
                    path: path.to_owned(),
                    line,
                    message: format!("key `{}` appears before any [section]", key.trim()),
                });
            };
            section.entries.push(Entry {
                key: key.trim().to_owned(),
                value: value.trim().to_owned(),
                line,
            });
        }
        Ok(Self {
            path: path.to_owned(),
            sections,
        })
    }

    /// Directory that relative paths in the file are resolved against.
    pub fn base_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Resolves a path value relative to the file.
    pub fn resolve_path(&self, value: &str) -> PathBuf {
        let p = Path::new(value);
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.base_dir().join(p)
        }
    }

    /// An error about `entry` of this file.
    pub fn error(&self, entry: &Entry, message: impl std::fmt::Display) -> ConfigError {
        ConfigError {
            path: self.path.clone(),
            line: entry.line,
            message: format!("key `{}`: {message}", entry.key),
        }
    }

    /// Parses an entry's value as `T`, or fails naming file, line, key and value.
    pub fn value<T: FromStr>(&self, entry: &Entry) -> Result<T, ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        entry.value.parse::<T>().map_err(|e| {
            self.error(
                entry,
                format_args!(
                    "cannot parse `{}` as {}: {e}",
                    entry.value,
                    short_type_name::<T>()
                ),
            )
        })
    }

    /// Parses a boolean the way GKeyFile does (`1`/`0`, `true`/`false`).
    pub fn bool_value(&self, entry: &Entry) -> Result<bool, ConfigError> {
        match entry.value.to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            other => Err(self.error(
                entry,
                format_args!("expected 1, 0, true or false, found `{other}`"),
            )),
        }
    }

    /// Parses a `;`-separated list value (see [`parse_list`]).
    pub fn list_value<T: FromStr>(&self, entry: &Entry) -> Result<Vec<T>, ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        parse_list(&entry.value).map_err(|m| self.error(entry, m))
    }
}

/// Parses a `;`-separated list, the list syntax of configuration files and of list-valued
/// element properties. Blank items (a trailing `;`) are skipped.
pub fn parse_list<T: FromStr>(text: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            item.parse::<T>().map_err(|e| {
                format!(
                    "cannot parse list item `{item}` as {}: {e}",
                    short_type_name::<T>()
                )
            })
        })
        .collect()
}

fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# comment
[property]
gie-unique-id=1
offsets=1.5;2;3;
maintain-aspect-ratio = true

; another comment
[class-attrs-all]
pre-cluster-threshold=0.4
";

    #[test]
    fn parses_sections_entries_and_lines() {
        let ini = IniFile::parse(Path::new("/cfg/model.txt"), TEXT).unwrap();
        assert_eq!(ini.sections.len(), 2);
        assert_eq!(ini.sections[0].name, "property");
        let e = &ini.sections[0].entries[1];
        assert_eq!(
            (e.key.as_str(), e.value.as_str(), e.line),
            ("offsets", "1.5;2;3;", 4)
        );
        assert_eq!(ini.list_value::<f32>(e).unwrap(), vec![1.5, 2.0, 3.0]);
        assert!(ini.bool_value(&ini.sections[0].entries[2]).unwrap());
        assert_eq!(ini.sections[1].entries[0].line, 9);
        assert_eq!(ini.resolve_path("m.onnx"), PathBuf::from("/cfg/m.onnx"));
        assert_eq!(
            ini.resolve_path("/abs/m.onnx"),
            PathBuf::from("/abs/m.onnx")
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let ini = IniFile::parse(Path::new("a.txt"), "[property]\nbatch-size=four\n").unwrap();
        let err = ini.value::<u32>(&ini.sections[0].entries[0]).unwrap_err();
        assert_eq!(err.line, 2);
        let text = err.to_string();
        assert!(text.starts_with("a.txt:2: key `batch-size`"), "{text}");
        assert!(text.contains("four"), "{text}");

        let err = IniFile::parse(Path::new("b.txt"), "[property]\nno equals sign\n").unwrap_err();
        assert_eq!((err.line, err.path.as_path()), (2, Path::new("b.txt")));
        let err = IniFile::parse(Path::new("c.txt"), "key=1\n").unwrap_err();
        assert!(err.message.contains("before any [section]"));
        let err = IniFile::parse(Path::new("d.txt"), "[property\n").unwrap_err();
        assert!(err.message.contains("malformed section"));
    }
}
