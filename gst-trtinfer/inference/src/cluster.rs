// SPDX-License-Identifier: MIT OR Apache-2.0
//! Clustering of raw detections, class by class, as nvinfer's `cluster-mode` does: OpenCV's
//! groupRectangles (0), DBSCAN (1), non-maximum suppression (2), DBSCAN then NMS (3) or none
//! (4). Each mode applies `post-cluster-threshold` and `topk` as nvinfer does: NMS keeps
//! confidences strictly above the threshold, DBSCAN at or above it, none and groupRectangles
//! apply no threshold; all but groupRectangles keep the `topk` best.
//!
//! Oriented boxes (an angle on the detection) overlap as turned rectangles: NMS and DBSCAN
//! compare them by their exact rotated IoU. groupRectangles (OpenCV's, on axis-aligned
//! rectangles) and DBSCAN average the boxes in one form (a turned rectangle is also the same box
//! with its sides swapped and a quarter turn added) and keep their best member's angle.

use std::f32::consts::FRAC_PI_2;

use ferrostream_core::BBox;

use crate::config::{ClassAttrs, ClusterMode};
use crate::layout::Detection;

/// Clusters `detections` in place; the result is ordered by class, then by falling confidence.
pub fn cluster(
    detections: &mut Vec<Detection>,
    mode: ClusterMode,
    attrs: &dyn Fn(u32) -> ClassAttrs,
) {
    // By class, each class in the parser's order.
    detections.sort_by_key(|d| d.class_id);
    let mut kept: Vec<Detection> = Vec::with_capacity(detections.len());
    let mut start = 0;
    while start < detections.len() {
        let class = detections[start].class_id;
        let end = start
            + detections[start..]
                .iter()
                .take_while(|d| d.class_id == class)
                .count();
        let a = attrs(class);
        let members = &detections[start..end];
        let mut objects = match mode {
            ClusterMode::None => members.to_vec(),
            ClusterMode::Nms => nms(members, &a),
            ClusterMode::GroupRectangles => group_rectangles(members, a.group_threshold, a.eps),
            ClusterMode::Dbscan if a.min_boxes > 0 => {
                let mut merged = dbscan(members, &a);
                merged.retain(|d| d.confidence >= a.post_cluster_threshold);
                merged
            }
            ClusterMode::Dbscan => members.to_vec(),
            ClusterMode::Hybrid => {
                if a.min_boxes > 0 {
                    let labels = dbscan_labels(members, a.eps, a.min_boxes);
                    let clustered: Vec<Detection> = members
                        .iter()
                        .zip(&labels)
                        .filter(|(_, l)| l.is_some())
                        .map(|(d, _)| d.clone())
                        .collect();
                    nms(&clustered, &a)
                } else {
                    nms(members, &a)
                }
            }
        };
        sort_by_confidence(&mut objects);
        if a.topk >= 0 && mode != ClusterMode::GroupRectangles {
            objects.truncate(a.topk as usize);
        }
        kept.extend(objects);
        start = end;
    }
    *detections = kept;
}

/// Stable: equal confidences keep their order.
fn sort_by_confidence(detections: &mut [Detection]) {
    detections.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
}

/// Greedy non-maximum suppression: by falling confidence, a box is kept when it overlaps every
/// kept one by at most `nms-iou-threshold`; then those strictly above `post-cluster-threshold`.
fn nms(members: &[Detection], a: &ClassAttrs) -> Vec<Detection> {
    let mut sorted = members.to_vec();
    sort_by_confidence(&mut sorted);
    let mut kept: Vec<Detection> = Vec::with_capacity(sorted.len());
    for candidate in sorted {
        if kept
            .iter()
            .all(|k| k.iou(&candidate) <= a.nms_iou_threshold)
        {
            kept.push(candidate);
        }
    }
    kept.retain(|d| d.confidence > a.post_cluster_threshold);
    kept
}

