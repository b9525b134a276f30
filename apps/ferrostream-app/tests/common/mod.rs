// SPDX-License-Identifier: MIT OR Apache-2.0
//! What the app's end-to-end tests share: the test clip, the app run as a command with a time
//! limit, KITTI files read back, and the hand-written pipeline they are compared with.
// Each test file uses a part of this module; the rest would warn there as unused.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use ferrostream_tests::{media, model, output_within, quoted, repo_root, run_pipeline};
use gst::prelude::*;

pub const LIMIT: Duration = Duration::from_secs(300);
pub const FRAMES: usize = 30;

/// A folder of this test's own.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fsapp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The first 30 frames of vtest.avi (pedestrians, 768x576) as H.264 in MP4, made once.
pub fn clip() -> &'static Path {
    static CLIP: OnceLock<PathBuf> = OnceLock::new();
    CLIP.get_or_init(|| encode_vtest("clip", "", FRAMES))
}

/// The first `frames` frames of vtest.avi, through `scale` (caps after videoscale, or
/// nothing), as H.264 in MP4 with a keyframe every 10 frames, in a file named after `name`.
pub fn encode_vtest(name: &str, scale: &str, frames: usize) -> PathBuf {
    let path = std::env::temp_dir().join(format!("fsapp-{name}-{}.mp4", std::process::id()));
    let scale = if scale.is_empty() {
        String::new()
    } else {
        format!("videoscale ! {scale} ! ")
    };
    let pipeline = ferrostream_tests::launch(&format!(
        "filesrc location={} ! decodebin ! videoconvert ! {scale}identity eos-after={frames} ! \
         x264enc speed-preset=ultrafast key-int-max=10 ! h264parse ! mp4mux ! \
         filesink location={}",
        quoted(&media("vtest.avi")),
        quoted(&path)
    ));
    pipeline
        .set_state(gst::State::Playing)
        .expect("making the clip");
    let bus = pipeline.bus().unwrap();
    let message = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(120),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("the clip is made within 120 s");
    assert!(
        matches!(message.view(), gst::MessageView::Eos(_)),
        "making the clip: {message:?}"
    );
    pipeline.set_state(gst::State::Null).unwrap();
    path
}

/// Runs the app in `cwd` with `-c config` and `args`; returns (success, stdout, stderr).
pub fn app_in(cwd: &Path, config: &Path, args: &[&str]) -> (bool, String, String) {
    let model_dir = model("coco_ssdlite_mobilenet_v2.onnx")
        .parent()
        .unwrap()
        .to_owned();
    let out = output_within(
        Command::new(env!("CARGO_BIN_EXE_ferrostream-app"))
            .current_dir(cwd)
            .env(ferrostream_core::paths::MODEL_DIR_ENV, model_dir)
            .arg("-c")
            .arg(config)
            .args(args)
            .stdin(Stdio::null()),
        LIMIT,
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

pub fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copying {}: {e}", from.display()));
}

/// One line of a KITTI file.
#[derive(Debug)]
pub struct Kitti {
    pub label: String,
    pub track: Option<u64>,
    /// left, top, right, bottom
    pub ltrb: [f32; 4],
    pub confidence: f32,
}

/// The lines of a KITTI detection (`track` false) or track file.
pub fn kitti(path: &Path, track: bool) -> Vec<Kitti> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let (track, at) = if track {
                (Some(f[1].parse().unwrap()), 5)
            } else {
                (None, 4)
            };
            let n = |i: usize| f[i].parse::<f32>().unwrap();
            Kitti {
                label: f[0].to_owned(),
                track,
                ltrb: [n(at), n(at + 1), n(at + 2), n(at + 3)],
                confidence: n(f.len() - 1),
            }
        })
        .collect()
}

/// Asserts that the KITTI files in `dir` (one per frame) hold exactly the objects of the clip
/// run through `rstrtinfer config-file-path=<infer_config>` by hand; returns every frame's
/// objects.
pub fn assert_kitti_equals_hand_written(dir: &Path, infer_config: &Path) -> Vec<Vec<Kitti>> {
    // The model and labels named by the test models' folder, as the app finds them.
    let hand = run_pipeline(
        &format!(
            "filesrc location={} ! qtdemux ! decodebin ! videoconvert ! \
             video/x-raw,format=I420 ! rstrtinfer config-file-path={} ! appsink name=sink",
            quoted(clip()),
            quoted(infer_config)
        ),
        LIMIT,
    )
    .unwrap();
    assert_eq!(hand.frames.len(), FRAMES);
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), FRAMES);
    let mut all = Vec::new();
    for (n, frame) in hand.frames.iter().enumerate() {
        let found = kitti(&dir.join(format!("00_000_{n:06}.txt")), false);
        assert_eq!(found.len(), frame.objects.len(), "frame {n}: {found:?}");
        for (o, k) in frame.objects.iter().zip(&found) {
            let d = &o.detector_bbox;
            let want = [d.left, d.top, d.left + d.width, d.top + d.height];
            assert_eq!(k.label.as_str(), &*o.label, "frame {n}");
            for (a, w) in k.ltrb.iter().zip(want) {
                assert!((a - w).abs() < 0.01, "frame {n}: {:?} vs {want:?}", k.ltrb);
            }
            assert!((k.confidence - o.confidence).abs() < 1e-4, "frame {n}");
        }
        all.push(found);
    }
    all
}

/// The folder of the test models, for the app's model lookup.
pub fn model_dir() -> PathBuf {
    model("coco_ssdlite_mobilenet_v2.onnx")
        .parent()
        .unwrap()
        .to_owned()
}

/// The COCO detector's nvinfer configuration.
pub fn coco() -> PathBuf {
    repo_root().join("pipelines/coco_ssd.txt")
}

/// Runs the app in the configuration's folder; returns (success, stdout, stderr).
pub fn app(config: &Path, args: &[&str]) -> (bool, String, String) {
    app_in(config.parent().unwrap_or(Path::new(".")), config, args)
}
