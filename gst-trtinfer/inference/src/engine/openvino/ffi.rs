// SPDX-License-Identifier: MIT OR Apache-2.0
//! OpenVINO's C API (`libopenvino_c`), loaded at run time, and safe owners of its objects.
//!
//! Declarations follow the headers of OpenVINO 2026.4 (`openvino/c/*.h`, shipped in the PyPI
//! wheel). Element type numbers changed between releases (2026's headers have no `UNDEFINED`
//! first), so [`Api::load`] accepts only the 2026 releases whose numbering this file has.

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;
use std::ptr;

use libloading::Library;

/// `ov_status_e`: 0 is success, negative values are errors.
type Status = i32;

/// Opaque OpenVINO objects.
#[repr(C)]
pub struct RawCore(c_void);
#[repr(C)]
pub struct RawModel(c_void);
#[repr(C)]
pub struct RawCompiled(c_void);
#[repr(C)]
pub struct RawRequest(c_void);
#[repr(C)]
pub struct RawTensor(c_void);
#[repr(C)]
pub struct RawPort(c_void);

/// `ov_dimension_t`: a dynamic dimension reads `{0, -1}` and is made as `{-1, -1}`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension {
    pub min: i64,
    pub max: i64,
}

/// `ov_shape_t`.
#[repr(C)]
struct Shape {
    rank: i64,
    dims: *mut i64,
}

/// `ov_partial_shape_t`.
#[repr(C)]
struct PartialShape {
    rank: Dimension,
    dims: *mut Dimension,
}

/// `ov_property_t`: a key and its value (a C string for every key used here).
#[repr(C)]
struct Property {
    key: *const c_char,
    value: *const c_void,
}

/// `ov_version_t`.
#[repr(C)]
struct Version {
    build_number: *const c_char,
    description: *const c_char,
}

/// `ov_element_type_e` of OpenVINO 2026.
pub mod element {
    pub const BF16: u32 = 2;
    pub const F16: u32 = 3;
    pub const F32: u32 = 4;
    pub const I8: u32 = 7;
    pub const I32: u32 = 9;
    pub const I64: u32 = 10;
    pub const U8: u32 = 16;
}

