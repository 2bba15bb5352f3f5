//! The link manager: LIDs, link settings and ARMED in one PortInfo Set per port, then ACTIVE.

use std::sync::Arc;

use ibqos_fabric::routing::PolicySl;
use ibqos_mad::{
    Attribute, CapabilityMask, Guid, NodeType, PhysPortState, PortInfoModifier, PortInfoRepr,
    PortState,
};
use ibqos_qos::{VlCount, oper_vls};
use tracing::{info, warn};

use super::diff::PortInfoField;
use super::feed::Feed;
use super::reconcile::{Held, Planned, SetTarget};
use super::{Op, Phase, Sweep};
use crate::engine::lids::{assign_lids, endport_lmc};
use crate::engine::qos::{port_plan, setup_tables};
use crate::engine::routing::{RouteError, SweepRoutes};
use crate::engine::subnet::PortKey;
use crate::mkey::KeyHidden;

impl Sweep {
    /// LIDs for every endport, then one PortInfo Set per port: LID, LMC, SM LID and the M_Key
    /// fields on endports, OperVLs, NeighborMTU, HOQLife and VLStallCount on links, and ARMED on
    /// ports in INIT.
    pub(super) fn configure_ports(&mut self) {
        self.phase = Phase::ConfiguringPorts;
        if let Err(error) = assign_lids(
            Arc::make_mut(&mut self.subnet),
            self.config.lmc,
            &self.config.guid2lid,
        ) {
            self.fail(error);
            return;
        }
        let sm_lid = self
            .subnet
            .sm_port
            .and_then(|k| self.subnet.port(k))
            .map_or(0, |p| p.lid);
        let assigned = self.logged("assigned", "planned");
        info!(lids = self.counts().lids, sm_lid, "LIDs {assigned}");
        // OpenSM routes before its link and QoS managers run: the engine's layering decides
        // each port's MasterSMSL and rewrites the SL2VL tables. A routing failure still ends
        // the sweep where the switches are programmed.
        self.routing = Some(self.start_routing());
        if self.config.qos.enabled
            && let Some(setup) = &self.config.qos_setup
        {
            self.setup = setup_tables(&self.subnet, &self.pkeys.partitions, setup);
        }
        let keys: Vec<PortKey> = self.subnet.ports().map(|(key, _)| key).collect();
        let mut sets = Vec::new();
        for key in keys {
            if let Some((info, high_limit)) = self.port_settings(key, sm_lid) {
                let unkept = self.learned.unkept.get(&key);
                // A port seen not to keep VLHighLimit (ibsim's) has none to count.
                if high_limit && !unkept.is_some_and(|u| u.contains(&PortInfoField::VlHighLimit)) {
                    self.high_limits.plan(key, info.vl_high_limit);
                }
                if self.key_changes_first(key, sm_lid) {
                    self.after_new_keys.push((key, info));
                } else {
                    sets.push((key, info));
                }
            }
        }
        self.feed = Feed::port_infos(sets);
    }

    /// Whether `key` is an external port of a switch whose port 0 is given another M_Key in
    /// this sweep. Its Set waits until port 0's is answered: sent together, it could reach the
    /// switch after the new key and fail the check with the old one (OpenSM orders it so too:
    /// its LID manager Sets port 0 before the link manager Sets the other ports).
    fn key_changes_first(&self, key: PortKey, sm_lid: u16) -> bool {
        let port0 = PortKey::new(key.node, 0);
        let is_switch = self
            .subnet
            .nodes
            .get(&key.node)
            .is_some_and(|n| n.is_switch());
        let held = self.subnet.port(port0).map(|p| p.info.m_key);
        let planned = self
            .port_settings(port0, sm_lid)
            .map(|(info, _)| info.m_key);
        is_switch && key.port != 0 && held.is_some() && held != planned
    }

    /// The Sets [`key_changes_first`](Self::key_changes_first) held back, once the new keys
    /// are in place.
    pub(super) fn configure_ports_after_new_keys(&mut self) {
        self.feed = Feed::port_infos(std::mem::take(&mut self.after_new_keys));
    }

