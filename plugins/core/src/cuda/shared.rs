// SPDX-License-Identifier: MIT OR Apache-2.0
//! Device memory another process can map without a copy: allocations made with the CUDA virtual
//! memory API (`cuMemCreate` with POSIX file-descriptor handles, mapped with `cuMemMap`), whose
//! physical memory is exported as a file descriptor (`cuMemExportToShareableHandle`) and mapped
//! by the receiver (`cuMemImportFromShareableHandle`). The descriptor travels over a Unix socket
//! (SCM_RIGHTS); the memory lives until every process has unmapped it.
//!
//! Every [`SharedAllocation`] of the process is listed in a registry by address range, so that an
//! element holding only a device pointer (from an NvBufSurface, say) can find out whether the
//! pixels behind it can be exported as they are ([`find`]).

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::context::Context;
use super::error::{CudaError, Result, check};

/// An allocation's properties: pinned device memory of `ctx`'s GPU, exportable as a descriptor.
fn properties(ctx: &Context) -> sys::CUmemAllocationProp {
    // SAFETY: a plain C struct; all-zero is its documented default (no flags, no metadata).
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes =
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ctx.device();
    prop
}

fn attribute(ctx: &Context, attribute: sys::CUdevice_attribute) -> Result<i32> {
    let mut value = 0;
    // SAFETY: `value` is a valid out pointer; the device handle is valid while `ctx` lives.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut value, attribute, ctx.device())
    })?;
    Ok(value)
}

/// Whether `ctx`'s GPU can make shareable allocations (virtual memory management and POSIX
/// file-descriptor handles: every dGPU under Linux since CUDA 10.2, not Jetson before Orin).
pub fn supported(ctx: &Context) -> Result<bool> {
    use sys::CUdevice_attribute::*;
    Ok(attribute(
        ctx,
        CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED,
    )? != 0
        && attribute(
            ctx,
            CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
        )? != 0)
}

/// The size an allocation of `len` bytes takes: a multiple of the GPU's granularity (2 MiB on
/// current GPUs).
fn rounded_size(ctx: &Context, len: usize) -> Result<usize> {
    let prop = properties(ctx);
    let mut granularity = 0usize;
    // SAFETY: valid out pointer and properties.
    check("cuMemGetAllocationGranularity", unsafe {
        sys::cuMemGetAllocationGranularity(
            &mut granularity,
            &prop,
            sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
        )
    })?;
    let granularity = granularity.max(1);
    len.max(1)
        .checked_next_multiple_of(granularity)
        .ok_or_else(|| CudaError::Invalid(format!("{len} bytes cannot be allocated")))
}

/// A range of virtual addresses with physical memory mapped into it, readable and writable by
/// the context's GPU; unmapped and released on drop.
#[derive(Debug)]
struct Mapping {
    ctx: Arc<Context>,
    handle: sys::CUmemGenericAllocationHandle,
    ptr: u64,
    size: usize,
}

impl Mapping {
    /// Maps `handle` (which the mapping then owns) into a new range of `size` bytes.
    fn new(
        ctx: &Arc<Context>,
        handle: sys::CUmemGenericAllocationHandle,
        size: usize,
    ) -> Result<Self> {
        let release = |handle| {
            // SAFETY: the handle came from cuMemCreate or an import and is released once.
            let _ = unsafe { sys::cuMemRelease(handle) };
        };
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: a context is current (the callers bind it); valid out pointer.
        if let Err(e) = check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut ptr, size, 0, 0, 0)
        }) {
            release(handle);
            return Err(e);
        }
        // SAFETY: the range was reserved above with `size` bytes; the handle has `size` bytes.
        if let Err(e) = check("cuMemMap", unsafe {
            sys::cuMemMap(ptr, size, 0, handle, 0)
        }) {
            // SAFETY: reserved above, freed once.
            let _ = unsafe { sys::cuMemAddressFree(ptr, size) };
            release(handle);
            return Err(e);
        }
        let mapping = Self {
            ctx: ctx.clone(),
            handle,
            ptr,
            size,
        };
        let access = sys::CUmemAccessDesc {
            location: properties(ctx).location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range is mapped; one access descriptor.
        check("cuMemSetAccess", unsafe {
            sys::cuMemSetAccess(ptr, size, &access, 1)
        })?;
        Ok(mapping)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.ctx.lost() {
            return;
        }
        if let Ok(_bound) = self.ctx.bind() {
            // SAFETY: mapped and reserved in `new`, undone once; work using the memory has been
            // synchronised by the owners (as for every device buffer).
            unsafe {
                let _ = sys::cuMemUnmap(self.ptr, self.size);
                let _ = sys::cuMemAddressFree(self.ptr, self.size);
                let _ = sys::cuMemRelease(self.handle);
            }
        }
    }
}

