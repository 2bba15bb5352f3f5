//! QoS orchestration: every SL2VL and VLArb Set the QoS manager plans, each echo checked
//! against what was sent, resent after a backoff when it differs, and counted per port.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_mad::{Attribute, SlToVlModifier};
use tracing::{info, warn};

use super::reconcile::{Held, Planned};
use super::{Op, Phase, Sweep};
use crate::engine::qos::{QosSet, qos_sets};
use crate::engine::subnet::{PortKey, Subnet};

/// The Gets that read what a QoS Set would overwrite: the Set's own modifier, except that an
/// SL2VL Set for several pairs is read pair by pair (a Get cannot use the all-ports bits).
pub(super) fn read_modifiers(subnet: &Subnet, set: &QosSet) -> Vec<u32> {
    let Attribute::SlToVlMappingTable(_) = set.attribute else {
        return vec![set.modifier];
    };
    let Ok(scope) = SlToVlModifier::try_from(set.modifier) else {
        return vec![set.modifier];
    };
    let inputs = 0..=subnet.nodes.get(&set.node).map_or(0, |n| n.info.num_ports);
    let outputs = set.ports.iter().map(|k| k.port);
    scope
        .pairs(inputs, outputs)
        .map(|(input, output)| u32::from(SlToVlModifier::Pair { input, output }))
        .collect()
}

/// Echo mismatches a QoS Set may have before the port is reported failed.
pub(super) const QOS_ATTEMPTS: u32 = 3;

/// The wait before resending a QoS Set whose echo differed, doubled on each further attempt.
pub(super) const QOS_BACKOFF: Duration = Duration::from_millis(20);

/// What became of the QoS programming of each port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosCounts {
    /// Ports with at least one SL2VL or VLArb table to program.
    pub configured: usize,
    /// Ports whose every table was echoed back exactly as sent (or, in Diff and DryRun modes,
    /// already held as planned).
    pub verified: usize,
    /// Ports with a Set that failed or kept echoing something else.
    pub failed: usize,
}

/// Where a QoS Set stands. The order is how a port with several Sets stands: its worst Set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Settled {
    /// Echoed back exactly as sent, or (Diff and DryRun modes) already held as planned.
    Verified,
    /// Not answered yet; a dry run's Sets are never sent, so they stay here.
    Pending,
    /// Failed, or still echoed back different after its attempts.
    Failed,
}

/// Per port: configured, verified, failed, from each Set and where it stands.
fn count_ports(sets: &[QosSet], settled: &[Settled]) -> QosCounts {
    let mut ports: BTreeMap<PortKey, Settled> = BTreeMap::new();
    for (set, settled) in sets.iter().zip(settled) {
        for port in &set.ports {
            let state = ports.entry(*port).or_insert(Settled::Verified);
            *state = (*state).max(*settled);
        }
    }
    let count = |wanted: Settled| ports.values().filter(|s| **s == wanted).count();
    QosCounts {
        configured: ports.len(),
        verified: count(Settled::Verified),
        failed: count(Settled::Failed),
    }
}

impl Sweep {
    /// Every SL2VL and VLArb Set the configuration calls for, masked with the OperVLs the ports
    /// now run; nothing when qos is off.
    pub(super) fn program_qos(&mut self) {
        self.phase = Phase::ProgrammingQos;
        if !self.config.qos.enabled {
            return;
        }
        self.qos_sets = qos_sets(
            &self.subnet,
            &self.config.qos,
            self.config.use_optimized_slvl,
        );
        self.qos_settled = vec![Settled::Pending; self.qos_sets.len()];
        for index in 0..self.qos_sets.len() {
            let Some(planned) = self.planned_qos(index, 1) else {
                continue;
            };
            let held = Held::Read(read_modifiers(&self.subnet, &self.qos_sets[index]));
            self.plan_set(planned, held);
        }
        info!(sets = self.qos_sets.len(), "programming QoS tables");
    }

    /// QoS Set `index` as a planned Set, for its `attempt`th sending.
    pub(super) fn planned_qos(&self, index: usize, attempt: u32) -> Option<Planned> {
        let set = self.qos_sets.get(index)?;
        let path = self.subnet.port(set.via)?.path.clone();
        let ports: Vec<String> = set.ports.iter().map(|k| k.port.to_string()).collect();
        Some(Planned {
            node: set.node,
            path,
            attribute: set.attribute,
            modifier: set.modifier,
            op: Op::SetQos { index, attempt },
            timeout: set.long.then_some(self.config.long_timeout),
            target: format!("{:#018x}[{}]", set.node, ports.join(",")),
        })
    }

    /// A QoS Set answered: the echo must be what was sent. A port that echoes something else is
    /// sent the table again after a backoff, and reported once its attempts are spent, never
    /// taken as programmed.
    pub(super) fn qos_echo(&mut self, now: Instant, index: usize, attempt: u32, echo: Attribute) {
        let Some(set) = self.qos_sets.get(index) else {
            return;
        };
        if set.attribute == echo {
            self.settle_qos(index, Settled::Verified);
        } else if attempt < QOS_ATTEMPTS {
            warn!(ports = ?set.ports, attempt, "QoS table echoed back different; sending it again");
            let backoff = QOS_BACKOFF * 2u32.pow(attempt - 1);
            if let Some(planned) = self.planned_qos(index, attempt + 1) {
                self.send_at(planned, Some(now + backoff));
            }
        } else {
            warn!(ports = ?set.ports, "QoS table still echoed back different; port not verified");
            self.settle_qos(index, Settled::Failed);
        }
    }

    pub(super) fn settle_qos(&mut self, index: usize, settled: Settled) {
        if let Some(slot) = self.qos_settled.get_mut(index) {
            *slot = settled;
        }
    }

    /// Per port: configured, verified, failed.
    pub fn qos_counts(&self) -> QosCounts {
        count_ports(&self.qos_sets, &self.qos_settled)
    }
}
