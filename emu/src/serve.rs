//! The emulated fabric behind ibsim 0.10's socket protocol, so that programs written for ibsim
//! (OpenSM and infiniband-diags under `libumad2sim.so`, `ibqos sm --fabric ibsim:NAME@NODE`) run
//! against an [`Emulator`] unchanged.
//!
//! The protocol (ibsim 0.10: `ibsim/ibsim.c:119-160`, `umad2sim/sim_client.c:235-267`, the
//! structs in `include/ibsim.h:64-96`, declared as [`ibqos_mad::ibsim`]'s datagrams): abstract
//! AF_UNIX datagram sockets `\0NAME:ctl\0` (control) and `\0NAME:out0\0` ... `\0NAME:out9\0`
//! (data of client 0..9); the trailing NUL is part of each name. A client binds `NAME:ctl<pid>`
//! and `NAME:in<pid>`, sends CONNECT (80-byte `struct sim_ctl`, host byte order) and then
//! exchanges 288-byte `struct sim_request` datagrams with `NAME:out<client>`.
//!
//! [`Switchboard`] is the protocol without I/O (what each datagram causes), [`Server`] moves
//! datagrams between it and the sockets in one single-threaded `poll` loop. Both are
//! deterministic: the same datagrams in the same order give the same bytes.
//!
//! Clients attach where ibsim attaches them (the `attach` module's rule): at the node CONNECT
//! names (`SIM_HOST`, by id or NodeDescription), port 1 of a CA or port 0 of a switch; a CONNECT
//! naming no node attaches at the server's default port (`--attach`, else the first CA). SMPs
//! leave from the client's own port, SMInfo and the other attributes no SMA handles go to the
//! SM client attached at the port they reach, and traps (128 on a link change) go to the SM
//! client at their MasterSMLID. Performance management GMPs (class 0x04, `perfquery`) are
//! answered by the fabric's PMAs, as ibsim answers them; every MAD is counted in the port
//! counters of the links it crosses.
//!
//! Beyond ibsim, which answers at once, the fabric's [`Models`](crate::Models) apply: an
//! agent's answer is due at the emulated time [`Emulator::exchange`] says, and [`Server`]
//! holds it until then in real time (emulated ns are ns since the server started). A MAD the
//! fabric loses comes back at once with status 110, as ibsim reports what it cannot deliver.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ibqos_mad::ibsim::{
    CTL_LEN, CtlType, DROPPED_STATUS, HostU16, HostU32, HostU64, MAD_LEN, MAGIC, MAX_CLIENTS,
    REQUEST_LEN, SimClientInfo, SimCtl, SimGid, SimPort, SimRequest, SimVendor,
};
use ibqos_mad::{Attribute, AttributeId, DrPath, Mad, Method, MgmtClass, NodeInfoRepr};
use rustix::event::{PollFd, PollFlags, Timespec, poll};

use crate::{AttachError, DueQueue, Emulator, Request, TrafficEvent, attach_port, precise_timers};
use ibqos_fabric::{PortRef, Topology, TopologyError};

/// The attributes ibsim's SMA answers itself (`sim_mad.c`'s handler table). Everything else
/// (SMInfo above all) goes to the SM client attached at the destination port.
const SMA_ATTRIBUTES: [AttributeId; 11] = [
    AttributeId::NodeDescription,
    AttributeId::NodeInfo,
    AttributeId::SwitchInfo,
    AttributeId::GuidInfo,
    AttributeId::PortInfo,
    AttributeId::PKeyTable,
    AttributeId::SlToVlMappingTable,
    AttributeId::VlArbitrationTable,
    AttributeId::LinearForwardingTable,
    AttributeId::MulticastForwardingTable,
    AttributeId::MlnxExtendedPortInfo,
];

/// A wait shorter than this is spun (polled without a timeout) rather than slept. On the 2-core VM
/// of BENCHMARKS.md, a 20 us `poll` timeout returned tens of us late, even with 1 ns timer slack.
/// So the fabric answered at several times its latency model. Spinning the last 100 us makes the
/// answers leave on time. The price is one busy core while MADs are in flight, as ibsim's own loop
/// is busy while it has work.
const SPIN_BELOW: Duration = Duration::from_micros(100);

