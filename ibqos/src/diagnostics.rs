//! One report of the diagnostics of every file a command read (opensm.conf, ibqos.toml, net
//! files, traffic files, fault schedules), drawn by [`ibqos_text::render`] so all read alike.

use ibqos_emu::InputError;
use ibqos_opensm::LoadError;
use ibqos_text::{Coded, Diagnostic, Located, Severity, render};
use serde_json::Value;

/// A file a command cannot use (a net file, a traffic file, a fault schedule, a qos-setup that
/// does not fit the fabric), as the command's error: `main` draws its diagnostics like those
/// of `ibqos check` rather than as one line.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct FileError(pub Vec<Diagnostic>);

impl FileError {
    pub fn render(&self) -> String {
        render_all(&self.0)
    }
}

fn render_all(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| render::human(d, d.severity))
        .collect()
}

impl<T: Coded> From<Located<T>> for FileError {
    fn from(located: Located<T>) -> FileError {
        FileError(vec![located.to_diagnostic()])
    }
}

impl<P: Coded + std::fmt::Debug> From<InputError<P>> for FileError {
    fn from(error: InputError<P>) -> FileError {
        FileError(vec![error.to_diagnostic()])
    }
}

/// A command's error as a person reads it: the diagnostics of a file it cannot use drawn like
/// those of `ibqos check`, anything else as one line.
pub fn render_error(error: &anyhow::Error) -> String {
    if let Some(file_error) = error.downcast_ref::<FileError>() {
        return file_error.render();
    }
    if let Some(LoadError::Invalid { diagnostics, .. }) = error.downcast_ref::<LoadError>() {
        return render_all(diagnostics);
    }
    format!("error: {error:#}\n")
}

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
            out.push_str(&render::human(diagnostic, self.severity(diagnostic)));
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
            .map(|d| {
                serde_json::to_value(render::json(d, self.severity(d)))
                    .expect("a diagnostic is plain JSON data")
            })
            .collect()
    }
}
