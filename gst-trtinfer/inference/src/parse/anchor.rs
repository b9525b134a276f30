// SPDX-License-Identifier: MIT OR Apache-2.0
//! Families that decode anchor by anchor (SSD, YOLO, DETR, CenterFace): where one anchor's
//! values lie in the outputs ([`AnchorLayout`]), which anchors may hold a detection
//! ([`Select`]), and the host path that gathers every anchor's row and decodes it. A GPU decoder
//! selects and gathers the rows on the device instead; both end in the family's
//! [`Family::decode_anchor`](super::Family::decode_anchor), so they give the same detections.

use ferrostream_core::BBox;

use super::Family;
use crate::config::ClassAttrs;
use crate::engine::OutputTensor;
use crate::layout::Detection;

/// Where the values of one anchor lie in the outputs: a row gathered group by group.
#[derive(Debug, Clone, PartialEq)]
pub struct AnchorLayout {
    pub anchors: usize,
    pub groups: Vec<Group>,
    /// Which anchors may hold a detection.
    pub select: Select,
}

/// `count` values of output `output`: value `j` of anchor `a` of a batch item is element
/// `offset + a * anchor_stride + j * elem_stride` of that item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub output: usize,
    pub offset: usize,
    pub anchor_stride: usize,
    pub elem_stride: usize,
    pub count: usize,
}

/// The test an anchor's row passes when it may hold a detection: its best class score (times
/// the objectness at row index `objectness`, YOLOv5) or the value at `index` (CenterFace's
/// heatmap) is at least the lowest `pre-cluster-threshold`. Scores are compared as the host
/// parser compares them (NaN never passes, the first maximum wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    BestClass {
        start: usize,
        count: usize,
        objectness: Option<usize>,
    },
    Value {
        index: usize,
    },
}

impl Select {
    pub fn passes(&self, row: &[f32], min_threshold: f32) -> bool {
        match *self {
            Select::BestClass {
                start,
                count,
                objectness,
            } => {
                let (_, best) = argmax(&row[start..start + count]);
                let score = objectness.map_or(best, |o| row[o] * best);
                score >= min_threshold
            }
            Select::Value { index } => row[index] >= min_threshold,
        }
    }
}

impl AnchorLayout {
    /// Values per anchor.
    pub fn row_len(&self) -> usize {
        self.groups.iter().map(|g| g.count).sum()
    }

    /// Fills `row` with anchor `anchor`'s values from `items` (each output's values for one
    /// batch item).
    pub fn gather(
        &self,
        items: &[&[f32]],
        anchor: usize,
        row: &mut Vec<f32>,
    ) -> Result<(), String> {
        row.clear();
        for g in &self.groups {
            let data = items.get(g.output).copied().unwrap_or(&[]);
            let base = g.offset + anchor * g.anchor_stride;
            let last = base + g.count.saturating_sub(1) * g.elem_stride;
            if last >= data.len() {
                return Err(format!(
                    "output {} holds {} values per item; anchor {anchor} needs index {last}",
                    g.output,
                    data.len()
                ));
            }
            row.extend((0..g.count).map(|j| data[base + j * g.elem_stride]));
        }
        Ok(())
    }

    /// CenterFace's heatmap width (the last dimension of the first group's output).
    pub fn heatmap_width(&self, shapes: &[&[usize]]) -> usize {
        self.groups
            .first()
            .and_then(|g| shapes.get(g.output))
            .and_then(|s| s.last().copied())
            .unwrap_or(1)
            .max(1)
    }

    /// The lowest `pre-cluster-threshold` over the classes this layout scores: anchors whose
    /// best score is below it hold no detection.
    pub fn min_threshold(&self, attrs: &dyn Fn(u32) -> ClassAttrs) -> f32 {
        let classes = match self.select {
            Select::BestClass { count, .. } => count,
            Select::Value { .. } => 1,
        };
        (0..classes.max(1) as u32)
            .map(|c| attrs(c).pre_cluster_threshold)
            .fold(f32::INFINITY, f32::min)
    }
}

/// The host path of an anchor family: every anchor of batch item `item` gathered, tested and
/// decoded (what [`Family::detections`] does unless a family reads its outputs otherwise).
pub(super) fn decode_item<F: Family + ?Sized>(
    family: &F,
    outputs: &[OutputTensor],
    item: usize,
    net: (u32, u32),
    attrs: &dyn Fn(u32) -> ClassAttrs,
    out: &mut Vec<Detection>,
) -> Result<(), String> {
    let shapes: Vec<&[usize]> = outputs.iter().map(|o| o.shape.as_slice()).collect();
    let Some(layout) = family.anchor_layout(&shapes) else {
        return Err(format!("{} gives no detections", family.summary()));
    };
    let layout = layout?;
    let items: Vec<&[f32]> = outputs
        .iter()
        .map(|o| {
            if o.shape.first().is_some_and(|&n| item < n) {
                o.item(item)
            } else {
                &[]
            }
        })
        .collect();
    let min = layout.min_threshold(attrs);
    let width = layout.heatmap_width(&shapes);
    let mut row = Vec::with_capacity(layout.row_len());
    for anchor in 0..layout.anchors {
        layout.gather(&items, anchor, &mut row)?;
        if layout.select.passes(&row, min) {
            family.decode_anchor(&row, anchor, width, net, attrs, min, out);
        }
    }
    Ok(())
}

/// Keeps a detection at or above its class's `pre-cluster-threshold`; whether it was kept.
pub(super) fn keep(
    out: &mut Vec<Detection>,
    attrs: &dyn Fn(u32) -> ClassAttrs,
    class_id: u32,
    confidence: f32,
    bbox: BBox,
    landmarks: Vec<f32>,
) -> bool {
    if confidence < attrs(class_id).pre_cluster_threshold {
        return false;
    }
    out.push(Detection {
        landmarks,
        ..Detection::new(class_id, confidence, bbox)
    });
    true
}

/// A group of `count` values of `output` (see [`Group`]).
pub(super) fn group(
    output: usize,
    offset: usize,
    anchor_stride: usize,
    elem_stride: usize,
    count: usize,
) -> Group {
    Group {
        output,
        offset,
        anchor_stride,
        elem_stride,
        count,
    }
}

/// A box from its centre and size.
pub(super) fn centre_box(cx: f32, cy: f32, w: f32, h: f32) -> BBox {
    BBox::new(cx - w / 2.0, cy - h / 2.0, w, h)
}

/// The index and value of the largest of `values` (the first of equal ones; NaN never wins).
pub(super) fn argmax(values: &[f32]) -> (usize, f32) {
    values.iter().copied().enumerate().fold(
        (0, f32::MIN),
        |best, (i, v)| if v > best.1 { (i, v) } else { best },
    )
}
