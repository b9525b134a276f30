// SPDX-License-Identifier: MIT OR Apache-2.0
//! A uniform grid over boxes, to find the boxes that may overlap a given one without testing
//! every pair (crowded frames with hundreds of objects).

use std::collections::HashMap;

use ferrostream_core::BBox;

pub struct BoxGrid {
    cell: f32,
    cells: HashMap<(i32, i32), Vec<u32>>,
    /// Per box, the query that last returned it (to return each box once per query).
    seen: Vec<u32>,
    query: u32,
}

impl BoxGrid {
    /// Indexes `boxes` in cells of `cell` pixels.
    pub fn new(boxes: &[BBox], cell: f32) -> Self {
        let cell = cell.max(1.0);
        let mut cells: HashMap<(i32, i32), Vec<u32>> = HashMap::new();
        for (i, b) in boxes.iter().enumerate() {
            for key in Self::keys(cell, b) {
                cells.entry(key).or_default().push(i as u32);
            }
        }
        Self {
            cell,
            cells,
            seen: vec![0; boxes.len()],
            query: 0,
        }
    }

    fn keys(cell: f32, b: &BBox) -> impl Iterator<Item = (i32, i32)> {
        let (x0, x1) = (
            (b.left / cell).floor() as i32,
            (b.right() / cell).floor() as i32,
        );
        let (y0, y1) = (
            (b.top / cell).floor() as i32,
            (b.bottom() / cell).floor() as i32,
        );
        (x0..=x1).flat_map(move |x| (y0..=y1).map(move |y| (x, y)))
    }

    /// Clears `out` and fills it with the indices of the boxes sharing a cell with `b` (every box
    /// overlapping `b` is among them).
    pub fn near(&mut self, b: &BBox, out: &mut Vec<usize>) {
        out.clear();
        self.query += 1;
        for key in Self::keys(self.cell, b) {
            for &i in self.cells.get(&key).map(Vec::as_slice).unwrap_or_default() {
                if self.seen[i as usize] != self.query {
                    self.seen[i as usize] = self.query;
                    out.push(i as usize);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_overlapping_box_once() {
        let boxes: Vec<BBox> = (0..50)
            .flat_map(|i| {
                (0..20).map(move |j| BBox::new(i as f32 * 13.0, j as f32 * 17.0, 30.0, 40.0))
            })
            .collect();
        let mut grid = BoxGrid::new(&boxes, 64.0);
        let mut near = Vec::new();
        for probe in [
            BBox::new(100.0, 100.0, 35.0, 50.0),
            BBox::new(-20.0, -20.0, 30.0, 30.0),
            BBox::new(640.0, 300.0, 200.0, 90.0),
        ] {
            grid.near(&probe, &mut near);
            let mut expected: Vec<usize> = (0..boxes.len())
                .filter(|&i| boxes[i].iou(&probe) > 0.0)
                .collect();
            let mut found: Vec<usize> = near
                .iter()
                .copied()
                .filter(|&i| boxes[i].iou(&probe) > 0.0)
                .collect();
            expected.sort_unstable();
            found.sort_unstable();
            assert_eq!(found, expected);
            let mut unique = near.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), near.len(), "each box once");
        }
    }
}