/// How often the loop looks at the stop flag when nothing is due: a signal handler that only
/// sets a flag cannot be relied on to interrupt `poll` (it may run on another thread).
const STOP_CHECK: Duration = Duration::from_millis(100);

/// How long a datagram waits before it is sent again to a client whose queue was full (the
/// client is busy sending a burst, and reads when it is done).
const FULL_QUEUE_RETRY_NS: u64 = 50_000;

/// Why the fabric cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("clients naming no node: {0}")]
    Attach(AttachError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error("socket @{name}: {op}: {error}")]
    Socket {
        name: String,
        op: &'static str,
        error: io::Error,
    },
}

/// What the fabric has done since it started, for logs and benchmarks.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ServeStats {
    /// Control requests answered.
    pub control: u64,
    /// MADs clients sent.
    pub mads: u64,
    /// Requests the emulated SMAs answered.
    pub answered: u64,
    /// Requests passed to an SM client, and responses passed back.
    pub forwarded: u64,
    /// MADs that came back with status 110, or vanished (TrapRepress, which only ends a trap;
    /// orphan responses).
    pub dropped: u64,
    /// Traps the fabric sent to an SM client.
    pub traps: u64,
    /// Datagrams of the wrong length, magic or client number, dropped.
    pub malformed: u64,
}

#[derive(Debug, Clone, Copy)]
struct Client {
    /// The id the client sent in CONNECT (its pid): its data socket is `NAME:in<pid>`.
    pid: u32,
    issm: bool,
    /// Where it is attached.
    port: PortRef,
}

/// One datagram to send: the client it goes to, its bytes, and the emulated time (ns since the
/// server started) it is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatagramDelivery {
    pub client: usize,
    pub datagram: [u8; REQUEST_LEN],
    pub at_ns: u64,
}

/// The protocol state: the emulated fabric and its clients, without sockets.
#[derive(Debug)]
pub struct Switchboard {
    emu: Emulator,
    clients: [Option<Client>; MAX_CLIENTS],
    /// Where a client that names no node attaches.
    default_port: PortRef,
    stats: ServeStats,
    /// The emulated time of the datagram being handled.
    now_ns: u64,
}

impl Switchboard {
    /// The fabric of `topology`, with clients that name no node attached at `attach` (a node's
    /// id or description; by default the first CA). No port advertises IsSM until an SM client
    /// connects there (ibsim: SET_ISSM).
    pub fn new(topology: Topology, attach: Option<&str>) -> Result<Switchboard, ServeError> {
        let default_port = attach_port(&topology, attach).map_err(ServeError::Attach)?;
        Ok(Switchboard {
            emu: Emulator::new(topology)?,
            clients: [None; MAX_CLIENTS],
            default_port,
            stats: ServeStats::default(),
            now_ns: 0,
        })
    }

    /// Where a client that names no node attaches.
    pub fn default_port(&self) -> PortRef {
        self.default_port
    }

    /// The emulated fabric, as the clients left it.
    pub fn emulator(&self) -> &Emulator {
        &self.emu
    }

    /// The emulated fabric, to set its models and schedule.
    pub fn emulator_mut(&mut self) -> &mut Emulator {
        &mut self.emu
    }

    /// The port a connected client is attached at.
    pub fn client_port(&self, client: usize) -> Option<PortRef> {
        Some(self.clients.get(client)?.as_ref()?.port)
    }

    pub fn stats(&self) -> ServeStats {
        self.stats
    }

    /// The id (pid) a connected client gave in CONNECT.
    pub fn client_pid(&self, client: usize) -> Option<u32> {
        Some(self.clients.get(client)?.as_ref()?.pid)
    }

    /// Forgets a client whose socket is gone, as ibsim does when a write to it fails. An SM
    /// client's port stops advertising IsSM.
    pub fn disconnect(&mut self, client: usize) {
        if let Some(gone) = self.clients.get_mut(client).and_then(Option::take)
            && gone.issm
        {
            self.emu.set_is_sm(gone.port, false);
        }
    }

