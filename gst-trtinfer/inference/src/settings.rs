// SPDX-License-Identifier: MIT OR Apache-2.0
//! Every setting of `rstrtinfer`, declared once: its property (name, nick, blurb, type, range,
//! default) and its nvinfer configuration-file key. [`SETTINGS`] holds the `[property]` keys
//! and the element's properties; [`CLASS_SETTINGS`] the keys of `[class-attrs-all]` and
//! `[class-attrs-<N>]`, three of which are element properties too.
//!
//! A file is held to the same ranges as the properties. Enums take the nick or nvinfer's number
//! in both. Paths in a file are relative to the file.

use std::path::Path;
use std::sync::LazyLock;

use ferrostream_core::field;
use ferrostream_core::ini::{ConfigError, IniFile};
use ferrostream_core::settings::{
    Bool, Codec, Enum, Field, FilePath, Float, Int, List, Mapped, Optional, Parsed, Place, Props,
    Table, Text, UInt,
};

use crate::config::{
    Backend, BoxCoords, BoxFormat, ClassAttrs, ClassAttrsTable, ClusterMode, ColorFormat,
    CudaGraphMode, Device, InferConfig, InputOrder, LoadedConfig, MAX_BATCH_SIZE, MAX_CLASSES,
    MAX_MESSAGE_MIB, NetworkMode, NetworkType, ParserKind, ProcessMode, ServerFailure, Softmax,
    infer_dims, server_headers,
};
use crate::layout::{Columns, CustomKind};

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

/// The name [`CLASS_SETTINGS`] reads `[class-attrs-all]` and `[class-attrs-<N>]` as.
pub const CLASS_SECTION: &str = "class-attrs";

/// The keys of a class section: detection thresholds, size limits and clustering parameters of
/// one class, or of every class (`[class-attrs-all]`).
pub static CLASS_SETTINGS: LazyLock<Table<ClassAttrs>> = LazyLock::new(|| {
    // `ferrostream_core::settings::setting` of a class section's setting: `field!`'s closures
    // need the configuration type before the builder methods are called.
    fn setting<K: Codec>(
        name: &'static str,
        place: Place<ClassAttrs, K::Value>,
        codec: K,
    ) -> Field<ClassAttrs, K> {
        ferrostream_core::settings::setting(name, place, codec)
    }

    let mut t: Table<ClassAttrs> = Table::new(CLASS_SECTION);
    // Sizes and offsets in frame pixels.
    const SIZE: Float = Float::at_least(0.0);
    t.add(
        setting(
            "pre-cluster-threshold",
            field!(pre_cluster_threshold),
            Float::unit(),
        )
        // nvinfer's earlier name.
        .alias("threshold")
        .nick("Threshold")
        .blurb("Minimum confidence of a detection, for every class ([class-attrs-all])"),
    )
    .add(
        setting(
            "post-cluster-threshold",
            field!(post_cluster_threshold),
            Float::unit(),
        )
        .file_only(),
    )
    .add(
        setting(
            "nms-iou-threshold",
            field!(nms_iou_threshold),
            Float::unit(),
        )
        .nick("NMS IoU")
        .blurb("Overlap above which NMS suppresses the weaker box ([class-attrs-all])"),
    )
    .add(
        setting("topk", field!(topk), Int::at_least(-1))
            .nick("Top K")
            .blurb("Objects kept per class and frame (-1: all) ([class-attrs-all])"),
    )
    .add(setting("detected-min-w", field!(detected_min_w), SIZE).file_only())
    .add(setting("detected-min-h", field!(detected_min_h), SIZE).file_only())
    .add(setting("detected-max-w", field!(detected_max_w), SIZE).file_only())
    .add(setting("detected-max-h", field!(detected_max_h), SIZE).file_only())
    .add(setting("eps", field!(eps), SIZE).file_only())
    .add(setting("group-threshold", field!(group_threshold), Int::any()).file_only())
    .add(
        setting("minBoxes", field!(min_boxes), Int::any())
            .alias("min-boxes")
            .file_only(),
    )
    .add(setting("dbscan-min-score", field!(dbscan_min_score), Float::any()).file_only())
    .add(setting("roi-top-offset", field!(roi_top_offset), SIZE).file_only())
    .add(setting("roi-bottom-offset", field!(roi_bottom_offset), SIZE).file_only());
    t
});

