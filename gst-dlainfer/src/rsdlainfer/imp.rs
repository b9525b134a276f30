// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::BTreeMap;
use std::sync::LazyLock;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;
use gst_trtinfer::config::{InferConfig, NetworkMode};
use gst_trtinfer::engine::EngineLog;
use gst_trtinfer::engine::workers::{Worker, WorkerPool};
use gst_trtinfer::inference::Inference;
use gst_trtinfer::rstrtinfer::subclass::TrtInferImpl;
use gst_trtinfer::rstrtinfer::{TrtInfer, open_inference, setup_error};
use gst_trtinfer::settings::SETTINGS;

use crate::check::{self, CheckOptions, Precision};
use crate::mode::DlaMode;
use crate::route::{self, Plan};

/// Why `dla-mode=standalone` refuses a model that TensorRT runs on the DLA.
const STANDALONE_NEEDS_A_LOADABLE: &str = "dla-mode=standalone runs DLA standalone loadables \
     (model-engine-file=*.loadable) through cuDLA; this model runs through TensorRT, which \
     drives the DLA itself: use dla-mode=auto or hybrid";

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsdlainfer",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream DLA inference"),
    )
});

#[derive(Default)]
pub struct DlaInfer {
    /// `dla-core=-1`: every DLA core (and the GPU with `allow-gpu-fallback`) as workers.
    all_cores: std::sync::atomic::AtomicBool,
    /// `dla-mode`: cuDLA's mode for loadables.
    mode: std::sync::Mutex<DlaMode>,
}

#[glib::object_subclass]
impl ObjectSubclass for DlaInfer {
    const NAME: &'static str = "GstRsDlaInfer";
    type Type = super::DlaInfer;
    type ParentType = TrtInfer;
}

impl ObjectImpl for DlaInfer {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut specs = vec![
                glib::ParamSpecInt::builder("dla-core")
                    .nick("DLA core")
                    .blurb(
                        "The DLA core to run on (the same setting as use-dla-core); -1: every \
                         DLA core, and the GPU with allow-gpu-fallback, batches to whichever \
                         is expected to finish first, results in order",
                    )
                    .minimum(-1)
                    .maximum(15)
                    .default_value(0)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("dla-mode", DlaMode::Auto)
                    .nick("cuDLA mode")
                    .blurb(
                        "How DLA loadables run: standalone (NvSciBuf tensors shared with the \
                         GPU, NvSciSync fences between the GPU and the DLA, no CPU wait), \
                         hybrid (tasks on the element's CUDA stream), or auto: standalone where \
                         NvSci and cuDLA offer it, else hybrid with the reason logged",
                    )
                    .mutable_ready()
                    .build(),
            ];
            // rstrtinfer's settings whose default differs here, installed again with it so that
            // gst-inspect-1.0 shows what the element does (FP16, on the DLA).
            specs.extend(
                SETTINGS.param_specs_differing(&InferConfig::default(), &DlaInfer::defaults()),
            );
            specs
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let trt = self.obj();
        let trt = trt.upcast_ref::<TrtInfer>();
        match pspec.name() {
            // rstrtinfer's own property, which warns when it is set too late.
            "dla-core" => {
                let core: i32 = value.get().expect("type checked upstream");
                self.all_cores
                    .store(core < 0, std::sync::atomic::Ordering::SeqCst);
                if core >= 0 {
                    trt.set_property_from_value("use-dla-core", &(core as u32).to_value());
                }
            }
            "dla-mode" => {
                ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
                *self.mode.lock().unwrap_or_else(|e| e.into_inner()) =
                    value.get().expect("type checked upstream");
            }
            _ => {
                ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
                trt.set_setting(pspec, value)
            }
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let trt = self.obj();
        let trt = trt.upcast_ref::<TrtInfer>();
        match pspec.name() {
            "dla-core" if self.all_cores.load(std::sync::atomic::Ordering::SeqCst) => {
                (-1i32).to_value()
            }
            "dla-core" => (trt.setting("use-dla-core").get::<u32>().unwrap_or(0) as i32).to_value(),
            "dla-mode" => self.mode().to_value(),
            other => trt.setting(other),
        }
    }
}

impl GstObjectImpl for DlaInfer {}

