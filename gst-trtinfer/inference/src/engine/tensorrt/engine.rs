// SPDX-License-Identifier: MIT OR Apache-2.0
//! [`TrtEngine`]: a TensorRT engine behind the [`Engine`] trait. The engine comes from
//! `model-engine-file`, from the engine cache, or is built from `onnx-file` (then cached, and
//! written to `model-engine-file` when that names a file that does not exist yet).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ferrostream_core::cuda::{self, DeviceBuffer, Stream};

use super::cache::{CacheKey, EngineCache, Lookup};
use super::{
    BuildOptions, CudaEngine, ExecutionContext, IoMode, IoTensor, Library, LogFn, Runtime,
    build_from_onnx,
};
use crate::cache::{sha256_hex, write_atomically};
use crate::config::TensorRtSettings;
use crate::engine::{
    DeviceEngine, DeviceTensor, Engine, EngineDescription, EngineError, InputData, OutputTensor,
    TensorInfo, run_and_read,
};

/// What to open.
#[derive(Debug, Clone)]
pub struct TrtOptions {
    pub onnx: Option<PathBuf>,
    pub engine_file: Option<PathBuf>,
    pub gpu_id: u32,
    /// Largest engine call (the optimisation profile's maximum batch).
    pub batch_size: u32,
    pub settings: TensorRtSettings,
}

/// Where the engine came from, for the log and the element's start message.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    EngineFile(PathBuf),
    Cache(PathBuf),
    /// Built now (seconds taken), stored at the path; `reason` says why an older one was not used.
    Built {
        cached: PathBuf,
        seconds: f64,
        reason: Option<String>,
    },
}

/// Progress reports while opening: building an engine takes minutes.
pub type Progress = dyn Fn(&str) + Send + Sync;

pub struct TrtEngine {
    // Field order is drop order: the context before the engine, buffers before the CUDA context.
    context: ExecutionContext,
    input: IoTensor,
    outputs: Vec<IoTensor>,
    input_buffer: DeviceBuffer,
    output_buffers: Vec<DeviceBuffer>,
    /// The outputs of the last run, as `DeviceEngine::enqueue` returns them.
    device_outputs: Vec<DeviceTensor>,
    stream: Arc<Stream>,
    cuda: Arc<cuda::Context>,
    description: EngineDescription,
    origin: Origin,
}

fn cuda_error(e: cuda::CudaError) -> EngineError {
    EngineError::RuntimeMissing(format!("CUDA: {e}"))
}

fn dims_info(shape: &[i64]) -> Vec<Option<usize>> {
    shape
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|_| d >= 0))
        .collect()
}

/// Elements of a tensor of `shape` whose batch dimension (when dynamic) is `batch`.
fn elements(shape: &[i64], batch: usize) -> Result<usize, String> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| match (i, d) {
            (0, -1) => Ok(batch),
            (_, d) if d >= 0 => Ok(d as usize),
            _ => Err(format!(
                "dimension {i} of {shape:?} is dynamic; only the batch may be"
            )),
        })
        .product()
}

