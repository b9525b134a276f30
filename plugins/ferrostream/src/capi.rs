// SPDX-License-Identifier: MIT OR Apache-2.0
//! The C ABI of the plugin library: what C applications (`include/ferrostream/meta.h`) and the
//! Python package call to read and change the metadata of a buffer, and to map a frame's pixels.
//!
//! Every function checks its pointers (a NULL or a non-buffer is refused, never followed), and
//! reads only a meta that this library registered. Changes require a writable buffer and the
//! revision the caller read, so two views of one buffer cannot overwrite each other silently.
//! The structures are those of [`ferrostream_abi`].

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use ferrostream_abi::{
    ABI_VERSION, FsAttribute, FsBatch, FsBox, FsClassification, FsFrame, FsFrameMap, FsObject,
    FsOrientation, MAX_PLANES, TIME_NONE, UNTRACKED, attribute, memory, status,
};
use ferrostream_core::edit::{self, Edit, EditError};
use ferrostream_core::framemap::{self, MapError, MappedFrame};
use ferrostream_core::json::{FrameRecord, ObjectRecord};
use ferrostream_core::{AttributeValue, BBox, BatchMeta, Frame, Object};
use gst::glib;

/// The ABI version this library implements.
#[unsafe(no_mangle)]
pub extern "C" fn ferrostream_abi_version() -> u32 {
    ABI_VERSION
}

/// Whether `ptr` is a live GstBuffer (a mini object of the buffer type).
///
/// # Safety
/// `ptr` is NULL or points at a GstMiniObject.
unsafe fn is_buffer(ptr: *const c_void) -> bool {
    // SAFETY: the caller passes NULL or a mini object, whose first field is its type.
    !ptr.is_null()
        && unsafe { (*(ptr as *const gst::ffi::GstMiniObject)).type_ }
            == unsafe { gst::ffi::gst_buffer_get_type() }
}

/// The batch metadata of `buffer`, or NULL when it has none (or is not a buffer).
///
/// # Safety
/// `buffer` is NULL or a valid GstBuffer; the result is valid while the buffer lives and its
/// metadata is not removed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_get(buffer: *mut c_void) -> *const FsBatch {
    // SAFETY: checked to be a buffer, valid per the caller's contract.
    unsafe {
        if !is_buffer(buffer) || !BatchMeta::registered_here() {
            return ptr::null();
        }
        let buffer = gst::BufferRef::from_ptr(buffer as *const gst::ffi::GstBuffer);
        BatchMeta::of(buffer).map_or(ptr::null(), |m| m as *const BatchMeta as *const FsBatch)
    }
}

/// # Safety
/// `batch` is NULL or came from [`ferrostream_batch_get`] and is still valid.
unsafe fn meta<'a>(batch: *const FsBatch) -> Option<&'a BatchMeta> {
    // SAFETY: the handle is the address of a live BatchMeta (caller's contract).
    unsafe { (batch as *const BatchMeta).as_ref() }
}

/// # Safety
/// As for [`meta`].
unsafe fn frame_at<'a>(batch: *const FsBatch, frame: u32) -> Option<&'a Frame> {
    // SAFETY: caller's contract.
    unsafe { meta(batch) }.and_then(|m| m.batch().frames.get(frame as usize))
}

/// # Safety
/// As for [`meta`].
unsafe fn object_at<'a>(batch: *const FsBatch, frame: u32, object: u32) -> Option<&'a Object> {
    // SAFETY: caller's contract.
    unsafe { frame_at(batch, frame) }.and_then(|f| f.objects.get(object as usize))
}

/// Number of frames of the batch (0 for NULL).
///
/// # Safety
/// `batch` is NULL or a valid handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_n_frames(batch: *const FsBatch) -> u32 {
    // SAFETY: caller's contract.
    unsafe { meta(batch) }.map_or(0, |m| m.batch().frames.len() as u32)
}

