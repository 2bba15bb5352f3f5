//! SwitchInfo (attribute 0x0012, IBA 14.2.5.4): a switch's forwarding-table sizes and the
//! capabilities that decide how the SM programs it.

layout! {
    /// A view of a SwitchInfo attribute (20 bytes; bits 133-143 are reserved).
    pub struct SwitchInfo[20];
    /// A SwitchInfo attribute, every field.
    pub struct SwitchInfoRepr;
    {
        /// LinearFDBCap: LFT entries the switch has.
        linear_fdb_cap / set_linear_fdb_cap: u16 = 0, 16;
        /// RandomFDBCap.
        random_fdb_cap / set_random_fdb_cap: u16 = 16, 16;
        /// MulticastFDBCap.
        multicast_fdb_cap / set_multicast_fdb_cap: u16 = 32, 16;
        /// LinearFDBTop: the highest LID the switch forwards by its LFT (ibsim drops above it).
        linear_fdb_top / set_linear_fdb_top: u16 = 48, 16;
        /// DefaultPort.
        default_port / set_default_port: u8 = 64, 8;
        /// DefaultMulticastPrimaryPort.
        default_multicast_primary_port / set_default_multicast_primary_port: u8 = 72, 8;
        /// DefaultMulticastNotPrimaryPort.
        default_multicast_not_primary_port / set_default_multicast_not_primary_port: u8 = 80, 8;
        /// LifeTimeValue.
        life_time_value / set_life_time_value: u8 = 88, 5;
        /// PortStateChange: a port changed state; write 1 to clear it.
        port_state_change / set_port_state_change: bool = 93, 1;
        /// OptimizedSLtoVLMappingProgramming; see [`SwitchInfoRepr::supports_optimized_sl_to_vl`].
        optimized_sl_to_vl_mapping_programming
            / set_optimized_sl_to_vl_mapping_programming: u8 = 94, 2;
        /// LIDsPerPort.
        lids_per_port / set_lids_per_port: u16 = 96, 16;
        /// PartitionEnforcementCap.
        partition_enforcement_cap / set_partition_enforcement_cap: u16 = 112, 16;
        /// InboundEnforcementCap.
        inbound_enforcement_cap / set_inbound_enforcement_cap: bool = 128, 1;
        /// OutboundEnforcementCap.
        outbound_enforcement_cap / set_outbound_enforcement_cap: bool = 129, 1;
        /// FilterRawInboundCap.
        filter_raw_inbound_cap / set_filter_raw_inbound_cap: bool = 130, 1;
        /// FilterRawOutboundCap.
        filter_raw_outbound_cap / set_filter_raw_outbound_cap: bool = 131, 1;
        /// EnhancedPort0: port 0 is a full port with its own SL2VL and VLArb tables.
        enhanced_port0 / set_enhanced_port0: bool = 132, 1;
        /// MulticastFDBTop.
        multicast_fdb_top / set_multicast_fdb_top: u16 = 144, 16;
    }
}

impl SwitchInfoRepr {
    /// Whether the switch takes the SL2VL "all input ports" / "all output ports" modifier bits.
    ///
    /// This is OpenSM's reading of the 2-bit field: its bit 0 (byte 11 bit 0) alone. The other
    /// bit is left alone here as it is there.
    pub fn supports_optimized_sl_to_vl(&self) -> bool {
        self.optimized_sl_to_vl_mapping_programming & 1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 20] = [
        0x78, 0x00, // 0: LinearFDBCap 30720
        0x01, 0x02, // 2: RandomFDBCap
        0x04, 0x00, // 4: MulticastFDBCap 1024
        0x00, 0x09, // 6: LinearFDBTop
        0x0b,       // 8: DefaultPort
        0x0c,       // 9: DefaultMulticastPrimaryPort
        0x0d,       // 10: DefaultMulticastNotPrimaryPort
        0x9d,       // 11: LifeTimeValue 0x13 (10011) | PortStateChange 1 | OptSL2VL 01
        0x00, 0x03, // 12: LIDsPerPort
        0x00, 0x20, // 14: PartitionEnforcementCap
        0xa8,       // 16: InEnf 1, OutEnf 0, RawIn 1, RawOut 0, EnhancedPort0 1, resv 000
        0x00,       // 17: reserved
        0xc3, 0xff, // 18: MulticastFDBTop
    ];

    fn repr() -> SwitchInfoRepr {
        SwitchInfoRepr {
            linear_fdb_cap: 30720,
            random_fdb_cap: 0x0102,
            multicast_fdb_cap: 1024,
            linear_fdb_top: 9,
            default_port: 0x0b,
            default_multicast_primary_port: 0x0c,
            default_multicast_not_primary_port: 0x0d,
            life_time_value: 0x13,
            port_state_change: true,
            optimized_sl_to_vl_mapping_programming: 1,
            lids_per_port: 3,
            partition_enforcement_cap: 0x20,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: false,
            filter_raw_inbound_cap: true,
            filter_raw_outbound_cap: false,
            enhanced_port0: true,
            multicast_fdb_top: 0xc3ff,
        }
    }

    #[test]
    fn deconstruct() {
        let v = SwitchInfo::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.linear_fdb_cap(), 30720);
        assert_eq!(v.random_fdb_cap(), 0x0102);
        assert_eq!(v.multicast_fdb_cap(), 1024);
        assert_eq!(v.linear_fdb_top(), 9);
        assert_eq!(v.default_port(), 0x0b);
        assert_eq!(v.default_multicast_primary_port(), 0x0c);
        assert_eq!(v.default_multicast_not_primary_port(), 0x0d);
        assert_eq!(v.life_time_value(), 0x13);
        assert!(v.port_state_change());
        assert_eq!(v.optimized_sl_to_vl_mapping_programming(), 1);
        assert_eq!(v.lids_per_port(), 3);
        assert_eq!(v.partition_enforcement_cap(), 0x20);
        assert!(v.inbound_enforcement_cap());
        assert!(!v.outbound_enforcement_cap());
        assert!(v.filter_raw_inbound_cap());
        assert!(!v.filter_raw_outbound_cap());
        assert!(v.enhanced_port0());
        assert_eq!(v.multicast_fdb_top(), 0xc3ff);
        assert_eq!(SwitchInfoRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 20];
        repr().emit(&mut SwitchInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            SwitchInfo::new_checked(&BYTES[..19]),
            Err(crate::Error::Truncated {
                len: 19,
                needed: 20
            })
        );
    }

    #[test]
    fn optimized_sl_to_vl_is_bit_0_of_byte_11() {
        for (field, supported) in [(0, false), (1, true), (2, false), (3, true)] {
            let repr = SwitchInfoRepr {
                optimized_sl_to_vl_mapping_programming: field,
                ..repr()
            };
            assert_eq!(repr.supports_optimized_sl_to_vl(), supported);
            let mut bytes = [0; 20];
            repr.emit(&mut SwitchInfo::new_unchecked(&mut bytes[..]));
            assert_eq!(bytes[11] & 1 != 0, supported);
        }
    }

    proptest! {
        #[test]
        fn round_trip(repr: SwitchInfoRepr) {
            prop_assert_round_trip!(SwitchInfo, SwitchInfoRepr, repr);
        }
    }
}
