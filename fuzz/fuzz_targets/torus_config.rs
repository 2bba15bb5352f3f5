//! Any bytes read as a torus-2QoS.conf (`torus_config`): the reader must answer with the torus
//! OpenSM reads, never panic; every diagnostic is placed on a line of the file, the engine
//! fails exactly when some line is rejected, and `port_order` stays a full order of 255 ports.
#![no_main]

use ibqos_opensm::{Code, torus_config};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let file = torus_config::parse("torus-2QoS.conf", bytes);
    let lines = bytes.split(|&b| b == b'\n').count();
    for d in &file.diagnostics {
        let at = d.location.as_ref().expect("every diagnostic is placed");
        assert!(at.line >= 1 && at.line <= lines, "{d:?}");
    }
    let rejected = file
        .diagnostics
        .iter()
        .any(|d| d.code == Code::TorusConfigFails);
    assert_eq!(rejected, file.config.failure.is_some(), "{file:?}");
    assert_eq!(
        file.config.port_order.len(),
        torus_config::PORT_ORDER_LEN,
        "{file:?}"
    );
});
