// SPDX-License-Identifier: MIT OR Apache-2.0
//! Message bodies: frames and object events as JSON, in Ferrostream's schema or in DeepStream's
//! "minimal" schema, each with a unique message id and its source id.
//!
//! * Ferrostream, frames: the object `rsmetaexport` writes for the frame (see
//!   `ferrostream_core::json`), with `message_id` added in front.
//! * Ferrostream, events: `{"message_id", "event", "source_id", "frame_num", "pts_ns",
//!   "timestamp", "object"}` plus `line`/`direction` (line crossed) or `reason` (left); `object`
//!   is an object record of the frame schema.
//! * DeepStream minimal: `{"version":"4.0", "id", "@timestamp", "sensorId", "objects"}` with each
//!   object as `"id|left|top|right|bottom|label"` (then `"|#|"`, the classifier labels and the
//!   confidence when classifiers ran), boxes in pixels of the source frame, untracked objects
//!   with id 18446744073709551615 (DeepStream's untracked id). Added: `messageid`, `sourceId`,
//!   and for events `event` (`{"type", "line", "direction", "reason"}`).

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use ferrostream_core::json::{FrameRecord, ObjectRecord};
use ferrostream_core::{Crossing, Frame};
use serde::Serialize;

use crate::events::{Event, EventKind, FrameInfo};

ferrostream_core::choice_enum! {
    /// The JSON layout of the messages.
    #[derive(Default)]
    pub enum Schema: "GstRsMsgBrokerSchema" {
        /// Ferrostream's frame schema (what `rsmetaexport` writes) and event objects.
        #[default]
        Ferrostream = 0 => ("ferrostream", "Ferrostream JSON (the rsmetaexport schema)"),
        /// DeepStream nvmsgconv's minimal schema.
        DeepstreamMinimal = 1 => ("deepstream-minimal", "DeepStream minimal schema"),
    }
}

/// What a message is about; names the `{event}` of topic templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Frame,
    Appeared,
    Left,
    LineCrossed,
}

impl MessageKind {
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Frame => "frame",
            MessageKind::Appeared => "appeared",
            MessageKind::Left => "left",
            MessageKind::LineCrossed => "line-crossed",
        }
    }
}

/// One message for the broker.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Unique over every run of every element (a consumer counts duplicates with it).
    pub id: String,
    pub source_id: u32,
    pub kind: MessageKind,
    /// The topic (MQTT topic, AMQP routing key, Redis stream key, Kafka topic).
    pub topic: String,
    pub body: Vec<u8>,
}

/// Hands out message ids: a random prefix per element run, then a counter.
pub struct MessageIds {
    prefix: String,
    next: AtomicU64,
}

impl Default for MessageIds {
    fn default() -> Self {
        Self::new()
    }
}

impl MessageIds {
    pub fn new() -> Self {
        // RandomState is seeded from the OS per process and varies per instance; mixing in the
        // time and process id keeps runs of the same process apart too.
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        h.write_u128(now.as_nanos());
        Self {
            prefix: format!("{:016x}", h.finish()),
            next: AtomicU64::new(0),
        }
    }

    /// The run's random prefix (16 hex digits).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.prefix)
    }
}

/// Builds message bodies in one schema.
pub struct PayloadBuilder {
    pub schema: Schema,
    /// DeepStream `sensorId` per source id (the source id itself when missing).
    pub sensor_ids: Vec<String>,
}

impl PayloadBuilder {
    pub fn sensor_id(&self, source_id: u32) -> String {
        self.sensor_ids
            .get(source_id as usize)
            .filter(|s| !s.is_empty())
            .cloned()
            .unwrap_or_else(|| source_id.to_string())
    }

    /// The body of a frame message.
    pub fn frame(&self, frame: &Frame, id: &str) -> Vec<u8> {
        let record = FrameRecord::from(frame);
        match self.schema {
            Schema::Ferrostream => to_json(&FrameMessage {
                message_id: id,
                frame: &record,
            }),
            Schema::DeepstreamMinimal => {
                let info = FrameInfo::of(frame);
                to_json(&MinimalMessage {
                    version: "4.0",
                    id: serde_json::Value::from(frame.frame_num),
                    timestamp: now_rfc3339(),
                    sensor_id: self.sensor_id(frame.source_id),
                    messageid: id,
                    source_id: frame.source_id,
                    objects: record
                        .objects
                        .iter()
                        .map(|o| minimal_object(o, &info))
                        .collect(),
                    event: None,
                })
            }
        }
    }

