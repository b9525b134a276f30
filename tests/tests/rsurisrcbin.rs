// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsurisrcbin against a real RTSP server on loopback (GStreamer's RTSP server library, started
//! and killed by the test): frames resume after the server dies and comes back, the other
//! camera of the batch never stalls, the tracker hears that the source restarted, and memory
//! stays flat over many reconnections; `rtp-protocol=tcp` has rtspsrc use TCP only. Also: files
//! that loop, bad URIs, `drop-frame-interval` (exact frames, changed while playing) and
//! `initial-reconnect-interval`.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrostream_core::BatchMeta;
use ferrostream_tests::{RtspServer, element, free_port, init, launch, media, rss_kib};
use gst::prelude::*;

/// The RTSP tests one at a time: the memory test measures the whole process, and the other's
/// live camera must not stall because a second server restarts beside it.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a running pipeline has delivered so far.
#[derive(Default)]
struct Seen {
    /// Wall-clock arrival of every frame, per source id.
    frames: [Vec<Instant>; 2],
    /// Element messages and warnings, in order.
    messages: Vec<gst::Structure>,
    warnings: Vec<String>,
    /// `ferrostream-stream-restart` events seen after the muxer, per source.
    restarts: [usize; 2],
    /// Error messages (there should be none).
    errors: Vec<String>,
}

/// The pipeline of the RTSP tests: the camera and a live test source batched by rsstreammux,
/// then rstracker; an appsink thread records what arrives.
struct Cameras {
    pipeline: gst::Pipeline,
    seen: Arc<Mutex<Seen>>,
}

