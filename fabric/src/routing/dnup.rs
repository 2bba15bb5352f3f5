//! Down*/up* routing exactly as OpenSM's `dnup` engine (`osm_ucast_dnup.c`) computes it: up*/down*
//! seen from the leaves.
//!
//! Rank 0 is every switch with a CA or router attached; the others are ranked by hop distance
//! from them. A fabric with no such switch fails the engine. Each destination switch's row of the
//! hop matrix comes from the search [`updn`](super::updn) runs, with dnup's labels
//! (`dnup_get_dir`): toward a higher rank down, toward a lower rank up, between equal ranks
//! (roots included) neither. The search starts down and refuses a down step after an up one.
//!
//! `connect_roots` does not refuse those steps: it searches again, adding one more than the
//! highest count of the first search to each of them, so they serve only where nothing else
//! does. A count that reaches the hop limit marks the port unusable, as OpenSM's ERR AE02 does.

use ibqos_qos::VlCount;

use super::balance::{self, NoPath};
use super::engine::{Engine, Routing};
use super::updn::{Dir, Links, Turns, search};
use super::{Routes, RoutingError, RoutingOptions, SwitchGraph, destinations};
use crate::topology::Topology;

/// OpenSM's `dnup`: [`dnup`] behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct DownUp;

impl Engine for DownUp {
    fn name(&self) -> &'static str {
        "dnup"
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
        dnup(topo, options).map(Routing::from)
    }
}

/// `dnup_get_dir`: the label of the search step between ranks `cur` and `rem`.
fn dnup_dir(cur: u32, rem: u32) -> Dir {
    match cur.cmp(&rem) {
        std::cmp::Ordering::Less => Dir::Down,
        std::cmp::Ordering::Greater => Dir::Up,
        std::cmp::Ordering::Equal => Dir::Equal,
    }
}

/// Down*/up* routes as OpenSM's `dnup` computes them with `options`' `connect_roots`. Fails when
/// no switch has a CA or router attached, as OpenSM does ("No leaf switches found").
pub fn dnup(topo: &Topology, options: &RoutingOptions) -> Result<Routes, RoutingError> {
    topo.validate()?;
    let graph = SwitchGraph::new(topo);
    let dests = destinations(topo, &graph, options)?;
    let leaves: Vec<usize> = (0..graph.len())
        .filter(|&s| {
            topo.node(graph.ids[s]).is_some_and(|node| {
                node.existing_ports().any(|(_, port)| {
                    port.peer
                        .is_some_and(|peer| graph.slot_of(peer.node).is_none())
                })
            })
        })
        .collect();
    if leaves.is_empty() {
        return Err(RoutingError::NoLeaves);
    }
    let rank = graph.bfs(&leaves, |_, _| true);
    let step = |u: usize, r: usize| dnup_dir(rank[u], rank[r]);
    let links = Links::new(topo, &graph);
    let search_all = |prune_weight: u8, max_hops: &mut u8| -> Vec<Vec<Vec<u8>>> {
        let turns = Turns {
            start: Dir::Down,
            step: &step,
            refused: (Dir::Up, Dir::Down),
            prune_weight,
        };
        (0..graph.len())
            .map(|t| search(&links, t, &turns, max_hops))
            .collect()
    };
    let mut max_hops = 0;
    let mut toward = search_all(0, &mut max_hops);
    if options.connect_roots {
        toward = search_all(max_hops.wrapping_add(1), &mut 0);
    }
    balance::build(topo, &graph, &dests, NoPath::Unset, options, |_, t, s| {
        &toward[t][s]
    })
}
