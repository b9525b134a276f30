// SPDX-License-Identifier: MIT OR Apache-2.0
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use ferrostream_core::batch::{self, FrameSource, MemoryKind, frame_pixels};
use ferrostream_core::latency::now_ns;
use ferrostream_core::settings::Props;
use ferrostream_core::{BatchMeta, Frame};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::BaseTransformExtManual;
use gst_base::subclass::prelude::*;

#[cfg(feature = "cuda")]
use super::crops::GpuFrames;
use super::crops::{self, Crop, FrameError, Work};
use super::flight::{Flight, InFlight, LatencyTracker, Limits, Queued, Throughput};
use super::frames::SUPPORTED_FORMATS;
use super::metrics::InferMetrics;
use crate::config::{InferConfig, ProcessMode, ServerFailure};
use crate::engine::remote::{Health, Poll, RemoteError, RemoteResult};
use crate::engine::{EngineLog, Interrupt, LogLevel};
use crate::inference::{Inference, ItemResult, SetupError};
use crate::secondary::{self, Secondary};
use crate::settings::SETTINGS;

mod output;
mod server;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rstrtinfer",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream primary inference"),
    )
});

const DEFAULT_THREADS: u32 = 0;
const DEFAULT_STREAM_PRIORITY: i32 = 0;
/// Frames dropped for want of a free request to the server are reported at most this often.
const BUSY_WARNING_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Default)]
struct Settings {
    /// Property values; only those set on the element override the configuration file.
    props: Props<InferConfig>,
    threads: u32,
    /// CUDA stream priority of the GPU pre-processing (0 default, lower is more urgent).
    stream_priority: i32,
}

struct State {
    inference: Inference,
    /// Secondary mode: object selection and the result cache.
    secondary: Option<Secondary>,
    source: Option<FrameSource>,
    memory: MemoryKind,
    #[cfg(feature = "cuda")]
    gpu: GpuFrames,
    /// Buffers (frames or batches) seen, for `interval`.
    buffers: u64,
    /// Whether the "model has a fixed batch size" warning was given.
    warned_fixed_batch: bool,
}

/// Time spent per stage, for the `stats` property.
#[derive(Debug, Default, Clone)]
struct Stats {
    frames: u64,
    /// Frames inferred (primary), or objects (secondary).
    inferred: u64,
    /// Secondary mode: objects worked on, and those given a cached result.
    objects: u64,
    cached: u64,
    engine_calls: u64,
    preprocess: Duration,
    inference: Duration,
    postprocess: Duration,
    /// Frames pre-processed in device memory.
    gpu_frames: u64,
    /// Frames whose pixels were copied between host and device (the GPU path copies none).
    pixel_copies: u64,
    /// Copies of a pre-processed tensor from the device to a host-memory engine.
    tensor_copies: u64,
    /// Buffers (frames or batches) inferred.
    batches: u64,
    /// Frames passed on without results because the inference server did not answer
    /// (`on-server-failure=drop`).
    server_dropped: u64,
    /// Primary mode: frames passed on without inference (`interval`, or no answer from the
    /// server).
    skipped: u64,
    /// The Prometheus series, from start to stop; updated with the counts above.
    metrics: Option<Arc<InferMetrics>>,
}

impl Stats {
    /// Counts a buffer of `frames` frames and its work (`None`: not inferred); `primary`: the
    /// element infers whole frames.
    fn record(&mut self, frames: u64, work: Option<&Work>, primary: bool) {
        self.frames += frames;
        let skipped = if primary && work.is_none() { frames } else { 0 };
        self.skipped += skipped;
        if let Some(w) = work {
            self.batches += 1;
            self.inferred += w.items;
            self.engine_calls += w.engine_calls;
            self.preprocess += w.times[0];
            self.inference += w.times[1];
            self.postprocess += w.times[2];
            self.gpu_frames += w.gpu_items;
            self.tensor_copies += w.tensor_copies;
        }
        if let Some(m) = &self.metrics {
            m.frames.add(frames);
            m.frames_skipped.add(skipped);
            if let Some(w) = work {
                m.batches.inc();
                m.engine_seconds.observe(w.times[1].as_secs_f64());
            }
        }
    }
}

