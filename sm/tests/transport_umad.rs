//! The kernel umad transport, run unmodified under ibsim's LD_PRELOAD shim (umad2sim): the
//! `ibqos` binary with `--fabric umad`, checked against ibsim's net file and against smpquery
//! run the same way (an independent reader of the same fabric).

mod common;

use std::time::{Duration, Instant};

use common::{Ibsim, field, run, smpquery_field, stdout_of, tool, two_switch_net};

fn query(sim: &Ibsim, args: &[&str]) -> std::process::Output {
    let mut cmd = sim.shim_client(std::path::Path::new(env!("CARGO_BIN_EXE_ibqos")), "H1");
    run(cmd.args(["query", "--fabric", "umad"]).args(args))
}

#[test]
fn nodeinfo_through_the_shim_matches_smpquery() {
    let smpquery = tool("smpquery", "infiniband-diags");
    let sim = Ibsim::start(&two_switch_net());

    let local = stdout_of(&query(&sim, &["nodeinfo", "--dr", "0"]));
    assert_eq!(field(&local, "NodeGUID"), "0x0002c90000100000");
    assert_eq!(field(&local, "NodeType"), "Ca");

    let ours = stdout_of(&query(&sim, &["nodeinfo", "--dr", "0,1"]));
    let theirs = stdout_of(&run(sim
        .shim_client(&smpquery, "H1")
        .args(["-D", "nodeinfo", "0,1"])));
    assert_eq!(field(&ours, "NodeGUID"), "0x0002c90000001000");
    assert_eq!(field(&ours, "NodeGUID"), smpquery_field(&theirs, "Guid"));
    assert_eq!(
        field(&ours, "PortGUID"),
        smpquery_field(&theirs, "PortGuid")
    );
    assert_eq!(
        field(&ours, "SystemImageGUID"),
        smpquery_field(&theirs, "SystemGuid")
    );
    assert_eq!(
        field(&ours, "NodeType"),
        smpquery_field(&theirs, "NodeType")
    );
    assert_eq!(
        field(&ours, "NumPorts"),
        smpquery_field(&theirs, "NumPorts")
    );
    assert_eq!(field(&ours, "NumPorts"), "8");
    assert_eq!(
        field(&ours, "LocalPortNum"),
        smpquery_field(&theirs, "LocalPort")
    );
}

#[test]
fn portinfo_through_the_shim_is_link_up() {
    let sim = Ibsim::start(&two_switch_net());
    let out = stdout_of(&query(&sim, &["portinfo", "--dr", "0,1", "--port", "3"]));
    assert_eq!(field(&out, "PortPhysicalState"), "LinkUp");
    // LocalPortNum is the port the SMP came in by (S1 port 1), not the port read.
    assert_eq!(field(&out, "LocalPortNum"), "1");
}

#[test]
fn a_dropped_request_through_the_shim_is_an_error_not_a_hang() {
    let sim = Ibsim::start(&two_switch_net());
    let started = Instant::now();
    let out = query(&sim, &["nodeinfo", "--dr", "0,1,6", "--timeout-ms", "5000"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("dropped by the fabric"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "{stderr}");
}
