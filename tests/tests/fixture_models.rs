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
