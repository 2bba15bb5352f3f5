//! The performance management agent (PMA) of every node: the port counters of IBA 16.1, kept as
//! ibsim 0.10 keeps them (`sim_mad.c`), and the PerfMgt GMPs that read and clear them.
//!
//! What is counted is what ibsim counts, so that `perfquery` prints the same numbers on a served
//! fabric as under ibsim after the same MADs:
//!
//! - every MAD the fabric carries, on every link it crosses: SMPs and their responses, PerfMgt GMPs
//!   and theirs, SA and other MADs on their way to a client, traps. Each is one packet of 72 dwords
//!   (a 256-byte MAD with its headers and CRCs, ibsim's figure). It counts in PortXmitPkts and
//!   PortXmitData of the port that sends it, and in PortRcvPkts and PortRcvData of the port that
//!   receives it. It counts again in the separate counters of PortCountersExtended;
//! - a MAD lost on its way. PortXmitDiscards counts it at a port that could not send it (down, or
//!   not Active for a LID-routed packet). PortRcvSwitchRelayErrors counts it at a port that
//!   received it and had no route for it. PortRcvErrors counts it at a port down at the far end of
//!   a directed route.
//!
//! A request is counted on its way in before the PMA reads the counters and its response on its
//! way back after, as in ibsim, so a PortCounters Get sees its own arrival.
//!
//! Beyond ibsim, LinkDownedCounter counts the times a link went down (a scheduled flap, or the
//! SM disabling a port); nothing does that on a fabric that only an SM has touched, so its
//! counters read as ibsim's. Every other counter reads 0, as in ibsim, and so do the unicast and
//! multicast packets of PortCountersExtended.
//!
//! Where ibsim has bugs, this PMA does not copy them. A PortCountersExtended Set clears PortRcvPkts
//! when CounterSelect bit 3 asks for it (ibsim clears PortXmitPkts instead). The PortXmitDiscards
//! of all of a switch's ports stop at 0xFFFF (ibsim stops the sum at 0xFF). A request ibsim takes
//! leniently gets a real PMA's status here. That is 0x000C for an attribute the PMA does not have
//! (PortSamplesControl, PortRcvDataSL, ...), which ibsim forwards to a client or drops. It is
//! 0x0004 for a ClassVersion other than 1 (ibsim answers 2 as 1). It is 0x0008 for a method other
//! than Get and Set (ibsim answers it as a Get).

use std::ops::RangeInclusive;

use ibqos_mad::{
    COUNTERS_OFFSET, ClassPortInfo, ClassPortInfoRepr, CounterHeader, Method, PerfAttributeId,
    PerfCapabilityMask, PerfMgtMad, PortCounters as PortCountersView, PortCountersExtended,
    PortCountersExtendedRepr, PortCountersRepr, PortFlowCtlCounters, PortOpRcvCounters,
    PortRcvErrorDetails, PortVlOpData, PortVlOpPackets, PortVlXmitFlowCtlUpdateErrors,
    PortVlXmitWaitCounters, PortXmitDiscardDetails, Status,
};

use ibqos_fabric::{PortRef, Topology};

/// The PerfMgt class version a PMA implements (IBA 16.1.1).
const CLASS_VERSION: u8 = 1;

/// How much one MAD adds to PortXmitData and PortRcvData: ibsim's 72 dwords, 288 bytes for the
/// 256-byte MAD and its headers and CRCs.
const MAD_DWORDS: u32 = 72;

/// PortSelect for every port of a switch.
const ALL_PORTS: u8 = 0xff;

/// ClassPortInfo.RespTimeValue, ibsim's: 4.096 us * 2^18, about a second.
const RESP_TIME_VALUE: u8 = 0x12;

