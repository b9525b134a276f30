// SPDX-License-Identifier: MIT OR Apache-2.0
//! Memory and semaphores that another API allocated, imported into CUDA: `cuImportExternalMemory`
//! (mapped as a device buffer with `cuExternalMemoryGetMappedBuffer`) and
//! `cuImportExternalSemaphore`, whose signal and wait are queued on a stream
//! (`cuSignalExternalSemaphoresAsync`, `cuWaitExternalSemaphoresAsync`) so the GPU orders itself
//! against the other engine without a CPU thread waiting.
//!
//! Sources: an opaque POSIX file descriptor (any Linux GPU: another process's allocation, a
//! Vulkan export), and with the `nvsci` feature NvSciBuf objects and NvSciSync objects (Jetson:
//! buffers and fences shared with the DLA, the ISP, encoders). [`nvscisync_attributes`] fills
//! an NvSciSync attribute list with what this GPU needs to signal or wait.

use std::os::fd::{IntoRawFd, OwnedFd};
use std::sync::Arc;

use cudarc::driver::sys;

use super::context::Context;
use super::error::{CudaError, Result, check};

/// A memory import descriptor. Built field by field: the handle type is a Rust enum with no
/// zero value, so the descriptor cannot start zeroed.
fn memory_desc(
    kind: sys::CUexternalMemoryHandleType,
    handle: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1,
    size: u64,
) -> sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
    sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
        type_: kind,
        handle,
        size,
        flags: 0,
        reserved: [0; 16],
    }
}

/// A semaphore import descriptor for an NvSciSync object (built field by field, as
/// [`memory_desc`]).
#[cfg(feature = "nvsci")]
fn nvscisync_desc(obj: *mut std::ffi::c_void) -> sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
    sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
        type_: sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC,
        handle: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st__bindgen_ty_1 {
            nvSciSyncObj: obj.cast_const(),
        },
        flags: 0,
        reserved: [0; 16],
    }
}

/// What an import keeps alive: the object it was imported from (an NvSciBuf buffer, an
/// NvSciSync object), released after the import.
type Source = Option<Arc<dyn std::any::Any + Send + Sync>>;

/// External memory mapped as one device buffer; unmapped and released on drop, then the object it
/// came from.
pub struct ExternalMemory {
    raw: sys::CUexternalMemory,
    ptr: u64,
    size: u64,
    ctx: Arc<Context>,
    _source: Source,
}

impl std::fmt::Debug for ExternalMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("ptr", &self.ptr)
            .field("size", &self.size)
            .finish()
    }
}

// SAFETY: the handle and the device address may be used from any thread; the driver orders work.
unsafe impl Send for ExternalMemory {}
// SAFETY: `&ExternalMemory` gives only addresses.
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// Imports `size` bytes behind an opaque descriptor. CUDA owns the descriptor once the
    /// import succeeds; on failure it is closed here.
    pub fn from_fd(ctx: &Arc<Context>, fd: OwnedFd, size: u64) -> Result<Self> {
        let desc = memory_desc(
            sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
            sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 {
                fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
            },
            size,
        );
        // A failed import leaves the descriptor ours: `fd` closes it.
        let raw = import(ctx, &desc, size)?;
        // CUDA owns the descriptor from here (cuda.h), whatever happens to the mapping.
        let _ = fd.into_raw_fd();
        Self::map(ctx, raw, size, None)
    }

    /// Imports an NvSciBuf object (allocated with this GPU among its accessors), which the
    /// import keeps alive.
    #[cfg(feature = "nvsci")]
    pub fn from_nvscibuf(ctx: &Arc<Context>, obj: &Arc<crate::nvsci::BufObj>) -> Result<Self> {
        let desc = memory_desc(
            sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF,
            sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 {
                nvSciBufObject: obj.as_raw().cast_const(),
            },
            obj.size(),
        );
        let raw = import(ctx, &desc, obj.size())?;
        Self::map(ctx, raw, obj.size(), Some(obj.clone()))
    }

    /// Maps the whole of an import; on failure the import is destroyed.
    fn map(
        ctx: &Arc<Context>,
        raw: sys::CUexternalMemory,
        size: u64,
        source: Source,
    ) -> Result<Self> {
        let _bound = ctx.bind()?;
        let buffer = sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
            offset: 0,
            size,
            flags: 0,
            reserved: [0; 16],
        };
        let mut ptr = 0;
        // SAFETY: the whole imported range, from offset 0; a valid out pointer.
        let mapped = check("cuExternalMemoryGetMappedBuffer", unsafe {
            sys::cuExternalMemoryGetMappedBuffer(&mut ptr, raw, &buffer)
        });
        if let Err(e) = mapped {
            // SAFETY: imported above and mapped nowhere.
            unsafe { sys::cuDestroyExternalMemory(raw) };
            return Err(e);
        }
        Ok(Self {
            raw,
            ptr,
            size,
            ctx: ctx.clone(),
            _source: source,
        })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

