// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer throughput against a bare ONNX Runtime session on the same tensors.
//!
//! Decodes the first frames of vtest.avi into memory, then measures
//! 1. the element: `appsrc ! rstrtinfer (a configuration of pipelines/, the COCO SSD one unless
//!    `--config NAME` names another, e.g. `yolo11_pose.txt`) ! fakesink`, frames/s end to end,
//!    and its per-stage time (`stats` property);
//! 2. a bare session: the same model, opened directly, run on the tensors rstrtinfer's
//!    pre-processing produced for the same frames.
//!
//! The element's overhead is (element time per frame - bare time per frame) / bare time.
//!
//! ```text
//! cargo bench -p ferrostream-tests --bench rstrtinfer [-- [--config NAME] [FRAMES [ROUNDS]]]
//! ```

use std::time::{Duration, Instant};

use ferrostream_tests::{element, init, launch, media, model, pull_samples, quoted, repo_root};
use gst::prelude::*;
use gst_trtinfer::config::InferConfig;
use gst_trtinfer::engine::onnxruntime::{OrtEngine, OrtOptions};
use gst_trtinfer::engine::{Engine, InputData};
use gst_trtinfer::inference::{Inference, InputTensor};

const WARMUP: usize = 5;

/// The configuration measured: `pipelines/<name>`, its model and label file found where the
/// tests find them.
struct Subject {
    path: std::path::PathBuf,
    config: InferConfig,
}

impl Subject {
    fn new(name: &str) -> Self {
        let path = repo_root().join("pipelines").join(name);
        let mut config = InferConfig::from_file(&path).unwrap().config;
        let file_name = |p: &std::path::Path| p.file_name().unwrap().to_str().unwrap().to_owned();
        config.onnx_file = config.onnx_file.as_deref().map(|p| model(&file_name(p)));
        config.labelfile_path = config
            .labelfile_path
            .as_deref()
            .map(|p| model(&file_name(p)));
        Self { path, config }
    }

    fn model(&self) -> std::path::PathBuf {
        self.config.onnx_file.clone().expect("an onnx-file")
    }

    /// `rstrtinfer`'s properties for it.
    fn properties(&self) -> String {
        let mut p = format!(
            "config-file-path={} onnx-file={}",
            quoted(&self.path),
            quoted(&self.model())
        );
        if let Some(labels) = &self.config.labelfile_path {
            p += &format!(" labelfile-path={}", quoted(labels));
        }
        p
    }
}

/// The first `count` decoded frames of vtest.avi, as I420 samples.
fn decode(count: usize) -> Vec<gst::Sample> {
    pull_samples(
        &format!(
            "filesrc location={} ! decodebin ! videoconvert ! video/x-raw,format=I420 \
             ! appsink name=sink",
            quoted(&media("vtest.avi"))
        ),
        count,
    )
}

/// Runs the element over `samples`; returns the wall time and the element's stats.
fn run_element(subject: &Subject, samples: &[gst::Sample]) -> (Duration, gst::Structure) {
    let caps = samples[0].caps().unwrap();
    let desc = format!(
        "appsrc name=src format=time ! rstrtinfer name=infer {} ! fakesink sync=false",
        subject.properties()
    );
    let pipeline = launch(&desc);
    let src: gst_app::AppSrc = element(&pipeline, "src");
    src.set_caps(Some(&caps.to_owned()));
    src.set_max_bytes(u64::MAX);
    // Model loading happens on the way to PAUSED, and the first inferences warm the session up
    // (as the bare session's warm-up runs do); time only the steady state after them.
    pipeline.set_state(gst::State::Paused).unwrap();
    let _ = pipeline.state(gst::ClockTime::from_seconds(60));
    pipeline.set_state(gst::State::Playing).unwrap();
    let infer = pipeline.by_name("infer").unwrap();
    let stats = || infer.property::<gst::Structure>("stats");
    for s in samples.iter().take(WARMUP) {
        src.push_buffer(s.buffer_owned().unwrap()).unwrap();
    }
    while stats().get::<u64>("frames").unwrap() < WARMUP as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let warm = stats();
    let start = Instant::now();
    for s in samples {
        src.push_buffer(s.buffer_owned().unwrap()).unwrap();
    }
    src.end_of_stream().unwrap();
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(600),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS");
    let elapsed = start.elapsed();
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{} {:?}", e.error(), e.debug());
    }
    // Stage times of the measured frames only.
    let end = stats();
    let mut measured = end.clone();
    for key in [
        "preprocess-ns",
        "inference-ns",
        "postprocess-ns",
        "frames",
        "inferred",
    ] {
        measured.set(
            key,
            end.get::<u64>(key).unwrap() - warm.get::<u64>(key).unwrap(),
        );
    }
    pipeline.set_state(gst::State::Null).unwrap();
    (elapsed, measured)
}

/// Pre-processes every sample with rstrtinfer's own code and keeps the tensors.
fn tensors(subject: &Subject, samples: &[gst::Sample]) -> (Vec<InputTensor>, Vec<usize>, Duration) {
    let mut inference = Inference::new(subject.config.clone(), 0).unwrap();
    let shape = inference.input_shape().to_vec();
    let info = gst_video::VideoInfo::from_caps(samples[0].caps().unwrap()).unwrap();
    let mut out = Vec::new();
    let mut spent = Duration::ZERO;
    for s in samples {
        let buffer = s.buffer().unwrap();
        let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).unwrap();
        let image = gst_trtinfer::rstrtinfer::frames::source_image(&frame).unwrap();
        let (w, h) = image.size();
        let start = Instant::now();
        inference.preprocess(
            0,
            &image,
            ferrostream_core::BBox::new(0.0, 0.0, w as f32, h as f32),
        );
        spent += start.elapsed();
        out.push(inference.tensor().clone());
    }
    (out, shape, spent)
}

