//! PortCounters (PerfMgt attribute 0x0012, IBA 16.1.3.5): the error, data and packet counters
//! of one port, or of all of a switch's ports summed.

layout! {
    /// A view of PortCounters (44 bytes; byte 0 and bits 168-175 are reserved).
    ///
    /// CounterSelect bit `i` clears the `i`-th counter from SymbolErrorCounter to PortRcvPkts, in
    /// the order of the rows; CounterSelect2 bit 0 clears PortXmitWait and bit 1 QP1Dropped.
    /// Every counter stops at its largest value instead of wrapping.
    pub struct PortCounters[44];
    /// A PortCounters, every field.
    pub struct PortCountersRepr;
    {
        /// PortSelect: the port, or 0xFF for all of a switch's ports.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect: in a Set, the counters to clear.
        counter_select / set_counter_select: u16 = 16, 16;
        /// SymbolErrorCounter: minor link errors.
        symbol_error_counter / set_symbol_error_counter: u16 = 32, 16;
        /// LinkErrorRecoveryCounter: link error recoveries that succeeded.
        link_error_recovery_counter / set_link_error_recovery_counter: u8 = 48, 8;
        /// LinkDownedCounter: times the link went down.
        link_downed_counter / set_link_downed_counter: u8 = 56, 8;
        /// PortRcvErrors: packets received with errors.
        port_rcv_errors / set_port_rcv_errors: u16 = 64, 16;
        /// PortRcvRemotePhysicalErrors.
        port_rcv_remote_physical_errors / set_port_rcv_remote_physical_errors: u16 = 80, 16;
        /// PortRcvSwitchRelayErrors: received packets the switch could not forward.
        port_rcv_switch_relay_errors / set_port_rcv_switch_relay_errors: u16 = 96, 16;
        /// PortXmitDiscards: outbound packets discarded (port down, congestion).
        port_xmit_discards / set_port_xmit_discards: u16 = 112, 16;
        /// PortXmitConstraintErrors.
        port_xmit_constraint_errors / set_port_xmit_constraint_errors: u8 = 128, 8;
        /// PortRcvConstraintErrors.
        port_rcv_constraint_errors / set_port_rcv_constraint_errors: u8 = 136, 8;
        /// CounterSelect2: in a Set, bit 0 clears PortXmitWait and bit 1 QP1Dropped.
        counter_select2 / set_counter_select2: u8 = 144, 8;
        /// LocalLinkIntegrityErrors.
        local_link_integrity_errors / set_local_link_integrity_errors: u8 = 152, 4;
        /// ExcessiveBufferOverrunErrors.
        excessive_buffer_overrun_errors / set_excessive_buffer_overrun_errors: u8 = 156, 4;
        /// QP1Dropped: MADs dropped at QP1 (IBA 1.3).
        qp1_dropped / set_qp1_dropped: u16 = 160, 16;
        /// VL15Dropped: SMPs dropped.
        vl15_dropped / set_vl15_dropped: u16 = 176, 16;
        /// PortXmitData: data octets sent, divided by 4.
        port_xmit_data / set_port_xmit_data: u32 = 192, 32;
        /// PortRcvData: data octets received, divided by 4.
        port_rcv_data / set_port_rcv_data: u32 = 224, 32;
        /// PortXmitPkts: packets sent.
        port_xmit_pkts / set_port_xmit_pkts: u32 = 256, 32;
        /// PortRcvPkts: packets received.
        port_rcv_pkts / set_port_rcv_pkts: u32 = 288, 32;
        /// PortXmitWait: ticks the port had data to send and no credits.
        port_xmit_wait / set_port_xmit_wait: u32 = 320, 32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 44] = [
        0x00,                   // 0: reserved
        0x03,                   // 1: PortSelect
        0xf0, 0x0f,             // 2: CounterSelect
        0x01, 0x02,             // 4: SymbolErrorCounter
        0x03,                   // 6: LinkErrorRecoveryCounter
        0x04,                   // 7: LinkDownedCounter
        0x05, 0x06,             // 8: PortRcvErrors
        0x07, 0x08,             // 10: PortRcvRemotePhysicalErrors
        0x09, 0x0a,             // 12: PortRcvSwitchRelayErrors
        0x0b, 0x0c,             // 14: PortXmitDiscards
        0x0d,                   // 16: PortXmitConstraintErrors
        0x0e,                   // 17: PortRcvConstraintErrors
        0x01,                   // 18: CounterSelect2
        0x9c,                   // 19: LocalLinkIntegrityErrors 9 | ExcessiveBufferOverrunErrors 0xc
        0x11, 0x12,             // 20: QP1Dropped
        0x13, 0x14,             // 22: VL15Dropped
        0x00, 0x00, 0x28, 0x88, // 24: PortXmitData 10376
        0x00, 0x00, 0x28, 0xd0, // 28: PortRcvData 10448
        0x00, 0x00, 0x00, 0x90, // 32: PortXmitPkts 144
        0xff, 0xff, 0xff, 0xff, // 36: PortRcvPkts, stopped at its maximum
        0x00, 0x00, 0x00, 0x2a, // 40: PortXmitWait
    ];

    fn repr() -> PortCountersRepr {
        PortCountersRepr {
            port_select: 3,
            counter_select: 0xf00f,
            symbol_error_counter: 0x0102,
            link_error_recovery_counter: 3,
            link_downed_counter: 4,
            port_rcv_errors: 0x0506,
            port_rcv_remote_physical_errors: 0x0708,
            port_rcv_switch_relay_errors: 0x090a,
            port_xmit_discards: 0x0b0c,
            port_xmit_constraint_errors: 0x0d,
            port_rcv_constraint_errors: 0x0e,
            counter_select2: 1,
            local_link_integrity_errors: 9,
            excessive_buffer_overrun_errors: 0xc,
            qp1_dropped: 0x1112,
            vl15_dropped: 0x1314,
            port_xmit_data: 10376,
            port_rcv_data: 10448,
            port_xmit_pkts: 144,
            port_rcv_pkts: u32::MAX,
            port_xmit_wait: 42,
        }
    }

    #[test]
    fn deconstruct() {
        let v = PortCounters::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.port_select(), 3);
        assert_eq!(v.local_link_integrity_errors(), 9);
        assert_eq!(v.excessive_buffer_overrun_errors(), 0xc);
        assert_eq!(v.port_xmit_data(), 10376);
        assert_eq!(PortCountersRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 44];
        repr().emit(&mut PortCounters::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            PortCounters::new_checked(&BYTES[..43]),
            Err(crate::Error::Truncated {
                len: 43,
                needed: 44
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(repr: PortCountersRepr) {
            prop_assert_round_trip!(PortCounters, PortCountersRepr, repr);
        }
    }
}
