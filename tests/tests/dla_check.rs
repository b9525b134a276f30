// SPDX-License-Identifier: MIT OR Apache-2.0
//! The DLA coverage checker on the shared models: asserted findings, each traced to a rule of
//! the rule table.

use std::collections::BTreeMap;

use ferrostream_tests::model;
use gst_dlainfer::check::onnx::{AttrValue, Model, Node};
use gst_dlainfer::check::{
    self, CheckOptions, Placement, Precision, RULES, Report, check_file, check_model,
};

fn report(name: &str, shape: Option<(&str, &[i64])>) -> Report {
    let mut options = CheckOptions::default();
    if let Some((input, dims)) = shape {
        options.input_shapes = BTreeMap::from([(input.to_string(), dims.to_vec())]);
    }
    check_file(&model(name), &options).expect("the model checks")
}

/// Every check names a rule of the table, and the report lists that rule with its source.
fn assert_traceable(r: &Report) {
    for c in r
        .model_checks
        .iter()
        .chain(r.nodes.iter().flat_map(|n| &n.checks))
    {
        let rule = RULES.iter().find(|x| x.id == c.rule);
        assert!(rule.is_some(), "check {c:?} cites no rule of the table");
        assert!(
            r.rules.iter().any(|x| x.id == c.rule),
            "{} missing from the report",
            c.rule
        );
    }
    for n in r.nodes.iter().filter(|n| n.placement == Placement::Gpu) {
        assert!(
            n.failed().next().is_some(),
            "{} is on the GPU without a failed rule",
            n.name
        );
    }
}

fn failed_rules(n: &check::NodeReport) -> Vec<&'static str> {
    n.failed().map(|c| c.rule).collect()
}

#[test]
fn mobilenet_v2_runs_on_the_dla_but_its_classifier() {
    let r = report("mobilenet_v2_imagenet.onnx", None);
    assert_traceable(&r);
    let count = |op: &str| r.nodes.iter().filter(|n| n.op_type == op).count();
    assert_eq!((count("Conv"), count("Clip"), count("Add")), (52, 35, 10));
    for n in r
        .nodes
        .iter()
        .filter(|n| matches!(n.op_type.as_str(), "Conv" | "Clip" | "Add"))
    {
        assert_eq!(
            n.placement,
            Placement::Dla,
            "{} {}: {:?}",
            n.op_type,
            n.name,
            failed_rules(n)
        );
    }
    let clip = r.nodes.iter().find(|n| n.op_type == "Clip").unwrap();
    assert!(
        clip.checks
            .iter()
            .any(|c| c.rule == "act.clip" && c.passed && c.detail == "clip to [0, 6]")
    );
    assert!(r.dla_share > 0.9, "coverage {}", r.dla_share);
    assert!(r.dla_share < 1.0, "the classifier layer stays on the GPU");
    // The Gemm after Flatten is a fully connected layer on a 2D tensor.
    let gemm = r.nodes.iter().find(|n| n.op_type == "Gemm").unwrap();
    assert_eq!(gemm.placement, Placement::Gpu);
    assert_eq!(failed_rules(gemm), ["fc.input"]);
    assert_eq!(gemm.macs, Some(1280 * 1000));
    assert_eq!((r.dla_loadables, r.gpu_subgraphs), (1, 1));
    assert!(
        r.suggestions[0].text.contains("1x1 Conv"),
        "{:?}",
        r.suggestions
    );
    assert_eq!(
        r.suggestions[0].nodes, 2,
        "Flatten and Gemm: {:?}",
        r.suggestions[0]
    );
    assert!(
        r.model_checks.iter().all(|c| c.passed),
        "{:?}",
        r.model_checks
    );
}

