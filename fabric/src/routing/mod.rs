//! Routing engines as pure functions: a topology with LIDs in, every switch's linear forwarding
//! table out. The SM programs these tables and the traffic simulator forwards with them, so the
//! same topology always gives the same bytes.
//!
//! Multicast has its own routing ([`MulticastRouting`]): OpenSM's spanning tree of each MLID
//! over the same min-hop counts, and the MFT blocks the trees fill ([`mft_blocks`]).
//!
//! The unicast engines share OpenSM's balancing step (`osm_ucast_mgr.c` `ucast_mgr_process_port`,
//! `osm_switch.c` `osm_switch_recommend_path`) and differ only in which ports of a switch are
//! candidates toward a destination switch: [`minhop`] allows every port on a shortest path;
//! [`updn`] and [`dnup`] the ports at the least count of OpenSM's restricted search, which
//! refuses turns from down to up (from up to down for dnup). Where that search reaches no
//! path, the entry stays unset, as OpenSM leaves it.
//! [`ftree`] lays its routes with its own walks and counters, as OpenSM's fat-tree engine does.
//! [`Torus2QoS`] routes a torus in dimension order and spends SLs and VLs on its datelines, as
//! OpenSM's torus-2QoS does.
//! [`Nue`] routes any fabric free of credit loops on the complete channel dependency graph,
//! on as many VL layers as it is allowed, as OpenSM's nue does.

mod balance;
mod dfsssp;
mod dnup;
mod dor;
mod engine;
mod ftree;
mod glibc_random;
mod heap;
mod lash;
mod lft_load;
mod list;
mod minhop;
mod multicast;
mod nue;
mod options;
mod policy_sl;
#[cfg(test)]
mod testing;
mod torus;
mod updn;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

pub use dfsssp::{Dfsssp, Sssp};
pub use dnup::{DownUp, dnup};
pub use dor::{Dor, dor};
pub use engine::{Engine, Layering, Routing, Unlayered, VlShortfall, update_port_tables};
pub use ftree::{FatTree, ftree};
pub use lash::{Lash, lash};
pub use lft_load::{LftLoad, PortLoad, SwitchLoad, Toward, WorstPort, lft_load};
pub use list::{
    Attempt, ENGINES, EngineList, Entry, Listed, OPENSM_ONLY_ENGINES, Routed, Skipped, Unrouted,
};
pub use minhop::{MinHop, minhop};
pub use multicast::{
    MasterTree, MftBlock, Mfts, MulticastError, MulticastRouting, MulticastTree, PortMask,
    Unreached, UnreachedReason, mft_blocks,
};
pub use nue::Nue;
pub use options::{GuidFile, NueMaxVls, RoutingOptions};
pub use policy_sl::{PolicySl, TORUS_FEATURES, TORUS_ROUTES};
pub use torus::Torus2QoS;
pub use updn::{Ranks, UpDown, updn, updn_roots};

use ibqos_mad::Guid;
use ibqos_qos::VlCount;

use crate::topology::{LidError, NodeId, PortRef, Topology, TopologyError};

/// The LFT entry meaning "no route".
pub const NO_ROUTE: u8 = 0xFF;

/// Every switch's linear forwarding table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes {
    lfts: BTreeMap<NodeId, Vec<u8>>,
    max_lid: u16,
}

impl Routes {
    /// Tables read back from a fabric (a dump, a survey), each indexed by LID with [`NO_ROUTE`]
    /// where there is none. Switches hold tables of different lengths (each up to its own
    /// LinearFDBTop): the shorter are padded with no route, so that all cover `max_lid`.
    pub fn from_tables(mut lfts: BTreeMap<NodeId, Vec<u8>>) -> Routes {
        let entries = lfts.values().map(Vec::len).max().unwrap_or(1).min(0x1_0000);
        for lft in lfts.values_mut() {
            lft.resize(entries, NO_ROUTE);
        }
        let max_lid = u16::try_from(entries.saturating_sub(1)).unwrap_or(u16::MAX);
        Routes { lfts, max_lid }
    }

