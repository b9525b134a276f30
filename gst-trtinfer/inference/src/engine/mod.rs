// SPDX-License-Identifier: MIT OR Apache-2.0
//! Inference engines behind one trait.
//!
//! An engine describes its input and outputs and runs one batch: a contiguous input tensor in,
//! every output as f32 into reusable buffers ([`Engine::run`]). Engines that work on a GPU also
//! have a device side ([`DeviceEngine`]): input read in place, outputs left in device memory,
//! everything queued on one stream. Backends: ONNX Runtime ([`onnxruntime`]; its CUDA provider
//! has the device side), OpenVINO ([`openvino`]), behind the cargo feature `tensorrt`, native
//! TensorRT, and KServe v2
//! servers ([`kserve`]), whose remote side ([`remote::RemoteEngine`]) has several batches on
//! their way at once.

pub mod choice;
#[cfg(feature = "fault-injection")]
pub mod fault;
#[cfg(feature = "remote")]
pub mod kserve;
pub mod onnxruntime;
pub mod openvino;
pub mod remote;
#[cfg(feature = "tensorrt")]
pub mod tensorrt;
pub mod workers;

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
    /// The output parser was chosen or settled from the first outputs (the model's shapes left
    /// it open): what was chosen.
    ParserChosen,
}

/// Receives an engine's messages (from any thread).
pub type EngineLog = std::sync::Arc<dyn Fn(LogLevel, &str) + Send + Sync>;

/// Ends an engine's runs from another thread ([`Engine::interrupter`]): a state change or a
/// flush must not wait for a run that may never end (a model that loops 2^62 times).
pub trait Interrupt: Send + Sync {
    /// `true`: the run going on ends soon with an error, and so does every run started until
    /// `interrupt(false)`; `false`: runs go on again.
    fn interrupt(&self, interrupted: bool);
}

/// An engine output left in device memory by [`DeviceEngine::enqueue`].
#[cfg(feature = "cuda")]
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceTensor {
    /// Device address of the first element, in the engine's context.
    pub ptr: u64,
    /// Bytes at `ptr` (a packed layout may hold more than the shape's elements).
    pub bytes: usize,
    pub shape: Vec<usize>,
    pub element_type: ElementType,
    /// Whether the elements lie dense in row-major order of `shape`. GPU decoders read only
    /// dense outputs; others are converted on the host by [`DeviceEngine::unpack`].
    pub dense: bool,
}

#[cfg(feature = "cuda")]
impl DeviceTensor {
    /// Elements per batch item (dense layout).
    pub fn item_len(&self) -> usize {
        self.shape.iter().skip(1).product()
    }
}

/// The device side of an engine whose input and outputs are device memory of one CUDA
/// context: the pre-processed tensor is read where it is, outputs stay on the device, and every
/// step of a batch (pre-processing, inference, output decoding, the small download) is queued on
/// the engine's stream, so the host never waits between them.
#[cfg(feature = "cuda")]
pub trait DeviceEngine: Send {
    /// The context the engine's memory belongs to.
    fn context(&self) -> &std::sync::Arc<ferrostream_core::cuda::Context>;

    /// The stream the engine's work is queued on (ONNX Runtime's CUDA provider is bound to one
    /// stream when the session is made). Callers queue pre-processing before and decoding after
    /// on it.
    fn stream(&self) -> &std::sync::Arc<ferrostream_core::cuda::Stream>;

    /// Queues one run on [`DeviceEngine::stream`] that reads the input of `shape` (batch first)
    /// at device address `input` in place, and returns the outputs in the order of the
    /// description's outputs. They stay valid, in stream order, until the next call; the input
    /// must stay unchanged until the stream has passed the run.
    ///
    /// # Safety
    /// `input` must be device memory of the engine's context holding the whole input in the
    /// engine's element type, written in stream order before this call.
    unsafe fn enqueue(
        &mut self,
        input: u64,
        shape: &[usize],
    ) -> Result<&[DeviceTensor], EngineError>;

    /// The engine's own input tensor (device address and bytes), where it reads its input from
    /// memory of its own that the caller cannot replace (a DLA task's registered or NvSciBuf
    /// tensor): pre-processing then writes there directly and [`DeviceEngine::enqueue`] is
    /// given that address, so the engine copies nothing. `None` (the default): the caller
    /// allocates the tensor and the engine reads it in place.
    fn input_tensor(&self) -> Option<(u64, usize)> {
        None
    }

    /// The engine error for a failure seen while waiting for the engine's stream (work fails
    /// asynchronously: a DLA task's failure surfaces as a CUDA error on the stream).
    fn explain(&self, e: ferrostream_core::cuda::CudaError) -> EngineError {
        EngineError::Run(format!("CUDA: {e}"))
    }

