// SPDX-License-Identifier: MIT OR Apache-2.0
//! GStreamer CUDA memory (`memory:CUDAMemory`, from `nvh264dec`, `cudaupload`, `cudaconvert`):
//! device pointers through the CUDA map flag, in the producer's CUDA context.
//!
//! `libgstcuda-1.0` is loaded at run time (it ships with gst-plugins-bad 1.22+), so nothing links
//! it; a machine without it never negotiates CUDA memory in the first place.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use gst::glib;
use gst::glib::translate::{FromGlibPtrNone, ToGlibPtr};
use gst::prelude::*;

use super::context::Context;
use super::error::{CudaError, Result};
use crate::device::DeviceImage;

/// The GstContext type the CUDA elements share their `GstCudaContext` through.
pub const CUDA_CONTEXT_TYPE: &str = "gst.cuda.context";
/// `GST_MAP_CUDA` (`GST_MAP_FLAG_LAST << 1`): map for device access; the data is a device pointer.
const MAP_CUDA: u32 = gst::ffi::GST_MAP_FLAG_LAST << 1;

/// The public head of `GstCudaMemory` (gst/cuda/gstcudamemory.h, 1.22+).
#[repr(C)]
struct GstCudaMemory {
    mem: gst::ffi::GstMemory,
    context: *mut gst::ffi::GstObject,
    info: gst_video::ffi::GstVideoInfo,
}

struct Lib {
    _lib: libloading::Library,
    is_cuda_memory: unsafe extern "C" fn(*mut gst::ffi::GstMemory) -> glib::ffi::gboolean,
    context_get_handle: unsafe extern "C" fn(*mut gst::ffi::GstObject) -> *mut c_void,
    memory_sync: Option<unsafe extern "C" fn(*mut gst::ffi::GstMemory)>,
    load_library: unsafe extern "C" fn() -> glib::ffi::gboolean,
    /// `gst_cuda_context_new_wrapped(CUcontext, CUdevice)` (1.22): a GstCudaContext that uses an
    /// existing context without owning it.
    context_new_wrapped: unsafe extern "C" fn(*mut c_void, i32) -> *mut gst::ffi::GstObject,
    /// `gst_cuda_context_new(guint device_id)`: a GstCudaContext with a context of its own.
    context_new: unsafe extern "C" fn(u32) -> *mut gst::ffi::GstObject,
    /// `gst_context_new_cuda_context(GstCudaContext*)`: the `gst.cuda.context` GstContext.
    new_cuda_context: unsafe extern "C" fn(*mut gst::ffi::GstObject) -> *mut gst::ffi::GstContext,
}

fn lib() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: loading GStreamer's own CUDA library runs only its constructors, which are
        // safe; each symbol is looked up with the signature of its 1.22 header.
        unsafe {
            let lib = libloading::Library::new("libgstcuda-1.0.so.0")
                .map_err(|e| format!("libgstcuda-1.0.so.0 cannot be loaded: {e}"))?;
            let is_cuda_memory = *lib
                .get(b"gst_is_cuda_memory\0")
                .map_err(|e| e.to_string())?;
            let context_get_handle = *lib
                .get(b"gst_cuda_context_get_handle\0")
                .map_err(|e| e.to_string())?;
            let memory_sync = lib.get(b"gst_cuda_memory_sync\0").ok().map(|s| *s);
            let load_library = *lib
                .get(b"gst_cuda_load_library\0")
                .map_err(|e| e.to_string())?;
            let context_new_wrapped = *lib
                .get(b"gst_cuda_context_new_wrapped\0")
                .map_err(|e| e.to_string())?;
            let context_new = *lib
                .get(b"gst_cuda_context_new\0")
                .map_err(|e| e.to_string())?;
            let new_cuda_context = *lib
                .get(b"gst_context_new_cuda_context\0")
                .map_err(|e| e.to_string())?;
            Ok(Lib {
                _lib: lib,
                is_cuda_memory,
                context_get_handle,
                memory_sync,
                load_library,
                context_new_wrapped,
                context_new,
                new_cuda_context,
            })
        }
    })
    .as_ref()
    .map_err(|e| CudaError::Invalid(format!("GStreamer CUDA memory: {e}")))
}

/// Wraps the CUcontext of a `GstCudaContext` object, keeping the object alive meanwhile.
pub fn context_from_object(object: &gst::Object) -> Result<Arc<Context>> {
    let lib = lib()?;
    // SAFETY: `object` is a live GstCudaContext (checked by the callers: it came from a CUDA
    // memory or from a `gst.cuda.context` context); the handle lives as long as the object, which
    // the returned context keeps alive.
    unsafe {
        let raw = (lib.context_get_handle)(object.to_glib_none().0);
        if raw.is_null() {
            return Err(CudaError::Invalid(
                "the GstCudaContext has no CUDA context".into(),
            ));
        }
        Context::borrowed(raw.cast(), Box::new(object.clone()))
    }
}

