// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsstreammux`: batches frames of several sources into one buffer.
//!
//! Request pads `sink_%u` take plain raw video (one format for all sources; a `videoconvert`
//! before a pad adapts a source that differs). Each output buffer is a batch (caps
//! `video/x-raw(ferrostream:batch)`) holding at most one frame per source and at most
//! `batch-size` frames. At native size (`width`/`height` 0) the batch references the source
//! buffers, pixels are never copied; otherwise each frame is scaled once to `width` x `height`.
//! The batch's `BatchMeta` records for every frame its source id (the pad index), per-source frame
//! number, PTS and size. A batch's PTS is the running time of its earliest frame, raised where
//! needed so that batch timestamps strictly increase: a batch whose earliest frame is not later
//! than the previous batch (frames of one instant split over batches by `batch-size`, or a late
//! source's frame sent by the timeout) is stamped 1 ms after the previous batch. Two frames with
//! one PTS after `rstiler` would be read as one by encoders and parsers (`h264parse` strips the
//! second one's PTS, and `mp4mux` then stops with "Buffer has no PTS"); 1 ms is the finest step
//! MP4 and Matroska files keep, so the frames also keep distinct times in the file.
//!
//! A batch leaves when every source has contributed a frame (or reached EOS), or when
//! `batched-push-timeout` has passed since the first frame of the batch arrived, so a stalled
//! source does not stall the others. Sources may be added and released while playing: set the
//! source to `NULL`, then release its pad (its queued frames are dropped). From the thread that
//! takes the muxer's output (an `appsink` pull loop, say), block the source's pad with a probe
//! and release the muxer's pad before setting the source to `NULL`: its streaming thread may be
//! waiting in the muxer for that thread's next pull. After a
//! source's last frame a `ferrostream-stream-eos` custom event (see
//! [`ferrostream_core::batch::events`]) tells downstream elements (`rstracker`,
//! `rsstreamdemux`) that it ended. EOS goes downstream when every source is done.
//!
//! `latency-tracking=true` (default off; it may change while playing) measures latency per
//! frame, as DeepStream's latency measurement does: every frame gets a `latency` record whose
//! origin is the moment it reached its sink pad, and every Ferrostream element that has the frame
//! (the muxer itself, `rstrtinfer`, `rsdlainfer`, `rstracker`, `rsanalytics`, `rsosd`,
//! `rstiler`, `rsstreamdemux`, `rsmetaexport`, `rsmsgbroker`) appends its name with its entry and
//! exit times, on the process's monotonic clock in nanoseconds (see
//! [`ferrostream_core::latency`]). The records travel in the JSON export and in the Python
//! package's `FrameMeta.latency`, and feed the Prometheus histograms
//! `ferrostream_component_latency_seconds{component}` (time in each element) and
//! `ferrostream_frame_latency_seconds{component}` (time from the muxer to the element's exit).
//! Off, it costs one check per batch.
//!
//! Metrics (process-wide registry, [`ferrostream_core::metrics::global`], labelled
//! `element="<name>"`, from start to stop): `ferrostream_streammux_batches_total` (the `batches`
//! property), `ferrostream_streammux_batch_frames` (histogram of frames per batch),
//! `ferrostream_streammux_batch_size` (the configured `batch-size`),
//! `ferrostream_streammux_sources` (linked sink pads) and, per `source_id`,
//! `ferrostream_streammux_frames_dropped_total` (frames received and never batched: flushed, or
//! queued on a released pad; their sum is the `frames-dropped` property).
//!
//! ```text
//! gst-launch-1.0 rsstreammux name=mux batch-size=2 batched-push-timeout=40000 \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstiler rows=1 columns=2 \
//!     ! videoconvert ! autovideosink \
//!   filesrc location=vtest.avi ! decodebin ! videoconvert ! video/x-raw,format=I420 ! mux.sink_0 \
//!   videotestsrc num-buffers=100 ! video/x-raw,format=I420 ! mux.sink_1
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;
mod pad;

glib::wrapper! {
    pub struct StreamMux(ObjectSubclass<imp::StreamMux>)
        @extends gst_base::Aggregator, gst::Element, gst::Object;
}

glib::wrapper! {
    /// A sink pad of `rsstreammux`; its `source-id` is the pad index.
    pub struct StreamMuxPad(ObjectSubclass<pad::StreamMuxPad>)
        @extends gst_base::AggregatorPad, gst::Pad, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    StreamMuxPad::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "rsstreammux",
        gst::Rank::NONE,
        StreamMux::static_type(),
    )
}