    /// Answers one control datagram; `None` where ibsim sends nothing back (wrong length or
    /// magic, or a client number out of range).
    pub fn control(&mut self, msg: &[u8]) -> Option<[u8; CTL_LEN]> {
        let Ok(mut reply) = <[u8; CTL_LEN]>::try_from(msg) else {
            self.stats.malformed += 1;
            return None;
        };
        let ctl = SimCtl::new_unchecked(&reply[..]);
        let kind = ctl.ctl_type();
        let client = ctl.client_id().0 as usize;
        if ctl.magic() != HostU32(MAGIC) || (client >= MAX_CLIENTS && kind != CtlType::Connect) {
            self.stats.malformed += 1;
            return None;
        }
        self.stats.control += 1;
        let mut data = [0u8; 64];
        data.copy_from_slice(ctl.data());
        let answered = match kind {
            CtlType::Connect => self.connect(&mut data),
            CtlType::Disconnect => {
                self.disconnect(client);
                Some(())
            }
            // A non-zero u32 in host order: non-zero in any order.
            CtlType::SetIsSm => self.set_issm(client, data[..4] != [0; 4]),
            CtlType::GetPort
            | CtlType::GetVendor
            | CtlType::GetGid
            | CtlType::GetGuid
            | CtlType::GetNodeInfo
            | CtlType::GetPortInfo
            | CtlType::GetPkeys => self.query(client, kind, &mut data),
            // ibsim warns and echoes an unknown type unchanged.
            _ => Some(()),
        };
        let mut reply_ctl = SimCtl::new_unchecked(&mut reply[..]);
        match answered {
            Some(()) => reply_ctl.data_mut().copy_from_slice(&data),
            None => reply_ctl.set_ctl_type(CtlType::Error),
        }
        Some(reply)
    }

    /// CONNECT ([`SimClientInfo`]): the client's number and the node it is attached at go back
    /// in the same layout.
    fn connect(&mut self, data: &mut [u8; 64]) -> Option<()> {
        let info = SimClientInfo::new_unchecked(&data[..]);
        let (pid, issm, wanted) = (info.id().0, info.issm().0 != 0, info.node_id());
        let index = self.attach((!wanted.is_empty()).then_some(&wanted), pid, issm)?;
        let port = self.client_port(index)?;
        let node = self.emu.topology().node(port.node)?;
        let mut info = SimClientInfo::new_unchecked(&mut data[..]);
        info.set_id(HostU32(index as u32));
        info.set_node_id(&node.name);
        Some(())
    }

    /// Attaches a client with id `pid` at `node` (a node's id or description), or with `None`
    /// at the default port, as CONNECT does: its number, or `None` where ibsim refuses (no such
    /// node, every slot taken, or an SM client already at the node). An SM client's port
    /// advertises IsSM from now on.
    pub fn attach(&mut self, node: Option<&str>, pid: u32, issm: bool) -> Option<usize> {
        let port = match node {
            None => self.default_port,
            Some(name) => attach_port(self.emu.topology(), Some(name)).ok()?,
        };
        // ibsim refuses a second SM client at one node.
        if issm && self.sm_client(|p| p.node == port.node).is_some() {
            return None;
        }
        let index = self.clients.iter().position(Option::is_none)?;
        self.clients[index] = Some(Client { pid, issm, port });
        if issm {
            self.emu.set_is_sm(port, true);
        }
        Some(index)
    }

    /// SET_ISSM: the client is an SM from now on, or no longer; its port's IsSM follows.
    fn set_issm(&mut self, client: usize, issm: bool) -> Option<()> {
        let port = self.client_port(client)?;
        if issm
            && self
                .sm_client(|p| p.node == port.node)
                .is_some_and(|c| c != client)
        {
            return None;
        }
        self.clients[client].as_mut()?.issm = issm;
        self.emu.set_is_sm(port, issm);
        Some(())
    }

