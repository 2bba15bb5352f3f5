//! Any bytes sent to the emulated fabric as SMPs, directed or LID-routed, or as PerfMgt GMPs,
//! from any port, in sequence and over emulated time (so Sets change what later MADs meet:
//! M_Keys, leases, link states, the traps they raise and the port counters every MAD adds to):
//! the status a real SMA or PMA returns or silence, never a panic.
#![no_main]

use std::sync::OnceLock;

use ibqos_emu::{Emulator, load_topology};
use ibqos_fabric::{NodeId, NodeKind, PortRef};
use libfuzzer_sys::fuzz_target;

/// The built-in fabric, attached at its first CA, built once and cloned per input.
fn fabric() -> &'static (Emulator, Vec<NodeId>) {
    static FABRIC: OnceLock<(Emulator, Vec<NodeId>)> = OnceLock::new();
    FABRIC.get_or_init(|| {
        let topology = load_topology("two-switch").expect("built-in fabric").topology;
        let nodes = topology.nodes().map(|(id, _)| id).collect();
        let ca = topology.nodes().find(|(_, n)| n.kind == NodeKind::Ca).expect("a CA").0;
        (Emulator::new(topology, PortRef::new(ca, 1)).expect("emulator"), nodes)
    })
}

/// One MAD: the node and port it leaves from (any, valid or not), its destination LID, how
/// many ns after the previous one it is sent, how to frame it, and its bytes.
type Send = (u8, u8, Option<u16>, u32, u8, Vec<u8>);

/// Whether `how` sends the MAD to the PMAs (one in four) rather than the SMAs.
fn is_perf(how: u8) -> bool {
    how & 0x18 == 0x18
}

/// Three times in four the bytes become a 256-byte MAD with valid versions and the class of
/// the agent they go to, a LID-routed or directed-route SMP with a short route or a PerfMgt
/// GMP of an attribute the PMAs know, so that most inputs reach the attribute code instead of
/// stopping at the header checks; the fourth is sent as it came.
fn frame(how: u8, bytes: &mut Vec<u8>) {
    if how & 3 == 0 {
        return;
    }
    bytes.resize(256, 0);
    bytes[0] = 1;
    bytes[2] = 1;
    if is_perf(how) {
        bytes[1] = 0x04;
        bytes[16] = 0;
        bytes[17] %= 0x20;
    } else {
        bytes[1] = if how & 4 == 0 { 0x01 } else { 0x81 };
        bytes[7] %= 6;
    }
}

fuzz_target!(|sends: Vec<Send>| {
    let (fabric, nodes) = fabric();
    let mut emulator = fabric.clone();
    let mut now_ns = 0u64;
    for (node, port, dlid, after_ns, how, mut bytes) in sends {
        frame(how, &mut bytes);
        let origin = PortRef::new(nodes[usize::from(node) % nodes.len()], port);
        now_ns += u64::from(after_ns);
        let _ = if is_perf(how) {
            emulator.perf_at_from(origin, now_ns, &bytes, dlid)
        } else {
            emulator.handle_at_from(origin, now_ns, &bytes, dlid)
        };
        let _ = emulator.take_traps();
    }
});
