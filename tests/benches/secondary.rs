// SPDX-License-Identifier: MIT OR Apache-2.0
//! Secondary inference throughput: MobileNetV2 (`pipelines/imagenet_secondary.txt`) on the
//! objects the COCO detector finds in vtest.avi.
//!
//! 1. Crops per second at `batch-size` 1, 8 and 32: the first frames of vtest.avi are decoded
//!    and run through the detector once; the frames are then grouped into batches of 8 (as
//!    rsstreammux would for eight cameras, about 36 objects a batch) and pushed through
//!    `rstrtinfer process-mode=secondary` with every object inferred on every frame.
//! 2. The re-inference count: vtest.avi through detector, rstracker and the classifier with
//!    `secondary-reinfer-interval=30`: objects seen against classifier runs.
//!
//! ```text
//! cargo bench -p ferrostream-tests --bench secondary [-- FRAMES [TRACKED_FRAMES]]
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrostream_core::batch::{BATCH_FEATURE, SourceStream, Surface};
use ferrostream_core::{Batch, BatchMeta};
use ferrostream_tests::{
    element, launch, media, pull_samples, quoted, repo_root, run_pipeline_stats,
};
use gst::prelude::*;

const SOURCES: usize = 8;

fn config(name: &str) -> String {
    quoted(&repo_root().join("pipelines").join(name))
}

/// The first `count` frames of vtest.avi (I420), each with the COCO detector's objects.
fn detected_frames(count: usize) -> Vec<gst::Sample> {
    pull_samples(
        &format!(
            "filesrc location={} ! decodebin ! videoconvert ! video/x-raw,format=I420 \
             ! rstrtinfer config-file-path={} ! appsink name=sink",
            quoted(&media("vtest.avi")),
            config("coco_ssd.txt")
        ),
        count,
    )
}

/// Groups the frames into batches of [`SOURCES`] frames, as from that many cameras.
fn batches(samples: &[gst::Sample]) -> (gst::Caps, Vec<gst::Buffer>) {
    let caps = samples[0].caps().unwrap().to_owned();
    let info = gst_video::VideoInfo::from_caps(&caps).unwrap();
    let streams: Vec<Arc<SourceStream>> = (0..SOURCES as u32)
        .map(|source_id| {
            Arc::new(SourceStream {
                source_id,
                caps: caps.clone(),
                info: info.clone(),
                segment: gst::FormattedSegment::new(),
                stream_id: None,
            })
        })
        .collect();
    let buffers = samples
        .chunks_exact(SOURCES)
        .enumerate()
        .map(|(n, chunk)| {
            let mut frames = Vec::new();
            let mut surfaces = Vec::new();
            for (i, sample) in chunk.iter().enumerate() {
                let buffer = sample.buffer_owned().unwrap();
                let meta = buffer.meta::<BatchMeta>().unwrap();
                let mut frame = meta.batch().frames[0].clone();
                frame.source_id = i as u32;
                frame.pad_index = i as u32;
                frame.frame_num = n as u64;
                frame.surface_index = i as u32;
                frames.push(frame);
                surfaces.push(Surface {
                    buffer,
                    stream: streams[i].clone(),
                });
            }
            let mut batch = gst::Buffer::new();
            {
                let b = batch.get_mut().unwrap();
                b.set_pts(gst::ClockTime::from_mseconds(40 * n as u64));
                BatchMeta::add_with_surfaces(b, Batch { frames }, surfaces);
            }
            batch
        })
        .collect();
    let batch_caps = gst::Caps::builder("video/x-raw")
        .features([BATCH_FEATURE])
        .field("format", "I420")
        .field("framerate", gst::Fraction::new(25, 1))
        .build();
    (batch_caps, buffers)
}

