//! The emulated fabric behind ibsim 0.10's socket protocol, so that programs written for ibsim
//! (OpenSM and infiniband-diags under `libumad2sim.so`, `ibqos sm --fabric ibsim:NAME@NODE`) run
//! against an [`Emulator`] unchanged.
//!
//! The protocol (ibsim 0.10: `ibsim/ibsim.c:119-160`, `umad2sim/sim_client.c:235-267`, the
//! structs in `include/ibsim.h:64-96`): abstract AF_UNIX datagram sockets
//! `\0NAME:ctl\0` (control) and `\0NAME:out0\0` ... `\0NAME:out9\0` (data of client 0..9); the
//! trailing NUL is part of each name. A client binds `NAME:ctl<pid>` and `NAME:in<pid>`, sends
//! CONNECT (80-byte `struct sim_ctl`, host byte order) and then exchanges 288-byte
//! `struct sim_request` datagrams with `NAME:out<client>`.
//!
//! [`Switchboard`] is the protocol without I/O (what each datagram causes), [`Server`] moves
//! datagrams between it and the sockets in one single-threaded `poll` loop. Both are
//! deterministic: the same datagrams in the same order give the same bytes.
//!
//! Clients attach where ibsim attaches them: at the node CONNECT names (`SIM_HOST`, by id or
//! NodeDescription), port 1 of a CA or port 0 of a switch; a CONNECT naming no node attaches at
//! the server's default node (`--attach`, else the first CA). SMPs leave from the client's own
//! port, SMInfo and the other attributes no SMA handles go to the SM client attached at the port
//! they reach, and traps (128 on a link change) go to the SM client at their MasterSMLID.
//! Performance management GMPs (class 0x04, `perfquery`) are answered by the fabric's PMAs, as
//! ibsim answers them; every MAD is counted in the port counters of the links it crosses.
//!
//! Beyond ibsim, which answers at once, the fabric's [`Models`](crate::Models) apply: an
//! SMA's answer is due at the emulated time [`Emulator::handle_at_from`] says, and [`Server`]
//! holds it until then in real time (emulated ns are ns since the server started). A MAD the
//! fabric loses comes back at once with status 110, as ibsim reports what it cannot deliver.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ibqos_mad::{Attribute, AttributeId};
use rustix::event::{PollFd, PollFlags, Timespec, poll};

use crate::{DueQueue, EmuError, Emulator, node_named, precise_timers};
use ibqos_fabric::{NodeKind, PortRef, Topology};

/// `IBSIM_MAX_CLIENTS`: ibsim binds exactly this many data sockets.
pub const MAX_CLIENTS: usize = 10;
const SIM_MAGIC: u32 = 0xdead_beef;
/// `sizeof(struct sim_ctl)`: magic, clientid, type, len, `data[64]`.
pub const CTL_LEN: usize = 80;
const CTL_DATA: usize = 16;
/// `sizeof(struct sim_request)`: dlid, slid, dqp, sqp, status, pad, u64 length, `mad[256]`.
pub const REQUEST_LEN: usize = 288;
const MAD_OFFSET: usize = 32;
/// The umad status of a MAD the fabric lost (ETIMEDOUT), as ibsim reports it.
pub const DROPPED_STATUS: u32 = 110;

/// `enum SIM_CTL_TYPES`.
const CTL_ERROR: u32 = 0;
const CTL_CONNECT: u32 = 1;
const CTL_DISCONNECT: u32 = 2;
const CTL_GET_PORT: u32 = 3;
const CTL_GET_VENDOR: u32 = 4;
const CTL_GET_GID: u32 = 5;
const CTL_GET_GUID: u32 = 6;
const CTL_GET_NODEINFO: u32 = 7;
const CTL_GET_PORTINFO: u32 = 8;
const CTL_SET_ISSM: u32 = 9;
const CTL_GET_PKEYS: u32 = 10;

/// Management classes of SMPs (LID-routed and directed-route), and of performance management,
/// which ibsim's PMAs answer.
const CLASS_SMP_LID: u8 = 0x01;
const CLASS_SMP_DR: u8 = 0x81;
const CLASS_PERF_MGT: u8 = 0x04;
/// Method bit of responses, and TrapRepress (which ibsim drops without a word).
const METHOD_RESPONSE: u8 = 0x80;
const METHOD_TRAP_REPRESS: u8 = 0x07;
const PERMISSIVE_LID: u16 = 0xffff;

