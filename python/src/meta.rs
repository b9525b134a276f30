// SPDX-License-Identifier: MIT OR Apache-2.0
//! Views of a buffer's batch metadata: `BatchMeta` -> `FrameMeta` -> `ObjectMeta`.
//!
//! A view reads the metadata once (frames when the batch is taken, a frame's objects when they
//! are first asked for) and keeps what it read; attribute access then costs no call into the
//! plugin. Changes go straight to the buffer through the plugin and are mirrored in the view.
//! All views taken from one `BatchMeta` share one bookkeeping (indices shift when an object is
//! removed); another `BatchMeta` of the same buffer that changed it makes this one stale, and
//! its next change raises `StaleMetaError` instead of landing on the wrong object.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use ferrostream_abi::{
    FsAttribute, FsBatch, FsBox, FsClassification, FsFrame, FsObject, FsOrientation, TIME_NONE,
    UNTRACKED, attribute,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::{Value, json};

use crate::errors;
use crate::json;
use crate::library::{Lib, lib};
use crate::view::View;

/// A string the library lent (pointer and length), copied.
fn lent_str(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() || len == 0 {
        return String::new();
    }
    // SAFETY: the library points at `len` bytes of UTF-8 inside the live metadata.
    unsafe {
        String::from_utf8_lossy(std::slice::from_raw_parts(ptr as *const u8, len)).into_owned()
    }
}

/// An attribute the library lent, as its JSON value.
fn attribute_value(a: &FsAttribute) -> Value {
    match a.kind {
        attribute::BOOL => Value::Bool(a.int_value != 0),
        attribute::INT => Value::from(a.int_value),
        attribute::FLOAT => Value::from(a.float_value),
        attribute::TEXT => Value::String(lent_str(a.text, a.text_len)),
        attribute::FLOATS if !a.floats.is_null() => {
            // SAFETY: the library points at `n_floats` floats inside the live metadata.
            let v = unsafe { std::slice::from_raw_parts(a.floats, a.n_floats) };
            Value::Array(v.iter().map(|&f| Value::from(f as f64)).collect())
        }
        _ => Value::Null,
    }
}

/// `value`, checked to be a finite number (JSON has no NaN or infinity).
fn finite(what: &str, value: f32) -> PyResult<f32> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(PyValueError::new_err(format!(
            "{what} must be a finite number (in float32 range), not {value}"
        )))
    }
}

/// A rectangle in frame pixels.
#[pyclass(frozen, eq, module = "ferrostream")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    #[pyo3(get)]
    pub left: f32,
    #[pyo3(get)]
    pub top: f32,
    #[pyo3(get)]
    pub width: f32,
    #[pyo3(get)]
    pub height: f32,
}

#[pymethods]
impl BBox {
    #[new]
    fn py_new(left: f32, top: f32, width: f32, height: f32) -> Self {
        Self {
            left,
            top,
            width,
            height,
        }
    }

    #[getter]
    fn right(&self) -> f32 {
        self.left + self.width
    }

    #[getter]
    fn bottom(&self) -> f32 {
        self.top + self.height
    }

    /// `(left, top, width, height)`.
    fn as_tuple(&self) -> (f32, f32, f32, f32) {
        (self.left, self.top, self.width, self.height)
    }

    /// The box as in the JSON export: `{"left":..., "top":..., "width":..., "height":...}`.
    #[allow(clippy::wrong_self_convention)]
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("left", self.left)?;
        d.set_item("top", self.top)?;
        d.set_item("width", self.width)?;
        d.set_item("height", self.height)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "BBox(left={}, top={}, width={}, height={})",
            self.left, self.top, self.width, self.height
        )
    }
}

impl From<FsBox> for BBox {
    fn from(b: FsBox) -> Self {
        Self {
            left: b.left,
            top: b.top,
            width: b.width,
            height: b.height,
        }
    }
}

impl BBox {
    /// A `BBox` or a `(left, top, width, height)` sequence.
    fn extract(value: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(b) = value.cast::<BBox>() {
            return Ok(*b.get());
        }
        let (left, top, width, height): (f32, f32, f32, f32) = value.extract().map_err(|_| {
            PyTypeError::new_err("a box is a ferrostream.BBox or (left, top, width, height)")
        })?;
        for (name, v) in [
            ("left", left),
            ("top", top),
            ("width", width),
            ("height", height),
        ] {
            finite(&format!("the box's {name}"), v)?;
        }
        Ok(Self {
            left,
            top,
            width,
            height,
        })
    }

    fn to_json(self) -> Value {
        json!({"left": self.left, "top": self.top, "width": self.width, "height": self.height})
    }
}

/// One classifier's result on an object.
#[pyclass(frozen, module = "ferrostream")]
#[derive(Debug, Clone)]
pub struct Classification {
    /// `gie-unique-id` of the classifier.
    #[pyo3(get)]
    component_id: i32,
    #[pyo3(get)]
    class_id: i32,
    #[pyo3(get)]
    label: String,
    #[pyo3(get)]
    prob: f32,
}

#[pymethods]
impl Classification {
    fn __repr__(&self) -> String {
        format!(
            "Classification(component_id={}, class_id={}, label={:?}, prob={:.3})",
            self.component_id, self.class_id, self.label, self.prob
        )
    }
}

/// What a view read of one object.
#[derive(Debug, Clone)]
struct ObjectData {
    object_id: Option<u64>,
    class_id: i32,
    component_id: i32,
    label: String,
    confidence: f32,
    detector_bbox: BBox,
    tracker_bbox: Option<BBox>,
    tracker_confidence: Option<f32>,
    tracker_age: Option<u32>,
    parent: Option<u32>,
    classifications: Vec<Classification>,
    /// The attributes, in key order.
    attributes: Vec<(String, Value)>,
    /// Whether the object has a mask, keypoints, analytics results or user metadata that were
    /// not read yet: they are read, from the object's JSON record, when first asked for.
    extras_pending: bool,
    /// `mask`, `keypoints`, `analytics` and `user_meta`, as in the JSON record.
    extras: Value,
}

