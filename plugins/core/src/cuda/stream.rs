// SPDX-License-Identifier: MIT OR Apache-2.0
//! CUDA streams (with a priority) and events.

use std::sync::Arc;

use cudarc::driver::sys;

use super::context::Context;
use super::error::{CudaError, Result, check};

/// A non-blocking CUDA stream of a context.
#[derive(Debug)]
pub struct Stream {
    raw: sys::CUstream,
    priority: i32,
    ctx: Arc<Context>,
}

// SAFETY: stream handles may be used from any thread; work is ordered by the driver.
unsafe impl Send for Stream {}
// SAFETY: as above; the struct has no interior mutability.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream. `priority` follows CUDA: 0 is the default, lower (negative) values are more
    /// urgent; values outside the device's range are clamped to it.
    pub fn new(ctx: &Arc<Context>, priority: i32) -> Result<Self> {
        let _bound = ctx.bind()?;
        let (least, greatest) = cudarc::driver::result::stream::get_priority_range()
            .map_err(|e| CudaError::driver("cuCtxGetStreamPriorityRange", e))?;
        let priority = priority.clamp(greatest.min(least), least.max(greatest));
        let raw = cudarc::driver::result::stream::create_with_priority(
            cudarc::driver::result::stream::StreamKind::NonBlocking,
            priority,
        )
        .map_err(|e| CudaError::driver("cuStreamCreateWithPriority", e))?;
        Ok(Self {
            raw,
            priority,
            ctx: ctx.clone(),
        })
    }

    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The priority the stream got (after clamping to the device's range).
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// Waits for all work queued on the stream; asynchronous kernel errors surface here.
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: `raw` is a live stream of the bound context.
        unsafe { cudarc::driver::result::stream::synchronize(self.raw) }
            .map_err(|e| CudaError::driver("cuStreamSynchronize", e))
    }

    /// Makes later work on this stream wait until `event` has completed (the event may belong
    /// to another stream or context); the host does not wait.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: both handles are live.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(self.raw, event.raw, 0)
        })
    }

    /// Copies `len` bytes between two device addresses on the stream.
    ///
    /// # Safety
    /// Both ranges must be valid device memory of this context for the copy's duration.
    pub unsafe fn copy_dtod(&self, dst: u64, src: u64, len: usize) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: the caller guarantees both ranges.
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst, src, len, self.raw)
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // A lost context took it along already.
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: created in `new`, destroyed once; pending work still completes.
            let _ = unsafe { cudarc::driver::result::stream::destroy(self.raw) };
        }
    }
}

/// A CUDA event: marks a point of a stream, for ordering other streams after it, waiting for
/// it on the host, or timing.
#[derive(Debug)]
pub struct Event {
    raw: sys::CUevent,
    ctx: Arc<Context>,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    pub fn new(ctx: &Arc<Context>) -> Result<Self> {
        let _bound = ctx.bind()?;
        let raw = cudarc::driver::result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| CudaError::driver("cuEventCreate", e))?;
        Ok(Self {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// An event for ordering and waiting only (no timing, which makes recording cheaper); a host
    /// waiting for it sleeps rather than spins.
    pub fn new_sync(ctx: &Arc<Context>) -> Result<Self> {
        let _bound = ctx.bind()?;
        let flags = sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32
            | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        let mut raw: sys::CUevent = std::ptr::null_mut();
        // SAFETY: a context is current; `raw` is a valid out pointer.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, flags)
        })?;
        Ok(Self {
            raw,
            ctx: ctx.clone(),
        })
    }

    /// Whether the work recorded before the event has completed (without waiting).
    pub fn is_complete(&self) -> Result<bool> {
        let _bound = self.ctx.bind()?;
        // SAFETY: the event is live.
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => check("cuEventQuery", other).map(|_| false),
        }
    }

    /// Records the event on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: both handles are live and belong to the bound context.
        unsafe { cudarc::driver::result::event::record(self.raw, stream.raw()) }
            .map_err(|e| CudaError::driver("cuEventRecord", e))
    }

    /// Waits until the work recorded before the event has completed.
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: the event is live.
        unsafe { cudarc::driver::result::event::synchronize(self.raw) }
            .map_err(|e| CudaError::driver("cuEventSynchronize", e))
    }

    /// Milliseconds from `self` to `end`, once both have completed.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        let _bound = self.ctx.bind()?;
        // SAFETY: both events are live; synchronizing first makes the elapsed time available.
        unsafe {
            cudarc::driver::result::event::synchronize(end.raw)
                .map_err(|e| CudaError::driver("cuEventSynchronize", e))?;
            cudarc::driver::result::event::elapsed(self.raw, end.raw)
                .map_err(|e| CudaError::driver("cuEventElapsedTime", e))
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // A lost context took it along already.
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: created in `new`, destroyed once.
            let _ = unsafe { cudarc::driver::result::event::destroy(self.raw) };
        }
    }
}
