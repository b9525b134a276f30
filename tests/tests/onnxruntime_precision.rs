// SPDX-License-Identifier: MIT OR Apache-2.0
//! ONNX Runtime at the precision `network-mode` asks for. FP16: the model converted by
//! Ferrostream's converter finds the FP32 objects on real footage with trained models (COCO
//! SSDLite, a trained YOLOv8, CenterFace, a TF Object Detection API SSDLite, CenterNet) and keeps
//! a classifier's top class. INT8: models with Q/DQ nodes run quantised; float models run the
//! provider's fastest precision with a warning.
//!
//! Where ONNX Runtime reaches a CUDA GPU, both sides run on it (`device=cuda`, FP16 arithmetic on
//! the GPU). Without one, the converted model (the file the element caches) is run as given on
//! the CPU: the CPU provider computes FP16 models between casts, so every tensor between
//! operators is rounded to FP16 as on the GPU (the CPU's own network-mode=fp16 runs FP32, with
//! a warning, checked here too).

use std::path::PathBuf;
use std::time::Duration;

use ferrostream_core::Object;
use ferrostream_tests::{
    FoundAgain, RunOutput, best_match, media, model, quoted, repo_root, run_pipeline_frames,
};

const TIMEOUT: Duration = Duration::from_secs(600);
/// How far FP16 may move a confidence.
const CONFIDENCE: f32 = 0.02;

fn config(name: &str) -> String {
    quoted(&repo_root().join("pipelines").join(name))
}

fn decoded(name: &str) -> String {
    format!(
        "filesrc location={} ! decodebin ! videoconvert",
        quoted(&media(name))
    )
}

/// Whether ONNX Runtime's CUDA provider reaches a GPU here.
fn on_gpu() -> bool {
    gst_trtinfer::engine::choice::onnxruntime_reaches_a_gpu()
}

/// A cache directory of this test process, removed when the process ends.
fn cache_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove() {
        if let Some(dir) = DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    DIR.get_or_init(|| {
        // SAFETY: `remove` is a plain function that only removes the directory.
        unsafe { libc::atexit(remove) };
        std::env::temp_dir().join(format!("fs-fp16-test-{}", std::process::id()))
    })
}

/// The model file `name` converted to FP16 (into [`cache_dir`]).
fn converted(name: &str) -> PathBuf {
    let source = model(name);
    let bytes = std::fs::read(&source).unwrap();
    let dir = cache_dir();
    let converted = gst_trtinfer::onnx::fp16_model(&source, &bytes, dir)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    println!("{name}: {}", converted.summary);
    converted.path.expect("the test directory is writable")
}

/// rstrtinfer properties that run the case's model in `mode` ("fp32" or "fp16").
fn precision(model_file: &str, mode: &str) -> String {
    match (on_gpu(), mode) {
        (true, mode) => format!("device=cuda network-mode={mode}"),
        (false, "fp32") => "device=cpu network-mode=fp32".into(),
        (false, _) => format!(
            "device=cpu network-mode=fp32 onnx-file={}",
            quoted(&converted(model_file))
        ),
    }
}

fn run_case(template: &str, infer: &str, frames: usize) -> RunOutput {
    let desc = format!("{} ! appsink name=sink", template.replace("{infer}", infer));
    run_pipeline_frames(&desc, frames, TIMEOUT).unwrap_or_else(|e| panic!("{desc}: {e}"))
}

