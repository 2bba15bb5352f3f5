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
//! counters read as ibsim's.
//!
//! Beyond ibsim too, a MAD counts per VL and per SL as a real port counts it. ibsim keeps no
//! such counters: it answers the per-VL attributes with zeros and drops the per-SL ones. Here:
//!
//! - the VL: an SMP travels on VL 15. Any other MAD travels on the VL that the SL2VL table of
//!   each hop maps its SL to: the port's table on a CA, the (in port, out port) table on a
//!   switch, as the SM programmed them;
//! - the SL: every MAD is sent on SL 0 (ibsim's protocol carries no SL; OpenSM's PerfMgr and the
//!   kernel's MAD layer use SL 0), so PortXmitDataSL and PortRcvDataSL count MADs at SL 0;
//! - sent, a MAD counts in PortXmitDataSL. Received, it counts in PortRcvDataSL, and in
//!   PortVLOpPackets and PortVLOpData of its VL. Those two count every packet, whatever OpCode
//!   the request names: the emulator does not tell opcodes apart.
//!
//! Other traffic comes from outside the fabric's MADs: [`PortTraffic`], one call per port per
//! sampling step of the packet simulator. It also moves PortXmitWait and PortVLXmitWait, the
//! FECN and BECN counters, the discard details, and the unicast packets of PortCountersExtended.
//! Any kept counter can also be set to a chosen value ([`CounterPresets`]). Every other counter
//! reads 0, as in ibsim, and so do the multicast packets of PortCountersExtended.
//!
//! Every optional attribute of IBA 16.1.4 and annex A10 is answered from counters kept per
//! port: PortRcvErrorDetails to PortVLXmitWaitCounters (0x15-0x1C) and SwPortVLCongestion to
//! PortRcvDataSL (0x30-0x37). A Set clears what CounterSelect names, and PortSelect 0xFF sums a
//! switch's ports, as for PortCounters. No CapabilityMask bit advertises them (IBA has none),
//! so ClassPortInfo stays ibsim's.
//!
//! Where ibsim has bugs, this PMA does not copy them. A PortCountersExtended Set clears PortRcvPkts
//! when CounterSelect bit 3 asks for it (ibsim clears PortXmitPkts instead). The PortXmitDiscards
//! of all of a switch's ports stop at 0xFFFF (ibsim stops the sum at 0xFF). A request ibsim takes
//! leniently gets a real PMA's status here. That is 0x000C for an attribute the PMA does not have
//! (PortSamplesControl, PortExtendedSpeedsCounters, SwPortVLCongestion on a CA, ...), which ibsim
//! forwards to a client or drops. It is 0x0004 for a ClassVersion other than 1 (ibsim answers 2
//! as 1). It is 0x0008 for a method other than Get and Set (ibsim answers it as a Get).

mod optional;
mod preset;
mod traffic;

use std::ops::RangeInclusive;

use ibqos_mad::{
    ClassPortInfo, ClassPortInfoRepr, CounterHeader, Method, MgmtClass, PerfAttributeId,
    PerfCapabilityMask, PerfMgtMad, PortCounters as PortCountersView, PortCountersExtended,
    PortCountersExtendedRepr, PortCountersRepr, Status,
};
use ibqos_qos::{Sl, Vl};

use ibqos_fabric::{PortRef, Topology};
use optional::{Optional, OptionalCounters};

pub use preset::{CounterId, CounterPresets, PresetError, PresetProblem};
pub use traffic::{LaneTraffic, PortTraffic, XmitDiscards};

/// A port the fabric does not have, named to a PMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the fabric has no port {0}")]
pub struct UnknownPort(pub PortRef);

/// The PerfMgt class version a PMA implements (IBA 16.1.1).
const CLASS_VERSION: u8 = 1;

/// How much one MAD adds to PortXmitData and PortRcvData: ibsim's 72 dwords, 288 bytes for the
/// 256-byte MAD and its headers and CRCs.
const MAD_DWORDS: u32 = 72;

/// PortSelect for every port of a switch.
const ALL_PORTS: u8 = 0xff;

/// ClassPortInfo.RespTimeValue, ibsim's: 4.096 us * 2^18, about a second.
const RESP_TIME_VALUE: u8 = 0x12;