/// Which state of the batch this is: unique in the process, changed by every application edit.
///
/// # Safety
/// `batch` is NULL or a valid handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_revision(batch: *const FsBatch) -> u64 {
    // SAFETY: caller's contract.
    unsafe { meta(batch) }.map_or(0, |m| m.revision())
}

fn fs_box(b: BBox) -> FsBox {
    FsBox {
        left: b.left,
        top: b.top,
        width: b.width,
        height: b.height,
    }
}

/// Writes `value` to `out`.
///
/// # Safety
/// `out` is NULL (refused) or writable.
unsafe fn fill<T>(out: *mut T, value: T) -> c_int {
    if out.is_null() {
        return status::INVALID;
    }
    // SAFETY: writable per the caller's contract.
    unsafe { out.write(value) };
    status::OK
}

/// Fills `out` with frame `frame`.
///
/// # Safety
/// `batch` is NULL or a valid handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_frame(
    batch: *const FsBatch,
    frame: u32,
    out: *mut FsFrame,
) -> c_int {
    // SAFETY: caller's contract.
    let Some(f) = (unsafe { frame_at(batch, frame) }) else {
        return status::BAD_INDEX;
    };
    let info = FsFrame {
        source_id: f.source_id,
        pad_index: f.pad_index,
        frame_num: f.frame_num,
        pts: f.pts.map_or(TIME_NONE, |t| t.nseconds()),
        width: f.width,
        height: f.height,
        source_width: f.source_width,
        source_height: f.source_height,
        n_objects: f.objects.len() as u32,
        n_components_run: f.components_run.len() as u32,
        components_run: f.components_run.as_ptr(),
        n_terminated_ids: f.terminated_ids.len() as u32,
        terminated_ids: f.terminated_ids.as_ptr(),
        n_display: f.display.len() as u32,
        has_analytics: f.analytics.is_some() as u8,
        has_segmentation: f.segmentation.is_some() as u8,
        has_user_meta: !f.user_meta.is_empty() as u8,
        reserved: 0,
    };
    // SAFETY: `out` is NULL or writable (caller's contract).
    unsafe { fill(out, info) }
}

/// Fills `out` with object `object` of frame `frame`.
///
/// # Safety
/// `batch` is NULL or a valid handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_object(
    batch: *const FsBatch,
    frame: u32,
    object: u32,
    out: *mut FsObject,
) -> c_int {
    // SAFETY: caller's contract.
    let Some(o) = (unsafe { object_at(batch, frame, object) }) else {
        return status::BAD_INDEX;
    };
    let info = FsObject {
        object_id: o.object_id.unwrap_or(UNTRACKED),
        class_id: o.class_id,
        component_id: o.component_id,
        label: o.label.as_ptr() as *const c_char,
        label_len: o.label.len(),
        confidence: o.confidence,
        bbox: fs_box(o.bbox()),
        detector_bbox: fs_box(o.detector_bbox),
        tracker_bbox: fs_box(o.tracker_bbox.unwrap_or_default()),
        has_tracker_bbox: o.tracker_bbox.is_some() as u8,
        has_tracker_confidence: o.tracker_confidence.is_some() as u8,
        has_tracker_age: o.tracker_age.is_some() as u8,
        has_parent: o.parent.is_some() as u8,
        tracker_confidence: o.tracker_confidence.unwrap_or(0.0),
        tracker_age: o.tracker_age.unwrap_or(0),
        parent: o.parent.unwrap_or(0),
        n_classifications: o.classifications.len() as u32,
        n_attributes: o.attributes.len() as u32,
        has_mask: o.mask.is_some() as u8,
        has_analytics: o.analytics.is_some() as u8,
        has_user_meta: !o.user_meta.is_empty() as u8,
        has_keypoints: o.keypoints.is_some() as u8,
    };
    // SAFETY: `out` is NULL or writable (caller's contract).
    unsafe { fill(out, info) }
}

