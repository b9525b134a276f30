// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsmultiurisrcbin through its REST server with real HTTP clients (curl): NVIDIA's documented
//! requests as they are, every error status, metrics checked by promtool and against the
//! elements' own counters, and smart record (files that decode, start at a keyframe before the
//! trigger minus the cache, and last the asked duration; one file per line-crossing window).
//! Metrics carry element names and the tests share one process: each names its elements apart.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ferrostream_tests::rest::{Running, add_body, curl, file_uri, remove_body, request, vtest_uri};
use ferrostream_tests::{element, free_port, media, model, pull_samples, quoted, repo_root};
use gst::prelude::*;
use serde_json::Value;

/// NVIDIA's curl examples (the deepstream-server sample's README) as they are, but for the
/// port and the file the camera plays: add, stream info, ready state, run-time changes, remove.
#[test]
fn nvidia_documented_requests_work_unchanged() {
    let port = free_port();
    let roi_config = repo_root().join("pipelines/analytics_vtest.txt");
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port={port} batch-size=2 batched-push-timeout=100000 \
             max-sources=4 file-loop=true \
         ! rstrtinfer name=pgie config-file-path={} onnx-file={} labelfile-path={} \
         ! rstracker ! rsanalytics name=analytics config-file-path={} ! fakesink name=sink sync=false",
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        quoted(&roi_config),
    ));
    let base = format!("http://localhost:{port}");
    let add = format!(
        r#"{{
  "key": "sensor",
  "value": {{
     "camera_id": "uniqueSensorID1",
     "camera_name": "front_door",
     "camera_url": "{}",
     "change": "camera_add",
     "metadata": {{
         "resolution": "1920 x1080",
         "codec": "h264",
         "framerate": 30
     }}
 }},
 "headers": {{
     "source": "vst",
     "created_at": "2021-06-01T14:34:13.417Z"
 }}
}}"#,
        vtest_uri()
    );
    let (status, body) = curl(&["-XPOST", &format!("{base}/api/v1/stream/add"), "-d", &add]);
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["reason"], "STREAM_ADD_SUCCESS");
    assert_eq!(body["status"], "HTTP/1.1 200 OK");
    assert_eq!(body["stream_id"], 0);
    run.wait("frames of the added camera", Duration::from_secs(60), |r| {
        r.frames(0) >= 3
    });

    let (status, body) = curl(&[
        "-XGET",
        &format!("{base}/api/v1/stream/get-stream-info"),
        "-d",
        "{}",
    ]);
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["reason"], "GET_LIVE_STREAM_INFO_SUCCESS");
    assert_eq!(body["stream-info"]["stream-count"], 1);
    let info = &body["stream-info"]["stream-info"][0];
    assert_eq!(info["camera_id"], "uniqueSensorID1");
    assert_eq!(info["camera_name"], "front_door");
    assert_eq!(info["source_id"], 0);

    let (status, body) = curl(&[
        "-X",
        "GET",
        &format!("{base}/api/v1/health/get-dsready-state"),
    ]);
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["health-info"]["ds-ready"], "YES");

    let pgie: gst::Element = element(&run.pipeline, "pgie");
    let (status, body) = curl(&[
        "-XPOST",
        &format!("{base}/api/v1/infer/set-interval"),
        "-d",
        r#"{
"stream":
    {
        "stream_id":"0",
        "interval":2
    }
}"#,
    ]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(pgie.property::<u32>("interval"), 2);
    // nvinferserver's endpoint: rstrtinfer plays that part too.
    let (status, body) = curl(&[
        "-XPOST",
        &format!("{base}/api/v1/inferserver/set-interval"),
        "-d",
        r#"{"stream":{"stream_id":"0","interval":3}}"#,
    ]);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("INFERSERVER_INTERVAL_UPDATE_SUCCESS"),
        "{body}"
    );
    assert_eq!(pgie.property::<u32>("interval"), 3);

    let (status, body) = curl(&[
        "-XPOST",
        &format!("{base}/api/v1/mux/batched-push-timeout"),
        "-d",
        r#"{
"stream":
    {
        "batched_push_timeout":100000
    }
}"#,
    ]);
    assert_eq!(status, 200, "{body}");
    let src: gst::Element = element(&run.pipeline, "src");
    assert_eq!(src.property::<i64>("batched-push-timeout"), 100000);

    let (status, body) = curl(&[
        "-XPOST",
        &format!("{base}/api/v1/roi/update"),
        "-d",
        r#"{
  "stream": {
      "stream_id": "0",
      "roi_count": 2,
      "roi": [{
              "roi_id": "0",
              "left": 100,
              "top": 300,
              "width": 400,
              "height": 400
          },
          {
              "roi_id": "1",
              "left": 550,
              "top": 300,
              "width": 500,
              "height": 500
          }
      ]
  }
}"#,
    ]);
    assert_eq!(status, 200, "{body}");
    // The new regions replace the file's ("Square") in the frames that follow.
    run.wait(
        "frames counted in the new regions",
        Duration::from_secs(60),
        |r| {
            r.seen.lock().unwrap().rois.get(&0).is_some_and(|names| {
                names.contains(&"0".to_string())
                    && names.contains(&"1".to_string())
                    && !names.contains(&"Square".to_string())
            })
        },
    );

    // A second camera keeps batches flowing: a removed camera's end goes downstream with the
    // next batch.
    let keeper = add_body("keeper", &vtest_uri());
    let (status, json) = request(port, "POST", "/api/v1/stream/add", Some(&keeper));
    assert_eq!(
        (status, &json["stream_id"]),
        (200, &Value::from(1)),
        "{json}"
    );
    let remove = add.replace("camera_add", "camera_remove");
    let (status, body) = curl(&[
        "-XPOST",
        &format!("{base}/api/v1/stream/remove"),
        "-d",
        &remove,
    ]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("STREAM_REMOVE_SUCCESS"), "{body}");
    run.wait(
        "the removed camera's end downstream",
        Duration::from_secs(30),
        |r| r.seen.lock().unwrap().stream_eos.contains(&0),
    );
    let (_, body) = request(port, "GET", "/api/v1/stream/get-stream-info", None);
    assert_eq!(body["stream-info"]["stream-count"], 1);
}

