//! Several SMs on one emulated fabric, in one process and in virtual time: the [`Switchboard`] that
//! `ibqos fabric serve` puts behind ibsim's sockets, without the sockets. Each SM is a client of
//! the switchboard, attached at its node's port, which advertises CapabilityMask.IsSM while it is
//! attached. What an SM sends goes through the switchboard as an ibsim client's datagram, so the
//! rules are ibsim's. The SMAs answer their attributes. SMInfo, and every request no SMA answers,
//! goes to the SM attached at the port it reaches, and that SM's answer goes back across the fabric
//! to the requester. Traps go to the SM at their MasterSMLID.
//!
//! The caller drives the SMs (sans-IO managers) and the clock: [`SharedFabric::advance_to`]
//! moves emulated time on, never back; [`SharedFabric::recv`] hands out what has arrived by
//! then, to whichever SM it is for, in the order it arrives. Nothing here reads a clock: a run
//! depends only on what is sent and when.

use std::time::{Duration, Instant};

use ibqos_emu::serve::{DatagramDelivery, Switchboard};
use ibqos_emu::{DueQueue, Emulator};
use ibqos_fabric::Topology;

use crate::emulated::local_port;
use crate::ibsim::{incoming, request_datagram};
use crate::{Incoming, LocalPort, Outgoing, TransportError};

/// An emulated fabric that several SMs attach to, in virtual time.
#[derive(Debug)]
pub struct SharedFabric {
    board: Switchboard,
    /// Datagrams on their way to a client, by the emulated ns they arrive.
    pending: DueQueue<DatagramDelivery>,
    /// Emulated time 0.
    origin: Instant,
    /// Emulated time now, in ns.
    ns: u64,
}

impl SharedFabric {
    /// The fabric of `topology` in its power-on state, with no SM attached, at emulated time 0
    /// (which [`SharedFabric::now`] gives as `origin`).
    pub fn new(topology: Topology, origin: Instant) -> Result<SharedFabric, TransportError> {
        let error = |reason: String| TransportError::Emulated {
            topology: "shared".into(),
            reason,
        };
        Ok(SharedFabric {
            board: Switchboard::new(topology, None).map_err(|e| error(e.to_string()))?,
            pending: DueQueue::default(),
            origin,
            ns: 0,
        })
    }

    /// Attaches an SM at `node` (a node's id or NodeDescription; port 1 of a CA, port 0 of a
    /// switch), whose port advertises IsSM from now on: its client number and its port.
    /// Refused for an unknown node and for a node where an SM is attached already.
    pub fn attach_sm(&mut self, node: &str) -> Result<(usize, LocalPort), TransportError> {
        let refused = |reason: &str| TransportError::Emulated {
            topology: "shared".into(),
            reason: format!("no SM attaches at `{node}`: {reason}"),
        };
        let client = self
            .board
            .attach(Some(node), 0, true)
            .ok_or_else(|| refused("no such node, or an SM is attached there"))?;
        let port = self
            .board
            .client_port(client)
            .ok_or_else(|| refused("not attached"))?;
        Ok((client, local_port(self.board.emulator(), port)))
    }

    /// The SM `client` goes: its port no longer advertises IsSM, and what was on its way to it
    /// is lost.
    pub fn detach(&mut self, client: usize) {
        self.board.disconnect(client);
        self.pending.retain(|delivery| delivery.client != client);
    }

    /// `client` sends `out` now.
    pub fn send(&mut self, client: usize, out: &Outgoing) {
        let datagram = request_datagram(out);
        if let Some(delivery) = self.board.request(client, &datagram, self.ns) {
            self.pending.push(delivery.at_ns, delivery);
        }
        // A Set may change a link, and the switch at its end then sends trap 128.
        self.collect_traps();
    }

    /// The next thing to arrive by now, and the client it is for: after the fabric's events due
    /// before it have happened (a flap raises its trap at its own time).
    pub fn recv(&mut self) -> Option<(usize, Incoming)> {
        loop {
            let event = self.board.emulator().next_event_ns();
            match (event, self.pending.next_ns()) {
                (Some(event), pending)
                    if event <= self.ns && pending.is_none_or(|at| event < at) =>
                {
                    self.board.advance_to(event);
                    self.collect_traps();
                }
                _ => break,
            }
        }
        let (_, delivery) = self.pending.pop_due(self.ns)?;
        Some((delivery.client, incoming(&delivery.datagram)))
    }

    /// When something next arrives or happens on the fabric, if anything is on its way.
    pub fn next_due(&self) -> Option<Instant> {
        [
            self.pending.next_ns(),
            self.board.emulator().next_event_ns(),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|ns| self.at(ns))
    }

    /// Emulated time moves on to `to` (not back).
    pub fn advance_to(&mut self, to: Instant) {
        let ns = to.saturating_duration_since(self.origin).as_nanos();
        self.ns = self.ns.max(u64::try_from(ns).unwrap_or(u64::MAX));
    }

    /// The emulated time now.
    pub fn now(&self) -> Instant {
        self.at(self.ns)
    }

