// SPDX-License-Identifier: MIT OR Apache-2.0
//! Helpers for Ferrostream's end-to-end tests: plugin registration, test assets, and running a
//! pipeline to collect the metadata of every frame (or the error it stopped with).
//!
//! Test models and media are looked up in `FERROSTREAM_MODEL_DIR` / `FERROSTREAM_MEDIA_DIR`,
//! then in `../shared/{models,media}` beside the repository, then in the cache that
//! `scripts/fetch-models.sh` fills.

pub mod ipc;
pub mod rest;

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

use ferrostream_core::{BatchMeta, Frame};
use gst::prelude::*;

/// Initialises GStreamer and registers the Ferrostream elements (once per process).
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        gst::init().expect("GStreamer initialisation");
        gstferrostream::plugin_register_static().expect("registering the Ferrostream plugin");
    });
}

pub fn repo_root() -> PathBuf {
    // At run time first: cargo sets it, and so does scripts/gpu-check.sh, which runs the test
    // binaries in a copy of the repository on another machine, where the build path is absent.
    // Crates elsewhere in the workspace (apps/ferrostream-app) use these helpers too: the root
    // is the nearest folder above the manifest that holds the workspace's Cargo.lock.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.lock").is_file())
        .expect("the crate sits in the repository")
        .to_owned()
}

fn asset(kind: &str, env: &str, name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os(env)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.push(repo_root().join("..").join("shared").join(kind));
    dirs.push(ferrostream_core::paths::cache_dir().join(kind));
    for dir in &dirs {
        let path = dir.join(name);
        if path.exists() {
            return path;
        }
    }
    panic!(
        "test {kind} file {name} not found in {dirs:?}; run scripts/fetch-models.sh or set {env}"
    );
}

/// A test model (ONNX file or label file).
pub fn model(name: &str) -> PathBuf {
    asset("models", ferrostream_core::paths::MODEL_DIR_ENV, name)
}

/// A test video or image.
pub fn media(name: &str) -> PathBuf {
    asset("media", "FERROSTREAM_MEDIA_DIR", name)
}