impl ObjectData {
    fn bbox(&self) -> BBox {
        self.tracker_bbox.unwrap_or(self.detector_bbox)
    }
}

/// An object found in a frame (names as in the JSON export).
#[pyclass(frozen, module = "ferrostream")]
pub struct ObjectMeta {
    view: Arc<View>,
    frame: u32,
    /// The object's index in its frame now; `u32::MAX` once removed.
    index: AtomicU32,
    data: Mutex<ObjectData>,
}

const REMOVED: u32 = u32::MAX;

impl ObjectMeta {
    fn read(lib: &Lib, batch: *const FsBatch, frame: u32, index: u32) -> PyResult<ObjectData> {
        let mut o = std::mem::MaybeUninit::<FsObject>::uninit();
        // SAFETY: a current handle; the library fills `o` when it returns OK.
        let code = unsafe { (lib.batch_object)(batch, frame, index, o.as_mut_ptr()) };
        if code != ferrostream_abi::status::OK {
            return Err(errors::from_status(code, None));
        }
        // SAFETY: filled above.
        let o = unsafe { o.assume_init() };
        let mut classifications = Vec::with_capacity(o.n_classifications as usize);
        for k in 0..o.n_classifications {
            let mut c = std::mem::MaybeUninit::<FsClassification>::uninit();
            // SAFETY: as above.
            let code =
                unsafe { (lib.batch_classification)(batch, frame, index, k, c.as_mut_ptr()) };
            if code != ferrostream_abi::status::OK {
                return Err(errors::from_status(code, None));
            }
            // SAFETY: filled above.
            let c = unsafe { c.assume_init() };
            classifications.push(Classification {
                component_id: c.component_id,
                class_id: c.class_id,
                label: lent_str(c.label, c.label_len),
                prob: c.prob,
            });
        }
        let mut attributes = Vec::with_capacity(o.n_attributes as usize);
        for k in 0..o.n_attributes {
            let mut a = std::mem::MaybeUninit::<FsAttribute>::uninit();
            // SAFETY: as above.
            let code = unsafe { (lib.batch_attribute)(batch, frame, index, k, a.as_mut_ptr()) };
            if code != ferrostream_abi::status::OK {
                return Err(errors::from_status(code, None));
            }
            // SAFETY: filled above; its pointers are into the live metadata.
            let a = unsafe { a.assume_init() };
            attributes.push((lent_str(a.key, a.key_len), attribute_value(&a)));
        }
        Ok(ObjectData {
            object_id: (o.object_id != UNTRACKED).then_some(o.object_id),
            class_id: o.class_id,
            component_id: o.component_id,
            label: lent_str(o.label, o.label_len),
            confidence: o.confidence,
            detector_bbox: o.detector_bbox.into(),
            tracker_bbox: (o.has_tracker_bbox != 0).then(|| o.tracker_bbox.into()),
            tracker_confidence: (o.has_tracker_confidence != 0).then_some(o.tracker_confidence),
            tracker_age: (o.has_tracker_age != 0).then_some(o.tracker_age),
            parent: (o.has_parent != 0).then_some(o.parent),
            classifications,
            attributes,
            extras_pending: o.has_mask != 0
                || o.has_keypoints != 0
                || o.has_analytics != 0
                || o.has_user_meta != 0,
            extras: json!({}),
        })
    }

    /// Reads the mask, keypoints, analytics results and user metadata when the view has not
    /// yet.
    fn load_extras(&self, py: Python<'_>) -> PyResult<()> {
        if !self.data().extras_pending {
            return Ok(());
        }
        let lib = lib(py)?;
        let batch = self.view.batch(lib)?;
        // SAFETY: a current handle.
        let text =
            lib.take_string(unsafe { (lib.batch_object_json)(batch, self.frame, self.index()?) });
        let mut record = json::record(text, "the object")?;
        let extras: serde_json::Map<String, Value> =
            ["mask", "keypoints", "analytics", "user_meta"]
                .into_iter()
                .filter_map(|key| Some((key.to_owned(), record.remove(key)?)))
                .collect();
        let mut data = self.data();
        data.extras = Value::Object(extras);
        data.extras_pending = false;
        Ok(())
    }

    /// The object's angle and turned corners, read from the metadata as it is now.
    fn orientation(&self, py: Python<'_>) -> PyResult<FsOrientation> {
        let lib = lib(py)?;
        let batch = self.view.batch(lib)?;
        let mut o = std::mem::MaybeUninit::<FsOrientation>::uninit();
        // SAFETY: a current handle; the library fills `o` when it returns OK.
        let code = unsafe {
            (lib.batch_object_orientation)(batch, self.frame, self.index()?, o.as_mut_ptr())
        };
        if code != ferrostream_abi::status::OK {
            return Err(errors::from_status(code, None));
        }
        // SAFETY: filled above.
        Ok(unsafe { o.assume_init() })
    }

    fn index(&self) -> PyResult<u32> {
        match self.index.load(Ordering::Acquire) {
            REMOVED => Err(PyValueError::new_err(
                "the object was removed from its frame",
            )),
            i => Ok(i),
        }
    }

    fn data(&self) -> std::sync::MutexGuard<'_, ObjectData> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `fields` as a `set_object` edit, then lets `update` mirror it.
    fn set(
        &self,
        py: Python<'_>,
        fields: Value,
        update: impl FnOnce(&mut ObjectData),
    ) -> PyResult<()> {
        let mut edit = json!({"op": "set_object", "frame": self.frame, "object": self.index()?});
        if let (Some(e), Value::Object(f)) = (edit.as_object_mut(), fields) {
            e.extend(f);
        }
        self.view.edit(py, edit)?;
        update(&mut self.data());
        Ok(())
    }

