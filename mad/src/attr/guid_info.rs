//! GUIDInfo (attribute 0x0014, IBA 14.2.5.5): one block of 8 port GUIDs.

use crate::Result;

layout! {
    /// A view of one GUIDInfo block (64 bytes).
    pub struct GuidInfo[64];
    {
        /// GUID `index` of the block (0 is the port GUID in block 0).
        guid / set_guid: u64[8] = 0, 64, 64;
    }
}

/// One GUIDInfo block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GuidInfoRepr {
    /// The 8 GUIDs, in table order.
    pub guids: [u64; 8],
}

impl GuidInfoRepr {
    /// Reads the block, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &GuidInfo<T>) -> Result<Self> {
        view.check_len()?;
        Ok(Self {
            guids: core::array::from_fn(|i| view.guid(i)),
        })
    }

    /// Writes all 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut GuidInfo<T>) {
        for (i, &guid) in self.guids.iter().enumerate() {
            view.set_guid(i, guid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// GUID i = 0x0002c903_0000_1000 + 0x11 * i.
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x00,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x11,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x22,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x33,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x44,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x55,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x66,
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x77,
    ];

    fn repr() -> GuidInfoRepr {
        GuidInfoRepr {
            guids: core::array::from_fn(|i| 0x0002_c903_0000_1000 + 0x11 * i as u64),
        }
    }

    #[test]
    fn deconstruct() {
        let v = GuidInfo::new_checked(&BYTES[..]).unwrap();
        for i in 0..8 {
            assert_eq!(v.guid(i), 0x0002_c903_0000_1000 + 0x11 * i as u64);
        }
        assert_eq!(GuidInfoRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut GuidInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            GuidInfo::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(guids: [u64; 8]) {
            let repr = GuidInfoRepr { guids };
            prop_assert_round_trip!(GuidInfo, GuidInfoRepr, repr);
        }
    }
}
