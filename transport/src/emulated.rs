//! The emulated fabric in the same process: every MAD the SM sends is answered by
//! [`ibqos_emu::Emulator::exchange`], and each answer waits in a queue until the
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
//! when a link changes) arrive the same way as responses. Traffic inside the fabric
//! ([`Emulator::set_traffic`]) is stepped with the clock: in virtual time through every wait,
//! in real time a step per turn of the wait, so that a slow simulation lags rather than
//! holding up the SM.

use std::time::{Duration, Instant};

use ibqos_emu::{DueQueue, Emulator, Request, attach_port, load_topology, precise_timers};
use ibqos_fabric::PortRef;
use ibqos_mad::DrPath;

use super::{Address, Incoming, LocalPort, Outgoing, Peer, Transport, TransportError};

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
    /// The SM's port.
    port: PortRef,
    /// Responses and traps on their way, by the emulated ns they arrive.
    responses: DueQueue<Incoming>,
    clock: Clock,
    local: LocalPort,
}

impl EmulatedTransport {
    /// The SM at `port` (where the `attach` rule puts a client), on real time from now (this
    /// thread then sleeps with [`precise_timers`]).
    pub fn new(emulator: Emulator, port: PortRef) -> EmulatedTransport {
        precise_timers();
        EmulatedTransport::with_clock(emulator, port, Clock::Real(Instant::now()))
    }

    /// The SM at `port`, on virtual time from 0.
    pub fn virtual_time(emulator: Emulator, port: PortRef) -> EmulatedTransport {
        let clock = Clock::Virtual {
            origin: Instant::now(),
            ns: 0,
        };
        EmulatedTransport::with_clock(emulator, port, clock)
    }

    /// The SM claims its port: the port advertises CapabilityMask.IsSM, as one does once an SM
    /// opens it.
    fn with_clock(mut emulator: Emulator, port: PortRef, clock: Clock) -> EmulatedTransport {
        emulator.set_is_sm(port, true);
        let local = local_port(&emulator, port);
        EmulatedTransport {
            emulator,
            port,
            responses: DueQueue::default(),
            clock,
            local,
        }
    }

    /// The fabric `topology` names (a built-in fabric's name, else a net file's path) with the
    /// SM at `node` (a node name or NodeDescription, as ibsim takes it), or where a client naming
    /// none attaches.
    pub fn open(topology: &str, node: Option<&str>) -> Result<EmulatedTransport, TransportError> {
        let error = |reason: String| TransportError::Emulated {
            topology: topology.to_owned(),
            reason,
        };
        let net = load_topology(topology).map_err(|e| error(e.to_string()))?;
        let port = attach_port(&net.topology, node).map_err(|e| error(e.to_string()))?;
        let emulator = Emulator::new(net.topology).map_err(|e| error(e.to_string()))?;
        Ok(EmulatedTransport::new(emulator, port))
    }

    /// The SM's port.
    pub fn port(&self) -> PortRef {
        self.port
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
            let next_event = self.next_fabric_ns();
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
        for trap in self.emulator.take_traps() {
            if trap.to == self.port {
                let incoming = Incoming::Mad {
                    mad: trap.mad,
                    from: Peer::lid(trap.slid),
                };
                self.responses.push(trap.at_ns, incoming);
            }
        }
    }

    /// When the fabric next does something by itself: a scheduled event, and in virtual time
    /// the next step of its traffic. In real time the traffic is stepped apart
    /// ([`EmulatedTransport::step_traffic`]), a step per wait, so that a simulation slower than
    /// the clock never holds the SM's MADs up.
    fn next_fabric_ns(&self) -> Option<u64> {
        let traffic = match self.clock {
            Clock::Virtual { .. } => self.emulator.next_traffic_ns(),
            Clock::Real(_) => None,
        };
        [self.emulator.next_event_ns(), traffic]
            .into_iter()
            .flatten()
            .min()
    }

    /// In real time, one step of the fabric's traffic if one is due by `now_ns`; true if it
    /// stepped.
    fn step_traffic(&mut self, now_ns: u64) -> bool {
        let due = self
            .emulator
            .next_traffic_ns()
            .is_some_and(|at| at <= now_ns);
        if due {
            self.emulator.advance_to(now_ns);
            self.collect_traps();
        }
        due
    }

    /// When something may next reach the SM or the fabric has something to do: its next
    /// response, the fabric's next event, or its traffic's next step.
    fn next_wake_ns(&self) -> Option<u64> {
        [
            self.responses.next_ns(),
            self.emulator.next_event_ns(),
            self.emulator.next_traffic_ns(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// The emulated fabric's `port` as a transport's local port.
pub(crate) fn local_port(emulator: &Emulator, port: PortRef) -> LocalPort {
    let topology = emulator.topology();
    LocalPort {
        port_num: port.port,
        lid: emulator.port_info(port).map_or(0, |p| p.lid),
        port_guid: topology.port(port).map_or(0, |p| p.guid),
        node_guid: topology.node(port.node).map_or(0, |n| n.guid),
    }
}

impl Transport for EmulatedTransport {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        let (dlid, slid) = match out.address {
            Address::Directed => (None, DrPath::PERMISSIVE_LID),
            Address::Lid(lid) | Address::Peer(Peer { lid, .. }) => (Some(lid), lid),
        };
        let request = Request {
            origin: self.port,
            at_ns: self.now_ns(),
            dlid,
            mad: &out.mad,
        };
        if let Some(reply) = self.emulator.exchange(request) {
            let mad = reply.mad;
            self.responses.push(
                reply.at_ns,
                Incoming::Mad {
                    mad,
                    from: Peer::lid(slid),
                },
            );
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
                    if self.step_traffic(now) {
                        continue;
                    }
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
