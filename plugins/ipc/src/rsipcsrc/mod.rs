// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsipcsrc`: receives the frames and metadata an `rsipcsink` in another process serves (see
//! the crate documentation). A live source: it outputs what the producer sends from the moment
//! it attached, restamped to this pipeline's running time (the first buffer at its arrival, the
//! others as far apart as at the producer; the frames' metadata keeps the producer's
//! timestamps). Device frames come out as NVMM memory in the producer's allocation; the producer
//! gets each buffer back when the last reference to it here is dropped. It connects only to a
//! producer running as the same user.
//!
//! The frames are shared, not copied: an element that draws in place on the GPU (`rsosd` on NVMM
//! frames) draws on the producer's frame, which its other consumers see too.
//!
//! Properties: `socket-path`; `nvmm-abi` (`ds8` or `ds7`: the NvBufSurface layout of device
//! frames, default `ds8`).

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct IpcSrc(ObjectSubclass<imp::IpcSrc>)
        @extends gst_base::PushSrc, gst_base::BaseSrc, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsipcsrc",
        gst::Rank::NONE,
        IpcSrc::static_type(),
    )
}

/// Caps of every kind of frame the elements carry: plain frames and batches, in system, CUDA or
/// NVMM memory.
pub fn all_caps() -> gst::Caps {
    use ferrostream_core::batch::{BATCH_FEATURE, CUDA_MEMORY_FEATURE, NVMM_FEATURE};
    let mut caps = gst::Caps::new_empty();
    for features in [
        &[][..],
        &[CUDA_MEMORY_FEATURE],
        &[NVMM_FEATURE],
        &[BATCH_FEATURE],
        &[BATCH_FEATURE, CUDA_MEMORY_FEATURE],
        &[BATCH_FEATURE, NVMM_FEATURE],
    ] {
        let s = gst::Caps::builder("video/x-raw");
        let c = if features.is_empty() {
            s.build()
        } else {
            s.features(features.iter().copied()).build()
        };
        caps.merge(c);
    }
    caps
}
