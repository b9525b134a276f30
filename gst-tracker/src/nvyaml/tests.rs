// SPDX-License-Identifier: MIT OR Apache-2.0
//! NvMultiObjectTracker YAML: the mapping table, the fixtures in the shape of DeepStream's
//! configurations, and the keys' effect on the tracking loop.

use std::path::PathBuf;

use ferrostream_core::BBox;

use super::*;
use crate::kalman::NoiseModel;
use crate::tracker::{Detection, IdAllocator, Matcher, Tracker};

/// Every key of every section of NvMultiObjectTracker's configuration reference
/// (`enablePastFrame` is named by its miscellaneous-output table).
const DOCUMENTED: &[(&str, &[&str])] = &[
    ("BaseConfig", &["minDetectorConfidence"]),
    (
        "TargetManagement",
        &[
            "maxTargetsPerStream",
            "preserveStreamUpdateOrder",
            "enableBboxUnClipping",
            "minIouDiff4NewTarget",
            "minTrackerConfidence",
            "probationAge",
            "maxShadowTrackingAge",
            "earlyTerminationAge",
            "searchRegionPaddingScale",
            "outputTerminatedTracks",
            "outputShadowTracks",
            "terminatedTrackFilename",
            "enablePastFrame",
        ],
    ),
    (
        "TrajectoryManagement",
        &[
            "useUniqueID",
            "enableReAssoc",
            "minMatchingScore4Overall",
            "minTrackletMatchingScore",
            "minMatchingScore4ReidSimilarity",
            "matchingScoreWeight4TrackletSimilarity",
            "matchingScoreWeight4ReidSimilarity",
            "minTrajectoryLength4Projection",
            "prepLength4TrajectoryProjection",
            "trajectoryProjectionLength",
            "maxAngle4TrackletMatching",
            "minSpeedSimilarity4TrackletMatching",
            "minBboxSizeSimilarity4TrackletMatching",
            "maxTrackletMatchingTimeSearchRange",
            "trajectoryProjectionProcessNoiseScale",
            "trajectoryProjectionMeasurementNoiseScale",
            "trackletSpacialSearchRegionScale",
            "reidExtractionInterval",
        ],
    ),
    (
        "DataAssociator",
        &[
            "dataAssociatorType",
            "associationMatcherType",
            "checkClassMatch",
            "usePrediction4Assoc",
            "minMatchingScore4Overall",
            "minMatchingScore4SizeSimilarity",
            "minMatchingScore4Iou",
            "minMatchingScore4VisualSimilarity",
            "minMatchingScore4ReidSimilarity",
            "matchingScoreWeight4Iou",
            "matchingScoreWeight4SizeSimilarity",
            "matchingScoreWeight4VisualSimilarity",
            "matchingScoreWeight4ReidSimilarity",
            "tentativeDetectorConfidence",
            "minMatchingScore4TentativeIou",
            "thresholdMahalanobis",
        ],
    ),
    (
        "StateEstimator",
        &[
            "stateEstimatorType",
            "processNoiseVar4Loc",
            "processNoiseVar4Size",
            "processNoiseVar4Vel",
            "measurementNoiseVar4Detector",
            "measurementNoiseVar4Tracker",
            "noiseWeightVar4Loc",
            "noiseWeightVar4Vel",
            "useAspectRatio",
        ],
    ),
    (
        "VisualTracker",
        &[
            "visualTrackerType",
            "useColorNames",
            "useHog",
            "useHighPrecisionFeature",
            "featureImgSizeLevel",
            "featureFocusOffsetFactor_y",
            "filterLr",
            "filterChannelWeightsLr",
            "gaussianSigma",
            "vpiBackend4DcfTracker",
        ],
    ),
    (
        "ReID",
        &[
            "reidType",
            "batchSize",
            "workspaceSize",
            "reidFeatureSize",
            "reidHistorySize",
            "inferDims",
            "networkMode",
            "inputOrder",
            "colorFormat",
            "offsets",
            "netScaleFactor",
            "keepAspc",
            "useVPICropScaler",
            "addFeatureNormalization",
            "minVisibility4GalleryUpdate",
            "outputReidTensor",
            "tltEncodedModel",
            "tltModelKey",
            "onnxFile",
            "modelEngineFile",
            "calibrationTableFile",
        ],
    ),
    ("Segmenter", &["segmenterType", "segmenterConfigPath"]),
    (
        "ObjectModelProjection",
        &[
            "cameraModelFilepath",
            "outputVisibility",
            "outputFootLocation",
            "outputConvexHull",
            "minPoseConfidence",
        ],
    ),
    (
        "PoseEstimator",
        &[
            "poseEstimatorType",
            "useVPICropScaler",
            "batchSize",
            "workspaceSize",
            "inferDims",
            "networkMode",
            "inputOrder",
            "colorFormat",
            "offsets",
            "netScaleFactor",
            "onnxFile",
            "modelEngineFile",
            "poseInferenceInterval",
        ],
    ),
    ("Control", &["tracker-reset"]),
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load_fixture(name: &str) -> (TrackerConfig, Vec<String>) {
    crate::config_file::load(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn yaml(text: &str) -> Result<(TrackerConfig, Vec<String>), String> {
    parse(Path::new("t.yml"), text)
}

fn config(text: &str) -> TrackerConfig {
    let (config, warnings) = yaml(text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    config
}

/// The one warning about what is not run, if any.
fn not_run(warnings: &[String]) -> Option<&String> {
    let mut found = warnings.iter().filter(|w| w.contains("not run here"));
    let first = found.next();
    assert!(found.next().is_none(), "one such warning: {warnings:?}");
    first
}

#[test]
fn the_table_names_real_settings_and_each_key_once() {
    let properties: Vec<&str> = SETTINGS.property_names().collect();
    for (i, row) in ROWS.iter().enumerate() {
        if let Action::Set(setting, _) = row.action {
            assert!(properties.contains(&setting), "{}: {setting}", row.key);
        }
        assert!(
            !ROWS[..i]
                .iter()
                .any(|r| r.section == row.section && r.key == row.key),
            "[{}] {} twice",
            row.section,
            row.key
        );
        assert!(
            NOT_RUN.iter().all(|n| n.section != row.section),
            "{} is not run",
            row.section
        );
    }
    // The settings the parts decide exist too.
    for name in [
        "tracker-algorithm",
        "association-matcher",
        "kalman-noise",
        "appearance-weight",
    ] {
        assert!(properties.contains(&name), "{name}");
    }
}

#[test]
fn every_documented_key_has_a_row_or_a_section_not_run() {
    for (section, keys) in DOCUMENTED {
        for key in *keys {
            let row = ROWS.iter().any(|r| r.section == *section && r.key == *key);
            let skipped = NOT_RUN.iter().any(|n| n.section == *section);
            assert!(row || skipped, "[{section}] {key}");
        }
    }
}

#[test]
fn a_file_with_every_documented_key_loads() {
    let path = fixture("all_keys.yml");
    let ini = ferrostream_core::yaml::load(&path).unwrap();
    // The fixture holds every documented key.
    for (section, keys) in DOCUMENTED {
        let Some(s) = ini.sections.iter().find(|s| s.name == *section) else {
            panic!("no [{section}] in the fixture");
        };
        for key in *keys {
            assert!(
                s.entries.iter().any(|e| e.key == *key),
                "[{section}] {key} missing from the fixture"
            );
        }
    }
    let (c, warnings) = load_fixture("all_keys.yml");
    assert_eq!(warnings.len(), 1, "only what is not run: {warnings:?}");
    let w = not_run(&warnings).unwrap();
    for named in [
        "VisualTracker (line 74",
        "ReID (line 86",
        "Segmenter",
        "ObjectModelProjection",
        "PoseEstimator",
        "enableBboxUnClipping (line 13",
        "terminatedTrackFilename",
        "enablePastFrame",
        "enableReAssoc",
        "thresholdMahalanobis",
    ] {
        assert!(w.contains(named), "{named}: {w}");
    }
    assert!(
        w.starts_with(&format!("{}: not run here: ", path.display())),
        "{w}"
    );
    assert!(w.contains("rstracker runs bytetrack instead"), "{w}");
    // Keys without effect whose value asks for nothing are not named.
    assert!(!w.contains("preserveStreamUpdateOrder"), "{w}");

    assert_eq!(c.min_detector_confidence, 0.15);
    assert_eq!((c.max_targets, c.new_target_max_iou), (120, 0.65));
    assert_eq!(c.min_tracker_confidence, 0.35);
    assert_eq!(
        c.probation_age, 4,
        "probationAge 3: reported from the 4th frame"
    );
    assert_eq!((c.max_shadow_age, c.early_termination_age), (45, 2));
    assert!(c.report_terminated);
    assert_eq!(c.algorithm, Algorithm::ByteTrack);
    assert_eq!(c.matcher, Matcher::Auto);
    assert!(c.check_class_match);
    assert_eq!((c.min_matching_score, c.min_size_similarity), (0.3, 0.45));
    assert_eq!(c.iou_threshold, 0.25);
    assert_eq!(
        (c.high_confidence, c.low_confidence_iou_threshold),
        (0.4, 0.35)
    );
    // The ReID weight stands for appearance; the geometric weights grow by 1 / (1 - 0.5).
    assert_eq!(c.appearance_weight, 0.5);
    assert_eq!((c.iou_weight, c.size_weight), (0.8, 0.4));
    let k = c.kalman;
    assert_eq!(k.model, NoiseModel::Absolute);
    assert_eq!(
        (
            k.location_variance,
            k.size_variance,
            k.velocity_variance,
            k.measurement_variance
        ),
        (3.0, 1.5, 0.05, 5.0)
    );
    assert_eq!((k.position_weight, k.velocity_weight), (0.04, 0.005));
}

/// Files in the shape of DeepStream's sample configurations choose the algorithm as their
/// modules say, and set the settings their keys name.
#[test]
fn sdk_configurations_choose_the_algorithm() {
    let (c, warnings) = load_fixture("iou.yml");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((c.algorithm, c.matcher), (Algorithm::Iou, Matcher::Greedy));
    assert_eq!((c.iou_weight, c.size_weight), (0.7, 0.3));
    assert_eq!((c.min_detector_confidence, c.iou_threshold), (0.0, 0.0));
    assert_eq!(
        (c.probation_age, c.max_shadow_age, c.max_targets),
        (4, 30, 100)
    );

    let (c, warnings) = load_fixture("nvsort.yml");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        (c.algorithm, c.matcher),
        (Algorithm::ByteTrack, Matcher::Auto)
    );
    assert_eq!(c.kalman.model, NoiseModel::HeightRelative);
    assert_eq!(
        (c.kalman.position_weight, c.kalman.velocity_weight),
        (0.03, 0.002)
    );
    assert_eq!(
        (c.high_confidence, c.low_confidence_iou_threshold),
        (0.25, 0.3)
    );
    assert_eq!(
        (c.appearance_weight, c.iou_weight, c.size_weight),
        (0.0, 0.4, 0.15)
    );
    assert_eq!(c.probation_age, 5);

    let (c, warnings) = load_fixture("nvdcf_perf.yml");
    let w = not_run(&warnings).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        w.contains("VisualTracker") && w.contains("enableBboxUnClipping"),
        "{w}"
    );
    assert!(w.contains("appearance-weight"), "{w}");
    assert_eq!(c.algorithm, Algorithm::ByteTrack);
    assert_eq!(c.kalman.model, NoiseModel::Absolute);
    assert_eq!(
        (c.kalman.location_variance, c.kalman.measurement_variance),
        (1.5, 3.0)
    );
    assert_eq!(c.appearance_weight, 0.35);
    assert!(
        (c.iou_weight - 0.35 / 0.65).abs() < 1e-6,
        "{}",
        c.iou_weight
    );

    let (c, warnings) = load_fixture("nvdeepsort.yml");
    let w = not_run(&warnings).unwrap();
    assert!(
        w.contains("ReID") && w.contains("thresholdMahalanobis"),
        "{w}"
    );
    assert!(!w.contains("VisualTracker"), "{w}");
    assert_eq!(c.algorithm, Algorithm::ByteTrack);
    assert_eq!(c.kalman.model, NoiseModel::HeightRelative);
    assert_eq!(c.appearance_weight, 0.25);
}

/// Single- and multi-view 3D configurations load; what they need a camera model for is named
/// once, with the box filter that runs instead.
#[test]
fn three_d_and_multi_view_configurations_load() {
    let (c, warnings) = load_fixture("nvdcf_3d.yml");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = not_run(&warnings).unwrap();
    for named in [
        "ObjectModelProjection",
        "PoseEstimator",
        "VisualTracker",
        "ReID",
        "enableReAssoc",
        "terminatedTrackFilename",
        "stateEstimatorType 3",
    ] {
        assert!(w.contains(named), "{named}: {w}");
    }
    assert_eq!(c.algorithm, Algorithm::ByteTrack);
    assert_eq!(c.kalman.model, NoiseModel::Absolute);
    assert_eq!(c.kalman.location_variance, 6000.0);

    let (c, warnings) = load_fixture("multiview.yml");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = not_run(&warnings).unwrap();
    assert!(
        w.contains("MultiViewAssociator") && w.contains("Communicator"),
        "{w}"
    );
    assert!(!c.check_class_match, "BaseConfig's checkClassMatch: 0");
    assert_eq!((c.probation_age, c.early_termination_age), (5, 2));
    assert_eq!(c.appearance_weight, 0.9);
}

/// A module switched off by its type key is not reported as not run; an override file with
/// only such sections warns about nothing.
#[test]
fn modules_switched_off_are_not_named() {
    let (_, warnings) = yaml(
        "VisualTracker:\n  visualTrackerType: 0\nReID:\n  reidType: 0\n\
         PoseEstimator:\n  poseEstimatorType: 0\n",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let (_, warnings) =
        yaml("VisualTracker:\n  visualTrackerType: 1\nReID:\n  reidType: 0\n").unwrap();
    let w = not_run(&warnings).unwrap();
    assert!(
        w.contains("VisualTracker (line 1") && !w.contains("ReID"),
        "{w}"
    );
}

#[test]
fn unknown_keys_and_sections_warn_with_file_section_key_and_line() {
    let (c, warnings) = yaml(
        "TargetManagement:\n  probationAge: 2\n  probationAgee: 3\nFancyModule:\n  x: 1\n\
         NvDCF:\n  probationAge: 9\nversion: 3\n",
    )
    .unwrap();
    assert_eq!(c.probation_age, 3);
    assert_eq!(
        warnings,
        vec![
            "t.yml:3: unknown key `probationAgee` in [TargetManagement] ignored".to_owned(),
            "t.yml:4: unknown section [FancyModule] ignored".to_owned(),
            "t.yml:6: section [NvDCF] is DeepStream 5's layout, which NvMultiObjectTracker no \
             longer reads either; its keys were ignored (they belong in BaseConfig, \
             TargetManagement, ... now)"
                .to_owned(),
            "t.yml:8: unknown key `version` outside a section ignored".to_owned(),
        ]
    );
}

#[test]
fn bad_values_are_errors_naming_file_line_and_key() {
    let err = |text: &str| yaml(text).unwrap_err();
    let e = err("TargetManagement:\n  maxShadowTrackingAge: 10\n  probationAge: -1\n");
    assert!(
        e.starts_with("t.yml:3: key `probationAge` in [TargetManagement]: cannot parse `-1`"),
        "{e}"
    );
    let e = err("BaseConfig:\n  minDetectorConfidence: 1.5\n");
    assert!(
        e.starts_with(
            "t.yml:2: key `minDetectorConfidence` in [BaseConfig]: expected 0 to 1, found 1.5"
        ),
        "{e}"
    );
    assert!(e.contains("rstracker's min-detector-confidence"), "{e}");
    let e = err("StateEstimator:\n  stateEstimatorType: 4\n");
    assert!(
        e.starts_with("t.yml:2: key `stateEstimatorType` in [StateEstimator]: expected 0 to 3"),
        "{e}"
    );
    let e = err("DataAssociator:\n  associationMatcherType: 2\n");
    assert!(
        e.contains("`associationMatcherType`") && e.contains("0 to 1"),
        "{e}"
    );
    let e = err("DataAssociator:\n\n  minMatchingScore4Iou: abc\n");
    assert!(
        e.starts_with(
            "t.yml:3: key `minMatchingScore4Iou` in [DataAssociator]: cannot parse `abc`"
        ),
        "{e}"
    );
    let e = err("DataAssociator:\n  matchingScoreWeight4ReidSimilarity: 1.5\n");
    assert!(
        e.starts_with("t.yml:2: key `matchingScoreWeight4ReidSimilarity` in [DataAssociator]"),
        "{e}"
    );
    assert!(e.contains("appearance-weight"), "{e}");
    let e = err("TrajectoryManagement:\n  useUniqueID: 2\n");
    assert!(
        e.starts_with("t.yml:2: key `useUniqueID` in [TrajectoryManagement]: expected 1, 0"),
        "{e}"
    );
    let e = err("StateEstimator:\n  measurementNoiseVar4Tracker: .nan\n");
    assert!(e.contains("`measurementNoiseVar4Tracker`"), "{e}");
    let e = err("TargetManagement:\n  probationAge: [1, 2\n");
    assert!(
        e.starts_with("t.yml:") && e.contains("malformed YAML"),
        "{e}"
    );
}

/// What `probationAge` means in NvMultiObjectTracker (frames on probation after the first)
/// decides from which frame a new target is reported.
#[test]
fn probation_age_decides_the_first_reported_frame() {
    let first_reported = |probation_age: u32| {
        let c = config(&format!(
            "TargetManagement:\n  probationAge: {probation_age}\n\
             StateEstimator:\n  stateEstimatorType: 2\n\
             DataAssociator:\n  associationMatcherType: 1\n"
        ));
        assert_eq!(c.algorithm, Algorithm::ByteTrack);
        let mut tracker = Tracker::new(c);
        let mut ids = IdAllocator::default();
        let mut first = None;
        let mut reported = Vec::new();
        for frame in 0..12 {
            let det = Detection::new(
                BBox::new(100.0 + 2.0 * frame as f32, 50.0, 40.0, 90.0),
                0.9,
                0,
            );
            let result = tracker.update(&[det], &mut ids);
            if let [t] = &result.tracks[..] {
                first.get_or_insert(frame);
                reported.push(t.id);
            }
        }
        assert!(reported.iter().all(|&id| id == reported[0]), "{reported:?}");
        first
    };
    // The 6th frame (index 5) for 5, the 2nd for 1, at once for 0.
    assert_eq!(first_reported(5), Some(5));
    assert_eq!(first_reported(1), Some(1));
    assert_eq!(first_reported(0), Some(0));
}

/// A box whose size changed too much is not the same target, even where it overlaps enough.
#[test]
fn size_similarity_gate_refuses_what_overlap_alone_accepts() {
    let ids_of = |min_size: f32| {
        let c = config(&format!(
            "TargetManagement:\n  probationAge: 0\n\
             DataAssociator:\n  minMatchingScore4Iou: 0.3\n  \
             minMatchingScore4SizeSimilarity: {min_size}\n"
        ));
        assert_eq!(c.algorithm, Algorithm::Iou);
        let mut tracker = Tracker::new(c);
        let mut ids = IdAllocator::default();
        let first = tracker.update(
            &[Detection::new(BBox::new(0.0, 0.0, 100.0, 100.0), 0.9, 0)],
            &mut ids,
        );
        // IoU 0.6 with the target, size similarity 1 * 0.6.
        let next = tracker.update(
            &[Detection::new(BBox::new(0.0, 0.0, 100.0, 60.0), 0.9, 0)],
            &mut ids,
        );
        let matched = next.tracks.iter().find(|t| t.detection == Some(0)).unwrap();
        (first.tracks[0].id, matched.id)
    };
    let (a, b) = ids_of(0.0);
    assert_eq!(a, b, "overlap alone: the same target");
    let (a, b) = ids_of(0.7);
    assert_ne!(a, b, "size similarity 0.6 < 0.7: a new target");
}

#[test]
fn max_targets_per_stream_caps_the_targets_of_a_source() {
    let c = config("TargetManagement:\n  probationAge: 0\n  maxTargetsPerStream: 3\n");
    let mut tracker = Tracker::new(c);
    let mut ids = IdAllocator::default();
    let detections = |frame: f32| -> Vec<Detection> {
        (0..5)
            .map(|i| {
                let bbox = BBox::new(200.0 * i as f32 + frame, 0.0, 50.0, 100.0);
                Detection::new(bbox, 0.5 + 0.1 * i as f32, 0)
            })
            .collect()
    };
    for frame in 0..4 {
        let result = tracker.update(&detections(frame as f32), &mut ids);
        let mut taken: Vec<usize> = result.tracks.iter().filter_map(|t| t.detection).collect();
        taken.sort_unstable();
        assert_eq!(
            taken,
            vec![2, 3, 4],
            "frame {frame}: the three most confident"
        );
    }
    assert_eq!(ids.next_id(), 4, "three ids handed out");
}

/// A target on probation survives `earlyTerminationAge - 1` misses in a row, and ends at the
/// next.
#[test]
fn early_termination_age_ends_targets_on_probation() {
    let first_reported = |early: u32, gap: std::ops::Range<u32>| {
        let c = config(&format!(
            "TargetManagement:\n  probationAge: 4\n  earlyTerminationAge: {early}\n"
        ));
        let mut tracker = Tracker::new(c);
        let mut ids = IdAllocator::default();
        (0..20).find(|&frame| {
            let dets = if gap.contains(&frame) {
                vec![]
            } else {
                vec![Detection::new(BBox::new(10.0, 10.0, 40.0, 80.0), 0.9, 0)]
            };
            let result = tracker.update(&dets, &mut ids);
            assert!(
                result.terminated.is_empty(),
                "never reported, never terminated"
            );
            !result.tracks.is_empty()
        })
    };
    // probationAge 4: five matches. Missing frame 2 once:
    assert_eq!(
        first_reported(1, 2..3),
        Some(7),
        "ended, restarted at frame 3"
    );
    assert_eq!(first_reported(2, 2..3), Some(5), "survived one miss");
    // Missing frames 2 and 3:
    assert_eq!(first_reported(2, 2..4), Some(8), "ended at the second miss");
    assert_eq!(first_reported(3, 2..4), Some(6), "survived two misses");
    // earlyTerminationAge 0 ends a target at its first miss, as 1 does.
    assert_eq!(first_reported(0, 2..3), Some(7));
}

/// The appearance weight takes the ReID weight when given, else the visual one, and the
/// geometric weights grow so the score is NvMultiObjectTracker's sum over (1 - w).
#[test]
fn appearance_weight_comes_from_reid_or_visual_similarity() {
    let c = config(
        "DataAssociator:\n  matchingScoreWeight4Iou: 0.4\n  \
         matchingScoreWeight4SizeSimilarity: 0.2\n  matchingScoreWeight4ReidSimilarity: 0.5\n  \
         matchingScoreWeight4VisualSimilarity: 0.3\n",
    );
    assert_eq!(c.appearance_weight, 0.5);
    assert_eq!((c.iou_weight, c.size_weight), (0.8, 0.4));
    let c = config(
        "DataAssociator:\n  matchingScoreWeight4ReidSimilarity: 0\n  \
         matchingScoreWeight4VisualSimilarity: 0.75\n",
    );
    assert_eq!((c.appearance_weight, c.iou_weight), (0.75, 4.0));
    let c = config("DataAssociator:\n  matchingScoreWeight4Iou: 0.6\n");
    assert_eq!((c.appearance_weight, c.iou_weight), (0.0, 0.6));
}

#[test]
fn the_state_estimator_and_matcher_choose_algorithm_and_noise() {
    let pick = |estimator: u32, matcher: u32| {
        let c = config(&format!(
            "StateEstimator:\n  stateEstimatorType: {estimator}\n\
             DataAssociator:\n  associationMatcherType: {matcher}\n"
        ));
        (c.algorithm, c.matcher, c.kalman.model)
    };
    use Algorithm::*;
    use NoiseModel::*;
    assert_eq!(pick(0, 0), (Iou, Matcher::Greedy, HeightRelative));
    assert_eq!(pick(1, 0), (Sort, Matcher::Greedy, Absolute));
    assert_eq!(pick(2, 0), (Sort, Matcher::Greedy, HeightRelative));
    assert_eq!(pick(1, 1), (ByteTrack, Matcher::Auto, Absolute));
    assert_eq!(pick(2, 1), (ByteTrack, Matcher::Auto, HeightRelative));
    // No state estimator with the cascade: one greedy stage, and a warning says so.
    let (c, warnings) = yaml("DataAssociator:\n  associationMatcherType: 1\n").unwrap();
    assert_eq!(c.algorithm, Iou);
    assert!(
        not_run(&warnings)
            .unwrap()
            .contains("associationMatcherType 1 (line 2"),
        "{warnings:?}"
    );
    // A file with nothing of the kind: NvMultiObjectTracker's defaults, the IOU tracker.
    assert_eq!(
        config("BaseConfig:\n  minDetectorConfidence: 0.3\n").algorithm,
        Iou
    );
}

#[test]
fn has_section_tells_nvmultiobjecttracker_yaml() {
    assert!(has_section(
        "%YAML:1.0\nBaseConfig:\n  minDetectorConfidence: 0\n"
    ));
    assert!(has_section("StateEstimator :\n  stateEstimatorType: 1\n"));
    assert!(!has_section("probation-age = 2\n"));
    assert!(
        !has_section("  BaseConfig: 1\n"),
        "indented: not a top-level section"
    );
    assert!(!has_section("BaseConfigs:\n"));
}
