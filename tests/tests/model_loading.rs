// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer and models that a runtime should not be handed as they are (issue 47, "Model
//! loading"), on ONNX Runtime and OpenVINO: a stop ends a run that loops for ever, and a
//! constant trip count beyond the bound is refused; OpenVINO compiles once and reports it, and
//! `backend=auto` keeps models too deep for OpenVINO on ONNX Runtime; a million nodes are refused
//! before a runtime spends gigabytes on them; external data is read beside the model and never
//! outside its directory; operator sets and IR versions beyond the known ones are refused on
//! every backend. The models are made here, with the crate's ONNX types.
//!
//! Every test runs under a watchdog: a pipeline that does not stop fails the test instead of
//! stalling the suite.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferrostream_core::Object;
use ferrostream_tests::{
    RunOutput, assert_passes_in_child, is_child, launch, output_within, quoted, run_pipeline,
    within,
};
use gst::prelude::*;
use gst_trtinfer::onnx::check::{MAX_LOOP_TRIPS, MAX_NODES};
use gst_trtinfer::onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, StringStringEntryProto, TensorProto,
    TensorType, TypeProto, ValueInfoProto, data_type, encode_model,
};
use prost::Message;

/// Ten frames of red, the size of the models' input.
const SOURCE: &str =
    "videotestsrc pattern=red num-buffers=10 ! video/x-raw,format=RGB,width=8,height=8";

/// What the models are read as: a classifier of [`CLASSES`] scores, without softmax.
const CLASSIFIER: &str =
    "network-type=classifier classifier-softmax=never net-scale-factor=0.00392156863";

const CLASSES: i64 = 2;

/// Runs `infer` (rstrtinfer's properties) on [`SOURCE`] to its end, under a watchdog.
fn run(infer: String, limit: Duration) -> Result<RunOutput, String> {
    within(&format!("rstrtinfer {infer}"), limit, move || {
        run_pipeline(
            &format!("{SOURCE} ! rstrtinfer {infer} ! appsink name=sink"),
            limit,
        )
    })
}

/// A folder of this test process's own, `name` in it.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("ferrostream-model-loading-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_model(dir: &Path, name: &str, model: &ModelProto) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, encode_model(model)).unwrap();
    path
}

// ---- Models made with the crate's ONNX types ----

/// Protobuf's variable-length integer.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `TensorShapeProto` of fixed `dims`, encoded (the crate keeps shapes as their bytes): each
/// `dim` (field 1) holds its `dim_value` (field 1).
fn shape(dims: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &d in dims {
        let mut dim = vec![0x08];
        varint(d as u64, &mut dim);
        out.push(0x0a);
        varint(dim.len() as u64, &mut out);
        out.extend(dim);
    }
    out
}

fn value(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorType {
                elem_type: Some(elem_type),
                shape: Some(shape(dims)),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn int_attribute(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(2),
        i: Some(i),
        ..Default::default()
    }
}

fn floats(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(data_type::FLOAT),
        raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ..Default::default()
    }
}

fn model(graph: GraphProto, opset: i64, ir_version: i64) -> ModelProto {
    ModelProto {
        producer_name: Some("ferrostream model_loading test".into()),
        ..ModelProto::of_graph(graph, ir_version, opset)
    }
}

/// A graph from the 1x3x8x8 `image` to `scores` (1 x [`CLASSES`]), `nodes` in between.
fn classifier(nodes: Vec<NodeProto>, initializer: Vec<TensorProto>) -> GraphProto {
    GraphProto {
        name: Some("classifier".into()),
        node: nodes,
        initializer,
        input: vec![value("image", data_type::FLOAT, &[1, 3, 8, 8])],
        output: vec![value("scores", data_type::FLOAT, &[1, CLASSES])],
        ..Default::default()
    }
}

