//! The credit-loop check of a sweep's routing: the LFTs the sweep computed, the SL-to-VL tables
//! the ports were verified to hold, the OperVLs they run and the SLs the routing's paths take,
//! handed to `ibqos_fabric::credit_loops`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use ibqos_fabric::credit_loops::{
    CreditReport, FabricTables, PathSls, SlSet, VlTables, check, describe_route,
};
use ibqos_fabric::routing::Routes;
use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_mad::SlToVlModifier;
use ibqos_qos::{Sl2VlTable, Vl, VlCount};
use tracing::{debug, warn};

use super::routing::topology;
use super::sweep::Sweep;
use super::write::{TableBlock, TableModifier};

/// What a port holds where the SM wrote no SL-to-VL table: SL n on VL n, as the IBA's reset
/// value and ibsim have it.
const UNWRITTEN: Sl2VlTable = {
    let mut vls = [Vl::VL15; 16];
    let mut sl = 0;
    while sl < 16 {
        vls[sl] = Vl::from_nibble(sl as u8);
        sl += 1;
    }
    Sl2VlTable(vls)
};

/// A sweep's routing checked for credit loops: the fabric as the checker saw it (nodes named by
/// GUID), and what it found.
#[derive(Debug, Clone)]
pub struct CreditCheck {
    pub topology: Topology,
    pub report: CreditReport,
}

/// What decides the check's result: the LFTs, the verified SL-to-VL tables, the OperVLs and
/// the SLs paths start from. Equal fingerprints need no second check.
pub fn fingerprint(sweep: &Sweep, hints: SlSet) -> u64 {
    let mut hasher = DefaultHasher::new();
    sweep.lfts().tables.hash(&mut hasher);
    for write in sweep.verified_qos() {
        if let TableBlock::SlToVl(table) = &write.block {
            (write.node.0, u32::from(write.modifier), &write.ports).hash(&mut hasher);
            table.vls.hash(&mut hasher);
        }
    }
    for (key, port) in sweep.subnet().ports() {
        (key, port.info.operational_vls).hash(&mut hasher);
    }
    hints.hash(&mut hasher);
    hasher.finish()
}

/// The check of `sweep`'s routing, the paths starting from the SLs `hints` holds; `None` when
/// the sweep did not route.
pub fn check_sweep(sweep: &Sweep, hints: SlSet) -> Option<CreditCheck> {
    let lfts = &sweep.lfts().tables;
    if lfts.is_empty() {
        return None;
    }
    let (topology, guids) = topology(sweep.subnet(), None).ok()?;
    let id_of = |guid: u64| {
        guids
            .binary_search(&guid)
            .ok()
            .map(|index| NodeId(index as u32))
    };
    let routes = Routes::from_tables(
        lfts.iter()
            .filter_map(|(guid, lft)| Some((id_of(*guid)?, lft.clone())))
            .collect(),
    );
    let mut vls = VlTables::new(UNWRITTEN, VlCount::One);
    for (key, port) in sweep.subnet().ports() {
        if let (Some(node), Ok(oper)) = (
            id_of(key.node),
            VlCount::from_encoding(port.info.operational_vls),
        ) {
            vls.set_oper_vls(PortRef::new(node, key.port), oper);
        }
    }
    for write in sweep.verified_qos() {
        let (TableBlock::SlToVl(table), TableModifier::SlToVl(scope), Some(node)) =
            (&write.block, write.modifier, id_of(write.node.0))
        else {
            continue;
        };
        let table = Sl2VlTable::from(*table);
        let Some(fabric_node) = topology.node(node) else {
            continue;
        };
        if fabric_node.is_switch() {
            let outputs = write.ports.iter().map(|key| key.port);
            match scope {
                // An optimized Set: one table per output, kept once.
                SlToVlModifier::AllInputs { .. } | SlToVlModifier::All => {
                    for output in outputs {
                        vls.set_sl2vl_every_input(node, output, table);
                    }
                }
                _ => {
                    for (input, output) in scope.pairs(0..=fabric_node.num_ports(), outputs) {
                        vls.set_sl2vl(node, input, output, table);
                    }
                }
            }
        } else {
            // A CA's one table: the Set names the port it programs.
            for key in write.ports.iter() {
                vls.set_sl2vl(node, 0, key.port, table);
            }
        }
    }
    let layering = sweep.layering();
    let tables = FabricTables {
        topology: &topology,
        routes: &routes,
        vls: &vls,
    };
    let report = check(
        tables,
        PathSls::Routed {
            layering: &**layering,
            hints,
        },
    );
    Some(CreditCheck { topology, report })
}

/// How many loops the SM names in its log for one routing; the rest are counted.
const LOGGED_LOOPS: usize = 10;

/// The SM's watch over its routings: each is checked once, after the sweep that programmed it.
#[derive(Debug, Clone, Default)]
pub struct CreditLoopWatch {
    checked: Option<u64>,
    loops: Option<usize>,
}

impl CreditLoopWatch {
    /// The credit loops the last check found; `None` before the first routing.
    pub fn loops(&self) -> Option<usize> {
        self.loops
    }

    /// Checks `sweep`'s routing unless it is the one checked last, logging each loop as a
    /// warning. Returns whether it checked.
    pub fn after_sweep(&mut self, sweep: &Sweep, hints: SlSet) -> bool {
        let fingerprint = fingerprint(sweep, hints);
        if self.checked == Some(fingerprint) {
            return false;
        }
        let Some(CreditCheck { topology, report }) = check_sweep(sweep, hints) else {
            return false;
        };
        self.checked = Some(fingerprint);
        self.loops = Some(report.loops.len());
        log(&topology, &report);
        true
    }
}

fn log(topology: &Topology, report: &CreditReport) {
    let (channels, dependencies) = (report.channels, report.dependencies);
    // Only a loop is news: a free routing stays out of the log a sweep writes.
    if report.is_free() {
        debug!(
            channels,
            dependencies, "credit-loop check: the routing has no credit loop"
        );
    }
    let count = report.loops.len();
    for (number, found) in report.loops.iter().take(LOGGED_LOOPS).enumerate() {
        let closing = describe_route(found.closing[0], topology);
        warn!(
            number = number + 1,
            of = count,
            channels = found.channels.len(),
            component = found.component,
            first_edge_route = %closing,
            "credit loop: {}: a loaded fabric can deadlock",
            found.path(topology)
        );
    }
    if count > LOGGED_LOOPS {
        warn!(
            unlogged = count - LOGGED_LOOPS,
            "more credit loops (see `ibqos credit-loops`)"
        );
    }
    if report.misforward_count > 0 {
        warn!(
            entries = report.misforward_count,
            "credit-loop check: forwarding entries cannot deliver"
        );
    }
    if report.discard_count > 0 {
        warn!(
            channels = report.discard_count,
            "credit-loop check: channels drop packets (VL15 or a VL above OperVLs)"
        );
    }
}
