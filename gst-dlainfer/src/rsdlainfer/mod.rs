// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsdlainfer`: `rstrtinfer` on a Jetson DLA core. The same element semantics, properties and
//! configuration keys (it is a subclass of `rstrtinfer`), with DLA defaults: FP16
//! (`network-mode`; INT8 with a calibration file; the DLA has no FP32), fixed shapes (the
//! batch is `batch-size`, partial batches are padded), `dla-core` (alias of `use-dla-core`)
//! and `allow-gpu-fallback`.
//!
//! `dla-core=-1` runs the model on every DLA core at once, and on the GPU as one more worker
//! with `allow-gpu-fallback`: each batch goes to the worker expected to finish it first (its
//! queue times its recent run time), results leave in order, and a worker that fails is taken
//! out with a warning while the others go on (`pipelines/detect-dla-gpu.sh`). Without a DLA it
//! is the single fallback below.
//!
//! Engine routes, in order:
//! - `model-engine-file=*.loadable`: a DLA standalone loadable (`trtexec
//!   --buildDLAStandalone`) run through cuDLA in the mode `dla-mode` asks for:
//!   - `standalone`: the tensors are NvSciBuf buffers that the GPU and the DLA both map, and each
//!     task waits on an NvSciSync fence the GPU signals after the pre-processing and signals one
//!     the GPU waits on before the post-processing: a batch goes GPU -> DLA -> GPU with no CPU
//!     thread waiting in between. Where NvSci or cuDLA's standalone mode is missing, start fails
//!     naming what;
//!   - `hybrid`: each task on the element's CUDA stream, the tensors CUDA memory registered with
//!     the DLA;
//!   - `auto` (the default): standalone where it opens and a no-op task passes through the whole
//!     fence chain at start, else hybrid, with the reason posted (an info message where NvSci or
//!     standalone mode is missing, a warning where it failed).
//!
//!   Either way, for a loadable with a dense NCHW input, the GPU pre-processing writes each batch
//!   straight into the DLA's input tensor (other input layouts are repacked on the host).
//!   Standalone mode is compiled and checked against NVIDIA's headers but has not run on a
//!   Jetson (README, Platforms);
//! - an ONNX model or TensorRT engine: TensorRT with the DLA as default device (layers the DLA
//!   cannot run fall back to the GPU with `allow-gpu-fallback`), or with
//!   `backend=onnxruntime`, ONNX Runtime's TensorRT provider with its DLA options.
//!
//! On a machine without a DLA, `allow-gpu-fallback=true` (the default) runs the ONNX model on
//! the GPU or CPU like `rstrtinfer` with `backend=auto` at the DLA's precision (so on a CPU with
//! BF16 and OpenVINO installed, OpenVINO in BF16) and says so once in a warning, with why that
//! backend; `false` makes `start()` fail with a message naming what is missing.
//!
//! At start the element posts `rsdlainfer-engine` (backend, devices: `DLA0`, or where it fell
//! back to) and `rsdlainfer-dla-report`: the DLA coverage of the ONNX model at the shape it
//! runs (see `ferrostream-dla-check`), with `dla-share`, `dla-loadables`, `gpu-subgraphs`,
//! `exceeds-loadable-limit`, a `summary` line and the full `report` as JSON.
//!
//! ```text
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rsdlainfer config-file-path=pipelines/coco_ssd.txt dla-core=0 \
//!     ! rsmetaexport location=objects.jsonl ! fakesink
//! ```
//!
//! On a Jetson, a loadable in standalone mode (frames from the hardware decoder):
//!
//! ```text
//! gst-launch-1.0 filesrc location=cam.mp4 ! qtdemux ! h264parse ! nvv4l2decoder \
//!     ! rsdlainfer config-file-path=pipelines/coco_ssd.txt \
//!         model-engine-file=coco_ssd.loadable dla-mode=standalone \
//!     ! rsmetaexport location=objects.jsonl ! fakesink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct DlaInfer(ObjectSubclass<imp::DlaInfer>)
        @extends gst_trtinfer::rstrtinfer::TrtInfer, gst_base::BaseTransform, gst::Element,
            gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsdlainfer",
        gst::Rank::NONE,
        DlaInfer::static_type(),
    )
}
