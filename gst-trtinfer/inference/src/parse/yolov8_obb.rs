// SPDX-License-Identifier: MIT OR Apache-2.0
//! YOLOv8/YOLO11-OBB: `[N,4+C+1,B]`, the attributes of each anchor down a column: centre box in
//! network pixels (the box's own width and height, before it is turned), C class scores (no
//! objectness), then the angle in radians (`[-pi/4, 3pi/4)` as exported; 15 DOTA classes:
//! `[N,20,B]`).
//!
//! Boxes are regularised as Ultralytics does: a box turned by a quarter turn or more is the same
//! box with its sides swapped, so every angle ends in `[0, pi/2)`. The layout is a YOLOv8
//! detector's with one more class, so it is not guessed: `output-parser=yolov8-obb` names it.

use std::f32::consts::{FRAC_PI_2, PI};

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

/// Width, height and angle as Ultralytics regularises an oriented box: sides swapped where the
/// angle (modulo a half turn) is a quarter turn or more, the angle then taken modulo a quarter
/// turn, so that it lies in `[0, pi/2)`.
pub fn regularised(width: f32, height: f32, angle: f32) -> (f32, f32, f32) {
    let swap = angle.rem_euclid(PI) >= FRAC_PI_2;
    let (w, h) = if swap {
        (height, width)
    } else {
        (width, height)
    };
    (w, h, angle.rem_euclid(FRAC_PI_2))
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
        _net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        _min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let Some(classes) = classes(row.len()) else {
            return;
        };
        let (class, score) = anchor::argmax(&row[4..4 + classes]);
        let angle = row[4 + classes];
        if !angle.is_finite() {
            return;
        }
        let (w, h, angle) = regularised(row[2], row[3], angle);
        let bbox = anchor::centre_box(row[0], row[1], w, h);
        if anchor::keep(out, attrs, class as u32, score, bbox, Vec::new())
            && let Some(d) = out.last_mut()
        {
            d.angle = Some(angle);
        }
    }
}