    /// The PortInfo to Set on a port, and whether it carries the QoS plan's VLHighLimit; `None`
    /// for a port to leave alone (down and not an endport).
    pub(super) fn port_settings(&self, key: PortKey, sm_lid: u16) -> Option<(PortInfoRepr, bool)> {
        let node = self.subnet.nodes.get(&key.node)?;
        let port = node.ports.get(&key.port)?;
        let is_endport = !node.is_switch() || key.port == 0;
        let peer = self
            .subnet
            .peer(key)
            .and_then(|k| Some((self.subnet.nodes.get(&k.node)?, self.subnet.port(k)?)));
        if peer.is_none() && !is_endport {
            return None;
        }
        let mut info = quiet(port.info);
        if is_endport {
            info.client_reregister = self.reregisters_clients(&port.info, sm_lid);
            info.lid = port.lid;
            info.lmc = endport_lmc(node.is_switch(), self.config.lmc);
            info.master_sm_lid = sm_lid;
            info.gid_prefix = self.config.subnet_prefix;
            info.master_sm_sl = self.master_sm_sl(port.lid, sm_lid);
            info.subnet_timeout = self.config.subnet_timeout;
            // Only an end port's key governs (a switch's port 0 for the whole switch), and
            // OpenSM writes them whatever they were, 0 included (`osm_link_mgr.c:225-265`).
            let m_key = &self.config.m_key;
            if m_key.manages() {
                info.m_key = m_key.wanted(port.guid);
                info.m_key_protect_bits = m_key.protect_bits;
                info.m_key_lease_period = m_key.lease_period;
            }
        }
        if let Some((peer_node, peer_port)) = peer {
            info.operational_vls = self.oper_vls(&port.info, &peer_port.info);
            info.neighbor_mtu = port.info.mtu_cap.min(peer_port.info.mtu_cap);
            let leaf = !peer_node.is_switch();
            if node.is_switch() && key.port != 0 {
                self.enforcement(key, &mut info, !leaf);
            }
            if node.is_switch() {
                info.hoq_life = self.hoq(leaf);
                info.vl_stall_count = if leaf {
                    self.config.leaf_vl_stall_count
                } else {
                    self.config.vl_stall_count
                } & 0x7;
            } else if node.info.node_type == NodeType::Router {
                info.hoq_life = self.hoq(true);
            }
            if port.info.port_state == PortState::Init {
                info.port_state = PortState::Armed;
            }
        }
        // VLHighLimit travels in this Set, as in OpenSM's link manager; with qos off it is
        // left as the port has it.
        let plan = self.config.qos.enabled.then(|| {
            let oper_vls = info.operational_vls;
            let layering = &*self.layering;
            port_plan(
                &self.subnet,
                &self.config.qos,
                &self.setup,
                layering,
                key,
                oper_vls,
            )
        });
        if let Some(Some(plan)) = &plan {
            info.vl_high_limit = plan.vl_high_limit;
        }
        Some((info, matches!(plan, Some(Some(_)))))
    }

    /// The switch-to-switch ports whose OperVLs, as this sweep programs them, are fewer than
    /// the data VLs the routing needs to be free of credit loops: on them, two of its layers
    /// share a VL.
    pub(super) fn ports_short_of_vls(&self) -> Vec<PortKey> {
        let needed = self.layering.vls_used();
        let is_switch = |key: PortKey| {
            self.subnet
                .nodes
                .get(&key.node)
                .is_some_and(|n| n.is_switch())
        };
        self.subnet
            .links
            .iter()
            .filter(|&(&local, &peer)| is_switch(local) && is_switch(peer))
            .filter_map(|(&local, &peer)| {
                let (ours, theirs) = (self.subnet.port(local)?, self.subnet.port(peer)?);
                let oper = reported_vl_cap(self.oper_vls(&ours.info, &theirs.info));
                (oper < needed).then_some(local)
            })
            .collect()
    }

    /// What the sweep takes from a routing before the switches are programmed: the layering,
    /// and a warning for each QoS level or VL the engine goes without.
    pub(super) fn take_layering(&mut self, routing: &Result<SweepRoutes, RouteError>) {
        if let Ok(routed) = routing {
            self.layering = Arc::clone(&routed.layering);
            self.warn_ports_short_of_vls(routed.engine.name());
            self.warn_policy_sls_replaced(routed.engine.name());
            self.warn_vl_shortfalls(routed.engine.name());
        }
    }

