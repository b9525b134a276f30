//! Inference configuration: nvinfer-compatible keys, from INI files and element properties.
//!
//! Every setting has one name, used both as the `[property]` key of a configuration file and as
//! the element property. Values set as properties override the file. Relative paths in a file are
//! relative to the file. Unknown keys produce a warning naming the key; malformed values an error
//! naming file, line and key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ferrostream_core::ini::{ConfigError, Entry, IniFile};
use gst::glib;

/// Which inference implementation runs the model.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferBackend")]
pub enum Backend {
    /// Native TensorRT when available, else ONNX Runtime (choosing its device as `device` says).
    #[default]
    #[enum_value(name = "Auto: best available backend", nick = "auto")]
    Auto = 0,
    #[enum_value(name = "ONNX Runtime", nick = "onnxruntime")]
    OnnxRuntime = 1,
    #[enum_value(name = "Native TensorRT", nick = "tensorrt")]
    TensorRt = 2,
    /// A KServe v2 / Open Inference Protocol server over gRPC (`server-url`, `model-name`).
    #[enum_value(name = "KServe v2 inference server (gRPC)", nick = "kserve")]
    Kserve = 3,
    /// The same as `kserve`: Triton Inference Server speaks KServe v2.
    #[enum_value(name = "Triton Inference Server (KServe v2 gRPC)", nick = "triton")]
    Triton = 4,
}

impl Backend {
    /// Whether the model runs on an inference server.
    pub fn is_remote(self) -> bool {
        matches!(self, Backend::Kserve | Backend::Triton)
    }
}

/// What a batch does when the inference server cannot be reached or does not answer within
/// `server-timeout`.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferServerFailure")]
pub enum ServerFailure {
    /// Retry until the server answers, holding the stream back (back-pressure); an error after
    /// `server-give-up` seconds.
    #[default]
    #[enum_value(name = "Wait: retry, holding the stream back", nick = "wait")]
    Wait = 0,
    /// Pass the frames on without results and count them; an error after `server-give-up`
    /// seconds without an answer.
    #[enum_value(name = "Drop: pass frames on without results, counted", nick = "drop")]
    Drop = 1,
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

/// Where ONNX Runtime executes the model (its execution provider).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferDevice")]
pub enum Device {
    /// TensorRT execution provider, else CUDA, else CPU: whatever the installed runtime has.
    #[default]
    #[enum_value(name = "Auto: best execution provider available", nick = "auto")]
    Auto = 0,
    #[enum_value(name = "CPU execution provider", nick = "cpu")]
    Cpu = 1,
    #[enum_value(name = "CUDA execution provider", nick = "cuda")]
    Cuda = 2,
    #[enum_value(name = "TensorRT execution provider", nick = "tensorrt")]
    TensorRt = 3,
}

/// nvinfer `network-type`.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferNetworkType")]
pub enum NetworkType {
    #[default]
    #[enum_value(name = "Detector", nick = "detector")]
    Detector = 0,
    #[enum_value(name = "Classifier", nick = "classifier")]
    Classifier = 1,
    /// A class per pixel: `[N,C,H,W]` scores become the frame's class map.
    #[enum_value(name = "Semantic segmentation", nick = "segmentation")]
    Segmentation = 2,
    /// A detector whose objects carry instance masks (YOLOv8-seg, or an instance-mask parser).
    #[enum_value(name = "Instance segmentation", nick = "instance-segmentation")]
    InstanceSegmentation = 3,
    /// No parser: the raw outputs are attached to the objects (`output-tensor-meta`), e.g. the
    /// appearance embeddings of a re-identification model.
    #[enum_value(name = "Other: raw output tensors only", nick = "other")]
    Other = 100,
}

/// nvinfer `network-mode`: the precision TensorRT builds an engine for.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferNetworkMode")]
pub enum NetworkMode {
    #[default]
    #[enum_value(name = "FP32", nick = "fp32")]
    Fp32 = 0,
    #[enum_value(
        name = "INT8 (with int8-calib-file, or a model with Q/DQ nodes)",
        nick = "int8"
    )]
    Int8 = 1,
    #[enum_value(name = "FP16", nick = "fp16")]
    Fp16 = 2,
}

/// nvinfer `process-mode`: whole frames, or the objects an upstream detector found.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferProcessMode")]
pub enum ProcessMode {
    #[default]
    #[enum_value(name = "Primary: whole frames", nick = "primary")]
    Primary = 1,
    #[enum_value(name = "Secondary: objects of upstream detectors", nick = "secondary")]
    Secondary = 2,
}

/// nvinfer `model-color-format`.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferColorFormat")]
pub enum ColorFormat {
    #[default]
    #[enum_value(name = "RGB", nick = "rgb")]
    Rgb = 0,
    #[enum_value(name = "BGR", nick = "bgr")]
    Bgr = 1,
    #[enum_value(name = "Grayscale", nick = "gray")]
    Gray = 2,
}

/// nvinfer `network-input-order`; `auto` reads it from the model's input shape.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferInputOrder")]
pub enum InputOrder {
    #[default]
    #[enum_value(name = "From the model's input shape", nick = "auto")]
    Auto = 2,
    #[enum_value(name = "NCHW", nick = "nchw")]
    Nchw = 0,
    #[enum_value(name = "NHWC", nick = "nhwc")]
    Nhwc = 1,
}