/// What the element knows of its inference server between start and stop.
struct ServerWatch {
    health: Arc<Health>,
    url: String,
    on_failure: ServerFailure,
    /// Seconds without an answer after which the element fails (`None`: never).
    give_up: Option<Duration>,
    /// Whether an outage was reported lost and not yet recovered. Answers and failures reach
    /// the element in the order of its frames, not of time: an outage is reported lost when a
    /// frame meets it, and recovered by the first answer after that while the server answers.
    warned: bool,
    /// When frames were last reported dropped for want of a free request.
    last_busy_warning: Option<Instant>,
    /// Frames dropped in the outage going on.
    dropped: u64,
}

#[derive(Default)]
pub struct TrtInfer {
    settings: Mutex<Settings>,
    state: Mutex<Option<State>>,
    stats: Mutex<Stats>,
    /// Buffers whose GPU work is queued (frames in GPU memory, a device engine, primary mode),
    /// and the thread that finishes and pushes them in order.
    flight: Arc<Flight>,
    output_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Whether buffers go through `flight` (decided when the caps are set).
    pipelined: AtomicBool,
    /// Batches are answered later (an inference server, or OpenVINO's requests in flight).
    answers_later: AtomicBool,
    latency: Mutex<LatencyTracker>,
    throughput: Mutex<Throughput>,
    /// The inference server's health, watched by the output thread (remote engines).
    server: Mutex<Option<ServerWatch>>,
    /// Ends the engine's runs from the thread of a state change or a flush, which cannot take
    /// `state` while a run holds it (from start to stop).
    engine_interrupt: Mutex<Option<Arc<dyn Interrupt>>>,
    /// The engine's CUDA context as offered to GStreamer's CUDA elements (`gst.cuda.context`),
    /// from READY to NULL.
    #[cfg(feature = "cuda")]
    shared_context: Mutex<Option<gst::Context>>,
    /// The copy trace when the element started, for the summary at stop.
    #[cfg(feature = "cuda")]
    transfers_at_start: Mutex<ferrostream_core::cuda::Transfers>,
}

impl TrtInfer {
    /// The configuration file (if any) with the explicitly set properties applied over it.
    fn resolve_config(
        &self,
        settings: &Settings,
    ) -> Result<(InferConfig, Vec<String>), gst::ErrorMessage> {
        let settings_error = |m: String| gst::error_msg!(gst::LibraryError::Settings, ("{m}"));
        // The element's own defaults (a subclass's may differ), under the file too.
        let defaults = self.obj().class().as_ref().defaults;
        let (file, warnings) = settings
            .props
            .read_file(defaults, |path| {
                InferConfig::from_file_over(path, defaults()).map(|l| (l.config, l.warnings))
            })
            .map_err(settings_error)?;
        let config = SETTINGS
            .resolve(file, &settings.props)
            .map_err(settings_error)?;
        Ok((config, warnings))
    }

    /// Where the engine's messages go: building progress as GStreamer progress messages (an
    /// engine build takes minutes; the pipeline says so rather than appearing hung), the rest
    /// into the debug log.
    fn engine_log(&self) -> EngineLog {
        let element = self.obj().downgrade();
        Arc::new(move |level, message| {
            let Some(element) = element.upgrade() else {
                return;
            };
            match level {
                LogLevel::Progress => {
                    gst::info!(CAT, obj = element, "{message}");
                    let _ = element.post_message(
                        gst::message::Progress::builder(
                            gst::ProgressType::Continue,
                            "tensorrt-engine",
                            message,
                        )
                        .src(&element)
                        .build(),
                    );
                }
                LogLevel::Error | LogLevel::Warning => {
                    gst::warning!(CAT, obj = element, "{message}")
                }
                LogLevel::Info => gst::info!(CAT, obj = element, "{message}"),
                LogLevel::Debug => gst::debug!(CAT, obj = element, "{message}"),
                LogLevel::ParserChosen => {
                    gst::info!(CAT, obj = element, "{message}");
                    let name = element
                        .factory()
                        .map_or_else(|| "rstrtinfer".to_string(), |f| f.name().to_string());
                    let structure = gst::Structure::builder(format!("{name}-parser"))
                        .field("parser", message)
                        .build();
                    let _ = element.post_message(
                        gst::message::Element::builder(structure)
                            .src(&element)
                            .build(),
                    );
                }
            }
        })
    }

