// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, mpsc};
use std::time::Duration;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use serde_json::{Value, json};

use ferrostream_core::element::{sync_state_with_parent, top_level};
use ferrostream_core::http::{self, Request, Response};
use ferrostream_core::latency::now_ns;
use ferrostream_core::metrics;

use super::ids::StreamIds;
use super::rest::{self, Action, Camera, Reply, StreamRequest};
use crate::record::{self, Container};
use crate::urisrcbin::{RsUriSrcBin, RtpProtocol, SourceState, SourceStatus};
use ferrostream_core::settings::GEnum;
use ferrostream_streammux::streammux::StreamMux;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsmultiurisrcbin",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream sources managed over REST"),
    )
});

/// Properties that go to the muxer as they are.
const MUX_PROPERTIES: &[&str] = &[
    "batch-size",
    "batched-push-timeout",
    "max-latency",
    "sync-inputs",
    "width",
    "height",
    "latency-tracking",
];

/// Properties that go to every source as they are: to the sources made after they are set,
/// and, for those an rsurisrcbin takes while PLAYING (`drop-frame-interval`), to the sources
/// already there too.
const SOURCE_PROPERTIES: &[&str] = &[
    "reconnect-interval",
    "initial-reconnect-interval",
    "reconnect-attempts",
    "reconnect-backoff-max",
    "file-loop",
    "latency",
    "rtp-protocol",
    "num-buffers",
    "drop-frame-interval",
    "record-cache",
    "record-duration",
    "record-dir",
    "record-container",
];

/// No batch for this long while a source plays: the bin is not live.
const STALL: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
struct Settings {
    uri_list: Vec<String>,
    sensor_ids: Vec<String>,
    sensor_names: Vec<String>,
    max_sources: u32,
    format: Option<String>,
    rest_address: String,
    rest_port: u32,
    rest_token: Option<String>,
    record_prefix: String,
    record_on: Vec<RecordOn>,
    /// Readiness waits for every camera (a frame, or given up) instead of one.
    ready_needs_every_camera: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            uri_list: Vec::new(),
            sensor_ids: Vec::new(),
            sensor_names: Vec::new(),
            max_sources: 16,
            format: Some("I420".into()),
            rest_address: "127.0.0.1".into(),
            rest_port: 9000,
            rest_token: None,
            record_prefix: "rec".into(),
            record_on: Vec::new(),
            ready_needs_every_camera: false,
        }
    }
}

/// An rsanalytics event that starts a recording: `line-crossing[:line]`,
/// `overcrowding[:region]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordOn {
    message: &'static str,
    name: Option<String>,
}

impl RecordOn {
    fn parse_list(text: &str) -> Result<Vec<RecordOn>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|item| {
                let (kind, name) = match item.split_once(':') {
                    Some((k, n)) => (k.trim(), Some(n.trim().to_string())),
                    None => (item, None),
                };
                let message = match kind {
                    "line-crossing" => "rsanalytics-line-crossing",
                    "overcrowding" => "rsanalytics-overcrowding",
                    other => {
                        return Err(format!(
                            "record-on: `{other}` is not an event (line-crossing[:LINE], \
                             overcrowding[:REGION])"
                        ));
                    }
                };
                Ok(RecordOn { message, name })
            })
            .collect()
    }

    fn text(&self) -> String {
        let kind = self.message.trim_start_matches("rsanalytics-");
        match &self.name {
            Some(n) => format!("{kind}:{n}"),
            None => kind.to_string(),
        }
    }

    /// Whether `s` (an rsanalytics message) is this event.
    fn matches(&self, s: &gst::StructureRef) -> bool {
        if s.name() != self.message {
            return false;
        }
        // Overcrowding starts a recording when a region becomes crowded.
        if self.message == "rsanalytics-overcrowding" && !s.get::<bool>("crowded").unwrap_or(false)
        {
            return false;
        }
        let key = if self.message == "rsanalytics-line-crossing" {
            "line"
        } else {
            "region"
        };
        self.name
            .as_deref()
            .is_none_or(|n| s.get::<&str>(key).is_ok_and(|v| v == n))
    }
}

/// An rsanalytics event of `record-on`, on its way to the recorder.
struct Trigger {
    event: String,
    stream: u32,
    pts: Option<gst::ClockTime>,
}

struct RecordWatch {
    bus: gst::Bus,
    id: glib::SignalHandlerId,
    /// Starts the recordings the handler hands on.
    thread: std::thread::JoinHandle<()>,
}

/// A camera in the bin.
struct Source {
    camera_id: String,
    camera_name: String,
    uri: String,
    bin: RsUriSrcBin,
    /// The converter and caps filter before the muxer (none with `format` empty).
    convert: Vec<gst::Element>,
    mux_pad: gst::Pad,
}

#[derive(Default)]
struct Sources {
    by_id: BTreeMap<u32, Source>,
    ids: StreamIds,
}

pub struct RsMultiUriSrcBin {
    settings: Mutex<Settings>,
    mux: gst::Element,
    /// Holds the values of [`SOURCE_PROPERTIES`] every new camera's source gets.
    template: RsUriSrcBin,
    sources: Mutex<Sources>,
    /// Serialises adding and removing (the `sources` lock is never held over state changes).
    changing: Mutex<()>,
    server: Mutex<Option<http::Server>>,
    /// When the last batch left, in ns of the monotonic clock.
    last_batch_ns: Arc<AtomicU64>,
    /// The bus whose rsanalytics messages start recordings, and the handler.
    record_watch: Mutex<Option<RecordWatch>>,
    /// Series of the bin itself.
    metrics: Mutex<Option<BinMetrics>>,
}

struct BinMetrics {
    sources: metrics::Gauge,
    requests: BTreeMap<u16, metrics::Counter>,
    labels: Vec<(String, String)>,
}

impl BinMetrics {
    fn new(element: &str) -> Self {
        Self {
            sources: metrics::global().gauge(
                "ferrostream_multiurisrcbin_sources",
                "Cameras in the bin.",
                &[("element", element)],
            ),
            requests: BTreeMap::new(),
            labels: vec![("element".into(), element.into())],
        }
    }

