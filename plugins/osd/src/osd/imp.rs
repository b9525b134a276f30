// SPDX-License-Identifier: MIT OR Apache-2.0
#[cfg(feature = "cuda")]
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use ferrostream_core::batch::{FrameSource, MemoryKind, Surface, batch_caps};
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::settings::Props;
use ferrostream_core::{BatchMeta, Frame};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

#[cfg(feature = "cuda")]
use crate::color::YuvMatrix;
use crate::config::SETTINGS;
use crate::paint::{FORMATS, Painter};
use crate::plan::{DrawList, Planner};
use crate::style::Style;
#[cfg(feature = "cuda")]
use ferrostream_core::cuda::{self, Context, DeviceFrames, Stream, gst_cuda};
#[cfg(feature = "cuda")]
use ferrostream_core::device::DeviceImage;

#[cfg(feature = "cuda")]
use crate::gpu::GpuPainter;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsosd",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream on-screen display"),
    )
});

/// CUDA's default stream priority; lower values are more urgent.
const DEFAULT_STREAM_PRIORITY: i32 = 0;

#[derive(Debug, Clone, Default)]
struct Settings {
    /// Priority of the CUDA stream that draws on frames in device memory.
    stream_priority: i32,
    /// Property values; those set on the element override the configuration file.
    props: Props<Style>,
    /// The configuration file's style as read at start, which property changes while running
    /// are applied over.
    file: Style,
}

impl Settings {
    /// Reads the configuration file, if any; returns its warnings.
    fn read_file(&mut self) -> Result<Vec<String>, String> {
        let (style, warnings) = self.props.read_file(Style::default, crate::config::load)?;
        self.file = style;
        Ok(warnings)
    }

    /// The file's style with the properties set on the element over it.
    fn resolve(&self) -> Result<Style, String> {
        let style = SETTINGS.resolve(self.file.clone(), &self.props)?;
        crate::config::check_clock_format(&style.clock_format)?;
        Ok(style)
    }
}

/// Drawing in device memory: the frames mapped in the context they live in, and a painter and
/// stream there.
#[cfg(feature = "cuda")]
#[derive(Default)]
struct Gpu {
    frames: DeviceFrames,
    target: Option<GpuTarget>,
    /// `stream-priority` as it was at start.
    priority: i32,
}

#[cfg(feature = "cuda")]
struct GpuTarget {
    painter: GpuPainter,
    stream: Stream,
}

#[cfg(feature = "cuda")]
impl Gpu {
    /// The painter and stream for frames in `ctx`, made when the context changes.
    fn target(&mut self, ctx: &Arc<Context>) -> Result<&mut GpuTarget, String> {
        let current = self
            .target
            .as_ref()
            .is_some_and(|t| t.painter.context().raw() == ctx.raw());
        if !current {
            // The old painter waits for its work when dropped, before the new one is made.
            self.target = None;
            let gpu_id = ctx.gpu_id();
            let painter = GpuPainter::new(ctx)
                .map_err(|e| format!("cannot prepare the GPU painter on GPU {gpu_id}: {e}"))?;
            let stream = Stream::new(ctx, self.priority)
                .map_err(|e| format!("cannot create a CUDA stream on GPU {gpu_id}: {e}"))?;
            return Ok(self.target.insert(GpuTarget { painter, stream }));
        }
        self.target
            .as_mut()
            .ok_or_else(|| "the GPU painter went missing".to_string())
    }
}

struct State {
    style: Style,
    planner: Planner,
    painter: Painter,
    /// One draw list per frame of the current buffer, with the index of the surface it is
    /// painted on; kept to reuse their allocations.
    lists: Vec<(usize, DrawList)>,
    source: Option<FrameSource>,
    /// Where the negotiated frames' pixels are: drawn by the CPU painter in system memory, by
    /// the GPU painter where they are otherwise.
    memory: MemoryKind,
    #[cfg(feature = "cuda")]
    gpu: Gpu,
    latency: LatencyRecorder,
}

