// SPDX-License-Identifier: MIT OR Apache-2.0
//! ONNX's protobuf messages (`onnx.proto`, IR version 10), as far as Ferrostream reads or rewrites
//! them. Every field of IR version 10 is declared, so such a model decodes and encodes again
//! without losing anything (fields of later versions would be dropped: the FP16 conversion
//! refuses them); the messages Ferrostream never looks into (functions, training information,
//! sparse tensors, metadata, the non-tensor types) are kept as their encoded bytes, which is
//! what a length-delimited field is on the wire.

/// Encoded bytes of a message field Ferrostream does not look into.
type Opaque = Vec<u8>;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    #[prost(int64, optional, tag = "1")]
    pub ir_version: Option<i64>,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, optional, tag = "2")]
    pub producer_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub producer_version: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub domain: Option<String>,
    #[prost(int64, optional, tag = "5")]
    pub model_version: Option<i64>,
    #[prost(string, optional, tag = "6")]
    pub doc_string: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
    #[prost(bytes = "vec", repeated, tag = "20")]
    pub training_info: Vec<Opaque>,
    #[prost(bytes = "vec", repeated, tag = "25")]
    pub functions: Vec<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    #[prost(string, optional, tag = "1")]
    pub domain: Option<String>,
    #[prost(int64, optional, tag = "2")]
    pub version: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(bytes = "vec", repeated, tag = "15")]
    pub sparse_initializer: Vec<Opaque>,
    #[prost(string, optional, tag = "10")]
    pub doc_string: Option<String>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
    #[prost(bytes = "vec", repeated, tag = "14")]
    pub quantization_annotation: Vec<Opaque>,
    #[prost(bytes = "vec", repeated, tag = "16")]
    pub metadata_props: Vec<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub op_type: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub domain: Option<String>,
    #[prost(string, optional, tag = "8")]
    pub overload: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    #[prost(string, optional, tag = "6")]
    pub doc_string: Option<String>,
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub metadata_props: Vec<Opaque>,
}

impl ModelProto {
    /// A model of `graph` in the default ONNX domain at `opset`, IR version `ir_version` (tools
    /// and tests that write models).
    pub fn of_graph(graph: GraphProto, ir_version: i64, opset: i64) -> Self {
        ModelProto {
            ir_version: Some(ir_version),
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(opset),
            }],
            graph: Some(graph),
            ..Default::default()
        }
    }
}

