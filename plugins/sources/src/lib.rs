// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream sources: `rsurisrcbin`, one decoded video output for a file, RTSP or HTTP URI,
//! that reconnects cameras which stop sending and loops files on request.

pub mod urisrcbin;

pub fn register(plugin: &gst::Plugin) -> Result<(), gst::glib::BoolError> {
    urisrcbin::register(plugin)
}
