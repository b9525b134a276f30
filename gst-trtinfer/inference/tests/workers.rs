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

/// An engine made slower by `delay`, failing at run `fail_at` (from 1).
struct Injected {
    inner: Box<dyn Engine>,
    delay: Duration,
    fail_at: Option<u64>,
    runs: u64,
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
        self.inner.run(input, shape, outputs)
    }
}

fn config() -> InferConfig {
    let mut config = InferConfig::from_file(&repo_root().join("pipelines/coco_ssd.txt"))
        .unwrap()
        .config;
    config.backend = ferrostream_inference::config::Backend::OnnxRuntime;
    config
}

fn objects(inference: &mut Inference, slot: usize, size: (u32, u32)) -> Vec<Object> {
    inference
        .result(slot, size.0, size.1)
        .unwrap()
        .into_frame_objects(size.0, size.1)
}

fn key(objects: &[Object]) -> Vec<(i32, [i32; 4])> {
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
    // One engine, one image at a time: the reference.
    let mut single = Inference::new(config(), 1).unwrap();
    let reference: Vec<_> = IMAGES
        .iter()
        .map(|name| {
            let size = preprocess_file(&mut single, 0, name);
            single.infer(1).unwrap();
            key(&objects(&mut single, 0, size))
        })
        .collect();
    assert!(
        reference.iter().any(|r| !r.is_empty()),
        "objects were found"
    );

    // Three workers: fast, slow, and one that breaks at its first run (every worker is tried).
    let worker = |name: &str, delay_ms: u64, fail_at: Option<u64>| Worker {
        name: name.into(),
        engine: Box::new(Injected {
            inner: Inference::new(config(), 1).unwrap().into_engine(),
            delay: Duration::from_millis(delay_ms),
            fail_at,
            runs: 0,
        }),
    };
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log: ferrostream_inference::engine::EngineLog = {
        let warnings = warnings.clone();
        std::sync::Arc::new(move |_, text: &str| warnings.lock().unwrap().push(text.to_string()))
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

    // 24 frames, 4 in flight, answers awaited in order (as rstrtinfer's flight queue does).
    let frames = 24;
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
        if in_flight.len() == 4 {
            finish(&mut pooled, in_flight.pop_front().unwrap());
        }
        let size = preprocess_file(&mut pooled, 0, IMAGES[i % IMAGES.len()]);
        in_flight.push_back((i, pooled.submit_remote(vec![size]).unwrap()));
    }
    for oldest in in_flight {
        finish(&mut pooled, oldest);
    }
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
