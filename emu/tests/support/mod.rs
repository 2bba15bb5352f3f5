//! What the emulator's test files share: the built-in fabric with an SM at H1, and one way to
//! send the fabric a MAD.

// Each test file is its own crate and uses its own subset of these.
#![allow(dead_code)]

use ibqos_emu::{Emulator, Reply, Request, builtin_topology};
use ibqos_fabric::netfile::parse_net_str;
use ibqos_fabric::{NodeId, PortRef, Topology};

/// The built-in two-switch fabric: S1 (enhanced port 0) ports 1, 2 to H1, H2, 3 and 4 to S2,
/// 5 to H5; S2 ports 1, 2 to H3, H4, 5 to H5 port 2.
pub fn two_switch() -> Topology {
    parse_net_str(builtin_topology("two-switch").unwrap())
        .unwrap()
        .topology
}

pub fn node(t: &Topology, name: &str) -> NodeId {
    t.node_by_name(name).unwrap()
}

/// H1's port 1, where the SM of these tests sits.
pub fn h1(t: &Topology) -> PortRef {
    PortRef::new(node(t, "H1"), 1)
}

/// `t` emulated with an SM at `sm`, whose port advertises IsSM.
pub fn with_sm_at(t: Topology, sm: PortRef) -> Emulator {
    let mut emu = Emulator::new(t).unwrap();
    emu.set_is_sm(sm, true);
    emu
}

/// The built-in two-switch fabric with the SM at H1.
pub fn emulator() -> Emulator {
    let t = two_switch();
    let sm = h1(&t);
    with_sm_at(t, sm)
}

/// `mad` sent from `origin` to `dlid` at emulated time `at_ns`.
pub fn exchange(
    emu: &mut Emulator,
    origin: PortRef,
    at_ns: u64,
    mad: &[u8],
    dlid: Option<u16>,
) -> Option<Reply> {
    emu.exchange(Request {
        origin,
        at_ns,
        dlid,
        mad,
    })
}

/// What the SM at H1 gets back for `mad` sent to `dlid` at `at_ns`.
pub fn sm_exchange_at(
    emu: &mut Emulator,
    at_ns: u64,
    mad: &[u8],
    dlid: Option<u16>,
) -> Option<Reply> {
    let sm = h1(emu.topology());
    exchange(emu, sm, at_ns, mad, dlid)
}

/// The bytes the SM at H1 gets back for `mad` sent to `dlid` now: at time 0, which the fabric
/// takes as the time it has reached, so no time passes.
pub fn sm_exchange(emu: &mut Emulator, mad: &[u8], dlid: Option<u16>) -> Option<Vec<u8>> {
    sm_exchange_at(emu, 0, mad, dlid).map(|reply| reply.mad)
}
