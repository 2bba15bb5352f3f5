//! The fabrics built into ibqos, by name, as net-file text: what an SM, the emulator and the
//! tests run against on a machine with nothing else installed.

use std::path::Path;

use crate::netfile::{NetError, NetFile, parse_net_file, parse_net_str};

/// Each built-in fabric's name and net-file text.
pub const BUILTIN_TOPOLOGIES: [(&str, &str); 1] =
    [("two-switch", include_str!("../data/two-switch.net"))];

/// The net-file text of built-in fabric `name`.
pub fn builtin_topology(name: &str) -> Option<&'static str> {
    BUILTIN_TOPOLOGIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// A built-in fabric by name, else a net file by path: what `sim:TOPOLOGY`, `ibqos fabric
/// serve TOPOLOGY` and `ibqos fabric dump TOPOLOGY` take.
pub fn load_topology(spec: &str) -> Result<NetFile, NetError> {
    match builtin_topology(spec) {
        Some(text) => parse_net_str(text),
        None => parse_net_file(Path::new(spec)),
    }
}
