//! The emulated fabric: a subnet management agent (SMA) and a performance management agent
//! (PMA) for every node of a [`Topology`], answering MADs the way real switches and HCAs do, so
//! that an SM can run with no hardware and no ibsim.
//!
//! [`Emulator`] is sans-IO and deterministic, with one way in: [`Emulator::exchange`]. It takes a
//! [`Request`]: the bytes of one SMP, PerfMgt GMP or congestion control GMP, the port it leaves
//! from and the emulated time it leaves. It returns the [`Reply`] that comes back and when. It
//! returns `None` where a real fabric drops the request: a bad directed route, no LID route, a
//! malformed MAD, a dead node, a wrong M_Key or CC_Key, a loss. Scheduled link flaps up to then
//! take effect first ([`FaultSchedule`]). The fabric's [`Models`] may lose, damage or delay what
//! travels, all drawn from one seeded generator.
//! So the same seed, requests and times give the same bytes at the same times. Where a client sits
//! is the `attach` module's rule. A client that is an SM claims CapabilityMask.IsSM with
//! [`Emulator::set_is_sm`]. [`dump`] reads every port's QoS state back as JSON.
//!
//! What each attribute does is in the `sma` module. The `travel` module moves MADs: directed routes
//! as IBA 14.2.2 specifies them, LID routes through the linear forwarding tables the SM programmed.
//! The `link` module does the link-level effects of PortInfo Sets and flaps (a port taken down
//! takes its neighbour with it). The `trap` module sends the traps they raise. Which SMPs an SMA
//! answers when it holds an M_Key is in the `mkey` module. The PMAs' port counters (the `perf`
//! module) count every MAD the fabric carries on every link it crosses, as ibsim's do, and per
//! VL and SL as hardware does; [`Emulator::add_traffic`] adds other traffic and
//! [`Emulator::preset_counters`] sets chosen counters. A congestion control agent per switch and
//! CA port (the `cc` module) keeps what it is Set ([`Emulator::congestion_agent`]). The `serve`
//! module serves the fabric over ibsim's socket protocol.

mod attach;
mod cc;
mod due;
mod dump;
mod input;
mod link;
mod mkey;
mod models;
mod perf;
mod schedule;
pub mod serve;
mod sma;
mod traffic;
mod trap;
mod travel;

use std::collections::{BTreeMap, BTreeSet};

use ibqos_mad::{
    Attribute, AttributeId, CcMad, Mad, Method, MftModifier, MgmtClass, PerfMgtMad, PortInfoRepr,
    Priority, Routing, SlToVlMappingTableRepr, Smp, SmpRepr, Status, SwitchInfoRepr, VlArbEntry,
};

use ibqos_fabric::{NodeId, PortRef, Topology};
use link::ScheduledEvent;
use models::Dice;
use perf::{Carrier, Pmas, Trace};
use sma::NodeSma;

pub use attach::{AttachError, attach_port};
pub use cc::{
    CONTROL_TABLE_CAP, CaCongestion, CongestionAgent, CongestionSettings, SwitchCongestion,
};
pub use due::DueQueue;
pub use dump::dump;
pub use input::InputError;
pub use models::{Faults, Latency, Models, precise_timers};
pub use perf::{
    CounterId, CounterPresets, LaneTraffic, PortTraffic, PresetError, PresetProblem, UnknownPort,
    XmitDiscards,
};
pub use schedule::{FaultSchedule, Flap, ScheduleError, ScheduleProblem, VlArbRewrite};
pub use sma::{LINEAR_FDB_CAP, MULTICAST_FDB_CAP};
pub use traffic::{
    PortTotal, RETRY_NS, SAMPLE_NS, TrafficEvent, TrafficOutcome, TrafficPlan, TrafficPlanError,
};
pub use trap::Trap;

pub use ibqos_fabric::builtin::{BUILTIN_TOPOLOGIES, builtin_topology, load_topology};

/// What traffic inside the fabric is simulated with of an attribute a Get answers.
#[derive(PartialEq)]
enum SimulatedPart {
    /// A PortInfo's LID, OperVLs and VLHighLimit.
    Port {
        lid: u16,
        oper_vls: u8,
        high_limit: u8,
    },
    /// A whole SL2VL, VLArb or LFT block.
    Table(Attribute),
}

