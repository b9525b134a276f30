// SPDX-License-Identifier: MIT OR Apache-2.0
//! Plain analytics data: what a buffer carries through a Ferrostream pipeline.
//!
//! A buffer carries one [`Batch`] (in a [`BatchMeta`](crate::meta::BatchMeta)); a plain video
//! buffer is a batch of one frame. Frames hold the [`Object`]s that inference and tracking found.
//! Boxes are in pixels of the frame the metadata describes (`Frame::width` x `Frame::height`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[cfg(feature = "gst")]
use crate::display::DisplayElement;

/// A rectangle in frame pixels.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct BBox {
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub left: f32,
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub top: f32,
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub width: f32,
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub height: f32,
}

impl BBox {
    pub fn new(left: f32, top: f32, width: f32, height: f32) -> Self {
        Self {
            left,
            top,
            width,
            height,
        }
    }

    /// Builds a box from its corners.
    pub fn from_corners(left: f32, top: f32, right: f32, bottom: f32) -> Self {
        Self::new(left, top, right - left, bottom - top)
    }

    pub fn right(&self) -> f32 {
        self.left + self.width
    }

    pub fn bottom(&self) -> f32 {
        self.top + self.height
    }

    pub fn area(&self) -> f32 {
        self.width.max(0.0) * self.height.max(0.0)
    }

    /// Intersection over union; 0 when either box is empty.
    pub fn iou(&self, other: &BBox) -> f32 {
        let w = self.right().min(other.right()) - self.left.max(other.left);
        let h = self.bottom().min(other.bottom()) - self.top.max(other.top);
        if w <= 0.0 || h <= 0.0 {
            return 0.0;
        }
        let inter = w * h;
        let union = self.area() + other.area() - inter;
        if union <= 0.0 { 0.0 } else { inter / union }
    }

    /// The part of the box inside a `width` x `height` frame (possibly empty).
    pub fn clipped(&self, width: f32, height: f32) -> BBox {
        let left = self.left.clamp(0.0, width);
        let top = self.top.clamp(0.0, height);
        let right = self.right().clamp(0.0, width);
        let bottom = self.bottom().clamp(0.0, height);
        BBox::from_corners(left, top, right.max(left), bottom.max(top))
    }

    /// The middle of the bottom edge: where an object stands, the point region and line rules
    /// use (as nvdsanalytics does).
    pub fn bottom_center(&self) -> [f32; 2] {
        [self.left + self.width / 2.0, self.bottom()]
    }

    /// The box moved by `dx`, `dy` pixels.
    pub fn translated(&self, dx: f32, dy: f32) -> BBox {
        BBox::new(self.left + dx, self.top + dy, self.width, self.height)
    }

    /// Scales the box by independent factors on each axis.
    pub fn scaled(&self, sx: f32, sy: f32) -> BBox {
        BBox::new(
            self.left * sx,
            self.top * sy,
            self.width * sx,
            self.height * sy,
        )
    }
}

/// One classifier's verdict on an object (or on a whole frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// `gie-unique-id` of the classifier that produced it.
    pub component_id: i32,
    pub class_id: i32,
    pub label: Arc<str>,
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub prob: f32,
}

/// A free-form attribute value attached to an object.
///
/// Serialised as the plain JSON value (number, string, bool or array of numbers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AttributeValue {
    Bool(bool),
    Int(i64),
    /// `null` in JSON: a number that was not finite.
    Float(#[serde(deserialize_with = "crate::nullable::f64")] f64),
    Text(String),
    Floats(#[serde(deserialize_with = "crate::nullable::f32s")] Vec<f32>),
}

/// The direction in which an object crossed a counting line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Crossing {
    /// From the side the line's direction arrow starts on to the side it points to.
    Forward,
    /// Against the arrow.
    Backward,
}

/// A line an object crossed in this frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineCrossing {
    pub line: Arc<str>,
    pub direction: Crossing,
}

