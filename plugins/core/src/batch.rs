// SPDX-License-Identifier: MIT OR Apache-2.0
//! Batches of frames from several sources, as `rsstreammux` makes them.
//!
//! A batch is a buffer whose caps carry the [`BATCH_FEATURE`] caps feature, e.g.
//! `video/x-raw(ferrostream:batch), format=NV12, framerate=30/1`. The buffer itself holds no
//! pixels: its [`BatchMeta`] lists the frames (analytics) and, per frame, the [`Surface`] with the
//! source buffer that holds the pixels, referenced, never copied. Elements that do not know the
//! feature cannot link to a batch, so a batch is never mistaken for a single frame.
//!
//! Every Ferrostream element also takes plain `video/x-raw`: a plain buffer is a batch of one whose
//! pixels are the buffer itself. [`FrameSource`] and [`frame_pixels`] hide the difference.

use crate::meta::BatchMeta;
pub use crate::surface::{SourceStream, Surface};

/// The caps feature of a batch.
pub const BATCH_FEATURE: &str = "ferrostream:batch";

/// The caps feature of GStreamer CUDA memory (`nvh264dec`, `cudaupload`).
pub const CUDA_MEMORY_FEATURE: &str = "memory:CUDAMemory";
/// The caps feature of NVIDIA's NvBufSurface memory (DeepStream, Jetson).
pub const NVMM_FEATURE: &str = "memory:NVMM";

/// Where the pixels of a stream are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryKind {
    /// System memory, mapped on the CPU.
    #[default]
    System,
    /// GStreamer CUDA memory: device pointers through the CUDA map flag.
    Cuda,
    /// NvBufSurface memory: mapping yields an `NvBufSurface*`.
    Nvmm,
}

impl MemoryKind {
    /// The memory of (fixed or not) caps, from their first structure's features.
    pub fn from_caps(caps: &gst::CapsRef) -> Self {
        match caps.features(0) {
            Some(f) if f.contains(CUDA_MEMORY_FEATURE) => Self::Cuda,
            Some(f) if f.contains(NVMM_FEATURE) => Self::Nvmm,
            _ => Self::System,
        }
    }

    /// The caps feature naming this memory (none for system memory).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Self::System => None,
            Self::Cuda => Some(CUDA_MEMORY_FEATURE),
            Self::Nvmm => Some(NVMM_FEATURE),
        }
    }

    /// Whether the pixels are in GPU memory.
    pub fn is_device(self) -> bool {
        self != Self::System
    }
}

/// Plain frames and batches of frames in device memory `memory`, in `formats`: what an element
/// that works on the GPU adds to its pad templates.
pub fn device_caps<'a>(
    memory: MemoryKind,
    formats: impl IntoIterator<Item = &'a str> + Clone,
) -> gst::Caps {
    let feature = memory
        .feature()
        .unwrap_or(gst::CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
    let mut caps = gst_video::VideoCapsBuilder::new()
        .features([feature])
        .format_list(
            formats
                .clone()
                .into_iter()
                .map(gst_video::VideoFormat::from_string),
        )
        .build();
    caps.merge(batch_caps_in(formats, memory));
    caps
}

/// Caps of a batch of frames in `formats` (all frames of one batch share one format).
pub fn batch_caps<'a>(formats: impl IntoIterator<Item = &'a str>) -> gst::Caps {
    batch_caps_in(formats, MemoryKind::System)
}

/// Caps of a batch of frames in `formats` whose surfaces are in `memory`.
pub fn batch_caps_in<'a>(
    formats: impl IntoIterator<Item = &'a str>,
    memory: MemoryKind,
) -> gst::Caps {
    let formats: Vec<&str> = formats.into_iter().collect();
    let features: Vec<&str> = std::iter::once(BATCH_FEATURE)
        .chain(memory.feature())
        .collect();
    gst::Caps::builder("video/x-raw")
        .features(features)
        .field("format", gst::List::new(formats))
        .field(
            "framerate",
            gst::FractionRange::new(gst::Fraction::new(0, 1), gst::Fraction::new(i32::MAX, 1)),
        )
        .build()
}

