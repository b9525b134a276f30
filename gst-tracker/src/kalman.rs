// SPDX-License-Identifier: MIT OR Apache-2.0
//! Constant-velocity Kalman filter on boxes, as in SORT/DeepSORT/ByteTrack.
//!
//! State: centre x, centre y, aspect ratio (w/h), height, and their velocities. Measurement: the
//! first four. The noise is set by [`Noise`]: by default it scales with the box height
//! (DeepSORT's weights; NvMultiObjectTracker's `REGULAR_BBOX_KF`), so small and large objects
//! behave alike; it can also be given as fixed variances in pixels² (NvMultiObjectTracker's
//! `SIMPLE_BBOX_KF`).

// Small fixed-size matrix algebra reads best with explicit indices.
#![allow(clippy::needless_range_loop)]

use ferrostream_core::BBox;

const DIM: usize = 8;
const MEAS: usize = 4;
/// Process and measurement noise relative to the box height (DeepSORT's values): the defaults
/// of [`Noise::position_weight`] and [`Noise::velocity_weight`].
pub const STD_POSITION: f32 = 1.0 / 20.0;
pub const STD_VELOCITY: f32 = 1.0 / 160.0;
/// Standard deviations of the aspect ratio and of its velocity, which no configuration sets:
/// the aspect ratio of a walking person or a turning car changes slowly whatever its size.
const STD_ASPECT: f32 = 1e-2;
const STD_ASPECT_VELOCITY: f32 = 1e-5;
const STD_ASPECT_MEASUREMENT: f32 = 1e-1;

ferrostream_core::choice_enum! {
    /// How the filter's noise is given (property `kalman-noise`).
    #[derive(Default)]
    pub enum NoiseModel: "GstRsTrackerKalmanNoise" {
        /// Standard deviations proportional to the box height, weighted by `noise-weight-*`.
        #[default]
        HeightRelative = 0 => ("height-relative", "Standard deviations proportional to the box height"),
        /// Fixed variances in pixels² (`process-noise-var-*`, `measurement-noise-var`).
        Absolute = 1 => ("absolute", "Fixed variances in pixels squared"),
    }
}

/// The filter's noise. With [`NoiseModel::HeightRelative`] only the two weights count, with
/// [`NoiseModel::Absolute`] only the variances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    pub model: NoiseModel,
    /// Standard deviation of the position and height, as a fraction of the box height, both of
    /// the motion per frame and of a measurement.
    pub position_weight: f32,
    /// Standard deviation of the velocities per frame, as a fraction of the box height.
    pub velocity_weight: f32,
    /// Variance of the centre's motion per frame, in pixels².
    pub location_variance: f32,
    /// Variance of the size's change per frame, in pixels² (the aspect ratio gets it divided by
    /// the height², as a = w / h).
    pub size_variance: f32,
    /// Variance of the velocities' change per frame, in (pixels per frame)².
    pub velocity_variance: f32,
    /// Variance of a detection's centre and height, in pixels².
    pub measurement_variance: f32,
}

impl Default for Noise {
    fn default() -> Self {
        Self {
            model: NoiseModel::HeightRelative,
            position_weight: STD_POSITION,
            velocity_weight: STD_VELOCITY,
            location_variance: 2.0,
            size_variance: 1.0,
            velocity_variance: 0.1,
            measurement_variance: 4.0,
        }
    }
}

impl Noise {
    /// The process noise variances of the eight states for a box of height `h`.
    fn process(&self, h: f32) -> [f32; DIM] {
        match self.model {
            NoiseModel::HeightRelative => {
                let (p, v) = (self.position_weight * h, self.velocity_weight * h);
                [p, p, STD_ASPECT, p, v, v, STD_ASPECT_VELOCITY, v].map(|std| std * std)
            }
            NoiseModel::Absolute => {
                let (l, v) = (self.location_variance, self.velocity_variance);
                [
                    l,
                    l,
                    self.size_variance / (h * h),
                    self.size_variance,
                    v,
                    v,
                    STD_ASPECT_VELOCITY * STD_ASPECT_VELOCITY,
                    v,
                ]
            }
        }
    }