/// How raw output tensors become objects.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferOutputParser")]
pub enum ParserKind {
    /// Guessed from the number and shapes of the model's outputs.
    #[default]
    #[enum_value(name = "Guess from the output shapes", nick = "auto")]
    Auto = 0,
    #[enum_value(
        name = "SSD: per-class scores [N,B,C] + normalised boxes [N,B,(1,)4]",
        nick = "ssd"
    )]
    Ssd = 1,
    #[enum_value(
        name = "TensorFlow Object Detection API: boxes, scores, classes, num_detections",
        nick = "tf-od-api"
    )]
    TfOdApi = 2,
    #[enum_value(name = "YOLOv5: [N,B,5+C]", nick = "yolov5")]
    YoloV5 = 3,
    #[enum_value(name = "YOLOv8: [N,4+C,B]", nick = "yolov8")]
    YoloV8 = 4,
    #[enum_value(name = "CenterFace heatmaps", nick = "centerface")]
    CenterFace = 5,
    #[enum_value(name = "Classifier: [N,C] scores", nick = "classifier")]
    Classifier = 6,
    /// Nothing is parsed (network-type other): the raw tensors are the result.
    #[enum_value(name = "None: raw output tensors (network-type other)", nick = "none")]
    None = 7,
    #[enum_value(
        name = "DETR / RT-DETR: [N,K,4+C] rows of normalised cx,cy,w,h and C class scores",
        nick = "detr"
    )]
    Detr = 8,
    #[enum_value(
        name = "End-to-end rows [N,K,6|7] or [K,7]: box, score, class (end-to-end-columns)",
        nick = "end-to-end"
    )]
    EndToEnd = 9,
    #[enum_value(
        name = "Boxes [N,K,4], scores [N,K] and labels [N,K] (DETR-style exports)",
        nick = "boxes-scores-labels"
    )]
    BoxesScoresLabels = 10,
    #[enum_value(name = "YOLOX: [N,A,5+C] grid offsets (yolox-strides)", nick = "yolox")]
    Yolox = 11,
    /// An nvinfer custom parser library (`custom-lib-path` and a `parse-*-func-name`); chosen
    /// by those keys, not by this one.
    #[enum_value(
        name = "nvinfer custom parser library (custom-lib-path)",
        nick = "custom"
    )]
    Custom = 12,
    #[enum_value(
        name = "YOLOv8-seg: [N,4+C+M,B] rows and [N,M,h,w] prototype masks",
        nick = "yolov8-seg"
    )]
    YoloV8Seg = 13,
    /// Semantic segmentation (network-type segmentation): `[N,C,H,W]` class scores.
    #[enum_value(
        name = "Semantic segmentation: [N,C,H,W] scores",
        nick = "segmentation"
    )]
    Segmentation = 14,
}

/// nvinfer `cluster-mode`: how the raw detections of each class become objects.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferClusterMode")]
pub enum ClusterMode {
    /// OpenCV's groupRectangles (`group-threshold`, `eps`).
    #[enum_value(
        name = "Group similar rectangles (OpenCV groupRectangles)",
        nick = "group-rectangles"
    )]
    GroupRectangles = 0,
    /// DBSCAN (`eps`, `minBoxes`, `dbscan-min-score`).
    #[enum_value(name = "DBSCAN", nick = "dbscan")]
    Dbscan = 1,
    #[default]
    #[enum_value(name = "Non-maximum suppression per class", nick = "nms")]
    Nms = 2,
    /// DBSCAN, then non-maximum suppression of what it kept.
    #[enum_value(name = "DBSCAN, then non-maximum suppression", nick = "dbscan-nms")]
    Hybrid = 3,
    #[enum_value(name = "No clustering", nick = "none")]
    None = 4,
}

/// How the four values of a box are ordered (`box-format`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferBoxFormat")]
pub enum BoxFormat {
    /// TensorFlow order: ymin, xmin, ymax, xmax.
    #[enum_value(name = "ymin,xmin,ymax,xmax (TensorFlow)", nick = "yxyx")]
    Yxyx = 0,
    #[enum_value(name = "xmin,ymin,xmax,ymax", nick = "xyxy")]
    Xyxy = 1,
    #[enum_value(name = "centre x, centre y, width, height", nick = "cxcywh")]
    Cxcywh = 2,
    #[enum_value(name = "left, top, width, height", nick = "xywh")]
    Xywh = 3,
    /// The parser's usual order: yxyx for SSD and the TensorFlow Object Detection API; for
    /// end-to-end rows and boxes/scores/labels, xyxy or cxcywh as the first real boxes show.
    #[default]
    #[enum_value(name = "Auto: the parser's usual order", nick = "auto")]
    Auto = 4,
}

/// Whether box coordinates are in network-input pixels or normalised to [0, 1]
/// (`box-coordinates`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferBoxCoordinates")]
pub enum BoxCoords {
    /// The parser's convention; where parsers differ (end-to-end rows, boxes/scores/labels),
    /// decided once from the first confident boxes.
    #[default]
    #[enum_value(
        name = "Auto: as the parser's family, or from the first boxes",
        nick = "auto"
    )]
    Auto = 0,
    #[enum_value(name = "Normalised to the network input", nick = "normalized")]
    Normalized = 1,
    #[enum_value(name = "Network-input pixels", nick = "pixels")]
    Pixels = 2,
}

/// Whether classifier outputs need a softmax.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstRsTrtInferClassifierSoftmax")]
pub enum Softmax {
    /// Apply it unless the outputs already form a probability distribution.
    #[default]
    #[enum_value(name = "Auto: unless outputs already sum to 1", nick = "auto")]
    Auto = 0,
    #[enum_value(name = "Always (outputs are logits)", nick = "always")]
    Always = 1,
    #[enum_value(name = "Never (outputs are probabilities)", nick = "never")]
    Never = 2,
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
    per_class: BTreeMap<u32, Vec<(ClassKey, f32)>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ClassKey {
    Pre,
    Post,
    Iou,
    TopK,
    MinW,
    MinH,
    MaxW,
    MaxH,
    Eps,
    GroupThreshold,
    MinBoxes,
    DbscanMinScore,
    RoiTop,
    RoiBottom,
}

/// Each key's name in the file, first; later names are accepted too.
const CLASS_KEYS: [(ClassKey, &str); 16] = [
    (ClassKey::Pre, "pre-cluster-threshold"),
    (ClassKey::Post, "post-cluster-threshold"),
    (ClassKey::Iou, "nms-iou-threshold"),
    (ClassKey::TopK, "topk"),
    (ClassKey::MinW, "detected-min-w"),
    (ClassKey::MinH, "detected-min-h"),
    (ClassKey::MaxW, "detected-max-w"),
    (ClassKey::MaxH, "detected-max-h"),
    (ClassKey::Eps, "eps"),
    (ClassKey::GroupThreshold, "group-threshold"),
    (ClassKey::MinBoxes, "minBoxes"),
    (ClassKey::DbscanMinScore, "dbscan-min-score"),
    (ClassKey::RoiTop, "roi-top-offset"),
    (ClassKey::RoiBottom, "roi-bottom-offset"),
    (ClassKey::Pre, "threshold"),
    (ClassKey::MinBoxes, "min-boxes"),
];

impl ClassKey {
    fn from_name(name: &str) -> Option<Self> {
        CLASS_KEYS.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    fn name(self) -> &'static str {
        CLASS_KEYS
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("?", |(_, n)| n)
    }

