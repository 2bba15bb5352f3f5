//! DFSSSP's deadlock removal (`osm_ucast_dfsssp.c` `dfsssp_remove_deadlocks`): which layer, and
//! so which SL, each source-destination pair travels on.
//!
//! Every pair starts on layer 0, whose channel dependency graph (CDG) holds the inter-switch
//! channels of all their paths. A depth-first search finds a cycle; the edge of the cycle
//! carrying the fewest pairs still on the layer is cut, and its pairs move up a layer. When the
//! last layer still has a cycle the fabric needs more VLs than it runs. Spare VLs are then
//! split among the layers, most paths per VL first.
//!
//! As in OpenSM, and so as its tables:
//! - a path that starts at a switch (its port 0) adds no channel: OpenSM walks a path from the
//!   source's neighbour, and port 0 has none;
//! - only ports advertising IsSLMappingSupported are layered;
//! - the CDG's channels sit in an unbalanced binary search tree by channel id (switch LID, port,
//!   next switch LID, its port), and the search restarts from the tree's first unvisited
//!   channel in pre-order;
//! - an edge leading to a channel found to be a sink forgets its pairs.

use std::collections::HashMap;

use ibqos_qos::VlCount;

use super::{Attachment, Destination, Graph, Layers, Tables};
use crate::routing::{Layering, NO_ROUTE, RoutingError};
use crate::topology::Topology;

/// A (source LID, destination LID) pair, as OpenSM packs it: source in the high half.
type Pair = u32;

fn pair(slid: u16, dlid: u16) -> Pair {
    (u32::from(slid) << 16) | u32::from(dlid)
}

fn lids_of(pair: Pair) -> (u16, u16) {
    ((pair >> 16) as u16, pair as u16)
}

impl Layers {
    fn index(&self, lid: u16) -> Option<usize> {
        self.lids.binary_search(&lid).ok()
    }

    fn layer_of(&self, slid: u16, dlid: u16) -> Option<u8> {
        let (s, d) = (self.index(slid)?, self.index(dlid)?);
        Some(self.layer[s * self.lids.len() + d])
    }
}

impl Layering for Layers {
    /// The first SL of the pair's layer group, plus the destination LID modulo the group's
    /// size. OpenSM adds `rand()` modulo the size, seeded with the time: a pair then gets any
    /// SL of its group from one query to the next. The same range, chosen by DLID, keeps the
    /// spread over destinations and gives a pair one SL. A pair DFSSSP did not layer (a LID
    /// born after the routing, a port without SL mapping) keeps `hint`.
    fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        let Some(layer) = self.layer_of(slid, dlid) else {
            return hint;
        };
        match self.split.get(usize::from(layer)).copied().unwrap_or(0) {
            split if split > 1 => layer + (dlid % u16::from(split)) as u8,
            _ => layer,
        }
    }

    fn vls_used(&self) -> VlCount {
        self.used
    }
}

/// Where a CDG search has been.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Unknown,
    Gray,
    Black,
}

/// A dependency from one channel to the next, with the pairs whose paths make it.
#[derive(Debug)]
struct Edge {
    to: usize,
    pairs: Vec<Pair>,
    /// Pairs moved to the next layer since: still listed, no longer counted.
    removed: u32,
}

impl Edge {
    /// The pairs still on the layer, as OpenSM counts them (unsigned, so it may wrap).
    fn live(&self) -> u32 {
        (self.pairs.len() as u32).wrapping_sub(self.removed)
    }
}

/// A channel: an inter-switch link in one direction.
#[derive(Debug)]
struct Channel {
    edges: Vec<Edge>,
    left: Option<usize>,
    right: Option<usize>,
    status: Status,
    pre: Option<usize>,
}

/// One layer's channel dependency graph.
#[derive(Debug, Default)]
struct Cdg {
    channels: Vec<Channel>,
    ids: Vec<u64>,
    by_id: HashMap<u64, usize>,
    root: Option<usize>,
}

impl Cdg {
    /// `cdg_insert`: an unbalanced binary search tree by id.
    fn channel(&mut self, id: u64) -> usize {
        if let Some(&at) = self.by_id.get(&id) {
            return at;
        }
        let new = self.channels.len();
        self.channels.push(Channel {
            edges: Vec::new(),
            left: None,
            right: None,
            status: Status::Unknown,
            pre: None,
        });
        self.ids.push(id);
        self.by_id.insert(id, new);
        let Some(mut at) = self.root else {
            self.root = Some(new);
            return new;
        };
        loop {
            let side = if id < self.ids[at] {
                &mut self.channels[at].left
            } else {
                &mut self.channels[at].right
            };
            match *side {
                Some(next) => at = next,
                None => {
                    *side = Some(new);
                    return new;
                }
            }
        }
    }

