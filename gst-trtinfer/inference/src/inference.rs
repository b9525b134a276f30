// SPDX-License-Identifier: MIT OR Apache-2.0
//! One configured model: engine, network input geometry, tensor buffer, parser and labels.
//!
//! [`Inference`] is what `rstrtinfer` runs per frame, free of GStreamer plumbing so that tests
//! and benchmarks drive the very same code.

use std::path::PathBuf;
use std::sync::Arc;

use ferrostream_core::keypoints::{Keypoint, Keypoints, Skeleton};
use ferrostream_core::mask::InstanceMask;
use ferrostream_core::{AttributeValue, BBox, Classification, Object};

use crate::cluster::cluster;
use crate::config::{
    Backend, ClassAttrs, ColorFormat, InferConfig, InputOrder, MAX_CLASSES, NetworkMode,
    NetworkType,
};
use crate::engine::onnxruntime::{DlaOptions, OrtEngine, OrtOptions};
use crate::engine::remote::{Health, RemoteCall};
use crate::engine::{
    ElementType, Engine, EngineDescription, EngineError, EngineLog, InputData, LogLevel,
    OutputTensor, TensorInfo,
};
use crate::labels::{label_for, load as load_labels};
use crate::parse::{Detection, OutputParser, ParserSettings, Produces};
use crate::preprocess::{Letterbox, NetworkInput, Preprocessor, SourceImage, TensorElement};

/// Why a model could not be set up; each maps to a GStreamer error domain.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Runtime(String),
    #[error("{0}")]
    Model(String),
    #[error("{0}")]
    Unsupported(String),
}

impl SetupError {
    /// The error with the model's file (or server and name) in front, where it does not name
    /// it yet.
    fn in_model(self, model: &std::path::Path) -> Self {
        let name = model.display().to_string();
        let named = |m: String| {
            if m.contains(&name) {
                m
            } else {
                format!("{name}: {m}")
            }
        };
        match self {
            SetupError::Config(m) => SetupError::Config(named(m)),
            SetupError::Model(m) => SetupError::Model(named(m)),
            other => other,
        }
    }
}

impl From<EngineError> for SetupError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::RuntimeMissing(m) | EngineError::ProviderUnavailable(m) => {
                SetupError::Runtime(m)
            }
            e @ EngineError::Model { .. } => SetupError::Model(e.to_string()),
            EngineError::Run(m) => SetupError::Model(m),
        }
    }
}

/// The network's input tensor for a batch, in the model's element type.
#[derive(Debug, Clone)]
pub enum InputTensor {
    F32(Vec<f32>),
    F16(Vec<half::f16>),
    U8(Vec<u8>),
}

/// The largest input tensor a configuration may ask for (batch-size x the network input): 2 GiB.
/// A bigger one is refused when the element starts, not attempted.
pub const MAX_INPUT_TENSOR_BYTES: usize = 2 << 30;

/// The largest output tensor a model may declare for one engine call (held as f32): 2 GiB.
pub const MAX_OUTPUT_TENSOR_BYTES: usize = 2 << 30;

/// The largest height or width of a network input.
pub const MAX_NETWORK_SIDE: usize = 1 << 15;

/// Checks that every output the model declares fits [`MAX_OUTPUT_TENSOR_BYTES`] for a batch of
/// `capacity` (a dynamic batch axis counts as `capacity`, other dynamic axes as 1).
fn check_output_sizes(outputs: &[TensorInfo], capacity: usize) -> Result<(), String> {
    for o in outputs {
        let elements = o.dims.iter().enumerate().try_fold(1usize, |n, (axis, d)| {
            let d = d.unwrap_or(if axis == 0 { capacity } else { 1 });
            n.checked_mul(d)
        });
        let bytes = elements.and_then(|n| n.checked_mul(std::mem::size_of::<f32>()));
        if bytes.is_none_or(|b| b > MAX_OUTPUT_TENSOR_BYTES) {
            return Err(format!(
                "output {o} declares {} values for a batch of {capacity}: more than the {} GiB \
                 an output may take",
                elements.map_or("more than 2^64".to_string(), |n| n.to_string()),
                MAX_OUTPUT_TENSOR_BYTES >> 30
            ));
        }
    }
    Ok(())
}

impl InputTensor {
    fn new(element_type: ElementType, len: usize) -> Result<Self, String> {
        let supported = matches!(
            element_type,
            ElementType::F32 | ElementType::F16 | ElementType::U8
        );
        let bytes = element_type.size().and_then(|size| len.checked_mul(size));
        if supported && bytes.is_none_or(|b| b > MAX_INPUT_TENSOR_BYTES) {
            return Err(format!(
                "{len} input elements of {element_type} ({}) is more than the {} GiB an input \
                 tensor may take: lower batch-size or the network input size",
                bytes.map_or("overflow".to_string(), |b| format!(
                    "{:.1} GiB",
                    b as f64 / (1u64 << 30) as f64
                )),
                MAX_INPUT_TENSOR_BYTES >> 30
            ));
        }
        Ok(match element_type {
            ElementType::F32 => InputTensor::F32(vec![0.0; len]),
            ElementType::F16 => InputTensor::F16(vec![half::f16::ZERO; len]),
            ElementType::U8 => InputTensor::U8(vec![0; len]),
            other => {
                return Err(format!(
                    "input element type {other} is not supported (f32, f16 or u8)"
                ));
            }
        })
    }

    /// The first `len` elements.
    pub fn data(&self, len: usize) -> InputData<'_> {
        match self {
            InputTensor::F32(v) => InputData::F32(&v[..len]),
            InputTensor::F16(v) => InputData::F16(&v[..len]),
            InputTensor::U8(v) => InputData::U8(&v[..len]),
        }
    }
}

/// A batch on its way to the inference server, with what parsing its answer needs.
pub struct RemoteBatch {
    pub call: RemoteCall,
    pub letterboxes: Vec<Letterbox>,
    /// The frame size of each region.
    pub sizes: Vec<(u32, u32)>,
}

pub struct Inference {
    config: InferConfig,
    model_path: PathBuf,
    /// The device engine's GPU state, made at the first batch on the GPU. Declared before the
    /// engine, so dropped first: its input tensor may be the engine's own.
    #[cfg(feature = "cuda")]
    runner: Option<crate::gpu::run::DeviceRunner>,
    engine: Box<dyn Engine>,
    network: NetworkInput,
    /// Shape of the last engine call's input (batch first).
    input_shape: Vec<usize>,
    /// The model's batch size when its batch dimension is fixed.
    fixed_batch: Option<usize>,
    /// Frames one engine call takes: the fixed batch, else `batch-size`.
    capacity: usize,
    tensor: InputTensor,
    /// `None` until the first outputs, where the model leaves their shapes open.
    parser: Option<OutputParser>,
    parser_settings: ParserSettings,
    /// The parser was guessed (`output-parser=auto`) rather than named; `parser_checked` once
    /// the first detections looked like detections (checked for both: a named family on
    /// another family's outputs emits garbage as surely as a wrong guess).
    parser_guessed: bool,
    parser_checked: bool,
    log: EngineLog,
    /// The nvinfer custom parser library, when one is configured.
    custom: Option<crate::custom::CustomParser>,
    class_attrs: Vec<ClassAttrs>,
    labels: Vec<Arc<str>>,
    /// Labels per output layer (nvinfer's classifier label files); `labels` is layer 0's.
    layer_labels: Vec<Vec<Arc<str>>>,
    /// A pose model's keypoint names and skeleton.
    keypoint_names: Vec<Arc<str>>,
    skeleton: Skeleton,
    preprocessor: Preprocessor,
    outputs: Vec<OutputTensor>,
    /// Indices of the outputs the parser reads (`output-blob-names`, else all) and every
    /// output's name.
    considered: Vec<usize>,
    output_names: Vec<Arc<str>>,
    detections: Vec<Detection>,
    /// Warnings not yet taken by [`Inference::take_warnings`].
    warnings: Vec<String>,
    /// Why `backend=auto` opened this engine.
    backend_choice: Option<String>,
    /// Letterbox of the frame in each tensor slot, once filled.
    letterboxes: Vec<Option<Letterbox>>,
}

impl Inference {
    /// Loads the model of `config` and checks that everything fits together.
    /// `threads` caps ONNX Runtime's intra-op threads (0: its default).
    pub fn new(config: InferConfig, threads: usize) -> Result<Self, SetupError> {
        Self::open(config, threads, Arc::new(|_, _| {}))
    }

    /// As [`Inference::new`], reporting through `log`: engine builds (which take minutes) as
    /// [`LogLevel::Progress`], why `backend=auto` did not use TensorRT, and TensorRT's own log.
    pub fn open(config: InferConfig, threads: usize, log: EngineLog) -> Result<Self, SetupError> {
        if config.backend.is_remote() {
            config.validate().map_err(SetupError::Config)?;
        }
        let onnx = config
            .onnx_file
            .as_ref()
            .filter(|_| !config.backend.is_remote())
            .map(|onnx| resolve_model(onnx))
            .transpose()?;
        // Before any backend reads it: every backend opens only what passes the checks.
        let facts = onnx
            .as_deref()
            .map(|path| {
                let facts = crate::onnx::check::check_file(path).map_err(|reason| {
                    SetupError::from(EngineError::Model {
                        path: path.display().to_string(),
                        reason,
                    })
                })?;
                log(
                    LogLevel::Debug,
                    &format!(
                        "{}: IR version {}, operator set {}, {} nodes, {} external data files",
                        path.display(),
                        facts.ir_version,
                        facts
                            .opset
                            .map_or_else(|| "none".to_string(), |v| v.to_string()),
                        facts.nodes,
                        facts.external_files.len()
                    ),
                );
                Ok::<_, SetupError>(facts)
            })
            .transpose()?;
        let nodes = facts.as_ref().map_or(0, |f| f.nodes);
        let mut backend_choice = None;
        // Settings the engine does not honour as asked, for the application (not only the log).
        let mut setup_warnings = Vec::new();
        let (engine, model_path): OpenedEngine = match config.backend {
            Backend::Kserve | Backend::Triton => kserve_engine(&config)?,
            Backend::OnnxRuntime => ort_engine(&config, onnx, threads, &log, &mut setup_warnings)?,
            Backend::OpenVino => {
                openvino_engine(&config, onnx, nodes, threads, &log, &mut setup_warnings)?
            }
            Backend::TensorRt => tensorrt_engine(&config, onnx, &log)?,
            Backend::Auto => {
                let (engine, why) =
                    auto_engine(&config, onnx, nodes, threads, &log, &mut setup_warnings)?;
                backend_choice = Some(why);
                engine
            }
        };
        #[cfg(feature = "fault-injection")]
        let engine = crate::engine::fault::arm(engine);
        let mut inference = Self::with_engine(config, model_path, engine)?;
        inference.warnings.extend(setup_warnings);
        inference.log = log;
        inference.backend_choice = backend_choice;
        Ok(inference)
    }

