// SPDX-License-Identifier: MIT OR Apache-2.0
//! The tracking loop of one source: IoU (greedy), SORT (Kalman + optimal assignment) and
//! ByteTrack (two-stage association on high- then low-confidence detections).
//!
//! Target management follows DeepStream's tracker configuration (NvMultiObjectTracker): a new
//! target is reported once it was matched `probation_age` times; `early_termination_age`
//! consecutive misses during probation end it (1: the first miss); a confirmed target that
//! loses its detection is kept as a shadow, predicted by its motion model, for `max_shadow_age`
//! frames, then terminated. A source keeps at most `max_targets` targets.
//!
//! A detection and a target are matched on a score, NvMultiObjectTracker's weighted sum
//! `iou_weight * IoU + size_weight * size similarity`, blended with the appearance similarity
//! (`appearance_weight`) when both have an embedding; each part has a minimum (`iou_threshold`,
//! `min_size_similarity`, `min_matching_score` for the whole). ByteTrack's later stages, as
//! NvMultiObjectTracker's cascade, match on overlap alone.

use ferrostream_core::BBox;

use crate::assignment::{greedy, sparse_hungarian};
use crate::grid::BoxGrid;
use crate::kalman::{KalmanBox, Noise};

ferrostream_core::choice_enum! {
    /// Association algorithm (property `tracker-algorithm`, key `algorithm`).
    #[derive(Default)]
    pub enum Algorithm: "GstRsTrackerAlgorithm" {
        /// Greedy IoU matching; the box is the last detection.
        Iou = 0 => ("iou", "IoU: greedy overlap matching"),
        /// Kalman prediction and optimal IoU assignment in one stage.
        Sort = 1 => ("sort", "SORT: Kalman filter and optimal assignment"),
        /// Kalman prediction, optimal assignment of high-confidence detections first, then of
        /// the low-confidence ones to the targets still unmatched.
        #[default]
        ByteTrack = 2 => ("bytetrack", "ByteTrack: high- then low-confidence association"),
    }
}

ferrostream_core::choice_enum! {
    /// How each association stage pairs targets with detections (property
    /// `association-matcher`).
    #[derive(Default)]
    pub enum Matcher: "GstRsTrackerMatcher" {
        /// Greedy for `iou`, optimal for `sort` and `bytetrack`.
        #[default]
        Auto = 0 => ("auto", "Greedy for iou, optimal for sort and bytetrack"),
        /// The best-scoring free pair first, then the next (NvMultiObjectTracker's GREEDY).
        Greedy = 1 => ("greedy", "Greedy: the best-scoring free pair first"),
        /// The assignment with the least total cost (Hungarian method).
        Optimal = 2 => ("optimal", "Optimal: least total cost (Hungarian method)"),
    }
}

