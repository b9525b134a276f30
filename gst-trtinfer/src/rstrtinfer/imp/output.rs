// SPDX-License-Identifier: MIT OR Apache-2.0
//! The flow of buffers through rstrtinfer: pre-processing and engine calls as buffers come
//! (on the GPU where the frames are), the flight queue, the output thread that finishes each
//! buffer in order (read-back, parsing, metadata) and pushes it, and what stopping or flushing
//! abandons.

use super::*;

impl TrtInfer {
    /// Offers the primary context of `gpu-id` (the context the device engines work in) to
    /// GStreamer's CUDA elements: posted as a `gst.cuda.context` have-context message (the
    /// bin answers the need-context of decoders with it) and answered in context queries.
    /// Skipped for `device=cpu` and where there is no CUDA driver or GPU.
    #[cfg(feature = "cuda")]
    pub(super) fn share_engine_context(&self) {
        use ferrostream_core::cuda::{self, Context};
        let settings = self.settings.lock().unwrap().clone();
        let Ok((config, _)) = self.resolve_config(&settings) else {
            return; // reported by start(), with the warnings
        };
        if config.device == crate::config::Device::Cpu || !cuda::driver_present() {
            return;
        }
        if cuda::device_count().map_or(true, |n| config.gpu_id >= n) {
            return;
        }
        let shared =
            Context::primary(config.gpu_id).and_then(|c| cuda::gst_cuda::share_context(&c));
        match shared {
            Ok(context) => {
                gst::info!(
                    CAT,
                    imp = self,
                    "offering the primary CUDA context of GPU {} to upstream CUDA elements",
                    config.gpu_id
                );
                *self.shared_context.lock().unwrap() = Some(context.clone());
                let _ = self.obj().post_message(
                    gst::message::HaveContext::builder(context)
                        .src(&*self.obj())
                        .build(),
                );
            }
            Err(e) => gst::info!(
                CAT,
                imp = self,
                "not offering a CUDA context to upstream elements: {e}"
            ),
        }
    }

    /// The run's summary in the log: counts, the copy trace (process-wide, over the element's
    /// run) and the in-to-out time of buffers in flight.
    pub(super) fn log_summary(&self, st: &Stats) {
        #[cfg(feature = "cuda")]
        let t = ferrostream_core::cuda::transfers().since(*self.transfers_at_start.lock().unwrap());
        #[cfg(not(feature = "cuda"))]
        let t = (0u64, 0u64, 0u64);
        #[cfg(feature = "cuda")]
        let t = (t.to_host, t.to_device, t.between_contexts);
        let (p50, p95) = self.latency.lock().unwrap().summary();
        let (steady, steady_s) = self.throughput.lock().unwrap().steady().unwrap_or_default();
        gst::info!(
            CAT,
            imp = self,
            "summary: frames={} batches={} engine-calls={} to-host-bytes={} to-device-bytes={} \
             device-copy-bytes={} latency-ms-p50={p50:.2} latency-ms-p95={p95:.2} \
             steady-fps={steady:.1} steady-seconds={steady_s:.3}",
            st.frames,
            st.batches,
            st.engine_calls,
            t.0,
            t.1,
            t.2
        );
    }

