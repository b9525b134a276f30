// SPDX-License-Identifier: MIT OR Apache-2.0
//! cuDLA: DLA standalone loadables (`trtexec --buildDLAStandalone`) run on the DLA, in one of
//! cuDLA's two modes:
//! - hybrid: tasks submitted on a CUDA stream, with CUDA memory registered for the DLA; the
//!   CUDA driver orders the task after the stream's earlier work;
//! - standalone ([`standalone`]): tensors allocated through NvSciBuf with the DLA and the GPU as
//!   accessors and imported into both, each task waiting on a fence the GPU signals and
//!   signalling one the GPU waits on.
//!
//! [`CudlaEngine`] runs a loadable in either.
//!
//! `libcudla.so.1` (JetPack) is loaded at run time, so builds with this module start anywhere;
//! on machines without it [`Library::load`] says what is missing.

pub mod engine;
pub mod ffi;
pub mod standalone;
pub mod tensor;

use std::ptr::NonNull;
use std::sync::Arc;

pub use engine::CudlaEngine;

use ferrostream_core::nvsci;

use gst_trtinfer::engine::EngineError;

use crate::mode::DlaMode;

/// Opens `loadable` on DLA core `core` in the mode `request` asks for. With
/// [`DlaMode::Auto`], standalone mode where it opens (and passes its check at open), else hybrid
/// mode and why standalone did not open, for the element to report: `ProviderUnavailable` where
/// NvSci or cuDLA's standalone mode is missing, another error where it failed.
pub fn open_loadable(
    loadable: &std::path::Path,
    core: u32,
    gpu_id: u32,
    request: DlaMode,
) -> Result<(CudlaEngine, Option<EngineError>), EngineError> {
    choose_mode(request, |mode| {
        CudlaEngine::open(loadable, core, gpu_id, mode)
    })
}

/// The mode policy of [`open_loadable`], over any opener.
fn choose_mode<E>(
    request: DlaMode,
    mut open: impl FnMut(Mode) -> Result<E, EngineError>,
) -> Result<(E, Option<EngineError>), EngineError> {
    let way_out = "dla-mode=auto or hybrid runs cuDLA's hybrid mode";
    match request {
        DlaMode::Hybrid => Ok((open(Mode::Hybrid)?, None)),
        DlaMode::Standalone => open(Mode::Standalone)
            .map(|e| (e, None))
            .map_err(|e| match e {
                EngineError::ProviderUnavailable(m) => EngineError::ProviderUnavailable(format!(
                    "dla-mode=standalone is not available here: {m}; {way_out}"
                )),
                other => {
                    EngineError::Run(format!("dla-mode=standalone failed: {other}; {way_out}"))
                }
            }),
        DlaMode::Auto => match open(Mode::Standalone) {
            Ok(engine) => Ok((engine, None)),
            Err(why) => Ok((open(Mode::Hybrid)?, Some(why))),
        },
    }
}

fn cuda_error(e: ferrostream_core::cuda::CudaError) -> EngineError {
    EngineError::Run(e.to_string())
}

/// A cuDLA failure as an engine error: a missing library or entry point is "unavailable".
fn cudla_error(e: CudlaError) -> EngineError {
    match e {
        CudlaError::Missing(m) => EngineError::ProviderUnavailable(m),
        other => EngineError::Run(other.to_string()),
    }
}

/// A failed cuDLA call, with the status name from `cudla.h`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudlaError {
    #[error("{0}")]
    Missing(String),
    #[error("{call} failed: {name} ({status})", name = ffi::status_name(*.status))]
    Call {
        call: &'static str,
        status: ffi::Status,
    },
    #[error("{0}")]
    Invalid(String),
}

fn check(call: &'static str, status: ffi::Status) -> Result<(), CudlaError> {
    if status == ffi::SUCCESS {
        Ok(())
    } else {
        Err(CudlaError::Call { call, status })
    }
}

/// The loaded `libcudla` and its entry points.
pub struct Library {
    get_version: ffi::GetVersion,
    device_get_count: ffi::DeviceGetCount,
    create_device: ffi::CreateDevice,
    destroy_device: ffi::DestroyDevice,
    mem_register: ffi::MemRegister,
    mem_unregister: ffi::MemUnregister,
    module_load: ffi::ModuleLoadFromMemory,
    module_attributes: ffi::ModuleGetAttributes,
    module_unload: ffi::ModuleUnload,
    submit_task: ffi::SubmitTask,
    get_last_error: ffi::GetLastError,
    /// The standalone-mode entry points, or which one this libcudla lacks.
    standalone: Result<StandaloneEntries, CudlaError>,
    // Keeps the entry points above valid.
    _lib: libloading::Library,
}