/// The `[property]` keys and the element's properties (but `config-file-path`, `threads`,
/// `stream-priority` and the read-only counters, which are the element's own).
pub static SETTINGS: LazyLock<Table<InferConfig>> = LazyLock::new(|| {
    let mut t: Table<InferConfig> = Table::new("property");
    t.file_property(
        "nvinfer-style INI file ([property], [class-attrs-all], [class-attrs-N]) or nvinferserver \
         (Triton) text-format file (infer_config { ... }, run on backend=triton); properties set \
         on the element override it",
    );
    model(&mut t);
    preprocessing(&mut t);
    parsing(&mut t);
    secondary(&mut t);
    tensorrt(&mut t);
    remote(&mut t);
    for &key in UNSUPPORTED_KEYS {
        t.ignore("property", key, "rstrtinfer does not implement it");
    }
    // network-type=3 (instance segmentation) implies it.
    t.accept("property", "output-instance-mask", Bool);
    // UFF input names (TAO's configurations keep them): ONNX models name their inputs.
    t.accept("property", "uff-input-blob-name", Text::trimmed());
    t
});

/// [`ferrostream_core::settings::setting`] of an [`InferConfig`] setting: `field!`'s closures
/// need the configuration type before the builder methods are called.
fn setting<K: Codec>(
    name: &'static str,
    place: Place<InferConfig, K::Value>,
    codec: K,
) -> Field<InferConfig, K> {
    ferrostream_core::settings::setting(name, place, codec)
}

fn model(t: &mut Table<InferConfig>) {
    t.add(
        setting("onnx-file", field!(onnx_file), FilePath)
            .nick("ONNX model")
            .blurb("Path of the ONNX model"),
    )
    .add(
        setting("custom-lib-path", field!(custom_lib_path), FilePath)
            .nick("Custom parser library")
            .blurb("nvinfer custom parser library (with a parse-*-func-name)"),
    );
    for kind in [
        CustomKind::Detector,
        CustomKind::InstanceMask,
        CustomKind::Classifier,
        CustomKind::Segmentation,
    ] {
        let (nick, blurb) = match kind {
            CustomKind::Detector => (
                "Bounding-box parser",
                "Function of custom-lib-path that parses a detector's outputs",
            ),
            CustomKind::InstanceMask => (
                "Instance-mask parser",
                "Function of custom-lib-path that parses boxes with instance masks",
            ),
            CustomKind::Classifier => (
                "Classifier parser",
                "Function of custom-lib-path that parses a classifier's outputs",
            ),
            CustomKind::Segmentation => (
                "Segmentation parser",
                "Function of custom-lib-path that gives a semantic segmentation's class map",
            ),
        };
        t.add(
            setting(kind.key(), field!(custom_parser), ParserFunction(kind))
                .nick(nick)
                .blurb(blurb),
        );
    }
    t.add(
        setting("model-engine-file", field!(model_engine_file), FilePath)
            .nick("Engine file")
            .blurb(
                "Serialized TensorRT engine (.engine/.plan; backend=tensorrt or auto). When \
                 it does not exist and onnx-file is set, the engine built from the ONNX model \
                 is written there",
            ),
    )
    .add(
        setting("labelfile-path", field!(labelfile_path), FilePath)
            .nick("Label file")
            .blurb("One class label per line"),
    )
    .add(
        setting("backend", field!(backend), Enum::<Backend>::new())
            .nick("Backend")
            .blurb("Inference backend"),
    )
    .add(
        setting("device", field!(device), Enum::<Device>::new())
            .nick("Device")
            .blurb("ONNX Runtime execution provider"),
    )
    .add(
        setting("gpu-id", field!(gpu_id), UInt::any())
            .nick("GPU id")
            .blurb("GPU used by GPU execution providers"),
    )
    .add(
        setting("openvino-device", field!(openvino_device), Text::trimmed())
            .nick("OpenVINO device")
            .blurb(
                "backend=openvino: the device the model runs on (CPU, GPU, GPU.1, NPU, AUTO, \
                 ...; as OpenVINO names them)",
            ),
    )
    .add(
        setting(
            "batch-size",
            field!(batch_size),
            UInt::range(1, MAX_BATCH_SIZE),
        )
        .nick("Batch size")
        .blurb("Maximum number of frames per engine call"),
    )
    .add(
        setting(
            "custom-lib-deepstream-version",
            field!(custom_lib_deepstream_version),
            UInt::range(6, 99),
        )
        .nick("Parser library's DeepStream")
        .blurb(
            "Major version of the DeepStream headers custom-lib-path was built against (9 and \
             later: objects with a rotation angle)",
        ),
    )
    .add(
        setting(
            "gie-unique-id",
            field!(gie_unique_id),
            Mapped::new(
                UInt::range(1, i32::MAX as u32),
                |id| id as i32,
                |&id: &i32| id as u32,
            ),
        )
        .nick("Unique id")
        .blurb("Component id written into the metadata of the objects found"),
    )
    .add(
        setting("interval", field!(interval), UInt::any())
            .nick("Interval")
            .blurb("Frames to skip between inferences (0: infer every frame)")
            .playing(),
    )
    .add(
        setting(
            "network-type",
            field!(network_type),
            Enum::<NetworkType>::new(),
        )
        .nick("Network type")
        .blurb("Detector, classifier, or other (raw tensors only)"),
    )
    .add(
        setting(
            "num-detected-classes",
            field!(num_detected_classes),
            UInt::range(0, MAX_CLASSES),
        )
        .nick("Classes")
        .blurb("Number of classes (0: from the model's outputs or the label file)"),
    )
    .add(
        setting(
            "cuda-graph",
            field!(cuda_graph),
            Enum::<CudaGraphMode>::new(),
        )
        .nick("CUDA graph")
        .blurb(
            "ONNX Runtime's CUDA provider: capture the model's run in a CUDA graph and \
                 replay it for every batch (fewer launches; every batch then runs at \
                 batch-size). on: models with nodes outside the CUDA provider run without it, \
                 with a warning; auto: captured when the model allows it and, with \
                 cuda-tuning, when it measures faster (the choice is logged)",
        ),
    )
    .add(
        setting("cuda-tuning", field!(cuda_tuning), Bool)
            .nick("CUDA provider tuning")
            .blurb(
                "ONNX Runtime's CUDA provider: choose its settings (NHWC layout, cuDNN \
                 algorithm search, CUDA graph under cuda-graph=auto) by timing the model at \
                 batch-size at start; the choice is logged and cached per model, precision, \
                 batch, GPU and runtime version beside the engine cache",
            ),
    )
    .add(
        setting("output-tensor-meta", field!(output_tensor_meta), Bool)
            .nick("Output tensors")
            .blurb(
                "Attach each object's raw output tensors as attributes \
                 \"tensor:<gie-unique-id>:<output name>\" (lists of floats)",
            ),
    );
}

