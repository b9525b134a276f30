// SPDX-License-Identifier: MIT OR Apache-2.0
//! `[message-consumer<N>]`: cloud-to-device messages that start and stop smart record, as
//! deepstream-app (test5) receives them.
//!
//! A consumer subscribes to its topics on an MQTT broker (rumqttc, on a small tokio runtime
//! in a thread of its own, started after the pipeline and stopped at its end). A message is
//! DeepStream's JSON object:
//!
//! ```json
//! {"command": "start-recording", "start": "2020-05-18T20:02:00.051Z",
//!  "end": "2020-05-18T20:02:02.851Z", "sensor": {"id": "HWY_20_AND_LOCUST__EBA"}}
//! ```
//!
//! `command` is `start-recording` (the default when absent) or `stop-recording`; `sensor.id`
//! names the camera: through the `sensor-list-file` (`[sensor<N>]` groups with `enable=1` and
//! `id`: that id is source N), else as the source id itself (or an `rsmultiurisrcbin` camera
//! id). A start records `end - start` seconds (the source's `smart-rec-default-duration` when
//! `end` is absent, to be ended by a stop); the file always begins the source's record cache
//! before the message, which holds any `start` within the cache. The action runs on the
//! runner's main loop: `start-record` / `stop-record` on the source's `rsurisrcbin`
//! (`src<id>`), or on `rsmultiurisrcbin` (`src`) with the camera id. A message that is not
//! JSON, too large ([`MAX_MESSAGE`]) or names an unknown sensor gives one warning line and is
//! skipped. A lost broker is tried again after a back-off (0.5 s doubling to 30 s) for as long
//! as the app runs; stopping interrupts every wait.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gst::glib;
use gst::prelude::*;
use rumqttc::{
    AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS, SubscribeFilter, SubscribeReasonCode,
};
use serde_json::Value as Json;
use tokio::sync::watch;

use crate::model::Consumer;

/// The largest message handled; a larger one is skipped with a warning. DeepStream's messages
/// are a few hundred bytes.
pub const MAX_MESSAGE: usize = 64 * 1024;
/// The largest MQTT packet taken at all: a larger one makes the client drop the connection
/// (and connect again), so it is well above [`MAX_MESSAGE`].
const MAX_PACKET: usize = 1024 * 1024;
/// The longest recording a message may ask for (rsurisrcbin's `record-duration` limit).
pub const MAX_DURATION: u32 = 86_400;
const FIRST_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT_S: u64 = 5;

/// The broker of a `conn-str`: `host;port` or `host;port;topic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub topic: Option<String>,
}

/// Reads a `conn-str`; the error says what was expected.
pub fn endpoint(conn_str: &str) -> Result<Endpoint, String> {
    let parts: Vec<&str> = conn_str.split(';').map(str::trim).collect();
    let expected = "expected host;port or host;port;topic (port 1 to 65535)";
    let (host, port, topic) = match parts.as_slice() {
        [host, port] => (*host, *port, None),
        [host, port, topic] => (*host, *port, Some(*topic).filter(|t| !t.is_empty())),
        _ => return Err(expected.into()),
    };
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or(expected)?;
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(expected.into());
    }
    Ok(Endpoint {
        host: host.to_owned(),
        port,
        topic: topic.map(str::to_owned),
    })
}

/// A password, kept out of `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// One consumer as the runner starts it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// The group it came from, for messages.
    pub group: String,
    pub host: String,
    pub port: u16,
    pub topics: Vec<String>,
    pub client_id: String,
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// Seconds between keep-alive pings.
    pub keep_alive: u16,
    /// From `sensor-list-file`: sensor id -> source id. `None`: a sensor id is a source id
    /// (or a camera id).
    pub sensors: Option<BTreeMap<String, u32>>,
}

/// The element whose smart record a source's messages trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTarget {
    /// The rsurisrcbin or rsmultiurisrcbin.
    pub element: String,
    /// rsmultiurisrcbin: the camera id (`None` for an rsurisrcbin).
    pub camera: Option<String>,
}

