// SPDX-License-Identifier: MIT OR Apache-2.0
//! No parsing (network-type other): the raw output tensors are the result, attached to the
//! objects they were computed for (`output-tensor-meta`), e.g. re-identification embeddings.

use super::{Family, ParserSettings, Produces};
use crate::config::ParserKind;
use crate::engine::TensorInfo;

#[derive(Debug, Clone, PartialEq)]
pub struct Tensors;

impl Family for Tensors {
    fn select(_outputs: &[TensorInfo], _settings: &ParserSettings) -> Result<Self, String> {
        Ok(Tensors)
    }

    fn kind(&self) -> ParserKind {
        ParserKind::None
    }

    fn produces(&self) -> Produces {
        Produces::Tensors
    }

    fn remap(&mut self, _map: &[usize]) {}
}
