//! The tables a sweep writes and verifies: each Set's echo checked against what was sent,
//! resent after a backoff when it differs, and counted per port. The QoS manager's SL2VL and
//! VLArb Sets and the partition manager's P_Key blocks go through here alike.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_mad::{Attribute, Priority};
use ibqos_qos::PortClass;
use tracing::warn;

use super::feed::Job;
use super::qos::read_modifiers;
use super::reconcile::{Held, Planned, SetTarget};
use super::{Op, Sweep, SweepMode};
use crate::engine::add_counts;
use crate::engine::qos::port_class;
use crate::engine::subnet::PortKey;
use crate::engine::write::{AnswerWait, TableBlock, TableModifier, TableWrite};

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

/// Which table a Set writes, as monitoring tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Sl2Vl,
    /// The low-priority VLArbitration table (blocks 1 and 2).
    VlArbLow,
    /// The high-priority VLArbitration table (blocks 3 and 4).
    VlArbHigh,
    /// PortInfo.VLHighLimit: no table of its own (it travels in the link manager's PortInfo
    /// Set), but QoS programs it per port as it programs the tables.
    VlHighLimit,
    PKey,
    /// Multicast forwarding table blocks.
    Mft,
}

impl Table {
    /// Every table, in order.
    pub const ALL: [Table; 6] = [
        Table::Sl2Vl,
        Table::VlArbLow,
        Table::VlArbHigh,
        Table::VlHighLimit,
        Table::PKey,
        Table::Mft,
    ];

    /// The table a Set with `modifier` writes.
    pub fn of(modifier: TableModifier) -> Table {
        match modifier {
            TableModifier::SlToVl(_) => Table::Sl2Vl,
            TableModifier::VlArb(m) => match m.block.priority() {
                Priority::Low => Table::VlArbLow,
                Priority::High => Table::VlArbHigh,
            },
            TableModifier::PKey(_) => Table::PKey,
            TableModifier::Mft(_) => Table::Mft,
        }
    }

    /// Its name in metrics and logs.
    pub const fn name(self) -> &'static str {
        match self {
            Table::Sl2Vl => "sl2vl",
            Table::VlArbLow => "vlarb_low",
            Table::VlArbHigh => "vlarb_high",
            Table::VlHighLimit => "vl_high_limit",
            Table::PKey => "pkey",
            Table::Mft => "mft",
        }
    }
}

/// What became of one table Set by the end of its sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetResult {
    /// Sent and echoed back exactly as sent.
    Ok,
    /// Sent, and echoed back different after every attempt or never answered.
    Failed,
    /// Not sent: the fabric already held it (a diff sweep read it back first).
    Skipped,
}

impl SetResult {
    pub const ALL: [SetResult; 3] = [SetResult::Ok, SetResult::Failed, SetResult::Skipped];

    /// Its name in metrics.
    pub const fn name(self) -> &'static str {
        match self {
            SetResult::Ok => "ok",
            SetResult::Failed => "failed",
            SetResult::Skipped => "skipped",
        }
    }
}

/// A sweep's table Sets counted by table: what became of them, and the drift a diff sweep found
/// (the fabric held something else than the SM had programmed) and repaired (Set and verified).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableTally {
    pub sets: BTreeMap<(Table, SetResult), u64>,
    pub drift_found: BTreeMap<Table, u64>,
    pub drift_repaired: BTreeMap<Table, u64>,
}

impl TableTally {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &TableTally) {
        add_counts(&mut self.sets, &other.sets);
        add_counts(&mut self.drift_found, &other.drift_found);
        add_counts(&mut self.drift_repaired, &other.drift_repaired);
    }
}

/// Where a Set stands. The order is how a port with several Sets stands: its worst Set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Settled {
    /// Already held as planned (a diff sweep read it back): not sent.
    Held,
    /// Echoed back exactly as sent.
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
    /// Per Set, whether a diff sweep found the fabric holding something else.
    drifted: Vec<bool>,
}

impl Writes {
    /// The Sets to make, none settled yet.
    pub(super) fn new(sets: Vec<TableWrite>) -> Writes {
        let settled = vec![Settled::Pending; sets.len()];
        let drifted = vec![false; sets.len()];
        let mut writes = Writes {
            sets,
            settled,
            drifted,
        };
        writes.planned();
        writes
    }

