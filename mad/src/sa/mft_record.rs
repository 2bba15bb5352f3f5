//! MulticastForwardingTableRecord (SA attribute 0x0017, IBA 15.2.5.8): one block of one
//! position of a switch's multicast forwarding table.

use crate::attr::multicast_forwarding_table::{
    MulticastForwardingTable, MulticastForwardingTableRepr,
};

sa_record! {
    /// A view of a MulticastForwardingTableRecord (72 bytes: LID, Position and BlockNum in one
    /// 16-bit word with bits 11:9 reserved, 4 reserved bytes, the block at 8; OpenSM's
    /// `ib_mft_record_t`).
    pub struct MftRecord[72];
    /// A MulticastForwardingTableRecord.
    pub struct MftRecordRepr = SaAttributeId::MulticastForwardingTableRecord;
    {
        /// The switch's LID.
        lid / set_lid: u16 = 0, 16;
        /// Position: which 16 ports the masks cover (ports 16 * position and up).
        position / set_position: u8 = 16, 4;
        /// BlockNum: the block of 32 MLIDs (MLID 0xC000 + 32 * block and up).
        block / set_block: u16 = 23, 9;
    }
    {
        /// The MulticastForwardingTable block.
        table / table_mut: MulticastForwardingTable(MulticastForwardingTableRepr) = 8;
    }
}

flags! {
    /// MulticastForwardingTableRecord ComponentMask bits (include/iba/ib_types.h:2627-2631);
    /// bits 2 and 4 are the reserved fields.
    pub struct MftRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// Position.
        const POSITION = 1 << 1;
        /// BlockNum.
        const BLOCK = 1 << 3;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// Switch LID 2, position 1, block 0x1ab: MLID 0xC000 + 32 * 0x1ab + i goes to the ports
    /// of mask 0x0101 * i.
    fn bytes() -> [u8; 72] {
        let mut b = [0; 72];
        b[..4].copy_from_slice(&[0x00, 0x02, 0x11, 0xab]);
        for i in 0..32 {
            b[8 + 2 * i..10 + 2 * i].copy_from_slice(&(0x0101 * i as u16).to_be_bytes());
        }
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = MftRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.lid(), v.position(), v.block()), (2, 1, 0x1ab));
        assert_eq!(v.table().port_mask(3), 0x0303);
        let repr = MftRecordRepr {
            lid: 2,
            position: 1,
            block: 0x1ab,
            table: MulticastForwardingTableRepr {
                port_masks: core::array::from_fn(|i| 0x0101 * i as u16),
            },
        };
        assert_golden(&bytes, &repr);
        assert_eq!(MftRecordMask::BLOCK.0, 8);
    }

    /// Bits 11:9 of the Position/BlockNum word are reserved: read past, written as zero.
    #[test]
    fn reserved_bits_between_position_and_block_are_ignored() {
        let mut bytes = bytes();
        bytes[2] |= 0x0e;
        let v = MftRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.position(), v.block()), (1, 0x1ab));
    }
}
