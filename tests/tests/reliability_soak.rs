// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, soak: eight sources of mixed sizes and formats through the whole chain
//! (rsstreammux, rstrtinfer, rstracker, rsanalytics, rsosd, rstiler, rsosd again, rsmetaexport)
//! for a fixed number of batches, with the process's RSS sampled throughout. Passes when every
//! frame that went in came out and the RSS slope after the warm-up stays within the bound.
//!
//! Batches: `FERROSTREAM_SOAK_BATCHES` (default 3,000, the CI variant; docs/RELIABILITY.md has
//! the long runs). The first 1,200 batches (or fifth, if more) are the warm-up: RSS grows by
//! about 0.7 MiB over them (pools, the glyph atlas, the allocator's arenas), then stays flat. The inference model is a tiny
//! generated detector (two constant boxes per frame) so that the run measures Ferrostream, not
//! the network.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use ferrostream_core::BatchMeta;
use ferrostream_tests::{element, init, quoted, repo_root, rss_kib};
use gst::prelude::*;

fn batches() -> u64 {
    std::env::var("FERROSTREAM_SOAK_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

/// Least-squares slope of `points` (x, y) and its standard error.
fn slope(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let residual: f64 = points
        .iter()
        .map(|p| (p.1 - my - b * (p.0 - mx)).powi(2))
        .sum();
    let se = (residual / (n - 2.0) / sxx).sqrt();
    (b, se)
}

/// Sources of the soak: (format, width, height, pattern).
const SOURCES: [(&str, u32, u32, &str); 8] = [
    ("I420", 320, 240, "ball"),
    ("NV12", 640, 360, "smpte"),
    ("RGBA", 160, 120, "snow"),
    ("BGRx", 352, 288, "ball"),
    ("YUY2", 320, 180, "gradient"),
    ("I420", 176, 144, "pinwheel"),
    ("RGB", 256, 256, "ball"),
    ("NV12", 480, 270, "circular"),
];

#[test]
fn soak_through_the_whole_chain() {
    init();
    let batches = batches();
    let infer = format!(
        "rstrtinfer onnx-file={} output-parser=yolov8 pre-cluster-threshold=0.5 \
         net-scale-factor=0.00392156863 batch-size=8",
        quoted(&repo_root().join("tests/fixtures/yolov8_constant.onnx"))
    );
    let mut desc = format!(
        "rsstreammux name=mux batch-size=8 ! {infer} ! rstracker \
         ! rsanalytics name=analytics roi=Zone=0;0;100;0;100;100;0;100 line-crossing=L=40;50;60;50;50;0;50;200 \
         ! rsosd ! rstiler rows=2 columns=4 width=640 height=240 ! rsosd \
         ! rsmetaexport location=/dev/null ! appsink name=sink sync=false "
    );
    for (i, (format, w, h, pattern)) in SOURCES.iter().enumerate() {
        desc += &format!(
            "videotestsrc num-buffers={batches} pattern={pattern} \
             ! video/x-raw,format={format},width={w},height={h},framerate=30/1 \
             ! videoconvert ! video/x-raw,format=I420 ! queue max-size-buffers=4 ! mux.sink_{i} "
        );
    }
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    // Frames into the muxer's batches, and out of the chain.
    let batched = Arc::new(Mutex::new(0u64));
    let b = batched.clone();
    let mux: gst::Element = element(&pipeline, "mux");
    mux.static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(meta) = info.buffer().and_then(|b| b.meta::<BatchMeta>()) {
                *b.lock().unwrap() += meta.batch().frames.len() as u64;
            }
            gst::PadProbeReturn::Ok
        });
    // Frames and objects after the analytics (before the tiler makes one picture per batch).
    let analysed = Arc::new(Mutex::new((0u64, 0u64)));
    let a = analysed.clone();
    let analytics: gst::Element = element(&pipeline, "analytics");
    analytics
        .static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(meta) = info.buffer().and_then(|b| b.meta::<BatchMeta>()) {
                let mut a = a.lock().unwrap();
                a.0 += meta.batch().frames.len() as u64;
                a.1 += meta.batch().object_count() as u64;
            }
            gst::PadProbeReturn::Ok
        });
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut out = 0u64;
    loop {
        if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
            panic!("{msg:?}");
        }
        match sink.try_pull_sample(gst::ClockTime::from_seconds(20)) {
            Some(sample) => {
                out += 1;
                assert!(sample.buffer().unwrap().meta::<BatchMeta>().is_some());
                if out.is_multiple_of(50) {
                    samples.push((out as f64, rss_kib() as f64));
                }
            }
            None if sink.is_eos() => break,
            None => panic!("no output for 20 s after {out} outputs: a stall"),
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let every = (samples.len() / 10).max(1);
    let trace: Vec<u64> = samples.iter().step_by(every).map(|s| s.1 as u64).collect();
    println!("SOAK RSS (KiB) every {} batches: {trace:?}", every * 50);
    // Every frame went into a batch; the tiler gives one picture per batch.
    let frames_in = batches * SOURCES.len() as u64;
    assert_eq!(*batched.lock().unwrap(), frames_in, "frames batched");
    assert!(out >= batches, "{out} pictures for {frames_in} frames");
    let (frames_analysed, objects) = *analysed.lock().unwrap();
    assert_eq!(
        frames_analysed, frames_in,
        "frames through inference, tracker, analytics"
    );
    assert_eq!(
        objects,
        2 * frames_in,
        "the detector's two boxes on every frame"
    );
    // The slope after the warm-up.
    let warm_up = (batches / 5).max(1200) as f64;
    let steady: Vec<(f64, f64)> = samples.iter().copied().filter(|s| s.0 > warm_up).collect();
    assert!(
        steady.len() >= 10,
        "too few batches after the warm-up: {batches}"
    );
    let (kib_per_batch, se) = slope(&steady);
    let per_1000 = kib_per_batch * 1000.0;
    println!(
        "SOAK {frames_in} frames in {out} batches, {secs:.1} s ({:.0} frames/s); RSS {} -> {} KiB; \
         slope after warm-up {per_1000:.1} +- {:.1} KiB per 1000 batches",
        frames_in as f64 / secs,
        samples.first().unwrap().1,
        samples.last().unwrap().1,
        se * 1000.0
    );
    // Decided: a leak is a slope above 64 KiB per 1000 batches (64 bytes a batch) that is also
    // more than three standard errors from zero.
    assert!(
        per_1000 < 64.0 || per_1000 < 3.0 * se * 1000.0,
        "RSS grows {per_1000:.1} KiB per 1000 batches (+- {:.1})",
        se * 1000.0
    );
}
