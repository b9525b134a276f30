// SPDX-License-Identifier: MIT OR Apache-2.0
//! An [`AppConfig`] translated into one `gst-launch-1.0` pipeline description, the only
//! pipeline the app builds, plus what the runner adds around it ([`Plan`]).
//!
//! The shape follows deepstream-app: sources into the muxer (or one `rsmultiurisrcbin` for a
//! `[source-list]` with `use-nvmultiurisrcbin=1`), the primary GIE, the tracker, the secondary
//! GIEs, the analytics, then the tiler and OSD (or, with the tiler disabled, one demuxed branch
//! per shown stream) into a tee of sinks. Message-broker sinks take the batch before the tiler,
//! where each frame's metadata is still its own.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::consumer::{RecordTarget, Subscription};
use crate::model::*;
use crate::value::rgba_hex;

/// What the translation needs to know of the machine (a trait, so tests decide it).
pub trait Env {
    fn has_element(&self, name: &str) -> bool;
    fn has_display(&self) -> bool;
    fn has_gpu(&self) -> bool;
}

/// An RTSP output: the server the runner starts, reading the encoder's RTP from loopback UDP.
#[derive(Debug, Clone, PartialEq)]
pub struct RtspOut {
    pub rtsp_port: u32,
    pub udp_port: u32,
    /// `H264` or `H265`.
    pub encoding: &'static str,
}

/// Periodic smart record of one source (`smart-record=2`).
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodicRecord {
    /// The rsurisrcbin (or rsmultiurisrcbin) to trigger.
    pub element: String,
    pub duration: u32,
    pub interval: u32,
    /// rsmultiurisrcbin: the camera ids to trigger (empty for an rsurisrcbin).
    pub cameras: Vec<String>,
}

/// The translation: the description and what the runner adds.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub description: String,
    pub notices: Vec<String>,
    pub warnings: Vec<String>,
    /// The element whose source pad carries every frame's complete metadata (before tiling).
    pub meta_tap: String,
    /// The elements timed for the headroom report, in pipeline order.
    pub stages: Vec<String>,
    pub perf_interval: Option<u32>,
    /// Source ids of live sources (cameras, RTSP).
    pub live_sources: Vec<u32>,
    pub kitti_dir: Option<PathBuf>,
    pub kitti_track_dir: Option<PathBuf>,
    pub terminated_track_dir: Option<PathBuf>,
    pub rtsp: Vec<RtspOut>,
    pub periodic_record: Vec<PeriodicRecord>,
    /// The `[message-consumer<N>]` subscriptions the runner starts with the pipeline.
    pub consumers: Vec<Subscription>,
    /// Source id -> the element whose smart record its messages trigger (sources with
    /// `smart-record` > 0).
    pub record_targets: BTreeMap<u32, RecordTarget>,
}

/// Quotes a property value for a description when it needs it.
pub fn quoted(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:,+=@%".contains(c))
    {
        value.to_owned()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

fn path_value(p: &Path) -> String {
    quoted(&p.to_string_lossy())
}

/// Appends ` name=value` to `out`.
fn prop(out: &mut String, name: &str, value: impl std::fmt::Display) {
    let _ = write!(out, " {name}={value}");
}

/// The folder of the configuration file `path`, absolute: a file named without a folder
/// (`-c app.txt`, as NVIDIA's reference apps are run) has an empty parent, and a `file://` URI
/// made from that would stay relative, which no source can open.
fn folder_of(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned())
}

/// A source URI with a relative `file://` path made absolute against the configuration's
/// folder (as deepstream-app does).
fn absolute_uri(uri: &str, base: &Path) -> String {
    match uri.strip_prefix("file://") {
        Some(path) if !path.starts_with('/') => format!("file://{}", base.join(path).display()),
        _ => uri.to_owned(),
    }
}

struct Translator<'a> {
    config: &'a AppConfig,
    env: &'a dyn Env,
    base: PathBuf,
    plan: Plan,
    gpu_noticed: bool,
}

/// Translates `config` for the machine `env` describes.
pub fn translate(config: &AppConfig, env: &dyn Env) -> Result<Plan, String> {
    let mut t = Translator {
        config,
        env,
        base: folder_of(&config.path),
        plan: Plan::default(),
        gpu_noticed: false,
    };
    t.run()?;
    Ok(t.plan)
}

