// SPDX-License-Identifier: MIT OR Apache-2.0
//! The JSON form of a frame's metadata: one object per frame.
//!
//! This schema is a contract with other tools; fields may be added, never renamed:
//!
//! ```json
//! {"source_id":0,"frame_num":12,"pts_ns":1200000000,"width":768,"height":576,
//!  "objects":[{"object_id":null,"class_id":0,"label":"person","confidence":0.81,
//!              "bbox":{"left":10.0,"top":20.0,"width":30.0,"height":60.0},
//!              "component_id":1,"classifications":[],"attributes":{}}]}
//! ```
//!
//! `bbox` is the box to show (the tracker's when a tracker ran, else the detector's), in pixels
//! of the frame. Added fields: `pad_index`, `source_width`, `source_height`, `components_run`,
//! `terminated_ids`, `segmentation` (a semantic segmentation's class map: `width` x `height`
//! cells stretched over the frame, row by row as `[class, count]` runs, class -1 where none),
//! and per object `detector_bbox`, `tracker_bbox`, `tracker_confidence`, `tracker_age`,
//! `parent`, `mask` (an instance mask: `width` x `height` cells stretched over
//! `detector_bbox`, row by row as run lengths alternating outside and inside, starting outside).
//! Region and line rules (`rsanalytics`) add `analytics` to the frame (`roi_counts`,
//! `overcrowding` with `count`/`threshold`/`crowded`, `lines` with `forward`/`backward` in this
//! frame and `forward_total`/`backward_total` since the start, `object_counts` per class id,
//! `shapes`, `osd_mode`) and to each object (`rois`, `overcrowding`, `crossed` as
//! `{"line":..., "direction":"forward"|"backward"}`, `direction`).
//! Applications (the Python package, Rust probes) add `user_meta` to frames and objects (an
//! object of their own keys, any JSON values) and `display` to frames (text, rectangles and
//! lines for `rsosd`, each `{"kind":"text"|"rect"|"line", ...}`, see [`crate::display`]).
//! With `rsstreammux latency-tracking=true`, frames carry `latency`: when the frame reached the
//! muxer and when each element had it, on the process's monotonic clock in nanoseconds, plus
//! the time from the muxer to the last element's exit:
//! `{"origin_ns":..,"components":[{"component":"mux","entry_ns":..,"exit_ns":..},..],
//! "end_to_end_ns":..}` (see [`crate::latency`]).
//! Pose models add `keypoints` to each object: `{"points":[{"name":"nose","x":..,"y":..,
//! "confidence":..},..],"skeleton":[[15,13],..]}`, points in frame pixels, the skeleton's limbs as
//! pairs of indices into `points` (see [`crate::keypoints`]).
//! Oriented boxes add `angle` to each object (radians about the box's centre, clockwise on the
//! screen; both `bbox` and `detector_bbox` are turned by it, see [`crate::oriented`]) and
//! `corners`, the four corners of `bbox` turned, `[[x,y],..]` clockwise from the box's own
//! top-left (written, not read back: they follow from `bbox` and `angle`).
//! `segmentation`, `mask`, `keypoints`, `angle`, `corners`, `analytics`, `display`, `user_meta`
//! and `latency` are left out when absent or empty.
//!
//! JSON has no NaN or infinity. A number that is not finite (a model's raw output tensor may
//! hold them) is written as `null` and read back as NaN, so whatever a writer held a reader can
//! read (an infinity's sign is lost). Where such a number means nothing (boxes, angles,
//! keypoints, confidences), Ferrostream does not hold one: applications' edits are refused and
//! parsers drop or mark them; read from JSON, an object whose box is not finite (or beyond 2^24
//! pixels) is left out, and keypoints that are not finite are.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::analytics::{
    AttributeValue, BBox, Classification, ComponentLatency, Frame, FrameAnalytics, FrameLatency,
    Object, ObjectAnalytics,
};
use crate::display::DisplayElement;
use crate::keypoints::Keypoints;
use crate::mask::{ClassMap, InstanceMask};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameRecord {
    pub source_id: u32,
    pub frame_num: u64,
    pub pts_ns: Option<u64>,
    pub width: u32,
    pub height: u32,
    pub objects: Vec<ObjectRecord>,
    #[serde(default)]
    pub pad_index: u32,
    #[serde(default)]
    pub components_run: Vec<i32>,
    #[serde(default)]
    pub terminated_ids: Vec<u64>,
    #[serde(default)]
    pub source_width: u32,
    #[serde(default)]
    pub source_height: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segmentation: Option<ClassMap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analytics: Option<FrameAnalytics>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub display: Vec<DisplayElement>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_meta: BTreeMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyRecord>,
}

