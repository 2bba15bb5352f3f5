//! DFSSSP's shortest paths (`osm_ucast_dfsssp.c`: `dfsssp_build_graph`,
//! `dfsssp_do_dijkstra_routing`, `dijkstra`, `update_lft`, `update_weights`).
//!
//! Every switch is a vertex, in OpenSM's GUID order; every healthy switch-to-switch port is a
//! directed link weighing P², P the LIDs of all CA and switch ports, so that any shortest path
//! in hops stays shorter than a longer one whatever the balancing adds. Destinations are routed
//! one LID at a time: a Dijkstra from the destination gives every switch the port toward it,
//! then every link on a switch's path grows by the LIDs hanging off that switch, steering the
//! next destinations away from busy links.

use std::collections::{HashMap, HashSet};

use ibqos_mad::Guid;

use super::{Attachment, Destination, Graph, Link, Switch, Tables};
use crate::routing::heap::Heap;
use crate::routing::{GuidFile, NO_ROUTE, RoutingError, RoutingOptions};
use crate::topology::{NodeId, NodeKind, PortRef, Topology};

/// `cl_heap`'s arity in OpenSM's Dijkstra.
const HEAP_ARITY: usize = 4;
/// OpenSM's "infinity" (`INF`). Distances are 64-bit but start at this 31-bit value, so on a
/// big fabric a switch farther than it is never reached; kept for the same tables.
const INFINITY: u64 = 0x7FFF_FFFF;
/// The vertex of a CA destination; switches are 1..=n.
const CA_VERTEX: usize = 0;
/// The link from a CA destination to its switch; switch links follow.
const CA_LINK: usize = 0;