/// The part of `answer` traffic inside the fabric is simulated with, if any.
fn simulated_part(answer: &Result<Attribute, Status>) -> Option<SimulatedPart> {
    match answer {
        Ok(Attribute::PortInfo(info)) => Some(SimulatedPart::Port {
            lid: info.lid,
            oper_vls: info.operational_vls,
            high_limit: info.vl_high_limit,
        }),
        Ok(
            table @ (Attribute::SlToVlMappingTable(_)
            | Attribute::VlArbitrationTable(_)
            | Attribute::LinearForwardingTable(_)),
        ) => Some(SimulatedPart::Table(*table)),
        _ => None,
    }
}

/// The built-in fabric `ibqos sm` runs against by default.
pub const DEFAULT_TOPOLOGY: &str = "two-switch";

/// The node of `topology` with this name, else the first with this NodeDescription (ibsim
/// takes either).
pub fn node_named(topology: &Topology, name: &str) -> Option<NodeId> {
    topology.node_by_name(name).or_else(|| {
        topology
            .nodes()
            .find(|(_, n)| n.description == name)
            .map(|(id, _)| id)
    })
}

/// Every node's SMA and PMA, wired as a [`Topology`] wires them.
#[derive(Debug)]
pub struct Emulator {
    topology: Topology,
    nodes: Vec<NodeSma>,
    /// SMPs that reached an SMA, by (AttributeID, Method) raw values.
    handled: BTreeMap<(AttributeId, Method), u64>,
    models: Models,
    dice: Dice,
    /// Nodes whose SMA is dead: it answers nothing and forwards no directed-route SMP.
    dead: BTreeSet<NodeId>,
    /// Scheduled link events not yet due, in time order.
    events: Vec<ScheduledEvent>,
    /// The emulated time the fabric has reached, in ns (see [`Emulator::advance_to`]).
    now_ns: u64,
    /// Traps raised and not yet taken by [`Emulator::take_traps`].
    outbox: Vec<Trap>,
    /// Traps sent and not yet repressed, by issuing node and TransactionID.
    unrepressed: BTreeSet<(NodeId, u64)>,
    /// The TransactionID of the next trap (an SMA numbers its own traps).
    next_trap_tid: u64,
    /// M_Key leases running, in emulated time.
    leases: mkey::Leases,
    /// Every node's performance management agent and its port counters.
    pmas: Pmas,
    /// The congestion control agents MADs have reached.
    ccas: cc::Ccas,
    /// The traffic the packet simulator runs inside the fabric, if any.
    traffic: Option<Box<traffic::Traffic>>,
    /// Sets that changed a table the traffic is simulated with: an SL2VL, VLArb or LFT block,
    /// or a PortInfo.
    tables_changed: u64,
}

/// One MAD a client sends into the fabric for an agent to answer: an SMP for an SMA, a PerfMgt
/// GMP (class 0x04) for a PMA, or a congestion control GMP (class 0x21) for a CCA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The port it leaves from, where the client sits (see the `attach` module): a CA or router
    /// port, or port 0 of a switch.
    pub origin: PortRef,
    /// The emulated time, in ns, at which it leaves.
    pub at_ns: u64,
    /// The destination LID of the packet (from the transport header, not the MAD); `None` for
    /// a directed-route SMP and for the permissive LID.
    pub dlid: Option<u16>,
    pub mad: &'a [u8],
}

/// The answer to a [`Request`] on its way back to the requester.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The emulated time, in ns, at which it reaches the requester's port.
    pub at_ns: u64,
    pub mad: Vec<u8>,
}

/// Where an SMP is answered: the node and the port it arrived at.
type Arrival = PortRef;

/// A request answered (an SMP by an SMA, a GMP by its agent): the response, where it was
/// answered, and how many links it crossed there and back.
struct Exchange {
    mad: Vec<u8>,
    at: Arrival,
    links: u64,
}

