// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsipcsink` and `rsipcsrc`: a producer pipeline hands its frames, with their Ferrostream
//! metadata, to consumer pipelines in other processes over a Unix socket.
//!
//! The pixels are not copied between the processes:
//! - Frames in CUDA or NVMM memory that live in a shareable CUDA allocation (the CUDA virtual
//!   memory API with POSIX file-descriptor handles, as `rsnvmmtestsrc` and Ferrostream's GPU
//!   pools allocate) are exported as they are: the consumer maps the same device memory.
//! - Other device memory (`nvh264dec`, `cudaupload`) is copied once on the GPU into a shareable
//!   slot in the producer, then shared the same way.
//! - System-memory frames are copied once into a sealed memory file, as `shmsink` does.
//!
//! Each allocation's descriptor crosses once per consumer (SCM_RIGHTS); buffers then name an
//! allocation and where in it their planes are, with their metadata as JSON, in one message of
//! at most 4 MiB (`wire::MAX_MESSAGE`; one too long for the socket goes in a sealed memory
//! file). A consumer outputs device frames as NVMM memory (an NvBufSurface pointing into the
//! mapped allocation) that every Ferrostream element takes, and batches stay batches with their
//! metadata.
//!
//! ```text
//! # producer
//! gst-launch-1.0 rsnvmmtestsrc ! 'video/x-raw(memory:NVMM),width=1920,height=1080' \
//!     ! m.sink_0 rsstreammux name=m batch-size=1 ! rsipcsink socket-path=/run/user/1000/cam
//! # consumer, in another process
//! gst-launch-1.0 rsipcsrc socket-path=/run/user/1000/cam \
//!     ! rstrtinfer config-file-path=pipelines/yolov8s.txt ! rsmetaexport ! fakesink
//! ```

use gst::glib;

pub mod consumer;
pub mod describe;
pub mod host;
pub mod producer;
pub mod rsipcsink;
pub mod rsipcsrc;
pub mod socket;
pub mod wire;

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    rsipcsink::register(plugin)?;
    rsipcsrc::register(plugin)
}
