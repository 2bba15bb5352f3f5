//! SLtoVLMappingTableRecord (SA attribute 0x0013, IBA 15.2.5.4): the SL2VL table of one
//! input/output port pair.

use crate::attr::sl_to_vl_mapping_table::{SlToVlMappingTable, SlToVlMappingTableRepr};

sa_record! {
    /// A view of an SLtoVLMappingTableRecord (16 bytes: LID, InputPortNum, OutputPortNum, 4
    /// reserved, the table at 8).
    pub struct SlToVlTableRecord[16];
    /// An SLtoVLMappingTableRecord.
    pub struct SlToVlTableRecordRepr = SaAttributeId::SlToVlMappingTableRecord;
    {
        /// The node's base LID.
        lid / set_lid: u16 = 0, 16;
        /// InputPortNum.
        in_port / set_in_port: u8 = 16, 8;
        /// OutputPortNum.
        out_port / set_out_port: u8 = 24, 8;
    }
    {
        /// SLtoVLMappingTable.
        table / table_mut: SlToVlMappingTable(SlToVlMappingTableRepr) = 8;
    }
}

flags! {
    /// SLtoVLMappingTableRecord ComponentMask bits (include/iba/ib_types.h:2609-2611).
    pub struct SlToVlTableRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// InputPortNum.
        const IN_PORT = 1 << 1;
        /// OutputPortNum.
        const OUT_PORT = 1 << 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// LID 3, input 1 to output 2, SL i to VL i mod 8.
    #[rustfmt::skip]
    static BYTES: [u8; 16] = [
        0x00, 0x03, 0x01, 0x02, 0, 0, 0, 0,
        0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67,
    ];

    #[test]
    fn deconstruct_and_golden() {
        let v = SlToVlTableRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!((v.lid(), v.in_port(), v.out_port()), (3, 1, 2));
        assert_eq!(v.table().vl(9), 1);
        let repr = SlToVlTableRecordRepr {
            lid: 3,
            in_port: 1,
            out_port: 2,
            table: SlToVlMappingTableRepr {
                vls: core::array::from_fn(|sl| sl as u8 % 8),
            },
        };
        assert_golden(&BYTES, &repr);
        assert_eq!(SlToVlTableRecordMask::OUT_PORT.0, 4);
    }
}
