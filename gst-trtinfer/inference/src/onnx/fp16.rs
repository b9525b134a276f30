// SPDX-License-Identifier: MIT OR Apache-2.0
//! FP32 to FP16 conversion of an ONNX graph, for engines (ONNX Runtime's CUDA provider) that run
//! a model at the precision its graph has.
//!
//! The rule, node by node of the main graph in its (topological) order:
//! - **Heavy** operators, where the time goes (convolutions, matrix products, normalisation,
//!   pooling, resizing, softmax), compute in FP16 whenever their float inputs are FP32 tensors.
//! - **Light** operators (element-wise arithmetic, activations, comparisons, data movement)
//!   follow their inputs: FP16 when every non-constant float input already is FP16, FP32
//!   otherwise. The backbone between heavy operators thus stays FP16 without a cast, while shape
//!   arithmetic and post-processing fed by FP32 producers stay FP32.
//! - **Kept** operators stay FP32, each for a reason ([`KEPT`]): shape arithmetic and counting
//!   (`Range`, `CumSum`, `ConstantOfShape`), selection whose order must not change (`TopK`,
//!   `NonMaxSuppression`, whose inputs the specification requires to be FP32 anyway), sums and
//!   powers that overflow FP16's 65504 (the `Reduce*` family but `ReduceMax`/`ReduceMin`, `Exp`,
//!   `Pow`, `Softplus`), logarithms and reciprocals that underflow (`Log`, `Reciprocal`), and
//!   trigonometry of positions (`Sin`, `Cos`: FP16 arguments above 2048 are not exact). So are
//!   control flow (`Loop`, `If`, `Scan`: their subgraphs keep their types), operators of other
//!   domains and every operator this module does not know.
//! - Inputs that are not float data (`Resize` scales and sizes, `Reshape`'s shape, indices,
//!   masks) are never touched: each operator lists which of its inputs carry the float data.
//! - `Cast` to FLOAT of an FP16 tensor casts to FLOAT16 instead, so casts stay consistent with
//!   what their producers now compute.
//!
//! Where a tensor's producer and a consumer disagree, one `Cast` per tensor and direction is
//! inserted before the first consumer that needs it (subgraphs reading an outer tensor by name
//! included). FP32 constants (initializers, `Constant` nodes) needed in FP16 are converted once,
//! values clamped to FP16's finite range. The graph's FP32 inputs become FP16 (the
//! pre-processing writes FP16 directly) and its outputs have the type their producer computes.
//! A tensor's type is only ever changed where it is known to be FP32 (declared, an initializer,
//! or derived from a known input type), so integer and boolean tensors are never touched.

use std::collections::{HashMap, HashSet};

use super::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto, attribute_type,
    data_type,
};

/// Version of the conversion rules: change it with any change to how operators are classed
/// ([`KEPT`] and `class`), so converted models and the TensorRT engines built from them are
/// made again ([`rules_digest`] keys both caches).
pub const CONVERTER_VERSION: &str = "fp16-2";

/// Operators that stay FP32, and why.
pub const KEPT: &[(&str, &str)] = &[
    (
        "Range",
        "shape arithmetic: FP16 counts are not exact above 2048",
    ),
    ("CumSum", "running sums overflow FP16"),
    ("ConstantOfShape", "produces the type its attribute names"),
    ("TopK", "selection: FP16 ties would change the order"),
    (
        "NonMaxSuppression",
        "selection; its boxes and scores are FP32 by the specification",
    ),
    ("ReduceSum", "sums overflow FP16"),
    ("ReduceSumSquare", "sums of squares overflow FP16"),
    ("ReduceMean", "its sum overflows FP16 before the division"),
    ("ReduceL1", "sums overflow FP16"),
    ("ReduceL2", "sums of squares overflow FP16"),
    ("ReduceLogSum", "sums overflow FP16"),
    ("ReduceLogSumExp", "exponentials overflow FP16"),
    ("ReduceProd", "products overflow FP16"),
    ("Exp", "overflows FP16 above e^11"),
    (
        "Pow",
        "overflows FP16 (variances of decomposed normalisations)",
    ),
    ("Softplus", "exponential inside overflows FP16"),
    (
        "Log",
        "underflow: log of FP16-rounded small values goes to -inf",
    ),
    ("Reciprocal", "overflows FP16 for inputs below 1.5e-5"),
    ("Sin", "positional encodings: FP16 arguments are not exact"),
    (
        "GridSample",
        "ONNX Runtime's CUDA kernel computes FP32 only (an FP16 one would run on the CPU)",
    ),
    ("Celu", "the specification allows FP32 only"),
    ("Cos", "positional encodings: FP16 arguments are not exact"),
    ("Loop", "control flow: the subgraph keeps its types"),
    ("If", "control flow: the subgraphs keep their types"),
    ("Scan", "control flow: the subgraph keeps its types"),
];

/// How an operator is converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Computes in FP16 whenever its float data is FP32.
    Heavy(Data),
    /// FP16 when its non-constant float data already is.
    Light(Data),
    /// Reads only its input's shape or size: any precision, no cast.
    Shape,
    /// `Cast`: any input; to FLOAT becomes to FLOAT16 for an FP16 input.
    Cast,
    /// Stays FP32.
    Kept,
}

