// SPDX-License-Identifier: MIT OR Apache-2.0
//! The DLA coverage checker: which nodes of an ONNX model a DLA build (TensorRT with GPU
//! fallback) can place on the DLA, under the documented restrictions of [`rules::RULES`].
//!
//! It reads the model (no TensorRT, no GPU), infers shapes at the fixed input shape the engine
//! is built for, evaluates every node against the rules of the TensorRT layer it becomes,
//! splits the network into DLA loadables and GPU fallback subgraphs, and reports the share of
//! multiply-accumulates that stays on the DLA, with suggestions to raise it. The result is a
//! [`Report`], printed as text ([`Report::to_text`]) or JSON ([`Report::to_json`]).

pub mod onnx;
pub mod partition;
pub mod rules;
pub mod shapes;
mod suggest;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

pub use rules::{Check, DOC_URL, Placement, Precision, RULES, Rule};

use onnx::{DimDecl, Model};
use shapes::{Dim, Info, Shapes, dims_text};

/// At most this many DLA loadables can be loaded per core.
pub const MAX_LOADABLES_PER_CORE: usize = 16;

/// How to evaluate a model.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    pub precision: Precision,
    /// The batch size the engine is built for (dynamic batch dimensions take it).
    pub batch: u32,
    /// Input dims by input name, for inputs whose dims are dynamic.
    pub input_shapes: BTreeMap<String, Vec<i64>>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            precision: Precision::Fp16,
            batch: 1,
            input_shapes: BTreeMap::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("cannot read {0}")]
    Io(#[from] ferrostream_core::files::FileError),
    #[error("{path}: {source}")]
    Decode {
        path: String,
        source: onnx::DecodeError,
    },
    #[error("{0}")]
    Options(String),
}

/// One node's result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeReport {
    pub index: usize,
    pub name: String,
    pub op_type: String,
    /// The TensorRT layer the node becomes.
    pub layer: &'static str,
    pub placement: Placement,
    /// The subgraph (DLA loadable or GPU fallback) the node is in.
    pub subgraph: Option<usize>,
    pub macs: Option<u64>,
    pub output_shape: Vec<Option<i64>>,
    pub checks: Vec<Check>,
}

impl NodeReport {
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.passed)
    }
}

/// A run of nodes on one device.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Subgraph {
    pub id: usize,
    pub device: Placement,
    pub nodes: Vec<usize>,
    /// Operator counts, e.g. {"Reshape": 6, "Concat": 2}.
    pub ops: BTreeMap<String, usize>,
    pub macs: u64,
}

/// A change to the model that would move work onto the DLA.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Suggestion {
    /// The rules whose failures it addresses.
    pub rules: Vec<&'static str>,
    pub op_types: Vec<String>,
    pub nodes: usize,
    /// MACs (per batch item) that would move to the DLA.
    pub macs: u64,
    /// Up to three of the nodes.
    pub examples: Vec<String>,
    pub text: String,
}

/// The coverage of one model.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub model: String,
    pub opset: i64,
    pub precision: Precision,
    pub batch: u32,
    /// Input shapes the model was evaluated at (`null`: dynamic).
    pub inputs: BTreeMap<String, Vec<Option<i64>>>,
    /// Model-wide findings: precision, fixed shapes, the loadable limit.
    pub model_checks: Vec<Check>,
    pub nodes: Vec<NodeReport>,
    pub subgraphs: Vec<Subgraph>,
    pub dla_loadables: usize,
    pub gpu_subgraphs: usize,
    pub loadable_limit: usize,
    pub nodes_dla: usize,
    pub nodes_gpu: usize,
    pub nodes_folded: usize,
    pub macs_total: u64,
    pub macs_dla: u64,
    /// Nodes whose MACs could not be computed (unknown shapes).
    pub macs_unknown_nodes: usize,
    /// `macs_dla / macs_total` (0 when the model has no MACs).
    pub dla_share: f64,
    pub suggestions: Vec<Suggestion>,
    /// The rules referenced by the checks, with their documented source.
    pub rules: Vec<Rule>,
    pub rules_source: &'static str,
}

/// Checks the ONNX model at `path`.
pub fn check_file(path: &Path, options: &CheckOptions) -> Result<Report, CheckError> {
    let bytes = ferrostream_core::files::read(path, ferrostream_core::files::MAX_MODEL_FILE_BYTES)?;
    let model = Model::decode(&bytes).map_err(|source| CheckError::Decode {
        path: path.display().to_string(),
        source,
    })?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    check_model(&model, &name, options)
}

