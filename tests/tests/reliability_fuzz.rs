// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, hostile input: structure-aware fuzzing (proptest) of every parser Ferrostream
//! owns, and a corpus of bad files. Every case must end in a value or a clear error: a panic
//! fails the case (proptest reports the smallest input that does it), a hang fails the run.
//!
//! Cases per harness: `FERROSTREAM_FUZZ_CASES` (default 500, the CI variant; the long variant
//! in docs/RELIABILITY.md used 100,000).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use ferrostream_core::ini::IniFile;
use ferrostream_tests::model;
use gst::prelude::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("FERROSTREAM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

/// Runs `test` on `cases()` inputs from `strategy`, and prints how many ran.
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, test)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    println!("FUZZ {name}: {} cases", cases());
}

/// Values a configuration key may be given: numbers of every kind, lists, words, nothing.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("4294967296".to_string()),
        Just(String::new()),
        prop::collection::vec(-5i64..5000, 0..12).prop_map(|v| v
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(";")),
        prop::collection::vec(any::<f32>(), 0..6).prop_map(|v| v
            .iter()
            .map(f32::to_string)
            .collect::<Vec<_>>()
            .join(";")),
        "[a-z0-9_./;-]{0,24}",
        any::<String>(),
    ]
}

/// An INI file in the GKeyFile syntax with the given section names and keys, mixed with
/// arbitrary lines.
fn ini_text(
    sections: &'static [&'static str],
    keys: &'static [&'static str],
) -> BoxedStrategy<String> {
    let section = prop_oneof![
        prop::sample::select(sections).prop_map(str::to_string),
        "[a-z-]{1,12}-stream-[0-9x]{1,3}",
        "[a-z-]{1,20}",
    ];
    let key = prop_oneof![
        4 => prop::sample::select(keys).prop_map(str::to_string),
        1 => "[a-zA-Z-]{1,16}",
    ];
    let line = prop_oneof![
        8 => (key, value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => section.clone().prop_map(|s| format!("[{s}]")),
        1 => any::<String>().prop_map(|s| s.replace('\n', " ")),
        1 => Just("# comment".to_string()),
    ];
    (section, prop::collection::vec(line, 0..40))
        .prop_map(|(first, lines)| format!("[{first}]\n{}\n", lines.join("\n")))
        .boxed()
}

const NVINFER_SECTIONS: &[&str] = &[
    "property",
    "class-attrs-all",
    "class-attrs-0",
    "class-attrs-2",
];
const NVINFER_KEYS: &[&str] = &[
    "allow-gpu-fallback",
    "backend",
    "batch-size",
    "box-coordinates",
    "box-format",
    "classifier-softmax",
    "classifier-threshold",
    "cluster-mode",
    "cuda-graph",
    "cuda-tuning",
    "custom-lib-deepstream-version",
    "detected-max-h",
    "detected-max-w",
    "detected-min-h",
    "detected-min-w",
    "device",
    "enable-dla",
    "end-to-end-columns",
    "eps",
    "filter-out-class-ids",
    "gie-unique-id",
    "gpu-id",
    "group-threshold",
    "infer-dims",
    "input-object-max-height",
    "input-object-min-width",
    "interval",
    "maintain-aspect-ratio",
    "model-color-format",
    "net-scale-factor",
    "network-input-order",
    "network-mode",
    "network-type",
    "nms-iou-threshold",
    "num-detected-classes",
    "offsets",
    "operate-on-class-ids",
    "operate-on-gie-id",
    "output-blob-names",
    "output-instance-mask",
    "output-parser",
    "output-tensor-meta",
    "post-cluster-threshold",
    "pre-cluster-threshold",
    "process-mode",
    "roi-bottom-offset",
    "roi-top-offset",
    "secondary-reinfer-interval",
    "segmentation-output-order",
    "segmentation-threshold",
    "ssd-box-format",
    "symmetric-padding",
    "threshold",
    "topk",
    "use-dla-core",
    "workspace-size",
    "yolox-strides",
    "dbscan-min-score",
    "minBoxes",
];

#[test]
fn nvinfer_configurations() {
    fuzz(
        "nvinfer INI",
        ini_text(NVINFER_SECTIONS, NVINFER_KEYS),
        |text| {
            if let Ok(ini) = IniFile::parse(Path::new("fuzz.txt"), &text)
                && let Ok(loaded) = gst_trtinfer::config::InferConfig::from_ini(&ini)
            {
                let _ = loaded.config.validate();
                let _ = loaded.config.class_attrs.resolve(80);
            }
            Ok(())
        },
    );
}

const OSD_SECTIONS: &[&str] = &["osd", "class-attrs-all", "class-attrs-0", "class-attrs-3"];
const OSD_KEYS: &[&str] = &[
    "display-bbox",
    "display-text",
    "display-clock",
    "border-width",
    "border-color",
    "bbox-bg-color",
    "text-size",
    "text-color",
    "text-bg-color",
    "label-format",
    "font",
    "clock-font-size",
    "clock-color",
    "x-clock-offset",
    "y-clock-offset",
    "clock-format",
    "source-text",
    "blur-class-ids",
    "blur-mode",
    "blur-strength",
    "display-mask",
    "mask-alpha",
    "display-analytics",
    "blur",
    "border-color",
];

#[test]
fn osd_configurations() {
    fuzz("rsosd INI", ini_text(OSD_SECTIONS, OSD_KEYS), |text| {
        if let Ok(ini) = IniFile::parse(Path::new("fuzz.ini"), &text) {
            let _ = ferrostream_osd::config::parse(&ini);
        }
        Ok(())
    });
}

const ANALYTICS_SECTIONS: &[&str] = &[
    "property",
    "roi-filtering-stream-0",
    "overcrowding-stream-1",
    "line-crossing-stream-0",
    "direction-detection-stream-2",
];
const ANALYTICS_KEYS: &[&str] = &[
    "enable",
    "config-width",
    "config-height",
    "osd-mode",
    "display-font-size",
    "display-obj-cnt",
    "obj-cnt-win-in-ms",
    "roi-A",
    "roi-B",
    "inverse-roi",
    "class-id",
    "object-threshold",
    "time-threshold",
    "line-crossing-Exit",
    "line-crossing-",
    "extended",
    "mode",
    "direction-North",
    "direction-",
];

#[test]
fn nvdsanalytics_configurations() {
    fuzz(
        "nvdsanalytics INI",
        ini_text(ANALYTICS_SECTIONS, ANALYTICS_KEYS),
        |text| {
            if let Ok(ini) = IniFile::parse(Path::new("fuzz.txt"), &text)
                && let Ok((config, _)) =
                    ferrostream_analytics::config::AnalyticsConfig::from_ini(&ini)
            {
                // The rules at any frame size, then at work on a frame.
                for (w, h) in [(0, 0), (1, 1), (1920, 1080), (u32::MAX, 7)] {
                    let _ = config.rules_for(0, w, h);
                }
                let mut analyzer =
                    ferrostream_analytics::rules::Analyzer::new(config, Default::default());
                let mut frame = ferrostream_core::Frame::new(0, 0, 640, 480);
                let mut o = ferrostream_core::Object::new(
                    0,
                    "person".into(),
                    0.9,
                    ferrostream_core::BBox::new(10.0, 10.0, 20.0, 40.0),
                    1,
                );
                o.object_id = Some(1);
                frame.objects.push(o);
                analyzer.process(&mut frame, &mut Vec::new());
            }
            Ok(())
        },
    );
}

#[test]
fn tracker_configurations() {
    let key = prop_oneof![
        prop::sample::select(
            &[
                "algorithm",
                "probation-age",
                "max-shadow-age",
                "min-detector-confidence",
                "high-confidence",
                "min-tracker-confidence",
                "iou-threshold",
                "operate-on-class-ids",
                "report-shadow-tracks",
                "report-terminated-tracks",
                "appearance-weight",
                "embedding-attribute",
                "tracker-algorithm",
            ][..]
        )
        .prop_map(str::to_string),
        "[a-z-]{1,12}",
    ];
    let toml_value = prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        Just("nan".to_string()),
        Just("-inf".to_string()),
        any::<bool>().prop_map(|v| v.to_string()),
        "\"[a-z]{0,10}\"",
        prop::collection::vec(any::<i64>(), 0..5).prop_map(|v| format!("{v:?}")),
        any::<String>().prop_map(|s| s.replace('\n', " ")),
    ];
    let text = prop::collection::vec((key, toml_value), 0..16).prop_map(|kv| {
        kv.into_iter()
            .map(|(k, v)| format!("{k} = {v}\n"))
            .collect::<String>()
    });
    fuzz("rstracker TOML", text, |text| {
        if let Ok((config, _)) = gst_tracker::config::parse(Path::new("fuzz.toml"), &text) {
            // A tracker made from it runs.
            let mut tracker = gst_tracker::tracker::Tracker::new(config);
            let mut ids = gst_tracker::tracker::IdAllocator::default();
            let d = gst_tracker::tracker::Detection {
                bbox: ferrostream_core::BBox::new(1.0, 1.0, 10.0, 10.0),
                confidence: 0.9,
                class_id: 0,
                embedding: None,
            };
            for _ in 0..3 {
                tracker.update(std::slice::from_ref(&d), &mut ids);
            }
        }
        Ok(())
    });
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn label_files() {
    let path = temp_dir().join("labels.txt");
    let text = prop_oneof![
        any::<String>(),
        prop::collection::vec("[a-z ;]{0,12}", 0..50).prop_map(|v| v.join("\n")),
        prop::collection::vec(any::<u8>(), 0..400)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ];
    fuzz("label files", text, |text| {
        std::fs::write(&path, &text).unwrap();
        if let Ok(lines) = gst_trtinfer::labels::load(&path) {
            for classifier in [false, true] {
                let layers = gst_trtinfer::labels::per_layer(&lines, classifier);
                for layer in &layers {
                    let _ = gst_trtinfer::labels::label_for(layer, u32::MAX);
                }
            }
        }
        Ok(())
    });
}

/// The bytes of a real model, to mutate.
static MODEL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    std::fs::read(model("mobilenet_v2_imagenet.onnx")).expect("the MobileNetV2 model")
});

