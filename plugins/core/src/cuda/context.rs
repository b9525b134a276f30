// SPDX-License-Identifier: MIT OR Apache-2.0
//! CUDA contexts: a device's primary context (what the CUDA runtime, DeepStream and ONNX Runtime
//! use), or a context borrowed from the GStreamer element that produced the frames, since device
//! memory is only addressable from the context that allocated it.

use std::any::Any;
use std::ffi::c_int;
use std::sync::Arc;

use cudarc::driver::sys;

use super::error::{CudaError, Result, check};

/// A CUDA context and the device it belongs to.
pub struct Context {
    raw: sys::CUcontext,
    device: sys::CUdevice,
    ordinal: u32,
    owner: Owner,
    /// The context's unique id (`cuCtxGetId`) when it was wrapped: a context destroyed and made
    /// again (a primary context reset) has another.
    id: Option<u64>,
}

enum Owner {
    /// Retained with `cuDevicePrimaryCtxRetain`; released on drop.
    Primary,
    /// Owned elsewhere; the box keeps its owner (e.g. a `GstCudaContext`) alive.
    Borrowed(#[allow(dead_code)] Box<dyn Any + Send + Sync>),
}

// SAFETY: a CUcontext handle may be used from any thread (the driver API is thread safe; each
// use binds it to the calling thread first through `bind`), and the owner box is Send + Sync.
unsafe impl Send for Context {}
// SAFETY: see above; the struct holds no interior mutability.
unsafe impl Sync for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.raw)
            .field("gpu_id", &self.ordinal)
            .field("primary", &matches!(self.owner, Owner::Primary))
            .finish()
    }
}

impl Context {
    /// The primary context of GPU `gpu_id`, kept for the rest of the process: for libraries
    /// that work through the CUDA runtime (ONNX Runtime's CUDA provider, TensorRT).
    ///
    /// The runtime takes the primary context as it finds it and does not survive its
    /// destruction: were the engines' references the only ones, dropping the last engine (a
    /// `cuda-tuning` trial, a stopped pipeline) would destroy the context, and the next
    /// session's runs, or a session's own teardown, would fail ("context is destroyed",
    /// `cudaFreeHost` refused, ONNX Runtime aborting the process).
    pub fn primary_for_runtime(gpu_id: u32) -> Result<Arc<Self>> {
        static KEPT: std::sync::Mutex<Vec<Arc<Context>>> = std::sync::Mutex::new(Vec::new());
        let context = Self::primary(gpu_id)?;
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        // A context lost to a reset is kept no longer (its handle is dead): the new one is.
        kept.retain(|c| !c.lost());
        if !kept.iter().any(|c| c.ordinal == gpu_id) {
            kept.push(context.clone());
        }
        Ok(context)
    }

    /// The primary context of GPU `gpu_id`.
    pub fn primary(gpu_id: u32) -> Result<Arc<Self>> {
        let count = super::device_count()?;
        if gpu_id >= count {
            return Err(CudaError::NoSuchDevice { gpu_id, count });
        }
        let device = cudarc::driver::result::device::get(gpu_id as c_int)
            .map_err(|e| CudaError::driver("cuDeviceGet", e))?;
        // SAFETY: `device` is a valid device handle from cuDeviceGet; the context is released in Drop.
        let raw = unsafe { cudarc::driver::result::primary_ctx::retain(device) }
            .map_err(|e| CudaError::driver("cuDevicePrimaryCtxRetain", e))?;
        Ok(Arc::new(Self {
            raw,
            device,
            ordinal: gpu_id,
            owner: Owner::Primary,
            id: context_id(raw),
        }))
    }

    /// Wraps a context owned by someone else; `keep_alive` is held until the wrapper is dropped.
    ///
    /// # Safety
    /// `raw` must be a valid CUDA context that stays valid while `keep_alive` lives.
    pub unsafe fn borrowed(
        raw: sys::CUcontext,
        keep_alive: Box<dyn Any + Send + Sync>,
    ) -> Result<Arc<Self>> {
        super::init()?;
        let mut ctx = Self {
            raw,
            device: 0,
            ordinal: 0,
            owner: Owner::Borrowed(keep_alive),
            id: context_id(raw),
        };
        let mut device: sys::CUdevice = 0;
        {
            let _bound = ctx.bind()?;
            // SAFETY: a context is current (bound above); `device` is a valid out pointer.
            check("cuCtxGetDevice", unsafe {
                sys::cuCtxGetDevice(&mut device)
            })?;
        }
        ctx.device = device;
        ctx.ordinal = (0..super::device_count()?)
            .find(|&i| cudarc::driver::result::device::get(i as c_int).ok() == Some(device))
            .unwrap_or(0);
        Ok(Arc::new(ctx))
    }

