// SPDX-License-Identifier: MIT OR Apache-2.0
//! Builds a detection pipeline in code and prints the objects of every frame, read from the
//! analytics metadata in a pad probe. This is how an application consumes Ferrostream.
//!
//! ```text
//! cargo run --release -p gst-ferrostream --example print_objects -- VIDEO [CONFIG] [MAX_FRAMES]
//! ```

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ferrostream_core::BatchMeta;
use gst::prelude::*;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let video = args
        .next()
        .ok_or("usage: print_objects VIDEO [CONFIG] [MAX_FRAMES]")?;
    let config = args
        .next()
        .unwrap_or_else(|| "pipelines/coco_ssd.txt".into());
    let max_frames: u64 = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(u64::MAX);

    gst::init()?;
    // Register the elements from the linked crates (no plugin installation needed).
    gstferrostream::plugin_register_static()?;

    let pipeline = gst::parse::launch(&format!(
        "filesrc location=\"{video}\" ! decodebin ! videoconvert \
         ! rstrtinfer name=infer config-file-path=\"{config}\" ! fakesink"
    ))?
    .downcast::<gst::Pipeline>()
    .map_err(|_| "not a pipeline")?;

    let frames = Arc::new(AtomicU64::new(0));
    let infer = pipeline.by_name("infer").ok_or("no rstrtinfer")?;
    let src_pad = infer.static_pad("src").ok_or("no src pad")?;
    let seen = frames.clone();
    let weak_pipeline = pipeline.downgrade();
    src_pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
        let Some(buffer) = info.buffer() else {
            return gst::PadProbeReturn::Ok;
        };
        let n = seen.fetch_add(1, Ordering::Relaxed) + 1;
        if n > max_frames {
            // Frames still in flight after the EOS was sent.
            return gst::PadProbeReturn::Ok;
        }
        if let Some(meta) = buffer.meta::<BatchMeta>() {
            for frame in &meta.batch().frames {
                println!(
                    "frame {} ({} objects)",
                    frame.frame_num,
                    frame.objects.len()
                );
                for object in &frame.objects {
                    let b = object.bbox();
                    println!(
                        "  {:<12} {:.2}  x={:.0} y={:.0} w={:.0} h={:.0}",
                        object.label, object.confidence, b.left, b.top, b.width, b.height
                    );
                }
            }
        }
        if n == max_frames
            && let Some(pipeline) = weak_pipeline.upgrade()
        {
            // Finish cleanly from the application side.
            pipeline.send_event(gst::event::Eos::new());
        }
        gst::PadProbeReturn::Ok
    });

    pipeline.set_state(gst::State::Playing)?;
    let bus = pipeline.bus().ok_or("no bus")?;
    let result = loop {
        let Some(msg) = bus.timed_pop(gst::ClockTime::NONE) else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break Ok(()),
            gst::MessageView::Error(e) => {
                break Err(format!("{} ({})", e.error(), e.debug().unwrap_or_default()));
            }
            _ => {}
        }
    };
    pipeline.set_state(gst::State::Null)?;
    result?;
    eprintln!("{} frames", frames.load(Ordering::Relaxed).min(max_frames));
    Ok(())
}
