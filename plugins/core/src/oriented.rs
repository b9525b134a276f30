// SPDX-License-Identifier: MIT OR Apache-2.0
//! Oriented boxes: a [`BBox`] turned about its centre by an angle (an oriented-box model's
//! detections, DeepStream 9's `rotation_angle`).
//!
//! The box keeps its centre, width and height; the angle is in radians, positive clockwise on
//! the screen (with y pointing down, it turns the box's width axis from +x towards +y), as
//! Ultralytics' `xywhr` boxes and nvinfer's `rotation_angle` read it. An angle of 0 is the plain
//! axis-aligned box.

use std::f32::consts::FRAC_PI_4;

use crate::BBox;

/// A point in frame pixels.
pub type Point = [f32; 2];

/// The box's corners turned by `angle` about its centre: its own top-left, top-right,
/// bottom-right and bottom-left, clockwise on the screen.
pub fn corners(b: &BBox, angle: f32) -> [Point; 4] {
    let (cx, cy) = (b.left + b.width / 2.0, b.top + b.height / 2.0);
    let (hw, hh) = (b.width / 2.0, b.height / 2.0);
    [(-hw, -hh), (hw, -hh), (hw, hh), (-hw, hh)].map(|(x, y)| {
        let [dx, dy] = turned([x, y], angle);
        [cx + dx, cy + dy]
    })
}

/// Where a turned box stands (region and line rules): the middle of its side lowest on the
/// screen. [`BBox::bottom_center`] at angle 0; the same point for either form of the box (its
/// sides swapped and a quarter turn added), so an object does not jump when a model reports it
/// in the other form. Two sides tie only at 45 degrees.
pub fn bottom_center(b: &BBox, angle: f32) -> Point {
    if angle == 0.0 {
        return b.bottom_center();
    }
    let c = corners(b, angle);
    (0..4)
        .map(|i| {
            let (p, q) = (c[i], c[(i + 1) % 4]);
            [(p[0] + q[0]) / 2.0, (p[1] + q[1]) / 2.0]
        })
        .fold(c[0], |lowest, m| if m[1] > lowest[1] { m } else { lowest })
}

/// The largest turn, either way, an oriented box's angle may have before it is put in the form
/// nearest upright: two full turns. Models give angles within a turn or so of zero (Ultralytics
/// `[-pi/4, 3pi/4)`); past a few turns an `f32` angle loses the precision a box needs (at 1e7
/// radians one unit in the last place is a full turn), so such a value is no angle at all.
pub const MAX_ANGLE: f32 = 4.0 * std::f32::consts::PI;

/// The form of a turned box nearest upright, as `(width, height, angle)`: the sides swapped
/// where the box is turned by a quarter turn or more either way (modulo a half turn), the angle
/// then in `[-pi/4, pi/4)`. `None` for an angle that is not finite or beyond [`MAX_ANGLE`].
pub fn upright(width: f32, height: f32, angle: f32) -> Option<(f32, f32, f32)> {
    if angle.is_nan() || angle.abs() > MAX_ANGLE {
        return None;
    }
    // In f64, so that the quarter turns taken off and the angle left never disagree at the
    // edges; an odd number of quarter turns swaps the sides.
    let quarter = std::f64::consts::FRAC_PI_2;
    let quarters = ((f64::from(angle) + quarter / 2.0) / quarter).floor();
    let left = (f64::from(angle) - quarters * quarter) as f32;
    // Rounding to f32 may reach pi/4 itself, which belongs to the other form.
    let left = left.clamp(-FRAC_PI_4, FRAC_PI_4.next_down());
    Some(if quarters.rem_euclid(2.0) == 1.0 {
        (height, width, left)
    } else {
        (width, height, left)
    })
}