    /// Why `backend=auto` opened the engine it did (`None` for a backend named in the
    /// configuration).
    pub fn backend_choice(&self) -> Option<&str> {
        self.backend_choice.as_deref()
    }

    /// Sets up around an engine that is already open.
    pub fn with_engine(
        config: InferConfig,
        model_path: PathBuf,
        engine: Box<dyn Engine>,
    ) -> Result<Self, SetupError> {
        config.validate().map_err(SetupError::Config)?;
        let description = engine.description().clone();
        let (network, fixed_batch) =
            network_input(&config, &description).map_err(|e| e.in_model(&model_path))?;
        let capacity = fixed_batch.unwrap_or(config.batch_size.max(1) as usize);
        let tensor = InputTensor::new(
            description.input.element_type,
            network.frame_len().saturating_mul(capacity),
        )
        .map_err(|m| {
            SetupError::Model(format!("model input {}: {m}", description.input))
                .in_model(&model_path)
        })?;
        check_output_sizes(&description.outputs, capacity)
            .map_err(|m| SetupError::Model(m).in_model(&model_path))?;

        let considered = considered_outputs(&config, &description)?;
        let infos: Vec<_> = considered
            .iter()
            .map(|&i| description.outputs[i].clone())
            .collect();
        let parser_settings = ParserSettings::new(&config, (network.width, network.height));
        let custom = match (&config.custom_lib_path, &config.custom_parser) {
            (Some(path), Some((kind, name))) => {
                let path = ferrostream_core::paths::resolve_model(path).map_err(|_| {
                    SetupError::NotFound(format!(
                        "custom-lib-path {}: no such file",
                        path.display()
                    ))
                })?;
                let names: Vec<String> =
                    description.outputs.iter().map(|o| o.name.clone()).collect();
                Some(
                    crate::custom::CustomParser::load(
                        &path,
                        name,
                        *kind,
                        &names,
                        config.custom_lib_deepstream_version,
                    )
                    .map_err(SetupError::Model)?,
                )
            }
            _ => None,
        };
        let parser = match OutputParser::select(&parser_settings, &infos) {
            _ if custom.is_some() => custom.as_ref().map(|c| OutputParser::custom(c.kind())),
            Ok(parser) => Some(parser.remap(&considered)),
            // Symbolic output dims: the first inference's real shapes decide.
            Err(_)
                if infos
                    .iter()
                    .any(|o| o.dims.iter().skip(1).any(Option::is_none)) =>
            {
                None
            }
            Err(m) => return Err(SetupError::Config(m)),
        };

        let layer_labels: Vec<Vec<Arc<str>>> = match &config.labelfile_path {
            Some(path) => {
                let found = ferrostream_core::paths::resolve_model(path).map_err(|_| {
                    SetupError::NotFound(format!("label file not found: {}", path.display()))
                })?;
                let lines = load_labels(&found).map_err(SetupError::NotFound)?;
                let classifier = config.network_type == crate::config::NetworkType::Classifier;
                crate::labels::per_layer(&lines, classifier)
            }
            None => vec![
                parser
                    .as_ref()
                    .map_or(&[][..], |p| p.default_labels())
                    .iter()
                    .map(|&l| Arc::from(l))
                    .collect(),
            ],
        };
        let labels = layer_labels.first().cloned().unwrap_or_default();
        let warnings = check_classes(&config, parser.as_ref(), &description.outputs)
            .map_err(|m| SetupError::Model(m).in_model(&model_path))?;
        let class_attrs = class_attrs(&config, parser.as_ref(), &description.outputs, &labels);
        let (keypoint_names, skeleton) = keypoint_layout(&config).map_err(SetupError::Config)?;
        let parser_guessed =
            config.output_parser == crate::config::ParserKind::Auto && custom.is_none();
        Ok(Self {
            config,
            model_path,
            engine,
            input_shape: input_shape(&network, capacity),
            fixed_batch,
            capacity,
            letterboxes: vec![None; capacity],
            network,
            tensor,
            parser,
            parser_guessed,
            parser_checked: false,
            parser_settings,
            log: Arc::new(|_, _| {}),
            custom,
            class_attrs,
            labels,
            layer_labels,
            keypoint_names,
            skeleton,
            preprocessor: Preprocessor::default(),
            outputs: Vec::new(),
            considered,
            output_names: description
                .outputs
                .iter()
                .map(|o| Arc::from(o.name.as_str()))
                .collect(),
            detections: Vec::new(),
            warnings,
            backend_choice: None,
            #[cfg(feature = "cuda")]
            runner: None,
        })
    }

    /// Warnings for the application (a class count that disagrees with the model), once each:
    /// from the start, and from the first outputs where the model's shapes are symbolic.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// nvinfer `interval`: infer on one buffer (frame or batch), then skip `interval` buffers.
    pub fn should_infer(&self, buffer_num: u64) -> bool {
        buffer_num.is_multiple_of(self.config.interval as u64 + 1)
    }

    /// Frames one engine call takes: the model's fixed batch size, else `batch-size`.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The model's batch size when its batch dimension is fixed.
    pub fn fixed_batch(&self) -> Option<usize> {
        self.fixed_batch
    }

    pub fn set_interval(&mut self, interval: u32) {
        self.config.interval = interval;
    }

    pub fn config(&self) -> &InferConfig {
        &self.config
    }

    pub fn description(&self) -> &EngineDescription {
        self.engine.description()
    }

    pub fn network(&self) -> &NetworkInput {
        &self.network
    }

    /// The output parser; `None` until the first inference where the model's output shapes
    /// are symbolic.
    pub fn parser(&self) -> Option<&OutputParser> {
        self.parser.as_ref()
    }

    pub fn model_path(&self) -> &std::path::Path {
        &self.model_path
    }

    /// The engine opened for this configuration, to run as one worker of several
    /// ([`crate::engine::workers::WorkerPool`]).
    pub fn into_engine(self) -> Box<dyn Engine> {
        self.engine
    }

    /// Chooses the parser from the real shapes of the first outputs (every engine output's
    /// shape, batch first) where the model's shapes left it open; once.
    fn choose_parser(&mut self, shapes: &[&[usize]]) -> Result<(), String> {
        if self.parser.is_some() {
            return Ok(());
        }
        let description = self.engine.description();
        let infos: Vec<crate::engine::TensorInfo> = self
            .considered
            .iter()
            .map(|&i| {
                let mut info = description.outputs[i].clone();
                if let Some(shape) = shapes.get(i) {
                    info.dims = shape.iter().map(|&d| Some(d)).collect();
                }
                info
            })
            .collect();
        let seen = infos
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let parser = OutputParser::select(&self.parser_settings, &infos)
            .map_err(|m| format!("the first outputs ({seen}): {m}"))?
            .remap(&self.considered);
        let mut all = description.outputs.clone();
        for (info, &i) in infos.into_iter().zip(&self.considered) {
            all[i] = info;
        }
        let warnings = check_classes(&self.config, Some(&parser), &all)
            .map_err(|m| format!("{}: {m}", self.model_path.display()))?;
        self.warnings.extend(warnings);
        self.class_attrs = class_attrs(&self.config, Some(&parser), &all, &self.labels);
        if self.config.labelfile_path.is_none() && self.labels.is_empty() {
            self.labels = parser
                .default_labels()
                .iter()
                .map(|&l| Arc::from(l))
                .collect();
        }
        (self.log)(
            LogLevel::ParserChosen,
            &format!(
                "output parser {} chosen from the first outputs ({seen})",
                parser.summary()
            ),
        );
        self.parser = Some(parser);
        Ok(())
    }

    /// Settles what the parser left open from the confident rows of slot `slot`, once they
    /// come (see [`Family::refine`](crate::parse::Family::refine)).
    fn settle_parser(&mut self, slot: usize) -> Result<(), String> {
        let Some(parser) = self.parser.as_ref().filter(|p| p.is_open()) else {
            return Ok(());
        };
        let min = self
            .class_attrs
            .iter()
            .chain([&self.config.class_attrs.all])
            .map(|a| a.pre_cluster_threshold)
            .fold(f32::INFINITY, f32::min);
        let batch = self.input_shape.first().copied().unwrap_or(1);
        if let Some((settled, what)) = parser.refine(&self.outputs, slot, batch, min)? {
            (self.log)(
                LogLevel::ParserChosen,
                &format!("output parser settled from the first confident rows: {what}"),
            );
            self.parser = Some(settled);
        }
        Ok(())
    }

    /// A built-in parser's first detections must look like detections: probabilities, and for a
    /// guess boxes on or near the network input. Otherwise the guess was wrong (or the named
    /// family is not the model's), and what it would emit is garbage.
    fn check_first_detections(&mut self) -> Result<(), String> {
        if self.parser_checked || self.custom.is_some() || self.detections.is_empty() {
            return Ok(());
        }
        let net = (self.network.width, self.network.height);
        // A guess is held to the family's whole plausibility check; a named family only to
        // scores being scores (a real model's first frame may hold an odd box).
        let bad = self.parser.as_ref().and_then(|parser| {
            self.detections.iter().find_map(|d| {
                if self.parser_guessed {
                    parser.implausible(d, net)
                } else {
                    crate::parse::not_a_score(d)
                }
            })
        });
        if let Some(bad) = bad {
            let parser = self
                .parser
                .as_ref()
                .map_or_else(String::new, |p| p.summary());
            let outputs = self
                .considered
                .iter()
                .filter_map(|&i| self.outputs.get(i))
                .map(|o| format!("{} {:?}", o.name, o.shape))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(if self.parser_guessed {
                format!(
                    "the outputs ({outputs}) were guessed to be {parser}, but the first \
                     detections include {bad}: the guess is wrong. Set output-parser (and, for \
                     end-to-end rows, end-to-end-columns, box-format, box-coordinates)"
                )
            } else {
                format!(
                    "output-parser reads the outputs ({outputs}) as {parser}, but the first \
                     detections include {bad}: the model's outputs are not that family's. \
                     Check output-parser (and num-detected-classes) against the model"
                )
            });
        }
        self.parser_checked = true;
        Ok(())
    }

