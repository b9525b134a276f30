// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer end to end on small generated models (tests/fixtures, made by make_fixtures.py)
//! whose outputs are known exactly: f16 inputs, colour order, the classifier output, and the
//! YOLOv8 and TensorFlow Object Detection API layouts through ONNX Runtime, with exact boxes.

use std::path::PathBuf;
use std::time::Duration;

use ferrostream_core::{BBox, Object};
use ferrostream_tests::{model, quoted, repo_root, run_pipeline};

const TIMEOUT: Duration = Duration::from_secs(120);

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

fn objects(source: &str, infer: &str) -> Vec<Vec<Object>> {
    let out = run_pipeline(
        &format!("{source} ! rstrtinfer {infer} ! appsink name=sink"),
        TIMEOUT,
    )
    .unwrap();
    out.frames.into_iter().map(|f| f.objects).collect()
}

fn assert_box(actual: BBox, expected: BBox) {
    let close = |a: f32, b: f32| (a - b).abs() < 0.01;
    assert!(
        close(actual.left, expected.left)
            && close(actual.top, expected.top)
            && close(actual.width, expected.width)
            && close(actual.height, expected.height),
        "{actual:?} != {expected:?}"
    );
}

#[test]
fn f16_input_classifier_sees_the_right_channel() {
    let source =
        "videotestsrc pattern=red num-buffers=2 ! video/x-raw,format=RGBA,width=64,height=48";
    let infer = format!(
        "onnx-file={} network-type=classifier classifier-softmax=never net-scale-factor=0.00392156863 gie-unique-id=7",
        quoted(&fixture("f16_channel_mean.onnx"))
    );
    let frames = objects(source, &infer);
    assert_eq!(frames.len(), 2);
    for frame in &frames {
        let [object] = &frame[..] else {
            panic!("{frame:?}")
        };
        // The red channel's mean, 255 / 255 through f16.
        assert_eq!(object.class_id, 0);
        assert!(
            (object.confidence - 1.0).abs() < 1e-3,
            "{}",
            object.confidence
        );
        assert_box(object.detector_bbox, BBox::new(0.0, 0.0, 64.0, 48.0));
        let [c] = &object.classifications[..] else {
            panic!("{object:?}")
        };
        assert_eq!((c.component_id, c.class_id), (7, 0));
    }
    // BGR order puts red last.
    let frames = objects(source, &format!("{infer} model-color-format=bgr"));
    assert_eq!(frames[0][0].class_id, 2);
}

#[test]
fn yolov8_boxes_map_back_to_the_frame() {
    let source = "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=128,height=128";
    let infer = format!(
        "onnx-file={} output-parser=yolov8 pre-cluster-threshold=0.5 net-scale-factor=0.00392156863",
        quoted(&fixture("yolov8_constant.onnx"))
    );
    let frames = objects(source, &infer);
    let [frame] = &frames[..] else {
        panic!("{frames:?}")
    };
    assert_eq!(frame.len(), 2, "{frame:?}");
    // Network 64x64 -> frame 128x128: every coordinate doubles.
    assert_eq!((frame[0].class_id, frame[0].confidence), (0, 0.9));
    assert_box(frame[0].detector_bbox, BBox::new(44.0, 22.0, 40.0, 20.0));
    assert_eq!((frame[1].class_id, frame[1].confidence), (1, 0.8));
    assert_box(frame[1].detector_bbox, BBox::new(70.0, 70.0, 20.0, 20.0));
}

#[test]
fn tf_od_api_outputs_with_labels() {
    let source = "videotestsrc num-buffers=1 ! video/x-raw,format=NV12,width=128,height=96";
    let infer = format!(
        "onnx-file={} labelfile-path={} pre-cluster-threshold=0.5",
        quoted(&fixture("tf_od_api_constant.onnx")),
        quoted(&model("object_detection_classes_coco.txt"))
    );
    let out = run_pipeline(
        &format!("{source} ! rstrtinfer {infer} ! appsink name=sink"),
        TIMEOUT,
    )
    .unwrap();
    let engine = out
        .element_messages
        .iter()
        .find(|s| s.name() == "rstrtinfer-engine")
        .unwrap();
    assert_eq!(
        engine.get::<&str>("parser").unwrap(),
        "TfOdApi",
        "guessed from the output names"
    );
    let frame = &out.frames[0].objects;
    assert_eq!(
        frame.len(),
        2,
        "the third row is past num_detections: {frame:?}"
    );
    // 1-based TF classes: 1 = person (label line 0), 3 = car (label line 2).
    assert_eq!(
        (&*frame[0].label, frame[0].class_id, frame[0].confidence),
        ("person", 0, 0.95)
    );
    assert_box(frame[0].detector_bbox, BBox::new(64.0, 24.0, 64.0, 48.0));
    assert_eq!((&*frame[1].label, frame[1].class_id), ("car", 2));
    assert_box(frame[1].detector_bbox, BBox::new(0.0, 0.0, 64.0, 48.0));
}

