// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, faults in the middle: the model file deleted or replaced by garbage while a
//! pipeline runs (the engine has it loaded: the run goes on to the end, and the next start is
//! a clear error naming the file, or runs the new model); a live source into a consumer slower
//! than real time (memory stays bounded; without a leaky queue the delay grows, with one late
//! frames are dropped and the delay stays short).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferrostream_tests::{element, init, media, model, quoted, repo_root, rss_kib};
use gst::prelude::*;

/// The tests of this binary run one at a time: one of them measures the process's memory.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn temp_model(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::copy(model("coco_ssdlite_mobilenet_v2.onnx"), &path).unwrap();
    path
}

fn pipeline(model: &Path) -> gst::Pipeline {
    init();
    let desc = format!(
        "rsurisrcbin uri={} ! videoconvert ! rstrtinfer config-file-path={} onnx-file={} \
         labelfile-path={} ! appsink name=sink sync=false",
        gst::glib::filename_to_uri(media("carphone_pristine.mp4"), None).unwrap(),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(model),
        quoted(&ferrostream_tests::model(
            "object_detection_classes_coco.txt"
        )),
    );
    gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap()
}

/// Plays to EOS, calling `at_frame_10` once; returns the frames seen, or the first error.
fn play(p: &gst::Pipeline, at_frame_10: impl FnOnce()) -> Result<usize, String> {
    let sink: gst_app::AppSink = element(p, "sink");
    let bus = p.bus().unwrap();
    let error = || {
        bus.pop_filtered(&[gst::MessageType::Error])
            .map(|m| match m.view() {
                gst::MessageView::Error(e) => format!("{} {:?}", e.error(), e.debug()),
                _ => unreachable!(),
            })
    };
    if p.set_state(gst::State::Playing).is_err() {
        return Err(error().unwrap_or_else(|| "state change failed".into()));
    }
    let mut frames = 0;
    let mut hook = Some(at_frame_10);
    let mut waited = Duration::ZERO;
    loop {
        if let Some(e) = error() {
            return Err(e);
        }
        match sink.try_pull_sample(gst::ClockTime::from_mseconds(100)) {
            Some(_) => {
                waited = Duration::ZERO;
                frames += 1;
                if frames == 10
                    && let Some(h) = hook.take()
                {
                    h();
                }
            }
            None if sink.is_eos() => return Ok(frames),
            None if waited < Duration::from_secs(30) => waited += Duration::from_millis(100),
            None => return Err(error().unwrap_or_else(|| format!("hang after {frames} frames"))),
        }
    }
}

#[test]
fn a_model_deleted_or_replaced_while_running() {
    let _serial = serial();
    // Deleted: the run goes on; the next start says which file is missing.
    let path = temp_model("deleted.onnx");
    let p = pipeline(&path);
    let frames = play(&p, || std::fs::remove_file(&path).unwrap()).unwrap();
    assert_eq!(frames, 120);
    p.set_state(gst::State::Null).unwrap();
    let err = play(&p, || {}).unwrap_err();
    assert!(err.contains("deleted.onnx"), "{err}");
    p.set_state(gst::State::Null).unwrap();

    // Replaced by garbage: the run goes on; the next start refuses the file, naming it.
    let path = temp_model("replaced.onnx");
    let p = pipeline(&path);
    let frames = play(&p, || {
        std::fs::write(&path, b"not a model any more").unwrap()
    })
    .unwrap();
    assert_eq!(frames, 120);
    p.set_state(gst::State::Null).unwrap();
    let err = play(&p, || {}).unwrap_err();
    assert!(err.contains("replaced.onnx"), "{err}");
    p.set_state(gst::State::Null).unwrap();

    // Replaced by a good model again: the next start runs it.
    std::fs::copy(model("coco_ssdlite_mobilenet_v2.onnx"), &path).unwrap();
    assert_eq!(play(&p, || {}).unwrap(), 120);
    p.set_state(gst::State::Null).unwrap();
}

