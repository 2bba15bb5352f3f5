//! The per-VL and per-SL counters ibqos reads beyond OpenSM, with `perfmgr_lanes`: what each
//! attribute holds, and the last reading and rate of each port's counters.
//!
//! No ClassPortInfo CapabilityMask bit advertises these attributes. A PMA that lacks one answers
//! status 0x000C, or nothing at all; ibsim hands the per-SL ones back undelivered. The manager
//! then stops asking that port for it until the node leaves the subnet and comes back.
//!
//! IBA counters stop at their largest value. A reading at 75% of the range or more is cleared
//! with a Set, as OpenSM clears PortCounters, so that a counter rarely stops. A reading below
//! the one before means the counters were cleared behind the PerfMgr's back (or wrapped, on a
//! PMA that wraps): the growth is then counted from 0.

use std::collections::BTreeMap;
use std::time::Instant;

use ibqos_mad::{
    CounterHeader, PerfAttributeId, PortRcvDataSl, PortSlRcvBecn, PortSlRcvFecn, PortVlOpData,
    PortVlOpPackets, PortVlXmitWaitCounters, PortXmitDataSl, PortXmitDiscardDetails,
};

use crate::counters::near_full;

/// One attribute of per-VL, per-SL or per-cause counters the PerfMgr reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// PortXmitDataSL: data sent per SL, in words of 4 octets.
    XmitDataSl,
    /// PortRcvDataSL: data received per SL, in words of 4 octets.
    RcvDataSl,
    /// PortSLRcvFECN: packets received with FECN set, per SL.
    SlRcvFecn,
    /// PortSLRcvBECN: packets received with BECN set, per SL.
    SlRcvBecn,
    /// PortVLXmitWaitCounters: ticks each VL had data to send and no credit.
    VlXmitWait,
    /// PortVLOpPackets: packets received per VL (OpCode 0 asked).
    VlOpPackets,
    /// PortVLOpData: data received per VL, in words of 4 octets (OpCode 0 asked).
    VlOpData,
    /// PortXmitDiscardDetails: outbound packets discarded, per cause.
    XmitDiscardDetails,
}

/// What the index of a [`Lane`]'s counters names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    Sl,
    Vl,
    /// A discard cause, named by [`DISCARD_CAUSES`].
    Cause,
}

/// PortXmitDiscardDetails' counters in order, short names for labels.
pub const DISCARD_CAUSES: [&str; 4] = [
    "inactive",
    "neighbor_mtu",
    "sw_lifetime_limit",
    "sw_hoq_lifetime_limit",
];

impl Lane {
    /// Every attribute, in the order a port is asked for them.
    pub const ALL: [Lane; 8] = [
        Lane::XmitDataSl,
        Lane::RcvDataSl,
        Lane::SlRcvFecn,
        Lane::SlRcvBecn,
        Lane::VlXmitWait,
        Lane::VlOpPackets,
        Lane::VlOpData,
        Lane::XmitDiscardDetails,
    ];

    pub fn attribute(self) -> PerfAttributeId {
        match self {
            Lane::XmitDataSl => PerfAttributeId::PortXmitDataSl,
            Lane::RcvDataSl => PerfAttributeId::PortRcvDataSl,
            Lane::SlRcvFecn => PerfAttributeId::PortSlRcvFecn,
            Lane::SlRcvBecn => PerfAttributeId::PortSlRcvBecn,
            Lane::VlXmitWait => PerfAttributeId::PortVlXmitWaitCounters,
            Lane::VlOpPackets => PerfAttributeId::PortVlOpPackets,
            Lane::VlOpData => PerfAttributeId::PortVlOpData,
            Lane::XmitDiscardDetails => PerfAttributeId::PortXmitDiscardDetails,
        }
    }

    pub fn index(self) -> Index {
        match self {
            Lane::XmitDataSl | Lane::RcvDataSl | Lane::SlRcvFecn | Lane::SlRcvBecn => Index::Sl,
            Lane::VlXmitWait | Lane::VlOpPackets | Lane::VlOpData => Index::Vl,
            Lane::XmitDiscardDetails => Index::Cause,
        }
    }

    /// How many counters the attribute holds.
    pub fn counters(self) -> usize {
        match self.index() {
            Index::Cause => DISCARD_CAUSES.len(),
            Index::Sl | Index::Vl => 16,
        }
    }