impl Emulator {
    /// The fabric of `topology` in its power-on state (see the `sma` module). No port
    /// advertises CapabilityMask.IsSM until an SM claims it ([`Emulator::set_is_sm`]).
    pub fn new(topology: Topology) -> Result<Emulator, ibqos_fabric::TopologyError> {
        topology.validate()?;
        let nodes = topology.nodes().map(|(_, n)| NodeSma::new(n)).collect();
        let pmas = Pmas::new(&topology);
        let mut emulator = Emulator {
            topology,
            nodes,
            handled: BTreeMap::new(),
            models: Models::default(),
            dice: Dice::new(0),
            dead: BTreeSet::new(),
            events: Vec::new(),
            now_ns: 0,
            outbox: Vec::new(),
            unrepressed: BTreeSet::new(),
            next_trap_tid: 1,
            leases: mkey::Leases::default(),
            pmas,
            ccas: cc::Ccas::default(),
            traffic: None,
            tables_changed: 0,
        };
        let links: Vec<(PortRef, PortRef)> = emulator.topology.links().collect();
        for (a, b) in links {
            emulator.train(a, b);
        }
        Ok(emulator)
    }

    /// The fabric's topology, as built (links the emulator took down are still in it).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Answers one request: the response and when it reaches the requester, or `None` where a
    /// real fabric gives none. Never panics, whatever the bytes.
    ///
    /// First the link events scheduled up to `at_ns` happen (and M_Key leases due by then
    /// end); `at_ns` never goes backwards, an earlier time than a previous request's is taken
    /// as that. Then the [`Models`] may lose the request on its way, and lose, damage or delay
    /// the response on its way back; with the default models nothing is lost and the answer
    /// depends neither on time nor on chance.
    ///
    /// An SMP (class 0x01 or 0x81) goes by its directed route or to `dlid`, and is answered by
    /// the SMA it reaches (see the `sma` and `mkey` modules); `None` for a bad directed route,
    /// no LID route, a malformed MAD, a dead node, a wrong M_Key, a response, or a TrapRepress
    /// (which has no answer: it ends its trap at the SMA it reaches).
    ///
    /// A congestion control GMP (class 0x21) is answered by the congestion control agent of the
    /// node or CA port it reaches (see the `cc` module); `None` when its CC_Key check drops it.
    ///
    /// Any other bytes are taken as a PerfMgt GMP, answered as ibsim's PMAs answer them (see the
    /// `perf` module). The PMAs take ClassPortInfo, PortCounters, PortCountersExtended and the
    /// optional counters, per VL and per SL among them (0x15-0x1C, 0x30-0x37). They take Get
    /// and Set (which clears the counters CounterSelect names), and PortSelect 0xFF for all of
    /// a switch's ports. `None` for bytes that are no PerfMgt
    /// request: shorter than 256 bytes, BaseVersion not 1, another class, a response or
    /// TrapRepress. Any other request is answered, with a real PMA's status where it asks for
    /// something wrong:
    ///
    /// - 0x0004 for a ClassVersion other than 1;
    /// - 0x0008 for a method other than Get and Set (and, as in ibsim, for a Set of ClassPortInfo);
    /// - 0x000C for an attribute the PMA does not have (ibsim drops those), and for
    ///   SwPortVLCongestion at a CA;
    /// - 0x001C for a PortSelect naming no port.
    ///
    /// A GMP goes where `dlid` leads through the switches' forwarding tables, as ibsim routes it.
    /// With no LID it goes to `origin`'s own port.
    ///
    /// Like every MAD the fabric carries, a request and its response are counted on the links
    /// they cross.
    pub fn exchange(&mut self, request: Request<'_>) -> Option<Reply> {
        let Request {
            origin,
            at_ns,
            dlid,
            mad,
        } = request;
        self.advance_to(at_ns);
        let now_ns = self.now_ns;
        let faults = self.models.faults;
        if self.dice.chance(faults.loss) {
            return None;
        }
        let is_smp = matches!(
            mad.get(1).copied().map(MgmtClass::from),
            Some(MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute)
        );
        let answered = if is_smp {
            self.smp_exchange(origin, mad, dlid)
        } else {
            self.gmp_exchange(origin, mad, dlid)
        };
        let Exchange { mut mad, at, links } = answered?;
        if self.dice.chance(faults.loss) {
            return None;
        }
        if self.dice.chance(faults.corrupt) {
            self.dice.damage(&mut mad);
        }
        let at_ns = now_ns
            .saturating_add(self.travel_ns(at.node, links))
            .saturating_add(self.dice.up_to(faults.jitter_ns));
        Some(Reply { at_ns, mad })
    }

