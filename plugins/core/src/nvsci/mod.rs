// SPDX-License-Identifier: MIT OR Apache-2.0
//! NvSciBuf and NvSciSync: buffers that several engines of a Jetson (GPU, DLA, ISP, encoders)
//! share, allocated once for all of them, and fences by which one engine waits on another's work
//! without a CPU thread in between.
//!
//! Layers, as for every NVIDIA library Ferrostream reaches: [`ffi`] mirrors the C API, the
//! libraries are loaded at run time ([`Libraries::load`], so builds with this module start
//! anywhere and say what is missing where NvSci is absent), each call becomes a `Result` naming
//! the call and the `NvSciError`, and every handle is an owning type that frees it on drop:
//! [`BufAttrList`], [`BufObj`], [`SyncAttrList`], [`SyncObj`], [`Fence`], [`CpuWaitContext`].
//!
//! Attribute lists are filled by whoever will use the buffer or the sync object (CUDA's
//! `cuDeviceGetNvSciSyncAttributes`, cuDLA's `cudlaGetNvSciSyncAttributes`, or
//! [`RawBuffer::attributes`] for a buffer), then reconciled into one list that every accessor
//! accepts, from which the object is allocated.

pub mod ffi;

use std::ptr::NonNull;
use std::sync::Arc;

/// A failed NvSci call, or a missing library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvSciError {
    #[error("{0}")]
    Missing(String),
    #[error("{call} failed: {name} ({code:#x})", name = ffi::error_name(*.code))]
    Call { call: &'static str, code: u32 },
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, NvSciError>;

fn check(call: &'static str, code: ffi::NvSciError) -> Result<()> {
    if code == ffi::SUCCESS {
        Ok(())
    } else {
        Err(NvSciError::Call { call, code })
    }
}

/// Names a folder to load the NvSci libraries from before the usual places (an SDK installed
/// elsewhere; the tests' stand-in).
pub const LIBRARY_DIR_VARIABLE: &str = "FERROSTREAM_NVSCI_LIBRARY_DIR";

/// The folder of [`LIBRARY_DIR_VARIABLE`], then where Jetson Linux (and DRIVE OS) install the
/// NvSci libraries, then the loader's own path.
fn candidates(name: &str) -> Vec<String> {
    let mut paths = Vec::with_capacity(4);
    if let Some(dir) = std::env::var_os(LIBRARY_DIR_VARIABLE) {
        paths.push(std::path::Path::new(&dir).join(name).display().to_string());
    }
    paths.push(format!("/usr/lib/aarch64-linux-gnu/nvidia/{name}"));
    paths.push(format!("/usr/lib/aarch64-linux-gnu/tegra/{name}"));
    paths.push(name.to_string());
    paths
}

fn open(name: &str) -> Result<libloading::Library> {
    let mut tried = Vec::new();
    for path in candidates(name) {
        // SAFETY: loading an NvSci library runs its initialisers, which have no preconditions.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => return Ok(lib),
            Err(e) => tried.push(format!("{path} ({e})")),
        }
    }
    Err(NvSciError::Missing(format!(
        "{name} (NvSci, part of Jetson Linux and DRIVE OS) cannot be loaded; tried {}",
        tried.join("; ")
    )))
}

macro_rules! symbol {
    ($lib:expr, $file:literal, $name:literal) => {
        // SAFETY: the symbol has the signature of the field it is stored in, as the NvSci header
        // declares it; the library outlives the pointer (kept beside it in the same struct).
        *unsafe { $lib.get(concat!($name, "\0").as_bytes()) }
            .map_err(|e| NvSciError::Missing(format!("{} has no {}: {e}", $file, $name)))?
    };
}

