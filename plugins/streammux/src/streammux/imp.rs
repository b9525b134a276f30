// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use ferrostream_core::batch::{self, MemoryKind, SourceStream, Surface, events};
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::metrics::{self, Counter, Gauge, Histogram};
use ferrostream_core::{Batch, BatchMeta, Frame, FrameLatency};
use gst::glib;
use gst::glib::translate::{IntoGlib, ToGlibPtr};
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use crate::convert::{Rect, Scaler};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsstreammux",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream stream muxer"),
    )
});

const DEFAULT_BATCH_SIZE: u32 = 0;
const DEFAULT_PUSH_TIMEOUT_US: i64 = -1;

#[derive(Debug, Clone, Copy)]
struct Settings {
    batch_size: u32,
    /// Microseconds, as nvstreammux; negative: wait for every source.
    batched_push_timeout: i64,
    max_latency: gst::ClockTime,
    sync_inputs: bool,
    width: u32,
    height: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            batch_size: DEFAULT_BATCH_SIZE,
            batched_push_timeout: DEFAULT_PUSH_TIMEOUT_US,
            max_latency: gst::ClockTime::ZERO,
            sync_inputs: false,
            width: 0,
            height: 0,
        }
    }
}

impl Settings {
    fn push_timeout(&self) -> Option<gst::ClockTime> {
        u64::try_from(self.batched_push_timeout)
            .ok()
            .map(gst::ClockTime::from_useconds)
    }

    fn output_size(&self) -> Option<(u32, u32)> {
        (self.width > 0 && self.height > 0).then_some((self.width, self.height))
    }
}

#[derive(Default)]
struct State {
    /// Clock time (not running time) at which the oldest frame not yet batched was first seen:
    /// its deadline must not move when the base time does (the bin sets it for PLAYING only
    /// after the muxer's thread may have looked at its clock).
    first_pending: Option<gst::ClockTime>,
    /// Latency this element reports downstream (upstream's plus its own), once queried.
    reported_latency: Option<gst::ClockTime>,
    /// Sources that ended since the last batch; announced before the next one.
    ended_sources: Vec<u32>,
    /// Sources whose stream started again (a new stream-start, e.g. a camera that
    /// reconnected); announced before the next batch.
    restarted_sources: Vec<u32>,
    /// Whether a batch went out since start (events may only follow stream-start and caps).
    pushed_any: bool,
    last_pts: Option<gst::ClockTime>,
    /// Source id the next batch starts from, so that batches smaller than the number of sources
    /// serve every source in turn.
    next_source: u32,
    caps_changed: bool,
    batches: u64,
    /// Frames received and never batched (flushed, or queued on a released pad).
    frames_dropped: u64,
    /// From start to stop.
    metrics: Option<Metrics>,
}

/// Frames per batch: the buckets of `ferrostream_streammux_batch_frames`.
const BATCH_FRAME_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// The element's Prometheus series (labelled with its name) and its latency records.
struct Metrics {
    element: String,
    batches: Counter,
    batch_frames: Histogram,
    batch_size: Gauge,
    sources: Gauge,
    /// Per source id.
    dropped: BTreeMap<u32, Counter>,
    latency: LatencyRecorder,
}

impl Metrics {
    fn new(element: String, batch_size: u32) -> Self {
        let registry = metrics::global();
        let labels = [("element", element.as_str())];
        let m = Metrics {
            batches: registry.counter(
                "ferrostream_streammux_batches_total",
                "Batches pushed by the muxer",
                &labels,
            ),
            batch_frames: registry.histogram(
                "ferrostream_streammux_batch_frames",
                "Frames per batch",
                &labels,
                BATCH_FRAME_BUCKETS,
            ),
            batch_size: registry.gauge(
                "ferrostream_streammux_batch_size",
                "The configured batch-size (0: one frame per source)",
                &labels,
            ),
            sources: registry.gauge(
                "ferrostream_streammux_sources",
                "Linked sink pads of the muxer",
                &labels,
            ),
            dropped: BTreeMap::new(),
            latency: LatencyRecorder::new(element.clone()),
            element,
        };
        m.batch_size.set(batch_size.into());
        m
    }

    /// The dropped-frames counter of `source_id`, made at its first use.
    fn dropped(&mut self, source_id: u32) -> &Counter {
        self.dropped.entry(source_id).or_insert_with(|| {
            let source = source_id.to_string();
            metrics::global().counter(
                "ferrostream_streammux_frames_dropped_total",
                "Frames the muxer received and discarded (flushed, or queued on a released pad)",
                &[("element", &self.element), ("source_id", &source)],
            )
        })
    }
}

#[derive(Default)]
pub struct StreamMux {
    settings: Mutex<Settings>,
    state: Mutex<State>,
    /// `latency-tracking`: read per buffer by the sink pads, so kept outside the settings.
    latency_tracking: AtomicBool,
}

/// A pad with its source id, for ordering.
struct SourcePad {
    id: u32,
    pad: super::StreamMuxPad,
}

impl StreamMux {
    /// Whether frames get latency records (`latency-tracking`).
    pub(super) fn latency_tracking(&self) -> bool {
        self.latency_tracking.load(Ordering::Relaxed)
    }