/// Which inputs and outputs of an operator carry its float data (the type `T` of the
/// specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Data {
    inputs: Inputs,
    /// Outputs of type `T`: all, or only the first.
    first_output_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inputs {
    All,
    Only(&'static [usize]),
}

impl Inputs {
    fn contains(self, index: usize) -> bool {
        match self {
            Inputs::All => true,
            Inputs::Only(list) => list.contains(&index),
        }
    }
}

const fn data(inputs: &'static [usize]) -> Data {
    Data {
        inputs: Inputs::Only(inputs),
        first_output_only: false,
    }
}

const ALL: Data = Data {
    inputs: Inputs::All,
    first_output_only: false,
};

fn class(node: &NodeProto) -> Class {
    if !node.is_onnx_operator() {
        return Class::Kept;
    }
    let first_out = |inputs| Data {
        inputs,
        first_output_only: true,
    };
    match node.op_type() {
        "Conv" | "ConvTranspose" | "Gemm" | "InstanceNormalization" | "GroupNormalization" => {
            Class::Heavy(data(&[0, 1, 2]))
        }
        "MatMul" => Class::Heavy(data(&[0, 1])),
        "BatchNormalization" => Class::Heavy(data(&[0, 1, 2, 3, 4])),
        // Mean and inverse standard deviation are of the stash type (FP32).
        "LayerNormalization" => Class::Heavy(first_out(Inputs::Only(&[0, 1, 2]))),
        // MaxPool's second output is the indices.
        "MaxPool" => Class::Heavy(first_out(Inputs::Only(&[0]))),
        "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" | "LpPool" | "Softmax"
        | "LogSoftmax" | "Upsample" => Class::Heavy(data(&[0])),
        // Only the data: roi and scales keep their type (scales must be FP32), sizes are int64.
        "Resize" => Class::Heavy(data(&[0])),
        "Einsum" => Class::Heavy(ALL),
        "Add" | "Sub" | "Mul" | "Div" | "Max" | "Min" | "Sum" | "Mean" | "Concat" | "Clip"
        | "PRelu" | "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" => {
            Class::Light(ALL)
        }
        "Relu" | "LeakyRelu" | "Sigmoid" | "HardSigmoid" | "HardSwish" | "Tanh" | "Elu"
        | "Selu" | "Softsign" | "Mish" | "Gelu" | "Erf" | "Neg" | "Abs" | "Sqrt" | "Floor"
        | "Ceil" | "Round" | "Sign" | "Reshape" | "Transpose" | "Squeeze" | "Unsqueeze"
        | "Flatten" | "Identity" | "Slice" | "Gather" | "GatherElements" | "GatherND" | "Split"
        | "Expand" | "Tile" | "DepthToSpace" | "SpaceToDepth" | "ArgMax" | "ArgMin"
        | "ReduceMax" | "ReduceMin" => Class::Light(data(&[0])),
        "Pad" => Class::Light(data(&[0, 2])),
        "Where" => Class::Light(data(&[1, 2])),
        "Dropout" => Class::Light(first_out(Inputs::Only(&[0]))),
        "Shape" | "Size" => Class::Shape,
        "Cast" => Class::Cast,
        _ => Class::Kept,
    }
}

/// The element type of output `index` of `node`, given its inputs' known types.
fn output_type(
    node: &NodeProto,
    index: usize,
    input: impl Fn(usize) -> Option<i32>,
) -> Option<i32> {
    use data_type::*;
    let attr_int = |name: &str| node.attribute(name).and_then(|a| a.i).map(|i| i as i32);
    match (node.op_type(), index) {
        ("Shape" | "Size" | "NonZero" | "ArgMax" | "ArgMin" | "NonMaxSuppression", _) => {
            Some(INT64)
        }
        ("TopK" | "MaxPool" | "Unique", i) if i > 0 => Some(INT64),
        ("Dropout", 1) => Some(BOOL),
        (
            "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "Not" | "And" | "Or"
            | "Xor" | "IsNaN" | "IsInf",
            _,
        ) => Some(BOOL),
        ("Cast", _) => attr_int("to"),
        ("CastLike", _) => input(1),
        ("LayerNormalization", i) if i > 0 => attr_int("stash_type").or(Some(FLOAT)),
        ("Constant", _) => {
            let a = |name| node.attribute(name);
            if let Some(t) = a("value").and_then(|a| a.t.as_ref()) {
                t.data_type
            } else if a("value_float").is_some() || a("value_floats").is_some() {
                Some(FLOAT)
            } else if a("value_int").is_some() || a("value_ints").is_some() {
                Some(INT64)
            } else {
                None
            }
        }
        ("ConstantOfShape", _) => Some(
            node.attribute("value")
                .and_then(|a| a.t.as_ref())
                .and_then(|t| t.data_type)
                .unwrap_or(FLOAT),
        ),
        ("QuantizeLinear", _) => input(2).or(Some(UINT8)),
        ("DequantizeLinear", _) => input(1),
        ("Where", _) => input(1),
        ("OneHot", _) => input(2),
        ("EyeLike" | "RandomNormalLike" | "RandomUniformLike", _) => attr_int("dtype").or(input(0)),
        ("RandomNormal" | "RandomUniform", _) => attr_int("dtype").or(Some(FLOAT)),
        ("Loop" | "If" | "Scan" | "Multinomial", _) => None,
        // Sequences and optionals are not tensors.
        (op, _) if op.contains("Sequence") || op.starts_with("Optional") => None,
        _ if !node.is_onnx_operator() => None,
        _ => input(0),
    }
}

/// What the conversion did, for the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Nodes now computing in FP16.
    pub converted: usize,
    /// Nodes with FP32 data left in FP32, by operator.
    pub kept: Vec<(String, usize)>,
    /// Casts inserted.
    pub casts: usize,
    /// Constants stored in FP16.
    pub constants: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} nodes in FP16, {} casts, {} constants converted",
            self.converted, self.casts, self.constants
        )?;
        if !self.kept.is_empty() {
            let kept: Vec<String> = self
                .kept
                .iter()
                .map(|(op, n)| format!("{op} x{n}"))
                .collect();
            write!(f, "; kept in FP32: {}", kept.join(", "))?;
        }
        Ok(())
    }
}

