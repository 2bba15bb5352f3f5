//! The small TOML files the emulated fabric reads beside its net file: how one is read, and
//! why one cannot be used. Each reader resolves names against the topology and reports a
//! problem at its place in the file.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use ibqos_text::{Code, Coded, Diagnostic, Located, Location};

/// Why an input file cannot be used: it cannot be read, or the problem `P` at a place in it.
#[derive(Debug, thiserror::Error)]
pub enum InputError<P: fmt::Debug + fmt::Display> {
    #[error("cannot read the {what} {path}: {error}")]
    Read {
        /// What the file is, for the message: "fault schedule".
        what: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{0}")]
    Invalid(Located<P>),
}

impl<P: Coded + fmt::Debug> InputError<P> {
    /// The diagnostic that reports this, for [`ibqos_text::render`].
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            InputError::Read { path, .. } => {
                Diagnostic::error(Code::UnreadableFile, self.to_string())
                    .at(Some(Location::whole_file(path.display().to_string())))
            }
            InputError::Invalid(problem) => problem.to_diagnostic(),
        }
    }
}

/// Reads the `what` at `path` and gives its text to `parse` with the file's name, for the
/// places of its problems.
pub(crate) fn load<T, P: fmt::Debug + fmt::Display>(
    what: &'static str,
    path: &Path,
    parse: impl FnOnce(&str, &str) -> Result<T, Located<P>>,
) -> Result<T, InputError<P>> {
    let text = std::fs::read_to_string(path).map_err(|error| InputError::Read {
        what,
        path: path.to_owned(),
        error,
    })?;
    parse(&path.display().to_string(), &text).map_err(InputError::Invalid)
}

/// `problem` at the bytes `span` of `text`, the file `file`.
pub(crate) fn at<P>(file: &str, text: &str, span: Range<usize>, problem: P) -> Located<P> {
    Located::new(
        Location::in_source(file, text.as_bytes(), span.start, span.end),
        problem,
    )
}
