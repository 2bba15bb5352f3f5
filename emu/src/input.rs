//! The small TOML files the emulated fabric reads beside its net file: how one is read, and
//! why one cannot be used. Each reader resolves names against the topology and reports a
//! problem at its place in the file.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use ibqos_fabric::{NodeId, Topology};
use ibqos_text::{Code, Coded, Diagnostic, Located, Location};
use serde::de::DeserializeOwned;
use toml::Spanned;

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

/// An input file's text and name, for reading it and placing its problems.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub(crate) file: &'a str,
    pub(crate) text: &'a str,
}

impl Source<'_> {
    /// `problem` at the bytes `span` of the text.
    pub(crate) fn at<P>(&self, span: Range<usize>, problem: P) -> Located<P> {
        Located::new(
            Location::in_source(self.file, self.text.as_bytes(), span.start, span.end),
            problem,
        )
    }

    /// The text read as the TOML document `T`; a syntax error is what `syntax` makes of its
    /// message, at its place.
    pub(crate) fn toml<T: DeserializeOwned, P>(
        &self,
        syntax: impl FnOnce(String) -> P,
    ) -> Result<T, Located<P>> {
        toml::from_str(self.text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            self.at(span, syntax(e.message().to_owned()))
        })
    }

    /// The node of `topology` that `name` names (see [`crate::node_named`]); none is what
    /// `unknown` makes of the name, at its place.
    pub(crate) fn node<P>(
        &self,
        topology: &Topology,
        name: &Spanned<String>,
        unknown: impl FnOnce(String) -> P,
    ) -> Result<NodeId, Located<P>> {
        crate::node_named(topology, name.get_ref())
            .ok_or_else(|| self.at(name.span(), unknown(name.get_ref().clone())))
    }
}
