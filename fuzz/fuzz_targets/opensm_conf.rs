//! Any bytes read as opensm.conf: the reader must answer with settings and diagnostics, never
//! panic; and what it read must survive a write and a second read unchanged.
#![no_main]

use ibqos_opensm::{Format, load_bytes, to_opensm_conf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(loaded) = load_bytes("fuzz.conf", bytes, Format::OpenSmConf) else { return };
    let (written, _) = to_opensm_conf(&loaded.settings);
    let reread = load_bytes("written.conf", written.as_bytes(), Format::OpenSmConf)
        .expect("our own output reads back");
    assert_eq!(reread.settings, loaded.settings, "write then read changed the settings");
});
