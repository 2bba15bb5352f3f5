//! The kernel umad transport, run unmodified under ibsim's LD_PRELOAD shim (umad2sim): the
//! `ibqos` binary with `--fabric umad`, checked against ibsim's net file and against smpquery
//! run the same way (an independent reader of the same fabric).

use std::time::{Duration, Instant};

use ibqos_tests::process::{Finished, run_bounded};
use ibqos_tests::query::{self, field};
use ibqos_tests::scenario::fresh_ibsim;
use ibqos_tests::smpquery::dotted_fields;
use ibqos_tests::{Ibsim, SimTools};

/// `ibqos query --fabric umad ARGS` under the shim, attached at H1.
fn query(sim: &Ibsim, args: &[&str]) -> Finished {
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    query::umad(&ibqos, sim, "H1", args).unwrap()
}

#[test]
fn nodeinfo_through_the_shim_matches_smpquery() {
    let tools = SimTools::require();
    let (sim, _dir) = fresh_ibsim(&tools, "two-switch.net", "transport-umad").unwrap();

    let local = query::stdout(query(&sim, &["nodeinfo", "--dr", "0"]));
    assert_eq!(field(&local, "NodeGUID"), "0x0002c90000100000");
    assert_eq!(field(&local, "NodeType"), "Ca");

    let ours = query::stdout(query(&sim, &["nodeinfo", "--dr", "0,1"]));
    let mut smpquery = sim.client(&tools.smpquery.path, "H1");
    let theirs = query::stdout(
        run_bounded(
            smpquery.args(["-D", "nodeinfo", "0,1"]),
            Duration::from_secs(30),
        )
        .unwrap(),
    );
    let theirs = dotted_fields(&theirs);
    let smpquery_field = |name: &str| theirs.get(name).map(String::as_str).unwrap_or_default();
    assert_eq!(field(&ours, "NodeGUID"), "0x0002c90000001000");
    assert_eq!(field(&ours, "NodeGUID"), smpquery_field("Guid"));
    assert_eq!(field(&ours, "PortGUID"), smpquery_field("PortGuid"));
    assert_eq!(
        field(&ours, "SystemImageGUID"),
        smpquery_field("SystemGuid")
    );
    assert_eq!(field(&ours, "NodeType"), smpquery_field("NodeType"));
    assert_eq!(field(&ours, "NumPorts"), smpquery_field("NumPorts"));
    assert_eq!(field(&ours, "NumPorts"), "8");
    assert_eq!(field(&ours, "LocalPortNum"), smpquery_field("LocalPort"));
}

#[test]
fn portinfo_through_the_shim_is_link_up() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-umad").unwrap();
    let out = query::stdout(query(&sim, &["portinfo", "--dr", "0,1", "--port", "3"]));
    assert_eq!(field(&out, "PortPhysicalState"), "LinkUp");
    // LocalPortNum is the port the SMP came in by (S1 port 1), not the port read.
    assert_eq!(field(&out, "LocalPortNum"), "1");
}

#[test]
fn a_dropped_request_through_the_shim_is_an_error_not_a_hang() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-umad").unwrap();
    let started = Instant::now();
    let out = query(&sim, &["nodeinfo", "--dr", "0,1,6", "--timeout-ms", "5000"]);
    assert!(!out.status.success());
    let stderr = &out.stderr;
    assert!(stderr.contains("dropped by the fabric"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "{stderr}");
}
