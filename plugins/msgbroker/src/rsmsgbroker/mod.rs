// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsmsgbroker`: sends frame metadata and object events to a message broker.
//!
//! A pass-through element (`BaseTransform`, in place): buffers leave unchanged and on time. For
//! each frame of a buffer's batch it makes a frame message (`payload=frames`, the JSON that
//! `rsmetaexport` writes), object events (`payload=events`: an object appeared, left, crossed a
//! counting line), or both, in Ferrostream's schema or DeepStream's minimal schema
//! (`schema=deepstream-minimal`). Messages go to MQTT (QoS 1), AMQP 0-9-1 (publisher
//! confirms), Redis Streams (XADD) or Kafka, with at-least-once delivery: a message leaves the
//! element's bounded queue only when the broker has acknowledged it. Payloads, guarantees and
//! the bus messages are described in `docs/EVENTS.md`.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker \
//!     ! rsanalytics config-file-path=pipelines/analytics_vtest.txt \
//!     ! rsmsgbroker protocol=mqtt server=127.0.0.1:1883 payload=both \
//!         topic="ferrostream/{source-id}/{event}" ! fakesink
//! ```
//!
//! Why one element where DeepStream has two (`nvmsgconv` making payloads, `nvmsgbroker`
//! sending them): the conversion keeps state per source (which tracker ids are open, to report
//! an object appearing and leaving) that must see the same frames, stream events and EOS as the
//! sending; both share one queue and one set of counters, so `messages-dropped` and the warnings
//! speak of the same messages a consumer receives; and a pass-through element sits anywhere in a
//! pipeline without a `tee`. Sending happens on the element's own thread, so a slow or absent
//! broker never blocks the stream: the queue fills and then drops (and says so) instead.
//!
//! The queue's counters are Prometheus series of the process-wide registry
//! (`ferrostream_core::metrics::global()`), labelled `element="<name>"`, from start to stop; the
//! `messages-*` properties read them: `ferrostream_msgbroker_messages_produced_total`,
//! `_sent_total`, `_acknowledged_total`, `_dropped_total`, `_resent_total`, and the gauge
//! `ferrostream_msgbroker_messages_queued`. With `rsstreammux latency-tracking=true` the element
//! records its latency in each frame before making the frame's messages, so frame payloads carry
//! it.

use gst::glib;
use gst::prelude::*;

mod imp;

pub use crate::endpoint::Protocol;
pub use crate::payload::Schema;

ferrostream_core::choice_enum! {
    /// Which messages the element sends.
    #[derive(Default)]
    pub enum Payload: "GstRsMsgBrokerPayload" {
        /// One message per frame.
        #[default]
        Frames = 0 => ("frames", "One message per frame"),
        /// One message per object event (appeared, left, line crossed).
        Events = 1 => ("events", "One message per object event"),
        /// Both.
        Both = 2 => ("both", "Frames and object events"),
    }
}

impl Payload {
    pub fn frames(self) -> bool {
        matches!(self, Payload::Frames | Payload::Both)
    }

    pub fn events(self) -> bool {
        matches!(self, Payload::Events | Payload::Both)
    }
}

glib::wrapper! {
    pub struct MsgBroker(ObjectSubclass<imp::MsgBroker>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    use ferrostream_core::settings::GEnum;
    GEnum::<Protocol>::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    GEnum::<Schema>::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    GEnum::<Payload>::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "rsmsgbroker",
        gst::Rank::NONE,
        MsgBroker::static_type(),
    )
}
