//! The balancing step's options against OpenSM 3.3.23 (`osm_switch_recommend_path`), compared
//! LFT by LFT as `ibqos_tests::lfts` reads them from ibsim: minhop with an LMC, through
//! `ibqos sm --once` end to end.

use std::path::Path;

use ibqos_tests::TestDir;
use ibqos_tests::lfts::lfts_match_opensm;
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
