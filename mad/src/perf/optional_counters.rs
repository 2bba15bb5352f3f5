//! The optional port-counter attributes (IBA 16.1.4): error details, per-opcode and per-VL
//! counters. Each starts with PortSelect and CounterSelect like PortCounters; CounterSelect bit
//! `i` clears counter `i`, in the order of the rows (entry `i` of a per-VL array).

layout! {
    /// A view of PortRcvErrorDetails (attribute 0x0015, 16 bytes; byte 0 reserved): why
    /// received packets were counted in PortRcvErrors.
    pub struct PortRcvErrorDetails[16];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortLocalPhysicalErrors.
        local_physical_errors / set_local_physical_errors: u16 = 32, 16;
        /// PortMalformedPacketErrors.
        malformed_packet_errors / set_malformed_packet_errors: u16 = 48, 16;
        /// PortBufferOverrunErrors.
        buffer_overrun_errors / set_buffer_overrun_errors: u16 = 64, 16;
        /// PortDLIDMappingErrors.
        dlid_mapping_errors / set_dlid_mapping_errors: u16 = 80, 16;
        /// PortVLMappingErrors.
        vl_mapping_errors / set_vl_mapping_errors: u16 = 96, 16;
        /// PortLoopingErrors.
        looping_errors / set_looping_errors: u16 = 112, 16;
    }
}

layout! {
    /// A view of PortXmitDiscardDetails (attribute 0x0016, 12 bytes; byte 0 reserved): why
    /// outbound packets were counted in PortXmitDiscards.
    pub struct PortXmitDiscardDetails[12];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortInactiveDiscards: the port was not Active.
        inactive_discards / set_inactive_discards: u16 = 32, 16;
        /// PortNeighborMTUDiscards.
        neighbor_mtu_discards / set_neighbor_mtu_discards: u16 = 48, 16;
        /// PortSwLifetimeLimitDiscards.
        sw_lifetime_limit_discards / set_sw_lifetime_limit_discards: u16 = 64, 16;
        /// PortSwHOQLifetimeLimitDiscards.
        sw_hoq_lifetime_limit_discards / set_sw_hoq_lifetime_limit_discards: u16 = 80, 16;
    }
}

layout! {
    /// A view of PortOpRcvCounters (attribute 0x0017, 12 bytes): packets and data received with
    /// one opcode.
    pub struct PortOpRcvCounters[12];
    {
        /// OpCode counted.
        op_code / set_op_code: u8 = 0, 8;
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortOpRcvPkts.
        op_rcv_pkts / set_op_rcv_pkts: u32 = 32, 32;
        /// PortOpRcvData.
        op_rcv_data / set_op_rcv_data: u32 = 64, 32;
    }
}

layout! {
    /// A view of PortFlowCtlCounters (attribute 0x0018, 12 bytes; byte 0 reserved): flow
    /// control packets sent and received.
    pub struct PortFlowCtlCounters[12];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortXmitFlowPkts.
        xmit_flow_pkts / set_xmit_flow_pkts: u32 = 32, 32;
        /// PortRcvFlowPkts.
        rcv_flow_pkts / set_rcv_flow_pkts: u32 = 64, 32;
    }
}

layout! {
    /// A view of PortVLOpPackets (attribute 0x0019, 36 bytes): packets received with one opcode,
    /// per VL.
    pub struct PortVlOpPackets[36];
    {
        /// OpCode counted.
        op_code / set_op_code: u8 = 0, 8;
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortVLOpPackets of VL `index`.
        packets / set_packets: u16[16] = 32, 16, 16;
    }
}

layout! {
    /// A view of PortVLOpData (attribute 0x001A, 68 bytes): data received with one opcode, per
    /// VL.
    pub struct PortVlOpData[68];
    {
        /// OpCode counted.
        op_code / set_op_code: u8 = 0, 8;
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortVLOpData of VL `index`.
        data / set_data: u32[16] = 32, 32, 32;
    }
}

