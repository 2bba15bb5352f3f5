//! The tables a sweep writes and verifies: each Set's echo checked against what was sent,
//! resent after a backoff when it differs, and counted per port. The QoS manager's SL2VL and
//! VLArb Sets and the partition manager's P_Key blocks go through here alike.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_mad::Attribute;
use tracing::warn;

use super::reconcile::Planned;
use super::{Op, Sweep};
use crate::engine::subnet::PortKey;
use crate::engine::write::TableWrite;

/// Echo mismatches a Set may have before the port is reported failed.
pub(super) const ATTEMPTS: u32 = 3;

/// The wait before resending a Set whose echo differed, doubled on each further attempt.
pub(super) const BACKOFF: Duration = Duration::from_millis(20);

/// Which manager's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TableKind {
    /// SL2VL and VLArb.
    Qos,
    /// P_Key blocks.
    PKey,
    /// Multicast forwarding table blocks.
    Mft,
}

/// What became of the tables of each port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCounts {
    /// Ports with at least one table to program.
    pub configured: usize,
    /// Ports whose every table was echoed back exactly as sent (or, in Diff and DryRun modes,
    /// already held as planned).
    pub verified: usize,
    /// Ports with a Set that failed or kept echoing something else.
    pub failed: usize,
}

/// Where a Set stands. The order is how a port with several Sets stands: its worst Set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Settled {
    /// Echoed back exactly as sent, or already held as planned.
    Verified,
    /// Not answered yet; a dry run's Sets are never sent, so they stay here.
    Pending,
    /// Failed, or still echoed back different after its attempts.
    Failed,
}

/// One manager's Sets of this sweep, and where each stands.
#[derive(Debug, Default)]
pub(super) struct Writes {
    sets: Vec<TableWrite>,
    settled: Vec<Settled>,
}

impl Writes {
    /// The Sets to make, none settled yet.
    pub(super) fn new(sets: Vec<TableWrite>) -> Writes {
        let settled = vec![Settled::Pending; sets.len()];
        Writes { sets, settled }
    }

    /// A Set to make.
    pub(super) fn push(&mut self, set: TableWrite) {
        self.sets.push(set);
        self.settled.push(Settled::Pending);
    }

    /// A set that is known to be in place already, so verified without a Set.
    pub(super) fn push_verified(&mut self, set: TableWrite) {
        self.sets.push(set);
        self.settled.push(Settled::Verified);
    }

    pub(super) fn get(&self, index: usize) -> Option<&TableWrite> {
        self.sets.get(index)
    }

    pub(super) fn len(&self) -> usize {
        self.sets.len()
    }

    /// The Sets not settled yet, by index.
    pub(super) fn pending(&self) -> Vec<usize> {
        (0..self.sets.len())
            .filter(|&i| self.settled[i] == Settled::Pending)
            .collect()
    }

    pub(super) fn settle(&mut self, index: usize, settled: Settled) {
        if let Some(slot) = self.settled.get_mut(index) {
            *slot = settled;
        }
    }

    /// The Sets the ports hold as sent: echoed back exactly, or found already in place.
    pub(super) fn verified(&self) -> impl Iterator<Item = &TableWrite> {
        self.sets
            .iter()
            .zip(&self.settled)
            .filter(|(_, settled)| **settled == Settled::Verified)
            .map(|(set, _)| set)
    }

    /// Per port: configured, verified, failed, from each Set and where it stands.
    pub(super) fn counts(&self) -> TableCounts {
        let mut ports: BTreeMap<PortKey, Settled> = BTreeMap::new();
        for (set, settled) in self.sets.iter().zip(&self.settled) {
            for port in &set.ports {
                let state = ports.entry(*port).or_insert(Settled::Verified);
                *state = (*state).max(*settled);
            }
        }
        let count = |wanted: Settled| ports.values().filter(|s| **s == wanted).count();
        TableCounts {
            configured: ports.len(),
            verified: count(Settled::Verified),
            failed: count(Settled::Failed),
        }
    }
}

impl Sweep {
    pub(super) fn writes(&self, kind: TableKind) -> &Writes {
        match kind {
            TableKind::Qos => &self.qos_writes,
            TableKind::PKey => &self.pkey_writes,
            TableKind::Mft => &self.mft_writes,
        }
    }

    fn writes_mut(&mut self, kind: TableKind) -> &mut Writes {
        match kind {
            TableKind::Qos => &mut self.qos_writes,
            TableKind::PKey => &mut self.pkey_writes,
            TableKind::Mft => &mut self.mft_writes,
        }
    }