/// Tracker settings (DeepStream names where they exist).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackerConfig {
    pub algorithm: Algorithm,
    /// Matches before a target is reported (consecutive, unless `early_termination_age` lets a
    /// target on probation miss).
    pub probation_age: u32,
    /// Consecutive misses that end a target still on probation; 1 ends it at its first miss.
    pub early_termination_age: u32,
    /// Frames a lost target is kept and predicted before it is terminated.
    pub max_shadow_age: u32,
    /// Most targets of one source, lost and on probation ones included; 0: no limit. Detections
    /// beyond it start no target (the most confident ones go first).
    pub max_targets: u32,
    /// A detection no target took starts a new target only if its IoU with every target is at
    /// most this; 1 lets every such detection start one.
    pub new_target_max_iou: f32,
    /// Detections below this confidence are ignored.
    pub min_detector_confidence: f32,
    /// ByteTrack: detections at or above this confidence are associated first and may start new
    /// targets; those between `min_detector_confidence` and this only continue targets.
    pub high_confidence: f32,
    /// Shadow targets whose confidence fell below this are not reported.
    pub min_tracker_confidence: f32,
    /// Minimum IoU between a target's (predicted) box and a detection to associate them.
    pub iou_threshold: f32,
    /// ByteTrack: minimum IoU for a low-confidence detection to continue a target.
    pub low_confidence_iou_threshold: f32,
    /// Weight of the IoU in the matching score.
    pub iou_weight: f32,
    /// Weight of the size similarity (width ratio times height ratio, each the smaller over
    /// the larger) in the matching score.
    pub size_weight: f32,
    /// Minimum size similarity to associate.
    pub min_size_similarity: f32,
    /// Minimum matching score (the weighted sum, blended with appearance) to associate.
    pub min_matching_score: f32,
    /// Greedy or optimal pairing.
    pub matcher: Matcher,
    /// Associate only detections and targets of the same class.
    pub check_class_match: bool,
    /// Classes to track; empty tracks every class.
    pub operate_on_class_ids: Vec<i32>,
    /// Report shadow targets (predicted, without a detection this frame).
    pub report_shadow: bool,
    /// List the ids of targets that ended in each frame (`Frame::terminated_ids`).
    pub report_terminated: bool,
    /// Weight of appearance (cosine distance of embeddings) against overlap in the association
    /// cost, 0..1; 0 ignores embeddings. Only pairs that pass `iou_threshold` are candidates.
    pub appearance_weight: f32,
    /// The object attribute (a list of floats) holding the appearance embedding, e.g.
    /// `tensor:<gie-unique-id>:<output>` as secondary inference with `output-tensor-meta`
    /// attaches it.
    pub embedding_attribute: String,
    /// The Kalman filter's noise (`sort` and `bytetrack`).
    pub kalman: Noise,
}

/// The default [`TrackerConfig::embedding_attribute`].
pub const DEFAULT_EMBEDDING_ATTRIBUTE: &str = "embedding";

impl Default for TrackerConfig {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::ByteTrack,
            probation_age: 2,
            early_termination_age: 1,
            max_shadow_age: 30,
            max_targets: 0,
            new_target_max_iou: 1.0,
            min_detector_confidence: 0.1,
            high_confidence: 0.5,
            min_tracker_confidence: 0.2,
            iou_threshold: 0.2,
            low_confidence_iou_threshold: 0.5,
            iou_weight: 1.0,
            size_weight: 0.0,
            min_size_similarity: 0.0,
            min_matching_score: 0.0,
            matcher: Matcher::Auto,
            check_class_match: true,
            operate_on_class_ids: Vec::new(),
            report_shadow: true,
            report_terminated: true,
            appearance_weight: 0.0,
            embedding_attribute: DEFAULT_EMBEDDING_ATTRIBUTE.to_string(),
            kalman: Noise::default(),
        }
    }
}

/// A detection given to the tracker.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    pub bbox: BBox,
    pub confidence: f32,
    pub class_id: i32,
    /// Appearance embedding from a secondary model, if any (any length, not normalised).
    pub embedding: Option<Vec<f32>>,
}

impl Detection {
    /// A detection without an appearance embedding.
    pub fn new(bbox: BBox, confidence: f32, class_id: i32) -> Self {
        Self {
            bbox,
            confidence,
            class_id,
            embedding: None,
        }
    }
}

/// A reported target.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackOutput {
    pub id: u64,
    pub class_id: i32,
    /// The tracker's (smoothed or predicted) box.
    pub bbox: BBox,
    /// The detection associated this frame (index into the detections given), if any.
    pub detection: Option<usize>,
    pub confidence: f32,
    /// Frames since the target was first seen.
    pub age: u32,
}

/// What one frame produced: the targets to report and the ids that ended in this frame.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrameResult {
    pub tracks: Vec<TrackOutput>,
    pub terminated: Vec<u64>,
}

/// Hands out object ids; one allocator shared by every source keeps ids unique across sources.
#[derive(Debug, Default)]
pub struct IdAllocator {
    next: u64,
}

impl IdAllocator {
    pub fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

#[derive(Debug, Clone)]
struct Track {
    id: Option<u64>,
    class_id: i32,
    motion: Motion,
    hits: u32,
    misses: u32,
    age: u32,
    confidence: f32,
    confirmed: bool,
    /// Smoothed, unit-length appearance embedding.
    embedding: Option<Vec<f32>>,
}

// Nearly every target uses the Kalman variant; boxing it would only add an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum Motion {
    Kalman(KalmanBox),
    /// The IoU tracker keeps the last detection.
    Last(BBox),
}

