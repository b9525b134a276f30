// SPDX-License-Identifier: MIT OR Apache-2.0
//! The rules at work: per source, which objects are in which region, which tracked objects
//! crossed which line and in which direction, which regions are crowded, and where objects move.
//!
//! An object stands where the middle of its box's bottom edge is (its tracker box when tracked),
//! as in nvdsanalytics; for an oriented box the middle of its side lowest on the screen. Line crossing and direction follow each tracked object's path
//! (`object_id`): an object crosses a line when its path goes from one side to the other, each
//! side counting only beyond a band of `hysteresis` pixels around the line, so a box jittering
//! on the line crosses at most once per real crossing, and an object that enters the band and
//! vanishes does not cross at all. The tracker's shadows (its predictions for targets whose
//! detection it lost, with detector confidence 0) are not counted and do not move paths.

use std::collections::{HashMap, VecDeque};

use ferrostream_core::{
    Crossing, Crowding, Frame, FrameAnalytics, LineCounts, LineCrossing, Object, ObjectAnalytics,
    Shape, ShapeKind,
};

use crate::config::{AnalyticsConfig, CrowdingRule, StreamRules, Tuning};
use crate::geometry::{self, Line, Point};

/// What happened in a frame that an application may want to hear about at once.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A tracked object crossed a counting line.
    Crossed {
        source_id: u32,
        frame_num: u64,
        pts: Option<gst::ClockTime>,
        line: String,
        direction: Crossing,
        object_id: u64,
        class_id: i32,
        forward_total: u64,
        backward_total: u64,
    },
    /// An overcrowding region became crowded or clear (after its hold time).
    Crowding {
        source_id: u32,
        frame_num: u64,
        pts: Option<gst::ClockTime>,
        region: String,
        crowded: bool,
        count: u32,
        threshold: u32,
    },
}

/// Which side of a line a tracked object was last seen on, beyond the band, and where.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Unknown,
    Negative(Point),
    Positive(Point),
}

#[derive(Debug)]
struct Track {
    path: VecDeque<Point>,
    sides: Vec<Side>,
    last_frame: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct CrowdState {
    /// The state last posted.
    reported: bool,
    /// Since when (stream time, ns) the state has differed from the one reported.
    changed_since: Option<u64>,
}

/// A tracked object not seen for this many frames of its source is forgotten.
const STALE_FRAMES: u64 = 300;

struct SourceState {
    size: (u32, u32),
    rules: StreamRules,
    shapes: Vec<Shape>,
    lines: Vec<Option<Line>>,
    totals: Vec<LineCounts>,
    crowding: Vec<CrowdState>,
    tracks: HashMap<u64, Track>,
}

impl SourceState {
    fn new(config: &AnalyticsConfig, source_id: u32, width: u32, height: u32) -> Self {
        let rules = config.rules_for(source_id, width, height);
        Self {
            size: (width, height),
            shapes: shapes(&rules),
            lines: rules
                .lines
                .iter()
                .map(|l| Line::new(l.line[0], l.line[1]))
                .collect(),
            totals: vec![LineCounts::default(); rules.lines.len()],
            crowding: vec![CrowdState::default(); rules.crowding.len()],
            tracks: HashMap::new(),
            rules,
        }
    }