/// The entry points of `libnvscibuf.so.1`.
pub struct BufLibrary {
    module_open: ffi::BufModuleOpen,
    module_close: ffi::BufModuleClose,
    attr_list_create: ffi::BufAttrListCreate,
    attr_list_free: ffi::BufAttrListFree,
    attr_list_set_attrs: ffi::BufAttrListSetAttrs,
    attr_list_get_attrs: ffi::BufAttrListGetAttrs,
    attr_list_reconcile: ffi::BufAttrListReconcile,
    obj_alloc: ffi::BufObjAlloc,
    obj_free: ffi::BufObjFree,
    obj_get_cpu_ptr: ffi::BufObjGetCpuPtr,
    _lib: libloading::Library,
}

/// The entry points of `libnvscisync.so.1`.
pub struct SyncLibrary {
    module_open: ffi::SyncModuleOpen,
    module_close: ffi::SyncModuleClose,
    attr_list_create: ffi::SyncAttrListCreate,
    attr_list_free: ffi::SyncAttrListFree,
    attr_list_set_attrs: ffi::SyncAttrListSetAttrs,
    attr_list_reconcile: ffi::SyncAttrListReconcile,
    obj_alloc: ffi::SyncObjAlloc,
    obj_free: ffi::SyncObjFree,
    fence_clear: ffi::SyncFenceClear,
    cpu_wait_context_alloc: ffi::SyncCpuWaitContextAlloc,
    cpu_wait_context_free: ffi::SyncCpuWaitContextFree,
    fence_wait: ffi::SyncFenceWait,
    _lib: libloading::Library,
}

impl BufLibrary {
    fn load() -> Result<Self> {
        let lib = open("libnvscibuf.so.1")?;
        Ok(Self {
            module_open: symbol!(lib, "libnvscibuf", "NvSciBufModuleOpen"),
            module_close: symbol!(lib, "libnvscibuf", "NvSciBufModuleClose"),
            attr_list_create: symbol!(lib, "libnvscibuf", "NvSciBufAttrListCreate"),
            attr_list_free: symbol!(lib, "libnvscibuf", "NvSciBufAttrListFree"),
            attr_list_set_attrs: symbol!(lib, "libnvscibuf", "NvSciBufAttrListSetAttrs"),
            attr_list_get_attrs: symbol!(lib, "libnvscibuf", "NvSciBufAttrListGetAttrs"),
            attr_list_reconcile: symbol!(lib, "libnvscibuf", "NvSciBufAttrListReconcile"),
            obj_alloc: symbol!(lib, "libnvscibuf", "NvSciBufObjAlloc"),
            obj_free: symbol!(lib, "libnvscibuf", "NvSciBufObjFree"),
            obj_get_cpu_ptr: symbol!(lib, "libnvscibuf", "NvSciBufObjGetCpuPtr"),
            _lib: lib,
        })
    }
}

impl SyncLibrary {
    fn load() -> Result<Self> {
        let lib = open("libnvscisync.so.1")?;
        Ok(Self {
            module_open: symbol!(lib, "libnvscisync", "NvSciSyncModuleOpen"),
            module_close: symbol!(lib, "libnvscisync", "NvSciSyncModuleClose"),
            attr_list_create: symbol!(lib, "libnvscisync", "NvSciSyncAttrListCreate"),
            attr_list_free: symbol!(lib, "libnvscisync", "NvSciSyncAttrListFree"),
            attr_list_set_attrs: symbol!(lib, "libnvscisync", "NvSciSyncAttrListSetAttrs"),
            attr_list_reconcile: symbol!(lib, "libnvscisync", "NvSciSyncAttrListReconcile"),
            obj_alloc: symbol!(lib, "libnvscisync", "NvSciSyncObjAlloc"),
            obj_free: symbol!(lib, "libnvscisync", "NvSciSyncObjFree"),
            fence_clear: symbol!(lib, "libnvscisync", "NvSciSyncFenceClear"),
            cpu_wait_context_alloc: symbol!(lib, "libnvscisync", "NvSciSyncCpuWaitContextAlloc"),
            cpu_wait_context_free: symbol!(lib, "libnvscisync", "NvSciSyncCpuWaitContextFree"),
            fence_wait: symbol!(lib, "libnvscisync", "NvSciSyncFenceWait"),
            _lib: lib,
        })
    }
}

