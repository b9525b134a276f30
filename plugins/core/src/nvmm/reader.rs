// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reading an NVMM buffer: the NvBufSurface behind its one memory, checked field by field, as
//! device images that stay valid while the returned [`NvmmBatch`] holds the memory mapped.

use std::ffi::c_void;
use std::ptr;

use gst_video::{VideoColorMatrix, VideoColorRange, VideoFormat};

use super::abi::{self, NVBUF_MAX_PLANES, NvBufSurfacePlaneParams, NvmmAbi, ds7, ds8};
use super::loader::{self, EglSurfaceMapping};
use super::{NvmmError, Platform};
use crate::device::{DeviceImage, DeviceImageError, DevicePlane};

/// The YUV matrix and range an NVMM colour format implies (`NV12_709_ER`: BT.709, full range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YuvColorimetry {
    pub matrix: VideoColorMatrix,
    pub range: VideoColorRange,
}

/// The GStreamer format (and, for YUV, colorimetry) of an NVMM colour format the device paths
/// support.
pub(crate) fn format_info(color_format: u32) -> Option<(VideoFormat, Option<YuvColorimetry>)> {
    use VideoColorMatrix::{Bt601, Bt709, Bt2020};
    use VideoColorRange::{Range0_255 as Full, Range16_235 as Limited};
    let yuv = |matrix, range| Some(YuvColorimetry { matrix, range });
    Some(match color_format {
        abi::NVBUF_COLOR_FORMAT_NV12 => (VideoFormat::Nv12, yuv(Bt601, Limited)),
        abi::NVBUF_COLOR_FORMAT_NV12_ER => (VideoFormat::Nv12, yuv(Bt601, Full)),
        abi::NVBUF_COLOR_FORMAT_NV12_709 => (VideoFormat::Nv12, yuv(Bt709, Limited)),
        abi::NVBUF_COLOR_FORMAT_NV12_709_ER => (VideoFormat::Nv12, yuv(Bt709, Full)),
        abi::NVBUF_COLOR_FORMAT_NV12_2020 => (VideoFormat::Nv12, yuv(Bt2020, Limited)),
        abi::NVBUF_COLOR_FORMAT_YUV420 => (VideoFormat::I420, yuv(Bt601, Limited)),
        abi::NVBUF_COLOR_FORMAT_RGBA => (VideoFormat::Rgba, None),
        abi::NVBUF_COLOR_FORMAT_BGRA => (VideoFormat::Bgra, None),
        abi::NVBUF_COLOR_FORMAT_RGBX => (VideoFormat::Rgbx, None),
        abi::NVBUF_COLOR_FORMAT_BGRX => (VideoFormat::Bgrx, None),
        _ => return None,
    })
}

/// What a caller knows about the buffers it reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The NvBufSurface layout, when known; otherwise picked by the mapped size.
    pub abi: Option<NvmmAbi>,
    /// The platform, when known; otherwise asked of the CUDA driver, and only for memory type
    /// DEFAULT.
    pub platform: Option<Platform>,
}

/// One filled surface of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvmmSurface {
    /// Position in `surfaceList`.
    pub index: u32,
    pub image: DeviceImage,
    /// The raw `NvBufSurfaceColorFormat`.
    pub color_format: u32,
    /// Matrix and range for YUV formats; `None` for RGB.
    pub colorimetry: Option<YuvColorimetry>,
}

/// The surfaces of an NVMM buffer, with the buffer's memory mapped (and Jetson surfaces mapped
/// through EGL) until it is dropped: the device addresses are valid that long.
#[derive(Debug)]
pub struct NvmmBatch<'a> {
    surfaces: Vec<NvmmSurface>,
    // Fields drop in declaration order: the EGL mappings are released before the memory that
    // holds their NvBufSurface is unmapped.
    _egl: Vec<EglSurfaceMapping>,
    _map: gst::memory::MemoryMap<'a, gst::memory::Readable>,
    abi: NvmmAbi,
    gpu_id: u32,
    batch_size: u32,
    mem_type: u32,
}

