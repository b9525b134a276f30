// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, consumers of rsipcsink: consumer processes killed at random moments (before they
//! attach fully, while frames flow, while they hold every buffer they may) and hostile
//! consumers (random bytes, descriptors, releases of buffers never sent, oversized messages),
//! 50 of each, against one playing producer. It must keep producing, keep no descriptor and no
//! memory of the dead (open descriptors and RSS checked), and warn about the hostile ones only.
//! (`gpu_ipc.rs` runs the kill campaign with device frames and checks device memory.)

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ferrostream_ipc::socket::Connection;
use ferrostream_ipc::wire::{ToProducer, VERSION};
use ferrostream_tests::ipc::{self, Producer, count_rendered, temp_dir, wait_until};
use ferrostream_tests::{Rng, is_child, quoted, rss_kib};
use gst::prelude::*;

#[test]
#[ignore = "run as a child process by the tests below"]
fn ipc_consumer() {
    if is_child() {
        ipc::run_consumer_child();
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn producer(socket: &std::path::Path) -> Producer {
    Producer::start(&format!(
        "videotestsrc is-live=true ! video/x-raw,format=I420,width=640,height=480,framerate=60/1 \
         ! rsipcsink name=ipc max-buffers=3 block-timeout=500 socket-path={}",
        quoted(socket)
    ))
}

#[test]
fn consumers_killed_at_random_moments_leave_the_producer_running_and_nothing_behind() {
    let dir = temp_dir("reliability-kill");
    let socket = dir.join("cam.sock");
    let producer = producer(&socket);
    let rendered = count_rendered(&producer);
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    let mut rng = Rng::new(32);
    let mut baseline = None;
    for cycle in 0..50 {
        let out = dir.join(format!("c{cycle}.jsonl"));
        let consumer = ipc::spawn_consumer(&socket, &out, &[]);
        match rng.range(0, 3) {
            // Before (or while) it attaches.
            0 => std::thread::sleep(Duration::from_millis(rng.range(0, 200) as u64)),
            // While frames flow.
            1 => {
                producer.wait_for_consumers(1);
                ipc::wait_for_frames(&out, rng.range(1, 30) as usize);
            }
            // Stopped (SIGSTOP) while it holds every buffer it may: the producer drops it as
            // stuck after block-timeout, then it is killed.
            _ => {
                producer.wait_for_consumers(1);
                ipc::wait_for_frames(&out, 1);
                consumer.stop();
                producer.wait_for_consumers(0);
            }
        }
        consumer.kill();
        producer.wait_for_consumers(0);
        let before = rendered.load(Ordering::Relaxed);
        wait_until("the producer keeps running", || {
            rendered.load(Ordering::Relaxed) >= before + 5
        });
        if cycle == 9 {
            baseline = Some((open_fds(), rss_kib()));
        }
    }
    let (fds, rss) = baseline.unwrap();
    assert!(
        open_fds() <= fds,
        "{} descriptors open after 50 kills, {fds} after 10",
        open_fds()
    );
    assert!(
        rss_kib() < rss + 32 * 1024,
        "RSS grew from {rss} KiB to {} KiB",
        rss_kib()
    );
    // Only stuck consumers are warned about.
    let warnings = producer.warnings();
    assert!(warnings.iter().all(|w| w.contains("stuck")), "{warnings:?}");
    drop(producer);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hostile_consumers_are_disconnected_with_a_warning_and_the_producer_goes_on() {
    let dir = temp_dir("reliability-hostile");
    let socket = dir.join("cam.sock");
    let producer = producer(&socket);
    let rendered = count_rendered(&producer);
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    let mut rng = Rng::new(7);
    let t = Duration::from_secs(5);
    let file = std::fs::File::open("/dev/null").unwrap();
    for round in 0..50 {
        let conn = Connection::connect(&socket, t).unwrap();
        producer.wait_for_consumers(1);
        match round % 5 {
            0 => {
                let mut bytes = vec![0u8; rng.range(1, 2000) as usize];
                rng.fill(&mut bytes);
                conn.send(&bytes, &[], t).unwrap();
            }
            1 => conn
                .send(
                    &ToProducer::Hello { version: VERSION }.encode(),
                    &[file.as_fd()],
                    t,
                )
                .unwrap(),
            2 => conn
                .send(&ToProducer::Release { seq: u64::MAX }.encode(), &[], t)
                .unwrap(),
            3 => conn.send(&vec![b' '; 64 * 1024], &[], t).unwrap(),
            _ => conn
                .send(
                    &ToProducer::Hello {
                        version: VERSION + 1,
                    }
                    .encode(),
                    &[],
                    t,
                )
                .unwrap(),
        }
        producer.wait_for_consumers(0);
        drop(conn);
        let before = rendered.load(Ordering::Relaxed);
        wait_until("the producer keeps running", || {
            rendered.load(Ordering::Relaxed) >= before + 3
        });
    }
    let warnings = producer.warnings();
    assert_eq!(
        warnings.len(),
        50,
        "one warning per hostile consumer: {warnings:?}"
    );
    assert!(
        warnings.iter().all(|w| w.contains("disconnected")),
        "{warnings:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