/// The image's channel means times `weights` (3 x [`CLASSES`]), kept in the model or (with
/// `external`) in that file beside it.
fn weighted_means(weights: &[f32], external: Option<&str>) -> GraphProto {
    let mut flatten = NodeProto::new("Flatten", &["pooled"], &["means"]);
    flatten.attribute.push(int_attribute("axis", 1));
    let mut w = floats("w", &[3, CLASSES], weights);
    if let Some(location) = external {
        w.raw_data = None;
        w.data_location = Some(1);
        w.external_data = vec![
            StringStringEntryProto {
                key: Some("location".into()),
                value: Some(location.into()),
            },
            StringStringEntryProto {
                key: Some("offset".into()),
                value: Some("0".into()),
            },
            StringStringEntryProto {
                key: Some("length".into()),
                value: Some((weights.len() * 4).to_string()),
            },
        ];
    }
    classifier(
        vec![
            NodeProto::new("GlobalAveragePool", &["image"], &["pooled"]),
            flatten,
            NodeProto::new("MatMul", &["means", "w"], &["scores"]),
        ],
        vec![w],
    )
}

/// Weights that score red 0.25 for class 0 and 0.75 for class 1.
const RED_WEIGHTS: [f32; 6] = [0.25, 0.75, 0.0, 0.0, 0.0, 0.0];

/// A `Loop` of `trip_count` trips (named `endless`) adding 1 to the scores on each trip.
fn adding_loop(trip_count: &str) -> NodeProto {
    let body = GraphProto {
        name: Some("add_one".into()),
        node: vec![
            NodeProto::new("Identity", &["cond_in"], &["cond_out"]),
            NodeProto::new("Add", &["acc_in", "one"], &["acc_out"]),
        ],
        initializer: vec![floats("one", &[1, CLASSES], &[1.0; CLASSES as usize])],
        input: vec![
            value("trip", data_type::INT64, &[]),
            value("cond_in", data_type::BOOL, &[]),
            value("acc_in", data_type::FLOAT, &[1, CLASSES]),
        ],
        output: vec![
            value("cond_out", data_type::BOOL, &[]),
            value("acc_out", data_type::FLOAT, &[1, CLASSES]),
        ],
        ..Default::default()
    };
    let mut lp = NodeProto::new("Loop", &[trip_count, "cond", "start"], &["scores"]);
    lp.name = Some("endless".into());
    lp.attribute.push(AttributeProto {
        name: Some("body".into()),
        r#type: Some(5),
        g: Some(body),
        ..Default::default()
    });
    lp
}

/// The loop's start and condition.
fn loop_initializers() -> Vec<TensorProto> {
    vec![
        floats("start", &[1, CLASSES], &[0.0; CLASSES as usize]),
        TensorProto {
            name: Some("cond".into()),
            data_type: Some(data_type::BOOL),
            raw_data: Some(vec![1]),
            ..Default::default()
        },
    ]
}

/// A classifier that loops `trips` times, the count computed from the image at run time (no
/// static check can see it): `Cast(ReduceMean(image) * 0 + trips)`.
fn computed_loop(trips: f32) -> ModelProto {
    let mut mean = NodeProto::new("ReduceMean", &["image"], &["mean"]);
    mean.attribute.push(int_attribute("keepdims", 0));
    let mut cast = NodeProto::new("Cast", &["big"], &["trips"]);
    cast.attribute
        .push(int_attribute("to", data_type::INT64 as i64));
    let mut initializer = loop_initializers();
    initializer.push(floats("zero", &[], &[0.0]));
    initializer.push(floats("huge", &[], &[trips]));
    model(
        classifier(
            vec![
                mean,
                NodeProto::new("Mul", &["mean", "zero"], &["nothing"]),
                NodeProto::new("Add", &["nothing", "huge"], &["big"]),
                cast,
                adding_loop("trips"),
            ],
            initializer,
        ),
        17,
        8,
    )
}

