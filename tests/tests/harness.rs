//! The harness's own failure modes against the real ibsim: they must fail loudly and fast, never
//! hang or skip.

use std::path::Path;

use ibqos_tests::smpquery::{SmpQuery, Target};
use ibqos_tests::{DrPath, Ibsim, SimTools, TestDir};

const NET_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fabric/data/two-switch.net");

#[test]
fn ibsim_that_cannot_load_its_net_file_is_an_error() {
    let tools = SimTools::require();
    let dir = TestDir::new("bad-net");
    let net = dir.path().join("bad.net");
    // A link whose far end does not exist: ibsim parses the file, then exits in connect_ports.
    std::fs::write(&net, "Switch 8 \"S1\"\n[1] \"H1\"[1]\n").unwrap();
    let err = Ibsim::start(&tools, &net, dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("exited"), "{err}");
    assert!(err.contains("can't find remote node \"H1\""), "{err}");
}

#[test]
fn smpquery_reads_a_fresh_fabric_by_directed_route() {
    let tools = SimTools::require();
    let dir = TestDir::new("fresh");
    let sim = Ibsim::start(&tools, Path::new(NET_FILE), dir.path()).unwrap();
    let query = SmpQuery::new(&tools, &sim, "H2");
    // Before any SM: no LIDs, links up but not Active, OperVLs = VLCap = 8.
    let s1 = Target::Dr(DrPath(vec![1]));
    let port3 = query.portinfo(&s1, Some(3)).unwrap();
    assert_eq!((port3.lid, port3.vl_cap, port3.oper_vls), (0, 8, 8));
    assert_eq!(port3.phys_link_state, "LinkUp");
    assert_eq!((port3.vlarb_low_cap, port3.vlarb_high_cap), (8, 8));
    let rows = query.sl2vl(&s1, Some(3)).unwrap();
    assert_eq!(rows.len(), 9);
    assert!(
        rows.iter()
            .all(|r| r.vls == ibqos_tests::smpquery::IBSIM_DEFAULT_SL2VL)
    );
}

#[test]
fn a_client_of_a_node_ibsim_does_not_know_fails() {
    let tools = SimTools::require();
    let dir = TestDir::new("unknown-node");
    let sim = Ibsim::start(&tools, Path::new(NET_FILE), dir.path()).unwrap();
    let query = SmpQuery::new(&tools, &sim, "NO-SUCH-NODE");
    let err = query
        .portinfo(&Target::Dr(DrPath(vec![])), None)
        .unwrap_err();
    assert!(err.to_string().contains("failed"), "{err}");
}