/// Every error answers with its status and DeepStream's body, and the bin goes on.
#[test]
fn every_error_status() {
    let port = free_port();
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port={port} max-sources=2 uri-list={} \
             sensor-id-list=first file-loop=true ! fakesink name=sink sync=false",
        vtest_uri()
    ));
    run.wait("the first camera", Duration::from_secs(60), |r| {
        r.frames(0) >= 1
    });
    let expect = |method: &str, path: &str, body: Option<&str>, status: u16, reason: &str| {
        let (got, json) = request(port, method, path, body);
        assert_eq!(got, status, "{method} {path}: {json}");
        let text = json["reason"].as_str().unwrap_or_default();
        assert!(
            text.contains(reason),
            "{method} {path}: `{text}` lacks `{reason}`"
        );
        assert_eq!(
            json["status"].as_str().unwrap_or_default(),
            format!(
                "HTTP/1.1 {status} {}",
                ferrostream_core::http::reason_phrase(status)
            )
        );
    };
    let add = "/api/v1/stream/add";
    expect("POST", add, Some("{not json"), 400, "not JSON");
    expect(
        "POST",
        add,
        Some(&add_body("x", "")),
        400,
        "Source url empty",
    );
    expect(
        "POST",
        add,
        Some(&add_body("", &vtest_uri())),
        400,
        "Source id empty",
    );
    expect(
        "POST",
        add,
        Some(&add_body("x", "/no/scheme.avi")),
        400,
        "not a URI",
    );
    expect(
        "POST",
        add,
        Some(&add_body("x", &vtest_uri()).replace("camera_add", "camera_move")),
        400,
        "change string not supported",
    );
    expect(
        "POST",
        add,
        Some(&add_body("first", &vtest_uri())),
        409,
        "Duplicate Camera id",
    );
    expect(
        "POST",
        add,
        Some(&add_body("second", &vtest_uri())),
        200,
        "STREAM_ADD_SUCCESS",
    );
    expect(
        "POST",
        add,
        Some(&add_body("third", &vtest_uri())),
        503,
        "exceed max-sources",
    );
    expect(
        "POST",
        "/api/v1/stream/remove",
        Some(&remove_body("nobody")),
        404,
        "No record found",
    );
    expect("GET", add, None, 405, "takes POST");
    expect(
        "POST",
        "/api/v1/stream/get-stream-info",
        Some("{}"),
        405,
        "takes GET",
    );
    expect("GET", "/api/v1/nothing", None, 404, "no such endpoint");
    expect(
        "POST",
        "/api/v1/infer/set-interval",
        Some(r#"{"stream":{"stream_id":"x","interval":2}}"#),
        400,
        "stream_id",
    );
    expect(
        "POST",
        "/api/v1/infer/set-interval",
        Some(r#"{"stream":{"stream_id":"0","interval":2}}"#),
        404,
        "no primary inference element",
    );
    expect(
        "POST",
        "/api/v1/roi/update",
        Some(r#"{"stream":{"stream_id":"0","roi":[]}}"#),
        404,
        "no rsanalytics",
    );
    expect(
        "POST",
        "/api/v1/record/start",
        Some(r#"{"stream":{"camera_id":"first"}}"#),
        409,
        "smart record is off",
    );
    expect(
        "POST",
        "/api/v1/record/start",
        Some(r#"{"stream":{"camera_id":"ghost"}}"#),
        404,
        "no camera",
    );
    expect(
        "POST",
        "/api/v1/record/stop",
        Some(r#"{"stream":{"camera_id":"first"}}"#),
        409,
        "no recording",
    );
    expect(
        "POST",
        "/api/v1/roi/update",
        Some(
            r#"{"stream":{"stream_id":"7","roi_count":1,"roi":[{"roi_id":"0","left":1,"top":1,"width":9,"height":9}]}}"#,
        ),
        404,
        "no stream 7: stream ids lie below max-sources (2)",
    );
    // A run-time change, not an error: the muxer takes it while playing.
    expect(
        "POST",
        "/api/v1/mux/max-latency",
        Some(r#"{"stream":{"max_latency":5000000}}"#),
        200,
        "MAX_LATENCY_UPDATE_SUCCESS",
    );
    let src = run.pipeline.by_name("src").unwrap();
    assert_eq!(src.property::<u64>("max-latency"), 5_000_000);
    // A body over the server's 1 MiB limit.
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(1_100_000));
    let path = std::env::temp_dir().join(format!("ferrostream-big-{}.json", std::process::id()));
    std::fs::write(&path, big).unwrap();
    let (status, _) = curl(&[
        "-XPOST",
        &format!("http://127.0.0.1:{port}{add}"),
        "--data-binary",
        &format!("@{}", path.display()),
    ]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(status, 413);
    // Still serving, and both cameras play (the second one's first frame may take a while on
    // a loaded machine: ready waits for it).
    let before = run.frames(0);
    run.wait("frames after the errors", Duration::from_secs(30), |r| {
        r.frames(0) > before + 2 && r.frames(1) >= 1
    });
    let (status, body) = request(port, "GET", "/api/v1/health/ready", None);
    assert_eq!(status, 200, "{body}");
}

/// Readiness as DeepStream counts it: one camera delivering makes the bin ready, an unreachable
/// camera retrying for ever does not hold it back and is named; `ready-needs-every-camera`
/// waits for it. The startup probe answers once the bin runs.
#[test]
fn readiness_does_not_wait_for_an_unreachable_camera_and_names_it() {
    let port = free_port();
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port={port} max-sources=2 batch-size=2 \
             batched-push-timeout=40000 uri-list={},rtsp://127.0.0.1:1/none \
             sensor-id-list=yard,dead reconnect-attempts=-1 reconnect-interval=1 file-loop=true \
             ! fakesink name=sink sync=false",
        vtest_uri()
    ));
    // Ready needs the bin PLAYING: a first frame may pass while it prerolls.
    let bin = run.pipeline.by_name("src").unwrap();
    run.wait(
        "the reachable camera, playing",
        Duration::from_secs(60),
        |r| r.frames(0) >= 1 && bin.current_state() == gst::State::Playing,
    );
    let (status, body) = request(port, "GET", "/api/v1/health/ready", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reason"], "GET_READY_INFO_SUCCESS", "{body}");
    assert_eq!(body["ready-info"]["ds-ready"], "YES", "{body}");
    let waiting = body["ready-info"]["cameras-without-frames"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(waiting.len(), 1, "{body}");
    assert_eq!(waiting[0]["camera_id"], "dead", "{body}");
    assert_eq!(waiting[0]["source_id"], 1, "{body}");
    let (status, body) = request(port, "GET", "/api/v1/startup", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["startup-info"]["ds-startup"], "YES", "{body}");
    assert_eq!(body["reason"], "GET_STARTUP_INFO_SUCCESS", "{body}");
    bin.set_property("ready-needs-every-camera", true);
    let (status, body) = request(port, "GET", "/api/v1/health/ready", None);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["ready-info"]["ds-ready"], "NO", "{body}");
}

/// `app/quit` with NVIDIA's body ends the stream: the pipeline reaches EOS (looping files
/// included), and the bus tells the application to quit.
#[test]
fn app_quit_ends_the_pipeline() {
    let port = free_port();
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port={port} max-sources=2 uri-list={0},{0} \
             file-loop=true ! fakesink name=sink sync=false",
        vtest_uri()
    ));
    run.wait("both cameras", Duration::from_secs(60), |r| {
        r.frames(0) >= 1 && r.frames(1) >= 1
    });
    let (status, body) = request(
        port,
        "POST",
        "/api/v1/app/quit",
        Some(r#"{"stream":{"app_quit":1}}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reason"], "QUIT_SUCCESS", "{body}");
    let bus = run.pipeline.bus().unwrap();
    let (mut quit, mut eos) = (None, false);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !eos && Instant::now() < deadline {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => eos = true,
            gst::MessageView::Error(e) => panic!("{}", e.error()),
            gst::MessageView::Element(e) => {
                if let Some(s) = e
                    .structure()
                    .filter(|s| s.name() == "ferrostream-force-pipeline-eos")
                {
                    quit = s.get::<bool>("app-quit").ok();
                }
            }
            _ => {}
        }
    }
    assert!(eos, "the pipeline did not reach EOS after app/quit");
    assert_eq!(quit, Some(true));
    let (status, _) = request(
        port,
        "POST",
        "/api/v1/app/quit",
        Some(r#"{"stream":{"app_quit":"yes"}}"#),
    );
    assert_eq!(status, 400);
}

/// `dec/drop-frame-interval` with NVIDIA's body, set before the frames flow: that camera gives
/// every other frame, the other every frame; a stream that does not exist is 404.
#[test]
fn drop_frame_interval_over_rest_halves_one_camera() {
    ferrostream_tests::init();
    let port = free_port();
    let pipeline = gst::parse::launch(&format!(
        "rsmultiurisrcbin name=src rest-port={port} max-sources=2 batch-size=2 \
             batched-push-timeout=100000 uri-list={0},{0} ! fakesink name=sink sync=false",
        vtest_uri()
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let counts = std::sync::Arc::new(std::sync::Mutex::new([0u64; 2]));
    let c = counts.clone();
    element::<gst::Element>(&pipeline, "sink")
        .static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(gst::PadProbeData::Buffer(b)) = &info.data
                && let Some(meta) = ferrostream_core::BatchMeta::of(b)
            {
                for f in &meta.batch().frames {
                    c.lock().unwrap()[f.source_id as usize & 1] += 1;
                }
            }
            gst::PadProbeReturn::Ok
        });
    // PAUSED: the REST server answers and the cameras are there; few frames have passed.
    pipeline.set_state(gst::State::Paused).unwrap();
    let (status, body) = request(
        port,
        "POST",
        "/api/v1/dec/drop-frame-interval",
        Some(r#"{"stream":{"stream_id":"1","drop_frame_interval":2}}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reason"], "DROP_FRAME_INTERVAL_UPDATE_SUCCESS",
        "{body}"
    );
    let (status, _) = request(
        port,
        "POST",
        "/api/v1/dec/drop-frame-interval",
        Some(r#"{"stream":{"stream_id":"5","drop_frame_interval":2}}"#),
    );
    assert_eq!(status, 404);
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(120),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("the end of the files within 120 s");
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    let [all, halved] = *counts.lock().unwrap();
    assert!(all > 100, "camera 0 gave {all} frames");
    // The frames queued before the change (a few) are not dropped.
    assert!(
        halved >= all / 2 && halved <= all / 2 + 16,
        "camera 1 gave {halved} of {all}"
    );
}

/// A token is required of every request when set.
#[test]
fn bearer_token() {
    let port = free_port();
    let _run = Running::start(&format!(
        "rsmultiurisrcbin rest-port={port} rest-token=s3cret ! fakesink name=sink sync=false"
    ));
    let url = format!("http://127.0.0.1:{port}/api/v1/stream/get-stream-info");
    let (status, _) = curl(&[&url]);
    assert_eq!(status, 401);
    let (status, _) = curl(&["-H", "Authorization: Bearer wrong", &url]);
    assert_eq!(status, 401);
    let (status, body) = curl(&["-H", "Authorization: Bearer s3cret", &url]);
    assert_eq!(status, 200, "{body}");
}

/// `/metrics` passes promtool, and its numbers are the elements' own.
#[test]
fn metrics_pass_promtool_and_agree_with_the_elements() {
    let port = free_port();
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=metrics_src rest-port={port} batch-size=2 batched-push-timeout=100000 \
             uri-list={uri},{uri} sensor-id-list=a,b \
         ! rstrtinfer name=metrics_pgie config-file-path={} onnx-file={} labelfile-path={} \
         ! identity name=sink eos-after=40 ! fakesink sync=false",
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        uri = vtest_uri(),
    ));
    // Until the end of stream: then nothing moves and the numbers can be compared.
    let bus = run.pipeline.bus().unwrap();
    let m = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(300),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("no end of stream within 300 s");
    assert!(matches!(m.view(), gst::MessageView::Eos(_)), "{m:?}");
    let (status, text) = curl(&[&format!("http://127.0.0.1:{port}/metrics")]);
    assert_eq!(status, 200);
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; scripts/setup.sh installs it)");
    use std::io::Write;
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    let src: gst::Element = element(&run.pipeline, "metrics_src");
    let mux = src
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("metrics_src-mux")
        .unwrap();
    let batches = mux.property::<u64>("batches");
    assert!(batches >= 20, "{batches} batches");
    assert_eq!(
        value(r#"ferrostream_streammux_batches_total{element="metrics_src-mux"}"#),
        batches as f64
    );
    let pgie: gst::Element = element(&run.pipeline, "metrics_pgie");
    let _ = pgie;
    // Every frame that left the inference element reached the identity.
    let frames = run.seen.lock().unwrap().frames.values().sum::<u64>();
    assert_eq!(
        value(r#"ferrostream_inference_frames_total{element="metrics_pgie"}"#),
        frames as f64
    );
    let (_, info) = request(port, "GET", "/api/v1/stream/get-stream-info", None);
    for (i, camera) in ["a", "b"].iter().enumerate() {
        let from_rest = info["stream-info"]["stream-info"][i]["frames"]
            .as_f64()
            .unwrap();
        let series = format!(
            r#"ferrostream_source_frames_total{{camera_id="{camera}",element="metrics_src-source-{i}",source_id="{i}"}}"#
        );
        assert_eq!(value(&series), from_rest, "{series}");
        assert!(from_rest >= 20.0, "{camera}: {from_rest} frames");
    }
    assert!(value("process_resident_memory_bytes") > 1e6);
    let (status, json) = request(port, "GET", "/api/v1/metrics", None);
    assert_eq!(status, 200);
    assert_eq!(json["metrics-info"]["stream-count"], 2);
}

/// What a finished recording reports.
struct Recording {
    file: PathBuf,
    start: u64,
    end: u64,
}

fn recording(s: &gst::StructureRef) -> Recording {
    Recording {
        file: PathBuf::from(s.get::<String>("file").unwrap()),
        start: s.get::<u64>("start-pts").unwrap(),
        end: s.get::<u64>("end-pts").unwrap(),
    }
}

/// The buffers at the end of `tail` after `file` (PTS in ns, whether a keyframe). A demuxer may
/// leave delta frames without a PTS.
fn buffers(file: &Path, tail: &str) -> Vec<(Option<u64>, bool)> {
    let desc = format!(
        "filesrc location={} ! {tail} ! appsink name=sink",
        quoted(file)
    );
    pull_samples(&desc, usize::MAX)
        .iter()
        .map(|sample| {
            let b = sample.buffer().unwrap();
            let key = !b.flags().contains(gst::BufferFlags::DELTA_UNIT);
            (b.pts().map(gst::ClockTime::nseconds), key)
        })
        .collect()
}

/// Decodes `file` with GStreamer; returns the frames' PTS (in the file's time).
fn decode(file: &Path) -> Vec<u64> {
    buffers(file, "decodebin ! videoconvert")
        .into_iter()
        .map(|(pts, _)| pts.expect("decoded frames have a PTS"))
        .collect()
}

/// Keyframe times (PTS, ns) of the video of `file`, as its parser marks them.
fn keyframes(file: &Path) -> Vec<u64> {
    buffers(file, "parsebin")
        .into_iter()
        .filter(|&(_, key)| key)
        .map(|(pts, _)| pts.expect("keyframes have a PTS"))
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A recording asked for over REST: the file decodes from its first frame, starts at a
/// keyframe at or before the trigger minus the cache, and lasts to the trigger plus the
/// duration (within a GOP).
#[test]
fn smart_record_over_rest() {
    let port = free_port();
    let dir = temp_dir("record-rest");
    let camera = media("vtest.avi");
    let cache = 2u64;
    let duration = 2u64;
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port={port} uri-list={} sensor-id-list=phone \
             record-cache={cache} record-dir={} record-container=mkv file-loop=true \
         ! fakesink name=sink sync=true",
        file_uri(&camera),
        quoted(&dir),
    ));
    // Played in real time (10 frames/s): after 4 s the ring holds more than the cache.
    run.wait("4 s of frames", Duration::from_secs(60), |r| {
        r.frames(0) >= 40
    });
    let (status, json) = request(
        port,
        "POST",
        "/api/v1/record/start",
        Some(&format!(
            r#"{{"stream":{{"camera_id":"phone","duration":{duration}}}}}"#
        )),
    );
    assert_eq!(status, 200, "{json}");
    let file = PathBuf::from(json["file"].as_str().unwrap());
    let mut messages = Vec::new();
    let named = |all: &[gst::Structure], name: &str| -> Vec<gst::Structure> {
        all.iter().filter(|s| s.name() == name).cloned().collect()
    };
    run.wait("a finished recording", Duration::from_secs(60), |r| {
        r.messages(&mut messages);
        !named(&messages, "rsurisrcbin-record-done").is_empty()
    });
    let started = named(&messages, "rsurisrcbin-record-started");
    let done = named(&messages, "rsurisrcbin-record-done");
    let r = recording(&done[0]);
    assert_eq!(r.file, file);
    assert_eq!(done[0].get::<String>("camera-id").unwrap(), "phone");
    assert!(
        file.exists()
            && !dir
                .join(format!(
                    ".{}.part",
                    file.file_name().unwrap().to_string_lossy()
                ))
                .exists()
    );
    let trigger = started
        .first()
        .map(|s| s.get::<u64>("trigger-pts").unwrap())
        .expect("a record-started message");
    let second = 1_000_000_000u64;
    // The camera's keyframes: the file must start at the last one at or before trigger - cache.
    let keys = keyframes(&camera);
    let gop = keys.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(second);
    let expected_start = keys
        .iter()
        .copied()
        .filter(|&k| k <= trigger.saturating_sub(cache * second))
        .max()
        .unwrap_or(keys[0]);
    assert_eq!(
        r.start, expected_start,
        "keyframes {keys:?}, trigger {trigger}"
    );
    assert!(
        r.end + second / 10 >= trigger + duration * second,
        "{} < {}",
        r.end,
        trigger + duration * second
    );
    assert!(r.end <= trigger + duration * second + gop);
    let frames = decode(&file);
    assert!(!frames.is_empty());
    let span = frames.last().unwrap() - frames.first().unwrap();
    let expected = r.end - r.start;
    assert!(
        span.abs_diff(expected) <= second / 10,
        "file spans {span} ns, recorded {expected} ns"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A line crossing in the vtest analytics configuration starts a recording; crossings within a
/// recording extend it: one file per crossing window.
#[test]
fn smart_record_on_line_crossings() {
    let dir = temp_dir("record-crossing");
    let cache = 1u64;
    let duration = 3u64;
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port=0 uri-list={} record-cache={cache} \
             record-duration={duration} record-dir={} record-container=mkv record-on=line-crossing \
         ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} ! rstracker \
         ! rsanalytics config-file-path={} ! identity eos-after=300 ! fakesink name=sink sync=false",
        vtest_uri(),
        quoted(&dir),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        quoted(&repo_root().join("pipelines/analytics_vtest.txt")),
    ));
    let bus = run.pipeline.bus().unwrap();
    let mut crossings = Vec::new();
    let mut done = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let m = bus.timed_pop(gst::ClockTime::from_mseconds(200));
        assert!(Instant::now() < deadline, "no end within 600 s");
        let Some(m) = m else { continue };
        match m.view() {
            gst::MessageView::Error(e) => panic!("{} {:?}", e.error(), e.debug()),
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Element(e) => match e.structure() {
                Some(s) if s.name() == "rsanalytics-line-crossing" => {
                    crossings.push(s.get::<u64>("pts").unwrap())
                }
                Some(s) if s.name() == "rsurisrcbin-record-done" => done.push(recording(s)),
                _ => {}
            },
            _ => {}
        }
    }
    // The recording open at the end is closed with the stream: wait for its file.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let writing = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".part"));
        if !writing {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "files still being written after 20 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    while let Some(m) = bus.pop_filtered(&[gst::MessageType::Element]) {
        if let Some(s) = m
            .structure()
            .filter(|s| s.name() == "rsurisrcbin-record-done")
        {
            done.push(recording(s));
        }
    }
    drop(run);
    assert!(crossings.len() >= 4, "{crossings:?}");
    let second = 1_000_000_000u64;
    let mut windows: Vec<(u64, u64, u64)> = Vec::new(); // first trigger, last trigger, end
    for &t in &crossings {
        match windows.last_mut() {
            Some(w) if t <= w.2 => {
                w.1 = t;
                w.2 = w.2.max(t + duration * second);
            }
            _ => windows.push((t, t, t + duration * second)),
        }
    }
    done.sort_by_key(|r| (r.start, r.end));
    let keys = keyframes(&media("vtest.avi"));
    let spans: Vec<_> = done.iter().map(|r| (r.start, r.end)).collect();
    assert_eq!(
        done.len(),
        windows.len(),
        "crossings at {crossings:?}, files {spans:?}"
    );
    for (r, w) in done.iter().zip(&windows) {
        assert!(
            r.start <= w.0.saturating_sub(cache * second),
            "starts {} after {}",
            r.start,
            w.0
        );
        // The last keyframe at or before the first trigger minus the cache (vtest.avi has one
        // every 25 s).
        let expected = keys
            .iter()
            .copied()
            .filter(|&k| k <= w.0.saturating_sub(cache * second))
            .max()
            .unwrap();
        assert_eq!(r.start, expected, "keyframes {keys:?}");
        assert!(r.end <= w.2 + second / 10, "{} past {}", r.end, w.2);
        let frames = decode(&r.file);
        // The file covers its crossings.
        let span = frames.last().unwrap() - frames.first().unwrap();
        assert!(r.start + span >= w.1, "{}: {span} ns", r.file.display());
        if std::ptr::eq(w, windows.last().unwrap()) {
            // The last one ends with the stream, wherever the decoder stopped reading it.
            continue;
        }
        assert!(
            frames.len() as u64 >= (r.end - r.start) / (second / 10),
            "{}: {} frames from {} to {} ({frames:?})",
            r.file.display(),
            frames.len(),
            r.start,
            r.end
        );
    }
    // All but the last window ran to its end.
    for (r, w) in done.iter().zip(&windows).take(windows.len() - 1) {
        assert!(
            r.end + second / 5 >= w.2,
            "{} ends at {}, window at {}",
            r.file.display(),
            r.end,
            w.2
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A disk that fails while recording ends the recording with a message; the stream goes on.
#[test]
fn smart_record_write_failure_keeps_the_stream() {
    if !ferrostream_tests::is_child() {
        ferrostream_tests::assert_passes_in_child(
            "smart_record_write_failure_keeps_the_stream",
            &[],
        );
        return;
    }
    // Files may grow to 64 KiB in this process: the recording's writes fail beyond it (EFBIG,
    // as a full disk fails with ENOSPC), and the signal that would kill the process is ignored.
    // SAFETY: plain libc calls on this process.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: 64 << 10,
            rlim_max: 64 << 10,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let dir = temp_dir("record-full");
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=src rest-port=0 uri-list={} sensor-id-list=cam record-cache=2 \
             record-dir={} record-container=mkv file-loop=true ! fakesink name=sink sync=false",
        vtest_uri(),
        quoted(&dir),
    ));
    run.wait("3 s of frames", Duration::from_secs(60), |r| {
        r.frames(0) >= 30
    });
    let src: gst::Element = element(&run.pipeline, "src");
    let file = src.emit_by_name::<Option<String>>("start-record", &[&"cam", &10u32]);
    assert!(file.is_some());
    let mut messages = Vec::new();
    run.wait("the failure", Duration::from_secs(60), |r| {
        r.messages(&mut messages);
        messages
            .iter()
            .any(|s| s.name() == "rsurisrcbin-record-failed")
    });
    let failed: Vec<_> = messages
        .iter()
        .filter(|s| s.name() == "rsurisrcbin-record-failed")
        .collect();
    let reason = failed[0].get::<String>("reason").unwrap();
    assert!(reason.contains("writ"), "{reason}");
    let before = run.frames(0);
    run.wait("frames after the failure", Duration::from_secs(30), |r| {
        r.frames(0) > before + 10
    });
    // No partial file is left.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `drop-frame-interval=2` reaches every camera: each gives every other frame of the file (the
/// first of it included), exactly; set while PLAYING, it reaches the cameras playing.
#[test]
fn drop_frame_interval_halves_every_camera() {
    let frames = pull_samples(
        &format!("rsurisrcbin uri={} ! appsink name=sink", vtest_uri()),
        usize::MAX,
    )
    .len() as u64;
    assert!(frames > 100, "vtest.avi gave {frames} frames");
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=halving rest-port=0 batch-size=2 batched-push-timeout=100000 \
             uri-list={v},{v} sensor-id-list=a,b drop-frame-interval=2 \
         ! fakesink name=sink sync=false",
        v = vtest_uri()
    ));
    let half = frames.div_ceil(2);
    run.wait(
        "every other frame of both cameras",
        Duration::from_secs(60),
        |r| r.frames(0) >= half && r.frames(1) >= half,
    );
    // Nothing more comes: the files ended.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!((run.frames(0), run.frames(1)), (half, half), "of {frames}");
    let bin: gst::Element = element(&run.pipeline, "halving");
    bin.set_property("drop-frame-interval", 3u32);
    for id in 0..2 {
        let camera: gst::Element = element(&run.pipeline, &format!("halving-source-{id}"));
        assert_eq!(
            camera.property::<u32>("drop-frame-interval"),
            3,
            "camera {id}"
        );
    }
}