impl NodeProto {
    /// A node of the default ONNX domain: operator `op` from `inputs` to `outputs`.
    pub fn new(op: &str, inputs: &[&str], outputs: &[&str]) -> Self {
        NodeProto {
            op_type: Some(op.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Whether the operator is of the default ONNX domain ("" or `ai.onnx`).
    pub fn is_onnx_operator(&self) -> bool {
        matches!(self.domain(), "" | "ai.onnx")
    }

    pub fn attribute(&self, name: &str) -> Option<&AttributeProto> {
        self.attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "21")]
    pub ref_attr_name: Option<String>,
    #[prost(string, optional, tag = "13")]
    pub doc_string: Option<String>,
    #[prost(int32, optional, tag = "20")]
    pub r#type: Option<i32>,
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    #[prost(bytes = "vec", optional, tag = "22")]
    pub sparse_tensor: Option<Opaque>,
    #[prost(bytes = "vec", optional, tag = "14")]
    pub tp: Option<Opaque>,
    #[prost(float, repeated, packed = "false", tag = "7")]
    pub floats: Vec<f32>,
    #[prost(int64, repeated, packed = "false", tag = "8")]
    pub ints: Vec<i64>,
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
    #[prost(bytes = "vec", repeated, tag = "23")]
    pub sparse_tensors: Vec<Opaque>,
    #[prost(bytes = "vec", repeated, tag = "15")]
    pub type_protos: Vec<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    #[prost(string, optional, tag = "3")]
    pub doc_string: Option<String>,
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub metadata_props: Vec<Opaque>,
}

impl ValueInfoProto {
    /// The element type when this is a tensor.
    pub fn elem_type(&self) -> Option<i32> {
        self.r#type.as_ref()?.tensor_type.as_ref()?.elem_type
    }

    /// Sets the element type when this is a tensor (nothing otherwise).
    pub fn set_elem_type(&mut self, elem_type: i32) {
        if let Some(tensor) = self.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
            tensor.elem_type = Some(elem_type);
        }
    }
}

/// A value's type: a tensor's element type and shape, or (kept encoded) any other kind. The
/// members of the format's `oneof` are separate fields here; at most one is present.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorType>,
    #[prost(bytes = "vec", optional, tag = "4")]
    pub sequence_type: Option<Opaque>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub map_type: Option<Opaque>,
    #[prost(bytes = "vec", optional, tag = "9")]
    pub optional_type: Option<Opaque>,
    #[prost(bytes = "vec", optional, tag = "8")]
    pub sparse_tensor_type: Option<Opaque>,
    #[prost(bytes = "vec", optional, tag = "7")]
    pub opaque_type: Option<Opaque>,
    #[prost(string, optional, tag = "6")]
    pub denotation: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorType {
    #[prost(int32, optional, tag = "1")]
    pub elem_type: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub shape: Option<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    #[prost(int32, optional, tag = "2")]
    pub data_type: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub segment: Option<Opaque>,
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    #[prost(string, optional, tag = "8")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "12")]
    pub doc_string: Option<String>,
    #[prost(bytes = "vec", optional, tag = "9")]
    pub raw_data: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    #[prost(int32, optional, tag = "14")]
    pub data_location: Option<i32>,
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    #[prost(bytes = "vec", repeated, tag = "16")]
    pub metadata_props: Vec<Opaque>,
}

/// `TensorProto.DataType` values Ferrostream uses.
pub mod data_type {
    pub const FLOAT: i32 = 1;
    pub const UINT8: i32 = 2;
    pub const INT8: i32 = 3;
    pub const INT32: i32 = 6;
    pub const INT64: i32 = 7;
    pub const BOOL: i32 = 9;
    pub const FLOAT16: i32 = 10;
}

/// `AttributeProto.AttributeType` values Ferrostream writes.
pub mod attribute_type {
    pub const INT: i32 = 2;
}

impl TensorProto {
    /// A scalar `int64` tensor named `name`.
    pub fn int64(name: &str, value: i64) -> Self {
        TensorProto {
            name: Some(name.into()),
            data_type: Some(data_type::INT64),
            raw_data: Some(value.to_le_bytes().to_vec()),
            ..Default::default()
        }
    }

    /// Whether the data lives in another file (`data_location = EXTERNAL`).
    pub fn is_external(&self) -> bool {
        self.data_location == Some(1) || !self.external_data.is_empty()
    }

    /// The values of a FLOAT tensor, from `raw_data` (little-endian) or `float_data`.
    pub fn f32_values(&self) -> Result<Vec<f32>, String> {
        if self.data_type != Some(data_type::FLOAT) {
            return Err(format!("tensor `{}` is not FLOAT", self.name()));
        }
        if self.is_external() {
            return Err(format!(
                "tensor `{}` keeps its data in an external file",
                self.name()
            ));
        }
        match &self.raw_data {
            Some(raw) if raw.len() % 4 != 0 => Err(format!(
                "tensor `{}` has {} bytes of FLOAT data, not a multiple of 4",
                self.name(),
                raw.len()
            )),
            Some(raw) => Ok(raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()),
            None => Ok(self.float_data.clone()),
        }
    }

    /// Replaces the data with `values` as FLOAT16 (little-endian `raw_data`).
    pub fn set_f16_values(&mut self, values: &[half::f16]) {
        self.data_type = Some(data_type::FLOAT16);
        self.float_data.clear();
        self.int32_data.clear();
        self.raw_data = Some(values.iter().flat_map(|v| v.to_le_bytes()).collect());
    }
}

/// Decodes a model file's bytes.
pub fn decode_model(bytes: &[u8]) -> Result<ModelProto, String> {
    <ModelProto as prost::Message>::decode(bytes)
        .map_err(|e| format!("the ONNX model cannot be parsed (protobuf: {e})"))
}

/// Encodes a model.
pub fn encode_model(model: &ModelProto) -> Vec<u8> {
    prost::Message::encode_to_vec(model)
}
