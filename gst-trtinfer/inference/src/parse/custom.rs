// SPDX-License-Identifier: MIT OR Apache-2.0
//! An nvinfer custom parser library (`custom-lib-path` with a `parse-*-func-name`): the library
//! reads every output itself, by its binding index, and the inference calls it
//! ([`crate::custom`]). Chosen by those keys, never guessed, and not by `output-parser`.

use super::{Family, ParserSettings, Produces};
use crate::config::ParserKind;
use crate::engine::TensorInfo;
use crate::layout::CustomKind;

#[derive(Debug, Clone, PartialEq)]
pub struct Custom(pub CustomKind);

impl Family for Custom {
    fn select(_outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        Err(
            "output-parser custom is chosen by custom-lib-path and a parse-*-func-name key, not \
             set by itself"
                .into(),
        )
    }

    fn kind(&self) -> ParserKind {
        ParserKind::Custom
    }

    fn summary(&self) -> String {
        format!("custom parser ({})", self.0.key())
    }

    fn produces(&self) -> Produces {
        Produces::Custom(self.0)
    }

    fn remap(&mut self, _map: &[usize]) {}
}
