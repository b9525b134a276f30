// SPDX-License-Identifier: MIT OR Apache-2.0
//! nvinferserver (Triton) configuration files, read onto rstrtinfer's settings.
//!
//! DeepStream's `nvinferserver` (deepstream-app `plugin-type=1`) is configured by a protobuf
//! text-format file, message `nvdsinferserver.config.PluginControl`: `infer_config { ... }`,
//! `input_control { ... }`, `output_control { ... }`. [`is_nvinferserver`] tells such a file
//! from nvinfer's INI by its first word; `read` translates it onto the same [`InferConfig`] an
//! INI file gives, through the same settings table (so a value is held to the same range as the
//! property, and properties set on the element still override the file). The model runs on the
//! remote backend (`backend=triton`, KServe v2 gRPC).
//!
//! The text format is read by a small reader of our own (module `text`): prost has no text
//! format, and prost-reflect would need NVIDIA's schema compiled into the crate (a `protoc`
//! step and three `.proto` files kept in sync by hand) to read some thirty messages. The schema
//! is written out here instead, one function per message, which is also where each field's
//! meaning in rstrtinfer is decided and said.
//!
//! Every field of the schema is mapped, accepted with a warning saying why it has no effect, or
//! refused with an error naming the file, line, field and value. A field whose value asks for
//! what rstrtinfer does anyway (`enable_cuda_buffer_sharing: false`, `frame_scaling_filter: 1`,
//! bilinear) passes silently; an unknown field is a warning naming it. The mapping:
//!
//! | nvinferserver field | rstrtinfer setting |
//! |---|---|
//! | `infer_config.unique_id`, `gpu_ids: [n]`, `max_batch_size` | `gie-unique-id`, `gpu-id`, `batch-size` |
//! | `backend.triton` (or `trt_is`) `.model_name`, `.version` (-1: latest) | `backend=triton`, `model-name`, `model-version` |
//! | `backend.triton.grpc.url` | `server-url` |
//! | `backend.triton.model_repo` | refused: Triton in-process; serve it and use `grpc { url }` |
//! | `backend.inputs[].dims` (fixed shape, no batch) | `infer-dims` |
//! | `preprocess.network_format`, `tensor_order` | `model-color-format`, `network-input-order` |
//! | `preprocess.maintain_aspect_ratio`, `symmetric_padding` | the same names |
//! | `preprocess.normalize.scale_factor`, `channel_offsets` | `net-scale-factor`, `offsets` |
//! | `postprocess.labelfile_path` | `labelfile-path` |
//! | `postprocess.detection` (`num_detected_classes`, `per_class_params`) | `network-type=detector`, `num-detected-classes`, `[class-attrs-N] pre-cluster-threshold` |
//! | `detection.nms`, `dbscan`, `group_rectangle`, `simple_cluster`, none | `cluster-mode` 2, 1, 0, 4, 4 with `[class-attrs-all]` thresholds |
//! | `postprocess.classification`, `triton_classification` | `network-type=classifier`, `classifier-threshold` |
//! | `postprocess.segmentation`, `other` | `network-type=segmentation` / `other` |
//! | `custom_parse_*_func`, `custom_lib.path` | `parse-*-func-name`, `custom-lib-path` |
//! | `input_control.process_mode`, `operate_on_gie_id`, `operate_on_class_ids` | `process-mode`, the same names |
//! | `input_control.interval`, `secondary_reinfer_interval` | the same names |
//! | `input_control.object_control.bbox_filter` | `input-object-{min,max}-{width,height}` |
//! | `output_control.output_tensor_meta` | `output-tensor-meta` |
//! | `detect_control.default_filter`, `specific_class_filters` | `[class-attrs-all]`, `[class-attrs-N]` `detected-*`, `roi-*-offset` |
//! | `detect_control.filter_out_class_ids` | `filter-out-class-ids` |
//! | `input_tensor_from_meta`, `lstm`, `extra.custom_process_funcion`, `normalize.mean_file` | refused |
//!
//! nvinferserver's own defaults apply where a field is absent: a detector without a clustering
//! block keeps every box (threshold 0, no clustering), `max_batch_size: 0` is 1, a missing or
//! zero `scale_factor` is 1.

mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::path::Path;

use ferrostream_core::ini::{ConfigError, Entry, IniFile, Section};
use ferrostream_core::settings::Props;

use crate::config::{ClassAttrs, InferConfig, InputOrder, LoadedConfig};
use crate::settings::{CLASS_SECTION, CLASS_SETTINGS, SETTINGS};
use text::{Field, Message, Scalar, Value};

/// The fields of `PluginControl`: a file whose first word is one of them is an nvinferserver
/// configuration (an INI file starts with a `[section]`).
const TOP_LEVEL: [&str; 3] = ["infer_config", "input_control", "output_control"];

/// Whether `text` is an nvinferserver configuration (protobuf text format) rather than an
/// nvinfer INI file.
pub fn is_nvinferserver(text: &str) -> bool {
    text::first_identifier(text).is_some_and(|word| TOP_LEVEL.contains(&word))
}

/// Reads the nvinferserver configuration `text` of the file `path` over `base`: settings the
/// file does not give keep the base's values.
pub(crate) fn read(
    path: &Path,
    text: &str,
    base: InferConfig,
) -> Result<LoadedConfig, ConfigError> {
    let top = text::parse(text).map_err(|e| ConfigError {
        path: path.to_owned(),
        line: e.line,
        message: e.message,
    })?;
    let mut reader = Reader {
        file: IniFile {
            path: path.to_owned(),
            sections: Vec::new(),
        },
        config: base,
        warnings: Vec::new(),
        noticed: BTreeSet::new(),
        custom_lib: None,
        parse_function: None,
        input_dims: None,
        inputs: 0,
    };
    reader.plugin_control(&top)?;
    reader.finish()?;
    Ok(LoadedConfig {
        config: reader.config,
        warnings: reader.warnings,
    })
}

/// A place in the file: the line and the field's full name.
#[derive(Debug, Clone)]
struct At {
    line: usize,
    name: String,
}

impl At {
    fn of(parent: &str, field: &Field) -> Self {
        Self {
            line: field.line,
            name: if parent.is_empty() {
                field.name.clone()
            } else {
                format!("{parent}.{}", field.name)
            },
        }
    }
}