    /// Counts `frames` of `source_id` that were received and never batched.
    pub(super) fn count_dropped(&self, source_id: u32, frames: u64) {
        if frames == 0 {
            return;
        }
        gst::debug!(
            CAT,
            imp = self,
            "source {source_id}: {frames} queued frames dropped"
        );
        let mut state = self.state.lock().unwrap();
        state.frames_dropped += frames;
        if let Some(m) = state.metrics.as_mut() {
            m.dropped(source_id).add(frames);
        }
    }

    /// Updates the gauge of linked sources (a sink pad was linked or unlinked, or the element
    /// started).
    pub(super) fn count_sources(&self) {
        let linked = self
            .obj()
            .sink_pads()
            .iter()
            .filter(|p| p.is_linked())
            .count();
        if let Some(m) = self.state.lock().unwrap().metrics.as_ref() {
            m.sources.set(linked as f64);
        }
    }

    fn source_pads(&self) -> Vec<SourcePad> {
        let mut pads: Vec<SourcePad> = self
            .obj()
            .sink_pads()
            .into_iter()
            .filter_map(|p| p.downcast::<super::StreamMuxPad>().ok())
            .map(|pad| SourcePad {
                id: pad.imp().source_id(),
                pad,
            })
            .collect();
        pads.sort_by_key(|p| p.id);
        pads
    }

    /// The format other sources already use, which a new source must match.
    fn format_of_others(&self, except: &gst_base::AggregatorPad) -> Option<gst_video::VideoFormat> {
        self.layout_of_others(except).map(|(format, _)| format)
    }

    /// The format and memory other sources already use, which a new source must match.
    fn layout_of_others(
        &self,
        except: &gst_base::AggregatorPad,
    ) -> Option<(gst_video::VideoFormat, MemoryKind)> {
        self.source_pads()
            .into_iter()
            .filter(|p| p.pad.upcast_ref::<gst_base::AggregatorPad>() != except)
            .find_map(|p| {
                let state = p.pad.imp().state.lock().unwrap();
                state.info().map(|i| (i.format(), state.memory))
            })
    }