macro_rules! api {
    ($($field:ident = $symbol:literal: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The C API's functions, resolved from one loaded library.
        pub struct Api {
            $($field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            version: String,
            /// Keeps the functions above loaded.
            _library: Library,
        }

        impl Api {
            /// Resolves every function this layer calls; fails naming the first one missing.
            fn resolve(library: Library) -> Result<Self, String> {
                Ok(Self {
                    $($field: {
                        // SAFETY: the symbol is declared with the signature of OpenVINO 2026's
                        // header; the pointer is used only while `library` stays loaded (it is
                        // kept in the same struct).
                        let symbol = unsafe {
                            library.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                concat!($symbol, "\0").as_bytes(),
                            )
                        };
                        *symbol.map_err(|e| format!("{} is missing: {e}", $symbol))?
                    },)*
                    version: String::new(),
                    _library: library,
                })
            }
        }
    };
}

api! {
    get_openvino_version = "ov_get_openvino_version": fn(*mut Version) -> Status;
    version_free = "ov_version_free": fn(*mut Version);
    get_error_info = "ov_get_error_info": fn(Status) -> *const c_char;
    get_last_err_msg = "ov_get_last_err_msg": fn() -> *const c_char;
    free = "ov_free": fn(*const c_char);
    core_create = "ov_core_create": fn(*mut *mut RawCore) -> Status;
    core_free = "ov_core_free": fn(*mut RawCore);
    core_read_model = "ov_core_read_model":
        fn(*const RawCore, *const c_char, *const c_char, *mut *mut RawModel) -> Status;
    core_read_model_from_memory_buffer = "ov_core_read_model_from_memory_buffer":
        fn(*const RawCore, *const c_char, usize, *const RawTensor, *mut *mut RawModel) -> Status;
    core_compile_model_props = "ov_core_compile_model_props": fn(
        *const RawCore,
        *const RawModel,
        *const c_char,
        usize,
        *const Property,
        *mut *mut RawCompiled
    ) -> Status;
    core_get_property = "ov_core_get_property":
        fn(*const RawCore, *const c_char, *const c_char, *mut *mut c_char) -> Status;
    model_free = "ov_model_free": fn(*mut RawModel);
    model_inputs_size = "ov_model_inputs_size": fn(*const RawModel, *mut usize) -> Status;
    model_outputs_size = "ov_model_outputs_size": fn(*const RawModel, *mut usize) -> Status;
    model_const_input_by_index = "ov_model_const_input_by_index":
        fn(*const RawModel, usize, *mut *mut RawPort) -> Status;
    model_const_output_by_index = "ov_model_const_output_by_index":
        fn(*const RawModel, usize, *mut *mut RawPort) -> Status;
    model_reshape_single_input = "ov_model_reshape_single_input":
        fn(*const RawModel, PartialShape) -> Status;
    port_get_any_name = "ov_port_get_any_name": fn(*const RawPort, *mut *mut c_char) -> Status;
    port_get_element_type = "ov_port_get_element_type": fn(*const RawPort, *mut u32) -> Status;
    port_get_partial_shape = "ov_port_get_partial_shape":
        fn(*const RawPort, *mut PartialShape) -> Status;
    output_const_port_free = "ov_output_const_port_free": fn(*mut RawPort);
    partial_shape_create = "ov_partial_shape_create":
        fn(i64, *const Dimension, *mut PartialShape) -> Status;
    partial_shape_free = "ov_partial_shape_free": fn(*mut PartialShape);
    shape_free = "ov_shape_free": fn(*mut Shape) -> Status;
    compiled_model_free = "ov_compiled_model_free": fn(*mut RawCompiled);
    compiled_model_create_infer_request = "ov_compiled_model_create_infer_request":
        fn(*const RawCompiled, *mut *mut RawRequest) -> Status;
    infer_request_free = "ov_infer_request_free": fn(*mut RawRequest);
    infer_request_set_input_tensor = "ov_infer_request_set_input_tensor":
        fn(*mut RawRequest, *const RawTensor) -> Status;
    infer_request_start_async = "ov_infer_request_start_async": fn(*mut RawRequest) -> Status;
    infer_request_wait = "ov_infer_request_wait": fn(*mut RawRequest) -> Status;
    infer_request_cancel = "ov_infer_request_cancel": fn(*mut RawRequest) -> Status;
    infer_request_get_output_tensor_by_index = "ov_infer_request_get_output_tensor_by_index":
        fn(*const RawRequest, usize, *mut *mut RawTensor) -> Status;
    tensor_create_from_host_ptr = "ov_tensor_create_from_host_ptr":
        fn(u32, Shape, *mut c_void, *mut *mut RawTensor) -> Status;
    tensor_data = "ov_tensor_data": fn(*const RawTensor, *mut *mut c_void) -> Status;
    tensor_get_shape = "ov_tensor_get_shape": fn(*const RawTensor, *mut Shape) -> Status;
    tensor_get_element_type = "ov_tensor_get_element_type": fn(*const RawTensor, *mut u32) -> Status;
    tensor_get_byte_size = "ov_tensor_get_byte_size": fn(*const RawTensor, *mut usize) -> Status;
    tensor_free = "ov_tensor_free": fn(*mut RawTensor);
}

/// The first OpenVINO release whose element numbering this layer has, and the last major
/// release it was checked against.
const SUPPORTED: &str = "2026";

impl Api {
    /// Loads `libopenvino_c` from `path` and checks its version.
    pub fn load(path: &Path) -> Result<Self, String> {
        // SAFETY: loading OpenVINO runs its library initialisers, which have no preconditions.
        let library = unsafe { Library::new(path) }.map_err(|e| {
            // libloading's message is "dlopen failed"; the loader's own reason is its source.
            match std::error::Error::source(&e) {
                Some(reason) => reason.to_string(),
                None => e.to_string(),
            }
        })?;
        let mut api = Self::resolve(library)?;
        let mut v = Version {
            build_number: ptr::null(),
            description: ptr::null(),
        };
        // SAFETY: `v` is a valid out-parameter; freed below with the matching function.
        let status = unsafe { (api.get_openvino_version)(&mut v) };
        if status != 0 || v.build_number.is_null() {
            return Err("cannot read its version".into());
        }
        // SAFETY: OpenVINO filled `v` with NUL-terminated strings it owns until `version_free`.
        let build = unsafe { CStr::from_ptr(v.build_number) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: `v` came from `get_openvino_version` and is freed once.
        unsafe { (api.version_free)(&mut v) };
        // "2026.4.1-22982-e213a147257-releases/2026/4"
        let version = build.split('-').next().unwrap_or(&build).to_string();
        if version.split('.').next() != Some(SUPPORTED) {
            return Err(format!(
                "OpenVINO {version}, but this build of Ferrostream supports OpenVINO \
                 {SUPPORTED}.x (its element types are numbered differently); install it with \
                 scripts/install-openvino.sh"
            ));
        }
        api.version = version;
        Ok(api)
    }

    /// The runtime's version, e.g. `2026.4.1`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// An error for `status` from `what`, with OpenVINO's last message.
    fn error(&self, what: &str, status: Status) -> String {
        // SAFETY: returns a static string for any status.
        let info = unsafe { (self.get_error_info)(status) };
        let info = if info.is_null() {
            format!("status {status}")
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(info) }
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: returns a copy the caller frees with `ov_free`, or null.
        let last = unsafe { (self.get_last_err_msg)() };
        if last.is_null() {
            return format!("{what}: {info}");
        }
        // SAFETY: as above; freed once right after reading.
        let detail = unsafe { CStr::from_ptr(last) }
            .to_string_lossy()
            .trim()
            .to_string();
        unsafe { (self.free)(last) };
        // OpenVINO's messages start with the source locations of the exceptions, one a line.
        let detail: Vec<&str> = detail
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("Exception from"))
            .collect();
        let detail = detail.join(" ");
        format!("{what}: {info}: {detail}")
    }

    fn check(&self, what: &str, status: Status) -> Result<(), String> {
        if status == 0 {
            Ok(())
        } else {
            Err(self.error(what, status))
        }
    }

    /// Takes a string OpenVINO allocated and frees it.
    fn take_string(&self, s: *mut c_char) -> String {
        if s.is_null() {
            return String::new();
        }
        // SAFETY: a NUL-terminated string allocated by OpenVINO, freed once here.
        let text = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
        unsafe { (self.free)(s) };
        text
    }

    fn take_partial_shape(&self, mut shape: PartialShape) -> Vec<Dimension> {
        let rank = usize::try_from(shape.rank.max).unwrap_or(0);
        let dims = if shape.dims.is_null() || shape.rank.min != shape.rank.max {
            Vec::new()
        } else {
            // SAFETY: OpenVINO allocated `rank` dimensions at `dims`.
            unsafe { std::slice::from_raw_parts(shape.dims, rank) }.to_vec()
        };
        // SAFETY: allocated by OpenVINO, freed once.
        unsafe { (self.partial_shape_free)(&mut shape) };
        dims
    }

    fn take_shape(&self, mut shape: Shape) -> Vec<usize> {
        let rank = usize::try_from(shape.rank).unwrap_or(0);
        let dims = if shape.dims.is_null() {
            Vec::new()
        } else {
            // SAFETY: OpenVINO allocated `rank` dimensions at `dims`.
            unsafe { std::slice::from_raw_parts(shape.dims, rank) }
                .iter()
                .map(|&d| usize::try_from(d).unwrap_or(0))
                .collect()
        };
        // SAFETY: allocated by OpenVINO, freed once.
        unsafe { (self.shape_free)(&mut shape) };
        dims
    }
}

fn c_string(what: &str, s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte"))
}

/// An OpenVINO core (device plugins, read and compile).
pub struct Core<'a> {
    api: &'a Api,
    raw: *mut RawCore,
}

