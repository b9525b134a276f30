// SPDX-License-Identifier: MIT OR Apache-2.0
//! NvMultiObjectTracker YAML: the low-level configurations that DeepStream's `nvtracker` takes
//! as `ll-config-file` (`config_tracker_IOU.yml`, `config_tracker_NvSORT.yml`,
//! `config_tracker_NvDCF_perf.yml`, `config_tracker_NvDeepSORT.yml`, ...), read into
//! `rstracker`'s settings.
//!
//! `ROWS` says, for every documented key of every section, what rstracker does with it: it
//! sets one of rstracker's settings (converted where the meanings are offset, as
//! `probationAge`), it chooses the algorithm together with other keys (`Part`), or it is
//! accepted and checked with no effect here, for a reason the row gives. Whole sections of
//! modules rstracker does not run (the visual tracker, the re-identification network, 3D and
//! multi-view tracking) are listed in `NOT_RUN`; their keys are not read.
//!
//! The algorithm comes from the file, as NvMultiObjectTracker composes its trackers:
//!
//! - no state estimator (`stateEstimatorType: 0` or no `StateEstimator`, the IOU tracker):
//!   `iou`, greedy matching on the last box;
//! - a Kalman filter with the cascaded matcher (`associationMatcherType: 1`: NvSORT, NvDCF,
//!   NvDeepSORT): `bytetrack`. The cascade's stages are ByteTrack's: confident detections to
//!   confirmed targets on the whole score, then tentative detections (below
//!   `tentativeDetectorConfidence`, rstracker's `high-confidence`) to the targets left on
//!   overlap alone (`minMatchingScore4TentativeIou`), then confident detections to targets on
//!   probation; tentative detections start no target in either;
//! - a Kalman filter with the greedy matcher: `sort` with `association-matcher=greedy`.
//!
//! `stateEstimatorType` 2 (`REGULAR_BBOX_KF`) is rstracker's own filter, with noise proportional
//! to the box height (`noiseWeightVar4*`); 1 (`SIMPLE_BBOX_KF`) gives it fixed variances
//! (`processNoiseVar4*`, `measurementNoiseVar4Detector`) instead. Those are in pixels² of the
//! frame nvtracker scales to (`tracker-width`, `tracker-height`), while rstracker works on the
//! frame's own pixels, so they may need scaling by the square of the size ratio. 3 (the 3D
//! foot-location filter) needs the camera model of `ObjectModelProjection`; the box filter with
//! the same variances runs instead.
//!
//! Keys the file does not hold keep rstracker's defaults. Loading gives the configuration and
//! its warnings: one that names what the file asks for and rstracker does not run, with what
//! runs instead; one per unknown key or section. A value out of range or not a number is an
//! error naming the file, line and key.

use std::path::Path;

use ferrostream_core::ini::{Entry, IniFile};
use ferrostream_core::settings::{Bool, Choice, Codec, Float, Props};

use crate::config::SETTINGS;
use crate::tracker::{Algorithm, TrackerConfig};

/// Turns a file's value into the text of an rstracker setting.
type Convert = fn(&str) -> Result<String, String>;

/// One key of NvMultiObjectTracker's configuration and what rstracker does with it.
pub(crate) struct Row {
    pub section: &'static str,
    pub key: &'static str,
    pub action: Action,
}

/// What rstracker does with a key.
pub(crate) enum Action {
    /// Sets the rstracker setting named (a property of [`SETTINGS`]) to the value, converted.
    Set(&'static str, Convert),
    /// Read with the other keys of its part once the whole file is read.
    Part(Part),
    /// Checked, then without effect here, for the reason given. A row with `asks` lists the
    /// key in the warning about what is not run when `asks` finds its value switched on.
    Accept {
        check: Check,
        asks: Option<fn(&str) -> bool>,
        reason: &'static str,
    },
}

/// Keys read together, because rstracker's settings depend on more than one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// `stateEstimatorType`: none, or a Kalman filter and its noise model.
    StateEstimator,
    /// `associationMatcherType`: greedy, or the cascade.
    Matcher,
    /// `matchingScoreWeight4VisualSimilarity`: appearance, when no ReID weight is given.
    VisualWeight,
    /// `matchingScoreWeight4ReidSimilarity`: appearance.
    ReidWeight,
}

