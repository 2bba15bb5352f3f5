//! SL-to-VL mapping tables and VL arbitration tables, as values.

use serde::{Deserialize, Serialize};

use crate::types::{Sl, Vl};

/// Which VL each of the 16 service levels travels on. VL15 means the packet is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sl2VlTable(pub [Vl; 16]);

impl Sl2VlTable {
    /// Every SL on VL0.
    pub const ALL_VL0: Sl2VlTable = Sl2VlTable([Vl::from_nibble(0); 16]);

    pub fn vl(&self, sl: Sl) -> Vl {
        self.0[usize::from(sl.get())]
    }

    /// The 8-byte SLtoVLMappingTable payload: byte k holds SL 2k in bits 7:4 and SL 2k+1 in
    /// bits 3:0.
    pub fn to_wire(&self) -> [u8; 8] {
        let mut bytes = [0u8; 8];
        for (k, byte) in bytes.iter_mut().enumerate() {
            *byte = (self.0[2 * k].get() << 4) | self.0[2 * k + 1].get();
        }
        bytes
    }

    pub fn from_wire(bytes: [u8; 8]) -> Sl2VlTable {
        let mut vls = [Vl::from_nibble(0); 16];
        for (k, byte) in bytes.iter().enumerate() {
            vls[2 * k] = Vl::from_nibble(byte >> 4);
            vls[2 * k + 1] = Vl::from_nibble(*byte);
        }
        Sl2VlTable(vls)
    }

    /// Each data VL masked with `mask`; VL15 (drop) is kept, as OpenSM keeps it
    /// (`sl2vl_update_table`, `osm_qos.c:257-299`).
    pub fn masked(&self, mask: u8) -> Sl2VlTable {
        Sl2VlTable(self.0.map(|vl| {
            if vl.is_management() {
                vl
            } else {
                Vl::from_nibble(vl.get() & mask)
            }
        }))
    }
}

/// One VL arbitration entry: serve `vl` for `weight` units of 64 bytes. Weight 0 skips the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct VlArbEntry {
    /// The VL, 0..=14 in a meaningful table; the wire field has four bits.
    pub vl: u8,
    pub weight: u8,
}

impl VlArbEntry {
    pub const fn new(vl: u8, weight: u8) -> VlArbEntry {
        VlArbEntry { vl, weight }
    }
}

/// The most entries a VL arbitration table (low or high priority) can have: two blocks of 32.
pub const VLARB_TABLE_ENTRIES: usize = 64;

/// A full 64-entry VL arbitration table, as OpenSM holds one per priority: entries beyond what the
/// configuration lists are `0:0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlArbTable(pub [VlArbEntry; VLARB_TABLE_ENTRIES]);

impl VlArbTable {
    pub const EMPTY: VlArbTable = VlArbTable([VlArbEntry::new(0, 0); VLARB_TABLE_ENTRIES]);

    /// A table holding `entries` first and `0:0` after them; entries beyond 64 are ignored.
    pub fn from_entries(entries: &[VlArbEntry]) -> VlArbTable {
        let mut table = VlArbTable::EMPTY;
        for (slot, entry) in table.0.iter_mut().zip(entries) {
            *slot = *entry;
        }
        table
    }

    /// The entries up to and including the last one that is not `0:0`: what a person would write.
    pub fn significant_entries(&self) -> &[VlArbEntry] {
        let len = self
            .0
            .iter()
            .rposition(|e| *e != VlArbEntry::default())
            .map_or(0, |i| i + 1);
        &self.0[..len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sl2vl_wire_layout() {
        let table = Sl2VlTable(std::array::from_fn(|i| Vl::from_nibble(i as u8)));
        assert_eq!(
            table.to_wire(),
            [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]
        );
        assert_eq!(
            table.masked(0x7).to_wire(),
            [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x6f]
        );
    }

    #[test]
    fn significant_entries_trim_trailing_zero_entries() {
        let table = VlArbTable::from_entries(&[VlArbEntry::new(0, 0), VlArbEntry::new(1, 4)]);
        assert_eq!(
            table.significant_entries(),
            &[VlArbEntry::new(0, 0), VlArbEntry::new(1, 4)]
        );
        assert!(VlArbTable::EMPTY.significant_entries().is_empty());
    }

    proptest! {
        #[test]
        fn sl2vl_wire_round_trip(bytes in any::<[u8; 8]>()) {
            prop_assert_eq!(Sl2VlTable::from_wire(bytes).to_wire(), bytes);
        }
    }
}
