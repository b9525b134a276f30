// SPDX-License-Identifier: MIT OR Apache-2.0
//! YOLOv5 (and YOLOv7 without its end-to-end head): `[N,B,5+C]` rows of centre box in network
//! pixels, objectness and C class scores; thousands of anchors (three per grid cell).

use super::anchor::{self, AnchorLayout, Select};
use super::{Family, ParserSettings, classes_after, item_dims, single_rows_output};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct YoloV5 {
    pub output: usize,
}

impl Family for YoloV5 {
    /// One output of known `[N,a,b]`: the last family asked, what the others left.
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        matches!(outputs, [o] if matches!(item_dims(o), [Some(_), Some(_)]))
    }

    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        single_rows_output(outputs, "YoloV5").map(|output| YoloV5 { output })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::YoloV5
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        classes_after(&outputs[self.output], 1, 5)
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        Some(objectness_rows(self.output, shapes))
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
        let (class, score) = anchor::argmax(&row[5..]);
        let bbox = anchor::centre_box(row[0], row[1], row[2], row[3]);
        anchor::keep(out, attrs, class as u32, row[4] * score, bbox, Vec::new());
    }
}

/// Rows of box, objectness and class scores, one per anchor (YOLOv5 and YOLOX).
pub(super) fn objectness_rows(output: usize, shapes: &[&[usize]]) -> Result<AnchorLayout, String> {
    match shapes.get(output).copied().unwrap_or(&[]) {
        [_, boxes, stride] if *stride >= 6 => Ok(AnchorLayout {
            anchors: *boxes,
            groups: vec![anchor::group(output, 0, *stride, 1, *stride)],
            select: Select::BestClass {
                start: 5,
                count: stride - 5,
                objectness: Some(4),
            },
        }),
        other => Err(format!("YOLOv5/YOLOX output {other:?} has no class scores")),
    }
}
