//! Up*/down* routing (OpenSM's `osm_ucast_updn.c`): deadlock-free on any topology.
//!
//! Switches are ranked by hop distance from the roots. A step from switch `a` to switch `b` goes
//! *up* when `b` is closer to the roots: lower rank, or the same rank and a lower NodeGUID. That
//! makes "up" a strict order, so a route that climbs and then only descends can never close a
//! cycle of buffer dependencies. OpenSM uses the same rule except that a link between two roots
//! counts as up in both directions (its `updn_get_dir` hack), which can form such a cycle; here it
//! does not.
//!
//! For each destination switch `t`, a switch that can reach `t` going only down routes down, on
//! a shortest down-only path; any other switch routes up, toward a neighbour with the shortest
//! such route. A packet that has gone down therefore keeps going down: no route turns from down
//! to up. Among the allowed ports the balancing is minhop's.
//!
//! Between roots (and wherever else the roots leave a switch without a legal path to another
//! switch) up/down alone cannot reach a switch's own LID: from one spine of a fat tree to another
//! the only path goes down and up again. OpenSM leaves those LIDs unrouted unless
//! `connect_roots` is set, which is not IBA compliant. Here a switch destination with no legal
//! path is routed on a shortest path instead, as `connect_roots` does. Only switch port 0 traffic
//! (management) can take such a path; every CA and router destination is reached by legal
//! up/down paths or the routing fails. The fallback cannot loop: a switch with a legal path never
//! forwards to one without, and fallback hops strictly shorten the distance.

use super::engine::Engine;
use super::{Routes, RoutingError, RoutingOptions, SwitchGraph, balance, destinations};
use crate::topology::{NodeId, Topology};

/// OpenSM's `updn`: [`updn`] from the roots [`updn_roots`] finds, behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct UpDown;

impl Engine for UpDown {
    fn name(&self) -> &'static str {
        "updn"
    }

    fn unicast(&self, topo: &Topology, _options: &RoutingOptions) -> Result<Routes, RoutingError> {
        updn(topo, &[])
    }
}

/// Up/down ranks: hop distance of every switch from the nearest root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranks {
    /// By node index; `None` for non-switches and switches no root reaches.
    rank: Vec<Option<u32>>,
    guid: Vec<u64>,
}

impl Ranks {
    /// Ranks the switches of `topo` by BFS from `roots`, which must be switches.
    pub fn new(topo: &Topology, roots: &[NodeId]) -> Result<Ranks, RoutingError> {
        let graph = SwitchGraph::new(topo);
        Ranks::with_graph(topo, &graph, roots)
    }

    fn with_graph(
        topo: &Topology,
        graph: &SwitchGraph,
        roots: &[NodeId],
    ) -> Result<Ranks, RoutingError> {
        let slots = roots
            .iter()
            .map(|&r| graph.slot_of(r).ok_or(RoutingError::BadRoot(r)))
            .collect::<Result<Vec<_>, _>>()?;
        let dist = graph.bfs(&slots, |_, _| true);
        let mut rank = vec![None; topo.len()];
        for (s, id) in graph.ids.iter().enumerate() {
            rank[id.index()] = (dist[s] != u32::MAX).then_some(dist[s]);
        }
        let guid = topo.nodes().map(|(_, n)| n.guid).collect();
        Ok(Ranks { rank, guid })
    }

    /// The rank of `node`: 0 for a root, `None` for a non-switch or an unranked switch.
    pub fn rank(&self, node: NodeId) -> Option<u32> {
        self.rank.get(node.index()).copied().flatten()
    }

    /// The position of `node` in the up/down order: smaller is further up.
    fn key(&self, node: NodeId) -> (u32, u64, NodeId) {
        let guid = self.guid.get(node.index()).copied().unwrap_or(u64::MAX);
        (self.rank(node).unwrap_or(u32::MAX), guid, node)
    }

    /// Whether the step from switch `from` to switch `to` goes up.
    pub fn is_up(&self, from: NodeId, to: NodeId) -> bool {
        self.key(to) < self.key(from)
    }
}

