// SPDX-License-Identifier: MIT OR Apache-2.0
//! ONNX Runtime backend, loaded at run time (no build-time download, no link-time dependency).
//!
//! The library is found through `ORT_DYLIB_PATH`, else the system library path
//! (`libonnxruntime.so`, where `scripts/install-onnxruntime.sh` puts it), else
//! `~/.local/lib/libonnxruntime.so`. A missing library is an error at element start, naming every
//! location tried.

#[cfg(feature = "cuda")]
mod device;
pub mod precision;
#[cfg(feature = "cuda")]
pub mod tuning;

mod cuda_settings;
pub use cuda_settings::CudaSettings;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ort::ep::{self, ExecutionProvider};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{RunOptions, Session, SessionInputValue};
use ort::value::{DynValue, TensorElementType, TensorRef, ValueType};

use super::{
    ElementType, Engine, EngineDescription, EngineError, InputData, Interrupt, OutputTensor,
    TensorInfo,
};
use crate::config::{CudaGraphMode, Device, NetworkMode};

/// Environment variable naming the ONNX Runtime library to load.
pub const DYLIB_ENV: &str = "ORT_DYLIB_PATH";

/// The session option naming the folder external data is read from when the model is given in
/// memory (`kOrtSessionOptionsModelExternalInitializersFileFolderPath`).
const EXTERNAL_DATA_FOLDER: &str = "session.model_external_initializers_file_folder_path";

/// The loaded runtime, shared by every session of the process.
static ENVIRONMENT: Mutex<Option<ort::environment::Environment>> = Mutex::new(None);
/// The loaded runtime's version, as the library reports it.
static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Library locations to try, in order.
fn library_candidates() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os(DYLIB_ENV).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let mut candidates = vec![
        PathBuf::from("libonnxruntime.so"),
        PathBuf::from("libonnxruntime.so.1"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".local/lib/libonnxruntime.so"));
    }
    candidates
}