/// A frame's [`FrameLatency`], with the end-to-end time spelled out for readers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyRecord {
    pub origin_ns: u64,
    pub components: Vec<ComponentLatency>,
    /// The last component's exit less the origin; derived, so ignored when read.
    #[serde(default)]
    pub end_to_end_ns: u64,
}

impl From<&FrameLatency> for LatencyRecord {
    fn from(l: &FrameLatency) -> Self {
        Self {
            origin_ns: l.origin_ns,
            components: l.components.clone(),
            end_to_end_ns: l.end_to_end_ns(),
        }
    }
}

impl From<LatencyRecord> for FrameLatency {
    fn from(r: LatencyRecord) -> Self {
        Self {
            origin_ns: r.origin_ns,
            components: r.components,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectRecord {
    pub object_id: Option<u64>,
    pub class_id: i32,
    pub label: Arc<str>,
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub confidence: f32,
    pub bbox: BBox,
    pub component_id: i32,
    pub classifications: Vec<Classification>,
    pub attributes: BTreeMap<String, AttributeValue>,
    #[serde(default)]
    pub detector_bbox: Option<BBox>,
    #[serde(default)]
    pub tracker_bbox: Option<BBox>,
    #[serde(default)]
    pub tracker_confidence: Option<f32>,
    #[serde(default)]
    pub tracker_age: Option<u32>,
    #[serde(default)]
    pub parent: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<InstanceMask>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keypoints: Option<Keypoints>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub angle: Option<f32>,
    /// Written for readers; not read back (they follow from `bbox` and `angle`).
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub corners: Option<[[f32; 2]; 4]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analytics: Option<ObjectAnalytics>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_meta: BTreeMap<String, serde_json::Value>,
}

impl From<&Object> for ObjectRecord {
    fn from(o: &Object) -> Self {
        Self {
            object_id: o.object_id,
            class_id: o.class_id,
            label: o.label.clone(),
            confidence: o.confidence,
            bbox: o.bbox(),
            component_id: o.component_id,
            classifications: o.classifications.clone(),
            attributes: o.attributes.clone(),
            detector_bbox: Some(o.detector_bbox),
            tracker_bbox: o.tracker_bbox,
            tracker_confidence: o.tracker_confidence,
            tracker_age: o.tracker_age,
            parent: o.parent,
            mask: o.mask.clone(),
            keypoints: o.keypoints.clone(),
            angle: o.angle,
            corners: o.angle.map(|_| o.corners()),
            analytics: o.analytics.clone(),
            user_meta: o.user_meta.clone(),
        }
    }
}

impl From<ObjectRecord> for Object {
    fn from(r: ObjectRecord) -> Self {
        Self {
            object_id: r.object_id,
            class_id: r.class_id,
            label: r.label,
            confidence: r.confidence,
            // Records written by other tools may carry only `bbox`.
            detector_bbox: r.detector_bbox.unwrap_or(r.bbox),
            tracker_bbox: r.tracker_bbox,
            tracker_confidence: r.tracker_confidence,
            tracker_age: r.tracker_age,
            component_id: r.component_id,
            parent: r.parent,
            classifications: r.classifications,
            attributes: r.attributes,
            mask: r.mask.filter(InstanceMask::is_consistent),
            keypoints: r.keypoints.filter(Keypoints::is_consistent),
            angle: r.angle.filter(|a| a.is_finite()),
            analytics: r.analytics,
            user_meta: r.user_meta,
        }
    }
}

impl From<&Frame> for FrameRecord {
    fn from(f: &Frame) -> Self {
        Self {
            source_id: f.source_id,
            frame_num: f.frame_num,
            pts_ns: f.pts.map(|t| t.nseconds()),
            width: f.width,
            height: f.height,
            objects: f.objects.iter().map(ObjectRecord::from).collect(),
            pad_index: f.pad_index,
            components_run: f.components_run.clone(),
            terminated_ids: f.terminated_ids.clone(),
            source_width: f.source_width,
            source_height: f.source_height,
            segmentation: f.segmentation.clone(),
            analytics: f.analytics.clone(),
            display: f.display.clone(),
            user_meta: f.user_meta.clone(),
            latency: f.latency.as_ref().map(LatencyRecord::from),
        }
    }
}

impl From<FrameRecord> for Frame {
    fn from(r: FrameRecord) -> Self {
        Self {
            source_id: r.source_id,
            pad_index: r.pad_index,
            frame_num: r.frame_num,
            pts: r.pts_ns.map(gst::ClockTime::from_nseconds),
            width: r.width,
            height: r.height,
            // Records written by other tools may lack the source size.
            source_width: if r.source_width == 0 {
                r.width
            } else {
                r.source_width
            },
            source_height: if r.source_height == 0 {
                r.height
            } else {
                r.source_height
            },
            surface_index: 0,
            components_run: r.components_run,
            terminated_ids: r.terminated_ids,
            objects: bounded_objects(r.objects),
            segmentation: r.segmentation,
            analytics: r.analytics,
            display: r
                .display
                .into_iter()
                .filter(|e| e.validate().is_ok())
                .collect(),
            user_meta: r.user_meta,
            latency: r.latency.map(FrameLatency::from),
        }
    }
}

/// The objects of records, less those whose boxes are not finite or beyond
/// [`crate::edit::MAX_COORDINATE`] (another tool's, or a `null` read as NaN): no element
/// downstream (tracker, clustering, drawing) is handed a box at infinity. Parents keep pointing
/// at the same objects.
fn bounded_objects(records: Vec<ObjectRecord>) -> Vec<Object> {
    let mut frame = Frame::new(0, 0, 0, 0);
    frame.objects = records.into_iter().map(Object::from).collect();
    for i in (0..frame.objects.len()).rev() {
        let o = &frame.objects[i];
        let boxes_ok = crate::edit::is_bounded(&o.detector_bbox)
            && o.tracker_bbox.as_ref().is_none_or(crate::edit::is_bounded);
        if !boxes_ok {
            crate::edit::remove_object(&mut frame, i);
        }
    }
    frame.objects
}

/// Writes `frame` as one line of JSON.
pub fn write_frame_line(out: &mut impl Write, frame: &Frame) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &FrameRecord::from(frame))?;
    out.write_all(b"\n")
}

/// Parses one line written by [`write_frame_line`] (or by another tool following the schema).
pub fn parse_frame_line(line: &str) -> serde_json::Result<Frame> {
    serde_json::from_str::<FrameRecord>(line).map(Frame::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        let mut frame = Frame::new(2, 9, 768, 576);
        frame.pts = Some(gst::ClockTime::from_mseconds(900));
        frame.components_run = vec![1, 2];
        frame.terminated_ids = vec![17];
        let mut o = Object::new(
            0,
            "person".into(),
            0.75,
            BBox::new(1.5, 2.0, 30.0, 60.25),
            1,
        );
        o.object_id = Some(42);
        o.tracker_bbox = Some(BBox::new(2.0, 2.5, 29.0, 61.0));
        o.tracker_confidence = Some(0.6);
        o.tracker_age = Some(12);
        o.classifications.push(Classification {
            component_id: 2,
            class_id: 805,
            label: "soccer ball".into(),
            prob: 0.93,
        });
        o.attributes
            .insert("speed".into(), AttributeValue::Float(1.25));
        o.attributes
            .insert("landmarks".into(), AttributeValue::Floats(vec![1.0, 2.5]));
        o.attributes
            .insert("note".into(), AttributeValue::Text("parked".into()));
        o.mask = Some(InstanceMask::from_cells(
            3,
            2,
            [false, true, true, true, true, false].into_iter(),
        ));
        frame.objects.push(o);
        frame.segmentation = Some(ClassMap::from_cells(4, 1, 2, 5, &[-1, 1, 1, 0]));
        let mut child = Object::new(1, "face".into(), 0.5, BBox::new(5.0, 5.0, 8.0, 8.0), 3);
        child.parent = Some(0);
        frame.objects.push(child);
        frame
            .display
            .push(DisplayElement::Line(crate::display::DisplayLine {
                x1: 0.0,
                y1: 1.0,
                x2: 30.0,
                y2: 40.0,
                width: 2,
                color: [0, 255, 0, 255],
            }));
        frame.user_meta.insert(
            "zone".into(),
            serde_json::json!({"name": "gate", "open": true}),
        );
        frame.objects[0]
            .user_meta
            .insert("checked".into(), serde_json::json!([1, 2, 3]));
        frame.latency = Some(FrameLatency {
            origin_ns: 1_000,
            components: vec![
                ComponentLatency {
                    component: "mux".into(),
                    entry_ns: 1_000,
                    exit_ns: 1_500,
                },
                ComponentLatency {
                    component: "infer".into(),
                    entry_ns: 1_600,
                    exit_ns: 4_000,
                },
            ],
        });
        frame
    }

    #[test]
    fn round_trip_keeps_everything() {
        let mut out = Vec::new();
        write_frame_line(&mut out, &frame()).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.ends_with('\n'));
        assert_eq!(parse_frame_line(line.trim_end()).unwrap(), frame());
    }

