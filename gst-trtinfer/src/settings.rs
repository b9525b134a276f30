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
use ferrostream_core::settings::{
    Bool, Codec, Enum, FilePath, Float, Int, List, Mapped, Optional, Parsed, Place, Table, Text,
    UInt, setting,
};

use crate::config::{
    Backend, BoxCoords, BoxFormat, ClassAttrs, ClusterMode, ColorFormat, Device, InferConfig,
    InputOrder, MAX_BATCH_SIZE, MAX_CLASSES, MAX_MESSAGE_MIB, NetworkMode, NetworkType,
    ParserKind, ProcessMode, ServerFailure, Softmax, infer_dims, server_headers,
};
use crate::custom::CustomKind;
use crate::parse::Columns;

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
        setting("nms-iou-threshold", field!(nms_iou_threshold), Float::unit())
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
    model(&mut t);
    preprocessing(&mut t);
    parsing(&mut t);
    secondary(&mut t);
    tensorrt(&mut t);
    remote(&mut t);
    for &key in UNSUPPORTED_KEYS {
        t.ignore("property", key, "rstrtinfer does not implement it");
    }
    t.ignore(
        "property",
        "output-instance-mask",
        "network-type=3 (instance segmentation) implies it",
    );
    t
});

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
            .blurb("Serialized TensorRT engine (.engine/.plan; backend=tensorrt or auto). When \
                 it does not exist and onnx-file is set, the engine built from the ONNX model \
                 is written there"),
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
        setting("batch-size", field!(batch_size), UInt::range(1, MAX_BATCH_SIZE))
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
        .blurb("Major version of the DeepStream headers custom-lib-path was built against (9 and \
             later: objects with a rotation angle)"),
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
        setting("network-type", field!(network_type), Enum::<NetworkType>::new())
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
        setting("cuda-graph", field!(cuda_graph), Bool)
            .nick("CUDA graph")
            .blurb("ONNX Runtime's CUDA provider: capture the model's run in a CUDA graph and \
                 replay it for every batch (fewer launches; every batch then runs at \
                 batch-size). Models with nodes outside the CUDA provider run without it, \
                 with a warning"),
    )
    .add(
        setting("output-tensor-meta", field!(output_tensor_meta), Bool)
            .nick("Output tensors")
            .blurb("Attach each object's raw output tensors as attributes \
                 \"tensor:<gie-unique-id>:<output name>\" (lists of floats)"),
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
        setting("net-scale-factor", field!(net_scale_factor), Float::at_least(0.0))
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
        setting("output-parser", field!(output_parser), Enum::<ParserKind>::new())
            .nick("Output parser")
            .blurb("How output tensors become objects"),
    )
    .add(
        setting("cluster-mode", field!(cluster_mode), Enum::<ClusterMode>::new())
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
        .blurb("Columns of end-to-end rows, e.g. box,score,class or batch,box,class,score \
             (empty: guessed from the row width)"),
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
        setting("process-mode", field!(process_mode), Enum::<ProcessMode>::new())
            .nick("Process mode")
            .blurb("Infer on whole frames (primary) or on the objects upstream components found \
                 (secondary)"),
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
        .blurb("Secondary mode: infer on the objects of the component with this gie-unique-id \
             (-1: of every other component)"),
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
    let limits: [(&'static str, Place<InferConfig, u32>, &'static str, &'static str); 4] = [
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
        .blurb("Secondary mode: frames for which a tracked object's result is reused before it \
             is inferred again (0: infer every frame)"),
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
        .blurb("TensorRT: precision of engines built from ONNX"),
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
        setting("workspace-size", field!(tensorrt.workspace_size), UInt::any())
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
        .blurb("TensorRT: where engines built from ONNX are cached (default: \
             $FERROSTREAM_ENGINE_CACHE, else ~/.cache/ferrostream/engines)"),
    );
}

fn remote(t: &mut Table<InferConfig>) {
    t.add(
        setting("server-url", field!(remote.server_url), Text::trimmed())
            .nick("Server URL")
            .blurb("backend=kserve: the KServe v2 / Triton gRPC server (host:port, http://, \
                 grpc://; https:// or grpcs:// for TLS)"),
    )
    .add(
        setting("model-name", field!(remote.model_name), Text::trimmed())
            .nick("Model name")
            .blurb("backend=kserve: the model's name on the server"),
    )
    .add(
        setting("model-version", field!(remote.model_version), Text::trimmed())
            .nick("Model version")
            .blurb("backend=kserve: the model's version (empty: the server's choice)"),
    )
    .add(
        setting("server-timeout", field!(remote.timeout_ms), UInt::at_least(1))
            .nick("Server timeout")
            .blurb("backend=kserve: milliseconds each request may take (and to connect)"),
    )
    .add(
        setting("server-headers", field!(remote.headers), Headers)
            .nick("Server headers")
            .blurb("backend=kserve: name=value pairs sent with every request, separated by ; \
                 (e.g. authorization=Bearer <token>)"),
    )
    .add(
        setting("server-ca-file", field!(remote.ca_file), FilePath)
            .nick("Server CA")
            .blurb("backend=kserve with TLS: PEM file of the CA that signed the server's \
                 certificate (default: the public web roots)"),
    )
    .add(
        setting("server-cert-file", field!(remote.cert_file), FilePath)
            .nick("Client certificate")
            .blurb("backend=kserve with TLS: PEM client certificate, for servers that ask for \
                 one"),
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
        .blurb("backend=kserve: batches sent to the server and not yet answered, at most \
             (primary mode)"),
    )
    .add(
        setting(
            "on-server-failure",
            field!(remote.on_failure),
            Enum::<ServerFailure>::new(),
        )
        .nick("On server failure")
        .blurb("backend=kserve: when the server cannot be reached or does not answer in time, \
             wait (retry, holding the stream back) or drop (pass the frames on without \
             results, counted in stats; also when requests-in-flight are all taken)"),
    )
    .add(
        setting("server-give-up", field!(remote.give_up_s), UInt::any())
            .nick("Server give-up")
            .blurb("backend=kserve: seconds without an answer from the server after which the \
                 element fails with an error (0: never)"),
    )
    .add(
        setting(
            "server-max-message-mib",
            field!(remote.max_message_mib),
            UInt::range(0, MAX_MESSAGE_MIB),
        )
        .nick("Largest answer")
        .blurb("backend=kserve: the largest answer accepted from the server, in MiB (0: four \
             times the largest answer the model's metadata allows for a batch, at least 16 \
             MiB); a larger one is an error"),
    );
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

    ferrostream_core::string_property!();
}

/// `infer-dims`: `C;H;W`, or empty for the model's own.
struct InferDims;

impl Codec for InferDims {
    type Value = Option<[u32; 3]>;

    fn from_text(&self, text: &str, dir: &Path) -> Result<Self::Value, String> {
        match List::<u32>::new().from_text(text, dir)? {
            values if values.is_empty() => Ok(None),
            values => infer_dims(&values).map(Some),
        }
    }

    fn to_text(&self, value: &Self::Value) -> String {
        value.map_or_else(String::new, |[c, h, w]| format!("{c};{h};{w}"))
    }

    fn samples(&self) -> Vec<Self::Value> {
        vec![None, Some([3, 300, 300]), Some([1, 64, 32])]
    }

    ferrostream_core::string_property!();
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

    ferrostream_core::string_property!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_tables_check_out() {
        SETTINGS.check(&InferConfig::default()).unwrap();
        CLASS_SETTINGS.check(&ClassAttrs::default()).unwrap();
    }

    #[test]
    fn every_property_of_the_element_is_a_setting_or_its_own() {
        let own = ["config-file-path", "threads", "stream-priority"];
        let names: Vec<&str> = SETTINGS.property_names().collect();
        assert_eq!(names.len(), 69, "{names:?}");
        for name in own {
            assert!(!names.contains(&name), "{name}");
        }
    }
}
