// SPDX-License-Identifier: MIT OR Apache-2.0
//! Detectors whose outputs are finished detections, one row each: end-to-end exports (`[N,K,6]`
//! or `[N,K,7]` rows of box, score and class, or `[K,7]` rows that name their batch item), and
//! the separate boxes, scores and labels of DETR-style and TensorFlow Object Detection API
//! exports. What the shapes leave open (column order, box format, normalisation) is guessed
//! from the first confident rows, once, and checked: rows that fit no reading are refused.

use ferrostream_core::BBox;

use crate::engine::OutputTensor;
use crate::layout::{BoxCoords, BoxFormat, Columns, Row};

/// Whether `v` holds an integer, as class ids and batch indices stored as floats do.
pub fn is_integral(v: f32) -> bool {
    v.is_finite() && (v - v.round()).abs() < 1e-3
}

/// The box of `v` (four values in `format` order; `Auto` is not allowed here), scaled to
/// network pixels when `normalized`.
pub fn to_bbox(format: BoxFormat, normalized: bool, v: [f32; 4], net: (f32, f32)) -> BBox {
    let (sx, sy) = if normalized { net } else { (1.0, 1.0) };
    match format {
        BoxFormat::Yxyx => BBox::from_corners(v[1] * sx, v[0] * sy, v[3] * sx, v[2] * sy),
        BoxFormat::Cxcywh => BBox::new(
            (v[0] - v[2] / 2.0) * sx,
            (v[1] - v[3] / 2.0) * sy,
            v[2] * sx,
            v[3] * sy,
        ),
        BoxFormat::Xywh => BBox::new(v[0] * sx, v[1] * sy, v[2] * sx, v[3] * sy),
        BoxFormat::Xyxy | BoxFormat::Auto => {
            BBox::from_corners(v[0] * sx, v[1] * sy, v[2] * sx, v[3] * sy)
        }
    }
}

/// The box format of confident boxes `boxes` when the configuration leaves it open: corners
/// (`xyxy`) when every box has its second corner below and right of the first, else centre and
/// size (`cxcywh`) when every width and height is positive. `None` without boxes.
pub fn guess_box_format(boxes: &[[f32; 4]]) -> Option<Result<BoxFormat, String>> {
    if boxes.is_empty() {
        return None;
    }
    if boxes.iter().all(|b| b[2] > b[0] && b[3] > b[1]) {
        return Some(Ok(BoxFormat::Xyxy));
    }
    if boxes.iter().all(|b| b[2] > 0.0 && b[3] > 0.0) {
        return Some(Ok(BoxFormat::Cxcywh));
    }
    let bad = boxes
        .iter()
        .find(|b| !(b[2] > 0.0 && b[3] > 0.0))
        .expect("some box fails both readings");
    Some(Err(format!(
        "the box {bad:?} is neither corners (x1,y1,x2,y2) nor centre and size with a \
         positive size; set box-format"
    )))
}

/// Whether confident boxes `boxes` are normalised (every value within [-0.05, 1.05]) or in
/// pixels, when the configuration leaves it open. `None` without boxes.
pub fn guess_normalized(boxes: &[[f32; 4]]) -> Option<bool> {
    (!boxes.is_empty()).then(|| boxes.iter().flatten().all(|v| (-0.05..=1.05).contains(v)))
}

/// `coords` resolved: `Some(normalized)` once known.
pub fn normalized(coords: BoxCoords) -> Option<bool> {
    match coords {
        BoxCoords::Normalized => Some(true),
        BoxCoords::Pixels => Some(false),
        BoxCoords::Auto => None,
    }
}

/// Why the confident rows `rows` are not finished detections, if they are not: class ids and batch
/// indices must be integers (batch within `0..items`), scores probabilities.
pub fn misfit(rows: &[Row], items: usize) -> Option<String> {
    for r in rows {
        if !is_integral(r.class) || r.class < -1.0 {
            return Some(format!(
                "the class column holds {} (not a class id)",
                r.class
            ));
        }
        if !(0.0..=1.001).contains(&r.score) {
            return Some(format!(
                "the score column holds {} (not a probability)",
                r.score
            ));
        }
        if let Some(b) = r.batch
            && (!is_integral(b) || b < 0.0 || b as usize >= items.max(1))
        {
            return Some(format!(
                "the batch column holds {b} (not an index below {})",
                items.max(1)
            ));
        }
        if r.bbox.iter().any(|v| !v.is_finite()) {
            return Some(format!("a box holds {:?}", r.bbox));
        }
    }
    None
}

