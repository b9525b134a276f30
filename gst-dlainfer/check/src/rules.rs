// SPDX-License-Identifier: MIT OR Apache-2.0
//! The rule table: each documented DLA restriction the checker encodes, and the evaluation of
//! one ONNX node against the rules of the TensorRT layer it becomes.
//!
//! Source of every rule: NVIDIA TensorRT Developer Guide, "DLA Supported Layers and
//! Restrictions" (TensorRT 10.x, the last major version with DLA support; [`DOC_URL`]), sections
//! "General Restrictions" and "Layer Support and Restrictions". The ONNX-to-layer mapping is
//! the TensorRT ONNX parser's.

use serde::Serialize;

use super::onnx::{DataType, Node};
use super::shapes::{Dim, Info, Shapes, norm_axis};

pub const DOC_URL: &str = "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/dla-layer-restrictions.html";

const GENERAL: &str = "DLA Supported Layers and Restrictions / General Restrictions";
const LAYERS: &str = "DLA Supported Layers and Restrictions / Layer Support and Restrictions";

/// One documented restriction.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    /// The TensorRT layer it applies to ("all" for general restrictions).
    pub layer: &'static str,
    pub restriction: &'static str,
    /// Where the restriction is documented.
    pub source: &'static str,
}

macro_rules! rules {
    ($($id:literal, $layer:literal, $source:ident, $text:literal;)*) => {
        /// Every rule the checker applies.
        pub const RULES: &[Rule] = &[
            $(Rule { id: $id, layer: $layer, restriction: $text, source: $source },)*
        ];
    };
}

