// SPDX-License-Identifier: MIT OR Apache-2.0
//! nvinfer custom parser libraries in rstrtinfer: a library written against nvinfer's custom
//! parser interface (tests/fixtures/nvdsparser/parsers.cpp), built here with the system C++
//! compiler, loaded by `custom-lib-path` with `parse-bbox-func-name` or
//! `parse-classifier-func-name`; and every way such a library can be wrong.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ferrostream_core::{BBox, Object};
use ferrostream_tests::{quoted, repo_root, run_pipeline};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The fixture parser library, compiled once per test process.
fn library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvdsparser");
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join(format!("libparsers-{}.so", std::process::id()));
        let root = repo_root();
        let status = std::process::Command::new("c++")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
            .arg("-I")
            .arg(root.join("gst-trtinfer/inference/nvdsinfer/include"))
            .arg(root.join("tests/fixtures/nvdsparser/parsers.cpp"))
            .arg("-o")
            .arg(&lib)
            .status()
            .expect("the system C++ compiler (c++) runs");
        assert!(status.success(), "the fixture parser library compiles");
        lib
    })
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

/// The objects of the one 128x128 frame of `videotestsrc` through `rstrtinfer {infer}`.
fn run(pattern: &str, infer: &str) -> Result<Vec<Object>, String> {
    let source = format!(
        "videotestsrc pattern={pattern} num-buffers=1 ! video/x-raw,format=RGB,width=128,height=128"
    );
    let out = run_pipeline(
        &format!("{source} ! rstrtinfer {infer} ! appsink name=sink"),
        TIMEOUT,
    )?;
    Ok(out.frames.into_iter().next().ok_or("no frame")?.objects)
}

fn yolov8(extra: &str) -> Result<Vec<Object>, String> {
    run(
        "smpte",
        &format!(
            "onnx-file={} pre-cluster-threshold=0.5 net-scale-factor=0.00392156863 {extra}",
            quoted(&fixture("yolov8_constant.onnx"))
        ),
    )
}

fn with_parser(function: &str) -> String {
    format!(
        "custom-lib-path={} parse-bbox-func-name={function} num-detected-classes=2",
        quoted(library())
    )
}

fn summary(objects: &[Object]) -> Vec<(i32, f32, BBox)> {
    objects
        .iter()
        .map(|o| (o.class_id, o.confidence, o.detector_bbox))
        .collect()
}

#[test]
fn a_parser_library_gives_the_boxes_of_the_built_in_parser() {
    let built_in = yolov8("output-parser=yolov8").unwrap();
    assert_eq!(built_in.len(), 2, "{built_in:?}");
    let custom = yolov8(&with_parser("NvDsInferParseCheckedYoloV8")).unwrap();
    assert_eq!(summary(&custom), summary(&built_in));
    // Libraries that read the thresholds by their older name (a reference into the same
    // structure) see the same ones.
    let old_name = yolov8(&with_parser("NvDsInferParseOldThresholdName")).unwrap();
    assert_eq!(summary(&old_name), summary(&built_in));
    // The same from a configuration file, the library path relative to it.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvdsparser");
    let config = dir.join(format!("yolov8-{}.txt", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "[property]\nonnx-file={}\nnet-scale-factor=0.00392156863\nnum-detected-classes=2\n\
             custom-lib-path={}\nparse-bbox-func-name=NvDsInferParseCheckedYoloV8\n\
             [class-attrs-all]\npre-cluster-threshold=0.5\n",
            fixture("yolov8_constant.onnx").display(),
            library().file_name().unwrap().to_string_lossy()
        ),
    )
    .unwrap();
    let from_file = run("smpte", &format!("config-file-path={}", quoted(&config))).unwrap();
    assert_eq!(summary(&from_file), summary(&built_in));
}

#[test]
fn parser_results_are_clipped_to_the_network_and_unknown_classes_dropped() {
    let objects = yolov8(&with_parser("NvDsInferParseOutOfRange")).unwrap();
    // Left 54 and 30 wide on a 64-pixel network: clipped at 64, then doubled to the frame.
    assert_eq!(
        summary(&objects),
        vec![(0, 0.9, BBox::new(108.0, 8.0, 20.0, 40.0))],
        "class 7 is beyond num-detected-classes=2"
    );
}

