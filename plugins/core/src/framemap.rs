// SPDX-License-Identifier: MIT OR Apache-2.0
//! The pixels of one frame of a buffer, mapped for an application (NumPy arrays, CuPy, PyTorch,
//! C): plane addresses, strides and shapes, in system or CUDA memory, kept mapped as long as the
//! [`MappedFrame`] lives.
//!
//! A plain video buffer is its own frame; a batch (`rsstreammux`) names the source buffer of each
//! frame in its metadata. Only 8-bit formats whose planes are plain arrays are offered: packed
//! RGB variants and GRAY8 as one `rows x cols x channels` plane, NV12/NV21 and I420/YV12 as their
//! planes.

use std::ffi::CStr;

use gst::glib;
use gst::glib::translate::ToGlibPtr;
use gst_video::VideoFormat;

use crate::batch::{MemoryKind, is_batch};
use crate::meta::BatchMeta;

/// Formats a frame can be mapped in: the 8-bit formats whose planes are plain arrays (also what
/// the inference pre-processing reads on the CPU).
pub const FORMATS: &[VideoFormat] = &[
    VideoFormat::Rgb,
    VideoFormat::Bgr,
    VideoFormat::Rgba,
    VideoFormat::Bgra,
    VideoFormat::Argb,
    VideoFormat::Abgr,
    VideoFormat::Rgbx,
    VideoFormat::Bgrx,
    VideoFormat::Xrgb,
    VideoFormat::Xbgr,
    VideoFormat::Gray8,
    VideoFormat::Nv12,
    VideoFormat::Nv21,
    VideoFormat::I420,
    VideoFormat::Yv12,
];

/// Why a frame cannot be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("{0}")]
    Caps(String),
    #[error("frame {index} does not exist: the buffer holds {count} frames")]
    BadIndex { index: u32, count: usize },
    #[error("{} frames cannot be mapped as arrays (supported: {list})", .0.to_str(), list = format_list())]
    Format(VideoFormat),
    #[error("{0}")]
    Unsupported(String),
    #[error("the buffer is not writable: {0}")]
    NotWritable(&'static str),
    #[error("{0}")]
    Failed(String),
}

