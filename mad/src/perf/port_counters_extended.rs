//! PortCountersExtended (PerfMgt attribute 0x001D, IBA 16.1.4.11): 64-bit data and packet
//! counters of one port, or of all of a switch's ports summed.

layout! {
    /// A view of PortCountersExtended (72 bytes; byte 0 is reserved). The error counters IBA 1.3
    /// appends after byte 72, for PMAs that advertise them in CapabilityMask2, are
    /// [`PortCountersExtendedErrors`].
    ///
    /// CounterSelect bit `i` clears the `i`-th counter, PortXmitData first. The counters stop at
    /// their largest value instead of wrapping.
    pub struct PortCountersExtended[72];
    /// A PortCountersExtended, every field.
    pub struct PortCountersExtendedRepr;
    {
        /// PortSelect: the port, or 0xFF for all of a switch's ports.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect: in a Set, the counters to clear.
        counter_select / set_counter_select: u16 = 16, 16;
        /// CounterSelect2: in a Set, which of the appended error counters to clear.
        counter_select2 / set_counter_select2: u32 = 32, 32;
        /// PortXmitData: data octets sent, divided by 4.
        port_xmit_data / set_port_xmit_data: u64 = 64, 64;
        /// PortRcvData: data octets received, divided by 4.
        port_rcv_data / set_port_rcv_data: u64 = 128, 64;
        /// PortXmitPkts.
        port_xmit_pkts / set_port_xmit_pkts: u64 = 192, 64;
        /// PortRcvPkts.
        port_rcv_pkts / set_port_rcv_pkts: u64 = 256, 64;
        /// PortUnicastXmitPkts.
        port_unicast_xmit_pkts / set_port_unicast_xmit_pkts: u64 = 320, 64;
        /// PortUnicastRcvPkts.
        port_unicast_rcv_pkts / set_port_unicast_rcv_pkts: u64 = 384, 64;
        /// PortMulticastXmitPkts.
        port_multicast_xmit_pkts / set_port_multicast_xmit_pkts: u64 = 448, 64;
        /// PortMulticastRcvPkts.
        port_multicast_rcv_pkts / set_port_multicast_rcv_pkts: u64 = 512, 64;
    }
}