    fn post_engine_message(&self, inference: &Inference) {
        let d = inference.description();
        let net = inference.network();
        let structure = gst::Structure::builder(format!("{}-engine", self.factory_name()))
            .field("backend", d.backend)
            .field("providers", d.providers.join(","))
            .field("runtime-version", &d.version)
            .field("model", inference.model_path().display().to_string())
            .field("input", d.input.to_string())
            .field("network-width", net.width)
            .field("network-height", net.height)
            .field("parser", parser_words(inference))
            .field_if_some("backend-choice", inference.backend_choice())
            .build();
        let _ = self.obj().post_message(
            gst::message::Element::builder(structure)
                .src(&*self.obj())
                .build(),
        );
    }

    /// The element's factory name (rstrtinfer, or a subclass's), for messages.
    fn factory_name(&self) -> String {
        self.obj()
            .factory()
            .map_or_else(|| "rstrtinfer".to_string(), |f| f.name().to_string())
    }

    fn sink_caps() -> gst::Caps {
        let mut caps = gst_video::VideoCapsBuilder::new()
            .format_list(SUPPORTED_FORMATS.iter().copied())
            .build();
        caps.merge(batch::batch_caps(
            SUPPORTED_FORMATS.iter().map(|f| f.to_str().as_str()),
        ));
        #[cfg(feature = "cuda")]
        for memory in [MemoryKind::Cuda, MemoryKind::Nvmm] {
            caps.merge(batch::device_caps(
                memory,
                ferrostream_core::device::DEVICE_FORMATS
                    .iter()
                    .map(|f| f.to_str().as_str()),
            ));
        }
        caps
    }
}

/// The element error for a failure to set up inference.
pub fn setup_error(e: SetupError) -> gst::ErrorMessage {
    match e {
        SetupError::Config(m) => gst::error_msg!(gst::LibraryError::Settings, ("{m}")),
        SetupError::NotFound(m) => gst::error_msg!(gst::ResourceError::NotFound, ("{m}")),
        SetupError::Runtime(m) => gst::error_msg!(gst::LibraryError::Init, ("{m}")),
        SetupError::Model(m) => gst::error_msg!(gst::LibraryError::Init, ("{m}")),
        SetupError::Unsupported(m) => gst::error_msg!(gst::CoreError::NotImplemented, ("{m}")),
    }
}

#[glib::object_subclass]
impl ObjectSubclass for TrtInfer {
    const NAME: &'static str = "GstRsTrtInfer";
    type Type = super::TrtInfer;
    type ParentType = gst_base::BaseTransform;
    type Class = super::TrtInferClass;

    fn class_init(klass: &mut Self::Class) {
        klass.defaults = InferConfig::default;
        klass.open = |_, config, threads, log| super::open_inference(config, threads, log);
    }
}

/// The parser for the start message and log: its kind and settings, or that the first outputs
/// will decide.
fn parser_words(inference: &Inference) -> String {
    inference.parser().map_or_else(
        || "chosen from the first outputs (the model's output shapes are symbolic)".into(),
        |p| p.summary(),
    )
}