    /// The highest LID any table covers; every table has `max_lid + 1` entries (LID 0 unused).
    pub fn max_lid(&self) -> u16 {
        self.max_lid
    }

    /// The table of `switch`, indexed by LID, [`NO_ROUTE`] where there is none.
    pub fn lft(&self, switch: NodeId) -> Option<&[u8]> {
        self.lfts.get(&switch).map(Vec::as_slice)
    }

    /// The port `switch` forwards `lid` to, `None` for no route.
    pub fn port(&self, switch: NodeId, lid: u16) -> Option<u8> {
        self.lft(switch)?
            .get(usize::from(lid))
            .copied()
            .filter(|&p| p != NO_ROUTE)
    }

    /// Every switch with its table, in node order.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &[u8])> {
        self.lfts.iter().map(|(id, lft)| (*id, lft.as_slice()))
    }
}

/// Why a fabric cannot be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutingError {
    #[error("no end port has a LID")]
    NoLids,
    #[error("{0} is linked but has no LID")]
    MissingLid(String),
    #[error(transparent)]
    Lid(#[from] LidError),
    #[error("switch {switch} cannot reach {dest} (LID {lid})")]
    Unreachable {
        switch: String,
        dest: String,
        lid: u16,
    },
    #[error("up/down root {0} is not a switch")]
    BadRoot(NodeId),
    /// OpenSM's updn: "disabling UPDN algorithm, no root nodes were found".
    #[error("no root switches were found (none detected, or the root GUID file names none)")]
    NoRoots,
    /// OpenSM's dnup: "ERR AE0D: No leaf switches found, DnUp routing failed".
    #[error("no leaf switches were found (no switch has a CA or router attached)")]
    NoLeaves,
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The engine does not route this fabric (ftree on a fabric that is not a fat tree), in
    /// OpenSM's words.
    #[error("{0}")]
    Refused(String),
    /// The routes need more VLs than the switch ports run (OpenSM's LASH `ERR 4D02`, DFSSSP
    /// `ERR AD25`).
    #[error("its routes need {needed} VLs, and the fabric runs {available}")]
    TooFewVls { needed: VlCount, available: VlCount },
}

/// Checks `topo` and its LIDs, and returns the highest LID an end port holds.
fn checked_max_lid(topo: &Topology) -> Result<u16, RoutingError> {
    topo.validate()?;
    topo.lid_map()?
        .values()
        .filter_map(|&ep| topo.port(ep)?.lid_range())
        .map(|range| *range.end())
        .max()
        .ok_or(RoutingError::NoLids)
}

/// The smallest VL count of at least `vls` VLs (15 when none is that large).
fn vl_count_for(vls: usize) -> VlCount {
    VlCount::ALL
        .into_iter()
        .find(|c| usize::from(c.count()) >= vls)
        .unwrap_or(VlCount::Fifteen)
}

/// The switches of a topology, numbered 0.. in node order, and the switch-to-switch links.
#[derive(Debug)]
struct SwitchGraph {
    ids: Vec<NodeId>,
    /// Slot of each node index, `None` for non-switches.
    slot: Vec<Option<usize>>,
    /// Per slot: (port, neighbour slot) for every port linked to a switch, in port order.
    adj: Vec<Vec<(u8, usize)>>,
    guid: Vec<u64>,
}

