// SPDX-License-Identifier: MIT OR Apache-2.0
//! What an ONNX model must pass before any backend opens it ([`check_file`]): bounds that real
//! models stay far below, so that a broken or hostile model is refused with a message naming the
//! bound, instead of a runtime loading it for minutes, with gigabytes, or running a loop that
//! never ends. Each bound is one constant below, with its reason.
//!
//! - IR version and `ai.onnx` operator set within what the runtimes know ([`IR_VERSIONS`],
//!   [`OPSETS`]): OpenVINO runs a model of operator set 99 without a word.
//! - Nodes and initializers, those of subgraphs (Loop, If and Scan bodies) and local functions
//!   included ([`MAX_NODES`], [`MAX_INITIALIZERS`]), and the nesting of subgraphs
//!   ([`MAX_DEPTH`]). The runtimes inline each call of a local function, so the nodes are
//!   counted as inlined (a call counts its function's nodes); a function that calls itself,
//!   directly or through others, is refused.
//! - A `Loop` that only its trip count can end (no condition, or a condition its body passes on
//!   unchanged) runs at most [`MAX_LOOP_TRIPS`] times where that count is a constant. A trip
//!   count computed at run time is allowed, and so is a constant one where the body's condition
//!   ends the loop (converters write while loops with a trip count of 2^63 - 1): stopping the
//!   element ends such a run.
//! - Tensors kept in external files (sparse tensors' included) name one file inside the
//!   model's directory, as the ONNX specification says they are: relative, without `..`, not
//!   leaving it through a symbolic link, and regular files.
//!
//! The model is read through views of `onnx.proto` (field numbers as in [`super::proto`]) that
//! hold only what the checks look at, as slices of the file's bytes (nothing is copied). A graph's
//! nodes are first only counted (the counted items have no size, so counting allocates nothing)
//! and refused past the bound before any of them is looked at: the checks of a model of a million
//! nodes cost its file's bytes and no more.

use std::collections::{HashMap, HashSet};
use std::ops::RangeInclusive;
use std::path::{Component, Path, PathBuf};

use prost::Message;
use prost::bytes::Bytes;

use super::proto::{OperatorSetIdProto, StringStringEntryProto, data_type};

/// The IR versions opened: from 3 (the first with `opset_import`) to 13, the newest that ONNX
/// Runtime 1.31 reads (it refuses later ones itself; OpenVINO 2026.4 reads IR version 99 without
/// a word, guessing at what it holds).
pub const IR_VERSIONS: RangeInclusive<i64> = 3..=13;

/// The `ai.onnx` operator sets opened: from 7, the oldest ONNX Runtime supports, to 26, the
/// newest of ONNX Runtime 1.31 (it refuses later ones; OpenVINO 2026.4 runs operator set 99
/// without a word, with whatever its operators meant in the sets it knows).
pub const OPSETS: RangeInclusive<i64> = 7..=26;

/// Nodes of a model, those of subgraphs and local functions included. The largest real
/// detectors have 1,000-5,000 (the example models 100-370). ONNX Runtime 1.31 took 2.8 GB to
/// load a model of 10^6 nodes (28 MB), and 5.7 s and 380 MB for a chain of 100,000 (2 CPU
/// cores): this bound keeps loading within that and still leaves 20 times the largest real
/// model.
pub const MAX_NODES: usize = 100_000;

/// Initializers (weights and constants) of a model, subgraphs included: real models have about
/// one per weighted node, so the bound is that of the nodes.
pub const MAX_INITIALIZERS: usize = MAX_NODES;

/// How deep subgraphs nest (a Loop in an If branch is 2): real models nest 1 to 3 deep; 32 keeps
/// the check's own recursion small whatever the file says.
pub const MAX_DEPTH: usize = 32;

/// The largest constant trip count of a `Loop` that only its count ends (and the cap of every
/// loop on OpenVINO, [`super::loops`]). Real models loop over classes, boxes or sequence steps:
/// thousands of times at most. ONNX Runtime and OpenVINO take 1.2-1.6 us a trip of a one-node
/// body, so a million trips is already 1-2 s of a frame's time; 2^62 (the defect's model) would
/// take 200,000 years.
pub const MAX_LOOP_TRIPS: i64 = 1_000_000;

/// What the checks learned about a model that passed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFacts {
    pub ir_version: i64,
    /// The `ai.onnx` operator set, where the model imports it.
    pub opset: Option<i64>,
    /// Nodes, those of subgraphs included, and each call of a local function counted as the
    /// function's nodes (a function no one calls counts once).
    pub nodes: usize,
    /// Files beside the model that hold some of its tensors, as the model names them.
    pub external_files: Vec<PathBuf>,
}

/// Reads the ONNX model at `path` (a regular file of at most
/// [`ferrostream_core::files::MAX_MODEL_FILE_BYTES`]) and checks it; the error says which bound
/// it passed or what is wrong, without the model's path (the caller names it).
pub fn check_file(path: &Path) -> Result<ModelFacts, String> {
    use ferrostream_core::files;
    let bytes = files::read(path, files::MAX_MODEL_FILE_BYTES).map_err(|e| e.to_string())?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    check(Bytes::from(bytes), dir)
}

