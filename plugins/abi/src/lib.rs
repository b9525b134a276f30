// SPDX-License-Identifier: MIT OR Apache-2.0
//! The C ABI of Ferrostream's metadata, as the plugin library (`libgstferrostream.so`) exports it
//! and as `include/ferrostream/meta.h` declares it.
//!
//! The metadata on a buffer holds Rust data that only the plugin that registered it may touch:
//! two separately built libraries cannot share Rust layouts. Applications therefore read it
//! through these `#[repr(C)]` structures, filled by the plugin, and change it through the
//! plugin's edit function. The Python package loads the plugin that GStreamer loaded and calls
//! the same functions, so there is one registration of the meta and one implementation.
//!
//! Strings are UTF-8, given as pointer and length (not NUL-terminated), and point into the
//! metadata: they stay valid until the buffer's metadata is changed or the buffer is freed.

use std::ffi::{c_char, c_int, c_void};

/// Version of this ABI. Bumped whenever a structure or a function signature changes; a caller
/// compiled against another version must refuse to use the library.
pub const ABI_VERSION: u32 = 1;

/// `object_id` of an object no tracker has given an id (`G_MAXUINT64`).
pub const UNTRACKED: u64 = u64::MAX;
/// A timestamp that is not known (`GST_CLOCK_TIME_NONE`).
pub const TIME_NONE: u64 = u64::MAX;

/// The largest user-metadata or attribute value the edit function takes, as JSON text in bytes
/// (`ferrostream_core::edit::MAX_USER_VALUE_BYTES`): callers check it before they convert one.
pub const MAX_USER_VALUE_BYTES: usize = 64 * 1024;
/// The deepest user-metadata value the edit function takes, each array or object one level
/// (`ferrostream_core::edit::MAX_USER_DEPTH`).
pub const MAX_USER_DEPTH: usize = 32;
/// The longest user-metadata or attribute key, in bytes (`ferrostream_core::edit::MAX_KEY_BYTES`).
pub const MAX_KEY_BYTES: usize = 256;
/// The longest object label, in bytes (`ferrostream_core::edit::MAX_LABEL_BYTES`).
pub const MAX_LABEL_BYTES: usize = 128;
/// The longest text of a display element, in bytes
/// (`ferrostream_core::display::MAX_TEXT_BYTES`).
pub const MAX_TEXT_BYTES: usize = 1024;
/// The widest and tallest frame the plugin maps or describes, in pixels
/// (`ferrostream_core::device::MAX_SIDE`): callers refuse caps beyond it.
pub const MAX_FRAME_SIDE: u32 = 1 << 15;

/// Results of the functions that can fail.
pub mod status {
    use std::ffi::c_int;
    pub const OK: c_int = 0;
    /// The buffer carries no Ferrostream metadata.
    pub const NO_META: c_int = 1;
    /// A change was asked of a buffer that is not writable.
    pub const NOT_WRITABLE: c_int = 2;
    /// The metadata changed since the caller read it (another view changed it).
    pub const STALE: c_int = 3;
    /// A frame or object index is out of range.
    pub const BAD_INDEX: c_int = 4;
    /// An argument is malformed (bad JSON, a value out of bounds); the message says which.
    pub const INVALID: c_int = 5;
    /// The frame's pixel format or memory cannot be mapped this way.
    pub const UNSUPPORTED: c_int = 6;
    /// The pointer is not a GstBuffer (or the caps not a GstCaps).
    pub const NOT_A_BUFFER: c_int = 7;
    /// The meta on the buffer was registered by another copy of the Ferrostream library.
    pub const FOREIGN_META: c_int = 8;
    /// Mapping the pixels failed.
    pub const MAP_FAILED: c_int = 9;
}

/// A rectangle in frame pixels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FsBox {
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
}

/// One frame of a batch (`FerrostreamFrame` in C).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsFrame {
    pub source_id: u32,
    pub pad_index: u32,
    pub frame_num: u64,
    /// [`TIME_NONE`] when unknown.
    pub pts: u64,
    /// The size the boxes refer to.
    pub width: u32,
    pub height: u32,
    /// The size the source produced.
    pub source_width: u32,
    pub source_height: u32,
    pub n_objects: u32,
    pub n_components_run: u32,
    /// `gie-unique-id`s of the inference components that ran on the frame.
    pub components_run: *const i32,
    pub n_terminated_ids: u32,
    pub terminated_ids: *const u64,
    pub n_display: u32,
    /// Non-zero when the frame has analytics results, a class map, user metadata.
    pub has_analytics: u8,
    pub has_segmentation: u8,
    pub has_user_meta: u8,
    pub reserved: u8,
}

