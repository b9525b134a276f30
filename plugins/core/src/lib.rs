// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream core: the analytics metadata every element shares, its JSON form, configuration
//! file parsing, model lookup, settings, and CUDA and NVMM access.

pub mod analytics;
pub mod batch;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod display;
pub mod edit;
pub mod element;
pub mod files;
pub mod framemap;
pub mod ini;
pub mod json;
pub mod mask;
pub mod meta;
pub mod nvmm;
pub mod paths;
pub mod settings;
pub mod surface;

pub use analytics::{
    AttributeValue, BBox, Batch, Classification, Crossing, Crowding, Frame, FrameAnalytics,
    LineCounts, LineCrossing, Object, ObjectAnalytics, Shape, ShapeKind,
};
pub use display::{DisplayElement, DisplayLine, DisplayRect, DisplayText};
pub use meta::BatchMeta;
