//! The fabric model: nodes, their ports, the links between ports and what each port can do.
//!
//! A [`Topology`] is a plain arena: nodes live in a `Vec` and are named by [`NodeId`] (their
//! index), so iteration order is insertion order and every algorithm over it is deterministic.
//! Links are stored on both ends ([`Port::peer`]); [`Topology::connect`] keeps them symmetric and
//! [`Topology::validate`] checks that nothing broke that through the public fields.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use ibqos_mad::Guid;
use ibqos_qos::{PortCaps, PortClass, VlCount, oper_vls};

/// A node of a [`Topology`]: its index in insertion order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index of the node in [`Topology::nodes`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node#{}", self.0)
    }
}

/// NodeInfo.NodeType.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeKind {
    Ca,
    Switch,
    Router,
}

impl From<NodeKind> for ibqos_mad::NodeType {
    fn from(kind: NodeKind) -> Self {
        match kind {
            NodeKind::Ca => ibqos_mad::NodeType::Ca,
            NodeKind::Switch => ibqos_mad::NodeType::Switch,
            NodeKind::Router => ibqos_mad::NodeType::Router,
        }
    }
}

/// One port of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRef {
    pub node: NodeId,
    pub port: u8,
}

impl PortRef {
    pub const fn new(node: NodeId, port: u8) -> PortRef {
        PortRef { node, port }
    }
}

impl fmt::Display for PortRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.node, self.port)
    }
}

/// LinkWidthEnabled bit for 4x, ibsim's default enabled width (`DEFAULT_LINKWIDTH`, sim.h).
pub const LINK_WIDTH_4X: u8 = 2;
/// LinkSpeedEnabled bit for SDR, ibsim's default enabled speed (`DEFAULT_LINKSPEED`).
pub const LINK_SPEED_SDR: u8 = 1;

/// What a port can do: the PortInfo capability fields that link bring-up and QoS planning depend
/// on. Defaults are those of ibsim 0.10's PortInfo templates (`sim_net.c`: `hcaport`, `swport`,
/// `smaport`), so a fabric parsed from a net file describes the same ports ibsim emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkCaps {
    /// PortInfo.LinkWidthEnabled: 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x.
    pub width_enabled: u8,
    /// PortInfo.LinkSpeedEnabled: 1 = SDR, 2 = DDR, 4 = QDR.
    pub speed_enabled: u8,
    /// PortInfo.LinkSpeedExtEnabled: 1 = FDR, 2 = EDR, 4 = HDR, 8 = NDR; 0 = none.
    pub speed_ext_enabled: u8,
    /// PortInfo.VLCap.
    pub vl_cap: VlCount,
    /// PortInfo.MTUCap, in its wire encoding (1 = 256 ... 5 = 4096).
    pub mtu_cap: u8,
    /// PortInfo.VLArbitrationLowCap.
    pub vlarb_low_cap: u8,
    /// PortInfo.VLArbitrationHighCap.
    pub vlarb_high_cap: u8,
    /// PortInfo.CapabilityMask.IsSLMappingSupported.
    pub sl_mapping_supported: bool,
}

impl LinkCaps {
    /// What the QoS planner needs of a port with these capabilities running `oper_vls` VLs.
    pub const fn planner_caps(&self, oper_vls: VlCount) -> PortCaps {
        PortCaps {
            vl_cap: self.vl_cap,
            oper_vls,
            vlarb_low_cap: self.vlarb_low_cap,
            vlarb_high_cap: self.vlarb_high_cap,
            sl_mapping_supported: self.sl_mapping_supported,
        }
    }

    /// A CA or router port: 8 VLs, MTU 2048, VLArb caps 8/8, SL mapping supported.
    pub const fn end_port() -> LinkCaps {
        LinkCaps {
            width_enabled: LINK_WIDTH_4X,
            speed_enabled: LINK_SPEED_SDR,
            speed_ext_enabled: 0,
            vl_cap: VlCount::Eight,
            mtu_cap: 4,
            vlarb_low_cap: 8,
            vlarb_high_cap: 8,
            sl_mapping_supported: true,
        }
    }

    /// A switch external port. ibsim's `swport` template has an all-zero CapabilityMask (IBA
    /// leaves it reserved on external ports), hence no SL mapping bit.
    pub const fn switch_port() -> LinkCaps {
        LinkCaps {
            sl_mapping_supported: false,
            ..LinkCaps::end_port()
        }
    }

