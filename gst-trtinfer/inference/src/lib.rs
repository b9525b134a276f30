// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream's inference, without GStreamer: what `rstrtinfer` runs, usable from any Rust
//! program (and the Python bindings).
//!
//! - [`config`] and [`settings`]: nvinfer configurations, from files (`InferConfig::from_file`)
//!   or set by name (`settings::SETTINGS.set_text`); [`nvinferserver`]: nvinferserver (Triton)
//!   configuration files read onto the same settings, for the remote backend.
//! - [`preprocess`]: a region of an image to the network's input tensor, with nvinfer's
//!   semantics; [`gpu`] does the same on the GPU (feature `cuda`).
//! - [`engine`]: ONNX Runtime, native TensorRT (feature `tensorrt`), KServe v2 / Triton servers
//!   (feature `remote`).
//! - [`parse`], [`cluster`], [`masks`]: outputs to objects, one module per family of layouts.
//! - [`onnx`]: ONNX models read and rewritten (FP16 conversion); [`cache`]: files derived
//!   from models and kept between runs.
//! - [`inference::Inference`]: all of it for one model, batch by batch.
//!
//! `examples/detect.rs` runs a model on an image file and prints the objects:
//!
//! ```text
//! cargo run -p ferrostream-inference --example detect -- pipelines/coco_ssd.txt image.jpg
//! ```

pub mod cache;
pub mod cluster;
pub mod config;
mod config_file;
pub mod custom;
pub mod engine;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod inference;
pub mod labels;
pub mod layout;
pub mod masks;
pub mod nvinferserver;
pub mod onnx;
pub mod parse;
pub mod preprocess;
pub mod settings;
