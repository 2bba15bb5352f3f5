//! Credit loops: the channel dependency graph a fabric's forwarding and SL-to-VL tables make, and
//! its cycles.
//!
//! A lossless link stops sending on a VL when the receiver's buffer for that VL is full. A
//! packet waiting in one channel's buffer for credits on the next channel makes the first
//! depend on the second; a cycle of such dependencies can stop the fabric for good (Dally and
//! Seitz: deterministic routing is deadlock-free exactly when this graph has no cycle).
//!
//! [`check`] reads what the fabric holds, not what an engine meant: every switch's LFT, every
//! port's SL-to-VL tables and OperVLs, and the SLs the paths use. It follows every destination
//! LID from every source at once (routing is by destination, so one walk per (DLID, SL) covers
//! all sources), records each consecutive pair of switch-to-switch channels as a dependency,
//! and finds the cycles with Tarjan's algorithm. Each cycle comes with one route per edge that
//! makes it. Along the way it reports forwarding that cannot deliver (no route, loops, unlinked
//! ports) and packets a port drops (VL15, or a VL above its OperVLs).

mod channel;
mod dependencies;
mod describe;
mod scc;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use ibqos_qos::{Sl, Sl2VlTable, VlCount};

pub use channel::{Channel, ChannelDisplay};

use crate::routing::{Layering, Routes};
use crate::{NodeId, PortRef, Topology};

/// What the checker reads of the ports beside the topology: SL-to-VL tables and OperVLs.
pub trait PortVls: fmt::Debug {
    /// The table of traffic entering `input` and leaving by `output` of switch `node`; of a CA
    /// or router, the table of its port `output` (`input` is then 0).
    fn sl2vl(&self, node: NodeId, input: u8, output: u8) -> Sl2VlTable;

    /// The data VLs `port` runs (PortInfo.OperationalVLs).
    fn oper_vls(&self, port: PortRef) -> VlCount;
}

/// Port tables given one by one, every other port holding a default: how the SM describes the
/// tables it verified, and how tests describe a fabric.
///
/// A switch programmed with optimized SL2VL Sets holds one table per output for every input:
/// kept once per output (`every_input`), not once per pair, which on a fabric of a thousand
/// 36-port switches is the difference between a thousand tables and a million. The later of a
/// pair's own table and its output's is the one held, as the Sets were made.
#[derive(Debug, Clone)]
pub struct VlTables {
    default_sl2vl: Sl2VlTable,
    default_oper_vls: VlCount,
    /// By (node, input, output): the table and when it was set.
    sl2vl: HashMap<(NodeId, u8, u8), (u64, Sl2VlTable)>,
    /// By (node, output), for every input: the table and when it was set.
    every_input: HashMap<(NodeId, u8), (u64, Sl2VlTable)>,
    /// How many tables were set so far: the order of the Sets.
    sets: u64,
    oper_vls: HashMap<PortRef, VlCount>,
}

impl VlTables {
    /// Every port mapping SLs by `sl2vl` and running `oper_vls`, until told otherwise.
    pub fn new(sl2vl: Sl2VlTable, oper_vls: VlCount) -> VlTables {
        VlTables {
            default_sl2vl: sl2vl,
            default_oper_vls: oper_vls,
            sl2vl: HashMap::new(),
            every_input: HashMap::new(),
            sets: 0,
            oper_vls: HashMap::new(),
        }
    }

    /// Sets the table of (`input`, `output`) on `node` ([`PortVls::sl2vl`] says which).
    pub fn set_sl2vl(&mut self, node: NodeId, input: u8, output: u8, table: Sl2VlTable) {
        self.sets += 1;
        self.sl2vl.insert((node, input, output), (self.sets, table));
    }

    /// Sets the table of every input to `output` on switch `node`.
    pub fn set_sl2vl_every_input(&mut self, node: NodeId, output: u8, table: Sl2VlTable) {
        self.sets += 1;
        self.every_input.insert((node, output), (self.sets, table));
    }

    pub fn set_oper_vls(&mut self, port: PortRef, vls: VlCount) {
        self.oper_vls.insert(port, vls);
    }
}

impl PortVls for VlTables {
    fn sl2vl(&self, node: NodeId, input: u8, output: u8) -> Sl2VlTable {
        let pair = self.sl2vl.get(&(node, input, output));
        let every = self.every_input.get(&(node, output));
        match (pair, every) {
            (Some((when, table)), Some((later, every))) => {
                if when > later {
                    *table
                } else {
                    *every
                }
            }
            (Some((_, table)), None) | (None, Some((_, table))) => *table,
            (None, None) => self.default_sl2vl,
        }
    }

    fn oper_vls(&self, port: PortRef) -> VlCount {
        self.oper_vls
            .get(&port)
            .copied()
            .unwrap_or(self.default_oper_vls)
    }
}

/// The SLs the paths use.
#[derive(Debug, Clone, Copy)]
pub enum PathSls<'a> {
    /// What a PathRecord gives: each SL of `hints` (the SLs the QoS policy hands out, or SL 0
    /// without QoS) through the routing's [`Layering::path_sl`] for the pair.
    Routed {
        layering: &'a dyn Layering,
        hints: SlSet,
    },
    /// Every SL on every path: the worst case, for applications that ignore PathRecords.
    Every,
}

