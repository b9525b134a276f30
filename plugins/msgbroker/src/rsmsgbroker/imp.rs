// SPDX-License-Identifier: MIT OR Apache-2.0
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use ferrostream_core::batch::events as stream_events;
use ferrostream_core::field;
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::settings::{
    Bool, Enum, FilePath, List, Optional, Props, Table, Text, UInt, UInt64, setting,
};
use ferrostream_core::{BatchMeta, Frame};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::{Payload, Protocol, Schema};
use crate::endpoint::Endpoint;
use crate::events::{Event, EventTracker, LeftReason};
use crate::payload::{Message, MessageIds, MessageKind, PayloadBuilder};
use crate::queue::{Counters, Push, QueueMetrics};
use crate::tls::TlsMaterial;
use crate::topic::TopicTemplate;
use crate::transport::{self, Backoff, Link, Notice, TransportConfig};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsmsgbroker",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream event export to message brokers"),
    )
});

/// How long `stop` waits for the sending thread to finish.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// The element's settings, all of them properties (the table [`SETTINGS`] declares them).
#[derive(Debug, Clone)]
struct Settings {
    protocol: Protocol,
    server: String,
    topic: String,
    payload: Payload,
    schema: Schema,
    username: Option<String>,
    password: Option<String>,
    tls: bool,
    tls_ca_file: Option<PathBuf>,
    tls_cert_file: Option<PathBuf>,
    tls_key_file: Option<PathBuf>,
    exchange: String,
    stream_max_length: u64,
    queue_size: u32,
    reconnect_min_ms: u32,
    reconnect_max_ms: u32,
    connect_timeout_ms: u32,
    require_connection: bool,
    flush_timeout_ms: u32,
    lost_frames: u32,
    sensor_ids: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            protocol: Protocol::default(),
            server: "localhost".into(),
            topic: "ferrostream".into(),
            payload: Payload::default(),
            schema: Schema::default(),
            username: None,
            password: None,
            tls: false,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            exchange: "amq.topic".into(),
            stream_max_length: 0,
            queue_size: 10_000,
            reconnect_min_ms: 100,
            reconnect_max_ms: 10_000,
            connect_timeout_ms: 5_000,
            require_connection: false,
            flush_timeout_ms: 5_000,
            lost_frames: 30,
            sensor_ids: Vec::new(),
        }
    }
}

