//! The optional attributes a PMA keeps as one row of counters after PortSelect and
//! CounterSelect (IBA 16.1.4 and annex A10): error and discard details, per-opcode and flow
//! control counters, per-VL and per-SL counters, and the congestion counters. Counter `i` of a
//! row is cleared by CounterSelect bit `i` and stops at the largest value its width holds.

use ibqos_mad::{
    PerfAttributeId, PortFlowCtlCounters, PortOpRcvCounters, PortRcvConCtrl, PortRcvDataSl,
    PortRcvErrorDetails, PortSlRcvBecn, PortSlRcvFecn, PortVlOpData, PortVlOpPackets,
    PortVlXmitFlowCtlUpdateErrors, PortVlXmitTimeCong, PortVlXmitWaitCounters, PortXmitConCtrl,
    PortXmitDataSl, PortXmitDiscardDetails, SwPortVlCongestion,
};

/// An optional attribute the PMAs keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Optional {
    RcvErrorDetails,
    XmitDiscardDetails,
    OpRcvCounters,
    FlowCtlCounters,
    VlOpPackets,
    VlOpData,
    VlXmitFlowCtlUpdateErrors,
    VlXmitWait,
    SwVlCongestion,
    RcvConCtrl,
    SlRcvFecn,
    SlRcvBecn,
    XmitConCtrl,
    VlXmitTimeCong,
    XmitDataSl,
    RcvDataSl,
}

/// How the counters of a row are named: one name each, or a name and the entry's index (a VL
/// or an SL), as perfquery prints them.
#[derive(Debug, Clone, Copy)]
enum Names {
    Each(&'static [&'static str]),
    Indexed(&'static str, u8),
}

impl Optional {
    pub(crate) const ALL: [Optional; 16] = [
        Optional::RcvErrorDetails,
        Optional::XmitDiscardDetails,
        Optional::OpRcvCounters,
        Optional::FlowCtlCounters,
        Optional::VlOpPackets,
        Optional::VlOpData,
        Optional::VlXmitFlowCtlUpdateErrors,
        Optional::VlXmitWait,
        Optional::SwVlCongestion,
        Optional::RcvConCtrl,
        Optional::SlRcvFecn,
        Optional::SlRcvBecn,
        Optional::XmitConCtrl,
        Optional::VlXmitTimeCong,
        Optional::XmitDataSl,
        Optional::RcvDataSl,
    ];

