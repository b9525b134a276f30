// SPDX-License-Identifier: MIT OR Apache-2.0
//! The elements' Prometheus series equal their read-only counters: rsstreammux's batches, frames
//! per batch, sources and dropped frames; rstrtinfer's frames, batches and frames skipped by
//! `interval`; rsmsgbroker's message counters against librdkafka's mock Kafka cluster.

use std::time::{Duration, Instant};

use ferrostream_core::{Batch, BatchMeta, Frame};
use ferrostream_tests::{element, launch, model, quoted, repo_root, run_pipeline_inspect};
use gst::prelude::*;

const TIMEOUT: Duration = Duration::from_secs(300);

/// The value of `series` (name and labels, as rendered) in the metrics text.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn render() -> String {
    ferrostream_core::metrics::global().render()
}

#[test]
fn muxer_and_inference_series_equal_their_properties() {
    const FRAMES: u64 = 7;
    let source = |pattern: &str, pad: u32| {
        format!(
            "videotestsrc pattern={pattern} num-buffers={FRAMES} \
             ! video/x-raw,format=RGB,width=320,height=240,framerate=25/1 ! m-mux.sink_{pad} "
        )
    };
    // interval=1: every other batch goes through without inference.
    let desc = format!(
        "rsstreammux name=m-mux batch-size=2 batched-push-timeout=-1 \
         ! rstrtinfer name=m-infer interval=1 config-file-path={} onnx-file={} labelfile-path={} \
         ! appsink name=sink {} {}",
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        source("smpte", 0),
        source("ball", 1),
    );
    let mut seen = None;
    let out = run_pipeline_inspect(&desc, usize::MAX, TIMEOUT, |p| {
        let mux = p.by_name("m-mux").unwrap();
        let stats = p
            .by_name("m-infer")
            .unwrap()
            .property::<gst::Structure>("stats");
        seen = Some((
            render(),
            mux.property::<u64>("batches"),
            mux.property::<u64>("frames-dropped"),
            stats,
        ));
    })
    .unwrap();
    let (text, batches, dropped, stats) = seen.unwrap();
    assert_eq!(out.frames.len() as u64, 2 * FRAMES);
    let mux = |name: &str| metric(&text, &format!("{name}{{element=\"m-mux\"}}"));
    assert_eq!(batches, FRAMES, "a frame of each source per batch");
    assert_eq!(
        mux("ferrostream_streammux_batches_total"),
        Some(batches as f64)
    );
    assert_eq!(
        mux("ferrostream_streammux_batch_frames_count"),
        Some(batches as f64)
    );
    assert_eq!(
        mux("ferrostream_streammux_batch_frames_sum"),
        Some((2 * FRAMES) as f64)
    );
    assert_eq!(mux("ferrostream_streammux_batch_size"), Some(2.0));
    assert_eq!(mux("ferrostream_streammux_sources"), Some(2.0));
    assert_eq!(dropped, 0);
    for source in 0..2 {
        let series = format!(
            "ferrostream_streammux_frames_dropped_total{{element=\"m-mux\",source_id=\"{source}\"}}"
        );
        assert_eq!(metric(&text, &series), Some(0.0), "{series} in\n{text}");
    }

    let infer = |name: &str| metric(&text, &format!("{name}{{element=\"m-infer\"}}"));
    let count = |field: &str| stats.get::<u64>(field).unwrap() as f64;
    assert_eq!(count("frames"), (2 * FRAMES) as f64);
    assert_eq!(
        infer("ferrostream_inference_frames_total"),
        Some(count("frames"))
    );
    // Batches 0, 2, 4, 6 are inferred; the others pass by.
    assert_eq!(count("batches"), 4.0);
    assert_eq!(
        infer("ferrostream_inference_batches_total"),
        Some(count("batches"))
    );
    assert_eq!(count("skipped"), 6.0);
    assert_eq!(
        infer("ferrostream_inference_frames_skipped_total"),
        Some(count("skipped"))
    );
    assert_eq!(
        infer("ferrostream_inference_engine_seconds_count"),
        Some(count("batches"))
    );
    assert_eq!(infer("ferrostream_inference_queue_depth"), Some(0.0));
    // The series leave with the elements.
    let after = render();
    assert!(!after.contains("element=\"m-mux\""), "{after}");
    assert!(!after.contains("element=\"m-infer\""), "{after}");
}