    /// Whether `v` is a value of this key: every number finite, sizes and offsets not negative.
    fn check(self, v: f32) -> Result<(), String> {
        if !v.is_finite() {
            return Err(format!("expected a finite number, found {v}"));
        }
        let size = matches!(
            self,
            Self::MinW
                | Self::MinH
                | Self::MaxW
                | Self::MaxH
                | Self::Eps
                | Self::RoiTop
                | Self::RoiBottom
        );
        if size && v < 0.0 {
            return Err(format!("expected a size of 0 or more, found {v}"));
        }
        Ok(())
    }

    fn apply(self, attrs: &mut ClassAttrs, v: f32) {
        match self {
            Self::Pre => attrs.pre_cluster_threshold = v,
            Self::Post => attrs.post_cluster_threshold = v,
            Self::Iou => attrs.nms_iou_threshold = v,
            Self::TopK => attrs.topk = v as i32,
            Self::MinW => attrs.detected_min_w = v,
            Self::MinH => attrs.detected_min_h = v,
            Self::MaxW => attrs.detected_max_w = v,
            Self::MaxH => attrs.detected_max_h = v,
            Self::Eps => attrs.eps = v,
            Self::GroupThreshold => attrs.group_threshold = v as i32,
            Self::MinBoxes => attrs.min_boxes = v as i32,
            Self::DbscanMinScore => attrs.dbscan_min_score = v,
            Self::RoiTop => attrs.roi_top_offset = v,
            Self::RoiBottom => attrs.roi_bottom_offset = v,
        }
    }
}

impl ClassAttrsTable {
    /// Resolved attributes for classes `0..num_classes`.
    /// Checks the values set on the element (the file's are checked as they are read).
    pub fn check(&self) -> Result<(), String> {
        let a = &self.all;
        for (key, v) in [
            (ClassKey::Pre, a.pre_cluster_threshold),
            (ClassKey::Post, a.post_cluster_threshold),
            (ClassKey::Iou, a.nms_iou_threshold),
            (ClassKey::MinW, a.detected_min_w),
            (ClassKey::MinH, a.detected_min_h),
            (ClassKey::MaxW, a.detected_max_w),
            (ClassKey::MaxH, a.detected_max_h),
            (ClassKey::Eps, a.eps),
            (ClassKey::DbscanMinScore, a.dbscan_min_score),
            (ClassKey::RoiTop, a.roi_top_offset),
            (ClassKey::RoiBottom, a.roi_bottom_offset),
        ] {
            key.check(v).map_err(|m| format!("{}: {m}", key.name()))?;
        }
        Ok(())
    }

    pub fn resolve(&self, num_classes: usize) -> Vec<ClassAttrs> {
        (0..num_classes)
            .map(|class| {
                let mut attrs = self.all;
                if let Some(overrides) = self.per_class.get(&(class as u32)) {
                    for (key, v) in overrides {
                        key.apply(&mut attrs, *v);
                    }
                }
                attrs
            })
            .collect()
    }
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
    pub end_to_end_columns: Option<crate::parse::Columns>,
    /// Strides of a YOLOX head's grids.
    pub yolox_strides: Vec<u32>,
    /// Detected classes left out of the results (`filter-out-class-ids`).
    pub filter_out_class_ids: Vec<u32>,
    /// An nvinfer custom parser library and the function in it that parses the outputs.
    pub custom_lib_path: Option<PathBuf>,
    pub custom_parser: Option<(crate::custom::CustomKind, String)>,
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
    pub cuda_graph: bool,
    /// The inference server of `backend=kserve`.
    pub remote: RemoteSettings,
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
            cuda_graph: false,
            remote: RemoteSettings::default(),
        }
    }
}

/// nvinfer keys that are understood but not implemented; the file still loads, with a warning.
const UNSUPPORTED_KEYS: &[&str] = &[
    "engine-create-func-name",
    "model-file",
    "proto-file",
    "uff-file",
    "tlt-encoded-model",
    "tlt-model-key",
    "scaling-filter",
    "scaling-compute-hw",
    "crop-objects-to-roi-boundary",
];

/// The result of reading a configuration file: the configuration and the warnings to post.
#[derive(Debug)]
pub struct LoadedConfig {
    pub config: InferConfig,
    pub warnings: Vec<String>,
}

impl InferConfig {
    /// Reads an nvinfer-style configuration file.
    pub fn from_file(path: &Path) -> Result<LoadedConfig, ConfigError> {
        Self::from_ini(&IniFile::load(path)?)
    }

    /// Reads a configuration file over `base` (an element's defaults): keys the file leaves
    /// out keep the base's values.
    pub fn from_file_over(path: &Path, base: InferConfig) -> Result<LoadedConfig, ConfigError> {
        Self::from_ini_over(&IniFile::load(path)?, base)
    }

    pub fn from_ini(ini: &IniFile) -> Result<LoadedConfig, ConfigError> {
        Self::from_ini_over(ini, InferConfig::default())
    }

    fn from_ini_over(ini: &IniFile, base: InferConfig) -> Result<LoadedConfig, ConfigError> {
        let mut config = base;
        let mut warnings = Vec::new();
        let mut class_sections = Vec::new();
        for section in &ini.sections {
            if section.name == "property" {
                for entry in &section.entries {
                    if let Some(warning) = config.apply_entry(ini, entry)? {
                        warnings.push(warning);
                    }
                }
            } else if section.name == "class-attrs-all" {
                for entry in &section.entries {
                    let Some(key) = ClassKey::from_name(&entry.key) else {
                        warnings.push(unknown_key(ini, entry, &section.name));
                        continue;
                    };
                    key.apply(&mut config.class_attrs.all, class_value(ini, entry, key)?);
                }
            } else if let Some(class) = section.name.strip_prefix("class-attrs-") {
                let Ok(class) = class.parse::<u32>() else {
                    return Err(ConfigError {
                        path: ini.path.clone(),
                        line: section.line,
                        message: format!(
                            "section [{}]: expected [class-attrs-all] or [class-attrs-<class id>]",
                            section.name
                        ),
                    });
                };
                class_sections.push((class, section));
            } else {
                warnings.push(format!(
                    "{}:{}: unknown section [{}] ignored",
                    ini.path.display(),
                    section.line,
                    section.name
                ));
            }
        }
        // Per-class sections override [class-attrs-all] wherever they appear in the file.
        for (class, section) in class_sections {
            let overrides = config.class_attrs.per_class.entry(class).or_default();
            for entry in &section.entries {
                let Some(key) = ClassKey::from_name(&entry.key) else {
                    warnings.push(unknown_key(ini, entry, &section.name));
                    continue;
                };
                overrides.push((key, class_value(ini, entry, key)?));
            }
        }
        Ok(LoadedConfig { config, warnings })
    }