/// What the registry knows of a live shared allocation.
#[derive(Debug, Clone, Copy)]
struct Entry {
    size: usize,
    serial: u64,
    handle: sys::CUmemGenericAllocationHandle,
}

/// Live shared allocations of this process by base address.
static REGISTRY: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());
static SERIAL: AtomicU64 = AtomicU64::new(1);

/// Device memory of this process that other processes can map: see the module documentation.
#[derive(Debug)]
pub struct SharedAllocation {
    mapping: Mapping,
    len: usize,
    serial: u64,
}

impl SharedAllocation {
    /// Allocates at least `len` bytes on `ctx`'s GPU (rounded up to the granularity).
    pub fn new(ctx: &Arc<Context>, len: usize) -> Result<Self> {
        let _bound = ctx.bind()?;
        let size = rounded_size(ctx, len)?;
        let prop = properties(ctx);
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: valid out pointer and properties; a context is current.
        check("cuMemCreate", unsafe {
            sys::cuMemCreate(&mut handle, size, &prop, 0)
        })?;
        let mapping = Mapping::new(ctx, handle, size)?;
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        REGISTRY.lock().unwrap().insert(
            mapping.ptr,
            Entry {
                size,
                serial,
                handle,
            },
        );
        Ok(Self {
            mapping,
            len,
            serial,
        })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.mapping.ptr
    }

    /// The bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes allocated (what an importer maps).
    pub fn size(&self) -> usize {
        self.mapping.size
    }

    /// A number no other allocation of this process has had.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.mapping.ctx
    }
}

impl Drop for SharedAllocation {
    fn drop(&mut self) {
        // Out of the registry before the memory goes, so that no export can race the release.
        REGISTRY.lock().unwrap().remove(&self.mapping.ptr);
    }
}

/// Where a device address lies within a live shared allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    /// The allocation's [`SharedAllocation::serial`].
    pub serial: u64,
    /// Its base address and size.
    pub base: u64,
    pub size: usize,
    /// Bytes from the base to the address.
    pub offset: u64,
}

/// The shared allocation holding the `len` bytes at `ptr`, if one of this process does.
pub fn find(ptr: u64, len: usize) -> Option<Located> {
    let registry = REGISTRY.lock().unwrap();
    let (&base, entry) = registry.range(..=ptr).next_back()?;
    let offset = ptr - base;
    let end = offset.checked_add(len as u64)?;
    (end <= entry.size as u64).then_some(Located {
        serial: entry.serial,
        base,
        size: entry.size,
        offset,
    })
}