impl SwitchGraph {
    fn new(topo: &Topology) -> SwitchGraph {
        let ids: Vec<NodeId> = topo.switches().map(|(id, _)| id).collect();
        let mut slot = vec![None; topo.len()];
        for (i, id) in ids.iter().enumerate() {
            slot[id.index()] = Some(i);
        }
        let adj = ids
            .iter()
            .map(|&id| {
                topo.node(id)
                    .into_iter()
                    .flat_map(|n| n.existing_ports())
                    .filter_map(|(p, port)| Some((p, slot[port.peer?.node.index()]?)))
                    .collect()
            })
            .collect();
        let guid = ids
            .iter()
            .map(|&id| topo.node(id).map_or(0, |n| n.guid))
            .collect();
        SwitchGraph {
            ids,
            slot,
            adj,
            guid,
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn slot_of(&self, id: NodeId) -> Option<usize> {
        self.slot.get(id.index()).copied().flatten()
    }

    /// Hop counts from `from` to every switch over switch-to-switch links (`u32::MAX` =
    /// unreachable), following only steps `allowed(from, to)` permits.
    fn bfs(&self, from: &[usize], allowed: impl Fn(usize, usize) -> bool) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.len()];
        let mut queue = VecDeque::new();
        for &f in from {
            dist[f] = 0;
            queue.push_back(f);
        }
        while let Some(s) = queue.pop_front() {
            for &(_, n) in &self.adj[s] {
                if dist[n] == u32::MAX && allowed(s, n) {
                    dist[n] = dist[s] + 1;
                    queue.push_back(n);
                }
            }
        }
        dist
    }
}

/// A destination: one end port and its LID range.
#[derive(Debug)]
struct Dest {
    port: PortRef,
    base: u16,
    count: u16,
    /// The switch slot the port hangs off and the switch port it is reached by (0 for a switch's
    /// own port 0); `None` when it is not attached to a switch.
    attach: Option<(usize, u8)>,
    is_switch: bool,
    /// Whether `scatter_ports` may scatter its base LID (not for ports of the GUID routing
    /// order file under `guid_routing_order_no_scatter`).
    scattered: bool,
}

/// The destinations in OpenSM's routing order (`osm_ucast_mgr.c` `ucast_mgr_build_lfts`): first
/// the ports of `guid_routing_order_file`, in file order; then the CA and router ports attached
/// to switches, switch by switch with the switches holding the most such ports first (ties in
/// NodeGUID order), each switch's in port order; then every other end port in port-GUID order.
/// GUID order is OpenSM's: by the GUID's bytes from the last one (see `Guid::opensm_order`).
/// The order decides which LIDs the balancing sees first. As in OpenSM, a listed GUID that is
/// no end port of the fabric is passed over, and so is a GUID listed again.
fn destinations(
    topo: &Topology,
    graph: &SwitchGraph,
    options: &RoutingOptions,
) -> Result<Vec<Dest>, RoutingError> {
    topo.lid_map()?;
    if topo
        .endports()
        .all(|p| topo.port(p).is_none_or(|port| port.lid == 0))
    {
        return Err(RoutingError::NoLids);
    }
    let mut seen = HashSet::new();
    let mut dests = Vec::new();
    let mut add = |port: PortRef, scattered: bool, dests: &mut Vec<Dest>| {
        if !seen.insert(port) {
            return Ok(());
        }
        let Some(node) = topo.node(port.node) else {
            return Ok(());
        };
        let Some(p) = node.port(port.port) else {
            return Ok(());
        };
        if !node.is_switch() && p.peer.is_none() {
            return Ok(());
        }
        let Some(range) = p.lid_range() else {
            return Err(RoutingError::MissingLid(topo.describe(port)));
        };
        let attach = if node.is_switch() {
            graph.slot_of(port.node).map(|s| (s, 0))
        } else {
            p.peer
                .and_then(|peer| Some((graph.slot_of(peer.node)?, peer.port)))
        };
        dests.push(Dest {
            port,
            base: *range.start(),
            count: range.end() - range.start() + 1,
            attach,
            is_switch: node.is_switch(),
            scattered,
        });
        Ok(())
    };
    if let Some(listed) = &options.guid_routing_order {
        let by_guid: HashMap<u64, PortRef> = topo
            .endports()
            .filter_map(|ep| Some((topo.port(ep)?.guid, ep)))
            .collect();
        for port in listed.iter().filter_map(|guid| by_guid.get(guid)) {
            add(*port, !options.guid_routing_order_no_scatter, &mut dests)?;
        }
    }
    let mut by_load: Vec<usize> = (0..graph.len()).collect();
    let end_links = |s: usize| {
        topo.node(graph.ids[s]).map_or(0, |n| {
            n.existing_ports()
                .filter(|(p, port)| {
                    *p != 0 && port.peer.is_some_and(|q| graph.slot_of(q.node).is_none())
                })
                .count()
        })
    };
    by_load.sort_by_key(|&s| {
        let guid = Guid(graph.guid[s]).opensm_order();
        (std::cmp::Reverse(end_links(s)), guid)
    });
    for s in by_load {
        let Some(node) = topo.node(graph.ids[s]) else {
            continue;
        };
        for (p, port) in node.existing_ports() {
            if let Some(peer) = port
                .peer
                .filter(|q| p != 0 && graph.slot_of(q.node).is_none())
            {
                add(peer, true, &mut dests)?;
            }
        }
    }
    let mut rest: Vec<(u64, PortRef)> = topo
        .endports()
        .filter_map(|ep| Some((Guid(topo.port(ep)?.guid).opensm_order(), ep)))
        .collect();
    rest.sort();
    for (_, ep) in rest {
        add(ep, true, &mut dests)?;
    }
    Ok(dests)
}

