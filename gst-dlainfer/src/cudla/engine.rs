// SPDX-License-Identifier: MIT OR Apache-2.0
//! [`CudlaEngine`]: a DLA standalone loadable run through cuDLA, behind rstrtinfer's [`Engine`]
//! trait, in either of cuDLA's modes ([`Mode`]):
//! - hybrid: every tensor lives in CUDA memory registered with the DLA; tasks are submitted on
//!   a CUDA stream (the element's, when the pre-processed tensor is already on the GPU);
//! - standalone: every tensor is an NvSciBuf buffer imported into the DLA and into CUDA, and
//!   tasks are chained to the same stream by NvSciSync fences ([`super::standalone`]).
//!
//! Either way the GPU work before and after a task is queued on the engine's stream, and a
//! failed task surfaces on that stream's synchronisation as `cudaErrorExternalDevice`, whose
//! cause `cudlaGetLastError` names.

use std::path::Path;
use std::sync::Arc;

use ferrostream_core::cuda::{self, CudaError, DeviceBuffer, Stream};
use gst_trtinfer::engine::{
    DeviceEngine, DeviceTensor, ElementType, Engine, EngineDescription, EngineError, InputData,
    OutputTensor, TensorInfo, run_and_read,
};

use super::ffi::{self, TensorDescriptor};
use super::standalone::Fences;
use super::{CudlaError, Device, Library, Mode, Module, Registered, TaskTensors, tensor_name};

/// How a tensor's elements lie in its buffer. Only layouts fully described by the
/// descriptor's dims and size are accepted; a loadable with padded rows (DLA linear with
/// unaligned widths) is refused at open with a message naming the tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Dense NCHW.
    Nchw,
    /// NHWC with the channels padded to `cpad` (dense when `cpad == c`; DLA HWC4 has 4).
    Nhwc { cpad: usize },
    /// Channels in blocks of `x` (TensorRT CHW16 / CHW32), C padded to a multiple of `x`.
    Blocked { x: usize },
}

/// One tensor of the loadable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorLayout {
    pub name: String,
    pub dims: [usize; 4],
    pub element: ElementType,
    pub layout: Layout,
    /// Bytes of the whole tensor (all `n` items).
    pub size: usize,
}

impl TensorLayout {
    /// Works out the layout of a descriptor, or says why the runner cannot use it.
    pub fn from_descriptor(d: &TensorDescriptor) -> Result<Self, String> {
        let name = tensor_name(d);
        let (element, elem) = match d.data_type {
            ffi::TYPE_HALF => (ElementType::F16, 2),
            ffi::TYPE_FLOAT => (ElementType::F32, 4),
            ffi::TYPE_UINT8 => (ElementType::U8, 1),
            ffi::TYPE_INT8 => {
                return Err(format!(
                    "tensor {name} is INT8 I/O, whose quantisation scales the loadable does not \
                     carry; build it with --inputIOFormats=fp16:chw16 \
                     --outputIOFormats=fp16:chw16 (the layers still compute in INT8)"
                ));
            }
            other => return Err(format!("tensor {name} has cuDLA data type {other}")),
        };
        let [n, c, h, w] = [d.n, d.c, d.h, d.w].map(|v| v as usize);
        let size = d.size as usize;
        let dense = n * c * h * w * elem;
        let pad = |x: usize| c.div_ceil(x) * x;
        let layout = match d.data_format {
            ffi::FORMAT_NCHW if size == dense => Layout::Nchw,
            ffi::FORMAT_NHWC if size == dense => Layout::Nhwc { cpad: c },
            ffi::FORMAT_NHWC if size == n * h * w * pad(4) * elem => Layout::Nhwc { cpad: pad(4) },
            ffi::FORMAT_NCXHWX => [16, 32, 4]
                .into_iter()
                .find(|&x| size == n * pad(x) * h * w * elem)
                .map(|x| Layout::Blocked { x })
                .ok_or_else(|| {
                    format!("tensor {name}: NCxHWx of {size} bytes for {n}x{c}x{h}x{w}")
                })?,
            format => {
                return Err(format!(
                    "tensor {name} ({n}x{c}x{h}x{w}, cuDLA format {format}, {size} bytes) has \
                     padded rows, which this runner does not unpack; build the loadable with \
                     --inputIOFormats=fp16:chw16 --outputIOFormats=fp16:chw16"
                ));
            }
        };
        Ok(Self {
            name,
            dims: [n, c, h, w],
            element,
            layout,
            size,
        })
    }

