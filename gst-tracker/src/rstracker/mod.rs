// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstracker`: multi-object tracking over the objects in the analytics metadata.
//!
//! Reads the objects a detector (`rstrtinfer`) attached, associates them with targets per source
//! (IoU, SORT or ByteTrack), and writes back the target id (`object_id`, unique across sources),
//! the tracker's smoothed box, its confidence and age. Targets that lose their detection are
//! predicted and reported as shadows for `max-shadow-age` frames; the ids that end in a frame
//! are listed in that frame's `terminated_ids`. Frames that no detector processed (rstrtinfer's
//! `interval`) are predicted from the motion model. Objects not (yet) tracked, e.g. during
//! `probation-age`, keep `object_id` unset.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker \
//!     ! rsmetaexport location=tracks.jsonl ! fakesink
//! ```
//!
//! `config-file-path` takes rstracker's TOML (`pipelines/tracker.toml`) or a DeepStream
//! NvMultiObjectTracker configuration, the YAML that `nvtracker` takes as `ll-config-file`; its
//! keys map onto the properties (`probationAge`, `maxShadowTrackingAge`,
//! `minMatchingScore4Iou`, ...) and its modules choose the algorithm (IOU: `iou`; NvSORT, NvDCF,
//! NvDeepSORT: `bytetrack`, Kalman-predicted). A warning names the modules that are not run
//! here (NvDCF's visual tracker, the ReID network, 3D and multi-view tracking):
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt \
//!     ! rstracker config-file-path=config_tracker_NvDCF_perf.yml \
//!     ! rsmetaexport location=tracks.jsonl ! fakesink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct RsTracker(ObjectSubclass<imp::RsTracker>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    ferrostream_core::settings::GEnum::<crate::tracker::Algorithm>::static_type()
        .mark_as_plugin_api(gst::PluginAPIFlags::empty());
    ferrostream_core::settings::GEnum::<crate::tracker::Matcher>::static_type()
        .mark_as_plugin_api(gst::PluginAPIFlags::empty());
    ferrostream_core::settings::GEnum::<crate::kalman::NoiseModel>::static_type()
        .mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "rstracker",
        gst::Rank::NONE,
        RsTracker::static_type(),
    )
}