/// Fills `out` with an object's orientation: its angle and the corners of its box to show.
///
/// # Safety
/// As [`ferrostream_batch_object`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_object_orientation(
    batch: *const FsBatch,
    frame: u32,
    object: u32,
    out: *mut FsOrientation,
) -> c_int {
    // SAFETY: caller's contract.
    let Some(o) = (unsafe { object_at(batch, frame, object) }) else {
        return status::BAD_INDEX;
    };
    let corners = o.corners();
    let info = FsOrientation {
        has_angle: o.angle.is_some() as u8,
        reserved: [0; 3],
        angle: o.angle.unwrap_or(0.0),
        corners: std::array::from_fn(|i| corners[i / 2][i % 2]),
    };
    // SAFETY: `out` is NULL or writable (caller's contract).
    unsafe { fill(out, info) }
}

/// Fills `out` with classification `index` of an object.
///
/// # Safety
/// `batch` is NULL or a valid handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_classification(
    batch: *const FsBatch,
    frame: u32,
    object: u32,
    index: u32,
    out: *mut FsClassification,
) -> c_int {
    // SAFETY: caller's contract.
    let Some(c) = (unsafe { object_at(batch, frame, object) })
        .and_then(|o| o.classifications.get(index as usize))
    else {
        return status::BAD_INDEX;
    };
    let info = FsClassification {
        component_id: c.component_id,
        class_id: c.class_id,
        label: c.label.as_ptr() as *const c_char,
        label_len: c.label.len(),
        prob: c.prob,
    };
    // SAFETY: `out` is NULL or writable (caller's contract).
    unsafe { fill(out, info) }
}

/// Fills `out` with attribute `index` (in key order) of an object.
///
/// # Safety
/// `batch` is NULL or a valid handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_attribute(
    batch: *const FsBatch,
    frame: u32,
    object: u32,
    index: u32,
    out: *mut FsAttribute,
) -> c_int {
    // SAFETY: caller's contract.
    let Some((key, value)) = (unsafe { object_at(batch, frame, object) })
        .and_then(|o| o.attributes.iter().nth(index as usize))
    else {
        return status::BAD_INDEX;
    };
    let mut a = FsAttribute {
        key: key.as_ptr() as *const c_char,
        key_len: key.len(),
        kind: attribute::BOOL,
        reserved: 0,
        int_value: 0,
        float_value: 0.0,
        text: ptr::null(),
        text_len: 0,
        floats: ptr::null(),
        n_floats: 0,
    };
    match value {
        AttributeValue::Bool(b) => a.int_value = *b as i64,
        AttributeValue::Int(i) => {
            a.kind = attribute::INT;
            a.int_value = *i;
        }
        AttributeValue::Float(f) => {
            a.kind = attribute::FLOAT;
            a.float_value = *f;
        }
        AttributeValue::Text(t) => {
            a.kind = attribute::TEXT;
            a.text = t.as_ptr() as *const c_char;
            a.text_len = t.len();
        }
        AttributeValue::Floats(v) => {
            a.kind = attribute::FLOATS;
            a.floats = v.as_ptr();
            a.n_floats = v.len();
        }
    }
    // SAFETY: `out` is NULL or writable (caller's contract).
    unsafe { fill(out, a) }
}

/// A `g_malloc`ed copy of `text`, NUL-terminated.
fn g_string(text: &str) -> *mut c_char {
    // SAFETY: g_strndup copies `len` bytes and terminates the copy.
    unsafe { glib::ffi::g_strndup(text.as_ptr() as *const c_char, text.len()) }
}

/// The frame's JSON record (rsmetaexport's schema), `g_malloc`ed; NULL for a bad index.
///
/// # Safety
/// `batch` is NULL or a valid handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_frame_json(
    batch: *const FsBatch,
    frame: u32,
) -> *mut c_char {
    // SAFETY: caller's contract.
    unsafe { frame_at(batch, frame) }
        .and_then(|f| serde_json::to_string(&FrameRecord::from(f)).ok())
        .map_or(ptr::null_mut(), |s| g_string(&s))
}

