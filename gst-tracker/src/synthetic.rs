// SPDX-License-Identifier: MIT OR Apache-2.0
//! Deterministic synthetic sequences with ground truth, for the tracker's tests and benchmarks.

use ferrostream_core::BBox;

use crate::assignment::hungarian;
use crate::tracker::{Algorithm, Detection, IdAllocator, Tracker, TrackerConfig};

/// SplitMix64: small, deterministic, good enough for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self, a: f32, b: f32) -> f32 {
        a + (b - a) * (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn chance(&mut self, p: f32) -> bool {
        self.uniform(0.0, 1.0) < p
    }
    pub fn normal(&mut self) -> f32 {
        let (u1, u2) = (self.uniform(1e-6, 1.0), self.uniform(0.0, 1.0));
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
    }
}

/// World size for 30 objects; it grows with the object count to keep the density.
const W30: f32 = 1280.0;
const H30: f32 = 720.0;

pub struct Frame {
    /// Ground truth: object id and box, for every object in the scene.
    pub truth: Vec<(usize, BBox)>,
    pub detections: Vec<Detection>,
}

/// `objects` objects over `frames` frames: they move and bounce off the borders (so paths cross),
/// each is hidden twice for 3 to 6 frames, 5 % of detections are missed, 10 % are weak
/// (confidence 0.2-0.45), boxes carry 1.5 px of noise, and two false detections appear per 30
/// objects and frame. Objects 0 and 1 walk into each other head-on.
pub fn scene(seed: u64, objects: usize, frames: usize) -> Vec<Frame> {
    let mut rng = Rng(seed);
    let grow = (objects as f32 / 30.0).max(1.0).sqrt();
    let (world_w, world_h) = (W30 * grow, H30 * grow);
    struct Obj {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        vx: f32,
        vy: f32,
        occluded: Vec<(usize, usize)>,
    }
    let mut objs: Vec<Obj> = (0..objects)
        .map(|_| {
            let w = rng.uniform(30.0, 60.0);
            let mut gap = || {
                let start = rng.uniform(10.0, frames as f32 - 20.0) as usize;
                (start, start + rng.uniform(3.0, 7.0) as usize)
            };
            let occluded = vec![gap(), gap()];
            Obj {
                x: rng.uniform(0.0, world_w - w),
                y: rng.uniform(0.0, world_h - 2.5 * w),
                w,
                h: w * rng.uniform(2.0, 2.8),
                vx: rng.uniform(-4.0, 4.0),
                vy: rng.uniform(-2.0, 2.0),
                occluded,
            }
        })
        .collect();
    // Two objects that walk into each other head-on, at the same height.
    if objects >= 2 {
        objs[0] = Obj {
            x: 200.0,
            y: 300.0,
            w: 40.0,
            h: 100.0,
            vx: 3.0,
            vy: 0.0,
            occluded: vec![],
        };
        objs[1] = Obj {
            x: 1000.0,
            y: 310.0,
            w: 40.0,
            h: 100.0,
            vx: -3.0,
            vy: 0.0,
            occluded: vec![],
        };
    }
    (0..frames)
        .map(|f| {
            let mut truth = Vec::new();
            let mut detections = Vec::new();
            for (id, o) in objs.iter_mut().enumerate() {
                if f > 0 {
                    o.x += o.vx;
                    o.y += o.vy;
                    if o.x < 0.0 || o.x + o.w > world_w {
                        o.vx = -o.vx;
                        o.x = o.x.clamp(0.0, world_w - o.w);
                    }
                    if o.y < 0.0 || o.y + o.h > world_h {
                        o.vy = -o.vy;
                        o.y = o.y.clamp(0.0, world_h - o.h);
                    }
                }
                let bbox = BBox::new(o.x, o.y, o.w, o.h);
                truth.push((id, bbox));
                let hidden = o.occluded.iter().any(|&(a, b)| f >= a && f < b);
                if hidden || rng.chance(0.05) {
                    continue; // occluded, or simply missed by the detector
                }
                let noisy = BBox::new(
                    bbox.left + 1.5 * rng.normal(),
                    bbox.top + 1.5 * rng.normal(),
                    bbox.width + 1.5 * rng.normal(),
                    bbox.height + 1.5 * rng.normal(),
                );
                // Now and then only a weak detection (partial occlusion, blur).
                let confidence = if rng.chance(0.1) {
                    rng.uniform(0.2, 0.45)
                } else {
                    rng.uniform(0.6, 0.95)
                };
                detections.push(Detection::new(noisy, confidence, 0));
            }
            // False positives, mostly weak.
            for _ in 0..(2 * objects).div_ceil(30) {
                let w = rng.uniform(20.0, 80.0);
                let bbox = BBox::new(
                    rng.uniform(0.0, world_w - w),
                    rng.uniform(0.0, world_h - w),
                    w,
                    w * 1.5,
                );
                detections.push(Detection::new(bbox, rng.uniform(0.1, 0.55), 0));
            }
            Frame { truth, detections }
        })
        .collect()
}

#[derive(Debug, Default)]
pub struct Score {
    pub truth: usize,
    pub matched: usize,
    pub id_switches: usize,
    pub false_tracks: usize,
}

impl Score {
    pub fn coverage(&self) -> f32 {
        self.matched as f32 / self.truth as f32
    }
}

/// Runs `algorithm` over `frames` and scores it against the ground truth (IoU >= 0.5 matches).
pub fn evaluate(algorithm: Algorithm, frames: &[Frame]) -> Score {
    let mut tracker = Tracker::new(TrackerConfig {
        algorithm,
        ..Default::default()
    });
    let mut ids = IdAllocator::default();
    let mut last_id: Vec<Option<u64>> = vec![None; frames[0].truth.len()];
    let mut score = Score::default();
    for frame in frames {
        let result = tracker.update(&frame.detections, &mut ids);
        let cost: Vec<Vec<f32>> = frame
            .truth
            .iter()
            .map(|(_, g)| result.tracks.iter().map(|t| 1.0 - g.iou(&t.bbox)).collect())
            .collect();
        let pairs = hungarian(&cost, 0.5);
        score.truth += frame.truth.len();
        score.matched += pairs.len();
        score.false_tracks += result.tracks.len() - pairs.len();
        for (g, t) in pairs {
            let gt = frame.truth[g].0;
            let id = result.tracks[t].id;
            if last_id[gt].is_some_and(|last| last != id) {
                score.id_switches += 1;
            }
            last_id[gt] = Some(id);
        }
    }
    score
}
