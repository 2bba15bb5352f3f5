//! CongestionLog (attribute 0x0013, IBA A10.4.3.4): the congestion events an agent saw last.
//! It starts in the CC MAD's log data and runs on into the attribute data
//! ([`CcMad::log_and_data`](super::CcMad::log_and_data)); a switch's and a CA's differ after
//! the first byte, LogType.

/// LogType of a switch's CongestionLog.
pub const LOG_TYPE_SWITCH: u8 = 0x1;
/// LogType of a CA's CongestionLog.
pub const LOG_TYPE_CA: u8 = 0x2;

layout! {
    /// A view of a switch's CongestionLog (220 bytes): the ports that marked since the last
    /// read and up to 15 marked packets.
    pub struct SwitchCongestionLog[220];
    {
        /// LogType: [`LOG_TYPE_SWITCH`].
        log_type / set_log_type: u8 = 0, 8;
        /// CongestionFlags: bit 0 set while the switch is congested.
        congestion_flags / set_congestion_flags: u8 = 8, 8;
        /// LogEventsCounter: events since the last read.
        log_events_counter / set_log_events_counter: u16 = 16, 16;
        /// CurrentTimeStamp, in 1.024 us units.
        current_time_stamp / set_current_time_stamp: u32 = 32, 32;
        /// PortMap: one bit per port that marked, port 0 in the last byte's lowest bit.
        port_map / port_map_mut: bytes = 64, 256;
        /// SLID of event `index`.
        slid / set_slid: u16[15] = 320, 16, 96;
        /// DLID of event `index`.
        dlid / set_dlid: u16[15] = 336, 16, 96;
        /// SL of event `index`.
        sl / set_sl: u8[15] = 352, 4, 96;
        /// Timestamp of event `index`.
        timestamp / set_timestamp: u32[15] = 384, 32, 96;
    }
}

layout! {
    /// A view of a CA's CongestionLog (220 bytes): the SLs whose CCTI reached their trigger
    /// and up to 13 such events.
    pub struct CaCongestionLog[220];
    {
        /// LogType: [`LOG_TYPE_CA`].
        log_type / set_log_type: u8 = 0, 8;
        /// CongestionFlags.
        congestion_flags / set_congestion_flags: u8 = 8, 8;
        /// ThresholdEventCounter: events since the last read.
        threshold_event_counter / set_threshold_event_counter: u16 = 16, 16;
        /// ThresholdCongestionEventMap: bit `sl` set when SL `sl`'s CCTI reached its
        /// Trigger_Threshold.
        threshold_congestion_event_map / set_threshold_congestion_event_map: u16 = 32, 16;
        /// CurrentTimeStamp, in 1.024 us units.
        current_time_stamp / set_current_time_stamp: u32 = 64, 32;
        /// Local QP of event `index` (0 when the port as a whole reached its threshold).
        local_qp / set_local_qp: u32[13] = 96, 24, 128;
        /// Remote QP of event `index` (0 for a datagram QP).
        remote_qp / set_remote_qp: u32[13] = 128, 24, 128;
        /// SL of event `index`.
        sl / set_sl: u8[13] = 152, 4, 128;
        /// Service type of event `index`: 0 RC, 1 UC, 2 RD, 3 UD.
        service_type / set_service_type: u8[13] = 156, 4, 128;
        /// Remote LID of event `index`.
        remote_lid / set_remote_lid: u16[13] = 160, 16, 128;
        /// Timestamp of event `index`.
        timestamp / set_timestamp: u32[13] = 192, 32, 128;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcMad;

    #[test]
    fn a_switch_log_has_its_port_map_then_15_events_of_12_bytes() {
        let mut mad = [0u8; 256];
        // Log data from byte 32: LogType, flags, 2 events, time 0x01020304.
        mad[32..40].copy_from_slice(&[0x01, 0x01, 0x00, 0x02, 0x01, 0x02, 0x03, 0x04]);
        mad[71] = 0x08; // PortMap's last byte: port 3
        // Event 0 from log byte 40 (MAD byte 72): SLID 1, DLID 2, SL 5, time 7.
        mad[72..84].copy_from_slice(&[0, 1, 0, 2, 0x50, 0, 0, 0, 0, 0, 0, 7]);
        // Event 14 at log byte 40 + 14 * 12 = 208 (MAD byte 240).
        mad[240..252].copy_from_slice(&[0xff, 0xff, 0xc0, 0x00, 0xf0, 0, 0, 0, 0xff, 0, 0, 0]);
        let cc = CcMad::new_checked(&mad[..]).unwrap();
        let log = SwitchCongestionLog::new_checked(cc.log_and_data()).unwrap();
        assert_eq!(
            (log.log_type(), log.congestion_flags()),
            (LOG_TYPE_SWITCH, 1)
        );
        assert_eq!(
            (log.log_events_counter(), log.current_time_stamp()),
            (2, 0x0102_0304)
        );
        assert_eq!(log.port_map()[31], 0x08);
        assert_eq!(
            (log.slid(0), log.dlid(0), log.sl(0), log.timestamp(0)),
            (1, 2, 5, 7)
        );
        assert_eq!(
            (log.slid(1), log.dlid(1), log.sl(1), log.timestamp(1)),
            (0, 0, 0, 0)
        );
        assert_eq!(
            (log.slid(14), log.dlid(14), log.sl(14), log.timestamp(14)),
            (0xffff, 0xc000, 15, 0xff00_0000)
        );
        assert!(SwitchCongestionLog::new_checked(&cc.log_and_data()[..219]).is_err());
    }

    #[test]
    fn a_ca_log_has_13_events_of_16_bytes() {
        let mut log = [0u8; 220];
        log[..12].copy_from_slice(&[0x02, 0, 0, 3, 0x80, 0x01, 0, 0, 0, 0, 0x10, 0]);
        // Event 0 from byte 12: QP 0x123456, remote QP 0xabcdef, SL 2, service 1 (UC),
        // remote LID 0x0042, time 9.
        log[12..28].copy_from_slice(&[
            0x12, 0x34, 0x56, 0, 0xab, 0xcd, 0xef, 0x21, 0x00, 0x42, 0, 0, 0, 0, 0, 9,
        ]);
        // Event 12 from byte 12 + 12 * 16 = 204.
        log[204..220].copy_from_slice(&[0, 0, 1, 0, 0, 0, 2, 0xf0, 0, 3, 0, 0, 0, 0, 0, 4]);
        let view = CaCongestionLog::new_checked(&log[..]).unwrap();
        assert_eq!(
            (view.log_type(), view.threshold_event_counter()),
            (LOG_TYPE_CA, 3)
        );
        assert_eq!(view.threshold_congestion_event_map(), 0x8001);
        assert_eq!(view.current_time_stamp(), 0x1000);
        let event = |i| {
            (
                view.local_qp(i),
                view.remote_qp(i),
                view.sl(i),
                view.service_type(i),
                view.remote_lid(i),
                view.timestamp(i),
            )
        };
        assert_eq!(event(0), (0x12_3456, 0xab_cdef, 2, 1, 0x42, 9));
        assert_eq!(event(12), (1, 2, 15, 0, 3, 4));
    }
}
