// SPDX-License-Identifier: MIT OR Apache-2.0
//! One model on several real engines at once (`engine::workers::WorkerPool`, what rsdlainfer's
//! `dla-core=-1` runs on a Jetson's DLA cores and GPU): ONNX Runtime sessions on the CPU with
//! latencies injected so that the workers finish out of order, one of them failing midway. The
//! batches go through `Inference` as rstrtinfer sends them (several in flight, answers awaited
//! in order) and every frame's objects must equal one engine's, in order.

mod support;

use std::collections::VecDeque;
use std::time::Duration;

use ferrostream_core::Object;
use ferrostream_inference::config::InferConfig;
use ferrostream_inference::engine::workers::{Worker, WorkerPool};
use ferrostream_inference::engine::{
    Engine, EngineDescription, EngineError, InputData, OutputTensor,
};
use ferrostream_inference::inference::{Inference, RemoteBatch};
use support::{Watchdog, preprocess_file, repo_root};

const IMAGES: [&str; 4] = [
    "messi5.jpg",
    "basketball1.png",
    "astronaut.png",
    "squirrel_cls.jpg",
];

/// An engine made slower by `delay`, failing at run `fail_at` (from 1); `done` counts the
/// batches it answered.
struct Injected {
    inner: Box<dyn Engine>,
    delay: Duration,
    fail_at: Option<u64>,
    runs: u64,
    done: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Engine for Injected {
    fn description(&self) -> &EngineDescription {
        self.inner.description()
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        self.runs += 1;
        std::thread::sleep(self.delay);
        if self.fail_at == Some(self.runs) {
            return Err(EngineError::Run("injected failure".into()));
        }
        self.inner.run(input, shape, outputs)?;
        self.done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// The COCO SSD on ONNX Runtime, on `device`.
fn config_on(device: ferrostream_inference::config::Device) -> InferConfig {
    let mut config = InferConfig::from_file(&repo_root().join("pipelines/coco_ssd.txt"))
        .unwrap()
        .config;
    config.backend = ferrostream_inference::config::Backend::OnnxRuntime;
    config.device = device;
    config
}

fn config() -> InferConfig {
    config_on(ferrostream_inference::config::Device::Cpu)
}

/// The engine of `config`, made slower by `delay_ms` and failing at run `fail_at`.
fn injected(
    config: InferConfig,
    delay_ms: u64,
    fail_at: Option<u64>,
) -> (
    Box<dyn Engine>,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    let done = std::sync::Arc::default();
    let engine = Box::new(Injected {
        inner: Inference::new(config, 1).unwrap().into_engine(),
        delay: Duration::from_millis(delay_ms),
        fail_at,
        runs: 0,
        done: std::sync::Arc::clone(&done),
    });
    (engine, done)
}

/// Runs `frames` frames of `images` through `pooled`, `in_flight` at once, answers awaited in
/// order (as rstrtinfer's flight queue does); returns each frame's index and objects.
fn run_in_flight(
    pooled: &mut Inference,
    images: &[&str],
    frames: usize,
    in_flight_max: usize,
) -> Vec<(usize, Found)> {
    let mut in_flight: VecDeque<(usize, RemoteBatch)> = VecDeque::new();
    let mut got = Vec::new();
    let mut finish = |pooled: &mut Inference, (index, batch): (usize, RemoteBatch)| {
        let outputs = batch.call.wait().unwrap();
        let results = pooled
            .finish_remote(&batch.letterboxes, &batch.sizes, outputs)
            .unwrap();
        let size = batch.sizes[0];
        let result = results.into_iter().next().unwrap();
        got.push((index, key(&result.into_frame_objects(size.0, size.1))));
    };
    for i in 0..frames {
        if in_flight.len() == in_flight_max {
            finish(pooled, in_flight.pop_front().unwrap());
        }
        let size = preprocess_file(pooled, 0, images[i % images.len()]);
        in_flight.push_back((i, pooled.submit_remote(vec![size]).unwrap()));
    }
    for oldest in in_flight {
        finish(pooled, oldest);
    }
    got
}

/// One engine of `config`, one image at a time: each image's objects.
fn reference(config: InferConfig, images: &[&str]) -> (Inference, Vec<Found>) {
    let mut single = Inference::new(config, 1).unwrap();
    let objects = images
        .iter()
        .map(|name| {
            let size = preprocess_file(&mut single, 0, name);
            single.infer(1).unwrap();
            key(&objects(&mut single, 0, size))
        })
        .collect();
    (single, objects)
}

fn objects(inference: &mut Inference, slot: usize, size: (u32, u32)) -> Vec<Object> {
    inference
        .result(slot, size.0, size.1)
        .unwrap()
        .into_frame_objects(size.0, size.1)
}

/// A frame's objects as compared: class and box in 1/100 px.
type Found = Vec<(i32, [i32; 4])>;

fn key(objects: &[Object]) -> Found {
    objects
        .iter()
        .map(|o| {
            let b = o.detector_bbox;
            let r = |v: f32| (v * 100.0).round() as i32;
            (o.class_id, [r(b.left), r(b.top), r(b.width), r(b.height)])
        })
        .collect()
}

#[test]
fn detections_from_a_pool_of_engines_equal_one_engines_and_come_in_order() {
    let _watchdog = Watchdog::new(
        "detections_from_a_pool_of_engines_equal_one_engines_and_come_in_order",
        Duration::from_secs(300),
    );
    let (single, reference) = reference(config(), &IMAGES);
    assert!(
        reference.iter().any(|r| !r.is_empty()),
        "objects were found"
    );

    // Three workers: fast, slow, and one that breaks at its first run (every worker is tried).
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log: ferrostream_inference::engine::EngineLog = {
        let warnings = warnings.clone();
        std::sync::Arc::new(move |_, text: &str| warnings.lock().unwrap().push(text.to_string()))
    };
    let worker = |name: &str, delay_ms: u64, fail_at: Option<u64>| Worker {
        name: name.into(),
        engine: injected(config(), delay_ms, fail_at).0,
    };
    let pool = WorkerPool::new(vec![
        worker("fast", 2, None),
        worker("slow", 40, None),
        worker("broken", 5, Some(1)),
    ])
    .unwrap()
    .with_log(log);
    let model = single.model_path().to_owned();
    let mut pooled = Inference::with_engine(config(), model, Box::new(pool)).unwrap();
    assert!(
        pooled.is_remote(),
        "the pool answers later, as a server does"
    );
    let frames = 24;
    let got = run_in_flight(&mut pooled, &IMAGES, frames, 4);
    assert_eq!(got.len(), frames);
    let warnings = warnings.lock().unwrap();
    assert!(
        warnings.len() == 1 && warnings[0].contains("broken"),
        "one warning, naming the broken worker: {warnings:?}"
    );
    for (i, (index, objects)) in got.iter().enumerate() {
        assert_eq!(*index, i, "in order");
        assert_eq!(objects, &reference[i % IMAGES.len()], "frame {i}");
    }
}

/// A CUDA session and a CPU session as the two workers of one model (the GPU lane).
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU and ONNX Runtime's GPU build; run by scripts/gpu-check.sh"]
fn a_gpu_engine_and_a_cpu_engine_run_one_model_together() {
    use ferrostream_inference::config::Device;
    use std::sync::atomic::Ordering;
    let _watchdog = Watchdog::new(
        "a_gpu_engine_and_a_cpu_engine_run_one_model_together",
        Duration::from_secs(300),
    );
    if ferrostream_core::cuda::device_count().unwrap_or(0) == 0 {
        assert!(
            std::env::var("FERROSTREAM_REQUIRE_GPU")
                .ok()
                .is_none_or(|v| v != "1"),
            "a GPU is required (FERROSTREAM_REQUIRE_GPU=1)"
        );
        eprintln!("skipped: no CUDA device");
        return;
    }
    let images = ["messi5.jpg", "basketball1.png"];
    let (single, on_cpu) = reference(config(), &images);
    let (_, on_gpu) = reference(config_on(Device::Cuda), &images);
    let (gpu, gpu_done) = injected(config_on(Device::Cuda), 0, None);
    let (cpu, cpu_done) = injected(config(), 10, None);
    assert!(
        gpu.description()
            .providers
            .iter()
            .any(|p| p.contains("CUDA")),
        "{:?}",
        gpu.description().providers
    );
    let pool = WorkerPool::new(vec![
        Worker {
            name: "GPU".into(),
            engine: gpu,
        },
        Worker {
            name: "CPU".into(),
            engine: cpu,
        },
    ])
    .unwrap();
    let model = single.model_path().to_owned();
    let mut pooled = Inference::with_engine(config(), model, Box::new(pool)).unwrap();
    let frames = 40;
    let got = run_in_flight(&mut pooled, &images, frames, 4);
    assert_eq!(got.len(), frames);
    for (i, (index, objects)) in got.iter().enumerate() {
        assert_eq!(*index, i, "in order");
        let k = i % images.len();
        assert!(
            *objects == on_gpu[k] || *objects == on_cpu[k],
            "frame {i}: neither engine's objects: {objects:?}"
        );
    }
    let (g, c) = (
        gpu_done.load(Ordering::SeqCst),
        cpu_done.load(Ordering::SeqCst),
    );
    println!("GPU worker ran {g} batches, CPU worker {c}");
    assert!(
        g > 0 && c > 0,
        "both workers ran batches (GPU {g}, CPU {c})"
    );
    assert!(g > c, "the faster GPU took more (GPU {g}, CPU {c})");
}
