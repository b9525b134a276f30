// SPDX-License-Identifier: MIT OR Apache-2.0
//! Inference configuration: nvinfer-compatible keys, from INI files and element properties.
//!
//! Every setting has one name, used both as the `[property]` key of a configuration file and as
//! the element property. Values set as properties override the file. Relative paths in a file are
//! relative to the file. Unknown keys produce a warning naming the key; malformed values an error
//! naming file, line and key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrostream_core::settings::Props;

pub use crate::layout::{BoxCoords, BoxFormat};
use crate::layout::{Columns, CustomKind};

ferrostream_core::choice_enum! {
    /// Which inference implementation runs the model.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum Backend: "GstRsTrtInferBackend" {
        /// Native TensorRT when available, else OpenVINO or ONNX Runtime as
        /// [`crate::engine::choice::choose`] decides (ONNX Runtime choosing its device as
        /// `device` says).
        #[default]
        Auto = 0 => ("auto", "Auto: best available backend"),
        OnnxRuntime = 1 => ("onnxruntime", "ONNX Runtime"),
        TensorRt = 2 => ("tensorrt", "Native TensorRT"),
        /// A KServe v2 / Open Inference Protocol server over gRPC (`server-url`, `model-name`).
        Kserve = 3 => ("kserve", "KServe v2 inference server (gRPC)"),
        /// The same as `kserve`: Triton Inference Server speaks KServe v2.
        Triton = 4 => ("triton", "Triton Inference Server (KServe v2 gRPC)"),
        /// OpenVINO on `openvino-device` (CPU, Intel GPU or NPU).
        OpenVino = 5 => ("openvino", "OpenVINO"),
    }
}

impl Backend {
    /// Whether the model runs on an inference server.
    pub fn is_remote(self) -> bool {
        matches!(self, Backend::Kserve | Backend::Triton)
    }
}

ferrostream_core::choice_enum! {
    /// What a batch does when the inference server cannot be reached or does not answer within
    /// `server-timeout`.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum ServerFailure: "GstRsTrtInferServerFailure" {
        /// Retry until the server answers, holding the stream back (back-pressure); an error after
        /// `server-give-up` seconds.
        #[default]
        Wait = 0 => ("wait", "Wait: retry, holding the stream back"),
        /// Pass the frames on without results and count them; an error after `server-give-up`
        /// seconds without an answer.
        Drop = 1 => ("drop", "Drop: pass frames on without results, counted"),
    }
}

/// Where and how a remote backend (`backend=kserve`) reaches its model.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSettings {
    /// `host:port`, `http://`/`grpc://` or, for TLS, `https://`/`grpcs://`.
    pub server_url: String,
    pub model_name: String,
    /// Empty: the server's choice.
    pub model_version: String,
    /// Each call's deadline, in milliseconds.
    pub timeout_ms: u32,
    /// `name=value` pairs sent with every call (`server-headers`, `;`-separated).
    pub headers: Vec<(String, String)>,
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Batches sent and not yet answered, at most.
    pub requests_in_flight: u32,
    pub on_failure: ServerFailure,
    /// Seconds without an answer after which the element fails (0: never).
    pub give_up_s: u32,
    /// The largest answer accepted, in MiB (0: four times the largest answer the model's
    /// metadata allows for a batch, at least 16 MiB).
    pub max_message_mib: u32,
}

/// The largest `server-max-message-mib`: gRPC frames messages with a 32-bit length.
pub const MAX_MESSAGE_MIB: u32 = 2047;

impl Default for RemoteSettings {
    fn default() -> Self {
        Self {
            server_url: String::new(),
            model_name: String::new(),
            model_version: String::new(),
            timeout_ms: 5000,
            headers: Vec::new(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            requests_in_flight: 4,
            on_failure: ServerFailure::Wait,
            give_up_s: 60,
            max_message_mib: 0,
        }
    }
}

/// Parses `server-headers`: `name=value` pairs separated by `;`.
pub fn server_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), value.trim().to_string()))
            }
            _ => Err(format!("expected name=value, found {pair:?}")),
        })
        .collect()
}