    /// Caps a sink pad can take: raw video, in the format of the other sources when there are
    /// some, else in the formats downstream takes.
    fn sink_caps(&self, pad: &gst_base::AggregatorPad) -> gst::Caps {
        let template = pad.pad_template_caps();
        let restriction = match self.layout_of_others(pad) {
            Some((format, memory)) => {
                let features = memory
                    .feature()
                    .unwrap_or(gst::CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
                gst::Caps::builder("video/x-raw")
                    .features([features])
                    .field("format", format.to_str())
                    .build()
            }
            None => {
                // The formats of the batches downstream takes, as plain video in the same memory.
                let downstream = self.obj().src_pad().peer_query_caps(None);
                if downstream.is_any() {
                    return template;
                }
                let mut plain = gst::Caps::new_empty();
                {
                    let plain = plain.get_mut().expect("new caps");
                    for (s, f) in downstream.iter_with_features() {
                        let mut s = s.to_owned();
                        s.remove_fields(["width", "height", "framerate"]);
                        let memory = gst::CapsFeatures::new(
                            f.iter().filter(|name| *name != batch::BATCH_FEATURE),
                        );
                        let memory = if memory.is_empty() {
                            gst::CapsFeatures::new([gst::CAPS_FEATURE_MEMORY_SYSTEM_MEMORY])
                        } else {
                            memory
                        };
                        plain.append_structure_full(s, Some(memory));
                    }
                }
                plain
            }
        };
        template.intersect(&restriction)
    }

    /// Warns (once per pad) when a source can only produce formats other than the batch's:
    /// upstream then fails with a bare "not-negotiated".
    /// `offered`: what upstream proposes; asked from upstream when `None`.
    fn explain_format_mismatch(
        &self,
        pad: &gst_base::AggregatorPad,
        offered: Option<&gst::CapsRef>,
    ) {
        let Some(format) = self.format_of_others(pad) else {
            return;
        };
        let queried;
        let offered = match offered {
            Some(caps) => caps,
            None => {
                queried = pad.peer_query_caps(None);
                &queried
            }
        };
        // The batch's format in whatever memory each offered structure is (NVMM, CUDA, system).
        let takes_format = offered.iter_with_features().any(|(structure, features)| {
            let mut one = gst::Caps::new_empty();
            one.get_mut()
                .expect("new caps are writable")
                .append_structure_full(structure.to_owned(), Some(features.to_owned()));
            let takes = gst::Caps::builder("video/x-raw")
                .features(features.iter())
                .field("format", format.to_str())
                .build();
            one.can_intersect(&takes)
        });
        if offered.is_any() || !offered.can_intersect(&pad.pad_template_caps()) || takes_format {
            return;
        }
        let Some(mux_pad) = pad.downcast_ref::<super::StreamMuxPad>() else {
            return;
        };
        if std::mem::replace(&mut mux_pad.imp().state.lock().unwrap().warned_format, true) {
            return;
        }
        let offered: Vec<String> = offered
            .iter()
            .filter_map(|s| {
                s.value("format")
                    .ok()
                    .map(|v| v.serialize().map(|v| v.to_string()).unwrap_or_default())
            })
            .collect();
        gst::element_imp_warning!(
            self,
            gst::CoreError::Negotiation,
            (
                "{} offers format {} but the batch is {}; all frames of a batch share one \
                 format (put videoconvert before this pad)",
                pad.name(),
                offered.join(", "),
                format.to_str()
            )
        );
    }

    /// The batch caps: the sources' format, the highest frame rate, and the output size when
    /// frames are scaled.
    fn batch_caps(&self) -> Option<gst::Caps> {
        let settings = *self.settings.lock().unwrap();
        let mut format = None;
        let mut memory = MemoryKind::System;
        let mut fps = gst::Fraction::new(0, 1);
        for p in self.source_pads() {
            let state = p.pad.imp().state.lock().unwrap();
            if let Some(info) = state.info() {
                if format.is_none() {
                    memory = state.memory;
                }
                format.get_or_insert(info.format());
                if info.fps() > fps {
                    fps = info.fps();
                }
            }
        }
        let features: Vec<&str> = std::iter::once(batch::BATCH_FEATURE)
            .chain(memory.feature())
            .collect();
        let mut builder = gst::Caps::builder("video/x-raw")
            .features(features)
            .field("format", format?.to_str())
            .field("framerate", fps);
        if let Some((w, h)) = settings.output_size() {
            builder = builder.field("width", w as i32).field("height", h as i32);
        }
        Some(builder.build())
    }

    /// Records a source's caps. Fails when they do not fit the batch.
    fn handle_caps(&self, pad: &super::StreamMuxPad, caps: &gst::Caps) -> Result<(), String> {
        let info = gst_video::VideoInfo::from_caps(caps)
            .map_err(|_| format!("{}: invalid video caps {caps}", pad.name()))?;
        let memory = MemoryKind::from_caps(caps);
        if let Some((_, other)) = self.layout_of_others(pad.upcast_ref())
            && other != memory
        {
            return Err(format!(
                "{} sends frames in {memory:?} memory but the other sources' are in {other:?} \
                 memory; all frames of a batch live in one kind of memory (use cudaupload or \
                 cudadownload before this pad)",
                pad.name()
            ));
        }
        if memory.is_device() && self.settings.lock().unwrap().output_size().is_some() {
            return Err(format!(
                "{}: scaling frames in GPU memory to width x height is not supported; set \
                 width=0 height=0 to batch them at their own size (by reference)",
                pad.name()
            ));
        }
        if let Some(other) = self.format_of_others(pad.upcast_ref())
            && other != info.format()
        {
            return Err(format!(
                "{} has format {} but the other sources have {}; all frames of a batch share \
                 one format (put videoconvert ! video/x-raw,format={} before this pad)",
                pad.name(),
                info.format().to_str(),
                other.to_str(),
                other.to_str()
            ));
        }
        let settings = *self.settings.lock().unwrap();
        let mut state = pad.imp().state.lock().unwrap();
        let (stream_caps, stream_info) = match settings.output_size() {
            Some((w, h)) => {
                let out = gst_video::VideoInfo::builder(info.format(), w, h)
                    .fps(info.fps())
                    .colorimetry(&info.colorimetry())
                    .chroma_site(info.chroma_site())
                    .interlace_mode(info.interlace_mode())
                    .build()
                    .map_err(|e| format!("{}: cannot scale to {w}x{h}: {e}", pad.name()))?;
                let out_caps = out.to_caps().map_err(|e| format!("{}: {e}", pad.name()))?;
                let pool = gst_video::VideoBufferPool::new();
                let mut config = pool.config();
                config.set_params(Some(&out_caps), out.size() as u32, 2, 0);
                pool.set_config(config)
                    .and_then(|_| pool.set_active(true))
                    .map_err(|e| format!("{}: scaling pool: {e}", pad.name()))?;
                state.scaler = Some((Scaler::new(1), pool.upcast()));
                (out_caps, out)
            }
            None => {
                state.scaler = None;
                (caps.clone(), info.clone())
            }
        };
        let changed = state
            .info()
            .is_none_or(|old| old.fps() != info.fps() || old.format() != info.format());
        let segment = state
            .stream
            .as_ref()
            .map(|s| s.segment.clone())
            .unwrap_or_default();
        state.stream = Some(Arc::new(SourceStream {
            source_id: pad.imp().source_id(),
            caps: stream_caps,
            info: stream_info,
            segment,
            stream_id: state.stream_id.clone(),
        }));
        state.source_info = Some(info);
        state.memory = memory;
        drop(state);
        if changed {
            self.state.lock().unwrap().caps_changed = true;
        }
        Ok(())
    }

    /// Builds the frame and surface of `buffer` from source `pad`.
    fn take_frame(
        &self,
        pad: &super::StreamMuxPad,
        buffer: gst::Buffer,
        index: u32,
    ) -> Result<(Frame, Surface, Option<gst::ClockTime>), gst::FlowError> {
        let mut guard = pad.imp().state.lock().unwrap();
        let state = &mut *guard;
        state.pending = state.pending.saturating_sub(1);
        let origin = self
            .latency_tracking()
            .then(|| state.take_arrival(&buffer).unwrap_or_else(now_ns));
        let (Some(stream), Some(source)) = (state.stream.clone(), state.source_info.as_ref())
        else {
            drop(guard);
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("{} sent a buffer before its caps", pad.name())
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        let info = &stream.info;
        let mut frame = Frame::new(stream.source_id, state.frames, info.width(), info.height());
        state.frames += 1;
        frame.source_width = source.width();
        frame.source_height = source.height();
        frame.latency = origin.map(FrameLatency::new);
        frame.pts = buffer.pts();
        frame.surface_index = index;
        let running_time = buffer
            .pts()
            .and_then(|pts| stream.segment.to_running_time(pts));
        // Objects found before the muxer (a detector on a single stream) stay with the frame.
        if let Some(meta) = BatchMeta::of(&buffer)
            && let [single] = &meta.batch().frames[..]
        {
            let mut single = single.clone();
            single.rescale(frame.width, frame.height);
            frame.objects = single.objects;
            frame.components_run = single.components_run;
        }
        let pixels = match &mut state.scaler {
            None => buffer,
            Some((scaler, pool)) => scale(scaler, pool, &buffer, source, info).map_err(|m| {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("{m}"));
                gst::FlowError::Error
            })?,
        };
        drop(guard);
        Ok((
            frame,
            Surface {
                buffer: pixels,
                stream,
            },
            running_time,
        ))
    }

    /// Pushes the stream-eos and stream-restart events owed, once downstream has seen the first
    /// batch.
    fn announce_ended_sources(&self) {
        let (ended, restarted) = {
            let mut state = self.state.lock().unwrap();
            if !state.pushed_any {
                return;
            }
            (
                std::mem::take(&mut state.ended_sources),
                std::mem::take(&mut state.restarted_sources),
            )
        };
        for source_id in ended {
            gst::debug!(CAT, imp = self, "source {source_id} ended");
            self.obj()
                .src_pad()
                .push_event(events::stream_eos(source_id));
        }
        for source_id in restarted {
            gst::debug!(CAT, imp = self, "source {source_id} restarted");
            self.obj()
                .src_pad()
                .push_event(events::stream_restart(source_id));
        }
    }

    /// Frames that may go into the next batches: the head buffer of every source, or with
    /// `sync-inputs` only those within one frame period of the earliest.
    fn candidates(&self, sync_inputs: bool) -> Vec<(SourcePad, gst::Buffer)> {
        let mut ready = Vec::new();
        for p in self.source_pads() {
            let Some(buffer) = p.pad.peek_buffer() else {
                continue;
            };
            if buffer.flags().contains(gst::BufferFlags::GAP) && buffer.size() == 0 {
                // No frame: neither batched nor counted as dropped.
                p.pad.drop_buffer();
                let mut source = p.pad.imp().state.lock().unwrap();
                source.pending = source.pending.saturating_sub(1);
                source.take_arrival(&buffer);
                continue;
            }
            ready.push((p, buffer));
        }
        if !sync_inputs {
            return ready;
        }
        let timing: Vec<_> = ready
            .iter()
            .map(|(p, b)| {
                let state = p.pad.imp().state.lock().unwrap();
                let stream = state.stream.as_deref();
                let rt = b
                    .pts()
                    .zip(stream)
                    .and_then(|(pts, s)| s.segment.to_running_time(pts));
                let period = b.duration().or_else(|| {
                    stream.map(|s| &s.info).and_then(|i| {
                        let fps = i.fps();
                        (fps.numer() > 0).then(|| {
                            gst::ClockTime::SECOND
                                .mul_div_floor(fps.denom() as u64, fps.numer() as u64)
                                .unwrap_or(gst::ClockTime::ZERO)
                        })
                    })
                });
                (rt, period)
            })
            .collect();
        let Some((earliest, period)) = timing
            .iter()
            .filter_map(|&(rt, period)| rt.map(|rt| (rt, period)))
            .min_by_key(|&(rt, _)| rt)
        else {
            return ready;
        };
        let horizon = earliest
            + period
                .unwrap_or(gst::ClockTime::ZERO)
                .max(gst::ClockTime::NSECOND);
        ready
            .into_iter()
            .zip(timing)
            .filter(|(_, (rt, _))| rt.is_none_or(|rt| rt < horizon))
            .map(|(c, _)| c)
            .collect()
    }
}

/// `gst_aggregator_set_force_live` (GStreamer 1.22+), looked up at run time so that one build
/// also runs on 1.20. Returns whether it exists.
fn set_force_live(aggregator: &super::StreamMux, live: bool) -> bool {
    type SetForceLive =
        unsafe extern "C" fn(*mut gst_base::ffi::GstAggregator, glib::ffi::gboolean);
    static SYMBOL: LazyLock<Option<SetForceLive>> = LazyLock::new(|| {
        // SAFETY: looking up a symbol of the already loaded GStreamer base library; when found it
        // has the documented signature `void (GstAggregator *, gboolean)`.
        unsafe {
            let f = libc::dlsym(
                libc::RTLD_DEFAULT,
                c"gst_aggregator_set_force_live".as_ptr(),
            );
            (!f.is_null()).then(|| std::mem::transmute::<*mut libc::c_void, SetForceLive>(f))
        }
    });
    let Some(set) = *SYMBOL else {
        return false;
    };
    // SAFETY: `aggregator` is a live GstAggregator.
    unsafe {
        set(
            aggregator
                .upcast_ref::<gst_base::Aggregator>()
                .to_glib_none()
                .0,
            live.into_glib(),
        )
    };
    true
}

/// Every raw format, the ones decoders and inference use most first (a source that can produce
/// several picks the first).
/// Formats batched in GPU memory: those the GPU kernels read.
fn device_formats() -> impl Iterator<Item = &'static str> + Clone {
    ferrostream_core::device::DEVICE_FORMATS
        .iter()
        .map(|f| f.to_str().as_str())
}