    /// The SM client attached at a port `at` accepts, if any.
    fn sm_client(&self, at: impl Fn(PortRef) -> bool) -> Option<usize> {
        self.clients
            .iter()
            .position(|c| c.is_some_and(|c| c.issm && at(c.port)))
    }

    /// The GET_* control requests: facts of the client's port, in ibsim's layouts.
    fn query(&self, client: usize, kind: CtlType, data: &mut [u8; 64]) -> Option<()> {
        let attach = self.client_port(client)?;
        let sma = |id, modifier| self.emu.get(attach, id, modifier).ok();
        let Some(Attribute::PortInfo(own_port)) = sma(AttributeId::PortInfo, attach.port.into())
        else {
            return None;
        };
        let Some(Attribute::NodeInfo(node_info)) = sma(AttributeId::NodeInfo, 0) else {
            return None;
        };
        let node = self.emu.topology().node(attach.node)?;
        let mut out = [0u8; 64];
        match kind {
            CtlType::GetPort => {
                let mut port = SimPort::new_unchecked(&mut out[..]);
                port.set_lid(HostU16(own_port.lid));
                port.set_state(own_port.port_state.into());
            }
            CtlType::GetVendor => vendor(&node_info, &mut out),
            CtlType::GetGid => {
                let mut gid = SimGid::new_unchecked(&mut out[..]);
                gid.set_gid_prefix(own_port.gid_prefix);
                // ibsim memcpys its host-order NodeGUID here.
                gid.set_guid(HostU64(node.guid));
            }
            CtlType::GetGuid => out[..8].copy_from_slice(&node.guid.to_ne_bytes()),
            CtlType::GetNodeInfo => out = Attribute::NodeInfo(node_info).to_data(),
            CtlType::GetPortInfo => {
                let port = data[0];
                let info = if port == 0 || port > node.num_ports() {
                    own_port
                } else if node.is_switch() {
                    match sma(AttributeId::PortInfo, u32::from(port))? {
                        Attribute::PortInfo(info) => info,
                        _ => return None,
                    }
                } else {
                    // A CA's PortInfo is answered for the port asked, not the arrival port.
                    *self.emu.port_info(PortRef::new(attach.node, port))?
                };
                out = Attribute::PortInfo(info).to_data();
            }
            // The first 32 P_Key entries, in wire order, as ibsim copies its table.
            _ => out = sma(AttributeId::PKeyTable, 0)?.to_data(),
        }
        *data = out;
        Some(())
    }

