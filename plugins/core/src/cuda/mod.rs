// SPDX-License-Identifier: MIT OR Apache-2.0
//! The CUDA runtime layer every GPU path uses: contexts (a device's primary context, or one
//! borrowed from the element that produced the frames), streams with a priority, device buffers
//! from a pool, kernels compiled once per process with NVRTC, and GStreamer CUDA memory.
//!
//! Layers, as everywhere in Ferrostream: cudarc's raw driver bindings (`sys`, loaded at run time,
//! so nothing here links libcuda) and its thin `result` functions, then the safe types of this
//! module. Elements use only the safe types. Before the first call into the driver,
//! [`driver_present`] checks that libcuda can be loaded at all, because cudarc panics when it
//! cannot.

mod context;
mod error;
pub mod external;
pub mod frames;
pub mod gst_cuda;
mod kernel;
mod memory;
pub mod shared;
mod stream;

pub use context::{Bound, Context};
pub use error::{CudaError, Result};
pub use frames::{DeviceFrame, DeviceFrames};
pub use kernel::{Function, KernelParams, KernelSource, Module, compile_ptx};
pub use memory::{
    BufferPool, DeviceBuffer, HostBuffer, PooledBuffer, Transfers, count_copy_for_sharing,
    download, transfers,
};
pub use stream::{Event, Stream};

use cudarc::driver::sys;

/// Whether the CUDA driver library (libcuda) can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library by its known names; no symbol is called.
    unsafe { sys::is_culib_present() }
}

/// Whether NVRTC (libnvrtc, from the CUDA toolkit) can be loaded on this machine.
pub fn nvrtc_present() -> bool {
    // SAFETY: as above, for NVRTC.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Initialises the driver once, after checking that it exists.
fn init() -> Result<()> {
    use std::sync::OnceLock;
    static INIT: OnceLock<std::result::Result<(), CudaError>> = OnceLock::new();
    INIT.get_or_init(|| {
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        cudarc::driver::result::init().map_err(|e| CudaError::driver("cuInit", e))
    })
    .clone()
}

/// Number of CUDA devices, or the reason there are none.
pub fn device_count() -> Result<u32> {
    init()?;
    let n = cudarc::driver::result::device::get_count()
        .map_err(|e| CudaError::driver("cuDeviceGetCount", e))?;
    Ok(n.max(0) as u32)
}
