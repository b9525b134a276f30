// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstracker`'s settings: the element's properties and the keys of its configuration file
//! (`config-file-path`), declared once in [`SETTINGS`].
//!
//! The file is TOML with the property names as keys (`algorithm` for `tracker-algorithm`):
//!
//! ```toml
//! algorithm = "bytetrack"          # iou | sort | bytetrack
//! probation-age = 2                # consecutive matches before a target is reported
//! max-shadow-age = 30              # frames a lost target is predicted before it ends
//! min-detector-confidence = 0.1    # detections below are ignored
//! high-confidence = 0.5            # ByteTrack: first-stage detections, and new targets
//! min-tracker-confidence = 0.2     # shadow targets below are not reported
//! iou-threshold = 0.2              # minimum overlap to associate
//! operate-on-class-ids = [0, 2]    # classes to track (empty or absent: all)
//! report-shadow-tracks = true
//! report-terminated-tracks = true  # list ended ids in each frame's terminated_ids
//! appearance-weight = 0.0          # weight of embedding cosine distance
//! embedding-attribute = "embedding" # object attribute holding the embedding
//! ```
//!
//! Every key is optional and takes what the property takes (same ranges); unknown keys give a
//! warning naming them. Properties set on the element override the file.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use ferrostream_core::field;
use ferrostream_core::ini::{Entry, IniFile, Section};
use ferrostream_core::settings::{Bool, Enum, Float, List, Table, Text, UInt, setting};

use crate::tracker::{Algorithm, TrackerConfig};

/// Every setting of `rstracker`: its properties and the file's keys.
pub static SETTINGS: LazyLock<Table<TrackerConfig>> = LazyLock::new(|| {
    let mut t: Table<TrackerConfig> = Table::new("");
    t.file_property(
        "TOML file with the tracker settings (keys named like the properties); properties set \
         on the element override it",
    );
    t.add(
        setting::<TrackerConfig, _>(
            "tracker-algorithm",
            field!(algorithm),
            Enum::<Algorithm>::new(),
        )
        .key("", "algorithm")
        .nick("Algorithm")
        .blurb("How detections are associated with targets (file key: algorithm)"),
    )
    .add(
        setting::<TrackerConfig, _>("probation-age", field!(probation_age), UInt::at_least(1))
            .nick("Probation age")
            .blurb("Consecutive matches before a new target is reported"),
    )
    .add(
        setting::<TrackerConfig, _>("max-shadow-age", field!(max_shadow_age), UInt::any())
            .nick("Max shadow age")
            .blurb("Frames a lost target is predicted before it is terminated"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "min-detector-confidence",
            field!(min_detector_confidence),
            Float::unit(),
        )
        .nick("Min detector confidence")
        .blurb("Detections below this confidence are ignored"),
    )
    .add(
        setting::<TrackerConfig, _>("high-confidence", field!(high_confidence), Float::unit())
            .nick("High confidence")
            .blurb("ByteTrack: detections above this are associated first and start targets"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "min-tracker-confidence",
            field!(min_tracker_confidence),
            Float::unit(),
        )
        .nick("Min tracker confidence")
        .blurb("Shadow targets below this confidence are not reported"),
    )
    .add(
        setting::<TrackerConfig, _>("iou-threshold", field!(iou_threshold), Float::unit())
            .nick("IoU threshold")
            .blurb("Minimum overlap between a target and a detection to associate them"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "operate-on-class-ids",
            field!(operate_on_class_ids),
            List::<i32>::new(),
        )
        .nick("Class ids")
        .blurb("Classes to track, ';'-separated (empty: all; a list of numbers in the file)"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "appearance-weight",
            field!(appearance_weight),
            Float::unit(),
        )
        .nick("Appearance weight")
        .blurb(
            "Weight of the cosine distance of object embeddings (attribute \
                 embedding-attribute) against overlap; 0 uses overlap only",
        ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "embedding-attribute",
            field!(embedding_attribute),
            Text::not_empty(),
        )
        .nick("Embedding attribute")
        .blurb(
            "Object attribute holding the appearance embedding (a list of floats), e.g. \
             tensor:<gie-unique-id>:<output> from rstrtinfer output-tensor-meta",
        ),
    )
    .add(
        setting::<TrackerConfig, _>("report-terminated-tracks", field!(report_terminated), Bool)
            .nick("Report terminated")
            .blurb("List the ids of targets that ended in each frame's terminated_ids"),
    )
    .add(
        setting::<TrackerConfig, _>("report-shadow-tracks", field!(report_shadow), Bool)
            .nick("Report shadows")
            .blurb("Report lost targets, predicted by their motion, until they terminate"),
    );
    t
});

/// Reads `path` over the defaults. Returns the configuration and the warnings to post.
pub fn load(path: &Path) -> Result<(TrackerConfig, Vec<String>), String> {
    let text = ferrostream_core::files::read_text(path)
        .map_err(|e| format!("cannot read tracker configuration: {e}"))?;
    parse(path, &text)
}

