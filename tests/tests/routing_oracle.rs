//! The routing engines against OpenSM 3.3.23: every switch's forwarding table, read back with
//! ibroute from ibsim after `ibqos sm --once` and after `opensm -o` with the same opensm.conf,
//! compared by switch and destination GUID (see `ibqos_tests::lfts`).

use ibqos_tests::TestDir;
use ibqos_tests::lfts::lfts_match_opensm;
use ibqos_tests::trees::tree;

/// minhop, OpenSM's default, on each tree of `scripts/routing-trees`.
fn minhop_on(name: &str) {
    let dir = TestDir::new(&format!("routing-minhop-{name}"));
    let fabric = tree(name, &dir).unwrap();
    lfts_match_opensm(&fabric, "routing_engine minhop\n", &dir);
}

#[test]
fn minhop_on_fat_tree_16() {
    minhop_on("fat-tree-16");
}

#[test]
fn minhop_on_fat_tree_648() {
    minhop_on("fat-tree-648");
}

#[test]
fn minhop_on_three_level() {
    minhop_on("three-level");
}

#[test]
fn minhop_on_wide() {
    minhop_on("wide");
}

#[test]
fn minhop_on_degraded() {
    minhop_on("degraded");
}
