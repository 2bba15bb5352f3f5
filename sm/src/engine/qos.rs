//! The QoS manager: from the discovered subnet and the configuration to every SLtoVLMapping
//! and VLArbitration Set, and each port's VLHighLimit (OpenSM's `osm_qos.c`; what differs from
//! it is listed in the qos crate's planner).
//!
//! Pure functions: the sweep sends what they return and checks each echo against it.

use std::collections::BTreeMap;

use ibqos_fabric::routing::{Layering, update_port_tables};
use ibqos_mad::{
    CapabilityMask, Guid, NodeType, SlToVlMappingTableRepr, SlToVlModifier, VlArbModifier,
    VlArbitrationTableRepr,
};
use ibqos_qos::partitions::SubnetPartitions;
use ibqos_qos::policy::QosPolicy;
use ibqos_qos::policy::setup::{CheckedSetup, ScopeId, SetupTables};
use ibqos_qos::{
    PortCaps, PortClass, PortPlan, QosConfig, Sl2VlProgramming, Sl2VlSet, SwitchSl2VlView, VlCount,
    plan_settings, setup_sl2vl, switch_sl2vl,
};
use tracing::{error, info, warn};

use super::groups::{directory, setup_ports};
use super::subnet::{DiscoveredNode, PortKey, Subnet};
use super::write::{Ports, TableBlock, TableModifier, TableWrite};

/// The qos-setup section to program (OpenSM ignores it; ibqos.toml's `[qos]
/// program_policy_setup` asks for it): the policy whose port groups the scopes name, and the
/// scopes, checked.
#[derive(Debug, Clone)]
pub struct SetupConfig {
    pub policy: QosPolicy,
    pub scopes: CheckedSetup,
    /// Where each scope is written (`ibqos.toml:31:1`), for messages.
    pub places: BTreeMap<ScopeId, String>,
}

/// What the scopes program on this subnet. Nothing, with every reason logged as an error, when
/// a group cannot be resolved or two scopes disagree on a port: the port classes' tables are
/// programmed then, as without the section.
pub fn setup_tables(
    subnet: &Subnet,
    partitions: &SubnetPartitions,
    setup: &SetupConfig,
) -> SetupTables {
    let groups = match setup.policy.resolve_groups(&directory(subnet, partitions)) {
        Ok((groups, warnings)) => {
            for warning in warnings {
                warn!(%warning, "qos-policy port groups");
            }
            groups
        }
        Err(reason) => {
            error!(%reason, "qos-setup not programmed: its port groups do not resolve");
            return SetupTables::default();
        }
    };
    match setup.scopes.apply(&groups, &setup_ports(subnet)) {
        Ok(tables) => {
            info!(
                ports = tables.ports.len(),
                sl2vl_entries = tables.sl2vl.len(),
                "qos-setup applied to the fabric"
            );
            tables
        }
        Err(conflicts) => {
            for conflict in conflicts {
                let at = setup
                    .places
                    .get(&conflict.scope())
                    .map_or("", String::as_str);
                error!(at, "{conflict}");
            }
            error!("qos-setup not programmed: the port classes' tables are programmed instead");
            SetupTables::default()
        }
    }
}

/// The class of a port, or `None` for a port QoS leaves alone (a base switch port 0).
pub fn port_class(node: &DiscoveredNode, port: u8) -> Option<PortClass> {
    match node.info.node_type {
        NodeType::Switch if port == 0 => node
            .switch
            .filter(|s| s.enhanced_port0)
            .map(|_| PortClass::Sw0),
        NodeType::Switch => Some(PortClass::Swe),
        NodeType::Router => Some(PortClass::Rtr),
        _ => Some(PortClass::Ca),
    }
}

