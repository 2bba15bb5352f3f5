//! Scheduled faults of an emulated fabric, read from a small TOML file:
//!
//! ```toml
//! [[flap]]          # at 5 ms port 3 of S1 loses its link; at 50 ms the link trains again
//! node = "S1"
//! port = 3
//! down_ms = 5
//! up_ms = 50        # optional: without it the link stays down
//!
//! [[dead]]          # H3's SMA answers nothing (its links still train)
//! node = "H3"
//!
//! [[vlarb]]         # at 20 ms port 3 of S1 holds these tables, as if another agent Set them
//! node = "S1"
//! port = 3
//! at_ms = 20
//! low = [{ vl = 0, weight = 32 }, { vl = 1, weight = 96 }]   # the rest of the table 0:0
//! high = []         # optional, as low: a table left out stays as it is
//!
//! [[without_cc]]    # S2 has no congestion control agent: every CC MAD is answered with
//! node = "S2"       # status 0x0008, as ibsim's switches answer a SwitchCongestionSetting Set
//! ```
//!
//! Times count from the emulator's time 0 (for `ibqos sm`, when the fabric was opened). A node
//! is named as in the net file or by its NodeDescription.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_qos::{VLARB_TABLE_ENTRIES, VlArbEntry, VlArbTable};
use ibqos_text::{Code, Coded, Located, Severity};

use crate::input::{self, InputError};

/// A link that goes down at `down_ns` and, if `up_ns` is given, trains again then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flap {
    /// Either end of the link.
    pub port: PortRef,
    pub down_ns: u64,
    pub up_ns: Option<u64>,
}

/// VL arbitration tables a port holds from `at_ns` on, as if an agent other than the SM had
/// Set them: a table left `None` stays as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlArbRewrite {
    pub port: PortRef,
    pub at_ns: u64,
    pub high: Option<VlArbTable>,
    pub low: Option<VlArbTable>,
}

/// Link flaps, dead nodes and VLArb tables rewritten, resolved against a topology.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSchedule {
    pub flaps: Vec<Flap>,
    /// Nodes whose SMA answers nothing and forwards no directed-route SMP.
    pub dead: Vec<NodeId>,
    pub vlarbs: Vec<VlArbRewrite>,
    /// Nodes without a congestion control agent: every CC MAD they get is answered with status
    /// 0x0008 (method unsupported).
    pub without_cc: Vec<NodeId>,
}

/// What is wrong with a schedule's text (its place is the [`Located`] around it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleProblem {
    #[error("{0}")]
    Syntax(String),
    #[error("no node named `{node}`")]
    UnknownNode { node: String },
    #[error("`{node}` has no port {port}")]
    NoSuchPort { node: String, port: u8 },
    #[error("port {port} of `{node}` has no link to flap")]
    Unlinked { node: String, port: u8 },
    #[error("up_ms {up_ms} is not after down_ms {down_ms}")]
    UpBeforeDown { down_ms: u64, up_ms: u64 },
    #[error("{ms} ms is more time than the emulator counts")]
    TooLate { ms: u64 },
    #[error("VL {vl} is not a VL: 0-15")]
    VlOutOfRange { vl: u8 },
    #[error("{entries} entries: a VLArb table has at most {VLARB_TABLE_ENTRIES}")]
    TableTooLarge { entries: usize },
    #[error("a [[vlarb]] rewrite names no table: give low, high or both")]
    NoTable,
}

impl Coded for ScheduleProblem {
    fn code(&self) -> Code {
        match self {
            ScheduleProblem::Syntax(_) => Code::InvalidToml,
            ScheduleProblem::UnknownNode { .. } => Code::UnknownNode,
            ScheduleProblem::NoSuchPort { .. } => Code::NoSuchPort,
            ScheduleProblem::Unlinked { .. } => Code::UnlinkedPort,
            ScheduleProblem::UpBeforeDown { .. } => Code::UpBeforeDown,
            ScheduleProblem::TooLate { .. } => Code::TimeOverflow,
            ScheduleProblem::VlOutOfRange { .. } => Code::VlOutOfRange,
            ScheduleProblem::TableTooLarge { .. } => Code::TableTooLarge,
            ScheduleProblem::NoTable => Code::NoTable,
        }
    }

    fn severity(&self) -> Severity {
        Severity::Error
    }
}

/// Why a schedule file cannot be used.
pub type ScheduleError = InputError<ScheduleProblem>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    flap: Vec<FlapEntry>,
    #[serde(default)]
    dead: Vec<DeadEntry>,
    #[serde(default)]
    vlarb: Vec<VlArbEntryList>,
    #[serde(default)]
    without_cc: Vec<DeadEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlapEntry {
    node: Spanned<String>,
    port: Spanned<u8>,
    down_ms: Spanned<u64>,
    up_ms: Option<Spanned<u64>>,
}

