// SPDX-License-Identifier: MIT OR Apache-2.0
//! CenterFace: a face heatmap `[N,1,h,w]` at a quarter of the network resolution, log scales
//! `[N,2,h,w]`, centre offsets `[N,2,h,w]` and optionally five landmarks `[N,10,h,w]`.

use ferrostream_core::BBox;

use super::anchor::{self, AnchorLayout, Select};
use super::{Family, ParserSettings, describe, item_dims};
use crate::config::{ClassAttrs, ParserKind};
use crate::engine::TensorInfo;
use crate::layout::Detection;

#[derive(Debug, Clone, PartialEq)]
pub struct CenterFace {
    pub heatmap: usize,
    pub scale: usize,
    pub offset: usize,
    pub landmarks: Option<usize>,
}

impl Family for CenterFace {
    fn recognise(outputs: &[TensorInfo], settings: &ParserSettings) -> bool {
        Self::select(outputs, settings).is_ok()
    }

    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        let channels: Vec<Option<usize>> = outputs
            .iter()
            .map(|o| match item_dims(o) {
                [c, _, _] => *c,
                _ => None,
            })
            .collect();
        let landmarks = match channels.as_slice() {
            [Some(1), Some(2), Some(2)] => None,
            [Some(1), Some(2), Some(2), Some(10)] => Some(3),
            _ => {
                return Err(format!(
                    "CenterFace expects heatmap [N,1,h,w], scale [N,2,h,w], offset [N,2,h,w] and \
                     optionally landmarks [N,10,h,w], in that order; found {}",
                    describe(outputs)
                ));
            }
        };
        Ok(CenterFace {
            heatmap: 0,
            scale: 1,
            offset: 2,
            landmarks,
        })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::CenterFace
    }

    fn remap(&mut self, map: &[usize]) {
        self.heatmap = map[self.heatmap];
        self.scale = map[self.scale];
        self.offset = map[self.offset];
        self.landmarks = self.landmarks.map(|i| map[i]);
    }

    fn num_classes(&self, _outputs: &[TensorInfo]) -> Option<usize> {
        Some(1)
    }

    fn default_labels(&self) -> &'static [&'static str] {
        &["face"]
    }

    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        let shape = |i: usize| shapes.get(i).copied().unwrap_or(&[]);
        let [_, _, h, w] = shape(self.heatmap) else {
            return Some(Err(format!(
                "CenterFace heatmap {:?} is not [N,1,h,w]",
                shape(self.heatmap)
            )));
        };
        let plane = h * w;
        let planes =
            |i: usize, count: usize| shape(i).iter().skip(1).product::<usize>() >= count * plane;
        if !planes(self.scale, 2) || !planes(self.offset, 2) {
            return Some(Err(
                "CenterFace scale/offset maps do not match the heatmap".into()
            ));
        }
        let mut groups = vec![
            anchor::group(self.heatmap, 0, 1, plane, 1),
            anchor::group(self.scale, 0, 1, plane, 2),
            anchor::group(self.offset, 0, 1, plane, 2),
        ];
        if let Some(l) = self.landmarks.filter(|&l| planes(l, 10)) {
            groups.push(anchor::group(l, 0, 1, plane, 10));
        }
        Some(Ok(AnchorLayout {
            anchors: plane,
            groups,
            select: Select::Value { index: 0 },
        }))
    }

    fn decode_anchor(
        &self,
        row: &[f32],
        anchor: usize,
        heatmap_width: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        _min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let (net_w, net_h) = (net.0 as f32, net.1 as f32);
        let score = row[0];
        let (r, c) = (
            (anchor / heatmap_width) as f32,
            (anchor % heatmap_width) as f32,
        );
        let s0 = row[1].exp() * 4.0;
        let s1 = row[2].exp() * 4.0;
        let (o0, o1) = (row[3], row[4]);
        let x1 = ((c + o1 + 0.5) * 4.0 - s1 / 2.0).clamp(0.0, net_w);
        let y1 = ((r + o0 + 0.5) * 4.0 - s0 / 2.0).clamp(0.0, net_h);
        let bbox = BBox::from_corners(x1, y1, (x1 + s1).min(net_w), (y1 + s0).min(net_h));
        let points = row
            .get(5..15)
            .map(|lm| {
                (0..5)
                    .flat_map(|j| [lm[2 * j + 1] * s1 + x1, lm[2 * j] * s0 + y1])
                    .collect()
            })
            .unwrap_or_default();
        anchor::keep(out, attrs, 0, score, bbox, points);
    }
}