    /// What one datagram from client `from` causes, at emulated time `now_ns`: at most one
    /// datagram to some client, due at once or when the fabric's answer arrives. Traps it
    /// raised wait in [`Switchboard::take_traps`].
    pub fn request(
        &mut self,
        from: usize,
        datagram: &[u8],
        now_ns: u64,
    ) -> Option<DatagramDelivery> {
        self.now_ns = now_ns;
        let Ok(mut dgram) = <[u8; REQUEST_LEN]>::try_from(datagram) else {
            self.stats.malformed += 1;
            return None;
        };
        let Some(origin) = self.client_port(from) else {
            self.stats.malformed += 1;
            return None;
        };
        self.stats.mads += 1;
        let sent = SimRequest::new_unchecked(datagram);
        let header = Mad::new_unchecked(sent.mad());
        let (class, method) = (header.mgmt_class(), header.method());
        let directed = sent.dlid() == DrPath::PERMISSIVE_LID;
        let dlid = (!directed).then_some(sent.dlid());
        let request = Request {
            origin,
            at_ns: now_ns,
            dlid,
            mad: sent.mad(),
        };
        if method.is_response() {
            // A client (an SM) answering a request forwarded to it: back to the requester
            // ibsim wrote into TID[63:48], across the fabric.
            let requester = usize::from((header.transaction_id() >> 48) as u16);
            let Some(requester_port) = self.client_port(requester) else {
                self.stats.dropped += 1;
                return None;
            };
            if !self
                .emu
                .carry_response(origin, requester_port, sent.mad(), dlid)
            {
                return Some(self.drop_back(from, dgram));
            }
            self.stats.forwarded += 1;
            self.fill_slid(&mut dgram, origin, directed);
            return Some(self.now(requester, dgram));
        }
        let smp = matches!(class, MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute);
        if method == Method::TrapRepress {
            // It has no answer; an SMP one ends the trap at the SMA it reaches.
            if smp {
                self.emu.exchange(request);
            }
            self.stats.dropped += 1;
            return None;
        }
        let agent_class = matches!(class, MgmtClass::PerfMgt | MgmtClass::CongestionControl);
        if agent_class || (smp && SMA_ATTRIBUTES.contains(&header.attribute_id())) {
            let Some(reply) = self.emu.exchange(request) else {
                return Some(self.drop_back(from, dgram));
            };
            self.stats.answered += 1;
            let mut answer = SimRequest::new_unchecked(&mut dgram[..]);
            // A damaged answer may come back short: the rest of the MAD is zero.
            let len = reply.mad.len().min(MAD_LEN);
            answer.mad_mut().fill(0);
            answer.mad_mut()[..len].copy_from_slice(&reply.mad[..len]);
            // The response travels from the destination back.
            answer.swap_addresses();
            return Some(DatagramDelivery {
                client: from,
                datagram: dgram,
                at_ns: reply.at_ns,
            });
        }
        // SMInfo, SA and every attribute without an SMA handler: for the SM client at the
        // port it reaches (a hop-0 directed route or the client's own LID: its own port).
        let reaches = self.emu.carry(origin, sent.mad(), dlid);
        let Some(target) = reaches.and_then(|port| self.sm_client(|p| p == port)) else {
            return Some(self.drop_back(from, dgram));
        };
        self.stats.forwarded += 1;
        let tid = header.transaction_id() & !(0xffff << 48) | (from as u64) << 48;
        Mad::new_unchecked(SimRequest::new_unchecked(&mut dgram[..]).mad_mut())
            .set_transaction_id(tid);
        self.fill_slid(&mut dgram, origin, directed);
        Some(self.now(target, dgram))
    }

    /// The traps the fabric raised since the last call, each for the SM client at the port it
    /// reaches; a trap with no SM client there is lost, as in ibsim.
    pub fn take_traps(&mut self) -> Vec<DatagramDelivery> {
        let mut out = Vec::new();
        for trap in self.emu.take_traps() {
            let Some(client) = self.sm_client(|p| p == trap.to) else {
                continue;
            };
            let sm_lid = self.emu.port_info(trap.to).map_or(0, |info| info.lid);
            let mut datagram = [0u8; REQUEST_LEN];
            let mut request = SimRequest::new_unchecked(&mut datagram[..]);
            request.set_dlid(sm_lid);
            request.set_slid(trap.slid);
            request.set_length(MAD_LEN as u64);
            let len = trap.mad.len().min(MAD_LEN);
            request.mad_mut()[..len].copy_from_slice(&trap.mad[..len]);
            self.stats.traps += 1;
            out.push(DatagramDelivery {
                client,
                datagram,
                at_ns: trap.at_ns,
            });
        }
        out
    }

    /// Lets the fabric's scheduled events up to `now_ns` happen (their traps then wait in
    /// [`Switchboard::take_traps`]).
    pub fn advance_to(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.emu.advance_to(now_ns);
    }

    /// A datagram due at once.
    fn now(&self, client: usize, datagram: [u8; REQUEST_LEN]) -> DatagramDelivery {
        DatagramDelivery {
            client,
            datagram,
            at_ns: self.now_ns,
        }
    }

    /// The request back to its sender at once with status 110, as ibsim answers what it cannot
    /// deliver.
    fn drop_back(&mut self, from: usize, dgram: [u8; REQUEST_LEN]) -> DatagramDelivery {
        self.stats.dropped += 1;
        self.now(from, undelivered(dgram))
    }