/// `cuImportExternalMemory` of `size` bytes.
fn import(
    ctx: &Arc<Context>,
    desc: &sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
    size: u64,
) -> Result<sys::CUexternalMemory> {
    if size == 0 {
        return Err(CudaError::Invalid(
            "external memory of 0 bytes cannot be imported".into(),
        ));
    }
    let _bound = ctx.bind()?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: a filled descriptor; a valid out pointer.
    check("cuImportExternalMemory", unsafe {
        sys::cuImportExternalMemory(&mut raw, desc)
    })?;
    Ok(raw)
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        // A lost context took the mapping along already.
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: the mapping is freed with cuMemFree (CUDA's rule for mapped external
            // buffers) before the memory object is destroyed; owners finish their stream work
            // on it first.
            unsafe {
                sys::cuMemFree_v2(self.ptr);
                sys::cuDestroyExternalMemory(self.raw);
            }
        }
    }
}

/// An external semaphore (an NvSciSync object on Jetson) that streams signal and wait on; the
/// object it was imported from lives as long as it does.
pub struct ExternalSemaphore {
    raw: sys::CUexternalSemaphore,
    ctx: Arc<Context>,
    _source: Source,
}

impl std::fmt::Debug for ExternalSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalSemaphore").finish_non_exhaustive()
    }
}

// SAFETY: as `ExternalMemory`.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: signal and wait only queue work; the fences they take are the caller's.
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    /// Imports an NvSciSync object whose attribute lists included this GPU's
    /// ([`nvscisync_attributes`]).
    #[cfg(feature = "nvsci")]
    pub fn from_nvscisync(ctx: &Arc<Context>, obj: &Arc<crate::nvsci::SyncObj>) -> Result<Self> {
        let desc = nvscisync_desc(obj.as_raw());
        let _bound = ctx.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a filled descriptor; a valid out pointer.
        check("cuImportExternalSemaphore", unsafe {
            sys::cuImportExternalSemaphore(&mut raw, &desc)
        })?;
        Ok(Self {
            raw,
            ctx: ctx.clone(),
            _source: Some(obj.clone()),
        })
    }

    /// Queues a signal on `stream`: `fence` is filled now with the point the semaphore reaches
    /// when the stream's work so far is done. Another engine waits on that fence.
    #[cfg(feature = "nvsci")]
    pub fn signal(&self, stream: &super::Stream, fence: &mut crate::nvsci::Fence) -> Result<()> {
        fence.clear();
        // SAFETY: a plain C struct; all-zero is its documented default.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
        params.params.nvSciSync.fence = fence.as_mut_ptr().cast();
        let _bound = self.ctx.bind()?;
        // SAFETY: one semaphore and its parameters; CUDA fills the fence during the call.
        check("cuSignalExternalSemaphoresAsync", unsafe {
            sys::cuSignalExternalSemaphoresAsync(&self.raw, &params, 1, stream.raw())
        })
    }

    /// Queues a wait on `stream`: work queued after it starts once `fence` (filled by another
    /// engine's signal) is reached. No CPU thread waits.
    #[cfg(feature = "nvsci")]
    pub fn wait(&self, stream: &super::Stream, fence: &crate::nvsci::Fence) -> Result<()> {
        // SAFETY: a plain C struct; all-zero is its documented default.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
        params.params.nvSciSync.fence = fence.as_ptr().cast_mut().cast();
        let _bound = self.ctx.bind()?;
        // SAFETY: one semaphore and its parameters; CUDA reads the fence during the call.
        check("cuWaitExternalSemaphoresAsync", unsafe {
            sys::cuWaitExternalSemaphoresAsync(&self.raw, &params, 1, stream.raw())
        })
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: imported above; owners finish stream work using it first.
            unsafe { sys::cuDestroyExternalSemaphore(self.raw) };
        }
    }
}

/// `cuDeviceGetNvSciSyncAttributes(void *attrList, CUdevice dev, int flags)`.
#[cfg(feature = "nvsci")]
type DeviceGetNvSciSyncAttributes =
    unsafe extern "C" fn(*mut std::ffi::c_void, sys::CUdevice, i32) -> sys::CUresult;