ferrostream_core::choice_enum! {
    /// Where ONNX Runtime executes the model (its execution provider).
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum Device: "GstRsTrtInferDevice" {
        /// TensorRT execution provider, else CUDA, else CPU: whatever the installed runtime has.
        #[default]
        Auto = 0 => ("auto", "Auto: best execution provider available"),
        Cpu = 1 => ("cpu", "CPU execution provider"),
        Cuda = 2 => ("cuda", "CUDA execution provider"),
        TensorRt = 3 => ("tensorrt", "TensorRT execution provider"),
    }
}

ferrostream_core::choice_enum! {
    /// nvinfer `network-type`.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum NetworkType: "GstRsTrtInferNetworkType" {
        #[default]
        Detector = 0 => ("detector", "Detector"),
        Classifier = 1 => ("classifier", "Classifier"),
        /// A class per pixel: `[N,C,H,W]` scores become the frame's class map.
        Segmentation = 2 => ("segmentation", "Semantic segmentation"),
        /// A detector whose objects carry instance masks (YOLOv8-seg, or an instance-mask parser).
        InstanceSegmentation = 3 => ("instance-segmentation", "Instance segmentation"),
        /// No parser: the raw outputs are attached to the objects (`output-tensor-meta`), e.g. the
        /// appearance embeddings of a re-identification model.
        Other = 100 => ("other", "Other: raw output tensors only"),
    }
}

ferrostream_core::choice_enum! {
    /// nvinfer `network-mode`: the precision TensorRT builds an engine for.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum NetworkMode: "GstRsTrtInferNetworkMode" {
        #[default]
        Fp32 = 0 => ("fp32", "FP32"),
        Int8 = 1 => ("int8", "INT8 (with int8-calib-file, or a model with Q/DQ nodes)"),
        Fp16 = 2 => ("fp16", "FP16"),
    }
}

ferrostream_core::choice_enum! {
    /// `cuda-graph`: whether ONNX Runtime's CUDA provider runs the model as a captured CUDA
    /// graph (every batch then runs at `batch-size`).
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum CudaGraphMode: "GstRsTrtInferCudaGraph" {
        #[default]
        Off = 0 => ("off", "Off: plain runs"),
        On = 1 => ("on", "On: capture, or warn and run without when the model cannot be captured"),
        Auto = 2 => ("auto", "Auto: capture when the model allows it and (with cuda-tuning) it is faster; else plain runs, said in the log"),
    }
}

ferrostream_core::choice_enum! {
    /// nvinfer `process-mode`: whole frames, or the objects an upstream detector found.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum ProcessMode: "GstRsTrtInferProcessMode" {
        #[default]
        Primary = 1 => ("primary", "Primary: whole frames"),
        Secondary = 2 => ("secondary", "Secondary: objects of upstream detectors"),
    }
}

ferrostream_core::choice_enum! {
    /// nvinfer `model-color-format`.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum ColorFormat: "GstRsTrtInferColorFormat" {
        #[default]
        Rgb = 0 => ("rgb", "RGB"),
        Bgr = 1 => ("bgr", "BGR"),
        Gray = 2 => ("gray", "Grayscale"),
    }
}

ferrostream_core::choice_enum! {
    /// nvinfer `network-input-order`; `auto` reads it from the model's input shape.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum InputOrder: "GstRsTrtInferInputOrder" {
        #[default]
        Auto = 2 => ("auto", "From the model's input shape"),
        Nchw = 0 => ("nchw", "NCHW"),
        Nhwc = 1 => ("nhwc", "NHWC"),
    }
}

