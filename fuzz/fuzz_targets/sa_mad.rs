//! Any bytes read as an SA message (one MAD or a reassembled RMPP answer): an error or a parsed
//! header and records, never a panic; and decoded records emit bytes that parse to them again.
#![no_main]

use ibqos_mad::sa::{SaRecord, emit_sa, parse_sa};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok((header, records)) = parse_sa(bytes) else {
        return;
    };
    // A raw record keeps the bytes it was given, which a re-emitted MAD pads to a whole MAD.
    if records.iter().any(|record| matches!(record, SaRecord::Other { .. })) {
        return;
    }
    let (header_again, records_again) =
        parse_sa(&emit_sa(&header, &records)).expect("emitted SA message parses");
    assert_eq!(header_again, header);
    assert_eq!(records_again[..records.len()], records[..]);
});
