// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer with `backend=openvino` (the runtime of scripts/install-openvino.sh): in FP32 the
//! objects of ONNX Runtime for every built-in parser family; the CPU's reduced precision close
//! to FP32 on real footage; what ran, and why `backend=auto` chose it, in the engine message;
//! a missing runtime as a clear error.

use std::time::Duration;

use ferrostream_core::{AttributeValue, Frame, Object};
use ferrostream_tests::{
    FoundAgain, RunOutput, assert_passes_in_child, best_match, is_child, media, quoted, repo_root,
    run_pipeline_frames,
};

const TIMEOUT: Duration = Duration::from_secs(600);
const FRAMES: usize = 20;

fn config(name: &str) -> String {
    quoted(&repo_root().join("pipelines").join(name))
}

fn fixture(name: &str) -> String {
    quoted(&repo_root().join("tests/fixtures").join(name))
}

/// A decoded media file (video or image).
fn decoded(name: &str) -> String {
    format!(
        "filesrc location={} ! decodebin ! videoconvert",
        quoted(&media(name))
    )
}

/// rstrtinfer with the COCO SSDLite configuration and `extra` on the first frames of vtest.avi.
fn vtest(extra: &str) -> Result<RunOutput, String> {
    let desc = format!(
        "{} ! rstrtinfer config-file-path={} {extra} ! appsink name=sink",
        decoded("vtest.avi"),
        config("coco_ssd.txt")
    );
    run_pipeline_frames(&desc, FRAMES, TIMEOUT)
}

/// The top class of each classifier that labelled `o`.
fn top_classes(o: &Object) -> Vec<(i32, String)> {
    let mut components: Vec<i32> = o.classifications.iter().map(|c| c.component_id).collect();
    components.dedup();
    components
        .into_iter()
        .filter_map(|id| {
            o.classifications
                .iter()
                .filter(|c| c.component_id == id)
                .max_by(|a, b| a.prob.total_cmp(&b.prob))
                .map(|c| (id, c.label.to_string()))
        })
        .collect()
}

/// The share of equal cells of two equally long cell lists.
fn equal_share<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    assert_eq!(a.len(), b.len(), "maps of different sizes");
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    equal as f64 / a.len().max(1) as f64
}

/// Asserts that `b` has `a`'s objects frame by frame: as many, each with one of the same label
/// whose edges are within `px` pixels and confidence within `conf`, with the same top classes,
/// numeric attributes (landmarks) within `px`, and masks and class maps equal on 99 % of their
/// cells. Returns how many objects were compared.
fn assert_same_objects(case: &str, a: &[Frame], b: &[Frame], px: f32, conf: f32) -> usize {
    assert_eq!(a.len(), b.len(), "{case}: frames");
    let mut compared = 0;
    for (i, (fa, fb)) in a.iter().zip(b).enumerate() {
        let at = format!("{case}, frame {i}");
        assert_eq!(fa.objects.len(), fb.objects.len(), "{at}: {fa:#?}\n{fb:#?}");
        for o in &fa.objects {
            let Some((p, _)) = best_match(o, &fb.objects) else {
                panic!("{at}: no {} in {:#?}", o.label, fb.objects)
            };
            let (x, y) = (o.detector_bbox, p.detector_bbox);
            let edges = [
                (x.left - y.left).abs(),
                (x.top - y.top).abs(),
                (x.right() - y.right()).abs(),
                (x.bottom() - y.bottom()).abs(),
            ];
            assert!(
                edges.iter().all(|&e| e <= px) && (o.confidence - p.confidence).abs() <= conf,
                "{at}: {o:?}\nmatched {p:?}"
            );
            assert_eq!(top_classes(o), top_classes(p), "{at}: classes");
            for (key, value) in &o.attributes {
                if let (AttributeValue::Floats(u), Some(AttributeValue::Floats(v))) =
                    (value, p.attributes.get(key))
                {
                    assert_eq!(u.len(), v.len(), "{at}: {key}");
                    assert!(
                        u.iter().zip(v).all(|(s, t)| (s - t).abs() <= px),
                        "{at}: {key} {u:?} {v:?}"
                    );
                }
            }
            match (&o.mask, &p.mask) {
                (None, None) => {}
                (Some(m), Some(n)) => {
                    assert_eq!((m.width, m.height), (n.width, n.height), "{at}: mask size");
                    assert!(equal_share(&m.cells(), &n.cells()) >= 0.99, "{at}: mask");
                }
                _ => panic!("{at}: a mask on one side only"),
            }
            compared += 1;
        }
        match (&fa.segmentation, &fb.segmentation) {
            (None, None) => {}
            (Some(m), Some(n)) => {
                assert_eq!(
                    (m.width, m.height),
                    (n.width, n.height),
                    "{at}: class map size"
                );
                assert!(
                    equal_share(&m.cells(), &n.cells()) >= 0.99,
                    "{at}: class map"
                );
                compared += 1;
            }
            _ => panic!("{at}: a class map on one side only"),
        }
    }
    compared
}