/// Reads the TOML `text` of the file `path` over the defaults.
pub fn parse(path: &Path, text: &str) -> Result<(TrackerConfig, Vec<String>), String> {
    let ini = toml_as_ini(path, text)?;
    let mut config = TrackerConfig::default();
    let warnings = SETTINGS
        .read_ini(&ini, &mut config, |_, _, _| Ok(false))
        .map_err(|e| e.to_string())?;
    Ok((config, warnings))
}

/// The top level of a TOML file as one section without a name: numbers and booleans as their
/// text, strings as they are, arrays as `;`-separated lists. Each key keeps its line.
fn toml_as_ini(path: &Path, text: &str) -> Result<IniFile, String> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
    let entries = table
        .into_iter()
        .map(|(key, value)| {
            let line = line_of_key(text, &key);
            let value = toml_text(&value)
                .map_err(|m| format!("{}:{line}: key `{key}`: {m}", path.display()))?;
            Ok(Entry { key, value, line })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(IniFile {
        path: PathBuf::from(path),
        sections: vec![Section {
            name: String::new(),
            line: 0,
            entries,
        }],
    })
}

fn toml_text(value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Array(items) => {
            let items = items
                .iter()
                .map(|item| match item {
                    toml::Value::Array(_) | toml::Value::Table(_) => {
                        Err("expected a list of values, found a nested list or table".to_owned())
                    }
                    scalar => toml_text(scalar),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(items.join(";"))
        }
        toml::Value::Table(_) | toml::Value::Datetime(_) => {
            Err(format!("expected a value, found {}", value.type_str()))
        }
    }
}

/// The line (from 1) where `key = …` is written, or 0 when it cannot be told (a quoted key).
fn line_of_key(text: &str, key: &str) -> usize {
    text.lines()
        .position(|line| {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_table_checks_out() {
        SETTINGS.check(&TrackerConfig::default()).unwrap();
    }

    #[test]
    fn reads_every_key_and_warns_on_unknown_ones() {
        let (c, warnings) = parse(
            Path::new("t.toml"),
            "algorithm = \"sort\"\nprobation-age = 4\nmax-shadow-age = 12\nmin-detector-confidence = 0.3\n\
             high-confidence = 0.6\nmin-tracker-confidence = 0.4\niou-threshold = 0.35\n\
             operate-on-class-ids = [0, 2]\nreport-shadow-tracks = false\nreport-terminated-tracks = false\n\
             appearance-weight = 0.5\nembedding-attribute = \"tensor:3:reid\"\nfrobnicate = 1\n",
        )
        .unwrap();
        assert_eq!(c.algorithm, Algorithm::Sort);
        assert_eq!((c.probation_age, c.max_shadow_age), (4, 12));
        assert_eq!(
            (
                c.min_detector_confidence,
                c.high_confidence,
                c.min_tracker_confidence
            ),
            (0.3, 0.6, 0.4)
        );
        assert_eq!((c.iou_threshold, c.appearance_weight), (0.35, 0.5));
        assert_eq!(c.operate_on_class_ids, vec![0, 2]);
        assert_eq!(c.embedding_attribute, "tensor:3:reid");
        assert!(!c.report_shadow && !c.report_terminated);
        assert_eq!(
            warnings,
            vec!["t.toml:13: unknown key `frobnicate` ignored".to_owned()]
        );
    }

    #[test]
    fn bad_values_name_the_file_line_and_key() {
        let e = parse(Path::new("t.toml"), "algorithm = \"kalman\"\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:1: key `algorithm`") && e.contains("kalman"),
            "{e}"
        );
        assert!(e.contains("iou (0), sort (1), bytetrack (2)"), "{e}");
        let e = parse(Path::new("t.toml"), "\niou-threshold = 1.5\n").unwrap_err();
        assert!(e.starts_with("t.toml:2: key `iou-threshold`"), "{e}");
        let e = parse(Path::new("t.toml"), "probation-age = \"two\"\n").unwrap_err();
        assert!(e.contains("t.toml") && e.contains("`probation-age`"), "{e}");
        let e = parse(Path::new("t.toml"), "probation-age = 0\n").unwrap_err();
        assert!(e.contains("expected at least 1, found 0"), "{e}");
        let e = parse(Path::new("t.toml"), "embedding-attribute = \"\"\n").unwrap_err();
        assert!(e.contains("must not be empty"), "{e}");
        let e = parse(Path::new("t.toml"), "operate-on-class-ids = [[1]]\n").unwrap_err();
        assert!(e.contains("nested list"), "{e}");
        let e = parse(Path::new("t.toml"), "iou-threshold = nan\n").unwrap_err();
        assert!(e.contains("finite"), "{e}");
    }
}
