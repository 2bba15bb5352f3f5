//! OpenSM's `nue` engine (`osm_ucast_nue.c`): deadlock-free routing on the complete channel
//! dependency graph (cCDG), on as many VL layers as it is given, one included.
//!
//! - The layers: `nue_max_num_vls` of them (0: as many as the switch ports run, capped by
//!   them), one without `qos`. The destinations (CA ports, and switches with
//!   `nue_include_switches`) are dealt to the layers in turn, in OpenSM's port-GUID order, as
//!   Debian's OpenSM does: it is built without METIS, which would partition the fabric instead.
//!   A destination's SL is its layer (`path_sl`), with one layer the policy's SL.
//! - Per layer, the escape paths ([`escape`]): a spanning tree from the switch most central to
//!   the layer's destinations, reserved in the cCDG ([`ccdg`]).
//! - Per destination LID, in the layer's order (CAs first, then switches), a modified Dijkstra
//!   on the cCDG ([`route`]) that never closes a cycle in the dependencies the layer's routes
//!   use; link weights then grow along the routes, steering the next destinations away.
//! - Without `nue_include_switches`, the switches are routed last, each on plain weighted
//!   shortest paths ([`network`]), on layer 0: OpenSM takes switches for no real traffic.
//!
//! Nue writes no SL2VL or VLArb table: the QoS manager's (SL i on VL i, masked) carry the
//! layers. Not mirrored: `avoid_throttled_links` (the topology knows no link's active speed or
//! width, so no link is throttled); Nue's own multicast trees (a spanning tree over its link
//! weights: the MLIDs get OpenSM's generic trees); and where OpenSM would read past its arrays
//! or crash (a channel missing from the heap, a dependency the cCDG lacks), this engine refuses
//! or skips.

mod ccdg;
mod escape;
mod network;
mod route;

use std::ops::RangeInclusive;
use std::sync::Arc;

use ibqos_mad::Guid;
use ibqos_qos::VlCount;

use self::ccdg::{Ccdg, ESCAPE};
use self::network::{HEAP_ARITY, Network};
use super::engine::{Engine, Layering, Routing};
use super::heap::Heap;
use super::{NO_ROUTE, Routes, RoutingError, RoutingOptions, checked_max_lid, vl_count_for};
use crate::topology::{NodeId, NodeKind, Topology};

/// OpenSM's `nue`.
#[derive(Debug, Clone, Copy)]
pub struct Nue;

impl Engine for Nue {
    fn name(&self) -> &'static str {
        "nue"
    }

    /// Never short of VLs: with fewer layers Nue leans on its escape paths.
    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        let max_lid = checked_max_lid(topo)?;
        let layers = layer_count(options, vls);
        let (ports, total_lids) = routed_ports(topo);
        let net = Network::new(topo, switch_lids(topo)?, total_lids);
        let dests: Vec<Destination> = ports
            .into_iter()
            .filter_map(|(lids, switch, ca_port)| {
                Some(Destination {
                    lids,
                    switch: net.switch_of(switch)?,
                    ca_port,
                })
            })
            .collect();
        let mut context = Context::new(net);
        let mut tables = Tables::new(&context.net, topo, max_lid);
        let include_switches = options.nue_include_switches;
        for (layer, members) in deal(&dests, layers, include_switches).iter().enumerate() {
            context.route_layer(members, layer as u8, &mut tables)?;
        }
        if !include_switches {
            context.route_switches(topo, &mut tables);
        }
        let lfts = context.net.switches.iter().map(|s| s.node).zip(tables.lfts);
        Ok(Routing {
            routes: Routes {
                lfts: lfts.collect(),
                max_lid,
            },
            layering: Arc::new(NueLayering {
                layers,
                layer_of: tables.layer_of,
            }),
        })
    }
}

/// Every switch with the LID of its port 0, which names it in Nue's network.
fn switch_lids(topo: &Topology) -> Result<Vec<(u16, NodeId)>, RoutingError> {
    topo.switches()
        .map(|(id, node)| match node.port(0).map_or(0, |p| p.lid) {
            0 => Err(RoutingError::MissingLid(node.name.clone())),
            lid => Ok((lid, id)),
        })
        .collect()
}

