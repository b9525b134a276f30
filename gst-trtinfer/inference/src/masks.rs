// SPDX-License-Identifier: MIT OR Apache-2.0
//! Segmentation outputs to metadata: YOLOv8-seg instance masks from prototype masks, instance
//! masks moved onto a clipped box, and semantic class maps.

use ferrostream_core::BBox;
use ferrostream_core::mask::{ClassMap, InstanceMask};

/// The instance mask over `bbox` (network pixels) of a YOLOv8-seg detection with mask
/// coefficients `coefficients`: each cell is the sigmoid of the coefficients' combination of
/// the `protos` (`masks` x `h` x `w` prototype masks over the `net` input) at the cell's centre,
/// kept above `threshold`. The grid has the prototypes' resolution.
pub fn from_prototypes(
    coefficients: &[f32],
    protos: &[f32],
    (masks, h, w): (usize, usize, usize),
    net: (u32, u32),
    bbox: BBox,
    threshold: f32,
) -> InstanceMask {
    let (sx, sy) = (w as f32 / net.0 as f32, h as f32 / net.1 as f32);
    let cols = ((bbox.width * sx).round() as u32).max(1);
    let rows = ((bbox.height * sy).round() as u32).max(1);
    let plane = h * w;
    let cells = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| (i, j)))
        .map(|(i, j)| {
            let cx = bbox.left + (j as f32 + 0.5) * bbox.width / cols as f32;
            let cy = bbox.top + (i as f32 + 0.5) * bbox.height / rows as f32;
            let px = ((cx * sx).floor().max(0.0) as usize).min(w.saturating_sub(1));
            let py = ((cy * sy).floor().max(0.0) as usize).min(h.saturating_sub(1));
            let at = py * w + px;
            let sum: f32 = (0..masks.min(coefficients.len()))
                .map(|k| coefficients[k] * protos[k * plane + at])
                .sum();
            1.0 / (1.0 + (-sum).exp()) > threshold
        });
    InstanceMask::from_cells(cols, rows, cells)
}

/// `mask`, laid over box `from`, as a mask of the same resolution laid over box `to` (the same
/// coordinates; `to` is usually `from` clipped to the frame): each cell takes the value of the
/// cell of `mask` under its centre, outside where that falls off `from`.
pub fn moved(mask: &InstanceMask, from: BBox, to: BBox) -> InstanceMask {
    if from == to || from.width <= 0.0 || from.height <= 0.0 {
        return mask.clone();
    }
    let old = mask.cells();
    let (mw, mh) = (mask.width as usize, mask.height as usize);
    let cols = ((mask.width as f32 * to.width / from.width).round() as u32).max(1);
    let rows = ((mask.height as f32 * to.height / from.height).round() as u32).max(1);
    let cells = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| (i, j)))
        .map(|(i, j)| {
            let x = to.left + (j as f32 + 0.5) * to.width / cols as f32;
            let y = to.top + (i as f32 + 0.5) * to.height / rows as f32;
            let u = (x - from.left) / from.width * mw as f32;
            let v = (y - from.top) / from.height * mh as f32;
            u >= 0.0
                && v >= 0.0
                && (u as usize) < mw
                && (v as usize) < mh
                && old[v as usize * mw + u as usize]
        });
    InstanceMask::from_cells(cols, rows, cells)
}

/// How class scores lie: one plane per class (`[C,H,W]`), or the classes of each cell together
/// (`[H,W,C]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreOrder {
    Chw,
    Hwc,
}