impl Motion {
    fn bbox(&self) -> BBox {
        match self {
            Motion::Kalman(k) => k.bbox(),
            Motion::Last(b) => *b,
        }
    }

    fn predict(&mut self, noise: &Noise) {
        if let Motion::Kalman(k) = self {
            k.predict(noise);
        }
    }

    fn update(&mut self, b: &BBox, noise: &Noise) {
        match self {
            Motion::Kalman(k) => k.update(b, noise),
            Motion::Last(last) => *last = *b,
        }
    }
}

/// Exponential moving average of a target's embedding with a new observation, kept unit length.
fn blend_embedding(old: Option<Vec<f32>>, new: Option<&[f32]>) -> Option<Vec<f32>> {
    const KEEP: f32 = 0.9;
    let Some(new) = new else {
        return old;
    };
    let norm = new.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    let mut e: Vec<f32> = match old {
        Some(old) if old.len() == new.len() => old
            .iter()
            .zip(new)
            .map(|(o, n)| KEEP * o + (1.0 - KEEP) * n / norm)
            .collect(),
        _ => new.iter().map(|n| n / norm).collect(),
    };
    let len = e.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    e.iter_mut().for_each(|v| *v /= len);
    Some(e)
}

/// Above this many track-detection pairs, candidates come from a grid rather than all pairs.
const GRID_MIN_PAIRS: usize = 4096;

/// ByteTrack's third stage: one minus the least IoU (0.3) for a target on probation to take a
/// confident detection that the confirmed targets left.
const PROBATION_MAX_COST: f32 = 0.7;

/// How much a shadow target's confidence decays per frame without a detection.
const SHADOW_DECAY: f32 = 0.9;

/// The most lost targets a tracker keeps predicting at once. `max-shadow-age` (from the file or
/// the element) decides how long each is kept, so without this bound a long age and a busy
/// scene would keep every target ever seen; past it, the targets lost longest end first.
pub const MAX_SHADOW_TRACKS: usize = 1024;

/// The targets of one source.
#[derive(Debug)]
pub struct Tracker {
    config: TrackerConfig,
    tracks: Vec<Track>,
}

impl Tracker {
    pub fn new(config: TrackerConfig) -> Self {
        Self {
            config,
            tracks: Vec::new(),
        }
    }

    pub fn config(&self) -> &TrackerConfig {
        &self.config
    }

    /// Forgets every target (stream reset). Returns the ids that were live.
    pub fn reset(&mut self) -> Vec<u64> {
        self.tracks.drain(..).filter_map(|t| t.id).collect()
    }

    fn tracks_class(&self, class_id: i32) -> bool {
        self.config.operate_on_class_ids.is_empty()
            || self.config.operate_on_class_ids.contains(&class_id)
    }

    /// A frame without detections to use (inference skipped it): targets move with their
    /// motion model, nobody ages out, and confirmed targets are reported.
    pub fn predict_only(&mut self) -> FrameResult {
        let noise = &self.config.kalman;
        for t in &mut self.tracks {
            t.motion.predict(noise);
            t.age += 1;
        }
        FrameResult {
            tracks: self
                .tracks
                .iter()
                .filter(|t| t.confirmed && t.misses == 0)
                .map(|t| self.output(t, None))
                .collect(),
            terminated: Vec::new(),
        }
    }

    /// Associates this frame's detections with the targets.
    pub fn update(&mut self, detections: &[Detection], ids: &mut IdAllocator) -> FrameResult {
        let cfg = &self.config;
        let usable: Vec<usize> = (0..detections.len())
            .filter(|&i| {
                detections[i].confidence >= cfg.min_detector_confidence
                    && self.tracks_class(detections[i].class_id)
            })
            .collect();
        let noise = &self.config.kalman;
        for t in &mut self.tracks {
            t.motion.predict(noise);
            t.age += 1;
        }
        let matched_track = self.match_targets(detections, &usable);
        let mut det_used = vec![false; detections.len()];
        for &d in matched_track.iter().flatten() {
            det_used[d] = true;
        }
        let mut result = FrameResult::default();
        self.advance(detections, &matched_track, ids, &mut result);
        self.start_targets(detections, &usable, &det_used, ids, &mut result);
        result
    }

