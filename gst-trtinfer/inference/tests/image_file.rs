// SPDX-License-Identifier: MIT OR Apache-2.0
//! The inference crate on its own, as a plain Rust program uses it (`examples/detect.rs`): an
//! nvinfer configuration, a model and an image file, and no GStreamer. It must find what
//! rstrtinfer finds in the same image (tests/tests/real_detectors.rs).

mod support;

use std::time::Duration;

use ferrostream_core::BBox;
use ferrostream_inference::config::InferConfig;
use ferrostream_inference::inference::Inference;
use support::{Watchdog, preprocess_file, repo_root};

#[test]
fn a_detector_finds_the_player_in_an_image_file() {
    let _watchdog = Watchdog::new(
        "a_detector_finds_the_player_in_an_image_file",
        Duration::from_secs(300),
    );
    let loaded = InferConfig::from_file(&repo_root().join("pipelines/centernet_coco.txt")).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let mut inference = Inference::new(loaded.config, 0).unwrap();
    let (width, height) = preprocess_file(&mut inference, 0, "basketball1.png");
    inference.infer(1).unwrap();
    let objects = inference
        .result(0, width, height)
        .unwrap()
        .into_frame_objects(width, height);
    // The model's confident person, as the element finds it (the other player scores 0.31).
    let confident: Vec<_> = objects.iter().filter(|o| o.confidence > 0.5).collect();
    let [person] = confident.as_slice() else {
        panic!("one confident object expected: {objects:#?}")
    };
    assert_eq!(&*person.label, "person", "{person:?}");
    let overlap = person
        .detector_bbox
        .iou(&BBox::from_corners(27.4, 78.4, 173.2, 471.9));
    assert!(overlap >= 0.8, "IoU {overlap}: {person:?}");
    assert!((person.confidence - 0.766).abs() < 0.03, "{person:?}");
}
