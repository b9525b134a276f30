// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rstrtinfer`: inference on video frames (primary) or on the objects found in them
//! (secondary), attaching the results as [`BatchMeta`](ferrostream_core::BatchMeta).
//!
//! The model runs on ONNX Runtime (CPU, or its CUDA / TensorRT execution providers where the
//! installed runtime has them) or, in builds with the `tensorrt` feature, on native TensorRT
//! (`backend=tensorrt`, or `auto`, which prefers it): a `model-engine-file`, or an engine built
//! from `onnx-file` once (`network-mode`, `workspace-size`, `enable-dla`...) and cached. Pre-processing follows nvinfer: scale (optionally keeping the
//! aspect ratio with symmetric padding), colour order, `net-scale-factor` and `offsets`, NCHW or
//! NHWC, f32/f16/u8 inputs. Output parsers: SSD, TensorFlow Object Detection API,
//! boxes/scores/labels, end-to-end rows, YOLOv5, YOLOX, YOLOv8, YOLOv8-seg (instance masks),
//! DETR/RT-DETR rows, CenterFace, classifiers and semantic segmentation (a class map per frame);
//! guessed from the outputs when `output-parser` is unset (from the first inference's shapes
//! where the model's are symbolic, and checked against the first outputs), or nvinfer custom
//! parser libraries (`custom-lib-path` with a `parse-*-func-name`; a bounding-box parser built
//! against DeepStream 9's headers needs `custom-lib-deepstream-version=9`). Then every nvinfer
//! `cluster-mode` with `[class-attrs-*]` thresholds.
//!
//! Every setting is a property and a key of an nvinfer-style `config-file-path`; properties set
//! on the element override the file.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt \
//!     ! rsmetaexport location=objects.jsonl ! fakesink
//! ```
//!
//! `process-mode=secondary` works on the objects of `operate-on-gie-id` (filtered by class and
//! size): each object's box is cropped and pre-processed like a frame, crops of every frame of a
//! batch share engine calls, and the result joins the object: a classification, a secondary
//! detector's objects (children with `parent` set), or with `output-tensor-meta` the raw
//! outputs as `tensor:<gie-unique-id>:<output>` attributes. Tracked objects keep their result
//! for `secondary-reinfer-interval` frames.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker \
//!     ! rstrtinfer config-file-path=pipelines/imagenet_secondary.txt \
//!     ! rsmetaexport location=objects.jsonl ! fakesink
//! ```
//!
//! On start the element posts an element message `rstrtinfer-engine` saying which backend,
//! execution providers, model, input shape and parser it uses (with `backend=auto`, also
//! `backend-choice`: why that backend); a parser chosen or settled from the first outputs is
//! announced by an `rstrtinfer-parser` message.
//!
//! `backend=auto` runs native TensorRT where it is built and installed; else OpenVINO when
//! `network-mode` asks for a reduced precision (fp16, int8), no NVIDIA GPU is in reach of ONNX
//! Runtime and the OpenVINO device computes BF16 or FP16 natively (measured 1.7-2.6x ONNX
//! Runtime's FP32 rate on such CPUs); else ONNX Runtime (FP32 included: OpenVINO's FP32 is no
//! faster).
//!
//! ```text
//! # The fastest accurate backend of a CPU-only machine: OpenVINO BF16 on a CPU with BF16
//! gst-launch-1.0 -m filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt network-mode=fp16 ! fakesink
//! ```
//!
//! ```text
//! # A YOLOv8 model with an nvinfer parser library, unchanged
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer onnx-file=yolov8s.onnx num-detected-classes=80 \
//!         custom-lib-path=libnvdsinfer_custom_impl_Yolo.so parse-bbox-func-name=NvDsInferParseYolo \
//!     ! rsosd ! videoconvert ! autovideosink
//! ```
//!
//! `backend=kserve` (or `triton`) runs the model on a KServe v2 / Open Inference Protocol server
//! over gRPC (Triton, KServe, MLServer): `server-url`, `model-name`, `model-version`,
//! `server-headers`, TLS files, `server-timeout`. The input and outputs come from the server's
//! model metadata; pre-processing and parsing are the local ones. Up to `requests-in-flight`
//! batches are on their way at once; `on-server-failure` chooses between holding the stream back
//! (`wait`) and passing frames on without results (`drop`, counted in `server-dropped`), with a
//! warning per outage, `rstrtinfer-server-lost` / `rstrtinfer-server-recovered` messages (always
//! in pairs, in the order the frames met the outage), and an error after `server-give-up` seconds
//! without an answer.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt backend=kserve \
//!         server-url=127.0.0.1:8001 model-name=coco \
//!     ! rsmetaexport location=objects.jsonl ! fakesink
//! ```
//!
//! `config-file-path` also takes DeepStream `nvinferserver` configuration files (protobuf text
//! format, `infer_config { ... }`; deepstream-app's `plugin-type=1`), told from nvinfer's INI
//! by their first word and run on `backend=triton`: `backend.triton.grpc.url`, `model_name` and
//! `version` become `server-url`, `model-name` and `model-version`, and the pre-processing,
//! post-processing, `input_control` and `output_control` fields the nvinfer keys that mean the
//! same. Fields without effect here are warnings naming file, line and field; `model_repo`
//! (Triton in-process) is an error naming the file and line that says to serve the repository
//! (`tritonserver --model-repository=<root>`) and write `grpc { url: "host:8001" }` instead.
//! Properties set on the element override the file as ever.
//!
//! ```text
//! # The detector of coco_ssd.txt written for nvinferserver, the model served as "coco"
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd_triton.txt server-url=127.0.0.1:8001 \
//!     ! rsmetaexport location=objects.jsonl ! fakesink
//! ```
//!
//! On a GPU (frames in CUDA memory or NVMM, and an engine with a device side: ONNX Runtime's
//! CUDA provider, TensorRT, cuDLA) nothing goes through the host but a few kilobytes of
//! results: the frames are pre-processed into the engine's input tensor, which the engine reads
//! in place; detector outputs stay on the GPU, where the anchors that may hold a detection are
//! selected and only their rows are copied back. Up to three buffers are in flight: buffer k+1 is
//! pre-processed and queued while k runs, an output thread pushes them in order, and the
//! element's latency (the time buffers spend in it) is reported in the latency query. The
//! element offers its engine's CUDA context (the primary context of `gpu-id`) to upstream CUDA
//! elements, so `nvh264dec` decodes straight into memory the engine reads; frames from another
//! context are copied device to device, never through the host.
//!
//! ```text
//! gst-launch-1.0 rsstreammux name=mux batch-size=8 \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt device=cuda batch-size=8 \
//!     ! rstracker ! rsosd ! fakesink \
//!     filesrc location=cam0.mp4 ! qtdemux ! h264parse ! nvh264dec ! mux.sink_0 \
//!     filesrc location=cam1.mp4 ! qtdemux ! h264parse ! nvh264dec ! mux.sink_1
//! ```
//!
//! Metrics (process-wide registry, `ferrostream_core::metrics::global()`, labelled
//! `element="<name>"`, from start to stop; the `stats` property holds the same counts):
//! `ferrostream_inference_batches_total` (buffers run through the engine, `batches`),
//! `ferrostream_inference_frames_total` (frames seen, `frames`),
//! `ferrostream_inference_frames_skipped_total` (primary mode: frames passed on without
//! inference because of `interval` or a server that did not answer, `skipped`),
//! `ferrostream_inference_engine_seconds` (histogram of engine time per inferred buffer) and
//! `ferrostream_inference_queue_depth` (buffers in flight on the GPU or server path). With
//! `rsstreammux latency-tracking=true` each frame's latency record gets the element's entry
//! (when the buffer arrived, before any wait for room in flight) and exit (when it is pushed).

