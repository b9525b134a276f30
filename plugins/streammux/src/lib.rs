// SPDX-License-Identifier: MIT OR Apache-2.0
//! Batching several sources: `rsstreammux` (many streams into batches), `rsstreamdemux` (batches
//! back into one stream per source) and `rstiler` (a batch into one grid frame).
//!
//! See [`ferrostream_core::batch`] for what a batch is.

mod convert;
pub mod streamdemux;
pub mod streammux;
pub mod tiler;

/// Registers the three elements.
pub fn register(plugin: &gst::Plugin) -> Result<(), gst::glib::BoolError> {
    streammux::register(plugin)?;
    streamdemux::register(plugin)?;
    tiler::register(plugin)
}
