// SPDX-License-Identifier: MIT OR Apache-2.0
//! OpenVINO backend (`backend=openvino`), through OpenVINO's C API loaded at run time.
//!
//! Our own thin layer ([`ffi`]) rather than the `openvino` crate: that crate's bindings are
//! generated from one release's headers, and OpenVINO renumbered its element types between
//! releases; the layer here declares the few functions it calls from the 2026 headers and checks
//! the runtime's version when it loads.
//!
//! The library is found through `OPENVINO_DYLIB_PATH`, else where `scripts/install-openvino.sh`
//! puts it (`/usr/local/lib/ferrostream-openvino/` as root, `~/.local/lib/ferrostream-openvino/`
//! otherwise: the C library, the core library, the device plugins and TBB together, as the PyPI
//! wheel ships them), else the system library path (`libopenvino_c.so`). A missing library is
//! an error at element start that says how to install it.
//!
//! The ONNX model is read directly (OpenVINO's ONNX front end), or from memory where its loops
//! are capped ([`crate::onnx::loops`]: OpenVINO cannot stop a running `Loop`). A dynamic batch
//! dimension is fixed to `batch-size`. A stop cancels the runs going on
//! ([`Engine::interrupter`]). Precision follows `network-mode` ([`Precision`]): the CPU's fast
//! reduced precision is BF16 where the CPU has it, else FP16 where the device has it.

mod ffi;
mod requests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::remote::{Health, RemoteCall, RemoteEngine};
use super::{
    ElementType, Engine, EngineDescription, EngineError, InputData, Interrupt, OutputTensor,
    TensorInfo,
};
use ffi::{Api, Compiled, Core, element};
use requests::{Requests, Stop};

/// Environment variable naming the OpenVINO C library to load.
pub const DYLIB_ENV: &str = "OPENVINO_DYLIB_PATH";

/// Where `scripts/install-openvino.sh` installs the runtime, below its prefix.
const INSTALL_DIR: &str = "lib/ferrostream-openvino";

/// The loaded runtime, shared by every engine of the process.
static API: OnceLock<Api> = OnceLock::new();
/// Serialises loading (a failed load is tried again at the next start).
static LOADING: Mutex<()> = Mutex::new(());

/// Library locations to try, in order.
fn library_candidates() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os(DYLIB_ENV).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let mut dirs = vec![PathBuf::from("/usr/local").join(INSTALL_DIR)];
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".local").join(INSTALL_DIR));
    }
    let mut candidates: Vec<PathBuf> = dirs.iter().filter_map(|d| c_library_in(d)).collect();
    candidates.push(PathBuf::from("libopenvino_c.so"));
    candidates
}

/// The C library in `dir`: `libopenvino_c.so`, else the newest `libopenvino_c.so.N` (the wheel
/// ships only the versioned name).
fn c_library_in(dir: &Path) -> Option<PathBuf> {
    let plain = dir.join("libopenvino_c.so");
    if plain.is_file() {
        return Some(plain);
    }
    let mut versioned: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libopenvino_c.so."))
        })
        .collect();
    versioned.sort();
    versioned.pop()
}

/// Loads OpenVINO once per process.
pub fn runtime() -> Result<&'static Api, EngineError> {
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let _guard = LOADING.lock().unwrap();
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let mut failures = Vec::new();
    for candidate in library_candidates() {
        match Api::load(&candidate) {
            Ok(api) => return Ok(API.get_or_init(|| api)),
            Err(e) => failures.push(format!("{}: {e}", candidate.display())),
        }
    }
    Err(EngineError::RuntimeMissing(format!(
        "OpenVINO runtime not found or unusable ({}). Install it with scripts/install-openvino.sh \
         or point {DYLIB_ENV} at libopenvino_c.so (OpenVINO 2026)",
        failures.join("; ")
    )))
}

/// The reduced precision `device` computes natively (`bf16`, else `f16`), or why it has none
/// (the runtime is missing, the device unknown, or its arithmetic FP32 and INT8 only).
pub fn native_reduced_precision(device: &str) -> Result<&'static str, String> {
    let api = runtime().map_err(|e| e.to_string())?;
    let core = Core::new(api)?;
    let capabilities = core
        .device_property(device, "OPTIMIZATION_CAPABILITIES")
        .map_err(|e| format!("OpenVINO device {device}: {e}"))?;
    match choose_precision(Precision::Reduced, device, &capabilities, false) {
        PrecisionChoice {
            runs,
            warning: None,
            ..
        } => Ok(runs),
        PrecisionChoice {
            warning: Some(why), ..
        } => Err(why),
    }
}

