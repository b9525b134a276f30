// SPDX-License-Identifier: MIT OR Apache-2.0
//! Segmentation results in run-length form: an instance mask per object (covering its box) and
//! a class map per frame (semantic segmentation). Run lengths keep both small in metadata and in
//! JSON: a person's mask is a few hundred numbers, not tens of thousands of cells.

use serde::{Deserialize, Serialize};

/// A binary mask of `width` x `height` cells laid over an object's box (cell (0,0) at the box's
/// top-left corner, the grid stretched to the box), row by row as run lengths that alternate
/// between cells outside and inside the object, starting outside (the first run may be 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceMask {
    pub width: u32,
    pub height: u32,
    pub runs: Vec<u32>,
}

impl InstanceMask {
    /// The cells of `values` (`width` x `height`, row by row) above `threshold`.
    pub fn from_values(width: u32, height: u32, values: &[f32], threshold: f32) -> Self {
        let cells = width as usize * height as usize;
        Self::from_cells(
            width,
            height,
            values.iter().take(cells).map(|&v| v > threshold),
        )
    }

    /// `width` x `height` cells, row by row (missing cells are outside).
    pub fn from_cells(width: u32, height: u32, cells: impl Iterator<Item = bool>) -> Self {
        let total = width as usize * height as usize;
        let mut runs = Vec::new();
        let mut inside = false;
        let mut run = 0u32;
        let mut seen = 0usize;
        for cell in cells.take(total) {
            seen += 1;
            if cell != inside {
                runs.push(run);
                run = 0;
                inside = cell;
            }
            run += 1;
        }
        if !inside {
            run += (total - seen) as u32;
        } else if seen < total {
            runs.push(run);
            run = (total - seen) as u32;
        }
        if run > 0 || runs.is_empty() {
            runs.push(run);
        }
        Self {
            width,
            height,
            runs,
        }
    }

    /// The inside runs as `(first cell, length)` in row-major cell order.
    pub fn spans(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut at = 0usize;
        self.runs.iter().enumerate().filter_map(move |(i, &len)| {
            let start = at;
            at += len as usize;
            (i % 2 == 1 && len > 0).then_some((start, len as usize))
        })
    }

    /// Every cell, row by row.
    pub fn cells(&self) -> Vec<bool> {
        let mut cells = vec![false; self.width as usize * self.height as usize];
        for (start, len) in self.spans() {
            let end = (start + len).min(cells.len());
            if start < end {
                cells[start..end].fill(true);
            }
        }
        cells
    }

    /// Cells inside the object.
    pub fn area(&self) -> usize {
        self.spans().map(|(_, len)| len).sum()
    }

    /// Whether the runs cover exactly `width` x `height` cells (a mask read from elsewhere).
    pub fn is_consistent(&self) -> bool {
        self.runs.iter().map(|&r| r as u64).sum::<u64>() == self.width as u64 * self.height as u64
    }
}

/// A frame's semantic segmentation: for each of `width` x `height` cells (stretched over the
/// whole frame) the class it belongs to, -1 where no class reached the threshold; row by row as
/// `(class, run length)` pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassMap {
    pub width: u32,
    pub height: u32,
    /// Classes the model distinguishes.
    pub classes: u32,
    /// `gie-unique-id` of the component that produced it.
    pub component_id: i32,
    pub runs: Vec<(i32, u32)>,
}

impl ClassMap {
    /// Encodes `cells` (`width` x `height` class ids, row by row).
    pub fn from_cells(
        width: u32,
        height: u32,
        classes: u32,
        component_id: i32,
        cells: &[i32],
    ) -> Self {
        let mut runs: Vec<(i32, u32)> = Vec::new();
        for &class in cells.iter().take(width as usize * height as usize) {
            match runs.last_mut() {
                Some((c, n)) if *c == class => *n += 1,
                _ => runs.push((class, 1)),
            }
        }
        Self {
            width,
            height,
            classes,
            component_id,
            runs,
        }
    }

    /// Every cell's class, row by row.
    pub fn cells(&self) -> Vec<i32> {
        let mut cells = Vec::with_capacity(self.width as usize * self.height as usize);
        for &(class, n) in &self.runs {
            cells.extend(std::iter::repeat_n(class, n as usize));
        }
        cells.resize(self.width as usize * self.height as usize, -1);
        cells
    }

    /// Cells of class `class`.
    pub fn count(&self, class: i32) -> usize {
        self.runs
            .iter()
            .filter(|r| r.0 == class)
            .map(|r| r.1 as usize)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_masks_round_trip_through_runs() {
        let cells = [
            false, true, true, false, //
            true, true, false, false, //
            false, false, false, true,
        ];
        let mask = InstanceMask::from_cells(4, 3, cells.iter().copied());
        assert_eq!(mask.runs, vec![1, 2, 1, 2, 5, 1]);
        assert_eq!(mask.cells(), cells.to_vec());
        assert_eq!(mask.area(), 5);
        assert!(mask.is_consistent());
        // Starting inside: the first run (outside) is 0; short input is padded outside.
        let mask = InstanceMask::from_cells(2, 2, [true, true].into_iter());
        assert_eq!(mask.runs, vec![0, 2, 2]);
        assert_eq!(mask.cells(), vec![true, true, false, false]);
        let empty = InstanceMask::from_values(3, 1, &[0.1, 0.2, 0.3], 0.5);
        assert_eq!((empty.runs.clone(), empty.area()), (vec![3], 0));
        let full = InstanceMask::from_values(2, 1, &[0.6, 0.9], 0.5);
        assert_eq!(full.runs, vec![0, 2]);
        // Above the threshold, not at it.
        let half = InstanceMask::from_values(2, 1, &[0.5, 0.9], 0.5);
        assert_eq!(half.runs, vec![1, 1]);
    }

    #[test]
    fn class_maps_round_trip_through_runs() {
        let cells = [-1, -1, 3, 3, 3, 0, 0, -1];
        let map = ClassMap::from_cells(4, 2, 4, 1, &cells);
        assert_eq!(map.runs, vec![(-1, 2), (3, 3), (0, 2), (-1, 1)]);
        assert_eq!(map.cells(), cells.to_vec());
        assert_eq!(map.count(3), 3);
        let json = serde_json::to_string(&map).unwrap();
        assert_eq!(serde_json::from_str::<ClassMap>(&json).unwrap(), map);
    }
}
