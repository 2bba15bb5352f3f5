//! The fabric as qos-policy.conf sees it: the port groups' members (for the SA's QoS levels and
//! for the qos-setup scopes) and each port's place among them.

use ibqos_qos::partitions::SubnetPartitions;
use ibqos_qos::policy::setup::SetupPort;
use ibqos_qos::policy::{DirectoryNode, EndPort, NodeDirectory};

use super::subnet::{PortKey, Subnet};

/// The discovered subnet and the partitions the SM built on it, as the policy's port groups see
/// them.
pub fn directory(subnet: &Subnet, partitions: &SubnetPartitions) -> NodeDirectory {
    let nodes = subnet.nodes.values().map(|node| DirectoryNode {
        guid: node.info.node_guid,
        node_type: node.info.node_type,
        description: node.description.clone(),
        ports: node.ports.iter().map(|(n, p)| (*n, p.guid)).collect(),
    });
    let sm_port = subnet.sm_port.and_then(|k| subnet.port(k)).map(|p| p.guid);
    NodeDirectory::new(nodes, sm_port).with_partitions(partitions)
}

/// What decides a port's group membership: its own GUID on a CA or router, its switch's (port
/// 0's) GUID on a switch, and its node's type.
pub fn member(subnet: &Subnet, key: PortKey) -> Option<EndPort> {
    let node = subnet.nodes.get(&key.node)?;
    let endport = if node.is_switch() { 0 } else { key.port };
    Some(EndPort {
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
