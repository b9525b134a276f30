// SPDX-License-Identifier: MIT OR Apache-2.0
//! Keypoints of an object: named points in frame pixels with a confidence each (a body pose's
//! joints), and the skeleton, the pairs of them drawn as limbs.
//!
//! They move with their object: scaled with the frame, mapped onto a tile, carried by the
//! tracker onto a target's predicted box.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::BBox;

/// One named point of an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keypoint {
    pub name: Arc<str>,
    /// Position in frame pixels.
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub x: f32,
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub y: f32,
    /// The model's confidence that the point is there and visible (0..1).
    #[serde(deserialize_with = "crate::nullable::f32")]
    pub confidence: f32,
}

/// Limbs: pairs of indices into an object's keypoints.
pub type Skeleton = Arc<[[u32; 2]]>;

/// An object's keypoints and its skeleton.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keypoints {
    pub points: Vec<Keypoint>,
    /// Pairs of indices into `points`: the limbs.
    pub skeleton: Skeleton,
}

/// The 17 keypoints of COCO's person annotations, in their order (YOLOv8/YOLO11-pose).
pub const COCO17_NAMES: [&str; 17] = [
    "nose",
    "left_eye",
    "right_eye",
    "left_ear",
    "right_ear",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hip",
    "right_hip",
    "left_knee",
    "right_knee",
    "left_ankle",
    "right_ankle",
];

/// COCO's person skeleton over [`COCO17_NAMES`] (0-based): legs, hips, torso, arms, face.
pub const COCO17_SKELETON: [[u32; 2]; 19] = [
    [15, 13],
    [13, 11],
    [16, 14],
    [14, 12],
    [11, 12],
    [5, 11],
    [6, 12],
    [5, 6],
    [5, 7],
    [6, 8],
    [7, 9],
    [8, 10],
    [1, 2],
    [0, 1],
    [0, 2],
    [1, 3],
    [2, 4],
    [3, 5],
    [4, 6],
];

impl Keypoints {
    /// Every point through `f` (frame pixels to other pixels).
    pub fn map(&mut self, f: impl Fn(f32, f32) -> (f32, f32)) {
        for p in &mut self.points {
            (p.x, p.y) = f(p.x, p.y);
        }
    }

    /// Scaled by independent factors on each axis, as [`BBox::scaled`].
    pub fn scaled(&self, sx: f32, sy: f32) -> Keypoints {
        let mut k = self.clone();
        k.map(|x, y| (x * sx, y * sy));
        k
    }

    /// Moved with their object's box from `from` to `to`: each point keeps its place relative to
    /// the box (the tracker's prediction of a target it did not detect in this frame).
    pub fn moved(&self, from: BBox, to: BBox) -> Keypoints {
        let sx = if from.width > 0.0 {
            to.width / from.width
        } else {
            1.0
        };
        let sy = if from.height > 0.0 {
            to.height / from.height
        } else {
            1.0
        };
        let mut k = self.clone();
        k.map(|x, y| (to.left + (x - from.left) * sx, to.top + (y - from.top) * sy));
        k
    }

    /// Whether every value is finite and every limb joins two of the points (keypoints read
    /// from JSON an application wrote).
    pub fn is_consistent(&self) -> bool {
        let n = self.points.len() as u32;
        self.points
            .iter()
            .all(|p| p.x.is_finite() && p.y.is_finite() && p.confidence.is_finite())
            && self.skeleton.iter().all(|[a, b]| *a < n && *b < n)
    }

    /// The limbs whose two ends are at least `min_confidence`, as pairs of points.
    pub fn limbs(&self, min_confidence: f32) -> impl Iterator<Item = (&Keypoint, &Keypoint)> {
        self.skeleton.iter().filter_map(move |&[a, b]| {
            let (a, b) = (self.points.get(a as usize)?, self.points.get(b as usize)?);
            (a.confidence >= min_confidence && b.confidence >= min_confidence).then_some((a, b))
        })
    }
}

/// The names and skeleton of a model's keypoints: COCO's when the model has 17 and the
/// configuration names none, else `point_<i>` names and no limbs.
pub fn default_names(count: usize) -> Vec<Arc<str>> {
    if count == COCO17_NAMES.len() {
        COCO17_NAMES.iter().map(|n| Arc::from(*n)).collect()
    } else {
        (0..count)
            .map(|i| Arc::from(format!("point_{i}")))
            .collect()
    }
}

/// The skeleton for `count` points when the configuration gives none (see [`default_names`]).
pub fn default_skeleton(count: usize) -> Skeleton {
    if count == COCO17_NAMES.len() {
        Arc::from(COCO17_SKELETON.as_slice())
    } else {
        Arc::from(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_points() -> Keypoints {
        Keypoints {
            points: vec![
                Keypoint {
                    name: "a".into(),
                    x: 10.0,
                    y: 20.0,
                    confidence: 0.9,
                },
                Keypoint {
                    name: "b".into(),
                    x: 30.0,
                    y: 60.0,
                    confidence: 0.2,
                },
            ],
            skeleton: Arc::from(vec![[0, 1]]),
        }
    }

    #[test]
    fn points_move_and_scale_with_their_box() {
        let k = two_points();
        let s = k.scaled(2.0, 0.5);
        assert_eq!((s.points[1].x, s.points[1].y), (60.0, 30.0));
        // A box of 40x80 at (10, 20) moved to (110, 40) and doubled in width.
        let m = k.moved(
            BBox::new(10.0, 20.0, 40.0, 80.0),
            BBox::new(110.0, 40.0, 80.0, 80.0),
        );
        assert_eq!((m.points[0].x, m.points[0].y), (110.0, 40.0));
        assert_eq!((m.points[1].x, m.points[1].y), (150.0, 80.0));
        assert_eq!(m.points[1].confidence, 0.2);
    }

    #[test]
    fn limbs_need_both_ends_and_json_is_checked() {
        let k = two_points();
        assert_eq!(k.limbs(0.1).count(), 1);
        assert_eq!(k.limbs(0.5).count(), 0);
        assert!(k.is_consistent());
        let mut bad = k.clone();
        bad.skeleton = Arc::from(vec![[0, 2]]);
        assert!(!bad.is_consistent());
        let json = serde_json::to_string(&k).unwrap();
        let back: Keypoints = serde_json::from_str(&json).unwrap();
        assert_eq!(back, k);
    }

    #[test]
    fn coco_defaults() {
        assert_eq!(default_names(17)[16].as_ref(), "right_ankle");
        assert_eq!(default_skeleton(17).len(), 19);
        assert!(default_skeleton(17).iter().all(|[a, b]| *a < 17 && *b < 17));
        assert_eq!(default_names(3)[2].as_ref(), "point_2");
        assert!(default_skeleton(3).is_empty());
    }
}