impl Graph {
    /// `dfsssp_build_graph`, and its dry run: `ERR AD0C` when some switch cannot be reached.
    pub(super) fn new(topo: &Topology) -> Result<Graph, RoutingError> {
        let mut nodes: Vec<(u64, NodeId)> = topo
            .switches()
            .map(|(id, n)| (Guid(n.guid).opensm_order(), id))
            .collect();
        nodes.sort();
        let vertex_of: HashMap<NodeId, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, &(_, id))| (id, i + 1))
            .collect();
        let total = lid_count(topo, |kind| kind != NodeKind::Router);
        let mut links = vec![Link {
            from: CA_VERTEX,
            to: CA_VERTEX,
            to_port: 0,
            weight: 1,
        }];
        let mut switches = Vec::with_capacity(nodes.len());
        for (slot, &(_, id)) in nodes.iter().enumerate() {
            let node = topo.node(id).ok_or(RoutingError::NoLids)?;
            let first = links.len();
            let mut num_hca = node.port(0).map_or(1, |p| 1u64 << p.lmc.min(7));
            for (_, port) in node.existing_ports().filter(|&(p, _)| p != 0) {
                let Some(peer) = port.peer.filter(|q| q.node != id) else {
                    continue;
                };
                let Some(remote) = topo.node(peer.node) else {
                    continue;
                };
                if !remote.is_switch() {
                    num_hca += topo.port(peer).map_or(1, |q| 1u64 << q.lmc.min(7));
                    continue;
                }
                if let Some(&to) = vertex_of.get(&peer.node) {
                    links.push(Link {
                        from: slot + 1,
                        to,
                        to_port: peer.port,
                        weight: total * total,
                    });
                }
            }
            switches.push(Switch {
                node: id,
                lid: node.port(0).map_or(0, |p| p.lid),
                num_hca,
                links: first..links.len(),
            });
        }
        let graph = Graph {
            switches,
            links,
            vertex_of,
        };
        graph.check_connected()?;
        Ok(graph)
    }

    /// The switch vertex of node `id`.
    pub(super) fn vertex(&self, id: NodeId) -> Option<usize> {
        self.vertex_of.get(&id).copied()
    }

    fn vertices(&self) -> usize {
        self.switches.len() + 1
    }

    fn links_of(&self, vertex: usize, ca_linked: bool) -> std::ops::Range<usize> {
        match vertex {
            CA_VERTEX if ca_linked => CA_LINK..CA_LINK + 1,
            CA_VERTEX => 0..0,
            v => self.switches[v - 1].links.clone(),
        }
    }

    /// OpenSM's dry run from the SM's port: every switch must be reachable (from wherever the
    /// SM sits, since it discovered them all).
    fn check_connected(&self) -> Result<(), RoutingError> {
        if self.switches.is_empty() {
            return Ok(());
        }
        let mut reached = vec![false; self.vertices()];
        let mut stack = vec![1];
        reached[1] = true;
        while let Some(v) = stack.pop() {
            for link in &self.links[self.links_of(v, false)] {
                if !reached[link.to] {
                    reached[link.to] = true;
                    stack.push(link.to);
                }
            }
        }
        if reached[1..].iter().all(|&r| r) {
            Ok(())
        } else {
            Err(RoutingError::Refused(
                "ERR AD0C: unsupported network state (detached and inaccessible switches \
                 found; gracefully shutdown this routing engine)"
                    .into(),
            ))
        }
    }

    /// The destinations in DFSSSP's order: switches by the LIDs hanging off them, most first
    /// (a stable sort, as glibc's `qsort` is on these sizes); on each, the compute nodes of
    /// `cn_guid_file` in port order, then on each the I/O nodes of `io_guid_file`, then on each
    /// the other CA ports; last every switch's port 0. Routers are not routed, as in OpenSM.
    pub(super) fn destinations(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
    ) -> Result<Vec<Destination>, RoutingError> {
        for (file, code, what) in [
            (GuidFile::ComputeNodes, "AD33", "compute node"),
            (GuidFile::IoNodes, "AD35", "I/O"),
        ] {
            if options.failed_files.contains(&file) {
                return Err(RoutingError::Refused(format!(
                    "ERR {code}: Problem parsing {what} guid file"
                )));
            }
        }
        let listed = |guids: &Option<Vec<u64>>| -> HashSet<u64> {
            guids.iter().flatten().copied().collect()
        };
        let compute = listed(&options.cn_guids);
        let io = listed(&options.io_guids);
        let mut by_load: Vec<usize> = (1..self.vertices()).collect();
        by_load.sort_by_key(|&v| std::cmp::Reverse(self.switches[v - 1].num_hca));

        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut pass = |wanted: &dyn Fn(u64) -> bool, order: &mut Vec<Destination>| {
            for &v in &by_load {
                let id = self.switches[v - 1].node;
                let Some(node) = topo.node(id) else { continue };
                for (p, port) in node.existing_ports().filter(|&(p, _)| p != 0) {
                    let Some(peer) = port.peer else { continue };
                    let Some(remote) = topo.node(peer.node) else {
                        continue;
                    };
                    let guid = topo.port(peer).map_or(0, |q| q.guid);
                    if remote.kind != NodeKind::Ca || !wanted(guid) || !seen.insert(peer) {
                        continue;
                    }
                    let attachment = Attachment::Ca { switch: v, port: p };
                    order.push(destination(topo, peer, attachment)?);
                }
            }
            Ok::<(), RoutingError>(())
        };
        if !compute.is_empty() {
            pass(&|guid| compute.contains(&guid), &mut order)?;
        }
        if !io.is_empty() {
            pass(&|guid| io.contains(&guid), &mut order)?;
        }
        pass(
            &|guid| !compute.contains(&guid) && !io.contains(&guid),
            &mut order,
        )?;
        for &v in &by_load {
            let port0 = PortRef::new(self.switches[v - 1].node, 0);
            order.push(destination(topo, port0, Attachment::Switch(v))?);
        }
        Ok(order)
    }

    /// Routes every destination LID in order, each with a Dijkstra over the weights the ones before
    /// it left (`dfsssp_do_dijkstra_routing` up to the deadlock removal).
    pub(super) fn route(&mut self, destinations: &[Destination], max_lid: u16) -> Tables {
        let mut tables: Tables =
            vec![vec![NO_ROUTE; usize::from(max_lid) + 1]; self.switches.len()];
        for destination in destinations {
            if let Attachment::Switch(v) = destination.attachment {
                for lid in destination.lids.clone() {
                    tables[v - 1][usize::from(lid)] = 0;
                }
            }
        }
        let mut search = Search::new(self.vertices());
        for destination in destinations {
            let source = match destination.attachment {
                Attachment::Switch(v) => v,
                Attachment::Ca { switch, port } => {
                    self.links[CA_LINK] = Link {
                        from: CA_VERTEX,
                        to: switch,
                        to_port: port,
                        weight: 1,
                    };
                    CA_VERTEX
                }
            };
            for lid in destination.lids.clone() {
                search.run(self, source);
                for v in 1..self.vertices() {
                    if let Some(link) = search.used_link[v] {
                        tables[v - 1][usize::from(lid)] = self.links[link].to_port;
                    }
                }
                search.update_weights(self);
            }
        }
        tables
    }
}