    fn elem(&self) -> usize {
        self.element.size().unwrap_or(1)
    }

    /// The element index of (n, c, h, w) in the buffer.
    pub fn index(&self, n: usize, c: usize, h: usize, w: usize) -> usize {
        let [_, cc, hh, ww] = self.dims;
        match self.layout {
            Layout::Nchw => ((n * cc + c) * hh + h) * ww + w,
            Layout::Nhwc { cpad } => ((n * hh + h) * ww + w) * cpad + c,
            Layout::Blocked { x } => {
                let blocks = cc.div_ceil(x);
                (((n * blocks + c / x) * hh + h) * ww + w) * x + c % x
            }
        }
    }

    /// Whether the buffer is plain dense NCHW, which the pre-processing writes directly.
    pub fn is_dense_nchw(&self) -> bool {
        self.layout == Layout::Nchw
    }

    /// Copies a dense NCHW tensor into this layout (padding stays zero).
    pub fn pack(&self, dense: &[u8], out: &mut [u8]) {
        let e = self.elem();
        let [n, c, h, w] = self.dims;
        let mut i = 0;
        for n in 0..n {
            for c in 0..c {
                for h in 0..h {
                    for w in 0..w {
                        let o = self.index(n, c, h, w) * e;
                        out[o..o + e].copy_from_slice(&dense[i..i + e]);
                        i += e;
                    }
                }
            }
        }
    }

    /// Reads this layout into dense NCHW f32.
    pub fn unpack(&self, raw: &[u8], out: &mut Vec<f32>) {
        let [n, c, h, w] = self.dims;
        out.clear();
        out.reserve(n * c * h * w);
        for n in 0..n {
            for c in 0..c {
                for h in 0..h {
                    for w in 0..w {
                        let i = self.index(n, c, h, w);
                        out.push(match self.element {
                            ElementType::F16 => {
                                half::f16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]).to_f32()
                            }
                            ElementType::F32 => f32::from_le_bytes(
                                raw[4 * i..4 * i + 4].try_into().expect("4 bytes"),
                            ),
                            _ => raw[i] as f32,
                        });
                    }
                }
            }
        }
    }
}

/// A tensor's CUDA buffer and its DLA registration (dropped first).
pub(super) struct Tensor {
    pub layout: TensorLayout,
    pub registered: Registered,
    pub buffer: DeviceBuffer,
    /// Standalone mode: the NvSciBuf buffer that `registered` and `buffer` import (dropped
    /// after both).
    pub _shared: Option<ferrostream_core::nvsci::BufObj>,
}

pub struct CudlaEngine {
    // Field order is drop order: registrations and the module before the device, the device
    // before the CUDA context.
    /// The DLA addresses of `input` and `outputs`, for submissions.
    task: TaskTensors,
    input: Tensor,
    outputs: Vec<Tensor>,
    /// Standalone mode: the fences that chain each task to the stream.
    fences: Option<Fences>,
    module: Module,
    stream: Arc<Stream>,
    /// Host input repacked into the loadable's layout.
    staging: Vec<u8>,
    /// The outputs as `DeviceEngine::enqueue` returns them (the registered buffers).
    device_outputs: Vec<DeviceTensor>,
    cuda: Arc<cuda::Context>,
    description: EngineDescription,
}

pub(super) fn cuda_error(e: CudaError) -> EngineError {
    EngineError::Run(e.to_string())
}

pub(super) fn cudla_error(e: CudlaError) -> EngineError {
    match e {
        CudlaError::Missing(m) => EngineError::ProviderUnavailable(m),
        other => EngineError::Run(other.to_string()),
    }
}

/// The error of a stream synchronisation after a DLA task: an asynchronous DLA failure
/// (`cudaErrorExternalDevice`) is named by `cudlaGetLastError`'s status.
pub fn task_error(e: CudaError, last_error: impl FnOnce() -> ffi::Status) -> EngineError {
    match &e {
        CudaError::Driver { name, .. } if name == "CUDA_ERROR_EXTERNAL_DEVICE" => {
            let status = last_error();
            EngineError::Run(format!(
                "the DLA task failed: {} ({status:#x}), reported as {name} on the stream",
                ffi::status_name(status)
            ))
        }
        _ => cuda_error(e),
    }
}

