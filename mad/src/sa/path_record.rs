//! PathRecord (SA attribute 0x0035, IBA 15.2.5.16): how to reach one port from another, and the
//! MTU, rate and selector codes it and the other path-like records use.

use core::cmp::Ordering;

use crate::vocabulary::Gid;

open_enum! {
    /// A path MTU code (IBA 15.2.5.16, table 214; PortInfo NeighborMTU uses the same codes).
    /// The codes grow with the size, so the derived order is the order of sizes.
    pub enum Mtu(u8) {
        /// 256 bytes.
        Mtu256 = 1,
        /// 512 bytes.
        Mtu512 = 2,
        /// 1024 bytes.
        Mtu1024 = 3,
        /// 2048 bytes.
        Mtu2048 = 4,
        /// 4096 bytes.
        Mtu4096 = 5,
    }
}

impl Mtu {
    /// The size in bytes, or `None` for a reserved code.
    pub const fn bytes(self) -> Option<u16> {
        match self {
            Mtu::Mtu256 => Some(256),
            Mtu::Mtu512 => Some(512),
            Mtu::Mtu1024 => Some(1024),
            Mtu::Mtu2048 => Some(2048),
            Mtu::Mtu4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }
}

open_enum! {
    /// A path rate code (IBA 15.2.5.16, table 215; include/iba/ib_types.h:5192-5212). Codes
    /// were added as links got faster, so they are not in the order of speed: compare with
    /// [`Rate::cmp_speed`], never with `<`.
    pub enum Rate(u8) {
        /// 2.5 Gb/s (1X SDR).
        Gbps2_5 = 2,
        /// 10 Gb/s.
        Gbps10 = 3,
        /// 30 Gb/s.
        Gbps30 = 4,
        /// 5 Gb/s.
        Gbps5 = 5,
        /// 20 Gb/s.
        Gbps20 = 6,
        /// 40 Gb/s.
        Gbps40 = 7,
        /// 60 Gb/s.
        Gbps60 = 8,
        /// 80 Gb/s.
        Gbps80 = 9,
        /// 120 Gb/s.
        Gbps120 = 10,
        /// 14 Gb/s (1X FDR).
        Gbps14 = 11,
        /// 56 Gb/s.
        Gbps56 = 12,
        /// 112 Gb/s.
        Gbps112 = 13,
        /// 168 Gb/s.
        Gbps168 = 14,
        /// 25 Gb/s (1X EDR).
        Gbps25 = 15,
        /// 100 Gb/s.
        Gbps100 = 16,
        /// 200 Gb/s.
        Gbps200 = 17,
        /// 300 Gb/s.
        Gbps300 = 18,
        /// 28 Gb/s.
        Gbps28 = 19,
        /// 50 Gb/s.
        Gbps50 = 20,
        /// 400 Gb/s.
        Gbps400 = 21,
        /// 600 Gb/s.
        Gbps600 = 22,
    }
}

impl Rate {
    /// The rate codes from slowest to fastest, as OpenSM ranks them (`ordered_rates`,
    /// libopensm/osm_helper.c:444-467). The 64b/66b-coded rates rank by the 8b/10b rate they
    /// equal: 14 Gb/s as 17, so between 10 and 20; 25 Gb/s as 31.25, so above 30.
    pub const BY_SPEED: [Rate; 21] = [
        Rate::Gbps2_5,
        Rate::Gbps5,
        Rate::Gbps10,
        Rate::Gbps14,
        Rate::Gbps20,
        Rate::Gbps30,
        Rate::Gbps25,
        Rate::Gbps28,
        Rate::Gbps40,
        Rate::Gbps60,
        Rate::Gbps50,
        Rate::Gbps56,
        Rate::Gbps80,
        Rate::Gbps120,
        Rate::Gbps100,
        Rate::Gbps112,
        Rate::Gbps168,
        Rate::Gbps200,
        Rate::Gbps300,
        Rate::Gbps400,
        Rate::Gbps600,
    ];

