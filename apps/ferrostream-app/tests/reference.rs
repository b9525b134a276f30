// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reference-shaped configurations run by `ferrostream-app -c`: files written here in the exact
//! shape of the configurations users bring (the same groups and keys, in the same folders),
//! with only file paths and models changed to the project's own.
//!
//! - NVIDIA's TAO sample with a detector and two secondary classifiers
//!   (`deepstream_app_source1_trafficcamnet_vehiclemakenet_vehicletypenet`), as a key file with
//!   nvinfer `.txt` files and as YAML with nvinfer `.yml` files and a CSV of sources: the COCO
//!   detector finds what the hand-written pipeline finds, and both classifiers label its people.
//! - DeepStream-Yolo's `deepstream_app_config.txt` and `config_infer_primary_yoloV8.txt` with a
//!   parser library built here (`NvDsInferParseYolo`, DeepStream-Yolo's export layout).
//! - The masktracker and tracker-3d reference apps, run from their folder as their READMEs say:
//!   their PeopleNet detector is not here, and the error names its ONNX file; with the COCO
//!   detector in its place they run, and the tracker names the groups it does not run (SAM2's
//!   `Segmenter`; the 3D `ObjectModelProjection`, `ReID`, `PoseEstimator`).
//!
//! Every run has a time limit.

use std::path::Path;
use std::process::Command;

use ferrostream_tests::{model, repo_root};

mod common;

use common::*;

// --- NVIDIA's TAO sample: a detector, a tracker and two secondary classifiers ---------------

/// The nvinfer files of the TAO sample in `dir/nvinfer`, in the form `ext` (`txt` or `yml`),
/// with their labels in `dir`: the COCO detector in the shape of
/// config_infer_primary_trafficcamnet, and the ImageNet classifier in the shape of
/// config_infer_secondary_vehiclemakenet (twice, as vehiclemakenet and vehicletypenet). Like
/// NVIDIA's, every file says `gie-unique-id=1`: deepstream-app's groups set the ids.
fn write_tao_nvinfer(dir: &Path, ext: &str) {
    copy(
        &model("object_detection_classes_coco.txt"),
        &dir.join("labels_coco.txt"),
    );
    copy(
        &model("classification_classes_ILSVRC2012.txt"),
        &dir.join("labels_imagenet.txt"),
    );
    let detector = model("coco_ssdlite_mobilenet_v2.onnx");
    let classifier = model("mobilenet_v2_imagenet.onnx");
    // The detector: uint8 NHWC in, its graph resizes and normalises; its input size is dynamic,
    // so infer-dims sets it (TAO's key file gives it as the older input-dims, with the order).
    let primary = [
        ("gpu-id", "0".to_owned()),
        ("net-scale-factor", "1.0".into()),
        ("onnx-file", detector.display().to_string()),
        ("labelfile-path", "../labels_coco.txt".into()),
        (
            "model-engine-file",
            format!("{}_b1_gpu0_fp16.engine", detector.display()),
        ),
        ("infer-dims", "3;300;300".into()),
        ("uff-input-blob-name", "image_tensor:0".into()),
        ("batch-size", "1".into()),
        ("process-mode", "1".into()),
        ("model-color-format", "0".into()),
        ("network-mode", "2".into()),
        ("num-detected-classes", "90".into()),
        ("interval", "0".into()),
        ("gie-unique-id", "1".into()),
        (
            "output-blob-names",
            "Postprocessor/ExpandDims_1:0;Postprocessor/Slice:0".into(),
        ),
        ("cluster-mode", "2".into()),
        ("scaling-compute-hw", "1".into()),
    ];
    let classes = [
        (
            "class-attrs-all",
            [
                ("topk", "50"),
                ("nms-iou-threshold", "0.5"),
                ("pre-cluster-threshold", "0.4"),
            ],
        ),
        (
            "class-attrs-0",
            [
                ("topk", "50"),
                ("nms-iou-threshold", "0.45"),
                ("pre-cluster-threshold", "0.4"),
            ],
        ),
    ];
    // ImageNet's mean and one scale for the three channels, f32 NCHW RGB.
    let secondary = [
        ("gpu-id", "0".to_owned()),
        ("net-scale-factor", "0.017352074".into()),
        ("offsets", "123.675;116.28;103.53".into()),
        ("onnx-file", classifier.display().to_string()),
        ("labelfile-path", "../labels_imagenet.txt".into()),
        (
            "model-engine-file",
            format!("{}_b4_gpu0_fp16.engine", classifier.display()),
        ),
        ("infer-dims", "3;224;224".into()),
        ("uff-input-blob-name", "input".into()),
        ("batch-size", "4".into()),
        ("process-mode", "2".into()),
        ("model-color-format", "0".into()),
        ("network-mode", "2".into()),
        ("network-type", "1".into()),
        ("num-detected-classes", "1000".into()),
        ("interval", "0".into()),
        ("gie-unique-id", "1".into()),
        ("output-blob-names", "logits".into()),
        // ImageNet has no person: a low bar, so that every person gets a label.
        ("classifier-threshold", "0.01".into()),
        ("scaling-compute-hw", "1".into()),
    ];
    let (mut primary, mut secondary) = (primary.to_vec(), secondary.to_vec());
    if ext == "txt" {
        // TAO's key files write the older input-dims (C;H;W;order), which rstrtinfer does not
        // read (it warns): the classifier's size is fixed in its model, so that is all it has;
        // the detector's is not, so its infer-dims stays too.
        secondary[6] = ("input-dims", "3;224;224;0".into());
        primary.insert(5, ("input-dims", "3;300;300;1".into()));
    }
    let yaml = ext == "yml";
    write(
        &dir.join(format!("nvinfer/config_infer_primary_coco.{ext}")),
        &nvinfer_file(yaml, &primary, &classes),
    );
    for name in ["imagenet_make", "imagenet_type"] {
        write(
            &dir.join(format!("nvinfer/config_infer_secondary_{name}.{ext}")),
            &nvinfer_file(yaml, &secondary, &[]),
        );
    }
}