impl NvmmBatch<'_> {
    /// The filled surfaces, in `surfaceList` order.
    pub fn surfaces(&self) -> &[NvmmSurface] {
        &self.surfaces
    }

    /// The device images of the filled surfaces.
    pub fn images(&self) -> impl Iterator<Item = &DeviceImage> {
        self.surfaces.iter().map(|s| &s.image)
    }

    pub fn len(&self) -> usize {
        self.surfaces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.surfaces.is_empty()
    }

    /// The layout the NvBufSurface was read with.
    pub fn abi(&self) -> NvmmAbi {
        self.abi
    }

    /// `gpuId`: the device whose context the addresses belong to.
    pub fn gpu_id(&self) -> u32 {
        self.gpu_id
    }

    /// `batchSize`.
    pub fn batch_size(&self) -> u32 {
        self.batch_size
    }

    /// `memType` (`NVBUF_MEM_*`).
    pub fn mem_type(&self) -> u32 {
        self.mem_type
    }
}

/// The fields of `NvBufSurface` the reader uses, whatever the layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub gpu_id: u32,
    pub batch_size: u32,
    pub num_filled: u32,
    pub mem_type: u32,
    pub surface_list: *const c_void,
}

macro_rules! header_from {
    ($s:expr) => {
        Header {
            gpu_id: $s.gpu_id,
            batch_size: $s.batch_size,
            num_filled: $s.num_filled,
            mem_type: $s.mem_type,
            surface_list: $s.surface_list as *const c_void,
        }
    };
}

impl Header {
    /// Reads the NvBufSurface at the start of `bytes` (the mapped memory).
    pub fn parse(bytes: &[u8], abi: NvmmAbi) -> Result<Self, NvmmError> {
        if bytes.len() < abi.surface_size() {
            return Err(NvmmError::TooSmallForAbi {
                size: bytes.len(),
                abi,
            });
        }
        // SAFETY: `bytes` holds at least sizeof(NvBufSurface) of this layout (checked above); the
        // mirrors hold only integers and raw pointers, valid for any bytes; read unaligned since
        // a memory's data has no alignment guarantee.
        Ok(unsafe {
            match abi {
                NvmmAbi::Ds7 => {
                    header_from!(ptr::read_unaligned(
                        bytes.as_ptr().cast::<ds7::NvBufSurface>()
                    ))
                }
                NvmmAbi::Ds8 => {
                    header_from!(ptr::read_unaligned(
                        bytes.as_ptr().cast::<ds8::NvBufSurface>()
                    ))
                }
            }
        })
    }
}

/// The fields of one `NvBufSurfaceParams` the reader uses, whatever the layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    pub width: u32,
    pub height: u32,
    pub color_format: u32,
    pub layout: u32,
    pub data_size: u32,
    pub data_ptr: u64,
    pub planes: NvBufSurfacePlaneParams,
}

macro_rules! params_from {
    ($p:expr) => {
        Params {
            width: $p.width,
            height: $p.height,
            color_format: $p.color_format,
            layout: $p.layout,
            data_size: $p.data_size,
            data_ptr: $p.data_ptr as u64,
            planes: $p.plane_params,
        }
    };
}

impl Params {
    /// Reads entry `index` of a `surfaceList`.
    ///
    /// # Safety
    /// `list` must point to more than `index` readable `NvBufSurfaceParams` of layout `abi`.
    pub unsafe fn read(list: *const c_void, index: u32, abi: NvmmAbi) -> Self {
        // SAFETY: the caller guarantees the entry; integers and raw pointers are valid for any
        // bytes; unaligned reads accept any producer's allocation.
        unsafe {
            match abi {
                NvmmAbi::Ds7 => params_from!(ptr::read_unaligned(
                    list.cast::<ds7::NvBufSurfaceParams>().add(index as usize)
                )),
                NvmmAbi::Ds8 => params_from!(ptr::read_unaligned(
                    list.cast::<ds8::NvBufSurfaceParams>().add(index as usize)
                )),
            }
        }
    }
}

