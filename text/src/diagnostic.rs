//! Diagnostics: what a reader or a conversion has to say about one place in a file.

use std::collections::BTreeMap;
use std::fmt;

use crate::{Code, Location};

/// How bad a finding is. `--strict` turns warnings into errors; the library only classifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Informational: nothing was lost, but the reader has something worth knowing.
    Note,
    /// The file's own program (OpenSM, ibsim) or a conversion silently changed what was
    /// written.
    Warning,
    /// The value could not be used at all (OpenSM kept the previous value or ignored the line),
    /// or the file is unusable.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One finding, with a stable [`Code`] (tests and scripts match on its name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    /// One line.
    pub message: String,
    pub help: Option<String>,
    pub location: Option<Location>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            help: None,
            location: None,
        }
    }

    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    pub fn note(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Note, code, message)
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn at(mut self, location: Option<Location>) -> Diagnostic {
        self.location = location;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// `file:line:col: severity[code]: message`, or `severity[code]: message` without a location.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        write!(f, "{}[{}]: {}", self.severity, self.code, self.message)
    }
}

/// Sorts diagnostics into reading order (by line, then column; those without a location last),
/// keeping the order of those at the same place.
pub fn sort_in_reading_order(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| {
        d.location
            .as_ref()
            .map_or((usize::MAX, 0), |l| (l.line, l.col))
    });
}

/// At most this many diagnostics of one code are kept; the rest are counted in one note.
pub const MAX_PER_CODE: usize = 100;

/// Keeps the first [`MAX_PER_CODE`] diagnostics of each code and summarises the rest, so a file
/// of binary garbage or a 10 MB line yields a readable report instead of thousands of lines.
pub fn cap_per_code(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen: BTreeMap<Code, usize> = BTreeMap::new();
    let mut kept = Vec::with_capacity(diagnostics.len().min(4096));
    for d in diagnostics {
        let count = seen.entry(d.code).or_default();
        *count += 1;
        if *count <= MAX_PER_CODE {
            kept.push(d);
        }
    }
    for (code, count) in seen {
        if count > MAX_PER_CODE {
            kept.push(Diagnostic::note(
                Code::TooManyDiagnostics,
                format!(
                    "{} more [{code}] diagnostics not shown",
                    count - MAX_PER_CODE
                ),
            ));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceLine;
    use std::sync::Arc;

    #[test]
    fn display_format() {
        let line = SourceLine {
            file: Arc::from("x.conf"),
            number: 3,
            text: Arc::from("qos true"),
        };
        let d = Diagnostic::warning(Code::NotTrue, "read as FALSE").at(Some(line.span(4, 4)));
        assert_eq!(
            d.to_string(),
            "x.conf:3:5: warning[not-true]: read as FALSE"
        );
        assert_eq!(
            Diagnostic::note(Code::EmptyFile, "m").to_string(),
            "note[empty-file]: m",
            "no location, no prefix"
        );
    }

    #[test]
    fn caps_each_code_and_counts_the_rest_in_name_order() {
        let many = |code, n| (0..n).map(move |_| Diagnostic::warning(code, "x"));
        let all: Vec<Diagnostic> = many(Code::UnknownKey, MAX_PER_CODE + 2)
            .chain(many(Code::NulByte, MAX_PER_CODE + 1))
            .chain(many(Code::NotTrue, 3))
            .collect();
        let kept = cap_per_code(all);
        assert_eq!(kept.len(), 2 * MAX_PER_CODE + 3 + 2);
        let notes: Vec<&str> = kept[kept.len() - 2..]
            .iter()
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            notes,
            [
                "1 more [nul-byte] diagnostics not shown",
                "2 more [unknown-key] diagnostics not shown"
            ]
        );
    }
}