fn preprocessing(t: &mut Table<InferConfig>) {
    t.add(
        setting(
            "model-color-format",
            field!(model_color_format),
            Enum::<ColorFormat>::new(),
        )
        .nick("Model colour format")
        .blurb("Colour order the network expects"),
    )
    .add(
        setting("maintain-aspect-ratio", field!(maintain_aspect_ratio), Bool)
            .nick("Keep aspect ratio")
            .blurb("Scale keeping the aspect ratio, padding the rest"),
    )
    .add(
        setting("symmetric-padding", field!(symmetric_padding), Bool)
            .nick("Symmetric padding")
            .blurb("Centre the scaled frame (else pad right and bottom only)"),
    )
    .add(
        setting(
            "network-input-order",
            field!(network_input_order),
            Enum::<InputOrder>::new(),
        )
        .nick("Input order")
        .blurb("Tensor layout of the network input"),
    )
    .add(
        setting(
            "net-scale-factor",
            field!(net_scale_factor),
            Float::at_least(0.0),
        )
        .nick("Scale factor")
        .blurb("Pixel normalisation: y = net-scale-factor * (x - offset)"),
    )
    .add(
        setting("offsets", field!(offsets), List::<f32>::new())
            .check(|offsets, _| {
                if let Some(o) = offsets.iter().find(|o| !o.is_finite()) {
                    return Err(format!("expected finite offsets, found {o}"));
                }
                crate::config::offsets(offsets.clone()).map(drop)
            })
            .nick("Offsets")
            .blurb("Per-channel offsets subtracted before scaling, e.g. 123.7;116.3;103.5"),
    )
    .add(
        setting("infer-dims", field!(infer_dims), InferDims)
            // nvinfer's earlier key (TAO's configurations use it): C;H;W;order.
            .alias("input-dims")
            .nick("Input dims")
            .blurb("C;H;W network input size for models with dynamic dims"),
    );
}