/// The class map of `scores` (`classes` x `h` x `w` class scores, in `order`) over
/// the cells `region` = (first column, first row, columns, rows) of the plane: each cell's best
/// class among those scoring above `threshold` (the first on ties), or -1 where none does, as
/// nvinfer computes it. One class alone is that class against the background.
pub fn class_map(
    scores: &[f32],
    order: ScoreOrder,
    (classes, h, w): (usize, usize, usize),
    region: (usize, usize, usize, usize),
    threshold: f32,
    component_id: i32,
) -> ClassMap {
    let (x0, y0, cols, rows) = region;
    let plane = h * w;
    let mut cells = Vec::with_capacity(cols * rows);
    for y in y0..(y0 + rows).min(h) {
        for x in x0..(x0 + cols).min(w) {
            let at = y * w + x;
            let (mut best, mut score) = (-1i32, -1.0f32);
            for c in 0..classes {
                let v = match order {
                    ScoreOrder::Chw => scores[c * plane + at],
                    ScoreOrder::Hwc => scores[at * classes + c],
                };
                if v > score && v > threshold {
                    (best, score) = (c as i32, v);
                }
            }
            cells.push(best);
        }
    }
    let cols = (x0 + cols).min(w).saturating_sub(x0) as u32;
    let rows = (y0 + rows).min(h).saturating_sub(y0) as u32;
    ClassMap::from_cells(cols, rows, classes as u32, component_id, &cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prototype_masks_follow_the_coefficients() {
        // Two 4x4 prototypes over an 8x8 network: the first positive in the left half, the
        // second in the top half.
        let mut protos = vec![0.0f32; 2 * 16];
        for y in 0..4 {
            for x in 0..4 {
                protos[y * 4 + x] = if x < 2 { 4.0 } else { -4.0 };
                protos[16 + y * 4 + x] = if y < 2 { 4.0 } else { -4.0 };
            }
        }
        let whole = BBox::new(0.0, 0.0, 8.0, 8.0);
        let left = from_prototypes(&[1.0, 0.0], &protos, (2, 4, 4), (8, 8), whole, 0.5);
        assert_eq!((left.width, left.height), (4, 4));
        let cells = left.cells();
        assert!((0..4).all(|y| cells[y * 4] && cells[y * 4 + 1] && !cells[y * 4 + 2]));
        let top = from_prototypes(&[0.0, 1.0], &protos, (2, 4, 4), (8, 8), whole, 0.5);
        assert_eq!(top.cells()[..8], [true; 8]);
        assert_eq!(top.area(), 8);
        // A box over the right half: a 2x4 grid, outside the left prototype.
        let right = BBox::new(4.0, 0.0, 4.0, 8.0);
        let m = from_prototypes(&[1.0, 0.0], &protos, (2, 4, 4), (8, 8), right, 0.5);
        assert_eq!(((m.width, m.height), m.area()), ((2, 4), 0));
    }

    #[test]
    fn a_mask_moved_to_a_clipped_box_keeps_its_cells() {
        // 4x2 mask over x 0..40; clipped to x 0..20 keeps the left half.
        let mask = InstanceMask::from_cells(
            4,
            2,
            [true, false, true, true, false, true, false, false].into_iter(),
        );
        let from = BBox::new(0.0, 0.0, 40.0, 20.0);
        let to = BBox::new(0.0, 0.0, 20.0, 20.0);
        let m = moved(&mask, from, to);
        assert_eq!((m.width, m.height), (2, 2));
        assert_eq!(m.cells(), vec![true, false, false, true]);
        assert_eq!(moved(&mask, from, from), mask);
    }

    #[test]
    fn class_maps_take_the_best_class_above_the_threshold() {
        // Two classes over 2x2 cells.
        let scores = [0.9, 0.2, 0.4, 0.1, /* class 1 */ 0.05, 0.7, 0.3, 0.2];
        let map = class_map(&scores, ScoreOrder::Chw, (2, 2, 2), (0, 0, 2, 2), 0.5, 4);
        assert_eq!(map.cells(), vec![0, 1, -1, -1]);
        assert_eq!((map.classes, map.component_id), (2, 4));
        // A region: the right column.
        let map = class_map(&scores, ScoreOrder::Chw, (2, 2, 2), (1, 0, 1, 2), 0.5, 4);
        assert_eq!(
            ((map.width, map.height), map.cells()),
            ((1, 2), vec![1, -1])
        );
        // The same scores with the classes of each cell together.
        let hwc: Vec<f32> = (0..4).flat_map(|at| [scores[at], scores[4 + at]]).collect();
        let map = class_map(&hwc, ScoreOrder::Hwc, (2, 2, 2), (0, 0, 2, 2), 0.5, 4);
        assert_eq!(map.cells(), vec![0, 1, -1, -1]);
    }
}
