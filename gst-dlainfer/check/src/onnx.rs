// SPDX-License-Identifier: MIT OR Apache-2.0
//! A reader for the parts of ONNX model files (`onnx.proto`, protobuf wire format) that the DLA
//! checker needs: the graph, its nodes and attributes, value shapes, and the values of small
//! initializers (shape, axis and scale constants). Weights are described by their dims only.

use std::collections::HashMap;
use std::fmt;

/// Initializers with at most this many elements keep their values (shape arithmetic, scales).
const MAX_KEPT_VALUES: usize = 4096;

/// Why a file is not a readable ONNX model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a readable ONNX model: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

type Result<T> = std::result::Result<T, DecodeError>;

fn err<T>(m: impl Into<String>) -> Result<T> {
    Err(DecodeError(m.into()))
}

/// ONNX `TensorProto.DataType` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    Float,
    Uint8,
    Int8,
    Uint16,
    Int16,
    Int32,
    Int64,
    String,
    Bool,
    Float16,
    Double,
    Uint32,
    Uint64,
    Bfloat16,
    Other(i32),
}

impl DataType {
    pub fn from_onnx(v: i32) -> Self {
        match v {
            1 => Self::Float,
            2 => Self::Uint8,
            3 => Self::Int8,
            4 => Self::Uint16,
            5 => Self::Int16,
            6 => Self::Int32,
            7 => Self::Int64,
            8 => Self::String,
            9 => Self::Bool,
            10 => Self::Float16,
            11 => Self::Double,
            12 => Self::Uint32,
            13 => Self::Uint64,
            16 => Self::Bfloat16,
            other => Self::Other(other),
        }
    }

    /// Floating-point types, which a DLA build computes in FP16 or INT8.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Self::Float | Self::Float16 | Self::Double | Self::Bfloat16
        )
    }

    pub fn name(self) -> String {
        match self {
            Self::Other(v) => format!("type {v}"),
            other => format!("{other:?}").to_lowercase(),
        }
    }
}

/// One dimension of a declared shape: a size, or a named (dynamic) dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimDecl {
    Value(i64),
    Param(String),
    Unknown,
}

/// A declared graph input, output or intermediate value.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueInfo {
    pub name: String,
    pub elem_type: Option<DataType>,
    /// `None` when the rank is not declared.
    pub shape: Option<Vec<DimDecl>>,
}

/// A constant tensor: dims, type, and the values of small ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub dims: Vec<i64>,
    pub data_type: DataType,
    /// The values as f64 (integers up to 2^53 are exact), when the tensor is small and stored
    /// in the file.
    pub values: Option<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Float(f32),
    Int(i64),
    String(Vec<u8>),
    Tensor(Tensor),
    Graph(Graph),
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Strings(Vec<Vec<u8>>),
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub op_type: String,
    pub domain: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attributes: HashMap<String, AttrValue>,
}