#[test]
fn bad_parser_libraries_and_failing_parsers_are_clear_errors() {
    let err =
        yolov8("custom-lib-path=/nonexistent/libparser.so parse-bbox-func-name=F").unwrap_err();
    assert!(
        err.contains("/nonexistent/libparser.so") && err.contains("no such file"),
        "{err}"
    );
    let not_a_library = fixture("yolov8_constant.onnx");
    let err = yolov8(&format!(
        "custom-lib-path={} parse-bbox-func-name=F",
        quoted(&not_a_library)
    ))
    .unwrap_err();
    assert!(err.contains("cannot load it"), "{err}");
    let err = yolov8(&with_parser("NvDsInferParseNothing")).unwrap_err();
    assert!(
        err.contains("has no function \"NvDsInferParseNothing\" (parse-bbox-func-name)"),
        "{err}"
    );
    let err = yolov8(&with_parser("NvDsInferParseFails")).unwrap_err();
    assert!(
        err.contains("NvDsInferParseFails") && err.contains("returned false"),
        "{err}"
    );
    let err = yolov8(&with_parser("NvDsInferParseThrows")).unwrap_err();
    assert!(err.contains("threw: the fixture parser gives up"), "{err}");
    let err = yolov8(&format!("custom-lib-path={}", quoted(library()))).unwrap_err();
    assert!(err.contains("no parser function is named"), "{err}");
    let err = yolov8(&format!(
        "{} output-parser=yolov8",
        with_parser("NvDsInferParseYoloV8")
    ))
    .unwrap_err();
    assert!(err.contains("leave output-parser at auto"), "{err}");
}

#[test]
fn a_classifier_parser_library_labels_the_frame() {
    let objects = run(
        "red",
        &format!(
            "onnx-file={} network-type=classifier net-scale-factor=0.00392156863 \
             gie-unique-id=3 custom-lib-path={} parse-classifier-func-name=NvDsInferClassifyChannel",
            quoted(&fixture("f16_channel_mean.onnx")),
            quoted(library())
        ),
    )
    .unwrap();
    let [object] = &objects[..] else {
        panic!("{objects:?}")
    };
    let [c] = &object.classifications[..] else {
        panic!("{object:?}")
    };
    assert_eq!((c.component_id, c.class_id, &*c.label), (3, 0, "reddish"));
    assert!((c.prob - 1.0).abs() < 1e-3, "{}", c.prob);
    // A label the parser leaves out comes from the label file, in nvinfer's classifier format
    // (one line per output layer, its classes separated by ';').
    let labels = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("nvdsparser")
        .join(format!("channels-{}.txt", std::process::id()));
    std::fs::write(&labels, "scarlet;emerald;azure\n").unwrap();
    let classify = |function: &str| {
        run(
            "red",
            &format!(
                "onnx-file={} network-type=classifier net-scale-factor=0.00392156863 \
                 labelfile-path={} custom-lib-path={} parse-classifier-func-name={function}",
                quoted(&fixture("f16_channel_mean.onnx")),
                quoted(&labels),
                quoted(library())
            ),
        )
        .unwrap()
    };
    let objects = classify("NvDsInferClassifyUnlabelled");
    assert_eq!(&*objects[0].classifications[0].label, "scarlet");
    // Attributes without a description: nothing attached, as in nvinfer.
    assert!(classify("NvDsInferClassifyQuietly").is_empty());
}

#[test]
fn an_instance_mask_parser_library_gives_objects_their_masks() {
    let objects = yolov8(&format!(
        "network-type=instance-segmentation cluster-mode=none segmentation-threshold=0.5 \
         custom-lib-path={} parse-bbox-instance-mask-func-name=NvDsInferParseMask \
         num-detected-classes=2",
        quoted(library())
    ))
    .unwrap();
    let [object] = &objects[..] else {
        panic!("{objects:?}")
    };
    assert_eq!(
        (object.class_id, object.detector_bbox),
        (1, BBox::new(16.0, 16.0, 64.0, 32.0))
    );
    let mask = object.mask.as_ref().expect("the parser's mask");
    assert_eq!((mask.width, mask.height), (4, 2));
    assert_eq!(
        mask.cells(),
        vec![true, false, true, false, false, true, false, true]
    );
    // A mask parser needs network-type instance-segmentation, as in nvinfer.
    let err = yolov8(&format!(
        "custom-lib-path={} parse-bbox-instance-mask-func-name=NvDsInferParseMask",
        quoted(library())
    ))
    .unwrap_err();
    assert!(err.contains("does not fit network-type"), "{err}");
    let err = yolov8(&format!(
        "network-type=instance-segmentation custom-lib-path={} \
         parse-bbox-instance-mask-func-name=NvDsInferParseMask",
        quoted(library())
    ))
    .unwrap_err();
    assert!(err.contains("set cluster-mode=4"), "{err}");
}

