// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream sources and operations: `rsurisrcbin`, one decoded video output for a file,
//! RTSP or HTTP URI, that reconnects cameras which stop sending, loops files on request and
//! records around events (smart record); `rsmultiurisrcbin`, many of them batched and managed
//! over DeepStream's REST API with health and Prometheus metrics; `rsmetrics`, the metrics and
//! health endpoints on their own.

pub mod metrics;
pub mod multiurisrcbin;
pub mod record;
pub mod urisrcbin;

pub fn register(plugin: &gst::Plugin) -> Result<(), gst::glib::BoolError> {
    urisrcbin::register(plugin)?;
    multiurisrcbin::register(plugin)?;
    metrics::register(plugin)
}
