// SPDX-License-Identifier: MIT OR Apache-2.0
//! nvinfer custom parser libraries, loaded unchanged: `custom-lib-path` with
//! `parse-bbox-func-name`, `parse-bbox-instance-mask-func-name` or `parse-classifier-func-name`.
//!
//! The library's function is called through a small C++ shim (`nvdsinfer/fs_nvdsparse.cpp`)
//! that builds the C++ arguments nvinfer passes: every output layer of one batch item as an
//! `NvDsInferLayerInfo` (dims without the batch dimension, a host buffer of f32), the network
//! size, and for detectors the class count and per-class thresholds. Objects come back in
//! network-input pixels; clustering follows, as in nvinfer.

mod abi;

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use ferrostream_core::BBox;

use crate::engine::OutputTensor;
pub use crate::layout::CustomKind;
use crate::layout::Detection;

/// An instance mask as a parser returns it: `width` x `height` values, row by row, covering
/// the object's box.
#[derive(Debug, Clone, PartialEq)]
pub struct Mask {
    pub width: u32,
    pub height: u32,
    pub values: Vec<f32>,
}

/// One attribute a classifier parser found.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub index: u32,
    pub value: u32,
    pub confidence: f32,
    pub label: Option<String>,
}

/// The DeepStream release whose headers a parser library was built against, as far as the
/// interface differs (`custom-lib-deepstream-version`).
pub fn objects_have_rotation(deepstream_version: u32) -> bool {
    // DeepStream 9 appended `rotation_angle` to NvDsInferObjectDetectionInfo.
    deepstream_version >= 9
}

/// DeepStream 9's `NvDsInferObjectDetectionInfo` as the shim reads it
/// (`custom-lib-deepstream-version=9`): its size and the offset of `rotation_angle`.
pub fn deepstream9_object_layout() -> (usize, usize) {
    // SAFETY: the shim's functions only return constants.
    unsafe {
        (
            abi::fs_nvds_sizeof_object_ds9(),
            abi::fs_nvds_offsetof_rotation_angle_ds9(),
        )
    }
}

/// A parser function of a loaded library.
pub struct CustomParser {
    func: *mut c_void,
    kind: CustomKind,
    /// Bounding boxes come in DeepStream 9's layout (with a rotation angle).
    rotated_layout: bool,
    name: String,
    path: PathBuf,
    /// Names of the output layers, as C strings for `layerName`.
    layer_names: Vec<CString>,
    // Last: the function above lives in this library.
    _library: libloading::Library,
}

// SAFETY: the function pointer is only called, never dereferenced as data; the library it lives
// in is owned by the same value, and nvinfer itself calls parsers from its own worker thread.
unsafe impl Send for CustomParser {}

impl std::fmt::Debug for CustomParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomParser")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("path", &self.path)
            .finish()
    }
}

