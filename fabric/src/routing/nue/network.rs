//! Nue's copy of the fabric (`osm_ucast_nue.c`: `nue_discover_network`,
//! `calculate_convex_subnetwork`, `get_central_node_wrt_subnetwork`,
//! `calculate_spanning_tree_in_network`, `update_network_link_weights`): the switches, the
//! weighted links between them, and the walks over them that do not touch the cCDG.
//!
//! The switches are sorted by LID as OpenSM sorts them: its LIDs are in network byte order,
//! compared as host integers, so on x86 the low byte of a LID weighs most (`lid_order`).

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use crate::routing::heap::Heap;
use crate::topology::{Node, NodeId, Topology};

/// OpenSM's "infinity" for Nue's distances. Distances are 64-bit but start at this 31-bit
/// value, so a switch farther than it is never reached; kept for the same tables.
pub(super) const INFINITY: u64 = 0x7FFF_FFFF;

/// `cl_heap`'s arity in Nue's Dijkstras.
pub(super) const HEAP_ARITY: usize = 4;

/// Where a LID sorts among OpenSM's: its network-order value read as a little-endian integer.
pub(super) fn lid_order(lid: u16) -> u16 {
    lid.swap_bytes()
}

/// A switch-to-switch link in one direction (`network_link_t`).
#[derive(Debug)]
pub(super) struct Link {
    pub(super) from: usize,
    pub(super) from_port: u8,
    pub(super) to: usize,
    /// The port of `to` the link arrives at: `to`'s exit toward `from`.
    pub(super) to_port: u8,
    /// Starts at the square of the fabric's destination LIDs, and grows by the LIDs of each
    /// switch whose route crosses the link.
    pub(super) weight: u64,
    /// The link's vertex in the cCDG.
    pub(super) channel: usize,
}

/// A switch (`network_node_t`), with what each walk leaves on it.
#[derive(Debug)]
pub(super) struct Switch {
    pub(super) node: NodeId,
    pub(super) lid: u16,
    /// The LIDs of port 0 and of the CA and router ports linked to it: what each link of this
    /// switch's routes gains. OpenSM counts them in 8 bits, and so does this.
    pub(super) terminals: u8,
    /// Its links in `Network::links`, in port order.
    pub(super) links: Range<usize>,
    /// Its source vertex in the cCDG (a channel from the switch to itself).
    pub(super) fake_channel: usize,
    /// The current Dijkstra's distance.
    pub(super) distance: u64,
    /// The link the current destination's route reached this switch by: its exit is the
    /// link's `to_port`.
    pub(super) used_link: Option<usize>,
    /// The link the spanning tree reached it by.
    pub(super) escape_path: Option<usize>,
    /// Links that reached it as short as `used_link` on a used dependency: the backtracking's
    /// alternatives.
    pub(super) stack: Vec<usize>,
    /// The backtracking step that found it, -1 before any.
    pub(super) found_after_backtracking: i32,
    pub(super) in_hull: bool,
    processed: bool,
    /// A destination of the layer hangs off it, or it is one.
    pub(super) has_adj_destinations: bool,
    /// The layer's CA destinations that hang off it.
    pub(super) adj_terminals_in_hull: u8,
    betweenness: f64,
    delta: f64,
    sigma: u64,
    /// The predecessors on shortest paths in Brandes' search, once per link.
    predecessors: Vec<usize>,
}

/// Nue's network: the switches by LID, the links between them.
#[derive(Debug)]
pub(super) struct Network {
    pub(super) switches: Vec<Switch>,
    pub(super) links: Vec<Link>,
    by_node: HashMap<NodeId, usize>,
}

