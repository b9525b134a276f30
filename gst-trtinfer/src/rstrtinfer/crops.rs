// SPDX-License-Identifier: MIT OR Apache-2.0
//! Running the engine over regions of the frames of one buffer: whole frames (primary mode) or
//! objects (secondary mode), from system memory or, pre-processed where they are, from GPU
//! memory. Regions go into engine calls of up to the engine's capacity, from every frame of a
//! batch.

use std::time::{Duration, Instant};

use ferrostream_core::BBox;
use ferrostream_core::batch::{FrameSource, frame_pixels};

use gst_video::prelude::*;

use crate::inference::{Inference, ItemResult, RemoteBatch};

/// A region to infer on: frame `frame` of the buffer, `roi` in its pixels (`None`: all of it).
#[derive(Debug, Clone, Copy)]
pub(super) struct Crop {
    pub frame: usize,
    pub roi: Option<BBox>,
}

/// Why a buffer could not be inferred: the error kind to post, and the message.
pub(super) type FrameError = (gst::StreamError, String);

/// What inference on one buffer did and how long each stage took.
#[derive(Default)]
pub(super) struct Work {
    /// Regions inferred (frames, or objects in secondary mode).
    pub items: u64,
    pub engine_calls: u64,
    /// Pre-processing, engine and parsing.
    pub times: [Duration; 3],
    /// Regions pre-processed in device memory.
    pub gpu_items: u64,
    pub tensor_copies: u64,
}

/// The pixels of frame `index` of `buf`, and their video info.
fn pixels<'a>(
    source: &'a FrameSource,
    buf: &'a gst::BufferRef,
    index: usize,
) -> Result<(&'a gst::BufferRef, &'a gst_video::VideoInfo), FrameError> {
    frame_pixels(source, buf, index).map_err(|e| (gst::StreamError::Format, e.to_string()))
}

fn whole(info: &gst_video::VideoInfo) -> BBox {
    BBox::new(0.0, 0.0, info.width() as f32, info.height() as f32)
}

/// Pre-processes `crops` of the frames of `buf` in system memory, infers and parses them.
/// Returns one result per crop. With `sent`, each engine call is sent to the inference server
/// instead ([`Inference::submit_remote`]) and collected there; no result is returned.
pub(super) fn infer_crops(
    inference: &mut Inference,
    source: &FrameSource,
    buf: &gst::BufferRef,
    crops: &[Crop],
    mut sent: Option<&mut Vec<RemoteBatch>>,
) -> Result<(Vec<ItemResult>, Work), FrameError> {
    let mut results = Vec::with_capacity(crops.len());
    let mut work = Work::default();
    let mut sizes = Vec::with_capacity(inference.capacity());
    for chunk in crops.chunks(inference.capacity()) {
        let t0 = Instant::now();
        sizes.clear();
        // Crops come in frame order: each frame is mapped once per chunk.
        let mut mapped: Option<(usize, gst_video::VideoFrameRef<&gst::BufferRef>)> = None;
        for (slot, crop) in chunk.iter().enumerate() {
            let frame = match &mapped {
                Some((index, frame)) if *index == crop.frame => frame,
                _ => {
                    let (buffer, info) = pixels(source, buf, crop.frame)?;
                    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, info)
                        .map_err(|_| {
                            (
                                gst::StreamError::Failed,
                                format!("Cannot map video frame {}", crop.frame),
                            )
                        })?;
                    &mapped.insert((crop.frame, frame)).1
                }
            };
            let image =
                super::frames::source_image(frame).map_err(|m| (gst::StreamError::Format, m))?;
            let info = frame.info();
            inference.preprocess(slot, &image, crop.roi.unwrap_or_else(|| whole(info)));
            sizes.push((info.width(), info.height()));
        }
        drop(mapped);
        run_chunk(
            inference,
            &sizes,
            t0,
            &mut results,
            &mut work,
            sent.as_deref_mut(),
        )?;
    }
    Ok((results, work))
}

/// Runs or sends one engine call of the `sizes.len()` pre-processed slots: to `sent` when
/// given, else as [`infer_and_parse`].
fn run_chunk(
    inference: &mut Inference,
    sizes: &[(u32, u32)],
    t0: Instant,
    results: &mut Vec<ItemResult>,
    work: &mut Work,
    sent: Option<&mut Vec<RemoteBatch>>,
) -> Result<(), FrameError> {
    let Some(sent) = sent else {
        return infer_and_parse(inference, sizes, t0, results, work);
    };
    let batch = inference
        .submit_remote(sizes.to_vec())
        .map_err(|m| (gst::StreamError::Failed, m))?;
    sent.push(batch);
    work.items += sizes.len() as u64;
    work.engine_calls += 1;
    work.times[0] += t0.elapsed();
    Ok(())
}

