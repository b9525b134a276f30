// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rust mirrors of the nvinfer custom-parser structures (`nvdsinfer/include/nvdsinfer.h`) and
//! the shim's C functions (`nvdsinfer/fs_nvdsparse.h`). Layouts are pinned by the tests below,
//! against fixed numbers and against the C++ compiler's `sizeof`.

use std::ffi::{c_char, c_int, c_void};

/// `NVDSINFER_MAX_DIMS`.
pub const MAX_DIMS: usize = 8;

/// `NvDsInferDataType::FLOAT`: every buffer handed to a parser holds f32.
pub const DATA_TYPE_FLOAT: c_int = 0;

/// `NvDsInferDims`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Dims {
    pub num_dims: u32,
    pub d: [u32; MAX_DIMS],
    pub num_elements: u32,
}

/// `NvDsInferLayerInfo` (its `inferDims`/`dims` union is one `NvDsInferDims`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LayerInfo {
    pub data_type: c_int,
    pub dims: Dims,
    pub binding_index: c_int,
    pub layer_name: *const c_char,
    pub buffer: *mut c_void,
    pub is_input: c_int,
}

/// `NvDsInferNetworkInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NetworkInfo {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
}

/// `NvDsInferObjectDetectionInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ObjectInfo {
    pub class_id: u32,
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    pub confidence: f32,
}

/// The shim's `FsObjectInfo`: a box of either layout a parser library may use, with DeepStream
/// 9's `rotation_angle` (radians, 0 from libraries built against DeepStream 6 to 8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ShimObject {
    pub class_id: u32,
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    pub confidence: f32,
    pub rotation_angle: f32,
}

/// `NvDsInferInstanceMaskInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MaskObjectInfo {
    pub object: ObjectInfo,
    pub mask: *mut f32,
    pub mask_width: u32,
    pub mask_height: u32,
    pub mask_size: u32,
}

/// `NvDsInferAttribute`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Attribute {
    pub attribute_index: u32,
    pub attribute_value: u32,
    pub attribute_confidence: f32,
    pub attribute_label: *mut c_char,
}

/// The shim's `FsDetectionParams`.
#[repr(C)]
pub struct DetectionParams {
    pub num_classes: u32,
    pub pre_cluster_thresholds: *const f32,
    pub post_cluster_thresholds: *const f32,
}

pub const PARSE_OK: c_int = 0;
pub const PARSE_FALSE: c_int = 1;
pub const PARSE_THREW: c_int = 2;

pub type EmitObject = unsafe extern "C" fn(ctx: *mut c_void, object: *const ShimObject);
pub type EmitMaskObject = unsafe extern "C" fn(ctx: *mut c_void, object: *const MaskObjectInfo);
pub type EmitAttribute = unsafe extern "C" fn(ctx: *mut c_void, attribute: *const Attribute);

unsafe extern "C" {
    pub fn fs_nvds_parse_bbox(
        func: *mut c_void,
        layers: *const LayerInfo,
        num_layers: usize,
        network: *const NetworkInfo,
        params: *const DetectionParams,
        emit: EmitObject,
        ctx: *mut c_void,
        error: *mut c_char,
        error_len: usize,
    ) -> c_int;

    pub fn fs_nvds_parse_bbox_ds9(
        func: *mut c_void,
        layers: *const LayerInfo,
        num_layers: usize,
        network: *const NetworkInfo,
        params: *const DetectionParams,
        emit: EmitObject,
        ctx: *mut c_void,
        error: *mut c_char,
        error_len: usize,
    ) -> c_int;

    pub fn fs_nvds_parse_instance_mask(
        func: *mut c_void,
        layers: *const LayerInfo,
        num_layers: usize,
        network: *const NetworkInfo,
        params: *const DetectionParams,
        emit: EmitMaskObject,
        ctx: *mut c_void,
        error: *mut c_char,
        error_len: usize,
    ) -> c_int;

    #[allow(clippy::too_many_arguments)]
    pub fn fs_nvds_parse_classifier(
        func: *mut c_void,
        layers: *const LayerInfo,
        num_layers: usize,
        network: *const NetworkInfo,
        threshold: f32,
        emit: EmitAttribute,
        ctx: *mut c_void,
        description: *mut c_char,
        description_len: usize,
        error: *mut c_char,
        error_len: usize,
    ) -> c_int;

    #[allow(clippy::too_many_arguments)]
    pub fn fs_nvds_parse_segmentation(
        func: *mut c_void,
        layers: *const LayerInfo,
        num_layers: usize,
        network: *const NetworkInfo,
        threshold: f32,
        num_classes: u32,
        class_map: *mut c_int,
        error: *mut c_char,
        error_len: usize,
    ) -> c_int;

    #[cfg(test)]
    pub fn fs_nvds_sizeof_layer_info() -> usize;
    #[cfg(test)]
    pub fn fs_nvds_sizeof_detection_params() -> usize;
    pub fn fs_nvds_sizeof_object_ds9() -> usize;
    pub fn fs_nvds_offsetof_rotation_angle_ds9() -> usize;
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn layouts_match_the_documented_structures_and_the_compiler() {
        assert_eq!(size_of::<Dims>(), 40);
        assert_eq!(offset_of!(Dims, d), 4);
        assert_eq!(offset_of!(Dims, num_elements), 36);
        assert_eq!(size_of::<LayerInfo>(), 72);
        assert_eq!(offset_of!(LayerInfo, dims), 4);
        assert_eq!(offset_of!(LayerInfo, binding_index), 44);
        assert_eq!(offset_of!(LayerInfo, layer_name), 48);
        assert_eq!(offset_of!(LayerInfo, buffer), 56);
        assert_eq!(offset_of!(LayerInfo, is_input), 64);
        assert_eq!(size_of::<NetworkInfo>(), 12);
        assert_eq!(size_of::<ObjectInfo>(), 24);
        assert_eq!(offset_of!(ObjectInfo, confidence), 20);
        assert_eq!(size_of::<ShimObject>(), 28);
        assert_eq!(offset_of!(ShimObject, rotation_angle), 24);
        assert_eq!(size_of::<MaskObjectInfo>(), 48);
        assert_eq!(offset_of!(MaskObjectInfo, mask), 24);
        assert_eq!(offset_of!(MaskObjectInfo, mask_size), 40);
        assert_eq!(size_of::<Attribute>(), 24);
        assert_eq!(offset_of!(Attribute, attribute_label), 16);
        // SAFETY: the shim's sizeof functions take no arguments and only return a constant.
        unsafe {
            assert_eq!(fs_nvds_sizeof_layer_info(), size_of::<LayerInfo>());
            // The shim hands DeepStream 9 objects over as they are.
            assert_eq!(fs_nvds_sizeof_object_ds9(), size_of::<ShimObject>());
            assert_eq!(
                fs_nvds_offsetof_rotation_angle_ds9(),
                offset_of!(ShimObject, rotation_angle)
            );
            // numClassesConfigured, padding, two std::vector<float> of three pointers, and the
            // perClassThreshold reference (a pointer).
            assert_eq!(fs_nvds_sizeof_detection_params(), 8 + 2 * 24 + 8);
        }
    }
}