/// A set of service levels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SlSet(u16);

impl SlSet {
    pub const EVERY: SlSet = SlSet(u16::MAX);
    /// SL 0 alone: what paths use without QoS.
    pub const SL0: SlSet = SlSet(1);

    pub fn insert(&mut self, sl: Sl) {
        self.0 |= 1 << sl.get();
    }

    pub fn contains(self, sl: Sl) -> bool {
        self.0 & (1 << sl.get()) != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Sl> {
        Sl::ALL.into_iter().filter(move |&sl| self.contains(sl))
    }
}

impl std::ops::BitOr for SlSet {
    type Output = SlSet;

    fn bitor(self, other: SlSet) -> SlSet {
        SlSet(self.0 | other.0)
    }
}

impl FromIterator<Sl> for SlSet {
    fn from_iter<I: IntoIterator<Item = Sl>>(iter: I) -> SlSet {
        let mut set = SlSet::default();
        for sl in iter {
            set.insert(sl);
        }
        set
    }
}

/// One path: from the port answering `slid` to `dlid`, on `sl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    pub slid: u16,
    pub dlid: u16,
    pub sl: Sl,
}

/// A cycle of channel dependencies: packets in each channel can wait on the next one's credits,
/// and the last one's on the first's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditLoop {
    /// The cycle, from its smallest channel; the last depends on the first.
    pub channels: Vec<Channel>,
    /// For each channel, one route that holds it while asking for the next.
    pub closing: Vec<Route>,
    /// How many channels the strongly connected component around the cycle holds: every one of
    /// them lies on some cycle.
    pub component: usize,
}

/// Forwarding that cannot deliver to a destination LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Misforward {
    /// The switch's LFT has no port for the LID.
    NoRoute { switch: NodeId, dlid: u16 },
    /// The LFT sends the LID to port 0 of a switch that does not answer it.
    PortZero { switch: NodeId, dlid: u16 },
    /// The LFT sends the LID out of a port with no link (or no such port).
    Unlinked { port: PortRef, dlid: u16 },
    /// The LFT sends the LID to a CA or router port that does not answer it.
    WrongEnd { port: PortRef, dlid: u16 },
    /// Following the LFTs from `switch` comes back to it.
    Loop { switch: NodeId, dlid: u16 },
}

/// Packets a port drops: their SL maps to VL15 or a VL above the port's OperVLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Discard {
    pub channel: Channel,
    /// One route whose packets it drops there.
    pub route: Route,
}

/// At most this many misforwards and drops are kept as examples; all are counted.
pub const EXAMPLES: usize = 100;

/// What the checker found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreditReport {
    /// Channels between switches that some route uses.
    pub channels: usize,
    /// Dependencies between them.
    pub dependencies: usize,
    /// One cycle per strongly connected component; empty proves the fabric free of unicast
    /// credit loops for the SLs checked.
    pub loops: Vec<CreditLoop>,
    /// The first [`EXAMPLES`] misforwards, in (LID, switch) order, and how many there are.
    pub misforwards: Vec<Misforward>,
    pub misforward_count: usize,
    /// The first [`EXAMPLES`] channels that drop packets, and how many there are.
    pub discards: Vec<Discard>,
    pub discard_count: usize,
}

/// What a fabric holds, for [`check`]: the topology with its links and LIDs (and LMC), every
/// switch's LFT, and every port's SL-to-VL tables and OperVLs.
#[derive(Debug, Clone, Copy)]
pub struct FabricTables<'a> {
    pub topology: &'a Topology,
    pub routes: &'a Routes,
    pub vls: &'a dyn PortVls,
}

/// The channel dependency graph of `tables` for the SLs `sls` gives, and its cycles.
///
/// Sources are every CA and router port and every switch (port 0), each from every LID it
/// answers; destinations every LID an end port answers. Cost: O(LIDs x SLs x ports) for the
/// walks, plus one [`Layering::path_sl`] per (source LID, destination LID, hint).
pub fn check(tables: FabricTables<'_>, sls: PathSls<'_>) -> CreditReport {
    dependencies::Walk::new(tables).run(sls)
}

impl CreditReport {
    /// Whether no credit loop exists.
    pub fn is_free(&self) -> bool {
        self.loops.is_empty()
    }

    /// The report as text, naming nodes as `topology` does.
    pub fn describe(&self, topology: &Topology) -> String {
        describe::report(self, topology)
    }
}

/// `LID 5 "H0_0"[1] to LID 9 "H2_0"[1] on SL0`: a route, its ends named as `topology` names
/// them.
pub fn describe_route(route: Route, topology: &Topology) -> String {
    describe::route(route, topology)
}

impl CreditLoop {
    /// `"S0"/P2 VL0 -> "S1"/P2 VL0 -> ... -> "S0"/P2 VL0`: the cycle on one line.
    pub fn path(&self, topology: &Topology) -> String {
        describe::cycle(self, topology)
    }
}