    fn request(&mut self, status: u16) {
        let labels = &self.labels;
        self.requests
            .entry(status)
            .or_insert_with(|| {
                let code = status.to_string();
                let mut l: Vec<(&str, &str)> = labels
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                l.push(("code", code.as_str()));
                metrics::global().counter(
                    "ferrostream_rest_requests_total",
                    "REST requests answered, by HTTP status.",
                    &l,
                )
            })
            .inc();
    }
}

impl RsMultiUriSrcBin {
    fn post(&self, s: gst::Structure) {
        let obj = self.obj();
        let _ = obj.post_message(gst::message::Element::builder(s).src(&*obj).build());
    }

    /// Adds a camera; returns its stream id.
    pub(super) fn add_source(&self, request: &StreamRequest) -> Result<u32, Reply> {
        let _changing = self.changing.lock().unwrap();
        let settings = self.settings.lock().unwrap().clone();
        let id = {
            let mut sources = self.sources.lock().unwrap();
            if sources
                .by_id
                .values()
                .any(|s| s.camera_id == request.camera_id)
            {
                return Err(Reply::new(
                    409,
                    format!(
                        "STREAM_ADD_FAIL, Duplicate Camera id, unable to add stream: `{}` is \
                         playing",
                        request.camera_id
                    ),
                ));
            }
            sources
                .ids
                .take(&request.camera_id, settings.max_sources)
                .ok_or_else(|| {
                    Reply::new(
                        503,
                        format!(
                            "STREAM_ADD_FAIL, Active sources exceed max-sources ({})",
                            settings.max_sources
                        ),
                    )
                })?
        };
        match self.build_source(id, request, &settings) {
            Ok(source) => {
                gst::info!(
                    CAT,
                    imp = self,
                    "camera {} ({}) is stream {id}",
                    request.camera_id,
                    source.uri
                );
                self.sources.lock().unwrap().by_id.insert(id, source);
                self.count_sources();
                // Started after it is listed, so that its first messages find it.
                let started = {
                    let sources = self.sources.lock().unwrap();
                    let s = &sources.by_id[&id];
                    (s.convert.clone(), s.bin.clone())
                };
                let mut failed = None;
                for element in started.0.iter().rev() {
                    if sync_state_with_parent(element).is_err() {
                        failed = Some(element.name());
                    }
                }
                if sync_state_with_parent(&started.1).is_err() {
                    failed = Some(started.1.name());
                }
                if let Some(name) = failed {
                    let _ = self.take_source(id);
                    return Err(Reply::new(
                        500,
                        format!(
                            "STREAM_ADD_FAIL, Failed to add source stream: {name} did not start"
                        ),
                    ));
                }
                self.post(
                    gst::Structure::builder("rsmultiurisrcbin-stream-added")
                        .field("camera-id", &request.camera_id)
                        .field("camera-name", &request.camera_name)
                        .field("stream-id", id)
                        .build(),
                );
                Ok(id)
            }
            Err(m) => {
                self.sources.lock().unwrap().ids.release(id);
                Err(Reply::new(
                    500,
                    format!("STREAM_ADD_FAIL, Failed to add source stream: {m}"),
                ))
            }
        }
    }

    /// The elements of stream `id`, in the bin and linked to the muxer (not started).
    fn build_source(
        &self,
        id: u32,
        request: &StreamRequest,
        settings: &Settings,
    ) -> Result<Source, String> {
        let obj = self.obj();
        let bin = glib::Object::builder::<RsUriSrcBin>()
            .property("name", format!("{}-source-{id}", obj.name()))
            .property("uri", &request.camera_url)
            .build();
        for name in SOURCE_PROPERTIES {
            bin.set_property_from_value(name, &self.template.property_value(name));
        }
        bin.set_property(
            "record-prefix",
            format!(
                "{}_{}",
                settings.record_prefix,
                file_safe(&request.camera_id)
            ),
        );
        bin.set_metric_labels(vec![
            ("source_id".into(), id.to_string()),
            ("camera_id".into(), request.camera_id.clone()),
        ]);
        let mut convert = Vec::new();
        if let Some(format) = &settings.format {
            let caps = gst::Caps::builder("video/x-raw")
                .field("format", format)
                .build();
            convert.push(
                gst::ElementFactory::make("videoconvert")
                    .name(format!("convert-{id}"))
                    .build()
                    .map_err(|e| format!("cannot make videoconvert: {e}"))?,
            );
            convert.push(
                gst::ElementFactory::make("capsfilter")
                    .name(format!("format-{id}"))
                    .property("caps", &caps)
                    .build()
                    .map_err(|e| format!("cannot make capsfilter: {e}"))?,
            );
        }
        let mut chain: Vec<gst::Element> = vec![bin.clone().upcast()];
        chain.extend(convert.iter().cloned());
        obj.add_many(&chain)
            .map_err(|e| format!("cannot add: {e}"))?;
        let undo = |chain: &[gst::Element]| {
            for e in chain {
                let _ = obj.remove(e);
            }
        };
        if let Err(e) = gst::Element::link_many(&chain) {
            undo(&chain);
            return Err(format!("cannot link: {e}"));
        }
        let Some(mux_pad) = self.mux.request_pad_simple(&format!("sink_{id}")) else {
            undo(&chain);
            return Err(format!("rsstreammux gave no pad sink_{id}"));
        };
        let out = chain
            .last()
            .expect("the source")
            .static_pad("src")
            .expect("a src pad");
        if let Err(e) = out.link(&mux_pad) {
            self.mux.release_request_pad(&mux_pad);
            undo(&chain);
            return Err(format!("cannot link to the muxer: {e:?}"));
        }
        Ok(Source {
            camera_id: request.camera_id.clone(),
            camera_name: if request.camera_name.is_empty() {
                request.camera_id.clone()
            } else {
                request.camera_name.clone()
            },
            uri: request.camera_url.clone(),
            bin,
            convert,
            mux_pad,
        })
    }

