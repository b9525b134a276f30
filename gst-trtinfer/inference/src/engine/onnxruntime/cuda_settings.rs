// SPDX-License-Identifier: MIT OR Apache-2.0
//! Settings of ONNX Runtime's CUDA provider that change its speed, chosen per model by timing
//! ([`super::tuning`]) and recorded under the provider's own option names.

use ort::ep::{self, cuda::ConvAlgorithmSearch};

/// The CUDA provider's speed settings. The default is ONNX Runtime's own default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaSettings {
    /// `prefer_nhwc`: convolutions in channels-last layout (tensor cores prefer it; layout
    /// transposes around other operators can cost more than it gains).
    pub prefer_nhwc: bool,
    /// `cudnn_conv_algo_search=HEURISTIC` instead of EXHAUSTIVE (cuDNN's benchmark of every
    /// algorithm at the first run).
    pub heuristic_search: bool,
    /// `enable_cuda_graph`: the run is captured once and replayed.
    pub graph: bool,
    /// `use_tf32`: FP32 matrix products on TF32 tensor cores (10-bit mantissa inputs).
    pub tf32: bool,
}

impl Default for CudaSettings {
    fn default() -> Self {
        Self {
            prefer_nhwc: false,
            heuristic_search: false,
            graph: false,
            tf32: true,
        }
    }
}

impl CudaSettings {
    /// `cuda` with these settings.
    pub fn apply(&self, cuda: ep::CUDA) -> ep::CUDA {
        cuda.with_prefer_nhwc(self.prefer_nhwc)
            .with_conv_algorithm_search(if self.heuristic_search {
                ConvAlgorithmSearch::Heuristic
            } else {
                ConvAlgorithmSearch::Exhaustive
            })
            .with_cuda_graph(self.graph)
            .with_tf32(self.tf32)
    }

    /// The settings as the provider's options, one `key=value` per line.
    pub fn to_record(&self) -> String {
        format!(
            "prefer_nhwc={}\ncudnn_conv_algo_search={}\nenable_cuda_graph={}\nuse_tf32={}\n",
            self.prefer_nhwc as u8,
            if self.heuristic_search {
                "HEURISTIC"
            } else {
                "EXHAUSTIVE"
            },
            self.graph as u8,
            self.tf32 as u8
        )
    }

    /// Settings from [`Self::to_record`]'s text (`#` lines ignored); `None` unless every key is
    /// there with a valid value.
    pub fn from_record(text: &str) -> Option<Self> {
        let mut found = [None; 4];
        for line in text.lines().map(str::trim) {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (key, value) = line.split_once('=')?;
            let flag = || match value {
                "0" => Some(false),
                "1" => Some(true),
                _ => None,
            };
            match key {
                "prefer_nhwc" => found[0] = Some(flag()?),
                "cudnn_conv_algo_search" => {
                    found[1] = Some(match value {
                        "HEURISTIC" => true,
                        "EXHAUSTIVE" => false,
                        _ => return None,
                    })
                }
                "enable_cuda_graph" => found[2] = Some(flag()?),
                "use_tf32" => found[3] = Some(flag()?),
                _ => return None,
            }
        }
        Some(Self {
            prefer_nhwc: found[0]?,
            heuristic_search: found[1]?,
            graph: found[2]?,
            tf32: found[3]?,
        })
    }
}

impl std::fmt::Display for CudaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_record().trim_end().replace('\n', ", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_garbage() {
        let s = CudaSettings {
            prefer_nhwc: true,
            heuristic_search: true,
            graph: false,
            tf32: false,
        };
        let text = format!("# measured\n{}", s.to_record());
        assert_eq!(CudaSettings::from_record(&text), Some(s));
        assert_eq!(
            s.to_string(),
            "prefer_nhwc=1, cudnn_conv_algo_search=HEURISTIC, enable_cuda_graph=0, use_tf32=0"
        );
        assert_eq!(CudaSettings::from_record("prefer_nhwc=1\n"), None);
        assert_eq!(
            CudaSettings::from_record(&s.to_record().replace("=1", "=yes")),
            None
        );
    }
}
