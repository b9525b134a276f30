// SPDX-License-Identifier: MIT OR Apache-2.0
//! The hostile operator: what a careless or hostile configuration, file, disk or application can
//! do to the elements. Each case is an input that once crashed, froze or silently misled the
//! process; each must now be a clear error or warning that names the problem, and the pipeline
//! must stop cleanly. (The inference server's share of the campaign is in `kserve.rs`:
//! `hostile_answers_are_clear_errors` and
//! `a_pipeline_stops_promptly_while_the_server_stalls_freezes_or_dies`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ferrostream_tests::{init, is_child, model, quoted, repo_root, run_in_child};
use gst::prelude::*;

/// Every run ends within this, or the test fails (a hang is the defect these tests look for).
const LIMIT: Duration = Duration::from_secs(120);
/// Stopping must never take longer than this, however the run ended.
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// How a pipeline ended.
#[derive(Debug, Default)]
struct Ended {
    /// Error messages (text and details), in order; a second error from the same cause is a
    /// defect, so tests count them.
    errors: Vec<String>,
    /// The element that posted each error.
    sources: Vec<String>,
    warnings: Vec<String>,
    /// Buffers that reached the element named `sink`.
    buffers: usize,
}

impl Ended {
    fn error(&self) -> String {
        self.errors.first().cloned().unwrap_or_default()
    }
}

fn text(error: &gst::glib::Error, debug: Option<&str>) -> String {
    format!("{error} ({})", debug.unwrap_or_default())
}

/// Runs `description` until EOS or an error (then one more second, to catch repeated errors),
/// then stops it; fails the test if the run outlasts [`LIMIT`] or the stop [`STOP_LIMIT`].
fn run(description: &str) -> Ended {
    run_with(description, |_| {})
}

/// As [`run`], calling `playing` once the pipeline plays.
fn run_with(description: &str, playing: impl FnOnce(&gst::Pipeline)) -> Ended {
    run_prepared(description, |_| {}, playing)
}

/// As [`run_with`], calling `prepare` before the pipeline starts.
fn run_prepared(
    description: &str,
    prepare: impl FnOnce(&gst::Pipeline),
    playing: impl FnOnce(&gst::Pipeline),
) -> Ended {
    init();
    let pipeline = gst::parse::launch(description)
        .unwrap_or_else(|e| panic!("{description}: {e}"))
        .downcast::<gst::Pipeline>()
        .unwrap();
    prepare(&pipeline);
    let buffers = Arc::new(AtomicUsize::new(0));
    if let Some(pad) = pipeline.by_name("sink").and_then(|s| s.static_pad("sink")) {
        let counted = buffers.clone();
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            gst::PadProbeReturn::Ok
        });
    }
    let bus = pipeline.bus().unwrap();
    let mut ended = Ended::default();
    let started = pipeline.set_state(gst::State::Playing);
    if started.is_ok() {
        playing(&pipeline);
    }
    let deadline = Instant::now() + LIMIT;
    let mut until = deadline;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(left.as_nanos() as u64)) else {
            break;
        };
        match msg.view() {
            gst::MessageView::Error(e) => {
                ended.errors.push(text(&e.error(), e.debug().as_deref()));
                ended
                    .sources
                    .push(e.src().map(|s| s.name().to_string()).unwrap_or_default());
                until = until.min(Instant::now() + Duration::from_secs(1));
            }
            gst::MessageView::Warning(w) => {
                ended.warnings.push(text(&w.error(), w.debug().as_deref()));
            }
            gst::MessageView::Eos(_) => break,
            _ => {}
        }
    }
    assert!(
        Instant::now() < deadline || !ended.errors.is_empty(),
        "{description}: no end of stream or error within {LIMIT:?}"
    );
    ended.buffers = buffers.load(Ordering::SeqCst);
    let (done, finished) = std::sync::mpsc::channel();
    let p = pipeline.clone();
    std::thread::spawn(move || {
        let _ = done.send(p.set_state(gst::State::Null));
    });
    match finished.recv_timeout(STOP_LIMIT) {
        Ok(result) => assert!(result.is_ok(), "{description}: going to NULL failed"),
        Err(_) => panic!("{description}: set_state(NULL) did not return within {STOP_LIMIT:?}"),
    }
    ended
}

