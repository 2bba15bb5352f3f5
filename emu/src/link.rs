//! The link-level state of the emulated fabric: training when a link comes up, the PortInfo
//! Sets that take a port down, disable or re-enable it (a port taken down takes its neighbour
//! with it), the flaps of a [`FaultSchedule`] (and its VLArb tables rewritten, which happen on
//! the same clock), and SwitchInfo.PortStateChange.

use ibqos_fabric::PortRef;
use ibqos_mad::{
    Attribute, AttributeId, PhysPortState, PortInfoModifier, PortInfoRepr, PortState, Status,
};

use ibqos_qos::{Priority, VlArbTable};

use crate::sma::{check_port_info, negotiate};
use crate::{Arrival, Emulator, FaultSchedule, sma};

/// A scheduled change of one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduledEvent {
    at_ns: u64,
    port: PortRef,
    change: Change,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// The port's link goes up or down.
    Link { up: bool },
    /// The port holds these VLArb tables, by priority (`None`: the one it holds stays); boxed,
    /// as they are 256 bytes and most events are flaps.
    VlArb(Box<[(Priority, Option<VlArbTable>); 2]>),
}

impl Emulator {
    /// Adds a schedule: its dead nodes die at once, its flaps and VLArb rewrites happen as
    /// [`Emulator::exchange`] or [`Emulator::advance_to`] reach their times.
    pub fn schedule(&mut self, schedule: &FaultSchedule) {
        self.dead.extend(schedule.dead.iter().copied());
        self.ccas.remove_agents(&schedule.without_cc);
        for flap in &schedule.flaps {
            self.events.push(ScheduledEvent {
                at_ns: flap.down_ns,
                port: flap.port,
                change: Change::Link { up: false },
            });
            if let Some(up_ns) = flap.up_ns {
                self.events.push(ScheduledEvent {
                    at_ns: up_ns,
                    port: flap.port,
                    change: Change::Link { up: true },
                });
            }
        }
        for rewrite in &schedule.vlarbs {
            self.events.push(ScheduledEvent {
                at_ns: rewrite.at_ns,
                port: rewrite.port,
                change: Change::VlArb(Box::new([
                    (Priority::High, rewrite.high),
                    (Priority::Low, rewrite.low),
                ])),
            });
        }
        // Stable: events at the same time happen in the order the schedule lists them.
        self.events.sort_by_key(|e| e.at_ns);
    }

    /// Makes every scheduled event up to `now_ns` happen, ends the M_Key leases due by then,
    /// and moves the traffic inside the fabric on (see the `traffic` module).
    pub fn advance_to(&mut self, now_ns: u64) {
        self.expire_leases(now_ns);
        let due = self.events.partition_point(|e| e.at_ns <= now_ns);
        let events: Vec<ScheduledEvent> = self.events.drain(..due).collect();
        for event in events {
            // A trap the event raises leaves at the event's time.
            self.now_ns = self.now_ns.max(event.at_ns);
            match event.change {
                Change::Link { up: true } => self.link_up(event.port),
                Change::Link { up: false } => self.link_down(event.port),
                Change::VlArb(tables) => {
                    if let Some(port) = self.sma_port_mut(event.port) {
                        for (priority, table) in tables.iter() {
                            if let Some(table) = table {
                                port.hold_vlarb(*priority, table);
                            }
                        }
                    }
                }
            }
        }
        self.now_ns = self.now_ns.max(now_ns);
        self.run_traffic(self.now_ns);
    }

    /// The emulated time of the next scheduled event, if any is left.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.events.first().map(|e| e.at_ns)
    }

    /// PortInfo Set: the port's checks need its link, and a state change reaches the neighbour.
    pub(crate) fn set_port_info(
        &mut self,
        at: Arrival,
        modifier: u32,
        new: &PortInfoRepr,
    ) -> Result<Attribute, Status> {
        let m = PortInfoModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
        let port = if self.is_switch(at.node) {
            PortRef::new(at.node, m.port)
        } else {
            at
        };
        let held = self.sma_port(port).ok_or(Status::INVALID_VALUE)?.info;
        let peer = self.up_peer(port);
        let peer_state = peer
            .and_then(|p| self.sma_port(p))
            .map(|p| p.info.port_state);
        let stored = check_port_info(&held, new, peer_state)?;
        let retrain = new.port_state == PortState::Down;
        if let Some(p) = self.sma_port_mut(port) {
            p.info = stored;
            p.client_reregistrations += u32::from(new.client_reregister);
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
    pub(crate) fn up_peer(&self, port: PortRef) -> Option<PortRef> {
        let peer = self.topology.peer(port)?;
        (self.sma_port(port)?.is_up() && self.sma_port(peer)?.is_up()).then_some(peer)
    }

    /// The port at the other end of `port`'s link if both ends are ACTIVE: the only links a
    /// LID-routed SMP crosses in ibsim (a real VL15 SMP also crosses Init and Armed links).
    pub(crate) fn active_peer(&self, port: PortRef) -> Option<PortRef> {
        let peer = self.up_peer(port)?;
        let active = |p: PortRef| {
            self.sma_port(p)
                .is_some_and(|s| s.info.port_state == PortState::Active)
        };
        (active(port) && active(peer)).then_some(peer)
    }

    /// Link training: both ends come up in Init with the best common width and speed, and a
    /// switch at either end notes the change in SwitchInfo.PortStateChange (IBA 14.2.5.4).
    pub(crate) fn train(&mut self, a: PortRef, b: PortRef) {
        for p in [a, b] {
            if let Some(port) = self.sma_port_mut(p) {
                port.info.port_state = PortState::Init;
                port.info.port_phys_state = PhysPortState::LinkUp;
            }
        }
        self.renegotiate(a, b);
        self.note_state_change([a, b]);
    }

    pub(crate) fn renegotiate(&mut self, a: PortRef, b: PortRef) {
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
    pub(crate) fn disable(&mut self, port: PortRef) {
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
    pub(crate) fn enable(&mut self, port: PortRef) {
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
    pub(crate) fn link_down(&mut self, port: PortRef) {
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
    pub(crate) fn count_link_downed(&mut self, ports: impl IntoIterator<Item = PortRef>) {
        for port in ports {
            if self.sma_port(port).is_some_and(sma::PortSma::is_up) {
                self.pmas.link_downed(port);
            }
        }
    }

    /// The flap ends: the link trains to Init again, unless the SM disabled an end meanwhile.
    pub(crate) fn link_up(&mut self, port: PortRef) {
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
    pub(crate) fn note_state_change(&mut self, ports: impl IntoIterator<Item = PortRef>) {
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
}