    /// Set `index` of `kind` as a planned Set, for its `attempt`th sending.
    pub(super) fn planned_write(
        &self,
        kind: TableKind,
        index: usize,
        attempt: u32,
    ) -> Option<Planned> {
        let set = self.writes(kind).get(index)?;
        let path = self.subnet.port(set.via)?.path.clone();
        let ports: Vec<String> = set.ports.iter().map(|k| k.port.to_string()).collect();
        Some(Planned {
            node: set.node,
            path,
            attribute: set.attribute,
            modifier: set.modifier,
            op: Op::SetTable {
                kind,
                index,
                attempt,
            },
            timeout: set.long.then_some(self.config.long_timeout),
            target: format!("{:#018x}[{}]", set.node, ports.join(",")),
        })
    }

    /// A Set answered: the echo must be what was sent. A port that echoes something else is
    /// sent the table again after a backoff, and reported once its attempts are spent, never
    /// taken as programmed.
    pub(super) fn write_echo(
        &mut self,
        now: Instant,
        kind: TableKind,
        index: usize,
        attempt: u32,
        echo: Attribute,
    ) {
        let Some(set) = self.writes(kind).get(index) else {
            return;
        };
        if set.attribute == echo {
            self.settle_write(kind, index, Settled::Verified);
        } else if attempt < ATTEMPTS {
            warn!(ports = ?set.ports, ?kind, attempt, "table echoed back different; sending it again");
            let backoff = BACKOFF * 2u32.pow(attempt - 1);
            if let Some(planned) = self.planned_write(kind, index, attempt + 1) {
                self.send_at(planned, Some(now + backoff));
            }
        } else {
            warn!(ports = ?set.ports, ?kind, "table still echoed back different; port not verified");
            self.settle_write(kind, index, Settled::Failed);
        }
    }

    pub(super) fn settle_write(&mut self, kind: TableKind, index: usize, settled: Settled) {
        self.writes_mut(kind).settle(index, settled);
        // The MFT blocks a switch holds, so that an update after a join Sets only those that
        // change.
        if let (TableKind::Mft, Settled::Verified) = (kind, settled)
            && let Some(set) = self.mft_writes.get(index)
            && let Attribute::MulticastForwardingTable(table) = set.attribute
        {
            let key = (set.node, set.modifier);
            self.learned.mfts.insert(key, table);
        }
    }

    /// The QoS Sets the ports hold as sent: echoed back exactly, or found already in place.
    pub fn verified_qos(&self) -> impl Iterator<Item = &TableWrite> {
        self.qos_writes.verified()
    }

    /// Per port: QoS tables configured, verified, failed.
    pub fn qos_counts(&self) -> TableCounts {
        self.qos_writes.counts()
    }

    /// Per port: P_Key tables configured, verified, failed.
    pub fn pkey_counts(&self) -> TableCounts {
        self.pkey_writes.counts()
    }

    /// Per switch: multicast forwarding tables configured, verified, failed.
    pub fn mft_counts(&self) -> TableCounts {
        self.mft_writes.counts()
    }

    /// The multicast forwarding table blocks the switches hold as sent.
    pub fn verified_mfts(&self) -> impl Iterator<Item = &TableWrite> {
        self.mft_writes.verified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::SlToVlMappingTableRepr;

    fn set(modifier: u32, outputs: &[u8]) -> TableWrite {
        TableWrite {
            node: 1,
            via: PortKey::new(1, 0),
            attribute: Attribute::SlToVlMappingTable(SlToVlMappingTableRepr { vls: [0; 16] }),
            modifier,
            ports: outputs.iter().map(|&p| PortKey::new(1, p)).collect(),
            long: false,
        }
    }

    fn writes(settled: &[Settled]) -> Writes {
        let sets = vec![
            set(0x0101, &[1]),
            set(0x0102, &[2]),
            set(0x0103, &[1, 3]),
            set(0x0104, &[4]),
        ];
        Writes {
            sets,
            settled: settled.to_vec(),
        }
    }

    #[test]
    fn a_port_counts_as_its_worst_set() {
        use Settled::*;
        let counts = writes(&[Verified, Failed, Pending, Verified]).counts();
        // Port 1: verified then pending; 2 failed; 3 pending; 4 verified.
        assert_eq!(
            counts,
            TableCounts {
                configured: 4,
                verified: 1,
                failed: 1,
            }
        );
        // Port 1 failed once stays failed, whatever its other Set did.
        let counts = writes(&[Failed, Verified, Verified, Verified]).counts();
        assert_eq!((counts.verified, counts.failed), (3, 1));
    }

    #[test]
    fn only_verified_sets_are_held() {
        use Settled::*;
        let held = writes(&[Verified, Failed, Pending, Verified]);
        let modifiers: Vec<u32> = held.verified().map(|s| s.modifier).collect();
        assert_eq!(modifiers, [0x0101, 0x0104]);
    }
}