/// `template` with `{infer}` replaced by `infer` (the backend's properties, given to every
/// rstrtinfer of the pipeline), run for `frames` frames.
fn run_case(template: &str, infer: &str, frames: usize) -> RunOutput {
    let desc = format!("{} ! appsink name=sink", template.replace("{infer}", infer));
    run_pipeline_frames(&desc, frames, TIMEOUT).unwrap_or_else(|e| panic!("{desc}: {e}"))
}

/// One synthetic 128x128 frame into a generated model (tests/fixtures).
fn fixture_case(model: &str, keys: &str) -> String {
    format!(
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=128,height=128 \
         ! rstrtinfer onnx-file={} {keys} {{infer}}",
        fixture(model)
    )
}

#[test]
fn every_parser_family_gives_onnx_runtime_s_objects_in_fp32() {
    let infer = |name: &str| format!("rstrtinfer config-file-path={} {{infer}}", config(name));
    let cases: Vec<(&str, String)> = vec![
        (
            "SSD (COCO SSDLite, vtest)",
            format!("{} ! {}", decoded("vtest.avi"), infer("coco_ssd.txt")),
        ),
        (
            "TF Object Detection API, symbolic outputs, guessed (pedestrian SSDLite, vtest)",
            format!(
                "{} ! {}",
                decoded("vtest.avi"),
                infer("pedestrian_ssdlite.txt")
            ),
        ),
        (
            "YOLOv8, guessed (fall detection, vtest)",
            format!("{} ! {}", decoded("vtest.avi"), infer("fall_detection.txt")),
        ),
        (
            "top-K rows, guessed (CenterNet, basketball1.png)",
            format!(
                "{} ! {}",
                decoded("basketball1.png"),
                infer("centernet_coco.txt")
            ),
        ),
        (
            "CenterFace with landmarks (carphone)",
            format!(
                "{} ! {}",
                decoded("carphone_pristine.mp4"),
                infer("centerface.txt")
            ),
        ),
        (
            "classifier as secondary inference (MobileNetV2 on COCO objects, messi5.jpg)",
            format!(
                "{} ! {} ! {}",
                decoded("messi5.jpg"),
                infer("coco_ssd.txt"),
                infer("imagenet_secondary.txt")
            ),
        ),
        (
            "classifier with an f16 input",
            fixture_case(
                "f16_channel_mean.onnx",
                "network-type=classifier classifier-softmax=never net-scale-factor=0.00392156863",
            ),
        ),
        (
            "YOLOv8 rows",
            fixture_case(
                "yolov8_constant.onnx",
                "output-parser=yolov8 pre-cluster-threshold=0.5",
            ),
        ),
        (
            "YOLOv5 anchors",
            fixture_case(
                "yolov5_one_class.onnx",
                "output-parser=yolov5 pre-cluster-threshold=0.5",
            ),
        ),
        (
            "YOLOv7 [K,7] rows",
            fixture_case("yolov7_rows.onnx", "pre-cluster-threshold=0.5"),
        ),
        (
            "YOLOX grid",
            fixture_case("yolox_raw.onnx", "pre-cluster-threshold=0.5"),
        ),
        (
            "end-to-end rows, symbolic",
            fixture_case("end_to_end_symbolic.onnx", "pre-cluster-threshold=0.5"),
        ),
        (
            "TF OD API, symbolic",
            fixture_case("tf_od_api_symbolic.onnx", "pre-cluster-threshold=0.5"),
        ),
        (
            "DETR boxes, scores, int64 labels",
            fixture_case("boxes_scores_labels.onnx", "pre-cluster-threshold=0.5"),
        ),
        (
            "YOLOv8-seg masks",
            fixture_case(
                "yolov8_seg_constant.onnx",
                "pre-cluster-threshold=0.5 segmentation-threshold=0.5",
            ),
        ),
        (
            "semantic segmentation",
            fixture_case(
                "segmentation_constant.onnx",
                "network-type=segmentation gie-unique-id=4 segmentation-threshold=0.5",
            ),
        ),
    ];
    for (case, template) in &cases {
        let ort = run_case(template, "backend=onnxruntime", FRAMES);
        let ov = run_case(template, "backend=openvino network-mode=fp32", FRAMES);
        assert_eq!(ov.engine_field("backend"), "openvino", "{case}");
        assert_eq!(ov.engine_field("providers"), "CPU (f32)", "{case}");
        let compared = assert_same_objects(case, &ort.frames, &ov.frames, 1.0, 0.01);
        // Every case has something to compare.
        assert!(compared > 0, "{case}: nothing found");
        println!(
            "{case}: {compared} objects as ONNX Runtime's, {} frames",
            ov.frames.len()
        );
    }
}