    fn extra<'py>(&self, py: Python<'py>, key: &str, empty: Value) -> PyResult<Bound<'py, PyAny>> {
        self.load_extras(py)?;
        let value = self.data().extras.get(key).cloned();
        json::to_py(py, value.as_ref().unwrap_or(&empty))
    }

    /// Mirrors a change of user metadata in what the view read (when the object's extras are
    /// still to be read, they are read later with the change in them).
    /// Sends edit `op` of this object's entry `key` (bounded), with `value` (converted within
    /// bounds) for a set; returns the key and the value as sent.
    fn edit_entry(
        &self,
        py: Python<'_>,
        op: &str,
        key: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(String, Option<Value>)> {
        let key = json::key(key)?;
        let value = value.map(json::from_py).transpose()?;
        let mut edit = json!({"op": op, "frame": self.frame, "object": self.index()?, "key": key});
        if let Some(v) = &value {
            edit["value"] = v.clone();
        }
        self.view.edit(py, edit)?;
        Ok((key, value))
    }

    fn set_extra(&self, map: &str, key: &str, value: Option<Value>) {
        let mut data = self.data();
        if let Some(object) = data.extras.as_object_mut() {
            let entry = object.entry(map).or_insert_with(|| json!({}));
            if let Some(m) = entry.as_object_mut() {
                match value {
                    Some(v) => {
                        m.insert(key.to_owned(), v);
                    }
                    None => {
                        m.remove(key);
                    }
                }
            }
        }
    }
}

#[pymethods]
impl ObjectMeta {
    /// Tracker id, unique across sources; None until a tracker gives one.
    #[getter]
    fn object_id(&self) -> Option<u64> {
        self.data().object_id
    }

    /// Index into the producing component's labels. Settable.
    #[getter]
    fn class_id(&self) -> i32 {
        self.data().class_id
    }

    #[setter]
    fn set_class_id(&self, py: Python<'_>, value: i32) -> PyResult<()> {
        self.set(py, json!({"class_id": value}), |d| d.class_id = value)
    }

    /// Settable (at most 128 bytes).
    #[getter]
    fn label(&self) -> String {
        self.data().label.clone()
    }

    #[setter]
    fn set_label(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = json::bounded_str(value, ferrostream_abi::MAX_LABEL_BYTES, "the label")?;
        self.set(py, json!({"label": value}), |d| d.label = value.clone())
    }

    /// Detector confidence. Settable.
    #[getter]
    fn confidence(&self) -> f32 {
        self.data().confidence
    }

    #[setter]
    fn set_confidence(&self, py: Python<'_>, value: f32) -> PyResult<()> {
        let value = finite("confidence", value)?;
        self.set(py, json!({"confidence": value}), |d| d.confidence = value)
    }

    /// The box shown and exported: the tracker's when a tracker ran, else the detector's.
    /// Settable (a BBox or a (left, top, width, height) tuple); setting it changes that box.
    #[getter]
    fn bbox(&self) -> BBox {
        self.data().bbox()
    }

    #[setter]
    fn set_bbox(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = BBox::extract(value)?;
        self.set(py, json!({"bbox": b.to_json()}), |d| {
            match &mut d.tracker_bbox {
                Some(t) => *t = b,
                None => d.detector_bbox = b,
            }
        })
    }

    /// The box as the detector produced it. Settable.
    #[getter]
    fn detector_bbox(&self) -> BBox {
        self.data().detector_bbox
    }

    #[setter]
    fn set_detector_bbox(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = BBox::extract(value)?;
        self.set(py, json!({"detector_bbox": b.to_json()}), |d| {
            d.detector_bbox = b
        })
    }

    /// The tracker's box, None when no tracker ran. Settable.
    #[getter]
    fn tracker_bbox(&self) -> Option<BBox> {
        self.data().tracker_bbox
    }

    #[setter]
    fn set_tracker_bbox(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = BBox::extract(value)?;
        self.set(py, json!({"tracker_bbox": b.to_json()}), |d| {
            d.tracker_bbox = Some(b)
        })
    }

    #[getter]
    fn tracker_confidence(&self) -> Option<f32> {
        self.data().tracker_confidence
    }

    /// Frames since the tracker first saw the object.
    #[getter]
    fn tracker_age(&self) -> Option<u32> {
        self.data().tracker_age
    }

    /// `gie-unique-id` of the component that produced the object.
    #[getter]
    fn component_id(&self) -> i32 {
        self.data().component_id
    }

    /// Index of the parent object in the frame's objects (a face inside a person), or None.
    #[getter]
    fn parent(&self) -> Option<u32> {
        self.data().parent
    }

