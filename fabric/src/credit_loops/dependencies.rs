//! The walk that builds the channel dependency graph: per destination LID, the forwarding every
//! switch does toward it; per SL, the VLs each switch's output carries, from every source at
//! once, in the order packets reach the switches.

use std::collections::HashSet;

use ibqos_qos::{Sl, Vl};

use super::scc::{cycle_in, cyclic_components};
use super::{
    Channel, CreditLoop, CreditReport, Discard, EXAMPLES, FabricTables, Misforward, PathSls, Route,
};
use crate::routing::NO_ROUTE;
use crate::{NodeId, PortRef, Topology};

/// Not an index: a switch outside the list, a port without a switch-to-switch link.
const NONE: u32 = u32::MAX;

/// What a switch does with packets for the destination being walked.
#[derive(Debug, Clone, Copy)]
enum Hop {
    /// Hands them to its own port 0, which answers the LID.
    Deliver,
    /// Sends them out of `out` to a CA or router port that answers the LID.
    DeliverEnd { out: u8 },
    /// Sends them out of `out` to switch `next`, which they enter by `input`.
    Next { out: u8, next: u32, input: u8 },
    /// Cannot deliver them (recorded as a misforward).
    Fail,
}

/// Where a source's packets enter the switches.
#[derive(Debug, Clone, Copy)]
enum Entry {
    /// A switch's own traffic, entering from port 0.
    Switch(u32),
    /// A CA or router port's, sent on the VL its own table gives, entering `switch` by `input`.
    End {
        port: PortRef,
        switch: u32,
        input: u8,
    },
}

#[derive(Debug, Clone, Copy)]
struct Source {
    lid: u16,
    port: PortRef,
    entry: Entry,
}

/// The per-SL state of one switch during a walk: the VLs its output carries toward the
/// destination, and one route per VL that puts it there.
#[derive(Debug, Clone, Copy)]
struct Carried {
    vls: u16,
    routes: [Route; 16],
}

pub(super) struct Walk<'a> {
    tables: FabricTables<'a>,
    switches: Vec<NodeId>,
    /// Per node, its index in `switches`, or [`NONE`].
    switch_index: Vec<u32>,
    /// Per LID, the end port answering it.
    owner: Vec<Option<PortRef>>,
    sources: Vec<Source>,
    /// Per switch, the index of its first port in the switch-to-switch channel numbering.
    port_base: Vec<u32>,
    /// Per switch port (`port_base[switch] + port`), its index among switch-to-switch ports, or
    /// [`NONE`]. A channel's index is that times 16 plus its VL.
    link_index: Vec<u32>,
    links: Vec<PortRef>,
    /// Per channel, the channels it depends on and one route making each dependency.
    successors: Vec<Vec<(u32, Route)>>,
    report: CreditReport,
    discarding: HashSet<Channel>,
}

