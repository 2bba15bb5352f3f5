//! Multicast routing as OpenSM 3.3.23 does it, as pure functions: the spanning tree of one MLID
//! (`osm_mcast_mgr.c` `mcast_mgr_build_spanning_tree`) and the MFT blocks many trees fill
//! (`mcast_mgr_set_mftables`).
//!
//! The tree of one MLID:
//! - with fewer than two member ports there is none, and no switch has an entry;
//! - its root is the multicast-capable switch whose largest hop count to the members' switches
//!   (a member switch itself, or the switch a member CA hangs off, one hop more) is least
//!   (`mcast_mgr_compute_max_hops`); a switch wins only if strictly better than those before it
//!   in OpenSM's switch table order, [`Guid::opensm_order`] (`mcast_mgr_find_optimal_switch`);
//! - from the root down (`mcast_mgr_branch`), each switch sends each member it still has to
//!   reach out of the first port, in port order, with the least hop count toward the member's
//!   switch (`osm_switch_recommend_mcast_path`, existing MFT entries ignored); a member that is
//!   the switch itself goes to port 0, a CA attached to it to its port. The switch's entry holds
//!   those ports and, below the root, the port the tree came in by; the branch goes on into
//!   every switch behind those ports with the members sent there. A branch stops with its
//!   members unreached at a switch that does not do multicast (ERR 0A14) or at depth 64 (ERR
//!   0A21), and a member with no path from a switch is left there (ERR 0A03).
//!
//! Because every switch takes the first least-hop port, two members never reach one switch by
//! two ways, so the entries form a tree without loops.
//!
//! The hop counts are those OpenSM's min-hop unicast routing leaves in its switches' hop tables
//! (`osm_ucast_mgr.c` `osm_ucast_mgr_build_lid_matrices`, hop weights 1): the fewest
//! switch-to-switch links between two switches.
//!
//! A routing may choose one spanning tree of the switches instead ([`MasterTree`], torus-2QoS's
//! `mcast_build_stree`): every MLID's tree is then the part of it that leads to the members.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::BitOrAssign;

use ibqos_mad::{Guid, MftModifier, MulticastForwardingTableRepr};

use super::{RoutingError, SwitchGraph};
use crate::topology::{Node, NodeId, PortRef, Topology};

/// OpenSM's hop count for "no path" (`OSM_NO_PATH`).
const NO_PATH: u8 = 0xff;
/// The depth at which OpenSM abandons a branch (`mcast_mgr_branch`, ERR 0A21).
const MAX_DEPTH: u8 = 64;

/// A set of ports of one switch, port 0 the switch itself: one MLID's MFT entry, as the 16-bit
/// masks of its 16 positions (bit `k` of position `p` is port `16 * p + k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortMask([u16; 16]);

impl PortMask {
    fn slot(port: u8) -> (usize, u16) {
        let per = MftModifier::PORTS_PER_POSITION;
        (usize::from(port / per), 1 << (port % per))
    }

    /// Adds `port`.
    pub fn insert(&mut self, port: u8) {
        let (position, bit) = Self::slot(port);
        self.0[position] |= bit;
    }

    /// Whether `port` is in the set.
    pub fn contains(&self, port: u8) -> bool {
        let (position, bit) = Self::slot(port);
        self.0[position] & bit != 0
    }

    /// Whether no port is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&m| m == 0)
    }

    /// The ports in the set, in port order.
    pub fn ports(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=u8::MAX).filter(|&p| self.contains(p))
    }

    /// The mask of `position`: ports `16 * position ..= 16 * position + 15`, as an MFT block
    /// carries it (0 past position 15).
    pub fn position(&self, position: u8) -> u16 {
        self.0.get(usize::from(position)).copied().unwrap_or(0)
    }
}

impl BitOrAssign for PortMask {
    fn bitor_assign(&mut self, other: PortMask) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine |= theirs;
        }
    }
}

impl FromIterator<u8> for PortMask {
    fn from_iter<I: IntoIterator<Item = u8>>(ports: I) -> Self {
        let mut mask = PortMask::default();
        ports.into_iter().for_each(|p| mask.insert(p));
        mask
    }
}

/// Why a multicast tree or table cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MulticastError {
    #[error("{0} is not an end port (a CA or router port, or switch port 0)")]
    NotAnEndport(PortRef),
    #[error("no multicast-capable switch to root the tree at")]
    NoMulticastSwitch,
    #[error("LID {0:#06x} is not a multicast LID")]
    NotMulticast(u16),
    #[error("{0} is not a port of a switch")]
    NotASwitchPort(PortRef),
}

/// Why a branch of a tree left a member unreached (OpenSM logs each and routes the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnreachedReason {
    /// The switch has no path toward the member (ERR 0A03), or the member is not linked to a
    /// switch.
    NoPath,
    /// The switch does not do multicast: SwitchInfo.MulticastFDBCap is 0 (ERR 0A14).
    NotMulticastCapable,
    /// The branch reached depth 64 (ERR 0A21).
    TooDeep,
}

