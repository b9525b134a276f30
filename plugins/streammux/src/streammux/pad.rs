// SPDX-License-Identifier: MIT OR Apache-2.0
//! The sink pad of `rsstreammux` and the per-source state it carries.

use std::sync::{Arc, Mutex};

use ferrostream_core::batch::SourceStream;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::convert::Scaler;

/// What the muxer knows about one source. Updated from the pad's serialized events, which the
/// aggregator hands over in order with the buffers.
#[derive(Default)]
pub struct SourceState {
    /// The stream as batched (caps and layout, scaled when the muxer has an output size; segment;
    /// stream id), shared by this source's surfaces and replaced when a part of it changes.
    /// Built at the first caps: raw video always sends caps before its segment.
    pub stream: Option<Arc<SourceStream>>,
    /// Layout of the frames as the source sends them.
    pub source_info: Option<gst_video::VideoInfo>,
    /// Where the source's pixels are (system, CUDA or NVMM memory).
    pub memory: ferrostream_core::batch::MemoryKind,
    /// The id of the last stream-start, for the stream built at the next caps.
    pub stream_id: Option<glib::GString>,
    /// Frames batched so far.
    pub frames: u64,
    /// Set when the source's EOS was handled (a stream-eos event is owed or was sent).
    pub ended: bool,
    /// Whether the "other format" warning was posted for this pad.
    pub warned_format: bool,
    /// Scales frames when the muxer has an output size, with the output pool.
    pub scaler: Option<(Scaler, gst::BufferPool)>,
}

impl SourceState {
    /// Layout of the frames as batched.
    pub fn info(&self) -> Option<&gst_video::VideoInfo> {
        self.stream.as_deref().map(|s| &s.info)
    }

    /// Changes one part of the stream description; frames already batched keep the old one.
    pub fn update_stream(&mut self, change: impl FnOnce(&mut SourceStream)) {
        if let Some(stream) = &mut self.stream {
            change(Arc::make_mut(stream));
        }
    }
}

#[derive(Default)]
pub struct StreamMuxPad {
    pub(super) state: Mutex<SourceState>,
}

impl StreamMuxPad {
    /// The source id: the number in the pad name `sink_%u`.
    pub fn source_id(&self) -> u32 {
        let name = self.obj().name();
        name.strip_prefix("sink_")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

#[glib::object_subclass]
impl ObjectSubclass for StreamMuxPad {
    const NAME: &'static str = "GstRsStreamMuxPad";
    type Type = super::StreamMuxPad;
    type ParentType = gst_base::AggregatorPad;
}

impl ObjectImpl for StreamMuxPad {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: std::sync::LazyLock<Vec<glib::ParamSpec>> =
            std::sync::LazyLock::new(|| {
                vec![
                    glib::ParamSpecUInt::builder("source-id")
                        .nick("Source id")
                        .blurb("Source id of this pad's frames in the batch metadata")
                        .read_only()
                        .build(),
                    glib::ParamSpecUInt64::builder("frames")
                        .nick("Frames")
                        .blurb("Frames of this source batched so far")
                        .read_only()
                        .build(),
                ]
            });
        PROPERTIES.as_ref()
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        match pspec.name() {
            "source-id" => self.source_id().to_value(),
            "frames" => self.state.lock().unwrap().frames.to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }
}

impl GstObjectImpl for StreamMuxPad {}
impl PadImpl for StreamMuxPad {}
impl AggregatorPadImpl for StreamMuxPad {}
