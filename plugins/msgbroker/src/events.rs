// SPDX-License-Identifier: MIT OR Apache-2.0
//! Object events from a stream of frames: an object appeared (the first frame of a tracker id),
//! left (its track ended), or crossed a counting line.
//!
//! A track ends when the tracker says so (`terminated_ids`), when it has not been seen for
//! `lost_after` frames of its source, when its source ends or restarts (the muxer's
//! `ferrostream-stream-eos` / `ferrostream-stream-restart` events), or at the end of the stream.
//! Untracked objects (no tracker id) have no events. Line crossings come from `rsanalytics`'
//! per-object results.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrostream_core::json::ObjectRecord;
use ferrostream_core::{Crossing, Frame};

/// Why a track ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftReason {
    /// The tracker reported the track as terminated.
    Terminated,
    /// Not seen for the configured number of frames.
    Lost,
    /// Its source ended (the muxer's stream EOS).
    StreamEos,
    /// Its source restarted (a reconnected camera, a looped file).
    StreamRestart,
    /// The whole stream ended.
    Eos,
}

impl LeftReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftReason::Terminated => "terminated",
            LeftReason::Lost => "lost",
            LeftReason::StreamEos => "stream-eos",
            LeftReason::StreamRestart => "stream-restart",
            LeftReason::Eos => "eos",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    Appeared,
    Left(LeftReason),
    LineCrossed { line: Arc<str>, direction: Crossing },
}

impl EventKind {
    /// The event's name in payloads and topics.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Appeared => "appeared",
            EventKind::Left(_) => "left",
            EventKind::LineCrossed { .. } => "line-crossed",
        }
    }
}

/// Where in the stream an event happened, and the sizes needed to place its box.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameInfo {
    pub source_id: u32,
    pub frame_num: u64,
    pub pts_ns: Option<u64>,
    /// Size of the frame the box is in.
    pub width: u32,
    pub height: u32,
    /// Size of the frame as its source produced it.
    pub source_width: u32,
    pub source_height: u32,
}

impl FrameInfo {
    pub fn of(frame: &Frame) -> Self {
        Self {
            source_id: frame.source_id,
            frame_num: frame.frame_num,
            pts_ns: frame.pts.map(|t| t.nseconds()),
            width: frame.width,
            height: frame.height,
            source_width: frame.source_width,
            source_height: frame.source_height,
        }
    }
}

/// One object event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub frame: FrameInfo,
    /// The object as seen in this frame (for `left`, as last seen).
    pub object: ObjectRecord,
}

impl Event {
    pub fn object_id(&self) -> Option<u64> {
        self.object.object_id
    }
}

struct Track {
    last: ObjectRecord,
    last_frame: FrameInfo,
    /// The source's frame counter when the track was last seen.
    last_seen: u64,
}

#[derive(Default)]
struct SourceTracks {
    frames: u64,
    tracks: BTreeMap<u64, Track>,
}

/// Per-source track state that turns frames into events.
pub struct EventTracker {
    lost_after: u32,
    sources: BTreeMap<u32, SourceTracks>,
}

impl EventTracker {
    /// `lost_after`: frames of its source without a track before it is reported as left
    /// (0: only the tracker, the source's end and the stream's end end a track).
    pub fn new(lost_after: u32) -> Self {
        Self {
            lost_after,
            sources: BTreeMap::new(),
        }
    }

    /// Tracks currently open, over all sources.
    pub fn open_tracks(&self) -> usize {
        self.sources.values().map(|s| s.tracks.len()).sum()
    }

    /// The events of one frame, in order: appearances, line crossings, then tracks that ended.
    pub fn frame(&mut self, frame: &Frame) -> Vec<Event> {
        let info = FrameInfo::of(frame);
        let source = self.sources.entry(frame.source_id).or_default();
        source.frames += 1;
        let now = source.frames;
        let mut events = Vec::new();
        let mut crossings = Vec::new();
        for object in &frame.objects {
            let Some(id) = object.object_id else {
                continue;
            };
            let record = ObjectRecord::from(object);
            if !source.tracks.contains_key(&id) {
                events.push(Event {
                    kind: EventKind::Appeared,
                    frame: info,
                    object: record.clone(),
                });
            }
            for crossing in object.analytics.iter().flat_map(|a| &a.crossed) {
                crossings.push(Event {
                    kind: EventKind::LineCrossed {
                        line: crossing.line.clone(),
                        direction: crossing.direction,
                    },
                    frame: info,
                    object: record.clone(),
                });
            }
            source.tracks.insert(
                id,
                Track {
                    last: record,
                    last_frame: info,
                    last_seen: now,
                },
            );
        }
        events.extend(crossings);
        for id in &frame.terminated_ids {
            if let Some(track) = source.tracks.remove(id) {
                events.push(left(track, LeftReason::Terminated, info));
            }
        }
        if self.lost_after > 0 {
            let lost_after = u64::from(self.lost_after);
            let lost: Vec<u64> = source
                .tracks
                .iter()
                .filter(|(_, t)| now - t.last_seen >= lost_after)
                .map(|(id, _)| *id)
                .collect();
            for id in lost {
                if let Some(track) = source.tracks.remove(&id) {
                    events.push(left(track, LeftReason::Lost, info));
                }
            }
        }
        events
    }