    /// A LID-routed MAD with slid 0 comes from its sender's LID (ibsim fills it in).
    fn fill_slid(&self, dgram: &mut [u8; REQUEST_LEN], origin: PortRef, directed: bool) {
        let mut request = SimRequest::new_unchecked(&mut dgram[..]);
        if directed || request.slid() != 0 {
            return;
        }
        request.set_slid(self.emu.port_info(origin).map_or(0, |info| info.lid));
    }
}

/// GET_VENDOR's answer: the NodeInfo fields `struct sim_vendor` holds.
fn vendor(node_info: &NodeInfoRepr, out: &mut [u8; 64]) {
    let mut vendor = SimVendor::new_unchecked(&mut out[..]);
    vendor.set_vendor_id(HostU32(node_info.vendor_id));
    vendor.set_vendor_part_id(HostU32(node_info.device_id.into()));
    vendor.set_hw_ver(HostU32(node_info.revision));
    vendor.set_fw_ver(HostU64(1));
}

/// A request with ibsim's status for a MAD it could not deliver.
fn undelivered(mut dgram: [u8; REQUEST_LEN]) -> [u8; REQUEST_LEN] {
    SimRequest::new_unchecked(&mut dgram[..]).set_status(DROPPED_STATUS);
    dgram
}

/// A [`Switchboard`] on ibsim's sockets.
#[derive(Debug)]
pub struct Server {
    board: Switchboard,
    sockname: String,
    ctl: UnixDatagram,
    out: Vec<UnixDatagram>,
    /// Emulated time zero: emulated ns are real ns since then.
    started: Instant,
    /// Datagrams not yet due.
    pending: DueQueue<DatagramDelivery>,
}

impl Server {
    /// Binds `NAME:ctl` and `NAME:out0..9`. Fails if another server (or ibsim) holds the name.
    pub fn bind(board: Switchboard, sockname: &str) -> Result<Server, ServeError> {
        let ctl = bind(&format!("{sockname}:ctl"))?;
        let out = (0..MAX_CLIENTS)
            .map(|i| bind(&format!("{sockname}:out{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Server {
            board,
            sockname: sockname.to_owned(),
            ctl,
            out,
            started: Instant::now(),
            pending: DueQueue::default(),
        })
    }

    pub fn switchboard(&self) -> &Switchboard {
        &self.board
    }

    /// Serves until `stop` is set (by a SIGTERM/SIGINT handler). Datagrams are taken in a fixed
    /// order, control first, then client 0 to 9, each socket drained before the next; answers
    /// and traps leave when the fabric's models say they arrive. What happens to the fabric's
    /// traffic goes to `on_traffic` as it happens; while the traffic lags the clock the loop
    /// does not sleep, and steps it a little at each turn.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        on_traffic: &mut dyn FnMut(TrafficEvent),
    ) -> Result<(), ServeError> {
        precise_timers();
        while !stop.load(Ordering::Relaxed) {
            let timeout = self.until_next_due();
            let timeout = Timespec::try_from(timeout).unwrap_or_default();
            let ready = {
                let mut fds: Vec<PollFd<'_>> = std::iter::once(&self.ctl)
                    .chain(&self.out)
                    .map(|s| PollFd::new(s, PollFlags::IN))
                    .collect();
                match poll(&mut fds, Some(&timeout)) {
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(self.error("", "poll", e.into())),
                }
                fds.iter()
                    .map(|fd| !fd.revents().is_empty())
                    .collect::<Vec<_>>()
            };
            if ready[0] {
                self.drain_control()?;
            }
            for (client, _) in ready[1..].iter().enumerate().filter(|(_, r)| **r) {
                self.drain_client(client)?;
            }
            self.board.advance_to(self.now_ns());
            self.queue_traps();
            self.send_due();
            for event in self.board.emu.take_traffic_events() {
                on_traffic(event);
            }
        }
        Ok(())
    }

    /// Emulated time now.
    fn now_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long `poll` may wait: until the next datagram, fabric event or traffic step is due,
    /// at most [`STOP_CHECK`], and not at all when that is under [`SPIN_BELOW`].
    fn until_next_due(&self) -> Duration {
        let emulator = self.board.emulator();
        let next = [
            self.pending.next_ns(),
            emulator.next_event_ns(),
            emulator.next_traffic_ns(),
        ]
        .into_iter()
        .flatten()
        .min();
        next.map_or(STOP_CHECK, |at| {
            let wait = Duration::from_nanos(at.saturating_sub(self.now_ns()));
            if wait < SPIN_BELOW {
                Duration::ZERO
            } else {
                wait.min(STOP_CHECK)
            }
        })
    }

