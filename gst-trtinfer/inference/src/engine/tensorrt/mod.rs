// SPDX-License-Identifier: MIT OR Apache-2.0
//! Native TensorRT 10.x and 11.x backend (cargo feature `tensorrt`).
//!
//! Layers, lowest first:
//! - `tensorrt/fs_trt.cpp`: the C++ shim, a C interface over TensorRT's C++ API; it loads
//!   `libnvinfer` and `libnvonnxparser` with dlopen, so nothing links against TensorRT.
//! - [`ffi`]: the raw bindings, with layout tests against the shim.
//! - This module: safe owners of the shim's handles ([`Library`], [`Runtime`], [`CudaEngine`],
//!   [`ExecutionContext`]) and [`build_from_onnx`].
//! - [`options`]: rstrtinfer's settings as a TensorRT build; [`cache`]: built engines on disk.

pub mod cache;
pub mod engine;
pub mod ffi;
pub mod options;

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use super::{ElementType, EngineError};
pub use engine::{Origin, TrtEngine, TrtOptions};
pub use options::BuildOptions;

/// Library file names tried, in order, in each directory (and by the dynamic loader's search).
/// The libraries of the major version the shim was compiled against (build.rs reads it from the
/// headers: TensorRT 10 or 11).
const NVINFER: &str = concat!("libnvinfer.so.", env!("FERROSTREAM_TENSORRT_MAJOR"));
const ONNX_PARSER: &str = concat!("libnvonnxparser.so.", env!("FERROSTREAM_TENSORRT_MAJOR"));
/// Where JetPack and NVIDIA's x86 packages install TensorRT's libraries.
const STANDARD_LIB_DIRS: &[&str] = &[
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/local/TensorRT/lib",
];

/// Severity of a TensorRT log message (nvinfer1::ILogger::Severity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    InternalError = 0,
    Error = 1,
    Warning = 2,
    Info = 3,
    Verbose = 4,
}

impl Severity {
    fn from_raw(v: i32) -> Self {
        match v {
            0 => Self::InternalError,
            1 => Self::Error,
            2 => Self::Warning,
            3 => Self::Info,
            _ => Self::Verbose,
        }
    }
}

/// Receives TensorRT's log messages (from any thread TensorRT logs on).
pub type LogFn = dyn Fn(Severity, &str) + Send + Sync;

/// A TensorRT version, as `getInferLibVersion()` encodes it (major*10000 + minor*100 + patch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version(pub i32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        write!(f, "{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    }
}

/// Writes into a message buffer the shim fills on failure.
struct ErrorBuffer([u8; 1024]);

impl ErrorBuffer {
    fn new() -> Self {
        Self([0; 1024])
    }

    fn ptr(&mut self) -> (*mut c_char, usize) {
        (self.0.as_mut_ptr().cast(), self.0.len())
    }