/// The messages an element posted while running `infer` on one 128x128 frame, and the frame's
/// objects; network inputs are 64x64, so every coordinate doubles.
fn run_fixture(model: &str, infer: &str) -> Result<(Vec<Object>, Vec<String>), String> {
    let source = "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=128,height=128";
    let out = run_pipeline(
        &format!(
            "{source} ! rstrtinfer onnx-file={} {infer} ! appsink name=sink",
            quoted(&fixture(model))
        ),
        TIMEOUT,
    )?;
    let said = out
        .element_messages
        .iter()
        .filter(|s| s.name().starts_with("rstrtinfer-"))
        .filter_map(|s| s.get::<String>("parser").ok())
        .collect();
    let [frame] = &out.frames[..] else {
        return Err(format!("{} frames", out.frames.len()));
    };
    Ok((frame.objects.clone(), said))
}

fn summary(objects: &[Object]) -> Vec<(i32, f32)> {
    objects.iter().map(|o| (o.class_id, o.confidence)).collect()
}

#[test]
fn fully_symbolic_tf_od_api_outputs_are_parsed_from_the_first_inference() {
    let (objects, said) = run_fixture("tf_od_api_symbolic.onnx", "pre-cluster-threshold=0.5")
        .expect("symbolic outputs run");
    assert!(
        said[0].contains("chosen from the first outputs"),
        "the start message says the choice waits: {said:?}"
    );
    assert!(
        said.iter()
            .any(|s| s.contains("TfOdApi") && s.contains("detection_boxes:0 f32[1,3,4]")),
        "the choice names the parser and the shapes it saw: {said:?}"
    );
    assert_eq!(summary(&objects), vec![(0, 0.95), (2, 0.6)]);
    assert_box(objects[0].detector_bbox, BBox::new(64.0, 32.0, 64.0, 64.0));
    assert_box(objects[1].detector_bbox, BBox::new(0.0, 0.0, 64.0, 64.0));
}

#[test]
fn top_k_rows_are_end_to_end_detections_with_fixed_or_symbolic_shapes() {
    for model in ["end_to_end_rows.onnx", "end_to_end_symbolic.onnx"] {
        let (objects, said) =
            run_fixture(model, "pre-cluster-threshold=0.5").expect("end-to-end rows run");
        assert!(
            said.iter()
                .any(|s| s.contains("box,score,class") && s.contains("Xyxy in pixels")),
            "{model}: {said:?}"
        );
        assert_eq!(summary(&objects), vec![(0, 0.92), (2, 0.7)], "{model}");
        assert_box(objects[0].detector_bbox, BBox::new(16.0, 8.0, 32.0, 64.0));
        assert_box(objects[1].detector_bbox, BBox::new(80.0, 80.0, 40.0, 44.0));
    }
    // The same with every key given: nothing is guessed.
    let (objects, said) = run_fixture(
        "end_to_end_rows.onnx",
        "pre-cluster-threshold=0.5 output-parser=end-to-end end-to-end-columns=box,score,class \
         box-format=xyxy box-coordinates=pixels",
    )
    .unwrap();
    assert_eq!(summary(&objects), vec![(0, 0.92), (2, 0.7)]);
    assert!(
        said[0].contains("box,score,class, boxes Xyxy in pixels"),
        "{said:?}"
    );
    let (objects, _) = run_fixture(
        "end_to_end_rows.onnx",
        "pre-cluster-threshold=0.5 filter-out-class-ids=2",
    )
    .unwrap();
    assert_eq!(
        summary(&objects),
        vec![(0, 0.92)],
        "class 2 is filtered out"
    );
    let err = run_fixture(
        "end_to_end_rows.onnx",
        "output-parser=end-to-end end-to-end-columns=box,score",
    )
    .unwrap_err();
    assert!(err.contains("end-to-end-columns"), "{err}");
}

#[test]
fn yolov5_anchors_guessed_as_end_to_end_rows_are_refused() {
    // [1,100,6] is also a one-class YOLOv5 output: the guess reads the first rows and refuses
    // them, naming the key, rather than emitting boxes in the wrong places.
    let err = run_fixture("yolov5_one_class.onnx", "pre-cluster-threshold=0.5").unwrap_err();
    assert!(
        err.contains("not end-to-end rows")
            && err.contains("output0 [1, 100, 6]")
            && err.contains("output-parser"),
        "{err}"
    );
    let (objects, _) = run_fixture(
        "yolov5_one_class.onnx",
        "pre-cluster-threshold=0.5 output-parser=yolov5",
    )
    .unwrap();
    assert_eq!(objects.len(), 2, "{objects:?}");
    assert!((objects[0].confidence - 0.72).abs() < 1e-5);
    assert_box(objects[0].detector_bbox, BBox::new(48.0, 16.0, 32.0, 48.0));
}