/// An nvinfer configuration: `[property]` and the class groups as a key file, or the same
/// mappings in YAML (`yaml`).
fn nvinfer_file(yaml: bool, property: &[(&str, String)], classes: &[ClassGroup]) -> String {
    let mut text = String::new();
    let groups = std::iter::once(("property", property.to_vec())).chain(
        classes
            .iter()
            .map(|(g, keys)| (*g, keys.iter().map(|(k, v)| (*k, v.to_string())).collect())),
    );
    for (i, (group, keys)) in groups.enumerate() {
        if i > 0 {
            text.push('\n');
        }
        if yaml {
            text.push_str(&format!("{group}:\n"));
        } else {
            text.push_str(&format!("[{group}]\n"));
        }
        for (k, v) in keys {
            if yaml {
                text.push_str(&format!("  {k}: {v}\n"));
            } else {
                text.push_str(&format!("{k}={v}\n"));
            }
        }
    }
    text
}

/// A class group of an nvinfer file: its name and keys.
type ClassGroup<'a> = (&'a str, [(&'a str, &'a str); 3]);

/// An NvMultiObjectTracker configuration in the shape of NvDCF's (a visual tracker section
/// too), in place of the SDK's config_tracker_NvDCF_perf.yml.
const TRACKER_YML: &str = "%YAML:1.0\n\
BaseConfig:\n  minDetectorConfidence: 0.3\n\
TargetManagement:\n  enableBboxUnClipping: 1\n  preserveStreamUpdateOrder: 0\n  \
maxTargetsPerStream: 150\n  minIouDiff4NewTarget: 0.5\n  minTrackerConfidence: 0.2\n  \
probationAge: 3\n  maxShadowTrackingAge: 30\n  earlyTerminationAge: 1\n\
TrajectoryManagement:\n  useUniqueID: 0\n\
DataAssociator:\n  dataAssociatorType: 0\n  associationMatcherType: 0\n  checkClassMatch: 1\n  \
minMatchingScore4Overall: 0.0\n  minMatchingScore4SizeSimilarity: 0.6\n  \
minMatchingScore4Iou: 0.0\n  minMatchingScore4VisualSimilarity: 0.5\n  \
matchingScoreWeight4VisualSimilarity: 0.6\n  matchingScoreWeight4SizeSimilarity: 0.0\n  \
matchingScoreWeight4Iou: 0.4\n\
StateEstimator:\n  stateEstimatorType: 1\n  processNoiseVar4Loc: 2.0\n  \
processNoiseVar4Size: 1.0\n  processNoiseVar4Vel: 0.1\n  measurementNoiseVar4Detector: 4.0\n  \
measurementNoiseVar4Tracker: 16.0\n\
VisualTracker:\n  visualTrackerType: 1\n  useColorNames: 1\n  useHog: 0\n  \
featureImgSizeLevel: 2\n";