/// The planner's answer for one port, running `oper_vls` (PortInfo encoding) VLs: its class's
/// tables, or what a qos-setup scope gives it.
pub fn port_plan(
    subnet: &Subnet,
    config: &QosConfig,
    setup: &SetupTables,
    layering: &dyn Layering,
    key: PortKey,
    oper_vls: u8,
) -> Option<PortPlan> {
    let node = subnet.nodes.get(&key.node)?;
    let port = node.ports.get(&key.port)?;
    let class = port_class(node, key.port)?;
    let vl_cap = VlCount::from_encoding(port.info.vl_cap).ok()?;
    // A port reporting OperVLs the planner cannot mask with (0, or above VLCap) is planned for
    // its VLCap: the link manager programs at most that.
    let oper_vls = VlCount::from_encoding(oper_vls)
        .ok()
        .filter(|v| *v <= vl_cap)
        .unwrap_or(vl_cap);
    let sl_mapping = match class {
        // A switch programs SL2VL for all its ports only if port 0 supports SL mapping.
        PortClass::Swe | PortClass::Sw0 => node.ports.get(&0)?.info.capability_mask,
        PortClass::Ca | PortClass::Rtr => port.info.capability_mask,
    }
    .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED);
    let caps = PortCaps {
        vl_cap,
        oper_vls,
        vlarb_low_cap: port.info.vl_arbitration_low_cap.min(64),
        vlarb_high_cap: port.info.vl_arbitration_high_cap.min(64),
        sl_mapping_supported: sl_mapping,
    };
    let mut settings = setup.settings(config, class, key.node, key.port);
    // OpenSM's update_sl2vl and update_vlarb: the routing engine may rewrite the configured
    // tables, which the planner then masks.
    update_port_tables(layering, &mut settings, class, key.node, key.port);
    plan_settings(&settings, class, &caps).ok()
}

/// Every QoS Set for the subnet, from the ports' current (just programmed) OperVLs.
pub fn qos_sets(
    subnet: &Subnet,
    config: &QosConfig,
    setup: &SetupTables,
    layering: &dyn Layering,
    use_optimized_slvl: bool,
) -> Vec<TableWrite> {
    let mut sets = Vec::new();
    for (guid, node) in &subnet.nodes {
        if node.is_switch() {
            let switch = SwitchQos {
                subnet,
                config,
                setup,
                layering,
                use_optimized_slvl,
            };
            switch.sets(*guid, node, &mut sets);
            continue;
        }
        for (number, port) in &node.ports {
            let key = PortKey::new(*guid, *number);
            let oper_vls = port.info.operational_vls;
            let Some(plan) = port_plan(subnet, config, setup, layering, key, oper_vls) else {
                continue;
            };
            if let Some(table) = plan.sl2vl {
                sets.push(sl2vl_set(
                    *guid,
                    key,
                    SlToVlModifier::Pair {
                        input: 0,
                        output: 0,
                    },
                    table.into(),
                    vec![key],
                ));
            }
            vlarb_sets(&plan, *guid, key, 0, &mut sets);
        }
    }
    sets
}

/// What a switch's QoS Sets are planned from.
struct SwitchQos<'a> {
    subnet: &'a Subnet,
    config: &'a QosConfig,
    setup: &'a SetupTables,
    layering: &'a dyn Layering,
    use_optimized_slvl: bool,
}

impl SwitchQos<'_> {
    fn sets(&self, guid: u64, node: &DiscoveredNode, sets: &mut Vec<TableWrite>) {
        let subnet = self.subnet;
        let via = PortKey::new(guid, 0);
        let up = |port: u8| port == 0 || subnet.peer(PortKey::new(guid, port)).is_some();
        for (number, port) in node.ports.iter().filter(|(n, _)| up(**n)) {
            let key = PortKey::new(guid, *number);
            let oper = port.info.operational_vls;
            let plan = port_plan(subnet, self.config, self.setup, self.layering, key, oper);
            if let Some(plan) = plan {
                vlarb_sets(&plan, guid, via, *number, sets);
            }
        }
        let Some(port0) = node.ports.get(&0) else {
            return;
        };
        let oper = |info_vls: u8, cap: u8| {
            VlCount::from_encoding(info_vls)
                .or_else(|_| VlCount::from_encoding(cap))
                .unwrap_or(VlCount::One)
        };
        let view = SwitchSl2VlView {
            sl_mapping_supported: port0
                .info
                .capability_mask
                .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED),
            enhanced_port0: port_class(node, 0).is_some(),
            optimized_supported: node.switch.is_some_and(|s| s.supports_optimized_sl_to_vl()),
            port0_oper_vls: oper(port0.info.operational_vls, port0.info.vl_cap),
            ports: (1..=node.info.num_ports)
                .map(|n| {
                    let port = node.ports.get(&n).filter(|_| up(n))?;
                    Some(oper(port.info.operational_vls, port.info.vl_cap))
                })
                .collect(),
        };
        let programming = Sl2VlProgramming::from_use_optimized_slvl(self.use_optimized_slvl);
        let mut planned = switch_sl2vl(self.config, &view, programming);
        // qos-setup's entries: in place of a per-pair Set's table, or as Sets of their own
        // after the all-ports ones. Most switches, and every switch without the section, have
        // none: then the planned Sets are not indexed at all.
        overlay(
            &mut planned,
            setup_sl2vl(&view, self.setup.switch_entries(guid)),
        );
        // All outputs: the up external ports, and port 0 only where it is enhanced (a base port
        // 0 has no SL2VL tables of its own).
        let outputs: Vec<u8> = node
            .ports
            .keys()
            .copied()
            .filter(|n| up(*n) && (*n != 0 || view.enhanced_port0))
            .collect();
        if view.sl_mapping_supported {
            let inputs: Vec<u8> = node.ports.keys().copied().filter(|n| up(*n)).collect();
            overlay(
                &mut planned,
                self.engine_sl2vl(guid, &view, &inputs, &outputs),
            );
        }
        for set in planned {
            // One input stands for them all, so that each output comes once.
            let outputs = outputs.iter().copied();
            let ports = set
                .scope
                .pairs([0], outputs)
                .map(|(_, output)| PortKey::new(guid, output))
                .collect();
            sets.push(sl2vl_set(guid, via, set.scope, set.table.into(), ports));
        }
    }
}