    /// The body of an event message.
    pub fn event(&self, event: &Event, id: &str) -> Vec<u8> {
        let (line, direction) = match &event.kind {
            EventKind::LineCrossed { line, direction } => {
                (Some(line.as_ref()), Some(direction_name(*direction)))
            }
            _ => (None, None),
        };
        let reason = match &event.kind {
            EventKind::Left(r) => Some(r.as_str()),
            _ => None,
        };
        match self.schema {
            Schema::Ferrostream => to_json(&EventMessage {
                message_id: id,
                event: event.kind.name(),
                source_id: event.frame.source_id,
                frame_num: event.frame.frame_num,
                pts_ns: event.frame.pts_ns,
                timestamp: now_rfc3339(),
                object: &event.object,
                line,
                direction,
                reason,
            }),
            Schema::DeepstreamMinimal => to_json(&MinimalMessage {
                version: "4.0",
                id: serde_json::Value::from(event.frame.frame_num.to_string()),
                timestamp: now_rfc3339(),
                sensor_id: self.sensor_id(event.frame.source_id),
                messageid: id,
                source_id: event.frame.source_id,
                objects: vec![minimal_object(&event.object, &event.frame)],
                event: Some(MinimalEvent {
                    kind: event.kind.name(),
                    line,
                    direction,
                    reason,
                }),
            }),
        }
    }
}

impl From<&EventKind> for MessageKind {
    fn from(kind: &EventKind) -> Self {
        match kind {
            EventKind::Appeared => MessageKind::Appeared,
            EventKind::Left(_) => MessageKind::Left,
            EventKind::LineCrossed { .. } => MessageKind::LineCrossed,
        }
    }
}

#[derive(Serialize)]
struct FrameMessage<'a> {
    message_id: &'a str,
    #[serde(flatten)]
    frame: &'a FrameRecord,
}

#[derive(Serialize)]
struct EventMessage<'a> {
    message_id: &'a str,
    event: &'static str,
    source_id: u32,
    frame_num: u64,
    pts_ns: Option<u64>,
    timestamp: String,
    object: &'a ObjectRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    direction: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

#[derive(Serialize)]
struct MinimalMessage<'a> {
    version: &'static str,
    id: serde_json::Value,
    #[serde(rename = "@timestamp")]
    timestamp: String,
    #[serde(rename = "sensorId")]
    sensor_id: String,
    messageid: &'a str,
    #[serde(rename = "sourceId")]
    source_id: u32,
    objects: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<MinimalEvent<'a>>,
}

#[derive(Serialize)]
struct MinimalEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    direction: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

fn to_json(value: &impl Serialize) -> Vec<u8> {
    // Serialising plain structs of strings and numbers into memory cannot fail; an empty body
    // would only hide a bug, so say what happened instead.
    serde_json::to_vec(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}").into_bytes())
}

fn direction_name(d: Crossing) -> &'static str {
    match d {
        Crossing::Forward => "forward",
        Crossing::Backward => "backward",
    }
}

/// DeepStream's id of an untracked object.
pub const UNTRACKED_OBJECT_ID: u64 = u64::MAX;

/// `"id|left|top|right|bottom|label"`, boxes in pixels of the source frame (an oriented box as
/// its axis-aligned extent), then `"|#|label...|confidence"` when classifiers ran.
fn minimal_object(o: &ObjectRecord, frame: &FrameInfo) -> String {
    let sx = scale(frame.source_width, frame.width);
    let sy = scale(frame.source_height, frame.height);
    let b = match o.angle {
        Some(angle) => ferrostream_core::oriented::bounding(&o.bbox, angle),
        None => o.bbox,
    };
    let mut s = format!(
        "{}|{}|{}|{}|{}|{}",
        o.object_id.unwrap_or(UNTRACKED_OBJECT_ID),
        b.left * sx,
        b.top * sy,
        (b.left + b.width) * sx,
        (b.top + b.height) * sy,
        o.label
    );
    if !o.classifications.is_empty() {
        s.push_str("|#");
        for c in &o.classifications {
            let _ = write!(s, "|{}", c.label);
        }
        let _ = write!(s, "|{}", o.confidence);
    }
    s
}