/// deepstream_app_source1_trafficcamnet_vehiclemakenet_vehicletypenet.txt's groups and keys.
fn tao_key_file(uri: &str) -> String {
    format!(
        "[application]\nenable-perf-measurement=1\nperf-measurement-interval-sec=1\n\
         gie-kitti-output-dir=kitti\n\n\
         [tiled-display]\nenable=1\nrows=1\ncolumns=1\nwidth=1280\nheight=720\ngpu-id=0\n\n\
         [source0]\nenable=1\n#Type - 1=CameraV4L2 2=URI 3=MultiURI\ntype=3\nnum-sources=1\n\
         uri={uri}\ngpu-id=0\n\n\
         [streammux]\ngpu-id=0\nbatch-size=1\nbatched-push-timeout=40000\n\
         ## Set muxer output width and height\nwidth=1920\nheight=1080\n\n\
         [sink0]\nenable=1\n#Type - 1=FakeSink 2=EglSink 3=File\ntype=2\nsync=1\nsource-id=0\n\
         gpu-id=0\n\n\
         [osd]\nenable=1\ngpu-id=0\nborder-width=3\ntext-size=15\ntext-color=1;1;1;1;\n\
         text-bg-color=0.3;0.3;0.3;1\nfont=Arial\n\n\
         [primary-gie]\nenable=1\ngpu-id=0\n#(0): nvinfer; (1): nvinferserver\nplugin-type=0\n\
         batch-size=1\nbbox-border-color0=1;0;0;1\nbbox-border-color1=0;1;1;1\n\
         bbox-border-color2=0;0;1;1\nbbox-border-color3=0;1;0;1\ngie-unique-id=1\n\
         config-file=nvinfer/config_infer_primary_coco.txt\n\n\
         [sink1]\nenable=0\ntype=3\ncontainer=1\ncodec=1\nenc-type=0\nsync=0\nbitrate=2000000\n\
         profile=0\noutput-file=out.mp4\nsource-id=0\n\n\
         [sink2]\nenable=0\ntype=4\ncodec=1\nenc-type=0\nsync=0\nbitrate=4000000\nprofile=0\n\
         rtsp-port=8554\nudp-port=5400\n\n\
         [tracker]\nenable=1\ntracker-width=640\ntracker-height=384\n\
         ll-lib-file=/opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so\n\
         ll-config-file=config_tracker_NvDCF_perf.yml\ngpu-id=0\nenable-batch-process=1\n\
         enable-past-frame=1\ndisplay-tracking-id=1\ncompute-hw=1\n\n\
         [secondary-gie0]\nenable=1\nplugin-type=0\ngpu-id=0\nbatch-size=4\ngie-unique-id=4\n\
         operate-on-gie-id=1\noperate-on-class-ids=0;\n\
         config-file=nvinfer/config_infer_secondary_imagenet_make.txt\n\n\
         [secondary-gie1]\nenable=1\nplugin-type=0\ngpu-id=0\nbatch-size=4\ngie-unique-id=5\n\
         operate-on-gie-id=1\noperate-on-class-ids=0;\n\
         config-file=nvinfer/config_infer_secondary_imagenet_type.txt\n\n\
         [tests]\nfile-loop=0\n"
    )
}

/// deepstream_app_source1_trafficcamnet_vehiclemakenet_vehicletypenet.yml's mappings and keys
/// (the sources in source_tao_app.csv).
fn tao_yaml() -> String {
    "application:\n  enable-perf-measurement: 1\n  perf-measurement-interval-sec: 1\n  \
     gie-kitti-output-dir: kitti\n\n\
     tiled-display:\n  enable: 1\n  rows: 1\n  columns: 1\n  width: 1280\n  height: 720\n  \
     gpu-id: 0\n\n\
     source:\n  csv-file-path: source_tao_app.csv\n\n\
     streammux:\n  gpu-id: 0\n  batch-size: 1\n  batched-push-timeout: 40000\n  \
     ## Set muxer output width and height\n  width: 1920\n  height: 1080\n\n\
     sink0:\n  enable: 1\n  #Type - 1: FakeSink 2: EglSink 3: File\n  type: 2\n  sync: 1\n  \
     source-id: 0\n  gpu-id: 0\n\n\
     osd:\n  enable: 1\n  gpu-id: 0\n  border-width: 3\n  text-size: 15\n  \
     text-color: 1;1;1;1\n  text-bg-color: 0.3;0.3;0.3;1\n  font: Arial\n\n\
     primary-gie:\n  enable: 1\n  gpu-id: 0\n  \
     model-engine-file: ../../models/coco/coco_ssdlite_mobilenet_v2.onnx_b1_gpu0_int8.engine\n  \
     batch-size: 1\n  bbox-border-color0: 1;0;0;1\n  bbox-border-color1: 0;1;1;1\n  \
     bbox-border-color2: 0;0;1;1\n  bbox-border-color3: 0;1;0;1\n  gie-unique-id: 1\n  \
     config-file: nvinfer/config_infer_primary_coco.yml\n\n\
     sink1:\n  enable: 0\n  type: 3\n  container: 1\n  codec: 1\n  enc-type: 0\n  sync: 0\n  \
     bitrate: 2000000\n  profile: 0\n  output-file: out.mp4\n  source-id: 0\n\n\
     sink2:\n  enable: 0\n  type: 4\n  codec: 1\n  enc-type: 0\n  sync: 0\n  \
     bitrate: 4000000\n  profile: 0\n  rtsp-port: 8554\n  udp-port: 5400\n\n\
     tracker:\n  enable: 1\n  tracker-width: 640\n  tracker-height: 384\n  \
     ll-lib-file: /opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so\n  \
     ll-config-file: config_tracker_NvDCF_perf.yml\n  gpu-id: 0\n  enable-batch-process: 1\n  \
     enable-past-frame: 1\n  display-tracking-id: 1\n  compute-hw: 1\n\n\
     secondary-gie0:\n  enable: 1\n  \
     model-engine-file: ../../models/imagenet/mobilenet_v2_imagenet.onnx_b4_gpu0_int8.engine\n  \
     gpu-id: 0\n  batch-size: 4\n  gie-unique-id: 4\n  operate-on-gie-id: 1\n  \
     operate-on-class-ids: 0\n  config-file: nvinfer/config_infer_secondary_imagenet_make.yml\n\n\
     secondary-gie1:\n  enable: 1\n  \
     model-engine-file: ../../models/imagenet/mobilenet_v2_imagenet.onnx_b4_gpu0_int8.engine\n  \
     gpu-id: 0\n  batch-size: 4\n  gie-unique-id: 5\n  operate-on-gie-id: 1\n  \
     operate-on-class-ids: 0\n  config-file: nvinfer/config_infer_secondary_imagenet_type.yml\n\n\
     tests:\n  file-loop: 0\n"
        .to_owned()
}

