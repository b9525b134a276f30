// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsstreamdemux`: splits batches back into one stream per source.
//!
//! Request pads `src_%u` (the number is the source id, i.e. the `rsstreammux` sink pad index)
//! carry each source's frames with that frame's metadata only, with the source's own caps,
//! segment and timestamps. A source's `ferrostream-stream-eos` event becomes EOS on its pad; EOS
//! on the batch stream ends every pad. Frames of sources without a requested pad are dropped.
//!
//! ```text
//! gst-launch-1.0 rsstreammux name=mux ! rstrtinfer config-file-path=pipelines/coco_ssd.txt \
//!     ! rsstreamdemux name=demux \
//!   filesrc location=vtest.avi ! decodebin ! videoconvert ! video/x-raw,format=I420 ! mux.sink_0 \
//!   videotestsrc num-buffers=100 ! video/x-raw,format=I420 ! mux.sink_1 \
//!   demux.src_0 ! queue ! rsmetaexport location=cam0.jsonl ! fakesink \
//!   demux.src_1 ! queue ! rsmetaexport location=cam1.jsonl ! fakesink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct StreamDemux(ObjectSubclass<imp::StreamDemux>)
        @extends gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsstreamdemux",
        gst::Rank::NONE,
        StreamDemux::static_type(),
    )
}
