// SPDX-License-Identifier: MIT OR Apache-2.0
//! What `backend=auto` opens where native TensorRT does not run: OpenVINO on a CPU that
//! computes a reduced precision natively, when `network-mode` asks for one; ONNX Runtime
//! otherwise. The reason is kept, logged and posted with the engine message.
//!
//! The rule follows measurements (docs/BENCHMARKS.md, "CPU backends"): on a CPU with BF16
//! OpenVINO's reduced precision ran 1.7-2.6x ONNX Runtime's FP32, while OpenVINO's FP32 ran
//! 0.77-1.08x of it, so FP32 stays on ONNX Runtime; a machine whose ONNX Runtime reaches an
//! NVIDIA GPU keeps ONNX Runtime on the GPU. A model of more than [`OPENVINO_MAX_NODES`] nodes
//! stays on ONNX Runtime too: OpenVINO would take minutes to compile it.

use crate::config::{Backend, Device, NetworkMode};
use ferrostream_core::settings::Choice;

/// Above this many nodes (subgraphs included) `backend=auto` does not compile a model with
/// OpenVINO: its compile time grows far faster than the node count. Chains of activations took
/// OpenVINO 2026.4 on 2 CPU cores 2.6-3 s to compile at 1,000 nodes, 12-35 s at 2,000 (idle or
/// busy machine) and 18 minutes at 10,000 (233-373 s where the defect was reported), where
/// ONNX Runtime opened 10,000 in 0.4 s; the example detectors (100-370 nodes) compile in
/// 0.1-0.4 s, and detectors of up to 2,000 nodes keep OpenVINO's reduced precision.
pub const OPENVINO_MAX_NODES: usize = 2_000;

/// The local engine `backend=auto` opens after TensorRT (`OpenVino` or `OnnxRuntime`), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoChoice {
    pub backend: Backend,
    pub reason: String,
}

impl AutoChoice {
    pub fn onnxruntime(reason: String) -> Self {
        Self {
            backend: Backend::OnnxRuntime,
            reason,
        }
    }
}

/// Chooses between OpenVINO and ONNX Runtime for `device`, `mode` and `openvino_device`, for a
/// model of `nodes` nodes. `onnxruntime_gpu` says whether ONNX Runtime would reach an NVIDIA
/// GPU, and `reduced` which reduced precision an OpenVINO device computes natively (or why
/// none); each is asked only when the choice depends on it (both load runtimes).
pub fn choose(
    device: Device,
    mode: NetworkMode,
    openvino_device: &str,
    nodes: usize,
    onnxruntime_gpu: impl FnOnce() -> bool,
    reduced: impl FnOnce(&str) -> Result<&'static str, String>,
) -> AutoChoice {
    let onnxruntime = AutoChoice::onnxruntime;
    match device {
        Device::Cuda | Device::TensorRt => {
            return onnxruntime(format!(
                "device={} names an ONNX Runtime execution provider",
                device.nick()
            ));
        }
        Device::Auto | Device::Cpu => {}
    }
    if mode == NetworkMode::Fp32 {
        return onnxruntime(
            "network-mode=fp32, where OpenVINO measured no faster than ONNX Runtime \
             (network-mode=fp16 runs OpenVINO's reduced precision where the CPU has it)"
                .into(),
        );
    }
    if device == Device::Auto && onnxruntime_gpu() {
        return onnxruntime("ONNX Runtime runs on the NVIDIA GPU".into());
    }
    if nodes > OPENVINO_MAX_NODES {
        return onnxruntime(format!(
            "the model has {nodes} nodes, more than the {OPENVINO_MAX_NODES} above which \
             OpenVINO took from 12 s to many minutes to compile a model (ONNX Runtime opens \
             one of 10,000 nodes in under a second)"
        ));
    }
    match reduced(openvino_device) {
        Ok(precision) => AutoChoice {
            backend: Backend::OpenVino,
            reason: format!(
                "network-mode={} and {openvino_device} computes {} natively, where OpenVINO \
                 measured 1.7-2.6x ONNX Runtime's FP32 rate",
                mode.nick(),
                match precision {
                    "bf16" => "BF16",
                    "f16" => "FP16",
                    other => other,
                }
            ),
        },
        Err(why) => onnxruntime(format!("OpenVINO not used: {why}")),
    }
}