/// The SL of every MAD's packet: OpenSM, the kernel's MAD layer and ibsim's clients send MADs
/// on SL 0, and ibsim's protocol carries no SL.
const MAD_SL: Sl = Sl::ALL[0];

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
    XmitWait,
}

impl Counter {
    const ALL: [Counter; 9] = [
        Counter::LinkDowned,
        Counter::RcvErrors,
        Counter::RcvSwitchRelayErrors,
        Counter::XmitDiscards,
        Counter::XmitData,
        Counter::RcvData,
        Counter::XmitPkts,
        Counter::RcvPkts,
        Counter::XmitWait,
    ];

    /// Its select bit and its largest value (its width in PortCounters: counters stop there,
    /// IBA 16.1.3.5). The select bit is CounterSelect's in bits 0-15, CounterSelect2's from
    /// bit 16 (PortXmitWait).
    const fn select_and_max(self) -> (u32, u32) {
        match self {
            Counter::LinkDowned => (1 << 2, 0xff),
            Counter::RcvErrors => (1 << 3, 0xffff),
            Counter::RcvSwitchRelayErrors => (1 << 5, 0xffff),
            Counter::XmitDiscards => (1 << 6, 0xffff),
            Counter::XmitData => (1 << 12, u32::MAX),
            Counter::RcvData => (1 << 13, u32::MAX),
            Counter::XmitPkts => (1 << 14, u32::MAX),
            Counter::RcvPkts => (1 << 15, u32::MAX),
            Counter::XmitWait => (1 << 16, u32::MAX),
        }
    }

    /// Its name, as perfquery prints it.
    const fn name(self) -> &'static str {
        match self {
            Counter::LinkDowned => "LinkDownedCounter",
            Counter::RcvErrors => "PortRcvErrors",
            Counter::RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors",
            Counter::XmitDiscards => "PortXmitDiscards",
            Counter::XmitData => "PortXmitData",
            Counter::RcvData => "PortRcvData",
            Counter::XmitPkts => "PortXmitPkts",
            Counter::RcvPkts => "PortRcvPkts",
            Counter::XmitWait => "PortXmitWait",
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
    UnicastXmitPkts,
    UnicastRcvPkts,
}

impl Extended {
    const ALL: [Extended; 6] = [
        Extended::XmitData,
        Extended::RcvData,
        Extended::XmitPkts,
        Extended::RcvPkts,
        Extended::UnicastXmitPkts,
        Extended::UnicastRcvPkts,
    ];

    /// Its name, as perfquery prints it.
    const fn name(self) -> &'static str {
        match self {
            Extended::XmitData => "PortXmitData",
            Extended::RcvData => "PortRcvData",
            Extended::XmitPkts => "PortXmitPkts",
            Extended::RcvPkts => "PortRcvPkts",
            Extended::UnicastXmitPkts => "PortUnicastXmitPkts",
            Extended::UnicastRcvPkts => "PortUnicastRcvPkts",
        }
    }
}

/// Which way a packet crossed a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Sent,
    Received,
}

/// One port's counters. PortCounters and PortCountersExtended are kept apart, as in ibsim:
/// clearing one leaves the other. The optional attributes' counters are kept beside them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PortCounters {
    counts: [u32; Counter::ALL.len()],
    extended: [u64; Extended::ALL.len()],
    optional: OptionalCounters,
}

impl PortCounters {
    fn get(&self, counter: Counter) -> u32 {
        self.counts[counter as usize]
    }

    /// Adds `n`, stopping at the counter's maximum.
    fn add(&mut self, counter: Counter, n: u64) {
        let (_, max) = counter.select_and_max();
        let count = &mut self.counts[counter as usize];
        *count = u32::try_from(u64::from(*count).saturating_add(n))
            .unwrap_or(max)
            .min(max);
    }

    fn add_extended(&mut self, counter: Extended, n: u64) {
        let count = &mut self.extended[counter as usize];
        *count = count.saturating_add(n);
    }