    fn message(&self) -> String {
        CStr::from_bytes_until_nul(&self.0)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Whether this build's shim was compiled against the real TensorRT SDK (else only for a
/// compile check: it never loads TensorRT).
pub fn built_against_sdk() -> bool {
    // SAFETY: returns a constant.
    unsafe { ffi::fs_trt_compile_check_only() == 0 }
}

/// The TensorRT headers' version this build was compiled against.
pub fn header_version() -> Version {
    // SAFETY: returns a constant.
    Version(unsafe { ffi::fs_trt_header_version() })
}

/// The loaded `libnvinfer` (and `libnvonnxparser` when present).
pub struct Library {
    raw: NonNull<ffi::FsTrtLibrary>,
    version: Version,
    onnx_parser: bool,
    path: PathBuf,
}

// SAFETY: the library handle is immutable after loading; TensorRT's factories are thread-safe.
unsafe impl Send for Library {}
// SAFETY: see above.
unsafe impl Sync for Library {}

impl Library {
    /// Loads TensorRT from `TENSORRT_ROOT/lib`, the standard JetPack and x86 locations, or the
    /// dynamic loader's search path. The error names every location tried.
    pub fn load() -> Result<Arc<Library>, EngineError> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(root) = std::env::var_os("TENSORRT_ROOT") {
            dirs.push(Path::new(&root).join("lib"));
        }
        dirs.extend(STANDARD_LIB_DIRS.iter().map(PathBuf::from));
        let mut candidates: Vec<(PathBuf, PathBuf)> = dirs
            .iter()
            .filter(|d| d.join(NVINFER).is_file())
            .map(|d| (d.join(NVINFER), d.join(ONNX_PARSER)))
            .collect();
        // Bare names: the loader's search path (LD_LIBRARY_PATH, ld.so.cache).
        candidates.push((NVINFER.into(), ONNX_PARSER.into()));
        let mut failures = Vec::new();
        for (nvinfer, parser) in candidates {
            match Self::open(&nvinfer, &parser) {
                Ok(lib) => return Ok(Arc::new(lib)),
                Err(e) => failures.push(e),
            }
        }
        Err(EngineError::RuntimeMissing(format!(
            "TensorRT is not available: {} (looked in TENSORRT_ROOT/lib, {} and the library \
             path)",
            failures.join("; "),
            STANDARD_LIB_DIRS.join(", ")
        )))
    }

    fn open(nvinfer: &Path, parser: &Path) -> Result<Self, String> {
        let c =
            |p: &Path| CString::new(p.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string());
        let (nvinfer_c, parser_c) = (c(nvinfer)?, c(parser)?);
        let mut err = ErrorBuffer::new();
        let (e, len) = err.ptr();
        // SAFETY: NUL-terminated paths and a writable error buffer of `len` bytes.
        let raw =
            unsafe { ffi::fs_trt_library_open(nvinfer_c.as_ptr(), parser_c.as_ptr(), e, len) };
        let raw = NonNull::new(raw).ok_or_else(|| err.message())?;
        // SAFETY: `raw` is a live library handle.
        let (version, onnx_parser) = unsafe {
            (
                Version(ffi::fs_trt_library_version(raw.as_ptr())),
                ffi::fs_trt_library_has_onnx_parser(raw.as_ptr()) != 0,
            )
        };
        Ok(Self {
            raw,
            version,
            onnx_parser,
            path: nvinfer.to_path_buf(),
        })
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// Whether engines can be built from ONNX (libnvonnxparser was found).
    pub fn has_onnx_parser(&self) -> bool {
        self.onnx_parser
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: every runtime, engine and context holds an Arc to its library, so none is
        // alive any more.
        unsafe { ffi::fs_trt_library_free(self.raw.as_ptr()) }
    }
}

/// The shim's log callback: `user` is a `*const Box<LogFn>`.
unsafe extern "C" fn log_trampoline(user: *mut c_void, severity: i32, message: *const c_char) {
    if user.is_null() || message.is_null() {
        return;
    }
    // SAFETY: `user` is the boxed callback owned by the runtime or build that passed it, alive
    // for the call; `message` is a NUL-terminated string valid for the call.
    let (log, message) = unsafe { (&*(user as *const Box<LogFn>), CStr::from_ptr(message)) };
    log(Severity::from_raw(severity), &message.to_string_lossy());
}

/// An `IRuntime` with its logger.
pub struct Runtime {
    raw: NonNull<ffi::FsTrtRuntime>,
    /// The callback TensorRT's logger calls; boxed twice so its address is stable and thin.
    _log: Box<Box<LogFn>>,
    /// Kept loaded while the runtime lives.
    _tensorrt: Arc<Library>,
}

// SAFETY: the runtime is used from one thread at a time (the owners hold it behind `&mut` or a
// lock); TensorRT allows moving it between threads.
unsafe impl Send for Runtime {}
// SAFETY: the only shared-reference operation is reading the DLA core count.
unsafe impl Sync for Runtime {}

impl Runtime {
    pub fn new(library: Arc<Library>, log: Box<LogFn>) -> Result<Arc<Self>, EngineError> {
        let log = Box::new(log);
        let mut err = ErrorBuffer::new();
        let (e, len) = err.ptr();
        let user = &*log as *const Box<LogFn> as *mut c_void;
        // SAFETY: a live library; `user` outlives the runtime (owned by it).
        let raw = unsafe {
            ffi::fs_trt_runtime_new(library.raw.as_ptr(), Some(log_trampoline), user, e, len)
        };
        let raw = NonNull::new(raw).ok_or_else(|| EngineError::RuntimeMissing(err.message()))?;
        Ok(Arc::new(Self {
            raw,
            _log: log,
            _tensorrt: library,
        }))
    }

    /// DLA cores of this device (0 on discrete GPUs).
    pub fn dla_cores(&self) -> u32 {
        // SAFETY: a live runtime.
        unsafe { ffi::fs_trt_runtime_dla_cores(self.raw.as_ptr()) }.max(0) as u32
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: engines hold an Arc to their runtime, so none is alive.
        unsafe { ffi::fs_trt_runtime_free(self.raw.as_ptr()) }
    }
}

/// Input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMode {
    Input,
    Output,
}

/// One input or output of an engine.
#[derive(Debug, Clone, PartialEq)]
pub struct IoTensor {
    pub name: CString,
    pub mode: IoMode,
    pub element_type: ElementType,
    /// -1 marks a dynamic dimension.
    pub shape: Vec<i64>,
    /// Optimisation profile 0 of an input with dynamic dimensions.
    pub profile: Option<(Vec<i64>, Vec<i64>)>,
}

/// nvinfer1::DataType to the engine-independent element type.
pub fn element_type(data_type: i32) -> ElementType {
    match data_type {
        0 => ElementType::F32,
        1 => ElementType::F16,
        2 => ElementType::I8,
        3 => ElementType::I32,
        5 => ElementType::U8,
        8 => ElementType::I64,
        4 => ElementType::Other("bool"),
        6 => ElementType::Other("fp8"),
        7 => ElementType::Other("bf16"),
        9 => ElementType::Other("int4"),
        _ => ElementType::Other("unknown"),
    }
}

/// A deserialised engine and the description of its inputs and outputs.
pub struct CudaEngine {
    raw: NonNull<ffi::FsTrtEngine>,
    io: Vec<IoTensor>,
    /// Kept alive while the engine lives.
    _runtime: Arc<Runtime>,
}

// SAFETY: an ICudaEngine is immutable once built and may be shared between threads.
unsafe impl Send for CudaEngine {}
// SAFETY: see above.
unsafe impl Sync for CudaEngine {}

impl CudaEngine {
    /// Deserialises `blob` (an engine file's bytes), on DLA core `dla_core` when it was built
    /// for the DLA. Must be called with the CUDA context the engine will run in current.
    pub fn deserialize(
        runtime: Arc<Runtime>,
        blob: &[u8],
        dla_core: Option<u32>,
    ) -> Result<Arc<Self>, EngineError> {
        let mut err = ErrorBuffer::new();
        let (e, len) = err.ptr();
        let core = dla_core.map_or(-1, |c| c as i32);
        // SAFETY: a live runtime and `blob.len()` readable bytes.
        let raw = unsafe {
            ffi::fs_trt_engine_new(
                runtime.raw.as_ptr(),
                blob.as_ptr().cast(),
                blob.len(),
                core,
                e,
                len,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| EngineError::Model {
            path: "engine".into(),
            reason: err.message(),
        })?;
        let mut engine = Self {
            raw,
            io: Vec::new(),
            _runtime: runtime,
        };
        // SAFETY: a live engine.
        let count = unsafe { ffi::fs_trt_engine_io_count(raw.as_ptr()) };
        for index in 0..count {
            let mut desc = std::mem::MaybeUninit::<ffi::FsTrtTensorDesc>::uninit();
            // SAFETY: a live engine, an index in range, and a struct to fill.
            if unsafe { ffi::fs_trt_engine_io(raw.as_ptr(), index, desc.as_mut_ptr()) } != 0 {
                continue;
            }
            // SAFETY: filled by the call above.
            let desc = unsafe { desc.assume_init() };
            // SAFETY: the name is a NUL-terminated string owned by the engine.
            let name = unsafe { CStr::from_ptr(desc.name) }.to_owned();
            let profile = (desc.profile_max.nb_dims > 0).then(|| {
                (
                    desc.profile_min.as_slice().to_vec(),
                    desc.profile_max.as_slice().to_vec(),
                )
            });
            engine.io.push(IoTensor {
                name,
                mode: if desc.io_mode == 1 {
                    IoMode::Input
                } else {
                    IoMode::Output
                },
                element_type: element_type(desc.data_type),
                shape: desc.shape.as_slice().to_vec(),
                profile,
            });
        }
        Ok(Arc::new(engine))
    }

    pub fn io(&self) -> &[IoTensor] {
        &self.io
    }
}

impl Drop for CudaEngine {
    fn drop(&mut self) {
        // SAFETY: contexts hold an Arc to their engine, so none is alive.
        unsafe { ffi::fs_trt_engine_free(self.raw.as_ptr()) }
    }
}

/// An `IExecutionContext`: shapes and tensor addresses of one inference stream.
pub struct ExecutionContext {
    raw: NonNull<ffi::FsTrtContext>,
    /// Kept alive while the context lives.
    _engine: Arc<CudaEngine>,
}

// SAFETY: a context is used by one thread at a time (`&mut self` methods).
unsafe impl Send for ExecutionContext {}

impl ExecutionContext {
    pub fn new(engine: Arc<CudaEngine>) -> Result<Self, EngineError> {
        let mut err = ErrorBuffer::new();
        let (e, len) = err.ptr();
        // SAFETY: a live engine.
        let raw = unsafe { ffi::fs_trt_context_new(engine.raw.as_ptr(), e, len) };
        let raw = NonNull::new(raw).ok_or_else(|| EngineError::Run(err.message()))?;
        Ok(Self {
            raw,
            _engine: engine,
        })
    }

