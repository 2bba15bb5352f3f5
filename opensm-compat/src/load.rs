//! Loading a configuration file of either format, and converting between them.

use std::path::{Path, PathBuf};

use ibqos_text::{Diagnostic, source_text};

use crate::settings::{Settings, compare};
use crate::{conf, native};

/// The two configuration formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenSM's `key value` opensm.conf, read exactly as OpenSM 3.3.23 reads it.
    OpenSmConf,
    /// ibqos.toml, the native format.
    NativeToml,
}

impl Format {
    /// `.toml` files are native; anything else is read as opensm.conf.
    pub fn from_path(path: &Path) -> Format {
        match path.extension() {
            Some(ext) if ext == "toml" => Format::NativeToml,
            _ => Format::OpenSmConf,
        }
    }
}

/// A configuration file read into settings.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub format: Format,
    pub settings: Settings,
    /// In reading order; those without a location last.
    pub diagnostics: Vec<Diagnostic>,
    /// The file as text, every byte at its offset (each invalid UTF-8 byte is a `?`).
    pub source: String,
}

impl Loaded {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Why a configuration could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An ibqos.toml with errors: it is strict, so no settings come out of it.
    #[error("{name} is not a usable ibqos.toml: {}", first_message(.diagnostics))]
    Invalid {
        name: String,
        diagnostics: Vec<Diagnostic>,
    },
}

fn first_message(diagnostics: &[Diagnostic]) -> String {
    match diagnostics {
        [] => "no reason given".to_string(),
        [only] => only.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

/// Reads `path`, choosing the format by its extension ([`Format::from_path`]).
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    load_bytes(&path.display().to_string(), &bytes, Format::from_path(path))
}

/// Reads `bytes` as a file called `name` (used in locations) of `format`. An opensm.conf always
/// loads, as it does in OpenSM, with errors among the diagnostics; an ibqos.toml with an error
/// does not.
pub fn load_bytes(name: &str, bytes: &[u8], format: Format) -> Result<Loaded, LoadError> {
    let (settings, diagnostics) = match format {
        Format::OpenSmConf => conf::read(name, bytes),
        Format::NativeToml => {
            let settings = native::read(name, bytes).map_err(|diagnostics| LoadError::Invalid {
                name: name.to_string(),
                diagnostics,
            })?;
            (settings, Vec::new())
        }
    };
    Ok(Loaded {
        format,
        settings,
        diagnostics,
        source: source_text(bytes),
    })
}

/// `s` as an opensm.conf that OpenSM reads back to the same values, formatted as `opensm -c`
/// formats them, with a warning for each value opensm.conf cannot carry (a `#` or a newline in a
/// string, a `(null)` string, a value OpenSM's verify step would replace...).
pub fn to_opensm_conf(s: &Settings) -> (String, Vec<Diagnostic>) {
    let text = conf::write(s);
    let (back, _) = conf::read("opensm.conf", text.as_bytes());
    let diagnostics = compare(s, &back, "opensm.conf");
    (text, diagnostics)
}

/// `s` as ibqos.toml, with a warning for each value ibqos.toml cannot say (an encoded
/// `max_op_vls` of 0 or 6-255, a head-of-queue lifetime wider than its field, a NULL log file...).
pub fn to_native_toml(s: &Settings) -> (String, Vec<Diagnostic>) {
    let text = native::write(s);
    let diagnostics = match native::read("ibqos.toml", text.as_bytes()) {
        Ok(back) => compare(s, &back, "ibqos.toml"),
        // The writer only writes what the reader accepts; this is a bug, reported, not hidden.
        Err(errors) => errors
            .into_iter()
            .map(|mut d| {
                d.message = format!(
                    "ibqos wrote an ibqos.toml it cannot read back: {}",
                    d.message
                );
                d
            })
            .collect(),
    };
    (text, diagnostics)
}
