//! `ibqos lft-balance` against infiniband-diags' check_lft_balance: on a fresh ibsim after
//! `ibqos sm --once`, both report the routes per switch port of the same forwarding tables,
//! and agree on every port and verdict where both apply (see `ibqos_tests::lft_balance`).

use ibqos_fabric::generate::{fat_tree, ring};
use ibqos_tests::lft_balance::{DiagTools, Usage, check_lft_balance, compare_usage, ibqos_report};
use ibqos_tests::readback::Failures;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::trees::tree;
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Configures `fabric` with `ibqos sm --once` and `options` as opensm.conf (LMC `lmc`), then
/// holds `ibqos lft-balance` of the live fabric to check_lft_balance's report of it, which it
/// returns.
fn reports_agree(fabric: &Fabric, options: &str, lmc: u8, dir: &TestDir) -> Usage {
    let what = format!("{} with {options:?}", fabric.name);
    let tools = SimTools::require();
    let diags = DiagTools::require();
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    let conf = write_opensm_conf(&dir.subdir("conf"), options).unwrap();
    SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf)
        .run_up(&ibqos, &sim)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (oracle, switch_paths) =
        check_lft_balance(&diags, &sim, &fabric.query_node, &dir.subdir("diags"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    let ours =
        ibqos_report(&ibqos, &sim, &fabric.query_node).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut f = Failures::new(what);
    compare_usage(&mut f, &ours, &oracle, &switch_paths, 1 << lmc);
    f.assert_none();
    oracle
}

fn tree_reports_agree(name: &str, options: &str, lmc: u8) {
    let dir = TestDir::new(&format!("routing-report-{name}-lmc{lmc}"));
    let fabric = tree(name, &dir).unwrap();
    reports_agree(&fabric, options, lmc, &dir);
}

#[test]
fn fat_tree_16_as_check_lft_balance_counts_it() {
    tree_reports_agree("fat-tree-16", "", 0);
}

/// Every LID of an LMC range counts, on both sides: 4 per host. The SM aligns switch LIDs to the
/// LMC too, and check_lft_balance counts the switches' further LIDs, which ibqos does not.
#[test]
fn fat_tree_16_with_lmc_2() {
    tree_reports_agree("fat-tree-16", "lmc 2\n", 2);
}

#[test]
fn fat_tree_648_as_check_lft_balance_counts_it() {
    tree_reports_agree("fat-tree-648", "", 0);
}

/// A ring of four switches has two unbalanced ones under minhop: both say which.
#[test]
fn an_unbalanced_ring_as_check_lft_balance_counts_it() {
    let dir = TestDir::new("routing-report-ring");
    let topology = ring(4, 2).unwrap();
    let fabric = Fabric::generated("ring-4", &topology, dir.path()).unwrap();
    reports_agree(&fabric, "", 0, &dir);
}

/// With one host per leaf, each spine port carries one node's LIDs, and check_lft_balance takes
/// it for a host's own port and leaves it out; ibqos counts it, as a link between switches.
#[test]
fn a_port_between_switches_with_one_node_behind_it_is_skipped_by_check_lft_balance() {
    let dir = TestDir::new("routing-report-one-host-per-leaf");
    let topology = fat_tree(4, 2, 1, 8).unwrap();
    let fabric = Fabric::generated("one-host-per-leaf", &topology, dir.path()).unwrap();
    let oracle = reports_agree(&fabric, "", 0, &dir);
    let spines: Vec<&str> = oracle
        .values()
        .filter(|s| s.ports.is_empty())
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(spines, ["S0", "S1"], "{oracle:?}");
}
