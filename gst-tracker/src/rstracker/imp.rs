use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use ferrostream_core::ini::parse_list;
use ferrostream_core::{AttributeValue, BatchMeta, Frame, Object};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::TrackerAlgorithm;
use crate::tracker::{
    DEFAULT_EMBEDDING_ATTRIBUTE, Detection, FrameResult, IdAllocator, Tracker, TrackerConfig,
};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rstracker",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream multi-object tracker"),
    )
});

#[derive(Debug, Clone, Default)]
struct Settings {
    config_file: Option<PathBuf>,
    algorithm: TrackerAlgorithm,
    /// Property values; those named in `set` override the configuration file.
    config: TrackerConfig,
    set: BTreeSet<&'static str>,
}

impl Settings {
    /// The configuration file (if any) with the explicitly set properties applied over it.
    fn resolve(&self) -> Result<(TrackerConfig, Vec<String>), String> {
        let (mut c, warnings) = match &self.config_file {
            Some(path) => crate::config::load(path)?,
            None => (TrackerConfig::default(), Vec::new()),
        };
        let p = &self.config;
        for name in &self.set {
            match *name {
                "tracker-algorithm" => c.algorithm = p.algorithm,
                "probation-age" => c.probation_age = p.probation_age,
                "max-shadow-age" => c.max_shadow_age = p.max_shadow_age,
                "min-detector-confidence" => c.min_detector_confidence = p.min_detector_confidence,
                "high-confidence" => c.high_confidence = p.high_confidence,
                "min-tracker-confidence" => c.min_tracker_confidence = p.min_tracker_confidence,
                "iou-threshold" => c.iou_threshold = p.iou_threshold,
                "operate-on-class-ids" => c.operate_on_class_ids = p.operate_on_class_ids.clone(),
                "report-shadow-tracks" => c.report_shadow = p.report_shadow,
                "report-terminated-tracks" => c.report_terminated = p.report_terminated,
                "appearance-weight" => c.appearance_weight = p.appearance_weight,
                "embedding-attribute" => c.embedding_attribute = p.embedding_attribute.clone(),
                other => unreachable!("property {other} has no configuration key"),
            }
        }
        Ok((c, warnings))
    }
}

/// What a shadow object needs that the tracker does not keep.
#[derive(Debug, Clone)]
struct TargetInfo {
    label: Arc<str>,
    component_id: i32,
}

struct State {
    /// The settings at start (the properties only change in READY).
    config: TrackerConfig,
    trackers: HashMap<u32, Tracker>,
    ids: IdAllocator,
    targets: HashMap<u64, TargetInfo>,
}