impl CudlaEngine {
    /// Loads `loadable` on DLA core `core` in `mode`, under GPU `gpu_id`'s CUDA context.
    /// Standalone mode fails with [`EngineError::ProviderUnavailable`] where NvSci or cuDLA's
    /// standalone entry points are missing.
    pub fn open(loadable: &Path, core: u32, gpu_id: u32, mode: Mode) -> Result<Self, EngineError> {
        let lib = Library::load().map_err(cudla_error)?;
        let bytes =
            ferrostream_core::files::read(loadable, ferrostream_core::files::MAX_MODEL_FILE_BYTES)
                .map_err(|e| EngineError::Model {
                    path: loadable.display().to_string(),
                    reason: e.to_string(),
                })?;
        let cuda = cuda::Context::primary(gpu_id).map_err(cuda_error)?;
        let _bound = cuda.bind().map_err(cuda_error)?;
        let device = Device::open(&lib, core, mode).map_err(cudla_error)?;
        let fences = match mode {
            Mode::Hybrid => None,
            Mode::Standalone => Some(Fences::new(&cuda, &device)?),
        };
        let module = Module::load(&device, &bytes).map_err(|e| EngineError::Model {
            path: loadable.display().to_string(),
            reason: e.to_string(),
        })?;
        let model_error = |reason: String| EngineError::Model {
            path: loadable.display().to_string(),
            reason,
        };
        let [input] = module.inputs.as_slice() else {
            return Err(model_error(format!(
                "the loadable has {} inputs; the element feeds exactly one image input",
                module.inputs.len()
            )));
        };
        let tensor = |d: &TensorDescriptor| -> Result<Tensor, EngineError> {
            let layout = TensorLayout::from_descriptor(d).map_err(model_error)?;
            if let Some(fences) = &fences {
                return fences.tensor(&cuda, &device, layout);
            }
            let buffer = DeviceBuffer::new(&cuda, layout.size).map_err(cuda_error)?;
            // SAFETY: the buffer is device memory of the current context, `layout.size` bytes,
            // and is dropped after its registration (field order of `Tensor`).
            let registered = unsafe { Registered::new(&device, buffer.ptr(), layout.size) }
                .map_err(cudla_error)?;
            Ok(Tensor {
                layout,
                registered,
                buffer,
                _shared: None,
            })
        };
        let input = tensor(input)?;
        let outputs = module
            .outputs
            .iter()
            .map(tensor)
            .collect::<Result<Vec<_>, _>>()?;
        let info = |t: &Tensor| TensorInfo {
            name: t.layout.name.clone(),
            element_type: t.layout.element,
            dims: t.layout.dims.iter().map(|&d| Some(d)).collect(),
        };
        let mode_name = match mode {
            Mode::Hybrid => "hybrid mode",
            Mode::Standalone => "standalone mode, NvSciSync fences",
        };
        let version = lib.version().map_or_else(
            |e| format!("{e} ({mode_name})"),
            |v| {
                format!(
                    "cuDLA {}.{}.{} ({mode_name})",
                    v / 1_000_000,
                    v / 1000 % 1000,
                    v % 1000
                )
            },
        );
        let description = EngineDescription {
            backend: "cudla",
            providers: vec![format!("DLA{core}")],
            version,
            input: info(&input),
            outputs: outputs.iter().map(info).collect(),
        };
        let stream = Arc::new(Stream::new(&cuda, 0).map_err(cuda_error)?);
        let device_outputs = outputs
            .iter()
            .map(|t| DeviceTensor {
                ptr: t.buffer.ptr(),
                bytes: t.layout.size,
                shape: t.layout.dims.to_vec(),
                element_type: t.layout.element,
                dense: t.layout.is_dense_nchw(),
            })
            .collect();
        let task = TaskTensors::new(
            &[&input.registered],
            &outputs.iter().map(|t| &t.registered).collect::<Vec<_>>(),
        );
        drop(_bound);
        Ok(Self {
            task,
            input,
            outputs,
            fences,
            module,
            stream,
            staging: Vec::new(),
            device_outputs,
            cuda,
            description,
        })
    }
}

