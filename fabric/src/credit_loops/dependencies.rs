//! The walk that builds the channel dependency graph: per destination LID, the forwarding every
//! switch does toward it; per SL, the VLs each switch's output carries, from every source at
//! once, in the order packets reach the switches.

use std::collections::{HashMap, HashSet};

use ibqos_qos::{Sl, Sl2VlTable, Vl};

use super::scc::{Graph, cycle_in, cyclic_components};
use super::{
    Channel, CreditLoop, CreditReport, Discard, EXAMPLES, FabricTables, Misforward, PathSls,
    PortVls, Route, SlSet,
};
use crate::routing::NO_ROUTE;
use crate::{NodeId, PortRef, Topology};

/// The channel dependency graph as the walk builds it. Most channels have no successor (a link
/// has 16 VLs and a routing uses a few), so only those with some have a list. The routes that
/// make each dependency are not kept: a second walk finds those of the loops, if any.
struct Dependencies {
    /// Per channel, its list in `lists`, or [`NONE`].
    list_of: Vec<u32>,
    lists: Vec<Vec<u32>>,
}

impl Dependencies {
    fn new(channels: usize) -> Dependencies {
        Dependencies {
            list_of: vec![NONE; channels],
            lists: Vec::new(),
        }
    }

    /// Records that channel `from` depends on channel `to`.
    fn insert(&mut self, from: u32, to: u32) {
        let list = &mut self.list_of[from as usize];
        if *list == NONE {
            *list = self.lists.len() as u32;
            self.lists.push(Vec::new());
        }
        let successors = &mut self.lists[*list as usize];
        if !successors.contains(&to) {
            successors.push(to);
        }
    }

    fn of(&self, from: u32) -> &[u32] {
        match self.list_of[from as usize] {
            NONE => &[],
            list => &self.lists[list as usize],
        }
    }
}

impl Graph for Dependencies {
    fn vertices(&self) -> usize {
        self.list_of.len()
    }

    fn successor(&self, v: u32, i: usize) -> Option<u32> {
        self.of(v).get(i).copied()
    }
}

/// Not an index: a switch outside the list, a port without a switch-to-switch link.
const NONE: u32 = u32::MAX;

/// A route slot nothing has filled.
const BLANK: Route = Route {
    slid: 0,
    dlid: 0,
    sl: Sl::ALL[0],
};

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
    /// The VL of each SL on the source's own port (a CA's or router's), and the data VLs it
    /// runs: read once, not once per destination.
    vls: Sl2VlTable,
    oper_vls: u8,
}

/// What the sources put on each switch output when every path takes the same SLs: per (switch
/// port slot, SL of `sls`), `slot * sls.len() + k`, the VLs and a source LID per VL. Read once,
/// so that each (destination, SL) costs a pass over the switches, not over the sources.
#[derive(Debug)]
struct Seeds {
    sls: Vec<Sl>,
    by_output: Vec<SeedVls>,
}

#[derive(Debug, Clone, Copy, Default)]
struct SeedVls {
    vls: u16,
    slids: [u16; 16],
}

/// A switch's SL-to-VL tables, read once: the distinct tables, and which one each (input,
/// output) pair maps with.
#[derive(Debug)]
struct SwitchTables {
    ports: usize,
    index: PairIndex,
    tables: Vec<Sl2VlTable>,
}

/// Per pair, the index of its table in [`SwitchTables::tables`].
#[derive(Debug)]
enum PairIndex {
    /// Every output has one table for all its inputs (optimized SL2VL): by output.
    PerOutput(Vec<u16>),
    /// By pair, `input * ports + output`.
    PerPair(Vec<u16>),
}

impl SwitchTables {
    fn read(vls: &dyn PortVls, node: NodeId, num_ports: u8) -> SwitchTables {
        let ports = usize::from(num_ports) + 1;
        let mut tables: Vec<Sl2VlTable> = Vec::new();
        let mut pairs = Vec::with_capacity(ports * ports);
        for input in 0..=num_ports {
            for output in 0..=num_ports {
                let table = vls.sl2vl(node, input, output);
                let index = match tables.iter().position(|t| *t == table) {
                    Some(index) => index,
                    None => {
                        tables.push(table);
                        tables.len() - 1
                    }
                };
                // At most one table per pair: 65,536 pairs is more than 255 ports make.
                pairs.push(index as u16);
            }
        }
        let first_input = &pairs[..ports];
        let index = if pairs.chunks(ports).all(|row| row == first_input) {
            PairIndex::PerOutput(first_input.to_vec())
        } else {
            PairIndex::PerPair(pairs)
        };
        SwitchTables {
            ports,
            index,
            tables,
        }
    }

