//! Showing configuration diagnostics to people (like a compiler: file:line:col, the line, a
//! caret) and to programs (JSON).

use ibqos_opensm::{Diagnostic, Location, Severity};
use serde_json::{Value, json};

/// Diagnostics from one or more files, with `--strict` applied.
#[derive(Debug)]
pub struct Report {
    diagnostics: Vec<Diagnostic>,
    strict: bool,
}

impl Report {
    pub fn new(strict: bool) -> Report {
        Report {
            diagnostics: Vec::new(),
            strict,
        }
    }

    pub fn extend(&mut self, diagnostics: impl IntoIterator<Item = Diagnostic>) {
        self.diagnostics.extend(diagnostics);
    }

    /// The severity a diagnostic has in this run: `--strict` makes warnings errors.
    fn severity(&self, diagnostic: &Diagnostic) -> Severity {
        match diagnostic.severity {
            Severity::Warning if self.strict => Severity::Error,
            other => other,
        }
    }

    pub fn error_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| self.severity(d) == Severity::Error)
            .count()
    }

    pub fn warning_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| self.severity(d) == Severity::Warning)
            .count()
    }

    /// Every diagnostic rendered for a terminal (notes only with `include_notes`), then a
    /// one-line total.
    pub fn render_human(&self, include_notes: bool) -> String {
        let mut out = String::new();
        let shown = self
            .diagnostics
            .iter()
            .filter(|d| include_notes || self.severity(d) != Severity::Note);
        for diagnostic in shown {
            out.push_str(&render_one(diagnostic, self.severity(diagnostic)));
            out.push('\n');
        }
        let (errors, warnings) = (self.error_count(), self.warning_count());
        if errors + warnings > 0 {
            out.push_str(&format!("{errors} error(s), {warnings} warning(s)\n"));
        }
        out
    }

    /// Every diagnostic as a JSON object.
    pub fn to_json(&self) -> Vec<Value> {
        self.diagnostics
            .iter()
            .map(|d| diagnostic_json(d, self.severity(d)))
            .collect()
    }
}

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
fn render_one(diagnostic: &Diagnostic, severity: Severity) -> String {
    let mut out = format!("{severity}[{}]: {}\n", diagnostic.code, diagnostic.message);
    if let Some(location) = &diagnostic.location {
        let number = location.line.to_string();
        let gutter = " ".repeat(number.len());
        let (text, caret_at, caret_len) = excerpt(location);
        out.push_str(&format!(
            "{gutter}--> {}:{}:{}\n",
            location.file, location.line, location.col
        ));
        out.push_str(&format!("{gutter} |\n{number} | {text}\n"));
        out.push_str(&format!(
            "{gutter} | {}{}\n",
            " ".repeat(caret_at),
            "^".repeat(caret_len)
        ));
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

fn diagnostic_json(diagnostic: &Diagnostic, severity: Severity) -> Value {
    let location = diagnostic.location.as_ref();
    json!({
        "severity": severity.to_string(),
        "code": diagnostic.code,
        "message": diagnostic.message,
        "help": diagnostic.help,
        "file": location.map(|l| l.file.as_str()),
        "line": location.map(|l| l.line),
        "col": location.map(|l| l.col),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn at(line_text: &str, col: usize, len: usize) -> Diagnostic {
        let mut d = Diagnostic::warning("vl-mod-15", "VL 15 is taken mod 15");
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
        let text = render_one(&at("qos_vlarb_high 15:10", 16, 2), Severity::Warning);
        assert_eq!(
            text,
            "warning[vl-mod-15]: VL 15 is taken mod 15\n  --> opensm.conf:12:16\n   |\n\
             12 | qos_vlarb_high 15:10\n   |                ^^\n  = help: write 0 for VL0\n"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_span() {
        let line = format!("{}X{}", "a".repeat(1_000_000), "b".repeat(1_000_000));
        let text = render_one(&at(&line, 1_000_001, 1), Severity::Warning);
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
        let text = render_one(&at("qos_sl2vl \"é\",\t9", 17, 1), Severity::Warning);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3].chars().position(|c| c == '9'),
            lines[4].chars().position(|c| c == '^')
        );
    }
}