/// How a key without effect is still checked: a value it could never have is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// `0`, `1`, `true` or `false`.
    Switch,
    /// A whole number (negative ones too: `-1` means "off" or "first frame only" in places).
    Integer,
    /// A finite number.
    Number,
    /// A number from 0 to 1.
    Unit,
    /// Anything (names, paths).
    Text,
}

impl Check {
    fn check(self, value: &str) -> Result<(), String> {
        let dir = Path::new("");
        match self {
            Check::Switch => Bool.from_text(value, dir).map(drop),
            Check::Integer => value
                .trim()
                .parse::<i64>()
                .map(drop)
                .map_err(|e| format!("cannot parse `{}` as an integer: {e}", value.trim())),
            Check::Number => Float::any().from_text(value, dir).map(drop),
            Check::Unit => Float::unit().from_text(value, dir).map(drop),
            Check::Text => Ok(()),
        }
    }
}

/// A section of a module rstracker does not run: its keys are not read.
pub(crate) struct NotRun {
    pub section: &'static str,
    /// What the module is.
    pub what: &'static str,
    /// The key whose value 0 turns the module off (then the file asks for nothing).
    pub type_key: Option<&'static str>,
}

/// The sections of modules rstracker does not run.
pub(crate) static NOT_RUN: &[NotRun] = &[
    NotRun {
        section: "VisualTracker",
        what: "NvDCF's correlation-filter visual tracker",
        type_key: Some("visualTrackerType"),
    },
    NotRun {
        section: "ReID",
        what: "the re-identification network inside the tracker",
        type_key: Some("reidType"),
    },
    NotRun {
        section: "Segmenter",
        what: "MaskTracker's SAM2 segmentation",
        type_key: Some("segmenterType"),
    },
    NotRun {
        section: "ObjectModelProjection",
        what: "3D projection through a camera model (single-view 3D tracking)",
        type_key: None,
    },
    NotRun {
        section: "PoseEstimator",
        what: "body pose for the height of 3D targets",
        type_key: Some("poseEstimatorType"),
    },
    NotRun {
        section: "MultiViewAssociator",
        what: "association across cameras (multi-view 3D tracking)",
        type_key: Some("multiViewAssociatorType"),
    },
    NotRun {
        section: "Communicator",
        what: "messaging between multi-view trackers",
        type_key: Some("communicatorType"),
    },
];

/// DeepStream 5's single-section layout, which NvMultiObjectTracker no longer reads either.
const LEGACY_SECTION: &str = "NvDCF";

const fn set(section: &'static str, key: &'static str, setting: &'static str) -> Row {
    Row {
        section,
        key,
        action: Action::Set(setting, same),
    }
}

const fn convert(
    section: &'static str,
    key: &'static str,
    setting: &'static str,
    convert: Convert,
) -> Row {
    Row {
        section,
        key,
        action: Action::Set(setting, convert),
    }
}

const fn part(section: &'static str, key: &'static str, part: Part) -> Row {
    Row {
        section,
        key,
        action: Action::Part(part),
    }
}

/// A key without effect that asks for nothing rstracker lacks (or whose default it follows).
const fn quiet(
    section: &'static str,
    key: &'static str,
    check: Check,
    reason: &'static str,
) -> Row {
    Row {
        section,
        key,
        action: Action::Accept {
            check,
            asks: None,
            reason,
        },
    }
}

