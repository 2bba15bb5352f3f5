//! VLArbitrationTableRecord (SA attribute 0x0036, IBA 15.2.5.9): one block of one port's VL
//! arbitration table.

use crate::attr::vl_arbitration_table::{VlArbitrationTable, VlArbitrationTableRepr};

sa_record! {
    /// A view of a VLArbitrationTableRecord (72 bytes: LID, OutputPortNum, BlockNum, 4
    /// reserved, the block at 8).
    pub struct VlArbTableRecord[72];
    /// A VLArbitrationTableRecord.
    pub struct VlArbTableRecordRepr = SaAttributeId::VlArbitrationTableRecord;
    {
        /// The node's base LID.
        lid / set_lid: u16 = 0, 16;
        /// OutputPortNum.
        out_port / set_out_port: u8 = 16, 8;
        /// BlockNum: 1 and 2 the low-priority table, 3 and 4 the high-priority one.
        block / set_block: u8 = 24, 8;
    }
    {
        /// The VLArbitrationTable block.
        table / table_mut: VlArbitrationTable(VlArbitrationTableRepr) = 8;
    }
}

flags! {
    /// VLArbitrationTableRecord ComponentMask bits (include/iba/ib_types.h:2604-2606).
    pub struct VlArbTableRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// OutputPortNum.
        const OUT_PORT = 1 << 1;
        /// BlockNum.
        const BLOCK = 1 << 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::vl_arbitration_table::VlArbEntry;
    use crate::sa::record::assert_golden;

    /// LID 4, port 5, block 3; entry i = (VL i mod 8, weight i).
    fn bytes() -> [u8; 72] {
        let mut b = [0; 72];
        b[..4].copy_from_slice(&[0x00, 0x04, 0x05, 0x03]);
        for i in 0..32 {
            b[8 + 2 * i] = i as u8 % 8;
            b[9 + 2 * i] = i as u8;
        }
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = VlArbTableRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.lid(), v.out_port(), v.block()), (4, 5, 3));
        assert_eq!((v.table().vl(9), v.table().weight(9)), (1, 9));
        let repr = VlArbTableRecordRepr {
            lid: 4,
            out_port: 5,
            block: 3,
            table: VlArbitrationTableRepr {
                entries: core::array::from_fn(|i| VlArbEntry::new(i as u8 % 8, i as u8)),
            },
        };
        assert_golden(&bytes, &repr);
        assert_eq!(VlArbTableRecordMask::BLOCK.0, 4);
    }
}
