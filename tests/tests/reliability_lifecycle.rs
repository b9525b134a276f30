// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, lifecycle: one pipeline taken NULL -> PLAYING -> EOS -> NULL many times,
//! paused and resumed while playing, seeked back with a flush, and several pipelines running at
//! once on the same model; the detections must be the same every time. The source is
//! rsurisrcbin (a decodebin linked by gst-launch syntax is not linked again after a restart).
//!
//! Cycles: `FERROSTREAM_LIFECYCLE_CYCLES` (default 5, the CI variant).

use std::time::Duration;

use ferrostream_core::BatchMeta;
use ferrostream_tests::{element, init, media, model, quoted, repo_root};
use gst::prelude::*;

fn cycles() -> usize {
    std::env::var("FERROSTREAM_LIFECYCLE_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// (frame number, class, box rounded to pixels) of every detection: what must not change.
type Detections = Vec<(u64, i32, [i32; 4])>;

fn description() -> String {
    format!(
        "rsurisrcbin uri={} ! videoconvert \
         ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} \
         ! rstracker ! rsanalytics roi=All=0;0;176;0;176;144;0;144 ! rsosd \
         ! appsink name=sink sync=false",
        gst::glib::filename_to_uri(media("carphone_pristine.mp4"), None).unwrap(),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
    )
}

fn new_pipeline() -> gst::Pipeline {
    init();
    gst::parse::launch(&description())
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap()
}

fn detections_of(sample: &gst::Sample) -> Detections {
    let meta = sample.buffer().unwrap().meta::<BatchMeta>().unwrap();
    let mut out = Vec::new();
    for f in &meta.batch().frames {
        for o in f.objects.iter().filter(|o| o.confidence > 0.0) {
            let b = o.detector_bbox;
            out.push((
                f.frame_num,
                o.class_id,
                [b.left, b.top, b.width, b.height].map(|v| v.round() as i32),
            ));
        }
    }
    out
}

/// Plays `pipeline` from its current state to EOS; calls `during` with each frame's index.
fn play(pipeline: &gst::Pipeline, mut during: impl FnMut(usize, &gst::Pipeline)) -> Detections {
    let sink: gst_app::AppSink = element(pipeline, "sink");
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut all = Vec::new();
    let mut frames = 0;
    loop {
        if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
            panic!("{msg:?}");
        }
        match sink.try_pull_sample(gst::ClockTime::from_seconds(30)) {
            Some(sample) => {
                all.extend(detections_of(&sample));
                during(frames, pipeline);
                frames += 1;
            }
            None if sink.is_eos() => break,
            None => panic!("no frame for 30 s after {frames}: a hang"),
        }
    }
    assert_eq!(frames, 120, "carphone has 120 frames");
    all
}

#[test]
fn restarted_paused_and_parallel_runs_detect_the_same() {
    let pipeline = new_pipeline();
    let reference = play(&pipeline, |_, _| {});
    assert!(reference.len() > 100, "{} detections", reference.len());
    // NULL -> PLAYING -> EOS -> NULL, again and again, in one process on one pipeline.
    for cycle in 0..cycles() {
        pipeline.set_state(gst::State::Null).unwrap();
        let again = play(&pipeline, |_, _| {});
        assert_eq!(again, reference, "cycle {cycle}");
    }
    // Paused and resumed every 10th frame.
    pipeline.set_state(gst::State::Null).unwrap();
    let paused = play(&pipeline, |i, p| {
        if i % 10 == 5 {
            p.set_state(gst::State::Paused).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            p.set_state(gst::State::Playing).unwrap();
        }
    });
    assert_eq!(paused, reference, "paused and resumed");
    pipeline.set_state(gst::State::Null).unwrap();
    // Several pipelines at once, each with its own engine on the same model file.
    let parallel: Vec<Detections> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let p = new_pipeline();
                    let d = play(&p, |_, _| {});
                    p.set_state(gst::State::Null).unwrap();
                    d
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (i, run) in parallel.iter().enumerate() {
        assert_eq!(run, &reference, "parallel pipeline {i}");
    }
}

#[test]
fn flushing_seeks_back_give_the_same_frames_again() {
    let pipeline = new_pipeline();
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    let reference = play(&pipeline, |_, _| {});
    pipeline.set_state(gst::State::Null).unwrap();
    // Play 40 frames, seek back to the start with a flush, play to the end.
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut before = Vec::new();
    for _ in 0..40 {
        let sample = sink
            .try_pull_sample(gst::ClockTime::from_seconds(30))
            .expect("a frame");
        before.extend(detections_of(&sample));
    }
    pipeline
        .seek_simple(
            gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
            gst::ClockTime::ZERO,
        )
        .unwrap();
    let mut after = Vec::new();
    let mut frames = 0;
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(30)) {
        after.extend(detections_of(&sample));
        frames += 1;
    }
    assert!(sink.is_eos(), "no EOS after the seek");
    pipeline.set_state(gst::State::Null).unwrap();
    // The frame counters go on after a seek; compare the detections of each frame in order.
    let strip = |d: &Detections| -> Vec<(i32, [i32; 4])> { d.iter().map(|x| (x.1, x.2)).collect() };
    assert_eq!(frames, 120, "frames after the seek");
    assert_eq!(
        strip(&after),
        strip(&reference),
        "the whole run again after the seek"
    );
    let first: Vec<_> = before.iter().map(|x| (x.1, x.2)).collect();
    assert_eq!(first, strip(&reference)[..first.len()], "before the seek");
}