impl Node {
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.attributes.get(name)? {
            AttrValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> Option<f32> {
        match self.attributes.get(name)? {
            AttrValue::Float(v) => Some(*v),
            _ => None,
        }
    }

    pub fn ints(&self, name: &str) -> Option<&[i64]> {
        match self.attributes.get(name)? {
            AttrValue::Ints(v) => Some(v),
            _ => None,
        }
    }

    /// A per-axis integer list (strides, dilations, pads), or `len` copies of `default`.
    pub fn ints_or(&self, name: &str, len: usize, default: i64) -> Vec<i64> {
        self.ints(name)
            .map(<[i64]>::to_vec)
            .unwrap_or_else(|| vec![default; len])
    }

    pub fn string(&self, name: &str) -> Option<String> {
        match self.attributes.get(name)? {
            AttrValue::String(v) => Some(String::from_utf8_lossy(v).into_owned()),
            _ => None,
        }
    }

    pub fn graph(&self, name: &str) -> Option<&Graph> {
        match self.attributes.get(name)? {
            AttrValue::Graph(g) => Some(g),
            _ => None,
        }
    }

    /// The node's name, or its first output when it has none.
    pub fn label(&self) -> &str {
        if self.name.is_empty() {
            self.outputs.first().map_or("", String::as_str)
        } else {
            &self.name
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    pub name: String,
    pub nodes: Vec<Node>,
    pub initializers: Vec<Tensor>,
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<ValueInfo>,
    pub value_info: Vec<ValueInfo>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    pub ir_version: i64,
    /// (domain, version); the default domain is "".
    pub opsets: Vec<(String, i64)>,
    pub producer: String,
    pub graph: Graph,
}

impl Model {
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut model = Model::default();
        let mut has_graph = false;
        for field in Fields::new(bytes) {
            let (number, value) = field?;
            match number {
                1 => model.ir_version = value.int()?,
                2 => model.producer = value.string()?,
                7 => {
                    model.graph = decode_graph(value.bytes()?)?;
                    has_graph = true;
                }
                8 => {
                    let mut domain = String::new();
                    let mut version = 0;
                    for f in Fields::new(value.bytes()?) {
                        match f? {
                            (1, v) => domain = v.string()?,
                            (2, v) => version = v.int()?,
                            _ => {}
                        }
                    }
                    model.opsets.push((domain, version));
                }
                _ => {}
            }
        }
        if !has_graph {
            return err("no graph (field 7 of ModelProto is missing)");
        }
        Ok(model)
    }

    /// The default-domain opset version.
    pub fn opset(&self) -> i64 {
        self.opsets
            .iter()
            .find(|(d, _)| d.is_empty() || d == "ai.onnx")
            .map_or(0, |(_, v)| *v)
    }
}

fn decode_graph(bytes: &[u8]) -> Result<Graph> {
    let mut g = Graph::default();
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => g.nodes.push(decode_node(value.bytes()?)?),
            2 => g.name = value.string()?,
            5 => g.initializers.push(decode_tensor(value.bytes()?)?),
            11 => g.inputs.push(decode_value_info(value.bytes()?)?),
            12 => g.outputs.push(decode_value_info(value.bytes()?)?),
            13 => g.value_info.push(decode_value_info(value.bytes()?)?),
            _ => {}
        }
    }
    Ok(g)
}

fn decode_node(bytes: &[u8]) -> Result<Node> {
    let mut n = Node {
        name: String::new(),
        op_type: String::new(),
        domain: String::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: HashMap::new(),
    };
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => n.inputs.push(value.string()?),
            2 => n.outputs.push(value.string()?),
            3 => n.name = value.string()?,
            4 => n.op_type = value.string()?,
            7 => n.domain = value.string()?,
            5 => {
                let (name, attr) = decode_attribute(value.bytes()?)?;
                n.attributes.insert(name, attr);
            }
            _ => {}
        }
    }
    if n.op_type.is_empty() {
        return err(format!("node {:?} has no op_type", n.name));
    }
    Ok(n)
}

fn decode_attribute(bytes: &[u8]) -> Result<(String, AttrValue)> {
    let mut name = String::new();
    let mut kind = 0;
    let (mut f, mut i, mut s, mut t, mut g) = (None, None, None, None, None);
    let (mut floats, mut ints, mut strings) = (Vec::new(), Vec::new(), Vec::new());
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => name = value.string()?,
            20 => kind = value.int()?,
            2 => f = Some(value.float()?),
            3 => i = Some(value.int()?),
            4 => s = Some(value.bytes()?.to_vec()),
            5 => t = Some(decode_tensor(value.bytes()?)?),
            6 => g = Some(decode_graph(value.bytes()?)?),
            7 => value.floats_into(&mut floats)?,
            8 => value.ints_into(&mut ints)?,
            9 => strings.push(value.bytes()?.to_vec()),
            _ => {}
        }
    }
    // AttributeProto.AttributeType; files from old exporters may leave it out.
    let value = match kind {
        1 => f.map(AttrValue::Float),
        2 => i.map(AttrValue::Int),
        3 => s.map(AttrValue::String),
        4 => t.map(AttrValue::Tensor),
        5 => g.map(AttrValue::Graph),
        6 => Some(AttrValue::Floats(floats)),
        7 => Some(AttrValue::Ints(ints)),
        8 => Some(AttrValue::Strings(strings)),
        0 => f
            .map(AttrValue::Float)
            .or(i.map(AttrValue::Int))
            .or(s.map(AttrValue::String))
            .or(t.map(AttrValue::Tensor))
            .or(g.map(AttrValue::Graph))
            .or((!ints.is_empty()).then_some(AttrValue::Ints(ints)))
            .or((!floats.is_empty()).then_some(AttrValue::Floats(floats))),
        _ => Some(AttrValue::Other),
    };
    Ok((name, value.unwrap_or(AttrValue::Other)))
}