static SETTINGS: LazyLock<Table<Settings>> = LazyLock::new(|| {
    let mut t: Table<Settings> = Table::new("");
    t.add(
        setting::<Settings, _>("protocol", field!(protocol), Enum::<Protocol>::new())
            .no_key()
            .nick("Protocol")
            .blurb("Broker protocol"),
    )
    .add(
        setting::<Settings, _>("server", field!(server), Text::new())
            .no_key()
            .nick("Server")
            .blurb(
                "Broker address: host:port, or a URL such as mqtt://host:1883, \
                 amqps://host/vhost, redis://host:6379/0 (Kafka: a comma-separated list of \
                 host:port)",
            ),
    )
    .add(
        setting::<Settings, _>("topic", field!(topic), Text::new())
            .no_key()
            .nick("Topic")
            .blurb(
                "MQTT topic, AMQP routing key, Redis stream key or Kafka topic; {source-id}, \
                 {sensor-id} and {event} are replaced per message",
            ),
    )
    .add(
        setting::<Settings, _>("payload", field!(payload), Enum::<Payload>::new())
            .no_key()
            .nick("Payload")
            .blurb("Which messages to send: per frame, per object event, or both"),
    )
    .add(
        setting::<Settings, _>("schema", field!(schema), Enum::<Schema>::new())
            .no_key()
            .nick("Schema")
            .blurb("JSON layout of the messages"),
    )
    .add(
        setting::<Settings, _>(
            "sensor-ids",
            field!(sensor_ids),
            List::<String>::separated_by(',').keeping_blanks(),
        )
        .no_key()
        .nick("Sensor ids")
        .blurb(
            "Comma-separated sensor name per source id, for {sensor-id} and DeepStream's \
                 sensorId (the source id when missing)",
        ),
    )
    .add(
        setting::<Settings, _>("username", field!(username), Optional(Text::new()))
            .no_key()
            .nick("User name")
            .blurb("User name (MQTT, AMQP, Redis ACL user, Kafka SASL/PLAIN)"),
    )
    .add(
        setting::<Settings, _>("password", field!(password), Optional(Text::new()))
            .no_key()
            .nick("Password")
            .blurb("Password for the user name (Redis: also alone, for AUTH)"),
    )
    .add(
        setting::<Settings, _>("tls", field!(tls), Bool)
            .no_key()
            .nick("TLS")
            .blurb(
                "Connect with TLS (also turned on by an mqtts://, amqps:// or rediss:// server)",
            ),
    )
    .add(
        setting::<Settings, _>("tls-ca-file", field!(tls_ca_file), FilePath)
            .no_key()
            .nick("TLS CA file")
            .blurb("PEM file of the certificate authorities to trust (the system's when unset)"),
    )
    .add(
        setting::<Settings, _>("tls-cert-file", field!(tls_cert_file), FilePath)
            .no_key()
            .nick("TLS client certificate")
            .blurb("PEM file of the client certificate (with tls-key-file)"),
    )
    .add(
        setting::<Settings, _>("tls-key-file", field!(tls_key_file), FilePath)
            .no_key()
            .nick("TLS client key")
            .blurb("PEM file of the client certificate's private key"),
    )
    .add(
        setting::<Settings, _>("exchange", field!(exchange), Text::new())
            .no_key()
            .nick("AMQP exchange")
            .blurb("AMQP: the exchange messages are published to, with the topic as routing key"),
    )
    .add(
        setting::<Settings, _>(
            "stream-max-length",
            field!(stream_max_length),
            UInt64::any(),
        )
        .no_key()
        .nick("Redis stream length")
        .blurb(
            "Redis: trim each stream to about this many entries (XADD MAXLEN ~); 0 keeps \
                 everything",
        ),
    )
    .add(
        setting::<Settings, _>("queue-size", field!(queue_size), UInt::range(1, 10_000_000))
            .no_key()
            .nick("Queue size")
            .blurb(
                "Messages kept until the broker acknowledges them; when full, new messages are \
                 dropped and counted",
            ),
    )
    .add(
        setting::<Settings, _>(
            "reconnect-min-delay",
            field!(reconnect_min_ms),
            UInt::range(1, 3_600_000),
        )
        .no_key()
        .nick("Shortest reconnection delay")
        .blurb("Milliseconds before the first reconnection attempt; doubled after each failure"),
    )
    .add(
        setting::<Settings, _>(
            "reconnect-max-delay",
            field!(reconnect_max_ms),
            UInt::range(1, 3_600_000),
        )
        .no_key()
        .nick("Longest reconnection delay")
        .blurb("Milliseconds the reconnection delay grows to at most"),
    )
    .add(
        setting::<Settings, _>(
            "connect-timeout",
            field!(connect_timeout_ms),
            UInt::range(100, 600_000),
        )
        .no_key()
        .nick("Connect timeout")
        .blurb("Milliseconds one connection attempt may take"),
    )
    .add(
        setting::<Settings, _>("require-connection", field!(require_connection), Bool)
            .no_key()
            .nick("Require connection")
            .blurb(
                "Fail to start when the broker cannot be reached within connect-timeout \
                 (otherwise start at once and queue until it can)",
            ),
    )
    .add(
        setting::<Settings, _>(
            "flush-timeout",
            field!(flush_timeout_ms),
            UInt::range(0, 3_600_000),
        )
        .no_key()
        .nick("Flush timeout")
        .blurb(
            "Milliseconds to wait at end of stream for the broker to acknowledge the queued \
                 messages",
        ),
    )
    .add(
        setting::<Settings, _>("lost-frames", field!(lost_frames), UInt::any())
            .no_key()
            .nick("Lost after frames")
            .blurb(
                "Frames of its source without a tracked object before it is reported as left \
                 (0: only when its track ends)",
            ),
    );
    t
});

struct State {
    runtime: tokio::runtime::Runtime,
    link: Arc<Link>,
    payload: Payload,
    builder: PayloadBuilder,
    topic: TopicTemplate,
    ids: MessageIds,
    tracker: EventTracker,
    flush_timeout: Duration,
    /// Frame size from the caps, for buffers that carry no metadata.
    size: (u32, u32),
    frames_without_meta: u64,
    /// Undelivered messages were already reported (at EOS).
    undelivered_reported: bool,
    latency: LatencyRecorder,
}