/// Precision of a tensor after conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Precision {
    F32,
    F16,
}

/// Converts `model` to FP16 in place (see the module's documentation).
pub fn convert(model: &mut ModelProto) -> Result<Report, String> {
    check_versions(model)?;
    let graph = model
        .graph
        .as_mut()
        .ok_or_else(|| "the model has no graph".to_string())?;
    Converter::new(graph)?.run(graph)
}

/// Where an FP32 constant is: an initializer (its index), or a `Constant` node's `value`.
#[derive(Debug, Clone, Copy)]
enum Source {
    Initializer(usize),
    Node,
}

/// The conversion of one graph: what is known before the walk over its nodes, and what the
/// walk builds.
struct Converter {
    /// Known element types by tensor name (before conversion).
    types: HashMap<String, i32>,
    /// FP32 constants by tensor name.
    constants: HashMap<String, Source>,
    /// Every name in use, for fresh names.
    names: HashSet<String>,
    /// Graph inputs (which are not initializers).
    inputs: HashSet<String>,
    /// The graph's initializers, taken for the walk (read in place, never copied whole).
    initializers: Vec<TensorProto>,
    /// The converted nodes so far, and where each `Constant` node's output landed among them.
    nodes: Vec<NodeProto>,
    constant_nodes: HashMap<String, usize>,
    /// Precision of every FP32 tensor produced so far (graph inputs: FP16).
    precision: HashMap<String, Precision>,
    /// Casts made so far: (tensor, target) -> name.
    casts: HashMap<(String, Precision), String>,
    /// FP16 copies of constants: name -> name of the FP16 initializer.
    f16_constants: HashMap<String, String>,
    new_initializers: Vec<TensorProto>,
    report: Report,
}

impl Converter {
    fn new(graph: &GraphProto) -> Result<Self, String> {
        check_order(graph)?;
        let mut types = HashMap::new();
        let mut names = HashSet::new();
        for vi in graph
            .input
            .iter()
            .chain(&graph.value_info)
            .chain(&graph.output)
        {
            names.insert(vi.name().to_owned());
            if let Some(t) = vi.elem_type() {
                types.insert(vi.name().to_owned(), t);
            }
        }
        let mut constants = HashMap::new();
        for (index, init) in graph.initializer.iter().enumerate() {
            if init.is_external() {
                return Err(format!(
                    "initializer `{}` keeps its data in an external file; give the model as one \
                     file",
                    init.name()
                ));
            }
            names.insert(init.name().to_owned());
            if let Some(t) = init.data_type {
                types.insert(init.name().to_owned(), t);
            }
            if init.data_type == Some(data_type::FLOAT) {
                constants.insert(init.name().to_owned(), Source::Initializer(index));
            }
        }
        let inputs = graph
            .input
            .iter()
            .map(|vi| vi.name().to_owned())
            .filter(|n| !constants.contains_key(n))
            .collect();
        collect_names(graph, &mut names);
        for node in &graph.node {
            if node.op_type() == "Constant"
                && node.is_onnx_operator()
                && let [output] = node.output.as_slice()
                && let Some(t) = node.attribute("value").and_then(|a| a.t.as_ref())
                && t.data_type == Some(data_type::FLOAT)
                && !t.is_external()
            {
                constants.insert(output.clone(), Source::Node);
            }
        }
        Ok(Self {
            types,
            constants,
            names,
            inputs,
            initializers: Vec::new(),
            nodes: Vec::with_capacity(graph.node.len()),
            constant_nodes: HashMap::new(),
            precision: HashMap::new(),
            casts: HashMap::new(),
            f16_constants: HashMap::new(),
            new_initializers: Vec::new(),
            report: Report::default(),
        })
    }

    fn fresh_name(&mut self, base: &str) -> String {
        let mut name = base.to_owned();
        let mut n = 1;
        while self.names.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.names.insert(name.clone());
        name
    }

    fn is_f32(&self, name: &str) -> bool {
        self.types.get(name) == Some(&data_type::FLOAT)
    }

