//! Nue against OpenSM 3.3.23's `nue` (Debian's build, without METIS), on issue 33's fabrics with
//! cycles (`scripts/routing-layered`) and on fat-tree-16 and fat-tree-648
//! (`scripts/routing-trees`):
//! - every switch's forwarding table, read back with ibroute from ibsim after `ibqos sm --once`
//!   and after `opensm -o` with the same opensm.conf, compared by switch and destination GUID
//!   (see `ibqos_tests::lfts`): with qos off (one layer), and with qos on and
//!   `nue_max_num_vls` 0 (every VL the ports run: 8 on ibsim's first sweep) and 2;
//! - every pair's PathRecord SL through both SAs, and every port's SL2VL table.

use std::collections::BTreeSet;

use ibqos_fabric::generate::torus_2d;
use ibqos_tests::lfts::{Logs, lfts_match_opensm_logs};
use ibqos_tests::path_sls::{path_sls_match_opensm, two_level_policy};
use ibqos_tests::sa::SmSetup;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::sl2vls::sl2vls_match_opensm;
use ibqos_tests::trees::{layered, tree};
use ibqos_tests::{Result, TestDir};

/// One layer (qos off), every VL ibsim's ports run before OpenSM sets them, and two layers.
const LAYERS: [(&str, &str); 3] = [
    ("one-layer", ""),
    ("all-vls", "qos TRUE\nnue_max_num_vls 0\n"),
    ("two-vls", "qos TRUE\nnue_max_num_vls 2\n"),
];

/// The same with `nue_include_switches`: the switches routed on the layers too.
const WITH_SWITCHES: [(&str, &str); 2] = [
    ("switches", "nue_include_switches TRUE\n"),
    (
        "switches-two-vls",
        "nue_include_switches TRUE\nqos TRUE\nnue_max_num_vls 2\n",
    ),
];

/// The LFTs of nue on the fabric `load` writes equal OpenSM's with each of `setups` (a name and
/// opensm.conf lines); both SMs' logs, in that order.
fn lfts_with(name: &str, load: Load, setups: &[(&str, &str)]) -> Vec<Logs> {
    setups
        .iter()
        .map(|(setup, options)| {
            let dir = TestDir::new(&format!("routing-nue-{name}-{setup}"));
            let fabric = load(name, &dir).unwrap();
            let options = format!("routing_engine nue\n{options}");
            let logs = lfts_match_opensm_logs(&fabric, &options, &dir);
            logs.assert_routed_by("nue");
            logs
        })
        .collect()
}

/// How a test gets its fabric: by name, into a test directory.
type Load = fn(&str, &TestDir) -> Result<Fabric>;

/// [`lfts_with`] each of [`LAYERS`].
fn lfts_on(name: &str, load: Load) {
    lfts_with(name, load, &LAYERS);
}

fn lfts_on_layered(name: &str) {
    lfts_on(name, layered);
}

#[test]
fn nue_on_torus_4x4() {
    lfts_on_layered("torus-4x4");
}

#[test]
fn nue_on_mesh_3x3() {
    lfts_on_layered("mesh-3x3");
}

#[test]
fn nue_on_dragonfly() {
    lfts_on_layered("dragonfly");
}

/// With LMC 1 each LID of a CA is its own destination, with its own colour and routes; with
/// `nue_include_switches` the switches are routed on the layers too.
#[test]
fn nue_with_lmc_and_switches_on_torus_4x4() {
    let lmc = [
        ("lmc", "lmc 1\n"),
        ("lmc-all-vls", "lmc 1\nqos TRUE\nnue_max_num_vls 0\n"),
    ];
    lfts_with("torus-4x4", layered, &lmc);
    lfts_with("torus-4x4", layered, &WITH_SWITCHES);
}

#[test]
fn nue_on_fat_tree_16() {
    lfts_on("fat-tree-16", tree);
}

/// An 8x8 torus, one host per switch: there the modified Dijkstra reaches impasses (with two
/// layers, or with the switches as destinations), and the local backtracking, the shortcuts
/// and the fall back to the escape paths all decide routes, as OpenSM's log shows.
#[test]
fn nue_on_torus_8x8() {
    let load: Load = |name, dir| {
        let torus = torus_2d(8, 8, 1).unwrap();
        Fabric::generated(name, &torus, &dir.subdir("net"))
    };
    let setups: Vec<(&str, &str)> = LAYERS.into_iter().chain(WITH_SWITCHES).collect();
    let logs = lfts_with("torus-8x8", load, &setups);
    // OpenSM logs each step at level INFO, which its default log_flags hold.
    for step in [
        "backtracking worked",
        "found new shortcut",
        "fallback to escape paths",
    ] {
        let seen = logs.iter().any(|l| l.opensm.contains(step));
        assert!(seen, "no {step:?} in OpenSM's logs");
    }
}

/// 54 switches and 648 CAs: many destinations per layer, and CA LIDs past 255.
#[test]
fn nue_on_fat_tree_648() {
    lfts_on("fat-tree-648", tree);
}

/// Every pair's PathRecord SL under nue on the fabric `name`, with `options` and `policy`,
/// equals OpenSM's. Returns the SLs handed out.
fn path_sls(name: &str, options: &str, policy: Option<&str>) -> BTreeSet<u8> {
    let dir = TestDir::new(&format!("path-sl-nue-{name}"));
    let fabric = layered(name, &dir).unwrap();
    let options = format!("routing_engine nue\n{options}");
    let setup = SmSetup {
        options: &options,
        policy,
        ..SmSetup::default()
    };
    let sls = path_sls_match_opensm(&fabric, &setup, &dir);
    sls.values().flatten().flatten().copied().collect()
}

/// One layer: every path keeps SL 0, the default.
#[test]
fn nue_path_sls_on_one_layer() {
    assert_eq!(path_sls("torus-4x4", "", None), BTreeSet::from([0]));
}

/// With qos on and one layer (nue_max_num_vls 1, the default) the policy's SLs are kept: 3
/// between CAs, 5 toward switches.
#[test]
fn nue_path_sls_keep_the_policy_on_one_layer() {
    let policy = two_level_policy(3, 5);
    let sls = path_sls("torus-4x4", "qos TRUE\n", Some(&policy));
    assert_eq!(sls, BTreeSet::from([3, 5]));
}

/// On every VL ibsim's ports run (8 on the first sweep), each destination's layer replaces the
/// policy's SL: the 16 CAs take layers 0-7 in turn, switches layer 0.
#[test]
fn nue_path_sls_on_all_vls() {
    let policy = two_level_policy(3, 5);
    let sls = path_sls("torus-4x4", LAYERS[1].1, Some(&policy));
    assert_eq!(sls, (0..8).collect());
}

#[test]
fn nue_path_sls_on_two_vls() {
    let sls = path_sls("dragonfly", LAYERS[2].1, None);
    assert_eq!(sls, BTreeSet::from([0, 1]));
}

/// Nue writes no SL2VL table: with qos off neither SM writes one; with qos on both write the
/// QoS manager's, whatever the layers.
#[test]
fn nue_leaves_the_qos_managers_sl2vl_tables() {
    for (layers, options) in LAYERS {
        let dir = TestDir::new(&format!("sl2vl-nue-{layers}"));
        let fabric = layered("torus-4x4", &dir).unwrap();
        let options = format!("routing_engine nue\n{options}");
        let log = sl2vls_match_opensm(&fabric, &options, &dir);
        assert!(log.contains("nue tables configured"), "{log}");
    }
}
