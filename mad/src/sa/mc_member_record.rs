//! MCMemberRecord (SA attribute 0x0038, IBA 15.2.5.17): a multicast group, or one port's
//! membership of it; joins (SubnAdmSet), leaves (SubnAdmDelete) and queries all carry it.

use super::{Mtu, Rate, Selector};
use crate::vocabulary::Gid;

sa_record! {
    /// A view of an MCMemberRecord (56 bytes: the 52 of IBA 15.2.5.17 and 4 bytes of padding,
    /// OpenSM's `ib_member_rec_t`; bits 392-398 and bytes 50-51 are reserved).
    ///
    /// ProxyJoin is where OpenSM 3.3.23 reads and writes it: its `uint8_t proxy_join:1`
    /// bitfield (include/iba/ib_types.h:7680) is the least significant bit of byte 49 under
    /// GCC on x86, where IBA (and libibmad, the kernel) put it in the most significant one.
    /// Clients send 0 there, so the two only differ in what a trusted query reports of a
    /// proxy-joined member; this layout answers as OpenSM does.
    pub struct McMemberRecord[56];
    /// An MCMemberRecord.
    pub struct McMemberRecordRepr = SaAttributeId::McMemberRecord;
    {
        /// MGID: the group's multicast GID.
        mgid / set_mgid: Gid = 0, 128;
        /// PortGID: the member port.
        port_gid / set_port_gid: Gid = 128, 128;
        /// Q_Key of the group.
        q_key / set_q_key: u32 = 256, 32;
        /// MLID: the group's multicast LID.
        mlid / set_mlid: u16 = 288, 16;
        /// MTUSelector.
        mtu_selector / set_mtu_selector: Selector = 304, 2;
        /// MTU.
        mtu / set_mtu: Mtu = 306, 6;
        /// TClass.
        tclass / set_tclass: u8 = 312, 8;
        /// P_Key of the group's partition.
        p_key / set_p_key: u16 = 320, 16;
        /// RateSelector.
        rate_selector / set_rate_selector: Selector = 336, 2;
        /// Rate.
        rate / set_rate: Rate = 338, 6;
        /// PacketLifeTimeSelector.
        packet_life_selector / set_packet_life_selector: Selector = 344, 2;
        /// PacketLifeTime: 4.096 us * 2^value.
        packet_life / set_packet_life: u8 = 346, 6;
        /// SL.
        sl / set_sl: u8 = 352, 4;
        /// FlowLabel.
        flow_label / set_flow_label: u32 = 356, 20;
        /// HopLimit.
        hop_limit / set_hop_limit: u8 = 376, 8;
        /// Scope: the MGID's scope (2 link-local, 5 site-local, 8 organisation, 14 global).
        scope / set_scope: u8 = 384, 4;
        /// JoinState.
        join_state / set_join_state: JoinState = 388, 4;
        /// ProxyJoin: the membership was made by another port of the partition (at OpenSM's
        /// bit, see [`McMemberRecord`]).
        proxy_join / set_proxy_join: bool = 399, 1;
    }
    {}
}

flags! {
    /// JoinState (IBA 15.2.5.17, table 221; include/iba/ib_types.h:2160-2163): how a port
    /// belongs to a group, one bit per way; joins add bits, leaves remove them.
    pub struct JoinState(u8) {
        /// FullMember: sends and receives.
        const FULL = 1 << 0;
        /// NonMember: receives only.
        const NON_MEMBER = 1 << 1;
        /// SendOnlyNonMember: sends only.
        const SEND_ONLY_NON_MEMBER = 1 << 2;
        /// SendOnlyFullMember: sends only, and counts as a full member (it may create the
        /// group and keeps it alive).
        const SEND_ONLY_FULL = 1 << 3;
    }
}

impl JoinState {
    /// No membership at all.
    pub const NONE: Self = Self(0);
    /// Every state at once: what OpenSM removes when the port leaves the fabric.
    pub const ALL: Self = Self(0xf);

    /// Whether the state makes a full member: FullMember or SendOnlyFullMember (OpenSM's
    /// `full_join_state`).
    pub const fn is_full(self) -> bool {
        self.0 & (Self::FULL.0 | Self::SEND_ONLY_FULL.0) != 0
    }