    /// Data (`words` of 4 octets) and `packets` that crossed the port `way` on `sl` and `vl`,
    /// in every counter that counts them: PortCounters, PortCountersExtended (the packets as
    /// unicast when `unicast`), the per-SL data and, received, the per-VL packets and data.
    fn count_packets(&mut self, way: Way, lane: (Sl, Vl), words: u64, packets: u64, unicast: bool) {
        let (sl, vl) = (lane.0.get(), lane.1.get());
        let (total, extended, per_sl) = match way {
            Way::Sent => (
                [Counter::XmitPkts, Counter::XmitData],
                [
                    Extended::XmitPkts,
                    Extended::XmitData,
                    Extended::UnicastXmitPkts,
                ],
                Optional::XmitDataSl,
            ),
            Way::Received => (
                [Counter::RcvPkts, Counter::RcvData],
                [
                    Extended::RcvPkts,
                    Extended::RcvData,
                    Extended::UnicastRcvPkts,
                ],
                Optional::RcvDataSl,
            ),
        };
        let unicast_packets = if unicast { packets } else { 0 };
        for (counter, n) in total.into_iter().zip([packets, words]) {
            self.add(counter, n);
        }
        for (counter, n) in extended.into_iter().zip([packets, words, unicast_packets]) {
            self.add_extended(counter, n);
        }
        self.optional.add(per_sl, sl, words);
        if way == Way::Received {
            self.optional.add(Optional::VlOpPackets, vl, packets);
            self.optional.add(Optional::VlOpData, vl, words);
        }
    }

    /// One MAD that crossed the port `way` on `vl`. ibsim leaves the unicast packets at 0, and
    /// so does this PMA for MADs.
    fn count_mad(&mut self, way: Way, vl: Vl) {
        self.count_packets(way, (MAD_SL, vl), MAD_DWORDS.into(), 1, false);
    }

    /// Adds `other` in, each counter stopping at its maximum: the counters of several ports as
    /// PortSelect 0xFF reads them.
    fn sum(&mut self, other: &PortCounters) {
        for counter in Counter::ALL {
            self.add(counter, other.get(counter).into());
        }
        for (mine, theirs) in self.extended.iter_mut().zip(other.extended) {
            *mine = mine.saturating_add(theirs);
        }
        self.optional.sum(&other.optional);
    }

    /// A PortCounters Set: the counters whose CounterSelect or CounterSelect2 bit is set go to
    /// 0. QP1Dropped (CounterSelect2 bit 1) is never counted.
    fn clear(&mut self, select: u16, select2: u8) {
        let select = u32::from(select) | u32::from(select2) << 16;
        for counter in Counter::ALL {
            if select & counter.select_and_max().0 != 0 {
                self.counts[counter as usize] = 0;
            }
        }
    }

    /// A PortCountersExtended Set; CounterSelect bits 6 and 7 name counters never counted.
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
            port_xmit_wait: self.get(Counter::XmitWait),
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
            port_unicast_xmit_pkts: get(Extended::UnicastXmitPkts),
            port_unicast_rcv_pkts: get(Extended::UnicastRcvPkts),
            port_multicast_xmit_pkts: 0,
            port_multicast_rcv_pkts: 0,
        }
    }
}

/// How a MAD crosses links: an SMP on VL 15, the management VL (IBA 7.6.5); any other MAD as
/// data, on the VL the SL2VL table of each hop maps [`MAD_SL`] to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    Smp,
    Gmp,
}

impl Carrier {
    /// How the MAD `mad` travels, by its management class.
    pub(crate) fn of(mad: &[u8]) -> Carrier {
        match mad.get(1).copied().map(MgmtClass::from) {
            Some(MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute) => Carrier::Smp,
            _ => Carrier::Gmp,
        }
    }

    /// The VL it takes out of a port whose SL2VL table (for the port it came in by) is
    /// `sl2vl`, an SMP's VL 15 whatever the table.
    pub(crate) fn vl(self, sl2vl: Option<&ibqos_mad::SlToVlMappingTableRepr>) -> Vl {
        match self {
            Carrier::Smp => Vl::VL15,
            Carrier::Gmp => sl2vl.map_or(Vl::from_nibble(0), |table| {
                Vl::from_nibble(table.vls[usize::from(MAD_SL.get())])
            }),
        }
    }
}

