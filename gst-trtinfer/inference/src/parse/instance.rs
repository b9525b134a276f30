// SPDX-License-Identifier: MIT OR Apache-2.0
//! Instance segmentation, YOLOv8-seg: `[N,4+C+M,B]` rows (centre box in network pixels, C class
//! scores, M mask coefficients) and `[N,M,h,w]` prototype masks over the network input. Each
//! detection keeps its coefficients; the objects that survive clustering get their masks from
//! the prototypes (in the inference, which holds the frame geometry).

use super::anchor::centre_box;
use super::{Family, ParserSettings, describe, item_dims, item_of};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::{OutputTensor, TensorInfo};
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct YoloV8Seg {
    pub output: usize,
    pub protos: usize,
}

impl Family for YoloV8Seg {
    /// Rows and prototypes of known sizes only: a guess on unknown shapes waits for real ones.
    fn recognise(outputs: &[TensorInfo], settings: &ParserSettings) -> bool {
        Self::select(outputs, settings).is_ok()
            && outputs
                .iter()
                .all(|o| o.dims.iter().skip(1).all(Option::is_some))
    }

    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        let seg = || -> Option<YoloV8Seg> {
            let [a, b] = outputs else { return None };
            let (output, protos) = match (item_dims(a).len(), item_dims(b).len()) {
                (2, 3) => (0, 1),
                (3, 2) => (1, 0),
                _ => return None,
            };
            let rows = item_dims(&outputs[output])[0];
            let masks = item_dims(&outputs[protos])[0];
            match (rows, masks) {
                (Some(r), Some(m)) if r <= 4 + m => None,
                _ => Some(YoloV8Seg { output, protos }),
            }
        };
        seg().ok_or_else(|| {
            format!(
                "YOLOv8-seg expects rows [N,4+C+M,B] and prototype masks [N,M,h,w]; found {}",
                describe(outputs)
            )
        })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::YoloV8Seg
    }

    fn summary(&self) -> String {
        "YOLOv8-seg".into()
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
        self.protos = map[self.protos];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        let rows = item_dims(&outputs[self.output])
            .first()
            .copied()
            .flatten()?;
        let masks = item_dims(&outputs[self.protos])
            .first()
            .copied()
            .flatten()?;
        rows.checked_sub(4 + masks)
    }

    fn prototypes(&self) -> Option<usize> {
        Some(self.protos)
    }

    fn detections(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        _net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        out: &mut Vec<Detection>,
    ) -> Result<(), String> {
        let (o, p) = (&outputs[self.output], &outputs[self.protos]);
        let (rows, anchors) = match o.shape[..] {
            [_, rows, anchors] => (rows, anchors),
            _ => return Err(format!("YOLOv8-seg rows {:?} are not [N,R,B]", o.shape)),
        };
        let masks = p.shape.get(1).copied().unwrap_or(0);
        let classes = rows
            .checked_sub(4 + masks)
            .filter(|&c| c > 0)
            .ok_or_else(|| {
                format!(
                    "YOLOv8-seg rows {:?} leave no class scores beside {masks} mask coefficients",
                    o.shape
                )
            })?;
        let data = item_of(o, item)?;
        let at = |r: usize, a: usize| data[r * anchors + a];
        for a in 0..anchors {
            let (mut best, mut score) = (0, f32::MIN);
            for c in 0..classes {
                let v = at(4 + c, a);
                if v > score {
                    (best, score) = (c, v);
                }
            }
            if score >= attrs(best as u32).pre_cluster_threshold {
                out.push(Detection {
                    coefficients: (0..masks).map(|k| at(4 + classes + k, a)).collect(),
                    ..Detection::new(
                        best as u32,
                        score,
                        centre_box(at(0, a), at(1, a), at(2, a), at(3, a)),
                    )
                });
            }
        }
        Ok(())
    }
}