/// `get_max_num_vls` and the qos rule: the switch ports' VLs, or fewer if `nue_max_num_vls`
/// asks (0 asks for all, and more than the ports run is ignored, OpenSM's `WRN NUE47`); one
/// without `qos`, since the SL2VL tables would not keep the layers apart (`WRN NUE48`).
fn layer_count(options: &RoutingOptions, vls: VlCount) -> u8 {
    if !options.qos {
        return 1;
    }
    let available = vls.count();
    match options.nue_max_num_vls.0 {
        0 => available,
        asked => asked.min(available),
    }
}

/// A port routed to, with its LIDs.
#[derive(Debug)]
struct Destination {
    lids: RangeInclusive<u16>,
    /// The switch it hangs off, or is.
    switch: usize,
    /// The switch port a CA hangs off; `None` for a switch's port 0.
    ca_port: Option<u8>,
}

impl Destination {
    fn is_switch(&self) -> bool {
        self.ca_port.is_none()
    }
}

/// A port's LIDs, the node of the switch it hangs off (or is), and the switch port a CA hangs
/// off: a [`Destination`] before the network numbers the switches.
type RoutedPort = (RangeInclusive<u16>, NodeId, Option<u8>);

/// Every CA port hanging off a switch and every switch's port 0, with its LIDs, the node of
/// its switch and the switch port a CA hangs off, in OpenSM's port-GUID order
/// (`port_guid_tbl`). And the LIDs of all CA and switch ports: the square of that count is
/// every link's first weight. Routers are neither routed nor counted.
fn routed_ports(topo: &Topology) -> (Vec<RoutedPort>, u64) {
    let mut ports = Vec::new();
    let mut total = 0u64;
    for ep in topo.endports() {
        let (Some(node), Some(port)) = (topo.node(ep.node), topo.port(ep)) else {
            continue;
        };
        let peer = match node.kind {
            NodeKind::Switch => None,
            NodeKind::Ca if port.peer.is_some() => port.peer,
            NodeKind::Ca | NodeKind::Router => continue,
        };
        total += 1 << port.lmc.min(7);
        let Some(lids) = port.lid_range() else {
            continue;
        };
        let switch = match peer {
            None => ep.node,
            Some(peer) if topo.node(peer.node).is_some_and(|n| n.is_switch()) => peer.node,
            Some(_) => continue,
        };
        let order = Guid(port.guid).opensm_order();
        ports.push((order, (lids, switch, peer.map(|p| p.port))));
    }
    ports.sort_by_key(|&(order, _)| order);
    (ports.into_iter().map(|(_, port)| port).collect(), total)
}

/// `distribute_lids_semi_randomly`: the destinations dealt to `layers` layers in turn,
/// switches skipped unless `include_switches`.
fn deal(dests: &[Destination], layers: u8, include_switches: bool) -> Vec<Vec<&Destination>> {
    let mut dealt: Vec<Vec<&Destination>> = vec![Vec::new(); usize::from(layers.max(1))];
    let mut layer = 0;
    for dest in dests {
        if dest.is_switch() && !include_switches {
            continue;
        }
        dealt[layer].push(dest);
        layer = (layer + 1) % dealt.len();
    }
    dealt
}

/// The graphs a routing works on: the network, its cCDG and the heap of the cCDG's Dijkstra,
/// which keeps each channel's last place from one destination to the next, as OpenSM's does.
#[derive(Debug)]
struct Context {
    net: Network,
    ccdg: Ccdg,
    heap: Heap,
}

/// What the routing fills: every switch's LFT (in network order) and each LID's layer.
#[derive(Debug)]
struct Tables {
    lfts: Vec<Vec<u8>>,
    /// The layer of each LID an end port holds (0 until routed, and for routers), `None` for
    /// a LID nothing holds.
    layer_of: Vec<Option<u8>>,
}

impl Tables {
    /// No route anywhere but to each switch's own LIDs, through port 0.
    fn new(net: &Network, topo: &Topology, max_lid: u16) -> Tables {
        let entries = usize::from(max_lid) + 1;
        let lfts = net
            .switches
            .iter()
            .map(|s| {
                let mut lft = vec![NO_ROUTE; entries];
                for lid in own_lids(topo, s.node) {
                    lft[usize::from(lid)] = 0;
                }
                lft
            })
            .collect();
        let mut layer_of = vec![None; entries];
        for ep in topo.endports() {
            for lid in topo
                .port(ep)
                .and_then(|p| p.lid_range())
                .into_iter()
                .flatten()
            {
                layer_of[usize::from(lid)] = Some(0);
            }
        }
        Tables { lfts, layer_of }
    }
}