/// Where one MAD went, for the counters: how it travels, the links it crossed, each as
/// (egress, ingress, the VL it took), and the ports that lost it with the counter each adds
/// to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trace {
    carrier: Carrier,
    crossings: Vec<(PortRef, PortRef, Vl)>,
    losses: Vec<(PortRef, Counter)>,
}

impl Trace {
    /// The way of a MAD that travels as `carrier` says, before it left.
    pub(crate) fn new(carrier: Carrier) -> Trace {
        Trace {
            carrier,
            crossings: Vec::new(),
            losses: Vec::new(),
        }
    }

    pub(crate) fn carrier(&self) -> Carrier {
        self.carrier
    }

    /// The MAD went out of `egress` on `vl` and came in at `ingress`.
    pub(crate) fn cross(&mut self, egress: PortRef, ingress: PortRef, vl: Vl) {
        self.crossings.push((egress, ingress, vl));
    }

    /// The MAD was lost at `port`, which counts it in `counter`.
    pub(crate) fn lose(&mut self, port: PortRef, counter: Counter) {
        self.losses.push((port, counter));
    }

    /// How many links it crossed.
    pub(crate) fn links(&self) -> u64 {
        self.crossings.len() as u64
    }

    /// The same links crossed back the other way, on the same VLs: the way of a directed-route
    /// response, which is an SMP on VL 15 as its request was.
    pub(crate) fn reversed(&self) -> Trace {
        Trace {
            carrier: self.carrier,
            crossings: self
                .crossings
                .iter()
                .rev()
                .map(|&(a, b, vl)| (b, a, vl))
                .collect(),
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
        for &(egress, ingress, vl) in &trace.crossings {
            for (port, way) in [(egress, Way::Sent), (ingress, Way::Received)] {
                if let Some(counters) = self.port_mut(port) {
                    counters.count_mad(way, vl);
                }
            }
        }
        for &(port, counter) in &trace.losses {
            if let Some(counters) = self.port_mut(port) {
                counters.add(counter, 1);
            }
        }
    }

    /// Sets `counter` of `port` to `value`, at most the counter's maximum.
    pub(crate) fn preset(&mut self, port: PortRef, counter: CounterId, value: u64) {
        if let Some(counters) = self.port_mut(port) {
            counter.set(counters, value);
        }
    }

    /// Counts `traffic` at `port` (see [`PortTraffic`]).
    pub(crate) fn add_traffic(&mut self, port: PortRef, traffic: &PortTraffic) {
        if let Some(counters) = self.port_mut(port) {
            counters.add_traffic(traffic);
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
                let clear = |c: &mut PortCounters| {
                    c.clear(request.counter_select, request.counter_select2);
                };
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
                let switch = self.nodes.get(at.node.index()).is_some_and(|n| n.switch);
                let optional = Optional::of(other)
                    .filter(|o| switch || !o.switch_only())
                    .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?;
                let header =
                    CounterHeader::new_checked(&*data).map_err(|_| Status::INVALID_VALUE)?;
                let select = header.counter_select();
                let clear = |c: &mut PortCounters| c.optional.clear(optional, select);
                let total = self.read(at, header.port_select(), set.then_some(clear))?;
                total.optional.emit(optional, data);
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
        c.add(Counter::XmitData, u32::MAX.into());
        c.add(Counter::XmitData, MAD_DWORDS.into());
        c.add(Counter::XmitWait, u64::MAX);
        c.add_extended(Extended::RcvData, u64::MAX);
        c.add_extended(Extended::RcvData, 1);
        assert_eq!(c.get(Counter::LinkDowned), 0xff);
        assert_eq!(c.get(Counter::XmitDiscards), 0xffff);
        assert_eq!(c.get(Counter::XmitData), u32::MAX);
        assert_eq!(c.get(Counter::XmitWait), u32::MAX);
        assert_eq!(c.extended[Extended::RcvData as usize], u64::MAX);

        let mut total = c.clone();
        total.sum(&c);
        assert_eq!(total, c, "a sum stops at the maximum too");
    }

    #[test]
    fn a_mad_is_one_packet_of_72_dwords_in_both_attributes() {
        let mut c = PortCounters::default();
        c.count_mad(Way::Sent, Vl::VL15);
        c.count_mad(Way::Sent, Vl::VL15);
        c.count_mad(Way::Received, Vl::VL15);
        assert_eq!(c.get(Counter::XmitPkts), 2);
        assert_eq!(c.get(Counter::XmitData), 144);
        assert_eq!(c.get(Counter::RcvPkts), 1);
        assert_eq!(c.get(Counter::RcvData), 72);
        assert_eq!(c.extended, [144, 72, 2, 1, 0, 0], "no unicast, as in ibsim");
    }

    #[test]
    fn a_mad_counts_on_sl_0_and_received_on_its_vl() {
        let mut c = PortCounters::default();
        c.count_mad(Way::Sent, Vl::VL15);
        c.count_mad(Way::Received, Vl::VL15);
        c.count_mad(Way::Received, Vl::new(2).unwrap());
        assert_eq!(c.optional.get(Optional::XmitDataSl, 0), 72);
        assert_eq!(c.optional.get(Optional::RcvDataSl, 0), 144);
        assert_eq!(c.optional.get(Optional::VlOpPackets, 15), 1);
        assert_eq!(c.optional.get(Optional::VlOpData, 15), 72);
        assert_eq!(c.optional.get(Optional::VlOpPackets, 2), 1);
        assert_eq!(c.optional.get(Optional::VlOpPackets, 0), 0);
    }

    #[test]
    fn an_smp_takes_vl_15_and_a_gmp_the_vl_its_sl_maps_to() {
        let mut table = ibqos_mad::SlToVlMappingTableRepr { vls: [7; 16] };
        table.vls[0] = 3;
        assert_eq!(Carrier::Smp.vl(Some(&table)), Vl::VL15);
        assert_eq!(Carrier::Gmp.vl(Some(&table)), Vl::new(3).unwrap());
        assert_eq!(Carrier::of(&[1, 0x81]), Carrier::Smp);
        assert_eq!(Carrier::of(&[1, 0x01]), Carrier::Smp);
        assert_eq!(Carrier::of(&[1, 0x04]), Carrier::Gmp);
        assert_eq!(Carrier::of(&[]), Carrier::Gmp);
    }

    #[test]
    fn counter_select_clears_only_the_counters_it_names() {
        let mut c = PortCounters::default();
        for counter in Counter::ALL {
            c.add(counter, 5);
        }
        c.extended = [5; 6];
        // PortXmitDiscards (bit 6) and PortRcvPkts (bit 15).
        c.clear(0x8040, 0);
        for counter in Counter::ALL {
            let cleared = matches!(counter, Counter::XmitDiscards | Counter::RcvPkts);
            assert_eq!(c.get(counter), if cleared { 0 } else { 5 }, "{counter:?}");
        }
        // CounterSelect2 bit 0: PortXmitWait.
        c.clear(0, 1);
        assert_eq!(c.get(Counter::XmitWait), 0);
        assert_eq!(c.get(Counter::XmitData), 5);
        assert_eq!(
            c.extended, [5; 6],
            "PortCounters leaves the extended counters"
        );
        // Bit 3 is PortRcvPkts, which ibsim leaves and a real PMA clears.
        c.clear_extended(0x0008);
        assert_eq!(c.extended, [5, 5, 5, 0, 5, 5]);
        c.clear_extended(0xffc0);
        assert_eq!(
            c.extended,
            [5, 5, 5, 0, 5, 5],
            "bits 6-15 name no counter kept"
        );
        c.clear_extended(0x0030);
        assert_eq!(c.extended, [5, 5, 5, 0, 0, 0], "the unicast packets");
    }

    #[test]
    fn a_trace_reversed_crosses_the_same_links_back() {
        let (a, b, c) = (
            PortRef::new(NodeId(0), 1),
            PortRef::new(NodeId(1), 1),
            PortRef::new(NodeId(1), 3),
        );
        let d = PortRef::new(NodeId(2), 3);
        let mut trace = Trace::new(Carrier::Smp);
        trace.cross(a, b, Vl::VL15);
        trace.cross(c, d, Vl::VL15);
        trace.lose(d, Counter::XmitDiscards);
        let back = trace.reversed();
        assert_eq!(back.crossings, [(d, c, Vl::VL15), (b, a, Vl::VL15)]);
        assert!(back.losses.is_empty());
        assert_eq!(back.links(), 2);
    }
}
