//! What discovery learns about the fabric: every node by GUID, every port's PortInfo, the links
//! between ports, and the directed route that reaches each node and each CA port.

use std::collections::BTreeMap;

use ibqos_mad::{NodeInfoRepr, NodeType, PortInfoRepr, SwitchInfoRepr};

/// A port of the fabric: its node's GUID and its number on that node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortKey {
    pub node: u64,
    pub port: u8,
}

impl PortKey {
    pub const fn new(node: u64, port: u8) -> PortKey {
        PortKey { node, port }
    }
}

/// One discovered node.
#[derive(Debug, Clone)]
pub struct DiscoveredNode {
    pub info: NodeInfoRepr,
    pub description: String,
    /// SwitchInfo, for a switch once it has been read.
    pub switch: Option<SwitchInfoRepr>,
    /// Egress ports of the directed route from the SM to this node (the first one found).
    pub path: Vec<u8>,
    /// Ports by number: a switch's 0..=N once read, a CA's ports as each is reached.
    pub ports: BTreeMap<u8, Port>,
}

impl DiscoveredNode {
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }

    /// The ports that carry LIDs: port 0 of a switch, every port of a CA or router.
    pub fn endports(&self) -> impl Iterator<Item = (u8, &Port)> {
        let switch = self.is_switch();
        self.ports
            .iter()
            .filter(move |(n, _)| !switch || **n == 0)
            .map(|(n, p)| (*n, p))
    }
}

/// One discovered port.
#[derive(Debug, Clone)]
pub struct Port {
    /// PortInfo as read during discovery.
    pub info: PortInfoRepr,
    /// The port GUID (a switch's ports all share the node GUID).
    pub guid: u64,
    /// The directed route that arrives at this port. A CA answers PortInfo for the port a
    /// request arrives on, so each CA port needs its own route; a switch is reached by any.
    pub path: Vec<u8>,
    /// The base LID the LID manager gives the port (endports only).
    pub lid: u16,
}

/// The fabric as discovery saw it.
#[derive(Debug, Clone, Default)]
pub struct Subnet {
    pub nodes: BTreeMap<u64, DiscoveredNode>,
    /// The SM's own node and port.
    pub sm_port: Option<PortKey>,
    /// Every link, recorded from both ends; kept apart from the ports because a link is often
    /// seen before the PortInfo of its far end arrives.
    pub links: BTreeMap<PortKey, PortKey>,
}

impl Subnet {
    pub fn port(&self, key: PortKey) -> Option<&Port> {
        self.nodes.get(&key.node)?.ports.get(&key.port)
    }

    pub fn port_mut(&mut self, key: PortKey) -> Option<&mut Port> {
        self.nodes.get_mut(&key.node)?.ports.get_mut(&key.port)
    }

    /// Records a link, from both ends.
    pub fn link(&mut self, a: PortKey, b: PortKey) {
        self.links.insert(a, b);
        self.links.insert(b, a);
    }

    /// The port at the other end of a port's link.
    pub fn peer(&self, key: PortKey) -> Option<PortKey> {
        self.links.get(&key).copied()
    }

    /// Every port as (key, port).
    pub fn ports(&self) -> impl Iterator<Item = (PortKey, &Port)> {
        self.nodes.iter().flat_map(|(guid, node)| {
            node.ports
                .iter()
                .map(move |(n, p)| (PortKey::new(*guid, *n), p))
        })
    }

    pub fn switches(&self) -> impl Iterator<Item = &DiscoveredNode> {
        self.nodes.values().filter(|n| n.is_switch())
    }

    /// Every port that carries a LID, as (node GUID, port number, port).
    pub fn endports(&self) -> impl Iterator<Item = (u64, u8, &Port)> {
        self.nodes
            .iter()
            .flat_map(|(guid, node)| node.endports().map(move |(n, p)| (*guid, n, p)))
    }

    /// The number of ports discovered, switch port 0 included.
    pub fn port_count(&self) -> usize {
        self.nodes.values().map(|n| n.ports.len()).sum()
    }
}