#[test]
fn coco_ssd_post_processing_falls_back_to_the_gpu() {
    let r = report(
        "coco_ssdlite_mobilenet_v2.onnx",
        Some(("image_tensor:0", &[1, 300, 300, 3])),
    );
    assert_traceable(&r);
    let node = |name: &str| r.nodes.iter().find(|n| n.name == name).unwrap();
    let sigmoid = node("Postprocessor/convert_scores");
    assert_eq!(sigmoid.placement, Placement::Gpu);
    assert_eq!(
        failed_rules(sigmoid),
        ["act.function"],
        "sigmoid on [1,1917,91]"
    );
    assert_eq!(failed_rules(node("Postprocessor/Slice")), ["slice.rank"]);
    assert_eq!(
        failed_rules(node("BoxPredictor_0/Reshape_1")),
        ["shuffle.rank"]
    );
    assert!(failed_rules(node("Postprocessor/Decode/Exp")).contains(&"unary.op"));
    // The input cast and the per-image resize loop run on the GPU too.
    assert!(failed_rules(node("generic_loop_Loop__29")).contains(&"op.supported"));
    // Everything computing under Postprocessor/ is GPU fallback, in 3 subgraphs after the
    // backbone; 2 more before it (input cast, resize loop).
    let post: Vec<_> = r
        .nodes
        .iter()
        .filter(|n| n.name.starts_with("Postprocessor/") && n.subgraph.is_some())
        .collect();
    assert!(post.len() > 40);
    assert!(post.iter().all(|n| n.placement == Placement::Gpu));
    assert_eq!(r.gpu_subgraphs, 5);
    let scores = &r.subgraphs[sigmoid.subgraph.unwrap()];
    assert_eq!(scores.ops.get("Reshape"), Some(&6), "{:?}", scores.ops);
    assert!(scores.ops.contains_key("Concat") && scores.ops.contains_key("Slice"));
    // The backbone is one loadable, and holds all the compute.
    assert_eq!(r.dla_loadables, 1);
    assert!(
        r.nodes
            .iter()
            .filter(|n| n.op_type == "Conv")
            .all(|n| n.placement == Placement::Dla)
    );
    assert!(r.dla_share > 0.99, "{}", r.dla_share);
    // Shape arithmetic folds once the input shape is fixed.
    assert!(
        r.nodes
            .iter()
            .any(|n| n.op_type == "Shape" && n.placement == Placement::Folded)
    );
    let text = r.to_text(false);
    assert!(text.contains("5 GPU fallback subgraph(s)"), "{text}");
}

#[test]
fn centerface_deconvolutions_are_checked_against_the_deconvolution_limits() {
    let r = report("centerface.onnx", Some(("input.1", &[1, 3, 480, 640])));
    assert_traceable(&r);
    let deconvs: Vec<_> = r
        .nodes
        .iter()
        .filter(|n| n.op_type == "ConvTranspose")
        .collect();
    assert_eq!(deconvs.len(), 3);
    for d in &deconvs {
        let rules: Vec<_> = d.checks.iter().map(|c| c.rule).collect();
        for rule in [
            "deconv.rank",
            "deconv.kernel",
            "deconv.stride",
            "deconv.padding",
            "deconv.groups",
            "deconv.dilation",
            "deconv.channels",
        ] {
            assert!(rules.contains(&rule), "{} lacks {rule}", d.name);
        }
        assert_eq!(d.placement, Placement::Dla, "{:?}", failed_rules(d));
        assert!(
            d.checks
                .iter()
                .any(|c| c.detail == "kernel 2x2 (allowed 1..32, 1x64/96/128)")
        );
    }
    let text = r.to_text(false);
    assert!(text.contains("Deconvolution x3:"), "{text}");
    assert!(
        text.contains("deconv.padding: 3 ok, 0 failed (padding 0x0x0x0)"),
        "{text}"
    );
    assert_eq!((r.dla_loadables, r.gpu_subgraphs), (1, 0));

    // The same model with padded deconvolutions: the first one breaks the padding limit.
    let mut m = Model::decode(&std::fs::read(model("centerface.onnx")).unwrap()).unwrap();
    let first: &mut Node = m
        .graph
        .nodes
        .iter_mut()
        .find(|n| n.op_type == "ConvTranspose")
        .unwrap();
    first
        .attributes
        .insert("pads".into(), AttrValue::Ints(vec![1, 1, 1, 1]));
    let name = first.label().to_string();
    let options = CheckOptions {
        input_shapes: BTreeMap::from([("input.1".into(), vec![1, 3, 480, 640])]),
        ..CheckOptions::default()
    };
    let padded = check_model(&m, "padded", &options).unwrap();
    let d = padded.nodes.iter().find(|n| n.name == name).unwrap();
    assert_eq!(d.placement, Placement::Gpu);
    assert_eq!(failed_rules(d), ["deconv.padding"]);
    assert!(
        padded
            .suggestions
            .iter()
            .any(|s| s.rules.contains(&"deconv.padding") && s.text.contains("padding 0"))
    );
}