/// The attributes ibsim's SMA answers itself (`sim_mad.c`'s handler table): NodeDescription,
/// NodeInfo, SwitchInfo, GUIDInfo, PortInfo, P_KeyTable, SLtoVLMappingTable,
/// VLArbitrationTable, LinearForwardingTable, MulticastForwardingTable and Mellanox
/// ExtendedPortInfo. Everything else (SMInfo above all) goes to the SM client attached at the
/// destination port.
const SMA_ATTRIBUTES: [u16; 11] = [
    0x0010, 0x0011, 0x0012, 0x0014, 0x0015, 0x0016, 0x0017, 0x0018, 0x0019, 0x001b, 0xff90,
];

/// Byte offsets in NodeInfo (IBA 14.2.5.3) for GET_VENDOR.
const NODE_INFO_DEVICE_ID: usize = 30;
const NODE_INFO_REVISION: usize = 32;
const NODE_INFO_VENDOR_ID: usize = 37;
/// Byte offsets in PortInfo (IBA 14.2.5.6) for GET_PORT and GET_GID.
const PORT_INFO_GID_PREFIX: usize = 8;
const PORT_INFO_LID: usize = 16;
const PORT_INFO_STATE: usize = 32;

/// A wait shorter than this is spun (polled without a timeout) rather than slept. Measured on
/// the 2-core VM of BENCHMARKS.md, even with 1 ns timer slack a 20 us `poll` timeout returned
/// tens of us late, so the fabric answered at several times its latency model; spinning the
/// last 100 us makes the answers leave on time, at the price of one busy core while MADs are
/// in flight (as ibsim's own loop is busy while it has work).
const SPIN_BELOW: Duration = Duration::from_micros(100);