ferrostream_core::choice_enum! {
    /// How raw output tensors become objects.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum ParserKind: "GstRsTrtInferOutputParser" {
        /// Guessed from the number and shapes of the model's outputs.
        #[default]
        Auto = 0 => ("auto", "Guess from the output shapes"),
        Ssd = 1 => ("ssd", "SSD: per-class scores [N,B,C] + normalised boxes [N,B,(1,)4]"),
        TfOdApi = 2 => ("tf-od-api", "TensorFlow Object Detection API: boxes, scores, classes, num_detections"),
        YoloV5 = 3 => ("yolov5", "YOLOv5: [N,B,5+C]"),
        YoloV8 = 4 => ("yolov8", "YOLOv8: [N,4+C,B]"),
        CenterFace = 5 => ("centerface", "CenterFace heatmaps"),
        Classifier = 6 => ("classifier", "Classifier: [N,C] scores"),
        /// Nothing is parsed (network-type other): the raw tensors are the result.
        None = 7 => ("none", "None: raw output tensors (network-type other)"),
        Detr = 8 => ("detr", "DETR / RT-DETR: [N,K,4+C] rows of normalised cx,cy,w,h and C class scores"),
        EndToEnd = 9 => ("end-to-end", "End-to-end rows [N,K,6|7] or [K,7]: box, score, class (end-to-end-columns)"),
        BoxesScoresLabels = 10 => ("boxes-scores-labels", "Boxes [N,K,4], scores [N,K] and labels [N,K] (DETR-style exports)"),
        Yolox = 11 => ("yolox", "YOLOX: [N,A,5+C] grid offsets (yolox-strides)"),
        /// An nvinfer custom parser library (`custom-lib-path` and a `parse-*-func-name`); chosen
        /// by those keys, not by this one.
        Custom = 12 => ("custom", "nvinfer custom parser library (custom-lib-path)"),
        YoloV8Seg = 13 => ("yolov8-seg", "YOLOv8-seg: [N,4+C+M,B] rows and [N,M,h,w] prototype masks"),
        /// Semantic segmentation (network-type segmentation): `[N,C,H,W]` class scores.
        Segmentation = 14 => ("segmentation", "Semantic segmentation: [N,C,H,W] scores"),
        YoloV8Pose = 15 => ("yolov8-pose", "YOLOv8/YOLO11-pose: [N,4+C+3K,B] rows of box, class scores and K keypoints (x, y, confidence)"),
        YoloV8Obb = 16 => ("yolov8-obb", "YOLOv8/YOLO11-OBB: [N,4+C+1,B] rows of box, class scores and angle (oriented boxes)"),
    }
}

ferrostream_core::choice_enum! {
    /// nvinfer `cluster-mode`: how the raw detections of each class become objects.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum ClusterMode: "GstRsTrtInferClusterMode" {
        /// OpenCV's groupRectangles (`group-threshold`, `eps`).
        GroupRectangles = 0 => ("group-rectangles", "Group similar rectangles (OpenCV groupRectangles)"),
        /// DBSCAN (`eps`, `minBoxes`, `dbscan-min-score`).
        Dbscan = 1 => ("dbscan", "DBSCAN"),
        #[default]
        Nms = 2 => ("nms", "Non-maximum suppression per class"),
        /// DBSCAN, then non-maximum suppression of what it kept.
        Hybrid = 3 => ("dbscan-nms", "DBSCAN, then non-maximum suppression"),
        None = 4 => ("none", "No clustering"),
    }
}

ferrostream_core::choice_enum! {
    /// Whether classifier outputs need a softmax.
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum Softmax: "GstRsTrtInferClassifierSoftmax" {
        /// Apply it unless the outputs already form a probability distribution.
        #[default]
        Auto = 0 => ("auto", "Auto: unless outputs already sum to 1"),
        Always = 1 => ("always", "Always (outputs are logits)"),
        Never = 2 => ("never", "Never (outputs are probabilities)"),
    }
}

/// Detection thresholds and size limits of one class (`[class-attrs-*]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassAttrs {
    pub pre_cluster_threshold: f32,
    pub post_cluster_threshold: f32,
    pub nms_iou_threshold: f32,
    /// Objects kept per class after clustering, by confidence; negative keeps all.
    pub topk: i32,
    /// Size limits in frame pixels, applied to clustered objects (as nvinfer); a max of 0
    /// means no limit.
    pub detected_min_w: f32,
    pub detected_min_h: f32,
    pub detected_max_w: f32,
    pub detected_max_h: f32,
    /// Similarity of boxes grouped by cluster modes 0, 1 and 3 (`eps`).
    pub eps: f32,
    /// Cluster mode 0: groups of at most this many boxes are dropped (`group-threshold`).
    pub group_threshold: i32,
    /// Cluster modes 1 and 3: boxes a dense region needs (`minBoxes`).
    pub min_boxes: i32,
    /// Cluster modes 1 and 3: the least sum of confidences of a cluster (`dbscan-min-score`).
    pub dbscan_min_score: f32,
    /// Objects whose box starts less than this far below the top of the frame, or ends less
    /// than `roi_bottom_offset` above its bottom, are dropped (frame pixels, as nvinfer).
    pub roi_top_offset: f32,
    pub roi_bottom_offset: f32,
}