rules! {
    "general.precision", "all", GENERAL, "The DLA runs FP16 or INT8 only; there is no FP32 (and no integer or boolean tensors).";
    "general.fixed-shapes", "all", GENERAL, "No dynamic dimensions: the optimisation profile's min, opt and max must be equal, and run-time dims equal the build dims.";
    "general.batch", "all", GENERAL, "Batch (the product of all dims except C, H, W) at most 4096.";
    "general.dims", "all", GENERAL, "Non-batch dimensions at most 8192.";
    "general.loadables", "all", GENERAL, "At most 16 DLA loadables loaded per core; GPU fallback splits a network into one loadable per DLA subgraph.";
    "op.supported", "all", LAYERS, "Only the layers listed in Layer Support and Restrictions run on the DLA; others (Shape, Gather, Cast, Exp, Loop, TopK, NMS...) fall back to the GPU.";
    "conv.rank", "Convolution", LAYERS, "2D convolution only (4D NCHW tensors).";
    "conv.kernel", "Convolution", LAYERS, "Kernel dimensions in [1, 32].";
    "conv.stride", "Convolution", LAYERS, "Stride in [1, 8].";
    "conv.padding", "Convolution", LAYERS, "Padding in [0, 31] and smaller than the kernel dimension.";
    "conv.dilation", "Convolution", LAYERS, "Dilation in [1, 32].";
    "conv.output-maps", "Convolution", LAYERS, "Output maps in [1, 8192].";
    "conv.groups", "Convolution", LAYERS, "Groups in [1, 8192].";
    "conv.weights", "Convolution", LAYERS, "Weights are build-time constants.";
    "fc.input", "FullyConnected", LAYERS, "Fully connected layers run as convolutions: a constant weight matrix applied to a 4D [N,C,1,1] tensor (Convolution limits apply).";
    "deconv.rank", "Deconvolution", LAYERS, "2D deconvolution only (4D NCHW tensors).";
    "deconv.kernel", "Deconvolution", LAYERS, "Kernel dimensions in [1, 32] (or 1x64/96/128 and 64/96/128x1); square kernels with stride in [23, 32] are disabled.";
    "deconv.stride", "Deconvolution", LAYERS, "Stride in [1, 32].";
    "deconv.padding", "Deconvolution", LAYERS, "Padding must be 0.";
    "deconv.groups", "Deconvolution", LAYERS, "Groups must be 1.";
    "deconv.dilation", "Deconvolution", LAYERS, "Dilation must be 1.";
    "deconv.channels", "Deconvolution", LAYERS, "Input and output channels in [1, 8192].";
    "pool.type", "Pooling", LAYERS, "Max or average pooling, 2D only.";
    "pool.window", "Pooling", LAYERS, "Window size in [1, 8].";
    "pool.stride", "Pooling", LAYERS, "Stride in [1, 16].";
    "pool.padding", "Pooling", LAYERS, "Padding in [0, 7].";
    "act.function", "Activation", LAYERS, "ReLU, sigmoid, tanh, clipped ReLU and leaky ReLU; 2D only (4D tensors).";
    "act.clip", "Activation", LAYERS, "Clipped ReLU: lower bound 0, upper bound in [1, 127].";
    "prelu.slope", "ParametricReLU", LAYERS, "The slope is a build-time constant.";
    "eltwise.op", "ElementWise", LAYERS, "Sum, sub, product, max, min, div and pow; 2D only (4D tensors).";
    "eltwise.broadcast", "ElementWise", LAYERS, "Operands of equal shape (NCHW), or one broadcast per channel (NC11) or per tensor (N111).";
    "eltwise.constant", "ElementWise", LAYERS, "Pow needs exactly one constant input; div, equal, greater and less at most one.";
    "compare.int8", "ElementWise", LAYERS, "Equal, greater and less run in INT8 only (INT8 builds), their output feeding a cast.";
    "scale.rank", "Scale", LAYERS, "Scale (batch normalisation, constant add/mul): uniform, per-channel or elementwise, 2D only (4D tensors).";
    "shuffle.rank", "Shuffle", LAYERS, "Reshape and transpose on 4D tensors only (input and output), non-batch dims in [1, 8192].";
    "shuffle.batch", "Shuffle", LAYERS, "Reshapes and transposes cannot involve the batch dimension.";
    "concat.axis", "Concatenation", LAYERS, "Concatenation on the channel axis only, of at least 2 inputs with the same spatial dims.";
    "resize.scales", "Resize", LAYERS, "Exactly 4 scales, the first two (N, C) equal to 1; integer H and W scales in [1, 32] (nearest) or [1, 4] (linear).";
    "slice.rank", "Slice", LAYERS, "4D tensors only, slicing C, H and W (not the batch dimension).";
    "slice.static", "Slice", LAYERS, "Static slices: constant start, size and stride 1.";
    "softmax.axis", "SoftMax", LAYERS, "4D tensors, over the channel or a spatial axis; the axis dimension at most 1024 (Orin only).";
    "unary.op", "Unary", LAYERS, "Abs only.";
    "reduce.op", "Reduce", LAYERS, "Max only, over C, H and W.";
    "lrn.window", "LRN", LAYERS, "Window 3, 5, 7 or 9, across channels.";
}

/// The rule with `id`.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// One rule applied to one node: whether it holds, and the values it was checked on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Check {
    pub rule: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// Where a node ends up in a DLA build with GPU fallback.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    Dla,
    Gpu,
    /// Computed at build time (constants and shape arithmetic once shapes are fixed).
    Folded,
    /// No layer at all (Identity, Dropout).
    Removed,
}

/// The verdict on one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub layer: &'static str,
    pub placement: Placement,
    pub checks: Vec<Check>,
    /// Multiply-accumulates per batch item, for convolution and matrix layers.
    pub macs: Option<u64>,
}

/// The precision a DLA engine is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp16,
    Int8,
    Fp32,
}

/// Collects the checks of one node.
struct Checks(Vec<Check>);

impl Checks {
    fn add(&mut self, rule: &'static str, passed: bool, detail: impl Into<String>) {
        debug_assert!(self::rule(rule).is_some(), "rule {rule} is in the table");
        self.0.push(Check {
            rule,
            passed,
            detail: detail.into(),
        });
    }

    fn range(&mut self, rule: &'static str, what: &str, values: &[i64], lo: i64, hi: i64) {
        let ok = values.iter().all(|v| (lo..=hi).contains(v));
        self.add(
            rule,
            ok,
            format!("{what} {} (allowed {lo}..{hi})", list(values)),
        );
    }
}

fn list(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join("x")
}