    pub fn set_input_shape(&mut self, name: &CStr, shape: &[i64]) -> Result<(), EngineError> {
        let dims = ffi::FsTrtDims::from_slice(shape)
            .ok_or_else(|| EngineError::Run(format!("{} dimensions", shape.len())))?;
        // SAFETY: a live context, a NUL-terminated name and dims that outlive the call.
        match unsafe {
            ffi::fs_trt_context_set_input_shape(self.raw.as_ptr(), name.as_ptr(), &dims)
        } {
            0 => Ok(()),
            _ => Err(EngineError::Run(format!(
                "input {} does not accept shape {shape:?} (outside the engine's optimisation \
                 profile)",
                name.to_string_lossy()
            ))),
        }
    }

    /// Points tensor `name` at device memory `address`.
    ///
    /// # Safety
    /// `address` must be device memory of the engine's CUDA context, large enough for the
    /// tensor at the shapes set, and stay valid until every inference enqueued with it is done.
    pub unsafe fn set_address(&mut self, name: &CStr, address: u64) -> Result<(), EngineError> {
        // SAFETY: a live context and a NUL-terminated name; the caller vouches for the address.
        let status = unsafe {
            ffi::fs_trt_context_set_address(
                self.raw.as_ptr(),
                name.as_ptr(),
                address as *mut c_void,
            )
        };
        match status {
            0 => Ok(()),
            _ => Err(EngineError::Run(format!(
                "cannot bind tensor {} (misaligned or unknown)",
                name.to_string_lossy()
            ))),
        }
    }

