// SPDX-License-Identifier: MIT OR Apache-2.0
//! `#[repr(C)]` mirrors of `nvbufsurface.h`, in the two layouts that exist in the field.
//!
//! * [`ds7`]: JetPack 6 (L4T r36) and DeepStream 6.2 to 7.1, the layout in REFERENCE.md.
//! * [`ds8`]: DeepStream 8.0+ and JetPack 7 (r38/r39). Three structs grew:
//!   - `NvBufSurface` gains `bool isImportedBuf` after `surfaceList`;
//!   - `NvBufSurfaceMappedAddr` gains `void *nvmmPtr, *cudaPtr` before `_reserved`;
//!   - `NvBufSurfaceParams` gains `NvBufSurfaceCudaBuffer *cudaBuffer` after `paramex`, and its
//!     `_reserved` array is `STRUCTURE_PADDING` (4) pointers long instead of `STRUCTURE_PADDING - 1`
//!     (DeepStream 8.0 and Jetson Linux r39.2 API references, `structNvBufSurfaceParams`).
//!
//! The DS8 numbers below follow from the C rules on LP64 (x86_64 and aarch64 alike): `uint32_t`
//! and enums (C `int`) are 4 bytes aligned to 4, `bool` 1 byte, `uint64_t` and pointers 8 bytes
//! aligned to 8, each field at the next multiple of its alignment, the struct's size a multiple of
//! its largest alignment (8):
//!
//! | struct | field | DS7 offset | DS8 offset |
//! |---|---|---|---|
//! | NvBufSurface | `surfaceList` | 24 | 24 |
//! | | `isImportedBuf` (bool) | - | 32 |
//! | | `_reserved[4]` | 32 | 40 (33 rounded up to 8) |
//! | | size | 64 | 72 |
//! | NvBufSurfaceMappedAddr | `addr[4]`, `eglImage` | 0, 32 | 0, 32 |
//! | | `nvmmPtr`, `cudaPtr` | - | 40, 48 |
//! | | `_reserved[4]` | 40 | 56 |
//! | | size | 72 | 88 |
//! | NvBufSurfaceParams | `planeParams` (232 bytes, unchanged) | 48 | 48 |
//! | | `mappedAddr` | 280 | 280 |
//! | | `paramex` | 352 | 368 (280 + 88) |
//! | | `cudaBuffer` | - | 376 |
//! | | `_reserved` | 360 (3 pointers) | 384 (4 pointers) |
//! | | size | 384 | 416 |
//!
//! C `bool` fields are mirrored as `u8`: a foreign byte other than 0 or 1 read into a Rust `bool`
//! would be undefined behaviour. C enums are mirrored as `u32` (same size and alignment as `int`,
//! and every value in the headers is non-negative); their values are the constants below.

use std::ffi::c_void;

use super::NvmmError;

/// `STRUCTURE_PADDING`: length of the reserved pointer arrays.
pub const STRUCTURE_PADDING: usize = 4;
/// `NVBUF_MAX_PLANES`.
pub const NVBUF_MAX_PLANES: usize = 4;

// NvBufSurfaceMemType
/// `NVBUF_MEM_DEFAULT`: CUDA device memory on a dGPU, SURFACE_ARRAY on Jetson.
pub const NVBUF_MEM_DEFAULT: u32 = 0;
/// `NVBUF_MEM_CUDA_PINNED`: page-locked host memory.
pub const NVBUF_MEM_CUDA_PINNED: u32 = 1;
/// `NVBUF_MEM_CUDA_DEVICE`.
pub const NVBUF_MEM_CUDA_DEVICE: u32 = 2;
/// `NVBUF_MEM_CUDA_UNIFIED`: managed memory.
pub const NVBUF_MEM_CUDA_UNIFIED: u32 = 3;
/// `NVBUF_MEM_SURFACE_ARRAY`: Jetson NvRm surfaces, reached through EGL images.
pub const NVBUF_MEM_SURFACE_ARRAY: u32 = 4;
/// `NVBUF_MEM_HANDLE`: Jetson NvRm handles.
pub const NVBUF_MEM_HANDLE: u32 = 5;
/// `NVBUF_MEM_SYSTEM`: malloc'ed host memory.
pub const NVBUF_MEM_SYSTEM: u32 = 6;

// NvBufSurfaceLayout
/// `NVBUF_LAYOUT_PITCH`: rows one pitch apart.
pub const NVBUF_LAYOUT_PITCH: u32 = 0;
/// `NVBUF_LAYOUT_BLOCK_LINEAR`: GPU tiling (Jetson `nvvidconv` default for NV12).
pub const NVBUF_LAYOUT_BLOCK_LINEAR: u32 = 1;

