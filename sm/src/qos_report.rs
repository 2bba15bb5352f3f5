//! The QoS conformance report: for each output port, the share of the data each VL got over
//! the PerfMgr's last window against the share its VL arbitration promises
//! ([`ibqos_qos::promise`]).
//!
//! The promise comes from the tables the SM programmed and verified ([`Promises`], made after
//! each sweep), not from what a port holds now: a port whose tables another agent rewrote
//! shows up here until a sweep repairs it.
//!
//! What a port sent on each VL is what its link partner's PMA counted received on that VL
//! (PortVLOpData and PortVLOpPackets, read on the peer). PortXmitDataSL of the port itself
//! would need the SL-to-VL table of every input port that feeds it, and a switch holds one per
//! input and output pair; the peer's counters are per VL as they crossed the link. Which VLs
//! were backlogged comes from the port's own PortVLXmitWaitCounters. Every figure is a rate
//! over the PerfMgr's last two readings (`perfmgr_lanes`), so a port is judged once it has
//! been read twice.

use std::collections::BTreeMap;
use std::fmt;

use ibqos_mad::{Guid, VlArbBlock, VlArbEntry};
use ibqos_perfmgr::lanes::{Lane, LaneDatabase};
use ibqos_qos::Priority;
use ibqos_qos::promise::{Arbitration, DATA_VLS, LaneOffer, backlogged, promised_shares};
use serde::{Serialize, Serializer};

use crate::engine::subnet::PortKey;
use crate::engine::sweep::Sweep;
use crate::engine::write::{TableBlock, TableModifier};

/// Bytes in a word of the data counters.
const WORD_BYTES: f64 = 4.0;

/// Bytes in a 64-byte block, the unit of XmitWait's tick on the emulated fabric.
const BLOCK_BYTES: f64 = 64.0;

/// What the SM programmed and verified on one output port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Promise {
    high: Vec<VlArbEntry>,
    low: Vec<VlArbEntry>,
    high_limit: u8,
    /// The far end of the port's link, whose PMA counts what the port sent.
    peer: Option<PortKey>,
    /// The node's description, for people.
    name: String,
}

/// The VL arbitration every port was verified to hold after the last sweep that programmed
/// QoS, by port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Promises {
    ports: BTreeMap<PortKey, Promise>,
}

impl Promises {
    /// The VLArb tables `sweep` verified (or found held) and the VLHighLimit each port holds
    /// after it, entries past the port's table capacity left out.
    pub fn from_sweep(sweep: &Sweep) -> Promises {
        let subnet = sweep.subnet();
        let mut ports: BTreeMap<PortKey, Promise> = BTreeMap::new();
        for write in sweep.verified_qos() {
            let (TableBlock::VlArb(table), TableModifier::VlArb(modifier)) =
                (&write.block, write.modifier)
            else {
                continue;
            };
            for &key in write.ports.iter() {
                let promise = ports.entry(key).or_default();
                let entries = match modifier.block.priority() {
                    Priority::High => &mut promise.high,
                    Priority::Low => &mut promise.low,
                };
                let second = modifier.block == VlArbBlock::of(modifier.block.priority())[1];
                let offset = usize::from(second) * VlArbBlock::ENTRIES;
                if entries.len() < offset + VlArbBlock::ENTRIES {
                    entries.resize(offset + VlArbBlock::ENTRIES, VlArbEntry::default());
                }
                entries[offset..offset + VlArbBlock::ENTRIES].copy_from_slice(&table.entries);
            }
        }
        ports.retain(|&key, promise| {
            let Some(port) = subnet.port(key) else {
                return false;
            };
            promise
                .high
                .truncate(usize::from(port.info.vl_arbitration_high_cap));
            promise
                .low
                .truncate(usize::from(port.info.vl_arbitration_low_cap));
            promise.high_limit = port.info.vl_high_limit;
            promise.peer = subnet.peer(key);
            promise.name = subnet
                .nodes
                .get(&key.node)
                .map_or_else(String::new, |node| node.description.clone());
            true
        });
        Promises { ports }
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }
}