/// What the MQTT adapter's configuration file (`config-file`) says for a consumer.
#[derive(Debug, Clone, PartialEq, Default)]
struct AdapterConfig {
    username: Option<String>,
    password: Option<String>,
    client_id: Option<String>,
    keep_alive: Option<u16>,
}

/// The `[message-broker]` keys of NVIDIA's MQTT adapter configuration (`cfg_mqtt.txt`) that a
/// subscriber uses; TLS is refused (the consumer speaks plain MQTT).
fn read_adapter_config(path: &Path) -> Result<AdapterConfig, String> {
    let file = ferrostream_core::ini::IniFile::load(path).map_err(|e| e.to_string())?;
    let mut out = AdapterConfig::default();
    for section in file.sections.iter().filter(|s| s.name == "message-broker") {
        for entry in &section.entries {
            let value = entry.value.trim_matches('"').to_owned();
            let at = || format!("{}:{}: {}={value}", path.display(), entry.line, entry.key);
            match entry.key.as_str() {
                "username" | "user" => out.username = Some(value),
                "password" => out.password = Some(value),
                "client-id" => out.client_id = Some(value).filter(|v| !v.is_empty()),
                "keep-alive" => {
                    let seconds = value
                        .parse::<u16>()
                        .ok()
                        .filter(|s| *s > 0)
                        .ok_or_else(|| format!("{}: expected 1 to 65535 seconds", at()))?;
                    out.keep_alive = Some(seconds);
                }
                "enable-tls" if value != "0" => {
                    return Err(format!(
                        "{}: TLS is not supported for message consumers (they connect in \
                         plain MQTT); use a listener without TLS",
                        at()
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// The subscription of an enabled consumer (checked by the key table): its broker, topics,
/// credentials and sensor list. `index` makes the client id unique in the process.
pub fn subscription(c: &Consumer, index: usize) -> Result<Subscription, String> {
    let conn = c.conn_str.as_deref().unwrap_or_default();
    let end = endpoint(conn).map_err(|e| format!("[{}] conn-str={conn}: {e}", c.group))?;
    let mut topics = c.topics.clone();
    if let Some(t) = end.topic.filter(|t| !topics.contains(t)) {
        topics.push(t);
    }
    if topics.is_empty() {
        return Err(format!("[{}] needs subscribe-topic-list", c.group));
    }
    let adapter = match &c.config_file {
        Some(p) => read_adapter_config(p)
            .map_err(|e| format!("[{}] config-file={}: {e}", c.group, p.display()))?,
        None => AdapterConfig::default(),
    };
    let sensors = match &c.sensor_list_file {
        Some(p) => Some(
            crate::document::read_sensor_list(p)
                .map_err(|e| format!("[{}] sensor-list-file={}: {e}", c.group, p.display()))?,
        ),
        None => None,
    };
    Ok(Subscription {
        group: c.group.clone(),
        host: end.host,
        port: end.port,
        topics,
        // At most 23 characters, as strict MQTT 3.1.1 brokers want.
        client_id: adapter
            .client_id
            .unwrap_or_else(|| format!("ferrostream-{}-{index}", std::process::id())),
        username: adapter.username,
        password: adapter.password.map(Secret),
        keep_alive: adapter.keep_alive.unwrap_or(60),
        sensors,
    })
}

/// What a message asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Record `duration` seconds (0: the source's default duration).
    Start {
        sensor: String,
        duration: u32,
    },
    Stop {
        sensor: String,
    },
}

impl Request {
    pub fn sensor(&self) -> &str {
        match self {
            Request::Start { sensor, .. } | Request::Stop { sensor } => sensor,
        }
    }
}

/// Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM|±HHMM]` (no zone is
/// UTC, as DeepStream writes its times).
pub fn utc_seconds(text: &str) -> Option<i64> {
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &b[19..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        [] | [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, tail @ ..] => {
            let tail = tail.strip_prefix(b":").unwrap_or(tail);
            let [m1, m2] = tail else { return None };
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let value = |a: u8, b: u8| i64::from(a - b'0') * 10 + i64::from(b - b'0');
            let seconds = value(digits[0], digits[1]) * 3600 + value(digits[2], digits[3]) * 60;
            if *sign == b'+' { seconds } else { -seconds }
        }
        _ => return None,
    };
    // Days from 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Reads a message (`now`: the current Unix time in seconds, for an `end` without a `start`).
/// The error says why it is skipped.
pub fn parse_message(payload: &[u8], now: i64) -> Result<Request, String> {
    if payload.len() > MAX_MESSAGE {
        return Err(format!(
            "{} bytes, over the {} KiB a message may have",
            payload.len(),
            MAX_MESSAGE / 1024
        ));
    }
    let json: Json = serde_json::from_slice(payload).map_err(|e| format!("not JSON: {e}"))?;
    let Json::Object(message) = json else {
        return Err("not a JSON object".into());
    };
    let start = match message.get("command") {
        None => true,
        Some(Json::String(c)) if c == "start-recording" => true,
        Some(Json::String(c)) if c == "stop-recording" => false,
        Some(other) => {
            return Err(format!(
                "command {other} is not start-recording or stop-recording"
            ));
        }
    };
    let sensor = match message.get("sensor").and_then(|s| s.get("id")) {
        Some(Json::String(id)) => id.trim().to_owned(),
        Some(Json::Number(n)) => n.to_string(),
        Some(other) => return Err(format!("sensor.id {other} is not a string")),
        None => return Err("no sensor.id".into()),
    };
    if sensor.is_empty() {
        return Err("sensor.id is empty".into());
    }
    if !start {
        return Ok(Request::Stop { sensor });
    }
    let time = |key: &str| -> Result<Option<i64>, String> {
        match message.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(t)) => utc_seconds(t).map(Some).ok_or_else(|| {
                format!("{key} `{t}` is not a time such as 2020-05-18T20:02:00.051Z")
            }),
            Some(other) => Err(format!("{key} {other} is not a time string")),
        }
    };
    let (from, to) = (time("start")?, time("end")?);
    let seconds = match (from, to) {
        (_, None) => 0,
        (Some(from), Some(to)) => to - from,
        (None, Some(to)) => to - now,
    };
    // An end before the start records the default duration, as deepstream-app does.
    let duration = seconds.clamp(0, i64::from(MAX_DURATION)) as u32;
    Ok(Request::Start { sensor, duration })
}

/// The source a message's sensor id names, and its smart record.
pub fn resolve<'t>(
    sub: &Subscription,
    targets: &'t BTreeMap<u32, RecordTarget>,
    sensor: &str,
) -> Result<(u32, &'t RecordTarget), String> {
    let source = match &sub.sensors {
        Some(list) => *list
            .get(sensor)
            .ok_or_else(|| format!("sensor `{sensor}` is not in the sensor-list-file"))?,
        None => match sensor.parse::<u32>() {
            Ok(id) => id,
            Err(_) => {
                // An rsmultiurisrcbin camera is named by its camera id too.
                return targets
                    .iter()
                    .find(|(_, t)| t.camera.as_deref() == Some(sensor))
                    .map(|(id, t)| (*id, t))
                    .ok_or_else(|| {
                        format!(
                            "sensor `{sensor}` is neither a source id nor a camera id (give a \
                             sensor-list-file to name sources)"
                        )
                    });
            }
        },
    };
    let target = targets.get(&source).ok_or_else(|| {
        format!("sensor `{sensor}` is source {source}, which has no smart record (smart-record=0 or no such source)")
    })?;
    Ok((source, target))
}

/// The running consumers: one thread with a small tokio runtime, one task per subscription.
pub struct Consumers {
    stop: watch::Sender<bool>,
    thread: JoinHandle<()>,
}

/// Starts `subs` (none: `None`). Messages act on `pipeline`'s elements from the default main
/// context, which the runner's main loop iterates.
pub fn start(
    subs: &[Subscription],
    targets: &BTreeMap<u32, RecordTarget>,
    pipeline: &gst::Pipeline,
) -> Result<Option<Consumers>, String> {
    if subs.is_empty() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the message consumers' runtime: {e}"))?;
    let (stop, stopped) = watch::channel(false);
    let (subs, targets) = (subs.to_vec(), Arc::new(targets.clone()));
    let pipeline = pipeline.downgrade();
    let thread = std::thread::Builder::new()
        .name("message-consumers".into())
        .spawn(move || {
            runtime.block_on(async move {
                let mut tasks = tokio::task::JoinSet::new();
                for sub in subs {
                    let link = Link {
                        targets: targets.clone(),
                        pipeline: pipeline.clone(),
                    };
                    tasks.spawn(serve(sub, link, stopped.clone()));
                }
                while tasks.join_next().await.is_some() {}
            })
        })
        .map_err(|e| format!("cannot start the message consumers' thread: {e}"))?;
    Ok(Some(Consumers { stop, thread }))
}

impl Consumers {
    /// Disconnects every consumer, waiting at most `limit`; a consumer that does not end in
    /// time is left to end with the process (with a warning).
    pub fn stop(self, limit: Duration) {
        let _ = self.stop.send(true);
        let deadline = Instant::now() + limit;
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        } else {
            eprintln!("** WARN: the message consumers did not stop within {limit:?}");
        }
    }
}

/// What a consumer acts on.
#[derive(Clone)]
struct Link {
    targets: Arc<BTreeMap<u32, RecordTarget>>,
    pipeline: glib::WeakRef<gst::Pipeline>,
}

/// One subscription until `stop` turns true (or its sender is gone).
async fn serve(sub: Subscription, link: Link, mut stop: watch::Receiver<bool>) {
    let mut options = MqttOptions::new(&sub.client_id, &sub.host, sub.port);
    options
        .set_keep_alive(Duration::from_secs(u64::from(sub.keep_alive.max(1))))
        .set_clean_session(true)
        .set_max_packet_size(MAX_PACKET, MAX_MESSAGE);
    // NVIDIA's adapter takes these variables over the file's values.
    let username = std::env::var("USER_MQTT").ok().or(sub.username.clone());
    let password = std::env::var("PASSWORD_MQTT")
        .ok()
        .or(sub.password.as_ref().map(|p| p.0.clone()));
    if let Some(user) = username {
        options.set_credentials(user, password.unwrap_or_default());
    }
    let (client, mut events) = AsyncClient::new(options, 16);
    events
        .network_options
        .set_connection_timeout(CONNECT_TIMEOUT_S);
    let broker = format!("{}:{}", sub.host, sub.port);
    let mut retry = FIRST_RETRY;
    loop {
        let event = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            event = events.poll() => event,
        };
        match event {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                retry = FIRST_RETRY;
                // A clean session forgets subscriptions: subscribe at every connection, all
                // topics in one request (one acknowledgement).
                let filters = sub
                    .topics
                    .iter()
                    .map(|t| SubscribeFilter::new(t.clone(), QoS::AtLeastOnce));
                if let Err(e) = client.try_subscribe_many(filters) {
                    eprintln!(
                        "** WARN: [{}] cannot subscribe to {}: {e}",
                        sub.group,
                        sub.topics.join(", ")
                    );
                }
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                if ack
                    .return_codes
                    .iter()
                    .any(|c| matches!(c, SubscribeReasonCode::Failure))
                {
                    eprintln!(
                        "** WARN: [{}] {broker} refused a subscription to {}",
                        sub.group,
                        sub.topics.join(", ")
                    );
                } else {
                    println!(
                        "** INFO: [{}] subscribed to {} on {broker}",
                        sub.group,
                        sub.topics.join(", ")
                    );
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) => receive(&sub, &link, &p.topic, &p.payload),
            Ok(_) => {}
            Err(e) => {
                eprintln!(
                    "** WARN: [{}] MQTT broker {broker}: {e}; trying again in {retry:?}",
                    sub.group
                );
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => break,
                    _ = tokio::time::sleep(retry) => {}
                }
                retry = (retry * 2).min(MAX_RETRY);
            }
        }
    }
    // A polite goodbye when connected; bounded, since the broker may be gone.
    if client.try_disconnect().is_ok() {
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            while let Ok(event) = events.poll().await {
                if matches!(event, Event::Outgoing(Outgoing::Disconnect)) {
                    break;
                }
            }
        })
        .await;
    }
}

