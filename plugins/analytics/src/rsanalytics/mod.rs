// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsanalytics`: regions of interest, line crossing, overcrowding and direction detection on
//! tracked objects, configured like DeepStream's nvdsanalytics.
//!
//! Put it after `rstracker` (line crossing and direction follow tracker ids; regions and
//! overcrowding work on any objects). It works on single streams and on `rsstreammux` batches,
//! with rules per source. Rules come from an nvdsanalytics configuration file
//! (`config-file-path`, DeepStream's INI format as it is: `[property]`,
//! `[roi-filtering-stream-N]`, `[overcrowding-stream-N]`, `[line-crossing-stream-N]`,
//! `[direction-detection-stream-N]`; see [`crate::config`]), and from properties that apply to
//! every stream (`roi`, `overcrowding`, `line-crossing`, `direction`: `label=x1;y1;...` items
//! separated by `|`). Coordinates are in `config-width` x `config-height` when those are set,
//! scaled to each stream's frame size, else in frame pixels.
//!
//! Results go into the analytics metadata (and rsmetaexport's JSON): per frame the objects in
//! each region, each overcrowding region's count and state, each line's crossings in this frame
//! and since the start (forward and backward, and per class), the objects per class and the
//! shapes for `rsosd` to draw; per object the regions it is in, the lines it crossed in this
//! frame and its direction. Crossings and crowding changes are also posted as element messages
//! (`post-messages`):
//!
//! - `rsanalytics-line-crossing`: `source-id`, `frame-num`, `pts`, `line`, `direction`
//!   (`forward`/`backward`), `object-id`, `class-id`, `forward-total`, `backward-total`;
//! - `rsanalytics-overcrowding`: `source-id`, `frame-num`, `pts`, `region`, `crowded`, `count`,
//!   `threshold`.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker \
//!     ! rsanalytics config-file-path=pipelines/analytics_vtest.txt \
//!     ! rsosd ! videoconvert ! autovideosink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct RsAnalytics(ObjectSubclass<imp::RsAnalytics>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsanalytics",
        gst::Rank::NONE,
        RsAnalytics::static_type(),
    )
}
