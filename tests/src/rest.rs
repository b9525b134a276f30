// SPDX-License-Identifier: MIT OR Apache-2.0
//! For the tests of `rsmultiurisrcbin`'s REST API: requests sent with curl (a real HTTP
//! client), DeepStream's stream bodies, and a playing pipeline whose batches are counted per
//! stream id at its `sink` element.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrostream_core::BatchMeta;
use gst::prelude::*;
use serde_json::Value;

use crate::{element, init, media, output_within};

pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

/// `curl` with `args`; returns the HTTP status and the body.
pub fn curl(args: &[&str]) -> (u16, String) {
    let out = output_within(
        Command::new("curl")
            .args(["-s", "--max-time", "20", "-w", "\n%{http_code}"])
            .args(args),
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

pub fn request(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut args = vec!["-X", method, url.as_str()];
    if let Some(body) = body {
        args.extend(["-d", body]);
    }
    let (status, body) = curl(&args);
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

pub fn add_body(camera: &str, url: &str) -> String {
    serde_json::json!({"key": "sensor", "value": {"camera_id": camera, "camera_name": camera,
        "camera_url": url, "change": "camera_add"}})
    .to_string()
}

pub fn remove_body(camera: &str) -> String {
    serde_json::json!({"key": "sensor", "value": {"camera_id": camera, "change": "camera_remove"}})
        .to_string()
}

/// A playing pipeline whose sink's batches are counted per stream id, with the stream-eos
/// events that reach the sink.
pub struct Running {
    pub pipeline: gst::Pipeline,
    pub seen: Arc<Mutex<Seen>>,
}

#[derive(Default)]
pub struct Seen {
    pub frames: std::collections::BTreeMap<u32, u64>,
    pub batches: u64,
    pub last_batch: Option<Instant>,
    pub stream_eos: Vec<u32>,
    /// Frames of rsanalytics: per stream, the names of the regions counted in the last frame.
    pub rois: std::collections::BTreeMap<u32, Vec<String>>,
    /// Element messages taken from the bus and not yet asked for.
    pub messages: Vec<gst::Structure>,
    /// The warnings posted (a camera that failed for good is one), for the report of a wait
    /// that timed out.
    pub warnings: Vec<String>,
}

impl Running {
    pub fn start(description: &str) -> Self {
        init();
        let pipeline = gst::parse::launch(description)
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let sink: gst::Element = element(&pipeline, "sink");
        let pad = sink.static_pad("sink").unwrap();
        let s = seen.clone();
        pad.add_probe(
            gst::PadProbeType::BUFFER | gst::PadProbeType::EVENT_DOWNSTREAM,
            move |_, info| {
                let mut seen = s.lock().unwrap();
                match &info.data {
                    Some(gst::PadProbeData::Buffer(b)) => {
                        seen.batches += 1;
                        seen.last_batch = Some(Instant::now());
                        if let Some(meta) = BatchMeta::of(b) {
                            for f in &meta.batch().frames {
                                *seen.frames.entry(f.source_id).or_default() += 1;
                                if let Some(a) = &f.analytics {
                                    seen.rois.insert(
                                        f.source_id,
                                        a.roi_counts.keys().cloned().collect(),
                                    );
                                }
                            }
                        }
                    }
                    Some(gst::PadProbeData::Event(e)) => {
                        if let Some(id) = ferrostream_core::batch::events::parse_stream_eos(e) {
                            seen.stream_eos.push(id);
                        }
                    }
                    _ => {}
                }
                gst::PadProbeReturn::Ok
            },
        );
        pipeline.set_state(gst::State::Playing).unwrap();
        Self { pipeline, seen }
    }

    pub fn frames(&self, stream: u32) -> u64 {
        self.seen
            .lock()
            .unwrap()
            .frames
            .get(&stream)
            .copied()
            .unwrap_or(0)
    }

    /// Takes every message off the bus (a message holds its source alive), keeping the element
    /// messages; fails on an error message.
    fn drain(&self, what: &str) {
        let bus = self.pipeline.bus().unwrap();
        while let Some(m) = bus.pop() {
            match m.view() {
                gst::MessageView::Error(e) => {
                    panic!("{what}: error {} {:?}", e.error(), e.debug())
                }
                gst::MessageView::Element(e) => {
                    if let Some(s) = e.structure() {
                        self.seen.lock().unwrap().messages.push(s.to_owned());
                    }
                }
                gst::MessageView::Warning(w) => {
                    let from = m.src().map(|s| s.path_string().to_string());
                    self.seen.lock().unwrap().warnings.push(format!(
                        "{}: {} ({:?})",
                        from.unwrap_or_default(),
                        w.error(),
                        w.debug()
                    ));
                }
                _ => {}
            }
        }
    }

    /// Waits until `done` holds, failing on an error message or after `limit`.
    pub fn wait(&self, what: &str, limit: Duration, mut done: impl FnMut(&Running) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            self.drain(what);
            if done(self) {
                return;
            }
            if Instant::now() >= deadline {
                let (_, current, pending) = self.pipeline.state(gst::ClockTime::ZERO);
                // The elements behind or ahead of the pipeline (a source left in READY).
                let apart: Vec<String> = self
                    .pipeline
                    .iterate_recurse()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| {
                        let (_, c, p) = e.state(gst::ClockTime::ZERO);
                        (c != current || p != gst::State::VoidPending)
                            .then(|| format!("{} {c:?}/{p:?}", e.path_string()))
                    })
                    .collect();
                let seen = self.seen.lock().unwrap();
                panic!(
                    "{what}: not within {limit:?} (pipeline {current:?}, pending {pending:?}; \
                     {} batches, frames per stream {:?}; elements in another state {apart:?}; \
                     warnings {:#?})",
                    seen.batches, seen.frames, seen.warnings
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Element messages posted since the last call (fails on an error message).
    pub fn messages(&self, into: &mut Vec<gst::Structure>) {
        self.drain("messages");
        into.append(&mut self.seen.lock().unwrap().messages);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A watchdog on the stop itself.
        let pipeline = self.pipeline.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = pipeline.set_state(gst::State::Null);
            let _ = tx.send(());
        });
        if rx.recv_timeout(Duration::from_secs(30)).is_err() && !std::thread::panicking() {
            panic!("the pipeline did not stop within 30 s");
        }
    }
}

pub fn vtest_uri() -> String {
    file_uri(&media("vtest.avi"))
}