/// The attributes whose counters nothing in the fabric counts (ibsim neither), with the length
/// of each: all their counters, from [`COUNTERS_OFFSET`] to the end, read 0.
const UNCOUNTED: [(PerfAttributeId, usize); 8] = [
    (
        PerfAttributeId::PortRcvErrorDetails,
        PortRcvErrorDetails::<&[u8]>::LEN,
    ),
    (
        PerfAttributeId::PortXmitDiscardDetails,
        PortXmitDiscardDetails::<&[u8]>::LEN,
    ),
    (
        PerfAttributeId::PortOpRcvCounters,
        PortOpRcvCounters::<&[u8]>::LEN,
    ),
    (
        PerfAttributeId::PortFlowCtlCounters,
        PortFlowCtlCounters::<&[u8]>::LEN,
    ),
    (
        PerfAttributeId::PortVlOpPackets,
        PortVlOpPackets::<&[u8]>::LEN,
    ),
    (PerfAttributeId::PortVlOpData, PortVlOpData::<&[u8]>::LEN),
    (
        PerfAttributeId::PortVlXmitFlowCtlUpdateErrors,
        PortVlXmitFlowCtlUpdateErrors::<&[u8]>::LEN,
    ),
    (
        PerfAttributeId::PortVlXmitWaitCounters,
        PortVlXmitWaitCounters::<&[u8]>::LEN,
    ),
];

/// A PortCounters counter the fabric counts; the others read 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    LinkDowned,
    RcvErrors,
    RcvSwitchRelayErrors,
    XmitDiscards,
    XmitData,
    RcvData,
    XmitPkts,
    RcvPkts,
}

impl Counter {
    const ALL: [Counter; 8] = [
        Counter::LinkDowned,
        Counter::RcvErrors,
        Counter::RcvSwitchRelayErrors,
        Counter::XmitDiscards,
        Counter::XmitData,
        Counter::RcvData,
        Counter::XmitPkts,
        Counter::RcvPkts,
    ];

    /// Its CounterSelect bit and its largest value (its width in PortCounters: counters stop
    /// there, IBA 16.1.3.5).
    const fn select_and_max(self) -> (u16, u32) {
        match self {
            Counter::LinkDowned => (1 << 2, 0xff),
            Counter::RcvErrors => (1 << 3, 0xffff),
            Counter::RcvSwitchRelayErrors => (1 << 5, 0xffff),
            Counter::XmitDiscards => (1 << 6, 0xffff),
            Counter::XmitData => (1 << 12, u32::MAX),
            Counter::RcvData => (1 << 13, u32::MAX),
            Counter::XmitPkts => (1 << 14, u32::MAX),
            Counter::RcvPkts => (1 << 15, u32::MAX),
        }
    }
}

/// A PortCountersExtended counter the fabric counts; its CounterSelect bit is `1 << index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extended {
    XmitData,
    RcvData,
    XmitPkts,
    RcvPkts,
}

/// One port's counters. PortCounters and PortCountersExtended are kept apart, as in ibsim:
/// clearing one leaves the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PortCounters {
    counts: [u32; Counter::ALL.len()],
    extended: [u64; 4],
}

impl PortCounters {
    fn get(&self, counter: Counter) -> u32 {
        self.counts[counter as usize]
    }

    fn add(&mut self, counter: Counter, n: u32) {
        let (_, max) = counter.select_and_max();
        let count = &mut self.counts[counter as usize];
        *count = count.saturating_add(n).min(max);
    }

    fn add_extended(&mut self, counter: Extended, n: u64) {
        let count = &mut self.extended[counter as usize];
        *count = count.saturating_add(n);
    }

    /// One MAD sent (`sent`) or received.
    fn count_mad(&mut self, sent: bool) {
        let (packets, data, ext_packets, ext_data) = if sent {
            let ext = (Extended::XmitPkts, Extended::XmitData);
            (Counter::XmitPkts, Counter::XmitData, ext.0, ext.1)
        } else {
            let ext = (Extended::RcvPkts, Extended::RcvData);
            (Counter::RcvPkts, Counter::RcvData, ext.0, ext.1)
        };
        self.add(packets, 1);
        self.add(data, MAD_DWORDS);
        self.add_extended(ext_packets, 1);
        self.add_extended(ext_data, MAD_DWORDS.into());
    }

