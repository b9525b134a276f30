// SPDX-License-Identifier: MIT OR Apache-2.0
//! Changes applications make to a batch while the buffer is in the pipeline (the Python
//! package and C applications, through the plugin's C ABI): remove an object, change its label,
//! class, box or angle (an oriented box's, `"angle":null` for none), add an object, attach user metadata, add display elements for `rsosd`.
//!
//! An edit is a small JSON object tagged by `op`, so the ABI stays one function however many
//! kinds of change there are:
//!
//! ```json
//! {"op":"remove_object","frame":0,"object":3}
//! {"op":"set_object","frame":0,"object":1,"label":"visitor","class_id":7}
//! {"op":"add_object","frame":0,"object":{"class_id":0,"label":"person","confidence":1.0,
//!   "bbox":{"left":10,"top":20,"width":30,"height":60}}}
//! {"op":"set_frame_user_meta","frame":0,"key":"zone","value":{"open":true}}
//! {"op":"add_display","frame":0,"element":{"kind":"text","x":10,"y":10,"text":"3 people",
//!   "size":16,"color":[255,255,255,255]}}
//! ```
//!
//! Every value is checked before anything changes: an edit that fails leaves the batch as it
//! was.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::analytics::{AttributeValue, BBox, Batch, Frame, Object};
use crate::display::{DisplayElement, DisplayError, MAX_ELEMENTS_PER_FRAME, MAX_TEXTS_PER_FRAME};

/// The longest label, in bytes (DeepStream's `MAX_LABEL_SIZE` is 128).
pub const MAX_LABEL_BYTES: usize = 128;
/// The longest user-metadata or attribute key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// The most user-metadata keys of one frame or object.
pub const MAX_USER_KEYS: usize = 256;
/// The largest user-metadata value, as JSON text.
pub const MAX_USER_VALUE_BYTES: usize = 64 * 1024;
/// The most objects one frame holds after an application added some.
pub const MAX_OBJECTS_PER_FRAME: usize = 65_536;
/// The deepest nesting of a user-metadata value (each array or object is one level). A frame's
/// JSON adds four levels around an object's value (frame, objects, object, user_meta), and
/// every reader of it (the IPC consumer, the Python package, `serde_json` anywhere) stops at
/// 128: 32 leaves room, and no real annotation nests deeper.
pub const MAX_USER_DEPTH: usize = 32;
/// The largest coordinate or side of a box, in pixels: 2^24, beyond which `f32` no longer holds
/// every whole pixel. Bounded so that a box's right edge, centre and turned corners stay finite
/// (a 3.4e38 box turned by an angle has corners at infinity, which JSON cannot write).
pub const MAX_COORDINATE: f32 = 16_777_216.0;

/// One change to a batch.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Edit {
    RemoveObject {
        frame: u32,
        object: u32,
    },
    SetObject {
        frame: u32,
        object: u32,
        #[serde(default)]
        label: Option<String>,
        #[serde(default)]
        class_id: Option<i32>,
        #[serde(default)]
        confidence: Option<f32>,
        /// The box shown: the tracker's when the object has one, else the detector's.
        #[serde(default)]
        bbox: Option<BBox>,
        #[serde(default)]
        detector_bbox: Option<BBox>,
        #[serde(default)]
        tracker_bbox: Option<BBox>,
        /// An oriented box's angle in radians; `null` makes the box axis-aligned.
        #[serde(default, deserialize_with = "present")]
        angle: Option<Option<f32>>,
    },
    AddObject {
        frame: u32,
        object: NewObject,
    },
    SetObjectAttribute {
        frame: u32,
        object: u32,
        key: String,
        value: AttributeValue,
    },
    RemoveObjectAttribute {
        frame: u32,
        object: u32,
        key: String,
    },
    SetObjectUserMeta {
        frame: u32,
        object: u32,
        key: String,
        value: serde_json::Value,
    },
    RemoveObjectUserMeta {
        frame: u32,
        object: u32,
        key: String,
    },
    SetFrameUserMeta {
        frame: u32,
        key: String,
        value: serde_json::Value,
    },
    RemoveFrameUserMeta {
        frame: u32,
        key: String,
    },
    AddDisplay {
        frame: u32,
        element: DisplayElement,
    },
    ClearDisplay {
        frame: u32,
    },
}

