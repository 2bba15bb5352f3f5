//! LinearForwardingTableRecord (SA attribute 0x0015, IBA 15.2.5.6): one block of a switch's
//! linear forwarding table.

use crate::attr::linear_forwarding_table::{LinearForwardingTable, LinearForwardingTableRepr};

sa_record! {
    /// A view of a LinearForwardingTableRecord (72 bytes: LID, BlockNum, 4 reserved, the block
    /// at 8).
    pub struct LftRecord[72];
    /// A LinearForwardingTableRecord.
    pub struct LftRecordRepr = SaAttributeId::LinearForwardingTableRecord;
    {
        /// The switch's LID.
        lid / set_lid: u16 = 0, 16;
        /// BlockNum: the block of 64 LIDs.
        block / set_block: u16 = 16, 16;
    }
    {
        /// The LinearForwardingTable block.
        table / table_mut: LinearForwardingTable(LinearForwardingTableRepr) = 8;
    }
}

flags! {
    /// LinearForwardingTableRecord ComponentMask bits (include/iba/ib_types.h:2623-2624).
    pub struct LftRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// BlockNum.
        const BLOCK = 1 << 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// LID 1, block 0x0102; LID 64 * block + i leaves by port i mod 37.
    fn bytes() -> [u8; 72] {
        let mut b = [0; 72];
        b[..4].copy_from_slice(&[0x00, 0x01, 0x01, 0x02]);
        for i in 0..64 {
            b[8 + i] = i as u8 % 37;
        }
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = LftRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.lid(), v.block()), (1, 0x0102));
        assert_eq!(v.table().ports()[40], 3);
        let repr = LftRecordRepr {
            lid: 1,
            block: 0x0102,
            table: LinearForwardingTableRepr {
                ports: core::array::from_fn(|i| i as u8 % 37),
            },
        };
        assert_golden(&bytes, &repr);
        assert_eq!(LftRecordMask::BLOCK.0, 2);
    }
}