    /// Removes the camera `camera_id` (whose URI must be `uri` when one is given).
    pub(super) fn remove_source(&self, camera_id: &str, uri: Option<&str>) -> Result<u32, Reply> {
        let _changing = self.changing.lock().unwrap();
        let id = {
            let sources = self.sources.lock().unwrap();
            sources
                .by_id
                .iter()
                .find(|(_, s)| s.camera_id == camera_id && uri.is_none_or(|u| u == s.uri))
                .map(|(&id, _)| id)
        };
        let Some(id) = id else {
            return Err(Reply::new(
                404,
                format!(
                    "STREAM_REMOVE_FAIL, No record found. Failed to remove source stream: no \
                     camera `{camera_id}`{}",
                    uri.map(|u| format!(" with url {u}")).unwrap_or_default()
                ),
            ));
        };
        self.take_source(id);
        Ok(id)
    }

    /// Stops, unlinks and removes stream `id`; the muxer tells downstream it ended.
    fn take_source(&self, id: u32) -> Option<()> {
        let source = self.sources.lock().unwrap().by_id.remove(&id)?;
        // Stopped first (its threads end), then its muxer pad released: the muxer drops what it
        // queued for it and sends the stream's end downstream (trackers and analytics release
        // it, rsmsgbroker reports its objects as left). Its state is locked before: a state
        // change of the bin meanwhile (another camera's preroll) would bring it back up.
        for element in std::iter::once(source.bin.upcast_ref()).chain(&source.convert) {
            element.set_locked_state(true);
            let _ = element.set_state(gst::State::Null);
        }
        self.mux.release_request_pad(&source.mux_pad);
        let obj = self.obj();
        let _ = obj.remove(&source.bin);
        for element in &source.convert {
            let _ = obj.remove(element);
        }
        self.sources.lock().unwrap().ids.release(id);
        self.count_sources();
        gst::info!(
            CAT,
            imp = self,
            "camera {} (stream {id}) removed",
            source.camera_id
        );
        self.post(
            gst::Structure::builder("rsmultiurisrcbin-stream-removed")
                .field("camera-id", &source.camera_id)
                .field("stream-id", id)
                .build(),
        );
        Some(())
    }

    fn count_sources(&self) {
        let n = self.sources.lock().unwrap().by_id.len();
        if let Some(m) = self.metrics.lock().unwrap().as_ref() {
            m.sources.set(n as f64);
        }
    }

    /// The source a request names.
    fn find(&self, camera: &Camera) -> Option<(u32, RsUriSrcBin)> {
        let sources = self.sources.lock().unwrap();
        match camera {
            Camera::Stream(id) => sources.by_id.get(id).map(|s| (*id, s.bin.clone())),
            Camera::Id(c) => sources
                .by_id
                .iter()
                .find(|(_, s)| &s.camera_id == c)
                .map(|(id, s)| (*id, s.bin.clone())),
        }
    }

    /// The cameras at start (`uri-list` with `sensor-id-list` and `sensor-name-list`).
    fn add_configured(&self) -> Result<(), String> {
        let settings = self.settings.lock().unwrap().clone();
        for (i, uri) in settings.uri_list.iter().enumerate() {
            let camera_id = settings
                .sensor_ids
                .get(i)
                .cloned()
                .unwrap_or_else(|| i.to_string());
            let request = StreamRequest {
                camera_id: camera_id.clone(),
                camera_name: settings.sensor_names.get(i).cloned().unwrap_or_default(),
                camera_url: uri.clone(),
                metadata: Value::Null,
            };
            if !uri.contains("://") {
                return Err(format!(
                    "uri-list: `{uri}` is not a URI (file:///path, rtsp://host/path, http://...)"
                ));
            }
            self.add_source(&request)
                .map_err(|r| format!("uri-list: camera {camera_id}: {}", r.reason))?;
        }
        Ok(())
    }

    fn remove_all(&self) {
        let ids: Vec<u32> = self.sources.lock().unwrap().by_id.keys().copied().collect();
        let _changing = self.changing.lock().unwrap();
        for id in ids {
            self.take_source(id);
        }
    }

    /// Whether every camera gave a frame or failed.
    /// Readiness, and the cameras that gave no frame yet (named in the answer): PLAYING and,
    /// as DeepStream, ready once one camera delivers (or none is configured); with
    /// `ready-needs-every-camera`, once every camera gave a frame or was given up.
    fn readiness(&self) -> (bool, Vec<Value>) {
        let every = self.settings.lock().unwrap().ready_needs_every_camera;
        let sources = self.sources.lock().unwrap();
        let statuses: Vec<_> = sources.by_id.values().map(|s| s.bin.status()).collect();
        let waiting = sources
            .by_id
            .iter()
            .zip(&statuses)
            .filter(|(_, status)| status.frames == 0)
            .map(|((&id, s), status)| {
                json!({"camera_id": s.camera_id, "source_id": id, "state": status.state.name()})
            })
            .collect();
        let cameras = if every {
            statuses
                .iter()
                .all(|s| s.frames > 0 || s.state == SourceState::Failed)
        } else {
            statuses.is_empty() || statuses.iter().any(|s| s.frames > 0)
        };
        (
            self.obj().current_state() == gst::State::Playing && cameras,
            waiting,
        )
    }

    /// Whether batches flow (or nothing is there to flow).
    fn live(&self) -> bool {
        if self.obj().current_state() != gst::State::Playing {
            return true;
        }
        let playing = self
            .sources
            .lock()
            .unwrap()
            .by_id
            .values()
            .any(|s| s.bin.status().state == SourceState::Playing);
        let since = now_ns().saturating_sub(self.last_batch_ns.load(Ordering::Relaxed));
        !playing || Duration::from_nanos(since) < STALL
    }

    /// One JSON object per camera, made by `entry` from its stream id, camera and status.
    fn per_camera(&self, entry: impl Fn(u32, &Source, SourceStatus) -> Value) -> Vec<Value> {
        let sources = self.sources.lock().unwrap();
        sources
            .by_id
            .iter()
            .map(|(&id, s)| entry(id, s, s.bin.status()))
            .collect()
    }

    fn stream_info(&self) -> Value {
        let list = self.per_camera(|id, s, status| {
            json!({
                "camera_id": s.camera_id,
                "camera_name": s.camera_name,
                "source_id": id,
                "state": status.state.name(),
                "frames": status.frames,
                "fps": status.fps,
                "reconnections": status.reconnections,
            })
        });
        json!({"stream-count": list.len(), "stream-info": list})
    }