#[derive(Default)]
pub struct RsOsd {
    settings: Mutex<Settings>,
    state: Mutex<Option<State>>,
    /// A property changed while running: resolve the style again before the next frame.
    restyle: AtomicBool,
    /// Frames drawn on in device memory (`gpu-frames`).
    gpu_frames: AtomicU64,
    /// Frames whose pixels were copied between host and device memory (`pixel-copies`).
    pixel_copies: AtomicU64,
}

/// Queues `list` on `image` with the target's painter and waits for the stream, also when a
/// launch failed, so that nothing runs once the caller unmaps the frame.
///
/// # Safety
/// As [`GpuPainter::paint`]: `image` is writable device memory of the target's context, valid
/// until this returns.
#[cfg(feature = "cuda")]
unsafe fn paint_on(
    target: &mut GpuTarget,
    planner: &Planner,
    list: &DrawList,
    image: &DeviceImage,
    matrix: YuvMatrix,
) -> Result<(), String> {
    // SAFETY: the caller's guarantee, passed on.
    let painted = unsafe {
        target
            .painter
            .paint(list, planner.atlas(), image, matrix, &target.stream)
    };
    let synced = target.stream.synchronize();
    painted.map_err(|e| format!("drawing on the GPU failed: {e}"))?;
    synced.map_err(|e| format!("drawing on the GPU failed: {e}"))
}

impl RsOsd {
    /// Plans and paints every frame of `buf`.
    fn draw(&self, state: &mut State, buf: &mut gst::BufferRef) -> Result<(), String> {
        let clock = if state.style.display_clock {
            let now = glib::DateTime::now_local().map_err(|e| format!("no local time: {e}"))?;
            Some(
                now.format(&state.style.clock_format)
                    .map_err(|e| format!("clock-format: {e}"))?,
            )
        } else {
            None
        };
        let clock = clock.as_deref();
        if state.memory.is_device() {
            #[cfg(feature = "cuda")]
            return self.draw_device(state, buf, clock);
            #[cfg(not(feature = "cuda"))]
            return Err("this build of rsosd cannot draw in device memory (feature cuda)".into());
        }
        let State {
            style,
            planner,
            painter,
            lists,
            source,
            ..
        } = state;
        match source {
            None => Err("no caps received before the first buffer".into()),
            Some(FrameSource::Single(info)) => {
                if lists.is_empty() {
                    lists.push((0, DrawList::default()));
                }
                let list = &mut lists[0].1;
                list.reset(info.width(), info.height());
                let frames = BatchMeta::of(buf).map_or(&[][..], |m| &m.batch().frames[..]);
                let source_id = frames.first().map_or(0, |f| f.source_id);
                planner.plan(style, frames, source_id, clock, list);
                if list.is_empty() {
                    return Ok(());
                }
                let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(buf, info)
                    .map_err(|e| format!("cannot map the frame for writing: {e}"))?;
                painter
                    .paint_frame(list, &mut frame)
                    .map_err(|e| e.to_string())
            }
            Some(FrameSource::Batched) => {
                let Some(mut meta) = buf.meta_mut::<BatchMeta>() else {
                    return Err("a batch without its metadata (was it made by rsstreammux?)".into());
                };
                let frames: &[Frame] = &meta.batch().frames;
                lists.resize_with(lists.len().max(frames.len()), Default::default);
                let count = meta.surfaces().len();
                for (frame, (surface_index, list)) in frames.iter().zip(lists.iter_mut()) {
                    *surface_index = frame.surface_index as usize;
                    let surface = meta.surfaces().get(*surface_index).ok_or_else(|| {
                        format!(
                            "frame of source {} names surface {}, but the batch has {count}",
                            frame.source_id, frame.surface_index
                        )
                    })?;
                    let info = surface.info();
                    list.reset(info.width(), info.height());
                    planner.plan(
                        style,
                        std::slice::from_ref(frame),
                        frame.source_id,
                        clock,
                        list,
                    );
                }
                let planned = frames.len();
                for (surface_index, list) in &lists[..planned] {
                    if list.is_empty() {
                        continue;
                    }
                    let Surface { buffer, stream } = &mut meta.surfaces_mut()[*surface_index];
                    if !buffer.is_writable() {
                        gst::trace!(CAT, imp = self, "copying a shared surface before drawing");
                    }
                    let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(
                        buffer.make_mut(),
                        &stream.info,
                    )
                    .map_err(|e| {
                        format!(
                            "cannot map the frame of source {} for writing: {e}",
                            stream.source_id
                        )
                    })?;
                    painter
                        .paint_frame(list, &mut frame)
                        .map_err(|e| format!("source {}: {e}", stream.source_id))?;
                }
                Ok(())
            }
        }
    }