    /// Queues `inbuf`'s work without waiting (GPU work on the engine's stream, or requests to
    /// the inference server) and hands it to the output thread.
    pub(super) fn submit_pipelined(
        &self,
        inbuf: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry_ns = now_ns();
        // Only a server's requests may be skipped (on-server-failure=drop); a local engine's
        // hold the stream back.
        let remote = self.answers_later.load(Ordering::SeqCst);
        let may_skip = self
            .server
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|w| w.on_failure == ServerFailure::Drop);
        // A request waits for room unless it may go without one (on-server-failure=drop).
        self.flight.wait_for_room(remote && !may_skip)?;
        let arrived = Instant::now();
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::Flushing);
        };
        let source = state.source.clone().ok_or(gst::FlowError::NotNegotiated)?;
        let (frames, single_size) = match &source {
            FrameSource::Single(info) => (1, Some((info.width(), info.height()))),
            FrameSource::Batched => (
                BatchMeta::of(&inbuf).map_or(0, |m| m.batch().frames.len()),
                None,
            ),
        };
        let number = state.buffers;
        state.buffers += 1;
        let component = state.inference.config().gie_unique_id;
        let mut warnings = Vec::new();
        self.warn_fixed_batch(state, frames, number, &mut warnings);
        let queued = if frames > 0 && state.inference.should_infer(number) {
            let crops: Vec<Crop> = (0..frames).map(|frame| Crop { frame, roi: None }).collect();
            let queued = if remote {
                if may_skip && !self.flight.request_room() {
                    Ok(Queued::Skipped)
                } else {
                    let mut sent = Vec::new();
                    self.run_crops(state, &inbuf, &crops, Some(&mut sent))
                        .map(|_| Queued::Remote(sent))
                }
            } else {
                self.enqueue_device(state, &source, &inbuf, &crops)
            };
            match queued {
                Ok(q) => q,
                Err((_, message)) if self.flight.interrupted() => {
                    // A flush or a stop refused the run: not an error.
                    gst::debug!(CAT, imp = self, "interrupted: {message}");
                    return Err(gst::FlowError::Flushing);
                }
                Err((kind, message)) => {
                    drop(guard);
                    gst::element_imp_error!(self, kind, ("{message}"));
                    return Err(gst::FlowError::Error);
                }
            }
        } else {
            Queued::Nothing
        };
        drop(guard);
        self.post_warnings(warnings, Vec::new());
        self.flight.push(InFlight {
            buffer: inbuf,
            queued,
            number,
            component,
            frames,
            single_size,
            arrived,
            queue_time: arrived.elapsed(),
            entry_ns,
        });
        self.count_in_flight();
        self.ensure_output_thread();
        Ok(gst::FlowSuccess::Ok)
    }

    /// Queues the GPU work of `crops` of `inbuf` on the device engine.
    #[cfg(feature = "cuda")]
    pub(super) fn enqueue_device(
        &self,
        state: &mut State,
        source: &FrameSource,
        inbuf: &gst::BufferRef,
        crops: &[Crop],
    ) -> Result<Queued, FrameError> {
        let memory = state.memory;
        state
            .gpu
            .enqueue_crops(&mut state.inference, memory, source, inbuf, crops, &|m| {
                gst::info!(CAT, imp = self, "{m}")
            })
            .expect("pipelined only with a device engine")
            .map(Queued::Device)
    }

    #[cfg(not(feature = "cuda"))]
    pub(super) fn enqueue_device(
        &self,
        _state: &mut State,
        _source: &FrameSource,
        _inbuf: &gst::BufferRef,
        _crops: &[Crop],
    ) -> Result<Queued, FrameError> {
        unreachable!("without the CUDA layer only remote engines are pipelined")
    }

    /// Starts the thread that finishes and pushes the buffers in flight, once.
    pub(super) fn ensure_output_thread(&self) {
        let mut thread = self.output_thread.lock().unwrap();
        if thread.is_some() {
            return;
        }
        let element = self.obj().clone();
        let flight = self.flight.clone();
        *thread = Some(
            std::thread::Builder::new()
                .name(format!("{}-out", self.obj().name()))
                .spawn(move || {
                    let imp = element.imp();
                    while let Some((item, flushing)) = flight.next() {
                        let result = if flushing {
                            discard(item);
                            Err(gst::FlowError::Flushing)
                        } else {
                            imp.finish_and_push(item)
                        };
                        flight.done(result);
                        imp.count_in_flight();
                    }
                })
                .expect("spawning the output thread"),
        );
    }

    /// Waits for a buffer's work (the GPU, or the server's answers), attaches its objects and
    /// pushes it downstream.
    pub(super) fn finish_and_push(
        &self,
        item: InFlight,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let InFlight {
            mut buffer,
            queued,
            number,
            component,
            frames,
            single_size,
            arrived,
            queue_time,
            entry_ns,
        } = item;
        let t0 = Instant::now();
        let mut work = Work::default();
        let results = match queued {
            Queued::Nothing => None,
            Queued::Skipped => {
                self.count_busy_drop(frames);
                None
            }
            #[cfg(feature = "cuda")]
            Queued::Device(pending) => Some(self.finish_device(pending, &mut work)?),
            Queued::Remote(batches) => self.finish_remote(batches, frames, &mut work)?,
        };
        let inferred = results.is_some();
        work.times[0] += queue_time;
        work.times[1] += t0.elapsed().saturating_sub(work.times[2]);
        let pts = buffer.pts();
        attach_primary(
            buffer.make_mut(),
            number,
            single_size,
            pts,
            component,
            results,
        );
        let metrics = {
            let mut stats = self.stats.lock().unwrap();
            // Only primary mode is pipelined.
            stats.record(frames as u64, inferred.then_some(&work), true);
            stats.metrics.clone()
        };
        if let Some(m) = metrics
            && let Some(mut meta) = buffer.make_mut().meta_mut::<BatchMeta>()
        {
            m.latency.record(meta.batch_mut(), entry_ns);
        }
        if inferred {
            self.throughput.lock().unwrap().record(frames as u64);
        }
        if inferred && let Some(latency) = self.latency.lock().unwrap().record(arrived.elapsed()) {
            gst::info!(CAT, imp = self, "latency raised to {latency}");
            let _ = self
                .obj()
                .post_message(gst::message::Latency::builder().src(&*self.obj()).build());
        }
        self.obj().src_pad().push(buffer)
    }

    /// Updates the queue-depth gauge from the buffers in flight.
    pub(super) fn count_in_flight(&self) {
        let depth = self.flight.in_flight();
        if let Some(m) = &self.stats.lock().unwrap().metrics {
            m.queue_depth.set(depth as f64);
        }
    }

    /// Waits for a buffer's GPU work and parses it.
    #[cfg(feature = "cuda")]
    pub(super) fn finish_device(
        &self,
        pending: Vec<crate::gpu::run::Pending>,
        work: &mut Work,
    ) -> Result<Vec<ItemResult>, gst::FlowError> {
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            discard_all(pending);
            return Err(gst::FlowError::Flushing);
        };
        let mut results = Vec::new();
        let mut pending = pending.into_iter();
        while let Some(batch) = pending.next() {
            let n = batch.sizes.len() as u64;
            match state.inference.finish_device(batch) {
                Ok(r) => results.extend(r),
                Err(message) => {
                    drop(guard);
                    discard_all(pending.collect());
                    gst::element_imp_error!(self, gst::StreamError::Failed, ("{message}"));
                    return Err(gst::FlowError::Error);
                }
            }
            work.items += n;
            work.gpu_items += n;
            work.engine_calls += 1;
        }
        let settings_warnings = state.inference.take_warnings();
        drop(guard);
        self.post_warnings(Vec::new(), settings_warnings);
        Ok(results)
    }

    /// Flushing (or stopping) with `true`: the buffers in flight are dropped, and whatever
    /// waits (for room, or for the inference server's answer, whatever the failure policy)
    /// returns within 100 ms.
    pub(super) fn interrupt(&self, interrupted: bool) {
        self.flight.set_flushing(interrupted);
        if let Some(w) = self.server.lock().unwrap().as_ref() {
            w.health.interrupt(interrupted);
        }
        // A run that may never end (a model looping 2^62 times) ends too.
        if let Some(engine) = self.engine_interrupt.lock().unwrap().as_ref() {
            engine.interrupt(interrupted);
        }
    }

    /// Posts warnings about the frames and about the settings (never under the state lock).
    pub(super) fn post_warnings(&self, frames: Vec<String>, settings: Vec<String>) {
        for warning in frames {
            gst::element_imp_warning!(self, gst::CoreError::Negotiation, ("{warning}"));
        }
        for warning in settings {
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{warning}"));
        }
    }

    /// Warns once that a model fixed to batch 1 runs a batch frame by frame.
    pub(super) fn warn_fixed_batch(
        &self,
        state: &mut State,
        frames: usize,
        number: u64,
        warnings: &mut Vec<String>,
    ) {
        if frames > 1
            && state.inference.should_infer(number)
            && state.inference.fixed_batch() == Some(1)
            && !std::mem::replace(&mut state.warned_fixed_batch, true)
        {
            warnings.push(
                "The model has a fixed batch size of 1: the frames of each batch are run one by \
                 one"
                .into(),
            );
        }
    }

    /// Runs the engine on `crops` of `buf`, on the GPU path when the frames are in GPU memory.
    /// With `sent`, the engine calls go to the inference server and are collected there.
    pub(super) fn run_crops(
        &self,
        state: &mut State,
        buf: &gst::BufferRef,
        crops: &[Crop],
        sent: Option<&mut Vec<crate::inference::RemoteBatch>>,
    ) -> Result<(Vec<ItemResult>, Work), FrameError> {
        let source = state.source.as_ref().expect("caps are set before buffers");
        match state.memory {
            MemoryKind::System => {
                crops::infer_crops(&mut state.inference, source, buf, crops, sent)
            }
            #[cfg(feature = "cuda")]
            memory @ (MemoryKind::Cuda | MemoryKind::Nvmm) => state.gpu.infer_crops(
                &mut state.inference,
                memory,
                source,
                buf,
                crops,
                &|m| gst::info!(CAT, imp = self, "{m}"),
                sent,
            ),
            #[cfg(not(feature = "cuda"))]
            other => Err((
                gst::StreamError::Format,
                format!("frames in {other:?} memory are not supported by this build"),
            )),
        }
    }

    /// Primary mode: infers whole frames (every `interval + 1`-th buffer) and adds the objects
    /// found to their frames.
    pub(super) fn infer_frames(
        &self,
        state: &mut State,
        buf: &mut gst::BufferRef,
        frames: usize,
        single_size: Option<(u32, u32)>,
        warnings: &mut Vec<String>,
    ) -> Outcome {
        let buffer_num = state.buffers;
        state.buffers += 1;
        self.warn_fixed_batch(state, frames, buffer_num, warnings);
        let inferred = if frames > 0 && state.inference.should_infer(buffer_num) {
            let crops: Vec<Crop> = (0..frames).map(|frame| Crop { frame, roi: None }).collect();
            Some(self.run_crops(state, buf, &crops, None)?)
        } else {
            None
        };
        let component = state.inference.config().gie_unique_id;
        let pts = buf.pts();
        let (results, work) = inferred.map_or((None, None), |(r, w)| (Some(r), Some(w)));
        attach_primary(buf, buffer_num, single_size, pts, component, results);
        Ok((work, PlanCounts::default()))
    }

    /// Secondary mode: infers the selected objects of every frame in engine calls of up to
    /// `batch-size`, reuses fresh cached results of tracked objects, and attaches each result
    /// to its object.
    pub(super) fn classify_objects(
        &self,
        state: &mut State,
        buf: &mut gst::BufferRef,
        warnings: &mut Vec<String>,
    ) -> Outcome {
        let secondary = state.secondary.as_mut().expect("secondary mode");
        let Some(meta) = BatchMeta::of(buf) else {
            // No frame carries objects: nothing to classify.
            return Ok((None, PlanCounts::default()));
        };
        let batch = meta.batch();
        warnings.extend(secondary.check_producer(batch));
        let plan = secondary.plan(batch);
        // Boxes refer to the frame size in the metadata: the pixels must have it too.
        let source = state.source.as_ref().expect("caps are set before buffers");
        let mut checked = None;
        for t in &plan.targets {
            if checked == Some(t.frame) {
                continue;
            }
            checked = Some(t.frame);
            let frame = &batch.frames[t.frame];
            let (_, info) = frame_pixels(source, buf, t.frame)
                .map_err(|e| (gst::StreamError::Format, e.to_string()))?;
            if (info.width(), info.height()) != (frame.width, frame.height) {
                return Err((
                    gst::StreamError::Format,
                    format!(
                        "source {} frame {}: the metadata describes a {}x{} frame but its \
                         pixels are {}x{}; object boxes cannot be cropped",
                        frame.source_id,
                        frame.frame_num,
                        frame.width,
                        frame.height,
                        info.width(),
                        info.height()
                    ),
                ));
            }
        }
        let crops: Vec<Crop> = plan
            .targets
            .iter()
            .map(|t| Crop {
                frame: t.frame,
                roi: Some(t.roi),
            })
            .collect();
        let inferred = if crops.is_empty() {
            None
        } else {
            Some(self.run_crops(state, buf, &crops, None)?)
        };
        let secondary = state.secondary.as_mut().expect("secondary mode");
        let component = state.inference.config().gie_unique_id;
        let counts = PlanCounts {
            objects: plan.objects() as u64,
            cached: plan.cached.len() as u64,
        };
        let mut meta = BatchMeta::get_or_add(buf);
        let batch = meta.batch_mut();
        let (results, work) = inferred.map_or((Vec::new(), None), |(r, w)| (r, Some(w)));
        for (target, result) in plan.targets.iter().zip(results) {
            let frame = &mut batch.frames[target.frame];
            secondary.store(frame, target, &result);
            secondary::attach(frame, target.object, result, component);
        }
        for (frame, object, result) in plan.cached {
            secondary::attach(&mut batch.frames[frame], object, result, component);
        }
        for frame in &mut batch.frames {
            frame.mark_component_run(component);
        }
        Ok((work, counts))
    }
}

