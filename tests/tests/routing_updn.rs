//! up*/down* and down*/up* against OpenSM 3.3.23's `updn` and `dnup`: every switch's forwarding
//! table, compared by switch and destination GUID (see `ibqos_tests::lfts`).
//!
//! Most tests run `ibqos sm --once` and `opensm -o` with the same opensm.conf. The options
//! (`root_guid_file`, `connect_roots`, `lmc`) are also checked a step closer in, on more trees:
//! OpenSM routes the served fabric, and the engine routes the same net file in-process with the
//! same options and OpenSM's LIDs. That keeps the engine's parity apart from how the SM reads
//! the options and hands out LIDs.

use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::{DownUp, Engine, RoutingOptions, UpDown};
use ibqos_qos::VlCount;
use ibqos_tests::TestDir;
use ibqos_tests::lfts::{
    compare_tables, destinations, lfts_match_opensm, opensm_tables, tables_of, with_opensm_lids,
};
use ibqos_tests::readback::Failures;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::trees::tree;

/// `engine` (`updn` or `dnup`) through the SM on the tree `name` of `scripts/routing-trees`.
fn sm_on(engine: &str, name: &str) -> String {
    let dir = TestDir::new(&format!("routing-{engine}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    lfts_match_opensm(&fabric, &format!("routing_engine {engine}\n"), &dir)
}

/// OpenSM routed with `engine` itself, not with a fallback.
fn routed_by(log: &str, engine: &str) -> bool {
    log.contains(&format!("{engine} tables configured"))
}

#[test]
fn updn_on_fat_tree_16() {
    let log = sm_on("updn", "fat-tree-16");
    assert!(routed_by(&log, "updn"), "{log}");
}

#[test]
fn updn_on_fat_tree_648() {
    assert!(routed_by(&sm_on("updn", "fat-tree-648"), "updn"));
}

#[test]
fn updn_on_three_level() {
    assert!(routed_by(&sm_on("updn", "three-level"), "updn"));
}

#[test]
fn updn_on_wide() {
    assert!(routed_by(&sm_on("updn", "wide"), "updn"));
}

#[test]
fn updn_on_degraded() {
    assert!(routed_by(&sm_on("updn", "degraded"), "updn"));
}

#[test]
fn dnup_on_fat_tree_16() {
    assert!(routed_by(&sm_on("dnup", "fat-tree-16"), "dnup"));
}

#[test]
fn dnup_on_fat_tree_648() {
    assert!(routed_by(&sm_on("dnup", "fat-tree-648"), "dnup"));
}

#[test]
fn dnup_on_three_level() {
    assert!(routed_by(&sm_on("dnup", "three-level"), "dnup"));
}

#[test]
fn dnup_on_wide() {
    assert!(routed_by(&sm_on("dnup", "wide"), "dnup"));
}

#[test]
fn dnup_on_degraded() {
    assert!(routed_by(&sm_on("dnup", "degraded"), "dnup"));
}

/// dnup on a ring, every switch a leaf: all ranks equal, so no step is refused.
#[test]
fn dnup_on_a_ring() {
    let dir = TestDir::new("routing-dnup-ring");
    let ring = ibqos_fabric::generate::ring(6, 1).unwrap();
    let fabric = Fabric::generated("ring", &ring, dir.path()).unwrap();
    let log = lfts_match_opensm(&fabric, "routing_engine dnup\n", &dir);
    assert!(routed_by(&log, "dnup"), "{log}");
}

/// Two spines over three leaves, L0 and L2 also linked to each other: S0's LID is two hops from
/// L2 only through L0, a step between leaves after one down from the spine. dnup labels steps
/// between equal ranks neither up nor down, so it takes that path.
const CROSS_LINKED: &str = "\
switchguid=0x200000
Switch\t3\t\"S0\"
[1]\t\"L0\"[2]
[2]\t\"L1\"[2]

switchguid=0x200001
Switch\t3\t\"S1\"
[1]\t\"L1\"[3]
[2]\t\"L2\"[2]

switchguid=0x200002
Switch\t4\t\"L0\"
[1]\t\"H0\"[1]
[2]\t\"S0\"[1]
[3]\t\"L2\"[3]

switchguid=0x200003
Switch\t4\t\"L1\"
[1]\t\"H1\"[1]
[2]\t\"S0\"[2]
[3]\t\"S1\"[1]

switchguid=0x200004
Switch\t4\t\"L2\"
[1]\t\"H2\"[1]
[2]\t\"S1\"[2]
[3]\t\"L0\"[3]

caguid=0x100000
Ca\t1\t\"H0\"
[1]\t\"L0\"[1]

caguid=0x100002
Ca\t1\t\"H1\"
[1]\t\"L1\"[1]

caguid=0x100004
Ca\t1\t\"H2\"
[1]\t\"L2\"[1]
";

#[test]
fn dnup_between_cross_linked_leaves() {
    let dir = TestDir::new("routing-dnup-cross-linked");
    let netfile = dir.path().join("cross-linked.net");
    std::fs::write(&netfile, CROSS_LINKED).unwrap();
    let fabric = Fabric::load("cross-linked", &netfile).unwrap();
    let log = lfts_match_opensm(&fabric, "routing_engine dnup\n", &dir);
    assert!(routed_by(&log, "dnup"), "{log}");
}

/// A ring has no root by OpenSM's rule: updn fails and minhop routes, in both SMs.
#[test]
fn updn_without_roots_falls_back_to_minhop() {
    let dir = TestDir::new("routing-updn-ring");
    let ring = ibqos_fabric::generate::ring(6, 1).unwrap();
    let fabric = Fabric::generated("ring", &ring, dir.path()).unwrap();
    let log = lfts_match_opensm(&fabric, "routing_engine updn,minhop\n", &dir);
    assert!(log.contains("no root nodes were found"), "{log}");
    assert!(routed_by(&log, "minhop"), "{log}");
}

/// OpenSM with `conf` on a served `fabric` leaves the tables `engine` computes in-process with
/// `options` on the LIDs OpenSM gave. Returns OpenSM's log.
fn engine_matches_opensm(
    fabric: &Fabric,
    engine: &dyn Engine,
    conf: &str,
    options: &RoutingOptions,
    dir: &TestDir,
) -> String {
    let what = format!("{} with {conf:?}", fabric.name);
    let (oracle, log) = opensm_tables(fabric, conf, dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let owners = destinations(&dir.subdir("opensm").join("cache/guid2lid")).unwrap();
    let topo = with_opensm_lids(fabric, &owners);
    let routes = engine
        .unicast(&topo, options, VlCount::Fifteen)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .routes;
    let ours = tables_of(&topo, &routes);
    let mut f = Failures::new(what);
    compare_tables(&mut f, &ours, &oracle);
    f.assert_none();
    log
}

/// The NodeGUIDs of `fabric`'s switches whose names start with `prefix`.
fn switch_guids(fabric: &Fabric, prefix: &str) -> Vec<u64> {
    let topo = parse_net_file(&fabric.netfile).unwrap().topology;
    topo.switches()
        .filter(|(_, n)| n.name.starts_with(prefix))
        .map(|(_, n)| n.guid)
        .collect()
}

/// `root_guid_file` naming `guids` (and `extra` lines after them), written into `dir`; the
/// opensm.conf text that names it.
fn root_file(dir: &TestDir, guids: &[u64], extra: &str) -> String {
    let lines: String = guids.iter().map(|g| format!("{g:#018x}\n")).collect();
    let path = dir.path().join("root-guids.txt");
    std::fs::write(&path, format!("{lines}{extra}")).unwrap();
    format!("root_guid_file {}\n", path.display())
}

/// updn with a root file on the tree `name`: the switches named `prefix`*, and a CA's GUID,
/// which OpenSM ignores (it looks roots up among the switches only).
fn updn_with_roots(name: &str, prefix: &str, connect_roots: bool) {
    let dir = TestDir::new(&format!(
        "routing-updn-roots-{name}-{prefix}-{connect_roots}"
    ));
    let fabric = tree(name, &dir).unwrap();
    let roots = switch_guids(&fabric, prefix);
    assert!(!roots.is_empty());
    let ca = parse_net_file(&fabric.netfile)
        .unwrap()
        .topology
        .nodes()
        .find(|(_, n)| !n.is_switch())
        .map(|(_, n)| n.guid)
        .unwrap();
    let mut conf = format!(
        "routing_engine updn\n{}",
        root_file(&dir, &roots, &format!("{ca:#x}\n"))
    );
    if connect_roots {
        conf.push_str("connect_roots TRUE\n");
    }
    let options = RoutingOptions {
        root_guids: Some([&roots[..], &[ca]].concat()),
        connect_roots,
        ..RoutingOptions::default()
    };
    let log = engine_matches_opensm(&fabric, &UpDown, &conf, &options, &dir);
    assert!(routed_by(&log, "updn"), "{log}");
}

#[test]
fn updn_with_the_spines_as_roots_on_fat_tree_16() {
    updn_with_roots("fat-tree-16", "S", false);
}

/// A leaf as the only root: the tables differ from those of the spines.
#[test]
fn updn_with_a_leaf_as_root_on_fat_tree_16() {
    updn_with_roots("fat-tree-16", "L0", false);
}

#[test]
fn updn_with_the_cores_as_roots_on_three_level() {
    updn_with_roots("three-level", "C", false);
}

#[test]
fn updn_with_a_leaf_as_root_on_wide() {
    updn_with_roots("wide", "L1", false);
}

#[test]
fn updn_with_connected_spines_on_fat_tree_16() {
    updn_with_roots("fat-tree-16", "S", true);
}

/// One root and `connect_roots`: OpenSM builds no min-hop matrix, and the search's row toward
/// the root is the same.
#[test]
fn updn_with_a_connected_leaf_on_three_level() {
    updn_with_roots("three-level", "E0_0", true);
}

#[test]
fn updn_with_a_leaf_as_root_on_degraded() {
    updn_with_roots("degraded", "L0", false);
}

/// `connect_roots` with detected roots: OpenSM keeps the min-hop rows toward them.
#[test]
fn updn_connect_roots_on_fat_tree_16() {
    let dir = TestDir::new("routing-updn-connect-fat-tree-16");
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let options = RoutingOptions {
        connect_roots: true,
        ..RoutingOptions::default()
    };
    let conf = "routing_engine updn\nconnect_roots TRUE\n";
    engine_matches_opensm(&fabric, &UpDown, conf, &options, &dir);
}

/// dnup's `connect_roots`: a second search that allows the refused turns at a price.
fn dnup_connect_roots_on(name: &str) {
    let dir = TestDir::new(&format!("routing-dnup-connect-{name}"));
    let fabric = tree(name, &dir).unwrap();
    let options = RoutingOptions {
        connect_roots: true,
        ..RoutingOptions::default()
    };
    let conf = "routing_engine dnup\nconnect_roots TRUE\n";
    let log = engine_matches_opensm(&fabric, &DownUp, conf, &options, &dir);
    assert!(routed_by(&log, "dnup"), "{log}");
}

#[test]
fn dnup_connect_roots_on_fat_tree_16() {
    dnup_connect_roots_on("fat-tree-16");
}

#[test]
fn dnup_connect_roots_on_three_level() {
    dnup_connect_roots_on("three-level");
}

/// `lmc 2`: each CA's four LIDs spread as OpenSM's balancing spreads them.
fn lmc_on(engine: &dyn Engine, name: &str) {
    let dir = TestDir::new(&format!("routing-{}-lmc-{name}", engine.name()));
    let fabric = tree(name, &dir).unwrap();
    let conf = format!("routing_engine {}\nlmc 2\n", engine.name());
    let log = engine_matches_opensm(&fabric, engine, &conf, &RoutingOptions::default(), &dir);
    assert!(routed_by(&log, engine.name()), "{log}");
}

#[test]
fn updn_lmc_2_on_fat_tree_16() {
    lmc_on(&UpDown, "fat-tree-16");
}

#[test]
fn dnup_lmc_2_on_fat_tree_16() {
    lmc_on(&DownUp, "fat-tree-16");
}

#[test]
fn updn_lmc_2_on_three_level() {
    lmc_on(&UpDown, "three-level");
}

#[test]
fn updn_lmc_2_on_fat_tree_648() {
    lmc_on(&UpDown, "fat-tree-648");
}

#[test]
fn updn_lmc_2_on_wide() {
    lmc_on(&UpDown, "wide");
}

#[test]
fn updn_lmc_2_on_degraded() {
    lmc_on(&UpDown, "degraded");
}

#[test]
fn dnup_lmc_2_on_three_level() {
    lmc_on(&DownUp, "three-level");
}

#[test]
fn dnup_lmc_2_on_fat_tree_648() {
    lmc_on(&DownUp, "fat-tree-648");
}

#[test]
fn dnup_lmc_2_on_wide() {
    lmc_on(&DownUp, "wide");
}

#[test]
fn dnup_lmc_2_on_degraded() {
    lmc_on(&DownUp, "degraded");
}

/// A ring of five with one root: its two farthest switches have equal ranks and are linked, so
/// the NodeGUID tie-break decides which way their link goes up.
#[test]
fn updn_with_a_root_on_a_ring_of_five() {
    let dir = TestDir::new("routing-updn-ring-root");
    let ring = ibqos_fabric::generate::ring(5, 2).unwrap();
    let fabric = Fabric::generated("ring-5", &ring, dir.path()).unwrap();
    let roots = switch_guids(&fabric, "S0");
    let conf = format!("routing_engine updn\n{}", root_file(&dir, &roots, ""));
    let options = RoutingOptions {
        root_guids: Some(roots),
        ..RoutingOptions::default()
    };
    let log = engine_matches_opensm(&fabric, &UpDown, &conf, &options, &dir);
    assert!(routed_by(&log, "updn"), "{log}");
}

/// `engine` through the SM on the wheel of fabric/data (a hub and a ring of leaves), on which
/// updn and minhop route some hosts apart: the fabric the simulator's engine tests use.
fn on_the_wheel(engine: &str) {
    let netfile = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/data/wheel.net");
    let dir = TestDir::new(&format!("routing-{engine}-wheel"));
    let fabric = Fabric::load("wheel", &netfile).unwrap();
    let log = lfts_match_opensm(&fabric, &format!("routing_engine {engine}\n"), &dir);
    assert!(routed_by(&log, engine), "{log}");
}

#[test]
fn updn_on_a_wheel() {
    on_the_wheel("updn");
}

#[test]
fn dnup_on_a_wheel() {
    on_the_wheel("dnup");
}

/// `lmc 2` through the SM: its LIDs and each CA's four routes.
#[test]
fn updn_lmc_2_through_the_sm_on_fat_tree_16() {
    let dir = TestDir::new("routing-updn-sm-lmc-fat-tree-16");
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let log = lfts_match_opensm(&fabric, "routing_engine updn\nlmc 2\n", &dir);
    assert!(routed_by(&log, "updn"), "{log}");
}

/// `root_guid_file` through the SM on the tree `name`, naming the switches `prefix`* and then
/// the lines `extra`.
fn root_file_through_the_sm(name: &str, prefix: &str, extra: &str) -> String {
    let dir = TestDir::new(&format!("routing-updn-sm-roots-{name}"));
    let fabric = tree(name, &dir).unwrap();
    let conf = format!(
        "routing_engine updn\n{}",
        root_file(&dir, &switch_guids(&fabric, prefix), extra)
    );
    let log = lfts_match_opensm(&fabric, &conf, &dir);
    assert!(routed_by(&log, "updn"), "{log}");
    log
}

/// A leaf as the only root.
#[test]
fn updn_root_file_through_the_sm() {
    root_file_through_the_sm("fat-tree-16", "L0", "");
}

/// A file OpenSM stops reading at a line that is no GUID: it keeps the leaf read before it and
/// detects the spines too.
#[test]
fn updn_root_file_that_fails_through_the_sm() {
    let log = root_file_through_the_sm("wide", "L1", "not-a-guid\n");
    assert!(log.contains("cannot parse root guids file"), "{log}");
}

/// `connect_roots` through the SM, for each engine.
#[test]
fn connect_roots_through_the_sm() {
    for engine in ["updn", "dnup"] {
        let dir = TestDir::new(&format!("routing-{engine}-sm-connect"));
        let fabric = tree("fat-tree-16", &dir).unwrap();
        let conf = format!("routing_engine {engine}\nconnect_roots TRUE\n");
        let log = lfts_match_opensm(&fabric, &conf, &dir);
        assert!(routed_by(&log, engine), "{log}");
    }
}

/// A root file that does not exist: OpenSM detects the roots.
#[test]
fn updn_missing_root_file_through_the_sm() {
    let dir = TestDir::new("routing-updn-sm-roots-missing");
    let fabric = tree("fat-tree-16", &dir).unwrap();
    let missing = dir.path().join("no-such-file");
    let conf = format!(
        "routing_engine updn\nroot_guid_file {}\n",
        missing.display()
    );
    let log = lfts_match_opensm(&fabric, &conf, &dir);
    assert!(routed_by(&log, "updn"), "{log}");
}