    /// `update_channel_dep_graph`: the pair's path adds its channels and dependencies.
    fn add_path(&mut self, channels: &[u64], pair: Pair) {
        let mut last: Option<usize> = None;
        for &id in channels {
            let at = self.channel(id);
            if let Some(from) = last {
                let edges = &mut self.channels[from].edges;
                match edges.iter_mut().find(|e| e.to == at) {
                    Some(edge) => edge.pairs.push(pair),
                    None => edges.push(Edge {
                        to: at,
                        pairs: vec![pair],
                        removed: 0,
                    }),
                }
            }
            last = Some(at);
        }
    }

    /// `remove_path_from_cdg`: the pair no longer counts on its path's dependencies.
    fn remove_path(&mut self, channels: &[u64]) -> Result<(), RoutingError> {
        let mut last: Option<usize> = None;
        for id in channels {
            let at = *self.by_id.get(id).ok_or_else(corrupt)?;
            if let Some(from) = last {
                let edges = &mut self.channels[from].edges;
                if let Some(edge) = edges.iter_mut().find(|e| e.to == at) {
                    edge.removed += 1;
                }
            }
            last = Some(at);
        }
        Ok(())
    }

    /// The channels in the tree's pre-order, the order `get_next_cdg_node` visits them.
    fn pre_order(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.channels.len());
        let mut stack: Vec<usize> = self.root.into_iter().collect();
        while let Some(at) = stack.pop() {
            order.push(at);
            let channel = &self.channels[at];
            stack.extend(channel.right);
            stack.extend(channel.left);
        }
        order
    }

    /// `search_cycle_in_channel_dep_graph` from `start`, carrying on from where earlier
    /// searches of this layer left their marks: the channel a cycle closes on, if any.
    fn search_cycle(&mut self, start: usize, pre_order: &[usize]) -> Option<usize> {
        let mut current = Some(start);
        while let Some(at) = current {
            self.channels[at].status = Status::Gray;
            let mut next = None;
            for edge in &self.channels[at].edges {
                match self.channels[edge.to].status {
                    Status::Unknown => {
                        next = Some(edge.to);
                        break;
                    }
                    Status::Gray => return Some(edge.to),
                    Status::Black => {}
                }
            }
            if let Some(next) = next {
                self.channels[next].pre = Some(at);
                current = Some(next);
                continue;
            }
            // A sink: nothing through it closes a cycle, and its edges' pairs no longer matter.
            let channel = &mut self.channels[at];
            channel.status = Status::Black;
            for edge in &mut channel.edges {
                edge.pairs = Vec::new();
                edge.removed = 0;
            }
            current = match channel.pre.take() {
                Some(pre) => Some(pre),
                None => pre_order
                    .iter()
                    .copied()
                    .find(|&c| self.channels[c].status == Status::Unknown),
            };
        }
        None
    }

    /// `get_weakest_link_in_cycle`: walks the gray channels from `cycle`, each time along the
    /// first edge to a gray channel, back to `cycle`, marking them unvisited; cuts and returns
    /// the edge with the fewest live pairs (the first of equals).
    fn take_weakest(&mut self, cycle: usize) -> Result<Edge, RoutingError> {
        let gray_step = |cdg: &Cdg, at: usize| {
            cdg.channels[at]
                .edges
                .iter()
                .position(|e| cdg.channels[e.to].status == Status::Gray)
        };
        let first = gray_step(self, cycle).ok_or_else(corrupt)?;
        let mut weakest = (cycle, first);
        let mut current = self.channels[cycle].edges[first].to;
        // A gray channel without a gray successor would make OpenSM's walk spin forever.
        for _ in 0..=self.channels.len() {
            self.channels[current].status = Status::Unknown;
            let step = gray_step(self, current).ok_or_else(corrupt)?;
            let (owner, at) = weakest;
            if self.channels[current].edges[step].live() < self.channels[owner].edges[at].live() {
                weakest = (current, step);
            }
            current = self.channels[current].edges[step].to;
            if current == cycle {
                self.channels[cycle].status = Status::Unknown;
                let (owner, at) = weakest;
                return Ok(self.channels[owner].edges.remove(at));
            }
        }
        Err(corrupt())
    }
}

