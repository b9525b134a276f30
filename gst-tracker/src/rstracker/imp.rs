// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use ferrostream_core::keypoints::Keypoints;
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::settings::Props;
use ferrostream_core::{AttributeValue, BBox, BatchMeta, Frame, Object};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::config::SETTINGS;
use crate::tracker::{Detection, FrameResult, IdAllocator, Tracker, TrackerConfig};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rstracker",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream multi-object tracker"),
    )
});

/// The configuration file (if any) with the properties set on the element applied over it.
fn resolve(props: &Props<TrackerConfig>) -> Result<(TrackerConfig, Vec<String>), String> {
    let (file, warnings) = props.read_file(TrackerConfig::default, crate::config_file::load)?;
    Ok((SETTINGS.resolve(file, props)?, warnings))
}

/// What a shadow object needs that the tracker does not keep.
#[derive(Debug, Clone)]
struct TargetInfo {
    label: Arc<str>,
    component_id: i32,
    /// The last detection's keypoints and the box they were found in.
    keypoints: Option<(Keypoints, BBox)>,
    /// The last detection's angle (an oriented box).
    angle: Option<f32>,
}

struct State {
    /// The settings at start (the properties only change in READY).
    config: TrackerConfig,
    trackers: HashMap<u32, Tracker>,
    ids: IdAllocator,
    targets: HashMap<u64, TargetInfo>,
    latency: LatencyRecorder,
}

#[derive(Default)]
pub struct RsTracker {
    /// Property values; those set on the element override the configuration file.
    settings: Mutex<Props<TrackerConfig>>,
    state: Mutex<Option<State>>,
}

impl RsTracker {
    /// Tracks one frame and writes the result into its objects.
    fn track_frame(state: &mut State, frame: &mut Frame) {
        let config = &state.config;
        let tracker = state
            .trackers
            .entry(frame.source_id)
            .or_insert_with(|| Tracker::new(config.clone()));
        // Objects a previous tracker already owns are left alone.
        let candidates: Vec<usize> = (0..frame.objects.len())
            .filter(|&i| frame.objects[i].object_id.is_none())
            .collect();
        let result = if frame.components_run.is_empty() {
            tracker.predict_only()
        } else {
            let detections: Vec<Detection> = candidates
                .iter()
                .map(|&i| {
                    let o = &frame.objects[i];
                    Detection {
                        bbox: o.detector_bbox,
                        confidence: o.confidence,
                        class_id: o.class_id,
                        embedding: match o.attributes.get(&config.embedding_attribute) {
                            Some(AttributeValue::Floats(v)) => Some(v.clone()),
                            _ => None,
                        },
                    }
                })
                .collect();
            tracker.update(&detections, &mut state.ids)
        };
        apply(state, frame, &candidates, result);
    }
}

/// Writes the tracker's result into the frame: ids and tracker boxes on the matched objects,
/// shadow objects for targets without a detection, and the terminated ids.
fn apply(state: &mut State, frame: &mut Frame, candidates: &[usize], result: FrameResult) {
    for t in result.tracks {
        match t.detection {
            Some(d) => {
                let o = &mut frame.objects[candidates[d]];
                o.object_id = Some(t.id);
                o.tracker_bbox = Some(t.bbox);
                o.tracker_confidence = Some(t.confidence);
                o.tracker_age = Some(t.age);
                state.targets.insert(
                    t.id,
                    TargetInfo {
                        label: o.label.clone(),
                        component_id: o.component_id,
                        keypoints: o.keypoints.clone().map(|k| (k, o.detector_bbox)),
                        angle: o.angle,
                    },
                );
            }
            None => {
                let Some(info) = state.targets.get(&t.id) else {
                    continue;
                };
                let mut o = Object::new(
                    t.class_id,
                    info.label.clone(),
                    0.0,
                    t.bbox,
                    info.component_id,
                );
                o.object_id = Some(t.id);
                o.tracker_bbox = Some(t.bbox);
                o.tracker_confidence = Some(t.confidence);
                o.tracker_age = Some(t.age);
                // The last detection's keypoints follow the target's predicted box.
                o.keypoints = info
                    .keypoints
                    .as_ref()
                    .map(|(k, seen)| k.moved(*seen, t.bbox));
                // And a turned box keeps its last angle.
                o.angle = info.angle;
                frame.objects.push(o);
            }
        }
    }
    for id in &result.terminated {
        state.targets.remove(id);
    }
    if state.config.report_terminated {
        frame.terminated_ids = result.terminated;
    }
}

#[glib::object_subclass]
impl ObjectSubclass for RsTracker {
    const NAME: &'static str = "GstRsTracker";
    type Type = super::RsTracker;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for RsTracker {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> =
            LazyLock::new(|| SETTINGS.param_specs(&TrackerConfig::default()));
        PROPERTIES.as_ref()
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

impl GstObjectImpl for RsTracker {}

ferrostream_core::metadata_element_impl!(
    RsTracker,
    "Ferrostream tracker",
    "Filter/Analytics/Video",
    "Tracks the detected objects across frames and gives them stable ids",
);

impl BaseTransformImpl for RsTracker {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let resolved = resolve(&self.settings.lock().unwrap());
        let (config, warnings) =
            resolved.map_err(|m| gst::error_msg!(gst::LibraryError::Settings, ("{m}")))?;
        for warning in warnings {
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{warning}"));
        }
        gst::info!(CAT, imp = self, "tracking with {config:?}");
        *self.state.lock().unwrap() = Some(State {
            config,
            trackers: HashMap::new(),
            ids: IdAllocator::default(),
            targets: HashMap::new(),
            latency: LatencyRecorder::new(self.obj().name()),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        // One source of a batched stream ended or restarted: its targets end with it.
        use ferrostream_core::batch::events;
        if let Some(source_id) =
            events::parse_stream_eos(&event).or_else(|| events::parse_stream_restart(&event))
            && let Some(state) = self.state.lock().unwrap().as_mut()
            && let Some(mut tracker) = state.trackers.remove(&source_id)
        {
            let ended = tracker.reset();
            gst::debug!(
                CAT,
                imp = self,
                "source {source_id} ended with {} targets",
                ended.len()
            );
            for id in ended {
                state.targets.remove(&id);
            }
        }
        // A new or restarted stream starts with no targets (ids stay unique).
        if matches!(
            event.view(),
            gst::EventView::Eos(_) | gst::EventView::FlushStop(_) | gst::EventView::StreamStart(_)
        ) && let Some(state) = self.state.lock().unwrap().as_mut()
        {
            state.trackers.clear();
            state.targets.clear();
        }
        self.parent_sink_event(event)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry = now_ns();
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::Flushing);
        };
        let Some(mut meta) = buf.meta_mut::<BatchMeta>() else {
            gst::trace!(CAT, imp = self, "buffer without analytics metadata");
            return Ok(gst::FlowSuccess::Ok);
        };
        for frame in &mut meta.batch_mut().frames {
            Self::track_frame(state, frame);
        }
        state.latency.record(meta.batch_mut(), entry);
        Ok(gst::FlowSuccess::Ok)
    }
}