/// An object an application adds: untracked (a tracker downstream gives it an id).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewObject {
    pub class_id: i32,
    pub label: String,
    #[serde(default = "full_confidence")]
    pub confidence: f32,
    pub bbox: BBox,
    /// The `gie-unique-id` it is credited to; 0 (no inference component) by default.
    #[serde(default)]
    pub component_id: i32,
    #[serde(default)]
    pub parent: Option<u32>,
    /// An oriented box's angle in radians (about the box's centre, clockwise on the screen).
    #[serde(default)]
    pub angle: Option<f32>,
}

fn full_confidence() -> f32 {
    1.0
}

/// A field that may be given as `null`: present (`Some`, holding `None` for `null`) or absent
/// (`None`, by `#[serde(default)]`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<f32>>, D::Error> {
    Option::<f32>::deserialize(d).map(Some)
}

fn check_angle(angle: Option<f32>) -> Result<(), EditError> {
    match angle {
        Some(a) if a.is_nan() || a.abs() > crate::oriented::MAX_ANGLE => Err(EditError::Invalid(
            format!("angle {a} is not a number of radians within two turns either way"),
        )),
        _ => Ok(()),
    }
}

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("malformed edit: {0}")]
    Malformed(String),
    #[error("frame {frame} does not exist: the batch has {count} frames")]
    NoFrame { frame: u32, count: usize },
    #[error("object {object} does not exist: frame {frame} has {count} objects")]
    NoObject {
        frame: u32,
        object: u32,
        count: usize,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("display element refused: {0}")]
    Display(#[from] DisplayError),
}

impl Edit {
    /// Parses one edit from its JSON form.
    pub fn parse(json: &[u8]) -> Result<Self, EditError> {
        serde_json::from_slice(json).map_err(|e| EditError::Malformed(e.to_string()))
    }
}

/// Applies `edit` to `batch`; returns the index of an added object, else 0.
pub fn apply(batch: &mut Batch, edit: Edit) -> Result<i64, EditError> {
    match edit {
        Edit::RemoveObject { frame, object } => {
            let f = frame_mut(batch, frame)?;
            object_index(f, frame, object)?;
            remove_object(f, object as usize);
        }
        Edit::SetObject {
            frame,
            object,
            label,
            class_id,
            confidence,
            bbox,
            detector_bbox,
            tracker_bbox,
            angle,
        } => {
            let o = object_mut(batch, frame, object)?;
            check_angle(angle.flatten())?;
            if let Some(label) = &label {
                check_label(label)?;
            }
            for b in [bbox, detector_bbox, tracker_bbox].iter().flatten() {
                check_box(b)?;
            }
            if let Some(c) = confidence {
                check_confidence(c)?;
            }
            if let Some(label) = label {
                o.label = Arc::from(label);
            }
            if let Some(class_id) = class_id {
                o.class_id = class_id;
            }
            if let Some(c) = confidence {
                o.confidence = c;
            }
            if let Some(b) = detector_bbox {
                o.detector_bbox = b;
            }
            if let Some(b) = tracker_bbox {
                o.tracker_bbox = Some(b);
            }
            if let Some(b) = bbox {
                match &mut o.tracker_bbox {
                    Some(t) => *t = b,
                    None => o.detector_bbox = b,
                }
            }
            if let Some(angle) = angle {
                o.angle = angle;
            }
        }
        Edit::AddObject { frame, object } => {
            check_label(&object.label)?;
            check_box(&object.bbox)?;
            check_confidence(object.confidence)?;
            check_angle(object.angle)?;
            let f = frame_mut(batch, frame)?;
            if f.objects.len() >= MAX_OBJECTS_PER_FRAME {
                return Err(EditError::Invalid(format!(
                    "frame {frame} already has {MAX_OBJECTS_PER_FRAME} objects"
                )));
            }
            if let Some(parent) = object.parent {
                object_index(f, frame, parent)?;
            }
            let mut o = Object::new(
                object.class_id,
                Arc::from(object.label),
                object.confidence,
                object.bbox,
                object.component_id,
            );
            o.parent = object.parent;
            o.angle = object.angle;
            f.objects.push(o);
            // The application acts as a detector on this frame: a tracker downstream matches
            // the frame's objects (it only predicts on frames no detector ran on).
            f.mark_component_run(object.component_id);
            return Ok(f.objects.len() as i64 - 1);
        }
        Edit::SetObjectAttribute {
            frame,
            object,
            key,
            value,
        } => {
            let o = object_mut(batch, frame, object)?;
            check_entry(&key, &value, &o.attributes)?;
            o.attributes.insert(key, value);
        }
        Edit::RemoveObjectAttribute { frame, object, key } => {
            object_mut(batch, frame, object)?.attributes.remove(&key);
        }
        Edit::SetObjectUserMeta {
            frame,
            object,
            key,
            value,
        } => {
            let o = object_mut(batch, frame, object)?;
            check_entry(&key, &value, &o.user_meta)?;
            o.user_meta.insert(key, value);
        }
        Edit::RemoveObjectUserMeta { frame, object, key } => {
            object_mut(batch, frame, object)?.user_meta.remove(&key);
        }
        Edit::SetFrameUserMeta { frame, key, value } => {
            let f = frame_mut(batch, frame)?;
            check_entry(&key, &value, &f.user_meta)?;
            f.user_meta.insert(key, value);
        }
        Edit::RemoveFrameUserMeta { frame, key } => {
            frame_mut(batch, frame)?.user_meta.remove(&key);
        }
        Edit::AddDisplay { frame, element } => {
            element.validate()?;
            let f = frame_mut(batch, frame)?;
            if f.display.len() >= MAX_ELEMENTS_PER_FRAME {
                return Err(DisplayError::TooMany.into());
            }
            let is_text = |e: &DisplayElement| matches!(e, DisplayElement::Text(_));
            if is_text(&element)
                && f.display.iter().filter(|e| is_text(e)).count() >= MAX_TEXTS_PER_FRAME
            {
                return Err(DisplayError::TooManyTexts.into());
            }
            f.display.push(element);
        }
        Edit::ClearDisplay { frame } => frame_mut(batch, frame)?.display.clear(),
    }
    Ok(0)
}

