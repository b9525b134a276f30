// SPDX-License-Identifier: MIT OR Apache-2.0
//! The pixels of a batch's frames: each frame's [`Surface`] is a source buffer the batch keeps
//! alive, with the [`SourceStream`] it belongs to. Both the batch (`crate::batch`) and its
//! metadata (`crate::meta`) refer to it.

use std::sync::Arc;

use gst::glib;

/// A source's stream as the muxer last saw it: what a demuxer needs to reproduce it.
#[derive(Debug, Clone)]
pub struct SourceStream {
    /// The source id, i.e. the muxer's sink pad index.
    pub source_id: u32,
    /// The source's caps (plain `video/x-raw`).
    pub caps: gst::Caps,
    /// The caps, parsed.
    pub info: gst_video::VideoInfo,
    /// The source's segment: the frames keep their own timestamps.
    pub segment: gst::FormattedSegment<gst::ClockTime>,
    /// The source's stream id, from its `stream-start`.
    pub stream_id: Option<glib::GString>,
}

/// The pixels of one frame of a batch: a source buffer kept alive by the batch, and the stream it
/// belongs to (shared by the frames of one source until its caps or segment change).
#[derive(Debug, Clone)]
pub struct Surface {
    pub buffer: gst::Buffer,
    pub stream: Arc<SourceStream>,
}

impl Surface {
    /// The layout of the surface's pixels.
    pub fn info(&self) -> &gst_video::VideoInfo {
        &self.stream.info
    }
}
