//! Fat-tree routing (OpenSM's `ftree`, `osm_ucast_ftree.c`): LFTs equal to OpenSM's, entry for
//! entry, on the fat trees it accepts; a refusal in OpenSM's words on those it does not, so the
//! next engine of the list routes.
//!
//! [`construct`] ranks the switches (from the CA-attached switches, or from the root GUIDs),
//! groups each switch's ports by neighbour into down, sibling and up groups, gives every switch
//! a tuple, and checks that the fabric is a fat tree. [`route`] then fills the tables: compute
//! nodes leaf by leaf, padded with dummy targets so every leaf moves the counters alike, then the
//! other CA ports, then the switches' own LIDs.
//!
//! Every walk over switches or CAs goes in OpenSM's table order: NodeGUIDs compared as the
//! network-order bytes read as a little-endian integer, so the last GUID byte weighs most.

mod construct;
mod route;

use std::collections::HashMap;

use ibqos_qos::VlCount;

use super::engine::{Engine, Routing};
use super::{NO_ROUTE, Routes, RoutingError, RoutingOptions};
use crate::topology::{NodeId, Topology};

/// OpenSM's `ftree` behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct FatTree;

impl Engine for FatTree {
    fn name(&self) -> &'static str {
        "ftree"
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
        ftree(topo, options).map(Routing::from)
    }
}

/// Every switch's table as OpenSM's fat-tree engine computes it, or
/// [`RoutingError::Refused`] with OpenSM's reason when the fabric is not a fat tree it routes.
pub fn ftree(topo: &Topology, options: &RoutingOptions) -> Result<Routes, RoutingError> {
    let mut tree = Tree::construct(topo, options)?;
    tree.route(options);
    Ok(tree.routes(topo))
}

/// A switch's position in the tree: its rank, then one digit per level, 0xFF where unused.
type Tuple = [u8; 8];

/// The tuple of a switch no indexing reached.
const UNASSIGNED: Tuple = [0xFF; 8];

/// The deepest a tuple can index: its length.
const TUPLE_LEN: usize = 8;

/// What a port group leads to: a switch or a CA, by index into [`Tree::switches`] or
/// [`Tree::cas`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remote {
    Switch(usize),
    Ca(usize),
}

/// One port of a group and the port it is linked to, with the routes counted on it.
#[derive(Debug, Clone)]
struct Link {
    port: u8,
    remote_port: u8,
    counter_up: u32,
    counter_down: u32,
}

/// The ports of one node that lead to the same neighbour (switch groups), or one CA port.
#[derive(Debug, Clone)]
struct Group {
    /// The LID of this side: the switch's LID, or the CA port's.
    lid: u16,
    /// The LID of the other side: the neighbour switch's, or the CA port's.
    remote_lid: u16,
    /// This side's port GUID (for messages).
    port_guid: u64,
    remote: Remote,
    links: Vec<Link>,
    is_cn: bool,
    is_io: bool,
    counter_up: u32,
    counter_down: u32,
}

#[derive(Debug, Clone)]
struct Switch {
    node: NodeId,
    guid: u64,
    lid: u16,
    rank: Option<u32>,
    tuple: Tuple,
    down: Vec<usize>,
    /// How many of the down groups lead to CAs.
    down_to_cas: usize,
    sibling: Vec<usize>,
    up: Vec<usize>,
    /// A switch with compute nodes attached, at the leaf rank.
    is_leaf: bool,
    /// Where the reverse-hop walk starts among the down groups (OpenSM's `down_port_groups_idx`).
    down_index: usize,
    /// The lowest `counter_down` among the down groups, refreshed as OpenSM refreshes it.
    min_counter_down: u32,
    /// The down groups' up-counters moved since they were last sorted.
    counter_up_changed: bool,
}

#[derive(Debug, Clone, Default)]
struct Ca {
    /// One group per linked port, in port order.
    groups: Vec<usize>,
    /// Ports linked to switches the ranking dropped.
    disconnected: Vec<u8>,
    /// Its compute-node ports.
    cns: u32,
}