    /// The attribute's ID, its name as IBA and perfquery's headings give it, the width of its
    /// counters in bits, and their names.
    const fn describe(self) -> (PerfAttributeId, &'static str, u32, Names) {
        use Names::{Each, Indexed};
        match self {
            Optional::RcvErrorDetails => (
                PerfAttributeId::PortRcvErrorDetails,
                "PortRcvErrorDetails",
                16,
                Each(&[
                    "PortLocalPhysicalErrors",
                    "PortMalformedPktErrors",
                    "PortBufferOverrunErrors",
                    "PortDLIDMappingErrors",
                    "PortVLMappingErrors",
                    "PortLoopingErrors",
                ]),
            ),
            Optional::XmitDiscardDetails => (
                PerfAttributeId::PortXmitDiscardDetails,
                "PortXmitDiscardDetails",
                16,
                Each(&[
                    "PortInactiveDiscards",
                    "PortNeighborMTUDiscards",
                    "PortSwLifetimeLimitDiscards",
                    "PortSwHOQLifetimeLimitDiscards",
                ]),
            ),
            Optional::OpRcvCounters => (
                PerfAttributeId::PortOpRcvCounters,
                "PortOpRcvCounters",
                32,
                Each(&["PortOpRcvPkts", "PortOpRcvData"]),
            ),
            Optional::FlowCtlCounters => (
                PerfAttributeId::PortFlowCtlCounters,
                "PortFlowCtlCounters",
                32,
                Each(&["PortXmitFlowPkts", "PortRcvFlowPkts"]),
            ),
            Optional::VlOpPackets => (
                PerfAttributeId::PortVlOpPackets,
                "PortVLOpPackets",
                16,
                Indexed("PortVLOpPackets", 16),
            ),
            Optional::VlOpData => (
                PerfAttributeId::PortVlOpData,
                "PortVLOpData",
                32,
                Indexed("PortVLOpData", 16),
            ),
            Optional::VlXmitFlowCtlUpdateErrors => (
                PerfAttributeId::PortVlXmitFlowCtlUpdateErrors,
                "PortVLXmitFlowCtlUpdateErrors",
                2,
                Indexed("PortVLXmitFlowCtlUpdateErrors", 16),
            ),
            Optional::VlXmitWait => (
                PerfAttributeId::PortVlXmitWaitCounters,
                "PortVLXmitWaitCounters",
                16,
                Indexed("PortVLXmitWait", 16),
            ),
            Optional::SwVlCongestion => (
                PerfAttributeId::SwPortVlCongestion,
                "SwPortVLCongestion",
                16,
                Indexed("SWPortVLCongestion", 16),
            ),
            Optional::RcvConCtrl => (
                PerfAttributeId::PortRcvConCtrl,
                "PortRcvConCtrl",
                32,
                Each(&["PortPktRcvFECN", "PortPktRcvBECN"]),
            ),
            Optional::SlRcvFecn => (
                PerfAttributeId::PortSlRcvFecn,
                "PortSLRcvFECN",
                32,
                Indexed("PortSLRcvFECN", 16),
            ),
            Optional::SlRcvBecn => (
                PerfAttributeId::PortSlRcvBecn,
                "PortSLRcvBECN",
                32,
                Indexed("PortSLRcvBECN", 16),
            ),
            Optional::XmitConCtrl => (
                PerfAttributeId::PortXmitConCtrl,
                "PortXmitConCtrl",
                32,
                Each(&["PortXmitTimeCong"]),
            ),
            Optional::VlXmitTimeCong => (
                PerfAttributeId::PortVlXmitTimeCong,
                "PortVLXmitTimeCong",
                32,
                Indexed("PortVLXmitTimeCong", 15),
            ),
            Optional::XmitDataSl => (
                PerfAttributeId::PortXmitDataSl,
                "PortXmitDataSL",
                32,
                Indexed("XmtDataSL", 16),
            ),
            Optional::RcvDataSl => (
                PerfAttributeId::PortRcvDataSl,
                "PortRcvDataSL",
                32,
                Indexed("RcvDataSL", 16),
            ),
        }
    }

    /// The optional attribute `id` names, if the PMAs keep it.
    pub(crate) fn of(id: PerfAttributeId) -> Option<Optional> {
        let id = u16::from(id);
        Optional::ALL
            .into_iter()
            .find(|o| u16::from(o.describe().0) == id)
    }

    /// The attribute named `name` (its IBA name, as perfquery's headings print it).
    pub(crate) fn named(name: &str) -> Option<Optional> {
        Optional::ALL.into_iter().find(|o| o.describe().1 == name)
    }

