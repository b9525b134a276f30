//! Clustering of raw detections: per-class non-maximum suppression (or none), then the
//! `post-cluster-threshold` and `topk` of each class.

use crate::config::{ClassAttrs, ClusterMode};
use crate::parse::Detection;

/// Clusters `detections` in place; the result is ordered by class, then by falling confidence.
pub fn cluster(
    detections: &mut Vec<Detection>,
    mode: ClusterMode,
    attrs: &dyn Fn(u32) -> ClassAttrs,
) {
    detections.sort_unstable_by(|a, b| {
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
        let first_kept = kept.len();
        for candidate in &detections[start..end] {
            if candidate.confidence < a.post_cluster_threshold {
                break; // sorted: every later one is lower still
            }
            if a.topk >= 0 && kept.len() - first_kept >= a.topk as usize {
                break;
            }
            let suppressed = mode == ClusterMode::Nms
                && kept[first_kept..]
                    .iter()
                    .any(|k| k.bbox.iou(&candidate.bbox) > a.nms_iou_threshold);
            if !suppressed {
                kept.push(candidate.clone());
            }
        }
        start = end;
    }
    *detections = kept;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrostream_core::BBox;

    fn det(class_id: u32, confidence: f32, left: f32) -> Detection {
        Detection {
            class_id,
            confidence,
            bbox: BBox::new(left, 0.0, 10.0, 10.0),
            landmarks: Vec::new(),
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
}
