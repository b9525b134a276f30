// SPDX-License-Identifier: MIT OR Apache-2.0
//! The nvinferserver mapping: whole configurations in the shape of NVIDIA's samples against the
//! nvinfer INI files that say the same, refusals, notices and errors with their lines.

use std::path::{Path, PathBuf};

use ferrostream_core::ini::{ConfigError, IniFile};
use ferrostream_core::settings::Props;

use super::*;
use crate::config::{Backend, ClusterMode, ColorFormat, NetworkType, ProcessMode};

const FILE: &str = "/etc/ds/config_triton_grpc.txt";

fn load(text: &str) -> Result<LoadedConfig, ConfigError> {
    assert!(is_nvinferserver(text), "not detected: {text}");
    read(Path::new(FILE), text, InferConfig::default())
}

fn ini(text: &str) -> LoadedConfig {
    InferConfig::from_ini(&IniFile::parse(Path::new(FILE), text).unwrap()).unwrap()
}

/// A primary detector in the shape of NVIDIA's Triton gRPC samples (TAO PeopleNet).
const DETECTOR: &str = r#"
# A comment before the first field.
infer_config {
  unique_id: 1
  gpu_ids: [0]
  max_batch_size: 4
  backend {
    inputs: [ {
      name: "input_1:0"
      dims: [3, 544, 960]
    }]
    outputs: [
      {name: "output_bbox/BiasAdd:0"},
      {name: "output_cov/Sigmoid:0"}
    ]
    triton {
      model_name: "peoplenet"
      version: -1
      grpc {
        url: "localhost:8001"
        enable_cuda_buffer_sharing: false
      }
    }
  }

  preprocess {
    network_format: IMAGE_FORMAT_BGR
    tensor_order: TENSOR_ORDER_LINEAR
    maintain_aspect_ratio: 1
    symmetric_padding: 1
    frame_scaling_hw: FRAME_SCALING_HW_DEFAULT
    frame_scaling_filter: 1
    normalize {
      scale_factor: 0.0039215697906911373
      channel_offsets: [1, 2, 3.5]
    }
  }

  postprocess {
    labelfile_path: "labels_peoplenet.txt"
    detection {
      num_detected_classes: 3
      per_class_params {
        key: 0
        value { pre_threshold: 0.4 }
      }
      per_class_params [ { key: 2 value: { pre_threshold: 0.6 } } ]
      nms {
        confidence_threshold:0.2
        topk:20
        iou_threshold:0.5
      }
    }
  }

  extra {
    copy_input_to_host_buffers: false
  }
}
input_control {
  process_mode: PROCESS_MODE_FULL_FRAME
  operate_on_gie_id: -1
  interval: 2
}
output_control {
  detect_control {
    default_filter { bbox_filter { min_width: 8 min_height: 16 } roi_top_offset: 10 }
    specific_class_filters [ { key: 1 value { bbox_filter { max_width: 300 } } } ]
    filter_out_class_ids: [2]
  }
}
"#;

/// What [`DETECTOR`] says, as nvinfer keys.
const DETECTOR_INI: &str = "\
[property]
gie-unique-id=1
gpu-id=0
batch-size=4
backend=triton
model-name=peoplenet
server-url=localhost:8001
infer-dims=3;544;960
model-color-format=bgr
network-input-order=nchw
maintain-aspect-ratio=1
symmetric-padding=1
net-scale-factor=0.0039215697906911373
offsets=1;2;3.5
labelfile-path=labels_peoplenet.txt
network-type=detector
num-detected-classes=3
cluster-mode=nms
process-mode=primary
operate-on-gie-id=-1
interval=2
filter-out-class-ids=2

[class-attrs-all]
pre-cluster-threshold=0.2
nms-iou-threshold=0.5
topk=20
detected-min-w=8
detected-min-h=16
roi-top-offset=10

[class-attrs-0]
pre-cluster-threshold=0.4

[class-attrs-2]
pre-cluster-threshold=0.6

[class-attrs-1]
detected-min-w=0
detected-min-h=0
detected-max-w=300
detected-max-h=0
roi-top-offset=0
roi-bottom-offset=0
";

