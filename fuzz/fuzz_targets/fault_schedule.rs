//! Any bytes read as a `--fault-schedule` file, against the built-in two-switch fabric: the
//! flaps, dead nodes and VLArb rewrites to schedule or a located error, never a panic.
#![no_main]

use std::sync::OnceLock;

use ibqos_emu::{FaultSchedule, load_topology};
use ibqos_fabric::Topology;
use libfuzzer_sys::fuzz_target;

fn topology() -> &'static Topology {
    static TOPOLOGY: OnceLock<Topology> = OnceLock::new();
    TOPOLOGY.get_or_init(|| {
        load_topology("two-switch")
            .expect("built-in fabric")
            .topology
    })
}

fuzz_target!(|bytes: &[u8]| {
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = FaultSchedule::parse("fuzz.toml", text, topology());
    }
});
