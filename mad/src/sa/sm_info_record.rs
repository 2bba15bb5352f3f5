//! SMInfoRecord (SA attribute 0x0018, IBA 15.2.5.12): an SM's SMInfo under its port's LID.

use crate::attr::sm_info::{SmInfo, SmInfoRepr};

sa_record! {
    /// A view of an SMInfoRecord (32 bytes: LID, 2 reserved, SMInfo at 4, 7 bytes of padding).
    pub struct SmInfoRecord[32];
    /// An SMInfoRecord.
    pub struct SmInfoRecordRepr = SaAttributeId::SmInfoRecord;
    {
        /// The LID of the SM's port.
        lid / set_lid: u16 = 0, 16;
    }
    {
        /// SMInfo.
        sm_info / sm_info_mut: SmInfo(SmInfoRepr) = 4;
    }
}

flags! {
    /// SMInfoRecord ComponentMask bits (include/iba/ib_types.h:2812-2818). OpenSM ignores
    /// SM_KEY and ACT_COUNT (osm_sa_sminfo_record.c).
    pub struct SmInfoRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// SMInfo GUID.
        const GUID = 1 << 2;
        /// SMInfo SM_Key.
        const SM_KEY = 1 << 3;
        /// SMInfo ActCount.
        const ACT_COUNT = 1 << 4;
        /// SMInfo Priority.
        const PRIORITY = 1 << 5;
        /// SMInfo SMState.
        const SM_STATE = 1 << 6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::sm_info::SmState;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    #[rustfmt::skip]
    static BYTES: [u8; 32] = [
        0x00, 0x01, 0x00, 0x00,                         // 0: LID 1, reserved
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01, // 4: GUID
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 12: SM_Key (0 in an answer)
        0x00, 0x00, 0x12, 0x34,                         // 20: ActCount
        0xf3,                                           // 24: Priority 15 | Master
        0, 0, 0, 0, 0, 0, 0,                            // 25: padding
    ];

    #[test]
    fn deconstruct() {
        let v = SmInfoRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.lid(), 1);
        assert_eq!(v.sm_info().guid(), 0x0002_c903_0000_0001);
        assert_eq!(v.sm_info().act_count(), 0x1234);
        assert_eq!(v.sm_info().sm_state(), SmState::Master);
        assert_eq!(SmInfoRecordRepr::SIZE, 32);
        assert_eq!(SmInfoRecordRepr::ATTRIBUTE_ID, SaAttributeId::SmInfoRecord);
    }

    #[test]
    fn golden() {
        let repr = SmInfoRecordRepr {
            lid: 1,
            sm_info: SmInfoRepr {
                guid: 0x0002_c903_0000_0001,
                sm_key: 0,
                act_count: 0x1234,
                priority: 15,
                sm_state: SmState::Master,
            },
        };
        assert_golden(&BYTES, &repr);
        assert_eq!(SmInfoRecordMask::SM_STATE.0, 0x40);
    }
}