    /// Switch port 0: as an end port but MTUCap 1024 (ibsim's `smaport` template).
    pub const fn switch_port0() -> LinkCaps {
        LinkCaps {
            mtu_cap: 3,
            ..LinkCaps::end_port()
        }
    }
}

/// One physical port (or switch port 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// PortGUID. ibsim gives every switch port the NodeGUID and CA port `p` NodeGUID + `p`.
    pub guid: u64,
    /// The port at the other end of the link; kept symmetric by [`Topology::connect`].
    pub peer: Option<PortRef>,
    /// Base LID; 0 = not assigned. Meaningful on end ports (CA/router ports, switch port 0).
    pub lid: u16,
    /// LID mask control: the port answers `lid ..= lid + 2^lmc - 1`.
    pub lmc: u8,
    pub link: LinkCaps,
}

impl Port {
    /// An unlinked port without a LID.
    pub const fn new(guid: u64, link: LinkCaps) -> Port {
        Port {
            guid,
            peer: None,
            lid: 0,
            lmc: 0,
            link,
        }
    }

    /// The LIDs this port answers, `None` without a LID or when the LMC range leaves the unicast
    /// space (0x0001..=0xBFFF).
    pub fn lid_range(&self) -> Option<std::ops::RangeInclusive<u16>> {
        if self.lid == 0 || self.lmc > 7 {
            return None;
        }
        let last = u32::from(self.lid) + (1u32 << self.lmc) - 1;
        (last <= u32::from(MAX_UNICAST_LID)).then_some(self.lid..=last as u16)
    }
}

/// The highest unicast LID.
pub const MAX_UNICAST_LID: u16 = 0xBFFF;

/// One node: a CA, a switch or a router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    /// NodeGUID.
    pub guid: u64,
    pub system_image_guid: u64,
    /// The node's id in a net file ("S1"); for discovered nodes the SM chooses it.
    pub name: String,
    /// NodeDescription.
    pub description: String,
    pub vendor_id: u32,
    pub device_id: u16,
    /// SwitchInfo.EnhancedPort0; always false on CAs and routers.
    pub enhanced_port0: bool,
    /// SwitchInfo.OptimizedSLtoVLMappingProgramming: the switch takes one SL2VL Set for all
    /// its input and/or output ports. Net files cannot say it; ibsim never advertises it.
    pub optimized_sl_to_vl: bool,
    /// Indexed by port number: a switch has port 0 and 1..=N, a CA or router 1..=N (index 0 is
    /// `None`). A `None` above 0 is a port the model knows nothing about.
    pub ports: Vec<Option<Port>>,
}

impl Node {
    /// The QoS class of port `number`, or `None` for a port QoS leaves alone (a base switch
    /// port 0).
    pub fn port_class(&self, number: u8) -> Option<PortClass> {
        match (self.kind, number) {
            (NodeKind::Switch, 0) => self.enhanced_port0.then_some(PortClass::Sw0),
            (NodeKind::Switch, _) => Some(PortClass::Swe),
            (NodeKind::Router, _) => Some(PortClass::Rtr),
            (NodeKind::Ca, _) => Some(PortClass::Ca),
        }
    }

    /// A node with `num_ports` ports numbered like ibsim numbers them, with ibsim's GUID rule
    /// (switch ports share the NodeGUID, CA port `p` is NodeGUID + `p`) and default
    /// capabilities. The system image GUID is the NodeGUID and the description the name.
    pub fn new(kind: NodeKind, guid: u64, name: impl Into<String>, num_ports: u8) -> Node {
        let name = name.into();
        let ports = (0..=num_ports)
            .map(|p| match (kind, p) {
                (NodeKind::Switch, 0) => Some(Port::new(guid, LinkCaps::switch_port0())),
                (NodeKind::Switch, _) => Some(Port::new(guid, LinkCaps::switch_port())),
                (_, 0) => None,
                (_, p) => Some(Port::new(
                    guid.wrapping_add(u64::from(p)),
                    LinkCaps::end_port(),
                )),
            })
            .collect();
        Node {
            kind,
            guid,
            system_image_guid: guid,
            description: name.clone(),
            name,
            vendor_id: 0,
            device_id: 0,
            enhanced_port0: false,
            optimized_sl_to_vl: false,
            ports,
        }
    }

    pub fn is_switch(&self) -> bool {
        self.kind == NodeKind::Switch
    }

    /// NodeInfo.NumPorts: the highest port number.
    pub fn num_ports(&self) -> u8 {
        u8::try_from(self.ports.len().saturating_sub(1)).unwrap_or(u8::MAX)
    }