fn preferred_formats() -> Vec<gst_video::VideoFormat> {
    use gst_video::VideoFormat as F;
    let first = [
        F::Nv12,
        F::I420,
        F::Rgba,
        F::Bgrx,
        F::Bgra,
        F::Rgbx,
        F::Rgb,
        F::Bgr,
    ];
    first
        .into_iter()
        .chain(gst_video::VideoFormat::iter_raw().filter(|f| !first.contains(f)))
        .collect()
}

/// Scales one source frame into a buffer of the muxer's output size.
fn scale(
    scaler: &mut Scaler,
    pool: &gst::BufferPool,
    buffer: &gst::Buffer,
    in_info: &gst_video::VideoInfo,
    out_info: &gst_video::VideoInfo,
) -> Result<gst::Buffer, String> {
    let mut out = pool
        .acquire_buffer(None)
        .map_err(|e| format!("no buffer from the scaling pool: {e:?}"))?;
    {
        let out_ref = out.get_mut().ok_or("pool buffer not writable")?;
        let src = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), in_info)
            .map_err(|_| "cannot map the source frame")?;
        let mut dest = gst_video::VideoFrameRef::from_buffer_ref_writable(out_ref, out_info)
            .map_err(|_| "cannot map the scaled frame")?;
        let rect = Rect {
            x: 0,
            y: 0,
            width: out_info.width() as i32,
            height: out_info.height() as i32,
        };
        scaler.convert(&src, &mut dest, rect)?;
    }
    {
        let out_ref = out.get_mut().expect("checked above");
        out_ref.set_pts(buffer.pts());
        out_ref.set_dts(buffer.dts());
        out_ref.set_duration(buffer.duration());
    }
    Ok(out)
}