    /// Enqueues an inference on `stream` (a CUstream).
    ///
    /// # Safety
    /// Every tensor address set must be valid (see [`Self::set_address`]) and `stream` must
    /// belong to the engine's CUDA context.
    pub unsafe fn enqueue(&mut self, stream: *mut c_void) -> Result<(), EngineError> {
        // SAFETY: a live context; the caller vouches for the stream and addresses.
        match unsafe { ffi::fs_trt_context_enqueue(self.raw.as_ptr(), stream) } {
            0 => Ok(()),
            _ => Err(EngineError::Run(
                "enqueueV3 failed (see the TensorRT log)".into(),
            )),
        }
    }
}

impl Drop for ExecutionContext {
    fn drop(&mut self) {
        // SAFETY: a live context, freed once; its engine outlives it (Arc).
        unsafe { ffi::fs_trt_context_free(self.raw.as_ptr()) }
    }
}

/// Parses `onnx` and builds a serialised engine as `options` say. Takes seconds to minutes;
/// TensorRT reports progress through `log`.
pub fn build_from_onnx(
    library: &Arc<Library>,
    options: &BuildOptions,
    onnx: &[u8],
    log: Box<LogFn>,
) -> Result<Vec<u8>, EngineError> {
    if !library.has_onnx_parser() {
        return Err(EngineError::RuntimeMissing(format!(
            "{ONNX_PARSER} was not found beside {}: engines cannot be built from ONNX (give a \
             model-engine-file, or install TensorRT's ONNX parser)",
            library.path().display()
        )));
    }
    let calibration = options
        .int8_calibration_cache
        .as_ref()
        .map(|p| CString::new(p.as_os_str().as_encoded_bytes()))
        .transpose()
        .map_err(|e| EngineError::Run(format!("int8-calib-file: {e}")))?;
    let (min_batch, opt_batch, max_batch) = options.batch_profile();
    let config = ffi::FsTrtBuildConfig {
        builder_flags: options.builder_flags(),
        workspace_bytes: options.workspace_bytes,
        min_batch,
        opt_batch,
        max_batch,
        dla_core: options.dla_core.map_or(-1, |c| c as i32),
        int8_calibration_cache: calibration
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr()),
    };
    let log = Box::new(log);
    let user = &*log as *const Box<LogFn> as *mut c_void;
    let mut err = ErrorBuffer::new();
    let (e, len) = err.ptr();
    // SAFETY: a live library, a config whose strings outlive the call, `onnx.len()` readable
    // bytes and a log callback alive for the call.
    let blob = unsafe {
        ffi::fs_trt_build_onnx(
            library.raw.as_ptr(),
            &config,
            onnx.as_ptr().cast(),
            onnx.len(),
            Some(log_trampoline),
            user,
            e,
            len,
        )
    };
    let blob = NonNull::new(blob).ok_or_else(|| EngineError::Run(err.message()))?;
    // SAFETY: a live blob whose data is `size` readable bytes; copied before it is freed.
    unsafe {
        let data = ffi::fs_trt_blob_data(blob.as_ptr()) as *const u8;
        let bytes = std::slice::from_raw_parts(data, ffi::fs_trt_blob_size(blob.as_ptr())).to_vec();
        ffi::fs_trt_blob_free(blob.as_ptr());
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_print_as_major_minor_patch() {
        assert_eq!(Version(100300).to_string(), "10.3.0");
        assert_eq!(Version(101304).to_string(), "10.13.4");
    }

    #[test]
    fn data_types_follow_the_reference_numbering() {
        assert_eq!(element_type(0), ElementType::F32);
        assert_eq!(element_type(1), ElementType::F16);
        assert_eq!(element_type(2), ElementType::I8);
        assert_eq!(element_type(3), ElementType::I32);
        assert_eq!(element_type(5), ElementType::U8);
        assert_eq!(element_type(8), ElementType::I64);
        assert_eq!(element_type(7), ElementType::Other("bf16"));
    }

    #[test]
    fn missing_tensorrt_is_a_clear_error() {
        // No TensorRT on this machine (or a compile-check build): loading fails and says why.
        let Err(EngineError::RuntimeMissing(message)) = Library::load() else {
            if built_against_sdk() {
                // A machine with TensorRT installed: nothing to check here.
                return;
            }
            panic!("a compile-check build must never load TensorRT");
        };
        assert!(
            message.starts_with("TensorRT is not available"),
            "{message}"
        );
        if built_against_sdk() {
            assert!(message.contains(NVINFER), "{message}");
        } else {
            assert!(message.contains("compile check"), "{message}");
        }
    }

    #[test]
    fn header_version_is_the_one_build_rs_found() {
        let major: i32 = env!("FERROSTREAM_TENSORRT_MAJOR").parse().unwrap();
        assert!(major == 10 || major == 11, "{major}");
        assert_eq!(header_version().0 / 10000, major);
        assert!(NVINFER.ends_with(&format!(".so.{major}")), "{NVINFER}");
    }
}