    fn stream_metrics(&self) -> Value {
        let list = self.per_camera(|id, s, status| {
            json!({
                "fps": status.fps,
                "frame_number": status.frames,
                "sensor_id": s.camera_id,
                "sensor_name": s.camera_name,
                "source_id": id,
            })
        });
        json!({"stream-count": list.len(), "stream-stats": list})
    }

    /// Elements of the pipeline the bin is in (the bin's own included).
    fn pipeline_elements(&self) -> Vec<gst::Element> {
        let top = top_level(self.obj().upcast_ref());
        match top.downcast_ref::<gst::Bin>() {
            Some(bin) => bin.iterate_recurse().into_iter().flatten().collect(),
            None => vec![top],
        }
    }

    fn elements_of(&self, factories: &[&str]) -> Vec<gst::Element> {
        self.pipeline_elements()
            .into_iter()
            .filter(|e| {
                e.factory()
                    .is_some_and(|f| factories.contains(&f.name().as_str()))
            })
            .collect()
    }

    /// Carries out a request.
    fn act(&self, action: Action) -> Response {
        match action {
            Action::AddStream(request) => match self.add_source(&request) {
                Ok(id) => Reply::ok("STREAM_ADD_SUCCESS").with("stream_id", id.into()),
                Err(reply) => reply,
            }
            .response(),
            Action::RemoveStream(request) => {
                let uri = Some(request.camera_url.as_str()).filter(|u| !u.is_empty());
                match self.remove_source(&request.camera_id, uri) {
                    Ok(id) => Reply::ok("STREAM_REMOVE_SUCCESS").with("stream_id", id.into()),
                    Err(reply) => reply,
                }
                .response()
            }
            Action::StreamInfo => Reply::ok("GET_LIVE_STREAM_INFO_SUCCESS")
                .with("stream-info", self.stream_info())
                .response(),
            Action::DsReady => {
                let state = self.obj().current_state();
                let yes = matches!(state, gst::State::Playing | gst::State::Paused);
                Reply::ok("GET_READY_INFO_SUCCESS")
                    .with(
                        "health-info",
                        json!({"ds-ready": if yes { "YES" } else { "NO" }}),
                    )
                    .response()
            }
            Action::Live => {
                rest::health("live", "ds-liveness", self.live(), "GET_LIVE_INFO_SUCCESS").response()
            }
            Action::Ready => {
                let (ready, waiting) = self.readiness();
                let mut reply = rest::health("ready", "ds-ready", ready, "GET_READY_INFO_SUCCESS");
                reply.add_to(
                    "ready-info",
                    "cameras-without-frames",
                    Value::Array(waiting),
                );
                reply.response()
            }
            Action::SetDropFrameInterval {
                stream_id,
                interval,
            } => match self.find(&Camera::Stream(stream_id)) {
                Some((_, bin)) => {
                    bin.set_property("drop-frame-interval", interval);
                    Reply::ok("DROP_FRAME_INTERVAL_UPDATE_SUCCESS").response()
                }
                None => Reply::new(
                    404,
                    format!("DROP_FRAME_INTERVAL_UPDATE_FAIL, no stream {stream_id}"),
                )
                .response(),
            },
            Action::Quit { app_quit } => {
                // Every camera's stream ends: the muxer sends EOS downstream once all have, and
                // the pipeline ends as at the end of its files.
                for pad in self.mux.sink_pads() {
                    pad.send_event(gst::event::Eos::new());
                }
                let obj = self.obj();
                let s = gst::Structure::builder("ferrostream-force-pipeline-eos")
                    .field("app-quit", app_quit)
                    .build();
                let _ = obj.post_message(gst::message::Element::builder(s).src(&*obj).build());
                Reply::ok("QUIT_SUCCESS").response()
            }
            Action::Startup => {
                let state = self.obj().current_state();
                let started = matches!(state, gst::State::Playing | gst::State::Paused);
                rest::health("startup", "ds-startup", started, "GET_STARTUP_INFO_SUCCESS")
                    .response()
            }
            Action::StreamMetrics { prometheus: true } | Action::Metrics => prometheus(),
            Action::StreamMetrics { prometheus: false } => Reply::ok("GET_METRICS_INFO_SUCCESS")
                .with("metrics-info", self.stream_metrics())
                .response(),
            Action::Version => Response::json(
                200,
                &json!({"version": format!("Ferrostream {} - REST API Version v1",
                    env!("CARGO_PKG_VERSION"))}),
            ),
            Action::SetInferInterval {
                interval,
                element,
                server,
            } => {
                let reason = if server { "INFERSERVER" } else { "INFER" };
                self.set_interval(interval, element.as_deref(), reason)
                    .response()
            }
            Action::UpdateRois { stream_id, rois } => self.update_rois(stream_id, &rois).response(),
            Action::SetBatchedPushTimeout(us) => {
                self.mux.set_property("batched-push-timeout", us);
                Reply::ok("BATCHED_PUSH_TIMEOUT_UPDATE_SUCCESS").response()
            }
            Action::SetMaxLatency(ns) => {
                self.mux.set_property("max-latency", ns);
                Reply::ok("MAX_LATENCY_UPDATE_SUCCESS").response()
            }
            Action::RecordStart { camera, duration } => {
                let Some((id, bin)) = self.find(&camera) else {
                    return Reply::new(404, format!("RECORD_START_FAIL, no camera {camera:?}"))
                        .response();
                };
                let duration = duration.and_then(record::seconds);
                match bin.start_record(None, duration) {
                    Ok(file) => Reply::ok("RECORD_START_SUCCESS")
                        .with("stream_id", id.into())
                        .with("file", file.to_string_lossy().into())
                        .response(),
                    Err(m) => Reply::new(409, format!("RECORD_START_FAIL, {m}")).response(),
                }
            }
            Action::RecordStop { camera } => {
                let Some((_, bin)) = self.find(&camera) else {
                    return Reply::new(404, format!("RECORD_STOP_FAIL, no camera {camera:?}"))
                        .response();
                };
                if bin.stop_record() {
                    Reply::ok("RECORD_STOP_SUCCESS").response()
                } else {
                    Reply::new(409, "RECORD_STOP_FAIL, no recording is open").response()
                }
            }
        }
    }