    /// Plans and paints every frame of `buf`, whose pixels are in device memory (GStreamer CUDA
    /// memory or NVMM), where they are: each frame is drawn in the context its memory belongs
    /// to, and the stream is synchronised before the frame is unmapped. Frames are planned and
    /// painted one at a time, because a draw list's glyphs refer to the atlas as it was when it
    /// was planned.
    #[cfg(feature = "cuda")]
    fn draw_device(
        &self,
        state: &mut State,
        buf: &mut gst::BufferRef,
        clock: Option<&str>,
    ) -> Result<(), String> {
        let State {
            style,
            planner,
            lists,
            source,
            memory,
            gpu,
            ..
        } = state;
        let memory = *memory;
        if lists.is_empty() {
            lists.push((0, DrawList::default()));
        }
        let list = &mut lists[0].1;
        match source {
            None => Err("no caps received before the first buffer".into()),
            Some(FrameSource::Single(info)) => {
                list.reset(info.width(), info.height());
                let frames = BatchMeta::of(buf).map_or(&[][..], |m| &m.batch().frames[..]);
                let source_id = frames.first().map_or(0, |f| f.source_id);
                planner.plan(style, frames, source_id, clock, list);
                self.paint_device(gpu, memory, planner, list, buf, info)
            }
            Some(FrameSource::Batched) => {
                let Some(mut meta) = buf.meta_mut::<BatchMeta>() else {
                    return Err("a batch without its metadata (was it made by rsstreammux?)".into());
                };
                for index in 0..meta.batch().frames.len() {
                    let frame = &meta.batch().frames[index];
                    let (surface_index, source_id) =
                        (frame.surface_index as usize, frame.source_id);
                    let count = meta.surfaces().len();
                    let Some(surface) = meta.surfaces().get(surface_index) else {
                        return Err(format!(
                            "frame of source {source_id} names surface {surface_index}, but the batch has {count}"
                        ));
                    };
                    let info = surface.info();
                    list.reset(info.width(), info.height());
                    planner.plan(style, std::slice::from_ref(frame), source_id, clock, list);
                    let Surface { buffer, stream } = &mut meta.surfaces_mut()[surface_index];
                    // A shared surface is copied first (its memory is not: the frame is drawn
                    // where it is, as in the CPU path).
                    self.paint_device(gpu, memory, planner, list, buffer.make_mut(), &stream.info)
                        .map_err(|e| format!("source {}: {e}", stream.source_id))?;
                }
                Ok(())
            }
        }
    }