fn parsing(t: &mut Table<InferConfig>) {
    t.add(
        setting(
            "output-blob-names",
            field!(output_blob_names),
            List::<String>::new(),
        )
        .nick("Outputs")
        .blurb("Outputs to parse, ';'-separated, in the parser's order"),
    )
    .add(
        setting(
            "output-parser",
            field!(output_parser),
            Enum::<ParserKind>::new(),
        )
        .nick("Output parser")
        .blurb("How output tensors become objects"),
    )
    .add(
        setting(
            "cluster-mode",
            field!(cluster_mode),
            Enum::<ClusterMode>::new(),
        )
        .nick("Cluster mode")
        .blurb("Clustering of raw detections"),
    )
    .add(
        setting("box-format", field!(box_format), Enum::<BoxFormat>::new())
            // The key's earlier name.
            .alias("ssd-box-format")
            .nick("Box format")
            .blurb("Order of a box's four values in the outputs"),
    )
    .add(
        setting(
            "box-coordinates",
            field!(box_coordinates),
            Enum::<BoxCoords>::new(),
        )
        .nick("Box coordinates")
        .blurb("Boxes normalised to the network input or in its pixels"),
    )
    .add(
        setting(
            "end-to-end-columns",
            field!(end_to_end_columns),
            Optional(Parsed::<Columns>::new()),
        )
        .nick("End-to-end columns")
        .blurb(
            "Columns of end-to-end rows, e.g. box,score,class or batch,box,class,score \
             (empty: guessed from the row width)",
        ),
    )
    .add(
        setting(
            "filter-out-class-ids",
            field!(filter_out_class_ids),
            List::<u32>::new(),
        )
        .nick("Classes left out")
        .blurb("Detected classes left out of the results, ';'-separated"),
    )
    .add(
        setting("yolox-strides", field!(yolox_strides), List::<u32>::new())
            .check(|strides, _| {
                if strides.is_empty() || strides.contains(&0) {
                    Err("expected strides above 0, e.g. 8;16;32".into())
                } else {
                    Ok(())
                }
            })
            .nick("YOLOX strides")
            .blurb("Strides of a YOLOX head's grids, ';'-separated (default 8;16;32)"),
    )
    .add(
        // Bounded: the names of this many keypoints are made when the element starts.
        setting("num-keypoints", field!(num_keypoints), UInt::range(1, 1024))
            .nick("Keypoints")
            .blurb("Keypoints per object of a pose model (output-parser yolov8-pose)"),
    )
    .add(
        setting(
            "keypoint-names",
            field!(keypoint_names),
            List::<String>::new(),
        )
        .nick("Keypoint names")
        .blurb("Names of a pose model's keypoints, ';'-separated (empty: COCO's 17)"),
    )
    .add(
        setting(
            "keypoint-skeleton",
            field!(keypoint_skeleton),
            List::<String>::new(),
        )
        .check(|pairs, _| {
            pairs
                .iter()
                .try_for_each(|p| crate::parse::parse_limb(p).map(|_| ()))
        })
        .nick("Keypoint skeleton")
        .blurb(
            "Limbs between a pose model's keypoints as a-b index pairs, ';'-separated (empty: \
             COCO's skeleton for 17 keypoints)",
        ),
    )
    .nested(
        field!(class_attrs.all),
        &CLASS_SETTINGS,
        &["pre-cluster-threshold", "nms-iou-threshold", "topk"],
    )
    .add(
        setting(
            "classifier-threshold",
            field!(classifier_threshold),
            Float::unit(),
        )
        .nick("Classifier threshold")
        .blurb("Minimum probability of a classification result"),
    )
    .add(
        setting(
            "segmentation-output-order",
            field!(segmentation_hwc),
            Mapped::new(UInt::range(0, 1), |n| n == 1, |&hwc: &bool| u32::from(hwc)),
        )
        .nick("Segmentation output order")
        .blurb("Semantic segmentation scores: 0 = [N,C,H,W], 1 = [N,H,W,C]"),
    )
    .add(
        setting(
            "segmentation-threshold",
            field!(segmentation_threshold),
            Float::unit(),
        )
        .nick("Segmentation threshold")
        .blurb("Least score of a pixel's class, or mask value of an object's pixel"),
    )
    .add(
        setting(
            "classifier-softmax",
            field!(classifier_softmax),
            Enum::<Softmax>::new(),
        )
        .nick("Classifier softmax")
        .blurb("Whether classifier outputs need a softmax"),
    );
}

