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

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use ibqos_fabric::{NodeId, PortRef, Topology};

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

/// What is wrong with a schedule's text, with the line and column where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleProblem {
    #[error("{0}")]
    Syntax(String),
    #[error("{line}:{column}: no node named `{node}`")]
    UnknownNode {
        node: String,
        line: usize,
        column: usize,
    },
    #[error("{line}:{column}: `{node}` has no port {port}")]
    NoSuchPort {
        node: String,
        port: u8,
        line: usize,
        column: usize,
    },
    #[error("{line}:{column}: port {port} of `{node}` has no link to flap")]
    Unlinked {
        node: String,
        port: u8,
        line: usize,
        column: usize,
    },
    #[error("{line}:{column}: up_ms {up_ms} is not after down_ms {down_ms}")]
    UpBeforeDown {
        down_ms: u64,
        up_ms: u64,
        line: usize,
        column: usize,
    },
    #[error("{line}:{column}: {ms} ms is more time than the emulator counts")]
    TooLate { ms: u64, line: usize, column: usize },
}

/// Why a schedule file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("cannot read the fault schedule {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{problem}")]
    Invalid {
        path: PathBuf,
        problem: ScheduleProblem,
    },
}

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
        let text = std::fs::read_to_string(path).map_err(|source| ScheduleError::Read {
            path: path.to_owned(),
            source,
        })?;
        FaultSchedule::parse(&text, topology).map_err(|problem| ScheduleError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    /// Parses a schedule's text and resolves its nodes and ports in `topology`.
    pub fn parse(text: &str, topology: &Topology) -> Result<FaultSchedule, ScheduleProblem> {
        let file: File = toml::from_str(text).map_err(|e| {
            // toml's message starts with its own position line; keep ours in the same shape.
            let at = e
                .span()
                .map(|s| position(text, s.start))
                .map_or(String::new(), |(l, c)| format!("{l}:{c}: "));
            ScheduleProblem::Syntax(format!("{at}{}", e.message()))
        })?;
        let node = |name: &Spanned<String>| {
            super::node_named(topology, name.get_ref()).ok_or_else(|| {
                let (line, column) = position(text, name.span().start);
                ScheduleProblem::UnknownNode {
                    node: name.get_ref().clone(),
                    line,
                    column,
                }
            })
        };
        let ns = |ms: &Spanned<u64>| {
            ms.get_ref().checked_mul(1_000_000).ok_or_else(|| {
                let (line, column) = position(text, ms.span().start);
                ScheduleProblem::TooLate {
                    ms: *ms.get_ref(),
                    line,
                    column,
                }
            })
        };
        let mut schedule = FaultSchedule::default();
        for entry in &file.flap {
            let port = PortRef::new(node(&entry.node)?, *entry.port.get_ref());
            let (line, column) = position(text, entry.port.span().start);
            let (name, number) = (entry.node.get_ref().clone(), *entry.port.get_ref());
            match topology.port(port) {
                None => {
                    return Err(ScheduleProblem::NoSuchPort {
                        node: name,
                        port: number,
                        line,
                        column,
                    });
                }
                Some(p) if p.peer.is_none() => {
                    return Err(ScheduleProblem::Unlinked {
                        node: name,
                        port: number,
                        line,
                        column,
                    });
                }
                Some(_) => {}
            }
            let down_ns = ns(&entry.down_ms)?;
            let up_ns = match &entry.up_ms {
                None => None,
                Some(up_ms) => {
                    let up_ns = ns(up_ms)?;
                    if up_ns <= down_ns {
                        let (line, column) = position(text, up_ms.span().start);
                        return Err(ScheduleProblem::UpBeforeDown {
                            down_ms: *entry.down_ms.get_ref(),
                            up_ms: *up_ms.get_ref(),
                            line,
                            column,
                        });
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

/// The 1-based line and column of byte `offset` of `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |n| before.len() - n - 1)
        + 1;
    (line, column)
}
