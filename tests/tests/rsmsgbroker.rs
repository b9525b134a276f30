// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsmsgbroker against real brokers started by the test on 127.0.0.1 (mosquitto, RabbitMQ,
//! Redis; Kafka through librdkafka's built-in mock cluster, which speaks the Kafka protocol over
//! TCP in this process), each with a consumer in the test counting every message by id: nothing
//! is lost when a broker dies mid-stream and comes back (duplicates are counted and reported),
//! drops beyond the queue bound are counted exactly, payloads and events match known tracks,
//! topics are per source, and bad settings are clear start errors.
//!
//! The brokers come from `scripts/setup.sh` (Debian's `mosquitto`, `rabbitmq-server`,
//! `redis-server`); every broker process is killed when its guard is dropped, even when an
//! assertion fails.

use std::collections::{BTreeMap, HashSet};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrostream_core::batch::events as stream_events;
use ferrostream_core::{
    BBox, Batch, BatchMeta, Crossing, Frame, LineCrossing, Object, ObjectAnalytics,
};
use ferrostream_tests::free_port;
use gst::prelude::*;

// ---------------------------------------------------------------------------------------------
// Processes, ports, directories

fn port_open(port: u16) -> bool {
    TcpStream::connect_timeout(
        &format!("127.0.0.1:{port}").parse().unwrap(),
        Duration::from_millis(200),
    )
    .is_ok()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The path of a broker binary, or a failure saying how to install it.
fn binary(path: &str) -> PathBuf {
    let p = PathBuf::from(path);
    assert!(
        p.exists(),
        "{path} is missing: run scripts/setup.sh (it installs mosquitto, rabbitmq-server and redis-server)"
    );
    p
}

/// A directory removed at drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "ferrostream-msgbroker-{}-{name}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process in a process group of its own; the whole group is killed at drop.
struct Proc(Child);

impl Proc {
    fn spawn(cmd: &mut Command) -> Self {
        let child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}; run scripts/setup.sh"));
        Self(child)
    }

    fn signal(&self, signal: i32) {
        // SAFETY: plain kill(2) on the process group this test created.
        unsafe {
            libc::kill(-(self.0.id() as i32), signal);
        }
    }

    /// Ends the group with `signal` and waits for the process (killing it after 10 s).
    fn stop(mut self, signal: i32) {
        self.signal(signal);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                self.signal(libc::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Mosquitto,
    Redis,
    Rabbit,
}

/// A broker on 127.0.0.1 that can be stopped and started again on the same port.
struct Broker {
    kind: Kind,
    port: u16,
    dir: TempDir,
    /// RabbitMQ's own port mapper, started before it and killed after it.
    epmd: Option<(Proc, u16)>,
    process: Option<Proc>,
}

impl Broker {
    fn start(kind: Kind) -> Self {
        let dir = TempDir::new(match kind {
            Kind::Mosquitto => "mosquitto",
            Kind::Redis => "redis",
            Kind::Rabbit => "rabbitmq",
        });
        let epmd = (kind == Kind::Rabbit).then(|| {
            let port = free_port();
            let p = Proc::spawn(Command::new(binary("/usr/bin/epmd")).args([
                "-port",
                &port.to_string(),
                "-address",
                "127.0.0.1",
            ]));
            wait_until("epmd", Duration::from_secs(10), || port_open(port));
            (p, port)
        });
        let mut broker = Self {
            kind,
            port: free_port(),
            dir,
            epmd,
            process: None,
        };
        broker.up();
        broker
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn up(&mut self) {
        let dir = &self.dir.0;
        let port = self.port.to_string();
        let process = match self.kind {
            Kind::Mosquitto => {
                let conf = dir.join("mosquitto.conf");
                std::fs::write(
                    &conf,
                    format!(
                        "listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n\
                         persistence_location {}/\nmax_queued_messages 0\n\
                         # Started as root it would switch to the mosquitto user, who cannot\n\
                         # write its database into the test's directory.\nuser root\n",
                        dir.display()
                    ),
                )
                .unwrap();
                Proc::spawn(
                    Command::new(binary("/usr/sbin/mosquitto"))
                        .arg("-c")
                        .arg(&conf),
                )
            }
            Kind::Redis => Proc::spawn(Command::new(binary("/usr/bin/redis-server")).args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                &dir.display().to_string(),
            ])),
            Kind::Rabbit => {
                let (_, epmd_port) = self.epmd.as_ref().expect("epmd started");
                std::fs::create_dir_all(dir.join("home")).unwrap();
                std::fs::write(dir.join("enabled_plugins"), "[].\n").unwrap();
                std::fs::write(
                    dir.join("rabbitmq.conf"),
                    format!("listeners.tcp.default = 127.0.0.1:{port}\nloopback_users = none\n"),
                )
                .unwrap();
                let dist_port = free_port();
                Proc::spawn(
                    Command::new(binary("/usr/lib/rabbitmq/bin/rabbitmq-server"))
                        .env("HOME", dir.join("home"))
                        .env("ERL_EPMD_PORT", epmd_port.to_string())
                        .env("ERL_EPMD_ADDRESS", "127.0.0.1")
                        .env("RABBITMQ_NODENAME", format!("ferrostream-{port}@localhost"))
                        .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
                        .env("RABBITMQ_NODE_PORT", &port)
                        .env("RABBITMQ_DIST_PORT", dist_port.to_string())
                        .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
                        .env("RABBITMQ_LOG_BASE", dir.join("log"))
                        .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
                        .env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq.conf"))
                        .env("RABBITMQ_PID_FILE", dir.join("rabbitmq.pid")),
                )
            }
        };
        let boot = if self.kind == Kind::Rabbit { 90 } else { 15 };
        wait_until("the broker's port", Duration::from_secs(boot), || {
            port_open(self.port)
        });
        self.process = Some(process);
    }

    /// Stops the broker: mosquitto with SIGTERM (it saves its sessions and queued messages, as
    /// a broker going away properly does), the others with SIGKILL.
    fn down(&mut self) {
        let signal = match self.kind {
            Kind::Mosquitto => libc::SIGTERM,
            _ => libc::SIGKILL,
        };
        if let Some(p) = self.process.take() {
            p.stop(signal);
        }
        wait_until("the port to close", Duration::from_secs(10), || {
            !port_open(self.port)
        });
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        // The broker before its port mapper.
        self.process.take();
        self.epmd.take();
    }
}

// ---------------------------------------------------------------------------------------------
// Consumers: every message received, by id

#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, serde_json::Value)>>>);

impl Received {
    fn add(&self, topic: &str, body: &[u8]) {
        let v: serde_json::Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("message on {topic} is not JSON ({e})"));
        self.0.lock().unwrap().push((topic.to_string(), v));
    }

    fn all(&self) -> Vec<(String, serde_json::Value)> {
        self.0.lock().unwrap().clone()
    }

    fn ids(&self) -> Vec<String> {
        self.all().iter().map(|(_, v)| message_id(v)).collect()
    }

    fn distinct(&self) -> usize {
        self.ids().into_iter().collect::<HashSet<_>>().len()
    }

    fn wait_for(&self, distinct: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.distinct() < distinct {
            assert!(
                Instant::now() < deadline,
                "timed out after {limit:?} waiting for {distinct} distinct messages: {} arrived ({} in all)",
                self.distinct(),
                self.ids().len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn message_id(v: &serde_json::Value) -> String {
    v.get("message_id")
        .or_else(|| v.get("messageid"))
        .and_then(|id| id.as_str())
        .unwrap_or_else(|| panic!("message without an id: {v}"))
        .to_string()
}

/// Every id `prefix-0` .. `prefix-(n-1)` was received at least once; returns how many
/// duplicates there were.
fn assert_all_received(received: &Received, produced: u64) -> usize {
    let ids = received.ids();
    let distinct: HashSet<&String> = ids.iter().collect();
    let prefix = ids[0].rsplit_once('-').unwrap().0.to_string();
    let missing: Vec<u64> = (0..produced)
        .filter(|n| !distinct.contains(&format!("{prefix}-{n}")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {produced} messages never arrived (first: {:?})",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert_eq!(distinct.len() as u64, produced, "ids from elsewhere");
    ids.len() - distinct.len()
}

/// Sets `stop` at drop, so a consumer thread ends with its test.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An MQTT subscriber (QoS 1, persistent session) to `filter`.
fn mqtt_consumer(port: u16, filter: &str) -> (Received, StopOnDrop) {
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
    let received = Received::default();
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let (r, s, ok, filter) = (
        received.clone(),
        stop.clone(),
        ready.clone(),
        filter.to_string(),
    );
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let mut options = MqttOptions::new(
                format!("consumer-{port}-{}", free_port()),
                "127.0.0.1",
                port,
            );
            options
                .set_clean_session(false)
                .set_keep_alive(Duration::from_secs(5))
                .set_max_packet_size(1 << 24, 1 << 24);
            let (client, mut events) = AsyncClient::new(options, 100);
            while !s.load(Ordering::SeqCst) {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::SubAck(_))) => ok.store(true, Ordering::SeqCst),
                    // A broker that lost the session (it should not) gets the subscription again.
                    Ok(Event::Incoming(Packet::ConnAck(ack))) if !ack.session_present => {
                        let _ = client.try_subscribe(&filter, QoS::AtLeastOnce);
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => r.add(&p.topic, &p.payload),
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        })
    });
    wait_until("the MQTT subscription", Duration::from_secs(10), || {
        ready.load(Ordering::SeqCst)
    });
    (received, StopOnDrop(stop))
}

/// An AMQP consumer of a durable queue bound to `amq.topic` with `#`, reconnecting.
fn amqp_consumer(port: u16) -> (Received, StopOnDrop) {
    use lapin::options::{
        BasicAckOptions, BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions,
    };
    use lapin::types::FieldTable;
    let received = Received::default();
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let (r, s, ok) = (received.clone(), stop.clone(), ready.clone());
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let uri = format!("amqp://guest:guest@127.0.0.1:{port}/%2f");
            while !s.load(Ordering::SeqCst) {
                let Ok(conn) = lapin::Connection::connect(&uri, Default::default()).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let setup = async {
                    let ch = conn.create_channel().await?;
                    ch.queue_declare(
                        "fs-test".into(),
                        QueueDeclareOptions::durable(),
                        FieldTable::default(),
                    )
                    .await?;
                    ch.queue_bind(
                        "fs-test".into(),
                        "amq.topic".into(),
                        "#".into(),
                        QueueBindOptions::default(),
                        FieldTable::default(),
                    )
                    .await?;
                    let consumer = ch
                        .basic_consume(
                            "fs-test".into(),
                            "test".into(),
                            BasicConsumeOptions::default(),
                            FieldTable::default(),
                        )
                        .await?;
                    Ok::<_, lapin::Error>((ch, consumer))
                };
                let Ok((_ch, consumer)) = setup.await else {
                    continue;
                };
                let r = r.clone();
                consumer.set_delegate(move |delivery: lapin::message::DeliveryResult| {
                    let r = r.clone();
                    async move {
                        if let Ok(Some(d)) = delivery {
                            r.add(d.routing_key.as_str(), &d.data);
                            let _ = d.ack(BasicAckOptions::default()).await;
                        }
                    }
                });
                ok.store(true, Ordering::SeqCst);
                while conn.status().connected() && !s.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        })
    });
    wait_until("the AMQP consumer", Duration::from_secs(30), || {
        ready.load(Ordering::SeqCst)
    });
    (received, StopOnDrop(stop))
}

