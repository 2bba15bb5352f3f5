//! One reading of a port's counters as the database keeps it (OpenSM's
//! `perfmgr_db_err_reading_t` and `perfmgr_db_data_cnt_reading_t`), read from the wire, and
//! OpenSM's rule for a counter "close to full".

use ibqos_mad::{PortCountersExtendedRepr, PortCountersRepr};

/// The error counters of PortCounters, PortXmitWait last, in OpenSM's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCounter {
    SymbolErrors,
    LinkErrorRecovery,
    LinkDowned,
    RcvErrors,
    RcvRemotePhysicalErrors,
    RcvSwitchRelayErrors,
    XmitDiscards,
    XmitConstraintErrors,
    RcvConstraintErrors,
    LocalLinkIntegrityErrors,
    ExcessiveBufferOverrunErrors,
    Vl15Dropped,
    XmitWait,
}

impl ErrorCounter {
    pub const ALL: [ErrorCounter; 13] = [
        ErrorCounter::SymbolErrors,
        ErrorCounter::LinkErrorRecovery,
        ErrorCounter::LinkDowned,
        ErrorCounter::RcvErrors,
        ErrorCounter::RcvRemotePhysicalErrors,
        ErrorCounter::RcvSwitchRelayErrors,
        ErrorCounter::XmitDiscards,
        ErrorCounter::XmitConstraintErrors,
        ErrorCounter::RcvConstraintErrors,
        ErrorCounter::LocalLinkIntegrityErrors,
        ErrorCounter::ExcessiveBufferOverrunErrors,
        ErrorCounter::Vl15Dropped,
        ErrorCounter::XmitWait,
    ];

    /// The name the database dumps give it (the machine-readable header's, where the
    /// human-readable dump differs: see [`hr_name`](Self::hr_name)).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCounter::SymbolErrors => "symbol_err_cnt",
            ErrorCounter::LinkErrorRecovery => "link_err_recover",
            ErrorCounter::LinkDowned => "link_downed",
            ErrorCounter::RcvErrors => "rcv_err",
            ErrorCounter::RcvRemotePhysicalErrors => "rcv_rem_phys_err",
            ErrorCounter::RcvSwitchRelayErrors => "rcv_switch_relay_err",
            ErrorCounter::XmitDiscards => "xmit_discards",
            ErrorCounter::XmitConstraintErrors => "xmit_constraint_err",
            ErrorCounter::RcvConstraintErrors => "rcv_constraint_err",
            ErrorCounter::LocalLinkIntegrityErrors => "link_int_err",
            ErrorCounter::ExcessiveBufferOverrunErrors => "buf_overrun_err",
            ErrorCounter::Vl15Dropped => "vl15_dropped",
            ErrorCounter::XmitWait => "xmit_wait",
        }
    }

    /// The name in the human-readable dump, which spells one counter out in full.
    pub fn hr_name(self) -> &'static str {
        match self {
            ErrorCounter::LocalLinkIntegrityErrors => "link_integrity_err",
            other => other.name(),
        }
    }

    /// The name and error number OpenSM logs its growth with (`perfmgr_log_errors`):
    /// ERR 5431 to 543C, and 543D for XmitWait, which has a threshold of its own.
    pub fn logged_as(self) -> (&'static str, &'static str) {
        match self {
            ErrorCounter::SymbolErrors => ("SymbolErrorCounter", "5431"),
            ErrorCounter::LinkErrorRecovery => ("LinkErrorRecoveryCounter", "5432"),
            ErrorCounter::LinkDowned => ("LinkDownedCounter", "5433"),
            ErrorCounter::RcvErrors => ("PortRcvErrors", "5434"),
            ErrorCounter::RcvRemotePhysicalErrors => ("PortRcvRemotePhysicalErrors", "5435"),
            ErrorCounter::RcvSwitchRelayErrors => ("PortRcvSwitchRelayErrors", "5436"),
            ErrorCounter::XmitDiscards => ("PortXmitDiscards", "5437"),
            ErrorCounter::XmitConstraintErrors => ("PortXmitConstraintErrors", "5438"),
            ErrorCounter::RcvConstraintErrors => ("PortRcvConstraintErrors", "5439"),
            ErrorCounter::LocalLinkIntegrityErrors => ("LocalLinkIntegrityErrors", "543A"),
            ErrorCounter::ExcessiveBufferOverrunErrors => ("ExcessiveBufferOverrunErrors", "543B"),
            ErrorCounter::Vl15Dropped => ("VL15Dropped", "543C"),
            ErrorCounter::XmitWait => ("XmitWait", "543D"),
        }
    }
}

/// The data counters, from PortCountersExtended or, without it, PortCounters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataCounter {
    XmitData,
    RcvData,
    XmitPkts,
    RcvPkts,
    UnicastXmitPkts,
    UnicastRcvPkts,
    MulticastXmitPkts,
    MulticastRcvPkts,
}