#[test]
fn a_grpc_detector_reads_as_its_nvinfer_equivalent() {
    let loaded = load(DETECTOR).unwrap();
    let expected = ini(DETECTOR_INI);
    assert_eq!(loaded.config, expected.config);
    let c = &loaded.config;
    assert_eq!(c.backend, Backend::Triton);
    assert_eq!(
        (c.remote.server_url.as_str(), c.remote.model_name.as_str()),
        ("localhost:8001", "peoplenet")
    );
    assert_eq!(c.remote.model_version, "");
    assert_eq!(
        c.labelfile_path,
        Some(PathBuf::from("/etc/ds/labels_peoplenet.txt"))
    );
    assert_eq!(c.model_color_format, ColorFormat::Bgr);
    assert_eq!(c.infer_dims, Some([3, 544, 960]));
    let attrs = c.class_attrs.resolve(3);
    assert_eq!(
        attrs
            .iter()
            .map(|a| a.pre_cluster_threshold)
            .collect::<Vec<_>>(),
        vec![0.4, 0.2, 0.6]
    );
    assert!(attrs[0].size_ok(8.0, 16.0) && !attrs[0].size_ok(7.0, 16.0));
    // Class 1's filter replaces the default one, as in nvinferserver.
    assert!(attrs[1].size_ok(1.0, 1.0) && !attrs[1].size_ok(301.0, 1.0));
    assert_eq!(c.validate(), Ok(vec![]));
    // Said once each: the input's name, the outputs, and topk over three classes.
    let w = &loaded.warnings;
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(
        w[0].starts_with(&format!(
            "{FILE}:9: field `infer_config.backend.inputs.name`"
        )),
        "{w:?}"
    );
    assert!(
        w[1].contains(":13: field `infer_config.backend.outputs.name` has no effect"),
        "{w:?}"
    );
    assert!(
        w[2].contains(":50: field `infer_config.postprocess.detection.nms.topk`"),
        "{w:?}"
    );
    assert!(w[2].contains("20 best objects of each class"), "{w:?}");
}

/// A secondary classifier in the shape of NVIDIA's deepstream-test2 samples.
const CLASSIFIER: &str = r#"
infer_config {
  unique_id: 2
  max_batch_size: 16
  backend {
    triton {
      model_name: "Secondary_VehicleMake"
      version: 3
      grpc { url: "grpcs://triton.example:443" }
    }
    output_mem_type: MEMORY_TYPE_CPU
  }
  preprocess {
    network_format: IMAGE_FORMAT_BGR
    tensor_order: TENSOR_ORDER_NHWC
    normalize { scale_factor: 1 }
  }
  postprocess {
    labelfile_path: "/models/make/labels.txt"
    classification { threshold: 0.51 }
  }
}
input_control {
  process_mode: PROCESS_MODE_CLIP_OBJECTS
  operate_on_gie_id: 1
  operate_on_class_ids: [0, 2]
  secondary_reinfer_interval: 90
  async_mode: true
  object_control {
    bbox_filter { min_width: 64 min_height: 64 }
  }
}
output_control { output_tensor_meta: true }
"#;

#[test]
fn a_secondary_classifier_reads_as_its_nvinfer_equivalent() {
    let loaded = load(CLASSIFIER).unwrap();
    let expected = ini(
        "[property]\ngie-unique-id=2\nbatch-size=16\nbackend=triton\n\
         model-name=Secondary_VehicleMake\nmodel-version=3\n\
         server-url=grpcs://triton.example:443\nmodel-color-format=1\nnetwork-input-order=1\n\
         net-scale-factor=1\nlabelfile-path=/models/make/labels.txt\nnetwork-type=1\n\
         classifier-threshold=0.51\nprocess-mode=2\noperate-on-gie-id=1\n\
         operate-on-class-ids=0;2\nsecondary-reinfer-interval=90\ninput-object-min-width=64\n\
         input-object-min-height=64\noutput-tensor-meta=1\n",
    );
    assert_eq!(loaded.config, expected.config);
    assert_eq!(loaded.config.process_mode, ProcessMode::Secondary);
    assert_eq!(loaded.config.network_type, NetworkType::Classifier);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].contains(":28: field `input_control.async_mode` has no effect"),
        "{:?}",
        loaded.warnings
    );
}

