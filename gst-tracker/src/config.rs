// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstracker`'s settings: the element's properties and the keys of its configuration file
//! (`config-file-path`), declared once in [`SETTINGS`].
//!
//! The file is TOML with the property names as keys (`algorithm` for `tracker-algorithm`):
//!
//! ```toml
//! algorithm = "bytetrack"          # iou | sort | bytetrack
//! probation-age = 2                # matches before a target is reported
//! early-termination-age = 1        # misses in a row that end a target on probation
//! max-shadow-age = 30              # frames a lost target is predicted before it ends
//! max-targets-per-stream = 0       # targets per source (0: no limit)
//! new-target-max-iou = 1.0         # an unmatched detection over a target starts none
//! min-detector-confidence = 0.1    # detections below are ignored
//! high-confidence = 0.5            # ByteTrack: first-stage detections, and new targets
//! min-tracker-confidence = 0.2     # shadow targets below are not reported
//! iou-threshold = 0.2              # minimum overlap to associate
//! low-confidence-iou-threshold = 0.5 # ByteTrack: minimum overlap for weak detections
//! iou-weight = 1.0                 # matching score = iou-weight * IoU
//! size-similarity-weight = 0.0     #   + size-similarity-weight * size similarity
//! min-size-similarity = 0.0        # minimum size similarity to associate
//! min-matching-score = 0.0         # minimum matching score to associate
//! association-matcher = "auto"     # auto | greedy | optimal
//! check-class-match = true         # associate the same class only
//! operate-on-class-ids = [0, 2]    # classes to track (empty or absent: all)
//! report-shadow-tracks = true
//! report-terminated-tracks = true  # list ended ids in each frame's terminated_ids
//! appearance-weight = 0.0          # weight of embedding cosine distance
//! embedding-attribute = "embedding" # object attribute holding the embedding
//! kalman-noise = "height-relative" # height-relative | absolute
//! noise-weight-position = 0.05     # height-relative: std of position / box height
//! noise-weight-velocity = 0.00625  # height-relative: std of velocity / box height
//! process-noise-var-location = 2.0 # absolute: variances in pixels²
//! process-noise-var-size = 1.0
//! process-noise-var-velocity = 0.1
//! measurement-noise-var = 4.0
//! ```
//!
//! Every key is optional and takes what the property takes (same ranges); unknown keys give a
//! warning naming them. Properties set on the element override the file.
//!
//! The file may also be an NvMultiObjectTracker configuration, the YAML that DeepStream's
//! `nvtracker` takes as `ll-config-file` (`config_tracker_NvDCF_perf.yml`, ...): a name ending
//! in `.yml` or `.yaml`, or a text that is no TOML and has one of its sections
//! (`BaseConfig:`, `TargetManagement:`, ...). [`crate::nvyaml`] says how its keys map onto the
//! settings above.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use ferrostream_core::field;
use ferrostream_core::ini::{Entry, IniFile, Section};
use ferrostream_core::settings::{Bool, Enum, Float, List, Table, Text, UInt, setting};

use crate::kalman::NoiseModel;
use crate::tracker::{Algorithm, Matcher, TrackerConfig};