    /// Applies one `[property]` entry; returns a warning for keys that are not used.
    fn apply_entry(&mut self, ini: &IniFile, e: &Entry) -> Result<Option<String>, ConfigError> {
        match e.key.as_str() {
            "onnx-file" => self.onnx_file = Some(ini.resolve_path(&e.value)),
            "model-engine-file" => self.model_engine_file = Some(ini.resolve_path(&e.value)),
            "labelfile-path" => self.labelfile_path = Some(ini.resolve_path(&e.value)),
            "backend" => self.backend = enum_value(ini, e)?,
            "device" => self.device = enum_value(ini, e)?,
            "gpu-id" => self.gpu_id = ini.value(e)?,
            "batch-size" => {
                let batch = positive(ini, e)?;
                if batch > MAX_BATCH_SIZE {
                    return Err(ini.error(e, format!("at most {MAX_BATCH_SIZE}, found {batch}")));
                }
                self.batch_size = batch;
            }
            "gie-unique-id" => self.gie_unique_id = ini.value(e)?,
            "interval" => self.interval = ini.value(e)?,
            "network-type" => {
                self.network_type = match ini.value::<u32>(e)? {
                    0 => NetworkType::Detector,
                    1 => NetworkType::Classifier,
                    2 => NetworkType::Segmentation,
                    3 => NetworkType::InstanceSegmentation,
                    100 => NetworkType::Other,
                    other => {
                        return Err(ini.error(
                            e,
                            format_args!(
                                "network-type {other} is not supported (0 = detector, \
                                 1 = classifier, 2 = segmentation, 3 = instance segmentation, \
                                 100 = other: raw tensors only)"
                            ),
                        ));
                    }
                }
            }
            "num-detected-classes" => {
                self.num_detected_classes = ini.value(e)?;
                if self.num_detected_classes > MAX_CLASSES {
                    return Err(ini.error(
                        e,
                        format!(
                            "at most {MAX_CLASSES} classes, found {}",
                            self.num_detected_classes
                        ),
                    ));
                }
            }
            "model-color-format" => {
                self.model_color_format = match ini.value::<u32>(e)? {
                    0 => ColorFormat::Rgb,
                    1 => ColorFormat::Bgr,
                    2 => ColorFormat::Gray,
                    other => {
                        return Err(ini.error(
                            e,
                            format_args!("expected 0 (RGB), 1 (BGR) or 2 (GRAY), found {other}"),
                        ));
                    }
                }
            }
            "maintain-aspect-ratio" => self.maintain_aspect_ratio = ini.bool_value(e)?,
            // Ferrostream's own key (the `cuda-graph` property), not nvinfer's.
            "cuda-graph" => self.cuda_graph = ini.bool_value(e)?,
            "symmetric-padding" => self.symmetric_padding = ini.bool_value(e)?,
            "network-input-order" => {
                self.network_input_order = match ini.value::<u32>(e)? {
                    0 => InputOrder::Nchw,
                    1 => InputOrder::Nhwc,
                    other => {
                        return Err(ini.error(
                            e,
                            format_args!("expected 0 (NCHW) or 1 (NHWC), found {other}"),
                        ));
                    }
                }
            }
            "net-scale-factor" => self.net_scale_factor = finite(ini, e)?,
            "offsets" => self.offsets = offsets(ini.list_value(e)?).map_err(|m| ini.error(e, m))?,
            "infer-dims" => {
                self.infer_dims =
                    Some(infer_dims(&ini.list_value(e)?).map_err(|m| ini.error(e, m))?)
            }
            "output-blob-names" => self.output_blob_names = ini.list_value(e)?,
            "output-parser" => self.output_parser = enum_value(ini, e)?,
            "cluster-mode" => {
                self.cluster_mode = match ini.value::<u32>(e)? {
                    0 => ClusterMode::GroupRectangles,
                    1 => ClusterMode::Dbscan,
                    2 => ClusterMode::Nms,
                    3 => ClusterMode::Hybrid,
                    4 => ClusterMode::None,
                    other => {
                        return Err(ini.error(
                            e,
                            format_args!(
                                "unknown cluster-mode {other}; use 0 (group rectangles), 1 \
                                 (DBSCAN), 2 (NMS), 3 (DBSCAN + NMS) or 4 (none)"
                            ),
                        ));
                    }
                }
            }
            // `ssd-box-format` is the key's earlier name.
            "box-format" | "ssd-box-format" => self.box_format = enum_value(ini, e)?,
            "box-coordinates" => self.box_coordinates = enum_value(ini, e)?,
            "end-to-end-columns" => {
                self.end_to_end_columns =
                    Some(crate::parse::Columns::parse(&e.value).map_err(|m| ini.error(e, m))?)
            }
            "custom-lib-path" => self.custom_lib_path = Some(ini.resolve_path(&e.value)),
            "custom-lib-deepstream-version" => {
                self.custom_lib_deepstream_version = ini.value(e)?;
                if !(6..=99).contains(&self.custom_lib_deepstream_version) {
                    return Err(ini.error(
                        e,
                        "expected the major version of DeepStream's headers the library was \
                         built against, 6 or later",
                    ));
                }
            }
            "filter-out-class-ids" => self.filter_out_class_ids = ini.list_value(e)?,
            // nvinfer needs it for instance masks; here network-type 3 implies it.
            "output-instance-mask" => {
                ini.bool_value(e)?;
            }
            key @ ("parse-bbox-func-name"
            | "parse-bbox-instance-mask-func-name"
            | "parse-classifier-func-name") => {
                let kind = crate::custom::CustomKind::from_key(key).expect("a parser key");
                self.custom_parser = Some((kind, e.value.trim().to_string()))
            }
            "yolox-strides" => {
                self.yolox_strides = ini.list_value(e)?;
                if self.yolox_strides.is_empty() || self.yolox_strides.contains(&0) {
                    return Err(ini.error(e, "expected strides above 0, e.g. 8;16;32"));
                }
            }
            "classifier-threshold" => self.classifier_threshold = finite(ini, e)?,
            "segmentation-threshold" => self.segmentation_threshold = finite(ini, e)?,
            "segmentation-output-order" => {
                self.segmentation_hwc = match ini.value::<u32>(e)? {
                    0 => false,
                    1 => true,
                    other => {
                        return Err(ini.error(
                            e,
                            format_args!("expected 0 (NCHW) or 1 (NHWC), found {other}"),
                        ));
                    }
                }
            }
            "classifier-softmax" => self.classifier_softmax = enum_value(ini, e)?,
            "process-mode" => self.process_mode = enum_value(ini, e)?,
            "operate-on-gie-id" => {
                self.operate_on_gie_id = match ini.value::<i32>(e)? {
                    -1 => None,
                    id if id > 0 => Some(id),
                    other => {
                        return Err(ini.error(
                            e,
                            format_args!("expected a gie-unique-id (>= 1) or -1, found {other}"),
                        ));
                    }
                }
            }
            "operate-on-class-ids" => self.operate_on_class_ids = ini.list_value(e)?,
            "input-object-min-width" => self.objects.min_width = ini.value(e)?,
            "input-object-min-height" => self.objects.min_height = ini.value(e)?,
            "input-object-max-width" => self.objects.max_width = ini.value(e)?,
            "input-object-max-height" => self.objects.max_height = ini.value(e)?,
            "secondary-reinfer-interval" => self.secondary_reinfer_interval = ini.value(e)?,
            "output-tensor-meta" => self.output_tensor_meta = ini.bool_value(e)?,
            "network-mode" => self.tensorrt.network_mode = enum_value(ini, e)?,
            "int8-calib-file" => self.tensorrt.int8_calib_file = Some(ini.resolve_path(&e.value)),
            "workspace-size" => self.tensorrt.workspace_size = ini.value(e)?,
            "enable-dla" => self.tensorrt.enable_dla = ini.bool_value(e)?,
            "use-dla-core" => self.tensorrt.use_dla_core = ini.value(e)?,
            "allow-gpu-fallback" => self.tensorrt.allow_gpu_fallback = ini.bool_value(e)?,
            "engine-cache-dir" => self.tensorrt.engine_cache_dir = Some(ini.resolve_path(&e.value)),
            "server-url" => self.remote.server_url = e.value.trim().to_string(),
            "model-name" => self.remote.model_name = e.value.trim().to_string(),
            "model-version" => self.remote.model_version = e.value.trim().to_string(),
            "server-timeout" => self.remote.timeout_ms = positive(ini, e)?,
            "server-headers" => {
                self.remote.headers = server_headers(&e.value).map_err(|m| ini.error(e, m))?
            }
            "server-ca-file" => self.remote.ca_file = Some(ini.resolve_path(&e.value)),
            "server-cert-file" => self.remote.cert_file = Some(ini.resolve_path(&e.value)),
            "server-key-file" => self.remote.key_file = Some(ini.resolve_path(&e.value)),
            "requests-in-flight" => self.remote.requests_in_flight = positive(ini, e)?,
            "on-server-failure" => self.remote.on_failure = enum_value(ini, e)?,
            "server-give-up" => self.remote.give_up_s = ini.value(e)?,
            "server-max-message-mib" => {
                self.remote.max_message_mib = ini.value(e)?;
                if self.remote.max_message_mib > MAX_MESSAGE_MIB {
                    return Err(ini.error(
                        e,
                        format!(
                            "at most {MAX_MESSAGE_MIB}, found {}",
                            self.remote.max_message_mib
                        ),
                    ));
                }
            }
            key if UNSUPPORTED_KEYS.contains(&key) => {
                return Ok(Some(format!(
                    "{}:{}: key `{key}` is not supported by rstrtinfer and is ignored",
                    ini.path.display(),
                    e.line
                )));
            }
            _ => return Ok(Some(unknown_key(ini, e, "property"))),
        }
        Ok(None)
    }

