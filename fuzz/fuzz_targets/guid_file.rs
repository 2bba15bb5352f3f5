//! Any bytes read as a GUID file (`root_guid_file`, `cn_guid_file`, `io_guid_file`,
//! `guid_routing_order_file`): the reader must answer with the GUIDs OpenSM takes and whether
//! it read to the end, never panic; every diagnostic is placed on a line of the file, and a
//! file it stopped reading says where.
#![no_main]

use ibqos_opensm::{Code, guid_file};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let file = guid_file::parse("root_guid_file", "roots", bytes);
    let lines = bytes.split(|&b| b == b'\n').count();
    for d in &file.diagnostics {
        let at = d.location.as_ref().expect("every diagnostic is placed");
        assert!(at.line >= 1 && at.line <= lines, "{d:?}");
    }
    let stopped = file
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::GuidFileStops)
        .count();
    assert_eq!(stopped, usize::from(!file.list.complete), "{file:?}");
    assert!(file.list.guids.len() <= bytes.len());
});