#[test]
fn onnx_models_for_the_dla_checker() {
    let len = MODEL.len();
    // Real models cut short, with bytes flipped, or with varints made huge; and random bytes.
    let mutated = (
        0..len,
        prop::collection::vec((0..len, any::<u8>()), 0..8),
        any::<bool>(),
    )
        .prop_map(move |(cut, flips, truncate)| {
            let mut bytes = MODEL.clone();
            for (at, b) in flips {
                bytes[at] = b;
            }
            if truncate {
                bytes.truncate(cut);
            }
            bytes
        });
    let bytes = prop_oneof![
        3 => mutated,
        1 => prop::collection::vec(any::<u8>(), 0..2000),
    ];
    let options = gst_dlainfer::check::CheckOptions::default();
    fuzz("ONNX (DLA checker)", bytes, |bytes| {
        if let Ok(model) = gst_dlainfer::check::onnx::Model::decode(&bytes) {
            let _ = gst_dlainfer::check::check_model(&model, "fuzz.onnx", &options);
        }
        Ok(())
    });
}

#[test]
fn json_frame_lines() {
    let valid = r#"{"source_id":0,"frame_num":3,"pts_ns":1,"width":64,"height":48,"objects":[{"object_id":2,"class_id":0,"label":"person","confidence":0.5,"bbox":{"left":1.0,"top":2.0,"width":3.0,"height":4.0},"component_id":1,"classifications":[],"attributes":{},"mask":{"width":2,"height":2,"runs":[1,2,1]}}],"segmentation":{"width":2,"height":1,"runs":[[0,1],[-1,1]]}}"#;
    let len = valid.len();
    let line = prop_oneof![
        (0..len, prop::collection::vec((0..len, any::<u8>()), 0..6)).prop_map(
            move |(cut, flips)| {
                let mut b = valid.as_bytes().to_vec();
                for (at, v) in flips {
                    b[at] = v;
                }
                b.truncate(cut.max(1));
                String::from_utf8_lossy(&b).into_owned()
            }
        ),
        any::<String>(),
    ];
    fuzz("JSON frame lines", line, |line| {
        if let Ok(frame) = ferrostream_core::json::parse_frame_line(&line) {
            // What was read can be drawn.
            let style = ferrostream_osd::style::Style::default();
            let mut list = ferrostream_osd::plan::DrawList::default();
            list.reset(64, 48);
            ferrostream_osd::plan::Planner::new(ferrostream_osd::font::Typeface::Builtin).plan(
                &style,
                std::slice::from_ref(&frame),
                0,
                None,
                &mut list,
            );
        }
        Ok(())
    });
}