    /// Checks that the settings fit together. Returns warnings about settings that have no
    /// effect in this combination; contradictions are errors.
    pub fn validate(&self) -> Result<Vec<String>, String> {
        let secondary = self.process_mode == ProcessMode::Secondary;
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
                use crate::custom::CustomKind;
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
                };
                if !fits {
                    return Err(format!(
                        "{} does not fit network-type {:?}",
                        kind.key(),
                        self.network_type
                    ));
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
        self.class_attrs.check()
    }

    /// Copies into `self` the values of `props` whose property names are in `set`: properties
    /// that the application set explicitly win over the configuration file.
    pub fn apply_overrides(&mut self, props: &InferConfig, set: &BTreeSet<&'static str>) {
        for name in set {
            match *name {
                "onnx-file" => self.onnx_file = props.onnx_file.clone(),
                "model-engine-file" => self.model_engine_file = props.model_engine_file.clone(),
                "labelfile-path" => self.labelfile_path = props.labelfile_path.clone(),
                "backend" => self.backend = props.backend,
                "device" => self.device = props.device,
                "gpu-id" => self.gpu_id = props.gpu_id,
                "batch-size" => self.batch_size = props.batch_size,
                "gie-unique-id" => self.gie_unique_id = props.gie_unique_id,
                "interval" => self.interval = props.interval,
                "network-type" => self.network_type = props.network_type,
                "num-detected-classes" => self.num_detected_classes = props.num_detected_classes,
                "model-color-format" => self.model_color_format = props.model_color_format,
                "maintain-aspect-ratio" => self.maintain_aspect_ratio = props.maintain_aspect_ratio,
                "cuda-graph" => self.cuda_graph = props.cuda_graph,
                "symmetric-padding" => self.symmetric_padding = props.symmetric_padding,
                "network-input-order" => self.network_input_order = props.network_input_order,
                "net-scale-factor" => self.net_scale_factor = props.net_scale_factor,
                "offsets" => self.offsets = props.offsets.clone(),
                "infer-dims" => self.infer_dims = props.infer_dims,
                "output-blob-names" => self.output_blob_names = props.output_blob_names.clone(),
                "output-parser" => self.output_parser = props.output_parser,
                "cluster-mode" => self.cluster_mode = props.cluster_mode,
                "box-format" => self.box_format = props.box_format,
                "box-coordinates" => self.box_coordinates = props.box_coordinates,
                "end-to-end-columns" => self.end_to_end_columns = props.end_to_end_columns.clone(),
                "yolox-strides" => self.yolox_strides = props.yolox_strides.clone(),
                "custom-lib-path" => self.custom_lib_path = props.custom_lib_path.clone(),
                "custom-lib-deepstream-version" => {
                    self.custom_lib_deepstream_version = props.custom_lib_deepstream_version
                }
                "filter-out-class-ids" => {
                    self.filter_out_class_ids = props.filter_out_class_ids.clone()
                }
                "parse-bbox-func-name"
                | "parse-bbox-instance-mask-func-name"
                | "parse-classifier-func-name" => self.custom_parser = props.custom_parser.clone(),
                "classifier-threshold" => self.classifier_threshold = props.classifier_threshold,
                "segmentation-threshold" => {
                    self.segmentation_threshold = props.segmentation_threshold
                }
                "segmentation-output-order" => self.segmentation_hwc = props.segmentation_hwc,
                "classifier-softmax" => self.classifier_softmax = props.classifier_softmax,
                "pre-cluster-threshold" => {
                    self.class_attrs.all.pre_cluster_threshold =
                        props.class_attrs.all.pre_cluster_threshold
                }
                "nms-iou-threshold" => {
                    self.class_attrs.all.nms_iou_threshold = props.class_attrs.all.nms_iou_threshold
                }
                "topk" => self.class_attrs.all.topk = props.class_attrs.all.topk,
                "process-mode" => self.process_mode = props.process_mode,
                "operate-on-gie-id" => self.operate_on_gie_id = props.operate_on_gie_id,
                "operate-on-class-ids" => {
                    self.operate_on_class_ids = props.operate_on_class_ids.clone()
                }
                "input-object-min-width" => self.objects.min_width = props.objects.min_width,
                "input-object-min-height" => self.objects.min_height = props.objects.min_height,
                "input-object-max-width" => self.objects.max_width = props.objects.max_width,
                "input-object-max-height" => self.objects.max_height = props.objects.max_height,
                "secondary-reinfer-interval" => {
                    self.secondary_reinfer_interval = props.secondary_reinfer_interval
                }
                "output-tensor-meta" => self.output_tensor_meta = props.output_tensor_meta,
                "network-mode" => self.tensorrt.network_mode = props.tensorrt.network_mode,
                "int8-calib-file" => {
                    self.tensorrt.int8_calib_file = props.tensorrt.int8_calib_file.clone()
                }
                "workspace-size" => self.tensorrt.workspace_size = props.tensorrt.workspace_size,
                "enable-dla" => self.tensorrt.enable_dla = props.tensorrt.enable_dla,
                "use-dla-core" => self.tensorrt.use_dla_core = props.tensorrt.use_dla_core,
                "allow-gpu-fallback" => {
                    self.tensorrt.allow_gpu_fallback = props.tensorrt.allow_gpu_fallback
                }
                "engine-cache-dir" => {
                    self.tensorrt.engine_cache_dir = props.tensorrt.engine_cache_dir.clone()
                }
                "server-url" => self.remote.server_url.clone_from(&props.remote.server_url),
                "model-name" => self.remote.model_name.clone_from(&props.remote.model_name),
                "model-version" => self
                    .remote
                    .model_version
                    .clone_from(&props.remote.model_version),
                "server-timeout" => self.remote.timeout_ms = props.remote.timeout_ms,
                "server-headers" => self.remote.headers.clone_from(&props.remote.headers),
                "server-ca-file" => self.remote.ca_file.clone_from(&props.remote.ca_file),
                "server-cert-file" => self.remote.cert_file.clone_from(&props.remote.cert_file),
                "server-key-file" => self.remote.key_file.clone_from(&props.remote.key_file),
                "requests-in-flight" => {
                    self.remote.requests_in_flight = props.remote.requests_in_flight
                }
                "on-server-failure" => self.remote.on_failure = props.remote.on_failure,
                "server-give-up" => self.remote.give_up_s = props.remote.give_up_s,
                "server-max-message-mib" => {
                    self.remote.max_message_mib = props.remote.max_message_mib
                }
                other => unreachable!("property {other} has no configuration key"),
            }
        }
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

fn positive(ini: &IniFile, e: &Entry) -> Result<u32, ConfigError> {
    match ini.value::<u32>(e)? {
        0 => Err(ini.error(e, "must be at least 1")),
        v => Ok(v),
    }
}

/// Parses an enum from its nick (as the property takes it) or its nvinfer number.
fn enum_value<T>(ini: &IniFile, e: &Entry) -> Result<T, ConfigError>
where
    T: glib::prelude::StaticType + for<'a> glib::value::FromValue<'a>,
{
    let class = glib::EnumClass::with_type(T::static_type()).expect("registered enum type");
    let value = class
        .value_by_nick(&e.value)
        .or_else(|| e.value.parse::<i32>().ok().and_then(|n| class.value(n)));
    match value {
        Some(v) => Ok(v.to_value(&class).get::<T>().expect("value of this enum")),
        None => {
            let nicks: Vec<&str> = class.values().iter().map(|v| v.nick()).collect();
            Err(ini.error(
                e,
                format_args!(
                    "unknown value `{}`; expected one of {}",
                    e.value,
                    nicks.join(", ")
                ),
            ))
        }
    }
}

fn class_value(ini: &IniFile, e: &Entry, key: ClassKey) -> Result<f32, ConfigError> {
    if matches!(
        key,
        ClassKey::TopK | ClassKey::GroupThreshold | ClassKey::MinBoxes
    ) {
        Ok(ini.value::<i32>(e)? as f32)
    } else {
        let v = ini.value::<f32>(e)?;
        key.check(v).map_err(|m| ini.error(e, m))?;
        Ok(v)
    }
}

/// A number of the file that must be finite (NaN and infinity parse as `f32`).
fn finite(ini: &IniFile, e: &Entry) -> Result<f32, ConfigError> {
    let v = ini.value::<f32>(e)?;
    if !v.is_finite() {
        return Err(ini.error(e, format!("expected a finite number, found {v}")));
    }
    Ok(v)
}

fn unknown_key(ini: &IniFile, e: &Entry, section: &str) -> String {
    format!(
        "{}:{}: unknown key `{}` in [{section}] ignored",
        ini.path.display(),
        e.line,
        e.key
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<LoadedConfig, ConfigError> {
        InferConfig::from_ini(&IniFile::parse(Path::new("/etc/fs/det.txt"), text)?)
    }

    #[test]
    fn reads_the_inference_server_keys() {
        let loaded = load(
            "[property]\nbackend=triton\nserver-url=grpcs://pool.example:443\nmodel-name=det\n\
             model-version=3\nserver-timeout=800\nserver-headers=authorization=Bearer a=b; x-k=1\n\
             server-ca-file=ca.pem\nrequests-in-flight=8\non-server-failure=drop\n\
             server-give-up=0\n",
        )
        .unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let c = loaded.config;
        assert!(c.backend.is_remote());
        let r = &c.remote;
        assert_eq!(
            (
                r.server_url.as_str(),
                r.model_name.as_str(),
                r.model_version.as_str()
            ),
            ("grpcs://pool.example:443", "det", "3")
        );
        assert_eq!(
            (r.timeout_ms, r.requests_in_flight, r.give_up_s),
            (800, 8, 0)
        );
        assert_eq!(
            r.headers,
            vec![
                ("authorization".to_string(), "Bearer a=b".to_string()),
                ("x-k".to_string(), "1".to_string())
            ]
        );
        assert_eq!(r.ca_file, Some(PathBuf::from("/etc/fs/ca.pem")));
        assert_eq!(r.on_failure, ServerFailure::Drop);
        assert_eq!(c.validate(), Ok(vec![]));
        let e = load("[property]\nserver-headers=novalue\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected name=value"), "{e}");
        let e = load("[property]\nrequests-in-flight=0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1"), "{e}");
        let mut c = InferConfig {
            backend: Backend::Kserve,
            ..InferConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("needs server-url"));
        c.backend = Backend::OnnxRuntime;
        c.remote.server_url = "h:1".into();
        assert!(c.validate().unwrap()[0].contains("server is not used"));
    }

    #[test]
    fn reads_property_keys() {
        let loaded = load(
            "[property]\n\
             onnx-file=models/det.onnx\nlabelfile-path=/abs/labels.txt\nbatch-size=4\n\
             gie-unique-id=3\ninterval=2\nnetwork-type=0\nnum-detected-classes=90\n\
             model-color-format=1\nmaintain-aspect-ratio=1\nsymmetric-padding=true\n\
             network-input-order=1\nnet-scale-factor=0.0039215697906911373\noffsets=1;2;3\n\
             infer-dims=3;300;300\noutput-blob-names=a;b\ncluster-mode=4\noutput-parser=ssd\n\
             backend=onnxruntime\ndevice=cpu\ngpu-id=1\nprocess-mode=1\n",
        )
        .unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let c = loaded.config;
        assert_eq!(c.onnx_file, Some(PathBuf::from("/etc/fs/models/det.onnx")));
        assert_eq!(c.labelfile_path, Some(PathBuf::from("/abs/labels.txt")));
        assert_eq!((c.batch_size, c.gie_unique_id, c.interval), (4, 3, 2));
        assert_eq!(c.model_color_format, ColorFormat::Bgr);
        assert!(c.maintain_aspect_ratio && c.symmetric_padding);
        assert_eq!(c.network_input_order, InputOrder::Nhwc);
        assert!((c.net_scale_factor - 1.0 / 255.0).abs() < 1e-9);
        assert_eq!(c.offsets, vec![1.0, 2.0, 3.0]);
        assert_eq!(c.infer_dims, Some([3, 300, 300]));
        assert_eq!(c.output_blob_names, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(c.cluster_mode, ClusterMode::None);
        assert_eq!(c.output_parser, ParserKind::Ssd);
        assert_eq!(
            (c.backend, c.device, c.gpu_id),
            (Backend::OnnxRuntime, Device::Cpu, 1)
        );
    }

    #[test]
    fn class_sections_override_all_key_by_key() {
        let loaded = load(
            "[class-attrs-2]\nnms-iou-threshold=0.6\n\
             [property]\nnum-detected-classes=3\n\
             [class-attrs-all]\npre-cluster-threshold=0.4\ntopk=20\ndetected-min-w=8\n\
             roi-top-offset=10\nroi-bottom-offset=20\neps=0.3\ngroup-threshold=2\nminBoxes=3\n\
             dbscan-min-score=1.5\n",
        )
        .unwrap();
        let attrs = loaded.config.class_attrs.resolve(3);
        assert_eq!(attrs[0].pre_cluster_threshold, 0.4);
        assert_eq!(attrs[0].nms_iou_threshold, 0.3);
        assert_eq!(attrs[2].pre_cluster_threshold, 0.4);
        assert_eq!(attrs[2].nms_iou_threshold, 0.6);
        assert_eq!(attrs[2].topk, 20);
        assert!(!attrs[1].size_ok(7.0, 100.0));
        assert!(attrs[1].size_ok(8.0, 100.0));
        let a = attrs[1];
        assert_eq!(
            (a.eps, a.group_threshold, a.min_boxes, a.dbscan_min_score),
            (0.3, 2, 3, 1.5)
        );
        // On a 100-pixel-high input: objects from y 10 to y 80.
        let b = |top: f32, height: f32| ferrostream_core::BBox::new(0.0, top, 5.0, height);
        assert!(a.in_roi(&b(10.0, 70.0), 100.0));
        assert!(!a.in_roi(&b(9.0, 20.0), 100.0));
        assert!(!a.in_roi(&b(50.0, 31.0), 100.0));
    }

    #[test]
    fn unknown_and_unsupported_keys_warn_with_their_name() {
        let loaded =
            load("[property]\nfrobnicate=1\nuff-file=x.uff\n[class-attrs-all]\nhue=0.2\n").unwrap();
        assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("`frobnicate`") && loaded.warnings[0].contains(":2:"));
        assert!(loaded.warnings[1].contains("`uff-file`"));
        assert!(loaded.warnings[2].contains("`hue`"));
    }

    #[test]
    fn benchmark_detector_configurations_load_without_warnings() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipelines");
        for (file, parser, graph, clustering) in [
            ("yolov8s.txt", ParserKind::YoloV8, true, ClusterMode::Nms),
            ("yolov8m.txt", ParserKind::YoloV8, true, ClusterMode::Nms),
            ("rtdetr_l.txt", ParserKind::Detr, false, ClusterMode::None),
        ] {
            let loaded = InferConfig::from_file(&dir.join(file)).unwrap();
            assert!(loaded.warnings.is_empty(), "{file}: {:?}", loaded.warnings);
            let c = loaded.config;
            assert_eq!(
                (c.output_parser, c.cuda_graph, c.cluster_mode),
                (parser, graph, clustering),
                "{file}"
            );
            assert_eq!(c.infer_dims, Some([3, 640, 640]), "{file}");
            assert!(c.maintain_aspect_ratio && c.symmetric_padding, "{file}");
            assert_eq!(c.num_detected_classes, 80, "{file}");
        }
        let labels = std::fs::read_to_string(dir.join("coco80_labels.txt")).unwrap();
        let labels: Vec<&str> = labels.lines().collect();
        assert_eq!(
            (labels.len(), labels[0], labels[79]),
            (80, "person", "toothbrush")
        );
    }

