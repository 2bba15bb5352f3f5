//! Any bytes read as the dump `ibqos sim --tables` takes, on the built-in two-switch fabric, its
//! tables and its LFTs and LIDs: a network, or an error naming the node or port that does not
//! fit, never a panic.
#![no_main]

use ibqos_fabric::builtin::load_topology;
use ibqos_fabric::dump::FabricDump;
use ibqos_sim::{Forwarding, Tables, build_routed_network, traffic};
use libfuzzer_sys::fuzz_target;

const TRAFFIC: &str = "duration_us = 1\n[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H3\"\nsl = 0\npayload = 256\n";

fuzz_target!(|bytes: &[u8]| {
    // `ibqos sim` reads the file as UTF-8 text, refusing anything else.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(dump) = FabricDump::from_json(text) else {
        return;
    };
    let mut topology = load_topology("two-switch").expect("built in").topology;
    let traffic = traffic::parse("fuzz.toml", TRAFFIC.as_bytes()).expect("a valid traffic file");
    let held = Forwarding::Held(&dump);
    let _ = build_routed_network(&mut topology, Tables::Held(&dump), held, &traffic);
});
