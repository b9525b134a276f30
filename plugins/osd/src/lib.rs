// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream on-screen display: `rsosd` draws boxes, labels, a clock, per-source text and
//! privacy blur on frames and on every frame of a batch.
//!
//! The work is split so that each part can be reused: [`style`] says what to draw, [`plan`] turns
//! a frame's objects into format-independent geometry (a [`plan::DrawList`] of clipped fills,
//! glyphs and blurs), [`font`] rasterises text into a glyph atlas, and [`paint`] applies a draw
//! list to pixels in system memory; [`gpu`] (feature `cuda`, on by default) applies the same draw
//! list to frames in device memory, byte for byte as [`paint`] does, reading text from the
//! planner's glyph atlas.

use gst::glib;

pub mod color;
pub mod config;
pub mod font;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod osd;
pub mod paint;
pub mod plan;
pub mod style;

/// Registers `rsosd` with `plugin`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    osd::register(plugin)
}