/// A shape as text, "unknown" when not even the rank is known.
fn dims_text(s: &Option<Vec<Dim>>) -> String {
    s.as_deref()
        .map_or_else(|| "unknown".into(), super::shapes::dims_text)
}

/// The TensorRT layer an ONNX operator becomes.
pub fn layer_of(op: &str) -> &'static str {
    match op {
        "Conv" => "Convolution",
        "ConvTranspose" => "Deconvolution",
        "MaxPool" | "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" => "Pooling",
        "Relu" | "Sigmoid" | "Tanh" | "Clip" | "LeakyRelu" => "Activation",
        "PRelu" => "ParametricReLU",
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" => "ElementWise",
        "Equal" | "Less" | "Greater" => "ElementWise",
        "BatchNormalization" => "Scale",
        "Reshape" | "Flatten" | "Transpose" | "Squeeze" | "Unsqueeze" => "Shuffle",
        "Concat" => "Concatenation",
        "Resize" | "Upsample" => "Resize",
        "Slice" | "Split" => "Slice",
        "Softmax" => "SoftMax",
        "Abs" | "Exp" | "Log" | "Sqrt" | "Neg" | "Sin" | "Cos" | "Floor" | "Ceil"
        | "Reciprocal" | "Not" | "Erf" => "Unary",
        "ReduceMax" | "ReduceMin" | "ReduceMean" | "ReduceSum" | "ReduceProd" => "Reduce",
        "LRN" => "LRN",
        "Gemm" | "MatMul" => "FullyConnected",
        "Shape" => "Shape",
        "Gather" => "Gather",
        "Cast" => "Cast",
        "Loop" => "Loop",
        "If" => "Conditional",
        "TopK" => "TopK",
        "NonMaxSuppression" => "NMS",
        "Tile" | "Expand" => "Slice (wrap/broadcast)",
        "ConstantOfShape" | "Range" => "Fill",
        "Pad" => "Padding",
        _ => "other",
    }
}

/// Evaluates `node` against the rules of its layer.
pub fn evaluate(node: &Node, shapes: &Shapes, precision: Precision) -> Verdict {
    let layer = layer_of(&node.op_type);
    let outputs: Vec<Info> = node
        .outputs
        .iter()
        .map(|o| shapes.get(o).cloned().unwrap_or_default())
        .collect();
    let macs = macs(node, shapes);
    if node.op_type == "Constant"
        || (!outputs.is_empty() && outputs.iter().all(Info::is_known_constant))
    {
        return Verdict {
            layer,
            placement: Placement::Folded,
            checks: Vec::new(),
            macs: None,
        };
    }
    if matches!(node.op_type.as_str(), "Identity" | "Dropout") {
        return Verdict {
            layer,
            placement: Placement::Removed,
            checks: Vec::new(),
            macs: None,
        };
    }
    let mut c = Checks(Vec::new());
    let input = |i: usize| {
        node.inputs
            .get(i)
            .and_then(|n| shapes.get(n))
            .cloned()
            .unwrap_or_default()
    };
    let x = input(0);
    let out = outputs.first().cloned().unwrap_or_default();
    general(&mut c, node, &x, &out);
    let supported = layer_rules(&mut c, node, &x, &out, shapes, precision, &input);
    if !supported {
        c.add(
            "op.supported",
            false,
            format!("{} ({layer}) has no DLA implementation", node.op_type),
        );
    }
    let placement = if c.0.iter().all(|k| k.passed) {
        Placement::Dla
    } else {
        Placement::Gpu
    };
    Verdict {
        layer,
        placement,
        checks: c.0,
        macs,
    }
}

