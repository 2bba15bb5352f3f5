//! The fabric as qos-policy.conf sees it: the port groups' members (for the SA's QoS levels and
//! for the qos-setup scopes) and each port's place among them.

use std::collections::BTreeSet;

use ibqos_qos::policy::setup::SetupPort;
use ibqos_qos::policy::{NodePort, PartitionMembers, PortDirectory, PortRef};

use super::subnet::{PortKey, Subnet, opensm_order};

/// The default partition's P_Key without its membership bit, and its name in partitions.conf.
const DEFAULT_PARTITION: u16 = 0x7fff;
const DEFAULT_PARTITION_NAME: &str = "Default";

/// The discovered subnet as a [`PortDirectory`]. Every endport is a full member of the default
/// partition until partitions are managed.
#[derive(Debug)]
pub struct Directory<'s> {
    subnet: &'s Subnet,
    /// Every endport's GUID: CA and router ports, switch port 0.
    guids: BTreeSet<u64>,
}

impl<'s> Directory<'s> {
    pub fn new(subnet: &'s Subnet) -> Directory<'s> {
        let guids = subnet.endports().map(|(_, _, port)| port.guid).collect();
        Directory { subnet, guids }
    }
}

impl PortDirectory for Directory<'_> {
    fn port_guids(&self) -> Vec<u64> {
        self.guids.iter().copied().collect()
    }

    fn has_port(&self, guid: u64) -> bool {
        self.guids.contains(&guid)
    }

    /// The first node with that description in OpenSM's node table order, as OpenSM looks it
    /// up.
    fn node_port(&self, node: &str, port: u32) -> NodePort {
        let Some(found) = self
            .subnet
            .nodes
            .values()
            .filter(|n| n.description == node)
            .min_by_key(|n| opensm_order(n.info.node_guid))
        else {
            return NodePort::NoNode;
        };
        match u8::try_from(port).ok().and_then(|p| found.ports.get(&p)) {
            Some(p) => NodePort::Port(p.guid),
            None => NodePort::NoPort,
        }
    }

    fn partition_by_pkey(&self, pkey: u16) -> Option<PartitionMembers> {
        (pkey & 0x7fff == DEFAULT_PARTITION).then(|| self.default_partition())
    }

    fn partition_by_name(&self, name: &str) -> Option<PartitionMembers> {
        (name == DEFAULT_PARTITION_NAME).then(|| self.default_partition())
    }

    fn sm_port(&self) -> Option<u64> {
        self.subnet.port(self.subnet.sm_port?).map(|p| p.guid)
    }
}

impl Directory<'_> {
    fn default_partition(&self) -> PartitionMembers {
        PartitionMembers {
            full: self.port_guids(),
            limited: Vec::new(),
        }
    }
}

/// What decides a port's group membership: its own GUID on a CA or router, its switch's (port
/// 0's) GUID on a switch, and its node's type.
pub fn member(subnet: &Subnet, key: PortKey) -> Option<PortRef> {
    let node = subnet.nodes.get(&key.node)?;
    let endport = if node.is_switch() { 0 } else { key.port };
    Some(PortRef {
        guid: node.ports.get(&endport)?.guid,
        node_type: node.info.node_type,
    })
}

/// Every port of the subnet as the qos-setup scopes see it. `output` follows the QoS manager:
/// a switch's down ports and a base port 0 are SL-to-VL inputs only.
pub fn setup_ports(subnet: &Subnet) -> Vec<SetupPort> {
    subnet
        .ports()
        .filter_map(|(key, _)| {
            let node = subnet.nodes.get(&key.node)?;
            let switch = node.is_switch();
            let peer = subnet.peer(key);
            let output = if key.port == 0 {
                node.switch.is_some_and(|s| s.enhanced_port0)
            } else {
                !switch || peer.is_some()
            };
            let name = if node.description.is_empty() {
                format!("{:#018x}/P{}", key.node, key.port)
            } else {
                format!("{}/P{}", node.description, key.port)
            };
            Some(SetupPort {
                node: key.node,
                port: key.port,
                member: member(subnet, key)?,
                peer: peer.and_then(|p| member(subnet, p)),
                switch,
                output,
                name,
            })
        })
        .collect()
}