/// A key without effect that asks for something rstracker does not do when `asks` says so.
const fn lacking(
    section: &'static str,
    key: &'static str,
    check: Check,
    asks: fn(&str) -> bool,
    reason: &'static str,
) -> Row {
    Row {
        section,
        key,
        action: Action::Accept {
            check,
            asks: Some(asks),
            reason,
        },
    }
}

const TM: &str = "TargetManagement";
const TJ: &str = "TrajectoryManagement";
const DA: &str = "DataAssociator";
const SE: &str = "StateEstimator";

const REASSOC: &str = "a parameter of re-association, which is not run";
const NO_VISUAL: &str = "weighs what the visual tracker measures, and it is not run";
const APPEARANCE_MIN: &str = "appearance has no minimum of its own here: it enters the matching \
                              score, weighted by appearance-weight";

/// Every key of NvMultiObjectTracker's documented configuration (and the few more its
/// published samples carry), with what rstracker does with it.
pub(crate) static ROWS: &[Row] = &[
    // BaseConfig
    set(
        "BaseConfig",
        "minDetectorConfidence",
        "min-detector-confidence",
    ),
    // NvMultiObjectTracker's multi-view samples write it here rather than in DataAssociator.
    set("BaseConfig", "checkClassMatch", "check-class-match"),
    // TargetManagement
    set(TM, "maxTargetsPerStream", "max-targets-per-stream"),
    quiet(
        TM,
        "preserveStreamUpdateOrder",
        Check::Switch,
        "rstracker updates a batch's sources one after another in batch order, so ids come in \
         a deterministic order anyway",
    ),
    lacking(
        TM,
        "enableBboxUnClipping",
        Check::Switch,
        on,
        "boxes cut by the frame border are not extended",
    ),
    set(TM, "minIouDiff4NewTarget", "new-target-max-iou"),
    // Below it, NvMultiObjectTracker stops reporting a target (shadow tracking); rstracker stops
    // reporting a lost target once its confidence, decaying each frame, falls below it.
    set(TM, "minTrackerConfidence", "min-tracker-confidence"),
    // NvMultiObjectTracker keeps a target tentative for probationAge frames after the one that
    // created it and reports it from the next; rstracker counts the matches including the
    // first, so probationAge N is probation-age N + 1.
    convert(TM, "probationAge", "probation-age", plus_one),
    set(TM, "maxShadowTrackingAge", "max-shadow-age"),
    // A tentative target ends when its misses in a row reach the age; 0 and 1 both end it at
    // the first miss.
    convert(
        TM,
        "earlyTerminationAge",
        "early-termination-age",
        at_least_one,
    ),
    quiet(
        TM,
        "searchRegionPaddingScale",
        Check::Number,
        "sizes the visual tracker's search region, and it is not run",
    ),
    // The on/off of telling downstream which targets ended: rstracker lists their ids in each
    // frame's terminated_ids rather than exporting their whole history.
    set(TM, "outputTerminatedTracks", "report-terminated-tracks"),
    quiet(
        TM,
        "outputShadowTracks",
        Check::Switch,
        "that export adds targets which are not reported to a separate user meta; rstracker \
         reports a lost target as an object while its confidence is at least \
         min-tracker-confidence (report-shadow-tracks), and has no such export",
    ),
    lacking(
        TM,
        "terminatedTrackFilename",
        Check::Text,
        not_empty,
        "rstracker writes no track files; ended ids go into each frame's terminated_ids",
    ),
    lacking(
        TM,
        "enablePastFrame",
        Check::Switch,
        on,
        "a target is reported from the frame it is confirmed in; its probation frames are not \
         reported afterwards",
    ),
    quiet(
        TM,
        "maxTrajectoryBufferLength",
        Check::Integer,
        "rstracker keeps no trajectory history",
    ),
    // TrajectoryManagement
    quiet(
        TJ,
        "useUniqueID",
        Check::Switch,
        "ids come from one counter per element, unique across its sources",
    ),
    lacking(
        TJ,
        "enableReAssoc",
        Check::Switch,
        on,
        "a new target is not joined to a lost one's tracklet; shadows bridge short gaps",
    ),
    quiet(TJ, "minMatchingScore4Overall", Check::Number, REASSOC),
    quiet(TJ, "minTrackletMatchingScore", Check::Unit, REASSOC),
    quiet(TJ, "minMatchingScore4ReidSimilarity", Check::Unit, REASSOC),
    quiet(
        TJ,
        "matchingScoreWeight4TrackletSimilarity",
        Check::Number,
        REASSOC,
    ),
    quiet(
        TJ,
        "matchingScoreWeight4ReidSimilarity",
        Check::Number,
        REASSOC,
    ),
    quiet(
        TJ,
        "minTrajectoryLength4Projection",
        Check::Integer,
        REASSOC,
    ),
    quiet(
        TJ,
        "prepLength4TrajectoryProjection",
        Check::Integer,
        REASSOC,
    ),
    quiet(TJ, "trajectoryProjectionLength", Check::Integer, REASSOC),
    quiet(TJ, "maxAngle4TrackletMatching", Check::Number, REASSOC),
    quiet(
        TJ,
        "minSpeedSimilarity4TrackletMatching",
        Check::Unit,
        REASSOC,
    ),
    quiet(
        TJ,
        "minBboxSizeSimilarity4TrackletMatching",
        Check::Unit,
        REASSOC,
    ),
    quiet(
        TJ,
        "maxTrackletMatchingTimeSearchRange",
        Check::Integer,
        REASSOC,
    ),
    quiet(
        TJ,
        "trajectoryProjectionProcessNoiseScale",
        Check::Number,
        REASSOC,
    ),
    quiet(
        TJ,
        "trajectoryProjectionMeasurementNoiseScale",
        Check::Number,
        REASSOC,
    ),
    quiet(
        TJ,
        "trackletSpacialSearchRegionScale",
        Check::Number,
        REASSOC,
    ),
    quiet(TJ, "reidExtractionInterval", Check::Integer, REASSOC),
    // DataAssociator
    quiet(
        DA,
        "dataAssociatorType",
        Check::Integer,
        "there is one data associator, the default",
    ),
    part(DA, "associationMatcherType", Part::Matcher),
    set(DA, "checkClassMatch", "check-class-match"),
    quiet(
        DA,
        "usePrediction4Assoc",
        Check::Switch,
        "sort and bytetrack always associate the Kalman-predicted box, iou the last one",
    ),
    set(DA, "minMatchingScore4Overall", "min-matching-score"),
    set(DA, "minMatchingScore4SizeSimilarity", "min-size-similarity"),
    set(DA, "minMatchingScore4Iou", "iou-threshold"),
    quiet(
        DA,
        "minMatchingScore4VisualSimilarity",
        Check::Unit,
        APPEARANCE_MIN,
    ),
    quiet(
        DA,
        "minMatchingScore4ReidSimilarity",
        Check::Unit,
        APPEARANCE_MIN,
    ),
    set(DA, "matchingScoreWeight4Iou", "iou-weight"),
    set(
        DA,
        "matchingScoreWeight4SizeSimilarity",
        "size-similarity-weight",
    ),
    part(
        DA,
        "matchingScoreWeight4VisualSimilarity",
        Part::VisualWeight,
    ),
    part(DA, "matchingScoreWeight4ReidSimilarity", Part::ReidWeight),
    // Detections between minDetectorConfidence and this only continue targets, in the
    // cascade's second stage: ByteTrack's low-confidence detections.
    set(DA, "tentativeDetectorConfidence", "high-confidence"),
    set(
        DA,
        "minMatchingScore4TentativeIou",
        "low-confidence-iou-threshold",
    ),
    lacking(
        DA,
        "thresholdMahalanobis",
        Check::Number,
        non_negative,
        "candidates are gated by overlap (iou-threshold), not by Mahalanobis distance",
    ),
    quiet(
        DA,
        "minMatchingScore4PeerAssocIou",
        Check::Unit,
        "a parameter of multi-view association, which is not run",
    ),
    // StateEstimator
    part(SE, "stateEstimatorType", Part::StateEstimator),
    set(SE, "processNoiseVar4Loc", "process-noise-var-location"),
    set(SE, "processNoiseVar4Size", "process-noise-var-size"),
    set(SE, "processNoiseVar4Vel", "process-noise-var-velocity"),
    set(SE, "measurementNoiseVar4Detector", "measurement-noise-var"),
    quiet(SE, "measurementNoiseVar4Tracker", Check::Number, NO_VISUAL),
    set(SE, "noiseWeightVar4Loc", "noise-weight-position"),
    set(SE, "noiseWeightVar4Vel", "noise-weight-velocity"),
    quiet(
        SE,
        "useAspectRatio",
        Check::Switch,
        "rstracker's filter always holds the aspect ratio rather than the width, as DeepSORT's",
    ),
    // Control (a runtime configuration update's command)
    quiet(
        "Control",
        "tracker-reset",
        Check::Switch,
        "a command of a configuration update while running; at start there is nothing to reset",
    ),
];