/// An entry that names a node: `[[dead]]`, `[[without_cc]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadEntry {
    node: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VlArbEntryList {
    node: Spanned<String>,
    port: Spanned<u8>,
    at_ms: Spanned<u64>,
    high: Option<Spanned<Vec<Spanned<TableEntry>>>>,
    low: Option<Spanned<Vec<Spanned<TableEntry>>>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableEntry {
    vl: u8,
    weight: u8,
}

impl FaultSchedule {
    /// Reads a schedule file; errors name the file, line and column.
    pub fn load(path: &Path, topology: &Topology) -> Result<FaultSchedule, ScheduleError> {
        input::load("fault schedule", path, |file, text| {
            FaultSchedule::parse(file, text, topology)
        })
    }

    /// Parses a schedule's text (`file` names it in errors) and resolves its nodes and ports in
    /// `topology`.
    pub fn parse(
        file: &str,
        text: &str,
        topology: &Topology,
    ) -> Result<FaultSchedule, Located<ScheduleProblem>> {
        let source = input::Source { file, text };
        let at = |span, problem| source.at(span, problem);
        let file: File = source.toml(ScheduleProblem::Syntax)?;
        let node = |name: &Spanned<String>| {
            source.node(topology, name, |node| ScheduleProblem::UnknownNode { node })
        };
        let ns = |ms: &Spanned<u64>| {
            ms.get_ref()
                .checked_mul(1_000_000)
                .ok_or_else(|| at(ms.span(), ScheduleProblem::TooLate { ms: *ms.get_ref() }))
        };
        let mut schedule = FaultSchedule::default();
        for entry in &file.flap {
            let port = PortRef::new(node(&entry.node)?, *entry.port.get_ref());
            let (node, number) = (entry.node.get_ref().clone(), *entry.port.get_ref());
            let problem = match topology.port(port) {
                None => Some(ScheduleProblem::NoSuchPort { node, port: number }),
                Some(p) if p.peer.is_none() => {
                    Some(ScheduleProblem::Unlinked { node, port: number })
                }
                Some(_) => None,
            };
            if let Some(problem) = problem {
                return Err(at(entry.port.span(), problem));
            }
            let down_ns = ns(&entry.down_ms)?;
            let up_ns = match &entry.up_ms {
                None => None,
                Some(up_ms) => {
                    let up_ns = ns(up_ms)?;
                    if up_ns <= down_ns {
                        let problem = ScheduleProblem::UpBeforeDown {
                            down_ms: *entry.down_ms.get_ref(),
                            up_ms: *up_ms.get_ref(),
                        };
                        return Err(at(up_ms.span(), problem));
                    }
                    Some(up_ns)
                }
            };
            schedule.flaps.push(Flap {
                port,
                down_ns,
                up_ns,
            });
        }
        for entry in &file.dead {
            schedule.dead.push(node(&entry.node)?);
        }
        for entry in &file.without_cc {
            schedule.without_cc.push(node(&entry.node)?);
        }
        for entry in &file.vlarb {
            let port = PortRef::new(node(&entry.node)?, *entry.port.get_ref());
            if topology.port(port).is_none() {
                let (node, port) = (entry.node.get_ref().clone(), *entry.port.get_ref());
                return Err(at(
                    entry.port.span(),
                    ScheduleProblem::NoSuchPort { node, port },
                ));
            }
            let table = |list: &Option<Spanned<Vec<Spanned<TableEntry>>>>| {
                let Some(list) = list else {
                    return Ok(None);
                };
                let entries = list.get_ref();
                if entries.len() > VLARB_TABLE_ENTRIES {
                    let problem = ScheduleProblem::TableTooLarge {
                        entries: entries.len(),
                    };
                    return Err(at(list.span(), problem));
                }
                let mut table = Vec::with_capacity(entries.len());
                for entry in entries {
                    let TableEntry { vl, weight } = *entry.get_ref();
                    if vl > 15 {
                        return Err(at(entry.span(), ScheduleProblem::VlOutOfRange { vl }));
                    }
                    table.push(VlArbEntry::new(vl, weight));
                }
                Ok(Some(VlArbTable::from_entries(&table)))
            };
            let (high, low) = (table(&entry.high)?, table(&entry.low)?);
            if high.is_none() && low.is_none() {
                return Err(at(entry.node.span(), ScheduleProblem::NoTable));
            }
            schedule.vlarbs.push(VlArbRewrite {
                port,
                at_ns: ns(&entry.at_ms)?,
                high,
                low,
            });
        }
        Ok(schedule)
    }
}