/// Runs the TAO-shaped `config` in `dir` and checks it all: the detector's objects in the KITTI
/// files equal the hand-written pipeline's with `infer_config`, people are found, and each of the
/// two classifiers (gie-unique-id 4 and 5, though their files say 1) labelled the people and
/// nothing else.
fn run_tao(dir: &Path, config: &Path, infer_config: &Path) {
    let meta = dir.join("meta.jsonl");
    let (ok, stdout, stderr) = app_in(dir, config, &["--metadata", meta.to_str().unwrap()]);
    assert!(ok, "the app failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Received EOS"), "{stdout}");
    assert!(stdout.contains("**PERF:  total: 30 frames"), "{stdout}");
    assert!(
        stderr.contains("[sink0] type=2: no display here") || std::env::var_os("DISPLAY").is_some(),
        "{stderr}"
    );

    let frames = assert_kitti_equals_hand_written(&dir.join("kitti"), infer_config);
    let people: usize = frames
        .iter()
        .map(|f| f.iter().filter(|o| o.label == "person").count())
        .sum();
    assert!(people >= FRAMES * 2, "people found: {people}");

    let lines = std::fs::read_to_string(&meta).unwrap();
    let frames: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(frames.len(), FRAMES);
    let (mut classified, mut persons) = (0, 0);
    for frame in &frames {
        for object in frame["objects"].as_array().unwrap() {
            let classes = object["classifications"].as_array().unwrap();
            if object["class_id"] != 0 {
                assert!(classes.is_empty(), "only people are classified: {object}");
                continue;
            }
            persons += 1;
            let by = |id: i64| {
                classes
                    .iter()
                    .find(|c| c["component_id"] == id)
                    .map(|c| c["label"].as_str().unwrap().to_owned())
            };
            assert!(
                classes
                    .iter()
                    .all(|c| c["component_id"] == 4 || c["component_id"] == 5),
                "{object}"
            );
            if let (Some(make), Some(kind)) = (by(4), by(5)) {
                // One model on the same crop: the same answer.
                assert_eq!(make, kind, "{object}");
                classified += 1;
            }
        }
    }
    assert!(
        classified * 10 >= persons * 9 && persons >= FRAMES * 2,
        "{classified} of {persons} people classified by both secondaries"
    );
}