fn same(value: &str) -> Result<String, String> {
    Ok(value.trim().to_owned())
}

fn whole(value: &str) -> Result<u32, String> {
    value.trim().parse::<u32>().map_err(|e| {
        format!(
            "cannot parse `{}` as an unsigned integer: {e}",
            value.trim()
        )
    })
}

fn plus_one(value: &str) -> Result<String, String> {
    let n = whole(value)?;
    n.checked_add(1)
        .map(|n| n.to_string())
        .ok_or_else(|| format!("expected at most {}, found {n}", u32::MAX - 1))
}

fn at_least_one(value: &str) -> Result<String, String> {
    whole(value).map(|n| n.max(1).to_string())
}

/// Whether a switch or number is on (neither 0 nor false).
fn on(value: &str) -> bool {
    let v = value.trim();
    !(v.eq_ignore_ascii_case("false") || v.parse::<f64>().is_ok_and(|n| n == 0.0))
}

fn not_empty(value: &str) -> bool {
    !value.trim().is_empty()
}

fn non_negative(value: &str) -> bool {
    value.trim().parse::<f64>().is_ok_and(|n| n >= 0.0)
}

/// The section names NvMultiObjectTracker's configurations use.
fn section_names() -> impl Iterator<Item = &'static str> {
    ROWS.iter()
        .map(|r| r.section)
        .chain(NOT_RUN.iter().map(|n| n.section))
}

