// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstrtinfer with `backend=kserve` against a real KServe v2 server (the `kserve` package's
//! ModelServer from PyPI, serving the COCO SSDLite ONNX model through ONNX Runtime; started and
//! killed by the tests on loopback): detections equal the local engine's, single stream and
//! batched; the server killed and restarted mid-stream (waiting: every frame still gets the
//! same results; dropping: the frames without results are exactly the counted ones); a server
//! that stops answering; a slow server; TLS, client certificates and headers; start errors; an
//! nvinferserver (Triton) gRPC configuration file finding what its nvinfer equivalent finds.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ferrostream_core::{BatchMeta, Frame};
use ferrostream_tests::{
    element, free_port, init, media, model, quoted, repo_root, run_pipeline_frames,
};
use gst::prelude::*;

/// The model's name on the test servers.
const MODEL: &str = "coco";
/// Frames of vtest.avi the streaming tests push.
const FRAMES: usize = 36;
const WIDTH: u32 = 384;
const HEIGHT: u32 = 288;

/// The Python of the virtual environment scripts/install-kserve.sh makes.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("FERROSTREAM_KSERVE_PYTHON") {
        return p.into();
    }
    let p = ferrostream_core::paths::cache_dir().join("kserve-venv/bin/python");
    assert!(
        p.exists(),
        "{} not found: run scripts/setup.sh (or scripts/install-kserve.sh), which installs the \
         KServe server these tests start",
        p.display()
    );
    p
}

/// A KServe server process on 127.0.0.1, serving the COCO detector as `coco`.
struct Server {
    child: Child,
    grpc: u16,
    http: u16,
    extra: Vec<String>,
}

impl Server {
    fn start(extra: &[&str]) -> Self {
        Self::start_on(
            free_port(),
            free_port(),
            extra.iter().map(|s| s.to_string()).collect(),
        )
    }

    /// A server for another model, `name` (an ONNX file of the test models).
    fn serving(file: &str, name: &str) -> Self {
        let model = model(file).display().to_string();
        Self::start(&["--model", &model, "--name", name])
    }

    /// Starts the server and waits (60 s at most) until its gRPC port accepts connections.
    fn start_on(grpc: u16, http: u16, extra: Vec<String>) -> Self {
        let mut child = Command::new(python())
            .arg(repo_root().join("scripts/kserve_server.py"))
            .arg("--model")
            .arg(model("coco_ssdlite_mobilenet_v2.onnx"))
            .args(["--name", MODEL, "--threads", "1"])
            .args([
                "--grpc-port",
                &grpc.to_string(),
                "--http-port",
                &http.to_string(),
            ])
            .args(&extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting scripts/kserve_server.py");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", grpc)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the KServe server exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the KServe server did not listen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            grpc,
            http,
            extra,
        }
    }

    fn url(&self) -> String {
        format!("127.0.0.1:{}", self.grpc)
    }

    /// Kills the server at once, as a crash.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A new server on the same ports.
    fn restart(mut self) -> Self {
        self.kill();
        Self::start_on(self.grpc, self.http, std::mem::take(&mut self.extra))
    }

    /// Freezes (`true`) or thaws the process: a server that accepts connections and never
    /// answers.
    fn freeze(&self, frozen: bool) {
        let signal = if frozen { libc::SIGSTOP } else { libc::SIGCONT };
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.freeze(false);
        self.kill();
    }
}

/// The first [`FRAMES`] frames of vtest.avi as RGB at [`WIDTH`] x [`HEIGHT`], decoded once.
fn frames() -> &'static [gst::Buffer] {
    static FRAMES_RGB: OnceLock<Vec<gst::Buffer>> = OnceLock::new();
    FRAMES_RGB.get_or_init(|| {
        init();
        let desc = format!(
            "filesrc location={} ! decodebin ! videoconvert ! videoscale \
             ! video/x-raw,format=RGB,width={WIDTH},height={HEIGHT} ! appsink name=sink sync=false",
            quoted(&media("vtest.avi"))
        );
        let pipeline = gst::parse::launch(&desc)
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        let sink: gst_app::AppSink = element(&pipeline, "sink");
        pipeline.set_state(gst::State::Playing).unwrap();
        let mut out = Vec::new();
        while out.len() < FRAMES {
            let sample = sink
                .try_pull_sample(gst::ClockTime::from_seconds(60))
                .expect("a decoded frame within 60 s");
            let mut buffer = sample.buffer_owned().unwrap();
            let b = buffer.make_mut();
            b.set_pts(gst::ClockTime::from_mseconds(100 * out.len() as u64));
            b.set_duration(gst::ClockTime::from_mseconds(100));
            out.push(buffer);
        }
        pipeline.set_state(gst::State::Null).unwrap();
        out
    })
}

/// What a streaming run delivered.
#[derive(Default, Debug)]
struct Outcome {
    frames: Vec<Frame>,
    messages: Vec<gst::Structure>,
    warnings: Vec<String>,
    error: Option<String>,
    stats: Option<gst::Structure>,
}

impl Outcome {
    fn messages_named(&self, suffix: &str) -> Vec<&gst::Structure> {
        self.messages
            .iter()
            .filter(|s| s.name().ends_with(suffix))
            .collect()
    }
}