/// Checks the ONNX model `bytes`, whose file is in `dir` (where its external data must be).
pub fn check(bytes: Bytes, dir: &Path) -> Result<ModelFacts, String> {
    let model = ModelView::decode(bytes).map_err(parse_error)?;
    let ir_version = model.ir_version.unwrap_or(0);
    if !IR_VERSIONS.contains(&ir_version) {
        return Err(format!(
            "the model's IR version is {ir_version}; Ferrostream opens IR versions {} to {} \
             (those ONNX Runtime 1.31 reads)",
            IR_VERSIONS.start(),
            IR_VERSIONS.end()
        ));
    }
    let opset = model
        .opset_import
        .iter()
        .filter(|o| matches!(o.domain(), "" | "ai.onnx"))
        .map(|o| o.version())
        .max();
    if let Some(opset) = opset
        && !OPSETS.contains(&opset)
    {
        return Err(format!(
            "the model imports operator set {opset} of ai.onnx; Ferrostream opens operator sets \
             {} to {} (those ONNX Runtime 1.31 knows)",
            OPSETS.start(),
            OPSETS.end()
        ));
    }
    let mut scan = Scan {
        dir,
        canonical_dir: None,
        nodes: 0,
        initializers: 0,
        constants: HashMap::new(),
        loops: Vec::new(),
        functions: HashMap::new(),
        owner: 0,
        sizes: Vec::new(),
        calls: Vec::new(),
        external: HashSet::new(),
        external_files: Vec::new(),
    };
    let Some(graph) = model.graph else {
        return Err("the model has no graph".into());
    };
    // Each function's nodes are counted (raw) before any is read; its key is what calls it.
    let mut functions = Vec::with_capacity(model.functions.len());
    scan.sizes.push(0);
    for function in model.functions {
        let count = FunctionCount::decode(function.clone()).map_err(parse_error)?;
        scan.count_nodes(count.node.len())?;
        scan.sizes.push(count.node.len());
        let function = FunctionView::decode(function).map_err(parse_error)?;
        let key = FunctionKey {
            domain: function.domain.clone().unwrap_or_default(),
            name: function.name.clone().unwrap_or_default(),
            overload: function.overload.clone().unwrap_or_default(),
        };
        scan.functions.entry(key).or_insert(functions.len() + 1);
        functions.push(function);
    }
    scan.calls = vec![Vec::new(); functions.len() + 1];
    scan.graph(graph, "", 0)?;
    scan.check_loops()?;
    // A local function's names are its own: its loops are looked up among its constants.
    for (index, function) in functions.iter().enumerate() {
        scan.owner = index + 1;
        let place = format!(" (in function `{}`)", text(&function.name));
        for (index, node) in function.node.iter().enumerate() {
            scan.node(node.clone(), index, &place, 0)?;
        }
        scan.check_loops()?;
    }
    let names: Vec<String> = functions.iter().map(|f| text(&f.name)).collect();
    let nodes = inlined_nodes(&scan.sizes, &scan.calls, &names)?;
    if nodes > MAX_NODES {
        return Err(format!(
            "the model has {nodes} nodes or more once each call of a local function is counted              as the function's nodes (as the runtimes inline them), more than the {MAX_NODES} \
             Ferrostream opens: real detectors have 1,000 to 5,000, and a runtime takes about 3 \
             KB of memory a node to load them"
        ));
    }
    Ok(ModelFacts {
        ir_version,
        opset,
        nodes,
        external_files: scan.external_files,
    })
}

/// A local function as a node calls it: its domain, name and overload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FunctionKey {
    domain: Bytes,
    name: Bytes,
    overload: Bytes,
}

/// The model's nodes with each call of a local function counted as the function's nodes, its
/// own calls included (saturating): `sizes[0]` and `calls[0]` are the main graph's nodes and the
/// functions it calls (by index + 1), `sizes[f]` and `calls[f]` those of function `f - 1`
/// (`names[f - 1]`). A function no one calls counts once. A function that calls itself,
/// directly or through others, is refused: no runtime can inline it.
fn inlined_nodes(sizes: &[usize], calls: &[Vec<usize>], names: &[String]) -> Result<usize, String> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; sizes.len()];
    let mut total = vec![0usize; sizes.len()];
    // Depth first without recursion (a chain of functions can be as long as the bound): each
    // entry is a function, the next of its calls to follow, and its total so far.
    for root in 0..sizes.len() {
        if state[root] != NEW {
            continue;
        }
        state[root] = OPEN;
        let mut stack = vec![(root, 0usize, sizes[root])];
        while let Some((f, next, sum)) = stack.last_mut() {
            let Some(&callee) = calls[*f].get(*next) else {
                let (f, _, sum) = stack.pop().unwrap_or_default();
                state[f] = DONE;
                total[f] = sum;
                if let Some((_, _, caller)) = stack.last_mut() {
                    *caller = caller.saturating_add(sum);
                }
                continue;
            };
            *next += 1;
            match state[callee] {
                DONE => *sum = sum.saturating_add(total[callee]),
                OPEN => {
                    return Err(format!(
                        "local function `{}` calls itself (directly or through other functions): \
                         no runtime can inline it",
                        names[callee - 1]
                    ));
                }
                _ => {
                    state[callee] = OPEN;
                    stack.push((callee, 0, sizes[callee]));
                }
            }
        }
    }
    // The main graph, and the functions no one calls (counted once, as before they are read).
    let mut called = vec![false; sizes.len()];
    for &callee in calls.iter().flatten() {
        called[callee] = true;
    }
    Ok((1..sizes.len())
        .filter(|&f| !called[f])
        .fold(total[0], |sum, f| sum.saturating_add(total[f])))
}

fn parse_error(e: prost::DecodeError) -> String {
    format!("the ONNX model cannot be parsed (protobuf: {e})")
}