layout! {
    /// A view of PortVLXmitFlowCtlUpdateErrors (attribute 0x001B, 8 bytes; byte 0 reserved):
    /// flow control updates missed, per VL, 2 bits each.
    pub struct PortVlXmitFlowCtlUpdateErrors[8];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortVLXmitFlowCtlUpdateErrors of VL `index`.
        errors / set_errors: u8[16] = 32, 2, 2;
    }
}

layout! {
    /// A view of PortVLXmitWaitCounters (attribute 0x001C, 36 bytes; byte 0 reserved): ticks a
    /// VL waited for credits.
    pub struct PortVlXmitWaitCounters[36];
    {
        /// PortSelect.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect.
        counter_select / set_counter_select: u16 = 16, 16;
        /// PortVLXmitWait of VL `index`.
        wait / set_wait: u16[16] = 32, 16, 16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes 0, 1, 2, ...: every counter reads the bytes it covers, at the offsets IBA gives.
    fn counting<const N: usize>() -> [u8; N] {
        core::array::from_fn(|i| i as u8)
    }

    #[test]
    fn error_details() {
        let bytes = counting::<16>();
        let v = PortRcvErrorDetails::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.port_select(), v.counter_select()), (0x01, 0x0203));
        assert_eq!(v.local_physical_errors(), 0x0405);
        assert_eq!(v.malformed_packet_errors(), 0x0607);
        assert_eq!(v.buffer_overrun_errors(), 0x0809);
        assert_eq!(v.dlid_mapping_errors(), 0x0a0b);
        assert_eq!(v.vl_mapping_errors(), 0x0c0d);
        assert_eq!(v.looping_errors(), 0x0e0f);

        let bytes = counting::<12>();
        let v = PortXmitDiscardDetails::new_checked(&bytes[..]).unwrap();
        assert_eq!(v.inactive_discards(), 0x0405);
        assert_eq!(v.neighbor_mtu_discards(), 0x0607);
        assert_eq!(v.sw_lifetime_limit_discards(), 0x0809);
        assert_eq!(v.sw_hoq_lifetime_limit_discards(), 0x0a0b);
        assert!(PortXmitDiscardDetails::new_checked(&bytes[..11]).is_err());
    }

    #[test]
    fn operation_and_flow_control_counters() {
        let bytes = counting::<12>();
        let v = PortOpRcvCounters::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.op_code(), v.port_select()), (0, 1));
        assert_eq!(
            (v.op_rcv_pkts(), v.op_rcv_data()),
            (0x0405_0607, 0x0809_0a0b)
        );
        let v = PortFlowCtlCounters::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (v.xmit_flow_pkts(), v.rcv_flow_pkts()),
            (0x0405_0607, 0x0809_0a0b)
        );

        let mut out = [0u8; 12];
        let mut v = PortOpRcvCounters::new_unchecked(&mut out[..]);
        v.set_op_code(0x64);
        v.set_port_select(2);
        v.set_op_rcv_data(0x1234_5678);
        assert_eq!(out, [0x64, 2, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78]);
    }

    #[test]
    fn per_vl_counters() {
        let bytes = counting::<68>();
        let v = PortVlOpPackets::new_checked(&bytes[..36]).unwrap();
        assert_eq!((v.packets(0), v.packets(15)), (0x0405, 0x2223));
        let v = PortVlXmitWaitCounters::new_checked(&bytes[..36]).unwrap();
        assert_eq!((v.wait(0), v.wait(15)), (0x0405, 0x2223));
        let v = PortVlOpData::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.data(0), v.data(15)), (0x0405_0607, 0x4041_4243));
        assert!(PortVlOpData::new_checked(&bytes[..67]).is_err());

        // 2 bits per VL: 0x04 = 00 00 01 00 holds VLs 0-3, 0x07 = 00 00 01 11 VLs 12-15.
        let v = PortVlXmitFlowCtlUpdateErrors::new_checked(&bytes[..8]).unwrap();
        let errors: Vec<u8> = (0..16).map(|vl| v.errors(vl)).collect();
        assert_eq!(errors, [0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 2, 0, 0, 1, 3]);
        let mut out = [0u8; 8];
        PortVlXmitFlowCtlUpdateErrors::new_unchecked(&mut out[..]).set_errors(15, 3);
        assert_eq!(out[7], 0x03);
    }
}