impl ObjectImpl for TrtInfer {
    fn constructed(&self) {
        self.parent_constructed();
        // The element's own defaults (a subclass's may differ), before any property is set.
        self.settings.lock().unwrap().props = Props::new((self.obj().class().as_ref().defaults)());
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut specs = SETTINGS.param_specs(&InferConfig::default());
            specs.extend([
                glib::ParamSpecUInt64::builder("server-dropped")
                    .nick("Frames dropped")
                    .blurb(
                        "backend=kserve, on-server-failure=drop: frames passed on without \
                            results because the server did not answer or was busy",
                    )
                    .read_only()
                    .build(),
                glib::ParamSpecUInt::builder("threads")
                    .nick("CPU threads")
                    .blurb("ONNX Runtime intra-op threads (0: its default, one per core)")
                    .default_value(DEFAULT_THREADS)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("stream-priority")
                    .nick("CUDA stream priority")
                    .blurb(
                        "Priority of the CUDA stream that pre-processes frames in GPU memory \
                            (CUDA convention: 0 default, lower values are more urgent; clamped to \
                            the device's range). Give latency-critical models a negative value",
                    )
                    .default_value(DEFAULT_STREAM_PRIORITY)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt64::builder("gpu-frames")
                    .nick("GPU frames")
                    .blurb("Frames (secondary mode: objects) pre-processed in GPU memory")
                    .read_only()
                    .build(),
                glib::ParamSpecUInt64::builder("pixel-copies")
                    .nick("Pixel copies")
                    .blurb(
                        "Frames whose pixels were copied between host and GPU memory (0 on the \
                            GPU path: frames are read where they are)",
                    )
                    .read_only()
                    .build(),
                glib::ParamSpecBoxed::builder::<gst::Structure>("stats")
                    .nick("Statistics")
                    .blurb(
                        "Frames seen; frames (primary) or objects (secondary) inferred; \
                            buffers inferred (batches) and, in primary mode, frames passed on \
                            without inference (skipped); secondary mode: objects worked on and \
                            cached results reused; time spent per stage (ns)",
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
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "stream-priority" => s.stream_priority = value.get().expect("type checked upstream"),
            "threads" => s.threads = value.get().expect("type checked upstream"),
            _ => {
                drop(s);
                self.set_setting(pspec, value);
            }
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "threads" => s.threads.to_value(),
            "stream-priority" => s.stream_priority.to_value(),
            "gpu-frames" => self.stats.lock().unwrap().gpu_frames.to_value(),
            "pixel-copies" => self.stats.lock().unwrap().pixel_copies.to_value(),
            "server-dropped" => self.stats.lock().unwrap().server_dropped.to_value(),
            "stats" => {
                let st = self.stats.lock().unwrap().clone();
                gst::Structure::builder("rstrtinfer-stats")
                    .field("frames", st.frames)
                    .field("inferred", st.inferred)
                    .field("objects", st.objects)
                    .field("cached-results", st.cached)
                    .field("engine-calls", st.engine_calls)
                    .field("preprocess-ns", st.preprocess.as_nanos() as u64)
                    .field("inference-ns", st.inference.as_nanos() as u64)
                    .field("postprocess-ns", st.postprocess.as_nanos() as u64)
                    .field("gpu-frames", st.gpu_frames)
                    .field("pixel-copies", st.pixel_copies)
                    .field("tensor-copies", st.tensor_copies)
                    .field("server-dropped", st.server_dropped)
                    .field("batches", st.batches)
                    .field("skipped", st.skipped)
                    .build()
                    .to_value()
            }
            name => SETTINGS
                .property_value(&s.props, name)
                .expect("every other property is a setting"),
        }
    }
}

impl TrtInfer {
    /// Sets the setting `name` (a property of [`SETTINGS`]); a value that does not parse is
    /// logged and fails the next start.
    pub(super) fn set_setting(&self, pspec: &glib::ParamSpec, value: &glib::Value) {
        let mut s = self.settings.lock().unwrap();
        let taken = SETTINGS.set_on(self.obj().upcast_ref(), &mut s.props, pspec, value);
        // `interval` may change while playing.
        if taken
            && pspec.name() == "interval"
            && let Some(state) = self.state.lock().unwrap().as_mut()
        {
            state.inference.set_interval(s.props.values.interval);
        }
    }

    /// The value of the setting `name`.
    pub(super) fn setting(&self, name: &str) -> glib::Value {
        let s = self.settings.lock().unwrap();
        SETTINGS
            .property_value(&s.props, name)
            .expect("a setting of rstrtinfer")
    }
}

impl GstObjectImpl for TrtInfer {}

impl ElementImpl for TrtInfer {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream inference",
                "Filter/Analytics/Video",
                "Runs a detector or classifier on every frame, or on the objects upstream \
                 detectors found, and attaches the results as analytics metadata (ONNX Runtime \
                 or native TensorRT)",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            ferrostream_core::element::filter_pad_templates(&TrtInfer::sink_caps())
        });
        PAD_TEMPLATES.as_ref()
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::PausedToReady {
            // Before the pads are deactivated, which waits for the streaming thread: a
            // buffer waiting for room or for the server's answer gives up now.
            self.interrupt(true);
        }
        #[cfg(feature = "cuda")]
        match transition {
            // Before the upstream elements open (states change from the sinks up), so that
            // decoders and uploaders find the engine's context when they look for one.
            gst::StateChange::NullToReady => self.share_engine_context(),
            gst::StateChange::ReadyToNull => {
                self.shared_context.lock().unwrap().take();
            }
            _ => {}
        }
        self.parent_change_state(transition)
    }
}