impl Default for ClassAttrs {
    /// nvinfer's defaults.
    fn default() -> Self {
        Self {
            pre_cluster_threshold: 0.2,
            post_cluster_threshold: 0.0,
            nms_iou_threshold: 0.3,
            topk: -1,
            detected_min_w: 0.0,
            detected_min_h: 0.0,
            detected_max_w: 0.0,
            detected_max_h: 0.0,
            eps: 0.0,
            group_threshold: 0,
            min_boxes: 0,
            dbscan_min_score: 0.0,
            roi_top_offset: 0.0,
            roi_bottom_offset: 0.0,
        }
    }
}

impl ClassAttrs {
    /// Whether `b` (frame pixels, on a frame `frame_h` high) lies inside the region between
    /// `roi-top-offset` and `roi-bottom-offset`.
    pub fn in_roi(&self, b: &ferrostream_core::BBox, frame_h: f32) -> bool {
        b.top >= self.roi_top_offset && b.bottom() <= frame_h - self.roi_bottom_offset
    }

    /// Whether a box of `w` x `h` frame pixels passes the size limits.
    pub fn size_ok(&self, w: f32, h: f32) -> bool {
        w >= self.detected_min_w
            && h >= self.detected_min_h
            && (self.detected_max_w <= 0.0 || w <= self.detected_max_w)
            && (self.detected_max_h <= 0.0 || h <= self.detected_max_h)
    }
}

/// `[class-attrs-all]` plus the entries of `[class-attrs-N]` sections, which override it key by
/// key for class N.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassAttrsTable {
    pub all: ClassAttrs,
    /// The keys each `[class-attrs-N]` section gives.
    pub(crate) per_class: BTreeMap<u32, Props<ClassAttrs>>,
}

/// Everything `rstrtinfer` needs to know, resolved from a configuration file and properties.
#[derive(Debug, Clone, PartialEq)]
pub struct InferConfig {
    pub onnx_file: Option<PathBuf>,
    pub model_engine_file: Option<PathBuf>,
    pub labelfile_path: Option<PathBuf>,
    pub backend: Backend,
    pub device: Device,
    pub gpu_id: u32,
    /// The OpenVINO device of `backend=openvino` (`CPU`, `GPU`, `NPU`, `AUTO`, ...).
    pub openvino_device: String,
    pub batch_size: u32,
    pub gie_unique_id: i32,
    pub interval: u32,
    pub network_type: NetworkType,
    pub num_detected_classes: u32,
    pub model_color_format: ColorFormat,
    pub maintain_aspect_ratio: bool,
    pub symmetric_padding: bool,
    pub network_input_order: InputOrder,
    pub net_scale_factor: f32,
    pub offsets: Vec<f32>,
    /// `C;H;W`, for models whose input dims are dynamic.
    pub infer_dims: Option<[u32; 3]>,
    pub output_blob_names: Vec<String>,
    pub output_parser: ParserKind,
    pub cluster_mode: ClusterMode,
    pub box_format: BoxFormat,
    pub box_coordinates: BoxCoords,
    /// Column order of end-to-end rows; `None` guesses from the row width.
    pub end_to_end_columns: Option<Columns>,
    /// Strides of a YOLOX head's grids.
    pub yolox_strides: Vec<u32>,
    /// Keypoints per object of a pose model (`num-keypoints`).
    pub num_keypoints: u32,
    /// Their names (`keypoint-names`; empty: COCO's for 17, else `point_<i>`).
    pub keypoint_names: Vec<String>,
    /// The limbs drawn between them, as `a-b` pairs of indices (`keypoint-skeleton`; empty:
    /// COCO's for 17, else none).
    pub keypoint_skeleton: Vec<String>,
    /// Detected classes left out of the results (`filter-out-class-ids`).
    pub filter_out_class_ids: Vec<u32>,
    /// An nvinfer custom parser library and the function in it that parses the outputs.
    pub custom_lib_path: Option<PathBuf>,
    pub custom_parser: Option<(CustomKind, String)>,
    /// Major version of the DeepStream headers the parser library was built against
    /// (`custom-lib-deepstream-version`): 9 and later add a rotation angle to each object.
    pub custom_lib_deepstream_version: u32,
    pub classifier_threshold: f32,
    /// Segmentation: the least score of a pixel's class (semantic), the least mask value of an
    /// object's pixel (instance masks).
    pub segmentation_threshold: f32,
    /// Semantic segmentation scores are `[N,H,W,C]` rather than `[N,C,H,W]`
    /// (`segmentation-output-order=1`).
    pub segmentation_hwc: bool,
    pub classifier_softmax: Softmax,
    pub class_attrs: ClassAttrsTable,
    pub process_mode: ProcessMode,
    /// Secondary mode: the objects of which components (`gie-unique-id`s); empty means all.
    pub operate_on_gie_id: Option<i32>,
    /// Secondary mode: the classes worked on; empty means all.
    pub operate_on_class_ids: Vec<i32>,
    pub objects: ObjectLimits,
    /// Secondary mode: frames a tracked object's result is reused for (0: infer every frame).
    pub secondary_reinfer_interval: u32,
    /// Attach each object's raw output tensors as attributes.
    pub output_tensor_meta: bool,
    pub tensorrt: TensorRtSettings,
    /// Priority of the CUDA stream the element's GPU work is queued on (the `stream-priority`
    /// property; not an nvinfer key).
    pub stream_priority: i32,
    /// Capture ONNX Runtime's CUDA provider run in a CUDA graph and replay it (the `cuda-graph`
    /// property; every batch then runs at `batch-size`).
    pub cuda_graph: CudaGraphMode,
    /// Choose ONNX Runtime's CUDA provider settings by timing the model at start (the
    /// `cuda-tuning` property; cached per model, precision, batch, GPU and runtime).
    pub cuda_tuning: bool,
    /// The inference server of `backend=kserve`.
    pub remote: RemoteSettings,
    /// Batches in flight that a local engine running several at once (OpenVINO) is compiled for
    /// when it opens (not an nvinfer key): rstrtinfer's primary mode sets `requests-in-flight`
    /// here, as many as it then asks for ([`crate::inference::Inference::keep_in_flight`]), so
    /// the model is compiled once. 1, the default: one batch at a time.
    pub requests_at_open: u32,
}