impl<'a> Core<'a> {
    pub fn new(api: &'a Api) -> Result<Self, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid out-parameter.
        api.check("creating the OpenVINO core", unsafe {
            (api.core_create)(&mut raw)
        })?;
        Ok(Self { api, raw })
    }

    /// Reads a model file (ONNX, or OpenVINO IR with its .bin beside it).
    pub fn read_model(&self, path: &Path) -> Result<Model<'a>, String> {
        let c_path = c_string("the model path", &path.to_string_lossy())?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid core, NUL-terminated path, null weights path (found by OpenVINO).
        let status =
            unsafe { (self.api.core_read_model)(self.raw, c_path.as_ptr(), ptr::null(), &mut raw) };
        self.api.check("reading the model", status)?;
        Ok(Model { api: self.api, raw })
    }

    /// Reads a model from `bytes` (ONNX without external data: no file to find it beside).
    pub fn read_model_from_memory(&self, bytes: &[u8]) -> Result<Model<'a>, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid core; `bytes` is read during the call only (OpenVINO copies what it
        // keeps); null weights (an ONNX model holds its own).
        let status = unsafe {
            (self.api.core_read_model_from_memory_buffer)(
                self.raw,
                bytes.as_ptr().cast(),
                bytes.len(),
                ptr::null(),
                &mut raw,
            )
        };
        self.api.check("reading the model", status)?;
        Ok(Model { api: self.api, raw })
    }

    /// A property of `device` as text (e.g. `OPTIMIZATION_CAPABILITIES`).
    pub fn device_property(&self, device: &str, key: &str) -> Result<String, String> {
        let c_device = c_string("the device", device)?;
        let c_key = c_string("the property", key)?;
        let mut value = ptr::null_mut();
        // SAFETY: valid core and strings, a valid out-parameter.
        let status = unsafe {
            (self.api.core_get_property)(self.raw, c_device.as_ptr(), c_key.as_ptr(), &mut value)
        };
        self.api
            .check(&format!("reading {key} of {device}"), status)?;
        Ok(self.api.take_string(value))
    }

    /// Compiles `model` for `device` with `properties` (key, value pairs).
    pub fn compile(
        &self,
        model: &Model<'_>,
        device: &str,
        properties: &[(&str, String)],
    ) -> Result<Compiled<'a>, String> {
        let c_device = c_string("the device", device)?;
        let strings: Vec<(CString, CString)> = properties
            .iter()
            .map(|(k, v)| Ok((c_string("a property", k)?, c_string("a property value", v)?)))
            .collect::<Result<_, String>>()?;
        let props: Vec<Property> = strings
            .iter()
            .map(|(k, v)| Property {
                key: k.as_ptr(),
                value: v.as_ptr().cast(),
            })
            .collect();
        let mut raw = ptr::null_mut();
        // SAFETY: valid core and model; `props` points to `props.len()` pairs of C strings that
        // outlive the call.
        let status = unsafe {
            (self.api.core_compile_model_props)(
                self.raw,
                model.raw,
                c_device.as_ptr(),
                props.len(),
                props.as_ptr(),
                &mut raw,
            )
        };
        self.api
            .check(&format!("compiling the model for {device}"), status)?;
        Ok(Compiled { api: self.api, raw })
    }
}

