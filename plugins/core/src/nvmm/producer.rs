// SPDX-License-Identifier: MIT OR Apache-2.0
//! Producing NVMM memory the way a dGPU DeepStream decoder does: one GstMemory whose mapped bytes
//! are an `NvBufSurface` (batch of one, pitch layout), its `NvBufSurfaceParams` right behind it
//! in the same allocation, and `dataPtr` pointing at device memory the GstMemory owns.

use std::ffi::c_void;
use std::ptr::NonNull;

use super::NvmmError;
use super::abi::{self, NVBUF_MAX_PLANES, NvBufSurfacePlaneParams, NvmmAbi, ds7, ds8};
use super::reader::format_info;
use crate::device::DeviceImage;

/// One plane of a pitch-linear surface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaneLayout {
    /// Width in pixels of the plane (chroma planes of 4:2:0 formats: half, rounded up).
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bytes from row to row.
    pub pitch: u32,
    /// Bytes from `dataPtr`.
    pub offset: u32,
    /// `pitch * height`.
    pub psize: u32,
    /// Bytes per pixel of the plane (NV12 chroma: 2).
    pub bytes_per_pix: u32,
}

/// Where the planes of a pitch-linear surface lie in one allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PitchLayout {
    /// `NVBUF_COLOR_FORMAT_*`.
    pub color_format: u32,
    pub width: u32,
    pub height: u32,
    pub planes: Vec<PlaneLayout>,
    /// Bytes of the allocation: the planes back to back.
    pub data_size: u32,
}

impl PitchLayout {
    /// Lays out a `width` x `height` surface of `color_format` with every pitch rounded up to
    /// `pitch_align` bytes (DeepStream uses 512 on dGPU) and the planes back to back.
    pub fn new(
        color_format: u32,
        width: u32,
        height: u32,
        pitch_align: u32,
    ) -> Result<Self, NvmmError> {
        let invalid = |what: String| NvmmError::InvalidLayout(what);
        let (format, _) = format_info(color_format).ok_or_else(|| {
            invalid(format!(
                "colour format {} is not supported",
                abi::color_format_name(color_format)
            ))
        })?;
        if width == 0 || height == 0 || pitch_align == 0 {
            return Err(invalid(format!(
                "{width}x{height} with pitch alignment {pitch_align}"
            )));
        }
        let probe =
            DeviceImage::unplaced(format, width, height).map_err(|e| invalid(e.to_string()))?;
        let count = probe.plane_count().map_err(|e| invalid(e.to_string()))?;
        let mut planes = Vec::with_capacity(count);
        let mut offset: u64 = 0;
        for plane in 0..count {
            let row = probe.row_bytes(plane) as u64;
            let rows = probe.rows(plane);
            let pitch = row.div_ceil(pitch_align as u64) * pitch_align as u64;
            let psize = pitch * rows as u64;
            let bytes_per_pix = match (format, plane) {
                (gst_video::VideoFormat::Nv12, 1) => 2,
                (gst_video::VideoFormat::Nv12 | gst_video::VideoFormat::I420, _) => 1,
                _ => 4,
            };
            let too_big = || invalid(format!("a {width}x{height} surface exceeds 4 GiB"));
            planes.push(PlaneLayout {
                width: (row / bytes_per_pix as u64) as u32,
                height: rows,
                pitch: u32::try_from(pitch).map_err(|_| too_big())?,
                offset: u32::try_from(offset).map_err(|_| too_big())?,
                psize: u32::try_from(psize).map_err(|_| too_big())?,
                bytes_per_pix,
            });
            offset += psize;
        }
        let data_size = u32::try_from(offset)
            .map_err(|_| invalid(format!("a {width}x{height} surface exceeds 4 GiB")))?;
        Ok(Self {
            color_format,
            width,
            height,
            planes,
            data_size,
        })
    }

    /// The layout of `image`'s planes as they lie in memory, relative to its first plane (which
    /// must come first): what an NvBufSurface describing memory someone else laid out says.
    pub fn of_image(image: &DeviceImage) -> Result<Self, NvmmError> {
        use gst_video::VideoFormat as F;
        let invalid = |what: String| NvmmError::InvalidLayout(what);
        let color_format = match image.format {
            F::Nv12 => abi::NVBUF_COLOR_FORMAT_NV12,
            F::I420 => abi::NVBUF_COLOR_FORMAT_YUV420,
            F::Rgba => abi::NVBUF_COLOR_FORMAT_RGBA,
            F::Bgra => abi::NVBUF_COLOR_FORMAT_BGRA,
            F::Rgbx => abi::NVBUF_COLOR_FORMAT_RGBX,
            F::Bgrx => abi::NVBUF_COLOR_FORMAT_BGRX,
            other => return Err(invalid(format!("{other:?} has no NVMM colour format here"))),
        };
        let count = image.plane_count().map_err(|e| invalid(e.to_string()))?;
        let base = image.planes[0].ptr;
        let mut planes = Vec::with_capacity(count);
        let mut end = 0u64;
        for plane in 0..count {
            let p = image.planes[plane];
            let rows = image.rows(plane);
            let row = image.row_bytes(plane);
            let offset = p
                .ptr
                .checked_sub(base)
                .ok_or_else(|| invalid(format!("plane {plane} lies before the first plane")))?;
            if p.pitch < row {
                return Err(invalid(format!(
                    "plane {plane}: pitch {} is shorter than a row of {row} bytes",
                    p.pitch
                )));
            }
            let psize = p.pitch as u64 * rows as u64;
            end = end.max(offset + psize);
            let bytes_per_pix = match (image.format, plane) {
                (F::Nv12, 1) => 2,
                (F::Nv12 | F::I420, _) => 1,
                _ => 4,
            };
            let too_big = || {
                invalid(format!(
                    "a {}x{} surface exceeds 4 GiB",
                    image.width, image.height
                ))
            };
            planes.push(PlaneLayout {
                width: row / bytes_per_pix,
                height: rows,
                pitch: p.pitch,
                offset: u32::try_from(offset).map_err(|_| too_big())?,
                psize: u32::try_from(psize).map_err(|_| too_big())?,
                bytes_per_pix,
            });
        }
        Ok(Self {
            color_format,
            width: image.width,
            height: image.height,
            planes,
            data_size: u32::try_from(end).map_err(|_| invalid("a surface exceeds 4 GiB".into()))?,
        })
    }

