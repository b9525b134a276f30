// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstrtinfer`, the inference element: the `BaseTransform`, the flight queue, the output
//! thread, secondary-mode object selection and the inference-server policies. What it runs is
//! [`ferrostream_inference`], whose modules are re-exported here under their usual paths.

#[cfg(feature = "cuda")]
pub use ferrostream_inference::gpu;
pub use ferrostream_inference::{
    cache, cluster, config, custom, engine, inference, labels, layout, masks, onnx, parse,
    preprocess, settings,
};

pub mod rstrtinfer;
pub mod secondary;
