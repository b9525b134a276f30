// SPDX-License-Identifier: MIT OR Apache-2.0
//! Writes the synthetic tracking sequences in MOT Challenge text format, with rstracker's output
//! for each algorithm, so that external tools can score them (see `benches/mot_report.py`).
//!
//! ```text
//! cargo run --release -p gst-tracker --example mot_export -- OUT_DIR
//! ```
//!
//! For each sequence `OUT_DIR/<name>/` gets `gt.txt` (frame, id, left, top, width, height, 1),
//! `det.txt` (frame, -1, left, top, width, height, confidence) and `<algorithm>.txt`
//! (frame, id, left, top, width, height, confidence), frames counted from 1, plus
//! `<algorithm>.time` with the tracker's microseconds per frame.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use ferrostream_core::BBox;
use gst_tracker::synthetic::{Frame, scene};
use gst_tracker::tracker::{Algorithm, IdAllocator, Tracker, TrackerConfig};

/// One MOT Challenge row: frame (from 1), id, box, confidence.
fn mot_line(out: &mut String, frame: usize, id: i64, b: BBox, confidence: f32) {
    writeln!(
        out,
        "{},{id},{},{},{},{},{confidence},-1,-1,-1",
        frame + 1,
        b.left,
        b.top,
        b.width,
        b.height
    )
    .expect("writing to a String");
}

fn write_sequence(dir: &Path, frames: &[Frame]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let (mut gt, mut det) = (String::new(), String::new());
    for (f, frame) in frames.iter().enumerate() {
        for (id, b) in &frame.truth {
            mot_line(&mut gt, f, *id as i64 + 1, *b, 1.0);
        }
        for d in &frame.detections {
            mot_line(&mut det, f, -1, d.bbox, d.confidence);
        }
    }
    std::fs::write(dir.join("gt.txt"), gt)?;
    std::fs::write(dir.join("det.txt"), det)?;
    for (name, algorithm) in [
        ("iou", Algorithm::Iou),
        ("sort", Algorithm::Sort),
        ("bytetrack", Algorithm::ByteTrack),
    ] {
        let mut tracker = Tracker::new(TrackerConfig {
            algorithm,
            ..Default::default()
        });
        let mut ids = IdAllocator::default();
        let mut out = String::new();
        let mut spent = 0.0;
        for (f, frame) in frames.iter().enumerate() {
            let start = Instant::now();
            let result = tracker.update(&frame.detections, &mut ids);
            spent += start.elapsed().as_secs_f64();
            for t in &result.tracks {
                mot_line(&mut out, f, t.id as i64, t.bbox, t.confidence);
            }
        }
        std::fs::write(dir.join(format!("{name}.txt")), out)?;
        std::fs::write(
            dir.join(format!("{name}.time")),
            format!("{}\n", spent * 1e6 / frames.len() as f64),
        )?;
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "mot".into());
    let out = Path::new(&out);
    // Accuracy: 30 objects, 300 frames, three seeds (the sequences of the tests).
    for seed in [1u64, 2, 3] {
        write_sequence(
            &out.join(format!("accuracy_seed{seed}")),
            &scene(seed, 30, 300),
        )?;
    }
    // Speed: 10, 100 and 1000 objects per frame.
    for objects in [10usize, 100, 1000] {
        write_sequence(
            &out.join(format!("speed_{objects}")),
            &scene(7, objects, 200),
        )?;
    }
    println!("sequences written to {}", out.display());
    Ok(())
}
