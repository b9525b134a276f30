// SPDX-License-Identifier: MIT OR Apache-2.0
//! How ONNX Runtime honours `network-mode`, provider by provider:
//!
//! | `network-mode` | CUDA provider | TensorRT provider | CPU provider |
//! |---|---|---|---|
//! | fp32 | FP32 (TF32 matrix products) | FP32 | FP32 |
//! | fp16 | the model converted to FP16 ([`crate::onnx::fp16`], cached) | TensorRT's FP16 | FP32, with a warning: the provider computes FP16 models mostly in FP32 between casts (0.65-1.04x of FP32 measured) |
//! | int8, model with Q/DQ nodes | the model as given, with a warning: 0.28x FP16 measured | TensorRT's INT8 | INT8 kernels (VNNI/AMX where the CPU has them): 1.86x FP32 measured |
//! | int8, float model | FP16 as above, with a warning | FP16, with a warning | FP32, with a warning |
//!
//! A float model is never quantised at run time: a calibration table (`int8-calib-file`) is
//! TensorRT's and is read by the native TensorRT backend only; ONNX Runtime needs a model with
//! Q/DQ nodes (`scripts/models/quantize_int8.py` makes one from real frames).

use super::{FirstProvider, Note, OrtOptions};
use crate::config::NetworkMode;

/// The model bytes a session opens, at the precision they compute in.
#[derive(Debug, Clone)]
pub struct ModelAtPrecision {
    pub bytes: Vec<u8>,
    /// The provider that runs it first.
    pub provider: FirstProvider,
    /// `fp32`, `fp16` or `int8`.
    pub label: &'static str,
    pub notes: Vec<Note>,
}

/// `bytes` (the model of `options`) as the provider `first` runs it at `options.precision`.
pub fn model_at_precision(
    options: &OrtOptions,
    first: FirstProvider,
    bytes: Vec<u8>,
) -> ModelAtPrecision {
    let plain = |bytes, label, notes| ModelAtPrecision {
        bytes,
        provider: first,
        label,
        notes,
    };
    match options.precision {
        NetworkMode::Fp32 => plain(bytes, "fp32", Vec::new()),
        NetworkMode::Fp16 => fp16(options, first, bytes, Vec::new()),
        NetworkMode::Int8 if crate::onnx::has_qdq_nodes(&bytes[..]).unwrap_or(false) => {
            let note = match first {
                FirstProvider::Cpu => Note::info(
                    "network-mode=int8: the model's Q/DQ nodes run on INT8 kernels (MobileNetV2: \
                     1.86x FP32 measured)",
                ),
                FirstProvider::Cuda => Note::warning(
                    "network-mode=int8: ONNX Runtime's CUDA provider runs Q/DQ models through \
                     dequantised arithmetic, 0.28x FP16 measured on an H100 (YOLOv8m, \
                     docs/BENCHMARKS.md); running the model as given: for speed give the float \
                     model with network-mode=fp16",
                ),
                FirstProvider::TensorRt => Note::info(
                    "network-mode=int8: TensorRT builds INT8 engines from the model's Q/DQ nodes",
                ),
            };
            plain(bytes, "int8", vec![note])
        }
        NetworkMode::Int8 => {
            let why = "network-mode=int8: ONNX Runtime runs INT8 only from a model with Q/DQ \
                       nodes (scripts/models/quantize_int8.py makes one from real frames; \
                       int8-calib-file is read by backend=tensorrt only)";
            match first {
                FirstProvider::Cpu => plain(
                    bytes,
                    "fp32",
                    vec![Note::warning(format!(
                        "{why}; running FP32, the fastest precision of the CPU provider \
                         (backend=auto or backend=openvino runs BF16/FP16 where the CPU computes it)"
                    ))],
                ),
                _ => fp16(
                    options,
                    first,
                    bytes,
                    vec![Note::warning(format!(
                        "{why}; running FP16, the fastest precision here"
                    ))],
                ),
            }
        }
    }
}

/// FP16 on `first`: TensorRT's own, the converted model on CUDA, FP32 on the CPU.
fn fp16(
    options: &OrtOptions,
    first: FirstProvider,
    bytes: Vec<u8>,
    mut notes: Vec<Note>,
) -> ModelAtPrecision {
    match first {
        FirstProvider::TensorRt => ModelAtPrecision {
            bytes,
            provider: first,
            label: "fp16",
            notes,
        },
        FirstProvider::Cpu => {
            notes.push(Note::warning(
                "network-mode=fp16: ONNX Runtime's CPU provider runs FP16 models mostly in FP32 \
                 between casts (0.65x to 1.04x of FP32 measured, docs/BENCHMARKS.md); running \
                 FP32 (backend=auto or backend=openvino runs BF16/FP16 where the CPU computes \
                 it: 1.65x to 2.65x)",
            ));
            ModelAtPrecision {
                bytes,
                provider: first,
                label: "fp32",
                notes,
            }
        }
        FirstProvider::Cuda => {
            match crate::onnx::fp16_model(&options.model, &bytes, &options.cache_dir) {
                Ok(converted) => {
                    notes.push(Note::info(format!(
                        "network-mode=fp16: model converted to FP16: {}{}",
                        converted.summary,
                        converted
                            .path
                            .map(|p| format!(", {}", p.display()))
                            .unwrap_or_default()
                    )));
                    ModelAtPrecision {
                        bytes: converted.bytes,
                        provider: first,
                        label: "fp16",
                        notes,
                    }
                }
                Err(e) => {
                    notes.push(Note::warning(format!(
                        "network-mode=fp16: the model cannot be converted to FP16 ({e}); \
                         running FP32"
                    )));
                    ModelAtPrecision {
                        bytes,
                        provider: first,
                        label: "fp32",
                        notes,
                    }
                }
            }
        }
    }
}
