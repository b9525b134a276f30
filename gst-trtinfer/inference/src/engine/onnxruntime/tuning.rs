// SPDX-License-Identifier: MIT OR Apache-2.0
//! The CUDA provider's settings chosen by measurement: the model is timed at its batch size on
//! its GPU with each candidate setting, changed one at a time from ONNX Runtime's defaults
//! (channels-last convolutions, cuDNN's heuristic algorithm choice, and under `cuda-graph=auto`
//! a captured CUDA graph), keeping a change only when it is at least [`GAIN`] faster. The choice
//! is logged and recorded beside the engine cache under a key of the model's bytes, the
//! precision, the batch, the GPU and the runtime's version, so later starts open once.
//!
//! The measurements differ per model: channels-last made YOLOv8m in FP16 1.12x faster on an
//! H100 and RT-DETR-L in FP32 1.25x slower, so no fixed setting is right for both.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::precision::ModelAtPrecision;
use super::{CudaSettings, Note, OrtEngine, OrtOptions, runtime_version};
use crate::config::CudaGraphMode;
use crate::engine::{Engine, EngineError};
use ferrostream_core::settings::Choice;

/// The least speed-up a changed setting must show to be kept.
pub const GAIN: f64 = 1.03;

/// Version of the measurement; part of the record's key.
const TUNING_VERSION: &str = "cuda-tuning-1";

/// Opens `model` on the CUDA provider with the settings `options` ask for: measured (or
/// recorded) under `cuda-tuning`, else ONNX Runtime's defaults with the graph `cuda-graph`
/// asks for.
pub fn open_tuned(
    options: &OrtOptions,
    model: &ModelAtPrecision,
) -> Result<OrtEngine, EngineError> {
    let base = CudaSettings {
        graph: options.cuda_graph == CudaGraphMode::On,
        ..CudaSettings::default()
    };
    if !options.cuda_tuning {
        let graph = options.cuda_graph != CudaGraphMode::Off;
        return open_with_graph_fallback(options, model, CudaSettings { graph, ..base });
    }
    let mut engine = open_with_graph_fallback(options, model, base)?;
    // Under cuda-graph=on, a model that cannot be captured is timed (and kept) without.
    let base = CudaSettings {
        graph: engine.graph(),
        ..base
    };
    let shape = match static_shape(&engine, options.batch) {
        Ok(shape) => shape,
        Err(why) => {
            let note =
                format!("cuda-tuning: not measured ({why}); ONNX Runtime's default CUDA settings");
            // Under cuda-graph=auto, captured where the model allows it, unmeasured.
            let mut engine = if options.cuda_graph == CudaGraphMode::Auto {
                drop(engine);
                let graph = CudaSettings {
                    graph: true,
                    ..base
                };
                open_with_graph_fallback(options, model, graph)?
            } else {
                engine
            };
            engine.notes.push(Note::info(note));
            return Ok(engine);
        }
    };
    let record = record_path(options, model, &engine);
    if let Some(settings) = record
        .as_ref()
        .and_then(|p| ferrostream_core::files::read_text(p).ok())
        .and_then(|text| CudaSettings::from_record(&text))
    {
        if settings == base {
            engine.notes.push(Note::info(format!(
                "cuda-tuning: {settings} (measured before)"
            )));
            return Ok(engine);
        }
        drop(engine);
        let mut engine = open_with_graph_fallback(options, model, settings)?;
        engine.notes.push(Note::info(format!(
            "cuda-tuning: {settings} (measured before)"
        )));
        return Ok(engine);
    }
    measure(options, model, engine, base, &shape, record)
}

/// One setting changed from the best so far.
type Change = fn(&mut CudaSettings);

