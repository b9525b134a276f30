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
    DeviceEngine, DeviceTensor, Engine, EngineDescription, EngineError, InputData, OutputTensor,
    TensorInfo, run_and_read,
};

use super::ffi::{self, TensorDescriptor};
use super::standalone::Fences;
use super::tensor::{Tensor, TensorLayout};
use super::{
    Device, Library, Mode, Module, Registered, Submission, TaskTensors, cuda_error, cudla_error,
};

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
        let mut engine = Self {
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
        };
        let Self {
            fences,
            module,
            task,
            stream,
            cuda,
            ..
        } = &mut engine;
        if let Some(fences) = fences {
            let _bound = cuda.bind().map_err(cuda_error)?;
            // SAFETY: the task's tensors are registered for the engine's life; the stream is
            // the engine's, of the context the sync objects were imported into.
            unsafe { fences.check(module, task, stream) }.map_err(|e| {
                EngineError::Run(format!(
                    "a no-op task through the GPU and DLA fences failed at open: {e}"
                ))
            })?;
        }
        Ok(engine)
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
        // Tasks still queued read and write the tensors: let them finish before anything is
        // released. In standalone mode the DLA's last task is waited for on its own fence too
        // (the stream may not be waiting for it, when a chain broke).
        // A DLA task that does not end within the bound leaves the stream waiting on its fence:
        // synchronising would never return, so the stream is left as it is.
        if let Some(fences) = &self.fences
            && fences.drain(super::standalone::CLOSE_WAIT).is_err()
        {
            return;
        }
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
                Some(fences) => {
                    fences.submit(&self.module, &self.task, &self.stream, Submission::Run)?
                }
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