    /// Sets `interval` on the primary inference elements (or `element`); `reason` starts the
    /// answer's reason (`INFER`, `INFERSERVER`).
    fn set_interval(&self, interval: u32, element: Option<&str>, reason: &str) -> Reply {
        let targets: Vec<gst::Element> = self
            .elements_of(&["rstrtinfer", "rsdlainfer"])
            .into_iter()
            .filter(|e| match element {
                Some(name) => e.name() == name,
                None => is_primary(e),
            })
            .collect();
        if targets.is_empty() {
            return Reply::new(
                404,
                match element {
                    Some(name) => {
                        format!("{reason}_INTERVAL_UPDATE_FAIL, no inference element `{name}`")
                    }
                    None => format!(
                        "{reason}_INTERVAL_UPDATE_FAIL, no primary inference element in the \
                         pipeline"
                    ),
                },
            );
        }
        for e in &targets {
            e.set_property("interval", interval);
        }
        let names: Vec<String> = targets.iter().map(|e| e.name().to_string()).collect();
        Reply::ok(&format!("{reason}_INTERVAL_UPDATE_SUCCESS")).with("elements", json!(names))
    }

    fn update_rois(&self, stream_id: u32, rois: &[rest::Roi]) -> Reply {
        // Sources take stream ids below max-sources: regions of a stream that cannot exist are
        // a mistake (regions of one that is not there yet are kept for when it comes).
        let max_sources = self.settings.lock().unwrap().max_sources;
        if stream_id >= max_sources {
            return Reply::new(
                404,
                format!(
                    "ROI_UPDATE_FAIL, no stream {stream_id}: stream ids lie below max-sources \
                     ({max_sources})"
                ),
            );
        }
        let targets = self.elements_of(&["rsanalytics"]);
        if targets.is_empty() {
            return Reply::new(
                404,
                "ROI_UPDATE_FAIL, no rsanalytics element in the pipeline",
            );
        }
        let text = rois
            .iter()
            .map(|r| {
                let (l, t, rr, b) = (r.left, r.top, r.left + r.width, r.top + r.height);
                format!("{}={l};{t};{rr};{t};{rr};{b};{l};{b}", r.id)
            })
            .collect::<Vec<_>>()
            .join("|");
        for e in &targets {
            let ok = e.emit_by_name::<bool>("set-stream-rois", &[&stream_id, &text]);
            if !ok {
                return Reply::new(
                    400,
                    format!("ROI_UPDATE_FAIL, {} refused the regions", e.name()),
                );
            }
        }
        Reply::ok("ROI_UPDATE_SUCCESS")
    }

    /// Serves one request (on a server thread).
    fn serve(&self, request: &Request) -> Response {
        let token = self.settings.lock().unwrap().rest_token.clone();
        let response = if !rest::authorized(request, token.as_deref()) {
            rest::unauthorized()
        } else {
            match rest::route(request) {
                Ok(action) => self.act(action),
                Err(reply) => reply.response(),
            }
        };
        gst::debug!(
            CAT,
            imp = self,
            "{} {} -> {}",
            request.method,
            request.path,
            response.status
        );
        if let Some(m) = self.metrics.lock().unwrap().as_mut() {
            m.request(response.status);
        }
        response
    }

    fn start_server(&self) -> Result<(), String> {
        let settings = self.settings.lock().unwrap().clone();
        if settings.rest_port == 0 {
            return Ok(());
        }
        let this = self.obj().downgrade();
        let handler: http::Handler = Arc::new(move |request| match this.upgrade() {
            Some(bin) => bin.imp().serve(request),
            None => Reply::new(503, "the element is gone").response(),
        });
        let server = http::Server::start(
            &settings.rest_address,
            settings.rest_port as u16,
            "rsmultiurisrcbin-rest",
            handler,
        )
        .map_err(|e| {
            format!(
                "cannot serve the REST API on {}:{}: {e}",
                settings.rest_address, settings.rest_port
            )
        })?;
        gst::info!(
            CAT,
            imp = self,
            "REST API on http://{}",
            server.local_addr()
        );
        *self.server.lock().unwrap() = Some(server);
        Ok(())
    }

    /// Watches the pipeline's bus for the rsanalytics events of `record-on`. The bus handler
    /// runs on the posting element's streaming thread: it only hands the event to a thread of
    /// the bin's, which opens the files.
    fn watch_events(&self) {
        let record_on = self.settings.lock().unwrap().record_on.clone();
        if record_on.is_empty() {
            return;
        }
        let Some(bus) = top_level(self.obj().upcast_ref()).bus() else {
            gst::warning!(CAT, imp = self, "no bus to watch for record-on events");
            return;
        };
        let (triggers, received) = mpsc::channel::<Trigger>();
        let this = self.obj().downgrade();
        let thread = std::thread::Builder::new()
            .name("rsmultiurisrcbin-record".into())
            .spawn(move || {
                // Ends when the bus handler (the only sender) is disconnected.
                for trigger in received {
                    match this.upgrade() {
                        Some(bin) => bin.imp().record_event(&trigger),
                        None => return,
                    }
                }
            })
            .expect("spawning a thread");
        bus.enable_sync_message_emission();
        let id = bus.connect_sync_message(Some("element"), move |_, message| {
            let Some(s) = message.structure() else { return };
            if !record_on.iter().any(|r| r.matches(s)) {
                return;
            }
            let Ok(stream) = s.get::<u32>("source-id") else {
                return;
            };
            let pts = s
                .get::<u64>("pts")
                .ok()
                .filter(|&p| p != u64::MAX)
                .map(gst::ClockTime::from_nseconds);
            let _ = triggers.send(Trigger {
                event: s.name().to_string(),
                stream,
                pts,
            });
        });
        *self.record_watch.lock().unwrap() = Some(RecordWatch { bus, id, thread });
    }

    fn unwatch_events(&self) {
        let watch = self.record_watch.lock().unwrap().take();
        if let Some(w) = watch {
            w.bus.disconnect(w.id);
            w.bus.disable_sync_message_emission();
            let _ = w.thread.join();
        }
    }

    fn record_event(&self, trigger: &Trigger) {
        let Some((_, bin)) = self.find(&Camera::Stream(trigger.stream)) else {
            return;
        };
        if let Err(m) = bin.start_record(trigger.pts, None) {
            gst::warning!(
                CAT,
                imp = self,
                "stream {}: {} starts no recording: {m}",
                trigger.stream,
                trigger.event
            );
        }
    }