/// A directory of this test process's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-operator-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn write(name: &str, text: &str) -> PathBuf {
    let path = scratch(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn fifo(name: &str) -> PathBuf {
    let path = scratch(name);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    path
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

const FRAMES: &str = "videotestsrc num-buffers=3 ! video/x-raw,format=RGB,width=128,height=96";
/// The same frames in a format rsosd draws on.
const RGBA: &str = "videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=128,height=96";

/// `element` between a short test source and a counting sink.
fn through(element: &str) -> String {
    format!("{FRAMES} ! {element} ! fakesink name=sink")
}

fn detector(extra: &str) -> String {
    format!(
        "rstrtinfer config-file-path={} {extra}",
        quoted(&repo_root().join("pipelines/coco_ssd.txt"))
    )
}

fn assert_error(ended: &Ended, wanted: &[&str]) {
    let error = ended.error();
    for w in wanted {
        assert!(error.contains(w), "wanted {w:?} in: {error}");
    }
    // Elements downstream of the one that failed report that the stream stopped: one error
    // from each element.
    let first = &ended.sources[0];
    let from_it = ended.sources.iter().filter(|s| *s == first).count();
    assert_eq!(from_it, 1, "one error from {first}: {:?}", ended.errors);
}

/// Configurations, models, label files and fonts that are devices or FIFOs: each element
/// refuses them by name at start (before, /dev/zero read until memory ran out and a FIFO
/// blocked start() forever).
#[test]
fn special_files_are_refused_naming_the_path() {
    let pipe = fifo("config.fifo");
    let labels = fifo("labels.fifo");
    let model_config = write(
        "urandom-model.txt",
        "[property]\nonnx-file=/dev/urandom\nnetwork-type=0\n",
    );
    let cases = [
        (
            format!("rstrtinfer config-file-path={}", quoted(&pipe)),
            "a FIFO",
        ),
        (
            "rstrtinfer config-file-path=/dev/zero".to_string(),
            "a character device",
        ),
        (
            format!("rstrtinfer config-file-path={}", quoted(&model_config)),
            "/dev/urandom is a character device",
        ),
        (
            detector(&format!("labelfile-path={}", quoted(&labels))),
            "a FIFO",
        ),
        (
            "rstracker config-file-path=/dev/zero".into(),
            "a character device",
        ),
        (
            format!("rsanalytics config-file-path={}", quoted(&pipe)),
            "a FIFO",
        ),
        (
            "rsosd config-file-path=/dev/urandom".into(),
            "a character device",
        ),
        (
            format!("rsosd font={} display-clock=true", quoted(&pipe)),
            "a FIFO",
        ),
    ];
    for (element, kind) in cases {
        let started = Instant::now();
        let source = if element.starts_with("rsosd") {
            RGBA
        } else {
            FRAMES
        };
        let ended = run(&format!("{source} ! {element} ! fakesink name=sink"));
        let error = ended.error();
        assert!(error.contains(kind), "{element}: {error}");
        assert!(error.contains("not a regular file"), "{element}: {error}");
        eprintln!("{element}: refused in {} ms", started.elapsed().as_millis());
    }
}

/// A configuration larger than any real one (a sparse 17 MiB file) is refused, not read.
#[test]
fn files_larger_than_any_real_one_are_refused() {
    let big = scratch("big.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    let ended = run(&through(&format!(
        "rstrtinfer config-file-path={}",
        quoted(&big)
    )));
    assert_error(&ended, &["is 17.0 MiB, more than the 16.0 MiB", "big.txt"]);
    // A model file larger than any real one (sparse: it takes no disk space).
    let model = scratch("big.onnx");
    std::fs::File::create(&model)
        .unwrap()
        .set_len(5 << 30)
        .unwrap();
    let ended = run(&through(&detector(&format!(
        "onnx-file={}",
        quoted(&model)
    ))));
    assert_error(&ended, &["is 5.0 GiB, more than the 4.0 GiB", "big.onnx"]);
    let _ = std::fs::remove_file(&model);
}

/// A loop of symbolic links is reported as one, not as "file not found".
#[test]
fn symbolic_link_loops_say_so() {
    let a = scratch("loop-a.txt");
    let b = scratch("loop-b.txt");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    for element in [
        format!("rstrtinfer config-file-path={}", quoted(&a)),
        detector(&format!("onnx-file={}", quoted(&a))),
        detector(&format!("labelfile-path={}", quoted(&a))),
    ] {
        let ended = run(&through(&element));
        let error = ended.error();
        assert!(
            error.contains("a loop of symbolic links"),
            "{element}: {error}"
        );
        assert!(error.contains("loop-a.txt"), "{element}: {error}");
    }
}

