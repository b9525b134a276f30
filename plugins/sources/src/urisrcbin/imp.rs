// SPDX-License-Identifier: MIT OR Apache-2.0
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

use ferrostream_core::element::sync_state_with_parent;
use ferrostream_core::metrics::{self, Counter, Gauge};
use ferrostream_core::settings::GEnum;

use super::RtpProtocol;
use crate::record::{self, Container, RecordEvent, RecordSettings, Recorder};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsurisrcbin",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream URI source that reconnects"),
    )
});

/// How often the worker looks at the source when nothing else happens.
const TICK: Duration = Duration::from_millis(100);
/// How long a source whose stream downstream ended may go on giving data before the bin ends
/// the stream itself: its own end of stream, on its way, is let through instead.
const QUIET_BEFORE_EOS: Duration = Duration::from_secs(1);
/// How many reconnect intervals a new source has to give its first frame.
const FIRST_FRAME_GRACE: u32 = 3;
/// The least time a new source has to give its first frame.
const MIN_FIRST_FRAME_WAIT: Duration = Duration::from_secs(20);
/// The first back-off before a new attempt; it doubles per failed attempt.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
struct Settings {
    uri: Option<String>,
    reconnect_interval: u32,
    reconnect_attempts: i32,
    backoff_max_ms: u32,
    file_loop: bool,
    latency_ms: u32,
    /// Frames given before the stream ends for good (`num-buffers`, -1: no limit).
    num_buffers: i32,
    /// One decoded frame in every this many leaves the bin (0 or 1: all).
    drop_frame_interval: u32,
    rtp_protocol: RtpProtocol,
    /// Seconds a new source has for its first frame (0: see [`Settings::first_frame_wait`]).
    initial_reconnect_interval: u32,
    record: RecordSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            uri: None,
            reconnect_interval: 10,
            reconnect_attempts: -1,
            backoff_max_ms: 5000,
            file_loop: false,
            latency_ms: 200,
            num_buffers: -1,
            drop_frame_interval: 0,
            rtp_protocol: RtpProtocol::Auto,
            initial_reconnect_interval: 0,
            record: RecordSettings::default(),
        }
    }
}

impl Settings {
    /// Whether the URI is a network stream the bin reconnects (not a local file).
    fn reconnects(&self) -> bool {
        self.reconnect_interval > 0
            && self
                .uri
                .as_deref()
                .and_then(|u| u.split_once("://"))
                .is_some_and(|(scheme, _)| scheme != "file")
    }

    fn loops(&self) -> bool {
        self.file_loop
            && self
                .uri
                .as_deref()
                .is_some_and(|u| u.starts_with("file://"))
    }

    /// How long a new source may take to give its first frame: `initial-reconnect-interval`
    /// when set, else [`FIRST_FRAME_GRACE`] times `reconnect-interval`, at least
    /// [`MIN_FIRST_FRAME_WAIT`] (a slow start, on a loaded machine, is not a lost camera).
    fn first_frame_wait(&self) -> Duration {
        if self.initial_reconnect_interval > 0 {
            return Duration::from_secs(u64::from(self.initial_reconnect_interval));
        }
        let interval = Duration::from_secs(u64::from(self.reconnect_interval));
        (interval * FIRST_FRAME_GRACE).max(MIN_FIRST_FRAME_WAIT)
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let doubled = FIRST_BACKOFF.saturating_mul(1 << attempt.saturating_sub(1).min(16));
        doubled.min(Duration::from_millis(u64::from(self.backoff_max_ms)))
    }
}

/// Which decoded frames `drop-frame-interval` lets out of the bin: the first of a stream, then
/// each that comes `interval` frames after the last one let out. Counting from the last frame
/// let out (rather than from the stream's start) keeps the spacing even when the interval
/// changes while playing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct FrameGate {
    /// Frames dropped since the last one let out; `None` until the stream's first frame.
    dropped: Option<u32>,
}

impl FrameGate {
    /// Whether the next decoded frame leaves the bin, with `interval` (0 or 1: all).
    fn pass(&mut self, interval: u32) -> bool {
        let pass = self
            .dropped
            .is_none_or(|dropped| dropped.saturating_add(1) >= interval);
        self.dropped = Some(match (pass, self.dropped) {
            (false, Some(dropped)) => dropped + 1,
            _ => 0,
        });
        pass
    }
}

/// What the worker thread is asked to do.
#[derive(Debug)]
enum Command {
    /// The source failed or ended: replace it after a back-off (an attempt). Ignored when
    /// `source` is no longer the current one (its later errors are stale).
    Reconnect {
        reason: String,
        source: gst::Element,
    },
    /// The file ended: start it again at once.
    Loop,
    Stop,
}

/// What the streaming threads and the worker share.
#[derive(Debug)]
struct Flow {
    /// When the current source last gave a frame (or was made).
    last_data: Instant,
    /// Failed attempts in a row.
    attempt: u32,
    /// Since when the source has been away (None while it delivers).
    outage_since: Option<Instant>,
    /// The current source's segment, to follow its running time.
    segment: gst::FormattedSegment<gst::ClockTime>,
    /// Running time (before the output's offset) at the end of the last frame.
    last_end: Option<gst::ClockTime>,
    /// The worker gave up: nothing more is attempted.
    gave_up: bool,
    /// Sources made since start; the first is 1.
    generation: u64,
    /// The worker is replacing the source: frames the old one still pushes until it stops are
    /// passed on but are no sign that the source is back.
    replacing: bool,
    /// Whether the current source has given a frame yet.
    started: bool,
    /// Downstream ended the stream (a frame limit, a sink's num-buffers): the bin's stream is
    /// over for good, nothing is reconnected or looped any more.
    downstream_ended: bool,
    /// The end of stream went downstream.
    eos_sent: bool,
    /// The stream ended for good (a file's end without `file-loop`).
    ended: bool,
    /// The source's series (from READY to NULL); its frame counter is the count of frames.
    metrics: Option<SourceMetrics>,
    /// `num-buffers`, from the start.
    limit: Option<u64>,
    /// Frames given since the start, counted here for `num-buffers`: the metrics' counter is
    /// keyed by the element's name, which bins of other pipelines in the process may share.
    given: u64,
    /// `drop-frame-interval`'s count, started again by every stream-start.
    gate: FrameGate,
}