/// The rows that look confident: a score of at least `min` and a class (padding rows have a
/// negative one).
pub fn confident(rows: Vec<Row>, min: f32) -> Vec<Row> {
    rows.into_iter()
        .filter(|r| r.score >= min && r.class >= 0.0)
        .collect()
}

/// The box format and coordinates the confident `rows` show where `format` and `coords` are
/// open (`Auto`); `seen` names the outputs in errors. `rows` is not empty.
pub fn settle_boxes(
    rows: &[Row],
    seen: &str,
    format: BoxFormat,
    coords: BoxCoords,
) -> Result<(BoxFormat, BoxCoords), String> {
    let boxes: Vec<[f32; 4]> = rows.iter().map(|r| r.bbox).collect();
    let format = match format {
        BoxFormat::Auto => guess_box_format(&boxes)
            .ok_or_else(|| format!("{seen}: no rows to tell the box format from"))?
            .map_err(|m| format!("{seen}: {m}"))?,
        f => f,
    };
    let coords = match coords {
        BoxCoords::Auto => match guess_normalized(&boxes) {
            Some(true) => BoxCoords::Normalized,
            Some(false) => BoxCoords::Pixels,
            None => return Err(format!("{seen}: no rows to tell the coordinates from")),
        },
        c => c,
    };
    Ok((format, coords))
}

/// How boxes are scaled, in words.
pub fn coords_words(coords: BoxCoords) -> &'static str {
    match coords {
        BoxCoords::Auto => "(normalisation to be seen)",
        BoxCoords::Normalized => "normalised",
        BoxCoords::Pixels => "in pixels",
    }
}