    #[test]
    fn cuda_graph_key() {
        assert!(
            load("[property]\ncuda-graph=1\n")
                .unwrap()
                .config
                .cuda_graph
        );
        assert!(!load("[property]\n").unwrap().config.cuda_graph);
        assert!(load("[property]\ncuda-graph=maybe\n").is_err());
    }

    #[test]
    fn malformed_values_name_file_line_and_key() {
        let err = load("[property]\nbatch-size=1\ninfer-dims=3;300\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(
            err.to_string()
                .contains("/etc/fs/det.txt:3: key `infer-dims`"),
            "{err}"
        );
        let err = load("[property]\nmaintain-aspect-ratio=yes\n").unwrap_err();
        assert!(err.to_string().contains("maintain-aspect-ratio"));
        let err = load("[property]\ncluster-mode=5\n").unwrap_err();
        assert!(err.to_string().contains("unknown cluster-mode 5"), "{err}");
        let err = load("[property]\noutput-parser=retinanet\n").unwrap_err();
        assert!(
            err.to_string().contains("expected one of auto, ssd"),
            "{err}"
        );
        let err = load("[class-attrs-x]\n").unwrap_err();
        assert_eq!(err.line, 1);
        let err = load("[property]\nprocess-mode=3\n").unwrap_err();
        assert!(err.to_string().contains("key `process-mode`"), "{err}");
        let err = load("[property]\noperate-on-gie-id=0\n").unwrap_err();
        assert!(err.to_string().contains("operate-on-gie-id"), "{err}");
    }

