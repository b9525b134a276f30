// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstrtinfer` and its parts: configuration, pre-processing, engines, output parsers.

pub mod cluster;
pub mod config;
pub mod custom;
pub mod engine;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod inference;
pub mod labels;
pub mod layout;
pub mod masks;
pub mod parse;
pub mod preprocess;
pub mod rstrtinfer;
pub mod secondary;
pub mod settings;