/// Where a port stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every VL's share is within the tolerance of its promise.
    Conforms,
    /// Some VL's share is not.
    Outside,
    /// No VL was backlogged (or the port sent nothing): arbitration had nothing to decide.
    Idle,
    /// The PerfMgr has not read the counters twice (the port's PortVLXmitWaitCounters, or its
    /// peer's PortVLOpData and PortVLOpPackets), or the port has no peer.
    Unread,
}

/// One VL of a judged port.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VlShare {
    pub vl: u8,
    /// The share of the port's data (0 to 1) the VL got.
    pub measured: f64,
    /// The share its arbitration promises.
    pub promised: f64,
    pub backlogged: bool,
}

impl VlShare {
    /// How far the measured share is above the promise (below: negative).
    pub fn gap(&self) -> f64 {
        self.measured - self.promised
    }
}

/// One output port in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortShares {
    #[serde(serialize_with = "as_text")]
    pub node_guid: Guid,
    pub node: String,
    pub port: u8,
    pub verdict: Verdict,
    /// The VLs that sent data or were promised some, when the port was judged.
    pub vls: Vec<VlShare>,
}

impl PortShares {
    /// The VLs further from their promise than `tolerance`.
    pub fn outside(&self, tolerance: f64) -> impl Iterator<Item = &VlShare> {
        self.vls
            .iter()
            .filter(move |share| share.gap().abs() > tolerance)
    }
}

/// A GUID as it prints: `0x` and 16 hex digits.
fn as_text<S: Serializer>(guid: &Guid, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(guid)
}

/// The conformance of every port the SM programmed VL arbitration on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QosReport {
    /// How far a share may be from its promise, in percentage points.
    pub tolerance_points: u8,
    pub ports: Vec<PortShares>,
}

impl QosReport {
    /// The tolerance as a share (0 to 1).
    pub fn tolerance(&self) -> f64 {
        f64::from(self.tolerance_points) / 100.0
    }

    pub fn count(&self, verdict: Verdict) -> usize {
        self.ports
            .iter()
            .filter(|port| port.verdict == verdict)
            .count()
    }
}

/// For people: a count of ports by verdict, then each port outside the tolerance with why
/// (each VL that got more or less than promised) and its figures, then each conforming port's
/// figures. Idle and unread ports are only counted.
impl fmt::Display for QosReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "QoS conformance, tolerance {} points: {} outside, {} conforming, {} idle, {} unread",
            self.tolerance_points,
            self.count(Verdict::Outside),
            self.count(Verdict::Conforms),
            self.count(Verdict::Idle),
            self.count(Verdict::Unread),
        )?;
        for verdict in [Verdict::Outside, Verdict::Conforms] {
            for port in self.ports.iter().filter(|port| port.verdict == verdict) {
                write_port(f, port, self.tolerance())?;
            }
        }
        Ok(())
    }
}

fn write_port(f: &mut fmt::Formatter<'_>, port: &PortShares, tolerance: f64) -> fmt::Result {
    let verdict = match port.verdict {
        Verdict::Outside => "outside",
        _ => "conforms",
    };
    write!(
        f,
        "{} ({}) port {}: {verdict}",
        port.node, port.node_guid, port.port
    )?;
    for (index, share) in port.outside(tolerance).enumerate() {
        let (points, more) = (share.gap().abs() * 100.0, share.gap() > 0.0);
        write!(
            f,
            "{} VL {} got {:.1} points {} than promised",
            if index == 0 { ":" } else { ";" },
            share.vl,
            points,
            if more { "more" } else { "less" },
        )?;
    }
    writeln!(f)?;
    writeln!(f, "  VL  measured  promised  backlogged")?;
    for share in &port.vls {
        writeln!(
            f,
            "  {:>2}  {:>7.1}%  {:>7.1}%  {}",
            share.vl,
            share.measured * 100.0,
            share.promised * 100.0,
            if share.backlogged { "yes" } else { "no" },
        )?;
    }
    Ok(())
}

