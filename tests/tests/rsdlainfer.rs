// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsdlainfer on a machine without a DLA (this lane, CI): the clear error, the GPU/CPU fallback
//! with its one warning, the coverage report message, and the properties it shares with
//! rstrtinfer.

use std::time::Duration;

use ferrostream_tests::{init, media, model, quoted, run_pipeline};
use gst::prelude::*;

/// MobileNetV2 on the squirrel image, `frames` times, through `element` with `extra`
/// properties.
fn squirrel(
    element: &str,
    extra: &str,
    frames: u32,
) -> Result<ferrostream_tests::RunOutput, String> {
    run_pipeline(
        &format!(
            "filesrc location={} ! decodebin ! videoconvert ! imagefreeze num-buffers={frames} \
             ! {element} onnx-file={} labelfile-path={} network-type=1 model-color-format=0 \
             net-scale-factor=0.017352074 offsets=123.675;116.28;103.53 \
             classifier-softmax=always {extra} ! appsink name=sink",
            quoted(&media("squirrel_cls.jpg")),
            quoted(&model("mobilenet_v2_imagenet.onnx")),
            quoted(&model("classification_classes_ILSVRC2012.txt")),
        ),
        Duration::from_secs(60),
    )
}

#[test]
fn without_a_dla_it_runs_on_the_cpu_and_says_so_once() {
    let out = squirrel("rsdlainfer", "", 4).unwrap();
    // The fallback warning, once, naming what is missing.
    let fallback: Vec<_> = out
        .warnings
        .iter()
        .filter(|w| w.contains("No DLA on this machine"))
        .collect();
    assert_eq!(fallback.len(), 1, "{:?}", out.warnings);
    // The engine message says where it ran, and why backend=auto took that backend: with the
    // DLA's FP16 and no NVIDIA GPU, OpenVINO at the CPU's reduced precision where it has one,
    // else ONNX Runtime on the CPU.
    let engine = out
        .element_messages
        .iter()
        .find(|s| s.name() == "rsdlainfer-engine")
        .unwrap();
    let field = |name: &str| engine.get::<String>(name).unwrap();
    let (backend, providers, choice) = (
        field("backend"),
        field("providers"),
        field("backend-choice"),
    );
    assert!(choice.starts_with(&format!("{backend}: ")), "{choice}");
    match backend.as_str() {
        "openvino" => {
            assert!(
                ["CPU (bf16)", "CPU (f16)"].contains(&providers.as_str()),
                "{providers}"
            );
            assert!(
                choice.contains("network-mode=fp16 and CPU computes"),
                "{choice}"
            );
        }
        "onnxruntime" => {
            assert_eq!(providers, "CPU");
            assert!(choice.contains("OpenVINO not used"), "{choice}");
        }
        other => panic!("{other} ran the fallback: {choice}"),
    }
    assert!(
        fallback[0].contains("libcudla.so.1")
            && fallback[0].contains(&format!("{backend} [{}]", providers.replace(',', ", "))),
        "{}",
        fallback[0]
    );
    // The results are rstrtinfer's: the squirrel, on every frame.
    assert_eq!(out.frames.len(), 4);
    for f in &out.frames {
        let c = &f.objects[0].classifications[0];
        assert_eq!(
            &*c.label,
            "fox squirrel, eastern fox squirrel, Sciurus niger"
        );
        assert!(c.prob > 0.9, "{}", c.prob);
    }
    // The coverage report of the model at the shape it runs.
    let report = out
        .element_messages
        .iter()
        .find(|s| s.name() == "rsdlainfer-dla-report")
        .unwrap();
    assert!(report.get::<f64>("dla-share").unwrap() > 0.9);
    assert_eq!(report.get::<u32>("dla-loadables").unwrap(), 1);
    assert_eq!(report.get::<u32>("gpu-subgraphs").unwrap(), 1);
    assert!(!report.get::<bool>("exceeds-loadable-limit").unwrap());
    let json: serde_json::Value =
        serde_json::from_str(&report.get::<String>("report").unwrap()).unwrap();
    assert_eq!(json["inputs"]["input"], serde_json::json!([1, 3, 224, 224]));
    assert_eq!(json["precision"], "fp16");
    assert!(
        report
            .get::<String>("summary")
            .unwrap()
            .contains("1 DLA loadable(s)")
    );
}

#[test]
fn without_a_dla_and_without_fallback_start_fails_naming_what_is_missing() {
    let err = squirrel("rsdlainfer", "allow-gpu-fallback=false", 1).unwrap_err();
    assert!(err.contains("no DLA on this machine"), "{err}");
    assert!(err.contains("libcudla.so.1"), "{err}");
    assert!(err.contains("allow-gpu-fallback=true"), "{err}");
}