/// OpenSM's reaction to a CDG it cannot follow: the engine fails.
fn corrupt() -> RoutingError {
    RoutingError::Refused("ERR AD27: something went wrong in get_weakest_link_in_cycle(...)".into())
}

/// The switch ports of the graph: per switch vertex - 1, per port, the switch vertex and port
/// at the other end (`None` for a CA, a router or nothing).
type Peers = Vec<Vec<Option<(usize, u8)>>>;

fn peers(graph: &Graph, topo: &Topology) -> Peers {
    graph
        .switches
        .iter()
        .map(|switch| {
            let ports = topo.node(switch.node).map_or(&[][..], |n| &n.ports[..]);
            ports
                .iter()
                .map(|port| {
                    let peer = port.as_ref()?.peer?;
                    Some((graph.vertex(peer.node)?, peer.port))
                })
                .collect()
        })
        .collect()
}

/// The routes layers are computed from.
struct Paths<'a> {
    graph: &'a Graph,
    tables: &'a Tables,
    peers: Peers,
    /// The switch each layered source LID enters the fabric at (`None` for a switch's own).
    entry: HashMap<u16, Option<usize>>,
}

impl Paths<'_> {
    /// The inter-switch channels from the source of `slid` to `dlid`, as
    /// `update_channel_dep_graph` walks them.
    fn channels(&self, slid: u16, dlid: u16) -> Result<Vec<u64>, RoutingError> {
        let mut channels = Vec::new();
        let Some(mut at) = self.entry.get(&slid).copied().flatten() else {
            return Ok(channels);
        };
        // A forwarding loop would never end the walk; routes from Dijkstra have none.
        for _ in 0..=self.graph.switches.len() {
            let out = self.tables[at - 1][usize::from(dlid)];
            if out == NO_ROUTE {
                return Err(RoutingError::Refused(format!(
                    "ERR AD14: no route to LID {dlid} from switch LID {}",
                    self.graph.switches[at - 1].lid
                )));
            }
            let Some(Some((next, in_port))) = self.peers[at - 1].get(usize::from(out)).copied()
            else {
                return Ok(channels);
            };
            let id = (u64::from(self.graph.switches[at - 1].lid) << 48)
                | (u64::from(out) << 32)
                | (u64::from(self.graph.switches[next - 1].lid) << 16)
                | u64::from(in_port);
            channels.push(id);
            at = next;
        }
        Err(corrupt())
    }
}

