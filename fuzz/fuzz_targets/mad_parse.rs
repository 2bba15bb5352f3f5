//! Any bytes read as a MAD from the fabric: an error or a parsed SMP and attribute, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = ibqos_mad::parse_any(bytes);
});