/// Offers `ctx` to GStreamer's CUDA elements: a `GstCudaContext` wrapping it (which keeps `ctx`
/// alive as long as any element holds it) inside a `gst.cuda.context` GstContext. Elements such
/// as `nvh264dec`, `cudaupload` and `cudaconvert` that receive it (through a context query, a
/// need-context message answered by their bin, or `set_context`) allocate their output there,
/// so their frames are addressable by the engine without a copy.
pub fn share_context(ctx: &Arc<Context>) -> Result<gst::Context> {
    let lib = lib()?;
    // SAFETY: `gst_cuda_load_library` only loads libcuda into GStreamer's CUDA library; the
    // wrapped context is created from a live CUcontext/CUdevice pair, and `ctx` (kept on the
    // object below until it is finalised) keeps that context alive as long as the object.
    unsafe {
        if (lib.load_library)() == glib::ffi::GFALSE {
            return Err(CudaError::Invalid(
                "GStreamer's CUDA library cannot load libcuda".into(),
            ));
        }
        let raw = (lib.context_new_wrapped)(ctx.raw().cast(), ctx.device());
        if raw.is_null() {
            return Err(CudaError::Invalid(
                "gst_cuda_context_new_wrapped failed".into(),
            ));
        }
        let object: gst::Object = glib::translate::from_glib_full(raw);
        object.set_data("ferrostream-cuda-context", ctx.clone());
        let context: gst::Context =
            glib::translate::from_glib_full((lib.new_cuda_context)(object.to_glib_none().0));
        Ok(context)
    }
}

/// A `gst.cuda.context` GstContext holding a new CUDA context of GPU `gpu_id` (not the primary
/// one), as GStreamer's CUDA elements make when nobody offers one: frames allocated there are
/// not addressable from the engine's context.
pub fn private_context(gpu_id: u32) -> Result<gst::Context> {
    let lib = lib()?;
    // SAFETY: plain constructors of GStreamer's CUDA library; ownership of both results is
    // taken (full transfer).
    unsafe {
        if (lib.load_library)() == glib::ffi::GFALSE {
            return Err(CudaError::Invalid(
                "GStreamer's CUDA library cannot load libcuda".into(),
            ));
        }
        let raw = (lib.context_new)(gpu_id);
        if raw.is_null() {
            return Err(CudaError::Invalid("gst_cuda_context_new failed".into()));
        }
        let object: gst::Object = glib::translate::from_glib_full(raw);
        Ok(glib::translate::from_glib_full((lib.new_cuda_context)(
            object.to_glib_none().0,
        )))
    }
}

/// The `GstCudaContext` object a `gst.cuda.context` GstContext carries.
pub fn object_of_context(context: &gst::ContextRef) -> Option<gst::Object> {
    if context.context_type() != CUDA_CONTEXT_TYPE {
        return None;
    }
    context
        .structure()
        .get::<gst::Object>(CUDA_CONTEXT_TYPE)
        .ok()
}

/// Asks the peers of `pad` for their `gst.cuda.context` (what `gst_cuda_ensure_element_context`
/// does first), so that kernels can be loaded into the producer's context before the first frame.
pub fn query_context(pad: &gst::Pad) -> Option<gst::Context> {
    let mut query = gst::query::Context::new(CUDA_CONTEXT_TYPE);
    if pad.peer_query(&mut query) {
        query.context_owned()
    } else {
        None
    }
}

/// The GstCudaContext that owns `mem`, when it is CUDA memory.
fn memory_context(mem: &gst::MemoryRef) -> Option<gst::Object> {
    let lib = lib().ok()?;
    let ptr = mem.as_ptr() as *mut gst::ffi::GstMemory;
    // SAFETY: `gst_is_cuda_memory` accepts any memory; when it says yes, the memory is a
    // `GstCudaMemory` whose public `context` field is a live GstCudaContext (ref'd here).
    unsafe {
        if (lib.is_cuda_memory)(ptr) == glib::ffi::GFALSE {
            return None;
        }
        let context = (*(ptr as *mut GstCudaMemory)).context;
        (!context.is_null()).then(|| gst::Object::from_glib_none(context))
    }
}

/// A buffer of CUDA memory mapped for device access; unmapped on drop.
pub struct CudaFrame<'a> {
    frame: gst_video::ffi::GstVideoFrame,
    image: DeviceImage,
    _buffer: std::marker::PhantomData<&'a gst::BufferRef>,
}

impl CudaFrame<'_> {
    /// The device pointers and pitches of the frame.
    pub fn image(&self) -> &DeviceImage {
        &self.image
    }
}

impl Drop for CudaFrame<'_> {
    fn drop(&mut self) {
        // SAFETY: mapped in `map`, unmapped once.
        unsafe { gst_video::ffi::gst_video_frame_unmap(&mut self.frame) };
    }
}

/// Where a CUDA frame lives: its producer's context, adopted once and reused while it matches.
#[derive(Debug, Default)]
pub struct ContextTracker {
    current: Option<(usize, Arc<Context>)>,
}