    /// The emulated fabric, for reading back what the SMs programmed.
    pub fn emulator(&self) -> &Emulator {
        self.board.emulator()
    }

    /// The emulated fabric, to change its models or schedule.
    pub fn emulator_mut(&mut self) -> &mut Emulator {
        self.board.emulator_mut()
    }

    fn at(&self, ns: u64) -> Instant {
        self.origin + Duration::from_nanos(ns)
    }

    /// The traps the fabric raised join what is on its way; a trap with no SM at its
    /// MasterSMLID is lost, as on ibsim.
    fn collect_traps(&mut self) {
        for trap in self.board.take_traps() {
            self.pending.push(trap.at_ns, trap);
        }
    }
}

#[cfg(test)]
mod tests {
    use ibqos_emu::load_topology;
    use ibqos_exchange::smp::answer;
    use ibqos_fabric::PortRef;
    use ibqos_mad::{
        AttributeId, CapabilityMask, DrPath, Method, Routing, SmInfo, SmInfoRepr, SmState, SmpRepr,
        Status,
    };

    use super::*;
    use ibqos_exchange::Transmit;

    fn is_sm(fabric: &SharedFabric, node: &str) -> bool {
        let emulator = fabric.emulator();
        let id = emulator.topology().node_by_name(node).unwrap();
        emulator
            .port_info(PortRef::new(id, 1))
            .unwrap()
            .capability_mask
            .contains(CapabilityMask::IS_SM)
    }

    /// SubnGet(SMInfo) from H1 to H2 of two-switch: out of H1's port, into S1, out of its
    /// port 2.
    fn sminfo_get_to_h2(tid: u64) -> Outgoing {
        let route = Routing::Directed(DrPath::request(&[1, 2]).unwrap());
        let smp = SmpRepr::get(AttributeId::SmInfo, 0, tid, route);
        Outgoing::from(&Transmit {
            mad: smp,
            dlid: None,
        })
    }

    #[test]
    fn sminfo_to_a_port_with_an_sm_reaches_that_sm_and_its_answer_comes_back() {
        let topology = load_topology("two-switch").unwrap().topology;
        let mut fabric = SharedFabric::new(topology, Instant::now()).unwrap();
        let (asker, _) = fabric.attach_sm("H1").unwrap();
        let (answerer, port) = fabric.attach_sm("H2").unwrap();
        assert!(is_sm(&fabric, "H1") && is_sm(&fabric, "H2") && !is_sm(&fabric, "H3"));
        assert!(fabric.attach_sm("H2").is_err(), "one SM per node");

        fabric.send(asker, &sminfo_get_to_h2(0x8000_0042));
        let Some((client, Incoming::Mad { mad, from })) = fabric.recv() else {
            panic!("the Get did not reach H2's SM");
        };
        assert_eq!(client, answerer);
        let request = SmpRepr::parse_bytes(&mad).unwrap();
        assert_eq!(
            (request.method, request.attribute_id),
            (Method::Get, AttributeId::SmInfo)
        );
        // H2's SM answers with its SMInfo, as an SM's responder does.
        let own = SmInfoRepr {
            guid: port.port_guid,
            sm_key: 0,
            act_count: 0,
            priority: 0,
            sm_state: SmState::Discovering,
        };
        let mut data = [0; 64];
        own.emit(&mut SmInfo::new_unchecked(&mut data[..]));
        fabric.send(answerer, &answer(request, from.lid, Status::OK, data));
        let Some((client, Incoming::Mad { mad, .. })) = fabric.recv() else {
            panic!("the answer did not come back to H1's SM");
        };
        assert_eq!(client, asker);
        let answer = SmpRepr::parse_bytes(&mad).unwrap();
        assert_eq!(answer.method, Method::GetResp);
        assert_eq!(answer.transaction_id as u32, 0x8000_0042);
        let info = SmInfoRepr::parse(&SmInfo::new_unchecked(&answer.data[..])).unwrap();
        assert_eq!(
            (info.guid, info.sm_state),
            (port.port_guid, SmState::Discovering)
        );

        // Detached, the SM's port no longer claims IsSM, and a Get there comes back undelivered.
        fabric.detach(answerer);
        assert!(!is_sm(&fabric, "H2"));
        fabric.send(asker, &sminfo_get_to_h2(0x8000_0043));
        assert!(matches!(
            fabric.recv(),
            Some((client, Incoming::Dropped { .. })) if client == asker
        ));
        assert_eq!(fabric.recv(), None);
    }

    #[test]
    fn what_is_on_its_way_to_a_detached_sm_is_lost() {
        let topology = load_topology("two-switch").unwrap().topology;
        let mut fabric = SharedFabric::new(topology, Instant::now()).unwrap();
        let (asker, _) = fabric.attach_sm("H1").unwrap();
        let (answerer, _) = fabric.attach_sm("H2").unwrap();
        fabric.send(asker, &sminfo_get_to_h2(1));
        fabric.detach(answerer);
        // Attached again, the new SM gets nothing meant for the old one.
        let (again, _) = fabric.attach_sm("H2").unwrap();
        assert_eq!(again, answerer, "the client number is reused");
        assert_eq!(fabric.recv(), None);
    }
}
