//! The emulated fabric in the same process: every MAD the SM sends is answered at once by
//! [`ibqos_fabric::emu::Emulator`], and the answers wait in a queue for `recv`.
//!
//! Deterministic: the same requests in the same order give the same responses. A request the
//! emulator drops (a bad directed route, no LID route) gets nothing back, as on a real fabric,
//! and the SM's own timeout deals with it.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use ibqos_fabric::emu::{Emulator, builtin_topology};
use ibqos_fabric::netfile::{NetFile, parse_net_file, parse_net_str};
use ibqos_fabric::{NodeKind, PortRef, Topology};
use ibqos_mad::DrPath;

use super::{Address, Incoming, LocalPort, Outgoing, Transport, TransportError};

/// An SM's port on an emulated fabric.
#[derive(Debug)]
pub struct EmulatedTransport {
    emulator: Emulator,
    responses: VecDeque<Incoming>,
    local: LocalPort,
}

impl EmulatedTransport {
    /// The SM at the emulator's attach port.
    pub fn new(emulator: Emulator) -> EmulatedTransport {
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
            responses: VecDeque::new(),
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
        let net: NetFile = match builtin_topology(topology) {
            Some(text) => parse_net_str(text),
            None => parse_net_file(Path::new(topology)),
        }
        .map_err(|e| error(e.to_string()))?;
        let attach = attach_port(&net.topology, node).map_err(error)?;
        let emulator = Emulator::new(net.topology, attach).map_err(|e| error(e.to_string()))?;
        Ok(EmulatedTransport::new(emulator))
    }

    /// The emulated fabric, for reading back what the SM programmed.
    pub fn emulator(&self) -> &Emulator {
        &self.emulator
    }

    /// The emulated fabric, taken back.
    pub fn into_emulator(self) -> Emulator {
        self.emulator
    }
}

/// Where the SM attaches: a named switch at port 0, a named CA or router at its first linked
/// port (else its first port); unnamed, the first CA's.
fn attach_port(topology: &Topology, node: Option<&str>) -> Result<PortRef, String> {
    let id = match node {
        Some(name) => topology
            .node_by_name(name)
            .or_else(|| {
                topology
                    .nodes()
                    .find(|(_, n)| n.description == name)
                    .map(|(id, _)| id)
            })
            .ok_or_else(|| format!("no node named `{name}`"))?,
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
        if let Some(mad) = self.emulator.handle(&out.mad, dlid) {
            self.responses.push_back(Incoming::Mad { mad, slid });
        }
        Ok(())
    }

    /// A queued response at once; with none queued nothing can arrive, so it waits out the
    /// timeout as a real port would.
    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        let next = self.responses.pop_front();
        if next.is_none() {
            std::thread::sleep(timeout);
        }
        Ok(next)
    }

    fn local_port(&self) -> LocalPort {
        self.local
    }
}
