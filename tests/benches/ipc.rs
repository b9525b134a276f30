// SPDX-License-Identifier: MIT OR Apache-2.0
//! Frames to another process: `rsipcsink ! rsipcsrc` (GPU frames mapped, not copied) against
//! `shmsink ! shmsrc` with a download before and an upload after (what a pipeline must do to
//! move GPU frames through shared system memory). Batches of eight 1080p NV12 frames drawn on the
//! GPU by `rsnvmmtestsrc`; the consumer is this program run again. Prints frames/s and the
//! per-frame latency (median and 95th percentile, from the producer's sink to the consumer's
//! output, on the shared monotonic clock) of each, and their ratios.
//!
//! `cargo bench -p ferrostream-tests --bench ipc` (a GPU is needed; `FS_IPC_BENCH_BATCHES`
//! sets the batches per run, default 200; the first 20 are warm-up, while the
//! consumer maps the producer's pool as it grows).

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrostream_core::cuda::{self, Context, HostBuffer, Stream};
use gst::prelude::*;

const WIDTH: usize = 1920;
const HEIGHT: usize = 1080;
const BATCH: usize = 8;
const WARMUP_BATCHES: usize = 20;
/// Batches a second in the latency runs: well within what either path sustains, so that the
/// latency is the path's own, not time spent queued behind a slower stage.
const PACED_FPS: usize = 30;
const FRAME_CAPS: &str = "video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1";

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_MONOTONIC is the same clock in every process.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `batches` batches of the eight sources: as fast as they go, or live at `PACED_FPS`.
fn sources(batches: usize, paced: bool) -> String {
    let (live, rate) = if paced {
        ("true", PACED_FPS)
    } else {
        ("false", 30)
    };
    (0..BATCH)
        .map(|i| {
            format!(
                "rsnvmmtestsrc num-buffers={batches} pattern-seed={i} is-live={live} \
                 ! video/x-raw(memory:NVMM),format=NV12,width={WIDTH},height={HEIGHT},framerate={rate}/1 \
                 ! m.sink_{i} "
            )
        })
        .collect::<String>()
        + &format!("rsstreammux name=m batch-size={BATCH} ")
}

fn launch(description: &str) -> gst::Pipeline {
    gst::parse::launch(description)
        .unwrap_or_else(|e| panic!("{description}: {e}"))
        .downcast()
        .unwrap()
}

/// Records the time each frame passes `pad` (a batch counts as its frames).
fn stamp_frames(pad: &gst::Pad, times: Arc<Mutex<Vec<u64>>>) {
    pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
        if let Some(buffer) = info.buffer() {
            let t = now_ns();
            let frames =
                ferrostream_core::BatchMeta::of(buffer).map_or(1, |m| m.surfaces().len().max(1));
            times.lock().unwrap().extend(std::iter::repeat_n(t, frames));
        }
        gst::PadProbeReturn::Ok
    });
}

fn wait_eos(pipeline: &gst::Pipeline, what: &str) {
    let bus = pipeline.bus().unwrap();
    let m = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(300),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .unwrap_or_else(|| panic!("{what}: no end within 300 s"));
    if let gst::MessageView::Error(e) = m.view() {
        panic!("{what}: {} ({:?})", e.error(), e.debug());
    }
}

/// The consumer process: receives `frames` frames and writes their arrival times to `out`.
fn consumer(mode: &str, socket: &str, frames: usize, out: &str) {
    ferrostream_tests::init();
    let description = match mode {
        "ipc" => format!("rsipcsrc socket-path={socket} ! fakesink name=sink sync=false"),
        _ => format!(
            "shmsrc socket-path={socket} is-live=true ! {FRAME_CAPS} ! cudaupload \
             ! video/x-raw(memory:CUDAMemory) ! fakesink name=sink sync=false"
        ),
    };
    let pipeline = launch(&description);
    let times = Arc::new(Mutex::new(Vec::new()));
    let sink = pipeline.by_name("sink").unwrap();
    stamp_frames(&sink.static_pad("sink").unwrap(), times.clone());
    pipeline.set_state(gst::State::Playing).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while times.lock().unwrap().len() < frames {
        assert!(
            std::time::Instant::now() < deadline,
            "{mode} consumer: too few frames"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let text: String = times.lock().unwrap()[..frames]
        .iter()
        .map(|t| format!("{t}\n"))
        .collect();
    std::fs::write(out, text).unwrap();
}

struct Result {
    fps: f64,
    median_ms: f64,
    p95_ms: f64,
}

fn spawn_consumer(mode: &str, socket: &Path, frames: usize, out: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--consumer",
            mode,
            &socket.display().to_string(),
            &frames.to_string(),
            &out.display().to_string(),
        ])
        .spawn()
        .expect("starting the consumer")
}

