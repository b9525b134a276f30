// SPDX-License-Identifier: MIT OR Apache-2.0
//! Device buffers, a pool that recycles them (no allocation per frame), and pinned host buffers
//! for the one copy a CPU engine needs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::context::Context;
use super::error::{CudaError, Result, check};
use super::shared::SharedAllocation;
use super::stream::Stream;

/// Bytes copied between host and device memory through this layer, process-wide. Every copy
/// Ferrostream makes goes through [`DeviceBuffer`] or [`HostBuffer`], so this is a trace of them
/// all: a GPU pipeline that keeps its frames on the GPU moves only tensors, draw lists and
/// descriptors, never frame-sized amounts per frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transfers {
    pub to_device: u64,
    pub to_host: u64,
    /// Device-to-device copies between two CUDA contexts (a producer's and the engine's): what
    /// crossing contexts costs when the frames were not allocated in the engine's context.
    pub between_contexts: u64,
    /// Device-to-device copies of frames into memory other processes can map (`rsipcsink`, for
    /// frames that were not allocated shareable).
    pub for_sharing: u64,
}

impl Transfers {
    /// What was copied since `earlier`.
    pub fn since(self, earlier: Transfers) -> Transfers {
        Transfers {
            to_device: self.to_device - earlier.to_device,
            to_host: self.to_host - earlier.to_host,
            between_contexts: self.between_contexts - earlier.between_contexts,
            for_sharing: self.for_sharing - earlier.for_sharing,
        }
    }
}

static TO_DEVICE: AtomicU64 = AtomicU64::new(0);
static TO_HOST: AtomicU64 = AtomicU64::new(0);
static BETWEEN_CONTEXTS: AtomicU64 = AtomicU64::new(0);
static FOR_SHARING: AtomicU64 = AtomicU64::new(0);

/// Counts `bytes` copied to share frames with another process (see [`Transfers::for_sharing`]).
pub fn count_copy_for_sharing(bytes: u64) {
    FOR_SHARING.fetch_add(bytes, Ordering::Relaxed);
}

/// The bytes copied so far (see [`Transfers`]).
pub fn transfers() -> Transfers {
    Transfers {
        to_device: TO_DEVICE.load(Ordering::Relaxed),
        to_host: TO_HOST.load(Ordering::Relaxed),
        between_contexts: BETWEEN_CONTEXTS.load(Ordering::Relaxed),
        for_sharing: FOR_SHARING.load(Ordering::Relaxed),
    }
}

/// Copies `dst.len()` bytes from device address `src` into `dst` on `stream` and waits.
///
/// # Safety
/// `src..src + dst.len()` must be device memory of the stream's context, ready in stream order.
pub unsafe fn download(stream: &Stream, src: u64, dst: &mut [u8]) -> Result<()> {
    let _bound = stream.context().bind()?;
    // SAFETY: the caller vouches for the source; `dst` outlives the copy, which is waited for.
    unsafe {
        check(
            "cuMemcpyDtoHAsync",
            sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, dst.len(), stream.raw()),
        )?;
    }
    TO_HOST.fetch_add(dst.len() as u64, Ordering::Relaxed);
    stream.synchronize()
}

/// Checks that `len` bytes at `offset` lie within a buffer of `capacity` bytes.
fn fits(offset: usize, len: usize, capacity: usize, what: &str) -> Result<()> {
    if offset.checked_add(len).is_none_or(|end| end > capacity) {
        return Err(CudaError::Invalid(format!(
            "{what}: {len} bytes at {offset} do not fit {capacity} bytes"
        )));
    }
    Ok(())
}

/// Device memory owned by this process, freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer {
    ptr: u64,
    len: usize,
    ctx: Arc<Context>,
    backing: Backing,
}

/// Where a [`DeviceBuffer`]'s memory comes from, and so how it is released.
#[derive(Debug)]
enum Backing {
    /// `cuMemAlloc`: freed with `cuMemFree`.
    Allocated,
    /// A [`SharedAllocation`] (other processes can map it), which frees itself.
    Shared { _allocation: SharedAllocation },
    /// Memory another API allocated (an NvSciBuf buffer, a descriptor), imported into CUDA; the
    /// import releases it.
    External {
        _import: super::external::ExternalMemory,
    },
    /// Memory another owner keeps (an engine's own input tensor); never released here.
    Borrowed,
}