fn secondary(t: &mut Table<InferConfig>) {
    t.add(
        setting(
            "process-mode",
            field!(process_mode),
            Enum::<ProcessMode>::new(),
        )
        .nick("Process mode")
        .blurb(
            "Infer on whole frames (primary) or on the objects upstream components found \
                 (secondary)",
        ),
    )
    .add(
        setting(
            "operate-on-gie-id",
            field!(operate_on_gie_id),
            Mapped::new(
                Int::at_least(-1),
                |id| (id > 0).then_some(id),
                |id: &Option<i32>| id.unwrap_or(-1),
            ),
        )
        .nick("Operate on component")
        .blurb(
            "Secondary mode: infer on the objects of the component with this gie-unique-id \
             (-1: of every other component)",
        ),
    )
    .add(
        setting(
            "operate-on-class-ids",
            field!(operate_on_class_ids),
            List::<i32>::new(),
        )
        .nick("Operate on classes")
        .blurb("Secondary mode: class ids of the objects to infer on, ';'-separated (empty: all)"),
    );
    let limits: [(
        &'static str,
        Place<InferConfig, u32>,
        &'static str,
        &'static str,
    ); 4] = [
        (
            "input-object-min-width",
            field!(objects.min_width),
            "Minimum object width",
            "Secondary mode: skip objects narrower than this (frame pixels)",
        ),
        (
            "input-object-min-height",
            field!(objects.min_height),
            "Minimum object height",
            "Secondary mode: skip objects shorter than this (frame pixels)",
        ),
        (
            "input-object-max-width",
            field!(objects.max_width),
            "Maximum object width",
            "Secondary mode: skip objects wider than this (frame pixels; 0: no limit)",
        ),
        (
            "input-object-max-height",
            field!(objects.max_height),
            "Maximum object height",
            "Secondary mode: skip objects taller than this (frame pixels; 0: no limit)",
        ),
    ];
    for (name, place, nick, blurb) in limits {
        t.add(setting(name, place, UInt::any()).nick(nick).blurb(blurb));
    }
    t.add(
        setting(
            "secondary-reinfer-interval",
            field!(secondary_reinfer_interval),
            UInt::any(),
        )
        .nick("Re-inference interval")
        .blurb(
            "Secondary mode: frames for which a tracked object's result is reused before it \
             is inferred again (0: infer every frame)",
        ),
    );
}

fn tensorrt(t: &mut Table<InferConfig>) {
    t.add(
        setting(
            "network-mode",
            field!(tensorrt.network_mode),
            Enum::<NetworkMode>::new(),
        )
        .nick("Network mode")
        .blurb(
            "Arithmetic precision. TensorRT: engines built at it. ONNX Runtime CUDA: fp16 \
             converts the model to FP16 (cached); int8 runs models with Q/DQ nodes, else FP16 \
             with a warning. ONNX Runtime CPU: int8 runs Q/DQ models on INT8 kernels; fp16 and \
             int8 of float models run FP32 with a warning. OpenVINO: the device's BF16/FP16 or \
             INT8",
        ),
    )
    .add(
        setting(
            "int8-calib-file",
            field!(tensorrt.int8_calib_file),
            FilePath,
        )
        .nick("INT8 calibration")
        .blurb("TensorRT: INT8 calibration cache (network-mode int8)"),
    )
    .add(
        setting(
            "workspace-size",
            field!(tensorrt.workspace_size),
            UInt::any(),
        )
        .nick("Workspace size")
        .blurb("TensorRT: builder workspace limit in MiB (0: TensorRT's default)"),
    )
    .add(
        setting("enable-dla", field!(tensorrt.enable_dla), Bool)
            .nick("Enable DLA")
            .blurb("TensorRT: build for and run on DLA core use-dla-core (Jetson)"),
    )
    .add(
        setting("use-dla-core", field!(tensorrt.use_dla_core), UInt::any())
            .nick("DLA core")
            .blurb("TensorRT: the DLA core with enable-dla"),
    )
    .add(
        setting(
            "allow-gpu-fallback",
            field!(tensorrt.allow_gpu_fallback),
            Bool,
        )
        .nick("GPU fallback")
        .blurb("TensorRT with enable-dla: layers the DLA cannot run run on the GPU"),
    )
    .add(
        setting(
            "engine-cache-dir",
            field!(tensorrt.engine_cache_dir),
            FilePath,
        )
        .nick("Engine cache")
        .blurb(
            "TensorRT: where engines built from ONNX are cached (default: \
             $FERROSTREAM_ENGINE_CACHE, else ~/.cache/ferrostream/engines)",
        ),
    );
}