/// How the pixels of a memory type are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `dataPtr` + plane offsets are device addresses.
    Pointer,
    /// Through `NvBufSurfaceMapEglImage` and CUDA's EGL interop.
    Egl,
}

fn route(mem_type: u32, gpu_id: u32, platform: Option<Platform>) -> Result<Route, NvmmError> {
    match mem_type {
        abi::NVBUF_MEM_CUDA_DEVICE | abi::NVBUF_MEM_CUDA_UNIFIED | abi::NVBUF_MEM_CUDA_PINNED => {
            Ok(Route::Pointer)
        }
        abi::NVBUF_MEM_SURFACE_ARRAY => Ok(Route::Egl),
        abi::NVBUF_MEM_DEFAULT => {
            let platform = match platform {
                Some(p) => p,
                None => loader::platform_of_gpu(gpu_id).map_err(|e| NvmmError::DefaultMemType {
                    reason: e.to_string(),
                })?,
            };
            Ok(match platform {
                Platform::Discrete => Route::Pointer,
                Platform::Integrated => Route::Egl,
            })
        }
        other => Err(NvmmError::MemType {
            mem_type: abi::mem_type_name(other),
        }),
    }
}

fn check_layout(index: u32, layout: u32) -> Result<(), NvmmError> {
    match layout {
        abi::NVBUF_LAYOUT_PITCH => Ok(()),
        abi::NVBUF_LAYOUT_BLOCK_LINEAR => Err(NvmmError::BlockLinear { index }),
        layout => Err(NvmmError::Layout { index, layout }),
    }
}

fn checked_format(
    index: u32,
    color_format: u32,
) -> Result<(VideoFormat, Option<YuvColorimetry>), NvmmError> {
    format_info(color_format).ok_or_else(|| NvmmError::ColorFormat {
        index,
        format: abi::color_format_name(color_format),
    })
}

/// The device image of a pitch-linear surface addressed by `dataPtr`, after checking its layout,
/// format, plane count, and that every plane lies inside `dataSize`.
pub(crate) fn pitch_image(index: u32, p: &Params) -> Result<DeviceImage, NvmmError> {
    check_layout(index, p.layout)?;
    let (format, _) = checked_format(index, p.color_format)?;
    if p.data_ptr == 0 {
        return Err(NvmmError::NullData { index });
    }
    let probe = DeviceImage::unplaced(format, p.width, p.height)
        .map_err(|source| NvmmError::Image { index, source })?;
    let count = probe
        .plane_count()
        .map_err(|source| NvmmError::Image { index, source })?;
    if p.planes.num_planes as usize != count {
        return Err(NvmmError::PlaneCount {
            index,
            format: abi::color_format_name(p.color_format),
            found: p.planes.num_planes,
            expected: count as u32,
        });
    }
    let mut planes = [DevicePlane::default(); 3];
    for (plane, out) in planes.iter_mut().enumerate().take(count) {
        let offset = p.planes.offset[plane];
        let pitch = p.planes.pitch[plane];
        let rows = probe.rows(plane);
        if offset as u64 + pitch as u64 * rows as u64 > p.data_size as u64 {
            return Err(NvmmError::PlaneOutOfBounds {
                index,
                plane,
                offset,
                pitch,
                rows,
                data_size: p.data_size,
            });
        }
        *out = DevicePlane {
            ptr: p
                .data_ptr
                .checked_add(offset as u64)
                .ok_or(NvmmError::Image {
                    index,
                    source: DeviceImageError::Address { format, plane },
                })?,
            pitch,
        };
    }
    DeviceImage::new(format, p.width, p.height, planes)
        .map_err(|source| NvmmError::Image { index, source })
}

/// Reads the surfaces of an NVMM buffer, picking the NvBufSurface layout by the mapped size and
/// asking the driver what DEFAULT memory is. See [`surface_images_with`].
///
/// # Safety
/// As [`surface_images_with`].
pub unsafe fn surface_images(buffer: &gst::BufferRef) -> Result<NvmmBatch<'_>, NvmmError> {
    // SAFETY: the caller's guarantee is passed on.
    unsafe { surface_images_with(buffer, &ReadOptions::default()) }
}

