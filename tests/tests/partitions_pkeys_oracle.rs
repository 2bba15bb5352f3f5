//! The partition manager against OpenSM as the oracle. The files are each partitions.conf in
//! `opensm-compat/tests/data/partitions/accepted/`, and no file at all. Two of them name the
//! two-switch fabric's ports: `two-switch.conf` and `limited-default.conf`. For each, `ibqos sm
//! --once` and `opensm -o` each program a fresh ibsim of the two-switch fabric with the same
//! opensm.conf. The P_Key table of every port (every switch port 0-8, every CA port) is read back
//! with smpquery. The two fabrics must hold the same tables, entry for entry.
//!
//! The comparison could pass on two untouched fabrics, so the files that name the fabric's
//! ports must also leave tables that differ from ibsim's power-on state.
//!
//! A file OpenSM drops where ibqos does not ([`DIVERGENT_PARTITIONS`]) is not compared; OpenSM
//! must leave the tables it leaves without a file, which shows it dropped it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::readback::port_targets;
use ibqos_tests::scenario::{DIVERGENT_PARTITIONS, Fabric, conf_data, testdata};
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::smpquery::SmpQuery;
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Every port's P_Key table, by node and port.
type Tables = BTreeMap<(String, u8), Vec<u16>>;

/// The files that name the two-switch fabric's ports, so both SMs write tables.
const WRITES_TABLES: [&str; 2] = ["two-switch", "limited-default"];

fn read_tables(tools: &SimTools, sim: &Ibsim, fabric: &Fabric) -> Tables {
    let query = SmpQuery::new(tools, sim, &fabric.query_node);
    port_targets(&fabric.topology, &fabric.query_node)
        .unwrap()
        .into_iter()
        .map(|port| {
            let table = query
                .pkeys(&port.target, port.port_arg)
                .unwrap_or_else(|e| panic!("{}: {e}", port.name()));
            ((port.node.id.clone(), port.port), table)
        })
        .collect()
}

/// The options naming `file` as partitions.conf (a file that does not exist for "no file").
fn options(file: &Path) -> String {
    format!("partition_config_file {}\n", file.display())
}

fn by_ibqos(tools: &SimTools, fabric: &Fabric, file: &Path, dir: &TestDir) -> Tables {
    let sim = Ibsim::start(tools, &fabric.netfile, &dir.subdir("ibqos-ibsim")).unwrap();
    let conf = write_opensm_conf(dir.path(), &options(file)).unwrap();
    let (_, summary) = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf)
        .run_up(&ibqos_binary().unwrap(), &sim)
        .unwrap_or_else(|e| panic!("ibqos with {}: {e}", file.display()));
    let count = |key: &str| summary.raw.get(key).and_then(serde_json::Value::as_u64);
    let (configured, verified) = (count("pkey_ports_configured"), count("pkey_ports_verified"));
    assert!(
        configured.is_some_and(|c| c > 0) && verified == configured,
        "{}: every port's P_Key table verified: {}",
        file.display(),
        summary.raw
    );
    read_tables(tools, &sim, fabric)
}

fn by_opensm(tools: &SimTools, fabric: &Fabric, file: &Path, dir: &TestDir) -> Tables {
    let sim = Ibsim::start(tools, &fabric.netfile, &dir.subdir("opensm-ibsim")).unwrap();
    run_opensm_once(
        tools,
        &sim,
        &fabric.sm_node,
        &options(file),
        &dir.subdir("opensm"),
    )
    .unwrap_or_else(|e| panic!("OpenSM with {}: {e}", file.display()));
    read_tables(tools, &sim, fabric)
}

/// The ports whose tables differ, each with both tables' entries in use (ibqos's first where
/// ibqos is compared).
fn differences(ours: &Tables, theirs: &Tables) -> Vec<String> {
    let used = |t: Option<&Vec<u16>>| -> Vec<String> {
        t.into_iter()
            .flatten()
            .enumerate()
            .filter(|(_, k)| **k != 0)
            .map(|(i, k)| format!("{i}:{k:#06x}"))
            .collect()
    };
    let ports: std::collections::BTreeSet<_> = ours.keys().chain(theirs.keys()).collect();
    ports
        .into_iter()
        .filter(|port| ours.get(*port) != theirs.get(*port))
        .map(|port| {
            format!(
                "{}[{}]: {:?} against {:?}",
                port.0,
                port.1,
                used(ours.get(port)),
                used(theirs.get(port))
            )
        })
        .collect()
}

#[test]
fn every_pkey_table_is_the_one_opensm_programs() {
    let tools = SimTools::require();
    let dir = TestDir::new("partitions-pkeys-oracle");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let power_on = {
        let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("power-on")).unwrap();
        read_tables(&tools, &sim, &fabric)
    };
    let no_file = dir.path().join("no-such-partitions.conf");
    let defaults = by_opensm(
        &tools,
        &fabric,
        &no_file,
        &TestDir::new("partitions-pkeys-none"),
    );
    let mut files: Vec<PathBuf> = conf_data("partitions", "accepted");
    files.push(no_file);
    let mut wrong = Vec::new();
    for file in &files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let case = TestDir::new(&format!("partitions-pkeys-{name}"));
        let theirs = by_opensm(&tools, &fabric, file, &case);
        if DIVERGENT_PARTITIONS.iter().any(|(n, _)| *n == name) {
            for difference in differences(&theirs, &defaults) {
                wrong.push(format!("{name}: OpenSM did not drop it: {difference}"));
            }
            continue;
        }
        let ours = by_ibqos(&tools, &fabric, file, &case);
        for difference in differences(&ours, &theirs) {
            wrong.push(format!("{name}: {difference}"));
        }
        if WRITES_TABLES.contains(&name.as_str()) && ours == power_on {
            wrong.push(format!(
                "{name}: every table is as ibsim powers on; nothing was written"
            ));
        }
    }
    assert!(
        WRITES_TABLES
            .iter()
            .all(|w| files.iter().any(|f| f.file_stem().is_some_and(|s| s == *w))),
        "the files that write tables are among the test data"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The SM at a managed switch (S1's port 0): `SELF` is then the switch's port 0, and every
/// table of the files that write tables is still OpenSM's from the same switch.
#[test]
fn from_an_sm_at_a_switch_every_pkey_table_is_opensms() {
    let tools = SimTools::require();
    let fabric = Fabric {
        sm_node: "S1".into(),
        ..Fabric::load("two-switch", &testdata("two-switch.net")).unwrap()
    };
    let mut wrong = Vec::new();
    for name in WRITES_TABLES {
        let file = conf_data("partitions", "accepted")
            .into_iter()
            .find(|f| f.file_stem().is_some_and(|s| s == name))
            .unwrap();
        let case = TestDir::new(&format!("partitions-pkeys-at-s1-{name}"));
        let theirs = by_opensm(&tools, &fabric, &file, &case);
        let ours = by_ibqos(&tools, &fabric, &file, &case);
        for difference in differences(&ours, &theirs) {
            wrong.push(format!("{name}: {difference}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
