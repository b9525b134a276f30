// SPDX-License-Identifier: MIT OR Apache-2.0
//! What the rsipcsink / rsipcsrc tests share: producer pipelines run here, consumer processes
//! (the test binary run again as one of its consumer tests), and their checks.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use gst::prelude::*;

use crate::{init, quoted};

pub const WATCHDOG: Duration = Duration::from_secs(180);

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fs-ipc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A consumer process: this binary running `ipc_consumer` with `env`; killed (with its
/// process group) when dropped.
pub struct ConsumerProcess(Child);

impl ConsumerProcess {
    pub fn spawn(env: &[(&str, String)]) -> Self {
        Self::spawn_test("ipc_consumer", env)
    }

    /// Runs test `name` of this binary as the consumer.
    pub fn spawn_test(name: &str, env: &[(&str, String)]) -> Self {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            name,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FERROSTREAM_TEST_CHILD", "1")
        .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self(cmd.spawn().expect("starting a consumer process"))
    }

    /// Waits for the process to end by itself; true when it passed.
    pub fn wait(mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.success();
            }
            assert!(
                Instant::now() < deadline,
                "the consumer process did not end in {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops (SIGSTOP) the process: it holds what it has and reads nothing more.
    pub fn stop(&self) {
        // SAFETY: kill(2) on the process group made for the child.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGSTOP) };
    }

    pub fn kill(mut self) {
        // SAFETY: kill(2) on the process group made for the child.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

impl Drop for ConsumerProcess {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // SAFETY: as in `kill`.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
            let _ = self.0.wait();
        }
    }
}

/// A producer pipeline, started up to PAUSED (its socket listening).
pub struct Producer {
    pub pipeline: gst::Pipeline,
    pub sink: gst::Element,
}

impl Producer {
    pub fn start(description: &str) -> Self {
        init();
        let pipeline = gst::parse::launch(description)
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        let sink = pipeline.by_name("ipc").expect("an rsipcsink named ipc");
        pipeline.set_state(gst::State::Paused).unwrap();
        Self { pipeline, sink }
    }

    pub fn consumers(&self) -> u32 {
        self.sink.property::<u32>("consumers")
    }

    /// Waits until `n` consumers are attached.
    pub fn wait_for_consumers(&self, n: u32) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.consumers() != n {
            assert!(
                Instant::now() < deadline,
                "{} consumers attached, {n} expected",
                self.consumers()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Plays to EOS; returns the warnings posted meanwhile.
    pub fn run_to_eos(&self) -> Vec<String> {
        self.pipeline.set_state(gst::State::Playing).unwrap();
        let bus = self.pipeline.bus().unwrap();
        let deadline = Instant::now() + WATCHDOG;
        let mut warnings = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the producer did not reach EOS in {WATCHDOG:?}"
            );
            let Some(m) = bus.timed_pop(gst::ClockTime::from_mseconds(left.as_millis() as u64))
            else {
                continue;
            };
            match m.view() {
                gst::MessageView::Eos(_) => return warnings,
                gst::MessageView::Error(e) => {
                    panic!("producer error: {} ({:?})", e.error(), e.debug())
                }
                gst::MessageView::Warning(w) => warnings.push(w.error().to_string()),
                _ => {}
            }
        }
    }

    /// Warnings posted so far.
    pub fn warnings(&self) -> Vec<String> {
        let bus = self.pipeline.bus().unwrap();
        std::iter::from_fn(|| bus.pop_filtered(&[gst::MessageType::Warning]))
            .filter_map(|m| match m.view() {
                gst::MessageView::Warning(w) => Some(w.error().to_string()),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

/// Counts buffers reaching the producer's sink.
pub fn count_rendered(producer: &Producer) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = n.clone();
    producer
        .sink
        .static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            gst::PadProbeReturn::Ok
        });
    n
}

pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The metadata consumer ([`run_consumer_child`]) on `socket`, writing to `out`; `extra`: more
/// of its environment (`FS_IPC_INFER`).
pub fn spawn_consumer(socket: &Path, out: &Path, extra: &[(&str, String)]) -> ConsumerProcess {
    let mut env = vec![
        ("FS_IPC_SOCKET", socket.display().to_string()),
        ("FS_IPC_OUT", out.display().to_string()),
    ];
    env.extend(extra.iter().cloned());
    ConsumerProcess::spawn(&env)
}

/// Waits until the metadata consumer writing `out` has received `frames` frames (rsmetaexport
/// writes a line per frame).
pub fn wait_for_frames(out: &Path, frames: usize) {
    wait_until("the consumer receives frames", || {
        std::fs::read_to_string(out).is_ok_and(|s| s.lines().count() >= frames)
    });
}

/// The consumer side, run in a child process: `rsipcsrc` (then rstrtinfer when
/// `FS_IPC_INFER` is set) into `rsmetaexport` at `FS_IPC_OUT`, until the producer's EOS.
pub fn run_consumer_child() {
    init();
    let socket = std::env::var("FS_IPC_SOCKET").unwrap();
    let out = std::env::var("FS_IPC_OUT").unwrap();
    let infer = std::env::var("FS_IPC_INFER")
        .map(|c| format!("! rstrtinfer {c} "))
        .unwrap_or_default();
    let description = format!(
        "rsipcsrc socket-path={} {infer}! rsmetaexport location={} ! fakesink sync=false",
        quoted(Path::new(&socket)),
        quoted(Path::new(&out))
    );
    let pipeline = gst::parse::launch(&description)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let message = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(WATCHDOG.as_secs()),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("the consumer ends within the watchdog");
    pipeline.set_state(gst::State::Null).unwrap();
    if let gst::MessageView::Error(e) = message.view() {
        panic!("consumer error: {} ({:?})", e.error(), e.debug());
    }
}

/// FNV-1a over the visible bytes of the luma (first) plane of each of a buffer's surfaces (the
/// batch's surfaces, or the buffer itself, laid out as `caps` say), downloaded from the GPU. The
/// frames may be NVMM or CUDA memory (in their producer's context).
pub fn surface_hashes(buffer: &gst::BufferRef, caps: &gst::CapsRef) -> Vec<u64> {
    use ferrostream_core::batch::{FrameSource, MemoryKind};
    let memory = MemoryKind::from_caps(caps);
    let source = FrameSource::from_caps(caps).unwrap();
    let count =
        ferrostream_core::BatchMeta::of(buffer).map_or(1, |m| m.batch().frames.len().max(1));
    let mut frames = ferrostream_core::cuda::DeviceFrames::default();
    (0..count)
        .map(|i| {
            let (surface, info) =
                ferrostream_core::batch::frame_pixels(&source, buffer, i).unwrap();
            let frame = frames.map(memory, surface, info, false).unwrap();
            let stream = ferrostream_core::cuda::Stream::new(&frame.context, 0).unwrap();
            let image = frame.image;
            let plane = image.planes[0];
            let mut bytes = vec![0u8; plane.pitch as usize * image.height as usize];
            // SAFETY: the plane's rows, mapped in their context while `frame` lives.
            unsafe { ferrostream_core::cuda::download(&stream, plane.ptr, &mut bytes) }.unwrap();
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for row in bytes.chunks(plane.pitch as usize) {
                for &b in &row[..image.row_bytes(0) as usize] {
                    h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
                }
            }
            h
        })
        .collect()
}

/// The GPU consumer, run in a child process: `rsipcsrc` into an appsink; writes the hash of
/// every surface it receives to `FS_IPC_OUT`, one per line, and checks that nothing but those
/// check downloads was copied in this process.
pub fn run_gpu_consumer_child() {
    init();
    let socket = std::env::var("FS_IPC_SOCKET").unwrap();
    let out = std::env::var("FS_IPC_OUT").unwrap();
    let pipeline = gst::parse::launch(&format!(
        "rsipcsrc socket-path={} ! appsink name=sink sync=false",
        quoted(Path::new(&socket))
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let start = ferrostream_core::cuda::transfers();
    let mut lines = String::new();
    let mut checked = 0u64;
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) {
        let caps = sample.caps().unwrap();
        assert_eq!(
            ferrostream_core::batch::MemoryKind::from_caps(caps),
            ferrostream_core::batch::MemoryKind::Nvmm,
            "device frames arrive as NVMM memory: {caps}"
        );
        let buffer = sample.buffer().unwrap();
        let before = ferrostream_core::cuda::transfers();
        for h in surface_hashes(buffer, caps) {
            lines.push_str(&format!("{h:016x}\n"));
        }
        checked += ferrostream_core::cuda::transfers().since(before).to_host;
    }
    let copied = ferrostream_core::cuda::transfers().since(start);
    let error = pipeline
        .bus()
        .unwrap()
        .pop_filtered(&[gst::MessageType::Error]);
    pipeline.set_state(gst::State::Null).unwrap();
    std::fs::write(&out, lines).unwrap();
    if let Some(m) = error
        && let gst::MessageView::Error(e) = m.view()
    {
        panic!("consumer error: {} ({:?})", e.error(), e.debug());
    }
    assert_eq!(
        (
            copied.to_host - checked,
            copied.to_device,
            copied.for_sharing,
            copied.between_contexts
        ),
        (0, 0, 0, 0),
        "the consumer copied pixels"
    );
}