impl<'a> Walk<'a> {
    pub(super) fn new(tables: FabricTables<'a>) -> Walk<'a> {
        let topology = tables.topology;
        let switches: Vec<NodeId> = topology.switches().map(|(id, _)| id).collect();
        let mut switch_index = vec![NONE; topology.len()];
        for (index, id) in switches.iter().enumerate() {
            switch_index[id.index()] = index as u32;
        }
        let mut owner = Vec::new();
        for port in topology.endports() {
            for lid in topology
                .port(port)
                .and_then(|p| p.lid_range())
                .into_iter()
                .flatten()
            {
                let lid = usize::from(lid);
                if owner.len() <= lid {
                    owner.resize(lid + 1, None);
                }
                // The first port to claim a LID keeps it, as the walk must pick one.
                owner[lid].get_or_insert(port);
            }
        }
        let sources = sources(topology, &switch_index);
        let mut port_base = Vec::with_capacity(switches.len());
        let mut link_index = Vec::new();
        let mut links = Vec::new();
        for &id in &switches {
            port_base.push(link_index.len() as u32);
            let Some(node) = topology.node(id) else {
                continue;
            };
            for number in 0..=node.num_ports() {
                let here = PortRef::new(id, number);
                let to_switch = topology
                    .peer(here)
                    .is_some_and(|peer| switch_index[peer.node.index()] != NONE);
                if to_switch {
                    link_index.push(links.len() as u32);
                    links.push(here);
                } else {
                    link_index.push(NONE);
                }
            }
        }
        let successors = vec![Vec::new(); links.len() * 16];
        Walk {
            tables,
            switches,
            switch_index,
            owner,
            sources,
            port_base,
            link_index,
            links,
            successors,
            report: CreditReport::default(),
            discarding: HashSet::new(),
        }
    }

    pub(super) fn run(mut self, sls: PathSls<'_>) -> CreditReport {
        let blank = Carried {
            vls: 0,
            routes: [Route {
                slid: 0,
                dlid: 0,
                sl: Sl::ALL[0],
            }; 16],
        };
        let mut carried = vec![blank; self.switches.len()];
        let mut by_sl: [Vec<u32>; 16] = Default::default();
        for dlid in 1..self.owner.len() as u16 {
            let Some(owner) = self.owner[usize::from(dlid)] else {
                continue;
            };
            let hops = self.hops(dlid);
            let order = self.order(dlid, &hops);
            for list in &mut by_sl {
                list.clear();
            }
            self.sources_by_sl(sls, dlid, owner, &mut by_sl);
            for (sl, sources) in Sl::ALL.into_iter().zip(&by_sl) {
                if sources.is_empty() {
                    continue;
                }
                self.seed(dlid, sl, sources, &hops, &mut carried);
                self.propagate(sl, &order, &hops, &mut carried);
                for &switch in &order {
                    carried[switch as usize].vls = 0;
                }
            }
        }
        self.finish()
    }

    /// What every switch does with packets for `dlid`; each misforward is recorded.
    fn hops(&mut self, dlid: u16) -> Vec<Hop> {
        let topology = self.tables.topology;
        let owner = self.owner[usize::from(dlid)];
        let mut hops = Vec::with_capacity(self.switches.len());
        for index in 0..self.switches.len() {
            let switch = self.switches[index];
            let out = self.tables.routes.port(switch, dlid).unwrap_or(NO_ROUTE);
            let here = PortRef::new(switch, out);
            let hop = if out == NO_ROUTE {
                Err(Misforward::NoRoute { switch, dlid })
            } else if out == 0 {
                if owner == Some(here) {
                    Ok(Hop::Deliver)
                } else {
                    Err(Misforward::PortZero { switch, dlid })
                }
            } else {
                match topology.peer(here) {
                    None => Err(Misforward::Unlinked { port: here, dlid }),
                    Some(peer) => match self.switch_index[peer.node.index()] {
                        NONE if owner == Some(peer) => Ok(Hop::DeliverEnd { out }),
                        NONE => Err(Misforward::WrongEnd { port: here, dlid }),
                        next => Ok(Hop::Next {
                            out,
                            next,
                            input: peer.port,
                        }),
                    },
                }
            };
            hops.push(hop.unwrap_or_else(|misforward| {
                self.misforward(misforward);
                Hop::Fail
            }));
        }
        hops
    }

    /// The switches that deliver packets for `dlid`, each after every switch that forwards to
    /// it. Forwarding loops are recorded, once per loop.
    fn order(&mut self, dlid: u16, hops: &[Hop]) -> Vec<u32> {
        const UNKNOWN: u32 = u32::MAX;
        const FAILS: u32 = u32::MAX - 1;
        const WALKING: u32 = u32::MAX - 2;
        // Per switch, the hops its packets take to be delivered.
        let mut distance = vec![UNKNOWN; hops.len()];
        let mut path = Vec::new();
        for start in 0..hops.len() {
            let mut at = start;
            while distance[at] == UNKNOWN {
                match hops[at] {
                    Hop::Deliver | Hop::DeliverEnd { .. } => distance[at] = 0,
                    Hop::Fail => distance[at] = FAILS,
                    Hop::Next { next, .. } => {
                        distance[at] = WALKING;
                        path.push(at);
                        at = next as usize;
                    }
                }
            }
            if distance[at] == WALKING {
                let switch = self.switches[at];
                self.misforward(Misforward::Loop { switch, dlid });
                distance[at] = FAILS;
            }
            let mut after = distance[at];
            while let Some(before) = path.pop() {
                if distance[before] == WALKING {
                    after = if after == FAILS { FAILS } else { after + 1 };
                    distance[before] = after;
                } else {
                    after = distance[before];
                }
            }
        }
        let mut order: Vec<u32> = (0..hops.len() as u32)
            .filter(|&s| distance[s as usize] < WALKING)
            .collect();
        order.sort_by_key(|&s| std::cmp::Reverse(distance[s as usize]));
        order
    }

    /// The sources sending to `dlid` (not `owner` itself), listed under each SL they use.
    fn sources_by_sl(&self, sls: PathSls<'_>, dlid: u16, owner: PortRef, by_sl: &mut [Vec<u32>]) {
        for (index, source) in self.sources.iter().enumerate() {
            if source.port == owner {
                continue;
            }
            match sls {
                PathSls::Every => by_sl.iter_mut().for_each(|list| list.push(index as u32)),
                PathSls::Routed { layering, hints } => {
                    let mut used = 0u16;
                    for hint in hints.iter() {
                        let sl = layering.path_sl(hint.get(), source.lid, dlid) & 0x0f;
                        used |= 1 << sl;
                    }
                    for (sl, list) in by_sl.iter_mut().enumerate() {
                        if used & (1 << sl) != 0 {
                            list.push(index as u32);
                        }
                    }
                }
            }
        }
    }

    /// Puts the packets of `sources` on `sl` into the switches they enter.
    fn seed(&mut self, dlid: u16, sl: Sl, sources: &[u32], hops: &[Hop], carried: &mut [Carried]) {
        for &source in sources {
            let Source { lid, entry, .. } = self.sources[source as usize];
            let route = Route {
                slid: lid,
                dlid,
                sl,
            };
            let (switch, input) = match entry {
                Entry::Switch(switch) => (switch, 0),
                Entry::End {
                    port,
                    switch,
                    input,
                } => {
                    let vl = self.tables.vls.sl2vl(port.node, 0, port.port).vl(sl);
                    if self.discards(Channel::new(port, vl), route) {
                        continue;
                    }
                    (switch, input)
                }
            };
            self.arrive(switch, input, route, hops, carried);
        }
    }

    /// Packets of `route` entering `switch` by `input`: the VL they leave on, unless dropped.
    /// Returns that VL.
    fn arrive(
        &mut self,
        switch: u32,
        input: u8,
        route: Route,
        hops: &[Hop],
        carried: &mut [Carried],
    ) -> Option<Vl> {
        let out = match hops[switch as usize] {
            Hop::Next { out, .. } | Hop::DeliverEnd { out } => out,
            Hop::Deliver | Hop::Fail => return None,
        };
        let node = self.switches[switch as usize];
        let vl = self.tables.vls.sl2vl(node, input, out).vl(route.sl);
        if self.discards(Channel::new(PortRef::new(node, out), vl), route) {
            return None;
        }
        let state = &mut carried[switch as usize];
        let bit = 1u16 << vl.get();
        if state.vls & bit == 0 {
            state.vls |= bit;
            state.routes[usize::from(vl.get())] = route;
        }
        Some(vl)
    }

    /// Carries the packets from switch to switch in `order`, recording each dependency between
    /// two switch-to-switch channels.
    fn propagate(&mut self, sl: Sl, order: &[u32], hops: &[Hop], carried: &mut [Carried]) {
        for &switch in order {
            let Carried { vls, routes } = carried[switch as usize];
            let Hop::Next { out, next, input } = hops[switch as usize] else {
                continue;
            };
            if vls == 0 {
                continue;
            }
            let first = routes[vls.trailing_zeros() as usize];
            let Some(next_vl) = self.arrive(next, input, Route { sl, ..first }, hops, carried)
            else {
                continue;
            };
            let Hop::Next { out: next_out, .. } = hops[next as usize] else {
                continue;
            };
            let to = self.channel_index(next, next_out, next_vl);
            for vl in 0..16u8 {
                if vls & (1 << vl) != 0 {
                    let from = self.channel_index(switch, out, Vl::from_nibble(vl));
                    let edges = &mut self.successors[from as usize];
                    if !edges.iter().any(|&(t, _)| t == to) {
                        edges.push((to, routes[usize::from(vl)]));
                    }
                }
            }
        }
    }

    /// The index of the channel leaving `port` of switch `switch` (a switch-to-switch link) on
    /// `vl`.
    fn channel_index(&self, switch: u32, port: u8, vl: Vl) -> u32 {
        let slot = self.port_base[switch as usize] as usize + usize::from(port);
        self.link_index[slot] * 16 + u32::from(vl.get())
    }

    /// Whether `channel` drops the packets of `route` (VL15, or a VL above the port's
    /// OperVLs); a channel that does is recorded once.
    fn discards(&mut self, channel: Channel, route: Route) -> bool {
        let oper = self.tables.vls.oper_vls(channel.from).count();
        let dropped = channel.vl.is_management() || channel.vl.get() >= oper;
        if dropped && self.discarding.insert(channel) {
            self.report.discard_count += 1;
            if self.report.discards.len() < EXAMPLES {
                self.report.discards.push(Discard { channel, route });
            }
        }
        dropped
    }

    fn misforward(&mut self, misforward: Misforward) {
        self.report.misforward_count += 1;
        if self.report.misforwards.len() < EXAMPLES {
            self.report.misforwards.push(misforward);
        }
    }

    /// The graph's size and cycles, into the report.
    fn finish(mut self) -> CreditReport {
        let graph: Vec<Vec<u32>> = self
            .successors
            .iter()
            .map(|edges| edges.iter().map(|&(to, _)| to).collect())
            .collect();
        let mut used = vec![false; graph.len()];
        for (from, edges) in graph.iter().enumerate() {
            if !edges.is_empty() {
                used[from] = true;
            }
            for &to in edges {
                used[to as usize] = true;
            }
        }
        self.report.channels = used.iter().filter(|&&u| u).count();
        self.report.dependencies = graph.iter().map(Vec::len).sum();
        for component in cyclic_components(&graph) {
            let cycle = cycle_in(&graph, &component);
            let closing = cycle
                .iter()
                .enumerate()
                .map(|(k, &from)| {
                    let to = cycle[(k + 1) % cycle.len()];
                    self.successors[from as usize]
                        .iter()
                        .find(|&&(t, _)| t == to)
                        .map(|&(_, route)| route)
                        .unwrap_or(Route {
                            slid: 0,
                            dlid: 0,
                            sl: Sl::ALL[0],
                        })
                })
                .collect();
            self.report.loops.push(CreditLoop {
                channels: cycle.iter().map(|&c| self.channel(c)).collect(),
                closing,
                component: component.len(),
            });
        }
        self.report
    }

    fn channel(&self, index: u32) -> Channel {
        let from = self.links[(index / 16) as usize];
        Channel::new(from, Vl::from_nibble((index % 16) as u8))
    }
}

/// Every source: each linked CA or router port from the switch it is linked to, then each
/// switch from its port 0, each from every LID it answers.
fn sources(topology: &Topology, switch_index: &[u32]) -> Vec<Source> {
    let mut sources = Vec::new();
    for port in topology.endports() {
        let Some(lids) = topology.port(port).and_then(|p| p.lid_range()) else {
            continue;
        };
        let entry = match switch_index[port.node.index()] {
            NONE => match topology.peer(port) {
                Some(peer) if switch_index[peer.node.index()] != NONE => Entry::End {
                    port,
                    switch: switch_index[peer.node.index()],
                    input: peer.port,
                },
                // Unlinked, or linked straight to another CA: no switch to load.
                _ => continue,
            },
            switch => Entry::Switch(switch),
        };
        sources.extend(lids.map(|lid| Source { lid, port, entry }));
    }
    // The first source to reach a channel names the routes that use it: CA and router ports
    // first, since their traffic is what a loaded fabric carries.
    sources.sort_by_key(|source| matches!(source.entry, Entry::Switch(_)));
    sources
}
