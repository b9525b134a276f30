//! Clustering of raw detections, class by class, as nvinfer's `cluster-mode` does: OpenCV's
//! groupRectangles (0), DBSCAN (1), non-maximum suppression (2), DBSCAN then NMS (3) or none
//! (4); then each class's `post-cluster-threshold` and `topk`.

use ferrostream_core::BBox;

use crate::config::{ClassAttrs, ClusterMode};
use crate::parse::Detection;

/// Clusters `detections` in place; the result is ordered by class, then by falling confidence.
pub fn cluster(
    detections: &mut Vec<Detection>,
    mode: ClusterMode,
    attrs: &dyn Fn(u32) -> ClassAttrs,
) {
    detections.sort_by(|a, b| {
        a.class_id
            .cmp(&b.class_id)
            .then(b.confidence.total_cmp(&a.confidence))
    });
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
            ClusterMode::Nms => nms(members, a.nms_iou_threshold),
            ClusterMode::GroupRectangles => group_rectangles(members, a.group_threshold, a.eps),
            ClusterMode::Dbscan => dbscan(members, &a),
            ClusterMode::Hybrid => {
                let mut merged = dbscan(members, &a);
                sort_by_confidence(&mut merged);
                nms(&merged, a.nms_iou_threshold)
            }
        };
        sort_by_confidence(&mut objects);
        objects.retain(|d| d.confidence >= a.post_cluster_threshold);
        if a.topk >= 0 {
            objects.truncate(a.topk as usize);
        }
        kept.extend(objects);
        start = end;
    }
    *detections = kept;
}

fn sort_by_confidence(detections: &mut [Detection]) {
    detections.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
}

/// Greedy non-maximum suppression of `sorted` (by falling confidence): a box is dropped when it
/// overlaps a kept one by more than `iou`.
fn nms(sorted: &[Detection], iou: f32) -> Vec<Detection> {
    let mut kept: Vec<Detection> = Vec::with_capacity(sorted.len());
    for candidate in sorted {
        if !kept.iter().any(|k| k.bbox.iou(&candidate.bbox) > iou) {
            kept.push(candidate.clone());
        }
    }
    kept
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

/// OpenCV's `groupRectangles(rects, group_threshold, eps)`: similar boxes are averaged (rounded
/// to whole pixels), groups of at most `group_threshold` boxes dropped, and a group inside a
/// larger, stronger one dropped too. The confidence of a group is that of its best member. With
/// `group_threshold <= 0` nothing is grouped (as OpenCV returns the boxes untouched).
fn group_rectangles(members: &[Detection], group_threshold: i32, eps: f32) -> Vec<Detection> {
    if group_threshold <= 0 || members.is_empty() {
        return members.to_vec();
    }
    let rects: Vec<Rect> = members.iter().map(|d| Rect::of(&d.bbox)).collect();
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
    let mean = |sum: i64, n: i64| (sum as f64 / n as f64).round_ties_even() as i64;
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
        d.bbox = BBox::new(r1.x as f32, r1.y as f32, r1.w as f32, r1.h as f32);
        d.landmarks.clear();
        out.push(d);
    }
    out
}

/// DBSCAN over boxes: two boxes are neighbours when similar within `eps` (OpenCV's
/// `SimilarRects` measure, on float boxes); a box with at least `minBoxes` neighbours (itself
/// included) is a core box, and clusters grow from core boxes through their neighbours. Each
/// cluster whose confidences sum to at least `dbscan-min-score` becomes one object: the
/// confidence-weighted mean box, with the best member's confidence. Boxes in no cluster are
/// dropped.
fn dbscan(members: &[Detection], a: &ClassAttrs) -> Vec<Detection> {
    let n = members.len();
    let eps = f64::from(a.eps);
    let min_boxes = a.min_boxes.max(1) as usize;
    let near = |i: usize, j: usize| {
        let (p, q) = (&members[i].bbox, &members[j].bbox);
        let delta = eps * f64::from(p.width.min(q.width) + p.height.min(q.height)) * 0.5;
        let close = |u: f32, v: f32| f64::from((u - v).abs()) <= delta;
        close(p.left, q.left)
            && close(p.top, q.top)
            && close(p.right(), q.right())
            && close(p.bottom(), q.bottom())
    };
    let neighbours: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..n).filter(|&j| near(i, j)).collect())
        .collect();
    let mut cluster_of = vec![None::<usize>; n];
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for seed in 0..n {
        if cluster_of[seed].is_some() || neighbours[seed].len() < min_boxes {
            continue;
        }
        let id = clusters.len();
        let mut members_of = Vec::new();
        let mut queue = vec![seed];
        cluster_of[seed] = Some(id);
        while let Some(i) = queue.pop() {
            members_of.push(i);
            if neighbours[i].len() < min_boxes {
                continue; // a border box: in the cluster, but it does not extend it
            }
            for &j in &neighbours[i] {
                if cluster_of[j].is_none() {
                    cluster_of[j] = Some(id);
                    queue.push(j);
                }
            }
        }
        clusters.push(members_of);
    }
    clusters
        .into_iter()
        .filter_map(|indices| {
            let total: f32 = indices.iter().map(|&i| members[i].confidence).sum();
            if total < a.dbscan_min_score || total <= 0.0 {
                return None;
            }
            let weighted = |f: fn(&BBox) -> f32| {
                indices
                    .iter()
                    .map(|&i| f(&members[i].bbox) * members[i].confidence)
                    .sum::<f32>()
                    / total
            };
            let best = indices
                .iter()
                .map(|&i| &members[i])
                .max_by(|x, y| x.confidence.total_cmp(&y.confidence))
                .expect("clusters are not empty");
            let (left, top) = (weighted(|b| b.left), weighted(|b| b.top));
            let (right, bottom) = (weighted(BBox::right), weighted(BBox::bottom));
            let mut d = best.clone();
            d.bbox = BBox::from_corners(left, top, right, bottom);
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
        Detection {
            class_id,
            confidence,
            bbox,
            landmarks: Vec::new(),
            coefficients: Vec::new(),
            mask: None,
        }
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
    fn none_mode_keeps_overlaps_and_topk_and_post_threshold_apply() {
        let mut d = vec![det(0, 0.9, 0.0), det(0, 0.8, 1.0), det(0, 0.3, 2.0)];
        let attrs = |_| ClassAttrs {
            post_cluster_threshold: 0.5,
            ..Default::default()
        };
        cluster(&mut d, ClusterMode::None, &attrs);
        assert_eq!(d.len(), 2);
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
        assert_eq!(one.confidence, 0.9, "the best member's confidence");
        // group-threshold 0: nothing is grouped.
        let mut d = vec![det(0, 0.9, 0.0), det(0, 0.8, 0.5)];
        cluster(&mut d, ClusterMode::GroupRectangles, &|_| {
            ClassAttrs::default()
        });
        assert_eq!(d.len(), 2);
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
}