impl BaseTransformImpl for TrtInfer {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = self.settings.lock().unwrap().clone();
        let (mut config, file_warnings) = self.resolve_config(&settings)?;
        config.stream_priority = settings.stream_priority;
        if config.process_mode == ProcessMode::Primary {
            // The caps ask for this many ([`Self::set_caps`]): an engine that compiles for them
            // (OpenVINO) does so once, now.
            config.requests_at_open = config.remote.requests_in_flight;
        }
        let warnings = config
            .validate()
            .map_err(|m| gst::error_msg!(gst::LibraryError::Settings, ("{m}")))?;
        for warning in file_warnings.into_iter().chain(warnings) {
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{warning}"));
        }
        let secondary =
            (config.process_mode == ProcessMode::Secondary).then(|| Secondary::new(&config));
        let open = self.obj().class().as_ref().open;
        let remote = config.remote.clone();
        let mut inference = open(
            &self.obj(),
            config,
            settings.threads as usize,
            self.engine_log(),
        )?;
        for warning in inference.take_warnings() {
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{warning}"));
        }
        let d = inference.description();
        gst::info!(
            CAT,
            imp = self,
            "{} {} on [{}]: model {}, input {}, parser {}, {:?} mode",
            d.backend,
            d.version,
            d.providers.join(", "),
            inference.model_path().display(),
            d.input,
            parser_words(&inference),
            inference.config().process_mode
        );
        self.post_engine_message(&inference);
        *self.engine_interrupt.lock().unwrap() = inference.interrupter();
        *self.server.lock().unwrap() = inference.remote_health().map(|(health, url)| ServerWatch {
            health,
            url,
            on_failure: remote.on_failure,
            give_up: (remote.give_up_s > 0).then(|| Duration::from_secs(remote.give_up_s.into())),
            warned: false,
            last_busy_warning: None,
            dropped: 0,
        });
        *self.stats.lock().unwrap() = Stats {
            metrics: Some(Arc::new(InferMetrics::new(&self.obj().name()))),
            ..Stats::default()
        };
        *self.latency.lock().unwrap() = LatencyTracker::default();
        *self.throughput.lock().unwrap() = Throughput::default();
        self.flight.stop(false);
        self.pipelined.store(false, Ordering::SeqCst);
        self.answers_later.store(false, Ordering::SeqCst);
        #[cfg(feature = "cuda")]
        {
            *self.transfers_at_start.lock().unwrap() = ferrostream_core::cuda::transfers();
        }
        *self.state.lock().unwrap() = Some(State {
            inference,
            source: None,
            memory: MemoryKind::System,
            #[cfg(feature = "cuda")]
            gpu: GpuFrames {
                stream_priority: settings.stream_priority,
                ..GpuFrames::default()
            },
            secondary,
            buffers: 0,
            warned_fixed_batch: false,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.flight.stop(true);
        if let Some(thread) = self.output_thread.lock().unwrap().take() {
            let _ = thread.join();
        }
        self.state.lock().unwrap().take();
        self.engine_interrupt.lock().unwrap().take();
        let server = self.server.lock().unwrap().take();
        let st = {
            let mut st = self.stats.lock().unwrap();
            // The element's series leave the metrics with it.
            st.metrics = None;
            st.clone()
        };
        self.log_summary(&st);
        if let Some(server) = server
            && st.server_dropped > 0
        {
            gst::info!(
                CAT,
                imp = self,
                "{} frames passed on without results from {}",
                st.server_dropped,
                server.url
            );
        }
        if st.inferred > 0 {
            let per = |d: Duration| d.as_secs_f64() * 1e3 / st.inferred as f64;
            gst::info!(
                CAT,
                imp = self,
                "{} frames, {} inferred in {} engine calls; per frame: pre-processing {:.2} ms, \
                 engine {:.2} ms, post-processing {:.2} ms",
                st.frames,
                st.inferred,
                st.engine_calls,
                per(st.preprocess),
                per(st.inference),
                per(st.postprocess)
            );
        }
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        #[cfg(feature = "cuda")]
        if let gst::QueryViewMut::Context(q) = query.view_mut()
            && q.context_type() == ferrostream_core::cuda::gst_cuda::CUDA_CONTEXT_TYPE
            && let Some(context) = self.shared_context.lock().unwrap().clone()
        {
            q.set_context(&context);
            return true;
        }
        if let gst::QueryViewMut::Latency(_) = query.view_mut()
            && direction == gst::PadDirection::Src
        {
            let handled = BaseTransformImplExt::parent_query(self, direction, query);
            let ours = self.latency.lock().unwrap().reported();
            if let (true, Some(ours), gst::QueryViewMut::Latency(q)) =
                (handled, ours, query.view_mut())
            {
                let (live, min, max) = q.result();
                q.set(live, min + ours, max.map(|m| m + ours));
            }
            return handled;
        }
        // Caps we cannot take are refused by the accept-caps query, before any caps event reaches
        // us; say why, since upstream only reports "not-negotiated". A warning, not an error:
        // upstream elements also probe with accept-caps while choosing among several formats.
        let refused = match query.view() {
            gst::QueryView::AcceptCaps(q) if direction == gst::PadDirection::Sink => {
                let caps = q.caps();
                (caps.is_fixed() && !caps.can_intersect(&Self::sink_caps()))
                    .then(|| caps.to_owned())
            }
            _ => None,
        };
        let handled = BaseTransformImplExt::parent_query(self, direction, query);
        if let Some(caps) = refused {
            gst::element_imp_warning!(
                self,
                gst::CoreError::Negotiation,
                ("Unsupported input caps {caps}"),
                [
                    "{} takes raw video in system memory as {}; put videoconvert before it",
                    self.factory_name(),
                    SUPPORTED_FORMATS
                        .iter()
                        .map(|f| f.to_str().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ]
            );
        }
        handled
    }

    fn set_caps(&self, incaps: &gst::Caps, _outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let source =
            FrameSource::from_caps(incaps).map_err(|m| gst::loggable_error!(CAT, "{m}"))?;
        let mut state = self.state.lock().unwrap();
        let state = state
            .as_mut()
            .ok_or_else(|| gst::loggable_error!(CAT, "caps before start"))?;
        gst::debug!(CAT, imp = self, "input {incaps}");
        state.source = Some(source);
        state.memory = MemoryKind::from_caps(incaps);
        let primary = state.secondary.is_none();
        #[cfg(feature = "cuda")]
        let device = state.memory != MemoryKind::System
            && primary
            && state.inference.engine_context().is_some();
        #[cfg(not(feature = "cuda"))]
        let device = false;
        // Servers take requests-in-flight batches at once; so do local engines that can run
        // several (OpenVINO), once asked to.
        let requests = state.inference.config().remote.requests_in_flight as usize;
        let local = primary && !device && {
            match state.inference.keep_in_flight(requests) {
                Ok(local) => local,
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::LibraryError::Init,
                        ("Preparing {requests} requests in flight: {e}")
                    );
                    return Err(gst::loggable_error!(CAT, "{e}"));
                }
            }
        };
        let remote = primary && state.inference.is_remote();
        if remote {
            self.flight.set_limits(Limits::remote(requests));
            gst::info!(
                CAT,
                imp = self,
                "{}: up to {requests} requests in flight",
                if local {
                    "local engine"
                } else {
                    "inference server"
                }
            );
        } else if device {
            self.flight.set_limits(Limits::DEVICE);
            gst::info!(
                CAT,
                imp = self,
                "frames in GPU memory and a device engine: up to {} buffers in flight",
                super::flight::DEPTH
            );
        }
        self.pipelined.store(remote || device, Ordering::SeqCst);
        self.answers_later.store(remote, Ordering::SeqCst);
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        // Buffers in flight leave before any serialized event, which keeps its place.
        match event.view() {
            gst::EventView::FlushStart(_) => self.interrupt(true),
            gst::EventView::FlushStop(_) => {
                self.flight.drain();
                self.interrupt(false);
            }
            _ if event.is_serialized() => self.flight.drain(),
            _ => {}
        }
        self.parent_sink_event(event)
    }

