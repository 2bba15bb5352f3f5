//! Hand-built topologies for the routing tests: a node added, two ports linked, in one line
//! each.

use crate::{Node, NodeId, NodeKind, PortRef, Topology};

pub fn add(t: &mut Topology, kind: NodeKind, guid: u64, name: &str, ports: u8) -> NodeId {
    t.add_node(Node::new(kind, guid, name, ports)).unwrap()
}

pub fn link(t: &mut Topology, a: NodeId, pa: u8, b: NodeId, pb: u8) {
    t.connect(PortRef::new(a, pa), PortRef::new(b, pb)).unwrap();
}