/// A chain of `n` Relu nodes from the image, pooled to 3 scores: the shape of the "deep" models
/// of the defects (10^4 nodes in 238 KB; 10^6 in 28 MB). Encoded node by node, so a million
/// nodes never exist as structures at once.
fn relu_chain(n: usize) -> Vec<u8> {
    let mut flatten = NodeProto::new("Flatten", &["pooled"], &["scores"]);
    flatten.attribute.push(int_attribute("axis", 1));
    let name = |i: usize| {
        if i == 0 {
            "image".to_string()
        } else {
            format!("r{i}")
        }
    };
    let mut graph = GraphProto {
        name: Some("chain".into()),
        node: vec![],
        input: vec![value("image", data_type::FLOAT, &[1, 3, 8, 8])],
        output: vec![value("scores", data_type::FLOAT, &[1, 3])],
        ..Default::default()
    }
    .encode_to_vec();
    // Repeated fields may come in any order and in pieces: each node is field 1 of the graph.
    let mut push = |node: NodeProto| {
        graph.push(0x0a);
        node.encode_length_delimited(&mut graph).unwrap();
    };
    for i in 0..n {
        push(NodeProto::new("Relu", &[&name(i)], &[&name(i + 1)]));
    }
    push(NodeProto::new(
        "GlobalAveragePool",
        &[&name(n)],
        &["pooled"],
    ));
    push(flatten);
    let mut bytes = ModelProto {
        graph: None,
        ..model(GraphProto::default(), 17, 8)
    }
    .encode_to_vec();
    // The graph is field 7 of the model.
    bytes.push(0x3a);
    varint(graph.len() as u64, &mut bytes);
    bytes.extend(graph);
    bytes
}

fn objects_of(out: &RunOutput) -> Vec<&Object> {
    out.frames.iter().flat_map(|f| &f.objects).collect()
}

/// Asserts that every frame was classified as class 1 with a score of 0.75 (red through
/// [`RED_WEIGHTS`]).
fn assert_red_scores(case: &str, out: &RunOutput) {
    assert_eq!(out.frames.len(), 10, "{case}");
    for object in objects_of(out) {
        let [c] = &object.classifications[..] else {
            panic!("{case}: {object:?}")
        };
        assert_eq!(c.class_id, 1, "{case}: {object:?}");
        assert!((c.prob - 0.75).abs() < 1e-3, "{case}: {object:?}");
    }
    assert_eq!(objects_of(out).len(), 10, "{case}");
}

// ---- Defect 7: a loop that never ends ----

/// Plays a model looping `trips` times (computed at run time) on an endless source until its
/// first frame is in the engine, then asks for NULL: that must return within seconds although
/// the run would take for ever.
fn stop_ends_the_endless_run(backend: &str, trips: f32) {
    let dir = temp_dir(&format!("endless-{backend}-{trips}"));
    let model = write_model(&dir, "endless.onnx", &computed_loop(trips));
    let desc = format!(
        "videotestsrc pattern=red ! video/x-raw,format=RGB,width=8,height=8 \
         ! rstrtinfer onnx-file={} {CLASSIFIER} backend={backend} ! fakesink name=sink",
        quoted(&model)
    );
    let pipeline = launch(&desc);
    let sink = pipeline.by_name("sink").unwrap();
    sink.set_property("sync", false);
    // Every error, whenever posted: a bus going to NULL drops what it holds.
    let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = errors.clone();
    pipeline.bus().unwrap().set_sync_handler(move |_, msg| {
        if let gst::MessageView::Error(e) = msg.view() {
            seen.lock().unwrap().push(e.error().to_string());
        }
        gst::BusSyncReply::Pass
    });
    let no_error = |when: &str| {
        let errors = errors.lock().unwrap();
        assert!(errors.is_empty(), "{backend}: an error {when}: {errors:?}");
    };
    // The first frame reaches the engine once the pipeline is on its way to PAUSED.
    let _ = pipeline.set_state(gst::State::Playing);
    std::thread::sleep(Duration::from_secs(2));
    no_error("before the stop (the endless model did not run)");
    // A flushing seek ends the run too, and is no error.
    let seeking = pipeline.clone();
    let flushed = within(
        &format!("{backend}: a flushing seek during an endless run"),
        Duration::from_secs(20),
        move || {
            seeking
                .seek_simple(gst::SeekFlags::FLUSH, gst::ClockTime::ZERO)
                .is_ok()
        },
    );
    assert!(flushed, "{backend}: the flushing seek failed");
    std::thread::sleep(Duration::from_millis(500));
    no_error("after a flushing seek");
    let started = Instant::now();
    let stopped = within(
        &format!("{backend}: set_state(NULL) during an endless run"),
        Duration::from_secs(20),
        move || pipeline.set_state(gst::State::Null).is_ok(),
    );
    let took = started.elapsed();
    assert!(stopped, "{backend}: the state change failed");
    // Bounded by `within` (a loaded machine may take seconds for OpenVINO's capped run, so the
    // time itself is reported, not asserted).
    no_error("during the stop");
    eprintln!(
        "{backend}: a run of {} trips stopped in {took:?}",
        trips as u64
    );
}