    /// Stream id and camera id of our child source `src` is or is in.
    fn source_of(&self, src: &gst::Object) -> Option<(u32, String)> {
        let sources = self.sources.lock().unwrap();
        sources.by_id.iter().find_map(|(id, s)| {
            (src == s.bin.upcast_ref::<gst::Object>() || src.has_as_ancestor(&s.bin))
                .then(|| (*id, s.camera_id.clone()))
        })
    }
}

/// Whether an inference element works on whole frames.
fn is_primary(element: &gst::Element) -> bool {
    if element.find_property("process-mode").is_none() {
        return true;
    }
    let value = element.property_value("process-mode");
    glib::EnumValue::from_value(&value).is_none_or(|(_, v)| v.nick() == "primary")
}

/// The process's metrics in Prometheus' text format.
pub fn prometheus() -> Response {
    let mut response = Response::text(200, metrics::global().render());
    response.content_type = "text/plain; version=0.0.4; charset=utf-8".into();
    response
}

/// `text` with characters other than letters, digits, `-`, `_` and `.` replaced, for file names.
fn file_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn split_list(text: Option<String>) -> Vec<String> {
    text.unwrap_or_default()
        .split([',', ';'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[glib::object_subclass]
impl ObjectSubclass for RsMultiUriSrcBin {
    const NAME: &'static str = "GstRsMultiUriSrcBin";
    type Type = super::RsMultiUriSrcBin;
    type ParentType = gst::Bin;

    fn with_class(_klass: &Self::Class) -> Self {
        let mux = glib::Object::builder::<StreamMux>()
            .property("name", "mux")
            .build()
            .upcast();
        Self {
            settings: Mutex::default(),
            mux,
            template: glib::Object::new(),
            sources: Mutex::default(),
            changing: Mutex::default(),
            server: Mutex::default(),
            last_batch_ns: Arc::default(),
            record_watch: Mutex::default(),
            metrics: Mutex::default(),
        }
    }
}

/// A property of the bin that stands for the property `name` of `owner` (a class whose
/// properties the bin hands on): the same type, range and default, the blurb saying where it
/// goes, and `flags` for when it may change.
fn forwarded_pspec(
    owner: glib::Type,
    name: &str,
    goes_to: &str,
    flags: glib::ParamFlags,
) -> glib::ParamSpec {
    let class = glib::object::ObjectClass::from_type(owner).expect("a registered type");
    let p = class.find_property(name).expect("a property of the class");
    let blurb = format!("{} ({goes_to})", p.blurb().unwrap_or_default());
    let nick = p.nick().to_string();
    macro_rules! ranged {
        ($spec:ty) => {
            if let Some(p) = p.downcast_ref::<$spec>() {
                return <$spec>::builder(name)
                    .nick(&nick)
                    .blurb(&blurb)
                    .minimum(p.minimum())
                    .maximum(p.maximum())
                    .default_value(p.default_value())
                    .flags(flags)
                    .build();
            }
        };
    }
    ranged!(glib::ParamSpecUInt);
    ranged!(glib::ParamSpecInt);
    ranged!(glib::ParamSpecUInt64);
    ranged!(glib::ParamSpecInt64);
    if let Some(p) = p.downcast_ref::<glib::ParamSpecBoolean>() {
        return glib::ParamSpecBoolean::builder(name)
            .nick(&nick)
            .blurb(&blurb)
            .default_value(p.default_value())
            .flags(flags)
            .build();
    }
    macro_rules! enumerated {
        ($enum:ty) => {
            if let Some(p) = p.downcast_ref::<glib::ParamSpecEnum>()
                && let Ok(default) = p.default_value::<$enum>()
            {
                return glib::ParamSpecEnum::builder_with_default(name, default)
                    .nick(&nick)
                    .blurb(&blurb)
                    .flags(flags)
                    .build();
            }
        };
    }
    enumerated!(Container);
    enumerated!(GEnum<RtpProtocol>);
    let p = p.downcast_ref::<glib::ParamSpecString>().expect(
        "forwarded properties are numbers, booleans, strings, the container and the RTP protocol",
    );
    glib::ParamSpecString::builder(name)
        .nick(&nick)
        .blurb(&blurb)
        .default_value(p.default_value())
        .flags(flags)
        .build()
}

impl ObjectImpl for RsMultiUriSrcBin {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = Settings::default();
            let mut v = vec![
                glib::ParamSpecString::builder("uri-list")
                    .nick("URI list")
                    .blurb("Comma-separated URIs of the cameras at start")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("sensor-id-list")
                    .nick("Sensor ids")
                    .blurb(
                        "Comma-separated camera ids of uri-list's cameras, in order (default: \
                         their index)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("sensor-name-list")
                    .nick("Sensor names")
                    .blurb("Comma-separated camera names of uri-list's cameras, in order")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("ready-needs-every-camera")
                    .nick("Ready needs every camera")
                    .blurb(
                        "/api/v1/health/ready answers 200 once every camera gave a frame or was \
                         given up, instead of once one camera delivers (DeepStream's policy)",
                    )
                    .default_value(d.ready_needs_every_camera)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt::builder("max-sources")
                    .nick("Max sources")
                    .blurb("Most cameras at once; stream ids are below it")
                    .minimum(1)
                    .maximum(1024)
                    .default_value(d.max_sources)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("format")
                    .nick("Format")
                    .blurb(
                        "Raw video format every camera is converted to before the muxer \
                         (videoconvert); empty: no conversion (decoders and muxer agree, GPU \
                         memory stays on the GPU)",
                    )
                    .default_value(d.format.as_deref())
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("rest-address")
                    .nick("REST address")
                    .blurb("Address the REST API listens on")
                    .default_value(Some(d.rest_address.as_str()))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("rest-port")
                    .nick("REST port")
                    .blurb("TCP port of the REST API (0: no server)")
                    .maximum(65535)
                    .default_value(d.rest_port)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("rest-token")
                    .nick("REST token")
                    .blurb("When set, every request must carry Authorization: Bearer <token>")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("record-prefix")
                    .nick("Record prefix")
                    .blurb("Smart record: files are <prefix>_<camera id>_<unix ms>_<n>.<mp4|mkv>")
                    .default_value(Some(d.record_prefix.as_str()))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("record-on")
                    .nick("Record on")
                    .blurb(
                        "Smart record: rsanalytics events of the pipeline that start a \
                         recording of their camera, comma-separated: line-crossing[:LINE], \
                         overcrowding[:REGION] (a region becoming crowded)",
                    )
                    .mutable_ready()
                    .build(),
            ];
            let when = gst::PARAM_FLAG_MUTABLE_PLAYING | gst::PARAM_FLAG_MUTABLE_READY;
            let source = RsUriSrcBin::static_type();
            v.extend(SOURCE_PROPERTIES.iter().map(|n| {
                let own = glib::object::ObjectClass::from_type(source)
                    .and_then(|c| c.find_property(n))
                    .expect("a property of rsurisrcbin")
                    .flags();
                forwarded_pspec(
                    source,
                    n,
                    "every camera's rsurisrcbin",
                    glib::ParamFlags::READWRITE | (own & when),
                )
            }));
            let mux = StreamMux::static_type();
            v.extend(MUX_PROPERTIES.iter().map(|n| {
                let own = glib::object::ObjectClass::from_type(mux)
                    .and_then(|c| c.find_property(n))
                    .expect("a property of rsstreammux")
                    .flags();
                let when = gst::PARAM_FLAG_MUTABLE_PLAYING | gst::PARAM_FLAG_MUTABLE_READY;
                forwarded_pspec(
                    mux,
                    n,
                    "the muxer",
                    glib::ParamFlags::READWRITE | (own & when),
                )
            }));
            v
        });
        PROPERTIES.as_ref()
    }

    fn signals() -> &'static [glib::subclass::Signal] {
        static SIGNALS: LazyLock<Vec<glib::subclass::Signal>> = LazyLock::new(|| {
            vec![
                // add-source(camera id, camera name, uri) -> stream id, -1 on failure (warned).
                glib::subclass::Signal::builder("add-source")
                    .param_types([
                        String::static_type(),
                        String::static_type(),
                        String::static_type(),
                    ])
                    .return_type::<i32>()
                    .action()
                    .class_handler(|args| {
                        let bin = args[0]
                            .get::<super::RsMultiUriSrcBin>()
                            .expect("the element");
                        let text = |i: usize| text_arg(args, i);
                        let request = StreamRequest {
                            camera_id: text(1),
                            camera_name: text(2),
                            camera_url: text(3),
                            metadata: Value::Null,
                        };
                        let id = match bin.imp().add_source(&request) {
                            Ok(id) => id as i32,
                            Err(reply) => {
                                gst::element_warning!(
                                    bin,
                                    gst::ResourceError::Failed,
                                    ("{}", reply.reason)
                                );
                                -1
                            }
                        };
                        Some(id.to_value())
                    })
                    .build(),
                // remove-source(camera id) -> whether it was there.
                glib::subclass::Signal::builder("remove-source")
                    .param_types([String::static_type()])
                    .return_type::<bool>()
                    .action()
                    .class_handler(|args| {
                        let (bin, camera) = bin_and_text(args);
                        Some(bin.imp().remove_source(&camera, None).is_ok().to_value())
                    })
                    .build(),
                // start-record(camera id, seconds; 0: record-duration) -> the file, or NULL.
                glib::subclass::Signal::builder("start-record")
                    .param_types([String::static_type(), u32::static_type()])
                    .return_type::<Option<String>>()
                    .action()
                    .class_handler(|args| {
                        let (bin, camera) = bin_and_text(args);
                        let duration = record::seconds(args[2].get().expect("a duration"));
                        let started = match bin.imp().find(&Camera::Id(camera.clone())) {
                            None => Err(format!("no camera `{camera}`")),
                            Some((_, source)) => source.start_record(None, duration),
                        };
                        Some(record::signal_reply(&bin, started).to_value())
                    })
                    .build(),
                // stop-record(camera id) -> whether a recording of that camera was open.
                glib::subclass::Signal::builder("stop-record")
                    .param_types([String::static_type()])
                    .return_type::<bool>()
                    .action()
                    .class_handler(|args| {
                        let (bin, camera) = bin_and_text(args);
                        let stopped = bin
                            .imp()
                            .find(&Camera::Id(camera))
                            .is_some_and(|(_, source)| source.stop_record());
                        Some(stopped.to_value())
                    })
                    .build(),
            ]
        });
        SIGNALS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let name = pspec.name();
        if MUX_PROPERTIES.contains(&name) {
            self.mux.set_property_from_value(name, value);
            return;
        }
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        if SOURCE_PROPERTIES.contains(&name) {
            self.template.set_property_from_value(name, value);
            if pspec.flags().contains(gst::PARAM_FLAG_MUTABLE_PLAYING) {
                // The cameras playing take it now (the lock is not held over their setters).
                let bins: Vec<RsUriSrcBin> = {
                    let sources = self.sources.lock().unwrap();
                    sources.by_id.values().map(|s| s.bin.clone()).collect()
                };
                for bin in bins {
                    bin.set_property_from_value(name, value);
                }
            }
            return;
        }
        let mut s = self.settings.lock().unwrap();
        let text = || {
            value
                .get::<Option<String>>()
                .expect("type checked upstream")
        };
        match name {
            "uri-list" => s.uri_list = split_list(text()),
            "sensor-id-list" => s.sensor_ids = split_list(text()),
            "sensor-name-list" => s.sensor_names = split_list(text()),
            "max-sources" => s.max_sources = value.get().expect("type checked upstream"),
            "ready-needs-every-camera" => {
                s.ready_needs_every_camera = value.get().expect("type checked upstream")
            }
            "format" => s.format = text().filter(|f| !f.trim().is_empty()),
            "rest-address" => s.rest_address = text().unwrap_or_else(|| "127.0.0.1".into()),
            "rest-port" => s.rest_port = value.get().expect("type checked upstream"),
            "rest-token" => s.rest_token = text().filter(|t| !t.is_empty()),
            "record-prefix" => s.record_prefix = text().unwrap_or_default(),
            "record-on" => match RecordOn::parse_list(&text().unwrap_or_default()) {
                Ok(list) => s.record_on = list,
                Err(m) => {
                    gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{m}"));
                }
            },
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let name = pspec.name();
        if MUX_PROPERTIES.contains(&name) {
            return self.mux.property_value(name);
        }
        if SOURCE_PROPERTIES.contains(&name) {
            return self.template.property_value(name);
        }
        let s = self.settings.lock().unwrap();
        let join = |list: &[String]| Some(list.join(",")).filter(|t| !t.is_empty()).to_value();
        match name {
            "uri-list" => join(&s.uri_list),
            "sensor-id-list" => join(&s.sensor_ids),
            "sensor-name-list" => join(&s.sensor_names),
            "max-sources" => s.max_sources.to_value(),
            "ready-needs-every-camera" => s.ready_needs_every_camera.to_value(),
            "format" => s.format.to_value(),
            "rest-address" => s.rest_address.to_value(),
            "rest-port" => s.rest_port.to_value(),
            "rest-token" => s.rest_token.to_value(),
            "record-prefix" => s.record_prefix.to_value(),
            "record-on" => {
                let list: Vec<String> = s.record_on.iter().map(RecordOn::text).collect();
                join(&list)
            }
            other => unreachable!("unknown property {other}"),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        // A source (its sources are made at start, too late for the parent bin to tell):
        // the pipeline sends it the end of stream an application asks for.
        obj.set_element_flags(gst::ElementFlags::SOURCE);
        // Names that tell bins apart in the process-wide metrics, which carry element names.
        self.mux.set_property("name", format!("{}-mux", obj.name()));
        obj.add(&self.mux).expect("a new bin takes the muxer");
        let target = self.mux.static_pad("src").expect("the muxer's src");
        let last = self.last_batch_ns.clone();
        target.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            last.store(now_ns(), Ordering::Relaxed);
            gst::PadProbeReturn::Ok
        });
        let ghost = gst::GhostPad::builder_from_template(
            &obj.pad_template("src").expect("the src template"),
        )
        .name("src")
        .build();
        ghost.set_target(Some(&target)).expect("a fresh ghost pad");
        obj.add_pad(&ghost).expect("a new bin takes its pad");
    }

    fn dispose(&self) {
        self.server.lock().unwrap().take();
        self.unwatch_events();
    }
}