    /// Adds `other` in, each counter stopping at its maximum: the counters of several ports as
    /// PortSelect 0xFF reads them.
    fn sum(&mut self, other: &PortCounters) {
        for counter in Counter::ALL {
            self.add(counter, other.get(counter));
        }
        for (mine, theirs) in self.extended.iter_mut().zip(other.extended) {
            *mine = mine.saturating_add(theirs);
        }
    }

    /// A PortCounters Set: the counters whose CounterSelect bit is set go to 0. Those of
    /// CounterSelect2 (PortXmitWait, QP1Dropped) are never counted.
    fn clear(&mut self, select: u16) {
        for counter in Counter::ALL {
            if select & counter.select_and_max().0 != 0 {
                self.counts[counter as usize] = 0;
            }
        }
    }

    /// A PortCountersExtended Set; CounterSelect bits 4-7 name counters never counted.
    fn clear_extended(&mut self, select: u16) {
        for (bit, count) in self.extended.iter_mut().enumerate() {
            if select & (1 << bit) != 0 {
                *count = 0;
            }
        }
    }

    /// The PortCounters answering `request`: its selectors back, and every counter.
    fn port_counters(&self, request: &PortCountersRepr) -> PortCountersRepr {
        // Each counter is at most its field's maximum (`add`), so the narrowing is exact.
        let narrow = |counter| self.get(counter) as u16;
        PortCountersRepr {
            port_select: request.port_select,
            counter_select: request.counter_select,
            counter_select2: request.counter_select2,
            link_downed_counter: self.get(Counter::LinkDowned) as u8,
            port_rcv_errors: narrow(Counter::RcvErrors),
            port_rcv_switch_relay_errors: narrow(Counter::RcvSwitchRelayErrors),
            port_xmit_discards: narrow(Counter::XmitDiscards),
            port_xmit_data: self.get(Counter::XmitData),
            port_rcv_data: self.get(Counter::RcvData),
            port_xmit_pkts: self.get(Counter::XmitPkts),
            port_rcv_pkts: self.get(Counter::RcvPkts),
            symbol_error_counter: 0,
            link_error_recovery_counter: 0,
            port_rcv_remote_physical_errors: 0,
            port_xmit_constraint_errors: 0,
            port_rcv_constraint_errors: 0,
            local_link_integrity_errors: 0,
            excessive_buffer_overrun_errors: 0,
            vl15_dropped: 0,
            port_xmit_wait: 0,
            // Not kept (ClassPortInfo does not claim it); ibsim leaves the request's value.
            qp1_dropped: request.qp1_dropped,
        }
    }

    /// The PortCountersExtended answering `request`.
    fn port_counters_extended(
        &self,
        request: &PortCountersExtendedRepr,
    ) -> PortCountersExtendedRepr {
        let get = |counter: Extended| self.extended[counter as usize];
        PortCountersExtendedRepr {
            port_select: request.port_select,
            counter_select: request.counter_select,
            counter_select2: request.counter_select2,
            port_xmit_data: get(Extended::XmitData),
            port_rcv_data: get(Extended::RcvData),
            port_xmit_pkts: get(Extended::XmitPkts),
            port_rcv_pkts: get(Extended::RcvPkts),
            port_unicast_xmit_pkts: 0,
            port_unicast_rcv_pkts: 0,
            port_multicast_xmit_pkts: 0,
            port_multicast_rcv_pkts: 0,
        }
    }
}

/// Where one MAD went, for the counters: the links it crossed, each as (egress, ingress), and
/// the ports that lost it with the counter each adds to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trace {
    crossings: Vec<(PortRef, PortRef)>,
    losses: Vec<(PortRef, Counter)>,
}

impl Trace {
    /// The MAD went out of `egress` and came in at `ingress`.
    pub(crate) fn cross(&mut self, egress: PortRef, ingress: PortRef) {
        self.crossings.push((egress, ingress));
    }