/// The report of every port in `promises`, from the PerfMgr's readings in `lanes`.
pub fn qos_report(promises: &Promises, lanes: &LaneDatabase, tolerance_points: u8) -> QosReport {
    let tolerance = f64::from(tolerance_points) / 100.0;
    let ports = promises
        .ports
        .iter()
        .map(|(&key, promise)| {
            let (verdict, vls) = match judge(key, promise, lanes) {
                Judged::Unread => (Verdict::Unread, Vec::new()),
                Judged::Idle => (Verdict::Idle, Vec::new()),
                Judged::Busy(vls) => {
                    let outside = vls.iter().any(|share| share.gap().abs() > tolerance);
                    let verdict = if outside {
                        Verdict::Outside
                    } else {
                        Verdict::Conforms
                    };
                    (verdict, vls)
                }
            };
            PortShares {
                node_guid: Guid(key.node),
                node: promise.name.clone(),
                port: key.port,
                verdict,
                vls,
            }
        })
        .collect();
    QosReport {
        tolerance_points,
        ports,
    }
}

enum Judged {
    Unread,
    Idle,
    Busy(Vec<VlShare>),
}

fn judge(key: PortKey, promise: &Promise, lanes: &LaneDatabase) -> Judged {
    let rate = |at: PortKey, lane: Lane| {
        let counters = lanes.get(at.node, at.port, lane)?;
        Some((counters.rate.as_ref()?, &counters.stopped))
    };
    let Some(peer) = promise.peer else {
        return Judged::Unread;
    };
    let (Some((data, _)), Some((packets, _)), Some((waits, stopped_waits))) = (
        rate(peer, Lane::VlOpData),
        rate(peer, Lane::VlOpPackets),
        rate(key, Lane::VlXmitWait),
    ) else {
        return Judged::Unread;
    };
    let at = |row: &[f64], vl: usize| row.get(vl).copied().unwrap_or(0.0);
    let bytes: [f64; DATA_VLS] = std::array::from_fn(|vl| at(data, vl) * WORD_BYTES);
    let port_blocks = bytes.iter().sum::<f64>() / BLOCK_BYTES;
    let offered: [LaneOffer; DATA_VLS] = std::array::from_fn(|vl| {
        // A wait counter that stopped at its largest value waited longer than it can say.
        let stopped = stopped_waits.get(vl).copied().unwrap_or(false);
        let wait = if stopped {
            f64::INFINITY
        } else {
            at(waits, vl)
        };
        LaneOffer {
            bytes: bytes[vl],
            packets: at(packets, vl),
            backlogged: backlogged(wait, bytes[vl] / BLOCK_BYTES, port_blocks),
        }
    });
    if !offered.iter().any(|lane| lane.backlogged) {
        return Judged::Idle;
    }
    let arbitration = Arbitration {
        high: &promise.high,
        low: &promise.low,
        high_limit: promise.high_limit,
    };
    let Some(promised) = promised_shares(&arbitration, &offered) else {
        return Judged::Idle;
    };
    let total: f64 = bytes.iter().sum();
    let vls = offered
        .iter()
        .zip(promised)
        .enumerate()
        .filter(|(_, (lane, promised))| lane.bytes > 0.0 || *promised > 0.0)
        .map(|(vl, (lane, promised))| VlShare {
            vl: vl as u8,
            measured: lane.bytes / total,
            promised,
            backlogged: lane.backlogged,
        })
        .collect();
    Judged::Busy(vls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON scripts read: its keys and how each value is written.
    #[test]
    fn the_json_shape_is_stable() {
        let report = QosReport {
            tolerance_points: 2,
            ports: vec![PortShares {
                node_guid: Guid(0x0002_c900_0000_1000),
                node: "sw-one".to_string(),
                port: 3,
                verdict: Verdict::Outside,
                vls: vec![VlShare {
                    vl: 0,
                    measured: 0.5,
                    promised: 0.75,
                    backlogged: true,
                }],
            }],
        };
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            r#"{"tolerance_points":2,"ports":[{"node_guid":"0x0002c90000001000","node":"sw-one","port":3,"verdict":"outside","vls":[{"vl":0,"measured":0.5,"promised":0.75,"backlogged":true}]}]}"#
        );
        let verdicts = [Verdict::Conforms, Verdict::Idle, Verdict::Unread];
        assert_eq!(
            serde_json::to_string(&verdicts).unwrap(),
            r#"["conforms","idle","unread"]"#
        );
    }
}
