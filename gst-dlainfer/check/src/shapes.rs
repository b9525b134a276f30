// SPDX-License-Identifier: MIT OR Apache-2.0
//! Shape inference over an ONNX graph, with the values of small integer tensors carried along
//! (so `Shape -> Gather -> Concat -> Reshape` chains resolve), at one fixed input shape: the DLA
//! runs fixed shapes only, so the checker evaluates the model at the shape it will be built for.

use std::collections::HashMap;

use super::onnx::{AttrValue, DataType, DimDecl, Graph, Node, Tensor};

/// A dimension: known, or not known before run time.
pub type Dim = Option<i64>;

/// Tensors of at most this many elements have their values tracked.
const MAX_VALUES: usize = 4096;

/// What is known about one tensor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Info {
    pub dtype: Option<DataType>,
    pub shape: Option<Vec<Dim>>,
    /// Element values (row-major), where known; `None` elements are not known.
    pub value: Option<Vec<Option<f64>>>,
    /// A constant of the model (initializer or `Constant`), not a computed tensor.
    pub constant: bool,
}

impl Info {
    fn of_tensor(t: &Tensor) -> Self {
        Self {
            dtype: Some(t.data_type),
            shape: Some(t.dims.iter().map(|&d| Some(d)).collect()),
            value: t
                .values
                .as_ref()
                .map(|v| v.iter().map(|&x| Some(x)).collect()),
            constant: true,
        }
    }

    fn shaped(dtype: Option<DataType>, shape: Option<Vec<Dim>>) -> Self {
        Self {
            dtype,
            shape,
            value: None,
            constant: false,
        }
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(Vec::len)
    }

    /// The dims, when every one is known.
    pub fn dims(&self) -> Option<Vec<i64>> {
        self.shape.as_ref()?.iter().copied().collect()
    }

    /// All element values, when every one is known.
    pub fn values(&self) -> Option<Vec<f64>> {
        self.value.as_ref()?.iter().copied().collect()
    }

    pub fn ints(&self) -> Option<Vec<i64>> {
        Some(self.values()?.into_iter().map(|v| v as i64).collect())
    }

    /// Every dimension is known, and so is every value of a small tensor: the tensor is a
    /// build-time constant once shapes are fixed.
    pub fn is_known_constant(&self) -> bool {
        self.value
            .as_ref()
            .is_some_and(|v| v.iter().all(Option::is_some))
    }

    fn elements(&self) -> Option<usize> {
        self.dims()?
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
    }

    /// Attaches values when the tensor is small enough to track.
    fn with_value(mut self, value: Option<Vec<Option<f64>>>) -> Self {
        if let (Some(v), Some(n)) = (&value, self.elements())
            && v.len() == n
            && n <= MAX_VALUES
        {
            self.value = value;
        }
        self
    }
}

/// Known tensors by name, outer scopes first (a Loop body sees its parent's tensors).
pub struct Shapes {
    pub tensors: HashMap<String, Info>,
    opset: i64,
    /// The batch size the model is evaluated at: the leading dimension of a Loop's scan
    /// outputs when its trip count is not a constant (a loop over the batch, as exporters
    /// write per-image pre-processing).
    batch: i64,
}

impl Shapes {
    /// Infers every tensor of `graph`, with the graph inputs given by `inputs` (initializers
    /// that are also listed as inputs keep their constant value).
    pub fn infer(graph: &Graph, opset: i64, batch: i64, inputs: &HashMap<String, Info>) -> Self {
        let mut shapes = Shapes {
            tensors: HashMap::new(),
            opset,
            batch,
        };
        for t in &graph.initializers {
            shapes.tensors.insert(t.name.clone(), Info::of_tensor(t));
        }
        for (name, info) in inputs {
            shapes.tensors.entry(name.clone()).or_insert(info.clone());
        }
        shapes.run(graph);
        shapes
    }

