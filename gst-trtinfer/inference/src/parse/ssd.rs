// SPDX-License-Identifier: MIT OR Apache-2.0
//! SSD: per-class scores `[N,B,C]` and normalised boxes `[N,B,4]` or `[N,B,1,4]`, in
//! TensorFlow's y,x order unless `box-format` says otherwise. Class `i` is column `i` of the
//! scores.

use super::anchor::{self, AnchorLayout, Select};
use super::{Family, ParserSettings, describe, item_dims, rows};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::{BoxFormat, Detection};

#[derive(Debug, Clone, PartialEq)]
pub struct Ssd {
    pub scores: usize,
    pub boxes: usize,
    pub format: BoxFormat,
}

impl Family for Ssd {
    fn recognise(outputs: &[TensorInfo], settings: &ParserSettings) -> bool {
        Self::select(outputs, settings).is_ok()
    }

    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String> {
        // SSD boxes are normalised, in TensorFlow's order unless box-format says otherwise.
        let format = match settings.box_format {
            BoxFormat::Auto => BoxFormat::Yxyx,
            f => f,
        };
        let may_be = |d: Option<usize>, v: usize| d.is_none_or(|d| d == v);
        // Boxes: [N,B,4] or [N,B,1,4]; dims may be dynamic (sizes are checked on every run).
        let is_boxes = |o: &TensorInfo| match item_dims(o) {
            [_, last] => *last == Some(4),
            [_, one, last] => may_be(*one, 1) && may_be(*last, 4),
            _ => false,
        };
        let boxes = match outputs {
            [a, b] if is_boxes(b) && item_dims(a).len() == 2 => Some((0, 1)),
            [a, b] if is_boxes(a) && item_dims(b).len() == 2 => Some((1, 0)),
            _ => None,
        };
        let Some((scores, boxes)) = boxes else {
            return Err(format!(
                "SSD expects two outputs, scores [N,B,C] and boxes [N,B,4] or [N,B,1,4]; found {}",
                describe(outputs)
            ));
        };
        let anchors = |o: &TensorInfo| item_dims(o)[0];
        match (anchors(&outputs[scores]), anchors(&outputs[boxes])) {
            (Some(a), Some(b)) if a != b => Err(format!(
                "SSD scores and boxes disagree on the number of anchors ({a} vs {b})"
            )),
            _ => Ok(Ssd {
                scores,
                boxes,
                format,
            }),
        }
    }

    fn kind(&self) -> ParserKind {
        ParserKind::Ssd
    }

    fn remap(&mut self, map: &[usize]) {
        self.scores = map[self.scores];
        self.boxes = map[self.boxes];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        item_dims(&outputs[self.scores]).get(1).copied().flatten()
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        let shape = |i: usize| shapes.get(i).copied().unwrap_or(&[]);
        Some(match (shape(self.scores), shape(self.boxes)) {
            ([_, anchors, classes], b) if b.iter().skip(1).product::<usize>() == anchors * 4 => {
                Ok(AnchorLayout {
                    anchors: *anchors,
                    groups: vec![
                        anchor::group(self.scores, 0, *classes, 1, *classes),
                        anchor::group(self.boxes, 0, 4, 1, 4),
                    ],
                    select: Select::BestClass {
                        start: 0,
                        count: *classes,
                        objectness: None,
                    },
                })
            }
            (s, b) => Err(format!(
                "SSD scores {s:?} and boxes {b:?} do not describe the same anchors"
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
        min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let (scores, coords) = row.split_at(row.len() - 4);
        let v = [coords[0], coords[1], coords[2], coords[3]];
        let bbox = rows::to_bbox(self.format, true, v, (net.0 as f32, net.1 as f32));
        for (class, &score) in scores.iter().enumerate() {
            // Cheap reject before looking up per-class attributes.
            if score >= min_threshold {
                anchor::keep(out, attrs, class as u32, score, bbox, Vec::new());
            }
        }
    }
}