fn scale(source: u32, frame: u32) -> f32 {
    if source == 0 || frame == 0 {
        1.0
    } else {
        source as f32 / frame as f32
    }
}

/// The wall-clock time as RFC 3339 with milliseconds, in UTC (`2024-05-01T12:00:00.123Z`).
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs() as i64, now.subsec_millis())
}

fn rfc3339(unix_seconds: i64, millis: u32) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventTracker, LeftReason};
    use ferrostream_core::json::write_frame_line;
    use ferrostream_core::{BBox, Classification, LineCrossing, Object, ObjectAnalytics};

    fn frame() -> Frame {
        let mut f = Frame::new(3, 17, 640, 480);
        f.source_width = 1280;
        f.source_height = 960;
        f.pts = Some(gst::ClockTime::from_mseconds(680));
        let mut o = Object::new(
            0,
            "person".into(),
            0.75,
            BBox::new(10.0, 20.0, 30.0, 40.0),
            1,
        );
        o.object_id = Some(42);
        f.objects.push(o);
        let mut car = Object::new(2, "car".into(), 0.5, BBox::new(1.0, 2.0, 3.0, 4.0), 1);
        car.classifications.push(Classification {
            component_id: 2,
            class_id: 1,
            label: "red".into(),
            prob: 0.9,
        });
        f.objects.push(car);
        f
    }

    fn builder(schema: Schema) -> PayloadBuilder {
        PayloadBuilder {
            schema,
            sensor_ids: vec!["a".into(), "".into(), "b".into(), "dock-cam".into()],
        }
    }

    fn json(body: &[u8]) -> serde_json::Value {
        serde_json::from_slice(body).unwrap()
    }

    #[test]
    fn ferrostream_frame_is_the_export_line_plus_an_id() {
        let body = builder(Schema::Ferrostream).frame(&frame(), "abc-1");
        let mut v = json(&body);
        assert_eq!(v["message_id"], "abc-1");
        v.as_object_mut().unwrap().remove("message_id");
        let mut line = Vec::new();
        write_frame_line(&mut line, &frame()).unwrap();
        assert_eq!(v, json(&line));
        // The export's parser reads the message as it is.
        let parsed =
            ferrostream_core::json::parse_frame_line(std::str::from_utf8(&body).unwrap()).unwrap();
        assert_eq!(parsed, frame());
    }

    #[test]
    fn user_meta_of_frames_and_objects_is_in_the_ferrostream_payloads() {
        use serde_json::json as value;
        let mut f = frame();
        f.user_meta
            .insert("zone".into(), value!({"name": "dock", "open": true}));
        f.user_meta.insert("shift".into(), value!(2));
        f.objects[0]
            .user_meta
            .insert("checked_by".into(), value!(["ana", "li"]));
        let v = json(&builder(Schema::Ferrostream).frame(&f, "abc-3"));
        assert_eq!(
            v["user_meta"],
            value!({"zone": {"name": "dock", "open": true}, "shift": 2})
        );
        assert_eq!(
            v["objects"][0]["user_meta"],
            value!({"checked_by": ["ana", "li"]})
        );
        // Objects without any carry none.
        assert!(v["objects"][1].get("user_meta").is_none());
        // A reader of the payload gets the same values back.
        let parsed = ferrostream_core::json::parse_frame_line(&v.to_string()).unwrap();
        assert_eq!(parsed.user_meta, f.user_meta);
        assert_eq!(parsed.objects[0].user_meta, f.objects[0].user_meta);
        // Events carry the object's record, its values with it.
        let events = EventTracker::new(0).frame(&f);
        let appeared = events
            .iter()
            .map(|e| json(&builder(Schema::Ferrostream).event(e, "abc-4")))
            .find(|e| e["object"]["object_id"] == 42)
            .unwrap();
        assert_eq!(appeared["object"]["user_meta"]["checked_by"][1], "li");
    }

    #[test]
    fn deepstream_minimal_frame_layout() {
        let v = json(&builder(Schema::DeepstreamMinimal).frame(&frame(), "abc-2"));
        assert_eq!(v["version"], "4.0");
        assert_eq!(v["id"], 17);
        assert_eq!(v["sensorId"], "dock-cam");
        assert_eq!(v["messageid"], "abc-2");
        assert_eq!(v["sourceId"], 3);
        // Boxes in source pixels (the frame is half the source size).
        assert_eq!(v["objects"][0], "42|20|40|80|120|person");
        assert_eq!(
            v["objects"][1],
            format!("{}|2|4|8|12|car|#|red|0.5", u64::MAX)
        );
        // A turned box (a quarter turn) as its axis-aligned extent.
        let mut turned = frame();
        turned.objects[0].angle = Some(std::f32::consts::FRAC_PI_2);
        let t = json(&builder(Schema::DeepstreamMinimal).frame(&turned, "abc-5"));
        let fields: Vec<&str> = t["objects"][0].as_str().unwrap().split('|').collect();
        let edges: Vec<f32> = fields[1..5].iter().map(|v| v.parse().unwrap()).collect();
        for (got, want) in edges.iter().zip([10.0, 50.0, 90.0, 110.0]) {
            assert!((got - want).abs() < 1e-3, "{fields:?}");
        }
        let ts = v["@timestamp"].as_str().unwrap();
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
        assert!(v.get("event").is_none());
    }

    #[test]
    fn sensor_id_falls_back_to_the_source_id() {
        let b = builder(Schema::DeepstreamMinimal);
        assert_eq!(b.sensor_id(0), "a");
        assert_eq!(b.sensor_id(1), "1");
        assert_eq!(b.sensor_id(9), "9");
    }

    #[test]
    fn event_payloads_in_both_schemas() {
        let mut f = frame();
        f.objects[0].analytics = Some(ObjectAnalytics {
            crossed: vec![LineCrossing {
                line: "Gate".into(),
                direction: Crossing::Forward,
            }],
            ..Default::default()
        });
        let mut tracker = EventTracker::new(0);
        let events = tracker.frame(&f);
        assert_eq!(events.len(), 2);
        let ours = json(&builder(Schema::Ferrostream).event(&events[1], "x-1"));
        assert_eq!(ours["message_id"], "x-1");
        assert_eq!(ours["event"], "line-crossed");
        assert_eq!(ours["source_id"], 3);
        assert_eq!(ours["frame_num"], 17);
        assert_eq!(ours["pts_ns"], 680_000_000u64);
        assert_eq!(ours["line"], "Gate");
        assert_eq!(ours["direction"], "forward");
        assert_eq!(ours["object"]["object_id"], 42);
        assert_eq!(ours["object"]["label"], "person");
        assert!(ours.get("reason").is_none());

        let left = tracker.end_all(LeftReason::Eos);
        let ds = json(&builder(Schema::DeepstreamMinimal).event(&left[0], "x-2"));
        assert_eq!(ds["id"], "17");
        assert_eq!(ds["objects"][0], "42|20|40|80|120|person");
        assert_eq!(ds["event"]["type"], "left");
        assert_eq!(ds["event"]["reason"], "eos");
        assert_eq!(ds["messageid"], "x-2");
    }

    #[test]
    fn message_ids_are_unique_across_generators() {
        let a = MessageIds::new();
        let b = MessageIds::new();
        let ids: std::collections::HashSet<String> =
            (0..100).flat_map(|_| [a.next_id(), b.next_id()]).collect();
        assert_eq!(ids.len(), 200);
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400 + 86_399, 7), "2000-02-29T23:59:59.007Z");
        assert_eq!(rfc3339(1_700_000_000, 123), "2023-11-14T22:13:20.123Z");
    }
}
