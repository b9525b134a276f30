// SPDX-License-Identifier: MIT OR Apache-2.0
//! A batch on a device engine, from frames to the few bytes the parser needs: pre-processing,
//! the engine run, anchor selection (or, for parsers that need whole outputs, their download)
//! and an event marking the end, all queued on the engine's stream without waiting. The host
//! waits only when it reads the results ([`Inference::finish_device`](crate::inference::Inference::finish_device)),
//! so batch k+1 is pre-processed and queued while batch k runs.
//!
//! Frames in the engine's CUDA context are pre-processed straight into the engine's input
//! tensor. Frames of another context (a producer that did not take the engine's context) are
//! pre-processed there and the tensor is copied device to device into the engine's context;
//! the copy trace counts those bytes ([`Transfers::between_contexts`](ferrostream_core::cuda::Transfers)).

use std::sync::Arc;

use ferrostream_core::cuda::{Context, CudaError, DeviceBuffer, Event, HostBuffer, Stream};

use super::select::{self, AnchorSelector};
use super::{GpuJob, GpuPreprocessor, GpuStage};
use crate::engine::{DeviceTensor, ElementType};
use crate::parse::AnchorLayout;
use crate::preprocess::{Letterbox, NetworkInput};

/// Records copied with the first download of a selection before the count is known; follows
/// the counts seen (one and a half times the last), so a second copy is rare.
const MIN_EXPECTED_RECORDS: usize = 32;

/// Read-back memory of one batch in flight, recycled when the batch is finished.
#[derive(Debug)]
pub struct Slot {
    /// Pinned host memory the results are copied into.
    pub host: HostBuffer,
    /// The selection's device buffer (anchor-selecting parsers).
    pub selection: Option<DeviceBuffer>,
    /// Recorded after the last copy of the batch.
    pub done: Event,
    /// Recorded after the batch's pre-processing (frames may be released once it completes).
    pub preprocessed: Event,
}

/// What a queued batch will leave in its slot.
#[derive(Debug)]
pub enum Readback {
    /// A selection: header and the first `expected` records in the host buffer.
    Selected {
        layout: AnchorLayout,
        shapes: Vec<Vec<usize>>,
        min_threshold: f32,
        expected: usize,
    },
    /// Whole outputs, one after another in the host buffer.
    Whole { tensors: Vec<DeviceTensor> },
}

/// A batch queued on the GPU.
#[derive(Debug)]
pub struct Pending {
    pub slot: Slot,
    pub readback: Readback,
    /// Regions in the batch and each one's letterbox and frame size.
    pub letterboxes: Vec<Letterbox>,
    pub sizes: Vec<(u32, u32)>,
    /// Bytes of pre-processed tensor copied from another context (0 in the engine's context).
    pub copied_between_contexts: usize,
}

/// The engine-side GPU state of an [`Inference`](crate::inference::Inference): the engine's
/// context and stream, its input tensor, the kernels, and recycled read-back slots.
pub struct DeviceRunner {
    pub(crate) context: Arc<Context>,
    pub(crate) stream: Arc<Stream>,
    preprocessor: GpuPreprocessor,
    input: DeviceBuffer,
    selector: Option<AnchorSelector>,
    /// Pre-processing for frames of another context, and the event after the last copy out of
    /// its tensor (the next pre-processing there waits for it).
    foreign: Option<(GpuStage, Event)>,
    free: Vec<Slot>,
    /// For the rare second download of a selection larger than expected.
    readback: Option<Stream>,
    expected: usize,
    letterboxes: Vec<Letterbox>,
}

