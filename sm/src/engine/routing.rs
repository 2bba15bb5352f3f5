//! Routing for the sweep: the discovered subnet as a fabric topology, handed to the routing
//! engines of the fabric crate (the simulator routes with the same functions).

use std::collections::BTreeMap;

use ibqos_fabric::routing::{RoutingError, minhop, updn, updn_roots};
use ibqos_fabric::{Node as FabricNode, NodeKind, PortRef, Topology, TopologyError};
use ibqos_mad::{Guid, NodeType};

use super::subnet::Subnet;

/// Which routing engine computes the LFTs (OpenSM's `routing_engine`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RoutingEngine {
    #[default]
    MinHop,
    UpDown,
}

/// Every switch's linear forwarding table, by switch GUID; entry `lid` is the egress port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lfts {
    pub tables: BTreeMap<u64, Vec<u8>>,
}

impl Lfts {
    /// The highest LID any table routes: SwitchInfo.LinearFDBTop.
    pub fn max_lid(&self) -> u16 {
        self.tables
            .values()
            .map(|t| t.len().saturating_sub(1))
            .max()
            .unwrap_or(0) as u16
    }
}

/// Why the sweep could not route.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("the discovered fabric is inconsistent: {0}")]
    Topology(TopologyError),
    #[error("routing failed: {0}")]
    Routing(RoutingError),
}

/// Every switch's LFT for the discovered subnet.
pub fn route(subnet: &Subnet, engine: &RoutingEngine) -> Result<Lfts, RouteError> {
    let (topology, guids) = topology(subnet).map_err(RouteError::Topology)?;
    let routes = match engine {
        RoutingEngine::MinHop => minhop(&topology),
        RoutingEngine::UpDown => updn(&topology, &updn_roots(&topology)),
    }
    .map_err(RouteError::Routing)?;
    let tables = routes
        .iter()
        .map(|(id, lft)| (guids[id.0 as usize], lft.to_vec()))
        .collect();
    Ok(Lfts { tables })
}

/// The subnet as a fabric topology (node ids in GUID order), and the GUID of each node id.
pub(crate) fn topology(subnet: &Subnet) -> Result<(Topology, Vec<u64>), TopologyError> {
    let mut topology = Topology::new();
    let mut ids = BTreeMap::new();
    for (guid, node) in &subnet.nodes {
        let kind = match node.info.node_type {
            NodeType::Switch => NodeKind::Switch,
            NodeType::Router => NodeKind::Router,
            _ => NodeKind::Ca,
        };
        let mut fabric_node =
            FabricNode::new(kind, *guid, Guid(*guid).to_string(), node.info.num_ports);
        fabric_node.description = node.description.clone();
        for (number, port) in &node.ports {
            if let Some(fabric_port) = fabric_node.port_mut(*number) {
                fabric_port.guid = port.guid;
                fabric_port.lid = port.lid;
                fabric_port.lmc = port.info.lmc;
            }
        }
        ids.insert(*guid, topology.add_node(fabric_node)?);
    }
    for (a, b) in &subnet.links {
        // Each link is stored from both ends; connect it once.
        if a > b {
            continue;
        }
        if let (Some(&a_id), Some(&b_id)) = (ids.get(&a.node), ids.get(&b.node)) {
            topology.connect(PortRef::new(a_id, a.port), PortRef::new(b_id, b.port))?;
        }
    }
    let guids = ids.keys().copied().collect();
    Ok((topology, guids))
}