/// Both NvSci libraries and one open module of each: what a user of shared buffers and fences
/// holds. Objects made from it keep it alive.
pub struct Libraries {
    buf: BufLibrary,
    sync: SyncLibrary,
    buf_module: NonNull<std::ffi::c_void>,
    sync_module: NonNull<std::ffi::c_void>,
}

// SAFETY: the function pointers are plain code addresses, and the modules are only passed to
// NvSci's create and open calls, which nvscibuf.h and nvscisync.h allow from several threads at
// once. Calls that change one list or object are not safe to overlap, and the owning types that
// make them (`BufAttrList`, `SyncAttrList`, `Fence`) are not `Sync`.
unsafe impl Send for Libraries {}
// SAFETY: see `Send`.
unsafe impl Sync for Libraries {}

impl Libraries {
    /// Loads libnvscibuf and libnvscisync and opens a module of each. The error names every
    /// place tried: NvSci exists on Jetson and DRIVE OS only.
    pub fn load() -> Result<Arc<Self>> {
        let buf = BufLibrary::load()?;
        let sync = SyncLibrary::load()?;
        let mut raw_buf = std::ptr::null_mut();
        // SAFETY: a valid out pointer.
        check("NvSciBufModuleOpen", unsafe {
            (buf.module_open)(&mut raw_buf)
        })?;
        let buf_module = NonNull::new(raw_buf)
            .ok_or_else(|| NvSciError::Invalid("NvSciBufModuleOpen returned no module".into()))?;
        let mut raw_sync = std::ptr::null_mut();
        // SAFETY: a valid out pointer.
        let opened = check("NvSciSyncModuleOpen", unsafe {
            (sync.module_open)(&mut raw_sync)
        });
        let sync_module = match (opened, NonNull::new(raw_sync)) {
            (Ok(()), Some(module)) => module,
            (result, _) => {
                // SAFETY: opened above, used by nothing yet.
                unsafe { (buf.module_close)(buf_module.as_ptr()) };
                return Err(result.err().unwrap_or_else(|| {
                    NvSciError::Invalid("NvSciSyncModuleOpen returned no module".into())
                }));
            }
        };
        Ok(Arc::new(Self {
            buf,
            sync,
            buf_module,
            sync_module,
        }))
    }
}

impl Drop for Libraries {
    fn drop(&mut self) {
        // SAFETY: every object made from the modules holds an Arc of `self`, so none is left.
        unsafe {
            (self.buf.module_close)(self.buf_module.as_ptr());
            (self.sync.module_close)(self.sync_module.as_ptr());
        }
    }
}

/// Runs a reconciliation (`NvSciBufAttrListReconcile` and `NvSciSyncAttrListReconcile` have one
/// shape), frees the conflict list it may return, and gives the reconciled list.
///
/// # Safety
/// `lists` are valid lists of one module of the library `reconcile` and `free` belong to.
unsafe fn reconcile(
    call: &'static str,
    lists: &[*mut std::ffi::c_void],
    reconcile: ffi::BufAttrListReconcile,
    free: ffi::BufAttrListFree,
) -> Result<NonNull<std::ffi::c_void>> {
    let (mut reconciled, mut conflicts) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the caller vouches for the lists; valid out pointers.
    let status = unsafe { reconcile(lists.as_ptr(), lists.len(), &mut reconciled, &mut conflicts) };
    if !conflicts.is_null() {
        // SAFETY: the conflict list is the caller's to free.
        unsafe { free(conflicts) };
    }
    check(call, status)?;
    NonNull::new(reconciled).ok_or_else(|| NvSciError::Invalid(format!("{call} returned no list")))
}

