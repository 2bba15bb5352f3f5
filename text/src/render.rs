//! One diagnostic for people (drawn like a compiler's: the place, the line, a caret) and for
//! programs (JSON). `severity` is passed apart from the diagnostic because a run may change it
//! (`--strict` makes warnings errors).

use serde::Serialize;

use crate::{Code, Diagnostic, Location, Severity};

/// How much of a line is shown around the span: a 10 MB line must still render as one short
/// snippet, which is why this is drawn here rather than by a general snippet renderer (those
/// walk the whole line for every diagnostic on it).
const CONTEXT_CHARS: usize = 60;

/// One diagnostic the way rustc draws one:
///
/// ```text
/// warning[vl-mod-15]: VL 15 is taken mod 15 and becomes VL 0
///  --> opensm.conf:3:16
///   |
/// 3 | qos_vlarb_high 15:10
///   |                ^^
///   = help: ...
/// ```
///
/// A location without a line (a file that cannot be read) shows only ` --> file`.
pub fn human(diagnostic: &Diagnostic, severity: Severity) -> String {
    let mut out = format!("{severity}[{}]: {}\n", diagnostic.code, diagnostic.message);
    match &diagnostic.location {
        Some(location) if location.has_line() => {
            let number = location.line.to_string();
            let gutter = " ".repeat(number.len());
            let (text, caret_at, caret_len) = excerpt(location);
            out.push_str(&format!("{gutter}--> {location}\n"));
            out.push_str(&format!("{gutter} |\n{number} | {text}\n"));
            out.push_str(&format!(
                "{gutter} | {}{}\n",
                " ".repeat(caret_at),
                "^".repeat(caret_len)
            ));
        }
        Some(location) => out.push_str(&format!(" --> {location}\n")),
        None => {}
    }
    if let Some(help) = &diagnostic.help {
        out.push_str(&format!("  = help: {help}\n"));
    }
    out
}

/// The part of the line to show, and where in it (in characters) the caret starts and how long
/// it is. Columns count bytes; the shown text counts characters, so both are converted.
fn excerpt(location: &Location) -> (String, usize, usize) {
    let line = &*location.line_text;
    let start = floor_char_boundary(line, location.col.saturating_sub(1));
    let end = floor_char_boundary(line, start.saturating_add(location.len.max(1)));
    let before: Vec<char> = line[..start].chars().collect();
    let span_chars = line[start..end].chars().count().max(1);
    let skipped = before.len().saturating_sub(CONTEXT_CHARS);
    let mut text: String = before[skipped..].iter().collect();
    let mut caret_at = before.len() - skipped;
    if skipped > 0 {
        text.insert_str(0, "...");
        caret_at += 3;
    }
    let rest = &line[start..];
    let shown: String = rest.chars().take(span_chars + CONTEXT_CHARS).collect();
    let truncated = shown.len() < rest.len();
    text.push_str(&shown);
    if truncated {
        text.push_str("...");
    }
    // A tab would move the text but not the caret line; show it as one space.
    (
        text.replace('\t', " "),
        caret_at,
        span_chars.min(CONTEXT_CHARS * 2),
    )
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A diagnostic as one JSON object (fields in name order, as a JSON map keeps them).
#[derive(Debug, Serialize)]
pub struct Json<'a> {
    pub code: Code,
    /// 1-based, in bytes; null without a line.
    pub col: Option<usize>,
    pub file: Option<&'a str>,
    pub help: Option<&'a str>,
    pub line: Option<usize>,
    pub message: &'a str,
    pub severity: String,
}

/// The JSON form of `diagnostic`, with `severity` as this run counts it.
pub fn json(diagnostic: &Diagnostic, severity: Severity) -> Json<'_> {
    let location = diagnostic.location.as_ref();
    let line = location.filter(|l| l.has_line());
    Json {
        code: diagnostic.code,
        col: line.map(|l| l.col),
        file: location.map(|l| l.file.as_str()),
        help: diagnostic.help.as_deref(),
        line: line.map(|l| l.line),
        message: &diagnostic.message,
        severity: severity.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn at(line_text: &str, col: usize, len: usize) -> Diagnostic {
        let mut d = Diagnostic::warning(Code::VlMod15, "VL 15 is taken mod 15");
        d.location = Some(Location {
            file: "opensm.conf".into(),
            line: 12,
            col,
            len,
            line_text: Arc::from(line_text),
        });
        d.with_help("write 0 for VL0")
    }

    #[test]
    fn renders_like_a_compiler() {
        let text = human(&at("qos_vlarb_high 15:10", 16, 2), Severity::Warning);
        assert_eq!(
            text,
            "warning[vl-mod-15]: VL 15 is taken mod 15\n  --> opensm.conf:12:16\n   |\n\
             12 | qos_vlarb_high 15:10\n   |                ^^\n  = help: write 0 for VL0\n"
        );
    }

    #[test]
    fn a_whole_file_has_no_snippet() {
        let d = Diagnostic::error(Code::UnreadableFile, "cannot read x.net")
            .at(Some(Location::whole_file("x.net")));
        assert_eq!(
            human(&d, Severity::Error),
            "error[unreadable-file]: cannot read x.net\n --> x.net\n"
        );
        let j = json(&d, Severity::Error);
        assert_eq!((j.file, j.line, j.col), (Some("x.net"), None, None));
    }

    #[test]
    fn long_lines_are_cut_around_the_span() {
        let line = format!("{}X{}", "a".repeat(1_000_000), "b".repeat(1_000_000));
        let text = human(&at(&line, 1_000_001, 1), Severity::Warning);
        assert!(text.len() < 600, "{}", text.len());
        let lines: Vec<&str> = text.lines().collect();
        let x = lines[3].find('X').unwrap();
        assert_eq!(lines[4].find('^'), Some(x), "caret under the span:\n{text}");
        assert!(
            lines[3].starts_with("12 | ...") && lines[3].ends_with("..."),
            "{text}"
        );
    }

    #[test]
    fn caret_counts_characters_not_bytes() {
        let text = human(&at("qos_sl2vl \"é\",\t9", 17, 1), Severity::Warning);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3].chars().position(|c| c == '9'),
            lines[4].chars().position(|c| c == '^')
        );
    }

    #[test]
    fn json_takes_the_run_severity() {
        let d = at("qos_vlarb_high 15:10", 16, 2);
        let j = json(&d, Severity::Error);
        assert_eq!((j.code, j.severity.as_str()), (Code::VlMod15, "error"));
        assert_eq!(
            (j.line, j.col, j.help),
            (Some(12), Some(16), Some("write 0 for VL0"))
        );
    }
}
