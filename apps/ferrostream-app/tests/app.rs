// SPDX-License-Identifier: MIT OR Apache-2.0
//! `ferrostream-app` end to end, as a user runs it: deepstream-app configurations (written in
//! the shape of NVIDIA's TAO sample configurations, with the project's models) run by the
//! binary, and what they produce checked: the objects equal those of the same pipeline written
//! by hand, KITTI files per frame, an MP4 with the boxes drawn, RTSP output read back by a
//! client, messages received by a real mosquitto, cloud messages from it starting and stopping
//! smart record, the tracker YAML's probation age seen in the track ids, and bad files refused
//! naming their line. Every run has a time limit.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

mod common;

use common::*;

/// 30 s of vtest.avi (pedestrians, 10 frames/s) at 384x288 as H.264 in MP4 with a keyframe
/// every second, made once: long enough that smart record runs within one play of the file.
fn long_clip() -> &'static Path {
    static CLIP: OnceLock<PathBuf> = OnceLock::new();
    CLIP.get_or_init(|| encode_vtest("long-clip", "video/x-raw,width=384,height=288", 300))
}

/// A TAO-sample-shaped configuration: one source, the COCO detector, a 1x1 tiler at the
/// source's size, the OSD, and `sinks`.
fn config(uri: &str, extra: &str, sinks: &str) -> String {
    format!(
        "[application]\nenable-perf-measurement=1\nperf-measurement-interval-sec=1\n{extra}\n\
         [tiled-display]\nenable=1\nrows=1\ncolumns=1\nwidth=768\nheight=576\ngpu-id=0\n\
         nvbuf-memory-type=0\n\n\
         [source0]\nenable=1\ntype=3\nuri={uri}\nnum-sources=1\ngpu-id=0\ncudadec-memtype=0\n\n\
         [streammux]\ngpu-id=0\nlive-source=0\nbatch-size=1\nbatched-push-timeout=40000\n\
         width=1920\nheight=1080\nenable-padding=0\nnvbuf-memory-type=0\n\n\
         [osd]\nenable=1\ngpu-id=0\nborder-width=4\ntext-size=15\ntext-color=1;1;1;1\n\
         text-bg-color=0.3;0.3;0.3;1\nfont=Arial\nshow-clock=0\n\n\
         [primary-gie]\nenable=1\ngpu-id=0\nmodel-engine-file=missing.engine\nbatch-size=1\n\
         bbox-border-color0=1;0;0;1\ngie-unique-id=1\nconfig-file={}\n\n{sinks}\n\
         [tests]\nfile-loop=0\n",
        coco().display()
    )
}