impl CustomParser {
    /// Loads `path` and finds `name` in it; `deepstream_version` is the major version of the
    /// DeepStream headers the library was built against.
    pub fn load(
        path: &Path,
        name: &str,
        kind: CustomKind,
        outputs: &[String],
        deepstream_version: u32,
    ) -> Result<Self, String> {
        ferrostream_core::files::check_regular(path, ferrostream_core::files::MAX_MODEL_FILE_BYTES)
            .map_err(|e| format!("custom-lib-path {e}"))?;
        // SAFETY: loading a library runs its initialisers; a parser library is code the user
        // configured to run in this process, exactly as nvinfer loads it.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("custom-lib-path {}: cannot load it: {e}", path.display()))?;
        // SAFETY: the symbol is only used as an opaque function pointer, cast by the shim to the
        // signature `kind` requires (as nvinfer does; the library's author declares it so).
        let func = unsafe { library.get::<*mut c_void>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| {
                format!(
                    "custom-lib-path {} has no function {name:?} ({}): {e}",
                    path.display(),
                    kind.key()
                )
            })?;
        if func.is_null() {
            return Err(format!(
                "custom-lib-path {}: {name:?} ({}) is a null symbol",
                path.display(),
                kind.key()
            ));
        }
        let layer_names = outputs
            .iter()
            .map(|n| CString::new(n.as_str()).map_err(|_| format!("output name {n:?} holds NUL")))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            func,
            kind,
            rotated_layout: objects_have_rotation(deepstream_version),
            name: name.to_string(),
            path: path.to_owned(),
            layer_names,
            _library: library,
        })
    }

    pub fn kind(&self) -> CustomKind {
        self.kind
    }

    /// `name` in `path`, for messages.
    pub fn describe(&self) -> String {
        format!("{} in {}", self.name, self.path.display())
    }

    /// The layers of batch item `item`, as nvinfer describes them to parsers.
    fn layers(
        &self,
        outputs: &mut [OutputTensor],
        item: usize,
    ) -> Result<Vec<abi::LayerInfo>, String> {
        outputs
            .iter_mut()
            .zip(&self.layer_names)
            .enumerate()
            .map(|(index, (o, name))| {
                let dims = o.shape.get(1..).unwrap_or(&[]);
                if dims.len() > abi::MAX_DIMS {
                    return Err(format!(
                        "output {} {:?} has more than {} dimensions per item",
                        o.name,
                        o.shape,
                        abi::MAX_DIMS
                    ));
                }
                if o.shape.first().is_none_or(|&n| item >= n) {
                    return Err(format!(
                        "output {} {:?} has no item {item}",
                        o.name, o.shape
                    ));
                }
                let mut d = [0u32; abi::MAX_DIMS];
                for (slot, &v) in d.iter_mut().zip(dims) {
                    *slot =
                        u32::try_from(v).map_err(|_| format!("output {} is too large", o.name))?;
                }
                let len = o.item_len();
                let buffer = o.data[item * len..(item + 1) * len].as_mut_ptr();
                Ok(abi::LayerInfo {
                    data_type: abi::DATA_TYPE_FLOAT,
                    dims: abi::Dims {
                        num_dims: dims.len() as u32,
                        d,
                        num_elements: len as u32,
                    },
                    // The input is binding 0, as in an engine; outputs follow.
                    binding_index: index as i32 + 1,
                    layer_name: name.as_ptr(),
                    buffer: buffer.cast(),
                    is_input: 0,
                })
            })
            .collect()
    }

    fn outcome(&self, code: i32, error: &[c_char]) -> Result<(), String> {
        match code {
            abi::PARSE_OK => Ok(()),
            abi::PARSE_FALSE => Err(format!(
                "the custom parser {} returned false",
                self.describe()
            )),
            abi::PARSE_THREW => {
                // SAFETY: the shim always NUL-terminates `error`.
                let why = unsafe { CStr::from_ptr(error.as_ptr()) }.to_string_lossy();
                Err(format!(
                    "the custom parser {} threw: {why}",
                    self.describe()
                ))
            }
            other => Err(format!("the parser shim returned {other}")),
        }
    }

    /// Runs a detector parser (bounding boxes, or boxes with instance masks) on batch item
    /// `item`: the objects in network-input pixels and, for instance-mask parsers, each one's
    /// mask.
    pub fn detect(
        &self,
        outputs: &mut [OutputTensor],
        item: usize,
        network: (u32, u32, u32),
        pre_thresholds: &[f32],
        post_thresholds: &[f32],
    ) -> Result<Vec<(Detection, Option<Mask>)>, String> {
        assert_eq!(pre_thresholds.len(), post_thresholds.len());
        let layers = self.layers(outputs, item)?;
        let net = abi::NetworkInfo {
            width: network.0,
            height: network.1,
            channels: network.2,
        };
        let params = abi::DetectionParams {
            num_classes: pre_thresholds.len() as u32,
            pre_cluster_thresholds: pre_thresholds.as_ptr(),
            post_cluster_thresholds: post_thresholds.as_ptr(),
        };
        let mut found: Vec<(Detection, Option<Mask>)> = Vec::new();
        let mut error = [0 as c_char; 512];
        let ctx = (&mut found as *mut Vec<(Detection, Option<Mask>)>).cast::<c_void>();
        // SAFETY: `func` has the signature `kind` names (the library's contract, as in nvinfer);
        // layers, network and params outlive the call; `ctx` is `found`, which the callbacks
        // below extend; `error` is writable for its length.
        let code = unsafe {
            match self.kind {
                CustomKind::Detector => (if self.rotated_layout {
                    abi::fs_nvds_parse_bbox_ds9
                } else {
                    abi::fs_nvds_parse_bbox
                })(
                    self.func,
                    layers.as_ptr(),
                    layers.len(),
                    &net,
                    &params,
                    emit_object,
                    ctx,
                    error.as_mut_ptr(),
                    error.len(),
                ),
                CustomKind::InstanceMask => abi::fs_nvds_parse_instance_mask(
                    self.func,
                    layers.as_ptr(),
                    layers.len(),
                    &net,
                    &params,
                    emit_mask_object,
                    ctx,
                    error.as_mut_ptr(),
                    error.len(),
                ),
                CustomKind::Classifier | CustomKind::Segmentation => {
                    return Err(format!("{} does not detect objects", self.kind.key()));
                }
            }
        };
        self.outcome(code, &error)?;
        Ok(found)
    }

    /// Runs a segmentation parser on batch item `item`: the class of each pixel of the
    /// `network` input (width, height, channels), row by row, -1 where none; `classes` is
    /// `num-detected-classes`.
    pub fn segment(
        &self,
        outputs: &mut [OutputTensor],
        item: usize,
        network: (u32, u32, u32),
        threshold: f32,
        classes: u32,
    ) -> Result<Vec<i32>, String> {
        if self.kind != CustomKind::Segmentation {
            return Err(format!("{} does not segment", self.kind.key()));
        }
        let layers = self.layers(outputs, item)?;
        let net = abi::NetworkInfo {
            width: network.0,
            height: network.1,
            channels: network.2,
        };
        // nvinfer hands the parser an array it does not clear; this one starts at "no class".
        let mut map = vec![-1 as c_int; network.0 as usize * network.1 as usize];
        let mut error = [0 as c_char; 512];
        // SAFETY: as in `detect`; `map` holds width x height ints, what the parser may write.
        let code = unsafe {
            abi::fs_nvds_parse_segmentation(
                self.func,
                layers.as_ptr(),
                layers.len(),
                &net,
                threshold,
                classes,
                map.as_mut_ptr(),
                error.as_mut_ptr(),
                error.len(),
            )
        };
        self.outcome(code, &error)?;
        Ok(map)
    }

    /// Runs a classifier parser on batch item `item`: its attributes and description.
    pub fn classify(
        &self,
        outputs: &mut [OutputTensor],
        item: usize,
        network: (u32, u32, u32),
        threshold: f32,
    ) -> Result<(Vec<Attribute>, String), String> {
        if self.kind != CustomKind::Classifier {
            return Err("a detector parser does not classify".into());
        }
        let layers = self.layers(outputs, item)?;
        let net = abi::NetworkInfo {
            width: network.0,
            height: network.1,
            channels: network.2,
        };
        let mut found: Vec<Attribute> = Vec::new();
        let mut error = [0 as c_char; 512];
        let mut description = [0 as c_char; 1024];
        // SAFETY: as in `detect`; `description` is writable for its length.
        let code = unsafe {
            abi::fs_nvds_parse_classifier(
                self.func,
                layers.as_ptr(),
                layers.len(),
                &net,
                threshold,
                emit_attribute,
                (&mut found as *mut Vec<Attribute>).cast(),
                description.as_mut_ptr(),
                description.len(),
                error.as_mut_ptr(),
                error.len(),
            )
        };
        self.outcome(code, &error)?;
        // SAFETY: the shim always NUL-terminates `description`.
        let description = unsafe { CStr::from_ptr(description.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Ok((found, description))
    }
}

/// Appends one object to the `Vec<(Detection, Option<Mask>)>` behind `ctx`.
unsafe extern "C" fn emit_object(ctx: *mut c_void, object: *const abi::ShimObject) {
    // SAFETY: the shim passes back the `ctx` given to it (a live, exclusively borrowed Vec) and
    // a pointer to an object valid for this call.
    let (found, o) = unsafe { (&mut *ctx.cast::<Vec<(Detection, Option<Mask>)>>(), &*object) };
    let bbox = BBox::new(o.left, o.top, o.width, o.height);
    let mut d = Detection::new(o.class_id, o.confidence, bbox);
    // DeepStream 9's oriented boxes: 0 is an axis-aligned box (and all that older libraries,
    // whose objects have no angle, report).
    d.angle = (o.rotation_angle != 0.0 && o.rotation_angle.is_finite()).then_some(o.rotation_angle);
    found.push((d, None));
}

/// Appends one object with its mask (copied; the shim releases the parser's) to the
/// `Vec<(Detection, Option<Mask>)>` behind `ctx`.
unsafe extern "C" fn emit_mask_object(ctx: *mut c_void, object: *const abi::MaskObjectInfo) {
    // SAFETY: as in `emit_object`.
    let (found, object) = unsafe { (&mut *ctx.cast::<Vec<(Detection, Option<Mask>)>>(), &*object) };
    let len = object.mask_width as usize * object.mask_height as usize;
    let fits = len * size_of::<f32>() <= object.mask_size as usize;
    let mask = (!object.mask.is_null() && len > 0 && fits).then(|| Mask {
        width: object.mask_width,
        height: object.mask_height,
        // SAFETY: the parser's mask holds mask_size bytes, at least `len` floats (checked).
        values: unsafe { std::slice::from_raw_parts(object.mask, len) }.to_vec(),
    });
    let o = &object.object;
    let bbox = BBox::new(o.left, o.top, o.width, o.height);
    found.push((Detection::new(o.class_id, o.confidence, bbox), mask));
}

/// Appends one attribute (its label copied; the shim frees the parser's) to the
/// `Vec<Attribute>` behind `ctx`.
unsafe extern "C" fn emit_attribute(ctx: *mut c_void, attribute: *const abi::Attribute) {
    // SAFETY: as in `emit_object`; a non-null label is a NUL-terminated string of the parser.
    let (found, a) = unsafe { (&mut *ctx.cast::<Vec<Attribute>>(), &*attribute) };
    let label = (!a.attribute_label.is_null()).then(|| {
        // SAFETY: checked non-null above; the parser's labels are C strings.
        unsafe { CStr::from_ptr(a.attribute_label) }
            .to_string_lossy()
            .into_owned()
    });
    found.push(Attribute {
        index: a.attribute_index,
        value: a.attribute_value,
        confidence: a.attribute_confidence,
        label,
    });
}