/// NVIDIA's in-process samples: refused, saying what to run and write instead.
#[test]
fn model_repo_is_refused_with_what_to_do_instead() {
    let text = "infer_config {\n  unique_id: 1\n  backend {\n    triton {\n      \
                model_name: \"Primary_Detector\"\n      version: -1\n      model_repo {\n        \
                root: \"../../triton_model_repo\"\n        strict_model_config: true\n      }\n    \
                }\n  }\n}\n";
    let err = load(text).unwrap_err();
    assert_eq!((err.path.as_path(), err.line), (Path::new(FILE), 7));
    let e = err.to_string();
    for part in [
        "config_triton_grpc.txt:7: field `infer_config.backend.triton.model_repo`",
        "in-process",
        "tritonserver --model-repository=/etc/ds/../../triton_model_repo",
        "grpc { url: \"localhost:8001\" }",
        "onnx-file",
    ] {
        assert!(e.contains(part), "{part:?} not in {e}");
    }
    // Absolute roots and URLs are named as written.
    let text = text.replace("../../triton_model_repo", "s3://bucket/repo");
    let e = load(&text).unwrap_err().to_string();
    assert!(e.contains("--model-repository=s3://bucket/repo`"), "{e}");
}

#[test]
fn unknown_fields_warn_naming_them() {
    let loaded = load(
        "infer_config {\n  unique_id: 3\n  frobnicate: 1\n  backend { triton { model_name: \
         \"m\" grpc { url: \"h:1\" } tuning { level: 2 } } }\n}\nplugin_extras: 5\n",
    )
    .unwrap();
    assert_eq!(loaded.config.gie_unique_id, 3);
    let w = &loaded.warnings;
    assert_eq!(w.len(), 3, "{w:?}");
    assert_eq!(
        w[0],
        format!("{FILE}:3: unknown field `infer_config.frobnicate` ignored")
    );
    assert!(
        w[1].contains(":4: unknown field `infer_config.backend.triton.tuning`"),
        "{w:?}"
    );
    assert!(w[2].contains(":6: unknown field `plugin_extras`"), "{w:?}");
}

#[test]
fn fields_without_effect_are_said_once() {
    let loaded = load(
        "infer_config {\n backend {\n  triton { model_name: \"m\" grpc { url: \"h:1\" \
         enable_cuda_buffer_sharing: true } }\n  output_mem_type: MEMORY_TYPE_GPU\n }\n \
         preprocess { frame_scaling_hw: FRAME_SCALING_HW_VIC frame_scaling_filter: 0 \
         tensor_name: \"x\" }\n extra { copy_input_to_host_buffers: true output_buffer_pool_size: 4 }\n \
         clip_object_outside_roi: true\n}\noutput_control { classifier_type: \"make\" \
         detect_control { default_filter { border_color { r: 1 } } } }\n",
    )
    .unwrap();
    let w = loaded.warnings.join("\n");
    for field in [
        "grpc.enable_cuda_buffer_sharing",
        "backend.output_mem_type",
        "preprocess.frame_scaling_hw",
        "preprocess.frame_scaling_filter",
        "preprocess.tensor_name",
        "extra.copy_input_to_host_buffers",
        "extra.output_buffer_pool_size",
        "infer_config.clip_object_outside_roi",
        "output_control.classifier_type",
        "default_filter.border_color",
    ] {
        assert!(
            w.contains(&format!("{field}` has no effect")),
            "{field}: {w}"
        );
    }
    assert_eq!(loaded.warnings.len(), 10, "{w}");
    // Absent normalize: nvinferserver's scale of 1.
    assert_eq!(loaded.config.net_scale_factor, 1.0);
}