/// How the TensorRT backend builds engines (nvinfer's keys), shared with rsdlainfer.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRtSettings {
    pub network_mode: NetworkMode,
    /// INT8 calibration cache (`int8-calib-file`).
    pub int8_calib_file: Option<PathBuf>,
    /// Builder workspace limit in MiB (`workspace-size`); 0 keeps TensorRT's default.
    pub workspace_size: u32,
    /// Build for and run on DLA core `use-dla-core` (`enable-dla`).
    pub enable_dla: bool,
    pub use_dla_core: u32,
    /// Let layers the DLA cannot run fall back to the GPU.
    pub allow_gpu_fallback: bool,
    /// Where built engines are cached; `None`: the user cache directory.
    pub engine_cache_dir: Option<PathBuf>,
}

impl Default for TensorRtSettings {
    fn default() -> Self {
        Self {
            network_mode: NetworkMode::Fp32,
            int8_calib_file: None,
            workspace_size: 0,
            enable_dla: false,
            use_dla_core: 0,
            allow_gpu_fallback: true,
            engine_cache_dir: None,
        }
    }
}

/// `input-object-{min,max}-{width,height}`: the sizes of objects (frame pixels) a secondary
/// element works on; a maximum of 0 means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectLimits {
    pub min_width: u32,
    pub min_height: u32,
    pub max_width: u32,
    pub max_height: u32,
}

impl ObjectLimits {
    /// Whether an object of `w` x `h` frame pixels is within the limits.
    pub fn accepts(&self, w: f32, h: f32) -> bool {
        w >= self.min_width as f32
            && h >= self.min_height as f32
            && (self.max_width == 0 || w <= self.max_width as f32)
            && (self.max_height == 0 || h <= self.max_height as f32)
    }
}

