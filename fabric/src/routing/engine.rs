//! The seam between the SM (or the simulator) and the routing engines, after OpenSM's
//! `struct osm_routing_engine` (`include/opensm/osm_opensm.h`): one trait, one file per engine.
//!
//! OpenSM's hooks map to the seam so:
//! - `build_lid_matrices` and `ucast_build_fwd_tables`: [`Engine::unicast`], one pure step from a
//!   topology with LIDs, and the data VLs the switch ports run, to every switch's LFT;
//! - the hooks that read what routing left in the engine's context (`path_sl`, `update_sl2vl`,
//!   `update_vlarb`): the [`Layering`] that comes back with the LFTs in a [`Routing`]. Engines
//!   that spend SLs and VLs to break credit loops (LASH, DFSSSP, Nue, torus-2QoS) decide them
//!   while routing, so the answers belong to that routing, not to the engine;
//! - `mcast_build_stree`: [`Engine::multicast`], the spanning trees of the MLIDs, parts of the
//!   layering's [`Layering::multicast_master`] when the routing chose one.
//!
//! An engine without layers returns [`Unlayered`], OpenSM's behaviour for the NULL hooks of
//! minhop and up*/down*: the policy's SL, one VL, the configured tables.

use std::fmt;
use std::sync::Arc;

use ibqos_qos::{EffectiveQos, PortClass, Priority, Sl2VlTable, VlArbTable, VlCount};

use super::{MasterTree, MulticastRouting, Routes, RoutingError, RoutingOptions};
use crate::topology::{NodeId, Topology};

/// A routing engine: what computes the forwarding tables, and the multicast trees.
pub trait Engine: fmt::Debug + Sync {
    /// The name `routing_engine` gives it, spelt as OpenSM spells it.
    fn name(&self) -> &'static str;

    /// Every switch's linear forwarding table, as `options` (opensm.conf's routing options and
    /// GUID files) ask, on switch ports running `vls` data VLs, and the SLs and VLs the routes
    /// use. An engine whose routes need more VLs fails with [`RoutingError::TooFewVls`], and
    /// the next engine of the list routes.
    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        vls: VlCount,
    ) -> Result<Routing, RoutingError>;

    /// Whether every routing of this engine is [`Unlayered`]: each path keeps the SL chosen for
    /// it and no SL2VL or VLArb table changes. Nothing the link and QoS managers plan then
    /// waits for the routes.
    fn is_unlayered(&self) -> bool {
        false
    }

    /// The multicast routing the MLIDs' spanning trees come from, through the switches
    /// `multicast_capable` accepts: parts of the master tree `layering` (the unicast routing's)
    /// chose, else OpenSM's generic tree over min-hop counts (`osm_mcast_mgr.c`).
    fn multicast<'t>(
        &self,
        topo: &'t Topology,
        layering: &dyn Layering,
        multicast_capable: &dyn Fn(NodeId) -> bool,
    ) -> Result<MulticastRouting<'t>, RoutingError> {
        let routing = MulticastRouting::min_hop(topo, multicast_capable)?;
        Ok(routing.within(layering.multicast_master()))
    }
}

/// What one routing decided beside the LFTs, which the QoS manager, the SA and the link manager
/// ask afterwards: the SL of each path and the tables its layers need.
pub trait Layering: fmt::Debug + Send + Sync {
    /// The SL of a path from `slid` to `dlid`, given `hint`, the SL the QoS policy, the
    /// partition or the default chose. Routes not layered over SLs keep the hint.
    fn path_sl(&self, hint: u8, _slid: u16, _dlid: u16) -> u8 {
        hint
    }

    /// Whether [`Layering::path_sl`] returns its hint for every path: then every path of the
    /// fabric takes the SLs the policy hands out, and the credit-loop checker need not ask path
    /// by path. False unless a layering says so.
    fn keeps_hint(&self) -> bool {
        false
    }

    /// The data VLs the routes need to be free of credit loops.
    fn vls_used(&self) -> VlCount {
        VlCount::One
    }

    /// The spanning tree every MLID's tree is a part of, when the routing chose one
    /// (torus-2QoS's, OpenSM's `mcast_build_stree` hook); `None`: OpenSM's generic trees.
    fn multicast_master(&self) -> Option<&MasterTree> {
        None
    }

    /// What the routing does without because some ports run too few data VLs, where OpenSM
    /// warns and routes all the same; none unless a layering says so.
    fn vl_shortfalls(&self) -> Vec<VlShortfall> {
        Vec::new()
    }

    /// May rewrite `table`, the configured SL-to-VL table of traffic from `input` to `output`
    /// of the node with NodeGUID `node` (a CA port: input and output 0). The QoS manager masks
    /// the result with the output's OperVLs and writes it.
    fn update_sl2vl(&self, _node: u64, _input: u8, _output: u8, _table: &mut Sl2VlTable) {}

    /// May rewrite `table`, the configured VLArb table of `priority` on `port` of the node with
    /// NodeGUID `node`, before the QoS manager cuts it to the port's cap and masks it.
    fn update_vlarb(&self, _node: u64, _port: u8, _priority: Priority, _table: &mut VlArbTable) {}
}

/// A feature a routing does without, for lack of data VLs on some ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlShortfall {
    /// The ports that lack them, as a person names them: `switch ports linked to a switch`.
    pub ports: &'static str,
    /// The fewest data VLs those ports run.
    pub have: u8,
    /// The data VLs the feature needs.
    pub needed: u8,
    /// What the routing does without, as a clause.
    pub without: &'static str,
}

/// Routes that spend no SL or VL: every hook keeps what the configuration chose.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unlayered;

impl Layering for Unlayered {
    fn keeps_hint(&self) -> bool {
        true
    }
}

/// An engine's result: the LFTs and what the routing decided beside them.
#[derive(Debug, Clone)]
pub struct Routing {
    pub routes: Routes,
    pub layering: Arc<dyn Layering>,
}

impl From<Routes> for Routing {
    /// Routes without layers.
    fn from(routes: Routes) -> Routing {
        Routing {
            routes,
            layering: Arc::new(Unlayered),
        }
    }
}

/// What `layering` makes of the configured tables of `port` (of `class`) on the node with
/// NodeGUID `node`, before the planner masks them: its VLArb tables, and a CA's or router's
/// SL2VL (a switch's SL2VL goes by (input, output) pair).
pub fn update_port_tables(
    layering: &dyn Layering,
    settings: &mut EffectiveQos,
    class: PortClass,
    node: u64,
    port: u8,
) {
    if matches!(class, PortClass::Ca | PortClass::Rtr) {
        layering.update_sl2vl(node, 0, 0, &mut settings.sl2vl);
    }
    layering.update_vlarb(node, port, Priority::Low, &mut settings.vlarb_low);
    layering.update_vlarb(node, port, Priority::High, &mut settings.vlarb_high);
}