/// A member a branch stopped short of: at which switch and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreached {
    pub member: PortRef,
    pub switch: NodeId,
    pub reason: UnreachedReason,
}

/// The spanning tree of one MLID: the entry it gives each switch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MulticastTree {
    /// The switch the tree grows from; `None` with fewer than two members.
    pub root: Option<NodeId>,
    /// The MFT entry of every switch the tree passes through; the others have none.
    pub masks: BTreeMap<NodeId, PortMask>,
    /// The members some branch stopped short of, in the order the branches met them.
    pub unreached: Vec<Unreached>,
}

/// A spanning tree of the switches that the tree of every MLID is a part of, as a routing
/// chose it: torus-2QoS's master tree (`torus_master_stree`, `osm_torus.c:9117`), laid so that
/// multicast cannot close a credit loop with the unicast routes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterTree {
    /// The NodeGUID of the switch at its root.
    pub root: u64,
    /// By switch NodeGUID, its branches: the ports of its links to a child (parallel links,
    /// of which each MLID takes one) and the child's NodeGUID.
    pub branches: BTreeMap<u64, Vec<(Vec<u8>, u64)>>,
}

/// A member port and where it hangs: the switch slot that is it or that it is attached to, and
/// the port of that switch it is reached by (0 for the switch itself); `None` for a CA port
/// linked to no switch.
#[derive(Debug, Clone, Copy)]
struct Member {
    port: PortRef,
    home: Option<(usize, u8)>,
}

/// A fabric's switches as multicast routing sees them: hop counts between them and which do
/// multicast. Built once per topology, it gives the tree of any set of members.
#[derive(Debug)]
pub struct MulticastRouting<'t> {
    topo: &'t Topology,
    graph: SwitchGraph,
    /// `hops[t][s]`: the least hop count from switch slot `s` to switch slot `t`.
    hops: Vec<Vec<u8>>,
    capable: Vec<bool>,
    /// Switch slots in OpenSM's switch table order.
    table_order: Vec<usize>,
    /// The spanning tree the routing chose, which every MLID's tree is a part of.
    master: Option<MasterTree>,
}

impl<'t> MulticastRouting<'t> {
    /// The switches of `topo` with min-hop hop counts; `multicast_capable` says which switches
    /// have a multicast forwarding table (SwitchInfo.MulticastFDBCap above 0).
    pub fn min_hop(
        topo: &'t Topology,
        multicast_capable: impl Fn(NodeId) -> bool,
    ) -> Result<Self, RoutingError> {
        topo.validate()?;
        let graph = SwitchGraph::new(topo);
        let hops = (0..graph.len())
            .map(|t| {
                let dist = graph.bfs(&[t], |_, _| true);
                dist.into_iter()
                    .map(|d| u8::try_from(d).unwrap_or(NO_PATH))
                    .collect()
            })
            .collect();
        let capable = graph.ids.iter().map(|&id| multicast_capable(id)).collect();
        let mut table_order: Vec<usize> = (0..graph.len()).collect();
        table_order.sort_by_key(|&s| Guid(graph.guid[s]).opensm_order());
        Ok(Self {
            topo,
            graph,
            hops,
            capable,
            table_order,
            master: None,
        })
    }

    /// The same switches, every MLID's tree taken from `master` when the routing gave one.
    pub fn within(self, master: Option<&MasterTree>) -> Self {
        Self {
            master: master.cloned(),
            ..self
        }
    }

    /// The tree of MLID `mlid`, whose members are `members`: the part of the routing's
    /// [`MasterTree`] that leads to them, else OpenSM's generic [`tree`](Self::tree).
    pub fn tree_for(
        &self,
        mlid: u16,
        members: &[PortRef],
    ) -> Result<MulticastTree, MulticastError> {
        let Some(master) = &self.master else {
            return self.tree(members);
        };
        let mut placed = BTreeMap::new();
        for &port in members {
            if let Some((slot, number)) = self.member(port)?.home {
                placed.insert(port, PortRef::new(self.graph.ids[slot], number));
            }
        }
        let homes: BTreeSet<PortRef> = placed.values().copied().collect();
        let mut tree = MulticastTree::default();
        if let Some(root) = self.topo.node_by_guid(master.root)
            && self.within_branch(master, &mut tree, mlid, &homes, root, 0)
        {
            tree.root = Some(root);
        }
        for (member, home) in placed {
            let reached = tree.masks.get(&home.node);
            if !reached.is_some_and(|mask| mask.contains(home.port)) {
                tree.unreached
                    .push(self.stopped_short(master, member, home.node));
            }
        }
        Ok(tree)
    }

