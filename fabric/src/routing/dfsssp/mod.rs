//! OpenSM's `dfsssp` and `sssp` engines (`osm_ucast_dfsssp.c`): shortest paths balanced by link
//! weights, one Dijkstra per destination LID ([`paths`]); DFSSSP then spreads the
//! source-destination pairs over as many layers, each its own SL, as keep every layer free of
//! credit loops ([`layers`]). SSSP stops after the paths and keeps the configuration's SLs.

mod layers;
mod paths;

use std::collections::HashMap;
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

use ibqos_qos::VlCount;

use super::engine::{Engine, Routing};
use super::{Routes, RoutingError, RoutingOptions, checked_max_lid};
use crate::topology::{NodeId, PortRef, Topology};

/// A directed link: `to` reaches `from` through its port `to_port`.
#[derive(Debug, Clone)]
struct Link {
    from: usize,
    to: usize,
    to_port: u8,
    weight: u64,
}

/// A switch of the graph.
#[derive(Debug)]
struct Switch {
    node: NodeId,
    /// The base LID of port 0, which names the switch's channels.
    lid: u16,
    /// The LIDs of the switch's port 0 and of the CA and router ports linked to it: what each
    /// link of a path from this switch gains.
    num_hca: u64,
    /// Its links in `Graph::links`, in port order.
    links: Range<usize>,
}

/// DFSSSP's `adj_list`: the switches and their links.
#[derive(Debug)]
struct Graph {
    /// Vertex `v` is `switches[v - 1]`.
    switches: Vec<Switch>,
    links: Vec<Link>,
    vertex_of: HashMap<NodeId, usize>,
}

/// Where a destination sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attachment {
    /// A CA port linked to port `port` of switch vertex `switch`.
    Ca { switch: usize, port: u8 },
    /// Port 0 of switch vertex `.0`.
    Switch(usize),
}

/// A port routed to, with its LIDs.
#[derive(Debug, Clone)]
struct Destination {
    port: PortRef,
    lids: RangeInclusive<u16>,
    attachment: Attachment,
    /// PortInfo.CapabilityMask.IsSLMappingSupported: DFSSSP layers only such ports' paths.
    sl_mapping: bool,
}

/// Every switch's table, indexed by vertex - 1 then LID.
type Tables = Vec<Vec<u8>>;

/// What DFSSSP decided beside its tables: each pair's layer and how many SLs each layer spans.
#[derive(Debug)]
struct Layers {
    /// Every layered LID, ascending.
    lids: Vec<u16>,
    /// Row per source LID, column per destination LID (indexes into `lids`).
    layer: Vec<u8>,
    /// The SLs each layer's group spans from its first.
    split: Vec<u8>,
    used: VlCount,
}

/// OpenSM's `dfsssp`: deadlock-free single-source shortest paths.
#[derive(Debug, Clone, Copy)]
pub struct Dfsssp;

/// OpenSM's `sssp`: the same shortest paths, without deadlock removal.
#[derive(Debug, Clone, Copy)]
pub struct Sssp;

impl Engine for Dfsssp {
    fn name(&self) -> &'static str {
        "dfsssp"
    }

    /// Fails with [`RoutingError::TooFewVls`] when the last of `vls` layers still holds a
    /// credit loop (OpenSM's `ERR AD25`).
    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        let (graph, order, tables) = shortest_paths(topo, options)?;
        let layers = Layers::new(&graph, topo, &tables, &order, vls)?;
        Ok(Routing {
            routes: routes(&graph, tables),
            layering: Arc::new(layers),
        })
    }
}

impl Engine for Sssp {
    fn name(&self) -> &'static str {
        "sssp"
    }

    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        _vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        let (graph, _, tables) = shortest_paths(topo, options)?;
        Ok(routes(&graph, tables).into())
    }
}

/// The graph, the destinations in routing order and every switch's table.
fn shortest_paths(
    topo: &Topology,
    options: &RoutingOptions,
) -> Result<(Graph, Vec<Destination>, Tables), RoutingError> {
    let max_lid = checked_max_lid(topo)?;
    let mut graph = Graph::new(topo)?;
    let order = graph.destinations(topo, options)?;
    let tables = graph.route(&order, max_lid);
    Ok((graph, order, tables))
}

fn routes(graph: &Graph, tables: Tables) -> Routes {
    let max_lid = tables.first().map_or(0, |t| (t.len() - 1) as u16);
    Routes {
        lfts: graph.switches.iter().map(|s| s.node).zip(tables).collect(),
        max_lid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{assign_lids, ring};
    use crate::topology::PortRef;

    fn ring_of(switches: usize) -> Topology {
        let mut topo = ring(switches, 1).unwrap();
        assign_lids(&mut topo, 0).unwrap();
        topo
    }

    /// A ring's shortest paths close a credit loop: one layer is not enough.
    #[test]
    fn a_ring_needs_two_layers() {
        let topo = ring_of(6);
        let options = RoutingOptions::default();
        assert_eq!(
            Dfsssp.unicast(&topo, &options, VlCount::One).err(),
            Some(RoutingError::TooFewVls {
                needed: VlCount::Two,
                available: VlCount::One,
            })
        );
        let layered = Dfsssp.unicast(&topo, &options, VlCount::Two).unwrap();
        assert_eq!(layered.layering.vls_used(), VlCount::Two);
        let plain = Sssp.unicast(&topo, &options, VlCount::One).unwrap();
        assert_eq!(plain.routes, layered.routes);
        assert_eq!(plain.layering.vls_used(), VlCount::One);
    }

    /// A switch the others cannot reach fails the engine as OpenSM's dry run does.
    #[test]
    fn a_detached_switch_is_refused() {
        let mut topo = ring_of(4);
        let (first, node) = topo.switches().next().unwrap();
        let to_switches: Vec<PortRef> = node
            .existing_ports()
            .filter(|(_, port)| {
                port.peer
                    .is_some_and(|q| topo.node(q.node).is_some_and(|n| n.is_switch()))
            })
            .map(|(p, _)| PortRef::new(first, p))
            .collect();
        for port in to_switches {
            topo.disconnect(port);
        }
        let error = Sssp
            .unicast(&topo, &RoutingOptions::default(), VlCount::One)
            .unwrap_err();
        assert!(error.to_string().starts_with("ERR AD0C"), "{error}");
    }
}