    /// Paints `list` on `buffer`, a frame in device memory laid out as `info`, where it is: mapped
    /// for writing in the context it lives in (the producer's for CUDA memory, the primary
    /// context of the surface's GPU for NVMM), and counts it.
    #[cfg(feature = "cuda")]
    fn paint_device(
        &self,
        gpu: &mut Gpu,
        memory: MemoryKind,
        planner: &Planner,
        list: &DrawList,
        buffer: &mut gst::BufferRef,
        info: &gst_video::VideoInfo,
    ) -> Result<(), String> {
        if !list.is_empty() {
            let frame = gpu
                .frames
                .map(memory, buffer, info, true)
                .map_err(|e| format!("cannot map the frame for drawing on the GPU: {e}"))?;
            // The CPU painter takes the caps' colorimetry (with GStreamer's defaults); NVMM
            // surfaces say theirs.
            let matrix = match memory {
                MemoryKind::Nvmm => YuvMatrix::new(
                    frame.matrix,
                    frame.range == gst_video::VideoColorRange::Range0_255,
                ),
                _ => YuvMatrix::for_info(info),
            };
            let target = gpu.target(&frame.context)?;
            // SAFETY: the image is the frame's device memory, mapped for writing in the context
            // the painter and its stream belong to; it stays mapped until `paint_on` has
            // synchronised the stream (`frame` is dropped after it), and nothing else writes a
            // frame while an in-place transform holds it.
            let painted = unsafe { paint_on(target, planner, list, &frame.image, matrix) };
            drop(frame);
            painted?;
        }
        self.gpu_frames.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Where frames of `caps` are, checking that what drawing there needs is present.
    fn memory_of(&self, caps: &gst::Caps) -> Result<MemoryKind, gst::LoggableError> {
        let memory = MemoryKind::from_caps(caps);
        if !memory.is_device() {
            return Ok(memory);
        }
        #[cfg(feature = "cuda")]
        let missing = if !cuda::driver_present() {
            Some(cuda::CudaError::NoDriver.to_string())
        } else if !cuda::nvrtc_present() {
            Some(cuda::CudaError::NoNvrtc.to_string())
        } else {
            None
        };
        #[cfg(not(feature = "cuda"))]
        let missing = Some("this build of rsosd has no GPU painter (feature cuda)".to_string());
        match missing {
            None => Ok(memory),
            Some(e) => {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("cannot draw on frames in device memory ({caps}): {e}")
                );
                Err(gst::loggable_error!(CAT, "{e}"))
            }
        }
    }

    /// Applies property changes made while running (the font stays as it was at start).
    fn restyle(&self, state: &mut State) {
        if !self.restyle.swap(false, Ordering::AcqRel) {
            return;
        }
        match self.settings.lock().unwrap().resolve() {
            Ok(style) => {
                gst::debug!(CAT, imp = self, "style changed: {style:?}");
                state.style = Style {
                    font: state.style.font.clone(),
                    ..style
                };
            }
            Err(e) => gst::warning!(CAT, imp = self, "keeping the previous style: {e}"),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for RsOsd {
    const NAME: &'static str = "GstRsOsd";
    type Type = super::RsOsd;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for RsOsd {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut specs = SETTINGS.param_specs(&Style::default());
            specs.extend([
                glib::ParamSpecInt::builder("stream-priority")
                    .nick("CUDA stream priority")
                    .blurb(
                        "Priority of the CUDA stream that draws on frames in CUDA memory: 0 is \
                         CUDA's default, lower (negative) values are more urgent; clamped to \
                         the device's range",
                    )
                    .default_value(DEFAULT_STREAM_PRIORITY)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt64::builder("gpu-frames")
                    .nick("GPU frames")
                    .blurb(
                        "Frames drawn on in device memory (CUDA memory or NVMM), where they \
                         are, since the element started (frames with nothing to draw included)",
                    )
                    .read_only()
                    .build(),
                glib::ParamSpecUInt64::builder("pixel-copies")
                    .nick("Pixel copies")
                    .blurb(
                        "Frames whose pixels were copied between host and device memory since \
                         the element started: frames in system memory are drawn by the CPU and \
                         frames in device memory by the GPU where they are, so it stays 0",
                    )
                    .read_only()
                    .build(),
            ]);
            specs
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            // Read when the GPU stream is made, not part of the style.
            "stream-priority" => {
                settings.stream_priority = value.get().expect("type checked upstream")
            }
            _ => {
                if SETTINGS.set_on(self.obj().upcast_ref(), &mut settings.props, pspec, value) {
                    self.restyle.store(true, Ordering::Release);
                }
            }
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "stream-priority" => settings.stream_priority.to_value(),
            "gpu-frames" => self.gpu_frames.load(Ordering::Relaxed).to_value(),
            "pixel-copies" => self.pixel_copies.load(Ordering::Relaxed).to_value(),
            name => SETTINGS
                .property_value(&settings.props, name)
                .expect("every other property is a setting"),
        }
    }
}

impl GstObjectImpl for RsOsd {}

impl ElementImpl for RsOsd {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream on-screen display",
                "Filter/Effect/Video/Analytics",
                "Draws object boxes, labels, a clock and source text, and blurs chosen classes",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let formats = || FORMATS.iter().map(|f| f.to_str().as_str());
            let mut caps = gst_video::VideoCapsBuilder::new()
                .format_list(FORMATS)
                .build();
            caps.merge(batch_caps(formats()));
            // The same formats in CUDA memory and NVMM, single frames and batches, drawn on the
            // GPU where they are.
            #[cfg(feature = "cuda")]
            for memory in [MemoryKind::Cuda, MemoryKind::Nvmm] {
                caps.merge(ferrostream_core::batch::device_caps(memory, formats()));
            }
            ferrostream_core::element::filter_pad_templates(&caps)
        });
        PAD_TEMPLATES.as_ref()
    }
}