impl TrtEngine {
    pub fn open(
        options: &TrtOptions,
        log: Arc<LogFn>,
        progress: &Progress,
    ) -> Result<Self, EngineError> {
        let library = Library::load()?;
        let cuda = cuda::Context::primary_for_runtime(options.gpu_id).map_err(cuda_error)?;
        let _bound = cuda.bind().map_err(cuda_error)?;
        let runtime_log = log.clone();
        let runtime = Runtime::new(library.clone(), Box::new(move |s, m| runtime_log(s, m)))?;
        let build = BuildOptions::new(&options.settings, options.batch_size)
            .map_err(EngineError::ProviderUnavailable)?;
        if let Some(core) = build.dla_core
            && core >= runtime.dla_cores()
        {
            return Err(EngineError::ProviderUnavailable(format!(
                "enable-dla: DLA core {core} requested, but this device has {} DLA core(s)",
                runtime.dla_cores()
            )));
        }
        let (blob, origin) = engine_blob(options, &library, &cuda, &build, log, progress)?;
        let engine = CudaEngine::deserialize(runtime, &blob, build.dla_core)?;
        let inputs: Vec<&IoTensor> = engine
            .io()
            .iter()
            .filter(|t| t.mode == IoMode::Input)
            .collect();
        let [input] = inputs[..] else {
            return Err(EngineError::Run(format!(
                "the engine has {} inputs; rstrtinfer feeds exactly one image input",
                inputs.len()
            )));
        };
        let input = input.clone();
        let outputs: Vec<IoTensor> = engine
            .io()
            .iter()
            .filter(|t| t.mode == IoMode::Output)
            .cloned()
            .collect();
        let max_batch = match &input.profile {
            Some((_, max)) if input.shape.first() == Some(&-1) => {
                max.first().copied().unwrap_or(1).max(1) as usize
            }
            _ => input.shape.first().copied().unwrap_or(1).max(1) as usize,
        };
        let size_of = |t: &IoTensor| {
            let elems = elements(&t.shape, max_batch).map_err(EngineError::Run)?;
            let bytes = t.element_type.size().ok_or_else(|| {
                EngineError::Run(format!(
                    "tensor {} has element type {}, which rstrtinfer cannot read",
                    t.name.to_string_lossy(),
                    t.element_type
                ))
            })?;
            Ok::<usize, EngineError>(elems * bytes)
        };
        let input_buffer = DeviceBuffer::new(&cuda, size_of(&input)?).map_err(cuda_error)?;
        let output_buffers = outputs
            .iter()
            .map(|o| DeviceBuffer::new(&cuda, size_of(o)?).map_err(cuda_error))
            .collect::<Result<Vec<_>, _>>()?;
        let context = ExecutionContext::new(engine)?;
        let stream = Arc::new(Stream::new(&cuda, 0).map_err(cuda_error)?);
        let info = |t: &IoTensor| TensorInfo {
            name: t.name.to_string_lossy().into_owned(),
            element_type: t.element_type,
            dims: dims_info(&t.shape),
        };
        // A profile with min = max batch (DLA builds) makes the batch fixed: the element pads
        // partial batches.
        let mut input_info = info(&input);
        if let (Some(first), Some((min, max))) = (input_info.dims.first_mut(), &input.profile)
            && first.is_none()
            && min
                .first()
                .is_some_and(|&m| m > 0 && Some(&m) == max.first())
        {
            *first = Some(max[0] as usize);
        }
        let device = match build.dla_core {
            Some(core) if build.gpu_fallback => vec![format!("DLA{core}"), "GPU fallback".into()],
            Some(core) => vec![format!("DLA{core}")],
            None => vec![format!(
                "GPU{} ({})",
                options.gpu_id,
                cuda.device_name().unwrap_or_default()
            )],
        };
        let description = EngineDescription {
            backend: "tensorrt",
            providers: device,
            version: library.version().to_string(),
            input: input_info,
            outputs: outputs.iter().map(info).collect(),
        };
        drop(_bound);
        Ok(Self {
            context,
            input,
            outputs,
            input_buffer,
            output_buffers,
            device_outputs: Vec::new(),
            stream,
            cuda,
            description,
            origin,
        })
    }

    /// Where the engine came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }
}

/// The serialised engine: `model-engine-file` when it exists, else the cache, else a build.
fn engine_blob(
    options: &TrtOptions,
    library: &Arc<Library>,
    cuda: &Arc<cuda::Context>,
    build: &BuildOptions,
    log: Arc<LogFn>,
    progress: &Progress,
) -> Result<(Vec<u8>, Origin), EngineError> {
    let read = |path: &Path| {
        ferrostream_core::files::read(path, ferrostream_core::files::MAX_MODEL_FILE_BYTES).map_err(
            |e| EngineError::Model {
                path: path.display().to_string(),
                reason: e.to_string(),
            },
        )
    };
    if let Some(file) = options.engine_file.as_ref().filter(|f| f.is_file()) {
        return Ok((read(file)?, Origin::EngineFile(file.clone())));
    }
    let Some(onnx) = &options.onnx else {
        return Err(EngineError::Model {
            path: options
                .engine_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            reason: "engine file not found, and no onnx-file to build it from".into(),
        });
    };
    let original = read(onnx)?;
    let model_sha256 = sha256_hex(&original);
    let cache = EngineCache::new(
        options
            .settings
            .engine_cache_dir
            .clone()
            .unwrap_or_else(crate::cache::default_dir),
    );
    // TensorRT 11 builds a network in the types its model declares (its FP16 builder flag is
    // gone): FP16 there is the model converted to FP16 (crate::onnx::fp16), the conversion
    // rules part of the engine's key.
    let mut precision = build.precision_name().to_string();
    let model = if super::header_version().0 / 10000 >= 11
        && build.precision == crate::config::NetworkMode::Fp16
    {
        let converted = crate::onnx::fp16_model(onnx, &original, cache.dir()).map_err(|e| {
            EngineError::Model {
                path: onnx.display().to_string(),
                reason: format!("network-mode=fp16 on TensorRT 11 converts the model to FP16: {e}"),
            }
        })?;
        progress(&format!(
            "network-mode=fp16 on TensorRT 11: the model converted to FP16 ({})",
            converted.summary
        ));
        precision = format!(
            "fp16 (converted, rules {})",
            crate::onnx::fp16::rules_digest()
        );
        converted.bytes
    } else {
        original
    };
    let (cc_major, cc_minor) = cuda.compute_capability().map_err(cuda_error)?;
    let calibration = build
        .int8_calibration_cache
        .as_ref()
        .map(|p| read(p).map(|bytes| sha256_hex(&bytes)))
        .transpose()?;
    let (min_batch, _, max_batch) = build.batch_profile();
    let key = CacheKey {
        model_sha256,
        tensorrt: library.version().to_string(),
        gpu: cuda.device_name().map_err(cuda_error)?,
        compute_capability: format!("{cc_major}.{cc_minor}"),
        precision,
        min_batch: min_batch as u32,
        max_batch: max_batch as u32,
        dla_core: build.dla_core,
        gpu_fallback: build.gpu_fallback,
        int8_calibration_sha256: calibration,
        workspace_bytes: build.workspace_bytes,
    };
    let stem = onnx
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let reason = match cache.lookup(&stem, &key) {
        Lookup::Hit(path) => return Ok((read(&path)?, Origin::Cache(path))),
        Lookup::Stale { path, reason } => Some(format!(
            "the cached engine {} was built for another platform ({reason})",
            path.display()
        )),
        Lookup::Miss => None,
    };
    progress(&format!(
        "building a TensorRT {} engine from {} for batch 1..{max_batch}{} on {}{}: this takes a \
         while, once; it is cached in {}",
        build.precision_name(),
        onnx.display(),
        build
            .dla_core
            .map(|c| format!(", DLA core {c}"))
            .unwrap_or_default(),
        key.gpu,
        reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        cache.dir().display()
    ));
    let t0 = Instant::now();
    let blob = build_from_onnx(library, build, &model, Box::new(move |s, m| log(s, m)))?;
    let seconds = t0.elapsed().as_secs_f64();
    let cached = cache
        .store(&stem, &key, &blob)
        .map_err(|e| EngineError::Model {
            path: cache.dir().display().to_string(),
            reason: format!("storing the built engine: {e}"),
        })?;
    if let Some(file) = &options.engine_file {
        write_atomically(file, &blob).map_err(|e| EngineError::Model {
            path: file.display().to_string(),
            reason: format!("writing the built engine: {e}"),
        })?;
    }
    progress(&format!(
        "built the TensorRT engine in {seconds:.1} s; cached as {}",
        cached.display()
    ));
    Ok((
        blob,
        Origin::Built {
            cached,
            seconds,
            reason,
        },
    ))
}