    /// The attribute's name.
    pub(crate) fn name(self) -> &'static str {
        self.describe().1
    }

    /// Whether only a switch's PMA has it: SwPortVLCongestion.
    pub(crate) fn switch_only(self) -> bool {
        self == Optional::SwVlCongestion
    }

    /// The largest value one of its counters holds.
    pub(crate) const fn max(self) -> u32 {
        u32::MAX >> (32 - self.describe().2)
    }

    /// How many counters its row has.
    pub(crate) fn len(self) -> u8 {
        match self.describe().3 {
            // At most 6 names: the narrowing is exact.
            Names::Each(names) => names.len() as u8,
            Names::Indexed(_, count) => count,
        }
    }

    /// The index of its counter named `name`, as perfquery prints it (`PortVLXmitWait3`).
    pub(crate) fn counter_named(self, name: &str) -> Option<u8> {
        (0..self.len()).find(|&i| self.counter_name(i) == name)
    }

    /// The name of counter `index`.
    pub(crate) fn counter_name(self, index: u8) -> String {
        match self.describe().3 {
            Names::Each(names) => names
                .get(usize::from(index))
                .copied()
                .unwrap_or_default()
                .into(),
            Names::Indexed(base, _) => format!("{base}{index}"),
        }
    }

    /// Writes the row `count` gives into the data area `data` (192 bytes) through the
    /// attribute's layout, leaving its first four bytes as they came. Each count is at most
    /// [`Optional::max`], so every narrowing is exact.
    fn emit(self, count: impl Fn(u8) -> u32, data: &mut [u8]) {
        let wide = |set: &mut dyn FnMut(usize, u32)| {
            for i in 0..self.len() {
                set(usize::from(i), count(i));
            }
        };
        let narrow = |set: &mut dyn FnMut(usize, u16)| {
            for i in 0..self.len() {
                set(usize::from(i), count(i) as u16);
            }
        };
        match self {
            Optional::RcvErrorDetails => {
                let mut view = PortRcvErrorDetails::new_unchecked(data);
                narrow(&mut |i, n| match i {
                    0 => view.set_local_physical_errors(n),
                    1 => view.set_malformed_packet_errors(n),
                    2 => view.set_buffer_overrun_errors(n),
                    3 => view.set_dlid_mapping_errors(n),
                    4 => view.set_vl_mapping_errors(n),
                    _ => view.set_looping_errors(n),
                });
            }
            Optional::XmitDiscardDetails => {
                let mut view = PortXmitDiscardDetails::new_unchecked(data);
                narrow(&mut |i, n| match i {
                    0 => view.set_inactive_discards(n),
                    1 => view.set_neighbor_mtu_discards(n),
                    2 => view.set_sw_lifetime_limit_discards(n),
                    _ => view.set_sw_hoq_lifetime_limit_discards(n),
                });
            }
            Optional::OpRcvCounters => {
                let mut view = PortOpRcvCounters::new_unchecked(data);
                view.set_op_rcv_pkts(count(0));
                view.set_op_rcv_data(count(1));
            }
            Optional::FlowCtlCounters => {
                let mut view = PortFlowCtlCounters::new_unchecked(data);
                view.set_xmit_flow_pkts(count(0));
                view.set_rcv_flow_pkts(count(1));
            }
            Optional::VlOpPackets => {
                let mut view = PortVlOpPackets::new_unchecked(data);
                narrow(&mut |i, n| view.set_packets(i, n));
            }
            Optional::VlOpData => {
                let mut view = PortVlOpData::new_unchecked(data);
                wide(&mut |i, n| view.set_data(i, n));
            }
            Optional::VlXmitFlowCtlUpdateErrors => {
                let mut view = PortVlXmitFlowCtlUpdateErrors::new_unchecked(data);
                wide(&mut |i, n| view.set_errors(i, n as u8));
            }
            Optional::VlXmitWait => {
                let mut view = PortVlXmitWaitCounters::new_unchecked(data);
                narrow(&mut |i, n| view.set_wait(i, n));
            }
            Optional::SwVlCongestion => {
                let mut view = SwPortVlCongestion::new_unchecked(data);
                narrow(&mut |i, n| view.set_congestion(i, n));
            }
            Optional::RcvConCtrl => {
                let mut view = PortRcvConCtrl::new_unchecked(data);
                view.set_pkt_rcv_fecn(count(0));
                view.set_pkt_rcv_becn(count(1));
            }
            Optional::SlRcvFecn => {
                let mut view = PortSlRcvFecn::new_unchecked(data);
                wide(&mut |i, n| view.set_fecn(i, n));
            }
            Optional::SlRcvBecn => {
                let mut view = PortSlRcvBecn::new_unchecked(data);
                wide(&mut |i, n| view.set_becn(i, n));
            }
            Optional::XmitConCtrl => {
                PortXmitConCtrl::new_unchecked(data).set_xmit_time_cong(count(0));
            }
            Optional::VlXmitTimeCong => {
                let mut view = PortVlXmitTimeCong::new_unchecked(data);
                wide(&mut |i, n| view.set_time_cong(i, n));
            }
            Optional::XmitDataSl => {
                let mut view = PortXmitDataSl::new_unchecked(data);
                wide(&mut |i, n| view.set_data(i, n));
            }
            Optional::RcvDataSl => {
                let mut view = PortRcvDataSl::new_unchecked(data);
                wide(&mut |i, n| view.set_data(i, n));
            }
        }
    }
}

/// One port's optional counters. The rows every MAD moves (the per-SL data and the per-VL
/// packets and data) are counted at each hop, so they are kept whole. The others, rarely more
/// than a few counters a port, are kept sparse: the counters that are not 0, by attribute and
/// index, in order. A port costs 256 bytes and a few more, not the kilobyte every row would take.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OptionalCounters {
    lanes: [[u32; 16]; LANE_ROWS.len()],
    counts: Vec<(Key, u32)>,
}

