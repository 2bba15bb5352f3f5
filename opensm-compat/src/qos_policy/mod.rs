//! qos-policy.conf read exactly as OpenSM 3.3.23 reads it: its scanner
//! (`opensm/osm_qos_parser_l.l`), its grammar and the checks of its grammar actions
//! (`opensm/osm_qos_parser_y.y`), with OpenSM's own error text and `line:col`; and written back
//! so that OpenSM parses it to the same [`QosPolicy`].
//!
//! What OpenSM accepts but does not do as written (unquoted names losing their blanks, an SL
//! above 15, path-bits, the qos-setup section...) becomes a located warning. What needs the
//! fabric (group members, the ipoib partition, the validation of `osm_qos_policy_validate`) is
//! [`QosPolicy::resolve`]'s; [`resolve_diagnostics`] reports its warnings alike.

mod lexer;
mod parser;
mod write;

use std::collections::BTreeMap;
use std::fmt;

use ibqos_qos::policy::setup::{ScopeId, SetupError};
use ibqos_qos::policy::{QosPolicy, ResolveError, ResolveWarning};
use ibqos_text::{Code, Diagnostic, Location};

pub use write::write;

/// OpenSM formats its message into a 256-byte buffer (`osm_qos_parser_y.y:2470`).
const OPENSM_MESSAGE_MAX: usize = 255;

/// OpenSM rejects the file: the message and position of its `yyerror`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// OpenSM's line (1-based).
    pub line: usize,
    /// OpenSM's column: 1 + the bytes its scanner consumed on the line, lookahead included.
    pub col: usize,
    /// OpenSM's message, without the final period.
    pub message: String,
    /// The token the parser stopped at.
    pub location: Location,
}

impl PolicyError {
    /// The line OpenSM prints on stderr.
    pub fn opensm_line(&self) -> String {
        format!(
            "Error in QoS Policy File (line {}:{}): {}.",
            self.line,
            self.col,
            truncate(&self.message, OPENSM_MESSAGE_MAX)
        )
    }

    /// The error as a diagnostic at the token.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(Code::PolicySyntax, self.opensm_line())
            .at(Some(self.location.clone()))
            .with_help("OpenSM drops the whole policy file")
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.opensm_line())
    }
}

impl std::error::Error for PolicyError {}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A policy file read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRead {
    pub policy: QosPolicy,
    /// Warnings for what OpenSM accepts but does not do as written, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// Where each qos-setup scope starts.
    pub setup_places: BTreeMap<ScopeId, Location>,
}

/// Reads `bytes`, a qos-policy.conf called `name`.
pub fn read(name: &str, bytes: &[u8]) -> Result<PolicyRead, PolicyError> {
    let mut parser = parser::Parser::new(name, bytes);
    parser.file()?;
    Ok(PolicyRead {
        policy: parser.policy,
        diagnostics: parser.diagnostics,
        setup_places: parser.setup_places,
    })
}

/// `policy` as a qos-policy.conf, with a warning if OpenSM would read back another policy (a
/// string holding a double quote, which qos-policy.conf cannot quote).
pub fn to_policy_conf(policy: &QosPolicy) -> (String, Vec<Diagnostic>) {
    let text = write(policy);
    let same = read("qos-policy.conf", text.as_bytes()).is_ok_and(|back| back.policy == *policy);
    let diagnostics = if same {
        Vec::new()
    } else {
        vec![Diagnostic::warning(
            Code::NotExpressible,
            "qos-policy.conf cannot say this policy exactly: a double quote inside a name or \
             description is left out",
        )]
    };
    (text, diagnostics)
}

/// [`QosPolicy::resolve`]'s warnings as diagnostics of the file `name`.
pub fn resolve_diagnostics(name: &str, warnings: &[ResolveWarning]) -> Vec<Diagnostic> {
    warnings
        .iter()
        .map(|w| {
            Diagnostic::warning(Code::PolicyUnresolved, w.to_string())
                .at(Some(Location::whole_file(name)))
        })
        .collect()
}

/// Why OpenSM drops the policy file `name` for this fabric ([`QosPolicy::resolve`]'s error),
/// as an error diagnostic.
pub fn resolve_error_diagnostic(name: &str, error: &ResolveError) -> Diagnostic {
    Diagnostic::error(Code::PolicyInvalid, error.to_string())
        .at(Some(Location::whole_file(name)))
        .with_help("OpenSM drops the whole policy file")
}

/// Why ibqos cannot program a policy's qos-setup ([`QosPolicy::check_setup`] or
/// [`ibqos_qos::policy::setup::CheckedSetup::apply`]), each at the scope it is about.
pub fn setup_diagnostics(
    errors: &[SetupError],
    places: &BTreeMap<ScopeId, Location>,
) -> Vec<Diagnostic> {
    errors
        .iter()
        .map(|error| {
            let mut d = Diagnostic::error(Code::PolicySetupInvalid, error.to_string())
                .at(places.get(&error.scope()).cloned());
            if let SetupError::Conflict { first, .. } = error
                && let Some(at) = places.get(first)
            {
                d = d.with_help(format!("{first} is at {}:{}:{}", at.file, at.line, at.col));
            }
            d
        })
        .collect()
}

#[cfg(test)]
mod tests;
