// SPDX-License-Identifier: MIT OR Apache-2.0
//! Frames as arrays without a copy: NumPy arrays over system memory (through
//! `__array_interface__`), and objects with `__cuda_array_interface__` and DLPack over CUDA
//! memory (CuPy, PyTorch, Numba). Every array keeps its plane object, and every plane object
//! the mapping, so the buffer stays mapped exactly as long as any array of it lives.

use std::ffi::{CStr, c_char, c_void};
use std::sync::Mutex;

use ferrostream_abi::{FsFrameMap, memory, status};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors;
use crate::library::{lib, video_caps};

/// A frame mapped by the plugin; unmapped when the last plane of it is gone.
#[pyclass(frozen, weakref, module = "ferrostream")]
pub struct FrameMapping {
    map: Mutex<FsFrameMap>,
    unmap: ferrostream_abi::symbols::FrameUnmap,
}

// SAFETY: the mapping is plain addresses plus the library's handle, which may be released from
// any thread; access goes through the mutex.
unsafe impl Send for FrameMapping {}
// SAFETY: see above.
unsafe impl Sync for FrameMapping {}

impl Drop for FrameMapping {
    fn drop(&mut self) {
        let map = self.map.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: filled by the library's map function; unmapped once (it clears the handle).
        unsafe { (self.unmap)(map) };
    }
}

#[pymethods]
impl FrameMapping {
    /// The pixel format's GStreamer name (`"RGB"`, `"NV12"`, ...).
    #[getter]
    fn format(&self) -> String {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.format.is_null() {
            return String::new();
        }
        // SAFETY: a static NUL-terminated string from GStreamer.
        unsafe { CStr::from_ptr(map.format) }
            .to_string_lossy()
            .into_owned()
    }
}

/// One plane of a mapped frame: `rows x cols x channels` bytes.
#[pyclass(frozen, module = "ferrostream")]
pub struct Plane {
    mapping: Py<FrameMapping>,
    data: u64,
    shape: Vec<i64>,
    /// In bytes.
    strides: Vec<i64>,
    device: Option<i32>,
    readonly: bool,
}

impl Plane {
    fn interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("strides", PyTuple::new(py, &self.strides)?)?;
        d.set_item("typestr", "|u1")?;
        d.set_item("data", (self.data, self.readonly))?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}

#[pymethods]
impl Plane {
    #[getter]
    fn shape(&self) -> Vec<i64> {
        self.shape.clone()
    }

    /// Bytes between neighbours along each axis.
    #[getter]
    fn strides(&self) -> Vec<i64> {
        self.strides.clone()
    }

    #[getter]
    fn readonly(&self) -> bool {
        self.readonly
    }

    /// The GPU of a CUDA plane, None in system memory.
    #[getter]
    fn device(&self) -> Option<i32> {
        self.device
    }

    /// The frame's pixel format.
    #[getter]
    fn format(&self) -> String {
        self.mapping.get().format()
    }

    /// NumPy's array interface (system memory only).
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.device.is_some() {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "a CUDA plane has no __array_interface__: use __cuda_array_interface__ or DLPack",
            ));
        }
        self.interface(py)
    }

    /// The CUDA array interface (CuPy, Numba, PyTorch), version 3.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.device.is_none() {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "a plane in system memory has no __cuda_array_interface__",
            ));
        }
        self.interface(py)
    }

    /// `(device type, device id)` for DLPack: (1, 0) for the CPU, (2, gpu) for CUDA.
    fn __dlpack_device__(&self) -> (i32, i32) {
        match self.device {
            Some(gpu) => (DL_CUDA, gpu),
            None => (DL_CPU, 0),
        }
    }

    /// A DLPack capsule of the plane (no copy); the plane stays mapped until the consumer
    /// releases it. A read-only plane is exported only to consumers of DLPack 1.0 or newer
    /// (`max_version`), whose tensors carry the read-only flag.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        slf: &Bound<'_, Self>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        // The pixels are ready: the producer's work was waited for when the frame was mapped.
        let _ = stream;
        let p = slf.get();
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "ferrostream planes are exported without copies only",
            ));
        }
        if let Some(device) = dl_device
            && device != p.__dlpack_device__()
        {
            return Err(PyBufferError::new_err(format!(
                "the plane is on DLPack device {:?}, not {device:?}",
                p.__dlpack_device__()
            )));
        }
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        if p.readonly && !versioned {
            return Err(PyBufferError::new_err(
                "a read-only plane is exported only with DLPack 1.0's read-only flag \
                 (max_version=(1, 0)); writable planes come from batch.frame_array() inside a \
                 ferrostream.writable block",
            ));
        }
        dlpack_capsule(slf, versioned)
    }
}

