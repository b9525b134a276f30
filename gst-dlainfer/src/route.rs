// SPDX-License-Identifier: MIT OR Apache-2.0
//! Where rsdlainfer runs a model: the DLA routes (cuDLA for standalone loadables; TensorRT with
//! the DLA as default device, or ONNX Runtime's TensorRT provider with its DLA options, for
//! ONNX models and TensorRT engines), and what happens on a machine without a DLA: the same
//! model on the GPU or CPU, or, with `backend=kserve`, on an inference server.

use std::path::{Path, PathBuf};

use gst_trtinfer::config::{Backend, Device, InferConfig, NetworkMode};

/// Whether this machine has DLA cores, and if not, what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DlaPresence {
    Present { cores: u32 },
    Absent(String),
}

/// Looks for DLA cores through cuDLA (the DLA exists only on Jetson, where JetPack installs
/// libcudla).
pub fn probe() -> DlaPresence {
    #[cfg(feature = "cudla")]
    {
        let lib = match crate::cudla::Library::load() {
            Ok(lib) => lib,
            Err(e) => return DlaPresence::Absent(e.to_string()),
        };
        match lib.device_count() {
            Ok(0) => DlaPresence::Absent("cuDLA reports 0 DLA cores on this machine".into()),
            Ok(n) => DlaPresence::Present { cores: n as u32 },
            Err(e) => DlaPresence::Absent(format!("cuDLA cannot count DLA cores: {e}")),
        }
    }
    #[cfg(not(feature = "cudla"))]
    DlaPresence::Absent(
        "this build has no cuDLA support (built without the `cudla` feature), so it cannot \
         reach a DLA"
            .into(),
    )
}

/// How rsdlainfer will run a configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// A DLA standalone loadable through cuDLA on this core.
    Cudla { loadable: PathBuf, core: u32 },
    /// TensorRT (native, or ONNX Runtime's provider) with the DLA as default device.
    TensorRtDla(InferConfig),
    /// No DLA: the same model on the GPU or CPU, and why.
    Fallback { config: InferConfig, reason: String },
}

/// A DLA standalone loadable (`trtexec --buildDLAStandalone`), by its extension.
pub fn is_loadable(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "loadable")
}

/// Decides the route for `config` on a machine where `presence` holds. Errors name what is
/// missing or what is contradictory.
///
/// With `backend=kserve` (or `triton`) the server is the fallback: a local model (`onnx-file`,
/// an engine or a loadable) runs on the DLA where there is one, and the server's model runs
/// everywhere else.
pub fn plan(config: &InferConfig, presence: &DlaPresence) -> Result<Plan, String> {
    let mut config = config.clone();
    if config.backend.is_remote() {
        let local = config.onnx_file.is_some() || config.model_engine_file.is_some();
        let why = match presence {
            DlaPresence::Present { .. } if local => {
                // The DLA takes the local model through TensorRT.
                config.backend = Backend::TensorRt;
                None
            }
            DlaPresence::Present { .. } => Some(
                "backend=kserve without onnx-file or model-engine-file: no local model for the \
                 DLA"
                .to_string(),
            ),
            DlaPresence::Absent(why) => Some(why.clone()),
        };
        if let Some(reason) = why {
            if !config.tensorrt.allow_gpu_fallback {
                return Err(format!(
                    "the DLA cannot run this model ({reason}) and allow-gpu-fallback=false \
                     forbids the inference server"
                ));
            }
            config.tensorrt.enable_dla = false;
            return Ok(Plan::Fallback { config, reason });
        }
    }
    let trt = &mut config.tensorrt;
    if trt.network_mode == NetworkMode::Fp32 {
        return Err("the DLA has no FP32: set network-mode to fp16 (2) or int8 (1)".into());
    }
    trt.enable_dla = true;
    let core = trt.use_dla_core;
    let loadable = config.model_engine_file.clone().filter(|p| is_loadable(p));
    match presence {
        DlaPresence::Present { cores } if core >= *cores => Err(format!(
            "dla-core {core} requested, but this machine has {cores} DLA core(s)"
        )),
        DlaPresence::Present { .. } => {
            if let Some(loadable) = loadable {
                return Ok(Plan::Cudla { loadable, core });
            }
            if config.backend == Backend::OnnxRuntime {
                match config.device {
                    // ONNX Runtime reaches the DLA only through its TensorRT provider.
                    Device::Auto | Device::TensorRt => config.device = Device::TensorRt,
                    other => {
                        return Err(format!(
                            "backend=onnxruntime device={other:?} cannot run on the DLA: use \
                             device=tensorrt (ONNX Runtime's TensorRT provider with its DLA \
                             options) or backend=tensorrt"
                        ));
                    }
                }
            }
            Ok(Plan::TensorRtDla(config))
        }
        DlaPresence::Absent(why) => {
            if !config.tensorrt.allow_gpu_fallback {
                return Err(format!(
                    "no DLA on this machine: {why}. Set allow-gpu-fallback=true to run on the \
                     GPU (or CPU) instead"
                ));
            }
            if let Some(loadable) = loadable {
                if config.onnx_file.is_none() {
                    return Err(format!(
                        "no DLA on this machine ({why}), and {} is a DLA standalone loadable, \
                         which only a DLA runs; set onnx-file too, so the element can fall back \
                         to the GPU or CPU",
                        loadable.display()
                    ));
                }
                config.model_engine_file = None;
            }
            config.tensorrt.enable_dla = false;
            Ok(Plan::Fallback {
                config,
                reason: why.clone(),
            })
        }
    }
}