#[test]
fn fp32_and_loadables_without_a_dla_are_errors() {
    let err = squirrel("rsdlainfer", "network-mode=fp32", 1).unwrap_err();
    assert!(err.contains("the DLA has no FP32"), "{err}");
    // A loadable runs only on a DLA: without one, and without the ONNX model to fall back to,
    // the error says so.
    let err = run_pipeline(
        "videotestsrc num-buffers=1 ! rsdlainfer model-engine-file=net.loadable \
         network-type=1 ! appsink name=sink",
        Duration::from_secs(20),
    )
    .unwrap_err();
    assert!(
        err.contains("net.loadable") && err.contains("only a DLA runs"),
        "{err}"
    );
}

#[test]
fn it_shares_rstrtinfer_properties_with_dla_defaults() {
    init();
    let trt = gst::ElementFactory::make("rstrtinfer").build().unwrap();
    let dla = gst::ElementFactory::make("rsdlainfer").build().unwrap();
    for p in trt.list_properties() {
        assert!(
            dla.find_property(p.name()).is_some(),
            "rsdlainfer lacks {}",
            p.name()
        );
    }
    use ferrostream_core::settings::GEnum;
    use gst_trtinfer::config::NetworkMode;
    let mode = |e: &gst::Element| e.property::<GEnum<NetworkMode>>("network-mode").0;
    assert_eq!(mode(&trt), NetworkMode::Fp32);
    assert_eq!(mode(&dla), NetworkMode::Fp16);
    assert!(dla.property::<bool>("enable-dla"));
    assert!(!trt.property::<bool>("enable-dla"));
    // gst-inspect-1.0 shows the element's own defaults.
    let default_of =
        |e: &gst::Element, name: &str| e.find_property(name).unwrap().default_value().clone();
    assert_eq!(
        default_of(&dla, "network-mode")
            .get::<GEnum<NetworkMode>>()
            .unwrap()
            .0,
        NetworkMode::Fp16
    );
    assert!(default_of(&dla, "enable-dla").get::<bool>().unwrap());
    assert!(!default_of(&trt, "enable-dla").get::<bool>().unwrap());
    dla.set_property("dla-core", 1i32);
    assert_eq!(dla.property::<u32>("use-dla-core"), 1);
    assert_eq!(dla.property::<i32>("dla-core"), 1);
    // -1: every DLA core (and the GPU): use-dla-core keeps the last single core.
    dla.set_property("dla-core", -1i32);
    assert_eq!(dla.property::<i32>("dla-core"), -1);
    assert_eq!(dla.property::<u32>("use-dla-core"), 1);
    // cuDLA's mode: auto by default (standalone where available), settable by nick.
    use gst_dlainfer::mode::DlaMode;
    assert_eq!(dla.property::<DlaMode>("dla-mode"), DlaMode::Auto);
    assert_eq!(
        default_of(&dla, "dla-mode").get::<DlaMode>().unwrap(),
        DlaMode::Auto
    );
    dla.set_property_from_str("dla-mode", "standalone");
    assert_eq!(dla.property::<DlaMode>("dla-mode"), DlaMode::Standalone);
    dla.set_property_from_str("dla-mode", "hybrid");
    assert_eq!(dla.property::<DlaMode>("dla-mode"), DlaMode::Hybrid);
}

/// A configuration file that leaves network-mode out gets the DLA default (FP16); one that asks
/// for FP32 is refused.
#[test]
fn configuration_files_keep_the_dla_defaults() {
    let dir = std::env::temp_dir().join(format!("rsdlainfer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, extra: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "[property]\nonnx-file={}\nlabelfile-path={}\nnetwork-type=1\nmodel-color-format=0\n{extra}",
                model("mobilenet_v2_imagenet.onnx").display(),
                model("classification_classes_ILSVRC2012.txt").display()
            ),
        )
        .unwrap();
        path
    };
    let plain = write("plain.txt", "");
    let out = run_pipeline(
        &format!(
            "videotestsrc num-buffers=1 ! rsdlainfer config-file-path={} ! appsink name=sink",
            quoted(&plain)
        ),
        Duration::from_secs(30),
    )
    .unwrap();
    let report = out
        .element_messages
        .iter()
        .find(|s| s.name() == "rsdlainfer-dla-report")
        .unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&report.get::<String>("report").unwrap()).unwrap();
    assert_eq!(json["precision"], "fp16");
    let fp32 = write("fp32.txt", "network-mode=0\n");
    let err = run_pipeline(
        &format!(
            "videotestsrc num-buffers=1 ! rsdlainfer config-file-path={} ! appsink name=sink",
            quoted(&fp32)
        ),
        Duration::from_secs(30),
    )
    .unwrap_err();
    assert!(err.contains("no FP32"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
