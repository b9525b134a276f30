// SPDX-License-Identifier: MIT OR Apache-2.0
//! DETR and RT-DETR: `[N,K,4+C]`, a few hundred query rows of normalised centre box and C class
//! scores.

use super::anchor::{self, AnchorLayout, Select};
use super::yolov8::decode_centre_row;
use super::{Family, ParserSettings, classes_after, item_dims, single_rows_output};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

/// More rows than this are anchors, not queries.
const MAX_QUERIES: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct Detr {
    pub output: usize,
}

impl Family for Detr {
    /// One output `[N,a,b]` of at most a thousand rows (the ones with more rows than columns,
    /// as YOLOv8 has, were asked before).
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        matches!(outputs, [o] if matches!(item_dims(o), [Some(a), Some(_)] if *a <= MAX_QUERIES))
    }

    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        single_rows_output(outputs, "Detr").map(|output| Detr { output })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::Detr
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        classes_after(&outputs[self.output], 1, 4)
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        Some(match shapes.get(self.output).copied().unwrap_or(&[]) {
            [_, rows, width] if *width >= 5 => Ok(AnchorLayout {
                anchors: *rows,
                groups: vec![anchor::group(self.output, 0, *width, 1, *width)],
                select: Select::BestClass {
                    start: 4,
                    count: width - 4,
                    objectness: None,
                },
            }),
            other => Err(format!(
                "DETR rows should be [N,K,4+C] with at least one class; found {other:?}"
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
        // Boxes normalised to the network input.
        decode_centre_row(row, (net.0 as f32, net.1 as f32), attrs, out);
    }
}

/// Whether `rows` rows of a single output are few enough to be queries or finished detections.
pub(super) fn few_rows(rows: usize) -> bool {
    rows <= MAX_QUERIES
}