    /// The input tensor (every slot) as last filled by [`Inference::preprocess`].
    pub fn tensor(&self) -> &InputTensor {
        &self.tensor
    }

    /// Input shape of the last engine call.
    pub fn input_shape(&self) -> &[usize] {
        &self.input_shape
    }

    /// Fills slot `slot` (< [`Inference::capacity`]) of the input tensor from `roi` of `image`.
    pub fn preprocess(&mut self, slot: usize, image: &SourceImage<'_>, roi: BBox) {
        assert!(
            slot < self.capacity,
            "tensor slot {slot} of {}",
            self.capacity
        );
        fn fill<T: TensorElement>(
            pre: &mut Preprocessor,
            image: &SourceImage<'_>,
            roi: BBox,
            net: &NetworkInput,
            slot: usize,
            tensor: &mut [T],
        ) -> Letterbox {
            let len = net.frame_len();
            pre.run(image, roi, net, &mut tensor[slot * len..(slot + 1) * len])
        }
        let net = &self.network;
        let pre = &mut self.preprocessor;
        self.letterboxes[slot] = Some(match &mut self.tensor {
            InputTensor::F32(t) => fill(pre, image, roi, net, slot, t),
            InputTensor::F16(t) => fill(pre, image, roi, net, slot, t),
            InputTensor::U8(t) => fill(pre, image, roi, net, slot, t),
        });
    }

    /// The element type of the input tensor.
    pub fn tensor_element_type(&self) -> ElementType {
        match self.tensor {
            InputTensor::F32(_) => ElementType::F32,
            InputTensor::F16(_) => ElementType::F16,
            InputTensor::U8(_) => ElementType::U8,
        }
    }

    /// Bytes of the whole input tensor (every slot).
    pub fn tensor_bytes(&self) -> usize {
        let elements = self.capacity * self.network.frame_len();
        elements * self.tensor_element_type().size().unwrap_or(4)
    }

