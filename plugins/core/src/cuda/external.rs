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

/// External memory mapped as one device buffer; unmapped and released on drop.
#[derive(Debug)]
pub struct ExternalMemory {
    raw: sys::CUexternalMemory,
    ptr: u64,
    size: u64,
    ctx: Arc<Context>,
}

// SAFETY: the handle and the device address may be used from any thread; the driver orders work.
unsafe impl Send for ExternalMemory {}
// SAFETY: `&ExternalMemory` gives only addresses.
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// Imports `size` bytes behind an opaque descriptor. CUDA owns the descriptor once the
    /// import succeeds; on failure it is closed here.
    pub fn from_fd(ctx: &Arc<Context>, fd: OwnedFd, size: u64) -> Result<Self> {
        let raw_fd = fd.into_raw_fd();
        let desc = memory_desc(
            sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
            sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 { fd: raw_fd },
            size,
        );
        let imported = Self::import(ctx, &desc, size);
        if imported.is_err() {
            // SAFETY: the import failed, so the descriptor is still ours (CUDA takes it only on
            // success).
            drop(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw_fd) });
        }
        imported
    }

    /// Imports an NvSciBuf object (allocated with this GPU among its accessors).
    #[cfg(feature = "nvsci")]
    pub fn from_nvscibuf(ctx: &Arc<Context>, obj: &crate::nvsci::BufObj) -> Result<Self> {
        let desc = memory_desc(
            sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF,
            sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 {
                nvSciBufObject: obj.as_raw().cast_const(),
            },
            obj.size(),
        );
        Self::import(ctx, &desc, obj.size())
    }

    fn import(
        ctx: &Arc<Context>,
        desc: &sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
        size: u64,
    ) -> Result<Self> {
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

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        if let Ok(_bound) = self.ctx.bind() {
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

/// An external semaphore (an NvSciSync object on Jetson) that streams signal and wait on.
#[derive(Debug)]
pub struct ExternalSemaphore {
    raw: sys::CUexternalSemaphore,
    ctx: Arc<Context>,
}

// SAFETY: as `ExternalMemory`.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: signal and wait only queue work; the fences they take are the caller's.
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    /// Imports an NvSciSync object whose attribute lists included this GPU's
    /// ([`nvscisync_attributes`]).
    #[cfg(feature = "nvsci")]
    pub fn from_nvscisync(ctx: &Arc<Context>, obj: &crate::nvsci::SyncObj) -> Result<Self> {
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
        if let Ok(_bound) = self.ctx.bind() {
            // SAFETY: imported above; owners finish stream work using it first.
            unsafe { sys::cuDestroyExternalSemaphore(self.raw) };
        }
    }
}

/// Whether the GPU signals or waits on an NvSciSync object (`CUDA_NVSCISYNC_ATTR_SIGNAL`,
/// `CUDA_NVSCISYNC_ATTR_WAIT` of cuda.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRole {
    Signal,
    Wait,
}

impl SyncRole {
    pub fn flags(self) -> i32 {
        match self {
            Self::Signal => sys::CUDA_NVSCISYNC_ATTR_SIGNAL as i32,
            Self::Wait => sys::CUDA_NVSCISYNC_ATTR_WAIT as i32,
        }
    }
}

/// `cuDeviceGetNvSciSyncAttributes(void *attrList, CUdevice dev, int flags)`.
#[cfg(feature = "nvsci")]
type DeviceGetNvSciSyncAttributes =
    unsafe extern "C" fn(*mut std::ffi::c_void, sys::CUdevice, i32) -> sys::CUresult;

/// The driver's `cuDeviceGetNvSciSyncAttributes`, found with `cuGetProcAddress` (present in
/// every driver since CUDA 10.2; it succeeds only where NvSci exists).
#[cfg(feature = "nvsci")]
fn nvscisync_attributes_entry() -> Result<DeviceGetNvSciSyncAttributes> {
    let mut pfn = std::ptr::null_mut();
    let mut found = sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS;
    // SAFETY: a NUL-terminated name and valid out pointers; 12000 asks for the CUDA 12 ABI of
    // the symbol, which is unchanged since 10.2.
    check("cuGetProcAddress", unsafe {
        sys::cuGetProcAddress_v2(
            c"cuDeviceGetNvSciSyncAttributes".as_ptr(),
            &mut pfn,
            12000,
            sys::CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT as u64,
            &mut found,
        )
    })?;
    if pfn.is_null() || found != sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS {
        return Err(CudaError::Invalid(
            "this CUDA driver has no cuDeviceGetNvSciSyncAttributes".into(),
        ));
    }
    // SAFETY: the driver's symbol has the signature cuda.h declares, as the type above.
    Ok(unsafe { std::mem::transmute::<*mut std::ffi::c_void, DeviceGetNvSciSyncAttributes>(pfn) })
}

/// Fills `list` with what `ctx`'s GPU needs to signal or wait on the NvSciSync object that
/// will be reconciled from it.
#[cfg(feature = "nvsci")]
pub fn nvscisync_attributes(
    ctx: &Context,
    list: &crate::nvsci::SyncAttrList,
    role: SyncRole,
) -> Result<()> {
    let entry = nvscisync_attributes_entry()?;
    let _bound = ctx.bind()?;
    // SAFETY: a valid, unreconciled attribute list and device.
    check("cuDeviceGetNvSciSyncAttributes", unsafe {
        entry(list.as_raw(), ctx.device(), role.flags())
    })
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

    #[test]
    fn roles_carry_cuda_h_flags() {
        // cuda.h: CUDA_NVSCISYNC_ATTR_SIGNAL 0x1, CUDA_NVSCISYNC_ATTR_WAIT 0x2 (cuDLA's are the
        // other way round).
        assert_eq!(SyncRole::Signal.flags(), 1);
        assert_eq!(SyncRole::Wait.flags(), 2);
    }
}
