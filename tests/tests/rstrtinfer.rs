// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer on real models and footage, configuration paths, and every failure a user can
//! cause (missing or corrupt model, missing runtime, wrong caps, malformed configuration).

use std::path::PathBuf;
use std::time::Duration;

use ferrostream_core::Frame;
use ferrostream_tests::{
    RunOutput, assert_passes_in_child, iou_ltrb, is_child, media, model, quoted, repo_root,
    run_pipeline, run_pipeline_frames,
};

const TIMEOUT: Duration = Duration::from_secs(600);

fn coco_props() -> String {
    format!(
        "onnx-file={} labelfile-path={}",
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt"))
    )
}

fn coco_config() -> String {
    quoted(&repo_root().join("pipelines/coco_ssd.txt"))
}

/// Runs `infer` on the first `frames` frames of vtest.avi.
fn vtest(frames: usize, infer: &str) -> Result<RunOutput, String> {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! {infer} ! appsink name=sink",
        quoted(&media("vtest.avi"))
    );
    run_pipeline_frames(&desc, frames, TIMEOUT)
}

fn persons(frame: &Frame, min_confidence: f32) -> usize {
    frame
        .objects
        .iter()
        .filter(|o| &*o.label == "person" && o.confidence >= min_confidence)
        .count()
}

fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn coco_finds_people_in_vtest() {
    let infer = format!(
        "rstrtinfer config-file-path={} {}",
        coco_config(),
        coco_props()
    );
    let out = vtest(100, &infer).unwrap();
    assert_eq!(out.frames.len(), 100);
    let mut total = 0;
    for (i, frame) in out.frames.iter().enumerate() {
        assert_eq!((frame.width, frame.height), (768, 576));
        assert_eq!(frame.frame_num, i as u64);
        assert!(frame.pts.is_some());
        assert_eq!(frame.components_run, vec![1]);
        total += persons(frame, 0.5);
        for o in &frame.objects {
            let b = o.detector_bbox;
            assert!(
                b.left >= 0.0
                    && b.top >= 0.0
                    && b.right() <= 768.0
                    && b.bottom() <= 576.0
                    && b.area() > 0.0,
                "box outside the frame: {b:?}"
            );
            assert_eq!(o.component_id, 1);
            assert!(o.object_id.is_none());
        }
    }
    let mean = total as f64 / 100.0;
    assert!(
        mean >= 3.0,
        "mean persons per frame with confidence >= 0.5: {mean}"
    );

    let engine = out
        .element_messages
        .iter()
        .find(|s| s.name() == "rstrtinfer-engine")
        .expect("engine message");
    assert_eq!(engine.get::<&str>("backend").unwrap(), "onnxruntime");
    assert!(engine.get::<&str>("providers").unwrap().ends_with("CPU"));
    // The version the library reports (1.x.y), whatever its build information says.
    let version = engine.get::<&str>("runtime-version").unwrap();
    let parts: Vec<&str> = version.split('.').collect();
    assert!(
        parts.len() == 3 && parts[0] == "1" && parts.iter().all(|p| p.parse::<u32>().is_ok()),
        "{version}"
    );
    assert_eq!(engine.get::<u32>("network-width").unwrap(), 300);
    assert_eq!(engine.get::<&str>("parser").unwrap(), "Ssd");
}

fn centerface(extra: &str) -> String {
    format!(
        "rstrtinfer config-file-path={} onnx-file={} {extra}",
        quoted(&repo_root().join("pipelines/centerface.txt")),
        quoted(&model("centerface.onnx"))
    )
}

#[test]
fn centerface_finds_the_face_in_carphone() {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! {} ! appsink name=sink",
        quoted(&media("carphone_pristine.mp4")),
        centerface("infer-dims=3;192;224")
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 120);
    let with_face = out
        .frames
        .iter()
        .filter(|f| f.objects.iter().any(|o| &*o.label == "face"))
        .count();
    assert!(
        with_face * 100 >= 95 * 120,
        "frames with a face: {with_face} of 120"
    );
}