/// The FP32 boxes of the trained detectors are found again in FP16 at IoU >= 0.9 with the
/// confidence within [`CONFIDENCE`]: at least 99 % of those scored that much above the
/// detection threshold, and 98 % of all (an object at the threshold in FP32 may score just below
/// it in FP16: measured here on the CPU lane, 971 of 976 in all, the 5 others scored within
/// 0.013 of the threshold).
#[test]
fn fp16_finds_the_fp32_objects_on_real_footage() {
    let case = |media: &str, config_file: &str| {
        format!(
            "{} ! rstrtinfer config-file-path={} {{infer}}",
            decoded(media),
            config(config_file)
        )
    };
    // (what, pipeline, model file, the configuration's pre-cluster-threshold, frames). The GPU check's bundle has H.264 footage, stills
    // and the COCO SSDLite, CenterFace and MobileNetV2 models; the CPU lane has them all.
    let mut cases = vec![
        (
            "COCO SSDLite, carphone",
            case("carphone_pristine.mp4", "coco_ssd.txt"),
            "coco_ssdlite_mobilenet_v2.onnx",
            0.4,
            60,
        ),
        (
            "CenterFace, carphone",
            case("carphone_pristine.mp4", "centerface.txt"),
            "centerface.onnx",
            0.5,
            60,
        ),
        (
            "COCO SSDLite, basketball1.png",
            case("basketball1.png", "coco_ssd.txt"),
            "coco_ssdlite_mobilenet_v2.onnx",
            0.4,
            1,
        ),
        (
            "COCO SSDLite, messi5.jpg",
            case("messi5.jpg", "coco_ssd.txt"),
            "coco_ssdlite_mobilenet_v2.onnx",
            0.4,
            1,
        ),
    ];
    if !on_gpu() {
        cases.extend([
            (
                "COCO SSDLite, vtest",
                case("vtest.avi", "coco_ssd.txt"),
                "coco_ssdlite_mobilenet_v2.onnx",
                0.4,
                60,
            ),
            (
                "YOLOv8 (trained), vtest",
                case("vtest.avi", "fall_detection.txt"),
                "fall_detection_yolov8.onnx",
                0.25,
                60,
            ),
            (
                "TF OD API SSDLite, vtest",
                case("vtest.avi", "pedestrian_ssdlite.txt"),
                "pedestrian_ssdlite.onnx",
                0.5,
                40,
            ),
            (
                "CenterNet, basketball1.png",
                case("basketball1.png", "centernet_coco.txt"),
                "centernet_mobilenetv3.onnx",
                0.3,
                1,
            ),
        ]);
    }
    let mut tally = FoundAgain::new(CONFIDENCE);
    for (what, template, model_file, threshold, frames) in &cases {
        let fp32 = run_case(template, &precision(model_file, "fp32"), *frames);
        let fp16 = run_case(template, &precision(model_file, "fp16"), *frames);
        let providers = engine_providers(&fp16);
        if on_gpu() {
            assert!(providers.starts_with("CUDA (fp16"), "{what}: {providers}");
        }
        let what = format!("{what} ({providers})");
        tally.add(&what, &fp32.frames, &fp16.frames, *threshold, *frames);
    }
    tally.assert_shares(0.99, 0.98);
}

/// Secondary classification (MobileNetV2, ImageNet) in FP16 keeps the FP32 top class of the
/// crops of the COCO objects of vtest: of every crop the classifier is sure of (top-1
/// probability >= 0.5; 99 % at least), and of at least 98 % of all. Crops of people have no
/// ImageNet class: their top classes are guesses between near-equal classes (measured here: 366
/// of 371 equal over 60 frames, every difference between classes scored below 0.15 in both
/// precisions; keeping the last matrix product in FP32 changed one of them).
#[test]
fn fp16_keeps_the_classifier_s_top_class() {
    // The detector in FP32 on both sides, so both classify the same crops (paired by box).
    // vtest's people on the CPU lane; the GPU check's bundle has the carphone clip.
    let (footage, frames) = if on_gpu() {
        ("carphone_pristine.mp4", 200)
    } else {
        ("vtest.avi", 60)
    };
    let template = format!(
        "{} ! rstrtinfer config-file-path={} {} ! rstrtinfer config-file-path={} {{infer}}",
        decoded(footage),
        config("coco_ssd.txt"),
        precision("coco_ssdlite_mobilenet_v2.onnx", "fp32"),
        config("imagenet_secondary.txt"),
    );
    let classifier = "mobilenet_v2_imagenet.onnx";
    let fp32 = run_case(&template, &precision(classifier, "fp32"), frames);
    let fp16 = run_case(&template, &precision(classifier, "fp16"), frames);
    let top = |o: &Object| {
        o.classifications
            .iter()
            .max_by(|x, y| x.prob.total_cmp(&y.prob))
            .map(|c| (c.label.clone(), c.prob))
    };
    let (mut same, mut crops, mut sure, mut sure_same) = (0, 0, 0, 0);
    for (a, b) in fp32.frames.iter().zip(&fp16.frames) {
        for o in &a.objects {
            let Some((p, _)) = best_match(o, &b.objects).filter(|(_, iou)| *iou >= 0.99) else {
                panic!("the FP32 detector found different objects");
            };
            let (Some(x), Some(y)) = (top(o), top(p)) else {
                continue;
            };
            crops += 1;
            sure += usize::from(x.1 >= 0.5);
            if x.0 == y.0 {
                same += 1;
                sure_same += usize::from(x.1 >= 0.5);
            } else {
                println!("  {} {:.3} -> {} {:.3}", x.0, x.1, y.0, y.1);
            }
        }
    }
    println!(
        "{same} of {crops} crops keep their top class in FP16; {sure_same} of the {sure} with \
         a top-1 probability >= 0.5"
    );
    assert!(crops >= frames, "{crops} crops in {frames} frames");
    assert!(sure >= 20, "{sure} crops the classifier is sure of");
    assert!(
        sure_same as f64 >= 0.99 * sure as f64,
        "{sure_same} of {sure}"
    );
    assert!(same as f64 >= 0.98 * crops as f64, "{same} of {crops}");
}

