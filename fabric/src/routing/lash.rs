//! LASH, layered shortest-path routing (OpenSM's `lash`, `osm_ucast_lash.c`).
//!
//! Every pair of switches gets one shortest path and one lane (an SL, and the VL the SL maps to),
//! so that no lane's channel dependencies close a cycle:
//! - switches are numbered in OpenSM's GUID order; each switch port linked to a switch is one
//!   link, in port order (parallel links stay apart, and a pair of switches always uses its
//!   lowest-numbered link);
//! - from each switch in turn a breadth-first tree is grown, and every switch of the tree routes
//!   toward the switches below it through the tree, where no earlier tree set that route: trees
//!   from lower numbers win, so subpaths of a route are routes too;
//! - the pairs are taken in order, both directions at once, each into the first lane whose
//!   dependency graph stays acyclic with it; a pair no lane takes opens a new lane. The graph's
//!   vertices are directed switch pairs, coarser than ports, as OpenSM's are;
//! - lanes are then balanced: random pairs move from the fullest lane to the emptiest while that
//!   keeps it acyclic, with glibc's `rand()`;
//! - the SL of a path is its switch pair's lane plus `lash_start_vl`.
//!
//! The dependency graph keeps OpenSM's bookkeeping as it is, counts that a failed attempt leaves
//! behind included: the balancing step reads them, and its moves decide the SLs.
//!
//! Not mirrored: `do_mesh_analysis` (OpenSM's mesh geometry reorders each switch's links); with
//! it set LASH refuses the fabric and the next engine routes.

use std::collections::HashMap;
use std::sync::Arc;

use ibqos_mad::Guid;
use ibqos_qos::VlCount;

use super::engine::{Engine, Layering, Routing};
use super::glibc_random::GlibcRandom;
use super::{
    NO_ROUTE, Routes, RoutingError, RoutingOptions, SwitchGraph, destinations, vl_count_for,
};
use crate::topology::{NodeId, PortRef, Topology};

/// OpenSM's `lash`: [`lash`] behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct Lash;

impl Engine for Lash {
    fn name(&self) -> &'static str {
        "lash"
    }

    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        lash(topo, options, vls)
    }
}

/// OpenSM stops balancing once the fullest and emptiest lanes differ by less than this.
const BALANCE_LIMIT: u32 = 6;

/// Routes `topo` with LASH on switch ports running `vls` data VLs: the LFTs, and the layering
/// whose `path_sl` gives each path's lane. Fails as OpenSM's LASH fails: `lash_start_vl` at or
/// above `vls` (ERR 4D03), more lanes than `vls` leaves above it (ERR 4D02, as
/// [`RoutingError::TooFewVls`]), and a switch that cannot reach another.
pub fn lash(
    topo: &Topology,
    options: &RoutingOptions,
    vls: VlCount,
) -> Result<Routing, RoutingError> {
    topo.validate()?;
    if options.do_mesh_analysis {
        return Err(RoutingError::Refused(
            "ibqos's LASH has no mesh analysis (do_mesh_analysis TRUE)".into(),
        ));
    }
    let start_vl = options.lash_start_vl;
    if start_vl >= vls.count() {
        return Err(RoutingError::Refused(format!(
            "ERR 4D03: Start VL({start_vl}) too high for min operational vl({})",
            vls.count()
        )));
    }
    let available = usize::from(vls.count() - start_vl);
    let graph = SwitchGraph::new(topo);
    let dests = destinations(topo, &graph, options)?;
    let fabric = Fabric::new(&graph);
    let routes = fabric.routes(topo)?;
    let mut layers = Layers::new(&fabric, &routes);
    let lanes = layers.assign(available).map_err(|needed| {
        let needed = needed + usize::from(start_vl);
        RoutingError::TooFewVls {
            needed: vl_count_for(needed),
            available: vls,
        }
    })?;
    let mut random = GlibcRandom::new(options.scatter_ports);
    layers.balance(lanes, &mut random);

    // The LFTs: a LID on this switch goes to its port, any other out of the link toward the
    // switch it hangs off.
    let max_lid = dests
        .iter()
        .map(|d| d.base + (d.count - 1))
        .max()
        .unwrap_or(0);
    let mut owner = vec![None; usize::from(max_lid) + 1];
    let mut lfts = std::collections::BTreeMap::new();
    for dest in &dests {
        for lid in dest.base..=dest.base + (dest.count - 1) {
            owner[usize::from(lid)] = dest.attach.map(|(t, p)| (fabric.id[t], p));
        }
    }
    for (sw, &id) in fabric.nodes.iter().enumerate() {
        let lft: Vec<u8> = owner
            .iter()
            .map(|o| match *o {
                Some((t, port)) if t == sw => port,
                Some((t, _)) => routes.port(&fabric, sw, t),
                None => NO_ROUTE,
            })
            .collect();
        lfts.insert(id, lft);
    }
    let layering = LashLayering {
        switch_of: owner.iter().map(|o| o.map(|(t, _)| t)).collect(),
        switches: fabric.len(),
        lanes: layers.lanes_by_pair(),
        start_vl,
        lanes_used: lanes,
    };
    Ok(Routing {
        routes: Routes { lfts, max_lid },
        layering: Arc::new(layering),
    })
}