/// Removes object `index`, keeping the other objects' `parent` indices pointing at the same
/// objects (a child of the removed object loses its parent).
pub fn remove_object(frame: &mut Frame, index: usize) {
    frame.objects.remove(index);
    for o in &mut frame.objects {
        o.parent = match o.parent {
            Some(p) if p as usize == index => None,
            Some(p) if p as usize > index => Some(p - 1),
            other => other,
        };
    }
}

fn frame_mut(batch: &mut Batch, frame: u32) -> Result<&mut Frame, EditError> {
    let count = batch.frames.len();
    batch
        .frames
        .get_mut(frame as usize)
        .ok_or(EditError::NoFrame { frame, count })
}

fn object_index(f: &Frame, frame: u32, object: u32) -> Result<usize, EditError> {
    let count = f.objects.len();
    if (object as usize) < count {
        Ok(object as usize)
    } else {
        Err(EditError::NoObject {
            frame,
            object,
            count,
        })
    }
}

fn object_mut(batch: &mut Batch, frame: u32, object: u32) -> Result<&mut Object, EditError> {
    let f = frame_mut(batch, frame)?;
    let i = object_index(f, frame, object)?;
    Ok(&mut f.objects[i])
}

fn check_label(label: &str) -> Result<(), EditError> {
    if label.len() > MAX_LABEL_BYTES {
        return Err(EditError::Invalid(format!(
            "the label is {} bytes long; at most {MAX_LABEL_BYTES}",
            label.len()
        )));
    }
    Ok(())
}

/// Whether every coordinate of `b` is a number of at most [`MAX_COORDINATE`] either way (what
/// metadata may hold: see [`crate::json`]).
pub fn is_bounded(b: &BBox) -> bool {
    [b.left, b.top, b.width, b.height]
        .iter()
        .all(|v| v.abs() <= MAX_COORDINATE)
}

fn check_box(b: &BBox) -> Result<(), EditError> {
    if !is_bounded(b) {
        return Err(EditError::Invalid(format!(
            "box {b:?} has a coordinate that is not a number of at most {MAX_COORDINATE} pixels \
             either way"
        )));
    }
    if b.width < 0.0 || b.height < 0.0 {
        return Err(EditError::Invalid(format!(
            "box {b:?} has a negative width or height"
        )));
    }
    Ok(())
}

fn check_confidence(c: f32) -> Result<(), EditError> {
    if !c.is_finite() {
        return Err(EditError::Invalid(format!(
            "confidence {c} is not a finite number"
        )));
    }
    Ok(())
}