impl GstObjectImpl for RsMultiUriSrcBin {}

impl ElementImpl for RsMultiUriSrcBin {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream multi-URI source",
                "Source/Video/Bin",
                "Many cameras batched by rsstreammux, added and removed while playing through \
                 DeepStream's REST API; health, Prometheus metrics and smart record",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let caps = ferrostream_core::batch::any_batch_caps();
            vec![
                gst::PadTemplate::new(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &caps,
                )
                .expect("a valid template"),
            ]
        });
        PAD_TEMPLATES.as_ref()
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        match transition {
            gst::StateChange::NullToReady => {
                *self.metrics.lock().unwrap() = Some(BinMetrics::new(&self.obj().name()));
                if let Err(m) = self.start_server() {
                    gst::element_imp_error!(self, gst::ResourceError::OpenReadWrite, ("{m}"));
                    return Err(gst::StateChangeError);
                }
                if let Err(m) = self.add_configured() {
                    self.server.lock().unwrap().take();
                    self.remove_all();
                    gst::element_imp_error!(self, gst::ResourceError::NotFound, ("{m}"));
                    return Err(gst::StateChangeError);
                }
            }
            gst::StateChange::ReadyToPaused => self.watch_events(),
            _ => {}
        }
        let result = self.parent_change_state(transition);
        match transition {
            gst::StateChange::PausedToReady => self.unwatch_events(),
            gst::StateChange::ReadyToNull => {
                // The server first: no request may add a camera while they go.
                self.server.lock().unwrap().take();
                self.remove_all();
                self.metrics.lock().unwrap().take();
            }
            _ => {}
        }
        result
    }
}