/// Real-world bad files: each is an error naming the problem, never a panic.
#[test]
fn bad_files_are_clear_errors() {
    let dir = temp_dir();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("empty.onnx", Vec::new()),
        ("truncated.onnx", MODEL[..MODEL.len() / 3].to_vec()),
        (
            "random.onnx",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
        ),
        ("text.onnx", b"this is not a model\n".to_vec()),
        ("labels-as-model.onnx", b"person\ncar\n".to_vec()),
    ];
    for (name, bytes) in &files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let report = gst_dlainfer::check::check_file(&path, &Default::default());
        assert!(report.is_err(), "{name}: a report for a bad file");
        let err = report.unwrap_err().to_string();
        assert!(err.contains(name), "{name}: {err}");
    }
    // Configurations with values out of every range.
    let bad = "[property]\nbatch-size=-1\nnet-scale-factor=nan\ninfer-dims=0;0;0\n\
               num-detected-classes=4294967296\n";
    let ini = IniFile::parse(Path::new("bad.txt"), bad).unwrap();
    let err = gst_trtinfer::config::InferConfig::from_ini(&ini)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bad.txt:"), "{err}");
}

/// One surface's fields as a camera's decoder might (or might not) fill them.
#[derive(Debug, Clone)]
struct SurfaceFields {
    width: u32,
    height: u32,
    pitch: u32,
    color_format: u32,
    layout: u32,
    data_size: u32,
    null_data: bool,
    num_planes: u32,
    planes: [[u32; 4]; 5],
}

