//! partitions.conf read exactly as OpenSM 3.3.23 reads it (`osm_prtn_config.c:216-853`,
//! `osm_prtn_make_partitions` in `osm_prtn.c:386-449`), with OpenSM's own messages and lines;
//! and written back so that OpenSM reads the same [`Partitions`].
//!
//! What OpenSM accepts but does not do as written (a prefix read as a keyword, a flag it
//! ignores, a value it skips or stores as 0, a group it does not create, a line it reads in
//! pieces) becomes a located warning. What makes OpenSM drop the file is a [`PartitionsError`]:
//! OpenSM then runs with [`Partitions::opensm_default`].

mod parser;
pub(crate) mod write;

use std::fmt;

use ibqos_qos::partitions::{Membership, Partitions};
use ibqos_text::{Code, Diagnostic, Location};

pub use write::write;

/// Why OpenSM drops a partitions.conf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// A `PARSE ERROR` (`osm_prtn_config.c:693-761`).
    Syntax,
    /// OpenSM crashes on the line.
    Crash,
    /// Nothing defined: OpenSM counts it as a failed parse (`osm_prtn_config.c:852`).
    Empty,
}

/// OpenSM does not use the file: what it says and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionsError {
    pub kind: Rejection,
    /// OpenSM's line (one per `fgets`: a line above 4094 bytes counts twice).
    pub line: usize,
    /// OpenSM's message, as it logs it.
    pub message: String,
    pub location: Location,
}

impl PartitionsError {
    /// The error as a diagnostic at the place OpenSM stopped.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let (code, severity_error) = match self.kind {
            Rejection::Syntax => (Code::PartitionsSyntax, true),
            Rejection::Crash => (Code::PartitionsCrash, true),
            Rejection::Empty => (Code::PartitionsEmpty, false),
        };
        let diagnostic = if severity_error {
            Diagnostic::error(code, self.message.clone())
        } else {
            Diagnostic::warning(code, "the file defines no partition")
        };
        let help = match self.kind {
            Rejection::Crash => "OpenSM stops with a segmentation fault",
            Rejection::Syntax | Rejection::Empty => {
                "OpenSM logs \"Partition configuration in error; retrying with default config\" \
                 and runs with the Default partition only (every port full, ipoib)"
            }
        };
        diagnostic.at(Some(self.location.clone())).with_help(help)
    }
}

impl fmt::Display for PartitionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for PartitionsError {}

/// A partitions.conf read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionsRead {
    pub partitions: Partitions,
    /// Where each definition's header is, one per partition.
    pub places: Vec<Location>,
    /// Warnings for what OpenSM accepts but does not do as written, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl PartitionsRead {
    /// What opensm.conf's options change in these definitions (`partition_create`,
    /// `partition_add_port`): an `sl=` is 0 unless `qos` is on, and a `both` membership is
    /// full unless `allow_both_pkeys` is on. One warning per definition, at its header.
    pub fn option_notes(&self, qos: bool, allow_both_pkeys: bool) -> Vec<Diagnostic> {
        let mut notes = Vec::new();
        for (partition, place) in self.partitions.partitions.iter().zip(&self.places) {
            let mut note = |message: String, help: &str| {
                notes.push(
                    Diagnostic::warning(Code::PartitionsOverridden, message)
                        .at(Some(place.clone()))
                        .with_help(help.to_string()),
                );
            };
            if partition.flags.sl != 0 && !qos {
                note(
                    format!(
                        "sl={} is 0: OpenSM overrides a partition's SL without QoS",
                        partition.flags.sl
                    ),
                    "set `qos TRUE` for the partition's SL to reach its PathRecords and groups",
                );
            }
            let both = partition
                .members
                .iter()
                .any(|m| m.membership == Membership::Both)
                || partition.default_membership == Membership::Both;
            if both && !allow_both_pkeys {
                note(
                    "`both` is a full membership: OpenSM gives a port both only with \
                     allow_both_pkeys"
                        .to_string(),
                    "set `allow_both_pkeys TRUE`, or write `full`",
                );
            }
        }
        notes
    }
}

/// Reads `bytes`, a partitions.conf called `name`.
pub fn read(name: &str, bytes: &[u8]) -> Result<PartitionsRead, PartitionsError> {
    let (partitions, places, diagnostics) = parser::parse(name, bytes)?;
    Ok(PartitionsRead {
        partitions,
        places,
        diagnostics,
    })
}

/// `partitions` as a partitions.conf, with a warning if OpenSM would read back something else
/// (a name holding `,` `:` `=` `;` `#` or a line break, a name that looks like a number...).
pub fn to_partitions_conf(partitions: &Partitions) -> (String, Vec<Diagnostic>) {
    let text = write(partitions);
    let back = read("partitions.conf", text.as_bytes());
    // An empty list reads back as an empty file, which OpenSM drops for its default.
    let same = back.is_ok_and(|back| back.partitions == *partitions);
    let diagnostics = if same {
        Vec::new()
    } else {
        vec![Diagnostic::warning(
            Code::NotExpressible,
            "partitions.conf cannot say these partitions exactly: a name with `,` `:` `=` `;` \
             `#`, blanks at its ends or a leading digit, no partition at all, or a group OpenSM \
             would not create as given, reads back otherwise",
        )]
    };
    (text, diagnostics)
}

#[cfg(test)]
mod tests;
