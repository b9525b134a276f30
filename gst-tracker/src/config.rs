//! `rstracker`'s configuration file (`config-file-path`), TOML with the property names as keys:
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
//! Every key is optional; unknown keys give a warning naming them. Properties set on the element
//! override the file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::tracker::{Algorithm, TrackerConfig};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct FileConfig {
    algorithm: Option<String>,
    probation_age: Option<u32>,
    max_shadow_age: Option<u32>,
    min_detector_confidence: Option<f32>,
    high_confidence: Option<f32>,
    min_tracker_confidence: Option<f32>,
    iou_threshold: Option<f32>,
    operate_on_class_ids: Option<Vec<i32>>,
    report_shadow_tracks: Option<bool>,
    report_terminated_tracks: Option<bool>,
    appearance_weight: Option<f32>,
    embedding_attribute: Option<String>,
    #[serde(flatten)]
    unknown: BTreeMap<String, toml::Value>,
}

/// Parses an algorithm name as the property takes it.
pub fn algorithm_from_name(name: &str) -> Option<Algorithm> {
    match name {
        "iou" => Some(Algorithm::Iou),
        "sort" => Some(Algorithm::Sort),
        "bytetrack" => Some(Algorithm::ByteTrack),
        _ => None,
    }
}

/// Reads `path` over the defaults. Returns the configuration and the warnings to post.
pub fn load(path: &Path) -> Result<(TrackerConfig, Vec<String>), String> {
    let text = ferrostream_core::files::read_text(path)
        .map_err(|e| format!("cannot read tracker configuration: {e}"))?;
    parse(path, &text)
}

pub fn parse(path: &Path, text: &str) -> Result<(TrackerConfig, Vec<String>), String> {
    let file: FileConfig = toml::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut c = TrackerConfig::default();
    let err = |key: &str, msg: String| format!("{}: key `{key}`: {msg}", path.display());
    if let Some(name) = &file.algorithm {
        c.algorithm = algorithm_from_name(name).ok_or_else(|| {
            err(
                "algorithm",
                format!("unknown `{name}`; expected iou, sort or bytetrack"),
            )
        })?;
    }
    let unit = |key: &str, v: Option<f32>, into: &mut f32| -> Result<(), String> {
        if let Some(v) = v {
            if !(0.0..=1.0).contains(&v) {
                return Err(err(key, format!("{v} is outside 0..1")));
            }
            *into = v;
        }
        Ok(())
    };
    unit(
        "min-detector-confidence",
        file.min_detector_confidence,
        &mut c.min_detector_confidence,
    )?;
    unit(
        "high-confidence",
        file.high_confidence,
        &mut c.high_confidence,
    )?;
    unit(
        "min-tracker-confidence",
        file.min_tracker_confidence,
        &mut c.min_tracker_confidence,
    )?;
    unit("iou-threshold", file.iou_threshold, &mut c.iou_threshold)?;
    unit(
        "appearance-weight",
        file.appearance_weight,
        &mut c.appearance_weight,
    )?;
    if let Some(v) = file.probation_age {
        if v == 0 {
            return Err(err("probation-age", "must be at least 1".into()));
        }
        c.probation_age = v;
    }
    if let Some(v) = file.max_shadow_age {
        c.max_shadow_age = v;
    }
    if let Some(v) = file.operate_on_class_ids {
        c.operate_on_class_ids = v;
    }
    if let Some(v) = file.report_shadow_tracks {
        c.report_shadow = v;
    }
    if let Some(v) = file.report_terminated_tracks {
        c.report_terminated = v;
    }
    if let Some(v) = file.embedding_attribute {
        if v.is_empty() {
            return Err(err("embedding-attribute", "must not be empty".into()));
        }
        c.embedding_attribute = v;
    }
    let warnings = file
        .unknown
        .keys()
        .map(|k| format!("{}: unknown key `{k}` ignored", path.display()))
        .collect();
    Ok((c, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`frobnicate`"));
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = parse(Path::new("t.toml"), "algorithm = \"kalman\"\n").unwrap_err();
        assert!(e.contains("`algorithm`") && e.contains("kalman"), "{e}");
        let e = parse(Path::new("t.toml"), "iou-threshold = 1.5\n").unwrap_err();
        assert!(e.contains("`iou-threshold`"), "{e}");
        let e = parse(Path::new("t.toml"), "probation-age = \"two\"\n").unwrap_err();
        assert!(e.contains("t.toml") && e.contains("probation-age"), "{e}");
        let e = parse(Path::new("t.toml"), "probation-age = 0\n").unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
    }
}