#[test]
fn openvino_says_what_ran() {
    let ov = vtest("backend=openvino").unwrap();
    assert_eq!(ov.engine_field("backend"), "openvino");
    assert_eq!(ov.engine_field("providers"), "CPU (f32)");
    assert!(ov.engine_field("runtime-version").starts_with("2026."));
    // A backend that was named has no choice to explain.
    let message = ov
        .element_messages
        .iter()
        .find(|s| s.name() == "rstrtinfer-engine")
        .unwrap();
    assert!(!message.has_field("backend-choice"), "{message:?}");
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
    let count = assert_same_objects("in flight", &one.frames, &four.frames, 1e-3, 1e-5);
    assert!(count >= 3 * FRAMES, "{count} objects");
}

/// The reduced precision `network-mode=fp16` ran (`CPU (bf16)` or `CPU (f16)`), after checking
/// that a CPU without either says why.
fn reduced_providers(out: &RunOutput) -> String {
    let providers = out.engine_field("providers");
    assert!(
        ["CPU (bf16)", "CPU (f16)", "CPU (f32)"].contains(&providers.as_str()),
        "{providers}"
    );
    if providers == "CPU (f32)" {
        assert!(
            out.warnings
                .iter()
                .any(|w| w.contains("neither BF16 nor FP16")),
            "{:?}",
            out.warnings
        );
    }
    providers
}

/// The CPU's reduced precision (BF16 here) against FP32 on real footage. BF16 keeps 8 bits of
/// mantissa: scores move by up to about 0.05, so an object scored within that of the detection
/// threshold may fall below it (or be clustered into a neighbour) in one precision and not the
/// other. Every object clear of the threshold is found again (99 % at least), and of all
/// objects at least 98 % (measured here: 550 of 557, 98.7 %; the 7 others scored at most 0.016
/// above the threshold in FP32).
#[test]
fn reduced_precision_finds_the_fp32_objects_on_real_footage() {
    let case = |media: &str, config_file: &str| {
        format!(
            "{} ! rstrtinfer config-file-path={} {{infer}}",
            decoded(media),
            config(config_file)
        )
    };
    // (what, pipeline, frames, the configuration's pre-cluster-threshold)
    let cases = [
        (
            "COCO SSDLite, vtest",
            case("vtest.avi", "coco_ssd.txt"),
            60,
            0.4,
        ),
        (
            "COCO SSDLite, carphone",
            case("carphone_pristine.mp4", "coco_ssd.txt"),
            60,
            0.4,
        ),
        (
            "CenterFace, carphone",
            case("carphone_pristine.mp4", "centerface.txt"),
            60,
            0.5,
        ),
        (
            "COCO SSDLite, basketball1.png",
            case("basketball1.png", "coco_ssd.txt"),
            1,
            0.4,
        ),
        (
            "CenterNet, basketball1.png",
            case("basketball1.png", "centernet_coco.txt"),
            1,
            0.3,
        ),
    ];
    let mut tally = FoundAgain::new(0.05);
    for (what, template, frames, threshold) in &cases {
        let fp32 = run_case(template, "backend=openvino network-mode=fp32", *frames);
        let reduced = run_case(template, "backend=openvino network-mode=fp16", *frames);
        let providers = reduced_providers(&reduced);
        let what = format!("{what}, {providers}");
        tally.add(&what, &fp32.frames, &reduced.frames, *threshold, *frames);
    }
    tally.assert_shares(0.99, 0.98);
}

