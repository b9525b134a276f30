// SPDX-License-Identifier: MIT OR Apache-2.0
//! cuDLA standalone mode: what makes a batch flow GPU -> DLA -> GPU with no CPU wait.
//!
//! - Tensors are NvSciBuf raw buffers allocated with the GPU among their accessors, imported
//!   into the DLA (`cudlaImportExternalMemory`) and into CUDA (`cuImportExternalMemory`), so the
//!   GPU pre-processing writes the DLA's input and the GPU post-processing reads its outputs,
//!   in place.
//! - Two NvSciSync objects, each reconciled from its signaler's and its waiter's attribute
//!   lists: `to_dla` (the GPU signals, the DLA waits) and `to_gpu` (the DLA signals, the GPU
//!   waits).
//! - Per batch, on the engine's stream: the GPU signals `to_dla` after the pre-processing
//!   (`cuSignalExternalSemaphoresAsync` fills the pre-fence at once); the task is submitted
//!   waiting on that pre-fence, and cuDLA fills the end-of-task fence on `to_gpu`; the stream
//!   waits on that fence (`cuWaitExternalSemaphoresAsync`) before the post-processing queued
//!   after it. The CPU only queues.
//!
//! Nothing here has run on a Jetson: the code is compiled everywhere and its structures are
//! checked against NVIDIA's headers (docs/NVIDIA_HEADERS.md); on machines without NvSci,
//! [`Fences::new`] fails with what is missing and rsdlainfer runs hybrid mode.

use std::sync::Arc;

use ferrostream_core::cuda::external::{self, ExternalMemory, ExternalSemaphore};
use ferrostream_core::cuda::{Context, DeviceBuffer, Stream};
use ferrostream_core::nvsci::{self, Fence, Libraries, NvSciError, RawBuffer, SyncAttrList};
use gst_trtinfer::engine::EngineError;

use super::engine::{Tensor, TensorLayout, cuda_error, cudla_error};
use super::{Device, Module, Registered, SyncRole, TaskTensors};

/// cuDLA maps buffers at 32-byte alignment at least; 128 matches the DLA's line size.
const TENSOR_ALIGN: u64 = 128;

fn nvsci_error(e: NvSciError) -> EngineError {
    match e {
        NvSciError::Missing(m) => EngineError::ProviderUnavailable(m),
        other => EngineError::Run(other.to_string()),
    }
}

/// The sync objects of one standalone-mode engine, their imports into CUDA and the DLA, and
/// the two fences of the batch in flight. Field order is drop order: imports before objects.
pub struct Fences {
    /// Filled by the GPU's signal; the next task waits on it.
    ready: Fence,
    /// Filled by cuDLA at submission; the stream waits on it.
    done: Fence,
    gpu_signals: ExternalSemaphore,
    /// `to_dla` registered with the DLA, which waits on it through the pre-fences; kept for as
    /// long as tasks may wait.
    _dla_waits: Registered,
    dla_signals: Registered,
    gpu_waits: ExternalSemaphore,
    _to_dla: nvsci::SyncObj,
    _to_gpu: nvsci::SyncObj,
    nvsci: Arc<Libraries>,
}

impl Fences {
    /// Loads NvSci, allocates both sync objects and imports them. `device` must be open in
    /// standalone mode.
    pub fn new(cuda: &Arc<Context>, device: &Arc<Device>) -> Result<Self, EngineError> {
        let nvsci = Libraries::load().map_err(nvsci_error)?;
        let lib = device.library();
        // What the GPU and the DLA each need of a sync object, as signaler or waiter.
        let gpu = |role| -> Result<SyncAttrList, EngineError> {
            let list = SyncAttrList::new(&nvsci).map_err(nvsci_error)?;
            external::nvscisync_attributes(cuda, &list, role).map_err(|e| {
                EngineError::ProviderUnavailable(format!(
                    "CUDA cannot share fences with the DLA: {e}"
                ))
            })?;
            Ok(list)
        };
        let dla = |role| -> Result<SyncAttrList, EngineError> {
            let list = SyncAttrList::new(&nvsci).map_err(nvsci_error)?;
            lib.nvscisync_attributes(&list, role).map_err(cudla_error)?;
            Ok(list)
        };
        let to_dla =
            nvsci::SyncObj::allocate(&[&gpu(external::SyncRole::Signal)?, &dla(SyncRole::Wait)?])
                .map_err(nvsci_error)?;
        let to_gpu =
            nvsci::SyncObj::allocate(&[&dla(SyncRole::Signal)?, &gpu(external::SyncRole::Wait)?])
                .map_err(nvsci_error)?;
        Ok(Self {
            ready: Fence::new(&nvsci),
            done: Fence::new(&nvsci),
            gpu_signals: ExternalSemaphore::from_nvscisync(cuda, &to_dla).map_err(cuda_error)?,
            _dla_waits: Registered::import_semaphore(device, &to_dla).map_err(cudla_error)?,
            dla_signals: Registered::import_semaphore(device, &to_gpu).map_err(cudla_error)?,
            gpu_waits: ExternalSemaphore::from_nvscisync(cuda, &to_gpu).map_err(cuda_error)?,
            _to_dla: to_dla,
            _to_gpu: to_gpu,
            nvsci,
        })
    }

    /// A tensor of `layout`: an NvSciBuf buffer the GPU can map, imported into the DLA and
    /// into CUDA.
    pub(super) fn tensor(
        &self,
        cuda: &Arc<Context>,
        device: &Arc<Device>,
        layout: TensorLayout,
    ) -> Result<Tensor, EngineError> {
        let request = RawBuffer {
            size: layout.size as u64,
            align: TENSOR_ALIGN,
            gpu: Some(external::gpu_uuid(cuda).map_err(cuda_error)?),
            cpu_access: false,
        };
        let shared = request.allocate(&self.nvsci, &[]).map_err(nvsci_error)?;
        if shared.size() < layout.size as u64 {
            return Err(EngineError::Run(format!(
                "NvSciBuf allocated {} bytes for tensor {} of {} bytes",
                shared.size(),
                layout.name,
                layout.size
            )));
        }
        let registered = Registered::import_memory(device, &shared, false).map_err(cudla_error)?;
        let buffer = DeviceBuffer::from_external(
            ExternalMemory::from_nvscibuf(cuda, &shared).map_err(cuda_error)?,
        )
        .map_err(cuda_error)?;
        Ok(Tensor {
            layout,
            registered,
            buffer,
            _shared: Some(shared),
        })
    }

    /// Chains one task to `stream`: the GPU signals after the work queued so far, the task
    /// waits on that signal, and the stream waits for the task's end.
    ///
    /// # Safety
    /// As [`Module::submit_standalone`]; `stream` is the engine's stream, of the context the
    /// sync objects were imported into.
    pub unsafe fn submit(
        &mut self,
        module: &Module,
        task: &TaskTensors,
        stream: &Stream,
    ) -> Result<(), EngineError> {
        self.gpu_signals
            .signal(stream, &mut self.ready)
            .map_err(cuda_error)?;
        // SAFETY: the caller's guarantees; `dla_signals` is imported into the module's device.
        unsafe {
            module.submit_standalone(task, &[&self.ready], &self.dla_signals, &mut self.done)
        }
        .map_err(cudla_error)?;
        self.gpu_waits
            .wait(stream, &self.done)
            .map_err(cuda_error)?;
        Ok(())
    }
}
