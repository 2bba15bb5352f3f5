//! P_KeyTable (attribute 0x0016, IBA 14.2.5.7): one block of 32 partition keys.

use crate::Result;

layout! {
    /// A view of one P_KeyTable block (64 bytes).
    pub struct PKeyTable[64];
    {
        /// Entry `index`: bit 15 = full membership, bits 14:0 = the P_Key base (0xFFFF is the
        /// default partition, full member).
        p_key / set_p_key: u16[32] = 0, 16, 16;
    }
}

/// One P_KeyTable block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PKeyTableRepr {
    /// The 32 entries, in table order.
    pub p_keys: [u16; 32],
}

impl PKeyTableRepr {
    /// Reads the block, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &PKeyTable<T>) -> Result<Self> {
        view.check_len()?;
        Ok(Self {
            p_keys: core::array::from_fn(|i| view.p_key(i)),
        })
    }

    /// Writes all 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut PKeyTable<T>) {
        for (i, &p_key) in self.p_keys.iter().enumerate() {
            view.set_p_key(i, p_key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 0xffff (default, full), 0x7fff (default, limited), then 0x8000 + i for i = 2..32.
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0xff, 0xff, 0x7f, 0xff, 0x80, 0x02, 0x80, 0x03,
        0x80, 0x04, 0x80, 0x05, 0x80, 0x06, 0x80, 0x07,
        0x80, 0x08, 0x80, 0x09, 0x80, 0x0a, 0x80, 0x0b,
        0x80, 0x0c, 0x80, 0x0d, 0x80, 0x0e, 0x80, 0x0f,
        0x80, 0x10, 0x80, 0x11, 0x80, 0x12, 0x80, 0x13,
        0x80, 0x14, 0x80, 0x15, 0x80, 0x16, 0x80, 0x17,
        0x80, 0x18, 0x80, 0x19, 0x80, 0x1a, 0x80, 0x1b,
        0x80, 0x1c, 0x80, 0x1d, 0x80, 0x1e, 0x80, 0x1f,
    ];

    fn repr() -> PKeyTableRepr {
        let mut p_keys: [u16; 32] = core::array::from_fn(|i| 0x8000 + i as u16);
        p_keys[0] = 0xffff;
        p_keys[1] = 0x7fff;
        PKeyTableRepr { p_keys }
    }

    #[test]
    fn deconstruct() {
        let v = PKeyTable::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.p_key(0), 0xffff);
        assert_eq!(v.p_key(1), 0x7fff);
        for i in 2..32 {
            assert_eq!(v.p_key(i), 0x8000 + i as u16);
        }
        assert_eq!(PKeyTableRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut PKeyTable::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            PKeyTable::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    #[test]
    #[should_panic(expected = "index 32 out of range")]
    fn index_past_the_table_panics() {
        PKeyTable::new_checked(&BYTES[..]).unwrap().p_key(32);
    }

    proptest! {
        #[test]
        fn round_trip(p_keys: [u16; 32]) {
            let repr = PKeyTableRepr { p_keys };
            prop_assert_round_trip!(PKeyTable, PKeyTableRepr, repr);
        }
    }
}