impl Drop for Core<'_> {
    fn drop(&mut self) {
        // SAFETY: created by `core_create`, freed once.
        unsafe { (self.api.core_free)(self.raw) };
    }
}

/// A port of a model: its name, element type and (partial) shape.
#[derive(Debug, Clone, PartialEq)]
pub struct PortInfo {
    pub name: String,
    pub element_type: u32,
    /// `None` for the dimensions that are dynamic.
    pub dims: Vec<Option<usize>>,
}

/// A model read from a file.
pub struct Model<'a> {
    api: &'a Api,
    raw: *mut RawModel,
}

impl Model<'_> {
    /// The model's inputs and outputs.
    pub fn ports(&self) -> Result<(Vec<PortInfo>, Vec<PortInfo>), String> {
        let api = self.api;
        let (mut inputs, mut outputs) = (0usize, 0usize);
        // SAFETY: a valid model and out-parameters.
        api.check("counting inputs", unsafe {
            (api.model_inputs_size)(self.raw, &mut inputs)
        })?;
        api.check("counting outputs", unsafe {
            (api.model_outputs_size)(self.raw, &mut outputs)
        })?;
        let read = |index: usize, input: bool| -> Result<PortInfo, String> {
            let mut port = ptr::null_mut();
            let by_index = if input {
                api.model_const_input_by_index
            } else {
                api.model_const_output_by_index
            };
            // SAFETY: a valid model; `index` is below the count read above.
            api.check("reading a port", unsafe {
                by_index(self.raw, index, &mut port)
            })?;
            let info = (|| {
                let mut name = ptr::null_mut();
                // A port without a name is allowed: it is then named by its index.
                // SAFETY: a valid port and out-parameter.
                let named = unsafe { (api.port_get_any_name)(port, &mut name) } == 0;
                let name = if named {
                    api.take_string(name)
                } else {
                    format!("{}{index}", if input { "input" } else { "output" })
                };
                let mut element_type = 0u32;
                // SAFETY: as above.
                api.check("reading a port's type", unsafe {
                    (api.port_get_element_type)(port, &mut element_type)
                })?;
                let mut shape = PartialShape {
                    rank: Dimension { min: 0, max: 0 },
                    dims: ptr::null_mut(),
                };
                // SAFETY: as above.
                api.check("reading a port's shape", unsafe {
                    (api.port_get_partial_shape)(port, &mut shape)
                })?;
                let dims = api
                    .take_partial_shape(shape)
                    .iter()
                    .map(|d| (d.min == d.max && d.min >= 0).then_some(d.min as usize))
                    .collect();
                Ok(PortInfo {
                    name,
                    element_type,
                    dims,
                })
            })();
            // SAFETY: from `*_by_index`, freed once.
            unsafe { (api.output_const_port_free)(port) };
            info
        };
        let ins = (0..inputs)
            .map(|i| read(i, true))
            .collect::<Result<_, _>>()?;
        let outs = (0..outputs)
            .map(|i| read(i, false))
            .collect::<Result<_, _>>()?;
        Ok((ins, outs))
    }

    /// Gives the model's only input the shape `dims` (`None`: dynamic).
    pub fn reshape_input(&self, dims: &[Option<usize>]) -> Result<(), String> {
        let api = self.api;
        let dims: Vec<Dimension> = dims
            .iter()
            .map(|d| match d {
                Some(n) => Dimension {
                    min: *n as i64,
                    max: *n as i64,
                },
                // Made as {-1, -1} (OpenVINO reads one back as {0, -1}).
                None => Dimension { min: -1, max: -1 },
            })
            .collect();
        let mut shape = PartialShape {
            rank: Dimension { min: 0, max: 0 },
            dims: ptr::null_mut(),
        };
        // SAFETY: `dims` holds `len` dimensions; `shape` is a valid out-parameter.
        api.check("making a shape", unsafe {
            (api.partial_shape_create)(dims.len() as i64, dims.as_ptr(), &mut shape)
        })?;
        // SAFETY: a valid model and shape (passed by value, as the header declares).
        let status = unsafe {
            (api.model_reshape_single_input)(
                self.raw,
                PartialShape {
                    rank: shape.rank,
                    dims: shape.dims,
                },
            )
        };
        // SAFETY: made by `partial_shape_create`, freed once.
        unsafe { (api.partial_shape_free)(&mut shape) };
        api.check("reshaping the input", status)
    }
}