#[test]
fn refusals_name_file_line_field_and_value() {
    let refused = |text: &str, line: usize, parts: &[&str]| {
        let err = load(text).unwrap_err();
        let e = err.to_string();
        assert_eq!(err.line, line, "{e}");
        assert!(e.starts_with(FILE), "{e}");
        for part in parts {
            assert!(e.contains(part), "{part:?} not in {e}");
        }
    };
    refused(
        "infer_config {\n input_tensor_from_meta { is_first_dim_batch: true }\n}",
        2,
        &["`infer_config.input_tensor_from_meta`", "not supported"],
    );
    refused(
        "infer_config {\n lstm { loops [{ input: \"a\" output: \"b\" }] }\n}",
        2,
        &["`infer_config.lstm`", "LSTM"],
    );
    refused(
        "infer_config {\n preprocess { normalize {\n mean_file: \"mean.ppm\" } }\n}",
        3,
        &[
            "`infer_config.preprocess.normalize.mean_file`",
            "\"mean.ppm\"",
            "channel_offsets",
        ],
    );
    refused(
        "infer_config { extra {\n custom_process_funcion: \"CreateInferServerCustomProcess\" } }",
        2,
        &[
            "`infer_config.extra.custom_process_funcion`",
            "IInferCustomProcessor",
        ],
    );
    refused(
        "infer_config {\n postprocess { detection { custom_parse_bbox_func: \"Parse\" } }\n \
         custom_lib {\n path: \"libparser.so\" }\n}",
        4,
        &[
            "`infer_config.custom_lib.path`",
            "\"libparser.so\"",
            "names no directory",
        ],
    );
    refused(
        "infer_config {\n postprocess { classification {\n custom_parse_classifier_func: \"P\" } }\n}",
        3,
        &["custom_parse_classifier_func`", "names no library"],
    );
    // Values outside the setting's range, named with the setting.
    refused(
        "infer_config {\n unique_id: 1\n max_batch_size: 5000\n}",
        3,
        &[
            "field `infer_config.max_batch_size` (rstrtinfer's batch-size)",
            "expected 1 to 1024, found 5000",
        ],
    );
    refused(
        "infer_config { postprocess { detection {\n num_detected_classes: 2\n per_class_params { \
         key: 5 value { pre_threshold: 0.1 } } } } }",
        3,
        &[
            "per_class_params`",
            "class 5 is not below num_detected_classes (2)",
        ],
    );
    refused(
        "infer_config { postprocess { detection { nms {\n confidence_threshold: 1.5 } } } }",
        2,
        &[
            "nms.confidence_threshold` (rstrtinfer's pre-cluster-threshold)",
            "expected 0 to 1",
        ],
    );
    refused(
        "input_control {\n operate_on_gie_id: -7\n}",
        2,
        &["`input_control.operate_on_gie_id`", "-7"],
    );
    refused(
        "infer_config { gpu_ids: [0,\n 1] }",
        2,
        &["`infer_config.gpu_ids`", "one GPU per element"],
    );
}

#[test]
fn type_errors_duplicates_and_oneofs_name_the_field() {
    let error = |text: &str| load(text).unwrap_err();
    let e = error("infer_config {\n max_batch_size: \"four\"\n}");
    assert_eq!(e.line, 2);
    assert!(
        e.message
            .contains("`infer_config.max_batch_size`: expected an integer, found \"four\""),
        "{e}"
    );
    let e = error("infer_config { preprocess {\n network_format: IMAGE_FORMAT_YUV } }");
    assert!(
        e.message
            .contains("expected one of MEDIA_FORMAT_NONE, IMAGE_FORMAT_RGB")
            && e.message.contains("found IMAGE_FORMAT_YUV"),
        "{e}"
    );
    let e = error("infer_config {\n unique_id: 1\n unique_id: 2\n}");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("given twice (first on line 2)"), "{e}");
    let e = error("infer_config { postprocess { detection {\n nms {}\n dbscan {} } } }");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("`nms` (line 2) is already given"), "{e}");
    let e = error("input_control { interval: 1\n secondary_reinfer_interval: 3 }");
    assert!(
        e.message
            .contains("only one of interval, secondary_reinfer_interval"),
        "{e}"
    );
    let e = error("infer_config { backend: 5 }");
    assert!(e.message.contains("expected `{ ... }`, found 5"), "{e}");
    let e = error("infer_config { unique_id { } }");
    assert!(e.message.contains("expected a value"), "{e}");
    let e = error("infer_config { preprocess { normalize { scale_factor: nan } } }");
    assert!(e.message.contains("expected a finite number"), "{e}");
    let e = error("infer_config { unique_id: 4294967296 }");
    assert!(e.message.contains("from 0 to 4294967295"), "{e}");
    // Syntax errors keep their line.
    let e = error("infer_config {\n unique_id: 1\n");
    assert_eq!(e.line, 3);
    assert!(
        e.to_string().starts_with(&format!("{FILE}:3: end of file")),
        "{e}"
    );
}

