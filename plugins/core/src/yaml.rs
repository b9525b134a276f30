// SPDX-License-Identifier: MIT OR Apache-2.0
//! YAML configuration files read as sections of keys, the shape of DeepStream's YAML forms
//! (deepstream-app's `.yml` files, NvMultiObjectTracker's low-level configurations): each
//! top-level key whose value is a mapping is a section, its keys are entries. Values come out as
//! the text of an INI value, so one set of readers serves both forms:
//!
//! - scalars as written (`0.5`, `true`, `file:///a.mp4`);
//! - sequences of scalars joined by `;` (`[1, 2]` and block lists alike);
//! - deeper mappings flattened with dots (`ObjectModelProjection: {a: {b: 1}}` gives the entry
//!   `a.b` of the section `ObjectModelProjection`), sequences of mappings by index (`a.0.b`).
//!
//! Top-level scalars land in a section with an empty name. Every entry keeps the line where its
//! key is written. Aliases are refused (nothing DeepStream writes uses them, and expanding them
//! is how small files become large), as are documents nested deeper than [`MAX_DEPTH`] levels.
//! The YAML itself is read by yaml-rust2's event parser, which keeps its own stack instead of
//! recursing.

use std::path::Path;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use crate::ini::{ConfigError, Entry, IniFile, Section};

/// The deepest nesting of mappings and sequences accepted.
pub const MAX_DEPTH: usize = 32;

/// Reads and parses the YAML file `path` (a regular, bounded text file) into sections.
pub fn load(path: &Path) -> Result<IniFile, ConfigError> {
    let text = crate::files::read_text(path).map_err(|e| ConfigError {
        path: path.to_owned(),
        line: 0,
        message: format!("cannot read configuration file: {e}"),
    })?;
    parse(path, &text)
}

/// Parses the YAML `text` into sections, attributing errors to `path`.
pub fn parse(path: &Path, text: &str) -> Result<IniFile, ConfigError> {
    let text = without_opencv_directive(text);
    let mut reader = Reader::default();
    let parsed = Parser::new_from_str(&text).load(&mut reader, false);
    let error = |line: usize, message: String| ConfigError {
        path: path.to_owned(),
        line,
        message,
    };
    if let Some((line, message)) = reader.error {
        return Err(error(line, message));
    }
    if let Err(e) = parsed {
        return Err(error(
            e.marker().line(),
            format!("malformed YAML: {}", e.info()),
        ));
    }
    Ok(IniFile {
        path: path.to_owned(),
        sections: reader.sections,
    })
}

/// `text` with OpenCV's `%YAML:1.0` line (which NvMultiObjectTracker's configurations carry
/// before their sections, as `cv::FileStorage` writes it) turned into a comment: YAML spells the
/// directive `%YAML 1.0`, and a YAML parser refuses the colon. The line stays, so line numbers
/// hold. Only a directive before the first content line counts, as in YAML.
fn without_opencv_directive(text: &str) -> std::borrow::Cow<'_, str> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if line.starts_with("%YAML:") {
            return format!("{}#{}", &text[..offset], &text[offset + 1..]).into();
        }
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            break;
        }
        offset += line.len();
    }
    text.into()
}

/// One open mapping or sequence, and where its values go.
#[derive(Debug)]
enum Frame {
    /// A mapping whose keys are named `prefix` + key; `key` is the key read and waiting for its
    /// value (with its line).
    Mapping {
        prefix: String,
        key: Option<(String, usize)>,
    },
    /// A sequence of scalars joined by `;` into the entry `name` (line `line`); `index` counts
    /// its items, which are named `name.index` when they are mappings.
    Sequence {
        name: String,
        line: usize,
        index: usize,
        scalars: Vec<String>,
        nested: bool,
    },
}

/// Builds sections from the parser's events; the first error stops it.
#[derive(Debug, Default)]
struct Reader {
    sections: Vec<Section>,
    stack: Vec<Frame>,
    error: Option<(usize, String)>,
}