    /// All Sets are planned: they are kept for the whole sweep, so without the room a growing
    /// list keeps spare (up to half of it: 9 MB for the VLArb Sets of 10,416 nodes).
    pub(super) fn planned(&mut self) {
        self.sets.shrink_to_fit();
        self.settled.shrink_to_fit();
        self.drifted.shrink_to_fit();
    }

    /// A Set to make.
    pub(super) fn push(&mut self, set: TableWrite) {
        self.sets.push(set);
        self.settled.push(Settled::Pending);
        self.drifted.push(false);
    }

    /// A set that is known to be in place already, so held without a Set.
    pub(super) fn push_held(&mut self, set: TableWrite) {
        self.sets.push(set);
        self.settled.push(Settled::Held);
        self.drifted.push(false);
    }

    /// Set `index` differs from what the fabric holds (a diff sweep or dry run read it).
    pub(super) fn mark_drifted(&mut self, index: usize) {
        if let Some(slot) = self.drifted.get_mut(index) {
            *slot = true;
        }
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

    /// A feed job for each Set not settled yet, with the node it goes to.
    pub(super) fn pending_jobs(&self, kind: TableKind) -> impl Iterator<Item = (u64, Job)> + '_ {
        self.pending()
            .into_iter()
            .map(move |index| (self.sets[index].node.0, Job::Write(kind, index as u32)))
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
            .filter(|(_, settled)| **settled <= Settled::Verified)
            .map(|(set, _)| set)
    }

    /// Per port: configured, verified, failed, from each Set and where it stands.
    pub(super) fn counts(&self) -> TableCounts {
        // Every port in one group.
        self.counts_by(|_| true).remove(&true).unwrap_or_default()
    }

    /// [`counts`](Self::counts) per group of ports, `group` naming each port's.
    pub(super) fn counts_by<G: Ord>(
        &self,
        mut group: impl FnMut(PortKey) -> G,
    ) -> BTreeMap<G, TableCounts> {
        // Each port's worst state over its Sets: sorted by port, then state, so the last of
        // a port's entries is its worst.
        let mut each: Vec<(PortKey, Settled)> = Vec::with_capacity(self.sets.len());
        for (set, settled) in self.sets.iter().zip(&self.settled) {
            each.extend(set.ports.iter().map(|port| (*port, *settled)));
        }
        each.sort_unstable();
        each.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        let mut groups: BTreeMap<G, TableCounts> = BTreeMap::new();
        for (port, settled) in each {
            let counts = groups.entry(group(port)).or_default();
            counts.configured += 1;
            match settled {
                Settled::Held | Settled::Verified => counts.verified += 1,
                Settled::Failed => counts.failed += 1,
                Settled::Pending => {}
            }
        }
        groups
    }

    /// Each Set by table and what became of it, and the drift found and repaired. `sent` says
    /// whether Sets were sent at all: a dry run's stay pending and count as nothing; another
    /// sweep's still pending at its end were never answered, and count as failed.
    pub(super) fn tally(&self, sent: bool) -> TableTally {
        let mut tally = TableTally::default();
        let each = self.sets.iter().zip(&self.settled).zip(&self.drifted);
        for ((set, settled), drifted) in each {
            let table = Table::of(set.modifier);
            if *drifted {
                *tally.drift_found.entry(table).or_default() += 1;
            }
            let result = match settled {
                Settled::Held => SetResult::Skipped,
                Settled::Verified => SetResult::Ok,
                Settled::Pending if !sent => continue,
                Settled::Pending | Settled::Failed => SetResult::Failed,
            };
            *tally.sets.entry((table, result)).or_default() += 1;
            if *drifted && result == SetResult::Ok {
                *tally.drift_repaired.entry(table).or_default() += 1;
            }
        }
        tally
    }
}

/// The VLHighLimit of each port whose PortInfo Set carries the QoS plan's, and where each
/// stands, told as a table Set is: sent and echoed back as sent, or not, or found in place.
#[derive(Debug, Default)]
pub(super) struct HighLimits {
    ports: BTreeMap<PortKey, HighLimit>,
}

#[derive(Debug, Clone, Copy)]
struct HighLimit {
    /// The value planned.
    value: u8,
    /// The Set carrying it was sent (only then does an echo settle it).
    sent: bool,
    settled: Settled,
    /// A diff sweep or dry run found the port holding another value.
    drifted: bool,
}

