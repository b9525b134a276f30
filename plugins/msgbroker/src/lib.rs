// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream event export: the `rsmsgbroker` element sends frame metadata and object events
//! (appeared, left, line crossed) to a message broker (MQTT, AMQP 0-9-1, Redis Streams, Kafka)
//! with at-least-once delivery. See `docs/EVENTS.md` for the payloads and guarantees.

pub mod endpoint;
pub mod events;
pub mod payload;
pub mod queue;
pub mod rsmsgbroker;
pub mod tls;
pub mod topic;
pub mod transport;

use gst::glib;

/// Registers `rsmsgbroker`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    rsmsgbroker::register(plugin)
}
