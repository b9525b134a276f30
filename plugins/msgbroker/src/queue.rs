// SPDX-License-Identifier: MIT OR Apache-2.0
//! The delivery queue: every message the element produced and the broker has not acknowledged.
//!
//! A message stays here from the moment it is produced until the broker acknowledges it; sending
//! it (taking it "in flight") does not remove it. When a connection is lost, the messages in
//! flight go back to the front of the queue, in their order, and are sent again: delivery is
//! at least once, and a consumer may see a message twice (it carries a unique id for that).
//!
//! The queue holds at most `capacity` messages, in flight or waiting. When it is full the
//! **newest** message (the one being produced) is dropped and counted. Dropping the newest keeps
//! the dropped count exact (a dropped message was never sent, so it cannot have reached a
//! consumer) and leaves consumers a single gap per outage instead of a stream with holes cut out
//! of its beginning.
//!
//! The queue's counts are Prometheus series ([`QueueMetrics`]); the element's properties read
//! them, so the two never disagree.

use std::collections::VecDeque;
use std::sync::Arc;

use ferrostream_core::metrics::{self, Counter, Gauge, Registry};

use crate::payload::Message;

/// The queue's counts as series of a metrics registry, labelled `element="<name>"`.
#[derive(Debug, Clone)]
pub struct QueueMetrics {
    produced: Counter,
    sent: Counter,
    acknowledged: Counter,
    dropped: Counter,
    resent: Counter,
    /// Messages not yet acknowledged.
    queued: Gauge,
}

impl QueueMetrics {
    /// The series of element `element` in the process-wide registry (the one `/metrics` shows).
    pub fn registered(element: &str) -> Self {
        Self::in_registry(metrics::global(), element)
    }

    /// Series of a registry of their own, which nothing renders (a queue outside an element).
    pub fn detached() -> Self {
        Self::in_registry(&Registry::new(), "")
    }

    fn in_registry(registry: &Registry, element: &str) -> Self {
        let labels = [("element", element)];
        let counter = |name: &str, help: &str| registry.counter(name, help, &labels);
        Self {
            produced: counter(
                "ferrostream_msgbroker_messages_produced_total",
                "Messages made from frames and events",
            ),
            sent: counter(
                "ferrostream_msgbroker_messages_sent_total",
                "Publish attempts, resends included",
            ),
            acknowledged: counter(
                "ferrostream_msgbroker_messages_acknowledged_total",
                "Messages the broker acknowledged",
            ),
            dropped: counter(
                "ferrostream_msgbroker_messages_dropped_total",
                "Messages dropped because the queue was full",
            ),
            resent: counter(
                "ferrostream_msgbroker_messages_resent_total",
                "Messages sent again after a connection was lost before their acknowledgement",
            ),
            queued: registry.gauge(
                "ferrostream_msgbroker_messages_queued",
                "Messages waiting for the broker's acknowledgement",
                &labels,
            ),
        }
    }

    fn counters(&self) -> Counters {
        Counters {
            produced: self.produced.get(),
            sent: self.sent.get(),
            acknowledged: self.acknowledged.get(),
            dropped: self.dropped.get(),
            resent: self.resent.get(),
        }
    }
}

/// Counters of the queue's life, as the element's properties show them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages produced (offered to the queue).
    pub produced: u64,
    /// Publish attempts, resends included.
    pub sent: u64,
    /// Messages the broker acknowledged (each counted once).
    pub acknowledged: u64,
    /// Messages dropped because the queue was full.
    pub dropped: u64,
    /// Messages sent again after a connection was lost before their acknowledgement.
    pub resent: u64,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Push {
    Queued,
    /// Queued, and it ends an episode in which this many messages were dropped (the caller
    /// reports the episode once, with its count).
    QueuedAfterDrops(u64),
    /// The queue was full: the message was dropped. `first_of_episode` is true for the first
    /// drop since messages were last accepted (so the caller can log once, not per message).
    Dropped {
        first_of_episode: bool,
    },
}

struct Entry {
    seq: u64,
    message: Arc<Message>,
    /// Sent at least once before (a resend after a lost connection).
    sent_before: bool,
}

/// The bounded queue of unacknowledged messages.
pub struct DeliveryQueue {
    capacity: usize,
    waiting: VecDeque<Entry>,
    /// Sent, not yet acknowledged, in sending order.
    in_flight: VecDeque<Entry>,
    next_seq: u64,
    metrics: QueueMetrics,
    /// Messages dropped since messages were last accepted (an outage or a slow broker).
    episode_drops: u64,
}