fn format_list() -> String {
    FORMATS
        .iter()
        .map(|f| f.to_str().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One plane: `rows` rows of `cols` pixels of `channels` bytes, rows `stride` bytes apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plane {
    pub data: u64,
    pub stride: i64,
    pub rows: u32,
    pub cols: u32,
    pub channels: u32,
}

/// A mapped frame; unmapped (and its buffer released) on drop.
pub struct MappedFrame {
    frame: Box<gst_video::ffi::GstVideoFrame>,
    /// For a frame of a batch: the batch's buffer, which owns the metadata that owns the
    /// surface mapped (without a reference of its own, so that the surface stays writable by
    /// its single owner, and a second write map of it is refused like a plain frame's).
    _batch: Option<gst::Buffer>,
    pub format: VideoFormat,
    pub width: u32,
    pub height: u32,
    pub planes: Vec<Plane>,
    pub memory: MemoryKind,
    /// The GPU of CUDA memory.
    pub gpu_id: Option<u32>,
    pub writable: bool,
}

// SAFETY: the mapping holds its own reference to the buffer; unmapping from another thread is
// allowed by GStreamer.
unsafe impl Send for MappedFrame {}

impl MappedFrame {
    /// The format's name, NUL-terminated, with static lifetime.
    pub fn format_name(&self) -> &'static CStr {
        // SAFETY: `gst_video_format_to_string` returns a static string for every valid format.
        unsafe {
            CStr::from_ptr(gst_video::ffi::gst_video_format_to_string(
                glib::translate::IntoGlib::into_glib(self.format),
            ))
        }
    }
}

impl Drop for MappedFrame {
    fn drop(&mut self) {
        // SAFETY: mapped by `map_frame`, unmapped once, before `_batch` (which keeps an
        // unreferenced surface alive) is released; the unmap releases the buffer reference a
        // plain frame's map took.
        unsafe { gst_video::ffi::gst_video_frame_unmap(&mut *self.frame) };
    }
}

/// Maps frame `index` of `buffer`, whose caps are `caps`, for reading, or for writing when
/// `write` is set (the buffer must then be writable: only its single owner may change it).
///
/// # Safety
/// `buffer` must be a valid GstBuffer that the caller may change when `write` is set (nobody
/// else reads it meanwhile); it stays valid during the call.
pub unsafe fn map_frame(
    buffer: *mut gst::ffi::GstBuffer,
    caps: &gst::CapsRef,
    index: u32,
    write: bool,
) -> Result<MappedFrame, MapError> {
    // SAFETY: the caller passes a valid buffer.
    let writable = unsafe { gst::ffi::gst_mini_object_is_writable(buffer.cast()) != 0 };
    if write && !writable {
        return Err(MapError::NotWritable(
            "it is shared; pixels can be written where the buffer has a single owner, such as \
             a pad probe's buffer made writable",
        ));
    }
    if is_batch(caps) {
        let no_meta =
            || MapError::Caps("the batch has no metadata (was it made by rsstreammux?)".into());
        if write {
            // SAFETY: valid (the caller's contract) and writable (checked above).
            let outer = unsafe { gst::BufferRef::from_mut_ptr(buffer) };
            let mut meta = outer.meta_mut::<BatchMeta>().ok_or_else(no_meta)?;
            let (i, info) = surface_of(&meta, index)?;
            let surface = &mut meta.surfaces_mut()[i];
            let memory = MemoryKind::from_caps(surface.stream.caps.as_ref());
            // The surface may be shared with the source's other consumers: writing gets a copy
            // of its own (GStreamer copies the memory itself on the first write map).
            let pixels = surface.buffer.make_mut().as_mut_ptr();
            // SAFETY: the caller's buffer, valid; taking a reference makes it shared, so nothing
            // changes it (or this surface) until the mapping ends.
            let keep = unsafe { gst::Buffer::from_glib_none(buffer) };
            return map_plain(pixels, &info, memory, true, Some(keep));
        }
        // SAFETY: valid (the caller's contract).
        let outer = unsafe { gst::BufferRef::from_ptr(buffer) };
        let meta = BatchMeta::of(outer).ok_or_else(no_meta)?;
        let (i, info) = surface_of(meta, index)?;
        let surface = &meta.surfaces()[i];
        let memory = MemoryKind::from_caps(surface.stream.caps.as_ref());
        // SAFETY: as above.
        let keep = unsafe { gst::Buffer::from_glib_none(buffer) };
        return map_plain(
            surface.buffer.as_ptr() as *mut _,
            &info,
            memory,
            false,
            Some(keep),
        );
    }
    // GStreamer asserts (a CRITICAL) on caps that are not fixed: refused first.
    if caps.is_any() || caps.is_empty() || !caps.is_fixed() {
        return Err(MapError::Caps(format!(
            "{caps} are not fixed raw video caps"
        )));
    }
    let info = gst_video::VideoInfo::from_caps(caps)
        .map_err(|_| MapError::Caps(format!("{caps} are not raw video caps")))?;
    if index != 0 {
        return Err(MapError::BadIndex { index, count: 1 });
    }
    map_plain(buffer, &info, MemoryKind::from_caps(caps), write, None)
}

/// The index of the surface holding frame `index`, and its layout.
fn surface_of(meta: &BatchMeta, index: u32) -> Result<(usize, gst_video::VideoInfo), MapError> {
    let frames = &meta.batch().frames;
    let frame = frames.get(index as usize).ok_or(MapError::BadIndex {
        index,
        count: frames.len(),
    })?;
    let surface = meta
        .surfaces()
        .get(frame.surface_index as usize)
        .ok_or_else(|| {
            MapError::Failed(format!(
                "frame {index} names surface {}, but the batch has {}",
                frame.surface_index,
                meta.surfaces().len()
            ))
        })?;
    Ok((frame.surface_index as usize, surface.info().clone()))
}

fn map_plain(
    buffer: *mut gst::ffi::GstBuffer,
    info: &gst_video::VideoInfo,
    memory: MemoryKind,
    write: bool,
    batch: Option<gst::Buffer>,
) -> Result<MappedFrame, MapError> {
    let format = info.format();
    if !FORMATS.contains(&format) {
        return Err(MapError::Format(format));
    }
    let (mut flags, gpu_id) = match memory {
        MemoryKind::System => {
            let mut flags = gst::ffi::GST_MAP_READ;
            if write {
                flags |= gst::ffi::GST_MAP_WRITE;
            }
            (flags, None)
        }
        #[cfg(feature = "cuda")]
        MemoryKind::Cuda => {
            // SAFETY: the buffer is valid for the call (the caller's contract).
            let b = unsafe { gst::BufferRef::from_ptr(buffer) };
            let (flags, gpu) = crate::cuda::gst_cuda::prepare_device_map(b, write)
                .map_err(|e| MapError::Failed(e.to_string()))?;
            (flags, Some(gpu))
        }
        #[cfg(not(feature = "cuda"))]
        MemoryKind::Cuda => {
            return Err(MapError::Unsupported(
                "this build of Ferrostream has no CUDA support".into(),
            ));
        }
        MemoryKind::Nvmm => {
            return Err(MapError::Unsupported(
                "NVMM frames cannot be mapped as arrays; convert them to CUDA or system memory \
                 first (nvvideoconvert ! 'video/x-raw(memory:CUDAMemory)' or 'video/x-raw')"
                    .into(),
            ));
        }
    };
    if batch.is_some() {
        flags |= gst_video::ffi::GST_VIDEO_FRAME_MAP_FLAG_NO_REF;
    }
    let mut frame = Box::new(std::mem::MaybeUninit::<gst_video::ffi::GstVideoFrame>::zeroed());
    // SAFETY: `info` describes the buffer (its caps); a successful map takes a reference to the
    // buffer, released by the unmap in Drop. A write map of a non-writable buffer fails here.
    let ok = unsafe {
        gst_video::ffi::gst_video_frame_map(
            frame.as_mut_ptr(),
            info.to_glib_none().0 as *mut _,
            buffer,
            flags,
        )
    };
    if ok == glib::ffi::GFALSE {
        return Err(MapError::Failed(format!(
            "cannot map the {}x{} {} frame for {} (is the buffer smaller than its caps say?)",
            info.width(),
            info.height(),
            format.to_str(),
            if write { "writing" } else { "reading" }
        )));
    }
    // SAFETY: mapped successfully above.
    let frame: Box<gst_video::ffi::GstVideoFrame> = unsafe { frame.assume_init() };
    let finfo = info.format_info();
    let mut planes = Vec::with_capacity(info.n_planes() as usize);
    for p in 0..info.n_planes() {
        // The first component stored in the plane gives its geometry.
        let Some(c) = (0..finfo.n_components()).find(|&c| finfo.plane()[c as usize] == p) else {
            continue;
        };
        let c = c as u8;
        planes.push(Plane {
            data: frame.data[p as usize] as u64,
            stride: frame.info.stride[p as usize] as i64,
            rows: finfo.scale_height(c, info.height()),
            cols: finfo.scale_width(c, info.width()),
            channels: finfo.pixel_stride()[c as usize] as u32,
        });
    }
    Ok(MappedFrame {
        frame,
        _batch: batch,
        format,
        width: info.width(),
        height: info.height(),
        planes,
        memory,
        gpu_id,
        writable: write,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Caps that describe no one frame are refused before GStreamer sees them (it would assert:
    /// a CRITICAL, made fatal here as `G_DEBUG=fatal-warnings` does).
    #[test]
    fn caps_that_are_not_fixed_raw_video_are_refused_without_a_critical() {
        gst::init().unwrap();
        gst::glib::log_set_always_fatal(gst::glib::LogLevels::LEVEL_CRITICAL);
        let mut buffer = gst::Buffer::with_size(320 * 240 * 4).unwrap();
        let unfixed = gst::Caps::builder("video/x-raw")
            .field("format", gst::List::new(["RGBA", "BGRA"]))
            .field("width", 320)
            .field("height", 240)
            .build();
        for caps in [gst::Caps::new_any(), gst::Caps::new_empty(), unfixed] {
            // SAFETY: a valid buffer this test owns alone.
            let result =
                unsafe { map_frame(buffer.get_mut().unwrap().as_mut_ptr(), &caps, 0, false) };
            match result {
                Err(MapError::Caps(why)) => assert!(why.contains("not fixed"), "{why}"),
                other => panic!("{caps}: {:?}", other.err()),
            }
        }
    }
}