/// Times `base` and each candidate change on `shape`, keeps the fastest, records it.
fn measure(
    options: &OrtOptions,
    model: &ModelAtPrecision,
    mut engine: OrtEngine,
    base: CudaSettings,
    shape: &[usize],
    record: Option<PathBuf>,
) -> Result<OrtEngine, EngineError> {
    let mut best_time = match batch_time(&mut engine, shape) {
        Ok(time) => time,
        Err(e) => {
            // The defaults, as they would have been without tuning (a graph captured over the
            // timing input is captured afresh).
            let mut engine = if base.graph {
                drop(engine);
                open_with_graph_fallback(options, model, base)?
            } else {
                engine
            };
            engine.notes.push(Note::info(format!(
                "cuda-tuning: not measured ({e}); ONNX Runtime's default CUDA settings"
            )));
            return Ok(engine);
        }
    };
    let mut best = (engine, base);
    let mut lines = vec![format!("defaults {:.2} ms", best_time.as_secs_f64() * 1e3)];
    // A candidate that failed for a reason other than a graph the model cannot be captured in
    // (memory short while two sessions are open, say) may succeed later: the choice is then
    // used but not recorded.
    let mut complete = true;
    let mut candidates: Vec<(&str, Change)> = vec![
        ("prefer_nhwc=1", |s| s.prefer_nhwc = true),
        ("cudnn_conv_algo_search=HEURISTIC", |s| {
            s.heuristic_search = true
        }),
    ];
    if options.cuda_graph == CudaGraphMode::Auto {
        candidates.push(("enable_cuda_graph=1", |s| s.graph = true));
    }
    for (name, change) in candidates {
        let mut settings = best.1;
        change(&mut settings);
        let mut candidate = match OrtEngine::open_with(options, model, &settings) {
            Ok(engine) => engine,
            Err(e) => {
                lines.push(format!("{name}: cannot open ({e})"));
                complete &= settings.graph && e.to_string().contains("graph capture");
                continue;
            }
        };
        let time = match batch_time(&mut candidate, shape) {
            Ok(time) => time,
            Err(e) => {
                lines.push(format!("{name}: cannot run ({e})"));
                complete = false;
                continue;
            }
        };
        let gain = best_time.as_secs_f64() / time.as_secs_f64();
        lines.push(format!(
            "{name} {:.2} ms ({gain:.2}x)",
            time.as_secs_f64() * 1e3
        ));
        if gain >= GAIN {
            best = (candidate, settings);
            best_time = time;
        }
    }
    let (mut engine, settings) = best;
    if settings.graph {
        // The graph was captured over the timing input's address: a fresh session captures the
        // element's own at its first run.
        drop(engine);
        engine = open_with_graph_fallback(options, model, settings)?;
    }
    let summary = format!(
        "cuda-tuning: {settings} at batch {}, {:.2} ms per batch (measured: {})",
        shape[0],
        best_time.as_secs_f64() * 1e3,
        lines.join(", ")
    );
    if let Some(path) = record.filter(|_| complete) {
        let text = format!("# {summary}\n{}", settings.to_record());
        let stored = path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| crate::cache::write_atomically(&path, text.as_bytes()));
        if let Err(e) = stored {
            engine.notes.push(Note::info(format!(
                "cuda-tuning: the choice is not recorded ({}: {e})",
                path.display()
            )));
        }
    }
    engine.notes.push(Note::info(summary));
    Ok(engine)
}

/// Opens with `settings`; a graph the model cannot be captured in is dropped, saying why (a
/// warning under `cuda-graph=on`, information otherwise).
fn open_with_graph_fallback(
    options: &OrtOptions,
    model: &ModelAtPrecision,
    settings: CudaSettings,
) -> Result<OrtEngine, EngineError> {
    match OrtEngine::open_with(options, model, &settings) {
        Err(e) if settings.graph => {
            // Models with nodes outside the CUDA provider (control flow, shape arithmetic on
            // the CPU) cannot be captured: run them without the graph.
            let mut plain = OrtEngine::open_with(
                options,
                model,
                &CudaSettings {
                    graph: false,
                    ..settings
                },
            )?;
            let text =
                format!("cuda-graph: the model cannot run as a CUDA graph, running without ({e})");
            plain
                .notes
                .push(if options.cuda_graph == CudaGraphMode::On {
                    Note::warning(text)
                } else {
                    Note::info(text)
                });
            Ok(plain)
        }
        other => other,
    }
}

/// The most input bytes a timing allocates (on the host and on the device).
const MAX_TIMING_INPUT_BYTES: usize = 1 << 30;

