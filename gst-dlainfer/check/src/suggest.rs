// SPDX-License-Identifier: MIT OR Apache-2.0
//! Concrete changes that would raise a model's DLA coverage, from the checks that failed.

use std::collections::BTreeMap;

use super::rules::Placement;
use super::{NodeReport, Suggestion};

/// What to do about a failed rule (keyed by the rule, or by the operator for unsupported
/// layers).
fn advice(rule: &str, op: &str) -> &'static str {
    match (rule, op) {
        ("op.supported", "Loop" | "Cast" | "Shape" | "Gather" | "ConstantOfShape" | "Range")
        | ("op.supported", "Tile" | "Expand" | "Less" | "If") => {
            "Run-time shape arithmetic, loops and casts: export the model with fixed input dims \
             and without its pre-processing loop (rsdlainfer scales and normalises frames \
             itself), so these fold into constants or disappear"
        }
        ("op.supported", "TopK" | "NonMaxSuppression") => {
            "Top-k and NMS in the graph: remove them and let the element cluster detections \
             (cluster-mode)"
        }
        ("fc.input", _) | ("shuffle.rank", "Flatten") => {
            "Flatten + Gemm/MatMul classifier: replace it with a 1x1 Conv on the pooled \
             [N,C,1,1] tensor (Flatten after it), which the DLA runs as a convolution"
        }
        ("unary.op", _) => {
            "Unary operators other than abs (exp, log, sqrt...): move box decoding into the \
             output parser and cut the network before it (output-blob-names)"
        }
        (
            "shuffle.rank" | "shuffle.batch" | "act.function" | "eltwise.op" | "slice.rank"
            | "concat.axis" | "softmax.axis",
            _,
        ) => {
            "Post-processing on 2D/3D tensors (reshapes to [N, boxes, classes], concatenation \
             over boxes, sigmoid and slicing of scores): cut the network at the 4D head outputs \
             and decode them in the output parser"
        }
        (
            "deconv.padding" | "deconv.groups" | "deconv.dilation" | "deconv.kernel"
            | "deconv.stride",
            _,
        ) => {
            "ConvTranspose outside the deconvolution limits: export it with padding 0 and crop \
             the border with a static Slice on H and W, or replace it with Resize (nearest, \
             integer scale) followed by Conv"
        }
        ("resize.scales", _) => {
            "Resize with non-integer or N/C scales: resize H and W only, by integer factors \
             (nearest 1..32, linear 1..4)"
        }
        ("act.clip", _) => {
            "Clip with bounds other than [0, 1..127]: use Relu or ReLU6-style bounds"
        }
        ("pool.window" | "pool.stride" | "pool.padding" | "pool.type", _) => {
            "Pooling outside the limits (window over 8, e.g. a global pool of a large map): pool \
             in several stages of window 8 or less"
        }
        (
            "conv.kernel" | "conv.stride" | "conv.padding" | "conv.dilation" | "conv.groups"
            | "conv.output-maps" | "conv.rank" | "conv.weights",
            _,
        ) => {
            "Convolutions outside the limits: split large kernels, strides or channel counts \
             into several convolutions, and keep weights constant"
        }
        ("general.precision", _) => {
            "Integer or boolean tensors: keep index and mask arithmetic out of the network"
        }
        ("general.fixed-shapes", _) => {
            "Dynamic dimensions: export the model with fixed input dims (or give the shape the \
             engine is built for)"
        }
        ("eltwise.broadcast" | "eltwise.constant" | "compare.int8", _) => {
            "Element-wise operations with unsupported broadcasting or constants: make both \
             operands the same shape, or broadcast per channel or per tensor"
        }
        _ => "Replace these operators with layers the DLA supports",
    }
}

/// Groups GPU layers by the advice that addresses their first failed check; largest MACs and
/// layer counts first.
pub fn suggestions(nodes: &[NodeReport]) -> Vec<Suggestion> {
    let mut groups: BTreeMap<&'static str, Suggestion> = BTreeMap::new();
    for n in nodes.iter().filter(|n| n.placement == Placement::Gpu) {
        let Some(first) = n.failed().next() else {
            continue;
        };
        let text = advice(first.rule, &n.op_type);
        let g = groups.entry(text).or_insert_with(|| Suggestion {
            rules: Vec::new(),
            op_types: Vec::new(),
            nodes: 0,
            macs: 0,
            examples: Vec::new(),
            text: text.to_string(),
        });
        for c in n.failed() {
            if !g.rules.contains(&c.rule) {
                g.rules.push(c.rule);
            }
        }
        if !g.op_types.contains(&n.op_type) {
            g.op_types.push(n.op_type.clone());
        }
        g.nodes += 1;
        g.macs += n.macs.unwrap_or(0);
        if g.examples.len() < 3 {
            g.examples.push(n.name.clone());
        }
    }
    let mut out: Vec<Suggestion> = groups.into_values().collect();
    out.sort_by(|a, b| b.macs.cmp(&a.macs).then(b.nodes.cmp(&a.nodes)));
    out
}