    fn vl(&self, input: u8, output: u8, sl: Sl) -> Vl {
        let index = match &self.index {
            PairIndex::PerOutput(by_output) => by_output[usize::from(output)],
            PairIndex::PerPair(pairs) => {
                pairs[usize::from(input) * self.ports + usize::from(output)]
            }
        };
        self.tables[usize::from(index)].vl(sl)
    }
}

/// The per-SL state of one switch during a walk: the VLs its output carries toward the
/// destination, and one route per VL that puts it there.
/// The forwarding toward one destination LID: each switch's hop, and the switches that deliver
/// in the order packets reach them.
struct Dlid<'a> {
    dlid: u16,
    hops: &'a [Hop],
    order: &'a [u32],
}

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
    /// Per switch, its SL-to-VL tables.
    switch_tables: Vec<SwitchTables>,
    /// Per switch port (`port_base[switch] + port`), the data VLs it runs.
    oper_vls: Vec<u8>,
    /// Per switch, the index of its first port in the switch-to-switch channel numbering.
    port_base: Vec<u32>,
    /// Per switch port (`port_base[switch] + port`), its index among switch-to-switch ports, or
    /// [`NONE`]. A channel's index is that times 16 plus its VL.
    link_index: Vec<u32>,
    links: Vec<PortRef>,
    /// Per channel, the channels it depends on.
    dependencies: Dependencies,
    /// The dependencies of the loops found, each with the first route that makes it, while a
    /// second walk looks for those routes.
    closing: Option<HashMap<(u32, u32), Option<Route>>>,
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
        let sources = sources(topology, &switch_index, tables.vls);
        let mut port_base = Vec::with_capacity(switches.len());
        let mut switch_tables = Vec::with_capacity(switches.len());
        let mut oper_vls = Vec::new();
        let mut link_index = Vec::new();
        let mut links = Vec::new();
        for &id in &switches {
            port_base.push(link_index.len() as u32);
            let num_ports = topology.node(id).map_or(0, |node| node.num_ports());
            switch_tables.push(SwitchTables::read(tables.vls, id, num_ports));
            for number in 0..=num_ports {
                let here = PortRef::new(id, number);
                oper_vls.push(tables.vls.oper_vls(here).count());
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
        let dependencies = Dependencies::new(links.len() * 16);
        Walk {
            tables,
            switches,
            switch_index,
            owner,
            sources,
            switch_tables,
            oper_vls,
            port_base,
            link_index,
            links,
            dependencies,
            closing: None,
            report: CreditReport::default(),
            discarding: HashSet::new(),
        }
    }

    pub(super) fn run(mut self, sls: PathSls<'_>) -> CreditReport {
        let uniform = match sls {
            PathSls::Every => Some(SlSet::EVERY),
            PathSls::Routed { layering, hints } if layering.keeps_hint() => Some(hints),
            PathSls::Routed { .. } => None,
        };
        let seeds = uniform.map(|set| self.seeds(set));
        self.walk(sls, seeds.as_ref());
        self.finish(sls, seeds.as_ref())
    }

    /// Every destination LID's packets, from every source, through the switches.
    fn walk(&mut self, sls: PathSls<'_>, seeds: Option<&Seeds>) {
        let blank = Carried {
            vls: 0,
            routes: [BLANK; 16],
        };
        let mut carried = vec![blank; self.switches.len()];
        let mut by_sl: [Vec<u32>; 16] = Default::default();
        for dlid in 1..self.owner.len() as u16 {
            let Some(owner) = self.owner[usize::from(dlid)] else {
                continue;
            };
            let hops = self.hops(dlid);
            let order = self.order(dlid, &hops);
            let walk = Dlid {
                dlid,
                hops: &hops,
                order: &order,
            };
            if let Some(seeds) = seeds {
                for k in 0..seeds.sls.len() {
                    self.propagate(&walk, seeds.sls[k], Some((seeds, k)), &mut carried);
                    for &switch in &order {
                        carried[switch as usize].vls = 0;
                    }
                }
                continue;
            }
            for list in &mut by_sl {
                list.clear();
            }
            self.sources_by_sl(sls, dlid, owner, &mut by_sl);
            for (sl, sources) in Sl::ALL.into_iter().zip(&by_sl) {
                if sources.is_empty() {
                    continue;
                }
                self.seed(dlid, sl, sources, &hops, &mut carried);
                self.propagate(&walk, sl, None, &mut carried);
                for &switch in &order {
                    carried[switch as usize].vls = 0;
                }
            }
        }
    }

    /// What every source puts on each output of the switch it enters, for each SL of `set`.
    /// A source's packets do not come back out of the port they entered by (that is a CA
    /// sending to itself). A CA port that drops an SL itself is recorded here, once.
    fn seeds(&mut self, set: SlSet) -> Seeds {
        let sls: Vec<Sl> = set.iter().collect();
        let mut by_output = vec![SeedVls::default(); self.oper_vls.len() * sls.len()];
        for index in 0..self.sources.len() {
            let source = self.sources[index];
            let (switch, input) = match source.entry {
                Entry::Switch(switch) => (switch, 0),
                Entry::End { switch, input, .. } => (switch, input),
            };
            for (k, &sl) in sls.iter().enumerate() {
                if let Entry::End { port, .. } = source.entry {
                    let vl = source.vls.vl(sl);
                    if drops(vl, source.oper_vls) {
                        let dlid = self.other_lid(port);
                        let route = Route {
                            slid: source.lid,
                            dlid,
                            sl,
                        };
                        self.discard(Channel::new(port, vl), route);
                        continue;
                    }
                }
                let tables = &self.switch_tables[switch as usize];
                let base = self.port_base[switch as usize] as usize;
                for out in 0..tables.ports {
                    let out = out as u8;
                    if out == input {
                        continue;
                    }
                    let vl = tables.vl(input, out, sl).get();
                    let seed = &mut by_output[(base + usize::from(out)) * sls.len() + k];
                    if seed.vls & (1 << vl) == 0 {
                        seed.vls |= 1 << vl;
                        seed.slids[usize::from(vl)] = source.lid;
                    }
                }
            }
        }
        Seeds { sls, by_output }
    }

    /// A LID some other end port than `port` answers: the destination named with a drop at a
    /// source's own port, which drops whatever it sends.
    fn other_lid(&self, port: PortRef) -> u16 {
        let other = self
            .owner
            .iter()
            .position(|owner| owner.is_some_and(|o| o != port));
        other.map_or(0, |lid| lid as u16)
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
            let Source {
                lid,
                entry,
                vls,
                oper_vls,
                ..
            } = self.sources[source as usize];
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
                    let vl = vls.vl(sl);
                    if drops(vl, oper_vls) {
                        self.discard(Channel::new(port, vl), route);
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
        let vl = self.switch_tables[switch as usize].vl(input, out, route.sl);
        self.carry(switch, out, vl, route, carried).then_some(vl)
    }

    /// Packets of `route` leaving `switch` by `out` on `vl`: carried unless the port drops
    /// them. Returns whether they are carried.
    fn carry(
        &mut self,
        switch: u32,
        out: u8,
        vl: Vl,
        route: Route,
        carried: &mut [Carried],
    ) -> bool {
        let slot = self.port_base[switch as usize] as usize + usize::from(out);
        if drops(vl, self.oper_vls[slot]) {
            let node = self.switches[switch as usize];
            self.discard(Channel::new(PortRef::new(node, out), vl), route);
            return false;
        }
        let state = &mut carried[switch as usize];
        let bit = 1u16 << vl.get();
        if state.vls & bit == 0 {
            state.vls |= bit;
            state.routes[usize::from(vl.get())] = route;
        }
        true
    }

    /// Puts what the sources send toward `dlid` on `sl` onto `switch`'s output, from `seeds`'
    /// `k`th SL.
    fn plant(
        &mut self,
        walk: &Dlid<'_>,
        switch: u32,
        sl: Sl,
        (seeds, k): (&Seeds, usize),
        carried: &mut [Carried],
    ) {
        let out = match walk.hops[switch as usize] {
            Hop::Next { out, .. } | Hop::DeliverEnd { out } => out,
            Hop::Deliver | Hop::Fail => return,
        };
        let slot = self.port_base[switch as usize] as usize + usize::from(out);
        let seed = seeds.by_output[slot * seeds.sls.len() + k];
        for vl in 0..16u8 {
            if seed.vls & (1 << vl) != 0 {
                let route = Route {
                    slid: seed.slids[usize::from(vl)],
                    dlid: walk.dlid,
                    sl,
                };
                self.carry(switch, out, Vl::from_nibble(vl), route, carried);
            }
        }
    }

    /// Carries the packets from switch to switch in the walk's order, recording each dependency
    /// between two switch-to-switch channels; with `seeds`, each switch first takes on what
    /// the sources send through it.
    fn propagate(
        &mut self,
        walk: &Dlid<'_>,
        sl: Sl,
        seeds: Option<(&Seeds, usize)>,
        carried: &mut [Carried],
    ) {
        let hops = walk.hops;
        for &switch in walk.order {
            if let Some(seeds) = seeds {
                self.plant(walk, switch, sl, seeds, carried);
            }
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
                    self.dependencies.insert(from, to);
                    if let Some(closing) = &mut self.closing
                        && let Some(route @ None) = closing.get_mut(&(from, to))
                    {
                        *route = Some(routes[usize::from(vl)]);
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

    /// Records that `channel` drops the packets of `route`, once per channel.
    fn discard(&mut self, channel: Channel, route: Route) {
        if self.discarding.insert(channel) {
            self.report.discard_count += 1;
            if self.report.discards.len() < EXAMPLES {
                self.report.discards.push(Discard { channel, route });
            }
        }
    }

    fn misforward(&mut self, misforward: Misforward) {
        self.report.misforward_count += 1;
        if self.report.misforwards.len() < EXAMPLES {
            self.report.misforwards.push(misforward);
        }
    }

    /// The graph's size and cycles, into the report. The routes that close the cycles come
    /// from a second walk, which finds every drop and misforward again: those of the first
    /// stay.
    fn finish(mut self, sls: PathSls<'_>, seeds: Option<&Seeds>) -> CreditReport {
        let graph = &self.dependencies;
        let mut used = vec![false; graph.vertices()];
        for from in 0..graph.vertices() as u32 {
            let successors = graph.of(from);
            if !successors.is_empty() {
                used[from as usize] = true;
            }
            for &to in successors {
                used[to as usize] = true;
            }
        }
        self.report.channels = used.iter().filter(|&&u| u).count();
        self.report.dependencies = graph.lists.iter().map(Vec::len).sum();
        let cycles: Vec<(usize, Vec<u32>)> = cyclic_components(graph)
            .into_iter()
            .map(|component| (component.len(), cycle_in(graph, &component)))
            .collect();
        let edges = |cycle: &[u32]| -> Vec<(u32, u32)> {
            (0..cycle.len())
                .map(|k| (cycle[k], cycle[(k + 1) % cycle.len()]))
                .collect()
        };
        if !cycles.is_empty() {
            let wanted = cycles.iter().flat_map(|(_, cycle)| edges(cycle));
            self.closing = Some(wanted.map(|edge| (edge, None)).collect());
            let found = std::mem::take(&mut self.report);
            self.walk(sls, seeds);
            self.report = found;
        }
        let closing = self.closing.take().unwrap_or_default();
        for (component, cycle) in cycles {
            let routes = edges(&cycle)
                .iter()
                .map(|edge| closing.get(edge).copied().flatten().unwrap_or(BLANK))
                .collect();
            let channels = cycle.iter().map(|&c| self.channel(c)).collect();
            self.report.loops.push(CreditLoop {
                channels,
                closing: routes,
                component,
            });
        }
        self.report
    }

    fn channel(&self, index: u32) -> Channel {
        let from = self.links[(index / 16) as usize];
        Channel::new(from, Vl::from_nibble((index % 16) as u8))
    }
}

/// Whether a port running `oper_vls` data VLs drops packets on `vl`: VL15 carries no data, and
/// a VL at or above the count is not running.
fn drops(vl: Vl, oper_vls: u8) -> bool {
    vl.is_management() || vl.get() >= oper_vls
}

/// Every source: each linked CA or router port from the switch it is linked to, then each
/// switch from its port 0, each from every LID it answers.
fn sources(topology: &Topology, switch_index: &[u32], vls: &dyn PortVls) -> Vec<Source> {
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
        let (vls, oper_vls) = match entry {
            Entry::End { .. } => (
                vls.sl2vl(port.node, 0, port.port),
                vls.oper_vls(port).count(),
            ),
            // A switch's own packets take their VL at the switch's output.
            Entry::Switch(_) => (Sl2VlTable::ALL_VL0, 1),
        };
        sources.extend(lids.map(|lid| Source {
            lid,
            port,
            entry,
            vls,
            oper_vls,
        }));
    }
    // The first source to reach a channel names the routes that use it: CA and router ports
    // first, since their traffic is what a loaded fabric carries.
    sources.sort_by_key(|source| matches!(source.entry, Entry::Switch(_)));
    sources
}