impl BaseTransformImpl for RsOsd {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let resolved = {
            let mut settings = self.settings.lock().unwrap();
            settings
                .read_file()
                .and_then(|warnings| Ok((settings.resolve()?, warnings)))
        };
        self.restyle.store(false, Ordering::Release);
        self.gpu_frames.store(0, Ordering::Relaxed);
        self.pixel_copies.store(0, Ordering::Relaxed);
        let (style, warnings) =
            resolved.map_err(|m| gst::error_msg!(gst::LibraryError::Settings, ("{m}")))?;
        for warning in warnings {
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{warning}"));
        }
        let loaded = crate::font::Typeface::load(&style.font)
            .map_err(|m| gst::error_msg!(gst::ResourceError::NotFound, ("{m}")))?;
        if let Some(warning) = &loaded.warning {
            gst::element_imp_warning!(self, gst::ResourceError::NotFound, ("{warning}"));
        }
        gst::info!(
            CAT,
            imp = self,
            "drawing text with {}; style {style:?}",
            loaded.typeface.describe()
        );
        *self.state.lock().unwrap() = Some(State {
            style,
            planner: Planner::new(loaded.typeface),
            painter: Painter::default(),
            lists: Vec::new(),
            source: None,
            memory: MemoryKind::System,
            #[cfg(feature = "cuda")]
            gpu: Gpu {
                priority: self.settings.lock().unwrap().stream_priority,
                ..Gpu::default()
            },
            latency: LatencyRecorder::new(self.obj().name()),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, _outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let source =
            FrameSource::from_caps(incaps).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        let memory = self.memory_of(incaps)?;
        // Ask upstream for its CUDA context now (without holding the state lock), so that the
        // kernels are ready before the first frame.
        #[cfg(feature = "cuda")]
        let upstream_context = match memory {
            MemoryKind::Cuda => self
                .obj()
                .static_pad("sink")
                .and_then(|pad| gst_cuda::query_context(&pad)),
            _ => None,
        };
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::loggable_error!(CAT, "caps before start"));
        };
        gst::debug!(CAT, imp = self, "drawing on {incaps}");
        state.source = Some(source);
        state.memory = memory;
        // The GPU painter reads glyphs from the atlas: composing coverage would be wasted work.
        state.planner.set_compose_coverage(!memory.is_device());
        #[cfg(feature = "cuda")]
        if let Some(context) = upstream_context {
            let prepared = gst_cuda::ContextTracker::default()
                .adopt(&context)
                .map_err(|e| e.to_string())
                .and_then(|ctx| match ctx {
                    Some(ctx) => state.gpu.target(&ctx).map(|_| ctx.gpu_id()),
                    None => Err("not a CUDA context".into()),
                });
            match prepared {
                Ok(gpu_id) => gst::info!(
                    CAT,
                    imp = self,
                    "drawing in CUDA memory on GPU {gpu_id}, in the upstream element's context"
                ),
                // The first frame's own context is used then; its errors are the ones reported.
                Err(e) => gst::debug!(CAT, imp = self, "upstream CUDA context not used yet: {e}"),
            }
        }
        Ok(())
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry = now_ns();
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::Flushing);
        };
        self.restyle(state);
        let result = self.draw(state, buf);
        if let Some(mut meta) = buf.meta_mut::<BatchMeta>() {
            state.latency.record(meta.batch_mut(), entry);
        }
        drop(guard);
        match result {
            Ok(()) => Ok(gst::FlowSuccess::Ok),
            Err(message) => {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("{message}"));
                Err(gst::FlowError::Error)
            }
        }
    }
}