    /// Where the branch of `master` toward `member`, on switch `home`, stopped: at the switch
    /// nearest the root on its way that does not do multicast; at `home` when it is not in the
    /// master tree or the tree's links are not the fabric's.
    fn stopped_short(&self, master: &MasterTree, member: PortRef, home: NodeId) -> Unreached {
        let parent: BTreeMap<u64, u64> = master
            .branches
            .iter()
            .flat_map(|(&parent, children)| children.iter().map(move |&(_, c)| (c, parent)))
            .collect();
        let guid_of = |id: NodeId| self.topo.node(id).map(|n| n.guid);
        let mut way = Vec::new();
        let mut at = guid_of(home);
        while let Some(guid) = at.filter(|g| !way.contains(g) && way.len() <= self.graph.len()) {
            way.push(guid);
            at = parent.get(&guid).copied();
        }
        let incapable = way.iter().rev().find_map(|&guid| {
            let id = self.topo.node_by_guid(guid)?;
            let slot = self.graph.slot_of(id)?;
            (!self.capable[slot]).then_some(id)
        });
        match incapable {
            Some(switch) => Unreached {
                member,
                switch,
                reason: UnreachedReason::NotMulticastCapable,
            },
            None => Unreached {
                member,
                switch: home,
                reason: UnreachedReason::NoPath,
            },
        }
    }

    /// `mcast_stree_branch`: whether the branch of `master` from switch `at` leads to a member
    /// of `homes` (a switch's port 0, or the switch port a member CA hangs off). Each switch
    /// that does forwards to its members and to the children whose branch does, by the port
    /// `mlid` picks among parallel links, and each such child back to it. A switch that does
    /// not do multicast ends its branch (OpenSM's ERR 4E3F), and so does a `depth` beyond the
    /// number of switches, which only a master tree with a loop reaches.
    fn within_branch(
        &self,
        master: &MasterTree,
        tree: &mut MulticastTree,
        mlid: u16,
        homes: &BTreeSet<PortRef>,
        at: NodeId,
        depth: usize,
    ) -> bool {
        let (Some(slot), Some(node)) = (self.graph.slot_of(at), self.topo.node(at)) else {
            return false;
        };
        if !self.capable[slot] || depth > self.graph.len() {
            return false;
        }
        let mut mask = PortMask::default();
        for (ports, child) in master.branches.get(&node.guid).into_iter().flatten() {
            let Some(&port) = ports.get(usize::from(mlid) % ports.len().max(1)) else {
                continue;
            };
            let peer = self.topo.peer(PortRef::new(at, port));
            let Some(peer) =
                peer.filter(|q| self.topo.node(q.node).map(|n| n.guid) == Some(*child))
            else {
                continue;
            };
            if self.within_branch(master, tree, mlid, homes, peer.node, depth + 1) {
                mask.insert(port);
                tree.masks.entry(peer.node).or_default().insert(peer.port);
            }
        }
        let on_this_switch = PortRef::new(at, 0)..=PortRef::new(at, u8::MAX);
        homes
            .range(on_this_switch)
            .for_each(|home| mask.insert(home.port));
        if mask.is_empty() {
            return false;
        }
        *tree.masks.entry(at).or_default() |= mask;
        true
    }