/// Whether `text` has a top-level section of NvMultiObjectTracker's (`BaseConfig:`,
/// `TargetManagement:`, ...): how a configuration whose name does not say is told from TOML.
pub fn has_section(text: &str) -> bool {
    text.lines().any(|line| {
        section_names().any(|name| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
    })
}

/// Reads the YAML `text` of the file `path` over rstracker's defaults. Returns the
/// configuration and the warnings to post.
pub fn parse(path: &Path, text: &str) -> Result<(TrackerConfig, Vec<String>), String> {
    let ini = ferrostream_core::yaml::parse(path, text).map_err(|e| e.to_string())?;
    read(&ini)
}

/// The values of the [`Part`] keys, with their lines.
#[derive(Debug, Default)]
struct Parts {
    estimator: Option<(u32, usize)>,
    matcher: Option<(u32, usize)>,
    visual: Option<Entry>,
    reid: Option<Entry>,
}

impl Parts {
    fn read(&mut self, part: Part, entry: &Entry) -> Result<(), String> {
        let value = entry.value.trim();
        let number = |max: u32| {
            whole(value).and_then(|n| {
                (n <= max)
                    .then_some((n, entry.line))
                    .ok_or_else(|| format!("expected 0 to {max}, found {n}"))
            })
        };
        match part {
            Part::StateEstimator => self.estimator = Some(number(3)?),
            Part::Matcher => self.matcher = Some(number(1)?),
            Part::VisualWeight => self.visual = Some(entry.clone()),
            Part::ReidWeight => self.reid = Some(entry.clone()),
        }
        Ok(())
    }
}

/// What the file asks for and rstracker does not run, for the one warning about it.
#[derive(Debug, Default)]
struct NotDone(Vec<String>);

impl NotDone {
    fn add(&mut self, name: &str, line: usize, why: &str) {
        self.0.push(format!("{name} (line {line}: {why})"));
    }
}

fn read(ini: &IniFile) -> Result<(TrackerConfig, Vec<String>), String> {
    let file = ini.path.display();
    let mut props = Props::new(TrackerConfig::default());
    let mut warnings = Vec::new();
    let mut parts = Parts::default();
    let mut not_done = NotDone::default();
    for section in &ini.sections {
        if let Some(module) = NOT_RUN.iter().find(|n| n.section == section.name) {
            let off = module.type_key.is_some_and(|key| {
                (section.entries.iter()).any(|e| e.key == key && e.value.trim() == "0")
            });
            if !off {
                not_done.add(&section.name, section.line, module.what);
            }
            continue;
        }
        if section.name == LEGACY_SECTION {
            warnings.push(format!(
                "{file}:{}: section [{LEGACY_SECTION}] is DeepStream 5's layout, which \
                 NvMultiObjectTracker no longer reads either; its keys were ignored (they \
                 belong in BaseConfig, TargetManagement, ... now)",
                section.line
            ));
            continue;
        }
        if section.name.is_empty() {
            // Keys at the top level, outside any section.
            for entry in &section.entries {
                warnings.push(format!(
                    "{file}:{}: unknown key `{}` outside a section ignored",
                    entry.line, entry.key
                ));
            }
            continue;
        }
        if !ROWS.iter().any(|r| r.section == section.name) {
            warnings.push(format!(
                "{file}:{}: unknown section [{}] ignored",
                section.line, section.name
            ));
            continue;
        }
        for entry in &section.entries {
            let Some(row) = ROWS
                .iter()
                .find(|r| r.section == section.name && r.key == entry.key)
            else {
                warnings.push(format!(
                    "{file}:{}: unknown key `{}` in [{}] ignored",
                    entry.line, entry.key, section.name
                ));
                continue;
            };
            let fail = |message: String| {
                format!(
                    "{file}:{}: key `{}` in [{}]: {message}",
                    entry.line, entry.key, section.name
                )
            };
            match row.action {
                Action::Set(setting, convert) => {
                    let text = convert(&entry.value).map_err(fail)?;
                    set_text(&mut props, setting, &text)
                        .map_err(|m| fail(format!("{m} (rstracker's {setting})")))?;
                }
                Action::Part(part) => parts.read(part, entry).map_err(fail)?,
                Action::Accept {
                    check,
                    asks,
                    reason,
                } => {
                    check.check(&entry.value).map_err(fail)?;
                    if asks.is_some_and(|asks| asks(&entry.value)) {
                        not_done.add(&entry.key, entry.line, reason);
                    }
                }
            }
        }
    }
    let algorithm = apply_parts(&parts, &mut props, ini, &mut not_done)?;
    if !not_done.0.is_empty() {
        warnings.insert(
            0,
            format!(
                "{file}: not run here: {}. {}",
                not_done.0.join(", "),
                runs_instead(algorithm)
            ),
        );
    }
    Ok((props.values, warnings))
}

/// Sets the rstracker setting `name` from `text` (its range checked as a property's).
fn set_text(props: &mut Props<TrackerConfig>, name: &str, text: &str) -> Result<(), String> {
    SETTINGS
        .set_text(props, name, text)
        .unwrap_or_else(|| Err(format!("rstracker has no setting `{name}`")))
}

/// Sets what the [`Part`] keys decide: the algorithm (returned), the matcher, the Kalman
/// filter's noise model and the appearance weight.
fn apply_parts(
    parts: &Parts,
    props: &mut Props<TrackerConfig>,
    ini: &IniFile,
    not_done: &mut NotDone,
) -> Result<Algorithm, String> {
    let file = ini.path.display();
    // NvMultiObjectTracker's defaults: no state estimator, the greedy matcher.
    let (estimator, estimator_line) = parts.estimator.unwrap_or((0, 0));
    let (matcher, matcher_line) = parts.matcher.unwrap_or((0, 0));
    let algorithm = match (estimator, matcher) {
        (0, _) => Algorithm::Iou,
        (_, 1) => Algorithm::ByteTrack,
        _ => Algorithm::Sort,
    };
    set_text(props, "tracker-algorithm", algorithm.nick())?;
    set_text(
        props,
        "association-matcher",
        if matcher == 0 { "greedy" } else { "auto" },
    )?;
    if estimator == 0 && matcher == 1 {
        not_done.add(
            "associationMatcherType 1",
            matcher_line,
            "without a state estimator the iou algorithm associates in one greedy stage",
        );
    }
    match estimator {
        1 | 3 => set_text(props, "kalman-noise", "absolute")?,
        2 => set_text(props, "kalman-noise", "height-relative")?,
        _ => {}
    }
    if estimator == 3 {
        not_done.add(
            "stateEstimatorType 3",
            estimator_line,
            "the 3D foot-location filter needs ObjectModelProjection; a box Kalman filter with \
             the same variances runs instead",
        );
    }
    // The ReID weight when there is one: rstracker's appearance is a secondary model's
    // embedding, as NvDeepSORT's; else NvDCF's visual similarity weight stands for it.
    let appearance = match (&parts.reid, &parts.visual) {
        (Some(reid), _) if on(&reid.value) => Some(reid),
        (_, Some(visual)) => Some(visual),
        (reid, None) => reid.as_ref(),
    };
    if let Some(entry) = appearance {
        set_text(props, "appearance-weight", entry.value.trim()).map_err(|m| {
            format!(
                "{file}:{}: key `{}` in [{DA}]: {m} (rstracker's appearance-weight)",
                entry.line, entry.key
            )
        })?;
        // rstracker blends appearance in as (1 - w) * geometric + w * appearance, where
        // NvMultiObjectTracker adds w * appearance to the geometric sum: with the geometric
        // weights divided by (1 - w) the blend is that sum (appearance being (1 + cosine) / 2),
        // so the overall minimum keeps its meaning where both sides have embeddings; where they
        // do not, the geometric part stands for the whole, scaled by 1 / (1 - w).
        let w = props.values.appearance_weight;
        if w > 0.0 && w < 1.0 {
            props.values.iou_weight /= 1.0 - w;
            props.values.size_weight /= 1.0 - w;
        }
    }
    Ok(algorithm)
}

/// What rstracker runs instead of the modules it does not, for the warning about them.
fn runs_instead(algorithm: Algorithm) -> String {
    let association = match algorithm {
        Algorithm::Iou => {
            "greedy matching on box overlap and size, each target keeping its last box"
        }
        Algorithm::Sort => {
            "one stage matching Kalman-predicted boxes with detections on overlap and size (SORT)"
        }
        Algorithm::ByteTrack => {
            "Kalman-predicted boxes matched with confident detections on overlap and size, then \
             with tentative ones on overlap (the cascade, as ByteTrack)"
        }
    };
    format!(
        "rstracker runs {} instead: {association}; appearance comes from a secondary model's \
         embedding (embedding-attribute), weighted by appearance-weight",
        algorithm.nick()
    )
}

#[cfg(test)]
mod tests;