/// LASH's view of the switches: numbered in OpenSM's GUID order, each with its links.
#[derive(Debug)]
struct Fabric {
    /// LASH's number of each switch slot of the [`SwitchGraph`].
    id: Vec<usize>,
    /// The node of each LASH number.
    nodes: Vec<NodeId>,
    /// Per LASH number: (port, neighbour's LASH number) for each port linked to a switch, in
    /// port order: OpenSM's links.
    links: Vec<Vec<(u8, usize)>>,
}

impl Fabric {
    fn new(graph: &SwitchGraph) -> Fabric {
        let mut order: Vec<usize> = (0..graph.len()).collect();
        order.sort_by_key(|&s| Guid(graph.guid[s]).opensm_order());
        let mut id = vec![0; graph.len()];
        for (number, &slot) in order.iter().enumerate() {
            id[slot] = number;
        }
        let links = order
            .iter()
            .map(|&slot| graph.adj[slot].iter().map(|&(p, n)| (p, id[n])).collect())
            .collect();
        let nodes = order.iter().map(|&slot| graph.ids[slot]).collect();
        Fabric { id, nodes, links }
    }

    fn len(&self) -> usize {
        self.links.len()
    }

    /// The first link of `sw` to `to` (OpenSM's `get_phys_connection`).
    fn link_to(&self, sw: usize, to: usize) -> Option<usize> {
        self.links[sw].iter().position(|&(_, n)| n == to)
    }

    /// Each switch's route toward every other: grown from breadth-first trees, from each
    /// switch in turn, set only where no earlier tree set it.
    fn routes(&self, topo: &Topology) -> Result<SwitchRoutes, RoutingError> {
        let n = self.len();
        let mut out = vec![None; n * n];
        let mut parent = vec![None; n];
        let mut queue = std::collections::VecDeque::new();
        for root in 0..n {
            parent.fill(None);
            parent[root] = Some(root);
            queue.push_back(root);
            while let Some(sw) = queue.pop_front() {
                for &(_, next) in &self.links[sw] {
                    if parent[next].is_none() {
                        parent[next] = Some(sw);
                        queue.push_back(next);
                    }
                }
            }
            // Every switch of the tree routes toward each switch below it through the child
            // that leads there.
            for d in 0..n {
                let (mut child, mut at) = (d, parent[d]);
                while let Some(a) = at.filter(|_| child != root) {
                    let entry = &mut out[a * n + d];
                    if entry.is_none() {
                        *entry = self.link_to(a, child);
                    }
                    (child, at) = (a, parent[a]);
                }
            }
        }
        let routes = SwitchRoutes { n, out };
        routes.check(self, topo)?;
        Ok(routes)
    }
}

/// The link each switch routes toward each other switch, by LASH numbers.
#[derive(Debug)]
struct SwitchRoutes {
    n: usize,
    /// `[sw * n + dest]`: the index of the link in `sw`'s links.
    out: Vec<Option<usize>>,
}

impl SwitchRoutes {
    /// Fails for the first pair of switches with no route (a fabric in pieces).
    fn check(&self, fabric: &Fabric, topo: &Topology) -> Result<(), RoutingError> {
        for sw in 0..self.n {
            for d in (0..self.n).filter(|&d| d != sw) {
                if self.out[sw * self.n + d].is_none() {
                    let name = |id: usize| topo.describe(PortRef::new(fabric.nodes[id], 0));
                    return Err(RoutingError::Unreachable {
                        switch: name(sw),
                        dest: name(d),
                        lid: 0,
                    });
                }
            }
        }
        Ok(())
    }