impl Network {
    /// The switches of `topo` (each with the LID of its port 0) and their links, each
    /// weighing `total_lids` squared.
    pub(super) fn new(topo: &Topology, lids: Vec<(u16, NodeId)>, total_lids: u64) -> Network {
        let mut found: Vec<(u16, NodeId, &Node)> = lids
            .into_iter()
            .filter_map(|(lid, id)| Some((lid, id, topo.node(id)?)))
            .collect();
        found.sort_by_key(|&(lid, ..)| lid_order(lid));
        let by_node: HashMap<NodeId, usize> = found
            .iter()
            .enumerate()
            .map(|(i, &(_, id, _))| (id, i))
            .collect();
        let weight = total_lids.wrapping_mul(total_lids);
        let mut switches = Vec::with_capacity(found.len());
        let mut links = Vec::new();
        for (index, &(lid, id, node)) in found.iter().enumerate() {
            let mut terminals = 1u8 << node.port(0).map_or(0, |p| p.lmc.min(7));
            let first = links.len();
            for (p, port) in node.existing_ports() {
                let Some(peer) = port.peer.filter(|q| q.node != id) else {
                    continue;
                };
                match by_node.get(&peer.node) {
                    Some(&to) => links.push(Link {
                        from: index,
                        from_port: p,
                        to,
                        to_port: peer.port,
                        weight,
                        channel: 0,
                    }),
                    None => {
                        let lmc = topo.port(peer).map_or(0, |q| q.lmc.min(7));
                        terminals = terminals.wrapping_add(1 << lmc);
                    }
                }
            }
            switches.push(Switch {
                node: id,
                lid,
                terminals,
                links: first..links.len(),
                fake_channel: 0,
                distance: INFINITY,
                used_link: None,
                escape_path: None,
                stack: Vec::new(),
                found_after_backtracking: -1,
                in_hull: false,
                processed: false,
                has_adj_destinations: false,
                adj_terminals_in_hull: 0,
                betweenness: 0.0,
                delta: 0.0,
                sigma: 0,
                predecessors: Vec::new(),
            });
        }
        Network {
            switches,
            links,
            by_node,
        }
    }

    /// The switch of node `id`.
    pub(super) fn switch_of(&self, id: NodeId) -> Option<usize> {
        self.by_node.get(&id).copied()
    }

    /// The links of switch `s`.
    pub(super) fn links_of(&self, s: usize) -> Range<usize> {
        self.switches[s].links.clone()
    }

    /// The link of `link`'s other direction: from its `to`, by the same ports.
    pub(super) fn reverse(&self, link: usize) -> Option<usize> {
        let l = &self.links[link];
        self.links_of(l.to)
            .find(|&r| self.links[r].to == l.from && self.links[r].to_port == l.from_port)
    }

    /// `calculate_convex_subnetwork`: marks the switches on some shortest path (in hops)
    /// between two switches that the layer's destinations hang off (`hanging`), those switches
    /// included. A switch joins while the outer walk proceeds, and is then walked from too.
    pub(super) fn mark_convex_hull(&mut self, hanging: &[usize]) {
        for s in &mut self.switches {
            s.in_hull = false;
            s.has_adj_destinations = false;
        }
        for &s in hanging {
            self.switches[s].in_hull = true;
            self.switches[s].has_adj_destinations = true;
        }
        let n = self.switches.len();
        let mut queue = VecDeque::with_capacity(n);
        for first in 0..n {
            if !self.switches[first].in_hull {
                continue;
            }
            for s in &mut self.switches {
                s.distance = INFINITY;
                s.processed = false;
            }
            self.switches[first].distance = 0;
            self.switches[first].processed = true;
            queue.push_back(first);
            while let Some(u) = queue.pop_front() {
                for l in self.links_of(u) {
                    let v = self.links[l].to;
                    if self.switches[v].distance == INFINITY {
                        self.switches[v].distance = self.switches[u].distance + 1;
                        queue.push_back(v);
                    }
                }
            }
            for second in 0..n {
                if !self.switches[second].in_hull || self.switches[second].processed {
                    continue;
                }
                self.switches[second].processed = true;
                queue.push_back(second);
                while let Some(v) = queue.pop_front() {
                    for l in self.links_of(v) {
                        let u = self.links[l].to;
                        if self.switches[u].processed {
                            continue;
                        }
                        if self.switches[u].distance + 1 == self.switches[v].distance {
                            self.switches[u].in_hull = true;
                            self.switches[u].processed = true;
                            queue.push_back(u);
                        }
                    }
                }
            }
        }
    }

