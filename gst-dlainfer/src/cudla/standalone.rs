// SPDX-License-Identifier: MIT OR Apache-2.0
//! cuDLA standalone mode: what makes a batch flow GPU -> DLA -> GPU with no CPU wait.
//!
//! - Tensors are NvSciBuf raw buffers allocated with the GPU among their accessors, imported
//!   into the DLA (`cudlaImportExternalMemory`) and into CUDA (`cuImportExternalMemory`), so the
//!   GPU pre-processing writes the DLA's input and the GPU post-processing reads its outputs,
//!   in place.
//! - Two NvSciSync objects, each reconciled from its signaler's and its waiters' attribute
//!   lists: `to_dla` (the GPU signals, the DLA waits) and `to_gpu` (the DLA signals; the GPU
//!   waits, and the CPU, only to drain the engine when it closes or a chain broke).
//! - Per batch, on the engine's stream: the GPU signals `to_dla` after the pre-processing
//!   (`cuSignalExternalSemaphoresAsync` fills the pre-fence at once); the task is submitted
//!   waiting on that pre-fence, and cuDLA fills the end-of-task fence on `to_gpu`; the stream
//!   waits on that fence (`cuWaitExternalSemaphoresAsync`) before the post-processing queued
//!   after it. The CPU only queues.
//! - At open, one no-op task (`CUDLA_SUBMIT_NOOP`: its events honoured, the task skipped) goes
//!   through the whole chain and is waited for, so a chain the platform refuses fails while
//!   `dla-mode=auto` can still fall back to hybrid mode.
//!
//! Nothing here has run on a Jetson: the code is compiled everywhere and its structures are
//! checked against NVIDIA's headers (docs/NVIDIA_HEADERS.md); on machines without NvSci,
//! [`Fences::new`] fails with what is missing and rsdlainfer runs hybrid mode.

use std::sync::Arc;
use std::time::Duration;

use ferrostream_core::cuda::external::{self, ExternalMemory, ExternalSemaphore};
use ferrostream_core::cuda::{Context, DeviceBuffer, Stream};
use ferrostream_core::nvsci::{
    self, CpuWaitContext, Fence, Libraries, NvSciError, RawBuffer, SyncAttrList, SyncRole,
};
use gst_trtinfer::engine::EngineError;

use super::tensor::{Tensor, TensorLayout};
use super::{Device, Module, Registered, Submission, TaskTensors, cuda_error, cudla_error};

/// The alignment asked of tensor buffers: cuDLA needs 32 bytes at least (`cudla.h`,
/// `cudlaImportExternalMemory`); 128 is what NVIDIA's cuDLA standalone samples ask.
const TENSOR_ALIGN: u64 = 128;

/// How long closing the engine, or the check at open, waits for the DLA's last task.
const DRAIN: Duration = Duration::from_secs(5);

/// An NvSci failure as an engine error, saying what it was doing.
fn nvsci_error(what: &str) -> impl Fn(NvSciError) -> EngineError + '_ {
    move |e| match e {
        NvSciError::Missing(m) => EngineError::ProviderUnavailable(m),
        other => EngineError::Run(format!("{what}: {other}")),
    }
}

/// The sync objects of one standalone-mode engine, their imports into CUDA and the DLA, and
/// the two fences of the batch in flight. Field order is drop order: fences, then imports (each
/// keeps its object alive until it goes).
pub struct Fences {
    /// Filled by the GPU's signal; the next task waits on it.
    ready: Fence,
    /// Filled by cuDLA at submission; the stream waits on it.
    done: Fence,
    gpu_signals: ExternalSemaphore,
    /// `to_dla` registered with the DLA, which waits on it through the pre-fences.
    _dla_waits: Registered,
    dla_signals: Registered,
    gpu_waits: ExternalSemaphore,
    /// For draining: a CPU wait on `done`.
    cpu: CpuWaitContext,
    /// Set when a task was submitted but could not be chained back to the stream: the engine
    /// refuses further batches (their pre-processing would race the task).
    broken: Option<String>,
    nvsci: Arc<Libraries>,
}

