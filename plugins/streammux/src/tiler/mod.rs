// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstiler`: composes the frames of a batch into one grid frame.
//!
//! Source `n` (the `rsstreammux` pad index) takes tile `n`, row by row, in a `rows` x `columns`
//! grid of a `width` x `height` output frame; each frame is scaled into its tile keeping its
//! aspect ratio, centred on black. A tile keeps its last frame while its source has no frame in
//! the batch, and stays black until its source's first frame. The output carries one frame of
//! metadata whose objects are those of every tile, with boxes mapped into output pixels (and a
//! `source-id` attribute), so that `rsosd` after the tiler draws them in the right place.
//! `rsanalytics` results are carried over the same way: shapes mapped into their tile, and
//! every region and line label given its camera, ` (cam N)`. With `rsstreammux
//! latency-tracking=true` the output frame carries the latency record of the batch's oldest
//! frame (the earliest to reach the muxer), with the tiler appended.
//!
//! ```text
//! gst-launch-1.0 rsstreammux name=mux ! rstrtinfer config-file-path=pipelines/coco_ssd.txt \
//!     ! rstiler rows=1 columns=2 width=1280 height=480 ! videoconvert ! autovideosink \
//!   filesrc location=vtest.avi ! decodebin ! videoconvert ! video/x-raw,format=I420 ! mux.sink_0 \
//!   videotestsrc ! video/x-raw,format=I420 ! mux.sink_1
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;
mod layout;

glib::wrapper! {
    pub struct Tiler(ObjectSubclass<imp::Tiler>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rstiler",
        gst::Rank::NONE,
        Tiler::static_type(),
    )
}