    /// The width of its counters in bits.
    fn bits(self) -> u32 {
        match self {
            Lane::VlXmitWait | Lane::VlOpPackets | Lane::XmitDiscardDetails => 16,
            _ => 32,
        }
    }

    /// The CounterSelect of a Set that clears every counter of the attribute.
    pub fn clear_all(self) -> u16 {
        u16::MAX >> (16 - self.counters())
    }

    /// Its place in a [`LaneSet`].
    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// The counters of an answer's data area, or `None` when it is too short.
    pub fn read(self, data: &[u8]) -> Option<Vec<u64>> {
        // Each attribute's counters through its own layout: a view, and its accessor by index.
        macro_rules! row {
            ($layout:ident, $counter:ident) => {{
                let view = $layout::new_checked(data).ok()?;
                (0..self.counters())
                    .map(|i| u64::from(view.$counter(i)))
                    .collect()
            }};
        }
        Some(match self {
            Lane::XmitDataSl => row!(PortXmitDataSl, data),
            Lane::RcvDataSl => row!(PortRcvDataSl, data),
            Lane::SlRcvFecn => row!(PortSlRcvFecn, fecn),
            Lane::SlRcvBecn => row!(PortSlRcvBecn, becn),
            Lane::VlXmitWait => row!(PortVlXmitWaitCounters, wait),
            Lane::VlOpPackets => row!(PortVlOpPackets, packets),
            Lane::VlOpData => row!(PortVlOpData, data),
            Lane::XmitDiscardDetails => {
                let view = PortXmitDiscardDetails::new_checked(data).ok()?;
                [
                    view.inactive_discards(),
                    view.neighbor_mtu_discards(),
                    view.sw_lifetime_limit_discards(),
                    view.sw_hoq_lifetime_limit_discards(),
                ]
                .into_iter()
                .map(u64::from)
                .collect()
            }
        })
    }

    /// Counter by counter, whether it is at its largest value.
    fn stopped(self, counters: &[u64]) -> Vec<bool> {
        let max = u64::MAX >> (64 - self.bits());
        counters.iter().map(|&value| value >= max).collect()
    }

    /// Whether a counter of `counters` is close enough to its largest value to be cleared.
    pub fn near_full(self, counters: &[u64]) -> bool {
        counters.iter().any(|&value| near_full(value, self.bits()))
    }

    /// Writes the request's PortSelect and CounterSelect into `data`. OpCode, in the per-VL
    /// opcode attributes, stays 0.
    pub fn write_request(data: &mut [u8], port: u8, counter_select: u16) {
        let mut header = CounterHeader::new_unchecked(&mut data[..CounterHeader::<&[u8]>::LEN]);
        header.set_port_select(port);
        header.set_counter_select(counter_select);
    }
}

/// The attributes a port lacks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneSet(u8);

impl LaneSet {
    pub fn contains(self, lane: Lane) -> bool {
        self.0 & lane.bit() != 0
    }

    pub fn insert(&mut self, lane: Lane) {
        self.0 |= lane.bit();
    }
}

/// One port's counters of one attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneCounters {
    /// The last reading, counter by counter; zeros after the PerfMgr cleared them.
    pub last: Vec<u64>,
    /// When it was read.
    pub read_at: Instant,
    /// Growth per second between the last two readings, counter by counter; `None` until a
    /// second reading with time between them.
    pub rate: Option<Vec<f64>>,
    /// Counter by counter, whether the last reading found it at its largest value: it stopped
    /// there, and grew by more than its rate says.
    pub stopped: Vec<bool>,
}

/// What a reading found beside the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// A counter fell since the previous reading: cleared behind the PerfMgr's back.
    pub cleared_out_of_band: bool,
}

/// The last reading and rate of every port's per-VL and per-SL counters, by node GUID, port
/// and attribute.
#[derive(Debug, Clone, Default)]
pub struct LaneDatabase {
    ports: BTreeMap<(u64, u8, Lane), LaneCounters>,
    /// How many times the database changed: an exporter compares it to know when to export.
    changes: u64,
}