/// The input's shape at `batch`, when every other dimension is fixed by the model and the
/// tensor is at most [`MAX_TIMING_INPUT_BYTES`]; else why not.
fn static_shape(engine: &OrtEngine, batch: usize) -> Result<Vec<usize>, String> {
    let input = &engine.description.input;
    let mut shape = Vec::with_capacity(input.dims.len());
    for (i, d) in input.dims.iter().enumerate() {
        match (i, d) {
            (0, _) => shape.push(batch.max(1)),
            (_, Some(d)) => shape.push(*d),
            (_, None) => {
                return Err(format!(
                    "the input `{}` has dimensions fixed only at run time",
                    input.name
                ));
            }
        }
    }
    let bytes = shape
        .iter()
        .try_fold(input.element_type.size().unwrap_or(1), |n, &d| {
            n.checked_mul(d)
        })
        .filter(|&n| n <= MAX_TIMING_INPUT_BYTES);
    match bytes {
        Some(_) if !shape.is_empty() => Ok(shape),
        Some(_) => Err(format!("the input `{}` has no dimensions", input.name)),
        None => Err(format!(
            "the input {shape:?} is over {} MiB at batch {batch}",
            MAX_TIMING_INPUT_BYTES >> 20
        )),
    }
}

/// Where the choice for this model, precision, batch, GPU and runtime is recorded (`None`
/// when the GPU's name cannot be read).
fn record_path(
    options: &OrtOptions,
    model: &ModelAtPrecision,
    engine: &OrtEngine,
) -> Option<PathBuf> {
    let context = &engine.cuda.as_ref()?.context;
    let gpu = context.device_name().ok()?;
    let key = crate::cache::sha256_hex_of(&[
        &model.bytes,
        gpu.as_bytes(),
        runtime_version().as_bytes(),
        options.batch.to_string().as_bytes(),
        model.label.as_bytes(),
        options.cuda_graph.nick().as_bytes(),
        TUNING_VERSION.as_bytes(),
    ]);
    Some(options.cache_dir.join(format!(
        "{}-{}-b{}-{}.cuda.txt",
        crate::cache::file_stem(&options.model),
        model.label,
        options.batch.max(1),
        &key[..16]
    )))
}

/// Seconds per batch of `shape` on `engine`'s device side: the least mean of three groups of
/// runs after two warm-up runs (the first pays cuDNN's algorithm search and graph capture).
fn batch_time(engine: &mut OrtEngine, shape: &[usize]) -> Result<Duration, EngineError> {
    let size = engine
        .description
        .input
        .element_type
        .size()
        .ok_or_else(|| EngineError::Run("input type cannot be timed".into()))?;
    let device = engine
        .device()
        .ok_or_else(|| EngineError::Run("no CUDA device side to time".into()))?;
    let (context, stream) = (device.context().clone(), device.stream().clone());
    let cuda_error = |e: ferrostream_core::cuda::CudaError| EngineError::Run(e.to_string());
    let elements: usize = shape.iter().product();
    let buffer =
        ferrostream_core::cuda::DeviceBuffer::new(&context, elements * size).map_err(cuda_error)?;
    // Mid-grey in the input's type: every element 0.5 (f32 0x3f000000, f16 0x3800) or 128.
    let pattern: Vec<u8> = match size {
        4 => 0.5f32.to_ne_bytes().to_vec(),
        2 => half::f16::from_f32(0.5).to_ne_bytes().to_vec(),
        _ => vec![128; size],
    };
    let host: Vec<u8> = pattern
        .iter()
        .copied()
        .cycle()
        .take(elements * size)
        .collect();
    buffer.upload(&stream, &host).map_err(cuda_error)?;
    let mut run = |count: usize| -> Result<Duration, EngineError> {
        let start = Instant::now();
        for _ in 0..count {
            // SAFETY: the buffer is device memory of the engine's context holding the whole
            // input, uploaded in the stream's order, and outlives the runs (synchronised below).
            unsafe { device.enqueue(buffer.ptr(), shape)? };
        }
        stream.synchronize().map_err(cuda_error)?;
        Ok(start.elapsed() / count as u32)
    };
    let warm = run(1)?.max(run(1)?);
    // Groups of about 0.1 s, 2 to 20 runs each.
    let count = ((0.1 / warm.as_secs_f64().max(1e-6)) as usize).clamp(2, 20);
    let mut best = Duration::MAX;
    for _ in 0..3 {
        best = best.min(run(count)?);
    }
    Ok(best)
}
