// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsmetaexport`: writes the analytics metadata of every frame as one line of JSON.
//!
//! A pass-through element: buffers leave unchanged. Each frame of a buffer's batch becomes one
//! JSON object (schema in [`ferrostream_core::json`]) on its own line, flushed per frame, to `location` or to
//! standard output when `location` is unset. Frames without metadata are written with an empty
//! object list, so the output always has one line per frame. With `rsstreammux
//! latency-tracking=true` the element records its own entry and exit in each frame's `latency`
//! before writing, so every line carries the frame's whole walk up to and including the export.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt \
//!     ! rsmetaexport location=detections.jsonl ! fakesink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct MetaExport(ObjectSubclass<imp::MetaExport>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsmetaexport",
        gst::Rank::NONE,
        MetaExport::static_type(),
    )
}