impl DeliveryQueue {
    /// A queue whose counts are `metrics` (which start from zero).
    pub fn new(capacity: usize, metrics: QueueMetrics) -> Self {
        Self {
            capacity: capacity.max(1),
            waiting: VecDeque::new(),
            in_flight: VecDeque::new(),
            next_seq: 0,
            metrics,
            episode_drops: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Messages not yet acknowledged (in flight or waiting).
    pub fn len(&self) -> usize {
        self.waiting.len() + self.in_flight.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn counters(&self) -> Counters {
        self.metrics.counters()
    }

    /// Offers a new message and says whether it was queued.
    pub fn push(&mut self, message: Arc<Message>) -> Push {
        self.metrics.produced.inc();
        if self.len() >= self.capacity {
            self.metrics.dropped.inc();
            self.episode_drops += 1;
            return Push::Dropped {
                first_of_episode: self.episode_drops == 1,
            };
        }
        self.waiting.push_back(Entry {
            seq: self.next_seq,
            message,
            sent_before: false,
        });
        self.next_seq += 1;
        self.metrics.queued.set(self.len() as f64);
        match self.end_episode() {
            Some(n) => Push::QueuedAfterDrops(n),
            None => Push::Queued,
        }
    }

    /// Ends the current drop episode (at EOS or stop), returning its count when messages were dropped in it.
    pub fn end_episode(&mut self) -> Option<u64> {
        let n = std::mem::take(&mut self.episode_drops);
        (n > 0).then_some(n)
    }

    /// Takes the next message to send (it stays queued, in flight, until acknowledged).
    pub fn next_to_send(&mut self) -> Option<(u64, Arc<Message>)> {
        let entry = self.waiting.pop_front()?;
        self.metrics.sent.inc();
        if entry.sent_before {
            self.metrics.resent.inc();
        }
        let out = (entry.seq, entry.message.clone());
        self.in_flight.push_back(Entry {
            sent_before: true,
            ..entry
        });
        Some(out)
    }

    /// The broker acknowledged message `seq`: it leaves the queue. Returns false for a sequence
    /// number not in flight (acknowledged already, or from a connection given up on).
    pub fn acknowledge(&mut self, seq: u64) -> bool {
        let Some(pos) = self.in_flight.iter().position(|e| e.seq == seq) else {
            return false;
        };
        self.in_flight.remove(pos);
        self.metrics.acknowledged.inc();
        self.metrics.queued.set(self.len() as f64);
        true
    }

    /// The connection was lost: messages in flight go back to the front of the queue, in their
    /// order, to be sent again.
    pub fn requeue_in_flight(&mut self) -> usize {
        let n = self.in_flight.len();
        while let Some(entry) = self.in_flight.pop_back() {
            self.waiting.push_front(entry);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(n: u64) -> Arc<Message> {
        Arc::new(Message {
            id: format!("m{n}"),
            source_id: 0,
            kind: crate::payload::MessageKind::Frame,
            topic: "t".into(),
            body: Vec::new(),
        })
    }

    fn ids(q: &mut DeliveryQueue) -> Vec<String> {
        std::iter::from_fn(|| q.next_to_send())
            .map(|(_, m)| m.id.clone())
            .collect()
    }

    #[test]
    fn messages_leave_only_when_acknowledged() {
        let mut q = DeliveryQueue::new(10, QueueMetrics::detached());
        for n in 0..3 {
            assert_eq!(q.push(message(n)), Push::Queued);
        }
        let (a, _) = q.next_to_send().unwrap();
        let (b, _) = q.next_to_send().unwrap();
        assert_eq!((q.len(), q.in_flight()), (3, 2));
        assert!(q.acknowledge(b));
        assert!(!q.acknowledge(b), "a second acknowledgement is ignored");
        assert!(q.acknowledge(a));
        assert_eq!(q.len(), 1);
        let c = q.counters();
        assert_eq!(
            (c.produced, c.sent, c.acknowledged, c.dropped),
            (3, 2, 2, 0)
        );
    }

    #[test]
    fn lost_connection_resends_in_order() {
        let mut q = DeliveryQueue::new(10, QueueMetrics::detached());
        for n in 0..4 {
            q.push(message(n));
        }
        let (first, _) = q.next_to_send().unwrap();
        q.next_to_send().unwrap();
        q.next_to_send().unwrap();
        q.acknowledge(first);
        assert_eq!(q.requeue_in_flight(), 2);
        assert_eq!(ids(&mut q), ["m1", "m2", "m3"]);
        let c = q.counters();
        assert_eq!((c.sent, c.resent), (6, 2));
    }

    #[test]
    fn full_queue_drops_the_newest_and_counts_episodes() {
        let mut q = DeliveryQueue::new(2, QueueMetrics::detached());
        q.push(message(0));
        q.push(message(1));
        assert_eq!(
            q.push(message(2)),
            Push::Dropped {
                first_of_episode: true
            }
        );
        assert_eq!(
            q.push(message(3)),
            Push::Dropped {
                first_of_episode: false
            }
        );
        let (seq, _) = q.next_to_send().unwrap();
        q.acknowledge(seq);
        assert_eq!(q.push(message(4)), Push::QueuedAfterDrops(2));
        assert_eq!(ids(&mut q), ["m1", "m4"]);
        let c = q.counters();
        assert_eq!((c.produced, c.dropped), (5, 2));
        assert_eq!(c.produced - c.dropped, 3);
    }

    #[test]
    fn in_flight_messages_count_against_the_bound() {
        let mut q = DeliveryQueue::new(1, QueueMetrics::detached());
        q.push(message(0));
        q.next_to_send().unwrap();
        assert!(matches!(q.push(message(1)), Push::Dropped { .. }));
        assert_eq!(q.end_episode(), Some(1));
        assert_eq!(q.end_episode(), None);
    }
}
