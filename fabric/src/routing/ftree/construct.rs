//! The tree OpenSM's `construct_fabric` builds before it routes, and its refusals: ranks,
//! port groups, leaves, tuples, and the checks that the fabric is a fat tree.

use std::collections::{HashMap, VecDeque};

use ibqos_mad::Guid;

use super::{Ca, Group, Link, Remote, Switch, TUPLE_LEN, Tree, Tuple, UNASSIGNED};
use super::{PerLid, tuple_text};
use crate::routing::{RoutingError, RoutingOptions, SwitchGraph, destinations};
use crate::topology::{NodeId, NodeKind, PortRef, Topology};

/// `FAT_TREE_MIN_RANK` and `FAT_TREE_MAX_RANK`: a tree of one level routes trivially, and a
/// tuple has room for eight.
const TREE_RANKS: std::ops::RangeInclusive<u32> = 2..=8;

/// Where a switch's neighbour sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Down,
    Sibling,
    Up,
}

fn refuse(reason: impl Into<String>) -> RoutingError {
    RoutingError::Refused(reason.into())
}

/// The node tables, indexed by node index: the switch or CA each node is.
struct Slots {
    switch: Vec<Option<usize>>,
    ca: Vec<Option<usize>>,
}

impl Slots {
    fn switch(&self, node: NodeId) -> Option<usize> {
        self.switch.get(node.index()).copied().flatten()
    }

    fn ca(&self, node: NodeId) -> Option<usize> {
        self.ca.get(node.index()).copied().flatten()
    }
}

impl Tree {
    /// The tree of `topo`, or OpenSM's reason for not routing it with ftree.
    pub(super) fn construct(
        topo: &Topology,
        options: &RoutingOptions,
    ) -> Result<Tree, RoutingError> {
        topo.validate()?;
        // The LID checks every engine makes.
        destinations(topo, &SwitchGraph::new(topo), options)?;
        let endports = || topo.endports().filter_map(|ep| topo.port(ep));
        if endports().any(|p| p.lmc > 0) {
            return Err(refuse("LMC > 0 is not supported by fat-tree routing"));
        }
        let switch_count = topo.switches().count();
        if switch_count < 2 {
            return Err(refuse(format!(
                "Fabric has {switch_count} switches - topology is not fat-tree"
            )));
        }
        if topo.len() - switch_count < 2 {
            return Err(refuse(format!(
                "Fabric has {} nodes ({switch_count} switches) - topology is not fat-tree",
                topo.len()
            )));
        }
        check_guid_list(options.cn_guids.as_deref(), "AB27: Compute node")?;
        check_guid_list(options.io_guids.as_deref(), "AB29: I/O node")?;
        let mut switches: Vec<Switch> = table(topo.switches().filter(|(_, n)| n.num_ports() > 0))
            .map(|(node, guid)| {
                let lid = topo.port(PortRef::new(node, 0)).map_or(0, |p| p.lid);
                Switch::new(node, guid, lid)
            })
            .collect();
        let ca_nodes: Vec<NodeId> = table(topo.cas()).map(|(node, _)| node).collect();
        let mut cas = vec![Ca::default(); ca_nodes.len()];
        if cas.len() < 2 {
            return Err(refuse(format!(
                "Fabric has {} CAs - topology is not fat-tree",
                cas.len()
            )));
        }
        let mut slots = Slots::new(topo, &switches, &ca_nodes);
        let max_rank = rank(topo, &slots, &mut switches, &ca_nodes, options)?;
        disconnect_unranked(topo, &slots, &switches, &mut cas);
        switches.retain(|sw| sw.rank.is_some());
        slots = Slots::new(topo, &switches, &ca_nodes);
        if max_rank == 0 && switches.len() > 1 {
            return Err(refuse(
                "ERR AB2B: Found more than one root on fabric with maximum rank 0",
            ));
        }
        let mut tree = Tree {
            lfts: PerLid::new(switches.len(), max_lid(topo)),
            hops: PerLid::new(switches.len(), max_lid(topo)),
            switches,
            cas,
            groups: Vec::new(),
            by_tuple: HashMap::new(),
            leaf_rank: 0,
            leaves: Vec::new(),
            max_cn_per_leaf: 0,
            max_lid: max_lid(topo),
            ends: Vec::new(),
        };
        tree.add_ca_ports(topo, &slots, &ca_nodes, options)?;
        tree.add_switch_ports(topo, &slots);
        if tree.cas.iter().all(|ca| ca.cns == 0) {
            return Err(refuse("Fabric has no valid compute nodes"));
        }
        tree.leaf_rank = match options.root_guids {
            // The rank of the switch the first compute node hangs off.
            Some(_) => tree
                .cas
                .iter()
                .flat_map(|ca| &ca.groups)
                .map(|&g| &tree.groups[g])
                .find(|g| g.is_cn)
                .and_then(|g| tree.remote_switch(g))
                .and_then(|s| tree.switches[s].rank)
                .unwrap_or(0),
            None => max_rank,
        };
        let tree_rank = tree.leaf_rank + 1;
        if !TREE_RANKS.contains(&tree_rank) {
            return Err(refuse(format!(
                "Fabric rank is {tree_rank} (should be between {} and {})",
                TREE_RANKS.start(),
                TREE_RANKS.end()
            )));
        }
        tree.mark_leaves()?;
        tree.index();
        tree.collect_leaves()?;
        tree.max_cn_per_leaf = tree
            .leaves
            .iter()
            .map(|&s| tree.cns_on(s))
            .max()
            .unwrap_or(0);
        if options.root_guids.is_none() {
            tree.validate()?;
        }
        Ok(tree)
    }