/// A bus message to post once no lock is held.
enum Post {
    Warning(String),
}

#[derive(Default)]
pub struct MsgBroker {
    settings: Mutex<Props<Settings>>,
    state: Mutex<Option<State>>,
    /// The counters of the last run, kept after stop.
    last_counters: Mutex<Counters>,
}

fn start_error(text: String) -> gst::ErrorMessage {
    gst::error_msg!(gst::ResourceError::Settings, ("{}", text))
}

impl MsgBroker {
    fn counters(&self) -> (Counters, usize, bool) {
        let link = self.state.lock().unwrap().as_ref().map(|s| s.link.clone());
        match link {
            Some(link) => {
                let queue = link.queue.lock().unwrap();
                (queue.counters(), queue.len(), link.is_connected())
            }
            None => (*self.last_counters.lock().unwrap(), 0, false),
        }
    }

    fn post(&self, posts: Vec<Post>) {
        for post in posts {
            match post {
                Post::Warning(text) => {
                    gst::warning!(CAT, imp = self, "{text}");
                    gst::element_imp_warning!(self, gst::ResourceError::Write, ("{}", text));
                }
            }
        }
    }

    /// Queues one message; says on the bus when a drop episode ended.
    fn queue_message(
        state: &State,
        kind: MessageKind,
        source_id: u32,
        body: Vec<u8>,
        id: String,
        posts: &mut Vec<Post>,
    ) {
        let sensor = state.builder.sensor_id(source_id);
        let message = Message {
            id,
            source_id,
            kind,
            topic: state.topic.render(source_id, &sensor, kind.name()),
            body,
        };
        let (push, capacity) = {
            let mut queue = state.link.queue.lock().unwrap();
            (queue.push(Arc::new(message)), queue.capacity())
        };
        match push {
            Push::Queued => state.link.wake.notify_one(),
            Push::QueuedAfterDrops(n) => {
                state.link.wake.notify_one();
                posts.push(Post::Warning(drop_warning(
                    state.link.broker(),
                    n,
                    capacity,
                )));
            }
            Push::Dropped { first_of_episode } => {
                if first_of_episode {
                    gst::warning!(
                        CAT,
                        "queue of {capacity} messages full, dropping new messages until {} takes them",
                        state.link.broker()
                    );
                }
            }
        }
    }

    fn queue_events(state: &State, events: &[Event], posts: &mut Vec<Post>) {
        for event in events {
            let id = state.ids.next_id();
            let body = state.builder.event(event, &id);
            Self::queue_message(
                state,
                MessageKind::from(&event.kind),
                event.frame.source_id,
                body,
                id,
                posts,
            );
        }
    }

    fn frame(state: &mut State, frame: &Frame, posts: &mut Vec<Post>) {
        if state.payload.frames() {
            let id = state.ids.next_id();
            let body = state.builder.frame(frame, &id);
            Self::queue_message(state, MessageKind::Frame, frame.source_id, body, id, posts);
        }
        if state.payload.events() {
            let events = state.tracker.frame(frame);
            Self::queue_events(state, &events, posts);
        }
    }

    fn export(&self, buffer: &gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut posts = Vec::new();
        {
            let mut guard = self.state.lock().unwrap();
            let Some(state) = guard.as_mut() else {
                return Err(gst::FlowError::Flushing);
            };
            match BatchMeta::of(buffer) {
                Some(meta) => {
                    for frame in &meta.batch().frames {
                        Self::frame(state, frame, &mut posts);
                    }
                }
                None => {
                    let mut frame =
                        Frame::new(0, state.frames_without_meta, state.size.0, state.size.1);
                    frame.pts = buffer.pts();
                    state.frames_without_meta += 1;
                    Self::frame(state, &frame, &mut posts);
                }
            }
        }
        self.post(posts);
        Ok(gst::FlowSuccess::Ok)
    }

