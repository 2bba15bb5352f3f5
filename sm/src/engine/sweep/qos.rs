//! QoS orchestration: every SL2VL and VLArb Set the QoS manager plans, each echo checked
//! against what was sent, resent after a backoff when it differs, and counted per port.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_mad::{Attribute, SlToVlModifier};
use tracing::{info, warn};

use super::reconcile::{Held, Planned};
use super::{Op, Phase, Sweep};
use crate::engine::qos::{QosWrite, qos_sets};
use crate::engine::subnet::{PortKey, Subnet};

/// The Gets that read what a QoS Set would overwrite: the Set's own modifier, except that an
/// SL2VL Set for several pairs is read pair by pair (a Get cannot use the all-ports bits).
pub(super) fn read_modifiers(subnet: &Subnet, set: &QosWrite) -> Vec<u32> {
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
fn count_ports(sets: &[QosWrite], settled: &[Settled]) -> QosCounts {
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
            &self.setup,
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

    /// The QoS Sets the ports hold as sent: echoed back exactly, or found already in place.
    pub fn verified_qos(&self) -> impl Iterator<Item = &QosWrite> {
        self.qos_sets
            .iter()
            .zip(&self.qos_settled)
            .filter(|(_, settled)| **settled == Settled::Verified)
            .map(|(set, _)| set)
    }

    /// Per port: configured, verified, failed.
    pub fn qos_counts(&self) -> QosCounts {
        count_ports(&self.qos_sets, &self.qos_settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::{NodeInfo, NodeInfoRepr, SlToVlMappingTableRepr, VlArbitrationTableRepr};

    use crate::engine::subnet::Node;

    fn set(attribute: Attribute, modifier: u32, outputs: &[u8]) -> QosWrite {
        QosWrite {
            node: 1,
            via: PortKey::new(1, 0),
            attribute,
            modifier,
            ports: outputs.iter().map(|&p| PortKey::new(1, p)).collect(),
            long: false,
        }
    }

    fn sl2vl() -> Attribute {
        Attribute::SlToVlMappingTable(SlToVlMappingTableRepr { vls: [0; 16] })
    }

    /// A subnet of one switch with ports 0..=2.
    fn subnet() -> Subnet {
        let mut info = NodeInfoRepr::parse(&NodeInfo::new_unchecked([0u8; 40])).unwrap();
        info.num_ports = 2;
        let node = Node {
            info,
            description: String::new(),
            switch: None,
            path: Vec::new(),
            ports: BTreeMap::new(),
        };
        Subnet {
            nodes: BTreeMap::from([(1, node)]),
            ..Subnet::default()
        }
    }

    #[test]
    fn an_all_ports_sl2vl_set_is_read_pair_by_pair() {
        let subnet = subnet();
        let pair = |input, output| u32::from(SlToVlModifier::Pair { input, output });
        let all = set(sl2vl(), u32::from(SlToVlModifier::All), &[1, 2]);
        let expected: Vec<u32> = [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]
            .map(|(i, o)| pair(i, o))
            .to_vec();
        assert_eq!(read_modifiers(&subnet, &all), expected);
        let inputs = set(
            sl2vl(),
            u32::from(SlToVlModifier::AllInputs { output: 2 }),
            &[2],
        );
        assert_eq!(
            read_modifiers(&subnet, &inputs),
            [pair(0, 2), pair(1, 2), pair(2, 2)]
        );
        let one = set(sl2vl(), pair(1, 2), &[2]);
        assert_eq!(read_modifiers(&subnet, &one), [pair(1, 2)]);
        let vlarb = Attribute::VlArbitrationTable(VlArbitrationTableRepr {
            entries: Default::default(),
        });
        assert_eq!(
            read_modifiers(&subnet, &set(vlarb, 0x1_0002, &[2])),
            [0x1_0002]
        );
    }

    #[test]
    fn a_port_counts_as_its_worst_set() {
        let sets = [
            set(sl2vl(), 0x0101, &[1]),
            set(sl2vl(), 0x0102, &[2]),
            set(sl2vl(), 0x0103, &[1, 3]),
            set(sl2vl(), 0x0104, &[4]),
        ];
        use Settled::*;
        let counts = count_ports(&sets, &[Verified, Failed, Pending, Verified]);
        // Port 1: verified then pending; 2 failed; 3 pending; 4 verified.
        assert_eq!(
            counts,
            QosCounts {
                configured: 4,
                verified: 1,
                failed: 1,
            }
        );
        // Port 1 failed once stays failed, whatever its other Set did.
        let counts = count_ports(&sets, &[Failed, Verified, Verified, Verified]);
        assert_eq!((counts.verified, counts.failed), (3, 1));
    }
}
