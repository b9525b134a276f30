// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsnvmmtestsrc`: a test source of NVMM buffers, laid out exactly as a dGPU DeepStream decoder
//! lays them out, so that NVMM consumers can be tested without DeepStream.
//!
//! Each buffer holds one GstMemory whose mapped bytes are an `NvBufSurface` (batch size 1, one
//! filled surface, `CUDA_DEVICE` memory, contiguous) in the layout the `abi` property names, its
//! `NvBufSurfaceParams` right behind it (pitch layout, NV12 or RGBA, plane pitches rounded up to
//! 512 bytes, `psize = pitch * rows`), and `dataPtr` pointing at pooled device memory that the
//! GstMemory owns until the last reference goes. The pixels (a smooth gradient with a bright
//! rectangle that moves with the frame number and `pattern-seed`) are drawn by a CUDA kernel per
//! frame; no pixel passes through the host. Timestamps follow the negotiated framerate; the caps
//! fixate to 1920x1080 NV12 at 30/1 unless downstream asks otherwise.
//!
//! Needs the NVIDIA driver (libcuda) and NVRTC (libnvrtc from the CUDA toolkit) at run time:
//! `start()` fails with an error naming whichever is missing.
//!
//! ```text
//! gst-launch-1.0 rsnvmmtestsrc num-buffers=30 \
//!     ! 'video/x-raw(memory:NVMM),format=NV12,width=1920,height=1080' ! fakesink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

/// The NvBufSurface layout to produce (property `abi`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsNvmmAbi")]
pub enum NvmmTestSrcAbi {
    #[default]
    #[enum_value(
        name = "JetPack 6 / DeepStream 6.2-7.1: 64-byte NvBufSurface",
        nick = "ds7"
    )]
    Ds7 = 0,
    #[enum_value(name = "DeepStream 8 / JetPack 7: 72-byte NvBufSurface", nick = "ds8")]
    Ds8 = 1,
}

impl From<NvmmTestSrcAbi> for ferrostream_core::nvmm::NvmmAbi {
    fn from(abi: NvmmTestSrcAbi) -> Self {
        match abi {
            NvmmTestSrcAbi::Ds7 => Self::Ds7,
            NvmmTestSrcAbi::Ds8 => Self::Ds8,
        }
    }
}

glib::wrapper! {
    pub struct NvmmTestSrc(ObjectSubclass<imp::NvmmTestSrc>)
        @extends gst_base::PushSrc, gst_base::BaseSrc, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    NvmmTestSrcAbi::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "rsnvmmtestsrc",
        gst::Rank::NONE,
        NvmmTestSrc::static_type(),
    )
}