    #[test]
    fn schema_field_names_and_types() {
        let mut out = Vec::new();
        write_frame_line(&mut out, &frame()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["source_id"], 2);
        assert_eq!(v["frame_num"], 9);
        assert_eq!(v["pts_ns"], 900_000_000u64);
        assert_eq!(v["width"], 768);
        assert_eq!(v["height"], 576);
        let o = &v["objects"][0];
        assert_eq!(o["object_id"], 42);
        assert_eq!(o["class_id"], 0);
        assert_eq!(o["label"], "person");
        assert_eq!(o["component_id"], 1);
        // `bbox` is the tracker's box when there is one.
        assert_eq!(o["bbox"]["left"], 2.0);
        assert_eq!(o["bbox"]["height"], 61.0);
        assert_eq!(o["detector_bbox"]["left"], 1.5);
        assert_eq!(o["classifications"][0]["label"], "soccer ball");
        assert_eq!(o["classifications"][0]["class_id"], 805);
        assert_eq!(o["attributes"]["speed"], 1.25);
        assert_eq!(o["attributes"]["landmarks"][1], 2.5);
        assert!(v["objects"][1]["object_id"].is_null());
        assert_eq!(v["user_meta"]["zone"]["name"], "gate");
        assert_eq!(v["objects"][0]["user_meta"]["checked"][2], 3);
        assert_eq!(v["display"][0]["kind"], "line");
        assert!(v["objects"][1].get("user_meta").is_none());
        let latency = &v["latency"];
        assert_eq!(latency["origin_ns"], 1_000);
        assert_eq!(latency["components"][0]["component"], "mux");
        assert_eq!(latency["components"][0]["entry_ns"], 1_000);
        assert_eq!(latency["components"][0]["exit_ns"], 1_500);
        assert_eq!(latency["components"][1]["component"], "infer");
        assert_eq!(latency["end_to_end_ns"], 3_000);
    }

