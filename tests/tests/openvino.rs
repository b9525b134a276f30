// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer with `backend=openvino` (the runtime of scripts/install-openvino.sh): the same
//! detections as ONNX Runtime in FP32, what ran named in the engine message, the CPU's reduced
//! precision close to FP32, and a missing runtime as a clear error.

use std::time::Duration;

use ferrostream_core::Frame;
use ferrostream_tests::{
    RunOutput, is_child, media, quoted, repo_root, run_in_child, run_pipeline_frames,
};

const TIMEOUT: Duration = Duration::from_secs(600);
const FRAMES: usize = 20;

/// rstrtinfer with the COCO SSDLite configuration and `extra` on the first frames of vtest.avi.
fn vtest(extra: &str) -> Result<RunOutput, String> {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! rstrtinfer config-file-path={} {extra} \
         ! appsink name=sink",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/coco_ssd.txt"))
    );
    run_pipeline_frames(&desc, FRAMES, TIMEOUT)
}

fn engine_field(out: &RunOutput, field: &str) -> String {
    out.element_messages
        .iter()
        .find(|s| s.name() == "rstrtinfer-engine")
        .and_then(|s| s.get::<String>(field).ok())
        .unwrap_or_else(|| panic!("no {field} in the engine message"))
}

/// Asserts that every object of each frame of `a` has one in the same frame of `b` with the
/// same label, IoU >= `min_iou` and confidence within `max_conf` (and, with `same_count`, that
/// the frames have as many objects); returns the objects compared and the largest confidence
/// difference.
fn assert_found(
    a: &[Frame],
    b: &[Frame],
    min_iou: f32,
    max_conf: f32,
    same_count: bool,
) -> (usize, f32) {
    assert_eq!(a.len(), b.len());
    let (mut count, mut worst) = (0, 0.0f32);
    for (i, (fa, fb)) in a.iter().zip(b).enumerate() {
        if same_count {
            assert_eq!(
                fa.objects.len(),
                fb.objects.len(),
                "frame {i}: {fa:#?}\n{fb:#?}"
            );
        }
        for o in &fa.objects {
            let best = fb
                .objects
                .iter()
                .filter(|p| p.label == o.label)
                .map(|p| {
                    (
                        o.detector_bbox.iou(&p.detector_bbox),
                        (o.confidence - p.confidence).abs(),
                    )
                })
                .max_by(|x, y| x.0.total_cmp(&y.0));
            let Some((overlap, diff)) = best else {
                panic!("frame {i}: no {} in {fb:#?}", o.label)
            };
            assert!(
                overlap >= min_iou && diff <= max_conf,
                "frame {i}: {o:?} matched at IoU {overlap}, confidence {diff} apart"
            );
            count += 1;
            worst = worst.max(diff);
        }
    }
    (count, worst)
}

#[test]
fn openvino_detects_like_onnx_runtime_and_says_what_ran() {
    let ort = vtest("backend=onnxruntime").unwrap();
    let ov = vtest("backend=openvino").unwrap();
    assert_eq!(engine_field(&ov, "backend"), "openvino");
    assert_eq!(engine_field(&ov, "providers"), "CPU (f32)");
    assert!(engine_field(&ov, "runtime-version").starts_with("2026."));
    let (count, worst) = assert_found(&ort.frames, &ov.frames, 0.98, 0.005, true);
    // Several people walk through every frame.
    assert!(count >= 3 * FRAMES, "{count} objects in {FRAMES} frames");
    println!("OpenVINO FP32 = ONNX Runtime: {count} objects, confidence within {worst:.5}");
}

#[test]
fn batches_in_flight_give_the_same_results_in_order() {
    // One request: each batch runs before the next comes; four: up to four run at once and
    // their answers are taken in order.
    let one = vtest("backend=openvino requests-in-flight=1").unwrap();
    let four = vtest("backend=openvino requests-in-flight=4").unwrap();
    assert_eq!(one.frames.len(), FRAMES);
    for (i, (a, b)) in one.frames.iter().zip(&four.frames).enumerate() {
        assert_eq!(a.frame_num, b.frame_num, "frame {i} out of order");
    }
    // The same arithmetic; only the requests' threads differ (equal to the last bit here, 1e-5
    // allows another CPU's kernels to sum in another order).
    let (count, _) = assert_found(&one.frames, &four.frames, 0.999, 1e-5, true);
    assert!(count >= 3 * FRAMES, "{count} objects");
}