impl BinImpl for RsMultiUriSrcBin {
    fn handle_message(&self, message: gst::Message) {
        // A source's messages carry its camera: rsurisrcbin's element messages are posted again
        // with `camera-id` and `stream-id` added.
        if let gst::MessageView::Element(e) = message.view()
            && let Some(s) = e.structure()
            && s.name().starts_with("rsurisrcbin-")
            && let Some(src) = message.src()
            && let Some((id, camera)) = self.source_of(src)
        {
            let mut s = s.to_owned();
            s.set("camera-id", camera);
            s.set("stream-id", id);
            let obj = self.obj();
            let _ = obj.post_message(gst::message::Element::builder(s).src(src).build());
            return;
        }
        // A source that fails for good takes only itself down: the error becomes a warning and
        // the camera stays listed as failed until it is removed.
        if let gst::MessageView::Error(e) = message.view()
            && let Some(src) = message.src()
            && let Some((id, camera)) = self.source_of(src)
        {
            gst::element_imp_warning!(
                self,
                gst::ResourceError::Read,
                ("camera {camera} (stream {id}) failed: {}", e.error()),
                ["{}", e.debug().map(|d| d.to_string()).unwrap_or_default()]
            );
            return;
        }
        self.parent_handle_message(message)
    }
}

/// An action signal's string argument `i` (NULL reads as empty).
fn text_arg(args: &[glib::Value], i: usize) -> String {
    args[i]
        .get::<Option<String>>()
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The bin an action signal was emitted on and its first argument, a camera id.
fn bin_and_text(args: &[glib::Value]) -> (super::RsMultiUriSrcBin, String) {
    let bin = args[0]
        .get::<super::RsMultiUriSrcBin>()
        .expect("the element");
    (bin, text_arg(args, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_on_events() {
        let list = RecordOn::parse_list("line-crossing:Exit, overcrowding").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].text(), "line-crossing:Exit");
        gst::init().unwrap();
        let crossing = gst::Structure::builder("rsanalytics-line-crossing")
            .field("line", "Exit")
            .build();
        assert!(list[0].matches(&crossing));
        let other = gst::Structure::builder("rsanalytics-line-crossing")
            .field("line", "Entry")
            .build();
        assert!(!list[0].matches(&other));
        let calm = gst::Structure::builder("rsanalytics-overcrowding")
            .field("crowded", false)
            .build();
        assert!(!list[1].matches(&calm));
        assert!(RecordOn::parse_list("motion").is_err());
    }
}
