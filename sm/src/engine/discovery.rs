//! Discovery: NodeInfo down every linked port by directed route, then each node's description,
//! SwitchInfo and PortInfo, until no answer names a node or link not seen before.
//!
//! Shared by the heavy sweep and the read-only survey: each owns the scheduler the Gets go
//! through (with its own request context, made from a [`Probe`]) and the [`Subnet`] they build;
//! [`Discovery`] keeps what only discovery needs.

use std::collections::{BTreeMap, BTreeSet};

use ibqos_exchange::scheduler::Scheduler;
use ibqos_mad::{
    Attribute, AttributeId, Guid, NodeInfoRepr, NodeType, PhysPortState, PortInfoModifier,
    PortInfoRepr,
};
use rustc_hash::FxHashMap;
use tracing::debug;

use super::subnet::{DiscoveredNode, Port, PortKey, PortMap, Subnet};

/// What a discovery Get asks, and so what its answer is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    NodeInfo { path: Vec<u8> },
    NodeDescription { guid: u64 },
    SwitchInfo { guid: u64 },
    PortInfo { guid: u64, port: u8 },
}

/// An answer of another attribute than the probe asked (the scheduler matches answers to
/// requests by attribute, so only a damaged decoder could give one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongAnswer {
    pub probe: Probe,
    pub answer: AttributeId,
}

/// What discovery keeps besides the subnet it builds.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Switch ports whose far end has been (or is being) probed.
    probed: BTreeSet<PortKey>,
    /// The node each route answered from, to attribute a new link to its near end.
    by_path: FxHashMap<Vec<u8>, u64>,
    /// The route and port GUID by which each CA port was first reached: a CA answers PortInfo
    /// for the port a request arrives on, so each CA port is read through its own route.
    arrivals: BTreeMap<PortKey, (Vec<u8>, u64)>,
}

impl Discovery {
    /// Discovery from the SM's own node: its NodeInfo is queued.
    pub fn start<C: From<Probe>>(scheduler: &mut Scheduler<C>) -> Discovery {
        get_node_info(scheduler, Vec::new());
        Discovery::default()
    }

    /// An answer to `probe`: recorded in `subnet`, and the Gets it leads to queued.
    pub fn answered<C: From<Probe>>(
        &mut self,
        subnet: &mut Subnet,
        scheduler: &mut Scheduler<C>,
        probe: Probe,
        answer: Attribute,
    ) -> Result<(), WrongAnswer> {
        match (probe, answer) {
            (Probe::NodeInfo { path }, Attribute::NodeInfo(info)) => {
                self.node_found(subnet, scheduler, path, info)
            }
            (Probe::NodeDescription { guid }, Attribute::NodeDescription(desc)) => {
                if let Some(node) = subnet.nodes.get_mut(&guid) {
                    node.description = desc.to_string_lossy().into_owned();
                }
            }
            (Probe::SwitchInfo { guid }, Attribute::SwitchInfo(info)) => {
                if let Some(node) = subnet.nodes.get_mut(&guid) {
                    node.switch = Some(info);
                }
            }
            (Probe::PortInfo { guid, port }, Attribute::PortInfo(info)) => {
                self.port_found(subnet, scheduler, guid, port, info)
            }
            (probe, answer) => {
                return Err(WrongAnswer {
                    probe,
                    answer: answer.id(),
                });
            }
        }
        Ok(())
    }

    /// NodeInfo answered at `path`: a new node is read in full; a node seen before only adds
    /// the link (and, for a CA, the port this route arrives at).
    fn node_found<C: From<Probe>>(
        &mut self,
        subnet: &mut Subnet,
        scheduler: &mut Scheduler<C>,
        path: Vec<u8>,
        info: NodeInfoRepr,
    ) {
        let guid = info.node_guid;
        let arrival = info.local_port_num;
        let here = PortKey::new(guid, arrival);
        let new_node = !subnet.nodes.contains_key(&guid);
        if new_node {
            debug!(guid = %Guid(guid), ?path, kind = ?info.node_type, "found a node");
            subnet.nodes.insert(
                guid,
                DiscoveredNode {
                    info,
                    description: String::new(),
                    switch: None,
                    path: path.clone(),
                    ports: PortMap::with_capacity(
                        usize::from(info.num_ports)
                            + usize::from(info.node_type == NodeType::Switch),
                    ),
                },
            );
            let description = Probe::NodeDescription { guid };
            scheduler.get_directed(guid, &path, AttributeId::NodeDescription, 0, description);
            if info.node_type == NodeType::Switch {
                let switch = Probe::SwitchInfo { guid };
                scheduler.get_directed(guid, &path, AttributeId::SwitchInfo, 0, switch);
                for port in 0..=info.num_ports {
                    get_port_info(scheduler, guid, &path, port);
                }
            }
        }
        if path.is_empty() {
            subnet.sm_port = Some(here);
        }
        if info.node_type != NodeType::Switch && !self.arrivals.contains_key(&here) {
            self.arrivals.insert(here, (path.clone(), info.port_guid));
            get_port_info(scheduler, guid, &path, arrival);
        }
        if let Some((&egress, before)) = path.split_last()
            && let Some(&from) = self.by_path.get(before)
        {
            let near = PortKey::new(from, egress);
            subnet.link(near, here);
            self.probed.insert(near);
            self.probed.insert(here);
        }
        self.by_path.insert(path, guid);
    }

    fn port_found<C: From<Probe>>(
        &mut self,
        subnet: &mut Subnet,
        scheduler: &mut Scheduler<C>,
        guid: u64,
        number: u8,
        info: PortInfoRepr,
    ) {
        let is_sm_port = subnet.sm_port == Some(PortKey::new(guid, number));
        let Some(node) = subnet.nodes.get_mut(&guid) else {
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
        // Beyond a switch's external port whose link is up, or the SM's own CA port, is another
        // node. An SM at a switch sits at its port 0, which is the switch itself: its links are
        // the switch's external ports, found as any switch's are.
        let link_up = info.port_phys_state == PhysPortState::LinkUp;
        let leads_on = if is_switch { number != 0 } else { is_sm_port };
        if link_up && leads_on && self.probed.insert(key) {
            let mut next = path;
            next.push(number);
            get_node_info(scheduler, next);
        }
    }
}

fn get_node_info<C: From<Probe>>(scheduler: &mut Scheduler<C>, path: Vec<u8>) {
    let node = path_key(&path);
    let route = path.clone();
    scheduler.get_directed(
        node,
        &route,
        AttributeId::NodeInfo,
        0,
        Probe::NodeInfo { path },
    );
}

fn get_port_info<C: From<Probe>>(scheduler: &mut Scheduler<C>, guid: u64, path: &[u8], port: u8) {
    let modifier = u32::from(PortInfoModifier {
        port,
        extended_speeds: false,
    });
    let probe = Probe::PortInfo { guid, port };
    scheduler.get_directed(guid, path, AttributeId::PortInfo, modifier, probe);
}

/// A fairness key for a node not yet known by GUID: its route.
fn path_key(path: &[u8]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
