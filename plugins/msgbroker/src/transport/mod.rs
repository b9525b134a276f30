// SPDX-License-Identifier: MIT OR Apache-2.0
//! Sending: one task on the element's runtime keeps a session with the broker, sends queued
//! messages, acknowledges them in the queue when the broker confirms them, and reconnects with
//! exponential back-off when the session ends.
//!
//! Each protocol module has one `session` function: connect (bounded by the connect timeout),
//! call [`Link::mark_connected`], then send and confirm until the connection fails, returning
//! the reason. Messages in flight when a session ends are sent again by the next one.

pub mod amqp;
pub mod kafka;
pub mod mqtt;
pub mod redis;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::endpoint::{Endpoint, Protocol};
use crate::payload::Message;
use crate::queue::{DeliveryQueue, QueueMetrics};
use crate::tls::TlsMaterial;

/// Messages one session keeps unacknowledged at most.
pub const WINDOW: usize = 64;

/// Everything a session needs to reach the broker.
#[derive(Clone)]
pub struct TransportConfig {
    pub endpoint: Endpoint,
    pub tls: Option<TlsMaterial>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// AMQP exchange the messages are published to (the topic is the routing key).
    pub exchange: String,
    /// Redis: trim streams to about this many entries (0: no trimming).
    pub stream_max_length: u64,
    /// MQTT client id / Kafka client.id.
    pub client_id: String,
    pub connect_timeout: Duration,
}

impl TransportConfig {
    /// The broker as named in messages and warnings.
    pub fn broker_url(&self) -> String {
        self.endpoint.url(self.tls.is_some())
    }

    /// Checks what can be checked without connecting (Kafka's client configuration).
    pub fn validate(&self) -> Result<(), String> {
        match self.endpoint.protocol {
            Protocol::Kafka => kafka::validate(self),
            _ => Ok(()),
        }
    }
}

/// What the sending side tells the element.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// Connected for the first time.
    Connected { broker: String },
    /// Connected again after a disconnection.
    Reconnected { broker: String, queued: usize },
    /// Lost the connection, or could not connect.
    Disconnected {
        broker: String,
        reason: String,
        queued: usize,
    },
}

/// Reconnection delays: doubled after each failed attempt, from `min` up to `max`.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub min: Duration,
    pub max: Duration,
}

/// State shared by the element (producing) and the sending task.
pub struct Link {
    pub queue: Mutex<DeliveryQueue>,
    /// Woken when a message is queued.
    pub wake: Notify,
    connected: AtomicBool,
    ever_connected: AtomicBool,
    shutdown: watch::Sender<bool>,
    broker: String,
    /// Why the last session ended (or could not start).
    last_error: Mutex<Option<String>>,
    notices: Box<dyn Fn(Notice) + Send + Sync>,
}

impl Link {
    pub fn new(
        queue_size: usize,
        metrics: QueueMetrics,
        broker: String,
        notices: Box<dyn Fn(Notice) + Send + Sync>,
    ) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::new(DeliveryQueue::new(queue_size, metrics)),
            wake: Notify::new(),
            connected: AtomicBool::new(false),
            ever_connected: AtomicBool::new(false),
            shutdown: watch::channel(false).0,
            broker,
            last_error: Mutex::new(None),
            notices,
        })
    }

    pub fn broker(&self) -> &str {
        &self.broker
    }

    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    pub fn ever_connected(&self) -> bool {
        self.ever_connected.load(Ordering::SeqCst)
    }

    /// Why the last session ended, if one did.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().unwrap().clone()
    }

    /// Asks the sending task to stop.
    pub fn shut_down(&self) {
        self.shutdown.send_replace(true);
        self.wake.notify_one();
    }

    /// A session finished its handshake.
    pub fn mark_connected(&self) {
        self.connected.store(true, Ordering::SeqCst);
        let broker = self.broker.clone();
        if self.ever_connected.swap(true, Ordering::SeqCst) {
            let queued = self.queue.lock().unwrap().len();
            (self.notices)(Notice::Reconnected { broker, queued });
        } else {
            (self.notices)(Notice::Connected { broker });
        }
    }

    /// The next message to send, when fewer than `window` are in flight.
    pub fn next_message(&self, window: usize) -> Option<(u64, Arc<Message>)> {
        let mut queue = self.queue.lock().unwrap();
        if queue.in_flight() >= window {
            return None;
        }
        queue.next_to_send()
    }

    pub fn acknowledge(&self, seq: u64) {
        self.queue.lock().unwrap().acknowledge(seq);
    }
}

async fn session(config: &TransportConfig, link: &Link) -> Result<(), String> {
    match config.endpoint.protocol {
        Protocol::Mqtt => mqtt::session(config, link).await,
        Protocol::Amqp => amqp::session(config, link).await,
        Protocol::Redis => redis::session(config, link).await,
        Protocol::Kafka => kafka::session(config, link).await,
    }
}

/// Keeps sessions going until [`Link::shut_down`].
pub async fn run(config: TransportConfig, link: Arc<Link>, backoff: Backoff) {
    let mut shutdown = link.shutdown.subscribe();
    let mut delay = backoff.min;
    let mut failure_reported = false;
    loop {
        let result = tokio::select! {
            r = session(&config, &link) => r,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        let reason = match result {
            Ok(()) => "the connection was closed".to_string(),
            Err(e) => e,
        };
        *link.last_error.lock().unwrap() = Some(reason.clone());
        let queued = {
            let mut queue = link.queue.lock().unwrap();
            queue.requeue_in_flight();
            queue.len()
        };
        if link.connected.swap(false, Ordering::SeqCst) {
            // A working connection broke: report it, and retry soon.
            delay = backoff.min;
            failure_reported = true;
            (link.notices)(Notice::Disconnected {
                broker: link.broker.clone(),
                reason,
                queued,
            });
        } else if !failure_reported {
            // The first attempt (or the first after a report) failed: say so once per outage.
            failure_reported = true;
            (link.notices)(Notice::Disconnected {
                broker: link.broker.clone(),
                reason,
                queued,
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        delay = (delay * 2).min(backoff.max).max(backoff.min);
    }
}

/// Percent-encodes `s` for the user-info part of a URL.
pub(crate) fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Waits for the next wake-up, or `idle` at most.
pub(crate) async fn idle(link: &Link, idle: Duration) {
    tokio::select! {
        _ = link.wake.notified() => {}
        _ = tokio::time::sleep(idle) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoding_of_credentials() {
        assert_eq!(url_encode("guest"), "guest");
        assert_eq!(url_encode("p@ss:w/rd"), "p%40ss%3Aw%2Frd");
    }
}
