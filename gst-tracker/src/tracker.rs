// SPDX-License-Identifier: MIT OR Apache-2.0
//! The tracking loop of one source: IoU (greedy), SORT (Kalman + optimal assignment) and
//! ByteTrack (two-stage association on high- then low-confidence detections).
//!
//! Target management follows DeepStream's tracker configuration: a new target is reported once it
//! was matched `probation_age` times in a row (a miss during probation drops it); a confirmed
//! target that loses its detection is kept as a shadow, predicted by its motion model, for
//! `max_shadow_age` frames, then terminated.

use ferrostream_core::BBox;

use crate::assignment::{greedy, sparse_hungarian};
use crate::grid::BoxGrid;
use crate::kalman::KalmanBox;

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

/// Tracker settings (DeepStream names where they exist).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackerConfig {
    pub algorithm: Algorithm,
    /// Consecutive matches before a target is reported.
    pub probation_age: u32,
    /// Frames a lost target is kept and predicted before it is terminated.
    pub max_shadow_age: u32,
    /// Detections below this confidence are ignored.
    pub min_detector_confidence: f32,
    /// ByteTrack: detections at or above this confidence are associated first and may start new
    /// targets; those between `min_detector_confidence` and this only continue targets.
    pub high_confidence: f32,
    /// Shadow targets whose confidence fell below this are not reported.
    pub min_tracker_confidence: f32,
    /// Minimum IoU between a target's (predicted) box and a detection to associate them.
    pub iou_threshold: f32,
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
}

/// The default [`TrackerConfig::embedding_attribute`].
pub const DEFAULT_EMBEDDING_ATTRIBUTE: &str = "embedding";

impl Default for TrackerConfig {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::ByteTrack,
            probation_age: 2,
            max_shadow_age: 30,
            min_detector_confidence: 0.1,
            high_confidence: 0.5,
            min_tracker_confidence: 0.2,
            iou_threshold: 0.2,
            operate_on_class_ids: Vec::new(),
            report_shadow: true,
            report_terminated: true,
            appearance_weight: 0.0,
            embedding_attribute: DEFAULT_EMBEDDING_ATTRIBUTE.to_string(),
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

    fn predict(&mut self) {
        if let Motion::Kalman(k) = self {
            k.predict();
        }
    }

    fn update(&mut self, b: &BBox) {
        match self {
            Motion::Kalman(k) => k.update(b),
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
        for t in &mut self.tracks {
            t.motion.predict();
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
        for t in &mut self.tracks {
            t.motion.predict();
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
        match cfg.algorithm {
            Algorithm::Iou | Algorithm::Sort => {
                let max_cost = 1.0 - cfg.iou_threshold;
                let pairs = self.associate(&all_tracks, usable, detections, max_cost);
                for (t, d) in pairs {
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
                // 1. Confirmed and shadow targets take the confident detections.
                for (t, d) in
                    self.associate(&confirmed, &high_dets, detections, 1.0 - cfg.iou_threshold)
                {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
                // 2. Targets still unmatched (and seen last frame) take weak detections, e.g.
                //    partly occluded objects, at a stricter overlap.
                let remaining: Vec<usize> = confirmed
                    .iter()
                    .copied()
                    .filter(|&t| matched_track[t].is_none() && self.tracks[t].misses == 0)
                    .collect();
                for (t, d) in self.associate(&remaining, &low_dets, detections, 0.5) {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
                // 3. Targets on probation take what confident detections are left.
                let left: Vec<usize> = high_dets
                    .iter()
                    .copied()
                    .filter(|&d| !det_used[d])
                    .collect();
                for (t, d) in self.associate(&tentative, &left, detections, 0.7) {
                    matched_track[t] = Some(d);
                    det_used[d] = true;
                }
            }
        }
        matched_track
    }

    /// Updates the matched targets, ages the others, and drops what is done: targets that
    /// missed during probation, shadows past `max_shadow_age`, the oldest shadows beyond
    /// [`MAX_SHADOW_TRACKS`].
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
                    track.motion.update(&det.bbox);
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
                None if !track.confirmed => {} // a miss during probation ends it
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

    /// New targets from the detections no target took (ByteTrack: only confident ones).
    fn start_targets(
        &mut self,
        detections: &[Detection],
        usable: &[usize],
        det_used: &[bool],
        ids: &mut IdAllocator,
        result: &mut FrameResult,
    ) {
        for &d in usable {
            let det = &detections[d];
            if det_used[d]
                || (self.config.algorithm == Algorithm::ByteTrack
                    && det.confidence < self.config.high_confidence)
            {
                continue;
            }
            let motion = match self.config.algorithm {
                Algorithm::Iou => Motion::Last(det.bbox),
                _ => Motion::Kalman(KalmanBox::new(&det.bbox)),
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

    /// The association cost of a candidate pair: overlap, blended with appearance when both
    /// sides have an embedding and `appearance_weight` asks for it.
    fn blend_cost(&self, iou_cost: f32, track: &Track, det: &Detection) -> f32 {
        let w = self.config.appearance_weight;
        match (&track.embedding, &det.embedding) {
            (Some(t), Some(d)) if w > 0.0 => {
                let norm = d.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                let cosine = t.iter().zip(d).map(|(a, b)| a * b).sum::<f32>() / norm;
                (1.0 - w) * iou_cost + w * (1.0 - cosine).clamp(0.0, 2.0) / 2.0
            }
            _ => iou_cost,
        }
    }

    /// Matches `tracks` to `dets` (indices) by IoU cost, same class only.
    fn associate(
        &self,
        tracks: &[usize],
        dets: &[usize],
        detections: &[Detection],
        max_cost: f32,
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
                let det = &detections[dets[j]];
                if det.class_id == track.class_id {
                    let cost = 1.0 - tb.iou(&det.bbox);
                    if cost <= max_cost {
                        pairs.push((i, j, self.blend_cost(cost, track, det)));
                    }
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
        let matched = if self.config.algorithm == Algorithm::Iou {
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

#[cfg(test)]
mod tests {
    use super::*;

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