#[test]
fn openvino_reduced_precision_is_named_and_close_to_fp32() {
    let fp32 = vtest("backend=openvino").unwrap();
    let reduced = vtest("backend=openvino network-mode=fp16").unwrap();
    let providers = engine_field(&reduced, "providers");
    // BF16 where the CPU has it, else FP16, else FP32 (with a warning).
    assert!(
        ["CPU (bf16)", "CPU (f16)", "CPU (f32)"].contains(&providers.as_str()),
        "{providers}"
    );
    if providers == "CPU (f32)" {
        assert!(
            reduced
                .warnings
                .iter()
                .any(|w| w.contains("neither BF16 nor FP16")),
            "{:?}",
            reduced.warnings
        );
    }
    // Objects near the threshold may appear or vanish in reduced precision: those well above it
    // are found again.
    let confident = |frames: &[Frame]| -> Vec<Frame> {
        frames
            .iter()
            .map(|f| {
                let mut f = f.clone();
                f.objects.retain(|o| o.confidence >= 0.6);
                f
            })
            .collect()
    };
    // BF16 keeps 8 bits of mantissa: boxes at IoU >= 0.9, confidences within 0.04.
    let reference = confident(&fp32.frames);
    let (count, worst) = assert_found(&reference, &reduced.frames, 0.9, 0.04, false);
    assert!(
        count >= 2 * reference.len(),
        "{count} confident objects to compare"
    );
    println!(
        "{providers}: {count} confident FP32 objects found again, confidence within {worst:.4}"
    );
}

#[test]
fn missing_openvino_runtime_is_a_clear_error() {
    if is_child() {
        let err = vtest("backend=openvino").unwrap_err();
        assert!(err.contains("OpenVINO runtime not found"), "{err}");
        assert!(err.contains("/nonexistent/libopenvino_c.so"), "{err}");
        assert!(err.contains("scripts/install-openvino.sh"), "{err}");
        return;
    }
    // A fresh process: the runtime is loaded once per process.
    let (passed, output) = run_in_child(
        "missing_openvino_runtime_is_a_clear_error",
        &[("OPENVINO_DYLIB_PATH", "/nonexistent/libopenvino_c.so")],
    );
    assert!(passed, "child test failed:\n{output}");
    assert!(
        output.contains("1 passed"),
        "the child ran no test:\n{output}"
    );
}

#[test]
fn an_unknown_openvino_device_is_a_clear_error() {
    let err = vtest("backend=openvino openvino-device=NOSUCH").unwrap_err();
    assert!(
        err.contains("NOSUCH") && err.contains("not registered"),
        "{err}"
    );
    assert!(!err.contains("Exception from"), "{err}");
}

/// `network-mode=int8` on a model quantised with Q/DQ nodes (`tests/fixtures/qdq_channel_mean.onnx`:
/// u8 input, an int8 1x1 convolution swapping the first two channels, channel means as scores)
/// runs it as quantised, says so, and gives what ONNX Runtime gives in FP32 to the quantisation
/// step; a model without Q/DQ nodes warns instead (the SSDLite, above).
#[test]
fn int8_runs_a_qdq_model_as_quantised() {
    let desc = |extra: &str| {
        format!(
            "videotestsrc pattern=red num-buffers=2 ! video/x-raw,format=RGBA,width=64,height=48 \
             ! rstrtinfer onnx-file={} network-type=classifier classifier-softmax=never \
             net-scale-factor=0.00392156863 {extra} ! appsink name=sink",
            quoted(&repo_root().join("tests/fixtures/qdq_channel_mean.onnx"))
        )
    };
    let int8 =
        run_pipeline_frames(&desc("backend=openvino network-mode=int8"), 2, TIMEOUT).unwrap();
    assert_eq!(engine_field(&int8, "providers"), "CPU (int8 (Q/DQ))");
    assert!(int8.warnings.is_empty(), "{:?}", int8.warnings);
    let ort = run_pipeline_frames(&desc("backend=onnxruntime"), 2, TIMEOUT).unwrap();
    for (a, b) in int8.frames.iter().zip(&ort.frames) {
        let ([x], [y]) = (&a.objects[..], &b.objects[..]) else {
            panic!("one classification a frame: {a:?} {b:?}")
        };
        // Red (1.0) moved to the second channel by the swap.
        assert_eq!((x.class_id, y.class_id), (1, 1), "{x:?} {y:?}");
        assert!(
            (x.confidence - y.confidence).abs() <= 1.0 / 255.0,
            "{x:?} {y:?}"
        );
        assert!((x.confidence - 1.0).abs() <= 1.0 / 255.0, "{x:?}");
    }
}