    /// Classifier results (secondary inference).
    #[getter]
    fn classifications<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let classifications = self.data().classifications.clone();
        PyList::new(py, classifications)
    }

    /// Free-form attributes (dict of numbers, strings, booleans, lists of numbers).
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let attributes = self.data().attributes.clone();
        let d = PyDict::new(py);
        for (k, v) in &attributes {
            d.set_item(k, json::to_py(py, v)?)?;
        }
        Ok(d)
    }

    /// The instance mask as in the JSON export (`width`, `height`, `runs`), or None.
    #[getter]
    fn mask<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "mask", Value::Null)
    }

    /// An oriented box's angle in radians (about the box's centre, clockwise on the screen),
    /// None for an axis-aligned box. Settable (None makes the box axis-aligned).
    #[getter]
    fn angle(&self, py: Python<'_>) -> PyResult<Option<f32>> {
        let o = self.orientation(py)?;
        Ok((o.has_angle != 0).then_some(o.angle))
    }

    #[setter]
    fn set_angle(&self, py: Python<'_>, value: Option<f32>) -> PyResult<()> {
        let value = value.map(|a| finite("angle", a)).transpose()?;
        self.set(py, json!({ "angle": value }), |_| {})
    }

    /// The four corners of `bbox` turned by `angle`, as (x, y) tuples: the box's own top-left,
    /// top-right, bottom-right and bottom-left (the box's corners when it is not turned).
    #[getter]
    fn corners(&self, py: Python<'_>) -> PyResult<Vec<(f32, f32)>> {
        let c = self.orientation(py)?.corners;
        Ok((0..4).map(|i| (c[2 * i], c[2 * i + 1])).collect())
    }

    /// A pose model's keypoints as in the JSON export (`points`: `name`, `x`, `y` in frame
    /// pixels, `confidence`; `skeleton`: the limbs as pairs of indices into `points`), or None.
    #[getter]
    fn keypoints<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "keypoints", Value::Null)
    }

    /// rsanalytics' results for the object (`rois`, `overcrowding`, `crossed`, `direction`),
    /// as in the JSON export, or None.
    #[getter]
    fn analytics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "analytics", Value::Null)
    }

    /// User metadata attached to the object (a dict; exported with it).
    #[getter]
    fn user_meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "user_meta", json!({}))
    }

    /// Attaches any JSON-serialisable `value` under `key`; it travels with the object and
    /// appears in rsmetaexport's JSON and rsmsgbroker's payloads. A value of more than
    /// `MAX_USER_VALUE_BYTES` as JSON, or nested more than `MAX_USER_DEPTH` lists and dicts
    /// deep, raises ValueError.
    fn set_user_meta(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (key, value) = self.edit_entry(py, "set_object_user_meta", key, Some(value))?;
        self.set_extra("user_meta", &key, value);
        Ok(())
    }

    fn remove_user_meta(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let (key, _) = self.edit_entry(py, "remove_object_user_meta", key, None)?;
        self.set_extra("user_meta", &key, None);
        Ok(())
    }

    /// Sets an attribute: a bool, int, float, str or list of floats.
    fn set_attribute(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (key, value) = self.edit_entry(py, "set_object_attribute", key, Some(value))?;
        let value = value.expect("a value was sent");
        let mut data = self.data();
        match data
            .attributes
            .binary_search_by(|(k, _)| k.as_str().cmp(&key))
        {
            Ok(i) => data.attributes[i].1 = value,
            Err(i) => data.attributes.insert(i, (key, value)),
        }
        Ok(())
    }

    fn remove_attribute(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let (key, _) = self.edit_entry(py, "remove_object_attribute", key, None)?;
        self.data().attributes.retain(|(k, _)| *k != key);
        Ok(())
    }

    /// The object's record exactly as rsmetaexport writes it (read from the buffer now).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lib = lib(py)?;
        let batch = self.view.batch(lib)?;
        // SAFETY: a current handle.
        let text =
            lib.take_string(unsafe { (lib.batch_object_json)(batch, self.frame, self.index()?) });
        json::to_py(py, &Value::Object(json::record(text, "the object")?))
    }

    fn __repr__(&self) -> String {
        let d = self.data();
        let b = d.bbox();
        format!(
            "ObjectMeta(object_id={}, class_id={}, label={:?}, confidence={:.3}, bbox=({}, {}, {}, {}))",
            d.object_id.map_or("None".to_string(), |i| i.to_string()),
            d.class_id,
            d.label,
            d.confidence,
            b.left,
            b.top,
            b.width,
            b.height
        )
    }
}

/// What a view read of one frame.
#[derive(Debug, Clone)]
struct FrameData {
    source_id: u32,
    pad_index: u32,
    frame_num: u64,
    pts: Option<u64>,
    width: u32,
    height: u32,
    source_width: u32,
    source_height: u32,
    components_run: Vec<i32>,
    terminated_ids: Vec<u64>,
    n_objects: u32,
    has_extras: bool,
}

/// One frame of a batch (names as in the JSON export).
#[pyclass(frozen, module = "ferrostream")]
pub struct FrameMeta {
    view: Arc<View>,
    index: u32,
    data: FrameData,
    objects: Mutex<Option<Vec<Py<ObjectMeta>>>>,
    /// Whether this view changed the record's extras before reading them.
    extras_changed: std::sync::atomic::AtomicBool,
    /// Whether `extras` was read from the buffer (not assumed empty from the frame's flags).
    extras_read: std::sync::atomic::AtomicBool,
    /// Components credited with objects this view added (they count as having run).
    added_components: Mutex<Vec<i32>>,
    /// The frame's JSON record, read when `analytics`, `segmentation`, `display`, `user_meta`
    /// or `latency` is first asked for.
    extras: Mutex<Option<Value>>,
}

impl FrameMeta {
    pub fn read(view: &Arc<View>, lib: &Lib, batch: *const FsBatch, index: u32) -> PyResult<Self> {
        let mut f = std::mem::MaybeUninit::<FsFrame>::uninit();
        // SAFETY: a current handle; filled when OK.
        let code = unsafe { (lib.batch_frame)(batch, index, f.as_mut_ptr()) };
        if code != ferrostream_abi::status::OK {
            return Err(errors::from_status(code, None));
        }
        // SAFETY: filled above; the arrays point into the live metadata for their lengths.
        let f = unsafe { f.assume_init() };
        let slice = |ptr: *const i32, n: u32| -> Vec<i32> {
            if ptr.is_null() || n == 0 {
                Vec::new()
            } else {
                // SAFETY: see above.
                unsafe { std::slice::from_raw_parts(ptr, n as usize) }.to_vec()
            }
        };
        let terminated = if f.terminated_ids.is_null() || f.n_terminated_ids == 0 {
            Vec::new()
        } else {
            // SAFETY: see above.
            unsafe { std::slice::from_raw_parts(f.terminated_ids, f.n_terminated_ids as usize) }
                .to_vec()
        };
        Ok(Self {
            view: view.clone(),
            index,
            data: FrameData {
                source_id: f.source_id,
                pad_index: f.pad_index,
                frame_num: f.frame_num,
                pts: (f.pts != TIME_NONE).then_some(f.pts),
                width: f.width,
                height: f.height,
                source_width: f.source_width,
                source_height: f.source_height,
                components_run: slice(f.components_run, f.n_components_run),
                terminated_ids: terminated,
                n_objects: f.n_objects,
                has_extras: f.has_analytics != 0
                    || f.has_segmentation != 0
                    || f.has_user_meta != 0
                    || f.n_display > 0,
            },
            objects: Mutex::new(None),
            added_components: Mutex::new(Vec::new()),
            extras_changed: std::sync::atomic::AtomicBool::new(false),
            extras_read: std::sync::atomic::AtomicBool::new(false),
            extras: Mutex::new(None),
        })
    }

