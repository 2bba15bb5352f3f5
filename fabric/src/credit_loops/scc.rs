//! Strongly connected components (Tarjan, without recursion) and one cycle through each.

use std::collections::{HashMap, VecDeque};

/// A directed graph on the vertices `0..vertices()`, read in place: the dependency graph of a
/// large fabric has hundreds of thousands of vertices, and is not copied to be searched.
pub(super) trait Graph {
    fn vertices(&self) -> usize;
    /// The `i`th successor of `v`, `None` past its last.
    fn successor(&self, v: u32, i: usize) -> Option<u32>;

    /// Every successor of `v`.
    fn successors(&self, v: u32) -> impl Iterator<Item = u32> {
        (0..).map_while(move |i| self.successor(v, i))
    }
}

/// Vertex `v`'s successors are `self[v]`.
impl Graph for [Vec<u32>] {
    fn vertices(&self) -> usize {
        self.len()
    }

    fn successor(&self, v: u32, i: usize) -> Option<u32> {
        self[v as usize].get(i).copied()
    }
}

/// Every strongly connected component of `graph` that can close a cycle: of more than one
/// vertex, or one vertex with an edge to itself. Each component lists its vertices in
/// increasing order; components come in the order of their smallest vertex.
pub(super) fn cyclic_components(graph: &(impl Graph + ?Sized)) -> Vec<Vec<u32>> {
    let mut components = strongly_connected(graph);
    for component in &mut components {
        component.sort_unstable();
    }
    components.sort_unstable_by_key(|c| c[0]);
    components
}

const UNVISITED: u32 = u32::MAX;

/// Tarjan's algorithm with an explicit stack: deep dependency chains (a large torus) would
/// overflow the thread's stack with recursion. Only the cyclic components are kept: nearly
/// every vertex of a fabric's graph is a component of its own.
fn strongly_connected(graph: &(impl Graph + ?Sized)) -> Vec<Vec<u32>> {
    let n = graph.vertices();
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut components = Vec::new();
    let mut next_index = 0u32;
    // The depth-first path: each vertex and how many of its successors it has looked at.
    let mut path: Vec<(u32, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNVISITED {
            continue;
        }
        path.push((root as u32, 0));
        while let Some(&mut (v, ref mut seen)) = path.last_mut() {
            let vi = v as usize;
            if *seen == 0 {
                index[vi] = next_index;
                low[vi] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[vi] = true;
            }
            if let Some(w) = graph.successor(v, *seen) {
                *seen += 1;
                let wi = w as usize;
                if index[wi] == UNVISITED {
                    path.push((w, 0));
                } else if on_stack[wi] {
                    low[vi] = low[vi].min(index[wi]);
                }
                continue;
            }
            path.pop();
            if let Some(&(parent, _)) = path.last() {
                let parent = parent as usize;
                low[parent] = low[parent].min(low[vi]);
            }
            if low[vi] == index[vi] {
                if stack.last() == Some(&v) {
                    stack.pop();
                    on_stack[vi] = false;
                    if graph.successors(v).any(|w| w == v) {
                        components.push(vec![v]);
                    }
                    continue;
                }
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// One cycle through `component` (a cyclic component of the graph), starting and ending at its
/// smallest vertex and staying inside it: the shortest such cycle, found breadth first.
pub(super) fn cycle_in(graph: &(impl Graph + ?Sized), component: &[u32]) -> Vec<u32> {
    let start = component[0];
    let inside = |v: u32| component.binary_search(&v).is_ok();
    // Each vertex reached, with the vertex it was reached from.
    let mut reached_from: HashMap<u32, u32> = HashMap::from([(start, start)]);
    let mut frontier = VecDeque::from([start]);
    while let Some(v) = frontier.pop_front() {
        for w in graph.successors(v) {
            if w == start {
                let mut cycle = vec![v];
                let mut at = v;
                while at != start {
                    at = reached_from[&at];
                    cycle.push(at);
                }
                cycle.reverse();
                // `cycle` now runs start, ..., v; the edge v -> start closes it.
                return cycle;
            }
            if inside(w) && !reached_from.contains_key(&w) {
                reached_from.insert(w, v);
                frontier.push_back(w);
            }
        }
    }
    // A cyclic component always has a cycle through each of its vertices.
    vec![start]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Whether `to` can be reached from `from` by one or more edges.
    fn reaches(successors: &[Vec<u32>], from: u32, to: u32) -> bool {
        let mut seen = vec![false; successors.len()];
        let mut todo: Vec<u32> = successors[from as usize].clone();
        while let Some(v) = todo.pop() {
            if v == to {
                return true;
            }
            if !std::mem::replace(&mut seen[v as usize], true) {
                todo.extend(&successors[v as usize]);
            }
        }
        false
    }

    fn graph(max_vertices: usize) -> impl Strategy<Value = Vec<Vec<u32>>> {
        (1..=max_vertices).prop_flat_map(|n| {
            proptest::collection::vec(proptest::collection::vec(0..n as u32, 0..4), n)
        })
    }

    proptest! {
        /// The components are exactly the vertices on a cycle, grouped by mutual reachability,
        /// as a brute-force search finds them.
        #[test]
        fn components_match_a_brute_force_search(successors in graph(9)) {
            let components = cyclic_components(successors.as_slice());
            let n = successors.len() as u32;
            for v in 0..n {
                let on_cycle = reaches(&successors, v, v);
                let holding: Vec<&Vec<u32>> =
                    components.iter().filter(|c| c.contains(&v)).collect();
                prop_assert_eq!(holding.len(), usize::from(on_cycle));
                if let Some(component) = holding.first() {
                    for w in 0..n {
                        let mutual = reaches(&successors, v, w) && reaches(&successors, w, v);
                        prop_assert_eq!(component.contains(&w), mutual || w == v);
                    }
                }
            }
        }

        /// The cycle found in each component is a closed walk of the graph's edges inside it,
        /// visiting no vertex twice.
        #[test]
        fn each_cycle_is_made_of_edges(successors in graph(9)) {
            for component in cyclic_components(successors.as_slice()) {
                let cycle = cycle_in(successors.as_slice(), &component);
                prop_assert_eq!(cycle[0], component[0]);
                for (k, &v) in cycle.iter().enumerate() {
                    let w = cycle[(k + 1) % cycle.len()];
                    prop_assert!(successors[v as usize].contains(&w));
                    prop_assert!(component.contains(&v));
                }
                let mut distinct = cycle.clone();
                distinct.sort_unstable();
                distinct.dedup();
                prop_assert_eq!(distinct.len(), cycle.len());
            }
        }
    }

    #[test]
    fn a_long_chain_does_not_exhaust_the_stack() {
        let n = 200_000u32;
        let mut successors: Vec<Vec<u32>> = (0..n).map(|v| vec![v + 1]).collect();
        successors[(n - 1) as usize] = vec![0];
        let components = cyclic_components(successors.as_slice());
        assert_eq!(components.len(), 1);
        assert_eq!(components[0].len(), n as usize);
    }
}