/// 2^62: the defect's loop.
const ENDLESS: f32 = (1u64 << 62) as f32;

#[test]
fn a_stop_ends_an_endless_loop_on_onnx_runtime() {
    stop_ends_the_endless_run("onnxruntime", ENDLESS);
}

/// OpenVINO reads a count of 2^62 computed at run time as a negative one and loops for ever;
/// 2^30 it reads as it is (half an hour of trips). It cannot stop a running Loop: its loops are
/// capped, so a stop waits for a million trips at most.
#[test]
fn a_stop_ends_an_endless_loop_on_openvino() {
    stop_ends_the_endless_run("openvino", ENDLESS);
    stop_ends_the_endless_run("openvino", (1u64 << 30) as f32);
}

#[test]
fn a_constant_loop_trip_count_above_the_bound_is_refused() {
    let dir = temp_dir("constant-loop");
    let mut initializer = loop_initializers();
    initializer.push(TensorProto::int64("trips", 1 << 62));
    let endless = model(classifier(vec![adding_loop("trips")], initializer), 17, 8);
    let path = write_model(&dir, "constant_loop.onnx", &endless);
    for backend in ["onnxruntime", "openvino", "auto"] {
        let err = run(
            format!(
                "onnx-file={} {CLASSIFIER} backend={backend} network-mode=fp16",
                quoted(&path)
            ),
            Duration::from_secs(30),
        )
        .unwrap_err();
        assert!(
            err.contains("Loop node `endless`")
                && err.contains("4611686018427387904")
                && err.contains(&MAX_LOOP_TRIPS.to_string())
                && err.contains("constant_loop.onnx"),
            "{backend}: {err}"
        );
    }
    // Three trips: allowed, and run (each adds 1 to both scores).
    let mut initializer = loop_initializers();
    initializer.push(TensorProto::int64("trips", 3));
    let short = model(classifier(vec![adding_loop("trips")], initializer), 17, 8);
    let path = write_model(&dir, "short_loop.onnx", &short);
    for backend in ["onnxruntime", "openvino"] {
        let out = run(
            format!("onnx-file={} {CLASSIFIER} backend={backend}", quoted(&path)),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let objects = objects_of(&out);
        assert_eq!(objects.len(), 10, "{backend}");
        assert!(
            objects
                .iter()
                .all(|o| (o.classifications[0].prob - 3.0).abs() < 1e-4),
            "{backend}: {objects:?}"
        );
    }
}

// ---- Defect 8: OpenVINO's start-up on deep models ----

/// The seconds rstrtinfer's log says OpenVINO took to read and compile the model, and how many
/// such reports there were.
fn compile_reports(lines: &[String]) -> Vec<f64> {
    lines
        .iter()
        .filter_map(|l| {
            let (_, tail) = l.split_once("read and compiled")?;
            let seconds = tail.split(" in ").nth(1)?.trim_end_matches(" s");
            seconds.trim().parse().ok()
        })
        .collect()
}

#[test]
fn openvino_compiles_a_deep_model_once_and_says_how_long_it_took() {
    use std::sync::{Arc, Mutex};
    ferrostream_tests::init();
    let dir = temp_dir("compile-once");
    let path = dir.join("chain_1000.onnx");
    std::fs::write(&path, relu_chain(1_000)).unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    gst::log::set_active(true);
    gst::log::set_threshold_for_name("rstrtinfer", gst::DebugLevel::Info);
    // This test's element only: others may run at the same time.
    let log = gst::log::add_log_function(move |category, _, _, _, _, object, message| {
        if category.name() == "rstrtinfer"
            && object.is_some_and(|o| o.to_string() == "compile_once")
        {
            let text = message.get().map(|m| m.to_string()).unwrap_or_default();
            sink.lock().unwrap().push(text);
        }
    });
    let started = Instant::now();
    let out = run(
        format!(
            "name=compile_once onnx-file={} {CLASSIFIER} num-detected-classes=3 backend=openvino",
            quoted(&path)
        ),
        Duration::from_secs(180),
    );
    let took = started.elapsed().as_secs_f64();
    gst::log::remove_log_function(log);
    gst::log::unset_threshold_for_name("rstrtinfer");
    let out = out.unwrap();
    assert_eq!(out.frames.len(), 10);
    let lines = lines.lock().unwrap().clone();
    let compiles = compile_reports(&lines);
    let [compile] = compiles[..] else {
        panic!("one report of OpenVINO's compile, found {compiles:?} in {lines:#?}")
    };
    // Start-up, ten frames of 8x8 and the stop take the compile's time and little more: a
    // second compile (the caps asking for requests in flight) would double it.
    assert!(
        took < compile + (compile / 2.0).max(3.0),
        "the run took {took:.1} s, the compile {compile:.1} s: {lines:#?}"
    );
    eprintln!("OpenVINO compiled 1,000 nodes in {compile:.1} s; the run took {took:.1} s");
}

#[test]
fn auto_keeps_a_model_too_deep_for_openvino_on_onnx_runtime() {
    let dir = temp_dir("auto-deep");
    let path = dir.join("chain_2001.onnx");
    std::fs::write(&path, relu_chain(2_001)).unwrap();
    // network-mode=fp16 on a CPU with BF16 or FP16 would choose OpenVINO for a small model.
    let out = run(
        format!(
            "onnx-file={} {CLASSIFIER} num-detected-classes=3 backend=auto network-mode=fp16",
            quoted(&path)
        ),
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(out.engine_field("backend"), "onnxruntime");
    let why = out.engine_field("backend-choice");
    assert!(
        why.contains("2003 nodes") && why.contains("OpenVINO"),
        "{why}"
    );
}

// ---- Defect 9: a million nodes ----

/// The process's peak resident memory in KiB (`VmHWM`).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_million_nodes_are_refused_before_a_runtime_loads_them() {
    const MODEL_ENV: &str = "FERROSTREAM_TEST_MILLION_NODES";
    if is_child() {
        // A fresh process, its peak memory its own: the model was made by the parent.
        let path = PathBuf::from(std::env::var_os(MODEL_ENV).unwrap());
        for backend in ["onnxruntime", "openvino", "auto"] {
            let err = run(
                format!("onnx-file={} {CLASSIFIER} backend={backend}", quoted(&path)),
                Duration::from_secs(120),
            )
            .unwrap_err();
            assert!(
                err.contains("1000002 nodes") && err.contains(&MAX_NODES.to_string()),
                "{backend}: {err}"
            );
        }
        let peak = peak_rss_kib();
        eprintln!("peak resident memory {} MiB", peak / 1024);
        assert!(peak < 1 << 20, "peak resident memory {} MiB", peak / 1024);
        return;
    }
    let dir = temp_dir("million");
    let path = dir.join("chain_1000000.onnx");
    std::fs::write(&path, relu_chain(1_000_000)).unwrap();
    assert_passes_in_child(
        "a_million_nodes_are_refused_before_a_runtime_loads_them",
        &[(MODEL_ENV, path.to_str().unwrap())],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- Defect 10: external data ----

/// A model whose weights are in `weights.bin` beside it, in a folder of its own.
fn external_data_model(case: &str) -> PathBuf {
    let dir = temp_dir(case);
    let weights: Vec<u8> = RED_WEIGHTS.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("weights.bin"), weights).unwrap();
    write_model(
        &dir,
        "external.onnx",
        &model(weighted_means(&RED_WEIGHTS, Some("weights.bin")), 17, 8),
    )
}

#[test]
fn external_data_beside_the_model_is_read_from_any_working_directory() {
    const DIR_ENV: &str = "FERROSTREAM_TEST_EXTERNAL_MODEL";
    let path = match std::env::var_os(DIR_ENV) {
        Some(path) => PathBuf::from(path),
        None => external_data_model("external"),
    };
    // From the test's working directory (the crate's), and as a relative path from the
    // model's own.
    let name = if is_child() {
        PathBuf::from("external.onnx")
    } else {
        path.clone()
    };
    for backend in ["onnxruntime", "openvino"] {
        let out = run(
            format!("onnx-file={} {CLASSIFIER} backend={backend}", quoted(&name)),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{backend} from {:?}: {e}", std::env::current_dir()));
        assert_red_scores(backend, &out);
    }
    if is_child() {
        return;
    }
    // The same in a process whose working directory is the model's.
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe);
    child
        .args([
            "--exact",
            "external_data_beside_the_model_is_read_from_any_working_directory",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FERROSTREAM_TEST_CHILD", "1")
        .env(DIR_ENV, &path)
        .current_dir(path.parent().unwrap());
    let output = output_within(&mut child, Duration::from_secs(180));
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && text.contains("1 passed"),
        "from the model's directory:\n{text}"
    );
}

#[test]
fn external_data_outside_the_model_directory_is_refused_and_named() {
    let dir = temp_dir("escape");
    let inside = dir.join("model");
    std::fs::create_dir_all(&inside).unwrap();
    let weights: Vec<u8> = RED_WEIGHTS.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("outside.bin"), &weights).unwrap();
    std::os::unix::fs::symlink(dir.join("outside.bin"), inside.join("link.bin")).unwrap();
    let absolute = dir.join("outside.bin").display().to_string();
    for (location, wanted) in [
        ("../outside.bin", "not a path inside the model's directory"),
        (absolute.as_str(), "not a path inside the model's directory"),
        ("link.bin", "through a symbolic link"),
    ] {
        let path = write_model(
            &inside,
            "escape.onnx",
            &model(weighted_means(&RED_WEIGHTS, Some(location)), 17, 8),
        );
        for backend in ["openvino", "onnxruntime"] {
            let err = run(
                format!("onnx-file={} {CLASSIFIER} backend={backend}", quoted(&path)),
                Duration::from_secs(60),
            )
            .expect_err(&format!("{backend} read {location}"));
            assert!(
                err.contains(location) && err.contains(wanted),
                "{backend}, {location}: {err}"
            );
        }
    }
}

// ---- Defect 11: versions beyond the known ----

#[test]
fn unknown_operator_sets_and_ir_versions_are_refused_on_every_backend() {
    let dir = temp_dir("versions");
    // The same model at known versions runs everywhere (the control).
    let known = write_model(
        &dir,
        "opset17.onnx",
        &model(weighted_means(&RED_WEIGHTS, None), 17, 8),
    );
    for backend in ["onnxruntime", "openvino", "auto"] {
        let out = run(
            format!(
                "onnx-file={} {CLASSIFIER} backend={backend} network-mode=fp16",
                quoted(&known)
            ),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(objects_of(&out).len(), 10, "{backend}");
    }
    for (name, opset, ir, wanted) in [
        (
            "opset99.onnx",
            99,
            8,
            ["operator set 99", "operator sets 7 to 26"],
        ),
        (
            "ir99.onnx",
            17,
            99,
            ["IR version is 99", "IR versions 3 to 13"],
        ),
    ] {
        let path = write_model(
            &dir,
            name,
            &model(weighted_means(&RED_WEIGHTS, None), opset, ir),
        );
        // backend=auto with fp16 would choose OpenVINO, which ran these without a word.
        for backend in ["openvino", "auto", "onnxruntime"] {
            let err = run(
                format!(
                    "onnx-file={} {CLASSIFIER} backend={backend} network-mode=fp16",
                    quoted(&path)
                ),
                Duration::from_secs(60),
            )
            .expect_err(&format!("{backend} ran {name}"));
            assert!(
                wanted.iter().all(|w| err.contains(w)) && err.contains(name),
                "{backend}, {name}: {err}"
            );
        }
    }
}