impl Default for InferConfig {
    fn default() -> Self {
        Self {
            onnx_file: None,
            model_engine_file: None,
            labelfile_path: None,
            backend: Backend::Auto,
            device: Device::Auto,
            gpu_id: 0,
            openvino_device: "CPU".to_string(),
            batch_size: 1,
            gie_unique_id: 1,
            interval: 0,
            network_type: NetworkType::Detector,
            num_detected_classes: 0,
            model_color_format: ColorFormat::Rgb,
            maintain_aspect_ratio: false,
            symmetric_padding: false,
            network_input_order: InputOrder::Auto,
            net_scale_factor: 1.0,
            offsets: Vec::new(),
            infer_dims: None,
            output_blob_names: Vec::new(),
            output_parser: ParserKind::Auto,
            cluster_mode: ClusterMode::Nms,
            box_format: BoxFormat::Auto,
            box_coordinates: BoxCoords::Auto,
            end_to_end_columns: None,
            yolox_strides: vec![8, 16, 32],
            num_keypoints: 17,
            keypoint_names: Vec::new(),
            keypoint_skeleton: Vec::new(),
            filter_out_class_ids: Vec::new(),
            custom_lib_path: None,
            custom_parser: None,
            custom_lib_deepstream_version: 8,
            classifier_threshold: 0.0,
            segmentation_threshold: 0.0,
            segmentation_hwc: false,
            classifier_softmax: Softmax::Auto,
            class_attrs: ClassAttrsTable::default(),
            process_mode: ProcessMode::Primary,
            operate_on_gie_id: None,
            operate_on_class_ids: Vec::new(),
            objects: ObjectLimits::default(),
            secondary_reinfer_interval: 0,
            output_tensor_meta: false,
            tensorrt: TensorRtSettings::default(),
            stream_priority: 0,
            cuda_graph: CudaGraphMode::Off,
            cuda_tuning: true,
            remote: RemoteSettings::default(),
            requests_at_open: 1,
        }
    }
}

/// The result of reading a configuration file: the configuration and the warnings to post.
#[derive(Debug)]
pub struct LoadedConfig {
    pub config: InferConfig,
    pub warnings: Vec<String>,
}

impl InferConfig {
    /// Checks that the settings fit together. Returns warnings about settings that have no
    /// effect in this combination; contradictions are errors.
    pub fn validate(&self) -> Result<Vec<String>, String> {
        let secondary = self.process_mode == ProcessMode::Secondary;
        if self.backend == Backend::OpenVino && self.openvino_device.is_empty() {
            return Err("backend=openvino needs an openvino-device (CPU, GPU, NPU, AUTO)".into());
        }
        if secondary && self.operate_on_gie_id == Some(self.gie_unique_id) {
            return Err(format!(
                "operate-on-gie-id {} is this element's own gie-unique-id: a secondary element \
                 works on the objects of another component",
                self.gie_unique_id
            ));
        }
        if self.network_type == NetworkType::Other {
            if !self.output_tensor_meta {
                return Err(
                    "network-type other only attaches the raw output tensors: set \
                            output-tensor-meta=true"
                        .into(),
                );
            }
            if !secondary {
                return Err(
                    "network-type other (raw tensors) needs process-mode=secondary: the \
                            tensors are attached to the objects they were computed for"
                        .into(),
                );
            }
        }
        if secondary && self.network_type == NetworkType::Segmentation {
            return Err(
                "network-type segmentation gives a class map per frame: it needs \
                        process-mode=primary"
                    .into(),
            );
        }
        match (&self.custom_lib_path, &self.custom_parser) {
            (Some(_), None) => {
                return Err(
                    "custom-lib-path is set but no parser function is named: set \
                            parse-bbox-func-name, parse-bbox-instance-mask-func-name or \
                            parse-classifier-func-name"
                        .into(),
                );
            }
            (None, Some((kind, _))) => {
                return Err(format!(
                    "{} names a function but custom-lib-path names no library",
                    kind.key()
                ));
            }
            (Some(_), Some((kind, _))) => {
                if self.output_parser != ParserKind::Auto {
                    return Err(format!(
                        "{} selects a custom parser, but output-parser is {:?}; leave \
                         output-parser at auto",
                        kind.key(),
                        self.output_parser
                    ));
                }
                let fits = match kind {
                    CustomKind::Classifier => self.network_type == NetworkType::Classifier,
                    CustomKind::Detector => self.network_type == NetworkType::Detector,
                    CustomKind::InstanceMask => {
                        self.network_type == NetworkType::InstanceSegmentation
                    }
                    CustomKind::Segmentation => self.network_type == NetworkType::Segmentation,
                };
                if !fits {
                    return Err(format!(
                        "{} does not fit network-type {:?}",
                        kind.key(),
                        self.network_type
                    ));
                }
                if *kind == CustomKind::Segmentation && self.num_detected_classes == 0 {
                    return Err(
                        "a segmentation parser is given num-detected-classes, the classes of \
                         its class map: set it"
                            .into(),
                    );
                }
                if *kind == CustomKind::InstanceMask && self.cluster_mode != ClusterMode::None {
                    return Err(format!(
                        "cluster-mode {:?} is not supported with an instance-mask parser (as in \
                         nvinfer, which leaves clustering to the parser): set cluster-mode=4",
                        self.cluster_mode
                    ));
                }
            }
            (None, None) => {}
        }
        self.check_numbers()?;
        let mut warnings = Vec::new();
        if self.backend.is_remote() {
            if self.remote.server_url.is_empty() {
                return Err(
                    "backend=kserve needs server-url: where the inference server listens \
                            (host:port, http://, or https:// for TLS)"
                        .into(),
                );
            }
            if self.remote.model_name.is_empty() {
                return Err(
                    "backend=kserve needs model-name: the model's name on the server".into(),
                );
            }
            if secondary && self.remote.on_failure == ServerFailure::Drop {
                warnings.push(
                    "on-server-failure=drop applies to process-mode=primary: in secondary mode \
                     the element waits for the server"
                        .into(),
                );
            }
        } else if !self.remote.server_url.is_empty() {
            warnings.push(format!(
                "server-url is set but backend is {:?}: the server is not used (set \
                 backend=kserve)",
                self.backend
            ));
        }
        if secondary && self.interval > 0 {
            warnings.push(format!(
                "interval={} applies to process-mode=primary only and is ignored; use \
                 secondary-reinfer-interval for tracked objects",
                self.interval
            ));
        }
        if !secondary {
            let secondary_only = [
                ("operate-on-gie-id", self.operate_on_gie_id.is_some()),
                (
                    "operate-on-class-ids",
                    !self.operate_on_class_ids.is_empty(),
                ),
                ("input-object-*", self.objects != ObjectLimits::default()),
                (
                    "secondary-reinfer-interval",
                    self.secondary_reinfer_interval > 0,
                ),
            ];
            for (key, set) in secondary_only {
                if set {
                    warnings.push(format!(
                        "{key} applies to process-mode=secondary only and is ignored"
                    ));
                }
            }
            if self.output_tensor_meta && self.network_type == NetworkType::Detector {
                warnings.push(
                    "output-tensor-meta is ignored for a primary detector: tensors are attached \
                     to the object they were computed for (secondary mode, or a primary \
                     classifier's frame object)"
                        .into(),
                );
            }
        }
        Ok(warnings)
    }