    /// Takes the slots `stage` filled last from its device tensor, pre-processed there: exactly
    /// one copy of the tensor (not of the frames) to the host, for engines that take host memory.
    /// Waits for the stage's stream.
    #[cfg(feature = "cuda")]
    pub fn load_device_tensor(
        &mut self,
        stage: &crate::gpu::GpuStage,
    ) -> Result<usize, ferrostream_core::cuda::CudaError> {
        let letterboxes = stage.letterboxes();
        let slots = letterboxes.len().min(self.capacity);
        let len = slots * self.network.frame_len();
        let bytes: &mut [u8] = match &mut self.tensor {
            // SAFETY: f32, f16 and u8 have no invalid bit patterns and no padding, so viewing the
            // initialised elements as bytes and writing any bytes into them is sound.
            InputTensor::F32(v) => unsafe {
                std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), len * 4)
            },
            // SAFETY: as above.
            InputTensor::F16(v) => unsafe {
                std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), len * 2)
            },
            InputTensor::U8(v) => &mut v[..len],
        };
        stage.tensor().download(stage.stream(), bytes)?;
        for (slot, lb) in letterboxes.iter().take(slots).enumerate() {
            self.letterboxes[slot] = Some(*lb);
        }
        Ok(bytes.len())
    }

    /// The CUDA context of the engine's device side, when it has one: frames allocated there
    /// are read without a copy.
    #[cfg(feature = "cuda")]
    pub fn engine_context(&mut self) -> Option<Arc<ferrostream_core::cuda::Context>> {
        self.engine.device().map(|d| d.context().clone())
    }

    /// Queues a batch of regions on the device engine: pre-processing of `jobs` (frames of
    /// `frames_ctx`, each of the frame size in `sizes`), the engine run, and the read-back of
    /// what the parser needs (the selected anchors of a detector, else the whole outputs). Does
    /// not wait for the GPU; [`Inference::finish_device`] does. `None` when the engine has no
    /// device side.
    #[cfg(feature = "cuda")]
    pub fn enqueue_device(
        &mut self,
        jobs: &[crate::gpu::GpuJob],
        frames_ctx: &Arc<ferrostream_core::cuda::Context>,
        sizes: Vec<(u32, u32)>,
    ) -> Option<Result<crate::gpu::run::Pending, String>> {
        let tensor_bytes = self.tensor_bytes();
        let element = self.tensor_element_type();
        let priority = self.config.stream_priority;
        let count = jobs.len();
        assert!(
            (1..=self.capacity).contains(&count),
            "{count} regions for a tensor of {}",
            self.capacity
        );
        let device = self.engine.device()?;
        let runner = match &mut self.runner {
            Some(r) => r,
            // SAFETY: the engine's input tensor lives as long as the engine, which outlives the
            // runner: both belong to this Inference, whose runner field drops first.
            r => match unsafe {
                crate::gpu::run::DeviceRunner::new(
                    device.context().clone(),
                    device.stream().clone(),
                    tensor_bytes,
                    device.input_tensor(),
                )
            } {
                Ok(new) => r.insert(new),
                Err(e) => return Some(Err(format!("CUDA: {e}"))),
            },
        };
        // One input shape for every call: a partial batch runs padded to the capacity. Engines
        // tune themselves per shape (cuDNN's algorithm search takes seconds), and a stream of
        // batches whose sizes vary would pay it again and again.
        let batch = self.fixed_batch.unwrap_or(self.capacity);
        self.input_shape[0] = batch;
        let cuda = |e: ferrostream_core::cuda::CudaError| format!("CUDA: {e}");
        let queued = (|| {
            let slot = runner.slot().map_err(cuda)?;
            let (letterboxes, copied) = runner
                .preprocess(jobs, frames_ctx, &self.network, element, priority)
                .map_err(cuda)?;
            slot.preprocessed.record(&runner.stream).map_err(cuda)?;
            // SAFETY: the input tensor belongs to the engine's context, holds `batch` slots of
            // the engine's element type (the tensor is sized for the capacity, the fixed batch
            // included) written on the engine's stream, and is rewritten only by the next
            // batch's pre-processing, queued after this run on the same stream.
            let tensors = unsafe { device.enqueue(runner.input(), &self.input_shape) }
                .map_err(|e| e.to_string())?
                .to_vec();
            Ok((slot, letterboxes, copied, tensors))
        })();
        let result = queued.and_then(|(slot, letterboxes, copied, tensors)| {
            let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape.as_slice()).collect();
            self.choose_parser(&shapes)?;
            let parser = self.parser.as_ref().expect("chosen above");
            let layout = if self.config.output_tensor_meta {
                None
            } else {
                match parser.anchor_layout(&shapes) {
                    Some(Ok(layout)) => {
                        let attrs = &self.class_attrs;
                        let all = self.config.class_attrs.all;
                        let attrs_of = |c: u32| attrs.get(c as usize).copied().unwrap_or(all);
                        let min = layout.min_threshold(&attrs_of);
                        Some((layout, min))
                    }
                    Some(Err(m)) => return Err(format!("Parsing the model outputs: {m}")),
                    None => None,
                }
            };
            let runner = self.runner.as_mut().expect("made above");
            let (slot, readback) = runner
                .read_back(slot, &tensors, layout, count)
                .map_err(cuda)?;
            Ok(crate::gpu::run::Pending {
                slot,
                readback,
                letterboxes,
                sizes,
                copied_between_contexts: copied,
            })
        });
        Some(result)
    }

    /// Waits for a batch queued by [`Inference::enqueue_device`] and parses it: one result
    /// per region, in order.
    #[cfg(feature = "cuda")]
    pub fn finish_device(
        &mut self,
        pending: crate::gpu::run::Pending,
    ) -> Result<Vec<ItemResult>, String> {
        use crate::gpu::run::Readback;
        let crate::gpu::run::Pending {
            slot,
            readback,
            letterboxes,
            sizes,
            ..
        } = pending;
        let waited = slot.done.synchronize();
        let device = self
            .engine
            .device()
            .ok_or("the engine lost its device side")?;
        waited.map_err(|e| device.explain(e).to_string())?;
        for (i, lb) in letterboxes.iter().enumerate().take(self.capacity) {
            self.letterboxes[i] = Some(*lb);
        }
        let runner = self.runner.as_mut().ok_or("no GPU state")?;
        let results = match readback {
            Readback::Whole { tensors } => {
                let mut offset = 0;
                self.outputs
                    .resize_with(tensors.len(), OutputTensor::default);
                for (index, (t, out)) in tensors.iter().zip(self.outputs.iter_mut()).enumerate() {
                    let raw = &slot.host.as_slice()[offset..offset + t.bytes];
                    offset += t.bytes;
                    out.shape.clone_from(&t.shape);
                    if out.name != *self.output_names[index] {
                        out.name = self.output_names[index].to_string();
                    }
                    device
                        .unpack(index, t, raw, &mut out.data)
                        .map_err(|e| e.to_string())?;
                }
                let mut results = Vec::with_capacity(sizes.len());
                for (i, &(w, h)) in sizes.iter().enumerate() {
                    results.push(self.result(i, w, h)?);
                }
                results
            }
            Readback::Selected {
                layout,
                shapes,
                min_threshold,
                expected,
            } => {
                let record = crate::gpu::select::record_bytes(&layout);
                let head = crate::gpu::select::HEADER_BYTES;
                let host = slot.host.as_slice();
                let count = u32::from_ne_bytes(host[..4].try_into().expect("4 bytes")) as usize;
                let first = &host[..head + count.min(expected) * record];
                let mut bytes = std::borrow::Cow::Borrowed(first);
                if count > expected {
                    let mut rest = Vec::new();
                    runner
                        .read_rest(
                            &slot,
                            head + expected * record,
                            (count - expected) * record,
                            &mut rest,
                        )
                        .map_err(|e| format!("CUDA: {e}"))?;
                    bytes.to_mut().extend_from_slice(&rest);
                }
                runner.saw_records(count);
                let records = crate::gpu::select::Records::read(&bytes, &layout);
                let shape_refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
                let width = layout.heatmap_width(&shape_refs);
                let net = (self.network.width, self.network.height);
                let mut results = Vec::with_capacity(sizes.len());
                let mut rows = records.keys.iter().enumerate().peekable();
                let parser = self.parser.clone().ok_or("no output parser")?;
                for (item, &(w, h)) in sizes.iter().enumerate() {
                    self.detections.clear();
                    let attrs = &self.class_attrs;
                    let all = self.config.class_attrs.all;
                    let attrs_of = |c: u32| attrs.get(c as usize).copied().unwrap_or(all);
                    while let Some((i, &(_, anchor))) = rows.next_if(|(_, k)| k.0 == item) {
                        parser.decode_anchor(
                            records.row(i),
                            anchor,
                            width,
                            net,
                            &attrs_of,
                            min_threshold,
                            &mut self.detections,
                        );
                    }
                    let lb = letterboxes
                        .get(item)
                        .copied()
                        .ok_or("no letterbox for a region")?;
                    results.push(ItemResult {
                        objects: self.objects_from_detections(lb, w, h, None)?,
                        ..ItemResult::default()
                    });
                }
                results
            }
        };
        let runner = self.runner.as_mut().ok_or("no GPU state")?;
        runner.recycle(slot);
        Ok(results)
    }

    /// Runs the engine on the first `frames` slots of the input tensor (all slots of a model with
    /// a fixed batch size; the unused ones are ignored).
    pub fn infer(&mut self, frames: usize) -> Result<(), EngineError> {
        let elements = self.set_batch(frames);
        let data = self.tensor.data(elements);
        self.engine.run(data, &self.input_shape, &mut self.outputs)
    }

    /// Sets the input shape for an engine call of the first `frames` slots (all slots of a
    /// model with a fixed batch size); returns the tensor elements the call reads.
    fn set_batch(&mut self, frames: usize) -> usize {
        assert!(
            (1..=self.capacity).contains(&frames),
            "{frames} frames for a tensor of {}",
            self.capacity
        );
        let batch = self.fixed_batch.unwrap_or(frames);
        self.input_shape[0] = batch;
        batch * self.network.frame_len()
    }

    /// Whether the engine runs on an inference server ([`Inference::submit_remote`]).
    pub fn is_remote(&mut self) -> bool {
        self.engine.remote().is_some()
    }

    /// The remote engine's server health, when the engine runs on a server.
    pub fn remote_health(&mut self) -> Option<(Arc<Health>, String)> {
        self.engine
            .remote()
            .filter(|r| r.is_server())
            .map(|r| (r.health().clone(), r.server().to_string()))
    }

    /// Prepares the engine for up to `requests` batches submitted without waiting
    /// ([`Inference::submit_remote`]), where it can run several at once (OpenVINO); `true` when
    /// it can. Engines open for one batch at a time ([`Inference::infer`]).
    pub fn keep_in_flight(&mut self, requests: usize) -> Result<bool, EngineError> {
        self.engine.keep_in_flight(requests)
    }

    /// What ends the engine's runs from another thread (a state change, a flush), where the
    /// engine can end a run ([`Engine::interrupter`]).
    pub fn interrupter(&self) -> Option<Arc<dyn crate::engine::Interrupt>> {
        self.engine.interrupter()
    }

    /// Sends the first `sizes.len()` pre-processed slots to the inference server without
    /// waiting (as [`Inference::infer`] runs them); [`Inference::finish_remote`] parses the
    /// answer. `sizes` are the frame sizes of the slots' images.
    pub fn submit_remote(&mut self, sizes: Vec<(u32, u32)>) -> Result<RemoteBatch, String> {
        let frames = sizes.len();
        let elements = self.set_batch(frames);
        let letterboxes = self.letterboxes[..frames]
            .iter()
            .map(|lb| lb.ok_or("a slot was not pre-processed"))
            .collect::<Result<Vec<_>, _>>()?;
        let data = self.tensor.data(elements);
        let remote = self
            .engine
            .remote()
            .ok_or("the engine does not run on a server")?;
        let call = remote
            .submit(data, &self.input_shape)
            .map_err(|e| e.to_string())?;
        Ok(RemoteBatch {
            call,
            letterboxes,
            sizes,
        })
    }

    /// Parses the answer to a batch sent by [`Inference::submit_remote`]: one result per
    /// region, in order.
    pub fn finish_remote(
        &mut self,
        letterboxes: &[Letterbox],
        sizes: &[(u32, u32)],
        outputs: Vec<OutputTensor>,
    ) -> Result<Vec<ItemResult>, String> {
        self.outputs = outputs;
        for (slot, lb) in letterboxes.iter().enumerate().take(self.capacity) {
            self.letterboxes[slot] = Some(*lb);
        }
        sizes
            .iter()
            .enumerate()
            .map(|(slot, &(w, h))| self.result(slot, w, h))
            .collect()
    }

    /// What the last run said about tensor slot `slot`, whose image was (a region of) a
    /// `frame_w` x `frame_h` frame: the top class of a classifier, the objects of a detector
    /// (in frame pixels), and with `output-tensor-meta` the slot's raw outputs.
    pub fn result(
        &mut self,
        slot: usize,
        frame_w: u32,
        frame_h: u32,
    ) -> Result<ItemResult, String> {
        let lb = self
            .letterboxes
            .get(slot)
            .copied()
            .flatten()
            .ok_or("no frame was pre-processed into this slot")?;
        let mut result = ItemResult::default();
        let shapes: Vec<Vec<usize>> = self.outputs.iter().map(|o| o.shape.clone()).collect();
        let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        self.choose_parser(&shapes)?;
        if self.config.output_tensor_meta {
            result.tensors = self
                .considered
                .iter()
                .map(|&i| {
                    let output = &self.outputs[i];
                    (
                        Arc::clone(&self.output_names[i]),
                        output.item(slot).to_vec(),
                    )
                })
                .collect();
        }
        let parser = self.parser.as_ref().expect("chosen above");
        match parser.produces() {
            Produces::Tensors => {}
            Produces::Custom(crate::layout::CustomKind::Classifier) => {
                result.classifications = self.custom_classifications(slot)?;
            }
            Produces::Custom(crate::layout::CustomKind::Segmentation) => {
                result.segmentation = Some(self.custom_class_map(slot, lb)?);
            }
            Produces::Custom(_) => {
                self.custom_detections(slot)?;
                result.objects = self.objects_from_detections(lb, frame_w, frame_h, None)?;
            }
            Produces::ClassMap { output } => {
                result.segmentation = Some(self.class_map(output, slot, lb)?);
            }
            Produces::Classes => {
                result.classifications = parser
                    .top_class(&self.outputs, slot)
                    // Strictly above, as nvinfer's classifier parser.
                    .filter(|&(_, prob)| prob > self.config.classifier_threshold)
                    .map(|(class_id, prob)| Classification {
                        component_id: self.config.gie_unique_id,
                        class_id: class_id as i32,
                        label: label_for(&self.labels, class_id),
                        prob,
                    })
                    .into_iter()
                    .collect();
            }
            Produces::Detections => {
                result.objects = self.detected_objects(slot, lb, frame_w, frame_h)?
            }
        }
        Ok(result)
    }

    /// Runs the custom detector parser on slot `slot` into `self.detections`, keeping what
    /// nvinfer keeps: objects of the configured classes (`num-detected-classes`) at or above
    /// their `pre-cluster-threshold`. Boxes are not clipped here (nvinfer does not either); an
    /// instance mask is binarised with `segmentation-threshold`.
    fn custom_detections(&mut self, slot: usize) -> Result<(), String> {
        let custom = self.custom.as_ref().ok_or("no custom parser")?;
        let classes = match self.config.num_detected_classes as usize {
            0 => self.class_attrs.len(),
            n => n.min(self.class_attrs.len()),
        };
        let attrs = &self.class_attrs[..classes];
        let pre: Vec<f32> = attrs.iter().map(|a| a.pre_cluster_threshold).collect();
        let post: Vec<f32> = attrs.iter().map(|a| a.post_cluster_threshold).collect();
        let net = (
            self.network.width,
            self.network.height,
            self.network.channels,
        );
        let found = custom.detect(&mut self.outputs, slot, net, &pre, &post)?;
        self.detections.clear();
        let threshold = self.config.segmentation_threshold;
        for (mut d, mask) in found {
            let Some(&min) = pre.get(d.class_id as usize) else {
                continue; // a class beyond num-detected-classes
            };
            if d.confidence >= min {
                d.mask = mask
                    .map(|m| InstanceMask::from_values(m.width, m.height, &m.values, threshold));
                self.detections.push(d);
            }
        }
        Ok(())
    }

    /// Runs the custom classifier parser on slot `slot`: its attributes as classifications,
    /// labelled by the parser, else by the label file (line `attributeIndex`, class
    /// `attributeValue`). As nvinfer, a parser that leaves the description empty attaches
    /// nothing.
    fn custom_classifications(&mut self, slot: usize) -> Result<Vec<Classification>, String> {
        let custom = self.custom.as_ref().ok_or("no custom parser")?;
        let net = (
            self.network.width,
            self.network.height,
            self.network.channels,
        );
        let (attributes, description) = custom.classify(
            &mut self.outputs,
            slot,
            net,
            self.config.classifier_threshold,
        )?;
        if description.is_empty() {
            return Ok(Vec::new());
        }
        Ok(attributes
            .into_iter()
            .map(|a| {
                let layer = self
                    .layer_labels
                    .get(a.index as usize)
                    .map_or(&[][..], Vec::as_slice);
                Classification {
                    component_id: self.config.gie_unique_id,
                    class_id: a.value as i32,
                    label: a
                        .label
                        .map_or_else(|| label_for(layer, a.value), |l| Arc::from(l.as_str())),
                    prob: a.confidence,
                }
            })
            .collect())
    }

    /// The detections of slot `slot`, clustered and mapped to frame pixels through `lb`.
    fn detected_objects(
        &mut self,
        slot: usize,
        lb: Letterbox,
        frame_w: u32,
        frame_h: u32,
    ) -> Result<Vec<Object>, String> {
        self.settle_parser(slot)?;
        let attrs = &self.class_attrs;
        let all = self.config.class_attrs.all;
        let attrs_of = |class: u32| attrs.get(class as usize).copied().unwrap_or(all);
        self.detections.clear();
        let parser = self.parser.as_ref().ok_or("no output parser")?;
        parser.detections(
            &self.outputs,
            slot,
            (self.network.width, self.network.height),
            &attrs_of,
            &mut self.detections,
        )?;
        // As nvinfer and the custom parser path: classes from num-detected-classes on are not
        // reported.
        let configured = self.config.num_detected_classes;
        if configured > 0 {
            self.detections.retain(|d| d.class_id < configured);
        }
        self.objects_from_detections(lb, frame_w, frame_h, Some(slot))
    }

    /// The class map of slot `slot` from semantic segmentation output `output`, cropped to the
    /// cells that cover the frame (not the letterbox padding).
    /// The custom segmentation parser's class map of slot `slot`, cut to the frame's part of
    /// the network input (`lb`).
    fn custom_class_map(
        &mut self,
        slot: usize,
        lb: Letterbox,
    ) -> Result<ferrostream_core::mask::ClassMap, String> {
        let custom = self.custom.as_ref().ok_or("no custom parser")?;
        let (w, h) = (self.network.width, self.network.height);
        let classes = self.config.num_detected_classes;
        let map = custom.segment(
            &mut self.outputs,
            slot,
            (w, h, self.network.channels),
            self.config.segmentation_threshold,
            classes,
        )?;
        let (x0, y0) = (lb.pad_x as usize, lb.pad_y as usize);
        let (cols, rows) = (lb.content_w as usize, lb.content_h as usize);
        let mut cells = Vec::with_capacity(cols * rows);
        for y in y0..(y0 + rows).min(h as usize) {
            let row = &map[y * w as usize..(y + 1) * w as usize];
            cells.extend(row[x0..(x0 + cols).min(w as usize)].iter().map(|&c| {
                // A class past num-detected-classes is no class (nvinfer would read past its
                // tables).
                if c >= 0 && (c as u32) < classes {
                    c
                } else {
                    -1
                }
            }));
        }
        let cols = (x0 + cols).min(w as usize).saturating_sub(x0) as u32;
        let rows = (y0 + rows).min(h as usize).saturating_sub(y0) as u32;
        Ok(ferrostream_core::mask::ClassMap::from_cells(
            cols,
            rows,
            classes,
            self.config.gie_unique_id,
            &cells,
        ))
    }

    fn class_map(
        &self,
        output: usize,
        slot: usize,
        lb: Letterbox,
    ) -> Result<ferrostream_core::mask::ClassMap, String> {
        let o = &self.outputs[output];
        let hwc = self.config.segmentation_hwc;
        let (n, classes, h, w) = match (&o.shape[..], hwc) {
            (&[n, c, h, w], false) => (n, c, h, w),
            (&[n, h, w, c], true) => (n, c, h, w),
            _ => {
                return Err(format!(
                    "segmentation output {} {:?} is not {} (segmentation-output-order)",
                    o.name,
                    o.shape,
                    if hwc { "[N,H,W,C]" } else { "[N,C,H,W]" }
                ));
            }
        };
        if slot >= n {
            return Err(format!(
                "segmentation output {} {:?} has no item {slot}",
                o.name, o.shape
            ));
        }
        let (net_w, net_h) = (self.network.width as f32, self.network.height as f32);
        let (sx, sy) = (w as f32 / net_w, h as f32 / net_h);
        let x0 = (lb.pad_x as f32 * sx).floor() as usize;
        let y0 = (lb.pad_y as f32 * sy).floor() as usize;
        let x1 = (((lb.pad_x + lb.content_w) as f32 * sx).ceil() as usize).min(w);
        let y1 = (((lb.pad_y + lb.content_h) as f32 * sy).ceil() as usize).min(h);
        let region = (
            x0,
            y0,
            x1.saturating_sub(x0).max(1),
            y1.saturating_sub(y0).max(1),
        );
        let order = if hwc {
            crate::masks::ScoreOrder::Hwc
        } else {
            crate::masks::ScoreOrder::Chw
        };
        Ok(crate::masks::class_map(
            o.item(slot),
            order,
            (classes, h, w),
            region,
            self.config.segmentation_threshold,
            self.config.gie_unique_id,
        ))
    }

    /// YOLOv8-seg: the instance mask of every clustered detection, from the prototype masks
    /// of slot `slot`.
    fn prototype_masks(&mut self, protos: usize, slot: usize) -> Result<(), String> {
        let p = &self.outputs[protos];
        let [n, masks, h, w] = p.shape[..] else {
            return Err(format!(
                "prototype masks {} {:?} are not [N,M,h,w]",
                p.name, p.shape
            ));
        };
        if slot >= n {
            return Err(format!(
                "prototype masks {} {:?} have no item {slot}",
                p.name, p.shape
            ));
        }
        let data = p.item(slot);
        let net = (self.network.width, self.network.height);
        let threshold = self.config.segmentation_threshold;
        for d in &mut self.detections {
            d.mask = Some(crate::masks::from_prototypes(
                &d.coefficients,
                data,
                (masks, h, w),
                net,
                d.bbox,
                threshold,
            ));
        }
        Ok(())
    }

    /// Clusters `self.detections` and maps them to the pixels of a `frame_w` x `frame_h` frame
    /// through `lb`. A guessed parser's first detections are checked first; YOLOv8-seg masks
    /// are made for what clustering kept, from the prototypes of slot `slot`.
    fn objects_from_detections(
        &mut self,
        lb: Letterbox,
        frame_w: u32,
        frame_h: u32,
        slot: Option<usize>,
    ) -> Result<Vec<Object>, String> {
        self.check_first_detections()?;
        let component = self.config.gie_unique_id;
        let all = self.config.class_attrs.all;
        {
            let attrs = &self.class_attrs;
            let attrs_of = |class: u32| attrs.get(class as usize).copied().unwrap_or(all);
            cluster(&mut self.detections, self.config.cluster_mode, &attrs_of);
        }
        if let (Some(slot), Some(protos)) =
            (slot, self.parser.as_ref().and_then(|p| p.prototypes()))
        {
            self.prototype_masks(protos, slot)?;
        }
        let attrs = &self.class_attrs;
        let attrs_of = |class: u32| attrs.get(class as usize).copied().unwrap_or(all);
        let mut objects = Vec::with_capacity(self.detections.len());
        let filtered = &self.config.filter_out_class_ids;
        let diagonal = (frame_w as f32).hypot(frame_h as f32);
        for d in &self.detections {
            let (full, angle) = match d.angle {
                // Scaling may turn the box out of its upright form, and a model's box may be
                // any size: the form is restored and the sides bounded by the frame's diagonal
                // (an axis-aligned box is clipped to the frame instead, below).
                Some(angle) => {
                    let (b, angle) = lb.to_source_turned(d.bbox, angle);
                    match ferrostream_core::oriented::bounded(&b, angle, diagonal) {
                        Some((b, angle)) => (b, Some(angle)),
                        None => continue,
                    }
                }
                None => (lb.to_source(d.bbox), None),
            };
            // An oriented box is kept whole (clipping it would move its centre); what of it
            // lies in the frame is its turned extent.
            let (bbox, extent) = match angle {
                Some(angle) => (
                    full,
                    ferrostream_core::oriented::bounding(&full, angle)
                        .clipped(frame_w as f32, frame_h as f32),
                ),
                None => {
                    let clipped = full.clipped(frame_w as f32, frame_h as f32);
                    (clipped, clipped)
                }
            };
            // As nvinfer attaches objects: classes filtered out, then the size limits and the
            // region between roi-top-offset and roi-bottom-offset, in frame pixels.
            let a = attrs_of(d.class_id);
            // A box that is not finite has no area either.
            if extent.area().is_nan()
                || extent.area() <= 0.0
                || filtered.contains(&d.class_id)
                || !a.size_ok(bbox.width, bbox.height)
                || !a.in_roi(&extent, frame_h as f32)
            {
                continue;
            }
            let mut object = Object::new(
                d.class_id as i32,
                label_for(&self.labels, d.class_id),
                d.confidence,
                bbox,
                component,
            );
            if !d.landmarks.is_empty() {
                let points = d
                    .landmarks
                    .chunks_exact(2)
                    .flat_map(|p| {
                        let b = lb.to_source(BBox::new(p[0], p[1], 0.0, 0.0));
                        [b.left, b.top]
                    })
                    .collect();
                object
                    .attributes
                    .insert("landmarks".into(), AttributeValue::Floats(points));
            }
            object.angle = angle;
            object.mask = d.mask.as_ref().map(|m| crate::masks::moved(m, full, bbox));
            if !d.keypoints.is_empty() {
                object.keypoints = Some(Keypoints {
                    points: d
                        .keypoints
                        .chunks_exact(3)
                        .zip(&self.keypoint_names)
                        .map(|(k, name)| {
                            let p = lb.to_source(BBox::new(k[0], k[1], 0.0, 0.0));
                            Keypoint {
                                name: name.clone(),
                                x: p.left,
                                y: p.top,
                                confidence: k[2],
                            }
                        })
                        .collect(),
                    skeleton: self.skeleton.clone(),
                });
            }
            objects.push(object);
        }
        Ok(objects)
    }
}