    /// The rate's rank in [`BY_SPEED`](Self::BY_SPEED) counted from 1, or 0 for a code with
    /// no rate (OpenSM's `ordered_rates` gives codes 0 and 1 rank 0 too).
    pub fn speed_rank(self) -> usize {
        Self::BY_SPEED
            .iter()
            .position(|&rate| rate == self)
            .map_or(0, |i| i + 1)
    }

    /// Compares two rates by speed, as OpenSM's `ib_path_compare_rates`
    /// (libopensm/osm_helper.c:3288-3304). Codes with no rate compare equal to each other and
    /// below every rate.
    pub fn cmp_speed(self, other: Rate) -> Ordering {
        self.speed_rank().cmp(&other.speed_rank())
    }

    /// The next slower rate, or `None` for the slowest or a code with no rate
    /// (`ib_path_rate_get_prev`, libopensm/osm_helper.c:3317-3330).
    pub fn slower(self) -> Option<Rate> {
        self.speed_rank().checked_sub(2).map(|i| Self::BY_SPEED[i])
    }

    /// The next faster rate, or `None` for the fastest or a code with no rate
    /// (`ib_path_rate_get_next`, libopensm/osm_helper.c:3332-3345).
    pub fn faster(self) -> Option<Rate> {
        match self.speed_rank() {
            0 => None,
            rank => Self::BY_SPEED.get(rank).copied(),
        }
    }
}

open_enum! {
    /// The selector beside a PathRecord's MTU, rate and packet lifetime (IBA 15.2.5.16): how
    /// the value in a request constrains the answer.
    pub enum Selector(u8) {
        /// Greater than the value.
        GreaterThan = 0,
        /// Less than the value.
        LessThan = 1,
        /// Exactly the value.
        Exactly = 2,
        /// The largest available (the value is ignored).
        Largest = 3,
    }
}

sa_record! {
    /// A view of a PathRecord (64 bytes; bits 353-355 and bytes 58-63 are reserved).
    pub struct PathRecord[64];
    /// A PathRecord.
    pub struct PathRecordRepr = SaAttributeId::PathRecord;
    {
        /// ServiceID.
        service_id / set_service_id: u64 = 0, 64;
        /// DGID.
        dgid / set_dgid: Gid = 64, 128;
        /// SGID.
        sgid / set_sgid: Gid = 192, 128;
        /// DLID.
        dlid / set_dlid: u16 = 320, 16;
        /// SLID.
        slid / set_slid: u16 = 336, 16;
        /// RawTraffic: a raw packet path (no GRH, no transport).
        raw_traffic / set_raw_traffic: bool = 352, 1;
        /// FlowLabel.
        flow_label / set_flow_label: u32 = 356, 20;
        /// HopLimit.
        hop_limit / set_hop_limit: u8 = 376, 8;
        /// TClass.
        tclass / set_tclass: u8 = 384, 8;
        /// Reversible: the path is usable both ways.
        reversible / set_reversible: bool = 392, 1;
        /// NumbPath: in a request, how many paths at most.
        numb_path / set_numb_path: u8 = 393, 7;
        /// P_Key.
        p_key / set_p_key: u16 = 400, 16;
        /// QoSClass.
        qos_class / set_qos_class: u16 = 416, 12;
        /// SL.
        sl / set_sl: u8 = 428, 4;
        /// MTUSelector.
        mtu_selector / set_mtu_selector: Selector = 432, 2;
        /// MTU.
        mtu / set_mtu: Mtu = 434, 6;
        /// RateSelector.
        rate_selector / set_rate_selector: Selector = 440, 2;
        /// Rate.
        rate / set_rate: Rate = 442, 6;
        /// PacketLifeTimeSelector.
        packet_life_selector / set_packet_life_selector: Selector = 448, 2;
        /// PacketLifeTime: 4.096 us * 2^value.
        packet_life / set_packet_life: u8 = 450, 6;
        /// Preference: 0 for the preferred path among several.
        preference / set_preference: u8 = 456, 8;
    }
    {}
}

flags! {
    /// PathRecord ComponentMask bits (IBA 15.2.5.16; include/iba/ib_types.h:2571-2595 has all
    /// but PREFERENCE). Bit 7 is the reserved field.
    pub struct PathRecordMask(u64) {
        /// ServiceID bits 63:56 (OpenSM wants both halves or neither).
        const SERVICE_ID_MSB = 1 << 0;
        /// ServiceID bits 55:0.
        const SERVICE_ID_LSB = 1 << 1;
        /// DGID.
        const DGID = 1 << 2;
        /// SGID.
        const SGID = 1 << 3;
        /// DLID.
        const DLID = 1 << 4;
        /// SLID.
        const SLID = 1 << 5;
        /// RawTraffic.
        const RAW_TRAFFIC = 1 << 6;
        /// FlowLabel.
        const FLOW_LABEL = 1 << 8;
        /// HopLimit.
        const HOP_LIMIT = 1 << 9;
        /// TClass.
        const TCLASS = 1 << 10;
        /// Reversible.
        const REVERSIBLE = 1 << 11;
        /// NumbPath.
        const NUMB_PATH = 1 << 12;
        /// P_Key.
        const P_KEY = 1 << 13;
        /// QoSClass.
        const QOS_CLASS = 1 << 14;
        /// SL.
        const SL = 1 << 15;
        /// MTUSelector.
        const MTU_SELECTOR = 1 << 16;
        /// MTU.
        const MTU = 1 << 17;
        /// RateSelector.
        const RATE_SELECTOR = 1 << 18;
        /// Rate.
        const RATE = 1 << 19;
        /// PacketLifeTimeSelector.
        const PACKET_LIFE_SELECTOR = 1 << 20;
        /// PacketLifeTime.
        const PACKET_LIFE = 1 << 21;
        /// Preference.
        const PREFERENCE = 1 << 22;
    }
}

impl PathRecordMask {
    /// Both ServiceID halves.
    pub const SERVICE_ID: Self = Self(Self::SERVICE_ID_MSB.0 | Self::SERVICE_ID_LSB.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // 0: ServiceID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0,                   // 8: DGID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x02,
        0xfe, 0x80, 0, 0, 0, 0, 0, 0,                   // 24: SGID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x02, 0x00, 0x01,                         // 40: DLID 2, SLID 1
        0x81, 0x23, 0x45, 0x40,                         // 44: Raw | FlowLabel 0x12345 | Hop 64
        0x20,                                           // 48: TClass
        0x81,                                           // 49: Reversible | NumbPath 1
        0xff, 0xff,                                     // 50: P_Key
        0x12, 0x33,                                     // 52: QoSClass 0x123 | SL 3
        0x84,                                           // 54: MTU exactly 2048
        0x87,                                           // 55: rate exactly 40 Gb/s
        0x92,                                           // 56: life exactly 18
        0x01,                                           // 57: Preference
        0, 0, 0, 0, 0, 0,                               // 58: reserved
    ];

