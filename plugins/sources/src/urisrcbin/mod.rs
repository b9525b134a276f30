// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsurisrcbin`: decoded video from a `file://`, `rtsp://` or `http(s)://` URI on one always
//! present `src` pad, for cameras that drop and files that loop.
//!
//! Inside, a `uridecodebin` (video only) feeds the output. When a network source stops sending
//! for `reconnect-interval` seconds, ends, or fails, the bin posts a warning and a
//! `rsurisrcbin-disconnected` element message (`uri`, `reason`, `attempt`), drops the source and
//! builds a new one after a back-off (250 ms, doubling up to `reconnect-backoff-max`), up to
//! `reconnect-attempts` times in a row (-1: forever); then it posts an error. When frames come
//! again it posts `rsurisrcbin-reconnected` (`uri`, `attempts`, `outage-ms`). Downstream sees a
//! new stream-start: `rsstreammux` tells the elements after it (`rstracker`, `rsanalytics`)
//! that this source restarted, so its targets start afresh, and keeps batching the other
//! sources meanwhile (with `batched-push-timeout`). With `file-loop`, a file starts again at
//! its end, its timestamps continuing where they were.
//!
//! A new source has three times `reconnect-interval` (at least 20 s) to give its first frame:
//! on a loaded machine a camera starts slowly, and a slow start is not a lost camera;
//! `initial-reconnect-interval` (seconds, 0: that rule) replaces this allowance. When
//! downstream ends the stream (a frame limit such as `identity eos-after`, a sink's
//! `num-buffers`), or after the bin's own `num-buffers` frames, the source is over for good: it
//! is never reconnected or looped again, and the bin sends the end of stream itself if the
//! source goes quiet without one.
//!
//! `drop-frame-interval` N passes one decoded frame in every N (0 or 1: all): the first of
//! each stream (a new source, a reconnection or a loop starts one) and every Nth after the last
//! one passed. The others are dropped after the decoder (which still decodes them: a
//! predicted frame needs the frames before it), on purpose: they count in neither
//! `ferrostream_source_frames_total` nor the QoS drops, nor in `num-buffers`, which counts the
//! frames the bin gives, but they do show that the source is alive. It may change while
//! PLAYING; the next frame passed then comes N frames after the last one. `rtp-protocol=tcp`
//! has an RTSP camera send its packets in the RTSP connection (rtspsrc's `protocols=tcp`), for
//! networks that lose or block UDP; `auto` lets rtspsrc try UDP first.
//!
//! DeepStream's `[sourceN]` keys: `uri`, `latency` and `drop-frame-interval` are the
//! properties of the same name; `rtsp-reconnect-interval-sec` is `reconnect-interval`,
//! `rtsp-reconnect-attempts` is `reconnect-attempts`, `init-rtsp-reconnect-interval-sec` is
//! `initial-reconnect-interval`, and `select-rtp-protocol` (0: UDP and TCP, 4: TCP only) is
//! `rtp-protocol` (`auto`, `tcp`; it takes DeepStream's numbers 0 and 4 too).
//!
//! The output has the caps the decoder and downstream agree on: with `nvh264dec` (or
//! `nvv4l2decoder`) and a downstream that takes CUDA (or NVMM) memory, such as `rsstreammux`,
//! frames stay on the GPU. Which decoder `uridecodebin` picks follows the elements' ranks;
//! `GST_PLUGIN_FEATURE_RANK=nvh264dec:MAX` makes NVDEC the choice where a software decoder is
//! installed too.
//!
//! **Smart record** (`record-cache` > 0): the bin keeps a ring of the encoded video that
//! reaches its decoder (parsed, not decoded again; see [`crate::record`]) and writes it to a
//! file around a trigger: the `start-record` action signal (duration in seconds, 0:
//! `record-duration`; returns the file name), or `rsmultiurisrcbin`'s REST API and `record-on`
//! events. A file (`record-dir`/`<record-prefix>_<unix ms>_<n>.mp4`, or `.mkv` with
//! `record-container=mkv`) holds from the last keyframe at or before the trigger minus
//! `record-cache` to `duration` after the trigger; a trigger during a recording extends it.
//! Messages: `rsurisrcbin-record-started` (`uri`, `file`, `trigger-pts`, `start-pts`),
//! `rsurisrcbin-record-done` (`uri`, `file`, `start-pts`, `end-pts`, `frames`; times are the
//! stream's timestamps, as frames' PTS in the batch metadata) and `rsurisrcbin-record-failed`
//! (`uri`, `file`, `reason`, with a warning): a failed write (a full disk) ends the recording
//! and removes the partial file, never the stream.
//!
//! **Metrics** (Prometheus, served by `rsmultiurisrcbin` or `rsmetrics`), labelled with the
//! element's name: `ferrostream_source_frames_total`, `ferrostream_source_frames_dropped_total`
//! (QoS drops of its elements), `ferrostream_source_reconnections_total`,
//! `ferrostream_source_state{state=starting|playing|reconnecting|failed|ended}`,
//! `ferrostream_source_fps`, `ferrostream_source_recordings_total`,
//! `ferrostream_source_recording_failures_total`.
//!
//! ```text
//! gst-launch-1.0 rsstreammux name=mux batch-size=2 batched-push-timeout=100000 \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker ! fakesink \
//!   rsurisrcbin uri=rtsp://camera-1/stream reconnect-interval=5 ! videoconvert ! mux.sink_0 \
//!   rsurisrcbin uri=file:///data/vtest.avi file-loop=true ! videoconvert ! mux.sink_1
//! ```

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

mod imp;

pub use imp::{SourceState, SourceStatus};

ferrostream_core::choice_enum! {
    /// How an RTSP camera's packets travel (property `rtp-protocol`; the numbers are
    /// DeepStream's `select-rtp-protocol`).
    #[derive(Default)]
    pub enum RtpProtocol: "GstRsUriSrcBinRtpProtocol" {
        /// Whatever rtspsrc and the camera agree on (UDP first, then TCP).
        #[default]
        Auto = 0 => ("auto", "Auto: UDP or TCP, as rtspsrc negotiates"),
        /// Interleaved in the RTSP connection: no UDP ports to open or lose packets on.
        Tcp = 4 => ("tcp", "TCP: interleaved in the RTSP connection only"),
    }
}

glib::wrapper! {
    pub struct RsUriSrcBin(ObjectSubclass<imp::RsUriSrcBin>)
        @extends gst::Bin, gst::Element, gst::Object,
        @implements gst::ChildProxy;
}

impl RsUriSrcBin {
    /// How the source is doing.
    pub fn status(&self) -> SourceStatus {
        self.imp().status()
    }

    /// Labels the source's metrics carry besides `element`; takes effect at the next start.
    pub fn set_metric_labels(&self, labels: Vec<(String, String)>) {
        self.imp().set_metric_labels(labels)
    }

    /// Starts (or extends) a recording around the stream time `trigger` (the newest frame when
    /// `None`) for `duration` (`record-duration` when `None`); returns the file.
    pub fn start_record(
        &self,
        trigger: Option<gst::ClockTime>,
        duration: Option<gst::ClockTime>,
    ) -> Result<std::path::PathBuf, String> {
        self.imp().start_record(trigger, duration)
    }

    /// Ends the open recording; `false` when none was open.
    pub fn stop_record(&self) -> bool {
        self.imp().stop_record()
    }
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    ferrostream_core::settings::GEnum::<RtpProtocol>::static_type()
        .mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "rsurisrcbin",
        gst::Rank::NONE,
        RsUriSrcBin::static_type(),
    )
}