/// How rsdlainfer runs a configuration with `dla-core=-1`: one worker per DLA core, and the GPU
/// as one more with `allow-gpu-fallback`, batches going to whichever is expected to finish first
/// (`ferrostream_inference::engine::workers`). Without a DLA, the single fallback of [`plan`].
pub fn plan_all_cores(
    config: &InferConfig,
    presence: &DlaPresence,
) -> Result<Vec<(String, Plan)>, String> {
    let DlaPresence::Present { cores } = presence else {
        return Ok(vec![("fallback".into(), plan(config, presence)?)]);
    };
    let mut workers = Vec::new();
    for core in 0..*cores {
        let mut c = config.clone();
        c.tensorrt.use_dla_core = core;
        workers.push((format!("DLA{core}"), plan(&c, presence)?));
    }
    if config.tensorrt.allow_gpu_fallback {
        let mut gpu = config.clone();
        gpu.tensorrt.enable_dla = false;
        if gpu.model_engine_file.as_deref().is_some_and(is_loadable) {
            // A loadable runs on a DLA only: the GPU worker needs the ONNX model.
            if gpu.onnx_file.is_none() {
                return Err(
                    "dla-core=-1 with allow-gpu-fallback: the GPU worker needs onnx-file beside \
                     the DLA loadable"
                        .into(),
                );
            }
            gpu.model_engine_file = None;
        }
        workers.push((
            "GPU".into(),
            Plan::Fallback {
                config: gpu,
                reason: "the GPU worker of dla-core=-1 (allow-gpu-fallback)".into(),
            },
        ));
    }
    Ok(workers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inference_server_is_the_fallback_of_backend_kserve() {
        let remote = dla_config(|c| {
            c.backend = Backend::Kserve;
            c.onnx_file = Some("det.onnx".into());
        });
        let absent = DlaPresence::Absent("no cuDLA".into());
        let Ok(Plan::Fallback { config, reason }) = plan(&remote, &absent) else {
            panic!("no DLA: the server");
        };
        assert_eq!(
            (config.backend, reason.as_str()),
            (Backend::Kserve, "no cuDLA")
        );
        assert!(!config.tensorrt.enable_dla);
        let present = DlaPresence::Present { cores: 2 };
        let Ok(Plan::TensorRtDla(config)) = plan(&remote, &present) else {
            panic!("a DLA and a local model: the DLA");
        };
        assert_eq!(config.backend, Backend::TensorRt);
        let server_only = dla_config(|c| {
            c.backend = Backend::Triton;
            c.onnx_file = None;
        });
        let Ok(Plan::Fallback { reason, .. }) = plan(&server_only, &present) else {
            panic!("no local model: the server");
        };
        assert!(reason.contains("no local model"), "{reason}");
        let strict = dla_config(|c| {
            c.backend = Backend::Kserve;
            c.tensorrt.allow_gpu_fallback = false;
        });
        let e = plan(&strict, &absent).unwrap_err();
        assert!(e.contains("forbids the inference server"), "{e}");
    }

    fn dla_config(f: impl FnOnce(&mut InferConfig)) -> InferConfig {
        let mut c = InferConfig::default();
        c.tensorrt.network_mode = NetworkMode::Fp16;
        c.onnx_file = Some("model.onnx".into());
        f(&mut c);
        c
    }

    const ABSENT: &str = "libcudla.so.1 cannot be loaded";

    #[test]
    fn all_cores_means_a_worker_per_dla_core_and_the_gpu_when_allowed() {
        let present = DlaPresence::Present { cores: 2 };
        let config = dla_config(|c| c.backend = Backend::TensorRt);
        let workers = plan_all_cores(&config, &present).unwrap();
        let names: Vec<&str> = workers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["DLA0", "DLA1", "GPU"]);
        for (core, (_, plan)) in workers[..2].iter().enumerate() {
            let Plan::TensorRtDla(c) = plan else {
                panic!("{plan:?}")
            };
            assert_eq!(
                (c.tensorrt.use_dla_core, c.tensorrt.enable_dla),
                (core as u32, true)
            );
        }
        let Plan::Fallback { config: gpu, .. } = &workers[2].1 else {
            panic!("the GPU worker")
        };
        assert!(!gpu.tensorrt.enable_dla);
        let strict = dla_config(|c| {
            c.backend = Backend::TensorRt;
            c.tensorrt.allow_gpu_fallback = false;
        });
        let names: Vec<String> = plan_all_cores(&strict, &present)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["DLA0", "DLA1"]);
        // Loadables: one per core through cuDLA; the GPU worker takes the ONNX model.
        let loadable = dla_config(|c| c.model_engine_file = Some("det.loadable".into()));
        let workers = plan_all_cores(&loadable, &present).unwrap();
        assert!(matches!(workers[1].1, Plan::Cudla { core: 1, .. }));
        let Plan::Fallback { config: gpu, .. } = &workers[2].1 else {
            panic!("the GPU worker")
        };
        assert_eq!(gpu.model_engine_file, None);
        let only_loadable = dla_config(|c| {
            c.model_engine_file = Some("det.loadable".into());
            c.onnx_file = None;
        });
        assert!(
            plan_all_cores(&only_loadable, &present)
                .unwrap_err()
                .contains("onnx-file")
        );
        // Without a DLA: the usual single fallback.
        let absent = DlaPresence::Absent(ABSENT.into());
        let workers = plan_all_cores(&config, &absent).unwrap();
        assert_eq!(workers.len(), 1);
        assert!(matches!(workers[0].1, Plan::Fallback { .. }));
    }

    #[test]
    fn without_a_dla_the_element_falls_back_or_says_what_is_missing() {
        let absent = DlaPresence::Absent(ABSENT.into());
        let Plan::Fallback { config, reason } = plan(&dla_config(|_| {}), &absent).unwrap() else {
            panic!("fallback");
        };
        assert_eq!(reason, ABSENT);
        assert!(!config.tensorrt.enable_dla);
        let strict = dla_config(|c| c.tensorrt.allow_gpu_fallback = false);
        let e = plan(&strict, &absent).unwrap_err();
        assert!(
            e.contains("no DLA on this machine") && e.contains(ABSENT),
            "{e}"
        );
        assert!(e.contains("allow-gpu-fallback=true"), "{e}");
        // A loadable only runs on a DLA: falling back needs the ONNX model.
        let loadable = dla_config(|c| {
            c.onnx_file = None;
            c.model_engine_file = Some("m.loadable".into());
        });
        let e = plan(&loadable, &absent).unwrap_err();
        assert!(
            e.contains("m.loadable") && e.contains("set onnx-file"),
            "{e}"
        );
        let both = dla_config(|c| c.model_engine_file = Some("m.loadable".into()));
        let Plan::Fallback { config, .. } = plan(&both, &absent).unwrap() else {
            panic!("fallback");
        };
        assert_eq!(config.model_engine_file, None);
    }

    #[test]
    fn with_a_dla_loadables_go_to_cudla_and_models_to_tensorrt() {
        let present = DlaPresence::Present { cores: 2 };
        let loadable = dla_config(|c| {
            c.model_engine_file = Some("m.loadable".into());
            c.tensorrt.use_dla_core = 1;
        });
        assert_eq!(
            plan(&loadable, &present).unwrap(),
            Plan::Cudla {
                loadable: "m.loadable".into(),
                core: 1
            }
        );
        let Plan::TensorRtDla(c) = plan(&dla_config(|_| {}), &present).unwrap() else {
            panic!("TensorRT on the DLA");
        };
        assert!(c.tensorrt.enable_dla);
        let ort = dla_config(|c| c.backend = Backend::OnnxRuntime);
        let Plan::TensorRtDla(c) = plan(&ort, &present).unwrap() else {
            panic!("ONNX Runtime's TensorRT provider");
        };
        assert_eq!(c.device, Device::TensorRt);
        let cpu = dla_config(|c| {
            c.backend = Backend::OnnxRuntime;
            c.device = Device::Cpu;
        });
        assert!(
            plan(&cpu, &present)
                .unwrap_err()
                .contains("device=tensorrt")
        );
        let core = dla_config(|c| c.tensorrt.use_dla_core = 2);
        assert!(plan(&core, &present).unwrap_err().contains("2 DLA core(s)"));
    }

    #[test]
    fn fp32_is_refused() {
        let fp32 = dla_config(|c| c.tensorrt.network_mode = NetworkMode::Fp32);
        let e = plan(&fp32, &DlaPresence::Present { cores: 1 }).unwrap_err();
        assert!(e.contains("no FP32"), "{e}");
    }
}