/// A libcudla entry point, or [`CudlaError::Missing`] naming it.
macro_rules! entry {
    ($lib:expr, $name:literal) => {
        // SAFETY: the symbol has the signature of the field it is stored in, as declared in
        // cudla.h; the library outlives the pointer (the `Library` keeps it in `_lib`).
        *unsafe { $lib.get(concat!($name, "\0").as_bytes()) }
            .map_err(|e| CudlaError::Missing(format!("libcudla has no {}: {e}", $name)))?
    };
}

/// The entry points only standalone mode uses.
struct StandaloneEntries {
    import_external_memory: ffi::ImportExternalMemory,
    import_external_semaphore: ffi::ImportExternalSemaphore,
    get_nvscisync_attributes: ffi::GetNvSciSyncAttributes,
}

/// Where JetPack installs libcudla, then the loader's own search path.
const CANDIDATES: &[&str] = &[
    "/usr/local/cuda/targets/aarch64-linux/lib/libcudla.so.1",
    "/usr/lib/aarch64-linux-gnu/tegra/libcudla.so.1",
    "libcudla.so.1",
    "libcudla.so",
];

impl Library {
    /// Loads libcudla. The error names every place tried: cuDLA exists only on Jetson
    /// (JetPack), where the DLA is.
    pub fn load() -> Result<Arc<Self>, CudlaError> {
        let mut tried = Vec::new();
        for name in CANDIDATES {
            // SAFETY: loading libcudla runs its initialisers, which have no preconditions.
            match unsafe { libloading::Library::new(*name) } {
                Ok(lib) => return Self::resolve(lib).map(Arc::new),
                Err(e) => tried.push(format!("{name} ({e})")),
            }
        }
        Err(CudlaError::Missing(format!(
            "libcudla.so.1 (cuDLA, part of JetPack on Jetson AGX Orin / Orin NX / Xavier) cannot \
             be loaded; tried {}",
            tried.join("; ")
        )))
    }

    fn resolve(lib: libloading::Library) -> Result<Self, CudlaError> {
        Ok(Self {
            get_version: entry!(lib, "cudlaGetVersion"),
            device_get_count: entry!(lib, "cudlaDeviceGetCount"),
            create_device: entry!(lib, "cudlaCreateDevice"),
            destroy_device: entry!(lib, "cudlaDestroyDevice"),
            mem_register: entry!(lib, "cudlaMemRegister"),
            mem_unregister: entry!(lib, "cudlaMemUnregister"),
            module_load: entry!(lib, "cudlaModuleLoadFromMemory"),
            module_attributes: entry!(lib, "cudlaModuleGetAttributes"),
            module_unload: entry!(lib, "cudlaModuleUnload"),
            submit_task: entry!(lib, "cudlaSubmitTask"),
            get_last_error: entry!(lib, "cudlaGetLastError"),
            standalone: Self::resolve_standalone(&lib),
            _lib: lib,
        })
    }

    fn resolve_standalone(lib: &libloading::Library) -> Result<StandaloneEntries, CudlaError> {
        Ok(StandaloneEntries {
            import_external_memory: entry!(lib, "cudlaImportExternalMemory"),
            import_external_semaphore: entry!(lib, "cudlaImportExternalSemaphore"),
            get_nvscisync_attributes: entry!(lib, "cudlaGetNvSciSyncAttributes"),
        })
    }

    fn standalone(&self) -> Result<&StandaloneEntries, CudlaError> {
        self.standalone.as_ref().map_err(|e| {
            CudlaError::Missing(format!("cuDLA's standalone mode is not available: {e}"))
        })
    }

    /// Fills `list` with what the DLA needs to wait on (`Role::Wait`) or signal the NvSciSync
    /// object reconciled from it.
    pub fn nvscisync_attributes(
        &self,
        list: &nvsci::SyncAttrList,
        role: nvsci::SyncRole,
    ) -> Result<(), CudlaError> {
        let flags = match role {
            nvsci::SyncRole::Wait => ffi::NVSCISYNC_ATTR_WAIT,
            nvsci::SyncRole::Signal => ffi::NVSCISYNC_ATTR_SIGNAL,
        };
        // SAFETY: a valid, unreconciled attribute list (cuDLA's `uint64_t*` is the handle).
        check("cudlaGetNvSciSyncAttributes", unsafe {
            (self.standalone()?.get_nvscisync_attributes)(list.as_raw().cast(), flags)
        })
    }

