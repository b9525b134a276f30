// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use ferrostream_core::batch::{self, SourceStream, events};
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::{Batch, BatchMeta};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsstreamdemux",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream stream demuxer"),
    )
});

/// One requested output and what it has told downstream so far.
struct Output {
    pad: gst::Pad,
    /// The stream whose stream-start, caps and segment went out last.
    sent: Option<Arc<SourceStream>>,
    eos: bool,
}

impl Output {
    /// Sends the sticky events that describe `stream` where they differ from what was sent.
    fn announce(&mut self, stream: &Arc<SourceStream>, sinkpad: &gst::Pad) {
        if let Some(sent) = &self.sent
            && Arc::ptr_eq(sent, stream)
        {
            return;
        }
        let previous = self.sent.replace(stream.clone());
        let id_changed = previous
            .as_ref()
            .is_none_or(|p| p.stream_id != stream.stream_id);
        if id_changed || self.eos {
            self.eos = false;
            let id = match &stream.stream_id {
                Some(id) => id.to_string(),
                None => fallback_stream_id(sinkpad, stream.source_id),
            };
            self.pad
                .push_event(gst::event::StreamStart::builder(&id).build());
        }
        if previous.as_ref().is_none_or(|p| p.caps != stream.caps) || id_changed {
            self.pad.push_event(gst::event::Caps::new(&stream.caps));
        }
        if previous
            .as_ref()
            .is_none_or(|p| p.segment != stream.segment)
            || id_changed
        {
            self.pad
                .push_event(gst::event::Segment::new(stream.segment.upcast_ref()));
        }
    }
}

/// A stream id for a source whose own is unknown: the batch stream's, plus the source id.
fn fallback_stream_id(sinkpad: &gst::Pad, source_id: u32) -> String {
    format!(
        "{}/{source_id}",
        sinkpad.stream_id().as_deref().unwrap_or_default()
    )
}

#[derive(Default)]
struct State {
    outputs: BTreeMap<u32, Output>,
    /// Frames of sources without a requested pad.
    dropped: u64,
    /// From READY to PAUSED until back to READY.
    latency: Option<Arc<LatencyRecorder>>,
}

pub struct StreamDemux {
    sinkpad: gst::Pad,
    state: Mutex<State>,
    flow: Mutex<gst_base::UniqueFlowCombiner>,
}

impl StreamDemux {
    fn chain(&self, mut buffer: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry = now_ns();
        let (batch, surfaces) = {
            let buffer = buffer.make_mut();
            let Some(mut meta) = buffer.meta_mut::<BatchMeta>() else {
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Format,
                    ("A batch without batch metadata (was it made by rsstreammux?)")
                );
                return Err(gst::FlowError::Error);
            };
            (
                std::mem::take(meta.batch_mut()),
                std::mem::take(meta.surfaces_mut()),
            )
        };
        let mut surfaces: Vec<Option<batch::Surface>> = surfaces.into_iter().map(Some).collect();
        let mut result = Ok(gst::FlowSuccess::Ok);
        for mut frame in batch.frames {
            let Some(surface) = surfaces
                .get_mut(frame.surface_index as usize)
                .and_then(Option::take)
            else {
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Format,
                    (
                        "Frame of source {} names surface {}, which the batch lacks",
                        frame.source_id,
                        frame.surface_index
                    )
                );
                return Err(gst::FlowError::Error);
            };
            let (pad, latency) = {
                let mut state = self.state.lock().unwrap();
                let latency = frame.latency.as_ref().and_then(|_| state.latency.clone());
                match state.outputs.get_mut(&frame.source_id) {
                    Some(output) => {
                        output.announce(&surface.stream, &self.sinkpad);
                        (output.pad.clone(), latency)
                    }
                    None => {
                        state.dropped += 1;
                        gst::trace!(CAT, imp = self, "no pad for source {}", frame.source_id);
                        continue;
                    }
                }
            };
            let mut out = surface.buffer;
            frame.surface_index = 0;
            let mut single = Batch::single(frame);
            if let Some(recorder) = latency {
                recorder.record(&mut single, entry);
            }
            BatchMeta::add(out.make_mut(), single);
            let pushed = pad.push(out);
            let combined = self.flow.lock().unwrap().update_pad_flow(&pad, pushed);
            if combined.is_err() {
                result = combined;
            }
        }
        result
    }

    fn sink_event(&self, pad: &gst::Pad, event: gst::Event) -> bool {
        if let Some(source_id) = events::parse_stream_eos(&event) {
            let pad = {
                let mut state = self.state.lock().unwrap();
                state.outputs.get_mut(&source_id).and_then(|o| {
                    (!o.eos && o.sent.is_some()).then(|| {
                        o.eos = true;
                        o.pad.clone()
                    })
                })
            };
            if let Some(pad) = pad {
                gst::debug!(CAT, imp = self, "source {source_id} ended");
                pad.push_event(gst::event::Eos::new());
            }
            return true;
        }
        match event.view() {
            // Each output gets its source's own stream-start, caps and segment.
            gst::EventView::StreamStart(_)
            | gst::EventView::Caps(_)
            | gst::EventView::Segment(_) => true,
            gst::EventView::Eos(_) => {
                let pads: Vec<(u32, gst::Pad, bool)> = {
                    let mut state = self.state.lock().unwrap();
                    if state.dropped > 0 {
                        gst::info!(
                            CAT,
                            imp = self,
                            "dropped {} frames of sources without a pad",
                            state.dropped
                        );
                    }
                    state
                        .outputs
                        .iter_mut()
                        .filter_map(|(&id, o)| {
                            (!std::mem::replace(&mut o.eos, true))
                                .then(|| (id, o.pad.clone(), o.sent.is_some()))
                        })
                        .collect()
                };
                for (source_id, p, started) in pads {
                    // A pad that never carried a frame still needs a stream before its EOS.
                    if !started {
                        let id = fallback_stream_id(&self.sinkpad, source_id);
                        p.push_event(gst::event::StreamStart::builder(&id).build());
                    }
                    p.push_event(event.clone());
                }
                true
            }
            gst::EventView::FlushStop(_) => {
                self.flow.lock().unwrap().reset();
                let mut state = self.state.lock().unwrap();
                for o in state.outputs.values_mut() {
                    o.eos = false;
                }
                drop(state);
                gst::Pad::event_default(pad, Some(&*self.obj()), event)
            }
            _ => gst::Pad::event_default(pad, Some(&*self.obj()), event),
        }
    }

    fn src_query(&self, pad: &gst::Pad, query: &mut gst::QueryRef) -> bool {
        if let gst::QueryViewMut::Caps(q) = query.view_mut() {
            let state = self.state.lock().unwrap();
            let caps = state
                .outputs
                .values()
                .find(|o| &o.pad == pad)
                .and_then(|o| o.sent.as_ref().map(|s| s.caps.clone()))
                .unwrap_or_else(|| pad.pad_template_caps());
            drop(state);
            let caps = match q.filter() {
                Some(f) => f.intersect_with_mode(&caps, gst::CapsIntersectMode::First),
                None => caps,
            };
            q.set_result(&caps);
            return true;
        }
        gst::Pad::query_default(pad, Some(&*self.obj()), query)
    }
}