    /// The detection each target takes (by target index), as the algorithm associates them.
    fn match_targets(&self, detections: &[Detection], usable: &[usize]) -> Vec<Option<usize>> {
        let cfg = &self.config;
        let mut matched_track = vec![None::<usize>; self.tracks.len()];
        let mut det_used = vec![false; detections.len()];
        let all_tracks: Vec<usize> = (0..self.tracks.len()).collect();
        let joint = Stage {
            max_iou_cost: 1.0 - cfg.iou_threshold,
            joint: true,
        };
        match cfg.algorithm {
            Algorithm::Iou | Algorithm::Sort => {
                for (t, d) in self.associate(&all_tracks, usable, detections, joint) {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
            }
            Algorithm::ByteTrack => {
                let (high_dets, low_dets): (Vec<usize>, Vec<usize>) = usable
                    .iter()
                    .partition(|&&i| detections[i].confidence >= cfg.high_confidence);
                let confirmed: Vec<usize> = all_tracks
                    .iter()
                    .copied()
                    .filter(|&t| self.tracks[t].confirmed)
                    .collect();
                let tentative: Vec<usize> = all_tracks
                    .iter()
                    .copied()
                    .filter(|&t| !self.tracks[t].confirmed)
                    .collect();
                // 1. Confirmed and shadow targets take the confident detections, on the whole
                //    score.
                for (t, d) in self.associate(&confirmed, &high_dets, detections, joint) {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
                // 2. Targets still unmatched (and seen last frame) take weak detections, e.g.
                //    partly occluded objects, on overlap alone, at a stricter overlap.
                let remaining: Vec<usize> = confirmed
                    .iter()
                    .copied()
                    .filter(|&t| matched_track[t].is_none() && self.tracks[t].misses == 0)
                    .collect();
                let weak = Stage {
                    max_iou_cost: 1.0 - cfg.low_confidence_iou_threshold,
                    joint: false,
                };
                for (t, d) in self.associate(&remaining, &low_dets, detections, weak) {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
                // 3. Targets on probation take what confident detections are left.
                let left: Vec<usize> = high_dets
                    .iter()
                    .copied()
                    .filter(|&d| !det_used[d])
                    .collect();
                let probation = Stage {
                    max_iou_cost: PROBATION_MAX_COST,
                    joint: false,
                };
                for (t, d) in self.associate(&tentative, &left, detections, probation) {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
            }
        }
        matched_track
    }

    /// Updates the matched targets, ages the others, and drops what is done: targets that
    /// missed `early_termination_age` times in a row during probation, shadows past
    /// `max_shadow_age`, the oldest shadows beyond [`MAX_SHADOW_TRACKS`].
    fn advance(
        &mut self,
        detections: &[Detection],
        matched_track: &[Option<usize>],
        ids: &mut IdAllocator,
        result: &mut FrameResult,
    ) {
        let mut keep = Vec::with_capacity(self.tracks.len());
        for (t, mut track) in std::mem::take(&mut self.tracks).into_iter().enumerate() {
            match matched_track[t] {
                Some(d) => {
                    let det = &detections[d];
                    track.motion.update(&det.bbox, &self.config.kalman);
                    // Without the class check a target follows its detection's class.
                    track.class_id = det.class_id;
                    track.embedding =
                        blend_embedding(track.embedding.take(), det.embedding.as_deref());
                    track.hits += 1;
                    track.misses = 0;
                    track.confidence = det.confidence;
                    if !track.confirmed && track.hits >= self.config.probation_age {
                        track.confirmed = true;
                        track.id = Some(ids.next_id());
                    }
                    if track.confirmed {
                        result.tracks.push(self.output(&track, Some(d)));
                    }
                    keep.push(track);
                }
                None if !track.confirmed => {
                    // Never reported, so it ends without a terminated id.
                    track.misses += 1;
                    if track.misses < self.config.early_termination_age {
                        keep.push(track);
                    }
                }
                None => {
                    track.misses += 1;
                    track.confidence *= SHADOW_DECAY;
                    if track.misses > self.config.max_shadow_age {
                        result.terminated.extend(track.id);
                        continue;
                    }
                    if self.config.report_shadow
                        && track.confidence >= self.config.min_tracker_confidence
                    {
                        result.tracks.push(self.output(&track, None));
                    }
                    keep.push(track);
                }
            }
        }
        let shadows = keep.iter().filter(|t| t.misses > 0).count();
        if shadows > MAX_SHADOW_TRACKS {
            let mut lost: Vec<(u32, usize)> = (keep.iter().enumerate())
                .filter(|(_, t)| t.misses > 0)
                .map(|(i, t)| (t.misses, i))
                .collect();
            // Lost longest first; among equals, the older track first.
            lost.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut end = vec![false; keep.len()];
            for &(_, i) in &lost[..shadows - MAX_SHADOW_TRACKS] {
                end[i] = true;
                result.terminated.extend(keep[i].id);
            }
            let mut index = 0;
            keep.retain(|_| {
                index += 1;
                !end[index - 1]
            });
        }
        self.tracks = keep;
    }

    /// New targets from the detections no target took (ByteTrack: only confident ones), unless
    /// they overlap a target by more than `new_target_max_iou` or the source has `max_targets`.
    fn start_targets(
        &mut self,
        detections: &[Detection],
        usable: &[usize],
        det_used: &[bool],
        ids: &mut IdAllocator,
        result: &mut FrameResult,
    ) {
        let cfg = &self.config;
        let mut new: Vec<usize> = usable
            .iter()
            .copied()
            .filter(|&d| {
                // ByteTrack starts targets from confident detections only.
                let weak = cfg.algorithm == Algorithm::ByteTrack
                    && detections[d].confidence < cfg.high_confidence;
                !det_used[d] && !weak
            })
            .collect();
        if cfg.max_targets > 0 {
            // When there is room for some only, the most confident start (stable among equals).
            new.sort_by(|&a, &b| {
                detections[b]
                    .confidence
                    .total_cmp(&detections[a].confidence)
            });
        }
        for d in new {
            if self.config.max_targets > 0 && self.tracks.len() >= self.config.max_targets as usize
            {
                break;
            }
            let det = &detections[d];
            // A detection on top of a target (one just started included) is taken for a
            // duplicate of it rather than a new object.
            if self.config.new_target_max_iou < 1.0
                && self
                    .tracks
                    .iter()
                    .any(|t| t.motion.bbox().iou(&det.bbox) > self.config.new_target_max_iou)
            {
                continue;
            }
            let motion = match self.config.algorithm {
                Algorithm::Iou => Motion::Last(det.bbox),
                _ => Motion::Kalman(KalmanBox::new(&det.bbox, &self.config.kalman)),
            };
            let mut track = Track {
                id: None,
                class_id: det.class_id,
                motion,
                hits: 1,
                misses: 0,
                age: 0,
                confidence: det.confidence,
                confirmed: false,
                embedding: blend_embedding(None, det.embedding.as_deref()),
            };
            if self.config.probation_age <= 1 {
                track.confirmed = true;
                track.id = Some(ids.next_id());
                result.tracks.push(self.output(&track, Some(d)));
            }
            self.tracks.push(track);
        }
    }

    fn output(&self, t: &Track, detection: Option<usize>) -> TrackOutput {
        TrackOutput {
            id: t.id.expect("reported targets are confirmed"),
            class_id: t.class_id,
            bbox: t.motion.bbox(),
            detection,
            confidence: t.confidence,
            age: t.age,
        }
    }

    /// The association cost of a candidate pair: `geometric_cost` (one minus the overlap, or
    /// minus the weighted score), blended with appearance when both sides have an embedding and
    /// `appearance_weight` asks for it.
    fn blend_cost(&self, geometric_cost: f32, track: &Track, det: &Detection) -> f32 {
        let w = self.config.appearance_weight;
        match (&track.embedding, &det.embedding) {
            (Some(t), Some(d)) if w > 0.0 => {
                let norm = d.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                let cosine = t.iter().zip(d).map(|(a, b)| a * b).sum::<f32>() / norm;
                (1.0 - w) * geometric_cost + w * (1.0 - cosine).clamp(0.0, 2.0) / 2.0
            }
            _ => geometric_cost,
        }
    }

    /// The cost of pairing `track` (at `tb`) with `det` in `stage`, or `None` when a gate
    /// refuses the pair: no overlap or less than the stage's, another class, and in a joint
    /// stage a size similarity or a whole score below its minimum. The whole score is one minus
    /// the cost, so with the default weights the cost is one minus the IoU, as SORT's.
    fn pair_cost(&self, track: &Track, tb: &BBox, det: &Detection, stage: Stage) -> Option<f32> {
        let cfg = &self.config;
        if cfg.check_class_match && det.class_id != track.class_id {
            return None;
        }
        let iou = tb.iou(&det.bbox);
        // A target never takes a detection it does not touch, whatever the thresholds say.
        if iou <= 0.0 || 1.0 - iou > stage.max_iou_cost {
            return None;
        }
        if !stage.joint {
            return Some(self.blend_cost(1.0 - iou, track, det));
        }
        let size = size_similarity(tb, &det.bbox);
        if size < cfg.min_size_similarity {
            return None;
        }
        let score = cfg.iou_weight * iou + cfg.size_weight * size;
        let cost = self.blend_cost(1.0 - score, track, det);
        // Without a minimum nothing is compared, so rounding cannot refuse a pair either.
        (cfg.min_matching_score <= 0.0 || 1.0 - cost >= cfg.min_matching_score).then_some(cost)
    }

    /// Matches `tracks` to `dets` (indices) on the costs of `stage`.
    fn associate(
        &self,
        tracks: &[usize],
        dets: &[usize],
        detections: &[Detection],
        stage: Stage,
    ) -> Vec<(usize, usize)> {
        if tracks.is_empty() || dets.is_empty() {
            return Vec::new();
        }
        // Candidate pairs only: same class and enough overlap. In crowded frames a grid over the
        // detections avoids testing every pair.
        let mut grid = (tracks.len() * dets.len() > GRID_MIN_PAIRS).then(|| {
            let boxes: Vec<BBox> = dets.iter().map(|&d| detections[d].bbox).collect();
            let mean =
                boxes.iter().map(|b| b.width.max(b.height)).sum::<f32>() / boxes.len() as f32;
            (BoxGrid::new(&boxes, 2.0 * mean), Vec::new())
        });
        let mut pairs = Vec::new();
        for (i, &t) in tracks.iter().enumerate() {
            let track = &self.tracks[t];
            let tb = track.motion.bbox();
            let mut consider = |j: usize| {
                if let Some(cost) = self.pair_cost(track, &tb, &detections[dets[j]], stage) {
                    pairs.push((i, j, cost));
                }
            };
            match grid.as_mut() {
                Some((grid, near)) => {
                    grid.near(&tb, near);
                    near.iter().for_each(|&j| consider(j));
                }
                None => (0..dets.len()).for_each(consider),
            }
        }
        let greedy_matching = match self.config.matcher {
            Matcher::Auto => self.config.algorithm == Algorithm::Iou,
            Matcher::Greedy => true,
            Matcher::Optimal => false,
        };
        let matched = if greedy_matching {
            greedy(tracks.len(), dets.len(), &mut pairs)
        } else {
            sparse_hungarian(tracks.len(), dets.len(), &pairs)
        };
        matched
            .into_iter()
            .map(|(i, j)| (tracks[i], dets[j]))
            .collect()
    }
}

/// One association stage's gates.
#[derive(Debug, Clone, Copy)]
struct Stage {
    /// One minus the least IoU a pair needs.
    max_iou_cost: f32,
    /// Scored on the whole score (IoU and size weights, size and score minimums), rather than
    /// on overlap alone.
    joint: bool,
}

/// How alike two boxes' sizes are, 0..1: the smaller width over the larger times the smaller
/// height over the larger (1 for equal sizes; a box twice as wide scores 0.5, one half as wide
/// and half as tall 0.25).
pub fn size_similarity(a: &BBox, b: &BBox) -> f32 {
    let ratio = |x: f32, y: f32| {
        let (x, y) = (x.max(0.0), y.max(0.0));
        if x.max(y) <= 0.0 {
            0.0
        } else {
            x.min(y) / x.max(y)
        }
    };
    ratio(a.width, b.width) * ratio(a.height, b.height)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(left: f32) -> BBox {
        BBox::new(left, 0.0, 40.0, 100.0)
    }

    /// The target ids that took detections 0, 1, ... (`None`: no target took it).
    fn takers(result: &FrameResult, detections: usize) -> Vec<Option<u64>> {
        (0..detections)
            .map(|d| {
                (result.tracks.iter())
                    .find(|t| t.detection == Some(d))
                    .map(|t| t.id)
            })
            .collect()
    }

    #[test]
    fn size_similarity_is_the_product_of_the_side_ratios() {
        let a = BBox::new(0.0, 0.0, 100.0, 50.0);
        assert_eq!(size_similarity(&a, &a), 1.0);
        assert_eq!(size_similarity(&a, &BBox::new(9.0, 9.0, 50.0, 50.0)), 0.5);
        assert_eq!(size_similarity(&a, &BBox::new(0.0, 0.0, 50.0, 100.0)), 0.25);
        assert_eq!(size_similarity(&a, &BBox::new(0.0, 0.0, 0.0, 0.0)), 0.0);
    }

    /// Where the best pair blocks a second match, greedy matching takes it and optimal
    /// matching gives both targets a detection.
    #[test]
    fn greedy_and_optimal_matchers_differ_where_the_best_pair_blocks_another() {
        let run = |matcher: Matcher| {
            let mut tracker = Tracker::new(TrackerConfig {
                algorithm: Algorithm::Sort,
                matcher,
                probation_age: 1,
                ..TrackerConfig::default()
            });
            let mut ids = IdAllocator::default();
            let first = tracker.update(
                &[
                    Detection::new(boxed(0.0), 0.9, 0),
                    Detection::new(boxed(30.0), 0.9, 0),
                ],
                &mut ids,
            );
            let [a, b] = takers(&first, 2)[..] else {
                unreachable!()
            };
            // Detection 0 overlaps target a by 0.78 and b by 0.23; detection 1 only a, by 0.33.
            let next = tracker.update(
                &[
                    Detection::new(boxed(5.0), 0.9, 0),
                    Detection::new(boxed(-20.0), 0.9, 0),
                ],
                &mut ids,
            );
            (takers(&next, 2), a, b)
        };
        let (optimal, a, b) = run(Matcher::Auto);
        assert_eq!(optimal, vec![b, a]);
        let (greedy, a, _) = run(Matcher::Greedy);
        assert_eq!(greedy[0], a);
        assert_ne!(greedy[1], a, "detection 1 starts a new target");
        assert_eq!(run(Matcher::Optimal).0, optimal);
    }

    /// The weighted score and its minimum: a shifted box of the same size passes, a shrunk one
    /// with the same overlap does not.
    #[test]
    fn min_matching_score_gates_the_weighted_score() {
        let run = |next: BBox| {
            let mut tracker = Tracker::new(TrackerConfig {
                algorithm: Algorithm::Iou,
                probation_age: 1,
                iou_weight: 0.5,
                size_weight: 0.5,
                min_matching_score: 0.7,
                ..TrackerConfig::default()
            });
            let mut ids = IdAllocator::default();
            let first = tracker.update(&[Detection::new(boxed(0.0), 0.9, 0)], &mut ids);
            let next = tracker.update(&[Detection::new(next, 0.9, 0)], &mut ids);
            takers(&next, 1)[0] == Some(first.tracks[0].id)
        };
        // IoU 0.6 and size 1: score 0.8.
        assert!(run(boxed(10.0)));
        // IoU 0.6 and size 0.6: score 0.6.
        assert!(!run(BBox::new(0.0, 0.0, 40.0, 60.0)));
    }

    #[test]
    fn a_detection_on_top_of_a_target_starts_none_under_new_target_max_iou() {
        let count = |new_target_max_iou: f32| {
            let mut tracker = Tracker::new(TrackerConfig {
                algorithm: Algorithm::Iou,
                probation_age: 1,
                new_target_max_iou,
                ..TrackerConfig::default()
            });
            let mut ids = IdAllocator::default();
            tracker.update(&[Detection::new(boxed(0.0), 0.9, 0)], &mut ids);
            // A duplicate detection overlapping the target by 0.6.
            let dets = [
                Detection::new(boxed(0.0), 0.9, 0),
                Detection::new(boxed(10.0), 0.8, 0),
            ];
            tracker.update(&dets, &mut ids).tracks.len()
        };
        assert_eq!(count(1.0), 2);
        assert_eq!(count(0.7), 2);
        assert_eq!(count(0.5), 1);
    }

    #[test]
    fn without_the_class_check_a_target_follows_a_detection_of_another_class() {
        let run = |check_class_match: bool| {
            let mut tracker = Tracker::new(TrackerConfig {
                probation_age: 1,
                check_class_match,
                ..TrackerConfig::default()
            });
            let mut ids = IdAllocator::default();
            let first = tracker.update(&[Detection::new(boxed(0.0), 0.9, 0)], &mut ids);
            let next = tracker.update(&[Detection::new(boxed(2.0), 0.9, 3)], &mut ids);
            let taker = next.tracks.iter().find(|t| t.detection == Some(0)).unwrap();
            (taker.id == first.tracks[0].id, taker.class_id)
        };
        assert_eq!(run(true), (false, 3));
        assert_eq!(run(false), (true, 3));
    }

    /// ByteTrack's second stage: a weak detection continues a target from the overlap
    /// `low_confidence_iou_threshold` asks for.
    #[test]
    fn low_confidence_detections_continue_targets_above_their_own_threshold() {
        let continued = |low_confidence_iou_threshold: f32| {
            let mut tracker = Tracker::new(TrackerConfig {
                low_confidence_iou_threshold,
                ..TrackerConfig::default()
            });
            let mut ids = IdAllocator::default();
            for _ in 0..3 {
                tracker.update(&[Detection::new(boxed(0.0), 0.9, 0)], &mut ids);
            }
            // Weak (0.3 < high-confidence 0.5), overlapping by 24 / 56 = 0.43.
            let next = tracker.update(&[Detection::new(boxed(16.0), 0.3, 0)], &mut ids);
            takers(&next, 1)[0].is_some()
        };
        assert!(!continued(0.5));
        assert!(continued(0.4));
    }

    /// A very long max-shadow-age in a scene where every frame brings a new target and loses
    /// the last one: the lost targets kept are bounded, and those lost longest end first.
    #[test]
    fn lost_targets_are_bounded_whatever_max_shadow_age_says() {
        let mut tracker = Tracker::new(TrackerConfig {
            algorithm: Algorithm::Iou,
            probation_age: 1,
            max_shadow_age: u32::MAX,
            ..TrackerConfig::default()
        });
        let mut ids = IdAllocator::default();
        let mut ended = Vec::new();
        for frame in 0..3000u32 {
            // Far from every earlier box: never matched again.
            let x = (frame % 100) as f32 * 100.0;
            let y = (frame / 100) as f32 * 100.0;
            let detection = Detection::new(BBox::new(x, y, 10.0, 10.0), 0.9, 0);
            let result = tracker.update(&[detection], &mut ids);
            ended.extend(result.terminated);
        }
        assert_eq!(tracker.tracks.len(), MAX_SHADOW_TRACKS + 1);
        // The first targets (ids 1, 2, ...) ended first, in order.
        assert_eq!(ended.len(), 3000 - MAX_SHADOW_TRACKS - 1);
        assert!(
            ended
                .iter()
                .zip(1u64..)
                .all(|(&id, expected)| id == expected),
            "ended out of order: {:?}",
            &ended[..ended.len().min(20)]
        );
    }
}