    /// The cuDLA version (major*1000000 + minor*1000 + patch).
    pub fn version(&self) -> Result<u64, CudlaError> {
        let mut v = 0u64;
        // SAFETY: `v` is a valid out pointer.
        check("cudlaGetVersion", unsafe { (self.get_version)(&mut v) })?;
        Ok(v)
    }

    /// DLA cores of this machine.
    pub fn device_count(&self) -> Result<u64, CudlaError> {
        let mut n = 0u64;
        // SAFETY: `n` is a valid out pointer.
        check("cudlaDeviceGetCount", unsafe {
            (self.device_get_count)(&mut n)
        })?;
        Ok(n)
    }
}

/// Whether a standalone task runs, or only passes through its wait and signal events
/// (`CUDLA_SUBMIT_NOOP`: how a standalone engine proves its fence chain at open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    Run,
    NoOp,
}

/// cuDLA's two modes (`cudlaCreateDevice` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Tasks on a CUDA stream, CUDA memory registered for the DLA.
    Hybrid,
    /// Tasks ordered by NvSciSync fences, NvSciBuf memory imported.
    Standalone,
}

/// A DLA core opened in one of cuDLA's modes. Must be dropped before the CUDA primary context
/// it was created under is reset.
pub struct Device {
    raw: NonNull<std::ffi::c_void>,
    mode: Mode,
    lib: Arc<Library>,
}

// SAFETY: a cuDLA device handle may be used from any thread. Every `Arc<Device>` (and the
// modules and registrations holding one) lives inside one `CudlaEngine`, which is used by one
// thread at a time (`&mut self`), so the handle is never used concurrently.
unsafe impl Send for Device {}
// SAFETY: see `Send`: shared references never reach two threads at once.
unsafe impl Sync for Device {}

impl Device {
    /// Opens DLA core `core` in `mode`; for hybrid mode a CUDA context must be current.
    pub fn open(lib: &Arc<Library>, core: u32, mode: Mode) -> Result<Arc<Self>, CudlaError> {
        if mode == Mode::Standalone {
            lib.standalone()?;
        }
        let count = lib.device_count()?;
        if u64::from(core) >= count {
            return Err(CudlaError::Invalid(format!(
                "DLA core {core} requested, but this machine has {count} DLA core(s)"
            )));
        }
        let mut raw = std::ptr::null_mut();
        let flags = match mode {
            Mode::Hybrid => ffi::CUDLA_CUDA_DLA,
            Mode::Standalone => ffi::CUDLA_STANDALONE,
        };
        // SAFETY: `raw` is a valid out pointer; flags select the mode.
        check("cudlaCreateDevice", unsafe {
            (lib.create_device)(core.into(), &mut raw, flags)
        })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| CudlaError::Invalid("cudlaCreateDevice returned no handle".into()))?;
        Ok(Arc::new(Self {
            raw,
            mode,
            lib: lib.clone(),
        }))
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The cuDLA entry points the device was opened with.
    pub fn cudla(&self) -> &Arc<Library> {
        &self.lib
    }

    /// The error a failed asynchronous task left (asked after the stream reported
    /// `cudaErrorExternalDevice`).
    pub fn last_error(&self) -> ffi::Status {
        // SAFETY: the handle is valid while `self` lives.
        unsafe { (self.lib.get_last_error)(self.raw.as_ptr()) }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: modules and registrations hold an Arc to the device, so none is left.
        unsafe { (self.lib.destroy_device)(self.raw.as_ptr()) };
    }
}