    pub fn port(&self, port: u8) -> Option<&Port> {
        self.ports.get(usize::from(port)).and_then(Option::as_ref)
    }

    pub fn port_mut(&mut self, port: u8) -> Option<&mut Port> {
        self.ports
            .get_mut(usize::from(port))
            .and_then(Option::as_mut)
    }

    /// The ports that exist, with their numbers, in port order.
    pub fn existing_ports(&self) -> impl Iterator<Item = (u8, &Port)> {
        self.ports
            .iter()
            .enumerate()
            .filter_map(|(n, p)| Some((u8::try_from(n).ok()?, p.as_ref()?)))
    }
}

/// A structural problem with a topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("node GUID {} of {name:?} is already used by {existing:?}", Guid(*guid))]
    DuplicateGuid {
        guid: u64,
        name: String,
        existing: String,
    },
    #[error("node name {0:?} is already used")]
    DuplicateName(String),
    #[error("node {name:?} has {ports} port slots: a node has 1 to 255 ports")]
    BadPortCount { name: String, ports: usize },
    #[error("node {name:?}: port 0 must exist on a switch and only on a switch")]
    BadPortZero { name: String },
    #[error("{0} does not exist")]
    NoSuchPort(PortRef),
    #[error("{0} is already linked")]
    AlreadyLinked(PortRef),
    #[error("{0} cannot be linked: switch port 0 is internal")]
    PortZeroLink(PortRef),
    #[error("{0} cannot be linked to itself")]
    SelfLink(PortRef),
    #[error("{port} names {peer} as its peer, but {peer} does not name it back")]
    AsymmetricLink { port: PortRef, peer: PortRef },
    #[error("{0} does not exist")]
    NoSuchNode(NodeId),
}

/// A fabric: nodes, ports and links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    nodes: Vec<Node>,
    by_guid: HashMap<u64, NodeId>,
    by_name: HashMap<String, NodeId>,
}

impl Topology {
    /// The OperVLs of a linked port, as the link manager sets them: the lower VLCap of its two
    /// ends, capped by `max_op_vls`; `None` for a port without a link.
    pub fn link_oper_vls(&self, port: PortRef, max_op_vls: Option<VlCount>) -> Option<VlCount> {
        let here = self.port(port)?;
        let peer = self.port(here.peer?)?;
        Some(oper_vls(here.link.vl_cap, peer.link.vl_cap, max_op_vls))
    }

    pub fn new() -> Topology {
        Topology::default()
    }

    /// Adds a node. NodeGUIDs must be unique, and so must non-empty names; a switch must have
    /// port 0 and a CA or router must not.
    pub fn add_node(&mut self, node: Node) -> Result<NodeId, TopologyError> {
        if node.ports.len() < 2 || node.ports.len() > 256 {
            return Err(TopologyError::BadPortCount {
                name: node.name,
                ports: node.ports.len(),
            });
        }
        if node.is_switch() != node.ports[0].is_some() {
            return Err(TopologyError::BadPortZero { name: node.name });
        }
        if let Some(&existing) = self.by_guid.get(&node.guid) {
            return Err(TopologyError::DuplicateGuid {
                guid: node.guid,
                name: node.name,
                existing: self.nodes[existing.index()].name.clone(),
            });
        }
        if !node.name.is_empty() && self.by_name.contains_key(&node.name) {
            return Err(TopologyError::DuplicateName(node.name));
        }
        let id = NodeId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.by_guid.insert(node.guid, id);
        if !node.name.is_empty() {
            self.by_name.insert(node.name.clone(), id);
        }
        self.nodes.push(node);
        Ok(id)
    }

    /// Links two ports. Both must exist, be unlinked and not be switch port 0.
    pub fn connect(&mut self, a: PortRef, b: PortRef) -> Result<(), TopologyError> {
        if a == b {
            return Err(TopologyError::SelfLink(a));
        }
        for p in [a, b] {
            let node = self.node(p.node).ok_or(TopologyError::NoSuchPort(p))?;
            let port = node.port(p.port).ok_or(TopologyError::NoSuchPort(p))?;
            if node.is_switch() && p.port == 0 {
                return Err(TopologyError::PortZeroLink(p));
            }
            if port.peer.is_some() {
                return Err(TopologyError::AlreadyLinked(p));
            }
        }
        for (from, to) in [(a, b), (b, a)] {
            if let Some(port) = self.port_mut(from) {
                port.peer = Some(to);
            }
        }
        Ok(())
    }

