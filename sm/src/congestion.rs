//! The subnet as the congestion control manager programs it, from a sweep's: what OpenSM's
//! `port_guid_tbl` holds (a switch's port 0, each CA and router port), with their LIDs.

use ibqos_congestion::{CcNodeKind, CcPort};
use ibqos_mad::NodeType;

use crate::engine::subnet::Subnet;

/// Every end port of `subnet` with a LID: a switch's port 0, each port a CA or router was
/// found on.
pub fn cc_ports(subnet: &Subnet) -> Vec<CcPort> {
    subnet
        .endports()
        .filter(|(_, _, port)| port.lid != 0)
        .filter_map(|(node_guid, number, port)| {
            let kind = match subnet.nodes.get(&node_guid)?.info.node_type {
                NodeType::Switch => CcNodeKind::Switch,
                NodeType::Ca => CcNodeKind::Ca,
                _ => CcNodeKind::Router,
            };
            Some(CcPort {
                port_guid: port.guid,
                node_guid,
                port: number,
                lid: port.lid,
                kind,
            })
        })
        .collect()
}
