// SPDX-License-Identifier: MIT OR Apache-2.0
//! `libnvbufsurface.so` and the CUDA EGL interop functions of libcuda, loaded at run time (cudarc
//! has no EGL bindings, and one build must start on machines without either library), and the RAII
//! [`EglSurfaceMapping`] that makes a Jetson SURFACE_ARRAY surface addressable by CUDA.
//!
//! Layers: the libraries' symbols (private function pointers), thin `unsafe` methods returning
//! `Result` ([`NvBufSurfaceLib`], [`CudaEglLib`]), then the safe mapping type. This path only runs
//! on Jetson (or a DeepStream machine with EGL); it is kept small and follows the documented flow:
//! `NvBufSurfaceMapEglImage` -> `cuGraphicsEGLRegisterImage` -> `cuGraphicsResourceGetMappedEglFrame`
//! -> `cuCtxSynchronize` -> use -> `cuCtxSynchronize` -> `cuGraphicsUnregisterResource` ->
//! `NvBufSurfaceUnMapEglImage`.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use gst_video::VideoFormat;

use super::abi::{NVBUF_MAX_PLANES, NvmmAbi, ds7, ds8};
use super::{NvmmError, Platform};
use crate::device::{DeviceImage, DevicePlane};

/// `CUresult` (0 is success).
pub type CUresult = c_int;
/// `CUcontext`.
pub type CUcontext = *mut c_void;
/// `CUgraphicsResource`.
pub type CUgraphicsResource = *mut c_void;
/// `CUdevice`.
pub type CUdevice = c_int;

/// `CU_EGL_FRAME_TYPE_ARRAY`: the frame is CUDA arrays (block linear).
pub const CU_EGL_FRAME_TYPE_ARRAY: u32 = 0;
/// `CU_EGL_FRAME_TYPE_PITCH`: the frame is pitch-linear device memory.
pub const CU_EGL_FRAME_TYPE_PITCH: u32 = 1;
/// `CU_GRAPHICS_REGISTER_FLAGS_NONE`: read and write.
pub const CU_GRAPHICS_REGISTER_FLAGS_NONE: c_uint = 0;
/// `CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY`.
pub const CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY: c_uint = 1;
/// `CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD`.
pub const CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD: c_uint = 2;
/// `CU_DEVICE_ATTRIBUTE_INTEGRATED`.
pub const CU_DEVICE_ATTRIBUTE_INTEGRATED: c_int = 18;

/// The `frame` union of `CUeglFrame`: CUDA arrays (ARRAY frames) or plane pointers (PITCH frames).
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUeglFrameData {
    /// `CUarray pArray[3]`.
    pub p_array: [*mut c_void; 3],
    /// `void* pPitch[3]`.
    pub p_pitch: [*mut c_void; 3],
}

/// `CUeglFrame` (64 bytes; cudaEGL.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUeglFrame {
    pub frame: CUeglFrameData,
    pub width: c_uint,
    pub height: c_uint,
    pub depth: c_uint,
    /// Pitch of the first plane, in bytes (PITCH frames).
    pub pitch: c_uint,
    pub plane_count: c_uint,
    pub num_channels: c_uint,
    /// `frameType` (`CU_EGL_FRAME_TYPE_*`).
    pub frame_type: u32,
    /// `eglColorFormat` (`CUeglColorFormat`).
    pub egl_color_format: u32,
    /// `cuFormat` (`CUarray_format`).
    pub cu_format: u32,
}

impl CUeglFrame {
    fn zeroed() -> Self {
        // SAFETY: integers and raw pointers only; all-zero bytes are valid for each.
        unsafe { std::mem::zeroed() }
    }

    /// Plane pointers of a PITCH frame (`None` for ARRAY frames).
    pub fn pitch_planes(&self) -> Option<[*mut c_void; 3]> {
        if self.frame_type != CU_EGL_FRAME_TYPE_PITCH {
            return None;
        }
        // SAFETY: both union members are three pointers; for a PITCH frame (checked above) the
        // driver wrote `pPitch`.
        Some(unsafe { self.frame.p_pitch })
    }
}

impl std::fmt::Debug for CUeglFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: reading the union as pointers is valid whichever member was written.
        let planes = unsafe { self.frame.p_pitch };
        f.debug_struct("CUeglFrame")
            .field("frame", &planes)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("depth", &self.depth)
            .field("pitch", &self.pitch)
            .field("plane_count", &self.plane_count)
            .field("num_channels", &self.num_channels)
            .field("frame_type", &self.frame_type)
            .field("egl_color_format", &self.egl_color_format)
            .field("cu_format", &self.cu_format)
            .finish()
    }
}