    /// `get_central_node_wrt_subnetwork`: the switch of the convex hull with the highest
    /// betweenness centrality over the hull (Brandes' algorithm), the first such in LID order.
    /// The CA destinations (`ca_switches`: the switch each hangs off) count as endpoints of
    /// shortest paths through their switch, as OpenSM counts them without storing them.
    pub(super) fn central_switch(&mut self, ca_switches: &[usize]) -> Option<usize> {
        for s in &mut self.switches {
            s.betweenness = 0.0;
            s.adj_terminals_in_hull = 0;
        }
        for &s in ca_switches {
            let adj = &mut self.switches[s].adj_terminals_in_hull;
            *adj = adj.wrapping_add(1);
        }
        let n = self.switches.len();
        let mut queue = VecDeque::with_capacity(n);
        let mut stack = Vec::with_capacity(n);
        for source in 0..n {
            if !self.switches[source].in_hull {
                continue;
            }
            for s in &mut self.switches {
                s.predecessors.clear();
                s.sigma = 0;
                s.distance = INFINITY;
            }
            self.switches[source].sigma = 1;
            self.switches[source].distance = 0;
            stack.clear();
            queue.push_back(source);
            while let Some(u) = queue.pop_front() {
                stack.push(u);
                for l in self.links_of(u) {
                    let v = self.links[l].to;
                    if !self.switches[v].in_hull {
                        continue;
                    }
                    let next = self.switches[u].distance + 1;
                    if self.switches[v].distance == INFINITY {
                        self.switches[v].distance = next;
                        queue.push_back(v);
                    }
                    if self.switches[v].distance == next {
                        self.switches[v].sigma += self.switches[u].sigma;
                        self.switches[v].predecessors.push(u);
                    }
                }
            }
            self.accumulate(source, &stack);
        }
        let mut best: Option<usize> = None;
        let mut most = -1.0;
        for (i, s) in self.switches.iter().enumerate() {
            if s.in_hull && most < s.betweenness {
                best = Some(i);
                most = s.betweenness;
            }
        }
        best
    }

    /// Brandes' accumulation from `source`, once for the switch and once more for each CA
    /// destination hanging off it (the CAs are not vertices: they share their switch's paths).
    fn accumulate(&mut self, source: usize, stack: &[usize]) {
        let rounds = u16::from(self.switches[source].adj_terminals_in_hull) + 1;
        // OpenSM keeps the last count when none of the cases applies; that needs a source with
        // no CA in a round past the first, which the round count rules out.
        let mut update_for_adj = 0u8;
        for round in 0..rounds {
            for s in &mut self.switches {
                s.delta = 0.0;
            }
            for &v in stack.iter().rev() {
                let adj = self.switches[v].adj_terminals_in_hull;
                if source != v || round == 0 {
                    update_for_adj = adj;
                } else if adj > 0 {
                    update_for_adj = adj - 1;
                }
                // A CA's delta is 0 and its sigma its switch's, so each adds sigma / sigma.
                let sigma = self.switches[v].sigma as f64;
                for _ in 0..update_for_adj {
                    self.switches[v].delta += (1.0 * sigma) / sigma;
                }
                let delta_v = self.switches[v].delta;
                for k in 0..self.switches[v].predecessors.len() {
                    let u = self.switches[v].predecessors[k];
                    let share = (1.0 * self.switches[u].sigma as f64) / sigma * (1.0 + delta_v);
                    self.switches[u].delta += share;
                }
                if round > 0 || source != v {
                    self.switches[v].betweenness += self.switches[v].delta;
                }
            }
        }
    }