/// A name from the model, for messages.
fn text(bytes: &Option<Bytes>) -> String {
    String::from_utf8_lossy(bytes.as_deref().unwrap_or_default()).into_owned()
}

/// A message whose fields are all skipped: counting such items allocates nothing (they have
/// no size).
#[derive(Clone, PartialEq, prost::Message)]
struct Counted {}

/// `ModelProto`: versions, the graph and local functions.
#[derive(Clone, PartialEq, prost::Message)]
struct ModelView {
    #[prost(int64, optional, tag = "1")]
    ir_version: Option<i64>,
    #[prost(message, repeated, tag = "8")]
    opset_import: Vec<OperatorSetIdProto>,
    #[prost(bytes = "bytes", optional, tag = "7")]
    graph: Option<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "25")]
    functions: Vec<Bytes>,
}

/// `GraphProto`, its nodes and initializers counted.
#[derive(Clone, PartialEq, prost::Message)]
struct GraphCount {
    #[prost(message, repeated, tag = "1")]
    node: Vec<Counted>,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<Counted>,
}

/// `GraphProto`, each node and initializer still encoded.
#[derive(Clone, PartialEq, prost::Message)]
struct GraphView {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    node: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "5")]
    initializer: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "15")]
    sparse_initializer: Vec<Bytes>,
}

/// `SparseTensorProto`: its two tensors, either of which can be in an external file.
#[derive(Clone, PartialEq, prost::Message)]
struct SparseTensorView {
    #[prost(message, optional, tag = "1")]
    values: Option<TensorView>,
    #[prost(message, optional, tag = "2")]
    indices: Option<TensorView>,
}

/// `FunctionProto`, its nodes counted.
#[derive(Clone, PartialEq, prost::Message)]
struct FunctionCount {
    #[prost(message, repeated, tag = "7")]
    node: Vec<Counted>,
}

/// `FunctionProto`, each node still encoded.
#[derive(Clone, PartialEq, prost::Message)]
struct FunctionView {
    #[prost(bytes = "bytes", optional, tag = "1")]
    name: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "10")]
    domain: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "13")]
    overload: Option<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "7")]
    node: Vec<Bytes>,
}

/// `NodeProto`; names as bytes (protobuf's C++ reader, which the runtimes use, takes any).
#[derive(Clone, PartialEq, prost::Message)]
struct NodeView {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    input: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "2")]
    output: Vec<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "3")]
    name: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "4")]
    op_type: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "7")]
    domain: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "8")]
    overload: Option<Bytes>,
    #[prost(message, repeated, tag = "5")]
    attribute: Vec<AttributeView>,
}

/// `AttributeProto`: what a `Constant` holds, and subgraphs.
#[derive(Clone, PartialEq, prost::Message)]
struct AttributeView {
    #[prost(bytes = "bytes", optional, tag = "1")]
    name: Option<Bytes>,
    #[prost(int64, optional, tag = "3")]
    i: Option<i64>,
    #[prost(message, optional, tag = "5")]
    t: Option<TensorView>,
    #[prost(bytes = "bytes", optional, tag = "6")]
    g: Option<Bytes>,
    #[prost(int64, repeated, packed = "false", tag = "8")]
    ints: Vec<i64>,
    #[prost(message, repeated, tag = "10")]
    tensors: Vec<TensorView>,
    #[prost(bytes = "bytes", repeated, tag = "11")]
    graphs: Vec<Bytes>,
    #[prost(message, optional, tag = "22")]
    sparse_tensor: Option<SparseTensorView>,
    #[prost(message, repeated, tag = "23")]
    sparse_tensors: Vec<SparseTensorView>,
}

/// `GraphProto` of a `Loop`'s body: what ends the loop.
#[derive(Clone, PartialEq, prost::Message)]
struct BodyView {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    node: Vec<Bytes>,
    #[prost(message, repeated, tag = "11")]
    input: Vec<NamedView>,
    #[prost(message, repeated, tag = "12")]
    output: Vec<NamedView>,
}

/// `ValueInfoProto`'s name.
#[derive(Clone, PartialEq, prost::Message)]
struct NamedView {
    #[prost(bytes = "bytes", optional, tag = "1")]
    name: Option<Bytes>,
}

/// `TensorProto`: a single integer's value, and where external data is.
#[derive(Clone, PartialEq, prost::Message)]
struct TensorView {
    #[prost(int64, repeated, packed = "false", tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, optional, tag = "2")]
    data_type: Option<i32>,
    #[prost(int32, repeated, tag = "5")]
    int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    int64_data: Vec<i64>,
    #[prost(bytes = "bytes", optional, tag = "8")]
    name: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "9")]
    raw_data: Option<Bytes>,
    #[prost(message, repeated, tag = "13")]
    external_data: Vec<StringStringEntryProto>,
    #[prost(int32, optional, tag = "14")]
    data_location: Option<i32>,
}

/// The value of a tensor of one INT64 element held in the model (not in an external file),
/// from its fields: the one reader of such constants, for the checks and for
/// [`super::loops`].
pub(crate) fn single_int64(
    data_type: Option<i32>,
    dims: &[i64],
    raw_data: Option<&[u8]>,
    int64_data: &[i64],
    external: bool,
) -> Option<i64> {
    if data_type != Some(data_type::INT64) || !dims.iter().all(|&d| d == 1) || external {
        return None;
    }
    match raw_data {
        Some(raw) => Some(i64::from_le_bytes(raw.try_into().ok()?)),
        None => match int64_data {
            [value] => Some(*value),
            _ => None,
        },
    }
}

