//! SwitchInfoRecord (SA attribute 0x0014, IBA 15.2.5.5): a switch's SwitchInfo under its LID.

use crate::attr::switch_info::{SwitchInfo, SwitchInfoRepr};

sa_record! {
    /// A view of a SwitchInfoRecord (24 bytes: LID, 2 reserved, SwitchInfo at 4).
    pub struct SwitchInfoRecord[24];
    /// A SwitchInfoRecord.
    pub struct SwitchInfoRecordRepr = SaAttributeId::SwitchInfoRecord;
    {
        /// The switch's LID (port 0's).
        lid / set_lid: u16 = 0, 16;
    }
    {
        /// SwitchInfo.
        switch_info / switch_info_mut: SwitchInfo(SwitchInfoRepr) = 4;
    }
}

flags! {
    /// SwitchInfoRecord ComponentMask bits (include/iba/ib_types.h:2619-2620).
    pub struct SwitchInfoRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// LID 9; LinearFDBCap 0xc000, LinearFDBTop 0x20, LIDsPerPort 1, EnhancedPort0.
    #[rustfmt::skip]
    static BYTES: [u8; 24] = [
        0x00, 0x09, 0x00, 0x00,
        0xc0, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x20,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x08, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct_and_golden() {
        let v = SwitchInfoRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.lid(), 9);
        assert_eq!(v.switch_info().linear_fdb_cap(), 0xc000);
        assert_eq!(v.switch_info().multicast_fdb_cap(), 0x200);
        assert!(v.switch_info().enhanced_port0());
        let repr = SwitchInfoRecordRepr {
            lid: 9,
            switch_info: SwitchInfoRepr::parse(&v.switch_info()).unwrap(),
        };
        assert_eq!(repr.switch_info.linear_fdb_top, 0x20);
        assert_golden(&BYTES, &repr);
        assert_eq!(SwitchInfoRecordMask::LID.0, 1);
    }
}