#[derive(Default)]
pub struct RsTracker {
    settings: Mutex<Settings>,
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
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = TrackerConfig::default();
            let prob =
                |name: &'static str, nick: &'static str, blurb: &'static str, default: f32| {
                    glib::ParamSpecFloat::builder(name)
                        .nick(nick)
                        .blurb(blurb)
                        .minimum(0.0)
                        .maximum(1.0)
                        .default_value(default)
                        .mutable_ready()
                        .build()
                };
            vec![
                glib::ParamSpecString::builder("config-file-path")
                    .nick("Config file")
                    .blurb(
                        "TOML file with the tracker settings (keys named like the properties); \
                         properties set on the element override it",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default(
                    "tracker-algorithm",
                    TrackerAlgorithm::default(),
                )
                .nick("Algorithm")
                .blurb("How detections are associated with targets")
                .mutable_ready()
                .build(),
                glib::ParamSpecUInt::builder("probation-age")
                    .nick("Probation age")
                    .blurb("Consecutive matches before a new target is reported")
                    .minimum(1)
                    .default_value(d.probation_age)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("max-shadow-age")
                    .nick("Max shadow age")
                    .blurb("Frames a lost target is predicted before it is terminated")
                    .default_value(d.max_shadow_age)
                    .mutable_ready()
                    .build(),
                prob(
                    "min-detector-confidence",
                    "Min detector confidence",
                    "Detections below this confidence are ignored",
                    d.min_detector_confidence,
                ),
                prob(
                    "high-confidence",
                    "High confidence",
                    "ByteTrack: detections above this are associated first and start targets",
                    d.high_confidence,
                ),
                prob(
                    "min-tracker-confidence",
                    "Min tracker confidence",
                    "Shadow targets below this confidence are not reported",
                    d.min_tracker_confidence,
                ),
                prob(
                    "iou-threshold",
                    "IoU threshold",
                    "Minimum overlap between a target and a detection to associate them",
                    d.iou_threshold,
                ),
                glib::ParamSpecString::builder("operate-on-class-ids")
                    .nick("Class ids")
                    .blurb("Classes to track, ';'-separated (empty: all)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecFloat::builder("appearance-weight")
                    .nick("Appearance weight")
                    .blurb(
                        "Weight of the cosine distance of object embeddings (attribute \
                         embedding-attribute) against overlap; 0 uses overlap only",
                    )
                    .minimum(0.0)
                    .maximum(1.0)
                    .default_value(d.appearance_weight)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("embedding-attribute")
                    .nick("Embedding attribute")
                    .blurb(
                        "Object attribute holding the appearance embedding (a list of floats), \
                         e.g. tensor:<gie-unique-id>:<output> from rstrtinfer \
                         output-tensor-meta",
                    )
                    .default_value(Some(DEFAULT_EMBEDDING_ATTRIBUTE))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("report-terminated-tracks")
                    .nick("Report terminated")
                    .blurb("List the ids of targets that ended in each frame's terminated_ids")
                    .default_value(d.report_terminated)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("report-shadow-tracks")
                    .nick("Report shadows")
                    .blurb("Report lost targets, predicted by their motion, until they terminate")
                    .default_value(d.report_shadow)
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut s = self.settings.lock().unwrap();
        if pspec.name() == "config-file-path" {
            s.config_file = value
                .get::<Option<String>>()
                .expect("type checked upstream")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from);
            return;
        }
        let name: &'static str = Self::properties()
            .iter()
            .find(|p| p.name() == pspec.name())
            .map(|p| p.name())
            .expect("a property of this element");
        s.set.insert(name);
        let c = &mut s.config;
        match name {
            "tracker-algorithm" => {
                let a = value
                    .get::<TrackerAlgorithm>()
                    .expect("type checked upstream");
                s.algorithm = a;
                s.config.algorithm = a.into();
            }
            "probation-age" => c.probation_age = value.get().expect("type checked upstream"),
            "max-shadow-age" => c.max_shadow_age = value.get().expect("type checked upstream"),
            "min-detector-confidence" => {
                c.min_detector_confidence = value.get().expect("type checked upstream")
            }
            "high-confidence" => c.high_confidence = value.get().expect("type checked upstream"),
            "min-tracker-confidence" => {
                c.min_tracker_confidence = value.get().expect("type checked upstream")
            }
            "iou-threshold" => c.iou_threshold = value.get().expect("type checked upstream"),
            "operate-on-class-ids" => {
                let text: Option<String> = value.get().expect("type checked upstream");
                match parse_list::<i32>(&text.unwrap_or_default()) {
                    Ok(ids) => c.operate_on_class_ids = ids,
                    Err(e) => gst::error!(
                        CAT,
                        imp = self,
                        "operate-on-class-ids: {e}; keeping {:?}",
                        c.operate_on_class_ids
                    ),
                }
            }
            "report-shadow-tracks" => c.report_shadow = value.get().expect("type checked upstream"),
            "appearance-weight" => {
                c.appearance_weight = value.get().expect("type checked upstream")
            }
            "embedding-attribute" => {
                c.embedding_attribute = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| DEFAULT_EMBEDDING_ATTRIBUTE.to_string())
            }
            "report-terminated-tracks" => {
                c.report_terminated = value.get().expect("type checked upstream")
            }
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        let c = &s.config;
        match pspec.name() {
            "tracker-algorithm" => s.algorithm.to_value(),
            "probation-age" => c.probation_age.to_value(),
            "max-shadow-age" => c.max_shadow_age.to_value(),
            "min-detector-confidence" => c.min_detector_confidence.to_value(),
            "high-confidence" => c.high_confidence.to_value(),
            "min-tracker-confidence" => c.min_tracker_confidence.to_value(),
            "iou-threshold" => c.iou_threshold.to_value(),
            "operate-on-class-ids" => c
                .operate_on_class_ids
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(";")
                .to_value(),
            "report-shadow-tracks" => c.report_shadow.to_value(),
            "appearance-weight" => c.appearance_weight.to_value(),
            "embedding-attribute" => c.embedding_attribute.to_value(),
            "report-terminated-tracks" => c.report_terminated.to_value(),
            "config-file-path" => s
                .config_file
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }
}

impl GstObjectImpl for RsTracker {}

impl ElementImpl for RsTracker {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream tracker",
                "Filter/Analytics/Video",
                "Tracks the detected objects across frames and gives them stable ids",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> =
            LazyLock::new(
                || ferrostream_core::element::filter_pad_templates(&gst::Caps::new_any()),
            );
        PAD_TEMPLATES.as_ref()
    }
}

impl BaseTransformImpl for RsTracker {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let resolved = self.settings.lock().unwrap().resolve();
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
        Ok(gst::FlowSuccess::Ok)
    }
}