impl Reader {
    fn fail(&mut self, line: usize, message: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some((line, message.into()));
        }
    }

    /// The section for a top-level key, created at `line` when new (a repeated section name
    /// adds to the first, as a key file's repeated group does).
    fn section(&mut self, name: &str, line: usize) -> &mut Section {
        let index = match self.sections.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sections.push(Section {
                    name: name.to_owned(),
                    line,
                    entries: Vec::new(),
                });
                self.sections.len() - 1
            }
        };
        &mut self.sections[index]
    }

    /// Adds `key = value` (a flattened key) to the current section.
    fn entry(&mut self, key: String, value: String, line: usize) {
        // The first component of a flattened key is the section; the rest the entry's key.
        let (section, key) = match key.split_once('\u{0}') {
            Some((section, rest)) => (section.to_owned(), rest.replace('\u{0}', ".")),
            None => (String::new(), key),
        };
        self.section(&section, line)
            .entries
            .push(Entry { key, value, line });
    }

    /// The name that a value at the top of the stack gets, with its line, or `None` when the
    /// value is a mapping key.
    fn value_name(&mut self) -> Option<(String, usize)> {
        match self.stack.last_mut()? {
            Frame::Mapping { prefix, key } => {
                let (k, line) = key.take()?;
                Some((format!("{prefix}{k}"), line))
            }
            Frame::Sequence {
                name, line, index, ..
            } => {
                let item = format!("{name}\u{0}{index}");
                *index += 1;
                Some((item, *line))
            }
        }
    }

    fn open(&mut self, mark: Marker, mapping: bool) {
        if self.stack.len() >= MAX_DEPTH {
            self.fail(
                mark.line(),
                format!("nested deeper than {MAX_DEPTH} levels"),
            );
            return;
        }
        if self.stack.is_empty() {
            if mapping {
                self.stack.push(Frame::Mapping {
                    prefix: String::new(),
                    key: None,
                });
            } else {
                self.fail(
                    mark.line(),
                    "expected a mapping of sections at the top level",
                );
            }
            return;
        }
        let Some((name, line)) = self.value_name() else {
            self.fail(mark.line(), "a mapping or list used as a key");
            return;
        };
        if let Some(Frame::Sequence { nested, .. }) = self.stack.last_mut() {
            *nested = true;
        }
        // A top-level key opening a mapping is a section: make it exist even when empty.
        if self.stack.len() == 1 && mapping {
            self.section(&name, line);
        }
        self.stack.push(if mapping {
            Frame::Mapping {
                prefix: format!("{name}\u{0}"),
                key: None,
            }
        } else {
            Frame::Sequence {
                name,
                line,
                index: 0,
                scalars: Vec::new(),
                nested: false,
            }
        });
    }

    fn close(&mut self) {
        if let Some(Frame::Sequence {
            name,
            line,
            scalars,
            nested,
            ..
        }) = self.stack.pop()
            && !nested
        {
            self.entry(name, scalars.join(";"), line);
        }
    }

    fn scalar(&mut self, value: String, mark: Marker) {
        match self.stack.last_mut() {
            None => {} // a document that is one scalar (or empty): no sections
            Some(Frame::Mapping { key, .. }) if key.is_none() => {
                *key = Some((value, mark.line()));
            }
            Some(Frame::Sequence { scalars, .. }) => scalars.push(value),
            Some(Frame::Mapping { .. }) => {
                if let Some((name, line)) = self.value_name() {
                    self.entry(name, value, line);
                }
            }
        }
    }
}

impl MarkedEventReceiver for Reader {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::MappingStart(..) => self.open(mark, true),
            Event::SequenceStart(..) => self.open(mark, false),
            Event::MappingEnd | Event::SequenceEnd => self.close(),
            Event::Scalar(value, ..) => self.scalar(value, mark),
            Event::Alias(_) => self.fail(mark.line(), "YAML aliases are not supported"),
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (key, value, line) of one entry.
    type Row = (String, String, usize);