/// Runs a live 60 frames/s camera into a consumer that takes 25 ms a frame, for 6 s, with
/// `before_mux` between the camera and rsstreammux. Returns the frames out, how far the last
/// frames were behind real time (the median of the last 30: one late wake-up of a loaded
/// machine is not a trend), the RSS samples and the frames the leaky queue dropped.
fn slow_consumer(before_mux: &str) -> (u64, Duration, Vec<u64>, u64) {
    init();
    let desc = format!(
        "rsstreammux name=mux batch-size=1 ! rstracker ! rsosd \
         ! identity sleep-time=25000 ! appsink name=sink sync=false \
         videotestsrc is-live=true ! video/x-raw,format=I420,width=640,height=480,framerate=60/1 \
         {before_mux} ! mux.sink_0"
    );
    let p = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    // A leaky queue named q reports each frame it drops as an overrun.
    let drops = Arc::new(AtomicU64::new(0));
    if let Some(q) = p.by_name("q") {
        let d = drops.clone();
        q.connect("overrun", false, move |_| {
            d.fetch_add(1, Ordering::Relaxed);
            None
        });
    }
    let sink: gst_app::AppSink = element(&p, "sink");
    p.set_state(gst::State::Playing).unwrap();
    let started = Instant::now();
    let mut frames = 0u64;
    let mut rss = Vec::new();
    let mut delays = Vec::new();
    while started.elapsed() < Duration::from_secs(6) {
        let sample = sink
            .try_pull_sample(gst::ClockTime::from_seconds(5))
            .expect("frames keep coming");
        // How far the frame is behind the pipeline's running time now.
        if let (Some(clock), Some(base), Some(pts)) = (
            p.clock(),
            p.base_time(),
            sample.buffer().and_then(|b| b.pts()),
        ) && let Some(now) = clock.time().checked_sub(base)
        {
            delays.push(Duration::from_nanos(now.saturating_sub(pts).nseconds()));
        }
        frames += 1;
        if frames.is_multiple_of(40) {
            rss.push(rss_kib());
        }
    }
    p.set_state(gst::State::Null).unwrap();
    let mut last = delays.split_off(delays.len().saturating_sub(30));
    last.sort();
    let delay = last.get(last.len() / 2).copied().unwrap_or_default();
    (frames, delay, rss, drops.load(Ordering::Relaxed))
}

#[test]
fn a_live_source_into_a_slow_consumer_stays_bounded() {
    let _serial = serial();
    // Without anything that drops, back-pressure holds the camera back: memory is flat, every
    // frame is shown, and the delay behind real time grows (a third of the time goes missing).
    let (frames, delay, rss, _) = slow_consumer("");
    println!("SLOW no drops: {frames} frames in 6 s, last {delay:?} behind; RSS (KiB): {rss:?}");
    assert!((frames as f64 / 6.0) < 45.0, "{frames} frames in 6 s");
    assert!(delay > Duration::from_secs(1), "{delay:?} behind");
    let growth = *rss.last().unwrap() as i64 - rss[rss.len() / 6] as i64;
    assert!(growth < 8 * 1024, "RSS grew {growth} KiB: {rss:?}");

    // With a leaky queue before the muxer, late frames are dropped and counted (the queue's
    // overrun signal), and the delay stays under a few frames.
    let (frames, delay, rss, drops) =
        slow_consumer("! queue name=q leaky=downstream max-size-buffers=2");
    println!(
        "SLOW leaky queue: {frames} frames in 6 s, {drops} dropped, last {delay:?} behind; \
         RSS (KiB): {rss:?}"
    );
    assert!(drops > 60, "{drops} frames dropped");
    assert!(delay < Duration::from_millis(250), "{delay:?} behind");
    let growth = *rss.last().unwrap() as i64 - rss[rss.len() / 6] as i64;
    assert!(growth < 8 * 1024, "RSS grew {growth} KiB: {rss:?}");
}

/// Run in a child process with the fault armed (see `an_engine_failure_mid_stream...`).
#[test]
fn injected_engine_failure_child() {
    if !ferrostream_tests::is_child() {
        return;
    }
    let p = pipeline(&model("coco_ssdlite_mobilenet_v2.onnx"));
    let started = Instant::now();
    let err = play(&p, || {}).unwrap_err();
    p.set_state(gst::State::Null).unwrap();
    println!("CHILD-ERROR {err}");
    // The error ends the run at once, not after a time-out.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_engine_failure_mid_stream_is_a_clear_error() {
    let _serial = serial();
    // The 20th engine call fails (the first 19 frames were inferred): the element posts an
    // error naming the failure, the pipeline stops, and nothing hangs.
    let (ok, out) = ferrostream_tests::run_in_child(
        "injected_engine_failure_child",
        &[("FERROSTREAM_FAULT_ENGINE_RUN", "20")],
    );
    assert!(ok, "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("CHILD-ERROR"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("fault injected at run 20"), "{line}");
    assert!(line.contains("inference failed"), "{line}");
}
