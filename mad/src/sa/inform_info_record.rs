//! InformInfoRecord (SA attribute 0x00F3, IBA 15.2.5.12): a subscription the SA holds, by
//! subscriber.

use super::inform_info::{InformInfo, InformInfoRepr};
use crate::vocabulary::Gid;

sa_record! {
    /// A view of an InformInfoRecord (64 bytes: SubscriberGID, Enum, 6 reserved, InformInfo at
    /// 24, 4 bytes of padding).
    pub struct InformInfoRecord[64];
    /// An InformInfoRecord.
    pub struct InformInfoRecordRepr = SaAttributeId::InformInfoRecord;
    {
        /// SubscriberGID.
        subscriber_gid / set_subscriber_gid: Gid = 0, 128;
        /// Enum: tells apart subscriptions of one subscriber (always 0 from OpenSM).
        enumeration / set_enumeration: u16 = 128, 16;
    }
    {
        /// InformInfo.
        inform_info / inform_info_mut: InformInfo(InformInfoRepr) = 24;
    }
}

flags! {
    /// InformInfoRecord ComponentMask bits (include/iba/ib_types.h:2821-2838). OpenSM matches
    /// only SUBSCRIBER_GID and ENUMERATION.
    pub struct InformInfoRecordMask(u64) {
        /// SubscriberGID.
        const SUBSCRIBER_GID = 1 << 0;
        /// Enum.
        const ENUMERATION = 1 << 1;
        /// InformInfo GID.
        const GID = 1 << 3;
        /// InformInfo LIDRangeBegin.
        const LID_RANGE_BEGIN = 1 << 4;
        /// InformInfo LIDRangeEnd.
        const LID_RANGE_END = 1 << 5;
        /// InformInfo IsGeneric.
        const IS_GENERIC = 1 << 7;
        /// InformInfo Subscribe.
        const SUBSCRIBE = 1 << 8;
        /// InformInfo Type.
        const NOTICE_TYPE = 1 << 9;
        /// InformInfo TrapNumber or DeviceID.
        const TRAP_NUMBER = 1 << 10;
        /// InformInfo QPN.
        const QPN = 1 << 11;
        /// InformInfo RespTimeValue.
        const RESP_TIME_VALUE = 1 << 13;
        /// InformInfo ProducerType or VendorID.
        const PRODUCER_TYPE = 1 << 15;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    fn bytes() -> [u8; 64] {
        let mut b = [0; 64];
        b[..16].copy_from_slice(&0xfe80_0000_0000_0000_0002_c903_0000_0005_u128.to_be_bytes());
        b[16..18].copy_from_slice(&[0x00, 0x02]);
        // InformInfo: LIDs 1..=3, generic, subscribe, trap 128, QPN 1.
        b[40..44].copy_from_slice(&[0x00, 0x01, 0x00, 0x03]);
        b[46..52].copy_from_slice(&[0x01, 0x01, 0xff, 0xff, 0x00, 0x80]);
        b[52..56].copy_from_slice(&[0x00, 0x00, 0x01, 0x00]);
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = InformInfoRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!(v.subscriber_gid().to_string(), "fe80::2:c903:0:5");
        assert_eq!(v.enumeration(), 2);
        assert_eq!(v.inform_info().lid_range_end(), 3);
        assert_eq!(v.inform_info().trap_number(), 128);
        assert_eq!(v.inform_info().qpn(), 1);
        let repr = InformInfoRecordRepr {
            subscriber_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0005),
            enumeration: 2,
            inform_info: InformInfoRepr {
                gid: Gid(0),
                lid_range_begin: 1,
                lid_range_end: 3,
                is_generic: 1,
                subscribe: 1,
                notice_type: 0xffff,
                trap_number: 128,
                qpn: 1,
                resp_time_value: 0,
                producer_type: 0,
            },
        };
        assert_golden(&bytes, &repr);
        assert_eq!(InformInfoRecordRepr::SIZE, 64);
        assert_eq!(InformInfoRecordMask::PRODUCER_TYPE.0, 1 << 15);
    }
}
