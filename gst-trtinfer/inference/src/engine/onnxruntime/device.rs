// SPDX-License-Identifier: MIT OR Apache-2.0
//! ONNX Runtime's CUDA provider with device-resident I/O: the session runs on a stream of the
//! primary context of `gpu-id` (the context ONNX Runtime itself works in), its input is bound in
//! place to the pre-processed tensor (I/O binding of a CUDA tensor made over the caller's
//! device memory, no copy), its outputs stay in device memory, and the run returns without
//! waiting for the GPU (`disable_synchronize_execution_providers`), so the host can prepare the
//! next batch while this one runs.

use std::ffi::CString;
use std::sync::Arc;

use ferrostream_core::cuda::{Context, Stream};
use ort::AsPointer;
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::{IoBinding, RunOptions, Session};
use ort::value::{DynTensorValueType, DynValue, DynValueRefMut, TensorRefMut, ValueType};

use super::element_type;
use crate::engine::{DeviceTensor, ElementType, EngineError};

/// The device side of an ONNX Runtime session on the CUDA provider.
pub struct CudaIo {
    // Field order is drop order: the binding and values before the stream and context (the
    // engine drops the session in between: `into_stream_and_context`).
    binding: IoBinding,
    /// The input bound last: a CUDA tensor over the caller's memory, kept while it is bound.
    input: Option<DynValueRefMut<'static>>,
    /// The outputs of the last run (ONNX Runtime's device allocations), kept until the next.
    held: Vec<DynValue>,
    tensors: Vec<DeviceTensor>,
    /// Shared with the engine's interrupter, which sets their terminate flag.
    run_options: Arc<RunOptions>,
    memory: MemoryInfo<'static>,
    input_name: CString,
    input_type: ElementType,
    output_names: Vec<String>,
    /// CUDA graph mode: outputs bound to buffers of ours at fixed addresses after the first
    /// run (a replayed graph writes where it was captured), and the input bound once.
    graph: bool,
    fixed_outputs: Vec<(
        ferrostream_core::cuda::DeviceBuffer,
        DynValueRefMut<'static>,
    )>,
    bound_at: Option<(u64, Vec<usize>)>,
    pub(super) stream: Arc<Stream>,
    pub(super) context: Arc<Context>,
}

fn ort_error(what: &str) -> impl Fn(ort::Error) -> EngineError + '_ {
    move |e| EngineError::Run(format!("{what}: {e}"))
}

impl CudaIo {
    /// Drops ONNX Runtime's objects of the device side (binding, values, run options) and our
    /// output buffers, and hands back the stream and context the session runs on: the session
    /// is to be dropped next, while they still exist, and they after it.
    pub fn into_stream_and_context(self) -> (Arc<Stream>, Arc<Context>) {
        let CudaIo {
            stream, context, ..
        } = self;
        (stream, context)
    }

    /// The run options of the device side's runs (for the engine's interrupter).
    pub fn run_options(&self) -> &Arc<RunOptions> {
        &self.run_options
    }

    /// The device side of `session`, whose CUDA provider was registered on `stream` (of the
    /// primary context `context`).
    pub fn new(
        session: &Session,
        context: Arc<Context>,
        stream: Arc<Stream>,
        input_name: &str,
        input_type: ElementType,
        output_names: Vec<String>,
        graph: bool,
    ) -> Result<Self, EngineError> {
        let memory = MemoryInfo::new(
            AllocationDevice::CUDA,
            context.gpu_id() as i32,
            AllocatorType::Device,
            MemoryType::Default,
        )
        .map_err(ort_error("CUDA memory description"))?;
        let binding = session
            .create_binding()
            .map_err(ort_error("creating the I/O binding"))?;
        let mut run_options = RunOptions::new().map_err(ort_error("run options"))?;
        run_options
            .disable_device_sync()
            .map_err(ort_error("run options"))?;
        Ok(Self {
            binding,
            input: None,
            held: Vec::new(),
            tensors: Vec::new(),
            run_options: Arc::new(run_options),
            memory,
            input_name: CString::new(input_name)
                .map_err(|_| EngineError::Run(format!("input name {input_name:?}")))?,
            input_type,
            output_names,
            graph,
            fixed_outputs: Vec::new(),
            bound_at: None,
            stream,
            context,
        })
    }