const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;
const DLPACK_FLAG_READ_ONLY: u64 = 1;

/// DLPack's structures (dlpack.h 1.0: `DLManagedTensor` and `DLManagedTensorVersioned`).
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device_type: i32,
    device_id: i32,
    ndim: i32,
    dtype_code: u8,
    dtype_bits: u8,
    dtype_lanes: u16,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

#[repr(C)]
struct DlManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    tensor: DlTensor,
}

/// What a capsule owns: the tensor (one of the two forms), its shape and strides, and the plane
/// keeping the mapping.
struct DlContext {
    legacy: DlManagedTensor,
    versioned: DlManagedTensorVersioned,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _owner: Py<Plane>,
}

unsafe extern "C" fn dl_deleter(managed: *mut DlManagedTensor) {
    // SAFETY: the managed tensor's context is the boxed DlContext made in `dlpack_capsule`, and
    // DLPack calls the deleter once. Dropping the `Py` without the interpreter attached is
    // deferred by PyO3.
    unsafe {
        if !managed.is_null() {
            drop(Box::from_raw((*managed).manager_ctx as *mut DlContext));
        }
    }
}

unsafe extern "C" fn dl_deleter_versioned(managed: *mut DlManagedTensorVersioned) {
    // SAFETY: as for `dl_deleter`.
    unsafe {
        if !managed.is_null() {
            drop(Box::from_raw((*managed).manager_ctx as *mut DlContext));
        }
    }
}

const DLTENSOR: &CStr = c"dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";

unsafe extern "C" fn capsule_destructor(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: a capsule still named "dltensor" was never consumed, so its tensor is ours to
    // delete; a consumer renames it "used_dltensor" and deletes the tensor itself.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let managed =
                pyo3::ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()) as *mut DlManagedTensor;
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        }
    }
}

unsafe extern "C" fn capsule_destructor_versioned(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: as for `capsule_destructor`, with the versioned names.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let managed = pyo3::ffi::PyCapsule_GetPointer(capsule, DLTENSOR_VERSIONED.as_ptr())
                as *mut DlManagedTensorVersioned;
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        }
    }
}

fn dlpack_capsule(plane: &Bound<'_, Plane>, versioned: bool) -> PyResult<Py<PyAny>> {
    let py = plane.py();
    let p = plane.get();
    // DLPack strides count elements; ours are bytes of 1-byte elements.
    let tensor = || DlTensor {
        data: p.data as *mut c_void,
        device_type: p.device.map_or(DL_CPU, |_| DL_CUDA),
        device_id: p.device.unwrap_or(0),
        ndim: p.shape.len() as i32,
        dtype_code: 1, // kDLUInt
        dtype_bits: 8,
        dtype_lanes: 1,
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let mut ctx = Box::new(DlContext {
        legacy: DlManagedTensor {
            tensor: tensor(),
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(dl_deleter),
        },
        versioned: DlManagedTensorVersioned {
            version: [1, 0],
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(dl_deleter_versioned),
            flags: if p.readonly { DLPACK_FLAG_READ_ONLY } else { 0 },
            tensor: tensor(),
        },
        shape: p.shape.clone(),
        strides: p.strides.clone(),
        _owner: plane.clone().unbind(),
    });
    let (shape, strides) = (ctx.shape.as_mut_ptr(), ctx.strides.as_mut_ptr());
    for t in [&mut ctx.legacy.tensor, &mut ctx.versioned.tensor] {
        t.shape = shape;
        t.strides = strides;
    }
    let raw = Box::into_raw(ctx);
    // SAFETY: `raw` is a live box that the capsule's tensor owns from here on (its deleter frees
    // it); the capsule points at the tensor form its name announces.
    unsafe {
        (*raw).legacy.manager_ctx = raw as *mut c_void;
        (*raw).versioned.manager_ctx = raw as *mut c_void;
        let capsule = if versioned {
            pyo3::ffi::PyCapsule_New(
                &mut (*raw).versioned as *mut DlManagedTensorVersioned as *mut c_void,
                DLTENSOR_VERSIONED.as_ptr(),
                Some(capsule_destructor_versioned),
            )
        } else {
            pyo3::ffi::PyCapsule_New(
                &mut (*raw).legacy as *mut DlManagedTensor as *mut c_void,
                DLTENSOR.as_ptr(),
                Some(capsule_destructor),
            )
        };
        if capsule.is_null() {
            drop(Box::from_raw(raw));
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, capsule).unbind())
    }
}