impl DataCounter {
    pub const ALL: [DataCounter; 8] = [
        DataCounter::XmitData,
        DataCounter::RcvData,
        DataCounter::XmitPkts,
        DataCounter::RcvPkts,
        DataCounter::UnicastXmitPkts,
        DataCounter::UnicastRcvPkts,
        DataCounter::MulticastXmitPkts,
        DataCounter::MulticastRcvPkts,
    ];

    /// The four counters every PMA keeps; the unicast and multicast ones need the IETF
    /// PortCountersExtended.
    pub const BASIC: usize = 4;

    pub fn name(self) -> &'static str {
        match self {
            DataCounter::XmitData => "xmit_data",
            DataCounter::RcvData => "rcv_data",
            DataCounter::XmitPkts => "xmit_pkts",
            DataCounter::RcvPkts => "rcv_pkts",
            DataCounter::UnicastXmitPkts => "unicast_xmit_pkts",
            DataCounter::UnicastRcvPkts => "unicast_rcv_pkts",
            DataCounter::MulticastXmitPkts => "multicast_xmit_pkts",
            DataCounter::MulticastRcvPkts => "multicast_rcv_pkts",
        }
    }

    /// Counts octets divided by 4, which the human-readable dump shows as bytes.
    pub fn is_data(self) -> bool {
        matches!(self, DataCounter::XmitData | DataCounter::RcvData)
    }
}

/// Seconds since the Unix epoch, as C's `time_t`.
pub type UnixTime = i64;

/// Counters read at one time (or totals updated at one time), indexed by their kind's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading<const N: usize> {
    pub counts: [u64; N],
    pub time: UnixTime,
}

/// The 13 error counters ([`ErrorCounter`] order).
pub type ErrorReading = Reading<13>;
/// The 8 data counters ([`DataCounter`] order).
pub type DataReading = Reading<8>;

impl<const N: usize> Reading<N> {
    /// Every counter at 0, as of `time`.
    pub fn zero(time: UnixTime) -> Self {
        Reading {
            counts: [0; N],
            time,
        }
    }

    /// Whether any counter is lower than in `previous`: counters stop at their maximum and
    /// never wrap, so a lower one was cleared by someone else.
    pub fn fell_below(&self, previous: &Self) -> bool {
        self.counts
            .iter()
            .zip(previous.counts)
            .any(|(now, before)| *now < before)
    }
}

impl ErrorReading {
    pub fn get(&self, counter: ErrorCounter) -> u64 {
        self.counts[counter as usize]
    }

    /// `perfmgr_db_fill_err_read`: PortXmitWait only where the PMA keeps it.
    pub fn from_port_counters(wire: &PortCountersRepr, xmit_wait: bool, time: UnixTime) -> Self {
        Reading {
            counts: [
                wire.symbol_error_counter.into(),
                wire.link_error_recovery_counter.into(),
                wire.link_downed_counter.into(),
                wire.port_rcv_errors.into(),
                wire.port_rcv_remote_physical_errors.into(),
                wire.port_rcv_switch_relay_errors.into(),
                wire.port_xmit_discards.into(),
                wire.port_xmit_constraint_errors.into(),
                wire.port_rcv_constraint_errors.into(),
                wire.local_link_integrity_errors.into(),
                wire.excessive_buffer_overrun_errors.into(),
                wire.vl15_dropped.into(),
                if xmit_wait {
                    wire.port_xmit_wait.into()
                } else {
                    0
                },
            ],
            time,
        }
    }
}

impl DataReading {
    pub fn get(&self, counter: DataCounter) -> u64 {
        self.counts[counter as usize]
    }

    /// `perfmgr_db_fill_data_cnt_read_pc`: the 32-bit data counters, no unicast or multicast.
    pub fn from_port_counters(wire: &PortCountersRepr, time: UnixTime) -> Self {
        let basic = [
            wire.port_xmit_data,
            wire.port_rcv_data,
            wire.port_xmit_pkts,
            wire.port_rcv_pkts,
        ];
        let mut counts = [0; 8];
        for (count, value) in counts.iter_mut().zip(basic) {
            *count = value.into();
        }
        Reading { counts, time }
    }

    /// `perfmgr_db_fill_data_cnt_read_pce`: unicast and multicast only with the IETF variant.
    pub fn from_extended(wire: &PortCountersExtendedRepr, ietf: bool, time: UnixTime) -> Self {
        let mut counts = [
            wire.port_xmit_data,
            wire.port_rcv_data,
            wire.port_xmit_pkts,
            wire.port_rcv_pkts,
            wire.port_unicast_xmit_pkts,
            wire.port_unicast_rcv_pkts,
            wire.port_multicast_xmit_pkts,
            wire.port_multicast_rcv_pkts,
        ];
        if !ietf {
            counts[DataCounter::BASIC..].fill(0);
        }
        Reading { counts, time }
    }
}

