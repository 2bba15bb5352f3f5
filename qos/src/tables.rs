//! SL-to-VL mapping tables and VL arbitration tables, as values.

use ibqos_mad::{SlToVlMappingTable, SlToVlMappingTableRepr, VlArbEntry};

use crate::types::{Sl, Vl};

/// Which VL each of the 16 service levels travels on. VL15 means the packet is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sl2VlTable(pub [Vl; 16]);

impl From<Sl2VlTable> for SlToVlMappingTableRepr {
    fn from(table: Sl2VlTable) -> Self {
        SlToVlMappingTableRepr {
            vls: table.0.map(Vl::get),
        }
    }
}

impl From<SlToVlMappingTableRepr> for Sl2VlTable {
    /// Each VL is the low nibble of the wire value, which is all a 4-bit field holds.
    fn from(repr: SlToVlMappingTableRepr) -> Self {
        Sl2VlTable(repr.vls.map(Vl::from_nibble))
    }
}

impl Sl2VlTable {
    /// Every SL on VL0.
    pub const ALL_VL0: Sl2VlTable = Sl2VlTable([Vl::from_nibble(0); 16]);

    pub fn vl(&self, sl: Sl) -> Vl {
        self.0[usize::from(sl.get())]
    }

    /// The 8-byte SLtoVLMappingTable payload.
    pub fn to_wire(&self) -> [u8; 8] {
        let mut bytes = [0u8; 8];
        SlToVlMappingTableRepr::from(*self)
            .emit(&mut SlToVlMappingTable::new_unchecked(&mut bytes));
        bytes
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
            let repr = SlToVlMappingTableRepr::parse(&SlToVlMappingTable::new_unchecked(&bytes)).unwrap();
            prop_assert_eq!(Sl2VlTable::from(repr).to_wire(), bytes);
        }
    }
}