    /// The switch a group leads to, `None` for a CA.
    pub(super) fn remote_switch(&self, group: &Group) -> Option<usize> {
        match group.remote {
            Remote::Switch(s) => Some(s),
            Remote::Ca(_) => None,
        }
    }

    /// Groups every CA port linked to a switch of the tree, and marks the compute nodes (every
    /// port without a CN file, else those it lists) and I/O nodes.
    fn add_ca_ports(
        &mut self,
        topo: &Topology,
        slots: &Slots,
        ca_nodes: &[NodeId],
        options: &RoutingOptions,
    ) -> Result<(), RoutingError> {
        for (c, &node) in ca_nodes.iter().enumerate() {
            let Some(n) = topo.node(node) else { continue };
            for (p, port) in n.existing_ports() {
                let Some(peer) = port.peer else { continue };
                if self.cas[c].disconnected.contains(&p) {
                    continue;
                }
                let Some(remote) = topo.node(peer.node) else {
                    continue;
                };
                match remote.kind {
                    NodeKind::Router => continue,
                    NodeKind::Ca => {
                        return Err(refuse(format!(
                            "ERR AB11: CA connected directly to another CA: 0x{:016x} <---> 0x{:016x}",
                            n.guid, remote.guid
                        )));
                    }
                    NodeKind::Switch => {}
                }
                let Some(s) = slots.switch(peer.node) else {
                    continue;
                };
                let in_cn_file = options.cn_guids.as_ref().map(|g| g.contains(&port.guid));
                let is_io = in_cn_file != Some(true)
                    && options
                        .io_guids
                        .as_ref()
                        .is_some_and(|g| g.contains(&port.guid));
                let is_cn = in_cn_file.unwrap_or(true) && !is_io;
                if is_cn {
                    self.cas[c].cns += 1;
                }
                // A second port with the same LID is logged and left out (ERR AB32).
                if self.cas[c]
                    .groups
                    .iter()
                    .any(|&g| self.groups[g].lid == port.lid)
                {
                    continue;
                }
                let group = self.groups.len();
                self.groups.push(Group {
                    lid: port.lid,
                    remote_lid: self.switches[s].lid,
                    port_guid: port.guid,
                    remote: Remote::Switch(s),
                    links: vec![Link::new(p, peer.port)],
                    is_cn,
                    is_io,
                    counter_up: 0,
                    counter_down: 0,
                });
                self.cas[c].groups.push(group);
            }
        }
        Ok(())
    }

