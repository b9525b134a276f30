// SPDX-License-Identifier: MIT OR Apache-2.0
//! Per-frame latency (`rsstreammux latency-tracking=true`): two sources through the muxer, a real
//! detector (ONNX Runtime on the CPU), the tracker, region rules and the JSON export. Every
//! exported frame lists those elements in order with sane times, the frames downstream carry
//! the same records, the latency histograms count every frame; with tracking off nothing is
//! recorded.

use std::time::Duration;

use ferrostream_core::FrameLatency;
use ferrostream_core::json::parse_frame_line;
use ferrostream_tests::{model, quoted, repo_root, run_pipeline_inspect};

const TIMEOUT: Duration = Duration::from_secs(300);
/// Frames per source.
const FRAMES: usize = 6;

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The pipeline; element names start with `prefix` (the metrics are process-wide, and tests
/// run side by side).
fn description(prefix: &str, tracking: bool, out: &std::path::Path) -> String {
    let source = |pattern: &str, pad: u32| {
        format!(
            "videotestsrc pattern={pattern} num-buffers={FRAMES} \
             ! video/x-raw,format=RGB,width=320,height=240,framerate=25/1 ! {prefix}mux.sink_{pad} "
        )
    };
    format!(
        "rsstreammux name={prefix}mux batch-size=2 batched-push-timeout=-1 \
             latency-tracking={tracking} \
         ! rstrtinfer name={prefix}infer config-file-path={} onnx-file={} labelfile-path={} \
         ! rstracker name={prefix}tracker \
         ! rsanalytics name={prefix}analytics roi=\"all=0;0;320;0;320;240;0;240\" \
         ! rsmetaexport name={prefix}export location={} ! appsink name=sink {} {}",
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        quoted(out),
        source("smpte", 0),
        source("ball", 1),
    )
}

fn check_walk(latency: &FrameLatency, prefix: &str, what: &str) {
    let names: Vec<&str> = latency.components.iter().map(|c| &*c.component).collect();
    let expected: Vec<String> = ["mux", "infer", "tracker", "analytics", "export"]
        .iter()
        .map(|n| format!("{prefix}{n}"))
        .collect();
    assert_eq!(names, expected, "{what}");
    assert_eq!(
        latency.components[0].entry_ns, latency.origin_ns,
        "{what}: the muxer's entry is the frame's arrival"
    );
    let mut last_entry = 0;
    for c in &latency.components {
        assert!(c.entry_ns <= c.exit_ns, "{what}: {c:?}");
        assert!(c.entry_ns >= last_entry, "{what}: entries go back at {c:?}");
        last_entry = c.entry_ns;
    }
    let inside: u64 = latency
        .components
        .iter()
        .map(|c| c.exit_ns - c.entry_ns)
        .sum();
    assert!(
        latency.end_to_end_ns() >= inside,
        "{what}: end to end {} < {inside} in the elements",
        latency.end_to_end_ns()
    );
}

/// The value of `series` (name and labels, as rendered) in the metrics text.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn every_element_records_its_time_in_order() {
    let prefix = "lat-";
    let out_path = temp_path("tracked.jsonl");
    let mut metrics = String::new();
    let out = run_pipeline_inspect(
        &description(prefix, true, &out_path),
        usize::MAX,
        TIMEOUT,
        |_| metrics = ferrostream_core::metrics::global().render(),
    )
    .unwrap();
    let text = std::fs::read_to_string(&out_path).unwrap();
    let exported: Vec<_> = text
        .lines()
        .map(|l| parse_frame_line(l).expect("valid JSON line"))
        .collect();
    assert_eq!(exported.len(), 2 * FRAMES);
    assert_eq!(out.frames.len(), 2 * FRAMES);
    for (line, frame) in text.lines().zip(&exported) {
        let what = format!("source {} frame {}", frame.source_id, frame.frame_num);
        let latency = frame.latency.as_ref().unwrap_or_else(|| panic!("{what}"));
        check_walk(latency, prefix, &what);
        // The JSON spells out the end-to-end time.
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["latency"]["end_to_end_ns"].as_u64(),
            Some(latency.end_to_end_ns()),
            "{what}"
        );
        // Downstream gets the records the export wrote.
        let downstream = out
            .frames
            .iter()
            .find(|f| (f.source_id, f.frame_num) == (frame.source_id, frame.frame_num))
            .unwrap_or_else(|| panic!("{what} did not reach the sink"));
        assert_eq!(downstream.latency.as_ref(), Some(latency), "{what}");
    }
    for element in ["mux", "infer", "tracker", "analytics", "export"] {
        for histogram in [
            "ferrostream_component_latency_seconds",
            "ferrostream_frame_latency_seconds",
        ] {
            let series = format!("{histogram}_count{{component=\"{prefix}{element}\"}}");
            assert_eq!(
                metric(&metrics, &series),
                Some((2 * FRAMES) as f64),
                "{series} in\n{metrics}"
            );
        }
    }
}

#[test]
fn nothing_is_recorded_when_tracking_is_off() {
    let prefix = "nolat-";
    let out_path = temp_path("untracked.jsonl");
    let mut metrics = String::new();
    let out = run_pipeline_inspect(
        &description(prefix, false, &out_path),
        usize::MAX,
        TIMEOUT,
        |_| metrics = ferrostream_core::metrics::global().render(),
    )
    .unwrap();
    assert_eq!(out.frames.len(), 2 * FRAMES);
    assert!(out.frames.iter().all(|f| f.latency.is_none()));
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(text.lines().count(), 2 * FRAMES);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v.get("latency").is_none(), "{line}");
    }
    assert!(
        !metrics.contains(&format!("component=\"{prefix}")),
        "latency series without tracking:\n{metrics}"
    );
}