/// Runs the engine on the `sizes.len()` pre-processed slots (pre-processing began at `t0`),
/// appends each slot's result (its frame's size in `sizes`) and records the stage times.
fn infer_and_parse(
    inference: &mut Inference,
    sizes: &[(u32, u32)],
    t0: Instant,
    results: &mut Vec<ItemResult>,
    work: &mut Work,
) -> Result<(), FrameError> {
    let t1 = Instant::now();
    inference
        .infer(sizes.len())
        .map_err(|e| (gst::StreamError::Failed, e.to_string()))?;
    parse(inference, sizes, [t0, t1, Instant::now()], results, work)
}

/// Parses the last engine call's `sizes.len()` slots; `times` are when pre-processing, the
/// engine and parsing began.
fn parse(
    inference: &mut Inference,
    sizes: &[(u32, u32)],
    times: [Instant; 3],
    results: &mut Vec<ItemResult>,
    work: &mut Work,
) -> Result<(), FrameError> {
    let [t0, t1, t2] = times;
    for (slot, &(w, h)) in sizes.iter().enumerate() {
        results.push(inference.result(slot, w, h).map_err(|m| {
            (
                gst::StreamError::Decode,
                format!("Parsing the model outputs: {m}"),
            )
        })?);
    }
    let t3 = Instant::now();
    work.items += sizes.len() as u64;
    work.engine_calls += 1;
    for (total, d) in work.times.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2]) {
        *total += d;
    }
    Ok(())
}

/// The GPU side of the element: the context frames arrive in, and the pre-processing stage
/// loaded into it.
#[cfg(feature = "cuda")]
#[derive(Default)]
pub(super) struct GpuFrames {
    pub frames: ferrostream_core::cuda::DeviceFrames,
    pub stage: Option<crate::gpu::GpuStage>,
    pub stream_priority: i32,
    pub logged_tensor_copy: bool,
    /// Whether the "frames in another context" message was given.
    pub logged_copy: bool,
}