/// The driver's `cuDeviceGetNvSciSyncAttributes`, looked up in libcuda itself (cudarc does not
/// bind it, and `cuGetProcAddress_v2` is missing from drivers before CUDA 12, where cudarc
/// would panic).
#[cfg(feature = "nvsci")]
fn nvscisync_attributes_entry() -> Result<DeviceGetNvSciSyncAttributes> {
    use std::sync::OnceLock;
    static ENTRY: OnceLock<std::result::Result<DeviceGetNvSciSyncAttributes, String>> =
        OnceLock::new();
    ENTRY
        .get_or_init(|| {
            // SAFETY: libcuda is already loaded by the CUDA layer (this only takes another
            // reference); the library is never unloaded (the handle is leaked below).
            let lib = unsafe { libloading::Library::new("libcuda.so.1") }
                .map_err(|e| format!("libcuda.so.1 cannot be loaded: {e}"))?;
            // SAFETY: the symbol has the signature cuda.h declares, as the type above.
            let entry = unsafe {
                lib.get::<DeviceGetNvSciSyncAttributes>(b"cuDeviceGetNvSciSyncAttributes\0")
            }
            .map(|f| *f)
            .map_err(|e| format!("this CUDA driver has no cuDeviceGetNvSciSyncAttributes: {e}"))?;
            std::mem::forget(lib);
            Ok(entry)
        })
        .clone()
        .map_err(CudaError::Invalid)
}

/// Fills `list` with what `ctx`'s GPU needs to signal or wait on the NvSciSync object that
/// will be reconciled from it.
#[cfg(feature = "nvsci")]
pub fn nvscisync_attributes(
    ctx: &Context,
    list: &crate::nvsci::SyncAttrList,
    role: crate::nvsci::SyncRole,
) -> Result<()> {
    let entry = nvscisync_attributes_entry()?;
    let _bound = ctx.bind()?;
    // SAFETY: a valid, unreconciled attribute list and device.
    check("cuDeviceGetNvSciSyncAttributes", unsafe {
        entry(list.as_raw(), ctx.device(), nvscisync_flags(role))
    })
}

/// cuda.h's flags for a role: `CUDA_NVSCISYNC_ATTR_SIGNAL` 1, `CUDA_NVSCISYNC_ATTR_WAIT` 2 (cuDLA's
/// are the other way round).
#[cfg(feature = "nvsci")]
fn nvscisync_flags(role: crate::nvsci::SyncRole) -> i32 {
    match role {
        crate::nvsci::SyncRole::Signal => sys::CUDA_NVSCISYNC_ATTR_SIGNAL as i32,
        crate::nvsci::SyncRole::Wait => sys::CUDA_NVSCISYNC_ATTR_WAIT as i32,
    }
}

/// The UUID of `ctx`'s GPU: how NvSciBuf names a GPU accessor (`NvSciRmGpuId`).
pub fn gpu_uuid(ctx: &Context) -> Result<[u8; 16]> {
    // SAFETY: a plain C struct of bytes.
    let mut uuid: sys::CUuuid = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out pointer and device.
    check("cuDeviceGetUuid", unsafe {
        sys::cuDeviceGetUuid_v2(&mut uuid, ctx.device())
    })?;
    Ok(uuid.bytes.map(|b| b as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_descriptors_are_valid_values() {
        // Regression (GPU lane): a zeroed descriptor is not a valid value (its handle type is a
        // Rust enum with no zero), which aborted the process at the first import. Built here,
        // every descriptor must carry its handle type and handle.
        let fd = memory_desc(
            sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
            sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 { fd: 7 },
            4096,
        );
        // SAFETY: the union was written through `fd`.
        assert_eq!(
            (fd.type_ as u32, unsafe { fd.handle.fd }, fd.size),
            (1, 7, 4096)
        );
    }

    #[cfg(feature = "nvsci")]
    #[test]
    fn semaphore_descriptors_are_valid_values() {
        let object = 0x1000 as *mut std::ffi::c_void;
        let sync = nvscisync_desc(object);
        assert_eq!(sync.type_ as u32, 6);
        // SAFETY: the union was written through `nvSciSyncObj`.
        assert_eq!(unsafe { sync.handle.nvSciSyncObj }, object.cast_const());
    }

    #[cfg(feature = "nvsci")]
    #[test]
    fn roles_carry_cuda_h_flags() {
        use crate::nvsci::SyncRole;
        assert_eq!(nvscisync_flags(SyncRole::Signal), 1);
        assert_eq!(nvscisync_flags(SyncRole::Wait), 2);
    }
}