/// An NvSciBuf attribute list; freed on drop.
pub struct BufAttrList {
    raw: NonNull<std::ffi::c_void>,
    nvsci: Arc<Libraries>,
}

// SAFETY: see `Libraries`; a list is used through `&self`/`&mut self` only.
unsafe impl Send for BufAttrList {}

impl BufAttrList {
    pub fn new(nvsci: &Arc<Libraries>) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the module is open while `nvsci` lives; a valid out pointer.
        check("NvSciBufAttrListCreate", unsafe {
            (nvsci.buf.attr_list_create)(nvsci.buf_module.as_ptr(), &mut raw)
        })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| NvSciError::Invalid("NvSciBufAttrListCreate returned no list".into()))?;
        Ok(Self {
            raw,
            nvsci: nvsci.clone(),
        })
    }

    /// Sets the attributes of [`RawBuffer`] `request`.
    pub fn set_raw_buffer(&mut self, request: &RawBuffer) -> Result<()> {
        let values = request.values();
        let mut pairs = values.pairs();
        // SAFETY: every pair points into `values`, alive through the call (NvSciBuf copies the
        // values); the list is valid while `self` lives.
        check("NvSciBufAttrListSetAttrs", unsafe {
            (self.nvsci.buf.attr_list_set_attrs)(self.raw.as_ptr(), pairs.as_mut_ptr(), pairs.len())
        })
    }

    /// Reconciles `lists` (one per accessor) into the list an object is allocated from.
    pub fn reconcile(lists: &[&BufAttrList]) -> Result<BufAttrList> {
        let nvsci = lists
            .first()
            .ok_or_else(|| NvSciError::Invalid("no NvSciBuf attribute list to reconcile".into()))?
            .nvsci
            .clone();
        let raw: Vec<ffi::BufAttrList> = lists.iter().map(|l| l.raw.as_ptr()).collect();
        // SAFETY: `raw` holds valid lists (each alive through `lists`); NvSciBuf's own calls.
        let raw = unsafe {
            reconcile(
                "NvSciBufAttrListReconcile",
                &raw,
                nvsci.buf.attr_list_reconcile,
                nvsci.buf.attr_list_free,
            )
        }?;
        Ok(BufAttrList { raw, nvsci })
    }

    /// The raw-buffer size a reconciled list settled on.
    pub fn raw_size(&self) -> Result<u64> {
        let mut pair = ffi::BufAttrKeyValuePair {
            key: ffi::BUF_KEY_RAW_SIZE,
            value: std::ptr::null(),
            len: 0,
        };
        // SAFETY: one pair; NvSciBuf points `value` at its own copy of the value.
        check("NvSciBufAttrListGetAttrs", unsafe {
            (self.nvsci.buf.attr_list_get_attrs)(self.raw.as_ptr(), &mut pair, 1)
        })?;
        if pair.value.is_null() || pair.len != std::mem::size_of::<u64>() {
            return Err(NvSciError::Invalid(format!(
                "NvSciBufAttrListGetAttrs gave the raw-buffer size as {} bytes",
                pair.len
            )));
        }
        // SAFETY: checked above: `value` points at a u64 owned by the list, which `self` keeps.
        Ok(unsafe { pair.value.cast::<u64>().read_unaligned() })
    }

    /// The handle, for the accessor libraries that fill attribute lists.
    pub fn as_raw(&self) -> ffi::BufAttrList {
        self.raw.as_ptr()
    }
}

impl Drop for BufAttrList {
    fn drop(&mut self) {
        // SAFETY: created by NvSciBufAttrListCreate or reconciliation, freed once here.
        unsafe { (self.nvsci.buf.attr_list_free)(self.raw.as_ptr()) };
    }
}

/// An NvSciBuf buffer object; freed on drop (the memory lives until every importer has
/// released it as well).
pub struct BufObj {
    raw: NonNull<std::ffi::c_void>,
    size: u64,
    nvsci: Arc<Libraries>,
}