/// Where a streaming run is, as the pushing thread sees it before each push.
struct Progress<'a> {
    /// Frames pushed so far.
    pushed: usize,
    out: &'a Mutex<Outcome>,
}

impl Progress<'_> {
    /// Waits until `n` frames have left the element (with or without results), `limit` at
    /// most; whether they did.
    fn wait_for_frames_out(&self, n: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.out.lock().unwrap().frames.len() < n {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

/// Pushes the test frames through `appsrc ! rstrtinfer <props> ! appsink`, calling `during`
/// before each push (to kill servers mid-stream), `pace` apart; waits for EOS or an error
/// (`limit` at most).
fn stream(props: &str, pace: Duration, limit: Duration, during: impl FnMut(&Progress)) -> Outcome {
    stream_through("rstrtinfer", props, pace, limit, during)
}

/// As [`stream`], through element `factory` (rstrtinfer or rsdlainfer).
fn stream_through(
    factory: &str,
    props: &str,
    pace: Duration,
    limit: Duration,
    during: impl FnMut(&Progress),
) -> Outcome {
    let config = repo_root().join("pipelines/coco_ssd.txt");
    stream_configured(factory, &config, props, pace, limit, during)
}

/// As [`stream_through`], with the configuration file `config`.
fn stream_configured(
    factory: &str,
    config: &Path,
    props: &str,
    pace: Duration,
    limit: Duration,
    mut during: impl FnMut(&Progress),
) -> Outcome {
    init();
    let desc = format!(
        "appsrc name=src format=time max-bytes=0 \
           caps=video/x-raw,format=RGB,width={WIDTH},height={HEIGHT},framerate=10/1 \
         ! {factory} name=infer config-file-path={} {props} ! appsink name=sink sync=false",
        quoted(config)
    );
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let out = Arc::new(Mutex::new(Outcome::default()));
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    let o = out.clone();
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let buffer = sample.buffer().ok_or(gst::FlowError::Error)?;
                let frames = buffer
                    .meta::<BatchMeta>()
                    .map(|m| m.batch().frames.clone())
                    .unwrap_or_default();
                o.lock().unwrap().frames.extend(frames);
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    let bus = pipeline.bus().unwrap();
    let src: gst_app::AppSrc = element(&pipeline, "src");
    let started = pipeline.set_state(gst::State::Playing);
    let mut finished = false;
    let collect = |out: &Mutex<Outcome>, wait: Duration| -> bool {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(left.as_nanos() as u64))
            else {
                return false;
            };
            let mut o = out.lock().unwrap();
            match msg.view() {
                gst::MessageView::Error(e) => {
                    o.error = Some(format!(
                        "{} ({})",
                        e.error(),
                        e.debug().map(|d| d.to_string()).unwrap_or_default()
                    ));
                    return true;
                }
                gst::MessageView::Warning(w) => o.warnings.push(format!(
                    "{} ({})",
                    w.error(),
                    w.debug().map(|d| d.to_string()).unwrap_or_default()
                )),
                gst::MessageView::Element(e) => {
                    if let Some(s) = e.structure() {
                        o.messages.push(s.to_owned());
                    }
                }
                gst::MessageView::Eos(_) => return true,
                _ => {}
            }
        }
    };
    if started.is_ok() {
        let deadline = Instant::now() + limit;
        'push: for (i, frame) in frames().iter().enumerate() {
            during(&Progress {
                pushed: i,
                out: &out,
            });
            // Two frames queued at most: the source waits while the element holds the stream
            // back (an appsrc that blocks would never return once the stream stopped).
            while src.property::<u64>("current-level-buffers") >= 2 {
                if collect(&out, Duration::from_millis(10)) || Instant::now() > deadline {
                    finished = true;
                    break 'push;
                }
            }
            let _ = src.push_buffer(frame.clone());
            if collect(&out, pace) || Instant::now() > deadline {
                finished = true;
                break;
            }
        }
        if !finished {
            let _ = src.end_of_stream();
            finished = collect(&out, limit);
        }
    } else {
        collect(&out, Duration::from_secs(1));
    }
    let infer = pipeline.by_name("infer").unwrap();
    let stats = infer.property::<gst::Structure>("stats");
    pipeline.set_state(gst::State::Null).unwrap();
    let mut o = std::mem::take(&mut *out.lock().unwrap());
    if !finished && o.error.is_none() && started.is_ok() {
        o.error = Some(format!("timed out after {limit:?}"));
    }
    if started.is_err() && o.error.is_none() {
        o.error = Some("the pipeline did not start".into());
    }
    o.stats = Some(stats);
    o
}

/// The local engine's frames for the test frames (ONNX Runtime on the CPU), once.
fn local() -> &'static [Frame] {
    static LOCAL: OnceLock<Vec<Frame>> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let o = stream(
            "backend=onnxruntime device=cpu",
            Duration::ZERO,
            Duration::from_secs(300),
            |_| {},
        );
        assert_eq!(o.error, None);
        assert_eq!(o.frames.len(), FRAMES);
        let people: usize = o.frames.iter().map(|f| f.objects.len()).sum();
        assert!(
            people > FRAMES * 2,
            "vtest has people in every frame: {people}"
        );
        o.frames
    })
}

