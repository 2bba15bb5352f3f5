//! SL2VL tables as OpenSM leaves them, per routing engine, qos off and on, through
//! `ibqos_tests::sl2vls`: every (input, output) pair of every switch and every CA port.

use ibqos_fabric::generate;
use ibqos_tests::TestDir;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::sl2vls::sl2vls_match_opensm;

/// qos off: neither SM writes an SL2VL table. qos on: the default table, and a generic one
/// that maps SLs 8-15 down, masked to the ports' 8 VLs.
const SETUPS: [&str; 3] = [
    "",
    "qos TRUE\n",
    "qos TRUE\nqos_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0\n",
];

/// Every setup with `engine` routing `fabric`, generated from `topology` as `name`.
fn on(engine: &str, name: &str, topology: &ibqos_fabric::Topology) {
    let dir = TestDir::new(&format!("sl2vl-{engine}"));
    let fabric = Fabric::generated(name, topology, dir.path()).unwrap();
    for (i, setup) in SETUPS.iter().enumerate() {
        let options = format!("routing_engine {engine}\n{setup}");
        let run_dir = TestDir::new(&format!("sl2vl-{engine}-{i}"));
        let log = sl2vls_match_opensm(&fabric, &options, &run_dir);
        assert!(
            log.contains(&format!("{engine} tables configured")),
            "OpenSM did not route with {engine}"
        );
    }
}

/// On a ring of four switches, a fabric with a cycle.
#[test]
fn minhop_leaves_the_qos_managers_sl2vl_tables() {
    on("minhop", "ring-4", &generate::ring(4, 1).unwrap());
}

/// On a fat tree of two leaves and two spines, where up*/down* finds its roots.
#[test]
fn updn_leaves_the_qos_managers_sl2vl_tables() {
    on(
        "updn",
        "fat-tree-2x2",
        &generate::fat_tree(2, 2, 2, 4).unwrap(),
    );
}

/// LASH spends SLs as lanes and DOR none; neither writes SL2VL tables.
#[test]
fn lash_leaves_the_qos_managers_sl2vl_tables() {
    on("lash", "ring-4", &generate::ring(4, 1).unwrap());
}

#[test]
fn dor_leaves_the_qos_managers_sl2vl_tables() {
    on("dor", "ring-4", &generate::ring(4, 1).unwrap());
}

/// DFSSSP spends SLs as VL layers and leaves the tables to the QoS manager: on the ring it
/// needs two layers, which the default tables keep apart.
#[test]
fn dfsssp_leaves_the_qos_managers_sl2vl_tables() {
    on("dfsssp", "ring-4", &generate::ring(4, 1).unwrap());
}