    /// The MAD was lost at `port`, which counts it in `counter`.
    pub(crate) fn lose(&mut self, port: PortRef, counter: Counter) {
        self.losses.push((port, counter));
    }

    /// How many links it crossed.
    pub(crate) fn links(&self) -> u64 {
        self.crossings.len() as u64
    }

    /// The same links crossed back the other way: the way of a directed-route response.
    pub(crate) fn reversed(&self) -> Trace {
        Trace {
            crossings: self.crossings.iter().rev().map(|&(a, b)| (b, a)).collect(),
            losses: Vec::new(),
        }
    }
}

/// One node's PMA: whether it is a switch (PortSelect 0xFF) and its ports' counters, indexed
/// by port number (a CA's unused port 0 included).
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodePma {
    switch: bool,
    ports: Vec<PortCounters>,
}

/// The PMAs of every node of a fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pmas {
    nodes: Vec<NodePma>,
}

impl Pmas {
    /// Every counter of `topology` at 0, as after power-on.
    pub(crate) fn new(topology: &Topology) -> Pmas {
        let nodes = topology
            .nodes()
            .map(|(_, n)| NodePma {
                switch: n.is_switch(),
                ports: vec![PortCounters::default(); usize::from(n.num_ports()) + 1],
            })
            .collect();
        Pmas { nodes }
    }

    fn port_mut(&mut self, port: PortRef) -> Option<&mut PortCounters> {
        self.nodes
            .get_mut(port.node.index())?
            .ports
            .get_mut(usize::from(port.port))
    }

    /// Counts what `trace` says a MAD did.
    pub(crate) fn record(&mut self, trace: &Trace) {
        for &(egress, ingress) in &trace.crossings {
            for (port, sent) in [(egress, true), (ingress, false)] {
                if let Some(counters) = self.port_mut(port) {
                    counters.count_mad(sent);
                }
            }
        }
        for &(port, counter) in &trace.losses {
            if let Some(counters) = self.port_mut(port) {
                counters.add(counter, 1);
            }
        }
    }

    /// `port`'s link went down.
    pub(crate) fn link_downed(&mut self, port: PortRef) {
        if let Some(counters) = self.port_mut(port) {
            counters.add(Counter::LinkDowned, 1);
        }
    }

    /// The PMA of the node that `at` belongs to answers `request`, a PerfMgt request that
    /// arrived at port `at` and whose header the caller checked (BaseVersion 1, a request
    /// method): the response MAD, the request with the R bit, GetResp, the status and the
    /// attribute. On an error the data goes back as it came, as ibsim sends it.
    pub(crate) fn respond(&mut self, at: PortRef, request: PerfMgtMad<&[u8]>) -> Vec<u8> {
        let header = request.header();
        let (class_version, method) = (header.class_version(), header.method());
        let attribute = PerfAttributeId::from(u16::from(header.attribute_id()));
        let mut response = request.into_inner().to_vec();
        let mut mad = PerfMgtMad::new_unchecked(&mut response[..]);
        let outcome = match (class_version, method) {
            (CLASS_VERSION, Method::Get) => self.answer(at, attribute, false, mad.data_mut()),
            (CLASS_VERSION, Method::Set) => self.answer(at, attribute, true, mad.data_mut()),
            (CLASS_VERSION, _) => Err(Status::METHOD_UNSUPPORTED),
            _ => Err(Status::BAD_VERSION),
        };
        let mut out = mad.header_mut();
        out.set_method(Method::GetResp);
        out.set_status(outcome.err().unwrap_or(Status::OK));
        response
    }