/// A descriptor for the shared allocation `serial` (based at `base`), for another process to map;
/// fails when it has been freed meanwhile.
pub fn export(base: u64, serial: u64) -> Result<OwnedFd> {
    let registry = REGISTRY.lock().unwrap();
    let entry = registry
        .get(&base)
        .filter(|e| e.serial == serial)
        .ok_or_else(|| CudaError::Invalid("the shared allocation has been freed".into()))?;
    let mut fd: i32 = -1;
    // SAFETY: the handle is live while it is in the registry (held locked); for POSIX handles the
    // out parameter is an int.
    check("cuMemExportToShareableHandle", unsafe {
        sys::cuMemExportToShareableHandle(
            (&raw mut fd).cast(),
            entry.handle,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0,
        )
    })?;
    if fd < 0 {
        return Err(CudaError::Invalid(
            "cuMemExportToShareableHandle returned no descriptor".into(),
        ));
    }
    // SAFETY: the driver handed over a new descriptor, now owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Another process's shared allocation, mapped into this one; unmapped on drop.
#[derive(Debug)]
pub struct ImportedAllocation {
    mapping: Mapping,
}

impl ImportedAllocation {
    /// Maps the `size` bytes behind `fd` (from [`export`], received from another process) into
    /// `ctx`. The descriptor can be closed afterwards.
    pub fn import(ctx: &Arc<Context>, fd: BorrowedFd<'_>, size: usize) -> Result<Self> {
        let _bound = ctx.bind()?;
        if size == 0 || size != rounded_size(ctx, size)? {
            return Err(CudaError::Invalid(format!(
                "a shared allocation of {size} bytes is not a whole number of the GPU's pages"
            )));
        }
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: for POSIX handles the OS handle argument is the descriptor's value cast to a
        // pointer (CUDA's documented convention); valid out pointer.
        check("cuMemImportFromShareableHandle", unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut handle,
                fd.as_raw_fd() as isize as *mut std::ffi::c_void,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        })?;
        Ok(Self {
            mapping: Mapping::new(ctx, handle, size)?,
        })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.mapping.ptr
    }

    pub fn size(&self) -> usize {
        self.mapping.size
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.mapping.ctx
    }
}

/// Free and total bytes of device memory on `ctx`'s GPU (`cuMemGetInfo`).
pub fn memory_info(ctx: &Context) -> Result<(usize, usize)> {
    let _bound = ctx.bind()?;
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: valid out pointers; a context is current.
    check("cuMemGetInfo", unsafe {
        sys::cuMemGetInfo_v2(&mut free, &mut total)
    })?;
    Ok((free, total))
}

/// An event another process can wait on (`cuIpcGetEventHandle`): the producer records it after
/// the work that fills a frame, the consumer waits for it before handing the frame on.
#[derive(Debug)]
pub struct IpcEvent {
    ctx: Arc<Context>,
    raw: sys::CUevent,
}

// SAFETY: a CUevent may be used from any thread.
unsafe impl Send for IpcEvent {}
unsafe impl Sync for IpcEvent {}

/// The 64 bytes that name an [`IpcEvent`] in another process.
pub type IpcEventHandle = [u8; 64];