/// The rows kept whole, in the order of [`OptionalCounters::lanes`].
const LANE_ROWS: [Optional; 4] = [
    Optional::XmitDataSl,
    Optional::RcvDataSl,
    Optional::VlOpPackets,
    Optional::VlOpData,
];

/// The largest value of each row's counters, row by row.
const LANE_MAX: [u32; 4] = [
    LANE_ROWS[0].max(),
    LANE_ROWS[1].max(),
    LANE_ROWS[2].max(),
    LANE_ROWS[3].max(),
];

/// The place of `attribute` in [`LANE_ROWS`], if it is kept whole.
const fn lane_row(attribute: Optional) -> Option<usize> {
    match attribute {
        Optional::XmitDataSl => Some(0),
        Optional::RcvDataSl => Some(1),
        Optional::VlOpPackets => Some(2),
        Optional::VlOpData => Some(3),
        _ => None,
    }
}

/// `count` plus `n`, stopping at `max`.
fn plus(count: u32, n: u64, max: u32) -> u32 {
    u32::try_from(u64::from(count).saturating_add(n))
        .unwrap_or(max)
        .min(max)
}

/// An attribute (its place in [`Optional::ALL`]) in the high byte and the index of a counter in
/// its row in the low one.
type Key = u16;

fn key(attribute: Optional, index: u8) -> Key {
    (u16::from(attribute as u8) << 8) | u16::from(index)
}

/// Where counter `index` of `attribute` is kept.
enum Slot {
    Lane(usize, usize),
    Sparse(Result<usize, usize>),
}

impl OptionalCounters {
    fn slot(&self, attribute: Optional, index: u8) -> Slot {
        match lane_row(attribute) {
            Some(row) => Slot::Lane(row, usize::from(index)),
            None => Slot::Sparse(self.find(attribute, index)),
        }
    }

    /// Where a counter of a sparse row is, or would go.
    fn find(&self, attribute: Optional, index: u8) -> Result<usize, usize> {
        self.counts
            .binary_search_by_key(&key(attribute, index), |&(k, _)| k)
    }

    pub(crate) fn get(&self, attribute: Optional, index: u8) -> u32 {
        match self.slot(attribute, index) {
            Slot::Lane(row, i) => self.lanes[row].get(i).copied().unwrap_or(0),
            Slot::Sparse(found) => found.map_or(0, |at| self.counts[at].1),
        }
    }

    /// Adds `n` to counter `index` of `attribute`, stopping at its maximum; an index past the
    /// row names no counter and adds nothing.
    pub(crate) fn add(&mut self, attribute: Optional, index: u8, n: u64) {
        if n == 0 {
            return;
        }
        // The lanes first, without the row's description: MADs count here at every hop.
        if let Some(row) = lane_row(attribute) {
            if let Some(count) = self.lanes[row].get_mut(usize::from(index)) {
                *count = plus(*count, n, LANE_MAX[row]);
            }
            return;
        }
        if index >= attribute.len() {
            return;
        }
        let max = attribute.max();
        match self.find(attribute, index) {
            Ok(at) => self.counts[at].1 = plus(self.counts[at].1, n, max),
            Err(at) => {
                self.counts
                    .insert(at, (key(attribute, index), plus(0, n, max)));
            }
        }
    }

    /// Sets counter `index` of `attribute` to `value`, which the caller checked against
    /// [`Optional::max`]; an index past the row names no counter.
    pub(crate) fn set(&mut self, attribute: Optional, index: u8, value: u32) {
        if index >= attribute.len() {
            return;
        }
        match self.slot(attribute, index) {
            Slot::Lane(row, i) => self.lanes[row][i] = value,
            Slot::Sparse(Ok(at)) if value == 0 => {
                self.counts.remove(at);
            }
            Slot::Sparse(Ok(at)) => self.counts[at].1 = value,
            Slot::Sparse(Err(_)) if value == 0 => {}
            Slot::Sparse(Err(at)) => self.counts.insert(at, (key(attribute, index), value)),
        }
    }

    /// A Set of `attribute`: the counters whose CounterSelect bit is set go to 0.
    pub(crate) fn clear(&mut self, attribute: Optional, select: u16) {
        for index in 0..attribute.len() {
            if select & (1 << index) != 0 {
                self.set(attribute, index, 0);
            }
        }
    }