/// Opens the first of `names` that loads.
fn open(
    names: &[&str],
    library: &'static str,
    hint: &'static str,
) -> Result<libloading::Library, NvmmError> {
    let mut reasons = Vec::new();
    for name in names {
        // SAFETY: these are NVIDIA's own libraries; loading them runs only their initialisers.
        match unsafe { libloading::Library::new(*name) } {
            Ok(lib) => return Ok(lib),
            Err(e) => reasons.push(e.to_string()),
        }
    }
    Err(NvmmError::Library {
        library,
        reason: reasons.join("; "),
        hint,
    })
}

/// Looks up `name` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the symbol's true signature.
unsafe fn symbol<T: Copy>(
    lib: &libloading::Library,
    name: &str,
    library: &'static str,
    hint: &'static str,
) -> Result<T, NvmmError> {
    // SAFETY: the caller guarantees the signature.
    unsafe { lib.get::<T>(name) }
        .map(|s| *s)
        .map_err(|e| NvmmError::Library {
            library,
            reason: format!("symbol {name} is missing: {e}"),
            hint,
        })
}

const NVBUFSURFACE: &str = "libnvbufsurface.so";
const NVBUFSURFACE_HINT: &str =
    "it comes with JetPack on Jetson and with the DeepStream SDK on dGPU machines";
/// Where JetPack 5/6 and DeepStream install it, tried after the loader's search path.
const NVBUFSURFACE_NAMES: &[&str] = &[
    "libnvbufsurface.so",
    "libnvbufsurface.so.1.0.0",
    "/opt/nvidia/deepstream/deepstream/lib/libnvbufsurface.so",
    "/usr/lib/aarch64-linux-gnu/nvidia/libnvbufsurface.so.1.0.0",
    "/usr/lib/aarch64-linux-gnu/tegra/libnvbufsurface.so.1.0.0",
];

/// An `NvBufSurface*` as the library takes it: the layout is the one the library was built with.
pub type SurfacePtr = *mut c_void;

/// The functions of `libnvbufsurface.so` (all return 0 on success).
pub struct NvBufSurfaceLib {
    map: unsafe extern "C" fn(SurfacePtr, c_int, c_int, c_int) -> c_int,
    unmap: unsafe extern "C" fn(SurfacePtr, c_int, c_int) -> c_int,
    sync_for_cpu: unsafe extern "C" fn(SurfacePtr, c_int, c_int) -> c_int,
    sync_for_device: unsafe extern "C" fn(SurfacePtr, c_int, c_int) -> c_int,
    map_egl_image: unsafe extern "C" fn(SurfacePtr, c_int) -> c_int,
    unmap_egl_image: unsafe extern "C" fn(SurfacePtr, c_int) -> c_int,
    create: unsafe extern "C" fn(*mut SurfacePtr, u32, *mut c_void) -> c_int,
    destroy: unsafe extern "C" fn(SurfacePtr) -> c_int,
    _lib: libloading::Library,
}

impl std::fmt::Debug for NvBufSurfaceLib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NvBufSurfaceLib")
    }
}

fn check_nvbuf(call: &'static str, code: c_int) -> Result<(), NvmmError> {
    if code == 0 {
        Ok(())
    } else {
        Err(NvmmError::Call { call, code })
    }
}