    /// A Get (or a Set, `set`) of `attribute`, in place in the 192-byte data area.
    fn answer(
        &mut self,
        at: PortRef,
        attribute: PerfAttributeId,
        set: bool,
        data: &mut [u8],
    ) -> Result<(), Status> {
        match attribute {
            PerfAttributeId::ClassPortInfo => {
                let switch = self.nodes.get(at.node.index()).is_some_and(|n| n.switch);
                class_port_info(switch).emit(&mut ClassPortInfo::new_unchecked(data));
                // ibsim takes no Set of it, and still answers what it holds.
                if set {
                    return Err(Status::METHOD_UNSUPPORTED);
                }
            }
            PerfAttributeId::PortCounters => {
                let request = PortCountersRepr::parse(&PortCountersView::new_unchecked(&*data))
                    .map_err(|_| Status::INVALID_VALUE)?;
                let clear = |c: &mut PortCounters| c.clear(request.counter_select);
                let total = self.read(at, request.port_select, set.then_some(clear))?;
                total
                    .port_counters(&request)
                    .emit(&mut PortCountersView::new_unchecked(data));
            }
            PerfAttributeId::PortCountersExtended => {
                let view = PortCountersExtended::new_unchecked(&*data);
                let request =
                    PortCountersExtendedRepr::parse(&view).map_err(|_| Status::INVALID_VALUE)?;
                let clear = |c: &mut PortCounters| c.clear_extended(request.counter_select);
                let total = self.read(at, request.port_select, set.then_some(clear))?;
                total
                    .port_counters_extended(&request)
                    .emit(&mut PortCountersExtended::new_unchecked(data));
            }
            other => {
                let &(_, len) = UNCOUNTED
                    .iter()
                    .find(|(id, _)| *id == other)
                    .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?;
                let port_select = CounterHeader::new_checked(&*data)
                    .map_err(|_| Status::INVALID_VALUE)?
                    .port_select();
                self.read(at, port_select, None::<fn(&mut PortCounters)>)?;
                data.get_mut(COUNTERS_OFFSET..len)
                    .ok_or(Status::INVALID_VALUE)?
                    .fill(0);
            }
        }
        Ok(())
    }

    /// The counters PortSelect `port_select` names at `at`, each port's first passed to
    /// `clear` (a Set), summed when they are several; 0x001C for a port the node does not
    /// have.
    fn read(
        &mut self,
        at: PortRef,
        port_select: u8,
        mut clear: Option<impl FnMut(&mut PortCounters)>,
    ) -> Result<PortCounters, Status> {
        let ports = self.selected(at, port_select)?;
        let node = self
            .nodes
            .get_mut(at.node.index())
            .ok_or(Status::INVALID_VALUE)?;
        let mut total = PortCounters::default();
        for port in ports {
            let counters = node
                .ports
                .get_mut(usize::from(port))
                .ok_or(Status::INVALID_VALUE)?;
            if let Some(clear) = clear.as_mut() {
                clear(counters);
            }
            total.sum(counters);
        }
        Ok(total)
    }

    /// The ports PortSelect names, as ibsim takes it: on a switch any port 0..=NumPorts, or
    /// 0xFF for all of them; on a CA or router only the port the request arrived at (IBA leaves
    /// other ports undefined there).
    fn selected(&self, at: PortRef, port_select: u8) -> Result<RangeInclusive<u8>, Status> {
        let node = self
            .nodes
            .get(at.node.index())
            .ok_or(Status::INVALID_VALUE)?;
        let num_ports = u8::try_from(node.ports.len() - 1).unwrap_or(u8::MAX);
        match (node.switch, port_select) {
            (true, ALL_PORTS) => Ok(0..=num_ports),
            (true, port) if port <= num_ports => Ok(port..=port),
            (false, port) if port == at.port => Ok(port..=port),
            _ => Err(Status::INVALID_VALUE),
        }
    }
}