/// Whether a counter `bits` wide is close enough to its maximum that OpenSM clears it
/// (`counter_overflow_*` in `osm_perfmgr.c`): at 10 for 4 bits, else at three quarters of the
/// range (max - max / 4).
pub fn near_full(value: u64, bits: u32) -> bool {
    if bits == 4 {
        return value >= 10;
    }
    let max = if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    value >= max - max / 4
}

/// `perfmgr_check_overflow`'s test of a PortCounters answer: any error counter near full,
/// PortXmitWait where kept, and the 32-bit data counters where PortCountersExtended does not
/// take their place.
pub fn port_counters_near_full(wire: &PortCountersRepr, xmit_wait: bool, extended: bool) -> bool {
    let widths: [(u64, u32); 12] = [
        (wire.symbol_error_counter.into(), 16),
        (wire.link_error_recovery_counter.into(), 8),
        (wire.link_downed_counter.into(), 8),
        (wire.port_rcv_errors.into(), 16),
        (wire.port_rcv_remote_physical_errors.into(), 16),
        (wire.port_rcv_switch_relay_errors.into(), 16),
        (wire.port_xmit_discards.into(), 16),
        (wire.port_xmit_constraint_errors.into(), 8),
        (wire.port_rcv_constraint_errors.into(), 8),
        (wire.local_link_integrity_errors.into(), 4),
        (wire.excessive_buffer_overrun_errors.into(), 4),
        (wire.vl15_dropped.into(), 16),
    ];
    let data = [
        wire.port_xmit_data,
        wire.port_rcv_data,
        wire.port_xmit_pkts,
        wire.port_rcv_pkts,
    ];
    widths.iter().any(|&(value, bits)| near_full(value, bits))
        || (xmit_wait && near_full(wire.port_xmit_wait.into(), 32))
        || (!extended && data.iter().any(|&value| near_full(value.into(), 32)))
}

/// `perfmgr_check_pce_overflow`'s test: the four basic counters, and unicast and multicast with
/// the IETF variant.
pub fn extended_near_full(wire: &PortCountersExtendedRepr, ietf: bool) -> bool {
    let reading = DataReading::from_extended(wire, ietf, 0);
    reading.counts.iter().any(|&value| near_full(value, 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_opensms() {
        let cases = [
            (4, 9, false),
            (4, 10, true),
            (8, 191, false),
            (8, 192, true),
            (16, 49_151, false),
            (16, 49_152, true),
            (32, 3_221_225_471, false),
            (32, 3_221_225_472, true),
            (64, 13_835_058_055_282_163_711, false),
            (64, 13_835_058_055_282_163_712, true),
        ];
        for (bits, value, full) in cases {
            assert_eq!(near_full(value, bits), full, "{bits} bits at {value}");
        }
    }

    fn quiet() -> PortCountersRepr {
        PortCountersRepr {
            port_select: 1,
            counter_select: 0,
            symbol_error_counter: 0,
            link_error_recovery_counter: 0,
            link_downed_counter: 0,
            port_rcv_errors: 0,
            port_rcv_remote_physical_errors: 0,
            port_rcv_switch_relay_errors: 0,
            port_xmit_discards: 0,
            port_xmit_constraint_errors: 0,
            port_rcv_constraint_errors: 0,
            counter_select2: 0,
            local_link_integrity_errors: 0,
            excessive_buffer_overrun_errors: 0,
            qp1_dropped: 0,
            vl15_dropped: 0,
            port_xmit_data: 0,
            port_rcv_data: 0,
            port_xmit_pkts: 0,
            port_rcv_pkts: 0,
            port_xmit_wait: 0,
        }
    }

    #[test]
    fn data_counters_count_only_without_the_extended_attribute() {
        let full_data = PortCountersRepr {
            port_rcv_data: 3_221_225_472,
            ..quiet()
        };
        assert!(port_counters_near_full(&full_data, false, false));
        assert!(!port_counters_near_full(&full_data, false, true));
        let waiting = PortCountersRepr {
            port_xmit_wait: u32::MAX,
            ..quiet()
        };
        assert!(port_counters_near_full(&waiting, true, true));
        assert!(!port_counters_near_full(&waiting, false, true));
        let integrity = PortCountersRepr {
            local_link_integrity_errors: 10,
            ..quiet()
        };
        assert!(port_counters_near_full(&integrity, false, true));
        assert!(!port_counters_near_full(&quiet(), true, false));
    }

    #[test]
    fn a_reading_without_xmit_wait_or_ietf_leaves_them_zero() {
        let wire = PortCountersRepr {
            port_xmit_wait: 7,
            port_xmit_data: 5,
            ..quiet()
        };
        let errors = ErrorReading::from_port_counters(&wire, false, 1);
        assert_eq!(errors.get(ErrorCounter::XmitWait), 0);
        let errors = ErrorReading::from_port_counters(&wire, true, 1);
        assert_eq!(errors.get(ErrorCounter::XmitWait), 7);
        let data = DataReading::from_port_counters(&wire, 1);
        assert_eq!(data.get(DataCounter::XmitData), 5);
    }
}