/// Secondary classification (MobileNetV2, ImageNet's 1000 classes, on the COCO objects of
/// vtest) in reduced precision keeps the top class of every crop the classifier is sure of
/// (FP32 top-1 probability >= 0.5; 99 % at least). Crops of people have no ImageNet class: their
/// top classes are unsure (often below 0.2) and flip between near-equal classes in BF16 (measured
/// here: 480 of 529 crops equal over 80 frames, every difference below 0.5); at least 85 % of all.
#[test]
fn reduced_precision_keeps_the_top_class_of_the_crops_the_classifier_is_sure_of() {
    // The detector in FP32 on both sides, so both classify the same crops (paired by box).
    let template = format!(
        "{} ! rstrtinfer config-file-path={} backend=openvino network-mode=fp32 \
         ! rstrtinfer config-file-path={} {{infer}}",
        decoded("vtest.avi"),
        config("coco_ssd.txt"),
        config("imagenet_secondary.txt"),
    );
    let frames = 80;
    let fp32 = run_case(&template, "backend=openvino network-mode=fp32", frames);
    let reduced = run_case(&template, "backend=openvino network-mode=fp16", frames);
    let providers = reduced_providers(&reduced);
    let (mut same, mut crops, mut sure_same, mut sure, mut unpaired) = (0, 0, 0, 0, 0);
    assert_eq!(fp32.frames.len(), reduced.frames.len());
    for (a, b) in fp32.frames.iter().zip(&reduced.frames) {
        for o in &a.objects {
            // The same detection on the other side (the same FP32 engine: the same box, unless
            // another CPU's thread split moves an object across the threshold).
            let Some((p, _)) = best_match(o, &b.objects).filter(|(_, iou)| *iou >= 0.99) else {
                unpaired += 1;
                continue;
            };
            let Some(top) = o
                .classifications
                .iter()
                .max_by(|x, y| x.prob.total_cmp(&y.prob))
            else {
                continue;
            };
            let equal = top_classes(o) == top_classes(p);
            crops += 1;
            same += usize::from(equal);
            if top.prob >= 0.5 {
                sure += 1;
                sure_same += usize::from(equal);
            } else if !equal {
                println!(
                    "  {:.3}: {:?} -> {:?}",
                    top.prob,
                    top_classes(o),
                    top_classes(p)
                );
            }
        }
    }
    println!(
        "{providers}: {same} of {crops} crops keep their top class; {sure_same} of the {sure} \
         with a top-1 probability >= 0.5"
    );
    assert!(
        unpaired <= crops / 100,
        "{unpaired} detections without a pair"
    );
    assert!(crops >= 3 * frames, "{crops} crops in {frames} frames");
    assert!(sure >= frames, "{sure} crops the classifier is sure of");
    assert!(
        sure_same as f64 >= 0.99 * sure as f64,
        "{sure_same} of {sure}"
    );
    assert!(same as f64 >= 0.85 * crops as f64, "{same} of {crops}");
}

/// `backend=auto` on this machine (no NVIDIA GPU): FP32 stays on ONNX Runtime; the reduced
/// precision runs OpenVINO exactly when the CPU computes BF16 or FP16 (what `backend=openvino`
/// reports), and the engine message says why.
#[test]
fn backend_auto_takes_openvino_for_reduced_precision_on_a_cpu_with_it() {
    let fp32 = vtest("backend=auto").unwrap();
    assert_eq!(fp32.engine_field("backend"), "onnxruntime");
    let why = fp32.engine_field("backend-choice");
    assert!(why.starts_with("onnxruntime: network-mode=fp32"), "{why}");

    let explicit = vtest("backend=openvino network-mode=fp16").unwrap();
    let native = reduced_providers(&explicit) != "CPU (f32)";
    let auto = vtest("backend=auto network-mode=fp16").unwrap();
    let why = auto.engine_field("backend-choice");
    if native {
        assert_eq!(auto.engine_field("backend"), "openvino", "{why}");
        assert_eq!(
            auto.engine_field("providers"),
            explicit.engine_field("providers")
        );
        assert!(
            why.starts_with("openvino: network-mode=fp16 and CPU computes"),
            "{why}"
        );
        let mut same = FoundAgain::new(0.05);
        same.add(
            "auto against openvino",
            &explicit.frames,
            &auto.frames,
            0.0,
            FRAMES,
        );
        assert_eq!(same.found, same.all, "the same engine");
    } else {
        assert_eq!(auto.engine_field("backend"), "onnxruntime", "{why}");
        assert!(why.contains("neither BF16 nor FP16"), "{why}");
    }
}

/// Without the OpenVINO runtime, `backend=auto` runs ONNX Runtime and says why.
#[test]
fn backend_auto_without_openvino_runs_onnx_runtime() {
    if is_child() {
        let out = vtest("backend=auto network-mode=fp16").unwrap();
        assert_eq!(out.engine_field("backend"), "onnxruntime");
        let why = out.engine_field("backend-choice");
        assert!(
            why.starts_with("onnxruntime: OpenVINO not used: OpenVINO runtime not found"),
            "{why}"
        );
        return;
    }
    assert_passes_in_child(
        "backend_auto_without_openvino_runs_onnx_runtime",
        &[("OPENVINO_DYLIB_PATH", "/nonexistent/libopenvino_c.so")],
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
    assert_passes_in_child(
        "missing_openvino_runtime_is_a_clear_error",
        &[("OPENVINO_DYLIB_PATH", "/nonexistent/libopenvino_c.so")],
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
            fixture("qdq_channel_mean.onnx")
        )
    };
    let int8 =
        run_pipeline_frames(&desc("backend=openvino network-mode=int8"), 2, TIMEOUT).unwrap();
    assert_eq!(int8.engine_field("providers"), "CPU (int8 (Q/DQ))");
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