/// Frames queued on a released pad are dropped, counted per source.
#[test]
fn frames_queued_on_a_released_pad_are_counted_as_dropped() {
    let pipeline = launch(
        "rsstreammux name=d-mux batched-push-timeout=-1 ! fakesink \
         videotestsrc name=src num-buffers=50 ! video/x-raw,format=I420,width=64,height=48 \
         ! d-mux.sink_0",
    );
    let mux: gst::Element = element(&pipeline, "d-mux");
    // A second source that never sends: no batch leaves, frames of the first wait in its pad.
    let idle = mux.request_pad_simple("sink_1").unwrap();
    let pad = mux.static_pad("sink_0").unwrap();
    let arrived = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = arrived.clone();
    pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        gst::PadProbeReturn::Ok
    });
    let _ = pipeline.set_state(gst::State::Playing);
    // The pad queues one frame (no latency is configured) and the source blocks with the second
    // in the muxer's chain function: both are the muxer's, neither can be batched.
    let deadline = Instant::now() + Duration::from_secs(60);
    while arrived.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        assert!(
            Instant::now() < deadline,
            "the frames did not reach the muxer"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let queued = arrived.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(queued, 2, "one queued, one waiting");
    assert_eq!(
        metric(
            &render(),
            "ferrostream_streammux_sources{element=\"d-mux\"}"
        ),
        Some(1.0),
        "one linked source"
    );
    // As the element's docs say: release the muxer's pad, then stop the source.
    mux.release_request_pad(&pad);
    element::<gst::Element>(&pipeline, "src")
        .set_state(gst::State::Null)
        .unwrap();
    let text = render();
    assert_eq!(mux.property::<u64>("frames-dropped"), queued);
    assert_eq!(
        metric(
            &text,
            "ferrostream_streammux_frames_dropped_total{element=\"d-mux\",source_id=\"0\"}"
        ),
        Some(queued as f64),
        "{text}"
    );
    assert_eq!(
        metric(&text, "ferrostream_streammux_sources{element=\"d-mux\"}"),
        Some(0.0)
    );
    mux.release_request_pad(&idle);
    pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn broker_series_equal_the_message_counters() {
    ferrostream_tests::init();
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    mock.create_topic("fs-metrics", 1, 1).unwrap();
    let element = gst::ElementFactory::make("rsmsgbroker")
        .name("b-broker")
        .property_from_str("protocol", "kafka")
        .property_from_str("server", &mock.bootstrap_servers())
        .property_from_str("topic", "fs-metrics")
        .property_from_str("queue-size", "15")
        .property_from_str("flush-timeout", "30000")
        .build()
        .unwrap();
    element.set_bus(Some(&gst::Bus::new()));
    let mut harness = gst_check::Harness::with_element(&element, Some("sink"), Some("src"));
    harness.set_src_caps_str("video/x-raw,format=RGBA,width=640,height=480,framerate=25/1");
    let total = |name: &str| {
        metric(
            &render(),
            &format!("ferrostream_msgbroker_messages_{name}{{element=\"b-broker\"}}"),
        )
    };
    let compare = |when: &str| {
        let text = render();
        for (property, series) in [
            ("messages-produced", "produced_total"),
            ("messages-sent", "sent_total"),
            ("messages-acknowledged", "acknowledged_total"),
            ("messages-dropped", "dropped_total"),
            ("messages-resent", "resent_total"),
            ("messages-queued", "queued"),
        ] {
            let series = format!("ferrostream_msgbroker_messages_{series}{{element=\"b-broker\"}}");
            assert_eq!(
                metric(&text, &series),
                Some(element.property::<u64>(property) as f64),
                "{when}: {series} in\n{text}"
            );
        }
    };
    // More frames than the queue holds, pushed at once: some may be dropped.
    for n in 0..40u64 {
        let mut frame = Frame::new(0, n, 640, 480);
        frame.pts = Some(gst::ClockTime::from_mseconds(40 * n));
        let mut buffer = gst::Buffer::new();
        BatchMeta::add(buffer.get_mut().unwrap(), Batch::single(frame));
        harness.push_and_pull(buffer).unwrap();
    }
    assert_eq!(total("produced_total"), Some(40.0));
    // At EOS the element waits for the broker to acknowledge what it queued.
    assert!(harness.push_event(gst::event::Eos::new()));
    let acknowledged = element.property::<u64>("messages-acknowledged");
    let dropped = element.property::<u64>("messages-dropped");
    assert_eq!(
        acknowledged + dropped,
        40,
        "every message acknowledged or dropped"
    );
    assert_eq!(element.property::<u64>("messages-queued"), 0);
    compare("after EOS");
    element.set_state(gst::State::Null).unwrap();
    // The properties keep the last run's counts; the series left with the element.
    assert_eq!(
        element.property::<u64>("messages-acknowledged"),
        acknowledged
    );
    assert_eq!(total("produced_total"), None);
}
