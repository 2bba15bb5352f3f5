//! What a congestion control agent says of itself (IBA A10.4.3.2, A10.4.3.3, A10.4.3.9): its
//! capabilities, its key, and its clock.

layout! {
    /// A view of CongestionInfo (attribute 0x0011, 4 bytes; byte 3 reserved).
    pub struct CongestionInfo[4];
    /// A CongestionInfo, every field.
    pub struct CongestionInfoRepr;
    {
        /// CongestionInfo: the agent's optional capabilities, as flags.
        congestion_info / set_congestion_info: u16 = 0, 16;
        /// ControlTableCap: how many 64-entry blocks of the congestion control table a CA
        /// keeps (0 on a switch).
        control_table_cap / set_control_table_cap: u8 = 16, 8;
    }
}

layout! {
    /// A view of CongestionKeyInfo (attribute 0x0012, 16 bytes): the CC_Key and how it is
    /// guarded, as the M_Key is for the SMA.
    pub struct CongestionKeyInfo[16];
    /// A CongestionKeyInfo, every field.
    pub struct CongestionKeyInfoRepr;
    {
        /// CC_Key.
        cc_key / set_cc_key: u64 = 0, 64;
        /// CC_KeyProtectBit: a Get with the wrong key returns no key either.
        protect / set_protect: bool = 64, 1;
        /// CC_KeyLeasePeriod, in seconds (0: the lease never ends).
        lease_period / set_lease_period: u16 = 80, 16;
        /// CC_KeyViolations: requests that carried the wrong key.
        violations / set_violations: u16 = 96, 16;
    }
}

layout! {
    /// A view of TimeStamp (attribute 0x0018, 4 bytes).
    pub struct TimeStamp[4];
    /// A TimeStamp.
    pub struct TimeStampRepr;
    {
        /// The agent's free-running clock, in 1.024 us units.
        timestamp / set_timestamp: u32 = 0, 32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn congestion_info_holds_the_flags_and_the_table_blocks() {
        let bytes = [0x80, 0x01, 0x02, 0x00];
        let info = CongestionInfoRepr::parse(&CongestionInfo::new_checked(&bytes[..]).unwrap());
        assert_eq!(
            info,
            Ok(CongestionInfoRepr {
                congestion_info: 0x8001,
                control_table_cap: 2,
            })
        );
        assert!(CongestionInfo::new_checked(&bytes[..3]).is_err());
    }

    #[test]
    fn the_key_then_its_protect_bit_lease_and_violations() {
        #[rustfmt::skip]
        let bytes = [
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // CC_Key
            0x80, 0x00,                                     // protected, reserved
            0x00, 0x3c,                                     // lease 60 s
            0x00, 0x05,                                     // 5 violations
            0x00, 0x00,                                     // reserved
        ];
        let key = CongestionKeyInfoRepr {
            cc_key: 0x0102_0304_0506_0708,
            protect: true,
            lease_period: 60,
            violations: 5,
        };
        let view = CongestionKeyInfo::new_checked(&bytes[..]).unwrap();
        assert_eq!(CongestionKeyInfoRepr::parse(&view), Ok(key));
        let mut out = [0xa5u8; 16];
        key.emit(&mut CongestionKeyInfo::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
    }

    #[test]
    fn the_timestamp_is_one_big_endian_word() {
        let bytes = [0x00, 0x01, 0x00, 0x02];
        let view = TimeStamp::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.timestamp(), 0x0001_0002);
    }

    proptest! {
        #[test]
        fn key_info_round_trips(key in any::<CongestionKeyInfoRepr>()) {
            let mut bytes = [0u8; 16];
            key.emit(&mut CongestionKeyInfo::new_unchecked(&mut bytes[..]));
            let view = CongestionKeyInfo::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(CongestionKeyInfoRepr::parse(&view), Ok(key));
        }
    }
}