    /// Follows a change of frame size: the rules are scaled again; counts stay.
    fn resize(&mut self, config: &AnalyticsConfig, source_id: u32, width: u32, height: u32) {
        let fresh = Self::new(config, source_id, width, height);
        self.size = fresh.size;
        self.rules = fresh.rules;
        self.shapes = fresh.shapes;
        self.lines = fresh.lines;
        for track in self.tracks.values_mut() {
            track.path.clear();
            track.sides.fill(Side::Unknown);
        }
    }
}

fn shapes(rules: &StreamRules) -> Vec<Shape> {
    let mut out = Vec::new();
    for r in &rules.rois {
        out.push(Shape {
            kind: ShapeKind::Roi,
            label: r.label.as_str().into(),
            points: r.polygon.clone(),
        });
    }
    for r in &rules.crowding {
        out.push(Shape {
            kind: ShapeKind::Overcrowding,
            label: r.label.as_str().into(),
            points: r.polygon.clone(),
        });
    }
    for r in &rules.lines {
        out.push(Shape {
            kind: ShapeKind::Line,
            label: r.label.as_str().into(),
            points: vec![r.line[0], r.line[1], r.arrow[0], r.arrow[1]],
        });
    }
    for r in &rules.directions {
        out.push(Shape {
            kind: ShapeKind::Direction,
            label: r.label.as_str().into(),
            points: vec![r.arrow[0], r.arrow[1]],
        });
    }
    out
}

/// Whether the object is a tracker's shadow: predicted, with no detection in this frame.
fn is_shadow(o: &Object) -> bool {
    o.tracker_bbox.is_some() && o.confidence <= 0.0
}

/// Applies the rules to frames, source by source.
pub struct Analyzer {
    config: AnalyticsConfig,
    tuning: Tuning,
    sources: HashMap<u32, SourceState>,
}

/// What [`Analyzer::process`] noticed besides events.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Notes {
    /// Objects the frame's line and direction rules looked at (none without such rules).
    pub path_objects: usize,
    /// How many of them had tracker ids (the others are skipped: a tracker's new targets on
    /// probation have none yet, but without a tracker none ever has).
    pub tracked: usize,
}

impl Analyzer {
    pub fn new(config: AnalyticsConfig, tuning: Tuning) -> Self {
        Self {
            config,
            tuning,
            sources: HashMap::new(),
        }
    }

    pub fn config(&self) -> &AnalyticsConfig {
        &self.config
    }

    /// Replaces the regions of interest of stream `source_id` (its other rules stay); its
    /// frames use them from the next one on.
    pub fn set_stream_rois(&mut self, source_id: u32, rois: Vec<crate::config::RoiRule>) {
        self.config.streams.entry(source_id).or_default().rois = rois;
        if let Some(state) = self.sources.get_mut(&source_id) {
            let (width, height) = state.size;
            state.resize(&self.config, source_id, width, height);
        }
    }

    /// Forgets one source's tracks (its stream ended or restarted); its totals stay.
    pub fn reset_tracks(&mut self, source_id: u32) {
        if let Some(s) = self.sources.get_mut(&source_id) {
            s.tracks.clear();
        }
    }

    /// Forgets everything, counts included.
    pub fn reset(&mut self) {
        self.sources.clear();
    }

