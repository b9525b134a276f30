// SPDX-License-Identifier: MIT OR Apache-2.0
//! YOLOv8/YOLO11-pose: `[N,4+C+3K,B]`, the attributes of each anchor down a column: centre box
//! in network pixels, C class scores (no objectness), then K keypoints as x, y in network pixels
//! and a confidence (`num-keypoints`, 17 for COCO's people: `[N,56,B]`). A keypoint with a
//! value that is not finite, or far off the input, is kept at the box's centre with confidence
//! 0.

use super::anchor::{self, AnchorLayout, Select};
use super::{Family, ParserSettings, item_dims, single_rows_output};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct YoloV8Pose {
    pub output: usize,
    /// Keypoints per anchor.
    pub keypoints: usize,
}

impl YoloV8Pose {
    /// The class scores of an output of `rows` rows.
    fn classes(&self, rows: usize) -> Option<usize> {
        rows.checked_sub(4 + 3 * self.keypoints).filter(|&c| c > 0)
    }
}

/// A keypoint `[x, y, confidence]` as the model gave it, or `None` where it gave none: a value
/// that is not finite, or a position more than the network input's size outside it (no model
/// means that; scaled to the frame it would overflow). Such a point keeps its place in the
/// list, which the skeleton indexes, at the box's centre with confidence 0: not drawn, not
/// exported as `null`.
fn given(k: &[f32], net: (u32, u32)) -> Option<[f32; 3]> {
    let (w, h) = (net.0 as f32, net.1 as f32);
    let &[x, y, confidence] = k else { return None };
    (confidence.is_finite() && (-w..=2.0 * w).contains(&x) && (-h..=2.0 * h).contains(&y))
        .then_some([x, y, confidence])
}

impl Family for YoloV8Pose {
    /// One output `[N,4+1+3K,B]` (one class, `num-keypoints` K) with fewer rows than columns.
    /// A YOLOv8 detector with as many classes has the same shape: its first detections tell
    /// them apart ([`Family::implausible`]).
    fn recognise(outputs: &[TensorInfo], settings: &ParserSettings) -> bool {
        let rows = 4 + 1 + 3 * settings.keypoints;
        matches!(outputs, [o] if matches!(item_dims(o), [Some(a), Some(b)] if *a == rows && a < b))
    }

    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String> {
        let output = single_rows_output(outputs, "YOLOv8-pose")?;
        let family = YoloV8Pose {
            output,
            keypoints: settings.keypoints,
        };
        if let [Some(rows), _] = item_dims(&outputs[output])
            && family.classes(*rows).is_none()
        {
            return Err(format!(
                "YOLOv8-pose output {} has {rows} values per anchor: too few for a box, a class \
                 score and {} keypoints of 3 values (num-keypoints)",
                outputs[output], settings.keypoints
            ));
        }
        Ok(family)
    }

    fn kind(&self) -> ParserKind {
        ParserKind::YoloV8Pose
    }

    fn summary(&self) -> String {
        format!("YoloV8Pose ({} keypoints)", self.keypoints)
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        match item_dims(&outputs[self.output]) {
            [Some(rows), _] => self.classes(*rows),
            _ => None,
        }
    }

    fn default_labels(&self) -> &'static [&'static str] {
        &["person"]
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        Some(match shapes.get(self.output).copied().unwrap_or(&[]) {
            [_, rows, boxes] if self.classes(*rows).is_some() => Ok(AnchorLayout {
                anchors: *boxes,
                groups: vec![anchor::group(self.output, 0, 1, *boxes, *rows)],
                select: Select::BestClass {
                    start: 4,
                    count: self.classes(*rows).unwrap_or(1),
                    objectness: None,
                },
            }),
            other => Err(format!(
                "YOLOv8-pose output {other:?} has no room for {} keypoints (num-keypoints)",
                self.keypoints
            )),
        })
    }

    fn decode_anchor(
        &self,
        row: &[f32],
        _anchor: usize,
        _heatmap_width: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        _min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let points = 3 * self.keypoints;
        let Some(classes) = row.len().checked_sub(4 + points).filter(|&c| c > 0) else {
            return;
        };
        let (class, score) = anchor::argmax(&row[4..4 + classes]);
        let bbox = anchor::centre_box(row[0], row[1], row[2], row[3]);
        if anchor::keep(out, attrs, class as u32, score, bbox, Vec::new())
            && let Some(d) = out.last_mut()
        {
            d.keypoints = row[4 + classes..]
                .chunks_exact(3)
                .flat_map(|k| given(k, net).unwrap_or([row[0], row[1], 0.0]))
                .collect();
        }
    }

    /// Besides the box and score: keypoint confidences must be probabilities, and keypoints of
    /// a box larger than a few pixels cannot all lie within a pixel of the input's corner (class
    /// scores of a YOLOv8 detector read as keypoints would).
    fn implausible(&self, d: &Detection, net: (u32, u32)) -> Option<String> {
        if let Some(why) = super::implausible(d, net) {
            return Some(why);
        }
        let triples = d.keypoints.chunks_exact(3);
        if let Some(c) = triples
            .clone()
            .map(|k| k[2])
            .find(|c| !(0.0..=1.001).contains(c))
        {
            return Some(format!("a keypoint confidence of {c}"));
        }
        let near_origin = triples
            .clone()
            .all(|k| k[0].abs() <= 1.0 && k[1].abs() <= 1.0);
        (near_origin && triples.len() > 0 && d.bbox.width.min(d.bbox.height) > 4.0).then(|| {
            "keypoints all within a pixel of the input's corner (class scores rather than \
             keypoints: a YOLOv8 detector? set output-parser)"
                .to_string()
        })
    }
}
