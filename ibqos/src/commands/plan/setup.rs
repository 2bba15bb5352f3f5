//! `ibqos plan --topology`: what the QoS policy's qos-setup section programs on each port of a
//! fabric, scope by scope, as the ports will hold it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use ibqos_fabric::routing::{Layering, Routed, update_port_tables};
use ibqos_fabric::{PortRef, Topology};
use ibqos_opensm::{Code, Diagnostic, Settings};
use ibqos_qos::policy::setup::{ScopeId, Scoped, SetupTables};
use ibqos_qos::{PortCaps, PortClass, PortPlan, Priority, Sl2VlTable, VlCount, plan_settings};
use ibqos_sm::config::routing_engines;
use serde_json::{Value, json};

use super::{sl2vl_rows, vlarb_line};
use crate::cli::PlanArgs;
use crate::commands::{Outcome, fabric, route_offline, setup_on};
use crate::diagnostics::Report;

/// One scope's SL-to-VL table on one output port, and the input ports it is set for.
type ScopeEntries = (Sl2VlTable, Vec<u8>);

/// One port the section programs, as it will hold it.
struct PortSetupPlan {
    /// `NodeDescription/Pn`, as qos-policy.conf's port-name says it.
    name: String,
    /// The node's name in the net file.
    node_name: String,
    node_guid: u64,
    number: u8,
    class: PortClass,
    caps: PortCaps,
    /// The port's plan with the scopes' values in it.
    plan: PortPlan,
    vlarb_high: Option<ScopeId>,
    vlarb_low: Option<ScopeId>,
    vl_high_limit: Option<ScopeId>,
    /// The port's SL-to-VL entries from the scopes, as the output: (inputs, table masked,
    /// scope); a CA or router port's one entry has input 0.
    sl2vl: Vec<(Vec<u8>, Sl2VlTable, ScopeId)>,
}

pub(super) fn run(
    args: &PlanArgs,
    config: &Path,
    settings: &Settings,
    topology: &str,
    mut report: Report,
) -> Result<Outcome> {
    let topo = fabric::load(topology)?;
    let mut out = std::io::stdout().lock();
    // Routed before anything else, for what it says of the VLs whatever the policy holds.
    let routed = route(&topo, settings, topology);
    if let Ok(routed) = &routed {
        report.extend(short_of_vls(&topo, settings, routed));
    }
    let off = match (&settings.qos_policy, settings.program_policy_setup) {
        (None, _) => Some("the configuration has no QoS policy"),
        (Some(_), false) => Some("the configuration does not set [qos] program_policy_setup"),
        (Some(policy), true) if policy.setup.is_empty() => {
            Some("the QoS policy has no qos-setup section")
        }
        _ => None,
    };
    if let Some(reason) = off {
        eprint!("{}", report.render_human(false));
        writeln!(
            out,
            "no qos-setup tables: {reason}; every port gets its class's tables (see \
             `ibqos plan --class`)"
        )?;
        return Ok(Outcome::from_report(&report));
    }
    let setup = setup_on(&topo, settings, config)?;
    let routed = routed?;
    let ports = planned_ports(&topo, settings, &setup, &*routed.layering);
    let place = |scope: ScopeId| {
        settings
            .qos_setup_places
            .get(&scope)
            .map(|at| format!("{}:{}:{}", at.file, at.line, at.col))
            .unwrap_or_default()
    };
    if args.json {
        let object = json!({
            "topology": topology,
            "routing_engine": routed.engine.name(),
            "ports": ports.iter().map(|p| port_json(p, &place)).collect::<Vec<_>>(),
            "diagnostics": report.to_json(),
        });
        writeln!(out, "{object}")?;
    } else {
        eprint!("{}", report.render_human(false));
        if !settings.qos.enabled {
            writeln!(
                out,
                "note: `qos` is not on in this configuration, so nothing is programmed; these \
                 are what it would program."
            )?;
        }
        let entries: usize = setup.sl2vl.len();
        writeln!(
            out,
            "qos-setup on {topology}: {} ports take tables from its scopes ({} SL-to-VL \
             entries); every other port and entry is its class's.",
            ports.len(),
            entries
        )?;
        for port in &ports {
            write!(out, "\n{}", describe(port, &place))?;
        }
    }
    Ok(Outcome::from_report(&report))
}