    /// One warning per sweep naming the ports [`ports_short_of_vls`](Self::ports_short_of_vls)
    /// finds, if any: the QoS levels and the deadlock freedom of `engine`'s layers do not
    /// survive there.
    fn warn_ports_short_of_vls(&self, engine: &str) {
        let short = self.ports_short_of_vls();
        if short.is_empty() {
            return;
        }
        let names: Vec<String> = short
            .iter()
            .map(|key| {
                let node = self.subnet.nodes.get(&key.node);
                let name =
                    node.map_or_else(|| Guid(key.node).to_string(), |n| n.description.clone());
                format!("{name}/P{}", key.port)
            })
            .collect();
        warn!(
            engine,
            needed = self.layering.vls_used().count(),
            ports = names.join(", "),
            "the routing's layers need more data VLs than {} switch ports run: two layers share a \
             VL there, and a credit loop the engine broke can close",
            short.len()
        );
    }

    /// What the routing `engine` made does with the SLs the QoS policy's levels choose: kept
    /// when its layering keeps each path's hint, else as OpenSM's engine of that name does
    /// (a layering that does not keep the hint is Nue's on several VLs, never on one).
    fn policy_sl_fate(&self, engine: &str) -> PolicySl {
        if self.layering.keeps_hint() {
            PolicySl::Kept
        } else {
            PolicySl::of(engine, true)
        }
    }

    /// The SLs of the QoS policy's levels that reach the fabric as another SL under the
    /// routing `engine` made: all of them under a layered engine, all but bit 3 under
    /// torus-2QoS, none when the routing keeps the policy's SL.
    pub(super) fn policy_sls_replaced(&self, engine: &str) -> Vec<u8> {
        let fate = self.policy_sl_fate(engine);
        self.config
            .policy_sls
            .iter()
            .map(|sl| sl.get())
            .filter(|&sl| fate.replaces(sl))
            .collect()
    }

    /// One warning per sweep naming the SLs of the QoS policy
    /// [`policy_sls_replaced`](Self::policy_sls_replaced) finds, if any: the policy's levels
    /// do not reach the fabric as it wrote them.
    fn warn_policy_sls_replaced(&self, engine: &str) {
        let replaced = self.policy_sls_replaced(engine);
        if replaced.is_empty() {
            return;
        }
        let sls: Vec<String> = replaced.iter().map(u8::to_string).collect();
        let sls = sls.join(", ");
        if self.policy_sl_fate(engine) == PolicySl::Bit3Kept {
            warn!(
                engine,
                sls,
                "the routing keeps only bit 3 of the SLs the QoS policy's levels choose, its QoS \
                 level; their other bits become the datelines of each path"
            );
        } else {
            warn!(
                engine,
                sls,
                "the routing gives every path its layer's SL: the SLs the QoS policy's levels \
                 choose do not reach the fabric, and a request naming one gets no path where \
                 the layer's SL differs"
            );
        }
    }

    /// One warning per sweep for each feature the routing `engine` made does without for lack
    /// of data VLs (torus-2QoS's, below 4 or 8 on the links between switches, or 2 on the
    /// links to end ports), as OpenSM warns at each routing.
    fn warn_vl_shortfalls(&self, engine: &str) {
        for shortfall in self.layering.vl_shortfalls() {
            warn!(
                engine,
                have = shortfall.have,
                needed = shortfall.needed,
                "the {} run too few data VLs for the routing: {}",
                shortfall.ports,
                shortfall.without
            );
        }
    }

    /// The SL the SM's packets to an endport of LID `lid` use (`link_mgr_get_smsl`): `sm_sl`,
    /// as the routing's path SL from that port to the SM's LID takes it.
    fn master_sm_sl(&self, lid: u16, sm_lid: u16) -> u8 {
        let sm_sl = self.config.sm_sl;
        if lid == 0 {
            return sm_sl;
        }
        self.layering.path_sl(sm_sl, lid, sm_lid)
    }

    /// Whether an endport holding `held` is asked for a client reregistration
    /// (`lid_mgr_set_physp_pi`): in the first sweep since this SM became master, or when the
    /// port names another master SM LID, if the port supports it and `no_clients_rereg` is
    /// FALSE. Its clients then join their multicast groups and register their services again
    /// with this SM's SA.
    fn reregisters_clients(&self, held: &PortInfoRepr, sm_lid: u16) -> bool {
        let supported = held
            .capability_mask
            .contains(CapabilityMask::IS_CLIENT_REREGISTRATION_SUPPORTED);
        self.config.clients_rereg
            && supported
            && (self.first_master_sweep || held.master_sm_lid != sm_lid)
    }