impl DeviceBuffer {
    /// Allocates `len` bytes (at least 1) of device memory in `ctx`.
    pub fn new(ctx: &Arc<Context>, len: usize) -> Result<Self> {
        let _bound = ctx.bind()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: a context is current; `ptr` is a valid out pointer.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut ptr, len.max(1))
        })?;
        Ok(Self {
            ptr,
            len,
            ctx: ctx.clone(),
            backing: Backing::Allocated,
        })
    }

    /// Allocates `len` bytes that other processes can map (see [`super::shared`]).
    pub fn new_shared(ctx: &Arc<Context>, len: usize) -> Result<Self> {
        let shared = SharedAllocation::new(ctx, len)?;
        Ok(Self {
            ptr: shared.ptr(),
            len,
            ctx: ctx.clone(),
            backing: Backing::Shared {
                _allocation: shared,
            },
        })
    }

    /// `len` bytes at `ptr` that another owner allocated and releases, used as a buffer (copies
    /// through it are counted in [`Transfers`] like any other).
    ///
    /// # Safety
    /// `ptr..ptr + len` must be device memory of `ctx` that outlives the returned buffer.
    pub unsafe fn borrowed(ctx: &Arc<Context>, ptr: u64, len: usize) -> Self {
        Self {
            ptr,
            len,
            ctx: ctx.clone(),
            backing: Backing::Borrowed,
        }
    }

    /// Imported memory as a buffer of its whole size, used like any other (copies are counted
    /// in [`Transfers`] alike); the import is released on drop.
    pub fn from_external(memory: super::external::ExternalMemory) -> Result<Self> {
        let len = usize::try_from(memory.size()).map_err(|_| {
            CudaError::Invalid(format!(
                "external memory of {} bytes does not fit this machine's addresses",
                memory.size()
            ))
        })?;
        Ok(Self {
            ptr: memory.ptr(),
            len,
            ctx: memory.context().clone(),
            backing: Backing::External { _import: memory },
        })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Copies `src` to the start of the buffer, queued on `stream`. `src` must stay untouched
    /// until the stream has passed the copy, hence the synchronisation unless it is pinned.
    pub fn upload(&self, stream: &Stream, src: &[u8]) -> Result<()> {
        fits(0, src.len(), self.len, "upload into a device buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: the destination holds `src.len()` bytes; the stream is synchronised before
        // returning, so `src` outlives the copy.
        unsafe {
            check(
                "cuMemcpyHtoDAsync",
                sys::cuMemcpyHtoDAsync_v2(self.ptr, src.as_ptr().cast(), src.len(), stream.raw()),
            )?;
        }
        TO_DEVICE.fetch_add(src.len() as u64, Ordering::Relaxed);
        stream.synchronize()
    }

    /// Copies the start of the buffer into `dst` and waits for it.
    pub fn download(&self, stream: &Stream, dst: &mut [u8]) -> Result<()> {
        fits(0, dst.len(), self.len, "download from a device buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: the source holds `dst.len()` bytes; synchronised before `dst` is released.
        unsafe {
            check(
                "cuMemcpyDtoHAsync",
                sys::cuMemcpyDtoHAsync_v2(
                    dst.as_mut_ptr().cast(),
                    self.ptr,
                    dst.len(),
                    stream.raw(),
                ),
            )?;
        }
        TO_HOST.fetch_add(dst.len() as u64, Ordering::Relaxed);
        stream.synchronize()
    }

    /// Copies `len` bytes of device memory at `src` (same context) into the start of the
    /// buffer, queued on `stream` (no wait).
    ///
    /// # Safety
    /// `src` must be device memory of the buffer's context holding `len` bytes, ready in
    /// `stream` order and left unchanged until the stream has run the copy.
    pub unsafe fn copy_from_device(&self, stream: &Stream, src: u64, len: usize) -> Result<()> {
        fits(0, len, self.len, "copy into a device buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: the caller vouches for the source; the destination holds `len` bytes.
        unsafe {
            check(
                "cuMemcpyDtoDAsync",
                sys::cuMemcpyDtoDAsync_v2(self.ptr, src, len, stream.raw()),
            )
        }
    }

    /// Copies `len` bytes at `src`, device memory of another context `src_ctx` on the same or
    /// another GPU, into the start of the buffer, queued on `stream` (of this buffer's context;
    /// no wait). The bytes never pass through the host; the copy is counted in
    /// [`Transfers::between_contexts`].
    ///
    /// # Safety
    /// `src` must be device memory of `src_ctx` holding `len` bytes, ready in `stream` order
    /// (the caller makes `stream` wait for the producer's event) and unchanged until the stream
    /// has run the copy.
    pub unsafe fn copy_from_context(
        &self,
        stream: &Stream,
        src: u64,
        src_ctx: &Context,
        len: usize,
    ) -> Result<()> {
        fits(0, len, self.len, "copy into a device buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: both contexts are live; the caller vouches for the source range, the
        // destination holds `len` bytes.
        unsafe {
            check(
                "cuMemcpyPeerAsync",
                sys::cuMemcpyPeerAsync(
                    self.ptr,
                    self.ctx.raw(),
                    src,
                    src_ctx.raw(),
                    len,
                    stream.raw(),
                ),
            )?;
        }
        BETWEEN_CONTEXTS.fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Fills the buffer with `byte`, queued on `stream`.
    pub fn fill(&self, stream: &Stream, byte: u8) -> Result<()> {
        self.fill_prefix(stream, self.len, byte)
    }

    /// Fills the first `len` bytes (at most the buffer's) with `byte`, queued on `stream`.
    pub fn fill_prefix(&self, stream: &Stream, len: usize, byte: u8) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: the range is within this buffer.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(self.ptr, byte, len.min(self.len), stream.raw())
        })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // A lost context took it along already; shared and imported memory free themselves.
        if matches!(self.backing, Backing::Allocated)
            && !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: allocated in `new`, freed once. Work still using it must have been
            // synchronised by its owner (pooled buffers return only after their stream synced).
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

/// Recycles device buffers so that steady-state streaming allocates nothing: a buffer given back
/// (by dropping its [`PooledBuffer`]) serves the next request of a size it can hold.
#[derive(Debug)]
pub struct BufferPool {
    ctx: Arc<Context>,
    free: Arc<Mutex<Vec<DeviceBuffer>>>,
    /// Buffers kept when given back; more are freed.
    max_free: usize,
    /// Allocate memory other processes can map.
    shared: bool,
}

impl BufferPool {
    pub fn new(ctx: &Arc<Context>, max_free: usize) -> Self {
        Self {
            ctx: ctx.clone(),
            free: Arc::default(),
            max_free,
            shared: false,
        }
    }

    /// A pool of memory other processes can map ([`DeviceBuffer::new_shared`]), so that frames
    /// drawn into it cross to another process (`rsipcsink`) without a copy; a pool of plain
    /// device memory where the GPU cannot share allocations.
    pub fn shareable(ctx: &Arc<Context>, max_free: usize) -> Self {
        Self {
            shared: super::shared::supported(ctx).unwrap_or(false),
            ..Self::new(ctx, max_free)
        }
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// A buffer of at least `len` bytes: a recycled one when one fits, else a new one.
    pub fn get(&self, len: usize) -> Result<PooledBuffer> {
        let recycled = {
            let mut free = self.free.lock().unwrap();
            free.iter()
                .position(|b| b.len >= len)
                .map(|i| free.swap_remove(i))
        };
        let buffer = match recycled {
            Some(b) => b,
            None if self.shared => DeviceBuffer::new_shared(&self.ctx, len)?,
            None => DeviceBuffer::new(&self.ctx, len)?,
        };
        Ok(PooledBuffer {
            buffer: Some(buffer),
            home: self.free.clone(),
            max_free: self.max_free,
        })
    }

    /// Buffers waiting to be reused.
    pub fn free_count(&self) -> usize {
        self.free.lock().unwrap().len()
    }
}

/// A device buffer from a [`BufferPool`], returned to it on drop.
#[derive(Debug)]
pub struct PooledBuffer {
    buffer: Option<DeviceBuffer>,
    home: Arc<Mutex<Vec<DeviceBuffer>>>,
    max_free: usize,
}

impl std::ops::Deref for PooledBuffer {
    type Target = DeviceBuffer;
    fn deref(&self) -> &DeviceBuffer {
        self.buffer.as_ref().expect("present until dropped")
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            let mut free = self.home.lock().unwrap();
            if free.len() < self.max_free {
                free.push(b);
            }
        }
    }
}

/// Page-locked host memory: the destination of the one tensor copy a host engine needs, fast
/// and asynchronous.
#[derive(Debug)]
pub struct HostBuffer {
    ptr: *mut u8,
    len: usize,
    ctx: Arc<Context>,
}

// SAFETY: the buffer is plain memory owned by this value; access goes through &/&mut self.
unsafe impl Send for HostBuffer {}
// SAFETY: shared access only reads.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    pub fn new(ctx: &Arc<Context>, len: usize) -> Result<Self> {
        let _bound = ctx.bind()?;
        // SAFETY: a context is current; the memory is freed in Drop.
        let ptr = unsafe { cudarc::driver::result::malloc_host(len.max(1), 0) }
            .map_err(|e| CudaError::driver("cuMemHostAlloc", e))?;
        // SAFETY: freshly allocated, `len` bytes; zeroed so that it is never read uninitialised.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, len.max(1)) };
        Ok(Self {
            ptr: ptr.cast(),
            len,
            ctx: ctx.clone(),
        })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues a copy of the first `len` bytes to device address `dst` on `stream` and returns
    /// without waiting: the caller must not write the buffer again before the stream has passed
    /// the copy (record an event after it and wait for that event first).
    ///
    /// # Safety
    /// `dst..dst + len` must be device memory of this context that stays valid until the copy
    /// has run.
    pub unsafe fn upload_async(&self, stream: &Stream, dst: u64, len: usize) -> Result<()> {
        fits(0, len, self.len, "upload from a host buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: pinned memory of `len` bytes; the caller guarantees the destination.
        unsafe {
            check(
                "cuMemcpyHtoDAsync",
                sys::cuMemcpyHtoDAsync_v2(dst, self.ptr.cast(), len, stream.raw()),
            )?;
        }
        TO_DEVICE.fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Queues a copy of `len` bytes from device address `src` into the start of this buffer on
    /// `stream` and returns without waiting: the bytes are there once the stream has passed the
    /// copy (record an event after it and wait for that event before reading them).
    ///
    /// # Safety
    /// `src..src + len` must be device memory of this context, and the buffer must be neither
    /// read nor dropped before the copy has run.
    pub unsafe fn download_async(&mut self, stream: &Stream, src: u64, len: usize) -> Result<()> {
        // SAFETY: as the caller guarantees.
        unsafe { self.download_async_at(stream, 0, src, len) }
    }

    /// As [`HostBuffer::download_async`], into the buffer at byte `offset`.
    ///
    /// # Safety
    /// As [`HostBuffer::download_async`].
    pub unsafe fn download_async_at(
        &mut self,
        stream: &Stream,
        offset: usize,
        src: u64,
        len: usize,
    ) -> Result<()> {
        fits(offset, len, self.len, "download into a host buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: the range fits; the caller guarantees the source and the buffer's lifetime.
        unsafe {
            check(
                "cuMemcpyDtoHAsync",
                sys::cuMemcpyDtoHAsync_v2(self.ptr.add(offset).cast(), src, len, stream.raw()),
            )?;
        }
        TO_HOST.fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Copies `len` bytes from device address `src` into the start of this buffer and waits.
    pub fn download_from(&mut self, stream: &Stream, src: u64, len: usize) -> Result<()> {
        fits(0, len, self.len, "download into a host buffer")?;
        let _bound = self.ctx.bind()?;
        // SAFETY: `len` bytes fit; the caller's `src` range is device memory of this context
        // (checked by the driver: an invalid address is an error, not undefined behaviour on
        // the host); synchronised before returning.
        unsafe {
            check(
                "cuMemcpyDtoHAsync",
                sys::cuMemcpyDtoHAsync_v2(self.ptr.cast(), src, len, stream.raw()),
            )?;
        }
        TO_HOST.fetch_add(len as u64, Ordering::Relaxed);
        stream.synchronize()
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // A lost context took it along already.
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: allocated in `new`, freed once.
            let _ = unsafe { cudarc::driver::result::free_host(self.ptr.cast()) };
        }
    }
}