/// Handles one received message: parsed and resolved here, acted on in the main loop.
fn receive(sub: &Subscription, link: &Link, topic: &str, payload: &[u8]) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let resolved = parse_message(payload, now).and_then(|request| {
        let (source, target) = resolve(sub, &link.targets, request.sensor())?;
        Ok((request, source, target.clone()))
    });
    let (request, source, target) = match resolved {
        Ok(r) => r,
        Err(e) => {
            eprintln!("** WARN: [{}] message on {topic} skipped: {e}", sub.group);
            return;
        }
    };
    let group = sub.group.clone();
    let pipeline = link.pipeline.clone();
    glib::MainContext::default().invoke(move || {
        let Some(pipeline) = pipeline.upgrade() else {
            return;
        };
        let what = match &request {
            Request::Start { .. } => "start-recording",
            Request::Stop { .. } => "stop-recording",
        };
        let line = format!(
            "[{group}] {what} for sensor {} (source {source})",
            request.sensor()
        );
        match act(&pipeline, &target, &request) {
            Ok(done) => println!("** INFO: {line}: {done}"),
            Err(e) => eprintln!("** WARN: {line}: {e}"),
        }
    });
}

/// Emits the smart record signal `request` asks for on `target`; says what happened.
fn act(
    pipeline: &gst::Pipeline,
    target: &RecordTarget,
    request: &Request,
) -> Result<String, String> {
    let element = pipeline
        .by_name(&target.element)
        .ok_or_else(|| format!("no element {} in the pipeline", target.element))?;
    let mut args: Vec<glib::Value> = target.camera.iter().map(|c| c.to_value()).collect();
    match request {
        Request::Start { duration, .. } => {
            args.push(duration.to_value());
            let file = emit(&element, "start-record", &args, glib::Type::STRING)?
                .and_then(|v| v.get::<Option<String>>().ok().flatten())
                .ok_or("nothing can be recorded yet (see the source's warning)")?;
            Ok(format!("recording {file}"))
        }
        Request::Stop { .. } => {
            let open = emit(&element, "stop-record", &args, glib::Type::BOOL)?
                .and_then(|v| v.get::<bool>().ok())
                .unwrap_or(false);
            Ok(if open {
                "recording stopped".into()
            } else {
                "no recording was open".into()
            })
        }
    }
}

