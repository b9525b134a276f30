// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsmetaexport writes exactly one parsable JSON line per frame, matching the metadata.

use std::time::Duration;

use ferrostream_core::json::parse_frame_line;
use ferrostream_tests::{media, model, quoted, repo_root, run_pipeline, run_pipeline_frames};

const TIMEOUT: Duration = Duration::from_secs(300);

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn lines_match_the_metadata_of_every_frame() {
    let out_path = temp_path("coco.jsonl");
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert \
         ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} \
         ! rsmetaexport location={} ! appsink name=sink",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        quoted(&out_path)
    );
    let out = run_pipeline_frames(&desc, 6, TIMEOUT).unwrap();
    // The export is flushed per frame, so the lines of the frames seen so far are complete.
    let text = std::fs::read_to_string(&out_path).unwrap();
    let exported: Vec<_> = text
        .lines()
        .map(|l| parse_frame_line(l).expect("valid JSON line"))
        .collect();
    assert!(exported.len() >= 6, "{} lines", exported.len());
    assert_eq!(&exported[..6], &out.frames[..]);
    assert!(
        exported
            .iter()
            .any(|f| f.objects.iter().any(|o| &*o.label == "person"))
    );
    // The schema's required keys, as other tools read them.
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    for key in [
        "source_id",
        "frame_num",
        "pts_ns",
        "width",
        "height",
        "objects",
    ] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
    let object = &first["objects"][0];
    for key in [
        "object_id",
        "class_id",
        "label",
        "confidence",
        "bbox",
        "component_id",
        "classifications",
        "attributes",
    ] {
        assert!(object.get(key).is_some(), "missing object key {key}");
    }
}

#[test]
fn frames_without_metadata_are_written_with_no_objects() {
    let out_path = temp_path("plain.jsonl");
    let desc = format!(
        "videotestsrc num-buffers=5 ! video/x-raw,width=320,height=240,framerate=25/1 \
         ! rsmetaexport location={} ! appsink name=sink",
        quoted(&out_path)
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 5);
    let text = std::fs::read_to_string(&out_path).unwrap();
    let frames: Vec<_> = text.lines().map(|l| parse_frame_line(l).unwrap()).collect();
    assert_eq!(frames.len(), 5);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.frame_num, i as u64);
        assert_eq!((f.width, f.height), (320, 240));
        assert_eq!(f.pts, Some(gst::ClockTime::from_mseconds(40 * i as u64)));
        assert!(f.objects.is_empty());
    }
}

#[test]
fn unwritable_location_is_a_clear_error() {
    let desc = "videotestsrc num-buffers=1 ! rsmetaexport location=/nonexistent/dir/out.jsonl ! appsink name=sink";
    let err = run_pipeline(desc, TIMEOUT).unwrap_err();
    assert!(err.contains("/nonexistent/dir/out.jsonl"), "{err}");
}
