//! Issue 33's fabrics with cycles (`scripts/routing-layered`) and the engines that route them
//! against OpenSM 3.3.23: every switch's forwarding table, read back with ibroute from ibsim after
//! `ibqos sm --once` and after `opensm -o` with the same opensm.conf, compared by switch and
//! destination GUID (see `ibqos_tests::lfts`).

use ibqos_fabric::generate::torus_2d;
use ibqos_tests::TestDir;
use ibqos_tests::lfts::lfts_match_opensm;
use ibqos_tests::path_sls::{PathSls, path_sls_match_opensm};
use ibqos_tests::sa::SmSetup;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::trees::{layered, tree};

/// The LFTs of `engine` on the fabric `name` of `scripts/routing-layered` equal OpenSM's, with
/// `options` added to opensm.conf, and OpenSM routed with `engine` itself.
fn engine_with(engine: &str, name: &str, options: &str) {
    let dir = TestDir::new(&format!("routing-{engine}-{name}"));
    let fabric = layered(name, &dir).unwrap();
    let options = format!("routing_engine {engine}\n{options}");
    routed_by(&lfts_match_opensm(&fabric, &options, &dir), engine);
}

fn engine_on(engine: &str, name: &str) {
    engine_with(engine, name, "");
}

/// The LFTs of `engine` on fat-tree-16 (of `scripts/routing-trees`) equal OpenSM's.
fn engine_on_fat_tree_16(engine: &str) {
    let dir = TestDir::new(&format!("routing-{engine}-fat-tree-16"));
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let options = format!("routing_engine {engine}\n");
    routed_by(&lfts_match_opensm(&fabric, &options, &dir), engine);
}

/// OpenSM routed with `engine` itself, not a fallback.
fn routed_by(log: &str, engine: &str) {
    assert!(
        log.contains(&format!("{engine} tables configured")),
        "OpenSM did not route with {engine}:\n{log}"
    );
}

/// minhop routes each fabric as OpenSM does: ibsim loads every file and OpenSM brings it up.
#[test]
fn minhop_on_torus_4x4() {
    engine_on("minhop", "torus-4x4");
}

#[test]
fn minhop_on_mesh_3x3() {
    engine_on("minhop", "mesh-3x3");
}

#[test]
fn minhop_on_dragonfly() {
    engine_on("minhop", "dragonfly");
}

#[test]
fn dor_on_torus_4x4() {
    engine_on("dor", "torus-4x4");
}

#[test]
fn dor_on_mesh_3x3() {
    engine_on("dor", "mesh-3x3");
}

#[test]
fn dor_on_dragonfly() {
    engine_on("dor", "dragonfly");
}

#[test]
fn dor_on_fat_tree_16() {
    engine_on_fat_tree_16("dor");
}

/// With LMC 2 DOR starts every LID's search at port 1 and spreads a destination's LIDs over the
/// parallel links of one dimension by remote port: a 2x4 torus, whose x dimension is two
/// parallel links, with two hosts on each switch.
#[test]
fn dor_with_lmc_on_parallel_links() {
    let dir = TestDir::new("routing-dor-lmc");
    let torus = torus_2d(2, 4, 2).unwrap();
    let fabric = Fabric::generated("torus-2x4", &torus, &dir.subdir("net")).unwrap();
    let log = lfts_match_opensm(&fabric, "routing_engine dor\nlmc 2\n", &dir);
    routed_by(&log, "dor");
}