/// The precision the model runs at, from `network-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// `network-mode=0`: FP32 arithmetic (`INFERENCE_PRECISION_HINT=f32`).
    F32,
    /// `network-mode=2`: the device's fast reduced precision.
    Reduced,
    /// `network-mode=1`: INT8, for models quantised with Q/DQ nodes.
    Int8,
}

/// Options for opening a model.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVinoOptions {
    pub model: PathBuf,
    /// `CPU`, `GPU`, `NPU`, `AUTO`, ...
    pub device: String,
    pub precision: Precision,
    /// The batch a dynamic batch dimension is fixed to.
    pub batch: usize,
    /// Inference threads; 0 lets OpenVINO decide.
    pub threads: usize,
    /// The infer requests to compile for ([`Engine::keep_in_flight`]): 1 for one batch at a
    /// time, more for batches in flight. Compiling is what takes long (minutes for a model of
    /// thousands of nodes in a chain), so a caller that will keep batches in flight says so here
    /// and the model is compiled once.
    pub requests: usize,
}

/// What [`choose_precision`] decided: the hint to pass and, when the request could not be
/// honoured as asked, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrecisionChoice {
    /// `INFERENCE_PRECISION_HINT` value, or `None` to leave the device's default.
    pub hint: Option<&'static str>,
    /// What runs, for the log: `f32`, `bf16`, `f16`, `int8 (Q/DQ)`.
    pub runs: &'static str,
    pub warning: Option<String>,
}

/// The precision hint for `precision` on a device whose `OPTIMIZATION_CAPABILITIES` are
/// `capabilities` (tokens such as `FP32 BF16 FP16 INT8`), for a model that `quantised` (has
/// Q/DQ nodes) or not.
pub fn choose_precision(
    precision: Precision,
    device: &str,
    capabilities: &str,
    quantised: bool,
) -> PrecisionChoice {
    let has = |t: &str| capabilities.split_whitespace().any(|c| c == t);
    let reduced = || {
        if has("BF16") {
            PrecisionChoice {
                hint: Some("bf16"),
                runs: "bf16",
                warning: None,
            }
        } else if has("FP16") {
            PrecisionChoice {
                hint: Some("f16"),
                runs: "f16",
                warning: None,
            }
        } else {
            PrecisionChoice {
                hint: Some("f32"),
                runs: "f32",
                warning: Some(format!(
                    "network-mode=2: {device} has neither BF16 nor FP16 arithmetic \
                     (OPTIMIZATION_CAPABILITIES: {capabilities}); running in FP32"
                )),
            }
        }
    };
    match precision {
        Precision::F32 => PrecisionChoice {
            hint: Some("f32"),
            runs: "f32",
            warning: None,
        },
        Precision::Reduced => reduced(),
        // The quantised layers run in INT8 whatever the hint; the rest as the device prefers.
        Precision::Int8 if quantised && has("INT8") => PrecisionChoice {
            hint: None,
            runs: "int8 (Q/DQ)",
            warning: None,
        },
        Precision::Int8 => {
            let why = if quantised {
                format!("{device} has no INT8 arithmetic")
            } else {
                "the model has no QuantizeLinear/DequantizeLinear nodes (quantise it first)"
                    .to_string()
            };
            let mut fallback = reduced();
            fallback.warning = Some(format!(
                "network-mode=1: {why}; running in {} instead{}",
                fallback.runs,
                fallback
                    .warning
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            ));
            fallback
        }
    }
}

fn element_type(code: u32) -> ElementType {
    match code {
        element::F32 => ElementType::F32,
        element::F16 => ElementType::F16,
        element::U8 => ElementType::U8,
        element::I8 => ElementType::I8,
        element::I32 => ElementType::I32,
        element::I64 => ElementType::I64,
        element::BF16 => ElementType::Other("bf16"),
        _ => ElementType::Other("an OpenVINO type Ferrostream does not read"),
    }
}

fn element_code(ty: ElementType) -> Option<u32> {
    Some(match ty {
        ElementType::F32 => element::F32,
        ElementType::F16 => element::F16,
        ElementType::U8 => element::U8,
        _ => return None,
    })
}