impl ElementImpl for DlaInfer {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream DLA inference",
                "Filter/Analytics/Video",
                "Runs a detector or classifier on a Jetson DLA core (cuDLA loadables, TensorRT \
                 or ONNX Runtime's TensorRT provider), on every frame or on the objects upstream \
                 detectors found, and attaches the results as analytics metadata",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }
}

impl BaseTransformImpl for DlaInfer {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;
}

impl TrtInferImpl for DlaInfer {
    fn defaults() -> InferConfig {
        let mut config = InferConfig::default();
        config.tensorrt.network_mode = NetworkMode::Fp16;
        config.tensorrt.enable_dla = true;
        config
    }

    fn open(
        &self,
        config: InferConfig,
        threads: usize,
        log: EngineLog,
    ) -> Result<Inference, gst::ErrorMessage> {
        let settings = |m: String| gst::error_msg!(gst::LibraryError::Settings, ("{m}"));
        let presence = route::probe();
        if self.all_cores.load(std::sync::atomic::Ordering::SeqCst) {
            let workers = route::plan_all_cores(&config, &presence).map_err(settings)?;
            if workers.len() > 1 {
                let inference = self.open_workers(config, workers, threads, log)?;
                self.post_report(&inference);
                return Ok(inference);
            }
        }
        let inference = match route::plan(&config, &presence).map_err(settings)? {
            Plan::Cudla { loadable, core } => self.open_loadable(config, &loadable, core)?,
            Plan::TensorRtDla(_) if self.mode() == DlaMode::Standalone => {
                return Err(settings(STANDALONE_NEEDS_A_LOADABLE.into()));
            }
            Plan::TensorRtDla(config) => {
                let inference = open_inference(config, threads, log)?;
                // backend=auto may end on an engine that cannot reach the DLA (no TensorRT, an
                // ONNX Runtime without its TensorRT provider): say where it runs instead.
                let providers = &inference.description().providers;
                if !providers.iter().any(|p| p.contains("DLA")) {
                    self.warn_placement(
                        &inference,
                        "This machine has a DLA, but the model runs on",
                        "neither native TensorRT nor ONNX Runtime's TensorRT provider is \
                         available; build with the tensorrt feature or install a TensorRT build \
                         of ONNX Runtime",
                    );
                }
                inference
            }
            Plan::Fallback { config, reason } => {
                let inference = open_inference(config, threads, log)?;
                let headline = match presence {
                    route::DlaPresence::Absent(_) => {
                        "No DLA on this machine (allow-gpu-fallback=true); running instead on"
                    }
                    // backend=kserve without a local model for the DLA.
                    route::DlaPresence::Present { .. } => {
                        "The DLA has no local model to run; running instead on"
                    }
                };
                self.warn_placement(&inference, headline, &reason);
                inference
            }
        };
        self.post_report(&inference);
        Ok(inference)
    }
}

impl DlaInfer {
    fn mode(&self) -> DlaMode {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens one engine per worker plan and runs them as one ([`WorkerPool`]).
    fn open_workers(
        &self,
        config: InferConfig,
        workers: Vec<(String, Plan)>,
        threads: usize,
        log: EngineLog,
    ) -> Result<Inference, gst::ErrorMessage> {
        let mut model_path = None;
        let mut engines = Vec::with_capacity(workers.len());
        for (name, plan) in workers {
            let inference = match plan {
                Plan::Cudla { loadable, core } => {
                    self.open_loadable(config.clone(), &loadable, core)?
                }
                Plan::TensorRtDla(_) if self.mode() == DlaMode::Standalone => {
                    return Err(gst::error_msg!(
                        gst::LibraryError::Settings,
                        ("{STANDALONE_NEEDS_A_LOADABLE}")
                    ));
                }
                Plan::TensorRtDla(c) | Plan::Fallback { config: c, .. } => {
                    open_inference(c, threads, log.clone())?
                }
            };
            model_path.get_or_insert_with(|| inference.model_path().to_owned());
            engines.push(Worker {
                name,
                engine: inference.into_engine(),
            });
        }
        let pool = WorkerPool::new(engines)
            .map_err(|e| setup_error(e.into()))?
            .with_log(log);
        Inference::with_engine(config, model_path.unwrap_or_default(), Box::new(pool))
            .map_err(setup_error)
    }

    /// Opens a DLA loadable in the mode `dla-mode` asks for; where auto falls back to hybrid
    /// mode, the reason goes to the bus as an info message.
    #[cfg(feature = "cudla")]
    fn open_loadable(
        &self,
        config: InferConfig,
        loadable: &std::path::Path,
        core: u32,
    ) -> Result<Inference, gst::ErrorMessage> {
        let (engine, fallback) =
            crate::cudla::open_loadable(loadable, core, config.gpu_id, self.mode())
                .map_err(|e| setup_error(e.into()))?;
        match fallback {
            // NvSci or cuDLA's standalone mode is not there: hybrid is the platform's mode.
            Some(gst_trtinfer::engine::EngineError::ProviderUnavailable(reason)) => {
                gst::element_imp_info!(
                    self,
                    gst::LibraryError::Init,
                    ("DLA{core} runs in cuDLA's hybrid mode: standalone mode is not available"),
                    ["{reason}"]
                );
            }
            // It is there and failed: worth a warning.
            Some(reason) => {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Init,
                    ("DLA{core} runs in cuDLA's hybrid mode: standalone mode failed to open"),
                    ["{reason}"]
                );
            }
            None => {}
        }
        Inference::with_engine(config, loadable.to_owned(), Box::new(engine)).map_err(setup_error)
    }

