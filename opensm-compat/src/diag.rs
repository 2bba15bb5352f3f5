//! Diagnostics: what a reader or a conversion has to say about one place in a file.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// How bad a finding is. `--strict` turns warnings into errors; the library only classifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Informational: nothing was lost, but the reader has something worth knowing.
    Note,
    /// OpenSM (or a conversion) silently changed what the administrator wrote.
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

/// A span in one physical line of a file.
///
/// `col` and `len` count bytes of the file. `line_text` keeps every byte offset of the line:
/// valid UTF-8 is kept as is, and every byte that is not printable text (invalid UTF-8, NUL,
/// CR and the other control characters except tab) becomes one `?`. So `line_text[col - 1..]`
/// starts exactly at the span, whatever the line held. The text is shared between all the
/// diagnostics of one line, which keeps a 10 MB line from being copied once per diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    /// 1-based line number (physical lines, counted by `\n`).
    pub line: usize,
    /// 1-based column, in bytes.
    pub col: usize,
    /// Bytes underlined, at least 1.
    pub len: usize,
    /// The physical line, without its line ending.
    pub line_text: Arc<str>,
}

/// One finding, with a stable kebab-case `code` (tests and scripts match on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    /// One line.
    pub message: String,
    pub help: Option<String>,
    pub location: Option<Location>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            help: None,
            location: None,
        }
    }

    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    pub fn note(code: &'static str, message: impl Into<String>) -> Diagnostic {
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
            write!(f, "{}:{}:{}: ", loc.file, loc.line, loc.col)?;
        }
        write!(f, "{}[{}]: {}", self.severity, self.code, self.message)
    }
}

/// Bytes as text with the same byte offsets: each byte of invalid UTF-8 becomes one `?`.
pub(crate) fn source_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(std::iter::repeat_n('?', chunk.invalid().len()));
    }
    out
}

/// Text for people from bytes that may be anything, one output byte per input byte wherever the
/// input is not printable UTF-8 (see [`Location`]).
pub(crate) fn display_text(bytes: &[u8]) -> String {
    source_text(bytes)
        .chars()
        .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
        .collect()
}

/// One physical line of a source, shared by all the locations in it.
#[derive(Debug, Clone)]
pub(crate) struct SourceLine {
    pub file: Arc<str>,
    /// 1-based.
    pub number: usize,
    pub text: Arc<str>,
}

impl SourceLine {
    /// The span of `len` bytes starting at byte `offset` (0-based) of the line.
    pub fn span(&self, offset: usize, len: usize) -> Location {
        Location {
            file: self.file.to_string(),
            line: self.number,
            col: offset + 1,
            len: len.max(1),
            line_text: Arc::clone(&self.text),
        }
    }
}

/// The location of byte range `start..end` of a whole source (a TOML span, a byte offset).
pub(crate) fn span_in_source(file: &str, source: &[u8], start: usize, end: usize) -> Location {
    let start = start.min(source.len());
    let line_start = source[..start]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let line_end = source[start..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(source.len(), |i| start + i);
    let line_bytes = &source[line_start..line_end];
    let line_bytes = line_bytes.strip_suffix(b"\r").unwrap_or(line_bytes);
    let line = source[..start].iter().filter(|b| **b == b'\n').count() + 1;
    Location {
        file: file.to_string(),
        line,
        col: start - line_start + 1,
        len: end.min(line_end).saturating_sub(start).max(1),
        line_text: Arc::from(display_text(line_bytes)),
    }
}

/// At most this many diagnostics of one code are kept; the rest are counted in one note.
pub const MAX_PER_CODE: usize = 100;

/// Keeps the first [`MAX_PER_CODE`] diagnostics of each code and summarises the rest, so a file
/// of binary garbage or a 10 MB line yields a readable report instead of thousands of lines.
pub(crate) fn cap_per_code(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
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
                "too-many-diagnostics",
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

    #[test]
    fn display_text_keeps_byte_offsets() {
        let bytes = b"a\xffb\x00c\r\t\xc3\xa9";
        let text = display_text(bytes);
        assert_eq!(text, "a?b?c?\t\u{e9}");
        assert_eq!(text.len(), bytes.len());
    }

    #[test]
    fn display_format() {
        let line = SourceLine {
            file: Arc::from("x.conf"),
            number: 3,
            text: Arc::from("qos true"),
        };
        let d = Diagnostic::warning("not-true", "read as FALSE").at(Some(line.span(4, 4)));
        assert_eq!(
            d.to_string(),
            "x.conf:3:5: warning[not-true]: read as FALSE"
        );
        assert_eq!(
            Diagnostic::note("n", "m").to_string(),
            "note[n]: m",
            "no location, no prefix"
        );
    }

    #[test]
    fn span_in_source_finds_line_and_column() {
        let text = b"a = 1\r\nbb = 22\n";
        let loc = span_in_source("f.toml", text, 12, 14);
        assert_eq!((loc.line, loc.col, loc.len), (2, 6, 2));
        assert_eq!(&*loc.line_text, "bb = 22");
    }
}