#[test]
fn a_tao_shaped_configuration_finds_what_the_hand_written_pipeline_finds() {
    let dir = scratch("tao");
    let uri = format!("file://{}", clip().display());
    let cfg = dir.join("deepstream_app_source1_coco.txt");
    std::fs::write(
        &cfg,
        config(
            &uri,
            "gie-kitti-output-dir=kitti\nkitti-track-output-dir=tracks\n",
            "[sink0]\nenable=1\ntype=2\nsync=1\nsource-id=0\ngpu-id=0\n\n\
             [sink1]\nenable=1\ntype=3\ncontainer=1\ncodec=1\nenc-type=0\nsync=0\n\
             bitrate=4000000\nprofile=0\noutput-file=out.mp4\nsource-id=0\n\n\
             [tracker]\nenable=1\ntracker-width=640\ntracker-height=384\n\
             ll-lib-file=/opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so\n\
             gpu-id=0\ndisplay-tracking-id=1\n",
        ),
    )
    .unwrap();
    let (ok, stdout, stderr) = app(&cfg, &[]);
    assert!(ok, "the app failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("**PERF:  FPS 0 (Avg)"), "{stdout}");
    assert!(stdout.contains("busiest stage"), "{stdout}");
    assert!(
        stderr.contains("[sink0] type=2: no display here") || std::env::var_os("DISPLAY").is_some()
    );
    assert!(
        stderr.contains("[streammux] width: no effect here"),
        "{stderr}"
    );

    // The same detector written by hand finds the same objects (the KITTI detection files).
    let found = assert_kitti_equals_hand_written(&dir.join("kitti"), &coco());
    let people: usize = found
        .iter()
        .map(|f| f.iter().filter(|o| o.label == "person").count())
        .sum();
    assert!(
        people >= FRAMES * 2,
        "people where the pedestrians are: {people}"
    );
    for n in 0..FRAMES {
        let tracks = kitti(&dir.join(format!("tracks/00_000_{n:06}.txt")), true);
        assert!(tracks.iter().all(|t| t.track.is_some()));
    }

    // The MP4 plays, and the boxes are drawn in the class colour (red) where the objects are.
    let frames = ferrostream_tests::decode_frames(&dir.join("out.mp4"), "RGB", FRAMES);
    let (info, buffer) = &frames[10];
    let map = buffer.map_readable().unwrap();
    let stride = info.stride()[0] as usize;
    let b = kitti(&dir.join("kitti/00_000_000010.txt"), false)
        .into_iter()
        .find(|o| o.label == "person")
        .expect("a person in frame 10")
        .ltrb;
    // The drawn box is the tracker's, which may sit a few pixels from the detection.
    let y = ((b[1] + b[3]) / 2.0) as usize;
    let red = (b[0] as usize).saturating_sub(8)..(b[0] as usize + 8);
    let found: Vec<&[u8]> = red
        .map(|x| &map[y * stride + x * 3..y * stride + x * 3 + 3])
        .collect();
    assert!(
        found
            .iter()
            .any(|px| px[0] > 150 && px[1] < 110 && px[2] < 110),
        "the left border of the person at {b:?} is red, found {found:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_yaml_form_with_a_csv_of_sources_gives_the_same_pipeline() {
    let dir = scratch("yaml");
    let uri = format!("file://{}", clip().display());
    std::fs::write(
        dir.join("app.txt"),
        format!(
            "[source0]\nenable=1\ntype=3\nuri={uri}\nnum-sources=2\n[streammux]\nbatch-size=2\n\
             [primary-gie]\nenable=1\nconfig-file={}\n[tiled-display]\nenable=1\nrows=1\n\
             columns=2\n[sink0]\nenable=1\ntype=1\n",
            coco().display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("sources.csv"),
        format!("enable,type,uri,num-sources,gpu-id,cudadec-memtype\n1,3,{uri},2,0,0\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("app.yml"),
        format!(
            "source:\n  csv-file-path: sources.csv\nstreammux:\n  batch-size: 2\n\
             primary-gie:\n  enable: 1\n  config-file: {}\ntiled-display:\n  enable: 1\n  \
             rows: 1\n  columns: 2\nsink0:\n  enable: 1\n  type: 1\n",
            coco().display()
        ),
    )
    .unwrap();
    let (ok_t, txt, err_t) = app(&dir.join("app.txt"), &["--print-pipeline"]);
    let (ok_y, yml, err_y) = app(&dir.join("app.yml"), &["--print-pipeline"]);
    assert!(ok_t && ok_y, "{err_t}\n{err_y}");
    assert_eq!(txt, yml);
    assert!(
        txt.starts_with("gst-launch-1.0 -e rsurisrcbin name=src0"),
        "{txt}"
    );
    assert!(txt.contains("mux.sink_1"), "{txt}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_files_are_refused_naming_file_line_group_and_key() {
    let dir = scratch("bad");
    let cases = [
        (
            "[source0\nenable=1\n",
            "app.txt:1: malformed section header",
        ),
        (
            "[source0]\nenable=1\ntype=7\n",
            "app.txt:3: [source0] type=7: audio sources",
        ),
        (
            "[sink0]\nenable=1\ntype=6\nmsg-broker-proto-lib=libx.so\n[source0]\nenable=1\nuri=file:///x\n",
            "unknown protocol library",
        ),
        (
            "[osd]\nenable=yes\n",
            "app.txt:2: [osd] enable=yes: expected 1, 0, true or false",
        ),
        ("[dewarper0]\nenable=1\n", "has no Ferrostream counterpart"),
    ];
    for (text, want) in cases {
        let cfg = dir.join("app.txt");
        std::fs::write(&cfg, text).unwrap();
        let (ok, _, stderr) = app(&cfg, &["--print-pipeline"]);
        assert!(!ok, "{text} was accepted");
        assert!(stderr.contains(want), "{text}: {stderr}");
    }
    std::fs::write(
        dir.join("app.txt"),
        format!(
            "[source0]\nenable=1\nuri=file:///x.mp4\nfrobnicate=2\n[no-such-group]\n\
             [sink0]\nenable=1\n[primary-gie]\nenable=1\nconfig-file={}\n",
            coco().display()
        ),
    )
    .unwrap();
    let (ok, _, stderr) = app(&dir.join("app.txt"), &["--print-pipeline"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("app.txt:4: unknown key `frobnicate` in [source0] ignored"),
        "{stderr}"
    );
    assert!(
        stderr.contains("app.txt:5: unknown group [no-such-group] ignored"),
        "{stderr}"
    );
    let (ok, _, stderr) = app(&dir.join("missing.txt"), &[]);
    assert!(!ok && stderr.contains("missing.txt"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed (with its group) when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: signals a process group this test started.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

fn spawn_app(config: &Path) -> Child {
    use std::os::unix::process::CommandExt;
    Child(
        Command::new(env!("CARGO_BIN_EXE_ferrostream-app"))
            .env(ferrostream_core::paths::MODEL_DIR_ENV, model_dir())
            .arg("-c")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap(),
    )
}

/// Sends SIGINT and waits (bounded) for the app to exit; returns its success and output.
fn interrupt(mut child: Child, limit: Duration) -> (bool, String) {
    // SAFETY: signals the process this test started.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut out = String::new();
            let _ = child.0.stdout.take().unwrap().read_to_string(&mut out);
            let _ = child.0.stderr.take().unwrap().read_to_string(&mut out);
            return (status.success(), out);
        }
        assert!(
            Instant::now() < deadline,
            "the app ended within {limit:?} of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn rtsp_output_is_read_back_and_sigint_finalises_the_file() {
    let dir = scratch("rtsp");
    let (rtsp, udp) = (free_port(), free_port());
    let uri = format!("file://{}", clip().display());
    let cfg = dir.join("app.txt");
    std::fs::write(
        &cfg,
        config(
            &uri,
            "",
            &format!(
                "[sink0]\nenable=1\ntype=4\ncodec=1\nenc-type=1\nsync=1\nbitrate=2000000\n\
                 rtsp-port={rtsp}\nudp-port={udp}\n\n\
                 [sink1]\nenable=1\ntype=3\ncontainer=1\ncodec=1\noutput-file=out.mp4\n"
            ),
        )
        .replace("file-loop=0", "file-loop=1"),
    )
    .unwrap();
    let child = spawn_app(&cfg);
    wait_until("the RTSP server", Duration::from_secs(120), || {
        TcpStream::connect(("127.0.0.1", rtsp)).is_ok()
    });
    let samples = ferrostream_tests::pull_samples(
        &format!(
            "rtspsrc location=rtsp://127.0.0.1:{rtsp}/ds-test latency=100 ! rtph264depay ! \
             h264parse ! avdec_h264 ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink"
        ),
        10,
    );
    assert_eq!(samples.len(), 10, "frames read back over RTSP");
    let caps = samples[0].caps().unwrap();
    let info = gst_video::VideoInfo::from_caps(caps).unwrap();
    assert_eq!((info.width(), info.height()), (768, 576));
    let (ok, out) = interrupt(child, Duration::from_secs(60));
    assert!(ok, "{out}");
    assert!(out.contains("Ending the stream"), "{out}");
    // The file was finalised at the end of stream: it has its index and plays.
    let frames = ferrostream_tests::decode_frames(&dir.join("out.mp4"), "RGB", 5);
    assert_eq!(frames.len(), 5);
    let _ = std::fs::remove_dir_all(&dir);
}

/// (topic, payload) of a received message.
type Message = (String, Vec<u8>);

/// A mosquitto of this test's own on a free loopback port (killed when dropped), once it
/// accepts connections; and the port.
fn mosquitto(dir: &Path) -> (Child, u16) {
    use std::os::unix::process::CommandExt;
    let port = free_port();
    let conf = dir.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!("listener {port} 127.0.0.1\nallow_anonymous true\nuser root\n"),
    )
    .unwrap();
    let broker = Child(
        Command::new("/usr/sbin/mosquitto")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("mosquitto (scripts/setup.sh installs it)"),
    );
    wait_until("mosquitto", Duration::from_secs(15), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    (broker, port)
}

#[test]
fn a_message_sink_reaches_a_real_mosquitto() {
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
    let dir = scratch("mqtt");
    let (_broker, port) = mosquitto(&dir);
    let received: Arc<Mutex<Vec<Message>>> = Arc::default();
    let (subscribed, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let consumer = {
        let (received, subscribed, stop) = (received.clone(), subscribed.clone(), stop.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let options = MqttOptions::new("fsapp-test", "127.0.0.1", port);
                let (client, mut events) = AsyncClient::new(options, 100);
                client
                    .subscribe("ds-events", QoS::AtLeastOnce)
                    .await
                    .unwrap();
                while !stop.load(Ordering::SeqCst) {
                    match tokio::time::timeout(Duration::from_millis(200), events.poll()).await {
                        Ok(Ok(Event::Incoming(Packet::SubAck(_)))) => {
                            subscribed.store(true, Ordering::SeqCst)
                        }
                        Ok(Ok(Event::Incoming(Packet::Publish(p)))) => received
                            .lock()
                            .unwrap()
                            .push((p.topic.clone(), p.payload.to_vec())),
                        Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
                        _ => {}
                    }
                }
            })
        })
    };
    wait_until("the subscription", Duration::from_secs(15), || {
        subscribed.load(Ordering::SeqCst)
    });
    let uri = format!("file://{}", clip().display());
    // The message converter's sensor list, in NVIDIA's layout: source 0 is HWY_20_AND_LOCUST.
    std::fs::write(
        dir.join("dstest5_msgconv_sample_config.txt"),
        "[sensor0]\nenable=1\ntype=Camera\nid=HWY_20_AND_LOCUST\nlocation=45.29;-121.42;48.1\n\
         description=Aisle Camera\ncoordinate=5.2;10.1;11.2\n\n[place0]\nenable=1\nid=0\n",
    )
    .unwrap();
    let cfg = dir.join("app.txt");
    std::fs::write(
        &cfg,
        config(
            &uri,
            "",
            &format!(
                "[sink0]\nenable=1\ntype=1\nsync=0\n\n[sink1]\nenable=1\ntype=6\n\
                 msg-conv-config=dstest5_msgconv_sample_config.txt\nmsg-conv-payload-type=1\n\
                 msg-broker-proto-lib=/opt/nvidia/deepstream/deepstream/lib/libnvds_mqtt_proto.so\n\
                 msg-broker-conn-str=127.0.0.1;{port}\ntopic=ds-events\n"
            ),
        ),
    )
    .unwrap();
    let (ok, stdout, stderr) = app(&cfg, &[]);
    assert!(ok, "{stdout}\n{stderr}");
    wait_until("every frame's message", Duration::from_secs(30), || {
        received.lock().unwrap().len() >= FRAMES
    });
    stop.store(true, Ordering::SeqCst);
    consumer.join().unwrap();
    let messages = received.lock().unwrap();
    assert_eq!(messages.len(), FRAMES, "one message per frame");
    let with_people = messages
        .iter()
        .filter(|(topic, payload)| {
            assert_eq!(topic, "ds-events");
            let json: serde_json::Value = serde_json::from_slice(payload).expect("JSON");
            assert_eq!(json["sensorId"], "HWY_20_AND_LOCUST", "{json}");
            json.to_string().contains("person")
        })
        .count();
    assert!(
        with_people >= FRAMES - 2,
        "people in {with_people} messages"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Publishes `payload` on `topic` with QoS 1 and waits (bounded) for the broker's PUBACK.
fn publish(port: u16, topic: &str, payload: &str) {
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let options = MqttOptions::new(
            format!("fsapp-pub-{}", std::process::id()),
            "127.0.0.1",
            port,
        );
        let (client, mut events) = AsyncClient::new(options, 10);
        client
            .publish(topic, QoS::AtLeastOnce, false, payload.as_bytes().to_vec())
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(15), async {
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::PubAck(_))) => break,
                    Ok(_) => {}
                    Err(e) => panic!("publishing to mosquitto: {e}"),
                }
            }
        })
        .await
        .expect("the broker acknowledged the message within 15 s");
        let _ = client.disconnect().await;
        let _ = tokio::time::timeout(Duration::from_millis(500), events.poll()).await;
    });
}

/// The app running, its standard output and error collected as they come.
struct Running {
    child: Child,
    out: Arc<Mutex<String>>,
}

impl Running {
    fn start(config: &Path) -> Self {
        let mut child = spawn_app(config);
        let out: Arc<Mutex<String>> = Arc::default();
        let readers: [Box<dyn Read + Send>; 2] = [
            Box::new(child.0.stdout.take().unwrap()),
            Box::new(child.0.stderr.take().unwrap()),
        ];
        for stream in readers {
            let out = out.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(stream).lines() {
                    let Ok(line) = line else { return };
                    let mut out = out.lock().unwrap();
                    out.push_str(&line);
                    out.push('\n');
                }
            });
        }
        Self { child, out }
    }

    fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// The first line holding `text`, waiting at most `limit`.
    fn line_with(&self, text: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let out = self.output();
            if let Some(line) = out.lines().find(|l| l.contains(text)) {
                return Some(line.to_owned());
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The file of the `n`th (from 1) line `<prefix>: recording <file>`, waiting at most
    /// `limit`.
    fn try_recording(&self, prefix: &str, n: usize, limit: Duration) -> Option<PathBuf> {
        let marker = format!("{prefix}: recording ");
        let deadline = Instant::now() + limit;
        loop {
            let out = self.output();
            if let Some(line) = out.lines().filter(|l| l.contains(&marker)).nth(n - 1) {
                return line
                    .rsplit_once(": recording ")
                    .map(|(_, f)| PathBuf::from(f));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn recording(&self, prefix: &str, n: usize, limit: Duration) -> PathBuf {
        self.try_recording(prefix, n, limit).unwrap_or_else(|| {
            panic!(
                "no recording {n} (`{prefix}: recording`) within {limit:?}:\n{}",
                self.output()
            )
        })
    }

    fn expect_line(&self, text: &str, limit: Duration) -> String {
        self.line_with(text, limit)
            .unwrap_or_else(|| panic!("no line with `{text}` within {limit:?}:\n{}", self.output()))
    }

    /// SIGINT, then waits (bounded) for the exit; returns its success and the output.
    fn interrupt(mut self, limit: Duration) -> (bool, String) {
        // SAFETY: signals the process this test started.
        unsafe { libc::kill(self.child.0.id() as i32, libc::SIGINT) };
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                // The readers end with the pipes; give them a moment to take the last lines.
                std::thread::sleep(Duration::from_millis(300));
                return (status.success(), self.output());
            }
            assert!(
                Instant::now() < deadline,
                "the app ended within {limit:?} of SIGINT:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// deepstream-test5's cloud-to-device messages: a consumer subscribed on a real mosquitto
/// starts and stops the smart record of the sensor the sensor list names; bad messages are
/// warned about and skipped; the recordings play.
#[test]
fn cloud_messages_start_and_stop_smart_record() {
    let dir = scratch("c2d");
    let (_broker, port) = mosquitto(&dir);
    const SENSOR: &str = "HWY_20_AND_LOCUST__EBA__4_11_2018_4_59_59_508_AM_UTC-07_00";
    std::fs::write(
        dir.join("dstest5_msgconv_sample_config.txt"),
        format!(
            "[sensor0]\nenable=1\ntype=Camera\nid={SENSOR}\n\
             location=45.293701447;-75.8303914499;48.1557479338\ndescription=Aisle Camera\n\n\
             [place0]\nenable=1\nid=0\ntype=intersection/road\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("cfg_mqtt.txt"),
        "[message-broker]\nclient-id = fsapp-consumer\nkeep-alive = 30\n",
    )
    .unwrap();
    // Played in real time, so that stream time follows the clock; looped, so that the source
    // would not end before the messages came on a slow machine (a loop starts the cache afresh).
    let cfg = dir.join("app.txt");
    std::fs::write(
        &cfg,
        format!(
            "[source0]\nenable=1\ntype=3\nuri=file://{}\nnum-sources=1\nsmart-record=1\n\
             smart-rec-dir-path=rec\nsmart-rec-file-prefix=c2d\nsmart-rec-cache=2\n\
             smart-rec-default-duration=60\n\n\
             [streammux]\nbatch-size=1\nbatched-push-timeout=40000\n\n\
             [sink0]\nenable=1\ntype=1\nsync=1\n\n\
             [message-consumer0]\nenable=1\n\
             proto-lib=/opt/nvidia/deepstream/deepstream/lib/libnvds_mqtt_proto.so\n\
             conn-str=127.0.0.1;{port}\nconfig-file=cfg_mqtt.txt\n\
             subscribe-topic-list=ds-c2d;other\n\
             sensor-list-file=dstest5_msgconv_sample_config.txt\n\n\
             [tests]\nfile-loop=1\n",
            long_clip().display()
        ),
    )
    .unwrap();
    let (ok, printed, stderr) = app(&cfg, &["--print-pipeline"]);
    assert!(ok, "{stderr}");
    assert!(
        printed.contains(&format!(
            "# and an MQTT subscriber (message-consumer0) of ds-c2d, other on 127.0.0.1:{port}"
        )),
        "{printed}"
    );

    let app = Running::start(&cfg);
    app.expect_line(
        &format!("[message-consumer0] subscribed to ds-c2d, other on 127.0.0.1:{port}"),
        Duration::from_secs(120),
    );
    // Bad messages: a warning each, and the app goes on.
    publish(port, "ds-c2d", r#"{"command":"start-recording","sensor":"#);
    app.expect_line(
        "[message-consumer0] message on ds-c2d skipped: not JSON",
        Duration::from_secs(30),
    );
    publish(
        port,
        "other",
        r#"{"command":"start-recording","sensor":{"id":"nobody"}}"#,
    );
    app.expect_line(
        "sensor `nobody` is not in the sensor-list-file",
        Duration::from_secs(30),
    );

    // NVIDIA's example message: 2 s from start to end. The source may have no video in its
    // ring yet at the first try; the app says so and a later message records.
    let start = format!(
        r#"{{"command":"start-recording","start":"2020-05-18T20:02:00.051Z","end":"2020-05-18T20:02:02.851Z","sensor":{{"id":"{SENSOR}"}}}}"#
    );
    let started = format!("[message-consumer0] start-recording for sensor {SENSOR} (source 0)");
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        publish(port, "ds-c2d", &start);
        if let Some(file) = app.try_recording(&started, 1, Duration::from_secs(5)) {
            break file;
        }
        assert!(
            Instant::now() < deadline,
            "no recording within 60 s:\n{}",
            app.output()
        );
    };
    assert_eq!(first.parent(), Some(dir.join("rec").as_path()));
    let name = first.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("c2d_") && name.ends_with(".mp4"), "{name}");
    // Complete (renamed from its temporary name) within the 2 s asked for, the hold after it
    // and some slack.
    let done = app.expect_line(
        &format!("recorded {}", first.display()),
        Duration::from_secs(60),
    );
    assert!(first.is_file());
    // 2 s after the message at 10 frames/s, and the cache (2 s, from a keyframe) before it:
    // the message's duration, not the 60 s default.
    let frames: u64 = done
        .rsplit_once(" (")
        .and_then(|(_, n)| n.strip_suffix(" frames)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a frame count in `{done}`"));
    assert!((20..=60).contains(&frames), "{done}");

    // Without an end the default duration (60 s) applies, until a stop.
    publish(
        port,
        "ds-c2d",
        &format!(r#"{{"command":"start-recording","sensor":{{"id":"{SENSOR}"}}}}"#),
    );
    let second = app.recording(&started, 2, Duration::from_secs(30));
    assert_ne!(second, first);
    std::thread::sleep(Duration::from_secs(1));
    publish(
        port,
        "ds-c2d",
        &format!(r#"{{"command":"stop-recording","sensor":{{"id":"{SENSOR}"}}}}"#),
    );
    app.expect_line(
        &format!(
            "[message-consumer0] stop-recording for sensor {SENSOR} (source 0): recording stopped"
        ),
        Duration::from_secs(30),
    );
    app.expect_line(
        &format!("recorded {}", second.display()),
        Duration::from_secs(30),
    );

    let (ok, out) = app.interrupt(Duration::from_secs(60));
    assert!(ok, "{out}");
    assert!(!out.contains("panicked"), "{out}");
    // Both files play: MP4 with its index, H.264 decoded from their first frame.
    for file in [&first, &second] {
        let frames = ferrostream_tests::decode_frames(file, "RGB", 10);
        let (info, _) = &frames[0];
        assert_eq!((info.width(), info.height()), (384, 288));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `[source-list]` on one rsmultiurisrcbin, a message names the camera by its sensor id
/// (no sensor list): its start and stop reach that camera's smart record.
#[test]
fn cloud_messages_name_rsmultiurisrcbin_cameras_by_sensor_id() {
    let dir = scratch("c2d-multi");
    let (_broker, port) = mosquitto(&dir);
    let cfg = dir.join("app.txt");
    std::fs::write(
        &cfg,
        format!(
            "[source-list]\nlist=file://{}\nsensor-id-list=door\nuse-nvmultiurisrcbin=1\n\
             http-port=0\nmax-batch-size=1\n\n\
             [source-attr-all]\nsmart-record=1\nsmart-rec-dir-path=rec\nsmart-rec-cache=2\n\n\
             [sink0]\nenable=1\ntype=1\nsync=1\n\n\
             [message-consumer0]\nenable=1\nproto-lib=libnvds_mqtt_proto.so\n\
             conn-str=127.0.0.1;{port};ds-c2d\n\n\
             [tests]\nfile-loop=1\n",
            long_clip().display()
        ),
    )
    .unwrap();
    let app = Running::start(&cfg);
    app.expect_line(
        &format!("[message-consumer0] subscribed to ds-c2d on 127.0.0.1:{port}"),
        Duration::from_secs(120),
    );
    let started = "[message-consumer0] start-recording for sensor door (source 0)";
    let deadline = Instant::now() + Duration::from_secs(60);
    let file = loop {
        publish(port, "ds-c2d", r#"{"sensor":{"id":"door"}}"#);
        if let Some(file) = app.try_recording(started, 1, Duration::from_secs(5)) {
            break file;
        }
        assert!(
            Instant::now() < deadline,
            "no recording within 60 s:\n{}",
            app.output()
        );
    };
    assert!(
        file.file_name()
            .unwrap()
            .to_string_lossy()
            .contains("_door_"),
        "{}",
        file.display()
    );
    std::thread::sleep(Duration::from_secs(1));
    publish(
        port,
        "ds-c2d",
        r#"{"command":"stop-recording","sensor":{"id":"door"}}"#,
    );
    app.expect_line(
        "[message-consumer0] stop-recording for sensor door (source 0): recording stopped",
        Duration::from_secs(30),
    );
    app.expect_line(
        &format!("recorded {}", file.display()),
        Duration::from_secs(30),
    );
    let (ok, out) = app.interrupt(Duration::from_secs(60));
    assert!(ok, "{out}");
    assert_eq!(ferrostream_tests::decode_frames(&file, "RGB", 10).len(), 10);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The frame (from 0) where the first track appears in the KITTI track files of a run with
/// the NvMultiObjectTracker configuration `yaml`.
fn first_tracked_frame(dir: &Path, yaml: &str) -> usize {
    std::fs::write(dir.join("tracker.yml"), yaml).unwrap();
    let uri = format!("file://{}", clip().display());
    let cfg = dir.join("app.txt");
    std::fs::write(
        &cfg,
        config(
            &uri,
            "kitti-track-output-dir=tracks\n",
            "[sink0]\nenable=1\ntype=1\n\n[tracker]\nenable=1\n\
             ll-lib-file=/opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so\n\
             ll-config-file=tracker.yml\n",
        ),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(dir.join("tracks"));
    let (ok, stdout, stderr) = app(&cfg, &[]);
    assert!(ok, "{stdout}\n{stderr}");
    (0..FRAMES)
        .find(|n| !kitti(&dir.join(format!("tracks/00_000_{n:06}.txt")), true).is_empty())
        .unwrap_or(FRAMES)
}

#[test]
fn the_tracker_yaml_probation_age_is_seen_in_the_ids() {
    let dir = scratch("tracker");
    let yaml = |age: u32| {
        format!(
            "%YAML:1.0\nBaseConfig:\n  minDetectorConfidence: 0.3\nTargetManagement:\n  \
             preserveStreamUpdateOrder: 0\n  maxTargetsPerStream: 150\n  \
             minIouDiff4NewTarget: 0.5\n  minTrackerConfidence: 0.2\n  probationAge: {age}\n  \
             maxShadowTrackingAge: 30\n  earlyTerminationAge: 1\nTrajectoryManagement:\n  \
             useUniqueID: 0\nDataAssociator:\n  dataAssociatorType: 0\n  \
             associationMatcherType: 0\n  checkClassMatch: 1\n  minMatchingScore4Overall: 0.0\n  \
             minMatchingScore4SizeSimilarity: 0.6\n  minMatchingScore4Iou: 0.0\n  \
             matchingScoreWeight4SizeSimilarity: 0.4\n  matchingScoreWeight4Iou: 0.6\n\
             StateEstimator:\n  stateEstimatorType: 1\n  processNoiseVar4Loc: 2.0\n  \
             processNoiseVar4Size: 1.0\n  processNoiseVar4Vel: 0.1\n  \
             measurementNoiseVar4Detector: 4.0\n  measurementNoiseVar4Tracker: 16.0\n"
        )
    };
    let early = first_tracked_frame(&dir, &yaml(1));
    let late = first_tracked_frame(&dir, &yaml(8));
    assert!(early <= 2, "probationAge 1: first track at frame {early}");
    assert!(
        late >= early + 6,
        "probationAge 8 reports later: frame {late} vs {early}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