/// A segmentation parser library (`parse-segmentation-func-name`) gives the frame the class map
/// of the built-in segmentation parser: its map is per network pixel (64x64) where the built-in
/// one keeps the model's 4x4 cells, so both are compared at every pixel of the frame.
#[test]
fn a_segmentation_parser_library_gives_the_built_in_class_map() {
    let source = "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=128,height=128";
    let segment = |keys: &str| {
        run_pipeline(
            &format!(
                "{source} ! rstrtinfer onnx-file={} network-type=segmentation gie-unique-id=4 \
                 segmentation-threshold=0.5 {keys} ! appsink name=sink",
                quoted(&fixture("segmentation_constant.onnx"))
            ),
            TIMEOUT,
        )
        .map(|out| out.frames[0].segmentation.clone().expect("a class map"))
    };
    let library_map = segment(&format!(
        "custom-lib-path={} parse-segmentation-func-name=NvDsInferParseSegmentation \
         num-detected-classes=3",
        quoted(library())
    ))
    .unwrap();
    let built_in = segment("").unwrap();
    assert_eq!((library_map.width, library_map.height), (64, 64));
    assert_eq!((library_map.classes, library_map.component_id), (3, 4));
    let class_at = |map: &ferrostream_core::mask::ClassMap, x: u32, y: u32| {
        map.cells()[((y * map.height / 128) * map.width + x * map.width / 128) as usize]
    };
    for y in 0..128 {
        for x in 0..128 {
            assert_eq!(
                class_at(&library_map, x, y),
                class_at(&built_in, x, y),
                "pixel ({x}, {y})"
            );
        }
    }
    assert!(library_map.cells().contains(&2) && library_map.cells().contains(&-1));
    // It needs the classes, and network-type segmentation, as in nvinfer.
    let err = segment(&format!(
        "custom-lib-path={} parse-segmentation-func-name=NvDsInferParseSegmentation",
        quoted(library())
    ))
    .unwrap_err();
    assert!(err.contains("num-detected-classes"), "{err}");
    let err = yolov8(&format!(
        "custom-lib-path={} parse-segmentation-func-name=NvDsInferParseSegmentation \
         num-detected-classes=3",
        quoted(library())
    ))
    .unwrap_err();
    assert!(err.contains("does not fit network-type"), "{err}");
    // A parser that throws is an error naming it.
    let err = segment(&format!(
        "custom-lib-path={} parse-segmentation-func-name=NvDsInferParseSegmentation \
         num-detected-classes=2",
        quoted(library())
    ))
    .unwrap_err();
    assert!(err.contains("num-detected-classes, H, W"), "{err}");
}

