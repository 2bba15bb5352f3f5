//! Up*/down* routing exactly as OpenSM's `updn` engine (`osm_ucast_updn.c`) computes it.
//!
//! The roots are the switches `root_guid_file` names (a GUID of no switch, a CA's included, is
//! ignored), else those OpenSM detects: [`updn_roots`]. After a file OpenSM could not read to
//! its end, both: the roots read before the failure and those detected. No root fails the
//! engine, and the engine list falls back. Every switch is ranked by its hop distance from the
//! nearest root.
//!
//! For each destination switch, a search runs outward from it and fills that switch's row of
//! the hop matrix, port by port (OpenSM's `updn_bfs_by_node`). The search runs against the
//! traffic: a search step from `u` to `r` is traffic from `r` to `u`. The search labels each
//! step (`updn_get_dir`): toward a higher rank is down, toward a lower rank up, between two
//! roots always up, and between equal ranks up toward the lower NodeGUID (the host-order
//! GUID, compared as a number). A switch reached by a down step may not continue with an up
//! step: traffic never turns from down to up, except over root-to-root links, which OpenSM
//! lets both ways. The search is not a plain BFS but OpenSM's exact queue discipline: a port's
//! count improves only when strictly smaller, a switch re-enters the queue with the label of
//! whichever step last improved one of its ports, and ties follow port order.
//!
//! The tables come from the shared balancing step over these counts: a switch's candidate
//! ports toward a destination are those at its least count. A switch the search never reached
//! has no route: between two spines of a two-level tree the only path goes down and up again,
//! so OpenSM leaves that entry unset (no route), and so does this engine. `connect_roots` keeps
//! the shortest paths toward root switches instead, as OpenSM does when it has built them.

use std::collections::VecDeque;

use ibqos_qos::VlCount;

use super::balance::{self, NoPath};
use super::engine::{Engine, Routing};
use super::minhop::shortest_toward;
use super::{GuidFile, Routes, RoutingError, RoutingOptions, SwitchGraph, destinations};
use crate::topology::{NodeId, PortRef, Topology};

/// OpenSM's `updn`: [`updn`] behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct UpDown;

impl Engine for UpDown {
    fn name(&self) -> &'static str {
        "updn"
    }

    fn is_unlayered(&self) -> bool {
        true
    }

    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        _vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        updn(topo, options).map(Routing::from)
    }
}

/// Up/down ranks: hop distance of every switch from the nearest root, and the NodeGUIDs that
/// order switches of equal rank.
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

    /// Whether traffic from switch `from` to switch `to` goes up: the search step from `to` to
    /// `from` is down. Between two roots it never does.
    pub fn is_up(&self, from: NodeId, to: NodeId) -> bool {
        // OpenSM keeps an unranked switch at rank 0xffffffff.
        let rank = |n: NodeId| self.rank(n).unwrap_or(u32::MAX);
        let guid = |n: NodeId| self.guid.get(n.index()).copied().unwrap_or(0);
        updn_dir((rank(to), guid(to)), (rank(from), guid(from))) == Dir::Down
    }
}

/// The label of a search step, as OpenSM's up/down engines name it. The search runs from the
/// destination against the traffic, so a search step up is traffic going down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    Up,
    Down,
    /// dnup's step between switches of equal rank.
    Equal,
}

/// `updn_get_dir`: the label of the search step from `cur` to `rem`, each (rank, NodeGUID).
fn updn_dir(cur: (u32, u64), rem: (u32, u64)) -> Dir {
    match (cur.0, rem.0) {
        (0, 0) => Dir::Up,
        (c, r) if c < r => Dir::Down,
        (c, r) if c > r => Dir::Up,
        _ if cur.1 > rem.1 => Dir::Up,
        _ => Dir::Down,
    }
}

/// OpenSM's "no path" hop count.
const NO_HOPS: u8 = 0xFF;
/// `IB_SUBNET_PATH_HOPS_MAX`: hop counts from here on are no path.
const MAX_HOPS: u8 = 64;

/// The switch-to-switch links of each switch slot, in port order: (port, neighbour slot, the
/// index of the same link in the neighbour's list).
pub(super) struct Links(Vec<Vec<(u8, usize, usize)>>);

