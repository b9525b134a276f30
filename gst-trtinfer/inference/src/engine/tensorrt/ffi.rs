// SPDX-License-Identifier: MIT OR Apache-2.0
//! Raw bindings to the TensorRT shim (`tensorrt/fs_trt.h`); [`super`] wraps them safely.

use std::ffi::{c_char, c_int, c_void};

pub const MAX_DIMS: usize = 8;

/// `FsTrtDims`: nvinfer1::Dims64.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsTrtDims {
    pub nb_dims: i32,
    pub reserved: i32,
    pub d: [i64; MAX_DIMS],
}

impl FsTrtDims {
    pub fn from_slice(dims: &[i64]) -> Option<Self> {
        if dims.len() > MAX_DIMS {
            return None;
        }
        let mut out = Self {
            nb_dims: dims.len() as i32,
            ..Default::default()
        };
        out.d[..dims.len()].copy_from_slice(dims);
        Some(out)
    }

    pub fn as_slice(&self) -> &[i64] {
        &self.d[..(self.nb_dims.clamp(0, MAX_DIMS as i32) as usize)]
    }
}

/// `FsTrtTensorDesc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsTrtTensorDesc {
    pub name: *const c_char,
    pub io_mode: i32,
    pub data_type: i32,
    pub format: i32,
    pub reserved: i32,
    pub shape: FsTrtDims,
    pub profile_min: FsTrtDims,
    pub profile_max: FsTrtDims,
}

/// `FsTrtBuildConfig`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsTrtBuildConfig {
    pub builder_flags: u64,
    pub workspace_bytes: u64,
    pub min_batch: i32,
    pub opt_batch: i32,
    pub max_batch: i32,
    pub dla_core: i32,
    pub int8_calibration_cache: *const c_char,
}

/// `FsTrtLayout`: the C side's sizes and offsets, for the layout tests.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsTrtLayout {
    pub dims_size: u32,
    pub dims_d: u32,
    pub tensor_desc_size: u32,
    pub tensor_desc_shape: u32,
    pub tensor_desc_profile_max: u32,
    pub build_config_size: u32,
    pub build_config_dla_core: u32,
    pub build_config_int8_calibration_cache: u32,
}

pub type FsTrtLogFn =
    unsafe extern "C" fn(user: *mut c_void, severity: i32, message: *const c_char);

macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    FsTrtLibrary,
    FsTrtRuntime,
    FsTrtEngine,
    FsTrtContext,
    FsTrtBlob
);

unsafe extern "C" {
    pub fn fs_trt_layout(out: *mut FsTrtLayout);
    pub fn fs_trt_header_version() -> i32;
    pub fn fs_trt_compile_check_only() -> i32;

    pub fn fs_trt_library_open(
        nvinfer: *const c_char,
        onnxparser: *const c_char,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut FsTrtLibrary;
    pub fn fs_trt_library_version(lib: *const FsTrtLibrary) -> i32;
    pub fn fs_trt_library_has_onnx_parser(lib: *const FsTrtLibrary) -> i32;
    pub fn fs_trt_library_free(lib: *mut FsTrtLibrary);

    pub fn fs_trt_runtime_new(
        lib: *mut FsTrtLibrary,
        log: Option<FsTrtLogFn>,
        user: *mut c_void,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut FsTrtRuntime;
    pub fn fs_trt_runtime_dla_cores(runtime: *const FsTrtRuntime) -> i32;
    pub fn fs_trt_runtime_free(runtime: *mut FsTrtRuntime);

    pub fn fs_trt_engine_new(
        runtime: *mut FsTrtRuntime,
        data: *const c_void,
        len: usize,
        dla_core: i32,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut FsTrtEngine;
    pub fn fs_trt_engine_io_count(engine: *const FsTrtEngine) -> i32;
    pub fn fs_trt_engine_io(
        engine: *const FsTrtEngine,
        index: i32,
        out: *mut FsTrtTensorDesc,
    ) -> c_int;
    pub fn fs_trt_engine_free(engine: *mut FsTrtEngine);

    pub fn fs_trt_context_new(
        engine: *mut FsTrtEngine,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut FsTrtContext;
    pub fn fs_trt_context_set_input_shape(
        context: *mut FsTrtContext,
        name: *const c_char,
        dims: *const FsTrtDims,
    ) -> c_int;
    pub fn fs_trt_context_set_address(
        context: *mut FsTrtContext,
        name: *const c_char,
        address: *mut c_void,
    ) -> c_int;
    pub fn fs_trt_context_enqueue(context: *mut FsTrtContext, stream: *mut c_void) -> c_int;
    pub fn fs_trt_context_free(context: *mut FsTrtContext);

    pub fn fs_trt_build_onnx(
        lib: *mut FsTrtLibrary,
        config: *const FsTrtBuildConfig,
        onnx: *const c_void,
        onnx_len: usize,
        log: Option<FsTrtLogFn>,
        user: *mut c_void,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut FsTrtBlob;
    pub fn fs_trt_blob_data(blob: *const FsTrtBlob) -> *const c_void;
    pub fn fs_trt_blob_size(blob: *const FsTrtBlob) -> usize;
    pub fn fs_trt_blob_free(blob: *mut FsTrtBlob);
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn structs_match_the_shim_layout() {
        let mut c = FsTrtLayout::default();
        // SAFETY: writes the struct it is given and nothing else.
        unsafe { fs_trt_layout(&mut c) };
        let rust = FsTrtLayout {
            dims_size: size_of::<FsTrtDims>() as u32,
            dims_d: offset_of!(FsTrtDims, d) as u32,
            tensor_desc_size: size_of::<FsTrtTensorDesc>() as u32,
            tensor_desc_shape: offset_of!(FsTrtTensorDesc, shape) as u32,
            tensor_desc_profile_max: offset_of!(FsTrtTensorDesc, profile_max) as u32,
            build_config_size: size_of::<FsTrtBuildConfig>() as u32,
            build_config_dla_core: offset_of!(FsTrtBuildConfig, dla_core) as u32,
            build_config_int8_calibration_cache: offset_of!(
                FsTrtBuildConfig,
                int8_calibration_cache
            ) as u32,
        };
        assert_eq!(c, rust);
        // nvinfer1::Dims64 is 72 bytes (REFERENCE: {i32 nbDims; i64 d[8]}).
        assert_eq!((c.dims_size, c.dims_d), (72, 8));
        assert_eq!(c.tensor_desc_size, 8 + 16 + 3 * 72);
        assert_eq!(c.build_config_size, 40);
    }

    #[test]
    fn dims_round_trip() {
        let d = FsTrtDims::from_slice(&[-1, 3, 224, 224]).unwrap();
        assert_eq!(d.as_slice(), &[-1, 3, 224, 224]);
        assert!(FsTrtDims::from_slice(&[1; 9]).is_none());
    }
}
