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
    pub ports: PortMap,
}

/// A node's ports by number, in number order. A sorted vector: most nodes are CAs with one
/// or two ports, for which a B-tree's smallest node (room for eleven) is mostly empty, and a
/// subnet of ten thousand nodes is held twice (the sweep's and the SA's).
#[derive(Debug, Clone, Default)]
pub struct PortMap {
    ports: Vec<(u8, Port)>,
}

impl PortMap {
    /// Room for `ports` ports: a node's NumPorts, plus port 0 on a switch.
    pub fn with_capacity(ports: usize) -> PortMap {
        PortMap {
            ports: Vec::with_capacity(ports),
        }
    }

    fn position(&self, number: u8) -> Result<usize, usize> {
        self.ports.binary_search_by_key(&number, |(n, _)| *n)
    }

    pub fn get(&self, number: &u8) -> Option<&Port> {
        let at = self.position(*number).ok()?;
        Some(&self.ports[at].1)
    }

    pub fn get_mut(&mut self, number: &u8) -> Option<&mut Port> {
        let at = self.position(*number).ok()?;
        Some(&mut self.ports[at].1)
    }

    pub fn contains_key(&self, number: &u8) -> bool {
        self.position(*number).is_ok()
    }

    /// Adds or replaces port `number`; returns the port it replaced.
    pub fn insert(&mut self, number: u8, port: Port) -> Option<Port> {
        match self.position(number) {
            Ok(at) => Some(std::mem::replace(&mut self.ports[at].1, port)),
            Err(at) => {
                self.ports.insert(at, (number, port));
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&u8, &Port)> + Clone {
        self.ports.iter().map(|(n, p)| (n, p))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &u8> + Clone {
        self.ports.iter().map(|(n, _)| n)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Port> + Clone {
        self.ports.iter().map(|(_, p)| p)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Port> {
        self.ports.iter_mut().map(|(_, p)| p)
    }
}

impl<'a> IntoIterator for &'a mut PortMap {
    type Item = (&'a u8, &'a mut Port);
    type IntoIter = std::iter::Map<
        std::slice::IterMut<'a, (u8, Port)>,
        fn(&'a mut (u8, Port)) -> (&'a u8, &'a mut Port),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.ports.iter_mut().map(|(n, p)| (&*n, p))
    }
}

impl<'a> IntoIterator for &'a PortMap {
    type Item = (&'a u8, &'a Port);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (u8, Port)>, fn(&'a (u8, Port)) -> (&'a u8, &'a Port)>;

    fn into_iter(self) -> Self::IntoIter {
        self.ports.iter().map(|(n, p)| (n, p))
    }
}

impl FromIterator<(u8, Port)> for PortMap {
    fn from_iter<I: IntoIterator<Item = (u8, Port)>>(ports: I) -> PortMap {
        let mut map = PortMap::default();
        for (number, port) in ports {
            map.insert(number, port);
        }
        map
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::PortInfo;

    fn port(guid: u64) -> Port {
        let zeros = PortInfo::new_unchecked([0u8; PortInfo::<&[u8]>::LEN]);
        Port {
            info: PortInfoRepr::parse(&zeros).unwrap(),
            guid,
            path: Vec::new(),
            lid: 0,
        }
    }

    #[test]
    fn ports_come_out_in_number_order_whatever_order_they_were_found_in() {
        let mut ports: PortMap = [(3, port(3)), (0, port(0)), (2, port(2))]
            .into_iter()
            .collect();
        assert_eq!(ports.insert(1, port(1)).map(|p| p.guid), None);
        assert_eq!(ports.insert(2, port(22)).map(|p| p.guid), Some(2));
        let found: Vec<(u8, u64)> = ports.iter().map(|(n, p)| (*n, p.guid)).collect();
        assert_eq!(found, [(0, 0), (1, 1), (2, 22), (3, 3)]);
        assert_eq!(ports.get(&2).map(|p| p.guid), Some(22));
        assert!(ports.get(&4).is_none() && !ports.contains_key(&4));
        assert_eq!(ports.len(), 4);
    }
}
