// SPDX-License-Identifier: MIT OR Apache-2.0
//! End-to-end exports: finished detections, one row each: `[N,K,6]` or `[N,K,7]` rows of box,
//! score and class (YOLOv10, YOLO11 and RT-DETR end-to-end, YOLOv7's end-to-end head), or
//! `[K,7]` rows that name their batch item. The column order (`end-to-end-columns`), the box
//! format and the normalisation may be left open by the shapes: the first confident rows
//! settle them ([`Family::refine`]).

use super::detr::few_rows;
use super::rows;
use super::{Family, OutputParser, ParserSettings, describe, item_dims};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::{OutputTensor, TensorInfo};
use crate::layout::{BoxCoords, BoxFormat, Columns, Detection};

#[derive(Debug, Clone, PartialEq)]
pub struct EndToEnd {
    pub output: usize,
    /// `None` until the first confident rows show which guess fits.
    pub columns: Option<Columns>,
    pub format: BoxFormat,
    pub coords: BoxCoords,
}

impl Family for EndToEnd {
    /// One output of `[K,7]` rows naming their batch item, or a few hundred rows of 6 or 7
    /// values (box, score, class, perhaps batch).
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        let [o] = outputs else { return false };
        (o.dims.len() == 2 && o.dims[1] == Some(7))
            || matches!(item_dims(o), [Some(a), Some(6 | 7)] if few_rows(*a))
    }

    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String> {
        let [o] = outputs else {
            return Err(format!(
                "end-to-end rows come in one output; found {}",
                describe(outputs)
            ));
        };
        let width = o.dims.last().copied().flatten();
        let columns = settings.columns.clone();
        let batch_column = columns.as_ref().is_none_or(Columns::has_batch);
        match (&columns, width) {
            _ if o.dims.len() < 2 => {
                return Err(format!(
                    "end-to-end rows should be [N,K,W] or [K,W]; found {o}"
                ));
            }
            (Some(c), Some(w)) if c.width() != w => {
                return Err(format!(
                    "end-to-end-columns {c} need rows of {} values; {o} has {w}",
                    c.width()
                ));
            }
            (None, Some(w)) if Columns::guesses(w).is_empty() => {
                return Err(format!(
                    "{o} holds rows of {w} values; set end-to-end-columns (e.g. box,score,class)"
                ));
            }
            _ if o.dims.len() == 2 && !batch_column => {
                return Err(format!(
                    "{o} has no batch dimension, so its rows must name their batch item: add a \
                     batch column to end-to-end-columns"
                ));
            }
            _ => {}
        }
        Ok(EndToEnd {
            output: 0,
            columns,
            format: settings.box_format,
            coords: settings.box_coordinates,
        })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::EndToEnd
    }

    fn summary(&self) -> String {
        format!(
            "end-to-end rows of {}, boxes {:?} {}",
            self.columns
                .as_ref()
                .map_or_else(|| "columns to be seen".to_string(), ToString::to_string),
            self.format,
            rows::coords_words(self.coords)
        )
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn detections(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        out: &mut Vec<Detection>,
    ) -> Result<(), String> {
        let (Some(columns), Some(normalized), false) = (
            &self.columns,
            rows::normalized(self.coords),
            self.format == BoxFormat::Auto,
        ) else {
            return Ok(()); // open until confident rows arrive (Family::refine)
        };
        let net = (net.0 as f32, net.1 as f32);
        for r in rows::end_to_end_rows(&outputs[self.output], columns, item)? {
            if let Some(class) = rows::class_id(&r)? {
                let bbox = rows::to_bbox(self.format, normalized, r.bbox, net);
                super::anchor::keep(out, attrs, class, r.score, bbox, Vec::new());
            }
        }
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.columns.is_none() || self.format == BoxFormat::Auto || self.coords == BoxCoords::Auto
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
        let t = &outputs[self.output];
        let seen = format!("{} {:?}", t.name, t.shape);
        let width = t.shape.last().copied().unwrap_or(0);
        let candidates = match &self.columns {
            Some(c) => vec![c.clone()],
            None => Columns::guesses(width),
        };
        if candidates.is_empty() {
            return Err(format!(
                "end-to-end rows of {width} values ({seen}): set end-to-end-columns"
            ));
        }
        let mut fits = Vec::new();
        let mut misfits = Vec::new();
        for c in candidates {
            let found = rows::confident(rows::end_to_end_rows(t, &c, item)?, min);
            if found.is_empty() {
                continue;
            }
            match rows::misfit(&found, batch) {
                None => fits.push((c, found)),
                Some(why) => misfits.push(format!("read as {c}, {why}")),
            }
        }
        let (columns, found) = match fits.len() {
            0 if misfits.is_empty() => return Ok(None),
            0 => {
                return Err(format!(
                    "the outputs ({seen}) are not end-to-end rows: {}; set output-parser \
                     (e.g. yolov5 for [N,B,5+C] anchors) or end-to-end-columns",
                    misfits.join("; ")
                ));
            }
            1 => fits.pop().expect("one fit"),
            _ => {
                let names: Vec<String> = fits.iter().map(|f| f.0.to_string()).collect();
                return Err(format!(
                    "the rows of {seen} read equally well as {}; set end-to-end-columns",
                    names.join(" and ")
                ));
            }
        };
        let (format, coords) = rows::settle_boxes(&found, &seen, self.format, self.coords)?;
        let settled = EndToEnd {
            output: self.output,
            columns: Some(columns),
            format,
            coords,
        };
        let what = format!("{seen}: {}", settled.summary());
        Ok(Some((OutputParser::new(settled), what)))
    }
}