/// Primary mode: gives a plain frame its frame metadata and adds each frame's objects (when the
/// buffer was inferred), marking the component as run.
fn attach_primary(
    buf: &mut gst::BufferRef,
    number: u64,
    single_size: Option<(u32, u32)>,
    pts: Option<gst::ClockTime>,
    component: i32,
    results: Option<Vec<ItemResult>>,
) {
    let mut meta = BatchMeta::get_or_add(buf);
    let batch = meta.batch_mut();
    if let Some((width, height)) = single_size
        && batch.frames.is_empty()
    {
        let mut frame = Frame::new(0, number, width, height);
        frame.pts = pts;
        batch.frames.push(frame);
    }
    let Some(results) = results else {
        return;
    };
    for (frame, mut result) in batch.frames.iter_mut().zip(results) {
        if let Some(map) = result.segmentation.take() {
            frame.segmentation = Some(map);
        }
        let objects = result.into_frame_objects(frame.width, frame.height);
        gst::log!(
            CAT,
            "source {} frame {}: {} objects",
            frame.source_id,
            frame.frame_num,
            objects.len()
        );
        frame.objects.extend(objects);
        frame.mark_component_run(component);
    }
}

/// Drops a buffer in flight without pushing it, once its GPU work is done (its read-back
/// memory may still be written until then); requests to a server are abandoned.
fn discard(item: InFlight) {
    #[cfg(feature = "cuda")]
    if let Queued::Device(pending) = item.queued {
        discard_all(pending);
    }
    #[cfg(not(feature = "cuda"))]
    drop(item);
}

#[cfg(feature = "cuda")]
fn discard_all(pending: Vec<crate::gpu::run::Pending>) {
    for p in pending {
        let _ = p.slot.done.synchronize();
    }
}
