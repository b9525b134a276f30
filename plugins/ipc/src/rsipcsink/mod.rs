// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsipcsink`: serves the frames it receives, and their metadata, to `rsipcsrc` consumers in
//! other processes (see the crate documentation).
//!
//! Properties:
//! - `socket-path`: the Unix socket consumers connect to (created owner-only, removed at stop).
//! - `max-buffers` (4): buffers a consumer may hold before it counts as behind.
//! - `leaky` (false): a consumer that is behind skips buffers; otherwise the producer waits for
//!   it, at most `block-timeout` ms (2000), then disconnects it with a warning.
//! - `max-consumers` (8).
//! - `consumers` (read-only): consumers attached now.
//!
//! A consumer that dies releases its buffers (the socket closes); one that sends garbage or is
//! stuck is disconnected with a warning, and the buffers it holds stay untouched until it lets
//! them go or exits; new consumers can attach at any time and start at the next buffer (after
//! the end of the stream, they get the end of stream). A flush does not take buffers back from
//! consumers: their memory is reused only once they are released.
//!
//! A buffer's description, mostly its metadata as JSON, may be up to 4 MiB (about 9,000 tracked
//! detections); a longer one is sent to no consumer, with a warning naming its size.

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct IpcSink(ObjectSubclass<imp::IpcSink>)
        @extends gst_base::BaseSink, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsipcsink",
        gst::Rank::NONE,
        IpcSink::static_type(),
    )
}
