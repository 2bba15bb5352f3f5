//! The reconciler: every Set a sweep plans goes through here. A forced sweep sends it; a diff
//! sweep or dry run first compares it with what the fabric holds, reading that where discovery
//! did not, and records each difference as a [`Change`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};

use ibqos_exchange::scheduler::Request;
use ibqos_mad::{
    Attribute, AttributeId, DrPath, Guid, MulticastForwardingTableRepr, PortInfoRepr, Routing,
    SmpRepr,
};
use tracing::debug;

use super::diff::{Difference, Found, PortInfoField, differences};
use super::links::resulting_state;
use super::writes::{HighLimitDecision, Settled};
use super::{Op, Sweep, SweepMode};
use crate::engine::pkeys::PkeyIndexes;
use crate::engine::subnet::PortKey;

/// One value the sweep programs that the fabric held differently (Diff and DryRun modes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Which node and port or table, for people.
    pub target: SetTarget,
    pub attribute: AttributeId,
    pub modifier: u32,
    pub differences: Vec<Difference>,
    /// Whether the Set was sent (false in DryRun mode).
    pub sent: bool,
}

/// What a Set is for, as a change names it. Kept as numbers and shown only with a change: a
/// sweep plans a Set for every port and forwarding table block, and most change nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetTarget {
    /// A node's ports: the PortInfo of one, or a table written to them.
    Ports { node: Guid, ports: Vec<u8> },
    /// A switch's SwitchInfo.
    SwitchInfo { switch: Guid },
    /// A block of a switch's linear forwarding table.
    LftBlock { switch: Guid, block: usize },
}

/// `0x0002c90000000001[1,2]`, `0x0002c90000000001 SwitchInfo`, `... LFT block 3`.
impl fmt::Display for SetTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetTarget::Ports { node, ports } => {
                write!(f, "{node}[")?;
                for (i, port) in ports.iter().enumerate() {
                    let comma = if i == 0 { "" } else { "," };
                    write!(f, "{comma}{port}")?;
                }
                f.write_str("]")
            }
            SetTarget::SwitchInfo { switch } => write!(f, "{switch} SwitchInfo"),
            SetTarget::LftBlock { switch, block } => write!(f, "{switch} LFT block {block}"),
        }
    }
}

/// What sweeps learn about the fabric and hand on to the next sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Learned {
    /// Per port, the PortInfo fields it was seen not to keep; not compared in Diff mode.
    pub unkept: BTreeMap<PortKey, BTreeSet<PortInfoField>>,
    /// Per port, where its P_Keys went in earlier sweeps (`keep_pkey_indexes`).
    pub pkey_indexes: BTreeMap<PortKey, PkeyIndexes>,
    /// Per switch GUID, the highest MFT block it was ever given: OpenSM's `max_block_in_use`,
    /// which never goes down, so blocks that emptied are still sent (and cleared).
    pub mft_high_water: BTreeMap<u64, u16>,
    /// The MFT blocks each switch was last seen to hold, by (switch GUID, modifier).
    pub mfts: BTreeMap<(u64, u32), MulticastForwardingTableRepr>,
}

/// A Set the sweep wants to make, before it knows whether it is needed.
#[derive(Debug, Clone)]
pub(super) struct Planned {
    pub(super) node: u64,
    pub(super) path: Vec<u8>,
    pub(super) attribute: Attribute,
    pub(super) modifier: u32,
    pub(super) op: Op,
    pub(super) timeout: Option<Duration>,
    pub(super) target: SetTarget,
}

/// What the fabric holds for a planned Set.
pub(super) enum Held {
    /// Known already (PortInfo and SwitchInfo from discovery).
    Known(Attribute),
    /// To be read with a Get of each of these modifiers (an SL2VL Set for all pairs is read
    /// pair by pair).
    Read(Vec<u32>),
}

/// A planned Set waiting for the reads of what the fabric holds.
#[derive(Debug)]
pub(super) struct PendingRead {
    planned: Planned,
    reads_left: usize,
    differences: Vec<Difference>,
}