fn destination(
    topo: &Topology,
    port: PortRef,
    attachment: Attachment,
) -> Result<Destination, RoutingError> {
    let missing = || RoutingError::MissingLid(topo.describe(port));
    let p = topo.port(port).ok_or_else(missing)?;
    Ok(Destination {
        port,
        lids: p.lid_range().ok_or_else(missing)?,
        attachment,
        sl_mapping: p.link.sl_mapping_supported,
    })
}

/// The LIDs of every linked end port (and switch port 0) whose node `counted` accepts.
fn lid_count(topo: &Topology, counted: impl Fn(NodeKind) -> bool) -> u64 {
    topo.endports()
        .filter_map(|ep| {
            let node = topo.node(ep.node)?;
            let port = topo.port(ep)?;
            (counted(node.kind) && (node.is_switch() || port.peer.is_some()))
                .then(|| 1u64 << port.lmc.min(7))
        })
        .sum()
}

/// One Dijkstra's state.
#[derive(Debug)]
struct Search {
    distance: Vec<u64>,
    used_link: Vec<Option<usize>>,
    discovered: Vec<bool>,
    heap: Heap,
}

impl Search {
    fn new(vertices: usize) -> Search {
        Search {
            distance: vec![INFINITY; vertices],
            used_link: vec![None; vertices],
            discovered: vec![false; vertices],
            heap: Heap::new(HEAP_ARITY, vertices),
        }
    }

    /// `dijkstra` from `source`: the CA vertex (its link set) or a switch.
    fn run(&mut self, graph: &Graph, source: usize) {
        for v in 1..graph.vertices() {
            self.used_link[v] = None;
            self.distance[v] = INFINITY;
            self.discovered[v] = false;
            self.heap.insert(INFINITY, v);
        }
        let ca_linked = source == CA_VERTEX;
        self.used_link[CA_VERTEX] = None;
        self.discovered[CA_VERTEX] = false;
        if ca_linked {
            self.heap.insert(INFINITY, CA_VERTEX);
        }
        self.distance[source] = 0;
        self.discovered[source] = true;
        self.heap.modify_key(source, 0);
        while let Some(current) = self.heap.extract_root() {
            self.discovered[current] = true;
            for l in graph.links_of(current, ca_linked) {
                let link = &graph.links[l];
                let through = self.distance[current] + link.weight;
                if !self.discovered[link.to] && through < self.distance[link.to] {
                    self.used_link[link.to] = Some(l);
                    self.distance[link.to] = through;
                    self.heap.modify_key(link.to, through);
                }
            }
        }
    }

    /// `update_weights`: each switch with a route adds its LIDs to every link of its path.
    fn update_weights(&self, graph: &mut Graph) {
        for v in 1..graph.vertices() {
            let Some(_) = self.used_link[v] else { continue };
            let added = graph.switches[v - 1].num_hca;
            let mut at = v;
            while let Some(l) = self.used_link[at] {
                graph.links[l].weight += added;
                at = graph.links[l].from;
            }
        }
    }
}