    fn sections(text: &str) -> Vec<(String, Vec<Row>)> {
        parse(Path::new("t.yml"), text)
            .unwrap()
            .sections
            .into_iter()
            .map(|s| {
                (
                    s.name,
                    s.entries
                        .into_iter()
                        .map(|e| (e.key, e.value, e.line))
                        .collect(),
                )
            })
            .collect()
    }

    fn e(key: &str, value: &str, line: usize) -> Row {
        (key.to_owned(), value.to_owned(), line)
    }

    #[test]
    fn sections_of_keys_with_lines() {
        let got = sections(
            "application:\n  enable-perf-measurement: 1\n  perf-measurement-interval-sec: 5\n\
             \nsource0:\n  uri: file:///a.mp4\n  type: 3\nsource-list:\n  list: a;b\n",
        );
        assert_eq!(
            got,
            vec![
                (
                    "application".into(),
                    vec![
                        e("enable-perf-measurement", "1", 2),
                        e("perf-measurement-interval-sec", "5", 3)
                    ]
                ),
                (
                    "source0".into(),
                    vec![e("uri", "file:///a.mp4", 6), e("type", "3", 7)]
                ),
                ("source-list".into(), vec![e("list", "a;b", 9)]),
            ]
        );
    }

    #[test]
    fn lists_nesting_and_top_level_scalars() {
        let got = sections(
            "version: 2\nBaseConfig:\n  minDetectorConfidence: 0.2\n  ids: [1, 2, 3]\n  \
             block:\n    - 4\n    - 5\n  deep:\n    a: {b: 1}\n  rows:\n    - {x: 1}\n    - {x: 2}\nEmpty: {}\n",
        );
        assert_eq!(
            got,
            vec![
                (String::new(), vec![e("version", "2", 1)]),
                (
                    "BaseConfig".into(),
                    vec![
                        e("minDetectorConfidence", "0.2", 3),
                        e("ids", "1;2;3", 4),
                        e("block", "4;5", 5),
                        e("deep.a.b", "1", 9),
                        e("rows.0.x", "1", 11),
                        e("rows.1.x", "2", 12),
                    ]
                ),
                ("Empty".into(), vec![]),
            ]
        );
    }

    #[test]
    fn empty_documents_have_no_sections() {
        assert!(sections("").is_empty());
        assert!(sections("# only a comment\n").is_empty());
        assert!(sections("just a scalar").is_empty());
    }

    #[test]
    fn opencv_version_line_is_read_as_a_comment() {
        let got = sections("%YAML:1.0\n\nBaseConfig:\n  minDetectorConfidence: 0.2\n");
        assert_eq!(
            got,
            vec![(
                "BaseConfig".into(),
                vec![e("minDetectorConfidence", "0.2", 4)]
            )]
        );
        // After a leading comment too; the standard directive still works.
        let got = sections("# tracker\n%YAML:1.0\nA:\n  b: 1\n");
        assert_eq!(got, vec![("A".into(), vec![e("b", "1", 4)])]);
        let got = sections("%YAML 1.2\n---\nA:\n  b: 1\n");
        assert_eq!(got, vec![("A".into(), vec![e("b", "1", 4)])]);
    }

    #[test]
    fn errors_name_the_line() {
        let err = |text: &str| parse(Path::new("t.yml"), text).unwrap_err();
        let e = err("a:\n  b: [1, 2\n");
        assert!(e.message.starts_with("malformed YAML"), "{e}");
        let e = err("a: &x {b: 1}\nc: *x\n");
        assert_eq!(
            (e.line, e.message.as_str()),
            (2, "YAML aliases are not supported")
        );
        let e = err("- a\n- b\n");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("mapping of sections"), "{e}");
        let deep = format!("a: {}1{}\n", "[".repeat(40), "]".repeat(40));
        let e = err(&deep);
        assert!(e.message.contains("deeper than 32"), "{e}");
        assert!(e.to_string().starts_with("t.yml:1:"), "{e}");
    }
}