/// Whether `a` and `b` have the same detections (same classes, boxes within 0.05 px,
/// confidences within 1e-4: the server's ONNX Runtime may be another version).
fn same_detections(a: &Frame, b: &Frame) -> Result<(), String> {
    if a.objects.len() != b.objects.len() {
        return Err(format!(
            "frame {}: {} objects, expected {}",
            a.frame_num,
            a.objects.len(),
            b.objects.len()
        ));
    }
    for (x, y) in a.objects.iter().zip(&b.objects) {
        let (bx, by) = (x.bbox(), y.bbox());
        let close = x.class_id == y.class_id
            && (x.confidence - y.confidence).abs() < 1e-4
            && [
                (bx.left, by.left),
                (bx.top, by.top),
                (bx.width, by.width),
                (bx.height, by.height),
            ]
            .iter()
            .all(|(p, q)| (p - q).abs() < 0.05);
        if !close {
            return Err(format!("frame {}: {x:?} differs from {y:?}", a.frame_num));
        }
    }
    Ok(())
}

fn inferred(frame: &Frame) -> bool {
    frame.components_run.contains(&1)
}

fn server_props(server: &Server, extra: &str) -> String {
    format!(
        "backend=kserve server-url={} model-name={MODEL} {extra}",
        server.url()
    )
}