    /// Adds `other` in, each counter stopping at its maximum.
    pub(crate) fn sum(&mut self, other: &OptionalCounters) {
        for (row, counts) in LANE_ROWS.iter().zip(&other.lanes) {
            for (index, &n) in (0u8..).zip(counts) {
                self.add(*row, index, n.into());
            }
        }
        for &(k, n) in &other.counts {
            self.add(Optional::ALL[usize::from(k >> 8)], k as u8, n.into());
        }
    }

    /// Writes `attribute`'s counters into the data area `data`.
    pub(crate) fn emit(&self, attribute: Optional, data: &mut [u8]) {
        attribute.emit(|i| self.get(attribute, i), data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_is_found_by_id_and_name_and_its_counters_by_name() {
        for attribute in Optional::ALL {
            let (id, name, _, _) = attribute.describe();
            assert_eq!(Optional::of(id), Some(attribute));
            assert_eq!(Optional::named(name), Some(attribute));
            assert_eq!(Optional::ALL[attribute as usize], attribute);
            for i in 0..attribute.len() {
                assert_eq!(attribute.counter_named(&attribute.counter_name(i)), Some(i));
            }
        }
        assert_eq!(Optional::of(PerfAttributeId::PortCounters), None);
        assert_eq!(
            Optional::VlXmitWait.counter_named("PortVLXmitWait15"),
            Some(15)
        );
        assert_eq!(
            Optional::VlXmitTimeCong.counter_named("PortVLXmitTimeCong15"),
            None
        );
        assert_eq!(Optional::XmitDataSl.counter_name(3), "XmtDataSL3");
        assert_eq!(
            Optional::XmitDiscardDetails.counter_named("PortSwHOQLifetimeLimitDiscards"),
            Some(3)
        );
    }

    #[test]
    fn counters_stop_at_their_width() {
        let mut c = OptionalCounters::default();
        c.add(Optional::VlXmitWait, 2, 0xfffe);
        c.add(Optional::VlXmitWait, 2, 5);
        c.add(Optional::VlXmitFlowCtlUpdateErrors, 1, 7);
        c.add(Optional::XmitDataSl, 0, u64::MAX);
        assert_eq!(c.get(Optional::VlXmitWait, 2), 0xffff);
        assert_eq!(c.get(Optional::VlXmitFlowCtlUpdateErrors, 1), 3);
        assert_eq!(c.get(Optional::XmitDataSl, 0), u32::MAX);
        // PortVLXmitTimeCong has no VL 15.
        c.add(Optional::VlXmitTimeCong, 15, 1);
        assert_eq!(c.get(Optional::VlXmitTimeCong, 15), 0);

        let mut total = c.clone();
        total.sum(&c);
        assert_eq!(total, c, "a sum stops at the maximum too");
    }

    #[test]
    fn counter_select_clears_only_its_attributes_counters() {
        let mut c = OptionalCounters::default();
        for vl in 0..16 {
            c.add(Optional::VlOpPackets, vl, 1);
            c.add(Optional::VlOpData, vl, 1);
        }
        c.clear(Optional::VlOpPackets, 0x8001);
        let packets: Vec<u32> = (0..16).map(|vl| c.get(Optional::VlOpPackets, vl)).collect();
        let mut expected = vec![1; 16];
        expected[0] = 0;
        expected[15] = 0;
        assert_eq!(packets, expected);
        assert!((0..16).all(|vl| c.get(Optional::VlOpData, vl) == 1));
    }

    #[test]
    fn rows_are_written_where_each_layout_puts_them() {
        let mut c = OptionalCounters::default();
        c.add(Optional::XmitDiscardDetails, 3, 0x0102);
        c.add(Optional::VlXmitFlowCtlUpdateErrors, 15, 2);
        c.add(Optional::XmitDataSl, 15, 0x0a0b_0c0d);
        let mut data = [0xee; 192];
        c.emit(Optional::XmitDiscardDetails, &mut data);
        assert_eq!(data[..12], [0xee, 0xee, 0xee, 0xee, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(data[12], 0xee, "past the attribute, the request's bytes");
        c.emit(Optional::VlXmitFlowCtlUpdateErrors, &mut data);
        assert_eq!(data[4..8], [0, 0, 0, 2]);
        c.emit(Optional::XmitDataSl, &mut data);
        assert_eq!(data[64..68], [0x0a, 0x0b, 0x0c, 0x0d]);
    }
}
