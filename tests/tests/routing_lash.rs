//! Issue 33's fabrics with cycles (`scripts/routing-layered`) and the engines that route them
//! against OpenSM 3.3.23: every switch's forwarding table, read back with ibroute from ibsim after
//! `ibqos sm --once` and after `opensm -o` with the same opensm.conf, compared by switch and
//! destination GUID (see `ibqos_tests::lfts`).

use ibqos_tests::TestDir;
use ibqos_tests::lfts::lfts_match_opensm;
use ibqos_tests::trees::layered;

/// The LFTs of `engine` on the fabric `name` of `scripts/routing-layered` equal OpenSM's.
fn engine_on(engine: &str, name: &str) {
    let dir = TestDir::new(&format!("routing-{engine}-{name}"));
    let fabric = layered(name, &dir).unwrap();
    lfts_match_opensm(&fabric, &format!("routing_engine {engine}\n"), &dir);
}

/// minhop routes each fabric as OpenSM does: ibsim loads every file and OpenSM brings it up.
#[test]
fn minhop_on_torus_4x4() {
    engine_on("minhop", "torus-4x4");
}

#[test]
fn minhop_on_mesh_3x3() {
    engine_on("minhop", "mesh-3x3");
}

#[test]
fn minhop_on_dragonfly() {
    engine_on("minhop", "dragonfly");
}