#[test]
fn detections_from_the_server_equal_the_local_engine() {
    let server = Server::start(&[]);
    let o = stream(
        &server_props(&server, "requests-in-flight=4"),
        Duration::ZERO,
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(o.error, None, "{:?}", o.warnings);
    assert_eq!(o.frames.len(), FRAMES);
    for (remote, local) in o.frames.iter().zip(local()) {
        assert!(inferred(remote));
        same_detections(remote, local).unwrap();
    }
    let engine = o.messages_named("-engine");
    let engine = engine.first().expect("an rstrtinfer-engine message");
    assert_eq!(engine.get::<String>("backend").unwrap(), "kserve");
    assert!(
        engine
            .get::<String>("providers")
            .unwrap()
            .contains(&server.url()),
        "{engine}"
    );
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
}

/// A detector configured by an nvinferserver (Triton) gRPC file, as deepstream-app's
/// `plugin-type=1` gives it, and by the nvinfer file that says the same.
fn nvinferserver_and_nvinfer_files(dir: &Path, server: &Server) -> (PathBuf, PathBuf) {
    let labels = model("object_detection_classes_coco.txt")
        .display()
        .to_string();
    let quoted_labels = labels.replace('\\', "\\\\").replace('"', "\\\"");
    let url = server.url();
    let triton = dir.join("config_triton_grpc.txt");
    std::fs::write(
        &triton,
        format!(
            r#"# COCO SSDLite on a KServe v2 / Triton server, as nvinferserver reads it.
infer_config {{
  unique_id: 1
  gpu_ids: [0]
  max_batch_size: 1
  backend {{
    # uint8 NHWC, any size: the model resizes and normalises internally.
    inputs: [ {{ name: "image_tensor:0" dims: [300, 300, 3] }} ]
    triton {{
      model_name: "{MODEL}"
      version: -1
      grpc {{ url: "{url}" }}
    }}
  }}
  preprocess {{
    network_format: IMAGE_FORMAT_RGB
    tensor_order: TENSOR_ORDER_NHWC
    maintain_aspect_ratio: 0
    frame_scaling_filter: 1
    normalize {{ scale_factor: 1.0 }}
  }}
  postprocess {{
    labelfile_path: "{quoted_labels}"
    detection {{
      num_detected_classes: 90
      nms {{ confidence_threshold: 0.4 iou_threshold: 0.5 topk: 50 }}
    }}
  }}
}}
input_control {{
  process_mode: PROCESS_MODE_FULL_FRAME
  interval: 0
}}
output_control {{
  detect_control {{ default_filter {{ bbox_filter {{ min_width: 4 min_height: 4 }} }} }}
}}
"#
        ),
    )
    .unwrap();
    let nvinfer = dir.join("config_nvinfer.txt");
    std::fs::write(
        &nvinfer,
        format!(
            "[property]\nlabelfile-path={labels}\ngie-unique-id=1\nbatch-size=1\nnetwork-type=0\n\
             network-input-order=1\nmodel-color-format=0\nnet-scale-factor=1.0\n\
             infer-dims=3;300;300\nmaintain-aspect-ratio=0\noutput-parser=ssd\nbox-format=yxyx\n\
             num-detected-classes=90\ncluster-mode=2\n\
             [class-attrs-all]\npre-cluster-threshold=0.4\nnms-iou-threshold=0.5\ntopk=50\n\
             detected-min-w=4\ndetected-min-h=4\n"
        ),
    )
    .unwrap();
    (triton, nvinfer)
}

/// rstrtinfer runs an nvinferserver gRPC configuration file on the server and finds the same
/// objects, frame by frame, as with the nvinfer configuration that says the same (whose output
/// parser is named; the nvinferserver file's is guessed). A file naming Triton's in-process
/// model repository fails the start, naming the file, the line and what to do instead.
#[test]
fn an_nvinferserver_grpc_file_finds_what_its_nvinfer_equivalent_finds() {
    let server = Server::start(&[]);
    let dir = std::env::temp_dir().join(format!(
        "ferrostream-kserve-nvinferserver-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (triton, nvinfer) = nvinferserver_and_nvinfer_files(&dir, &server);
    let run = |config: &Path, props: &str| {
        let o = stream_configured(
            "rstrtinfer",
            config,
            props,
            Duration::ZERO,
            Duration::from_secs(300),
            |_| {},
        );
        assert_eq!(o.error, None, "{}: {:?}", config.display(), o.warnings);
        assert_eq!(o.frames.len(), FRAMES);
        assert!(o.frames.iter().all(inferred));
        o
    };
    let expected = run(&nvinfer, &server_props(&server, ""));
    let o = run(&triton, "");
    let objects: usize = o.frames.iter().map(|f| f.objects.len()).sum();
    assert!(
        objects > FRAMES * 2,
        "vtest has people in every frame: {objects}"
    );
    for (got, want) in o.frames.iter().zip(&expected.frames) {
        same_detections(got, want).unwrap();
    }
    let engine = o.messages_named("-engine");
    let engine = engine.first().expect("an rstrtinfer-engine message");
    assert!(
        engine
            .get::<String>("providers")
            .unwrap()
            .contains(&server.url()),
        "{engine}"
    );
    // The file's fields without effect, each said once with its line.
    let file = triton.display().to_string();
    assert_eq!(o.warnings.len(), 2, "{:#?}", o.warnings);
    assert!(
        o.warnings[0].contains(&format!(
            "{file}:8: field `infer_config.backend.inputs.name`"
        )),
        "{:?}",
        o.warnings
    );
    assert!(
        o.warnings[1].contains(&format!(
            "{file}:26: field `infer_config.postprocess.detection.nms.topk`"
        )),
        "{:?}",
        o.warnings
    );
    // A property still overrides the file.
    let o = run(&triton, "pre-cluster-threshold=0.99");
    assert!(
        o.frames.iter().map(|f| f.objects.len()).sum::<usize>() < objects,
        "a stricter threshold set as a property keeps fewer objects"
    );

    let repo = dir.join("config_triton_repo.txt");
    let text = std::fs::read_to_string(&triton).unwrap().replace(
        &format!("grpc {{ url: \"{}\" }}", server.url()),
        "model_repo { root: \"triton_model_repo\" strict_model_config: true }",
    );
    std::fs::write(&repo, text).unwrap();
    let o = stream_configured(
        "rstrtinfer",
        &repo,
        "",
        Duration::ZERO,
        Duration::from_secs(60),
        |_| {},
    );
    let e = o.error.expect("model_repo is refused");
    for part in [
        format!(
            "{}:12: field `infer_config.backend.triton.model_repo`",
            repo.display()
        ),
        format!(
            "tritonserver --model-repository={}",
            dir.join("triton_model_repo").display()
        ),
        "grpc { url: \"localhost:8001\" }".to_string(),
    ] {
        assert!(e.contains(&part), "{part:?} not in {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// rsdlainfer on a machine without a DLA falls back to the server of backend=kserve.
#[test]
fn rsdlainfer_falls_back_to_the_inference_server() {
    let server = Server::start(&[]);
    let o = stream_through(
        "rsdlainfer",
        &server_props(&server, ""),
        Duration::ZERO,
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(o.error, None, "{:?}", o.warnings);
    assert_eq!(o.frames.len(), FRAMES);
    for (remote, local) in o.frames.iter().zip(local()) {
        same_detections(remote, local).unwrap();
    }
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("running instead on kserve")),
        "{:?}",
        o.warnings
    );
}

/// Secondary mode on the server: every person classified by MobileNetV2 served remotely, as
/// the local engine classifies them.
#[test]
fn secondary_classification_on_the_server_equals_the_local_engine() {
    let server = Server::serving("mobilenet_v2_imagenet.onnx", "mobilenet");
    let pipeline = |backend: &str| {
        format!(
            "filesrc location={} ! decodebin ! videoconvert \
             ! rstrtinfer config-file-path={} \
             ! rstrtinfer config-file-path={} secondary-reinfer-interval=0 {backend} \
             ! appsink name=sink",
            quoted(&media("vtest.avi")),
            quoted(&repo_root().join("pipelines/coco_ssd.txt")),
            quoted(&repo_root().join("pipelines/imagenet_secondary.txt")),
        )
    };
    let timeout = Duration::from_secs(300);
    let remote = format!(
        "backend=kserve server-url={} model-name=mobilenet",
        server.url()
    );
    let remote = run_pipeline_frames(&pipeline(&remote), 8, timeout).unwrap();
    let local =
        run_pipeline_frames(&pipeline("backend=onnxruntime device=cpu"), 8, timeout).unwrap();
    assert!(remote.warnings.is_empty(), "{:?}", remote.warnings);
    let mut classified = 0;
    for (r, l) in remote.frames.iter().zip(&local.frames) {
        same_detections(r, l).unwrap();
        for (ro, lo) in r.objects.iter().zip(&l.objects) {
            assert_eq!(ro.classifications.len(), lo.classifications.len());
            for (rc, lc) in ro.classifications.iter().zip(&lo.classifications) {
                assert_eq!((rc.class_id, &rc.label), (lc.class_id, &lc.label));
                assert!((rc.prob - lc.prob).abs() < 1e-4, "{rc:?} {lc:?}");
                classified += 1;
            }
        }
    }
    assert!(classified > 16, "objects classified remotely: {classified}");
}

/// The README's batched pipeline: two cameras through rsstreammux, one request per batch.
#[test]
fn batched_cameras_through_the_server_equal_the_local_engine() {
    let server = Server::start(&[]);
    let pipeline = |backend: &str| {
        format!(
            "rsstreammux name=mux batch-size=2 batched-push-timeout=100000 \
               ! rstrtinfer config-file-path={} batch-size=2 {backend} ! appsink name=sink \
             filesrc location={} ! decodebin ! videoconvert ! videoscale \
               ! video/x-raw,format=I420,width=384,height=288 ! mux.sink_0 \
             filesrc location={} ! qtdemux ! decodebin ! videoconvert ! video/x-raw,format=I420 \
               ! mux.sink_1",
            quoted(&repo_root().join("pipelines/coco_ssd.txt")),
            quoted(&media("vtest.avi")),
            quoted(&media("carphone_pristine.mp4")),
        )
    };
    let timeout = Duration::from_secs(300);
    let remote = run_pipeline_frames(&pipeline(&server_props(&server, "")), 40, timeout).unwrap();
    let local =
        run_pipeline_frames(&pipeline("backend=onnxruntime device=cpu"), 40, timeout).unwrap();
    assert_eq!(remote.frames.len(), 40);
    let key = |f: &Frame| (f.source_id, f.frame_num);
    let mut sources = [0; 2];
    for r in &remote.frames {
        let l = local
            .frames
            .iter()
            .find(|l| key(l) == key(r))
            .unwrap_or_else(|| panic!("frame {:?} not in the local run", key(r)));
        assert!(inferred(r));
        same_detections(r, l).unwrap();
        sources[r.source_id as usize] += 1;
    }
    assert!(sources.iter().all(|&n| n > 5), "both cameras: {sources:?}");
}

#[test]
fn a_server_killed_mid_stream_is_waited_for_and_every_frame_gets_its_results() {
    // Answers take at least 200 ms, so that requests are in flight when the server dies. The
    // death is seen at once (a reset, then refused connections): a long server-timeout costs
    // nothing and keeps a slow loaded server from making outages of its own.
    let mut server = Some(Server::start(&["--delay-ms", "200"]));
    let props = server_props(
        server.as_ref().unwrap(),
        "on-server-failure=wait server-timeout=5000 server-give-up=60",
    );
    let o = stream(
        &props,
        Duration::from_millis(30),
        Duration::from_secs(300),
        |p| {
            if p.pushed == 12 {
                let mut s = server.take().unwrap();
                s.kill();
                std::thread::sleep(Duration::from_millis(1500));
                // Restarted while the element retries the batches it holds.
                server = Some(s.restart());
            }
        },
    );
    assert_eq!(o.error, None, "{:?}", o.warnings);
    assert_eq!(o.frames.len(), FRAMES, "nothing is dropped while waiting");
    for (remote, local) in o.frames.iter().zip(local()) {
        assert!(inferred(remote), "frame {}", remote.frame_num);
        same_detections(remote, local).unwrap();
    }
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("does not answer") && w.contains("holding the stream")),
        "{:?}",
        o.warnings
    );
    // The kill's outage is the longest (a loaded machine may add short ones); nothing is
    // dropped in any.
    let recovered = outages(&o);
    let kill = recovered
        .iter()
        .map(|r| r.get::<u64>("outage-ms").unwrap())
        .max()
        .unwrap_or_else(|| panic!("no outage reported: {:?}", o.messages));
    assert!(kill >= 1000, "{:?}", o.messages);
    assert!(
        recovered
            .iter()
            .all(|r| r.get::<u64>("dropped").unwrap() == 0),
        "{:?}",
        o.messages
    );
    let stats = o.stats.clone().unwrap();
    assert_eq!(stats.get::<u64>("server-dropped").unwrap(), 0);
}

/// The outages the element reported: each `-server-lost` followed by its `-server-recovered`,
/// never two of one kind in a row, none left open. Returns the recovered messages.
fn outages(o: &Outcome) -> Vec<&gst::Structure> {
    let mut open = false;
    let mut recovered = Vec::new();
    for m in &o.messages {
        if m.name().ends_with("-server-lost") {
            assert!(!open, "lost twice without a recovery: {:?}", o.messages);
            open = true;
        } else if m.name().ends_with("-server-recovered") {
            assert!(open, "recovered without a loss: {:?}", o.messages);
            open = false;
            recovered.push(m);
        }
    }
    assert!(!open, "an outage never recovered: {:?}", o.messages);
    recovered
}

#[test]
fn a_server_killed_mid_stream_with_drop_passes_counted_frames_without_results() {
    let mut server = Some(Server::start(&[]));
    let props = server_props(
        server.as_ref().unwrap(),
        // The death is seen at once (a reset, then refused connections): a long server-timeout
        // keeps a slow loaded server from making outages of its own.
        "on-server-failure=drop server-timeout=5000 requests-in-flight=8",
    );
    let o = stream(
        &props,
        Duration::from_millis(60),
        Duration::from_secs(300),
        |p| {
            if p.pushed == 10 {
                server.as_mut().unwrap().kill();
            }
            if p.pushed == 18 {
                server = Some(server.take().unwrap().restart());
            }
        },
    );
    assert_eq!(o.error, None, "{:?}", o.warnings);
    assert_eq!(o.frames.len(), FRAMES, "every frame goes on");
    let without: Vec<u64> = o
        .frames
        .iter()
        .filter(|f| !inferred(f))
        .map(|f| f.frame_num)
        .collect();
    let stats = o.stats.clone().unwrap();
    let dropped = stats.get::<u64>("server-dropped").unwrap();
    assert_eq!(dropped as usize, without.len(), "counted: {without:?}");
    // Frames 10 to 17 were sent while the server was dead. (A loaded machine may also skip a
    // frame earlier, when all requests in flight are taken: counted the same way.)
    assert!(
        (10..18).all(|n| without.contains(&n)),
        "the outage's frames go without results: {without:?}"
    );
    // Results come back after the restart. A loaded machine (a slow server) may skip later
    // frames too, when all requests in flight are taken: then the element says so.
    let back = o.frames[18..]
        .iter()
        .position(inferred)
        .unwrap_or_else(|| panic!("results come back after the restart: {without:?}"));
    if o.frames[18 + back..].iter().any(|f| !inferred(f)) {
        assert!(
            o.warnings
                .iter()
                .any(|w| w.contains("slower than the stream")),
            "frames after the recovery went without results, unexplained: {without:?} {:?}",
            o.warnings
        );
    }
    for (remote, local) in o.frames.iter().zip(local()) {
        if inferred(remote) {
            same_detections(remote, local).unwrap();
        } else {
            assert!(remote.objects.is_empty());
        }
    }
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("does not answer") && w.contains("without results")),
        "{:?}",
        o.warnings
    );
    // The kill's outage dropped at least the eight frames sent while the server was dead; a
    // loaded machine may add short outages of its own. Every frame dropped in an outage is
    // counted in it (others went for want of a free request).
    let in_outages: Vec<u64> = outages(&o)
        .iter()
        .map(|r| r.get::<u64>("dropped").unwrap())
        .collect();
    let kill = in_outages.iter().copied().max().unwrap_or(0);
    assert!(kill >= 8, "{in_outages:?} of {dropped}: {:?}", o.messages);
    assert!(
        in_outages.iter().sum::<u64>() <= dropped,
        "{in_outages:?} of {dropped}"
    );
}

#[test]
fn a_server_that_stops_answering_is_an_error_after_the_give_up_time() {
    for policy in ["wait", "drop"] {
        let server = Server::start(&[]);
        let props = server_props(
            &server,
            &format!("on-server-failure={policy} server-timeout=1000 server-give-up=3"),
        );
        let started = Instant::now();
        // Paced so that the stream outlasts the give-up time (frames dropped do not wait).
        let pace = Duration::from_millis(if policy == "drop" { 200 } else { 30 });
        let o = stream(&props, pace, Duration::from_secs(60), |p| {
            if p.pushed == 6 {
                // Four frames are answered first, however slow the machine.
                assert!(
                    p.wait_for_frames_out(4, Duration::from_secs(30)),
                    "{policy}: four frames before the freeze"
                );
                server.freeze(true);
            }
        });
        let error = o.error.unwrap_or_default();
        assert!(
            error.contains("has not answered for 3 s"),
            "{policy}: {error} {:?}",
            o.warnings
        );
        assert!(error.contains(&server.url()), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "{policy}: no hang"
        );
        assert!(
            (4..FRAMES).contains(&o.frames.len()),
            "{policy}: the frames before the freeze, not the others: {}",
            o.frames.len()
        );
    }
}

#[test]
fn a_slow_server_with_drop_skips_frames_and_counts_them() {
    let server = Server::start(&["--delay-ms", "400"]);
    let props = server_props(
        &server,
        "on-server-failure=drop requests-in-flight=1 server-timeout=5000",
    );
    let o = stream(
        &props,
        Duration::from_millis(40),
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(o.error, None, "{:?}", o.warnings);
    assert_eq!(o.frames.len(), FRAMES);
    let stats = o.stats.clone().unwrap();
    let dropped = stats.get::<u64>("server-dropped").unwrap() as usize;
    let without = o.frames.iter().filter(|f| !inferred(f)).count();
    assert_eq!(dropped, without);
    assert!(
        dropped > FRAMES / 2,
        "one request at a time of 400 ms: {dropped}"
    );
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("slower than the stream")),
        "{:?}",
        o.warnings
    );
    for (remote, local) in o.frames.iter().zip(local()) {
        if inferred(remote) {
            same_detections(remote, local).unwrap();
        }
    }
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl.
fn certificates(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (Debian package openssl)");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    // Version 3 certificates (rustls takes no other): each with its extensions.
    std::fs::write(
        dir.join("server.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    std::fs::write(dir.join("client.cnf"), "extendedKeyUsage=clientAuth\n").unwrap();
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    for name in ["server", "client"] {
        let (key, csr, pem, cnf) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
            format!("{name}.cnf"),
        );
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &key,
            "-out",
            &csr,
        ]);
        run(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-extfile",
            &cnf,
        ]);
    }
}