impl Drop for Model<'_> {
    fn drop(&mut self) {
        // SAFETY: read by `core_read_model`, freed once.
        unsafe { (self.api.model_free)(self.raw) };
    }
}

/// A model compiled for a device.
pub struct Compiled<'a> {
    api: &'a Api,
    raw: *mut RawCompiled,
}

impl<'a> Compiled<'a> {
    pub fn request(&self) -> Result<Request<'a>, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid compiled model and out-parameter.
        let status = unsafe { (self.api.compiled_model_create_infer_request)(self.raw, &mut raw) };
        self.api.check("creating an infer request", status)?;
        Ok(Request { api: self.api, raw })
    }
}

impl Drop for Compiled<'_> {
    fn drop(&mut self) {
        // SAFETY: made by `core_compile_model_props`, freed once (after its requests: they
        // borrow it).
        unsafe { (self.api.compiled_model_free)(self.raw) };
    }
}

/// An output read back from a request: element type, shape and bytes.
pub struct Output<'r> {
    pub element_type: u32,
    pub shape: Vec<usize>,
    pub bytes: &'r [u8],
}

/// An infer request.
pub struct Request<'a> {
    api: &'a Api,
    raw: *mut RawRequest,
}

impl<'a> Request<'a> {
    /// Sets the input of the next run: `input` (element type `element_type`, shape `shape`),
    /// read in place.
    ///
    /// # Safety
    /// `input` must stay allocated and unchanged until the run that reads it has ended
    /// ([`Request::wait`] after [`Request::start`] returned).
    pub unsafe fn set_input(
        &mut self,
        element_type: u32,
        shape: &[usize],
        input: &[u8],
    ) -> Result<(), String> {
        let api = self.api;
        let mut dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let mut tensor = ptr::null_mut();
        // SAFETY: `dims` holds the shape's rank dimensions; the tensor wraps `input` without
        // copying (OpenVINO only reads an input tensor); the caller keeps `input` alive for the
        // run. The handle is freed below: the request keeps its own reference.
        let status = unsafe {
            (api.tensor_create_from_host_ptr)(
                element_type,
                Shape {
                    rank: dims.len() as i64,
                    dims: dims.as_mut_ptr(),
                },
                input.as_ptr().cast_mut().cast(),
                &mut tensor,
            )
        };
        api.check("wrapping the input", status)?;
        // SAFETY: a valid request and tensor.
        let result = api.check("setting the input", unsafe {
            (api.infer_request_set_input_tensor)(self.raw, tensor)
        });
        // SAFETY: made above, freed once.
        unsafe { (api.tensor_free)(tensor) };
        result
    }