/// What the reconciler decided about a port's PortInfo Set, as its VLHighLimit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HighLimitDecision {
    /// Sent; `drifted` if the port held another VLHighLimit.
    Sent { drifted: bool },
    /// The port held another VLHighLimit, and a dry run sends nothing.
    Unsent,
    /// The port holds it already (the Set may still go out, for other fields).
    Held,
}

impl HighLimits {
    /// `port`'s PortInfo Set carries the planned VLHighLimit `value`.
    pub(super) fn plan(&mut self, port: PortKey, value: u8) {
        let undecided = HighLimit {
            value,
            sent: false,
            settled: Settled::Pending,
            drifted: false,
        };
        self.ports.insert(port, undecided);
    }

    /// The reconciler's decision on the first PortInfo Set of `port` (the link manager's);
    /// later ones (ACTIVE) carry what the port holds and change nothing here.
    pub(super) fn decided(&mut self, port: PortKey, decision: HighLimitDecision) {
        let Some(limit) = self.ports.get_mut(&port) else {
            return;
        };
        if limit.sent || limit.settled != Settled::Pending || limit.drifted {
            return;
        }
        match decision {
            HighLimitDecision::Sent { drifted } => (limit.sent, limit.drifted) = (true, drifted),
            HighLimitDecision::Unsent => limit.drifted = true,
            HighLimitDecision::Held => limit.settled = Settled::Held,
        }
    }

    /// The echo of a PortInfo Set to `port`, holding `echoed`: verified if that is the value
    /// planned.
    pub(super) fn echoed(&mut self, port: PortKey, echoed: u8) {
        if let Some(limit) = self.ports.get_mut(&port)
            && limit.sent
            && limit.settled == Settled::Pending
        {
            limit.settled = if echoed == limit.value {
                Settled::Verified
            } else {
                Settled::Failed
            };
        }
    }

    /// As [`Writes::tally`] counts table Sets.
    fn tally(&self) -> TableTally {
        let mut tally = TableTally::default();
        let table = Table::VlHighLimit;
        for limit in self.ports.values() {
            if limit.drifted {
                *tally.drift_found.entry(table).or_default() += 1;
            }
            let result = match limit.settled {
                Settled::Held => SetResult::Skipped,
                Settled::Verified => SetResult::Ok,
                Settled::Pending if !limit.sent => continue,
                Settled::Pending | Settled::Failed => SetResult::Failed,
            };
            *tally.sets.entry((table, result)).or_default() += 1;
            if limit.drifted && result == SetResult::Ok {
                *tally.drift_repaired.entry(table).or_default() += 1;
            }
        }
        tally
    }
}

