//! Inference engines behind one trait.
//!
//! An engine describes its input and outputs and runs one batch: a contiguous input tensor in,
//! every output as f32 into reusable buffers. Backends: ONNX Runtime ([`onnxruntime`]) and,
//! behind the cargo feature `tensorrt`, native TensorRT.

pub mod onnxruntime;
#[cfg(feature = "tensorrt")]
pub mod tensorrt;

use std::fmt;

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    F32,
    F16,
    U8,
    I8,
    I32,
    I64,
    /// Anything else; carries the backend's name for messages.
    Other(&'static str),
}

impl ElementType {
    /// Bytes per element, for the types an input tensor can have.
    pub fn size(self) -> Option<usize> {
        match self {
            ElementType::F32 | ElementType::I32 => Some(4),
            ElementType::F16 => Some(2),
            ElementType::U8 | ElementType::I8 => Some(1),
            ElementType::I64 => Some(8),
            ElementType::Other(_) => None,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElementType::F32 => f.write_str("f32"),
            ElementType::F16 => f.write_str("f16"),
            ElementType::U8 => f.write_str("u8"),
            ElementType::I8 => f.write_str("i8"),
            ElementType::I32 => f.write_str("i32"),
            ElementType::I64 => f.write_str("i64"),
            ElementType::Other(name) => f.write_str(name),
        }
    }
}

/// Name, element type and shape of a model input or output; `None` marks a dynamic dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub element_type: ElementType,
    pub dims: Vec<Option<usize>>,
}

impl fmt::Display for TensorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|d| d.map_or_else(|| "?".to_string(), |d| d.to_string()))
            .collect();
        write!(f, "{} {}[{}]", self.name, self.element_type, dims.join(","))
    }
}

/// A borrowed input tensor.
#[derive(Debug, Clone, Copy)]
pub enum InputData<'a> {
    F32(&'a [f32]),
    F16(&'a [half::f16]),
    U8(&'a [u8]),
}

impl InputData<'_> {
    /// The tensor's element type.
    pub fn element_type(&self) -> ElementType {
        match self {
            InputData::F32(_) => ElementType::F32,
            InputData::F16(_) => ElementType::F16,
            InputData::U8(_) => ElementType::U8,
        }
    }

    /// The tensor's memory, as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match *self {
            // SAFETY: f32 has no padding; any initialised f32 may be read as its 4 bytes.
            InputData::F32(v) => unsafe {
                std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 4)
            },
            // SAFETY: as above, 2 bytes per f16.
            InputData::F16(v) => unsafe {
                std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 2)
            },
            InputData::U8(v) => v,
        }
    }
}

/// One output of a run, converted to f32.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl OutputTensor {
    /// Number of elements per batch item.
    pub fn item_len(&self) -> usize {
        self.shape.iter().skip(1).product()
    }

    /// The elements of batch item `index`.
    pub fn item(&self, index: usize) -> &[f32] {
        let len = self.item_len();
        &self.data[index * len..(index + 1) * len]
    }
}

/// What ran: reported in the log and in the element's start message.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineDescription {
    /// `onnxruntime` or `tensorrt`.
    pub backend: &'static str,
    /// Execution providers (or devices) in priority order, e.g. `["CUDA", "CPU"]`.
    pub providers: Vec<String>,
    /// Runtime version string.
    pub version: String,
    pub input: TensorInfo,
    pub outputs: Vec<TensorInfo>,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    RuntimeMissing(String),
    #[error("{0}")]
    ProviderUnavailable(String),
    #[error("cannot load model {path}: {reason}")]
    Model { path: String, reason: String },
    #[error("inference failed: {0}")]
    Run(String),
}

/// How important a message from opening or running an engine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Long-running work the user should know about (building a TensorRT engine).
    Progress,
    Error,
    Warning,
    Info,
    Debug,
}

/// Receives an engine's messages (from any thread).
pub type EngineLog = std::sync::Arc<dyn Fn(LogLevel, &str) + Send + Sync>;

/// A pre-processed input tensor already in device memory, written on `stream`.
#[cfg(feature = "cuda")]
pub struct DeviceInput<'a> {
    pub ptr: u64,
    pub bytes: usize,
    pub stream: &'a ferrostream_core::cuda::Stream,
}

/// An inference engine: one loaded model on one device.
pub trait Engine: Send {
    fn description(&self) -> &EngineDescription;

    /// Runs a batch whose input is already in device memory, without copying it, enqueued on
    /// the input's stream. `None` when this engine cannot read that memory (a host engine, or
    /// another CUDA context): the caller then copies the tensor to the host and calls
    /// [`Engine::run`].
    #[cfg(feature = "cuda")]
    fn run_device(
        &mut self,
        _input: &DeviceInput<'_>,
        _shape: &[usize],
        _outputs: &mut Vec<OutputTensor>,
    ) -> Option<Result<(), EngineError>> {
        None
    }

    /// Runs a batch. `shape` is the full input shape (batch first); `outputs` is resized to the
    /// model's outputs and refilled, so its buffers are reused from run to run.
    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError>;
}
