//! Where in a file: a span of one line, with the line's text for a snippet.

use std::fmt;
use std::sync::Arc;

use crate::{Code, Diagnostic, Severity};

/// A span in one physical line of a file, or (line 0) the file as a whole.
///
/// `col` and `len` count bytes of the file. `line_text` keeps every byte offset of the line:
/// valid UTF-8 is kept as is, and every byte that is not printable text (invalid UTF-8, NUL,
/// CR and the other control characters except tab) becomes one `?`. So `line_text[col - 1..]`
/// starts exactly at the span, whatever the line held. The text is shared between all the
/// diagnostics of one line, which keeps a 10 MB line from being copied once per diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    /// 1-based line number (physical lines, counted by `\n`); 0 for the file as a whole.
    pub line: usize,
    /// 1-based column, in bytes.
    pub col: usize,
    /// Bytes underlined, at least 1.
    pub len: usize,
    /// The physical line, without its line ending.
    pub line_text: Arc<str>,
}

impl Location {
    /// The file as a whole, for what has no line (a file that cannot be read).
    pub fn whole_file(file: impl Into<String>) -> Location {
        Location {
            file: file.into(),
            line: 0,
            col: 0,
            len: 0,
            line_text: Arc::from(""),
        }
    }

    /// Whether this is a span of a line (not [`Location::whole_file`]).
    pub fn has_line(&self) -> bool {
        self.line > 0
    }

    /// The whole of line `number` (1-based), whose text is `text`.
    pub fn whole_line(file: impl Into<String>, number: usize, text: &[u8]) -> Location {
        Location {
            file: file.into(),
            line: number,
            col: 1,
            len: text.len().max(1),
            line_text: Arc::from(display_text(text)),
        }
    }

    /// The location of byte range `start..end` of a whole source (a TOML span, a byte offset);
    /// the span is cut at the end of its line.
    pub fn in_source(file: &str, source: &[u8], start: usize, end: usize) -> Location {
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
}

impl fmt::Display for Location {
    /// `file:line:col`, or `file` for the file as a whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.has_line() {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)
        } else {
            f.write_str(&self.file)
        }
    }
}

/// One physical line of a source, shared by all the locations in it.
#[derive(Debug, Clone)]
pub struct SourceLine {
    pub file: Arc<str>,
    /// 1-based.
    pub number: usize,
    /// The line as [`display_text`] shows it.
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

    /// The whole line.
    pub fn whole(&self) -> Location {
        self.span(0, self.text.len())
    }
}

/// A reader's own error or note (a typed kind its tests match on) with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// Boxed: a reader's `Result` stays small on the path where nothing is wrong.
    pub location: Box<Location>,
    pub what: T,
}

impl<T> Located<T> {
    pub fn new(location: Location, what: T) -> Located<T> {
        Located {
            location: Box::new(location),
            what,
        }
    }
}

/// A reader's kind of error or note: its message is its `Display`.
pub trait Coded: fmt::Display {
    fn code(&self) -> Code;
    fn severity(&self) -> Severity;
}

impl<T: Coded> Located<T> {
    /// The diagnostic that reports this, for [`crate::render`].
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::new(
            self.what.severity(),
            self.what.code(),
            self.what.to_string(),
        )
        .at(Some(Location::clone(&self.location)))
    }
}

impl<T: fmt::Display> fmt::Display for Located<T> {
    /// `file:line:col: what`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.what)
    }
}

impl<T: fmt::Display + fmt::Debug> std::error::Error for Located<T> {}

/// Bytes as text with the same byte offsets: each byte of invalid UTF-8 becomes one `?`.
pub fn source_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(std::iter::repeat_n('?', chunk.invalid().len()));
    }
    out
}

/// Text for people from bytes that may be anything, one output byte per input byte wherever the
/// input is not printable UTF-8 (see [`Location`]).
pub fn display_text(bytes: &[u8]) -> String {
    source_text(bytes)
        .chars()
        .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
        .collect()
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
    fn in_source_finds_line_and_column() {
        let text = b"a = 1\r\nbb = 22\n";
        let loc = Location::in_source("f.toml", text, 12, 14);
        assert_eq!((loc.line, loc.col, loc.len), (2, 6, 2));
        assert_eq!(&*loc.line_text, "bb = 22");
        let end = Location::in_source("f.toml", text, 99, 99);
        assert_eq!(
            (end.line, end.col, end.len),
            (3, 1, 1),
            "past the end: the last line"
        );
    }

    #[test]
    fn located_shows_file_line_and_column() {
        let line = SourceLine {
            file: Arc::from("x.net"),
            number: 3,
            text: Arc::from("Ca 1 \"H\""),
        };
        let located = Located::new(line.whole(), "bad");
        assert_eq!(located.to_string(), "x.net:3:1: bad");
        assert_eq!(located.location.len, 8);
        let whole = Located::new(Location::whole_file("x.net"), "cannot read");
        assert_eq!(whole.to_string(), "x.net: cannot read");
    }
}