/// Parses a test's pipeline description (a parse error is a bug in the test: it panics).
pub fn launch(description: &str) -> gst::Pipeline {
    init();
    gst::parse::launch(description)
        .unwrap_or_else(|e| panic!("cannot parse `{description}`: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("a pipeline description")
}

/// The element called `name` in `pipeline`, as a `T`.
pub fn element<T: IsA<gst::Element>>(pipeline: &gst::Pipeline, name: &str) -> T {
    pipeline
        .by_name(name)
        .unwrap_or_else(|| panic!("no element named {name}"))
        .downcast::<T>()
        .unwrap_or_else(|_| panic!("element {name} has another type"))
}

/// A path for use inside a `gst-launch` description.
pub fn quoted(path: &Path) -> String {
    format!("\"{}\"", path.display())
}

/// What a pipeline produced.
#[derive(Debug, Default)]
pub struct RunOutput {
    /// Metadata of every frame that reached the sink, in order (frames without metadata are
    /// recorded as empty frames).
    pub frames: Vec<Frame>,
    /// Element messages posted on the bus (e.g. `rstrtinfer-engine`).
    pub element_messages: Vec<gst::Structure>,
    /// Warning messages posted on the bus.
    pub warnings: Vec<String>,
}

impl RunOutput {
    /// String field `field` of the first element message named `message`.
    pub fn message_field(&self, message: &str, field: &str) -> Option<String> {
        self.element_messages
            .iter()
            .find(|s| s.name() == message)
            .and_then(|s| s.get::<String>(field).ok())
    }

    /// String field `field` of rstrtinfer's `rstrtinfer-engine` message.
    pub fn engine_field(&self, field: &str) -> String {
        self.message_field("rstrtinfer-engine", field)
            .unwrap_or_else(|| panic!("no {field} in the engine message"))
    }

    /// The output parser rstrtinfer chose: its `rstrtinfer-parser` message (a parser chosen from
    /// the first inference's shapes), else its `rstrtinfer-engine` message.
    pub fn parser(&self) -> String {
        self.message_field("rstrtinfer-parser", "parser")
            .or_else(|| self.message_field("rstrtinfer-engine", "parser"))
            .expect("a message naming the parser")
    }
}

/// Runs `description`, which must end in `appsink name=sink`, until EOS, an error, or
/// `timeout`. Returns the metadata seen at the sink, or the error message with its details.
pub fn run_pipeline(description: &str, timeout: Duration) -> Result<RunOutput, String> {
    run_pipeline_frames(description, usize::MAX, timeout)
}

/// Like [`run_pipeline`], but stops after the first `max_frames` frames. The sink holds one
/// buffer at most, so upstream elements process barely more than that.
pub fn run_pipeline_frames(
    description: &str,
    max_frames: usize,
    timeout: Duration,
) -> Result<RunOutput, String> {
    run_pipeline_inspect(description, max_frames, timeout, |_| {})
}

/// Like [`run_pipeline_frames`], and calls `inspect` with the pipeline once it has finished,
/// before it is stopped (to read element properties such as `stats`).
pub fn run_pipeline_inspect(
    description: &str,
    max_frames: usize,
    timeout: Duration,
    inspect: impl FnOnce(&gst::Pipeline),
) -> Result<RunOutput, String> {
    init();
    let pipeline = gst::parse::launch(description)
        .map_err(|e| format!("parse error: {e}"))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline".to_string())?;
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    sink.set_property("sync", false);
    sink.set_property("max-buffers", 1u32);
    let bus = pipeline.bus().expect("pipeline bus");
    let mut out = RunOutput::default();
    let result = (|| {
        pipeline
            .set_state(gst::State::Playing)
            .map_err(|_| first_error(&bus).unwrap_or_else(|| "state change failed".into()))?;
        let deadline = Instant::now() + timeout;
        loop {
            while let Some(msg) = bus.pop() {
                match msg.view() {
                    gst::MessageView::Error(e) => return Err(error_text(e)),
                    gst::MessageView::Warning(w) => out.warnings.push(format!(
                        "{} ({})",
                        w.error(),
                        w.debug().map(|d| d.to_string()).unwrap_or_default()
                    )),
                    gst::MessageView::Element(e) => {
                        if let Some(s) = e.structure() {
                            out.element_messages.push(s.to_owned());
                        }
                    }
                    _ => {}
                }
            }
            if let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_mseconds(100)) {
                let buffer = sample.buffer().expect("sample with a buffer");
                match buffer.meta::<BatchMeta>() {
                    Some(meta) => out.frames.extend(meta.batch().frames.iter().cloned()),
                    None => out.frames.push(Frame::default()),
                }
                if out.frames.len() >= max_frames {
                    out.frames.truncate(max_frames);
                    return Ok(());
                }
            } else if sink.is_eos() {
                // Drain what is still on the bus (errors posted at EOS).
                if let Some(e) = first_error(&bus) {
                    return Err(e);
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("timed out after {timeout:?}"));
            }
        }
    })();
    if result.is_ok() {
        inspect(&pipeline);
    }
    pipeline.set_state(gst::State::Null).expect("going to NULL");
    result.map(|()| out)
}

/// Like [`run_pipeline_frames`], and returns the `stats` property of element `element` as it
/// stood when the run finished.
pub fn run_pipeline_stats(
    description: &str,
    max_frames: usize,
    timeout: Duration,
    element: &str,
) -> Result<(RunOutput, gst::Structure), String> {
    let mut stats = None;
    let out = run_pipeline_inspect(description, max_frames, timeout, |p| {
        stats = p
            .by_name(element)
            .map(|e| e.property::<gst::Structure>("stats"))
    })?;
    let stats = stats.ok_or_else(|| format!("no element {element} in {description}"))?;
    Ok((out, stats))
}

fn error_text(e: &gst::message::Error) -> String {
    format!(
        "{} from {}: {}",
        e.error(),
        e.src()
            .map(|s| s.path_string().to_string())
            .unwrap_or_default(),
        e.debug().map(|d| d.to_string()).unwrap_or_default()
    )
}

fn first_error(bus: &gst::Bus) -> Option<String> {
    while let Some(msg) = bus.pop() {
        if let gst::MessageView::Error(e) = msg.view() {
            return Some(error_text(e));
        }
    }
    None
}

/// Runs `description` (ending in `appsink name=sink`) and returns its first `count` samples
/// (fewer when the stream ends, or nothing comes for 30 s).
pub fn pull_samples(description: &str, count: usize) -> Vec<gst::Sample> {
    init();
    let pipeline = launch(description);
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    sink.set_property("sync", false);
    sink.set_property("max-buffers", 4u32);
    pipeline.set_state(gst::State::Playing).expect("playing");
    let mut samples = Vec::new();
    while samples.len() < count {
        match sink.try_pull_sample(gst::ClockTime::from_seconds(30)) {
            Some(s) => samples.push(s),
            None => break,
        }
    }
    pipeline.set_state(gst::State::Null).expect("stopping");
    samples
}

/// Intersection over union of two `[left, top, right, bottom]` boxes.
pub fn iou_ltrb(a: [f32; 4], b: [f32; 4]) -> f32 {
    let ba = ferrostream_core::BBox::from_corners(a[0], a[1], a[2], a[3]);
    let bb = ferrostream_core::BBox::from_corners(b[0], b[1], b[2], b[3]);
    ba.iou(&bb)
}

/// Runs the current test binary again, filtered to `test_name`, with `env` set, and returns
/// whether it passed and its output. For tests that need a fresh process (a runtime that must
/// not be loaded yet).
pub fn run_in_child(test_name: &str, env: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "--exact",
        test_name,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd.env("FERROSTREAM_TEST_CHILD", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = output_within(&mut cmd, CHILD_WATCHDOG);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// Runs `test_name` in a child process with `env` set ([`run_in_child`]) and asserts that it
/// ran and passed.
pub fn assert_passes_in_child(test_name: &str, env: &[(&str, &str)]) {
    let (passed, output) = run_in_child(test_name, env);
    assert!(passed, "child test failed:\n{output}");
    assert!(
        output.contains("1 passed"),
        "the child ran no test:\n{output}"
    );
}

/// The longest a test run in a child process by [`run_in_child`] may take.
const CHILD_WATCHDOG: Duration = Duration::from_secs(600);

/// Runs `command` to its end, collecting its output, for `limit` at most. It runs in a process
/// group of its own: when it outlasts `limit`, the whole group (a script's pipelines and
/// servers too) is killed and the test fails with what it printed.
pub fn output_within(command: &mut std::process::Command, limit: Duration) -> std::process::Output {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            out
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped")));
    let stderr = read(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child process") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            // SAFETY: kill(2) on the process group made for the child at spawn.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let Some(status) = status else {
        panic!(
            "{command:?} did not end within {limit:?}:\n{}\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
    };
    std::process::Output {
        status,
        stdout,
        stderr,
    }
}

/// The process's resident memory in KiB (`VmRSS`), for tests that watch memory.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// Whether this process is a child started by [`run_in_child`].
pub fn is_child() -> bool {
    std::env::var_os("FERROSTREAM_TEST_CHILD").is_some()
}

/// The GPU for GPU tests: the primary context of GPU 0, or `None` (after printing why) on a
/// machine without one. With `FERROSTREAM_REQUIRE_GPU=1` (the GPU check script sets it) a missing
/// GPU fails the test instead, so a GPU run can never pass by skipping.
pub fn gpu(test: &str) -> Option<std::sync::Arc<ferrostream_core::cuda::Context>> {
    let required = std::env::var("FERROSTREAM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let context = ferrostream_core::cuda::Context::primary(0);
    match context {
        Ok(ctx) => Some(ctx),
        Err(e) if required => panic!("{test}: a GPU is required (FERROSTREAM_REQUIRE_GPU=1): {e}"),
        Err(e) => {
            println!("{test}: skipped, no CUDA GPU: {e}");
            None
        }
    }
}

/// A small deterministic random generator (xorshift64*) for test inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    /// A value in `lo..hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next_u64() % u64::from(hi - lo)) as u32
    }
}

/// Decodes the first `count` frames of an H.264 MP4 into system-memory frames of `format`:
/// through NVDEC (`nvh264dec ! cudadownload`) where it exists, else any decoder.
pub fn decode_frames(
    path: &Path,
    format: &str,
    count: usize,
) -> Vec<(gst_video::VideoInfo, gst::Buffer)> {
    init();
    let nvdec = gst::ElementFactory::find("nvh264dec").is_some()
        && gst::ElementFactory::find("cudadownload").is_some();
    let decoder = if nvdec {
        "h264parse ! nvh264dec ! cudadownload"
    } else {
        "h264parse ! avdec_h264"
    };
    let pipeline = launch(&format!(
        "filesrc location={} ! qtdemux ! {decoder} ! videoconvert ! video/x-raw,format={format} ! appsink name=sink sync=false",
        quoted(path)
    ));
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).expect("playing");
    let mut frames = Vec::new();
    while frames.len() < count {
        // A pipeline that stopped with an error would leave the sink waiting forever.
        let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) else {
            assert!(
                sink.is_eos(),
                "no frame within 60 s from {}",
                path.display()
            );
            break;
        };
        let info =
            gst_video::VideoInfo::from_caps(sample.caps().expect("caps")).expect("video caps");
        frames.push((info, sample.buffer_owned().expect("buffer")));
    }
    pipeline.set_state(gst::State::Null).expect("stopping");
    assert_eq!(frames.len(), count, "decoding {}", path.display());
    frames
}

/// The object of `candidates` with `o`'s label that overlaps it most, and the IoU.
pub fn best_match<'a>(
    o: &ferrostream_core::Object,
    candidates: &'a [ferrostream_core::Object],
) -> Option<(&'a ferrostream_core::Object, f32)> {
    candidates
        .iter()
        .filter(|p| p.label == o.label)
        .map(|p| (p, o.detector_bbox.iou(&p.detector_bbox)))
        .max_by(|x, y| x.1.total_cmp(&y.1))
}