/// The object's JSON record, `g_malloc`ed; NULL for a bad index.
///
/// # Safety
/// `batch` is NULL or a valid handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_object_json(
    batch: *const FsBatch,
    frame: u32,
    object: u32,
) -> *mut c_char {
    // SAFETY: caller's contract.
    unsafe { object_at(batch, frame, object) }
        .and_then(|o| serde_json::to_string(&ObjectRecord::from(o)).ok())
        .map_or(ptr::null_mut(), |s| g_string(&s))
}

/// Stores `message` in `*error` when the caller asked for it.
///
/// # Safety
/// `error` is NULL or writable.
unsafe fn set_error(error: *mut *mut c_char, message: &str) {
    if !error.is_null() {
        // SAFETY: writable per the caller's contract.
        unsafe { *error = g_string(message) };
    }
}

/// Applies one edit (see `ferrostream_core::edit`) to the metadata of a writable buffer.
///
/// # Safety
/// `buffer` is NULL or a valid GstBuffer; `edit` points at `len` readable bytes; the out
/// pointers are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_edit(
    buffer: *mut c_void,
    expected_revision: u64,
    edit_json: *const c_char,
    len: usize,
    new_revision: *mut u64,
    result: *mut i64,
    error: *mut *mut c_char,
) -> c_int {
    // SAFETY: every pointer is checked before use; validity is the caller's contract.
    unsafe {
        if !is_buffer(buffer) {
            set_error(error, "not a GstBuffer");
            return status::NOT_A_BUFFER;
        }
        if !BatchMeta::registered_here() {
            set_error(
                error,
                "the metadata was registered by another copy of the Ferrostream library",
            );
            return status::FOREIGN_META;
        }
        if gst::ffi::gst_mini_object_is_writable(buffer as *const gst::ffi::GstMiniObject) == 0 {
            set_error(
                error,
                "the buffer is not writable (it is shared): change metadata where the buffer has \
                 a single owner, such as a pad probe's buffer made writable",
            );
            return status::NOT_WRITABLE;
        }
        if edit_json.is_null() {
            set_error(error, "no edit given");
            return status::INVALID;
        }
        let bytes = std::slice::from_raw_parts(edit_json as *const u8, len);
        let buffer = gst::BufferRef::from_mut_ptr(buffer as *mut gst::ffi::GstBuffer);
        let Some(mut meta) = buffer.meta_mut::<BatchMeta>() else {
            set_error(error, "the buffer carries no Ferrostream metadata");
            return status::NO_META;
        };
        if meta.revision() != expected_revision {
            set_error(
                error,
                &format!(
                    "the metadata changed since it was read (revision {} now, {} read): read it again",
                    meta.revision(),
                    expected_revision
                ),
            );
            return status::STALE;
        }
        let outcome = Edit::parse(bytes).and_then(|e| edit::apply(meta.batch_mut(), e));
        match outcome {
            Ok(value) => {
                let revision = meta.bump_revision();
                if !new_revision.is_null() {
                    *new_revision = revision;
                }
                if !result.is_null() {
                    *result = value;
                }
                status::OK
            }
            Err(e) => {
                set_error(error, &e.to_string());
                match e {
                    EditError::NoFrame { .. } | EditError::NoObject { .. } => status::BAD_INDEX,
                    _ => status::INVALID,
                }
            }
        }
    }
}

