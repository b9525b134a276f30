//! `rstrtinfer`: inference on video frames (primary) or on the objects found in them
//! (secondary), attaching the results as [`BatchMeta`](ferrostream_core::BatchMeta).
//!
//! The model runs on ONNX Runtime (CPU, or its CUDA / TensorRT execution providers where the
//! installed runtime has them) or, in builds with the `tensorrt` feature, on native TensorRT
//! (`backend=tensorrt`, or `auto`, which prefers it): a `model-engine-file`, or an engine built
//! from `onnx-file` once (`network-mode`, `workspace-size`, `enable-dla`...) and cached. Pre-processing follows nvinfer: scale (optionally keeping the
//! aspect ratio with symmetric padding), colour order, `net-scale-factor` and `offsets`, NCHW or
//! NHWC, f32/f16/u8 inputs. Output parsers: SSD, TensorFlow Object Detection API, YOLOv5,
//! YOLOv8, CenterFace and classifiers, with per-class NMS and `[class-attrs-*]` thresholds.
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
//! execution providers, model and input shape it uses.

use gst::glib;
use gst::prelude::*;

mod crops;
mod imp;

pub use crate::config::{
    Backend, BoxFormat, ClusterMode, ColorFormat, Device, InputOrder, NetworkMode, NetworkType,
    ParserKind, ProcessMode, Softmax,
};

glib::wrapper! {
    pub struct TrtInfer(ObjectSubclass<imp::TrtInfer>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    for ty in [
        Backend::static_type(),
        Device::static_type(),
        NetworkType::static_type(),
        ColorFormat::static_type(),
        InputOrder::static_type(),
        ParserKind::static_type(),
        ClusterMode::static_type(),
        BoxFormat::static_type(),
        Softmax::static_type(),
        ProcessMode::static_type(),
        NetworkMode::static_type(),
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