    /// The switch after `sw` on the route to `dest`.
    fn next(&self, fabric: &Fabric, sw: usize, dest: usize) -> usize {
        let link = self.out[sw * self.n + dest].unwrap_or_default();
        fabric.links[sw][link].1
    }

    /// The port `sw` forwards to toward `dest`.
    fn port(&self, fabric: &Fabric, sw: usize, dest: usize) -> u8 {
        self.out[sw * self.n + dest].map_or(NO_ROUTE, |link| fabric.links[sw][link].0)
    }

    /// The hops of the route from `sw` to `dest`, as the directed switch pairs that are the
    /// dependency graph's vertices.
    fn hops(&self, fabric: &Fabric, mut sw: usize, dest: usize) -> Vec<Hop> {
        let mut hops = Vec::new();
        while sw != dest {
            let next = self.next(fabric, sw, dest);
            hops.push((sw, next));
            sw = next;
        }
        hops
    }
}

/// A directed pair of neighbouring switches: a vertex of a lane's dependency graph.
type Hop = (usize, usize);

/// One dependency of a vertex on the next, and how many routes made it (OpenSM's `deps[]`).
#[derive(Debug, Clone, Copy)]
struct Dependency {
    on: Hop,
    routes: u32,
}

/// A vertex of a lane's dependency graph (OpenSM's `cdg_vertex_t`).
#[derive(Debug, Clone, Default)]
struct Vertex {
    /// OpenSM's fixed array: the first `live` are the dependencies; the slots after them keep
    /// what was last in them, counts included, as OpenSM's do.
    slots: Vec<Dependency>,
    live: usize,
    /// How many routes cross the vertex.
    routes: u32,
    /// Made by the pair being tried, not yet kept.
    tentative: bool,
    /// On a kept vertex: how many of the last dependencies the pair being tried added.
    tentative_dependencies: usize,
    /// The depth a cycle search reached it at, 0 for not reached.
    depth: u32,
    /// A cycle search explored all it depends on.
    explored: bool,
}

/// Whether a cycle of `graph` is reachable from `start` (OpenSM's `cycle_exists`): a depth-first
/// search that meets a vertex it is still exploring. Searches after the first, until the marks
/// are cleared, do not enter what the earlier ones explored, as OpenSM's do not.
fn cycle_from(graph: &mut HashMap<Hop, Vertex>, start: Hop) -> bool {
    let Some(v) = graph.get_mut(&start) else {
        return false;
    };
    v.depth = 1;
    let mut stack = vec![(start, 0usize)];
    while let Some(&(hop, i)) = stack.last() {
        let Some(v) = graph.get_mut(&hop) else {
            stack.pop();
            continue;
        };
        if i >= v.live {
            v.explored = true;
            stack.pop();
            continue;
        }
        let next = v.slots[i].on;
        if let Some(top) = stack.last_mut() {
            top.1 += 1;
        }
        let depth = stack.len() as u32 + 1;
        let Some(n) = graph.get_mut(&next) else {
            continue;
        };
        if n.depth > 0 {
            if depth > n.depth && !n.explored {
                return true;
            }
            continue;
        }
        n.depth = depth;
        stack.push((next, 0));
    }
    false
}

/// The lanes of one LASH routing, with their dependency graphs.
#[derive(Debug)]
struct Layers<'a> {
    fabric: &'a Fabric,
    routes: &'a SwitchRoutes,
    graphs: Vec<HashMap<Hop, Vertex>>,
    /// `[src * n + dest]`: the lane of each pair.
    lane: Vec<usize>,
    /// Per lane, the routes it carries (both directions of each pair).
    carried: Vec<u32>,
}