    /// `calculate_spanning_tree_in_network`: a Dijkstra over the link weights from `root`;
    /// each switch's `escape_path` is the link it was reached by.
    pub(super) fn spanning_tree(&mut self, root: usize) {
        let mut heap = Heap::new(HEAP_ARITY, self.switches.len());
        for (i, s) in self.switches.iter_mut().enumerate() {
            s.distance = INFINITY;
            s.escape_path = None;
            heap.insert(INFINITY, i);
        }
        self.switches[root].distance = 0;
        heap.modify_key(root, 0);
        while let Some(current) = heap.extract_root() {
            for l in self.links_of(current) {
                let to = self.links[l].to;
                let distance = self.switches[current].distance + self.links[l].weight;
                if distance < self.switches[to].distance {
                    self.switches[to].escape_path = Some(l);
                    self.switches[to].distance = distance;
                    heap.modify_key(to, distance);
                }
            }
        }
    }

    /// `update_network_link_weights`: every link on each other switch's route to `dest` gains
    /// that switch's LIDs. A route that ends nowhere or goes round stops being walked.
    pub(super) fn add_weights(&mut self, dest: usize) {
        let n = self.switches.len();
        for s in 0..n {
            if s == dest {
                continue;
            }
            let gain = u64::from(self.switches[s].terminals);
            let mut at = s;
            for _ in 0..n {
                let Some(l) = self.switches[at].used_link else {
                    break;
                };
                self.links[l].weight += gain;
                at = self.links[l].from;
                if at == dest {
                    break;
                }
            }
        }
    }
}

/// A network of `topo`'s switches for the tests, every link weighing 1.
#[cfg(test)]
pub(super) fn network_of(topo: &Topology) -> Network {
    let switches = topo
        .switches()
        .map(|(id, n)| (n.port(0).map_or(0, |p| p.lid), id))
        .collect();
    Network::new(topo, switches, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{assign_lids, mesh_2d};

    /// A `x` by `y` mesh without hosts, its switches in LID order as they are in node order.
    fn mesh(x: usize, y: usize) -> Network {
        let mut topo = mesh_2d(x, y, 0).unwrap();
        assign_lids(&mut topo, 0).unwrap();
        network_of(&topo)
    }

    /// On the line 0-1-2-3 the middle switches lie on four ordered pairs' paths each, the ends
    /// on none: the first of the middle wins. A CA on switch 3 adds paths to it through 2.
    #[test]
    fn betweenness_counts_paths_through_each_switch() {
        let mut net = mesh(1, 4);
        net.mark_convex_hull(&[0, 3]);
        assert!(net.switches.iter().all(|s| s.in_hull));
        assert_eq!(net.central_switch(&[]), Some(1));
        let betweenness: Vec<f64> = net.switches.iter().map(|s| s.betweenness).collect();
        assert_eq!(betweenness, [0.0, 4.0, 4.0, 0.0]);
        assert_eq!(net.central_switch(&[3]), Some(2));
        let betweenness: Vec<f64> = net.switches.iter().map(|s| s.betweenness).collect();
        assert_eq!(betweenness, [0.0, 6.0, 8.0, 6.0]);
    }

    /// The hull of two opposite corners of a 2x3 mesh holds every switch (each lies on some
    /// shortest path); the hull of two neighbours holds just them.
    #[test]
    fn the_hull_holds_every_shortest_path() {
        let mut net = mesh(2, 3);
        net.mark_convex_hull(&[0, 5]);
        assert!(net.switches.iter().all(|s| s.in_hull));
        net.mark_convex_hull(&[0, 1]);
        let inside: Vec<usize> = (0..6).filter(|&s| net.switches[s].in_hull).collect();
        assert_eq!(inside, [0, 1]);
    }

    /// The spanning tree follows the weights: after a link grows, the tree avoids it.
    #[test]
    fn the_spanning_tree_follows_the_weights() {
        let mut net = mesh(2, 2);
        net.spanning_tree(0);
        let parent =
            |net: &Network, s: usize| net.switches[s].escape_path.map(|l| net.links[l].from);
        let corner = 3;
        let first = parent(&net, corner).unwrap();
        let heavy = net.switches[corner].escape_path.unwrap();
        net.links[heavy].weight += 5;
        net.spanning_tree(0);
        let second = parent(&net, corner).unwrap();
        assert_ne!(first, second);
        assert_eq!(parent(&net, 0), None);
    }
}