    /// Marks `port` as one where an SM runs (CapabilityMask.IsSM), or no longer (ibsim:
    /// SET_ISSM).
    pub fn set_is_sm(&mut self, port: PortRef, is_sm: bool) {
        self.set_capability(port, ibqos_mad::CapabilityMask::IS_SM, is_sm);
    }

    /// Turns a CapabilityMask bit of `port` on or off: a port unlike ibsim's (real HCAs have
    /// IsClientReregistrationSupported, which ibsim's lack).
    pub fn set_capability(&mut self, port: PortRef, bit: ibqos_mad::CapabilityMask, on: bool) {
        if let Some(p) = self.sma_port_mut(port) {
            p.info.capability_mask.0 = if on {
                p.info.capability_mask.0 | bit.0
            } else {
                p.info.capability_mask.0 & !bit.0
            };
        }
    }

    /// Adds to the PMA counters of `port` what it sent, received, waited for and discarded over
    /// a stretch of time: one call per port for each sampling step of the packet simulator
    /// (see [`PortTraffic`] for the counters each figure goes to). Nothing else moves: this
    /// is not a packet, it crosses no link and its peer counts nothing.
    pub fn add_traffic(&mut self, port: PortRef, traffic: &PortTraffic) -> Result<(), UnknownPort> {
        self.sma_port(port).ok_or(UnknownPort(port))?;
        self.pmas.add_traffic(port, traffic);
        Ok(())
    }

    /// What the congestion control agent of `port` holds now (a switch's agent, for any of its
    /// ports): what it was Set, or its power-on state. `None` for a port the topology does not
    /// have, or of a node the fault schedule left without an agent.
    pub fn congestion_agent(&self, port: PortRef) -> Option<CongestionAgent> {
        self.ccas.agent(&self.topology, port, self.now_ns)
    }

    /// Sets PMA counters to chosen values (a counter past its maximum stops there), as if
    /// the fabric had counted them: for testing what a performance manager does near a
    /// counter's limit.
    pub fn preset_counters(&mut self, presets: &CounterPresets) {
        for &(port, counter, value) in &presets.presets {
            self.pmas.preset(port, counter, value);
        }
    }

    /// How many PortInfo Sets with ClientReregister `port` received.
    pub fn client_reregistrations(&self, port: PortRef) -> u32 {
        self.sma(port.node)
            .and_then(|sma| sma.port(port.port))
            .map_or(0, |p| p.client_reregistrations)
    }

    /// The fabric's models from now on; the seed restarts the random draws.
    pub fn set_models(&mut self, models: Models) {
        self.dice = Dice::new(models.seed);
        self.models = models;
    }

    /// Whether `node`'s SMA is dead.
    pub fn is_dead(&self, node: NodeId) -> bool {
        self.dead.contains(&node)
    }