/// What region and line rules (`rsanalytics`) found about one object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ObjectAnalytics {
    /// Regions of interest the object is in (outside of, for an `inverse-roi` region).
    #[serde(default)]
    pub rois: Vec<Arc<str>>,
    /// Overcrowding regions the object is in.
    #[serde(default)]
    pub overcrowding: Vec<Arc<str>>,
    /// Lines the object crossed in this frame.
    #[serde(default)]
    pub crossed: Vec<LineCrossing>,
    /// The named direction the object moves in, if it matches one.
    #[serde(default)]
    pub direction: Option<Arc<str>>,
}

/// The state of an overcrowding region in one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crowding {
    /// Objects in the region.
    pub count: u32,
    /// The count at which the region is crowded.
    pub threshold: u32,
    pub crowded: bool,
}

/// Crossings of one line: in this frame and since the stream started.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LineCounts {
    pub forward: u32,
    pub backward: u32,
    pub forward_total: u64,
    pub backward_total: u64,
    /// Totals per class id: `[forward, backward]`.
    #[serde(default)]
    pub per_class: BTreeMap<i32, [u64; 2]>,
}

/// The kind of a rule's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShapeKind {
    /// A region of interest (polygon).
    Roi,
    /// An overcrowding region (polygon).
    Overcrowding,
    /// A counting line: the line's two points, then its direction arrow's two.
    Line,
    /// A named direction: the arrow's two points.
    Direction,
}

/// The geometry of one rule, in pixels of the frame, for drawing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    pub kind: ShapeKind,
    pub label: Arc<str>,
    pub points: Vec<[f32; 2]>,
}

/// What region and line rules (`rsanalytics`) found in one frame.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FrameAnalytics {
    /// Objects in each region of interest.
    #[serde(default)]
    pub roi_counts: BTreeMap<String, u32>,
    /// Each overcrowding region's count and state.
    #[serde(default)]
    pub overcrowding: BTreeMap<String, Crowding>,
    /// Each line's crossings.
    #[serde(default)]
    pub lines: BTreeMap<String, LineCounts>,
    /// Objects in the frame per class id.
    #[serde(default)]
    pub object_counts: BTreeMap<i32, u32>,
    /// The rules' geometry, for drawing.
    #[serde(default)]
    pub shapes: Vec<Shape>,
    /// What to draw (nvdsanalytics' `osd-mode`): 0 nothing, 1 the shapes and labels, 2 also the
    /// counts.
    #[serde(default)]
    pub osd_mode: u32,
    /// Also draw the objects per class (nvdsanalytics' `display-obj-cnt`).
    #[serde(default)]
    pub display_obj_cnt: bool,
}

impl FrameAnalytics {
    /// These results with every rule's label given `suffix` and every point moved by `map`
    /// (a frame placed in a mosaic, say).
    pub fn relabeled(&self, suffix: &str, map: impl Fn([f32; 2]) -> [f32; 2]) -> Self {
        let name = |label: &str| format!("{label}{suffix}");
        FrameAnalytics {
            roi_counts: self.roi_counts.iter().map(|(k, v)| (name(k), *v)).collect(),
            overcrowding: self
                .overcrowding
                .iter()
                .map(|(k, v)| (name(k), *v))
                .collect(),
            lines: self
                .lines
                .iter()
                .map(|(k, v)| (name(k), v.clone()))
                .collect(),
            object_counts: self.object_counts.clone(),
            shapes: self
                .shapes
                .iter()
                .map(|s| Shape {
                    kind: s.kind,
                    label: name(&s.label).into(),
                    points: s.points.iter().copied().map(&map).collect(),
                })
                .collect(),
            osd_mode: self.osd_mode,
            display_obj_cnt: self.display_obj_cnt,
        }
    }