    fn submit_input_buffer(
        &self,
        is_discont: bool,
        inbuf: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if !self.pipelined.load(Ordering::SeqCst) {
            return self.parent_submit_input_buffer(is_discont, inbuf);
        }
        self.submit_pipelined(inbuf)
    }

    fn generate_output(
        &self,
    ) -> Result<gst_base::subclass::base_transform::GenerateOutputSuccess, gst::FlowError> {
        if self.pipelined.load(Ordering::SeqCst) {
            // The output thread pushes the buffers in flight.
            return Ok(gst_base::subclass::base_transform::GenerateOutputSuccess::NoOutput);
        }
        self.parent_generate_output()
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry = now_ns();
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::Flushing);
        };
        let primary = state.secondary.is_none();
        let Some(source) = state.source.as_ref() else {
            drop(guard);
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("No caps before the first buffer")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        // A plain frame: its size, for the frame metadata added below.
        let (frames, single_size) = match source {
            FrameSource::Single(info) => (1, Some((info.width(), info.height()))),
            FrameSource::Batched => (
                BatchMeta::of(buf).map_or(0, |m| m.batch().frames.len()),
                None,
            ),
        };
        let mut warnings = Vec::new();
        let outcome = if state.secondary.is_some() {
            self.classify_objects(state, buf, &mut warnings)
        } else {
            self.infer_frames(state, buf, frames, single_size, &mut warnings)
        };
        let settings_warnings = state.inference.take_warnings();
        // Messages are posted without holding the state lock: a bus handler may stop the
        // element.
        drop(guard);
        self.post_warnings(warnings, settings_warnings);
        let (work, counts) = outcome.map_err(|(kind, message)| {
            if self.flight.interrupted() {
                // A flush or a stop ended a wait for the server: not an error.
                gst::debug!(CAT, imp = self, "interrupted: {message}");
                return gst::FlowError::Flushing;
            }
            gst::element_imp_error!(self, kind, ("{message}"));
            gst::FlowError::Error
        })?;
        if work.is_some() {
            self.throughput.lock().unwrap().record(frames as u64);
        }
        let metrics = {
            let mut stats = self.stats.lock().unwrap();
            stats.record(frames as u64, work.as_ref(), primary);
            stats.objects += counts.objects;
            stats.cached += counts.cached;
            stats.metrics.clone()
        };
        if let Some(m) = metrics
            && let Some(mut meta) = buf.meta_mut::<BatchMeta>()
        {
            m.latency.record(meta.batch_mut(), entry);
        }
        Ok(gst::FlowSuccess::Ok)
    }
}

/// Objects worked on and cached results used for one buffer (secondary mode).
#[derive(Default)]
struct PlanCounts {
    objects: u64,
    cached: u64,
}

type Outcome = Result<(Option<Work>, PlanCounts), FrameError>;