/// Up*/down* routes from `roots`; with no roots, from [`updn_roots`].
pub fn updn(topo: &Topology, roots: &[NodeId]) -> Result<Routes, RoutingError> {
    topo.validate()?;
    let graph = SwitchGraph::new(topo);
    let dests = destinations(topo, &graph)?;
    let chosen;
    let roots = if roots.is_empty() {
        chosen = roots_of(topo, &graph);
        &chosen
    } else {
        roots
    };
    let ranks = Ranks::with_graph(topo, &graph, roots)?;
    let up = |a: usize, b: usize| ranks.is_up(graph.ids[a], graph.ids[b]);
    // Switches from the top of the order down: every up-neighbour comes before its switch.
    let mut top_down: Vec<usize> = (0..graph.len()).collect();
    top_down.sort_by_key(|&s| ranks.key(graph.ids[s]));
    let toward = (0..graph.len())
        .map(|t| {
            // Down-only distance to t: searched backwards from t, each step from x to a switch
            // `s` with s -> x going down.
            let down = graph.bfs(&[t], up);
            let mut route = down.clone();
            for &s in &top_down {
                if route[s] == u32::MAX {
                    route[s] = graph.adj[s]
                        .iter()
                        .filter(|&&(_, n)| up(s, n) && route[n] != u32::MAX)
                        .map(|&(_, n)| route[n] + 1)
                        .min()
                        .unwrap_or(u32::MAX);
                }
            }
            (0..graph.len())
                .map(|s| {
                    let going_down = down[s] != u32::MAX;
                    graph.adj[s]
                        .iter()
                        .filter(|&&(_, n)| {
                            if going_down {
                                !up(s, n) && down[n] != u32::MAX && down[n] + 1 == down[s]
                            } else {
                                up(s, n) && route[n] != u32::MAX && route[n] + 1 == route[s]
                            }
                        })
                        .map(|&(p, _)| p)
                        .collect()
                })
                .collect::<Vec<Vec<u8>>>()
        })
        .collect::<Vec<_>>();
    let shortest = super::minhop::shortest_ports(&graph);
    balance::build(topo, &graph, &dests, |is_switch, t, s| {
        let legal = toward[t][s].as_slice();
        if is_switch && legal.is_empty() {
            shortest[t][s].as_slice()
        } else {
            legal
        }
    })
}

/// The roots OpenSM's up/down picks when no root file is given (`osm_ucast_updn.c`
/// `updn_find_root_nodes_by_min_hop`): the switches for which more than 90% of the CA and router
/// ports attached to switches sit at one hop distance and no other distance holds more than 5%
/// — the spines of a fat tree.
///
/// Where that finds none (rings, tori, meshes), OpenSM gives up on up/down and falls back to
/// minhop, losing deadlock freedom. Instead this returns one root: the switch with the least
/// total hop distance to those ports (a graph median), the lowest NodeGUID on ties.
pub fn updn_roots(topo: &Topology) -> Vec<NodeId> {
    roots_of(topo, &SwitchGraph::new(topo))
}

fn roots_of(topo: &Topology, graph: &SwitchGraph) -> Vec<NodeId> {
    // CA and router ports per switch.
    let mut cas = vec![0u64; graph.len()];
    for (_, node) in topo.nodes().filter(|(_, n)| !n.is_switch()) {
        for (_, port) in node.existing_ports() {
            if let Some(s) = port.peer.and_then(|p| graph.slot_of(p.node)) {
                cas[s] += 1;
            }
        }
    }
    let total: u64 = cas.iter().sum();
    let dist: Vec<Vec<u32>> = (0..graph.len())
        .map(|s| graph.bfs(&[s], |_, _| true))
        .collect();
    let mut roots = Vec::new();
    for (s, row) in dist.iter().enumerate() {
        let mut histogram = std::collections::BTreeMap::new();
        for t in 0..graph.len() {
            if row[t] != u32::MAX && cas[t] > 0 {
                *histogram.entry(row[t]).or_insert(0u64) += cas[t];
            }
        }
        // Over 90% and over 5% of `total`, in integers.
        let over = |pct: u64| {
            histogram
                .values()
                .filter(|&&n| n * 100 > total * pct)
                .count()
        };
        if total > 0 && over(90) == 1 && over(5) == 1 {
            roots.push(graph.ids[s]);
        }
    }
    if roots.is_empty() {
        let weight = |t: usize| if total > 0 { cas[t] } else { 1 };
        let median = (0..graph.len()).min_by_key(|&s| {
            let cost: u64 = (0..graph.len())
                .map(|t| u64::from(dist[s][t].min(u32::from(u16::MAX))) * weight(t))
                .sum();
            (cost, graph.guid[s])
        });
        roots.extend(median.map(|s| graph.ids[s]));
    }
    roots
}