/// The outputs of `which`, by name and shape.
pub fn describe_tensors(outputs: &[OutputTensor], which: &[Option<usize>]) -> String {
    which
        .iter()
        .flatten()
        .filter_map(|&i| outputs.get(i))
        .map(|t| format!("{} {:?}", t.name, t.shape))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rows of batch item `item` in an end-to-end output read as `columns`.
pub fn end_to_end_rows(
    t: &OutputTensor,
    columns: &Columns,
    item: usize,
) -> Result<Vec<Row>, String> {
    let width = columns.width();
    if t.shape.last() != Some(&width) {
        return Err(format!(
            "output {} {:?} holds rows of {} values; columns {columns} need {width}",
            t.name,
            t.shape,
            t.shape.last().copied().unwrap_or(0)
        ));
    }
    if columns.has_batch() {
        // Rows of every item, each naming its own.
        return Ok(t
            .data
            .chunks_exact(width)
            .map(|r| columns.read(r))
            .filter(|r| r.batch.is_some_and(|b| b.round() == item as f32))
            .collect());
    }
    if t.shape.len() < 3 {
        return Err(format!(
            "output {} {:?} has no batch dimension and its columns ({columns}) name no batch \
             item; set end-to-end-columns with a batch column",
            t.name, t.shape
        ));
    }
    Ok(super::item_of(t, item)?
        .chunks_exact(width)
        .map(|r| columns.read(r))
        .collect())
}

/// The rows of batch item `item` of separate boxes, scores (or the fifth value of each box
/// when `scores` is `None`), labels and count outputs.
pub fn triple_rows(
    outputs: &[OutputTensor],
    boxes: usize,
    scores: Option<usize>,
    labels: usize,
    num: Option<usize>,
    item: usize,
) -> Result<Vec<Row>, String> {
    let width = if scores.is_some() { 4 } else { 5 };
    let b_tensor = &outputs[boxes];
    if b_tensor.shape.last() != Some(&width) {
        return Err(format!(
            "boxes {} {:?} should hold {width} values per box{}",
            b_tensor.name,
            b_tensor.shape,
            if width == 5 {
                " (with the score last, as there is no scores output)"
            } else {
                ""
            }
        ));
    }
    let b = super::item_of(b_tensor, item)?;
    let l = super::item_of(&outputs[labels], item)?;
    let s = scores
        .map(|i| super::item_of(&outputs[i], item))
        .transpose()?;
    let mut count = (b.len() / width).min(l.len());
    if let Some(s) = s {
        count = count.min(s.len());
    }
    if let Some(n) = num {
        let n = super::item_of(&outputs[n], item)?
            .first()
            .copied()
            .unwrap_or(0.0);
        count = count.min(if n.is_finite() {
            n.max(0.0) as usize
        } else {
            0
        });
    }
    Ok((0..count)
        .map(|i| {
            let v = &b[i * width..];
            Row {
                bbox: [v[0], v[1], v[2], v[3]],
                score: s.map_or_else(|| v[4], |s| s[i]),
                class: l[i],
                batch: None,
            }
        })
        .collect())
}

/// The class id of a finished detection: `None` for padding (negative class or no score), an
/// error where the class is not an integer (the outputs are not laid out as the parser reads
/// them).
pub fn class_id(r: &Row) -> Result<Option<u32>, String> {
    if r.class < 0.0 || r.score.is_nan() || r.score <= 0.0 {
        return Ok(None);
    }
    if !is_integral(r.class) {
        return Err(format!(
            "a detection's class is {} (not a class id): the outputs are not laid out as the \
             parser reads them; set output-parser or end-to-end-columns",
            r.class
        ));
    }
    Ok(Some(r.class.round() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_parse_and_read_rows() {
        let c = Columns::parse("batch, box ; class,score").unwrap();
        assert_eq!(c.width(), 7);
        assert!(c.has_batch());
        assert_eq!(c.to_string(), "batch,box,class,score");
        let row = c.read(&[1.0, 10.0, 20.0, 30.0, 40.0, 3.0, 0.9]);
        assert_eq!(
            row,
            Row {
                bbox: [10.0, 20.0, 30.0, 40.0],
                score: 0.9,
                class: 3.0,
                batch: Some(1.0)
            }
        );
        for bad in [
            "box,score",
            "box,score,class,class",
            "box,score,class,colour",
            "",
        ] {
            assert!(Columns::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Columns::guesses(6)[0].to_string(), "box,score,class");
        assert_eq!(Columns::guesses(7).len(), 2);
        assert!(Columns::guesses(5).is_empty());
    }

    #[test]
    fn box_formats_convert_to_network_pixels() {
        let net = (200.0, 100.0);
        let want = BBox::new(20.0, 10.0, 40.0, 30.0);
        let cases = [
            (BoxFormat::Xyxy, false, [20.0, 10.0, 60.0, 40.0]),
            (BoxFormat::Yxyx, false, [10.0, 20.0, 40.0, 60.0]),
            (BoxFormat::Cxcywh, false, [40.0, 25.0, 40.0, 30.0]),
            (BoxFormat::Xywh, false, [20.0, 10.0, 40.0, 30.0]),
            (BoxFormat::Xyxy, true, [0.1, 0.1, 0.3, 0.4]),
            (BoxFormat::Cxcywh, true, [0.2, 0.25, 0.2, 0.3]),
        ];
        for (format, norm, v) in cases {
            let b = to_bbox(format, norm, v, net);
            assert!(
                (b.left - want.left).abs() < 1e-3
                    && (b.top - want.top).abs() < 1e-3
                    && (b.width - want.width).abs() < 1e-3
                    && (b.height - want.height).abs() < 1e-3,
                "{format:?} {norm}: {b:?}"
            );
        }
    }

    #[test]
    fn guesses_follow_the_boxes() {
        assert_eq!(guess_box_format(&[]), None);
        let corners = [[10.0, 10.0, 50.0, 80.0], [100.0, 5.0, 120.0, 30.0]];
        assert_eq!(guess_box_format(&corners), Some(Ok(BoxFormat::Xyxy)));
        let centres = [[50.0, 50.0, 20.0, 30.0], [10.0, 10.0, 15.0, 12.0]];
        assert_eq!(guess_box_format(&centres), Some(Ok(BoxFormat::Cxcywh)));
        assert!(matches!(
            guess_box_format(&[[50.0, 50.0, -20.0, 30.0]]),
            Some(Err(_))
        ));
        assert_eq!(guess_normalized(&[[0.1, 0.2, 0.5, 1.0]]), Some(true));
        assert_eq!(guess_normalized(&[[0.1, 0.2, 50.0, 1.0]]), Some(false));
        assert_eq!(guess_normalized(&[]), None);
    }

    #[test]
    fn rows_that_are_not_detections_do_not_fit() {
        let c = &Columns::guesses(6)[0];
        let good = c.read(&[1.0, 2.0, 30.0, 40.0, 0.8, 2.0]);
        assert_eq!(misfit(&[good], 1), None);
        // YOLOv5 rows read as end-to-end rows: objectness and a class probability.
        let yolo = c.read(&[320.0, 200.0, 40.0, 90.0, 0.9, 0.7]);
        assert!(misfit(&[yolo], 1).unwrap().contains("class column"));
        let logit = c.read(&[1.0, 2.0, 30.0, 40.0, 15.0, 2.0]);
        assert!(misfit(&[logit], 1).unwrap().contains("score column"));
        let c7 = &Columns::guesses(7)[0];
        let far = c7.read(&[3.0, 1.0, 2.0, 30.0, 40.0, 2.0, 0.9]);
        assert!(misfit(&[far], 2).unwrap().contains("batch column"));
    }
}