fn data(t: &InputTensor) -> InputData<'_> {
    match t {
        InputTensor::F32(v) => InputData::F32(v),
        InputTensor::F16(v) => InputData::F16(v),
        InputTensor::U8(v) => InputData::U8(v),
    }
}

fn bare_engine(subject: &Subject) -> OrtEngine {
    OrtEngine::open(&OrtOptions::new(
        subject.model(),
        gst_trtinfer::config::Device::Cpu,
    ))
    .unwrap()
}

/// Engine calls back to back on the prepared tensors.
fn run_bare(subject: &Subject, tensors: &[InputTensor], shape: &[usize]) -> Duration {
    let mut engine = bare_engine(subject);
    let mut outputs = Vec::new();
    for t in tensors.iter().take(WARMUP) {
        engine.run(data(t), shape, &mut outputs).unwrap();
    }
    let start = Instant::now();
    for t in tensors {
        engine.run(data(t), shape, &mut outputs).unwrap();
    }
    start.elapsed()
}

/// Engine calls with rstrtinfer's pre-processing of the next frame run between them, as in a
/// pipeline; only the engine calls are timed.
fn run_bare_interleaved(
    subject: &Subject,
    samples: &[gst::Sample],
    tensors: &[InputTensor],
    shape: &[usize],
) -> Duration {
    let mut inference = Inference::new(subject.config.clone(), 0).unwrap();
    let info = gst_video::VideoInfo::from_caps(samples[0].caps().unwrap()).unwrap();
    let mut engine = bare_engine(subject);
    let mut outputs = Vec::new();
    let mut spent = Duration::ZERO;
    for (s, t) in samples.iter().zip(tensors) {
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(s.buffer().unwrap(), &info).unwrap();
        let image = gst_trtinfer::rstrtinfer::frames::source_image(&frame).unwrap();
        let (w, h) = image.size();
        inference.preprocess(
            0,
            &image,
            ferrostream_core::BBox::new(0.0, 0.0, w as f32, h as f32),
        );
        let start = Instant::now();
        engine.run(data(t), shape, &mut outputs).unwrap();
        spent += start.elapsed();
    }
    spent
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))
        .map_or("coco_ssd.txt", String::as_str);
    let mut numbers = args.iter().filter_map(|a| a.parse::<usize>().ok());
    let frames = numbers.next().unwrap_or(200);
    let rounds = numbers.next().unwrap_or(3).max(1);
    let subject = Subject::new(name);
    let samples = decode(frames);
    let n = samples.len();
    let info = gst_video::VideoInfo::from_caps(samples[0].caps().unwrap()).unwrap();
    println!(
        "rstrtinfer benchmark: pipelines/{name} ({}), {n} frames of vtest.avi ({}x{} I420), ONNX \
         Runtime CPU, {rounds} alternating rounds (medians)",
        subject.model().file_name().unwrap().to_string_lossy(),
        info.width(),
        info.height()
    );

    let (t, shape, pre_time) = tensors(&subject, &samples);
    let per = |d: Duration| d.as_secs_f64() * 1e3 / n as f64;
    let (mut element, mut bare, mut interleaved) = (vec![], vec![], vec![]);
    let (mut pre, mut engine, mut post) = (vec![], vec![], vec![]);
    // Alternate the two so that drift in the machine's speed hits both alike.
    for _ in 0..rounds {
        bare.push(per(run_bare(&subject, &t, &shape)));
        interleaved.push(per(run_bare_interleaved(&subject, &samples, &t, &shape)));
        let (elapsed, stats) = run_element(&subject, &samples);
        element.push(per(elapsed));
        let ms = |k: &str| stats.get::<u64>(k).unwrap() as f64 / 1e6 / n as f64;
        pre.push(ms("preprocess-ns"));
        engine.push(ms("inference-ns"));
        post.push(ms("postprocess-ns"));
    }
    let (element_ms, bare_ms) = (median(element), median(bare));
    let (pre_ms, engine_ms, post_ms) = (median(pre), median(engine), median(post));
    println!(
        "element   : {:8.2} frames/s  {element_ms:7.2} ms/frame",
        1e3 / element_ms
    );
    println!(
        "bare ORT  : {:8.2} frames/s  {bare_ms:7.2} ms/frame",
        1e3 / bare_ms
    );
    println!(
        "bare ORT, pre-processing between calls: {:.2} ms per engine call",
        median(interleaved)
    );
    println!(
        "overhead  : {:+7.2} % of model time (element vs bare session, wall clock)",
        (element_ms - bare_ms) / bare_ms * 100.0
    );
    println!(
        "in element: pre-processing {pre_ms:.3} ms, engine {engine_ms:.2} ms, post-processing \
         {post_ms:.3} ms per frame; pre+post = {:.2} % of engine time",
        (pre_ms + post_ms) / engine_ms * 100.0
    );
    println!(
        "pre-processing alone (no engine running): {:.3} ms/frame",
        per(pre_time)
    );
}