/// The general restrictions, on the node's data input and first output.
fn general(c: &mut Checks, node: &Node, x: &Info, out: &Info) {
    let types: Vec<DataType> = [x.dtype, out.dtype].into_iter().flatten().collect();
    if let Some(bad) = types.iter().find(|t| !t.is_float()) {
        c.add(
            "general.precision",
            false,
            format!("{} tensor; the DLA computes FP16/INT8 only", bad.name()),
        );
    }
    for (what, info) in [("input", x), ("output", out)] {
        let Some(shape) = &info.shape else {
            if !node.inputs.is_empty() {
                c.add(
                    "general.fixed-shapes",
                    false,
                    format!("{what} shape not known at build time"),
                );
            }
            continue;
        };
        // The batch dimension is fixed by the build's profile; other unknown dims are dynamic.
        if shape.iter().skip(1).any(Option::is_none) {
            c.add(
                "general.fixed-shapes",
                false,
                format!("{what} {} has dynamic dimensions", dims_text(&info.shape)),
            );
        }
        let r = shape.len();
        if r >= 3 {
            let big: Vec<i64> = shape[r - 3..]
                .iter()
                .flatten()
                .copied()
                .filter(|&d| d > 8192)
                .collect();
            if !big.is_empty() {
                c.add(
                    "general.dims",
                    false,
                    format!("{what} dims {} over 8192", list(&big)),
                );
            }
            if let Some(batch) = shape[..r - 3].iter().try_fold(1i64, |a, d| Some(a * (*d)?))
                && batch > 4096
            {
                c.add(
                    "general.batch",
                    false,
                    format!("{what} batch {batch} over 4096"),
                );
            }
        }
    }
}

fn is_4d(i: &Info) -> bool {
    i.rank() == Some(4)
}

fn rank_text(i: &Info) -> String {
    format!("tensor {}", dims_text(&i.shape))
}

/// What a layer's rules look at: the node, its first input and its output, every shape, the
/// precision, and the node's inputs by index.
#[derive(Clone, Copy)]
struct Layer<'a> {
    node: &'a Node,
    x: &'a Info,
    out: &'a Info,
    shapes: &'a Shapes,
    precision: Precision,
    input: &'a dyn Fn(usize) -> Info,
}