    /// Adds the results of another frame (with labels of its own) to these.
    pub fn merge(&mut self, other: FrameAnalytics) {
        self.roi_counts.extend(other.roi_counts);
        self.overcrowding.extend(other.overcrowding);
        self.lines.extend(other.lines);
        for (class, n) in other.object_counts {
            *self.object_counts.entry(class).or_default() += n;
        }
        self.shapes.extend(other.shapes);
        self.osd_mode = self.osd_mode.max(other.osd_mode);
        self.display_obj_cnt |= other.display_obj_cnt;
    }
}

/// When one element had a frame: the process's monotonic clock (`gst_util_get_timestamp`), in
/// nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ComponentLatency {
    /// The element's name (shared by every record of that element).
    pub component: Arc<str>,
    /// When the frame (its batch) reached the element.
    pub entry_ns: u64,
    /// When the element passed it on.
    pub exit_ns: u64,
}

/// A frame's walk through the pipeline, recorded when `rsstreammux` has `latency-tracking` on
/// (see [`crate::latency`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FrameLatency {
    /// When the frame reached the muxer (same clock as the components' times).
    pub origin_ns: u64,
    /// The elements that had the frame, in the order they had it.
    pub components: Vec<ComponentLatency>,
}

impl FrameLatency {
    /// A frame that reached the muxer at `origin_ns`.
    pub fn new(origin_ns: u64) -> Self {
        Self {
            origin_ns,
            components: Vec::new(),
        }
    }

    /// From the frame's arrival at the muxer to the last component's exit (0 before any).
    pub fn end_to_end_ns(&self) -> u64 {
        self.components
            .last()
            .map_or(0, |c| c.exit_ns.saturating_sub(self.origin_ns))
    }
}

/// An object found in a frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// Tracker id, unique across sources; `None` until a tracker assigns one.
    pub object_id: Option<u64>,
    /// Index into the producing component's label list.
    pub class_id: i32,
    pub label: Arc<str>,
    /// Detector confidence (0..1).
    pub confidence: f32,
    /// The box as the detector produced it.
    pub detector_bbox: BBox,
    /// An oriented box's angle (radians about the box's centre, clockwise on the screen; see
    /// [`crate::oriented`]): both boxes are turned by it. `None` for an axis-aligned box.
    pub angle: Option<f32>,
    /// The tracker's (smoothed or predicted) box, when a tracker ran.
    pub tracker_bbox: Option<BBox>,
    pub tracker_confidence: Option<f32>,
    /// Frames since the tracker first saw this object.
    pub tracker_age: Option<u32>,
    /// `gie-unique-id` of the component that produced the object.
    pub component_id: i32,
    /// Index of the parent object in the same frame's object list (e.g. a face inside a person).
    pub parent: Option<u32>,
    pub classifications: Vec<Classification>,
    pub attributes: BTreeMap<String, AttributeValue>,
    /// The object's instance mask, laid over `detector_bbox` (instance segmentation).
    pub mask: Option<crate::mask::InstanceMask>,
    /// Named points of the object in frame pixels (a pose model's joints) and their skeleton.
    pub keypoints: Option<crate::keypoints::Keypoints>,
    /// Region and line rules' results (`rsanalytics`).
    pub analytics: Option<ObjectAnalytics>,
    /// Values an application attached under keys of its own (any JSON value); exported with
    /// the object.
    pub user_meta: BTreeMap<String, serde_json::Value>,
}

impl Object {
    /// A fresh, untracked detection.
    pub fn new(
        class_id: i32,
        label: Arc<str>,
        confidence: f32,
        bbox: BBox,
        component_id: i32,
    ) -> Self {
        Self {
            object_id: None,
            class_id,
            label,
            confidence,
            detector_bbox: bbox,
            angle: None,
            tracker_bbox: None,
            tracker_confidence: None,
            tracker_age: None,
            component_id,
            parent: None,
            classifications: Vec::new(),
            attributes: BTreeMap::new(),
            mask: None,
            keypoints: None,
            analytics: None,
            user_meta: BTreeMap::new(),
        }
    }