/// `topo` routed as the SM would: by the first of the configuration's engines (those of
/// `--routing-engine` when given) that routes it, each engine passed over said on standard
/// error.
fn route(topo: &Topology, settings: &Settings, topology: &str) -> Result<Routed> {
    let engines = routing_engines(settings);
    let vls = settings.links.oper_vls_cap().unwrap_or(VlCount::Fifteen);
    route_offline(&mut topo.clone(), &engines, vls, topology)
}

/// A warning naming the switch-to-switch ports whose OperVLs (as `max_op_vls` and both ends'
/// VLCaps give them) are fewer than the data VLs the routing's layers need: two layers share a
/// VL there, and the QoS levels and deadlock freedom of the engine do not survive.
fn short_of_vls(topo: &Topology, settings: &Settings, routed: &Routed) -> Option<Diagnostic> {
    let needed = routed.layering.vls_used();
    let ports = ports_short_of(topo, settings.links.oper_vls_cap(), needed);
    if ports.is_empty() {
        return None;
    }
    let message = format!(
        "{} needs {} data VLs for its layers; {} switch ports run fewer: {}",
        routed.engine.name(),
        needed.count(),
        ports.len(),
        ports.join(", ")
    );
    Some(
        Diagnostic::warning(Code::EngineShortOfVls, message).with_help(
            "two of its layers share a VL on those ports, and a credit loop it broke can close",
        ),
    )
}

/// The switch-to-switch ports of `topo` (`Node/Pn`) running fewer than `needed` data VLs under
/// the cap `max_op_vls`.
fn ports_short_of(topo: &Topology, max_op_vls: Option<VlCount>, needed: VlCount) -> Vec<String> {
    let is_switch = |port: PortRef| topo.node(port.node).is_some_and(|n| n.is_switch());
    topo.links()
        .flat_map(|(a, b)| [a, b])
        .filter(|&port| {
            is_switch(port) && topo.port(port).and_then(|p| p.peer).is_some_and(is_switch)
        })
        .filter(|&port| {
            topo.link_oper_vls(port, max_op_vls)
                .is_some_and(|oper| oper < needed)
        })
        .filter_map(|port| {
            let node = topo.node(port.node)?;
            Some(format!("{}/P{}", node.description, port.port))
        })
        .collect()
}

/// Every port the scopes give a value, in the fabric's node order, with what the routing's
/// `layering` makes of its tables.
fn planned_ports(
    topo: &Topology,
    settings: &Settings,
    setup: &SetupTables,
    layering: &dyn Layering,
) -> Vec<PortSetupPlan> {
    let max_op_vls = settings.links.oper_vls_cap();
    // A scope has one table: the entries of a port group by scope.
    let mut sl2vl: BTreeMap<(u64, u8), BTreeMap<ScopeId, ScopeEntries>> = BTreeMap::new();
    for (&(node, input, output), Scoped { value, scope }) in &setup.sl2vl {
        sl2vl
            .entry((node, output))
            .or_default()
            .entry(*scope)
            .or_insert_with(|| (*value, Vec::new()))
            .1
            .push(input);
    }
    let chosen: BTreeSet<(u64, u8)> = setup.ports.keys().chain(sl2vl.keys()).copied().collect();
    let mut planned = Vec::new();
    for (id, node) in topo.nodes() {
        for (number, port) in node.existing_ports() {
            if !chosen.contains(&(node.guid, number)) {
                continue;
            }
            let Some(class) = node.port_class(number) else {
                continue;
            };
            // A switch port 0 runs its own VLCap.
            let oper = topo
                .link_oper_vls(PortRef::new(id, number), max_op_vls)
                .unwrap_or(port.link.vl_cap);
            let caps = port.link.planner_caps(oper);
            let mut settings_here = setup.settings(&settings.qos, class, node.guid, number);
            update_port_tables(layering, &mut settings_here, class, node.guid, number);
            let Ok(plan) = plan_settings(&settings_here, class, &caps) else {
                continue;
            };
            let scopes = setup.port(node.guid, number);
            let mask = caps.oper_vls.vl_mask();
            planned.push(PortSetupPlan {
                name: format!("{}/P{number}", node.description),
                node_name: node.name.clone(),
                node_guid: node.guid,
                number,
                class,
                caps,
                plan,
                vlarb_high: scopes.and_then(|s| s.vlarb_high).map(|s| s.scope),
                vlarb_low: scopes.and_then(|s| s.vlarb_low).map(|s| s.scope),
                vl_high_limit: scopes.and_then(|s| s.vl_high_limit).map(|s| s.scope),
                sl2vl: sl2vl
                    .get(&(node.guid, number))
                    .into_iter()
                    .flatten()
                    .map(|(scope, (table, inputs))| (inputs.clone(), table.masked(mask), *scope))
                    .collect(),
            });
        }
    }
    planned
}