// NvBufSurfaceMemMapFlags
/// `NVBUF_MAP_READ`.
pub const NVBUF_MAP_READ: i32 = 0;
/// `NVBUF_MAP_WRITE`.
pub const NVBUF_MAP_WRITE: i32 = 1;
/// `NVBUF_MAP_READ_WRITE`.
pub const NVBUF_MAP_READ_WRITE: i32 = 2;

// NvBufSurfaceColorFormat (only the values REFERENCE.md lists; `_LAST` moves between versions).
/// `NVBUF_COLOR_FORMAT_GRAY8`.
pub const NVBUF_COLOR_FORMAT_GRAY8: u32 = 1;
/// `NVBUF_COLOR_FORMAT_YUV420`: I420, BT.601 limited range.
pub const NVBUF_COLOR_FORMAT_YUV420: u32 = 2;
/// `NVBUF_COLOR_FORMAT_YVU420`: YV12.
pub const NVBUF_COLOR_FORMAT_YVU420: u32 = 3;
/// `NVBUF_COLOR_FORMAT_NV12`: BT.601 limited range.
pub const NVBUF_COLOR_FORMAT_NV12: u32 = 6;
/// `NVBUF_COLOR_FORMAT_NV12_ER`: BT.601 full ("extended") range.
pub const NVBUF_COLOR_FORMAT_NV12_ER: u32 = 7;
/// `NVBUF_COLOR_FORMAT_NV21`.
pub const NVBUF_COLOR_FORMAT_NV21: u32 = 8;
/// `NVBUF_COLOR_FORMAT_YUV444`.
pub const NVBUF_COLOR_FORMAT_YUV444: u32 = 18;
/// `NVBUF_COLOR_FORMAT_RGBA`.
pub const NVBUF_COLOR_FORMAT_RGBA: u32 = 19;
/// `NVBUF_COLOR_FORMAT_BGRA`.
pub const NVBUF_COLOR_FORMAT_BGRA: u32 = 20;
/// `NVBUF_COLOR_FORMAT_RGBx`.
pub const NVBUF_COLOR_FORMAT_RGBX: u32 = 23;
/// `NVBUF_COLOR_FORMAT_BGRx`.
pub const NVBUF_COLOR_FORMAT_BGRX: u32 = 24;
/// `NVBUF_COLOR_FORMAT_RGB`.
pub const NVBUF_COLOR_FORMAT_RGB: u32 = 27;
/// `NVBUF_COLOR_FORMAT_BGR`.
pub const NVBUF_COLOR_FORMAT_BGR: u32 = 28;
/// `NVBUF_COLOR_FORMAT_NV12_10LE`.
pub const NVBUF_COLOR_FORMAT_NV12_10LE: u32 = 29;
/// `NVBUF_COLOR_FORMAT_NV12_709`: BT.709 limited range.
pub const NVBUF_COLOR_FORMAT_NV12_709: u32 = 33;
/// `NVBUF_COLOR_FORMAT_NV12_709_ER`: BT.709 full range.
pub const NVBUF_COLOR_FORMAT_NV12_709_ER: u32 = 34;
/// `NVBUF_COLOR_FORMAT_NV12_2020`: BT.2020 limited range.
pub const NVBUF_COLOR_FORMAT_NV12_2020: u32 = 36;

/// The name of a memory type, for messages.
pub fn mem_type_name(mem_type: u32) -> String {
    match mem_type {
        NVBUF_MEM_DEFAULT => "DEFAULT".into(),
        NVBUF_MEM_CUDA_PINNED => "CUDA_PINNED".into(),
        NVBUF_MEM_CUDA_DEVICE => "CUDA_DEVICE".into(),
        NVBUF_MEM_CUDA_UNIFIED => "CUDA_UNIFIED".into(),
        NVBUF_MEM_SURFACE_ARRAY => "SURFACE_ARRAY".into(),
        NVBUF_MEM_HANDLE => "HANDLE".into(),
        NVBUF_MEM_SYSTEM => "SYSTEM".into(),
        other => format!("unknown memory type {other}"),
    }
}