impl Links {
    pub(super) fn new(topo: &Topology, graph: &SwitchGraph) -> Links {
        let back = |s: usize, port: u8, n: usize| {
            let peer = topo.peer(PortRef::new(graph.ids[s], port));
            graph.adj[n]
                .iter()
                .position(|&(p, m)| m == s && peer.is_some_and(|q| q.port == p))
        };
        Links(
            graph
                .adj
                .iter()
                .enumerate()
                .map(|(s, adj)| {
                    adj.iter()
                        .filter_map(|&(p, n)| Some((p, n, back(s, p, n)?)))
                        .collect()
                })
                .collect(),
        )
    }
}

/// How one engine's search labels and refuses steps.
pub(super) struct Turns<'a> {
    /// The label the destination starts with.
    pub start: Dir,
    /// The label of the search step from slot `cur` to slot `rem`.
    pub step: &'a dyn Fn(usize, usize) -> Dir,
    /// The step refused: (the label a switch was reached with, the label of the next step).
    pub refused: (Dir, Dir),
    /// Added to the count of a refused step in place of refusing it (dnup's `connect_roots`);
    /// 0 refuses.
    pub prune_weight: u8,
}

/// One destination switch's row of the hop matrix.
struct Row {
    /// By slot: the least count of any port (OpenSM's port 0 entry); [`NO_HOPS`] for none.
    least: Vec<u8>,
    /// By slot, by link index: the count through that link.
    hops: Vec<Vec<u8>>,
}

impl Row {
    /// `osm_switch_set_hops` on a port: the least count only ever falls.
    fn set(&mut self, s: usize, link: usize, count: u8) {
        self.hops[s][link] = count;
        self.least[s] = self.least[s].min(count);
    }

    /// By slot: the ports at the least count, in port order; none where there is no path.
    fn candidates(&self, links: &Links) -> Vec<Vec<u8>> {
        links
            .0
            .iter()
            .enumerate()
            .map(|(s, list)| {
                list.iter()
                    .zip(&self.hops[s])
                    .filter(|&(_, &h)| self.least[s] != NO_HOPS && h == self.least[s])
                    .map(|(&(p, _, _), _)| p)
                    .collect()
            })
            .collect()
    }
}

/// Fills destination `t`'s row as `updn_bfs_by_node` / `dnup_bfs_by_node` do, and raises
/// `max_hops` to the highest count set. Returns the candidate ports of every switch toward `t`.
pub(super) fn search(links: &Links, t: usize, turns: &Turns, max_hops: &mut u8) -> Vec<Vec<u8>> {
    let n = links.0.len();
    let mut row = Row {
        least: vec![NO_HOPS; n],
        hops: links.0.iter().map(|l| vec![NO_HOPS; l.len()]).collect(),
    };
    row.least[t] = 0;
    let mut dir = vec![turns.start; n];
    let mut queued = vec![false; n];
    let mut queue = VecDeque::from([t]);
    while let Some(u) = queue.pop_front() {
        queued[u] = false;
        let arrived = dir[u];
        for &(_, r, back) in &links.0[u] {
            let next = (turns.step)(u, r);
            let mut count = row.least[u];
            let remote = row.hops[r][back];
            if (arrived, next) == turns.refused {
                if turns.prune_weight == 0 {
                    continue;
                }
                // OpenSM adds in a u8 and, past the hop limit, marks the port unusable (ERR
                // AE02) before comparing with the count it read earlier.
                count = count.wrapping_add(turns.prune_weight);
                if count >= MAX_HOPS {
                    row.hops[r][back] = NO_HOPS;
                }
            }
            if u16::from(count) + 1 < u16::from(remote) {
                row.set(r, back, count + 1);
                *max_hops = (*max_hops).max(count + 1);
                if !queued[r] {
                    dir[r] = next;
                    queued[r] = true;
                    queue.push_back(r);
                }
            }
        }
    }
    row.candidates(links)
}