    fn objects_list(&self, py: Python<'_>) -> PyResult<Vec<Py<ObjectMeta>>> {
        // No lock is held while Python objects are made: that may run arbitrary Python code
        // (the garbage collector), which could come back here.
        if let Some(list) = self
            .objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            return Ok(list.iter().map(|o| o.clone_ref(py)).collect());
        }
        // Everything is read from the buffer before any Python object is made (making one may
        // run other Python code, which could let the buffer go on).
        let lib = lib(py)?;
        let batch = self.view.batch(lib)?;
        let data = (0..self.data.n_objects)
            .map(|i| ObjectMeta::read(lib, batch, self.index, i))
            .collect::<PyResult<Vec<_>>>()?;
        let list = data
            .into_iter()
            .enumerate()
            .map(|(i, data)| {
                Py::new(
                    py,
                    ObjectMeta {
                        view: self.view.clone(),
                        frame: self.index,
                        index: AtomicU32::new(i as u32),
                        data: Mutex::new(data),
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut cached = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        let list = cached.get_or_insert(list);
        Ok(list.iter().map(|o| o.clone_ref(py)).collect())
    }

    /// The number of objects now (after this view's additions and removals).
    fn object_count(&self) -> u32 {
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(self.data.n_objects, |l| l.len() as u32)
    }

    /// Reads the frame's record (less its objects) when this view has not yet. The frame's
    /// flags say when it has none of the parts they cover, and reading is skipped then, unless
    /// `always` (a part the flags do not cover: `latency`). No lock is held while the plugin is
    /// called.
    fn load_extras(&self, py: Python<'_>, always: bool) -> PyResult<()> {
        let cached = self
            .extras
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if cached && (!always || self.extras_read.load(Ordering::Acquire)) {
            return Ok(());
        }
        let mut value = json!({});
        if always || self.data.has_extras || self.extras_changed.load(Ordering::Acquire) {
            let lib = lib(py)?;
            let batch = self.view.batch(lib)?;
            // SAFETY: a current handle.
            let text = lib.take_string(unsafe { (lib.batch_frame_json)(batch, self.index) });
            let mut record = json::record(text, "the frame")?;
            record.remove("objects");
            value = Value::Object(record);
            self.extras_read.store(true, Ordering::Release);
        }
        let mut extras = self.extras.lock().unwrap_or_else(|e| e.into_inner());
        if always {
            // What was assumed empty, and this view's changes mirrored into it, are in the
            // buffer's record too.
            *extras = Some(value);
        } else {
            extras.get_or_insert(value);
        }
        Ok(())
    }

    fn extra<'py>(&self, py: Python<'py>, key: &str, empty: Value) -> PyResult<Bound<'py, PyAny>> {
        self.extra_of(py, key, empty, false)
    }

    /// `extra`, reading the record with `always` (see [`Self::load_extras`]).
    fn extra_of<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        empty: Value,
        always: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.load_extras(py, always)?;
        let value = self
            .extras
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|e| e.get(key).cloned());
        json::to_py(py, value.as_ref().unwrap_or(&empty))
    }

    /// Mirrors a change of the frame's JSON record in the view's copy, when it was read (when it
    /// was not, it is read later, from the buffer, with the change in it).
    fn update_extras(&self, change: impl FnOnce(&mut serde_json::Map<String, Value>)) {
        let mut cached = self.extras.lock().unwrap_or_else(|e| e.into_inner());
        match cached.as_mut() {
            Some(Value::Object(o)) => change(o),
            _ => self.extras_changed.store(true, Ordering::Release),
        }
    }

    fn add_display(&self, py: Python<'_>, element: Value) -> PyResult<()> {
        let edit = json!({"op": "add_display", "frame": self.index, "element": element.clone()});
        self.view.edit(py, edit)?;
        self.update_extras(|o| {
            if let Value::Array(a) = o.entry("display").or_insert_with(|| json!([])) {
                a.push(element);
            }
        });
        Ok(())
    }
}

fn color(value: Option<&Bound<'_, PyAny>>, default: [u8; 4]) -> PyResult<[u8; 4]> {
    let Some(value) = value else {
        return Ok(default);
    };
    if let Ok((r, g, b, a)) = value.extract::<(u8, u8, u8, u8)>() {
        return Ok([r, g, b, a]);
    }
    if let Ok((r, g, b)) = value.extract::<(u8, u8, u8)>() {
        return Ok([r, g, b, 255]);
    }
    Err(PyTypeError::new_err(
        "a colour is (r, g, b) or (r, g, b, a), each 0..255",
    ))
}