/// Attaches an empty batch of one `width` x `height` frame to a writable buffer that has no
/// metadata (a plain frame no Ferrostream element has seen yet), so that an application can add
/// objects to it; does nothing when the buffer has metadata.
///
/// # Safety
/// `buffer` is NULL or a valid GstBuffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_batch_ensure(
    buffer: *mut c_void,
    width: u32,
    height: u32,
) -> c_int {
    // SAFETY: checked to be a writable buffer before it is changed.
    unsafe {
        if !is_buffer(buffer) {
            return status::NOT_A_BUFFER;
        }
        if !BatchMeta::registered_here() {
            return status::FOREIGN_META;
        }
        let b = gst::BufferRef::from_ptr(buffer as *const gst::ffi::GstBuffer);
        if BatchMeta::of(b).is_some() {
            return status::OK;
        }
        if gst::ffi::gst_mini_object_is_writable(buffer as *const gst::ffi::GstMiniObject) == 0 {
            return status::NOT_WRITABLE;
        }
        let b = gst::BufferRef::from_mut_ptr(buffer as *mut gst::ffi::GstBuffer);
        let number = Some(b.offset()).filter(|&o| o != u64::MAX).unwrap_or(0);
        let mut frame = Frame::new(0, number, width, height);
        frame.pts = b.pts();
        BatchMeta::add(b, ferrostream_core::Batch::single(frame));
        status::OK
    }
}

/// Makes the buffer a pad probe's info carries writable, replacing it in the info by a copy
/// when it is shared (the probe then passes the copy downstream); returns the buffer, or NULL
/// when the info carries none.
///
/// # Safety
/// `info` is NULL or the `GstPadProbeInfo` of a probe that is running now.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_probe_make_writable(info: *mut c_void) -> *mut c_void {
    let info = info as *mut gst::ffi::GstPadProbeInfo;
    // SAFETY: a live probe info (caller's contract); its data is a buffer when the type says
    // so, and the info owns one reference to it, which make_writable takes and replaces.
    unsafe {
        if info.is_null() || (*info).type_ & gst::ffi::GST_PAD_PROBE_TYPE_BUFFER == 0 {
            return ptr::null_mut();
        }
        let data = (*info).data;
        if !is_buffer(data) {
            return ptr::null_mut();
        }
        let writable = gst::ffi::gst_mini_object_make_writable(data as *mut _);
        (*info).data = writable as *mut c_void;
        writable as *mut c_void
    }
}

/// Maps the pixels of frame `index` of `buffer` (caps `caps`) for reading, or writing when
/// `write` is non-zero; release with [`ferrostream_frame_unmap`].
///
/// # Safety
/// `buffer` and `caps` are NULL or valid; `out` and `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_frame_map(
    buffer: *mut c_void,
    caps: *const c_void,
    index: u32,
    write: c_int,
    out: *mut FsFrameMap,
    error: *mut *mut c_char,
) -> c_int {
    // SAFETY: pointers are checked before use; validity is the caller's contract.
    unsafe {
        if out.is_null() {
            return status::INVALID;
        }
        if !is_buffer(buffer) {
            set_error(error, "not a GstBuffer");
            return status::NOT_A_BUFFER;
        }
        let caps_ok = !caps.is_null()
            && (*(caps as *const gst::ffi::GstMiniObject)).type_ == gst::ffi::gst_caps_get_type();
        if !caps_ok {
            set_error(error, "not a GstCaps");
            return status::NOT_A_BUFFER;
        }
        if !BatchMeta::registered_here() {
            set_error(
                error,
                "the metadata was registered by another copy of the Ferrostream library",
            );
            return status::FOREIGN_META;
        }
        let caps = gst::CapsRef::from_ptr(caps as *const gst::ffi::GstCaps);
        match framemap::map_frame(buffer as *mut _, caps, index, write != 0) {
            Ok(mapped) => {
                out.write(describe(mapped));
                status::OK
            }
            Err(e) => {
                set_error(error, &e.to_string());
                match e {
                    MapError::BadIndex { .. } => status::BAD_INDEX,
                    MapError::Format(_) | MapError::Unsupported(_) => status::UNSUPPORTED,
                    MapError::NotWritable(_) => status::NOT_WRITABLE,
                    MapError::Caps(_) => status::INVALID,
                    MapError::Failed(_) => status::MAP_FAILED,
                }
            }
        }
    }
}