#[test]
fn centerface_box_on_astronaut() {
    let desc = format!(
        "filesrc location={} ! pngdec ! videoconvert ! {} ! appsink name=sink",
        quoted(&media("astronaut.png")),
        centerface("")
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 1);
    let faces = &out.frames[0].objects;
    assert_eq!(faces.len(), 1, "{faces:?}");
    let b = faces[0].detector_bbox;
    let iou = iou_ltrb(
        [b.left, b.top, b.right(), b.bottom()],
        [181.0, 58.0, 269.0, 177.0],
    );
    assert!(iou >= 0.5, "IoU {iou} for {b:?}");
    assert_eq!(faces[0].component_id, 2);
    // Five landmarks (eyes, nose, mouth corners), all inside the face box.
    let Some(ferrostream_core::AttributeValue::Floats(points)) =
        faces[0].attributes.get("landmarks")
    else {
        panic!("landmarks attribute missing: {:?}", faces[0].attributes);
    };
    assert_eq!(points.len(), 10);
    for p in points.chunks(2) {
        assert!(
            p[0] >= b.left && p[0] <= b.right() && p[1] >= b.top && p[1] <= b.bottom(),
            "{p:?} outside {b:?}"
        );
    }
}

#[test]
fn config_file_and_properties_give_the_same_detections() {
    let config = temp_file(
        "same.txt",
        format!(
            "[property]\nonnx-file={}\nlabelfile-path={}\nnetwork-input-order=1\ninfer-dims=3;300;300\n\
             output-parser=ssd\ngie-unique-id=5\n[class-attrs-all]\npre-cluster-threshold=0.45\n\
             nms-iou-threshold=0.5\ntopk=20\n",
            model("coco_ssdlite_mobilenet_v2.onnx").display(),
            model("object_detection_classes_coco.txt").display()
        )
        .as_bytes(),
    );
    let from_file = vtest(
        8,
        &format!("rstrtinfer config-file-path={}", quoted(&config)),
    )
    .unwrap();
    let from_props = vtest(
        8,
        &format!(
            "rstrtinfer {} network-input-order=nhwc infer-dims=3;300;300 output-parser=ssd \
                 gie-unique-id=5 pre-cluster-threshold=0.45 nms-iou-threshold=0.5 topk=20",
            coco_props()
        ),
    )
    .unwrap();
    assert_eq!(from_file.frames.len(), 8);
    assert!(
        from_file
            .frames
            .iter()
            .map(|f| f.objects.len())
            .sum::<usize>()
            > 8
    );
    assert_eq!(from_file.frames, from_props.frames);

    // A property set on the element wins over the file.
    let stricter = vtest(
        8,
        &format!(
            "rstrtinfer config-file-path={} pre-cluster-threshold=0.8",
            quoted(&config)
        ),
    )
    .unwrap();
    let count = |frames: &[Frame]| frames.iter().map(|f| f.objects.len()).sum::<usize>();
    assert!(count(&stricter.frames) < count(&from_file.frames));
    assert!(
        stricter
            .frames
            .iter()
            .flat_map(|f| &f.objects)
            .all(|o| o.confidence >= 0.8)
    );
}

#[test]
fn interval_skips_frames() {
    let infer = format!(
        "rstrtinfer config-file-path={} {} interval=2",
        coco_config(),
        coco_props()
    );
    let out = vtest(9, &infer).unwrap();
    assert_eq!(out.frames.len(), 9);
    for (i, frame) in out.frames.iter().enumerate() {
        let inferred = i % 3 == 0;
        assert_eq!(frame.components_run.contains(&1), inferred, "frame {i}");
        if inferred {
            assert!(persons(frame, 0.5) >= 1, "frame {i}");
        } else {
            assert!(frame.objects.is_empty(), "frame {i}");
        }
    }
}

#[test]
fn missing_model_is_a_clear_error() {
    let err = vtest(
        1,
        "rstrtinfer onnx-file=/nonexistent/detector.onnx infer-dims=3;300;300",
    )
    .unwrap_err();
    assert!(
        err.contains("model file not found") && err.contains("/nonexistent/detector.onnx"),
        "{err}"
    );
}