impl Translator<'_> {
    fn notice(&mut self, text: impl Into<String>) {
        self.plan.notices.push(text.into());
    }

    /// The GPU an element should use: its own gpu-id, else global-gpu-id; on a machine without
    /// a GPU, none (with one notice).
    fn gpu(&mut self, own: Option<u32>) -> Option<u32> {
        let id = own.or(self.config.application.global_gpu_id)?;
        if self.env.has_gpu() {
            Some(id)
        } else {
            if !self.gpu_noticed {
                self.gpu_noticed = true;
                self.notice("gpu-id: no effect here: no NVIDIA GPU is available, so every element runs on the CPU");
            }
            None
        }
    }

    fn run(&mut self) -> Result<(), String> {
        let c = self.config;
        let mut d = String::new();
        let (head, batch) = self.sources(&mut d)?;
        // The analysis chain, element by element.
        let mut chain: Vec<String> = vec![head];
        if let Some(pgie) = c.primary.as_ref().filter(|g| g.enable) {
            chain.push(self.gie("pgie", pgie, Some(batch), true)?);
        }
        if c.tracker.enable {
            chain.push(self.tracker());
        }
        let sgie_batch = c.source_list.as_ref().and_then(|l| l.sgie_batch_size);
        for (i, sgie) in c.secondaries.iter().filter(|g| g.enable).enumerate() {
            chain.push(self.gie(&format!("sgie{i}"), sgie, sgie_batch, false)?);
        }
        if c.analytics.enable {
            let Some(file) = &c.analytics.config_file else {
                return Err("[nvds-analytics] enable=1 needs config-file".into());
            };
            chain.push(format!(
                "rsanalytics name=analytics config-file-path={}",
                path_value(file)
            ));
        }
        let tap = chain
            .last()
            .and_then(|e| e.split_whitespace().find_map(|w| w.strip_prefix("name=")))
            .unwrap_or("mux")
            .to_owned();
        self.plan.meta_tap = tap;
        self.plan.stages = chain
            .iter()
            .skip(1)
            .filter_map(|e| e.split_whitespace().find_map(|w| w.strip_prefix("name=")))
            .map(str::to_owned)
            .collect();
        d.push_str(&chain.join(" ! "));
        if let Some(file) = &c.options.metadata {
            let _ = write!(
                d,
                " ! rsmetaexport name=metadata location={}",
                path_value(file)
            );
        }

        let sinks: Vec<&Sink> = c.sinks.iter().filter(|s| s.enable).collect();
        if sinks.is_empty() {
            return Err("no [sink<N>] group is enabled: add one (type=1 is a fake sink)".into());
        }
        let (brokers, videos): (Vec<&Sink>, Vec<&Sink>) = sinks
            .into_iter()
            .partition(|s| s.kind == SinkType::MsgBroker);
        // Message brokers take the batch where each frame's metadata is its own.
        let needs_meta_tee = !brokers.is_empty() && !videos.is_empty();
        if needs_meta_tee {
            d.push_str(" ! tee name=meta");
        }
        let mut branches = Vec::new();
        for (i, s) in brokers.iter().enumerate() {
            let broker = self.broker(s)?;
            if needs_meta_tee {
                branches.push(format!("meta. ! queue ! {broker}"));
            } else if i == 0 && brokers.len() == 1 {
                d.push_str(&format!(" ! {broker}"));
            } else {
                if i == 0 {
                    d.push_str(" ! tee name=meta");
                }
                branches.push(format!("meta. ! queue ! {broker}"));
            }
        }
        if !videos.is_empty() {
            if needs_meta_tee {
                d.push_str(" meta. ! queue");
            }
            self.videos(&mut d, &mut branches, &videos)?;
        }
        for b in branches {
            d.push_str("  ");
            d.push_str(&b);
        }
        for (i, consumer) in c.consumers.iter().enumerate() {
            self.plan
                .consumers
                .push(crate::consumer::subscription(consumer, i)?);
            if self.plan.record_targets.is_empty() {
                self.plan.warnings.push(format!(
                    "[{}]: no source has smart-record set, so its messages find nothing to \
                     record",
                    consumer.group
                ));
            }
        }
        let app = &c.application;
        self.plan.perf_interval = app.perf.then_some(app.perf_interval);
        self.plan.kitti_dir = app.kitti_dir.clone();
        self.plan.kitti_track_dir = app.kitti_track_dir.clone();
        self.plan.terminated_track_dir = app.terminated_track_dir.clone();
        self.plan.description = d;
        Ok(())
    }

    /// The sources and the muxer, written into `d` up to the muxer's name; returns the head of
    /// the analysis chain (the muxer or rsmultiurisrcbin, named) and the batch size.
    fn sources(&mut self, d: &mut String) -> Result<(String, u32), String> {
        let c = self.config;
        let mux = &c.streammux;
        if let Some(list) = &c.source_list {
            if let Some(n) = list.num_source_bins
                && n as usize != list.uris.len()
            {
                return Err(format!(
                    "[source-list] num-source-bins={n} but list has {} URIs",
                    list.uris.len()
                ));
            }
            if list.use_multiurisrcbin {
                return Ok((self.multiurisrcbin(list)?, batch_of(mux, list)));
            }
        }
        // One rsurisrcbin (or camera) per source into rsstreammux.
        let mut sources: Vec<Source> = c.sources.iter().filter(|s| s.enable).cloned().collect();
        if let Some(list) = &c.source_list {
            let attrs = c.source_attr_all.clone().unwrap_or_default();
            for (i, uri) in list.uris.iter().enumerate() {
                sources.push(Source {
                    group: format!("source-list item {i}"),
                    enable: true,
                    kind: if uri.starts_with("rtsp://") {
                        SourceType::Rtsp
                    } else {
                        SourceType::Uri
                    },
                    uri: Some(uri.clone()),
                    ..attrs.clone()
                });
            }
        }
        if sources.is_empty() {
            return Err("no source: enable a [source<N>] group or add a [source-list]".into());
        }
        let mut next_id = 0u32;
        let mut ids = Vec::new();
        let convert = if self.env.has_gpu() && self.env.has_element("nvh264dec") {
            String::new()
        } else {
            "videoconvert ! video/x-raw,format=I420 ! ".to_owned()
        };
        for s in &sources {
            for copy in 0..s.num_sources.max(1) {
                let id = match (s.camera_id.or(s.source_id), copy) {
                    (Some(id), 0) => id,
                    _ => next_id,
                };
                if ids.contains(&id) {
                    return Err(format!("[{}] source id {id} is used twice", s.group));
                }
                next_id = next_id.max(id) + 1;
                ids.push(id);
                let src = self.source(s, id)?;
                let queue = match (s.leaky, s.max_size_buffers) {
                    (None, None) => "queue".to_owned(),
                    (leaky, size) => {
                        let mut q = "queue".to_owned();
                        if let Some(l) = leaky {
                            prop(&mut q, "leaky", l);
                        }
                        if let Some(n) = size {
                            prop(&mut q, "max-size-buffers", n);
                            prop(&mut q, "max-size-bytes", 0);
                            prop(&mut q, "max-size-time", 0);
                        }
                        q
                    }
                };
                let _ = write!(d, "{src} ! {queue} ! {convert}mux.sink_{id}  ");
            }
        }
        let batch = mux.batch_size.unwrap_or(ids.len() as u32);
        let mut m = format!("rsstreammux name=mux batch-size={batch}");
        muxer_props(&mut m, mux);
        Ok((m, batch))
    }

    fn record_props(&mut self, out: &mut String, s: &Source, element: &str) {
        let r = &s.smart_record;
        if r.mode == 0 {
            return;
        }
        let cache = match (r.cache, r.start_time) {
            (Some(c), Some(t)) => t.min(c),
            (c, t) => c.or(t).unwrap_or(20),
        };
        prop(out, "record-cache", cache.max(1));
        if let Some(v) = r.default_duration {
            prop(out, "record-duration", v);
        }
        if let Some(dir) = &r.dir {
            prop(out, "record-dir", path_value(dir));
        }
        if let Some(p) = &r.prefix {
            prop(out, "record-prefix", quoted(p));
        }
        prop(
            out,
            "record-container",
            if r.container == 1 { "mkv" } else { "mp4" },
        );
        if r.mode == 2 {
            self.plan.periodic_record.push(PeriodicRecord {
                element: element.to_owned(),
                duration: r.duration.or(r.default_duration).unwrap_or(10),
                interval: r.interval.unwrap_or(10),
                cameras: Vec::new(),
            });
        }
    }

    /// One source as a description fragment ending at its output.
    fn source(&mut self, s: &Source, id: u32) -> Result<String, String> {
        let name = format!("src{id}");
        let caps = || {
            let mut caps = "video/x-raw".to_owned();
            if let Some(w) = s.camera_width {
                let _ = write!(caps, ",width={w}");
            }
            if let Some(h) = s.camera_height {
                let _ = write!(caps, ",height={h}");
            }
            if let (Some(n), d) = s.camera_fps {
                let _ = write!(caps, ",framerate={n}/{}", d.unwrap_or(1));
            }
            caps
        };
        match s.kind {
            SourceType::CameraV4l2 => {
                self.plan.live_sources.push(id);
                let node = s.v4l2_dev_node.unwrap_or(0);
                Ok(format!(
                    "v4l2src name={name} device=/dev/video{node} ! {} ! videoconvert",
                    caps()
                ))
            }
            SourceType::CameraCsi => {
                if !self.env.has_element("nvarguscamerasrc") {
                    return Err(format!(
                        "[{}] type=5 (CSI camera) needs nvarguscamerasrc (Jetson), which is not \
                         installed here",
                        s.group
                    ));
                }
                self.plan.live_sources.push(id);
                let caps = caps().replacen("video/x-raw", "video/x-raw(memory:NVMM)", 1);
                Ok(format!(
                    "nvarguscamerasrc name={name} sensor-id={} ! {caps}",
                    s.csi_sensor_id.unwrap_or(0)
                ))
            }
            SourceType::Uri | SourceType::MultiUri | SourceType::Rtsp => {
                let Some(uri) = &s.uri else {
                    return Err(format!("[{}] needs uri", s.group));
                };
                let uri = absolute_uri(uri, &self.base);
                if s.kind == SourceType::Rtsp || uri.starts_with("rtsp://") {
                    self.plan.live_sources.push(id);
                }
                let mut out = format!("rsurisrcbin name={name} uri={}", quoted(&uri));
                self.uri_source_props(&mut out, s, uri.starts_with("file://"));
                self.record_props(&mut out, s, &name);
                if s.smart_record.mode > 0 {
                    self.plan.record_targets.insert(
                        id,
                        RecordTarget {
                            element: name,
                            camera: None,
                        },
                    );
                }
                Ok(out)
            }
        }
    }

    /// The settings rsurisrcbin and rsmultiurisrcbin share (connection, pacing, looping, the
    /// frame limit); `files` says whether the source's URIs may be files (file-loop applies).
    fn uri_source_props(&self, out: &mut String, s: &Source, files: bool) {
        if let Some(v) = s.latency_ms {
            prop(out, "latency", v);
        }
        if let Some(v) = s.drop_frame_interval.filter(|v| *v > 1) {
            prop(out, "drop-frame-interval", v);
        }
        if let Some(v) = s.reconnect_interval {
            prop(out, "reconnect-interval", v);
        }
        if let Some(v) = s.init_reconnect_interval {
            prop(out, "initial-reconnect-interval", v);
        }
        if let Some(v) = s.reconnect_attempts {
            prop(out, "reconnect-attempts", v);
        }
        if s.rtp_tcp {
            prop(out, "rtp-protocol", "tcp");
        }
        if files && s.file_loop.unwrap_or(self.config.tests.file_loop) {
            prop(out, "file-loop", true);
        }
        if let Some(n) = self.config.options.frames {
            prop(out, "num-buffers", n);
        }
    }

    fn multiurisrcbin(&mut self, list: &SourceList) -> Result<String, String> {
        let c = self.config;
        let attrs = c.source_attr_all.clone().unwrap_or_default();
        let uris: Vec<String> = list
            .uris
            .iter()
            .map(|u| absolute_uri(u, &self.base))
            .collect();
        for (i, u) in uris.iter().enumerate() {
            if u.starts_with("rtsp://") {
                self.plan.live_sources.push(i as u32);
            }
        }
        let batch = batch_of(&c.streammux, list);
        let mut m = "rsmultiurisrcbin name=src".to_owned();
        if !uris.is_empty() {
            prop(&mut m, "uri-list", quoted(&uris.join(",")));
        }
        if !list.sensor_ids.is_empty() {
            prop(&mut m, "sensor-id-list", quoted(&list.sensor_ids.join(",")));
        }
        if !list.sensor_names.is_empty() {
            prop(
                &mut m,
                "sensor-name-list",
                quoted(&list.sensor_names.join(",")),
            );
        }
        prop(&mut m, "max-sources", list.max_batch_size.unwrap_or(batch));
        prop(&mut m, "batch-size", batch);
        muxer_props(&mut m, &c.streammux);
        if let Some(ip) = &list.http_ip {
            prop(&mut m, "rest-address", quoted(ip));
        }
        prop(&mut m, "rest-port", list.http_port.unwrap_or(9000));
        if self.env.has_gpu() && self.env.has_element("nvh264dec") {
            prop(&mut m, "format", "\"\"");
        }
        self.uri_source_props(&mut m, &attrs, true);
        self.record_props(&mut m, &attrs, "src");
        // rsmultiurisrcbin names a camera by its sensor id, else by its place in the list.
        let cameras: Vec<String> = (0..uris.len())
            .map(|i| {
                list.sensor_ids
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| i.to_string())
            })
            .collect();
        if let Some(r) = self.plan.periodic_record.last_mut() {
            r.cameras = cameras.clone();
        }
        if attrs.smart_record.mode > 0 {
            for (i, camera) in cameras.into_iter().enumerate() {
                self.plan.record_targets.insert(
                    i as u32,
                    RecordTarget {
                        element: "src".into(),
                        camera: Some(camera),
                    },
                );
            }
        }
        Ok(m)
    }

    fn gie(
        &mut self,
        name: &str,
        g: &Gie,
        batch: Option<u32>,
        primary: bool,
    ) -> Result<String, String> {
        let Some(file) = &g.config_file else {
            return Err(format!("[{}] needs config-file", g.group));
        };
        let mut e = format!(
            "rstrtinfer name={name} config-file-path={}",
            path_value(file)
        );
        if !primary {
            prop(&mut e, "process-mode", "secondary");
        }
        if let Some(b) = g.batch_size.or(batch) {
            prop(&mut e, "batch-size", b);
        }
        if let Some(v) = g.interval {
            prop(&mut e, "interval", v);
        }
        if let Some(v) = g.unique_id {
            prop(&mut e, "gie-unique-id", v);
        }
        if let Some(v) = g.operate_on_gie_id.filter(|v| *v >= 0) {
            prop(&mut e, "operate-on-gie-id", v);
        }
        if !g.operate_on_class_ids.is_empty() {
            let ids: Vec<String> = g.operate_on_class_ids.iter().map(i64::to_string).collect();
            prop(&mut e, "operate-on-class-ids", quoted(&ids.join(";")));
        }
        if let Some(p) = &g.labelfile {
            prop(&mut e, "labelfile-path", path_value(p));
        }
        if let Some(p) = &g.model_engine_file {
            if p.is_file() {
                prop(&mut e, "model-engine-file", path_value(p));
            } else {
                self.notice(format!(
                    "[{}] model-engine-file: {} does not exist; the model named by {} is used \
                     (its engine is built and cached on first use)",
                    g.group,
                    p.display(),
                    file.display()
                ));
            }
        }
        if let Some(id) = self.gpu(g.gpu_id) {
            prop(&mut e, "gpu-id", id);
        }
        Ok(e)
    }

    fn tracker(&mut self) -> String {
        let t = &self.config.tracker;
        let mut e = "rstracker name=tracker".to_owned();
        if let Some(f) = &t.ll_config_file {
            prop(&mut e, "config-file-path", path_value(f));
        }
        if !t.operate_on_class_ids.is_empty() {
            let ids: Vec<String> = t.operate_on_class_ids.iter().map(i64::to_string).collect();
            prop(&mut e, "operate-on-class-ids", quoted(&ids.join(";")));
        }
        e
    }

    /// rsosd with the `[osd]` group's settings and the GIEs' class colours.
    fn osd(&mut self, name: &str) -> Option<String> {
        let o = &self.config.osd;
        if !o.enable {
            return None;
        }
        let mut e = format!("rsosd name={name}");
        if let Some(v) = o.border_width {
            prop(&mut e, "border-width", v);
        }
        if let Some(v) = o.text_size {
            prop(&mut e, "text-size", v.max(4));
        }
        if let Some(v) = o.text_color {
            prop(&mut e, "text-color", rgba_hex(v));
        }
        if let Some(v) = o.text_bg_color {
            prop(&mut e, "text-bg-color", rgba_hex(v));
        }
        if let Some(font) = &o.font {
            let path = self.base.join(font);
            if path.is_file() {
                prop(&mut e, "font", path_value(&path));
            } else {
                self.notice(format!(
                    "[osd] font={font}: not a font file; rsosd uses the first system font \
                     (give a .ttf/.otf path to choose one)"
                ));
            }
        }
        if o.show_clock {
            prop(&mut e, "display-clock", true);
            if let Some(v) = o.clock_x {
                prop(&mut e, "x-clock-offset", v);
            }
            if let Some(v) = o.clock_y {
                prop(&mut e, "y-clock-offset", v);
            }
            if let Some(v) = o.clock_color {
                prop(&mut e, "clock-color", rgba_hex(v));
            }
            if let Some(v) = o.clock_size {
                prop(&mut e, "clock-font-size", v);
            }
        }
        for (key, value) in [
            ("display-text", o.display_text),
            ("display-bbox", o.display_bbox),
            ("display-mask", o.display_mask),
        ] {
            if let Some(v) = value {
                prop(&mut e, key, v);
            }
        }
        if self.config.tracker.display_tracking_id == Some(false) {
            prop(
                &mut e,
                "label-format",
                quoted("{label} {confidence} {classes}"),
            );
        }
        let gies: Vec<&Gie> = self
            .config
            .primary
            .iter()
            .chain(&self.config.secondaries)
            .collect();
        type Colours = BTreeMap<u32, crate::value::Rgba>;
        let collect = |pick: fn(&Gie) -> &Vec<(u32, crate::value::Rgba)>| -> Colours {
            gies.iter().flat_map(|g| pick(g).iter().copied()).collect()
        };
        for (property, colours) in [
            ("class-colors", collect(|g| &g.border_colors)),
            ("class-bg-colors", collect(|g| &g.bg_colors)),
        ] {
            if !colours.is_empty() {
                let list: Vec<String> = colours
                    .iter()
                    .map(|(id, c)| format!("{id}={}", rgba_hex(*c)))
                    .collect();
                prop(&mut e, property, quoted(&list.join(",")));
            }
        }
        Some(e)
    }

    /// The video sinks: after rstiler and rsosd, or per stream after rsstreamdemux.
    fn videos(
        &mut self,
        d: &mut String,
        branches: &mut Vec<String>,
        sinks: &[&Sink],
    ) -> Result<(), String> {
        let tiler = &self.config.tiler;
        if tiler.enable {
            let mut e = "rstiler name=tiler".to_owned();
            prop(&mut e, "rows", tiler.rows);
            prop(&mut e, "columns", tiler.columns);
            prop(&mut e, "width", tiler.width);
            prop(&mut e, "height", tiler.height);
            let _ = write!(d, " ! {e}");
            if let Some(osd) = self.osd("osd") {
                let _ = write!(d, " ! {osd}");
            }
            self.fan_out(d, branches, "out", sinks)
        } else {
            d.push_str(" ! rsstreamdemux name=demux");
            let mut by_source: BTreeMap<u32, Vec<&Sink>> = BTreeMap::new();
            for s in sinks {
                if !s.link_to_demux {
                    self.notice(format!(
                        "[{}] the tiler is disabled, so the sink shows one stream: source-id {} \
                         (rsstreamdemux)",
                        s.group,
                        s.source_id.unwrap_or(0)
                    ));
                }
                by_source
                    .entry(s.source_id.unwrap_or(0))
                    .or_default()
                    .push(s);
            }
            for (id, group) in by_source {
                let mut b = format!("demux.src_{id} ! queue");
                if let Some(osd) = self.osd(&format!("osd{id}")) {
                    let _ = write!(b, " ! {osd}");
                }
                let mut inner = Vec::new();
                self.fan_out(&mut b, &mut inner, &format!("out{id}"), &group)?;
                branches.push(b);
                branches.extend(inner);
            }
            Ok(())
        }
    }

    /// `sinks` after `d`: the one sink directly, several through a tee named `tee`.
    fn fan_out(
        &mut self,
        d: &mut String,
        branches: &mut Vec<String>,
        tee: &str,
        sinks: &[&Sink],
    ) -> Result<(), String> {
        if let [one] = sinks {
            let s = self.video_sink(one)?;
            let _ = write!(d, " ! {s}");
            return Ok(());
        }
        let _ = write!(d, " ! tee name={tee}");
        for s in sinks {
            let s = self.video_sink(s)?;
            branches.push(format!("{tee}. ! queue ! {s}"));
        }
        Ok(())
    }

    fn video_sink(&mut self, s: &Sink) -> Result<String, String> {
        let name = &s.group;
        let sync = |default: bool| s.sync.unwrap_or(default);
        let qos = s.qos.map(|q| format!(" qos={q}")).unwrap_or_default();
        Ok(match s.kind {
            SinkType::Fake => format!("fakesink name={name} sync={}{qos}", sync(false)),
            SinkType::Display if self.env.has_display() => format!(
                "videoconvert ! autovideosink name={name} sync={}{qos}",
                sync(true)
            ),
            SinkType::Display => {
                self.plan.warnings.push(format!(
                    "[{name}] type=2: no display here (DISPLAY and WAYLAND_DISPLAY are unset): \
                     a fake sink takes its place"
                ));
                format!("fakesink name={name} sync={}{qos}", sync(true))
            }
            SinkType::File => {
                let Some(file) = &s.output_file else {
                    return Err(format!("[{name}] type=3 needs output-file"));
                };
                let (enc, _) = self.encoder(s)?;
                let mux = if s.container == 2 {
                    "matroskamux"
                } else {
                    "mp4mux"
                };
                format!(
                    "videoconvert ! {enc} ! {mux} ! filesink name={name} location={} sync={}",
                    path_value(file),
                    sync(false)
                )
            }
            SinkType::Rtsp => {
                let (enc, encoding) = self.encoder(s)?;
                if s.codec == 3 {
                    return Err(format!(
                        "[{name}] type=4 streams H.264 (codec=1) or H.265 (codec=2), not MPEG-4"
                    ));
                }
                self.plan.rtsp.push(RtspOut {
                    rtsp_port: s.rtsp_port,
                    udp_port: s.udp_port,
                    encoding,
                });
                let pay = if encoding == "H265" {
                    "rtph265pay"
                } else {
                    "rtph264pay"
                };
                let mut udp = format!(
                    "udpsink name={name} host=127.0.0.1 port={} sync={} async=false",
                    s.udp_port,
                    sync(false)
                );
                if let Some(b) = s.udp_buffer_size {
                    prop(&mut udp, "buffer-size", b);
                }
                format!("videoconvert ! {enc} ! {pay} config-interval=1 pt=96 ! {udp}")
            }
            SinkType::MsgBroker => unreachable!("message brokers are placed before the tiler"),
        })
    }

    /// The encoder chain (encoder, caps, parser) of a file or RTSP sink, and its encoding.
    fn encoder(&mut self, s: &Sink) -> Result<(String, &'static str), String> {
        let hw: &[&str] = match s.codec {
            1 => &["nvh264enc", "nvv4l2h264enc"],
            2 => &["nvh265enc", "nvv4l2h265enc"],
            _ => &[],
        };
        let hardware = (s.enc_type == 0)
            .then(|| hw.iter().find(|e| self.env.has_element(e)).copied())
            .flatten();
        let software: &[&str] = match s.codec {
            1 => &["x264enc", "openh264enc"],
            2 => &["x265enc"],
            _ => &["avenc_mpeg4"],
        };
        let element = match hardware {
            Some(e) => e,
            None => {
                let Some(e) = software.iter().find(|e| self.env.has_element(e)).copied() else {
                    return Err(format!(
                        "[{}] codec={}: no encoder installed ({}; gstreamer1.0-plugins-ugly has \
                         x264enc)",
                        s.group,
                        s.codec,
                        hw.iter()
                            .chain(software)
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                };
                if s.enc_type == 0 && !hw.is_empty() {
                    self.notice(format!(
                        "[{}] enc-type=0: no hardware encoder here; {e} encodes in software",
                        s.group
                    ));
                }
                e
            }
        };
        // NVENC of GPU N (N > 0) is its own element, as GStreamer's nvcodec names them.
        let gpu = self.gpu(s.gpu_id).filter(|n| *n > 0);
        let mut enc = match gpu.filter(|_| matches!(element, "nvh264enc" | "nvh265enc")) {
            Some(n) => {
                let device = element.replacen("enc", &format!("device{n}enc"), 1);
                if self.env.has_element(&device) {
                    device
                } else {
                    self.notice(format!(
                        "[{}] gpu-id={n}: no {device} here; {element} encodes on GPU 0",
                        s.group
                    ));
                    element.to_owned()
                }
            }
            None => element.to_owned(),
        };
        if let Some(b) = s.bitrate {
            // x264enc, x265enc and NVIDIA's encoders take kbit/s; the others bit/s.
            let value = match element {
                "x264enc" | "x265enc" | "nvh264enc" | "nvh265enc" => (b / 1000).max(1),
                _ => b,
            };
            prop(&mut enc, "bitrate", value);
        }
        if let Some(i) = s.iframe_interval {
            let key = match element {
                "x264enc" | "x265enc" => "key-int-max",
                "nvv4l2h264enc" | "nvv4l2h265enc" => "iframeinterval",
                _ => "gop-size",
            };
            prop(&mut enc, key, i);
        }
        if let Some(p) = s
            .sw_preset
            .filter(|_| matches!(element, "x264enc" | "x265enc"))
        {
            prop(&mut enc, "speed-preset", p);
        }
        if element == "x264enc" {
            // Files that players and RTSP clients start anywhere: no B-frames, repeated headers.
            prop(&mut enc, "tune", "zerolatency");
        }
        let (parse, encoding, caps) = match s.codec {
            1 => {
                let profile = match s.profile {
                    Some(0) => Some("constrained-baseline"),
                    Some(2) => Some("main"),
                    Some(4) => Some("high"),
                    _ => None,
                };
                (
                    "h264parse",
                    "H264",
                    profile.map(|p| format!("video/x-h264,profile={p}")),
                )
            }
            2 => {
                let profile = match s.profile {
                    Some(1) => Some("main-10"),
                    Some(0) => Some("main"),
                    _ => None,
                };
                (
                    "h265parse",
                    "H265",
                    profile.map(|p| format!("video/x-h265,profile={p}")),
                )
            }
            _ => ("mpeg4videoparse", "MP4V-ES", None),
        };
        let chain = match caps {
            Some(caps) => format!("{enc} ! {caps} ! {parse}"),
            None => format!("{enc} ! {parse}"),
        };
        Ok((chain, encoding))
    }

    fn broker(&mut self, s: &Sink) -> Result<String, String> {
        let conv = self.config.message_converter.clone().unwrap_or_default();
        let m = &s.msg;
        let Some(lib) = &m.proto_lib else {
            return Err(format!("[{}] type=6 needs msg-broker-proto-lib", s.group));
        };
        let file = Path::new(lib)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let protocol = ["mqtt", "amqp", "redis", "kafka"]
            .into_iter()
            .find(|p| file.contains(p))
            .ok_or_else(|| {
                format!(
                    "[{}] msg-broker-proto-lib={lib}: unknown protocol library (Ferrostream \
                     speaks MQTT, AMQP, Redis and Kafka: libnvds_mqtt_proto.so, \
                     libnvds_amqp_proto.so, libnvds_redis_proto.so, libnvds_kafka_proto.so)",
                    s.group
                )
            })?;
        let mut e = format!("rsmsgbroker name={} protocol={protocol}", s.group);
        let mut topic = m.topic.clone();
        if let Some(conn) = &m.conn_str {
            let parts: Vec<&str> = conn.split(';').map(str::trim).collect();
            let server = match parts.as_slice() {
                [host] => (*host).to_owned(),
                [host, port, ..] => format!("{host}:{port}"),
                [] => unreachable!("split gives at least one part"),
            };
            if topic.is_none() {
                topic = parts.get(2).map(|t| (*t).to_owned());
            }
            prop(&mut e, "server", quoted(&server));
        }
        if let Some(t) = topic {
            prop(&mut e, "topic", quoted(&t));
        }
        let payload = m.payload_type.or(conv.payload_type).unwrap_or(0);
        prop(&mut e, "schema", "deepstream-minimal");
        if payload == 0 {
            self.notice(format!(
                "[{}] msg-conv-payload-type=0: DeepStream's full schema is not made; messages \
                 use its minimal schema",
                s.group
            ));
        }
        // The converter's [sensor<N>] ids name the sources in the messages.
        if let Some(cfg) = m.conv_config.as_ref().or(conv.conv_config.as_ref()) {
            let sensors = crate::document::read_sensor_list(cfg)
                .map_err(|e| format!("[{}] msg-conv-config: {e}", s.group))?;
            let mut names: Vec<(u32, String)> = sensors
                .into_iter()
                .map(|(id, source)| (source, id))
                .collect();
            names.sort();
            if let Some(&(last, _)) = names.last() {
                // sensor-ids is positional: a source without a sensor keeps its number.
                let mut list: Vec<String> = (0..=last).map(|n| n.to_string()).collect();
                for (source, id) in names {
                    list[source as usize] = id;
                }
                prop(&mut e, "sensor-ids", quoted(&list.join(",")));
            }
        }
        if let Some(cfg) = &m.broker_config {
            for (key, value) in broker_credentials(cfg)? {
                prop(&mut e, key, quoted(&value));
            }
        }
        Ok(format!("{e} ! fakesink sync=false"))
    }
}

/// The `[streammux]` settings rsstreammux and rsmultiurisrcbin (its muxer's) share.
fn muxer_props(out: &mut String, mux: &StreamMux) {
    prop(
        out,
        "batched-push-timeout",
        mux.batched_push_timeout.unwrap_or(40_000),
    );
    if let Some(v) = mux.sync_inputs {
        prop(out, "sync-inputs", v);
    }
    if let Some(v) = mux.max_latency {
        prop(out, "max-latency", u64::from(v) * 1_000_000);
    }
}

/// The batch size: streammux's, else the source list's maximum, else the number of URIs.
fn batch_of(mux: &StreamMux, list: &SourceList) -> u32 {
    mux.batch_size
        .or(list.max_batch_size)
        .unwrap_or(list.uris.len().max(1) as u32)
}

/// The user name and password (and TLS files) of a broker configuration file
/// (`[message-broker]` group, as NVIDIA's protocol adapters read it).
fn broker_credentials(path: &Path) -> Result<Vec<(&'static str, String)>, String> {
    let file = ferrostream_core::ini::IniFile::load(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for section in file.sections.iter().filter(|s| s.name == "message-broker") {
        for entry in &section.entries {
            let key = match entry.key.as_str() {
                "username" | "user" => "username",
                "password" => "password",
                "cafile" | "ca-file" => "tls-ca-file",
                "certfile" | "cert-file" => "tls-cert-file",
                "keyfile" | "key-file" => "tls-key-file",
                _ => continue,
            };
            out.push((key, entry.value.trim_matches('"').to_owned()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Document, Form};

    struct TestEnv {
        gpu: bool,
        display: bool,
    }

    impl Env for TestEnv {
        fn has_element(&self, name: &str) -> bool {
            matches!(name, "x264enc" | "x265enc" | "avenc_mpeg4")
                || (self.gpu && matches!(name, "nvh264enc" | "nvh264dec"))
        }
        fn has_display(&self) -> bool {
            self.display
        }
        fn has_gpu(&self) -> bool {
            self.gpu
        }
    }

    const CPU: TestEnv = TestEnv {
        gpu: false,
        display: false,
    };

    fn plan(text: &str, env: &TestEnv) -> Result<Plan, String> {
        let doc = Document::parse(Path::new("/cfg/app.txt"), text, Form::KeyFile)
            .map_err(|e| e.to_string())?;
        let (config, _) = crate::keys::read(&doc).map_err(|e| e.to_string())?;
        translate(&config, env)
    }

    const BASE: &str = "[source0]\nenable=1\ntype=3\nuri=file://../media/a.mp4\nnum-sources=2\n\
        [streammux]\nbatch-size=2\nbatched-push-timeout=33000\n\
        [primary-gie]\nenable=1\nconfig-file=pgie.txt\ngie-unique-id=1\n\
        bbox-border-color0=1;0;0;1\n";

    #[test]
    fn sources_muxer_and_gie() {
        let p = plan(&format!("{BASE}[sink0]\nenable=1\ntype=1\n"), &CPU).unwrap();
        assert_eq!(
            p.description,
            "rsurisrcbin name=src0 uri=file:///cfg/../media/a.mp4 ! queue ! videoconvert ! \
             video/x-raw,format=I420 ! mux.sink_0  rsurisrcbin name=src1 \
             uri=file:///cfg/../media/a.mp4 ! queue ! videoconvert ! video/x-raw,format=I420 ! \
             mux.sink_1  rsstreammux name=mux batch-size=2 batched-push-timeout=33000 ! \
             rstrtinfer name=pgie config-file-path=/cfg/pgie.txt batch-size=2 gie-unique-id=1 ! \
             rsstreamdemux name=demux  demux.src_0 ! queue ! fakesink name=sink0 sync=false"
        );
        assert_eq!(p.meta_tap, "pgie");
        assert_eq!(p.stages, vec!["pgie"]);
    }

    /// NVIDIA's reference apps are run from their folder (`deepstream-app -c app.txt`) with
    /// URIs relative to it (`file://../streams/x.mp4`): the URI becomes absolute all the same.
    #[test]
    fn a_relative_uri_of_a_file_named_without_a_folder_becomes_absolute() {
        let doc = Document::parse(
            Path::new("app.txt"),
            "[source0]\nenable=1\ntype=3\nuri=file://../streams/a.mp4\n[sink0]\nenable=1\n",
            Form::KeyFile,
        )
        .unwrap();
        let (config, _) = crate::keys::read(&doc).unwrap();
        let p = translate(&config, &CPU).unwrap();
        let cwd = std::env::current_dir().unwrap();
        let want = format!("uri=file://{}/../streams/a.mp4 ", cwd.display());
        assert!(p.description.contains(&want), "{}", p.description);
    }

    #[test]
    fn tracker_secondaries_tiler_osd_and_sinks() {
        let text = format!(
            "{BASE}[tracker]\nenable=1\nll-config-file=trk.yml\n\
             [secondary-gie0]\nenable=1\nconfig-file=sgie.txt\noperate-on-gie-id=1\n\
             operate-on-class-ids=0;2\n[tiled-display]\nenable=1\nrows=1\ncolumns=2\n\
             width=1280\nheight=360\n[osd]\nenable=1\nborder-width=3\ntext-color=1;1;1;1\n\
             [sink0]\nenable=1\ntype=3\ncodec=1\nbitrate=2000000\noutput-file=out.mp4\n\
             [sink1]\nenable=1\ntype=4\nrtsp-port=8600\nudp-port=5600\n\
             [sink2]\nenable=1\ntype=2\n\
             [sink3]\nenable=1\ntype=6\nmsg-broker-proto-lib=/opt/libnvds_mqtt_proto.so\n\
             msg-broker-conn-str=127.0.0.1;1883;ds\nmsg-conv-payload-type=1\n"
        );
        let p = plan(&text, &CPU).unwrap();
        let d = &p.description;
        assert!(d.contains(" ! rstracker name=tracker config-file-path=/cfg/trk.yml ! rstrtinfer name=sgie0 config-file-path=/cfg/sgie.txt process-mode=secondary operate-on-gie-id=1 operate-on-class-ids=\"0;2\" ! tee name=meta"), "{d}");
        assert!(d.contains("meta. ! queue ! rstiler name=tiler rows=1 columns=2 width=1280 height=360 ! rsosd name=osd border-width=3 text-color=0xffffffff class-colors=0=0xff0000ff ! tee name=out"), "{d}");
        assert!(d.contains("out. ! queue ! videoconvert ! x264enc bitrate=2000 tune=zerolatency ! h264parse ! mp4mux ! filesink name=sink0 location=/cfg/out.mp4 sync=false"), "{d}");
        assert!(d.contains("out. ! queue ! videoconvert ! x264enc tune=zerolatency ! h264parse ! rtph264pay config-interval=1 pt=96 ! udpsink name=sink1 host=127.0.0.1 port=5600"), "{d}");
        assert!(
            d.contains("out. ! queue ! fakesink name=sink2 sync=true"),
            "{d}"
        );
        assert!(d.contains("meta. ! queue ! rsmsgbroker name=sink3 protocol=mqtt server=127.0.0.1:1883 topic=ds schema=deepstream-minimal ! fakesink sync=false"), "{d}");
        assert_eq!(p.meta_tap, "sgie0");
        assert_eq!(p.stages, ["pgie", "tracker", "sgie0"]);
        assert_eq!(
            p.rtsp,
            vec![RtspOut {
                rtsp_port: 8600,
                udp_port: 5600,
                encoding: "H264"
            }]
        );
        assert!(
            p.warnings[0].contains("no display here"),
            "{:?}",
            p.warnings
        );
        assert!(p.notices.iter().any(|n| n.contains("no hardware encoder")));
    }

    #[test]
    fn source_list_makes_one_multiurisrcbin() {
        let p = plan(
            "[source-list]\nnum-source-bins=2\nlist=file:///a.mp4;rtsp://cam/1\n\
             use-nvmultiurisrcbin=1\nsensor-id-list=a;b\nhttp-ip=127.0.0.1\nhttp-port=9100\n\
             max-batch-size=4\n[source-attr-all]\nlatency=200\nsmart-record=2\n\
             smart-rec-cache=5\nsmart-rec-duration=3\nsmart-rec-interval=7\n\
             [sink0]\nenable=1\ntype=1\n[tiled-display]\nenable=1\n",
            &CPU,
        )
        .unwrap();
        assert!(
            p.description.starts_with(
                "rsmultiurisrcbin name=src uri-list=file:///a.mp4,rtsp://cam/1 sensor-id-list=a,b \
             max-sources=4 batch-size=4 batched-push-timeout=40000 rest-address=127.0.0.1 \
             rest-port=9100 latency=200 record-cache=5 record-container=mp4 ! rstiler"
            ),
            "{}",
            p.description
        );
        assert_eq!(p.live_sources, vec![1]);
        assert_eq!(
            p.periodic_record,
            vec![PeriodicRecord {
                element: "src".into(),
                duration: 3,
                interval: 7,
                cameras: vec!["a".into(), "b".into()],
            }]
        );
        let e = plan(
            "[source-list]\nnum-source-bins=3\nlist=a;b\n[sink0]\nenable=1\n",
            &CPU,
        )
        .unwrap_err();
        assert!(e.contains("num-source-bins=3 but list has 2"), "{e}");
    }

    #[test]
    fn message_consumers_reach_the_sources_that_record() {
        const CONSUMER: &str = "[message-consumer0]\nenable=1\n\
            proto-lib=/opt/nvidia/deepstream/deepstream/lib/libnvds_mqtt_proto.so\n\
            conn-str=127.0.0.1;1883\nsubscribe-topic-list=c2d\n[sink0]\nenable=1\n";
        let p = plan(
            &format!(
                "{}{CONSUMER}",
                BASE.replace(
                    "num-sources=2\n",
                    "num-sources=2\nsmart-record=1\nsmart-rec-dir-path=rec\n"
                )
            ),
            &CPU,
        )
        .unwrap();
        assert!(
            p.description
                .contains("record-cache=20 record-dir=/cfg/rec record-container=mp4"),
            "{}",
            p.description
        );
        assert_eq!(p.consumers.len(), 1);
        let sub = &p.consumers[0];
        assert_eq!(
            (sub.host.as_str(), sub.port, sub.topics.as_slice()),
            ("127.0.0.1", 1883, &["c2d".to_owned()][..])
        );
        assert_eq!(sub.sensors, None);
        assert_eq!(
            p.record_targets
                .values()
                .map(|t| t.element.as_str())
                .collect::<Vec<_>>(),
            ["src0", "src1"]
        );
        assert!(p.periodic_record.is_empty());
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);

        let p = plan(&format!("{BASE}{CONSUMER}"), &CPU).unwrap();
        assert!(
            p.warnings[0].contains("[message-consumer0]: no source has smart-record set"),
            "{:?}",
            p.warnings
        );

        let p = plan(
            &format!(
                "[source-list]\nlist=file:///a.mp4;file:///b.mp4\nuse-nvmultiurisrcbin=1\n\
                 sensor-id-list=door\n[source-attr-all]\nsmart-record=1\n{CONSUMER}"
            ),
            &CPU,
        )
        .unwrap();
        let cameras: Vec<(u32, &str, Option<&str>)> = p
            .record_targets
            .iter()
            .map(|(id, t)| (*id, t.element.as_str(), t.camera.as_deref()))
            .collect();
        assert_eq!(cameras, [(0, "src", Some("door")), (1, "src", Some("1"))]);
        let e = plan(
            &format!(
                "{BASE}{}",
                CONSUMER.replace("c2d\n", "c2d\nsensor-list-file=/nonexistent/sensors.txt\n")
            ),
            &CPU,
        )
        .unwrap_err();
        assert!(
            e.contains("[message-consumer0] sensor-list-file=/nonexistent/sensors.txt"),
            "{e}"
        );
    }

    #[test]
    fn gpu_machines_keep_frames_on_the_gpu_and_use_nvenc() {
        let env = TestEnv {
            gpu: true,
            display: true,
        };
        let p = plan(
            &format!(
                "{BASE}[sink0]\nenable=1\ntype=3\noutput-file=o.mkv\ncontainer=2\n\
                 [tiled-display]\nenable=1\n[application]\nglobal-gpu-id=1\n"
            ),
            &env,
        )
        .unwrap();
        assert!(
            !p.description
                .contains("videoconvert ! video/x-raw,format=I420")
        );
        assert!(p.description.contains("gpu-id=1"));
        assert!(
            p.description
                .contains("nvh264enc ! h264parse ! matroskamux")
        );
        let cpu = plan(
            &format!("{BASE}[sink0]\nenable=1\n[application]\nglobal-gpu-id=1\n"),
            &CPU,
        )
        .unwrap();
        assert!(!cpu.description.contains("gpu-id"));
        assert!(cpu.notices.iter().any(|n| n.contains("no NVIDIA GPU")));
    }

    #[test]
    fn missing_pieces_are_named() {
        let e = plan("[sink0]\nenable=1\n", &CPU).unwrap_err();
        assert!(e.contains("no source"), "{e}");
        let e = plan(&BASE.replace("[primary-gie]\nenable=1\n", "[x]\n"), &CPU).unwrap_err();
        assert!(e.contains("no [sink<N>]"), "{e}");
        let e = plan(&format!("{BASE}[sink0]\nenable=1\ntype=3\n"), &CPU).unwrap_err();
        assert!(e.contains("[sink0] type=3 needs output-file"), "{e}");
        let e = plan(
            &format!("{BASE}[sink0]\nenable=1\ntype=6\nmsg-broker-proto-lib=libfoo.so\n"),
            &CPU,
        )
        .unwrap_err();
        assert!(e.contains("unknown protocol library"), "{e}");
        let e = plan("[source0]\nenable=1\ntype=5\n[sink0]\nenable=1\n", &CPU).unwrap_err();
        assert!(e.contains("nvarguscamerasrc"), "{e}");
    }

    #[test]
    fn quoting() {
        assert_eq!(quoted("a/b.mp4"), "a/b.mp4");
        assert_eq!(quoted("0;2"), "\"0;2\"");
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(quoted("x\"y"), "\"x\\\"y\"");
        assert_eq!(quoted(""), "\"\"");
    }
}