fn surface_fields() -> impl Strategy<Value = SurfaceFields> {
    let dim = prop_oneof![0u32..4096, Just(u32::MAX), any::<u32>()];
    (
        (dim.clone(), dim.clone(), dim.clone()),
        (0u32..40, 0u32..3, any::<u32>(), any::<bool>()),
        (
            0u32..6,
            prop::collection::vec(dim.clone(), 20).prop_map(|v| {
                let mut planes = [[0u32; 4]; 5];
                for (i, x) in v.into_iter().enumerate() {
                    planes[i / 4][i % 4] = x;
                }
                planes
            }),
        ),
    )
        .prop_map(
            |(
                (width, height, pitch),
                (color_format, layout, data_size, null_data),
                (n, planes),
            )| {
                SurfaceFields {
                    width,
                    height,
                    pitch,
                    color_format,
                    layout,
                    data_size,
                    null_data,
                    num_planes: n,
                    planes,
                }
            },
        )
}

/// Builds an NvBufSurface of one layout around `fields`, maps it as a buffer and reads it.
macro_rules! read_surface {
    ($layout:ident, $abi:expr, $head:expr, $fields:expr, $platform:expr) => {{
        use ferrostream_core::nvmm::abi::$layout;
        let (gpu_id, batch_size, num_filled, mem_type, null_list) = $head;
        let mut params: Vec<$layout::NvBufSurfaceParams> = (0..batch_size.max(1) as usize)
            .map(|i| {
                let f: &SurfaceFields = &$fields[i % $fields.len()];
                let mut p = $layout::NvBufSurfaceParams::zeroed();
                p.width = f.width;
                p.height = f.height;
                p.pitch = f.pitch;
                p.color_format = f.color_format;
                p.layout = f.layout;
                p.data_size = f.data_size;
                // Never dereferenced on the host: device memory is only described.
                p.data_ptr = if f.null_data {
                    std::ptr::null_mut()
                } else {
                    0x7f00_0000_0000usize as *mut std::ffi::c_void
                };
                p.plane_params.num_planes = f.num_planes;
                p.plane_params.width = f.planes[0];
                p.plane_params.height = f.planes[1];
                p.plane_params.pitch = f.planes[2];
                p.plane_params.offset = f.planes[3];
                p.plane_params.psize = f.planes[4];
                p
            })
            .collect();
        let mut surface = $layout::NvBufSurface::zeroed();
        surface.gpu_id = gpu_id;
        surface.batch_size = batch_size;
        surface.num_filled = num_filled;
        surface.mem_type = mem_type;
        surface.surface_list = if null_list {
            std::ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        // SAFETY: a plain #[repr(C)] struct viewed as its bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                &surface as *const _ as *const u8,
                std::mem::size_of_val(&surface),
            )
        }
        .to_vec();
        let buffer = gst::Buffer::from_slice(bytes);
        let options = ferrostream_core::nvmm::ReadOptions {
            abi: Some($abi),
            platform: Some($platform),
        };
        // SAFETY: the mapped bytes are an NvBufSurface of this layout whose surfaceList (when
        // not null) holds batchSize entries that outlive the call.
        let result = unsafe { ferrostream_core::nvmm::surface_images_with(&buffer, &options) };
        if let Ok(batch) = &result {
            assert!(batch.len() <= num_filled as usize);
        }
        drop(params);
    }};
}