impl Default for Flow {
    fn default() -> Self {
        Self {
            last_data: Instant::now(),
            attempt: 0,
            outage_since: None,
            segment: gst::FormattedSegment::new(),
            last_end: None,
            gave_up: false,
            generation: 0,
            replacing: false,
            started: false,
            downstream_ended: false,
            eos_sent: false,
            ended: false,
            metrics: None,
            limit: None,
            given: 0,
            gate: FrameGate::default(),
        }
    }
}

struct Worker {
    commands: mpsc::Sender<Command>,
    thread: JoinHandle<()>,
}

#[derive(Default)]
pub struct RsUriSrcBin {
    settings: Mutex<Settings>,
    /// The element every source feeds; its source pad is the bin's `src` pad's target.
    output: OnceLock<gst::Element>,
    source: Mutex<Option<gst::Element>>,
    /// Sources dropped lately, held until they have surely stopped (see [`Self::bury`]).
    dropped: Mutex<Vec<(Instant, gst::Element)>>,
    flow: Mutex<Flow>,
    worker: Mutex<Option<Worker>>,
    /// The ring of encoded video for smart record (`record-cache` > 0).
    recorder: Mutex<Option<Arc<Recorder>>>,
    /// Labels the source's metrics carry besides `element` (set by `rsmultiurisrcbin`).
    metric_labels: Mutex<Vec<(String, String)>>,
}

/// How a source is doing, for metrics and readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceState {
    /// Waiting for its first frame.
    Starting,
    Playing,
    Reconnecting,
    /// Gave up after `reconnect-attempts`, or could not start.
    Failed,
    /// Its stream is over (a file's end, downstream ended it).
    Ended,
}

impl SourceState {
    pub const ALL: [SourceState; 5] = [
        SourceState::Starting,
        SourceState::Playing,
        SourceState::Reconnecting,
        SourceState::Failed,
        SourceState::Ended,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SourceState::Starting => "starting",
            SourceState::Playing => "playing",
            SourceState::Reconnecting => "reconnecting",
            SourceState::Failed => "failed",
            SourceState::Ended => "ended",
        }
    }
}

/// What a source reports about itself.
#[derive(Debug, Clone, Copy)]
pub struct SourceStatus {
    pub state: SourceState,
    /// Frames given since the start.
    pub frames: u64,
    pub reconnections: u64,
    /// Frames per second over the last second or so.
    pub fps: f64,
}

/// The source's Prometheus series (see the crate's metrics in the README).
#[derive(Debug)]
struct SourceMetrics {
    frames: Counter,
    dropped: Counter,
    reconnections: Counter,
    states: Vec<(SourceState, Gauge)>,
    fps: Gauge,
    recordings: Counter,
    record_failures: Counter,
    /// Frames and when, at the last fps measurement.
    last_sample: (u64, Instant),
}

impl SourceMetrics {
    fn new(labels: &[(&str, &str)]) -> Self {
        let r = metrics::global();
        let states = SourceState::ALL
            .iter()
            .map(|&state| {
                let mut l = labels.to_vec();
                l.push(("state", state.name()));
                (
                    state,
                    r.gauge(
                        "ferrostream_source_state",
                        "1 for the state the source is in (starting, playing, reconnecting, \
                         failed, ended), else 0.",
                        &l,
                    ),
                )
            })
            .collect();
        Self {
            frames: r.counter(
                "ferrostream_source_frames_total",
                "Decoded frames the source gave (those drop-frame-interval lets out).",
                labels,
            ),
            dropped: r.counter(
                "ferrostream_source_frames_dropped_total",
                "Frames the source's own elements dropped, as their QoS messages report.",
                labels,
            ),
            reconnections: r.counter(
                "ferrostream_source_reconnections_total",
                "Attempts to bring the source back after it failed, ended or went silent.",
                labels,
            ),
            states,
            fps: r.gauge(
                "ferrostream_source_fps",
                "Frames per second the source gave over the last second.",
                labels,
            ),
            recordings: r.counter(
                "ferrostream_source_recordings_total",
                "Smart record files completed.",
                labels,
            ),
            record_failures: r.counter(
                "ferrostream_source_recording_failures_total",
                "Smart record files given up (a write failed).",
                labels,
            ),
            last_sample: (0, Instant::now()),
        }
    }

    fn set_state(&self, state: SourceState) {
        for (s, gauge) in &self.states {
            gauge.set(if *s == state { 1.0 } else { 0.0 });
        }
    }
}

impl RsUriSrcBin {
    fn output(&self) -> &gst::Element {
        self.output.get().expect("made in constructed()")
    }

    fn send(&self, command: Command) {
        if let Some(w) = self.worker.lock().unwrap().as_ref() {
            let _ = w.commands.send(command);
        }
    }

    fn post(&self, s: gst::Structure) {
        let obj = self.obj();
        let _ = obj.post_message(gst::message::Element::builder(s).src(&*obj).build());
    }

    /// A new `uridecodebin` for the URI, linked to the output as its video pad appears.
    fn make_source(&self, settings: &Settings) -> Result<gst::Element, glib::BoolError> {
        let uri = settings.uri.clone().unwrap_or_default();
        let video = gst::Caps::builder("video/x-raw").any_features().build();
        let source = gst::ElementFactory::make("uridecodebin")
            .property("uri", &uri)
            .property("caps", &video)
            .property("expose-all-streams", false)
            .build()?;
        let latency = settings.latency_ms;
        let tcp_only = settings.rtp_protocol == RtpProtocol::Tcp;
        source.connect("source-setup", false, move |args| {
            let element = args[1]
                .get::<gst::Element>()
                .expect("source-setup's element");
            // rtspsrc's jitter buffer; other sources have no such u32 property.
            if element
                .find_property("latency")
                .is_some_and(|p| p.value_type() == u32::static_type())
            {
                element.set_property("latency", latency);
            }
            if tcp_only {
                rtp_over_tcp(&element);
            }
            None
        });
        if let Some(recorder) = self.recorder.lock().unwrap().clone()
            && let Some(bin) = source.downcast_ref::<gst::Bin>()
        {
            bin.connect_deep_element_added(move |_, _, element| {
                if is_video_decoder(element)
                    && let Some(pad) = element.static_pad("sink")
                {
                    tap(&pad, recorder.clone());
                }
            });
        }
        let sink = self.output().static_pad("sink").expect("identity's sink");
        source.connect_pad_added(move |_, pad| {
            if sink.is_linked() {
                return;
            }
            if let Err(e) = pad.link(&sink) {
                gst::warning!(CAT, obj = pad, "cannot link the decoded video: {e:?}");
            }
        });
        Ok(source)
    }