impl Sweep {
    /// Sends a planned Set, or in Diff and DryRun modes first compares it with what the fabric
    /// holds: reading that where it is not known, and recording every difference.
    pub(super) fn plan_set(&mut self, planned: Planned, held: Held) {
        if self.config.mode == SweepMode::Forced {
            if let Op::SetPortInfo { port, .. } = planned.op {
                let sent = HighLimitDecision::Sent { drifted: false };
                self.high_limits.decided(port, sent);
            }
            self.send(planned);
            return;
        }
        match held {
            Held::Known(attribute) => {
                let unkept = match &planned.op {
                    Op::SetPortInfo { port, .. } => self.learned.unkept.get(port),
                    _ => None,
                };
                let mut differences = differences(&attribute, &planned.attribute);
                differences.retain(|d| {
                    let field = d.port_info_field();
                    !field.is_some_and(|f| unkept.is_some_and(|u| u.contains(&f)))
                });
                self.decide(planned, differences);
            }
            Held::Read(modifiers) => {
                let pending = self.pending_reads.len();
                let id = planned.attribute.id();
                let (node, path) = (planned.node, planned.path.clone());
                self.pending_reads.push(PendingRead {
                    planned,
                    reads_left: modifiers.len(),
                    differences: Vec::new(),
                });
                for modifier in modifiers {
                    let op = Op::ReadBack { pending };
                    self.scheduler.get_directed(node, &path, id, modifier, op);
                }
            }
        }
    }

    /// One read for a pending planned Set came back (`None`: it could not be read).
    pub(super) fn read_back(&mut self, pending: usize, held: Option<Attribute>) {
        let Some(entry) = self.pending_reads.get_mut(pending) else {
            return;
        };
        let modifier = (entry.reads_left > 1
            || matches!(held, Some(Attribute::SlToVlMappingTable(_))))
        .then_some(entry.planned.modifier);
        let found = match held {
            Some(held) => differences(&held, &entry.planned.attribute),
            None => vec![Difference {
                modifier: None,
                found: Found::Unreadable,
            }],
        };
        entry
            .differences
            .extend(found.into_iter().map(|d| Difference { modifier, ..d }));
        entry.reads_left = entry.reads_left.saturating_sub(1);
        if entry.reads_left == 0 {
            let planned = entry.planned.clone();
            let differences = std::mem::take(&mut entry.differences);
            self.decide(planned, differences);
        }
    }

    /// A compared planned Set: nothing to do if nothing differs; otherwise recorded, and sent
    /// unless this is a dry run. A dry run updates the model as if the Set had been made, so the
    /// later phases plan from the state the fabric would be in.
    pub(super) fn decide(&mut self, planned: Planned, differences: Vec<Difference>) {
        let sent = self.config.mode != SweepMode::DryRun;
        if let Op::SetPortInfo { port, .. } = planned.op {
            let drifted = differences
                .iter()
                .any(|d| d.port_info_field() == Some(PortInfoField::VlHighLimit));
            let decision = match (drifted, sent) {
                (false, _) => HighLimitDecision::Held,
                (true, true) => HighLimitDecision::Sent { drifted },
                (true, false) => HighLimitDecision::Unsent,
            };
            self.high_limits.decided(port, decision);
        }
        if differences.is_empty() {
            if let Op::SetTable { kind, index, .. } = planned.op {
                self.settle_write(kind, index, Settled::Held);
            }
            return;
        }
        if let Op::SetTable { kind, index, .. } = planned.op {
            self.mark_drifted(kind, index);
        }
        self.changes.push(Change {
            target: planned.target.clone(),
            attribute: planned.attribute.id(),
            modifier: planned.modifier,
            differences,
            sent,
        });
        if sent {
            self.send(planned);
        } else if let (Op::SetPortInfo { port, .. }, Attribute::PortInfo(info)) =
            (&planned.op, &planned.attribute)
            && let Some(p) = self.subnet_mut().port_mut(*port)
        {
            p.info = PortInfoRepr {
                port_state: resulting_state(p.info.port_state, info.port_state),
                ..*info
            };
        }
    }

    /// A PortInfo Set's echo: a programmed field the port answers differently was not kept
    /// (ibsim keeps no VLHighLimit, NeighborMTU, VLStallCount or SubnetTimeOut). It is
    /// remembered, so later sweeps do not rewrite it forever.
    pub(super) fn learn_unkept(&mut self, port: PortKey, sent: &PortInfoRepr, echo: &PortInfoRepr) {
        let differing = differences(&Attribute::PortInfo(*echo), &Attribute::PortInfo(*sent));
        for field in differing.iter().filter_map(Difference::port_info_field) {
            if self.learned.unkept.entry(port).or_default().insert(field) {
                debug!(?port, %field, "port does not keep this PortInfo field");
            }
        }
    }