    /// Unlinks a port and its peer; returns the former peer.
    pub fn disconnect(&mut self, port: PortRef) -> Option<PortRef> {
        let peer = self.port_mut(port)?.peer.take()?;
        if let Some(p) = self.port_mut(peer) {
            p.peer = None;
        }
        Some(peer)
    }

    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    /// The node, for changing anything but its GUID and name (the indexes would go stale;
    /// [`Topology::validate`] reports that).
    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.nodes.get_mut(id.index())
    }

    pub fn port(&self, port: PortRef) -> Option<&Port> {
        self.node(port.node)?.port(port.port)
    }

    pub fn port_mut(&mut self, port: PortRef) -> Option<&mut Port> {
        self.node_mut(port.node)?.port_mut(port.port)
    }

    pub fn peer(&self, port: PortRef) -> Option<PortRef> {
        self.port(port)?.peer
    }

    pub fn node_by_guid(&self, guid: u64) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node, in insertion order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    pub fn switches(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes().filter(|(_, n)| n.kind == NodeKind::Switch)
    }

    pub fn cas(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes().filter(|(_, n)| n.kind == NodeKind::Ca)
    }

    /// The ports that carry LIDs: every CA and router port and every switch port 0, in node
    /// order then port order.
    pub fn endports(&self) -> impl Iterator<Item = PortRef> + '_ {
        self.nodes().flat_map(|(id, node)| {
            node.existing_ports()
                .filter(move |(p, _)| !node.is_switch() || *p == 0)
                .map(move |(p, _)| PortRef::new(id, p))
        })
    }

    /// Every link once, as (lower end, higher end) in [`PortRef`] order.
    pub fn links(&self) -> impl Iterator<Item = (PortRef, PortRef)> + '_ {
        self.nodes().flat_map(move |(id, node)| {
            node.existing_ports().filter_map(move |(p, port)| {
                let here = PortRef::new(id, p);
                port.peer
                    .filter(|&peer| here < peer)
                    .map(|peer| (here, peer))
            })
        })
    }

    /// The end port that answers `lid`, honouring LMC ranges.
    pub fn lid_owner(&self, lid: u16) -> Option<PortRef> {
        self.endports().find(|&p| {
            self.port(p)
                .and_then(Port::lid_range)
                .is_some_and(|r| r.contains(&lid))
        })
    }

    /// `"S1"[3]`: a port named the way net files and ibsim's console name it.
    pub fn describe(&self, port: PortRef) -> String {
        match self.node(port.node) {
            Some(node) => format!("{:?}[{}]", node.name, port.port),
            None => port.to_string(),
        }
    }

    /// Every end port with a LID, by LID range start; fails on overlapping ranges.
    pub fn lid_map(&self) -> Result<BTreeMap<u16, PortRef>, LidError> {
        let mut map: BTreeMap<u16, PortRef> = BTreeMap::new();
        for ep in self.endports() {
            let Some(port) = self.port(ep) else { continue };
            if port.lid == 0 {
                continue;
            }
            let range = port.lid_range().ok_or_else(|| LidError::OutOfRange {
                port: self.describe(ep),
                lid: port.lid,
                lmc: port.lmc,
            })?;
            // The previous range starting at or below this one, and the next one above.
            let clash = map
                .range(..=*range.end())
                .next_back()
                .filter(|(start, other)| {
                    **start >= *range.start()
                        || self
                            .port(**other)
                            .and_then(Port::lid_range)
                            .is_some_and(|r| r.contains(range.start()))
                })
                .map(|(_, other)| *other);
            if let Some(other) = clash {
                return Err(LidError::Collision {
                    lid: port.lid,
                    first: self.describe(other),
                    second: self.describe(ep),
                });
            }
            map.insert(*range.start(), ep);
        }
        Ok(map)
    }

    /// Checks what the public fields could have broken: links are symmetric, indexes match.
    pub fn validate(&self) -> Result<(), TopologyError> {
        for (id, node) in self.nodes() {
            if self.by_guid.get(&node.guid) != Some(&id) {
                return Err(TopologyError::DuplicateGuid {
                    guid: node.guid,
                    name: node.name.clone(),
                    existing: String::new(),
                });
            }
            if !node.name.is_empty() && self.by_name.get(&node.name) != Some(&id) {
                return Err(TopologyError::DuplicateName(node.name.clone()));
            }
            for (p, port) in node.existing_ports() {
                let here = PortRef::new(id, p);
                if let Some(peer) = port.peer
                    && (self.peer(peer) != Some(here) || (node.is_switch() && p == 0))
                {
                    return Err(TopologyError::AsymmetricLink { port: here, peer });
                }
            }
        }
        Ok(())
    }
}