// SAFETY: see `Libraries`.
unsafe impl Send for BufObj {}
// SAFETY: `&BufObj` gives only the handle and the size.
unsafe impl Sync for BufObj {}

impl BufObj {
    /// Allocates the buffer a reconciled list describes.
    pub fn alloc(reconciled: &BufAttrList) -> Result<Self> {
        let nvsci = reconciled.nvsci.clone();
        let size = reconciled.raw_size()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a reconciled list of this module; a valid out pointer.
        check("NvSciBufObjAlloc", unsafe {
            (nvsci.buf.obj_alloc)(reconciled.raw.as_ptr(), &mut raw)
        })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| NvSciError::Invalid("NvSciBufObjAlloc returned no object".into()))?;
        Ok(Self { raw, size, nvsci })
    }

    /// Bytes of the buffer.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The CPU mapping of a buffer allocated with CPU access.
    pub fn cpu_ptr(&self) -> Result<NonNull<u8>> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a valid object and out pointer.
        check("NvSciBufObjGetCpuPtr", unsafe {
            (self.nvsci.buf.obj_get_cpu_ptr)(self.raw.as_ptr(), &mut ptr)
        })?;
        NonNull::new(ptr.cast())
            .ok_or_else(|| NvSciError::Invalid("NvSciBufObjGetCpuPtr returned no address".into()))
    }

    /// The handle, for the accessors that import the buffer (CUDA, cuDLA).
    pub fn as_raw(&self) -> ffi::BufObj {
        self.raw.as_ptr()
    }
}

impl Drop for BufObj {
    fn drop(&mut self) {
        // SAFETY: allocated by NvSciBufObjAlloc, freed once; importers hold references of their
        // own and are dropped first by their owners.
        unsafe { (self.nvsci.buf.obj_free)(self.raw.as_ptr()) };
    }
}

/// What a raw buffer (the kind cuDLA and CUDA both import) must offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBuffer {
    pub size: u64,
    pub align: u64,
    /// The GPU that maps it (`cuDeviceGetUuid`), or none.
    pub gpu: Option<[u8; 16]>,
    /// Whether the CPU maps it too (host copies, debugging); DLA-GPU tensors do not need it.
    pub cpu_access: bool,
}

/// The values a [`RawBuffer`] sets, owned so that the pairs pointing at them stay valid.
struct RawBufferValues {
    buffer_type: ffi::BufType,
    perm: ffi::BufAccessPerm,
    cpu_access: bool,
    size: u64,
    align: u64,
    gpu: Option<ffi::GpuId>,
}

impl RawBufferValues {
    fn pairs(&self) -> Vec<ffi::BufAttrKeyValuePair> {
        fn pair<T>(key: u32, value: &T) -> ffi::BufAttrKeyValuePair {
            ffi::BufAttrKeyValuePair {
                key,
                value: (value as *const T).cast(),
                len: std::mem::size_of::<T>(),
            }
        }
        let mut pairs = vec![
            pair(ffi::BUF_KEY_TYPES, &self.buffer_type),
            pair(ffi::BUF_KEY_REQUIRED_PERM, &self.perm),
            pair(ffi::BUF_KEY_NEED_CPU_ACCESS, &self.cpu_access),
            pair(ffi::BUF_KEY_RAW_SIZE, &self.size),
            pair(ffi::BUF_KEY_RAW_ALIGN, &self.align),
        ];
        if let Some(gpu) = &self.gpu {
            pairs.push(pair(ffi::BUF_KEY_GPU_ID, gpu));
        }
        pairs
    }
}

impl RawBuffer {
    fn values(&self) -> RawBufferValues {
        RawBufferValues {
            buffer_type: ffi::BUF_TYPE_RAW_BUFFER,
            perm: ffi::BUF_PERM_READ_WRITE,
            cpu_access: self.cpu_access,
            size: self.size,
            align: self.align.max(1),
            gpu: self.gpu.map(|bytes| ffi::GpuId { bytes }),
        }
    }