    /// Stops and removes the current source. The lock is not held meanwhile: the source's
    /// streaming threads take it until they stop.
    fn drop_source(&self) {
        let old = self.source.lock().unwrap().take();
        if let Some(old) = old {
            // Locked first: a state change of the bin meanwhile would bring it back up.
            old.set_locked_state(true);
            let _ = old.set_state(gst::State::Null);
            let _ = self.obj().remove(&old);
            stop_all(&old);
            self.dropped.lock().unwrap().push((Instant::now(), old));
        }
    }

    /// Replaces the current source by a new one.
    fn replace_source(&self, settings: &Settings) -> Result<(), String> {
        self.drop_source();
        let obj = self.obj();
        let source = self
            .make_source(settings)
            .map_err(|e| format!("cannot make uridecodebin: {e}"))?;
        obj.add(&source)
            .map_err(|e| format!("cannot add the source: {e}"))?;
        {
            let mut flow = self.flow.lock().unwrap();
            flow.last_data = Instant::now();
            flow.segment = gst::FormattedSegment::new();
            flow.generation += 1;
            flow.replacing = false;
            flow.started = false;
        }
        if let Some(recorder) = self.recorder.lock().unwrap().as_ref() {
            recorder.reset();
        }
        *self.source.lock().unwrap() = Some(source.clone());
        sync_state_with_parent(&source).map_err(|e| format!("cannot start the source: {e}"))?;
        Ok(())
    }

    /// The probe on the output's sink pad: follows the frames and keeps the source's end of
    /// stream from ending the bin's stream when the source is replaced instead.
    fn on_data(&self, info: &mut gst::PadProbeInfo) -> gst::PadProbeReturn {
        // Once the bin's stream has ended, what the source still gives goes no further: a
        // serialized event (a parser's tags) pushed on the ended output would come back to the
        // source as a flow error and fail the pipeline.
        if self.flow.lock().unwrap().eos_sent {
            return match &info.data {
                Some(gst::PadProbeData::Event(e)) if e.is_serialized() => gst::PadProbeReturn::Drop,
                Some(gst::PadProbeData::Buffer(_)) => {
                    info.flow_res = Err(gst::FlowError::Eos);
                    gst::PadProbeReturn::Handled
                }
                _ => gst::PadProbeReturn::Ok,
            };
        }
        // Every source after the first starts a stream of its own: its stream-start gets an id
        // of its own (a camera gives the same id each time), so downstream can tell.
        if let Some(gst::PadProbeData::Event(event)) = &info.data
            && let gst::EventView::StreamStart(s) = event.view()
        {
            let generation = {
                let mut flow = self.flow.lock().unwrap();
                // A new stream (a new source, a reconnection, a loop): its first frame passes.
                flow.gate = FrameGate::default();
                flow.generation
            };
            if generation > 1 {
                let id = format!("{}/{generation}", s.stream_id());
                let mut renamed = gst::event::StreamStart::builder(&id)
                    .flags(s.stream_flags())
                    .seqnum(event.seqnum());
                if let Some(group) = s.group_id() {
                    renamed = renamed.group_id(group);
                }
                info.data = Some(gst::PadProbeData::Event(renamed.build()));
                return gst::PadProbeReturn::Ok;
            }
        }
        match &info.data {
            Some(gst::PadProbeData::Buffer(buffer)) => {
                let interval = self.settings.lock().unwrap().drop_frame_interval;
                let (returned, pass) = {
                    let mut flow = self.flow.lock().unwrap();
                    if flow.limit.is_some_and(|limit| flow.given >= limit) {
                        // `num-buffers` reached: over for good, as when downstream ends it.
                        flow.downstream_ended = true;
                        info.flow_res = Err(gst::FlowError::Eos);
                        return gst::PadProbeReturn::Handled;
                    }
                    if let Some(end) = buffer
                        .pts()
                        .and_then(|pts| flow.segment.to_running_time(pts))
                    {
                        flow.last_end = Some(end + buffer.duration().unwrap_or_default());
                    }
                    // A frame drop-frame-interval drops still shows that the source is alive.
                    let pass = flow.gate.pass(interval);
                    if pass {
                        flow.given += 1;
                        if let Some(m) = &flow.metrics {
                            m.frames.inc();
                        }
                    }
                    let returned = if flow.replacing {
                        None
                    } else {
                        flow.last_data = Instant::now();
                        flow.started = true;
                        flow.attempt = 0;
                        flow.outage_since.take()
                    };
                    (returned, pass)
                };
                if let Some(since) = returned {
                    let uri = self
                        .settings
                        .lock()
                        .unwrap()
                        .uri
                        .clone()
                        .unwrap_or_default();
                    gst::info!(CAT, imp = self, "{uri} is back");
                    self.post(
                        gst::Structure::builder("rsurisrcbin-reconnected")
                            .field("uri", uri)
                            .field("outage-ms", since.elapsed().as_millis() as u64)
                            .build(),
                    );
                }
                if !pass {
                    gst::trace!(
                        CAT,
                        imp = self,
                        "dropping {:?} (drop-frame-interval {interval})",
                        buffer.pts()
                    );
                    // Consumed as handled, the push a success: with `Drop`, GStreamer (1.22)
                    // unrefs the buffer the bindings already took, a critical per frame.
                    info.flow_res = Ok(gst::FlowSuccess::Ok);
                    return gst::PadProbeReturn::Handled;
                }
            }
            Some(gst::PadProbeData::Event(event)) => match event.view() {
                gst::EventView::Segment(s) => {
                    if let Ok(segment) = s.segment().clone().downcast::<gst::ClockTime>() {
                        self.flow.lock().unwrap().segment = segment;
                    }
                }
                gst::EventView::Eos(_) => {
                    // Downstream asked for the end (a sink's num-buffers, say): it passes.
                    let downstream_ended = self
                        .output()
                        .static_pad("src")
                        .is_some_and(|p| p.last_flow_result() == Err(gst::FlowError::Eos));
                    let over = {
                        let mut flow = self.flow.lock().unwrap();
                        flow.downstream_ended |= downstream_ended;
                        flow.eos_sent |= flow.downstream_ended;
                        flow.downstream_ended
                    };
                    if over {
                        return gst::PadProbeReturn::Ok;
                    }
                    let settings = self.settings.lock().unwrap().clone();
                    if settings.loops() {
                        self.send(Command::Loop);
                        return gst::PadProbeReturn::Handled;
                    }
                    if settings.reconnects() && !self.flow.lock().unwrap().gave_up {
                        // A source being dropped (after an error) ends its stream too: only
                        // the current one's end asks for a new source.
                        let current = self.source.lock().unwrap().clone();
                        if let Some(source) = current {
                            self.send(Command::Reconnect {
                                reason: "the stream ended".into(),
                                source,
                            });
                        }
                        return gst::PadProbeReturn::Handled;
                    }
                    self.flow.lock().unwrap().ended = true;
                    // The stream is over: so is its recording.
                    if let Some(recorder) = self.recorder.lock().unwrap().as_ref() {
                        recorder.stop();
                    }
                }
                _ => {}
            },
            _ => {}
        }
        gst::PadProbeReturn::Ok
    }