/// A reduced precision's detections against a reference run's (FP32), case by case: a reference
/// object is found again when the other run has one of its label at IoU >= 0.9 with the
/// confidence within `tolerance`. An object scored less than `tolerance` above its detection
/// threshold may fall below it in the other precision, so those clear of it are counted apart.
#[derive(Debug, Default)]
pub struct FoundAgain {
    tolerance: f32,
    pub found: usize,
    pub all: usize,
    pub clear: usize,
    pub clear_found: usize,
}

impl FoundAgain {
    pub fn new(tolerance: f32) -> Self {
        Self {
            tolerance,
            ..Self::default()
        }
    }

    /// Compares one case (`what`, detection `threshold`), prints it and its lost objects, and
    /// adds it to the totals; the reference must hold at least `min_objects` objects.
    pub fn add(
        &mut self,
        what: &str,
        reference: &[Frame],
        other: &[Frame],
        threshold: f32,
        min_objects: usize,
    ) {
        assert_eq!(reference.len(), other.len(), "{what}: frame counts");
        let near = |o: &ferrostream_core::Object| o.confidence < threshold + self.tolerance;
        let (mut found, mut total, mut clear, mut clear_found, mut worst) = (0, 0, 0, 0, 0.0f32);
        for (a, b) in reference.iter().zip(other) {
            for o in &a.objects {
                total += 1;
                clear += usize::from(!near(o));
                match best_match(o, &b.objects) {
                    Some((p, iou))
                        if iou >= 0.9 && (o.confidence - p.confidence).abs() <= self.tolerance =>
                    {
                        found += 1;
                        clear_found += usize::from(!near(o));
                        worst = worst.max((o.confidence - p.confidence).abs());
                    }
                    _ => println!(
                        "  not found: {} at {:.3}, {:?}",
                        o.label, o.confidence, o.detector_bbox
                    ),
                }
            }
        }
        println!(
            "{what}: {found} of {total} reference objects found again (IoU >= 0.9, confidence \
             within {worst:.4})"
        );
        assert!(
            total >= min_objects,
            "{what}: {total} reference objects, fewer than {min_objects}"
        );
        self.found += found;
        self.all += total;
        self.clear += clear;
        self.clear_found += clear_found;
    }