impl Layers {
    /// `dfsssp_remove_deadlocks` over the routes of `tables`, on `available` VLs.
    pub(super) fn new(
        graph: &Graph,
        topo: &Topology,
        tables: &Tables,
        order: &[Destination],
        available: VlCount,
    ) -> Result<Layers, RoutingError> {
        let avail = usize::from(available.count());
        let is_switch = |d: &Destination| matches!(d.attachment, Attachment::Switch(_));
        // OpenSM's table holds every CA LID, and the LIDs of switches with SL mapping; only ports
        // with SL mapping are paired.
        let mut lids: Vec<u16> = order
            .iter()
            .filter(|d| !is_switch(d) || d.sl_mapping)
            .flat_map(|d| d.lids.clone())
            .collect();
        lids.sort_unstable();
        let n = lids.len();
        let index: HashMap<u16, usize> = lids.iter().enumerate().map(|(i, &l)| (l, i)).collect();
        let mut layer = vec![0u8; n * n];
        let slot = |slid: u16, dlid: u16| index[&slid] * n + index[&dlid];
        let paired: Vec<&Destination> = order.iter().filter(|d| d.sl_mapping).collect();
        let paths = Paths {
            graph,
            tables,
            peers: peers(graph, topo),
            entry: paired
                .iter()
                .flat_map(|d| {
                    let entry = match d.attachment {
                        Attachment::Ca { switch, .. } => Some(switch),
                        Attachment::Switch(_) => None,
                    };
                    d.lids.clone().map(move |lid| (lid, entry))
                })
                .collect(),
        };

        let mut cdg: Vec<Cdg> = (0..avail).map(|_| Cdg::default()).collect();
        let mut per_layer = vec![0u64; avail];
        for dest in &paired {
            for src in paired.iter().filter(|s| s.port != dest.port) {
                for slid in src.lids.clone() {
                    for dlid in dest.lids.clone() {
                        cdg[0].add_path(&paths.channels(slid, dlid)?, pair(slid, dlid));
                        per_layer[0] += 1;
                    }
                }
            }
        }

        let mut needed = 1;
        for v in 0..avail - 1 {
            let (this, above) = cdg.split_at_mut(v + 1);
            let (this, next) = (&mut this[v], &mut above[0]);
            let pre_order = this.pre_order();
            let mut start = this.root;
            while let Some(from) = start {
                let cycle = this.search_cycle(from, &pre_order);
                if let Some(at) = cycle {
                    needed = v + 2;
                    let edge = this.take_weakest(at)?;
                    let moving = edge.pairs.len() as u64;
                    per_layer[v] = per_layer[v].wrapping_sub(moving);
                    per_layer[v + 1] += moving;
                    for &p in &edge.pairs {
                        let (slid, dlid) = lids_of(p);
                        if usize::from(layer[slot(slid, dlid)]) != v {
                            per_layer[v] += 1;
                            per_layer[v + 1] -= 1;
                            continue;
                        }
                        let channels = paths.channels(slid, dlid)?;
                        this.remove_path(&channels)?;
                        next.add_path(&channels, p);
                        layer[slot(slid, dlid)] = (v + 1) as u8;
                    }
                }
                start = cycle;
            }
        }
        let last = &mut cdg[avail - 1];
        if let Some(root) = last.root {
            let pre_order = last.pre_order();
            if last.search_cycle(root, &pre_order).is_some() {
                return Err(too_few(available));
            }
        }

        let split = split_layers(&mut layer, n, &mut per_layer, needed, avail);
        // The SLs handed out: each layer in use, across its group.
        let mut in_use = vec![false; avail];
        in_use[0] = true;
        for &l in &layer {
            in_use[usize::from(l)] = true;
        }
        let top = (0..avail)
            .filter(|&l| in_use[l])
            .map(|l| l + usize::from(split[l].max(1)))
            .max()
            .unwrap_or(1);
        let used = VlCount::ALL
            .into_iter()
            .find(|c| usize::from(c.count()) >= top)
            .unwrap_or(VlCount::Fifteen);
        Ok(Layers {
            lids,
            layer,
            split,
            used,
        })
    }
}

/// `ERR AD25`: the last layer still has a cycle, so more VLs than `available` are needed.
fn too_few(available: VlCount) -> RoutingError {
    match VlCount::ALL.into_iter().find(|&c| c > available) {
        Some(needed) => RoutingError::TooFewVls { needed, available },
        None => RoutingError::Refused(format!(
            "ERR AD25: Not enough VLs available (avail={}, needed={})",
            available.count(),
            available.count() + 1
        )),
    }
}

/// The balancing of spare VLs: each spare goes to the layer with the most paths per VL so far,
/// then the layers are renumbered so that each group starts after the groups below it
/// (`vltable_change_vl`, slid-major, changing as many pairs as the layer counts). Returns each
/// layer's SL count, indexed by its new first SL.
fn split_layers(
    layer: &mut [u8],
    n: usize,
    per_layer: &mut [u64],
    needed: usize,
    avail: usize,
) -> Vec<u8> {
    let mut split = vec![0u8; avail];
    for count in split.iter_mut().take(needed.min(avail)) {
        *count = 1;
    }
    if needed >= avail {
        return split;
    }
    for _ in needed..avail {
        let mut busiest = 0;
        let mut most = 0.0;
        for (l, &count) in split.iter().enumerate().take(needed) {
            let average = per_layer[l] as f64 / f64::from(count);
            if most < average {
                busiest = l;
                most = average;
            }
        }
        split[busiest] += 1;
    }
    for from in (1..needed).rev() {
        let to: usize = split[..from].iter().map(|&c| usize::from(c)).sum();
        change_layer(layer, n, from as u8, to as u8, per_layer[from]);
        // As OpenSM: when the group does not move, its count is zeroed all the same.
        split[to] = split[from];
        split[from] = 0;
        per_layer[to] = per_layer[from];
        per_layer[from] = 0;
    }
    split
}

