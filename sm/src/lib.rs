//! The ibqos subnet manager and its command-line front end.

pub mod cache;
pub mod cli;
pub mod commands;
pub mod diagnostics;
pub mod engine;
pub mod run;
pub mod transport;
