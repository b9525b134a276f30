// SPDX-License-Identifier: MIT OR Apache-2.0
//! Constant-velocity Kalman filter on boxes, as in SORT/DeepSORT/ByteTrack.
//!
//! State: centre x, centre y, aspect ratio (w/h), height, and their velocities. Measurement: the
//! first four. Noise scales with the box height, so small and large objects behave alike.

// Small fixed-size matrix algebra reads best with explicit indices.
#![allow(clippy::needless_range_loop)]

use ferrostream_core::BBox;

const DIM: usize = 8;
const MEAS: usize = 4;
/// Process and measurement noise relative to the box height (DeepSORT's values).
const STD_POSITION: f32 = 1.0 / 20.0;
const STD_VELOCITY: f32 = 1.0 / 160.0;

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
    pub fn new(b: &BBox) -> Self {
        let m = to_measurement(b);
        let h = m[3];
        let std = [
            2.0 * STD_POSITION * h,
            2.0 * STD_POSITION * h,
            1e-2,
            2.0 * STD_POSITION * h,
            10.0 * STD_VELOCITY * h,
            10.0 * STD_VELOCITY * h,
            1e-5,
            10.0 * STD_VELOCITY * h,
        ];
        let mut cov = [[0.0; DIM]; DIM];
        for i in 0..DIM {
            cov[i][i] = std[i] * std[i];
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
    pub fn predict(&mut self) {
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
        let q = [
            STD_POSITION * h,
            STD_POSITION * h,
            1e-2,
            STD_POSITION * h,
            STD_VELOCITY * h,
            STD_VELOCITY * h,
            1e-5,
            STD_VELOCITY * h,
        ];
        for i in 0..DIM {
            out[i][i] += q[i] * q[i];
        }
        self.cov = out;
    }

    /// Corrects with a measured box.
    pub fn update(&mut self, b: &BBox) {
        let z = to_measurement(b);
        let h = self.mean[3].max(1e-3);
        let r = [STD_POSITION * h, STD_POSITION * h, 1e-1, STD_POSITION * h];
        // S = H P H' + R (the top-left 4x4 block of P plus R).
        let mut s = [[0.0f32; MEAS]; MEAS];
        for i in 0..MEAS {
            for j in 0..MEAS {
                s[i][j] = self.cov[i][j];
            }
            s[i][i] += r[i] * r[i];
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
        let mut kf = KalmanBox::new(&at(0.0));
        for t in 1..20 {
            kf.predict();
            kf.update(&at(t as f32));
        }
        // Five frames without measurements: the prediction keeps moving with the object.
        for _ in 0..5 {
            kf.predict();
        }
        let predicted = kf.bbox();
        let truth = at(24.0);
        assert!(predicted.iou(&truth) > 0.9, "{predicted:?} vs {truth:?}");
    }
}