    /// The tree of an MLID whose members are `members` (CA or router ports, or switch port 0
    /// for a switch; repeats count once).
    pub fn tree(&self, members: &[PortRef]) -> Result<MulticastTree, MulticastError> {
        let members = members
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|&p| self.member(p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut tree = MulticastTree::default();
        if members.len() < 2 {
            return Ok(tree);
        }
        let root = self
            .root(&members)
            .ok_or(MulticastError::NoMulticastSwitch)?;
        tree.root = Some(self.graph.ids[root]);
        self.branch(&mut tree, root, members, 0, 0);
        Ok(tree)
    }

    fn member(&self, port: PortRef) -> Result<Member, MulticastError> {
        let node = self
            .topo
            .node(port.node)
            .filter(|n| n.port(port.port).is_some() && (!n.is_switch() || port.port == 0))
            .ok_or(MulticastError::NotAnEndport(port))?;
        let home = if node.is_switch() {
            self.graph.slot_of(port.node).map(|s| (s, 0))
        } else {
            let peer = self.topo.peer(port);
            peer.and_then(|q| Some((self.graph.slot_of(q.node)?, q.port)))
        };
        Ok(Member { port, home })
    }

    /// `mcast_mgr_find_optimal_switch`: the first capable switch in table order with the least
    /// largest hop count to the members' switches, one more toward a switch that is not itself
    /// a member (even when CAs on a member switch are members too, as OpenSM counts it); an
    /// unreachable switch counts as `NO_PATH` hops.
    fn root(&self, members: &[Member]) -> Option<usize> {
        let mut homes: BTreeMap<usize, bool> = BTreeMap::new();
        for (switch, port) in members.iter().filter_map(|m| m.home) {
            *homes.entry(switch).or_default() |= port == 0;
        }
        let largest = |s: usize| {
            homes
                .iter()
                .map(|(&t, &is_member)| u32::from(self.hops[t][s]) + u32::from(!is_member))
                .max()
                .unwrap_or(0)
        };
        let mut best: Option<(u32, usize)> = None;
        for &s in self.table_order.iter().filter(|&&s| self.capable[s]) {
            let hops = largest(s);
            if best.is_none_or(|(least, _)| hops < least) {
                best = Some((hops, s));
            }
        }
        best.map(|(_, s)| s)
    }

    /// `osm_switch_recommend_mcast_path` with existing entries ignored: the port of switch `at`
    /// toward `member`, `None` for no path.
    fn recommend(&self, at: usize, member: &Member) -> Option<u8> {
        let (home, port) = member.home?;
        if home == at {
            return Some(port);
        }
        let toward = &self.hops[home];
        let least = toward[at];
        if least == NO_PATH {
            return None;
        }
        self.graph.adj[at]
            .iter()
            .find(|&&(_, next)| toward[next] != NO_PATH && toward[next] + 1 == least)
            .map(|&(port, _)| port)
    }

    /// `mcast_mgr_branch`: the entry of switch `at`, reached at `depth` (the root's caller
    /// passes 0) through its port `upstream`, toward `members`, then the branches below it.
    fn branch(
        &self,
        tree: &mut MulticastTree,
        at: usize,
        members: Vec<Member>,
        depth: u8,
        upstream: u8,
    ) {
        let depth = depth + 1;
        let switch = self.graph.ids[at];
        let stop = if depth >= MAX_DEPTH {
            Some(UnreachedReason::TooDeep)
        } else if !self.capable[at] {
            Some(UnreachedReason::NotMulticastCapable)
        } else {
            None
        };
        let unreached = |member: &Member, reason| Unreached {
            member: member.port,
            switch,
            reason,
        };
        if let Some(reason) = stop {
            tree.unreached
                .extend(members.iter().map(|m| unreached(m, reason)));
            return;
        }
        let mut by_port: BTreeMap<u8, Vec<Member>> = BTreeMap::new();
        for member in members {
            match self.recommend(at, &member) {
                Some(port) => by_port.entry(port).or_default().push(member),
                None => tree
                    .unreached
                    .push(unreached(&member, UnreachedReason::NoPath)),
            }
        }
        let mut mask: PortMask = by_port.keys().copied().collect();
        if depth > 1 {
            mask.insert(upstream);
        }
        if !mask.is_empty() {
            // OpenSM adds to the switch's table (osm_mcast_tbl_set).
            *tree.masks.entry(switch).or_default() |= mask;
        }
        for (port, members) in by_port {
            let next = self
                .topo
                .peer(PortRef::new(switch, port))
                .and_then(|peer| Some((self.graph.slot_of(peer.node)?, peer.port)));
            // Port 0 (never linked) and a port to a CA are leaves: their members are reached.
            if let Some((next, upstream)) = next {
                self.branch(tree, next, members, depth, upstream);
            }
        }
    }
}

/// One MFT block to Set: 32 MLIDs of one position of one switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MftBlock {
    pub switch: NodeId,
    pub modifier: MftModifier,
    pub table: MulticastForwardingTableRepr,
}

/// Every switch's multicast forwarding table as OpenSM programs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mfts {
    /// SwitchInfo.MulticastFDBTop of every switch: the last MLID of its highest block with an
    /// entry, 0xBFFF for a switch without entries (`mcast_mgr_set_mfttop`).
    pub tops: BTreeMap<NodeId, u16>,
    /// The blocks, in the order OpenSM sends them.
    pub blocks: Vec<MftBlock>,
}