    /// Tracks of a source (or of all) ended: queue their `left` events.
    fn end_tracks(&self, source: Option<u32>, reason: LeftReason) {
        let mut posts = Vec::new();
        {
            let mut guard = self.state.lock().unwrap();
            let Some(state) = guard.as_mut() else {
                return;
            };
            if !state.payload.events() {
                return;
            }
            let events = match source {
                Some(id) => state.tracker.end_source(id, reason),
                None => state.tracker.end_all(reason),
            };
            gst::debug!(
                CAT,
                imp = self,
                "{} tracks ended ({})",
                events.len(),
                reason.as_str()
            );
            Self::queue_events(state, &events, &mut posts);
        }
        self.post(posts);
    }

    /// At EOS: waits up to `flush-timeout` for the broker to acknowledge every queued message,
    /// then reports what is left.
    fn flush(&self) {
        let (link, timeout) = {
            let guard = self.state.lock().unwrap();
            let Some(state) = guard.as_ref() else {
                return;
            };
            (state.link.clone(), state.flush_timeout)
        };
        let deadline = Instant::now() + timeout;
        let left = loop {
            let left = link.queue.lock().unwrap().len();
            if left == 0 || Instant::now() >= deadline {
                break left;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut posts = Vec::new();
        let (episode, capacity) = {
            let mut queue = link.queue.lock().unwrap();
            (queue.end_episode(), queue.capacity())
        };
        if let Some(n) = episode {
            posts.push(Post::Warning(drop_warning(link.broker(), n, capacity)));
        }
        if left > 0 {
            posts.push(Post::Warning(format!(
                "{left} messages were not delivered to {} within the flush timeout of {timeout:?} at end of stream{}",
                link.broker(),
                link.last_error()
                    .map(|e| format!(" (last error: {e})"))
                    .unwrap_or_default()
            )));
            if let Some(state) = self.state.lock().unwrap().as_mut() {
                state.undelivered_reported = true;
            }
        } else {
            gst::info!(
                CAT,
                imp = self,
                "every message delivered to {} at end of stream",
                link.broker()
            );
        }
        self.post(posts);
    }

    fn notice_poster(&self) -> Box<dyn Fn(Notice) + Send + Sync> {
        let element = self.obj().downgrade();
        Box::new(move |notice| {
            let Some(element) = element.upgrade() else {
                return;
            };
            let s = match &notice {
                Notice::Connected { broker } => {
                    gst::info!(CAT, obj = element, "connected to {broker}");
                    gst::Structure::builder("rsmsgbroker-connected")
                        .field("broker", broker)
                        .build()
                }
                Notice::Reconnected { broker, queued } => {
                    gst::info!(
                        CAT,
                        obj = element,
                        "reconnected to {broker}, {queued} messages queued"
                    );
                    gst::Structure::builder("rsmsgbroker-reconnected")
                        .field("broker", broker)
                        .field("queued", *queued as u64)
                        .build()
                }
                Notice::Disconnected {
                    broker,
                    reason,
                    queued,
                } => {
                    gst::warning!(CAT, obj = element, "disconnected from {broker}: {reason}");
                    gst::Structure::builder("rsmsgbroker-disconnected")
                        .field("broker", broker)
                        .field("reason", reason)
                        .field("queued", *queued as u64)
                        .build()
                }
            };
            let _ = element.post_message(gst::message::Element::builder(s).src(&element).build());
        })
    }

    fn transport_config(settings: &Settings, ids: &MessageIds) -> Result<TransportConfig, String> {
        let endpoint = Endpoint::parse(settings.protocol, &settings.server)?;
        let tls = if settings.tls || endpoint.tls_scheme {
            Some(TlsMaterial::load(
                settings.tls_ca_file.as_deref(),
                settings.tls_cert_file.as_deref(),
                settings.tls_key_file.as_deref(),
            )?)
        } else {
            if settings.tls_cert_file.is_some() || settings.tls_ca_file.is_some() {
                return Err(
                    "TLS files are set but tls is off (set tls=true or use a TLS URL)".into(),
                );
            }
            None
        };
        if settings.reconnect_min_ms > settings.reconnect_max_ms {
            return Err(format!(
                "reconnect-min-delay ({} ms) is longer than reconnect-max-delay ({} ms)",
                settings.reconnect_min_ms, settings.reconnect_max_ms
            ));
        }
        let config = TransportConfig {
            endpoint,
            tls,
            username: settings.username.clone(),
            password: settings.password.clone(),
            exchange: settings.exchange.clone(),
            stream_max_length: settings.stream_max_length,
            client_id: format!("fs-{}", ids.prefix()),
            connect_timeout: Duration::from_millis(settings.connect_timeout_ms.into()),
        };
        config.validate()?;
        Ok(config)
    }
}

fn drop_warning(broker: &str, dropped: u64, capacity: usize) -> String {
    format!(
        "{dropped} messages dropped: the queue of {capacity} messages was full while {broker} did not take them"
    )
}

#[glib::object_subclass]
impl ObjectSubclass for MsgBroker {
    const NAME: &'static str = "GstRsMsgBroker";
    type Type = super::MsgBroker;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for MsgBroker {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let counter = |name: &str, nick: &str, blurb: &str| {
                glib::ParamSpecUInt64::builder(name)
                    .nick(nick)
                    .blurb(blurb)
                    .read_only()
                    .build()
            };
            let mut specs = SETTINGS.param_specs(&Settings::default());
            specs.extend([
                counter(
                    "messages-produced",
                    "Messages produced",
                    "Messages made from frames and events",
                ),
                counter(
                    "messages-sent",
                    "Messages sent",
                    "Publish attempts, resends included",
                ),
                counter(
                    "messages-acknowledged",
                    "Messages acknowledged",
                    "Messages the broker acknowledged",
                ),
                counter(
                    "messages-dropped",
                    "Messages dropped",
                    "Messages dropped because the queue was full",
                ),
                counter(
                    "messages-resent",
                    "Messages resent",
                    "Messages sent again after a connection was lost before their acknowledgement",
                ),
                counter(
                    "messages-queued",
                    "Messages queued",
                    "Messages waiting for the broker's acknowledgement now",
                ),
                glib::ParamSpecBoolean::builder("connected")
                    .nick("Connected")
                    .blurb("Whether a connection to the broker is up")
                    .read_only()
                    .build(),
            ]);
            specs
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut props = self.settings.lock().unwrap();
        SETTINGS.set_on(self.obj().upcast_ref(), &mut props, pspec, value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let counter_name = pspec.name();
        if counter_name.starts_with("messages-") || counter_name == "connected" {
            let (c, queued, connected) = self.counters();
            return match counter_name {
                "messages-produced" => c.produced.to_value(),
                "messages-sent" => c.sent.to_value(),
                "messages-acknowledged" => c.acknowledged.to_value(),
                "messages-dropped" => c.dropped.to_value(),
                "messages-resent" => c.resent.to_value(),
                "messages-queued" => (queued as u64).to_value(),
                "connected" => connected.to_value(),
                _ => unreachable!(),
            };
        }
        let props = self.settings.lock().unwrap();
        SETTINGS
            .property_value(&props, pspec.name())
            .expect("the other properties are settings")
    }
}

impl GstObjectImpl for MsgBroker {}

ferrostream_core::metadata_element_impl!(
    MsgBroker,
    "Message broker event export",
    "Filter/Analytics",
    "Sends frame metadata and object events to MQTT, AMQP, Redis or Kafka with at-least-once delivery (pass-through)",
);

impl BaseTransformImpl for MsgBroker {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = true;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let resolved = SETTINGS.resolve(Settings::default(), &self.settings.lock().unwrap());
        let settings = resolved.map_err(|e| start_error(format!("rsmsgbroker: {e}")))?;
        let ids = MessageIds::new();
        let config = Self::transport_config(&settings, &ids)
            .map_err(|e| start_error(format!("rsmsgbroker ({}): {e}", settings.protocol.name())))?;
        let topic = TopicTemplate::parse(&settings.topic, settings.protocol, &settings.sensor_ids)
            .map_err(start_error)?;
        let broker = config.broker_url();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rsmsgbroker")
            .enable_all()
            .build()
            .map_err(|e| start_error(format!("cannot start the sending thread: {e}")))?;
        let name = self.obj().name();
        let link = Link::new(
            settings.queue_size as usize,
            QueueMetrics::registered(&name),
            broker.clone(),
            self.notice_poster(),
        );
        let backoff = Backoff {
            min: Duration::from_millis(settings.reconnect_min_ms.into()),
            max: Duration::from_millis(settings.reconnect_max_ms.into()),
        };
        runtime.spawn(transport::run(config.clone(), link.clone(), backoff));
        if settings.require_connection {
            // Bounded: one attempt's timeout and a little more for the handshake to be noted.
            let deadline = Instant::now() + config.connect_timeout + Duration::from_millis(500);
            while !link.ever_connected() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if !link.ever_connected() {
                link.shut_down();
                runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
                return Err(gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    (
                        "Cannot reach {broker} within {:?} (require-connection is set): {}",
                        config.connect_timeout,
                        link.last_error().unwrap_or_else(|| "no answer".into())
                    )
                ));
            }
        }
        gst::info!(
            CAT,
            imp = self,
            "sending {:?} in the {:?} schema to {broker}, topic {}, queue of {}",
            settings.payload,
            settings.schema,
            settings.topic,
            settings.queue_size
        );
        *self.last_counters.lock().unwrap() = Counters::default();
        *self.state.lock().unwrap() = Some(State {
            runtime,
            link,
            payload: settings.payload,
            builder: PayloadBuilder {
                schema: settings.schema,
                sensor_ids: settings.sensor_ids.clone(),
            },
            topic,
            ids,
            tracker: EventTracker::new(settings.lost_frames),
            flush_timeout: Duration::from_millis(settings.flush_timeout_ms.into()),
            size: (0, 0),
            frames_without_meta: 0,
            undelivered_reported: false,
            latency: LatencyRecorder::new(name),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let Some(state) = self.state.lock().unwrap().take() else {
            return Ok(());
        };
        state.link.shut_down();
        state.runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
        let (counters, undelivered, episode, capacity) = {
            let mut queue = state.link.queue.lock().unwrap();
            (
                queue.counters(),
                queue.len(),
                queue.end_episode(),
                queue.capacity(),
            )
        };
        *self.last_counters.lock().unwrap() = counters;
        let broker = state.link.broker().to_string();
        let mut posts = Vec::new();
        if let Some(n) = episode {
            posts.push(Post::Warning(drop_warning(&broker, n, capacity)));
        }
        if undelivered > 0 && !state.undelivered_reported {
            posts.push(Post::Warning(format!(
                "{undelivered} messages were never delivered to {broker} (stopped before the broker acknowledged them)"
            )));
        }
        self.post(posts);
        gst::info!(
            CAT,
            imp = self,
            "summary for {broker}: {} produced, {} sent, {} acknowledged, {} resent, {} dropped, {undelivered} undelivered",
            counters.produced,
            counters.sent,
            counters.acknowledged,
            counters.resent,
            counters.dropped
        );
        let summary = gst::Structure::builder("rsmsgbroker-summary")
            .field("broker", &broker)
            .field("produced", counters.produced)
            .field("sent", counters.sent)
            .field("acknowledged", counters.acknowledged)
            .field("resent", counters.resent)
            .field("dropped", counters.dropped)
            .field("undelivered", undelivered as u64)
            .build();
        let _ = self.obj().post_message(
            gst::message::Element::builder(summary)
                .src(&*self.obj())
                .build(),
        );
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, _outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let size = ferrostream_core::element::caps_frame_size(incaps);
        if let Some(state) = self.state.lock().unwrap().as_mut() {
            state.size = size;
        }
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        if let Some(source) = stream_events::parse_stream_eos(&event) {
            self.end_tracks(Some(source), LeftReason::StreamEos);
        } else if let Some(source) = stream_events::parse_stream_restart(&event) {
            self.end_tracks(Some(source), LeftReason::StreamRestart);
        } else if event.type_() == gst::EventType::Eos {
            self.end_tracks(None, LeftReason::Eos);
            self.flush();
        }
        self.parent_sink_event(event)
    }

    fn submit_input_buffer(
        &self,
        is_discont: bool,
        mut inbuf: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        // Recorded before the payloads are made, so frame messages carry it. Here, where the
        // buffer is ours to make writable: the element otherwise passes it through untouched.
        let entry = now_ns();
        if let Some(state) = self.state.lock().unwrap().as_ref() {
            state.latency.record_buffer(&mut inbuf, entry);
        }
        self.parent_submit_input_buffer(is_discont, inbuf)
    }

    fn transform_ip_passthrough(
        &self,
        buf: &gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.export(buf)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.export(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_table_checks_out() {
        SETTINGS.check(&Settings::default()).unwrap();
    }
}