#[test]
fn corrupt_model_is_a_clear_error() {
    let path = temp_file("corrupt.onnx", b"this is not an ONNX protobuf at all");
    let err = vtest(1, &format!("rstrtinfer onnx-file={}", quoted(&path))).unwrap_err();
    assert!(
        err.contains("cannot load model") && err.contains("corrupt.onnx"),
        "{err}"
    );
}

#[test]
fn model_without_config_for_dynamic_dims_is_a_clear_error() {
    let err = vtest(
        1,
        &format!(
            "rstrtinfer onnx-file={}",
            quoted(&model("coco_ssdlite_mobilenet_v2.onnx"))
        ),
    )
    .unwrap_err();
    assert!(err.contains("set infer-dims"), "{err}");
}

#[test]
fn missing_onnx_runtime_is_a_clear_error() {
    if is_child() {
        let err = vtest(
            1,
            &format!(
                "rstrtinfer config-file-path={} {}",
                coco_config(),
                coco_props()
            ),
        )
        .unwrap_err();
        assert!(err.contains("ONNX Runtime library not found"), "{err}");
        assert!(err.contains("/nonexistent/libonnxruntime.so"), "{err}");
        return;
    }
    // A fresh process: the runtime is loaded once per process.
    assert_passes_in_child(
        "missing_onnx_runtime_is_a_clear_error",
        &[("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so")],
    );
}

#[test]
fn wrong_input_caps_are_a_clear_error() {
    use gst::prelude::*;
    ferrostream_tests::init();
    let pipeline = ferrostream_tests::launch(&format!(
        "appsrc name=src caps=video/x-raw,format=YUY2,width=64,height=64,framerate=1/1 format=time \
         ! rstrtinfer config-file-path={} {} ! fakesink",
        coco_config(),
        coco_props()
    ));
    let src: gst_app::AppSrc = ferrostream_tests::element(&pipeline, "src");
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut buffer = gst::Buffer::with_size(64 * 64 * 2).unwrap();
    buffer.get_mut().unwrap().set_pts(gst::ClockTime::ZERO);
    let _ = src.push_buffer(buffer);
    let bus = pipeline.bus().unwrap();
    let mut warnings = Vec::new();
    let error = loop {
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(60),
                &[gst::MessageType::Error, gst::MessageType::Warning],
            )
            .expect("an error message");
        match msg.view() {
            gst::MessageView::Warning(w) => warnings.push(format!("{} {:?}", w.error(), w.debug())),
            gst::MessageView::Error(e) => break format!("{} {:?}", e.error(), e.debug()),
            _ => unreachable!(),
        }
    };
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(error.contains("not-negotiated"), "{error}");
    // rstrtinfer says why: which caps, and what to do.
    let ours = warnings
        .iter()
        .find(|w| w.contains("Unsupported input caps"))
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(
        ours.contains("YUY2") && ours.contains("videoconvert"),
        "{ours}"
    );
}

#[test]
fn malformed_config_line_names_file_line_and_key() {
    let path = temp_file("bad.txt", b"[property]\ngie-unique-id=1\nbatch-size=four\n");
    let err = vtest(1, &format!("rstrtinfer config-file-path={}", quoted(&path))).unwrap_err();
    assert!(
        err.contains(&format!("{}:3: key `batch-size`", path.display())),
        "{err}"
    );
    assert!(err.contains("four"), "{err}");

    let missing = vtest(1, "rstrtinfer config-file-path=/nonexistent/config.txt").unwrap_err();
    assert!(
        missing.contains("/nonexistent/config.txt") && missing.contains("cannot read"),
        "{missing}"
    );
}

#[test]
fn unknown_config_keys_warn_and_run() {
    let config = std::fs::read_to_string(repo_root().join("pipelines/coco_ssd.txt")).unwrap();
    let path = temp_file(
        "unknown.txt",
        format!("{config}\n[property]\nfrobnicate=1\n").as_bytes(),
    );
    let out = vtest(
        2,
        &format!(
            "rstrtinfer config-file-path={} {}",
            quoted(&path),
            coco_props()
        ),
    )
    .unwrap();
    assert_eq!(out.frames.len(), 2);
    assert!(
        out.warnings.iter().any(|w| w.contains("`frobnicate`")),
        "{:?}",
        out.warnings
    );
}

