use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};

use ferrostream_core::BatchMeta;
use ferrostream_core::ini::parse_list;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::config::{
    self, AnalyticsConfig, Classes, CrowdingRule, DirectionRule, LineRule, Mode, RoiRule,
};
use crate::rules::{Analyzer, Event, Tuning};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsanalytics",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream analytics on tracked objects"),
    )
});

/// The element's properties as set; those in `set` override the configuration file.
#[derive(Debug, Clone)]
struct Settings {
    config_file: Option<PathBuf>,
    set: BTreeSet<&'static str>,
    enable: bool,
    osd_mode: u32,
    config_width: u32,
    config_height: u32,
    roi: String,
    inverse_roi: bool,
    overcrowding: String,
    object_threshold: u32,
    line_crossing: String,
    extended: bool,
    line_mode: String,
    direction: String,
    direction_mode: String,
    class_ids: String,
    tuning: Tuning,
    post_messages: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            config_file: None,
            set: BTreeSet::new(),
            enable: true,
            osd_mode: 2,
            config_width: 0,
            config_height: 0,
            roi: String::new(),
            inverse_roi: false,
            overcrowding: String::new(),
            object_threshold: 1,
            line_crossing: String::new(),
            extended: false,
            line_mode: "loose".into(),
            direction: String::new(),
            direction_mode: "balanced".into(),
            class_ids: String::new(),
            tuning: Tuning::default(),
            post_messages: true,
        }
    }
}

impl Settings {
    /// The configuration file (if any) with the properties applied over it, checked.
    fn resolve(&self) -> Result<(AnalyticsConfig, Vec<String>), String> {
        let (mut c, warnings) = match &self.config_file {
            Some(path) => AnalyticsConfig::load(path).map_err(|e| e.to_string())?,
            None => (AnalyticsConfig::default(), Vec::new()),
        };
        for name in &self.set {
            match *name {
                "enable" => c.enable = self.enable,
                "osd-mode" => c.osd_mode = self.osd_mode,
                "config-width" => c.config_width = self.config_width,
                "config-height" => c.config_height = self.config_height,
                _ => {}
            }
        }
        let classes =
            Classes::new(parse_list(&self.class_ids).map_err(|m| format!("class-ids: {m}"))?);
        let mode = |name: &str, text: &str| Mode::parse(text).map_err(|m| format!("{name}: {m}"));
        let line_mode = mode("line-mode", &self.line_mode)?;
        let direction_mode = mode("direction-mode", &self.direction_mode)?;
        let shapes = |name: &str, text: &str| {
            config::parse_shapes(text).map_err(|m| format!("property {name}: {m}"))
        };
        let named = |name: &str, label: &str, m: String| format!("property {name}, `{label}`: {m}");
        let all = &mut c.all_streams;
        for (label, points) in shapes("roi", &self.roi)? {
            all.rois.push(RoiRule {
                polygon: config::polygon(points).map_err(|m| named("roi", &label, m))?,
                label,
                inverse: self.inverse_roi,
                classes: classes.clone(),
            });
        }
        for (label, points) in shapes("overcrowding", &self.overcrowding)? {
            all.crowding.push(CrowdingRule {
                polygon: config::polygon(points).map_err(|m| named("overcrowding", &label, m))?,
                label,
                threshold: self.object_threshold,
                hold_ms: 0,
                classes: classes.clone(),
            });
        }
        for (label, points) in shapes("line-crossing", &self.line_crossing)? {
            let (arrow, line) =
                config::line(&points).map_err(|m| named("line-crossing", &label, m))?;
            all.lines.push(LineRule {
                label,
                arrow,
                line,
                extended: self.extended,
                mode: line_mode,
                classes: classes.clone(),
            });
        }
        for (label, points) in shapes("direction", &self.direction)? {
            all.directions.push(DirectionRule {
                arrow: config::arrow(&points).map_err(|m| named("direction", &label, m))?,
                label,
                mode: direction_mode,
                classes: classes.clone(),
            });
        }
        if (c.config_width == 0) != (c.config_height == 0) {
            return Err("config-width and config-height are set together (or neither)".into());
        }
        Ok((c, warnings))
    }
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
}

