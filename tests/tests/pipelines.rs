// SPDX-License-Identifier: MIT OR Apache-2.0
//! The shipped configurations and scripts in `pipelines/` load and run, so they never rot.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use ferrostream_tests::{media, model, repo_root};
use gst_trtinfer::config::{InferConfig, ParserKind};
use gst_trtinfer::inference::Inference;

fn file_name(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .expect("a path")
}

#[test]
fn shipped_configs_load_without_warnings_and_build_their_model() {
    ferrostream_tests::init();
    let expected = [
        ("coco_ssd.txt", ParserKind::Ssd, 300, 300),
        ("centerface.txt", ParserKind::CenterFace, 640, 480),
    ];
    for (name, parser, width, height) in expected {
        let loaded = InferConfig::from_file(&repo_root().join("pipelines").join(name)).unwrap();
        assert!(loaded.warnings.is_empty(), "{name}: {:?}", loaded.warnings);
        let mut config = loaded.config;
        // Model files are named without a directory: resolve them as the element's search does.
        config.onnx_file = Some(model(&file_name(&config.onnx_file)));
        if config.labelfile_path.is_some() {
            config.labelfile_path = Some(model(&file_name(&config.labelfile_path)));
        }
        let inference = Inference::new(config, 1).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(inference.parser().map(|p| p.kind()), Some(parser), "{name}");
        assert_eq!(
            (inference.network().width, inference.network().height),
            (width, height),
            "{name}"
        );
    }
}

/// A directory holding only the plugin built for this test run (copied once per process, so that
/// tests running in parallel never see a half-written file).
fn plugin_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let built = exe.parent().unwrap().join("libgstferrostream.so");
        assert!(built.exists(), "plugin not built at {}", built.display());
        let dir = std::env::temp_dir().join(format!("ferrostream-plugin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&built, dir.join("libgstferrostream.so")).unwrap();
        dir
    })
    .clone()
}

#[test]
fn detect_script_runs_and_summarises() {
    let plugins = plugin_dir();
    let output = plugins.join("detections.jsonl");
    let models = model("coco_ssdlite_mobilenet_v2.onnx")
        .parent()
        .unwrap()
        .to_owned();
    let mut script = Command::new(repo_root().join("pipelines/detect-vtest.sh"));
    script
        .args(["--input", media("carphone_pristine.mp4").to_str().unwrap()])
        .args(["--output", output.to_str().unwrap()])
        .env("GST_PLUGIN_PATH", &plugins)
        .env("GST_REGISTRY", plugins.join("registry.bin"))
        .env("FERROSTREAM_MODEL_DIR", &models);
    let run = ferrostream_tests::output_within(&mut script, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("frames: 120"), "{stdout}");
    assert!(
        stdout.contains("frames/s:") && stdout.contains("objects per frame:"),
        "{stdout}"
    );
    let lines = std::fs::read_to_string(&output).unwrap();
    assert_eq!(lines.lines().count(), 120);
    // The man in the car is a person in most frames.
    let with_person = lines
        .lines()
        .filter(|l| l.contains("\"label\":\"person\""))
        .count();
    assert!(
        with_person >= 60,
        "{with_person} of 120 frames with a person"
    );
}

/// `pipelines/detect-dla-gpu.sh` (rsdlainfer `dla-core=-1`): without a DLA the element runs one
/// engine instead and says so in a warning; every frame is written, with the people found.
#[test]
fn dla_gpu_script_falls_back_without_a_dla_and_detects() {
    let plugins = plugin_dir();
    let output = plugins.join("detections-dla-gpu.jsonl");
    let models = model("coco_ssdlite_mobilenet_v2.onnx")
        .parent()
        .unwrap()
        .to_owned();
    let mut script = Command::new(repo_root().join("pipelines/detect-dla-gpu.sh"));
    script
        .args(["--input", media("carphone_pristine.mp4").to_str().unwrap()])
        .args(["--output", output.to_str().unwrap()])
        .env("GST_PLUGIN_PATH", &plugins)
        .env("GST_REGISTRY", plugins.join("registry-dla.bin"))
        .env("FERROSTREAM_MODEL_DIR", &models);
    let run = ferrostream_tests::output_within(&mut script, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("rsdlainfer-engine") && stdout.contains("No DLA on this machine"),
        "{stdout}"
    );
    assert!(stdout.contains("120 frames written"), "{stdout}");
    let lines = std::fs::read_to_string(&output).unwrap();
    let with_person = lines
        .lines()
        .filter(|l| l.contains("\"label\":\"person\""))
        .count();
    assert!(
        with_person >= 60,
        "{with_person} of 120 frames with a person"
    );
}

