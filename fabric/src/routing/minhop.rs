//! Min-hop routing (OpenSM's default engine, `osm_ucast_mgr.c`).

use ibqos_qos::VlCount;

use super::balance::{self, NoPath};
use super::engine::{Engine, Routing};
use super::{Routes, RoutingError, RoutingOptions, SwitchGraph, destinations};
use crate::topology::Topology;

/// OpenSM's default engine, `minhop`: [`minhop`] behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct MinHop;

impl Engine for MinHop {
    fn name(&self) -> &'static str {
        "minhop"
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
        minhop(topo, options).map(Routing::from)
    }
}

/// Routes every end port LID out of a port on a shortest switch-to-switch path, balanced across
/// equal paths as OpenSM's minhop does (see the balancing rules in this module's parent), with
/// the balancing options of `options`.
///
/// Fails when no end port has a LID, a linked end port has none, LIDs collide, or some switch
/// cannot reach some destination.
pub fn minhop(topo: &Topology, options: &RoutingOptions) -> Result<Routes, RoutingError> {
    topo.validate()?;
    let graph = SwitchGraph::new(topo);
    let dests = destinations(topo, &graph, options)?;
    let toward = shortest_ports(&graph);
    balance::build(topo, &graph, &dests, NoPath::Fail, options, |_, t, s| {
        &toward[t][s]
    })
}

/// `[t][s]`: the ports of switch `s` on a shortest path to switch `t`.
pub(super) fn shortest_ports(graph: &SwitchGraph) -> Vec<Vec<Vec<u8>>> {
    (0..graph.len())
        .map(|t| shortest_toward(graph, t))
        .collect()
}

/// `[s]`: the ports of switch `s` on a shortest path to switch `t`.
pub(super) fn shortest_toward(graph: &SwitchGraph, t: usize) -> Vec<Vec<u8>> {
    let dist = graph.bfs(&[t], |_, _| true);
    (0..graph.len())
        .map(|s| {
            graph.adj[s]
                .iter()
                .filter(|&&(_, n)| dist[n] != u32::MAX && dist[n] + 1 == dist[s])
                .map(|&(p, _)| p)
                .collect()
        })
        .collect()
}
