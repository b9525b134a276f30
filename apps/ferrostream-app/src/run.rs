// SPDX-License-Identifier: MIT OR Apache-2.0
//! Runs a [`Plan`]: parses its description into the pipeline (the only pipeline built), adds
//! what a description cannot hold (the `**PERF:` counters and stage timers, KITTI files, the
//! RTSP server of `type=4` sinks, periodic smart record, the `[message-consumer<N>]`
//! subscribers, started once the pipeline plays), and drives it from a GLib main loop:
//! bus messages, SIGINT/SIGTERM (end of stream, so files are finalised; a second signal stops
//! at once), and the keys `q` (quit), `p` (pause) and `r` (resume) when standard input is a
//! terminal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrostream_core::BatchMeta;
use gst::glib;
use gst::prelude::*;
use gst_rtsp_server::prelude::*;

use crate::consumer;
use crate::perf::{self, Perf};
use crate::signals;
use crate::translate::{Env, Plan, RtspOut};

/// The machine as GStreamer sees it.
pub struct SystemEnv;

impl Env for SystemEnv {
    fn has_element(&self, name: &str) -> bool {
        gst::ElementFactory::find(name).is_some()
    }

    fn has_display(&self) -> bool {
        ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
    }

    fn has_gpu(&self) -> bool {
        ferrostream_core::cuda::device_count().is_ok_and(|n| n > 0)
    }
}

/// Initialises GStreamer and registers Ferrostream's elements in the process.
pub fn init() -> Result<(), String> {
    gst::init().map_err(|e| format!("cannot initialise GStreamer: {e}"))?;
    gstferrostream::plugin_register_static()
        .map_err(|e| format!("cannot register Ferrostream's elements: {e}"))
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// End of stream (sources ended, `q`, or a signal).
    Finished,
    /// The pipeline stopped with this error.
    Failed(String),
}

/// Makes the output folders of the plan; an error names the folder.
fn make_dirs(plan: &Plan) -> Result<(), String> {
    for dir in [
        &plan.kitti_dir,
        &plan.kitti_track_dir,
        &plan.terminated_track_dir,
    ]
    .into_iter()
    .flatten()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create output folder {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// Serves each RTSP output at `rtsp://<host>:<port>/ds-test`, reading the encoder's RTP from
/// loopback UDP as deepstream-app does.
fn rtsp_servers(
    outputs: &[RtspOut],
) -> Result<Vec<(gst_rtsp_server::RTSPServer, glib::SourceId)>, String> {
    let mut servers = Vec::new();
    for out in outputs {
        let server = gst_rtsp_server::RTSPServer::new();
        server.set_service(&out.rtsp_port.to_string());
        let factory = gst_rtsp_server::RTSPMediaFactory::new();
        // The RTP is depayloaded and payloaded again: the server reads the payloader's `pt`
        // property, which a bare udpsrc lacks (GLib warns about it).
        let (depay, pay) = if out.encoding == "H265" {
            ("rtph265depay", "rtph265pay")
        } else {
            ("rtph264depay", "rtph264pay")
        };
        factory.set_launch(&format!(
            "( udpsrc port={} buffer-size=524288 caps=\"application/x-rtp, media=video, \
             clock-rate=90000, encoding-name=(string){}, payload=96\" ! {depay} ! \
             {pay} name=pay0 pt=96 config-interval=1 )",
            out.udp_port, out.encoding
        ));
        factory.set_shared(true);
        server
            .mount_points()
            .ok_or("the RTSP server has no mount points")?
            .add_factory("/ds-test", factory);
        let id = server
            .attach(None)
            .map_err(|e| format!("cannot serve RTSP on port {}: {e}", out.rtsp_port))?;
        println!(
            "*** RTSP output at rtsp://localhost:{}/ds-test ***",
            out.rtsp_port
        );
        servers.push((server, id));
    }
    Ok(servers)
}

/// Times every stage and counts every frame for the `**PERF:` lines.
fn attach_perf(pipeline: &gst::Pipeline, plan: &Plan, perf: &Arc<Perf>) {
    for (index, name) in plan.stages.iter().enumerate() {
        let Some(element) = pipeline.by_name(name) else {
            continue;
        };
        if let Some(pad) = element.static_pad("sink") {
            let perf = perf.clone();
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                perf.enter(index);
                gst::PadProbeReturn::Ok
            });
        }
        if let Some(pad) = element.static_pad("src") {
            let perf = perf.clone();
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                perf.leave(index);
                gst::PadProbeReturn::Ok
            });
        }
    }
}