    fn run(mut self, graph: &mut GraphProto) -> Result<Report, String> {
        let mut kept: HashMap<String, usize> = HashMap::new();
        for name in &self.inputs {
            if self.types.get(name) == Some(&data_type::FLOAT) {
                self.precision.insert(name.clone(), Precision::F16);
            }
        }
        self.initializers = std::mem::take(&mut graph.initializer);
        let old_nodes = std::mem::take(&mut graph.node);
        for mut node in old_nodes {
            // Types of the outputs, from the inputs' known types.
            let out_types: Vec<Option<i32>> = (0..node.output.len())
                .map(|i| output_type(&node, i, |k| self.input_type(&node, k)))
                .collect();
            let class = class(&node);
            // Which inputs are FP32 float data of this node.
            let data_inputs: Vec<usize> = match class {
                Class::Heavy(d) | Class::Light(d) => (0..node.input.len())
                    .filter(|&i| d.inputs.contains(i) && !node.input[i].is_empty())
                    .collect(),
                _ => Vec::new(),
            };
            let all_f32 = data_inputs.iter().all(|&i| self.is_f32(&node.input[i]));
            let target = match class {
                Class::Heavy(_) if !data_inputs.is_empty() && all_f32 => Precision::F16,
                Class::Light(_) if !data_inputs.is_empty() && all_f32 => {
                    // Follow the non-constant inputs.
                    let mut produced = data_inputs
                        .iter()
                        .map(|&i| &node.input[i])
                        .filter(|n| !self.constants.contains_key(*n))
                        .peekable();
                    let any = produced.peek().is_some();
                    if any && produced.all(|n| self.precision.get(n) == Some(&Precision::F16)) {
                        Precision::F16
                    } else {
                        Precision::F32
                    }
                }
                _ => Precision::F32,
            };
            // Count nodes left in FP32 that read FP32 data.
            if target == Precision::F32
                && matches!(class, Class::Kept | Class::Heavy(_))
                && node.input.iter().any(|n| self.is_f32(n))
            {
                *kept.entry(node.op_type().to_owned()).or_default() += 1;
            }

            // Inputs at the precision this node reads them in.
            for i in 0..node.input.len() {
                let name = node.input[i].clone();
                if name.is_empty() || !self.is_f32(&name) {
                    continue;
                }
                let wants = if data_inputs.contains(&i) {
                    target
                } else {
                    Precision::F32
                };
                let reads_any = matches!(class, Class::Shape | Class::Cast);
                let replacement = self.at_precision(&name, wants, reads_any)?;
                if let Some(replacement) = replacement {
                    node.input[i] = replacement;
                }
            }
            // Subgraphs reading outer FP16 tensors by name read an FP32 cast instead.
            let outer: Vec<String> = outer_references(&node)
                .into_iter()
                .filter(|n| self.precision.get(n) == Some(&Precision::F16))
                .collect();
            for name in outer {
                let cast = self.cast(&name, Precision::F32);
                for attribute in &mut node.attribute {
                    rename_in_attribute(attribute, &name, &cast);
                }
            }

            // Outputs.
            let data = match class {
                Class::Heavy(d) | Class::Light(d) => Some(d),
                _ => None,
            };
            let cast_to_f16 = class == Class::Cast
                && node.attribute("to").and_then(|a| a.i) == Some(data_type::FLOAT as i64)
                && node.input.first().is_some_and(|n| {
                    self.is_f32(n) && self.precision.get(n) == Some(&Precision::F16)
                });
            if cast_to_f16 {
                for a in &mut node.attribute {
                    if a.name.as_deref() == Some("to") {
                        a.i = Some(data_type::FLOAT16 as i64);
                        a.r#type = Some(attribute_type::INT);
                    }
                }
            }
            for (i, output) in node.output.iter().enumerate() {
                if output.is_empty() {
                    continue;
                }
                if let Some(t) = out_types[i] {
                    self.types.insert(output.clone(), t);
                }
                if out_types[i] != Some(data_type::FLOAT) {
                    continue;
                }
                let is_data = data.is_some_and(|d| !d.first_output_only || i == 0);
                let p = if (is_data && target == Precision::F16) || cast_to_f16 {
                    Precision::F16
                } else {
                    Precision::F32
                };
                self.precision.insert(output.clone(), p);
            }
            if target == Precision::F16 || cast_to_f16 {
                self.report.converted += 1;
            }
            if let Some(output) = node.output.first()
                && matches!(self.constants.get(output), Some(Source::Node))
            {
                self.constant_nodes.insert(output.clone(), self.nodes.len());
            }
            self.nodes.push(node);
        }

        graph.node = std::mem::take(&mut self.nodes);
        graph.initializer = std::mem::take(&mut self.initializers);
        graph.initializer.append(&mut self.new_initializers);
        // FP32 constants no reader needs any more go (ONNX Runtime warns of every unused
        // initializer, and the file would carry both copies).
        remove_unused_constants(graph);

        // Declared types follow the precision.
        let f16: HashSet<&String> = self
            .precision
            .iter()
            .filter(|(_, p)| **p == Precision::F16)
            .map(|(n, _)| n)
            .collect();
        let retype = |vi: &mut ValueInfoProto| {
            if f16.contains(&vi.name().to_owned()) && vi.elem_type() == Some(data_type::FLOAT) {
                vi.set_elem_type(data_type::FLOAT16);
            }
        };
        graph.input.iter_mut().for_each(retype);
        graph.output.iter_mut().for_each(retype);
        graph.value_info.iter_mut().for_each(retype);

        let mut kept: Vec<(String, usize)> = kept.into_iter().collect();
        kept.sort();
        self.report.kept = kept;
        Ok(self.report)
    }