#[cfg(feature = "cuda")]
impl GpuFrames {
    /// Maps the frames of `chunk` (regions of `buf`, in device memory `memory`) and turns them
    /// into pre-processing jobs, all in one CUDA context.
    fn map_chunk<'b>(
        &mut self,
        memory: ferrostream_core::batch::MemoryKind,
        source: &'b FrameSource,
        buf: &'b gst::BufferRef,
        chunk: &[Crop],
    ) -> Result<MappedChunk<'b>, FrameError> {
        use crate::gpu::GpuJob;
        let cuda_error =
            |e: ferrostream_core::cuda::CudaError| (gst::StreamError::Failed, e.to_string());
        let mut mapped: Vec<(usize, ferrostream_core::cuda::DeviceFrame<'b>)> = Vec::new();
        let mut jobs = Vec::with_capacity(chunk.len());
        let mut sizes = Vec::with_capacity(chunk.len());
        for crop in chunk {
            let frame = match mapped.iter().position(|(index, _)| *index == crop.frame) {
                Some(i) => &mapped[i].1,
                None => {
                    let (buffer, info) = pixels(source, buf, crop.frame)?;
                    let frame = self
                        .frames
                        .map(memory, buffer, info, false)
                        .map_err(cuda_error)?;
                    if let Some((_, first)) = mapped.first()
                        && first.context.raw() != frame.context.raw()
                    {
                        return Err((
                            gst::StreamError::Format,
                            "the frames of one batch live in different CUDA contexts".into(),
                        ));
                    }
                    mapped.push((crop.frame, frame));
                    &mapped.last().expect("just pushed").1
                }
            };
            let (w, h) = (frame.image.width, frame.image.height);
            jobs.push(GpuJob {
                image: frame.image,
                roi: crop
                    .roi
                    .unwrap_or_else(|| BBox::new(0.0, 0.0, w as f32, h as f32)),
                matrix: super::frames::yuv_to_rgb(frame.matrix, frame.range),
            });
            sizes.push((w, h));
        }
        Ok(MappedChunk {
            mapped,
            jobs,
            sizes,
        })
    }

    /// Queues `crops` of the frames of `buf` (in device memory) on the engine's device side,
    /// one engine call per `capacity` regions, without waiting for the GPU. `None` when the
    /// engine has no device side. The frames must stay alive (the caller keeps `buf`) until
    /// every returned batch is finished; mappings whose device pointers end with the mapping
    /// (NVMM) are released only after the pre-processing has read them.
    pub(super) fn enqueue_crops(
        &mut self,
        inference: &mut Inference,
        memory: ferrostream_core::batch::MemoryKind,
        source: &FrameSource,
        buf: &gst::BufferRef,
        crops: &[Crop],
        log: &dyn Fn(String),
    ) -> Option<Result<Vec<crate::gpu::run::Pending>, FrameError>> {
        let engine_ctx = inference.engine_context()?;
        let mut run = || {
            let mut pending = Vec::new();
            for chunk in crops.chunks(inference.capacity()) {
                let MappedChunk {
                    mapped,
                    jobs,
                    sizes,
                } = self.map_chunk(memory, source, buf, chunk)?;
                let Some((_, first)) = mapped.first() else {
                    continue;
                };
                let ctx = first.context.clone();
                if ctx.raw() != engine_ctx.raw() && !std::mem::replace(&mut self.logged_copy, true)
                {
                    log(format!(
                        "the frames are in another CUDA context than the engine's (GPU {}): \
                         each pre-processed tensor is copied device to device into the \
                         engine's context; give the producer the engine's context to avoid it",
                        ctx.gpu_id()
                    ));
                }
                let batch = inference
                    .enqueue_device(&jobs, &ctx, sizes)
                    .expect("the engine has a device side")
                    .map_err(|m| (gst::StreamError::Failed, m))?;
                if memory == ferrostream_core::batch::MemoryKind::Nvmm {
                    batch
                        .slot
                        .preprocessed
                        .synchronize()
                        .map_err(|e| (gst::StreamError::Failed, e.to_string()))?;
                }
                drop(mapped);
                pending.push(batch);
            }
            Ok(pending)
        };
        Some(run())
    }

    /// Pre-processes `crops` of the frames of `buf` in device memory (`memory`) into the
    /// device tensor, then infers and parses as [`infer_crops`] does. Device engines read the
    /// tensor in place and only the selected rows come back; engines that take host memory get
    /// one copy of the tensor per engine call. The frames never leave the GPU. `log` receives
    /// the one-time messages about where the work runs.
    /// With `sent`, each engine call goes to the inference server as in [`infer_crops`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn infer_crops(
        &mut self,
        inference: &mut Inference,
        memory: ferrostream_core::batch::MemoryKind,
        source: &FrameSource,
        buf: &gst::BufferRef,
        crops: &[Crop],
        log: &dyn Fn(String),
        mut sent: Option<&mut Vec<RemoteBatch>>,
    ) -> Result<(Vec<ItemResult>, Work), FrameError> {
        use crate::gpu::GpuStage;

        let cuda_error =
            |e: ferrostream_core::cuda::CudaError| (gst::StreamError::Failed, e.to_string());
        let mut results = Vec::with_capacity(crops.len());
        let mut work = Work::default();
        let t0 = Instant::now();
        if let Some(pending) = self.enqueue_crops(inference, memory, source, buf, crops, log) {
            let t1 = Instant::now();
            for batch in pending? {
                let items = batch.sizes.len() as u64;
                results.extend(
                    inference
                        .finish_device(batch)
                        .map_err(|m| (gst::StreamError::Failed, m))?,
                );
                work.items += items;
                work.gpu_items += items;
                work.engine_calls += 1;
            }
            let t2 = Instant::now();
            work.times[0] += t1 - t0;
            work.times[1] += t2 - t1;
            return Ok((results, work));
        }
        for chunk in crops.chunks(inference.capacity()) {
            let t0 = Instant::now();
            let MappedChunk {
                mapped,
                jobs,
                sizes,
            } = self.map_chunk(memory, source, buf, chunk)?;
            let Some((_, first)) = mapped.first() else {
                continue;
            };
            let ctx = first.context.clone();
            let stage = match &mut self.stage {
                Some(stage) if stage.context().raw() == ctx.raw() => stage,
                stage => {
                    let new = GpuStage::new(&ctx, self.stream_priority, inference.tensor_bytes())
                        .map_err(cuda_error)?;
                    log(format!(
                        "pre-processing on GPU {} ({}) in the frames' CUDA context, stream \
                         priority {}",
                        ctx.gpu_id(),
                        ctx.device_name().unwrap_or_default(),
                        new.stream().priority()
                    ));
                    stage.insert(new)
                }
            };
            stage
                .preprocess(&jobs, inference.network(), inference.tensor_element_type())
                .map_err(cuda_error)?;
            work.gpu_items += chunk.len() as u64;
            // The engine takes host memory: one copy of the tensor (this waits for the stream,
            // after which the frames may be unmapped).
            let copied = inference.load_device_tensor(stage).map_err(cuda_error)?;
            drop(mapped);
            if !std::mem::replace(&mut self.logged_tensor_copy, true) {
                let d = inference.description();
                log(format!(
                    "{} on [{}] takes host memory here: the pre-processed tensor ({copied} bytes \
                     for {} images) is copied to the host once per engine call; the frames stay \
                     on the GPU",
                    d.backend,
                    d.providers.join(", "),
                    chunk.len()
                ));
            }
            work.tensor_copies += 1;
            run_chunk(
                inference,
                &sizes,
                t0,
                &mut results,
                &mut work,
                sent.as_deref_mut(),
            )?;
        }
        Ok((results, work))
    }
}

/// The mapped frames of one engine call and their pre-processing jobs.
#[cfg(feature = "cuda")]
struct MappedChunk<'b> {
    mapped: Vec<(usize, ferrostream_core::cuda::DeviceFrame<'b>)>,
    jobs: Vec<crate::gpu::GpuJob>,
    sizes: Vec<(u32, u32)>,
}
