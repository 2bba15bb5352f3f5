//! The credit-loop checker on tables read from ibsim after `ibqos sm --once`: minhop's loop on a
//! 4x4 torus from the live fabric and from its dump, none with updn; and on the ring of six, a
//! dateline's SL2VL tables (Set as another SM would) free of loops until one Set on S0 behind
//! the SM's back closes the loop again.

use std::path::Path;
use std::time::Duration;

use ibqos_exchange::Transmit;
use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::generate::{ring, torus_2d};
use ibqos_fabric::netfile::parse_net_file;
use ibqos_mad::{Attribute, Routing, SlToVlMappingTableRepr, SlToVlModifier, SmpRepr};
#[path = "../../ibqos/tests/common/dateline.rs"]
mod dateline;

use dateline::{check_with_dateline, dateline_tables, names_the_loop_up_the_ring};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::process::run_bounded;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::{Ibsim, SimTools, TestDir};
use ibqos_transport::ibsim::IbsimTransport;
use ibqos_transport::{Incoming, Outgoing, Role, Transport};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(60);

/// ibsim on `fabric`, configured by `ibqos sm --once` with `options` as opensm.conf.
fn configured(fabric: &Fabric, options: &str, dir: &TestDir) -> Ibsim {
    let sim = Ibsim::start(&SimTools::require(), &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    let conf = write_opensm_conf(&dir.subdir("conf"), options).unwrap();
    SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf)
        .run_up(&ibqos_binary().unwrap(), &sim)
        .unwrap_or_else(|e| panic!("{}: {e}", fabric.name));
    sim
}

/// `ibqos ARGS`: its exit code and standard output.
fn ibqos(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(ibqos_binary().unwrap());
    cmd.args(args);
    let finished = run_bounded(&mut cmd, TIMEOUT).unwrap();
    (finished.status.code(), finished.stdout)
}

/// `ibqos dump` of the live fabric, written to `path` and read back.
fn dump(sim: &Ibsim, node: &str, path: &Path) -> FabricDump {
    let fabric = format!("ibsim:{}@{node}", sim.sockname());
    let out = path.to_str().unwrap();
    let (code, _) = ibqos(&["dump", "--fabric", &fabric, "-o", out]);
    assert_eq!(code, Some(0), "ibqos dump --fabric {fabric}");
    FabricDump::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn minhops_loop_on_a_torus_read_from_ibsim_and_none_with_updn() {
    let dir = TestDir::new("credit-loops-torus");
    let fabric = Fabric::generated("torus-4x4", &torus_2d(4, 4, 1).unwrap(), dir.path()).unwrap();
    let net = fabric.netfile.to_str().unwrap();
    let sim = configured(&fabric, "routing_engine minhop\nqos TRUE\n", &dir);
    let live = format!("ibsim:{}@{}", sim.sockname(), fabric.query_node);
    let (code, text) = ibqos(&["credit-loops", "--fabric", &live, "--json"]);
    assert_eq!(code, Some(1), "{text}");
    let from_live: Value = serde_json::from_str(&text).unwrap();
    assert!(from_live["credit_loops"].as_u64() >= Some(1), "{text}");
    assert_eq!(from_live["misforward_count"], 0, "{text}");
    // Every channel of a loop is a switch port toward another switch (ports 1-4 on the torus).
    for found in from_live["loops"].as_array().unwrap() {
        for channel in found["channels"].as_array().unwrap() {
            assert!(
                (1..=4).contains(&channel["port"].as_u64().unwrap()),
                "{channel}"
            );
        }
    }

    let held = dir.path().join("held.json");
    dump(&sim, &fabric.query_node, &held);
    let (code, text) = ibqos(&[
        "credit-loops",
        "--topology",
        net,
        "--dump",
        held.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, Some(1), "{text}");
    let from_dump: Value = serde_json::from_str(&text).unwrap();
    // The same loops: a live fabric's nodes are named by GUID, a dump's by the net file.
    assert_eq!(unnamed(&from_dump["loops"]), unnamed(&from_live["loops"]));
    drop(sim);

    let roots = dir.path().join("roots");
    std::fs::write(&roots, "0x0000000000200000\n").unwrap();
    let updn = format!(
        "routing_engine updn\nroot_guid_file {}\nqos TRUE\n",
        roots.display()
    );
    let dir = TestDir::new("credit-loops-torus-updn");
    let sim = configured(&fabric, &updn, &dir);
    let live = format!("ibsim:{}@{}", sim.sockname(), fabric.query_node);
    let (code, text) = ibqos(&["credit-loops", "--fabric", &live]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("No credit loop: 64 channels"), "{text}");
}

/// `loops` of a `--json` report without the nodes' names.
fn unnamed(loops: &Value) -> Value {
    let mut loops = loops.clone();
    for found in loops.as_array_mut().unwrap() {
        for channel in found["channels"].as_array_mut().unwrap() {
            channel.as_object_mut().unwrap().remove("node");
        }
    }
    loops
}

/// Sends an SL2VL Set of (`input`, `output`) to the switch at `lid`, from a client at `node`,
/// as another SM would, and waits for its answer.
fn set_sl2vl(sim: &Ibsim, node: &str, lid: u16, (input, output): (u8, u8), vls: [u8; 16]) {
    let mut client = IbsimTransport::connect(sim.sockname(), node, Role::Client).unwrap();
    let table = Attribute::SlToVlMappingTable(SlToVlMappingTableRepr { vls });
    let modifier = u32::from(SlToVlModifier::Pair { input, output });
    let set = SmpRepr::set(&table, modifier, 0x5e7, Routing::Lid);
    client
        .send(&Outgoing::from(&Transmit {
            mad: set,
            dlid: Some(lid),
        }))
        .unwrap();
    let answer = client.recv(Duration::from_secs(5)).unwrap();
    assert!(
        matches!(answer, Some(Incoming::Mad { .. })),
        "the Set to LID {lid} was answered: {answer:?}"
    );
}

#[test]
fn a_table_set_on_ibsim_behind_the_sms_back_closes_the_loop_again() {
    let dir = TestDir::new("credit-loops-ring");
    let fabric = Fabric::generated("ring-6", &ring(6, 1).unwrap(), dir.path()).unwrap();
    let topology = parse_net_file(&fabric.netfile).unwrap().topology;
    let options = "routing_engine minhop\nqos TRUE\nmax_op_vls 2\n";
    let sim = configured(&fabric, options, &dir);
    let node = fabric.query_node.as_str();
    let held = dump(&sim, node, &dir.path().join("before.json"));
    let lid = |name: &str| {
        let id = topology.node_by_name(name).unwrap();
        let guid = topology.node(id).unwrap().guid;
        held.node(guid).unwrap().ports[&0].lid
    };
    for (switch, input, output, vls) in dateline_tables() {
        set_sl2vl(&sim, node, lid(&switch), (input, output), vls);
    }
    let held = dump(&sim, node, &dir.path().join("dateline.json"));
    let (named, report) = check_with_dateline(&topology, &held).unwrap();
    assert!(report.is_free(), "{}", report.describe(&named));
    assert_eq!(report.discard_count, 0, "{}", report.describe(&named));

    set_sl2vl(&sim, node, lid("S0"), (1, 2), [0; 16]);
    let held = dump(&sim, node, &dir.path().join("changed.json"));
    let (named, report) = check_with_dateline(&topology, &held).unwrap();
    assert!(
        names_the_loop_up_the_ring(&report, &named),
        "{}",
        report.describe(&named)
    );
}