#[test]
fn metaexport_writes_to_stdout_without_location() {
    let plugins = plugin_dir();
    let mut launch = Command::new("gst-launch-1.0");
    launch
        .args([
            "-q",
            "videotestsrc",
            "num-buffers=3",
            "!",
            "video/x-raw,width=64,height=32",
            "!",
        ])
        .args(["rsmetaexport", "!", "fakesink"])
        .env("GST_PLUGIN_PATH", &plugins)
        .env("GST_REGISTRY", plugins.join("registry-stdout.bin"));
    let run = ferrostream_tests::output_within(&mut launch, Duration::from_secs(120));
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let frames: Vec<_> = stdout
        .lines()
        .map(|l| ferrostream_core::json::parse_frame_line(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(frames.len(), 3, "{stdout}");
    assert_eq!(
        (frames[2].frame_num, frames[2].width, frames[2].height),
        (2, 64, 32)
    );
}

#[test]
fn shipped_tracker_config_loads_without_warnings() {
    let (config, warnings) =
        gst_tracker::config_file::load(&repo_root().join("pipelines/tracker.toml")).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        config,
        gst_tracker::tracker::TrackerConfig::default(),
        "the file documents the defaults"
    );
}

/// `gst-inspect-1.0 ferrostream` shows the version and the commit the plugin was built from (a
/// `+` after it when the checkout had uncommitted changes). The plugin may have been built at an
/// earlier commit of this checkout, so the commit must be HEAD or one of its ancestors. Built
/// outside a git checkout (a release tarball), the version says `RELEASE` instead.
#[test]
fn the_plugin_version_names_its_commit() {
    ferrostream_tests::init();
    let plugin = gst::Registry::get()
        .find_plugin("ferrostream")
        .expect("the plugin is registered");
    let version = plugin.version();
    let commit = version
        .strip_prefix(concat!(env!("CARGO_PKG_VERSION"), "-"))
        .unwrap_or_else(|| panic!("version {version} does not start with the crate's"));
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(repo_root())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !git(&["rev-parse", "--git-dir"]) {
        assert_eq!(
            commit, "RELEASE",
            "version {version} outside a git checkout"
        );
        return;
    }
    let commit = commit.strip_suffix('+').unwrap_or(commit);
    assert!(
        commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "version {version}: no commit after the crate's version"
    );
    assert!(
        git(&["merge-base", "--is-ancestor", commit, "HEAD"]),
        "version {version}: {commit} is not a commit of this checkout's history"
    );
}

#[test]
fn pose_script_draws_skeletons_on_the_walkers() {
    let plugins = plugin_dir();
    let output = plugins.join("poses.mp4");
    let json = plugins.join("poses.jsonl");
    let mut script = Command::new(repo_root().join("pipelines/pose-vtest.sh"));
    script
        .args(["--input", media("vtest.avi").to_str().unwrap()])
        .args(["--output", output.to_str().unwrap()])
        .args(["--json", json.to_str().unwrap()])
        .args(["--frames", "12"])
        .env("GST_PLUGIN_PATH", &plugins)
        .env("GST_REGISTRY", plugins.join("registry-pose.bin"));
    let run = ferrostream_tests::output_within(&mut script, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("frames: 12"), "{stdout}");
    // The video is MP4 with an H.264 encoder, else WebM.
    let video = [output.clone(), output.with_extension("webm")]
        .into_iter()
        .find(|p| p.exists())
        .expect("the script's video");
    let frames: Vec<ferrostream_core::json::FrameRecord> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 12);
    let rgb = |path: &std::path::Path| -> Vec<(u32, Vec<u8>)> {
        ferrostream_tests::pull_samples(
            &format!(
                "filesrc location={} ! decodebin ! videoconvert ! video/x-raw,format=RGB \
                 ! appsink name=sink",
                ferrostream_tests::quoted(path)
            ),
            12,
        )
        .iter()
        .map(|s| {
            let info = gst_video::VideoInfo::from_caps(s.caps().unwrap()).unwrap();
            let map = s.buffer().unwrap().map_readable().unwrap();
            let stride = info.stride()[0] as u32;
            (stride, map.as_slice().to_vec())
        })
        .collect()
    };
    let drawn = rgb(&video);
    let source = rgb(&media("vtest.avi"));
    assert_eq!(drawn.len(), 12);
    // At each confident keypoint the video shows a white dot, where the source rarely is white.
    let white = |(stride, data): &(u32, Vec<u8>), x: f32, y: f32| {
        let at = (y.round() as u32 * stride + x.round() as u32 * 3) as usize;
        data[at..at + 3].iter().all(|&c| c >= 190)
    };
    let (mut points, mut white_drawn, mut white_source) = (0, 0, 0);
    for (i, frame) in frames.iter().enumerate() {
        for o in &frame.objects {
            let k = o.keypoints.as_ref().expect("every person has keypoints");
            for p in k.points.iter().filter(|p| p.confidence >= 0.6) {
                if p.x < 1.0 || p.y < 1.0 || p.x > 766.0 || p.y > 574.0 {
                    continue;
                }
                points += 1;
                white_drawn += usize::from(white(&drawn[i], p.x, p.y));
                white_source += usize::from(white(&source[i], p.x, p.y));
            }
        }
    }
    assert!(points >= 300, "{points} confident keypoints in 12 frames");
    assert!(
        white_drawn * 10 >= points * 8,
        "{white_drawn} of {points} keypoints are white dots in the video"
    );
    assert!(
        white_source * 10 <= points,
        "{white_source} of {points} keypoints white in the source"
    );
}