/// The name of a colour format, for messages.
pub fn color_format_name(format: u32) -> String {
    let name = match format {
        NVBUF_COLOR_FORMAT_GRAY8 => "GRAY8",
        NVBUF_COLOR_FORMAT_YUV420 => "YUV420",
        NVBUF_COLOR_FORMAT_YVU420 => "YVU420",
        NVBUF_COLOR_FORMAT_NV12 => "NV12",
        NVBUF_COLOR_FORMAT_NV12_ER => "NV12_ER",
        NVBUF_COLOR_FORMAT_NV21 => "NV21",
        NVBUF_COLOR_FORMAT_YUV444 => "YUV444",
        NVBUF_COLOR_FORMAT_RGBA => "RGBA",
        NVBUF_COLOR_FORMAT_BGRA => "BGRA",
        NVBUF_COLOR_FORMAT_RGBX => "RGBx",
        NVBUF_COLOR_FORMAT_BGRX => "BGRx",
        NVBUF_COLOR_FORMAT_RGB => "RGB",
        NVBUF_COLOR_FORMAT_BGR => "BGR",
        NVBUF_COLOR_FORMAT_NV12_10LE => "NV12_10LE",
        NVBUF_COLOR_FORMAT_NV12_709 => "NV12_709",
        NVBUF_COLOR_FORMAT_NV12_709_ER => "NV12_709_ER",
        NVBUF_COLOR_FORMAT_NV12_2020 => "NV12_2020",
        other => return format!("colour format {other}"),
    };
    format!("{name} ({format})")
}

/// `NvBufSurfacePlaneParams` (232 bytes; the same in both layouts).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvBufSurfacePlaneParams {
    /// `num_planes`.
    pub num_planes: u32,
    /// `width`: plane widths in pixels.
    pub width: [u32; NVBUF_MAX_PLANES],
    /// `height`: plane heights in rows.
    pub height: [u32; NVBUF_MAX_PLANES],
    /// `pitch`: bytes from one row to the next.
    pub pitch: [u32; NVBUF_MAX_PLANES],
    /// `offset`: bytes from `dataPtr` to the plane.
    pub offset: [u32; NVBUF_MAX_PLANES],
    /// `psize`: bytes of each plane.
    pub psize: [u32; NVBUF_MAX_PLANES],
    /// `bytesPerPix`.
    pub bytes_per_pix: [u32; NVBUF_MAX_PLANES],
    pub _reserved: [*mut c_void; STRUCTURE_PADDING * NVBUF_MAX_PLANES],
}

/// Zero-initialised values of the mirrors: every field is an integer or a raw pointer, for which
/// all-zero bytes are valid (0 and null).
macro_rules! zeroed {
    ($($t:ty),*) => {$(
        impl $t {
            pub fn zeroed() -> Self {
                // SAFETY: the struct holds only integers, `u8`-mirrored bools and raw pointers
                // (and structs of those); all-zero bytes are a valid value of each.
                unsafe { std::mem::zeroed() }
            }
        }
    )*};
}

zeroed!(NvBufSurfacePlaneParams);

/// The JetPack 6 / DeepStream 6.2-7.1 layout.
pub mod ds7 {
    use super::*;

    /// `NvBufSurfaceMappedAddr` (72 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct NvBufSurfaceMappedAddr {
        /// `addr`: CPU plane pointers after `NvBufSurfaceMap`.
        pub addr: [*mut c_void; NVBUF_MAX_PLANES],
        /// `eglImage`: filled by `NvBufSurfaceMapEglImage`.
        pub egl_image: *mut c_void,
        pub _reserved: [*mut c_void; STRUCTURE_PADDING],
    }

    /// `NvBufSurfaceParams` (384 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct NvBufSurfaceParams {
        pub width: u32,
        pub height: u32,
        pub pitch: u32,
        /// `colorFormat` (`NVBUF_COLOR_FORMAT_*`).
        pub color_format: u32,
        /// `layout` (`NVBUF_LAYOUT_*`).
        pub layout: u32,
        /// `bufferDesc`: dmabuf fd, SURFACE_ARRAY/HANDLE only.
        pub buffer_desc: u64,
        /// `dataSize`: bytes allocated.
        pub data_size: u32,
        /// `dataPtr`: invalid for SURFACE_ARRAY/HANDLE.
        pub data_ptr: *mut c_void,
        pub plane_params: NvBufSurfacePlaneParams,
        pub mapped_addr: NvBufSurfaceMappedAddr,
        /// `paramex` (`NvBufSurfaceParamsEx*`, not mirrored).
        pub paramex: *mut c_void,
        pub _reserved: [*mut c_void; STRUCTURE_PADDING - 1],
    }

    /// `NvBufSurface` (64 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct NvBufSurface {
        pub gpu_id: u32,
        pub batch_size: u32,
        pub num_filled: u32,
        /// `isContiguous` (C `bool`).
        pub is_contiguous: u8,
        /// `memType` (`NVBUF_MEM_*`).
        pub mem_type: u32,
        /// `surfaceList`: `batchSize` entries.
        pub surface_list: *mut NvBufSurfaceParams,
        pub _reserved: [*mut c_void; STRUCTURE_PADDING],
    }

    zeroed!(NvBufSurfaceMappedAddr, NvBufSurfaceParams, NvBufSurface);
}