    #[test]
    fn oriented_boxes_carry_their_angle_and_turned_corners() {
        let mut frame = frame();
        frame.objects[1].angle = Some(std::f32::consts::FRAC_PI_2);
        let mut out = Vec::new();
        write_frame_line(&mut out, &frame).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        // The face's 8x8 box at (5, 5) turned a quarter: the same square, corners rotated.
        let face = &v["objects"][1];
        assert_eq!(
            face["angle"].as_f64().unwrap() as f32,
            std::f32::consts::FRAC_PI_2
        );
        let corners: Vec<[f32; 2]> = serde_json::from_value(face["corners"].clone()).unwrap();
        let want = [[13.0, 5.0], [13.0, 13.0], [5.0, 13.0], [5.0, 5.0]];
        for (c, w) in corners.iter().zip(want) {
            assert!(
                (c[0] - w[0]).abs() < 1e-4 && (c[1] - w[1]).abs() < 1e-4,
                "{corners:?}"
            );
        }
        // Axis-aligned objects have neither; the angle reads back, the corners are derived.
        assert!(v["objects"][0].get("angle").is_none() && v["objects"][0].get("corners").is_none());
        let back = parse_frame_line(std::str::from_utf8(&out).unwrap()).unwrap();
        assert_eq!(back.objects[1].angle, frame.objects[1].angle);
        assert_eq!(back.objects[0].angle, None);
    }