    /// What this sweep and those before it learned, to hand to the next sweep.
    pub fn learned(&self) -> &Learned {
        &self.learned
    }

    /// The changes found (Diff and DryRun modes), in the order they were decided.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    pub(super) fn send(&mut self, planned: Planned) {
        self.send_at(planned, None);
    }

    /// Sends a Set now, or once `not_before` has come.
    pub(super) fn send_at(&mut self, planned: Planned, not_before: Option<Instant>) {
        let Ok(route) = DrPath::request(&planned.path) else {
            return;
        };
        let smp = SmpRepr::set(
            &planned.attribute,
            planned.modifier,
            0,
            Routing::Directed(route),
        );
        let request = Request {
            mad: smp,
            dlid: None,
            node: planned.node,
            timeout: planned.timeout,
            context: planned.op,
        };
        match not_before {
            Some(at) => self.scheduler.submit_at(at, request),
            None => self.scheduler.submit(request),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Fabric, config, settings, subnet_up, sweep};
    use ibqos_mad::{LinearForwardingTableRepr, Method};

    /// S1's LFT block 0 with the entry of the first LID that goes out of another port than
    /// the SM's changed to that port: a route the SM did not program.
    fn reroute(fabric: &mut Fabric) -> (ibqos_fabric::PortRef, u16, u8) {
        let s1 = fabric.port_of("S1", 0);
        let mut block = LinearForwardingTableRepr {
            ports: std::array::from_fn(|lid| fabric.emulator.lft(s1.node, lid as u16).unwrap()),
        };
        let (lid, held) = (1..64u16)
            .map(|lid| (lid, block.ports[usize::from(lid)]))
            .find(|(_, port)| *port != 1 && *port != LinearForwardingTableRepr::NO_ROUTE)
            .unwrap();
        block.ports[usize::from(lid)] = 1;
        fabric.set_behind_the_back(s1, &Attribute::LinearForwardingTable(block), 0);
        (s1, lid, held)
    }

    #[test]
    fn an_unchanged_fabric_gives_a_diff_sweep_no_change_and_no_set() {
        let (mut fabric, forced) = subnet_up("");
        let before = fabric.sent.len();
        let diff = config(&settings(""), SweepMode::Diff);
        let diff = sweep(&mut fabric, diff, forced.learned().clone());
        assert_eq!(*diff.phase(), super::super::Phase::SubnetUp);
        assert_eq!(diff.changes(), []);
        let smps = fabric.smps_sent_since(before);
        assert!(smps.iter().all(|smp| smp.method == Method::Get), "{smps:?}");
    }

    #[test]
    fn a_route_changed_behind_the_sms_back_is_one_change_repaired_unless_dry_run() {
        // (mode, whether the Set goes out)
        for (mode, sent) in [(SweepMode::Diff, true), (SweepMode::DryRun, false)] {
            let (mut fabric, forced) = subnet_up("");
            let (s1, lid, programmed) = reroute(&mut fabric);
            let before = fabric.sent.len();
            let diff = config(&settings(""), mode);
            let diff = sweep(&mut fabric, diff, forced.learned().clone());
            let [change] = diff.changes() else {
                panic!("{mode:?}: {:#?}", diff.changes())
            };
            let switch = Guid(fabric.emulator.topology().node(s1.node).unwrap().guid);
            assert_eq!(change.target, SetTarget::LftBlock { switch, block: 0 });
            assert_eq!(
                (change.attribute, change.modifier, change.sent),
                (AttributeId::LinearForwardingTable, 0, sent)
            );
            // The one entry changed, of the block's 64.
            let lines: Vec<String> = change.differences.iter().map(ToString::to_string).collect();
            assert_eq!(lines, ["1 of 64 LIDs forwarded differently"]);
            let smps = fabric.smps_sent_since(before);
            let sets: Vec<_> = smps
                .iter()
                .filter(|smp| smp.method == Method::Set)
                .collect();
            assert_eq!(sets.len(), usize::from(sent), "{mode:?}");
            let now = fabric.emulator.lft(s1.node, lid).unwrap();
            assert_eq!(now, if sent { programmed } else { 1 }, "{mode:?}");
        }
    }
}