    #[test]
    fn reads_secondary_keys() {
        let loaded = load(
            "[property]\nprocess-mode=2\noperate-on-gie-id=1\noperate-on-class-ids=0;2;37\n\
             input-object-min-width=32\ninput-object-min-height=24\ninput-object-max-width=640\n\
             input-object-max-height=0\nsecondary-reinfer-interval=30\noutput-tensor-meta=1\n\
             network-type=100\ngie-unique-id=4\n",
        )
        .unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let c = loaded.config;
        assert_eq!(c.process_mode, ProcessMode::Secondary);
        assert_eq!(c.operate_on_gie_id, Some(1));
        assert_eq!(c.operate_on_class_ids, vec![0, 2, 37]);
        let limits = ObjectLimits {
            min_width: 32,
            min_height: 24,
            max_width: 640,
            max_height: 0,
        };
        assert_eq!(c.objects, limits);
        assert!(limits.accepts(32.0, 24.0) && limits.accepts(640.0, 5000.0));
        assert!(!limits.accepts(31.9, 100.0) && !limits.accepts(641.0, 100.0));
        assert_eq!(
            (c.secondary_reinfer_interval, c.output_tensor_meta),
            (30, true)
        );
        assert_eq!(c.network_type, NetworkType::Other);
        assert_eq!(c.validate(), Ok(vec![]));
        let all = load("[property]\noperate-on-gie-id=-1\n").unwrap().config;
        assert_eq!(all.operate_on_gie_id, None);
        let named = load("[property]\nprocess-mode=secondary\n").unwrap().config;
        assert_eq!(named.process_mode, ProcessMode::Secondary);
    }

