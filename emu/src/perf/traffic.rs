//! Traffic other than MADs, added to a port's counters: what the packet simulator reports for
//! a port after each sampling step, in one call per port and step (see
//! [`Emulator::add_traffic`](crate::Emulator::add_traffic)).

use ibqos_qos::{Sl, Vl};

use super::optional::Optional;
use super::{Counter, PortCounters, Way};

/// Data and packets that crossed a port on one SL and VL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneTraffic {
    pub sl: Sl,
    pub vl: Vl,
    /// Data, in words of 4 octets (the unit of every data counter).
    pub words: u64,
    pub packets: u64,
}

/// Outbound packets a port discarded, by cause (PortXmitDiscardDetails).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XmitDiscards {
    /// The port was not Active.
    pub inactive: u64,
    /// Larger than the neighbour's MTU.
    pub neighbor_mtu: u64,
    /// A switch held them longer than its lifetime limit.
    pub sw_lifetime_limit: u64,
    /// They waited at the head of a queue longer than the HOQ lifetime.
    pub sw_hoq_lifetime_limit: u64,
}

/// What one port did over a stretch of time: every counter it adds to, at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortTraffic {
    /// Unicast data and packets sent, by SL and VL: PortXmitData and PortXmitPkts (32 and 64
    /// bits), PortUnicastXmitPkts and PortXmitDataSL.
    pub sent: Vec<LaneTraffic>,
    /// Unicast data and packets received, by SL and VL: PortRcvData and PortRcvPkts (32 and 64
    /// bits), PortUnicastRcvPkts, PortRcvDataSL, and PortVLOpPackets and PortVLOpData (every
    /// packet, whatever OpCode a request names).
    pub received: Vec<LaneTraffic>,
    /// Ticks each VL (the index) had data to send and no credit: PortVLXmitWait, and their sum
    /// PortXmitWait.
    pub xmit_wait: [u64; 16],
    /// Packets received with FECN set, by SL (the index): PortSLRcvFECN and PortPktRcvFECN.
    pub fecn: [u64; 16],
    /// Packets received with BECN set, by SL: PortSLRcvBECN and PortPktRcvBECN.
    pub becn: [u64; 16],
    /// Outbound packets discarded: PortXmitDiscardDetails and PortXmitDiscards.
    pub discards: XmitDiscards,
    /// Packets received that the switch could not relay (no route for the DLID, or an SL that
    /// maps to no VL the output runs): PortRcvSwitchRelayErrors.
    pub relay_errors: u64,
}

impl PortCounters {
    /// Counts `traffic`, each counter stopping at its maximum.
    pub(super) fn add_traffic(&mut self, traffic: &PortTraffic) {
        for (way, lanes) in [
            (Way::Sent, &traffic.sent),
            (Way::Received, &traffic.received),
        ] {
            for lane in lanes {
                let at = (lane.sl, lane.vl);
                self.count_packets(way, at, lane.words, lane.packets, true);
            }
        }
        self.add_row(
            Optional::VlXmitWait,
            &traffic.xmit_wait,
            Some(Counter::XmitWait),
        );
        self.add_row(Optional::SlRcvFecn, &traffic.fecn, None);
        self.add_row(Optional::SlRcvBecn, &traffic.becn, None);
        let [fecn, becn] = [&traffic.fecn, &traffic.becn].map(|row| row.iter().sum());
        self.optional.add(Optional::RcvConCtrl, 0, fecn);
        self.optional.add(Optional::RcvConCtrl, 1, becn);
        let d = traffic.discards;
        let causes = [
            d.inactive,
            d.neighbor_mtu,
            d.sw_lifetime_limit,
            d.sw_hoq_lifetime_limit,
        ];
        self.add_row(
            Optional::XmitDiscardDetails,
            &causes,
            Some(Counter::XmitDiscards),
        );
        self.add(Counter::RcvSwitchRelayErrors, traffic.relay_errors);
    }

    /// Adds `row` to `attribute`'s counters, entry `i` to counter `i`, and their sum to `total`.
    fn add_row(&mut self, attribute: Optional, row: &[u64], total: Option<Counter>) {
        for (index, &n) in (0..).zip(row) {
            self.optional.add(attribute, index, n);
        }
        if let Some(total) = total {
            self.add(
                total,
                row.iter().fold(0, |sum: u64, &n| sum.saturating_add(n)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::Extended;

    fn lane(sl: u8, vl: u8, words: u64, packets: u64) -> LaneTraffic {
        LaneTraffic {
            sl: Sl::new(sl).unwrap(),
            vl: Vl::new(vl).unwrap(),
            words,
            packets,
        }
    }

    #[test]
    fn traffic_counts_in_every_counter_it_belongs_to() {
        let mut c = PortCounters::default();
        let mut traffic = PortTraffic {
            sent: vec![lane(1, 1, 1000, 4), lane(2, 1, 500, 2)],
            received: vec![lane(3, 2, 300, 3)],
            ..PortTraffic::default()
        };
        traffic.xmit_wait[1] = 70;
        traffic.xmit_wait[2] = 0xffff;
        traffic.fecn[3] = 5;
        traffic.becn[4] = 6;
        traffic.discards.sw_hoq_lifetime_limit = 9;
        traffic.relay_errors = 4;
        c.add_traffic(&traffic);

        assert_eq!(c.get(Counter::XmitData), 1500);
        assert_eq!(c.get(Counter::XmitPkts), 6);
        assert_eq!(c.get(Counter::RcvData), 300);
        assert_eq!(c.get(Counter::RcvPkts), 3);
        assert_eq!(c.extended[Extended::UnicastXmitPkts as usize], 6);
        assert_eq!(c.extended[Extended::UnicastRcvPkts as usize], 3);
        assert_eq!(c.optional.get(Optional::XmitDataSl, 1), 1000);
        assert_eq!(c.optional.get(Optional::XmitDataSl, 2), 500);
        assert_eq!(c.optional.get(Optional::RcvDataSl, 3), 300);
        assert_eq!(c.optional.get(Optional::VlOpPackets, 2), 3);
        assert_eq!(c.optional.get(Optional::VlOpData, 2), 300);
        assert_eq!(
            c.optional.get(Optional::VlOpData, 1),
            0,
            "sent is not received"
        );
        assert_eq!(c.optional.get(Optional::VlXmitWait, 1), 70);
        assert_eq!(c.optional.get(Optional::VlXmitWait, 2), 0xffff);
        assert_eq!(c.get(Counter::XmitWait), 70 + 0xffff);
        assert_eq!(c.optional.get(Optional::SlRcvFecn, 3), 5);
        assert_eq!(c.optional.get(Optional::SlRcvBecn, 4), 6);
        assert_eq!(c.optional.get(Optional::RcvConCtrl, 0), 5);
        assert_eq!(c.optional.get(Optional::RcvConCtrl, 1), 6);
        assert_eq!(c.optional.get(Optional::XmitDiscardDetails, 3), 9);
        assert_eq!(c.get(Counter::XmitDiscards), 9);
        assert_eq!(c.get(Counter::RcvSwitchRelayErrors), 4);

        // A second step adds to the first; the 16-bit PortVLXmitWait stops at its maximum.
        c.add_traffic(&traffic);
        assert_eq!(c.get(Counter::XmitData), 3000);
        assert_eq!(c.optional.get(Optional::VlXmitWait, 2), 0xffff);
        assert_eq!(c.get(Counter::XmitWait), 2 * (70 + 0xffff));
    }
}