    /// Starts a run on the input set last, without waiting ([`Request::wait`]).
    pub fn start(&mut self) -> Result<(), String> {
        // SAFETY: a valid request.
        self.api.check("starting an inference", unsafe {
            (self.api.infer_request_start_async)(self.raw)
        })
    }

    /// Waits for the run [`Request::start`] started; its error, if it failed.
    pub fn wait(&mut self) -> Result<(), String> {
        // SAFETY: a valid request.
        self.api.check("inference", unsafe {
            (self.api.infer_request_wait)(self.raw)
        })
    }

    /// What cancels this request's runs from another thread.
    pub fn canceler(&self) -> Canceler<'a> {
        Canceler {
            api: self.api,
            raw: self.raw,
        }
    }

    /// Calls `f` with output `index` of the last run.
    pub fn with_output<T>(
        &self,
        index: usize,
        f: impl FnOnce(Output<'_>) -> Result<T, String>,
    ) -> Result<T, String> {
        let api = self.api;
        let mut tensor = ptr::null_mut();
        // SAFETY: a valid request and out-parameter.
        api.check("reading an output", unsafe {
            (api.infer_request_get_output_tensor_by_index)(self.raw, index, &mut tensor)
        })?;
        let result = (|| {
            let mut element_type = 0u32;
            let mut size = 0usize;
            let mut data = ptr::null_mut();
            let mut shape = Shape {
                rank: 0,
                dims: ptr::null_mut(),
            };
            // SAFETY: a valid tensor and out-parameters.
            unsafe {
                api.check(
                    "an output's type",
                    (api.tensor_get_element_type)(tensor, &mut element_type),
                )?;
                api.check(
                    "an output's size",
                    (api.tensor_get_byte_size)(tensor, &mut size),
                )?;
                api.check(
                    "an output's shape",
                    (api.tensor_get_shape)(tensor, &mut shape),
                )?;
            }
            let shape = api.take_shape(shape);
            // SAFETY: as above.
            api.check("an output's data", unsafe {
                (api.tensor_data)(tensor, &mut data)
            })?;
            let bytes = if size == 0 || data.is_null() {
                &[][..]
            } else {
                // SAFETY: the tensor holds `size` bytes at `data` until it is freed below.
                unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }
            };
            f(Output {
                element_type,
                shape,
                bytes,
            })
        })();
        // SAFETY: the handle from `get_output_tensor_by_index`, freed once (the request keeps
        // its own reference to the memory).
        unsafe { (api.tensor_free)(tensor) };
        result
    }
}

// SAFETY: an infer request may be used from any thread, one call at a time: `&mut self` (and
// the engine's locks) see to that.
unsafe impl Send for Request<'_> {}

/// Cancels the run of one request (`ov_infer_request_cancel`) from any thread; the run's wait
/// then returns an error. A request that is not running is left as it is.
#[derive(Clone)]
pub struct Canceler<'a> {
    api: &'a Api,
    raw: *mut RawRequest,
}

impl Canceler<'_> {
    /// Cancels the request's run, if one is going on.
    ///
    /// # Safety
    /// The request must not have been freed.
    pub unsafe fn cancel(&self) {
        // SAFETY: the request is alive (the caller's promise); OpenVINO's cancel is meant to be
        // called from another thread while the request runs or is waited for. A request not
        // running is not cancelled: the status says nothing worth reporting.
        let _ = unsafe { (self.api.infer_request_cancel)(self.raw) };
    }
}

// SAFETY: a canceler only calls `ov_infer_request_cancel`, which OpenVINO allows from any thread
// at any time while the request lives; its owner keeps it no longer than that.
unsafe impl Send for Canceler<'_> {}
// SAFETY: as above: concurrent cancels of one request are allowed.
unsafe impl Sync for Canceler<'_> {}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // SAFETY: made by `create_infer_request`, freed once.
        unsafe { (self.api.infer_request_free)(self.raw) };
    }
}