fn start_error(props: &str) -> String {
    let o = stream(props, Duration::ZERO, Duration::from_secs(60), |_| {});
    o.error.unwrap_or_else(|| panic!("no error for {props}"))
}

#[test]
fn tls_client_certificates_and_headers() {
    let dir = std::env::temp_dir().join(format!("ferrostream-kserve-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let file = |name: &str| dir.join(name).display().to_string();
    let server = Server::start(&[
        "--tls-cert",
        &file("server.pem"),
        "--tls-key",
        &file("server.key"),
        "--tls-client-ca",
        &file("ca.pem"),
        "--require-header",
        "authorization=Bearer s3cret",
    ]);
    let url = format!("https://127.0.0.1:{}", server.grpc);
    let good = format!(
        "backend=kserve server-url={url} model-name={MODEL} server-ca-file={} \
         server-cert-file={} server-key-file={} server-headers=\"authorization=Bearer s3cret\"",
        file("ca.pem"),
        file("client.pem"),
        file("client.key")
    );
    let o = stream(&good, Duration::ZERO, Duration::from_secs(300), |_| {});
    assert_eq!(o.error, None, "{:?}", o.warnings);
    assert_eq!(o.frames.len(), FRAMES);
    for (remote, local) in o.frames.iter().zip(local()) {
        same_detections(remote, local).unwrap();
    }

    let no_header = good.replace("Bearer s3cret", "Bearer wrong");
    let e = start_error(&no_header);
    assert!(e.contains("header authorization required"), "{e}");
    let no_client_cert = format!(
        "backend=kserve server-url={url} model-name={MODEL} server-ca-file={} \
         server-headers=\"authorization=Bearer s3cret\" server-timeout=2000",
        file("ca.pem")
    );
    let e = start_error(&no_client_cert);
    // The server ends the TLS handshake (a closed connection or a broken pipe, by timing),
    // before any call reaches the header check.
    assert!(
        e.contains(&url) && e.contains("transport error") && !e.contains("header"),
        "{e}"
    );
    // The server's certificate is not signed by the public roots.
    let public_roots = format!(
        "backend=kserve server-url={url} model-name={MODEL} server-cert-file={} \
         server-key-file={} server-timeout=2000",
        file("client.pem"),
        file("client.key")
    );
    let e = start_error(&public_roots);
    assert!(e.contains(&url) && e.contains("UnknownIssuer"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn start_errors_name_the_server_and_the_model() {
    let port = free_port();
    let e = start_error(&format!(
        "backend=kserve server-url=127.0.0.1:{port} model-name={MODEL} server-timeout=500"
    ));
    assert!(
        e.contains(&format!("127.0.0.1:{port} does not answer")),
        "{e}"
    );
    let e = start_error("backend=kserve model-name=coco");
    assert!(e.contains("needs server-url"), "{e}");
    let e = start_error("backend=triton server-url=127.0.0.1:1");
    assert!(e.contains("needs model-name"), "{e}");
    let e = start_error("backend=kserve server-url=ftp://x:1 model-name=coco");
    assert!(e.contains("unknown scheme ftp://"), "{e}");
    let e = start_error("backend=kserve server-url=127.0.0.1:1 model-name=coco server-headers=x");
    assert!(e.contains("server-headers"), "{e}");

    let server = Server::start(&[]);
    let e = start_error(&format!(
        "backend=kserve server-url={} model-name=no-such-model",
        server.url()
    ));
    assert!(
        e.contains("cannot load model")
            && e.contains("no-such-model")
            && e.contains("does not exist"),
        "{e}"
    );
}

/// A server that answers with a declared shape of 10^12 values, NaN everywhere, or an answer
/// larger than allowed: each is an element error that names the server and says what was
/// wrong, after the frames answered well. (A declared shape of 10^12 values aborted the
/// process; a NaN answer read as "no objects".)
#[test]
fn hostile_answers_are_clear_errors() {
    for (mode, extra, expected) in [
        ("huge-shape", "", "has shape [1, 1000000000000]"),
        ("nan", "", "NaN values of"),
        (
            "oversized",
            "server-max-message-mib=8",
            "larger than the 8 MiB accepted",
        ),
    ] {
        let server = Server::start(&["--hostile", mode, "--hostile-after", "3"]);
        let props = server_props(&server, &format!("requests-in-flight=1 {extra}"));
        let o = stream(&props, Duration::ZERO, Duration::from_secs(120), |_| {});
        let error = o.error.clone().unwrap_or_default();
        assert!(error.contains(expected), "{mode}: {error}");
        assert!(error.contains(&server.url()), "{mode}: {error}");
        assert_eq!(o.frames.len(), 3, "{mode}: the frames answered well leave");
        for (remote, local) in o.frames.iter().zip(local()) {
            same_detections(remote, local).unwrap();
        }
    }
}

/// How a test server fails while a pipeline waits for it.
#[derive(Debug, Clone, Copy)]
enum Outage {
    /// Accepts the call and never answers (`--hostile stall`).
    Stall,
    /// The process is stopped (SIGSTOP): no answers, not even to keep-alive pings.
    Freeze,
    /// The process exits in the middle of a call.
    Die,
}

/// Runs `pipeline` until the stream is held by the server's outage (no buffer for two seconds)
/// or the element warns about it, then times a flushing seek (where `seek`) and the stop.
/// Each must return promptly; a watchdog fails the test after 30 s instead of hanging.
fn stop_while_waiting(pipeline: &str, server: &Server, outage: Outage, seek: bool) {
    init();
    let pipeline = gst::parse::launch(pipeline)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let sink = pipeline.by_name("sink").unwrap();
    let buffers = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = buffers.clone();
    sink.static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            gst::PadProbeReturn::Ok
        });
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut frozen = false;
    let (mut seen, mut since) = (0, Instant::now());
    loop {
        assert!(
            Instant::now() < deadline,
            "{outage:?}: the outage never held the stream"
        );
        if let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) {
            match msg.view() {
                gst::MessageView::Error(e) => panic!("{outage:?}: {}", e.error()),
                gst::MessageView::Warning(w)
                    if w.error().to_string().contains("does not answer") =>
                {
                    break;
                }
                _ => {}
            }
        }
        let n = buffers.load(std::sync::atomic::Ordering::SeqCst);
        if matches!(outage, Outage::Freeze) && !frozen && n >= 3 {
            server.freeze(true);
            frozen = true;
        }
        if n != seen {
            (seen, since) = (n, Instant::now());
        } else if n > 0 && since.elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    let timed = |what: &str, action: Box<dyn FnOnce() + Send>| {
        let (done, finished) = std::sync::mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            action();
            let _ = done.send(());
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(30)).is_ok(),
            "{outage:?}: {what} did not return within 30 s"
        );
        let took = started.elapsed();
        eprintln!("{outage:?}: {what} took {} ms", took.as_millis());
        took
    };
    if seek {
        let p = pipeline.clone();
        let took = timed(
            "a flushing seek",
            Box::new(move || {
                let _ = p.seek_simple(gst::SeekFlags::FLUSH, gst::ClockTime::ZERO);
            }),
        );
        assert!(
            took < Duration::from_secs(5),
            "{outage:?}: the seek took {took:?}"
        );
    }
    let p = pipeline.clone();
    let took = timed(
        "set_state(NULL)",
        Box::new(move || {
            p.set_state(gst::State::Null).unwrap();
        }),
    );
    assert!(
        took < Duration::from_secs(5),
        "{outage:?}: the stop took {took:?}"
    );
}

/// Stopping (and a flushing seek) never waits for a server that stalls, froze or died, in
/// either failure policy and in secondary mode (before, with on-server-failure=wait,
/// set_state(NULL) never returned after the "holding the stream" warning).
#[test]
fn a_pipeline_stops_promptly_while_the_server_stalls_freezes_or_dies() {
    let source = format!(
        "videotestsrc pattern=ball ! video/x-raw,format=RGB,width={WIDTH},height={HEIGHT},\
         framerate=10/1"
    );
    for (outage, policy) in [
        (Outage::Stall, "wait"),
        (Outage::Freeze, "wait"),
        (Outage::Die, "wait"),
        (Outage::Stall, "drop"),
    ] {
        let server = match outage {
            Outage::Stall => Server::start(&["--hostile", "stall", "--hostile-after", "3"]),
            Outage::Die => Server::start(&["--hostile", "die", "--hostile-after", "3"]),
            Outage::Freeze => Server::start(&[]),
        };
        let pipeline = format!(
            "{source} ! rstrtinfer config-file-path={} {} ! fakesink name=sink sync=false",
            quoted(&repo_root().join("pipelines/coco_ssd.txt")),
            server_props(
                &server,
                &format!("on-server-failure={policy} server-timeout=500 server-give-up=0")
            )
        );
        eprintln!("{outage:?}, on-server-failure={policy}");
        stop_while_waiting(&pipeline, &server, outage, true);
    }
    // Secondary mode waits for each answer in the streaming thread.
    let server = Server::start(&[
        "--model",
        &model("mobilenet_v2_imagenet.onnx").display().to_string(),
        "--name",
        "mobilenet",
        "--hostile",
        "stall",
        "--hostile-after",
        "2",
    ]);
    let pipeline = format!(
        "filesrc location={} ! decodebin ! videoconvert ! rstrtinfer config-file-path={} \
         ! rstrtinfer config-file-path={} secondary-reinfer-interval=0 backend=kserve \
           server-url={} model-name=mobilenet server-timeout=500 server-give-up=0 \
         ! fakesink name=sink sync=false",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&repo_root().join("pipelines/imagenet_secondary.txt")),
        server.url()
    );
    eprintln!("Stall, secondary mode");
    stop_while_waiting(&pipeline, &server, Outage::Stall, false);
}