/// Memory or a sync object registered with the DLA (`cudlaMemRegister` in hybrid mode,
/// `cudlaImportExternalMemory` or `cudlaImportExternalSemaphore` in standalone mode);
/// unregistered on drop, by the address cuDLA gave (`cudlaMemUnregister`).
pub struct Registered {
    dla_ptr: NonNull<u64>,
    device: Arc<Device>,
    /// What an import keeps alive (its NvSciBuf buffer or NvSciSync object), released after the
    /// registration.
    _source: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

// SAFETY: the registration is a pair of addresses; cuDLA calls on it are serialised by the owner.
unsafe impl Send for Registered {}

impl Registered {
    /// Registers `len` bytes at the CUDA device address `ptr`.
    ///
    /// # Safety
    /// `ptr` must be device memory of the CUDA context current on this thread, at least `len`
    /// bytes long, and outlive the registration.
    pub unsafe fn new(device: &Arc<Device>, ptr: u64, len: usize) -> Result<Self, CudlaError> {
        let mut dla = std::ptr::null_mut();
        // SAFETY: the caller vouches for the memory; `dla` is a valid out pointer.
        check("cudlaMemRegister", unsafe {
            (device.lib.mem_register)(device.raw.as_ptr(), ptr as *const u64, len, &mut dla, 0)
        })?;
        let dla_ptr = NonNull::new(dla)
            .ok_or_else(|| CudlaError::Invalid("cudlaMemRegister returned no address".into()))?;
        Ok(Self {
            dla_ptr,
            device: device.clone(),
            _source: None,
        })
    }

    /// Imports an NvSciBuf buffer into a standalone-mode device; the registration keeps it
    /// alive.
    pub fn import_memory(
        device: &Arc<Device>,
        buffer: &Arc<nvsci::BufObj>,
        read_only: bool,
    ) -> Result<Self, CudlaError> {
        let entries = device.lib.standalone()?;
        let desc = ffi::ExternalMemoryHandleDesc {
            ext_buf_object: buffer.as_raw().cast_const(),
            size: buffer.size(),
        };
        let flags = if read_only {
            ffi::READ_ONLY_PERM
        } else {
            ffi::READ_WRITE_PERM
        };
        let mut dla = std::ptr::null_mut();
        // SAFETY: a valid descriptor of a live NvSciBuf object; a valid out pointer.
        check("cudlaImportExternalMemory", unsafe {
            (entries.import_external_memory)(device.raw.as_ptr(), &desc, &mut dla, flags)
        })?;
        Self::from_address(device, dla, "cudlaImportExternalMemory", buffer.clone())
    }

    /// Imports an NvSciSync object into a standalone-mode device, for tasks to wait on or
    /// signal; the registration keeps it alive.
    pub fn import_semaphore(
        device: &Arc<Device>,
        sync: &Arc<nvsci::SyncObj>,
    ) -> Result<Self, CudlaError> {
        let entries = device.lib.standalone()?;
        let desc = ffi::ExternalSemaphoreHandleDesc {
            ext_sync_object: sync.as_raw().cast_const(),
        };
        let mut dla = std::ptr::null_mut();
        // SAFETY: a valid descriptor of a live NvSciSync object; a valid out pointer; flags
        // are reserved (0).
        check("cudlaImportExternalSemaphore", unsafe {
            (entries.import_external_semaphore)(device.raw.as_ptr(), &desc, &mut dla, 0)
        })?;
        Self::from_address(device, dla, "cudlaImportExternalSemaphore", sync.clone())
    }

    fn from_address(
        device: &Arc<Device>,
        dla: *mut u64,
        call: &str,
        source: Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<Self, CudlaError> {
        let dla_ptr = NonNull::new(dla)
            .ok_or_else(|| CudlaError::Invalid(format!("{call} returned no address")))?;
        Ok(Self {
            dla_ptr,
            device: device.clone(),
            _source: Some(source),
        })
    }

    /// The address the DLA task takes.
    pub fn dla_ptr(&self) -> *mut u64 {
        self.dla_ptr.as_ptr()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // SAFETY: the address cuDLA gave at registration, on this device; the memory or sync
        // object is still allocated (owners drop registrations first). cuDLA unregisters by the
        // registered address, as NVIDIA's samples do.
        unsafe {
            (self.device.lib.mem_unregister)(self.device.raw.as_ptr(), self.dla_ptr.as_ptr())
        };
    }
}

/// A loadable loaded on a device (one per device handle), with its tensor descriptors.
pub struct Module {
    raw: NonNull<std::ffi::c_void>,
    pub inputs: Vec<ffi::TensorDescriptor>,
    pub outputs: Vec<ffi::TensorDescriptor>,
    device: Arc<Device>,
}

// SAFETY: see `Device`.
unsafe impl Send for Module {}

impl Module {
    pub fn load(device: &Arc<Device>, loadable: &[u8]) -> Result<Self, CudlaError> {
        let lib = &device.lib;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the bytes are read during the call only; `raw` is a valid out pointer.
        check("cudlaModuleLoadFromMemory", unsafe {
            (lib.module_load)(
                device.raw.as_ptr(),
                loadable.as_ptr(),
                loadable.len(),
                &mut raw,
                0,
            )
        })?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            CudlaError::Invalid("cudlaModuleLoadFromMemory returned no module".into())
        })?;
        let mut module = Self {
            raw,
            inputs: Vec::new(),
            outputs: Vec::new(),
            device: device.clone(),
        };
        module.inputs =
            module.descriptors(ffi::NUM_INPUT_TENSORS, ffi::INPUT_TENSOR_DESCRIPTORS)?;
        module.outputs =
            module.descriptors(ffi::NUM_OUTPUT_TENSORS, ffi::OUTPUT_TENSOR_DESCRIPTORS)?;
        Ok(module)
    }

