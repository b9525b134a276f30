// SPDX-License-Identifier: MIT OR Apache-2.0
//! YOLOv8/YOLO11-OBB: `[N,4+C+1,B]`, the attributes of each anchor down a column: centre box in
//! network pixels (the box's own width and height, before it is turned), C class scores (no
//! objectness), then the angle in radians (`[-pi/4, 3pi/4)` as Ultralytics exports it; 15 DOTA
//! classes: `[N,20,B]`).
//!
//! A turned rectangle has two forms: its sides swapped and a quarter turn added is the same box.
//! Boxes are given in the form nearest upright: the width is the side nearer the horizontal and
//! the angle lies in `[-pi/4, pi/4)` (Ultralytics regularises to `[0, pi/2)` instead, which
//! swaps the sides of nearly upright boxes as their angle crosses 0; here that happens only to
//! boxes turned by about 45 degrees; see `ferrostream_core::oriented::upright`). An angle that
//! is not finite or more than two turns either way is no angle: that anchor gives no box. Sides
//! are bounded by the input's diagonal (an axis-aligned box is clipped instead). The
//! layout is a YOLOv8 detector's with one more class, so
//! it is not guessed: `output-parser=yolov8-obb` names it.

use ferrostream_core::oriented;

use super::anchor::{self, AnchorLayout, Select};
use super::{Family, ParserSettings, item_dims, single_rows_output};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct YoloV8Obb {
    pub output: usize,
}

/// The class scores of an output of `rows` rows (box, scores, angle).
fn classes(rows: usize) -> Option<usize> {
    rows.checked_sub(5).filter(|&c| c > 0)
}

impl Family for YoloV8Obb {
    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        let output = single_rows_output(outputs, "YOLOv8-OBB")?;
        if let [Some(rows), _] = item_dims(&outputs[output])
            && classes(*rows).is_none()
        {
            return Err(format!(
                "YOLOv8-OBB output {} has {rows} values per anchor: too few for a box, a class \
                 score and an angle",
                outputs[output]
            ));
        }
        Ok(YoloV8Obb { output })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::YoloV8Obb
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        match item_dims(&outputs[self.output]) {
            [Some(rows), _] => classes(*rows),
            _ => None,
        }
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        Some(match shapes.get(self.output).copied().unwrap_or(&[]) {
            [_, rows, boxes] if classes(*rows).is_some() => Ok(AnchorLayout {
                anchors: *boxes,
                groups: vec![anchor::group(self.output, 0, 1, *boxes, *rows)],
                select: Select::BestClass {
                    start: 4,
                    count: rows - 5,
                    objectness: None,
                },
            }),
            other => Err(format!(
                "YOLOv8-OBB output {other:?} has no room for class scores and an angle"
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
        let Some(classes) = classes(row.len()) else {
            return;
        };
        let (class, score) = anchor::argmax(&row[4..4 + classes]);
        // An angle that is not finite or many turns off is no angle: the anchor is no box.
        let Some((w, h, angle)) = oriented::upright(row[2], row[3], row[4 + classes]) else {
            return;
        };
        if !row[..4].iter().all(|v| v.is_finite()) {
            return;
        }
        // A turned box is not clipped (that would move its centre): its sides are bounded by
        // the input's diagonal instead, before a huge side swallows the centre's precision.
        let diagonal = (net.0 as f32).hypot(net.1 as f32);
        let (w, h) = (w.clamp(0.0, diagonal), h.clamp(0.0, diagonal));
        let bbox = anchor::centre_box(row[0], row[1], w, h);
        if anchor::keep(out, attrs, class as u32, score, bbox, Vec::new())
            && let Some(d) = out.last_mut()
        {
            d.angle = Some(angle);
        }
    }
}