impl DeviceRunner {
    /// A runner whose pre-processing writes `tensor_bytes` into the engine's own input tensor
    /// when `engine_input` offers one that large ([`DeviceEngine::input_tensor`]), else into a
    /// tensor of its own.
    ///
    /// # Safety
    /// `engine_input` must be device memory of `context` that outlives the runner (the engine's,
    /// which the runner's owner keeps longer).
    ///
    /// [`DeviceEngine::input_tensor`]: crate::engine::DeviceEngine::input_tensor
    pub unsafe fn new(
        context: Arc<Context>,
        stream: Arc<Stream>,
        tensor_bytes: usize,
        engine_input: Option<(u64, usize)>,
    ) -> Result<Self, CudaError> {
        let input = match engine_input {
            // SAFETY: the caller vouches for the engine's tensor.
            Some((ptr, len)) if len >= tensor_bytes => unsafe {
                DeviceBuffer::borrowed(&context, ptr, len)
            },
            _ => DeviceBuffer::new(&context, tensor_bytes)?,
        };
        // Slots a partial batch leaves unwritten are run too: zeros, not whatever was there.
        input.fill(&stream, 0)?;
        Ok(Self {
            preprocessor: GpuPreprocessor::new(&context)?,
            input,
            selector: None,
            foreign: None,
            free: Vec::new(),
            readback: None,
            expected: MIN_EXPECTED_RECORDS,
            letterboxes: Vec::new(),
            context,
            stream,
        })
    }

    /// The engine's input tensor (device address).
    pub fn input(&self) -> u64 {
        self.input.ptr()
    }

    /// Queues the pre-processing of `jobs` (frames of `frames_ctx`) into the engine's input
    /// tensor. Returns the letterboxes and the bytes copied between contexts.
    pub fn preprocess(
        &mut self,
        jobs: &[GpuJob],
        frames_ctx: &Arc<Context>,
        net: &NetworkInput,
        element: ElementType,
        priority: i32,
    ) -> Result<(Vec<Letterbox>, usize), CudaError> {
        if frames_ctx.raw() == self.context.raw() {
            self.preprocessor.run(
                &self.stream,
                jobs,
                net,
                element,
                self.input.ptr(),
                self.input.len(),
                &mut self.letterboxes,
            )?;
            return Ok((self.letterboxes.clone(), 0));
        }
        let (stage, copied) = match &mut self.foreign {
            Some((stage, copied)) if stage.context().raw() == frames_ctx.raw() => (stage, copied),
            foreign => {
                let stage = GpuStage::new(frames_ctx, priority, self.input.len())?;
                let copied = Event::new_sync(&self.context)?;
                let (stage, copied) = foreign.insert((stage, copied));
                (stage, &mut *copied)
            }
        };
        // The stage's tensor is rewritten only after the last copy out of it has run.
        stage.stream().wait_event(copied)?;
        stage.preprocess(jobs, net, element)?;
        let ready = Event::new_sync(frames_ctx)?;
        ready.record(stage.stream())?;
        self.stream.wait_event(&ready)?;
        let bytes = jobs.len() * net.frame_len() * element.size().unwrap_or(4);
        // SAFETY: the stage's tensor holds `bytes` bytes in `frames_ctx`, written before
        // `ready`, which the engine's stream waits for; it is not rewritten before `copied`.
        unsafe {
            self.input
                .copy_from_context(&self.stream, stage.tensor().ptr(), frames_ctx, bytes)
        }?;
        copied.record(&self.stream)?;
        Ok((stage.letterboxes().to_vec(), bytes))
    }

    /// A read-back slot for the next batch (recycled when one is free).
    pub fn slot(&mut self) -> Result<Slot, CudaError> {
        self.grow(None, 0, 0)
    }

    /// `slot` (or a new one) with at least `host_bytes` of pinned memory and, for a selection,
    /// `selection_bytes` of device memory.
    fn grow(
        &mut self,
        slot: Option<Slot>,
        host_bytes: usize,
        selection_bytes: usize,
    ) -> Result<Slot, CudaError> {
        let mut slot = match slot.or_else(|| self.free.pop()) {
            Some(slot) => slot,
            None => Slot {
                host: HostBuffer::new(&self.context, host_bytes)?,
                selection: None,
                done: Event::new_sync(&self.context)?,
                preprocessed: Event::new_sync(&self.context)?,
            },
        };
        if slot.host.len() < host_bytes {
            slot.host = HostBuffer::new(&self.context, host_bytes)?;
        }
        if selection_bytes > 0
            && slot
                .selection
                .as_ref()
                .is_none_or(|b| b.len() < selection_bytes)
        {
            slot.selection = Some(DeviceBuffer::new(&self.context, selection_bytes)?);
        }
        Ok(slot)
    }