    /// Groups every switch's linked ports by neighbour: CAs and lower-ranked switches down,
    /// higher-ranked up, equal-ranked siblings. Loopbacks and routers are left out.
    fn add_switch_ports(&mut self, topo: &Topology, slots: &Slots) {
        for s in 0..self.switches.len() {
            let node = self.switches[s].node;
            let Some(n) = topo.node(node) else { continue };
            for (p, port) in n.existing_ports().filter(|(p, _)| *p != 0) {
                let Some(peer) = port.peer.filter(|peer| peer.node != node) else {
                    continue;
                };
                let (remote, direction, remote_lid) = if let Some(c) = slots.ca(peer.node) {
                    let lid = topo.port(peer).map_or(0, |q| q.lid);
                    (Remote::Ca(c), Direction::Down, lid)
                } else if let Some(r) = slots.switch(peer.node) {
                    let (mine, theirs) = (self.switches[s].rank, self.switches[r].rank);
                    let direction = match mine.cmp(&theirs) {
                        std::cmp::Ordering::Greater => Direction::Up,
                        std::cmp::Ordering::Equal => Direction::Sibling,
                        std::cmp::Ordering::Less => Direction::Down,
                    };
                    (Remote::Switch(r), direction, self.switches[r].lid)
                } else {
                    continue;
                };
                self.add_switch_link(s, direction, remote, remote_lid, Link::new(p, peer.port));
            }
        }
    }

    fn add_switch_link(
        &mut self,
        s: usize,
        direction: Direction,
        remote: Remote,
        remote_lid: u16,
        link: Link,
    ) {
        let sw = &self.switches[s];
        let list = match direction {
            Direction::Down => &sw.down,
            Direction::Sibling => &sw.sibling,
            Direction::Up => &sw.up,
        };
        let found = list
            .iter()
            .copied()
            .find(|&g| self.groups[g].remote_lid == remote_lid);
        let (lid, guid) = (sw.lid, sw.guid);
        let group = found.unwrap_or_else(|| {
            let g = self.groups.len();
            self.groups.push(Group {
                lid,
                remote_lid,
                port_guid: guid,
                remote,
                links: Vec::new(),
                is_cn: false,
                is_io: false,
                counter_up: 0,
                counter_down: 0,
            });
            let sw = &mut self.switches[s];
            sw.down_to_cas += usize::from(matches!(remote, Remote::Ca(_)));
            match direction {
                Direction::Down => sw.down.push(g),
                Direction::Sibling => sw.sibling.push(g),
                Direction::Up => sw.up.push(g),
            }
            g
        });
        let links = &mut self.groups[group].links;
        if links.iter().all(|l| l.port != link.port) {
            links.push(link);
        }
    }

    /// Marks the switches compute nodes hang off as leaves; all must sit at the leaf rank.
    fn mark_leaves(&mut self) -> Result<(), RoutingError> {
        for c in 0..self.cas.len() {
            for &g in &self.cas[c].groups {
                let group = &self.groups[g];
                let Some(s) = self.remote_switch(group).filter(|_| group.is_cn) else {
                    continue;
                };
                let sw = &mut self.switches[s];
                if sw.is_leaf {
                    continue;
                }
                sw.is_leaf = true;
                if sw.rank != Some(self.leaf_rank) {
                    return Err(refuse(format!(
                        "ERR AB26: CN port 0x{:x} is connected to switch 0x{:x} with rank {}, \
                         while FatTree leaf rank is {}",
                        group.port_guid,
                        sw.guid,
                        sw.rank.unwrap_or(u32::MAX),
                        self.leaf_rank
                    )));
                }
            }
        }
        Ok(())
    }

    /// Gives every switch reachable from the first leaf (in GUID order) a tuple, breadth
    /// first, and sorts the down and up groups of each switch it passes by the remote tuple.
    fn index(&mut self) {
        let Some(first) = self.switches.iter().position(|sw| sw.is_leaf) else {
            return;
        };
        if self.leaf_rank as usize >= TUPLE_LEN {
            return;
        }
        let mut tuple = UNASSIGNED;
        tuple[0] = self.switches[first].rank.unwrap_or(0) as u8;
        for digit in tuple.iter_mut().skip(1).take(self.leaf_rank as usize) {
            *digit = 0;
        }
        self.assign_tuple(first, tuple);
        let first_is_root = self.switches[first].rank == Some(0);
        let mut queue = VecDeque::from([first]);
        while let Some(s) = queue.pop_front() {
            let rank = self.switches[s].rank.unwrap_or(0);
            if rank < self.leaf_rank {
                let down = self.switches[s].down.clone();
                for g in down {
                    self.index_neighbour(s, g, Direction::Down, &mut queue);
                }
                self.sort_by_remote_tuple(s, Direction::Down);
            }
            if rank != 0 && (!first_is_root || !self.switches[s].is_leaf) {
                let up = self.switches[s].up.clone();
                for g in up {
                    self.index_neighbour(s, g, Direction::Up, &mut queue);
                }
                self.sort_by_remote_tuple(s, Direction::Up);
            }
        }
    }