    #[cfg(not(feature = "cudla"))]
    fn open_loadable(
        &self,
        _config: InferConfig,
        loadable: &std::path::Path,
        _core: u32,
    ) -> Result<Inference, gst::ErrorMessage> {
        Err(gst::error_msg!(
            gst::CoreError::NotImplemented,
            (
                "{} is a DLA standalone loadable, but this build has no cuDLA support (the \
                 `cudla` feature)",
                loadable.display()
            )
        ))
    }

    /// Warns that the model does not run on the DLA, and says where it does (and why there,
    /// when `backend=auto` chose).
    fn warn_placement(&self, inference: &Inference, headline: &str, detail: &str) {
        let d = inference.description();
        let choice = inference
            .backend_choice()
            .map(|c| format!("; backend=auto chose {c}"))
            .unwrap_or_default();
        gst::element_imp_warning!(
            self,
            gst::LibraryError::Init,
            ("{headline} {} [{}]", d.backend, d.providers.join(", ")),
            ["{detail}{choice}"]
        );
    }

    /// Posts the DLA coverage of the ONNX model at the shape the element runs it.
    fn post_report(&self, inference: &Inference) {
        let config = inference.config();
        let Some(onnx) = config.onnx_file.as_ref() else {
            gst::info!(CAT, imp = self, "no onnx-file: no DLA coverage report");
            return;
        };
        let path = ferrostream_core::paths::resolve_model(onnx).unwrap_or_else(|_| onnx.clone());
        let net = inference.network();
        let batch = inference
            .fixed_batch()
            .unwrap_or(config.batch_size.max(1) as usize) as i64;
        let (c, h, w) = (net.channels as i64, net.height as i64, net.width as i64);
        let dims = if net.planar {
            vec![batch, c, h, w]
        } else {
            vec![batch, h, w, c]
        };
        let options = CheckOptions {
            precision: match config.tensorrt.network_mode {
                NetworkMode::Int8 => Precision::Int8,
                NetworkMode::Fp16 => Precision::Fp16,
                NetworkMode::Fp32 => Precision::Fp32,
            },
            batch: batch as u32,
            input_shapes: BTreeMap::from([(inference.description().input.name.clone(), dims)]),
        };
        let report = match check::check_file(&path, &options) {
            Ok(r) => r,
            Err(e) => {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Init,
                    ("No DLA coverage report: {e}")
                );
                return;
            }
        };
        gst::info!(CAT, imp = self, "{}", report.to_text(false));
        let structure = gst::Structure::builder("rsdlainfer-dla-report")
            .field("model", &report.model)
            .field("dla-share", report.dla_share)
            .field("macs-total", report.macs_total)
            .field("macs-dla", report.macs_dla)
            .field("layers-dla", report.nodes_dla as u32)
            .field("layers-gpu", report.nodes_gpu as u32)
            .field("dla-loadables", report.dla_loadables as u32)
            .field("gpu-subgraphs", report.gpu_subgraphs as u32)
            .field(
                "exceeds-loadable-limit",
                report.dla_loadables > report.loadable_limit,
            )
            .field("summary", report.summary())
            .field("report", report.to_json())
            .build();
        let _ = self.obj().post_message(
            gst::message::Element::builder(structure)
                .src(&*self.obj())
                .build(),
        );
    }
}
