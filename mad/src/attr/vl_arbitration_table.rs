//! VLArbitrationTable (attribute 0x0018, IBA 14.2.5.9): one block of 32 weighted VL entries of a
//! port's high- or low-priority arbitration table.

use crate::Result;

layout! {
    /// A view of one VLArbitrationTable block (64 bytes: 32 entries of 2 bytes; the high nibble of
    /// each entry's first byte is reserved).
    pub struct VlArbitrationTable[64];
    {
        /// The VL of entry `index`.
        vl / set_vl: u8[32] = 4, 4, 16;
        /// The weight of entry `index`, in units of 64 bytes (0 skips the entry).
        weight / set_weight: u8[32] = 8, 8, 16;
    }
}

/// One entry of a VL arbitration table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntry {
    /// The VL (4 bits).
    pub vl: u8,
    /// The weight, in units of 64 bytes; 0 skips the entry.
    pub weight: u8,
}

impl VlArbEntry {
    /// Serve `vl` for `weight` units of 64 bytes.
    pub const fn new(vl: u8, weight: u8) -> VlArbEntry {
        VlArbEntry { vl, weight }
    }
}

/// One VLArbitrationTable block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlArbitrationTableRepr {
    /// The 32 entries, in table order.
    pub entries: [VlArbEntry; 32],
}

impl VlArbitrationTableRepr {
    /// Reads the block, after checking the buffer length. Reserved bits are ignored.
    pub fn parse<T: AsRef<[u8]>>(view: &VlArbitrationTable<T>) -> Result<Self> {
        view.check_len()?;
        Ok(Self {
            entries: core::array::from_fn(|i| VlArbEntry {
                vl: view.vl(i),
                weight: view.weight(i),
            }),
        })
    }

    /// Writes all 64 bytes, reserved bits zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut VlArbitrationTable<T>) {
        view.clear();
        for (i, entry) in self.entries.iter().enumerate() {
            view.set_vl(i, entry.vl);
            view.set_weight(i, entry.weight);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Entry i = (VL i mod 16, weight 0x40 + i).
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0x00, 0x40, 0x01, 0x41, 0x02, 0x42, 0x03, 0x43,
        0x04, 0x44, 0x05, 0x45, 0x06, 0x46, 0x07, 0x47,
        0x08, 0x48, 0x09, 0x49, 0x0a, 0x4a, 0x0b, 0x4b,
        0x0c, 0x4c, 0x0d, 0x4d, 0x0e, 0x4e, 0x0f, 0x4f,
        0x00, 0x50, 0x01, 0x51, 0x02, 0x52, 0x03, 0x53,
        0x04, 0x54, 0x05, 0x55, 0x06, 0x56, 0x07, 0x57,
        0x08, 0x58, 0x09, 0x59, 0x0a, 0x5a, 0x0b, 0x5b,
        0x0c, 0x5c, 0x0d, 0x5d, 0x0e, 0x5e, 0x0f, 0x5f,
    ];

    fn repr() -> VlArbitrationTableRepr {
        VlArbitrationTableRepr {
            entries: core::array::from_fn(|i| VlArbEntry {
                vl: i as u8 % 16,
                weight: 0x40 + i as u8,
            }),
        }
    }

    #[test]
    fn deconstruct() {
        let v = VlArbitrationTable::new_checked(&BYTES[..]).unwrap();
        for i in 0..32 {
            assert_eq!(v.vl(i), i as u8 % 16);
            assert_eq!(v.weight(i), 0x40 + i as u8);
        }
        assert_eq!(VlArbitrationTableRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut VlArbitrationTable::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    /// OpenSM's low-priority block as read back from ibsim (VL0-3 at weight 0x20, rest empty);
    /// a reserved nibble set by the sender does not change the parsed entry.
    #[test]
    fn opensm_low_block_and_reserved_bits() {
        let mut bytes = [0; 64];
        bytes[..8].copy_from_slice(&[0x00, 0x20, 0x01, 0x20, 0x02, 0x20, 0x03, 0x20]);
        let mut repr = VlArbitrationTableRepr {
            entries: [VlArbEntry::default(); 32],
        };
        for vl in 0..4 {
            repr.entries[vl] = VlArbEntry {
                vl: vl as u8,
                weight: 0x20,
            };
        }
        assert_eq!(
            VlArbitrationTableRepr::parse(&VlArbitrationTable::new_checked(&bytes[..]).unwrap()),
            Ok(repr)
        );
        bytes[6] = 0xf3;
        assert_eq!(
            VlArbitrationTableRepr::parse(&VlArbitrationTable::new_checked(&bytes[..]).unwrap()),
            Ok(repr)
        );
    }

    #[test]
    fn truncated() {
        assert_eq!(
            VlArbitrationTable::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(raw in proptest::collection::vec((0u8..16, any::<u8>()), 32)) {
            let mut repr = VlArbitrationTableRepr { entries: [VlArbEntry::default(); 32] };
            for (entry, (vl, weight)) in repr.entries.iter_mut().zip(raw) {
                *entry = VlArbEntry { vl, weight };
            }
            prop_assert_round_trip!(VlArbitrationTable, VlArbitrationTableRepr, repr);
        }
    }
}
