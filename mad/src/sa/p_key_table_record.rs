//! P_KeyTableRecord (SA attribute 0x0033, IBA 15.2.5.11): one block of a port's P_Key table.

use crate::attr::p_key_table::{PKeyTable, PKeyTableRepr};

sa_record! {
    /// A view of a P_KeyTableRecord (72 bytes: LID, BlockNum, PortNum, 3 reserved, the block at
    /// 8).
    pub struct PKeyTableRecord[72];
    /// A P_KeyTableRecord.
    pub struct PKeyTableRecordRepr = SaAttributeId::PKeyTableRecord;
    {
        /// The node's base LID.
        lid / set_lid: u16 = 0, 16;
        /// BlockNum: the block of 32 P_Keys.
        block / set_block: u16 = 16, 16;
        /// PortNum.
        port_num / set_port_num: u8 = 32, 8;
    }
    {
        /// The P_KeyTable block.
        table / table_mut: PKeyTable(PKeyTableRepr) = 8;
    }
}

flags! {
    /// P_KeyTableRecord ComponentMask bits (include/iba/ib_types.h:2614-2616).
    pub struct PKeyTableRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// BlockNum.
        const BLOCK = 1 << 1;
        /// PortNum.
        const PORT_NUM = 1 << 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// LID 5, block 0, port 1: the default full P_Key, then 0x8001.., then zeros.
    fn bytes() -> [u8; 72] {
        let mut b = [0; 72];
        b[..5].copy_from_slice(&[0x00, 0x05, 0x00, 0x00, 0x01]);
        b[8..12].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = PKeyTableRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.lid(), v.block(), v.port_num()), (5, 0, 1));
        assert_eq!((v.table().p_key(0), v.table().p_key(1)), (0xffff, 0x8001));
        let mut p_keys = [0; 32];
        p_keys[..2].copy_from_slice(&[0xffff, 0x8001]);
        let repr = PKeyTableRecordRepr {
            lid: 5,
            block: 0,
            port_num: 1,
            table: PKeyTableRepr { p_keys },
        };
        assert_golden(&bytes, &repr);
        assert_eq!(PKeyTableRecordMask::PORT_NUM.0, 4);
    }
}