impl Cameras {
    fn start(uri: &str) -> Self {
        init();
        let caps = "video/x-raw,format=I420,width=320,height=240";
        let desc = format!(
            "rsstreammux name=mux batch-size=2 batched-push-timeout=200000 ! rstracker name=tracker \
             ! appsink name=sink sync=false \
             rsurisrcbin name=cam uri={uri} reconnect-interval=1 reconnect-backoff-max=500 \
               latency=100 ! videoconvert ! videoscale ! {caps} ! mux.sink_0 \
             videotestsrc is-live=true pattern=smpte ! {caps},framerate=15/1 ! mux.sink_1"
        );
        let pipeline = gst::parse::launch(&desc)
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let sink: gst_app::AppSink = element(&pipeline, "sink");
        let s = seen.clone();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |sink| {
                    let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    let now = Instant::now();
                    if let Some(meta) = sample.buffer().and_then(|b| b.meta::<BatchMeta>()) {
                        let mut seen = s.lock().unwrap_or_else(|e| e.into_inner());
                        for f in &meta.batch().frames {
                            seen.frames[f.source_id as usize].push(now);
                        }
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
        let tracker: gst::Element = element(&pipeline, "tracker");
        let s = seen.clone();
        tracker.static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::EVENT_DOWNSTREAM,
            move |_, info| {
                if let Some(gst::PadProbeData::Event(e)) = &info.data
                    && let Some(id) = ferrostream_core::batch::events::parse_stream_restart(e)
                {
                    s.lock().unwrap_or_else(|e| e.into_inner()).restarts[id as usize] += 1;
                }
                gst::PadProbeReturn::Ok
            },
        );
        let bus = pipeline.bus().unwrap();
        let s = seen.clone();
        bus.set_sync_handler(move |_, msg| {
            // A failed assertion of the test may have poisoned the lock; the pipeline goes on.
            let mut seen = s.lock().unwrap_or_else(|e| e.into_inner());
            match msg.view() {
                gst::MessageView::Element(e) => {
                    if let Some(st) = e.structure() {
                        seen.messages.push(st.to_owned());
                    }
                }
                gst::MessageView::Warning(w) => seen.warnings.push(w.error().to_string()),
                gst::MessageView::Error(e) => {
                    seen.errors.push(format!("{} ({:?})", e.error(), e.debug()))
                }
                _ => {}
            }
            gst::BusSyncReply::Drop
        });
        pipeline.set_state(gst::State::Playing).unwrap();
        Self { pipeline, seen }
    }

    fn frames(&self, source: usize) -> usize {
        self.seen.lock().unwrap().frames[source].len()
    }

    fn count(&self, message: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .messages
            .iter()
            .filter(|s| s.name() == message)
            .count()
    }

    /// Waits (at most `limit`) until `done` holds.
    fn wait(&self, what: &str, limit: Duration, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + limit;
        while !done(self) {
            let errors = self.seen.lock().unwrap().errors.clone();
            assert!(errors.is_empty(), "pipeline errors: {errors:?}");
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The longest wait between two frames of `source` after `from`.
    fn longest_gap(&self, source: usize, from: Instant) -> Duration {
        let seen = self.seen.lock().unwrap();
        seen.frames[source]
            .windows(2)
            .filter(|w| w[1] >= from)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or_default()
    }

    /// Kills the server, waits until the bin notices, starts it again and waits until frames
    /// come again. Returns the outage as the bin's frames saw it.
    fn outage(&self, server: RtspServer, port: u16, pause: Duration) -> RtspServer {
        let dropped = self.count("rsurisrcbin-disconnected");
        let back = self.count("rsurisrcbin-reconnected");
        server.kill();
        self.wait("the disconnection", Duration::from_secs(15), |c| {
            c.count("rsurisrcbin-disconnected") > dropped
        });
        std::thread::sleep(pause);
        let frames_before = self.frames(0);
        let server = RtspServer::start(port);
        self.wait("the reconnection", Duration::from_secs(30), |c| {
            c.count("rsurisrcbin-reconnected") > back && c.frames(0) > frames_before + 5
        });
        server
    }
}

impl Drop for Cameras {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

#[test]
fn rtsp_camera_comes_back_and_the_other_never_stalls() {
    let _serial = serial();
    let port = free_port();
    let server = RtspServer::start(port);
    let cams = Cameras::start(&format!("rtsp://127.0.0.1:{port}/test"));
    cams.wait("the first frames", Duration::from_secs(30), |c| {
        c.frames(0) >= 15
    });
    let start = Instant::now();
    let before = cams.frames(0);
    // The camera is away for 2 s beyond the bin's 1 s silence.
    let server = cams.outage(server, port, Duration::from_secs(2));
    let seen = cams.seen.lock().unwrap();
    // Frames stopped while the server was away, and came back.
    let gaps: Vec<Duration> = seen.frames[0]
        .windows(2)
        .filter(|w| w[1] >= start)
        .map(|w| w[1] - w[0])
        .collect();
    assert!(
        gaps.iter().any(|g| *g >= Duration::from_secs(2)),
        "no outage seen in the camera's frames: {gaps:?}"
    );
    assert!(seen.frames[0].len() > before + 5);
    // One warning names the camera; the messages tell the story.
    assert!(
        seen.warnings
            .iter()
            .any(|w| w.contains(&format!("127.0.0.1:{port}"))),
        "{:?}",
        seen.warnings
    );
    let dropped = seen
        .messages
        .iter()
        .find(|s| s.name() == "rsurisrcbin-disconnected")
        .unwrap();
    assert_eq!(dropped.get::<u32>("attempt").unwrap(), 1);
    assert!(dropped.get::<String>("uri").unwrap().ends_with("/test"));
    let back = seen
        .messages
        .iter()
        .find(|s| s.name() == "rsurisrcbin-reconnected")
        .unwrap();
    assert!(back.get::<u64>("outage-ms").unwrap() >= 2000);
    // The tracker heard that source 0 (only) restarted.
    assert!(
        seen.restarts[0] >= 1 && seen.restarts[1] == 0,
        "{:?}",
        seen.restarts
    );
    drop(seen);
    // The other camera kept its 15 frames/s all along.
    let gap = cams.longest_gap(1, start);
    assert!(
        gap < Duration::from_millis(700),
        "the live source stalled for {gap:?}"
    );
    drop(server);
}

#[test]
fn memory_stays_flat_over_many_reconnections() {
    let _serial = serial();
    let port = free_port();
    let mut server = RtspServer::start(port);
    let cams = Cameras::start(&format!("rtsp://127.0.0.1:{port}/test"));
    cams.wait("the first frames", Duration::from_secs(30), |c| {
        c.frames(0) >= 15
    });
    let mut rss = Vec::new();
    for _ in 0..24 {
        server = cams.outage(server, port, Duration::from_millis(200));
        rss.push(rss_kib());
    }
    // The first reconnections warm caches up; after that memory stays where it is.
    let growth = rss[23] as i64 - rss[5] as i64;
    println!("RSS after each reconnection (KiB): {rss:?}");
    assert!(
        growth < 3 * 1024,
        "RSS grew by {growth} KiB over 18 reconnections: {rss:?}"
    );
    assert_eq!(cams.count("rsurisrcbin-reconnected"), 24);
    drop(server);
}

#[test]
fn files_loop_with_continuing_timestamps() {
    init();
    let uri = gst::glib::filename_to_uri(media("carphone_pristine.mp4"), None).unwrap();
    let desc = format!("rsurisrcbin uri={uri} file-loop=true ! appsink name=sink sync=false");
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut running = Vec::new();
    for _ in 0..300 {
        let sample = sink
            .try_pull_sample(gst::ClockTime::from_seconds(10))
            .expect("frames keep coming past the file's end (120 frames)");
        let segment = sample
            .segment()
            .unwrap()
            .downcast_ref::<gst::ClockTime>()
            .unwrap()
            .clone();
        let pts = sample.buffer().unwrap().pts().unwrap();
        running.push(segment.to_running_time(pts).unwrap());
    }
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(
        running.windows(2).all(|w| w[1] > w[0]),
        "running times go back: {:?}",
        running.windows(2).find(|w| w[1] <= w[0])
    );
    // 300 frames at 30 frames/s: about 10 s of stream.
    let span = running[299] - running[0];
    assert!(
        (9_800..10_100).contains(&span.mseconds()),
        "{span} for 300 frames"
    );
}

/// The error a pipeline posts first, waiting at most `limit`.
fn first_error(desc: &str, limit: Duration) -> (String, Vec<gst::Structure>) {
    init();
    let pipeline = gst::parse::launch(desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let bus = pipeline.bus().unwrap();
    let _ = pipeline.set_state(gst::State::Playing);
    let mut messages = Vec::new();
    let deadline = Instant::now() + limit;
    let error = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no error within {limit:?}");
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(left.as_millis() as u64))
        else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Error(e) => break format!("{} {:?}", e.error(), e.debug()),
            gst::MessageView::Element(e) => messages.extend(e.structure().map(|s| s.to_owned())),
            _ => {}
        }
    };
    pipeline.set_state(gst::State::Null).unwrap();
    (error, messages)
}

#[test]
fn bad_uris_and_servers_that_never_come_are_clear_errors() {
    let (e, _) = first_error("rsurisrcbin ! fakesink", Duration::from_secs(10));
    assert!(e.contains("no uri"), "{e}");
    let (e, _) = first_error(
        "rsurisrcbin uri=/not/a/uri ! fakesink",
        Duration::from_secs(10),
    );
    assert!(e.contains("not a URI"), "{e}");
    let (e, _) = first_error(
        "rsurisrcbin uri=file:///nonexistent/video.mp4 ! fakesink",
        Duration::from_secs(10),
    );
    assert!(
        e.contains("/nonexistent/video.mp4") || e.contains("not found"),
        "{e}"
    );
    // Nothing listens on the port: two attempts after the first failure, then an error.
    let port = free_port();
    let (e, messages) = first_error(
        &format!(
            "rsurisrcbin uri=rtsp://127.0.0.1:{port}/none reconnect-interval=1 \
             reconnect-attempts=2 reconnect-backoff-max=200 ! fakesink"
        ),
        Duration::from_secs(30),
    );
    assert!(e.contains("gave up after 2"), "{e}");
    let attempts: Vec<u32> = messages
        .iter()
        .filter(|s| s.name() == "rsurisrcbin-disconnected")
        .map(|s| s.get::<u32>("attempt").unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
}

#[test]
fn http_uris_are_decoded() {
    init();
    let dir = media("vtest.avi").parent().unwrap().to_owned();
    let port = free_port();
    let mut server = Command::new(RtspServer::python())
        .args(["-m", "http.server", "--bind", "127.0.0.1"])
        .arg(port.to_string())
        .arg("--directory")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting python3 -m http.server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let desc =
        format!("rsurisrcbin uri=http://127.0.0.1:{port}/vtest.avi ! appsink name=sink sync=false");
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).unwrap();
    for n in 0..20 {
        let sample = sink.try_pull_sample(gst::ClockTime::from_seconds(10));
        assert!(sample.is_some(), "frame {n} of vtest.avi over HTTP");
        let caps = sample.unwrap().caps().unwrap().to_owned();
        let s = caps.structure(0).unwrap();
        assert_eq!(
            (
                s.get::<i32>("width").unwrap(),
                s.get::<i32>("height").unwrap()
            ),
            (768, 576)
        );
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let _ = server.kill();
    let _ = server.wait();
}

/// Pulls the frames of `pipeline`'s appsink `sink` (set PLAYING here) until the end of stream,
/// failing on an error message or after `limit`; `before(n)` runs before the nth frame is
/// pulled. Returns the frames' PTS.
fn pts_to_eos(
    pipeline: &gst::Pipeline,
    limit: Duration,
    mut before: impl FnMut(usize),
) -> Vec<gst::ClockTime> {
    let sink: gst_app::AppSink = element(pipeline, "sink");
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let deadline = Instant::now() + limit;
    let mut pts = Vec::new();
    loop {
        if let Some(m) = bus.pop_filtered(&[gst::MessageType::Error]) {
            let gst::MessageView::Error(e) = m.view() else {
                unreachable!("filtered")
            };
            panic!(
                "error after {} frames: {} {:?}",
                pts.len(),
                e.error(),
                e.debug()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no end of stream within {limit:?} ({} frames)",
            pts.len()
        );
        before(pts.len());
        match sink.try_pull_sample(gst::ClockTime::from_mseconds(500)) {
            Some(sample) => pts.push(sample.buffer().unwrap().pts().unwrap()),
            None if sink.is_eos() => break,
            None => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    pts
}

/// The PTS of the frames `rsurisrcbin uri=<vtest.avi> <properties>` gives, to the file's end.
fn vtest_pts(properties: &str) -> Vec<gst::ClockTime> {
    let uri = gst::glib::filename_to_uri(media("vtest.avi"), None).unwrap();
    let pipeline = launch(&format!(
        "rsurisrcbin uri={uri} {properties} ! appsink name=sink sync=false"
    ));
    pts_to_eos(&pipeline, Duration::from_secs(60), |_| {})
}

#[test]
fn drop_frame_interval_gives_every_third_frame() {
    let all = vtest_pts("");
    assert!(all.len() > 100, "vtest.avi gave {} frames", all.len());
    let kept = vtest_pts("drop-frame-interval=3");
    let expected: Vec<gst::ClockTime> = all.iter().copied().step_by(3).collect();
    assert_eq!(kept.len(), all.len().div_ceil(3), "of {} frames", all.len());
    assert_eq!(kept, expected, "not the frames 0, 3, 6, ...");
    // 0 and 1 keep every frame.
    assert_eq!(vtest_pts("drop-frame-interval=1"), all);
    // num-buffers counts the frames given: ten of them, frames 0, 3, ..., 27.
    let limited = vtest_pts("drop-frame-interval=3 num-buffers=10");
    assert_eq!(limited, expected[..10]);
}

/// Bins of the same name in pipelines running side by side (ferrostream-app names its sources
/// src0, src1, ...) count their own frames for num-buffers: their metrics series, keyed by the
/// name, is shared, and counting on it ended each bin early.
#[test]
fn num_buffers_counts_each_bin_apart_from_bins_of_the_same_name() {
    let uri = gst::glib::filename_to_uri(media("vtest.avi"), None).unwrap();
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let pipeline = launch(&format!(
                "rsurisrcbin name=src0 uri={uri} num-buffers=40 ! appsink name=sink sync=false"
            ));
            std::thread::spawn(move || pts_to_eos(&pipeline, Duration::from_secs(60), |_| {}))
        })
        .collect();
    for run in runs {
        assert_eq!(run.join().unwrap().len(), 40);
    }
}

#[test]
fn drop_frame_interval_changes_while_playing() {
    let all = vtest_pts("");
    let uri = gst::glib::filename_to_uri(media("vtest.avi"), None).unwrap();
    // One frame waits in the sink at most: the change reaches the frames still in the file.
    let pipeline = launch(&format!(
        "rsurisrcbin name=changing uri={uri} ! appsink name=sink sync=false max-buffers=1"
    ));
    let src: gst::Element = element(&pipeline, "changing");
    let pts = pts_to_eos(&pipeline, Duration::from_secs(60), |n| {
        if n == 20 {
            src.set_property("drop-frame-interval", 4u32);
        }
    });
    let index: Vec<usize> = pts
        .iter()
        .map(|p| {
            all.iter()
                .position(|a| a == p)
                .unwrap_or_else(|| panic!("{p} is no frame of the file"))
        })
        .collect();
    let steps: Vec<usize> = index.windows(2).map(|w| w[1] - w[0]).collect();
    // Every frame up to the change (and the few already past the bin), then every fourth,
    // counted from the last frame given: never a step of 2 or 3.
    assert_eq!(index[0], 0);
    assert!(steps[..19].iter().all(|&s| s == 1), "{steps:?}");
    let change = steps.iter().position(|&s| s != 1).expect("a change");
    assert!(
        change <= 25,
        "the change came {change} frames late: {steps:?}"
    );
    assert!(steps[change..].iter().all(|&s| s == 4), "{steps:?}");
    let rest = all.len() - 1 - index[change];
    assert_eq!(pts.len(), change + 1 + rest / 4, "{steps:?}");
}

/// The rtspsrc elements made inside `bin` (they are configured after they are added: read
/// them once frames came).
fn rtspsrcs(bin: &gst::Bin) -> Arc<Mutex<Vec<gst::Element>>> {
    let found = Arc::new(Mutex::new(Vec::new()));
    let f = found.clone();
    bin.connect_deep_element_added(move |_, _, e| {
        if e.factory().is_some_and(|f| f.name() == "rtspsrc") {
            f.lock().unwrap().push(e.clone());
        }
    });
    found
}

/// The nicks of rtspsrc's `protocols` flags.
fn protocols(rtspsrc: &gst::Element) -> Vec<String> {
    let value = rtspsrc.property_value("protocols");
    let (_, set) = gst::glib::FlagsValue::from_value(&value).expect("flags");
    set.iter().map(|f| f.nick().to_string()).collect()
}

#[test]
fn rtp_protocol_tcp_has_rtspsrc_use_tcp_only() {
    let _serial = serial();
    init();
    let port = free_port();
    let server = RtspServer::start(port);
    // Without and with rtp-protocol=tcp: the first shows the check would see UDP.
    for (protocol, udp) in [("auto", true), ("tcp", false)] {
        let pipeline = launch(&format!(
            "rsurisrcbin name=cam uri=rtsp://127.0.0.1:{port}/test latency=100 \
             rtp-protocol={protocol} ! appsink name=sink sync=false"
        ));
        let cam: gst::Bin = element(&pipeline, "cam");
        let made = rtspsrcs(&cam);
        let sink: gst_app::AppSink = element(&pipeline, "sink");
        pipeline.set_state(gst::State::Playing).unwrap();
        for n in 0..10 {
            assert!(
                sink.try_pull_sample(gst::ClockTime::from_seconds(20))
                    .is_some(),
                "{protocol}: frame {n} within 20 s"
            );
        }
        let made = made.lock().unwrap().clone();
        assert_eq!(made.len(), 1, "{protocol}: rtspsrc elements {made:?}");
        let set = protocols(&made[0]);
        // UDP transports use udpsrc elements inside rtspsrc; interleaved TCP none.
        let udpsrcs = cam
            .iterate_recurse()
            .into_iter()
            .flatten()
            .filter(|e| e.factory().is_some_and(|f| f.name() == "udpsrc"))
            .count();
        pipeline.set_state(gst::State::Null).unwrap();
        if udp {
            assert!(set.iter().any(|p| p == "udp"), "auto: {set:?}");
            assert!(udpsrcs > 0, "auto: no udpsrc, no UDP to tell apart");
        } else {
            assert_eq!(set, ["tcp"]);
            assert_eq!(udpsrcs, 0, "tcp: RTP came over UDP");
        }
    }
    // DeepStream's number for TCP only is the same value.
    let bin = gst::ElementFactory::make("rsurisrcbin").build().unwrap();
    bin.set_property_from_str("rtp-protocol", "4");
    assert_eq!(
        gst::glib::EnumValue::from_value(&bin.property_value("rtp-protocol"))
            .unwrap()
            .1
            .nick(),
        "tcp"
    );
    drop(server);
}

#[test]
fn initial_reconnect_interval_bounds_the_wait_for_the_first_frame() {
    init();
    // A server that never answers: the kernel completes the connection (the listener's
    // backlog), nobody reads the request. rtspsrc would wait 20 s for a reply, and the bin's
    // own rule 20 s for the first frame.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let pipeline = launch(&format!(
        "rsurisrcbin uri=rtsp://127.0.0.1:{port}/mute reconnect-interval=1 \
         initial-reconnect-interval=2 ! fakesink"
    ));
    let bus = pipeline.bus().unwrap();
    let started = Instant::now();
    pipeline.set_state(gst::State::Playing).unwrap();
    let reason = loop {
        let left = Duration::from_secs(15).saturating_sub(started.elapsed());
        assert!(!left.is_zero(), "no reconnection within 15 s");
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(left.as_millis() as u64))
        else {
            continue;
        };
        if let gst::MessageView::Error(e) = msg.view() {
            panic!("{} {:?}", e.error(), e.debug());
        }
        if let Some(s) = msg.structure()
            && s.name() == "rsurisrcbin-disconnected"
        {
            break s.get::<String>("reason").unwrap();
        }
    };
    let waited = started.elapsed();
    pipeline.set_state(gst::State::Null).unwrap();
    drop(silent);
    assert!(reason.starts_with("no data for 2."), "{reason}");
    assert!(
        (Duration::from_secs(2)..Duration::from_secs(6)).contains(&waited),
        "reconnected after {waited:?}"
    );
}