    fn run(&mut self, graph: &Graph) {
        let declared: HashMap<&str, Info> = graph
            .value_info
            .iter()
            .chain(&graph.outputs)
            .map(|v| {
                let shape = v.shape.as_ref().map(|s| {
                    s.iter()
                        .map(|d| match d {
                            DimDecl::Value(v) if *v > 0 => Some(*v),
                            _ => None,
                        })
                        .collect()
                });
                (v.name.as_str(), Info::shaped(v.elem_type, shape))
            })
            .collect();
        for node in &graph.nodes {
            let outputs = self.node(node);
            for (i, name) in node.outputs.iter().enumerate() {
                if name.is_empty() {
                    continue;
                }
                let mut info = outputs.get(i).cloned().unwrap_or_default();
                if let Some(d) = declared.get(name.as_str()) {
                    if info.shape.is_none() {
                        info.shape = d.shape.clone();
                    }
                    info.dtype = info.dtype.or(d.dtype);
                }
                self.tensors.insert(name.clone(), info);
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Info> {
        if name.is_empty() {
            return None;
        }
        self.tensors.get(name)
    }

    fn input(&self, node: &Node, i: usize) -> Info {
        node.inputs
            .get(i)
            .and_then(|n| self.get(n))
            .cloned()
            .unwrap_or_default()
    }

    /// An optional input given as a constant list of integers.
    fn input_ints(&self, node: &Node, i: usize) -> Option<Vec<i64>> {
        self.get(node.inputs.get(i)?)?.ints()
    }

    /// The output infos of one node (in output order).
    fn node(&self, node: &Node) -> Vec<Info> {
        let x = self.input(node, 0);
        self.elementwise(node, &x)
            .or_else(|| self.layers(node, &x))
            .or_else(|| self.shape_ops(node, &x))
            .unwrap_or_else(|| vec![Info::default(); node.outputs.len()])
    }

    /// Element-wise operations: the output has the input's shape.
    fn elementwise(&self, node: &Node, x: &Info) -> Option<Vec<Info>> {
        let same = |dtype: Option<DataType>| Info::shaped(dtype.or(x.dtype), x.shape.clone());
        Some(match node.op_type.as_str() {
            "Identity" | "Dropout" => vec![x.clone()],
            "Cast" => {
                let to = node.int("to").map(|t| DataType::from_onnx(t as i32));
                let value = x.value.clone().map(|v| {
                    v.into_iter()
                        .map(|e| e.map(|e| cast(e, to)))
                        .collect::<Vec<_>>()
                });
                vec![same(to).with_value(value)]
            }
            "Relu"
            | "Sigmoid"
            | "Tanh"
            | "Clip"
            | "LeakyRelu"
            | "Exp"
            | "Abs"
            | "Neg"
            | "Sqrt"
            | "Log"
            | "Softmax"
            | "LogSoftmax"
            | "BatchNormalization"
            | "PRelu"
            | "Erf"
            | "HardSigmoid"
            | "HardSwish"
            | "Elu"
            | "Selu"
            | "Softplus"
            | "Reciprocal"
            | "Floor"
            | "Ceil"
            | "Round"
            | "LRN"
            | "InstanceNormalization"
            | "LayerNormalization"
            | "Sin"
            | "Cos"
            | "Atan"
            | "Mish"
            | "Gelu" => vec![same(None)],
            "Not" => vec![same(Some(DataType::Bool))],
            "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Mean" | "And"
            | "Or" | "Xor" | "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual"
            | "Where" | "Mod" => vec![self.broadcast_op(node)],
            _ => return None,
        })
    }

    /// Layers with shapes of their own: convolutions, pooling, products, reshapes.
    fn layers(&self, node: &Node, x: &Info) -> Option<Vec<Info>> {
        Some(match node.op_type.as_str() {
            "Conv" => vec![self.conv(node, false)],
            "ConvTranspose" => vec![self.conv(node, true)],
            "MaxPool" | "AveragePool" | "LpPool" => {
                let mut out = vec![self.pool(node)];
                out.push(Info::shaped(Some(DataType::Int64), out[0].shape.clone()));
                out
            }
            "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => {
                let shape = x.shape.as_ref().map(|s| {
                    s.iter()
                        .enumerate()
                        .map(|(i, &d)| if i < 2 { d } else { Some(1) })
                        .collect()
                });
                vec![Info::shaped(x.dtype, shape)]
            }
            "Flatten" => {
                let shape = x.shape.as_ref().map(|s| {
                    let axis = norm_axis(node.int("axis").unwrap_or(1), s.len() + 1);
                    vec![
                        product(&s[..axis.min(s.len())]),
                        product(&s[axis.min(s.len())..]),
                    ]
                });
                vec![Info::shaped(x.dtype, shape).with_value(x.value.clone())]
            }
            "Gemm" => vec![self.gemm(node)],
            "MatMul" => vec![self.matmul(node)],
            "Reshape" => vec![self.reshape(node)],
            "Transpose" => {
                let shape = x.shape.as_ref().map(|s| {
                    let perm: Vec<i64> = node
                        .ints("perm")
                        .map(<[i64]>::to_vec)
                        .unwrap_or_else(|| (0..s.len() as i64).rev().collect());
                    perm.iter()
                        .map(|&p| s.get(p as usize).copied().flatten())
                        .collect()
                });
                vec![Info::shaped(x.dtype, shape)]
            }
            "Squeeze" => vec![self.squeeze(node)],
            "Unsqueeze" => vec![self.unsqueeze(node)],
            "Concat" => vec![self.concat(node)],
            _ => return None,
        })
    }

    /// Operations on shapes and indices, constants, padding and loops.
    fn shape_ops(&self, node: &Node, x: &Info) -> Option<Vec<Info>> {
        Some(match node.op_type.as_str() {
            "Shape" => {
                let value = x.shape.as_ref().map(|s| {
                    let n = s.len() as i64;
                    let clamp = |v: i64| (if v < 0 { v + n } else { v }).clamp(0, n) as usize;
                    let start = clamp(node.int("start").unwrap_or(0));
                    let end = clamp(node.int("end").unwrap_or(n));
                    s[start..end.max(start)]
                        .iter()
                        .map(|d| d.map(|d| d as f64))
                        .collect::<Vec<_>>()
                });
                let len = value.as_ref().map(|v| v.len() as i64);
                vec![Info::shaped(Some(DataType::Int64), Some(vec![len])).with_value(value)]
            }
            "Size" => {
                let n = x.shape.as_ref().map(|s| product(s).map(|p| p as f64));
                vec![
                    Info::shaped(Some(DataType::Int64), Some(vec![]))
                        .with_value(n.map(|n| vec![n])),
                ]
            }
            "Gather" => vec![self.gather(node)],
            "Slice" => vec![self.slice(node)],
            "Split" => self.split(node),
            "Tile" => {
                let repeats = self.input_ints(node, 1);
                let shape = x.shape.as_ref().map(|s| {
                    s.iter()
                        .enumerate()
                        .map(|(i, &d)| Some(d? * repeats.as_ref()?.get(i).copied()?))
                        .collect()
                });
                vec![Info::shaped(x.dtype, shape)]
            }
            "Expand" => {
                let target = self.get_value_dims(node, 1);
                let shape = match (&x.shape, target) {
                    (Some(a), Some(b)) => broadcast(a, &b),
                    _ => None,
                };
                vec![Info::shaped(x.dtype, shape)]
            }
            "ConstantOfShape" => {
                let dims = x.value.clone();
                let (dtype, fill) = match node.attributes.get("value") {
                    Some(AttrValue::Tensor(t)) => (
                        t.data_type,
                        t.values.as_ref().and_then(|v| v.first().copied()),
                    ),
                    _ => (DataType::Float, Some(0.0)),
                };
                let shape = dims.map(|d| d.iter().map(|v| v.map(|v| v as i64)).collect());
                let info = Info::shaped(Some(dtype), shape);
                let value = info.elements().map(|n| vec![fill; n]);
                vec![info.with_value(value)]
            }
            "Constant" => vec![constant_node(node)],
            "Range" => {
                let (s, l, d) = (
                    self.input(node, 0).values(),
                    self.input(node, 1).values(),
                    self.input(node, 2).values(),
                );
                let len = match (s, l, d) {
                    (Some(s), Some(l), Some(d)) if d.first().is_some_and(|&d| d != 0.0) => {
                        Some(((l[0] - s[0]) / d[0]).ceil().max(0.0) as i64)
                    }
                    _ => None,
                };
                vec![Info::shaped(x.dtype, Some(vec![len]))]
            }
            "Resize" | "Upsample" => vec![self.resize(node)],
            "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL2"
            | "ReduceL1" | "ReduceLogSumExp" | "ReduceSumSquare" | "ArgMax" | "ArgMin" => {
                vec![self.reduce(node)]
            }
            "TopK" => {
                let k = self.input_ints(node, 1).and_then(|k| k.first().copied());
                let shape = x.shape.as_ref().map(|s| {
                    let axis = norm_axis(node.int("axis").unwrap_or(-1), s.len());
                    let mut s = s.clone();
                    if axis < s.len() {
                        s[axis] = k;
                    }
                    s
                });
                vec![
                    Info::shaped(x.dtype, shape.clone()),
                    Info::shaped(Some(DataType::Int64), shape),
                ]
            }
            "NonMaxSuppression" => vec![Info::shaped(
                Some(DataType::Int64),
                Some(vec![None, Some(3)]),
            )],
            "NonZero" => vec![Info::shaped(
                Some(DataType::Int64),
                x.rank().map(|r| vec![Some(r as i64), None]),
            )],
            "Pad" => {
                let pads = self
                    .input_ints(node, 1)
                    .or_else(|| node.ints("pads").map(<[i64]>::to_vec));
                let shape = x.shape.as_ref().map(|s| {
                    let r = s.len();
                    s.iter()
                        .enumerate()
                        .map(|(i, &d)| {
                            let p = pads.as_ref()?;
                            Some(d? + p.get(i)? + p.get(i + r)?)
                        })
                        .collect()
                });
                vec![Info::shaped(x.dtype, shape)]
            }
            "Loop" => self.loop_node(node),
            _ => return None,
        })
    }

    /// The values of input `i` as dims (for Reshape, Expand).
    fn get_value_dims(&self, node: &Node, i: usize) -> Option<Vec<Dim>> {
        let v = self.get(node.inputs.get(i)?)?.value.as_ref()?;
        Some(v.iter().map(|e| e.map(|e| e as i64)).collect())
    }

    fn broadcast_op(&self, node: &Node) -> Info {
        let infos: Vec<Info> = (0..node.inputs.len())
            .map(|i| self.input(node, i))
            .collect();
        let mut shape = infos.first().and_then(|i| i.shape.clone());
        for info in infos.iter().skip(1) {
            shape = match (shape, &info.shape) {
                (Some(a), Some(b)) => broadcast(&a, b),
                _ => None,
            };
        }
        let op = node.op_type.as_str();
        let dtype = match op {
            "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or"
            | "Xor" => Some(DataType::Bool),
            "Where" => infos.get(1).and_then(|i| i.dtype),
            _ => infos.iter().find_map(|i| i.dtype),
        };
        let info = Info::shaped(dtype, shape);
        // Values of elementwise arithmetic on small tensors (shape computations).
        let n = info.elements();
        let value = n.and_then(|n| {
            if infos.len() != 2 {
                return None;
            }
            let a = infos[0].value.as_ref()?;
            let b = infos[1].value.as_ref()?;
            let at = |v: &Vec<Option<f64>>, i: usize| {
                if v.len() == 1 {
                    v[0]
                } else {
                    v.get(i).copied().flatten()
                }
            };
            if !(a.len() == n || a.len() == 1) || !(b.len() == n || b.len() == 1) {
                return None;
            }
            let int = dtype.is_some_and(|t| !t.is_float());
            Some(
                (0..n)
                    .map(|i| {
                        let (a, b) = (at(a, i)?, at(b, i)?);
                        Some(match op {
                            "Add" | "Sum" => a + b,
                            "Sub" => a - b,
                            "Mul" => a * b,
                            "Div" if int && b != 0.0 => (a / b).trunc(),
                            "Div" => a / b,
                            "Max" => a.max(b),
                            "Min" => a.min(b),
                            "Less" => (a < b) as u8 as f64,
                            "Greater" => (a > b) as u8 as f64,
                            "Equal" => (a == b) as u8 as f64,
                            _ => return None,
                        })
                    })
                    .collect(),
            )
        });
        info.with_value(value)
    }

    fn conv(&self, node: &Node, transposed: bool) -> Info {
        let x = self.input(node, 0);
        let w = self.input(node, 1);
        let (Some(xs), Some(ws)) = (x.shape.as_ref(), w.shape.as_ref()) else {
            return Info::shaped(x.dtype, None);
        };
        let spatial = xs.len().saturating_sub(2);
        let group = node.int("group").unwrap_or(1);
        let kernel: Vec<Dim> = node
            .ints("kernel_shape")
            .map(|k| k.iter().map(|&k| Some(k)).collect())
            .unwrap_or_else(|| ws.iter().skip(2).copied().collect());
        let stride = node.ints_or("strides", spatial, 1);
        let dil = node.ints_or("dilations", spatial, 1);
        let pads = node.ints_or("pads", 2 * spatial, 0);
        let auto_pad = node.string("auto_pad").unwrap_or_default();
        let mut out = vec![xs.first().copied().flatten()];
        out.push(if transposed {
            ws.get(1).copied().flatten().map(|m| m * group)
        } else {
            ws.first().copied().flatten()
        });
        for i in 0..spatial {
            let d = (|| {
                let input = xs.get(2 + i).copied()??;
                let k = kernel.get(i).copied()??;
                let s = *stride.get(i)?;
                let dl = *dil.get(i)?;
                let ek = (k - 1) * dl + 1;
                if transposed {
                    if let Some(shape) = node.ints("output_shape") {
                        return shape.get(i).copied();
                    }
                    let op = node
                        .ints("output_padding")
                        .and_then(|p| p.get(i).copied())
                        .unwrap_or(0);
                    if auto_pad.starts_with("SAME") {
                        return Some(input * s);
                    }
                    let total = pads.get(i)? + pads.get(i + spatial)?;
                    Some(s * (input - 1) + op + ek - total)
                } else if auto_pad.starts_with("SAME") {
                    Some((input + s - 1) / s)
                } else {
                    let p = if auto_pad == "VALID" {
                        0
                    } else {
                        pads.get(i)? + pads.get(i + spatial)?
                    };
                    Some((input + p - ek) / s + 1)
                }
            })();
            out.push(d);
        }
        Info::shaped(x.dtype, Some(out))
    }

    fn pool(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let Some(xs) = x.shape.as_ref() else {
            return Info::shaped(x.dtype, None);
        };
        let spatial = xs.len().saturating_sub(2);
        let kernel = node
            .ints("kernel_shape")
            .map(<[i64]>::to_vec)
            .unwrap_or_default();
        let stride = node.ints_or("strides", spatial, 1);
        let dil = node.ints_or("dilations", spatial, 1);
        let pads = node.ints_or("pads", 2 * spatial, 0);
        let ceil = node.int("ceil_mode").unwrap_or(0) == 1;
        let auto_pad = node.string("auto_pad").unwrap_or_default();
        let mut out = xs[..2.min(xs.len())].to_vec();
        for i in 0..spatial {
            out.push((|| {
                let input = xs.get(2 + i).copied()??;
                let s = *stride.get(i)?;
                if auto_pad.starts_with("SAME") {
                    return Some((input + s - 1) / s);
                }
                let ek = (kernel.get(i)? - 1) * dil.get(i)? + 1;
                let p = if auto_pad == "VALID" {
                    0
                } else {
                    pads.get(i)? + pads.get(i + spatial)?
                };
                let span = input + p - ek;
                Some(if ceil {
                    (span + s - 1) / s + 1
                } else {
                    span / s + 1
                })
            })());
        }
        Info::shaped(x.dtype, Some(out))
    }

    fn gemm(&self, node: &Node) -> Info {
        let (a, b) = (self.input(node, 0), self.input(node, 1));
        let shape = (|| {
            let (a, b) = (a.shape.as_ref()?, b.shape.as_ref()?);
            let m = if node.int("transA") == Some(1) {
                a.get(1)?
            } else {
                a.first()?
            };
            let n = if node.int("transB") == Some(1) {
                b.first()?
            } else {
                b.get(1)?
            };
            Some(vec![*m, *n])
        })();
        Info::shaped(a.dtype, shape)
    }

    fn matmul(&self, node: &Node) -> Info {
        let (a, b) = (self.input(node, 0), self.input(node, 1));
        let shape = (|| {
            let (mut a, mut b) = (a.shape.clone()?, b.shape.clone()?);
            let (a1, b1) = (a.len() == 1, b.len() == 1);
            if a1 {
                a.insert(0, Some(1));
            }
            if b1 {
                b.push(Some(1));
            }
            let (ra, rb) = (a.len(), b.len());
            let mut out = broadcast(&a[..ra - 2], &b[..rb - 2])?;
            if !a1 {
                out.push(a[ra - 2]);
            }
            if !b1 {
                out.push(b[rb - 1]);
            }
            Some(out)
        })();
        Info::shaped(a.dtype, shape)
    }

    fn reshape(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let target = self.get_value_dims(node, 1).or_else(|| {
            node.ints("shape")
                .map(|s| s.iter().map(|&d| Some(d)).collect())
        });
        let allow_zero = node.int("allowzero").unwrap_or(0) == 1;
        let shape = target.map(|t| {
            let mut out: Vec<Dim> = t
                .iter()
                .enumerate()
                .map(|(i, &d)| match d {
                    Some(0) if !allow_zero => {
                        x.shape.as_ref().and_then(|s| s.get(i).copied().flatten())
                    }
                    Some(-1) => None,
                    other => other,
                })
                .collect();
            if let Some(pos) = t.iter().position(|&d| d == Some(-1))
                && let (Some(total), Some(known)) = (
                    x.shape.as_ref().and_then(|s| product(s)),
                    out.iter()
                        .enumerate()
                        .filter(|&(i, _)| i != pos)
                        .try_fold(1i64, |acc, (_, d)| Some(acc * (*d)?)),
                )
                && known > 0
            {
                out[pos] = Some(total / known);
            }
            out
        });
        Info::shaped(x.dtype, shape).with_value(x.value.clone())
    }

    fn axes(&self, node: &Node, input: usize) -> Option<Vec<i64>> {
        node.ints("axes")
            .map(<[i64]>::to_vec)
            .or_else(|| self.input_ints(node, input))
    }

    fn squeeze(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let axes = self.axes(node, 1);
        let shape = x.shape.as_ref().and_then(|s| {
            let r = s.len();
            match &axes {
                Some(a) => {
                    let a: Vec<usize> = a.iter().map(|&v| norm_axis(v, r)).collect();
                    Some(
                        s.iter()
                            .enumerate()
                            .filter(|(i, _)| !a.contains(i))
                            .map(|(_, &d)| d)
                            .collect(),
                    )
                }
                None if s.iter().all(Option::is_some) => {
                    Some(s.iter().copied().filter(|&d| d != Some(1)).collect())
                }
                None => None,
            }
        });
        Info::shaped(x.dtype, shape).with_value(x.value.clone())
    }

    fn unsqueeze(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let axes = self.axes(node, 1);
        let shape = x.shape.as_ref().zip(axes.as_ref()).map(|(s, a)| {
            let r = s.len() + a.len();
            let mut a: Vec<usize> = a.iter().map(|&v| norm_axis(v, r)).collect();
            a.sort_unstable();
            let mut out = s.clone();
            for i in a {
                out.insert(i.min(out.len()), Some(1));
            }
            out
        });
        Info::shaped(x.dtype, shape).with_value(x.value.clone())
    }

    fn concat(&self, node: &Node) -> Info {
        let infos: Vec<Info> = (0..node.inputs.len())
            .map(|i| self.input(node, i))
            .collect();
        let first = infos.first().cloned().unwrap_or_default();
        let shape = (|| {
            let base = first.shape.clone()?;
            let axis = norm_axis(node.int("axis")?, base.len());
            let mut out = base;
            let mut total = Some(0i64);
            for info in &infos {
                let d = info.shape.as_ref()?.get(axis).copied()?;
                total = total.zip(d).map(|(t, d)| t + d);
            }
            *out.get_mut(axis)? = total;
            Some(out)
        })();
        let value = infos
            .iter()
            .map(|i| i.value.clone())
            .collect::<Option<Vec<_>>>()
            .map(|v| v.concat());
        Info::shaped(first.dtype, shape).with_value(value)
    }

    fn gather(&self, node: &Node) -> Info {
        let (data, idx) = (self.input(node, 0), self.input(node, 1));
        let shape = (|| {
            let ds = data.shape.as_ref()?;
            let axis = norm_axis(node.int("axis").unwrap_or(0), ds.len());
            let mut out = ds[..axis].to_vec();
            out.extend(idx.shape.clone()?);
            out.extend_from_slice(ds.get(axis + 1..)?);
            Some(out)
        })();
        // Values of a gather from a 1-D tensor (shape vectors).
        let value = (|| {
            if data.rank()? != 1 {
                return None;
            }
            let v = data.value.as_ref()?;
            let n = v.len() as i64;
            idx.ints()?
                .iter()
                .map(|&i| v.get((if i < 0 { i + n } else { i }) as usize).copied())
                .collect::<Option<Vec<_>>>()
        })();
        Info::shaped(data.dtype, shape).with_value(value)
    }

    /// Slice parameters resolved to (axis, start, end, step) per sliced axis, where known.
    pub fn slice_params(&self, node: &Node) -> Option<Vec<(usize, i64, i64, i64)>> {
        let x = self.input(node, 0);
        let rank = x.rank()?;
        let (starts, ends, axes, steps) = if self.opset < 10 {
            (
                node.ints("starts")?.to_vec(),
                node.ints("ends")?.to_vec(),
                node.ints("axes").map(<[i64]>::to_vec),
                None,
            )
        } else {
            (
                self.input_ints(node, 1)?,
                self.input_ints(node, 2)?,
                node.inputs
                    .get(3)
                    .filter(|n| !n.is_empty())
                    .map(|_| self.input_ints(node, 3))
                    .unwrap_or(None),
                node.inputs
                    .get(4)
                    .filter(|n| !n.is_empty())
                    .map(|_| self.input_ints(node, 4))
                    .unwrap_or(None),
            )
        };
        let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
        Some(
            axes.iter()
                .enumerate()
                .map(|(i, &a)| {
                    let step = steps.as_ref().and_then(|s| s.get(i).copied()).unwrap_or(1);
                    (
                        norm_axis(a, rank),
                        starts[i.min(starts.len() - 1)],
                        ends[i.min(ends.len() - 1)],
                        step,
                    )
                })
                .collect(),
        )
    }

    fn slice(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let params = self.slice_params(node);
        let shape = x.shape.as_ref().map(|s| {
            let mut out = s.clone();
            for (axis, d) in out.iter_mut().enumerate() {
                let Some(params) = &params else {
                    *d = None;
                    continue;
                };
                if let Some(&(_, start, end, step)) = params.iter().find(|p| p.0 == axis) {
                    *d = d.and_then(|len| slice_len(len, start, end, step));
                }
            }
            out
        });
        let value = (|| {
            let v = x.value.as_ref()?;
            if x.rank()? != 1 {
                return None;
            }
            let &[(_, start, end, step)] = params.as_deref()? else {
                return None;
            };
            let n = v.len() as i64;
            let (start, len) = slice_range(n, start, end, step)?;
            Some((0..len).map(|i| v[(start + i * step) as usize]).collect())
        })();
        Info::shaped(x.dtype, shape).with_value(value)
    }

    fn split(&self, node: &Node) -> Vec<Info> {
        let x = self.input(node, 0);
        let n = node.outputs.len();
        let Some(s) = x.shape.as_ref() else {
            return vec![Info::shaped(x.dtype, None); n];
        };
        let axis = norm_axis(node.int("axis").unwrap_or(0), s.len());
        let sizes: Option<Vec<i64>> = node
            .ints("split")
            .map(<[i64]>::to_vec)
            .or_else(|| self.input_ints(node, 1))
            .or_else(|| {
                let total = s.get(axis).copied()??;
                let parts = n as i64;
                let each = (total + parts - 1) / parts;
                Some((0..parts).map(|i| each.min(total - i * each)).collect())
            });
        (0..n)
            .map(|i| {
                let mut out = s.clone();
                if axis < out.len() {
                    out[axis] = sizes.as_ref().and_then(|v| v.get(i).copied());
                }
                Info::shaped(x.dtype, Some(out))
            })
            .collect()
    }

    /// Resize scales per axis, from the scales input, or from the sizes input and the input
    /// shape.
    pub fn resize_scales(&self, node: &Node) -> Option<Vec<f64>> {
        let x = self.input(node, 0);
        let scales_input = match (node.op_type.as_str(), self.opset) {
            ("Upsample", _) | (_, 10) => 1,
            _ => 2,
        };
        if let Some(scales) = node
            .inputs
            .get(scales_input)
            .and_then(|n| self.get(n))
            .and_then(Info::values)
            && !scales.is_empty()
        {
            return Some(scales);
        }
        if let Some(scales) = node.attributes.get("scales")
            && let AttrValue::Floats(f) = scales
        {
            return Some(f.iter().map(|&v| v as f64).collect());
        }
        let sizes = self.input_ints(node, 3)?;
        let dims = x.dims()?;
        (sizes.len() == dims.len()).then(|| {
            sizes
                .iter()
                .zip(&dims)
                .map(|(&o, &i)| o as f64 / i as f64)
                .collect()
        })
    }

    fn resize(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let sizes = self.input_ints(node, 3);
        let shape = match sizes {
            Some(s) if !s.is_empty() => Some(s.iter().map(|&d| Some(d)).collect()),
            _ => x
                .shape
                .as_ref()
                .zip(self.resize_scales(node))
                .map(|(s, sc)| {
                    s.iter()
                        .zip(&sc)
                        .map(|(&d, &f)| d.map(|d| (d as f64 * f).floor() as i64))
                        .collect()
                }),
        };
        Info::shaped(x.dtype, shape)
    }

    fn reduce(&self, node: &Node) -> Info {
        let x = self.input(node, 0);
        let keep = node.int("keepdims").unwrap_or(1) == 1;
        let arg = node.op_type.starts_with("Arg");
        let axes: Option<Vec<i64>> = if arg {
            Some(vec![node.int("axis").unwrap_or(0)])
        } else {
            self.axes(node, 1)
        };
        let shape = x.shape.as_ref().map(|s| {
            let r = s.len();
            let axes: Vec<usize> = match &axes {
                Some(a) if !a.is_empty() => a.iter().map(|&v| norm_axis(v, r)).collect(),
                _ => (0..r).collect(),
            };
            s.iter()
                .enumerate()
                .filter_map(|(i, &d)| match (axes.contains(&i), keep) {
                    (false, _) => Some(d),
                    (true, true) => Some(Some(1)),
                    (true, false) => None,
                })
                .collect()
        });
        let dtype = if arg { Some(DataType::Int64) } else { x.dtype };
        Info::shaped(dtype, shape)
    }

    /// Loop: the body is inferred with the loop-carried inputs and the outer scope; scan
    /// outputs gain a leading dimension of the trip count, which is not known in general.
    fn loop_node(&self, node: &Node) -> Vec<Info> {
        let Some(body) = node.graph("body") else {
            return vec![Info::default(); node.outputs.len()];
        };
        let carried = node.inputs.len().saturating_sub(2);
        let mut scope: HashMap<String, Info> = self.tensors.clone();
        for (i, input) in body.inputs.iter().enumerate() {
            let info = match i {
                0 => Info::shaped(Some(DataType::Int64), Some(vec![])),
                1 => Info::shaped(Some(DataType::Bool), Some(vec![])),
                _ => self.input(node, i),
            };
            scope.insert(input.name.clone(), info);
        }
        let inner = Shapes::infer(body, self.opset, self.batch, &scope);
        let trip = self
            .input_ints(node, 0)
            .and_then(|v| v.first().copied())
            .filter(|&t| (0..=8192).contains(&t))
            .unwrap_or(self.batch);
        body.outputs
            .iter()
            .skip(1)
            .enumerate()
            .map(|(i, out)| {
                let info = inner.get(&out.name).cloned().unwrap_or_default();
                if i < carried {
                    info
                } else {
                    let shape = info.shape.map(|s| {
                        let mut v = vec![Some(trip)];
                        v.extend(s);
                        v
                    });
                    Info::shaped(info.dtype, shape)
                }
            })
            .collect()
    }
}

fn constant_node(node: &Node) -> Info {
    let tensor = |t: &Tensor| Info::of_tensor(t);
    let info = match node.attributes.get("value") {
        Some(AttrValue::Tensor(t)) => tensor(t),
        _ => {
            let (dtype, values): (DataType, Vec<f64>) = if let Some(v) = node.float("value_float") {
                (DataType::Float, vec![v as f64])
            } else if let Some(v) = node.int("value_int") {
                (DataType::Int64, vec![v as f64])
            } else if let Some(v) = node.ints("value_ints") {
                (DataType::Int64, v.iter().map(|&x| x as f64).collect())
            } else if let Some(AttrValue::Floats(v)) = node.attributes.get("value_floats") {
                (DataType::Float, v.iter().map(|&x| x as f64).collect())
            } else {
                return Info::default();
            };
            let scalar = node.float("value_float").is_some() || node.int("value_int").is_some();
            let shape = if scalar {
                vec![]
            } else {
                vec![Some(values.len() as i64)]
            };
            Info {
                dtype: Some(dtype),
                shape: Some(shape),
                value: Some(values.into_iter().map(Some).collect()),
                constant: true,
            }
        }
    };
    Info {
        constant: true,
        ..info
    }
}

fn cast(v: f64, to: Option<DataType>) -> f64 {
    match to {
        Some(t) if !t.is_float() => v.trunc(),
        _ => v,
    }
}

/// Dims as text, `?` for unknown ones: `[1,3,?,?]`.
pub fn dims_text(s: &[Dim]) -> String {
    let dims: Vec<String> = s
        .iter()
        .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
        .collect();
    format!("[{}]", dims.join(","))
}

/// An axis attribute in 0..rank.
pub fn norm_axis(axis: i64, rank: usize) -> usize {
    if axis < 0 {
        (axis + rank as i64).max(0) as usize
    } else {
        axis as usize
    }
}

fn product(dims: &[Dim]) -> Dim {
    dims.iter().try_fold(1i64, |acc, &d| Some(acc * d?))
}

/// Numpy-style broadcasting of two shapes; `None` where the shapes cannot broadcast.
pub fn broadcast(a: &[Dim], b: &[Dim]) -> Option<Vec<Dim>> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let da = if i + a.len() >= r {
                a[i + a.len() - r]
            } else {
                Some(1)
            };
            let db = if i + b.len() >= r {
                b[i + b.len() - r]
            } else {
                Some(1)
            };
            match (da, db) {
                (Some(1), d) | (d, Some(1)) => Some(d),
                (Some(x), Some(y)) if x == y => Some(Some(x)),
                (Some(_), Some(_)) => None,
                (Some(x), None) | (None, Some(x)) => Some(Some(x)),
                (None, None) => Some(None),
            }
        })
        .collect()
}