fn optional_color(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<[u8; 4]>> {
    match value {
        Some(v) if !v.is_none() => color(Some(v), [0; 4]).map(Some),
        _ => Ok(None),
    }
}

#[pymethods]
impl FrameMeta {
    /// Source (camera) id.
    #[getter]
    fn source_id(&self) -> u32 {
        self.data.source_id
    }

    /// The muxer sink pad the frame arrived on.
    #[getter]
    fn pad_index(&self) -> u32 {
        self.data.pad_index
    }

    /// Per-source frame counter.
    #[getter]
    fn frame_num(&self) -> u64 {
        self.data.frame_num
    }

    /// Presentation timestamp in nanoseconds, or None.
    #[getter]
    fn pts_ns(&self) -> Option<u64> {
        self.data.pts
    }

    /// Size of the frame the boxes refer to.
    #[getter]
    fn width(&self) -> u32 {
        self.data.width
    }

    #[getter]
    fn height(&self) -> u32 {
        self.data.height
    }

    /// Size of the frame as the source produced it.
    #[getter]
    fn source_width(&self) -> u32 {
        self.data.source_width
    }

    #[getter]
    fn source_height(&self) -> u32 {
        self.data.source_height
    }

    /// `gie-unique-id`s of the inference components that ran on the frame.
    #[getter]
    fn components_run(&self) -> Vec<i32> {
        let mut run = self.data.components_run.clone();
        for c in self
            .added_components
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            if !run.contains(c) {
                run.push(*c);
            }
        }
        run
    }

    /// Tracker ids of the tracks that ended in this frame.
    #[getter]
    fn terminated_ids(&self) -> Vec<u64> {
        self.data.terminated_ids.clone()
    }

    /// The frame's objects (a list, in the metadata's order).
    #[getter]
    fn objects<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.objects_list(py)?)
    }

    /// rsanalytics' frame results (`roi_counts`, `overcrowding`, `lines`, `object_counts`, ...),
    /// as in the JSON export, or None.
    #[getter]
    fn analytics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "analytics", Value::Null)
    }

    /// The semantic segmentation class map as in the JSON export, or None.
    #[getter]
    fn segmentation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "segmentation", Value::Null)
    }

    /// Display elements for rsosd (a list of dicts with `kind` "text", "rect" or "line").
    #[getter]
    fn display<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "display", json!([]))
    }

    /// User metadata attached to the frame (a dict).
    #[getter]
    fn user_meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.extra(py, "user_meta", json!({}))
    }

    /// The frame's latency record when `rsstreammux latency-tracking=true` (a dict as in the
    /// JSON export: `origin_ns`, `components` with `component`, `entry_ns`, `exit_ns` each, and
    /// `end_to_end_ns`), or None. Read-only.
    #[getter]
    fn latency<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // The frame's flags do not say whether it has one: the record is read in any case.
        self.extra_of(py, "latency", Value::Null, true)
    }

    /// Removes `obj` from the frame: downstream elements do not see, draw or export it.
    fn remove_object(&self, py: Python<'_>, obj: &Bound<'_, ObjectMeta>) -> PyResult<()> {
        let target = obj.get();
        if !Arc::ptr_eq(&target.view, &self.view) || target.frame != self.index {
            return Err(PyValueError::new_err(
                "the object is not one of this frame's (take it from frame.objects)",
            ));
        }
        let removed = target.index()?;
        let list = self.objects_list(py)?;
        self.view.edit(
            py,
            json!({"op": "remove_object", "frame": self.index, "object": removed}),
        )?;
        target.index.store(REMOVED, Ordering::Release);
        let mut kept = Vec::with_capacity(list.len());
        for o in list {
            let m = o.get();
            let i = m.index.load(Ordering::Acquire);
            if i == REMOVED {
                continue;
            }
            if i > removed {
                m.index.store(i - 1, Ordering::Release);
            }
            let mut d = m.data();
            d.parent = match d.parent {
                Some(p) if p == removed => None,
                Some(p) if p > removed => Some(p - 1),
                other => other,
            };
            drop(d);
            kept.push(o);
        }
        *self.objects.lock().unwrap_or_else(|e| e.into_inner()) = Some(kept);
        Ok(())
    }

    /// Adds an object (untracked: a tracker downstream gives it an id); returns it.
    #[pyo3(signature = (class_id, label, bbox, confidence=1.0, component_id=0, parent=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_object(
        &self,
        py: Python<'_>,
        class_id: i32,
        label: &Bound<'_, PyAny>,
        bbox: &Bound<'_, PyAny>,
        confidence: f32,
        component_id: i32,
        parent: Option<&Bound<'_, ObjectMeta>>,
    ) -> PyResult<Py<ObjectMeta>> {
        let label = json::bounded_str(label, ferrostream_abi::MAX_LABEL_BYTES, "the label")?;
        let b = BBox::extract(bbox)?;
        let confidence = finite("confidence", confidence)?;
        let parent = match parent {
            Some(p) => {
                let p = p.get();
                if !Arc::ptr_eq(&p.view, &self.view) || p.frame != self.index {
                    return Err(PyValueError::new_err(
                        "the parent is not one of this frame's objects (take it from frame.objects)",
                    ));
                }
                Some(p.index()?)
            }
            None => None,
        };
        let list = self.objects_list(py)?;
        let object = json!({"class_id": class_id, "label": label, "confidence": confidence,
                            "bbox": b.to_json(), "component_id": component_id, "parent": parent});
        let index = self.view.edit(
            py,
            json!({"op": "add_object", "frame": self.index, "object": object}),
        )?;
        self.added_components
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(component_id);
        let added = Py::new(
            py,
            ObjectMeta {
                view: self.view.clone(),
                frame: self.index,
                index: AtomicU32::new(index as u32),
                data: Mutex::new(ObjectData {
                    object_id: None,
                    class_id,
                    component_id,
                    label,
                    confidence,
                    detector_bbox: b,
                    tracker_bbox: None,
                    tracker_confidence: None,
                    tracker_age: None,
                    parent,
                    classifications: Vec::new(),
                    attributes: Vec::new(),
                    extras_pending: false,
                    extras: json!({}),
                }),
            },
        )?;
        let mut list = list;
        list.push(added.clone_ref(py));
        *self.objects.lock().unwrap_or_else(|e| e.into_inner()) = Some(list);
        Ok(added)
    }

    /// Asks rsosd to draw `text` with its top-left corner at (`x`, `y`), `size` pixels high.
    #[pyo3(signature = (text, x, y, size=16, color=None, background=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_text(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        x: f32,
        y: f32,
        size: u32,
        color: Option<&Bound<'_, PyAny>>,
        background: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let text = json::bounded_str(text, ferrostream_abi::MAX_TEXT_BYTES, "the text")?;
        let (x, y) = (finite("x", x)?, finite("y", y)?);
        let element = json!({"kind": "text", "x": x, "y": y, "text": text, "size": size,
                             "color": self::color(color, [255, 255, 255, 255])?,
                             "background": optional_color(background)?});
        self.add_display(py, element)
    }

    /// Asks rsosd to draw a rectangle: a border `border_width` pixels wide, filled with `fill`
    /// when given.
    #[pyo3(signature = (left, top, width, height, border_width=2, border_color=None, fill=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_rect(
        &self,
        py: Python<'_>,
        left: f32,
        top: f32,
        width: f32,
        height: f32,
        border_width: u32,
        border_color: Option<&Bound<'_, PyAny>>,
        fill: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        for (name, v) in [
            ("left", left),
            ("top", top),
            ("width", width),
            ("height", height),
        ] {
            finite(name, v)?;
        }
        let element = json!({"kind": "rect", "left": left, "top": top, "width": width,
                             "height": height, "border_width": border_width,
                             "border_color": color(border_color, [0, 255, 0, 255])?,
                             "fill": optional_color(fill)?});
        self.add_display(py, element)
    }

    /// Asks rsosd to draw a line from (`x1`, `y1`) to (`x2`, `y2`).
    #[pyo3(signature = (x1, y1, x2, y2, width=2, color=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_line(
        &self,
        py: Python<'_>,
        x1: f32,
        y1: f32,
        x2: f32,
        y2: f32,
        width: u32,
        color: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        for (name, v) in [("x1", x1), ("y1", y1), ("x2", x2), ("y2", y2)] {
            finite(name, v)?;
        }
        let element = json!({"kind": "line", "x1": x1, "y1": y1, "x2": x2, "y2": y2,
                             "width": width, "color": self::color(color, [255, 255, 0, 255])?});
        self.add_display(py, element)
    }

    /// Removes every display element of the frame.
    fn clear_display(&self, py: Python<'_>) -> PyResult<()> {
        self.view
            .edit(py, json!({"op": "clear_display", "frame": self.index}))?;
        self.update_extras(|o| {
            o.remove("display");
        });
        Ok(())
    }

    /// Attaches any JSON-serialisable `value` under `key`; it travels with the frame and appears
    /// in rsmetaexport's JSON and rsmsgbroker's payloads. A value of more than
    /// `MAX_USER_VALUE_BYTES` as JSON, or nested more than `MAX_USER_DEPTH` lists and dicts
    /// deep, raises ValueError.
    fn set_user_meta(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = json::key(key)?;
        let value = json::from_py(value)?;
        let edit = json!({"op": "set_frame_user_meta", "frame": self.index, "key": key, "value": value.clone()});
        self.view.edit(py, edit)?;
        self.update_extras(|o| {
            if let Value::Object(m) = o.entry("user_meta").or_insert_with(|| json!({})) {
                m.insert(key, value);
            }
        });
        Ok(())
    }

    fn remove_user_meta(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = json::key(key)?;
        let edit = json!({"op": "remove_frame_user_meta", "frame": self.index, "key": key});
        self.view.edit(py, edit)?;
        self.update_extras(|o| {
            if let Some(Value::Object(m)) = o.get_mut("user_meta") {
                m.remove(&key);
            }
        });
        Ok(())
    }

    /// The frame's record exactly as rsmetaexport writes it (read from the buffer now).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lib = lib(py)?;
        let batch = self.view.batch(lib)?;
        // SAFETY: a current handle.
        let text = lib.take_string(unsafe { (lib.batch_frame_json)(batch, self.index) });
        json::to_py(py, &Value::Object(json::record(text, "the frame")?))
    }

    fn __repr__(&self) -> String {
        format!(
            "FrameMeta(source_id={}, frame_num={}, pts_ns={}, {}x{}, objects={})",
            self.data.source_id,
            self.data.frame_num,
            self.data.pts.map_or("None".to_string(), |p| p.to_string()),
            self.data.width,
            self.data.height,
            self.object_count()
        )
    }
}