impl ContextTracker {
    /// Adopts the context of a `gst.cuda.context` GstContext (from a query or `set_context`).
    pub fn adopt(&mut self, context: &gst::ContextRef) -> Result<Option<Arc<Context>>> {
        let Some(object) = object_of_context(context) else {
            return Ok(None);
        };
        self.adopt_object(&object).map(Some)
    }

    fn adopt_object(&mut self, object: &gst::Object) -> Result<Arc<Context>> {
        let key = object.as_ptr() as usize;
        match &self.current {
            Some((k, ctx)) if *k == key => Ok(ctx.clone()),
            _ => {
                let ctx = context_from_object(object)?;
                self.current = Some((key, ctx.clone()));
                Ok(ctx)
            }
        }
    }

    /// The context of the buffer's first memory, which must be CUDA memory.
    pub fn context_of(&mut self, buffer: &gst::BufferRef) -> Result<Arc<Context>> {
        let object = buffer
            .n_memory()
            .gt(&0)
            .then(|| buffer.peek_memory(0))
            .and_then(memory_context)
            .ok_or_else(|| {
                CudaError::Invalid(
                    "the buffer is not GStreamer CUDA memory although its caps say memory:CUDAMemory"
                        .into(),
                )
            })?;
        self.adopt_object(&object)
    }
}

/// Prepares `buffer` (CUDA memory) to be mapped for device access by other code: waits for the
/// producer's pending work on it, and returns the `gst_buffer_map` flags that give device
/// pointers and the GPU the memory is on.
pub fn prepare_device_map(buffer: &gst::BufferRef, write: bool) -> Result<(u32, u32)> {
    let lib = lib()?;
    let mem = (buffer.n_memory() > 0)
        .then(|| buffer.peek_memory(0))
        .ok_or_else(|| CudaError::Invalid("the buffer has no memory".into()))?;
    let object = memory_context(mem)
        .ok_or_else(|| CudaError::Invalid("the buffer is not GStreamer CUDA memory".into()))?;
    if let Some(sync) = lib.memory_sync {
        // SAFETY: `mem` is CUDA memory (checked above).
        unsafe { sync(mem.as_ptr() as *mut _) };
    }
    let gpu = if object.has_property("cuda-device-id") {
        object.property::<u32>("cuda-device-id")
    } else {
        0
    };
    let mut flags = gst::ffi::GST_MAP_READ | MAP_CUDA;
    if write {
        flags |= gst::ffi::GST_MAP_WRITE;
    }
    Ok((flags, gpu))
}

/// Maps `buffer` (CUDA memory laid out as `info`) for device access, reading or writing. The
/// producer's pending work on the memory is waited for first.
pub fn map<'a>(
    buffer: &'a gst::BufferRef,
    info: &gst_video::VideoInfo,
    write: bool,
) -> Result<CudaFrame<'a>> {
    let lib = lib()?;
    if let (Some(sync), Some(mem)) = (
        lib.memory_sync,
        (buffer.n_memory() > 0).then(|| buffer.peek_memory(0)),
    ) {
        // SAFETY: `mem` is CUDA memory (the caller's caps say so; gst_cuda_memory_sync returns
        // early for other memory).
        unsafe { sync(mem.as_ptr() as *mut _) };
    }
    let mut flags = gst::ffi::GST_MAP_READ | MAP_CUDA;
    if write {
        flags |= gst::ffi::GST_MAP_WRITE;
    }
    let mut frame = std::mem::MaybeUninit::<gst_video::ffi::GstVideoFrame>::zeroed();
    // SAFETY: `info` describes the buffer (negotiated caps); the frame is unmapped in Drop. A
    // write map needs a writable buffer: callers pass the buffer of an in-place transform.
    let ok = unsafe {
        gst_video::ffi::gst_video_frame_map(
            frame.as_mut_ptr(),
            info.to_glib_none().0 as *mut _,
            buffer.as_mut_ptr(),
            flags,
        )
    };
    if ok == glib::ffi::GFALSE {
        return Err(CudaError::Invalid(format!(
            "cannot map the CUDA buffer for {}",
            if write { "writing" } else { "reading" }
        )));
    }
    // SAFETY: mapped successfully above.
    let mut frame = unsafe { frame.assume_init() };
    let mut planes = [crate::device::DevicePlane::default(); 3];
    for (i, p) in planes.iter_mut().enumerate().take(info.n_planes() as usize) {
        *p = crate::device::DevicePlane {
            ptr: frame.data[i] as u64,
            pitch: frame.info.stride[i] as u32,
        };
    }
    match DeviceImage::new(info.format(), info.width(), info.height(), planes) {
        Ok(image) => Ok(CudaFrame {
            frame,
            image,
            _buffer: std::marker::PhantomData,
        }),
        Err(e) => {
            // SAFETY: mapped above and not wrapped, so unmapped here once.
            unsafe { gst_video::ffi::gst_video_frame_unmap(&mut frame) };
            Err(CudaError::Invalid(e.to_string()))
        }
    }
}