/// The rules of the node's layer, by family of layers; `false` when the DLA has no such layer
/// at all.
fn layer_rules(
    c: &mut Checks,
    node: &Node,
    x: &Info,
    out: &Info,
    shapes: &Shapes,
    precision: Precision,
    input: &dyn Fn(usize) -> Info,
) -> bool {
    const FAMILIES: [fn(&mut Checks, &Layer<'_>) -> Option<bool>; 5] = [
        convolution,
        pooling_and_activation,
        elementwise,
        shuffle,
        other,
    ];
    let layer = Layer {
        node,
        x,
        out,
        shapes,
        precision,
        input,
    };
    FAMILIES
        .iter()
        .find_map(|family| family(c, &layer))
        .unwrap_or(false)
}

/// Convolutions and deconvolutions.
fn convolution(c: &mut Checks, layer: &Layer<'_>) -> Option<bool> {
    let Layer {
        node,
        x,
        out,
        input,
        ..
    } = *layer;
    Some(match node.op_type.as_str() {
        "Conv" => {
            let w = input(1);
            c.add("conv.rank", is_4d(x), rank_text(x));
            let kernel = kernel_of(node, &w);
            let n = kernel.len();
            c.range("conv.kernel", "kernel", &kernel, 1, 32);
            c.range(
                "conv.stride",
                "stride",
                &node.ints_or("strides", n, 1),
                1,
                8,
            );
            let pads = node.ints_or("pads", 2 * n, 0);
            let under_kernel = pads
                .iter()
                .enumerate()
                .all(|(i, &p)| p < kernel.get(i % n.max(1)).copied().unwrap_or(1));
            c.add(
                "conv.padding",
                pads.iter().all(|p| (0..=31).contains(p)) && under_kernel,
                format!(
                    "padding {} with kernel {} (allowed 0..31, below the kernel)",
                    list(&pads),
                    list(&kernel)
                ),
            );
            c.range(
                "conv.dilation",
                "dilation",
                &node.ints_or("dilations", n, 1),
                1,
                32,
            );
            if let Some(m) = w.dims().and_then(|d| d.first().copied()) {
                c.range("conv.output-maps", "output maps", &[m], 1, 8192);
            }
            c.range(
                "conv.groups",
                "groups",
                &[node.int("group").unwrap_or(1)],
                1,
                8192,
            );
            c.add(
                "conv.weights",
                w.constant,
                if w.constant {
                    "constant weights"
                } else {
                    "weights computed at run time"
                },
            );
            true
        }
        "ConvTranspose" => {
            let w = input(1);
            c.add("deconv.rank", is_4d(x), rank_text(x));
            let kernel = kernel_of(node, &w);
            let n = kernel.len();
            let stride = node.ints_or("strides", n, 1);
            let special = matches!(kernel.as_slice(), [1, 64 | 96 | 128] | [64 | 96 | 128, 1]);
            let square_slow = kernel.len() == 2
                && kernel[0] == kernel[1]
                && stride.iter().any(|s| (23..=32).contains(s));
            c.add(
                "deconv.kernel",
                (kernel.iter().all(|k| (1..=32).contains(k)) || special) && !square_slow,
                format!("kernel {} (allowed 1..32, 1x64/96/128)", list(&kernel)),
            );
            c.range("deconv.stride", "stride", &stride, 1, 32);
            let pads = node.ints_or("pads", 2 * n, 0);
            c.add(
                "deconv.padding",
                pads.iter().all(|&p| p == 0),
                format!("padding {} (must be 0)", list(&pads)),
            );
            let groups = node.int("group").unwrap_or(1);
            c.add(
                "deconv.groups",
                groups == 1,
                format!("groups {groups} (must be 1)"),
            );
            let dil = node.ints_or("dilations", n, 1);
            c.add(
                "deconv.dilation",
                dil.iter().all(|&d| d == 1),
                format!("dilation {} (must be 1)", list(&dil)),
            );
            let channels: Vec<i64> = [
                x.shape.as_ref().and_then(|s| s.get(1).copied().flatten()),
                out.shape.as_ref().and_then(|s| s.get(1).copied().flatten()),
            ]
            .into_iter()
            .flatten()
            .collect();
            c.range("deconv.channels", "channels in/out", &channels, 1, 8192);
            true
        }
        _ => return None,
    })
}

/// Pooling and activations.
fn pooling_and_activation(c: &mut Checks, layer: &Layer<'_>) -> Option<bool> {
    let Layer { node, x, input, .. } = *layer;
    Some(match node.op_type.as_str() {
        "MaxPool" | "AveragePool" => {
            c.add(
                "pool.type",
                is_4d(x),
                format!("{} on {}", node.op_type, rank_text(x)),
            );
            let kernel = node.ints_or("kernel_shape", 0, 1);
            let n = kernel.len();
            c.range("pool.window", "window", &kernel, 1, 8);
            c.range(
                "pool.stride",
                "stride",
                &node.ints_or("strides", n, 1),
                1,
                16,
            );
            c.range(
                "pool.padding",
                "padding",
                &node.ints_or("pads", 2 * n, 0),
                0,
                7,
            );
            true
        }
        "GlobalAveragePool" | "GlobalMaxPool" => {
            c.add(
                "pool.type",
                is_4d(x),
                format!("{} on {}", node.op_type, rank_text(x)),
            );
            let window: Vec<i64> = x
                .shape
                .as_ref()
                .map(|s| s.iter().skip(2).map(|d| d.unwrap_or(i64::MAX)).collect())
                .unwrap_or_default();
            c.range("pool.window", "window (the whole map)", &window, 1, 8);
            true
        }
        "LpPool" | "GlobalLpPool" => false,
        "Relu" | "Sigmoid" | "Tanh" | "LeakyRelu" => {
            c.add(
                "act.function",
                is_4d(x),
                format!("{} on {}", node.op_type, rank_text(x)),
            );
            true
        }
        "Clip" => {
            c.add(
                "act.function",
                is_4d(x),
                format!("Clip on {}", rank_text(x)),
            );
            let bound = |i: usize, attr: &str| {
                input(i)
                    .values()
                    .and_then(|v| v.first().copied())
                    .or_else(|| node.float(attr).map(f64::from))
            };
            let (lo, hi) = (bound(1, "min"), bound(2, "max"));
            let ok = lo == Some(0.0) && hi.is_some_and(|h| (1.0..=127.0).contains(&h));
            c.add(
                "act.clip",
                ok,
                format!("clip to [{}, {}]", opt(lo), opt(hi)),
            );
            true
        }
        "PRelu" => {
            c.add("act.function", is_4d(x), rank_text(x));
            let slope = input(1);
            c.add(
                "prelu.slope",
                slope.constant,
                if slope.constant {
                    "constant slope"
                } else {
                    "slope computed at run time"
                },
            );
            true
        }
        _ => return None,
    })
}

/// Element-wise operations and batch normalisation.
fn elementwise(c: &mut Checks, layer: &Layer<'_>) -> Option<bool> {
    let Layer {
        node,
        x,
        out,
        precision,
        input,
        ..
    } = *layer;
    Some(match node.op_type.as_str() {
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Equal" | "Less"
        | "Greater" => {
            let operands: Vec<Info> = (0..node.inputs.len()).map(input).collect();
            let all_4d = operands
                .iter()
                .all(|o| is_4d(o) || (o.constant && o.rank().is_some_and(|r| r <= 4)));
            c.add(
                "eltwise.op",
                all_4d && is_4d(out),
                format!(
                    "{} of {}",
                    node.op_type,
                    operands
                        .iter()
                        .map(rank_text)
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            );
            if let Some(full) = &out.shape
                && full.len() == 4
            {
                for o in &operands {
                    let Some(s) = &o.shape else { continue };
                    let padded: Vec<Dim> =
                        std::iter::repeat_n(Some(1), 4usize.saturating_sub(s.len()))
                            .chain(s.iter().copied())
                            .collect();
                    let kind = broadcast_kind(&padded, full);
                    c.add(
                        "eltwise.broadcast",
                        kind.is_some(),
                        format!(
                            "operand {} as {}",
                            dims_text(&o.shape),
                            kind.unwrap_or("an unsupported broadcast")
                        ),
                    );
                }
            }
            let constants = operands.iter().filter(|o| o.constant).count();
            match node.op_type.as_str() {
                "Pow" => c.add(
                    "eltwise.constant",
                    constants == 1,
                    format!("{constants} constant input(s)"),
                ),
                "Div" | "Equal" | "Less" | "Greater" => c.add(
                    "eltwise.constant",
                    constants <= 1,
                    format!("{constants} constant input(s)"),
                ),
                _ => {}
            }
            if matches!(node.op_type.as_str(), "Equal" | "Less" | "Greater") {
                c.add(
                    "compare.int8",
                    precision == Precision::Int8,
                    format!("{:?} build", precision),
                );
            }
            true
        }
        "BatchNormalization" => {
            c.add("scale.rank", is_4d(x), rank_text(x));
            true
        }
        _ => return None,
    })
}

/// Shuffles: reshapes, transposes, concatenation, resizing, slicing, splitting.
fn shuffle(c: &mut Checks, layer: &Layer<'_>) -> Option<bool> {
    let Layer {
        node,
        x,
        out,
        shapes,
        ..
    } = *layer;
    Some(match node.op_type.as_str() {
        "Reshape" | "Flatten" | "Transpose" | "Squeeze" | "Unsqueeze" => {
            c.add(
                "shuffle.rank",
                is_4d(x) && is_4d(out),
                format!("{} -> {}", dims_text(&x.shape), dims_text(&out.shape)),
            );
            let batch_moves = match node.op_type.as_str() {
                "Transpose" => node.ints("perm").is_none_or(|p| p.first() != Some(&0)),
                _ => {
                    let b = |i: &Info| i.shape.as_ref().and_then(|s| s.first().copied().flatten());
                    b(x).is_none() || b(x) != b(out)
                }
            };
            c.add(
                "shuffle.batch",
                !batch_moves,
                if batch_moves {
                    "the batch dimension changes or moves"
                } else {
                    "batch dimension kept"
                },
            );
            true
        }
        "Concat" => {
            let axis = x
                .rank()
                .map(|r| norm_axis(node.int("axis").unwrap_or(0), r));
            c.add(
                "concat.axis",
                is_4d(x) && axis == Some(1) && node.inputs.len() >= 2,
                format!(
                    "axis {} of {} ({} inputs)",
                    node.int("axis").unwrap_or(0),
                    rank_text(x),
                    node.inputs.len()
                ),
            );
            true
        }
        "Resize" | "Upsample" => {
            let mode = node.string("mode").unwrap_or_else(|| "nearest".into());
            let max = if mode == "nearest" { 32.0 } else { 4.0 };
            let scales = shapes.resize_scales(node);
            let ok = is_4d(x)
                && matches!(mode.as_str(), "nearest" | "linear" | "bilinear")
                && scales.as_ref().is_some_and(|s| {
                    s.len() == 4
                        && s[0] == 1.0
                        && s[1] == 1.0
                        && s[2..]
                            .iter()
                            .all(|&f| f.fract() == 0.0 && (1.0..=max).contains(&f))
                });
            let text = scales.map_or("scales not known at build time".to_string(), |s| {
                format!(
                    "{mode}, scales {}",
                    s.iter()
                        .map(|f| format!("{f:.3}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )
            });
            c.add("resize.scales", ok, text);
            true
        }
        "Slice" => {
            let params = shapes.slice_params(node);
            let batch = params
                .as_ref()
                .is_some_and(|p| p.iter().any(|&(a, _, _, _)| a == 0));
            c.add(
                "slice.rank",
                is_4d(x) && !batch,
                format!(
                    "{} slicing axes {}",
                    rank_text(x),
                    params.as_ref().map_or("?".into(), |p| p
                        .iter()
                        .map(|q| q.0.to_string())
                        .collect::<Vec<_>>()
                        .join(","))
                ),
            );
            let static_ok = params
                .as_ref()
                .is_some_and(|p| p.iter().all(|&(_, _, _, s)| s == 1));
            c.add(
                "slice.static",
                static_ok,
                if params.is_some() {
                    "constant parameters"
                } else {
                    "parameters computed at run time"
                },
            );
            true
        }
        "Split" => {
            let axis = x
                .rank()
                .map(|r| norm_axis(node.int("axis").unwrap_or(0), r));
            c.add(
                "slice.rank",
                is_4d(x) && axis != Some(0),
                format!(
                    "split of {} on axis {}",
                    rank_text(x),
                    node.int("axis").unwrap_or(0)
                ),
            );
            true
        }
        _ => return None,
    })
}

/// Softmax, unary operations, reductions, LRN and matrix products.
fn other(c: &mut Checks, layer: &Layer<'_>) -> Option<bool> {
    let Layer { node, x, input, .. } = *layer;
    Some(match node.op_type.as_str() {
        "Softmax" => {
            let axis = x
                .rank()
                .map(|r| norm_axis(node.int("axis").unwrap_or(-1), r));
            let len = axis.and_then(|a| x.shape.as_ref()?.get(a).copied().flatten());
            c.add(
                "softmax.axis",
                is_4d(x) && axis.is_some_and(|a| a >= 1) && len.is_some_and(|n| n <= 1024),
                format!(
                    "axis {} of {}",
                    node.int("axis").unwrap_or(-1),
                    rank_text(x)
                ),
            );
            true
        }
        "Abs" => {
            c.add("unary.op", is_4d(x), format!("Abs on {}", rank_text(x)));
            true
        }
        "Exp" | "Log" | "Sqrt" | "Neg" | "Sin" | "Cos" | "Floor" | "Ceil" | "Reciprocal"
        | "Erf" => {
            c.add("unary.op", false, format!("{} is not abs", node.op_type));
            true
        }
        "ReduceMax" => {
            let axes = node.ints("axes").map(<[i64]>::to_vec).unwrap_or_default();
            let r = x.rank().unwrap_or(0);
            c.add(
                "reduce.op",
                is_4d(x) && !axes.is_empty() && axes.iter().all(|&a| norm_axis(a, r) >= 1),
                format!("max over axes {axes:?} of {}", rank_text(x)),
            );
            true
        }
        "ReduceMin" | "ReduceMean" | "ReduceSum" | "ReduceProd" => {
            c.add(
                "reduce.op",
                false,
                format!("{} is not a max reduction", node.op_type),
            );
            true
        }
        "LRN" => {
            let size = node.int("size").unwrap_or(0);
            c.add(
                "lrn.window",
                [3, 5, 7, 9].contains(&size),
                format!("window {size}"),
            );
            true
        }
        "Gemm" | "MatMul" => {
            let w = input(1);
            let fc_shape = x
                .shape
                .as_ref()
                .is_some_and(|s| s.len() == 4 && s[2] == Some(1) && s[3] == Some(1));
            c.add(
                "fc.input",
                w.constant && fc_shape,
                format!(
                    "{} weights, input {}",
                    if w.constant { "constant" } else { "run-time" },
                    dims_text(&x.shape)
                ),
            );
            true
        }
        _ => return None,
    })
}

/// The kernel of a (de)convolution: its attribute, else the weights' spatial dims.
fn kernel_of(node: &Node, weights: &Info) -> Vec<i64> {
    node.ints("kernel_shape")
        .map(<[i64]>::to_vec)
        .or_else(|| weights.dims().map(|d| d[2.min(d.len())..].to_vec()))
        .unwrap_or_default()
}

fn opt(v: Option<f64>) -> String {
    v.map_or("?".into(), |v| format!("{v}"))
}

/// How an operand of shape `s` broadcasts to the 4D `full` shape.
fn broadcast_kind(s: &[Dim], full: &[Dim]) -> Option<&'static str> {
    let one = |d: &Dim| *d == Some(1);
    if s == full || s[1..] == full[1..] {
        Some("NCHW (same shape)")
    } else if s[1] == full[1] && one(&s[2]) && one(&s[3]) {
        Some("NC11 (per channel)")
    } else if one(&s[1]) && one(&s[2]) && one(&s[3]) {
        Some("N111 (per tensor)")
    } else {
        None
    }
}

/// Multiply-accumulates per batch item of convolution, deconvolution and matrix layers.
pub fn macs(node: &Node, shapes: &Shapes) -> Option<u64> {
    let dims = |i: usize, out: bool| {
        let name = if out {
            node.outputs.get(i)?
        } else {
            node.inputs.get(i)?
        };
        shapes.get(name)?.dims()
    };
    let per_item = |d: &[i64]| {
        d.iter()
            .skip(1)
            .try_fold(1u64, |a, &v| a.checked_mul(u64::try_from(v).ok()?))
    };
    let v = match node.op_type.as_str() {
        "Conv" => {
            let (out, w) = (dims(0, true)?, dims(1, false)?);
            // weights [M, C/group, kh, kw]: each output element takes C/group*kh*kw MACs.
            per_item(&out)? * w[1..].iter().product::<i64>() as u64
        }
        "ConvTranspose" => {
            let (x, w) = (dims(0, false)?, dims(1, false)?);
            // weights [C, M/group, kh, kw]: each input element feeds M/group*kh*kw outputs.
            per_item(&x)? * w[1..].iter().product::<i64>() as u64
        }
        "Gemm" | "MatMul" => {
            let (out, x) = (dims(0, true)?, dims(0, false)?);
            let k = if node.int("transA") == Some(1) {
                x[x.len() - 2]
            } else {
                *x.last()?
            };
            per_item(&out)? * k as u64
        }
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_cites_its_source() {
        let mut ids = std::collections::HashSet::new();
        for r in RULES {
            assert!(ids.insert(r.id), "duplicate rule {}", r.id);
            assert!(
                r.source
                    .starts_with("DLA Supported Layers and Restrictions / "),
                "{}",
                r.id
            );
            assert!(!r.restriction.is_empty());
        }
        assert!(
            rule("deconv.padding")
                .unwrap()
                .restriction
                .contains("must be 0")
        );
    }

    #[test]
    fn broadcasts_are_classified() {
        let s = |v: &[i64]| v.iter().map(|&d| Some(d)).collect::<Vec<_>>();
        let full = s(&[1, 32, 8, 8]);
        assert_eq!(
            broadcast_kind(&s(&[1, 32, 1, 1]), &full),
            Some("NC11 (per channel)")
        );
        assert_eq!(
            broadcast_kind(&s(&[1, 1, 1, 1]), &full),
            Some("N111 (per tensor)")
        );
        assert_eq!(
            broadcast_kind(&s(&[1, 32, 8, 8]), &full),
            Some("NCHW (same shape)")
        );
        assert_eq!(broadcast_kind(&s(&[1, 1, 8, 8]), &full), None);
    }
}