    /// Source `source_id` ended or restarted: every open track of it has left.
    pub fn end_source(&mut self, source_id: u32, reason: LeftReason) -> Vec<Event> {
        let Some(source) = self.sources.remove(&source_id) else {
            return Vec::new();
        };
        source
            .tracks
            .into_values()
            .map(|t| {
                let at = t.last_frame;
                left(t, reason, at)
            })
            .collect()
    }

    /// The stream ended: every open track of every source has left.
    pub fn end_all(&mut self, reason: LeftReason) -> Vec<Event> {
        let ids: Vec<u32> = self.sources.keys().copied().collect();
        ids.into_iter()
            .flat_map(|id| self.end_source(id, reason))
            .collect()
    }
}

fn left(track: Track, reason: LeftReason, at: FrameInfo) -> Event {
    Event {
        kind: EventKind::Left(reason),
        frame: at,
        object: track.last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrostream_core::{BBox, LineCrossing, Object, ObjectAnalytics};

    fn frame(source: u32, n: u64, ids: &[u64]) -> Frame {
        let mut f = Frame::new(source, n, 640, 480);
        for &id in ids {
            let mut o = Object::new(0, "person".into(), 0.9, BBox::new(1.0, 2.0, 3.0, 4.0), 1);
            o.object_id = Some(id);
            f.objects.push(o);
        }
        f
    }

    fn summary(events: &[Event]) -> Vec<(String, u64)> {
        events
            .iter()
            .map(|e| {
                let name = match &e.kind {
                    EventKind::Left(r) => format!("left:{}", r.as_str()),
                    k => k.name().to_string(),
                };
                (name, e.object_id().unwrap())
            })
            .collect()
    }

    fn s(name: &str, id: u64) -> (String, u64) {
        (name.to_string(), id)
    }

    #[test]
    fn appeared_once_per_track_and_terminated_leaves() {
        let mut t = EventTracker::new(0);
        assert_eq!(
            summary(&t.frame(&frame(0, 0, &[1, 2]))),
            [s("appeared", 1), s("appeared", 2)]
        );
        assert!(t.frame(&frame(0, 1, &[1, 2])).is_empty());
        let mut f = frame(0, 2, &[1]);
        f.terminated_ids = vec![2, 99];
        let events = t.frame(&f);
        assert_eq!(summary(&events), [s("left:terminated", 2)]);
        assert_eq!(events[0].frame.frame_num, 2);
        assert_eq!(t.open_tracks(), 1);
    }

    #[test]
    fn untracked_objects_have_no_events() {
        let mut t = EventTracker::new(3);
        let mut f = frame(0, 0, &[]);
        f.objects
            .push(Object::new(0, "car".into(), 0.5, BBox::default(), 1));
        assert!(t.frame(&f).is_empty());
        assert_eq!(t.open_tracks(), 0);
    }

    #[test]
    fn tracks_not_seen_for_n_frames_are_lost() {
        let mut t = EventTracker::new(2);
        t.frame(&frame(0, 0, &[5]));
        assert!(t.frame(&frame(0, 1, &[])).is_empty());
        // Another source's frames do not age source 0's tracks.
        t.frame(&frame(1, 0, &[]));
        t.frame(&frame(1, 1, &[]));
        assert_eq!(summary(&t.frame(&frame(0, 2, &[]))), [s("left:lost", 5)]);
        // A track seen again after it was lost appears again.
        assert_eq!(summary(&t.frame(&frame(0, 3, &[5]))), [s("appeared", 5)]);
    }

    #[test]
    fn crossings_become_events_with_line_and_direction() {
        let mut t = EventTracker::new(0);
        let mut f = frame(0, 0, &[7]);
        f.objects[0].analytics = Some(ObjectAnalytics {
            crossed: vec![LineCrossing {
                line: "Gate".into(),
                direction: Crossing::Backward,
            }],
            ..Default::default()
        });
        let events = t.frame(&f);
        assert_eq!(summary(&events), [s("appeared", 7), s("line-crossed", 7)]);
        assert_eq!(
            events[1].kind,
            EventKind::LineCrossed {
                line: "Gate".into(),
                direction: Crossing::Backward
            }
        );
    }

    #[test]
    fn source_end_restart_and_eos_close_tracks() {
        let mut t = EventTracker::new(0);
        t.frame(&frame(0, 0, &[1]));
        t.frame(&frame(1, 0, &[2, 3]));
        t.frame(&frame(1, 1, &[2, 3]));
        let restart = t.end_source(1, LeftReason::StreamRestart);
        assert_eq!(
            summary(&restart),
            [s("left:stream-restart", 2), s("left:stream-restart", 3)]
        );
        // At the frame they were last seen in.
        assert_eq!(restart[0].frame.frame_num, 1);
        assert!(t.end_source(1, LeftReason::StreamEos).is_empty());
        // After a restart the same id is a new appearance.
        assert_eq!(summary(&t.frame(&frame(1, 0, &[2]))), [s("appeared", 2)]);
        assert_eq!(
            summary(&t.end_all(LeftReason::Eos)),
            [s("left:eos", 1), s("left:eos", 2)]
        );
        assert_eq!(t.open_tracks(), 0);
    }
}