    /// The measurement noise variances of centre x, centre y, aspect ratio and height.
    fn measurement(&self, h: f32) -> [f32; MEAS] {
        match self.model {
            NoiseModel::HeightRelative => {
                let p = self.position_weight * h;
                [p, p, STD_ASPECT_MEASUREMENT, p].map(|std| std * std)
            }
            NoiseModel::Absolute => {
                let m = self.measurement_variance;
                [m, m, m / (h * h), m]
            }
        }
    }

    /// The variances of a new track. The position is about as uncertain as a measurement (twice
    /// the weight, as DeepSORT starts); the velocity is unknown, so its prior is wide and scales
    /// with the height in both models (a fixed pixel speed means nothing before a box is seen).
    fn initial(&self, h: f32) -> [f32; DIM] {
        let v = 10.0 * self.velocity_weight * h;
        let (a, va) = (STD_ASPECT, STD_ASPECT_VELOCITY);
        let (v, a, va) = (v * v, a * a, va * va);
        match self.model {
            NoiseModel::HeightRelative => {
                let p = 2.0 * self.position_weight * h;
                let p = p * p;
                [p, p, a, p, v, v, va, v]
            }
            NoiseModel::Absolute => {
                let m = self.measurement_variance;
                [m, m, m / (h * h), m, v, v, va, v]
            }
        }
    }
}

type Mat8 = [[f32; DIM]; DIM];

/// Mean and covariance of one track.
#[derive(Debug, Clone, PartialEq)]
pub struct KalmanBox {
    mean: [f32; DIM],
    cov: Mat8,
}

fn to_measurement(b: &BBox) -> [f32; MEAS] {
    let h = b.height.max(1e-3);
    [b.left + b.width / 2.0, b.top + h / 2.0, b.width / h, h]
}

impl KalmanBox {
    /// A new track at `b`, not moving, with a wide velocity uncertainty.
    pub fn new(b: &BBox, noise: &Noise) -> Self {
        let m = to_measurement(b);
        let variances = noise.initial(m[3]);
        let mut cov = [[0.0; DIM]; DIM];
        for i in 0..DIM {
            cov[i][i] = variances[i];
        }
        let mut mean = [0.0; DIM];
        mean[..MEAS].copy_from_slice(&m);
        Self { mean, cov }
    }

    /// The current estimate as a box.
    pub fn bbox(&self) -> BBox {
        let [cx, cy, a, h] = [self.mean[0], self.mean[1], self.mean[2], self.mean[3]];
        let h = h.max(0.0);
        let w = (a * h).max(0.0);
        BBox::new(cx - w / 2.0, cy - h / 2.0, w, h)
    }

    /// Advances one frame: x += v, P = F P F' + Q.
    pub fn predict(&mut self, noise: &Noise) {
        let h = self.mean[3].max(1e-3);
        for i in 0..MEAS {
            self.mean[i] += self.mean[i + MEAS];
        }
        // F P F' with F = [I I; 0 I]: blocks update as P11 += P12 + P21 + P22, P12 += P22, ...
        let p = self.cov;
        let mut out = p;
        for i in 0..DIM {
            for j in 0..DIM {
                let mut v = p[i][j];
                if i < MEAS {
                    v += p[i + MEAS][j];
                }
                if j < MEAS {
                    v += p[i][j + MEAS];
                }
                if i < MEAS && j < MEAS {
                    v += p[i + MEAS][j + MEAS];
                }
                out[i][j] = v;
            }
        }
        let q = noise.process(h);
        for i in 0..DIM {
            out[i][i] += q[i];
        }
        self.cov = out;
    }

    /// Corrects with a measured box.
    pub fn update(&mut self, b: &BBox, noise: &Noise) {
        let z = to_measurement(b);
        let h = self.mean[3].max(1e-3);
        let r = noise.measurement(h);
        // S = H P H' + R (the top-left 4x4 block of P plus R).
        let mut s = [[0.0f32; MEAS]; MEAS];
        for i in 0..MEAS {
            for j in 0..MEAS {
                s[i][j] = self.cov[i][j];
            }
            s[i][i] += r[i];
        }
        let Some(s_inv) = invert4(&s) else {
            return; // degenerate covariance: keep the prediction
        };
        // K = P H' S^-1 (8x4): P's first four columns times S^-1.
        let mut k = [[0.0f32; MEAS]; DIM];
        for i in 0..DIM {
            for j in 0..MEAS {
                k[i][j] = (0..MEAS).map(|m| self.cov[i][m] * s_inv[m][j]).sum();
            }
        }
        let innovation: [f32; MEAS] = std::array::from_fn(|i| z[i] - self.mean[i]);
        for i in 0..DIM {
            self.mean[i] += (0..MEAS).map(|j| k[i][j] * innovation[j]).sum::<f32>();
        }
        // P = P - K H P (H P is P's first four rows).
        let p = self.cov;
        for i in 0..DIM {
            for j in 0..DIM {
                self.cov[i][j] = p[i][j] - (0..MEAS).map(|m| k[i][m] * p[m][j]).sum::<f32>();
            }
        }
    }
}