    /// Queues the read-back of a run's `tensors` for the first `items` batch items into `slot`:
    /// the anchor selection when `layout` is given and the outputs allow it, else the whole
    /// outputs. Records the slot's `done` event.
    pub fn read_back(
        &mut self,
        slot: Slot,
        tensors: &[DeviceTensor],
        layout: Option<(AnchorLayout, f32)>,
        items: usize,
    ) -> Result<(Slot, Readback), CudaError> {
        let layout = layout.filter(|(l, _)| AnchorSelector::supports(tensors, l));
        let readback = if let Some((layout, min_threshold)) = layout {
            let capacity = items * layout.anchors;
            let expected = self.expected.min(capacity);
            let record = select::record_bytes(&layout);
            let slot = self.grow(
                Some(slot),
                select::HEADER_BYTES + expected * record,
                select::buffer_bytes(&layout, items),
            )?;
            let selector = match &mut self.selector {
                Some(s) => s,
                s => s.insert(AnchorSelector::new(&self.context)?),
            };
            let selection = slot.selection.as_ref().expect("allocated for a selection");
            // SAFETY: the tensors are the engine's outputs, written on its stream before this;
            // the selection buffer belongs to the slot, which is not reused before it is read.
            unsafe {
                selector.launch(
                    &self.stream,
                    tensors,
                    &layout,
                    items,
                    min_threshold,
                    selection,
                )
            }?;
            let mut slot = slot;
            let sel_ptr = slot.selection.as_ref().expect("present").ptr();
            // SAFETY: the copy reads the selection's header and first records (within its
            // size) and writes the slot's pinned buffer, which is read only after `done`.
            unsafe {
                slot.host.download_async(
                    &self.stream,
                    sel_ptr,
                    select::HEADER_BYTES + expected * record,
                )
            }?;
            let shapes = tensors.iter().map(|t| t.shape.clone()).collect();
            (
                slot,
                Readback::Selected {
                    layout,
                    shapes,
                    min_threshold,
                    expected,
                },
            )
        } else {
            let total: usize = tensors.iter().map(|t| t.bytes).sum();
            let mut slot = self.grow(Some(slot), total, 0)?;
            let mut offset = 0;
            for t in tensors {
                // SAFETY: each output holds `bytes` bytes in the engine's context; the slot's
                // pinned buffer holds `total`; it is read only after `done`.
                unsafe {
                    slot.host
                        .download_async_at(&self.stream, offset, t.ptr, t.bytes)
                }?;
                offset += t.bytes;
            }
            (
                slot,
                Readback::Whole {
                    tensors: tensors.to_vec(),
                },
            )
        };
        readback.0.done.record(&self.stream)?;
        Ok(readback)
    }

    /// The bytes of a selection beyond those the first download brought: copied now (the
    /// batch's slot is not reused before it is finished).
    pub fn read_rest(
        &mut self,
        slot: &Slot,
        from: usize,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), CudaError> {
        let stream = match &self.readback {
            Some(s) => s,
            None => self.readback.insert(Stream::new(&self.context, 0)?),
        };
        let selection = slot
            .selection
            .as_ref()
            .ok_or_else(|| CudaError::Invalid("no selection buffer".into()))?;
        if from + len > selection.len() {
            return Err(CudaError::Invalid("selection read out of range".into()));
        }
        out.resize(len, 0);
        // SAFETY: within the selection buffer, whose kernel has completed (`done` was waited
        // for by the caller).
        unsafe { ferrostream_core::cuda::download(stream, selection.ptr() + from as u64, out) }
    }

    /// Adapts the records copied with the first download to the last count seen.
    pub fn saw_records(&mut self, count: usize) {
        self.expected = (count + count / 2).max(MIN_EXPECTED_RECORDS);
    }

    /// Gives a finished batch's slot back for reuse.
    pub fn recycle(&mut self, slot: Slot) {
        if self.free.len() < 8 {
            self.free.push(slot);
        }
    }
}