/// Whether ONNX Runtime would run on an NVIDIA GPU here: its CUDA provider is built in and a
/// CUDA device answers.
pub fn onnxruntime_reaches_a_gpu() -> bool {
    let provider = super::onnxruntime::has_cuda_provider();
    #[cfg(feature = "cuda")]
    let device = || ferrostream_core::cuda::device_count().is_ok_and(|n| n > 0);
    // Without CUDA support of our own the devices cannot be counted: the provider decides.
    #[cfg(not(feature = "cuda"))]
    let device = || true;
    provider && device()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16(_: &str) -> Result<&'static str, String> {
        Ok("bf16")
    }

    fn never<T>() -> T {
        panic!("the choice did not need to ask")
    }

    #[test]
    fn reduced_precision_on_a_cpu_that_has_it_runs_openvino() {
        let choice = choose(Device::Auto, NetworkMode::Fp16, "CPU", 300, || false, bf16);
        assert_eq!(choice.backend, Backend::OpenVino, "{choice:?}");
        assert!(
            choice
                .reason
                .contains("network-mode=fp16 and CPU computes BF16"),
            "{choice:?}"
        );
        // INT8 asks for speed too (OpenVINO runs Q/DQ models in INT8, others reduced).
        let choice = choose(Device::Cpu, NetworkMode::Int8, "CPU", 300, never, |_| {
            Ok("f16")
        });
        assert_eq!(choice.backend, Backend::OpenVino, "{choice:?}");
        assert!(choice.reason.contains("FP16"), "{choice:?}");
    }

    #[test]
    fn fp32_gpus_and_named_providers_stay_on_onnx_runtime() {
        let fp32 = choose(Device::Auto, NetworkMode::Fp32, "CPU", 300, never, |_| {
            never()
        });
        assert_eq!(fp32.backend, Backend::OnnxRuntime, "{fp32:?}");
        assert!(fp32.reason.contains("network-mode=fp32"), "{fp32:?}");
        let gpu = choose(
            Device::Auto,
            NetworkMode::Fp16,
            "CPU",
            300,
            || true,
            |_| never(),
        );
        assert_eq!(
            gpu,
            AutoChoice::onnxruntime("ONNX Runtime runs on the NVIDIA GPU".into())
        );
        let cuda = choose(Device::Cuda, NetworkMode::Fp16, "CPU", 300, never, |_| {
            never()
        });
        assert_eq!(cuda.backend, Backend::OnnxRuntime, "{cuda:?}");
        assert!(cuda.reason.contains("device=cuda"), "{cuda:?}");
        // device=cpu: the GPU is not asked about.
        let cpu = choose(Device::Cpu, NetworkMode::Fp16, "CPU", 300, never, bf16);
        assert_eq!(cpu.backend, Backend::OpenVino, "{cpu:?}");
    }

    #[test]
    fn models_too_deep_for_openvino_to_compile_in_time_stay_on_onnx_runtime() {
        let at = choose(
            Device::Auto,
            NetworkMode::Fp16,
            "CPU",
            OPENVINO_MAX_NODES,
            || false,
            bf16,
        );
        assert_eq!(at.backend, Backend::OpenVino, "{at:?}");
        // OpenVINO is not even loaded to ask about its precision.
        let deep = choose(
            Device::Auto,
            NetworkMode::Fp16,
            "CPU",
            10_000,
            || false,
            |_| never(),
        );
        assert_eq!(deep.backend, Backend::OnnxRuntime, "{deep:?}");
        assert!(
            deep.reason.contains("10000 nodes") && deep.reason.contains("2000"),
            "{deep:?}"
        );
    }

    #[test]
    fn no_runtime_or_no_reduced_arithmetic_keeps_onnx_runtime_and_says_why() {
        let missing = choose(
            Device::Auto,
            NetworkMode::Fp16,
            "CPU",
            300,
            || false,
            |_| Err("OpenVINO runtime not found".into()),
        );
        assert_eq!(
            missing,
            AutoChoice::onnxruntime("OpenVINO not used: OpenVINO runtime not found".into())
        );
    }
}
