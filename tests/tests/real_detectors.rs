// SPDX-License-Identifier: MIT OR Apache-2.0
//! Pretrained detectors as users export them, through rstrtinfer with configurations that name no
//! parser: a YOLOv8 export ([1, 6, 8400]), a TensorFlow Object Detection API graph converted by
//! tf2onnx (every output dimension symbolic) and a CenterNet top-K export ([1, 100, 6] rows of
//! x1, y1, x2, y2, score, class). Each must find the people where they are; the reference boxes
//! come from running the same model with ONNX Runtime's Python API and the model's own
//! pre-processing (scripts/fetch-models.sh produces the models).

use std::time::Duration;

use ferrostream_core::Object;
use ferrostream_tests::{iou_ltrb, media, quoted, repo_root, run_pipeline, run_pipeline_frames};

const TIMEOUT: Duration = Duration::from_secs(300);

fn config(name: &str) -> String {
    quoted(&repo_root().join("pipelines").join(name))
}

/// The objects rstrtinfer finds in a still image.
fn detect_image(image: &str, infer: &str) -> Vec<Object> {
    let decoder = if image.ends_with(".png") {
        "pngdec"
    } else {
        "jpegdec"
    };
    let desc = format!(
        "filesrc location={} ! {decoder} ! videoconvert ! rstrtinfer {infer} ! appsink name=sink",
        quoted(&media(image))
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 1);
    out.frames.into_iter().next().unwrap().objects
}

fn ltrb(o: &Object) -> [f32; 4] {
    let b = o.detector_bbox;
    [b.left, b.top, b.right(), b.bottom()]
}

/// Every expected (label, box) is matched by a detection of that label with IoU >= 0.8, and
/// nothing else of that label is found.
fn assert_finds(objects: &[Object], label: &str, expected: &[[f32; 4]]) {
    let found: Vec<&Object> = objects.iter().filter(|o| &*o.label == label).collect();
    assert_eq!(found.len(), expected.len(), "{objects:#?}");
    for want in expected {
        let best = found
            .iter()
            .map(|o| iou_ltrb(ltrb(o), *want))
            .fold(0.0, f32::max);
        assert!(
            best >= 0.8,
            "no {label} at {want:?} (best IoU {best}): {objects:#?}"
        );
    }
}

/// Two players on basketball1.png (640x480), as the models' reference runs box them.
const FALL_PLAYERS: [[f32; 4]; 2] = [[3.8, 65.4, 178.7, 479.6], [417.5, 11.7, 640.0, 466.9]];

#[test]
fn yolov8_export_finds_the_players_without_a_parser_key() {
    let objects = detect_image(
        "basketball1.png",
        &format!("config-file-path={}", config("fall_detection.txt")),
    );
    assert_finds(&objects, "Normal", &FALL_PLAYERS);
    assert!(objects.iter().all(|o| o.confidence > 0.6), "{objects:#?}");
    // Naming the parser gives exactly what the guess gave.
    let named = detect_image(
        "basketball1.png",
        &format!(
            "config-file-path={} output-parser=yolov8",
            config("fall_detection.txt")
        ),
    );
    assert_eq!(summary(&named), summary(&objects));
}

#[test]
fn yolov8_export_finds_people_in_vtest() {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! rstrtinfer config-file-path={} ! appsink name=sink",
        quoted(&media("vtest.avi")),
        config("fall_detection.txt")
    );
    let out = run_pipeline_frames(&desc, 20, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 20);
    let people: usize = out
        .frames
        .iter()
        .map(|f| f.objects.iter().filter(|o| o.confidence >= 0.4).count())
        .sum();
    // Several people walk through every frame of vtest.avi.
    assert!(people >= 2 * 20, "{people} people in 20 frames");
    assert_eq!(out.parser(), "YoloV8");
}

fn summary(objects: &[Object]) -> Vec<(i32, String, [i32; 4])> {
    objects
        .iter()
        .map(|o| {
            let b = ltrb(o).map(|v| (v * 10.0).round() as i32);
            (o.class_id, o.label.to_string(), b)
        })
        .collect()
}

/// The parser the element chose, from its `rstrtinfer-parser` message (posted when the outputs'
/// shapes were symbolic) or else its engine message.
#[test]
fn tf_od_api_export_with_symbolic_outputs_finds_the_players() {
    let desc = format!(
        "filesrc location={} ! pngdec ! videoconvert ! rstrtinfer config-file-path={} ! appsink name=sink",
        quoted(&media("basketball1.png")),
        config("pedestrian_ssdlite.txt")
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    let objects = &out.frames[0].objects;
    assert_finds(
        objects,
        "pedestrian",
        &[[29.1, 82.0, 160.2, 478.0], [437.6, 19.4, 637.9, 475.0]],
    );
    assert!(objects.iter().all(|o| o.confidence > 0.9), "{objects:#?}");
    let engine = out
        .element_messages
        .iter()
        .find(|s| s.name() == "rstrtinfer-engine")
        .unwrap();
    assert!(
        engine
            .get::<String>("parser")
            .unwrap()
            .starts_with("chosen from the first outputs"),
        "{engine:?}"
    );
    let parser = out.parser();
    assert!(parser.contains("TfOdApi"), "{parser}");
}

#[test]
fn tf_od_api_export_finds_pedestrians_in_vtest() {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! rstrtinfer config-file-path={} ! appsink name=sink",
        quoted(&media("vtest.avi")),
        config("pedestrian_ssdlite.txt")
    );
    let out = run_pipeline_frames(&desc, 20, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 20);
    let people: usize = out.frames.iter().map(|f| f.objects.len()).sum();
    assert!(people >= 2 * 20, "{people} pedestrians in 20 frames");
    for frame in &out.frames {
        for o in &frame.objects {
            let [l, t, r, b] = ltrb(o);
            assert!(
                l >= 0.0 && t >= 0.0 && r <= 768.0 && b <= 576.0 && r > l && b > t,
                "{o:?}"
            );
        }
    }
}

#[test]
fn top_k_rows_export_finds_the_player_without_a_parser_key() {
    let desc = format!(
        "filesrc location={} ! pngdec ! videoconvert ! rstrtinfer config-file-path={} ! appsink name=sink",
        quoted(&media("basketball1.png")),
        config("centernet_coco.txt")
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    let objects = &out.frames[0].objects;
    // The model's confident person; the other player it scores 0.31 (both as the reference run).
    let confident: Vec<Object> = objects
        .iter()
        .filter(|o| o.confidence > 0.5)
        .cloned()
        .collect();
    assert_finds(&confident, "person", &[[27.4, 78.4, 173.2, 471.9]]);
    assert!(
        (confident[0].confidence - 0.766).abs() < 0.02,
        "{confident:#?}"
    );
    // Every score is a probability and every box inside the frame (not YOLOv5 anchors).
    for o in objects {
        let [l, t, r, b] = ltrb(o);
        assert!(o.confidence > 0.3 && o.confidence <= 1.0, "{o:?}");
        assert!(l >= 0.0 && t >= 0.0 && r <= 640.0 && b <= 480.0, "{o:?}");
    }
    // The columns and coordinates were settled from the first confident rows.
    let parser = out.parser();
    assert!(
        parser.contains("end-to-end rows of box,score,class, boxes Xyxy in pixels"),
        "{parser}"
    );
}
