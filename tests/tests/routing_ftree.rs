//! ftree against OpenSM 3.3.23's fat-tree engine: every switch's forwarding table, read back with
//! ibroute from ibsim after `ibqos sm --once` and after `opensm -o` with the same opensm.conf,
//! compared by switch and destination GUID (see `ibqos_tests::lfts`).

use ibqos_fabric::Topology;
use ibqos_fabric::routing::{RoutingOptions, ftree};
use ibqos_tests::TestDir;
use ibqos_tests::lfts::{
    Logs, addressed, compare_tables, lfts_match_opensm_logs, opensm_tables, tables_of,
};
use ibqos_tests::readback::Failures;
use ibqos_tests::trees::tree;

/// Tree `name` configured by both SMs with opensm.conf `options`; their logs.
fn routed(name: &str, test: &str, options: &str) -> Logs {
    let dir = TestDir::new(&format!("routing-ftree-{test}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    lfts_match_opensm_logs(&fabric, options, &dir)
}

/// ftree refused the fabric: OpenSM logs `reason` and routes with `fallback`; ibqos logs the
/// same reason for ftree and routes with `fallback` too.
fn refused(logs: &Logs, reason: &str, fallback: &str) {
    let opensm = format!("{fallback} tables configured on all switches");
    assert!(
        logs.opensm.contains(reason),
        "OpenSM did not say {reason:?}:\n{}",
        logs.opensm
    );
    assert!(
        logs.opensm.contains(&opensm),
        "OpenSM did not fall back to {fallback}:\n{}",
        logs.opensm
    );
    let ibqos = logs
        .ibqos
        .lines()
        .find(|l| l.contains("fell back") && l.contains("ftree"))
        .unwrap_or_else(|| panic!("ibqos did not say ftree failed:\n{}", logs.ibqos));
    assert!(ibqos.contains(reason), "ibqos gave another reason: {ibqos}");
    assert!(
        ibqos.contains(fallback),
        "ibqos did not fall back to {fallback}: {ibqos}"
    );
}

#[test]
fn ftree_on_fat_tree_16() {
    routed("fat-tree-16", "ftree", "routing_engine ftree\n").assert_routed_by("ftree");
}

#[test]
fn ftree_on_fat_tree_648() {
    routed("fat-tree-648", "ftree", "routing_engine ftree\n").assert_routed_by("ftree");
}

#[test]
fn ftree_on_three_level() {
    routed("three-level", "ftree", "routing_engine ftree\n").assert_routed_by("ftree");
}

#[test]
fn ftree_on_wide() {
    routed("wide", "ftree", "routing_engine ftree\n").assert_routed_by("ftree");
}

/// `connect_roots`: the spines reach each other through the last leaf, as OpenSM routes them.
#[test]
fn ftree_connects_the_roots_on_fat_tree_16_and_three_level() {
    for name in ["fat-tree-16", "three-level"] {
        let logs = routed(
            name,
            "connect-roots",
            "routing_engine ftree\nconnect_roots TRUE\n",
        );
        logs.assert_routed_by("ftree");
    }
}

/// L0 has lost an uplink: its one up group against L1's two is no fat tree, and minhop routes.
#[test]
fn ftree_refuses_the_degraded_tree() {
    let logs = routed("degraded", "ftree", "routing_engine ftree\n");
    refused(
        &logs,
        "ERR AB09: Different number of upward port groups",
        "minhop",
    );
}

/// The next engine of the list routes in ftree's place.
#[test]
fn ftree_then_updn_on_the_degraded_tree() {
    let logs = routed("degraded", "list", "routing_engine ftree,updn\n");
    refused(
        &logs,
        "ERR AB09: Different number of upward port groups",
        "updn",
    );
}

/// With `no_fallback` and a tree ftree accepts, ftree routes as without it.
#[test]
fn ftree_no_fallback_on_fat_tree_16() {
    let logs = routed(
        "fat-tree-16",
        "no-fallback",
        "routing_engine ftree,no_fallback\n",
    );
    logs.assert_routed_by("ftree");
}

/// ftree routes no LMC > 0: both SMs fall back to minhop.
#[test]
fn ftree_refuses_lmc_2() {
    let logs = routed("fat-tree-16", "lmc", "routing_engine ftree\nlmc 2\n");
    refused(
        &logs,
        "LMC > 0 is not supported by fat-tree routing",
        "minhop",
    );
}

/// A GUID file for OpenSM: the GUIDs of the named nodes' first ports (`port`: 1 for CA ports,
/// 0 for switches, whose NodeGUID is their port GUID).
struct GuidFile {
    option: &'static str,
    nodes: &'static [&'static str],
}

impl GuidFile {
    fn guids(&self, topo: &Topology) -> Vec<u64> {
        self.nodes
            .iter()
            .map(|name| {
                let id = topo
                    .node_by_name(name)
                    .unwrap_or_else(|| panic!("no node {name}"));
                let node = topo.node(id).unwrap();
                let port = if node.is_switch() { 0 } else { 1 };
                node.port(port).unwrap().guid
            })
            .collect()
    }
}

/// Writes `files` into `dir`: the opensm.conf text routing with ftree and naming them (then
/// `extra`), and the same GUIDs and options as RoutingOptions.
fn write_files(
    dir: &TestDir,
    topo: &Topology,
    files: &[GuidFile],
    extra: &str,
) -> (String, RoutingOptions) {
    let mut options = RoutingOptions::default();
    let mut conf = format!("routing_engine ftree\n{extra}");
    for file in files {
        let guids = file.guids(topo);
        let path = dir.path().join(format!("{}.txt", file.option));
        let text: String = guids.iter().map(|g| format!("{g:#018x}\n")).collect();
        std::fs::write(&path, text).unwrap();
        conf.push_str(&format!("{} {}\n", file.option, path.display()));
        match file.option {
            "root_guid_file" => options.root_guids = Some(guids),
            "cn_guid_file" => options.cn_guids = Some(guids),
            "io_guid_file" => options.io_guids = Some(guids),
            other => panic!("no GUID file option {other}"),
        }
    }
    if let Some(hops) = extra.strip_prefix("max_reverse_hops ") {
        options.max_reverse_hops = hops.trim().parse().unwrap();
    }
    (conf, options)
}

/// OpenSM's ftree with `files` (and `extra` options) on tree `name` against ibqos's ftree
/// computed here with the same GUIDs in its RoutingOptions: the engine's parity alone (see
/// [`ftree_with_files_end_to_end`] for the files read by the SM).
fn ftree_with_files(name: &str, test: &str, files: &[GuidFile], extra: &str) {
    let dir = TestDir::new(&format!("routing-ftree-{test}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    let topo = addressed(&fabric, 0);
    let (conf, options) = write_files(&dir, &topo, files, extra);
    let (oracle, log) = opensm_tables(&fabric, &conf, &dir).unwrap();
    assert!(
        log.contains("ftree tables configured on all switches"),
        "OpenSM did not route with ftree:\n{log}"
    );
    let routes = ftree(&topo, &options).unwrap_or_else(|e| panic!("ibqos's ftree: {e}"));
    let mut f = Failures::new(format!("{name} with {conf:?}"));
    compare_tables(&mut f, &tables_of(&topo, &routes), &oracle);
    f.assert_none();
}

/// `ibqos sm` and OpenSM with the same opensm.conf naming `files`: the same tables, by ftree.
fn ftree_with_files_end_to_end(name: &str, test: &str, files: &[GuidFile], extra: &str) {
    let dir = TestDir::new(&format!("routing-ftree-{test}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    let (conf, _) = write_files(&dir, &addressed(&fabric, 0), files, extra);
    lfts_match_opensm_logs(&fabric, &conf, &dir).assert_routed_by("ftree");
}

const SPINES_16: GuidFile = GuidFile {
    option: "root_guid_file",
    nodes: &["S0", "S1"],
};

/// Every other host of fat-tree-16, so leaves differ in compute nodes and route dummies.
const CNS_16: GuidFile = GuidFile {
    option: "cn_guid_file",
    nodes: &["H0_0", "H0_2", "H1_1", "H2_0", "H2_1", "H2_2", "H3_3"],
};

#[test]
fn ftree_with_a_root_file_on_fat_tree_16() {
    ftree_with_files("fat-tree-16", "roots", &[SPINES_16], "");
}

/// One spine as the root: the other ranks below the leaves.
#[test]
fn ftree_with_one_root_on_fat_tree_16() {
    let one = GuidFile {
        option: "root_guid_file",
        nodes: &["S1"],
    };
    ftree_with_files("fat-tree-16", "one-root", &[one], "");
}

#[test]
fn ftree_with_a_cn_file_on_fat_tree_16() {
    ftree_with_files("fat-tree-16", "cns", &[CNS_16], "");
}

#[test]
fn ftree_with_cn_and_io_files_on_fat_tree_16() {
    let io = GuidFile {
        option: "io_guid_file",
        nodes: &["H1_0", "H3_0"],
    };
    ftree_with_files("fat-tree-16", "io", &[CNS_16, io], "max_reverse_hops 1\n");
}

#[test]
fn ftree_with_root_and_cn_files_on_three_level() {
    let cores = GuidFile {
        option: "root_guid_file",
        nodes: &[
            "C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10", "C11", "C12", "C13",
            "C14", "C15",
        ],
    };
    let cns = GuidFile {
        option: "cn_guid_file",
        nodes: &[
            "H0_0_0", "H0_1_1", "H1_2_2", "H3_3_3", "H5_0_1", "H7_3_0", "H7_3_3",
        ],
    };
    ftree_with_files("three-level", "roots-cns", &[cores], "");
    ftree_with_files("three-level", "cns", &[cns], "");
}

#[test]
fn ftree_with_a_cn_file_on_wide() {
    // Hosts whose GUIDs straddle 0x1000ff, where OpenSM's GUID order parts from numeric order.
    let cns = GuidFile {
        option: "cn_guid_file",
        nodes: &["H0_0", "H6_5", "H7_0", "H7_1", "H7_2", "H14_17", "H17_17"],
    };
    ftree_with_files("wide", "cns", &[cns], "");
}

/// A root file skips OpenSM's check that the tree is pure: ftree routes the degraded tree.
#[test]
fn ftree_with_a_root_file_on_the_degraded_tree() {
    ftree_with_files("degraded", "roots", &[SPINES_16], "");
}

/// The GUID files through opensm.conf, end to end: `ibqos sm` reads them into RoutingOptions.
#[test]
fn ftree_with_files_through_opensm_conf() {
    let io = GuidFile {
        option: "io_guid_file",
        nodes: &["H1_0", "H3_0"],
    };
    ftree_with_files_end_to_end("fat-tree-16", "conf-cns", &[CNS_16], "");
    ftree_with_files_end_to_end(
        "fat-tree-16",
        "conf-io",
        &[CNS_16, io],
        "max_reverse_hops 1\n",
    );
    ftree_with_files_end_to_end("degraded", "conf-roots", &[SPINES_16], "");
}