    fn index_neighbour(
        &mut self,
        s: usize,
        g: usize,
        direction: Direction,
        queue: &mut VecDeque<usize>,
    ) {
        let Some(r) = self.remote_switch(&self.groups[g]) else {
            return;
        };
        if self.switches[r].tuple != UNASSIGNED {
            return;
        }
        if let Some(tuple) = self.free_tuple(self.switches[s].tuple, direction) {
            self.assign_tuple(r, tuple);
        }
        queue.push_back(r);
    }

    fn assign_tuple(&mut self, s: usize, tuple: Tuple) {
        self.switches[s].tuple = tuple;
        self.by_tuple.insert(tuple, s);
    }

    /// OpenSM's `fabric_get_new_tuple`: one rank further in `direction`, the first free value
    /// of the digit that level varies; `None` when all 255 are taken.
    fn free_tuple(&self, from: Tuple, direction: Direction) -> Option<Tuple> {
        let mut tuple = from;
        let digit = if direction == Direction::Down {
            tuple[0] = tuple[0].wrapping_add(1);
            usize::from(from[0]) + 1
        } else {
            tuple[0] = tuple[0].wrapping_sub(1);
            usize::from(from[0])
        };
        if digit >= TUPLE_LEN {
            return None;
        }
        (0..0xFF).find_map(|value| {
            tuple[digit] = value;
            (!self.by_tuple.contains_key(&tuple)).then_some(tuple)
        })
    }

    fn sort_by_remote_tuple(&mut self, s: usize, direction: Direction) {
        let sw = &self.switches[s];
        let mut list = match direction {
            Direction::Down => sw.down.clone(),
            _ => sw.up.clone(),
        };
        list.sort_by_key(|&g| self.remote_tuple(g));
        let sw = &mut self.switches[s];
        match direction {
            Direction::Down => sw.down = list,
            _ => sw.up = list,
        }
    }

    /// The tuple of the switch a group leads to. OpenSM reads a CA's group as if it led to a
    /// switch; such groups (CAs below a switch above the leaves) sort last here.
    pub(super) fn remote_tuple(&self, g: usize) -> Tuple {
        self.remote_switch(&self.groups[g])
            .map_or(UNASSIGNED, |s| self.switches[s].tuple)
    }

    /// The leaf-rank switches in tuple order, from the first to the last with compute nodes;
    /// fewer than two such leaves is no fat tree.
    fn collect_leaves(&mut self) -> Result<(), RoutingError> {
        let mut level: Vec<usize> = (0..self.switches.len())
            .filter(|&s| self.switches[s].rank == Some(self.leaf_rank))
            .collect();
        level.sort_by_key(|&s| self.switches[s].tuple);
        let first = level.iter().position(|&s| self.switches[s].is_leaf);
        let last = level.iter().rposition(|&s| self.switches[s].is_leaf);
        match (first, last) {
            (Some(first), Some(last)) if first < last => {
                self.leaves = level[first..=last].to_vec();
                Ok(())
            }
            _ => Err(refuse(
                "Failed to find leaf switches - topology is not fat-tree",
            )),
        }
    }

    /// The compute-node ports hanging off switch `s`.
    fn cns_on(&self, s: usize) -> u32 {
        let count = self.switches[s]
            .down
            .iter()
            .filter(|&&g| self.ca_group(g).is_some_and(|cg| self.groups[cg].is_cn))
            .count();
        count as u32
    }

    /// For a switch's group toward a CA port, the CA's group of that port.
    pub(super) fn ca_group(&self, g: usize) -> Option<usize> {
        let group = &self.groups[g];
        let Remote::Ca(c) = group.remote else {
            return None;
        };
        self.cas[c]
            .groups
            .iter()
            .copied()
            .find(|&cg| self.groups[cg].lid == group.remote_lid)
    }