/// Emits action signal `name` after checking that `element` has it with these argument and
/// return types (a mismatch would abort the process in GLib's bindings).
fn emit(
    element: &gst::Element,
    name: &str,
    args: &[glib::Value],
    returns: glib::Type,
) -> Result<Option<glib::Value>, String> {
    let id = glib::subclass::SignalId::lookup(name, element.type_())
        .ok_or_else(|| format!("{} has no {name} signal", element.name()))?;
    let query = id.query();
    let params: Vec<glib::Type> = query.param_types().iter().map(|t| t.type_()).collect();
    let given: Vec<glib::Type> = args.iter().map(|v| v.type_()).collect();
    if params != given || query.return_type().type_() != returns {
        return Err(format!(
            "{}'s {name} signal takes other arguments than expected",
            element.name()
        ));
    }
    Ok(element.emit_with_values(id, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_stop_and_durations() {
        let start = br#"{"command":"start-recording","start":"2020-05-18T20:02:00.051Z",
            "end":"2020-05-18T20:02:02.851Z","sensor":{"id":" cam-1 "}}"#;
        assert_eq!(
            parse_message(start, 0),
            Ok(Request::Start {
                sensor: "cam-1".into(),
                duration: 2
            })
        );
        // No command is a start; no end is the default duration.
        assert_eq!(
            parse_message(
                br#"{"start":"2020-05-18T20:02:00Z","sensor":{"id":"0"}}"#,
                0
            ),
            Ok(Request::Start {
                sensor: "0".into(),
                duration: 0
            })
        );
        // An end without a start counts from now; an end before the start is the default.
        let now = utc_seconds("2020-05-18T20:00:00Z").unwrap();
        assert_eq!(
            parse_message(br#"{"end":"2020-05-18T20:00:07Z","sensor":{"id":3}}"#, now),
            Ok(Request::Start {
                sensor: "3".into(),
                duration: 7
            })
        );
        assert_eq!(
            parse_message(
                br#"{"start":"2020-05-18T20:00:07Z","end":"2020-05-18T20:00:00Z","sensor":{"id":"a"}}"#,
                now
            ),
            Ok(Request::Start {
                sensor: "a".into(),
                duration: 0
            })
        );
        assert_eq!(
            parse_message(
                br#"{"command":"stop-recording","sensor":{"id":"cam-1"}}"#,
                0
            ),
            Ok(Request::Stop {
                sensor: "cam-1".into()
            })
        );
    }

    #[test]
    fn bad_messages_say_why() {
        let err = |payload: &[u8]| parse_message(payload, 0).unwrap_err();
        assert!(err(b"{\"command\":").starts_with("not JSON"));
        assert!(err(b"\xff\xfe").starts_with("not JSON"));
        assert_eq!(err(b"[1,2]"), "not a JSON object");
        assert!(err(br#"{"command":"reboot","sensor":{"id":"a"}}"#).contains("\"reboot\""));
        assert_eq!(err(br#"{"command":"stop-recording"}"#), "no sensor.id");
        assert_eq!(err(br#"{"sensor":{"id":"  "}}"#), "sensor.id is empty");
        assert!(err(br#"{"sensor":{"id":"a"},"start":"yesterday"}"#).contains("`yesterday`"));
        let mut big = br#"{"sensor":{"id":"a"},"pad":""#.to_vec();
        big.resize(MAX_MESSAGE + 1, b'x');
        assert!(err(&big).contains("over the 64 KiB"), "{}", err(&big));
        // Deep nesting is refused by the parser's depth limit, not by the stack.
        let deep = "[".repeat(60_000);
        assert!(err(deep.as_bytes()).starts_with("not JSON"));
    }

    #[test]
    fn times_are_utc_with_optional_fraction_and_zone() {
        assert_eq!(utc_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(utc_seconds("2020-05-18T20:02:00.051Z"), Some(1_589_832_120));
        assert_eq!(utc_seconds("2020-05-18T20:02:00"), Some(1_589_832_120));
        assert_eq!(
            utc_seconds("2020-05-18T22:02:00+02:00"),
            Some(1_589_832_120)
        );
        assert_eq!(utc_seconds("2020-05-18T18:32:00-0130"), Some(1_589_832_120));
        assert_eq!(utc_seconds("2024-02-29T00:00:00Z"), Some(1_709_164_800));
        for bad in [
            "2023-02-29T00:00:00Z",
            "2020-13-01T00:00:00Z",
            "2020-05-18",
            "2020-05-18T20:02:00.Z",
            "2020-05-18T20:02:00 UTC",
            "２020-05-18T20:02:00Z",
        ] {
            assert_eq!(utc_seconds(bad), None, "{bad}");
        }
    }

    fn sub(sensors: Option<&[(&str, u32)]>) -> Subscription {
        Subscription {
            group: "message-consumer0".into(),
            host: "127.0.0.1".into(),
            port: 1883,
            topics: vec!["c2d".into()],
            client_id: "x".into(),
            username: None,
            password: None,
            keep_alive: 60,
            sensors: sensors.map(|s| s.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()),
        }
    }

    #[test]
    fn sensors_resolve_to_sources_with_smart_record() {
        let targets: BTreeMap<u32, RecordTarget> = [
            (
                0,
                RecordTarget {
                    element: "src0".into(),
                    camera: None,
                },
            ),
            (
                2,
                RecordTarget {
                    element: "src".into(),
                    camera: Some("yard".into()),
                },
            ),
        ]
        .into();
        let by_id = sub(None);
        assert_eq!(resolve(&by_id, &targets, "0").unwrap().1.element, "src0");
        assert_eq!(resolve(&by_id, &targets, "yard").unwrap().0, 2);
        assert!(
            resolve(&by_id, &targets, "1")
                .unwrap_err()
                .contains("no smart record")
        );
        assert!(
            resolve(&by_id, &targets, "door")
                .unwrap_err()
                .contains("neither a source id")
        );
        let listed = sub(Some(&[("HWY_20", 0), ("HWY_21", 1)]));
        assert_eq!(resolve(&listed, &targets, "HWY_20").unwrap().0, 0);
        assert!(
            resolve(&listed, &targets, "0")
                .unwrap_err()
                .contains("not in the sensor-list-file")
        );
    }

    #[test]
    fn conn_strings() {
        assert_eq!(
            endpoint("localhost;1883"),
            Ok(Endpoint {
                host: "localhost".into(),
                port: 1883,
                topic: None
            })
        );
        assert_eq!(
            endpoint(" h ; 8883 ; c2d ").unwrap().topic.as_deref(),
            Some("c2d")
        );
        for bad in [
            "localhost",
            "h;0",
            "h;70000",
            ";1883",
            "<host>;<port>",
            "a;1;b;c",
        ] {
            assert!(endpoint(bad).is_err(), "{bad}");
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fsapp-consumer-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn sensor_lists_and_adapter_configs() {
        let dir = scratch("files");
        let list = dir.join("sensors.txt");
        std::fs::write(
            &list,
            "# NVIDIA's layout\n[sensor0]\nenable=1\ntype=Camera\nid=HWY_20\n\
             location=45.29;-75.83;48.15\n[sensor1]\nenable=0\nid=HWY_21\n[sensor2]\nenable=1\n\
             id=HWY_22\n[place0]\nenable=1\nid=0\n",
        )
        .unwrap();
        let sensors = crate::document::read_sensor_list(&list).unwrap();
        assert_eq!(
            sensors,
            [("HWY_20".to_owned(), 0), ("HWY_22".to_owned(), 2)].into()
        );
        std::fs::write(
            &list,
            "[sensor0]\nenable=1\nid=a\n[sensor1]\nenable=1\nid=a\n",
        )
        .unwrap();
        assert!(
            crate::document::read_sensor_list(&list)
                .unwrap_err()
                .contains("also sensor0's")
        );
        std::fs::write(&list, "[sensorX]\nenable=1\nid=a\n").unwrap();
        assert!(
            crate::document::read_sensor_list(&list)
                .unwrap_err()
                .contains("[sensorX]")
        );
        let yml = dir.join("sensors.yml");
        std::fs::write(&yml, "sensor0:\n  enable: 1\n  id: cam\n").unwrap();
        assert_eq!(
            crate::document::read_sensor_list(&yml).unwrap(),
            [("cam".to_owned(), 0)].into()
        );

        let cfg = dir.join("cfg_mqtt.txt");
        std::fs::write(
            &cfg,
            "[message-broker]\nusername = user\npassword = \"secret\"\nclient-id = uniqueID\n\
             #enable-tls = 1\nkeep-alive = 30\n",
        )
        .unwrap();
        let consumer = Consumer {
            group: "message-consumer0".into(),
            enable: true,
            proto_lib: Some("libnvds_mqtt_proto.so".into()),
            conn_str: Some("127.0.0.1;1883;extra".into()),
            config_file: Some(cfg.clone()),
            sensor_list_file: None,
            topics: vec!["c2d".into()],
        };
        let s = subscription(&consumer, 0).unwrap();
        assert_eq!(s.topics, ["c2d", "extra"]);
        assert_eq!(s.username.as_deref(), Some("user"));
        assert_eq!(s.password, Some(Secret("secret".into())));
        assert!(!format!("{s:?}").contains("secret"));
        assert_eq!((s.client_id.as_str(), s.keep_alive), ("uniqueID", 30));
        std::fs::write(&cfg, "[message-broker]\nenable-tls = 1\n").unwrap();
        let e = subscription(&consumer, 0).unwrap_err();
        assert!(
            e.contains("[message-consumer0] config-file=") && e.contains("TLS is not supported"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