    fn descriptors(&self, count: u32, kind: u32) -> Result<Vec<ffi::TensorDescriptor>, CudlaError> {
        let get = self.device.lib.module_attributes;
        let mut attr = ffi::ModuleAttribute { num_tensors: 0 };
        // SAFETY: `attr` is a valid out pointer for a count attribute.
        check("cudlaModuleGetAttributes", unsafe {
            get(self.raw.as_ptr(), count, &mut attr)
        })?;
        // SAFETY: a count attribute fills `num_tensors`.
        let n = unsafe { attr.num_tensors } as usize;
        let mut out = vec![ffi::TensorDescriptor::default(); n];
        attr.descriptors = out.as_mut_ptr();
        // SAFETY: the descriptor attribute writes `n` descriptors into the array it points to,
        // which holds `n`.
        check("cudlaModuleGetAttributes", unsafe {
            get(self.raw.as_ptr(), kind, &mut attr)
        })?;
        Ok(out)
    }

    /// Submits one inference on `stream` (hybrid mode).
    ///
    /// # Safety
    /// `tensors` must hold registrations of buffers of this module's tensor sizes, in
    /// descriptor order, still registered and left untouched until the stream has run the
    /// task; `stream` must be a CUDA stream of the context the device was opened under.
    pub unsafe fn submit(
        &self,
        tensors: &TaskTensors,
        stream: *mut std::ffi::c_void,
    ) -> Result<(), CudlaError> {
        let task = self.task(tensors, std::ptr::null(), std::ptr::null_mut());
        // SAFETY: the task's arrays live through the call (cuDLA copies them); the caller
        // vouches for the buffers and the stream.
        check("cudlaSubmitTask", unsafe {
            (self.device.lib.submit_task)(self.device.raw.as_ptr(), &task, 1, stream, 0)
        })
    }

    /// A task of this module on `tensors`, with its events (NULL in hybrid mode).
    fn task(
        &self,
        tensors: &TaskTensors,
        wait_events: *const ffi::WaitEvents,
        signal_events: *mut ffi::SignalEvents,
    ) -> ffi::Task {
        let (ins, outs) = (&tensors.inputs, &tensors.outputs);
        ffi::Task {
            module_handle: self.raw.as_ptr(),
            output_tensor: outs.as_ptr(),
            num_output_tensors: outs.len() as u32,
            num_input_tensors: ins.len() as u32,
            input_tensor: ins.as_ptr(),
            wait_events,
            signal_events,
        }
    }