/// The LIDs of port 0 of switch `node`.
fn own_lids(topo: &Topology, node: NodeId) -> impl Iterator<Item = u16> {
    let port = topo.node(node).and_then(|n| n.port(0));
    port.and_then(|p| p.lid_range()).into_iter().flatten()
}

impl Context {
    fn new(mut net: Network) -> Context {
        let ccdg = Ccdg::new(&mut net);
        let heap = Heap::new(HEAP_ARITY, ccdg.channels.len());
        Context { net, ccdg, heap }
    }

    /// One layer: its escape paths, then each member's LIDs, CAs before switches.
    fn route_layer(
        &mut self,
        members: &[&Destination],
        layer: u8,
        tables: &mut Tables,
    ) -> Result<(), RoutingError> {
        if members.is_empty() {
            return Ok(());
        }
        let lids: usize = members.iter().map(|d| d.lids.clone().count()).sum();
        self.ccdg.reset_colours(ESCAPE + 1 + lids);
        let hanging: Vec<usize> = members.iter().map(|d| d.switch).collect();
        let ca_switches: Vec<usize> = members
            .iter()
            .filter(|d| !d.is_switch())
            .map(|d| d.switch)
            .collect();
        self.mark_escape_paths(&hanging, &ca_switches, layer == 0)?;
        let mut colour = ESCAPE + 1;
        let cas = members.iter().filter(|d| !d.is_switch());
        let switches = members.iter().filter(|d| d.is_switch());
        for dest in cas.chain(switches) {
            for lid in dest.lids.clone() {
                self.route_toward(dest.switch, colour)?;
                colour += 1;
                self.write_lfts(lid, dest.ca_port, tables);
                self.net.add_weights(dest.switch);
                tables.layer_of[usize::from(lid)] = Some(layer);
            }
        }
        Ok(())
    }

    /// The switches, when they are no destinations of the layers: each on the weighted
    /// shortest paths of a spanning tree rooted at it, on layer 0.
    fn route_switches(&mut self, topo: &Topology, tables: &mut Tables) {
        for s in 0..self.net.switches.len() {
            for lid in own_lids(topo, self.net.switches[s].node) {
                self.net.spanning_tree(s);
                self.use_escape_paths(s);
                self.write_lfts(lid, None, tables);
                self.net.add_weights(s);
                tables.layer_of[usize::from(lid)] = Some(0);
            }
        }
    }

    /// `update_linear_forwarding_tables`: each switch forwards `lid` out of the link it was
    /// reached by; the switch a CA hangs off (or, as in OpenSM, any switch no route reached)
    /// forwards it to `ca_port`, the CA's.
    fn write_lfts(&self, lid: u16, ca_port: Option<u8>, tables: &mut Tables) {
        for (s, switch) in self.net.switches.iter().enumerate() {
            let exit = match (switch.used_link, ca_port) {
                (Some(link), _) => self.net.links[link].to_port,
                (None, Some(port)) => port,
                (None, None) => continue,
            };
            tables.lfts[s][usize::from(lid)] = exit;
        }
    }
}

/// What a Nue routing decided beside the LFTs: each destination LID's layer.
#[derive(Debug)]
struct NueLayering {
    layers: u8,
    layer_of: Vec<Option<u8>>,
}

impl Layering for NueLayering {
    /// OpenSM's `nue_get_vl_for_path`: the hint on one layer (any SL is free of credit loops
    /// then) or for a LID no port holds; else the destination LID's layer.
    fn path_sl(&self, hint: u8, _slid: u16, dlid: u16) -> u8 {
        if self.layers == 1 {
            return hint;
        }
        match self.layer_of.get(usize::from(dlid)) {
            Some(Some(layer)) => *layer,
            _ => hint,
        }
    }

    fn keeps_hint(&self) -> bool {
        self.layers == 1
    }

    fn vls_used(&self) -> VlCount {
        vl_count_for(usize::from(self.layers))
    }
}

#[cfg(test)]
mod tests {
    use ibqos_qos::{Sl, Sl2VlTable, Vl};

    use super::*;
    use crate::credit_loops::{CreditReport, FabricTables, PathSls, VlTables, check};
    use crate::generate::{assign_lids, torus_2d};
    use crate::routing::{NueMaxVls, minhop};

    fn torus() -> Topology {
        let mut topo = torus_2d(4, 4, 1).unwrap();
        assign_lids(&mut topo, 0).unwrap();
        topo
    }

