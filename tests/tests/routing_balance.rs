//! The balancing step's options against OpenSM 3.3.23 (`osm_switch_recommend_path`): minhop with
//! an LMC, port shifting, scattered ports and a GUID routing order, compared LFT by LFT as
//! `ibqos_tests::lfts` reads them from ibsim.
//!
//! Each option goes through opensm.conf and `ibqos sm --once` end to end on one tree at least.
//! To cover more trees cheaply, the other tests route the net file with the fabric crate's
//! minhop and the same `RoutingOptions`, and compare its tables with the ones OpenSM leaves on
//! ibsim (`engine_matches_opensm`).

use std::path::Path;

use ibqos_fabric::PortRef;
use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::{RoutingOptions, minhop};
use ibqos_tests::TestDir;
use ibqos_tests::lfts::{addressed, compare_tables, lfts_match_opensm, opensm_tables, tables_of};
use ibqos_tests::readback::Failures;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::trees::tree;

/// minhop on `fabric` with `options` added to opensm.conf, through `ibqos sm --once`.
fn minhop_end_to_end(fabric: &Fabric, options: &str, dir: &TestDir) {
    lfts_match_opensm(fabric, &format!("routing_engine minhop\n{options}"), dir);
}

/// The lines of a guid2lid file (`GUID FIRST LAST`), sorted: OpenSM writes them in hash order.
fn guid2lid(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// minhop with `lmc` on `fabric`: each end port's LIDs spread over the paths as OpenSM spreads
/// them, and both SMs hand out the same LIDs (2^lmc aligned ones to a CA, one to a switch).
fn lmc_matches_opensm(fabric: &Fabric, lmc: u8, dir: &TestDir) {
    minhop_end_to_end(fabric, &format!("lmc {lmc}\n"), dir);
    assert_eq!(
        guid2lid(&dir.subdir("ibqos-cache").join("guid2lid")),
        guid2lid(&dir.subdir("opensm").join("cache/guid2lid")),
        "{}: ibqos's LIDs (left) and OpenSM's",
        fabric.name
    );
}

fn lmc_2_on(name: &str) {
    let dir = TestDir::new(&format!("routing-balance-lmc2-{name}"));
    let fabric = tree(name, &dir).unwrap();
    lmc_matches_opensm(&fabric, 2, &dir);
}

#[test]
fn lmc_2_on_fat_tree_16() {
    lmc_2_on("fat-tree-16");
}

#[test]
fn lmc_2_on_fat_tree_648() {
    lmc_2_on("fat-tree-648");
}

#[test]
fn lmc_2_on_three_level() {
    lmc_2_on("three-level");
}

#[test]
fn lmc_2_on_wide() {
    lmc_2_on("wide");
}

#[test]
fn lmc_2_on_degraded() {
    lmc_2_on("degraded");
}

/// Two spines and three leaves, each leaf with two parallel links to spine SA, one to SB and
/// four hosts. With more LIDs per port than a leaf has spines, every spine a LID could go to
/// is already used, and OpenSM breaks the tie by how many LIDs of that port each spine got:
/// the symmetric trees never reach that rule.
///
/// With `switch_guids` the switches (SA, SB, L0, L1, L2) get those GUIDs rather than ibsim's.
fn uneven_tree(dir: &TestDir, switch_guids: Option<[u64; 5]>) -> Fabric {
    const LEAVES: usize = 3;
    const HOSTS: usize = 4;
    let guid =
        |i: usize| switch_guids.map_or(String::new(), |g| format!("switchguid={:#x}\n", g[i]));
    let mut net = format!("{}Switch\t8 \"SA\"\n", guid(0));
    for l in 0..LEAVES {
        net += &format!(
            "[{}]\t\"L{l}\"[1]\n[{}]\t\"L{l}\"[2]\n",
            2 * l + 1,
            2 * l + 2
        );
    }
    net += &format!("\n{}Switch\t8 \"SB\"\n", guid(1));
    for l in 0..LEAVES {
        net += &format!("[{}]\t\"L{l}\"[3]\n", l + 1);
    }
    for l in 0..LEAVES {
        net += &format!("\n{}Switch\t8 \"L{l}\"\n", guid(2 + l));
        net += &format!("[1]\t\"SA\"[{}]\n[2]\t\"SA\"[{}]\n", 2 * l + 1, 2 * l + 2);
        net += &format!("[3]\t\"SB\"[{}]\n", l + 1);
        for h in 0..HOSTS {
            net += &format!("[{}]\t\"H{l}_{h}\"[1]\n", h + 4);
        }
    }
    for l in 0..LEAVES {
        for h in 0..HOSTS {
            net += &format!("\nHca\t1 \"H{l}_{h}\"\n[1]\t\"L{l}\"[{}]\n", h + 4);
        }
    }
    let path = dir.subdir("trees").join("uneven.net");
    std::fs::write(&path, net).unwrap();
    Fabric::load("uneven", &path).unwrap()
}

/// Switch GUIDs that differ in more than their last byte, as vendors' do. OpenSM orders GUIDs
/// by their bytes from the last (0x..0100 before 0x..00ff), not numerically: here the leaves,
/// tied on hosts, are routed L1, L2, L0 rather than L1, L0, L2.
const VENDOR_SWITCH_GUIDS: [u64; 5] = [
    0x0002_c903_0000_0100,
    0x0002_c903_0000_00ff,
    0x0002_c903_0000_01fe,
    0x0002_c903_0000_0002,
    0x0002_c903_0000_02aa,
];

#[test]
fn lmc_2_on_uneven_spines() {
    let dir = TestDir::new("routing-balance-lmc2-uneven");
    lmc_matches_opensm(&uneven_tree(&dir, None), 2, &dir);
}

#[test]
fn lmc_3_on_uneven_spines() {
    let dir = TestDir::new("routing-balance-lmc3-uneven");
    lmc_matches_opensm(&uneven_tree(&dir, None), 3, &dir);
}

#[test]
fn minhop_on_vendor_switch_guids() {
    let dir = TestDir::new("routing-balance-vendor-guids");
    minhop_end_to_end(&uneven_tree(&dir, Some(VENDOR_SWITCH_GUIDS)), "", &dir);
}

/// The fabric crate's minhop with `routing` routes `fabric` (with `lmc`) as OpenSM does with
/// `conf` (the same options as opensm.conf lines).
fn engine_matches_opensm(
    fabric: &Fabric,
    lmc: u8,
    conf: &str,
    routing: &RoutingOptions,
    dir: &TestDir,
) {
    let conf = format!("routing_engine minhop\nlmc {lmc}\n{conf}");
    let (oracle, _) = opensm_tables(fabric, &conf, dir).unwrap();
    let topology = addressed(fabric, lmc);
    let ours = tables_of(&topology, &minhop(&topology, routing).unwrap());
    let mut failures = Failures::new(format!("{} with {conf:?}", fabric.name));
    compare_tables(&mut failures, &ours, &oracle);
    failures.assert_none();
}

fn shifting() -> RoutingOptions {
    RoutingOptions {
        port_shifting: true,
        ..RoutingOptions::default()
    }
}

fn port_shifting_on(name: &str) {
    let dir = TestDir::new(&format!("routing-balance-shift-{name}"));
    let fabric = tree(name, &dir).unwrap();
    engine_matches_opensm(&fabric, 0, "port_shifting TRUE\n", &shifting(), &dir);
}

#[test]
fn port_shifting_on_fat_tree_16() {
    port_shifting_on("fat-tree-16");
}

#[test]
fn port_shifting_on_fat_tree_648() {
    port_shifting_on("fat-tree-648");
}

#[test]
fn port_shifting_on_three_level() {
    port_shifting_on("three-level");
}

/// Shifting with LIDs after the base ones: OpenSM searches the candidates again with the
/// system and node flags of its first search, stale ones included.
#[test]
fn port_shifting_with_lmc_2_on_uneven_spines() {
    let dir = TestDir::new("routing-balance-shift-lmc2-uneven");
    let fabric = uneven_tree(&dir, None);
    engine_matches_opensm(&fabric, 2, "port_shifting TRUE\n", &shifting(), &dir);
}

fn scatter(seed: u32) -> RoutingOptions {
    RoutingOptions {
        scatter_ports: seed,
        ..RoutingOptions::default()
    }
}

fn scatter_ports_on(name: &str, seed: u32, lmc: u8) {
    let dir = TestDir::new(&format!("routing-balance-scatter{seed}-lmc{lmc}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    let conf = format!("scatter_ports {seed}\n");
    engine_matches_opensm(&fabric, lmc, &conf, &scatter(seed), &dir);
}

#[test]
fn scatter_ports_7_on_fat_tree_16() {
    scatter_ports_on("fat-tree-16", 7, 0);
}

#[test]
fn scatter_ports_7_on_fat_tree_648() {
    scatter_ports_on("fat-tree-648", 7, 0);
}

#[test]
fn scatter_ports_12345_on_three_level() {
    scatter_ports_on("three-level", 12345, 0);
}

/// The most hosts of the two-level trees, so the most draws.
#[test]
fn scatter_ports_12345_on_wide() {
    scatter_ports_on("wide", 12345, 0);
}

/// OpenSM draws for the switches, and for the destinations on each, in its GUID order.
#[test]
fn scatter_ports_7_on_vendor_switch_guids() {
    let dir = TestDir::new("routing-balance-scatter-vendor-guids");
    let fabric = uneven_tree(&dir, Some(VENDOR_SWITCH_GUIDS));
    engine_matches_opensm(&fabric, 0, "scatter_ports 7\n", &scatter(7), &dir);
}

/// Only base LIDs scatter; the LIDs after them follow the LMC rules.
#[test]
fn scatter_ports_7_with_lmc_2_on_fat_tree_16() {
    scatter_ports_on("fat-tree-16", 7, 2);
}

/// The port GUIDs of the CAs `names`, in that order.
fn port_guids(fabric: &Fabric, names: &[&str]) -> Vec<u64> {
    let topology = parse_net_file(&fabric.netfile).unwrap().topology;
    names
        .iter()
        .map(|name| {
            let node = topology.node_by_name(name).unwrap();
            topology.port(PortRef::new(node, 1)).unwrap().guid
        })
        .collect()
}

/// A routing order file: four CA ports from different leaves, last ones first, then a GUID no
/// port has and one listed again, both of which OpenSM passes over.
fn routing_order(fabric: &Fabric, dir: &TestDir) -> (String, Vec<u64>) {
    let mut guids = port_guids(fabric, &["H3_3", "H1_2", "H2_0", "H0_1"]);
    guids.extend([0x0000_dead_beef_0001, guids[1]]);
    let path = dir.subdir("guids").join("routing-order");
    let text: String = guids.iter().map(|g| format!("{g:#018x}\n")).collect();
    std::fs::write(&path, text).unwrap();
    (
        format!("guid_routing_order_file {}\n", path.display()),
        guids,
    )
}

#[test]
fn guid_routing_order_on_fat_tree_16() {
    let dir = TestDir::new("routing-balance-order-fat-tree-16");
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let (conf, guids) = routing_order(&fabric, &dir);
    let routing = RoutingOptions {
        guid_routing_order: Some(guids),
        ..RoutingOptions::default()
    };
    engine_matches_opensm(&fabric, 0, &conf, &routing, &dir);
}

/// The ports of the order file scatter too, unless `guid_routing_order_no_scatter` says not.
fn ordered_and_scattered(no_scatter: bool) {
    let dir = TestDir::new(&format!("routing-balance-order-scatter-{no_scatter}"));
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let (conf, guids) = routing_order(&fabric, &dir);
    let flag = if no_scatter { "TRUE" } else { "FALSE" };
    let conf = format!("{conf}scatter_ports 7\nguid_routing_order_no_scatter {flag}\n");
    let routing = RoutingOptions {
        guid_routing_order: Some(guids),
        guid_routing_order_no_scatter: no_scatter,
        scatter_ports: 7,
        ..RoutingOptions::default()
    };
    engine_matches_opensm(&fabric, 0, &conf, &routing, &dir);
}

#[test]
fn guid_routing_order_scattered_on_fat_tree_16() {
    ordered_and_scattered(false);
}

#[test]
fn guid_routing_order_no_scatter_on_fat_tree_16() {
    ordered_and_scattered(true);
}

/// The options above through opensm.conf and `ibqos sm --once`.
fn end_to_end(label: &str, conf: &str) {
    let dir = TestDir::new(&format!("routing-balance-e2e-{label}"));
    let fabric = tree("fat-tree-16", &dir).unwrap();
    minhop_end_to_end(&fabric, conf, &dir);
}

#[test]
fn port_shifting_end_to_end() {
    end_to_end("shift", "port_shifting TRUE\n");
}

#[test]
fn scatter_ports_end_to_end() {
    end_to_end("scatter", "scatter_ports 7\n");
}

#[test]
fn guid_routing_order_end_to_end() {
    let dir = TestDir::new("routing-balance-e2e-order");
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let (conf, _) = routing_order(&fabric, &dir);
    minhop_end_to_end(&fabric, &conf, &dir);
}
