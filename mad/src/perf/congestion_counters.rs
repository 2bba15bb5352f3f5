//! The per-SL data counters and the congestion counters a PMA may keep (PerfMgt attributes
//! 0x0030-0x0037, IBA annex A10's additions to chapter 16.1, and A13.6.4 for the per-SL data).
//! No ClassPortInfo CapabilityMask bit advertises them: a manager learns that a PMA keeps one
//! when a Get of it is answered without status 0x000C.
//!
//! Each starts with PortSelect and CounterSelect like PortCounters; CounterSelect bit `i` clears
//! counter `i`, in the order of the rows (entry `i` of a per-VL or per-SL array). Data counters
//! count octets divided by 4.

layout! {
    /// A view of SwPortVLCongestion (attribute 0x0030, 36 bytes; byte 0 reserved; switches
    /// only): per VL, how often the port was the root of congestion.
    pub struct SwPortVlCongestion[36];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// SWPortVLCongestion of VL `index`.
        congestion / set_congestion: u16[16] = 32, 16, 16;
    }
}

layout! {
    /// A view of PortRcvConCtrl (attribute 0x0031, 12 bytes; byte 0 reserved): packets received
    /// with their FECN or BECN bit set.
    pub struct PortRcvConCtrl[12];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortPktRcvFECN: packets received with FECN set.
        pkt_rcv_fecn / set_pkt_rcv_fecn: u32 = 32, 32;
        /// PortPktRcvBECN: packets received with BECN set.
        pkt_rcv_becn / set_pkt_rcv_becn: u32 = 64, 32;
    }
}

layout! {
    /// A view of PortSLRcvFECN (attribute 0x0032, 68 bytes; byte 0 reserved): packets received
    /// with FECN set, per SL.
    pub struct PortSlRcvFecn[68];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortSLRcvFECN of SL `index`.
        fecn / set_fecn: u32[16] = 32, 32, 32;
    }
}

layout! {
    /// A view of PortSLRcvBECN (attribute 0x0033, 68 bytes; byte 0 reserved): packets received
    /// with BECN set, per SL.
    pub struct PortSlRcvBecn[68];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortSLRcvBECN of SL `index`.
        becn / set_becn: u32[16] = 32, 32, 32;
    }
}

layout! {
    /// A view of PortXmitConCtrl (attribute 0x0034, 8 bytes; byte 0 reserved): time the port
    /// spent congested.
    pub struct PortXmitConCtrl[8];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortXmitTimeCong: ticks the port was congested.
        xmit_time_cong / set_xmit_time_cong: u32 = 32, 32;
    }
}

layout! {
    /// A view of PortVLXmitTimeCong (attribute 0x0035, 64 bytes; byte 0 reserved): time each
    /// data VL spent congested. VL 15 has no entry.
    pub struct PortVlXmitTimeCong[64];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortVLXmitTimeCong of VL `index`, 0 to 14.
        time_cong / set_time_cong: u32[15] = 32, 32, 32;
    }
}

layout! {
    /// A view of PortXmitDataSL (attribute 0x0036, 68 bytes; byte 0 reserved): data sent, per
    /// SL.
    pub struct PortXmitDataSl[68];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortXmitDataSL of SL `index`: octets sent divided by 4.
        data / set_data: u32[16] = 32, 32, 32;
    }
}