/// `vltable_change_vl`: the first `count` pairs on layer `from` (source-major, a LID never
/// paired with itself) move to `to`.
fn change_layer(layer: &mut [u8], n: usize, from: u8, to: u8, count: u64) {
    let mut changed = 0;
    for s in 0..n {
        for d in (0..n).filter(|&d| d != s) {
            if changed == count {
                return;
            }
            let entry = &mut layer[s * n + d];
            if *entry == from {
                *entry = to;
                changed += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CDG of channels 1 -> 2 -> 3 -> 1 with `pairs[i]` pairs on the edge out of channel
    /// `i + 1`, and a dead end 3 -> 4.
    fn triangle(pairs: [u32; 3]) -> Cdg {
        let mut cdg = Cdg::default();
        for (from, to, count) in [(1, 2, pairs[0]), (2, 3, pairs[1]), (3, 1, pairs[2])] {
            for p in 0..count {
                cdg.add_path(&[from, to], pair(from as u16, p as u16));
            }
        }
        cdg.add_path(&[3, 4], pair(9, 9));
        cdg
    }

    /// The edge cut from the triangle's cycle, as (to channel id, live pairs).
    fn cut(pairs: [u32; 3]) -> (u64, u32) {
        let mut cdg = triangle(pairs);
        let pre_order = cdg.pre_order();
        let cycle = cdg.search_cycle(cdg.root.unwrap(), &pre_order).unwrap();
        let edge = cdg.take_weakest(cycle).unwrap();
        (cdg.ids[edge.to], edge.live())
    }

    #[test]
    fn the_edge_with_fewest_pairs_on_the_cycle_is_cut() {
        assert_eq!(cut([3, 1, 2]), (3, 1), "2 -> 3 carries one pair");
        assert_eq!(cut([2, 3, 1]), (1, 1), "3 -> 1 carries one pair");
        assert_eq!(cut([1, 3, 2]), (2, 1), "1 -> 2 carries one pair");
        assert_eq!(
            cut([2, 2, 2]),
            (2, 2),
            "of equals, the first from the cycle's channel"
        );
    }

    /// Moved pairs stay listed but no longer count.
    #[test]
    fn removed_pairs_do_not_count() {
        let mut cdg = triangle([3, 2, 2]);
        cdg.remove_path(&[1, 2]).unwrap();
        cdg.remove_path(&[1, 2]).unwrap();
        let pre_order = cdg.pre_order();
        let cycle = cdg.search_cycle(cdg.root.unwrap(), &pre_order).unwrap();
        assert_eq!(
            cdg.ids[cycle], 1,
            "the search closes the cycle on channel 1"
        );
        let edge = cdg.take_weakest(cycle).unwrap();
        assert_eq!(
            (cdg.ids[edge.to], edge.live()),
            (2, 1),
            "1 -> 2: three, two removed"
        );
        assert!(cdg.search_cycle(cycle, &pre_order).is_none());
    }

    /// The spares go to the layer with most paths per SL; groups are renumbered in order.
    #[test]
    fn spare_vls_split_the_busiest_layers() {
        // Pairs (source, destination) of three LIDs: layer 1 holds two of the six.
        let mut layer = vec![0, 1, 0, 0, 0, 1, 0, 0, 0];
        let mut per_layer = vec![4, 2, 0, 0];
        let split = split_layers(&mut layer, 3, &mut per_layer, 2, 4);
        // 4/1 > 2/1: layer 0 gets the first spare; 4/2 = 2/1: still layer 0, the first.
        assert_eq!(split, [3, 0, 0, 1]);
        assert_eq!(layer, [0, 3, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(per_layer, [4, 0, 0, 2]);
    }

    /// OpenSM zeroes the count of a group that does not move: its pairs then get its first SL
    /// only, whatever spares it was given.
    #[test]
    fn a_group_that_stays_in_place_loses_its_spares() {
        let mut layer = vec![0, 1, 1, 0];
        let mut per_layer = vec![0, 2, 0, 0, 0, 0, 0, 0];
        let split = split_layers(&mut layer, 2, &mut per_layer, 2, 8);
        assert_eq!(split, [1, 0, 0, 0, 0, 0, 0, 0]);
        let layers = Layers {
            lids: vec![1, 2],
            layer,
            split,
            used: VlCount::Two,
        };
        assert_eq!(layers.path_sl(5, 1, 2), 1);
        assert_eq!(layers.path_sl(5, 2, 1), 1);
        assert_eq!(layers.path_sl(5, 1, 3), 5, "an unknown LID keeps the hint");
    }

    #[test]
    fn a_split_layer_spreads_its_pairs_by_destination() {
        let layers = Layers {
            lids: vec![1, 2, 3, 4],
            layer: vec![0; 16],
            split: vec![4, 0, 0, 0],
            used: VlCount::Four,
        };
        let sls: Vec<u8> = (1..=4).map(|dlid| layers.path_sl(0, 1, dlid)).collect();
        assert_eq!(sls, [1, 2, 3, 0]);
    }
}