    /// The `planeParams` of the layout.
    pub fn plane_params(&self) -> NvBufSurfacePlaneParams {
        let mut p = NvBufSurfacePlaneParams::zeroed();
        p.num_planes = self.planes.len() as u32;
        for (i, plane) in self.planes.iter().enumerate().take(NVBUF_MAX_PLANES) {
            p.width[i] = plane.width;
            p.height[i] = plane.height;
            p.pitch[i] = plane.pitch;
            p.offset[i] = plane.offset;
            p.psize[i] = plane.psize;
            p.bytes_per_pix[i] = plane.bytes_per_pix;
        }
        p
    }

    /// The layout's first plane's pitch (`NvBufSurfaceParams::pitch`).
    pub fn pitch(&self) -> u32 {
        self.planes.first().map_or(0, |p| p.pitch)
    }
}

/// An `NvBufSurface` and its one `NvBufSurfaceParams`, in one allocation that never moves.
#[repr(C)]
struct Block<S, P> {
    surface: S,
    params: P,
}

/// Owns a surface block (and what `dataPtr` points into); the GstMemory's bytes are the block's
/// `NvBufSurface`.
struct SurfaceOwner<S, P, T> {
    /// From `Box::into_raw`, freed in Drop; a raw pointer so that moving the owner (into the
    /// GstMemory) never asserts uniqueness over bytes GStreamer and `surfaceList` point into.
    block: NonNull<Block<S, P>>,
    _keep_alive: T,
}

// SAFETY: the owner holds the only pointer to its block (plain integers and pointers into the
// block itself) and a `T: Send`; the block is reached from other threads only through the
// GstMemory, whose map/unmap GStreamer synchronises.
unsafe impl<S, P, T: Send> Send for SurfaceOwner<S, P, T> {}

impl<S, P, T> AsMut<[u8]> for SurfaceOwner<S, P, T> {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: the block is live until Drop; the slice covers exactly its `surface` field
        // (the first field of a repr(C) struct), borrowed mutably through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.block.as_ptr().cast::<u8>(), size_of::<S>()) }
    }
}

impl<S, P, T> Drop for SurfaceOwner<S, P, T> {
    fn drop(&mut self) {
        // SAFETY: from `Box::into_raw` in `owner`, freed once.
        drop(unsafe { Box::from_raw(self.block.as_ptr()) });
    }
}

fn owner<S, P, T>(surface: S, params: P, keep_alive: T) -> SurfaceOwner<S, P, T> {
    let block = NonNull::from(Box::leak(Box::new(Block { surface, params })));
    SurfaceOwner {
        block,
        _keep_alive: keep_alive,
    }
}

/// A GstMemory holding an NVMM surface of layout `abi`: `NvBufSurface` (batch 1, filled 1,
/// contiguous, `mem_type`) whose `surfaceList` points at its `NvBufSurfaceParams` (pitch layout
/// `layout`, `dataPtr` = `data_ptr`) in the same allocation. Mapping it gives the
/// `NvBufSurface` bytes, as a DeepStream buffer does; `keep_alive` (the device buffer behind
/// `data_ptr`) lives as long as the memory.
pub fn surface_memory<T: Send + 'static>(
    abi: NvmmAbi,
    gpu_id: u32,
    mem_type: u32,
    layout: &PitchLayout,
    data_ptr: u64,
    keep_alive: T,
) -> gst::Memory {
    let plane_params = layout.plane_params();
    macro_rules! build {
        ($m:ident) => {{
            let mut params = $m::NvBufSurfaceParams::zeroed();
            params.width = layout.width;
            params.height = layout.height;
            params.pitch = layout.pitch();
            params.color_format = layout.color_format;
            params.layout = abi::NVBUF_LAYOUT_PITCH;
            params.data_size = layout.data_size;
            params.data_ptr = data_ptr as *mut c_void;
            params.plane_params = plane_params;
            let mut surface = $m::NvBufSurface::zeroed();
            surface.gpu_id = gpu_id;
            surface.batch_size = 1;
            surface.num_filled = 1;
            surface.is_contiguous = 1;
            surface.mem_type = mem_type;
            let owner = owner(surface, params, keep_alive);
            // SAFETY: the block is live and never moves; `surfaceList` points at its `params`.
            unsafe {
                let block = owner.block.as_ptr();
                (*block).surface.surface_list = &raw mut (*block).params;
            }
            gst::Memory::from_mut_slice(owner)
        }};
    }
    match abi {
        // Everything not set (mappedAddr, paramex, DS8's cudaBuffer and isImportedBuf, the
        // reserved arrays) stays zero, as in a freshly created surface.
        NvmmAbi::Ds7 => build!(ds7),
        NvmmAbi::Ds8 => build!(ds8),
    }
}