#[test]
fn clustering_blocks_and_their_defaults() {
    let detection = |block: &str| {
        let text = format!(
            "infer_config {{ postprocess {{ detection {{ num_detected_classes: 1 {block} }} }} }}"
        );
        load(&text).unwrap().config
    };
    let c = detection("dbscan { pre_threshold: 0.3 eps: 0.7 min_boxes: 3 min_score: 0.5 }");
    let a = c.class_attrs.all;
    assert_eq!(c.cluster_mode, ClusterMode::Dbscan);
    assert_eq!(
        (
            a.pre_cluster_threshold,
            a.eps,
            a.min_boxes,
            a.dbscan_min_score
        ),
        (0.3, 0.7, 3, 0.5)
    );
    let c = detection("group_rectangle { confidence_threshold: 0.25 group_threshold: 2 eps: 0.2 }");
    let a = c.class_attrs.all;
    assert_eq!(c.cluster_mode, ClusterMode::GroupRectangles);
    assert_eq!(
        (a.pre_cluster_threshold, a.group_threshold, a.eps),
        (0.25, 2, 0.2)
    );
    let c = detection("simple_cluster { threshold: 0.45 }");
    assert_eq!(c.cluster_mode, ClusterMode::None);
    assert_eq!(c.class_attrs.all.pre_cluster_threshold, 0.45);
    // nvinferserver keeps every box without a clustering block.
    let c = detection("");
    assert_eq!(c.cluster_mode, ClusterMode::None);
    assert_eq!(c.class_attrs.all.pre_cluster_threshold, 0.0);
    // Absent parameters are protobuf's 0; topk 0 keeps all. One class: topk is the same in
    // both elements, so nothing is said.
    let loaded = load(
        "infer_config { postprocess { detection { num_detected_classes: 1 nms { topk: 5 } } } }",
    )
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let a = loaded.config.class_attrs.all;
    assert_eq!(
        (a.pre_cluster_threshold, a.nms_iou_threshold, a.topk),
        (0.0, 0.0, 5)
    );
    let c = detection("nms { confidence_threshold: 0.5 topk: 0 }");
    assert_eq!(c.class_attrs.all.topk, -1);
}

#[test]
fn other_families_and_triton_classification() {
    let c = load(
        "infer_config { postprocess { segmentation { threshold: 0.3 \
         num_segmentation_classes: 21 } } }",
    )
    .unwrap()
    .config;
    assert_eq!(c.network_type, NetworkType::Segmentation);
    assert_eq!(
        (c.segmentation_threshold, c.num_detected_classes),
        (0.3, 21)
    );
    let loaded = load(
        "infer_config { postprocess { trtis_classification { topk: 3 threshold: 0.2 \
         tensor_name: \"probs\" } } }",
    )
    .unwrap();
    let c = loaded.config;
    assert_eq!(c.network_type, NetworkType::Classifier);
    assert_eq!(c.classifier_threshold, 0.2);
    assert_eq!(c.output_blob_names, vec!["probs".to_string()]);
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("deprecated"));
    assert!(loaded.warnings[1].contains("topk` has no effect"));
    let c = load(
        "infer_config { postprocess { other {} } }\ninput_control { process_mode: \
         PROCESS_MODE_CLIP_OBJECTS }\noutput_control { output_tensor_meta: true }",
    )
    .unwrap()
    .config;
    assert_eq!(c.network_type, NetworkType::Other);
    assert_eq!(c.validate(), Ok(vec![]));
    // A custom parser with its library, relative to the file.
    let c = load(
        "infer_config { postprocess { detection { custom_parse_bbox_func: \"NvDsInferParseYolo\" \
         } } custom_lib { path: \"./lib/libyolo.so\" } }",
    )
    .unwrap()
    .config;
    assert_eq!(
        c.custom_lib_path,
        Some(PathBuf::from("/etc/ds/./lib/libyolo.so"))
    );
    assert_eq!(c.validate(), Ok(vec![]));
    // NHWC dims of a model whose input is dynamic.
    let c = load(
        "infer_config { backend { inputs [{ dims: [300, 300, 3] }] } preprocess { tensor_order: \
         TENSOR_ORDER_NHWC } }",
    )
    .unwrap()
    .config;
    assert_eq!(c.infer_dims, Some([3, 300, 300]));
}