fn decode_value_info(bytes: &[u8]) -> Result<ValueInfo> {
    let mut info = ValueInfo {
        name: String::new(),
        elem_type: None,
        shape: None,
    };
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => info.name = value.string()?,
            // TypeProto.tensor_type
            2 => {
                for f in Fields::new(value.bytes()?) {
                    if let (1, tensor_type) = f? {
                        for f in Fields::new(tensor_type.bytes()?) {
                            match f? {
                                (1, v) => {
                                    info.elem_type = Some(DataType::from_onnx(v.int()? as i32))
                                }
                                (2, v) => info.shape = Some(decode_shape(v.bytes()?)?),
                                _ => {}
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

fn decode_shape(bytes: &[u8]) -> Result<Vec<DimDecl>> {
    let mut dims = Vec::new();
    for field in Fields::new(bytes) {
        if let (1, dim) = field? {
            let mut d = DimDecl::Unknown;
            for f in Fields::new(dim.bytes()?) {
                match f? {
                    (1, v) => d = DimDecl::Value(v.int()?),
                    (2, v) => d = DimDecl::Param(v.string()?),
                    _ => {}
                }
            }
            dims.push(d);
        }
    }
    Ok(dims)
}

fn decode_tensor(bytes: &[u8]) -> Result<Tensor> {
    let mut dims = Vec::new();
    let mut data_type = 0;
    let mut name = String::new();
    let mut raw: Option<&[u8]> = None;
    let (mut floats, mut ints, mut doubles) = (Vec::new(), Vec::new(), Vec::new());
    let mut external = false;
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => value.ints_into(&mut dims)?,
            2 => data_type = value.int()? as i32,
            4 => value.floats_into(&mut floats)?,
            5 | 7 | 11 => value.ints_into(&mut ints)?,
            8 => name = value.string()?,
            9 => raw = Some(value.bytes()?),
            10 => value.doubles_into(&mut doubles)?,
            14 => external = value.int()? == 1,
            _ => {}
        }
    }
    let data_type = DataType::from_onnx(data_type);
    let count = dims.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    });
    let values = match count {
        Some(n) if n <= MAX_KEPT_VALUES && !external => match raw {
            Some(raw) => raw_values(raw, data_type, n),
            None if !floats.is_empty() => Some(floats.iter().map(|&v| v as f64).collect()),
            None if !doubles.is_empty() => Some(doubles),
            None if !ints.is_empty() => match data_type {
                // int32_data also carries float16 bits and small integer types.
                DataType::Float16 => Some(
                    ints.iter()
                        .map(|&v| half::f16::from_bits(v as u16).to_f64())
                        .collect(),
                ),
                _ => Some(ints.iter().map(|&v| v as f64).collect()),
            },
            None if n == 0 => Some(Vec::new()),
            None => None,
        },
        _ => None,
    };
    Ok(Tensor {
        name,
        dims,
        data_type,
        values: values.filter(|v| Some(v.len()) == count),
    })
}

/// Little-endian raw data of `n` elements.
fn raw_values(raw: &[u8], ty: DataType, n: usize) -> Option<Vec<f64>> {
    fn each<const N: usize>(raw: &[u8], f: impl Fn([u8; N]) -> f64) -> Vec<f64> {
        raw.chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks of N")))
            .collect()
    }
    let v = match ty {
        DataType::Float => each(raw, |b| f32::from_le_bytes(b) as f64),
        DataType::Double => each(raw, f64::from_le_bytes),
        DataType::Float16 => each(raw, |b| half::f16::from_le_bytes(b).to_f64()),
        DataType::Int64 => each(raw, |b| i64::from_le_bytes(b) as f64),
        DataType::Uint64 => each(raw, |b| u64::from_le_bytes(b) as f64),
        DataType::Int32 => each(raw, |b| i32::from_le_bytes(b) as f64),
        DataType::Uint32 => each(raw, |b| u32::from_le_bytes(b) as f64),
        DataType::Int16 => each(raw, |b| i16::from_le_bytes(b) as f64),
        DataType::Uint16 => each(raw, |b| u16::from_le_bytes(b) as f64),
        DataType::Int8 => each(raw, |b: [u8; 1]| b[0] as i8 as f64),
        DataType::Uint8 | DataType::Bool => each(raw, |b: [u8; 1]| b[0] as f64),
        _ => return None,
    };
    (v.len() == n).then_some(v)
}

/// One field's payload in the protobuf wire format.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    fn int(self) -> Result<i64> {
        match self {
            Value::Varint(v) => Ok(v as i64),
            other => err(format!("expected an integer, found {other:?}")),
        }
    }

    fn float(self) -> Result<f32> {
        match self {
            Value::Fixed32(b) => Ok(f32::from_le_bytes(b)),
            other => err(format!("expected a float, found {other:?}")),
        }
    }

    fn bytes(self) -> Result<&'a [u8]> {
        match self {
            Value::Bytes(b) => Ok(b),
            other => err(format!(
                "expected a length-delimited field, found {other:?}"
            )),
        }
    }

    fn string(self) -> Result<String> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }

    /// A repeated integer field: one value, or a packed run.
    fn ints_into(self, out: &mut Vec<i64>) -> Result<()> {
        match self {
            Value::Varint(v) => out.push(v as i64),
            Value::Bytes(mut b) => {
                while !b.is_empty() {
                    out.push(varint(&mut b)? as i64);
                }
            }
            other => return err(format!("expected integers, found {other:?}")),
        }
        Ok(())
    }

    fn floats_into(self, out: &mut Vec<f32>) -> Result<()> {
        match self {
            Value::Fixed32(b) => out.push(f32::from_le_bytes(b)),
            Value::Bytes(b) if b.len() % 4 == 0 => out.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))),
            ),
            other => return err(format!("expected floats, found {other:?}")),
        }
        Ok(())
    }

    fn doubles_into(self, out: &mut Vec<f64>) -> Result<()> {
        match self {
            Value::Fixed64(b) => out.push(f64::from_le_bytes(b)),
            Value::Bytes(b) if b.len() % 8 == 0 => out.extend(
                b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))),
            ),
            other => return err(format!("expected doubles, found {other:?}")),
        }
        Ok(())
    }
}

