//! `ibqos sm --once` with its native ibsim client, checked by infiniband-diags and against
//! OpenSM.
//!
//! Each test: a fresh ibsim of one fabric, one `ibqos sm --once --json` run, then smpquery and
//! ibroute read back every port and forwarding table (under ibsim's shim, at another CA). The run
//! must report the net file's node, switch and LID counts. Every linked port must be Active, and
//! every endport must hold a unique non-zero LID. From every CA port the forwarding tables must
//! lead to every endport (walked in the test from the ibroute dumps). OperVLs and HOQLife on every
//! port must equal what `opensm -o` programs with the same opensm.conf on a fresh ibsim of the same
//! fabric.
//!
//! The fabrics: two switches joined by two parallel links; the shared 16-host fat tree (4
//! leaves, 2 spines); a generated ring (a loop); a generated fat tree with three spines.

use ibqos_fabric::generate;
use ibqos_tests::TestDir;
use ibqos_tests::scenario::{Fabric, sm_matches_opensm, testdata};
use ibqos_tests::sm::SmFabric;

/// OpenSM's defaults: no opensm.conf options at all.
const DEFAULTS: &str = "";

/// A ring of five switches with two hosts each: every switch-to-switch route has two ways round.
fn ring(dir: &TestDir) -> Fabric {
    let topology = generate::ring(5, 2).unwrap();
    Fabric::generated("ring-5", &topology, dir.path()).unwrap()
}

/// Three leaves, three spines, two hosts per leaf, 8-port switches: three equal-cost paths
/// between leaves.
fn three_spine_fat_tree(dir: &TestDir) -> Fabric {
    let topology = generate::fat_tree(3, 3, 2, 8).unwrap();
    Fabric::generated("fat-tree-3x3", &topology, dir.path()).unwrap()
}

#[test]
fn two_switch_defaults() {
    let dir = TestDir::new("sm-two-switch");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    sm_matches_opensm(&fabric, SmFabric::Native, DEFAULTS, &dir);
}

#[test]
fn fat_tree_16_defaults() {
    let dir = TestDir::new("sm-fat-tree-16");
    let fabric = Fabric::load("fat-tree-16", &testdata("fat-tree-16.net")).unwrap();
    sm_matches_opensm(&fabric, SmFabric::Native, DEFAULTS, &dir);
}

#[test]
fn ring_defaults() {
    let dir = TestDir::new("sm-ring");
    sm_matches_opensm(&ring(&dir), SmFabric::Native, DEFAULTS, &dir);
}

#[test]
fn three_spine_fat_tree_defaults() {
    let dir = TestDir::new("sm-fat-tree-3x3");
    sm_matches_opensm(
        &three_spine_fat_tree(&dir),
        SmFabric::Native,
        DEFAULTS,
        &dir,
    );
}

/// Up/down routing on a fabric with loops: still every CA reaches every endport.
#[test]
fn three_spine_fat_tree_updn() {
    let dir = TestDir::new("sm-fat-tree-3x3-updn");
    let options = "routing_engine updn\n";
    sm_matches_opensm(&three_spine_fat_tree(&dir), SmFabric::Native, options, &dir);
}

/// `max_op_vls 3` (4 VLs) below ibsim's VLCap of 8, and a non-default switch-to-switch HOQLife:
/// both differ from ibsim's power-on values, so a port the SM skipped shows up.
#[test]
fn ring_four_vls_and_hoq_lifetime() {
    let dir = TestDir::new("sm-ring-vls");
    let options = "max_op_vls 3\nhead_of_queue_lifetime 0x0c\n";
    sm_matches_opensm(&ring(&dir), SmFabric::Native, options, &dir);
}

/// The SM at a managed switch's port 0 (a fat tree's first leaf): every route and link comes
/// up as from a CA, and OperVLs and HOQLife are OpenSM's from the same switch.
#[test]
fn fat_tree_16_from_a_switch() {
    let dir = TestDir::new("sm-fat-tree-16-at-switch");
    let fabric = Fabric::load("fat-tree-16", &testdata("fat-tree-16.net")).unwrap();
    let leaf = fabric
        .topology
        .node(&fabric.query_node)
        .and_then(|host| host.peer(1))
        .map(|(switch, _)| switch.to_owned())
        .unwrap();
    let fabric = Fabric {
        sm_node: leaf,
        ..fabric
    };
    sm_matches_opensm(&fabric, SmFabric::Native, DEFAULTS, &dir);
}