/// A real pretrained YOLOv8 export (two classes, [1, 6, 8400]) parsed by the fixture library's
/// YOLOv8 parser, as nvinfer would run it, gives the built-in parser's boxes: the two players on
/// basketball1.png.
#[test]
fn a_parser_library_on_a_real_model_gives_the_built_in_boxes() {
    let detect = |extra: &str| {
        let desc = format!(
            "filesrc location={} ! pngdec ! videoconvert ! rstrtinfer config-file-path={} {extra} \
             ! appsink name=sink",
            quoted(&ferrostream_tests::media("basketball1.png")),
            quoted(&repo_root().join("pipelines/fall_detection.txt"))
        );
        let out = run_pipeline(&desc, TIMEOUT).unwrap();
        out.frames.into_iter().next().expect("one frame").objects
    };
    let rounded = |objects: &[Object]| -> Vec<(i32, i32, [i32; 4])> {
        objects
            .iter()
            .map(|o| {
                let b = o.detector_bbox;
                let px = |v: f32| (v * 10.0).round() as i32;
                (
                    o.class_id,
                    px(o.confidence * 100.0),
                    [px(b.left), px(b.top), px(b.right()), px(b.bottom())],
                )
            })
            .collect()
    };
    let built_in = detect("output-parser=yolov8");
    assert_eq!(built_in.len(), 2, "{built_in:#?}");
    let custom = detect(&format!(
        "custom-lib-path={} parse-bbox-func-name=NvDsInferParseYoloV8",
        quoted(library())
    ));
    assert_eq!(rounded(&custom), rounded(&built_in));
    assert!(custom.iter().all(|o| &*o.label == "Normal"), "{custom:#?}");
    // The same parser built against DeepStream 9's headers (objects with a rotation angle, 28
    // bytes), named as such.
    let ds9 = detect(&format!(
        "custom-lib-path={} parse-bbox-func-name=NvDsInferParseYoloV8Ds9 \
         custom-lib-deepstream-version=9",
        quoted(library())
    ));
    assert_eq!(rounded(&ds9), rounded(&built_in));
    // Its objects' rotation_angle (0.25 rad from this parser) is kept: oriented boxes.
    assert!(ds9.iter().all(|o| o.angle == Some(0.25)), "{ds9:#?}");
    assert!(built_in.iter().chain(&custom).all(|o| o.angle.is_none()));
}

#[test]
fn deepstream_version_of_a_parser_library_is_checked() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvdsparser");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join(format!("ds-version-{}.txt", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "[property]\nonnx-file={}\ncustom-lib-path={}\nparse-bbox-func-name=F\n\
             custom-lib-deepstream-version=5\n",
            fixture("yolov8_constant.onnx").display(),
            library().display()
        ),
    )
    .unwrap();
    let err = run("smpte", &format!("config-file-path={}", quoted(&config))).unwrap_err();
    assert!(
        err.contains("custom-lib-deepstream-version") && err.contains("expected 6 to 99, found 5"),
        "{err}"
    );
}

/// A model with 18 classes configured as 10 or 80 (num-detected-classes): a warning naming both
/// counts, and nvinfer's behaviour on every parser path: only classes below
/// num-detected-classes are reported. (Before, the built-in parsers reported class 12 with
/// num-detected-classes=10, and neither count mismatch said a word.)
#[test]
fn num_detected_classes_that_disagree_with_the_model_warn_and_apply_on_every_path() {
    let objects = |infer: &str| {
        let out = run_pipeline(
            &format!(
                "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=64 \
                 ! rstrtinfer onnx-file={} pre-cluster-threshold=0.5 {infer} \
                 ! appsink name=sink",
                quoted(&fixture("yolov8_18_classes.onnx"))
            ),
            TIMEOUT,
        )
        .unwrap();
        let mut classes: Vec<i32> = out.frames[0].objects.iter().map(|o| o.class_id).collect();
        classes.sort();
        (classes, out.warnings)
    };
    let custom = format!(
        "custom-lib-path={} parse-bbox-func-name=NvDsInferParseYoloV8AnyClasses",
        quoted(library())
    );
    let (all, warnings) = objects("output-parser=yolov8");
    assert_eq!(all, vec![0, 3, 12]);
    assert!(warnings.is_empty(), "{warnings:?}");
    for (configured, kept, warning) in [
        (
            10,
            vec![0, 3],
            "num-detected-classes=10 but the model's outputs have 18 classes: only classes 0 \
             to 9 are reported",
        ),
        (
            80,
            vec![0, 3, 12],
            "num-detected-classes=80 but the model's outputs have 18 classes: classes 18 to 79 \
             can never be detected",
        ),
    ] {
        let n = format!("num-detected-classes={configured}");
        let (built_in, warnings) = objects(&format!("output-parser=yolov8 {n}"));
        assert_eq!(built_in, kept, "{n}");
        let about: Vec<_> = warnings.iter().filter(|w| w.contains(warning)).collect();
        assert_eq!(about.len(), 1, "{n}: {warnings:?}");
        let (from_library, _) = objects(&format!("{custom} {n}"));
        assert_eq!(from_library, kept, "{n}, parser library");
    }
}
