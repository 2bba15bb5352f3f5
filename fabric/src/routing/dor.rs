//! Dimension-order routing (OpenSM's `dor`: minhop with `is_dor`, `osm_ucast_mgr.c` and
//! `osm_switch_recommend_path`).
//!
//! The hop counts are minhop's. Toward each destination a switch keeps, of its ports on a
//! shortest path, only those leading to the same node as the first of them in port order: on a
//! mesh or hypercube cabled with each dimension's ports before the next dimension's, that is the
//! lowest dimension still to travel. The balancing step spreads destinations only over the
//! parallel links to that node, with DOR's rules (see the balancing module).

use ibqos_qos::VlCount;

use super::balance;
use super::engine::{Engine, Routing};
use super::minhop::shortest_ports;
use super::{Routes, RoutingError, RoutingOptions, SwitchGraph, destinations};
use crate::topology::Topology;

/// OpenSM's `dor`: [`dor`] behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct Dor;

impl Engine for Dor {
    fn name(&self) -> &'static str {
        "dor"
    }

    fn is_unlayered(&self) -> bool {
        true
    }

    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        _vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        dor(topo, options).map(Routing::from)
    }
}

/// Routes every end port LID along dimension order, as OpenSM's DOR does (see the module's
/// comment). Fails as [`minhop`](super::minhop()) fails.
pub fn dor(topo: &Topology, options: &RoutingOptions) -> Result<Routes, RoutingError> {
    topo.validate()?;
    let graph = SwitchGraph::new(topo);
    let dests = destinations(topo, &graph, options)?;
    let mut toward = shortest_ports(&graph);
    for lists in &mut toward {
        for (s, ports) in lists.iter_mut().enumerate() {
            first_dimension(&graph, s, ports);
        }
    }
    balance::build_dor(topo, &graph, &dests, options, |_, t, s| &toward[t][s])
}

/// Keeps of `ports` (switch `s`'s, in port order) those leading to the same switch as the first.
fn first_dimension(graph: &SwitchGraph, s: usize, ports: &mut Vec<u8>) {
    let neighbour = |port: u8| {
        graph.adj[s]
            .iter()
            .find(|&&(p, _)| p == port)
            .map(|&(_, n)| n)
    };
    let Some(&first) = ports.first() else { return };
    let first = neighbour(first);
    ports.retain(|&p| neighbour(p) == first);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{assign_lids, mesh_2d, torus_2d};
    use crate::routing::minhop;
    use crate::topology::{NodeId, PortRef};

    fn with_lids(mut topo: Topology) -> Topology {
        assign_lids(&mut topo, 0).unwrap();
        topo
    }

    fn lid_of(topo: &Topology, name: &str, port: u8) -> u16 {
        let node = topo.node_by_name(name).unwrap();
        topo.port(PortRef::new(node, port)).unwrap().lid
    }

    /// The ports a route from switch `from` to `lid` leaves its switches by, `from`'s first.
    fn ports(topo: &Topology, routes: &Routes, from: NodeId, lid: u16) -> Vec<u8> {
        let mut at = from;
        let mut ports = Vec::new();
        while let Some(port) = routes.port(at, lid).filter(|&p| p != 0) {
            ports.push(port);
            let peer = topo.node(at).unwrap().port(port).unwrap().peer.unwrap();
            if !topo.node(peer.node).unwrap().is_switch() {
                break;
            }
            at = peer.node;
        }
        ports
    }

    /// Whether every route from every switch to every CA travels x (ports 1 and 2) before y
    /// (ports 3 and 4).
    fn x_before_y(topo: &Topology, routes: &Routes) -> bool {
        let cas: Vec<u16> = topo
            .cas()
            .map(|(id, _)| topo.port(PortRef::new(id, 1)).unwrap().lid)
            .collect();
        topo.switches().all(|(s, _)| {
            cas.iter().all(|&lid| {
                let ports = ports(topo, routes, s, lid);
                let first_y = ports.iter().position(|&p| p == 3 || p == 4);
                first_y.is_none_or(|y| ports[y..].iter().all(|&p| p > 2))
            })
        })
    }

    /// On a mesh every route travels the first dimension first; minhop's balancing mixes them.
    #[test]
    fn routes_travel_the_first_dimension_first() {
        let topo = with_lids(mesh_2d(3, 3, 1).unwrap());
        let routes = dor(&topo, &RoutingOptions::default()).unwrap();
        assert!(x_before_y(&topo, &routes));
        let minhop = minhop(&topo, &RoutingOptions::default()).unwrap();
        assert!(!x_before_y(&topo, &minhop));
    }

    /// Two parallel links to one neighbour (a torus dimension of 2) share its destinations.
    #[test]
    fn parallel_links_of_one_dimension_share_the_load() {
        let topo = with_lids(torus_2d(2, 3, 2).unwrap());
        let routes = dor(&topo, &RoutingOptions::default()).unwrap();
        let s = topo.node_by_name("S0_0").unwrap();
        let lids: Vec<u16> = (0..2)
            .map(|h| lid_of(&topo, &format!("H1_0_{h}"), 1))
            .collect();
        let ports: Vec<u8> = lids.iter().map(|&l| routes.port(s, l).unwrap()).collect();
        assert_eq!(ports, [1, 2]);
    }
}
