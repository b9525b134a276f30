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

use gst_tracker::synthetic::{Frame, scene};
use gst_tracker::tracker::{Algorithm, IdAllocator, Tracker, TrackerConfig};

fn write_sequence(dir: &Path, frames: &[Frame]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let (mut gt, mut det) = (String::new(), String::new());
    for (f, frame) in frames.iter().enumerate() {
        for (id, b) in &frame.truth {
            writeln!(
                gt,
                "{},{},{},{},{},{},1,-1,-1,-1",
                f + 1,
                id + 1,
                b.left,
                b.top,
                b.width,
                b.height
            )
            .unwrap();
        }
        for d in &frame.detections {
            let b = d.bbox;
            writeln!(
                det,
                "{},-1,{},{},{},{},{},-1,-1,-1",
                f + 1,
                b.left,
                b.top,
                b.width,
                b.height,
                d.confidence
            )
            .unwrap();
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
                let b = t.bbox;
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},-1,-1,-1",
                    f + 1,
                    t.id,
                    b.left,
                    b.top,
                    b.width,
                    b.height,
                    t.confidence
                )
                .unwrap();
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