    /// The bits of `self` that `other` lacks.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

flags! {
    /// MCMemberRecord ComponentMask bits (include/iba/ib_types.h:2750-2768).
    pub struct McMemberRecordMask(u64) {
        /// MGID.
        const MGID = 1 << 0;
        /// PortGID.
        const PORT_GID = 1 << 1;
        /// Q_Key.
        const Q_KEY = 1 << 2;
        /// MLID.
        const MLID = 1 << 3;
        /// MTUSelector.
        const MTU_SELECTOR = 1 << 4;
        /// MTU.
        const MTU = 1 << 5;
        /// TClass.
        const TCLASS = 1 << 6;
        /// P_Key.
        const P_KEY = 1 << 7;
        /// RateSelector.
        const RATE_SELECTOR = 1 << 8;
        /// Rate.
        const RATE = 1 << 9;
        /// PacketLifeTimeSelector.
        const PACKET_LIFE_SELECTOR = 1 << 10;
        /// PacketLifeTime.
        const PACKET_LIFE = 1 << 11;
        /// SL.
        const SL = 1 << 12;
        /// FlowLabel.
        const FLOW_LABEL = 1 << 13;
        /// HopLimit.
        const HOP_LIMIT = 1 << 14;
        /// Scope.
        const SCOPE = 1 << 15;
        /// JoinState.
        const JOIN_STATE = 1 << 16;
        /// ProxyJoin.
        const PROXY_JOIN = 1 << 17;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    /// A port's membership of partition 0x7fff's IPv4 broadcast group as OpenSM answers a
    /// trusted query: MLID 0xC000, Q_Key 0x0B1B, MTU and rate exactly 2048 and 10 Gb/s,
    /// lifetime exactly 18, SL 0, HopLimit 0 (link-local), full member by proxy.
    #[rustfmt::skip]
    static BYTES: [u8; 56] = [
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,       // 0: MGID
        0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        0xfe, 0x80, 0, 0, 0, 0, 0, 0,                   // 16: PortGID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x0b, 0x1b,                         // 32: Q_Key
        0xc0, 0x00,                                     // 36: MLID
        0x84,                                           // 38: MTU exactly 2048
        0x00,                                           // 39: TClass
        0xff, 0xff,                                     // 40: P_Key
        0x83,                                           // 42: rate exactly 10 Gb/s
        0x92,                                           // 43: life exactly 18
        0x00, 0x00, 0x00, 0x00,                         // 44: SL | FlowLabel | HopLimit
        0x21,                                           // 48: scope 2 | JoinState full
        0x01,                                           // 49: ProxyJoin (OpenSM's bit)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,             // 50: reserved, padding
    ];

    fn repr() -> McMemberRecordRepr {
        McMemberRecordRepr {
            mgid: Gid(0xff12_401b_ffff_0000_0000_0000_ffff_ffff),
            port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001),
            q_key: 0x0b1b,
            mlid: 0xc000,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            tclass: 0,
            p_key: 0xffff,
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps10,
            packet_life_selector: Selector::Exactly,
            packet_life: 18,
            sl: 0,
            flow_label: 0,
            hop_limit: 0,
            scope: 2,
            join_state: JoinState::FULL,
            proxy_join: true,
        }
    }

    #[test]
    fn deconstruct_and_golden() {
        let v = McMemberRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.mgid().to_string(), "ff12:401b:ffff::ffff:ffff");
        assert_eq!((v.q_key(), v.mlid(), v.p_key()), (0x0b1b, 0xc000, 0xffff));
        assert_eq!(
            (v.mtu_selector(), v.mtu(), v.rate()),
            (Selector::Exactly, Mtu::Mtu2048, Rate::Gbps10)
        );
        assert_eq!((v.scope(), v.join_state()), (2, JoinState::FULL));
        assert!(v.proxy_join());
        assert_golden(&BYTES, &repr());
        assert_eq!(
            McMemberRecordRepr::ATTRIBUTE_ID,
            SaAttributeId::McMemberRecord
        );
    }

    /// SL, FlowLabel and HopLimit share one big-endian word: SL in bits 31:28, FlowLabel in
    /// 27:8, HopLimit in 7:0 (`ib_member_set_sl_flow_hop`).
    #[test]
    fn sl_flow_label_and_hop_limit_share_a_word() {
        let mut bytes = BYTES;
        bytes[44..48].copy_from_slice(&0x3123_45ff_u32.to_be_bytes());
        let v = McMemberRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.sl(), v.flow_label(), v.hop_limit()), (3, 0x12345, 0xff));
    }

    /// IBA's ProxyJoin bit (the MSB of byte 49) is reserved here, as OpenSM reads it.
    #[test]
    fn the_iba_proxy_join_bit_is_not_opensms() {
        let mut bytes = BYTES;
        bytes[49] = 0x80;
        let v = McMemberRecord::new_checked(&bytes[..]).unwrap();
        assert!(!v.proxy_join());
    }

    #[test]
    fn join_states_and_mask_bits() {
        assert!(JoinState::FULL.is_full());
        assert!(JoinState::SEND_ONLY_FULL.is_full());
        assert!(!(JoinState::NON_MEMBER | JoinState::SEND_ONLY_NON_MEMBER).is_full());
        assert_eq!(JoinState::ALL.without(JoinState::FULL), JoinState(0xe));
        // The IPoIB broadcast join: MGID | PortGID | P_Key | JoinState.
        let ipoib = McMemberRecordMask::MGID
            | McMemberRecordMask::PORT_GID
            | McMemberRecordMask::P_KEY
            | McMemberRecordMask::JOIN_STATE;
        assert_eq!(ipoib.0, 0x10083);
        assert_eq!(McMemberRecordMask::PROXY_JOIN.0, 1 << 17);
    }
}