fn varint(b: &mut &[u8]) -> Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = b.split_first() else {
            return err("truncated varint");
        };
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    err("varint longer than 10 bytes")
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if b.len() < n {
        return err(format!(
            "field of {n} bytes runs past the end ({} left)",
            b.len()
        ));
    }
    let (head, rest) = b.split_at(n);
    *b = rest;
    Ok(head)
}

/// The fields of one message, in file order.
struct Fields<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            failed: false,
        }
    }

    fn field(&mut self) -> Result<(u32, Value<'a>)> {
        let key = varint(&mut self.rest)?;
        let number = (key >> 3) as u32;
        let value = match key & 7 {
            0 => Value::Varint(varint(&mut self.rest)?),
            1 => Value::Fixed64(take(&mut self.rest, 8)?.try_into().expect("8 bytes")),
            2 => {
                let len = usize::try_from(varint(&mut self.rest)?)
                    .map_err(|_| DecodeError("length does not fit in memory".into()))?;
                Value::Bytes(take(&mut self.rest, len)?)
            }
            5 => Value::Fixed32(take(&mut self.rest, 4)?.try_into().expect("4 bytes")),
            wire => return err(format!("field {number} has unsupported wire type {wire}")),
        };
        if number == 0 {
            return err("field number 0");
        }
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Protobuf encoding helpers for hand-made messages.
    fn key(number: u32, wire: u8) -> Vec<u8> {
        enc_varint(((number as u64) << 3) | wire as u64)
    }
    fn enc_varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }
    fn bytes_field(number: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = key(number, 2);
        out.extend(enc_varint(payload.len() as u64));
        out.extend(payload);
        out
    }
    fn int_field(number: u32, v: i64) -> Vec<u8> {
        let mut out = key(number, 0);
        out.extend(enc_varint(v as u64));
        out
    }

    #[test]
    fn decodes_a_hand_made_model() {
        // Conv node with kernel_shape=[3,3] (unpacked) and strides=[2,2] (packed).
        let mut attr_kernel = bytes_field(1, b"kernel_shape");
        attr_kernel.extend(int_field(20, 7));
        attr_kernel.extend(int_field(8, 3));
        attr_kernel.extend(int_field(8, 3));
        let mut attr_strides = bytes_field(1, b"strides");
        attr_strides.extend(int_field(20, 7));
        attr_strides.extend(bytes_field(8, &[2, 2]));
        let mut node = bytes_field(1, b"x");
        node.extend(bytes_field(1, b"w"));
        node.extend(bytes_field(2, b"y"));
        node.extend(bytes_field(4, b"Conv"));
        node.extend(bytes_field(5, &attr_kernel));
        node.extend(bytes_field(5, &attr_strides));
        // Initializer w: float [2,1,3,3] as raw data; shape constant int64 [2] as int64_data.
        let mut w = int_field(1, 2);
        w.extend(int_field(1, 1));
        w.extend(int_field(1, 3));
        w.extend(int_field(1, 3));
        w.extend(int_field(2, 1));
        w.extend(bytes_field(8, b"w"));
        w.extend(bytes_field(9, &[0u8; 72]));
        let mut s = int_field(1, 2);
        s.extend(int_field(2, 7));
        s.extend(bytes_field(8, b"s"));
        s.extend(bytes_field(
            7,
            &[&enc_varint(4)[..], &enc_varint(u64::MAX)[..]].concat(),
        ));
        // Input x: float [N,1,8,8].
        let dim = |d: Vec<u8>| bytes_field(1, &d);
        let shape = [
            dim(bytes_field(2, b"N")),
            dim(int_field(1, 1)),
            dim(int_field(1, 8)),
            dim(int_field(1, 8)),
        ]
        .concat();
        let mut tensor_type = int_field(1, 1);
        tensor_type.extend(bytes_field(2, &shape));
        let mut input = bytes_field(1, b"x");
        input.extend(bytes_field(2, &bytes_field(1, &tensor_type)));
        let mut graph = bytes_field(1, &node);
        graph.extend(bytes_field(5, &w));
        graph.extend(bytes_field(5, &s));
        graph.extend(bytes_field(11, &input));
        let mut model = int_field(1, 8);
        model.extend(bytes_field(8, &int_field(2, 13)));
        model.extend(bytes_field(7, &graph));

        let m = Model::decode(&model).unwrap();
        assert_eq!(m.opset(), 13);
        let conv = &m.graph.nodes[0];
        assert_eq!(conv.op_type, "Conv");
        assert_eq!(conv.inputs, ["x", "w"]);
        assert_eq!(conv.ints("kernel_shape"), Some(&[3, 3][..]));
        assert_eq!(conv.ints("strides"), Some(&[2, 2][..]));
        assert_eq!(m.graph.initializers[0].dims, [2, 1, 3, 3]);
        assert_eq!(m.graph.initializers[0].values.as_ref().unwrap().len(), 18);
        assert_eq!(m.graph.initializers[1].values, Some(vec![4.0, -1.0]));
        let x = &m.graph.inputs[0];
        assert_eq!(x.elem_type, Some(DataType::Float));
        assert_eq!(
            x.shape.as_ref().unwrap()[..2],
            [DimDecl::Param("N".into()), DimDecl::Value(1)]
        );
    }

    #[test]
    fn corrupt_input_is_an_error_not_a_panic() {
        assert!(Model::decode(b"").is_err());
        // A length running past the end.
        assert!(Model::decode(&[0x3a, 0x10, 1, 2]).is_err());
        // A truncated varint.
        assert!(Model::decode(&[0x08, 0x80]).is_err());
        // Text is not a model.
        let e = Model::decode(b"hello world, not protobuf").unwrap_err();
        assert!(
            e.to_string().starts_with("not a readable ONNX model"),
            "{e}"
        );
    }
}