layout! {
    /// A view of the 64-bit error counters IBA 1.3 appends to PortCountersExtended (184 bytes
    /// in all; the first 72 are [`PortCountersExtended`]). Only a PMA whose ClassPortInfo sets
    /// CapabilityMask2 bit 1 (IsAdditionalPortCountersExtendedSupported) fills them.
    ///
    /// CounterSelect2 bit `i` clears the `i`-th of these counters, SymbolErrorCounter first.
    pub struct PortCountersExtendedErrors[184];
    /// The appended error counters, every field.
    pub struct PortCountersExtendedErrorsRepr;
    {
        /// CounterSelect2: in a Set, the error counters to clear.
        counter_select2 / set_counter_select2: u32 = 32, 32;
        /// SymbolErrorCounter.
        symbol_error_counter / set_symbol_error_counter: u64 = 576, 64;
        /// LinkErrorRecoveryCounter.
        link_error_recovery_counter / set_link_error_recovery_counter: u64 = 640, 64;
        /// LinkDownedCounter.
        link_downed_counter / set_link_downed_counter: u64 = 704, 64;
        /// PortRcvErrors.
        port_rcv_errors / set_port_rcv_errors: u64 = 768, 64;
        /// PortRcvRemotePhysicalErrors.
        port_rcv_remote_physical_errors / set_port_rcv_remote_physical_errors: u64 = 832, 64;
        /// PortRcvSwitchRelayErrors.
        port_rcv_switch_relay_errors / set_port_rcv_switch_relay_errors: u64 = 896, 64;
        /// PortXmitDiscards.
        port_xmit_discards / set_port_xmit_discards: u64 = 960, 64;
        /// PortXmitConstraintErrors.
        port_xmit_constraint_errors / set_port_xmit_constraint_errors: u64 = 1024, 64;
        /// PortRcvConstraintErrors.
        port_rcv_constraint_errors / set_port_rcv_constraint_errors: u64 = 1088, 64;
        /// LocalLinkIntegrityErrors.
        local_link_integrity_errors / set_local_link_integrity_errors: u64 = 1152, 64;
        /// ExcessiveBufferOverrunErrors.
        excessive_buffer_overrun_errors / set_excessive_buffer_overrun_errors: u64 = 1216, 64;
        /// VL15Dropped.
        vl15_dropped / set_vl15_dropped: u64 = 1280, 64;
        /// PortXmitWait.
        port_xmit_wait / set_port_xmit_wait: u64 = 1344, 64;
        /// QP1Dropped.
        qp1_dropped / set_qp1_dropped: u64 = 1408, 64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 72] = [
        0x00,                   // 0: reserved
        0xff,                   // 1: PortSelect: all ports
        0x00, 0xff,             // 2: CounterSelect
        0x00, 0x00, 0x0f, 0xff, // 4: CounterSelect2
        0, 0, 0, 0, 0, 0, 0x28, 0x88,                   // 8: PortXmitData 10376
        0, 0, 0, 0, 0, 0, 0x28, 0xd0,                   // 16: PortRcvData 10448
        0, 0, 0, 0, 0, 0, 0, 0x90,                      // 24: PortXmitPkts 144
        0, 0, 0, 0x01, 0, 0, 0, 0,                      // 32: PortRcvPkts 2^32
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // 40: PortUnicastXmitPkts
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // 48: PortUnicastRcvPkts
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // 56: PortMulticastXmitPkts, at its maximum
        0, 0, 0, 0, 0, 0, 0, 0x07,                      // 64: PortMulticastRcvPkts
    ];

    fn repr() -> PortCountersExtendedRepr {
        PortCountersExtendedRepr {
            port_select: 0xff,
            counter_select: 0xff,
            counter_select2: 0xfff,
            port_xmit_data: 10376,
            port_rcv_data: 10448,
            port_xmit_pkts: 144,
            port_rcv_pkts: 1 << 32,
            port_unicast_xmit_pkts: 0x0102_0304_0506_0708,
            port_unicast_rcv_pkts: 0x1112_1314_1516_1718,
            port_multicast_xmit_pkts: u64::MAX,
            port_multicast_rcv_pkts: 7,
        }
    }

    #[test]
    fn deconstruct() {
        let v = PortCountersExtended::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.port_select(), 0xff);
        assert_eq!(v.port_rcv_pkts(), 1 << 32);
        assert_eq!(PortCountersExtendedRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 72];
        repr().emit(&mut PortCountersExtended::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            PortCountersExtended::new_checked(&BYTES[..71]),
            Err(crate::Error::Truncated {
                len: 71,
                needed: 72
            })
        );
    }

    /// The error counters where libibmad's fields.c puts them: 14 of 64 bits from bit 576
    /// (byte 72), counter `i` holding `i + 1` in its low byte and `0x80 + i` in its high byte.
    #[test]
    fn appended_error_counters_follow_the_data_counters() {
        let mut bytes = [0u8; 184];
        bytes[4..8].copy_from_slice(&[0, 0, 0x3f, 0xff]);
        for i in 0..14 {
            let at = 72 + 8 * i;
            bytes[at] = 0x80 + i as u8;
            bytes[at + 7] = i as u8 + 1;
        }
        let counter = |i: u64| ((0x80 + i) << 56) | (i + 1);
        let view = PortCountersExtendedErrors::new_checked(&bytes[..]).unwrap();
        let repr = PortCountersExtendedErrorsRepr::parse(&view).unwrap();
        assert_eq!(
            repr,
            PortCountersExtendedErrorsRepr {
                counter_select2: 0x3fff,
                symbol_error_counter: counter(0),
                link_error_recovery_counter: counter(1),
                link_downed_counter: counter(2),
                port_rcv_errors: counter(3),
                port_rcv_remote_physical_errors: counter(4),
                port_rcv_switch_relay_errors: counter(5),
                port_xmit_discards: counter(6),
                port_xmit_constraint_errors: counter(7),
                port_rcv_constraint_errors: counter(8),
                local_link_integrity_errors: counter(9),
                excessive_buffer_overrun_errors: counter(10),
                vl15_dropped: counter(11),
                port_xmit_wait: counter(12),
                qp1_dropped: counter(13),
            }
        );
        let mut out = [0xa5u8; 184];
        repr.emit(&mut PortCountersExtendedErrors::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes, "emit zeroes the bytes it has no field for");
        assert!(PortCountersExtendedErrors::new_checked(&bytes[..183]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(repr: PortCountersExtendedRepr) {
            prop_assert_round_trip!(PortCountersExtended, PortCountersExtendedRepr, repr);
        }

        #[test]
        fn errors_round_trip(repr: PortCountersExtendedErrorsRepr) {
            prop_assert_round_trip!(
                PortCountersExtendedErrors,
                PortCountersExtendedErrorsRepr,
                repr
            );
        }
    }
}