#[test]
fn nvbufsurface_fields_as_read_from_a_buffer() {
    use ferrostream_core::nvmm::{NvmmAbi, Platform};
    init_gst();
    let head = (
        0u32..3,
        prop_oneof![0u32..6, Just(u32::MAX)],
        prop_oneof![0u32..8, Just(u32::MAX)],
        0u32..8,
        any::<bool>(),
    )
        .prop_map(|(gpu, batch, filled, mem, null)| (gpu, batch.min(64), filled, mem, null));
    let strategy = (
        head,
        prop::collection::vec(surface_fields(), 1..4),
        any::<bool>(),
        any::<bool>(),
    );
    fuzz(
        "NvBufSurface fields",
        strategy,
        |(head, fields, ds8, jetson)| {
            let platform = if jetson {
                Platform::Integrated
            } else {
                Platform::Discrete
            };
            if ds8 {
                read_surface!(ds8, NvmmAbi::Ds8, head, fields, platform);
            } else {
                read_surface!(ds7, NvmmAbi::Ds7, head, fields, platform);
            }
            Ok(())
        },
    );
}

fn init_gst() {
    ferrostream_tests::init();
}

/// Defect found by the hostile-input campaign: a configuration could make rstrtinfer allocate
/// an input tensor of any size (batch-size x infer-dims), and an allocation that fails aborts
/// the process. Now it is a start error.
#[test]
fn huge_network_input_is_refused_not_allocated() {
    ferrostream_tests::init();
    for (dims, batch, wanted) in [
        ("3;30000;30000", 1u32, "GiB an input tensor may take"),
        ("3;2000;2000", 1024, "GiB an input tensor may take"),
        ("3;40000;40000", 1, "each side must be 1 to 32768"),
    ] {
        let desc = format!(
            "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=64 \
             ! rstrtinfer onnx-file={} infer-dims={dims} batch-size={batch} ! fakesink",
            ferrostream_tests::quoted(&model("centerface.onnx"))
        );
        let pipeline = gst::parse::launch(&desc).unwrap();
        let bus = pipeline.bus().unwrap();
        assert!(pipeline.set_state(gst::State::Playing).is_err());
        let err = bus
            .timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Error])
            .expect("an error");
        pipeline.set_state(gst::State::Null).unwrap();
        let gst::MessageView::Error(e) = err.view() else {
            unreachable!()
        };
        let text = e.error().to_string();
        assert!(text.contains(wanted), "{dims}: {text}");
    }
    // A configuration file's batch-size has the property's limit.
    let ini = IniFile::parse(Path::new("big.txt"), "[property]\nbatch-size=100000\n").unwrap();
    let err = gst_trtinfer::config::InferConfig::from_ini(&ini)
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected 1 to 1024, found 100000"), "{err}");
}
