// SPDX-License-Identifier: MIT OR Apache-2.0
//! Semantic segmentation (network-type segmentation): class scores `[N,C,H,W]` (or `[N,H,W,C]`
//! with `segmentation-output-order=1`; `[N,1,H,W]`: one class against the background) over the
//! network input, made into the frame's class map.

use super::{Family, ParserSettings, Produces, describe, item_dims};
use crate::config::ParserKind;
use crate::engine::TensorInfo;

#[derive(Debug, Clone, PartialEq)]
pub struct Segmentation {
    pub output: usize,
}

impl Family for Segmentation {
    fn select(outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        match outputs {
            [o] if item_dims(o).len() == 3 => Ok(Segmentation { output: 0 }),
            _ => Err(format!(
                "semantic segmentation expects one output of class scores [N,C,H,W]; found {}",
                describe(outputs)
            )),
        }
    }

    fn kind(&self) -> ParserKind {
        ParserKind::Segmentation
    }

    fn summary(&self) -> String {
        "semantic segmentation".into()
    }

    fn produces(&self) -> Produces {
        Produces::ClassMap {
            output: self.output,
        }
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        item_dims(&outputs[self.output]).first().copied().flatten()
    }
}