fn remote(t: &mut Table<InferConfig>) {
    t.add(
        setting("server-url", field!(remote.server_url), Text::trimmed())
            .nick("Server URL")
            .blurb(
                "backend=kserve: the KServe v2 / Triton gRPC server (host:port, http://, \
                 grpc://; https:// or grpcs:// for TLS)",
            ),
    )
    .add(
        setting("model-name", field!(remote.model_name), Text::trimmed())
            .nick("Model name")
            .blurb("backend=kserve: the model's name on the server"),
    )
    .add(
        setting(
            "model-version",
            field!(remote.model_version),
            Text::trimmed(),
        )
        .nick("Model version")
        .blurb("backend=kserve: the model's version (empty: the server's choice)"),
    )
    .add(
        setting(
            "server-timeout",
            field!(remote.timeout_ms),
            UInt::at_least(1),
        )
        .nick("Server timeout")
        .blurb("backend=kserve: milliseconds each request may take (and to connect)"),
    )
    .add(
        setting("server-headers", field!(remote.headers), Headers)
            .nick("Server headers")
            .blurb(
                "backend=kserve: name=value pairs sent with every request, separated by ; \
                 (e.g. authorization=Bearer <token>)",
            ),
    )
    .add(
        setting("server-ca-file", field!(remote.ca_file), FilePath)
            .nick("Server CA")
            .blurb(
                "backend=kserve with TLS: PEM file of the CA that signed the server's \
                 certificate (default: the public web roots)",
            ),
    )
    .add(
        setting("server-cert-file", field!(remote.cert_file), FilePath)
            .nick("Client certificate")
            .blurb(
                "backend=kserve with TLS: PEM client certificate, for servers that ask for \
                 one",
            ),
    )
    .add(
        setting("server-key-file", field!(remote.key_file), FilePath)
            .nick("Client key")
            .blurb("backend=kserve with TLS: PEM key of server-cert-file"),
    )
    .add(
        setting(
            "requests-in-flight",
            field!(remote.requests_in_flight),
            UInt::range(1, 64),
        )
        .nick("Requests in flight")
        .blurb(
            "backend=kserve: batches sent to the server and not yet answered, at most; \
             backend=openvino: infer requests running at once (primary mode)",
        ),
    )
    .add(
        setting(
            "on-server-failure",
            field!(remote.on_failure),
            Enum::<ServerFailure>::new(),
        )
        .nick("On server failure")
        .blurb(
            "backend=kserve: when the server cannot be reached or does not answer in time, \
             wait (retry, holding the stream back) or drop (pass the frames on without \
             results, counted in stats; also when requests-in-flight are all taken)",
        ),
    )
    .add(
        setting("server-give-up", field!(remote.give_up_s), UInt::any())
            .nick("Server give-up")
            .blurb(
                "backend=kserve: seconds without an answer from the server after which the \
                 element fails with an error (0: never)",
            ),
    )
    .add(
        setting(
            "server-max-message-mib",
            field!(remote.max_message_mib),
            UInt::range(0, MAX_MESSAGE_MIB),
        )
        .nick("Largest answer")
        .blurb(
            "backend=kserve: the largest answer accepted from the server, in MiB (0: four \
             times the largest answer the model's metadata allows for a batch, at least 16 \
             MiB); a larger one is an error",
        ),
    );
}

impl ClassAttrsTable {
    /// Resolved attributes for classes `0..num_classes`.
    pub fn resolve(&self, num_classes: usize) -> Vec<ClassAttrs> {
        (0..num_classes)
            .map(|class| match self.per_class.get(&(class as u32)) {
                Some(section) => CLASS_SETTINGS
                    .resolve(self.all, section)
                    .expect("a file's sections hold no refused value"),
                None => self.all,
            })
            .collect()
    }
}

/// Reading nvinfer INI files (`InferConfig::from_file` reads files of either format).
impl InferConfig {
    pub fn from_ini(ini: &IniFile) -> Result<LoadedConfig, ConfigError> {
        Self::from_ini_over(ini, InferConfig::default())
    }

    /// Reads an INI file over `base` (an element's defaults): keys the file leaves out keep the
    /// base's values.
    pub(crate) fn from_ini_over(
        ini: &IniFile,
        base: InferConfig,
    ) -> Result<LoadedConfig, ConfigError> {
        let mut config = base;
        let mut warnings = SETTINGS.read_ini(ini, &mut config, |section, config, warnings| {
            match class_section(&section.name) {
                None => Ok(false),
                Some(ClassSection::All) => {
                    let all = &mut config.class_attrs.all;
                    CLASS_SETTINGS.read_section(ini, section, CLASS_SECTION, all, warnings)?;
                    Ok(true)
                }
                // Read below, after [class-attrs-all] wherever that is in the file.
                Some(ClassSection::Class(Ok(_))) => Ok(true),
                Some(ClassSection::Class(Err(()))) => Err(ConfigError {
                    path: ini.path.clone(),
                    line: section.line,
                    message: format!(
                        "section [{}]: expected [class-attrs-all] or [class-attrs-<class id>]",
                        section.name
                    ),
                }),
            }
        })?;
        // Per-class sections override [class-attrs-all] key by key.
        for section in &ini.sections {
            let Some(ClassSection::Class(Ok(class))) = class_section(&section.name) else {
                continue;
            };
            let overrides = config
                .class_attrs
                .per_class
                .entry(class)
                .or_insert_with(|| Props::new(ClassAttrs::default()));
            CLASS_SETTINGS.read_section_as_set(
                ini,
                section,
                CLASS_SECTION,
                overrides,
                &mut warnings,
            )?;
        }
        Ok(LoadedConfig { config, warnings })
    }
}

