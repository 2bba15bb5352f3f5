//! The emulated fabric in the same process: every MAD the SM sends is answered by
//! [`ibqos_emu::Emulator::handle_at`], and each answer waits in a queue until the
//! emulated time it reaches the SM.
//!
//! Two clocks. [`Clock::Real`] (what `ibqos sm` uses) makes emulated time real time since the
//! transport opened: a response is held until then, so the SM lives with the fabric's
//! latency, and scheduled flaps happen at their wall-clock times. [`Clock::Virtual`] (for
//! tests) never sleeps: time jumps to the next response, or to the end of the wait when none
//! is due, and the SM's timers run on it too ([`Transport::now`]), so a run depends only on
//! the seed, not on the machine's speed, and a lost MAD costs no real time. A request the
//! emulator drops (a bad route, a loss, a dead node) gets nothing back, as on a real fabric,
//! and the SM's own timeout deals with it. Traps the fabric sends to the SM's port (trap 128
//! when a link changes) arrive the same way as responses.

use std::time::{Duration, Instant};

use ibqos_emu::{DueQueue, Emulator, load_topology, node_named, precise_timers};
use ibqos_fabric::{NodeKind, PortRef, Topology};
use ibqos_mad::DrPath;

use super::{Address, Incoming, LocalPort, Outgoing, Transport, TransportError};

/// How emulated time passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Emulated ns are real ns since this instant.
    Real(Instant),
    /// Emulated time is `ns` past `origin`, moved on by the transport alone.
    Virtual { origin: Instant, ns: u64 },
}

/// An SM's port on an emulated fabric.
#[derive(Debug)]
pub struct EmulatedTransport {
    emulator: Emulator,
    /// Responses and traps on their way, by the emulated ns they arrive.
    responses: DueQueue<Incoming>,
    clock: Clock,
    local: LocalPort,
}

impl EmulatedTransport {
    /// The SM at the emulator's attach port, on real time from now (this thread then sleeps
    /// with [`precise_timers`]).
    pub fn new(emulator: Emulator) -> EmulatedTransport {
        precise_timers();
        EmulatedTransport::with_clock(emulator, Clock::Real(Instant::now()))
    }

    /// The SM at the emulator's attach port, on virtual time from 0.
    pub fn virtual_time(emulator: Emulator) -> EmulatedTransport {
        let clock = Clock::Virtual {
            origin: Instant::now(),
            ns: 0,
        };
        EmulatedTransport::with_clock(emulator, clock)
    }

    fn with_clock(emulator: Emulator, clock: Clock) -> EmulatedTransport {
        let attach = emulator.attach();
        let topology = emulator.topology();
        let local = LocalPort {
            port_num: attach.port,
            lid: emulator.port_info(attach).map_or(0, |p| p.lid),
            port_guid: topology.port(attach).map_or(0, |p| p.guid),
            node_guid: topology.node(attach.node).map_or(0, |n| n.guid),
        };
        EmulatedTransport {
            emulator,
            responses: DueQueue::default(),
            clock,
            local,
        }
    }

    /// The fabric `topology` names (a built-in fabric's name, else a net file's path) with the
    /// SM at `node` (a node name or NodeDescription, as ibsim takes it), or at the first CA.
    pub fn open(topology: &str, node: Option<&str>) -> Result<EmulatedTransport, TransportError> {
        let error = |reason: String| TransportError::Emulated {
            topology: topology.to_owned(),
            reason,
        };
        let net = load_topology(topology).map_err(|e| error(e.to_string()))?;
        let attach = attach_port(&net.topology, node).map_err(error)?;
        let emulator = Emulator::new(net.topology, attach).map_err(|e| error(e.to_string()))?;
        Ok(EmulatedTransport::new(emulator))
    }

    /// The emulated fabric, for reading back what the SM programmed.
    pub fn emulator(&self) -> &Emulator {
        &self.emulator
    }

    /// The emulated fabric, to change its models or schedule.
    pub fn emulator_mut(&mut self) -> &mut Emulator {
        &mut self.emulator
    }

    /// The emulated fabric, taken back.
    pub fn into_emulator(self) -> Emulator {
        self.emulator
    }

    /// The emulated time now, in ns.
    pub fn now_ns(&self) -> u64 {
        match self.clock {
            Clock::Real(start) => u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Clock::Virtual { ns, .. } => ns,
        }
    }