/// Class counts are bounded wherever they come from: the file's num-detected-classes, a model
/// whose 306-byte file declares 3e10 classes, a label file of 300,000 lines. Each is an error
/// naming the file (before, 4e9 and 3e10 aborted the process and 5e7 took 2.8 GB).
#[test]
fn class_counts_are_bounded_and_name_the_file() {
    for count in ["4000000000", "50000000"] {
        let config = write(
            "classes.txt",
            &format!(
                "[property]\nonnx-file={}\nnum-detected-classes={count}\n",
                model("coco_ssdlite_mobilenet_v2.onnx").display()
            ),
        );
        let ended = run(&through(&format!(
            "rstrtinfer config-file-path={}",
            quoted(&config)
        )));
        assert_error(&ended, &["classes.txt:3", "expected at most 262144"]);
    }
    for (file, wanted) in [
        (
            "classifier_3e10_classes.onnx",
            "declares 30000000000 values for a batch of 1: more than the 2 GiB",
        ),
        (
            "classifier_1e6_classes.onnx",
            "declare 1000000 classes, more than the 262144",
        ),
    ] {
        let ended = run(&through(&format!(
            "rstrtinfer onnx-file={} network-type=classifier",
            quoted(&fixture(file))
        )));
        assert_error(&ended, &[file, wanted]);
    }
    let labels = write("many-labels.txt", &"x\n".repeat(300_000));
    let ended = run(&through(&detector(&format!(
        "labelfile-path={}",
        quoted(&labels)
    ))));
    assert_error(&ended, &["many-labels.txt", "more than 262144 lines"]);
}

/// A model whose input is 2^31 pixels a side: a start error naming the file (before, the
/// tensor size overflowed: "capacity overflow", without the file).
#[test]
fn model_sizes_that_overflow_are_errors_naming_the_file() {
    let ended = run(&through(&format!(
        "rstrtinfer onnx-file={} network-type=classifier",
        quoted(&fixture("input_2e9_pixels_a_side.onnx"))
    )));
    assert_error(
        &ended,
        &[
            "input_2e9_pixels_a_side.onnx",
            "each side must be 1 to 32768",
        ],
    );
}

/// NaN and infinite thresholds and scales, and negative sizes, from the file or a property:
/// errors that say which (before, they were accepted and disabled the filter silently).
#[test]
fn nan_infinite_and_negative_settings_are_errors() {
    let onnx = model("coco_ssdlite_mobilenet_v2.onnx")
        .display()
        .to_string();
    for (section, key, wanted) in [
        (
            "property",
            "net-scale-factor=inf",
            "expected a finite number, found inf",
        ),
        (
            "property",
            "classifier-threshold=NaN",
            "expected a finite number, found NaN",
        ),
        ("class-attrs-all", "pre-cluster-threshold=nan", "found NaN"),
        (
            "class-attrs-2",
            "detected-min-w=-5",
            "expected at least 0, found -5",
        ),
        (
            "class-attrs-all",
            "roi-top-offset=-1",
            "expected at least 0, found -1",
        ),
    ] {
        let config = write(
            "numbers.txt",
            &format!("[property]\nonnx-file={onnx}\n[{section}]\n{key}\n"),
        );
        let ended = run(&through(&format!(
            "rstrtinfer config-file-path={}",
            quoted(&config)
        )));
        assert_error(&ended, &["numbers.txt:4", wanted]);
    }
    // The properties cannot be set to NaN, infinity or out of range: GLib refuses such values
    // (NaN included) before the element sees them. (The configuration is checked again as a
    // whole at start, for subclasses' defaults.)
    let infer = gst::ElementFactory::make("rstrtinfer").build().unwrap();
    for (property, value) in [
        ("pre-cluster-threshold", f32::NAN),
        ("net-scale-factor", f32::INFINITY),
        ("classifier-threshold", f32::NAN),
        ("nms-iou-threshold", -3.0),
    ] {
        let before = infer.property::<f32>(property);
        let set = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            infer.set_property(property, value)
        }));
        assert!(set.is_err(), "{property}={value} accepted");
        assert_eq!(infer.property::<f32>(property), before, "{property}");
    }
}

/// A configuration warning (an nvinfer key rstrtinfer ignores) is posted once, not once per
/// time the configuration is read.
#[test]
fn configuration_warnings_are_posted_once() {
    let coco = std::fs::read_to_string(repo_root().join("pipelines/coco_ssd.txt")).unwrap();
    let config = write(
        "ignored-key.txt",
        &coco.replacen(
            "[property]\n",
            "[property]\nengine-create-func-name=NvDsInferYoloCudaEngineGet\n",
            1,
        ),
    );
    let ended = run(&through(&format!(
        "rstrtinfer config-file-path={}",
        quoted(&config)
    )));
    assert!(ended.errors.is_empty(), "{:?}", ended.errors);
    let about: Vec<_> = ended
        .warnings
        .iter()
        .filter(|w| w.contains("engine-create-func-name"))
        .collect();
    assert_eq!(about.len(), 1, "{:?}", ended.warnings);
}

