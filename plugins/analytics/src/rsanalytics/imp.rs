// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex};

use ferrostream_core::BatchMeta;
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::settings::Props;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::config::{self, AnalyticsConfig, SETTINGS};
use crate::rules::{Analyzer, Event};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsanalytics",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream analytics on tracked objects"),
    )
});

/// The configuration file (if any) with the properties set on the element over its
/// `[property]` keys and the rule properties added for every stream, checked.
fn resolve(props: &Props<config::Settings>) -> Result<(config::Settings, Vec<String>), String> {
    let (file, warnings) = props.read_file(config::Settings::default, config::Settings::load)?;
    let mut settings = SETTINGS.resolve(file, props)?;
    let property_rules = settings.rules.rules()?;
    settings.config.all_streams.extend(property_rules);
    let c: &AnalyticsConfig = &settings.config;
    if (c.config_width == 0) != (c.config_height == 0) {
        return Err("config-width and config-height are set together (or neither)".into());
    }
    Ok((settings, warnings))
}

/// Frames with objects but no tracker id among them after which the element warns that line
/// crossing and direction need a tracker upstream.
const UNTRACKED_FRAMES_BEFORE_WARNING: u32 = 30;

struct State {
    analyzer: Analyzer,
    post_messages: bool,
    /// Whether any object has had a tracker id.
    seen_tracked: bool,
    /// Frames with objects for line or direction rules, none of them tracked, so far.
    untracked_frames: u32,
    warned_untracked: bool,
    latency: LatencyRecorder,
}

#[derive(Default)]
pub struct RsAnalytics {
    /// Property values; those set on the element override the configuration file.
    settings: Mutex<Props<config::Settings>>,
    state: Mutex<Option<State>>,
}

impl RsAnalytics {
    fn post(&self, event: Event) {
        let pts = |pts: Option<gst::ClockTime>| pts.map_or(u64::MAX, gst::ClockTime::nseconds);
        let s = match event {
            Event::Crossed {
                source_id,
                frame_num,
                pts: at,
                line,
                direction,
                object_id,
                class_id,
                forward_total,
                backward_total,
            } => gst::Structure::builder("rsanalytics-line-crossing")
                .field("source-id", source_id)
                .field("frame-num", frame_num)
                .field("pts", pts(at))
                .field("line", line)
                .field(
                    "direction",
                    match direction {
                        ferrostream_core::Crossing::Forward => "forward",
                        ferrostream_core::Crossing::Backward => "backward",
                    },
                )
                .field("object-id", object_id)
                .field("class-id", class_id)
                .field("forward-total", forward_total)
                .field("backward-total", backward_total)
                .build(),
            Event::Crowding {
                source_id,
                frame_num,
                pts: at,
                region,
                crowded,
                count,
                threshold,
            } => gst::Structure::builder("rsanalytics-overcrowding")
                .field("source-id", source_id)
                .field("frame-num", frame_num)
                .field("pts", pts(at))
                .field("region", region)
                .field("crowded", crowded)
                .field("count", count)
                .field("threshold", threshold)
                .build(),
        };
        let _ = self
            .obj()
            .post_message(gst::message::Element::builder(s).src(&*self.obj()).build());
    }

    /// Replaces stream `stream`'s regions of interest with `text`'s polygons; `false` (with a
    /// warning) when they do not parse or the element is not started.
    fn set_stream_rois(&self, stream: u32, text: &str) -> bool {
        let rules = config::PropertyRules {
            roi: text.to_string(),
            ..Default::default()
        }
        .rules();
        let rois = match rules {
            Ok(rules) => rules.rois,
            Err(m) => {
                gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{m}"));
                return false;
            }
        };
        match self.state.lock().unwrap().as_mut() {
            Some(state) => {
                gst::info!(
                    CAT,
                    imp = self,
                    "stream {stream}: {} regions of interest",
                    rois.len()
                );
                state.analyzer.set_stream_rois(stream, rois);
                true
            }
            None => false,
        }
    }