/// One compiled model and its infer request.
pub struct OpenVinoEngine {
    description: EngineDescription,
    /// The precision that runs, for the log (`f32`, `bf16`, ...).
    precision: &'static str,
    device: String,
    /// The compile properties but the performance hint.
    properties: Vec<(&'static str, String)>,
    /// The `Loop` nodes capped at [`crate::onnx::check::MAX_LOOP_TRIPS`] trips.
    capped_loops: Vec<String>,
    /// Ends runs from another thread ([`Engine::interrupter`]), whichever requests are current.
    stop: Arc<Stop>,
    // Dropped in this order: the compiled model (after its requests' runs end), the model, the
    // core.
    prepared: Prepared,
    model: ffi::Model<'static>,
    core: Core<'static>,
}

/// The model compiled for some requests at once, and its requests.
struct Prepared {
    // Dropped first: the requests belong to the compiled model.
    requests: Requests,
    _compiled: Compiled<'static>,
}

impl OpenVinoEngine {
    /// Compiles the model for `requests` infer requests (OpenVINO's latency mode for one, its
    /// throughput mode for more), whose runs `stop` ends.
    fn prepare(
        core: &Core<'static>,
        model: &ffi::Model<'static>,
        device: &str,
        properties: &[(&'static str, String)],
        requests: usize,
        outputs: &[TensorInfo],
        stop: &Arc<Stop>,
    ) -> Result<Prepared, EngineError> {
        let mut all = properties.to_vec();
        if requests > 1 {
            all.push(("PERFORMANCE_HINT", "THROUGHPUT".to_string()));
            all.push(("PERFORMANCE_HINT_NUM_REQUESTS", requests.to_string()));
        } else {
            all.push(("PERFORMANCE_HINT", "LATENCY".to_string()));
        }
        let compiled = core
            .compile(model, device, &all)
            .map_err(|e| EngineError::ProviderUnavailable(format!("OpenVINO: {e}")))?;
        let made = (0..requests)
            .map(|_| compiled.request())
            .collect::<Result<Vec<_>, _>>()
            .map_err(EngineError::Run)?;
        Ok(Prepared {
            requests: Requests::new(made, outputs.to_vec(), stop.clone())?,
            _compiled: compiled,
        })
    }
}

// SAFETY: OpenVINO's core, compiled model and requests may be used from any thread; the engine
// is used by one thread at a time (`&mut self`), and the raw pointers it holds are owned by it.
unsafe impl Send for OpenVinoEngine {}

impl OpenVinoEngine {
    pub fn open(options: &OpenVinoOptions) -> Result<(Self, Option<String>), EngineError> {
        let api = runtime()?;
        let model_err = |reason: String| EngineError::Model {
            path: options.model.display().to_string(),
            reason,
        };
        let core = Core::new(api).map_err(EngineError::RuntimeMissing)?;
        // OpenVINO's CPU plugin looks for a cancel between nodes only: a Loop running for ever
        // could not be stopped, so loops without a small constant trip count are capped.
        let bytes = ferrostream_core::files::read(
            &options.model,
            ferrostream_core::files::MAX_MODEL_FILE_BYTES,
        )
        .map_err(|e| model_err(e.to_string()))?;
        let (model, capped_loops) =
            match crate::onnx::loops::cap_trip_counts(&bytes).map_err(model_err)? {
                Some(capped) => (core.read_model_from_memory(&capped.bytes), capped.loops),
                None => (core.read_model(&options.model), Vec::new()),
            };
        drop(bytes);
        let model = model.map_err(model_err)?;
        let (inputs, outputs) = model.ports().map_err(model_err)?;
        let [input] = &inputs[..] else {
            return Err(model_err(format!(
                "{} inputs; Ferrostream feeds models with one image input",
                inputs.len()
            )));
        };
        let mut input = input.clone();
        if input.dims.first() == Some(&None) {
            input.dims[0] = Some(options.batch.max(1));
            model.reshape_input(&input.dims).map_err(model_err)?;
        }
        let capabilities = core
            .device_property(&options.device, "OPTIMIZATION_CAPABILITIES")
            .map_err(|e| {
                EngineError::ProviderUnavailable(format!("OpenVINO device {}: {e}", options.device))
            })?;
        let quantised = options.precision == Precision::Int8
            && std::fs::File::open(&options.model)
                .and_then(crate::onnx::has_qdq_nodes)
                .map_err(|e| model_err(format!("{}: {e}", options.model.display())))?;
        let choice = choose_precision(options.precision, &options.device, &capabilities, quantised);
        let mut properties = Vec::new();
        if let Some(hint) = choice.hint {
            properties.push(("INFERENCE_PRECISION_HINT", hint.to_string()));
        }
        if options.threads > 0 {
            properties.push(("INFERENCE_NUM_THREADS", options.threads.to_string()));
        }
        let info = |p: &ffi::PortInfo| TensorInfo {
            name: p.name.clone(),
            element_type: element_type(p.element_type),
            dims: p.dims.clone(),
        };
        let description = EngineDescription {
            backend: "openvino",
            // The device and the arithmetic that runs on it, e.g. `CPU (bf16)`.
            providers: vec![format!("{} ({})", options.device, choice.runs)],
            version: api.version().to_string(),
            input: info(&input),
            outputs: outputs.iter().map(info).collect(),
        };
        if element_code(description.input.element_type).is_none() {
            return Err(model_err(format!(
                "input {}: Ferrostream feeds f32, f16 or u8 tensors",
                description.input
            )));
        }
        let stop = Arc::new(Stop::default());
        let prepared = Self::prepare(
            &core,
            &model,
            &options.device,
            &properties,
            options.requests.max(1),
            &description.outputs,
            &stop,
        )?;
        Ok((
            Self {
                description,
                precision: choice.runs,
                device: options.device.clone(),
                properties,
                capped_loops,
                stop,
                prepared,
                model,
                core,
            },
            choice.warning,
        ))
    }

    /// The precision that runs: `f32`, `bf16`, `f16` or `int8 (Q/DQ)`.
    pub fn precision(&self) -> &'static str {
        self.precision
    }

    /// The `Loop` nodes whose trips were capped ([`crate::onnx::loops`]), for the log.
    pub fn capped_loops(&self) -> &[String] {
        &self.capped_loops
    }
}

impl Engine for OpenVinoEngine {
    fn description(&self) -> &EngineDescription {
        &self.description
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        self.prepared.requests.run(input, shape, outputs)
    }