#[glib::object_subclass]
impl ObjectSubclass for StreamDemux {
    const NAME: &'static str = "GstRsStreamDemux";
    type Type = super::StreamDemux;
    type ParentType = gst::Element;

    fn with_class(klass: &Self::Class) -> Self {
        let templ = klass.pad_template("sink").expect("sink template");
        let sinkpad = gst::Pad::builder_from_template(&templ)
            .chain_function(|_, parent, buffer| {
                StreamDemux::catch_panic_pad_function(
                    parent,
                    || Err(gst::FlowError::Error),
                    |imp| imp.chain(buffer),
                )
            })
            .event_function(|pad, parent, event| {
                StreamDemux::catch_panic_pad_function(
                    parent,
                    || false,
                    |imp| imp.sink_event(pad, event),
                )
            })
            .build();
        Self {
            sinkpad,
            state: Mutex::new(State::default()),
            flow: Mutex::new(gst_base::UniqueFlowCombiner::new()),
        }
    }
}

impl ObjectImpl for StreamDemux {
    fn constructed(&self) {
        self.parent_constructed();
        self.obj()
            .add_pad(&self.sinkpad)
            .expect("adding the sink pad");
    }
}

impl GstObjectImpl for StreamDemux {}

impl ElementImpl for StreamDemux {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream stream demuxer",
                "Demuxer/Video/Analytics",
                "Splits batches into one stream per source, each frame with its own metadata",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![
                gst::PadTemplate::new(
                    "sink",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    &batch::any_batch_caps(),
                )
                .expect("valid pad template"),
                gst::PadTemplate::new(
                    "src_%u",
                    gst::PadDirection::Src,
                    gst::PadPresence::Request,
                    &gst_video::VideoCapsBuilder::new().build(),
                )
                .expect("valid pad template"),
            ]
        });
        PAD_TEMPLATES.as_ref()
    }

    fn request_new_pad(
        &self,
        templ: &gst::PadTemplate,
        name: Option<&str>,
        _caps: Option<&gst::Caps>,
    ) -> Option<gst::Pad> {
        let mut state = self.state.lock().unwrap();
        let source_id = match name {
            Some(n) => match n.strip_prefix("src_").and_then(|n| n.parse::<u32>().ok()) {
                Some(id) => id,
                None => {
                    gst::error!(CAT, imp = self, "pad name {n} is not src_<source id>");
                    return None;
                }
            },
            None => (0..).find(|id| !state.outputs.contains_key(id))?,
        };
        if state.outputs.contains_key(&source_id) {
            gst::error!(CAT, imp = self, "src_{source_id} exists already");
            return None;
        }
        let pad = gst::Pad::builder_from_template(templ)
            .name(format!("src_{source_id}"))
            .query_function(|pad, parent, query| {
                StreamDemux::catch_panic_pad_function(
                    parent,
                    || false,
                    |imp| imp.src_query(pad, query),
                )
            })
            .build();
        state.outputs.insert(
            source_id,
            Output {
                pad: pad.clone(),
                sent: None,
                eos: false,
            },
        );
        drop(state);
        pad.set_active(true).ok()?;
        self.flow.lock().unwrap().add_pad(&pad);
        self.obj().add_pad(&pad).ok()?;
        Some(pad)
    }

    fn release_pad(&self, pad: &gst::Pad) {
        self.state
            .lock()
            .unwrap()
            .outputs
            .retain(|_, o| &o.pad != pad);
        self.flow.lock().unwrap().remove_pad(pad);
        let _ = pad.set_active(false);
        let _ = self.obj().remove_pad(pad);
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::ReadyToPaused {
            self.state.lock().unwrap().latency =
                Some(Arc::new(LatencyRecorder::new(self.obj().name())));
        }
        let result = self.parent_change_state(transition)?;
        if transition == gst::StateChange::PausedToReady {
            let mut state = self.state.lock().unwrap();
            state.dropped = 0;
            state.latency = None;
            for o in state.outputs.values_mut() {
                o.sent = None;
                o.eos = false;
            }
            drop(state);
            self.flow.lock().unwrap().reset();
        }
        Ok(result)
    }
}