/// rsosd's file sizes have the properties' ranges (before, text-size=99999999 in the file
/// aborted the process).
#[test]
fn rsosd_file_sizes_are_range_checked() {
    for (key, wanted) in [
        ("text-size=99999999", "expected 4 to 512, found 99999999"),
        (
            "clock-font-size=99999999",
            "expected 4 to 512, found 99999999",
        ),
        ("border-width=1000", "expected at most 100, found 1000"),
        ("blur-strength=0", "expected 1 to 256, found 0"),
    ] {
        let config = write("osd.ini", &format!("[osd]\ndisplay-clock=1\n{key}\n"));
        let ended = run(&format!(
            "{RGBA} ! rsosd config-file-path={} ! fakesink name=sink",
            quoted(&config)
        ));
        assert_error(&ended, &["osd.ini:3", wanted]);
    }
}

/// A region of 100,000 corners is refused at once (before, the crossing check took 41 s).
#[test]
fn huge_regions_are_refused_quickly() {
    let corners: Vec<String> = (0..100_000)
        .map(|i| {
            let a = i as f64 * std::f64::consts::TAU / 100_000.0;
            format!(
                "{:.0};{:.0}",
                5000.0 + 4000.0 * a.cos(),
                5000.0 + 4000.0 * a.sin()
            )
        })
        .collect();
    let config = write(
        "regions.txt",
        &format!(
            "[property]\nenable=1\nconfig-width=10000\nconfig-height=10000\n\
             [roi-filtering-stream-0]\nenable=1\nroi-huge={}\n",
            corners.join(";")
        ),
    );
    let started = Instant::now();
    let ended = run(&through(&format!(
        "rsanalytics config-file-path={}",
        quoted(&config)
    )));
    eprintln!("refused in {} ms", started.elapsed().as_millis());
    assert_error(
        &ended,
        &["regions.txt:7", "at most 1024 corners, found 100000"],
    );
}

/// A tiler grid whose tiles would be narrower than two pixels is an error naming the
/// properties (before, width=1 columns=2 panicked in the layout code).
#[test]
fn a_tiler_grid_too_small_for_its_tiles_is_an_error() {
    let ended = run(&format!(
        "{FRAMES} ! rstiler width=1 columns=2 rows=1 ! fakesink name=sink"
    ));
    assert_error(&ended, &["width=1 cannot hold 2 columns"]);
}

/// Zero-length buffers: an error the application's bus loop sees, and a pipeline that stops,
/// primary and secondary, single frames and batches.
#[test]
fn zero_length_buffers_are_an_error_and_the_pipeline_stops() {
    let empty = "fakesrc num-buffers=5 sizetype=empty \
                 ! video/x-raw,format=RGB,width=128,height=96,framerate=10/1";
    let secondary = format!(
        "rstrtinfer config-file-path={} process-mode=secondary",
        quoted(&repo_root().join("pipelines/imagenet_secondary.txt"))
    );
    for chain in [
        detector(""),
        format!("queue ! {}", detector("")),
        format!("{} ! {secondary}", detector("")),
    ] {
        let ended = run(&format!("{empty} ! {chain} ! fakesink name=sink"));
        assert!(
            ended.error().contains("Cannot map video frame"),
            "{chain}: {:?}",
            ended.errors
        );
        assert_eq!(ended.buffers, 0, "{chain}");
    }
}

/// A property that only takes effect at start, set while PLAYING: a warning that says so
/// (before, it was silently ignored until the next start).
#[test]
fn start_only_properties_set_while_playing_warn() {
    let description = format!(
        "videotestsrc num-buffers=20 ! video/x-raw,format=RGBA,width=128,height=96,framerate=100/1 \
         ! {} ! rsosd name=osd ! fakesink name=sink sync=true",
        detector("name=infer")
    );
    let ended = run_with(&description, |pipeline| {
        let _ = pipeline.state(gst::ClockTime::from_seconds(60));
        let infer = pipeline.by_name("infer").unwrap();
        infer.set_property("batch-size", 2u32);
        // Takes effect at once: no warning.
        pipeline
            .by_name("osd")
            .unwrap()
            .set_property("text-size", 20u32);
    });
    assert!(ended.errors.is_empty(), "{:?}", ended.errors);
    let late: Vec<_> = ended
        .warnings
        .iter()
        .filter(|w| w.contains("was set while the element is"))
        .collect();
    assert_eq!(late.len(), 1, "{:?}", ended.warnings);
    assert!(late[0].contains("Property batch-size"), "{}", late[0]);
    assert!(
        late[0].contains("takes effect the next time"),
        "{}",
        late[0]
    );
}

