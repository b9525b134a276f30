// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream core: the analytics metadata every element shares, its JSON form, configuration
//! file parsing, model lookup, settings, and CUDA and NVMM access.
//!
//! Without the `gst` feature only the parts that need no GStreamer are built (boxes, objects,
//! masks, display elements, configuration files, settings tables, model lookup): what the
//! inference crate uses in programs that link no GStreamer.

pub mod analytics;
#[cfg(feature = "gst")]
pub mod batch;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "gst")]
pub mod device;
pub mod display;
#[cfg(feature = "gst")]
pub mod edit;
#[cfg(feature = "gst")]
pub mod element;
pub mod files;
#[cfg(feature = "gst")]
pub mod framemap;
pub mod http;
pub mod ini;
#[cfg(feature = "gst")]
pub mod json;
pub mod keypoints;
#[cfg(feature = "gst")]
pub mod latency;
pub mod mask;
#[cfg(feature = "gst")]
pub mod meta;
pub mod metrics;
pub mod nullable;
#[cfg(feature = "gst")]
pub mod nvmm;
#[cfg(feature = "nvsci")]
pub mod nvsci;
pub mod oriented;
pub mod paths;
pub mod settings;
#[cfg(feature = "gst")]
pub mod surface;
pub mod yaml;

pub use analytics::{
    AttributeValue, BBox, Classification, ComponentLatency, Crossing, Crowding, FrameAnalytics,
    FrameLatency, LineCounts, LineCrossing, Object, ObjectAnalytics, Shape, ShapeKind,
};
#[cfg(feature = "gst")]
pub use analytics::{Batch, Frame};
pub use display::{DisplayElement, DisplayLine, DisplayRect, DisplayText};
#[cfg(feature = "gst")]
pub use meta::BatchMeta;