/// The analytics metadata of one buffer: a batch of frames.
#[pyclass(frozen, module = "ferrostream")]
pub struct BatchMeta {
    pub view: Arc<View>,
    frames: Vec<Py<FrameMeta>>,
}

impl BatchMeta {
    /// Reads the batch of the buffer at `buffer`, or None when it has none.
    pub fn read(
        py: Python<'_>,
        buffer: *mut c_void,
        keep: Py<PyAny>,
        writable: bool,
    ) -> PyResult<Option<Self>> {
        let lib = lib(py)?;
        // SAFETY: the caller passes a live GstBuffer.
        let batch = unsafe { (lib.batch_get)(buffer) };
        if batch.is_null() {
            return Ok(None);
        }
        // SAFETY: a handle just returned.
        let (revision, n) = unsafe { ((lib.batch_revision)(batch), (lib.batch_n_frames)(batch)) };
        let view = View::new(buffer, keep, revision, writable);
        let frames = (0..n)
            .map(|i| FrameMeta::read(&view, lib, batch, i))
            .collect::<PyResult<Vec<_>>>()?
            .into_iter()
            .map(|f| Py::new(py, f))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Some(Self { view, frames }))
    }
}

#[pymethods]
impl BatchMeta {
    /// The frames of the batch (one for a plain video buffer).
    #[getter]
    fn frames<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.frames.iter().map(|f| f.clone_ref(py)))
    }

    /// Whether changes are allowed (a view from `ferrostream.writable(info)`).
    #[getter]
    fn writable(&self) -> bool {
        self.view.writable
    }

    /// Total number of objects over all frames.
    #[getter]
    fn object_count(&self) -> u64 {
        self.frames
            .iter()
            .map(|f| f.get().object_count() as u64)
            .sum()
    }

    fn __len__(&self) -> usize {
        self.frames.len()
    }

    fn __getitem__(&self, py: Python<'_>, index: isize) -> PyResult<Py<FrameMeta>> {
        let n = self.frames.len() as isize;
        let i = if index < 0 { index + n } else { index };
        if i < 0 || i >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "frame {index} does not exist: the batch has {n} frames"
            )));
        }
        Ok(self.frames[i as usize].clone_ref(py))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(
            PyTuple::new(py, self.frames.iter().map(|f| f.clone_ref(py)))?
                .as_any()
                .try_iter()?
                .into_any(),
        )
    }

    /// The pixels of frame `index` (see `ferrostream.frame_array`), writable inside a
    /// `writable` block.
    #[pyo3(signature = (caps, index=0))]
    fn frame_array<'py>(
        &self,
        py: Python<'py>,
        caps: &Bound<'py, PyAny>,
        index: u32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let buffer = self.view.buffer()?;
        let writer = self.view.writable.then_some(&*self.view);
        crate::arrays::frame_array_of(py, buffer, caps, index, writer)
    }

    fn __repr__(&self) -> String {
        format!(
            "BatchMeta(frames={}, objects={}, writable={})",
            self.frames.len(),
            self.object_count(),
            self.view.writable
        )
    }
}

