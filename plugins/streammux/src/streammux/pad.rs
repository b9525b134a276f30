// SPDX-License-Identifier: MIT OR Apache-2.0
//! The sink pad of `rsstreammux` and the per-source state it carries.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ferrostream_core::batch::SourceStream;
use ferrostream_core::latency::now_ns;
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
    /// Buffers received and neither batched nor skipped (empty gap buffers) yet: frames the
    /// muxer drops when the pad is flushed or released.
    pub pending: u64,
    /// With latency tracking: when each queued buffer arrived (its address, [`now_ns`]), oldest
    /// first.
    arrivals: VecDeque<(usize, u64)>,
}

/// Arrival times kept per pad at most (more than any aggregator queue holds).
const MAX_ARRIVALS: usize = 64;

impl SourceState {
    /// Layout of the frames as batched.
    pub fn info(&self) -> Option<&gst_video::VideoInfo> {
        self.stream.as_deref().map(|s| &s.info)
    }

    /// Notes that `buffer` arrived now.
    fn note_arrival(&mut self, buffer: &gst::BufferRef) {
        if self.arrivals.len() == MAX_ARRIVALS {
            self.arrivals.pop_front();
        }
        self.arrivals
            .push_back((buffer.as_ptr() as usize, now_ns()));
    }

    /// When `buffer` arrived, if that was noted; forgets it and anything noted before it (buffers
    /// leave the pad's queue in order).
    pub fn take_arrival(&mut self, buffer: &gst::BufferRef) -> Option<u64> {
        let address = buffer.as_ptr() as usize;
        let index = self.arrivals.iter().position(|(a, _)| *a == address)?;
        let (_, time) = self.arrivals.drain(..=index).next_back()?;
        Some(time)
    }

    /// Forgets the arrival times (latency tracking stopped, or the queue was flushed).
    pub fn forget_arrivals(&mut self) {
        self.arrivals.clear();
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
    fn constructed(&self) {
        self.parent_constructed();
        // Buffers as they arrive, before the aggregator queues them: for the frames dropped
        // with the queue and for latency tracking's arrival times.
        self.obj().add_probe(
            gst::PadProbeType::BUFFER | gst::PadProbeType::BUFFER_LIST,
            |pad, info| {
                if let Some(pad) = pad.downcast_ref::<super::StreamMuxPad>() {
                    pad.imp().arrived(info);
                }
                gst::PadProbeReturn::Ok
            },
        );
    }

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

impl PadImpl for StreamMuxPad {
    fn linked(&self, peer: &gst::Pad) {
        self.parent_linked(peer);
        if let Some(mux) = self.muxer() {
            mux.imp().count_sources();
        }
    }

    fn unlinked(&self, peer: &gst::Pad) {
        self.parent_unlinked(peer);
        if let Some(mux) = self.muxer() {
            mux.imp().count_sources();
        }
    }
}

impl StreamMuxPad {
    fn muxer(&self) -> Option<super::StreamMux> {
        self.obj().parent().and_downcast::<super::StreamMux>()
    }

    /// Counts the buffers of a probe (they reach the aggregator's queue next), noting their
    /// arrival time when the muxer tracks latency.
    fn arrived(&self, info: &gst::PadProbeInfo) {
        let (single, list) = match &info.data {
            Some(gst::PadProbeData::Buffer(buffer)) => (Some(buffer.as_ref()), None),
            Some(gst::PadProbeData::BufferList(list)) => (None, Some(list.as_ref())),
            _ => return,
        };
        let tracking = self.muxer().is_some_and(|m| m.imp().latency_tracking());
        let mut state = self.state.lock().unwrap();
        let buffers = single
            .into_iter()
            .chain(list.into_iter().flat_map(|l| l.iter()));
        for buffer in buffers {
            state.pending += 1;
            if tracking {
                state.note_arrival(buffer);
            }
        }
    }
}

impl AggregatorPadImpl for StreamMuxPad {
    fn flush(&self, aggregator: &gst_base::Aggregator) -> Result<gst::FlowSuccess, gst::FlowError> {
        // The aggregator dropped the queued buffers when the flush started.
        let dropped = {
            let mut state = self.state.lock().unwrap();
            state.forget_arrivals();
            std::mem::take(&mut state.pending)
        };
        if let Some(mux) = aggregator.downcast_ref::<super::StreamMux>() {
            mux.imp().count_dropped(self.source_id(), dropped);
        }
        self.parent_flush(aggregator)
    }
}
