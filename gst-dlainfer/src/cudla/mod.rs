// SPDX-License-Identifier: MIT OR Apache-2.0
//! cuDLA in hybrid mode: DLA standalone loadables (`trtexec --buildDLAStandalone`) run on the
//! DLA, submitted on a CUDA stream, with CUDA memory registered for the DLA. `libcudla.so.1`
//! (JetPack) is loaded at run time, so builds with this module start anywhere; on machines
//! without it [`Library::load`] says what is missing.

pub mod engine;
pub mod ffi;

use std::ptr::NonNull;
use std::sync::Arc;

pub use engine::CudlaEngine;

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
    // Keeps the entry points above valid.
    _lib: libloading::Library,
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
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol has the signature of the field it is stored in, as declared
                // in cudla.h; the library outlives the pointer (it is kept in `_lib`).
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| CudlaError::Missing(format!("libcudla has no {}: {e}", $name)))?
            };
        }
        Ok(Self {
            get_version: sym!("cudlaGetVersion"),
            device_get_count: sym!("cudlaDeviceGetCount"),
            create_device: sym!("cudlaCreateDevice"),
            destroy_device: sym!("cudlaDestroyDevice"),
            mem_register: sym!("cudlaMemRegister"),
            mem_unregister: sym!("cudlaMemUnregister"),
            module_load: sym!("cudlaModuleLoadFromMemory"),
            module_attributes: sym!("cudlaModuleGetAttributes"),
            module_unload: sym!("cudlaModuleUnload"),
            submit_task: sym!("cudlaSubmitTask"),
            get_last_error: sym!("cudlaGetLastError"),
            _lib: lib,
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

/// A DLA core opened in hybrid (CUDA + DLA) mode. Must be dropped before the CUDA primary
/// context it was created under is reset.
pub struct Device {
    raw: NonNull<std::ffi::c_void>,
    lib: Arc<Library>,
}

// SAFETY: a cuDLA device handle may be used from any thread. Every `Arc<Device>` (and the
// modules and registrations holding one) lives inside one `CudlaEngine`, which is used by one
// thread at a time (`&mut self`), so the handle is never used concurrently.
unsafe impl Send for Device {}
// SAFETY: see `Send`: shared references never reach two threads at once.
unsafe impl Sync for Device {}

impl Device {
    /// Opens DLA core `core` in hybrid mode; a CUDA context must be current.
    pub fn open(lib: &Arc<Library>, core: u32) -> Result<Arc<Self>, CudlaError> {
        let count = lib.device_count()?;
        if u64::from(core) >= count {
            return Err(CudlaError::Invalid(format!(
                "DLA core {core} requested, but this machine has {count} DLA core(s)"
            )));
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out pointer; flags select hybrid mode.
        check("cudlaCreateDevice", unsafe {
            (lib.create_device)(core.into(), &mut raw, ffi::CUDLA_CUDA_DLA)
        })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| CudlaError::Invalid("cudlaCreateDevice returned no handle".into()))?;
        Ok(Arc::new(Self {
            raw,
            lib: lib.clone(),
        }))
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

/// CUDA device memory registered with the DLA; unregistered on drop.
pub struct Registered {
    cuda_ptr: u64,
    dla_ptr: NonNull<u64>,
    device: Arc<Device>,
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
            cuda_ptr: ptr,
            dla_ptr,
            device: device.clone(),
        })
    }

    /// The address the DLA task takes.
    pub fn dla_ptr(&self) -> *mut u64 {
        self.dla_ptr.as_ptr()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // SAFETY: the address was registered on this device and is still allocated (the owner
        // drops registrations before the memory).
        unsafe {
            (self.device.lib.mem_unregister)(self.device.raw.as_ptr(), self.cuda_ptr as *const u64)
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
        let (ins, outs) = (&tensors.inputs, &tensors.outputs);
        let task = ffi::Task {
            module_handle: self.raw.as_ptr(),
            output_tensor: outs.as_ptr(),
            num_output_tensors: outs.len() as u32,
            num_input_tensors: ins.len() as u32,
            input_tensor: ins.as_ptr(),
            wait_events: std::ptr::null(),
            signal_events: std::ptr::null_mut(),
        };
        // SAFETY: the task's arrays live through the call (cuDLA copies them); the caller
        // vouches for the buffers and the stream.
        check("cudlaSubmitTask", unsafe {
            (self.device.lib.submit_task)(self.device.raw.as_ptr(), &task, 1, stream, 0)
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