/// The fabric as the fat-tree engine sees it, and the tables it fills.
#[derive(Debug)]
struct Tree {
    /// The ranked switches, in OpenSM's GUID order.
    switches: Vec<Switch>,
    /// The CAs, in OpenSM's GUID order.
    cas: Vec<Ca>,
    groups: Vec<Group>,
    by_tuple: HashMap<Tuple, usize>,
    leaf_rank: u32,
    /// The leaf-rank switches from the first to the last with compute nodes, in tuple order.
    leaves: Vec<usize>,
    max_cn_per_leaf: u32,
    max_lid: u16,
    /// Every switch's port toward each LID (0 is the dummy target while it is routed).
    lfts: PerLid,
    /// Every switch's hops toward each LID on the route set so far, [`NO_ROUTE`] for none.
    hops: PerLid,
    /// What the walks read of each group, by group index, packed so that a switch's scan of
    /// its down groups stays in cache; made when routing starts, once the groups are final.
    ends: Vec<GroupEnd>,
}

/// The far end of a group as [`Tree::up_by_going_down`] scans it: the remote switch's index
/// and LID, or [`GroupEnd::NO_SWITCH`] for a group toward a CA or without a link, which a
/// scan passes over.
#[derive(Debug, Clone, Copy)]
struct GroupEnd {
    switch: u32,
    remote_lid: u16,
}

impl GroupEnd {
    const NO_SWITCH: u32 = u32::MAX;

    fn of(group: &Group) -> GroupEnd {
        let switch = match group.remote {
            Remote::Switch(s) if !group.links.is_empty() => {
                u32::try_from(s).unwrap_or(Self::NO_SWITCH)
            }
            _ => Self::NO_SWITCH,
        };
        GroupEnd {
            switch,
            remote_lid: group.remote_lid,
        }
    }
}

/// One byte per switch and LID, [`NO_ROUTE`] at first. Stored LID by LID: a route is laid for
/// one LID across many switches, so what it reads and writes sits together.
#[derive(Debug)]
struct PerLid {
    switches: usize,
    bytes: Vec<u8>,
}

impl PerLid {
    fn new(switches: usize, max_lid: u16) -> PerLid {
        PerLid {
            switches,
            bytes: vec![NO_ROUTE; switches * (usize::from(max_lid) + 1)],
        }
    }

    fn at(&self, s: usize, lid: u16) -> usize {
        usize::from(lid) * self.switches + s
    }

    fn get(&self, s: usize, lid: u16) -> u8 {
        self.bytes[self.at(s, lid)]
    }

    fn set(&mut self, s: usize, lid: u16, value: u8) {
        let at = self.at(s, lid);
        self.bytes[at] = value;
    }

    /// Every switch's byte for `lid`, by switch index.
    fn row(&self, lid: u16) -> &[u8] {
        let start = usize::from(lid) * self.switches;
        &self.bytes[start..start + self.switches]
    }

    /// Switch `s`'s bytes, LID by LID.
    fn table(&self, s: usize) -> Vec<u8> {
        self.bytes
            .iter()
            .skip(s)
            .step_by(self.switches)
            .copied()
            .collect()
    }
}

impl Tree {
    /// The routes of every switch of `topo`: those the tree dropped route nothing.
    fn routes(self, topo: &Topology) -> Routes {
        let width = usize::from(self.max_lid) + 1;
        let mut lfts: std::collections::BTreeMap<NodeId, Vec<u8>> = topo
            .switches()
            .map(|(id, _)| (id, vec![NO_ROUTE; width]))
            .collect();
        for (s, sw) in self.switches.iter().enumerate() {
            lfts.insert(sw.node, self.lfts.table(s));
        }
        Routes {
            lfts,
            max_lid: self.max_lid,
        }
    }
}

/// A tuple as OpenSM prints it: its digits joined by dots.
fn tuple_text(tuple: &Tuple) -> String {
    if tuple[0] == 0xFF {
        return "INDEX.NOT.ASSIGNED".to_owned();
    }
    let digits: Vec<String> = tuple
        .iter()
        .take_while(|&&d| d != 0xFF)
        .map(u8::to_string)
        .collect();
    digits.join(".")
}

#[cfg(test)]
mod tests;