/// The ClassPortInfo ibsim's PMAs answer: PortCountersExtended and PortXmitWait supported,
/// PortSelect 0xFF on switches, about a second to answer, no redirection, no traps.
fn class_port_info(switch: bool) -> ClassPortInfoRepr {
    let mut capabilities = PerfCapabilityMask::EXTENDED_WIDTH | PerfCapabilityMask::PORT_XMIT_WAIT;
    if switch {
        capabilities |= PerfCapabilityMask::ALL_PORT_SELECT;
    }
    ClassPortInfoRepr {
        base_version: 1,
        class_version: CLASS_VERSION,
        capability_mask: capabilities,
        capability_mask2: 0,
        resp_time_value: RESP_TIME_VALUE,
        redirect_gid_prefix: 0,
        redirect_gid_interface_id: 0,
        redirect_tc: 0,
        redirect_sl: 0,
        redirect_fl: 0,
        redirect_lid: 0,
        redirect_p_key: 0,
        redirect_qp: 0,
        redirect_q_key: 0,
        trap_gid_prefix: 0,
        trap_gid_interface_id: 0,
        trap_tc: 0,
        trap_sl: 0,
        trap_fl: 0,
        trap_lid: 0,
        trap_p_key: 0,
        trap_hl: 0,
        trap_qp: 0,
        trap_q_key: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_fabric::NodeId;

    #[test]
    fn counters_stop_at_the_width_of_their_field() {
        let mut c = PortCounters::default();
        for _ in 0..300 {
            c.add(Counter::LinkDowned, 1);
        }
        c.add(Counter::XmitDiscards, 0x1_0000);
        c.add(Counter::XmitData, u32::MAX);
        c.add(Counter::XmitData, MAD_DWORDS);
        c.add_extended(Extended::RcvData, u64::MAX);
        c.add_extended(Extended::RcvData, 1);
        assert_eq!(c.get(Counter::LinkDowned), 0xff);
        assert_eq!(c.get(Counter::XmitDiscards), 0xffff);
        assert_eq!(c.get(Counter::XmitData), u32::MAX);
        assert_eq!(c.extended[Extended::RcvData as usize], u64::MAX);

        let mut total = c;
        total.sum(&c);
        assert_eq!(total, c, "a sum stops at the maximum too");
    }

    #[test]
    fn a_mad_is_one_packet_of_72_dwords_in_both_attributes() {
        let mut c = PortCounters::default();
        c.count_mad(true);
        c.count_mad(true);
        c.count_mad(false);
        assert_eq!(c.get(Counter::XmitPkts), 2);
        assert_eq!(c.get(Counter::XmitData), 144);
        assert_eq!(c.get(Counter::RcvPkts), 1);
        assert_eq!(c.get(Counter::RcvData), 72);
        assert_eq!(c.extended, [144, 72, 2, 1]);
    }

    #[test]
    fn counter_select_clears_only_the_counters_it_names() {
        let mut c = PortCounters::default();
        for counter in Counter::ALL {
            c.add(counter, 5);
        }
        c.extended = [5; 4];
        // PortXmitDiscards (bit 6) and PortRcvPkts (bit 15).
        c.clear(0x8040);
        for counter in Counter::ALL {
            let cleared = matches!(counter, Counter::XmitDiscards | Counter::RcvPkts);
            assert_eq!(c.get(counter), if cleared { 0 } else { 5 }, "{counter:?}");
        }
        assert_eq!(
            c.extended, [5; 4],
            "PortCounters leaves the extended counters"
        );
        // Bit 3 is PortRcvPkts, which ibsim leaves and a real PMA clears.
        c.clear_extended(0x0008);
        assert_eq!(c.extended, [5, 5, 5, 0]);
        c.clear_extended(0xfff0);
        assert_eq!(c.extended, [5, 5, 5, 0], "bits 4-15 name no counter kept");
    }

    #[test]
    fn a_trace_reversed_crosses_the_same_links_back() {
        let (a, b, c) = (
            PortRef::new(NodeId(0), 1),
            PortRef::new(NodeId(1), 1),
            PortRef::new(NodeId(1), 3),
        );
        let d = PortRef::new(NodeId(2), 3);
        let mut trace = Trace::default();
        trace.cross(a, b);
        trace.cross(c, d);
        trace.lose(d, Counter::XmitDiscards);
        let back = trace.reversed();
        assert_eq!(back.crossings, [(d, c), (b, a)]);
        assert!(back.losses.is_empty());
        assert_eq!(back.links(), 2);
    }
}