    #[test]
    fn reads_tensorrt_keys() {
        let c = load(
            "[property]\nnetwork-mode=2\nint8-calib-file=cal.bin\nworkspace-size=2048\n\
             enable-dla=1\nuse-dla-core=1\nallow-gpu-fallback=0\nengine-cache-dir=engines\n",
        )
        .unwrap()
        .config
        .tensorrt;
        assert_eq!(
            c,
            TensorRtSettings {
                network_mode: NetworkMode::Fp16,
                int8_calib_file: Some(PathBuf::from("/etc/fs/cal.bin")),
                workspace_size: 2048,
                enable_dla: true,
                use_dla_core: 1,
                allow_gpu_fallback: false,
                engine_cache_dir: Some(PathBuf::from("/etc/fs/engines")),
            }
        );
        let int8 = load("[property]\nnetwork-mode=1\n").unwrap().config;
        assert_eq!(int8.tensorrt.network_mode, NetworkMode::Int8);
        let named = load("[property]\nnetwork-mode=fp16\n").unwrap().config;
        assert_eq!(named.tensorrt.network_mode, NetworkMode::Fp16);
    }

    #[test]
    fn contradictory_settings_are_errors_and_idle_ones_warn() {
        let secondary = |text: &str| {
            load(&format!("[property]\nprocess-mode=2\n{text}"))
                .unwrap()
                .config
                .validate()
        };
        let err = secondary("gie-unique-id=2\noperate-on-gie-id=2\n").unwrap_err();
        assert!(err.contains("own gie-unique-id"), "{err}");
        let err = secondary("network-type=100\n").unwrap_err();
        assert!(err.contains("output-tensor-meta=true"), "{err}");
        let warnings = secondary("interval=2\n").unwrap();
        assert!(warnings[0].contains("interval=2"), "{warnings:?}");
        let primary = |text: &str| {
            load(&format!("[property]\n{text}"))
                .unwrap()
                .config
                .validate()
        };
        let err = primary("network-type=100\noutput-tensor-meta=1\n").unwrap_err();
        assert!(err.contains("process-mode=secondary"), "{err}");
        let warnings = primary("operate-on-class-ids=1\nsecondary-reinfer-interval=5\n").unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("operate-on-class-ids"));
        let warnings = primary("output-tensor-meta=1\n").unwrap();
        assert!(warnings[0].contains("primary detector"), "{warnings:?}");
        assert_eq!(
            primary("network-type=1\noutput-tensor-meta=1\n"),
            Ok(vec![])
        );
    }

    #[test]
    fn explicit_properties_override_the_file() {
        let mut file = load("[property]\nbatch-size=4\ninterval=3\n[class-attrs-all]\ntopk=5\n")
            .unwrap()
            .config;
        let props = InferConfig {
            batch_size: 8,
            interval: 0,
            class_attrs: ClassAttrsTable {
                all: ClassAttrs {
                    pre_cluster_threshold: 0.7,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        let set: BTreeSet<&'static str> = ["batch-size", "pre-cluster-threshold"].into();
        file.apply_overrides(&props, &set);
        assert_eq!(file.batch_size, 8);
        assert_eq!(file.interval, 3, "not set as a property: the file wins");
        assert_eq!(file.class_attrs.all.pre_cluster_threshold, 0.7);
        assert_eq!(file.class_attrs.all.topk, 5);
    }
}