/// A LID assignment no fabric can have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LidError {
    #[error("LID {lid} is used by both {first} and {second}")]
    Collision {
        lid: u16,
        first: String,
        second: String,
    },
    #[error("{port}: LID {lid} with LMC {lmc} leaves the unicast LID space")]
    OutOfRange { port: String, lid: u16, lmc: u8 },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_nodes() -> (Topology, NodeId, NodeId) {
        let mut t = Topology::new();
        let s = t
            .add_node(Node::new(NodeKind::Switch, 0x20, "S", 4))
            .unwrap();
        let h = t.add_node(Node::new(NodeKind::Ca, 0x10, "H", 2)).unwrap();
        (t, s, h)
    }

    #[test]
    fn guids_ports_and_endports() {
        let (t, s, h) = two_nodes();
        assert_eq!(t.port(PortRef::new(s, 3)).unwrap().guid, 0x20);
        assert_eq!(t.port(PortRef::new(h, 2)).unwrap().guid, 0x12);
        assert!(t.port(PortRef::new(h, 0)).is_none());
        assert_eq!(
            t.endports().collect::<Vec<_>>(),
            vec![PortRef::new(s, 0), PortRef::new(h, 1), PortRef::new(h, 2)]
        );
        assert_eq!(t.node_by_guid(0x10), Some(h));
        assert_eq!(t.node_by_name("S"), Some(s));
        assert_eq!(t.port(PortRef::new(s, 0)).unwrap().link.mtu_cap, 3);
    }

    #[test]
    fn connect_rules() {
        let (mut t, s, h) = two_nodes();
        let (s1, h1) = (PortRef::new(s, 1), PortRef::new(h, 1));
        t.connect(s1, h1).unwrap();
        assert_eq!(t.peer(h1), Some(s1));
        assert_eq!(
            t.connect(PortRef::new(s, 2), h1),
            Err(TopologyError::AlreadyLinked(h1))
        );
        assert_eq!(
            t.connect(PortRef::new(s, 0), PortRef::new(h, 2)),
            Err(TopologyError::PortZeroLink(PortRef::new(s, 0)))
        );
        assert_eq!(
            t.connect(PortRef::new(s, 9), PortRef::new(h, 2)),
            Err(TopologyError::NoSuchPort(PortRef::new(s, 9)))
        );
        assert_eq!(t.links().collect::<Vec<_>>(), vec![(s1, h1)]);
        assert_eq!(t.validate(), Ok(()));
        t.port_mut(h1).unwrap().peer = Some(PortRef::new(s, 2));
        assert!(t.validate().is_err());
        assert_eq!(t.disconnect(s1), Some(h1));
    }

    #[test]
    fn duplicate_nodes_rejected() {
        let (mut t, _, _) = two_nodes();
        assert!(matches!(
            t.add_node(Node::new(NodeKind::Ca, 0x10, "X", 1)),
            Err(TopologyError::DuplicateGuid { .. })
        ));
        assert_eq!(
            t.add_node(Node::new(NodeKind::Ca, 0x99, "H", 1)),
            Err(TopologyError::DuplicateName("H".into()))
        );
        let mut bad = Node::new(NodeKind::Ca, 0x98, "Y", 1);
        bad.ports[0] = Some(Port::new(0x98, LinkCaps::end_port()));
        assert!(matches!(
            t.add_node(bad),
            Err(TopologyError::BadPortZero { .. })
        ));
    }

    #[test]
    fn lid_owner_and_map_honour_lmc() {
        let (mut t, s, h) = two_nodes();
        t.port_mut(PortRef::new(s, 0)).unwrap().lid = 1;
        let h1 = t.port_mut(PortRef::new(h, 1)).unwrap();
        h1.lid = 4;
        h1.lmc = 2;
        assert_eq!(t.lid_owner(7), Some(PortRef::new(h, 1)));
        assert_eq!(t.lid_owner(8), None);
        assert_eq!(t.lid_map().unwrap().len(), 2);
        t.port_mut(PortRef::new(h, 2)).unwrap().lid = 6;
        assert!(matches!(
            t.lid_map(),
            Err(LidError::Collision { lid: 6, .. })
        ));
        t.port_mut(PortRef::new(h, 2)).unwrap().lid = 3;
        t.port_mut(PortRef::new(h, 2)).unwrap().lmc = 1;
        assert!(matches!(
            t.lid_map(),
            Err(LidError::Collision { lid: 3, .. })
        ));
    }
}