/// The shapes of the graph's inputs the model is evaluated at (`options` give the dynamic
/// ones): by name, with a check each, and as shape-inference infos.
#[allow(clippy::type_complexity)]
fn evaluated_inputs(
    graph: &onnx::Graph,
    options: &CheckOptions,
) -> Result<
    (
        BTreeMap<String, Vec<Dim>>,
        Vec<Check>,
        HashMap<String, Info>,
    ),
    CheckError,
> {
    let initializers: Vec<&str> = graph.initializers.iter().map(|t| t.name.as_str()).collect();
    let mut inputs = BTreeMap::new();
    let mut model_checks = Vec::new();
    let mut input_infos = HashMap::new();
    for unknown in options.input_shapes.keys() {
        if !graph.inputs.iter().any(|i| &i.name == unknown) {
            return Err(CheckError::Options(format!(
                "the model has no input {unknown:?} (inputs: {})",
                graph
                    .inputs
                    .iter()
                    .filter(|i| !initializers.contains(&i.name.as_str()))
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    for input in graph
        .inputs
        .iter()
        .filter(|i| !initializers.contains(&i.name.as_str()))
    {
        let declared = input.shape.clone().unwrap_or_default();
        let shape: Vec<Dim> = match options.input_shapes.get(&input.name) {
            Some(dims) => {
                if !declared.is_empty() && dims.len() != declared.len() {
                    return Err(CheckError::Options(format!(
                        "input {:?} has rank {}, the shape given has {} dims",
                        input.name,
                        declared.len(),
                        dims.len()
                    )));
                }
                dims.iter().map(|&d| Some(d)).collect()
            }
            None => declared
                .iter()
                .enumerate()
                .map(|(i, d)| match d {
                    DimDecl::Value(v) if *v > 0 => Some(*v),
                    _ if i == 0 => Some(options.batch as i64),
                    _ => None,
                })
                .collect(),
        };
        let dynamic: Vec<usize> = (0..shape.len()).filter(|&i| shape[i].is_none()).collect();
        model_checks.push(Check {
            rule: "general.fixed-shapes",
            passed: dynamic.is_empty(),
            detail: if dynamic.is_empty() {
                format!("input {} evaluated at {}", input.name, dims_text(&shape))
            } else {
                format!(
                    "input {} has dynamic dims {:?} ({}); give the shape the engine is built for",
                    input.name,
                    dynamic,
                    dims_text(&shape)
                )
            },
        });
        input_infos.insert(
            input.name.clone(),
            Info {
                dtype: input.elem_type,
                shape: Some(shape.clone()),
                value: None,
                constant: false,
            },
        );
        inputs.insert(input.name.clone(), shape);
    }
    Ok((inputs, model_checks, input_infos))
}

/// The `count` subgraphs the partition made, with their nodes, operations and work.
fn subgraphs_of(nodes: &[NodeReport], count: usize) -> Vec<Subgraph> {
    let mut subgraphs: Vec<Subgraph> = (0..count)
        .map(|id| Subgraph {
            id,
            device: Placement::Gpu,
            nodes: Vec::new(),
            ops: BTreeMap::new(),
            macs: 0,
        })
        .collect();
    for n in nodes {
        if let Some(s) = n.subgraph {
            let sub = &mut subgraphs[s];
            sub.device = n.placement;
            sub.nodes.push(n.index);
            *sub.ops.entry(n.op_type.clone()).or_default() += 1;
            sub.macs += n.macs.unwrap_or(0);
        }
    }
    subgraphs
}

/// Checks a decoded model.
pub fn check_model(
    model: &Model,
    name: &str,
    options: &CheckOptions,
) -> Result<Report, CheckError> {
    let graph = &model.graph;
    let (inputs, mut model_checks, input_infos) = evaluated_inputs(graph, options)?;
    model_checks.push(Check {
        rule: "general.precision",
        passed: options.precision != Precision::Fp32,
        detail: format!("{:?} build", options.precision),
    });

    let shapes = Shapes::infer(graph, model.opset(), options.batch as i64, &input_infos);
    let verdicts: Vec<rules::Verdict> = graph
        .nodes
        .iter()
        .map(|n| rules::evaluate(n, &shapes, options.precision))
        .collect();
    let placement: Vec<Placement> = verdicts.iter().map(|v| v.placement).collect();
    let (subgraph_of, count) = partition::partition(&graph.nodes, &placement);

    let nodes: Vec<NodeReport> = graph
        .nodes
        .iter()
        .zip(verdicts)
        .enumerate()
        .map(|(index, (node, v))| NodeReport {
            index,
            name: node.label().to_string(),
            op_type: node.op_type.clone(),
            layer: v.layer,
            placement: v.placement,
            subgraph: subgraph_of[index],
            macs: v.macs,
            output_shape: node
                .outputs
                .first()
                .and_then(|o| shapes.get(o))
                .and_then(|i| i.shape.clone())
                .unwrap_or_default(),
            checks: v.checks,
        })
        .collect();

    let subgraphs = subgraphs_of(&nodes, count);
    let dla_loadables = subgraphs
        .iter()
        .filter(|s| s.device == Placement::Dla)
        .count();
    let gpu_subgraphs = count - dla_loadables;
    model_checks.push(Check {
        rule: "general.loadables",
        passed: dla_loadables <= MAX_LOADABLES_PER_CORE,
        detail: format!(
            "{dla_loadables} DLA loadable(s) for {gpu_subgraphs} GPU fallback subgraph(s) \
             (limit {MAX_LOADABLES_PER_CORE} per core)"
        ),
    });

    let on = |p: Placement| nodes.iter().filter(|n| n.placement == p).count();
    let computing = |n: &&NodeReport| matches!(n.placement, Placement::Dla | Placement::Gpu);
    let macs_total: u64 = nodes.iter().filter(computing).filter_map(|n| n.macs).sum();
    let macs_dla: u64 = nodes
        .iter()
        .filter(|n| n.placement == Placement::Dla)
        .filter_map(|n| n.macs)
        .sum();
    let macs_unknown_nodes = nodes
        .iter()
        .filter(computing)
        .filter(|n| {
            matches!(
                n.op_type.as_str(),
                "Conv" | "ConvTranspose" | "Gemm" | "MatMul"
            )
        })
        .filter(|n| n.macs.is_none())
        .count();
    let suggestions = suggest::suggestions(&nodes);
    let mut rule_ids: Vec<&str> = model_checks
        .iter()
        .chain(nodes.iter().flat_map(|n| &n.checks))
        .map(|c| c.rule)
        .collect();
    rule_ids.sort_unstable();
    rule_ids.dedup();
    Ok(Report {
        model: name.to_string(),
        opset: model.opset(),
        precision: options.precision,
        batch: options.batch,
        inputs,
        model_checks,
        dla_loadables,
        gpu_subgraphs,
        loadable_limit: MAX_LOADABLES_PER_CORE,
        nodes_dla: on(Placement::Dla),
        nodes_gpu: on(Placement::Gpu),
        nodes_folded: on(Placement::Folded) + on(Placement::Removed),
        macs_total,
        macs_dla,
        macs_unknown_nodes,
        dla_share: if macs_total > 0 {
            macs_dla as f64 / macs_total as f64
        } else {
            0.0
        },
        suggestions,
        rules: RULES
            .iter()
            .filter(|r| rule_ids.contains(&r.id))
            .copied()
            .collect(),
        rules_source: DOC_URL,
        nodes,
        subgraphs,
    })
}

fn mmacs(v: u64) -> String {
    format!("{:.1} MMAC", v as f64 / 1e6)
}

impl Report {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// The headline: coverage, subgraphs and the loadable limit, in one line.
    pub fn summary(&self) -> String {
        format!(
            "{}: {:.1}% of compute on the DLA ({} of {}), {} of {} layers on the DLA, {} DLA \
             loadable(s) (limit {}), {} GPU fallback subgraph(s)",
            self.model,
            self.dla_share * 100.0,
            mmacs(self.macs_dla),
            mmacs(self.macs_total),
            self.nodes_dla,
            self.nodes_dla + self.nodes_gpu,
            self.dla_loadables,
            self.loadable_limit,
            self.gpu_subgraphs
        )
    }

    /// The report as text: summary, model findings, GPU subgraphs, every node (with its failed
    /// checks; `all_checks` lists the passed ones too), suggestions and the rules cited.
    pub fn to_text(&self, all_checks: bool) -> String {
        let mut s = String::new();
        let inputs: Vec<String> = self
            .inputs
            .iter()
            .map(|(n, d)| format!("{n} {}", dims_text(d)))
            .collect();
        let _ = writeln!(
            s,
            "DLA coverage of {} (opset {}), {:?}, batch {}, input {}",
            self.model,
            self.opset,
            self.precision,
            self.batch,
            inputs.join(", ")
        );
        let _ = writeln!(s, "  {}", self.summary());
        let _ = writeln!(
            s,
            "  layers: {} DLA, {} GPU, {} computed at build time or removed",
            self.nodes_dla, self.nodes_gpu, self.nodes_folded
        );
        if self.macs_unknown_nodes > 0 {
            let _ = writeln!(
                s,
                "  {} compute layer(s) have unknown shapes; their MACs are not counted",
                self.macs_unknown_nodes
            );
        }
        let _ = writeln!(s, "\nModel:");
        for c in &self.model_checks {
            let _ = writeln!(s, "  {} {}: {}", mark(c.passed), c.rule, c.detail);
        }
        let _ = writeln!(s, "\nGPU fallback subgraphs:");
        let gpu: Vec<&Subgraph> = self
            .subgraphs
            .iter()
            .filter(|g| g.device == Placement::Gpu)
            .collect();
        if gpu.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for g in gpu {
            let ops: Vec<String> = g.ops.iter().map(|(o, n)| format!("{o} x{n}")).collect();
            let first = &self.nodes[g.nodes[0]].name;
            let _ = writeln!(
                s,
                "  #{}: {} layer(s) from {first:?}: {}{}",
                g.id,
                g.nodes.len(),
                ops.join(", "),
                if g.macs > 0 {
                    format!(", {}", mmacs(g.macs))
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(s, "\nLayers:");
        for n in &self.nodes {
            let place = match n.placement {
                Placement::Dla => "DLA",
                Placement::Gpu => "GPU",
                Placement::Folded => "build",
                Placement::Removed => "none",
            };
            let sub = n.subgraph.map_or(String::new(), |g| format!(" #{g}"));
            let macs = n.macs.map_or(String::new(), |m| format!(" {}", mmacs(m)));
            let _ = writeln!(
                s,
                "  {place:<5}{sub:<5} {} {:?} -> {} {}{macs}",
                n.op_type,
                n.name,
                n.layer,
                dims_text(&n.output_shape)
            );
            let shown: Vec<&Check> = if all_checks || n.failed().next().is_some() {
                n.checks.iter().collect()
            } else {
                Vec::new()
            };
            for c in shown {
                let _ = writeln!(s, "         {} {}: {}", mark(c.passed), c.rule, c.detail);
            }
        }
        let _ = writeln!(s, "\nLimits by layer:");
        for (layer, rules) in self.limits_by_layer() {
            let _ = writeln!(s, "  {layer}:");
            for (rule, ok, failed, values) in rules {
                let _ = writeln!(
                    s,
                    "    {} {rule}: {ok} ok, {failed} failed ({})",
                    mark(failed == 0),
                    values.join("; ")
                );
            }
        }
        let _ = writeln!(s, "\nSuggestions:");
        if self.suggestions.is_empty() {
            let _ = writeln!(s, "  none: every layer runs on the DLA");
        }
        for (i, g) in self.suggestions.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {}. {} [{} layer(s): {}{}; e.g. {}]",
                i + 1,
                g.text,
                g.nodes,
                g.op_types.join(", "),
                if g.macs > 0 {
                    format!(", {}", mmacs(g.macs))
                } else {
                    String::new()
                },
                g.examples.join(", ")
            );
        }
        let _ = writeln!(s, "\nRules applied ({}):", self.rules_source);
        for r in &self.rules {
            let _ = writeln!(
                s,
                "  {} ({}): {} [{}]",
                r.id, r.layer, r.restriction, r.source
            );
        }
        s
    }
}

/// Per layer type: each rule applied, with the layers passing and failing it and up to four
/// distinct values checked.
type LayerLimits = Vec<(&'static str, usize, usize, Vec<String>)>;

impl Report {
    fn limits_by_layer(&self) -> BTreeMap<String, LayerLimits> {
        let mut out: BTreeMap<String, LayerLimits> = BTreeMap::new();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for n in &self.nodes {
            if !matches!(n.placement, Placement::Dla | Placement::Gpu) {
                continue;
            }
            *counts.entry(n.layer).or_default() += 1;
            for c in n.checks.iter().filter(|c| {
                c.rule.contains('.') && !c.rule.starts_with("general.") && c.rule != "op.supported"
            }) {
                let rules = out.entry(n.layer.to_string()).or_default();
                let i = match rules.iter().position(|r| r.0 == c.rule) {
                    Some(i) => i,
                    None => {
                        rules.push((c.rule, 0, 0, Vec::new()));
                        rules.len() - 1
                    }
                };
                let entry = &mut rules[i];
                if c.passed {
                    entry.1 += 1;
                } else {
                    entry.2 += 1;
                }
                let value = c.detail.split(" (").next().unwrap_or_default().to_string();
                if entry.3.len() < 4 && !entry.3.contains(&value) {
                    entry.3.push(value);
                }
            }
        }
        out.into_iter()
            .map(|(layer, rules)| (format!("{layer} x{}", counts[layer.as_str()]), rules))
            .collect()
    }
}

fn mark(passed: bool) -> &'static str {
    if passed { "ok  " } else { "FAIL" }
}