    /// What reaches the SM next by emulated time `by_ns`: the earliest of a response and a
    /// trap, after the fabric events due before it have happened (a flap raises its trap at
    /// its own time). In virtual time the clock moves on to its arrival.
    fn arrived_by(&mut self, by_ns: u64) -> Option<Incoming> {
        loop {
            let next_event = self.emulator.next_event_ns();
            match (next_event, self.responses.next_ns()) {
                (Some(event), response) if event <= by_ns && response.is_none_or(|r| event < r) => {
                    self.emulator.advance_to(event);
                    self.collect_traps();
                }
                _ => break,
            }
        }
        let (at_ns, incoming) = self.responses.pop_due(by_ns)?;
        if let Clock::Virtual { ns, .. } = &mut self.clock {
            *ns = (*ns).max(at_ns);
        }
        Some(incoming)
    }

    /// The traps the fabric raised for the SM's port join the responses on their way; traps for
    /// other ports have no one to go to.
    fn collect_traps(&mut self) {
        let attach = self.emulator.attach();
        for trap in self.emulator.take_traps() {
            if trap.to == attach {
                let incoming = Incoming::Mad {
                    mad: trap.mad,
                    slid: trap.slid,
                };
                self.responses.push(trap.at_ns, incoming);
            }
        }
    }

    /// When something may next reach the SM: its next response or the fabric's next event.
    fn next_wake_ns(&self) -> Option<u64> {
        [self.responses.next_ns(), self.emulator.next_event_ns()]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Where the SM attaches: a named switch at port 0, a named CA or router at its first linked
/// port (else its first port); unnamed, the first CA's.
pub fn attach_port(topology: &Topology, node: Option<&str>) -> Result<PortRef, String> {
    let id = match node {
        Some(name) => {
            node_named(topology, name).ok_or_else(|| format!("no node named `{name}`"))?
        }
        None => topology
            .cas()
            .next()
            .map(|(id, _)| id)
            .ok_or("the fabric has no CA to attach the SM to; name a node with @NODE")?,
    };
    let Some(n) = topology.node(id) else {
        return Err(format!("{id} does not exist"));
    };
    if n.kind == NodeKind::Switch {
        return Ok(PortRef::new(id, 0));
    }
    n.existing_ports()
        .find(|(_, p)| p.peer.is_some())
        .or_else(|| n.existing_ports().next())
        .map(|(number, _)| PortRef::new(id, number))
        .ok_or_else(|| format!("{} has no port", n.name))
}

impl Transport for EmulatedTransport {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        let (dlid, slid) = match out.address {
            Address::Directed => (None, DrPath::PERMISSIVE_LID),
            Address::Lid(lid) => (Some(lid), lid),
        };
        let now = self.now_ns();
        if let Some(delivery) = self.emulator.handle_at(now, &out.mad, dlid) {
            let mad = delivery.mad;
            self.responses
                .push(delivery.at_ns, Incoming::Mad { mad, slid });
        }
        // A Set may change a link, and the switch at its end then sends trap 128.
        self.collect_traps();
        Ok(())
    }

    /// The first response or trap to arrive within `timeout`, waiting for it as a port would;
    /// in virtual time without waiting.
    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        let timeout_ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        let deadline = self.now_ns().saturating_add(timeout_ns);
        loop {
            if let Some(next) = self.arrived_by(match self.clock {
                Clock::Real(_) => self.now_ns(),
                Clock::Virtual { .. } => deadline,
            }) {
                return Ok(Some(next));
            }
            let now = self.now_ns();
            if now >= deadline {
                return Ok(None);
            }
            match &mut self.clock {
                Clock::Real(_) => {
                    let wake = self.next_wake_ns().map_or(deadline, |at| at.min(deadline));
                    std::thread::sleep(Duration::from_nanos(wake.saturating_sub(now)));
                }
                Clock::Virtual { ns, .. } => {
                    *ns = deadline;
                    return Ok(None);
                }
            }
        }
    }

    fn local_port(&self) -> LocalPort {
        self.local
    }

    fn now(&self) -> Instant {
        match self.clock {
            Clock::Real(_) => Instant::now(),
            Clock::Virtual { origin, ns } => origin + Duration::from_nanos(ns),
        }
    }
}