/// Two switches joined by three parallel links, two hosts on each. With LMC 1, the second LID of
/// the second host ties on all three links: DOR searches from port 1 and takes it, where a search
/// from after the previous LID's port (minhop's) would take port 3.
#[test]
fn dor_searches_from_port_1_for_every_lid() {
    let dir = TestDir::new("routing-dor-triple");
    let mut net = String::new();
    for (me, peer) in [("SA", "SB"), ("SB", "SA")] {
        net += &format!("Switch\t8 \"{me}\"\n");
        for p in 1..=3 {
            net += &format!("[{p}]\t\"{peer}\"[{p}]\n");
        }
        for h in 0..2 {
            net += &format!("[{}]\t\"H{me}_{h}\"[1]\n", h + 4);
        }
        net += "\n";
    }
    for me in ["SA", "SB"] {
        for h in 0..2 {
            net += &format!("Hca\t1 \"H{me}_{h}\"\n[1]\t\"{me}\"[{}]\n\n", h + 4);
        }
    }
    let path = dir.subdir("net").join("triple.net");
    std::fs::write(&path, net).unwrap();
    let fabric = Fabric::load("triple", &path).unwrap();
    let log = lfts_match_opensm(&fabric, "routing_engine dor\nlmc 1\n", &dir);
    routed_by(&log, "dor");
}

#[test]
fn lash_on_torus_4x4() {
    engine_on("lash", "torus-4x4");
}

#[test]
fn lash_on_mesh_3x3() {
    engine_on("lash", "mesh-3x3");
}

#[test]
fn lash_on_dragonfly() {
    engine_on("lash", "dragonfly");
}

/// On a fat tree LASH's routes are DOR's (one lane, no cycle).
#[test]
fn lash_on_fat_tree_16() {
    engine_on_fat_tree_16("lash");
}

/// Every pair's PathRecord SL under LASH equals OpenSM's, on the fabric `name` with `options`.
/// Returns the SLs.
fn lash_sls(name: &str, options: &str) -> PathSls {
    engine_sls("lash", name, options)
}

/// Every pair's PathRecord SL under `engine` equals OpenSM's, on the fabric `name` with
/// `options`. Returns the SLs.
fn engine_sls(engine: &str, name: &str, options: &str) -> PathSls {
    let dir = TestDir::new(&format!("path-sl-{engine}-{name}"));
    let fabric = layered(name, &dir).unwrap();
    let options = format!("routing_engine {engine}\n{options}");
    let setup = SmSetup {
        options: &options,
        ..SmSetup::default()
    };
    path_sls_match_opensm(&fabric, &setup, &dir)
}

/// The SLs that LASH hands out on the torus: more than one lane, so the comparison sees lanes.
fn lanes_of(sls: &PathSls) -> std::collections::BTreeSet<u8> {
    sls.values().flatten().flatten().copied().collect()
}

#[test]
fn lash_path_sls_on_torus_4x4() {
    let sls = lash_sls("torus-4x4", "");
    assert!(lanes_of(&sls).len() > 1, "{:?}", lanes_of(&sls));
}

/// With qos on the policy's SL (the default level's) gives way to the lane.
#[test]
fn lash_path_sls_on_torus_4x4_with_qos() {
    let sls = lash_sls("torus-4x4", "qos TRUE\n");
    assert!(lanes_of(&sls).len() > 1, "{:?}", lanes_of(&sls));
}

/// DOR has no path SL of its own: every pair keeps the policy's, as on OpenSM.
#[test]
fn dor_path_sls_on_torus_4x4() {
    engine_sls("dor", "torus-4x4", "qos TRUE\n");
}

#[test]
fn lash_path_sls_on_mesh_3x3() {
    lash_sls("mesh-3x3", "");
}

#[test]
fn lash_path_sls_on_dragonfly() {
    lash_sls("dragonfly", "");
}

/// `lash_start_vl` shifts every lane: the SLs start at 1, on both SMs.
#[test]
fn lash_path_sls_from_lash_start_vl() {
    let sls = lash_sls("torus-4x4", "lash_start_vl 1\n");
    assert_eq!(lanes_of(&sls).first(), Some(&1), "{:?}", lanes_of(&sls));
}

/// With LMC 1 every LID of a port follows its switch pair's route.
#[test]
fn lash_with_lmc_on_torus_4x4() {
    engine_with("lash", "torus-4x4", "lmc 1\n");
}

/// `scatter_ports` seeds glibc's generator before each routing, and LASH's balancing draws from
/// it: the lanes follow the seed, on both SMs.
#[test]
fn lash_path_sls_with_scatter_ports() {
    lash_sls("dragonfly", "scatter_ports 7\n");
}