/// Loads ONNX Runtime once per process and returns its environment.
pub fn environment() -> Result<ort::environment::Environment, EngineError> {
    let mut guard = ENVIRONMENT.lock().unwrap();
    if let Some(env) = guard.as_ref() {
        return Ok(env.clone());
    }
    let mut failures = Vec::new();
    let mut builder = None;
    for candidate in library_candidates() {
        match ort::init_from(&candidate) {
            Ok(b) => {
                builder = Some(b);
                if let Some(version) = library_version(&candidate) {
                    let _ = VERSION.set(version);
                }
                break;
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    let Some(builder) = builder else {
        return Err(EngineError::RuntimeMissing(format!(
            "ONNX Runtime library not found or unusable ({}). Install it with \
             scripts/install-onnxruntime.sh or point {DYLIB_ENV} at libonnxruntime.so (1.20 or newer)",
            failures.join("; ")
        )));
    };
    let env = builder.with_name("ferrostream").build().map_err(|e| {
        EngineError::RuntimeMissing(format!("creating the ONNX Runtime environment: {e}"))
    })?;
    *guard = Some(env.clone());
    Ok(env)
}

/// Whether the installed ONNX Runtime has its CUDA execution provider (false where it cannot
/// be loaded).
pub fn has_cuda_provider() -> bool {
    environment().is_ok() && ep::CUDA::is_available().unwrap_or(false)
}

/// The version the ONNX Runtime library at `path` reports (`OrtGetApiBase()->GetVersionString()`,
/// e.g. `1.31.1`): builds such as PyPI's name no release branch in their build information.
fn library_version(path: &std::path::Path) -> Option<String> {
    type GetApiBase = unsafe extern "C" fn() -> *const ort::sys::OrtApiBase;
    // SAFETY: ort has just loaded this library, so opening it again returns the same handle;
    // `OrtGetApiBase` has the signature ort-sys declares and returns a pointer to a static
    // table whose `GetVersionString` returns a static NUL-terminated string, copied before the
    // handle is dropped.
    unsafe {
        let library = libloading::Library::new(path).ok()?;
        let get_base = library.get::<GetApiBase>(b"OrtGetApiBase").ok()?;
        let base = get_base();
        if base.is_null() {
            return None;
        }
        let version = ((*base).GetVersionString)();
        (!version.is_null()).then(|| {
            std::ffi::CStr::from_ptr(version)
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// Version of the loaded runtime (after [`environment`] succeeded).
pub fn runtime_version() -> String {
    if let Some(version) = VERSION.get() {
        return version.clone();
    }
    let info = ort::info();
    // "ORT Build Info: git-branch=rel-1.31.1, git-commit-id=..., build type=Release, ..."
    info.split(',')
        .find_map(|part| part.trim().strip_prefix("ORT Build Info: git-branch=rel-"))
        .map(str::to_owned)
        .unwrap_or_else(|| info.to_owned())
}

/// Options for opening a model.
#[derive(Debug, Clone, PartialEq)]
pub struct OrtOptions {
    pub model: PathBuf,
    pub device: Device,
    pub gpu_id: u32,
    /// Intra-op threads; 0 lets ONNX Runtime decide.
    pub threads: usize,
    /// Run the TensorRT execution provider's engines on this DLA core, at this precision
    /// (`trt_dla_enable`, `trt_dla_core`, `trt_fp16_enable` / `trt_int8_enable`).
    pub dla: Option<DlaOptions>,
    /// Priority of the CUDA stream the CUDA provider runs on (CUDA convention: 0 default, lower
    /// is more urgent).
    pub stream_priority: i32,
    /// The arithmetic `network-mode` asks for; how each provider honours it: [`precision`].
    pub precision: NetworkMode,
    /// Whether the CUDA provider's run is captured as a CUDA graph, replayed for each batch of
    /// `batch`: the model must run entirely on the CUDA provider, at one input shape.
    pub cuda_graph: CudaGraphMode,
    /// Choose the CUDA provider's settings by timing the model at `batch` ([`tuning`]).
    pub cuda_tuning: bool,
    /// The batch size runs have (captured graphs and tuning use exactly this one).
    pub batch: usize,
    /// Where FP16 conversions and tuning records are kept (`engine-cache-dir`).
    pub cache_dir: PathBuf,
}

impl OrtOptions {
    /// `model` on `device` in FP32 at batch 1, everything else default.
    pub fn new(model: impl Into<PathBuf>, device: Device) -> Self {
        Self {
            model: model.into(),
            device,
            gpu_id: 0,
            threads: 0,
            dla: None,
            stream_priority: 0,
            precision: NetworkMode::Fp32,
            cuda_graph: CudaGraphMode::Off,
            cuda_tuning: false,
            batch: 1,
            cache_dir: crate::cache::default_dir(),
        }
    }
}

/// The TensorRT execution provider's DLA settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DlaOptions {
    pub core: u32,
    pub int8: bool,
}

/// Something opening the engine decided that its user should hear of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// A warning (the request was not honoured as asked), else information.
    pub warning: bool,
    pub text: String,
}

impl Note {
    pub fn info(text: impl Into<String>) -> Self {
        Self {
            warning: false,
            text: text.into(),
        }
    }

    pub fn warning(text: impl Into<String>) -> Self {
        Self {
            warning: true,
            text: text.into(),
        }
    }
}

pub struct OrtEngine {
    /// Device-resident I/O, when the CUDA provider runs the model (its ONNX Runtime objects
    /// dropped before the session, its stream and context after: see `Drop`).
    #[cfg(feature = "cuda")]
    cuda: Option<device::CudaIo>,
    /// Dropped by hand (see `Drop`): not at all when its CUDA context was lost.
    session: std::mem::ManuallyDrop<Session>,
    description: EngineDescription,
    notes: Vec<Note>,
    /// Whether the run is a captured CUDA graph.
    graph: bool,
    /// The options of host runs, and what ends them and the device side's from another thread.
    run_options: Arc<RunOptions>,
    interrupter: Arc<Terminate>,
}

/// Sets the terminate flag of a session's run options: ONNX Runtime checks it between nodes
/// (and between the trips of a `Loop`), so a run ends within a node's time.
struct Terminate(Vec<Arc<RunOptions>>);

impl Interrupt for Terminate {
    fn interrupt(&self, interrupted: bool) {
        for options in &self.0 {
            // Setting a flag of valid options cannot fail.
            let _ = if interrupted {
                options.terminate()
            } else {
                options.unterminate()
            };
        }
    }
}

impl Drop for OrtEngine {
    fn drop(&mut self) {
        // A session of the CUDA provider whose context was lost (reset under it) is leaked with
        // its device side: its teardown (cuBLAS and cuDNN handles, events, memory) would destroy
        // handles of the dead context, which the driver does not survive.
        #[cfg(feature = "cuda")]
        if let Some(cuda) = self.cuda.take() {
            if cuda.context.lost() {
                std::mem::forget(cuda);
                return;
            }
            // The binding and values go first, then the session, and only then the stream it
            // runs on and our reference to the primary context: releasing the last reference
            // destroys the context, and a session torn down after that frees its pinned host
            // memory into a destroyed context (cudaFreeHost fails, ONNX Runtime aborts).
            let (stream, context) = cuda.into_stream_and_context();
            // SAFETY: dropped once, here, and never used again.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.session) };
            drop(stream);
            drop(context);
            return;
        }
        // SAFETY: dropped once, here, and never used again.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.session) };
    }
}

/// The execution provider that runs a model's nodes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstProvider {
    TensorRt,
    Cuda,
    Cpu,
}

impl OrtEngine {
    pub fn open(options: &OrtOptions) -> Result<Self, EngineError> {
        environment()?;
        let bytes = ferrostream_core::files::read(
            &options.model,
            ferrostream_core::files::MAX_MODEL_FILE_BYTES,
        )
        .map_err(|e| EngineError::Model {
            path: options.model.display().to_string(),
            reason: e.to_string(),
        })?;
        let first = first_provider(options)?;
        let model = precision::model_at_precision(options, first, bytes);
        let mut engine = match first {
            #[cfg(feature = "cuda")]
            FirstProvider::Cuda => tuning::open_tuned(options, &model)?,
            _ => Self::open_with(options, &model, &CudaSettings::default())?,
        };
        let mut notes = model.notes.clone();
        notes.append(&mut engine.notes);
        engine.notes = notes;
        Ok(engine)
    }

    /// What opening decided that the user should hear of (precision, CUDA settings).
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// Whether runs replay a captured CUDA graph (`cuda-graph`).
    pub fn graph(&self) -> bool {
        self.graph
    }

    /// Opens `model` with the CUDA provider (where it runs first) set as `settings` say.
    pub(crate) fn open_with(
        options: &OrtOptions,
        model: &precision::ModelAtPrecision,
        settings: &CudaSettings,
    ) -> Result<Self, EngineError> {
        let env = environment()?;
        let model_error = |reason: String| EngineError::Model {
            path: options.model.display().to_string(),
            reason,
        };
        // The model goes in from memory, so ONNX Runtime does not know its file: external data
        // is found beside the model file, as the ONNX specification says (not in the working
        // directory). Where it may be was checked before (`onnx::check`).
        let folder = match options.model.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut builder = Session::builder(&env)
            .and_then(|b| {
                b.with_optimization_level(GraphOptimizationLevel::All)
                    .map_err(Into::into)
            })
            .and_then(|b| {
                b.with_config_entry(EXTERNAL_DATA_FOLDER, folder.to_string_lossy())
                    .map_err(Into::into)
            })
            .map_err(|e| model_error(e.to_string()))?;
        if options.threads > 0 {
            builder = builder
                .with_intra_threads(options.threads)
                .map_err(|e| model_error(e.to_string()))?;
        }
        let (providers, cuda_stream) = register_providers(&mut builder, options, settings, model)?;
        let session = builder
            .commit_from_memory(&model.bytes)
            .map_err(|e| model_error(e.to_string()))?;

        let [input] = session.inputs() else {
            return Err(model_error(format!(
                "expected exactly one input, the model has {} ({})",
                session.inputs().len(),
                session
                    .inputs()
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let mut input = tensor_info(input.name(), input.dtype()).map_err(model_error)?;
        let graph = settings.graph && cuda_stream.is_some();
        if graph {
            // Every run has the captured shape: the batch is fixed.
            if let Some(b) = input.dims.first_mut() {
                *b = Some(options.batch.max(1));
            }
        }
        let outputs = session
            .outputs()
            .iter()
            .map(|o| tensor_info(o.name(), o.dtype()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(model_error)?;
        #[cfg(feature = "cuda")]
        let cuda = cuda_stream
            .map(|(context, stream)| {
                device::CudaIo::new(
                    &session,
                    context,
                    stream,
                    &input.name,
                    input.element_type,
                    outputs.iter().map(|o| o.name.clone()).collect(),
                    graph,
                )
            })
            .transpose()?;
        #[cfg(not(feature = "cuda"))]
        let _ = cuda_stream;
        let run_options =
            Arc::new(RunOptions::new().map_err(|e| EngineError::Run(format!("run options: {e}")))?);
        #[cfg(feature = "cuda")]
        let device_options = cuda.as_ref().map(|c| c.run_options().clone());
        #[cfg(not(feature = "cuda"))]
        let device_options = None;
        let terminate = std::iter::once(run_options.clone())
            .chain(device_options)
            .collect();
        let mut providers = providers;
        // The first provider names the arithmetic it runs, and a captured graph.
        let mut traits: Vec<&str> = Vec::new();
        if model.label != "fp32" {
            traits.push(model.label);
        }
        if graph {
            traits.push("graph");
        }
        if let Some(first) = providers.first_mut()
            && !traits.is_empty()
        {
            *first = format!("{first} ({})", traits.join(", "));
        }
        let description = EngineDescription {
            backend: "onnxruntime",
            providers,
            version: runtime_version(),
            input,
            outputs,
        };
        Ok(Self {
            #[cfg(feature = "cuda")]
            cuda,
            session: std::mem::ManuallyDrop::new(session),
            description,
            notes: Vec::new(),
            graph,
            run_options,
            interrupter: Arc::new(Terminate(terminate)),
        })
    }
}

/// Which provider runs the model's nodes first: the one `device` names (an error when the
/// installed runtime lacks it), or under `device=auto` the first of TensorRT, CUDA and the CPU
/// whose provider registers here (a TensorRT provider built in without TensorRT installed does
/// not). [`register_providers`] registers exactly this one first.
fn first_provider(options: &OrtOptions) -> Result<FirstProvider, EngineError> {
    let available = |name: &str, present: ort::Result<bool>| -> Result<bool, EngineError> {
        present.map_err(|e| {
            EngineError::ProviderUnavailable(format!("querying the {name} provider: {e}"))
        })
    };
    let missing = |name: &str| {
        EngineError::ProviderUnavailable(format!(
            "the installed ONNX Runtime {} has no {name} execution provider (it was built without \
             it); install a GPU build of ONNX Runtime or use device=cpu",
            runtime_version()
        ))
    };
    match options.device {
        Device::Cpu => Ok(FirstProvider::Cpu),
        Device::Cuda if available("CUDA", ep::CUDA::is_available())? => Ok(FirstProvider::Cuda),
        Device::Cuda => Err(missing("CUDA")),
        Device::TensorRt if available("TensorRT", ep::TensorRT::is_available())? => {
            Ok(FirstProvider::TensorRt)
        }
        Device::TensorRt => Err(missing("TensorRT")),
        Device::Auto => {
            let env = environment()?;
            let registers =
                |register: &dyn Fn(&mut ort::session::builder::SessionBuilder) -> bool| {
                    Session::builder(&env).is_ok_and(|mut builder| register(&mut builder))
                };
            let gpu = options.gpu_id as i32;
            if available("TensorRT", ep::TensorRT::is_available())?
                && registers(&|b| tensorrt_provider(options, "fp32").0.register(b).is_ok())
            {
                Ok(FirstProvider::TensorRt)
            } else if available("CUDA", ep::CUDA::is_available())?
                && registers(&|b| ep::CUDA::default().with_device_id(gpu).register(b).is_ok())
            {
                Ok(FirstProvider::Cuda)
            } else {
                Ok(FirstProvider::Cpu)
            }
        }
    }
}

/// The TensorRT provider of `options` at `precision`, and its name.
fn tensorrt_provider(options: &OrtOptions, precision: &str) -> (ep::TensorRT, String) {
    // TensorRT builds its engines at the precision asked for (FP16 kernels where they are
    // faster; INT8 for models with Q/DQ nodes).
    let trt = ep::TensorRT::default()
        .with_device_id(options.gpu_id as i32)
        .with_fp16(precision != "fp32")
        .with_int8(precision == "int8");
    match options.dla {
        Some(dla) => (
            trt.with_dla(true)
                .with_dla_core(dla.core)
                .with_fp16(true)
                .with_int8(dla.int8),
            format!("TensorRT (DLA{})", dla.core),
        ),
        None => (trt, "TensorRT".to_string()),
    }
}

/// The primary context of the GPU the CUDA provider runs on, and the stream it runs on.
#[cfg(feature = "cuda")]
type CudaStream = (
    std::sync::Arc<ferrostream_core::cuda::Context>,
    std::sync::Arc<ferrostream_core::cuda::Stream>,
);
#[cfg(not(feature = "cuda"))]
type CudaStream = ();

/// The CUDA provider of `options` set as `settings` say, on a stream of its own when this build
/// has the CUDA layer: the engine's device side then queues pre-processing, the run and output
/// decoding on it.
fn cuda_provider(
    options: &OrtOptions,
    settings: &CudaSettings,
) -> Result<(ep::CUDA, Option<CudaStream>), EngineError> {
    let cuda = settings.apply(ep::CUDA::default().with_device_id(options.gpu_id as i32));
    #[cfg(feature = "cuda")]
    {
        use ferrostream_core::cuda::{Context, Stream};
        let cuda_error = |e: ferrostream_core::cuda::CudaError| {
            EngineError::ProviderUnavailable(format!(
                "the CUDA execution provider needs GPU {}: {e}",
                options.gpu_id
            ))
        };
        let context = Context::primary_for_runtime(options.gpu_id).map_err(cuda_error)?;
        let stream = std::sync::Arc::new(
            Stream::new(&context, options.stream_priority).map_err(cuda_error)?,
        );
        // SAFETY: the stream is kept by the engine's device side, which `OrtEngine`'s `Drop`
        // releases after the session, so it outlives every use by the provider.
        let cuda = unsafe { cuda.with_compute_stream(stream.raw().cast()) };
        Ok((cuda, Some((context, stream))))
    }
    #[cfg(not(feature = "cuda"))]
    Ok((cuda, None))
}

/// Registers `first` (see [`first_provider`]) and the providers behind it, and returns their
/// names in priority order, and the CUDA provider's context and stream when it comes first (then
/// the engine has a device side).
fn register_providers(
    builder: &mut ort::session::builder::SessionBuilder,
    options: &OrtOptions,
    settings: &CudaSettings,
    model: &precision::ModelAtPrecision,
) -> Result<(Vec<String>, Option<CudaStream>), EngineError> {
    let gpu_id = options.gpu_id;
    let failed = |name: &str, e: ort::Error| {
        EngineError::ProviderUnavailable(format!(
            "the {name} execution provider could not be enabled on GPU {gpu_id}: {e}"
        ))
    };
    let mut providers = Vec::new();
    let mut cuda_stream = None;
    match model.provider {
        FirstProvider::Cpu => {}
        FirstProvider::Cuda => {
            let (cuda, stream) = cuda_provider(options, settings)?;
            cuda.register(builder).map_err(|e| failed("CUDA", e))?;
            providers.push("CUDA".to_string());
            cuda_stream = stream;
        }
        FirstProvider::TensorRt => {
            let (trt, name) = tensorrt_provider(options, model.label);
            trt.register(builder).map_err(|e| failed("TensorRT", e))?;
            providers.push(name);
            // Nodes TensorRT cannot take run on CUDA (with ONNX Runtime's own stream) rather
            // than the CPU.
            let cuda = ep::CUDA::default().with_device_id(gpu_id as i32);
            if ep::CUDA::is_available().unwrap_or(false) && cuda.register(builder).is_ok() {
                providers.push("CUDA".to_string());
            }
        }
    }
    providers.push("CPU".to_string());
    Ok((providers, cuda_stream))
}

pub(crate) fn element_type(ty: TensorElementType) -> ElementType {
    match ty {
        TensorElementType::Float32 => ElementType::F32,
        TensorElementType::Float16 => ElementType::F16,
        TensorElementType::Uint8 => ElementType::U8,
        TensorElementType::Int8 => ElementType::I8,
        TensorElementType::Int32 => ElementType::I32,
        TensorElementType::Int64 => ElementType::I64,
        TensorElementType::Float64 => ElementType::Other("f64"),
        TensorElementType::Bool => ElementType::Other("bool"),
        TensorElementType::String => ElementType::Other("string"),
        _ => ElementType::Other("other"),
    }
}

fn tensor_info(name: &str, dtype: &ValueType) -> Result<TensorInfo, String> {
    let ValueType::Tensor { ty, shape, .. } = dtype else {
        return Err(format!("`{name}` is not a tensor ({dtype:?})"));
    };
    Ok(TensorInfo {
        name: name.to_owned(),
        element_type: element_type(*ty),
        dims: shape
            .iter()
            .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
            .collect(),
    })
}

/// Copies an output value into `out` as f32.
fn copy_output(value: &DynValue, out: &mut OutputTensor) -> Result<(), String> {
    macro_rules! convert {
        ($t:ty, $f:expr) => {{
            let (shape, data) = value
                .try_extract_tensor::<$t>()
                .map_err(|e| e.to_string())?;
            out.shape.clear();
            out.shape.extend(shape.iter().map(|&d| d.max(0) as usize));
            out.data.clear();
            out.data.extend(data.iter().map($f));
        }};
    }
    let ValueType::Tensor { ty, .. } = value.dtype() else {
        return Err(format!("output `{}` is not a tensor", out.name));
    };
    match ty {
        TensorElementType::Float32 => convert!(f32, |&v| v),
        TensorElementType::Float16 => convert!(half::f16, |v: &half::f16| v.to_f32()),
        TensorElementType::Float64 => convert!(f64, |&v| v as f32),
        TensorElementType::Int64 => convert!(i64, |&v| v as f32),
        TensorElementType::Int32 => convert!(i32, |&v| v as f32),
        TensorElementType::Uint8 => convert!(u8, |&v| v as f32),
        TensorElementType::Int8 => convert!(i8, |&v| v as f32),
        other => {
            return Err(format!(
                "output `{}` has unsupported type {other:?}",
                out.name
            ));
        }
    }
    Ok(())
}

impl Engine for OrtEngine {
    fn description(&self) -> &EngineDescription {
        &self.description
    }

    #[cfg(feature = "cuda")]
    fn device(&mut self) -> Option<&mut dyn crate::engine::DeviceEngine> {
        if self.cuda.is_some() {
            Some(self)
        } else {
            None
        }
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        Some(self.interrupter.clone())
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        let run_error = |e: ort::Error| EngineError::Run(e.to_string());
        let value: SessionInputValue<'_> = match input {
            InputData::F32(data) => TensorRef::from_array_view((shape, data))
                .map_err(run_error)?
                .into(),
            InputData::F16(data) => TensorRef::from_array_view((shape, data))
                .map_err(run_error)?
                .into(),
            InputData::U8(data) => TensorRef::from_array_view((shape, data))
                .map_err(run_error)?
                .into(),
        };
        let results = self
            .session
            .run_with_options([value], &*self.run_options)
            .map_err(run_error)?;
        outputs.resize_with(self.description.outputs.len(), OutputTensor::default);
        for (info, out) in self.description.outputs.iter().zip(outputs.iter_mut()) {
            if out.name != info.name {
                out.name.clone_from(&info.name);
            }
            let value = results
                .get(&info.name)
                .ok_or_else(|| EngineError::Run(format!("output `{}` missing", info.name)))?;
            copy_output(value, out).map_err(EngineError::Run)?;
        }
        Ok(())
    }
}

#[cfg(feature = "cuda")]
impl crate::engine::DeviceEngine for OrtEngine {
    fn context(&self) -> &std::sync::Arc<ferrostream_core::cuda::Context> {
        &self.cuda.as_ref().expect("device side present").context
    }

    fn stream(&self) -> &std::sync::Arc<ferrostream_core::cuda::Stream> {
        &self.cuda.as_ref().expect("device side present").stream
    }

    unsafe fn enqueue(
        &mut self,
        input: u64,
        shape: &[usize],
    ) -> Result<&[crate::engine::DeviceTensor], EngineError> {
        let cuda = self
            .cuda
            .as_mut()
            .ok_or_else(|| EngineError::Run("the session has no CUDA device side".into()))?;
        // SAFETY: the caller's guarantees are `CudaIo::enqueue`'s.
        unsafe { cuda.enqueue(&mut self.session, input, shape) }
    }
}