/// `libnvbufsurface.so`, loaded once per process.
pub fn nvbufsurface() -> Result<&'static NvBufSurfaceLib, NvmmError> {
    static LIB: OnceLock<Result<NvBufSurfaceLib, NvmmError>> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = open(NVBUFSURFACE_NAMES, NVBUFSURFACE, NVBUFSURFACE_HINT)?;
        // SAFETY: each signature is the one of nvbufsurface.h (REFERENCE.md, "NvBufSurface"):
        // pointers to the surface, int index/plane, the map flags enum as int, uint32_t batch size.
        unsafe {
            let (l, h) = (NVBUFSURFACE, NVBUFSURFACE_HINT);
            Ok(NvBufSurfaceLib {
                map: symbol(&lib, "NvBufSurfaceMap", l, h)?,
                unmap: symbol(&lib, "NvBufSurfaceUnMap", l, h)?,
                sync_for_cpu: symbol(&lib, "NvBufSurfaceSyncForCpu", l, h)?,
                sync_for_device: symbol(&lib, "NvBufSurfaceSyncForDevice", l, h)?,
                map_egl_image: symbol(&lib, "NvBufSurfaceMapEglImage", l, h)?,
                unmap_egl_image: symbol(&lib, "NvBufSurfaceUnMapEglImage", l, h)?,
                create: symbol(&lib, "NvBufSurfaceCreate", l, h)?,
                destroy: symbol(&lib, "NvBufSurfaceDestroy", l, h)?,
                _lib: lib,
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl NvBufSurfaceLib {
    /// `NvBufSurfaceMap(surf, index, plane, flags)`: CPU pointers into `mappedAddr.addr` (index or
    /// plane -1: all).
    ///
    /// # Safety
    /// `surf` must be a live NvBufSurface created by this library (of its layout).
    pub unsafe fn map(
        &self,
        surf: SurfacePtr,
        index: c_int,
        plane: c_int,
        flags: c_int,
    ) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceMap", unsafe {
            (self.map)(surf, index, plane, flags)
        })
    }

    /// `NvBufSurfaceUnMap(surf, index, plane)`.
    ///
    /// # Safety
    /// As [`Self::map`], and the planes must have been mapped.
    pub unsafe fn unmap(
        &self,
        surf: SurfacePtr,
        index: c_int,
        plane: c_int,
    ) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceUnMap", unsafe {
            (self.unmap)(surf, index, plane)
        })
    }

    /// `NvBufSurfaceSyncForCpu(surf, index, plane)`.
    ///
    /// # Safety
    /// As [`Self::map`].
    pub unsafe fn sync_for_cpu(
        &self,
        surf: SurfacePtr,
        index: c_int,
        plane: c_int,
    ) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceSyncForCpu", unsafe {
            (self.sync_for_cpu)(surf, index, plane)
        })
    }

    /// `NvBufSurfaceSyncForDevice(surf, index, plane)`.
    ///
    /// # Safety
    /// As [`Self::map`].
    pub unsafe fn sync_for_device(
        &self,
        surf: SurfacePtr,
        index: c_int,
        plane: c_int,
    ) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceSyncForDevice", unsafe {
            (self.sync_for_device)(surf, index, plane)
        })
    }

    /// `NvBufSurfaceMapEglImage(surf, index)`: fills `mappedAddr.eglImage` (SURFACE_ARRAY only).
    ///
    /// # Safety
    /// As [`Self::map`], with SURFACE_ARRAY memory.
    pub unsafe fn map_egl_image(&self, surf: SurfacePtr, index: c_int) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceMapEglImage", unsafe {
            (self.map_egl_image)(surf, index)
        })
    }

    /// `NvBufSurfaceUnMapEglImage(surf, index)`.
    ///
    /// # Safety
    /// As [`Self::map_egl_image`], after a successful map of the same index.
    pub unsafe fn unmap_egl_image(&self, surf: SurfacePtr, index: c_int) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceUnMapEglImage", unsafe {
            (self.unmap_egl_image)(surf, index)
        })
    }

    /// `NvBufSurfaceCreate(&surf, batchSize, createParams)`. `NvBufSurfaceCreateParams` is not
    /// mirrored here (not needed by the reader); the caller passes one it built.
    ///
    /// # Safety
    /// `params` must point to a valid `NvBufSurfaceCreateParams` of the library's version.
    pub unsafe fn create(
        &self,
        batch_size: u32,
        params: *mut c_void,
    ) -> Result<SurfacePtr, NvmmError> {
        let mut surf: SurfacePtr = std::ptr::null_mut();
        // SAFETY: `surf` is a valid out pointer; the caller guarantees `params`.
        check_nvbuf("NvBufSurfaceCreate", unsafe {
            (self.create)(&mut surf, batch_size, params)
        })?;
        Ok(surf)
    }

    /// `NvBufSurfaceDestroy(surf)`.
    ///
    /// # Safety
    /// `surf` must come from [`Self::create`] and not be used afterwards.
    pub unsafe fn destroy(&self, surf: SurfacePtr) -> Result<(), NvmmError> {
        // SAFETY: the caller guarantees `surf`.
        check_nvbuf("NvBufSurfaceDestroy", unsafe { (self.destroy)(surf) })
    }
}

