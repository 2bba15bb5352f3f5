//! The balancing step's options against OpenSM 3.3.23 (`osm_switch_recommend_path`), compared
//! LFT by LFT as `ibqos_tests::lfts` reads them from ibsim: minhop with an LMC, and on
//! switch GUIDs beyond one byte, through `ibqos sm --once` end to end.

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
fn minhop_on_vendor_switch_guids() {
    let dir = TestDir::new("routing-balance-vendor-guids");
    minhop_end_to_end(&uneven_tree(&dir, Some(VENDOR_SWITCH_GUIDS)), "", &dir);
}