    /// OpenSM's `fabric_validate_topology`: per rank, every switch has as many up groups as
    /// the first of the rank, as many down groups (but at the leaves), and groups of the same
    /// size as the reference's first.
    fn validate(&self) -> Result<(), RoutingError> {
        let leaf_rank = self.leaf_rank;
        let mut reference: HashMap<u32, usize> = HashMap::new();
        for (s, sw) in self.switches.iter().enumerate() {
            let rank = sw.rank.unwrap_or(0);
            let Some(&r) = reference.get(&rank) else {
                reference.insert(rank, s);
                continue;
            };
            let refsw = &self.switches[r];
            if refsw.up.len() != sw.up.len() {
                return Err(self.differ(
                    "AB09",
                    "upward port groups",
                    "groups",
                    (r, refsw.up.len()),
                    (s, sw.up.len()),
                ));
            }
            if rank != leaf_rank && refsw.down.len() != sw.down.len() {
                return Err(self.differ(
                    "AB0A",
                    "downward port groups",
                    "port groups",
                    (r, refsw.down.len()),
                    (s, sw.down.len()),
                ));
            }
            if let Some(&first) = refsw.up.first() {
                let size = self.groups[first].links.len();
                if let Some(&g) = sw.up.iter().find(|&&g| self.groups[g].links.len() != size) {
                    let ports = self.groups[g].links.len();
                    return Err(self.differ(
                        "AB0B",
                        "ports in an upward port group",
                        "ports",
                        (r, size),
                        (s, ports),
                    ));
                }
            }
            // OpenSM compares the reference's first down group with this switch's first only.
            if let (Some(&mine), Some(&first)) = (sw.down.first(), refsw.down.first())
                && rank != leaf_rank
            {
                let (size, ports) = (
                    self.groups[first].links.len(),
                    self.groups[mine].links.len(),
                );
                if size != ports {
                    return Err(self.differ(
                        "AB0C",
                        "ports in an downward port group",
                        "ports",
                        (r, size),
                        (s, ports),
                    ));
                }
            }
        }
        Ok(())
    }

    /// OpenSM's message for switch `s` differing from `reference`, the first of its rank: each
    /// with how many `unit` it has.
    fn differ(
        &self,
        code: &str,
        what: &str,
        unit: &str,
        reference: (usize, usize),
        this: (usize, usize),
    ) -> RoutingError {
        let describe = |(s, count): (usize, usize)| {
            let sw = &self.switches[s];
            format!(
                "GUID 0x{:016x}, LID {}, Index {} - {count} {unit}",
                sw.guid,
                sw.lid,
                tuple_text(&sw.tuple)
            )
        };
        refuse(format!(
            "ERR {code}: Different number of {what} on switches: {}; {}",
            describe(reference),
            describe(this)
        ))
    }
}

impl Link {
    fn new(port: u8, remote_port: u8) -> Link {
        Link {
            port,
            remote_port,
            counter_up: 0,
            counter_down: 0,
        }
    }
}

impl Slots {
    fn new(topo: &Topology, switches: &[Switch], ca_nodes: &[NodeId]) -> Slots {
        let mut switch = vec![None; topo.len()];
        for (s, sw) in switches.iter().enumerate() {
            switch[sw.node.index()] = Some(s);
        }
        let mut ca = vec![None; topo.len()];
        for (c, node) in ca_nodes.iter().enumerate() {
            ca[node.index()] = Some(c);
        }
        Slots { switch, ca }
    }
}

/// Marks the CA ports linked to unranked switches, which leave the tree, as disconnected.
fn disconnect_unranked(topo: &Topology, slots: &Slots, switches: &[Switch], cas: &mut [Ca]) {
    for sw in switches.iter().filter(|sw| sw.rank.is_none()) {
        let ports = topo
            .node(sw.node)
            .into_iter()
            .flat_map(|n| n.existing_ports());
        for peer in ports.filter_map(|(_, port)| port.peer) {
            if let Some(c) = slots.ca(peer.node) {
                cas[c].disconnected.push(peer.port);
            }
        }
    }
}

impl Switch {
    /// An unranked switch with no groups yet.
    fn new(node: NodeId, guid: u64, lid: u16) -> Switch {
        Switch {
            node,
            guid,
            lid,
            rank: None,
            tuple: UNASSIGNED,
            down: Vec::new(),
            down_to_cas: 0,
            sibling: Vec::new(),
            up: Vec::new(),
            is_leaf: false,
            down_index: 0,
            min_counter_down: 0,
            counter_up_changed: false,
        }
    }
}