fn summarise(sent: &[u64], received: &[u64]) -> Result {
    assert_eq!(sent.len(), received.len(), "every frame arrived");
    let skip = WARMUP_BATCHES * BATCH;
    let mut latency: Vec<f64> = sent[skip..]
        .iter()
        .zip(&received[skip..])
        .map(|(s, r)| (*r as f64 - *s as f64) / 1e6)
        .collect();
    let at = |i: usize| latency[i.min(latency.len() - 1)];
    println!(
        "  latency along the run (ms): first {:.2}, 25% {:.2}, 50% {:.2}, 75% {:.2}, last {:.2}",
        at(0),
        at(latency.len() / 4),
        at(latency.len() / 2),
        at(latency.len() * 3 / 4),
        at(latency.len() - 1)
    );
    latency.sort_by(f64::total_cmp);
    let span = (received[received.len() - 1] - sent[skip]) as f64 / 1e9;
    Result {
        fps: (sent.len() - skip) as f64 / span,
        median_ms: latency[latency.len() / 2],
        p95_ms: latency[latency.len() * 95 / 100],
    }
}

fn read_times(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

fn run_ipc(dir: &Path, batches: usize, paced: bool) -> Result {
    let start = cuda::transfers();
    let socket = dir.join("ipc.sock");
    let out = dir.join("ipc.txt");
    let pipeline = launch(&format!(
        "{} ! rsipcsink name=ipc socket-path={} sync=false max-buffers=4",
        sources(batches, paced),
        socket.display()
    ));
    let sink = pipeline.by_name("ipc").unwrap();
    let sent = Arc::new(Mutex::new(Vec::new()));
    stamp_frames(&sink.static_pad("sink").unwrap(), sent.clone());
    pipeline.set_state(gst::State::Paused).unwrap();
    let frames = batches * BATCH;
    let mut child = spawn_consumer("ipc", &socket, frames, &out);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sink.property::<u32>("consumers") == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the ipc consumer did not attach"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    pipeline.set_state(gst::State::Playing).unwrap();
    wait_eos(&pipeline, "ipc producer");
    assert!(child.wait().unwrap().success(), "the ipc consumer failed");
    pipeline.set_state(gst::State::Null).unwrap();
    let copied = cuda::transfers().since(start);
    println!(
        "ipc: bytes copied in the producer: to host {}, to device {}, for sharing {}",
        copied.to_host, copied.to_device, copied.for_sharing
    );
    let sent = sent.lock().unwrap().clone();
    summarise(&sent, &read_times(&out))
}

fn run_shm(dir: &Path, batches: usize, paced: bool, ctx: &Arc<Context>) -> Result {
    let socket = dir.join("shm.sock");
    let out = dir.join("shm.txt");
    let frame_bytes = WIDTH * HEIGHT * 3 / 2;
    let source = launch(&format!(
        "{} ! appsink name=out sync=false",
        sources(batches, paced)
    ));
    let sink = launch(&format!(
        "appsrc name=in caps={FRAME_CAPS} format=time is-live=true \
         max-bytes={} block=true ! shmsink name=shm socket-path={} shm-size={} wait-for-connection=true \
         sync=false",
        frame_bytes * BATCH,
        socket.display(),
        frame_bytes * BATCH * 4
    ));
    let appsink = source
        .by_name("out")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let appsrc = sink
        .by_name("in")
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    let sent = Arc::new(Mutex::new(Vec::new()));
    stamp_frames(&appsink.static_pad("sink").unwrap(), sent.clone());
    sink.set_state(gst::State::Playing).unwrap();
    let frames = batches * BATCH;
    let connected = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let connected = connected.clone();
        sink.by_name("shm")
            .unwrap()
            .connect("client-connected", false, move |_| {
                connected.store(true, std::sync::atomic::Ordering::SeqCst);
                None
            });
    }
    let mut child = spawn_consumer("shm", &socket, frames, &out);
    // Frames start once the consumer is there, as in the rsipcsink run.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !connected.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the shm consumer did not connect"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    source.set_state(gst::State::Playing).unwrap();
    let stream = Stream::new(ctx, 0).unwrap();
    let mut staging = HostBuffer::new(ctx, frame_bytes).unwrap();
    let mut n = 0u64;
    while let Some(sample) = appsink.try_pull_sample(gst::ClockTime::from_seconds(60)) {
        let batch = sample.buffer().unwrap();
        let meta = ferrostream_core::BatchMeta::of(batch).expect("a batch");
        for surface in meta.surfaces() {
            // SAFETY: rsnvmmtestsrc's NVMM memory.
            let images =
                unsafe { ferrostream_core::nvmm::surface_images(&surface.buffer) }.unwrap();
            let image = images.surfaces()[0].image;
            // Download the two planes, tightly packed (what a download element does).
            let mut out = gst::Buffer::with_size(frame_bytes).unwrap();
            {
                let out = out.get_mut().unwrap();
                let mut map = out.map_writable().unwrap();
                let mut at = 0;
                for plane in 0..2 {
                    let p = image.planes[plane];
                    let rows = image.rows(plane) as usize;
                    let row = image.row_bytes(plane) as usize;
                    let len = p.pitch as usize * rows;
                    staging.download_from(&stream, p.ptr, len).unwrap();
                    for r in 0..rows {
                        let src = &staging.as_slice()[r * p.pitch as usize..][..row];
                        map[at..at + row].copy_from_slice(src);
                        at += row;
                    }
                }
            }
            out.get_mut()
                .unwrap()
                .set_pts(gst::ClockTime::from_mseconds(n * 33));
            n += 1;
            appsrc.push_buffer(out).unwrap();
        }
    }
    let _ = appsrc.end_of_stream();
    assert!(child.wait().unwrap().success(), "the shm consumer failed");
    source.set_state(gst::State::Null).unwrap();
    sink.set_state(gst::State::Null).unwrap();
    let sent = sent.lock().unwrap().clone();
    summarise(&sent, &read_times(&out))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--consumer") {
        consumer(
            &args[i + 1],
            &args[i + 2],
            args[i + 3].parse().unwrap(),
            &args[i + 4],
        );
        return;
    }
    ferrostream_tests::init();
    let ctx = match Context::primary(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("ipc bench: needs a CUDA GPU ({e}); nothing measured");
            return;
        }
    };
    let batches: usize = std::env::var("FS_IPC_BENCH_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = std::env::temp_dir().join(format!("fs-ipc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "ipc bench on {}: {batches} batches of {BATCH} {WIDTH}x{HEIGHT} NV12 frames, one consumer process",
        ctx.device_name().unwrap_or_default()
    );
    // Throughput: as fast as each path goes. Latency: paced at PACED_FPS batches a second.
    let shm = run_shm(&dir, batches, false, &ctx);
    let ipc = run_ipc(&dir, batches, false);
    let paced_batches = (batches / 2).max(WARMUP_BATCHES + 10);
    let shm_paced = run_shm(&dir, paced_batches, true, &ctx);
    let ipc_paced = run_ipc(&dir, paced_batches, true);
    println!(
        "| path | frames/s (as fast as it goes) | latency median ms ({PACED_FPS} batches/s) | latency p95 ms |"
    );
    println!("|---|---|---|---|");
    for (name, r, p) in [
        ("rsipcsink ! rsipcsrc (GPU memory mapped)", &ipc, &ipc_paced),
        ("download ! shmsink ! shmsrc ! cudaupload", &shm, &shm_paced),
    ] {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} |",
            r.fps, p.median_ms, p.p95_ms
        );
    }
    println!(
        "ratio rsipc/shm: frames/s {:.1}x, median latency {:.3}x",
        ipc.fps / shm.fps,
        ipc_paced.median_ms / shm_paced.median_ms
    );
    let _ = std::fs::remove_dir_all(&dir);
}