/// `b` turned by `angle`, in the form nearest upright ([`upright`]), with sides of at most
/// `max_side` pixels (centre kept): a model's box larger than the frame's diagonal says nothing
/// more than one as large as the diagonal, and unbounded sides overflow the corners. `None`
/// where the angle is no angle or the box is not finite.
pub fn bounded(b: &BBox, angle: f32, max_side: f32) -> Option<(BBox, f32)> {
    let (width, height, angle) = upright(b.width, b.height, angle)?;
    let (cx, cy) = (
        f64::from(b.left) + f64::from(b.width) / 2.0,
        f64::from(b.top) + f64::from(b.height) / 2.0,
    );
    let (width, height) = (width.clamp(0.0, max_side), height.clamp(0.0, max_side));
    let (cx, cy) = (cx as f32, cy as f32);
    let out = BBox::new(cx - width / 2.0, cy - height / 2.0, width, height);
    [out.left, out.top, out.width, out.height]
        .iter()
        .all(|v| v.is_finite())
        .then_some((out, angle))
}

/// The smallest axis-aligned box holding the turned box (what a crop of the object takes).
pub fn bounding(b: &BBox, angle: f32) -> BBox {
    let (sin, cos) = angle.sin_cos();
    let (hw, hh) = (b.width / 2.0, b.height / 2.0);
    let ex = (hw * cos).abs() + (hh * sin).abs();
    let ey = (hw * sin).abs() + (hh * cos).abs();
    let (cx, cy) = (b.left + hw, b.top + hh);
    BBox::from_corners(cx - ex, cy - ey, cx + ex, cy + ey)
}

/// Intersection over union of two turned boxes (exact: the overlap of the two rectangles as a
/// polygon); 0 when either is empty. Equal to [`BBox::iou`] when both angles are 0.
pub fn iou(a: &BBox, angle_a: f32, b: &BBox, angle_b: f32) -> f32 {
    if angle_a == 0.0 && angle_b == 0.0 {
        return a.iou(b);
    }
    let (area_a, area_b) = (a.area(), b.area());
    if area_a <= 0.0 || area_b <= 0.0 {
        return 0.0;
    }
    let inter = polygon_area(&clip(&corners(a, angle_a), &corners(b, angle_b)));
    let union = area_a + area_b - inter;
    // Not a number (a box at infinity): no overlap, as NMS must not let such a box hide others.
    if !(union > 0.0 && inter.is_finite() && union.is_finite()) {
        0.0
    } else {
        (inter / union).clamp(0.0, 1.0)
    }
}

/// The box scaled by independent factors on each axis, with its angle: the centre is scaled
/// exactly and the width axis keeps its direction on the screen. With equal factors (a
/// letterbox, a tile of the same aspect) the result is exact; with unequal ones a turned
/// rectangle becomes a parallelogram, and this is the rectangle along its width axis with the
/// same width and area.
pub fn scaled(b: &BBox, angle: f32, sx: f32, sy: f32) -> (BBox, f32) {
    if sx == sy || angle == 0.0 {
        return (b.scaled(sx, sy), angle);
    }
    let (sin, cos) = angle.sin_cos();
    let along = [sx * cos, sy * sin];
    let length = along[0].hypot(along[1]);
    if length <= 0.0 {
        return (b.scaled(sx, sy), angle);
    }
    let width = b.width * length;
    // |det| = sx * sy: the parallelogram's area over its width.
    let height = b.height * (sx * sy).abs() / length;
    let (cx, cy) = ((b.left + b.width / 2.0) * sx, (b.top + b.height / 2.0) * sy);
    let bbox = BBox::new(cx - width / 2.0, cy - height / 2.0, width, height);
    (bbox, along[1].atan2(along[0]))
}

/// `p` turned by `angle` about the origin (clockwise on the screen for a positive angle).
fn turned(p: Point, angle: f32) -> Point {
    let (sin, cos) = angle.sin_cos();
    [p[0] * cos - p[1] * sin, p[0] * sin + p[1] * cos]
}