    /// An ONNX Runtime tensor describing `shape` elements of `element_type` at device address
    /// `ptr` (no copy, no ownership).
    ///
    /// # Safety
    /// `ptr` must be device memory of the session's GPU holding the whole tensor, alive as long
    /// as the value is used.
    unsafe fn device_value(
        &self,
        ptr: u64,
        shape: &[usize],
        element_type: ElementType,
    ) -> Result<DynValueRefMut<'static>, String> {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let (info, data) = (self.memory.clone(), ptr as usize as *mut ort::sys::c_void);
        // SAFETY: the caller guarantees the memory.
        let value = unsafe {
            match element_type {
                ElementType::F32 => {
                    TensorRefMut::<f32>::from_raw(info, data, dims.into()).map(|v| v.into_dyn())
                }
                ElementType::F16 => TensorRefMut::<half::f16>::from_raw(info, data, dims.into())
                    .map(|v| v.into_dyn()),
                ElementType::U8 => {
                    TensorRefMut::<u8>::from_raw(info, data, dims.into()).map(|v| v.into_dyn())
                }
                ElementType::I32 => {
                    TensorRefMut::<i32>::from_raw(info, data, dims.into()).map(|v| v.into_dyn())
                }
                ElementType::I64 => {
                    TensorRefMut::<i64>::from_raw(info, data, dims.into()).map(|v| v.into_dyn())
                }
                other => return Err(format!("element type {other} cannot be bound on the GPU")),
            }
        };
        value.map_err(|e| e.to_string())
    }

    /// Queues a run of `session` over the input of `shape` at device address `input`.
    ///
    /// # Safety
    /// `input` must be device memory of the primary context holding the whole input in the
    /// session's element type, ready in the stream's order, unchanged until the run is done.
    pub unsafe fn enqueue(
        &mut self,
        session: &mut Session,
        input: u64,
        shape: &[usize],
    ) -> Result<&[DeviceTensor], EngineError> {
        if self.graph && !self.fixed_outputs.is_empty() {
            // SAFETY: as this function's contract.
            return unsafe { self.replay(session, input, shape) };
        }
        // SAFETY: the caller guarantees the memory; the value only describes it (no copy) and
        // is kept bound until the next call replaces it.
        let value = unsafe { self.device_value(input, shape, self.input_type) }
            .map_err(|e| EngineError::Run(format!("the device input: {e}")))?;
        // Bound through the C API: `IoBinding::bind_input` would copy a tensor it does not own.
        // SAFETY: the binding and the value are live; ONNX Runtime reads the value's memory in
        // place during the run.
        unsafe { bind_input(&mut self.binding, &self.input_name, value.ptr()) }?;
        self.input = Some(value);
        // Outputs are allocated by ONNX Runtime on the device for each run (their shapes follow
        // the batch); those of the last run are released now, in stream order.
        self.held.clear();
        for name in &self.output_names {
            self.binding
                .bind_output_to_device(name.as_str(), &self.memory)
                .map_err(ort_error("binding an output to the device"))?;
        }
        let mut results = session
            .run_binding_with_options(&self.binding, &self.run_options)
            .map_err(ort_error("running the session"))?;
        self.tensors.clear();
        for name in &self.output_names {
            let value = results
                .remove(name.as_str())
                .ok_or_else(|| EngineError::Run(format!("output `{name}` missing")))?;
            self.tensors.push(device_tensor(name, &value)?);
            self.held.push(value);
        }
        drop(results);
        self.bound_at = Some((input, shape.to_vec()));
        if self.graph {
            self.fix_outputs()?;
        }
        Ok(&self.tensors)
    }

    /// After the first run of a graph session: binds every output to a buffer of ours of the
    /// shape it had, so that the captured graph writes at fixed addresses.
    fn fix_outputs(&mut self) -> Result<(), EngineError> {
        let cuda = |e: ferrostream_core::cuda::CudaError| EngineError::Run(format!("CUDA: {e}"));
        // The first run's outputs must be complete before ours replace them.
        self.stream.synchronize().map_err(cuda)?;
        let mut fixed = Vec::new();
        for (name, t) in self.output_names.iter().zip(&self.tensors) {
            let buffer =
                ferrostream_core::cuda::DeviceBuffer::new(&self.context, t.bytes).map_err(cuda)?;
            // This run's results move into the buffer the graph will write.
            // SAFETY: both ranges hold `t.bytes` bytes of this context; the source (held
            // until the copy below has run) is complete (synchronised above).
            unsafe { self.stream.copy_dtod(buffer.ptr(), t.ptr, t.bytes) }.map_err(cuda)?;
            // SAFETY: the buffer holds the output's bytes and lives as long as the value
            // (both kept in `fixed_outputs`).
            let value = unsafe { self.device_value(buffer.ptr(), &t.shape, t.element_type) }
                .map_err(|e| EngineError::Run(format!("graph output `{name}`: {e}")))?;
            let cname = CString::new(name.as_str())
                .map_err(|_| EngineError::Run(format!("output name {name:?}")))?;
            // SAFETY: the binding and the value are live; the value stays bound and alive.
            unsafe { bind_output(&mut self.binding, &cname, value.ptr()) }?;
            fixed.push((buffer, value));
        }
        self.fixed_outputs = fixed;
        self.stream.synchronize().map_err(cuda)?;
        self.held.clear();
        self.tensors = self
            .tensors
            .iter()
            .zip(&self.fixed_outputs)
            .map(|(t, (buffer, _))| DeviceTensor {
                ptr: buffer.ptr(),
                ..t.clone()
            })
            .collect();
        Ok(())
    }

    /// A run of a graph session whose outputs are fixed: the same input address and shape as
    /// the first run (the tensor of the element's runner, at the fixed batch).
    ///
    /// # Safety
    /// As [`CudaIo::enqueue`].
    unsafe fn replay(
        &mut self,
        session: &mut Session,
        input: u64,
        shape: &[usize],
    ) -> Result<&[DeviceTensor], EngineError> {
        if self
            .bound_at
            .as_ref()
            .is_none_or(|(at, s)| *at != input || s != shape)
        {
            return Err(EngineError::Run(format!(
                "a CUDA graph replays one input address and shape; this run has {shape:?} at \
                 {input:#x}, the graph {:?}",
                self.bound_at
            )));
        }
        session
            .run_binding_with_options(&self.binding, &self.run_options)
            .map_err(ort_error("replaying the CUDA graph"))?;
        Ok(&self.tensors)
    }
}