/// How often the loop looks at the stop flag when nothing is due: a signal handler that only
/// sets a flag cannot be relied on to interrupt `poll` (it may run on another thread).
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Why the fabric cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("no node {0:?} in the fabric to attach clients at")]
    NoSuchNode(String),
    #[error("the fabric has no node to attach clients at")]
    NoNodes,
    #[error(transparent)]
    Emu(#[from] EmuError),
    #[error("socket @{name}: {op}: {source}")]
    Socket {
        name: String,
        op: &'static str,
        #[source]
        source: io::Error,
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
pub struct Delivery {
    pub client: usize,
    pub datagram: [u8; REQUEST_LEN],
    pub at_ns: u64,
}

/// The protocol state: the emulated fabric and its clients, without sockets.
#[derive(Debug)]
pub struct Switchboard {
    emu: Emulator,
    clients: [Option<Client>; MAX_CLIENTS],
    stats: ServeStats,
    /// The emulated time of the datagram being handled.
    now_ns: u64,
}

impl Switchboard {
    /// The fabric of `topology`, with clients that name no node attached at `attach` (a node's
    /// id or description; by default the first CA). No port advertises IsSM until an SM client
    /// connects there (ibsim: SET_ISSM).
    pub fn new(topology: Topology, attach: Option<&str>) -> Result<Switchboard, ServeError> {
        let id = match attach {
            Some(name) => node_named(&topology, name)
                .ok_or_else(|| ServeError::NoSuchNode(name.to_owned()))?,
            None => topology
                .nodes()
                .find(|(_, n)| n.kind == NodeKind::Ca)
                .or_else(|| topology.nodes().next())
                .map(|(id, _)| id)
                .ok_or(ServeError::NoNodes)?,
        };
        let node = topology.node(id).ok_or(ServeError::NoNodes)?;
        let attach = client_port(id, node);
        let mut emu = Emulator::new(topology, attach)?;
        emu.set_is_sm(attach, false);
        Ok(Switchboard {
            emu,
            clients: [None; MAX_CLIENTS],
            stats: ServeStats::default(),
            now_ns: 0,
        })
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
        let Ok(msg) = <[u8; CTL_LEN]>::try_from(msg) else {
            self.stats.malformed += 1;
            return None;
        };
        let kind = ne_u32(&msg, 8);
        let client = ne_u32(&msg, 4) as usize;
        if ne_u32(&msg, 0) != SIM_MAGIC || (client >= MAX_CLIENTS && kind != CTL_CONNECT) {
            self.stats.malformed += 1;
            return None;
        }
        self.stats.control += 1;
        let mut reply = msg;
        let mut data = [0u8; 64];
        data.copy_from_slice(&msg[CTL_DATA..]);
        let answered = match kind {
            CTL_CONNECT => self.connect(&mut data),
            CTL_DISCONNECT => {
                self.disconnect(client);
                Some(())
            }
            CTL_SET_ISSM => self.set_issm(client, ne_u32(&data, 0) != 0),
            CTL_GET_PORT | CTL_GET_VENDOR | CTL_GET_GID | CTL_GET_GUID | CTL_GET_NODEINFO
            | CTL_GET_PORTINFO | CTL_GET_PKEYS => self.query(client, kind, &mut data),
            // ibsim warns and echoes an unknown type unchanged.
            _ => Some(()),
        };
        match answered {
            Some(()) => reply[CTL_DATA..].copy_from_slice(&data),
            None => reply[8..12].copy_from_slice(&CTL_ERROR.to_ne_bytes()),
        }
        Some(reply)
    }

    /// CONNECT: `{u32 id; u32 qp; u32 issm; char nodeid[32]}` in, client number and node id out.
    fn connect(&mut self, data: &mut [u8; 64]) -> Option<()> {
        let pid = ne_u32(data, 0);
        let issm = ne_u32(data, 8) != 0;
        let wanted = c_str(&data[12..44]);
        let topology = self.emu.topology();
        let port = if wanted.is_empty() {
            self.emu.attach()
        } else {
            let id = node_named(topology, &wanted)?;
            client_port(id, topology.node(id)?)
        };
        topology.port(port)?;
        // ibsim refuses a second SM client at one node.
        if issm && self.sm_client(|p| p.node == port.node).is_some() {
            return None;
        }
        let index = self.clients.iter().position(Option::is_none)?;
        self.clients[index] = Some(Client { pid, issm, port });
        if issm {
            self.emu.set_is_sm(port, true);
        }
        let node = self.emu.topology().node(port.node)?;
        let name = node.name.as_bytes();
        let name = &name[..name.len().min(31)];
        data[0..4].copy_from_slice(&(index as u32).to_ne_bytes());
        data[12..44].fill(0);
        data[12..12 + name.len()].copy_from_slice(name);
        Some(())
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
    fn query(&self, client: usize, kind: u32, data: &mut [u8; 64]) -> Option<()> {
        let attach = self.client_port(client)?;
        let sma = |id, modifier| {
            self.emu
                .get(attach, id, modifier)
                .ok()
                .as_ref()
                .map(Attribute::to_data)
        };
        let own_port = sma(AttributeId::PortInfo, u32::from(attach.port))?;
        let node_info = sma(AttributeId::NodeInfo, 0)?;
        let node_guid = self.emu.topology().node(attach.node)?.guid;
        let mut out = [0u8; 64];
        match kind {
            CTL_GET_PORT => {
                let lid =
                    u16::from_be_bytes([own_port[PORT_INFO_LID], own_port[PORT_INFO_LID + 1]]);
                out[0..2].copy_from_slice(&lid.to_ne_bytes());
                out[2] = own_port[PORT_INFO_STATE] & 0x0f;
            }
            CTL_GET_VENDOR => {
                let be = |at: usize, len: usize| {
                    node_info[at..at + len]
                        .iter()
                        .fold(0u32, |v, &b| (v << 8) | u32::from(b))
                };
                out[0..4].copy_from_slice(&be(NODE_INFO_VENDOR_ID, 3).to_ne_bytes());
                out[4..8].copy_from_slice(&be(NODE_INFO_DEVICE_ID, 2).to_ne_bytes());
                out[8..12].copy_from_slice(&be(NODE_INFO_REVISION, 4).to_ne_bytes());
                // `struct sim_vendor` aligns its u64 fw_ver to offset 16; ibsim reports 1.
                out[16..24].copy_from_slice(&1u64.to_ne_bytes());
            }
            CTL_GET_GID => {
                out[0..8]
                    .copy_from_slice(&own_port[PORT_INFO_GID_PREFIX..PORT_INFO_GID_PREFIX + 8]);
                // ibsim memcpys its host-order NodeGUID here.
                out[8..16].copy_from_slice(&node_guid.to_ne_bytes());
            }
            CTL_GET_GUID => out[0..8].copy_from_slice(&node_guid.to_ne_bytes()),
            CTL_GET_NODEINFO => out = node_info,
            CTL_GET_PORTINFO => {
                let num_ports = self.emu.topology().node(attach.node)?.num_ports();
                let port = data[0];
                out = if port == 0 || port > num_ports {
                    own_port
                } else if self.emu.topology().node(attach.node)?.is_switch() {
                    sma(AttributeId::PortInfo, u32::from(port))?
                } else {
                    // A CA's PortInfo is answered for the port asked, not the arrival port.
                    Attribute::PortInfo(*self.emu.port_info(PortRef::new(attach.node, port))?)
                        .to_data()
                };
            }
            // The first 32 P_Key entries, in wire order, as ibsim copies its table.
            _ => out = sma(AttributeId::PKeyTable, 0)?,
        }
        *data = out;
        Some(())
    }

    /// What one datagram from client `from` causes, at emulated time `now_ns`: at most one
    /// datagram to some client, due at once or when the fabric's answer arrives. Traps it
    /// raised wait in [`Switchboard::take_traps`].
    pub fn request(&mut self, from: usize, datagram: &[u8], now_ns: u64) -> Option<Delivery> {
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
        let mad = &dgram[MAD_OFFSET..];
        let (class, method) = (mad[1], mad[3]);
        let attribute = u16::from_be_bytes([mad[16], mad[17]]);
        let dlid = u16::from_be_bytes([dgram[0], dgram[1]]);
        let directed = dlid == PERMISSIVE_LID;
        let lid = (!directed).then_some(dlid);
        if method & METHOD_RESPONSE != 0 {
            // A client (an SM) answering a request forwarded to it: back to the requester
            // ibsim wrote into TID[63:48], across the fabric.
            let requester = usize::from(u16::from_be_bytes([mad[8], mad[9]]));
            let Some(requester_port) = self.client_port(requester) else {
                self.stats.dropped += 1;
                return None;
            };
            if !self.emu.carry_response(origin, requester_port, mad, lid) {
                return Some(self.drop_back(from, dgram));
            }
            self.stats.forwarded += 1;
            self.fill_slid(&mut dgram, origin, directed);
            return Some(self.now(requester, dgram));
        }
        let smp = class == CLASS_SMP_LID || class == CLASS_SMP_DR;
        if method == METHOD_TRAP_REPRESS {
            // It has no answer; an SMP one ends the trap at the SMA it reaches.
            if smp {
                self.emu.handle_at_from(origin, now_ns, mad, lid);
            }
            self.stats.dropped += 1;
            return None;
        }
        let perf = class == CLASS_PERF_MGT;
        if perf || (smp && SMA_ATTRIBUTES.contains(&attribute)) {
            let answer = if perf {
                self.emu.perf_at_from(origin, now_ns, mad, lid)
            } else {
                self.emu.handle_at_from(origin, now_ns, mad, lid)
            };
            let Some(answer) = answer else {
                return Some(self.drop_back(from, dgram));
            };
            self.stats.answered += 1;
            dgram[MAD_OFFSET..].copy_from_slice(&answer.mad);
            // The response travels from the destination back: swap dlid/slid and dqp/sqp.
            for field in [0, 8] {
                let (dst, src) = dgram[field..field + 8].split_at_mut(4);
                dst.swap_with_slice(src);
            }
            return Some(Delivery {
                client: from,
                datagram: dgram,
                at_ns: answer.at_ns,
            });
        }
        // SMInfo, SA and every attribute without an SMA handler: for the SM client at the
        // port it reaches (a hop-0 directed route or the client's own LID: its own port).
        let reaches = self.emu.carry(origin, mad, lid);
        let Some(target) = reaches.and_then(|port| self.sm_client(|p| p == port)) else {
            return Some(self.drop_back(from, dgram));
        };
        self.stats.forwarded += 1;
        dgram[MAD_OFFSET + 8..MAD_OFFSET + 10].copy_from_slice(&(from as u16).to_be_bytes());
        self.fill_slid(&mut dgram, origin, directed);
        Some(self.now(target, dgram))
    }

    /// The traps the fabric raised since the last call, each for the SM client at the port it
    /// reaches; a trap with no SM client there is lost, as in ibsim.
    pub fn take_traps(&mut self) -> Vec<Delivery> {
        let mut out = Vec::new();
        for trap in self.emu.take_traps() {
            let Some(client) = self.sm_client(|p| p == trap.to) else {
                continue;
            };
            let sm_lid = self.emu.port_info(trap.to).map_or(0, |info| info.lid);
            let mut datagram = [0u8; REQUEST_LEN];
            datagram[0..4].copy_from_slice(&lid_field(sm_lid));
            datagram[4..8].copy_from_slice(&lid_field(trap.slid));
            datagram[24..32].copy_from_slice(&256u64.to_be_bytes());
            let len = trap.mad.len().min(REQUEST_LEN - MAD_OFFSET);
            datagram[MAD_OFFSET..MAD_OFFSET + len].copy_from_slice(&trap.mad[..len]);
            self.stats.traps += 1;
            out.push(Delivery {
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
    fn now(&self, client: usize, datagram: [u8; REQUEST_LEN]) -> Delivery {
        Delivery {
            client,
            datagram,
            at_ns: self.now_ns,
        }
    }

    /// The request back to its sender at once with status 110, as ibsim answers what it cannot
    /// deliver.
    fn drop_back(&mut self, from: usize, mut dgram: [u8; REQUEST_LEN]) -> Delivery {
        self.stats.dropped += 1;
        dgram[16..20].copy_from_slice(&DROPPED_STATUS.to_be_bytes());
        self.now(from, dgram)
    }

    /// A LID-routed MAD with slid 0 comes from its sender's LID (ibsim fills it in).
    fn fill_slid(&self, dgram: &mut [u8; REQUEST_LEN], origin: PortRef, directed: bool) {
        if directed || dgram[4..6] != [0, 0] {
            return;
        }
        let lid = self.emu.port_info(origin).map_or(0, |info| info.lid);
        dgram[4..8].copy_from_slice(&lid_field(lid));
    }
}

/// Where a client attached at `node` sits, as ibsim attaches it: port 0 of a switch, port 1 of
/// a CA or router.
fn client_port(id: ibqos_fabric::NodeId, node: &ibqos_fabric::Node) -> PortRef {
    PortRef::new(id, if node.is_switch() { 0 } else { 1 })
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
    pending: DueQueue<Delivery>,
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

    pub fn switchboard_mut(&mut self) -> &mut Switchboard {
        &mut self.board
    }

    /// Serves until `stop` is set (by a SIGTERM/SIGINT handler). Datagrams are taken in a fixed
    /// order, control first, then client 0 to 9, each socket drained before the next; answers
    /// and traps leave when the fabric's models say they arrive.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), ServeError> {
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
        }
        Ok(())
    }

    /// Emulated time now.
    fn now_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long `poll` may wait: until the next datagram or fabric event is due, at most
    /// [`STOP_CHECK`], and not at all when that is under [`SPIN_BELOW`].
    fn until_next_due(&self) -> Duration {
        let next = [
            self.pending.next_ns(),
            self.board.emulator().next_event_ns(),
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
                let mut back = delivery.datagram;
                back[16..20].copy_from_slice(&DROPPED_STATUS.to_be_bytes());
                self.deliver(&Delivery {
                    client,
                    datagram: back,
                    at_ns: now,
                });
            }
        }
    }

    /// Sends one datagram to a client's `NAME:in<pid>`; false if the client is gone.
    fn deliver(&mut self, delivery: &Delivery) -> bool {
        let Some(pid) = self.board.client_pid(delivery.client) else {
            return false;
        };
        let sent = abstract_addr(&format!("{}:in{pid}", self.sockname)).is_ok_and(|addr| {
            self.out[delivery.client]
                .send_to_addr(&delivery.datagram, &addr)
                .is_ok()
        });
        if !sent {
            self.board.disconnect(delivery.client);
        }
        sent
    }

    fn error(&self, what: &str, op: &'static str, source: io::Error) -> ServeError {
        ServeError::Socket {
            name: format!("{}:{what}", self.sockname),
            op,
            source,
        }
    }
}

/// The abstract address `\0name\0`: ibsim counts the trailing NUL into the name.
fn abstract_addr(name: &str) -> Result<SocketAddr, ServeError> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    SocketAddr::from_abstract_name(&bytes).map_err(|source| ServeError::Socket {
        name: name.to_owned(),
        op: "address",
        source,
    })
}

fn bind(name: &str) -> Result<UnixDatagram, ServeError> {
    let socket = UnixDatagram::bind_addr(&abstract_addr(name)?)
        .and_then(|s| s.set_nonblocking(true).map(|()| s))
        .map_err(|source| ServeError::Socket {
            name: name.to_owned(),
            op: "bind",
            source,
        })?;
    Ok(socket)
}

/// A `struct sim_request` dlid or slid field: a u32 holding `htons(lid)`, so on x86 the LID
/// big-endian in its first two bytes.
fn lid_field(lid: u16) -> [u8; 4] {
    u32::from(lid.to_be()).to_ne_bytes()
}

fn ne_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_ne_bytes(b)
}

/// A NUL-terminated C string from a fixed-size field.
fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
