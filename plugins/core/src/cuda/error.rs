// SPDX-License-Identifier: MIT OR Apache-2.0
//! Errors of the CUDA layer, each naming the call or the missing piece.

use cudarc::driver::DriverError;

pub type Result<T> = std::result::Result<T, CudaError>;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    #[error(
        "no CUDA driver: libcuda.so.1 cannot be loaded (install the NVIDIA driver, or use system-memory caps)"
    )]
    NoDriver,
    #[error(
        "NVRTC cannot be loaded: libnvrtc.so from the CUDA toolkit (12 or 13) must be on the library path to compile the GPU kernels"
    )]
    NoNvrtc,
    #[error("GPU {gpu_id} does not exist: the driver reports {count} CUDA device(s)")]
    NoSuchDevice { gpu_id: u32, count: u32 },
    #[error("{call} failed: {name} ({description})")]
    Driver {
        call: &'static str,
        name: String,
        description: String,
    },
    #[error("compiling the CUDA kernels of {source_name} failed: {log}")]
    Compile { source_name: String, log: String },
    #[error("{0}")]
    Invalid(String),
}

impl CudaError {
    /// A failed driver call, with the driver's name and description of the error.
    pub fn driver(call: &'static str, e: DriverError) -> Self {
        let name = e
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("CUresult {}", e.0 as i32));
        let description = e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::Driver {
            call,
            name,
            description,
        }
    }
}

/// Turns a raw `CUresult` into a `Result` naming the call.
pub(crate) fn check(call: &'static str, r: cudarc::driver::sys::CUresult) -> Result<()> {
    r.result().map_err(|e| CudaError::driver(call, e))
}