    /// An attribute list with this request, ready to reconcile with the other accessors'.
    pub fn attributes(&self, nvsci: &Arc<Libraries>) -> Result<BufAttrList> {
        let mut list = BufAttrList::new(nvsci)?;
        list.set_raw_buffer(self)?;
        Ok(list)
    }

    /// Allocates a buffer every accessor of `others` (already filled by them) and this request
    /// accept. NvSciBuf reconciles raw buffers only when every list that sets the size sets the
    /// same one.
    pub fn allocate(&self, nvsci: &Arc<Libraries>, others: &[&BufAttrList]) -> Result<BufObj> {
        let mine = self.attributes(nvsci)?;
        let mut lists = vec![&mine];
        lists.extend_from_slice(others);
        let reconciled = BufAttrList::reconcile(&lists)?;
        BufObj::alloc(&reconciled)
    }
}

/// What an engine does with an NvSciSync object: signal it, or wait on it. Each accessor's
/// library (CUDA, cuDLA) turns it into its own flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRole {
    Signal,
    Wait,
}

/// An NvSciSync attribute list; freed on drop.
pub struct SyncAttrList {
    raw: NonNull<std::ffi::c_void>,
    nvsci: Arc<Libraries>,
}

// SAFETY: see `Libraries`.
unsafe impl Send for SyncAttrList {}

impl SyncAttrList {
    pub fn new(nvsci: &Arc<Libraries>) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the module is open while `nvsci` lives; a valid out pointer.
        check("NvSciSyncAttrListCreate", unsafe {
            (nvsci.sync.attr_list_create)(nvsci.sync_module.as_ptr(), &mut raw)
        })?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            NvSciError::Invalid("NvSciSyncAttrListCreate returned no list".into())
        })?;
        Ok(Self {
            raw,
            nvsci: nvsci.clone(),
        })
    }

    /// The CPU's own wishes: a list saying the CPU waits on (or signals) the object.
    pub fn cpu(nvsci: &Arc<Libraries>, perm: ffi::SyncAccessPerm) -> Result<Self> {
        let list = Self::new(nvsci)?;
        let cpu = true;
        let pairs = [
            ffi::SyncAttrKeyValuePair {
                key: ffi::SYNC_KEY_NEED_CPU_ACCESS,
                value: (&cpu as *const bool).cast(),
                len: std::mem::size_of::<bool>(),
            },
            ffi::SyncAttrKeyValuePair {
                key: ffi::SYNC_KEY_REQUIRED_PERM,
                value: (&perm as *const u64).cast(),
                len: std::mem::size_of::<u64>(),
            },
        ];
        // SAFETY: the pairs point at locals alive through the call.
        check("NvSciSyncAttrListSetAttrs", unsafe {
            (nvsci.sync.attr_list_set_attrs)(list.raw.as_ptr(), pairs.as_ptr(), pairs.len())
        })?;
        Ok(list)
    }

    /// The handle, for the accessor libraries that fill it (CUDA, cuDLA).
    pub fn as_raw(&self) -> ffi::SyncAttrList {
        self.raw.as_ptr()
    }
}

impl Drop for SyncAttrList {
    fn drop(&mut self) {
        // SAFETY: created by NvSciSyncAttrListCreate, freed once here.
        unsafe { (self.nvsci.sync.attr_list_free)(self.raw.as_ptr()) };
    }
}

/// An NvSciSync object: the primitive (a syncpoint or semaphore) one engine signals and
/// another waits on. Freed on drop.
pub struct SyncObj {
    raw: NonNull<std::ffi::c_void>,
    nvsci: Arc<Libraries>,
}

// SAFETY: see `Libraries`.
unsafe impl Send for SyncObj {}
// SAFETY: `&SyncObj` gives only the handle.
unsafe impl Sync for SyncObj {}

