//! PortCountersExtended (PerfMgt attribute 0x001D, IBA 16.1.4.11): 64-bit data and packet
//! counters of one port, or of all of a switch's ports summed.

layout! {
    /// A view of PortCountersExtended (72 bytes; byte 0 is reserved). The error counters IBA 1.3
    /// appends after byte 72, for PMAs that advertise them in CapabilityMask2, are not part of
    /// it.
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

    proptest! {
        #[test]
        fn round_trip(repr: PortCountersExtendedRepr) {
            prop_assert_round_trip!(PortCountersExtended, PortCountersExtendedRepr, repr);
        }
    }
}
