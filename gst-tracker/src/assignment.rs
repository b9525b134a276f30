// SPDX-License-Identifier: MIT OR Apache-2.0
//! Minimum-cost assignment (Hungarian method, O(n^3) on the smaller side), and the greedy
//! matching of the IoU tracker.

/// Assigns rows to columns minimising the total cost; pairs whose cost exceeds `max_cost` are not
/// matched. Returns the matched (row, column) pairs.
pub fn hungarian(cost: &[Vec<f32>], max_cost: f32) -> Vec<(usize, usize)> {
    let rows = cost.len();
    let cols = cost.first().map_or(0, Vec::len);
    if rows == 0 || cols == 0 {
        return Vec::new();
    }
    // Solve on a square matrix; forbidden or padded cells cost more than any real match.
    let n = rows.max(cols);
    let big = max_cost.abs() * 2.0 + 1e3;
    let c = |i: usize, j: usize| -> f64 {
        if i < rows && j < cols && cost[i][j] <= max_cost {
            cost[i][j] as f64
        } else {
            big as f64
        }
    };
    // Shortest augmenting path (Jonker-Volgenant style) with potentials, 1-based.
    let (mut u, mut v) = (vec![0.0f64; n + 1], vec![0.0f64; n + 1]);
    let mut p = vec![0usize; n + 1]; // p[j]: row matched to column j
    let mut way = vec![0usize; n + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![f64::INFINITY; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let (mut delta, mut j1) = (f64::INFINITY, 0);
            for j in 1..=n {
                if !used[j] {
                    let cur = c(i0 - 1, j - 1) - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    (1..=n)
        .filter_map(|j| {
            let (i, j) = (p[j].checked_sub(1)?, j - 1);
            (i < rows && j < cols && cost[i][j] <= max_cost).then_some((i, j))
        })
        .collect()
}

/// Minimum-cost assignment over candidate pairs `(row, column, cost)` (pairs not listed cannot
/// match). The pairs fall apart into independent groups (objects far apart never compete), each
/// solved exactly on its own, which keeps crowded frames with hundreds of objects fast.
pub fn sparse_hungarian(
    rows: usize,
    cols: usize,
    pairs: &[(usize, usize, f32)],
) -> Vec<(usize, usize)> {
    // Union-find over rows (0..rows) and columns (rows..rows+cols).
    let mut parent: Vec<usize> = (0..rows + cols).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &(r, c, _) in pairs {
        let (a, b) = (find(&mut parent, r), find(&mut parent, rows + c));
        if a != b {
            parent[a] = b;
        }
    }
    let mut groups: std::collections::HashMap<usize, Vec<(usize, usize, f32)>> = Default::default();
    for &p in pairs {
        let root = find(&mut parent, p.0);
        groups.entry(root).or_default().push(p);
    }
    let mut out = Vec::new();
    for group in groups.into_values() {
        if let [(r, c, _)] = group[..] {
            out.push((r, c));
            continue;
        }
        let mut row_ids: Vec<usize> = group.iter().map(|p| p.0).collect();
        let mut col_ids: Vec<usize> = group.iter().map(|p| p.1).collect();
        row_ids.sort_unstable();
        row_ids.dedup();
        col_ids.sort_unstable();
        col_ids.dedup();
        let mut cost = vec![vec![f32::INFINITY; col_ids.len()]; row_ids.len()];
        let mut max_cost = 0.0f32;
        for &(r, c, v) in &group {
            let (i, j) = (
                row_ids.binary_search(&r).unwrap(),
                col_ids.binary_search(&c).unwrap(),
            );
            cost[i][j] = v;
            max_cost = max_cost.max(v);
        }
        out.extend(
            hungarian(&cost, max_cost)
                .into_iter()
                .map(|(i, j)| (row_ids[i], col_ids[j])),
        );
    }
    out
}

/// Greedy matching over candidate pairs `(row, column, cost)`: repeatedly takes the cheapest
/// pair whose row and column are both still free.
pub fn greedy(rows: usize, cols: usize, pairs: &mut [(usize, usize, f32)]) -> Vec<(usize, usize)> {
    pairs.sort_by(|a, b| a.2.total_cmp(&b.2));
    let (mut row_used, mut col_used) = (vec![false; rows], vec![false; cols]);
    let mut out = Vec::new();
    for &(i, j, _) in pairs.iter() {
        if !row_used[i] && !col_used[j] {
            row_used[i] = true;
            col_used[j] = true;
            out.push((i, j));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(cost: &[Vec<f32>], pairs: &[(usize, usize)]) -> f32 {
        pairs.iter().map(|&(i, j)| cost[i][j]).sum()
    }

    #[test]
    fn optimal_where_greedy_is_not() {
        // Greedy takes (0,0)=1 and is then forced into (1,1)=10; optimal is 2 + 3.
        let cost = vec![vec![1.0, 2.0], vec![3.0, 10.0]];
        let h = hungarian(&cost, 100.0);
        assert_eq!(total(&cost, &h), 5.0);
        let mut pairs: Vec<(usize, usize, f32)> = (0..2)
            .flat_map(|i| (0..2).map(move |j| (i, j)))
            .map(|(i, j)| (i, j, cost[i][j]))
            .collect();
        let g = greedy(2, 2, &mut pairs);
        assert_eq!(total(&cost, &g), 11.0);
    }

    #[test]
    fn rectangular_and_gated() {
        let cost = vec![vec![0.1, 0.9, 0.5], vec![0.8, 0.2, 0.95]];
        let mut h = hungarian(&cost, 0.6);
        h.sort();
        assert_eq!(h, vec![(0, 0), (1, 1)]);
        // Nothing cheap enough: no match rather than a bad one.
        assert!(hungarian(&[vec![0.9]], 0.5).is_empty());
        assert!(hungarian(&[], 0.5).is_empty());
    }

    #[test]
    fn matches_brute_force_on_random_matrices() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 1000) as f32 / 1000.0
        };
        for _ in 0..200 {
            let cost: Vec<Vec<f32>> = (0..4).map(|_| (0..4).map(|_| next()).collect()).collect();
            let best = permutations(4)
                .into_iter()
                .map(|p| p.iter().enumerate().map(|(i, &j)| cost[i][j]).sum::<f32>())
                .fold(f32::INFINITY, f32::min);
            let h = hungarian(&cost, 10.0);
            assert_eq!(h.len(), 4);
            assert!((total(&cost, &h) - best).abs() < 1e-4);
        }
    }

    #[test]
    fn sparse_equals_dense_on_random_sparse_matrices() {
        let mut seed = 0x1234_5678_9ABC_DEF0u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 1000) as f32 / 1000.0
        };
        for _ in 0..100 {
            let (rows, cols) = (7, 6);
            let cost: Vec<Vec<f32>> = (0..rows)
                .map(|_| {
                    (0..cols)
                        .map(|_| if next() < 0.3 { next() * 0.8 } else { 5.0 })
                        .collect()
                })
                .collect();
            let pairs: Vec<(usize, usize, f32)> = (0..rows)
                .flat_map(|i| (0..cols).map(move |j| (i, j)))
                .filter(|&(i, j)| cost[i][j] <= 0.8)
                .map(|(i, j)| (i, j, cost[i][j]))
                .collect();
            let dense = hungarian(&cost, 0.8);
            let sparse = sparse_hungarian(rows, cols, &pairs);
            assert_eq!(dense.len(), sparse.len());
            assert!((total(&cost, &dense) - total(&cost, &sparse)).abs() < 1e-4);
        }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for pos in 0..=p.len() {
                let mut q = p.clone();
                q.insert(pos, n - 1);
                out.push(q);
            }
        }
        out
    }
}