/// Start and element count of a slice of a dimension of `len`.
fn slice_range(len: i64, start: i64, end: i64, step: i64) -> Option<(i64, i64)> {
    if step == 0 {
        return None;
    }
    let clamp = |v: i64, lo: i64, hi: i64| {
        let v = if v < 0 { v + len } else { v };
        v.clamp(lo, hi)
    };
    if step > 0 {
        let (s, e) = (clamp(start, 0, len), clamp(end, 0, len));
        Some((s, ((e - s + step - 1) / step).max(0)))
    } else {
        let (s, e) = (clamp(start, -1, len - 1), clamp(end, -1, len - 1));
        Some((s, ((s - e - step - 1) / -step).max(0)))
    }
}

fn slice_len(len: i64, start: i64, end: i64, step: i64) -> Dim {
    slice_range(len, start, end, step).map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let s = |v: &[i64]| v.iter().map(|&d| Some(d)).collect::<Vec<_>>();
        assert_eq!(
            broadcast(&s(&[1, 32, 8, 8]), &s(&[32, 1, 1])),
            Some(s(&[1, 32, 8, 8]))
        );
        assert_eq!(broadcast(&s(&[4]), &s(&[3])), None);
        assert_eq!(
            broadcast(&[None, Some(3)], &s(&[1])),
            Some(vec![None, Some(3)])
        );
    }

    #[test]
    fn slices_count_like_onnx() {
        assert_eq!(slice_len(10, 0, i64::MAX, 1), Some(10));
        assert_eq!(slice_len(10, 2, -2, 2), Some(3));
        assert_eq!(slice_len(10, -1, i64::MIN, -1), Some(10));
        assert_eq!(slice_len(4, 5, 9, 1), Some(0));
    }
}
