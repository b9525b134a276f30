// SPDX-License-Identifier: MIT OR Apache-2.0
//! YOLOX: `[N,A,5+C]`, one row per cell of the grids of `yolox-strides` (the cells of each
//! stride's grid in turn): x,y offsets in the cell, log w,h, objectness and class scores.

use super::anchor::{self, AnchorLayout};
use super::yolov5::objectness_rows;
use super::{Family, ParserSettings, classes_after, describe, item_dims};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct Yolox {
    pub output: usize,
    pub strides: Vec<u32>,
}

impl Family for Yolox {
    /// One output with exactly as many rows as the grids have cells.
    fn recognise(outputs: &[TensorInfo], settings: &ParserSettings) -> bool {
        matches!(outputs, [o] if matches!(item_dims(o),
            [Some(a), Some(_)] if *a == grid_cells(settings.net, &settings.yolox_strides)))
    }

    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String> {
        let [o] = outputs else {
            return Err(format!(
                "YOLOX expects one output, found {}",
                describe(outputs)
            ));
        };
        let cells = grid_cells(settings.net, &settings.yolox_strides);
        match item_dims(o) {
            [Some(a), _] if *a != cells => Err(format!(
                "YOLOX output {o} has {a} rows, but the grids of strides {:?} on a {}x{} input \
                 have {cells} cells; set yolox-strides (or infer-dims)",
                settings.yolox_strides, settings.net.0, settings.net.1
            )),
            [_, width] if width.is_none_or(|w| w >= 6) => Ok(Yolox {
                output: 0,
                strides: settings.yolox_strides.clone(),
            }),
            _ => Err(format!("YOLOX expects [N,A,5+C], found {o}")),
        }
    }

    fn kind(&self) -> ParserKind {
        ParserKind::Yolox
    }

    fn summary(&self) -> String {
        format!("YOLOX, strides {:?}", self.strides)
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
        anchor: usize,
        _heatmap_width: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        _min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let Some((gx, gy, stride)) = cell(anchor, net, &self.strides) else {
            return;
        };
        let (class, score) = anchor::argmax(&row[5..]);
        let bbox = anchor::centre_box(
            (row[0] + gx) * stride,
            (row[1] + gy) * stride,
            row[2].exp() * stride,
            row[3].exp() * stride,
        );
        anchor::keep(out, attrs, class as u32, row[4] * score, bbox, Vec::new());
    }
}

/// Cells of the YOLOX grids of `strides` on a `net` input.
fn grid_cells(net: (u32, u32), strides: &[u32]) -> usize {
    strides
        .iter()
        .map(|&s| (net.0 / s.max(1)) as usize * (net.1 / s.max(1)) as usize)
        .sum()
}

/// The grid column, row and stride of YOLOX anchor `anchor`.
fn cell(anchor: usize, net: (u32, u32), strides: &[u32]) -> Option<(f32, f32, f32)> {
    let mut a = anchor;
    for &s in strides {
        let (w, h) = ((net.0 / s.max(1)) as usize, (net.1 / s.max(1)) as usize);
        if a < w * h {
            return Some(((a % w) as f32, (a / w) as f32, s as f32));
        }
        a -= w * h;
    }
    None
}