/// What a `[class-attrs-…]` section is for.
enum ClassSection {
    All,
    /// `[class-attrs-<N>]`; `Err` when N is not a class id.
    Class(Result<u32, ()>),
}

fn class_section(name: &str) -> Option<ClassSection> {
    let class = name.strip_prefix("class-attrs-")?;
    Some(if class == "all" {
        ClassSection::All
    } else {
        ClassSection::Class(class.parse().map_err(drop))
    })
}

/// One of the three `parse-*-func-name` keys: they share the custom parser, so setting one
/// replaces any other, and empty text clears it.
struct ParserFunction(CustomKind);

impl Codec for ParserFunction {
    type Value = Option<(CustomKind, String)>;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<Self::Value, String> {
        let name = text.trim();
        Ok((!name.is_empty()).then(|| (self.0, name.to_owned())))
    }

    fn to_text(&self, value: &Self::Value) -> String {
        match value {
            Some((kind, name)) if *kind == self.0 => name.clone(),
            _ => String::new(),
        }
    }

    fn samples(&self) -> Vec<Self::Value> {
        vec![None, Some((self.0, "NvDsInferParseCustom".to_owned()))]
    }
}

/// `infer-dims`: `C;H;W`, or empty for the model's own.
struct InferDims;

impl Codec for InferDims {
    type Value = Option<[u32; 3]>;

    fn from_text(&self, text: &str, dir: &Path) -> Result<Self::Value, String> {
        match List::<u32>::new().from_text(text, dir)? {
            values if values.is_empty() => Ok(None),
            // `input-dims` adds the input order (0 NCHW, 1 NHWC), which the engine reads from
            // the model itself.
            values if values.len() == 4 => match values[3] {
                0 | 1 => infer_dims(&values[..3]).map(Some),
                order => Err(format!(
                    "the fourth value of input-dims is the input order, 0 (NCHW) or 1 (NHWC), \
                     found {order}"
                )),
            },
            values => infer_dims(&values).map(Some),
        }
    }

    fn to_text(&self, value: &Self::Value) -> String {
        value.map_or_else(String::new, |[c, h, w]| format!("{c};{h};{w}"))
    }

    fn samples(&self) -> Vec<Self::Value> {
        vec![None, Some([3, 300, 300]), Some([1, 64, 32])]
    }
}

/// `server-headers`: `name=value` pairs separated by `;`, in order.
struct Headers;

impl Codec for Headers {
    type Value = Vec<(String, String)>;

    fn from_text(&self, text: &str, _dir: &Path) -> Result<Self::Value, String> {
        server_headers(text)
    }

    fn to_text(&self, value: &Self::Value) -> String {
        let pairs: Vec<String> = value.iter().map(|(n, v)| format!("{n}={v}")).collect();
        pairs.join(";")
    }

    fn samples(&self) -> Vec<Self::Value> {
        vec![
            Vec::new(),
            vec![
                ("authorization".into(), "Bearer x".into()),
                ("x-tenant".into(), "a".into()),
            ],
        ]
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{ObjectLimits, TensorRtSettings};

    #[test]
    fn the_settings_tables_check_out() {
        SETTINGS.check(&InferConfig::default()).unwrap();
        CLASS_SETTINGS.check(&ClassAttrs::default()).unwrap();
    }

    #[test]
    fn every_property_of_the_element_is_a_setting_or_its_own() {
        let own = ["config-file-path", "threads", "stream-priority"];
        let names: Vec<&str> = SETTINGS.property_names().collect();
        // 68: the properties of the element at e486d9b but config-file-path (the table's file
        // property), threads, stream-priority and the read-only counters; and openvino-device
        // and cuda-tuning; and num-keypoints, keypoint-names and keypoint-skeleton; and
        // parse-segmentation-func-name.
        assert_eq!(names.len(), 73, "{names:?}");
        for name in own {
            assert!(!names.contains(&name), "{name}");
        }
    }

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
        assert!(e.contains("expected 1 to 64, found 0"), "{e}");
        let mut c = InferConfig {
            backend: Backend::Kserve,
            ..InferConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("needs server-url"));
        c.backend = Backend::OnnxRuntime;
        c.remote.server_url = "h:1".into();
        assert!(c.validate().unwrap()[0].contains("server is not used"));
    }