    /// The sources frames have come from.
    pub fn sources_seen(&self) -> impl Iterator<Item = u32> + '_ {
        self.sources.keys().copied()
    }

    /// Applies the rules to one frame: writes the frame's and its objects' analytics and
    /// appends the events.
    pub fn process(&mut self, frame: &mut Frame, events: &mut Vec<Event>) -> Notes {
        let mut notes = Notes::default();
        if !self.config.enable {
            return notes;
        }
        let (width, height) = (frame.width, frame.height);
        let config = &self.config;
        let state = self
            .sources
            .entry(frame.source_id)
            .or_insert_with(|| SourceState::new(config, frame.source_id, width, height));
        if state.size != (width, height) {
            state.resize(config, frame.source_id, width, height);
        }
        for id in &frame.terminated_ids {
            state.tracks.remove(id);
        }
        let rules = &state.rules;
        let mut result = FrameAnalytics {
            osd_mode: config.osd_mode,
            display_obj_cnt: config.display_obj_cnt,
            shapes: if config.osd_mode > 0 {
                state.shapes.clone()
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        for r in &rules.rois {
            result.roi_counts.insert(r.label.clone(), 0);
        }
        let mut crowd_counts = vec![0u32; rules.crowding.len()];
        // This frame's crossings start at zero; the totals go on.
        for counts in &mut state.totals {
            counts.forward = 0;
            counts.backward = 0;
        }
        let follows_paths = !rules.lines.is_empty() || !rules.directions.is_empty();

        for object in &mut frame.objects {
            if is_shadow(object) {
                continue;
            }
            *result.object_counts.entry(object.class_id).or_default() += 1;
            let p = object.ground_point();
            let class = object.class_id;
            let mut found = ObjectAnalytics::default();
            for r in rules.rois.iter().filter(|r| r.classes.contains(class)) {
                if geometry::inside_polygon(&r.polygon, p) != r.inverse {
                    found.rois.push(r.label.as_str().into());
                    *result.roi_counts.get_mut(&r.label).expect("inserted above") += 1;
                }
            }
            for (i, r) in rules.crowding.iter().enumerate() {
                if r.classes.contains(class) && geometry::inside_polygon(&r.polygon, p) {
                    found.overcrowding.push(r.label.as_str().into());
                    crowd_counts[i] += 1;
                }
            }
            match object.object_id {
                Some(id) if follows_paths => {
                    notes.path_objects += 1;
                    notes.tracked += 1;
                    let track = state.tracks.entry(id).or_insert_with(|| Track {
                        path: VecDeque::new(),
                        sides: vec![Side::Unknown; rules.lines.len()],
                        last_frame: frame.frame_num,
                    });
                    track.last_frame = frame.frame_num;
                    track.path.push_back(p);
                    while track.path.len() > self.tuning.direction_frames + 1 {
                        track.path.pop_front();
                    }
                    for (i, rule) in rules.lines.iter().enumerate() {
                        let Some(line) = &state.lines[i] else {
                            continue;
                        };
                        let crossing = step(&mut track.sides[i], line, p, self.tuning.hysteresis)
                            .and_then(|(from, to)| {
                                classify(rule, line, from, to, self.tuning.hysteresis)
                            });
                        let Some(direction) = crossing.filter(|_| rule.classes.contains(class))
                        else {
                            continue;
                        };
                        let counts = &mut state.totals[i];
                        let per_class = counts.per_class.entry(class).or_default();
                        match direction {
                            Crossing::Forward => {
                                counts.forward += 1;
                                counts.forward_total += 1;
                                per_class[0] += 1;
                            }
                            Crossing::Backward => {
                                counts.backward += 1;
                                counts.backward_total += 1;
                                per_class[1] += 1;
                            }
                        }
                        found.crossed.push(LineCrossing {
                            line: rule.label.as_str().into(),
                            direction,
                        });
                        events.push(Event::Crossed {
                            source_id: frame.source_id,
                            frame_num: frame.frame_num,
                            pts: frame.pts,
                            line: rule.label.clone(),
                            direction,
                            object_id: id,
                            class_id: class,
                            forward_total: counts.forward_total,
                            backward_total: counts.backward_total,
                        });
                    }
                    found.direction = direction(rules, &track.path, class, &self.tuning)
                        .map(|label| label.into());
                }
                None if follows_paths => notes.path_objects += 1,
                _ => {}
            }
            if found != ObjectAnalytics::default() || !rules.is_empty() {
                object.analytics = Some(found);
            }
        }

        report_crowding(
            &rules.crowding,
            &mut state.crowding,
            &crowd_counts,
            frame,
            &mut result,
            events,
        );
        for (rule, counts) in rules.lines.iter().zip(&state.totals) {
            result.lines.insert(rule.label.clone(), counts.clone());
        }
        let frame_num = frame.frame_num;
        state
            .tracks
            .retain(|_, t| t.last_frame + STALE_FRAMES >= frame_num);
        frame.analytics = Some(result);
        notes
    }
}

/// Overcrowding: each region's count in this frame, and an event when a region's state changed
/// and held for its `time-threshold` (at once for frames without a timestamp).
fn report_crowding(
    rules: &[CrowdingRule],
    states: &mut [CrowdState],
    counts: &[u32],
    frame: &Frame,
    result: &mut FrameAnalytics,
    events: &mut Vec<Event>,
) {
    let now = frame.pts.map(gst::ClockTime::nseconds);
    for (i, r) in rules.iter().enumerate() {
        let count = counts[i];
        let crowded = count >= r.threshold;
        result.overcrowding.insert(
            r.label.clone(),
            Crowding {
                count,
                threshold: r.threshold,
                crowded,
            },
        );
        let s = &mut states[i];
        if crowded == s.reported {
            s.changed_since = None;
            continue;
        }
        let since = *s.changed_since.get_or_insert(now.unwrap_or(0));
        let held_ns = now.unwrap_or(0).saturating_sub(since);
        if held_ns >= u64::from(r.hold_ms) * 1_000_000 || now.is_none() {
            s.reported = crowded;
            s.changed_since = None;
            events.push(Event::Crowding {
                source_id: frame.source_id,
                frame_num: frame.frame_num,
                pts: frame.pts,
                region: r.label.clone(),
                crowded,
                count,
                threshold: r.threshold,
            });
        }
    }
}

/// Moves a tracked object's side of a line to `p`; returns the path's last point on the old
/// side and `p` when the object changed sides.
fn step(side: &mut Side, line: &Line, p: Point, band: f32) -> Option<(Point, Point)> {
    let d = line.signed_distance(p);
    let (crossed, next) = match (*side, d) {
        (_, d) if d.abs() <= band || !d.is_finite() => return None,
        (Side::Negative(from), d) if d > 0.0 => (Some(from), Side::Positive(p)),
        (Side::Positive(from), d) if d < 0.0 => (Some(from), Side::Negative(p)),
        (_, d) if d > 0.0 => (None, Side::Positive(p)),
        _ => (None, Side::Negative(p)),
    };
    *side = next;
    crossed.map(|from| (from, p))
}

/// Whether a move from `from` to `to` (on opposite sides) counts as a crossing of `rule`, and
/// in which direction.
fn classify(
    rule: &crate::config::LineRule,
    line: &Line,
    from: Point,
    to: Point,
    band: f32,
) -> Option<Crossing> {
    let motion = geometry::vector(from, to);
    if !rule.extended {
        // Where the move meets the infinite line, as a fraction of the way along the segment.
        let (da, db) = (line.signed_distance(from), line.signed_distance(to));
        let s = da / (da - db);
        let at = [from[0] + s * motion[0], from[1] + s * motion[1]];
        let along = geometry::vector(line.a, line.b);
        let len = line.length();
        let u = (at[0] - line.a[0]) * along[0] + (at[1] - line.a[1]) * along[1];
        let u = u / (len * len);
        let slack = band / len;
        if !(-slack..=1.0 + slack).contains(&u) {
            return None;
        }
    }
    let arrow = geometry::vector(rule.arrow[0], rule.arrow[1]);
    let forward = line.normal_component(motion).signum() == line.normal_component(arrow).signum();
    let (direction, reference) = if forward {
        (Crossing::Forward, arrow)
    } else {
        (Crossing::Backward, [-arrow[0], -arrow[1]])
    };
    (geometry::cosine(motion, reference) >= rule.mode.min_cosine()).then_some(direction)
}

/// The named direction a tracked path follows best, if any matches its rule's mode.
fn direction<'a>(
    rules: &'a StreamRules,
    path: &VecDeque<Point>,
    class: i32,
    tuning: &Tuning,
) -> Option<&'a str> {
    let (first, last) = (path.front()?, path.back()?);
    let motion = geometry::vector(*first, *last);
    if geometry::norm(motion) < tuning.min_movement {
        return None;
    }
    rules
        .directions
        .iter()
        .filter(|r| r.classes.contains(class))
        .map(|r| {
            let cos = geometry::cosine(motion, geometry::vector(r.arrow[0], r.arrow[1]));
            (r, cos)
        })
        .filter(|(r, cos)| *cos >= r.mode.min_cosine().max(0.0))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, _)| r.label.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Classes, CrowdingRule, DirectionRule, LineRule, Mode, RoiRule};
    use ferrostream_core::BBox;
    use std::sync::Arc;

    /// A vertical counting line at x = 100 from y = 0 to 200; forward is to the right.
    fn line_config(extended: bool, mode: Mode) -> AnalyticsConfig {
        let mut c = AnalyticsConfig::default();
        c.all_streams.lines.push(LineRule {
            label: "gate".into(),
            arrow: [[80.0, 100.0], [120.0, 100.0]],
            line: [[100.0, 0.0], [100.0, 200.0]],
            extended,
            mode,
            classes: Classes::new(vec![0]),
        });
        c
    }

    /// A frame with tracked objects `(id, class, x of the box's centre, bottom y)`.
    fn frame(n: u64, objects: &[(u64, i32, f32, f32)]) -> Frame {
        let mut f = Frame::new(0, n, 400, 300);
        f.pts = Some(gst::ClockTime::from_mseconds(n * 40));
        f.components_run = vec![1];
        for &(id, class, x, bottom) in objects {
            let b = BBox::new(x - 10.0, bottom - 40.0, 20.0, 40.0);
            let mut o = Object::new(class, "o".into(), 0.9, b, 1);
            o.object_id = Some(id);
            o.tracker_bbox = Some(b);
            f.objects.push(o);
        }
        f
    }

    /// Runs x positions of one object (id 1, class 0, y 100) through `a`; returns the totals.
    fn run(a: &mut Analyzer, xs: &[f32]) -> (u64, u64) {
        let mut events = Vec::new();
        let mut last = None;
        for (n, &x) in xs.iter().enumerate() {
            let mut f = if x.is_nan() {
                frame(n as u64, &[])
            } else {
                frame(n as u64, &[(1, 0, x, 100.0)])
            };
            a.process(&mut f, &mut events);
            last = Some(f);
        }
        let lines = &last.unwrap().analytics.unwrap().lines;
        let gate = &lines["gate"];
        let crossings = events
            .iter()
            .filter(|e| matches!(e, Event::Crossed { .. }))
            .count() as u64;
        assert_eq!(crossings, gate.forward_total + gate.backward_total);
        (gate.forward_total, gate.backward_total)
    }

    #[test]
    fn crossings_back_and_forth_are_counted_exactly() {
        let mut a = Analyzer::new(line_config(false, Mode::Loose), Tuning::default());
        // Right, left, right again: two forward and one backward.
        let xs: Vec<f32> = (0..=10)
            .map(|i| 50.0 + 10.0 * i as f32)
            .chain((0..=10).map(|i| 150.0 - 10.0 * i as f32))
            .chain((0..=10).map(|i| 50.0 + 10.0 * i as f32))
            .collect();
        assert_eq!(run(&mut a, &xs), (2, 1));
    }

    #[test]
    fn jitter_on_the_line_counts_once() {
        let mut a = Analyzer::new(line_config(false, Mode::Loose), Tuning::default());
        // Approach, jitter +-3 px around the line for 20 frames, then leave to the right.
        let mut xs = vec![60.0, 80.0, 90.0];
        xs.extend((0..20).map(|i| if i % 2 == 0 { 97.0 } else { 103.0 }));
        xs.extend([110.0, 130.0]);
        assert_eq!(run(&mut a, &xs), (1, 0));
        // Jitter that reaches beyond the band on both sides is real back and forth movement.
        let mut a = Analyzer::new(line_config(false, Mode::Loose), Tuning::default());
        let xs = [80.0, 95.0, 106.0, 94.0, 106.0];
        assert_eq!(run(&mut a, &xs), (2, 1));
    }

    #[test]
    fn objects_that_vanish_mid_crossing_do_not_count() {
        let mut a = Analyzer::new(line_config(false, Mode::Loose), Tuning::default());
        let xs = [60.0, 80.0, 98.0, 101.0, f32::NAN, f32::NAN, f32::NAN];
        assert_eq!(run(&mut a, &xs), (0, 0));
        // A tracker's shadow carried over the line does not count either.
        let mut events = Vec::new();
        let mut a = Analyzer::new(line_config(false, Mode::Loose), Tuning::default());
        for (n, x) in [80.0, 99.0, 120.0, 140.0].into_iter().enumerate() {
            let mut f = frame(n as u64, &[(1, 0, x, 100.0)]);
            if n >= 2 {
                f.objects[0].confidence = 0.0;
            }
            a.process(&mut f, &mut events);
        }
        assert!(events.is_empty(), "{events:?}");
    }

    #[test]
    fn classes_segment_ends_and_modes_filter_crossings() {
        // Another class does not count.
        let mut a = Analyzer::new(line_config(false, Mode::Loose), Tuning::default());
        let mut events = Vec::new();
        for (n, x) in [80.0, 120.0].into_iter().enumerate() {
            a.process(&mut frame(n as u64, &[(1, 3, x, 100.0)]), &mut events);
        }
        assert!(events.is_empty());
        // Beyond the segment's end (y = 250): only an extended line counts it.
        for (extended, expected) in [(false, 0), (true, 1)] {
            let mut a = Analyzer::new(line_config(extended, Mode::Loose), Tuning::default());
            let mut events = Vec::new();
            for (n, x) in [80.0, 120.0].into_iter().enumerate() {
                a.process(&mut frame(n as u64, &[(1, 0, x, 250.0)]), &mut events);
            }
            assert_eq!(events.len(), expected, "extended={extended}");
        }
        // A steep diagonal crossing (dx 10, dy 40: 76° off the arrow) counts in loose mode only.
        for (mode, expected) in [(Mode::Loose, 1), (Mode::Balanced, 0), (Mode::Strict, 0)] {
            let mut a = Analyzer::new(line_config(false, mode), Tuning::default());
            let mut events = Vec::new();
            for (n, (x, y)) in [(90.0, 60.0), (110.0, 140.0)].into_iter().enumerate() {
                a.process(&mut frame(n as u64, &[(1, 0, x, y)]), &mut events);
            }
            assert_eq!(events.len(), expected, "{mode:?}");
        }
    }

    #[test]
    fn per_frame_and_total_counts_with_many_objects() {
        let mut a = Analyzer::new(line_config(false, Mode::Balanced), Tuning::default());
        let mut events = Vec::new();
        // Objects 1-3 cross forward in frame 1, object 4 backward in frame 2.
        let f0 = [(1, 0, 80.0, 50.0), (2, 0, 80.0, 100.0), (3, 0, 80.0, 150.0)];
        let mut f = frame(0, &f0);
        f.objects
            .push(frame(0, &[(4, 0, 120.0, 180.0)]).objects.remove(0));
        a.process(&mut f, &mut events);
        let f1 = [
            (1, 0, 120.0, 50.0),
            (2, 0, 120.0, 100.0),
            (3, 0, 120.0, 150.0),
            (4, 0, 115.0, 180.0),
        ];
        let mut f = frame(1, &f1);
        a.process(&mut f, &mut events);
        let gate = &f.analytics.as_ref().unwrap().lines["gate"];
        assert_eq!((gate.forward, gate.backward), (3, 0));
        let mut f = frame(2, &[(4, 0, 80.0, 180.0)]);
        a.process(&mut f, &mut events);
        let gate = &f.analytics.as_ref().unwrap().lines["gate"];
        assert_eq!((gate.forward, gate.backward), (0, 1));
        assert_eq!((gate.forward_total, gate.backward_total), (3, 1));
        assert_eq!(gate.per_class[&0], [3, 1]);
        let crossed = &f.objects[0].analytics.as_ref().unwrap().crossed;
        assert_eq!(crossed[0].direction, Crossing::Backward);
    }

    #[test]
    fn an_oriented_box_stands_on_its_lowest_side() {
        let mut c = AnalyticsConfig::default();
        c.all_streams.rois.push(RoiRule {
            label: "left".into(),
            polygon: vec![[0.0, 0.0], [85.0, 0.0], [85.0, 300.0], [0.0, 300.0]],
            inverse: false,
            classes: Classes::default(),
        });
        let mut a = Analyzer::new(c, Tuning::default());
        let mut events = Vec::new();
        // Box centre (90, 80), 20x40: upright its feet are at (90, 100), right of the region;
        // turned 30 degrees clockwise its lowest side's middle is at (80, 97.3), inside; turned
        // 30 degrees the other way at (100, 97.3), outside. The same rectangle in its other form
        // (40x20, turned 60 degrees anticlockwise) stands where the first turned one does.
        let regions =
            |angle: Option<f32>, swap: bool, a: &mut Analyzer, events: &mut Vec<Event>| {
                let mut f = frame(0, &[(1, 0, 90.0, 100.0)]);
                let o = &mut f.objects[0];
                o.angle = angle;
                if swap {
                    let b = BBox::new(70.0, 70.0, 40.0, 20.0);
                    (o.detector_bbox, o.tracker_bbox) = (b, Some(b));
                }
                a.process(&mut f, events);
                f.objects[0].analytics.as_ref().unwrap().rois.clone()
            };
        let inside = vec![Arc::<str>::from("left")];
        let degrees = |d: f32| Some(d.to_radians());
        assert!(regions(None, false, &mut a, &mut events).is_empty());
        assert_eq!(regions(degrees(30.0), false, &mut a, &mut events), inside);
        assert!(regions(degrees(-30.0), false, &mut a, &mut events).is_empty());
        assert_eq!(regions(degrees(-60.0), true, &mut a, &mut events), inside);
    }

    #[test]
    fn regions_inverse_regions_and_crowding() {
        let square = vec![[0.0, 0.0], [100.0, 0.0], [100.0, 100.0], [0.0, 100.0]];
        let mut c = AnalyticsConfig::default();
        c.all_streams.rois.push(RoiRule {
            label: "in".into(),
            polygon: square.clone(),
            inverse: false,
            classes: Classes::default(),
        });
        c.all_streams.rois.push(RoiRule {
            label: "out".into(),
            polygon: square.clone(),
            inverse: true,
            classes: Classes::new(vec![0]),
        });
        c.all_streams.crowding.push(CrowdingRule {
            label: "crowd".into(),
            polygon: square,
            threshold: 2,
            hold_ms: 100,
            classes: Classes::default(),
        });
        let mut a = Analyzer::new(c, Tuning::default());
        let mut events = Vec::new();
        // Frame n has n objects inside (feet at y = 90) and one of class 1 outside.
        let mut states = Vec::new();
        for n in 0..10u64 {
            let inside = if n < 6 { n } else { 0 };
            let mut objects: Vec<_> = (0..inside)
                .map(|i| (i, 0, 10.0 + 10.0 * i as f32, 90.0))
                .collect();
            objects.push((99, 1, 300.0, 200.0));
            let mut f = frame(n, &objects);
            a.process(&mut f, &mut events);
            let fa = f.analytics.unwrap();
            assert_eq!(fa.roi_counts["in"], inside as u32);
            assert_eq!(fa.roi_counts["out"], 0, "class 1 is not counted outside");
            assert_eq!(fa.object_counts[&1], 1);
            states.push(fa.overcrowding["crowd"].crowded);
        }
        let expected = [
            false, false, true, true, true, true, false, false, false, false,
        ];
        assert_eq!(states, expected);
        // Changes are posted once they have held 100 ms (frames are 40 ms apart): crowded from
        // frame 2, posted at frame 5; clear from frame 6, posted at frame 9.
        let posted: Vec<_> = events
            .iter()
            .map(|e| match e {
                Event::Crowding {
                    frame_num, crowded, ..
                } => (*frame_num, *crowded),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(posted, [(5, true), (9, false)]);
    }

    #[test]
    fn directions_follow_the_path() {
        let mut c = AnalyticsConfig::default();
        for (label, arrow) in [
            ("East", [[0.0, 0.0], [10.0, 0.0]]),
            ("North", [[0.0, 10.0], [0.0, 0.0]]),
        ] {
            c.all_streams.directions.push(DirectionRule {
                label: label.into(),
                arrow,
                mode: Mode::Balanced,
                classes: Classes::default(),
            });
        }
        let mut a = Analyzer::new(c, Tuning::default());
        let mut events = Vec::new();
        let mut seen = Vec::new();
        for n in 0..12u64 {
            let x = 10.0 + 5.0 * n as f32;
            let y = 200.0 - 2.0 * n as f32;
            // Object 2 stands still.
            let mut f = frame(n, &[(1, 0, x, y), (2, 0, 300.0, 100.0)]);
            a.process(&mut f, &mut events);
            let d = |i: usize| f.objects[i].analytics.as_ref().unwrap().direction.clone();
            seen.push((d(0), d(1)));
        }
        assert_eq!(seen[0], (None, None), "no movement yet");
        assert_eq!(seen[11].0.as_deref(), Some("East"));
        assert_eq!(seen[11].1, None);
    }
}
