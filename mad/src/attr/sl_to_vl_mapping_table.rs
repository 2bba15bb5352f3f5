//! SLtoVLMappingTable (attribute 0x0017, IBA 14.2.5.8): which VL each of the 16 SLs uses on a
//! port (or, on a switch, on an input/output port pair).

use crate::Result;

layout! {
    /// A view of an SLtoVLMappingTable (8 bytes; the rest of the SMP data area is reserved).
    ///
    /// Byte k holds SL 2k in bits 7:4 and SL 2k+1 in bits 3:0, so SL `i` is simply the 4-bit
    /// field at bit `4 * i`.
    pub struct SlToVlMappingTable[8];
    {
        /// The VL for SL `index` (15 = drop).
        vl / set_vl: u8[16] = 0, 4, 4;
    }
}

/// An SLtoVLMappingTable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlToVlMappingTableRepr {
    /// The VL for each SL, indexed by SL (4 bits each; 15 = drop).
    pub vls: [u8; 16],
}

impl SlToVlMappingTableRepr {
    /// Reads the table, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &SlToVlMappingTable<T>) -> Result<Self> {
        view.check_len()?;
        Ok(Self {
            vls: core::array::from_fn(|sl| view.vl(sl)),
        })
    }

    /// Writes all 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut SlToVlMappingTable<T>) {
        for (sl, &vl) in self.vls.iter().enumerate() {
            view.set_vl(sl, vl);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The table ibsim starts with: SL i on VL i, except SL 15 on VL 7.
    static DEFAULT: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];

    /// What OpenSM programs with `qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15`.
    static OPENSM: [u8; 8] = [0x01, 0x23, 0x01, 0x23, 0x01, 0x23, 0x01, 0x2f];

    #[test]
    fn deconstruct() {
        let v = SlToVlMappingTable::new_checked(&DEFAULT[..]).unwrap();
        for sl in 0..15 {
            assert_eq!(v.vl(sl), sl as u8);
        }
        assert_eq!(v.vl(15), 7);
        let repr = SlToVlMappingTableRepr::parse(&v).unwrap();
        assert_eq!(
            repr.vls,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7]
        );
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 8];
        let repr = SlToVlMappingTableRepr {
            vls: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 15],
        };
        repr.emit(&mut SlToVlMappingTable::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, OPENSM);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            SlToVlMappingTable::new_checked(&DEFAULT[..7]),
            Err(crate::Error::Truncated { len: 7, needed: 8 })
        );
    }

    proptest! {
        #[test]
        fn round_trip(vls in proptest::array::uniform16(0u8..16)) {
            let repr = SlToVlMappingTableRepr { vls };
            prop_assert_round_trip!(SlToVlMappingTable, SlToVlMappingTableRepr, repr);
        }
    }
}