impl LaneDatabase {
    /// How many times the database changed since it was made.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    pub fn get(&self, guid: u64, port: u8, lane: Lane) -> Option<&LaneCounters> {
        self.ports.get(&(guid, port, lane))
    }

    /// Every port's counters, by node GUID, port and attribute.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u8, Lane, &LaneCounters)> {
        self.ports
            .iter()
            .map(|(&(guid, port, lane), counters)| (guid, port, lane, counters))
    }

    /// Keeps a reading taken at `now` and the rate since the previous one.
    pub fn take(
        &mut self,
        guid: u64,
        port: u8,
        lane: Lane,
        counters: Vec<u64>,
        now: Instant,
    ) -> Taken {
        self.changes += 1;
        let stopped = lane.stopped(&counters);
        let Some(kept) = self.ports.get_mut(&(guid, port, lane)) else {
            self.ports.insert(
                (guid, port, lane),
                LaneCounters {
                    last: counters,
                    read_at: now,
                    rate: None,
                    stopped,
                },
            );
            return Taken {
                cleared_out_of_band: false,
            };
        };
        let fell = counters
            .iter()
            .zip(&kept.last)
            .any(|(current, previous)| current < previous);
        let seconds = now.saturating_duration_since(kept.read_at).as_secs_f64();
        if seconds > 0.0 {
            let growth = counters
                .iter()
                .zip(&kept.last)
                .map(|(&current, &previous)| if fell { current } else { current - previous });
            kept.rate = Some(growth.map(|grew| grew as f64 / seconds).collect());
        }
        kept.last = counters;
        kept.read_at = now;
        kept.stopped = stopped;
        Taken {
            cleared_out_of_band: fell,
        }
    }

    /// The PerfMgr cleared the port's counters: the next reading grows from 0.
    pub fn cleared(&mut self, guid: u64, port: u8, lane: Lane) {
        self.changes += 1;
        if let Some(kept) = self.ports.get_mut(&(guid, port, lane)) {
            kept.last.iter_mut().for_each(|count| *count = 0);
        }
    }

    /// Forgets a node, as it leaves the subnet.
    pub fn delete(&mut self, guid: u64) {
        self.changes += 1;
        self.ports.retain(|&(node, ..), _| node != guid);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_attribute_reads_its_counters_where_iba_puts_them() {
        let mut data = [0u8; 192];
        for (i, byte) in data.iter_mut().enumerate() {
            *byte = i as u8;
        }
        let sl = Lane::XmitDataSl.read(&data).unwrap();
        assert_eq!((sl.len(), sl[0], sl[15]), (16, 0x0405_0607, 0x4041_4243));
        let wait = Lane::VlXmitWait.read(&data).unwrap();
        assert_eq!((wait[0], wait[15]), (0x0405, 0x2223));
        let causes = Lane::XmitDiscardDetails.read(&data).unwrap();
        assert_eq!(causes, [0x0405, 0x0607, 0x0809, 0x0a0b]);
        assert!(Lane::VlOpData.read(&data[..67]).is_none());
        assert_eq!(Lane::XmitDiscardDetails.clear_all(), 0x000f);
        assert_eq!(Lane::RcvDataSl.clear_all(), 0xffff);
        assert!(Lane::VlXmitWait.near_full(&[0, 49_152]));
        assert!(!Lane::VlOpData.near_full(&[49_152]));
    }

    #[test]
    fn rates_are_growth_over_time_and_a_fall_counts_from_zero() {
        let start = Instant::now();
        let mut db = LaneDatabase::default();
        let lane = Lane::VlXmitWait;
        db.take(1, 2, lane, vec![10, 0], start);
        assert_eq!(db.get(1, 2, lane).unwrap().rate, None);
        let taken = db.take(1, 2, lane, vec![30, 4], start + Duration::from_secs(2));
        assert!(!taken.cleared_out_of_band);
        assert_eq!(db.get(1, 2, lane).unwrap().rate, Some(vec![10.0, 2.0]));
        let taken = db.take(1, 2, lane, vec![5, 8], start + Duration::from_secs(3));
        assert!(taken.cleared_out_of_band);
        assert_eq!(db.get(1, 2, lane).unwrap().rate, Some(vec![5.0, 8.0]));
        assert_eq!(db.get(1, 2, lane).unwrap().stopped, [false, false]);
        db.take(1, 2, lane, vec![65_535, 9], start + Duration::from_secs(3));
        assert_eq!(db.get(1, 2, lane).unwrap().stopped, [true, false]);
        db.cleared(1, 2, lane);
        let taken = db.take(1, 2, lane, vec![1, 1], start + Duration::from_secs(4));
        assert!(!taken.cleared_out_of_band, "the PerfMgr's own clear");
        assert_eq!(db.get(1, 2, lane).unwrap().rate, Some(vec![1.0, 1.0]));
        db.delete(1);
        assert!(db.iter().next().is_none());
    }
}
