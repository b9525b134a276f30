// SPDX-License-Identifier: MIT OR Apache-2.0
//! YOLOv8 (and YOLO11): `[N,4+C,B]`, the attributes of each anchor down a column: centre box
//! in network pixels, then C class scores (no objectness).

use super::anchor::{self, AnchorLayout, Select};
use super::{Family, ParserSettings, classes_after, item_dims, single_rows_output};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct YoloV8 {
    pub output: usize,
}

impl Family for YoloV8 {
    /// One output `[N,a,b]` with fewer rows than columns: the (few) box attributes first.
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        matches!(outputs, [o] if matches!(item_dims(o), [Some(a), Some(b)] if a < b))
    }

    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        single_rows_output(outputs, "YoloV8").map(|output| YoloV8 { output })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::YoloV8
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        classes_after(&outputs[self.output], 0, 4)
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        Some(match shapes.get(self.output).copied().unwrap_or(&[]) {
            [_, rows, boxes] if *rows >= 5 => Ok(AnchorLayout {
                anchors: *boxes,
                groups: vec![anchor::group(self.output, 0, 1, *boxes, *rows)],
                select: Select::BestClass {
                    start: 4,
                    count: rows - 4,
                    objectness: None,
                },
            }),
            other => Err(format!("YOLOv8 output {other:?} has no class scores")),
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
        decode_centre_row(row, (1.0, 1.0), attrs, out);
    }
}

/// A row of centre box (times `scale`) and class scores (YOLOv8's columns, DETR's rows).
pub(super) fn decode_centre_row(
    row: &[f32],
    scale: (f32, f32),
    attrs: &dyn Fn(u32) -> ClassAttrs,
    out: &mut Vec<Detection>,
) {
    let (sx, sy) = scale;
    let (class, score) = anchor::argmax(&row[4..]);
    let bbox = anchor::centre_box(row[0] * sx, row[1] * sy, row[2] * sx, row[3] * sy);
    anchor::keep(out, attrs, class as u32, score, bbox, Vec::new());
}
