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
//! boxes turned by about 45 degrees). The layout is a YOLOv8 detector's with one more class, so
//! it is not guessed: `output-parser=yolov8-obb` names it.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4};

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

/// Width, height and angle of the form of a turned box nearest upright: sides swapped where the
/// box is turned by a quarter turn or more either way (modulo a half turn), the angle then taken
/// into `[-pi/4, pi/4)`.
pub fn regularised(width: f32, height: f32, angle: f32) -> (f32, f32, f32) {
    // Quarter turns taken off; an odd number swaps the sides (decided from the same number as
    // the angle, so the two never disagree at the edges).
    let quarters = ((angle + FRAC_PI_4) / FRAC_PI_2).floor();
    let upright = angle - quarters * FRAC_PI_2;
    if quarters.rem_euclid(2.0) == 1.0 {
        (height, width, upright)
    } else {
        (width, height, upright)
    }
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
        if !row[..4].iter().all(|v| v.is_finite()) || !angle.is_finite() {
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
