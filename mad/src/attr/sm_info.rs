//! SMInfo (attribute 0x0020, IBA 14.2.5.13): what SMs exchange to elect a master.

open_enum! {
    /// SMInfo SMState.
    pub enum SmState(u8) {
        /// Not active.
        NotActive = 0,
        /// Discovering the subnet.
        Discovering = 1,
        /// Standby: polling the master.
        Standby = 2,
        /// Master.
        Master = 3,
    }
}

layout! {
    /// A view of an SMInfo attribute (21 bytes).
    pub struct SmInfo[21];
    /// An SMInfo attribute, every field.
    pub struct SmInfoRepr;
    {
        /// GUID of the SM's port.
        guid / set_guid: u64 = 0, 64;
        /// SM_Key (zero unless the requester proved it knows the key).
        sm_key / set_sm_key: u64 = 64, 64;
        /// ActCount: a counter the master bumps so that standbys see it is alive.
        act_count / set_act_count: u32 = 128, 32;
        /// Priority (higher wins the election).
        priority / set_priority: u8 = 160, 4;
        /// SMState.
        sm_state / set_sm_state: SmState = 164, 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 21] = [
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01, // 0: GUID
        0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, // 8: SM_Key
        0xde, 0xad, 0xbe, 0xef,                         // 16: ActCount
        0xe3,                                           // 20: Priority 14 | SMState 3 Master
    ];

    fn repr() -> SmInfoRepr {
        SmInfoRepr {
            guid: 0x0002_c903_0000_0001,
            sm_key: 0x0123_4567_89ab_cdef,
            act_count: 0xdead_beef,
            priority: 14,
            sm_state: SmState::Master,
        }
    }

    #[test]
    fn deconstruct() {
        let v = SmInfo::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.guid(), 0x0002_c903_0000_0001);
        assert_eq!(v.sm_key(), 0x0123_4567_89ab_cdef);
        assert_eq!(v.act_count(), 0xdead_beef);
        assert_eq!(v.priority(), 14);
        assert_eq!(v.sm_state(), SmState::Master);
        assert_eq!(SmInfoRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 21];
        repr().emit(&mut SmInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            SmInfo::new_checked(&BYTES[..20]),
            Err(crate::Error::Truncated {
                len: 20,
                needed: 21
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(repr: SmInfoRepr) {
            prop_assert_round_trip!(SmInfo, SmInfoRepr, repr);
        }
    }
}