/// The single INT64 that a `Constant` node's attribute `name` sets its output to: `value` (a
/// tensor, whose [`single_int64`] is `tensor`), `value_int`, or `value_ints` of one element.
/// Shared with [`super::loops`], so that the check and the capping agree on what is constant.
pub(crate) fn constant_int64(
    name: &[u8],
    i: Option<i64>,
    ints: &[i64],
    tensor: Option<i64>,
) -> Option<i64> {
    match name {
        b"value" => tensor,
        b"value_int" => i,
        b"value_ints" => match ints {
            [value] => Some(*value),
            _ => None,
        },
        _ => None,
    }
}

impl TensorView {
    /// The value of a tensor of one INT64 element held in the model.
    fn single_i64(&self) -> Option<i64> {
        single_int64(
            self.data_type,
            &self.dims,
            self.raw_data.as_deref(),
            &self.int64_data,
            self.is_external(),
        )
    }

    /// Whether this is a single BOOL element that is true.
    fn is_true(&self) -> bool {
        if self.data_type != Some(data_type::BOOL)
            || !self.dims.iter().all(|&d| d == 1)
            || self.is_external()
        {
            return false;
        }
        match &self.raw_data {
            Some(raw) => raw.len() == 1 && raw[0] != 0,
            None => matches!(self.int32_data[..], [v] if v != 0),
        }
    }

    fn is_external(&self) -> bool {
        self.data_location == Some(1) || !self.external_data.is_empty()
    }
}

/// Whether only its trip count ends `node`, a `Loop`: it has no condition (a for loop), or its
/// body passes the condition on unchanged (directly, through `Identity`) or sets it to a
/// constant true.
fn ends_only_by_trip_count(node: &NodeView) -> Result<bool, String> {
    if node.input.get(1).is_none_or(|c| c.is_empty()) {
        return Ok(true);
    }
    let Some(body) = node
        .attribute
        .iter()
        .find(|a| a.name.as_deref() == Some(b"body"))
        .and_then(|a| a.g.clone())
    else {
        return Ok(false);
    };
    let body = BodyView::decode(body).map_err(parse_error)?;
    let (Some(condition_in), Some(condition_out)) = (
        body.input.get(1).and_then(|v| v.name.as_ref()),
        body.output.first().and_then(|v| v.name.as_ref()),
    ) else {
        return Ok(false);
    };
    if condition_in == condition_out {
        return Ok(true);
    }
    for bytes in body.node {
        let inner = NodeView::decode(bytes).map_err(parse_error)?;
        if inner.output.first() != Some(condition_out) {
            continue;
        }
        return Ok(match inner.op_type.as_deref() {
            Some(b"Identity") => inner.input.first() == Some(condition_in),
            Some(b"Constant") => inner.attribute.iter().any(|a| {
                a.name.as_deref() == Some(b"value") && a.t.as_ref().is_some_and(TensorView::is_true)
            }),
            _ => false,
        });
    }
    Ok(false)
}

/// A `Loop` that only its trip count ends, and that count, looked up once the whole graph is
/// read.
struct LoopSite {
    /// The node and where it is, for messages.
    node: String,
    trip_count: Bytes,
}

struct Scan<'a> {
    dir: &'a Path,
    /// `dir` with symbolic links resolved, once a tensor is external.
    canonical_dir: Option<PathBuf>,
    nodes: usize,
    initializers: usize,
    /// Tensors of one INT64 element (initializers and `Constant` outputs), by name. ONNX names
    /// are unique across a graph and its subgraphs, so one table serves them all.
    constants: HashMap<Bytes, i64>,
    loops: Vec<LoopSite>,
    /// Local functions by the key that calls them: index + 1 into `sizes` and `calls`.
    functions: HashMap<FunctionKey, usize>,
    /// Whose nodes are being read: 0 for the main graph, index + 1 for a local function.
    owner: usize,
    /// Nodes of the main graph and of each local function, their subgraphs included.
    sizes: Vec<usize>,
    /// The local functions the main graph and each local function call, once per call.
    calls: Vec<Vec<usize>>,
    /// External data locations already checked.
    external: HashSet<String>,
    external_files: Vec<PathBuf>,
}