/// Caps of batches in any raw video format.
pub fn any_batch_caps() -> gst::Caps {
    batch_caps(gst_video::VideoFormat::iter_raw().map(|f| f.to_str().as_str()))
}

/// Whether `caps` (fixed or not) describe batches.
pub fn is_batch(caps: &gst::CapsRef) -> bool {
    caps.features(0)
        .is_some_and(|features| features.contains(BATCH_FEATURE))
}

/// How an element receives frames, decided by its negotiated caps.
#[derive(Debug, Clone)]
pub enum FrameSource {
    /// Plain video: each buffer is one frame laid out as `info` says.
    Single(gst_video::VideoInfo),
    /// Batches: each frame's surface says where its pixels are and how they are laid out.
    Batched,
}

impl FrameSource {
    /// Reads negotiated caps: batch caps or plain raw video.
    pub fn from_caps(caps: &gst::CapsRef) -> Result<Self, String> {
        if is_batch(caps) {
            return Ok(Self::Batched);
        }
        gst_video::VideoInfo::from_caps(caps)
            .map(Self::Single)
            .map_err(|_| format!("invalid raw video caps {caps}"))
    }
}

/// Why a frame's pixels cannot be reached.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PixelsError {
    #[error("the batch has no metadata (was it made by rsstreammux?)")]
    NoBatchMeta,
    #[error("frame {frame} names surface {surface}, but the batch has {count} surfaces")]
    NoSurface {
        frame: usize,
        surface: u32,
        count: usize,
    },
}

/// The buffer holding the pixels of frame `index` of `buffer`, and their layout.
pub fn frame_pixels<'a>(
    source: &'a FrameSource,
    buffer: &'a gst::BufferRef,
    index: usize,
) -> Result<(&'a gst::BufferRef, &'a gst_video::VideoInfo), PixelsError> {
    match source {
        FrameSource::Single(info) => Ok((buffer, info)),
        FrameSource::Batched => {
            let meta = BatchMeta::of(buffer).ok_or(PixelsError::NoBatchMeta)?;
            let surfaces = meta.surfaces();
            let surface = meta
                .batch()
                .frames
                .get(index)
                .map_or(index as u32, |f| f.surface_index);
            let s = surfaces
                .get(surface as usize)
                .ok_or(PixelsError::NoSurface {
                    frame: index,
                    surface,
                    count: surfaces.len(),
                })?;
            Ok((s.buffer.as_ref(), s.info()))
        }
    }
}

/// Custom downstream events that describe the sources of a batched stream.
pub mod events {
    const STREAM_EOS: &str = "ferrostream-stream-eos";
    const STREAM_RESTART: &str = "ferrostream-stream-restart";

    /// The serialized event a muxer sends after the last batch holding frames of `source_id`
    /// (the source reached EOS or its pad was released).
    pub fn stream_eos(source_id: u32) -> gst::Event {
        gst::event::CustomDownstream::new(
            gst::Structure::builder(STREAM_EOS)
                .field("source-id", source_id)
                .build(),
        )
    }

    /// The source id of a [`stream_eos`] event.
    pub fn parse_stream_eos(event: &gst::EventRef) -> Option<u32> {
        parse(event, STREAM_EOS)
    }

    /// The serialized event a muxer sends before the first batch holding frames of a new
    /// stream of `source_id` (a camera that reconnected, a file that looped): what was known
    /// about the source's objects (tracks) no longer holds.
    pub fn stream_restart(source_id: u32) -> gst::Event {
        gst::event::CustomDownstream::new(
            gst::Structure::builder(STREAM_RESTART)
                .field("source-id", source_id)
                .build(),
        )
    }

    /// The source id of a [`stream_restart`] event.
    pub fn parse_stream_restart(event: &gst::EventRef) -> Option<u32> {
        parse(event, STREAM_RESTART)
    }

    /// The source id of event `name`.
    fn parse(event: &gst::EventRef, name: &str) -> Option<u32> {
        if event.type_() != gst::EventType::CustomDownstream {
            return None;
        }
        let s = event.structure()?;
        if s.name() != name {
            return None;
        }
        s.get::<u32>("source-id").ok()
    }
}