    fn remote(&mut self) -> Option<&mut dyn RemoteEngine> {
        (self.prepared.requests.len() > 1).then_some(self as &mut dyn RemoteEngine)
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        Some(self.stop.clone())
    }

    /// Compiles the model again only for another number of requests than it was compiled for
    /// ([`OpenVinoOptions::requests`]).
    fn keep_in_flight(&mut self, requests: usize) -> Result<bool, EngineError> {
        let requests = requests.max(1);
        if requests != self.prepared.requests.len() {
            self.prepared = Self::prepare(
                &self.core,
                &self.model,
                &self.device,
                &self.properties,
                requests,
                &self.description.outputs,
                &self.stop,
            )?;
        }
        Ok(requests > 1)
    }
}

/// With several requests, batches go in without waiting, as to an inference server (but no
/// server: no outages, no server-failure policy).
impl RemoteEngine for OpenVinoEngine {
    fn submit(&mut self, input: InputData<'_>, shape: &[usize]) -> Result<RemoteCall, EngineError> {
        self.prepared.requests.submit(input, shape)
    }

    fn health(&self) -> &Arc<Health> {
        self.prepared.requests.health()
    }

    fn server(&self) -> &str {
        &self.device
    }

    fn is_server(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduced_precision_is_bf16_then_f16_then_f32_with_a_warning() {
        let amd = "FP32 BF16 INT8 BIN EXPORT_IMPORT";
        let gpu = "FP32 FP16 INT8 BIN";
        let old = "FP32 INT8 BIN";
        let c = choose_precision(Precision::Reduced, "CPU", amd, false);
        assert_eq!((c.hint, c.warning), (Some("bf16"), None));
        let c = choose_precision(Precision::Reduced, "GPU", gpu, false);
        assert_eq!((c.hint, c.warning), (Some("f16"), None));
        let c = choose_precision(Precision::Reduced, "CPU", old, false);
        assert_eq!(c.hint, Some("f32"));
        assert!(c.warning.unwrap().contains("neither BF16 nor FP16"));
        let c = choose_precision(Precision::F32, "CPU", amd, false);
        assert_eq!((c.hint, c.warning), (Some("f32"), None));
    }

    #[test]
    fn int8_needs_a_quantised_model() {
        let caps = "FP32 BF16 INT8";
        let c = choose_precision(Precision::Int8, "CPU", caps, true);
        assert_eq!((c.hint, c.runs, c.warning), (None, "int8 (Q/DQ)", None));
        let c = choose_precision(Precision::Int8, "CPU", caps, false);
        assert_eq!(c.hint, Some("bf16"));
        let w = c.warning.unwrap();
        assert!(
            w.contains("network-mode=1") && w.contains("QuantizeLinear"),
            "{w}"
        );
    }

    #[test]
    fn a_library_that_cannot_load_is_named() {
        let err = Api::load(Path::new("/nonexistent/libopenvino_c.so"))
            .err()
            .unwrap();
        assert!(err.contains("/nonexistent/libopenvino_c.so"), "{err}");
    }
}