    /// TAO's nvinfer files: the earlier `input-dims` (with the input order) and UFF input
    /// names load, quietly.
    #[test]
    fn reads_tao_era_keys() {
        let loaded =
            load("[property]\ninput-dims=3;544;960;0\nuff-input-blob-name=input_1\n").unwrap();
        assert_eq!(loaded.config.infer_dims, Some([3, 544, 960]));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let e = load("[property]\ninput-dims=3;544;960;7\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 (NCHW) or 1 (NHWC), found 7"), "{e}");
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
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines");
        for (file, parser, graph, clustering) in [
            (
                "yolov8s.txt",
                ParserKind::YoloV8,
                CudaGraphMode::Auto,
                ClusterMode::Nms,
            ),
            (
                "yolov8m.txt",
                ParserKind::YoloV8,
                CudaGraphMode::Auto,
                ClusterMode::Nms,
            ),
            (
                "rtdetr_l.txt",
                ParserKind::Detr,
                CudaGraphMode::Auto,
                ClusterMode::None,
            ),
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
        let graph = |text: &str| load(text).map(|l| l.config.cuda_graph);
        assert_eq!(
            graph("[property]\ncuda-graph=1\n").unwrap(),
            CudaGraphMode::On
        );
        assert_eq!(
            graph("[property]\ncuda-graph=auto\n").unwrap(),
            CudaGraphMode::Auto
        );
        assert_eq!(graph("[property]\n").unwrap(), CudaGraphMode::Off);
        assert!(graph("[property]\ncuda-graph=maybe\n").is_err());
        let tuning = |text: &str| load(text).map(|l| l.config.cuda_tuning);
        assert!(tuning("[property]\n").unwrap());
        assert!(!tuning("[property]\ncuda-tuning=0\n").unwrap());
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
        let err = load("[property]\ncluster-mode=5\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown value `5`") && err.contains("nms (2), dbscan-nms (3), none (4)"),
            "{err}"
        );
        let err = load("[property]\noutput-parser=retinanet\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("expected one of auto (0), ssd (1)"),
            "{err}"
        );
        let err = load("[class-attrs-x]\n").unwrap_err();
        assert_eq!(err.line, 1);
        let err = load("[property]\nprocess-mode=3\n").unwrap_err();
        assert!(err.to_string().contains("key `process-mode`"), "{err}");
        let err = load("[property]\noperate-on-gie-id=-2\n").unwrap_err();
        assert!(err.to_string().contains("operate-on-gie-id"), "{err}");
        // A keypoint count that would make the element name millions of points.
        let err = load("[property]\nnum-keypoints=4000000000\n").unwrap_err();
        assert!(err.to_string().contains("num-keypoints"), "{err}");
        let err = load("[property]\nkeypoint-skeleton=0-1;2\n").unwrap_err();
        assert!(err.to_string().contains("a-b"), "{err}");
        // As the property: 0 and -1 mean the objects of every other component.
        let all = load("[property]\noperate-on-gie-id=0\n").unwrap().config;
        assert_eq!(all.operate_on_gie_id, None);
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
        let file = load("[property]\nbatch-size=4\ninterval=3\n[class-attrs-all]\ntopk=5\n")
            .unwrap()
            .config;
        let mut props = Props::new(InferConfig::default());
        for (name, text) in [("batch-size", "8"), ("pre-cluster-threshold", "0.7")] {
            SETTINGS.set_text(&mut props, name, text).unwrap().unwrap();
        }
        let c = SETTINGS.resolve(file, &props).unwrap();
        assert_eq!(c.batch_size, 8);
        assert_eq!(c.interval, 3, "not set as a property: the file wins");
        assert_eq!(c.class_attrs.all.pre_cluster_threshold, 0.7);
        assert_eq!(c.class_attrs.all.topk, 5);
        let refused = SETTINGS.set_text(&mut props, "pre-cluster-threshold", "1.5");
        assert!(refused.unwrap().unwrap_err().contains("expected 0 to 1"));
    }
}