    /// Every number finite, sizes not negative, the class count bounded: NaN and infinity
    /// pass the properties' ranges and parse as numbers, and would silently disable a filter.
    fn check_numbers(&self) -> Result<(), String> {
        let finite = [
            ("net-scale-factor", self.net_scale_factor),
            ("classifier-threshold", self.classifier_threshold),
            ("segmentation-threshold", self.segmentation_threshold),
        ]
        .into_iter()
        .chain(self.offsets.iter().map(|&o| ("offsets", o)));
        for (key, v) in finite {
            if !v.is_finite() {
                return Err(format!("{key}: expected a finite number, found {v}"));
            }
        }
        if self.num_detected_classes > MAX_CLASSES {
            return Err(format!(
                "num-detected-classes: at most {MAX_CLASSES}, found {}",
                self.num_detected_classes
            ));
        }
        Ok(())
    }
}

/// The largest `batch-size` (configuration key and property).
pub const MAX_BATCH_SIZE: u32 = 1024;

/// The most classes a model, `num-detected-classes` or a label file may have. Real models stay
/// far below (ImageNet-21k has 21,841); every class costs its thresholds and limits in memory.
pub const MAX_CLASSES: u32 = 1 << 18;

/// Parses `offsets` (one value, or one per channel).
pub fn offsets(values: Vec<f32>) -> Result<Vec<f32>, String> {
    if values.len() > 4 {
        return Err(format!(
            "expected at most 4 offsets, found {}",
            values.len()
        ));
    }
    Ok(values)
}

/// Parses `infer-dims` as `C;H;W`.
pub fn infer_dims(values: &[u32]) -> Result<[u32; 3], String> {
    match values {
        [c, h, w] if [1, 3].contains(c) && *h > 0 && *w > 0 => Ok([*c, *h, *w]),
        [c, _, _] if ![1, 3].contains(c) => Err(format!("channels must be 1 or 3, found {c}")),
        _ => Err(format!(
            "expected C;H;W with positive values, found {values:?}"
        )),
    }
}
