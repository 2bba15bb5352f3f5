//! `ibqos sm` programming qos-setup's per port group tables on ibsim (a fabric nobody here
//! wrote), read back with smpquery (a reader nobody here wrote). OpenSM programs nothing from
//! that section, so it is no oracle here: the same run without `program_policy_setup` is the
//! baseline, and what differs must be exactly the ports and entries the scopes choose, holding
//! the scopes' values. The configuration is ibqos/tests/data/qos-setup.toml on two-switch:
//! storage is the dual-port host H5; a vlarb-scope gives it and the switch ports facing it
//! (S1 and S2 port 5) their own high-priority table; an sl2vl-scope maps every input to those
//! switch ports with its table; another maps S1's port 1 to port 2 onto VL 3.
//!
//! Not compared: VLHighLimit, which ibsim does not store.

use std::collections::BTreeSet;

use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::qos::{QosReadback, Setting, differences};
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// The two-switch fabric programmed by `ibqos sm --once` with the qos-setup example, its
/// `program_policy_setup` as given, read back.
fn programmed(fabric: &Fabric, program: bool, dir: &TestDir) -> QosReadback {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ibqos/tests/data/qos-setup.toml"
    );
    let text = std::fs::read_to_string(example).unwrap().replace(
        "program_policy_setup = true",
        &format!("program_policy_setup = {program}"),
    );
    let config = dir.path().join(format!("setup-{program}.toml"));
    std::fs::write(&config, text).unwrap();
    let sim = Ibsim::start(
        &tools,
        &fabric.netfile,
        &dir.subdir(&format!("ibsim-{program}")),
    )
    .unwrap();
    let cache = dir.subdir(&format!("cache-{program}"));
    SmInvocation::new(SmFabric::Native, &fabric.sm_node, &cache)
        .args(&["-c", config.to_str().unwrap()])
        .run_up(&ibqos, &sim)
        .unwrap_or_else(|e| panic!("program_policy_setup = {program}: {e}"));
    QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node)
        .unwrap_or_else(|e| panic!("reading back: {e}"))
}

#[test]
fn qos_setup_tables_on_ibsim_read_back_with_smpquery() {
    let dir = TestDir::new("qos-setup-ibsim");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let base = programmed(&fabric, false, &dir);
    let with = programmed(&fabric, true, &dir);

    let changed: BTreeSet<(String, u8, String)> = differences(&base, &with)
        .into_iter()
        .map(|((node, port), setting, _)| (node, port, format!("{setting:?}")))
        .collect();
    let expected: BTreeSet<(String, u8, String)> = [
        ("S1", 2, Setting::Sl2Vl),
        ("S1", 5, Setting::Sl2Vl),
        ("S2", 5, Setting::Sl2Vl),
        ("S1", 5, Setting::VlArb),
        ("S2", 5, Setting::VlArb),
        ("H5", 1, Setting::VlArb),
        ("H5", 2, Setting::VlArb),
    ]
    .into_iter()
    .map(|(node, port, setting)| (node.to_string(), port, format!("{setting:?}")))
    .collect();
    assert_eq!(changed, expected);

    for key in [("S1", 5), ("S2", 5), ("H5", 1), ("H5", 2)] {
        let port = with.port(&(key.0.to_string(), key.1)).unwrap();
        let high: Vec<String> = port.vlarb.as_ref().unwrap().high[..3]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(high, ["1:200", "2:100", "0:0"], "{key:?}");
    }
    let across_to: [u8; 16] = std::array::from_fn(|sl| (sl % 4) as u8);
    for switch in ["S1", "S2"] {
        let rows = &with.port(&(switch.to_string(), 5)).unwrap().sl2vl;
        assert_eq!(rows.len(), 9, "inputs 0-8 of {switch} port 5");
        assert!(
            rows.iter().all(|r| r.vls == across_to),
            "{switch}: {rows:?}"
        );
    }
    let rows = &with.port(&("S1".to_string(), 2)).unwrap().sl2vl;
    let one = rows.iter().find(|r| r.in_port == 1).unwrap();
    assert_eq!(one.vls, [3; 16]);
    assert!(
        rows.iter()
            .filter(|r| r.in_port != 1)
            .all(|r| r.vls != [3; 16])
    );
}