/// The part of convex polygon `subject` inside convex polygon `window` (Sutherland-Hodgman; both
/// with their corners in the same turning order).
fn clip(subject: &[Point], window: &[Point]) -> Vec<Point> {
    let orientation = signed_area(window).signum();
    let mut out: Vec<Point> = subject.to_vec();
    for (i, &a) in window.iter().enumerate() {
        let b = window[(i + 1) % window.len()];
        let side = |p: Point| {
            orientation * ((b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]))
        };
        let input = std::mem::take(&mut out);
        for (j, &p) in input.iter().enumerate() {
            let q = input[(j + 1) % input.len()];
            let (sp, sq) = (side(p), side(q));
            if sp >= 0.0 {
                out.push(p);
            }
            if (sp >= 0.0) != (sq >= 0.0) {
                let t = sp / (sp - sq);
                out.push([p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])]);
            }
        }
        if out.is_empty() {
            break;
        }
    }
    out
}

/// Twice-signed shoelace area over two.
fn signed_area(polygon: &[Point]) -> f32 {
    let n = polygon.len();
    (0..n)
        .map(|i| {
            let (p, q) = (polygon[i], polygon[(i + 1) % n]);
            p[0] * q[1] - q[0] * p[1]
        })
        .sum::<f32>()
        / 2.0
}

fn polygon_area(polygon: &[Point]) -> f32 {
    if polygon.len() < 3 {
        0.0
    } else {
        signed_area(polygon).abs()
    }
}

#[cfg(test)]
mod tests {
    use std::f32::consts::{FRAC_PI_2, PI};

    use super::*;

    fn close(a: Point, b: Point) -> bool {
        (a[0] - b[0]).abs() < 1e-4 && (a[1] - b[1]).abs() < 1e-4
    }

    #[test]
    fn corners_turn_clockwise_on_the_screen() {
        let b = BBox::new(0.0, 0.0, 4.0, 2.0);
        let c = corners(&b, 0.0);
        assert_eq!(c, [[0.0, 0.0], [4.0, 0.0], [4.0, 2.0], [0.0, 2.0]]);
        // A quarter turn clockwise: the width axis points down the screen.
        let c = corners(&b, FRAC_PI_2);
        assert!(close(c[0], [3.0, -1.0]), "{c:?}");
        assert!(close(c[1], [3.0, 3.0]), "{c:?}");
        assert!(close(c[2], [1.0, 3.0]), "{c:?}");
        assert!(close(c[3], [1.0, -1.0]), "{c:?}");
        // Turned a quarter, its lowest side is the one that was its right side; the other form
        // of the same rectangle (2x4, upright) stands on the same point.
        assert!(close(bottom_center(&b, FRAC_PI_2), [2.0, 3.0]));
        assert!(close(
            bottom_center(&BBox::new(1.0, -1.0, 2.0, 4.0), 0.0),
            [2.0, 3.0]
        ));
        assert!(close(bottom_center(&b, 0.0), b.bottom_center()));
        let (tilted, other_form) = (
            bottom_center(&b, 0.3),
            bottom_center(&BBox::new(1.0, -1.0, 2.0, 4.0), 0.3 - FRAC_PI_2),
        );
        assert!(close(tilted, other_form), "{tilted:?} {other_form:?}");
        let r = bounding(&b, FRAC_PI_2);
        assert!(close([r.left, r.top], [1.0, -1.0]) && close([r.width, r.height], [2.0, 4.0]));
    }