/// `with ferrostream.writable(info) as batch:` — the probe's buffer made writable, its
/// metadata open for changes until the block ends.
#[pyclass(module = "ferrostream")]
pub struct Writable {
    info: Py<PyAny>,
    /// Caps of a plain stream: a frame without metadata gets an empty batch of their size.
    caps: Option<Py<PyAny>>,
    batch: Option<Py<BatchMeta>>,
    entered: bool,
}

impl Writable {
    pub fn new(info: Py<PyAny>, caps: Option<Py<PyAny>>) -> Self {
        Self {
            info,
            caps,
            batch: None,
            entered: false,
        }
    }
}

/// Why `writable` cannot work on a probe's info.
const NO_BUFFER: &str =
    "the probe's info carries no buffer (add the probe with Gst.PadProbeType.BUFFER)";

/// The frame size of plain video `caps`, checked against the buffer of the probe's `info`:
/// caps claiming a larger frame than the buffer holds would give the batch a size its boxes do
/// not have (and scale them wrongly downstream).
fn frame_size(info: &Bound<'_, PyAny>, caps: &Bound<'_, PyAny>) -> PyResult<(u32, u32)> {
    let py = caps.py();
    crate::library::video_caps(caps)?;
    // The buffer's wrapper holds a reference to it: it is gone before the buffer is made
    // writable.
    let held: u64 = match info.call_method0("get_buffer")? {
        b if b.is_none() => return Err(PyTypeError::new_err(NO_BUFFER)),
        b => b.call_method0("get_size")?.extract()?,
    };
    let refusal = |why: String| {
        PyValueError::new_err(format!(
            "{why}; the buffer holds {held} bytes: pass the pad's negotiated caps \
             (pad.get_current_caps())"
        ))
    };
    // PyGObject raises TypeError when GStreamer lays out no frame for the caps.
    let video = match crate::library::video_info(py)?.call_method1("new_from_caps", (caps,)) {
        Ok(v) if !v.is_none() => v,
        Err(e) if !e.is_instance_of::<PyTypeError>(py) => return Err(e),
        _ => {
            let described: String = caps.call_method0("to_string")?.extract()?;
            return Err(refusal(format!(
                "the caps {described} describe no frame GStreamer can lay out (too large, or \
                 without a width or height)"
            )));
        }
    };
    let (width, height): (u32, u32) = (
        video.getattr("width")?.extract()?,
        video.getattr("height")?.extract()?,
    );
    // An NVMM buffer's size says nothing of its frame (below): its caps are bounded as every
    // frame the plugin handles is.
    let most = ferrostream_abi::MAX_FRAME_SIDE;
    if width > most || height > most {
        return Err(refusal(format!(
            "the caps describe a {width}x{height} frame, larger than {most} pixels a side"
        )));
    }
    let needed: u64 = video.getattr("size")?.extract()?;
    // An NVMM buffer holds a surface descriptor, not the pixels: its size says nothing of them.
    let nvmm = caps
        .call_method1("get_features", (0,))?
        .call_method1("contains", ("memory:NVMM",))?
        .is_truthy()?;
    if !nvmm && held < needed {
        let format: String = video.getattr("finfo")?.getattr("name")?.extract()?;
        return Err(refusal(format!(
            "the caps describe a {width}x{height} {format} frame of {needed} bytes"
        )));
    }
    Ok((width, height))
}

#[pymethods]
impl Writable {
    fn __enter__(&mut self, py: Python<'_>) -> PyResult<Option<Py<BatchMeta>>> {
        if self.entered {
            return Err(PyValueError::new_err(
                "a ferrostream.writable(info) block can be entered once: call writable(info) \
                 again inside the probe",
            ));
        }
        self.entered = true;
        let gi = crate::library::gi(py)?;
        let info = self.info.bind(py);
        let ptr = crate::library::pointer_of(
            info,
            &gi.probe_info,
            "Gst.PadProbeInfo",
            gi.pointer_offset,
        )?;
        // Checked before the buffer is made writable (copied, when it is shared).
        let size = match &self.caps {
            Some(caps) => Some(frame_size(info, caps.bind(py))?),
            None => None,
        };
        let lib = lib(py)?;
        // SAFETY: the info of the probe running now (the `with` block is inside it).
        let buffer = unsafe { (lib.probe_make_writable)(ptr) };
        if buffer.is_null() {
            return Err(PyTypeError::new_err(NO_BUFFER));
        }
        if let Some((width, height)) = size {
            // SAFETY: the probe's buffer, writable (made so above).
            let code = unsafe { (lib.batch_ensure)(buffer, width, height) };
            if code != ferrostream_abi::status::OK {
                return Err(errors::from_status(code, None));
            }
        }
        let batch = BatchMeta::read(py, buffer, self.info.clone_ref(py), true)?
            .map(|b| Py::new(py, b))
            .transpose()?;
        self.batch = batch.as_ref().map(|b| b.clone_ref(py));
        Ok(batch)
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if let Some(b) = self.batch.take() {
            let view = &b.get().view;
            view.close();
            let alive = view.live_mappings(py)?;
            if alive > 0 {
                // An array cannot be revoked: writing to it after the block races with the
                // elements downstream, and its mapping keeps the buffer from being reused.
                let warnings = py.import("warnings")?;
                let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
                warnings.call_method1(
                    "warn",
                    (
                        format!(
                            "{alive} writable frame array(s) outlive their ferrostream.writable \
                             block: the frame has gone downstream; del them inside the block"
                        ),
                        category,
                        2,
                    ),
                )?;
            }
        }
        Ok(false)
    }
}