    /// Converts output `index`'s raw bytes, downloaded from its [`DeviceTensor`], to f32 in
    /// row-major order of its shape. Dense outputs convert by element type; engines with packed
    /// layouts (DLA loadables) unpack them.
    fn unpack(
        &self,
        _index: usize,
        tensor: &DeviceTensor,
        raw: &[u8],
        out: &mut Vec<f32>,
    ) -> Result<(), EngineError> {
        to_f32(tensor.element_type, raw, out)
    }
}

/// Runs `engine`'s device side on the input at `input` and reads every output back to the host
/// as f32: the host path of device engines (used by [`Engine::run`] after uploading a host
/// tensor). Waits for the stream.
///
/// # Safety
/// As [`DeviceEngine::enqueue`].
#[cfg(feature = "cuda")]
pub unsafe fn run_and_read(
    engine: &mut dyn DeviceEngine,
    input: u64,
    shape: &[usize],
    outputs: &mut Vec<OutputTensor>,
    names: &[TensorInfo],
) -> Result<(), EngineError> {
    // SAFETY: the caller's guarantees are `enqueue`'s.
    let tensors = unsafe { engine.enqueue(input, shape) }?.to_vec();
    let stream = engine.stream().clone();
    let mut raw = Vec::new();
    outputs.resize_with(tensors.len(), OutputTensor::default);
    for (index, (tensor, out)) in tensors.iter().zip(outputs.iter_mut()).enumerate() {
        raw.resize(tensor.bytes, 0);
        // SAFETY: the tensor is `bytes` long in the engine's context, written in stream order;
        // `download` waits for the stream (the run and this copy) before returning.
        unsafe { ferrostream_core::cuda::download(&stream, tensor.ptr, &mut raw) }
            .map_err(|e| engine.explain(e))?;
        if let Some(info) = names.get(index)
            && out.name != info.name
        {
            out.name.clone_from(&info.name);
        }
        out.shape.clone_from(&tensor.shape);
        engine.unpack(index, tensor, &raw, &mut out.data)?;
    }
    Ok(())
}

/// Converts `bytes` (elements of `ty`, native byte order) to f32 into `out`.
pub fn to_f32(ty: ElementType, bytes: &[u8], out: &mut Vec<f32>) -> Result<(), EngineError> {
    out.clear();
    match ty {
        ElementType::F32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        ),
        ElementType::F16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_ne_bytes([b[0], b[1]]).to_f32()),
        ),
        ElementType::I32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as f32),
        ),
        ElementType::I64 => out.extend(
            bytes
                .chunks_exact(8)
                .map(|b| i64::from_ne_bytes(b.try_into().expect("8-byte chunk")) as f32),
        ),
        ElementType::U8 => out.extend(bytes.iter().map(|&b| b as f32)),
        ElementType::I8 => out.extend(bytes.iter().map(|&b| b as i8 as f32)),
        ElementType::Other(name) => {
            return Err(EngineError::Run(format!("output element type {name}")));
        }
    }
    Ok(())
}

/// An inference engine: one loaded model on one device.
pub trait Engine: Send {
    fn description(&self) -> &EngineDescription;

    /// The engine's device side, when it reads and writes device memory (TensorRT, cuDLA,
    /// ONNX Runtime's CUDA provider); `None` for host engines, which take the tensor through
    /// [`Engine::run`].
    #[cfg(feature = "cuda")]
    fn device(&mut self) -> Option<&mut dyn DeviceEngine> {
        None
    }

    /// The engine's remote side, when it runs on an inference server: batches are sent without
    /// waiting for the answer.
    fn remote(&mut self) -> Option<&mut dyn remote::RemoteEngine> {
        None
    }

    /// The caller will submit up to `requests` batches without waiting for their answers
    /// ([`Engine::remote`]). Engines that can run several batches at once prepare for it (OpenVINO
    /// compiles for its throughput mode) and return `true`; the others return `false` and keep
    /// answering each batch at once. One request goes back to single runs.
    fn keep_in_flight(&mut self, _requests: usize) -> Result<bool, EngineError> {
        Ok(false)
    }

    /// What ends this engine's runs from another thread, where a run can be ended (ONNX
    /// Runtime's terminate flag, OpenVINO's cancel); `None` where runs end on their own.
    fn interrupter(&self) -> Option<std::sync::Arc<dyn Interrupt>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_convert_to_f32() {
        let mut out = Vec::new();
        let h: Vec<u8> = [half::f16::from_f32(1.5), half::f16::from_f32(-2.0)]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        to_f32(ElementType::F16, &h, &mut out).unwrap();
        assert_eq!(out, vec![1.5, -2.0]);
        let i: Vec<u8> = [7i32, -3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        to_f32(ElementType::I32, &i, &mut out).unwrap();
        assert_eq!(out, vec![7.0, -3.0]);
        to_f32(ElementType::I8, &[0xff, 2], &mut out).unwrap();
        assert_eq!(out, vec![-1.0, 2.0]);
        assert!(to_f32(ElementType::Other("bf16"), &[0, 0], &mut out).is_err());
    }
}