/// The keypoint names and skeleton of `config` (`num-keypoints`, `keypoint-names`,
/// `keypoint-skeleton`; COCO's for 17 keypoints where none are given), checked against each
/// other.
fn keypoint_layout(config: &InferConfig) -> Result<(Vec<Arc<str>>, Skeleton), String> {
    let count = config.num_keypoints as usize;
    let names: Vec<Arc<str>> = if config.keypoint_names.is_empty() {
        ferrostream_core::keypoints::default_names(count)
    } else if config.keypoint_names.len() == count {
        config
            .keypoint_names
            .iter()
            .map(|n| Arc::from(n.as_str()))
            .collect()
    } else {
        return Err(format!(
            "keypoint-names names {} keypoints, num-keypoints is {count}",
            config.keypoint_names.len()
        ));
    };
    if config.keypoint_skeleton.is_empty() {
        return Ok((names, ferrostream_core::keypoints::default_skeleton(count)));
    }
    let skeleton = config
        .keypoint_skeleton
        .iter()
        .map(|text| {
            let limb = crate::parse::parse_limb(text)?;
            if limb.iter().any(|&i| i as usize >= count) {
                return Err(format!(
                    "keypoint-skeleton limb `{text}` names a keypoint past the {count} of \
                     num-keypoints"
                ));
            }
            Ok(limb)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((names, Arc::from(skeleton)))
}

/// What a model said about one image or object (see [`Inference::result`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemResult {
    /// A classifier's top class, when at or above `classifier-threshold` (a custom classifier
    /// parser's attributes, one each).
    pub classifications: Vec<Classification>,
    /// A detector's objects, in frame pixels.
    pub objects: Vec<Object>,
    /// With `output-tensor-meta`: each parsed output's values for this item, by output name.
    pub tensors: Vec<(Arc<str>, Vec<f32>)>,
    /// A semantic segmentation's class map over the frame.
    pub segmentation: Option<ferrostream_core::mask::ClassMap>,
}

impl ItemResult {
    /// Primary inference: the objects of a whole `frame_w` x `frame_h` frame. A classifier
    /// gives one frame-sized object carrying its classification (and, with
    /// `output-tensor-meta`, the raw outputs); a detector its objects.
    pub fn into_frame_objects(self, frame_w: u32, frame_h: u32) -> Vec<Object> {
        let Some(c) = self.classifications.first() else {
            return self.objects;
        };
        let frame_box = BBox::new(0.0, 0.0, frame_w as f32, frame_h as f32);
        let component = c.component_id;
        let mut object = Object::new(c.class_id, c.label.clone(), c.prob, frame_box, component);
        object.classifications = self.classifications;
        attach_tensors(&mut object, component, self.tensors);
        vec![object]
    }
}

/// The object attribute holding output `output` of component `component` (`output-tensor-meta`).
pub fn tensor_attribute(component: i32, output: &str) -> String {
    format!("tensor:{component}:{output}")
}

/// Attaches raw output tensors to `object` as `Floats` attributes named by
/// [`tensor_attribute`].
pub fn attach_tensors(object: &mut Object, component: i32, tensors: Vec<(Arc<str>, Vec<f32>)>) {
    for (name, values) in tensors {
        object.attributes.insert(
            tensor_attribute(component, &name),
            AttributeValue::Floats(values),
        );
    }
}

/// Finds a model file as the element does: as given, beside the configuration, in
/// FERROSTREAM_MODEL_DIR, in the model cache.
fn resolve_model(path: &std::path::Path) -> Result<PathBuf, SetupError> {
    ferrostream_core::paths::resolve_model(path).map_err(|tried| {
        SetupError::NotFound(format!(
            "model file not found: {} (looked in {}); scripts/fetch-models.sh downloads the \
             example models",
            path.display(),
            tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// The model on the inference server of `config.remote`; its "path" in messages is the server
/// and model name.
#[cfg(feature = "remote")]
fn kserve_engine(config: &InferConfig) -> Result<OpenedEngine, SetupError> {
    use crate::config::{ProcessMode, ServerFailure};
    use crate::engine::kserve::{Connection, FailurePolicy, KserveEngine, KserveOptions};
    use std::time::Duration;
    let r = &config.remote;
    let give_up = (r.give_up_s > 0).then(|| Duration::from_secs(r.give_up_s.into()));
    let options = KserveOptions {
        connection: Connection {
            url: r.server_url.clone(),
            timeout: Duration::from_millis(r.timeout_ms.into()),
            headers: r.headers.clone(),
            ca_file: r.ca_file.clone(),
            cert_file: r.cert_file.clone(),
            key_file: r.key_file.clone(),
        },
        model_name: r.model_name.clone(),
        model_version: r.model_version.clone(),
        max_message_bytes: (r.max_message_mib > 0).then_some((r.max_message_mib as usize) << 20),
        batch: config.batch_size.max(1) as usize,
        // Secondary mode runs engine calls one by one and waits for each: a dropped call would
        // be an error there, so it always waits (validate() warns about drop).
        policy: match (r.on_failure, config.process_mode) {
            (ServerFailure::Drop, ProcessMode::Primary) => FailurePolicy::Drop,
            _ => FailurePolicy::Wait { give_up },
        },
    };
    let engine = KserveEngine::open(options)?;
    let mut path = format!("{}/{}", r.server_url.trim_end_matches('/'), r.model_name);
    if !r.model_version.is_empty() {
        path.push_str(&format!("/{}", r.model_version));
    }
    Ok((Box::new(engine), PathBuf::from(path)))
}

/// The ONNX Runtime engine of `config` for the resolved `onnx` model.
fn ort_engine(
    config: &InferConfig,
    onnx: Option<PathBuf>,
    threads: usize,
    log: &EngineLog,
    warnings: &mut Vec<String>,
) -> Result<OpenedEngine, SetupError> {
    let Some(model) = onnx else {
        let hint = if config.model_engine_file.is_some() {
            " (model-engine-file is a TensorRT engine: it needs backend=tensorrt)"
        } else {
            ""
        };
        return Err(SetupError::Config(format!("no model: set onnx-file{hint}")));
    };
    let engine = OrtEngine::open(&OrtOptions {
        model: model.clone(),
        device: config.device,
        gpu_id: config.gpu_id,
        stream_priority: config.stream_priority,
        precision: config.tensorrt.network_mode,
        cuda_graph: config.cuda_graph,
        cuda_tuning: config.cuda_tuning,
        batch: config.batch_size.max(1) as usize,
        cache_dir: config
            .tensorrt
            .engine_cache_dir
            .clone()
            .unwrap_or_else(crate::cache::default_dir),
        threads,
        dla: config.tensorrt.enable_dla.then_some(DlaOptions {
            core: config.tensorrt.use_dla_core,
            int8: config.tensorrt.network_mode == NetworkMode::Int8,
        }),
    })?;
    for note in engine.notes() {
        if note.warning {
            warn(log, warnings, note.text.clone());
        } else {
            log(LogLevel::Info, &note.text);
        }
    }
    Ok((Box::new(engine), model))
}

/// A setting the engine does not honour as asked: logged, and kept for the application (the
/// element posts these as warning messages).
fn warn(log: &EngineLog, warnings: &mut Vec<String>, text: String) {
    log(LogLevel::Warning, &text);
    warnings.push(text);
}

/// An engine just opened, and the model file it read.
type OpenedEngine = (Box<dyn Engine>, PathBuf);

/// The engine `backend=auto` opens, and why: native TensorRT where it runs, else OpenVINO or
/// ONNX Runtime as [`choice::choose`] decides (ONNX Runtime when OpenVINO cannot open the model).
fn auto_engine(
    config: &InferConfig,
    onnx: Option<PathBuf>,
    nodes: usize,
    threads: usize,
    log: &EngineLog,
    warnings: &mut Vec<String>,
) -> Result<(OpenedEngine, String), SetupError> {
    use crate::engine::choice::{self, AutoChoice};
    use ferrostream_core::settings::Choice;
    let trt = match tensorrt_engine(config, onnx.clone(), log) {
        Ok(engine) => return Ok((engine, "tensorrt: native TensorRT runs here".into())),
        Err(why) => why,
    };
    let mut chosen = choice::choose(
        config.device,
        config.tensorrt.network_mode,
        &config.openvino_device,
        nodes,
        choice::onnxruntime_reaches_a_gpu,
        crate::engine::openvino::native_reduced_precision,
    );
    // Logs the choice and gives the engine message's `backend-choice`.
    let announce = |c: &AutoChoice| {
        log(
            LogLevel::Info,
            &format!(
                "backend=auto: {} ({}); TensorRT not used ({trt})",
                c.backend.entry().description,
                c.reason
            ),
        );
        format!("{}: {}", c.backend.nick(), c.reason)
    };
    if chosen.backend == Backend::OpenVino {
        match openvino_engine(config, onnx.clone(), nodes, threads, log, warnings) {
            Ok(engine) => return Ok((engine, announce(&chosen))),
            Err(e) => {
                warn(
                    log,
                    warnings,
                    format!(
                        "backend=auto: OpenVINO could not open the model ({e}); using ONNX Runtime"
                    ),
                );
                chosen = AutoChoice::onnxruntime(format!("OpenVINO could not open the model: {e}"));
            }
        }
    }
    let engine = ort_engine(config, onnx, threads, log, warnings)?;
    Ok((engine, announce(&chosen)))
}

/// The OpenVINO engine of `config`, on `openvino-device` at the precision of `network-mode`,
/// for a model of `nodes` nodes: compiled once, for `requests_at_open` requests, and how long
/// that took reported (a warning first where the model is large enough for it to take minutes).
fn openvino_engine(
    config: &InferConfig,
    onnx: Option<PathBuf>,
    nodes: usize,
    threads: usize,
    log: &EngineLog,
    warnings: &mut Vec<String>,
) -> Result<OpenedEngine, SetupError> {
    use crate::engine::choice::OPENVINO_MAX_NODES;
    use crate::engine::openvino::{OpenVinoEngine, OpenVinoOptions, Precision};
    let Some(model) = onnx else {
        return Err(SetupError::Config(
            "no model: backend=openvino reads onnx-file".into(),
        ));
    };
    let precision = match config.tensorrt.network_mode {
        NetworkMode::Fp32 => Precision::F32,
        NetworkMode::Fp16 => Precision::Reduced,
        NetworkMode::Int8 => Precision::Int8,
    };
    if nodes > OPENVINO_MAX_NODES {
        warn(
            log,
            warnings,
            format!(
                "backend=openvino: the model has {nodes} nodes; OpenVINO took 12-35 s to \
                 compile models of 2,000 and 4 to 18 minutes for 10,000, and the element starts \
                 only then (backend=onnxruntime opens them in seconds)"
            ),
        );
    }
    let requests = config.requests_at_open.max(1) as usize;
    let started = std::time::Instant::now();
    let (engine, warning) = OpenVinoEngine::open(&OpenVinoOptions {
        model: model.clone(),
        device: config.openvino_device.clone(),
        precision,
        batch: config.batch_size.max(1) as usize,
        threads,
        requests,
    })?;
    if let Some(warning) = warning {
        warn(log, warnings, warning);
    }
    if !engine.capped_loops().is_empty() {
        log(
            LogLevel::Info,
            &format!(
                "backend=openvino: {} capped at {} trips (OpenVINO cannot stop a running Loop)",
                engine.capped_loops().join(", "),
                crate::onnx::check::MAX_LOOP_TRIPS
            ),
        );
    }
    log(
        LogLevel::Info,
        &format!(
            "OpenVINO {} on {}: {} arithmetic; read and compiled {nodes} nodes for {requests} \
             request{} in {:.1} s",
            engine.description().version,
            config.openvino_device,
            engine.precision(),
            if requests == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        ),
    );
    Ok((Box::new(engine), model))
}

/// The native TensorRT engine of `config`: `model-engine-file`, the engine cache, or a build
/// from the resolved `onnx` model.
#[cfg(feature = "tensorrt")]
fn tensorrt_engine(
    config: &InferConfig,
    onnx: Option<PathBuf>,
    log: &EngineLog,
) -> Result<OpenedEngine, SetupError> {
    use crate::engine::tensorrt::{Severity, TrtEngine, TrtOptions};
    let options = TrtOptions {
        onnx: onnx.clone(),
        engine_file: config.model_engine_file.clone(),
        gpu_id: config.gpu_id,
        batch_size: config.batch_size,
        settings: config.tensorrt.clone(),
    };
    if options.onnx.is_none() && options.engine_file.is_none() {
        return Err(SetupError::Config(
            "no model: set onnx-file or model-engine-file".into(),
        ));
    }
    let trt_log = log.clone();
    let severity_log: Arc<crate::engine::tensorrt::LogFn> = Arc::new(move |s, m| {
        let level = match s {
            Severity::InternalError | Severity::Error => LogLevel::Error,
            Severity::Warning => LogLevel::Warning,
            Severity::Info => LogLevel::Info,
            Severity::Verbose => LogLevel::Debug,
        };
        trt_log(level, m)
    });
    let progress_log = log.clone();
    let engine = TrtEngine::open(&options, severity_log, &move |m: &str| {
        progress_log(LogLevel::Progress, m)
    })?;
    log(
        LogLevel::Info,
        &format!("TensorRT engine from {:?}", engine.origin()),
    );
    let model = onnx
        .or_else(|| config.model_engine_file.clone())
        .unwrap_or_default();
    Ok((Box::new(engine), model))
}

/// Without the `remote` feature there is no inference-server backend.
#[cfg(not(feature = "remote"))]
fn kserve_engine(_config: &InferConfig) -> Result<OpenedEngine, SetupError> {
    Err(SetupError::Unsupported(
        "this build has no inference-server backend (built without the `remote` feature); \
         rebuild with it to use backend=kserve or backend=triton"
            .into(),
    ))
}

/// Without the `tensorrt` feature there is no native TensorRT backend.
#[cfg(not(feature = "tensorrt"))]
fn tensorrt_engine(
    _config: &InferConfig,
    _onnx: Option<PathBuf>,
    _log: &EngineLog,
) -> Result<OpenedEngine, SetupError> {
    Err(SetupError::Unsupported(
        "this build has no native TensorRT backend (built without the `tensorrt` feature); \
         rebuild with `--features tensorrt` against the TensorRT SDK, or use \
         backend=onnxruntime (device=tensorrt selects ONNX Runtime's TensorRT execution \
         provider)"
            .into(),
    ))
}

/// Input shape of an engine call of `batch` frames: NCHW or NHWC.
fn input_shape(n: &NetworkInput, batch: usize) -> Vec<usize> {
    let (c, h, w) = (n.channels as usize, n.height as usize, n.width as usize);
    if n.planar {
        vec![batch, c, h, w]
    } else {
        vec![batch, h, w, c]
    }
}

/// Checks the class count the model's outputs declare ([`MAX_CLASSES`] at most), and compares
/// it with `num-detected-classes`. A disagreement is tolerated as nvinfer tolerates it (only
/// classes below `num-detected-classes` are reported, whatever the parser), with a warning.
fn check_classes(
    config: &InferConfig,
    parser: Option<&OutputParser>,
    outputs: &[crate::engine::TensorInfo],
) -> Result<Vec<String>, String> {
    let Some(model) = parser.and_then(|p| p.num_classes(outputs)) else {
        return Ok(Vec::new());
    };
    if model > MAX_CLASSES as usize {
        return Err(format!(
            "the model's outputs declare {model} classes, more than the {MAX_CLASSES} a model \
             may have"
        ));
    }
    let configured = config.num_detected_classes as usize;
    let detector = matches!(
        config.network_type,
        NetworkType::Detector | NetworkType::InstanceSegmentation
    );
    if !detector || configured == 0 || configured == model {
        return Ok(Vec::new());
    }
    Ok(vec![if configured < model {
        format!(
            "num-detected-classes={configured} but the model's outputs have {model} classes: \
             only classes 0 to {} are reported, as nvinfer does",
            configured - 1
        )
    } else {
        format!(
            "num-detected-classes={configured} but the model's outputs have {model} classes: \
             classes {model} to {} can never be detected",
            configured - 1
        )
    }])
}

/// The thresholds and limits of every class the model, the configuration or the labels know.
fn class_attrs(
    config: &InferConfig,
    parser: Option<&OutputParser>,
    outputs: &[crate::engine::TensorInfo],
    labels: &[Arc<str>],
) -> Vec<ClassAttrs> {
    let num_classes = [
        parser.and_then(|p| p.num_classes(outputs)).unwrap_or(0),
        config.num_detected_classes as usize,
        labels.len(),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    config.class_attrs.resolve(num_classes.max(1))
}

/// Indices of the engine outputs the parser reads: `output-blob-names` in its order, else all.
fn considered_outputs(
    config: &InferConfig,
    description: &EngineDescription,
) -> Result<Vec<usize>, SetupError> {
    if config.output_blob_names.is_empty() {
        return Ok((0..description.outputs.len()).collect());
    }
    config
        .output_blob_names
        .iter()
        .map(|name| {
            description
                .outputs
                .iter()
                .position(|o| &o.name == name)
                .ok_or_else(|| {
                    SetupError::Config(format!(
                        "output-blob-names: the model has no output `{name}` (outputs: {})",
                        description
                            .outputs
                            .iter()
                            .map(|o| o.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
}

/// Works out the network input from the model's input and the configuration. Returns it and the
/// model's fixed batch size, if it has one.
fn network_input(
    config: &InferConfig,
    description: &EngineDescription,
) -> Result<(NetworkInput, Option<usize>), SetupError> {
    let input = &description.input;
    let err = |m: String| SetupError::Config(format!("model input {input}: {m}"));
    let [batch, d1, d2, d3] = input.dims[..] else {
        return Err(err("expected a 4-dimensional image input".into()));
    };
    let is_channels = |d: Option<usize>| matches!(d, Some(1) | Some(3));
    let planar = match config.network_input_order {
        InputOrder::Nchw => true,
        InputOrder::Nhwc => false,
        InputOrder::Auto if is_channels(d1) => true,
        InputOrder::Auto if is_channels(d3) => false,
        InputOrder::Auto => {
            return Err(err(
                "cannot tell NCHW from NHWC; set network-input-order".into()
            ));
        }
    };
    let (c, h, w) = if planar { (d1, d2, d3) } else { (d3, d1, d2) };
    let dims = match (c, h, w, config.infer_dims) {
        (_, Some(h), Some(w), Some([ic, ih, iw])) if (ih as usize, iw as usize) != (h, w) => {
            return Err(err(format!(
                "infer-dims {ic};{ih};{iw} disagree with the model's fixed size {h}x{w}"
            )));
        }
        (c, Some(h), Some(w), _) => (c, h, w),
        (c, _, _, Some([ic, ih, iw])) => (c.or(Some(ic as usize)), ih as usize, iw as usize),
        _ => {
            return Err(err(
                "the model's height and width are dynamic; set infer-dims (C;H;W)".into(),
            ));
        }
    };
    if dims.1.max(dims.2) > MAX_NETWORK_SIDE || dims.1 == 0 || dims.2 == 0 {
        return Err(err(format!(
            "a network input of {}x{} pixels: each side must be 1 to {MAX_NETWORK_SIDE}",
            dims.2, dims.1
        )));
    }
    let channels = dims.0.unwrap_or(3);
    let expected = if config.model_color_format == ColorFormat::Gray {
        1
    } else {
        3
    };
    if channels != expected {
        return Err(err(format!(
            "the model takes {channels} channel(s) but model-color-format {:?} gives {expected}",
            config.model_color_format
        )));
    }
    let offsets = match config.offsets[..] {
        [] => [0.0; 3],
        [o] => [o; 3],
        [a, b, c] => [a, b, c],
        ref other => {
            return Err(SetupError::Config(format!(
                "offsets: expected 1 or 3 values, found {}",
                other.len()
            )));
        }
    };
    Ok((
        NetworkInput {
            width: dims.2 as u32,
            height: dims.1 as u32,
            channels: channels as u32,
            planar,
            color: config.model_color_format,
            scale: config.net_scale_factor,
            offsets,
            maintain_aspect_ratio: config.maintain_aspect_ratio,
            symmetric_padding: config.symmetric_padding,
        },
        batch,
    ))
}

#[cfg(test)]
mod tests {
    use std::f32::consts::FRAC_PI_4;

    use super::*;
    use crate::engine::TensorInfo;

    fn description(dims: &[Option<usize>], ty: ElementType) -> EngineDescription {
        EngineDescription {
            backend: "test",
            providers: vec!["CPU".into()],
            version: "0".into(),
            input: TensorInfo {
                name: "in".into(),
                element_type: ty,
                dims: dims.to_vec(),
            },
            outputs: vec![],
        }
    }

    /// An engine whose outputs are given: what a model with these outputs would return.
    struct GivenOutputs {
        description: EngineDescription,
        outputs: Vec<OutputTensor>,
    }

    impl Engine for GivenOutputs {
        fn description(&self) -> &EngineDescription {
            &self.description
        }

        fn run(
            &mut self,
            _: InputData<'_>,
            _: &[usize],
            outputs: &mut Vec<OutputTensor>,
        ) -> Result<(), EngineError> {
            outputs.clone_from(&self.outputs);
            Ok(())
        }
    }

    /// One 64x64 grey frame through a detector whose outputs are `outputs`, declared with
    /// `dims`; the frame's objects, or the error, and what was logged.
    fn detect(
        dims: &[Option<usize>],
        outputs: Vec<OutputTensor>,
    ) -> (Result<Vec<Object>, String>, Vec<String>) {
        detect_with(InferConfig::default(), dims, outputs)
    }

    /// [`detect`] with `config`.
    fn detect_with(
        config: InferConfig,
        dims: &[Option<usize>],
        outputs: Vec<OutputTensor>,
    ) -> (Result<Vec<Object>, String>, Vec<String>) {
        let mut description =
            description(&[Some(1), Some(3), Some(64), Some(64)], ElementType::F32);
        description.outputs = outputs
            .iter()
            .map(|o| TensorInfo {
                name: o.name.clone(),
                element_type: ElementType::F32,
                dims: dims.to_vec(),
            })
            .collect();
        let engine = GivenOutputs {
            description,
            outputs,
        };
        let mut inference =
            Inference::with_engine(config, "given".into(), Box::new(engine)).unwrap();
        let logged = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = logged.clone();
        inference.log = Arc::new(move |_, m| sink.lock().unwrap().push(m.to_string()));
        let pixels = vec![128u8; 64 * 64 * 3];
        let image =
            SourceImage::packed(crate::preprocess::PackedImage::rgb(&pixels, 64, 64)).unwrap();
        inference.preprocess(0, &image, BBox::new(0.0, 0.0, 64.0, 64.0));
        inference.infer(1).unwrap();
        let result = inference.result(0, 64, 64).map(|r| r.objects);
        let logged = logged.lock().unwrap().clone();
        (result, logged)
    }

    fn rows(name: &str, shape: &[usize], rows: &[[f32; 6]]) -> OutputTensor {
        let mut data = vec![0.0; shape.iter().product()];
        for (i, r) in rows.iter().enumerate() {
            data[i * 6..i * 6 + 6].copy_from_slice(r);
        }
        OutputTensor {
            name: name.into(),
            shape: shape.to_vec(),
            data,
        }
    }

    #[test]
    fn a_guess_whose_first_detections_are_not_detections_is_refused() {
        // 2000 anchors of 6 values are guessed to be YOLOv5; these hold logits, not
        // probabilities, so the "confidence" is 16.
        let outputs = vec![rows(
            "out",
            &[1, 2000, 6],
            &[[30.0, 30.0, 10.0, 10.0, 8.0, 2.0]],
        )];
        let (result, _) = detect(&[Some(1), Some(2000), Some(6)], outputs);
        let err = result.unwrap_err();
        assert!(
            err.contains("guessed to be YoloV5")
                && err.contains("a confidence of 16")
                && err.contains("out [1, 2000, 6]")
                && err.contains("Set output-parser"),
            "{err}"
        );
        // Boxes far outside the network input are refused the same way.
        let outputs = vec![rows(
            "out",
            &[1, 2000, 6],
            &[[900.0, 30.0, 10.0, 10.0, 0.9, 0.9]],
        )];
        let err = detect(&[Some(1), Some(2000), Some(6)], outputs)
            .0
            .unwrap_err();
        assert!(err.contains("far outside the 64x64 network input"), "{err}");
        // Real detections pass.
        let outputs = vec![rows(
            "out",
            &[1, 2000, 6],
            &[[30.0, 30.0, 10.0, 10.0, 0.9, 0.9]],
        )];
        let objects = detect(&[Some(1), Some(2000), Some(6)], outputs).0.unwrap();
        assert_eq!(objects.len(), 1);
    }

    /// One YOLOv8-OBB output `[1, 6, anchors]` (one class) holding `columns` (cx, cy, w, h,
    /// score, angle).
    fn obb_output(anchors: usize, columns: &[[f32; 6]]) -> OutputTensor {
        let mut data = vec![0.0; 6 * anchors];
        for (a, c) in columns.iter().enumerate() {
            for (row, v) in c.iter().enumerate() {
                data[row * anchors + a] = *v;
            }
        }
        OutputTensor {
            name: "out".into(),
            shape: vec![1, 6, anchors],
            data,
        }
    }

    fn obb_config() -> InferConfig {
        InferConfig {
            output_parser: crate::config::ParserKind::YoloV8Obb,
            num_detected_classes: 1,
            ..Default::default()
        }
    }

    #[test]
    fn oriented_boxes_of_any_size_are_bounded_by_the_frame() {
        // A 3e38 box turned by 0.3 beside a real one: both kept, the huge one as large as the
        // frame's diagonal about its centre, with finite corners.
        let outputs = vec![obb_output(
            64,
            &[
                [32.0, 32.0, 3e38, 3e38, 0.9, 0.3],
                [10.0, 10.0, 8.0, 4.0, 0.8, 0.1],
            ],
        )];
        let objects = detect_with(obb_config(), &[Some(1), Some(6), Some(64)], outputs)
            .0
            .unwrap();
        assert_eq!(objects.len(), 2, "{objects:?}");
        let diagonal = 64f32.hypot(64.0);
        for o in &objects {
            let b = o.bbox();
            assert!(b.width <= diagonal && b.height <= diagonal, "{b:?}");
            assert!(o.corners().iter().flatten().all(|v| v.is_finite()), "{b:?}");
            let angle = o.angle.unwrap();
            assert!((-FRAC_PI_4..FRAC_PI_4).contains(&angle), "{angle}");
        }
        let huge = objects.iter().find(|o| o.confidence == 0.9).unwrap().bbox();
        assert_eq!(
            (huge.left + huge.width / 2.0, huge.top + huge.height / 2.0),
            (32.0, 32.0)
        );
    }

    #[test]
    fn a_named_family_on_another_family_s_outputs_is_refused() {
        // A pose model's output read as oriented boxes: keypoint coordinates land in the class
        // scores, giving "confidences" in the hundreds.
        let outputs = vec![obb_output(64, &[[32.0, 32.0, 10.0, 10.0, 961.0, 0.1]])];
        let err = detect_with(obb_config(), &[Some(1), Some(6), Some(64)], outputs)
            .0
            .unwrap_err();
        assert!(
            err.contains("output-parser reads the outputs (out [1, 6, 64]) as YoloV8Obb")
                && err.contains("a confidence of 961"),
            "{err}"
        );
    }

    #[test]
    fn symbolic_outputs_are_parsed_from_the_first_real_shapes_or_named_in_the_error() {
        let outputs = vec![rows(
            "out",
            &[1, 100, 6],
            &[[10.0, 10.0, 30.0, 40.0, 0.9, 1.0]],
        )];
        let (result, logged) = detect(&[None, None, None], outputs);
        let objects = result.unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].class_id, 1);
        assert!(
            logged[0].contains("chosen from the first outputs (out f32[1,100,6])"),
            "{logged:?}"
        );
        // Shapes that fit no parser: the error names them.
        let outputs = vec![rows("out", &[1, 2, 3, 4, 6], &[])];
        let err = detect(&[None, None, None, None, None], outputs)
            .0
            .unwrap_err();
        assert!(
            err.contains("out f32[1,2,3,4,6]") && err.contains("set output-parser"),
            "{err}"
        );
    }

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name)
    }

    /// A classifier fixture with `backend`, and the messages opening it logged.
    fn open(backend: Backend) -> (Result<Inference, SetupError>, Vec<(LogLevel, String)>) {
        let config = InferConfig {
            onnx_file: Some(fixture("f16_channel_mean.onnx")),
            network_type: crate::config::NetworkType::Classifier,
            backend,
            device: crate::config::Device::Cpu,
            ..Default::default()
        };
        let messages = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = messages.clone();
        let log: EngineLog =
            Arc::new(move |level, m: &str| sink.lock().unwrap().push((level, m.to_string())));
        let result = Inference::open(config, 1, log);
        let messages = messages.lock().unwrap().clone();
        (result, messages)
    }

    #[test]
    fn auto_backend_says_why_tensorrt_was_not_used_and_runs_on_onnx_runtime() {
        // No TensorRT here (or a build without it): auto falls back, saying why; FP32 (the
        // default) stays on ONNX Runtime.
        let (inference, messages) = open(Backend::Auto);
        let inference = inference.unwrap();
        assert_eq!(inference.description().backend, "onnxruntime");
        let choice = inference.backend_choice().unwrap();
        assert!(
            choice.starts_with("onnxruntime: network-mode=fp32"),
            "{choice}"
        );
        let (level, why) = messages
            .iter()
            .find(|(_, m)| m.starts_with("backend=auto: ONNX Runtime (network-mode=fp32"))
            .expect("the reason for the backend");
        assert_eq!(*level, LogLevel::Info);
        assert!(why.contains("; TensorRT not used ("), "{why}");
        if cfg!(feature = "tensorrt") {
            assert!(why.contains("TensorRT is not available"), "{why}");
        } else {
            assert!(why.contains("no native TensorRT backend"), "{why}");
        }
    }

    #[test]
    fn tensorrt_backend_without_tensorrt_is_a_clear_error() {
        let (result, _) = open(Backend::TensorRt);
        let err = result.err().expect("no TensorRT here").to_string();
        if cfg!(feature = "tensorrt") {
            assert!(err.starts_with("TensorRT is not available"), "{err}");
        } else {
            assert!(err.contains("--features tensorrt"), "{err}");
        }
    }

    #[test]
    fn nhwc_dynamic_input_needs_infer_dims() {
        let d = description(&[None, None, None, Some(3)], ElementType::U8);
        let err = network_input(&InferConfig::default(), &d).unwrap_err();
        assert!(err.to_string().contains("set infer-dims"), "{err}");
        let config = InferConfig {
            infer_dims: Some([3, 300, 320]),
            ..Default::default()
        };
        let (net, batch) = network_input(&config, &d).unwrap();
        assert_eq!(
            (net.width, net.height, net.channels, net.planar, batch),
            (320, 300, 3, false, None)
        );
    }

    #[test]
    fn fixed_nchw_input_and_mismatches() {
        let d = description(&[Some(1), Some(3), Some(224), Some(224)], ElementType::F32);
        let (net, batch) = network_input(&InferConfig::default(), &d).unwrap();
        assert!(net.planar);
        assert_eq!((net.width, batch), (224, Some(1)));
        let config = InferConfig {
            infer_dims: Some([3, 100, 100]),
            ..Default::default()
        };
        assert!(
            network_input(&config, &d)
                .unwrap_err()
                .to_string()
                .contains("disagree")
        );
        let gray = InferConfig {
            model_color_format: ColorFormat::Gray,
            ..Default::default()
        };
        assert!(
            network_input(&gray, &d)
                .unwrap_err()
                .to_string()
                .contains("channel")
        );
        let offsets = InferConfig {
            offsets: vec![1.0, 2.0],
            ..Default::default()
        };
        assert!(
            network_input(&offsets, &d)
                .unwrap_err()
                .to_string()
                .contains("offsets")
        );
    }
}