#[test]
fn files_are_told_apart_by_content_and_properties_override_them() {
    let dir =
        std::env::temp_dir().join(format!("ferrostream-nvinferserver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config_infer_primary.txt");
    std::fs::write(&path, DETECTOR).unwrap();
    let file = InferConfig::from_file(&path).unwrap().config;
    assert_eq!(file.remote.model_name, "peoplenet");
    assert_eq!(file.labelfile_path, Some(dir.join("labels_peoplenet.txt")));
    let mut props = Props::new(InferConfig::default());
    for (name, text) in [("batch-size", "8"), ("server-url", "10.0.0.5:8001")] {
        SETTINGS.set_text(&mut props, name, text).unwrap().unwrap();
    }
    let c = SETTINGS.resolve(file, &props).unwrap();
    assert_eq!(
        (c.batch_size, c.remote.server_url.as_str()),
        (8, "10.0.0.5:8001")
    );
    assert_eq!(c.interval, 2, "not set as a property: the file's");
    // The same name with nvinfer's INI in it reads as INI.
    std::fs::write(&path, "# nvinfer\n[property]\nbatch-size=2\n").unwrap();
    assert_eq!(InferConfig::from_file(&path).unwrap().config.batch_size, 2);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!is_nvinferserver("[property]\ninfer_config=1\n"));
    assert!(is_nvinferserver("#!\n# c\ninput_control { }"));
    assert!(is_nvinferserver("output_control: {}"));
}

/// pipelines/coco_ssd_triton.txt says, in nvinferserver's words, what coco_ssd.txt says but
/// what only nvinfer's keys can say (the parser, the box order, class 0's overlap rule).
#[test]
fn the_sample_triton_file_matches_coco_ssd() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines");
    let loaded = InferConfig::from_file(&dir.join("coco_ssd_triton.txt")).unwrap();
    let nvinfer = InferConfig::from_file(&dir.join("coco_ssd.txt"))
        .unwrap()
        .config;
    let mut c = loaded.config;
    assert_eq!(c.backend, Backend::Triton);
    assert_eq!(
        (c.remote.server_url.as_str(), c.remote.model_name.as_str()),
        ("127.0.0.1:8001", "coco")
    );
    assert_eq!(c.validate(), Ok(vec![]));
    // Only the topk notice: nvinferserver counts it over all classes.
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("nms.topk"));
    c.backend = nvinfer.backend;
    c.remote = nvinfer.remote.clone();
    c.onnx_file = nvinfer.onnx_file.clone();
    c.output_parser = nvinfer.output_parser;
    c.box_format = nvinfer.box_format;
    c.class_attrs.per_class = nvinfer.class_attrs.per_class.clone();
    assert_eq!(c, nvinfer);
}

/// Damaged copies of a whole configuration (bytes dropped, repeated or replaced) are read or
/// refused, never a panic.
#[test]
fn damaged_configurations_never_panic() {
    let base: Vec<char> = format!("{DETECTOR}{CLASSIFIER}").chars().collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..2000 {
        let mut text = base.clone();
        for _ in 0..(next() % 4 + 1) {
            let at = (next() % text.len() as u64) as usize;
            match next() % 3 {
                0 => {
                    text.remove(at);
                }
                1 => text.insert(at, text[at]),
                _ => {
                    text[at] = ['{', '}', ':', '"', '-', '0', 'x', '[', '#'][(next() % 9) as usize]
                }
            }
        }
        let text: String = text.into_iter().collect();
        let _ = read(Path::new(FILE), &text, InferConfig::default());
    }
}