/// Why [`trace`] could not follow a LID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error("no end port has LID {0}")]
    UnknownLid(u16),
    #[error("{0} is not an end port (a CA or router port, or switch port 0)")]
    NotAnEndport(PortRef),
    #[error("{0} is not linked")]
    Unlinked(PortRef),
    #[error("switch {switch} has no route to LID {lid}")]
    NoRoute { switch: NodeId, lid: u16 },
    #[error("LID {lid} was delivered to {reached}, which does not own it")]
    WrongDestination { reached: PortRef, lid: u16 },
    #[error("the path to LID {lid} loops through switch {switch}")]
    Loop { switch: NodeId, lid: u16 },
}

/// Follows `dlid` from the end port `from` through the forwarding tables, hop by hop.
///
/// The path lists `from`, then the port each switch forwards out of, and ends with the end port
/// that owns `dlid` (for a switch destination, its port 0, which is also that switch's egress
/// entry). A packet that revisits a switch is a [`TraceError::Loop`].
pub fn trace(
    topo: &Topology,
    routes: &Routes,
    from: PortRef,
    dlid: u16,
) -> Result<Vec<PortRef>, TraceError> {
    let owner = topo.lid_owner(dlid).ok_or(TraceError::UnknownLid(dlid))?;
    let node = topo.node(from.node).ok_or(TraceError::NotAnEndport(from))?;
    if topo.port(from).is_none() || (node.is_switch() && from.port != 0) {
        return Err(TraceError::NotAnEndport(from));
    }
    let mut path = vec![from];
    if from == owner {
        return Ok(path);
    }
    let mut at = if node.is_switch() {
        from.node
    } else {
        let peer = topo.peer(from).ok_or(TraceError::Unlinked(from))?;
        if !topo.node(peer.node).is_some_and(|n| n.is_switch()) {
            path.push(peer);
            return check_owner(path, peer, owner, dlid);
        }
        peer.node
    };
    let mut visited = HashSet::new();
    loop {
        if !visited.insert(at) {
            return Err(TraceError::Loop {
                switch: at,
                lid: dlid,
            });
        }
        let out = routes.port(at, dlid).ok_or(TraceError::NoRoute {
            switch: at,
            lid: dlid,
        })?;
        let egress = PortRef::new(at, out);
        path.push(egress);
        if out == 0 {
            return check_owner(path, egress, owner, dlid);
        }
        let peer = topo.peer(egress).ok_or(TraceError::Unlinked(egress))?;
        if topo.node(peer.node).is_some_and(|n| n.is_switch()) {
            at = peer.node;
        } else {
            path.push(peer);
            return check_owner(path, peer, owner, dlid);
        }
    }
}

fn check_owner(
    path: Vec<PortRef>,
    reached: PortRef,
    owner: PortRef,
    lid: u16,
) -> Result<Vec<PortRef>, TraceError> {
    if reached == owner {
        Ok(path)
    } else {
        Err(TraceError::WrongDestination { reached, lid })
    }
}