/// `d`'s box in the form whose angle is nearest `reference`: a turned rectangle is the same box
/// with its sides swapped and a quarter turn added, and members of one cluster may come in
/// either form. An axis-aligned box is as it is.
fn aligned(d: &Detection, reference: f32) -> BBox {
    match d.angle {
        Some(angle) if ((angle - reference) / FRAC_PI_2).round().rem_euclid(2.0) == 1.0 => {
            swapped_sides(d.bbox)
        }
        _ => d.bbox,
    }
}

/// The box with its width and height swapped about its centre.
fn swapped_sides(b: BBox) -> BBox {
    let (cx, cy) = (b.left + b.width / 2.0, b.top + b.height / 2.0);
    BBox::new(cx - b.height / 2.0, cy - b.width / 2.0, b.height, b.width)
}

/// A box in whole pixels, as OpenCV's `cv::Rect` holds it (nvinfer converts its float boxes
/// to `cv::Rect` by truncation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    x: i64,
    y: i64,
    w: i64,
    h: i64,
}

impl Rect {
    fn of(b: &BBox) -> Self {
        Self {
            x: b.left as i64,
            y: b.top as i64,
            w: b.width as i64,
            h: b.height as i64,
        }
    }
}

/// OpenCV's `SimilarRects`: corners within `eps` times the mean of the smaller width and the
/// smaller height.
fn similar(eps: f64, a: &Rect, b: &Rect) -> bool {
    let delta = eps * (a.w.min(b.w) + a.h.min(b.h)) as f64 * 0.5;
    let near = |p: i64, q: i64| ((p - q).abs() as f64) <= delta;
    near(a.x, b.x) && near(a.y, b.y) && near(a.x + a.w, b.x + b.w) && near(a.y + a.h, b.y + b.h)
}

/// OpenCV's `partition`: the classes of the transitive closure of `same`, numbered in the order
/// of their first member.
fn partition<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> (Vec<usize>, usize) {
    let mut parent: Vec<usize> = (0..items.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..items.len() {
        for j in 0..i {
            if same(&items[i], &items[j]) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                if a != b {
                    parent[a] = b;
                }
            }
        }
    }
    let mut label_of_root = vec![usize::MAX; items.len()];
    let mut labels = Vec::with_capacity(items.len());
    let mut count = 0;
    for i in 0..items.len() {
        let r = root(&mut parent, i);
        if label_of_root[r] == usize::MAX {
            label_of_root[r] = count;
            count += 1;
        }
        labels.push(label_of_root[r]);
    }
    (labels, count)
}

/// The confidence nvinfer gives every object of `cluster-mode=0`: groupRectangles returns boxes
/// without scores, and nvinfer reports this value (`NvDsObjectMeta.confidence` documents it).
pub const GROUP_RECTANGLES_CONFIDENCE: f32 = -0.1;