    #[test]
    fn latency_is_left_out_when_not_tracked() {
        let mut frame = frame();
        frame.latency = None;
        let mut out = Vec::new();
        write_frame_line(&mut out, &frame).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v.get("latency").is_none());
        let line = String::from_utf8(out).unwrap();
        assert_eq!(parse_frame_line(line.trim_end()).unwrap().latency, None);
    }

    #[test]
    fn accepts_minimal_records_from_other_tools() {
        let line = r#"{"source_id":0,"frame_num":1,"pts_ns":null,"width":10,"height":10,"objects":[{"object_id":null,"class_id":3,"label":"car","confidence":0.5,"bbox":{"left":1,"top":2,"width":3,"height":4},"component_id":1,"classifications":[],"attributes":{}}]}"#;
        let frame = parse_frame_line(line).unwrap();
        assert_eq!(frame.pts, None);
        assert_eq!(
            frame.objects[0].detector_bbox,
            BBox::new(1.0, 2.0, 3.0, 4.0)
        );
        assert_eq!(frame.objects[0].tracker_bbox, None);
        assert_eq!(frame.latency, None);
    }

    /// Numbers that are not finite are written as `null` and read back as NaN: a line a writer
    /// produced is always readable (a model's raw tensor may hold NaN and infinities).
    #[test]
    fn numbers_that_are_not_finite_read_back_as_nan() {
        let mut f = frame();
        let o = &mut f.objects[0];
        o.attributes.insert(
            "tensor:1:out".into(),
            AttributeValue::Floats(vec![1.0, f32::INFINITY, f32::NAN]),
        );
        o.attributes
            .insert("ratio".into(), AttributeValue::Float(f64::NAN));
        o.classifications.push(Classification {
            component_id: 2,
            class_id: 0,
            label: "x".into(),
            prob: f32::NAN,
        });
        o.confidence = f32::NAN;
        o.keypoints = Some(Keypoints {
            points: vec![crate::keypoints::Keypoint {
                name: "nose".into(),
                x: f32::NAN,
                y: 1.0,
                confidence: f32::INFINITY,
            }],
            skeleton: Arc::from(vec![]),
        });
        o.angle = Some(0.5);
        let mut line = Vec::new();
        write_frame_line(&mut line, &f).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert!(text.contains("[1.0,null,null]"), "{text}");
        let read = parse_frame_line(&text).unwrap();
        let r = &read.objects[0];
        let Some(AttributeValue::Floats(v)) = r.attributes.get("tensor:1:out") else {
            panic!("{:?}", r.attributes)
        };
        assert_eq!(v[0], 1.0);
        assert!(v[1].is_nan() && v[2].is_nan());
        assert!(matches!(r.attributes["ratio"], AttributeValue::Float(x) if x.is_nan()));
        assert!(r.confidence.is_nan() && r.classifications.last().unwrap().prob.is_nan());
        // Keypoints that are not finite are no keypoints (as from an application's JSON).
        assert_eq!(r.keypoints, None);
    }

    /// An object whose box is not finite (`null`) or beyond 2^24 pixels is not read: the
    /// others are, their parents kept.
    #[test]
    fn objects_with_boxes_at_infinity_are_not_read() {
        let mut f = frame();
        let base = f.objects[0].clone();
        f.objects = (0..4).map(|_| base.clone()).collect();
        f.objects[1].detector_bbox = BBox::new(f32::NAN, 0.0, 1.0, 1.0);
        f.objects[2].tracker_bbox = Some(BBox::new(0.0, 0.0, 3e38, 1.0));
        f.objects[3].parent = Some(0);
        f.objects[3].class_id = 77;
        let mut line = Vec::new();
        write_frame_line(&mut line, &f).unwrap();
        let read = parse_frame_line(std::str::from_utf8(&line).unwrap()).unwrap();
        assert_eq!(read.objects.len(), 2, "{:?}", read.objects);
        assert_eq!(
            (read.objects[1].class_id, read.objects[1].parent),
            (77, Some(0))
        );
    }
}