/// One object of a frame (`FerrostreamObject` in C).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsObject {
    /// [`UNTRACKED`] until a tracker gives the object an id.
    pub object_id: u64,
    pub class_id: i32,
    /// `gie-unique-id` of the component that found the object.
    pub component_id: i32,
    pub label: *const c_char,
    pub label_len: usize,
    pub confidence: f32,
    /// The box to show: the tracker's when there is one, else the detector's.
    pub bbox: FsBox,
    pub detector_bbox: FsBox,
    pub tracker_bbox: FsBox,
    pub has_tracker_bbox: u8,
    pub has_tracker_confidence: u8,
    pub has_tracker_age: u8,
    pub has_parent: u8,
    pub tracker_confidence: f32,
    pub tracker_age: u32,
    /// Index of the parent object in the frame's object list.
    pub parent: u32,
    pub n_classifications: u32,
    pub n_attributes: u32,
    pub has_mask: u8,
    pub has_analytics: u8,
    pub has_user_meta: u8,
    /// Keypoints (a pose model's), read through the object's JSON record.
    pub has_keypoints: u8,
}

/// An object's orientation (`FerrostreamOrientation` in C): an oriented box's angle and the
/// corners of its box to show.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FsOrientation {
    /// 1 for an oriented box (`angle` holds its angle), 0 for an axis-aligned one.
    pub has_angle: u8,
    pub reserved: [u8; 3],
    /// Radians about the box's centre, clockwise on the screen; 0 without an angle.
    pub angle: f32,
    /// The corners of the box to show turned by `angle`, as x, y pairs: the box's own top-left,
    /// top-right, bottom-right and bottom-left.
    pub corners: [f32; 8],
}

/// One classifier result of an object (`FerrostreamClassification` in C).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsClassification {
    pub component_id: i32,
    pub class_id: i32,
    pub label: *const c_char,
    pub label_len: usize,
    pub prob: f32,
}

/// Kinds of an attribute value.
pub mod attribute {
    pub const BOOL: u32 = 0;
    pub const INT: u32 = 1;
    pub const FLOAT: u32 = 2;
    pub const TEXT: u32 = 3;
    pub const FLOATS: u32 = 4;
}

/// One free-form attribute of an object (`FerrostreamAttribute` in C): `kind` says which of
/// the value fields holds it (a bool is in `int_value`, 0 or 1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsAttribute {
    pub key: *const c_char,
    pub key_len: usize,
    pub kind: u32,
    pub reserved: u32,
    pub int_value: i64,
    pub float_value: f64,
    pub text: *const c_char,
    pub text_len: usize,
    pub floats: *const f32,
    pub n_floats: usize,
}

/// Pixel memory kinds of a mapped frame.
pub mod memory {
    /// System memory: `data` are host addresses.
    pub const HOST: u32 = 0;
    /// CUDA device memory: `data` are device addresses on GPU `gpu_id`.
    pub const CUDA: u32 = 1;
}

/// The most planes a mapped frame has.
pub const MAX_PLANES: usize = 4;

/// The pixels of one frame, mapped (`FerrostreamFrameMap` in C). Plane `i` holds `rows[i]` rows
/// of `cols[i]` pixels of `channels[i]` bytes, `strides[i]` bytes apart.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsFrameMap {
    /// The GStreamer name of the pixel format (`"RGB"`, `"NV12"`, ...), NUL-terminated, static.
    pub format: *const c_char,
    pub width: u32,
    pub height: u32,
    pub n_planes: u32,
    pub memory: u32,
    pub gpu_id: i32,
    pub writable: u8,
    pub reserved: [u8; 3],
    pub data: [u64; MAX_PLANES],
    pub strides: [i64; MAX_PLANES],
    pub rows: [u32; MAX_PLANES],
    pub cols: [u32; MAX_PLANES],
    pub channels: [u32; MAX_PLANES],
    /// Owned by the library; released by `ferrostream_frame_unmap`.
    pub handle: *mut c_void,
}

impl Default for FsFrameMap {
    fn default() -> Self {
        Self {
            format: std::ptr::null(),
            width: 0,
            height: 0,
            n_planes: 0,
            memory: memory::HOST,
            gpu_id: -1,
            writable: 0,
            reserved: [0; 3],
            data: [0; MAX_PLANES],
            strides: [0; MAX_PLANES],
            rows: [0; MAX_PLANES],
            cols: [0; MAX_PLANES],
            channels: [0; MAX_PLANES],
            handle: std::ptr::null_mut(),
        }
    }
}

/// Opaque handle to a buffer's batch metadata (`FerrostreamBatch` in C).
#[repr(C)]
pub struct FsBatch {
    _private: [u8; 0],
}

/// The exported functions, by symbol name and signature: what a caller that loads the library
/// at run time (the Python package) resolves. `buffer` and `caps` are `GstBuffer *` and
/// `GstCaps *`.
pub mod symbols {
    use super::*;