#[glib::object_subclass]
impl ObjectSubclass for StreamMux {
    const NAME: &'static str = "GstRsStreamMux";
    type Type = super::StreamMux;
    type ParentType = gst_base::Aggregator;
}

impl ObjectImpl for StreamMux {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let size = |name: &str, nick: &str| {
                glib::ParamSpecUInt::builder(name)
                    .nick(nick)
                    .blurb(&format!(
                        "Scale every frame to this {name} (0: keep native sizes)"
                    ))
                    .maximum(16384)
                    .default_value(0)
                    .mutable_ready()
                    .build()
            };
            vec![
                glib::ParamSpecUInt::builder("batch-size")
                    .nick("Batch size")
                    .blurb("Maximum frames per batch (0: one per source)")
                    .maximum(1024)
                    .default_value(DEFAULT_BATCH_SIZE)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecInt64::builder("batched-push-timeout")
                    .nick("Push timeout")
                    .blurb(
                        "Microseconds after the first frame of a batch arrived before the batch \
                         leaves without the sources that have no frame yet (-1: wait for every \
                         source)",
                    )
                    .minimum(-1)
                    .default_value(DEFAULT_PUSH_TIMEOUT_US)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt64::builder("max-latency")
                    .nick("Maximum latency")
                    .blurb(
                        "Extra latency (ns) allowed for live sources to deliver a frame, added to \
                         the latency this element reports (may change while playing)",
                    )
                    .default_value(0)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecBoolean::builder("sync-inputs")
                    .nick("Synchronise inputs")
                    .blurb(
                        "Batch only frames whose running times lie within one frame period of \
                         the earliest queued frame, so a batch shows every source at the same \
                         moment",
                    )
                    .default_value(false)
                    .mutable_playing()
                    .build(),
                size("width", "Width"),
                size("height", "Height"),
                glib::ParamSpecBoolean::builder("latency-tracking")
                    .nick("Latency tracking")
                    .blurb(
                        "Give every frame a latency record: when it reached the muxer, and when \
                         each element had it (the frame's `latency`, and the \
                         ferrostream_component_latency_seconds and \
                         ferrostream_frame_latency_seconds metrics)",
                    )
                    .default_value(false)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt64::builder("batches")
                    .nick("Batches")
                    .blurb("Batches pushed since start")
                    .read_only()
                    .build(),
                glib::ParamSpecUInt64::builder("frames-dropped")
                    .nick("Frames dropped")
                    .blurb(
                        "Frames received since start and never batched (flushed, or queued on a \
                         released pad)",
                    )
                    .read_only()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        if pspec.name() == "latency-tracking" {
            let on = value.get().expect("type checked upstream");
            if !self.latency_tracking.swap(on, Ordering::Relaxed) || on {
                return;
            }
            // Arrival times noted before would be stale when tracking starts again.
            for p in self.source_pads() {
                p.pad.imp().state.lock().unwrap().forget_arrivals();
            }
            return;
        }
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "batch-size" => {
                s.batch_size = value.get().expect("type checked upstream");
                if let Some(m) = self.state.lock().unwrap().metrics.as_ref() {
                    m.batch_size.set(s.batch_size.into());
                }
            }
            "batched-push-timeout" => {
                s.batched_push_timeout = value.get().expect("type checked upstream");
                let timeout = s.push_timeout();
                drop(s);
                // While running, the latency the muxer adds changes with it.
                let obj = self.obj();
                if obj.current_state() >= gst::State::Paused
                    && let Some(timeout) = timeout
                {
                    obj.set_latency(timeout, Some(timeout));
                    let _ = obj.post_message(gst::message::Latency::builder().src(&*obj).build());
                }
            }
            "max-latency" => {
                s.max_latency =
                    gst::ClockTime::from_nseconds(value.get().expect("type checked upstream"));
                let latency = s.max_latency;
                drop(s);
                // While running, the aggregator's own latency follows (it posts a latency
                // message, so the pipeline's latency is computed again).
                let obj = self.obj();
                if obj.current_state() >= gst::State::Paused {
                    obj.set_property("latency", latency);
                }
            }
            "sync-inputs" => s.sync_inputs = value.get().expect("type checked upstream"),
            "width" => s.width = value.get().expect("type checked upstream"),
            "height" => s.height = value.get().expect("type checked upstream"),
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "batch-size" => s.batch_size.to_value(),
            "batched-push-timeout" => s.batched_push_timeout.to_value(),
            "max-latency" => s.max_latency.nseconds().to_value(),
            "sync-inputs" => s.sync_inputs.to_value(),
            "width" => s.width.to_value(),
            "height" => s.height.to_value(),
            "latency-tracking" => self.latency_tracking().to_value(),
            "batches" => self.state.lock().unwrap().batches.to_value(),
            "frames-dropped" => self.state.lock().unwrap().frames_dropped.to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }
}