    /// Routes, answers and counts one SMP: what [`Emulator::exchange`] does with it, and where.
    fn smp_exchange(
        &mut self,
        origin: PortRef,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Exchange> {
        let request = SmpRepr::parse_bytes(request).ok()?;
        // An SMA answers requests; it never answers a response, and TrapRepress has no
        // response (IBA 14.2.5.1): it only ends a trap.
        if request.method == Method::TrapRepress {
            self.repress(origin, &request, dlid);
            return None;
        }
        if request.method.is_response() {
            return None;
        }
        let mut there = Trace::new(Carrier::Smp);
        let routed = self.route(origin, &request, dlid, &mut there);
        self.pmas.record(&there);
        let (at, routing) = routed?;
        if self.is_dead(at.node) {
            return None;
        }
        let access = self.check_m_key(at, &request)?;
        let (status, data) = match self.answer(at, &request) {
            Ok(attribute) => (Status::OK, access.show(attribute).to_data()),
            // On an error the data area goes back as it came (as ibsim does).
            Err(status) => (status, request.data),
        };
        // The response goes back the way the request came, or by LID to the requester.
        let back = match routing {
            Routing::Directed(_) => {
                self.pmas.record(&there.reversed());
                there.links()
            }
            Routing::Lid => self.reply_by_lid(origin, at, Carrier::Smp)?,
        };
        let response = SmpRepr {
            method: Method::GetResp,
            status,
            routing,
            data,
            ..request
        };
        let mut mad = vec![0; 256];
        response.emit(&mut Smp::new_unchecked(&mut mad[..]));
        Some(Exchange {
            mad,
            at,
            links: there.links() + back,
        })
    }

    /// Routes, answers and counts one PerfMgt or congestion control GMP: what
    /// [`Emulator::exchange`] does with it, and where.
    fn gmp_exchange(
        &mut self,
        origin: PortRef,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Exchange> {
        let header = Mad::new_checked(request.get(..256)?).ok()?;
        let (class, method) = (header.mgmt_class(), header.method());
        // As ibsim: a MAD whose BaseVersion is not 1 is no MAD, and TrapRepress is dropped
        // unanswered; an agent answers requests only.
        if header.base_version() != 1
            || !matches!(class, MgmtClass::PerfMgt | MgmtClass::CongestionControl)
            || method == Method::TrapRepress
            || method.is_response()
        {
            return None;
        }
        let mut there = Trace::new(Carrier::Gmp);
        let routed = self.gmp_route(origin, dlid, &mut there);
        self.pmas.record(&there);
        let at = routed?;
        if self.is_dead(at.node) {
            return None;
        }
        let mad = if class == MgmtClass::PerfMgt {
            self.pmas
                .respond(at, PerfMgtMad::new_checked(request).ok()?)
        } else {
            let request = CcMad::new_checked(request).ok()?;
            let set = request.header().method() == Method::Set;
            let before = self.ccas.held_for(&self.topology, at);
            let answer = self.ccas.respond(&self.topology, at, request, self.now_ns);
            // The traffic's congestion control comes from the agents when its file sets none:
            // a Set that changed an agent rebuilds it, as one that changed a table does.
            if set && self.ccas.held_for(&self.topology, at) != before {
                self.tables_changed += 1;
            }
            answer?
        };
        let back = self.reply_by_lid(origin, at, Carrier::Gmp)?;
        Some(Exchange {
            mad,
            at,
            links: there.links() + back,
        })
    }

    /// How many SMPs with this AttributeID and Method reached an SMA and passed its M_Key check
    /// (whatever the answer).
    pub fn handled(&self, attribute: AttributeId, method: Method) -> u64 {
        self.handled.get(&(attribute, method)).copied().unwrap_or(0)
    }

    /// Every (AttributeID, Method) that reached an SMA with its count, in AttributeID order.
    pub fn handled_all(&self) -> impl Iterator<Item = (AttributeId, Method, u64)> + '_ {
        self.handled.iter().map(|(&(a, m), &n)| (a, m, n))
    }

    /// What a Get of `attribute` with `modifier` answers at `port` (the port the SMP arrives at:
    /// it picks a CA's port; any port of a switch), without counting it: for reading the
    /// fabric's state back.
    pub fn get(
        &self,
        port: PortRef,
        attribute: AttributeId,
        modifier: u32,
    ) -> Result<Attribute, Status> {
        self.sma(port.node)
            .ok_or(Status::INVALID_VALUE)?
            .get(port.port, attribute, modifier)
    }

    /// The PortInfo a port holds.
    pub fn port_info(&self, port: PortRef) -> Option<&PortInfoRepr> {
        Some(&self.sma(port.node)?.port(port.port)?.info)
    }

    /// A switch's SwitchInfo.
    pub fn switch_info(&self, switch: NodeId) -> Option<&SwitchInfoRepr> {
        Some(&self.sma(switch)?.switch.as_ref()?.info)
    }

    /// The SL2VL table of traffic entering `input` and leaving by port `output` of a switch; on
    /// a CA, `output` is ignored and the table is the port's.
    pub fn sl2vl(&self, input: PortRef, output: u8) -> Option<&SlToVlMappingTableRepr> {
        let sma = self.sma(input.node)?;
        let tables = &sma.port(input.port)?.sl2vl;
        tables.get(if sma.switch.is_some() {
            usize::from(output)
        } else {
            0
        })
    }

    /// A port's P_Key table: every entry its capacity has.
    pub fn p_keys(&self, port: PortRef) -> Option<&[u16]> {
        Some(&self.sma(port.node)?.port(port.port)?.p_keys)
    }

    /// A port's VL arbitration table, high or low priority: exactly its cap's entries.
    pub fn vlarb(&self, port: PortRef, priority: Priority) -> Option<&[VlArbEntry]> {
        Some(self.sma(port.node)?.port(port.port)?.vlarb(priority))
    }

    /// The ports a switch's multicast forwarding table gives `mlid` (port 0 the switch
    /// itself), in port order; `None` for a CA or a LID that is not multicast.
    pub fn mft_ports(&self, switch: NodeId, mlid: u16) -> Option<Vec<u8>> {
        let tables = &self.sma(switch)?.switch.as_ref()?.mft;
        let mut ports = Vec::new();
        let per = MftModifier::PORTS_PER_POSITION;
        for position in 0..=MftModifier::MAX_POSITION {
            let modifier = MftModifier::containing(mlid, position * per)?;
            let mask = tables.get(&modifier).map_or(0, |t| {
                t.port_masks[usize::from(mlid - modifier.first_mlid())]
            });
            let set = (0..per).filter(|bit| mask & (1 << bit) != 0);
            ports.extend(set.map(|bit| position * per + bit));
        }
        Some(ports)
    }

    /// The egress port a switch's LFT gives `lid` (0xFF: none).
    pub fn lft(&self, switch: NodeId, lid: u16) -> Option<u8> {
        let lft = &self.sma(switch)?.switch.as_ref()?.lft;
        Some(
            lft.get(usize::from(lid))
                .copied()
                .unwrap_or(ibqos_mad::LinearForwardingTableRepr::NO_ROUTE),
        )
    }

    fn sma(&self, node: NodeId) -> Option<&NodeSma> {
        self.nodes.get(node.index())
    }

    fn sma_port(&self, port: PortRef) -> Option<&sma::PortSma> {
        self.sma(port.node)?.port(port.port)
    }

    fn sma_port_mut(&mut self, port: PortRef) -> Option<&mut sma::PortSma> {
        self.nodes.get_mut(port.node.index())?.port_mut(port.port)
    }

    fn is_switch(&self, node: NodeId) -> bool {
        self.sma(node).is_some_and(|n| n.switch.is_some())
    }

    /// The SMA at `at` answers `request`, counted per attribute and method.
    fn answer(&mut self, at: Arrival, request: &SmpRepr) -> Result<Attribute, Status> {
        self.count(request);
        match request.method {
            Method::Get => self.get(at, request.attribute_id, request.attribute_modifier),
            Method::Set => {
                let (id, modifier) = (request.attribute_id, request.attribute_modifier);
                let before = self.get(at, id, modifier);
                let set = self.set(at, request);
                if simulated_part(&self.get(at, id, modifier)) != simulated_part(&before) {
                    self.tables_changed += 1;
                }
                set
            }
            _ => Err(Status::METHOD_UNSUPPORTED),
        }
    }

    /// The SMA at `at` takes the Set `request`.
    fn set(&mut self, at: Arrival, request: &SmpRepr) -> Result<Attribute, Status> {
        // Never fails: every attribute ID has a decoder or is kept raw, and the data area is
        // 64 bytes.
        let attribute = Attribute::parse(request.attribute_id, &request.data)
            .map_err(|_| Status::INVALID_VALUE)?;
        if let Attribute::PortInfo(info) = attribute {
            return self.set_port_info(at, request.attribute_modifier, &info);
        }
        self.nodes
            .get_mut(at.node.index())
            .ok_or(Status::INVALID_VALUE)?
            .set(at.port, request.attribute_modifier, attribute)
    }

    fn count(&mut self, request: &SmpRepr) {
        *self
            .handled
            .entry((request.attribute_id, request.method))
            .or_default() += 1;
    }
}