/// Pushes `buffers` through the classifier at `batch_size`; returns the wall time and stats.
fn classify(
    caps: &gst::Caps,
    buffers: &[gst::Buffer],
    batch_size: u32,
) -> (Duration, gst::Structure) {
    let pipeline = launch(&format!(
        "appsrc name=src format=time ! rstrtinfer name=sgie config-file-path={} \
         batch-size={batch_size} secondary-reinfer-interval=0 ! fakesink sync=false",
        config("imagenet_secondary.txt")
    ));
    let src: gst_app::AppSrc = element(&pipeline, "src");
    src.set_caps(Some(caps));
    pipeline.set_state(gst::State::Playing).unwrap();
    // Warm-up: the first batch (engine allocations) is not timed.
    src.push_buffer(buffers[0].clone()).unwrap();
    let sgie = pipeline.by_name("sgie").unwrap();
    let warm = |s: &gst::Structure| s.get::<u64>("frames").unwrap() >= SOURCES as u64;
    while !warm(&sgie.property::<gst::Structure>("stats")) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = sgie.property::<gst::Structure>("stats");
    let t0 = Instant::now();
    for b in &buffers[1..] {
        src.push_buffer(b.clone()).unwrap();
    }
    src.end_of_stream().unwrap();
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(600),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS");
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{} ({:?})", e.error(), e.debug());
    }
    let wall = t0.elapsed();
    let after = sgie.property::<gst::Structure>("stats");
    pipeline.set_state(gst::State::Null).unwrap();
    let mut delta = gst::Structure::new_empty("stats");
    for field in [
        "frames",
        "inferred",
        "engine-calls",
        "preprocess-ns",
        "inference-ns",
        "postprocess-ns",
    ] {
        let d = after.get::<u64>(field).unwrap() - before.get::<u64>(field).unwrap();
        delta.set(field, d);
    }
    (wall, delta)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let frames: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(72);
    let tracked_frames: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(795);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());

    let samples = detected_frames(frames);
    let (caps, buffers) = batches(&samples);
    let objects: usize = buffers[1..]
        .iter()
        .map(|b| b.meta::<BatchMeta>().unwrap().batch().object_count())
        .sum();
    println!(
        "{} batches of {SOURCES} vtest frames (768x576 I420), {objects} objects in the timed \
         batches; ONNX Runtime CPU, {threads} hardware threads",
        buffers.len() - 1
    );
    for batch_size in [1u32, 8, 32] {
        let (wall, s) = classify(&caps, &buffers, batch_size);
        let crops = s.get::<u64>("inferred").unwrap();
        let per = |f: &str| s.get::<u64>(f).unwrap() as f64 / 1e6 / crops as f64;
        println!(
            "batch-size {batch_size:>2}: {:>6.1} crops/s ({crops} crops in {} engine calls, \
             {:.2} s); per crop: pre-processing {:.3} ms, engine {:.2} ms, parsing {:.3} ms",
            crops as f64 / wall.as_secs_f64(),
            s.get::<u64>("engine-calls").unwrap(),
            wall.as_secs_f64(),
            per("preprocess-ns"),
            per("inference-ns"),
            per("postprocess-ns"),
        );
    }

    // Tracked objects, re-inferred every 30 frames.
    let (out, stats) = run_pipeline_stats(
        &format!(
            "filesrc location={} ! decodebin ! videoconvert ! rstrtinfer config-file-path={} \
             ! rstracker ! rstrtinfer name=sgie config-file-path={} \
             secondary-reinfer-interval=30 ! appsink name=sink",
            quoted(&media("vtest.avi")),
            config("coco_ssd.txt"),
            config("imagenet_secondary.txt")
        ),
        tracked_frames,
        Duration::from_secs(3600),
        "sgie",
    )
    .unwrap();
    let tracks: std::collections::BTreeSet<u64> = out
        .frames
        .iter()
        .flat_map(|f| f.objects.iter().filter_map(|o| o.object_id))
        .collect();
    let objects = stats.get::<u64>("objects").unwrap();
    let inferred = stats.get::<u64>("inferred").unwrap();
    println!(
        "secondary-reinfer-interval=30 over {} vtest frames: {objects} objects classified, \
         {inferred} classifier runs ({:.1}%), {} cached results reused; {} tracks",
        out.frames.len(),
        100.0 * inferred as f64 / objects as f64,
        stats.get::<u64>("cached-results").unwrap(),
        tracks.len()
    );
}
