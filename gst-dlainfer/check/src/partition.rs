// SPDX-License-Identifier: MIT OR Apache-2.0
//! How a DLA build with GPU fallback splits a network: consecutive runs of nodes on one device
//! become subgraphs (each DLA subgraph is one loadable). A subgraph never contains a path that
//! leaves it and comes back, so nodes are grouped by "stage", the number of device changes on
//! the longest path from the inputs, and by connectivity within a stage.

use std::collections::HashMap;

use super::onnx::Node;
use super::rules::Placement;

/// The subgraph index of each node (`None` for folded and removed nodes), and the number of
/// subgraphs.
pub fn partition(nodes: &[Node], placement: &[Placement]) -> (Vec<Option<usize>>, usize) {
    // The node producing each tensor; removed nodes pass their input's producer through.
    let mut producer: HashMap<&str, usize> = HashMap::new();
    let mut stage = vec![0usize; nodes.len()];
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    for (i, node) in nodes.iter().enumerate() {
        let preds: Vec<usize> = node
            .inputs
            .iter()
            .filter_map(|t| producer.get(t.as_str()).copied())
            .collect();
        match placement[i] {
            Placement::Folded => continue,
            Placement::Removed => {
                if let (Some(&p), Some(out)) = (preds.first(), node.outputs.first()) {
                    producer.insert(out, p);
                }
                continue;
            }
            Placement::Dla | Placement::Gpu => {}
        }
        stage[i] = preds
            .iter()
            .map(|&p| stage[p] + usize::from(placement[p] != placement[i]))
            .max()
            .unwrap_or(0);
        for &p in &preds {
            if placement[p] == placement[i] && stage[p] == stage[i] {
                union(&mut parent, p, i);
            }
        }
        for out in &node.outputs {
            producer.insert(out, i);
        }
    }
    let mut ids: HashMap<usize, usize> = HashMap::new();
    let subgraph = (0..nodes.len())
        .map(|i| match placement[i] {
            Placement::Dla | Placement::Gpu => {
                let root = find(&mut parent, i);
                let next = ids.len();
                Some(*ids.entry(root).or_insert(next))
            }
            _ => None,
        })
        .collect();
    (subgraph, ids.len())
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[rb.max(ra)] = rb.min(ra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(inputs: &[&str], output: &str) -> Node {
        Node {
            name: output.into(),
            op_type: "X".into(),
            domain: String::new(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: vec![output.into()],
            attributes: Default::default(),
        }
    }

    #[test]
    fn a_path_through_the_gpu_splits_a_dla_run() {
        use Placement::*;
        // a(DLA) -> g(GPU) -> c(DLA); a -> c directly as well; b(DLA) after a.
        let nodes = [
            node(&["x"], "a"),
            node(&["a"], "g"),
            node(&["a", "g"], "c"),
            node(&["a"], "b"),
        ];
        let (sub, n) = partition(&nodes, &[Dla, Gpu, Dla, Dla]);
        assert_eq!(n, 3);
        assert_eq!(sub[0], sub[3], "a and b share a loadable");
        assert_ne!(sub[0], sub[2], "c waits for the GPU");
        assert_ne!(sub[1], sub[0]);
    }

    #[test]
    fn removed_nodes_are_transparent_and_folded_ones_ignored() {
        use Placement::*;
        let nodes = [
            node(&["x"], "a"),
            node(&["a"], "i"),
            node(&["i"], "b"),
            node(&[], "k"),
        ];
        let (sub, n) = partition(&nodes, &[Dla, Removed, Dla, Folded]);
        assert_eq!(n, 1);
        assert_eq!(sub, [Some(0), None, Some(0), None]);
    }
}