/// `network-mode=fp16` on ONNX Runtime's CPU provider runs FP32 and says why.
#[test]
fn fp16_on_the_cpu_provider_runs_fp32_with_a_warning() {
    let desc = format!(
        "{} ! rstrtinfer config-file-path={} backend=onnxruntime device=cpu network-mode=fp16",
        decoded("carphone_pristine.mp4"),
        config("coco_ssd.txt")
    );
    let out = run_case(&desc, "", 2);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("network-mode=fp16") && w.contains("running FP32")),
        "{:?}",
        out.warnings
    );
    assert_eq!(out.frames.len(), 2);
}

fn fixture(name: &str) -> String {
    quoted(&repo_root().join("tests/fixtures").join(name))
}

fn engine_providers(out: &RunOutput) -> String {
    out.element_messages
        .iter()
        .find(|s| s.name() == "rstrtinfer-engine")
        .and_then(|s| s.get::<String>("providers").ok())
        .expect("an engine message with the providers")
}

/// `network-mode=int8` with a model with Q/DQ nodes runs it quantised (the CPU provider's INT8
/// kernels; on a GPU the CUDA provider, with a warning that FP16 is faster there) and gives
/// the FP32 engine's classes; with a float model it runs the fastest precision of the provider
/// (FP32 on the CPU, FP16 on a GPU) and warns, naming it.
#[test]
fn int8_runs_q_dq_models_and_warns_for_float_models() {
    let device = if on_gpu() { "cuda" } else { "cpu" };
    let qdq = |extra: &str| {
        format!(
            "videotestsrc pattern=red num-buffers=2 ! video/x-raw,format=RGBA,width=64,height=48 \
             ! rstrtinfer onnx-file={} network-type=classifier classifier-softmax=never \
             net-scale-factor=0.00392156863 backend=onnxruntime device={device} {extra} \
             ! appsink name=sink",
            fixture("qdq_channel_mean.onnx")
        )
    };
    let int8 = run_pipeline_frames(&qdq("network-mode=int8"), 2, TIMEOUT).unwrap();
    let fp32 = run_pipeline_frames(&qdq("network-mode=fp32"), 2, TIMEOUT).unwrap();
    let providers = engine_providers(&int8);
    if on_gpu() {
        assert!(providers.starts_with("CUDA (int8"), "{providers}");
        assert!(
            int8.warnings.iter().any(|w| w.contains("0.28x FP16")),
            "{:?}",
            int8.warnings
        );
    } else {
        assert_eq!(providers, "CPU (int8)");
        assert!(int8.warnings.is_empty(), "{:?}", int8.warnings);
    }
    for (a, b) in int8.frames.iter().zip(&fp32.frames) {
        let ([x], [y]) = (&a.objects[..], &b.objects[..]) else {
            panic!("one classification a frame: {a:?} {b:?}")
        };
        // Red (1.0) moved to the second channel by the model.
        assert_eq!((x.class_id, y.class_id), (1, 1), "{x:?} {y:?}");
        assert!(
            (x.confidence - y.confidence).abs() <= 1.0 / 255.0,
            "{x:?} {y:?}"
        );
    }

    let float = format!(
        "{} ! rstrtinfer config-file-path={} backend=onnxruntime device={device} network-mode=int8 \
         ! appsink name=sink",
        decoded("carphone_pristine.mp4"),
        config("coco_ssd.txt")
    );
    let out = run_pipeline_frames(&float, 2, TIMEOUT).unwrap();
    let (providers, ran) = (
        engine_providers(&out),
        if on_gpu() { "FP16" } else { "FP32" },
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("Q/DQ") && w.contains(&format!("running {ran}"))),
        "{:?}",
        out.warnings
    );
    let expected = if on_gpu() { "CUDA (fp16" } else { "CPU" };
    assert!(providers.starts_with(expected), "{providers}");
    assert_eq!(out.frames.len(), 2);
}
