//! The partition manager on the built-in two-switch fabric emulated in virtual time. These tests
//! check the P_Key tables and enforcement it leaves, worked out by hand from OpenSM's rules (the
//! ibsim oracle in tests/ holds the same code to OpenSM itself). They check that the next sweep
//! repairs a table changed behind the SM's back, and what the SA answers from those tables.
//!
//! The partitions.conf is `common::partitioned`'s.

use std::collections::BTreeMap;

use ibqos_fabric::PortRef;
use ibqos_mad::{Attribute, AttributeId, DrPath, Method, PKeyTableRepr, Routing, Smp, SmpRepr};
use ibqos_sm::manager::Run;
use tempfile::TempDir;

mod common;
use common::{EmulatedSm, partitioned, two_switch};

/// The entries in use of a port's P_Key table, by index.
fn table(sm: &EmulatedSm, node: &str, port: u8) -> BTreeMap<usize, u16> {
    let emulator = sm.transport.emulator();
    let id = emulator.topology().node_by_name(node).unwrap();
    emulator
        .p_keys(PortRef::new(id, port))
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, pkey)| **pkey != 0)
        .map(|(index, pkey)| (index, *pkey))
        .collect()
}

fn enforcement(sm: &EmulatedSm, node: &str, port: u8) -> (bool, bool) {
    let emulator = sm.transport.emulator();
    let id = emulator.topology().node_by_name(node).unwrap();
    let info = emulator.port_info(PortRef::new(id, port)).unwrap();
    (
        info.partition_enforcement_inbound,
        info.partition_enforcement_outbound,
    )
}

#[test]
fn tables_and_enforcement_are_placed_as_opensm_places_them() {
    let dir = TempDir::new().unwrap();
    let mut sm = EmulatedSm::new(two_switch(), Run::Once, &partitioned(&dir));
    let summary = sm.sweep_done();
    assert!(summary.subnet_up, "{summary:?}");
    // Six CA ports, two switch ports 0, six switch ports facing a CA.
    assert_eq!(
        (
            summary.pkey_ports_configured,
            summary.pkey_ports_verified,
            summary.pkey_ports_failed
        ),
        (14, 14, 0)
    );
    let entries = |list: &[(usize, u16)]| list.iter().copied().collect::<BTreeMap<_, _>>();
    // The SM's port keeps the full default key ibsim (and the emulator) power on with.
    assert_eq!(table(&sm, "H1", 1), entries(&[(0, 0xffff)]));
    // The limited default takes index 0 (the base is the same); `hosts` goes after it.
    assert_eq!(table(&sm, "H2", 1), entries(&[(0, 0x7fff), (1, 0x8101)]));
    assert_eq!(table(&sm, "H3", 1), entries(&[(0, 0x7fff), (1, 0x8101)]));
    // indx0 moves the default away from index 0: both are new, `storage` goes to 0 and the
    // default after the last index used.
    assert_eq!(table(&sm, "H4", 1), entries(&[(0, 0x8002), (1, 0x7fff)]));
    assert_eq!(table(&sm, "H5", 2), entries(&[(0, 0x7fff)]));
    assert_eq!(table(&sm, "S1", 0), entries(&[(0, 0x7fff)]));
    // A switch port facing a CA gets the CA's keys packed from index 0, and enforces.
    assert_eq!(table(&sm, "S1", 1), entries(&[(0, 0xffff)]));
    assert_eq!(table(&sm, "S1", 2), entries(&[(0, 0x7fff), (1, 0x8101)]));
    assert_eq!(table(&sm, "S2", 2), entries(&[(0, 0x8002), (1, 0x7fff)]));
    for (node, port) in [("S1", 1), ("S1", 2), ("S2", 1), ("S2", 2), ("S2", 5)] {
        assert_eq!(enforcement(&sm, node, port), (true, true), "{node}[{port}]");
    }
    // Between switches, no enforcement and the table as it was.
    assert_eq!(enforcement(&sm, "S1", 3), (false, false));
    assert_eq!(table(&sm, "S1", 3), entries(&[(0, 0xffff)]));
}

#[test]
fn a_table_changed_behind_the_sms_back_is_repaired_by_the_next_sweep() {
    let dir = TempDir::new().unwrap();
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &partitioned(&dir));
    sm.sweep_done();
    // Someone clears H2's table: a P_KeyTable Set of zeros by directed route from H1 (out of
    // its port 1, then S1's port 2).
    let set = SmpRepr::set(
        &Attribute::PKeyTable(PKeyTableRepr { p_keys: [0; 32] }),
        0,
        0,
        Routing::Directed(DrPath::request(&[1, 2]).unwrap()),
    );
    let mut mad = vec![0u8; 256];
    set.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let (origin, at_ns) = (sm.transport.port(), sm.transport.now_ns());
    sm.transport
        .emulator_mut()
        .exchange(ibqos_emu::Request {
            origin,
            at_ns,
            dlid: None,
            mad: &mad,
        })
        .expect("the emulator answers the Set");
    assert_eq!(table(&sm, "H2", 1), BTreeMap::new(), "cleared");
    let sets_before = sm
        .transport
        .emulator()
        .handled(AttributeId::PKeyTable, Method::Set);
    sm.sweep_started();
    let repaired = sm.sweep_done();
    let sets = sm
        .transport
        .emulator()
        .handled(AttributeId::PKeyTable, Method::Set)
        - sets_before;
    assert_eq!(sets, 1, "one block of one port sent again");
    let [change] = repaired.changes.as_slice() else {
        panic!("{:#?}", repaired.changes);
    };
    assert_eq!(change.attribute, AttributeId::PKeyTable);
    assert_eq!(
        table(&sm, "H2", 1),
        [(0, 0x7fff), (1, 0x8101)].into_iter().collect()
    );
}