impl<'a> Layers<'a> {
    fn new(fabric: &'a Fabric, routes: &'a SwitchRoutes) -> Layers<'a> {
        let n = fabric.len();
        Layers {
            fabric,
            routes,
            graphs: Vec::new(),
            lane: vec![0; n * n],
            carried: Vec::new(),
        }
    }

    fn graph(&mut self, lane: usize) -> &mut HashMap<Hop, Vertex> {
        if self.graphs.len() <= lane {
            self.graphs.resize_with(lane + 1, HashMap::new);
            self.carried.resize(lane + 1, 0);
        }
        &mut self.graphs[lane]
    }

    fn hops(&self, src: usize, dest: usize) -> Vec<Hop> {
        self.routes.hops(self.fabric, src, dest)
    }

    /// Puts every pair in the first lane that takes it, opening lanes as needed (`lash_core`).
    /// Returns the lanes used, or the lanes needed when that is more than `available`.
    fn assign(&mut self, available: usize) -> Result<usize, usize> {
        let n = self.fabric.len();
        let mut lanes = 1;
        for i in 0..n {
            for d in i + 1..n {
                let mut lane = 0;
                while lane < lanes && !self.try_pair(lane, i, d) {
                    lane += 1;
                }
                if lane == lanes {
                    lanes += 1;
                    if lanes > available {
                        return Err(lanes);
                    }
                    self.add_route(lane, i, d);
                    self.add_route(lane, d, i);
                    self.keep_pair(lane, i, d);
                }
                self.carried[lane] += 2;
                self.lane[i * n + d] = lane;
                self.lane[d * n + i] = lane;
            }
        }
        Ok(lanes)
    }

    /// Adds both routes of the pair to `lane` and keeps them if no cycle results; else takes
    /// them out again. Whether they were kept.
    fn try_pair(&mut self, lane: usize, a: usize, b: usize) -> bool {
        let acyclic = self.add_pair(lane, a, b);
        if acyclic {
            self.keep_pair(lane, a, b);
        } else {
            self.drop_tentative(lane, a, b);
            self.drop_tentative(lane, b, a);
        }
        acyclic
    }

    /// Adds both routes of the pair to `lane`, tentatively; whether the lane stays acyclic.
    fn add_pair(&mut self, lane: usize, a: usize, b: usize) -> bool {
        self.add_route(lane, a, b);
        self.add_route(lane, b, a);
        let starts = [self.hops(a, b)[0], self.hops(b, a)[0]];
        let graph = self.graph(lane);
        let cycle = starts.iter().any(|&s| cycle_from(graph, s));
        for v in graph.values_mut() {
            (v.depth, v.explored) = (0, false);
        }
        !cycle
    }

    fn keep_pair(&mut self, lane: usize, a: usize, b: usize) {
        for (src, dest) in [(a, b), (b, a)] {
            for hop in self.hops(src, dest) {
                if let Some(v) = self.graph(lane).get_mut(&hop) {
                    if v.tentative {
                        v.tentative = false;
                    } else {
                        v.tentative_dependencies = 0;
                    }
                }
            }
        }
    }

    /// Adds the route from `src` to `dest` to `lane`'s graph, tentatively (`generate_cdg_for_sp`).
    fn add_route(&mut self, lane: usize, src: usize, dest: usize) {
        let hops = self.hops(src, dest);
        let graph = self.graph(lane);
        let mut prev: Option<Hop> = None;
        for hop in hops {
            graph
                .entry(hop)
                .or_insert_with(|| Vertex {
                    tentative: true,
                    ..Vertex::default()
                })
                .routes += 1;
            if let Some(p) = prev.and_then(|p| graph.get_mut(&p)) {
                match p.slots[..p.live].iter_mut().find(|d| d.on == hop) {
                    Some(dep) => dep.routes += 1,
                    None => {
                        if p.slots.len() == p.live {
                            p.slots.push(Dependency { on: hop, routes: 0 });
                        }
                        let slot = &mut p.slots[p.live];
                        slot.on = hop;
                        slot.routes += 1;
                        p.live += 1;
                        if !p.tentative {
                            p.tentative_dependencies += 1;
                        }
                    }
                }
            }
            prev = Some(hop);
        }
    }

    /// Takes out what adding the route from `src` to `dest` to `lane` made
    /// (`remove_temp_depend_for_sp`).
    fn drop_tentative(&mut self, lane: usize, src: usize, dest: usize) {
        let hops = self.hops(src, dest);
        let graph = self.graph(lane);
        for hop in hops {
            let Some(v) = graph.get_mut(&hop) else {
                continue;
            };
            if v.tentative {
                graph.remove(&hop);
                continue;
            }
            v.live -= v.tentative_dependencies.min(v.live);
            v.tentative_dependencies = 0;
            v.routes = v.routes.saturating_sub(1);
            for slot in &mut v.slots[v.live..] {
                slot.routes = 0;
            }
        }
    }

    /// Takes the kept route from `src` to `dest` out of `lane` (`remove_semipermanent_depend_for_sp`).
    fn remove_route(&mut self, lane: usize, src: usize, dest: usize) {
        let hops = self.hops(src, dest);
        let graph = self.graph(lane);
        // OpenSM keeps the index found last across the hops, and reuses it where it finds none.
        let mut found = 0;
        for (k, &hop) in hops.iter().enumerate() {
            let Some(v) = graph.get_mut(&hop) else {
                continue;
            };
            if v.routes == 1 {
                graph.remove(&hop);
                continue;
            }
            v.routes -= 1;
            let Some(&next) = hops.get(k + 1) else {
                continue;
            };
            if let Some(i) = v.slots[..v.live].iter().rposition(|d| d.on == next) {
                found = i;
            }
            if found >= v.live {
                continue;
            }
            if v.slots[found].routes == 1 {
                v.slots.copy_within(found + 1..v.live, found);
                v.live -= 1;
            } else {
                v.slots[found].routes -= 1;
            }
        }
    }

    /// Moves random pairs from the fullest lane to the emptiest while the move keeps the
    /// emptiest acyclic, until the two differ by less than [`BALANCE_LIMIT`] or the trials run
    /// out (`balance_virtual_lanes`).
    fn balance(&mut self, lanes: usize, random: &mut GlibcRandom) {
        if lanes == 1 {
            return;
        }
        let n = self.fabric.len();
        // 1: the pair is in the lane; 2: it is, and failed to move out of it.
        let mut location = vec![0u8; n * n * lanes];
        for i in 0..n {
            for d in (0..n).filter(|&d| d != i) {
                location[(i * n + d) * lanes + self.lane[i * n + d]] = 1;
            }
        }
        let at = |src: usize, dest: usize, lane: usize| (src * n + dest) * lanes + lane;
        let (mut min, mut max) = (lanes - 1, 0);
        let mut trials = i64::from(self.carried[max]);
        loop {
            // OpenSM would search the fullest lane for a pair forever.
            if !(0..n * n).any(|pair| location[pair * lanes + max] == 1) {
                return;
            }
            let mut src = random.next() as usize % n;
            let mut dest = random.next() as usize % n;
            // The next pair of the fullest lane from there: destinations round, then sources.
            while location[at(src, dest, max)] != 1 {
                let start = dest;
                dest = (dest + 1) % n;
                while dest != start && location[at(src, dest, max)] != 1 {
                    dest = (dest + 1) % n;
                }
                if location[at(src, dest, max)] != 1 {
                    src = (src + 1) % n;
                }
            }
            if !self.add_pair(min, src, dest) {
                self.drop_tentative(min, src, dest);
                self.drop_tentative(min, dest, src);
                location[at(src, dest, max)] = 2;
                location[at(dest, src, max)] = 2;
                trials -= 2;
            } else {
                self.keep_pair(min, src, dest);
                self.carried[max] -= 2;
                self.carried[min] += 2;
                self.remove_route(max, src, dest);
                self.remove_route(max, dest, src);
                location[at(src, dest, max)] = 0;
                location[at(dest, src, max)] = 0;
                location[at(src, dest, min)] = 1;
                location[at(dest, src, min)] = 1;
                self.lane[src * n + dest] = min;
                self.lane[dest * n + src] = min;
            }
            let stop =
                trials == 0 || self.carried[max].saturating_sub(self.carried[min]) < BALANCE_LIMIT;
            let (old_min, old_max) = (min, max);
            let (mut least, mut most) = (u32::MAX, 0);
            for lane in 0..lanes {
                if self.carried[lane] < least {
                    least = self.carried[lane];
                    min = lane;
                }
                if self.carried[lane] > most {
                    most = self.carried[lane];
                    max = lane;
                }
            }
            // A new emptiest or fullest lane: the pairs that failed may move again.
            for (changed, lane) in [(old_min != min, max), (old_max != max, old_max)] {
                if changed {
                    trials = i64::from(self.carried[max]);
                    for mark in location.iter_mut().skip(lane).step_by(lanes) {
                        if *mark == 2 {
                            *mark = 1;
                        }
                    }
                }
            }
            if stop {
                return;
            }
        }
    }

    /// The lane of each pair of switches, `[src * n + dest]`.
    fn lanes_by_pair(&self) -> Vec<u8> {
        self.lane.iter().map(|&l| l as u8).collect()
    }
}