/// The MFT blocks of every switch of `topo` once the MLIDs of `trees` are routed, striped as
/// `mcast_mgr_set_mftables` sends them: block 0 first, of it position 0 of every switch in
/// switch table order, then position 1 of every switch with ports there, and so on; then
/// block 1. A switch gets every position (`⌈(NumPorts + 1) / 16⌉`, port 0 included) of every
/// block up to its highest with an entry, the empty ones too.
///
/// OpenSM's highest block only grows while it knows the switch: when MLIDs above a switch's
/// current entries were routed through it before, OpenSM still sends (empty) blocks and a top
/// up to them; these tables are those of a first routing.
pub fn mft_blocks<'a>(
    topo: &Topology,
    trees: impl IntoIterator<Item = (u16, &'a MulticastTree)>,
) -> Result<Mfts, MulticastError> {
    let mut tables: BTreeMap<(NodeId, MftModifier), MulticastForwardingTableRepr> = BTreeMap::new();
    let mut tops: BTreeMap<NodeId, u16> = topo
        .switches()
        .map(|(id, _)| (id, MftModifier::FIRST_MLID - 1))
        .collect();
    for (mlid, tree) in trees {
        for (&switch, mask) in &tree.masks {
            let num_ports = topo
                .node(switch)
                .filter(|n| n.is_switch())
                .map(Node::num_ports);
            if let Some(port) = mask.ports().find(|&p| num_ports.is_none_or(|n| p > n)) {
                return Err(MulticastError::NotASwitchPort(PortRef::new(switch, port)));
            }
            for position in 0..=MftModifier::MAX_POSITION {
                let bits = mask.position(position);
                if bits == 0 {
                    continue;
                }
                let first_port = position * MftModifier::PORTS_PER_POSITION;
                let modifier = MftModifier::containing(mlid, first_port)
                    .ok_or(MulticastError::NotMulticast(mlid))?;
                let table = tables.entry((switch, modifier)).or_default();
                table.port_masks[usize::from(mlid - modifier.first_mlid())] |= bits;
                if let Some(top) = tops.get_mut(&switch) {
                    let last_mlid = modifier.first_mlid() + (MftModifier::MLIDS_PER_BLOCK - 1);
                    *top = last_mlid.max(*top);
                }
            }
        }
    }
    let mut switches: Vec<(u64, NodeId, u8)> = topo
        .switches()
        .map(|(id, node)| (Guid(node.guid).opensm_order(), id, node.num_ports()))
        .collect();
    switches.sort_unstable();
    let highest_top = tops.values().copied().max().unwrap_or(0);
    let most_ports = switches.iter().map(|&(_, _, n)| n).max().unwrap_or(0);
    let mut blocks = Vec::new();
    let block_mlids =
        (MftModifier::FIRST_MLID..=highest_top).step_by(usize::from(MftModifier::MLIDS_PER_BLOCK));
    for block_mlid in block_mlids {
        let first_ports = (0..=most_ports).step_by(usize::from(MftModifier::PORTS_PER_POSITION));
        for first_port in first_ports {
            for &(_, switch, num_ports) in &switches {
                let in_use = tops.get(&switch).is_some_and(|&top| top >= block_mlid);
                let modifier = MftModifier::containing(block_mlid, first_port);
                if let Some(modifier) = modifier.filter(|_| in_use && first_port <= num_ports) {
                    let table = tables.get(&(switch, modifier)).copied().unwrap_or_default();
                    blocks.push(MftBlock {
                        switch,
                        modifier,
                        table,
                    });
                }
            }
        }
    }
    Ok(Mfts { tops, blocks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;
    use crate::routing::testing::{add, link};
    use crate::topology::NodeKind;

    fn id(t: &Topology, name: &str) -> NodeId {
        t.node_by_name(name).unwrap()
    }

    /// Port 1 of CA `name`, or port 0 of switch `name`.
    fn endport(t: &Topology, name: &str) -> PortRef {
        let node = id(t, name);
        PortRef::new(node, u8::from(!t.node(node).unwrap().is_switch()))
    }

    fn tree_of(t: &Topology, members: &[&str]) -> MulticastTree {
        let members: Vec<PortRef> = members.iter().map(|m| endport(t, m)).collect();
        MulticastRouting::min_hop(t, |_| true)
            .unwrap()
            .tree(&members)
            .unwrap()
    }

    /// The entries as (switch name, ports), in node order.
    fn entries(t: &Topology, tree: &MulticastTree) -> Vec<(String, Vec<u8>)> {
        tree.masks
            .iter()
            .map(|(&s, mask)| (t.node(s).unwrap().name.clone(), mask.ports().collect()))
            .collect()
    }

    fn expect(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
        pairs
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_vec()))
            .collect()
    }

    #[test]
    fn port_masks_hold_ports_by_position() {
        let mask: PortMask = [0, 15, 16, 255].into_iter().collect();
        assert_eq!(mask.ports().collect::<Vec<_>>(), [0, 15, 16, 255]);
        assert!(mask.contains(16) && !mask.contains(17));
        assert_eq!(mask.position(0), 0x8001);
        assert_eq!(mask.position(1), 0x0001);
        assert_eq!(mask.position(15), 0x8000);
        assert_eq!(mask.position(16), 0);
        assert!(PortMask::default().is_empty() && !mask.is_empty());
        let mut more: PortMask = [1, 16].into_iter().collect();
        more |= mask;
        assert_eq!(more.ports().collect::<Vec<_>>(), [0, 1, 15, 16, 255]);
    }

    /// One 4-port switch S with H1-H4 on ports 1-4. Its only switch is the root of every tree,
    /// and each member is on a port of it.
    fn star() -> Topology {
        let mut t = Topology::new();
        let s = add(&mut t, NodeKind::Switch, 0x1000, "S", 4);
        for p in 1..=4 {
            let h = add(
                &mut t,
                NodeKind::Ca,
                0x10 * u64::from(p),
                &format!("H{p}"),
                1,
            );
            link(&mut t, s, p, h, 1);
        }
        t
    }

    #[test]
    fn a_star_forwards_to_the_members_ports() {
        let t = star();
        let tree = tree_of(&t, &["H1", "H3"]);
        assert_eq!(tree.root, Some(id(&t, "S")));
        assert_eq!(entries(&t, &tree), expect(&[("S", &[1, 3])]));
        assert!(tree.unreached.is_empty());
        // The switch itself as a member: port 0.
        let tree = tree_of(&t, &["S", "H4"]);
        assert_eq!(entries(&t, &tree), expect(&[("S", &[0, 4])]));
    }

    /// Fewer than two member ports, a repeat counting once: no tree, no entries
    /// (`mcast_mgr_build_spanning_tree`).
    #[test]
    fn fewer_than_two_members_route_nothing() {
        let t = star();
        for members in [&[][..], &["H2"], &["H2", "H2"]] {
            assert_eq!(tree_of(&t, members), MulticastTree::default());
        }
    }

    #[test]
    fn bad_members_and_no_multicast_switch_are_errors() {
        let t = star();
        let s = id(&t, "S");
        let routing = MulticastRouting::min_hop(&t, |_| true).unwrap();
        let h1 = endport(&t, "H1");
        for bad in [PortRef::new(s, 2), PortRef::new(id(&t, "H1"), 2)] {
            assert_eq!(
                routing.tree(&[h1, bad]),
                Err(MulticastError::NotAnEndport(bad))
            );
        }
        let none = MulticastRouting::min_hop(&t, |_| false).unwrap();
        assert_eq!(
            none.tree(&[h1, endport(&t, "H2")]),
            Err(MulticastError::NoMulticastSwitch)
        );
    }

    /// Switches A (GUID 0x100) and B (GUID 0x1, created first) joined by two crossed links, A
    /// port 3 to B port 4 and A port 4 to B port 3, with HA on A port 1 and HB on B port 1.
    ///
    /// Both switches are 2 hops from the farther member (1 to the other switch, 1 to its CA),
    /// so the tie goes to the first in OpenSM's switch table: A, whose byte-swapped GUID
    /// (0x0001_0000_0000_0000) is below B's (0x0100_0000_0000_0000), although B comes first by
    /// GUID and by creation. From A, HB is behind ports 3 and 4 alike: the first, 3, which
    /// enters B at port 4, B's upstream port. Rooted at B the ports would be the other way.
    #[test]
    fn ties_go_to_the_first_switch_in_opensm_table_order() {
        let mut t = Topology::new();
        let b = add(&mut t, NodeKind::Switch, 0x1, "B", 4);
        let a = add(&mut t, NodeKind::Switch, 0x100, "A", 4);
        let ha = add(&mut t, NodeKind::Ca, 0x1000, "HA", 1);
        let hb = add(&mut t, NodeKind::Ca, 0x2000, "HB", 1);
        link(&mut t, a, 3, b, 4);
        link(&mut t, a, 4, b, 3);
        link(&mut t, a, 1, ha, 1);
        link(&mut t, b, 1, hb, 1);
        let tree = tree_of(&t, &["HA", "HB"]);
        assert_eq!(tree.root, Some(a));
        assert_eq!(
            entries(&t, &tree),
            expect(&[("B", &[1, 4]), ("A", &[1, 3])])
        );
    }

    /// `generate::fat_tree(4, 2, 2, 8)`: leaves L0-L3 (GUIDs 0x200000-3) with hosts Hl_0, Hl_1
    /// on ports 1, 2 and uplinks port 3 to S0, port 4 to S1; spines S0, S1 (0x200004-5) reach
    /// leaf l on port l + 1. Table order is GUID order here: L0, L1, L2, L3, S0, S1. A leaf is
    /// 2 hops from another leaf, a spine 1 from every leaf.
    fn fat_tree() -> Topology {
        generate::fat_tree(4, 2, 2, 8).unwrap()
    }

    /// Members H0_0, H0_1 (on L0) and H1_0 (on L1). Largest hop counts: each leaf 3 (2 hops
    /// to the other leaf, 1 more to its CA), each spine 2: S0 comes first. S0 sends L0's
    /// members out of port 1 and L1's out of port 2; L0 and L1 add their upstream port 3.
    #[test]
    fn a_fat_tree_roots_at_the_first_spine() {
        let t = fat_tree();
        let tree = tree_of(&t, &["H0_0", "H0_1", "H1_0"]);
        assert_eq!(tree.root, Some(id(&t, "S0")));
        assert_eq!(
            entries(&t, &tree),
            expect(&[("L0", &[1, 2, 3]), ("L1", &[1, 3]), ("S0", &[1, 2])])
        );
    }

    /// Members H0_0, the switch L2 itself and H3_1. Largest hop counts: leaves 3, spines 2
    /// (1 to L2, a member, and 1 + 1 to the CAs): root S0. L2 takes port 0 for itself, below
    /// its upstream port 3; H3_1 is on L3 port 2.
    #[test]
    fn a_member_switch_takes_port_0() {
        let t = fat_tree();
        let tree = tree_of(&t, &["H0_0", "L2", "H3_1"]);
        assert_eq!(tree.root, Some(id(&t, "S0")));
        assert_eq!(
            entries(&t, &tree),
            expect(&[
                ("L0", &[1, 3]),
                ("L2", &[0, 3]),
                ("L3", &[2, 3]),
                ("S0", &[1, 3, 4])
            ])
        );
    }

    /// Members all on L2: L2 is 1 hop from them, every other switch more, so the tree is L2
    /// alone, without an upstream port.
    #[test]
    fn members_on_one_leaf_stay_on_it() {
        let t = fat_tree();
        let tree = tree_of(&t, &["H2_0", "H2_1"]);
        assert_eq!(tree.root, Some(id(&t, "L2")));
        assert_eq!(entries(&t, &tree), expect(&[("L2", &[1, 2])]));
    }

    /// Members L0 itself, H0_0 on L0 and H1_0 on L1. OpenSM adds the CA's extra hop only
    /// toward a switch that is not a member, so H0_0 costs nothing beyond L0: L1's largest
    /// count is 2 (to L0), equal to the spines' (1 to L0, 1 + 1 to H1_0), and L1 comes first
    /// in table order. (Counting H0_0's hop would make L1's 3 and root the tree at S0.)
    /// From L1, L0 is 2 hops behind ports 3 and 4: port 3, to S0, which enters at its port 2
    /// and leaves by port 1 to L0, entering at L0 port 3.
    #[test]
    fn a_ca_on_a_member_switch_adds_no_hop() {
        let t = fat_tree();
        let tree = tree_of(&t, &["L0", "H0_0", "H1_0"]);
        assert_eq!(tree.root, Some(id(&t, "L1")));
        assert_eq!(
            entries(&t, &tree),
            expect(&[("L0", &[0, 1, 3]), ("L1", &[1, 3]), ("S0", &[1, 2])])
        );
    }

    /// A line of 128 switches S0-S127 (port 1 to the previous, port 2 to the next; GUIDs
    /// 0x1000 + i) with HA on S0 and HZ on S127. S63 and S64 are both 65 hops from the farther
    /// CA and S63 (last GUID byte 0x3F) comes first. The root is at depth 1, so S0 (63 hops
    /// away) is at depth 64 and S126 too: OpenSM abandons both branches there (ERR 0A21),
    /// leaving S1-S125 forwarding between ports 1 and 2 and neither CA reached.
    #[test]
    fn branches_stop_at_depth_64() {
        let mut t = Topology::new();
        let line: Vec<NodeId> = (0..128)
            .map(|i| add(&mut t, NodeKind::Switch, 0x1000 + i, &format!("S{i}"), 3))
            .collect();
        for pair in line.windows(2) {
            link(&mut t, pair[0], 2, pair[1], 1);
        }
        let ha = add(&mut t, NodeKind::Ca, 0x10, "HA", 1);
        let hz = add(&mut t, NodeKind::Ca, 0x20, "HZ", 1);
        link(&mut t, line[0], 3, ha, 1);
        link(&mut t, line[127], 3, hz, 1);
        let tree = tree_of(&t, &["HA", "HZ"]);
        assert_eq!(tree.root, Some(line[63]));
        let forwarding: Vec<NodeId> = tree.masks.keys().copied().collect();
        assert_eq!(forwarding, line[1..=125]);
        assert!(tree.masks.values().all(|m| m.ports().eq([1, 2])));
        let too_deep = |member, switch| Unreached {
            member: PortRef::new(member, 1),
            switch,
            reason: UnreachedReason::TooDeep,
        };
        assert_eq!(
            tree.unreached,
            [too_deep(ha, line[0]), too_deep(hz, line[126])]
        );
    }

    /// A switch without multicast stops the branch into it: the fat tree with S0 unable, so
    /// S1 (the next spine) is the root of H0_0 and H1_0; with both spines unable, L0 is (first
    /// of the leaves, all 3 hops from the farther CA), its port 3 leads into S0, which drops
    /// H1_0 (ERR 0A14) and gets no entry.
    #[test]
    fn a_switch_without_multicast_stops_its_branch() {
        let t = fat_tree();
        let members = [endport(&t, "H0_0"), endport(&t, "H1_0")];
        let spines = [id(&t, "S0"), id(&t, "S1")];
        let routing = MulticastRouting::min_hop(&t, |s| s != spines[0]).unwrap();
        let tree = routing.tree(&members).unwrap();
        assert_eq!(tree.root, Some(spines[1]));
        assert_eq!(
            entries(&t, &tree),
            expect(&[("L0", &[1, 4]), ("L1", &[1, 4]), ("S1", &[1, 2])])
        );
        let routing = MulticastRouting::min_hop(&t, |s| !spines.contains(&s)).unwrap();
        let tree = routing.tree(&members).unwrap();
        assert_eq!(tree.root, Some(id(&t, "L0")));
        assert_eq!(entries(&t, &tree), expect(&[("L0", &[1, 3])]));
        assert_eq!(
            tree.unreached,
            [Unreached {
                member: members[1],
                switch: spines[0],
                reason: UnreachedReason::NotMulticastCapable
            }]
        );
    }

    /// Switches A (GUID 0x1, 20 ports: positions 0 and 1), B (0x100, 8 ports) and C (0x200, 4
    /// ports, no entries). Table order by byte-swapped GUID: B, C, A. Entries: 0xC000 on A
    /// ports 0 and 17, 0xC001 on B port 1, 0xC041 (block 2) on A port 3.
    ///
    /// Tops: A's highest block is 2, so 0xC000 + 3 * 32 - 1 = 0xC05F; B's 0xC01F; C's 0xBFFF.
    /// Blocks: block 0 position 0 of B then A, block 0 position 1 of A (B has no port 16),
    /// then blocks 1 and 2 of A alone, both positions, block 1 empty.
    #[test]
    fn mft_blocks_stripe_block_by_block_in_table_order() {
        let mut t = Topology::new();
        let a = add(&mut t, NodeKind::Switch, 0x1, "A", 20);
        let b = add(&mut t, NodeKind::Switch, 0x100, "B", 8);
        let c = add(&mut t, NodeKind::Switch, 0x200, "C", 4);
        let tree = |masks: &[(NodeId, &[u8])]| MulticastTree {
            masks: masks
                .iter()
                .map(|(s, ports)| (*s, ports.iter().copied().collect()))
                .collect(),
            ..MulticastTree::default()
        };
        let trees = [
            (0xc000, tree(&[(a, &[0, 17])])),
            (0xc001, tree(&[(b, &[1])])),
            (0xc041, tree(&[(a, &[3])])),
        ];
        let mfts = mft_blocks(&t, trees.iter().map(|(m, t)| (*m, t))).unwrap();
        assert_eq!(
            mfts.tops,
            BTreeMap::from([(a, 0xc05f), (b, 0xc01f), (c, 0xbfff)])
        );
        let block = |switch, block, position, entries: &[(usize, u16)]| {
            let mut table = MulticastForwardingTableRepr::default();
            for &(i, mask) in entries {
                table.port_masks[i] = mask;
            }
            MftBlock {
                switch,
                modifier: MftModifier::new(block, position).unwrap(),
                table,
            }
        };
        assert_eq!(
            mfts.blocks,
            [
                block(b, 0, 0, &[(1, 0x0002)]),
                block(a, 0, 0, &[(0, 0x0001)]),
                block(a, 0, 1, &[(0, 0x0002)]),
                block(a, 1, 0, &[]),
                block(a, 1, 1, &[]),
                block(a, 2, 0, &[(1, 0x0008)]),
                block(a, 2, 1, &[]),
            ]
        );

        let past_c = tree(&[(c, &[5])]);
        assert_eq!(
            mft_blocks(&t, [(0xc000, &past_c)]),
            Err(MulticastError::NotASwitchPort(PortRef::new(c, 5)))
        );
        let unicast = tree(&[(c, &[1])]);
        assert_eq!(
            mft_blocks(&t, [(0xbfff, &unicast)]),
            Err(MulticastError::NotMulticast(0xbfff))
        );
        assert_eq!(mft_blocks(&t, []).unwrap().blocks, []);
    }

    /// A master tree's part for the members, picking among parallel links by MLID; a master
    /// tree that loops (no engine makes one) ends at the depth of the switch count, not in a
    /// stack overflow.
    #[test]
    fn trees_within_a_master_tree() {
        let t = generate::ring(3, 1).unwrap();
        let guid = |name| t.node(id(&t, name)).unwrap().guid;
        // S0's port 2 leads to S1, S1's port 2 to S2.
        let chain = MasterTree {
            root: guid("S0"),
            branches: BTreeMap::from([
                (guid("S0"), vec![(vec![2], guid("S1"))]),
                (guid("S1"), vec![(vec![2], guid("S2"))]),
            ]),
        };
        let routing = MulticastRouting::min_hop(&t, |_| true)
            .unwrap()
            .within(Some(&chain));
        let tree = routing.tree_for(0xc000, &[endport(&t, "H2_0")]).unwrap();
        assert_eq!(tree.root, Some(id(&t, "S0")));
        assert_eq!(
            entries(&t, &tree),
            expect(&[("S0", &[2]), ("S1", &[1, 2]), ("S2", &[1, 3])])
        );
        let looped = MasterTree {
            root: guid("S0"),
            branches: BTreeMap::from([
                (guid("S0"), vec![(vec![2], guid("S1"))]),
                (guid("S1"), vec![(vec![1], guid("S0"))]),
            ]),
        };
        let routing = MulticastRouting::min_hop(&t, |_| true)
            .unwrap()
            .within(Some(&looped));
        let tree = routing.tree_for(0xc000, &[endport(&t, "H0_0")]).unwrap();
        assert_eq!(tree.root, Some(id(&t, "S0")));
        // A member past a switch without multicast, and one off the master tree, are said.
        let routing = MulticastRouting::min_hop(&t, |s| s != id(&t, "S1"))
            .unwrap()
            .within(Some(&MasterTree {
                branches: BTreeMap::from([(guid("S0"), vec![(vec![2], guid("S1"))])]),
                ..chain
            }));
        let members = [
            endport(&t, "H0_0"),
            endport(&t, "H1_0"),
            endport(&t, "H2_0"),
        ];
        let tree = routing.tree_for(0xc000, &members).unwrap();
        assert_eq!(entries(&t, &tree), expect(&[("S0", &[3])]));
        let unreached = |name, switch, reason| Unreached {
            member: endport(&t, name),
            switch: id(&t, switch),
            reason,
        };
        assert_eq!(
            tree.unreached,
            [
                unreached("H1_0", "S1", UnreachedReason::NotMulticastCapable),
                unreached("H2_0", "S2", UnreachedReason::NoPath),
            ]
        );
    }
}
