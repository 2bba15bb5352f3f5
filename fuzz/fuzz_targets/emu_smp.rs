//! Any bytes sent to the emulated fabric as SMPs, directed or LID-routed, or as PerfMgt or
//! congestion control GMPs, from any port, in sequence and over emulated time (so Sets change
//! what later MADs meet: M_Keys, CC_Keys, leases, link states, the traps they raise and the port
//! counters every MAD adds to): the status a real SMA, PMA or CCA returns or silence, never a
//! panic.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use ibqos_emu::{Emulator, Request, attach_port, load_topology};
use ibqos_fabric::{NodeId, PortRef, Topology};
use libfuzzer_sys::fuzz_target;

/// The built-in fabric, its nodes and the default attach port (its first CA), read once; each
/// input gets a fresh emulator of it with an SM at that port.
fn fabric() -> &'static (Topology, Vec<NodeId>, PortRef) {
    static FABRIC: OnceLock<(Topology, Vec<NodeId>, PortRef)> = OnceLock::new();
    FABRIC.get_or_init(|| {
        let topology = load_topology("two-switch").expect("built-in fabric").topology;
        let nodes = topology.nodes().map(|(id, _)| id).collect();
        let sm = attach_port(&topology, None).expect("a port to attach at");
        (topology, nodes, sm)
    })
}

/// One MAD sent into the fabric.
#[derive(Debug, Arbitrary)]
struct Send {
    /// The node it leaves from, taken modulo the number of nodes.
    node: u8,
    /// The port it leaves from, valid or not.
    port: u8,
    dlid: Option<u16>,
    /// How many ns after the previous MAD it is sent.
    after_ns: u32,
    /// How to frame it (see [`frame`]).
    how: u8,
    bytes: Vec<u8>,
}

/// Three times in four, the bytes become a 256-byte MAD with valid versions and the class of the
/// agent they go to. That is a LID-routed or directed-route SMP with a short route (half of
/// them), a PerfMgt GMP of an attribute the PMAs know, or a congestion control GMP of an
/// attribute the CCAs know (a quarter each). So most inputs reach the attribute code instead of
/// stopping at the header checks. The fourth time, the bytes are sent as they came.
fn frame(how: u8, bytes: &mut Vec<u8>) {
    if how & 3 == 0 {
        return;
    }
    bytes.resize(256, 0);
    bytes[0] = 1;
    match how & 0x18 {
        0x18 => {
            bytes[1] = 0x04;
            bytes[2] = 1;
            bytes[16] = 0;
            bytes[17] %= 0x40;
        }
        0x10 => {
            bytes[1] = 0x21;
            bytes[2] = 2;
            bytes[16] = 0;
            bytes[17] = 0x11 + bytes[17] % 8;
        }
        _ => {
            bytes[1] = if how & 4 == 0 { 0x01 } else { 0x81 };
            bytes[2] = 1;
            bytes[7] %= 6;
        }
    }
}

fuzz_target!(|sends: Vec<Send>| {
    let (topology, nodes, sm) = fabric();
    let mut emulator = Emulator::new(topology.clone()).expect("emulator");
    emulator.set_is_sm(*sm, true);
    let mut now_ns = 0u64;
    for mut send in sends {
        frame(send.how, &mut send.bytes);
        now_ns += u64::from(send.after_ns);
        let _ = emulator.exchange(Request {
            origin: PortRef::new(nodes[usize::from(send.node) % nodes.len()], send.port),
            at_ns: now_ns,
            dlid: send.dlid,
            mad: &send.bytes,
        });
        let _ = emulator.take_traps();
    }
});