/// Inverse of a 4x4 matrix by Gauss-Jordan elimination with partial pivoting.
fn invert4(m: &[[f32; 4]; 4]) -> Option<[[f32; 4]; 4]> {
    let mut a = *m;
    let mut inv = [[0.0f32; 4]; 4];
    for (i, row) in inv.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for col in 0..4 {
        let pivot = (col..4).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        for j in 0..4 {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for r in 0..4 {
            if r != col {
                let f = a[r][col];
                for j in 0..4 {
                    a[r][j] -= f * a[col][j];
                    inv[r][j] -= f * inv[col][j];
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_of_a_known_matrix() {
        let m = [
            [4.0, 0.0, 0.0, 1.0],
            [0.0, 2.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [1.0, 0.0, 0.0, 3.0],
        ];
        let inv = invert4(&m).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                let v: f32 = (0..4).map(|k| m[i][k] * inv[k][j]).sum();
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-5);
            }
        }
        assert!(invert4(&[[0.0; 4]; 4]).is_none());
    }

    #[test]
    fn learns_constant_velocity_and_predicts_through_a_gap() {
        // A 20x40 box moving 3 px right and 1 px down per frame.
        let at = |t: f32| BBox::new(10.0 + 3.0 * t, 50.0 + t, 20.0, 40.0);
        let absolute = Noise {
            model: NoiseModel::Absolute,
            ..Noise::default()
        };
        for noise in [Noise::default(), absolute] {
            let mut kf = KalmanBox::new(&at(0.0), &noise);
            for t in 1..20 {
                kf.predict(&noise);
                kf.update(&at(t as f32), &noise);
            }
            // Five frames without measurements: the prediction keeps moving with the object.
            for _ in 0..5 {
                kf.predict(&noise);
            }
            let predicted = kf.bbox();
            let truth = at(24.0);
            assert!(
                predicted.iou(&truth) > 0.9,
                "{noise:?}: {predicted:?} vs {truth:?}"
            );
        }
    }

    /// The absolute variances weigh a detection against the motion as a Kalman filter should: a
    /// noisier detector (larger measurement variance) moves the estimate less towards a jump,
    /// a livelier motion (larger location variance) more.
    #[test]
    fn absolute_variances_set_how_far_a_detection_pulls() {
        let still = BBox::new(100.0, 100.0, 40.0, 80.0);
        let jumped = BBox::new(110.0, 100.0, 40.0, 80.0);
        let pull = |location_variance: f32, measurement_variance: f32| {
            let noise = Noise {
                model: NoiseModel::Absolute,
                location_variance,
                measurement_variance,
                ..Noise::default()
            };
            let mut kf = KalmanBox::new(&still, &noise);
            for _ in 0..30 {
                kf.predict(&noise);
                kf.update(&still, &noise);
            }
            kf.predict(&noise);
            kf.update(&jumped, &noise);
            kf.bbox().left - still.left
        };
        let (trusting, doubting) = (pull(2.0, 1.0), pull(2.0, 100.0));
        assert!(
            trusting > 5.0 && trusting > 2.0 * doubting,
            "{trusting} vs {doubting}"
        );
        assert!(pull(50.0, 100.0) > doubting);
    }

    /// The height-relative defaults are DeepSORT's weights: a configuration that only names the
    /// model keeps the filter it had.
    #[test]
    fn default_noise_is_height_relative_with_deepsort_weights() {
        let noise = Noise::default();
        assert_eq!(noise.model, NoiseModel::HeightRelative);
        assert_eq!(
            (noise.position_weight, noise.velocity_weight),
            (0.05, 0.00625)
        );
        assert_eq!(noise.process(100.0)[0], 25.0);
        assert_eq!(noise.measurement(100.0)[3], 25.0);
    }
}
