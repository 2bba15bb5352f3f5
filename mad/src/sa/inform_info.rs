//! InformInfo (SA attribute 0x0003, IBA 13.4.8.3): a subscription to the notices (traps) the SA
//! forwards, sent with SubnAdmSet.

use crate::vocabulary::Gid;

sa_record! {
    /// A view of an InformInfo (36 bytes; bits 160-175, 248-250 and 256-263 are reserved).
    pub struct InformInfo[36];
    /// An InformInfo.
    pub struct InformInfoRepr = SaAttributeId::InformInfo;
    {
        /// GID of the port whose notices are wanted; 0 for the LID range.
        gid / set_gid: Gid = 0, 128;
        /// LIDRangeBegin; [`InformInfoRepr::ALL_LIDS`] for every LID.
        lid_range_begin / set_lid_range_begin: u16 = 128, 16;
        /// LIDRangeEnd.
        lid_range_end / set_lid_range_end: u16 = 144, 16;
        /// IsGeneric: 1 for IBA-defined traps, 0 for vendor ones.
        is_generic / set_is_generic: u8 = 176, 8;
        /// Subscribe: 1 to subscribe, 0 to unsubscribe (OpenSM rejects anything else).
        subscribe / set_subscribe: u8 = 184, 8;
        /// Type of the notices; 0xFFFF for any.
        notice_type / set_notice_type: u16 = 192, 16;
        /// TrapNumber (generic) or DeviceID (vendor); 0xFFFF for any.
        trap_number / set_trap_number: u16 = 208, 16;
        /// QPN the Reports go to.
        qpn / set_qpn: u32 = 224, 24;
        /// RespTimeValue.
        resp_time_value / set_resp_time_value: u8 = 251, 5;
        /// ProducerType (generic) or VendorID (vendor); 0xFFFFFF for any.
        producer_type / set_producer_type: u32 = 264, 24;
    }
    {}
}

impl InformInfoRepr {
    /// LIDRangeBegin meaning every LID.
    pub const ALL_LIDS: u16 = 0xffff;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    /// srp_daemon's subscription to trap 144 from any LID, as QPN 0x48 with RespTimeValue 18.
    #[rustfmt::skip]
    static BYTES: [u8; 36] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 0: GID
        0xff, 0xff, 0x00, 0x00,                         // 16: LID range
        0x00, 0x00, 0x01, 0x01,                         // 20: reserved, IsGeneric, Subscribe
        0xff, 0xff, 0x00, 0x90,                         // 24: any type, trap 144
        0x00, 0x00, 0x48, 0x12,                         // 28: QPN | RespTimeValue
        0x00, 0xff, 0xff, 0xff,                         // 32: reserved | any producer
    ];

    #[test]
    fn deconstruct_and_golden() {
        let v = InformInfo::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.lid_range_begin(), InformInfoRepr::ALL_LIDS);
        assert_eq!((v.is_generic(), v.subscribe()), (1, 1));
        assert_eq!((v.notice_type(), v.trap_number()), (0xffff, 144));
        assert_eq!((v.qpn(), v.resp_time_value()), (0x48, 18));
        assert_eq!(v.producer_type(), 0xff_ffff);
        let repr = InformInfoRepr {
            gid: Gid(0),
            lid_range_begin: 0xffff,
            lid_range_end: 0,
            is_generic: 1,
            subscribe: 1,
            notice_type: 0xffff,
            trap_number: 144,
            qpn: 0x48,
            resp_time_value: 18,
            producer_type: 0xff_ffff,
        };
        assert_golden(&BYTES, &repr);
        assert_eq!(InformInfoRepr::ATTRIBUTE_ID, SaAttributeId::InformInfo);
    }
}
