//! GUIDInfoRecord (SA attribute 0x0030, IBA 15.2.5.18): one block of a port's GUIDs (block 0
//! GUID 0 is the port GUID, the rest are alias GUIDs).

use crate::attr::guid_info::{GuidInfo, GuidInfoRepr};

sa_record! {
    /// A view of a GUIDInfoRecord (72 bytes: LID, BlockNum, 5 reserved, the block at 8).
    pub struct GuidInfoRecord[72];
    /// A GUIDInfoRecord.
    pub struct GuidInfoRecordRepr = SaAttributeId::GuidInfoRecord;
    {
        /// The port's LID.
        lid / set_lid: u16 = 0, 16;
        /// BlockNum.
        block / set_block: u8 = 16, 8;
    }
    {
        /// The GUIDInfo block.
        guids / guids_mut: GuidInfo(GuidInfoRepr) = 8;
    }
}

flags! {
    /// GUIDInfoRecord ComponentMask bits (include/iba/ib_types.h:2771-2782); GUID `i` of the
    /// block is bit `4 + i` ([`GuidInfoRecordMask::guid`]).
    pub struct GuidInfoRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// BlockNum.
        const BLOCK = 1 << 1;
        /// GUID 0 of the block.
        const GUID0 = 1 << 4;
    }
}

impl GuidInfoRecordMask {
    /// The bit of GUID `index` (0..8) of the block.
    pub const fn guid(index: u32) -> Self {
        Self(Self::GUID0.0 << index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// LID 0x0c, block 1; GUID i = 0x0002c903_00000100 + i.
    fn bytes() -> [u8; 72] {
        let mut b = [0; 72];
        b[..3].copy_from_slice(&[0x00, 0x0c, 0x01]);
        for i in 0..8 {
            b[8 + 8 * i..16 + 8 * i]
                .copy_from_slice(&(0x0002_c903_0000_0100 + i as u64).to_be_bytes());
        }
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = GuidInfoRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.lid(), v.block()), (0x0c, 1));
        assert_eq!(v.guids().guid(7), 0x0002_c903_0000_0107);
        let repr = GuidInfoRecordRepr {
            lid: 0x0c,
            block: 1,
            guids: GuidInfoRepr {
                guids: core::array::from_fn(|i| 0x0002_c903_0000_0100 + i as u64),
            },
        };
        assert_golden(&bytes, &repr);
        assert_eq!(GuidInfoRecordMask::guid(7).0, 1 << 11);
    }
}
