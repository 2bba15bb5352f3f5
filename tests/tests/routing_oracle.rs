//! The routing engines against OpenSM 3.3.23: every switch's forwarding table, read back with
//! ibroute from ibsim after `ibqos sm --once` and after `opensm -o` with the same opensm.conf,
//! compared by switch and destination GUID (see `ibqos_tests::lfts`).

use ibqos_tests::TestDir;
use ibqos_tests::lfts::lfts_match_opensm;
use ibqos_tests::scenario::{Fabric, testdata};

#[test]
fn minhop_on_fat_tree_16() {
    let dir = TestDir::new("routing-minhop-fat-tree-16");
    let fabric = Fabric::load("fat-tree-16", &testdata("fat-tree-16.net")).unwrap();
    lfts_match_opensm(&fabric, "routing_engine minhop\n", &dir);
}