const LIBCUDA: &str = "libcuda.so.1";
const LIBCUDA_HINT: &str = "it comes with the NVIDIA driver (and with JetPack on Jetson)";

/// The libcuda functions the EGL path needs (EGL interop plus context handling).
pub struct CudaEglLib {
    init: unsafe extern "C" fn(c_uint) -> CUresult,
    device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult,
    ctx_get_current: unsafe extern "C" fn(*mut CUcontext) -> CUresult,
    ctx_push_current: unsafe extern "C" fn(CUcontext) -> CUresult,
    ctx_pop_current: unsafe extern "C" fn(*mut CUcontext) -> CUresult,
    ctx_synchronize: unsafe extern "C" fn() -> CUresult,
    register_image: unsafe extern "C" fn(*mut CUgraphicsResource, *mut c_void, c_uint) -> CUresult,
    get_mapped_egl_frame:
        unsafe extern "C" fn(*mut CUeglFrame, CUgraphicsResource, c_uint, c_uint) -> CUresult,
    unregister_resource: unsafe extern "C" fn(CUgraphicsResource) -> CUresult,
    error_name: Option<unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult>,
    _lib: libloading::Library,
}

impl std::fmt::Debug for CudaEglLib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CudaEglLib")
    }
}

/// libcuda's EGL interop functions, loaded once per process.
pub fn cuda_egl() -> Result<&'static CudaEglLib, NvmmError> {
    static LIB: OnceLock<Result<CudaEglLib, NvmmError>> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = open(&[LIBCUDA, "libcuda.so"], LIBCUDA, LIBCUDA_HINT)?;
        let (l, h) = (LIBCUDA, LIBCUDA_HINT);
        // SAFETY: each signature is the one of cuda.h / cudaEGL.h (REFERENCE.md, "CUDA EGL
        // interop"): enums as int, handles as pointers, CUdevice as int.
        unsafe {
            Ok(CudaEglLib {
                init: symbol(&lib, "cuInit", l, h)?,
                device_get: symbol(&lib, "cuDeviceGet", l, h)?,
                device_get_attribute: symbol(&lib, "cuDeviceGetAttribute", l, h)?,
                ctx_get_current: symbol(&lib, "cuCtxGetCurrent", l, h)?,
                ctx_push_current: symbol(&lib, "cuCtxPushCurrent_v2", l, h)?,
                ctx_pop_current: symbol(&lib, "cuCtxPopCurrent_v2", l, h)?,
                ctx_synchronize: symbol(&lib, "cuCtxSynchronize", l, h)?,
                register_image: symbol(&lib, "cuGraphicsEGLRegisterImage", l, h)?,
                get_mapped_egl_frame: symbol(&lib, "cuGraphicsResourceGetMappedEglFrame", l, h)?,
                unregister_resource: symbol(&lib, "cuGraphicsUnregisterResource", l, h)?,
                error_name: symbol(&lib, "cuGetErrorName", l, h).ok(),
                _lib: lib,
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl CudaEglLib {
    fn check(&self, call: &'static str, code: CUresult) -> Result<(), NvmmError> {
        if code == 0 {
            return Ok(());
        }
        let name = self
            .error_name
            .and_then(|f| {
                let mut s: *const c_char = std::ptr::null();
                // SAFETY: cuGetErrorName writes a pointer to a static string, or fails.
                let ok = unsafe { f(code, &mut s) } == 0 && !s.is_null();
                // SAFETY: a NUL-terminated static string from the driver.
                ok.then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| format!("CUresult {code}"));
        Err(NvmmError::Cuda { call, name })
    }

    /// Whether GPU `gpu_id` is integrated (Jetson) or discrete.
    pub fn platform_of(&self, gpu_id: u32) -> Result<Platform, NvmmError> {
        let mut device: CUdevice = 0;
        let mut integrated: c_int = 0;
        // SAFETY: cuInit is idempotent; the out pointers are valid; `device` comes from cuDeviceGet.
        unsafe {
            self.check("cuInit", (self.init)(0))?;
            self.check(
                "cuDeviceGet",
                (self.device_get)(&mut device, gpu_id as c_int),
            )?;
            self.check(
                "cuDeviceGetAttribute",
                (self.device_get_attribute)(
                    &mut integrated,
                    CU_DEVICE_ATTRIBUTE_INTEGRATED,
                    device,
                ),
            )?;
        }
        Ok(if integrated != 0 {
            Platform::Integrated
        } else {
            Platform::Discrete
        })
    }

    /// The context current on this thread, if any.
    pub fn current_context(&self) -> Result<Option<CUcontext>, NvmmError> {
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        self.check("cuCtxGetCurrent", unsafe {
            (self.ctx_get_current)(&mut ctx)
        })?;
        Ok((!ctx.is_null()).then_some(ctx))
    }
}

/// Whether GPU `gpu_id` is integrated (Jetson) or discrete, asked of the driver.
pub fn platform_of_gpu(gpu_id: u32) -> Result<Platform, NvmmError> {
    cuda_egl()?.platform_of(gpu_id)
}

/// A Jetson SURFACE_ARRAY surface made addressable by CUDA through its EGL image, for as long as
/// the value lives: dropping it synchronises the context, unregisters the CUDA resource and
/// unmaps the EGL image.
#[derive(Debug)]
pub struct EglSurfaceMapping {
    nvbuf: &'static NvBufSurfaceLib,
    cuda: &'static CudaEglLib,
    surface: SurfacePtr,
    index: u32,
    /// The context current at creation, made current again to unregister.
    context: CUcontext,
    /// Null until registered.
    resource: CUgraphicsResource,
    frame: CUeglFrame,
}

impl EglSurfaceMapping {
    /// Maps surface `index` of `surface` (an `NvBufSurface*` of layout `abi`). Needs a CUDA
    /// context current on this thread (the one the frame's kernels will run in).
    ///
    /// # Safety
    /// `surface` must be a live SURFACE_ARRAY NvBufSurface of layout `abi` with more than `index`
    /// filled surfaces, staying alive (and not unmapped from EGL by anyone else) until the
    /// mapping is dropped; the current context must stay alive as long, too.
    pub unsafe fn new(surface: SurfacePtr, abi: NvmmAbi, index: u32) -> Result<Self, NvmmError> {
        let nvbuf = nvbufsurface()?;
        let cuda = cuda_egl()?;
        let context = cuda.current_context()?.ok_or(NvmmError::NoCudaContext)?;
        // SAFETY: the caller guarantees `surface` and `index`.
        unsafe { nvbuf.map_egl_image(surface, index as c_int) }?;
        // From here on Drop undoes what was done, also on the error paths below.
        let mut mapping = Self {
            nvbuf,
            cuda,
            surface,
            index,
            context,
            resource: std::ptr::null_mut(),
            frame: CUeglFrame::zeroed(),
        };
        // SAFETY: `surfaceList` of a live surface of layout `abi` has more than `index` entries
        // (caller); MapEglImage has just filled `mappedAddr.eglImage` of this one.
        let egl_image = unsafe {
            match abi {
                NvmmAbi::Ds7 => {
                    let s = surface as *const ds7::NvBufSurface;
                    (*(*s).surface_list.add(index as usize))
                        .mapped_addr
                        .egl_image
                }
                NvmmAbi::Ds8 => {
                    let s = surface as *const ds8::NvBufSurface;
                    (*(*s).surface_list.add(index as usize))
                        .mapped_addr
                        .egl_image
                }
            }
        };
        if egl_image.is_null() {
            return Err(NvmmError::NullEglImage { index });
        }
        // SAFETY: a context is current; `egl_image` is a live EGLImage (mapped above); the out
        // pointers are valid.
        unsafe {
            cuda.check(
                "cuGraphicsEGLRegisterImage",
                (cuda.register_image)(
                    &mut mapping.resource,
                    egl_image,
                    CU_GRAPHICS_REGISTER_FLAGS_NONE,
                ),
            )?;
            cuda.check(
                "cuGraphicsResourceGetMappedEglFrame",
                (cuda.get_mapped_egl_frame)(&mut mapping.frame, mapping.resource, 0, 0),
            )?;
            cuda.check("cuCtxSynchronize", (cuda.ctx_synchronize)())?;
        }
        Ok(mapping)
    }

    /// The mapped frame as the driver describes it.
    pub fn frame(&self) -> &CUeglFrame {
        &self.frame
    }

    /// The frame as a device image of `format`, `width` x `height`, with the surface's plane
    /// pitches (`CUeglFrame` only carries the first plane's). Block-linear frames (CUDA arrays)
    /// are refused.
    pub fn image(
        &self,
        format: VideoFormat,
        width: u32,
        height: u32,
        pitches: &[u32; NVBUF_MAX_PLANES],
    ) -> Result<DeviceImage, NvmmError> {
        let index = self.index;
        let Some(pointers) = self.frame.pitch_planes() else {
            return Err(NvmmError::EglArray { index });
        };
        let mismatch = |what: String| NvmmError::EglMismatch { index, what };
        if (self.frame.width, self.frame.height) != (width, height) {
            return Err(mismatch(format!(
                "{}x{} against {width}x{height}",
                self.frame.width, self.frame.height
            )));
        }
        if self.frame.pitch != pitches[0] {
            return Err(mismatch(format!(
                "pitch {} against {}",
                self.frame.pitch, pitches[0]
            )));
        }
        let probe = DeviceImage::unplaced(format, width, height)
            .map_err(|source| NvmmError::Image { index, source })?;
        let count = probe
            .plane_count()
            .map_err(|source| NvmmError::Image { index, source })?;
        if self.frame.plane_count as usize != count {
            return Err(mismatch(format!(
                "{} planes against {count}",
                self.frame.plane_count
            )));
        }
        let mut planes = [DevicePlane::default(); 3];
        for (i, p) in planes.iter_mut().enumerate().take(count) {
            *p = DevicePlane {
                ptr: pointers[i] as u64,
                pitch: pitches[i],
            };
        }
        DeviceImage::new(format, width, height, planes)
            .map_err(|source| NvmmError::Image { index, source })
    }
}

impl Drop for EglSurfaceMapping {
    fn drop(&mut self) {
        if !self.resource.is_null() {
            // SAFETY: `context` was current at creation and is alive (caller of `new`); it is
            // pushed for the unregister and popped again; `resource` was registered in `new`
            // and is unregistered once. Errors cannot be reported from Drop.
            unsafe {
                if (self.cuda.ctx_push_current)(self.context) == 0 {
                    let _ = (self.cuda.ctx_synchronize)();
                    let _ = (self.cuda.unregister_resource)(self.resource);
                    let mut popped: CUcontext = std::ptr::null_mut();
                    let _ = (self.cuda.ctx_pop_current)(&mut popped);
                }
            }
        }
        // SAFETY: the EGL image of this index was mapped in `new`; the surface is still alive
        // (caller of `new`).
        let _ = unsafe {
            self.nvbuf
                .unmap_egl_image(self.surface, self.index as c_int)
        };
    }
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;

    use super::*;

    #[test]
    fn egl_frame_layout() {
        assert_eq!(size_of::<CUeglFrame>(), 64);
        assert_eq!(offset_of!(CUeglFrame, frame), 0);
        assert_eq!(size_of::<CUeglFrameData>(), 24);
        assert_eq!(offset_of!(CUeglFrame, width), 24);
        assert_eq!(offset_of!(CUeglFrame, height), 28);
        assert_eq!(offset_of!(CUeglFrame, depth), 32);
        assert_eq!(offset_of!(CUeglFrame, pitch), 36);
        assert_eq!(offset_of!(CUeglFrame, plane_count), 40);
        assert_eq!(offset_of!(CUeglFrame, num_channels), 44);
        assert_eq!(offset_of!(CUeglFrame, frame_type), 48);
        assert_eq!(offset_of!(CUeglFrame, egl_color_format), 52);
        assert_eq!(offset_of!(CUeglFrame, cu_format), 56);
    }

    #[test]
    fn missing_nvbufsurface_names_the_library_and_where_it_comes_from() {
        // This machine has no JetPack/DeepStream; where it does, the library loads.
        if let Err(e) = nvbufsurface() {
            let text = e.to_string();
            assert!(text.contains("libnvbufsurface.so"), "{text}");
            assert!(
                text.contains("JetPack") && text.contains("DeepStream"),
                "{text}"
            );
        }
    }

    #[test]
    fn egl_frame_pitch_planes_only_for_pitch_frames() {
        let mut frame = CUeglFrame::zeroed();
        frame.frame.p_pitch = [8 as *mut c_void, 16 as *mut c_void, std::ptr::null_mut()];
        frame.frame_type = CU_EGL_FRAME_TYPE_ARRAY;
        assert!(frame.pitch_planes().is_none());
        frame.frame_type = CU_EGL_FRAME_TYPE_PITCH;
        assert_eq!(frame.pitch_planes().unwrap()[1] as usize, 16);
    }
}