/// Reads the surfaces of an NVMM buffer as device images: maps its one memory for reading, reads
/// the NvBufSurface (`gpuId`, `batchSize`, `numFilled`, `memType`) and each filled surface's
/// colour format, layout, size, plane pitches and offsets and `dataPtr`. CUDA device, unified and
/// pinned memory (and DEFAULT on a dGPU) is addressed through `dataPtr`; Jetson SURFACE_ARRAY
/// memory (and DEFAULT there) through an [`EglSurfaceMapping`], which needs a CUDA context current
/// on this thread. Everything else is refused with an error naming the problem, as are
/// block-linear surfaces, unsupported formats, null pointers, `numFilled > batchSize` and planes
/// that do not fit `dataSize`.
///
/// # Safety
/// `buffer` must be NVMM memory (negotiated with `memory:NVMM` caps, from an NVIDIA element or
/// [`surface_memory`](super::surface_memory)): its mapped bytes are an `NvBufSurface` of the
/// layout used, whose `surfaceList` points to `batchSize` readable `NvBufSurfaceParams` that live
/// as long as the buffer. Everything that can be checked is checked; where `surfaceList` points
/// cannot be.
pub unsafe fn surface_images_with<'a>(
    buffer: &'a gst::BufferRef,
    options: &ReadOptions,
) -> Result<NvmmBatch<'a>, NvmmError> {
    if buffer.n_memory() != 1 {
        return Err(NvmmError::Memories(buffer.n_memory()));
    }
    let map = buffer
        .peek_memory(0)
        .map_readable()
        .map_err(|_| NvmmError::Map)?;
    let abi = match options.abi {
        Some(abi) if map.size() >= abi.surface_size() => abi,
        Some(abi) => {
            return Err(NvmmError::TooSmallForAbi {
                size: map.size(),
                abi,
            });
        }
        None => NvmmAbi::from_mapped_size(map.size())?,
    };
    let header = Header::parse(map.as_slice(), abi)?;
    if header.num_filled > header.batch_size {
        return Err(NvmmError::Filled {
            num_filled: header.num_filled,
            batch_size: header.batch_size,
        });
    }
    if header.num_filled > 0 && header.surface_list.is_null() {
        return Err(NvmmError::NullSurfaceList {
            num_filled: header.num_filled,
        });
    }
    let route = if header.num_filled > 0 {
        route(header.mem_type, header.gpu_id, options.platform)?
    } else {
        Route::Pointer
    };
    let mut surfaces = Vec::with_capacity(header.num_filled as usize);
    let mut egl = Vec::new();
    for index in 0..header.num_filled {
        // SAFETY: `surfaceList` holds `batchSize` >= `numFilled` > `index` entries of this layout
        // (the caller's guarantee; the counts were checked above).
        let params = unsafe { Params::read(header.surface_list, index, abi) };
        let (format, colorimetry) = checked_format(index, params.color_format)?;
        let image = match route {
            Route::Pointer => pitch_image(index, &params)?,
            Route::Egl => {
                check_layout(index, params.layout)?;
                // SAFETY: the mapped bytes are the live SURFACE_ARRAY NvBufSurface of layout
                // `abi` (caller), `index` < `numFilled`; the map outlives the mapping (the batch
                // drops its EGL mappings first), and the current context is the caller's.
                let mapping =
                    unsafe { EglSurfaceMapping::new(map.as_ptr() as *mut c_void, abi, index) }?;
                let pitches: [u32; NVBUF_MAX_PLANES] = params.planes.pitch;
                let image = mapping.image(format, params.width, params.height, &pitches)?;
                egl.push(mapping);
                image
            }
        };
        surfaces.push(NvmmSurface {
            index,
            image,
            color_format: params.color_format,
            colorimetry,
        });
    }
    Ok(NvmmBatch {
        surfaces,
        _egl: egl,
        _map: map,
        abi,
        gpu_id: header.gpu_id,
        batch_size: header.batch_size,
        mem_type: header.mem_type,
    })
}