/// Every setting of `rstracker`: its properties and the file's keys.
pub static SETTINGS: LazyLock<Table<TrackerConfig>> = LazyLock::new(|| {
    let mut t: Table<TrackerConfig> = Table::new("");
    t.file_property(
        "TOML file with the tracker settings (keys named like the properties), or a DeepStream \
         NvMultiObjectTracker YAML (nvtracker's ll-config-file); properties set on the element \
         override it",
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
            .blurb(
                "Matches before a new target is reported (in a row, unless \
                 early-termination-age lets it miss)",
            ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "early-termination-age",
            field!(early_termination_age),
            UInt::at_least(1),
        )
        .nick("Early termination age")
        .blurb("Consecutive misses that end a target still on probation (1: the first miss)"),
    )
    .add(
        setting::<TrackerConfig, _>("max-shadow-age", field!(max_shadow_age), UInt::any())
            .nick("Max shadow age")
            .blurb("Frames a lost target is predicted before it is terminated"),
    )
    .add(
        setting::<TrackerConfig, _>("max-targets-per-stream", field!(max_targets), UInt::any())
            .nick("Max targets per stream")
            .blurb(
                "Most targets of one source, lost and on-probation ones included; detections \
                 beyond it start none (0: no limit)",
            ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "new-target-max-iou",
            field!(new_target_max_iou),
            Float::unit(),
        )
        .nick("New target max IoU")
        .blurb(
            "An unmatched detection starts a target only if its overlap with every target is \
             at most this (1: always)",
        ),
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
            "low-confidence-iou-threshold",
            field!(low_confidence_iou_threshold),
            Float::unit(),
        )
        .nick("Low-confidence IoU threshold")
        .blurb("ByteTrack: minimum overlap for a low-confidence detection to continue a target"),
    )
    .add(
        setting::<TrackerConfig, _>("iou-weight", field!(iou_weight), Float::at_least(0.0))
            .nick("IoU weight")
            .blurb("Weight of the overlap in the matching score"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "size-similarity-weight",
            field!(size_weight),
            Float::at_least(0.0),
        )
        .nick("Size similarity weight")
        .blurb(
            "Weight of the size similarity (width ratio times height ratio) in the matching \
             score",
        ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "min-size-similarity",
            field!(min_size_similarity),
            Float::unit(),
        )
        .nick("Min size similarity")
        .blurb("Minimum size similarity between a target and a detection to associate them"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "min-matching-score",
            field!(min_matching_score),
            Float::at_least(0.0),
        )
        .nick("Min matching score")
        .blurb(
            "Minimum matching score (weighted overlap and size, blended with appearance) to \
             associate",
        ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "association-matcher",
            field!(matcher),
            Enum::<Matcher>::new(),
        )
        .nick("Association matcher")
        .blurb("How each association stage pairs targets with detections"),
    )
    .add(
        setting::<TrackerConfig, _>("check-class-match", field!(check_class_match), Bool)
            .nick("Check class match")
            .blurb("Associate only detections and targets of the same class"),
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
    )
    .add(
        setting::<TrackerConfig, _>(
            "kalman-noise",
            field!(kalman.model),
            Enum::<NoiseModel>::new(),
        )
        .nick("Kalman noise")
        .blurb(
            "How the Kalman filter's noise is given: proportional to the box height \
                 (noise-weight-*) or as fixed variances (process-noise-var-*, \
                 measurement-noise-var)",
        ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "noise-weight-position",
            field!(kalman.position_weight),
            Float::range(1e-6, 1.0),
        )
        .nick("Position noise weight")
        .blurb(
            "height-relative: standard deviation of position and size, of the motion and of a \
             detection, as a fraction of the box height",
        ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "noise-weight-velocity",
            field!(kalman.velocity_weight),
            Float::range(1e-6, 1.0),
        )
        .nick("Velocity noise weight")
        .blurb(
            "height-relative: standard deviation of the velocity, as a fraction of the box height",
        ),
    )
    .add(
        setting::<TrackerConfig, _>(
            "process-noise-var-location",
            field!(kalman.location_variance),
            Float::at_least(0.0),
        )
        .nick("Location process noise")
        .blurb("absolute: variance of the box centre's motion per frame, in pixels squared"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "process-noise-var-size",
            field!(kalman.size_variance),
            Float::at_least(0.0),
        )
        .nick("Size process noise")
        .blurb("absolute: variance of the box size's change per frame, in pixels squared"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "process-noise-var-velocity",
            field!(kalman.velocity_variance),
            Float::at_least(0.0),
        )
        .nick("Velocity process noise")
        .blurb("absolute: variance of the velocity's change per frame, in pixels squared"),
    )
    .add(
        setting::<TrackerConfig, _>(
            "measurement-noise-var",
            field!(kalman.measurement_variance),
            Float::at_least(1e-6),
        )
        .nick("Measurement noise")
        .blurb("absolute: variance of a detection's centre and size, in pixels squared"),
    );
    t
});

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
             appearance-weight = 0.5\nembedding-attribute = \"tensor:3:reid\"\nfrobnicate = 1\n\
             early-termination-age = 3\nmax-targets-per-stream = 50\nnew-target-max-iou = 0.8\n\
             low-confidence-iou-threshold = 0.4\niou-weight = 0.6\nsize-similarity-weight = 0.4\n\
             min-size-similarity = 0.5\nmin-matching-score = 0.3\nassociation-matcher = \"greedy\"\n\
             check-class-match = false\nkalman-noise = \"absolute\"\nnoise-weight-position = 0.04\n\
             noise-weight-velocity = 0.002\nprocess-noise-var-location = 3\n\
             process-noise-var-size = 2\nprocess-noise-var-velocity = 0.5\nmeasurement-noise-var = 9\n",
        )
        .unwrap();
        assert_eq!(
            (c.early_termination_age, c.max_targets, c.new_target_max_iou),
            (3, 50, 0.8)
        );
        assert_eq!(
            (c.low_confidence_iou_threshold, c.iou_weight, c.size_weight),
            (0.4, 0.6, 0.4)
        );
        assert_eq!((c.min_size_similarity, c.min_matching_score), (0.5, 0.3));
        assert_eq!(c.matcher, Matcher::Greedy);
        assert!(!c.check_class_match);
        let k = c.kalman;
        assert_eq!(k.model, NoiseModel::Absolute);
        assert_eq!((k.position_weight, k.velocity_weight), (0.04, 0.002));
        assert_eq!(
            (
                k.location_variance,
                k.size_variance,
                k.velocity_variance,
                k.measurement_variance
            ),
            (3.0, 2.0, 0.5, 9.0)
        );
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

    /// The file's form comes from its name, else from its text.

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