#[derive(Default)]
pub struct RsAnalytics {
    settings: Mutex<Settings>,
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

fn string_property(name: &'static str, nick: &'static str, blurb: &'static str) -> glib::ParamSpec {
    glib::ParamSpecString::builder(name)
        .nick(nick)
        .blurb(blurb)
        .mutable_ready()
        .build()
}

impl ObjectImpl for RsAnalytics {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = Settings::default();
            vec![
                string_property(
                    "config-file-path",
                    "Config file",
                    "nvdsanalytics configuration file (DeepStream's INI format); properties set \
                     on the element override its [property] keys and add rules for every stream",
                ),
                glib::ParamSpecBoolean::builder("enable")
                    .nick("Enable")
                    .blurb("Apply the rules (off: buffers pass unchanged)")
                    .default_value(d.enable)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("osd-mode")
                    .nick("OSD mode")
                    .blurb("What rsosd draws: 0 nothing, 1 shapes and labels, 2 also the counts")
                    .maximum(2)
                    .default_value(d.osd_mode)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("config-width")
                    .nick("Config width")
                    .blurb("Frame width the coordinates are given in (0: frame pixels)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("config-height")
                    .nick("Config height")
                    .blurb("Frame height the coordinates are given in (0: frame pixels)")
                    .mutable_ready()
                    .build(),
                string_property(
                    "roi",
                    "Regions of interest",
                    "Polygons for every stream: label=x1;y1;x2;y2;x3;y3... items separated by |",
                ),
                glib::ParamSpecBoolean::builder("inverse-roi")
                    .nick("Inverse ROI")
                    .blurb("Count the objects outside the roi polygons instead of inside")
                    .default_value(d.inverse_roi)
                    .mutable_ready()
                    .build(),
                string_property(
                    "overcrowding",
                    "Overcrowding regions",
                    "Polygons for every stream: label=x1;y1;x2;y2;x3;y3... items separated by |",
                ),
                glib::ParamSpecUInt::builder("object-threshold")
                    .nick("Object threshold")
                    .blurb("Objects in an overcrowding region at which it is crowded")
                    .minimum(1)
                    .default_value(d.object_threshold)
                    .mutable_ready()
                    .build(),
                string_property(
                    "line-crossing",
                    "Counting lines",
                    "Lines for every stream: label=ax1;ay1;ax2;ay2;lx1;ly1;lx2;ly2 (the forward \
                     arrow, then the line) items separated by |",
                ),
                glib::ParamSpecBoolean::builder("extended")
                    .nick("Extended lines")
                    .blurb("Count crossings of the whole infinite line, not only between its ends")
                    .default_value(d.extended)
                    .mutable_ready()
                    .build(),
                string_property(
                    "line-mode",
                    "Line mode",
                    "How closely a crossing must follow the arrow: strict (30 degrees), \
                     balanced (60) or loose (any)",
                ),
                string_property(
                    "direction",
                    "Directions",
                    "Named directions for every stream: label=x1;y1;x2;y2 items separated by |",
                ),
                string_property(
                    "direction-mode",
                    "Direction mode",
                    "How closely a movement must follow a direction: strict (30 degrees), \
                     balanced (60) or loose (90)",
                ),
                string_property(
                    "class-ids",
                    "Class ids",
                    "Classes the property rules apply to, ';'-separated (empty or -1: all)",
                ),
                glib::ParamSpecFloat::builder("line-hysteresis")
                    .nick("Line hysteresis")
                    .blurb(
                        "Half-width in frame pixels of the band around a line in which an object \
                         is on neither side (absorbs jitter on the line)",
                    )
                    .minimum(0.0)
                    .maximum(1000.0)
                    .default_value(d.tuning.hysteresis)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("direction-frames")
                    .nick("Direction frames")
                    .blurb("Frames of a tracked path the direction is measured over")
                    .minimum(1)
                    .maximum(1000)
                    .default_value(d.tuning.direction_frames as u32)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecFloat::builder("min-movement")
                    .nick("Min movement")
                    .blurb("Least movement in frame pixels over direction-frames for a direction")
                    .minimum(0.0)
                    .maximum(10000.0)
                    .default_value(d.tuning.min_movement)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("post-messages")
                    .nick("Post messages")
                    .blurb("Post line crossings and overcrowding changes as element messages")
                    .default_value(d.post_messages)
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut s = self.settings.lock().unwrap();
        let text = || -> String {
            value
                .get::<Option<String>>()
                .expect("type checked upstream")
                .unwrap_or_default()
        };
        let name: &'static str = Self::properties()
            .iter()
            .find(|p| p.name() == pspec.name())
            .map(|p| p.name())
            .expect("a property of this element");
        s.set.insert(name);
        match name {
            "config-file-path" => {
                s.config_file = Some(text()).filter(|p| !p.is_empty()).map(PathBuf::from)
            }
            "enable" => s.enable = value.get().expect("type checked upstream"),
            "osd-mode" => s.osd_mode = value.get().expect("type checked upstream"),
            "config-width" => s.config_width = value.get().expect("type checked upstream"),
            "config-height" => s.config_height = value.get().expect("type checked upstream"),
            "roi" => s.roi = text(),
            "inverse-roi" => s.inverse_roi = value.get().expect("type checked upstream"),
            "overcrowding" => s.overcrowding = text(),
            "object-threshold" => s.object_threshold = value.get().expect("type checked upstream"),
            "line-crossing" => s.line_crossing = text(),
            "extended" => s.extended = value.get().expect("type checked upstream"),
            "line-mode" => s.line_mode = text(),
            "direction" => s.direction = text(),
            "direction-mode" => s.direction_mode = text(),
            "class-ids" => s.class_ids = text(),
            "line-hysteresis" => s.tuning.hysteresis = value.get().expect("type checked upstream"),
            "direction-frames" => {
                s.tuning.direction_frames =
                    value.get::<u32>().expect("type checked upstream") as usize
            }
            "min-movement" => s.tuning.min_movement = value.get().expect("type checked upstream"),
            "post-messages" => s.post_messages = value.get().expect("type checked upstream"),
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "config-file-path" => s
                .config_file
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            "enable" => s.enable.to_value(),
            "osd-mode" => s.osd_mode.to_value(),
            "config-width" => s.config_width.to_value(),
            "config-height" => s.config_height.to_value(),
            "roi" => s.roi.to_value(),
            "inverse-roi" => s.inverse_roi.to_value(),
            "overcrowding" => s.overcrowding.to_value(),
            "object-threshold" => s.object_threshold.to_value(),
            "line-crossing" => s.line_crossing.to_value(),
            "extended" => s.extended.to_value(),
            "line-mode" => s.line_mode.to_value(),
            "direction" => s.direction.to_value(),
            "direction-mode" => s.direction_mode.to_value(),
            "class-ids" => s.class_ids.to_value(),
            "line-hysteresis" => s.tuning.hysteresis.to_value(),
            "direction-frames" => (s.tuning.direction_frames as u32).to_value(),
            "min-movement" => s.tuning.min_movement.to_value(),
            "post-messages" => s.post_messages.to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }
}

impl GstObjectImpl for RsAnalytics {}

impl ElementImpl for RsAnalytics {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream analytics",
                "Filter/Analytics/Video",
                "Counts tracked objects in regions and across lines, detects overcrowding and \
                 the direction objects move in (nvdsanalytics configuration files)",
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

impl BaseTransformImpl for RsAnalytics {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = self.settings.lock().unwrap().clone();
        let (config, warnings) = settings
            .resolve()
            .map_err(|m| gst::error_msg!(gst::LibraryError::Settings, ("{m}")))?;
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