impl Engine for CudlaEngine {
    fn description(&self) -> &EngineDescription {
        &self.description
    }

    fn device(&mut self) -> Option<&mut dyn DeviceEngine> {
        // A pre-processed tensor is dense NCHW: loadables taking another layout get theirs
        // repacked on the host (`run`).
        self.input.layout.is_dense_nchw().then_some(self as _)
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        let (bytes, ty) = (input.as_bytes(), input.element_type());
        let layout = &self.input.layout;
        let dense = layout.dims.iter().product::<usize>() * layout.elem();
        if ty != layout.element || bytes.len() != dense {
            return Err(EngineError::Run(format!(
                "the loadable takes {} {} bytes ({:?}), {} {ty} bytes were given",
                dense,
                layout.element,
                layout.dims,
                bytes.len()
            )));
        }
        // Dense NCHW goes up as it is; other layouts are repacked into the reused staging
        // buffer (its padding zeroed once per call).
        let upload: &[u8] = if layout.is_dense_nchw() {
            bytes
        } else {
            self.staging.clear();
            self.staging.resize(layout.size, 0);
            layout.pack(bytes, &mut self.staging);
            &self.staging
        };
        let cuda = self.cuda.clone();
        let _bound = cuda.bind().map_err(cuda_error)?;
        self.input
            .buffer
            .upload(&self.stream, upload)
            .map_err(cuda_error)?;
        let (input, names) = (self.input.buffer.ptr(), self.description.outputs.clone());
        // SAFETY: the registered input buffer holds the batch just uploaded on the engine's
        // stream (`enqueue` does not copy it onto itself); the read-back waits for the stream.
        unsafe { run_and_read(self, input, shape, outputs, &names) }
    }
}

impl Drop for CudlaEngine {
    fn drop(&mut self) {
        // Tasks still queued read and write the tensors (and, in standalone mode, the stream
        // waits on the last task's fence): let them finish before anything is released.
        if let Ok(_bound) = self.cuda.bind() {
            let _ = self.stream.synchronize();
        }
    }
}

impl DeviceEngine for CudlaEngine {
    fn context(&self) -> &Arc<cuda::Context> {
        &self.cuda
    }

    fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    unsafe fn enqueue(
        &mut self,
        input: u64,
        _shape: &[usize],
    ) -> Result<&[DeviceTensor], EngineError> {
        let cuda = self.cuda.clone();
        let _bound = cuda.bind().map_err(cuda_error)?;
        if input != self.input.buffer.ptr() {
            // SAFETY: the caller vouches for `input` (the whole dense input, in the engine's
            // context, ready in stream order); the registered buffer holds `layout.size` bytes.
            unsafe {
                self.input
                    .buffer
                    .copy_from_device(&self.stream, input, self.input.layout.size)
            }
            .map_err(cuda_error)?;
        }
        // SAFETY: `task` holds this module's registered tensors (input and outputs), of the
        // sizes its descriptors give, registered as long as the engine lives; the stream
        // belongs to the context the device was opened under. Outputs are read in stream order
        // by the caller before the next submission overwrites them.
        unsafe {
            match &mut self.fences {
                None => self
                    .module
                    .submit(&self.task, self.stream.raw().cast())
                    .map_err(cudla_error)?,
                Some(fences) => fences.submit(&self.module, &self.task, &self.stream)?,
            }
        }
        Ok(&self.device_outputs)
    }

    fn input_tensor(&self) -> Option<(u64, usize)> {
        // Pre-processing writes the batch straight into the tensor the DLA reads (registered
        // CUDA memory, or the NvSciBuf buffer in standalone mode): `enqueue` copies nothing.
        Some((self.input.buffer.ptr(), self.input.buffer.len()))
    }

    fn explain(&self, e: CudaError) -> EngineError {
        let device = self.module.device().clone();
        task_error(e, || device.last_error())
    }