    /// Lets go of dropped sources `after` they were dropped (all of them with `None`), once more
    /// making sure every element inside is stopped: a source's own bins may still have been
    /// finishing an asynchronous state change (a camera connecting) when it was dropped, and
    /// bring elements back up after it was stopped.
    fn bury(&self, after: Option<Duration>) {
        let ready: Vec<gst::Element> = {
            let mut dropped = self.dropped.lock().unwrap();
            let (old, young) = dropped
                .drain(..)
                .partition(|(at, _)| after.is_none_or(|d| at.elapsed() >= d));
            *dropped = young;
            old.into_iter().map(|(_, e)| e).collect()
        };
        for element in ready {
            stop_all(&element);
        }
    }

    /// The worker: replaces sources on request and watches for silence.
    fn work(&self, commands: mpsc::Receiver<Command>) {
        loop {
            self.bury(Some(Duration::from_millis(500)));
            let command = match commands.recv_timeout(TICK) {
                Ok(c) => c,
                Err(RecvTimeoutError::Timeout) => {
                    self.sample_metrics();
                    if let Some(recorder) = self.recorder.lock().unwrap().as_ref() {
                        recorder.close_if_idle();
                    }
                    if self.downstream_ended() {
                        // The source's own end of stream comes after the data before it.
                        let quiet =
                            self.flow.lock().unwrap().last_data.elapsed() >= QUIET_BEFORE_EOS;
                        if quiet {
                            self.finish();
                        }
                        continue;
                    }
                    let current = self.source.lock().unwrap().clone();
                    match (self.silent_for(), current) {
                        (Some(silence), Some(source)) => Command::Reconnect {
                            reason: format!("no data for {:.1} s", silence.as_secs_f64()),
                            source,
                        },
                        _ => continue,
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            match command {
                Command::Stop => return,
                Command::Loop | Command::Reconnect { .. } if self.downstream_ended() => {
                    self.finish();
                }
                Command::Loop => {
                    let settings = self.settings.lock().unwrap().clone();
                    // The file starts again at zero: its running times continue from the end.
                    let end = self.flow.lock().unwrap().last_end.take();
                    if let (Some(end), Some(pad)) = (end, self.output().static_pad("src")) {
                        pad.set_offset(pad.offset() + end.nseconds() as i64);
                    }
                    gst::debug!(CAT, imp = self, "looping");
                    if let Err(m) = self.replace_source(&settings) {
                        gst::element_imp_error!(self, gst::CoreError::Failed, ("{m}"));
                        return;
                    }
                }
                Command::Reconnect { reason, source } => {
                    if self.source.lock().unwrap().as_ref() != Some(&source) {
                        gst::debug!(CAT, imp = self, "stale: {reason}");
                        continue;
                    }
                    if !self.reconnect(&reason, &commands) {
                        return;
                    }
                }
            }
        }
    }

    /// Whether downstream ended the stream: the last push of the output was refused with EOS
    /// (remembered: a later push may not be refused again, as identity's `eos-after` does).
    fn downstream_ended(&self) -> bool {
        let refused = self
            .output()
            .static_pad("src")
            .is_some_and(|p| p.last_flow_result() == Err(gst::FlowError::Eos));
        let mut flow = self.flow.lock().unwrap();
        flow.downstream_ended |= refused;
        flow.downstream_ended
    }

    /// Ends the bin's stream after downstream ended it: the source may stop without sending
    /// its end of stream (a camera's session just goes quiet), so the bin sends it, once.
    fn finish(&self) {
        let send = {
            let mut flow = self.flow.lock().unwrap();
            !std::mem::replace(&mut flow.eos_sent, true)
        };
        if send && let Some(recorder) = self.recorder.lock().unwrap().as_ref() {
            recorder.stop();
        }
        if send && let Some(pad) = self.output().static_pad("src") {
            gst::debug!(CAT, imp = self, "downstream ended the stream: sending EOS");
            pad.push_event(gst::event::Eos::new());
        }
    }

    /// How long a network source that should be sending has been silent, past
    /// `reconnect-interval`; a source that has not given its first frame yet gets
    /// [`Settings::first_frame_wait`].
    fn silent_for(&self) -> Option<Duration> {
        let settings = self.settings.lock().unwrap();
        if !settings.reconnects() || self.obj().current_state() != gst::State::Playing {
            return None;
        }
        let flow = self.flow.lock().unwrap();
        let silence = flow.last_data.elapsed();
        let allowed = if flow.started {
            Duration::from_secs(u64::from(settings.reconnect_interval))
        } else {
            settings.first_frame_wait()
        };
        (!flow.gave_up && !flow.downstream_ended && silence >= allowed).then_some(silence)
    }

    /// One attempt to bring the source back; `false` when the worker is to stop.
    fn reconnect(&self, reason: &str, commands: &mpsc::Receiver<Command>) -> bool {
        let settings = self.settings.lock().unwrap().clone();
        let uri = settings.uri.clone().unwrap_or_default();
        let (attempt, first) = {
            let mut flow = self.flow.lock().unwrap();
            if flow.gave_up {
                return true;
            }
            flow.attempt += 1;
            if let Some(m) = &flow.metrics {
                m.reconnections.inc();
            }
            // Until the new source is in place, the old one's last frames do not end the
            // outage (nor reset the attempts).
            flow.replacing = true;
            let first = flow.outage_since.is_none();
            flow.outage_since.get_or_insert_with(Instant::now);
            (flow.attempt, first)
        };
        self.post(
            gst::Structure::builder("rsurisrcbin-disconnected")
                .field("uri", &uri)
                .field("reason", reason)
                .field("attempt", attempt)
                .build(),
        );
        let limit = settings.reconnect_attempts;
        if limit >= 0 && attempt > limit as u32 {
            self.flow.lock().unwrap().gave_up = true;
            gst::element_imp_error!(
                self,
                gst::ResourceError::Read,
                ("{uri}: {reason}; gave up after {limit} reconnection attempts")
            );
            return false;
        }
        if first {
            gst::element_imp_warning!(
                self,
                gst::ResourceError::Read,
                (
                    "{uri}: {reason}; reconnecting every up to {} ms",
                    settings.backoff_max_ms
                )
            );
        }
        gst::info!(CAT, imp = self, "{uri}: {reason}; attempt {attempt}");
        // Drop the failed source now, so that its threads stop, then wait the back-off.
        self.drop_source();
        match commands.recv_timeout(settings.backoff(attempt)) {
            Ok(Command::Stop) | Err(RecvTimeoutError::Disconnected) => return false,
            // Failures of the source just dropped are already being handled.
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(m) = self.replace_source(&settings) {
            gst::element_imp_error!(self, gst::CoreError::Failed, ("{m}"));
            return false;
        }
        true
    }

    /// How the source is doing.
    pub(super) fn status(&self) -> SourceStatus {
        let flow = self.flow.lock().unwrap();
        let state = if flow.gave_up {
            SourceState::Failed
        } else if flow.ended || flow.eos_sent || flow.downstream_ended {
            SourceState::Ended
        } else if flow.outage_since.is_some() {
            SourceState::Reconnecting
        } else if flow.started {
            SourceState::Playing
        } else {
            SourceState::Starting
        };
        let m = flow.metrics.as_ref();
        SourceStatus {
            state,
            frames: m.map_or(0, |m| m.frames.get()),
            reconnections: m.map_or(0, |m| m.reconnections.get()),
            fps: m.map_or(0.0, |m| m.fps.get()),
        }
    }

    pub(super) fn set_metric_labels(&self, labels: Vec<(String, String)>) {
        *self.metric_labels.lock().unwrap() = labels;
    }

    /// Updates the state and frames-per-second series, once a second.
    fn sample_metrics(&self) {
        let status = self.status();
        let mut flow = self.flow.lock().unwrap();
        let Some(m) = flow.metrics.as_mut() else {
            return;
        };
        m.set_state(status.state);
        let (frames, at) = m.last_sample;
        let elapsed = at.elapsed();
        if elapsed >= Duration::from_secs(1) {
            m.fps
                .set(status.frames.saturating_sub(frames) as f64 / elapsed.as_secs_f64());
            m.last_sample = (status.frames, Instant::now());
        }
    }

    fn make_metrics(&self) {
        let name = self.obj().name().to_string();
        let extra = self.metric_labels.lock().unwrap().clone();
        let mut labels: Vec<(&str, &str)> = vec![("element", name.as_str())];
        labels.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let m = SourceMetrics::new(&labels);
        m.set_state(SourceState::Starting);
        self.flow.lock().unwrap().metrics = Some(m);
    }

    /// Starts a recording around `trigger` (see [`Recorder::start`]).
    pub(super) fn start_record(
        &self,
        trigger: Option<gst::ClockTime>,
        duration: Option<gst::ClockTime>,
    ) -> Result<PathBuf, String> {
        let recorder = self.recorder.lock().unwrap().clone();
        match recorder {
            Some(r) => r.start(trigger, duration),
            None => Err("smart record is off (set record-cache)".into()),
        }
    }

    pub(super) fn stop_record(&self) -> bool {
        let recorder = self.recorder.lock().unwrap().clone();
        recorder.is_some_and(|r| r.stop())
    }

    /// A recorder for this start when `record-cache` asks for one; its events become element
    /// messages.
    fn make_recorder(&self, settings: &RecordSettings) {
        let recorder = (!settings.cache.is_zero()).then(|| {
            let this = self.obj().downgrade();
            Arc::new(Recorder::new(settings.clone(), move |event| {
                if let Some(bin) = this.upgrade() {
                    bin.imp().on_record_event(event);
                }
            }))
        });
        let old = std::mem::replace(&mut *self.recorder.lock().unwrap(), recorder);
        if let Some(old) = old {
            old.shutdown();
        }
    }

    fn on_record_event(&self, event: RecordEvent) {
        let uri = self
            .settings
            .lock()
            .unwrap()
            .uri
            .clone()
            .unwrap_or_default();
        let ns = |t: gst::ClockTime| t.nseconds();
        let s = match event {
            RecordEvent::Started {
                file,
                trigger,
                start,
            } => {
                gst::info!(CAT, imp = self, "recording {}", file.display());
                gst::Structure::builder("rsurisrcbin-record-started")
                    .field("uri", uri)
                    .field("file", file.to_string_lossy().as_ref())
                    .field("trigger-pts", ns(trigger))
                    .field("start-pts", ns(start))
                    .build()
            }
            RecordEvent::Done {
                file,
                start,
                end,
                frames,
            } => {
                if let Some(m) = self.flow.lock().unwrap().metrics.as_ref() {
                    m.recordings.inc();
                }
                gst::info!(
                    CAT,
                    imp = self,
                    "recorded {} ({frames} frames)",
                    file.display()
                );
                gst::Structure::builder("rsurisrcbin-record-done")
                    .field("uri", uri)
                    .field("file", file.to_string_lossy().as_ref())
                    .field("start-pts", ns(start))
                    .field("end-pts", ns(end))
                    .field("frames", frames)
                    .build()
            }
            RecordEvent::Failed { file, reason } => {
                if let Some(m) = self.flow.lock().unwrap().metrics.as_ref() {
                    m.record_failures.inc();
                }
                gst::element_imp_warning!(
                    self,
                    gst::ResourceError::Write,
                    ("recording {} failed: {reason}", file.display())
                );
                gst::Structure::builder("rsurisrcbin-record-failed")
                    .field("uri", uri)
                    .field("file", file.to_string_lossy().as_ref())
                    .field("reason", reason)
                    .build()
            }
        };
        self.post(s);
    }

    /// Our child element that `object` is or is inside of.
    fn child_holding(&self, object: &gst::Object) -> Option<gst::Element> {
        let bin = self.obj();
        let mut at = Some(object.clone());
        while let Some(o) = at {
            let parent = o.parent();
            if parent.as_ref() == Some(bin.upcast_ref()) {
                return o.downcast().ok();
            }
            at = parent;
        }
        None
    }

    fn start_worker(&self) {
        let (commands, receiver) = mpsc::channel();
        let this = self.obj().downgrade();
        let thread = std::thread::Builder::new()
            .name("rsurisrcbin".into())
            .spawn(move || {
                if let Some(bin) = this.upgrade() {
                    bin.imp().work(receiver);
                }
            })
            .expect("spawning a thread");
        *self.worker.lock().unwrap() = Some(Worker { commands, thread });
    }

    fn stop_worker(&self) {
        let worker = self.worker.lock().unwrap().take();
        if let Some(w) = worker {
            let _ = w.commands.send(Command::Stop);
            let _ = w.thread.join();
        }
        self.bury(None);
        if let Some(recorder) = self.recorder.lock().unwrap().take() {
            recorder.shutdown();
        }
    }
}

/// Sets `element` and, when it is a bin, every element inside it to `NULL`, waiting for each.
fn stop_all(element: &gst::Element) {
    let _ = element.set_state(gst::State::Null);
    if let Some(bin) = element.downcast_ref::<gst::Bin>() {
        for child in bin.iterate_recurse().into_iter().flatten() {
            if child.current_state() != gst::State::Null
                || child.pending_state() != gst::State::VoidPending
            {
                let _ = child.set_state(gst::State::Null);
            }
        }
    }
}

/// Has `element`, when it is an RTSP source (rtspsrc: a `protocols` property of flags with
/// `tcp`), take RTP in the RTSP connection only (`rtp-protocol=tcp`). Other sources (files,
/// HTTP) have no such property and are left alone.
fn rtp_over_tcp(element: &gst::Element) {
    let Some(pspec) = element.find_property("protocols") else {
        return;
    };
    let tcp = glib::FlagsClass::with_type(pspec.value_type())
        .and_then(|class| class.to_value_by_nick("tcp"))
        .filter(|_| pspec.flags().contains(glib::ParamFlags::WRITABLE));
    match tcp {
        Some(tcp) => {
            element.set_property_from_value("protocols", &tcp);
            gst::info!(CAT, obj = element, "RTP over TCP only (rtp-protocol=tcp)");
        }
        None => gst::warning!(
            CAT,
            obj = element,
            "rtp-protocol=tcp: `protocols` of {} is not rtspsrc's (no writable tcp flag); left \
             as it is",
            element.name()
        ),
    }
}

/// Whether `element` decodes video (or images): the recorder taps its input.
fn is_video_decoder(element: &gst::Element) -> bool {
    element.factory().is_some_and(|f| {
        let klass = f.klass();
        klass.contains("Decoder") && (klass.contains("Video") || klass.contains("Image"))
    })
}

/// Feeds what reaches a decoder's sink pad into the recorder (references, no copies).
fn tap(pad: &gst::Pad, recorder: Arc<Recorder>) {
    pad.add_probe(
        gst::PadProbeType::BUFFER
            | gst::PadProbeType::BUFFER_LIST
            | gst::PadProbeType::EVENT_DOWNSTREAM,
        move |_, info| {
            match &info.data {
                Some(gst::PadProbeData::Buffer(buffer)) => recorder.push(buffer),
                Some(gst::PadProbeData::BufferList(list)) => {
                    for buffer in list.iter_owned() {
                        recorder.push(&buffer);
                    }
                }
                Some(gst::PadProbeData::Event(event)) => {
                    if let gst::EventView::Caps(c) = event.view() {
                        recorder.set_caps(&c.caps_owned());
                    }
                }
                _ => {}
            }
            gst::PadProbeReturn::Ok
        },
    );
}

#[glib::object_subclass]
impl ObjectSubclass for RsUriSrcBin {
    const NAME: &'static str = "GstRsUriSrcBin";
    type Type = super::RsUriSrcBin;
    type ParentType = gst::Bin;
}

impl ObjectImpl for RsUriSrcBin {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = Settings::default();
            vec![
                glib::ParamSpecString::builder("uri")
                    .nick("URI")
                    .blurb("file://, rtsp:// or http(s):// URI to decode")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("reconnect-interval")
                    .nick("Reconnect interval")
                    .blurb(
                        "Seconds a network source may send nothing before it is reconnected \
                         (a new source: initial-reconnect-interval, or else three times this, \
                         at least 20 s, for its first frame; 0: never reconnect; DeepStream's \
                         rtsp-reconnect-interval-sec)",
                    )
                    .default_value(d.reconnect_interval)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("initial-reconnect-interval")
                    .nick("Initial reconnect interval")
                    .blurb(
                        "Seconds a new network source (at the start and after each \
                         reconnection) may take to give its first frame before it is \
                         reconnected (0: three times reconnect-interval, at least 20 s; \
                         DeepStream's init-rtsp-reconnect-interval-sec)",
                    )
                    .default_value(d.initial_reconnect_interval)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("reconnect-attempts")
                    .nick("Reconnect attempts")
                    .blurb("Failed attempts in a row before giving up with an error (-1: never)")
                    .minimum(-1)
                    .default_value(d.reconnect_attempts)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("reconnect-backoff-max")
                    .nick("Max back-off")
                    .blurb(
                        "Longest wait in ms between attempts (from 250 ms, doubling per failed \
                         attempt)",
                    )
                    .minimum(1)
                    .default_value(d.backoff_max_ms)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("file-loop")
                    .nick("Loop files")
                    .blurb("Start a file:// URI again at its end (timestamps continue)")
                    .default_value(d.file_loop)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("latency")
                    .nick("Latency")
                    .blurb("Jitter buffer of RTSP sources, in ms")
                    .default_value(d.latency_ms)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("drop-frame-interval")
                    .nick("Drop frame interval")
                    .blurb(
                        "Let one decoded frame in every this many out: the first of each \
                         stream (start, reconnection, loop), then every Nth; the others are \
                         dropped on purpose, not counted as frames nor as drops (0 or 1: all; \
                         DeepStream's drop-frame-interval)",
                    )
                    .default_value(d.drop_frame_interval)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("rtp-protocol", GEnum(d.rtp_protocol))
                    .nick("RTP protocol")
                    .blurb(
                        "How RTSP cameras send their packets: auto (UDP or TCP, as rtspsrc \
                         negotiates) or tcp (in the RTSP connection only); DeepStream's \
                         select-rtp-protocol, whose numbers 0 and 4 it takes too",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("num-buffers")
                    .nick("Number of buffers")
                    .blurb(
                        "Frames to give (after drop-frame-interval) before the stream ends for \
                         good, never looped or reconnected again (-1: no limit)",
                    )
                    .minimum(-1)
                    .default_value(d.num_buffers)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("record-cache")
                    .nick("Record cache")
                    .blurb(
                        "Smart record: seconds of encoded video kept before a trigger (0: no \
                         recording)",
                    )
                    .maximum(3600)
                    .default_value(d.record.cache.seconds() as u32)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("record-duration")
                    .nick("Record duration")
                    .blurb("Smart record: seconds recorded after a trigger that gives none")
                    .minimum(1)
                    .maximum(86400)
                    .default_value(d.record.default_duration.seconds() as u32)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("record-dir")
                    .nick("Record directory")
                    .blurb("Smart record: directory of the files (made when missing)")
                    .default_value(Some(".".to_string()).as_deref())
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("record-prefix")
                    .nick("Record prefix")
                    .blurb("Smart record: files are <prefix>_<unix ms>_<n>.<mp4|mkv>")
                    .default_value(Some(d.record.prefix.clone()).as_deref())
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("record-container", d.record.container)
                    .nick("Record container")
                    .blurb("Smart record: file format")
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn signals() -> &'static [glib::subclass::Signal] {
        static SIGNALS: LazyLock<Vec<glib::subclass::Signal>> = LazyLock::new(|| {
            vec![
                // start-record(duration in s, 0: record-duration) -> the file, or NULL (with a
                // warning) when nothing can be recorded.
                glib::subclass::Signal::builder("start-record")
                    .param_types([u32::static_type()])
                    .return_type::<Option<String>>()
                    .action()
                    .class_handler(|args| {
                        let bin = args[0].get::<super::RsUriSrcBin>().expect("the element");
                        let duration = record::seconds(args[1].get().expect("a duration"));
                        let started = bin.imp().start_record(None, duration);
                        Some(record::signal_reply(&bin, started).to_value())
                    })
                    .build(),
                // stop-record() -> whether a recording was open.
                glib::subclass::Signal::builder("stop-record")
                    .return_type::<bool>()
                    .action()
                    .class_handler(|args| {
                        let bin = args[0].get::<super::RsUriSrcBin>().expect("the element");
                        Some(bin.imp().stop_record().to_value())
                    })
                    .build(),
            ]
        });
        SIGNALS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "uri" => {
                s.uri = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .filter(|u| !u.is_empty())
            }
            "reconnect-interval" => {
                s.reconnect_interval = value.get().expect("type checked upstream")
            }
            "reconnect-attempts" => {
                s.reconnect_attempts = value.get().expect("type checked upstream")
            }
            "reconnect-backoff-max" => {
                s.backoff_max_ms = value.get().expect("type checked upstream")
            }
            "file-loop" => s.file_loop = value.get().expect("type checked upstream"),
            "latency" => s.latency_ms = value.get().expect("type checked upstream"),
            "num-buffers" => s.num_buffers = value.get().expect("type checked upstream"),
            "initial-reconnect-interval" => {
                s.initial_reconnect_interval = value.get().expect("type checked upstream")
            }
            "drop-frame-interval" => {
                s.drop_frame_interval = value.get().expect("type checked upstream")
            }
            "rtp-protocol" => {
                s.rtp_protocol = value
                    .get::<GEnum<RtpProtocol>>()
                    .expect("type checked upstream")
                    .0
            }
            "record-cache" => {
                s.record.cache = gst::ClockTime::from_seconds(u64::from(
                    value.get::<u32>().expect("type checked upstream"),
                ))
            }
            "record-duration" => {
                s.record.default_duration = gst::ClockTime::from_seconds(u64::from(
                    value.get::<u32>().expect("type checked upstream"),
                ))
            }
            "record-dir" => {
                s.record.dir = PathBuf::from(
                    value
                        .get::<Option<String>>()
                        .expect("type checked upstream")
                        .filter(|d| !d.is_empty())
                        .unwrap_or_else(|| ".".into()),
                )
            }
            "record-prefix" => {
                s.record.prefix = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .unwrap_or_default()
            }
            "record-container" => {
                s.record.container = value.get::<Container>().expect("type checked upstream")
            }
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "uri" => s.uri.to_value(),
            "reconnect-interval" => s.reconnect_interval.to_value(),
            "reconnect-attempts" => s.reconnect_attempts.to_value(),
            "reconnect-backoff-max" => s.backoff_max_ms.to_value(),
            "file-loop" => s.file_loop.to_value(),
            "latency" => s.latency_ms.to_value(),
            "num-buffers" => s.num_buffers.to_value(),
            "initial-reconnect-interval" => s.initial_reconnect_interval.to_value(),
            "drop-frame-interval" => s.drop_frame_interval.to_value(),
            "rtp-protocol" => GEnum(s.rtp_protocol).to_value(),
            "record-cache" => (s.record.cache.seconds() as u32).to_value(),
            "record-duration" => (s.record.default_duration.seconds() as u32).to_value(),
            "record-dir" => s.record.dir.to_string_lossy().to_value(),
            "record-prefix" => s.record.prefix.to_value(),
            "record-container" => s.record.container.to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        // A source (its sources are made at start, too late for the parent bin to tell):
        // the pipeline sends it the end of stream an application asks for.
        obj.set_element_flags(gst::ElementFlags::SOURCE);
        let output = gst::ElementFactory::make("identity")
            .name("output")
            .property("silent", true)
            .build()
            .expect("identity is in GStreamer's core");
        obj.add(&output).expect("a new bin takes its first element");
        let this = obj.downgrade();
        output
            .static_pad("sink")
            .expect("identity's sink")
            .add_probe(
                gst::PadProbeType::BUFFER | gst::PadProbeType::EVENT_DOWNSTREAM,
                move |_, info| match this.upgrade() {
                    Some(bin) => bin.imp().on_data(info),
                    None => gst::PadProbeReturn::Ok,
                },
            )
            .expect("a probe on a fresh pad");
        let target = output.static_pad("src").expect("identity's src");
        let ghost = gst::GhostPad::builder_from_template(
            &obj.pad_template("src").expect("the src template"),
        )
        .name("src")
        .build();
        ghost.set_target(Some(&target)).expect("a fresh ghost pad");
        obj.add_pad(&ghost).expect("a new bin takes its pad");
        let _ = self.output.set(output);
    }

    fn dispose(&self) {
        self.stop_worker();
    }
}

impl GstObjectImpl for RsUriSrcBin {}

impl ElementImpl for RsUriSrcBin {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream URI source",
                "Source/Video/Bin",
                "Decodes a file, RTSP or HTTP URI to one video pad; reconnects cameras that \
                 stop sending and loops files",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let caps = gst::Caps::builder("video/x-raw").any_features().build();
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

    /// An end of stream sent to the bin (an application stopping, `gst-launch-1.0 -e` on
    /// Ctrl-C) ends it for good: not looped, not reconnected.
    fn send_event(&self, event: gst::Event) -> bool {
        if event.type_() == gst::EventType::Eos {
            self.flow.lock().unwrap().downstream_ended = true;
        }
        self.parent_send_event(event)
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::NullToReady {
            let settings = self.settings.lock().unwrap().clone();
            let Some(uri) = settings.uri.as_deref() else {
                gst::element_imp_error!(self, gst::ResourceError::NotFound, ("no uri set"));
                return Err(gst::StateChangeError);
            };
            if !uri.contains("://") {
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::NotFound,
                    ("`{uri}` is not a URI (file:///path, rtsp://host/path, http://...)")
                );
                return Err(gst::StateChangeError);
            }
            *self.flow.lock().unwrap() = Flow {
                limit: u64::try_from(settings.num_buffers).ok(),
                ..Flow::default()
            };
            if let Some(pad) = self.output().static_pad("src") {
                pad.set_offset(0);
            }
            self.make_metrics();
            if let Some(prefix) = settings.record.prefix.chars().find(|c| c == &'/') {
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::Settings,
                    ("record-prefix may not contain `{prefix}`")
                );
                return Err(gst::StateChangeError);
            }
            self.make_recorder(&settings.record);
            if let Err(m) = self.replace_source(&settings) {
                gst::element_imp_error!(self, gst::CoreError::Failed, ("{m}"));
                return Err(gst::StateChangeError);
            }
            self.start_worker();
        }
        if transition == gst::StateChange::ReadyToNull {
            self.stop_worker();
        }
        let result = self.parent_change_state(transition);
        if transition == gst::StateChange::ReadyToNull {
            self.drop_source();
            self.bury(None);
            self.flow.lock().unwrap().metrics.take();
        }
        result
    }
}

impl BinImpl for RsUriSrcBin {
    fn handle_message(&self, message: gst::Message) {
        if let gst::MessageView::Qos(q) = message.view()
            && q.stats().1.value() > 0
            && let Some(m) = self.flow.lock().unwrap().metrics.as_ref()
        {
            m.dropped.inc();
        }
        if let gst::MessageView::Error(e) = message.view() {
            let settings = self.settings.lock().unwrap().clone();
            let source = message.src().and_then(|s| self.child_holding(s));
            let is_source = source.as_ref().is_some_and(|s| s != self.output());
            if settings.reconnects() && is_source && !self.flow.lock().unwrap().gave_up {
                let reason = match e.debug() {
                    Some(d) => format!("{} ({d})", e.error()),
                    None => e.error().to_string(),
                };
                gst::debug!(CAT, imp = self, "source failed: {reason}");
                self.send(Command::Reconnect {
                    reason,
                    source: source.expect("checked above"),
                });
                return;
            }
            if settings.reconnects() && source.is_none() {
                // From a source already dropped: its failure is being handled.
                gst::debug!(CAT, imp = self, "stale error: {}", e.error());
                return;
            }
        }
        self.parent_handle_message(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which of `frames` decoded frames pass, the interval for each frame given by `interval`.
    fn passed(gate: &mut FrameGate, frames: usize, interval: impl Fn(usize) -> u32) -> Vec<usize> {
        (0..frames).filter(|&i| gate.pass(interval(i))).collect()
    }

    #[test]
    fn drop_frame_interval_passes_the_first_and_every_nth() {
        for all in [0, 1] {
            assert_eq!(
                passed(&mut FrameGate::default(), 5, |_| all),
                [0, 1, 2, 3, 4]
            );
        }
        assert_eq!(passed(&mut FrameGate::default(), 10, |_| 3), [0, 3, 6, 9]);
        // A new stream starts the count again: its first frame passes.
        let mut gate = FrameGate::default();
        assert_eq!(passed(&mut gate, 2, |_| 3), [0]);
        gate = FrameGate::default();
        assert_eq!(passed(&mut gate, 4, |_| 3), [0, 3]);
    }

    #[test]
    fn a_new_interval_counts_from_the_last_frame_passed() {
        // 3 up to frame 7 (frames 0, 3, 6 pass), then 2: frame 8 is two after 6.
        let mut gate = FrameGate::default();
        assert_eq!(
            passed(&mut gate, 13, |i| if i < 7 { 3 } else { 2 }),
            [0, 3, 6, 8, 10, 12]
        );
        // From 5 to all: the very next frame passes.
        let mut gate = FrameGate::default();
        assert_eq!(
            passed(&mut gate, 5, |i| if i < 2 { 5 } else { 0 }),
            [0, 2, 3, 4]
        );
        // A count at its end lets the next frame out rather than overflow.
        let mut gate = FrameGate {
            dropped: Some(u32::MAX),
        };
        assert!(gate.pass(u32::MAX));
    }
}