impl SyncObj {
    /// Reconciles the signaler's and the waiters' lists and allocates the object.
    pub fn allocate(lists: &[&SyncAttrList]) -> Result<Self> {
        let nvsci = lists
            .first()
            .ok_or_else(|| NvSciError::Invalid("no NvSciSync attribute list to reconcile".into()))?
            .nvsci
            .clone();
        let raw: Vec<ffi::SyncAttrList> = lists.iter().map(|l| l.raw.as_ptr()).collect();
        // SAFETY: `raw` holds valid lists (each alive through `lists`); NvSciSync's own calls.
        let reconciled = SyncAttrList {
            raw: unsafe {
                reconcile(
                    "NvSciSyncAttrListReconcile",
                    &raw,
                    nvsci.sync.attr_list_reconcile,
                    nvsci.sync.attr_list_free,
                )
            }?,
            nvsci: nvsci.clone(),
        };
        let mut obj = std::ptr::null_mut();
        // SAFETY: a reconciled list; a valid out pointer. The object keeps what it needs of
        // the list, which is freed when `reconciled` drops.
        check("NvSciSyncObjAlloc", unsafe {
            (nvsci.sync.obj_alloc)(reconciled.raw.as_ptr(), &mut obj)
        })?;
        let raw = NonNull::new(obj)
            .ok_or_else(|| NvSciError::Invalid("NvSciSyncObjAlloc returned no object".into()))?;
        Ok(Self { raw, nvsci })
    }

    /// The handle, for the accessors that import it (CUDA, cuDLA).
    pub fn as_raw(&self) -> ffi::SyncObj {
        self.raw.as_ptr()
    }
}

impl Drop for SyncObj {
    fn drop(&mut self) {
        // SAFETY: allocated by NvSciSyncObjAlloc, freed once; importers are dropped first.
        unsafe { (self.nvsci.sync.obj_free)(self.raw.as_ptr()) };
    }
}

/// An NvSciSync fence: a point on a sync object's timeline that an engine has promised to
/// reach. Empty (cleared) until a signaler fills it; cleared again on drop, which releases its
/// reference to the object.
pub struct Fence {
    raw: ffi::SyncFence,
    nvsci: Arc<Libraries>,
}

impl Fence {
    pub fn new(nvsci: &Arc<Libraries>) -> Self {
        Self {
            raw: ffi::SyncFence::default(),
            nvsci: nvsci.clone(),
        }
    }

    /// Whether no signaler has filled the fence (waiting on it returns at once).
    pub fn is_cleared(&self) -> bool {
        self.raw == ffi::SyncFence::default()
    }

    /// Empties the fence, releasing its reference to the sync object.
    pub fn clear(&mut self) {
        if !self.is_cleared() {
            // SAFETY: the fence was filled by an NvSci signaler (CUDA, cuDLA) or is cleared.
            unsafe { (self.nvsci.sync.fence_clear)(&mut self.raw) };
        }
    }

    /// Waits on the CPU, at most `timeout`, for the fence to be reached.
    pub fn wait(&self, context: &CpuWaitContext, timeout: std::time::Duration) -> Result<()> {
        // NvSciSync refuses a timeout above `NvSciSyncFenceMaxTimeout`.
        let micros = i64::try_from(timeout.as_micros())
            .unwrap_or(i64::MAX)
            .min(ffi::FENCE_MAX_TIMEOUT_US);
        // SAFETY: a valid fence and wait context of the same module.
        check("NvSciSyncFenceWait", unsafe {
            (self.nvsci.sync.fence_wait)(&self.raw, context.raw.as_ptr(), micros)
        })
    }

    /// The C fence, for a signaler to fill (`cuSignalExternalSemaphoresAsync`, cuDLA's EOF
    /// fences). Clear it first ([`Fence::clear`]) when it was filled before.
    pub fn as_mut_ptr(&mut self) -> *mut ffi::SyncFence {
        &mut self.raw
    }

