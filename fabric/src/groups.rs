//! A net file's fabric as qos-policy.conf sees it: the members of its port groups and the ports
//! its qos-setup scopes choose from, as the SM would find them on this fabric.

use ibqos_qos::policy::setup::{SetupError, SetupPort, SetupTables};
use ibqos_qos::policy::{DirectoryNode, EndPort, NodeDirectory, QosPolicy, ResolveError};

use crate::{PortRef, Topology};

/// The fabric's nodes and ports for group membership; no port is the SM's (a net file does not
/// say where the SM runs).
pub fn directory(topo: &Topology) -> NodeDirectory {
    let nodes = topo.nodes().map(|(_, node)| DirectoryNode {
        guid: node.guid,
        node_type: node.kind.into(),
        description: node.description.clone(),
        ports: node.existing_ports().map(|(n, p)| (n, p.guid)).collect(),
    });
    NodeDirectory::new(nodes, None)
}

/// What decides a port's group membership: its own GUID on a CA or router, its switch's (port
/// 0's) GUID on a switch, and its node's type.
pub fn member(topo: &Topology, port: PortRef) -> Option<EndPort> {
    let node = topo.node(port.node)?;
    let endport = if node.is_switch() { 0 } else { port.port };
    Some(EndPort {
        guid: node.port(endport)?.guid,
        node_type: node.kind.into(),
    })
}

/// Every port of the fabric as the qos-setup scopes see it. As the SM programs them, only
/// linked ports and an enhanced switch port 0 are outputs; every switch port is an SL-to-VL
/// input.
pub fn setup_ports(topo: &Topology) -> Vec<SetupPort> {
    topo.nodes()
        .flat_map(|(id, node)| {
            node.existing_ports().filter_map(move |(number, port)| {
                let at = PortRef::new(id, number);
                let output = match (node.is_switch(), number) {
                    (true, 0) => node.enhanced_port0,
                    _ => port.peer.is_some(),
                };
                Some(SetupPort {
                    node: node.guid,
                    port: number,
                    member: member(topo, at)?,
                    peer: port.peer.and_then(|p| member(topo, p)),
                    switch: node.is_switch(),
                    output,
                    name: format!("{}/P{number}", node.description),
                })
            })
        })
        .collect()
}

/// Why a policy's qos-setup cannot be programmed on a fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupProblem {
    /// The port groups do not resolve (OpenSM would drop the whole policy).
    #[error(transparent)]
    Groups(#[from] ResolveError),
    /// Scopes that name no group, hold values no table holds, or disagree on a port.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Scopes(Vec<SetupError>),
}

/// What `policy`'s qos-setup scopes program on this fabric.
pub fn setup_tables(topo: &Topology, policy: &QosPolicy) -> Result<SetupTables, SetupProblem> {
    let scopes = policy.check_setup().map_err(SetupProblem::Scopes)?;
    let (groups, _) = policy.resolve_groups(&directory(topo))?;
    scopes
        .apply(&groups, &setup_ports(topo))
        .map_err(SetupProblem::Scopes)
}
