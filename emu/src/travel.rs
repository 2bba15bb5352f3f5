//! How MADs travel the emulated fabric: directed routes as IBA 14.2.2 specifies them, LID
//! routes through the linear forwarding tables the SM programmed (as ibsim routes GMPs), packets
//! to a multicast LID copied along the multicast forwarding tables, the
//! responses' way back, and the time all of it takes. Every link crossed, and where a MAD is
//! lost, goes into a [`Trace`] for the port counters.

use ibqos_fabric::{NodeId, NodeKind, PortRef};
use ibqos_mad::{Direction, DrPath, MftModifier, Routing, Smp, SmpRepr};

use crate::perf::{Carrier, Counter, Trace};
use crate::{Arrival, Emulator, sma};

/// The most switches a LID-routed SMP crosses before the emulator calls it a loop (ibsim: 16;
/// a directed route may have 63 hops, so a LID route is allowed as many).
const MAX_LID_HOPS: usize = DrPath::MAX_HOPS as usize;

impl Emulator {
    /// How long an agent's answer takes to reach its requester: `links` crossed in all and the
    /// agent of `node` at work (a PMA is taken to be as quick as the node's SMA).
    pub(crate) fn travel_ns(&self, node: NodeId, links: u64) -> u64 {
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
        let mut trace = Trace::new(Carrier::of(mad));
        let at = match trace.carrier() {
            Carrier::Smp => {
                let smp = SmpRepr::parse_bytes(mad).ok()?;
                self.route(origin, &smp, dlid, &mut trace).map(|(at, _)| at)
            }
            Carrier::Gmp => self.gmp_route(origin, dlid, &mut trace),
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
                let mut out = Trace::new(Carrier::Smp);
                let reached = self.directed(requester, path, &mut out).map(|(at, _)| at);
                let arrived = reached == Some(responder);
                if arrived {
                    self.pmas.record(&out.reversed());
                }
                arrived
            }
            None => {
                let mut trace = Trace::new(Carrier::of(mad));
                let reached = self.gmp_route(responder, dlid, &mut trace);
                self.pmas.record(&trace);
                reached.is_some_and(|at| at.node == requester.node)
            }
        }
    }

    /// Where `request` from `origin` arrives and the routing its response carries; `None`
    /// where the fabric drops it (and for an origin where no client can be: an external switch
    /// port). The way there goes into `trace`.
    pub(crate) fn route(
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
    pub(crate) fn gmp_route(
        &self,
        origin: PortRef,
        dlid: Option<u16>,
        trace: &mut Trace,
    ) -> Option<Arrival> {
        self.check_origin(origin)?;
        match dlid {
            Some(lid) => self.lid_route(origin, lid, trace),
            None => Some(origin),
        }
    }

    /// `Some` for a port a client can send from: a CA or router port, or switch port 0.
    pub(crate) fn check_origin(&self, origin: PortRef) -> Option<()> {
        if self.is_switch(origin.node) && origin.port != 0 {
            return None;
        }
        self.sma_port(origin).map(|_| ())
    }

    /// The response of a LID-routed request answered at `at` goes back to the requester's LID,
    /// counted on its way as `carrier` travels. Returns the links it crosses. `None` where it does not reach the
    /// requester's node: no route, or a requester without a LID. The request was answered all the
    /// same, as in ibsim and on a real fabric.
    pub(crate) fn reply_by_lid(
        &mut self,
        origin: PortRef,
        at: Arrival,
        carrier: Carrier,
    ) -> Option<u64> {
        if at == origin {
            return Some(0);
        }
        let requester_lid = self.sma_port(origin)?.info.lid;
        let mut back = Trace::new(carrier);
        let reached = self.lid_route(at, requester_lid, &mut back);
        self.pmas.record(&back);
        reached
            .filter(|back| back.node == origin.node)
            .map(|_| back.links())
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
    pub(crate) fn directed(
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
    pub(crate) fn cross_up(&self, at: PortRef, out: PortRef, trace: &mut Trace) -> Option<PortRef> {
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
        trace.cross(out, peer, self.hop_vl(trace.carrier(), at, out));
        Some(peer)
    }

    /// Where a MAD for `dlid` that is at port `from` ends: a switch forwards by its LFT (LIDs
    /// up to LinearFDBTop) and answers its own LIDs on port 0; a CA port answers its LID range
    /// and otherwise sends the MAD onto its link only if the MAD starts there. The links it
    /// crosses, and where it is lost, go into `trace`, as ibsim counts them: a switch without a
    /// route for `dlid` and a CA port that is not its destination count a relay error, a port
    /// that cannot send (its link not ACTIVE at both ends) a discard.
    pub(crate) fn lid_route(&self, from: PortRef, dlid: u16, trace: &mut Trace) -> Option<Arrival> {
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
            trace.cross(out, peer, self.hop_vl(trace.carrier(), at, out));
            at = peer;
        }
        None
    }

    /// The end ports a packet for multicast LID `mlid` sent by end port `from` reaches, as the
    /// switches forward it (IBA 18.2.4.3.2). Each switch copies it to every port its
    /// MulticastForwardingTable entry for the MLID names, but the one it came in by. Port 0
    /// delivers it to the switch itself. A port whose link is not ACTIVE at both ends drops its
    /// copy. Each end port comes once, in the order the copies arrive; never `from` itself.
    pub fn multicast_targets(&self, from: PortRef, mlid: u16) -> Vec<PortRef> {
        let mut reached = Vec::new();
        if MftModifier::containing(mlid, 0).is_none() {
            return reached;
        }
        let Some(first) = self.active_peer(from) else {
            return reached;
        };
        // Switches entered, by the port a copy came in by; a tree never enters one twice, a
        // loop would.
        let mut entered = std::collections::BTreeSet::new();
        let mut queue = std::collections::VecDeque::from([first]);
        while let Some(at) = queue.pop_front() {
            let Some(ports) = self.mft_ports(at.node, mlid) else {
                // An end port: the copy is delivered.
                if at != from && !reached.contains(&at) {
                    reached.push(at);
                }
                continue;
            };
            if !entered.insert(at.node) {
                continue;
            }
            for port in ports.into_iter().filter(|&p| p != at.port) {
                let out = PortRef::new(at.node, port);
                if port == 0 {
                    reached.push(out);
                } else if let Some(peer) = self.active_peer(out) {
                    queue.push_back(peer);
                }
            }
        }
        reached
    }

    /// The VL a MAD travelling as `carrier` takes out of port `out`, having come in at `at`
    /// (where it started, on a CA or at a switch's port 0): the SL2VL table of that pair of
    /// ports decides. A GMP whose SL the table sends to VL 15 would be dropped by a real port;
    /// here it travels on and counts on VL 15, since ibsim routes GMPs with no VL at all.
    fn hop_vl(&self, carrier: Carrier, at: PortRef, out: PortRef) -> ibqos_qos::Vl {
        carrier.vl(self.sl2vl(at, out.port))
    }

    /// Whether the end port `port` answers `lid`: its base LID with LMC (IBA 7.11.1).
    pub(crate) fn owns(&self, port: PortRef, lid: u16) -> bool {
        self.sma_port(port).is_some_and(|p| {
            let base = u32::from(p.info.lid);
            let lid = u32::from(lid);
            base != 0 && lid >= base && lid < base + (1 << p.info.lmc)
        })
    }
}