    /// The known type of input `k` of `node`.
    fn input_type(&self, node: &NodeProto, k: usize) -> Option<i32> {
        node.input
            .get(k)
            .filter(|n| !n.is_empty())
            .and_then(|n| self.types.get(n))
            .copied()
    }

    /// The name under which FP32 tensor `name` is available at `wants`, when it is not `name`
    /// itself (a cast, or an FP16 copy of a constant).
    fn at_precision(
        &mut self,
        name: &str,
        wants: Precision,
        reads_any: bool,
    ) -> Result<Option<String>, String> {
        if let Some(&source) = self.constants.get(name) {
            if wants == Precision::F32 || reads_any {
                return Ok(None);
            }
            if let Some(copy) = self.f16_constants.get(name) {
                return Ok(Some(copy.clone()));
            }
            let original = match source {
                Source::Initializer(index) => &self.initializers[index],
                Source::Node => self
                    .constant_nodes
                    .get(name)
                    .and_then(|&i| self.nodes[i].attribute("value"))
                    .and_then(|a| a.t.as_ref())
                    .ok_or_else(|| format!("constant `{name}` is read before its node"))?,
            };
            let values: Vec<half::f16> = original.f32_values()?.into_iter().map(to_f16).collect();
            let mut tensor = TensorProto {
                dims: original.dims.clone(),
                doc_string: original.doc_string.clone(),
                ..Default::default()
            };
            tensor.set_f16_values(&values);
            let copy = self.fresh_name(&format!("{name}_fp16"));
            tensor.name = Some(copy.clone());
            self.new_initializers.push(tensor);
            self.f16_constants.insert(name.to_owned(), copy.clone());
            self.report.constants += 1;
            return Ok(Some(copy));
        }
        let has = self.precision.get(name).copied().unwrap_or(Precision::F32);
        if has == wants || reads_any {
            return Ok(None);
        }
        Ok(Some(self.cast(name, wants)))
    }

    /// The name of `name` cast to `to`, adding the `Cast` node the first time.
    fn cast(&mut self, name: &str, to: Precision) -> String {
        if let Some(existing) = self.casts.get(&(name.to_owned(), to)) {
            return existing.clone();
        }
        let (suffix, elem) = match to {
            Precision::F16 => ("fp16", data_type::FLOAT16),
            Precision::F32 => ("fp32", data_type::FLOAT),
        };
        let output = self.fresh_name(&format!("{name}_{suffix}"));
        let cast_name = self.fresh_name(&format!("{output}_cast"));
        self.nodes.push(NodeProto {
            input: vec![name.to_owned()],
            output: vec![output.clone()],
            name: Some(cast_name),
            op_type: Some("Cast".into()),
            attribute: vec![AttributeProto {
                name: Some("to".into()),
                r#type: Some(attribute_type::INT),
                i: Some(elem as i64),
                ..Default::default()
            }],
            ..Default::default()
        });
        self.casts.insert((name.to_owned(), to), output.clone());
        self.report.casts += 1;
        output
    }
}

/// An FP32 value as FP16, finite values clamped to FP16's range.
fn to_f16(v: f32) -> half::f16 {
    if v.is_finite() {
        half::f16::from_f32(v.clamp(-65504.0, 65504.0))
    } else {
        half::f16::from_f32(v)
    }
}

/// Every tensor name of `graph` and its subgraphs (fresh names must differ from all of them).
fn collect_names(graph: &GraphProto, names: &mut HashSet<String>) {
    names.extend(graph.input.iter().map(|v| v.name().to_owned()));
    names.extend(graph.initializer.iter().map(|t| t.name().to_owned()));
    for node in &graph.node {
        names.extend(node.input.iter().cloned());
        names.extend(node.output.iter().cloned());
        for attribute in &node.attribute {
            for sub in attribute.g.iter().chain(&attribute.graphs) {
                collect_names(sub, names);
            }
        }
    }
}

/// Names a node's subgraphs read from the enclosing graph.
fn outer_references(node: &NodeProto) -> Vec<String> {
    let mut found = Vec::new();
    for attribute in &node.attribute {
        for graph in attribute.g.iter().chain(&attribute.graphs) {
            collect_outer(graph, &mut HashSet::new(), &mut found);
        }
    }
    found.sort();
    found.dedup();
    found
}

fn collect_outer(graph: &GraphProto, defined: &mut HashSet<String>, found: &mut Vec<String>) {
    let mut defined = defined.clone();
    defined.extend(graph.input.iter().map(|v| v.name().to_owned()));
    defined.extend(graph.initializer.iter().map(|t| t.name().to_owned()));
    for node in &graph.node {
        for input in &node.input {
            if !input.is_empty() && !defined.contains(input) {
                found.push(input.clone());
            }
        }
        for attribute in &node.attribute {
            for sub in attribute.g.iter().chain(&attribute.graphs) {
                collect_outer(sub, &mut defined, found);
            }
        }
        defined.extend(node.output.iter().cloned());
    }
    // A subgraph output may name an outer tensor directly.
    for output in &graph.output {
        if !defined.contains(output.name()) {
            found.push(output.name().to_owned());
        }
    }
}

