//! ftree against OpenSM 3.3.23's fat-tree engine: every switch's forwarding table, read back with
//! ibroute from ibsim after `ibqos sm --once` and after `opensm -o` with the same opensm.conf,
//! compared by switch and destination GUID (see `ibqos_tests::lfts`).

use ibqos_tests::TestDir;
use ibqos_tests::lfts::{Logs, lfts_match_opensm_logs};
use ibqos_tests::trees::tree;

/// Tree `name` configured by both SMs with opensm.conf `options`; their logs.
fn routed(name: &str, test: &str, options: &str) -> Logs {
    let dir = TestDir::new(&format!("routing-ftree-{test}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    lfts_match_opensm_logs(&fabric, options, &dir)
}

/// The tables match, and each SM says `engine` routed: OpenSM's "<engine> tables configured",
/// and no engine passed over in ibqos's log.
fn routed_by(logs: &Logs, engine: &str) {
    let opensm = format!("{engine} tables configured on all switches");
    assert!(
        logs.opensm.contains(&opensm),
        "OpenSM did not route with {engine}:\n{}",
        logs.opensm
    );
    assert!(
        !logs.ibqos.contains("fell back"),
        "ibqos fell back:\n{}",
        logs.ibqos
    );
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
    routed_by(
        &routed("fat-tree-16", "ftree", "routing_engine ftree\n"),
        "ftree",
    );
}

#[test]
fn ftree_on_fat_tree_648() {
    routed_by(
        &routed("fat-tree-648", "ftree", "routing_engine ftree\n"),
        "ftree",
    );
}

#[test]
fn ftree_on_three_level() {
    routed_by(
        &routed("three-level", "ftree", "routing_engine ftree\n"),
        "ftree",
    );
}

#[test]
fn ftree_on_wide() {
    routed_by(&routed("wide", "ftree", "routing_engine ftree\n"), "ftree");
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
    routed_by(&logs, "ftree");
}

/// ftree routes no LMC > 0: both SMs fall back to minhop.
///
/// Waits for the routing-balance branch (LMC > 0 as OpenSM gives it): ibqos gives switch port 0
/// an LMC range too, where OpenSM (`lmc_esp0 FALSE`) gives it one LID, so minhop's tables differ
/// on the switch LIDs' extra offsets.
#[test]
#[ignore = "waits for LMC > 0 parity (routing-balance): switch port 0 LIDs"]
fn ftree_refuses_lmc_2() {
    let logs = routed("fat-tree-16", "lmc", "routing_engine ftree\nlmc 2\n");
    refused(
        &logs,
        "LMC > 0 is not supported by fat-tree routing",
        "minhop",
    );
}