impl Sweep {
    /// Set `index` of `kind`, first sent or compared with what the fabric holds.
    pub(super) fn plan_write(&mut self, kind: TableKind, index: usize) {
        let Some(planned) = self.planned_write(kind, index, 1) else {
            return;
        };
        let Some(set) = self.writes(kind).get(index) else {
            return;
        };
        // A forced sweep sends without comparing: what the fabric holds is not needed.
        let held = match (self.config.mode, kind) {
            (SweepMode::Forced, _) => Held::Read(Vec::new()),
            (_, TableKind::PKey) => Held::Known(Attribute::PKeyTable(self.held_block(set))),
            (_, TableKind::Qos) => Held::Read(read_modifiers(&self.subnet, set)),
            (_, TableKind::Mft) => Held::Read(vec![planned.modifier]),
        };
        self.plan_set(planned, held);
    }

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
        Some(Planned {
            node: set.node.0,
            path,
            attribute: set.block.attribute(),
            modifier: set.modifier.into(),
            op: Op::SetTable {
                kind,
                index,
                attempt,
            },
            timeout: (set.answer_wait() == AnswerWait::Long).then_some(self.config.long_timeout),
            target: SetTarget::Ports {
                node: set.node,
                ports: set.ports.iter().map(|k| k.port).collect(),
            },
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
        if set.block.attribute() == echo {
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
        if let (TableKind::Mft, Settled::Held | Settled::Verified) = (kind, settled)
            && let Some(set) = self.mft_writes.get(index)
            && let TableBlock::Mft(table) = set.block
        {
            let key = (set.node.0, set.modifier.into());
            self.learned.mfts.insert(key, table);
        }
    }

    pub(super) fn mark_drifted(&mut self, kind: TableKind, index: usize) {
        self.writes_mut(kind).mark_drifted(index);
    }

    /// This sweep's table Sets by table and what became of them, with the drift it found and
    /// repaired: the QoS, P_Key and multicast forwarding tables alike.
    pub fn table_tally(&self) -> TableTally {
        let sent = self.config.mode != SweepMode::DryRun;
        let mut tally = TableTally::default();
        for kind in [TableKind::Qos, TableKind::PKey, TableKind::Mft] {
            tally.add(&self.writes(kind).tally(sent));
        }
        tally.add(&self.high_limits.tally());
        tally
    }

    /// Per port class: QoS tables configured, verified, failed.
    pub fn qos_counts_by_class(&self) -> BTreeMap<Option<PortClass>, TableCounts> {
        self.qos_writes.counts_by(|key| {
            let node = self.subnet.nodes.get(&key.node);
            node.and_then(|node| port_class(node, key.port))
        })
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
    use ibqos_mad::{Guid, SlToVlMappingTableRepr, SlToVlModifier};

    fn set(modifier: u32, outputs: &[u8]) -> TableWrite {
        let modifier = SlToVlModifier::try_from(modifier).unwrap();
        TableWrite {
            node: Guid(1),
            via: PortKey::new(1, 0),
            block: TableBlock::SlToVl(SlToVlMappingTableRepr { vls: [0; 16] }),
            modifier: TableModifier::SlToVl(modifier),
            ports: outputs.iter().map(|&p| PortKey::new(1, p)).collect(),
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
            drifted: vec![false; settled.len()],
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
    fn a_tally_counts_sets_by_result_and_the_drift_repaired() {
        use Settled::*;
        let mut held = writes(&[Held, Verified, Failed, Pending]);
        held.mark_drifted(1);
        held.mark_drifted(2);
        let sl2vl = Table::Sl2Vl;
        let sent = held.tally(true);
        assert_eq!(
            sent.sets,
            BTreeMap::from([
                ((sl2vl, SetResult::Ok), 1),
                ((sl2vl, SetResult::Failed), 2),
                ((sl2vl, SetResult::Skipped), 1),
            ])
        );
        assert_eq!(sent.drift_found, BTreeMap::from([(sl2vl, 2)]));
        assert_eq!(sent.drift_repaired, BTreeMap::from([(sl2vl, 1)]));
        // A dry run's pending Sets were never sent: not counted.
        let dry = held.tally(false);
        assert_eq!(dry.sets.get(&(sl2vl, SetResult::Failed)), Some(&1));
    }

    #[test]
    fn a_vl_high_limit_counts_from_its_first_decision_and_the_value_planned() {
        let port = |n| PortKey::new(1, n);
        let mut limits = HighLimits::default();
        // Sent because it drifted, echoed back as planned; a later Set (ACTIVE) changes nothing.
        limits.plan(port(1), 4);
        limits.decided(port(1), HighLimitDecision::Sent { drifted: true });
        limits.decided(port(1), HighLimitDecision::Held);
        limits.echoed(port(1), 4);
        limits.echoed(port(1), 0);
        // Held already.
        limits.plan(port(2), 4);
        limits.decided(port(2), HighLimitDecision::Held);
        limits.echoed(port(2), 0);
        // Sent, and the echo holds another value.
        limits.plan(port(3), 4);
        limits.decided(port(3), HighLimitDecision::Sent { drifted: false });
        limits.echoed(port(3), 0);
        // A dry run's drift: found, never sent, so no Set counted.
        limits.plan(port(4), 4);
        limits.decided(port(4), HighLimitDecision::Unsent);
        // Not planned: nothing counted.
        limits.decided(port(5), HighLimitDecision::Sent { drifted: true });
        let table = Table::VlHighLimit;
        assert_eq!(
            limits.tally(),
            TableTally {
                sets: BTreeMap::from([
                    ((table, SetResult::Ok), 1),
                    ((table, SetResult::Failed), 1),
                    ((table, SetResult::Skipped), 1),
                ]),
                drift_found: BTreeMap::from([(table, 2)]),
                drift_repaired: BTreeMap::from([(table, 1)]),
            }
        );
    }

    #[test]
    fn only_verified_sets_are_held() {
        use Settled::*;
        let held = writes(&[Verified, Failed, Pending, Verified]);
        let modifiers: Vec<u32> = held.verified().map(|s| s.modifier.into()).collect();
        assert_eq!(modifiers, [0x0101, 0x0104]);
    }
}
