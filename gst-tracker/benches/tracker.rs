// SPDX-License-Identifier: MIT OR Apache-2.0
//! Time per frame of each tracking algorithm at 10, 100 and 1000 objects per frame, on the
//! synthetic sequences of the tests (detections included: misses, weak ones, false positives).
//!
//! ```text
//! cargo bench -p gst-tracker --bench tracker
//! ```

use std::time::Instant;

use gst_tracker::synthetic::scene;
use gst_tracker::tracker::{Algorithm, IdAllocator, Tracker, TrackerConfig};

fn main() {
    const FRAMES: usize = 200;
    println!("tracker time per frame ({FRAMES} frames per run, median of 5 runs)");
    println!(
        "{:>8} {:>12} {:>12} {:>12}",
        "objects", "iou", "sort", "bytetrack"
    );
    for objects in [10, 100, 1000] {
        let frames = scene(7, objects, FRAMES);
        let mut row = format!("{objects:>8}");
        for algorithm in [Algorithm::Iou, Algorithm::Sort, Algorithm::ByteTrack] {
            let mut runs: Vec<f64> = (0..5)
                .map(|_| {
                    let mut tracker = Tracker::new(TrackerConfig {
                        algorithm,
                        ..Default::default()
                    });
                    let mut ids = IdAllocator::default();
                    let start = Instant::now();
                    for f in &frames {
                        std::hint::black_box(tracker.update(&f.detections, &mut ids));
                    }
                    start.elapsed().as_secs_f64() * 1e6 / FRAMES as f64
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            row += &format!(" {:>9.1} us", runs[2]);
        }
        println!("{row}");
    }
}