    /// Whether the context is gone from under its users: reset (a primary context) or
    /// destroyed and made again. Everything made in it before then went with it, and must not be
    /// destroyed again (the driver may crash on such handles).
    pub fn lost(&self) -> bool {
        if let Owner::Primary = self.owner {
            let (mut flags, mut active) = (0u32, 0i32);
            // SAFETY: a valid device handle and out pointers.
            let state =
                unsafe { sys::cuDevicePrimaryCtxGetState(self.device, &mut flags, &mut active) };
            if state != sys::CUresult::CUDA_SUCCESS || active == 0 {
                return true;
            }
        }
        self.id.is_some() && context_id(self.raw) != self.id
    }

    /// Makes the context current on this thread until the guard is dropped.
    pub fn bind(&self) -> Result<Bound<'_>> {
        // SAFETY: `raw` is a valid context for the lifetime of `self`; the guard pops it again.
        check("cuCtxPushCurrent", unsafe {
            sys::cuCtxPushCurrent_v2(self.raw)
        })?;
        Ok(Bound {
            _ctx: self,
            _not_send: std::marker::PhantomData,
        })
    }

    /// The raw handle, for interop with other libraries.
    pub fn raw(&self) -> sys::CUcontext {
        self.raw
    }

    /// The raw device handle, for interop with other libraries.
    pub fn device(&self) -> sys::CUdevice {
        self.device
    }

    /// Whether this is the primary context of its device (what ONNX Runtime's CUDA provider and
    /// every CUDA runtime user work in).
    pub fn is_primary(&self) -> bool {
        matches!(self.owner, Owner::Primary)
    }

    /// The device ordinal (`gpu-id`).
    pub fn gpu_id(&self) -> u32 {
        self.ordinal
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn device_name(&self) -> Result<String> {
        cudarc::driver::result::device::get_name(self.device)
            .map_err(|e| CudaError::driver("cuDeviceGetName", e))
    }

    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        use sys::CUdevice_attribute as A;
        let get = |a| {
            // SAFETY: `device` is a valid device handle.
            unsafe { cudarc::driver::result::device::get_attribute(self.device, a) }
                .map_err(|e| CudaError::driver("cuDeviceGetAttribute", e))
        };
        Ok((
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
        ))
    }

    /// Whether the device is an integrated GPU sharing memory with the CPU (Jetson).
    pub fn is_integrated(&self) -> Result<bool> {
        // SAFETY: `device` is a valid device handle.
        let v = unsafe {
            cudarc::driver::result::device::get_attribute(
                self.device,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED,
            )
        }
        .map_err(|e| CudaError::driver("cuDeviceGetAttribute", e))?;
        Ok(v != 0)
    }

    /// Waits until all work in the context has finished.
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.bind()?;
        cudarc::driver::result::ctx::synchronize()
            .map_err(|e| CudaError::driver("cuCtxSynchronize", e))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Owner::Primary = self.owner {
            // SAFETY: retained in `primary`, released exactly once here. An error cannot be
            // reported from Drop; the driver keeps the context until the process ends then.
            let _ = unsafe { cudarc::driver::result::primary_ctx::release(self.device) };
        }
    }
}

/// A context made current on this thread; popped when dropped.
pub struct Bound<'a> {
    _ctx: &'a Context,
    /// The binding belongs to the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for Bound<'_> {
    fn drop(&mut self) {
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context pushed by `Context::bind` on this thread.
        let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    }
}

/// The unique id of a context instance (`cuCtxGetId`, CUDA 12+), if the driver tells it.
fn context_id(raw: sys::CUcontext) -> Option<u64> {
    let mut id: std::ffi::c_ulonglong = 0;
    // SAFETY: `raw` is a context handle; `id` is a valid out pointer.
    let result = unsafe { sys::cuCtxGetId(raw, &mut id) };
    (result == sys::CUresult::CUDA_SUCCESS).then_some(id)
}