struct Reader {
    /// The file, as the settings table reads keys: its path names errors and resolves paths.
    file: IniFile,
    config: InferConfig,
    warnings: Vec<String>,
    /// Fields already warned about: a repeated field is said once.
    noticed: BTreeSet<String>,
    /// `custom_lib.path`, checked against the parser functions at the end.
    custom_lib: Option<(At, String)>,
    /// The first `custom_parse_*_func`.
    parse_function: Option<At>,
    /// `backend.inputs[].dims`, read once `tensor_order` is known.
    input_dims: Option<(At, Vec<i64>)>,
    /// `backend.inputs` read.
    inputs: usize,
}

impl Reader {
    fn error(&self, at: &At, message: impl Display) -> ConfigError {
        ConfigError {
            path: self.file.path.clone(),
            line: at.line,
            message: format!("field `{}`: {message}", at.name),
        }
    }

    fn warn(&mut self, line: usize, message: impl Display) {
        self.warnings
            .push(format!("{}:{line}: {message}", self.file.path.display()));
    }

    /// A field accepted without effect, and why.
    fn notice(&mut self, at: &At, why: impl Display) {
        if self.noticed.insert(at.name.clone()) {
            self.warn(
                at.line,
                format_args!("field `{}` has no effect in rstrtinfer: {why}", at.name),
            );
        }
    }

    fn unknown(&mut self, at: &At) {
        self.warn(at.line, format_args!("unknown field `{}` ignored", at.name));
    }

    /// A field refused: rstrtinfer cannot do what it asks.
    fn refuse(&self, at: &At, why: impl Display) -> ConfigError {
        self.error(at, format_args!("not supported by rstrtinfer: {why}"))
    }

    /// Checks `message` against its schema, as protobuf does: a field that is not `repeated`
    /// given twice, or two members of one `oneof`, are errors.
    fn check(
        &self,
        message: &Message,
        parent: &str,
        repeated: &[&str],
        oneofs: &[&[&str]],
    ) -> Result<(), ConfigError> {
        let mut first: BTreeMap<&str, usize> = BTreeMap::new();
        let mut oneof_member: BTreeMap<usize, (&str, usize)> = BTreeMap::new();
        for field in &message.fields {
            let name = field.name.as_str();
            if let Some(&line) = first.get(name) {
                if !repeated.contains(&name) {
                    return Err(self.error(
                        &At::of(parent, field),
                        format_args!("given twice (first on line {line}); it holds one value"),
                    ));
                }
            } else {
                first.insert(name, field.line);
            }
            if let Some(group) = oneofs.iter().position(|g| g.contains(&name)) {
                match oneof_member.get(&group) {
                    Some(&(other, line)) if other != name => {
                        return Err(self.error(
                            &At::of(parent, field),
                            format_args!(
                                "`{other}` (line {line}) is already given, and only one of {} \
                                 may be",
                                oneofs[group].join(", ")
                            ),
                        ));
                    }
                    _ => {
                        oneof_member.insert(group, (name, field.line));
                    }
                }
            }
        }
        Ok(())
    }