/// Up*/down* routes as OpenSM's `updn` computes them with `options`' `root_guid_file` and
/// `connect_roots`. Fails when there is no root, as OpenSM does ("disabling UPDN algorithm,
/// no root nodes were found").
pub fn updn(topo: &Topology, options: &RoutingOptions) -> Result<Routes, RoutingError> {
    topo.validate()?;
    let graph = SwitchGraph::new(topo);
    let dests = destinations(topo, &graph, options)?;
    // `rank_root_node`: file order does not matter, unknown GUIDs are skipped. OpenSM detects
    // roots without a file, and also after a file it could not read to its end, keeping the
    // roots read before the failure.
    let file_failed = options.failed_files.contains(&GuidFile::Root);
    let named: Vec<usize> = options.root_guids.as_ref().map_or(Vec::new(), |guids| {
        (0..graph.len())
            .filter(|&s| guids.contains(&graph.guid[s]))
            .collect()
    });
    let detect = options.root_guids.is_none() || file_failed;
    let mut roots = named.clone();
    if detect {
        roots.extend(
            roots_of(topo, &graph)
                .into_iter()
                .filter(|s| !named.contains(s)),
        );
    }
    if roots.is_empty() {
        return Err(RoutingError::NoRoots);
    }
    let rank = graph.bfs(&roots, |_, _| true);
    let step = |u: usize, r: usize| updn_dir((rank[u], graph.guid[u]), (rank[r], graph.guid[r]));
    let turns = Turns {
        start: Dir::Up,
        step: &step,
        refused: (Dir::Down, Dir::Up),
        prune_weight: 0,
    };
    // With `connect_roots` OpenSM keeps the min-hop rows toward the roots, when it has built the
    // min-hop matrix: it detected roots, or read more than one. With a single root it has not,
    // but then the search's row toward that root is the min-hop row anyway: every step away
    // from the only root is down, and nothing refuses a further step down.
    let min_hop_rows_kept = options.connect_roots;
    let links = Links::new(topo, &graph);
    let toward: Vec<Vec<Vec<u8>>> = (0..graph.len())
        .map(|t| {
            if min_hop_rows_kept && rank[t] == 0 {
                shortest_toward(&graph, t)
            } else {
                search(&links, t, &turns, &mut 0)
            }
        })
        .collect();
    balance::build(topo, &graph, &dests, NoPath::Unset, options, |_, t, s| {
        &toward[t][s]
    })
}

/// The roots OpenSM's `updn` detects when no root file is given
/// (`updn_find_root_nodes_by_min_hop`), in node order: the switches for which exactly one hop
/// distance holds more than 90% of the CA and router ports attached to switches, and no other
/// distance more than 5%. Those are the spines of a fat tree; on a large two-level tree every
/// leaf qualifies too, as each holds under 5%. A ring, a torus or a mesh has none.
pub fn updn_roots(topo: &Topology) -> Vec<NodeId> {
    let graph = SwitchGraph::new(topo);
    roots_of(topo, &graph)
        .into_iter()
        .map(|s| graph.ids[s])
        .collect()
}

/// [`updn_roots`] as switch slots.
fn roots_of(topo: &Topology, graph: &SwitchGraph) -> Vec<usize> {
    // CA and router ports per switch.
    let mut cas = vec![0u32; graph.len()];
    for (_, node) in topo.nodes().filter(|(_, n)| !n.is_switch()) {
        for (_, port) in node.existing_ports() {
            if let Some(s) = port.peer.and_then(|p| graph.slot_of(p.node)) {
                cas[s] += 1;
            }
        }
    }
    let total = f64::from(cas.iter().sum::<u32>());
    // OpenSM's thresholds, in its floating point.
    let (most, some) = (total * 0.9, total * 0.05);
    (0..graph.len())
        .filter(|&s| {
            let dist = graph.bfs(&[s], |_, _| true);
            let mut histogram = [0u32; MAX_HOPS as usize];
            for (t, &d) in dist.iter().enumerate() {
                if d < u32::from(MAX_HOPS) {
                    histogram[d as usize] += cas[t];
                }
            }
            let bars_over = |threshold: f64| {
                histogram
                    .iter()
                    .filter(|&&n| f64::from(n) > threshold)
                    .count()
            };
            bars_over(most) == 1 && bars_over(some) == 1
        })
        .collect()
}
