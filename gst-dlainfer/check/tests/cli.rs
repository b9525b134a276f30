// SPDX-License-Identifier: MIT OR Apache-2.0
//! `ferrostream-dla-check` as users run it: text and JSON reports, the coverage gate, and
//! clear errors for bad input.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ferrostream-dla-check");

/// A shared test model: FERROSTREAM_MODEL_DIR, `../shared/models` beside the repository, or
/// the model cache that scripts/fetch-models.sh fills.
fn model(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os(ferrostream_core::paths::MODEL_DIR_ENV)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    dirs.push(repo.join("..").join("shared").join("models"));
    dirs.push(ferrostream_core::paths::cache_dir().join("models"));
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{name} not found in {dirs:?}; run scripts/fetch-models.sh"))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("the checker runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn text_report_of_mobilenet() {
    let m = model("mobilenet_v2_imagenet.onnx");
    let (code, out, _) = run(&[m.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("1 DLA loadable(s) (limit 16), 1 GPU fallback subgraph(s)"),
        "{out}"
    );
    assert!(out.contains("FAIL fc.input"), "{out}");
    assert!(
        out.contains("Suggestions:\n  1. Flatten + Gemm/MatMul classifier"),
        "{out}"
    );
    assert!(
        out.contains("fc.input (FullyConnected)"),
        "the rule is cited: {out}"
    );
}

#[test]
fn json_report_and_coverage_gate() {
    let m = model("coco_ssdlite_mobilenet_v2.onnx");
    let m = m.to_str().unwrap();
    let (code, out, err) = run(&["--json", "--shape", "image_tensor:0=1x300x300x3", m]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["gpu_subgraphs"], 5);
    assert_eq!(
        v["inputs"]["image_tensor:0"],
        serde_json::json!([1, 300, 300, 3])
    );
    // CenterFace has dynamic H and W: without the shape nothing can run on the DLA, which the
    // coverage gate turns into exit status 2.
    let cf = model("centerface.onnx");
    let cf = cf.to_str().unwrap();
    let (code, _, _) = run(&["--min-coverage", "90", cf]);
    assert_eq!(code, 2);
    let (code, _, _) = run(&["--min-coverage", "90", "--shape", "input.1=1x3x480x640", cf]);
    assert_eq!(code, 0);
}

#[test]
fn bad_input_is_a_clear_error() {
    let (code, _, err) = run(&["/nonexistent/model.onnx"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read /nonexistent/model.onnx"), "{err}");
    let text = std::env::temp_dir().join(format!("not-a-model-{}.onnx", std::process::id()));
    std::fs::write(&text, "this is not protobuf").unwrap();
    let (code, _, err) = run(&[text.to_str().unwrap()]);
    std::fs::remove_file(&text).unwrap();
    assert_eq!(code, 1);
    assert!(err.contains("not a readable ONNX model"), "{err}");
    let (code, _, err) = run(&["--precision", "fp8", "m.onnx"]);
    assert_eq!(code, 64);
    assert!(err.contains("--precision fp8"), "{err}");
    let m = model("mobilenet_v2_imagenet.onnx");
    let (code, _, err) = run(&["--shape", "input=1x3x224", m.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("rank 4"), "{err}");
}