    pub(super) fn hoq(&self, leaf: bool) -> u8 {
        let value = if leaf {
            self.config.leaf_head_of_queue_lifetime
        } else {
            self.config.head_of_queue_lifetime
        };
        value & 0x1f
    }

    /// OperVLs: the shared rule, on VLCaps as the ports report them.
    pub(super) fn oper_vls(&self, local: &PortInfoRepr, peer: &PortInfoRepr) -> u8 {
        oper_vls(
            reported_vl_cap(local.vl_cap),
            reported_vl_cap(peer.vl_cap),
            Some(self.config.max_op_vls),
        )
        .encoding()
    }

    /// ACTIVE on every ARMED port.
    pub(super) fn activate(&mut self) {
        self.phase = Phase::Activating;
        let armed = self
            .subnet
            .ports()
            .filter(|(_, port)| port.info.port_state == PortState::Armed)
            .map(|(key, port)| {
                let info = PortInfoRepr {
                    port_state: PortState::Active,
                    ..quiet(port.info)
                };
                (key, info)
            })
            .collect();
        self.feed = Feed::port_infos(armed);
    }

    pub(super) fn set_port_info(&mut self, key: PortKey, info: PortInfoRepr) {
        let Some(port) = self.subnet.port(key) else {
            return;
        };
        let held = Held::Known(Attribute::PortInfo(port.info));
        let planned = Planned {
            node: key.node,
            path: port.path.clone(),
            attribute: Attribute::PortInfo(info),
            modifier: u32::from(PortInfoModifier {
                port: key.port,
                extended_speeds: false,
            }),
            op: Op::SetPortInfo {
                port: key,
                sent: KeyHidden(Box::new(info)),
            },
            timeout: None,
            target: SetTarget::Ports {
                node: Guid(key.node),
                ports: vec![key.port],
            },
        };
        self.plan_set(planned, held);
    }
}

/// A PortInfo to Set that changes only what the caller then sets in it: the port's own values,
/// with no state change, no forced speed or width (the enable fields' 0 means "no change") and
/// no client reregistration.
fn quiet(held: PortInfoRepr) -> PortInfoRepr {
    PortInfoRepr {
        client_reregister: false,
        port_state: PortState::NoChange,
        port_phys_state: PhysPortState::NoChange,
        link_width_enabled: 0,
        link_speed_enabled: 0,
        link_speed_ext_enabled: 0,
        ..held
    }
}

/// A VLCap as a count: an encoding outside 1..=5 is taken as the nearest count, so a port that
/// reports 0 still runs one VL and one that reports more than 5 is limited by its peer alone.
pub(super) fn reported_vl_cap(encoding: u8) -> VlCount {
    VlCount::from_encoding(encoding.clamp(1, VlCount::Fifteen.encoding())).unwrap_or(VlCount::One)
}

/// The state a port would be in after a PortInfo Set asking for `asked`.
pub(super) fn resulting_state(held: PortState, asked: PortState) -> PortState {
    if asked == PortState::NoChange {
        held
    } else {
        asked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::PortInfo;

    #[test]
    fn a_state_change_is_what_was_asked_unless_none_was() {
        assert_eq!(
            resulting_state(PortState::Init, PortState::Armed),
            PortState::Armed
        );
        assert_eq!(
            resulting_state(PortState::Armed, PortState::NoChange),
            PortState::Armed
        );
    }

    #[test]
    fn quiet_changes_no_state_speed_or_width_and_keeps_the_rest() {
        let mut held = PortInfoRepr::parse(&PortInfo::new_unchecked([0xffu8; 64])).unwrap();
        held.port_state = PortState::Armed;
        let set = quiet(held);
        assert_eq!(set.port_state, PortState::NoChange);
        assert_eq!(set.port_phys_state, PhysPortState::NoChange);
        assert_eq!(
            (
                set.link_width_enabled,
                set.link_speed_enabled,
                set.link_speed_ext_enabled
            ),
            (0, 0, 0)
        );
        assert_eq!(
            (set.lid, set.vl_cap, set.mtu_cap),
            (held.lid, held.vl_cap, held.mtu_cap)
        );
    }

    #[test]
    fn a_vl_cap_out_of_range_is_the_nearest_count() {
        let caps: Vec<VlCount> = [0, 1, 3, 5, 6, 15].map(reported_vl_cap).to_vec();
        use VlCount::*;
        assert_eq!(caps, [One, One, Four, Fifteen, Fifteen, Fifteen]);
    }
}
