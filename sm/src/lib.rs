//! The ibqos subnet manager and its command-line front end.

pub mod cli;
pub mod commands;
pub mod diagnostics;