    /// The box to show: the tracker's when there is one, else the detector's.
    pub fn bbox(&self) -> BBox {
        self.tracker_bbox.unwrap_or(self.detector_bbox)
    }

    /// The corners of the box to show, turned by the object's angle (see
    /// [`crate::oriented::corners`]).
    pub fn corners(&self) -> [[f32; 2]; 4] {
        crate::oriented::corners(&self.bbox(), self.angle.unwrap_or(0.0))
    }

    /// Where the object stands: the middle of the bottom edge of the box to show, for a turned
    /// box the middle of its side lowest on the screen (the point region and line rules use;
    /// see [`crate::oriented::bottom_center`]).
    pub fn ground_point(&self) -> [f32; 2] {
        crate::oriented::bottom_center(&self.bbox(), self.angle.unwrap_or(0.0))
    }

    /// The axis-aligned box holding the box to show (the box itself when it is not turned).
    pub fn bounding_box(&self) -> BBox {
        match self.angle {
            Some(angle) if angle != 0.0 => crate::oriented::bounding(&self.bbox(), angle),
            _ => self.bbox(),
        }
    }

    /// Whether the box is turned (an oriented box with an angle other than 0).
    pub fn is_turned(&self) -> bool {
        self.angle.is_some_and(|a| a != 0.0)
    }

    /// Scales the object by independent factors on each axis (see
    /// [`crate::oriented::scaled`] for turned boxes).
    pub fn scale(&mut self, sx: f32, sy: f32) {
        let angle = self.angle.unwrap_or(0.0);
        let (detector, turned) = crate::oriented::scaled(&self.detector_bbox, angle, sx, sy);
        self.detector_bbox = detector;
        self.tracker_bbox = self
            .tracker_bbox
            .map(|b| crate::oriented::scaled(&b, angle, sx, sy).0);
        self.angle = self.angle.map(|_| turned);
        self.keypoints = self.keypoints.as_ref().map(|k| k.scaled(sx, sy));
    }

    /// Moves the object's boxes and keypoints by `dx`, `dy` pixels.
    pub fn translate(&mut self, dx: f32, dy: f32) {
        self.detector_bbox = self.detector_bbox.translated(dx, dy);
        self.tracker_bbox = self.tracker_bbox.map(|b| b.translated(dx, dy));
        if let Some(k) = self.keypoints.as_mut() {
            k.map(|x, y| (x + dx, y + dy));
        }
    }
}

/// One frame of a batch and everything known about it.
#[cfg(feature = "gst")]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frame {
    /// Source (camera) id; the muxer's pad index for batched streams, 0 for a single stream.
    pub source_id: u32,
    /// Index of the muxer sink pad the frame arrived on.
    pub pad_index: u32,
    /// Per-source frame counter.
    pub frame_num: u64,
    /// Presentation timestamp of the source frame.
    pub pts: Option<gst::ClockTime>,
    /// Size of the frame the boxes refer to.
    pub width: u32,
    pub height: u32,
    /// Size of the frame as the source produced it (differs from `width` x `height` when
    /// `rsstreammux` scaled it).
    pub source_width: u32,
    pub source_height: u32,
    /// Index of the buffer memory (or NvBufSurface entry) that holds this frame's pixels.
    pub surface_index: u32,
    /// `gie-unique-id`s of the inference components that processed this frame.
    pub components_run: Vec<i32>,
    pub objects: Vec<Object>,
    /// Tracker ids of the targets that ended in this frame.
    pub terminated_ids: Vec<u64>,
    /// The frame's class map (semantic segmentation), stretched over the whole frame.
    pub segmentation: Option<crate::mask::ClassMap>,
    /// Region and line rules' results (`rsanalytics`).
    pub analytics: Option<FrameAnalytics>,
    /// Text, rectangles and lines an application asked `rsosd` to draw, in frame pixels.
    pub display: Vec<DisplayElement>,
    /// Values an application attached under keys of its own (any JSON value); exported with
    /// the frame.
    pub user_meta: BTreeMap<String, serde_json::Value>,
    /// When each element had the frame; `None` unless `rsstreammux` tracks latency.
    pub latency: Option<FrameLatency>,
}