/// `nodes` in OpenSM's GUID-table order, with their NodeGUIDs.
fn table<'t>(
    nodes: impl Iterator<Item = (NodeId, &'t crate::topology::Node)>,
) -> impl Iterator<Item = (NodeId, u64)> {
    let mut list: Vec<(NodeId, u64)> = nodes.map(|(id, n)| (id, n.guid)).collect();
    list.sort_by_key(|&(_, guid)| Guid(guid).opensm_order());
    list.into_iter()
}

/// A CN or I/O GUID file that lists no GUID is refused (ERR AB27, AB29).
fn check_guid_list(guids: Option<&[u64]>, what: &str) -> Result<(), RoutingError> {
    match guids {
        Some([]) => Err(refuse(format!("ERR {what} guids file has no valid guids"))),
        _ => Ok(()),
    }
}

/// The highest LID of any end port.
fn max_lid(topo: &Topology) -> u16 {
    topo.endports()
        .filter_map(|ep| topo.port(ep)?.lid_range())
        .map(|r| *r.end())
        .max()
        .unwrap_or(0)
}

/// Ranks the switches as OpenSM's `fabric_rank` does and returns the highest rank: breadth first
/// from the root GUIDs when any is a switch of the fabric; else from the CA-attached switches,
/// reversed, and again from the switches that reversal put at rank 0.
fn rank(
    topo: &Topology,
    slots: &Slots,
    switches: &mut [Switch],
    ca_nodes: &[NodeId],
    options: &RoutingOptions,
) -> Result<u32, RoutingError> {
    let mut queue = VecDeque::new();
    for guid in options.root_guids.iter().flatten() {
        // An unknown root is logged and skipped (ERR AB24).
        if let Some(s) = switches.iter().position(|sw| sw.guid == *guid) {
            switches[s].rank = Some(0);
            queue.push_back(s);
        }
    }
    if !queue.is_empty() {
        return Ok(bfs_rank(topo, slots, switches, queue));
    }
    for &node in ca_nodes {
        let Some(n) = topo.node(node) else { continue };
        for (_, port) in n.existing_ports() {
            let Some(peer) = port.peer else { continue };
            let Some(remote) = topo.node(peer.node) else {
                continue;
            };
            match remote.kind {
                NodeKind::Router => {}
                NodeKind::Ca => {
                    return Err(refuse(format!(
                        "ERR AB0F: CA connected directly to another CA: 0x{:016x} <---> 0x{:016x}",
                        n.guid, remote.guid
                    )));
                }
                NodeKind::Switch => {
                    if let Some(s) = slots.switch(peer.node)
                        && update_rank(&mut switches[s], 0)
                    {
                        queue.push_back(s);
                    }
                }
            }
        }
    }
    let deepest = bfs_rank(topo, slots, switches, queue);
    for sw in switches.iter_mut() {
        sw.rank = sw.rank.map(|r| deepest - r);
    }
    let mut roots = VecDeque::new();
    for (s, sw) in switches.iter_mut().enumerate() {
        if sw.rank == Some(0) {
            roots.push_back(s);
        } else {
            sw.rank = None;
        }
    }
    Ok(bfs_rank(topo, slots, switches, roots))
}

/// OpenSM's `sw_update_rank`: lowers an unranked or higher rank to `rank`.
fn update_rank(sw: &mut Switch, rank: u32) -> bool {
    if sw.rank.is_some_and(|r| r <= rank) {
        return false;
    }
    sw.rank = Some(rank);
    true
}

/// Ranks outward from `queue` over switch-to-switch links, in port order; returns the last
/// rank given (the highest, breadth first), 0 for none.
fn bfs_rank(
    topo: &Topology,
    slots: &Slots,
    switches: &mut [Switch],
    mut queue: VecDeque<usize>,
) -> u32 {
    let mut last = 0;
    while let Some(s) = queue.pop_front() {
        let rank = switches[s].rank.unwrap_or(0) + 1;
        let Some(n) = topo.node(switches[s].node) else {
            continue;
        };
        for (_, port) in n.existing_ports().filter(|(p, _)| *p != 0) {
            if let Some(r) = port.peer.and_then(|peer| slots.switch(peer.node))
                && update_rank(&mut switches[r], rank)
            {
                last = rank;
                queue.push_back(r);
            }
        }
    }
    last
}
