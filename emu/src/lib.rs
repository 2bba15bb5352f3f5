//! The emulated fabric: a subnet management agent (SMA) for every node of a [`Topology`],
//! answering SMPs the way real switches and HCAs do, so that an SM can run with no hardware and
//! no ibsim.
//!
//! [`Emulator`] is sans-IO and deterministic: [`Emulator::handle`] takes the bytes of one SMP the
//! SM sends from its port and returns the bytes of the response that comes back, or `None`
//! where a real fabric would drop the SMP (a bad directed route, no LID route, a malformed
//! MAD, a dead node, a wrong M_Key). It depends on neither time nor randomness, so the same
//! requests give the same bytes.
//!
//! [`Emulator::handle_at`] is the same exchange on a fabric with [`Models`]: the caller says
//! when the request leaves the SM, scheduled link flaps up to then take effect ([`FaultSchedule`]),
//! the request or its response may be lost, damaged or delayed, and the response comes back
//! with the emulated time it reaches the SM. All of it is drawn from one seeded generator: the
//! same seed, requests and times give the same bytes at the same times. [`dump`] reads every
//! port's QoS state back as JSON.
//!
//! What each attribute does is in the `sma` module; this module moves SMPs: directed routes as IBA
//! 14.2.2 specifies them, LID routes through the linear forwarding tables the SM programmed, and
//! the link-level effects of PortInfo Sets (a port taken down takes its neighbour with it). Which
//! SMPs an SMA answers when it holds an M_Key is in the `mkey` module. Every node also has a
//! performance management agent ([`Emulator::perf_at_from`], the `perf` module), whose port
//! counters count every MAD the fabric carries on every link it crosses, as ibsim's do.

mod due;
mod dump;
mod mkey;
mod models;
mod perf;
mod schedule;
pub mod serve;
mod sma;

use std::collections::{BTreeMap, BTreeSet};

use ibqos_mad::{
    Attribute, AttributeId, Direction, DrPath, Method, MgmtClass, Notice, NoticeRepr, NoticeType,
    PerfMgtMad, PhysPortState, PortInfoModifier, PortInfoRepr, PortState, Routing,
    SlToVlMappingTableRepr, Smp, SmpRepr, Status, SwitchInfoRepr, VlArbEntry,
};

use ibqos_fabric::{NodeId, NodeKind, PortRef, Topology};
use models::Dice;
use perf::{Counter, Pmas, Trace};
use sma::{INVALID_VALUE, METHOD_UNSUPPORTED, NodeSma, check_port_info, negotiate};

pub use due::DueQueue;
pub use dump::{FabricDump, NodeDump, PortDump, dump};
pub use models::{Faults, Latency, Models, damage, precise_timers};
pub use schedule::{FaultSchedule, Flap, ScheduleError, ScheduleProblem};
pub use sma::LINEAR_FDB_CAP;

pub use ibqos_fabric::builtin::{BUILTIN_TOPOLOGIES, builtin_topology, load_topology};

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

/// The most switches a LID-routed SMP crosses before the emulator calls it a loop (ibsim: 16;
/// a directed route may have 63 hops, so a LID route is allowed as many).
const MAX_LID_HOPS: usize = DrPath::MAX_HOPS as usize;

/// Why an emulator cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmuError {
    #[error("{0}: the SM's port does not exist")]
    NoSuchPort(PortRef),
    #[error(
        "{0}: an SM attaches at a CA or router port or at switch port 0, not at an external switch port"
    )]
    ExternalSwitchPort(PortRef),
    #[error(transparent)]
    Topology(#[from] ibqos_fabric::TopologyError),
}

/// Every node's SMA, wired as a [`Topology`] wires them, and the SM's port.
#[derive(Debug, Clone)]
pub struct Emulator {
    topology: Topology,
    attach: PortRef,
    nodes: Vec<NodeSma>,
    /// SMPs that reached an SMA, by (AttributeID, Method) raw values.
    handled: BTreeMap<(u16, u8), u64>,
    models: Models,
    dice: Dice,
    /// Nodes whose SMA is dead: it answers nothing and forwards no directed-route SMP.
    dead: BTreeSet<NodeId>,
    /// Scheduled link events not yet due, in time order.
    events: Vec<LinkEvent>,
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
}

/// A trap an SMA sends: a LID-routed SubnTrap(Notice) to the MasterSMLID its port 0 holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trap {
    /// The port it arrives at: the port owning the MasterSMLID.
    pub to: PortRef,
    /// The issuer's LID, the source LID of the packet.
    pub slid: u16,
    /// The emulated time, in ns, at which it arrives.
    pub at_ns: u64,
    pub mad: Vec<u8>,
}

/// A response on its way back to the SM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The emulated time, in ns, at which it reaches the SM's port.
    pub at_ns: u64,
    pub mad: Vec<u8>,
}

