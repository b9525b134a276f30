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
//!   --buildDLAStandalone`) run through cuDLA in hybrid mode, on the element's CUDA stream;
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
