// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVMM memory (`video/x-raw(memory:NVMM)`): the NvBufSurface batches that DeepStream and
//! JetPack elements (`nvv4l2decoder`, `nvvideoconvert`, `nvarguscamerasrc`, `nvstreammux`) pass
//! around, read as [`DeviceImage`](crate::device::DeviceImage)s without copying a pixel.
//!
//! Mapping such a buffer's one memory gives `info.data = NvBufSurface*` and
//! `info.size = sizeof(NvBufSurface)`, which differs between JetPack 6 / DeepStream <= 7.1 (64
//! bytes) and DeepStream 8 / JetPack 7 (72 bytes): the layout ([`NvmmAbi`]) is picked by that
//! size, or named by a caller that knows it, never guessed.
//!
//! Layers: [`abi`] mirrors the C structs of both layouts; [`loader`] opens `libnvbufsurface.so`
//! and the CUDA EGL interop functions of libcuda at run time (so nothing here links them) and
//! wraps Jetson SURFACE_ARRAY surfaces in an RAII [`EglSurfaceMapping`]; [`surface_images`]
//! reads a buffer into an [`NvmmBatch`] of device images; [`producer`] builds NVMM memory the
//! way a dGPU DeepStream decoder does (for `rsnvmmtestsrc` and tests). Nothing here needs the
//! `cuda` feature.

pub mod abi;
pub mod loader;
pub mod producer;
mod reader;
#[cfg(test)]
mod tests;

pub use abi::NvmmAbi;
pub use loader::{CUeglFrame, EglSurfaceMapping};
pub use producer::{PitchLayout, PlaneLayout, surface_memory};
pub use reader::{
    NvmmBatch, NvmmSurface, ReadOptions, YuvColorimetry, surface_images, surface_images_with,
};

/// The caps feature of NVMM memory (tell caps apart with [`MemoryKind`](crate::batch::MemoryKind)).
pub use crate::batch::NVMM_FEATURE;
use crate::device::DeviceImageError;

/// Whether the GPU shares memory with the CPU (Jetson) or not: decides what memory type DEFAULT
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// A discrete GPU: DEFAULT is CUDA device memory.
    Discrete,
    /// An integrated GPU (Jetson): DEFAULT is SURFACE_ARRAY.
    Integrated,
}

/// Why an NVMM buffer cannot be read, each naming the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvmmError {
    #[error("an NVMM buffer holds exactly one memory (its NvBufSurface); this one holds {0}")]
    Memories(usize),
    #[error("the NVMM memory cannot be mapped for reading")]
    Map,
    #[error(
        "the mapped NVMM memory is {size} bytes, neither sizeof(NvBufSurface) of JetPack 6 / DeepStream <= 7.1 (64) nor of DeepStream 8 / JetPack 7 (72): it is not an NvBufSurface, or one of a layout this build does not know"
    )]
    MappedSize { size: usize },
    #[error("the mapped NVMM memory is {size} bytes, too small for the {abi} the caller named")]
    TooSmallForAbi { size: usize, abi: NvmmAbi },
    #[error("the NvBufSurface says numFilled {num_filled} > batchSize {batch_size}")]
    Filled { num_filled: u32, batch_size: u32 },
    #[error("the NvBufSurface has {num_filled} filled surface(s) but a null surfaceList")]
    NullSurfaceList { num_filled: u32 },
    #[error(
        "NVMM memory type {mem_type} is not GPU-addressable here (supported: CUDA_DEVICE, CUDA_UNIFIED, CUDA_PINNED, DEFAULT on a dGPU, SURFACE_ARRAY through EGL on Jetson); put nvvideoconvert with nvbuf-memory-type=3 (unified) or 2 (device) before this element"
    )]
    MemType { mem_type: String },
    #[error(
        "memory type DEFAULT means CUDA device memory on a dGPU and SURFACE_ARRAY on Jetson, and which one this is cannot be told: {reason}; name the platform (ReadOptions::platform)"
    )]
    DefaultMemType { reason: String },
    #[error(
        "surface {index} is block linear; only pitch-linear surfaces can be addressed by pointer and pitch (convert with nvvideoconvert / nvvidconv to pitch layout, e.g. bl-output=false)"
    )]
    BlockLinear { index: u32 },
    #[error("surface {index} has layout {layout}, neither PITCH (0) nor BLOCK_LINEAR (1)")]
    Layout { index: u32, layout: u32 },
    #[error(
        "surface {index} has colour format {format}; supported: NV12 (and NV12_ER, NV12_709, NV12_709_ER, NV12_2020), YUV420 (I420), RGBA, BGRA, RGBx, BGRx"
    )]
    ColorFormat { index: u32, format: String },
    #[error("surface {index} has a null dataPtr")]
    NullData { index: u32 },
    #[error(
        "surface {index} ({format}) has {found} plane(s) in planeParams, the format has {expected}"
    )]
    PlaneCount {
        index: u32,
        format: String,
        found: u32,
        expected: u32,
    },
    #[error(
        "plane {plane} of surface {index} does not fit its allocation: offset {offset} + pitch {pitch} x {rows} rows > dataSize {data_size}"
    )]
    PlaneOutOfBounds {
        index: u32,
        plane: usize,
        offset: u32,
        pitch: u32,
        rows: u32,
        data_size: u32,
    },
    #[error("surface {index}: {source}")]
    Image {
        index: u32,
        source: DeviceImageError,
    },
    #[error("{library} cannot be loaded ({reason}); {hint}")]
    Library {
        library: &'static str,
        reason: String,
        hint: &'static str,
    },
    #[error("{call} failed with {code}")]
    Call { call: &'static str, code: i32 },
    #[error("{call} failed: {name}")]
    Cuda { call: &'static str, name: String },
    #[error(
        "no CUDA context is current on this thread; bind one (cuda::Context::bind) before reading SURFACE_ARRAY surfaces"
    )]
    NoCudaContext,
    #[error(
        "surface {index} maps to a CUDA array (EGL frame type ARRAY: block linear), not pitch-linear memory; convert it to pitch layout first (nvvidconv bl-output=false)"
    )]
    EglArray { index: u32 },
    #[error("NvBufSurfaceMapEglImage left the eglImage of surface {index} null")]
    NullEglImage { index: u32 },
    #[error("surface {index}: the EGL frame ({what}) does not match the NvBufSurface")]
    EglMismatch { index: u32, what: String },
    #[error("cannot lay out the surface: {0}")]
    InvalidLayout(String),
}