fn check_key<V>(key: &str, existing: &BTreeMap<String, V>) -> Result<(), EditError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(EditError::Invalid(format!(
            "key {key:?} must be 1 to {MAX_KEY_BYTES} bytes long"
        )));
    }
    if existing.len() >= MAX_USER_KEYS && !existing.contains_key(key) {
        return Err(EditError::Invalid(format!(
            "already {MAX_USER_KEYS} keys; key {key:?} not added"
        )));
    }
    Ok(())
}

/// A new entry of a map of user metadata or attributes: a bounded key, a bounded number of
/// keys, and a value of bounded size (as JSON, the form it is exported in) and depth, holding
/// only finite numbers (JSON has no other: what a consumer could not read back is refused).
fn check_entry<V: serde::Serialize + Value>(
    key: &str,
    value: &V,
    existing: &BTreeMap<String, V>,
) -> Result<(), EditError> {
    check_key(key, existing)?;
    let depth = value.depth();
    if depth > MAX_USER_DEPTH {
        return Err(EditError::Invalid(format!(
            "the value of {key:?} is nested {depth} levels deep; at most {MAX_USER_DEPTH}"
        )));
    }
    if !value.is_finite() {
        return Err(EditError::Invalid(format!(
            "the value of {key:?} holds a number that is not finite (JSON has no infinity or \
             NaN; a 32-bit float overflows past 3.4e38)"
        )));
    }
    let size = serde_json::to_vec(value).map_or(usize::MAX, |v| v.len());
    if size > MAX_USER_VALUE_BYTES {
        return Err(EditError::Invalid(format!(
            "the value of {key:?} is {size} bytes of JSON; at most {MAX_USER_VALUE_BYTES}"
        )));
    }
    Ok(())
}

/// What [`check_entry`] asks of a value besides its size.
trait Value {
    /// Levels of nesting: 0 for a scalar, 1 for an array or object of scalars.
    fn depth(&self) -> usize;
    /// Whether every number in it is finite.
    fn is_finite(&self) -> bool;
}

impl Value for serde_json::Value {
    fn depth(&self) -> usize {
        // Iterative, so a value nested past the stack's depth is measured, not a crash.
        let mut deepest = 0;
        let mut stack = vec![(self, 0usize)];
        while let Some((v, level)) = stack.pop() {
            let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
                serde_json::Value::Array(a) => Box::new(a.iter()),
                serde_json::Value::Object(o) => Box::new(o.values()),
                _ => continue,
            };
            deepest = deepest.max(level + 1);
            stack.extend(children.map(|c| (c, level + 1)));
        }
        deepest
    }

    /// `serde_json` numbers are finite by construction.
    fn is_finite(&self) -> bool {
        true
    }
}

impl Value for AttributeValue {
    fn depth(&self) -> usize {
        usize::from(matches!(self, AttributeValue::Floats(_)))
    }