/// The DeepStream 8 / JetPack 7 layout.
pub mod ds8 {
    use super::*;

    /// `NvBufSurfaceMappedAddr` (88 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct NvBufSurfaceMappedAddr {
        pub addr: [*mut c_void; NVBUF_MAX_PLANES],
        pub egl_image: *mut c_void,
        /// `nvmmPtr`: mapped NvRm memory.
        pub nvmm_ptr: *mut c_void,
        /// `cudaPtr`: mapped CUDA memory.
        pub cuda_ptr: *mut c_void,
        pub _reserved: [*mut c_void; STRUCTURE_PADDING],
    }

    /// `NvBufSurfaceParams` (416 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct NvBufSurfaceParams {
        pub width: u32,
        pub height: u32,
        pub pitch: u32,
        pub color_format: u32,
        pub layout: u32,
        pub buffer_desc: u64,
        pub data_size: u32,
        pub data_ptr: *mut c_void,
        pub plane_params: NvBufSurfacePlaneParams,
        pub mapped_addr: NvBufSurfaceMappedAddr,
        pub paramex: *mut c_void,
        /// `cudaBuffer` (`NvBufSurfaceCudaBuffer*`, not mirrored).
        pub cuda_buffer: *mut c_void,
        pub _reserved: [*mut c_void; STRUCTURE_PADDING],
    }

    /// `NvBufSurface` (72 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct NvBufSurface {
        pub gpu_id: u32,
        pub batch_size: u32,
        pub num_filled: u32,
        pub is_contiguous: u8,
        pub mem_type: u32,
        pub surface_list: *mut NvBufSurfaceParams,
        /// `isImportedBuf` (C `bool`).
        pub is_imported_buf: u8,
        pub _reserved: [*mut c_void; STRUCTURE_PADDING],
    }

    zeroed!(NvBufSurfaceMappedAddr, NvBufSurfaceParams, NvBufSurface);
}

/// Which NvBufSurface layout a buffer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvmmAbi {
    /// JetPack 6 / DeepStream 6.2-7.1: `sizeof(NvBufSurface)` = 64.
    Ds7,
    /// DeepStream 8 / JetPack 7: `sizeof(NvBufSurface)` = 72.
    Ds8,
}

impl NvmmAbi {
    /// The layout whose `sizeof(NvBufSurface)` is `size`: mapping an NVMM memory gives exactly
    /// that many bytes. Any other size is refused rather than guessed.
    pub fn from_mapped_size(size: usize) -> Result<Self, NvmmError> {
        match size {
            s if s == size_of::<ds7::NvBufSurface>() => Ok(Self::Ds7),
            s if s == size_of::<ds8::NvBufSurface>() => Ok(Self::Ds8),
            size => Err(NvmmError::MappedSize { size }),
        }
    }

    /// `sizeof(NvBufSurface)`.
    pub fn surface_size(self) -> usize {
        match self {
            Self::Ds7 => size_of::<ds7::NvBufSurface>(),
            Self::Ds8 => size_of::<ds8::NvBufSurface>(),
        }
    }

    /// `sizeof(NvBufSurfaceParams)`: the stride of `surfaceList`.
    pub fn params_size(self) -> usize {
        match self {
            Self::Ds7 => size_of::<ds7::NvBufSurfaceParams>(),
            Self::Ds8 => size_of::<ds8::NvBufSurfaceParams>(),
        }
    }

    /// The releases that use the layout.
    pub fn releases(self) -> &'static str {
        match self {
            Self::Ds7 => "JetPack 6 / DeepStream 6.2-7.1",
            Self::Ds8 => "DeepStream 8 / JetPack 7",
        }
    }
}