#[test]
fn rows_without_a_batch_dimension_name_their_item() {
    let (objects, said) =
        run_fixture("yolov7_rows.onnx", "pre-cluster-threshold=0.5").expect("[K,7] rows run");
    assert!(
        said.iter().any(|s| s.contains("batch,box,class,score")),
        "{said:?}"
    );
    assert_eq!(summary(&objects), vec![(1, 0.88)]);
    assert_box(objects[0].detector_bbox, BBox::new(32.0, 16.0, 64.0, 64.0));
}

#[test]
fn detr_style_boxes_scores_and_int64_labels() {
    let (objects, said) = run_fixture("boxes_scores_labels.onnx", "pre-cluster-threshold=0.5")
        .expect("boxes, scores and labels run");
    assert!(
        said.iter()
            .any(|s| s.contains("boxes, scores and labels, boxes Cxcywh normalised")),
        "{said:?}"
    );
    assert_eq!(summary(&objects), vec![(0, 0.9), (5, 0.75)]);
    assert_box(objects[0].detector_bbox, BBox::new(48.0, 32.0, 32.0, 64.0));
    assert_box(objects[1].detector_bbox, BBox::new(24.0, 24.0, 16.0, 16.0));
}

#[test]
fn yolox_grid_offsets_are_decoded_per_stride() {
    let (objects, said) =
        run_fixture("yolox_raw.onnx", "pre-cluster-threshold=0.5").expect("YOLOX runs");
    assert!(said[0].contains("YOLOX, strides [8, 16, 32]"), "{said:?}");
    let [o] = &objects[..] else {
        panic!("{objects:?}")
    };
    assert_eq!(o.class_id, 1);
    assert!((o.confidence - 0.72).abs() < 1e-5);
    assert_box(o.detector_bbox, BBox::new(16.0, 24.0, 64.0, 48.0));
    let err = run_fixture("yolox_raw.onnx", "output-parser=yolox yolox-strides=8;16").unwrap_err();
    assert!(err.contains("yolox-strides"), "{err}");
}

#[test]
fn yolov8_seg_masks_cover_what_the_prototypes_say() {
    let (objects, said) = run_fixture(
        "yolov8_seg_constant.onnx",
        "pre-cluster-threshold=0.5 segmentation-threshold=0.5",
    )
    .expect("YOLOv8-seg runs");
    assert!(
        said[0].contains("YOLOv8-seg"),
        "guessed from the two outputs: {said:?}"
    );
    assert_eq!(summary(&objects), vec![(0, 0.9), (1, 0.8)]);
    assert_box(objects[0].detector_bbox, BBox::new(0.0, 0.0, 64.0, 128.0));
    assert_box(objects[1].detector_bbox, BBox::new(64.0, 0.0, 64.0, 128.0));
    // Prototypes at a quarter of the network's resolution: 8x16 cells over each box.
    let whole = objects[0].mask.as_ref().expect("a mask");
    assert_eq!((whole.width, whole.height, whole.area()), (8, 16, 128));
    let top = objects[1].mask.as_ref().expect("a mask");
    assert_eq!((top.width, top.height, top.area()), (8, 16, 64));
    assert!(top.cells()[..64].iter().all(|&c| c), "the top half");
}

#[test]
fn semantic_segmentation_gives_the_frame_a_class_map() {
    let source = "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=128,height=128";
    let out = run_pipeline(
        &format!(
            "{source} ! rstrtinfer onnx-file={} network-type=segmentation gie-unique-id=4 \
             segmentation-threshold=0.5 ! appsink name=sink",
            quoted(&fixture("segmentation_constant.onnx"))
        ),
        TIMEOUT,
    )
    .unwrap();
    let frame = &out.frames[0];
    assert!(frame.objects.is_empty());
    let map = frame.segmentation.as_ref().expect("a class map");
    assert_eq!(
        (map.width, map.height, map.classes, map.component_id),
        (4, 4, 3, 4)
    );
    #[rustfmt::skip]
    let expected = vec![
        0, 0, 2, 2,
        0, 0, 2, 2,
        0, 0, -1, -1,
        0, 0, -1, -1,
    ];
    assert_eq!(map.cells(), expected);
    let err = run_pipeline(
        &format!(
            "{source} ! rstrtinfer onnx-file={} network-type=segmentation output-parser=ssd \
             ! appsink name=sink",
            quoted(&fixture("segmentation_constant.onnx"))
        ),
        TIMEOUT,
    )
    .unwrap_err();
    assert!(err.contains("network-type segmentation"), "{err}");
}