    /// Submits one inference in standalone mode: the task starts once the fence `wait` is
    /// reached, and at submission cuDLA fills `eof` with the point `signal` (an imported sync
    /// object) reaches when the task ends. Nothing is allocated per submission.
    ///
    /// # Safety
    /// As [`Module::submit`] for the tensors (here NvSciBuf imports); `signal` must be a sync
    /// object imported into this module's device.
    pub unsafe fn submit_standalone(
        &self,
        tensors: &TaskTensors,
        wait: &nvsci::Fence,
        signal: &Registered,
        eof: &mut nvsci::Fence,
        submission: Submission,
    ) -> Result<(), CudlaError> {
        let pre = ffi::Fence {
            fence: wait.as_ptr().cast_mut().cast(),
            fence_type: ffi::NVSCISYNC_FENCE,
        };
        let wait_events = ffi::WaitEvents {
            pre_fences: &pre,
            num_events: 1,
        };
        eof.clear();
        let mut eof_fence = ffi::Fence {
            fence: eof.as_mut_ptr().cast(),
            fence_type: ffi::NVSCISYNC_FENCE,
        };
        let signal_ptrs = [signal.dla_ptr()];
        let mut signal_events = ffi::SignalEvents {
            dev_ptrs: signal_ptrs.as_ptr(),
            eof_fences: &mut eof_fence,
            num_events: 1,
        };
        let task = self.task(tensors, &wait_events, &mut signal_events);
        let flags = match submission {
            Submission::Run => 0,
            Submission::NoOp => ffi::SUBMIT_NOOP,
        };
        // SAFETY: every array and fence the task points at lives through the call (cuDLA reads
        // the pre-fences and fills the EOF fence during it); standalone mode takes no stream.
        check("cudlaSubmitTask", unsafe {
            (self.device.lib.submit_task)(
                self.device.raw.as_ptr(),
                &task,
                1,
                std::ptr::null_mut(),
                flags,
            )
        })
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module was loaded on this device and no task uses it any more (the
        // runner waits for its stream before dropping).
        unsafe { (self.device.lib.module_unload)(self.raw.as_ptr(), 0) };
    }
}

/// The DLA addresses of a task's tensors, gathered once so that a submission allocates
/// nothing.
pub struct TaskTensors {
    inputs: Vec<*mut u64>,
    outputs: Vec<*mut u64>,
}

// SAFETY: plain addresses of registrations owned next to this value (in one engine); they are
// only read, by `Module::submit`.
unsafe impl Send for TaskTensors {}

impl TaskTensors {
    pub fn new(inputs: &[&Registered], outputs: &[&Registered]) -> Self {
        Self {
            inputs: inputs.iter().map(|r| r.dla_ptr()).collect(),
            outputs: outputs.iter().map(|r| r.dla_ptr()).collect(),
        }
    }
}

/// A descriptor's tensor name.
pub fn tensor_name(d: &ffi::TensorDescriptor) -> String {
    let bytes: Vec<u8> = d
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_to_hybrid_with_the_reason_and_standalone_says_why_not() {
        let no_nvsci = || EngineError::ProviderUnavailable("libnvscibuf.so.1 is missing".into());
        let mut tried = Vec::new();
        let opener = |tried: &mut Vec<Mode>, mode: Mode| {
            tried.push(mode);
            match mode {
                Mode::Standalone => Err(no_nvsci()),
                Mode::Hybrid => Ok("hybrid engine"),
            }
        };
        let (engine, reason) = choose_mode(DlaMode::Auto, |m| opener(&mut tried, m)).unwrap();
        assert_eq!(engine, "hybrid engine");
        let Some(EngineError::ProviderUnavailable(why)) = reason else {
            panic!("the reason is that standalone mode is unavailable");
        };
        assert!(why.contains("libnvscibuf.so.1"), "{why}");
        assert_eq!(tried, [Mode::Standalone, Mode::Hybrid]);

        // Where standalone opens, auto takes it, with nothing to report.
        let (engine, reason) = choose_mode(DlaMode::Auto, Ok::<_, EngineError>).unwrap();
        assert!(engine == Mode::Standalone && reason.is_none());

        // Asked for explicitly, standalone's absence is an error naming the way out.
        let Err(EngineError::ProviderUnavailable(m)) =
            choose_mode(DlaMode::Standalone, |m| opener(&mut Vec::new(), m))
        else {
            panic!("standalone must not fall back");
        };
        assert!(
            m.contains("libnvscibuf.so.1") && m.contains("dla-mode=auto"),
            "{m}"
        );

        // Hybrid never tries standalone.
        let mut tried = Vec::new();
        choose_mode(DlaMode::Hybrid, |m| opener(&mut tried, m)).unwrap();
        assert_eq!(tried, [Mode::Hybrid]);

        // A model error in both modes is the hybrid error, not a silent success.
        let broken = |_| Err::<(), _>(EngineError::Run("bad loadable".into()));
        assert!(choose_mode(DlaMode::Auto, broken).is_err());
        // Standalone failing for another reason (its check at open) says so, and the way out.
        let Err(EngineError::Run(m)) = choose_mode(DlaMode::Standalone, broken) else {
            panic!("a run error");
        };
        assert!(
            m.contains("bad loadable") && m.contains("dla-mode=auto"),
            "{m}"
        );
    }
}
