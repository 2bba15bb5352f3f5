//! Any bytes read as ibqos.toml: an error or settings, never a panic.
#![no_main]

use ibqos_opensm::{Format, load_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = load_bytes("fuzz.toml", bytes, Format::NativeToml);
});