impl Fences {
    /// Loads NvSci, allocates both sync objects and imports them. `device` must be open in
    /// standalone mode.
    pub fn new(cuda: &Arc<Context>, device: &Arc<Device>) -> Result<Self, EngineError> {
        let nvsci = Libraries::load().map_err(nvsci_error("NvSci"))?;
        let lib = device.cudla();
        // What the GPU and the DLA each need of a sync object, as signaler or waiter.
        let gpu = |role| -> Result<SyncAttrList, EngineError> {
            let list = SyncAttrList::new(&nvsci).map_err(nvsci_error("an NvSciSync list"))?;
            external::nvscisync_attributes(cuda, &list, role).map_err(|e| {
                EngineError::ProviderUnavailable(format!(
                    "CUDA cannot share fences with the DLA: {e}"
                ))
            })?;
            Ok(list)
        };
        let dla = |role| -> Result<SyncAttrList, EngineError> {
            let list = SyncAttrList::new(&nvsci).map_err(nvsci_error("an NvSciSync list"))?;
            lib.nvscisync_attributes(&list, role).map_err(cudla_error)?;
            Ok(list)
        };
        let to_dla = nvsci::SyncObj::allocate(&[&gpu(SyncRole::Signal)?, &dla(SyncRole::Wait)?])
            .map(Arc::new)
            .map_err(nvsci_error(
                "the GPU-to-DLA sync object (CUDA signals, cuDLA waits)",
            ))?;
        let cpu_waits = SyncAttrList::cpu(&nvsci, nvsci::ffi::SYNC_PERM_WAIT_ONLY)
            .map_err(nvsci_error("an NvSciSync list"))?;
        let to_gpu =
            nvsci::SyncObj::allocate(&[&dla(SyncRole::Signal)?, &gpu(SyncRole::Wait)?, &cpu_waits])
                .map(Arc::new)
                .map_err(nvsci_error(
                    "the DLA-to-GPU sync object (cuDLA signals, CUDA and the CPU wait)",
                ))?;
        let import = |what: &str, e| EngineError::Run(format!("importing {what}: {e}"));
        Ok(Self {
            ready: Fence::new(&nvsci),
            done: Fence::new(&nvsci),
            gpu_signals: ExternalSemaphore::from_nvscisync(cuda, &to_dla)
                .map_err(|e| import("the GPU-to-DLA sync object into CUDA", e.to_string()))?,
            _dla_waits: Registered::import_semaphore(device, &to_dla)
                .map_err(|e| import("the GPU-to-DLA sync object into cuDLA", e.to_string()))?,
            dla_signals: Registered::import_semaphore(device, &to_gpu)
                .map_err(|e| import("the DLA-to-GPU sync object into cuDLA", e.to_string()))?,
            gpu_waits: ExternalSemaphore::from_nvscisync(cuda, &to_gpu)
                .map_err(|e| import("the DLA-to-GPU sync object into CUDA", e.to_string()))?,
            cpu: CpuWaitContext::new(&nvsci).map_err(nvsci_error("a CPU wait context"))?,
            broken: None,
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
        let name = layout.name.clone();
        let fail = |e: String| EngineError::Run(format!("tensor {name}: {e}"));
        let request = RawBuffer {
            size: layout.size as u64,
            align: TENSOR_ALIGN,
            gpu: Some(external::gpu_uuid(cuda).map_err(|e| fail(e.to_string()))?),
            cpu_access: false,
        };
        let shared = request
            .allocate(&self.nvsci, &[])
            .map(Arc::new)
            .map_err(|e| match e {
                NvSciError::Missing(m) => EngineError::ProviderUnavailable(m),
                other => fail(format!("allocating its NvSciBuf buffer: {other}")),
            })?;
        if shared.size() < layout.size as u64 {
            return Err(fail(format!(
                "NvSciBuf allocated {} bytes for {} bytes",
                shared.size(),
                layout.size
            )));
        }
        let registered = Registered::import_memory(device, &shared, false)
            .map_err(|e| fail(format!("importing it into cuDLA: {e}")))?;
        let buffer = ExternalMemory::from_nvscibuf(cuda, &shared)
            .and_then(DeviceBuffer::from_external)
            .map_err(|e| fail(format!("importing it into CUDA: {e}")))?;
        Ok(Tensor {
            layout,
            registered,
            buffer,
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
        submission: Submission,
    ) -> Result<(), EngineError> {
        if let Some(why) = &self.broken {
            return Err(EngineError::Run(format!(
                "the DLA engine stopped after an earlier failure: {why}"
            )));
        }
        self.gpu_signals
            .signal(stream, &mut self.ready)
            .map_err(cuda_error)?;
        // SAFETY: the caller's guarantees; `dla_signals` is imported into the module's device.
        unsafe {
            module.submit_standalone(
                task,
                &self.ready,
                &self.dla_signals,
                &mut self.done,
                submission,
            )
        }
        .map_err(cudla_error)?;
        // The task is on the DLA from here: if the stream cannot be made to wait for it, no
        // later batch may be pre-processed into its tensors.
        if let Err(e) = self.gpu_waits.wait(stream, &self.done) {
            let why = format!("the stream could not wait for a DLA task: {e}");
            self.broken = Some(why.clone());
            return Err(EngineError::Run(why));
        }
        Ok(())
    }

    /// Waits on the CPU, at most `limit`, for the last task submitted to end.
    pub fn drain(&self, limit: Duration) -> Result<(), EngineError> {
        self.done
            .wait(&self.cpu, limit)
            .map_err(|e| EngineError::Run(format!("waiting for the last DLA task: {e}")))
    }

    /// Proves the chain at open: a no-op task through every fence, waited for.
    ///
    /// # Safety
    /// As [`Fences::submit`].
    pub unsafe fn check(
        &mut self,
        module: &Module,
        task: &TaskTensors,
        stream: &Stream,
    ) -> Result<(), EngineError> {
        // SAFETY: the caller's guarantees.
        unsafe { self.submit(module, task, stream, Submission::NoOp) }?;
        self.drain(DRAIN)?;
        stream.synchronize().map_err(cuda_error)
    }
}

/// How long [`Fences::drain`] waits when the engine closes.
pub const CLOSE_WAIT: Duration = DRAIN;
