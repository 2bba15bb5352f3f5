//! The seam between the SM (or the simulator) and the routing engines, after OpenSM's
//! `struct osm_routing_engine` (`include/opensm/osm_opensm.h`): one trait, one file per engine.
//!
//! OpenSM's hooks map to the trait's methods:
//! - `build_lid_matrices` and `ucast_build_fwd_tables`: [`Engine::unicast`], one pure step from a
//!   topology with LIDs to every switch's LFT;
//! - `path_sl`: [`Engine::path_sl`], the SL a path must use;
//! - the VLs an engine's routes need: [`Engine::vls_needed`] (LASH and DFSSSP fail when the
//!   fabric runs fewer);
//! - `update_sl2vl` and `update_vlarb`: [`Engine::update_sl2vl`] and [`Engine::update_vlarb`],
//!   which may rewrite a configured table before the QoS manager masks and writes it;
//! - `mcast_build_stree`: [`Engine::multicast`], the spanning trees of the MLIDs.
//!
//! Every hook but `unicast` has OpenSM's behaviour for an engine that leaves it NULL, as minhop
//! and up*/down* do: the policy's SL, one VL, the configured tables, OpenSM's generic tree.

use std::fmt;

use ibqos_qos::{EffectiveQos, PortClass, Priority, Sl2VlTable, VlArbTable, VlCount};

use super::{MulticastRouting, Routes, RoutingError, RoutingOptions};
use crate::topology::{NodeId, Topology};

/// A routing engine: what computes the forwarding tables, and what the QoS manager, the SA and
/// the multicast manager ask it afterwards.
pub trait Engine: fmt::Debug + Sync {
    /// The name `routing_engine` gives it, spelt as OpenSM spells it.
    fn name(&self) -> &'static str;

    /// Every switch's linear forwarding table, as `options` (opensm.conf's routing options and
    /// GUID files) ask.
    fn unicast(&self, topo: &Topology, options: &RoutingOptions) -> Result<Routes, RoutingError>;

    /// The SL of a path from `slid` to `dlid`, given `hint`, the SL the QoS policy, the
    /// partition or the default chose. An engine that does not layer its routes over SLs keeps
    /// the hint.
    fn path_sl(&self, hint: u8, _slid: u16, _dlid: u16) -> u8 {
        hint
    }

    /// The data VLs the engine's routes need to be free of credit loops. An engine needing more
    /// than the fabric runs fails, and the next in the list routes.
    fn vls_needed(&self) -> VlCount {
        VlCount::One
    }

    /// May rewrite `table`, the configured SL-to-VL table of traffic from `input` to `output`
    /// of the node with NodeGUID `node` (a CA port: input and output 0). The QoS manager masks
    /// the result with the output's OperVLs and writes it.
    fn update_sl2vl(&self, _node: u64, _input: u8, _output: u8, _table: &mut Sl2VlTable) {}

    /// May rewrite `table`, the configured VLArb table of `priority` on `port` of the node with
    /// NodeGUID `node`, before the QoS manager cuts it to the port's cap and masks it.
    fn update_vlarb(&self, _node: u64, _port: u8, _priority: Priority, _table: &mut VlArbTable) {}

    /// The multicast routing the MLIDs' spanning trees come from: OpenSM's generic tree over
    /// min-hop counts (`osm_mcast_mgr.c`), through the switches `multicast_capable` accepts.
    fn multicast<'t>(
        &self,
        topo: &'t Topology,
        multicast_capable: &dyn Fn(NodeId) -> bool,
    ) -> Result<MulticastRouting<'t>, RoutingError> {
        MulticastRouting::min_hop(topo, multicast_capable)
    }
}

/// What `engine` makes of the configured tables of `port` (of `class`) on the node with NodeGUID
/// `node`, before the planner masks them: its VLArb tables, and a CA's or router's SL2VL (a
/// switch's SL2VL goes by (input, output) pair).
pub fn update_port_tables(
    engine: &dyn Engine,
    settings: &mut EffectiveQos,
    class: PortClass,
    node: u64,
    port: u8,
) {
    if matches!(class, PortClass::Ca | PortClass::Rtr) {
        engine.update_sl2vl(node, 0, 0, &mut settings.sl2vl);
    }
    engine.update_vlarb(node, port, Priority::Low, &mut settings.vlarb_low);
    engine.update_vlarb(node, port, Priority::High, &mut settings.vlarb_high);
}