/// Port numbers as short ranges: `0-8`, `1,3`.
fn ranges(numbers: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let start = numbers[i];
        while i + 1 < numbers.len() && numbers[i + 1] == numbers[i] + 1 {
            i += 1;
        }
        parts.push(if numbers[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", numbers[i])
        });
        i += 1;
    }
    parts.join(",")
}

fn describe(port: &PortSetupPlan, place: &dyn Fn(ScopeId) -> String) -> String {
    let from = |scope: ScopeId| format!("from {scope} at {}", place(scope));
    let caps = &port.caps;
    let mut out = format!(
        "{} ({} port {}, {:#018x}): class {}, VLCap {}, OperVLs {}, VLArb caps low {} / high {}\n",
        port.name,
        port.node_name,
        port.number,
        port.node_guid,
        port.class,
        caps.vl_cap,
        caps.oper_vls,
        caps.vlarb_low_cap,
        caps.vlarb_high_cap
    );
    for (priority, scope) in [
        (Priority::High, port.vlarb_high),
        (Priority::Low, port.vlarb_low),
    ] {
        let Some(scope) = scope else { continue };
        let blocks: Vec<_> = port
            .plan
            .vlarb
            .iter()
            .filter(|b| b.block.priority() == priority)
            .collect();
        if blocks.is_empty() {
            let _ = writeln!(
                out,
                "  VLArb {priority}: none programmed (cap 0 or one VL), {}",
                from(scope)
            );
        }
        for block in blocks {
            let _ = write!(out, "  {}", vlarb_line(block));
        }
        let _ = writeln!(out, "    {}", from(scope));
    }
    if let Some(scope) = port.vl_high_limit {
        let _ = writeln!(
            out,
            "  VLHighLimit {}, {}",
            port.plan.vl_high_limit,
            from(scope)
        );
    }
    for (inputs, table, scope) in &port.sl2vl {
        let which = if port.class == PortClass::Ca || port.class == PortClass::Rtr {
            "SL2VL".to_string()
        } else {
            format!("SL2VL from input ports {}", ranges(inputs))
        };
        let _ = writeln!(out, "  {which}, {}", from(*scope));
        out.push_str(&sl2vl_rows(table, "    "));
    }
    out
}

fn port_json(port: &PortSetupPlan, place: &dyn Fn(ScopeId) -> String) -> Value {
    let scoped = |value: Value, scope: Option<ScopeId>| match scope {
        Some(scope) => json!({"value": value, "scope": scope.to_string(), "at": place(scope)}),
        None => Value::Null,
    };
    let entries = |priority: Priority| -> Value {
        port.plan
            .vlarb
            .iter()
            .filter(|b| b.block.priority() == priority)
            .flat_map(|b| b.programmed().iter().map(|e| json!([e.vl, e.weight])))
            .collect()
    };
    json!({
        "port": port.name,
        "node": port.node_name,
        "node_guid": format!("{:#018x}", port.node_guid),
        "number": port.number,
        "class": port.class.name(),
        "vlarb_high": scoped(entries(Priority::High), port.vlarb_high),
        "vlarb_low": scoped(entries(Priority::Low), port.vlarb_low),
        "vl_high_limit": scoped(json!(port.plan.vl_high_limit), port.vl_high_limit),
        "sl2vl": port.sl2vl.iter().map(|(inputs, table, scope)| json!({
            "inputs": inputs,
            "vls": table.0.map(|vl| vl.get()),
            "scope": scope.to_string(),
            "at": place(*scope),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use ibqos_fabric::generate::ring;

    use super::*;

    #[test]
    fn the_switch_ports_under_the_needed_vls_are_named() {
        let topo = ring(3, 1).unwrap();
        let short = |cap, needed| ports_short_of(&topo, Some(cap), needed);
        assert_eq!(short(VlCount::Eight, VlCount::Eight), Vec::<String>::new());
        // Each of the three ring links, from both ends; never a host's.
        let named = short(VlCount::Two, VlCount::Four);
        assert_eq!(named.len(), 6, "{named:?}");
        assert!(
            named
                .iter()
                .all(|n| n.ends_with("/P1") || n.ends_with("/P2")),
            "{named:?}"
        );
    }
}