impl std::fmt::Display for NvmmAbi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} NvBufSurface ({} bytes)",
            self.releases(),
            self.surface_size()
        )
    }
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;

    use super::*;

    #[test]
    fn plane_params_layout() {
        type P = NvBufSurfacePlaneParams;
        assert_eq!(size_of::<P>(), 232);
        assert_eq!(offset_of!(P, num_planes), 0);
        assert_eq!(offset_of!(P, width), 4);
        assert_eq!(offset_of!(P, height), 20);
        assert_eq!(offset_of!(P, pitch), 36);
        assert_eq!(offset_of!(P, offset), 52);
        assert_eq!(offset_of!(P, psize), 68);
        assert_eq!(offset_of!(P, bytes_per_pix), 84);
        assert_eq!(offset_of!(P, _reserved), 104);
    }

    #[test]
    fn ds7_layout() {
        use ds7::*;
        type S = NvBufSurface;
        assert_eq!(size_of::<S>(), 64);
        assert_eq!(offset_of!(S, gpu_id), 0);
        assert_eq!(offset_of!(S, batch_size), 4);
        assert_eq!(offset_of!(S, num_filled), 8);
        assert_eq!(offset_of!(S, is_contiguous), 12);
        assert_eq!(offset_of!(S, mem_type), 16);
        assert_eq!(offset_of!(S, surface_list), 24);
        assert_eq!(offset_of!(S, _reserved), 32);

        type P = NvBufSurfaceParams;
        assert_eq!(size_of::<P>(), 384);
        assert_eq!(offset_of!(P, width), 0);
        assert_eq!(offset_of!(P, height), 4);
        assert_eq!(offset_of!(P, pitch), 8);
        assert_eq!(offset_of!(P, color_format), 12);
        assert_eq!(offset_of!(P, layout), 16);
        assert_eq!(offset_of!(P, buffer_desc), 24);
        assert_eq!(offset_of!(P, data_size), 32);
        assert_eq!(offset_of!(P, data_ptr), 40);
        assert_eq!(offset_of!(P, plane_params), 48);
        assert_eq!(offset_of!(P, mapped_addr), 280);
        assert_eq!(offset_of!(P, paramex), 352);
        assert_eq!(offset_of!(P, _reserved), 360);

        type M = NvBufSurfaceMappedAddr;
        assert_eq!(size_of::<M>(), 72);
        assert_eq!(offset_of!(M, addr), 0);
        assert_eq!(offset_of!(M, egl_image), 32);
        assert_eq!(offset_of!(M, _reserved), 40);
    }

    #[test]
    fn ds8_layout() {
        use ds8::*;
        type S = NvBufSurface;
        assert_eq!(size_of::<S>(), 72);
        assert_eq!(offset_of!(S, gpu_id), 0);
        assert_eq!(offset_of!(S, batch_size), 4);
        assert_eq!(offset_of!(S, num_filled), 8);
        assert_eq!(offset_of!(S, is_contiguous), 12);
        assert_eq!(offset_of!(S, mem_type), 16);
        assert_eq!(offset_of!(S, surface_list), 24);
        assert_eq!(offset_of!(S, is_imported_buf), 32);
        assert_eq!(offset_of!(S, _reserved), 40);

        type P = NvBufSurfaceParams;
        assert_eq!(size_of::<P>(), 416);
        assert_eq!(offset_of!(P, width), 0);
        assert_eq!(offset_of!(P, height), 4);
        assert_eq!(offset_of!(P, pitch), 8);
        assert_eq!(offset_of!(P, color_format), 12);
        assert_eq!(offset_of!(P, layout), 16);
        assert_eq!(offset_of!(P, buffer_desc), 24);
        assert_eq!(offset_of!(P, data_size), 32);
        assert_eq!(offset_of!(P, data_ptr), 40);
        assert_eq!(offset_of!(P, plane_params), 48);
        assert_eq!(offset_of!(P, mapped_addr), 280);
        assert_eq!(offset_of!(P, paramex), 368);
        assert_eq!(offset_of!(P, cuda_buffer), 376);
        assert_eq!(offset_of!(P, _reserved), 384);

        type M = NvBufSurfaceMappedAddr;
        assert_eq!(size_of::<M>(), 88);
        assert_eq!(offset_of!(M, addr), 0);
        assert_eq!(offset_of!(M, egl_image), 32);
        assert_eq!(offset_of!(M, nvmm_ptr), 40);
        assert_eq!(offset_of!(M, cuda_ptr), 48);
        assert_eq!(offset_of!(M, _reserved), 56);
    }

    #[test]
    fn abi_is_chosen_by_mapped_size_only() {
        assert_eq!(NvmmAbi::from_mapped_size(64).unwrap(), NvmmAbi::Ds7);
        assert_eq!(NvmmAbi::from_mapped_size(72).unwrap(), NvmmAbi::Ds8);
        for size in [0, 63, 65, 71, 73, 384, 4096] {
            assert!(matches!(
                NvmmAbi::from_mapped_size(size),
                Err(NvmmError::MappedSize { size: s }) if s == size
            ));
        }
        assert_eq!(NvmmAbi::Ds7.params_size(), 384);
        assert_eq!(NvmmAbi::Ds8.params_size(), 416);
    }
}
