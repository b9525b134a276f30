// SPDX-License-Identifier: MIT OR Apache-2.0
//! The CPU backends side by side: ONNX Runtime (FP32), OpenVINO FP32 and OpenVINO at the CPU's
//! reduced precision (`network-mode=2`: BF16 where the CPU has it), each through `Inference`
//! (the engine rstrtinfer runs) on the same pre-processed batch of real images.
//!
//! ```text
//! cargo bench -p ferrostream-inference --bench backends [-- SECONDS]
//! ```
//!
//! Prints frames/s per model and backend and the ratio to ONNX Runtime: one synchronous batch
//! at a time, and for OpenVINO also with 4 batches in flight (its throughput mode, as rstrtinfer
//! runs it in primary mode); the engine calls only, pre-processing is done once before timing.
//!
//! With `FERROSTREAM_BENCH_INT8` naming a Q/DQ-quantised MobileNetV2 (made by
//! `scripts/models/quantize_int8.py`), a last row runs it on ONNX Runtime and on OpenVINO with
//! `network-mode=int8`, against ONNX Runtime's FP32 rate of the original model.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use ferrostream_inference::config::{Backend, InferConfig, NetworkMode, NetworkType, ProcessMode};
use ferrostream_inference::inference::{Inference, RemoteBatch};
use support::{preprocess_file, repo_root};

const BATCH: usize = 4;
const IMAGES: [&str; 4] = [
    "messi5.jpg",
    "basketball1.png",
    "astronaut.png",
    "squirrel_cls.jpg",
];

/// Frames/s of `config` on `backend` at `mode`, batches of [`BATCH`] for `seconds` with up to
/// `in_flight` batches submitted at once (1: synchronous runs), and what ran.
fn measure(
    config: &InferConfig,
    backend: Backend,
    mode: NetworkMode,
    in_flight: usize,
    seconds: f64,
) -> (f64, String) {
    let mut config = config.clone();
    config.backend = backend;
    config.tensorrt.network_mode = mode;
    config.batch_size = BATCH as u32;
    let mut inference = Inference::new(config, 0).unwrap_or_else(|e| panic!("{backend:?}: {e}"));
    let ran = inference.description().providers.join(",");
    for (slot, name) in IMAGES.iter().enumerate() {
        preprocess_file(&mut inference, slot, name);
    }
    for _ in 0..3 {
        inference.infer(BATCH).unwrap();
    }
    let pipelined = inference.keep_in_flight(in_flight).unwrap();
    assert_eq!(
        pipelined,
        in_flight > 1,
        "{backend:?} with {in_flight} in flight"
    );
    let sizes = vec![(640, 480); BATCH];
    let start = Instant::now();
    let mut batches = 0u64;
    let mut calls = std::collections::VecDeque::new();
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        if !pipelined {
            inference.infer(BATCH).unwrap();
            batches += 1;
            continue;
        }
        if calls.len() == in_flight {
            let oldest: RemoteBatch = calls.pop_front().unwrap();
            oldest.call.wait().unwrap();
            batches += 1;
        }
        calls.push_back(inference.submit_remote(sizes.clone()).unwrap());
    }
    for call in calls {
        call.call.wait().unwrap();
        batches += 1;
    }
    (
        (batches * BATCH as u64) as f64 / start.elapsed().as_secs_f64(),
        ran,
    )
}

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10.0);
    let load = |name: &str| {
        InferConfig::from_file(&repo_root().join("pipelines").join(name))
            .unwrap()
            .config
    };
    let mut classifier = load("imagenet_secondary.txt");
    // Whole images, as a primary classifier.
    classifier.process_mode = ProcessMode::Primary;
    let models = [
        ("COCO SSDLite (coco_ssd.txt)", load("coco_ssd.txt")),
        ("MobileNetV2 (imagenet_secondary.txt)", classifier),
        ("CenterFace (centerface.txt)", load("centerface.txt")),
    ];
    println!("batch {BATCH}, {seconds} s per run; frames/s (ratio to ONNX Runtime)");
    let mut classifier_fp32 = None;
    for (name, config) in &models {
        let (ort, _) = measure(config, Backend::OnnxRuntime, NetworkMode::Fp32, 1, seconds);
        if config.network_type == NetworkType::Classifier {
            classifier_fp32 = Some((config.clone(), ort));
        }
        print!("{name}: ONNX Runtime {ort:.1}");
        for (mode, in_flight) in [
            (NetworkMode::Fp32, 1),
            (NetworkMode::Fp16, 1),
            (NetworkMode::Fp32, 4),
            (NetworkMode::Fp16, 4),
        ] {
            let (fps, ran) = measure(config, Backend::OpenVino, mode, in_flight, seconds);
            print!(
                " | OpenVINO {ran} x{in_flight}: {fps:.1} ({:.2}x)",
                fps / ort
            );
        }
        println!();
    }
    let (Some(int8), Some((mut config, ort))) =
        (std::env::var_os("FERROSTREAM_BENCH_INT8"), classifier_fp32)
    else {
        return;
    };
    config.onnx_file = Some(int8.into());
    let (quantised, _) = measure(&config, Backend::OnnxRuntime, NetworkMode::Fp32, 1, seconds);
    print!(
        "MobileNetV2 Q/DQ INT8: ONNX Runtime {quantised:.1} ({:.2}x)",
        quantised / ort
    );
    for in_flight in [1, 4] {
        let (fps, ran) = measure(
            &config,
            Backend::OpenVino,
            NetworkMode::Int8,
            in_flight,
            seconds,
        );
        print!(
            " | OpenVINO {ran} x{in_flight}: {fps:.1} ({:.2}x)",
            fps / ort
        );
    }
    println!();
}
