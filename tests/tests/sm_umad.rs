//! `ibqos sm --once --fabric umad` under ibsim's LD_PRELOAD shim (umad2sim): the kernel
//! user-MAD transport, talking to ibsim as it would to /dev/infiniband/umad*. The same checks
//! as sm_ibsim.rs: counts, all Active, unique LIDs, full reachability, OperVLs and HOQLife equal
//! to OpenSM's.

use ibqos_fabric::generate;
use ibqos_tests::TestDir;
use ibqos_tests::scenario::{Fabric, sm_matches_opensm, testdata};
use ibqos_tests::sm::SmFabric;

#[test]
fn two_switch_over_umad() {
    let dir = TestDir::new("sm-umad-two-switch");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    sm_matches_opensm(&fabric, SmFabric::Umad, "", &dir);
}

/// A fabric with a loop, so routing has a choice to make.
#[test]
fn ring_over_umad() {
    let dir = TestDir::new("sm-umad-ring");
    let topology = generate::ring(5, 2).unwrap();
    let fabric = Fabric::generated("ring-5", &topology, dir.path()).unwrap();
    sm_matches_opensm(&fabric, SmFabric::Umad, "", &dir);
}