impl SwitchQos<'_> {
    /// The pairs whose configured SL2VL table the routing engine rewrites (OpenSM's
    /// `update_sl2vl`, `osm_qos.c` `qos_extports_setup`), each a Set of its own masked with its
    /// output's OperVLs.
    fn engine_sl2vl(
        &self,
        guid: u64,
        view: &SwitchSl2VlView,
        inputs: &[u8],
        outputs: &[u8],
    ) -> Vec<Sl2VlSet> {
        let mut sets = Vec::new();
        for &output in outputs {
            let (class, oper) = match output {
                0 => (PortClass::Sw0, Some(view.port0_oper_vls)),
                n => (
                    PortClass::Swe,
                    view.ports.get(usize::from(n) - 1).copied().flatten(),
                ),
            };
            let configured = self.config.effective(class).sl2vl;
            let mask = oper.unwrap_or(VlCount::One).vl_mask();
            for &input in inputs {
                let mut table = configured;
                self.layering.update_sl2vl(guid, input, output, &mut table);
                if table != configured {
                    let scope = SlToVlModifier::Pair { input, output };
                    let table = table.masked(mask);
                    sets.push(Sl2VlSet { scope, table });
                }
            }
        }
        sets
    }
}

/// `extra` over `planned`: an extra Set's table replaces that of the planned Set of the same
/// scope, and the other extra Sets follow the planned ones. Most switches have no extra Sets:
/// then the planned ones are not indexed at all.
fn overlay(planned: &mut Vec<Sl2VlSet>, extra: Vec<Sl2VlSet>) {
    if extra.is_empty() {
        return;
    }
    let index: BTreeMap<u32, usize> = planned
        .iter()
        .enumerate()
        .map(|(i, set)| (u32::from(set.scope), i))
        .collect();
    for set in extra {
        match index.get(&u32::from(set.scope)) {
            Some(&i) => planned[i].table = set.table,
            None => planned.push(set),
        }
    }
}

fn sl2vl_set(
    node: u64,
    via: PortKey,
    scope: SlToVlModifier,
    table: SlToVlMappingTableRepr,
    ports: Vec<PortKey>,
) -> TableWrite {
    TableWrite {
        node: Guid(node),
        via,
        block: TableBlock::SlToVl(table),
        modifier: TableModifier::SlToVl(scope),
        ports: ports.into(),
    }
}

/// The VLArb blocks of one port; `port_field` is the modifier's port (0 on a CA or port 0).
fn vlarb_sets(
    plan: &PortPlan,
    node: u64,
    via: PortKey,
    port_field: u8,
    sets: &mut Vec<TableWrite>,
) {
    for block in &plan.vlarb {
        let modifier = VlArbModifier {
            block: block.block,
            port: port_field,
        };
        sets.push(TableWrite {
            node: Guid(node),
            via,
            block: TableBlock::VlArb(VlArbitrationTableRepr {
                entries: block.entries,
            }),
            modifier: TableModifier::VlArb(modifier),
            ports: Ports::One(PortKey::new(
                node,
                if port_field == 0 {
                    via.port
                } else {
                    port_field
                },
            )),
        });
    }
}
