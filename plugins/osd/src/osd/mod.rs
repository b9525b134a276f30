// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsosd`: draws the objects of each frame (boxes in per-class colours, labels on a filled
//! background in a TrueType font), a clock and per-source text, and blurs the boxes of chosen
//! classes. Works in place on RGBA, BGRA, RGBx, BGRx, NV12 and I420 frames, and on every frame of
//! a batch from `rsstreammux`; YUV colours follow the caps' colorimetry (BT.601/709/2020, full or
//! limited range). The text, rectangles and lines an application puts in a frame's metadata
//! (display elements, [`ferrostream_core::display`]) are drawn after its objects, scaled like their
//! boxes, whatever `display-bbox` and `display-text` say.
//!
//! ```sh
//! gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker \
//!     ! rsosd display-clock=true source-text="0=Hall" ! videoconvert ! autovideosink
//! ```
//!
//! Properties mirror `nvdsosd` where they make sense (`display-bbox`, `display-text`,
//! `display-clock`, `clock-font-size`, `clock-color`, `x-clock-offset`, `y-clock-offset`);
//! colours are `0xRRGGBBAA` numbers as there. `config-file-path` reads the `[osd]` and
//! `[class-attrs-N]` sections described in [`crate::config`]; properties set on the element
//! override the file. Appearance properties can change while playing; `font` and
//! `config-file-path` are read when the element starts.
//!
//! Frames in device memory (`video/x-raw(memory:CUDAMemory)` from `nvh264dec` or `cudaupload`,
//! `video/x-raw(memory:NVMM)` from DeepStream/JetPack elements, and batches of either) are drawn
//! on the GPU where they are, in the producer's CUDA context (NVMM: the primary context of the
//! surface's GPU), with exactly the pixels the CPU painter would give; no pixel is copied
//! between host and device. `stream-priority` sets the CUDA stream's priority; the read-only
//! `gpu-frames` and `pixel-copies` counters say where frames were drawn.
//!
//! ```sh
//! gst-launch-1.0 filesrc location=carphone_pristine.mp4 ! qtdemux ! h264parse ! nvh264dec \
//!     ! "video/x-raw(memory:CUDAMemory)" ! rsosd source-text="0=Car" display-clock=true \
//!     ! cudadownload ! videoconvert ! autovideosink
//! ```

use gst::glib;
use gst::prelude::*;

mod imp;

glib::wrapper! {
    pub struct RsOsd(ObjectSubclass<imp::RsOsd>) @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    ferrostream_core::settings::GEnum::<crate::style::BlurMode>::static_type()
        .mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(Some(plugin), "rsosd", gst::Rank::NONE, RsOsd::static_type())
}
