//! What every reader of a text file in ibqos shares: opensm.conf and ibqos.toml
//! (`ibqos-opensm`), ibsim net files (`ibqos-fabric`), traffic files (`ibqos-sim`) and fault
//! schedules (`ibqos-emu`).
//!
//! - [`Location`]: a span in one line of a file, with the line's text for a snippet;
//! - [`Diagnostic`]: a finding with a [`Severity`], a typed [`Code`], a message and a help line,
//!   and [`Located`]: a reader's own error or note with its location;
//! - [`render`]: one diagnostic drawn like a compiler's, or as JSON, so every kind of file
//!   reports alike;
//! - [`cnum`]: C's `strtoul`, `strtoull`, `strtol` and `atoi` as glibc reads numbers, quirks
//!   included, for the formats whose reference implementation is C.
//!
//! It depends on no other crate of the workspace, so the lowest of them can use it.

pub mod cnum;
mod code;
mod diagnostic;
mod location;
pub mod render;

pub use code::{Code, Reader};
pub use diagnostic::{Diagnostic, MAX_PER_CODE, Severity, cap_per_code, sort_in_reading_order};
pub use location::{Coded, Located, Location, SourceLine, display_text, source_text};
