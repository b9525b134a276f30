// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsmetrics`: the process's Prometheus metrics and health probes over HTTP, for pipelines
//! without `rsmultiurisrcbin` (which serves the same on its REST port).
//!
//! An element without pads: put it anywhere in the pipeline. From READY to NULL it serves, on
//! threads of its own, `GET /metrics` (every Ferrostream element's series: sources, muxer,
//! inference, message broker, per-component latency; `process_resident_memory_bytes`),
//! `GET /api/v1/health/live` (200 while the element exists) and `GET /api/v1/health/ready`
//! (200 once the pipeline is PLAYING, else 503; also `/live` and `/ready`). With `token`, every
//! request needs `Authorization: Bearer <token>`.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! fakesink \
//!   rsmetrics port=9100
//! curl http://127.0.0.1:9100/metrics
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct RsMetrics(ObjectSubclass<imp::RsMetrics>) @extends gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsmetrics",
        gst::Rank::NONE,
        RsMetrics::static_type(),
    )
}