/// OpenCV's `groupRectangles(rects, group_threshold, eps)` on the boxes in whole pixels (as
/// nvinfer passes them): similar boxes are averaged (rounded half to even), groups of at most
/// `group_threshold` boxes dropped, and a group inside a larger, better supported one dropped
/// too. With `group_threshold <= 0` nothing is grouped (the boxes pass, in whole pixels). Every
/// box reports [`GROUP_RECTANGLES_CONFIDENCE`], as in nvinfer; a group keeps its best member's
/// other results (mask coefficients).
fn group_rectangles(members: &[Detection], group_threshold: i32, eps: f32) -> Vec<Detection> {
    if group_threshold <= 0 || members.is_empty() {
        return members
            .iter()
            .map(|d| {
                let r = Rect::of(&d.bbox);
                let mut d = d.clone();
                d.bbox = BBox::new(r.x as f32, r.y as f32, r.w as f32, r.h as f32);
                d.confidence = GROUP_RECTANGLES_CONFIDENCE;
                d
            })
            .collect();
    }
    // Turned boxes as rectangles in the form nearest upright, so that two forms of one box
    // group (and average) as one.
    let rects: Vec<Rect> = members.iter().map(|d| Rect::of(&aligned(d, 0.0))).collect();
    let eps = f64::from(eps);
    let (labels, count) = partition(&rects, |a, b| similar(eps, a, b));
    let mut sums = vec![(0i64, 0i64, 0i64, 0i64); count];
    let mut sizes = vec![0i64; count];
    let mut best: Vec<Option<&Detection>> = vec![None; count];
    for ((r, &l), d) in rects.iter().zip(&labels).zip(members) {
        let s = &mut sums[l];
        *s = (s.0 + r.x, s.1 + r.y, s.2 + r.w, s.3 + r.h);
        sizes[l] += 1;
        if best[l].is_none_or(|b| d.confidence > b.confidence) {
            best[l] = Some(d);
        }
    }
    // OpenCV: the sum times 1/n in single precision, rounded half to even.
    let mean = |sum: i64, n: i64| (sum as f32 * (1.0f32 / n as f32)).round_ties_even() as i64;
    let groups: Vec<Rect> = sums
        .iter()
        .zip(&sizes)
        .map(|(s, &n)| Rect {
            x: mean(s.0, n),
            y: mean(s.1, n),
            w: mean(s.2, n),
            h: mean(s.3, n),
        })
        .collect();
    let threshold = i64::from(group_threshold);
    let mut out = Vec::new();
    for (i, r1) in groups.iter().enumerate() {
        let n1 = sizes[i];
        if n1 <= threshold {
            continue;
        }
        let inside_stronger = groups.iter().enumerate().any(|(j, r2)| {
            let n2 = sizes[j];
            if j == i || n2 <= threshold {
                return false;
            }
            let dx = (r2.w as f64 * eps).round_ties_even() as i64;
            let dy = (r2.h as f64 * eps).round_ties_even() as i64;
            r1.x >= r2.x - dx
                && r1.y >= r2.y - dy
                && r1.x + r1.w <= r2.x + r2.w + dx
                && r1.y + r1.h <= r2.y + r2.h + dy
                && (n2 > n1.max(3) || n1 < 3)
        });
        if inside_stronger {
            continue;
        }
        let mut d = best[i].expect("every group has a member").clone();
        let averaged = BBox::new(r1.x as f32, r1.y as f32, r1.w as f32, r1.h as f32);
        // Back in the form of the best member's angle.
        d.bbox = if aligned(&d, 0.0) == d.bbox {
            averaged
        } else {
            swapped_sides(averaged)
        };
        d.confidence = GROUP_RECTANGLES_CONFIDENCE;
        // Points of one member do not belong to the averaged box.
        d.landmarks.clear();
        d.keypoints.clear();
        out.push(d);
    }
    out
}

/// DBSCAN labels of `members`, as NVIDIA's DBSCAN (nvdsinferutils) assigns them: boxes are
/// neighbours when `1 - IoU < eps`; a box with at least `min_boxes - 1` neighbours is a core box;
/// scanning in order, an unvisited core box starts a cluster that takes its unvisited
/// neighbours that are core boxes themselves (one hop: border boxes and boxes visited earlier
/// stay unlabelled, like noise).
fn dbscan_labels(members: &[Detection], eps: f32, min_boxes: i32) -> Vec<Option<usize>> {
    let n = members.len();
    let neighbours = |i: usize| -> Vec<usize> {
        (0..n)
            .filter(|&j| j != i && 1.0 - members[i].iou(&members[j]) < eps)
            .collect()
    };
    let core = |count: usize| count as i64 + 1 >= i64::from(min_boxes);
    let mut visited = vec![false; n];
    let mut labels = vec![None; n];
    let mut cluster = 0;
    for i in 0..n {
        if visited[i] {
            continue;
        }
        visited[i] = true;
        let around = neighbours(i);
        if !core(around.len()) {
            continue;
        }
        labels[i] = Some(cluster);
        for &nb in &around {
            if visited[nb] {
                continue;
            }
            visited[nb] = true;
            if core(neighbours(nb).len()) {
                labels[nb] = Some(cluster);
            }
        }
        cluster += 1;
    }
    labels
}

