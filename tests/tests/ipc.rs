// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsipcsink / rsipcsrc: frames and metadata cross to consumer processes (this test binary run
//! again as `ipc_consumer`). Detections computed in the consumer equal those computed in one
//! process; metadata arrives as it left; a consumer killed mid-stream leaves the producer
//! running and a new one attaches while it plays; garbage and stuck consumers are disconnected
//! with a warning; the socket is owner-only. The GPU tests are in gpu_ipc.rs.

use std::path::Path;
use std::time::{Duration, Instant};

use ferrostream_ipc::socket::Connection;
use ferrostream_ipc::wire::{ToConsumer, ToProducer};
use ferrostream_tests::ipc::{self, Producer, WATCHDOG, count_rendered, temp_dir, wait_until};
use ferrostream_tests::{is_child, media, model, quoted, repo_root, watchdog};
use gst::prelude::*;

fn coco() -> String {
    format!(
        "config-file-path={} onnx-file={} labelfile-path={}",
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt"))
    )
}

/// At least `frames` frames of the vtest footage, batched by rsstreammux. (The frame that
/// meets `identity`'s EOS is not always the same one: a few more are taken and only the first
/// `frames` are compared.)
fn footage(frames: u32) -> String {
    format!(
        "filesrc location={} ! decodebin ! videoconvert ! video/x-raw,format=I420 \
         ! identity eos-after={} ! m.sink_0 rsstreammux name=m batch-size=1",
        quoted(&media("vtest.avi")),
        frames + 3
    )
}

/// The consumer side, run in a child process by the tests below.
#[test]
#[ignore = "run as a child process by the tests below"]
fn ipc_consumer() {
    if is_child() {
        ipc::run_consumer_child();
    }
}

fn read_frames(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The objects of a frame line, as (class, box) with the box rounded to 1/100 px.
fn objects(frame: &serde_json::Value) -> Vec<(i64, [i64; 4])> {
    frame["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let b = &o["bbox"];
            let r = |k: &str| (b[k].as_f64().unwrap() * 100.0).round() as i64;
            (
                o["class_id"].as_i64().unwrap(),
                [r("left"), r("top"), r("width"), r("height")],
            )
        })
        .collect()
}