/// A scheduled change of one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LinkEvent {
    at_ns: u64,
    port: PortRef,
    up: bool,
}

/// Where an SMP is answered: the node and the port it arrived at.
type Arrival = PortRef;

/// A request answered (an SMP by an SMA, a PerfMgt GMP by a PMA): the response, where it was
/// answered, and how many links it crossed there and back.
struct Exchange {
    mad: Vec<u8>,
    at: Arrival,
    links: u64,
}

impl Emulator {
    /// The fabric of `topology` in its power-on state (see the `sma` module), with the SM at
    /// `attach`: a CA or router port, or port 0 of a switch. The SM's port advertises
    /// CapabilityMask.IsSM, as a port does once an SM opens it (ibsim: SET_ISSM).
    pub fn new(topology: Topology, attach: PortRef) -> Result<Emulator, EmuError> {
        topology.validate()?;
        let node = topology
            .node(attach.node)
            .filter(|n| n.port(attach.port).is_some())
            .ok_or(EmuError::NoSuchPort(attach))?;
        if node.is_switch() && attach.port != 0 {
            return Err(EmuError::ExternalSwitchPort(attach));
        }
        let nodes = topology.nodes().map(|(_, n)| NodeSma::new(n)).collect();
        let pmas = Pmas::new(&topology);
        let mut emulator = Emulator {
            topology,
            attach,
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
        };
        if let Some(port) = emulator.sma_port_mut(attach) {
            port.info.capability_mask.0 |= ibqos_mad::CapabilityMask::IS_SM.0;
        }
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

    /// The SM's port.
    pub fn attach(&self) -> PortRef {
        self.attach
    }

    /// Answers one SMP sent from the SM's port: the response MAD, or `None` where a real fabric
    /// drops it. `dlid` is the destination LID of a LID-routed SMP (from the transport header,
    /// not the MAD); a directed-route SMP ignores it. Never panics, whatever the bytes. No
    /// time passes and the [`Models`] play no part; dead nodes stay dead, and an M_Key lease
    /// never runs out (only [`Emulator::advance_to`] moves lease time on).
    pub fn handle(&mut self, request: &[u8], dlid: Option<u16>) -> Option<Vec<u8>> {
        self.handle_from(self.attach, request, dlid)
    }

    /// [`Emulator::handle`] for an SMP sent from `origin`, another port where a client is
    /// attached (a CA or router port, or switch port 0; anything else gets `None`).
    pub fn handle_from(
        &mut self,
        origin: PortRef,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Vec<u8>> {
        self.exchange(origin, request, dlid).map(|e| e.mad)
    }

    /// [`Emulator::handle`] for a request the SM sends at emulated time `now_ns`, on a fabric
    /// with [`Models`]: first the link events scheduled up to `now_ns` happen, then the request
    /// may be lost on its way, and the response lost, damaged or delayed on its way back.
    /// `now_ns` never goes backwards: an earlier time than a previous call's is taken as that.
    pub fn handle_at(
        &mut self,
        now_ns: u64,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Delivery> {
        self.handle_at_from(self.attach, now_ns, request, dlid)
    }

    /// [`Emulator::handle_at`] for a request sent from `origin` (see
    /// [`Emulator::handle_from`]).
    pub fn handle_at_from(
        &mut self,
        origin: PortRef,
        now_ns: u64,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Delivery> {
        self.deliver_at(now_ns, |emu| emu.exchange(origin, request, dlid))
    }

    /// Answers one PerfMgt GMP (class 0x04) sent from `origin` at emulated time `now_ns`, as
    /// ibsim's PMAs answer them (see the `perf` module): ClassPortInfo, PortCounters,
    /// PortCountersExtended and the optional counters, Get and Set (which clears the counters
    /// CounterSelect names), PortSelect 0xFF for all of a switch's ports. The response is due
    /// when the [`Models`] say, as for [`Emulator::handle_at_from`]; `None` where the fabric
    /// loses the GMP or its response, or for bytes that are no PerfMgt request (shorter than
    /// 256 bytes, BaseVersion not 1, a response or TrapRepress). Any other request is answered,
    /// with a real PMA's status where it asks for something wrong: 0x0004 for a ClassVersion
    /// other than 1, 0x0008 for a method other than Get and Set (and, as in ibsim, for a Set of
    /// ClassPortInfo), 0x000C for an attribute the PMA does not have (ibsim drops those),
    /// 0x001C for a PortSelect naming no port. Never panics, whatever the bytes.
    ///
    /// A GMP goes where its destination LID `dlid` leads through the switches' forwarding
    /// tables, as ibsim routes it; with no LID (the permissive LID) it goes to `origin`'s own
    /// port. Like every MAD the fabric carries, it and its response are counted on the links
    /// they cross.
    pub fn perf_at_from(
        &mut self,
        origin: PortRef,
        now_ns: u64,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Delivery> {
        self.deliver_at(now_ns, |emu| emu.perf_exchange(origin, request, dlid))
    }

    /// An `exchange` of a request sent at `now_ns`, with the [`Models`] applied: link events
    /// up to then happen first, then the request may be lost on its way and the response lost,
    /// damaged or delayed on its way back.
    fn deliver_at(
        &mut self,
        now_ns: u64,
        exchange: impl FnOnce(&mut Self) -> Option<Exchange>,
    ) -> Option<Delivery> {
        self.advance_to(now_ns);
        let now_ns = self.now_ns;
        let faults = self.models.faults;
        if self.dice.chance(faults.loss) {
            return None;
        }
        let Exchange { mut mad, at, links } = exchange(self)?;
        if self.dice.chance(faults.loss) {
            return None;
        }
        if self.dice.chance(faults.corrupt) {
            self.dice.damage(&mut mad);
        }
        let at_ns = now_ns
            .saturating_add(self.travel_ns(at.node, links))
            .saturating_add(self.dice.up_to(faults.jitter_ns));
        Some(Delivery { at_ns, mad })
    }

    /// How long an agent's answer takes to reach its requester: `links` crossed in all and the
    /// agent of `node` at work (a PMA is taken to be as quick as the node's SMA).
    fn travel_ns(&self, node: NodeId, links: u64) -> u64 {
        let latency = self.models.latency;
        let sma = match self.topology.node(node).map(|n| n.kind) {
            Some(NodeKind::Switch) => latency.switch_sma_ns,
            _ => latency.ca_sma_ns,
        };
        links.saturating_mul(latency.wire_ns).saturating_add(sma)
    }

    /// Carries a request that no agent of the fabric answers (SMInfo, SA) from `origin` to the
    /// port it reaches, where a client may take it, and counts it on the links it crosses;
    /// `None` where the fabric drops it. An SMP (class 0x01 or 0x81) goes by its directed
    /// route, or by `dlid`; any other MAD by `dlid` through the forwarding tables as ibsim
    /// routes it, or with no LID (the permissive LID) to `origin` itself.
    pub fn carry(&mut self, origin: PortRef, mad: &[u8], dlid: Option<u16>) -> Option<PortRef> {
        let mut trace = Trace::default();
        let at = match mad.get(1).copied().map(MgmtClass::from) {
            Some(MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute) => {
                let smp = SmpRepr::parse(&Smp::new_checked(mad).ok()?).ok()?;
                self.route(origin, &smp, dlid, &mut trace).map(|(at, _)| at)
            }
            _ => self.gmp_route(origin, dlid, &mut trace),
        };
        self.pmas.record(&trace);
        at
    }

    /// Carries a client's response from its port `responder` back to `requester`, the port of
    /// the client that sent the request, and counts it on the links it crosses: a
    /// directed-route SMP back along the route it names, anything else by `dlid` (see
    /// [`Emulator::carry`]). Whether it arrives at the requester's node; ibsim tells the
    /// responder with status 110 when it does not.
    pub fn carry_response(
        &mut self,
        responder: PortRef,
        requester: PortRef,
        mad: &[u8],
        dlid: Option<u16>,
    ) -> bool {
        let directed = Smp::new_checked(mad)
            .and_then(|smp| SmpRepr::parse(&smp))
            .ok()
            .and_then(|smp| match smp.routing {
                Routing::Directed(path) => Some(path),
                Routing::Lid => None,
            });
        match directed {
            // The way back is the way out, walked from the requester again: the response
            // carries the request's InitialPath, and the ReturnPath the switches wrote is the
            // responder's to keep. Counted only if it leads to the responder.
            Some(mut path) => {
                path.direction = Direction::Outbound;
                path.hop_pointer = 0;
                let mut out = Trace::default();
                let reached = self.directed(requester, path, &mut out).map(|(at, _)| at);
                let arrived = reached == Some(responder);
                if arrived {
                    self.pmas.record(&out.reversed());
                }
                arrived
            }
            None => {
                let mut trace = Trace::default();
                let reached = self.gmp_route(responder, dlid, &mut trace);
                self.pmas.record(&trace);
                reached.is_some_and(|at| at.node == requester.node)
            }
        }
    }

    /// Marks `port` as one where an SM runs (CapabilityMask.IsSM), or no longer (ibsim:
    /// SET_ISSM).
    pub fn set_is_sm(&mut self, port: PortRef, is_sm: bool) {
        if let Some(p) = self.sma_port_mut(port) {
            let bit = ibqos_mad::CapabilityMask::IS_SM.0;
            p.info.capability_mask.0 = if is_sm {
                p.info.capability_mask.0 | bit
            } else {
                p.info.capability_mask.0 & !bit
            };
        }
    }

    /// The traps raised since the last call, each with the port and time it arrives at. A
    /// trap whose MasterSMLID has no route is lost, as on a real fabric.
    pub fn take_traps(&mut self) -> Vec<Trap> {
        std::mem::take(&mut self.outbox)
    }

    /// Traps sent and not yet repressed by a TrapRepress with their TransactionID. An SMA
    /// here sends each trap once: the repeats IBA allows until the SM represses it are not
    /// modelled, this count shows what an SM left unanswered.
    pub fn unrepressed_traps(&self) -> usize {
        self.unrepressed.len()
    }

    /// The fabric's models from now on; the seed restarts the random draws.
    pub fn set_models(&mut self, models: Models) {
        self.dice = Dice::new(models.seed);
        self.models = models;
    }

    /// The fabric's models.
    pub fn models(&self) -> &Models {
        &self.models
    }

    /// Adds a schedule: its dead nodes die at once, its flaps happen as [`Emulator::handle_at`]
    /// or [`Emulator::advance_to`] reach their times.
    pub fn schedule(&mut self, schedule: &FaultSchedule) {
        self.dead.extend(schedule.dead.iter().copied());
        for flap in &schedule.flaps {
            self.events.push(LinkEvent {
                at_ns: flap.down_ns,
                port: flap.port,
                up: false,
            });
            if let Some(up_ns) = flap.up_ns {
                self.events.push(LinkEvent {
                    at_ns: up_ns,
                    port: flap.port,
                    up: true,
                });
            }
        }
        // Stable: events at the same time happen in the order the schedule lists them.
        self.events.sort_by_key(|e| e.at_ns);
    }

    /// Whether `node`'s SMA is dead.
    pub fn is_dead(&self, node: NodeId) -> bool {
        self.dead.contains(&node)
    }

    /// Makes every scheduled link event up to `now_ns` happen, and ends the M_Key leases due
    /// by then.
    pub fn advance_to(&mut self, now_ns: u64) {
        self.expire_leases(now_ns);
        let due = self.events.partition_point(|e| e.at_ns <= now_ns);
        let events: Vec<LinkEvent> = self.events.drain(..due).collect();
        for event in events {
            // A trap the event raises leaves at the event's time.
            self.now_ns = self.now_ns.max(event.at_ns);
            if event.up {
                self.link_up(event.port);
            } else {
                self.link_down(event.port);
            }
        }
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// The emulated time of the next scheduled link event, if any is left.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.events.first().map(|e| e.at_ns)
    }

    /// Routes, answers and counts one SMP: what [`Emulator::handle_from`] does, and where.
    fn exchange(&mut self, origin: PortRef, request: &[u8], dlid: Option<u16>) -> Option<Exchange> {
        let request = SmpRepr::parse(&Smp::new_checked(request).ok()?).ok()?;
        // An SMA answers requests; it never answers a response, and TrapRepress has no
        // response (IBA 14.2.5.1): it only ends a trap.
        if request.method == Method::TrapRepress {
            self.repress(origin, &request, dlid);
            return None;
        }
        if request.method.is_response() {
            return None;
        }
        let mut there = Trace::default();
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
            Routing::Lid => self.reply_by_lid(origin, at)?,
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

    /// Routes, answers and counts one PerfMgt GMP: what [`Emulator::perf_at_from`] does, and
    /// where.
    fn perf_exchange(
        &mut self,
        origin: PortRef,
        request: &[u8],
        dlid: Option<u16>,
    ) -> Option<Exchange> {
        let request = PerfMgtMad::new_checked(request).ok()?;
        let header = request.header();
        let method = header.method();
        // As ibsim: a MAD whose BaseVersion is not 1 is no MAD, and TrapRepress is dropped
        // unanswered; a PMA answers requests only.
        if header.base_version() != 1
            || header.mgmt_class() != MgmtClass::PerfMgt
            || method == Method::TrapRepress
            || method.is_response()
        {
            return None;
        }
        let mut there = Trace::default();
        let routed = self.gmp_route(origin, dlid, &mut there);
        self.pmas.record(&there);
        let at = routed?;
        if self.is_dead(at.node) {
            return None;
        }
        let mad = self.pmas.respond(at, request);
        let back = self.reply_by_lid(origin, at)?;
        Some(Exchange {
            mad,
            at,
            links: there.links() + back,
        })
    }

    /// Where `request` from `origin` arrives and the routing its response carries; `None`
    /// where the fabric drops it (and for an origin where no client can be: an external switch
    /// port). The way there goes into `trace`.
    fn route(
        &self,
        origin: PortRef,
        request: &SmpRepr,
        dlid: Option<u16>,
        trace: &mut Trace,
    ) -> Option<(Arrival, Routing)> {
        self.check_origin(origin)?;
        match request.routing {
            Routing::Directed(path) => {
                let (at, path) = self.directed(origin, path, trace)?;
                Some((at, Routing::Directed(path)))
            }
            Routing::Lid => Some((self.lid_route(origin, dlid?, trace)?, Routing::Lid)),
        }
    }

    /// Where a GMP (or any MAD but an SMP) from `origin` arrives, as ibsim routes it: by
    /// `dlid` through the forwarding tables, or with none (the permissive LID) at `origin`
    /// itself. The way there goes into `trace`.
    fn gmp_route(&self, origin: PortRef, dlid: Option<u16>, trace: &mut Trace) -> Option<Arrival> {
        self.check_origin(origin)?;
        match dlid {
            Some(lid) => self.lid_route(origin, lid, trace),
            None => Some(origin),
        }
    }

    /// `Some` for a port a client can send from: a CA or router port, or switch port 0.
    fn check_origin(&self, origin: PortRef) -> Option<()> {
        if self.is_switch(origin.node) && origin.port != 0 {
            return None;
        }
        self.sma_port(origin).map(|_| ())
    }

    /// The response of a LID-routed request answered at `at` goes back to the requester's LID,
    /// counted on its way: the links it crosses, or `None` where it does not reach the
    /// requester's node (no route, or a requester without a LID; the request was answered all
    /// the same, as in ibsim and on a real fabric).
    fn reply_by_lid(&mut self, origin: PortRef, at: Arrival) -> Option<u64> {
        if at == origin {
            return Some(0);
        }
        let requester_lid = self.sma_port(origin)?.info.lid;
        let mut back = Trace::default();
        let reached = self.lid_route(at, requester_lid, &mut back);
        self.pmas.record(&back);
        reached
            .filter(|back| back.node == origin.node)
            .map(|_| back.links())
    }

    /// A TrapRepress that reaches the trap's issuer ends that trap. ibsim drops it before it
    /// travels, so it is not counted on the links.
    fn repress(&mut self, origin: PortRef, request: &SmpRepr, dlid: Option<u16>) {
        let mut uncounted = Trace::default();
        let at = match request.routing {
            Routing::Directed(path) => self
                .directed(origin, path, &mut uncounted)
                .map(|(at, _)| at),
            Routing::Lid => dlid.and_then(|lid| self.lid_route(origin, lid, &mut uncounted)),
        };
        let Some(at) = at.filter(|at| !self.is_dead(at.node)) else {
            return;
        };
        if self.check_m_key(at, request).is_some() {
            self.count(request);
            self.unrepressed.remove(&(at.node, request.transaction_id));
        }
    }

    /// How many SMPs with this AttributeID and Method reached an SMA and passed its M_Key check
    /// (whatever the answer).
    pub fn handled(&self, attribute: AttributeId, method: Method) -> u64 {
        self.handled
            .get(&(u16::from(attribute), u8::from(method)))
            .copied()
            .unwrap_or(0)
    }

    /// Every (AttributeID, Method) that reached an SMA with its count, in AttributeID order.
    pub fn handled_all(&self) -> impl Iterator<Item = (AttributeId, Method, u64)> + '_ {
        self.handled
            .iter()
            .map(|(&(a, m), &n)| (AttributeId::from(a), Method::from(m), n))
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
            .ok_or(INVALID_VALUE)?
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

    /// A port's VL arbitration table, high or low priority: exactly its cap's entries.
    pub fn vlarb(&self, port: PortRef, high: bool) -> Option<&[VlArbEntry]> {
        let port = self.sma(port.node)?.port(port.port)?;
        Some(if high {
            &port.vlarb_high
        } else {
            &port.vlarb_low
        })
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
                // Never fails: every attribute ID has a decoder or is kept raw, and the data
                // area is 64 bytes.
                let attribute = Attribute::parse(request.attribute_id, &request.data)
                    .map_err(|_| INVALID_VALUE)?;
                if let Attribute::PortInfo(info) = attribute {
                    return self.set_port_info(at, request.attribute_modifier, &info);
                }
                self.nodes
                    .get_mut(at.node.index())
                    .ok_or(INVALID_VALUE)?
                    .set(at.port, request.attribute_modifier, attribute)
            }
            _ => Err(METHOD_UNSUPPORTED),
        }
    }

    fn count(&mut self, request: &SmpRepr) {
        *self
            .handled
            .entry((u16::from(request.attribute_id), u8::from(request.method)))
            .or_default() += 1;
    }

    /// PortInfo Set: the port's checks need its link, and a state change reaches the neighbour.
    fn set_port_info(
        &mut self,
        at: Arrival,
        modifier: u32,
        new: &PortInfoRepr,
    ) -> Result<Attribute, Status> {
        let m = PortInfoModifier::try_from(modifier).map_err(|_| INVALID_VALUE)?;
        let port = if self.is_switch(at.node) {
            PortRef::new(at.node, m.port)
        } else {
            at
        };
        let held = self.sma_port(port).ok_or(INVALID_VALUE)?.info;
        let peer = self.up_peer(port);
        let peer_state = peer
            .and_then(|p| self.sma_port(p))
            .map(|p| p.info.port_state);
        let stored = check_port_info(&held, new, peer_state)?;
        let retrain = new.port_state == PortState::Down;
        if let Some(p) = self.sma_port_mut(port) {
            p.info = stored;
        }
        let phys = Some(new.port_phys_state).filter(|&p| p != held.port_phys_state);
        match (phys, peer) {
            (Some(PhysPortState::Disabled), _) => self.disable(port),
            (Some(PhysPortState::Polling), _) => self.enable(port),
            (_, Some(peer)) if retrain => self.train(port, peer),
            (_, Some(peer)) => self.renegotiate(port, peer),
            _ => {}
        }
        self.get(at, AttributeId::PortInfo, modifier)
    }

    /// The port at the other end of `port`'s link if the link is physically up at both ends
    /// (IBA: a DR SMP crosses a link in any PortState once it is up; ibsim checks LinkUp).
    fn up_peer(&self, port: PortRef) -> Option<PortRef> {
        let peer = self.topology.peer(port)?;
        (self.sma_port(port)?.is_up() && self.sma_port(peer)?.is_up()).then_some(peer)
    }

    /// The port at the other end of `port`'s link if both ends are ACTIVE: the only links a
    /// LID-routed SMP crosses in ibsim (a real VL15 SMP also crosses Init and Armed links).
    fn active_peer(&self, port: PortRef) -> Option<PortRef> {
        let peer = self.up_peer(port)?;
        let active = |p: PortRef| {
            self.sma_port(p)
                .is_some_and(|s| s.info.port_state == PortState::Active)
        };
        (active(port) && active(peer)).then_some(peer)
    }

    /// Link training: both ends come up in Init with the best common width and speed, and a
    /// switch at either end notes the change in SwitchInfo.PortStateChange (IBA 14.2.5.4).
    fn train(&mut self, a: PortRef, b: PortRef) {
        for p in [a, b] {
            if let Some(port) = self.sma_port_mut(p) {
                port.info.port_state = PortState::Init;
                port.info.port_phys_state = PhysPortState::LinkUp;
            }
        }
        self.renegotiate(a, b);
        self.note_state_change([a, b]);
    }

    fn renegotiate(&mut self, a: PortRef, b: PortRef) {
        let (Some(ia), Some(ib)) = (self.sma_port(a), self.sma_port(b)) else {
            return;
        };
        let (width, speed, ext) = negotiate(&ia.info, &ib.info);
        for p in [a, b] {
            if let Some(port) = self.sma_port_mut(p) {
                port.info.link_width_active = width;
                port.info.link_speed_active = speed;
                port.info.link_speed_ext_active = ext;
            }
        }
    }

    /// PortPhysicalState Disabled: the port goes Down/Disabled, its neighbour Down/Polling.
    fn disable(&mut self, port: PortRef) {
        let peer = self.topology.peer(port);
        self.count_link_downed([Some(port), peer].into_iter().flatten());
        for (p, phys) in [
            (Some(port), PhysPortState::Disabled),
            (peer, PhysPortState::Polling),
        ] {
            if let Some(state) = p.and_then(|p| self.sma_port_mut(p)) {
                state.info.port_state = PortState::Down;
                state.info.port_phys_state = phys;
            }
        }
        self.note_state_change([Some(port), peer].into_iter().flatten());
    }

    /// PortPhysicalState Polling: the port looks for its neighbour again; the link trains if
    /// the other end is not disabled.
    fn enable(&mut self, port: PortRef) {
        let peer = self.topology.peer(port).filter(|&p| {
            self.sma_port(p)
                .is_some_and(|s| s.info.port_phys_state != PhysPortState::Disabled)
        });
        match peer {
            Some(peer) => self.train(port, peer),
            None => {
                if let Some(state) = self.sma_port_mut(port) {
                    state.info.port_state = PortState::Down;
                    state.info.port_phys_state = PhysPortState::Polling;
                }
            }
        }
    }

    /// A scheduled flap takes the link down: both ends go Down and keep polling for each
    /// other, as after a cable pull; a switch at either end sets PortStateChange. An end the
    /// SM disabled stays Disabled.
    fn link_down(&mut self, port: PortRef) {
        let ends = [Some(port), self.topology.peer(port)];
        self.count_link_downed(ends.into_iter().flatten());
        for p in ends.into_iter().flatten() {
            if let Some(state) = self.sma_port_mut(p) {
                state.info.port_state = PortState::Down;
                if state.info.port_phys_state != PhysPortState::Disabled {
                    state.info.port_phys_state = PhysPortState::Polling;
                }
            }
        }
        self.note_state_change(ends.into_iter().flatten());
    }

    /// The ends among `ports` whose link is up are about to go down: their LinkDownedCounter
    /// counts it (IBA 16.1.3.5). An SM taking a port to Down to retrain it is not counted, as
    /// the link never leaves LinkUp here.
    fn count_link_downed(&mut self, ports: impl IntoIterator<Item = PortRef>) {
        for port in ports {
            if self.sma_port(port).is_some_and(sma::PortSma::is_up) {
                self.pmas.link_downed(port);
            }
        }
    }

    /// The flap ends: the link trains to Init again, unless the SM disabled an end meanwhile.
    fn link_up(&mut self, port: PortRef) {
        let polling = |p: Option<PortRef>| {
            p.and_then(|p| self.sma_port(p))
                .is_some_and(|s| s.info.port_phys_state == PhysPortState::Polling)
        };
        let peer = self.topology.peer(port);
        if polling(Some(port)) && polling(peer) {
            self.enable(port);
        }
    }

    /// A switch at any of `ports` sets SwitchInfo.PortStateChange; one that had it clear sends
    /// trap 128 (IBA 14.2.5.1: the SM clears the bit when it has seen the change, so one trap
    /// stands for every change until then).
    fn note_state_change(&mut self, ports: impl IntoIterator<Item = PortRef>) {
        for p in ports {
            let newly_set = self
                .nodes
                .get_mut(p.node.index())
                .and_then(|n| n.switch.as_mut())
                .is_some_and(|switch| !std::mem::replace(&mut switch.info.port_state_change, true));
            if newly_set {
                self.raise_link_state_trap(p.node);
            }
        }
    }

    /// Trap 128 from `switch` to the MasterSMLID of its port 0, LID-routed: sent only once the
    /// SM has given the switch a LID and told it where the SM is, and lost where no route
    /// leads there (or the switch's SMA is dead), as on a real fabric.
    fn raise_link_state_trap(&mut self, switch: NodeId) {
        let port0 = PortRef::new(switch, 0);
        let Some(info) = self.port_info(port0) else {
            return;
        };
        let (issuer, sm_lid) = (info.lid, info.master_sm_lid);
        if issuer == 0 || sm_lid == 0 || self.is_dead(switch) {
            return;
        }
        let mut way = Trace::default();
        let Some(to) = self.lid_route(port0, sm_lid, &mut way) else {
            return;
        };
        if self.dice.chance(self.models.faults.loss) {
            return;
        }
        // Counted when it arrives: where a lost trap was lost is not modelled.
        self.pmas.record(&way);
        let links = way.links();
        let tid = self.next_trap_tid;
        self.next_trap_tid += 1;
        let notice = NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Urgent,
            producer_type: NoticeRepr::PRODUCER_SWITCH,
            trap_number: NoticeRepr::TRAP_LINK_STATE_CHANGE,
            issuer_lid: issuer,
            notice_toggle: false,
            notice_count: 0,
            data_details: [0; 54],
        };
        let mut data = Attribute::Notice(notice).to_data();
        Notice::new_unchecked(&mut data[..]).set_trap128_lid_addr(issuer);
        let trap = SmpRepr {
            method: Method::Trap,
            status: Status::OK,
            transaction_id: tid,
            attribute_id: AttributeId::Notice,
            attribute_modifier: 0,
            m_key: 0,
            routing: Routing::Lid,
            data,
        };
        let mut mad = vec![0; 256];
        trap.emit(&mut Smp::new_unchecked(&mut mad[..]));
        self.unrepressed.insert((switch, tid));
        let at_ns = self.now_ns.saturating_add(self.travel_ns(switch, links));
        self.outbox.push(Trap {
            to,
            slid: issuer,
            at_ns,
            mad,
        });
    }

    /// Walks a directed route from the requester's port `origin` (IBA 14.2.2.2): the node and
    /// port it arrives at, and the path of the response, or `None` where a real fabric drops it.
    /// The links it crosses, and where it is lost, go into `trace`.
    ///
    /// The request must be outbound with HopPointer 0 and DrSLID = DrDLID = permissive: like
    /// ibsim, the emulator does not support routes with LID-routed legs. The first hop from a
    /// CA leaves by the CA's own port (the Linux kernel insists on it); only switches forward,
    /// and only over links that are physically up. ReturnPath gets each hop's ingress port, and
    /// entry 0 the SM's port, as ibsim fills it. The response arrives with D = 1 and HopPointer
    /// 0 (it walked back down to the requester).
    fn directed(
        &self,
        origin: PortRef,
        mut path: DrPath,
        trace: &mut Trace,
    ) -> Option<(Arrival, DrPath)> {
        if path.direction != Direction::Outbound
            || path.hop_pointer != 0
            || path.dr_slid != DrPath::PERMISSIVE_LID
            || path.dr_dlid != DrPath::PERMISSIVE_LID
        {
            return None;
        }
        let mut at = origin;
        path.return_path[0] = origin.port;
        for hop in 1..=usize::from(path.hop_count) {
            let egress = *path.initial_path.get(hop)?;
            let from_requester = hop == 1;
            if from_requester && !self.is_switch(at.node) && egress != origin.port {
                return None;
            }
            if !from_requester && !self.is_switch(at.node) {
                return None;
            }
            let out = PortRef::new(at.node, egress);
            if self.is_switch(at.node) && egress == 0 {
                return None;
            }
            // A switch's SMA forwards a directed-route SMP (it moves the hop pointer): a dead
            // one loses it.
            if !from_requester && self.is_dead(at.node) {
                return None;
            }
            at = self.cross_up(at, out, trace)?;
            *path.return_path.get_mut(hop)? = at.port;
        }
        path.direction = Direction::Returning;
        path.hop_pointer = 0;
        Some((at, path))
    }

    /// One directed-route hop out of `out`, a port of the node the SMP is at (it came in at
    /// `at`): the port at the other end, and the crossing in `trace`, if the link is
    /// physically up at both ends. Where it is lost, the ports count it as ibsim's do: a port
    /// the node does not have is a relay error of the ingress port, a port down a discard, and
    /// a far end down a discard and a receive error there.
    fn cross_up(&self, at: PortRef, out: PortRef, trace: &mut Trace) -> Option<PortRef> {
        let Some(port) = self.sma_port(out) else {
            trace.lose(at, Counter::RcvSwitchRelayErrors);
            return None;
        };
        let peer = self.topology.peer(out).filter(|_| port.is_up());
        let Some(peer) = peer else {
            trace.lose(out, Counter::XmitDiscards);
            return None;
        };
        if !self.sma_port(peer).is_some_and(sma::PortSma::is_up) {
            trace.lose(out, Counter::XmitDiscards);
            trace.lose(peer, Counter::RcvErrors);
            return None;
        }
        trace.cross(out, peer);
        Some(peer)
    }

    /// Where a MAD for `dlid` that is at port `from` ends: a switch forwards by its LFT (LIDs
    /// up to LinearFDBTop) and answers its own LIDs on port 0; a CA port answers its LID range
    /// and otherwise sends the MAD onto its link only if the MAD starts there. The links it
    /// crosses, and where it is lost, go into `trace`, as ibsim counts them: a switch without a
    /// route for `dlid` and a CA port that is not its destination count a relay error, a port
    /// that cannot send (its link not ACTIVE at both ends) a discard.
    fn lid_route(&self, from: PortRef, dlid: u16, trace: &mut Trace) -> Option<Arrival> {
        if dlid == 0 {
            return None;
        }
        let mut at = from;
        for _ in 0..=MAX_LID_HOPS {
            let node = self.sma(at.node)?;
            let out = if let Some(switch) = &node.switch {
                if self.owns(PortRef::new(at.node, 0), dlid) {
                    return Some(at);
                }
                let egress = (dlid <= switch.info.linear_fdb_top)
                    .then(|| switch.lft.get(usize::from(dlid)).copied())
                    .flatten()
                    .filter(|&port| port <= node.info.num_ports);
                let Some(egress) = egress else {
                    trace.lose(at, Counter::RcvSwitchRelayErrors);
                    return None;
                };
                PortRef::new(at.node, egress)
            } else if self.owns(at, dlid) {
                return Some(at);
            } else if at == from {
                at
            } else {
                trace.lose(at, Counter::RcvSwitchRelayErrors);
                return None;
            };
            // Switch port 0 has no link: an LFT that sends a MAD there discards it.
            let Some(peer) = self.active_peer(out) else {
                trace.lose(out, Counter::XmitDiscards);
                return None;
            };
            trace.cross(out, peer);
            at = peer;
        }
        None
    }

    /// Whether the end port `port` answers `lid`: its base LID with LMC (IBA 7.11.1).
    fn owns(&self, port: PortRef, lid: u16) -> bool {
        self.sma_port(port).is_some_and(|p| {
            let base = u32::from(p.info.lid);
            let lid = u32::from(lid);
            base != 0 && lid >= base && lid < base + (1 << p.info.lmc)
        })
    }
}
