//! Routing for the sweep: the discovered subnet as a fabric topology, handed to the routing
//! engines of the fabric crate (the simulator routes with the same engines). The SM selects
//! which engine routes, by OpenSM's fallback rule over `routing_engine`'s list; the engines
//! compute.

use std::collections::BTreeMap;

use std::sync::Arc;

use ibqos_fabric::routing::{Engine, EngineList, Layering, Unrouted};
use ibqos_fabric::{Node as FabricNode, NodeKind, PortRef, Topology, TopologyError};
use ibqos_mad::{Guid, NodeType};
use ibqos_qos::VlCount;
use tracing::warn;

use super::lids::endport_lmc;
use super::subnet::Subnet;

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

/// A sweep's routing: the LFTs, the engine that computed them, and what it decided beside them
/// (the SLs of paths, its SL2VL and VLArb tables).
#[derive(Debug, Clone)]
pub struct SweepRoutes {
    pub lfts: Lfts,
    pub engine: &'static dyn Engine,
    pub layering: Arc<dyn Layering>,
}

/// Why the sweep could not route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("the discovered fabric is inconsistent: {0}")]
    Topology(TopologyError),
    #[error(transparent)]
    Unrouted(Unrouted),
}

/// Every switch's LFT for the discovered subnet, from the first engine of `engines` that routes
/// it on links running `vls` data VLs, and that engine. Each engine passed over is logged.
///
/// Endports route with the LMC `lmc` gives them, the one the link manager's PortInfo Sets
/// write: routing comes before those Sets, as in OpenSM's sweep.
pub fn route(
    subnet: &Subnet,
    engines: &EngineList,
    vls: VlCount,
    lmc: u8,
) -> Result<SweepRoutes, RouteError> {
    route_topology(topology(subnet, Some(lmc)), engines, vls)
}

/// [`route`] on the subnet already made a topology ([`topology`] with the planned LMC): the
/// part that needs no subnet, so that it can run on a thread of its own.
pub(crate) fn route_topology(
    topology: Result<(Topology, Vec<u64>), TopologyError>,
    engines: &EngineList,
    vls: VlCount,
) -> Result<SweepRoutes, RouteError> {
    let (topology, guids) = topology.map_err(RouteError::Topology)?;
    // OpenSM logs a GUID file it cannot parse at each routing; so does the sweep.
    let options = engines.options();
    for file in &options.failed_files {
        warn!(
            option = file.option(),
            "the GUID file was not read to its end: the engines route as OpenSM's do with a \
             file that failed (see `ibqos check`)"
        );
    }
    let routed = engines
        .route(&topology, vls)
        .map_err(RouteError::Unrouted)?;
    for attempt in &routed.attempts {
        warn!(
            engine = attempt.name,
            reason = %attempt.skipped,
            routed_by = routed.engine.name(),
            "routing engine did not route; fell back"
        );
    }
    let tables = routed
        .routes
        .iter()
        .map(|(id, lft)| (guids[id.0 as usize], lft.to_vec()))
        .collect();
    Ok(SweepRoutes {
        lfts: Lfts { tables },
        engine: routed.engine,
        layering: routed.layering,
    })
}

/// The subnet as a fabric topology (node ids in GUID order), and the GUID of each node id.
/// Endports have the LMC `planned_lmc` gives them ([`endport_lmc`]), or the one they hold.
pub(crate) fn topology(
    subnet: &Subnet,
    planned_lmc: Option<u8>,
) -> Result<(Topology, Vec<u64>), TopologyError> {
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
                fabric_port.lmc = match planned_lmc {
                    Some(lmc) if port.lid != 0 => endport_lmc(node.is_switch(), lmc),
                    _ => port.info.lmc,
                };
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