    fn message<'f>(&self, field: &'f Field, at: &At) -> Result<&'f Message, ConfigError> {
        match &field.value {
            Value::Message(m) => Ok(m),
            Value::Scalar(s) => {
                Err(self.error(at, format_args!("expected `{{ ... }}`, found {s}")))
            }
        }
    }

    fn scalar<'f>(&self, field: &'f Field, at: &At) -> Result<&'f Scalar, ConfigError> {
        match &field.value {
            Value::Scalar(s) => Ok(s),
            Value::Message(_) => Err(self.error(at, "expected a value, found `{ ... }`")),
        }
    }

    /// An integer of a field whose type holds `min..=max`.
    fn integer(&self, field: &Field, at: &At, min: i128, max: i128) -> Result<i128, ConfigError> {
        let s = self.scalar(field, at)?;
        let Scalar::Number(text) = s else {
            return Err(self.error(at, format_args!("expected an integer, found {s}")));
        };
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
        };
        let magnitude = if let Some(hex) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            i128::from_str_radix(hex, 16)
        } else if digits.len() > 1 && digits.starts_with('0') {
            i128::from_str_radix(&digits[1..], 8)
        } else {
            digits.parse::<i128>()
        };
        let value = magnitude
            .map(|m| if negative { -m } else { m })
            .map_err(|_| self.error(at, format_args!("expected an integer, found {s}")))?;
        if !(min..=max).contains(&value) {
            return Err(self.error(
                at,
                format_args!("expected an integer from {min} to {max}, found {value}"),
            ));
        }
        Ok(value)
    }

    fn uint32(&self, field: &Field, at: &At) -> Result<u32, ConfigError> {
        // In range by the check.
        self.integer(field, at, 0, u32::MAX.into())
            .map(|v| v as u32)
    }

    fn int32(&self, field: &Field, at: &At) -> Result<i32, ConfigError> {
        self.integer(field, at, i32::MIN.into(), i32::MAX.into())
            .map(|v| v as i32)
    }

    /// A finite `float`.
    fn float(&self, field: &Field, at: &At) -> Result<f32, ConfigError> {
        let s = self.scalar(field, at)?;
        let text = match s {
            Scalar::Number(t) => t.strip_suffix(['f', 'F']).unwrap_or(t),
            Scalar::Ident(t) => t.as_str(),
            Scalar::Str(_) => "",
        };
        // Straight to f32, as an INI file's value is read: the same text, the same number.
        let value = text
            .parse::<f32>()
            .map_err(|_| self.error(at, format_args!("expected a number, found {s}")))?;
        if !value.is_finite() {
            return Err(self.error(at, format_args!("expected a finite number, found {s}")));
        }
        Ok(value)
    }

    fn boolean(&self, field: &Field, at: &At) -> Result<bool, ConfigError> {
        let s = self.scalar(field, at)?;
        match s {
            Scalar::Ident(t) if ["true", "True", "t"].contains(&t.as_str()) => Ok(true),
            Scalar::Ident(t) if ["false", "False", "f"].contains(&t.as_str()) => Ok(false),
            Scalar::Number(t) if t == "1" => Ok(true),
            Scalar::Number(t) if t == "0" => Ok(false),
            _ => Err(self.error(at, format_args!("expected true or false, found {s}"))),
        }
    }

    fn string<'f>(&self, field: &'f Field, at: &At) -> Result<&'f str, ConfigError> {
        match self.scalar(field, at)? {
            Scalar::Str(s) => Ok(s),
            s => Err(self.error(at, format_args!("expected a string in quotes, found {s}"))),
        }
    }

    /// An enum value by name or number: its index in `names`.
    fn enumeration(&self, field: &Field, at: &At, names: &[&str]) -> Result<usize, ConfigError> {
        let s = self.scalar(field, at)?;
        let index = match s {
            Scalar::Ident(t) => names.iter().position(|n| n == t),
            Scalar::Number(t) => t.parse::<usize>().ok().filter(|&i| i < names.len()),
            Scalar::Str(_) => None,
        };
        index.ok_or_else(|| {
            self.error(
                at,
                format_args!("expected one of {}, found {s}", names.join(", ")),
            )
        })
    }

    /// Sets rstrtinfer's `[property]` key `key` from `text`, as a file's line would: held to the
    /// property's range, paths relative to the file. An error names the field.
    fn set(
        &mut self,
        at: &At,
        key: &'static str,
        text: impl Into<String>,
    ) -> Result<(), ConfigError> {
        let section = one_entry("property", at.line, key, text.into());
        let mut warnings = Vec::new();
        SETTINGS
            .read_section(
                &self.file,
                &section,
                "property",
                &mut self.config,
                &mut warnings,
            )
            .map_err(|e| renamed(e, at, key))?;
        self.warnings.extend(warnings);
        Ok(())
    }

    /// Sets the class key `key` of `[class-attrs-all]` (`class` `None`) or of
    /// `[class-attrs-<class>]`, which overrides it key by key.
    fn set_class(
        &mut self,
        class: Option<u32>,
        at: &At,
        key: &'static str,
        text: impl Into<String>,
    ) -> Result<(), ConfigError> {
        let name = class.map_or_else(
            || "class-attrs-all".to_string(),
            |c| format!("class-attrs-{c}"),
        );
        let section = one_entry(&name, at.line, key, text.into());
        let mut warnings = Vec::new();
        let read = match class {
            None => CLASS_SETTINGS.read_section(
                &self.file,
                &section,
                CLASS_SECTION,
                &mut self.config.class_attrs.all,
                &mut warnings,
            ),
            Some(class) => {
                let overrides = self
                    .config
                    .class_attrs
                    .per_class
                    .entry(class)
                    .or_insert_with(|| Props::new(ClassAttrs::default()));
                CLASS_SETTINGS.read_section_as_set(
                    &self.file,
                    &section,
                    CLASS_SECTION,
                    overrides,
                    &mut warnings,
                )
            }
        };
        read.map_err(|e| renamed(e, at, key))?;
        self.warnings.extend(warnings);
        Ok(())
    }

    fn plugin_control(&mut self, top: &Message) -> Result<(), ConfigError> {
        self.check(top, "", &[], &[])?;
        for f in &top.fields {
            let at = At::of("", f);
            match f.name.as_str() {
                "infer_config" => self.inference_config(self.message(f, &at)?, &at.name)?,
                "input_control" => self.input_control(self.message(f, &at)?, &at.name)?,
                "output_control" => self.output_control(self.message(f, &at)?, &at.name)?,
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn inference_config(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(
            m,
            parent,
            &["gpu_ids"],
            &[&["preprocess", "input_tensor_from_meta"]],
        )?;
        let gpu_ids: Vec<&Field> = m.fields.iter().filter(|f| f.name == "gpu_ids").collect();
        if let [first, second, ..] = gpu_ids[..] {
            return Err(self.error(
                &At::of(parent, second),
                format_args!(
                    "one GPU per element (as nvinferserver): give one id (line {} gives the \
                     first)",
                    first.line
                ),
            ));
        }
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                // 0 is nvinferserver's "not set".
                "unique_id" => match self.uint32(f, &at)? {
                    0 => {}
                    id => self.set(&at, "gie-unique-id", id.to_string())?,
                },
                "gpu_ids" => {
                    let id = self.integer(f, &at, 0, i32::MAX.into())?;
                    self.set(&at, "gpu-id", id.to_string())?;
                }
                // nvinferserver makes 0 a batch of 1.
                "max_batch_size" => {
                    let n = self.uint32(f, &at)?.max(1);
                    self.set(&at, "batch-size", n.to_string())?;
                }
                "backend" => self.backend(self.message(f, &at)?, &at.name)?,
                "preprocess" => self.preprocess(self.message(f, &at)?, &at.name)?,
                "input_tensor_from_meta" => {
                    return Err(self.refuse(
                        &at,
                        "input tensors prepared upstream (nvdspreprocess): rstrtinfer prepares \
                         its input from the frames or objects itself; remove it and describe \
                         the input in `preprocess { ... }`",
                    ));
                }
                "postprocess" => self.postprocess(self.message(f, &at)?, &at.name)?,
                "custom_lib" => self.custom_lib(self.message(f, &at)?, &at.name)?,
                "extra" => self.extra(self.message(f, &at)?, &at.name)?,
                "lstm" => {
                    return Err(self.refuse(
                        &at,
                        "LSTM loops feed a model's outputs back as inputs; rstrtinfer's models \
                         take one image input",
                    ));
                }
                "clip_object_outside_roi" => {
                    if self.boolean(f, &at)? {
                        self.notice(
                            &at,
                            "objects are clipped to nvdspreprocess regions of interest, which \
                             rstrtinfer does not read",
                        );
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn backend(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &["inputs", "outputs"], &[&["trt_is", "triton"]])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "inputs" => self.input_layer(self.message(f, &at)?, &at)?,
                "outputs" => self.output_layer(self.message(f, &at)?, &at.name)?,
                "trt_is" | "triton" => {
                    if f.name == "trt_is" {
                        self.warn(
                            at.line,
                            format_args!("field `{}` is deprecated and read as `triton`", at.name),
                        );
                    }
                    self.triton(self.message(f, &at)?, &at)?;
                }
                "output_mem_type" => {
                    let kind = self.enumeration(
                        f,
                        &at,
                        &["MEMORY_TYPE_DEFAULT", "MEMORY_TYPE_CPU", "MEMORY_TYPE_GPU"],
                    )?;
                    if kind == 2 {
                        self.notice(&at, "answers arrive over gRPC, in host memory");
                    }
                }
                "disable_warmup" => {
                    if !self.boolean(f, &at)? {
                        self.notice(
                            &at,
                            "rstrtinfer sends no warm-up request; the input's dims come from \
                             the server's model metadata (and infer-dims)",
                        );
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn input_layer(&mut self, m: &Message, list: &At) -> Result<(), ConfigError> {
        self.check(m, &list.name, &["dims"], &[])?;
        self.inputs += 1;
        if self.inputs > 1 {
            self.notice(
                list,
                "rstrtinfer feeds one image input, the model's input as the server's metadata \
                 names it",
            );
        }
        let mut dims = Vec::new();
        let mut dims_at = None;
        for f in &m.fields {
            let at = At::of(&list.name, f);
            match f.name.as_str() {
                "name" => {
                    self.string(f, &at)?;
                    self.notice(
                        &at,
                        "the image input is the model's input as the server's metadata names it",
                    );
                }
                "dims" => {
                    dims.push(self.integer(f, &at, i32::MIN.into(), i32::MAX.into())? as i64);
                    dims_at.get_or_insert(at);
                }
                "data_type" => {
                    let t = self.enumeration(
                        f,
                        &at,
                        &[
                            "TENSOR_DT_NONE",
                            "TENSOR_DT_FP32",
                            "TENSOR_DT_FP16",
                            "TENSOR_DT_INT8",
                            "TENSOR_DT_INT16",
                            "TENSOR_DT_INT32",
                            "TENSOR_DT_UINT8",
                            "TENSOR_DT_UINT16",
                            "TENSOR_DT_UINT32",
                            "TENSOR_DT_FP64",
                            "TENSOR_DT_INT64",
                            "TENSOR_DT_UINT64",
                            "TENSOR_DT_STRING",
                        ],
                    )?;
                    if t != 0 {
                        self.notice(
                            &at,
                            "the input's type is the one the server's metadata gives",
                        );
                    }
                }
                _ => self.unknown(&at),
            }
        }
        if let (Some(at), None) = (dims_at, &self.input_dims) {
            self.input_dims = Some((at, dims));
        }
        Ok(())
    }

    fn output_layer(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "name" => {
                    self.string(f, &at)?;
                    self.notice(
                        &at,
                        "the parser reads the outputs the server's model metadata lists \
                         (output-blob-names chooses and orders them)",
                    );
                }
                "max_buffer_bytes" => {
                    self.integer(f, &at, 0, u64::MAX.into())?;
                    self.notice(&at, "answers are bounded by server-max-message-mib");
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn triton(&mut self, m: &Message, triton: &At) -> Result<(), ConfigError> {
        let parent = triton.name.as_str();
        self.check(m, parent, &["class_params"], &[&["model_repo", "grpc"]])?;
        self.set(triton, "backend", "triton")?;
        let mut server = false;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "model_name" => {
                    let name = self.string(f, &at)?;
                    self.set(&at, "model-name", name)?;
                }
                // -1 (and 0, unset): the latest version, the server's choice.
                "version" => {
                    let v = self.integer(f, &at, i64::MIN.into(), i64::MAX.into())?;
                    let text = if v > 0 { v.to_string() } else { String::new() };
                    self.set(&at, "model-version", text)?;
                }
                "class_params" => self.triton_classify(self.message(f, &at)?, &at.name)?,
                "model_repo" => return Err(self.model_repo(self.message(f, &at)?, &at)),
                "grpc" => {
                    server = true;
                    self.grpc(self.message(f, &at)?, &at.name)?;
                }
                _ => self.unknown(&at),
            }
        }
        if !server {
            self.warn(
                triton.line,
                format_args!(
                    "field `{}` names no server: add `grpc {{ url: \"host:8001\" }}` or set \
                     server-url",
                    triton.name
                ),
            );
        }
        Ok(())
    }

    /// The refusal of `model_repo`, saying what to do instead.
    fn model_repo(&self, m: &Message, at: &At) -> ConfigError {
        let root = m
            .fields
            .iter()
            .find(|f| f.name == "root")
            .and_then(|f| match &f.value {
                Value::Scalar(Scalar::Str(root)) => Some(root.as_str()),
                _ => None,
            })
            .map_or_else(
                || "<model repository>".to_string(),
                |root| {
                    // As nvinferserver: relative to the file, unless a URL (gs://, s3://).
                    if root.contains("://") || Path::new(root).is_absolute() {
                        root.to_string()
                    } else {
                        self.file.base_dir().join(root).display().to_string()
                    }
                },
            );
        self.refuse(
            at,
            format_args!(
                "`model_repo` runs Triton in-process through its C API, which rstrtinfer \
                 cannot host; it reaches Triton over the network. Serve the repository with a \
                 Triton or KServe v2 server (`tritonserver --model-repository={root}`) and write \
                 `grpc {{ url: \"localhost:8001\" }}` in place of `model_repo {{ ... }}`; or run \
                 the model in-process from an nvinfer configuration file ([property] with \
                 onnx-file or model-engine-file)"
            ),
        )
    }

    fn grpc(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "url" => {
                    let url = self.string(f, &at)?;
                    self.set(&at, "server-url", url)?;
                }
                "enable_cuda_buffer_sharing" => {
                    if self.boolean(f, &at)? {
                        self.notice(
                            &at,
                            "input tensors travel in the gRPC request; CUDA memory is not \
                             shared with the server",
                        );
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn preprocess(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        let mut normalized = false;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                // nvinferserver reads MEDIA_FORMAT_NONE as RGB.
                "network_format" => {
                    let format = self.enumeration(
                        f,
                        &at,
                        &[
                            "MEDIA_FORMAT_NONE",
                            "IMAGE_FORMAT_RGB",
                            "IMAGE_FORMAT_BGR",
                            "IMAGE_FORMAT_GRAY",
                        ],
                    )?;
                    let nick = ["rgb", "rgb", "bgr", "gray"][format];
                    self.set(&at, "model-color-format", nick)?;
                }
                "tensor_order" => {
                    let order = self.enumeration(
                        f,
                        &at,
                        &[
                            "TENSOR_ORDER_NONE",
                            "TENSOR_ORDER_LINEAR",
                            "TENSOR_ORDER_NHWC",
                        ],
                    )?;
                    let nick = ["auto", "nchw", "nhwc"][order];
                    self.set(&at, "network-input-order", nick)?;
                }
                "tensor_name" => {
                    self.string(f, &at)?;
                    self.notice(
                        &at,
                        "the image input is the model's input as the server's metadata names it",
                    );
                }
                "maintain_aspect_ratio" => {
                    let keep = self.int32(f, &at)? != 0;
                    self.set(&at, "maintain-aspect-ratio", keep.to_string())?;
                }
                "symmetric_padding" => {
                    let symmetric = self.int32(f, &at)? != 0;
                    self.set(&at, "symmetric-padding", symmetric.to_string())?;
                }
                "frame_scaling_hw" => {
                    let hw = self.enumeration(
                        f,
                        &at,
                        &[
                            "FRAME_SCALING_HW_DEFAULT",
                            "FRAME_SCALING_HW_GPU",
                            "FRAME_SCALING_HW_VIC",
                        ],
                    )?;
                    if hw != 0 {
                        self.notice(
                            &at,
                            "frames are scaled where they are: on the GPU in CUDA memory or \
                             NVMM, else on the CPU",
                        );
                    }
                }
                "frame_scaling_filter" => {
                    // NvBufSurfTransformInter_Bilinear, what rstrtinfer does.
                    if self.uint32(f, &at)? != 1 {
                        self.notice(&at, "frames are scaled bilinearly");
                    }
                }
                "normalize" => {
                    normalized = true;
                    self.normalize(self.message(f, &at)?, &at)?;
                }
                _ => self.unknown(&at),
            }
        }
        if !normalized {
            // nvinferserver's default scale.
            let at = At {
                line: m.fields.first().map_or(0, |f| f.line),
                name: parent.to_string(),
            };
            self.set(&at, "net-scale-factor", "1")?;
        }
        Ok(())
    }

    fn normalize(&mut self, m: &Message, normalize: &At) -> Result<(), ConfigError> {
        let parent = normalize.name.as_str();
        self.check(m, parent, &["channel_offsets"], &[])?;
        let mut scale = 0.0;
        let mut scale_at = normalize.clone();
        let mut offsets = Vec::new();
        let mut offsets_at = None;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "scale_factor" => {
                    scale = self.float(f, &at)?;
                    scale_at = at;
                }
                "channel_offsets" => {
                    offsets.push(self.float(f, &at)?.to_string());
                    offsets_at.get_or_insert(at);
                }
                "mean_file" => {
                    let file = self.string(f, &at)?;
                    if !file.is_empty() {
                        return Err(self.refuse(
                            &at,
                            format_args!(
                                "a mean image ({file:?}) is not subtracted by rstrtinfer: give \
                                 the per-channel means as `channel_offsets`"
                            ),
                        ));
                    }
                }
                _ => self.unknown(&at),
            }
        }
        // nvinferserver makes a scale of 0 (or none) 1.
        let scale = if scale == 0.0 { 1.0 } else { scale };
        self.set(&scale_at, "net-scale-factor", scale.to_string())?;
        if let Some(at) = offsets_at {
            self.set(&at, "offsets", offsets.join(";"))?;
        }
        Ok(())
    }

    fn postprocess(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(
            m,
            parent,
            &[],
            &[&[
                "detection",
                "classification",
                "segmentation",
                "other",
                "trtis_classification",
                "triton_classification",
            ]],
        )?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "labelfile_path" => {
                    let path = self.string(f, &at)?;
                    self.set(&at, "labelfile-path", path)?;
                }
                "detection" => {
                    self.set(&at, "network-type", "detector")?;
                    self.detection(self.message(f, &at)?, &at)?;
                }
                "classification" => {
                    self.set(&at, "network-type", "classifier")?;
                    self.output_block(
                        self.message(f, &at)?,
                        &at.name,
                        &[
                            ("threshold", "classifier-threshold"),
                            ("custom_parse_classifier_func", "parse-classifier-func-name"),
                        ],
                    )?;
                }
                "segmentation" => {
                    self.set(&at, "network-type", "segmentation")?;
                    self.output_block(
                        self.message(f, &at)?,
                        &at.name,
                        &[
                            ("threshold", "segmentation-threshold"),
                            ("num_segmentation_classes", "num-detected-classes"),
                            (
                                "custom_parse_segmentation_func",
                                "parse-segmentation-func-name",
                            ),
                        ],
                    )?;
                }
                "other" => {
                    self.set(&at, "network-type", "other")?;
                    let m = self.message(f, &at)?;
                    self.check(m, &at.name, &[], &[])?;
                    for f in &m.fields {
                        let at = At::of(&at.name, f);
                        match f.name.as_str() {
                            "type_name" => {
                                if !self.string(f, &at)?.is_empty() {
                                    self.notice(&at, "a reserved field");
                                }
                            }
                            _ => self.unknown(&at),
                        }
                    }
                }
                "trtis_classification" | "triton_classification" => {
                    if f.name == "trtis_classification" {
                        self.warn(
                            at.line,
                            format_args!(
                                "field `{}` is deprecated and read as `triton_classification`",
                                at.name
                            ),
                        );
                    }
                    self.set(&at, "network-type", "classifier")?;
                    self.triton_classify(self.message(f, &at)?, &at.name)?;
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn detection(&mut self, m: &Message, detection: &At) -> Result<(), ConfigError> {
        let parent = detection.name.as_str();
        self.check(
            m,
            parent,
            &["per_class_params"],
            &[&["nms", "dbscan", "group_rectangle", "simple_cluster"]],
        )?;
        // Read first: the per-class keys are checked against it.
        let mut classes = 0;
        for f in m.fields.iter().filter(|f| f.name == "num_detected_classes") {
            let at = At::of(parent, f);
            classes = self.integer(f, &at, 0, i32::MAX.into())? as u32;
            self.set(&at, "num-detected-classes", classes.to_string())?;
        }
        let mut clustered = false;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "num_detected_classes" => {}
                "per_class_params" => {
                    let (class, value) = self.map_entry(self.message(f, &at)?, &at)?;
                    let class = match class {
                        Some((key, key_at)) => self.integer(key, &key_at, 0, i32::MAX.into())?,
                        None => 0,
                    } as u32;
                    if classes > 0 && class >= classes {
                        return Err(self.error(
                            &at,
                            format_args!(
                                "class {class} is not below num_detected_classes ({classes})"
                            ),
                        ));
                    }
                    if let Some((value, value_at)) = value {
                        let value = self.message(value, &value_at)?;
                        self.per_class(value, &value_at.name, class)?;
                    }
                }
                "custom_parse_bbox_func" => self.parse_function(f, &at, "parse-bbox-func-name")?,
                "nms" | "dbscan" | "group_rectangle" | "simple_cluster" => {
                    clustered = true;
                    self.clustering(self.message(f, &at)?, &at, classes)?;
                }
                _ => self.unknown(&at),
            }
        }
        if !clustered {
            // nvinferserver keeps every box the parser gives when no clustering is named.
            self.set(detection, "cluster-mode", "none")?;
            self.set_class(None, detection, "pre-cluster-threshold", "0")?;
        }
        Ok(())
    }

    /// `key` and `value` of a map entry (`per_class_params { key: 0 value { ... } }`).
    fn map_entry<'m>(
        &mut self,
        m: &'m Message,
        entry: &At,
    ) -> Result<(Part<'m>, Part<'m>), ConfigError> {
        self.check(m, &entry.name, &[], &[])?;
        let (mut key, mut value) = (None, None);
        for f in &m.fields {
            let at = At::of(&entry.name, f);
            match f.name.as_str() {
                "key" => key = Some((f, at)),
                "value" => value = Some((f, at)),
                _ => self.unknown(&at),
            }
        }
        Ok((key, value))
    }

    fn per_class(&mut self, m: &Message, parent: &str, class: u32) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "pre_threshold" => {
                    let t = self.float(f, &at)?;
                    self.set_class(Some(class), &at, "pre-cluster-threshold", t.to_string())?;
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    /// One of the clustering blocks. Every parameter of the block is set, absent ones to
    /// protobuf's 0, as nvinferserver reads them.
    fn clustering(&mut self, m: &Message, block: &At, classes: u32) -> Result<(), ConfigError> {
        let parent = block.name.as_str();
        self.check(m, parent, &[], &[])?;
        // (field, rstrtinfer's class key, whether an integer)
        let (mode, fields): (&str, &[(&str, &'static str, bool)]) =
            match block.name.rsplit('.').next().unwrap_or_default() {
                "nms" => (
                    "nms",
                    &[
                        ("confidence_threshold", "pre-cluster-threshold", false),
                        ("iou_threshold", "nms-iou-threshold", false),
                        ("topk", "topk", true),
                    ],
                ),
                "dbscan" => (
                    "dbscan",
                    &[
                        ("pre_threshold", "pre-cluster-threshold", false),
                        ("eps", "eps", false),
                        ("min_boxes", "minBoxes", true),
                        ("min_score", "dbscan-min-score", false),
                    ],
                ),
                "group_rectangle" => (
                    "group-rectangles",
                    &[
                        ("confidence_threshold", "pre-cluster-threshold", false),
                        ("group_threshold", "group-threshold", true),
                        ("eps", "eps", false),
                    ],
                ),
                _ => ("none", &[("threshold", "pre-cluster-threshold", false)]),
            };
        self.set(block, "cluster-mode", mode)?;
        // Absent: protobuf's 0, which for topk is "keep all" (-1 here).
        let mut values: Vec<(At, String)> = fields
            .iter()
            .map(|&(_, key, _)| (block.clone(), if key == "topk" { "-1" } else { "0" }.into()))
            .collect();
        for f in &m.fields {
            let at = At::of(parent, f);
            let Some(i) = fields.iter().position(|(name, _, _)| *name == f.name) else {
                self.unknown(&at);
                continue;
            };
            let text = if fields[i].2 {
                let n = self.int32(f, &at)?;
                if fields[i].1 == "topk" {
                    // nvinferserver: 0 or less keeps all; rstrtinfer says so with -1.
                    if n > 0 && classes != 1 {
                        self.warn(
                            at.line,
                            format_args!(
                                "field `{}`: rstrtinfer keeps the {n} best objects of each \
                                 class (nvinfer's topk); nvinferserver keeps {n} over all \
                                 classes",
                                at.name
                            ),
                        );
                    }
                    if n > 0 { n } else { -1 }.to_string()
                } else {
                    n.to_string()
                }
            } else {
                self.float(f, &at)?.to_string()
            };
            values[i] = (at, text);
        }
        for ((at, text), (_, key, _)) in values.into_iter().zip(fields) {
            self.set_class(None, &at, key, text)?;
        }
        Ok(())
    }

    /// A `classification` or `segmentation` block: its fields, each an rstrtinfer key
    /// (`threshold` a float, `num_*` an integer) or a parser function (`custom_parse_*`).
    fn output_block(
        &mut self,
        m: &Message,
        parent: &str,
        fields: &[(&str, &'static str)],
    ) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            let Some(&(name, key)) = fields.iter().find(|(name, _)| *name == f.name) else {
                self.unknown(&at);
                continue;
            };
            if name.starts_with("custom_parse_") {
                self.parse_function(f, &at, key)?;
            } else if name.starts_with("num_") {
                let n = self.integer(f, &at, 0, i32::MAX.into())?;
                self.set(&at, key, n.to_string())?;
            } else {
                let t = self.float(f, &at)?;
                self.set(&at, key, t.to_string())?;
            }
        }
        Ok(())
    }

    /// Triton's classification (`triton_classification`, `class_params`): the server's top K
    /// labels, here the client's best class of the output.
    fn triton_classify(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "topk" => {
                    if self.uint32(f, &at)? > 1 {
                        self.notice(
                            &at,
                            "rstrtinfer attaches the best class of each output, as nvinfer's \
                             classifiers",
                        );
                    }
                }
                "threshold" => {
                    let t = self.float(f, &at)?;
                    self.set(&at, "classifier-threshold", t.to_string())?;
                }
                "tensor_name" => {
                    let name = self.string(f, &at)?;
                    if !name.is_empty() {
                        self.set(&at, "output-blob-names", name)?;
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn parse_function(&mut self, f: &Field, at: &At, key: &'static str) -> Result<(), ConfigError> {
        let name = self.string(f, at)?;
        if name.is_empty() {
            return Ok(());
        }
        self.set(at, key, name)?;
        self.parse_function.get_or_insert_with(|| at.clone());
        Ok(())
    }

    fn custom_lib(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "path" => {
                    let path = self.string(f, &at)?;
                    if !path.is_empty() {
                        self.custom_lib = Some((at, path.to_string()));
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn extra(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "copy_input_to_host_buffers" => {
                    if self.boolean(f, &at)? {
                        self.notice(
                            &at,
                            "input tensors are not kept for the application; use \
                             output-tensor-meta for outputs",
                        );
                    }
                }
                "output_buffer_pool_size" => {
                    self.int32(f, &at)?;
                    self.notice(&at, "answers in flight are bounded by requests-in-flight");
                }
                "custom_process_funcion" => {
                    let name = self.string(f, &at)?;
                    if !name.is_empty() {
                        return Err(self.refuse(
                            &at,
                            format_args!(
                                "{name:?} would create a C++ IInferCustomProcessor, an \
                                 interface rstrtinfer does not load: name a parser function \
                                 (custom_parse_bbox_func, custom_parse_classifier_func) or \
                                 attach the raw outputs with output_tensor_meta"
                            ),
                        ));
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn input_control(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(
            m,
            parent,
            &["operate_on_class_ids"],
            &[&["interval", "secondary_reinfer_interval"]],
        )?;
        let ids: Vec<&Field> = m
            .fields
            .iter()
            .filter(|f| f.name == "operate_on_class_ids")
            .collect();
        if let Some(first) = ids.first() {
            let at = At::of(parent, first);
            let ids = ids
                .iter()
                .map(|f| self.int32(f, &At::of(parent, f)).map(|id| id.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            self.set(&at, "operate-on-class-ids", ids.join(";"))?;
        }
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                // PROCESS_MODE_DEFAULT is full frames in nvinferserver.
                "process_mode" => {
                    let mode = self.enumeration(
                        f,
                        &at,
                        &[
                            "PROCESS_MODE_DEFAULT",
                            "PROCESS_MODE_FULL_FRAME",
                            "PROCESS_MODE_CLIP_OBJECTS",
                        ],
                    )?;
                    let nick = ["primary", "primary", "secondary"][mode];
                    self.set(&at, "process-mode", nick)?;
                }
                "operate_on_gie_id" => {
                    let id = self.int32(f, &at)?;
                    self.set(&at, "operate-on-gie-id", id.to_string())?;
                }
                "operate_on_class_ids" => {}
                "interval" => {
                    let n = self.uint32(f, &at)?;
                    self.set(&at, "interval", n.to_string())?;
                }
                "secondary_reinfer_interval" => {
                    let n = self.uint32(f, &at)?;
                    self.set(&at, "secondary-reinfer-interval", n.to_string())?;
                }
                "async_mode" => {
                    if self.boolean(f, &at)? {
                        self.notice(
                            &at,
                            "results join the objects of the frame they were computed for; \
                             secondary-reinfer-interval reuses a tracked object's result",
                        );
                    }
                }
                "object_control" => {
                    let m = self.message(f, &at)?;
                    self.check(m, &at.name, &[], &[])?;
                    for f in &m.fields {
                        let inner = At::of(&at.name, f);
                        match f.name.as_str() {
                            "bbox_filter" => {
                                let limits = self.bbox_filter(self.message(f, &inner)?, &inner)?;
                                let keys = [
                                    "input-object-min-width",
                                    "input-object-min-height",
                                    "input-object-max-width",
                                    "input-object-max-height",
                                ];
                                for (key, (at, value)) in keys.into_iter().zip(limits) {
                                    if let Some(at) = at {
                                        self.set(&at, key, value.to_string())?;
                                    }
                                }
                            }
                            _ => self.unknown(&inner),
                        }
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    /// `min_width`, `min_height`, `max_width`, `max_height`: each with where it was given.
    fn bbox_filter(
        &mut self,
        m: &Message,
        filter: &At,
    ) -> Result<[(Option<At>, u32); 4], ConfigError> {
        self.check(m, &filter.name, &[], &[])?;
        const NAMES: [&str; 4] = ["min_width", "min_height", "max_width", "max_height"];
        let mut limits: [(Option<At>, u32); 4] = Default::default();
        for f in &m.fields {
            let at = At::of(&filter.name, f);
            match NAMES.iter().position(|n| *n == f.name) {
                Some(i) => limits[i] = (Some(at.clone()), self.uint32(f, &at)?),
                None => self.unknown(&at),
            }
        }
        Ok(limits)
    }

    fn output_control(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(m, parent, &[], &[])?;
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "output_tensor_meta" => {
                    let on = self.boolean(f, &at)?;
                    self.set(&at, "output-tensor-meta", on.to_string())?;
                }
                "detect_control" => self.detect_control(self.message(f, &at)?, &at.name)?,
                "classifier_type" => {
                    if !self.string(f, &at)?.is_empty() {
                        self.notice(
                            &at,
                            "rstrtinfer's classifications carry the component id \
                             (gie-unique-id) and labels, not a classifier type",
                        );
                    }
                }
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    fn detect_control(&mut self, m: &Message, parent: &str) -> Result<(), ConfigError> {
        self.check(
            m,
            parent,
            &["specific_class_filters", "filter_out_class_ids"],
            &[],
        )?;
        let ids: Vec<&Field> = m
            .fields
            .iter()
            .filter(|f| f.name == "filter_out_class_ids")
            .collect();
        if let Some(first) = ids.first() {
            let at = At::of(parent, first);
            let ids = ids
                .iter()
                .map(|f| {
                    self.integer(f, &At::of(parent, f), 0, i32::MAX.into())
                        .map(|id| id.to_string())
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.set(&at, "filter-out-class-ids", ids.join(";"))?;
        }
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "default_filter" => self.class_filter(self.message(f, &at)?, &at, None)?,
                "specific_class_filters" => {
                    let (class, value) = self.map_entry(self.message(f, &at)?, &at)?;
                    let class = match class {
                        Some((key, key_at)) => self.uint32(key, &key_at)?,
                        None => 0,
                    };
                    let empty = Message::default();
                    let (value, value_at) = match &value {
                        Some((value, value_at)) => (self.message(value, value_at)?, value_at),
                        None => (&empty, &at),
                    };
                    self.class_filter(value, value_at, Some(class))?;
                }
                "filter_out_class_ids" => {}
                _ => self.unknown(&at),
            }
        }
        Ok(())
    }

    /// A `DetectClassFilter` onto `[class-attrs-all]` (`class` `None`) or `[class-attrs-<class>]`.
    /// A class's filter replaces the default one in nvinferserver, so each of its limits is
    /// set, absent ones to 0 (no limit).
    fn class_filter(
        &mut self,
        m: &Message,
        filter: &At,
        class: Option<u32>,
    ) -> Result<(), ConfigError> {
        let parent = filter.name.as_str();
        self.check(m, parent, &[], &[])?;
        let mut limits: [(Option<At>, u32); 4] = Default::default();
        let mut offsets: [(Option<At>, u32); 2] = Default::default();
        for f in &m.fields {
            let at = At::of(parent, f);
            match f.name.as_str() {
                "bbox_filter" => limits = self.bbox_filter(self.message(f, &at)?, &at)?,
                "roi_top_offset" => offsets[0] = (Some(at.clone()), self.uint32(f, &at)?),
                "roi_bottom_offset" => offsets[1] = (Some(at.clone()), self.uint32(f, &at)?),
                "border_color" | "bg_color" => {
                    self.message(f, &at)?;
                    self.notice(
                        &at,
                        "colours are rsosd's (its configuration's per-class colours)",
                    );
                }
                _ => self.unknown(&at),
            }
        }
        let keys = [
            "detected-min-w",
            "detected-min-h",
            "detected-max-w",
            "detected-max-h",
            "roi-top-offset",
            "roi-bottom-offset",
        ];
        for (key, (at, value)) in keys.into_iter().zip(limits.into_iter().chain(offsets)) {
            let at = match (at, class) {
                (Some(at), _) => at,
                (None, Some(_)) => filter.clone(),
                (None, None) => continue,
            };
            self.set_class(class, &at, key, value.to_string())?;
        }
        Ok(())
    }

    /// What needs the whole file: the custom library and its functions, the input's dims.
    fn finish(&mut self) -> Result<(), ConfigError> {
        match (self.custom_lib.take(), self.parse_function.take()) {
            (Some((at, path)), Some(_)) => {
                // nvinferserver leaves a bare name to the dynamic loader's search path.
                if !path.contains('/') {
                    return Err(self.refuse(
                        &at,
                        format_args!(
                            "{path:?} names no directory, which nvinferserver leaves to the \
                             system's library search; rstrtinfer loads a file: give its path \
                             (absolute, or relative to this file)"
                        ),
                    ));
                }
                self.set(&at, "custom-lib-path", path)?;
            }
            (Some((at, _)), None) => self.notice(
                &at,
                "no custom_parse_*_func names a function in it (nvinferserver only preloads \
                 it)",
            ),
            (None, Some(at)) => {
                return Err(self.error(
                    &at,
                    "names a parser function, but `infer_config.custom_lib { path }` names no \
                     library",
                ));
            }
            (None, None) => {}
        }
        if let Some((at, dims)) = self.input_dims.take() {
            self.dims(&at, &dims)?;
        }
        Ok(())
    }

    /// `backend.inputs[].dims`, a fixed shape without the batch, as `infer-dims` (C;H;W) in the
    /// order `tensor_order` says.
    fn dims(&mut self, at: &At, dims: &[i64]) -> Result<(), ConfigError> {
        let &[a, b, c] = dims else {
            self.notice(
                at,
                format_args!(
                    "rstrtinfer's image input has 3 dims (C;H;W, infer-dims), these are {}",
                    dims.len()
                ),
            );
            return Ok(());
        };
        if dims.iter().any(|&d| d <= 0) {
            self.notice(
                at,
                "not a fixed shape: the server's metadata gives it (infer-dims fixes dynamic \
                 ones)",
            );
            return Ok(());
        }
        let channels = |d: i64| d == 1 || d == 3;
        let [ch, h, w] = match self.config.network_input_order {
            InputOrder::Nchw => [a, b, c],
            InputOrder::Nhwc => [c, a, b],
            InputOrder::Auto if channels(a) => [a, b, c],
            InputOrder::Auto if channels(c) => [c, a, b],
            InputOrder::Auto => {
                return Err(self.error(
                    at,
                    format_args!(
                        "cannot tell the channels of [{a}, {b}, {c}]: set \
                         preprocess.tensor_order"
                    ),
                ));
            }
        };
        self.set(at, "infer-dims", format!("{ch};{h};{w}"))
    }
}

/// A field of a message and where it is (a map entry's key or value).
type Part<'m> = Option<(&'m Field, At)>;

/// A section holding one `key=value` line, as the settings table reads files.
fn one_entry(section: &str, line: usize, key: &str, value: String) -> Section {
    Section {
        name: section.to_string(),
        line,
        entries: vec![Entry {
            key: key.to_string(),
            value,
            line,
        }],
    }
}

/// A settings table's error about `key`, renamed to the nvinferserver field it came from.
fn renamed(error: ConfigError, at: &At, key: &str) -> ConfigError {
    let prefix = format!("key `{key}`: ");
    let detail = error
        .message
        .strip_prefix(&prefix)
        .unwrap_or(&error.message);
    ConfigError {
        path: error.path,
        line: at.line,
        message: format!("field `{}` (rstrtinfer's {key}): {detail}", at.name),
    }
}

#[cfg(test)]
mod tests;
