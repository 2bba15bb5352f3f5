//! Discovery: NodeInfo down every linked port by directed route, then each node's description,
//! SwitchInfo and PortInfo, until no answer names a node or link not seen before.

use std::collections::BTreeMap;

use ibqos_mad::{
    AttributeId, Guid, NodeDescriptionRepr, NodeInfoRepr, NodeType, PhysPortState,
    PortInfoModifier, PortInfoRepr,
};
use tracing::debug;

use super::{Op, Sweep};
use crate::engine::subnet::{Node, Port, PortKey};

impl Sweep {
    /// NodeInfo answered at `path`: a new node is read in full; a node seen before only adds
    /// the link (and, for a CA, the port this route arrives at).
    pub(super) fn node_found(&mut self, path: Vec<u8>, info: NodeInfoRepr) {
        let guid = info.node_guid;
        let arrival = info.local_port_num;
        let here = PortKey::new(guid, arrival);
        let new_node = !self.subnet.nodes.contains_key(&guid);
        if new_node {
            debug!(guid = %Guid(guid), ?path, kind = ?info.node_type, "found a node");
            self.subnet.nodes.insert(
                guid,
                Node {
                    info,
                    description: String::new(),
                    switch: None,
                    path: path.clone(),
                    ports: BTreeMap::new(),
                },
            );
            self.get(
                guid,
                &path,
                AttributeId::NodeDescription,
                0,
                Op::NodeDescription { guid },
            );
            if info.node_type == NodeType::Switch {
                self.get(
                    guid,
                    &path,
                    AttributeId::SwitchInfo,
                    0,
                    Op::SwitchInfo { guid },
                );
                for port in 0..=info.num_ports {
                    self.get_port_info(guid, &path, port);
                }
            }
        }
        if path.is_empty() {
            self.subnet.sm_port = Some(here);
        }
        if info.node_type != NodeType::Switch && !self.arrivals.contains_key(&here) {
            self.arrivals.insert(here, (path.clone(), info.port_guid));
            self.get_port_info(guid, &path, arrival);
        }
        if let Some((&egress, before)) = path.split_last()
            && let Some(&from) = self.by_path.get(before)
        {
            let near = PortKey::new(from, egress);
            self.subnet.link(near, here);
            self.probed.insert(near);
            self.probed.insert(here);
        }
        self.by_path.insert(path, guid);
    }

    pub(super) fn port_found(&mut self, guid: u64, number: u8, info: PortInfoRepr) {
        let Some(node) = self.subnet.nodes.get_mut(&guid) else {
            return;
        };
        let is_switch = node.is_switch();
        let key = PortKey::new(guid, number);
        let (path, port_guid) = match self.arrivals.get(&key) {
            Some((path, port_guid)) if !is_switch => (path.clone(), *port_guid),
            _ => (node.path.clone(), node.info.port_guid),
        };
        node.ports.insert(
            number,
            Port {
                info,
                guid: port_guid,
                path: path.clone(),
                lid: 0,
            },
        );
        // Beyond a switch port whose link is up, or the SM's own port, is another node.
        let link_up = info.port_phys_state == PhysPortState::LinkUp;
        let is_sm_port = self.subnet.sm_port == Some(key);
        let leads_on = (is_switch && number != 0) || is_sm_port;
        if link_up && leads_on && self.probed.insert(key) {
            let mut next = path;
            next.push(number);
            self.get_node_info(next);
        }
    }

    pub(super) fn get_node_info(&mut self, path: Vec<u8>) {
        let node = path_key(&path);
        self.get(
            node,
            &path.clone(),
            AttributeId::NodeInfo,
            0,
            Op::NodeInfo { path },
        );
    }

    pub(super) fn get_port_info(&mut self, guid: u64, path: &[u8], port: u8) {
        let modifier = u32::from(PortInfoModifier {
            port,
            extended_speeds: false,
        });
        self.get(
            guid,
            path,
            AttributeId::PortInfo,
            modifier,
            Op::PortInfo { guid, port },
        );
    }
}

/// A fairness key for a node not yet known by GUID: its route.
pub(super) fn path_key(path: &[u8]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

pub(super) fn description_text(desc: &NodeDescriptionRepr) -> String {
    desc.to_string_lossy().trim_end_matches('\0').to_string()
}
