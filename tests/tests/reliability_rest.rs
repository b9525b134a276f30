// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, churn through the REST API: cameras (RTSP from GStreamer's RTSP server on
//! loopback, and files) added to and removed from a playing `rsmultiurisrcbin` with curl, beside
//! a camera that stays. Every request must succeed; every added camera's frames must arrive under
//! its stream id, the same id each time the camera comes back; every removed camera's end must
//! reach the end of the pipeline (past rstracker and rsanalytics, which release its state);
//! batches must never stop for 10 s (a watchdog); every removed camera's source must be freed;
//! RSS must stay within a bound.
//!
//! Cycles: `FERROSTREAM_REST_CHURN_CYCLES` (default 20: 40 requests, the CI variant).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ferrostream_tests::rest::{Running, add_body, file_uri, remove_body, request};
use ferrostream_tests::{RtspServer, element, free_port, media, rss_kib};
use gst::prelude::*;

fn cycles() -> usize {
    std::env::var("FERROSTREAM_REST_CHURN_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// No batch for this long is a deadlock.
const WATCHDOG: Duration = Duration::from_secs(10);

/// Fails when no batch left the pipeline for [`WATCHDOG`].
fn batches_flow(run: &Running) {
    let last = run.seen.lock().unwrap().last_batch;
    if let Some(last) = last {
        assert!(
            last.elapsed() < WATCHDOG,
            "no batch for {:?}: a deadlock",
            last.elapsed()
        );
    }
}

fn stream_eos_count(run: &Running, stream: u32) -> usize {
    let seen = run.seen.lock().unwrap();
    seen.stream_eos.iter().filter(|&&s| s == stream).count()
}

#[test]
fn cameras_added_and_removed_over_rest() {
    let rtsp = free_port();
    let live = "videotestsrc is-live=true ! video/x-raw,width=160,height=120,framerate=15/1";
    let _server = RtspServer::serve(rtsp, &[("live0", live), ("live1", live)]);
    let file = file_uri(&media("carphone_pristine.mp4"));
    let port = free_port();
    // The camera that stays plays in real time (sync=true): batches go on all along.
    let run = Running::start(&format!(
        "rsmultiurisrcbin name=churn rest-port={port} max-sources=4 batch-size=4 \
             batched-push-timeout=40000 uri-list={file} sensor-id-list=keeper file-loop=true \
             reconnect-interval=5 \
         ! rstracker ! rsanalytics roi=all=0;0;2000;0;2000;2000;0;2000 \
         ! fakesink name=sink sync=true"
    ));
    run.wait("the camera that stays", Duration::from_secs(60), |r| {
        r.frames(0) >= 10
    });
    let mut ids: BTreeMap<String, u32> = BTreeMap::new();
    let mut rss = Vec::new();
    let mut removed = Vec::new();
    let started = Instant::now();
    let n = cycles();
    for i in 0..n {
        let camera = format!("cam{}", i % 5);
        let url = if i % 2 == 0 {
            format!("rtsp://127.0.0.1:{rtsp}/live{}", (i / 2) % 2)
        } else {
            file.clone()
        };
        let (status, json) = request(
            port,
            "POST",
            "/api/v1/stream/add",
            Some(&add_body(&camera, &url)),
        );
        assert_eq!(status, 200, "cycle {i}: adding {camera} ({url}): {json}");
        let id = json["stream_id"].as_u64().expect("a stream id") as u32;
        assert_ne!(id, 0, "the camera that stays holds stream 0");
        let first = *ids.entry(camera.clone()).or_insert(id);
        assert_eq!(id, first, "{camera} came back with another stream id");
        let bin = element::<gst::Bin>(&run.pipeline, "churn");
        let source = bin
            .by_name(&format!("churn-source-{id}"))
            .expect("the camera's rsurisrcbin");
        removed.push((camera.clone(), source.downgrade()));
        drop(source);

        let before = run.frames(id);
        run.wait(
            &format!("cycle {i}: frames of {camera} (stream {id})"),
            Duration::from_secs(60),
            |r| {
                batches_flow(r);
                r.frames(id) >= before + 5
            },
        );

        let ended = stream_eos_count(&run, id);
        let (status, json) = request(
            port,
            "POST",
            "/api/v1/stream/remove",
            Some(&remove_body(&camera)),
        );
        assert_eq!(status, 200, "cycle {i}: removing {camera}: {json}");
        run.wait(
            &format!("cycle {i}: the end of {camera} (stream {id}) downstream"),
            Duration::from_secs(30),
            |r| {
                batches_flow(r);
                stream_eos_count(r, id) > ended
            },
        );
        rss.push(rss_kib());
    }
    println!(
        "{n} cycles ({} requests) in {:.1} s; RSS after each cycle (KiB): {rss:?}",
        2 * n,
        started.elapsed().as_secs_f64()
    );
    // Only the camera that stays is left, and it still plays.
    let (_, info) = request(port, "GET", "/api/v1/stream/get-stream-info", None);
    assert_eq!(info["stream-info"]["stream-count"], 1, "{info}");
    assert_eq!(info["stream-info"]["stream-info"][0]["camera_id"], "keeper");
    let before = run.frames(0);
    run.wait(
        "the camera that stays, at the end",
        Duration::from_secs(30),
        |r| r.frames(0) > before + 5,
    );
    // Every removed camera's source is freed (its threads and elements with it). The wait
    // takes the bus's messages, which hold their sources.
    let alive = || -> Vec<String> {
        removed
            .iter()
            .enumerate()
            .filter(|(_, (_, weak))| weak.upgrade().is_some())
            .map(|(cycle, (camera, _))| format!("{camera} of cycle {cycle}"))
            .collect()
    };
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run.wait(
            "the removed sources to be freed",
            Duration::from_secs(20),
            |_| alive().is_empty(),
        )
    }));
    assert!(waited.is_ok(), "still alive: {:?}", alive());
    // The first half warms up (decoders, RTSP sessions, the allocator's per-thread arenas as
    // new threads come); after that memory stays, but for the odd new arena (steps of about
    // 4 MiB were seen on a loaded machine). That each camera's elements are freed is proven by
    // the weak references above; this bound catches memory kept outside them.
    let warm = rss.len() / 2;
    let growth = *rss.last().unwrap() as i64 - rss[warm] as i64;
    assert!(
        growth < 16 * 1024,
        "RSS grew by {growth} KiB from cycle {warm} to {n}: {rss:?}"
    );
}
