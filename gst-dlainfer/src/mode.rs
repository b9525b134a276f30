// SPDX-License-Identifier: MIT OR Apache-2.0
//! cuDLA's modes as rsdlainfer offers them (property `dla-mode`).

use gst::glib;

/// How rsdlainfer runs a DLA loadable through cuDLA (property `dla-mode`).
#[derive(Debug, Eq, PartialEq, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstRsDlaMode")]
pub enum DlaMode {
    /// Standalone where it is available, else hybrid, with the reason logged.
    #[default]
    #[enum_value(
        name = "Standalone mode where NvSci and cuDLA offer it, else hybrid (the reason is logged)",
        nick = "auto"
    )]
    Auto = 0,
    #[enum_value(
        name = "Hybrid: each task on the element's CUDA stream, CUDA memory registered with the DLA",
        nick = "hybrid"
    )]
    Hybrid = 1,
    #[enum_value(
        name = "Standalone: NvSciBuf tensors shared by the GPU and the DLA, NvSciSync fences \
                between them; an error where unavailable",
        nick = "standalone"
    )]
    Standalone = 2,
}