    #[test]
    fn iou_of_turned_boxes_is_exact() {
        let a = BBox::new(0.0, 0.0, 2.0, 2.0);
        assert!((iou(&a, 0.3, &a, 0.3) - 1.0).abs() < 1e-5);
        // A square and itself turned by 45 degrees: the overlap is a regular octagon.
        let octagon = 8.0 * (2.0f32.sqrt() - 1.0);
        let expected = octagon / (8.0 - octagon);
        assert!((iou(&a, 0.0, &a, FRAC_PI_4) - expected).abs() < 1e-4);
        // A long thin box crossing itself at right angles: overlap 1x1 of 10 + 10 - 1.
        let thin = BBox::new(-5.0, -0.5, 10.0, 1.0);
        assert!((iou(&thin, 0.0, &thin, FRAC_PI_2) - 1.0 / 19.0).abs() < 1e-4);
        // Axis-aligned IoU would call these the same box.
        assert!(iou(&thin, 0.0, &thin, FRAC_PI_2) < thin.iou(&thin));
        let far = BBox::new(10.0, 10.0, 2.0, 2.0);
        assert_eq!(iou(&a, 0.5, &far, 0.5), 0.0);
        assert_eq!(iou(&a, 0.0, &BBox::new(1.0, 0.0, 2.0, 2.0), 0.0), 1.0 / 3.0);
        assert_eq!(iou(&BBox::default(), 0.2, &a, 0.0), 0.0);
        let nowhere = BBox::new(f32::NAN, 0.0, 2.0, 2.0);
        assert_eq!(iou(&nowhere, 0.2, &a, 0.0), 0.0);
        assert_eq!(
            iou(&BBox::new(f32::INFINITY, 0.0, 2.0, 2.0), 0.2, &a, 0.1),
            0.0
        );
    }

    #[test]
    fn scaling_keeps_the_centre_and_the_width_axis() {
        let b = BBox::new(10.0, 20.0, 8.0, 4.0);
        let (s, angle) = scaled(&b, 0.4, 2.0, 2.0);
        assert_eq!((s, angle), (b.scaled(2.0, 2.0), 0.4));
        let (s, angle) = scaled(&b, FRAC_PI_2, 2.0, 0.5);
        // Width along the screen's y axis: scaled by 0.5; height along x: by 2.
        assert!(close([s.width, s.height], [4.0, 8.0]), "{s:?}");
        assert!((angle - FRAC_PI_2).abs() < 1e-5);
        assert!(close(
            [s.left + s.width / 2.0, s.top + s.height / 2.0],
            [28.0, 11.0]
        ));
    }

    #[test]
    fn upright_forms_lie_in_a_quarter_turn_and_absurd_angles_are_none() {
        assert_eq!(upright(8.0, 4.0, 0.1), Some((8.0, 4.0, 0.1)));
        // A quarter turn swaps the sides.
        let (w, h, a) = upright(8.0, 4.0, FRAC_PI_2 + 0.1).unwrap();
        assert_eq!((w, h), (4.0, 8.0));
        assert!((a - 0.1).abs() < 1e-6);
        // Exactly pi/4 belongs to the other form; just below it stays.
        let (w, _, a) = upright(8.0, 4.0, FRAC_PI_4).unwrap();
        assert!(w == 4.0 && (a + FRAC_PI_4).abs() < 1e-6, "{w} {a}");
        for angle in [
            -MAX_ANGLE,
            -3.0,
            -FRAC_PI_4,
            0.0,
            0.78,
            2.0,
            3.0 * PI,
            MAX_ANGLE,
        ] {
            let (_, _, a) = upright(8.0, 4.0, angle).unwrap();
            assert!((-FRAC_PI_4..FRAC_PI_4).contains(&a), "{angle} -> {a}");
        }
        for absurd in [1e30, -1e30, MAX_ANGLE * 1.01, f32::NAN, f32::INFINITY] {
            assert_eq!(upright(8.0, 4.0, absurd), None, "{absurd}");
        }
    }

    #[test]
    fn bounded_boxes_keep_their_centre_and_finite_corners() {
        let huge = BBox::new(50.0 - 1.5e38, 60.0 - 1.5e38, 3e38, 3e38);
        let (b, angle) = bounded(&huge, 0.3, 1000.0).unwrap();
        assert_eq!((b.width, b.height, angle), (1000.0, 1000.0, 0.3));
        assert!(corners(&b, angle).iter().flatten().all(|v| v.is_finite()));
        let small = BBox::new(10.0, 20.0, 8.0, 4.0);
        assert_eq!(bounded(&small, 0.2, 1000.0), Some((small, 0.2)));
        assert_eq!(bounded(&small, 1e30, 1000.0), None);
        assert_eq!(
            bounded(&BBox::new(f32::NAN, 0.0, 1.0, 1.0), 0.1, 10.0),
            None
        );
    }
}