impl Engine for TrtEngine {
    fn description(&self) -> &EngineDescription {
        &self.description
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        let (bytes, ty) = (input.as_bytes(), input.element_type());
        if ty != self.input.element_type {
            return Err(EngineError::Run(format!(
                "the engine's input is {} but {ty} was given",
                self.input.element_type
            )));
        }
        if bytes.len() > self.input_buffer.len() {
            return Err(EngineError::Run(format!(
                "{} input bytes for an engine that takes at most {}",
                bytes.len(),
                self.input_buffer.len()
            )));
        }
        self.input_buffer
            .upload(&self.stream, bytes)
            .map_err(cuda_error)?;
        let input = self.input_buffer.ptr();
        let names = self.description.outputs.clone();
        // SAFETY: the input buffer belongs to the engine's context and holds the batch just
        // uploaded on the engine's stream; it outlives the call, which waits for the inference.
        unsafe { run_and_read(self, input, shape, outputs, &names) }
    }

    fn device(&mut self) -> Option<&mut dyn DeviceEngine> {
        Some(self)
    }
}

impl DeviceEngine for TrtEngine {
    fn context(&self) -> &Arc<cuda::Context> {
        &self.cuda
    }

    fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    unsafe fn enqueue(
        &mut self,
        input: u64,
        shape: &[usize],
    ) -> Result<&[DeviceTensor], EngineError> {
        let batch = shape.first().copied().unwrap_or(1);
        let mut dims = [0i64; super::ffi::MAX_DIMS];
        let dims = dims
            .get_mut(..shape.len())
            .ok_or_else(|| EngineError::Run(format!("{} input dimensions", shape.len())))?;
        for (d, &s) in dims.iter_mut().zip(shape) {
            *d = s as i64;
        }
        let cuda = self.cuda.clone();
        let _bound = cuda.bind().map_err(cuda_error)?;
        let name = &self.input.name;
        self.context.set_input_shape(name, dims)?;
        // SAFETY: the caller vouches for `input`; the output buffers were allocated in the
        // engine's context for the maximum batch and live as long as the engine; the run is
        // queued on the engine's stream, after the work that wrote the input.
        unsafe {
            self.context.set_address(name, input)?;
            for (o, buffer) in self.outputs.iter().zip(&self.output_buffers) {
                self.context.set_address(&o.name, buffer.ptr())?;
            }
            self.context.enqueue(self.stream.raw().cast())?;
        }
        self.device_outputs.clear();
        for (o, buffer) in self.outputs.iter().zip(&self.output_buffers) {
            let elems = elements(&o.shape, batch).map_err(EngineError::Run)?;
            self.device_outputs.push(DeviceTensor {
                ptr: buffer.ptr(),
                bytes: elems * o.element_type.size().unwrap_or(4),
                shape: o
                    .shape
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| if i == 0 && d == -1 { batch } else { d as usize })
                    .collect(),
                element_type: o.element_type,
                dense: true,
            });
        }
        Ok(&self.device_outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_batch_may_be_dynamic() {
        assert_eq!(elements(&[-1, 3, 224, 224], 8), Ok(8 * 3 * 224 * 224));
        assert_eq!(elements(&[1, 1000], 8), Ok(1000));
        assert!(
            elements(&[-1, 3, -1, -1], 1)
                .unwrap_err()
                .contains("dimension 2")
        );
    }
}