    fn unpack(
        &self,
        index: usize,
        _tensor: &DeviceTensor,
        raw: &[u8],
        out: &mut Vec<f32>,
    ) -> Result<(), EngineError> {
        let t = self
            .outputs
            .get(index)
            .ok_or_else(|| EngineError::Run(format!("no output {index}")))?;
        t.layout.unpack(raw, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(name: &str, dims: [u64; 4], ty: u8, format: u8, size: u64) -> TensorDescriptor {
        let mut d = TensorDescriptor::default();
        for (i, b) in name.bytes().enumerate() {
            d.name[i] = b as std::ffi::c_char;
        }
        [d.n, d.c, d.h, d.w] = dims;
        d.data_type = ty;
        d.data_format = format;
        d.size = size;
        d
    }

    #[test]
    fn layouts_come_from_the_descriptor() {
        let chw16 = descriptor(
            "out",
            [1, 20, 2, 3],
            ffi::TYPE_HALF,
            ffi::FORMAT_NCXHWX,
            2 * 32 * 6,
        );
        let t = TensorLayout::from_descriptor(&chw16).unwrap();
        assert_eq!(
            (t.name.as_str(), t.layout, t.element),
            ("out", Layout::Blocked { x: 16 }, ElementType::F16)
        );
        // Channel 17 of item 0 at (1, 2): block 1, element (1*2+1)*3+2 = ... within the block.
        assert_eq!(t.index(0, 17, 1, 2), ((2 + 1) * 3 + 2) * 16 + 1);
        let hwc4 = descriptor(
            "in",
            [1, 3, 4, 4],
            ffi::TYPE_HALF,
            ffi::FORMAT_NHWC,
            2 * 16 * 4,
        );
        assert_eq!(
            TensorLayout::from_descriptor(&hwc4).unwrap().layout,
            Layout::Nhwc { cpad: 4 }
        );
        let dense = descriptor("in", [2, 3, 4, 4], ffi::TYPE_HALF, ffi::FORMAT_NCHW, 2 * 96);
        assert!(
            TensorLayout::from_descriptor(&dense)
                .unwrap()
                .is_dense_nchw()
        );
        // Padded rows (DLA linear with a narrow width) and INT8 I/O are refused, by name.
        let padded = descriptor(
            "logits",
            [1, 1000, 1, 1],
            ffi::TYPE_HALF,
            ffi::FORMAT_NCHW,
            64_000,
        );
        let e = TensorLayout::from_descriptor(&padded).unwrap_err();
        assert!(e.contains("logits") && e.contains("padded rows"), "{e}");
        let int8 = descriptor("in", [1, 3, 4, 4], ffi::TYPE_INT8, ffi::FORMAT_NHWC, 64);
        assert!(
            TensorLayout::from_descriptor(&int8)
                .unwrap_err()
                .contains("INT8")
        );
    }

    #[test]
    fn pack_and_unpack_round_trip_through_blocked_channels() {
        let d = descriptor(
            "t",
            [1, 5, 2, 2],
            ffi::TYPE_HALF,
            ffi::FORMAT_NCXHWX,
            2 * 16 * 4,
        );
        let t = TensorLayout::from_descriptor(&d).unwrap();
        let values: Vec<f32> = (0..20).map(|v| v as f32 * 0.5).collect();
        let dense: Vec<u8> = values
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        let mut raw = vec![0u8; t.size];
        t.pack(&dense, &mut raw);
        // Element (c=2, h=1, w=0) sits at ((1*2)+0)*16 + 2 in the block.
        let at = |i: usize| half::f16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]).to_f32();
        assert_eq!(at(2 * 16 + 2), values[2 * 4 + 2]);
        let mut back = Vec::new();
        t.unpack(&raw, &mut back);
        assert_eq!(back, values);
    }

    #[test]
    fn asynchronous_dla_errors_carry_the_cudla_status_name() {
        let external = CudaError::Driver {
            call: "cuStreamSynchronize",
            name: "CUDA_ERROR_EXTERNAL_DEVICE".into(),
            description: "an external device failed".into(),
        };
        let EngineError::Run(m) = task_error(external, || 0x4000_0006) else {
            panic!("a run error");
        };
        assert!(
            m.contains("cudlaErrorDlaErrEngineTimeout") && m.contains("CUDA_ERROR_EXTERNAL_DEVICE"),
            "{m}"
        );
        // Other CUDA errors pass through without asking cuDLA.
        let other = CudaError::Invalid("boom".into());
        let EngineError::Run(m) = task_error(other, || unreachable!("not asked")) else {
            panic!("a run error");
        };
        assert_eq!(m, "boom");
    }
}
