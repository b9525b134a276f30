// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Loop` nodes capped at [`MAX_LOOP_TRIPS`] trips, for a runtime that cannot stop a running
//! `Loop`: OpenVINO's CPU plugin checks for a cancel between nodes only, so a loop whose trip
//! count is computed at run time (or absent, or a converter's 2^63 - 1 with a condition) could
//! hold a stop for ever. A trip count computed at run time is held between 0 and the cap (`Min`
//! and `Max` nodes: a count of 2^62 computed at run time reaches OpenVINO's loop as a negative
//! number, which it runs for ever, while ONNX runs no trip for a negative count). A loop without
//! a count, or with a constant beyond the cap (a converter's while loop of 2^63 - 1 trips), ends
//! by its body's condition, which also ends it at the cap (`Less` and `And` nodes in the body: a
//! constant count of a million would make OpenVINO allocate the loop's outputs for a million
//! trips). So a run ends within the cap's trips, about 2 s of an empty body; loops that end
//! earlier, as every real model's do, compute exactly what they did. A `Loop` in a local
//! function is not rewritten: a model with one whose trip count is not a constant within the cap
//! is refused (the function's inputs could make it loop for ever). ONNX Runtime needs none of
//! this: its terminate flag is checked between the trips.

use std::collections::HashMap;

use prost::Message;

use super::check::{MAX_LOOP_TRIPS, constant_int64, single_int64};
use super::proto::{
    AttributeProto, GraphProto, NodeProto, TensorProto, data_type, decode_model, encode_model,
};

/// The names of the constants: the cap, the last iteration number it allows, and zero (one
/// each for the whole model: subgraphs see the main graph's values).
const CAP: &str = "ferrostream_max_loop_trips";
const LAST: &str = "ferrostream_last_loop_trip";
const ZERO: &str = "ferrostream_no_loop_trips";

/// The IR versions whose every field [`super::proto`] declares: a model of a later version
/// would lose fields when encoded again.
const LAST_IR_KEPT: i64 = 10;

/// The first `ai.onnx` operator sets whose `Min` and `Max`, and whose `Less`, take integers.
const INTEGER_MIN: i64 = 12;
const INTEGER_LESS: i64 = 9;

/// A model whose loops were capped.
#[derive(Debug, Clone)]
pub struct CappedModel {
    pub bytes: Vec<u8>,
    /// The loops capped, for the log (`Loop node `name``).
    pub loops: Vec<String>,
}

/// `FunctionProto`: its name and nodes (the model keeps functions encoded).
#[derive(Clone, PartialEq, prost::Message)]
struct FunctionNodes {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(message, repeated, tag = "7")]
    node: Vec<NodeProto>,
}

/// The model `bytes` with every `Loop` of the main graph and its subgraphs capped at
/// [`MAX_LOOP_TRIPS`] trips; `None` when no loop needs it (none, or every trip count a constant
/// within the cap). Loops in local functions are not rewritten: a model with one that would
/// need it is refused.
pub fn cap_trip_counts(bytes: &[u8]) -> Result<Option<CappedModel>, String> {
    // A model without the operator's name has no loop: most models are not decoded.
    if !bytes.windows(4).any(|w| w == b"Loop") {
        return Ok(None);
    }
    let mut model = decode_model(bytes)?;
    let ir_version = model.ir_version();
    for function in &model.functions {
        let function = FunctionNodes::decode(&function[..])
            .map_err(|e| format!("the ONNX model cannot be parsed (protobuf: {e})"))?;
        let body = GraphProto {
            node: function.node,
            ..Default::default()
        };
        let mut constants = HashMap::new();
        collect_constants(&body, &mut constants);
        if let Some(name) = unbounded_loop(&body, &constants) {
            return Err(format!(
                "{name} (in function `{}`) has a trip count that is not a constant of at most \
                 {MAX_LOOP_TRIPS}: OpenVINO could not stop it, and loops in local functions \
                 cannot be capped; use backend=onnxruntime",
                function.name.unwrap_or_default()
            ));
        }
    }
    let Some(graph) = model.graph.as_mut() else {
        return Ok(None);
    };
    let mut constants = HashMap::new();
    collect_constants(graph, &mut constants);
    let opset = model
        .opset_import
        .iter()
        .filter(|o| matches!(o.domain(), "" | "ai.onnx"))
        .map(|o| o.version())
        .max()
        .unwrap_or(0);
    let mut capped = Vec::new();
    cap_graph(graph, &constants, opset, &mut capped)?;
    if capped.is_empty() {
        return Ok(None);
    }
    // The rewritten model is read from memory, where external files cannot be found.
    if has_external_data(graph) {
        return Err(format!(
            "{} would have to be capped at {MAX_LOOP_TRIPS} trips (OpenVINO cannot stop a \
             running Loop), and a model that keeps tensors in external files cannot be \
             rewritten; use backend=onnxruntime",
            capped.join(", ")
        ));
    }
    if ir_version > LAST_IR_KEPT {
        return Err(format!(
            "{} would have to be capped at {MAX_LOOP_TRIPS} trips (OpenVINO cannot stop a \
             running Loop), and a model of IR version {} cannot be rewritten without losing \
             fields; use backend=onnxruntime",
            capped.join(", "),
            ir_version
        ));
    }
    graph.node.insert(0, constant(CAP, MAX_LOOP_TRIPS));
    graph.node.insert(1, constant(LAST, MAX_LOOP_TRIPS - 1));
    graph.node.insert(2, constant(ZERO, 0));
    Ok(Some(CappedModel {
        bytes: encode_model(&model),
        loops: capped,
    }))
}