impl GstObjectImpl for StreamMux {}

impl ElementImpl for StreamMux {
    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        let result = self.parent_change_state(transition)?;
        if transition == gst::StateChange::PausedToPlaying
            && self.settings.lock().unwrap().push_timeout().is_some()
        {
            // With sources that are not live, frames can fill the pads while the pipeline
            // prerolls, before there is a clock. The aggregator then waits for new data without
            // a deadline, and a stalled source would hold batches forever. Now that the clock
            // is set, a latency query wakes it (the aggregator signals its thread after one), so
            // it waits on the clock for batched-push-timeout instead.
            let mut query = gst::query::Latency::new();
            let answered = self.obj().src_pad().query(&mut query);
            gst::debug!(
                CAT,
                imp = self,
                "woke the aggregator on PLAYING (latency query answered: {answered})"
            );
        }
        Ok(result)
    }

    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream stream muxer",
                "Muxer/Video/Analytics",
                "Batches frames of several sources into one buffer without copying pixels",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let formats: Vec<&str> = preferred_formats()
                .into_iter()
                .map(|f| f.to_str().as_str())
                .collect();
            vec![
                gst::PadTemplate::with_gtype(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &{
                        let mut caps = batch::batch_caps(formats);
                        for memory in [MemoryKind::Cuda, MemoryKind::Nvmm] {
                            caps.merge(batch::batch_caps_in(device_formats(), memory));
                        }
                        caps
                    },
                    gst_base::AggregatorPad::static_type(),
                )
                .expect("valid pad template"),
                gst::PadTemplate::with_gtype(
                    "sink_%u",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Request,
                    &{
                        let mut caps = gst_video::VideoCapsBuilder::new()
                            .format_list(preferred_formats())
                            .build();
                        for memory in [MemoryKind::Cuda, MemoryKind::Nvmm] {
                            caps.merge(
                                gst_video::VideoCapsBuilder::new()
                                    .features(memory.feature())
                                    .format_list(
                                        device_formats().map(gst_video::VideoFormat::from_string),
                                    )
                                    .build(),
                            );
                        }
                        caps
                    },
                    super::StreamMuxPad::static_type(),
                )
                .expect("valid pad template"),
            ]
        });
        PAD_TEMPLATES.as_ref()
    }

    fn release_pad(&self, pad: &gst::Pad) {
        if let Some(p) = pad.downcast_ref::<super::StreamMuxPad>() {
            let mut source = p.imp().state.lock().unwrap();
            if !source.ended && source.frames > 0 {
                source.ended = true;
                self.state
                    .lock()
                    .unwrap()
                    .ended_sources
                    .push(p.imp().source_id());
            }
            gst::info!(
                CAT,
                imp = self,
                "releasing {} after {} frames",
                pad.name(),
                source.frames
            );
            // Its queued frames go with the pad.
            let dropped = std::mem::take(&mut source.pending);
            source.forget_arrivals();
            drop(source);
            self.count_dropped(p.imp().source_id(), dropped);
        }
        self.parent_release_pad(pad);
    }
}