    /// Warns about configured streams that no frame came from.
    fn check_streams_seen(&self) {
        let unseen: Vec<u32> = {
            let guard = self.state.lock().unwrap();
            let Some(state) = guard.as_ref() else {
                return;
            };
            let seen: BTreeSet<u32> = state.analyzer.sources_seen().collect();
            if seen.is_empty() {
                return;
            }
            state
                .analyzer
                .config()
                .streams
                .keys()
                .copied()
                .filter(|id| !seen.contains(id))
                .collect()
        };
        if !unseen.is_empty() {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Failed,
                ("rules configured for stream ids {unseen:?}, but no frame came from them \
                     (stream ids are the muxer's sink pad indices, sink_0 is stream 0)")
            );
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for RsAnalytics {
    const NAME: &'static str = "GstRsAnalytics";
    type Type = super::RsAnalytics;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for RsAnalytics {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> =
            LazyLock::new(|| SETTINGS.param_specs(&config::Settings::default()));
        PROPERTIES.as_ref()
    }

    fn signals() -> &'static [glib::subclass::Signal] {
        static SIGNALS: LazyLock<Vec<glib::subclass::Signal>> = LazyLock::new(|| {
            // set-stream-rois(stream id, "label=x1;y1;x2;y2;...|...") -> whether they were
            // taken: replaces that stream's regions of interest while playing (coordinates as
            // the configuration's), as DeepStream's REST roi/update.
            vec![
                glib::subclass::Signal::builder("set-stream-rois")
                    .param_types([u32::static_type(), String::static_type()])
                    .return_type::<bool>()
                    .action()
                    .class_handler(|args| {
                        let element = args[0].get::<super::RsAnalytics>().expect("the element");
                        let stream = args[1].get::<u32>().expect("a stream id");
                        let text = args[2]
                            .get::<Option<String>>()
                            .ok()
                            .flatten()
                            .unwrap_or_default();
                        Some(element.imp().set_stream_rois(stream, &text).to_value())
                    })
                    .build(),
            ]
        });
        SIGNALS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut props = self.settings.lock().unwrap();
        SETTINGS.set_on(self.obj().upcast_ref(), &mut props, pspec, value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        SETTINGS
            .property_value(&self.settings.lock().unwrap(), pspec.name())
            .expect("every property is a setting")
    }
}

impl GstObjectImpl for RsAnalytics {}

ferrostream_core::metadata_element_impl!(
    RsAnalytics,
    "Ferrostream analytics",
    "Filter/Analytics/Video",
    "Counts tracked objects in regions and across lines, detects overcrowding and \
     the direction objects move in (nvdsanalytics configuration files)",
);

impl BaseTransformImpl for RsAnalytics {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let resolved = resolve(&self.settings.lock().unwrap());
        let (settings, warnings) =
            resolved.map_err(|m| gst::error_msg!(gst::LibraryError::Settings, ("{m}")))?;
        let config = settings.config;
        for warning in warnings {
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{warning}"));
        }
        if config.streams.is_empty() && config.all_streams.is_empty() {
            gst::element_imp_warning!(
                self,
                gst::LibraryError::Settings,
                ("no rules: set config-file-path or the roi, overcrowding, line-crossing or \
                  direction properties")
            );
        }
        gst::info!(CAT, imp = self, "analytics with {config:?}");
        *self.state.lock().unwrap() = Some(State {
            analyzer: Analyzer::new(config, settings.tuning),
            post_messages: settings.post_messages,
            seen_tracked: false,
            untracked_frames: 0,
            warned_untracked: false,
            latency: LatencyRecorder::new(self.obj().name()),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        use ferrostream_core::batch::events;
        if let Some(source_id) =
            events::parse_stream_eos(&event).or_else(|| events::parse_stream_restart(&event))
            && let Some(state) = self.state.lock().unwrap().as_mut()
        {
            // Its tracker ids end with it; its counts go on if it comes back.
            state.analyzer.reset_tracks(source_id);
        }
        match event.view() {
            gst::EventView::Eos(_) => self.check_streams_seen(),
            gst::EventView::FlushStop(_) | gst::EventView::StreamStart(_) => {
                if let Some(state) = self.state.lock().unwrap().as_mut() {
                    let sources: Vec<u32> = state.analyzer.sources_seen().collect();
                    for source_id in sources {
                        state.analyzer.reset_tracks(source_id);
                    }
                }
            }
            _ => {}
        }
        self.parent_sink_event(event)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry = now_ns();
        let mut events = Vec::new();
        let (post, warn_untracked) = {
            let mut guard = self.state.lock().unwrap();
            let Some(state) = guard.as_mut() else {
                return Err(gst::FlowError::Flushing);
            };
            let Some(mut meta) = buf.meta_mut::<BatchMeta>() else {
                gst::trace!(CAT, imp = self, "buffer without analytics metadata");
                return Ok(gst::FlowSuccess::Ok);
            };
            for frame in &mut meta.batch_mut().frames {
                let notes = state.analyzer.process(frame, &mut events);
                state.seen_tracked |= notes.tracked > 0;
                if notes.path_objects > 0 && !state.seen_tracked {
                    state.untracked_frames = state.untracked_frames.saturating_add(1);
                }
            }
            state.latency.record(meta.batch_mut(), entry);
            // Once (a batch may take the count past the limit in one go).
            let warn = !state.seen_tracked
                && !state.warned_untracked
                && state.untracked_frames >= UNTRACKED_FRAMES_BEFORE_WARNING;
            state.warned_untracked |= warn;
            (state.post_messages, warn)
        };
        if warn_untracked {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Format,
                ("objects without tracker ids: line crossing and direction detection \
                     follow tracked objects only (put rstracker before rsanalytics)")
            );
        }
        if post {
            for event in events {
                self.post(event);
            }
        }
        Ok(gst::FlowSuccess::Ok)
    }
}