/// `BindOutput` of the C API: binds output `name` to `value` as it is.
///
/// # Safety
/// `value` must be a live OrtValue that stays alive while bound.
unsafe fn bind_output(
    binding: &mut IoBinding,
    name: &std::ffi::CStr,
    value: *const ort::sys::OrtValue,
) -> Result<(), EngineError> {
    let api = ort::api();
    // SAFETY: the binding is live; `name` is NUL-terminated; the caller vouches for `value`.
    let status = unsafe { (api.BindOutput)(binding.ptr_mut(), name.as_ptr(), value) };
    // SAFETY: the status comes from the call above.
    unsafe { status_result(status, "binding an output in place") }
}

/// The error of a C API status, released here.
///
/// # Safety
/// `status` must come from an ONNX Runtime C API call.
unsafe fn status_result(status: ort::sys::OrtStatusPtr, what: &str) -> Result<(), EngineError> {
    if status.0.is_null() {
        return Ok(());
    }
    let api = ort::api();
    // SAFETY: a non-null status carries a message; it is released once, after reading.
    let message = unsafe {
        let message = std::ffi::CStr::from_ptr((api.GetErrorMessage)(status.0))
            .to_string_lossy()
            .into_owned();
        (api.ReleaseStatus)(status.0);
        message
    };
    Err(EngineError::Run(format!("{what}: {message}")))
}

/// Describes output `name` (a tensor in device memory) without reading it.
fn device_tensor(name: &str, value: &DynValue) -> Result<DeviceTensor, EngineError> {
    let ValueType::Tensor { ty, shape, .. } = value.dtype() else {
        return Err(EngineError::Run(format!("output `{name}` is not a tensor")));
    };
    let element_type = element_type(*ty);
    let shape: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    let size = element_type.size().ok_or_else(|| {
        EngineError::Run(format!("output `{name}` has element type {element_type}"))
    })?;
    let tensor = value
        .view()
        .downcast::<DynTensorValueType>()
        .map_err(ort_error("output"))?;
    Ok(DeviceTensor {
        ptr: tensor.data_ptr() as u64,
        bytes: shape.iter().product::<usize>() * size,
        shape,
        element_type,
        dense: true,
    })
}

/// `BindInput` of the C API: binds `value` to input `name` as it is.
///
/// # Safety
/// `value` must be a live OrtValue that stays alive while bound.
unsafe fn bind_input(
    binding: &mut IoBinding,
    name: &std::ffi::CStr,
    value: *const ort::sys::OrtValue,
) -> Result<(), EngineError> {
    let api = ort::api();
    // SAFETY: the binding is live; `name` is NUL-terminated; the caller vouches for `value`.
    let status = unsafe { (api.BindInput)(binding.ptr_mut(), name.as_ptr(), value) };
    // SAFETY: the status comes from the call above.
    unsafe { status_result(status, "binding the device input in place") }
}