impl AggregatorImpl for StreamMux {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = *self.settings.lock().unwrap();
        let mut metrics = Metrics::new(self.obj().name().to_string(), settings.batch_size);
        for p in self.source_pads() {
            let mut source = p.pad.imp().state.lock().unwrap();
            source.frames = 0;
            source.ended = false;
            source.pending = 0;
            source.forget_arrivals();
            metrics.dropped(p.id);
        }
        *self.state.lock().unwrap() = State {
            metrics: Some(metrics),
            ..State::default()
        };
        self.count_sources();
        let obj = self.obj();
        let timeout = settings.push_timeout();
        // A batch may wait `batched-push-timeout` for a slow source: that is latency.
        let own = timeout.unwrap_or(gst::ClockTime::ZERO);
        obj.set_latency(own, Some(own));
        obj.set_property("latency", settings.max_latency);
        // The timeout must also work for sources that are not live. GStreamer 1.22+ lets the
        // aggregator run on the clock for those; 1.20 only times out with live sources.
        if !set_force_live(&obj, timeout.is_some()) && timeout.is_some() {
            gst::info!(
                CAT,
                imp = self,
                "this GStreamer applies batched-push-timeout to live sources only"
            );
        }
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        for p in self.source_pads() {
            p.pad.imp().state.lock().unwrap().scaler = None;
        }
        // The element's series leave the metrics with it.
        self.state.lock().unwrap().metrics = None;
        Ok(())
    }

    fn next_time(&self) -> Option<gst::ClockTime> {
        let settings = *self.settings.lock().unwrap();
        let timeout = settings.push_timeout()?;
        let (pending, reported_latency) = {
            let state = self.state.lock().unwrap();
            (state.first_pending, state.reported_latency)
        };
        let first = match pending {
            Some(t) => t,
            None => {
                let any_queued = self
                    .obj()
                    .sink_pads()
                    .iter()
                    .filter_map(|p| p.downcast_ref::<gst_base::AggregatorPad>())
                    .any(|p| p.has_buffer());
                if !any_queued {
                    return None;
                }
                let now = self.obj().clock()?.time();
                self.state.lock().unwrap().first_pending = Some(now);
                now
            }
        };
        // The aggregator waits until base time + next_time + its latency, on the clock; aim at
        // the clock time first + timeout, whatever the base time is now.
        let base = self.obj().base_time()?;
        let latency = reported_latency.unwrap_or(settings.max_latency + timeout);
        Some(
            (first + timeout)
                .saturating_sub(base)
                .saturating_sub(latency),
        )
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        let handled = self.parent_src_query(query);
        if handled && let gst::QueryView::Latency(q) = query.view() {
            let (live, min, _) = q.result();
            gst::debug!(CAT, imp = self, "reporting latency {min} (live: {live})");
            self.state.lock().unwrap().reported_latency = Some(min);
        }
        handled
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        match query.view_mut() {
            gst::QueryViewMut::Caps(q) => {
                let caps = self.sink_caps(pad);
                self.explain_format_mismatch(pad, q.filter());
                let caps = match q.filter() {
                    Some(filter) => {
                        filter.intersect_with_mode(&caps, gst::CapsIntersectMode::First)
                    }
                    None => caps,
                };
                q.set_result(&caps);
                true
            }
            gst::QueryViewMut::AcceptCaps(q) => {
                let ok = q.caps().can_intersect(&self.sink_caps(pad));
                if !ok {
                    self.explain_format_mismatch(pad, Some(q.caps()));
                }
                q.set_result(ok);
                true
            }
            // A decoder looking for a CUDA context asks downstream: the inference element
            // answers with its engine's, so the decoder allocates where the engine reads.
            gst::QueryViewMut::Context(q) if q.context_type() == "gst.cuda.context" => {
                let src = self.obj().src_pad().clone();
                src.peer_query(query)
            }
            _ => self.parent_sink_query(pad, query),
        }
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        let Some(mux_pad) = pad.downcast_ref::<super::StreamMuxPad>() else {
            return self.parent_sink_event(pad, event);
        };
        match event.view() {
            gst::EventView::Caps(c) => {
                if let Err(message) = self.handle_caps(mux_pad, &c.caps_owned()) {
                    gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{message}"));
                    return false;
                }
            }
            gst::EventView::Segment(s) => {
                let Ok(segment) = s.segment().clone().downcast::<gst::ClockTime>() else {
                    gst::element_imp_error!(
                        self,
                        gst::StreamError::Format,
                        ("{}: only time segments can be batched", pad.name())
                    );
                    return false;
                };
                mux_pad
                    .imp()
                    .state
                    .lock()
                    .unwrap()
                    .update_stream(|s| s.segment = segment);
            }
            gst::EventView::StreamStart(s) => {
                let mut state = mux_pad.imp().state.lock().unwrap();
                let id: glib::GString = s.stream_id().into();
                let restarted = state.frames > 0
                    && !state.ended
                    && state.stream_id.as_ref().is_some_and(|old| *old != id);
                if restarted {
                    self.state
                        .lock()
                        .unwrap()
                        .restarted_sources
                        .push(mux_pad.imp().source_id());
                }
                state.stream_id = Some(id.clone());
                state.ended = false;
                state.update_stream(|s| s.stream_id = Some(id));
            }
            gst::EventView::Eos(_) => {
                let mut state = mux_pad.imp().state.lock().unwrap();
                if !state.ended {
                    state.ended = true;
                    gst::info!(
                        CAT,
                        imp = self,
                        "{} reached EOS after {} frames",
                        pad.name(),
                        state.frames
                    );
                    self.state
                        .lock()
                        .unwrap()
                        .ended_sources
                        .push(mux_pad.imp().source_id());
                }
            }
            _ => (),
        }
        self.parent_sink_event(pad, event)
    }

    fn update_src_caps(&self, caps: &gst::Caps) -> Result<gst::Caps, gst::FlowError> {
        let Some(ours) = self.batch_caps() else {
            return Err(gst_base::AGGREGATOR_FLOW_NEED_DATA);
        };
        let result = caps.intersect(&ours);
        if result.is_empty() {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("Downstream does not take batches {ours}"),
                ["downstream takes {caps}"]
            );
            return Err(gst::FlowError::NotNegotiated);
        }
        Ok(result)
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.announce_ended_sources();
        let settings = *self.settings.lock().unwrap();
        let mut ready = self.candidates(settings.sync_inputs);
        if ready.is_empty() {
            let pads = self.source_pads();
            if pads.iter().all(|p| p.pad.is_eos()) {
                gst::debug!(CAT, imp = self, "every source is done");
                return Err(gst::FlowError::Eos);
            }
            return Ok(gst::FlowSuccess::Ok);
        }
        {
            let mut state = self.state.lock().unwrap();
            // Serve sources in turn, starting after the last one served.
            let start = state.next_source;
            ready.sort_by_key(|(p, _)| (p.id < start, p.id));
            state.first_pending = None;
            if std::mem::take(&mut state.caps_changed) || !state.pushed_any {
                drop(state);
                if !self.obj().negotiate() {
                    gst::element_imp_error!(
                        self,
                        gst::CoreError::Negotiation,
                        ("Cannot negotiate batch caps with downstream")
                    );
                    return Err(gst::FlowError::NotNegotiated);
                }
            }
        }
        let chunk = match settings.batch_size {
            0 => ready.len(),
            n => n as usize,
        };
        gst::log!(
            CAT,
            imp = self,
            "{} frames ready{}",
            ready.len(),
            if timeout { " (timeout)" } else { "" }
        );
        let mut ready = ready.into_iter().peekable();
        while ready.peek().is_some() {
            let mut frames = Vec::with_capacity(chunk);
            let mut surfaces = Vec::with_capacity(chunk);
            let mut pts: Option<gst::ClockTime> = None;
            let mut last_source = None;
            for (p, _) in ready.by_ref().take(chunk) {
                let Some(buffer) = p.pad.pop_buffer() else {
                    continue;
                };
                let (frame, surface, running_time) =
                    self.take_frame(&p.pad, buffer, surfaces.len() as u32)?;
                pts = match (pts, running_time) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                last_source = Some(p.id);
                frames.push(frame);
                surfaces.push(surface);
            }
            if frames.is_empty() {
                continue;
            }
            let mut out = gst::Buffer::new();
            {
                let out = out.get_mut().expect("new buffer");
                let mut state = self.state.lock().unwrap();
                let pts = next_batch_pts(pts, state.last_pts);
                state.last_pts = pts;
                if let Some(id) = last_source {
                    state.next_source = id + 1;
                }
                state.pushed_any = true;
                state.batches += 1;
                out.set_pts(pts);
                let mut batch = Batch { frames };
                if let Some(m) = &state.metrics {
                    m.batches.inc();
                    m.batch_frames.observe(batch.frames.len() as f64);
                    // Each frame entered when it arrived; the batch leaves now.
                    m.latency.record_from_origin(&mut batch);
                }
                BatchMeta::add_with_surfaces(out, batch, surfaces);
            }
            self.finish_buffer(out)?;
        }
        Ok(gst::FlowSuccess::Ok)
    }
}

