// SPDX-License-Identifier: MIT OR Apache-2.0
//! Plane geometry for region and line rules, in pixels (y grows downwards).

/// A point `[x, y]`.
pub type Point = [f32; 2];

fn sub(a: Point, b: Point) -> Point {
    [a[0] - b[0], a[1] - b[1]]
}

fn cross(a: Point, b: Point) -> f32 {
    a[0] * b[1] - a[1] * b[0]
}

fn dot(a: Point, b: Point) -> f32 {
    a[0] * b[0] + a[1] * b[1]
}

fn length(a: Point) -> f32 {
    dot(a, a).sqrt()
}

/// Whether `p` lies inside the polygon (even-odd rule; points on an edge count as inside).
pub fn inside_polygon(polygon: &[Point], p: Point) -> bool {
    let n = polygon.len();
    let mut inside = false;
    for i in 0..n {
        let a = polygon[i];
        let b = polygon[(i + 1) % n];
        if on_segment(a, b, p) {
            return true;
        }
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let x = a[0] + (p[1] - a[1]) / (b[1] - a[1]) * (b[0] - a[0]);
            if p[0] < x {
                inside = !inside;
            }
        }
    }
    inside
}

fn on_segment(a: Point, b: Point, p: Point) -> bool {
    let ab = sub(b, a);
    let ap = sub(p, a);
    cross(ab, ap).abs() <= 1e-3 * length(ab).max(1.0)
        && dot(ap, ab) >= 0.0
        && dot(ap, ab) <= dot(ab, ab)
}

/// Whether segments `a0 a1` and `b0 b1` share a point.
pub fn segments_intersect(a0: Point, a1: Point, b0: Point, b1: Point) -> bool {
    let d1 = cross(sub(b1, b0), sub(a0, b0));
    let d2 = cross(sub(b1, b0), sub(a1, b0));
    let d3 = cross(sub(a1, a0), sub(b0, a0));
    let d4 = cross(sub(a1, a0), sub(b1, a0));
    if ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0))
        && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0))
    {
        return true;
    }
    on_segment(b0, b1, a0)
        || on_segment(b0, b1, a1)
        || on_segment(a0, a1, b0)
        || on_segment(a0, a1, b1)
}

/// The first pair of edges of a closed polygon that cross (not counting neighbours sharing a
/// corner), as edge indices.
pub fn self_intersection(polygon: &[Point]) -> Option<(usize, usize)> {
    let n = polygon.len();
    for i in 0..n {
        for j in i + 1..n {
            let neighbours = j == i + 1 || (i == 0 && j == n - 1);
            if neighbours {
                continue;
            }
            let (a0, a1) = (polygon[i], polygon[(i + 1) % n]);
            let (b0, b1) = (polygon[j], polygon[(j + 1) % n]);
            if segments_intersect(a0, a1, b0, b1) {
                return Some((i, j));
            }
        }
    }
    None
}

/// Twice the polygon's signed area (0 for a degenerate one).
pub fn doubled_area(polygon: &[Point]) -> f32 {
    let n = polygon.len();
    (0..n)
        .map(|i| cross(polygon[i], polygon[(i + 1) % n]))
        .sum()
}

/// A line segment with its unit normal, for signed distances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub a: Point,
    pub b: Point,
    normal: Point,
}

impl Line {
    /// `None` when the two points coincide.
    pub fn new(a: Point, b: Point) -> Option<Self> {
        let d = sub(b, a);
        let len = length(d);
        (len > 0.0).then(|| Self {
            a,
            b,
            normal: [-d[1] / len, d[0] / len],
        })
    }

    /// Signed distance of `p` from the infinite line through the segment.
    pub fn signed_distance(&self, p: Point) -> f32 {
        dot(sub(p, self.a), self.normal)
    }

    /// The component of `v` along the line's normal (its sign says which side `v` points to).
    pub fn normal_component(&self, v: Point) -> f32 {
        dot(v, self.normal)
    }

    pub fn length(&self) -> f32 {
        length(sub(self.b, self.a))
    }
}

/// Cosine of the angle between `a` and `b` (0 when either is zero).
pub fn cosine(a: Point, b: Point) -> f32 {
    let l = length(a) * length(b);
    if l == 0.0 { 0.0 } else { dot(a, b) / l }
}

/// The vector from `a` to `b`.
pub fn vector(a: Point, b: Point) -> Point {
    sub(b, a)
}

/// Euclidean length of `v`.
pub fn norm(v: Point) -> f32 {
    length(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQUARE: [Point; 4] = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]];

    #[test]
    fn points_inside_and_outside_a_polygon() {
        assert!(inside_polygon(&SQUARE, [5.0, 5.0]));
        assert!(inside_polygon(&SQUARE, [10.0, 5.0]), "on an edge");
        assert!(inside_polygon(&SQUARE, [0.0, 0.0]), "a corner");
        assert!(!inside_polygon(&SQUARE, [10.5, 5.0]));
        assert!(!inside_polygon(&SQUARE, [-1.0, -1.0]));
        // A concave "L": the notch is outside.
        let l = [
            [0.0, 0.0],
            [10.0, 0.0],
            [10.0, 4.0],
            [4.0, 4.0],
            [4.0, 10.0],
            [0.0, 10.0],
        ];
        assert!(inside_polygon(&l, [2.0, 8.0]));
        assert!(!inside_polygon(&l, [8.0, 8.0]));
    }

    #[test]
    fn self_intersecting_polygons_are_found() {
        assert_eq!(self_intersection(&SQUARE), None);
        let bow_tie = [[0.0, 0.0], [10.0, 10.0], [10.0, 0.0], [0.0, 10.0]];
        assert!(self_intersection(&bow_tie).is_some());
    }

    #[test]
    fn segment_intersection_and_signed_distance() {
        assert!(segments_intersect(
            [0.0, 0.0],
            [10.0, 10.0],
            [0.0, 10.0],
            [10.0, 0.0]
        ));
        assert!(!segments_intersect(
            [0.0, 0.0],
            [1.0, 1.0],
            [5.0, 0.0],
            [6.0, 1.0]
        ));
        assert!(
            segments_intersect([0.0, 0.0], [5.0, 0.0], [5.0, -1.0], [5.0, 1.0]),
            "touching"
        );
        let line = Line::new([0.0, 0.0], [10.0, 0.0]).unwrap();
        assert_eq!(line.signed_distance([3.0, 2.0]), 2.0);
        assert_eq!(line.signed_distance([3.0, -2.0]), -2.0);
        assert!(Line::new([1.0, 1.0], [1.0, 1.0]).is_none());
        assert!((cosine([1.0, 0.0], [0.0, 2.0])).abs() < 1e-6);
    }
}
