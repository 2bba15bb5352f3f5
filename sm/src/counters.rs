//! What the SM has done since it started, and what the fabric holds now, as plain numbers for
//! monitoring. The SM knows nothing of how they are exported (the binary makes Prometheus
//! metrics of them); it only keeps them.
//!
//! [`Counters`] add up, sweep after sweep, what each sweep's scheduler and table writes
//! counted, with what reached the SM and what it sent between sweeps. [`Inventory`] and
//! [`QosPorts`] are read off the last sweep.

use std::collections::BTreeMap;

use ibqos_congestion::CcDrift;
use ibqos_mad::{AttributeId, Mad, Method, MgmtClass, NodeType, PortState, Status};
use ibqos_qos::PortClass;

use crate::engine::add_counts;
use crate::engine::qos::port_class;
use crate::engine::sweep::{Sweep, TableCounts, TableTally};

/// Cumulative counts since the SM started; they only grow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every SMP the SM sent (sweeps, multicast updates, the election's polls, answers to
    /// requests and traps), by attribute and method.
    pub smps_sent: BTreeMap<(AttributeId, Method), u64>,
    /// Every SMP that reached the SM (answers, requests, traps), by attribute and method.
    pub smps_received: BTreeMap<(AttributeId, Method), u64>,
    /// Attempts of the sweeps' requests that got no answer in time or were handed back.
    pub timeouts: BTreeMap<AttributeId, u64>,
    /// Answers to the sweeps' requests with a non-zero MAD status.
    pub error_statuses: BTreeMap<(AttributeId, Status), u64>,
    /// Traps by number (generic notices; others under their vendor's trap number too).
    pub traps: BTreeMap<u16, u64>,
    /// The sweeps' table Sets, drift found and repaired.
    pub tables: TableTally,
    /// The congestion control settings the read back found drifted, and repaired.
    pub congestion_drift: CcDrift,
    /// Routings checked for credit loops (each once, after the sweep that programmed it).
    pub credit_loop_checks: u64,
}

impl Counters {
    /// Adds what `sweep` (a whole sweep or a multicast update, at its end) counted.
    pub fn add_sweep(&mut self, sweep: &Sweep) {
        let stats = sweep.stats();
        add_counts(&mut self.timeouts, &stats.timeouts);
        add_counts(&mut self.error_statuses, &stats.error_statuses);
        self.tables.add(&sweep.table_tally());
    }

    /// A MAD the SM sends: counted if it is an SMP; whether it was.
    pub fn count_sent(&mut self, mad: &[u8]) -> bool {
        let Some(key) = smp_kind(mad) else {
            return false;
        };
        *self.smps_sent.entry(key).or_default() += 1;
        true
    }

    /// A MAD that reached the SM: counted if it is an SMP.
    pub fn count_received(&mut self, mad: &[u8]) {
        if let Some(key) = smp_kind(mad) {
            *self.smps_received.entry(key).or_default() += 1;
        }
    }
}

/// The attribute and method of an SMP (LID-routed or directed), from its common header alone.
fn smp_kind(mad: &[u8]) -> Option<(AttributeId, Method)> {
    let header = Mad::new_checked(mad).ok()?;
    matches!(
        header.mgmt_class(),
        MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute
    )
    .then(|| (header.attribute_id(), header.method()))
}

/// What a sweep found: nodes by type and ports by their node's type and their state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub nodes: BTreeMap<NodeType, usize>,
    pub ports: BTreeMap<(NodeType, PortState), usize>,
    /// End ports with a LID.
    pub lids: usize,
}

impl Inventory {
    pub fn of(sweep: &Sweep) -> Inventory {
        let subnet = sweep.subnet();
        let mut inventory = Inventory {
            lids: sweep.counts().lids,
            ..Inventory::default()
        };
        for node in subnet.nodes.values() {
            *inventory.nodes.entry(node.info.node_type).or_default() += 1;
            for port in node.ports.values() {
                let key = (node.info.node_type, port.info.port_state);
                *inventory.ports.entry(key).or_default() += 1;
            }
        }
        inventory
    }
}

/// The QoS state of the ports after a sweep, per port class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosPorts {
    /// Ports with QoS tables to program: how many, and how many hold them as planned.
    pub tables: BTreeMap<PortClass, TableCounts>,
    /// Linked ports whose OperationalVLs are fewer than the configured `max_op_vls`: the port
    /// or its peer supports fewer VLs, so the planner masked the tables to those it runs.
    pub vl_clamped: BTreeMap<PortClass, usize>,
}

impl QosPorts {
    pub fn of(sweep: &Sweep) -> QosPorts {
        let tables = sweep
            .qos_counts_by_class()
            .into_iter()
            .filter_map(|(class, counts)| Some((class?, counts)))
            .collect();
        let subnet = sweep.subnet();
        let max = sweep.config().max_op_vls.encoding();
        let mut vl_clamped = BTreeMap::new();
        for (key, port) in subnet.ports() {
            let class = subnet
                .nodes
                .get(&key.node)
                .and_then(|n| port_class(n, key.port));
            if let Some(class) = class
                && subnet.peer(key).is_some()
                && port.info.operational_vls < max
            {
                *vl_clamped.entry(class).or_default() += 1;
            }
        }
        QosPorts { tables, vl_clamped }
    }
}
