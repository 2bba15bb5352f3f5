//! Any bytes read as partitions.conf: the reader must answer with partitions or OpenSM's
//! verdict, never panic or hang; partitions it read must write and read back unchanged, or say
//! why not.
#![no_main]

use ibqos_opensm::partitions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(read) = partitions::read("partitions.conf", bytes) else {
        return;
    };
    let (text, losses) = partitions::to_partitions_conf(&read.partitions);
    if losses.is_empty() {
        let back = partitions::read("back.conf", text.as_bytes())
            .unwrap_or_else(|e| panic!("written back and refused: {e}\n{text}"));
        assert_eq!(back.partitions, read.partitions, "\n{text}");
    }
});