/// How much later than the previous batch a batch is stamped when its earliest frame is not
/// later: the finest step containers keep (Matroska's default time scale is 1 ms, and mp4mux's
/// video time scales are at least as fine), so that encoded frames keep distinct times.
const TIE_STEP: gst::ClockTime = gst::ClockTime::from_mseconds(1);

/// The PTS of the next batch, whose earliest frame has the running time `earliest`, after a
/// batch stamped `last`: at least [`TIE_STEP`] later than `last` (see the module's
/// documentation).
fn next_batch_pts(
    earliest: Option<gst::ClockTime>,
    last: Option<gst::ClockTime>,
) -> Option<gst::ClockTime> {
    let after_last = last.map(|l| l + TIE_STEP);
    match (earliest, after_last) {
        (Some(e), Some(a)) => Some(e.max(a)),
        (e, a) => e.or(a),
    }
}

#[cfg(test)]
mod tests {
    use super::next_batch_pts;
    use gst::ClockTime;

    #[test]
    fn batch_timestamps_strictly_increase() {
        let ms = ClockTime::from_mseconds;
        assert_eq!(next_batch_pts(Some(ms(40)), None), Some(ms(40)));
        assert_eq!(next_batch_pts(Some(ms(40)), Some(ms(33))), Some(ms(40)));
        // Frames of one instant over two batches, and a late frame: 1 ms after the last batch.
        assert_eq!(next_batch_pts(Some(ms(40)), Some(ms(40))), Some(ms(41)));
        assert_eq!(next_batch_pts(Some(ms(20)), Some(ms(40))), Some(ms(41)));
        // A frame less than 1 ms after the last batch is stamped 1 ms after it.
        let just_after = ms(40) + ClockTime::from_useconds(300);
        assert_eq!(next_batch_pts(Some(just_after), Some(ms(40))), Some(ms(41)));
        // Frames without timestamps follow the last batch; without any, none.
        assert_eq!(next_batch_pts(None, Some(ms(40))), Some(ms(41)));
        assert_eq!(next_batch_pts(None, None), None);
    }
}