#[test]
fn unavailable_execution_provider_is_a_clear_error() {
    // The CPU build of ONNX Runtime has no CUDA provider; asking for it must fail at start.
    let err = vtest(
        1,
        &format!(
            "rstrtinfer config-file-path={} {} device=cuda",
            coco_config(),
            coco_props()
        ),
    );
    match err {
        Err(e) => assert!(e.contains("CUDA execution provider"), "{e}"),
        Ok(out) => {
            // A GPU build of ONNX Runtime: then the engine must say it runs on CUDA.
            let engine = out
                .element_messages
                .iter()
                .find(|s| s.name() == "rstrtinfer-engine")
                .unwrap();
            assert!(engine.get::<&str>("providers").unwrap().starts_with("CUDA"));
        }
    }
    let err = vtest(
        1,
        &format!(
            "rstrtinfer config-file-path={} {} backend=tensorrt",
            coco_config(),
            coco_props()
        ),
    )
    .unwrap_err();
    assert!(err.contains("no native TensorRT backend"), "{err}");
}

#[test]
fn pipeline_can_be_played_again_after_null() {
    use gst::prelude::*;
    ferrostream_tests::init();
    // Static pads only: decodebin's pads would be linked by parse::launch only the first time.
    let pipeline = ferrostream_tests::launch(&format!(
        "filesrc location={} ! pngdec ! imagefreeze num-buffers=5 ! videoconvert ! {} \
         ! appsink name=sink sync=false",
        quoted(&media("astronaut.png")),
        centerface("infer-dims=3;256;256")
    ));
    let sink: gst_app::AppSink = ferrostream_tests::element(&pipeline, "sink");
    for run in 0..2 {
        pipeline.set_state(gst::State::Playing).unwrap();
        let mut frames = Vec::new();
        while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) {
            let meta = sample
                .buffer()
                .unwrap()
                .meta::<ferrostream_core::BatchMeta>()
                .unwrap();
            frames.extend(
                meta.batch()
                    .frames
                    .iter()
                    .map(|f| (f.frame_num, f.objects.len())),
            );
        }
        if !sink.is_eos() {
            let error = pipeline
                .bus()
                .unwrap()
                .pop_filtered(&[gst::MessageType::Error])
                .map(|m| format!("{m:?}"));
            panic!(
                "run {run} did not reach EOS after {} frames: {error:?}",
                frames.len()
            );
        }
        pipeline.set_state(gst::State::Null).unwrap();
        // Numbering restarts with the element's state; the face is found in every frame again.
        assert_eq!(
            frames,
            (0..5).map(|n| (n, 1)).collect::<Vec<_>>(),
            "run {run}"
        );
    }
}

#[test]
fn chained_detectors_add_to_the_same_frame() {
    let desc = format!(
        "filesrc location={} ! pngdec ! videoconvert ! rstrtinfer config-file-path={} {} ! {} ! appsink name=sink",
        quoted(&media("astronaut.png")),
        coco_config(),
        coco_props(),
        centerface("infer-dims=3;256;256")
    );
    let out = run_pipeline(&desc, TIMEOUT).unwrap();
    let [frame] = &out.frames[..] else {
        panic!("{:?}", out.frames)
    };
    assert_eq!(frame.components_run, vec![1, 2]);
    let person = frame
        .objects
        .iter()
        .find(|o| o.component_id == 1 && &*o.label == "person");
    let face = frame
        .objects
        .iter()
        .find(|o| o.component_id == 2 && &*o.label == "face");
    let (Some(person), Some(face)) = (person, face) else {
        panic!("{:?}", frame.objects)
    };
    // The face lies inside the person.
    let (p, f) = (person.detector_bbox, face.detector_bbox);
    assert!(
        f.left >= p.left - 5.0 && f.right() <= p.right() + 5.0 && f.top >= p.top - 5.0,
        "{f:?} in {p:?}"
    );
}
