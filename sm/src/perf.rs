//! The subnet as the performance manager monitors it, from a sweep's: what OpenSM's
//! `collect_guids` takes from its node table.

use ibqos_perfmgr::{RemotePort, SubnetNode, SubnetPort};

use crate::engine::subnet::{Port, PortKey, Subnet};

/// Which LIDs address the PMAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortLids {
    /// Those a master's sweep gave the ports.
    Assigned,
    /// Those the ports held when discovery read their PortInfo: on a standby, the master's.
    Held,
}

impl PortLids {
    fn of(self, port: &Port) -> u16 {
        match self {
            PortLids::Assigned => port.lid,
            PortLids::Held => port.info.lid,
        }
    }
}

/// Every node of `subnet` with its ports: all of a switch's (its port 0 only when enhanced),
/// addressed at the switch's LID; each port a CA or router was found on, at its own LID. Each
/// port names the far end of its link.
pub fn monitored_nodes(subnet: &Subnet, lids: PortLids) -> Vec<SubnetNode> {
    subnet
        .nodes
        .iter()
        .map(|(&guid, node)| {
            let enhanced_port0 = node.switch.as_ref().is_some_and(|info| info.enhanced_port0);
            let switch_lid = node.ports.get(&0).map_or(0, |port| lids.of(port));
            let ports = node
                .ports
                .iter()
                .filter(|&(&number, _)| number != 0 || enhanced_port0)
                .map(|(&number, port)| SubnetPort {
                    port: number,
                    lid: if node.is_switch() {
                        switch_lid
                    } else {
                        lids.of(port)
                    },
                    remote: subnet
                        .peer(PortKey::new(guid, number))
                        .and_then(|far| remote(subnet, far)),
                })
                .collect();
            SubnetNode {
                guid,
                description: node.description.clone(),
                node_type: node.info.node_type,
                enhanced_port0,
                num_ports: node.info.num_ports,
                ports,
            }
        })
        .collect()
}

fn remote(subnet: &Subnet, far: PortKey) -> Option<RemotePort> {
    let node = subnet.nodes.get(&far.node)?;
    Some(RemotePort {
        name: node.description.clone(),
        guid: far.node,
        port: far.port,
    })
}