    /// Prints the totals and asserts that at least `clear_share` of the objects clear of the
    /// threshold and `all_share` of all were found again.
    pub fn assert_shares(&self, clear_share: f64, all_share: f64) {
        let Self {
            found,
            all,
            clear,
            clear_found,
            tolerance,
        } = *self;
        println!(
            "all: {found} of {all} found again; of those scored {tolerance} or more above the \
             threshold: {clear_found} of {clear}"
        );
        assert!(
            clear_found as f64 >= clear_share * clear as f64,
            "{clear_found} of {clear}"
        );
        assert!(found as f64 >= all_share * all as f64, "{found} of {all}");
    }
}

/// A free TCP port on the loopback address (for a server a test starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// An RTSP server process (`scripts/rtsp_server.py`, GStreamer's RTSP server library) on
/// 127.0.0.1, killed when dropped.
pub struct RtspServer {
    child: std::process::Child,
}

impl RtspServer {
    /// The Python with the GObject bindings: Debian's (python3-gi); another on PATH may lack them.
    pub fn python() -> &'static str {
        if Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        }
    }

    /// Serves a live test pattern at `rtsp://127.0.0.1:<port>/test`.
    pub fn start(port: u16) -> Self {
        Self::serve(
            port,
            &[(
                "test",
                "videotestsrc is-live=true pattern=ball \
                 ! video/x-raw,width=320,height=240,framerate=15/1",
            )],
        )
    }

    /// Serves each `(name, pipeline)` at `rtsp://127.0.0.1:<port>/<name>`; waits (10 s at most)
    /// until the server listens.
    pub fn serve(port: u16, mounts: &[(&str, &str)]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(Self::python())
            .arg(repo_root().join("scripts/rtsp_server.py"))
            .arg(port.to_string())
            .args(
                mounts
                    .iter()
                    .map(|(name, pipeline)| format!("{name}={pipeline}")),
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("starting the RTSP server (python3 with gir1.2-gst-rtsp-server-1.0)");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the RTSP server did not start within 10 s");
        assert!(line.starts_with("ready"), "RTSP server: {line}");
        Self { child }
    }

    /// Kills the server at once, as a crashed camera.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RtspServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ends the test process when a test has not finished within `limit`: a hang fails at once
/// instead of holding the run. Disarmed when dropped.
pub struct Watchdog {
    _armed: std::sync::mpsc::Sender<()>,
}

/// Arms a [`Watchdog`] for `test`.
pub fn watchdog(test: &'static str, limit: Duration) -> Watchdog {
    let (done, wait) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
            eprintln!("{test}: still running after {limit:?}; aborting");
            std::process::abort();
        }
    });
    Watchdog { _armed: done }
}

/// Runs `f` on a thread of its own and returns what it returned, or fails the test when it takes
/// longer than `limit` (the thread is left behind: it is what hangs).
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(_) => panic!("{what}: no end after {limit:?}"),
    }
}