/// A Redis Streams reader of `key` (XREAD BLOCK from the start), reconnecting.
fn redis_consumer(port: u16, key: &str) -> (Received, StopOnDrop) {
    let received = Received::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (r, s, key) = (received.clone(), stop.clone(), key.to_string());
    std::thread::spawn(move || {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        let mut last = "0".to_string();
        while !s.load(Ordering::SeqCst) {
            let Ok(mut con) = client.get_connection_with_timeout(Duration::from_millis(500)) else {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            while !s.load(Ordering::SeqCst) {
                let reply: redis::RedisResult<redis::Value> = redis::cmd("XREAD")
                    .arg("BLOCK")
                    .arg(200)
                    .arg("COUNT")
                    .arg(1000)
                    .arg("STREAMS")
                    .arg(&key)
                    .arg(&last)
                    .query(&mut con);
                let Ok(reply) = reply else {
                    break;
                };
                for (id, fields) in stream_entries(reply) {
                    let payload = fields.get("payload").expect("a payload field");
                    r.add(&key, payload);
                    last = id;
                }
            }
        }
    });
    (received, StopOnDrop(stop))
}

/// The entries of an XREAD reply: (entry id, fields).
fn stream_entries(reply: redis::Value) -> Vec<(String, BTreeMap<String, Vec<u8>>)> {
    use redis::Value;
    fn text(v: &Value) -> Vec<u8> {
        match v {
            Value::BulkString(b) => b.clone(),
            Value::SimpleString(s) => s.clone().into_bytes(),
            other => panic!("unexpected {other:?}"),
        }
    }
    let Value::Array(streams) = reply else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for stream in streams {
        let Value::Array(parts) = stream else {
            continue;
        };
        let Some(Value::Array(entries)) = parts.get(1) else {
            continue;
        };
        for entry in entries {
            let Value::Array(e) = entry else { continue };
            let id = String::from_utf8(text(&e[0])).unwrap();
            let Value::Array(kv) = &e[1] else { continue };
            let fields = kv
                .chunks(2)
                .map(|p| (String::from_utf8(text(&p[0])).unwrap(), text(&p[1])))
                .collect();
            out.push((id, fields));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The element, fed synthetic tracks

/// rsmsgbroker in a harness, its bus messages on a bus of our own.
struct Fed {
    harness: gst_check::Harness,
    element: gst::Element,
    bus: gst::Bus,
    messages: Vec<gst::Message>,
}

impl Fed {
    fn new(props: &[(&str, &str)]) -> Self {
        ferrostream_tests::init();
        let mut b = gst::ElementFactory::make("rsmsgbroker");
        for (name, value) in props {
            b = b.property_from_str(name, value);
        }
        let element = b.build().unwrap();
        let bus = gst::Bus::new();
        element.set_bus(Some(&bus));
        let mut harness = gst_check::Harness::with_element(&element, Some("sink"), Some("src"));
        harness.set_src_caps_str("video/x-raw,format=RGBA,width=640,height=480,framerate=25/1");
        Self {
            harness,
            element,
            bus,
            messages: Vec::new(),
        }
    }

    fn push(&mut self, frames: Vec<Frame>) {
        let mut buffer = gst::Buffer::new();
        BatchMeta::add(buffer.get_mut().unwrap(), Batch { frames });
        self.harness.push_and_pull(buffer).unwrap();
    }

    fn event(&mut self, event: gst::Event) {
        assert!(self.harness.push_event(event));
    }

    fn counter(&self, name: &str) -> u64 {
        self.element.property::<u64>(name)
    }

    fn drain(&mut self) {
        while let Some(m) = self.bus.pop() {
            self.messages.push(m);
        }
    }

    fn structures(&mut self, name: &str) -> Vec<gst::Structure> {
        self.drain();
        self.messages
            .iter()
            .filter_map(|m| m.structure().map(|s| s.to_owned()))
            .filter(|s| s.name() == name)
            .collect()
    }

    fn warnings(&mut self) -> Vec<String> {
        self.drain();
        self.messages
            .iter()
            .filter_map(|m| match m.view() {
                gst::MessageView::Warning(w) => Some(w.error().to_string()),
                _ => None,
            })
            .collect()
    }

    /// Stops the element (its summary is posted) and returns the summary.
    fn finish(mut self) -> (gst::Structure, Vec<String>) {
        self.element.set_state(gst::State::Null).unwrap();
        let summary = self
            .structures("rsmsgbroker-summary")
            .pop()
            .expect("a summary");
        let warnings = self.warnings();
        (summary, warnings)
    }
}

/// Frame `n` of `source` with tracked people `ids`.
fn frame(source: u32, n: u64, ids: &[u64]) -> Frame {
    let mut f = Frame::new(source, n, 640, 480);
    f.pts = Some(gst::ClockTime::from_mseconds(40 * n));
    for &id in ids {
        let b = BBox::new(10.0 * id as f32, 20.0, 30.0, 60.0);
        let mut o = Object::new(0, "person".into(), 0.9, b, 1);
        o.object_id = Some(id);
        o.tracker_bbox = Some(b);
        f.objects.push(o);
    }
    f
}

fn cross(f: &mut Frame, id: u64, direction: Crossing) {
    let o = f
        .objects
        .iter_mut()
        .find(|o| o.object_id == Some(id))
        .unwrap();
    o.analytics = Some(ObjectAnalytics {
        crossed: vec![LineCrossing {
            line: "Gate".into(),
            direction,
        }],
        ..Default::default()
    });
}

/// Pushes `count` single-frame buffers of source 0 with one object.
fn push_frames(fed: &mut Fed, from: u64, count: u64) {
    for n in from..from + count {
        fed.push(vec![frame(0, n, &[1])]);
    }
}

/// A broker dies mid-stream and comes back on the same port: every message arrives.
fn outage_loses_nothing(
    kind: Kind,
    protocol: &str,
    consumer: impl FnOnce(&Broker) -> (Received, StopOnDrop),
) {
    let mut broker = Broker::start(kind);
    let (received, _stop) = consumer(&broker);
    let mut fed = Fed::new(&[
        ("protocol", protocol),
        ("server", &broker.address()),
        ("topic", "fs-events"),
        ("queue-size", "100000"),
        ("reconnect-min-delay", "50"),
        ("reconnect-max-delay", "500"),
        ("flush-timeout", "30000"),
    ]);
    push_frames(&mut fed, 0, 200);
    // Killed while messages flow: some acknowledged, others in flight or waiting.
    wait_until(
        "the first acknowledgements",
        Duration::from_secs(30),
        || fed.counter("messages-acknowledged") >= 20,
    );
    if kind == Kind::Redis {
        // Redis runs without persistence here: what it acknowledged but the reader had not read
        // yet would die with it, so the kill waits for the reader. (MQTT and AMQP brokers keep
        // acknowledged messages, so they are killed with messages in flight.)
        received.wait_for(200, Duration::from_secs(30));
    }
    broker.down();
    push_frames(&mut fed, 200, 300);
    wait_until(
        "the element to see the broker gone",
        Duration::from_secs(30),
        || !fed.element.property::<bool>("connected"),
    );
    let queued_in_outage = fed.counter("messages-queued");
    broker.up();
    push_frames(&mut fed, 500, 100);
    fed.event(gst::event::Eos::new());
    let produced = fed.counter("messages-produced");
    assert_eq!(produced, 600);
    assert_eq!(fed.counter("messages-acknowledged"), produced);
    received.wait_for(produced as usize, Duration::from_secs(60));
    let duplicates = assert_all_received(&received, produced);
    let disconnected = fed.structures("rsmsgbroker-disconnected");
    let reconnected = fed.structures("rsmsgbroker-reconnected");
    assert!(!disconnected.is_empty());
    assert!(
        disconnected[0]
            .get::<String>("broker")
            .unwrap()
            .contains(&broker.address())
    );
    assert!(!disconnected[0].get::<String>("reason").unwrap().is_empty());
    assert_eq!(reconnected.len(), 1, "{disconnected:?} {reconnected:?}");
    let (summary, warnings) = fed.finish();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(summary.get::<u64>("dropped").unwrap(), 0);
    assert_eq!(summary.get::<u64>("undelivered").unwrap(), 0);
    println!(
        "{protocol}: {produced} produced, {} received, {duplicates} duplicates, {} resent, \
         {queued_in_outage} queued during the outage; disconnected: {}",
        received.ids().len(),
        summary.get::<u64>("resent").unwrap(),
        disconnected[0].get::<String>("reason").unwrap()
    );
}

#[test]
fn mqtt_outage_loses_nothing() {
    outage_loses_nothing(Kind::Mosquitto, "mqtt", |b| mqtt_consumer(b.port, "#"));
}

#[test]
fn amqp_outage_loses_nothing() {
    outage_loses_nothing(Kind::Rabbit, "amqp", |b| amqp_consumer(b.port));
}

#[test]
fn redis_outage_loses_nothing() {
    outage_loses_nothing(Kind::Redis, "redis", |b| {
        redis_consumer(b.port, "fs-events")
    });
}

/// More messages than the queue holds while the broker is away: the newest are dropped,
/// counted exactly, and reported in one warning.
#[test]
fn queue_bound_drops_are_counted_and_reported() {
    let mut broker = Broker::start(Kind::Redis);
    let (received, _stop) = redis_consumer(broker.port, "fs-bound");
    let mut fed = Fed::new(&[
        ("protocol", "redis"),
        ("server", &format!("redis://{}", broker.address())),
        ("topic", "fs-bound"),
        ("queue-size", "50"),
        ("reconnect-min-delay", "50"),
        ("reconnect-max-delay", "200"),
    ]);
    push_frames(&mut fed, 0, 20);
    received.wait_for(20, Duration::from_secs(20));
    // A message read by the consumer may not be acknowledged to the element yet: until it is,
    // it still takes a place in the queue.
    wait_until(
        "the first 20 acknowledgements",
        Duration::from_secs(20),
        || fed.counter("messages-acknowledged") == 20,
    );
    broker.down();
    push_frames(&mut fed, 20, 200);
    assert_eq!(fed.counter("messages-dropped"), 150);
    assert_eq!(fed.counter("messages-queued"), 50);
    broker.up();
    push_frames(&mut fed, 220, 10);
    fed.event(gst::event::Eos::new());
    let produced = fed.counter("messages-produced");
    let dropped = fed.counter("messages-dropped");
    assert_eq!(produced, 230);
    assert!(dropped >= 150, "{dropped}");
    received.wait_for((produced - dropped) as usize, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(received.distinct() as u64, produced - dropped);
    let warnings = fed.warnings();
    let drops: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("messages dropped"))
        .collect();
    assert_eq!(drops.len(), 1, "one warning per outage: {warnings:?}");
    assert!(
        drops[0].starts_with(&format!("{dropped} messages dropped")),
        "{}",
        drops[0]
    );
    assert!(drops[0].contains(&broker.address()), "{}", drops[0]);
    let (summary, _) = fed.finish();
    assert_eq!(summary.get::<u64>("dropped").unwrap(), dropped);
}

/// Known tracks on two sources: appeared / left (terminated, lost, restart, stream EOS, EOS) /
/// line crossed, each once; per-source topics get only their source's messages.
#[test]
fn events_match_the_tracks_and_topics_are_per_source() {
    let broker = Broker::start(Kind::Mosquitto);
    let (all, _stop_all) = mqtt_consumer(broker.port, "fs/#");
    let (source1, _stop_1) = mqtt_consumer(broker.port, "fs/1/#");
    let mut fed = Fed::new(&[
        ("protocol", "mqtt"),
        ("server", &format!("mqtt://{}", broker.address())),
        ("topic", "fs/{source-id}/{event}"),
        ("payload", "both"),
        ("lost-frames", "5"),
    ]);
    for n in 0..30u64 {
        // Source 0: track 1 in frames 0-9, terminated in frame 10; track 2 in frames 5-19,
        // crossing forward in frame 12, then lost; track 5 throughout.
        let mut ids = vec![5];
        if n < 10 {
            ids.push(1);
        }
        if (5..20).contains(&n) {
            ids.push(2);
        }
        let mut f0 = frame(0, n, &ids);
        if n == 10 {
            f0.terminated_ids = vec![1];
        }
        if n == 12 {
            cross(&mut f0, 2, Crossing::Forward);
        }
        // Source 1: track 3, restarted after frame 14, crossing backward in frame 20.
        let mut f1 = frame(1, n, &[3]);
        if n == 20 {
            cross(&mut f1, 3, Crossing::Backward);
        }
        fed.push(vec![f0, f1]);
        if n == 14 {
            fed.event(stream_events::stream_restart(1));
        }
    }
    fed.event(stream_events::stream_eos(1));
    fed.event(gst::event::Eos::new());
    let produced = fed.counter("messages-produced") as usize;
    all.wait_for(produced, Duration::from_secs(20));
    let mut events: Vec<(u32, String, u64, String)> = Vec::new();
    for (topic, v) in all.all() {
        let source = v["source_id"].as_u64().unwrap() as u32;
        let kind = v
            .get("event")
            .and_then(|e| e.as_str())
            .unwrap_or("frame")
            .to_string();
        assert_eq!(topic, format!("fs/{source}/{kind}"));
        if kind != "frame" {
            let detail = match kind.as_str() {
                "left" => v["reason"].as_str().unwrap().to_string(),
                "line-crossed" => format!(
                    "{}:{}",
                    v["line"].as_str().unwrap(),
                    v["direction"].as_str().unwrap()
                ),
                _ => String::new(),
            };
            events.push((
                source,
                kind,
                v["object"]["object_id"].as_u64().unwrap(),
                detail,
            ));
        }
    }
    events.sort();
    let e = |s: u32, k: &str, id: u64, d: &str| (s, k.to_string(), id, d.to_string());
    let mut expected = vec![
        e(0, "appeared", 1, ""),
        e(0, "appeared", 2, ""),
        e(0, "appeared", 5, ""),
        e(0, "left", 1, "terminated"),
        e(0, "left", 2, "lost"),
        e(0, "left", 5, "eos"),
        e(0, "line-crossed", 2, "Gate:forward"),
        e(1, "appeared", 3, ""),
        e(1, "appeared", 3, ""),
        e(1, "left", 3, "stream-restart"),
        e(1, "left", 3, "stream-eos"),
        e(1, "line-crossed", 3, "Gate:backward"),
    ];
    expected.sort();
    assert_eq!(events, expected);
    // 30 frames of each source, plus the events.
    assert_eq!(produced, 60 + expected.len());
    // The per-source subscription got exactly source 1's messages.
    source1.wait_for(30 + 5, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    let got = source1.all();
    assert_eq!(got.len(), 35);
    assert!(
        got.iter()
            .all(|(t, v)| t.starts_with("fs/1/") && v["source_id"] == 1)
    );
}

/// The DeepStream minimal schema: fields, object strings in source pixels, events.
#[test]
fn deepstream_minimal_payloads() {
    let broker = Broker::start(Kind::Redis);
    let (received, _stop) = redis_consumer(broker.port, "ds");
    let mut fed = Fed::new(&[
        ("protocol", "redis"),
        ("server", &broker.address()),
        ("topic", "ds"),
        ("payload", "both"),
        ("schema", "deepstream-minimal"),
        ("sensor-ids", "dock-cam"),
        ("stream-max-length", "1000"),
    ]);
    let mut f = frame(0, 7, &[4]);
    f.source_width = 1280;
    f.source_height = 960;
    fed.push(vec![f]);
    fed.event(gst::event::Eos::new());
    // A frame, the appearance, the departure at EOS.
    received.wait_for(3, Duration::from_secs(10));
    let all = received.all();
    let frame_msg = &all[0].1;
    assert_eq!(frame_msg["version"], "4.0");
    assert_eq!(frame_msg["id"], 7);
    assert_eq!(frame_msg["sensorId"], "dock-cam");
    assert_eq!(frame_msg["sourceId"], 0);
    assert!(frame_msg["messageid"].as_str().unwrap().ends_with("-0"));
    let ts = frame_msg["@timestamp"].as_str().unwrap();
    assert_eq!((ts.len(), &ts[10..11], &ts[23..]), (24, "T", "Z"), "{ts}");
    // Box (40, 20, 30x60) in a 640x480 frame of a 1280x960 source.
    assert_eq!(
        frame_msg["objects"],
        serde_json::json!(["4|80|40|140|160|person"])
    );
    assert!(frame_msg.get("event").is_none());
    let kinds: Vec<&str> = all[1..]
        .iter()
        .map(|(_, v)| v["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["appeared", "left"]);
    assert_eq!(all[2].1["event"]["reason"], "eos");
    assert_eq!(all[2].1["id"], "7");
    assert_eq!(all[2].1["objects"][0], "4|80|40|140|160|person");
}

/// The frame payload is exactly what rsmetaexport writes, plus the message id.
#[test]
fn frame_payload_is_the_metaexport_line() {
    let broker = Broker::start(Kind::Redis);
    let (received, _stop) = redis_consumer(broker.port, "frames");
    let mut fed = Fed::new(&[
        ("protocol", "redis"),
        ("server", &broker.address()),
        ("topic", "frames"),
    ]);
    let mut f = frame(2, 3, &[8, 9]);
    cross(&mut f, 9, Crossing::Forward);
    fed.push(vec![f.clone()]);
    fed.event(gst::event::Eos::new());
    received.wait_for(1, Duration::from_secs(10));
    let mut v = received.all()[0].1.clone();
    v.as_object_mut().unwrap().remove("message_id");
    let mut line = Vec::new();
    ferrostream_core::json::write_frame_line(&mut line, &f).unwrap();
    assert_eq!(
        v,
        serde_json::from_slice::<serde_json::Value>(&line).unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// Kafka: librdkafka's mock cluster

#[test]
fn kafka_outage_loses_nothing() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message as _;
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    mock.create_topic("fs-kafka", 1, 1).unwrap();
    let mut fed = Fed::new(&[
        ("protocol", "kafka"),
        ("server", &mock.bootstrap_servers()),
        ("topic", "fs-kafka"),
        ("reconnect-min-delay", "50"),
        ("reconnect-max-delay", "500"),
        ("flush-timeout", "30000"),
    ]);
    push_frames(&mut fed, 0, 100);
    mock.broker_down(1).unwrap();
    push_frames(&mut fed, 100, 100);
    std::thread::sleep(Duration::from_secs(1));
    mock.broker_up(1).unwrap();
    push_frames(&mut fed, 200, 100);
    fed.event(gst::event::Eos::new());
    let produced = fed.counter("messages-produced");
    assert_eq!(produced, 300);
    assert_eq!(fed.counter("messages-acknowledged"), produced);

    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", mock.bootstrap_servers())
        .set("group.id", "fs-test")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition_offset("fs-kafka", 0, rdkafka::Offset::Beginning)
        .unwrap();
    consumer.assign(&list).unwrap();
    let received = Received::default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while received.distinct() < produced as usize && Instant::now() < deadline {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            received.add(m.topic(), m.payload().unwrap_or_default());
        }
    }
    let duplicates = assert_all_received(&received, produced);
    let (summary, warnings) = fed.finish();
    assert!(warnings.is_empty(), "{warnings:?}");
    println!(
        "kafka: {produced} produced, {duplicates} duplicates, {} resent",
        summary.get::<u64>("resent").unwrap()
    );
}

/// No broker at all: messages wait in the queue, drops at the bound are counted, the
/// disconnection says why, and what was left undelivered at EOS is reported.
#[test]
fn absent_broker_queues_drops_and_reports() {
    for protocol in ["kafka", "mqtt", "amqp", "redis"] {
        let port = free_port();
        let mut fed = Fed::new(&[
            ("protocol", protocol),
            ("server", &format!("127.0.0.1:{port}")),
            ("queue-size", "20"),
            ("connect-timeout", "500"),
            ("flush-timeout", "200"),
        ]);
        push_frames(&mut fed, 0, 50);
        assert_eq!(fed.counter("messages-dropped"), 30, "{protocol}");
        assert_eq!(fed.counter("messages-queued"), 20, "{protocol}");
        wait_until("the disconnection", Duration::from_secs(10), || {
            !fed.structures("rsmsgbroker-disconnected").is_empty()
        });
        let reason = fed.structures("rsmsgbroker-disconnected")[0]
            .get::<String>("reason")
            .unwrap();
        assert!(!reason.is_empty(), "{protocol}");
        fed.event(gst::event::Eos::new());
        let (summary, warnings) = fed.finish();
        assert_eq!(summary.get::<u64>("undelivered").unwrap(), 20, "{protocol}");
        assert_eq!(summary.get::<u64>("acknowledged").unwrap(), 0, "{protocol}");
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("30 messages dropped")),
            "{protocol}: {warnings:?}"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("20 messages were not delivered")
                    && w.contains(&port.to_string())),
            "{protocol}: {warnings:?}"
        );
        println!("{protocol} without a broker: {reason}");
    }
}

// ---------------------------------------------------------------------------------------------
// Start errors and the shipped pipeline

fn start_error(props: &str) -> String {
    let desc = format!("videotestsrc num-buffers=1 ! rsmsgbroker {props} ! appsink name=sink");
    match ferrostream_tests::run_pipeline(&desc, Duration::from_secs(20)) {
        Ok(_) => panic!("`{props}` started"),
        Err(e) => e,
    }
}

#[test]
fn bad_settings_are_clear_start_errors() {
    let e = start_error("protocol=mqtt server=amqp://127.0.0.1:5672");
    assert!(e.contains("does not fit protocol mqtt"), "{e}");
    let e = start_error("protocol=redis server=127.0.0.1:notaport");
    assert!(e.contains("not a port number"), "{e}");
    let e = start_error("protocol=mqtt tls=true tls-ca-file=/nonexistent/ca.pem");
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    let e = start_error(
        "protocol=amqp tls=true tls-cert-file=/nonexistent/c.pem tls-key-file=/nonexistent/k.pem",
    );
    assert!(e.contains("/nonexistent/c.pem"), "{e}");
    let e = start_error("protocol=kafka topic=a/{source-id}");
    assert!(e.contains("not a legal Kafka topic"), "{e}");
    let e = start_error("topic=x/{camera}");
    assert!(e.contains("unknown field `{camera}`"), "{e}");
    let port = free_port();
    let started = Instant::now();
    let e = start_error(&format!(
        "protocol=mqtt server=127.0.0.1:{port} require-connection=true connect-timeout=1000"
    ));
    assert!(
        e.contains("Cannot reach mqtt://127.0.0.1:") && e.contains("require-connection"),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // An unknown protocol cannot even be set.
    ferrostream_tests::init();
    let err = gst::parse::launch("fakesrc ! rsmsgbroker protocol=carrier-pigeon ! fakesink")
        .expect_err("an unknown protocol is refused");
    assert!(err.to_string().contains("carrier-pigeon"), "{err}");
}

#[test]
fn shipped_pipeline_sends_every_frame() {
    let broker = Broker::start(Kind::Mosquitto);
    let (received, _stop) = mqtt_consumer(broker.port, "ferrostream/#");
    let path = ferrostream_tests::repo_root().join("pipelines/events-mqtt.launch");
    let text = std::fs::read_to_string(&path).unwrap();
    let desc: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ")
        .replace("127.0.0.1:1883", &broker.address())
        .replace("fakesink", "appsink name=sink");
    let out = ferrostream_tests::run_pipeline(&desc, Duration::from_secs(60)).unwrap();
    assert_eq!(out.frames.len(), 60);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    received.wait_for(60, Duration::from_secs(20));
    let all = received.all();
    assert!(all.iter().all(|(t, _)| t == "ferrostream/0/frame"));
    let frames: Vec<u64> = all
        .iter()
        .map(|(_, v)| v["frame_num"].as_u64().unwrap())
        .collect();
    assert_eq!(frames, (0..60).collect::<Vec<_>>());
    assert!(
        out.element_messages
            .iter()
            .any(|s| s.name() == "rsmsgbroker-connected")
    );
}