/// Renames reads of outer tensor `from` to `to` in an attribute's subgraphs (unless a subgraph
/// defines a tensor of that name itself).
fn rename_in_attribute(attribute: &mut AttributeProto, from: &str, to: &str) {
    for graph in attribute.g.iter_mut().chain(attribute.graphs.iter_mut()) {
        rename_in_graph(graph, from, to);
    }
}

fn rename_in_graph(graph: &mut GraphProto, from: &str, to: &str) {
    let shadows = graph.input.iter().any(|v| v.name() == from)
        || graph.initializer.iter().any(|t| t.name() == from)
        || graph
            .node
            .iter()
            .any(|n| n.output.iter().any(|o| o == from));
    if shadows {
        return;
    }
    for node in &mut graph.node {
        for input in &mut node.input {
            if input == from {
                *input = to.to_owned();
            }
        }
        for attribute in &mut node.attribute {
            rename_in_attribute(attribute, from, to);
        }
    }
    for output in &mut graph.output {
        if output.name() == from {
            output.name = Some(to.to_owned());
        }
    }
}

/// The conversion rules as cache keys see them: the version and the kept operators, hashed
/// (16 hex digits).
pub fn rules_digest() -> String {
    let mut text = format!("{CONVERTER_VERSION}\n");
    for (op, _) in KEPT {
        text.push_str(op);
        text.push('\n');
    }
    crate::cache::sha256_hex(text.as_bytes())[..16].to_string()
}

/// The IR versions (4 to 10) and default-domain opsets (6 on) the conversion knows: IR 3 and
/// older list initializers among the graph's inputs, opsets before 6 name `Cast`'s type by
/// string, and later IR versions may carry fields this codec does not keep.
fn check_versions(model: &ModelProto) -> Result<(), String> {
    let ir = model.ir_version.unwrap_or(0);
    if !(4..=10).contains(&ir) {
        return Err(format!(
            "ONNX IR version {ir}: the FP16 conversion handles IR versions 4 to 10"
        ));
    }
    let opset = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain(), "" | "ai.onnx"))
        .and_then(|o| o.version);
    match opset {
        Some(v) if v >= 6 => Ok(()),
        other => Err(format!(
            "default-domain opset {}: the FP16 conversion needs opset 6 or newer",
            other.map_or("missing".to_string(), |v| v.to_string())
        )),
    }
}

/// Fails unless every node reads only graph inputs, initializers and outputs of earlier nodes
/// (the order the format requires; the conversion relies on it).
fn check_order(graph: &GraphProto) -> Result<(), String> {
    let mut available: HashSet<&str> = graph
        .input
        .iter()
        .map(|v| v.name())
        .chain(graph.initializer.iter().map(|t| t.name()))
        .collect();
    for node in &graph.node {
        if let Some(missing) = node
            .input
            .iter()
            .find(|n| !n.is_empty() && !available.contains(n.as_str()))
        {
            return Err(format!(
                "node `{}` ({}) reads `{missing}` before any node produces it: the graph is not \
                 in topological order",
                node.name.as_deref().unwrap_or(""),
                node.op_type()
            ));
        }
        available.extend(node.output.iter().map(String::as_str));
    }
    Ok(())
}

