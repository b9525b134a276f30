// SPDX-License-Identifier: MIT OR Apache-2.0
//! Grid geometry of `rstiler`: where each source's tile is, where its frame lands inside the tile
//! (letterboxed), and how boxes move with it.

use ferrostream_core::BBox;

use crate::convert::Rect;

/// A `rows` x `columns` grid over a `width` x `height` output frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub rows: u32,
    pub columns: u32,
    pub width: u32,
    pub height: u32,
}

/// The narrowest tile: two pixels, the chroma alignment of subsampled formats.
pub const MIN_TILE: u32 = 2;

impl Grid {
    /// Checks that every tile is at least [`MIN_TILE`] pixels on each side.
    pub fn check(&self) -> Result<(), String> {
        for (side, size, count, what) in [
            ("width", self.width, self.columns, "columns"),
            ("height", self.height, self.rows, "rows"),
        ] {
            if count == 0 || size / count < MIN_TILE {
                return Err(format!(
                    "{side}={size} cannot hold {count} {what}: each tile needs at least \
                     {MIN_TILE} pixels (raise {side} or lower {what})"
                ));
            }
        }
        Ok(())
    }

    pub fn tiles(&self) -> u32 {
        self.rows * self.columns
    }

    /// The tile of source `index` (row by row), or `None` when the grid has fewer tiles.
    pub fn tile(&self, index: u32) -> Option<Rect> {
        if index >= self.tiles() {
            return None;
        }
        let (row, column) = (index / self.columns, index % self.columns);
        let x0 = column * self.width / self.columns;
        let x1 = (column + 1) * self.width / self.columns;
        let y0 = row * self.height / self.rows;
        let y1 = (row + 1) * self.height / self.rows;
        Some(Rect {
            x: x0 as i32,
            y: y0 as i32,
            width: (x1 - x0) as i32,
            height: (y1 - y0) as i32,
        })
    }
}

/// Where a `frame_w` x `frame_h` frame lands in `tile`, scaled to fit with its aspect ratio and
/// centred; positions and sizes are multiples of `align` (2 for subsampled chroma).
pub fn letterbox(tile: Rect, frame_w: u32, frame_h: u32, align: i32) -> Rect {
    let scale = (tile.width as f64 / frame_w as f64).min(tile.height as f64 / frame_h as f64);
    let down = |v: i32| v - v.rem_euclid(align);
    // A tile narrower than `align` is refused by Grid::check; max() keeps clamp() well-formed.
    let width = down(((frame_w as f64 * scale).round() as i32).clamp(align, tile.width.max(align)));
    let height =
        down(((frame_h as f64 * scale).round() as i32).clamp(align, tile.height.max(align)));
    Rect {
        x: down(tile.x + (tile.width - width) / 2),
        y: down(tile.y + (tile.height - height) / 2),
        width,
        height,
    }
}

/// Maps a box in a `frame_w` x `frame_h` frame into the frame's place `dest` in the output.
pub fn map_box(b: BBox, frame_w: u32, frame_h: u32, dest: Rect) -> BBox {
    let sx = dest.width as f32 / frame_w as f32;
    let sy = dest.height as f32 / frame_h as f32;
    BBox::new(
        dest.x as f32 + b.left * sx,
        dest.y as f32 + b.top * sy,
        b.width * sx,
        b.height * sy,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_too_small_for_their_tiles_are_refused() {
        let grid = |rows, columns, width, height| Grid {
            rows,
            columns,
            width,
            height,
        };
        let e = grid(1, 2, 1, 100).check().unwrap_err();
        assert!(e.starts_with("width=1 cannot hold 2 columns"), "{e}");
        let e = grid(64, 1, 100, 100).check().unwrap_err();
        assert!(e.starts_with("height=100 cannot hold 64 rows"), "{e}");
        assert!(grid(2, 2, 4, 4).check().is_ok());
        // Tiles narrower than the alignment do not panic either.
        let r = letterbox(grid(1, 1, 1, 1).tile(0).unwrap(), 640, 480, 2);
        assert_eq!((r.width, r.height), (2, 2));
    }

    #[test]
    fn tiles_cover_the_frame_row_by_row() {
        let g = Grid {
            rows: 2,
            columns: 2,
            width: 1280,
            height: 720,
        };
        assert_eq!(
            g.tile(1),
            Some(Rect {
                x: 640,
                y: 0,
                width: 640,
                height: 360
            })
        );
        assert_eq!(
            g.tile(2),
            Some(Rect {
                x: 0,
                y: 360,
                width: 640,
                height: 360
            })
        );
        assert_eq!(g.tile(4), None);
        // Uneven divisions leave no gap.
        let g = Grid {
            rows: 1,
            columns: 3,
            width: 100,
            height: 10,
        };
        let widths: i32 = (0..3).map(|i| g.tile(i).unwrap().width).sum();
        assert_eq!(widths, 100);
    }

    #[test]
    fn letterbox_keeps_aspect_and_centres() {
        let tile = Rect {
            x: 640,
            y: 0,
            width: 640,
            height: 360,
        };
        // 4:3 into 16:9: pillarbox.
        let r = letterbox(tile, 768, 576, 2);
        assert_eq!(
            r,
            Rect {
                x: 640 + 80,
                y: 0,
                width: 480,
                height: 360
            }
        );
        // Odd results are rounded down to the chroma alignment.
        let r = letterbox(tile, 176, 144, 2);
        assert_eq!((r.width % 2, r.height % 2, r.x % 2, r.y % 2), (0, 0, 0, 0));
        assert!((r.width as f64 / r.height as f64 - 176.0 / 144.0).abs() < 0.02);
    }

    #[test]
    fn boxes_follow_the_frame() {
        let dest = Rect {
            x: 720,
            y: 0,
            width: 480,
            height: 360,
        };
        let b = map_box(BBox::new(384.0, 288.0, 76.8, 57.6), 768, 576, dest);
        assert_eq!(b, BBox::new(720.0 + 240.0, 180.0, 48.0, 36.0));
    }
}