#[test]
fn dynamic_inputs_and_fp32_are_reported() {
    let r = report("centerface.onnx", None);
    let fixed = r
        .model_checks
        .iter()
        .find(|c| c.rule == "general.fixed-shapes")
        .unwrap();
    assert!(
        !fixed.passed && fixed.detail.contains("input.1"),
        "{fixed:?}"
    );
    assert_eq!(r.nodes_dla, 0, "nothing runs on the DLA at dynamic shapes");
    let options = CheckOptions {
        precision: Precision::Fp32,
        ..CheckOptions::default()
    };
    let r = check_file(&model("mobilenet_v2_imagenet.onnx"), &options).unwrap();
    assert!(
        r.model_checks
            .iter()
            .any(|c| c.rule == "general.precision" && !c.passed)
    );
    let bad = CheckOptions {
        input_shapes: BTreeMap::from([("nope".into(), vec![1])]),
        ..CheckOptions::default()
    };
    let e = check_file(&model("mobilenet_v2_imagenet.onnx"), &bad).unwrap_err();
    assert!(
        e.to_string().contains("no input \"nope\"") && e.to_string().contains("input"),
        "{e}"
    );
}

/// A chain of 17 DLA layers separated by 16 GPU layers needs 17 loadables: over the limit.
#[test]
fn more_than_16_loadables_per_core_is_reported() {
    let mut m =
        Model::decode(&std::fs::read(model("mobilenet_v2_imagenet.onnx")).unwrap()).unwrap();
    let input = m.graph.inputs[0].name.clone();
    let mut nodes = Vec::new();
    let mut last = input;
    for i in 0..33 {
        let op = if i % 2 == 0 { "Relu" } else { "Exp" };
        let out = format!("t{i}");
        nodes.push(Node {
            name: out.clone(),
            op_type: op.into(),
            domain: String::new(),
            inputs: vec![last],
            outputs: vec![out.clone()],
            attributes: Default::default(),
        });
        last = out;
    }
    m.graph.nodes = nodes;
    let r = check_model(&m, "chain", &CheckOptions::default()).unwrap();
    assert_eq!((r.dla_loadables, r.gpu_subgraphs), (17, 16));
    let limit = r
        .model_checks
        .iter()
        .find(|c| c.rule == "general.loadables")
        .unwrap();
    assert!(!limit.passed, "{limit:?}");
}

#[test]
fn the_json_report_carries_the_findings_and_their_rules() {
    let r = report("mobilenet_v2_imagenet.onnx", None);
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert!(v["dla_share"].as_f64().unwrap() > 0.9);
    assert_eq!(v["nodes"].as_array().unwrap().len(), 100);
    assert_eq!(v["nodes"][0]["placement"], "dla");
    let rules = v["rules"].as_array().unwrap();
    let fc = rules.iter().find(|r| r["id"] == "fc.input").unwrap();
    assert!(
        fc["source"]
            .as_str()
            .unwrap()
            .contains("Layer Support and Restrictions")
    );
    assert!(
        v["rules_source"]
            .as_str()
            .unwrap()
            .starts_with("https://docs.nvidia.com/")
    );
}