/// The lines of a metadata file: every one complete and parsable.
fn complete_lines(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} ends in a partial line",
        path.display()
    );
    for line in text.lines() {
        ferrostream_core::json::parse_frame_line(line)
            .unwrap_or_else(|e| panic!("a broken line ({e}): {line}"));
    }
    text.lines().count()
}

/// A full disk: the write error is posted once and the pipeline stops cleanly (before, stop()
/// failed to flush again and the pipeline could not go to NULL).
#[test]
fn a_full_disk_is_one_error_and_a_clean_stop() {
    let ended = run(&format!(
        "{FRAMES} ! rsmetaexport location=/dev/full ! fakesink name=sink"
    ));
    assert_error(&ended, &["/dev/full failed", "No space left on device"]);
    assert_eq!(ended.buffers, 0);
}

/// A disk that fills mid-run (a file size limit, which fails writes as a full disk does after
/// some bytes): one error, a clean stop, and a file that ends at its last complete line. In a
/// child process, whose file size limit is its own.
#[test]
fn a_disk_filling_mid_run_leaves_complete_lines() {
    const CHILD: &str = "FERROSTREAM_TEST_FSIZE_CHILD";
    if is_child() && std::env::var_os(CHILD).is_some() {
        let out = scratch("filling.jsonl");
        // SAFETY: setting this process's own signal disposition and resource limit.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 1000,
                rlim_max: libc::RLIM_INFINITY,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        }
        let ended = run(&format!(
            "videotestsrc num-buffers=100 ! video/x-raw,width=64,height=48 \
             ! rsmetaexport location={} ! fakesink name=sink",
            quoted(&out)
        ));
        assert_error(&ended, &["filling.jsonl failed"]);
        let lines = complete_lines(&out);
        assert!(lines > 3 && lines < 100, "{lines} lines");
        assert_eq!(ended.buffers, lines, "every frame written left, no other");
        return;
    }
    let (ok, output) = run_in_child(
        "a_disk_filling_mid_run_leaves_complete_lines",
        &[(CHILD, "1")],
    );
    assert!(ok, "{output}");
}

/// Writing to a closed standard output is an error, not silence: a pipe whose reader is gone
/// fails the first write; a descriptor 1 that a read-only file took over after standard output
/// was closed is refused at start.
#[test]
fn a_closed_standard_output_is_an_error() {
    const CHILD: &str = "FERROSTREAM_TEST_CLOSED_STDOUT_CHILD";
    // The test harness reports on standard output after the test: it is put back.
    // SAFETY: duplicating this process's own standard output.
    let saved = unsafe { libc::dup(1) };
    let restore = || {
        // SAFETY: putting the saved descriptor back as standard output.
        unsafe { libc::dup2(saved, 1) };
    };
    match std::env::var(CHILD).ok().filter(|_| is_child()).as_deref() {
        Some("pipe") => {
            let mut ends = [0; 2];
            // SAFETY: making a pipe, closing its read end, and putting its write end in place
            // of this process's standard output; SIGPIPE ignored so that the write fails.
            unsafe {
                assert_eq!(libc::pipe(ends.as_mut_ptr()), 0);
                libc::close(ends[0]);
                assert_eq!(libc::dup2(ends[1], 1), 1);
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            }
            let ended = run(&through("rsmetaexport"));
            restore();
            assert_error(&ended, &["standard output failed", "Broken pipe"]);
            assert_eq!(ended.buffers, 0);
        }
        Some("reused") => {
            let c = std::ffi::CString::new("/dev/null").unwrap();
            // SAFETY: closing standard output, then opening a file read-only, which takes the
            // lowest free descriptor: 1.
            unsafe {
                libc::close(1);
                assert_eq!(libc::open(c.as_ptr(), libc::O_RDONLY), 1);
            }
            let ended = run(&through("rsmetaexport"));
            restore();
            assert_error(
                &ended,
                &[
                    "Cannot write metadata to standard output",
                    "not open for writing",
                ],
            );
        }
        _ => {
            for how in ["pipe", "reused"] {
                let (ok, output) =
                    run_in_child("a_closed_standard_output_is_an_error", &[(CHILD, how)]);
                assert!(ok, "{how}: {output}");
            }
        }
    }
}