/// A `Constant` node of one INT64 `value`, named as its output.
fn constant(name: &str, value: i64) -> NodeProto {
    NodeProto {
        op_type: Some("Constant".into()),
        output: vec![name.into()],
        name: Some(name.into()),
        attribute: vec![AttributeProto {
            name: Some("value".into()),
            r#type: Some(4), // TENSOR
            t: Some(TensorProto {
                data_type: Some(data_type::INT64),
                raw_data: Some(value.to_le_bytes().to_vec()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Whether a tensor of `graph` or its subgraphs keeps its data in an external file.
fn has_external_data(graph: &GraphProto) -> bool {
    graph.initializer.iter().any(TensorProto::is_external)
        || graph.node.iter().any(|n| {
            n.attribute.iter().any(|a| {
                a.t.as_ref().is_some_and(TensorProto::is_external)
                    || a.g.iter().chain(&a.graphs).any(has_external_data)
            })
        })
}

/// The first `Loop` of `graph` or its subgraphs (`Loop node `name``) whose trip count is not a
/// constant from 0 to [`MAX_LOOP_TRIPS`] of `constants`.
fn unbounded_loop(graph: &GraphProto, constants: &HashMap<String, i64>) -> Option<String> {
    graph.node.iter().enumerate().find_map(|(index, node)| {
        let within = |trips: &i64| (0..=MAX_LOOP_TRIPS).contains(trips);
        if node.is_onnx_operator()
            && node.op_type() == "Loop"
            && !node
                .input
                .first()
                .and_then(|count| constants.get(count))
                .is_some_and(within)
        {
            return Some(match node.name() {
                "" => format!("Loop node #{index}"),
                name => format!("Loop node `{name}`"),
            });
        }
        node.attribute
            .iter()
            .flat_map(|a| a.g.iter().chain(&a.graphs))
            .find_map(|g| unbounded_loop(g, constants))
    })
}

/// The value of a tensor of one INT64 element held in the model.
fn single(t: &TensorProto) -> Option<i64> {
    single_int64(
        t.data_type,
        &t.dims,
        t.raw_data.as_deref(),
        &t.int64_data,
        t.is_external(),
    )
}

/// Single INT64 values of initializers and `Constant` nodes, by name, in `graph` and its
/// subgraphs (ONNX names are unique across them), read as the model check reads them.
fn collect_constants(graph: &GraphProto, constants: &mut HashMap<String, i64>) {
    for t in &graph.initializer {
        if let Some(v) = single(t) {
            constants.insert(t.name().to_string(), v);
        }
    }
    for node in &graph.node {
        if node.is_onnx_operator()
            && node.op_type() == "Constant"
            && let (Some(output), Some(v)) = (
                node.output.first(),
                node.attribute.iter().find_map(|a| {
                    constant_int64(
                        a.name().as_bytes(),
                        a.i,
                        &a.ints,
                        a.t.as_ref().and_then(single),
                    )
                }),
            )
        {
            constants.insert(output.clone(), v);
        }
        for a in &node.attribute {
            for g in a.g.iter().chain(&a.graphs) {
                collect_constants(g, constants);
            }
        }
    }
}

fn cap_graph(
    graph: &mut GraphProto,
    constants: &HashMap<String, i64>,
    opset: i64,
    capped: &mut Vec<String>,
) -> Result<(), String> {
    let mut index = 0;
    while index < graph.node.len() {
        for a in &mut graph.node[index].attribute {
            for g in a.g.iter_mut().chain(a.graphs.iter_mut()) {
                cap_graph(g, constants, opset, capped)?;
            }
        }
        let node = &graph.node[index];
        if !(node.is_onnx_operator() && node.op_type() == "Loop") {
            index += 1;
            continue;
        }
        let name = match node.name() {
            "" => format!("Loop node #{index}"),
            name => format!("Loop node `{name}`"),
        };
        let trip_count = node.input.first().cloned().unwrap_or_default();
        let has_condition = node.input.get(1).is_some_and(|c| !c.is_empty());
        let unsupported = |what: &str, first: i64| {
            format!(
                "{name} {what}, which OpenVINO could not stop, and operator set {opset} (before \
                 {first}) has not the operators to cap it with; use backend=onnxruntime"
            )
        };
        match constants.get(&trip_count) {
            Some(&trips) if (0..=MAX_LOOP_TRIPS).contains(&trips) => {
                index += 1;
                continue;
            }
            // Absent, or a constant beyond the cap (a converter's 2^63 - 1): a constant count
            // would make OpenVINO allocate the loop's outputs for every trip it allows, so the
            // body's condition ends the loop at the cap instead. The model check refused the
            // loops that only their count ends.
            beyond
                if trip_count.is_empty() || beyond.is_some_and(|&trips| trips > MAX_LOOP_TRIPS) =>
            {
                if !has_condition {
                    return Err(format!("{name} has neither a trip count nor a condition"));
                }
                if opset < INTEGER_LESS {
                    return Err(unsupported("ends by its condition only", INTEGER_LESS));
                }
                let node = &mut graph.node[index];
                let body = node
                    .attribute
                    .iter_mut()
                    .find(|a| a.name() == "body")
                    .and_then(|a| a.g.as_mut())
                    .ok_or_else(|| format!("{name} has no body"))?;
                end_at_the_cap(body).map_err(|e| format!("{name}: {e}"))?;
            }
            // Computed at run time, or a negative constant (no trip for ONNX, for ever for
            // OpenVINO): held between 0 and the cap.
            _ => {
                if opset < INTEGER_MIN {
                    return Err(unsupported(
                        "has a trip count computed at run time",
                        INTEGER_MIN,
                    ));
                }
                // Numbered: two loops can share a trip count, and output names are unique.
                let below = format!("{trip_count}__{CAP}_{}", capped.len());
                let bounded = format!("{below}__{ZERO}");
                graph.node[index].input[0] = bounded.clone();
                for (op, inputs, output) in [
                    ("Max", [below.clone(), ZERO.into()], bounded),
                    ("Min", [trip_count, CAP.into()], below),
                ] {
                    graph
                        .node
                        .insert(index, operator(op, inputs.to_vec(), output));
                }
                index += 2;
            }
        }
        capped.push(name);
        index += 1;
    }
    Ok(())
}

/// Makes a loop `body` end once its iteration number reaches the cap: its condition output
/// becomes `condition && iteration < cap - 1`.
fn end_at_the_cap(body: &mut GraphProto) -> Result<(), String> {
    let iteration = body
        .input
        .first()
        .map(|v| v.name().to_string())
        .filter(|n| !n.is_empty())
        .ok_or("its body has no iteration number input")?;
    let condition = body
        .output
        .first_mut()
        .ok_or("its body has no condition output")?;
    let old = condition.name().to_string();
    let below = format!("{iteration}__{LAST}");
    let new = format!("{old}__{CAP}");
    condition.name = Some(new.clone());
    body.node.push(operator(
        "Less",
        vec![iteration, LAST.into()],
        below.clone(),
    ));
    body.node.push(operator("And", vec![old, below], new));
    Ok(())
}

fn operator(op: &str, inputs: Vec<String>, output: String) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(output.clone()),
        input: inputs,
        output: vec![output],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::proto::{ModelProto, ValueInfoProto};

    fn model(graph: GraphProto, opset: i64) -> Vec<u8> {
        encode_model(&ModelProto::of_graph(graph, 8, opset))
    }

    fn value(name: &str) -> ValueInfoProto {
        ValueInfoProto {
            name: Some(name.into()),
            ..Default::default()
        }
    }

    /// A Loop of `trip_count` whose body computes its condition.
    fn looping(name: &str, trip_count: &str) -> NodeProto {
        NodeProto {
            name: Some(name.into()),
            attribute: vec![AttributeProto {
                name: Some("body".into()),
                g: Some(GraphProto {
                    node: vec![NodeProto::new("Less", &["i", "limit"], &["c_out"])],
                    input: vec![value("i"), value("c_in")],
                    output: vec![value("c_out")],
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..NodeProto::new("Loop", &[trip_count, "cond"], &["out"])
        }
    }

    #[test]
    fn loops_without_a_constant_bound_are_capped_and_others_left_alone() {
        let graph = GraphProto {
            node: vec![
                NodeProto::new("Cast", &["x"], &["computed"]),
                looping("computed", "computed"),
                looping("absent", ""),
                looping("huge", "max"),
                looping("small", "ten"),
            ],
            initializer: vec![
                TensorProto::int64("max", i64::MAX),
                TensorProto::int64("ten", 10),
            ],
            ..Default::default()
        };
        let CappedModel { bytes, loops } = cap_trip_counts(&model(graph, 17)).unwrap().unwrap();
        assert_eq!(
            loops,
            [
                "Loop node `computed`",
                "Loop node `absent`",
                "Loop node `huge`"
            ]
        );
        let graph = decode_model(&bytes).unwrap().graph.unwrap();
        let constants: Vec<&str> = graph.node[..3]
            .iter()
            .map(|n| n.output[0].as_str())
            .collect();
        assert_eq!(constants, [CAP, LAST, ZERO]);
        let ops: Vec<(&str, &[String])> = graph.node[3..]
            .iter()
            .map(|n| (n.op_type(), &n.input[..]))
            .collect();
        // A computed count: held between 0 and the cap.
        let below = format!("computed__{CAP}_0");
        let bounded = format!("{below}__{ZERO}");
        assert_eq!(
            ops[1],
            ("Min", &["computed".to_string(), CAP.to_string()][..])
        );
        assert_eq!(ops[2], ("Max", &[below, ZERO.to_string()][..]));
        assert_eq!(ops[3].1[0], bounded);
        // No count, or 2^63 - 1: the count stays, the condition ends the loop at the cap.
        for (op, count) in [(ops[4], ""), (ops[5], "max")] {
            assert_eq!(op.1[0], count);
        }
        for loop_node in &graph.node[7..9] {
            let body = loop_node.attribute[0].g.as_ref().unwrap();
            let condition = format!("c_out__{CAP}");
            assert_eq!(body.output[0].name(), condition);
            let last: Vec<(&str, &[String], &[String])> = body.node[1..]
                .iter()
                .map(|n| (n.op_type(), &n.input[..], &n.output[..]))
                .collect();
            let below = format!("i__{LAST}");
            assert_eq!(
                last,
                [
                    (
                        "Less",
                        &["i".to_string(), LAST.into()][..],
                        &[below.clone()][..]
                    ),
                    ("And", &["c_out".to_string(), below][..], &[condition][..]),
                ]
            );
        }
        // A small constant count: left alone.
        assert_eq!(ops[6].1[0], "ten");
        assert!(graph.node[9].attribute[0].g.as_ref().unwrap().node.len() == 1);
        // Nothing to cap: nothing rewritten.
        let small = GraphProto {
            node: vec![looping("small", "ten")],
            initializer: vec![TensorProto::int64("ten", 10)],
            ..Default::default()
        };
        assert!(cap_trip_counts(&model(small, 17)).unwrap().is_none());
        assert!(cap_trip_counts(b"no such operator").unwrap().is_none());
    }

    #[test]
    fn loops_in_subgraphs_are_capped_and_old_operator_sets_refused() {
        let mut branch = NodeProto::new("If", &["c"], &["y"]);
        branch.attribute.push(AttributeProto {
            name: Some("then_branch".into()),
            g: Some(GraphProto {
                node: vec![
                    NodeProto::new("Cast", &["x"], &["n"]),
                    looping("inner", "n"),
                ],
                ..Default::default()
            }),
            ..Default::default()
        });
        let graph = GraphProto {
            node: vec![branch],
            ..Default::default()
        };
        let capped = cap_trip_counts(&model(graph.clone(), 17)).unwrap().unwrap();
        assert_eq!(capped.loops, ["Loop node `inner`"]);
        let err = cap_trip_counts(&model(graph, 11)).unwrap_err();
        assert!(err.contains("operator set 11"), "{err}");
    }

    #[test]
    fn loops_sharing_a_computed_trip_count_get_outputs_of_their_own() {
        let graph = GraphProto {
            node: vec![
                NodeProto::new("Cast", &["x"], &["n"]),
                looping("first", "n"),
                looping("second", "n"),
            ],
            ..Default::default()
        };
        let capped = cap_trip_counts(&model(graph, 17)).unwrap().unwrap();
        assert_eq!(capped.loops, ["Loop node `first`", "Loop node `second`"]);
        let graph = decode_model(&capped.bytes).unwrap().graph.unwrap();
        // The outputs the capping added (the test's loops share theirs).
        let mut names: Vec<&String> = graph
            .node
            .iter()
            .flat_map(|n| &n.output)
            .filter(|name| name.contains(CAP))
            .collect();
        assert_eq!(names.len(), 5, "{names:?}");
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "{names:?}");
        // Each loop reads its own bounded count.
        let counts: Vec<&str> = graph
            .node
            .iter()
            .filter(|n| n.op_type() == "Loop")
            .map(|n| n.input[0].as_str())
            .collect();
        assert_ne!(counts[0], counts[1]);
    }

    #[test]
    fn constants_are_read_as_the_model_check_reads_them() {
        let value_int = |output: &str, value: i64| NodeProto {
            attribute: vec![AttributeProto {
                name: Some("value_int".into()),
                i: Some(value),
                ..Default::default()
            }],
            ..NodeProto::new("Constant", &[], &[output])
        };
        // A `value_int` of 10: a small constant, left alone.
        let small = GraphProto {
            node: vec![value_int("ten", 10), looping("small", "ten")],
            ..Default::default()
        };
        assert!(cap_trip_counts(&model(small, 17)).unwrap().is_none());
        // 2^63 - 1 as a `value_ints` of one element: the count stays, the condition ends it.
        let huge = GraphProto {
            node: vec![
                NodeProto {
                    attribute: vec![AttributeProto {
                        name: Some("value_ints".into()),
                        ints: vec![i64::MAX],
                        ..Default::default()
                    }],
                    ..NodeProto::new("Constant", &[], &["max"])
                },
                looping("huge", "max"),
            ],
            ..Default::default()
        };
        let capped = cap_trip_counts(&model(huge, 17)).unwrap().unwrap();
        let graph = decode_model(&capped.bytes).unwrap().graph.unwrap();
        let lp = graph.node.iter().find(|n| n.op_type() == "Loop").unwrap();
        assert_eq!(lp.input[0], "max");
        // A negative constant (no trip for ONNX, for ever for OpenVINO): held at 0.
        let negative = GraphProto {
            node: vec![value_int("minus", -1), looping("negative", "minus")],
            ..Default::default()
        };
        let capped = cap_trip_counts(&model(negative, 17)).unwrap().unwrap();
        let graph = decode_model(&capped.bytes).unwrap().graph.unwrap();
        assert!(graph.node.iter().any(|n| n.op_type() == "Max"));
    }

    #[test]
    fn loops_in_local_functions_without_a_small_constant_count_are_refused() {
        let with_function = |nodes: Vec<NodeProto>| {
            let mut proto = ModelProto::of_graph(
                GraphProto {
                    node: vec![NodeProto::new("Relu", &["x"], &["y"])],
                    ..Default::default()
                },
                8,
                17,
            );
            proto.functions.push(
                FunctionNodes {
                    name: Some("body_fn".into()),
                    node: nodes,
                }
                .encode_to_vec(),
            );
            encode_model(&proto)
        };
        let err = cap_trip_counts(&with_function(vec![looping("inner", "n")])).unwrap_err();
        assert!(
            err.contains("Loop node `inner` (in function `body_fn`)")
                && err.contains("backend=onnxruntime"),
            "{err}"
        );
        // Inside an If of the function, too.
        let mut branch = NodeProto::new("If", &["c"], &["y"]);
        branch.attribute.push(AttributeProto {
            name: Some("then_branch".into()),
            g: Some(GraphProto {
                node: vec![looping("deep", "")],
                ..Default::default()
            }),
            ..Default::default()
        });
        let err = cap_trip_counts(&with_function(vec![branch])).unwrap_err();
        assert!(err.contains("Loop node `deep`"), "{err}");
        // A small constant count of the function's own: nothing to do.
        let constant = NodeProto {
            attribute: vec![AttributeProto {
                name: Some("value".into()),
                t: Some(TensorProto::int64("", 10)),
                ..Default::default()
            }],
            ..NodeProto::new("Constant", &[], &["ten"])
        };
        assert!(
            cap_trip_counts(&with_function(vec![constant, looping("ok", "ten")]))
                .unwrap()
                .is_none()
        );
    }
}