    /// The C fence, for a waiter.
    pub fn as_ptr(&self) -> *const ffi::SyncFence {
        &self.raw
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        self.clear();
    }
}

/// What a CPU thread needs to wait on fences ([`Fence::wait`]); freed on drop.
pub struct CpuWaitContext {
    raw: NonNull<std::ffi::c_void>,
    nvsci: Arc<Libraries>,
}

// SAFETY: see `Libraries`; a context is used by one wait at a time (`&self` of its owner).
unsafe impl Send for CpuWaitContext {}

impl CpuWaitContext {
    pub fn new(nvsci: &Arc<Libraries>) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the module is open while `nvsci` lives; a valid out pointer.
        check("NvSciSyncCpuWaitContextAlloc", unsafe {
            (nvsci.sync.cpu_wait_context_alloc)(nvsci.sync_module.as_ptr(), &mut raw)
        })?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            NvSciError::Invalid("NvSciSyncCpuWaitContextAlloc returned no context".into())
        })?;
        Ok(Self {
            raw,
            nvsci: nvsci.clone(),
        })
    }
}

impl Drop for CpuWaitContext {
    fn drop(&mut self) {
        // SAFETY: allocated above, freed once.
        unsafe { (self.nvsci.sync.cpu_wait_context_free)(self.raw.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_nvsci_is_told_what_is_missing() {
        // No development or CI machine has NvSci (Jetson and DRIVE OS only).
        if std::path::Path::new("/usr/lib/aarch64-linux-gnu/nvidia/libnvscibuf.so.1").exists()
            || std::path::Path::new("/usr/lib/aarch64-linux-gnu/tegra/libnvscibuf.so.1").exists()
        {
            return;
        }
        let Err(e) = Libraries::load() else {
            panic!("NvSci loaded on a machine without it");
        };
        let m = e.to_string();
        assert!(
            m.contains("libnvscibuf.so.1") && m.contains("Jetson Linux") && m.contains("tried"),
            "{m}"
        );
    }

    #[test]
    fn a_raw_buffer_sets_every_key_it_needs() {
        let request = RawBuffer {
            size: 1 << 20,
            align: 256,
            gpu: Some([7; 16]),
            cpu_access: false,
        };
        let values = request.values();
        let pairs = values.pairs();
        let keys: Vec<u32> = pairs.iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            [
                ffi::BUF_KEY_TYPES,
                ffi::BUF_KEY_REQUIRED_PERM,
                ffi::BUF_KEY_NEED_CPU_ACCESS,
                ffi::BUF_KEY_RAW_SIZE,
                ffi::BUF_KEY_RAW_ALIGN,
                ffi::BUF_KEY_GPU_ID,
            ]
        );
        // Each value is read back as NvSciBuf would: `len` bytes at `value`.
        // SAFETY: the pairs point into `values`, alive here, with the lengths of their types.
        let read = |i: usize| unsafe {
            std::slice::from_raw_parts(pairs[i].value.cast::<u8>(), pairs[i].len).to_vec()
        };
        assert_eq!(read(0), ffi::BUF_TYPE_RAW_BUFFER.to_ne_bytes());
        assert_eq!(read(1), ffi::BUF_PERM_READ_WRITE.to_ne_bytes());
        assert_eq!(read(2), [0]);
        assert_eq!(read(3), (1u64 << 20).to_ne_bytes());
        assert_eq!(read(4), 256u64.to_ne_bytes());
        assert_eq!(read(5), [7; 16]);
        // Without a GPU, no GPU key; an alignment of 0 becomes 1 (NvSciBuf refuses 0).
        let host = RawBuffer {
            gpu: None,
            align: 0,
            ..request
        }
        .values();
        assert_eq!(host.pairs().len(), 5);
        assert_eq!(host.align, 1);
    }
}