/// Counts frames and writes KITTI files from the complete metadata (before tiling).
fn attach_meta_tap(
    pipeline: &gst::Pipeline,
    plan: &Plan,
    perf: Option<Arc<Perf>>,
) -> Result<(), String> {
    let kitti = [
        plan.kitti_dir.clone(),
        plan.kitti_track_dir.clone(),
        plan.terminated_track_dir.clone(),
    ];
    if perf.is_none() && kitti.iter().all(Option::is_none) {
        return Ok(());
    }
    let element = pipeline
        .by_name(&plan.meta_tap)
        .ok_or_else(|| format!("no element {} in the pipeline", plan.meta_tap))?;
    let pad = element
        .static_pad("src")
        .ok_or_else(|| format!("{} has no src pad", plan.meta_tap))?;
    let failed = AtomicBool::new(false);
    let weak = pipeline.downgrade();
    pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
        let Some(buffer) = info.buffer() else {
            return gst::PadProbeReturn::Ok;
        };
        let Some(meta) = buffer.meta::<BatchMeta>() else {
            return gst::PadProbeReturn::Ok;
        };
        for frame in &meta.batch().frames {
            if let Some(perf) = &perf {
                perf.frame(frame.source_id);
            }
            if failed.load(Ordering::Relaxed) {
                continue;
            }
            if let Err(e) = crate::kitti::write(
                frame,
                kitti[0].as_deref(),
                kitti[1].as_deref(),
                kitti[2].as_deref(),
            ) {
                failed.store(true, Ordering::Relaxed);
                if let Some(p) = weak.upgrade() {
                    let msg = format!("cannot write KITTI output, no more is written: {e}");
                    gst::element_warning!(p, gst::ResourceError::Write, ("{}", msg));
                }
            }
        }
        gst::PadProbeReturn::Ok
    });
    Ok(())
}

/// Standard input in non-canonical mode (one key at a time, no echo) until dropped.
struct RawStdin {
    saved: libc::termios,
}

impl RawStdin {
    fn new() -> Option<Self> {
        // SAFETY: isatty only reads the descriptor's state.
        if unsafe { libc::isatty(0) } != 1 {
            return None;
        }
        // SAFETY: termios is plain data; tcgetattr fills it or fails without touching memory
        // beyond it.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to a termios for descriptor 0.
        if unsafe { libc::tcgetattr(0, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: a valid termios for descriptor 0.
        if unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(Self { saved })
    }
}

impl Drop for RawStdin {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in new() on the same descriptor.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &self.saved);
        }
    }
}

/// Reads one byte from standard input; `None` at its end or on an error.
fn read_key() -> Option<u8> {
    let mut byte = 0u8;
    // SAFETY: reads at most one byte into a valid one-byte buffer.
    let n = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
    (n == 1).then_some(byte)
}