#[test]
fn the_tao_detector_and_two_classifiers_sample_runs_as_a_key_file() {
    let dir = scratch("tao-txt");
    write_tao_nvinfer(&dir, "txt");
    write(&dir.join("config_tracker_NvDCF_perf.yml"), TRACKER_YML);
    let config = dir.join("deepstream_app_source1_coco_imagenet_imagenet.txt");
    write(
        &config,
        &tao_key_file(&format!("file://{}", clip().display())),
    );
    run_tao(
        &dir,
        &config,
        &dir.join("nvinfer/config_infer_primary_coco.txt"),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_tao_detector_and_two_classifiers_sample_runs_as_yaml_with_yaml_nvinfer_files() {
    let dir = scratch("tao-yml");
    write_tao_nvinfer(&dir, "yml");
    // The hand-written pipeline reads the key-file form: the YAML form must find the same.
    write_tao_nvinfer(&dir, "txt");
    write(&dir.join("config_tracker_NvDCF_perf.yml"), TRACKER_YML);
    write(
        &dir.join("source_tao_app.csv"),
        &format!(
            "enable,type,uri,num-sources,gpu-id,cudadec-memtype\n1,3,file://{},1,0,0\n",
            clip().display()
        ),
    );
    let config = dir.join("deepstream_app_source1_coco_imagenet_imagenet.yml");
    write(&config, &tao_yaml());
    run_tao(
        &dir,
        &config,
        &dir.join("nvinfer/config_infer_primary_coco.txt"),
    );
    let (ok, pipeline, stderr) = app_in(&dir, &config, &["--print-pipeline"]);
    assert!(ok, "{stderr}");
    assert!(
        pipeline.contains("config_infer_primary_coco.yml")
            && pipeline.contains("config_infer_secondary_imagenet_type.yml"),
        "{pipeline}"
    );
    // The group's model-engine-file is not there: the model of the nvinfer file is used.
    assert!(
        stderr.contains("[primary-gie] model-engine-file:") && stderr.contains("does not exist"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// --- DeepStream-Yolo --------------------------------------------------------------------------

/// Builds tests/fixtures/nvdsparsebbox_yolo.cpp as `lib` with the system C++ compiler.
fn build_yolo_parser(lib: &Path) {
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    let root = repo_root();
    let status = Command::new("c++")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .arg("-I")
        .arg(root.join("gst-trtinfer/inference/nvdsinfer/include"))
        .arg(root.join("apps/ferrostream-app/tests/fixtures/nvdsparsebbox_yolo.cpp"))
        .arg("-o")
        .arg(lib)
        .status()
        .expect("the system C++ compiler (c++) runs");
    assert!(
        status.success(),
        "the DeepStream-Yolo parser library compiles"
    );
}

#[test]
fn deepstream_yolo_config_runs_with_its_parser_library() {
    let dir = scratch("yolo");
    // DeepStream-Yolo's README: build the library in nvdsinfer_custom_impl_Yolo, copy the
    // exported ONNX model and labels.txt beside the configurations, run from that folder.
    build_yolo_parser(&dir.join("nvdsinfer_custom_impl_Yolo/libnvdsinfer_custom_impl_Yolo.so"));
    copy(
        &repo_root().join("pipelines/coco80_labels.txt"),
        &dir.join("labels.txt"),
    );
    // A YOLOv8 model as DeepStream-Yolo's exporter leaves it: one output of [N, 6] rows x1, y1,
    // x2, y2, score, class on a 64x64 input (rows known exactly; see make_fixtures.py).
    let onnx = repo_root().join("tests/fixtures/end_to_end_rows.onnx");
    let infer = dir.join("config_infer_primary_yoloV8.txt");
    write(
        &infer,
        &format!(
            "[property]\ngpu-id=0\nnet-scale-factor=0.0039215697906911373\nmodel-color-format=0\n\
             onnx-file={}\nmodel-engine-file=end_to_end_rows.onnx_b1_gpu0_fp32.engine\n\
             #int8-calib-file=calib.table\nlabelfile-path=labels.txt\nbatch-size=1\n\
             network-mode=0\nnum-detected-classes=80\ninterval=0\ngie-unique-id=1\n\
             process-mode=1\nnetwork-type=0\ncluster-mode=2\nmaintain-aspect-ratio=1\n\
             symmetric-padding=1\nparse-bbox-func-name=NvDsInferParseYolo\n\
             custom-lib-path=nvdsinfer_custom_impl_Yolo/libnvdsinfer_custom_impl_Yolo.so\n\n\
             [class-attrs-all]\nnms-iou-threshold=0.45\npre-cluster-threshold=0.25\ntopk=300\n",
            onnx.display()
        ),
    );
    let config = dir.join("deepstream_app_config.txt");
    write(
        &config,
        &format!(
            "[application]\nenable-perf-measurement=1\nperf-measurement-interval-sec=5\n\
             gie-kitti-output-dir=kitti\n\n\
             [tiled-display]\nenable=1\nrows=1\ncolumns=1\nwidth=1280\nheight=720\ngpu-id=0\n\
             nvbuf-memory-type=0\n\n\
             [source0]\nenable=1\ntype=3\nuri=file://{}\nnum-sources=1\ngpu-id=0\n\
             cudadec-memtype=0\n\n\
             [sink0]\nenable=1\ntype=2\nsync=0\ngpu-id=0\nnvbuf-memory-type=0\n\n\
             [osd]\nenable=1\ngpu-id=0\nborder-width=5\ntext-size=15\ntext-color=1;1;1;1;\n\
             text-bg-color=0.3;0.3;0.3;1\nfont=Serif\nshow-clock=0\nclock-x-offset=800\n\
             clock-y-offset=820\nclock-text-size=12\nclock-color=1;0;0;0\nnvbuf-memory-type=0\n\n\
             [streammux]\ngpu-id=0\nlive-source=0\nbatch-size=1\nbatched-push-timeout=40000\n\
             width=1920\nheight=1080\nenable-padding=0\nnvbuf-memory-type=0\n\n\
             [primary-gie]\nenable=1\ngpu-id=0\ngie-unique-id=1\nnvbuf-memory-type=0\n\
             config-file=config_infer_primary_yoloV8.txt\n\n\
             [tests]\nfile-loop=0\n",
            clip().display()
        ),
    );
    let (ok, stdout, stderr) = app_in(&dir, Path::new("deepstream_app_config.txt"), &[]);
    assert!(ok, "the app failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("**PERF:  total: 30 frames"), "{stdout}");

    let frames = assert_kitti_equals_hand_written(&dir.join("kitti"), &infer);
    // The rows read as corners, letterboxed: the 768x576 frame is 64x48 on the network, 8
    // pixels of padding above, 12 frame pixels to a network pixel.
    for (n, found) in frames.iter().enumerate() {
        let want = [
            ("person", [96.0, 0.0, 288.0, 336.0], 0.92),
            ("car", [480.0, 384.0, 720.0, 576.0], 0.7),
        ];
        assert_eq!(found.len(), want.len(), "frame {n}: {found:?}");
        for (k, (label, ltrb, confidence)) in found.iter().zip(want) {
            assert_eq!(k.label, label, "frame {n}");
            for (a, w) in k.ltrb.iter().zip(ltrb) {
                assert!((a - w).abs() < 0.01, "frame {n}: {:?} vs {ltrb:?}", k.ltrb);
            }
            assert!((k.confidence - confidence).abs() < 1e-4, "frame {n}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// --- The masktracker and tracker-3d reference apps ---------------------------------------------

/// The reference apps' config_infer_primary.txt: PeopleNet, which is not here.
fn peoplenet_infer(min_size: u32) -> String {
    format!(
        "[property]\ngpu-id=0\nnet-scale-factor=0.0039215697906911373\n\n\
         infer-dims=3;544;960\n\
         model-engine-file=../models/PeopleNet/resnet34_peoplenet.onnx_b1_gpu0_fp16.engine\n\
         labelfile-path=../models/PeopleNet/labels.txt\n\
         onnx-file=../models/PeopleNet/resnet34_peoplenet.onnx\n\n\
         process-mode=1\nmodel-color-format=0\nnetwork-mode=2\nnum-detected-classes=3\n\
         interval=0\ngie-unique-id=1\ncluster-mode=3\n\nfilter-out-class-ids=1;2\n\n\
         [class-attrs-all]\npre-cluster-threshold=0.1429\nnms-iou-threshold=0.4688\nminBoxes=3\n\
         dbscan-min-score=0.7726\neps=0.2538\ndetected-min-w={min_size}\n\
         detected-min-h={min_size}\n"
    )
}

/// The reference apps' deepstream-app file: the stream relative to the configurations' folder,
/// KITTI track files, an EGL and a file sink.
fn reference_app(enc_type: u32, display_mask: bool, tracker_config: &str) -> String {
    let mask = if display_mask { "display-mask=1\n" } else { "" };
    format!(
        "[application]\nenable-perf-measurement=1\nperf-measurement-interval-sec=3\n\
         kitti-track-output-dir=track_results\n\n\
         [tiled-display]\nenable=1\nrows=1\ncolumns=1\nwidth=1280\nheight=720\ngpu-id=0\n\
         nvbuf-memory-type=0\n\n\
         [source0]\nenable=1\ntype=3\nuri=file://../streams/vtest.mp4\nnum-sources=1\ngpu-id=0\n\
         cudadec-memtype=0\n\n\
         [sink0]\nenable=1\ntype=2\nsync=0\nsource-id=0\ngpu-id=0\nnvbuf-memory-type=0\nqos=0\n\n\
         [sink1]\nenable=1\ntype=3\ncontainer=1\ncodec=1\nenc-type={enc_type}\nsync=0\n\
         bitrate=2000000\nprofile=0\noutput-file=out.mp4\nsource-id=0\n\n\
         [osd]\nenable=1\ngpu-id=0\nborder-width=2\ntext-size=15\ntext-color=1;1;1;1;\n\
         text-bg-color=0.3;0.3;0.3;1\nfont=Serif\nshow-clock=0\nclock-x-offset=800\n\
         clock-y-offset=820\nclock-text-size=12\nclock-color=1;0;0;0\nnvbuf-memory-type=0\n\
         {mask}\n\
         [streammux]\ngpu-id=0\nlive-source=0\nbatch-size=1\nbatched-push-timeout=-1\n\
         width=1920\nheight=1080\nenable-padding=0\nnvbuf-memory-type=0\n\n\
         [primary-gie]\nenable=1\ngpu-id=0\nbatch-size=1\nbbox-border-color0=1;0;0;1\n\
         bbox-border-color1=0;1;1;1\nbbox-border-color2=0;0;1;1\nbbox-border-color3=0;1;0;1\n\
         gie-unique-id=1\nnvbuf-memory-type=0\ninterval=0\nconfig-file=config_infer_primary.txt\n\n\
         [tracker]\nenable=1\ntracker-width=1920\ntracker-height=1080\n\
         ll-lib-file=/opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so\n\
         ll-config-file={tracker_config}\ngpu-id=0\n\n\
         [tests]\nfile-loop=0\n"
    )
}

/// Runs the reference app `app` (a file in `dir/configs`) from that folder, as the READMEs say
/// (`deepstream-app -c <file>`): it fails naming PeopleNet's ONNX file. Then, with the COCO
/// detector's configuration in PeopleNet's place, it runs to the end (the stream found through
/// its relative URI), tracks people, and the tracker's warning names each of `not_run`.
fn run_reference_app(dir: &Path, app: &str, not_run: &[&str]) {
    let configs = dir.join("configs");
    copy(clip(), &dir.join("streams/vtest.mp4"));
    let (ok, stdout, stderr) = app_in(&configs, Path::new(app), &[]);
    assert!(!ok, "ran without its detector:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("model file not found: ../models/PeopleNet/resnet34_peoplenet.onnx"),
        "{stderr}"
    );

    let pgie = configs.join("config_infer_primary.txt");
    std::fs::rename(&pgie, configs.join("config_infer_peoplenet.txt")).unwrap();
    let coco = std::fs::read_to_string(repo_root().join("pipelines/coco_ssd.txt")).unwrap();
    let path_of = |name: &str| model(name).display().to_string();
    write(
        &pgie,
        &coco
            .replace(
                "onnx-file=coco_ssdlite_mobilenet_v2.onnx",
                &format!("onnx-file={}", path_of("coco_ssdlite_mobilenet_v2.onnx")),
            )
            .replace(
                "labelfile-path=object_detection_classes_coco.txt",
                &format!(
                    "labelfile-path={}",
                    path_of("object_detection_classes_coco.txt")
                ),
            ),
    );
    let (ok, stdout, stderr) = app_in(&configs, Path::new(app), &[]);
    assert!(ok, "the app failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("**PERF:  total: 30 frames"), "{stdout}");
    let warning = stderr
        .lines()
        .find(|l| l.contains("GstRsTracker:tracker") && l.contains("not run here"))
        .unwrap_or_else(|| panic!("the tracker's warning:\n{stderr}"));
    for group in not_run {
        assert!(warning.contains(group), "{group}: {warning}");
    }
    let tracks = configs.join("track_results");
    assert_eq!(std::fs::read_dir(&tracks).unwrap().count(), FRAMES);
    let tracked: usize = (0..FRAMES)
        .map(|n| {
            kitti(&tracks.join(format!("00_000_{n:06}.txt")), true)
                .iter()
                .filter(|t| t.label == "person" && t.track.is_some())
                .count()
        })
        .sum();
    assert!(tracked >= FRAMES, "tracked people: {tracked}");
    let frames = ferrostream_tests::decode_frames(&configs.join("out.mp4"), "RGB", 5);
    assert_eq!(frames.len(), 5, "out.mp4 plays");
}

#[test]
fn masktracker_reference_app_names_its_missing_detector_and_runs_without_sam2() {
    let dir = scratch("masktracker");
    let configs = dir.join("configs");
    write(
        &configs.join("config_infer_primary.txt"),
        &peoplenet_infer(10),
    );
    // In place of the SDK's config_tracker_MaskTracker.yml: SAM2 is its Segmenter.
    write(
        &configs.join("config_tracker_MaskTracker.yml"),
        "%YAML:1.0\nBaseConfig:\n  minDetectorConfidence: 0.5\nTargetManagement:\n  \
         maxTargetsPerStream: 150\n  minIouDiff4NewTarget: 0.5\n  probationAge: 3\n  \
         maxShadowTrackingAge: 30\n  earlyTerminationAge: 1\nDataAssociator:\n  \
         dataAssociatorType: 0\n  associationMatcherType: 1\n  checkClassMatch: 1\n  \
         minMatchingScore4Overall: 0.1\n  minMatchingScore4Iou: 0.1\n  \
         matchingScoreWeight4Iou: 1.0\nStateEstimator:\n  stateEstimatorType: 1\n\
         Segmenter:\n  segmenterType: 1\n",
    );
    write(
        &configs.join("deepstream_app_source1.txt"),
        &reference_app(1, true, "config_tracker_MaskTracker.yml"),
    );
    run_reference_app(&dir, "deepstream_app_source1.txt", &["Segmenter"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tracker_3d_reference_app_names_its_missing_detector_and_runs_in_2d() {
    let dir = scratch("tracker-3d");
    let configs = dir.join("configs");
    write(
        &configs.join("config_infer_primary.txt"),
        &peoplenet_infer(20),
    );
    write(
        &configs.join("camInfo.yml"),
        "projectionMatrix_3x4:\n  - 1000.0\n  - 0.0\n  - 384.0\n  - 0.0\n  - 0.0\n  - 1000.0\n  \
         - 288.0\n  - 0.0\n  - 0.0\n  - 0.0\n  - 1.0\n  - 0.0\n\nmodelInfo:\n  height: 180\n  \
         radius: 30\n",
    );
    // config_tracker_NvDCF_accuracy_3D.yml's sections, with the camera model above and the ReID
    // network's TAO file (which has no ONNX form) where the reference app keeps it.
    write(
        &configs.join("config_tracker_NvDCF_accuracy_3D.yml"),
        "%YAML:1.0\n\nBaseConfig:\n  minDetectorConfidence: 0.2\n\n\
         TargetManagement:\n  enableBboxUnClipping: 1\n  preserveStreamUpdateOrder: 0\n  \
         maxTargetsPerStream: 150\n  minIouDiff4NewTarget: 0.4\n  minTrackerConfidence: 0.15\n  \
         probationAge: 2\n  maxShadowTrackingAge: 40\n  earlyTerminationAge: 1\n  \
         outputTerminatedTracks: 1\n  terminatedTrackFilename: track_dump_\n\n\
         TrajectoryManagement:\n  useUniqueID: 0\n  enableReAssoc: 1\n  \
         minMatchingScore4Overall: 0.6\n  reidExtractionInterval: 8\n\n\
         DataAssociator:\n  dataAssociatorType: 0\n  associationMatcherType: 1\n  \
         checkClassMatch: 1\n  minMatchingScore4Overall: 0.02\n  \
         minMatchingScore4SizeSimilarity: 0.35\n  minMatchingScore4Iou: 0.05\n  \
         minMatchingScore4VisualSimilarity: 0.5\n  matchingScoreWeight4VisualSimilarity: 0.4\n  \
         matchingScoreWeight4SizeSimilarity: 0.6\n  matchingScoreWeight4Iou: 0.4\n  \
         tentativeDetectorConfidence: 0.1\n  minMatchingScore4TentativeIou: 0.3\n\n\
         StateEstimator:\n  stateEstimatorType: 3\n  processNoiseVar4Loc: 6800.0\n  \
         processNoiseVar4Vel: 1350.0\n  measurementNoiseVar4Detector: 100.0\n  \
         measurementNoiseVar4Tracker: 290.0\n\n\
         ObjectModelProjection:\n  minPoseConfidence: 0.9\n  cameraModelFilepath:\n  \
         - camInfo.yml\n  outputVisibility: 1\n  outputFootLocation: 1\n  outputConvexHull: 0\n\n\
         VisualTracker:\n  visualTrackerType: 2\n  vpiBackend4DcfTracker: 1\n  useColorNames: 1\n  \
         useHog: 1\n  featureImgSizeLevel: 3\n\n\
         ReID:\n  reidType: 2\n  batchSize: 100\n  workspaceSize: 1000\n  reidFeatureSize: 256\n  \
         reidHistorySize: 100\n  inferDims: [3, 256, 128]\n  networkMode: 1\n  inputOrder: 0\n  \
         colorFormat: 0\n  offsets: [123.675, 116.28, 103.53]\n  netScaleFactor: 0.01735207\n  \
         keepAspc: 1\n  tltEncodedModel: \"../models/Tracker/resnet50_market1501.etlt\"\n  \
         tltModelKey: \"nvidia_tao\"\n  \
         modelEngineFile: \"../models/Tracker/resnet50_market1501.etlt_b100_gpu0_fp16.engine\"\n\n\
         PoseEstimator:\n  poseEstimatorType: 1\n  useVPICropScaler: 1\n  batchSize: 1\n  \
         workspaceSize: 1000\n  inferDims: [3, 256, 192]\n",
    );
    write(
        &configs.join("deepstream_app_source1_3d_tracking.txt"),
        &reference_app(0, false, "config_tracker_NvDCF_accuracy_3D.yml")
            .replacen("sync=0", "sync=1", 1),
    );
    run_reference_app(
        &dir,
        "deepstream_app_source1_3d_tracking.txt",
        &[
            "ObjectModelProjection",
            "ReID",
            "PoseEstimator",
            "stateEstimatorType 3",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
