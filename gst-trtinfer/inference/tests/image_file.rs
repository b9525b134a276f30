// SPDX-License-Identifier: MIT OR Apache-2.0
//! The inference crate on its own, as a plain Rust program uses it (`examples/detect.rs`): an
//! nvinfer configuration, a model and an image file, and no GStreamer. It must find what
//! rstrtinfer finds in the same image (tests/tests/real_detectors.rs).

use std::path::{Path, PathBuf};

use ferrostream_core::BBox;
use ferrostream_inference::config::InferConfig;
use ferrostream_inference::inference::Inference;
use ferrostream_inference::preprocess::{PackedImage, SourceImage};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A test image: in `FERROSTREAM_MEDIA_DIR`, beside the repository, or in the user's cache.
fn media(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("FERROSTREAM_MEDIA_DIR")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.push(repo_root().join("../shared/media"));
    dirs.push(ferrostream_core::paths::cache_dir().join("media"));
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("test image {name} not found in {dirs:?}"))
}

fn iou(a: BBox, b: [f32; 4]) -> f32 {
    let (l, t) = (a.left.max(b[0]), a.top.max(b[1]));
    let (r, bo) = (a.right().min(b[2]), a.bottom().min(b[3]));
    let inter = (r - l).max(0.0) * (bo - t).max(0.0);
    let union = a.width * a.height + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    inter / union
}

#[test]
fn a_detector_finds_the_player_in_an_image_file() {
    let loaded = InferConfig::from_file(&repo_root().join("pipelines/centernet_coco.txt")).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let mut inference = Inference::new(loaded.config, 0).unwrap();
    let pixels = image::open(media("basketball1.png")).unwrap().to_rgb8();
    let (width, height) = pixels.dimensions();
    let source = SourceImage::packed(PackedImage {
        data: pixels.as_raw(),
        stride: width as usize * 3,
        pixel_stride: 3,
        rgb: [0, 1, 2],
        width,
        height,
    })
    .unwrap();
    inference.preprocess(0, &source, BBox::new(0.0, 0.0, width as f32, height as f32));
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
    let overlap = iou(person.detector_bbox, [27.4, 78.4, 173.2, 471.9]);
    assert!(overlap >= 0.8, "IoU {overlap}: {person:?}");
    assert!((person.confidence - 0.766).abs() < 0.03, "{person:?}");
}