/// Runs `plan` until the end of stream, an error, `q` or a signal.
pub fn run(plan: &Plan) -> Result<Outcome, String> {
    make_dirs(plan)?;
    let pipeline = gst::parse::launch(&plan.description)
        .map_err(|e| format!("cannot build the pipeline: {e}"))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "the description is not a pipeline".to_owned())?;
    let perf = plan
        .perf_interval
        .map(|_| Perf::new(&plan.stages, plan.live_sources.clone()));
    if let Some(perf) = &perf {
        attach_perf(&pipeline, plan, perf);
    }
    attach_meta_tap(&pipeline, plan, perf.clone())?;
    let main_loop = glib::MainLoop::new(None, false);
    let outcome = Arc::new(Mutex::new(Outcome::Finished));
    let _servers = rtsp_servers(&plan.rtsp)?;

    let bus = pipeline.bus().ok_or("the pipeline has no bus")?;
    let _watch = {
        let main_loop = main_loop.clone();
        let outcome = outcome.clone();
        bus.add_watch_local(move |_, message| {
            use gst::MessageView;
            match message.view() {
                MessageView::Eos(_) => {
                    println!("** INFO: <bus_callback>: Received EOS. Exiting ...");
                    main_loop.quit();
                }
                MessageView::Error(e) => {
                    let source = e.src().map(|s| s.path_string()).unwrap_or_default();
                    let debug = e.debug().map(|d| format!(" ({d})")).unwrap_or_default();
                    *outcome.lock().unwrap() =
                        Outcome::Failed(format!("{source}: {}{debug}", e.error()));
                    main_loop.quit();
                }
                MessageView::Warning(w) => {
                    let source = w.src().map(|s| s.path_string()).unwrap_or_default();
                    eprintln!("WARNING from {source}: {}", w.error());
                }
                MessageView::Element(e) => {
                    if let Some(s) = e.structure()
                        && s.name() == "rsurisrcbin-record-done"
                    {
                        println!(
                            "** INFO: recorded {} ({} frames)",
                            s.get::<String>("file").unwrap_or_default(),
                            s.get::<u64>("frames").unwrap_or_default()
                        );
                    }
                    if let Some(s) = e.structure()
                        && s.name() == "rstrtinfer-engine"
                    {
                        let field = |k: &str| s.get::<String>(k).unwrap_or_default();
                        println!(
                            "inference ({}): {} {} on {}",
                            e.src().map(|s| s.name().to_string()).unwrap_or_default(),
                            field("backend"),
                            field("runtime-version"),
                            field("providers")
                        );
                        if let Ok(why) = s.get::<String>("backend-choice") {
                            println!("  backend=auto: {why}");
                        }
                    }
                }
                _ => {}
            }
            glib::ControlFlow::Continue
        })
        .map_err(|e| format!("cannot watch the bus: {e}"))?
    };

    // A first signal ends the stream (files are finalised); a second stops at once.
    let stopping = Arc::new(AtomicBool::new(false));
    let mut sources = Vec::new();
    {
        let pipeline = pipeline.downgrade();
        let main_loop = main_loop.clone();
        let stopping = stopping.clone();
        signals::forward(move || {
            if stopping.swap(true, Ordering::SeqCst) {
                main_loop.quit();
            } else if let Some(p) = pipeline.upgrade() {
                println!("** Ending the stream (again to stop at once)");
                p.send_event(gst::event::Eos::new());
            }
        });
    }
    let raw = RawStdin::new();
    if raw.is_some() {
        println!("Keys: q quit, p pause, r resume");
        let pipeline = pipeline.downgrade();
        let stopping = stopping.clone();
        // A thread of its own reads the keys: a blocking read never holds the main loop.
        std::thread::spawn(move || {
            while let Some(key) = read_key() {
                let Some(p) = pipeline.upgrade() else { return };
                let stopping = stopping.clone();
                glib::MainContext::default().invoke(move || match key {
                    b'q' => {
                        stopping.store(true, Ordering::SeqCst);
                        println!("Quitting");
                        p.send_event(gst::event::Eos::new());
                    }
                    b'p' => {
                        println!("Pausing");
                        let _ = p.set_state(gst::State::Paused);
                    }
                    b'r' => {
                        println!("Resuming");
                        let _ = p.set_state(gst::State::Playing);
                    }
                    _ => {}
                });
            }
        });
    }
    if let (Some(perf), Some(interval)) = (&perf, plan.perf_interval) {
        let perf = perf.clone();
        sources.push(glib::timeout_add_seconds_local(interval, move || {
            for line in perf::lines(&perf.report()) {
                println!("{line}");
            }
            glib::ControlFlow::Continue
        }));
    }
    for record in &plan.periodic_record {
        let Some(element) = pipeline.by_name(&record.element) else {
            continue;
        };
        let (duration, cameras) = (record.duration, record.cameras.clone());
        sources.push(glib::timeout_add_seconds_local(
            record.interval,
            move || {
                if cameras.is_empty() {
                    let _ = element.emit_by_name::<Option<String>>("start-record", &[&duration]);
                } else {
                    for camera in &cameras {
                        let _ = element
                            .emit_by_name::<Option<String>>("start-record", &[camera, &duration]);
                    }
                }
                glib::ControlFlow::Continue
            },
        ));
    }

    if let Err(e) = pipeline.set_state(gst::State::Playing) {
        let detail = bus
            .pop_filtered(&[gst::MessageType::Error])
            .and_then(|m| match m.view() {
                // The details name what failed (a source's URI, a file).
                gst::MessageView::Error(e) => Some(match e.debug() {
                    Some(d) => format!("{} ({d})", e.error()),
                    None => e.error().to_string(),
                }),
                _ => None,
            })
            .unwrap_or_else(|| e.to_string());
        let _ = pipeline.set_state(gst::State::Null);
        return Ok(Outcome::Failed(format!(
            "the pipeline did not start: {detail}"
        )));
    }
    let consumers = match consumer::start(&plan.consumers, &plan.record_targets, &pipeline) {
        Ok(c) => c,
        Err(e) => {
            let _ = pipeline.set_state(gst::State::Null);
            return Ok(Outcome::Failed(e));
        }
    };
    main_loop.run();
    // No message acts on the pipeline while it stops.
    if let Some(c) = consumers {
        c.stop(Duration::from_secs(5));
    }
    drop(raw);
    for s in sources {
        s.remove();
    }
    // Stopping must not hang on a broken element: wait a bounded time.
    let stopper = {
        let pipeline = pipeline.clone();
        std::thread::spawn(move || pipeline.set_state(gst::State::Null))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !stopper.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !stopper.is_finished() {
        return Ok(Outcome::Failed(
            "the pipeline did not stop within 20 s".into(),
        ));
    }
    if let Some(perf) = &perf {
        let (totals, seconds, busiest) = perf.summary();
        let frames: u64 = totals.values().sum();
        println!(
            "**PERF:  total: {frames} frames in {seconds:.1} s ({:.1} frames/s)",
            frames as f64 / seconds
        );
        if let Some((stage, busy)) = busiest.filter(|(_, b)| *b > 0.0) {
            println!(
                "**PERF:  busiest stage {stage} was busy {:.0}% of the run: the pipeline could \
                 take about {:.1} frames/s",
                busy * 100.0,
                frames as f64 / seconds / busy
            );
        }
    }
    let outcome = outcome.lock().unwrap().clone();
    Ok(outcome)
}
