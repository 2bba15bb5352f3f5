//! Any bytes sent to the emulated fabric as an SMP, directed or LID-routed: the status a real
//! SMA returns or silence, never a panic.
#![no_main]

use std::sync::OnceLock;

use ibqos_fabric::emu::{Emulator, load_topology};
use ibqos_fabric::{NodeKind, PortRef};
use libfuzzer_sys::fuzz_target;

/// The built-in fabric, attached at its first CA, built once and cloned per input.
fn fabric() -> &'static Emulator {
    static FABRIC: OnceLock<Emulator> = OnceLock::new();
    FABRIC.get_or_init(|| {
        let topology = load_topology("two-switch").expect("built-in fabric").topology;
        let ca = topology.nodes().find(|(_, n)| n.kind == NodeKind::Ca).expect("a CA").0;
        Emulator::new(topology, PortRef::new(ca, 1)).expect("emulator")
    })
}

fuzz_target!(|input: (Option<u16>, Vec<u8>)| {
    let (dlid, bytes) = input;
    let mut emulator = fabric().clone();
    let _ = emulator.handle(&bytes, dlid);
});
