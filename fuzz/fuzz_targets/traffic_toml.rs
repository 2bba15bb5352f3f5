//! Any bytes read as an `ibqos sim` traffic file: a traffic description or a located error,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = ibqos_sim::traffic::parse("fuzz.toml", bytes);
});