#[cfg(feature = "gst")]
impl Frame {
    pub fn new(source_id: u32, frame_num: u64, width: u32, height: u32) -> Self {
        Self {
            source_id,
            pad_index: source_id,
            frame_num,
            width,
            height,
            source_width: width,
            source_height: height,
            ..Default::default()
        }
    }

    /// Rescales every box from the frame's current size to `width` x `height`.
    pub fn rescale(&mut self, width: u32, height: u32) {
        if self.width == 0 || self.height == 0 {
            self.width = width;
            self.height = height;
            return;
        }
        let sx = width as f32 / self.width as f32;
        let sy = height as f32 / self.height as f32;
        for object in &mut self.objects {
            object.scale(sx, sy);
        }
        if let Some(analytics) = &mut self.analytics {
            for point in analytics
                .shapes
                .iter_mut()
                .flat_map(|s| s.points.iter_mut())
            {
                *point = [point[0] * sx, point[1] * sy];
            }
        }
        for element in &mut self.display {
            *element = element.mapped(|[x, y]| [x * sx, y * sy]);
        }
        self.width = width;
        self.height = height;
    }

    /// Records that component `component_id` processed this frame (once).
    pub fn mark_component_run(&mut self, component_id: i32) {
        if !self.components_run.contains(&component_id) {
            self.components_run.push(component_id);
        }
    }
}

/// The frames a buffer carries.
#[cfg(feature = "gst")]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub frames: Vec<Frame>,
}

#[cfg(feature = "gst")]
impl Batch {
    /// A batch holding one frame.
    pub fn single(frame: Frame) -> Self {
        Self {
            frames: vec![frame],
        }
    }

    /// Total number of objects over all frames.
    pub fn object_count(&self) -> usize {
        self.frames.iter().map(|f| f.objects.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iou_of_identical_and_disjoint_boxes() {
        let a = BBox::new(10.0, 10.0, 20.0, 20.0);
        assert!((a.iou(&a) - 1.0).abs() < 1e-6);
        assert_eq!(a.iou(&BBox::new(40.0, 40.0, 5.0, 5.0)), 0.0);
        let half = BBox::new(20.0, 10.0, 20.0, 20.0);
        assert!((a.iou(&half) - 1.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn clipping_keeps_inside_part() {
        let b = BBox::new(-10.0, 90.0, 30.0, 30.0).clipped(100.0, 100.0);
        assert_eq!(b, BBox::new(0.0, 90.0, 20.0, 10.0));
        let outside = BBox::new(200.0, 200.0, 5.0, 5.0).clipped(100.0, 100.0);
        assert_eq!(outside.area(), 0.0);
    }

    #[cfg(feature = "gst")]
    #[test]
    fn rescale_moves_both_boxes() {
        let mut frame = Frame::new(0, 0, 200, 100);
        let mut obj = Object::new(
            0,
            "person".into(),
            0.9,
            BBox::new(20.0, 10.0, 40.0, 20.0),
            1,
        );
        obj.tracker_bbox = Some(BBox::new(22.0, 12.0, 40.0, 20.0));
        frame.objects.push(obj);
        frame.rescale(100, 50);
        assert_eq!(frame.width, 100);
        assert_eq!(frame.height, 50);
        assert_eq!(
            frame.objects[0].detector_bbox,
            BBox::new(10.0, 5.0, 20.0, 10.0)
        );
        assert_eq!(
            frame.objects[0].tracker_bbox,
            Some(BBox::new(11.0, 6.0, 20.0, 10.0))
        );
    }
}