impl Scan<'_> {
    fn count_nodes(&mut self, nodes: usize) -> Result<(), String> {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > MAX_NODES {
            return Err(format!(
                "the model has {} nodes or more (subgraphs and functions included), more than \
                 the {MAX_NODES} Ferrostream opens: real detectors have 1,000 to 5,000, and a \
                 runtime takes about 3 KB of memory a node to load them",
                self.nodes
            ));
        }
        Ok(())
    }

    /// Checks the graph `bytes`, `place` saying where it is (empty for the main graph) and
    /// `depth` how deep it nests.
    fn graph(&mut self, bytes: Bytes, place: &str, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "subgraphs nest more than {MAX_DEPTH} deep{place}; real models nest 1 to 3 deep"
            ));
        }
        let count = GraphCount::decode(bytes.clone()).map_err(parse_error)?;
        self.count_nodes(count.node.len())?;
        self.sizes[self.owner] = self.sizes[self.owner].saturating_add(count.node.len());
        self.initializers = self.initializers.saturating_add(count.initializer.len());
        if self.initializers > MAX_INITIALIZERS {
            return Err(format!(
                "the model has {} initializers or more (subgraphs included), more than the \
                 {MAX_INITIALIZERS} Ferrostream opens (real models have about one per weighted \
                 node)",
                self.initializers
            ));
        }
        let graph = GraphView::decode(bytes).map_err(parse_error)?;
        for initializer in graph.initializer {
            let tensor = TensorView::decode(initializer).map_err(parse_error)?;
            self.tensor(&tensor)?;
        }
        for sparse in graph.sparse_initializer {
            let sparse = SparseTensorView::decode(sparse).map_err(parse_error)?;
            self.sparse_tensor(&sparse)?;
        }
        for (index, node) in graph.node.into_iter().enumerate() {
            self.node(node, index, place, depth)?;
        }
        Ok(())
    }

    fn node(
        &mut self,
        bytes: Bytes,
        index: usize,
        place: &str,
        depth: usize,
    ) -> Result<(), String> {
        let node = NodeView::decode(bytes).map_err(parse_error)?;
        let op = String::from_utf8_lossy(node.op_type.as_deref().unwrap_or_default()).into_owned();
        let onnx = matches!(node.domain.as_deref(), None | Some(b"" | b"ai.onnx"));
        let name = match text(&node.name) {
            name if name.is_empty() => format!("{op} node #{index}"),
            name => format!("{op} node `{name}`"),
        };
        let key = FunctionKey {
            domain: node.domain.clone().unwrap_or_default(),
            name: node.op_type.clone().unwrap_or_default(),
            overload: node.overload.clone().unwrap_or_default(),
        };
        if let Some(&function) = self.functions.get(&key) {
            self.calls[self.owner].push(function);
        }
        if onnx && op == "Constant" {
            let value = node.attribute.iter().find_map(|a| {
                constant_int64(
                    a.name.as_deref().unwrap_or_default(),
                    a.i,
                    &a.ints,
                    a.t.as_ref().and_then(TensorView::single_i64),
                )
            });
            if let (Some(value), Some(output)) = (value, node.output.first()) {
                self.constants.insert(output.clone(), value);
            }
        }
        if onnx && op == "Loop" && ends_only_by_trip_count(&node)? {
            match node.input.first().filter(|i| !i.is_empty()) {
                Some(trip_count) => self.loops.push(LoopSite {
                    node: format!("{name}{place}"),
                    trip_count: trip_count.clone(),
                }),
                None => {
                    return Err(format!(
                        "{name}{place} has no trip count and nothing else ends it: it loops for \
                         ever"
                    ));
                }
            }
        }
        for attribute in node.attribute {
            for tensor in attribute.t.iter().chain(&attribute.tensors) {
                self.tensor(tensor)?;
            }
            for sparse in attribute
                .sparse_tensor
                .iter()
                .chain(&attribute.sparse_tensors)
            {
                self.sparse_tensor(sparse)?;
            }
            let inner = format!(
                " (in the `{}` graph of {name}{place})",
                text(&attribute.name)
            );
            for graph in attribute.g.into_iter().chain(attribute.graphs) {
                self.graph(graph, &inner, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Notes a constant, and checks where external data is.
    fn tensor(&mut self, tensor: &TensorView) -> Result<(), String> {
        if let (Some(value), Some(name)) = (tensor.single_i64(), &tensor.name) {
            self.constants.insert(name.clone(), value);
        }
        if tensor.is_external() {
            self.external_data(tensor)?;
        }
        Ok(())
    }

    /// Checks where the tensors of a sparse tensor keep external data.
    fn sparse_tensor(&mut self, sparse: &SparseTensorView) -> Result<(), String> {
        for tensor in sparse.values.iter().chain(&sparse.indices) {
            if tensor.is_external() {
                self.external_data(tensor)?;
            }
        }
        Ok(())
    }

    /// Refuses external data outside the model's directory: an absolute location, one with
    /// `..`, or one whose symbolic links lead out; and anything but a regular file. A tensor
    /// naming more than one location is refused: the runtimes take the last, this check would
    /// have to agree with each of them.
    fn external_data(&mut self, tensor: &TensorView) -> Result<(), String> {
        let tensor_name = text(&tensor.name);
        let mut locations = tensor
            .external_data
            .iter()
            .filter(|e| e.key() == "location")
            .map(|e| e.value().to_string());
        let (Some(location), None) = (locations.next(), locations.next()) else {
            return Err(format!(
                "tensor `{tensor_name}` keeps its data in an external file but names {} \
                 (its `location` key must be there once)",
                if tensor.external_data.iter().any(|e| e.key() == "location") {
                    "more than one"
                } else {
                    "none"
                }
            ));
        };
        if !self.external.insert(location.clone()) {
            return Ok(());
        }
        let relative = Path::new(&location);
        let inside = !location.is_empty()
            && relative
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !inside {
            return Err(format!(
                "external data location `{location}` of tensor `{tensor_name}` is not a path \
                 inside the model's directory (ONNX external data is relative to the model file, \
                 without `..`)"
            ));
        }
        let canonical_dir = match &self.canonical_dir {
            Some(dir) => dir.clone(),
            None => {
                let dir = self
                    .dir
                    .canonicalize()
                    .map_err(|e| format!("the model's directory {}: {e}", self.dir.display()))?;
                self.canonical_dir = Some(dir.clone());
                dir
            }
        };
        let file = self.dir.join(relative);
        let resolved = file.canonicalize().map_err(|e| {
            format!(
                "external data `{location}` of tensor `{tensor_name}` ({}): {e}",
                file.display()
            )
        })?;
        if !resolved.starts_with(&canonical_dir) {
            return Err(format!(
                "external data location `{location}` of tensor `{tensor_name}` leaves the \
                 model's directory through a symbolic link (to {})",
                resolved.display()
            ));
        }
        ferrostream_core::files::check_regular(&resolved, u64::MAX)
            .map_err(|e| format!("external data `{location}` of tensor `{tensor_name}`: {e}"))?;
        self.external_files.push(relative.to_path_buf());
        Ok(())
    }

    /// Refuses the loops seen since the last call whose trip count is a constant above
    /// [`MAX_LOOP_TRIPS`].
    fn check_loops(&mut self) -> Result<(), String> {
        let loops = std::mem::take(&mut self.loops);
        for site in loops {
            let Some(&trips) = self.constants.get(&site.trip_count) else {
                continue;
            };
            if trips > MAX_LOOP_TRIPS {
                return Err(format!(
                    "{} loops {trips} times (its trip count `{}` is a constant, and nothing \
                     else ends it), more than the {MAX_LOOP_TRIPS} Ferrostream allows: a \
                     million trips of an empty loop already take about 2 s",
                    site.node,
                    String::from_utf8_lossy(&site.trip_count)
                ));
            }
        }
        self.constants.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::{
        AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto,
        encode_model,
    };
    use super::*;

    fn model(graph: GraphProto) -> ModelProto {
        ModelProto::of_graph(graph, 8, 17)
    }

    fn check_model(model: &ModelProto) -> Result<ModelFacts, String> {
        check(Bytes::from(encode_model(model)), Path::new("."))
    }

    fn value(name: &str) -> ValueInfoProto {
        ValueInfoProto {
            name: Some(name.into()),
            ..Default::default()
        }
    }

    /// A Loop of `trip_count` whose body passes its condition on (named `name`).
    fn looping(name: &str, trip_count: &str) -> NodeProto {
        loop_with(
            name,
            trip_count,
            NodeProto::new("Identity", &["c_in"], &["c_out"]),
        )
    }

    /// A Loop of `trip_count` whose body computes its condition (named `name`).
    fn while_loop(name: &str, trip_count: &str) -> NodeProto {
        loop_with(
            name,
            trip_count,
            NodeProto::new("Less", &["i", "limit"], &["c_out"]),
        )
    }

    fn loop_with(name: &str, trip_count: &str, condition: NodeProto) -> NodeProto {
        let mut node = NodeProto::new("Loop", &[trip_count, "cond"], &[]);
        node.name = Some(name.into());
        node.attribute.push(AttributeProto {
            name: Some("body".into()),
            g: Some(GraphProto {
                node: vec![condition, node_named("Identity", "inner")],
                input: vec![value("i"), value("c_in")],
                output: vec![value("c_out")],
                ..Default::default()
            }),
            ..Default::default()
        });
        node
    }

    fn node_named(op: &str, name: &str) -> NodeProto {
        NodeProto {
            name: Some(name.into()),
            ..NodeProto::new(op, &["x"], &["y"])
        }
    }

    fn subgraph(name: &str, graph: GraphProto) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            g: Some(graph),
            ..Default::default()
        }
    }

    #[test]
    fn nodes_of_subgraphs_count_and_the_bound_is_named() {
        let chain = |n: usize| GraphProto {
            node: (0..n)
                .map(|_| NodeProto::new("Relu", &["x"], &["x"]))
                .collect(),
            ..Default::default()
        };
        let facts = check_model(&model(chain(MAX_NODES))).unwrap();
        assert_eq!(facts.nodes, MAX_NODES);
        let err = check_model(&model(chain(MAX_NODES + 1))).unwrap_err();
        assert!(
            err.contains("100001 nodes") && err.contains("100000"),
            "{err}"
        );
        // Half the nodes in an If's branches: counted too.
        let mut branch = NodeProto::new("If", &["c"], &["y"]);
        branch.attribute = vec![
            subgraph("then_branch", chain(MAX_NODES / 2)),
            subgraph("else_branch", chain(MAX_NODES / 2)),
        ];
        let err = check_model(&model(GraphProto {
            node: vec![branch],
            ..Default::default()
        }))
        .unwrap_err();
        assert!(err.contains("more than the 100000"), "{err}");
    }

    #[test]
    fn constant_loop_trip_counts_above_the_bound_are_refused_in_subgraphs_too() {
        // An initializer of 2^62 as the trip count.
        let graph = GraphProto {
            node: vec![looping("forever", "M")],
            initializer: vec![TensorProto::int64("M", 1 << 62)],
            ..Default::default()
        };
        let err = check_model(&model(graph)).unwrap_err();
        assert!(
            err.contains("Loop node `forever`")
                && err.contains("4611686018427387904")
                && err.contains("1000000"),
            "{err}"
        );
        // A Constant node's value_int, the Loop inside an If branch.
        let constant = NodeProto {
            attribute: vec![AttributeProto {
                name: Some("value_int".into()),
                i: Some(MAX_LOOP_TRIPS + 1),
                ..Default::default()
            }],
            ..NodeProto::new("Constant", &[], &["trips"])
        };
        let mut branch = NodeProto::new("If", &["c"], &["y"]);
        branch.name = Some("choose".into());
        branch.attribute = vec![subgraph(
            "then_branch",
            GraphProto {
                node: vec![constant, looping("inner", "trips")],
                ..Default::default()
            },
        )];
        let err = check_model(&model(GraphProto {
            node: vec![branch.clone()],
            ..Default::default()
        }))
        .unwrap_err();
        assert!(
            err.contains("Loop node `inner` (in the `then_branch` graph of If node `choose`)"),
            "{err}"
        );
        // Neither a trip count nor a condition the body computes: for ever.
        let err = check_model(&model(GraphProto {
            node: vec![looping("spin", "")],
            ..Default::default()
        }))
        .unwrap_err();
        assert!(err.contains("Loop node `spin` has no trip count"), "{err}");
        // At the bound, computed at run time, or absent with a condition the body computes (a
        // while loop): allowed.
        for (trips, graph) in [
            (
                "bound",
                GraphProto {
                    node: vec![looping("ok", "M")],
                    initializer: vec![TensorProto::int64("M", MAX_LOOP_TRIPS)],
                    ..Default::default()
                },
            ),
            (
                "computed",
                GraphProto {
                    node: vec![NodeProto::new("Cast", &["x"], &["M"]), looping("ok", "M")],
                    ..Default::default()
                },
            ),
            (
                "absent",
                GraphProto {
                    node: vec![while_loop("ok", "")],
                    ..Default::default()
                },
            ),
            (
                // A converter's while loop: 2^63 - 1 trips at most, its body's condition ends it.
                "ended by the body",
                GraphProto {
                    node: vec![while_loop("ok", "M")],
                    initializer: vec![TensorProto::int64("M", i64::MAX)],
                    ..Default::default()
                },
            ),
        ] {
            assert!(check_model(&model(graph)).is_ok(), "{trips}");
        }
    }

    #[test]
    fn versions_outside_the_supported_range_are_named() {
        let graph = GraphProto {
            node: vec![NodeProto::new("Relu", &["x"], &["y"])],
            ..Default::default()
        };
        let mut m = model(graph);
        assert_eq!(check_model(&m).unwrap().opset, Some(17));
        m.opset_import[0].version = Some(99);
        let err = check_model(&m).unwrap_err();
        assert!(
            err.contains("operator set 99") && err.contains("7 to 26"),
            "{err}"
        );
        m.opset_import[0].version = Some(17);
        m.ir_version = Some(99);
        let err = check_model(&m).unwrap_err();
        assert!(
            err.contains("IR version is 99") && err.contains("3 to 13"),
            "{err}"
        );
        // Other domains are the runtimes' business.
        m.ir_version = Some(8);
        m.opset_import.push(OperatorSetIdProto {
            domain: Some("com.microsoft".into()),
            version: Some(99),
        });
        assert!(check_model(&m).is_ok());
    }

    #[test]
    fn external_data_stays_in_the_model_directory() {
        let dir = std::env::temp_dir().join(format!("ferrostream-check-{}", std::process::id()));
        let inside = dir.join("model");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("weights.bin"), [0u8; 16]).unwrap();
        std::fs::write(dir.join("outside.bin"), [0u8; 16]).unwrap();
        let _ = std::fs::remove_file(inside.join("link.bin"));
        std::os::unix::fs::symlink(dir.join("outside.bin"), inside.join("link.bin")).unwrap();
        let external = |location: &str| {
            let tensor = TensorProto {
                name: Some("w".into()),
                data_type: Some(data_type::FLOAT),
                dims: vec![4],
                data_location: Some(1),
                external_data: vec![StringStringEntryProto {
                    key: Some("location".into()),
                    value: Some(location.into()),
                }],
                ..Default::default()
            };
            let bytes = encode_model(&model(GraphProto {
                initializer: vec![tensor],
                ..Default::default()
            }));
            check(Bytes::from(bytes), &inside)
        };
        let facts = external("weights.bin").unwrap();
        assert_eq!(facts.external_files, vec![PathBuf::from("weights.bin")]);
        assert!(external("./weights.bin").is_ok());
        for (location, wanted) in [
            ("../outside.bin", "not a path inside"),
            ("/etc/hostname", "not a path inside"),
            ("link.bin", "through a symbolic link"),
            ("missing.bin", "missing.bin"),
            ("", "not a path inside"),
        ] {
            let err = external(location).unwrap_err();
            assert!(err.contains(location) && err.contains(wanted), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn garbage_and_deep_nesting_are_errors() {
        assert!(
            check(Bytes::from_static(b"not a model"), Path::new("."))
                .unwrap_err()
                .contains("cannot be parsed")
        );
        let mut graph = GraphProto::default();
        for _ in 0..=MAX_DEPTH {
            let mut wrap = NodeProto::new("If", &["c"], &["y"]);
            wrap.attribute.push(subgraph("then_branch", graph));
            graph = GraphProto {
                node: vec![wrap],
                ..Default::default()
            };
        }
        let err = check_model(&model(graph)).unwrap_err();
        assert!(err.contains("nest more than 32 deep"), "{err}");
    }

    /// `FunctionProto`: what the tests write of it.
    #[derive(Clone, PartialEq, prost::Message)]
    struct FunctionProto {
        #[prost(string, optional, tag = "1")]
        name: Option<String>,
        #[prost(message, repeated, tag = "7")]
        node: Vec<NodeProto>,
        #[prost(string, optional, tag = "10")]
        domain: Option<String>,
    }

    /// `SparseTensorProto`: what the tests write of it.
    #[derive(Clone, PartialEq, prost::Message)]
    struct SparseTensorProto {
        #[prost(message, optional, tag = "1")]
        values: Option<TensorProto>,
        #[prost(message, optional, tag = "2")]
        indices: Option<TensorProto>,
    }

    /// A call of the local function `name` (domain `local`).
    fn call(name: &str) -> NodeProto {
        NodeProto {
            domain: Some("local".into()),
            ..NodeProto::new(name, &["x"], &["y"])
        }
    }

    fn function(name: &str, node: Vec<NodeProto>) -> Vec<u8> {
        FunctionProto {
            name: Some(name.into()),
            node,
            domain: Some("local".into()),
        }
        .encode_to_vec()
    }

    #[test]
    fn local_functions_count_as_inlined_and_cycles_are_refused() {
        // Level 0 has 10 nodes, each further level calls the one below 10 times: 6 levels and a
        // call from the main graph are 10^6 nodes once inlined, in 61 nodes of the file.
        let nested = |levels: usize| {
            let mut m = model(GraphProto {
                node: vec![call(&format!("level{}", levels - 1))],
                ..Default::default()
            });
            m.functions.push(function(
                "level0",
                (0..10)
                    .map(|_| NodeProto::new("Relu", &["x"], &["x"]))
                    .collect(),
            ));
            for level in 1..levels {
                let below = format!("level{}", level - 1);
                m.functions.push(function(
                    &format!("level{level}"),
                    (0..10).map(|_| call(&below)).collect(),
                ));
            }
            m
        };
        // 4 levels: the call, 10 calls of level 2, 100 of level 1, 1,000 of level 0, 10,000 Relus.
        assert_eq!(
            check_model(&nested(4)).unwrap().nodes,
            1 + 10 + 100 + 1_000 + 10_000
        );
        let err = check_model(&nested(6)).unwrap_err();
        assert!(
            err.contains("1111111 nodes") && err.contains("inline") && err.contains("100000"),
            "{err}"
        );
        // A function no one calls counts once.
        let mut m = model(GraphProto::default());
        m.functions.push(function("alone", vec![call("level0")]));
        m.functions.push(function(
            "level0",
            vec![NodeProto::new("Relu", &["x"], &["y"])],
        ));
        assert_eq!(check_model(&m).unwrap().nodes, 2);
        // A function calling itself, directly or through another.
        let mut m = model(GraphProto {
            node: vec![call("ping")],
            ..Default::default()
        });
        m.functions.push(function("ping", vec![call("pong")]));
        m.functions.push(function("pong", vec![call("ping")]));
        let err = check_model(&m).unwrap_err();
        assert!(err.contains("`ping` calls itself"), "{err}");
        let mut m = model(GraphProto::default());
        m.functions.push(function("me", vec![call("me")]));
        let err = check_model(&m).unwrap_err();
        assert!(err.contains("`me` calls itself"), "{err}");
    }

    #[test]
    fn external_data_names_one_location_and_sparse_tensors_are_checked() {
        let dir =
            std::env::temp_dir().join(format!("ferrostream-check-one-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("weights.bin"), [0u8; 16]).unwrap();
        let tensor = |name: &str, locations: &[&str]| TensorProto {
            name: Some(name.into()),
            data_type: Some(data_type::FLOAT),
            dims: vec![4],
            data_location: Some(1),
            external_data: locations
                .iter()
                .map(|l| StringStringEntryProto {
                    key: Some("location".into()),
                    value: Some((*l).into()),
                })
                .collect(),
            ..Default::default()
        };
        let run = |graph: GraphProto| check(Bytes::from(encode_model(&model(graph))), &dir);
        // The runtimes take the last location, the check would see the first.
        let err = run(GraphProto {
            initializer: vec![tensor("w", &["weights.bin", "/etc/hostname"])],
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            err.contains("tensor `w`") && err.contains("more than one"),
            "{err}"
        );
        // A sparse initializer's values, a sparse attribute's indices.
        let sparse = |values: TensorProto, indices: TensorProto| {
            SparseTensorProto {
                values: Some(values),
                indices: Some(indices),
            }
            .encode_to_vec()
        };
        let inside = || tensor("inside", &["weights.bin"]);
        let err = run(GraphProto {
            sparse_initializer: vec![sparse(tensor("sv", &["../outside.bin"]), inside())],
            ..Default::default()
        })
        .unwrap_err();
        assert!(err.contains("`../outside.bin` of tensor `sv`"), "{err}");
        let constant = NodeProto {
            attribute: vec![AttributeProto {
                name: Some("sparse_value".into()),
                sparse_tensor: Some(sparse(inside(), tensor("si", &["/etc/hostname"]))),
                ..Default::default()
            }],
            ..NodeProto::new("Constant", &[], &["s"])
        };
        let err = run(GraphProto {
            node: vec![constant.clone()],
            ..Default::default()
        })
        .unwrap_err();
        assert!(err.contains("`/etc/hostname` of tensor `si`"), "{err}");
        let list = NodeProto {
            attribute: vec![AttributeProto {
                name: Some("sparse_values".into()),
                sparse_tensors: vec![sparse(inside(), tensor("sl", &["/etc/hostname"]))],
                ..Default::default()
            }],
            ..NodeProto::new("Custom", &[], &["s"])
        };
        assert!(
            run(GraphProto {
                node: vec![list],
                ..Default::default()
            })
            .unwrap_err()
            .contains("tensor `sl`")
        );
        // Inside the directory: allowed, and named.
        let facts = run(GraphProto {
            sparse_initializer: vec![sparse(inside(), inside())],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(facts.external_files, vec![PathBuf::from("weights.bin")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
