// SPDX-License-Identifier: MIT OR Apache-2.0
//! Separate boxes `[N,K,4]`, scores `[N,K]` (or boxes `[N,K,5]` whose fifth value is the
//! score) and 0-based labels `[N,K]`, optionally with a count `[N]`: DETR-style and mmdetection
//! exports. The box format and normalisation may be left open by the shapes: the first
//! confident rows settle them ([`Family::refine`]).

use super::rows;
use super::{Family, OutputParser, ParserSettings, describe};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::{OutputTensor, TensorInfo};
use crate::layout::{BoxCoords, BoxFormat, Detection};

#[derive(Debug, Clone, PartialEq)]
pub struct BoxesScoresLabels {
    pub boxes: usize,
    /// `None`: the score is the fifth value of each box.
    pub scores: Option<usize>,
    pub labels: usize,
    pub num: Option<usize>,
    pub format: BoxFormat,
    pub coords: BoxCoords,
}

impl Family for BoxesScoresLabels {
    /// Two to four outputs, one named for boxes (or dets), one for labels (or classes).
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        let has = |word: &str| {
            outputs
                .iter()
                .any(|o| o.name.to_ascii_lowercase().contains(word))
        };
        (2..=4).contains(&outputs.len())
            && (has("box") || has("dets"))
            && (has("label") || has("class"))
    }

    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String> {
        let by_name = |words: &[&str]| {
            outputs.iter().position(|o| {
                let n = o.name.to_ascii_lowercase();
                words.iter().any(|w| n.contains(w))
            })
        };
        let found = (
            by_name(&["box", "dets"]),
            by_name(&["score"]),
            by_name(&["label", "class"]),
            by_name(&["num"]),
        );
        let (boxes, scores, labels, num) = match found {
            (Some(b), s, Some(l), n) => (b, s, l, n),
            // Unnamed outputs: boxes, scores, labels; or boxes with scores, labels.
            _ if outputs.len() == 3 => (0, Some(1), 2, None),
            _ if outputs.len() == 2 => (0, None, 1, None),
            _ => {
                return Err(format!(
                    "boxes/scores/labels need outputs named boxes (or dets), scores and labels \
                     (or classes); found {}",
                    describe(outputs)
                ));
            }
        };
        let width = if scores.is_some() { 4 } else { 5 };
        let b = &outputs[boxes];
        if b.dims.len() < 2 || b.dims.last().copied().flatten().is_some_and(|w| w != width) {
            return Err(format!(
                "boxes should be [N,K,{width}]{}; found {b}",
                if width == 5 {
                    " (the score last, as no output is named scores)"
                } else {
                    ""
                }
            ));
        }
        Ok(BoxesScoresLabels {
            boxes,
            scores,
            labels,
            num,
            format: settings.box_format,
            coords: settings.box_coordinates,
        })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::BoxesScoresLabels
    }

    fn summary(&self) -> String {
        format!(
            "boxes, scores and labels, boxes {:?} {}",
            self.format,
            rows::coords_words(self.coords)
        )
    }

    fn remap(&mut self, map: &[usize]) {
        self.boxes = map[self.boxes];
        self.scores = self.scores.map(|i| map[i]);
        self.labels = map[self.labels];
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
        let (Some(normalized), false) = (
            rows::normalized(self.coords),
            self.format == BoxFormat::Auto,
        ) else {
            return Ok(()); // open until confident rows arrive (Family::refine)
        };
        let net = (net.0 as f32, net.1 as f32);
        let found = rows::triple_rows(
            outputs,
            self.boxes,
            self.scores,
            self.labels,
            self.num,
            item,
        )?;
        for r in found {
            if let Some(class) = rows::class_id(&r)? {
                let bbox = rows::to_bbox(self.format, normalized, r.bbox, net);
                super::anchor::keep(out, attrs, class, r.score, bbox, Vec::new());
            }
        }
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.format == BoxFormat::Auto || self.coords == BoxCoords::Auto
    }

    fn refine(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        batch: usize,
        min: f32,
    ) -> Result<Option<(OutputParser, String)>, String> {
        if !self.is_open() {
            return Ok(None);
        }
        let which = [Some(self.boxes), self.scores, Some(self.labels), self.num];
        let seen = rows::describe_tensors(outputs, &which);
        let found = rows::triple_rows(
            outputs,
            self.boxes,
            self.scores,
            self.labels,
            self.num,
            item,
        )?;
        let found = rows::confident(found, min);
        if found.is_empty() {
            return Ok(None);
        }
        if let Some(why) = rows::misfit(&found, batch) {
            return Err(format!(
                "the outputs ({seen}) are not boxes, scores and labels: {why}; set output-parser"
            ));
        }
        let (format, coords) = rows::settle_boxes(&found, &seen, self.format, self.coords)?;
        let settled = BoxesScoresLabels {
            format,
            coords,
            ..self.clone()
        };
        let what = format!("{seen}: {}", settled.summary());
        Ok(Some((OutputParser::new(settled), what)))
    }
}