/// The arrays of frame `index` of the buffer at `buffer`: read-only, or writable through
/// `writer`, the writable view whose block the buffer belongs to (an error says why when the
/// buffer cannot be written).
pub fn frame_array_of<'py>(
    py: Python<'py>,
    buffer: *mut c_void,
    caps: &Bound<'py, PyAny>,
    index: u32,
    writer: Option<&crate::view::View>,
) -> PyResult<Bound<'py, PyAny>> {
    let caps_ptr = video_caps(caps)?;
    let lib = lib(py)?;
    let mut map = FsFrameMap::default();
    let mut error: *mut c_char = std::ptr::null_mut();
    let write = writer.is_some() as i32;
    // SAFETY: a live buffer and caps (kept by the caller); `map` and `error` are locals.
    let code = unsafe { (lib.frame_map)(buffer, caps_ptr, index, write, &mut map, &mut error) };
    let message = lib.take_string(error);
    if code != status::OK {
        return Err(match (code, writer) {
            (status::NOT_WRITABLE, Some(view)) => view.shared_error(py),
            _ => errors::from_status(code, message),
        });
    }
    // Owned from here on: any error below unmaps it.
    let mapping = Py::new(
        py,
        FrameMapping {
            map: Mutex::new(map),
            unmap: lib.frame_unmap,
        },
    )?;
    if let Some(view) = writer {
        view.track_mapping(py, mapping.bind(py).as_any())?;
    }
    let readonly = map.writable == 0;
    let device = (map.memory == memory::CUDA).then_some(map.gpu_id);
    let n_planes = map.n_planes as usize;
    let planes: Vec<(u64, Vec<i64>, Vec<i64>)> = (0..n_planes)
        .map(|i| {
            let (rows, cols, ch) = (
                map.rows[i] as i64,
                map.cols[i] as i64,
                map.channels[i] as i64,
            );
            let stride = map.strides[i];
            if n_planes == 1 || ch > 1 {
                (map.data[i], vec![rows, cols, ch], vec![stride, ch, 1])
            } else {
                (map.data[i], vec![rows, cols], vec![stride, 1])
            }
        })
        .collect();
    if planes.iter().any(|(data, ..)| *data == 0) {
        return Err(PyValueError::new_err(
            "the frame mapped with no pixel address",
        ));
    }
    let numpy = if device.is_none() {
        Some(py.import("numpy").map_err(|e| {
            errors::Error::new_err(format!("frame_array needs NumPy (pip install numpy): {e}"))
        })?)
    } else {
        None
    };
    let mut arrays = Vec::with_capacity(planes.len());
    for (data, shape, strides) in planes {
        let plane = Bound::new(
            py,
            Plane {
                mapping: mapping.clone_ref(py),
                data,
                shape,
                strides,
                device,
                readonly,
            },
        )?;
        arrays.push(match &numpy {
            Some(np) => np.call_method1("asarray", (plane,))?,
            None => plane.into_any(),
        });
    }
    if arrays.len() == 1 {
        return Ok(arrays.remove(0));
    }
    Ok(PyTuple::new(py, arrays)?.into_any())
}