    fn is_finite(&self) -> bool {
        match self {
            AttributeValue::Float(f) => f.is_finite(),
            AttributeValue::Floats(v) => v.iter().all(|f| f.is_finite()),
            AttributeValue::Bool(_) | AttributeValue::Int(_) | AttributeValue::Text(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Batch {
        let mut frame = Frame::new(0, 1, 640, 480);
        for (i, label) in ["person", "face", "car"].iter().enumerate() {
            let mut o = Object::new(
                i as i32,
                (*label).into(),
                0.5,
                BBox::new(10.0 * i as f32, 0.0, 5.0, 5.0),
                1,
            );
            if i == 1 {
                o.parent = Some(0);
            }
            frame.objects.push(o);
        }
        frame.objects[2].parent = Some(1);
        Batch::single(frame)
    }

    fn edit(b: &mut Batch, json: &str) -> Result<i64, EditError> {
        apply(b, Edit::parse(json.as_bytes())?)
    }

    #[test]
    fn removing_keeps_parents_pointing_at_the_same_objects() {
        let mut b = batch();
        edit(&mut b, r#"{"op":"remove_object","frame":0,"object":0}"#).unwrap();
        let objects = &b.frames[0].objects;
        assert_eq!(objects.len(), 2);
        assert_eq!(&*objects[0].label, "face");
        assert_eq!(objects[0].parent, None);
        assert_eq!(objects[1].parent, Some(0));
    }

    #[test]
    fn angles_are_set_cleared_and_checked() {
        let mut b = batch();
        edit(
            &mut b,
            r#"{"op":"set_object","frame":0,"object":1,"angle":0.5}"#,
        )
        .unwrap();
        assert_eq!(b.frames[0].objects[1].angle, Some(0.5));
        // Other changes leave it; null clears it.
        edit(
            &mut b,
            r#"{"op":"set_object","frame":0,"object":1,"label":"x"}"#,
        )
        .unwrap();
        assert_eq!(b.frames[0].objects[1].angle, Some(0.5));
        edit(
            &mut b,
            r#"{"op":"set_object","frame":0,"object":1,"angle":null}"#,
        )
        .unwrap();
        assert_eq!(b.frames[0].objects[1].angle, None);
        let added = edit(
            &mut b,
            r#"{"op":"add_object","frame":0,"object":{"class_id":0,"label":"ship","angle":-0.25,"bbox":{"left":1,"top":2,"width":3,"height":4}}}"#,
        )
        .unwrap();
        assert_eq!(b.frames[0].objects[added as usize].angle, Some(-0.25));
        // JSON has no NaN or infinity; a number too large for f32 is refused.
        let err = edit(
            &mut b,
            r#"{"op":"set_object","frame":0,"object":1,"angle":1e39}"#,
        );
        assert!(err.is_err(), "{err:?}");
        assert_eq!(b.frames[0].objects[1].angle, None);
    }

    #[test]
    fn set_object_changes_only_what_is_named() {
        let mut b = batch();
        b.frames[0].objects[1].tracker_bbox = Some(BBox::new(1.0, 1.0, 1.0, 1.0));
        edit(
            &mut b,
            r#"{"op":"set_object","frame":0,"object":1,"label":"visitor","bbox":{"left":2,"top":3,"width":4,"height":5}}"#,
        )
        .unwrap();
        let o = &b.frames[0].objects[1];
        assert_eq!(&*o.label, "visitor");
        assert_eq!(o.class_id, 1);
        // The shown box of a tracked object is the tracker's.
        assert_eq!(o.tracker_bbox, Some(BBox::new(2.0, 3.0, 4.0, 5.0)));
        assert_eq!(o.detector_bbox, BBox::new(10.0, 0.0, 5.0, 5.0));
    }

    #[test]
    fn added_objects_are_untracked_and_indexed() {
        let mut b = batch();
        let i = edit(
            &mut b,
            r#"{"op":"add_object","frame":0,"object":{"class_id":0,"label":"person","bbox":{"left":1,"top":2,"width":3,"height":4}}}"#,
        )
        .unwrap();
        assert_eq!(i, 3);
        let o = &b.frames[0].objects[3];
        assert_eq!(o.object_id, None);
        assert_eq!(o.confidence, 1.0);
        assert_eq!(o.component_id, 0);
        assert!(b.frames[0].components_run.contains(&0));
    }

    #[test]
    fn user_meta_and_display_are_kept() {
        let mut b = batch();
        edit(
            &mut b,
            r#"{"op":"set_frame_user_meta","frame":0,"key":"zone","value":{"open":true,"n":[1,2]}}"#,
        )
        .unwrap();
        edit(
            &mut b,
            r#"{"op":"set_object_user_meta","frame":0,"object":2,"key":"plate","value":"AB-123"}"#,
        )
        .unwrap();
        edit(
            &mut b,
            r#"{"op":"add_display","frame":0,"element":{"kind":"rect","left":1,"top":1,"width":10,"height":10,"border_width":2,"border_color":[255,0,0,255]}}"#,
        )
        .unwrap();
        let f = &b.frames[0];
        assert_eq!(f.user_meta["zone"]["n"][1], 2);
        assert_eq!(f.objects[2].user_meta["plate"], "AB-123");
        assert_eq!(f.display.len(), 1);
        edit(
            &mut b,
            r#"{"op":"remove_frame_user_meta","frame":0,"key":"zone"}"#,
        )
        .unwrap();
        assert!(b.frames[0].user_meta.is_empty());
    }

    #[test]
    fn bad_edits_change_nothing_and_say_why() {
        let mut b = batch();
        let before = b.clone();
        let cases = [
            (r#"{"op":"remove_object","frame":1,"object":0}"#, "frame 1"),
            (r#"{"op":"remove_object","frame":0,"object":9}"#, "object 9"),
            (r#"{"op":"explode","frame":0}"#, "malformed"),
            (
                r#"{"op":"set_object","frame":0,"object":0,"label":"x","bbox":{"left":0,"top":0,"width":-1,"height":1}}"#,
                "negative",
            ),
            (
                r#"{"op":"add_display","frame":0,"element":{"kind":"text","x":0,"y":0,"text":"t","size":0,"color":[0,0,0,0]}}"#,
                "text size",
            ),
            (
                r#"{"op":"set_frame_user_meta","frame":0,"key":"","value":1}"#,
                "key",
            ),
        ];
        for (json, needle) in cases {
            let e = edit(&mut b, json).unwrap_err().to_string();
            assert!(e.to_lowercase().contains(needle), "{json}: {e}");
        }
        let long = format!(
            r#"{{"op":"set_frame_user_meta","frame":0,"key":"k","value":"{}"}}"#,
            "x".repeat(MAX_USER_VALUE_BYTES)
        );
        assert!(edit(&mut b, &long).is_err());
        let floats = format!(
            r#"{{"op":"set_object_attribute","frame":0,"object":0,"key":"k","value":[{}]}}"#,
            vec!["1.5"; MAX_USER_VALUE_BYTES / 4].join(",")
        );
        assert!(edit(&mut b, &floats).is_err());
        assert_eq!(b, before);
    }

    /// What a consumer of the exported JSON could not read back is refused when set: values
    /// nested past [`MAX_USER_DEPTH`], numbers past `f32`, boxes whose corners would overflow.
    #[test]
    fn what_json_cannot_carry_is_refused() {
        let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let mut b = batch();
        let at_limit = format!(
            r#"{{"op":"set_frame_user_meta","frame":0,"key":"deep","value":{}}}"#,
            nested(MAX_USER_DEPTH)
        );
        edit(&mut b, &at_limit).unwrap();
        let line = {
            let mut out = Vec::new();
            crate::json::write_frame_line(&mut out, &b.frames[0]).unwrap();
            String::from_utf8(out).unwrap()
        };
        let read = crate::json::parse_frame_line(&line).unwrap();
        assert_eq!(read.user_meta["deep"], b.frames[0].user_meta["deep"]);
        let before = b.clone();
        for depth in [MAX_USER_DEPTH + 1, 126] {
            for op in [
                r#""op":"set_frame_user_meta","frame":0"#,
                r#""op":"set_object_user_meta","frame":0,"object":1"#,
            ] {
                let json = format!(r#"{{{op},"key":"deep","value":{}}}"#, nested(depth));
                let e = edit(&mut b, &json).unwrap_err().to_string();
                assert!(e.contains(&format!("nested {depth} levels deep")), "{e}");
            }
        }
        // An array of numbers is held as 32-bit floats: past 3.4e38 they overflow.
        for value in ["[1.0,1e39]", "[-3.5e38]"] {
            let json = format!(
                r#"{{"op":"set_object_attribute","frame":0,"object":0,"key":"k","value":{value}}}"#
            );
            let e = edit(&mut b, &json).unwrap_err().to_string();
            assert!(e.contains("not finite"), "{value}: {e}");
        }
        for bbox in [
            r#"{"left":-1.5e38,"top":0,"width":3.4e38,"height":3.4e38}"#,
            r#"{"left":0,"top":0,"width":2e7,"height":1}"#,
        ] {
            let json = format!(
                r#"{{"op":"add_object","frame":0,"object":{{"class_id":0,"label":"x","bbox":{bbox},"angle":0.5}}}}"#
            );
            let e = edit(&mut b, &json).unwrap_err().to_string();
            assert!(e.contains("at most 16777216 pixels"), "{bbox}: {e}");
        }
        let json = r#"{"op":"add_object","frame":0,"object":{"class_id":0,"label":"x","bbox":{"left":0,"top":0,"width":1,"height":1},"angle":1e30}}"#;
        let e = edit(&mut b, json).unwrap_err().to_string();
        assert!(e.contains("within two turns"), "{e}");
        assert_eq!(b, before);
        // The largest box allowed, turned, still has finite corners.
        let json = r#"{"op":"add_object","frame":0,"object":{"class_id":0,"label":"x","bbox":{"left":-16777216,"top":16777216,"width":16777216,"height":16777216},"angle":0.7}}"#;
        let i = edit(&mut b, json).unwrap() as usize;
        let o = &b.frames[0].objects[i];
        assert!(o.corners().iter().flatten().all(|v| v.is_finite()));
    }
}