/// What a LASH routing decided beside the LFTs: the lane of each pair of switches.
#[derive(Debug)]
struct LashLayering {
    /// The LASH number of the switch each LID is on or hangs off, by LID.
    switch_of: Vec<Option<usize>>,
    switches: usize,
    /// `[src * switches + dest]`: the lane of each pair.
    lanes: Vec<u8>,
    start_vl: u8,
    lanes_used: usize,
}

impl Layering for LashLayering {
    /// OpenSM's `get_lash_sl`: the lane of the pair of switches plus `lash_start_vl`,
    /// `lash_start_vl` within one switch, and 0 for a LID LASH does not know. The hint is not
    /// read.
    fn path_sl(&self, _hint: u8, slid: u16, dlid: u16) -> u8 {
        let switch = |lid: u16| self.switch_of.get(usize::from(lid)).copied().flatten();
        match (switch(slid), switch(dlid)) {
            (Some(src), Some(dest)) if src == dest => self.start_vl,
            (Some(src), Some(dest)) => self.lanes[src * self.switches + dest] + self.start_vl,
            _ => 0,
        }
    }

    fn vls_used(&self) -> VlCount {
        vl_count_for(self.lanes_used + usize::from(self.start_vl))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::generate::{assign_lids, dragonfly, fat_tree, ring, torus_2d};

    fn with_lids(mut topo: Topology) -> Topology {
        assign_lids(&mut topo, 0).unwrap();
        topo
    }

    /// A graph of the given dependencies, every vertex kept.
    fn graph(edges: &[(Hop, Hop)]) -> HashMap<Hop, Vertex> {
        let mut graph: HashMap<Hop, Vertex> = HashMap::new();
        for &(from, on) in edges {
            graph.entry(on).or_default();
            let v = graph.entry(from).or_default();
            v.slots.push(Dependency { on, routes: 1 });
            v.live += 1;
        }
        graph
    }

    #[test]
    fn the_cycle_search_finds_a_cycle_reachable_from_its_start() {
        let (a, b, c, d) = ((0, 1), (1, 2), (2, 0), (2, 3));
        let mut cyclic = graph(&[(a, b), (b, c), (c, a)]);
        assert!(cycle_from(&mut cyclic, a));
        // Two routes into one vertex close no cycle.
        let mut diamond = graph(&[(a, b), (a, c), (b, d), (c, d)]);
        assert!(!cycle_from(&mut diamond, a));
        // A cycle the start does not reach is not its concern.
        let mut beside = graph(&[(d, a), (a, b), (b, a)]);
        assert!(!cycle_from(&mut beside, (9, 9)));
        assert!(cycle_from(&mut beside, d));
    }

    /// A second search before the marks are cleared does not enter what the first explored.
    #[test]
    fn a_second_search_skips_what_the_first_explored() {
        let (a, b, c) = ((0, 1), (1, 2), (2, 3));
        let mut chain = graph(&[(a, b), (b, c)]);
        assert!(!cycle_from(&mut chain, a));
        assert!(chain[&c].explored && chain[&c].depth == 3);
        assert!(!cycle_from(&mut chain, b));
        assert_eq!(chain[&c].depth, 3, "c was not entered again");
    }

    /// Every lane's dependencies, from the lanes the routing gave each pair, form no cycle
    /// (Kahn's algorithm, independent of the search LASH uses).
    fn lanes_are_acyclic(fabric: &Fabric, routes: &SwitchRoutes, lane: &[usize]) -> bool {
        let n = fabric.len();
        let mut edges: BTreeMap<usize, BTreeSet<(Hop, Hop)>> = BTreeMap::new();
        for src in 0..n {
            for dest in (0..n).filter(|&d| d != src) {
                let hops = routes.hops(fabric, src, dest);
                let lane_edges = edges.entry(lane[src * n + dest]).or_default();
                lane_edges.extend(hops.windows(2).map(|w| (w[0], w[1])));
            }
        }
        edges.values().all(|edges| {
            let mut indegree: BTreeMap<Hop, usize> = BTreeMap::new();
            for &(from, to) in edges {
                indegree.entry(from).or_default();
                *indegree.entry(to).or_default() += 1;
            }
            let mut ready: Vec<Hop> = indegree
                .iter()
                .filter(|&(_, &d)| d == 0)
                .map(|(&h, _)| h)
                .collect();
            let mut removed = 0;
            while let Some(h) = ready.pop() {
                removed += 1;
                for &(_, to) in edges.range((h, (0, 0))..=(h, (usize::MAX, usize::MAX))) {
                    let d = indegree.get_mut(&to).unwrap();
                    *d -= 1;
                    if *d == 0 {
                        ready.push(to);
                    }
                }
            }
            removed == indegree.len()
        })
    }

    /// The lanes each fabric needs, and that every lane, after balancing, is free of cycles.
    #[test]
    fn lanes_break_every_cycle() {
        for (topo, lanes) in [
            (ring(4, 1).unwrap(), 2),
            (torus_2d(4, 4, 1).unwrap(), 2),
            (dragonfly(4, 3, 1).unwrap(), 2),
            (fat_tree(4, 2, 4, 8).unwrap(), 1),
        ] {
            let graph = SwitchGraph::new(&topo);
            let fabric = Fabric::new(&graph);
            let routes = fabric.routes(&topo).unwrap();
            let mut layers = Layers::new(&fabric, &routes);
            assert_eq!(layers.assign(8), Ok(lanes));
            assert!(lanes_are_acyclic(&fabric, &routes, &layers.lane));
            layers.balance(lanes, &mut GlibcRandom::new(1));
            assert!(lanes_are_acyclic(&fabric, &routes, &layers.lane));
            let carried: u32 = layers.carried.iter().sum();
            assert_eq!(carried as usize, fabric.len() * (fabric.len() - 1));
        }
    }

    /// One lane is not enough for a ring: LASH fails as OpenSM's does (ERR 4D02), and the
    /// routing's SLs come from the lanes, shifted by `lash_start_vl`.
    #[test]
    fn the_lanes_must_fit_the_vls() {
        let topo = with_lids(ring(4, 1).unwrap());
        let options = RoutingOptions::default();
        assert_eq!(
            lash(&topo, &options, VlCount::One).err(),
            Some(RoutingError::TooFewVls {
                needed: VlCount::Two,
                available: VlCount::One,
            })
        );
        let shifted = RoutingOptions {
            lash_start_vl: 1,
            ..RoutingOptions::default()
        };
        assert_eq!(
            lash(&topo, &shifted, VlCount::Two).err(),
            Some(RoutingError::TooFewVls {
                needed: VlCount::Four,
                available: VlCount::Two,
            })
        );
        let refused = lash(&topo, &shifted, VlCount::One).err().unwrap();
        assert!(refused.to_string().contains("ERR 4D03"), "{refused}");
        let sls = |start: u8| {
            let options = RoutingOptions {
                lash_start_vl: start,
                ..RoutingOptions::default()
            };
            let routing = lash(&topo, &options, VlCount::Four).unwrap();
            let lids: Vec<u16> = (1..=topo.endports().count() as u16).collect();
            let sls: BTreeSet<u8> = lids
                .iter()
                .flat_map(|&s| lids.iter().map(move |&d| (s, d)))
                .map(|(s, d)| routing.layering.path_sl(9, s, d))
                .collect();
            (sls, routing.layering.vls_used())
        };
        assert_eq!(sls(0), (BTreeSet::from([0, 1]), VlCount::Two));
        assert_eq!(sls(2), (BTreeSet::from([2, 3]), VlCount::Four));
    }

    /// A LID LASH does not know gets SL 0, whatever the hint.
    #[test]
    fn unknown_lids_get_sl_0() {
        let topo = with_lids(ring(4, 1).unwrap());
        let routing = lash(&topo, &RoutingOptions::default(), VlCount::Four).unwrap();
        assert_eq!(routing.layering.path_sl(7, 1, 999), 0);
        assert_eq!(routing.layering.path_sl(7, 0, 1), 0);
    }
}
