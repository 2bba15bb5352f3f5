//! Where a client of the emulated fabric sits: the one rule for the SM's in-process transport
//! (`ibqos sm --fabric sim:NET@NODE`), `ibqos fabric serve` (SIM_HOST, `--attach`) and
//! `ibqos fabric dump`.
//!
//! It is ibsim's rule (`sim_client.c`, `node_get_port(node, 0)`): a client that names a node (by
//! id or NodeDescription) sits at port 0 of a switch or port 1 of a CA or router. A client that
//! names none sits at the first CA, else at the first node. Attaching claims nothing: a client
//! that is an SM says so with [`Emulator::set_is_sm`](crate::Emulator::set_is_sm).

use ibqos_fabric::{NodeId, NodeKind, PortRef, Topology};

use crate::node_named;

/// Why a client cannot attach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    #[error("no node named `{0}`")]
    NoSuchNode(String),
    #[error("the fabric has no node to attach to")]
    NoNodes,
    #[error("{0} has no port {1} to attach at")]
    NoSuchPort(String, u8),
}

/// The port a client naming `node` sits at, or with `None` the default one.
pub fn attach_port(topology: &Topology, node: Option<&str>) -> Result<PortRef, AttachError> {
    let id = match node {
        Some(name) => {
            node_named(topology, name).ok_or_else(|| AttachError::NoSuchNode(name.to_owned()))?
        }
        None => default_node(topology).ok_or(AttachError::NoNodes)?,
    };
    node_port(topology, id)
}

/// The first CA, else the first node.
fn default_node(topology: &Topology) -> Option<NodeId> {
    topology
        .nodes()
        .find(|(_, n)| n.kind == NodeKind::Ca)
        .or_else(|| topology.nodes().next())
        .map(|(id, _)| id)
}

/// Port 0 of a switch, port 1 of a CA or router, if the node has it.
fn node_port(topology: &Topology, id: NodeId) -> Result<PortRef, AttachError> {
    let node = topology.node(id).ok_or(AttachError::NoNodes)?;
    let port = PortRef::new(id, if node.is_switch() { 0 } else { 1 });
    match node.port(port.port) {
        Some(_) => Ok(port),
        None => Err(AttachError::NoSuchPort(node.name.clone(), port.port)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_topology;

    #[test]
    fn a_named_node_by_id_or_description_a_switch_at_port_0_a_ca_at_port_1() {
        let mut t = load_topology("two-switch").unwrap().topology;
        let s1 = t.node_by_name("S1").unwrap();
        let h3 = t.node_by_name("H3").unwrap();
        t.node_mut(h3).unwrap().description = "host three".into();
        assert_eq!(attach_port(&t, Some("S1")), Ok(PortRef::new(s1, 0)));
        assert_eq!(attach_port(&t, Some("host three")), Ok(PortRef::new(h3, 1)));
        assert_eq!(
            attach_port(&t, Some("H9")),
            Err(AttachError::NoSuchNode("H9".into()))
        );
    }

    #[test]
    fn naming_none_attaches_at_the_first_ca_else_the_first_node() {
        let t = load_topology("two-switch").unwrap().topology;
        let first_ca = t.cas().next().unwrap().0;
        assert_eq!(attach_port(&t, None), Ok(PortRef::new(first_ca, 1)));
        let mut switches = Topology::new();
        let s = switches
            .add_node(ibqos_fabric::Node::new(NodeKind::Switch, 0x10, "S", 4))
            .unwrap();
        assert_eq!(attach_port(&switches, None), Ok(PortRef::new(s, 0)));
        assert_eq!(
            attach_port(&Topology::new(), None),
            Err(AttachError::NoNodes)
        );
    }
}