use gst::glib;
use gst::glib::subclass::prelude::*;
use gst::prelude::*;
use gst_base::subclass::prelude::*;

use crate::config::InferConfig;
use crate::engine::EngineLog;
use crate::inference::Inference;

mod crops;
mod flight;
pub mod frames;
mod imp;
mod metrics;

pub use crate::config::{
    Backend, BoxCoords, BoxFormat, ClusterMode, ColorFormat, Device, InputOrder, NetworkMode,
    NetworkType, ParserKind, ProcessMode, ServerFailure, Softmax,
};

glib::wrapper! {
    pub struct TrtInfer(ObjectSubclass<imp::TrtInfer>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

impl TrtInfer {
    /// Sets one of rstrtinfer's settings (see [`crate::settings::SETTINGS`]): for a subclass
    /// that installs a setting's property again with its own default, and passes it on here.
    pub fn set_setting(&self, pspec: &glib::ParamSpec, value: &glib::Value) {
        self.imp().set_setting(pspec, value)
    }

    /// The value of one of rstrtinfer's settings.
    pub fn setting(&self, name: &str) -> glib::Value {
        self.imp().setting(name)
    }
}

/// Opens the inference of a resolved configuration (the engine route of an element class).
pub type OpenFn =
    fn(&TrtInfer, InferConfig, usize, EngineLog) -> Result<Inference, gst::ErrorMessage>;

/// The class structure: the virtual methods subclasses (rsdlainfer) override.
#[repr(C)]
pub struct TrtInferClass {
    parent: gst_base::ffi::GstBaseTransformClass,
    /// The configuration before the file and properties apply.
    defaults: fn() -> InferConfig,
    open: OpenFn,
}

// SAFETY: the class structure starts with the parent's, as GObject requires.
unsafe impl ClassStruct for TrtInferClass {
    type Type = imp::TrtInfer;
}

pub use imp::setup_error;

/// rstrtinfer's engine route: [`Inference::open`], its failure as the element error to post.
pub fn open_inference(
    config: InferConfig,
    threads: usize,
    log: EngineLog,
) -> Result<Inference, gst::ErrorMessage> {
    Inference::open(config, threads, log).map_err(setup_error)
}

/// Subclassing `rstrtinfer`: an element with the same semantics, properties and configuration
/// keys, and its own defaults and engine route.
pub mod subclass {
    use super::*;

    pub trait TrtInferImpl: BaseTransformImpl + ObjectSubclass<Type: IsA<TrtInfer>> {
        /// The element's defaults: the configuration before its file and properties apply.
        fn defaults() -> InferConfig {
            InferConfig::default()
        }

        /// Opens the engine for the resolved configuration; errors are posted by `start()`.
        fn open(
            &self,
            config: InferConfig,
            threads: usize,
            log: EngineLog,
        ) -> Result<Inference, gst::ErrorMessage> {
            open_inference(config, threads, log)
        }
    }

    fn open_trampoline<T: TrtInferImpl>(
        obj: &TrtInfer,
        config: InferConfig,
        threads: usize,
        log: EngineLog,
    ) -> Result<Inference, gst::ErrorMessage> {
        let instance = obj
            .dynamic_cast_ref::<T::Type>()
            .expect("the class's open is only called on its instances");
        T::open(instance.imp(), config, threads, log)
    }

    // SAFETY: `TrtInferClass` starts with BaseTransform's class, whose subclassing is set up by
    // `parent_class_init`.
    unsafe impl<T: TrtInferImpl> IsSubclassable<T> for TrtInfer {
        fn class_init(class: &mut glib::Class<Self>) {
            Self::parent_class_init::<T>(class);
            let klass = class.as_mut();
            klass.defaults = T::defaults;
            klass.open = open_trampoline::<T>;
        }
    }
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    use ferrostream_core::settings::GEnum;
    for ty in [
        GEnum::<Backend>::static_type(),
        GEnum::<Device>::static_type(),
        GEnum::<NetworkType>::static_type(),
        GEnum::<ColorFormat>::static_type(),
        GEnum::<InputOrder>::static_type(),
        GEnum::<ParserKind>::static_type(),
        GEnum::<ClusterMode>::static_type(),
        GEnum::<BoxFormat>::static_type(),
        GEnum::<BoxCoords>::static_type(),
        GEnum::<Softmax>::static_type(),
        GEnum::<ProcessMode>::static_type(),
        GEnum::<NetworkMode>::static_type(),
        GEnum::<ServerFailure>::static_type(),
    ] {
        ty.mark_as_plugin_api(gst::PluginAPIFlags::empty());
    }
    gst::Element::register(
        Some(plugin),
        "rstrtinfer",
        gst::Rank::NONE,
        TrtInfer::static_type(),
    )
}