#[test]
fn detections_in_a_consumer_process_equal_those_in_one_process() {
    let _ = model("coco_ssdlite_mobilenet_v2.onnx");
    let dir = temp_dir("detect");
    let frames = 12;
    // One process.
    let reference = dir.join("reference.jsonl");
    let one = Producer::start(&format!(
        "{} ! rstrtinfer {} ! rsmetaexport location={} ! rsipcsink name=ipc socket-path={} sync=false",
        footage(frames),
        coco(),
        quoted(&reference),
        quoted(&dir.join("unused.sock"))
    ));
    one.run_to_eos();
    drop(one);
    // The detector in the consumer process.
    let socket = dir.join("cam.sock");
    let received = dir.join("consumer.jsonl");
    let producer = Producer::start(&format!(
        "{} ! rsipcsink name=ipc socket-path={} sync=false",
        footage(frames),
        quoted(&socket)
    ));
    let consumer = ipc::spawn_consumer(&socket, &received, &[("FS_IPC_INFER", coco())]);
    producer.wait_for_consumers(1);
    let warnings = producer.run_to_eos();
    assert!(consumer.wait(WATCHDOG), "the consumer process failed");
    assert!(warnings.is_empty(), "{warnings:?}");
    let (want, got) = (read_frames(&reference), read_frames(&received));
    let n = frames as usize;
    assert!(
        want.len() >= n && got.len() >= n,
        "{} and {} frames",
        want.len(),
        got.len()
    );
    let mut people = 0;
    for (i, (w, g)) in want.iter().zip(&got).take(n).enumerate() {
        assert_eq!(g["frame_num"], w["frame_num"], "frame {i}");
        assert_eq!(g["pts_ns"], w["pts_ns"], "frame {i}");
        assert_eq!(
            objects(g),
            objects(w),
            "frame {i}: the consumer's detections"
        );
        people += objects(w).iter().filter(|(c, _)| *c == 0).count();
    }
    assert!(
        people >= frames as usize,
        "people are found in vtest ({people})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metadata_reaches_the_consumer_as_it_left_the_producer() {
    let _ = model("coco_ssdlite_mobilenet_v2.onnx");
    let dir = temp_dir("meta");
    let socket = dir.join("cam.sock");
    let (sent, received) = (dir.join("sent.jsonl"), dir.join("received.jsonl"));
    let producer = Producer::start(&format!(
        "{} ! rstrtinfer {} ! rstracker ! rsmetaexport location={} \
         ! rsipcsink name=ipc socket-path={} sync=false",
        footage(10),
        coco(),
        quoted(&sent),
        quoted(&socket)
    ));
    let consumer = ipc::spawn_consumer(&socket, &received, &[]);
    producer.wait_for_consumers(1);
    producer.run_to_eos();
    assert!(consumer.wait(WATCHDOG), "the consumer process failed");
    let (sent, received) = (read_frames(&sent), read_frames(&received));
    assert!(sent.len() >= 10);
    assert!(
        sent.iter().any(|f| !objects(f).is_empty()),
        "objects were found"
    );
    assert!(
        sent.iter()
            .flat_map(|f| f["objects"].as_array().unwrap())
            .any(|o| o["object_id"].as_u64().is_some()),
        "the tracker gave ids"
    );
    // The producer's rsmetaexport may see one frame more than its sink takes (see `footage`).
    assert!(received.len() >= 10 && received.len() + 1 >= sent.len());
    assert_eq!(
        received,
        sent[..received.len()],
        "the consumer's metadata equals the producer's"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live producer of small frames.
fn live_producer(socket: &Path, extra: &str) -> Producer {
    Producer::start(&format!(
        "videotestsrc is-live=true ! video/x-raw,format=RGBA,width=320,height=240,framerate=60/1 \
         ! rsipcsink name=ipc socket-path={} {extra}",
        quoted(socket)
    ))
}

#[test]
fn a_killed_consumer_leaves_the_producer_running_and_others_attach_while_it_plays() {
    use std::sync::atomic::Ordering;
    let dir = temp_dir("kill");
    let socket = dir.join("cam.sock");
    let producer = live_producer(&socket, "max-buffers=2");
    let rendered = count_rendered(&producer);
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    for cycle in 0..5 {
        let out = dir.join(format!("c{cycle}.jsonl"));
        let consumer = ipc::spawn_consumer(&socket, &out, &[]);
        producer.wait_for_consumers(1);
        ipc::wait_for_frames(&out, 10);
        consumer.kill();
        producer.wait_for_consumers(0);
        let before = rendered.load(Ordering::Relaxed);
        wait_until("the producer keeps running", || {
            rendered.load(Ordering::Relaxed) >= before + 10
        });
    }
    let warnings = producer.warnings();
    assert!(
        warnings.is_empty(),
        "a dying consumer is not a warning: {warnings:?}"
    );
    assert!(socket.exists());
    drop(producer);
    assert!(!socket.exists(), "the socket is removed at stop");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Connects as a consumer by hand and reads up to the first buffer.
fn raw_consumer(socket: &Path) -> (Connection, u64) {
    let conn = Connection::connect(socket, Duration::from_secs(5)).unwrap();
    let hello = ToProducer::Hello {
        version: ferrostream_ipc::wire::VERSION,
    };
    conn.send(&hello.encode(), &[], Duration::from_secs(5))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "no buffer arrived");
        let Some(m) = conn
            .receive(
                ferrostream_ipc::wire::MAX_MESSAGE,
                Some(Duration::from_millis(100)),
            )
            .unwrap()
        else {
            continue;
        };
        if let ToConsumer::Buffer(b) = ToConsumer::decode(&m.bytes).unwrap() {
            return (conn, b.seq);
        }
    }
}

#[test]
fn the_socket_is_owner_only_and_a_consumer_sending_garbage_is_disconnected_with_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("garbage");
    let socket = dir.join("cam.sock");
    let producer = live_producer(&socket, "");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "owner-only socket");
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    let (conn, seq) = raw_consumer(&socket);
    conn.send(
        &ToProducer::Release { seq }.encode(),
        &[],
        Duration::from_secs(5),
    )
    .unwrap();
    conn.send(b"\xffnot json", &[], Duration::from_secs(5))
        .unwrap();
    producer.wait_for_consumers(0);
    let bus = producer.pipeline.bus().unwrap();
    let warning = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(10),
            &[gst::MessageType::Warning],
        )
        .expect("a warning");
    let gst::MessageView::Warning(w) = warning.view() else {
        unreachable!()
    };
    assert!(w.error().to_string().contains("garbage"), "{}", w.error());
    // The producer goes on serving: a well-behaved consumer still gets buffers.
    let (_conn, _) = raw_consumer(&socket);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_consumer_that_falls_behind_is_skipped_when_leaky_and_dropped_as_stuck_otherwise() {
    let dir = temp_dir("behind");
    // Leaky: it keeps at most max-buffers unreleased buffers and stays attached.
    let socket = dir.join("leaky.sock");
    let producer = live_producer(&socket, "max-buffers=3 leaky=true");
    let rendered = count_rendered(&producer);
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    let (conn, _) = raw_consumer(&socket);
    wait_until("the producer runs on", || {
        rendered.load(std::sync::atomic::Ordering::Relaxed) >= 60
    });
    let mut buffers = 1;
    while let Some(m) = conn
        .receive(ferrostream_ipc::wire::MAX_MESSAGE, None)
        .unwrap()
    {
        if matches!(ToConsumer::decode(&m.bytes).unwrap(), ToConsumer::Buffer(_)) {
            buffers += 1;
        }
    }
    assert_eq!(
        buffers, 3,
        "a consumer behind gets no more than max-buffers"
    );
    assert_eq!(producer.consumers(), 1, "and stays attached");
    drop(producer);

    // Not leaky: the producer waits block-timeout, then drops it with a warning and runs on.
    let socket = dir.join("blocking.sock");
    let producer = live_producer(&socket, "max-buffers=2 block-timeout=300");
    let rendered = count_rendered(&producer);
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    let (stuck, _) = raw_consumer(&socket);
    producer.wait_for_consumers(0);
    // It is told: its end reads the end of the connection (after what was sent before).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match stuck.receive(
            ferrostream_ipc::wire::MAX_MESSAGE,
            Some(Duration::from_millis(100)),
        ) {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => panic!("{e}"),
            Ok(_) => assert!(Instant::now() < deadline, "the connection did not end"),
        }
    }
    let before = rendered.load(std::sync::atomic::Ordering::Relaxed);
    wait_until("the producer runs on", || {
        rendered.load(std::sync::atomic::Ordering::Relaxed) >= before + 10
    });
    let warnings = producer.warnings();
    assert!(warnings.iter().any(|w| w.contains("stuck")), "{warnings:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_consumer_attaching_after_the_end_of_stream_gets_the_end_of_stream() {
    let dir = temp_dir("late");
    let socket = dir.join("cam.sock");
    let producer = Producer::start(&format!(
        "videotestsrc num-buffers=5 ! video/x-raw,width=64,height=48 \
         ! rsipcsink name=ipc socket-path={} sync=false",
        quoted(&socket)
    ));
    producer.run_to_eos();
    let conn = Connection::connect(&socket, Duration::from_secs(5)).unwrap();
    let mut messages = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while messages.len() < 2 {
        assert!(Instant::now() < deadline, "got only {messages:?}");
        if let Some(m) = conn
            .receive(
                ferrostream_ipc::wire::MAX_MESSAGE,
                Some(Duration::from_millis(100)),
            )
            .unwrap()
        {
            messages.push(ToConsumer::decode(&m.bytes).unwrap());
        }
    }
    assert!(matches!(messages[0], ToConsumer::Hello { .. }));
    assert_eq!(messages[1], ToConsumer::Eos);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_consumer_restamps_to_its_own_running_time() {
    ferrostream_tests::init();
    let dir = temp_dir("restamp");
    let socket = dir.join("cam.sock");
    let producer = live_producer(&socket, "");
    let rendered = count_rendered(&producer);
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    // The producer has run for a second (60 frames) before the consumer comes.
    wait_until("the producer runs", || {
        rendered.load(std::sync::atomic::Ordering::Relaxed) >= 60
    });
    let consumer = gst::parse::launch(&format!(
        "rsipcsrc socket-path={} ! appsink name=sink sync=true max-buffers=1 drop=true",
        quoted(&socket)
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink = consumer
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    consumer.set_state(gst::State::Playing).unwrap();
    let first = sink
        .try_pull_sample(gst::ClockTime::from_seconds(10))
        .expect("a frame within 10 s (sync=true: a frame stamped a second ahead would wait)");
    let pts = first.buffer().unwrap().pts().unwrap();
    // Stamped at its arrival here, so no later than this pipeline's running time now. (At the
    // producer it was stamped a second or more into its own run.)
    let now = consumer.clock().unwrap().time() - consumer.base_time().unwrap();
    assert!(
        pts <= now,
        "the first frame is stamped {pts}, after this pipeline's running time {now}"
    );
    let next = sink
        .try_pull_sample(gst::ClockTime::from_seconds(10))
        .unwrap();
    let step = next.buffer().unwrap().pts().unwrap().saturating_sub(pts);
    assert!(
        step > gst::ClockTime::ZERO,
        "frames keep their spacing ({step})"
    );
    consumer.set_state(gst::State::Null).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_producer_whose_caps_and_memory_disagree_is_an_error_not_a_misread() {
    use ferrostream_ipc::socket::Listener;
    use ferrostream_ipc::wire::{Buffer, Memory, Surface};
    ferrostream_tests::init();
    let dir = temp_dir("hostile-producer");
    let socket = dir.join("cam.sock");
    let listener = Listener::bind(&socket).unwrap();
    let consumer = gst::parse::launch(&format!(
        "rsipcsrc socket-path={} ! fakesink",
        quoted(&socket)
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    consumer.set_state(gst::State::Playing).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let conn = loop {
        if let Some(c) = listener.accept().unwrap() {
            break c;
        }
        assert!(Instant::now() < deadline, "the consumer did not connect");
        std::thread::sleep(Duration::from_millis(10));
    };
    let t = Duration::from_secs(5);
    let send = |m: ToConsumer, fds: &[std::os::fd::BorrowedFd<'_>]| {
        conn.send(&m.encode(), fds, t).unwrap()
    };
    send(
        ToConsumer::Hello {
            version: ferrostream_ipc::wire::VERSION,
        },
        &[],
    );
    // NVMM caps, but the allocation is a memory file: the consumer must not hand its bytes on
    // as an NvBufSurface (whose pointers the producer would choose).
    send(
        ToConsumer::Caps {
            caps: "video/x-raw(memory:NVMM), format=NV12, width=64, height=48, framerate=30/1"
                .into(),
        },
        &[],
    );
    let segment = ferrostream_ipc::host::Segment::create(8192).unwrap();
    send(
        ToConsumer::Allocation {
            id: 1,
            size: 8192,
            memory: Memory::Host,
            event: None,
        },
        &[std::os::fd::AsFd::as_fd(&segment)],
    );
    send(
        ToConsumer::Buffer(Box::new(Buffer {
            seq: 1,
            pts: Some(0),
            dts: None,
            duration: None,
            flags: 0,
            surfaces: vec![Surface {
                allocation: 1,
                offset: 0,
                size: 4608,
                planes: Vec::new(),
                caps: String::new(),
                source_id: 0,
                stream_id: None,
                pts: None,
                duration: None,
            }],
            frames: Vec::new(),
            surface_index: Vec::new(),
        })),
        &[],
    );
    let error = consumer
        .bus()
        .unwrap()
        .timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Error])
        .expect("an error");
    let gst::MessageView::Error(e) = error.view() else {
        unreachable!()
    };
    let text = format!("{:?}", e.debug());
    assert!(text.contains("device memory"), "{text}");
    consumer.set_state(gst::State::Null).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the tests below take at most (a few seconds each when well).
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// `n` detections of the same JSON length each (so that sizes can be computed), told apart by
/// their class and left edge.
fn crowd(n: usize) -> Vec<ferrostream_core::Object> {
    let label: std::sync::Arc<str> = "person".into();
    (0..n)
        .map(|i| {
            let bbox = ferrostream_core::BBox::new((i % 10) as f32, 1.0, 8.0, 8.0);
            ferrostream_core::Object::new((i % 10) as i32, label.clone(), 0.5, bbox, 1)
        })
        .collect()
}

/// The length of a buffer message carrying `frames` and nothing else: what the metadata takes
/// of a message.
fn metadata_bytes(frames: &[ferrostream_core::Frame]) -> usize {
    let lines = frames
        .iter()
        .map(|f| {
            let mut line = Vec::new();
            ferrostream_core::json::write_frame_line(&mut line, f).unwrap();
            line.pop();
            String::from_utf8(line).unwrap()
        })
        .collect();
    ToConsumer::Buffer(Box::new(ferrostream_ipc::wire::Buffer {
        seq: 0,
        pts: None,
        dts: None,
        duration: None,
        flags: 0,
        surfaces: Vec::new(),
        frames: lines,
        surface_index: vec![0; frames.len()],
    }))
    .encode()
    .len()
}

/// A producer of `buffers` batches of `sources` small test frames (rsstreammux), each frame of
/// buffer `i` given `objects(i)` detections just before `rsipcsink`.
fn producer_of_crowds(
    socket: &Path,
    sources: u32,
    buffers: u32,
    objects: impl Fn(u64) -> usize + Send + Sync + 'static,
) -> Producer {
    producer_of(socket, sources, buffers, move |i, batch| {
        for frame in &mut batch.frames {
            frame.objects = crowd(objects(i));
        }
    })
}

/// A producer of `buffers` batches of `sources` small test frames (rsstreammux), the batch of
/// buffer `i` changed by `change(i, batch)` just before `rsipcsink`.
fn producer_of(
    socket: &Path,
    sources: u32,
    buffers: u32,
    change: impl Fn(u64, &mut ferrostream_core::Batch) + Send + Sync + 'static,
) -> Producer {
    ferrostream_tests::init();
    let inputs: String = (0..sources)
        .map(|i| {
            format!(
                "videotestsrc num-buffers={buffers} \
                 ! video/x-raw,format=RGBA,width=64,height=48,framerate=30/1 ! m.sink_{i} "
            )
        })
        .collect();
    let pipeline = gst::parse::launch(&format!(
        "{inputs} rsstreammux name=m batch-size={sources} \
         ! rsipcsink name=ipc max-buffers=16 socket-path={} sync=false",
        quoted(socket)
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink = pipeline.by_name("ipc").unwrap();
    let count = std::sync::atomic::AtomicU64::new(0);
    // Before the pipeline starts: the first buffer (the preroll) gets its objects too.
    sink.static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            let i = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some(buffer) = info.buffer_mut()
                && let Some(mut meta) = buffer.make_mut().meta_mut::<ferrostream_core::BatchMeta>()
            {
                change(i, meta.batch_mut());
            }
            gst::PadProbeReturn::Ok
        });
    pipeline.set_state(gst::State::Paused).unwrap();
    Producer { pipeline, sink }
}

/// Runs `producer` to its end with an `rsipcsrc` consumer in this process attached: the
/// producer's warnings, the frames of each buffer the consumer received, and whether the
/// consumer was still attached at the producer's end.
fn cross(
    producer: &Producer,
    socket: &Path,
) -> (Vec<String>, Vec<Vec<ferrostream_core::Frame>>, bool) {
    let consumer = gst::parse::launch(&format!(
        "rsipcsrc socket-path={} ! appsink name=sink sync=false",
        quoted(socket)
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink = consumer
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    consumer.set_state(gst::State::Playing).unwrap();
    producer.wait_for_consumers(1);
    let warnings = producer.run_to_eos();
    let attached = producer.consumers() == 1;
    let mut buffers = Vec::new();
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(30)) {
        let meta = ferrostream_core::BatchMeta::of(sample.buffer().unwrap()).expect("metadata");
        buffers.push(meta.batch().frames.clone());
    }
    let error = consumer
        .bus()
        .unwrap()
        .pop_filtered(&[gst::MessageType::Error]);
    if let Some(m) = error
        && let gst::MessageView::Error(e) = m.view()
    {
        panic!("consumer error: {} ({:?})", e.error(), e.debug());
    }
    assert!(sink.is_eos(), "the consumer did not reach the end");
    consumer.set_state(gst::State::Null).unwrap();
    (warnings, buffers, attached)
}

/// [`producer_of_crowds`] on a socket of its own, run to its end through [`cross`].
fn cross_crowds(
    name: &str,
    sources: u32,
    buffers: u32,
    objects: impl Fn(u64) -> usize + Send + Sync + 'static,
) -> (Vec<String>, Vec<Vec<ferrostream_core::Frame>>, bool) {
    let dir = temp_dir(name);
    let socket = dir.join("cam.sock");
    let producer = producer_of_crowds(&socket, sources, buffers, objects);
    let crossed = cross(&producer, &socket);
    let _ = std::fs::remove_dir_all(&dir);
    crossed
}

#[test]
fn a_frame_of_5000_objects_crosses_whole() {
    let _watchdog = watchdog("a_frame_of_5000_objects_crosses_whole", TEST_LIMIT);
    let (warnings, buffers, _) = cross_crowds("crowd", 1, 3, |_| 5000);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(buffers.len(), 3, "every buffer crossed");
    for frames in &buffers {
        assert_eq!(frames.len(), 1);
        assert_eq!(
            frames[0].objects,
            crowd(5000),
            "the objects as they were sent"
        );
    }
}

#[test]
fn a_batch_whose_metadata_nears_the_message_limit_crosses_whole() {
    use ferrostream_ipc::wire::MAX_MESSAGE;
    let _watchdog = watchdog(
        "a_batch_whose_metadata_nears_the_message_limit_crosses_whole",
        TEST_LIMIT,
    );
    // Four frames with as many objects each as leave 64 KiB of the limit for the rest.
    let size = |n| {
        let mut frame = ferrostream_core::Frame::new(0, 0, 64, 48);
        frame.objects = crowd(n);
        metadata_bytes(&vec![frame; 4])
    };
    let per_object = (size(1001) - size(1)) / 4000;
    let n = (MAX_MESSAGE - (64 << 10) - size(1)) / (4 * per_object) + 1;
    let (warnings, buffers, _) = cross_crowds("near-limit", 4, 2, move |_| n);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(buffers.len(), 2, "every buffer crossed");
    for frames in &buffers {
        assert_eq!(frames.len(), 4);
        for f in frames {
            assert_eq!(f.objects, crowd(n), "frame {}", f.source_id);
        }
        let bytes = metadata_bytes(frames);
        assert!(
            bytes > MAX_MESSAGE - (128 << 10) && bytes <= MAX_MESSAGE,
            "the metadata took {bytes} bytes of a message"
        );
    }
}

#[test]
fn metadata_over_the_message_limit_is_a_warning_naming_its_size_and_the_consumer_stays() {
    use ferrostream_ipc::wire::MAX_MESSAGE;
    let _watchdog = watchdog(
        "metadata_over_the_message_limit_is_a_warning_naming_its_size_and_the_consumer_stays",
        TEST_LIMIT,
    );
    let mut frame = ferrostream_core::Frame::new(0, 0, 64, 48);
    frame.objects = crowd(1000);
    // Buffer 2 of 5 carries a frame of about 5 MiB of metadata; the others 10 objects.
    let over = (5 << 20) / (metadata_bytes(std::slice::from_ref(&frame)) / 1000);
    let (warnings, buffers, attached) =
        cross_crowds("over-limit", 1, 5, move |i| if i == 2 { over } else { 10 });
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let numbers: Vec<usize> = warnings[0]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        numbers.contains(&MAX_MESSAGE)
            && numbers.iter().any(|&n| n > MAX_MESSAGE && n < 6 << 20)
            && warnings[0].contains("bytes"),
        "the warning names the size and the limit: {}",
        warnings[0]
    );
    assert!(attached, "the consumer stays attached: {warnings:?}");
    assert_eq!(buffers.len(), 4, "the other buffers crossed");
    assert!(buffers.iter().all(|f| f[0].objects == crowd(10)));
}

#[test]
fn a_consumer_or_producer_of_another_protocol_version_is_told_which() {
    use ferrostream_ipc::socket::Listener;
    use ferrostream_ipc::wire::VERSION;
    use std::os::fd::{AsFd, AsRawFd};
    let _watchdog = watchdog(
        "a_consumer_or_producer_of_another_protocol_version_is_told_which",
        TEST_LIMIT,
    );
    let dir = temp_dir("version");
    // A consumer of any version reads the producer's hello as it is (one plain JSON message).
    let socket = dir.join("new.sock");
    let producer = live_producer(&socket, "");
    let conn = Connection::connect(&socket, Duration::from_secs(5)).unwrap();
    ferrostream_ipc::socket::wait_for(conn.as_fd(), libc::POLLIN, Duration::from_secs(10)).unwrap();
    let mut bytes = [0u8; 256];
    // SAFETY: a valid buffer of its length.
    let n = unsafe { libc::recv(conn.as_fd().as_raw_fd(), bytes.as_mut_ptr().cast(), 256, 0) };
    let hello: serde_json::Value = serde_json::from_slice(&bytes[..n as usize]).unwrap();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["version"], VERSION);
    drop((conn, producer));
    // A consumer of this version names an older producer's version.
    ferrostream_tests::init();
    let socket = dir.join("old.sock");
    let listener = Listener::bind(&socket).unwrap();
    let consumer = gst::parse::launch(&format!(
        "rsipcsrc socket-path={} ! fakesink",
        quoted(&socket)
    ))
    .unwrap();
    consumer.set_state(gst::State::Playing).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let conn = loop {
        if let Some(c) = listener.accept().unwrap() {
            break c;
        }
        assert!(Instant::now() < deadline, "the consumer did not connect");
        std::thread::sleep(Duration::from_millis(10));
    };
    let old = ToConsumer::Hello {
        version: VERSION - 1,
    };
    conn.send(&old.encode(), &[], Duration::from_secs(5))
        .unwrap();
    let error = consumer
        .bus()
        .unwrap()
        .timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Error])
        .expect("an error");
    let gst::MessageView::Error(e) = error.view() else {
        unreachable!()
    };
    let text = format!("{:?}", e.debug());
    assert!(
        text.contains(&format!(
            "protocol version {}, this consumer {VERSION}",
            VERSION - 1
        )),
        "{text}"
    );
    consumer.set_state(gst::State::Null).unwrap();
}

/// What a producer can hold, a consumer can read: the values that once stopped every consumer
/// ("the producer sent unreadable metadata") are either refused where an application sets them
/// (an attribute float past 3.4e38, a 3.4e38 box with an angle, user metadata nested 126 deep)
/// or cross as they were held (a model's raw output with NaN and infinities, keypoints with a
/// NaN position as a pose model may give them).
#[test]
fn metadata_a_producer_holds_a_consumer_reads() {
    use ferrostream_core::edit::{Edit, apply};
    use ferrostream_core::keypoints::{Keypoint, Keypoints};
    use ferrostream_core::{AttributeValue, Batch};
    let _watchdog = watchdog("metadata_a_producer_holds_a_consumer_reads", TEST_LIMIT);
    let refused = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = refused.clone();
    let nested = format!("{}1{}", "[".repeat(126), "]".repeat(126));
    let edits = [
        r#"{"op":"set_object_attribute","frame":0,"object":0,"key":"f","value":[1.0,1e39]}"#
            .to_string(),
        r#"{"op":"add_object","frame":0,"object":{"class_id":0,"label":"x","angle":0.5,
            "bbox":{"left":-1.5e38,"top":0,"width":3.4e38,"height":3.4e38}}}"#
            .to_string(),
        format!(r#"{{"op":"set_frame_user_meta","frame":0,"key":"deep","value":{nested}}}"#),
    ];
    let dir = temp_dir("hostile-meta");
    let socket = dir.join("cam.sock");
    let producer = producer_of(&socket, 1, 3, move |_, batch: &mut Batch| {
        let frame = &mut batch.frames[0];
        frame.objects = crowd(2);
        for edit in &edits {
            let result = Edit::parse(edit.as_bytes()).and_then(|e| apply(batch, e));
            seen.lock().unwrap().push(match result {
                Ok(_) => "accepted".into(),
                Err(e) => e.to_string(),
            });
        }
        let o = &mut batch.frames[0].objects[0];
        o.attributes.insert(
            "tensor:1:out".into(),
            AttributeValue::Floats(vec![0.5, f32::NAN, f32::INFINITY]),
        );
        o.keypoints = Some(Keypoints {
            points: vec![Keypoint {
                name: "nose".into(),
                x: f32::NAN,
                y: 2.0,
                confidence: 0.9,
            }],
            skeleton: std::sync::Arc::from(vec![]),
        });
        o.angle = Some(0.25);
    });
    let (warnings, buffers, attached) = cross(&producer, &socket);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(attached, "the consumer stayed");
    assert_eq!(buffers.len(), 3, "every buffer crossed");
    for frames in &buffers {
        let o = &frames[0].objects[0];
        let Some(AttributeValue::Floats(v)) = o.attributes.get("tensor:1:out") else {
            panic!("{:?}", o.attributes)
        };
        assert!(v[0] == 0.5 && v[1].is_nan() && v[2].is_nan(), "{v:?}");
        assert_eq!(o.angle, Some(0.25));
        assert!(o.corners().iter().flatten().all(|c| c.is_finite()));
        // Keypoints without a finite position are no keypoints to a reader.
        assert_eq!(o.keypoints, None);
        assert_eq!(frames[0].objects.len(), 2, "no object was added");
        assert!(frames[0].user_meta.is_empty() && !o.attributes.contains_key("f"));
    }
    let refused = refused.lock().unwrap().clone();
    assert_eq!(refused.len(), 9, "{refused:?}");
    for (i, why) in refused.iter().enumerate() {
        let expected = [
            "not finite",
            "at most 16777216 pixels",
            "nested 126 levels deep",
        ][i % 3];
        assert!(why.contains(expected), "{expected}: {why}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