    fn queue_traps(&mut self) {
        for trap in self.board.take_traps() {
            self.pending.push(trap.at_ns, trap);
        }
    }

    /// Sends every datagram that is due; one for a client gone since is lost.
    fn send_due(&mut self) {
        let now = self.now_ns();
        while let Some((_, delivery)) = self.pending.pop_due(now) {
            self.deliver(&delivery);
        }
    }

    fn drain_control(&mut self) -> Result<(), ServeError> {
        // One byte more than a sim_ctl, so that an oversized datagram shows as such.
        let mut buf = [0u8; CTL_LEN + 1];
        loop {
            let (n, from) = match self.ctl.recv_from(&mut buf) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(self.error("ctl", "recv", e)),
            };
            if let Some(reply) = self.board.control(&buf[..n]) {
                // A client that vanished before its reply costs nothing but the reply.
                let _ = self.ctl.send_to_addr(&reply, &from);
            }
        }
    }

    fn drain_client(&mut self, client: usize) -> Result<(), ServeError> {
        let mut buf = [0u8; REQUEST_LEN + 1];
        loop {
            let n = match self.out[client].recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(self.error(&format!("out{client}"), "recv", e)),
            };
            let now = self.now_ns();
            let Some(delivery) = self.board.request(client, &buf[..n], now) else {
                continue;
            };
            self.queue_traps();
            if delivery.at_ns > now {
                self.pending.push(delivery.at_ns, delivery);
            } else if !self.deliver(&delivery) && delivery.client != client {
                // The SM client it was for is gone: ibsim then answers the sender with 110.
                self.deliver(&DatagramDelivery {
                    client,
                    datagram: undelivered(delivery.datagram),
                    at_ns: now,
                });
            }
        }
    }

    /// Sends one datagram to a client's `NAME:in<pid>`; false if the client is gone. A client
    /// whose queue is full gets it a little later, as a link's buffers would hold it: a full
    /// queue is a busy client, not a gone one.
    fn deliver(&mut self, delivery: &DatagramDelivery) -> bool {
        let Some(pid) = self.board.client_pid(delivery.client) else {
            return false;
        };
        let name = format!("{}:in{pid}", self.sockname);
        let sent = abstract_addr(&name)
            .and_then(|addr| self.out[delivery.client].send_to_addr(&delivery.datagram, &addr));
        match sent {
            Ok(_) => true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let at_ns = self.now_ns().saturating_add(FULL_QUEUE_RETRY_NS);
                let again = DatagramDelivery {
                    at_ns,
                    ..delivery.clone()
                };
                self.pending.push(at_ns, again);
                true
            }
            Err(_) => {
                self.board.disconnect(delivery.client);
                false
            }
        }
    }

    fn error(&self, what: &str, op: &'static str, error: io::Error) -> ServeError {
        ServeError::Socket {
            name: format!("{}:{what}", self.sockname),
            op,
            error,
        }
    }
}

/// The abstract socket address `\0name\0` of an ibsim socket: ibsim counts the trailing NUL
/// into the name, as `/proc/net/unix` shows (`@sim:ctl@`).
pub fn abstract_addr(name: &str) -> io::Result<SocketAddr> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    SocketAddr::from_abstract_name(&bytes)
}

fn bind(name: &str) -> Result<UnixDatagram, ServeError> {
    let socket_error = |op, error| ServeError::Socket {
        name: name.to_owned(),
        op,
        error,
    };
    let addr = abstract_addr(name).map_err(|e| socket_error("address", e))?;
    UnixDatagram::bind_addr(&addr)
        .and_then(|s| s.set_nonblocking(true).map(|()| s))
        .map_err(|e| socket_error("bind", e))
}