    pub type AbiVersion = unsafe extern "C" fn() -> u32;
    pub type BatchGet = unsafe extern "C" fn(buffer: *mut c_void) -> *const FsBatch;
    pub type BatchNFrames = unsafe extern "C" fn(batch: *const FsBatch) -> u32;
    pub type BatchRevision = unsafe extern "C" fn(batch: *const FsBatch) -> u64;
    pub type BatchFrame =
        unsafe extern "C" fn(batch: *const FsBatch, frame: u32, out: *mut FsFrame) -> c_int;
    pub type BatchObject = unsafe extern "C" fn(
        batch: *const FsBatch,
        frame: u32,
        object: u32,
        out: *mut FsObject,
    ) -> c_int;
    pub type BatchClassification = unsafe extern "C" fn(
        batch: *const FsBatch,
        frame: u32,
        object: u32,
        index: u32,
        out: *mut FsClassification,
    ) -> c_int;
    pub type BatchAttribute = unsafe extern "C" fn(
        batch: *const FsBatch,
        frame: u32,
        object: u32,
        index: u32,
        out: *mut FsAttribute,
    ) -> c_int;
    pub type BatchObjectOrientation = unsafe extern "C" fn(
        batch: *const FsBatch,
        frame: u32,
        object: u32,
        out: *mut FsOrientation,
    ) -> c_int;
    /// Returns a `g_malloc`ed NUL-terminated JSON text (free with `g_free`), or NULL.
    pub type BatchFrameJson =
        unsafe extern "C" fn(batch: *const FsBatch, frame: u32) -> *mut c_char;
    pub type BatchObjectJson =
        unsafe extern "C" fn(batch: *const FsBatch, frame: u32, object: u32) -> *mut c_char;
    /// Applies one edit (JSON, `len` bytes) to a writable buffer's metadata whose revision is
    /// `expected_revision`; on success stores the new revision and the edit's result (the index
    /// of an added object, else 0). On failure `*error` gets a `g_malloc`ed message.
    pub type BatchEdit = unsafe extern "C" fn(
        buffer: *mut c_void,
        expected_revision: u64,
        edit: *const c_char,
        len: usize,
        new_revision: *mut u64,
        result: *mut i64,
        error: *mut *mut c_char,
    ) -> c_int;
    /// Attaches an empty one-frame batch of the given size to a writable buffer without one.
    pub type BatchEnsure =
        unsafe extern "C" fn(buffer: *mut c_void, width: u32, height: u32) -> c_int;
    /// Makes the buffer of a pad probe's info writable in place (copying it when it is shared)
    /// and returns it (owned by the info), or NULL when the info holds no buffer.
    pub type ProbeMakeWritable = unsafe extern "C" fn(info: *mut c_void) -> *mut c_void;
    pub type FrameMap = unsafe extern "C" fn(
        buffer: *mut c_void,
        caps: *const c_void,
        index: u32,
        write: c_int,
        out: *mut FsFrameMap,
        error: *mut *mut c_char,
    ) -> c_int;
    pub type FrameUnmap = unsafe extern "C" fn(map: *mut FsFrameMap);

    pub const ABI_VERSION: &[u8] = b"ferrostream_abi_version\0";
    pub const BATCH_GET: &[u8] = b"ferrostream_batch_get\0";
    pub const BATCH_N_FRAMES: &[u8] = b"ferrostream_batch_n_frames\0";
    pub const BATCH_REVISION: &[u8] = b"ferrostream_batch_revision\0";
    pub const BATCH_FRAME: &[u8] = b"ferrostream_batch_frame\0";
    pub const BATCH_OBJECT: &[u8] = b"ferrostream_batch_object\0";
    pub const BATCH_CLASSIFICATION: &[u8] = b"ferrostream_batch_classification\0";
    pub const BATCH_ATTRIBUTE: &[u8] = b"ferrostream_batch_attribute\0";
    pub const BATCH_OBJECT_ORIENTATION: &[u8] = b"ferrostream_batch_object_orientation\0";
    pub const BATCH_FRAME_JSON: &[u8] = b"ferrostream_batch_frame_json\0";
    pub const BATCH_OBJECT_JSON: &[u8] = b"ferrostream_batch_object_json\0";
    pub const BATCH_EDIT: &[u8] = b"ferrostream_batch_edit\0";
    pub const BATCH_ENSURE: &[u8] = b"ferrostream_batch_ensure\0";
    pub const PROBE_MAKE_WRITABLE: &[u8] = b"ferrostream_probe_make_writable\0";
    pub const FRAME_MAP: &[u8] = b"ferrostream_frame_map\0";
    pub const FRAME_UNMAP: &[u8] = b"ferrostream_frame_unmap\0";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The layout `include/ferrostream/meta.h` declares (checked against a C compiler by the
    /// plugin's tests); a change here is an ABI change.
    #[test]
    fn layouts_are_fixed() {
        assert_eq!(size_of::<FsBox>(), 16);
        assert_eq!(size_of::<FsFrame>(), 80);
        assert_eq!(offset_of!(FsFrame, components_run), 48);
        assert_eq!(size_of::<FsObject>(), 112);
        assert_eq!(offset_of!(FsObject, label), 16);
        assert_eq!(offset_of!(FsObject, bbox), 36);
        assert_eq!(offset_of!(FsObject, has_keypoints), 111);
        assert_eq!(size_of::<FsOrientation>(), 40);
        assert_eq!(offset_of!(FsOrientation, angle), 4);
        assert_eq!(offset_of!(FsOrientation, corners), 8);
        assert_eq!(size_of::<FsClassification>(), 32);
        assert_eq!(size_of::<FsAttribute>(), 72);
        assert_eq!(offset_of!(FsAttribute, int_value), 24);
        assert_eq!(size_of::<FsFrameMap>(), 152);
    }
}