    fn options(qos: bool, max_vls: u8) -> RoutingOptions {
        RoutingOptions {
            qos,
            nue_max_num_vls: NueMaxVls(max_vls),
            ..RoutingOptions::default()
        }
    }

    /// The credit loops of `routes` and `layering` on `topo`, every SL on its own VL of eight,
    /// the PathRecords' SLs from a policy SL of 0.
    fn credit_loops(topo: &Topology, routes: &Routes, layering: &dyn Layering) -> CreditReport {
        let identity = Sl2VlTable(std::array::from_fn(|sl| Vl::from_nibble(sl as u8)));
        let vls = VlTables::new(identity, VlCount::Eight);
        let tables = FabricTables {
            topology: topo,
            routes,
            vls: &vls,
        };
        let hints = [Sl::ALL[0]].into_iter().collect();
        check(tables, PathSls::Routed { layering, hints })
    }

    /// Minhop closes credit loops on a 4x4 torus; Nue with `nue_include_switches` closes none,
    /// on one layer or several. Without it the switches are routed on plain shortest paths, as
    /// OpenSM routes them, and every loop left holds a route to a switch.
    #[test]
    fn nue_is_free_of_credit_loops_where_minhop_is_not() {
        let topo = torus();
        let plain = minhop(&topo, &RoutingOptions::default()).unwrap();
        assert!(!credit_loops(&topo, &plain, &super::super::Unlayered).is_free());
        let switch_lids: Vec<u16> = topo
            .switches()
            .filter_map(|(_, n)| Some(n.port(0)?.lid))
            .collect();
        for (qos, max_vls) in [(false, 1), (true, 2), (true, 0)] {
            let what = format!("qos {qos}, nue_max_num_vls {max_vls}");
            let mut with_switches = options(qos, max_vls);
            with_switches.nue_include_switches = true;
            let routing = Nue.unicast(&topo, &with_switches, VlCount::Eight).unwrap();
            let report = credit_loops(&topo, &routing.routes, routing.layering.as_ref());
            assert!(report.is_free(), "{what}: {}", report.describe(&topo));
            let routing = Nue
                .unicast(&topo, &options(qos, max_vls), VlCount::Eight)
                .unwrap();
            let report = credit_loops(&topo, &routing.routes, routing.layering.as_ref());
            for found in &report.loops {
                let to_switch = found.closing.iter().any(|r| switch_lids.contains(&r.dlid));
                assert!(to_switch, "{what}: {}", report.describe(&topo));
            }
        }
    }

    /// The layers: `nue_max_num_vls` within what the ports run, all of it for 0, one without
    /// qos. The SL is the destination's layer, dealt in turn, or the hint on one layer.
    #[test]
    fn destinations_are_dealt_to_the_layers_and_give_the_sl() {
        let topo = torus();
        for (qos, max_vls, vls, layers) in [
            (false, 4, VlCount::Eight, 1),
            (true, 1, VlCount::Eight, 1),
            (true, 3, VlCount::Eight, 3),
            (true, 0, VlCount::Four, 4),
            (true, 9, VlCount::Four, 4),
        ] {
            assert_eq!(layer_count(&options(qos, max_vls), vls), layers);
        }
        let routing = Nue
            .unicast(&topo, &options(true, 3), VlCount::Eight)
            .unwrap();
        let layering = routing.layering;
        assert_eq!(layering.vls_used(), VlCount::Four);
        assert!(!layering.keeps_hint());
        // The 16 CAs, in port GUID order, take layers 0, 1, 2, 0, ...; switches are layer 0.
        let (ports, _) = routed_ports(&topo);
        let cas = ports.iter().filter(|(_, _, ca_port)| ca_port.is_some());
        for (k, (lids, _, _)) in cas.enumerate() {
            assert_eq!(layering.path_sl(7, 1, *lids.start()), (k % 3) as u8);
        }
        let switch_lid = topo.switches().next().unwrap().1.port(0).unwrap().lid;
        assert_eq!(layering.path_sl(7, 1, switch_lid), 0);
        assert_eq!(layering.path_sl(7, 1, 0xBFFF), 7);
        let one = Nue
            .unicast(&topo, &options(false, 3), VlCount::Eight)
            .unwrap();
        assert_eq!(one.layering.path_sl(7, 1, switch_lid), 7);
        assert!(one.layering.keeps_hint());
        assert_eq!(one.layering.vls_used(), VlCount::One);
    }
}