    fn repr() -> PathRecordRepr {
        PathRecordRepr {
            service_id: 0x1000_0000_0000_0001,
            dgid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0002),
            sgid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001),
            dlid: 2,
            slid: 1,
            raw_traffic: true,
            flow_label: 0x12345,
            hop_limit: 64,
            tclass: 0x20,
            reversible: true,
            numb_path: 1,
            p_key: 0xffff,
            qos_class: 0x123,
            sl: 3,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps40,
            packet_life_selector: Selector::Exactly,
            packet_life: 18,
            preference: 1,
        }
    }

    #[test]
    fn deconstruct() {
        let v = PathRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.dgid().to_string(), "fe80::2:c903:0:2");
        assert_eq!(v.sgid().guid().0, 0x0002_c903_0000_0001);
        assert_eq!((v.dlid(), v.slid()), (2, 1));
        assert_eq!((v.flow_label(), v.hop_limit()), (0x12345, 64));
        assert_eq!((v.qos_class(), v.sl()), (0x123, 3));
        assert_eq!(
            (v.mtu_selector(), v.mtu()),
            (Selector::Exactly, Mtu::Mtu2048)
        );
        assert_eq!(v.rate(), Rate::Gbps40);
        assert_eq!(PathRecordRepr::SIZE, 64);
        assert_eq!(PathRecordRepr::ATTRIBUTE_ID, SaAttributeId::PathRecord);
    }

    #[test]
    fn golden() {
        assert_golden(&BYTES, &repr());
    }

    #[test]
    fn mtu_sizes_follow_the_codes() {
        assert_eq!(Mtu::Mtu256.bytes(), Some(256));
        assert_eq!(Mtu::Mtu4096.bytes(), Some(4096));
        assert_eq!(Mtu::from(0).bytes(), None);
        assert!(Mtu::Mtu1024 < Mtu::Mtu2048);
    }

    #[test]
    fn rates_compare_by_speed_not_by_code() {
        // Code 11 (14 Gb/s) is above code 3 (10 Gb/s) and below code 6 (20 Gb/s).
        assert_eq!(Rate::Gbps14.cmp_speed(Rate::Gbps10), Ordering::Greater);
        assert_eq!(Rate::Gbps14.cmp_speed(Rate::Gbps20), Ordering::Less);
        // Code 5 (5 Gb/s) is below code 3 (10 Gb/s) although its code is higher.
        assert!(Rate::Gbps5 > Rate::Gbps10);
        assert_eq!(Rate::Gbps5.cmp_speed(Rate::Gbps10), Ordering::Less);
        assert_eq!(Rate::Gbps25.cmp_speed(Rate::Gbps30), Ordering::Greater);
        assert_eq!(Rate::Gbps100.cmp_speed(Rate::Gbps120), Ordering::Greater);
        assert_eq!(Rate::from(0).cmp_speed(Rate::from(1)), Ordering::Equal);
        assert_eq!(Rate::from(23).cmp_speed(Rate::Gbps2_5), Ordering::Less);
    }

    /// OpenSM's `ordered_rates`, code by code (libopensm/osm_helper.c:444-467).
    #[test]
    fn ranks_are_opensms_ordered_rates() {
        let ordered_rates = [
            0, 0, 1, 3, 6, 2, 5, 9, 10, 13, 14, 4, 12, 16, 17, 7, 15, 18, 19, 8, 11, 20, 21,
        ];
        for (code, rank) in ordered_rates.into_iter().enumerate() {
            assert_eq!(Rate::from(code as u8).speed_rank(), rank, "code {code}");
        }
    }

    #[test]
    fn next_slower_and_faster() {
        assert_eq!(Rate::Gbps14.slower(), Some(Rate::Gbps10));
        assert_eq!(Rate::Gbps14.faster(), Some(Rate::Gbps20));
        assert_eq!(Rate::Gbps2_5.slower(), None);
        assert_eq!(Rate::Gbps600.faster(), None);
        assert_eq!(Rate::from(1).faster(), None);
        assert_eq!(Rate::from(1).slower(), None);
        for pair in Rate::BY_SPEED.windows(2) {
            assert_eq!(pair[0].faster(), Some(pair[1]));
            assert_eq!(pair[1].slower(), Some(pair[0]));
            assert_eq!(pair[0].cmp_speed(pair[1]), Ordering::Less);
        }
    }

    #[test]
    fn selector_codes() {
        assert_eq!(u8::from(Selector::GreaterThan), 0);
        assert_eq!(u8::from(Selector::LessThan), 1);
        assert_eq!(u8::from(Selector::Exactly), 2);
        assert_eq!(u8::from(Selector::Largest), 3);
        assert_eq!(PathRecordMask::SERVICE_ID.0, 3);
        assert_eq!(PathRecordMask::SL.0, 1 << 15);
    }
}
