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
//! ```
//!
//! Times count from the emulator's time 0 (for `ibqos sm`, when the fabric was opened). A node
//! is named as in the net file or by its NodeDescription.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use ibqos_fabric::{NodeId, PortRef, Topology};
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

/// Link flaps and dead nodes, resolved against a topology.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSchedule {
    pub flaps: Vec<Flap>,
    /// Nodes whose SMA answers nothing and forwards no directed-route SMP.
    pub dead: Vec<NodeId>,
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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlapEntry {
    node: Spanned<String>,
    port: Spanned<u8>,
    down_ms: Spanned<u64>,
    up_ms: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadEntry {
    node: Spanned<String>,
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
        Ok(schedule)
    }
}