/// A handle as text (hexadecimal), for messages.
pub fn handle_to_hex(handle: &IpcEventHandle) -> String {
    handle.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads [`handle_to_hex`]'s text back.
pub fn handle_from_hex(text: &str) -> Option<IpcEventHandle> {
    let bytes = text.as_bytes();
    if bytes.len() != 128 {
        return None;
    }
    let mut handle = [0u8; 64];
    for (i, pair) in bytes.chunks(2).enumerate() {
        handle[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(handle)
}

impl IpcEvent {
    /// A new interprocess event (no timing, as CUDA requires for sharing).
    pub fn new(ctx: &Arc<Context>) -> Result<Self> {
        let _bound = ctx.bind()?;
        let mut raw = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
            | sys::CUevent_flags::CU_EVENT_INTERPROCESS as u32;
        // SAFETY: valid out pointer; a context is current.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, flags)
        })?;
        Ok(Self {
            ctx: ctx.clone(),
            raw,
        })
    }

    /// Opens the event another process named by `handle`.
    pub fn open(ctx: &Arc<Context>, handle: &IpcEventHandle) -> Result<Self> {
        let _bound = ctx.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `CUipcEventHandle` is 64 reserved bytes; valid out pointer.
        let h: sys::CUipcEventHandle = unsafe { std::mem::transmute(*handle) };
        check("cuIpcOpenEventHandle", unsafe {
            sys::cuIpcOpenEventHandle(&mut raw, h)
        })?;
        Ok(Self {
            ctx: ctx.clone(),
            raw,
        })
    }

    /// The handle to send to another process.
    pub fn handle(&self) -> Result<IpcEventHandle> {
        let _bound = self.ctx.bind()?;
        // SAFETY: 64 reserved bytes, filled by the driver.
        let mut h: sys::CUipcEventHandle = unsafe { std::mem::zeroed() };
        // SAFETY: valid out pointer and live event.
        check("cuIpcGetEventHandle", unsafe {
            sys::cuIpcGetEventHandle(&mut h, self.raw)
        })?;
        // SAFETY: same size, plain bytes.
        Ok(unsafe { std::mem::transmute::<sys::CUipcEventHandle, IpcEventHandle>(h) })
    }

    /// Records the event after the work queued on `stream` so far.
    pub fn record(&self, stream: &super::Stream) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: live event and stream of the same context.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.raw, stream.raw())
        })
    }

    /// Waits on the CPU until the work before the event's last record is done.
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.ctx.bind()?;
        // SAFETY: live event.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.raw)
        })
    }
}

impl Drop for IpcEvent {
    fn drop(&mut self) {
        if !self.ctx.lost()
            && let Ok(_bound) = self.ctx.bind()
        {
            // SAFETY: created or opened here, destroyed once.
            let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn event_handles_read_back_from_text() {
        let mut h = [0u8; 64];
        h.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i * 5) as u8);
        assert_eq!(handle_from_hex(&handle_to_hex(&h)), Some(h));
        assert_eq!(handle_from_hex("00"), None);
        assert_eq!(handle_from_hex(&"zz".repeat(64)), None);
    }

    #[test]
    fn nothing_is_found_outside_a_shared_allocation() {
        assert_eq!(find(0x1000, 16), None);
    }

    #[test]
    fn an_exported_allocation_maps_again_with_the_same_bytes() {
        if !crate::cuda::driver_present() || crate::cuda::device_count().unwrap_or(0) == 0 {
            eprintln!("skipped: no CUDA device");
            return;
        }
        let ctx = Context::primary(0).unwrap();
        if !supported(&ctx).unwrap() {
            eprintln!("skipped: the GPU cannot share allocations");
            return;
        }
        let stream = super::super::Stream::new(&ctx, 0).unwrap();
        let shared = SharedAllocation::new(&ctx, 3 << 20).unwrap();
        assert!(shared.size() >= 3 << 20);
        let at = find(shared.ptr() + 100, 1000).unwrap();
        assert_eq!(
            (at.serial, at.base, at.offset),
            (shared.serial(), shared.ptr(), 100)
        );
        assert_eq!(find(shared.ptr() + shared.size() as u64 - 10, 11), None);
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let _bound = ctx.bind().unwrap();
        // SAFETY: 4096 bytes inside the allocation; the copy is synchronous.
        unsafe {
            check(
                "cuMemcpyHtoD",
                sys::cuMemcpyHtoD_v2(shared.ptr(), bytes.as_ptr().cast(), 4096),
            )
            .unwrap();
        }
        let fd = export(at.base, at.serial).unwrap();
        let imported = ImportedAllocation::import(&ctx, fd.as_fd(), shared.size()).unwrap();
        assert_ne!(imported.ptr(), shared.ptr());
        let mut back = vec![0u8; 4096];
        // SAFETY: as above, the other mapping of the same memory.
        unsafe {
            crate::cuda::download(&stream, imported.ptr(), &mut back).unwrap();
        }
        assert_eq!(back, bytes);
        let serial = shared.serial();
        let base = shared.ptr();
        drop(shared);
        assert!(
            export(base, serial).is_err(),
            "a freed allocation is not exported"
        );
    }
}
