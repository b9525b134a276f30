// SPDX-License-Identifier: MIT OR Apache-2.0
//! The TensorFlow Object Detection API: `detection_boxes` `[N,K,4]` (normalised y,x corners),
//! `detection_scores` and `detection_classes` `[N,K]` (classes 1-based), and optionally
//! `num_detections` `[N]`.

use super::anchor;
use super::{Family, ParserSettings, describe, item_dims, rows};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::{OutputTensor, TensorInfo};
use crate::layout::{BoxFormat, Detection};

#[derive(Debug, Clone, PartialEq)]
pub struct TfOdApi {
    pub boxes: usize,
    pub scores: usize,
    pub classes: usize,
    pub num: Option<usize>,
}

impl Family for TfOdApi {
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        let names: Vec<String> = outputs
            .iter()
            .map(|o| o.name.to_ascii_lowercase())
            .collect();
        let has = |word: &str| names.iter().any(|n| n.contains(word));
        outputs.len() >= 3 && has("box") && has("score") && has("class") && has("detection")
    }

    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        let by_name = |word: &str| {
            outputs
                .iter()
                .position(|o| o.name.to_ascii_lowercase().contains(word))
        };
        let found = (
            by_name("box"),
            by_name("score"),
            by_name("class"),
            by_name("num"),
        );
        let (boxes, scores, classes, num) = match found {
            (Some(b), Some(s), Some(c), n) => (b, s, c, n),
            // Unnamed outputs: the API's order.
            _ if outputs.len() >= 3 => (0, 1, 2, (outputs.len() >= 4).then_some(3)),
            _ => {
                return Err(format!(
                    "the TensorFlow Object Detection API layout needs detection_boxes, \
                     detection_scores, detection_classes (and num_detections); found {}",
                    describe(outputs)
                ));
            }
        };
        if !matches!(item_dims(&outputs[boxes]), [_, Some(4)]) {
            return Err(format!(
                "detection boxes should be [N,K,4], found {}",
                outputs[boxes]
            ));
        }
        Ok(TfOdApi {
            boxes,
            scores,
            classes,
            num,
        })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::TfOdApi
    }

    fn remap(&mut self, map: &[usize]) {
        self.boxes = map[self.boxes];
        self.scores = map[self.scores];
        self.classes = map[self.classes];
        self.num = self.num.map(|i| map[i]);
    }

    fn detections(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        out: &mut Vec<Detection>,
    ) -> Result<(), String> {
        let net = (net.0 as f32, net.1 as f32);
        let found = rows::triple_rows(
            outputs,
            self.boxes,
            Some(self.scores),
            self.classes,
            self.num,
            item,
        )?;
        for r in found {
            let class = r.class.round() as i64 - 1;
            if class >= 0 {
                let bbox = rows::to_bbox(BoxFormat::Yxyx, true, r.bbox, net);
                anchor::keep(out, attrs, class as u32, r.score, bbox, Vec::new());
            }
        }
        Ok(())
    }
}