/// Removes initializers and `Constant` nodes nothing reads (graph outputs and graph inputs
/// count as read).
fn remove_unused_constants(graph: &mut GraphProto) {
    let mut used: HashSet<String> = graph
        .output
        .iter()
        .chain(&graph.input)
        .map(|v| v.name().to_owned())
        .collect();
    for node in &graph.node {
        used.extend(node.input.iter().cloned());
        used.extend(outer_references(node));
    }
    graph.initializer.retain(|t| used.contains(t.name()));
    graph.node.retain(|n| {
        !(n.op_type() == "Constant"
            && n.is_onnx_operator()
            && n.output.iter().all(|o| !used.contains(o)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::{TensorType, TypeProto, decode_model, encode_model};

    /// A model of `graph`, IR version 8, opset 17.
    fn model_of(graph: GraphProto) -> ModelProto {
        ModelProto::of_graph(graph, 8, 17)
    }

    fn tensor_value(name: &str, elem: i32) -> ValueInfoProto {
        ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorType {
                    elem_type: Some(elem),
                    shape: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn floats(name: &str, values: &[f32]) -> TensorProto {
        TensorProto {
            name: Some(name.into()),
            data_type: Some(data_type::FLOAT),
            dims: vec![values.len() as i64],
            raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
            ..Default::default()
        }
    }

    fn int_attr(name: &str, i: i64) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            r#type: Some(attribute_type::INT),
            i: Some(i),
            ..Default::default()
        }
    }

    /// x -> Conv(W) -> Relu -> r; Shape(r); Exp(r) + r -> a; Resize(r, scales) -> Cast(float)
    /// -> cz; an If whose branch reads r by name.
    fn model() -> ModelProto {
        let mut cast = NodeProto::new("Cast", &["z"], &["cz"]);
        cast.attribute.push(int_attr("to", data_type::FLOAT as i64));
        let branch = GraphProto {
            node: vec![NodeProto::new("Identity", &["r"], &["branch_out"])],
            output: vec![tensor_value("branch_out", data_type::FLOAT)],
            ..Default::default()
        };
        let mut if_node = NodeProto::new("If", &["flag"], &["chosen"]);
        if_node.attribute.push(AttributeProto {
            name: Some("then_branch".into()),
            g: Some(branch.clone()),
            ..Default::default()
        });
        if_node.attribute.push(AttributeProto {
            name: Some("else_branch".into()),
            g: Some(branch),
            ..Default::default()
        });
        model_of(GraphProto {
            node: vec![
                NodeProto::new("Conv", &["x", "W"], &["c"]),
                NodeProto::new("Relu", &["c"], &["r"]),
                NodeProto::new("Shape", &["r"], &["s"]),
                NodeProto::new("Exp", &["r"], &["e"]),
                NodeProto::new("Add", &["e", "r"], &["a"]),
                NodeProto::new("Resize", &["r", "", "scales"], &["z"]),
                cast,
                if_node,
            ],
            initializer: vec![
                floats("W", &[1.0, 70000.0, -1e-9]),
                floats("scales", &[1.0, 1.0, 2.0, 2.0]),
            ],
            input: vec![
                tensor_value("x", data_type::FLOAT),
                tensor_value("flag", data_type::BOOL),
            ],
            output: vec![
                tensor_value("a", data_type::FLOAT),
                tensor_value("cz", data_type::FLOAT),
                tensor_value("s", data_type::INT64),
                tensor_value("chosen", data_type::FLOAT),
            ],
            value_info: vec![tensor_value("r", data_type::FLOAT)],
            ..Default::default()
        })
    }

    fn find<'a>(graph: &'a GraphProto, op: &str) -> &'a NodeProto {
        graph.node.iter().find(|n| n.op_type() == op).unwrap()
    }

    fn declared(values: &[ValueInfoProto], name: &str) -> Option<i32> {
        values.iter().find(|v| v.name() == name)?.elem_type()
    }

    #[test]
    fn heavy_operators_compute_in_fp16_and_kept_ones_read_fp32_casts() {
        let mut model = model();
        let report = convert(&mut model).unwrap();
        let g = model.graph.as_ref().unwrap();
        // The input is FP16; the weights were converted once (clamped to FP16's range) and the
        // FP32 original, read by nothing any more, is gone.
        assert_eq!(declared(&g.input, "x"), Some(data_type::FLOAT16));
        assert_eq!(declared(&g.input, "flag"), Some(data_type::BOOL));
        assert_eq!(find(g, "Conv").input, ["x", "W_fp16"]);
        let w = g.initializer.iter().find(|t| t.name() == "W_fp16").unwrap();
        assert_eq!(w.data_type, Some(data_type::FLOAT16));
        let raw = w.raw_data.as_ref().unwrap();
        let value = |i: usize| half::f16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]).to_f32();
        assert_eq!((value(0), value(1)), (1.0, 65504.0));
        assert!(!g.initializer.iter().any(|t| t.name() == "W"));
        // Relu follows Conv; Shape reads the FP16 tensor as it is.
        assert_eq!(find(g, "Relu").input, ["c"]);
        assert_eq!(find(g, "Shape").input, ["r"]);
        assert_eq!(declared(&g.value_info, "r"), Some(data_type::FLOAT16));
        // Exp stays FP32 and reads a cast; Add, fed by FP32 Exp, stays FP32 and reuses it.
        assert_eq!(find(g, "Exp").input, ["r_fp32"]);
        assert_eq!(find(g, "Add").input, ["e", "r_fp32"]);
        assert_eq!(declared(&g.output, "a"), Some(data_type::FLOAT));
        // Resize's scales keep their type; the Cast to FLOAT of its FP16 output casts to FLOAT16.
        assert_eq!(find(g, "Resize").input, ["r", "", "scales"]);
        assert!(g.initializer.iter().any(|t| t.name() == "scales"));
        let cast = g.node.iter().find(|n| n.output == ["cz"]).unwrap();
        let to = cast.attribute("to").and_then(|a| a.i);
        assert_eq!(to, Some(data_type::FLOAT16 as i64));
        assert_eq!(declared(&g.output, "cz"), Some(data_type::FLOAT16));
        assert_eq!(declared(&g.output, "s"), Some(data_type::INT64));
        // The If's branches read the FP32 cast of r.
        let if_node = find(g, "If");
        for attribute in &if_node.attribute {
            assert_eq!(attribute.g.as_ref().unwrap().node[0].input, ["r_fp32"]);
        }
        // One cast (r to FP32), made before its first reader.
        let casts: Vec<usize> = (0..g.node.len())
            .filter(|&i| g.node[i].output == ["r_fp32"])
            .collect();
        assert_eq!(casts.len(), 1);
        let exp = g.node.iter().position(|n| n.op_type() == "Exp").unwrap();
        assert!(casts[0] < exp);
        assert_eq!(report.casts, 1);
        assert_eq!(report.constants, 1);
        assert_eq!(report.converted, 4, "Conv, Relu, Resize, Cast: {report}");
        assert_eq!(report.kept, [("Exp".to_string(), 1)]);
        check_order(g).unwrap();
    }

    #[test]
    fn integer_tensors_are_never_touched() {
        let mut model = model_of(GraphProto {
            node: vec![
                NodeProto::new("Shape", &["x"], &["s"]),
                NodeProto::new("Concat", &["s", "k"], &["shape"]),
                NodeProto::new("Mul", &["shape", "k"], &["m"]),
                NodeProto::new("Reshape", &["x", "m"], &["y"]),
            ],
            initializer: vec![TensorProto {
                name: Some("k".into()),
                data_type: Some(data_type::INT64),
                dims: vec![1],
                int64_data: vec![2],
                ..Default::default()
            }],
            input: vec![tensor_value("x", data_type::FLOAT)],
            output: vec![tensor_value("y", data_type::FLOAT)],
            ..Default::default()
        });
        let before = model.graph.as_ref().unwrap().node[..3].to_vec();
        convert(&mut model).unwrap();
        let g = model.graph.as_ref().unwrap();
        assert_eq!(g.node[..3], before[..]);
        // Reshape moves the FP16 input's data and stays FP16.
        assert_eq!(g.node[3].input, ["x", "m"]);
        assert_eq!(declared(&g.output, "y"), Some(data_type::FLOAT16));
    }

    #[test]
    fn unknown_types_and_unordered_graphs_are_left_alone_or_refused() {
        // A Conv reading the output of an operator of another domain: its type is unknown, so
        // the Conv stays as it is.
        let mut custom = NodeProto::new("Decode", &["x"], &["d"]);
        custom.domain = Some("com.example".into());
        let mut custom_model = model_of(GraphProto {
            node: vec![custom, NodeProto::new("Conv", &["d", "W"], &["c"])],
            initializer: vec![floats("W", &[1.0])],
            input: vec![tensor_value("x", data_type::FLOAT)],
            output: vec![tensor_value("c", data_type::FLOAT)],
            ..Default::default()
        });
        convert(&mut custom_model).unwrap();
        let g = custom_model.graph.as_ref().unwrap();
        assert_eq!(find(g, "Conv").input, ["d", "W"]);
        assert_eq!(declared(&g.output, "c"), Some(data_type::FLOAT));
        // The custom operator reads the FP16 input through a cast back to FP32.
        assert_eq!(
            g.node
                .iter()
                .find(|n| n.op_type() == "Decode")
                .unwrap()
                .input,
            ["x_fp32"]
        );

        let mut unordered = model();
        unordered.graph.as_mut().unwrap().node.swap(0, 1);
        let e = convert(&mut unordered).unwrap_err();
        assert!(e.contains("not in topological order"), "{e}");
    }

    #[test]
    fn models_survive_a_round_trip_through_the_codec() {
        let mut m = model();
        m.functions.push(vec![10, 3, b'a', b'b', b'c']);
        m.graph
            .as_mut()
            .unwrap()
            .sparse_initializer
            .push(vec![24, 1]);
        let bytes = encode_model(&m);
        assert_eq!(decode_model(&bytes).unwrap(), m);
        assert!(decode_model(b"\xff\xff\xff").is_err());
    }

    #[test]
    fn unknown_versions_are_refused_with_the_reason() {
        let mut old_ir = model();
        old_ir.ir_version = Some(3);
        assert!(convert(&mut old_ir).unwrap_err().contains("IR version 3"));
        let mut old_opset = model();
        old_opset.opset_import[0].version = Some(5);
        assert!(convert(&mut old_opset).unwrap_err().contains("opset 5"));
        let mut no_opset = model();
        no_opset.opset_import.clear();
        assert!(convert(&mut no_opset).unwrap_err().contains("missing"));
    }

    #[test]
    fn subgraph_outputs_naming_an_outer_tensor_read_its_fp32_cast() {
        let mut m = model();
        let g = m.graph.as_mut().unwrap();
        let if_node = g.node.iter_mut().find(|n| n.op_type() == "If").unwrap();
        // The then-branch passes r itself out, with no node.
        let then = if_node.attribute[0].g.as_mut().unwrap();
        then.node.clear();
        then.output = vec![tensor_value("r", data_type::FLOAT)];
        convert(&mut m).unwrap();
        let g = m.graph.as_ref().unwrap();
        let then = find(g, "If").attribute[0].g.as_ref().unwrap();
        assert_eq!(then.output[0].name(), "r_fp32");
        assert_eq!(then.output[0].elem_type(), Some(data_type::FLOAT));
    }

    #[test]
    fn fresh_names_differ_from_names_inside_subgraphs() {
        let mut m = model();
        let g = m.graph.as_mut().unwrap();
        let if_node = g.node.iter_mut().find(|n| n.op_type() == "If").unwrap();
        // The else-branch defines a tensor named as the cast of r would be.
        let other = if_node.attribute[1].g.as_mut().unwrap();
        other.node = vec![
            NodeProto::new("Identity", &["r"], &["r_fp32"]),
            NodeProto::new("Identity", &["r_fp32"], &["branch_out"]),
        ];
        convert(&mut m).unwrap();
        let g = m.graph.as_ref().unwrap();
        assert_eq!(find(g, "Exp").input, ["r_fp32_2"]);
        let other = find(g, "If").attribute[1].g.as_ref().unwrap();
        assert_eq!(other.node[0].input, ["r_fp32_2"]);
        assert_eq!(other.node[1].input, ["r_fp32"]);
    }
}
