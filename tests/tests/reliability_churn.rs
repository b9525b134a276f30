// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reliability, churn: sources added to and removed from a playing rsstreammux over and over
//! (live and not, some ending by themselves, some stalling, some failing), each with its own
//! rsstreamdemux pad and sink added and removed with it, rsosd's properties changed while
//! playing. A watchdog fails the run when no batch leaves for 5 s (a deadlock);
//! RSS must stay within a bound.
//!
//! Cycles: `FERROSTREAM_CHURN_CYCLES` (default 150, the CI variant). Every element and pad made
//! for a churned source must be freed by the end (weak references tell).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrostream_tests::{Rng, element, init, quoted, repo_root, rss_kib};
use gst::prelude::*;

fn cycles() -> usize {
    std::env::var("FERROSTREAM_CHURN_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

const CAPS: &str = "video/x-raw,format=I420,width=160,height=120,framerate=30/1";

/// One churned source, as a bin with a `src` ghost pad.
fn source(kind: u32, n: usize) -> (gst::Element, &'static str) {
    let (desc, what) = match kind {
        // Not live, ends by itself (often before it is removed).
        0 => (
            format!(
                "videotestsrc num-buffers={} ! {CAPS} ! identity",
                3 + n % 20
            ),
            "finite",
        ),
        1 => (
            format!("videotestsrc is-live=true ! {CAPS} ! identity"),
            "live",
        ),
        // Live, then stops sending (drops everything after a few frames).
        2 => (
            format!("videotestsrc is-live=true ! {CAPS} ! valve name=stall"),
            "stalling",
        ),
        // Fails after a few frames with a flow error.
        _ => (
            format!(
                "videotestsrc is-live=true ! {CAPS} ! identity error-after={}",
                2 + n % 5
            ),
            "failing",
        ),
    };
    let bin = gst::parse::bin_from_description(&desc, true).unwrap();
    bin.set_property("name", format!("churn{n}"));
    (bin.upcast(), what)
}

#[test]
fn sources_come_and_go_while_playing() {
    churn(cycles(), |_| {});
}

/// Runs `cycles` churn cycles, calling `at` with each cycle's number after it; asserts no
/// deadlock, no foreign error and bounded RSS.
fn churn(cycles: usize, mut at: impl FnMut(usize)) {
    init();
    let infer = format!(
        "rstrtinfer onnx-file={} output-parser=yolov8 pre-cluster-threshold=0.5 \
         net-scale-factor=0.00392156863 batch-size=4",
        quoted(&repo_root().join("tests/fixtures/yolov8_constant.onnx"))
    );
    let desc = format!(
        "rsstreammux name=mux batch-size=4 batched-push-timeout=100000 ! {infer} ! rstracker \
         ! tee name=t ! queue ! rsosd name=osd ! appsink name=sink sync=false \
         t. ! queue ! rsstreamdemux name=demux demux.src_0 ! fakesink sync=false \
         videotestsrc is-live=true pattern=ball ! {CAPS} ! mux.sink_0"
    );
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let last_batch = Arc::new(Mutex::new(Instant::now()));
    let batches = Arc::new(Mutex::new(0u64));
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    let (l, b) = (last_batch.clone(), batches.clone());
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let _ = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                *l.lock().unwrap() = Instant::now();
                *b.lock().unwrap() += 1;
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    let mux: gst::Element = element(&pipeline, "mux");
    let demux: gst::Element = element(&pipeline, "demux");
    let osd: gst::Element = element(&pipeline, "osd");
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut rng = Rng::new(20);
    let mut weak: Vec<(String, gst::glib::WeakRef<gst::Object>)> = Vec::new();
    let mut kinds = [0usize; 4];
    let mut rss = Vec::new();
    let check = |what: &str| {
        // Errors from churned sources are theirs; any other is a failure. Every message is taken
        // off the bus (as an application's main loop would): messages hold their sources.
        while let Some(msg) = bus.pop() {
            if msg.type_() != gst::MessageType::Error {
                continue;
            }
            let from = msg
                .src()
                .map(|s| s.path_string().to_string())
                .unwrap_or_default();
            assert!(from.contains("churn"), "{what}: error from {from}: {msg:?}");
        }
        let quiet = last_batch.lock().unwrap().elapsed();
        assert!(
            quiet < Duration::from_secs(5),
            "{what}: no batch for {quiet:?}: a deadlock"
        );
    };
    for n in 0..cycles {
        let kind = rng.range(0, 4);
        kinds[kind as usize] += 1;
        let (bin, what) = source(kind, n);
        pipeline.add(&bin).unwrap();
        let pad = mux.request_pad_simple("sink_%u").unwrap();
        weak.push((
            format!("cycle {n}: source"),
            bin.upcast_ref::<gst::Object>().downgrade(),
        ));
        weak.push((
            format!("cycle {n}: muxer pad"),
            pad.upcast_ref::<gst::Object>().downgrade(),
        ));
        // The source's own output after the demuxer, to a sink of its own.
        let id = pad.name().trim_start_matches("sink_").to_string();
        let out = demux.request_pad_simple(&format!("src_{id}")).unwrap();
        let out_sink = gst::ElementFactory::make("fakesink")
            .property("sync", false)
            .property("async", false)
            .build()
            .unwrap();
        pipeline.add(&out_sink).unwrap();
        weak.push((
            format!("cycle {n}: demuxer pad"),
            out.upcast_ref::<gst::Object>().downgrade(),
        ));
        weak.push((
            format!("cycle {n}: sink"),
            out_sink.upcast_ref::<gst::Object>().downgrade(),
        ));
        out.link(&out_sink.static_pad("sink").unwrap()).unwrap();
        out_sink.sync_state_with_parent().unwrap();
        bin.static_pad("src").unwrap().link(&pad).unwrap();
        bin.sync_state_with_parent().unwrap();
        osd.set_property("display-text", n % 2 == 0);
        osd.set_property("border-width", 1 + (n % 5) as u32);
        let live_for = Duration::from_millis(u64::from(rng.range(20, 200)));
        if kind == 2 {
            std::thread::sleep(live_for / 2);
            bin.downcast_ref::<gst::Bin>()
                .unwrap()
                .by_name("stall")
                .unwrap()
                .set_property("drop", true);
            std::thread::sleep(live_for / 2);
        } else {
            std::thread::sleep(live_for);
        }
        check(&format!("cycle {n} ({what}), playing"));
        // The documented order: block the source, release the muxer's pad, stop the source.
        let src = bin.static_pad("src").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let probe = src.add_probe(gst::PadProbeType::BLOCK_DOWNSTREAM, move |_, _| {
            let _ = tx.send(());
            gst::PadProbeReturn::Ok
        });
        // A source that ended, stalled or failed sends nothing more to block on.
        let _ = rx.recv_timeout(Duration::from_millis(200));
        src.unlink(&pad).unwrap();
        mux.release_request_pad(&pad);
        if let Some(id) = probe {
            src.remove_probe(id);
        }
        bin.set_state(gst::State::Null).unwrap();
        pipeline.remove(&bin).unwrap();
        // Then its demuxer pad and sink.
        demux.release_request_pad(&out);
        out_sink.set_state(gst::State::Null).unwrap();
        pipeline.remove(&out_sink).unwrap();
        check(&format!("cycle {n} ({what}), removed"));
        if n % 10 == 9 {
            rss.push(rss_kib());
        }
        at(n);
    }
    std::thread::sleep(Duration::from_millis(300));
    check("the end");
    pipeline.set_state(gst::State::Null).unwrap();
    // Messages on the bus hold their sources: take them off, as a main loop would have.
    while bus.pop().is_some() {}
    drop(pipeline);
    let alive: Vec<&str> = weak
        .iter()
        .filter(|(_, w)| w.upgrade().is_some())
        .map(|(what, _)| what.as_str())
        .collect();
    assert!(alive.is_empty(), "still alive after the run: {alive:?}");
    let batches = *batches.lock().unwrap();
    println!(
        "CHURN {} cycles (finite {}, live {}, stalling {}, failing {}), {batches} batches; \
         RSS every 10 cycles (KiB): {rss:?}",
        cycles, kinds[0], kinds[1], kinds[2], kinds[3]
    );
    assert!(kinds.iter().all(|&k| k > 0), "{kinds:?}");
    let warm = rss.len() / 3;
    let growth = *rss.last().unwrap() as i64 - rss[warm] as i64;
    assert!(
        growth < 4096,
        "RSS grew {growth} KiB from cycle {} to the end: {rss:?}",
        (warm + 1) * 10
    );
}