layout! {
    /// A view of PortRcvDataSL (attribute 0x0037, 68 bytes; byte 0 reserved): data received,
    /// per SL.
    pub struct PortRcvDataSl[68];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortRcvDataSL of SL `index`: octets received divided by 4.
        data / set_data: u32[16] = 32, 32, 32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A per-SL attribute whose SL 0 holds 1, SL 3 0x0102_0304 and SL 15 u32::MAX, placed by
    /// hand where libibmad's fields.c puts them: entry `i` at bit 32 + 32i.
    #[rustfmt::skip]
    const PER_SL: [u8; 68] = [
        0x00, 0x02, 0x80, 0x01,   // reserved, PortSelect 2, CounterSelect 0x8001
        0, 0, 0, 1,               // SL 0 at bit 32
        0, 0, 0, 0,
        0, 0, 0, 0,
        0x01, 0x02, 0x03, 0x04,   // SL 3 at bit 128
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0,
        0xff, 0xff, 0xff, 0xff,   // SL 15 at bit 512
    ];

    #[test]
    fn per_sl_data_and_ecn_counters_sit_32_bits_apart_from_bit_32() {
        let xmit = PortXmitDataSl::new_checked(&PER_SL[..]).unwrap();
        let rcv = PortRcvDataSl::new_checked(&PER_SL[..]).unwrap();
        let fecn = PortSlRcvFecn::new_checked(&PER_SL[..]).unwrap();
        let becn = PortSlRcvBecn::new_checked(&PER_SL[..]).unwrap();
        assert_eq!((xmit.port_select(), xmit.counter_select()), (2, 0x8001));
        for (sl, value) in [(0, 1), (1, 0), (3, 0x0102_0304), (15, u32::MAX)] {
            assert_eq!(xmit.data(sl), value, "PortXmitDataSL {sl}");
            assert_eq!(rcv.data(sl), value, "PortRcvDataSL {sl}");
            assert_eq!(fecn.fecn(sl), value, "PortSLRcvFECN {sl}");
            assert_eq!(becn.becn(sl), value, "PortSLRcvBECN {sl}");
        }
        assert!(PortXmitDataSl::new_checked(&PER_SL[..67]).is_err());

        let mut out = [0u8; 68];
        let mut view = PortXmitDataSl::new_unchecked(&mut out[..]);
        view.set_port_select(2);
        view.set_counter_select(0x8001);
        view.set_data(0, 1);
        view.set_data(3, 0x0102_0304);
        view.set_data(15, u32::MAX);
        assert_eq!(out, PER_SL);
    }

    #[test]
    fn switch_vl_congestion_is_16_bits_a_vl() {
        #[rustfmt::skip]
        let bytes: [u8; 36] = [
            0, 0xff, 0xff, 0xff,  // reserved, all ports, every counter
            0x12, 0x34,           // VL 0 at bit 32
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
            0xab, 0xcd,           // VL 15 at bit 272
        ];
        let view = SwPortVlCongestion::new_checked(&bytes[..]).unwrap();
        assert_eq!((view.port_select(), view.counter_select()), (0xff, 0xffff));
        assert_eq!(
            (view.congestion(0), view.congestion(1), view.congestion(15)),
            (0x1234, 0, 0xabcd)
        );
        assert!(SwPortVlCongestion::new_checked(&bytes[..35]).is_err());
    }

    #[test]
    fn congestion_control_totals() {
        let bytes = [0, 1, 0, 3, 0, 0, 0x01, 0x00, 0x80, 0, 0, 0x02];
        let view = PortRcvConCtrl::new_checked(&bytes[..]).unwrap();
        assert_eq!((view.port_select(), view.counter_select()), (1, 3));
        assert_eq!(
            (view.pkt_rcv_fecn(), view.pkt_rcv_becn()),
            (256, 0x8000_0002)
        );

        let mut out = [0u8; 8];
        PortXmitConCtrl::new_unchecked(&mut out[..]).set_xmit_time_cong(0x0a0b_0c0d);
        assert_eq!(out, [0, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d]);
        assert!(PortXmitConCtrl::new_checked(&out[..7]).is_err());
    }

    #[test]
    fn vl_time_congestion_stops_at_vl_14() {
        let mut bytes = [0u8; 64];
        bytes[4..8].copy_from_slice(&[0, 0, 0, 7]); // VL 0 at bit 32
        bytes[60..64].copy_from_slice(&[0, 0, 0x01, 0x0e]); // VL 14 at bit 480
        let view = PortVlXmitTimeCong::new_checked(&bytes[..]).unwrap();
        assert_eq!((view.time_cong(0), view.time_cong(14)), (7, 0x010e));
        assert!(PortVlXmitTimeCong::new_checked(&bytes[..63]).is_err());
    }
}