/// Area-to-hit ratio above which nvinfer's DBSCAN drops a cluster (its fixed setting).
const DBSCAN_AREA_TO_HIT_RATIO: f32 = 60.0;

/// DBSCAN (cluster mode 1): each cluster of [`dbscan_labels`] becomes one object, its box the
/// confidence-weighted mean of its members' and its confidence the best member's; clusters
/// whose confidences sum to less than `dbscan-min-score`, or whose box is large for the boxes
/// that found it (square root of its area over members + 1 above 60, as nvinfer fixes it), are
/// dropped, and so are unclustered boxes.
fn dbscan(members: &[Detection], a: &ClassAttrs) -> Vec<Detection> {
    let labels = dbscan_labels(members, a.eps, a.min_boxes);
    let clusters = labels.iter().flatten().max().map_or(0, |&m| m + 1);
    (0..clusters)
        .filter_map(|c| {
            let of: Vec<&Detection> = members
                .iter()
                .zip(&labels)
                .filter(|(_, l)| **l == Some(c))
                .map(|(d, _)| d)
                .collect();
            let total: f32 = of.iter().map(|d| d.confidence).sum();
            let best = of
                .iter()
                .copied()
                .max_by(|x, y| x.confidence.total_cmp(&y.confidence))?;
            // Turned members in the form of the best one's angle, which the cluster keeps.
            let reference = best.angle.unwrap_or(0.0);
            let boxes: Vec<BBox> = of.iter().map(|d| aligned(d, reference)).collect();
            let weighted = |f: fn(&BBox) -> f32| {
                of.iter()
                    .zip(&boxes)
                    .map(|(d, b)| f(b) * d.confidence)
                    .sum::<f32>()
                    / total
            };
            let bbox = BBox::new(
                weighted(|b| b.left),
                weighted(|b| b.top),
                weighted(|b| b.width),
                weighted(|b| b.height),
            );
            let hits = of.len() as f32 + 1.0;
            if total < a.dbscan_min_score
                || (bbox.width * bbox.height).sqrt() / hits > DBSCAN_AREA_TO_HIT_RATIO
            {
                return None;
            }
            let mut d = best.clone();
            d.bbox = bbox;
            d.landmarks.clear();
            Some(d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(class_id: u32, confidence: f32, left: f32) -> Detection {
        boxed(class_id, confidence, BBox::new(left, 0.0, 10.0, 10.0))
    }

    fn boxed(class_id: u32, confidence: f32, bbox: BBox) -> Detection {
        Detection::new(class_id, confidence, bbox)
    }

    #[test]
    fn nms_is_per_class() {
        let mut d = vec![
            det(0, 0.6, 1.0),
            det(0, 0.9, 0.0),
            det(1, 0.5, 0.0),
            det(0, 0.7, 50.0),
        ];
        cluster(&mut d, ClusterMode::Nms, &|_| ClassAttrs::default());
        let summary: Vec<(u32, f32)> = d.iter().map(|d| (d.class_id, d.confidence)).collect();
        // 0.6 overlaps 0.9 of the same class; class 1 overlapping class 0 is kept.
        assert_eq!(summary, vec![(0, 0.9), (0, 0.7), (1, 0.5)]);
    }

    #[test]
    fn nms_and_hybrid_compare_oriented_boxes_as_turned() {
        // Two long thin boxes with the same centre crossing at right angles: the same box to an
        // axis-aligned IoU, 1/19 turned. A third lies on the first, turned by a few degrees.
        let thin = BBox::new(-50.0, -5.0, 100.0, 10.0);
        let turned = |confidence, angle| Detection {
            angle: Some(angle),
            ..boxed(0, confidence, thin)
        };
        let crossing = || {
            vec![
                turned(0.9, 0.0),
                turned(0.8, std::f32::consts::FRAC_PI_2),
                turned(0.7, 0.02),
            ]
        };
        let attrs = |_| ClassAttrs {
            nms_iou_threshold: 0.5,
            min_boxes: 1,
            eps: 0.5,
            ..Default::default()
        };
        for mode in [ClusterMode::Nms, ClusterMode::Hybrid] {
            let mut d = crossing();
            cluster(&mut d, mode, &attrs);
            let kept: Vec<f32> = d.iter().map(|d| d.confidence).collect();
            assert_eq!(kept, vec![0.9, 0.8], "{mode:?}");
            assert_eq!(d[1].angle, Some(std::f32::consts::FRAC_PI_2));
        }
        // Without their angles the three are one box.
        let mut d: Vec<Detection> = crossing()
            .into_iter()
            .map(|d| Detection { angle: None, ..d })
            .collect();
        cluster(&mut d, ClusterMode::Nms, &attrs);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn both_forms_of_a_turned_box_average_as_one() {
        // One 40x20 box centred at (50, 50), nearly upright, found twice: once as it is, once
        // with its sides swapped and a quarter turn taken off (the same rectangle).
        let upright = Detection {
            angle: Some(0.01),
            ..boxed(0, 0.9, BBox::new(30.0, 40.0, 40.0, 20.0))
        };
        let other_form = Detection {
            angle: Some(0.01 - std::f32::consts::FRAC_PI_2),
            ..boxed(0, 0.8, BBox::new(40.0, 30.0, 20.0, 40.0))
        };
        let attrs = |_| ClassAttrs {
            eps: 0.3,
            min_boxes: 2,
            group_threshold: 1,
            ..Default::default()
        };
        for mode in [ClusterMode::Dbscan, ClusterMode::GroupRectangles] {
            let mut d = vec![upright.clone(), other_form.clone()];
            cluster(&mut d, mode, &attrs);
            let [merged] = &d[..] else {
                panic!("{mode:?}: {d:#?}")
            };
            assert_eq!(merged.angle, Some(0.01), "{mode:?}");
            let b = merged.bbox;
            assert!(
                (b.width - 40.0).abs() < 0.5 && (b.height - 20.0).abs() < 0.5,
                "{mode:?}: {b:?}"
            );
            assert!(
                (b.left + b.width / 2.0 - 50.0).abs() < 0.5,
                "{mode:?}: {b:?}"
            );
        }
    }

    #[test]
    fn none_mode_keeps_overlaps_and_topk_and_post_threshold_apply() {
        let d = vec![det(0, 0.9, 0.0), det(0, 0.8, 1.0), det(0, 0.3, 2.0)];
        let attrs = |_| ClassAttrs {
            post_cluster_threshold: 0.5,
            ..Default::default()
        };
        // Mode none applies no post-cluster threshold (as nvinfer); NMS keeps those strictly
        // above it.
        let mut none = d.clone();
        cluster(&mut none, ClusterMode::None, &attrs);
        assert_eq!(none.len(), 3);
        let mut d = vec![det(0, 0.9, 0.0), det(0, 0.5, 100.0), det(0, 0.3, 200.0)];
        cluster(&mut d, ClusterMode::Nms, &attrs);
        assert_eq!(d.len(), 1);
        let mut d = vec![det(0, 0.9, 0.0), det(0, 0.8, 100.0), det(0, 0.7, 200.0)];
        let attrs = |_| ClassAttrs {
            topk: 2,
            ..Default::default()
        };
        cluster(&mut d, ClusterMode::Nms, &attrs);
        assert_eq!(
            d.iter().map(|d| d.confidence).collect::<Vec<_>>(),
            vec![0.9, 0.8]
        );
    }

    #[test]
    fn partition_numbers_classes_by_first_member() {
        let (labels, count) = partition(&[1, 10, 2, 11, 30], |a: &i32, b: &i32| (a - b).abs() <= 1);
        assert_eq!((labels, count), (vec![0, 1, 0, 1, 2], 3));
        // Transitive: 1~2, 2~3 joins 1 and 3.
        let (labels, _) = partition(&[1, 3, 2], |a: &i32, b: &i32| (a - b).abs() <= 1);
        assert_eq!(labels, vec![0, 0, 0]);
    }

    #[test]
    fn group_rectangles_averages_similar_boxes_and_drops_small_groups() {
        let attrs = |_| ClassAttrs {
            group_threshold: 1,
            eps: 0.2,
            ..Default::default()
        };
        let mut d = vec![
            boxed(0, 0.5, BBox::new(100.0, 100.0, 50.0, 100.0)),
            boxed(0, 0.9, BBox::new(103.0, 98.0, 52.0, 101.0)),
            boxed(0, 0.7, BBox::new(98.6, 104.2, 49.0, 99.0)),
            // Alone: a group of one is not more than group-threshold 1.
            boxed(0, 0.95, BBox::new(400.0, 100.0, 50.0, 100.0)),
        ];
        cluster(&mut d, ClusterMode::GroupRectangles, &attrs);
        let [one] = &d[..] else { panic!("{d:?}") };
        // Truncated to whole pixels ((100,100,50,100), (103,98,52,101), (98,104,49,99)),
        // averaged and rounded: x 301/3, y 302/3, w 151/3, h 300/3.
        assert_eq!(one.bbox, BBox::new(100.0, 101.0, 50.0, 100.0));
        assert_eq!(
            one.confidence, -0.1,
            "nvinfer's confidence for groupRectangles"
        );
        // group-threshold 0: nothing is grouped, the boxes keep their order.
        let mut d = vec![det(0, 0.8, 0.0), det(0, 0.9, 20.0)];
        cluster(&mut d, ClusterMode::GroupRectangles, &|_| {
            ClassAttrs::default()
        });
        assert_eq!(d.len(), 2);
        assert!(
            d.iter()
                .all(|d| d.confidence == GROUP_RECTANGLES_CONFIDENCE)
        );
        assert!(d[0].bbox.left < d[1].bbox.left, "{d:?}");
    }

    #[test]
    fn group_rectangles_drops_a_group_inside_a_stronger_one() {
        let attrs = |_| ClassAttrs {
            group_threshold: 1,
            eps: 0.2,
            ..Default::default()
        };
        let big = BBox::new(100.0, 100.0, 100.0, 200.0);
        let small = BBox::new(120.0, 150.0, 30.0, 40.0);
        let mut d: Vec<Detection> = (0..4)
            .map(|i| boxed(0, 0.5 + i as f32 * 0.1, big))
            .chain((0..2).map(|_| boxed(0, 0.99, small)))
            .collect();
        cluster(&mut d, ClusterMode::GroupRectangles, &attrs);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].bbox, big);
    }

    #[test]
    fn dbscan_merges_dense_boxes_weighted_by_confidence() {
        let attrs = |_| ClassAttrs {
            eps: 0.2,
            min_boxes: 3,
            dbscan_min_score: 1.0,
            ..Default::default()
        };
        let mut d = vec![
            boxed(0, 0.8, BBox::new(100.0, 100.0, 50.0, 100.0)),
            boxed(0, 0.4, BBox::new(104.0, 100.0, 50.0, 100.0)),
            boxed(0, 0.8, BBox::new(102.0, 100.0, 50.0, 100.0)),
            // Two near boxes: too few for a dense region.
            boxed(0, 0.9, BBox::new(400.0, 100.0, 50.0, 100.0)),
            boxed(0, 0.9, BBox::new(401.0, 100.0, 50.0, 100.0)),
        ];
        cluster(&mut d, ClusterMode::Dbscan, &attrs);
        let [one] = &d[..] else { panic!("{d:?}") };
        // left = (100*0.8 + 104*0.4 + 102*0.8) / 2.0
        assert!((one.bbox.left - 101.6).abs() < 1e-4, "{:?}", one.bbox);
        assert!((one.bbox.width - 50.0).abs() < 1e-4);
        assert_eq!(one.confidence, 0.8);
        // dbscan-min-score: the cluster's confidences sum to 2.0.
        let strict = |_| ClassAttrs {
            dbscan_min_score: 2.5,
            ..attrs(0)
        };
        let mut d = vec![
            boxed(0, 0.8, BBox::new(100.0, 100.0, 50.0, 100.0)),
            boxed(0, 0.4, BBox::new(104.0, 100.0, 50.0, 100.0)),
            boxed(0, 0.8, BBox::new(102.0, 100.0, 50.0, 100.0)),
        ];
        cluster(&mut d, ClusterMode::Dbscan, &strict);
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn hybrid_suppresses_overlapping_clusters() {
        let attrs = |_| ClassAttrs {
            eps: 0.05,
            min_boxes: 1,
            nms_iou_threshold: 0.5,
            ..Default::default()
        };
        // Two clusters (their corners differ by more than eps allows) that overlap heavily:
        // DBSCAN keeps both, NMS keeps the stronger.
        let mut d = vec![
            boxed(0, 0.9, BBox::new(100.0, 100.0, 100.0, 100.0)),
            boxed(0, 0.6, BBox::new(110.0, 100.0, 100.0, 100.0)),
        ];
        let mut dbscan_only = d.clone();
        cluster(&mut dbscan_only, ClusterMode::Dbscan, &attrs);
        assert_eq!(dbscan_only.len(), 2);
        cluster(&mut d, ClusterMode::Hybrid, &attrs);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].confidence, 0.9);
    }

    #[test]
    fn dbscan_follows_nvidias_labelling_and_filters() {
        let attrs = |min_boxes| ClassAttrs {
            eps: 0.3,
            min_boxes,
            ..Default::default()
        };
        let b = |left: f32| BBox::new(left, 0.0, 50.0, 50.0);
        // 0, 1, 2 are neighbours of each other (IoU above 0.7); 3 is a neighbour of 2 only: a
        // border box, never labelled.
        let members = vec![
            boxed(0, 0.9, b(0.0)),
            boxed(0, 0.8, b(2.0)),
            boxed(0, 0.7, b(4.0)),
            boxed(0, 0.6, b(12.0)),
        ];
        assert_eq!(
            dbscan_labels(&members, 0.3, 3),
            vec![Some(0), Some(0), Some(0), None]
        );
        // minBoxes 0: no DBSCAN, every box passes.
        let mut all = members.clone();
        cluster(&mut all, ClusterMode::Dbscan, &|_| attrs(0));
        assert_eq!(all.len(), 4);
        // The area-to-hit ratio: two 300x300 boxes are too few for their size.
        let mut big = vec![
            boxed(0, 0.9, BBox::new(0.0, 0.0, 300.0, 300.0)),
            boxed(0, 0.9, BBox::new(1.0, 0.0, 300.0, 300.0)),
        ];
        cluster(&mut big, ClusterMode::Dbscan, &|_| attrs(2));
        assert!(big.is_empty(), "{big:?}");
        // Hybrid: DBSCAN only drops unclustered boxes; NMS then runs on the original boxes.
        let mut hybrid = vec![
            boxed(0, 0.6, b(2.0)),
            boxed(0, 0.9, b(0.0)),
            boxed(0, 0.95, b(300.0)),
        ];
        cluster(&mut hybrid, ClusterMode::Hybrid, &|_| ClassAttrs {
            nms_iou_threshold: 0.5,
            ..attrs(2)
        });
        assert_eq!(hybrid.len(), 1, "{hybrid:?}");
        assert_eq!((hybrid[0].confidence, hybrid[0].bbox), (0.9, b(0.0)));
    }
}