fn describe(mapped: MappedFrame) -> FsFrameMap {
    let mut out = FsFrameMap {
        format: mapped.format_name().as_ptr(),
        width: mapped.width,
        height: mapped.height,
        n_planes: mapped.planes.len().min(MAX_PLANES) as u32,
        memory: match mapped.memory {
            ferrostream_core::batch::MemoryKind::System => memory::HOST,
            _ => memory::CUDA,
        },
        gpu_id: mapped.gpu_id.map_or(-1, |g| g as i32),
        writable: mapped.writable as u8,
        ..Default::default()
    };
    for (i, p) in mapped.planes.iter().take(MAX_PLANES).enumerate() {
        out.data[i] = p.data;
        out.strides[i] = p.stride;
        out.rows[i] = p.rows;
        out.cols[i] = p.cols;
        out.channels[i] = p.channels;
    }
    out.handle = Box::into_raw(Box::new(mapped)) as *mut c_void;
    out
}

/// Unmaps a frame mapped by [`ferrostream_frame_map`]; a second call does nothing.
///
/// # Safety
/// `map` is NULL or was filled by [`ferrostream_frame_map`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ferrostream_frame_unmap(map: *mut FsFrameMap) {
    // SAFETY: the handle is the boxed mapping `describe` leaked, or NULL after an unmap.
    unsafe {
        if map.is_null() || (*map).handle.is_null() {
            return;
        }
        drop(Box::from_raw((*map).handle as *mut MappedFrame));
        (*map).handle = ptr::null_mut();
        (*map).data = [0; MAX_PLANES];
    }
}

// The limits callers check before they convert a value (`ferrostream_abi`) are the edits'.
const _: () = assert!(
    ferrostream_abi::MAX_USER_DEPTH == ferrostream_core::edit::MAX_USER_DEPTH
        && ferrostream_abi::MAX_USER_VALUE_BYTES == ferrostream_core::edit::MAX_USER_VALUE_BYTES
        && ferrostream_abi::MAX_FRAME_SIDE == ferrostream_core::device::MAX_SIDE
        && ferrostream_abi::MAX_KEY_BYTES == ferrostream_core::edit::MAX_KEY_BYTES
        && ferrostream_abi::MAX_LABEL_BYTES == ferrostream_core::edit::MAX_LABEL_BYTES
        && ferrostream_abi::MAX_TEXT_BYTES == ferrostream_core::display::MAX_TEXT_BYTES
);

// The signatures callers resolve at run time (`ferrostream_abi::symbols`) are these functions'.
const _: () = {
    use ferrostream_abi::symbols as s;
    let _: s::AbiVersion = ferrostream_abi_version;
    let _: s::BatchGet = ferrostream_batch_get;
    let _: s::BatchNFrames = ferrostream_batch_n_frames;
    let _: s::BatchRevision = ferrostream_batch_revision;
    let _: s::BatchFrame = ferrostream_batch_frame;
    let _: s::BatchObject = ferrostream_batch_object;
    let _: s::BatchClassification = ferrostream_batch_classification;
    let _: s::BatchAttribute = ferrostream_batch_attribute;
    let _: s::BatchObjectOrientation = ferrostream_batch_object_orientation;
    let _: s::BatchFrameJson = ferrostream_batch_frame_json;
    let _: s::BatchObjectJson = ferrostream_batch_object_json;
    let _: s::BatchEdit = ferrostream_batch_edit;
    let _: s::BatchEnsure = ferrostream_batch_ensure;
    let _: s::ProbeMakeWritable = ferrostream_probe_make_writable;
    let _: s::FrameMap = ferrostream_frame_map;
    let _: s::FrameUnmap = ferrostream_frame_unmap;
};
