//! A native client of ibsim's socket protocol: no LD_PRELOAD shim, no fake file descriptors.
//!
//! ibsim (local mode) listens on abstract-namespace AF_UNIX datagram sockets named
//! `\0<sockname>:ctl\0` (control) and `\0<sockname>:out<N>\0` (data of client N); the trailing
//! NUL is part of each name, as `/proc/net/unix` shows (`@sim:ctl@`). A client binds
//! `<sockname>:ctl<id>` and `<sockname>:in<id>`, sends CONNECT (80-byte `struct sim_ctl`, host
//! byte order) with its id, and ibsim connects `out<client>` to the client's `in<id>`. MADs then
//! travel as 288-byte `struct sim_request` datagrams.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ibqos_emu::serve::abstract_addr as ibsim_addr;
use ibqos_exchange::class::Channel;
use ibqos_mad::ibsim::{
    CTL_LEN, CtlType, DROPPED_STATUS, HostU32, MAGIC, MAX_CLIENTS, NODE_ID_MAX, REQUEST_LEN,
    SimClientInfo, SimCtl, SimRequest,
};
use ibqos_mad::sa::single_mad;
use ibqos_mad::{DrPath, NodeInfo, NodeType, PortInfo};

use super::{Address, Incoming, LocalPort, Outgoing, Peer, Role, Transport, TransportError};

/// A control exchange is one datagram each way with a single-threaded server that answers at
/// once; this only bounds the wait when ibsim died between our connect and its reply.
const CTL_TIMEOUT: Duration = Duration::from_secs(5);

/// Distinguishes transports within one process: ibsim names each client's data socket after
/// the id in CONNECT, so two transports in one process need two ids. ibsim prints the id with
/// `%d`, so it must stay below 2^31: the pid (below 2^22 on Linux) plus a 9-bit counter.
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(0);

/// A client of one ibsim, attached at one node's port (port 1 of a CA, port 0 of a switch).
#[derive(Debug)]
pub struct IbsimTransport {
    sockname: String,
    ctl: UnixDatagram,
    data: UnixDatagram,
    /// How `data` waits now, so that a receive changes it only when asked for another wait:
    /// the sweep asks for the same one MAD after MAD.
    waiting: Waiting,
    client_id: u32,
    role: Role,
    local: LocalPort,
    /// The node ibsim attached us to, as it names it.
    attached_node: String,
    malformed: u64,
    /// Whether ibsim holds a client slot for us, which Drop must give back. Until CONNECT
    /// succeeded `client_id` is not ours: a DISCONNECT would detach another client.
    connected: bool,
}

impl IbsimTransport {
    /// Attaches to the ibsim serving `sockname` at `node`. With [`Role::Sm`] the client is
    /// flagged as the node's SM (ibsim then forwards SMInfo, SA and traps to it) and the port's
    /// CapabilityMask.IsSM is set, as opening `issm` does on real hardware.
    pub fn connect(sockname: &str, node: &str, role: Role) -> Result<Self, TransportError> {
        let instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed) % 512;
        let id = (std::process::id() & 0x3f_ffff) | (instance << 22);
        let ctl_target = format!("ibsim @{sockname}:ctl");
        let ctl = bind(&format!("{sockname}:ctl{id}"))?;
        ctl.connect_addr(&abstract_addr(&format!("{sockname}:ctl"))?)
            .map_err(|e| {
                TransportError::os(
                    format!("{ctl_target} (is ibsim running with IBSIM_SOCKNAME={sockname}?)"),
                    "connect",
                    e,
                )
            })?;
        ctl.set_read_timeout(Some(CTL_TIMEOUT))
            .map_err(|e| TransportError::os(ctl_target.clone(), "setsockopt(SO_RCVTIMEO)", e))?;
        let data = bind(&format!("{sockname}:in{id}"))?;

        if node.is_empty() || node.len() > NODE_ID_MAX || node.contains('\0') {
            return Err(TransportError::IbsimRefused {
                sockname: sockname.to_owned(),
                request: "CONNECT",
                reason: format!("node name `{node}` must be 1 to 31 bytes without NUL"),
            });
        }
        let mut info = [0u8; SimClientInfo::<&[u8]>::LEN];
        let mut client = SimClientInfo::new_unchecked(&mut info[..]);
        client.set_id(HostU32(id));
        // qp 0: this client takes SMPs (and, as SM, the GMPs of QP1) of its port.
        client.set_issm(HostU32((role == Role::Sm).into()));
        client.set_node_id(node);
        let mut transport = IbsimTransport {
            sockname: sockname.to_owned(),
            ctl,
            data,
            waiting: Waiting::Blocking(None),
            client_id: 0,
            role,
            local: LocalPort {
                port_num: 0,
                lid: 0,
                port_guid: 0,
                node_guid: 0,
            },
            attached_node: String::new(),
            malformed: 0,
            connected: false,
        };
        let reply = transport
            .ctl(CtlType::Connect, "CONNECT", &info)
            .map_err(|e| match e {
                TransportError::IbsimRefused { sockname, .. } => TransportError::IbsimRefused {
                    sockname,
                    request: "CONNECT",
                    reason: format!(
                        "no node `{node}`, all {MAX_CLIENTS} client slots taken{}",
                        if role == Role::Sm {
                            ", or another SM is attached there"
                        } else {
                            ""
                        }
                    ),
                },
                other => other,
            })?;
        let attached = SimClientInfo::new_unchecked(&reply[..]);
        transport.client_id = attached.id().0;
        transport.connected = true;
        transport.attached_node = attached.node_id();
        // From here on, Drop sends DISCONNECT, so every early return below frees the slot.
        let out = abstract_addr(&format!("{sockname}:out{}", transport.client_id))?;
        transport.data.connect_addr(&out).map_err(|e| {
            TransportError::os(
                format!("ibsim @{sockname}:out{}", transport.client_id),
                "connect",
                e,
            )
        })?;
        transport.local = transport.query_local_port()?;
        if role == Role::Sm {
            transport.ctl(CtlType::SetIsSm, "SET_ISSM", &1i32.to_ne_bytes())?;
        }
        Ok(transport)
    }

    /// The node ibsim attached this client to (its id in the net file).
    pub fn attached_node(&self) -> &str {
        &self.attached_node
    }

    /// How many received datagrams were not a 288-byte `sim_request` and were dropped. ibsim
    /// never sends such a thing; a non-zero count means something else wrote to our socket.
    pub fn malformed_count(&self) -> u64 {
        self.malformed
    }

    /// Reads the attach port's NodeInfo and PortInfo from ibsim's control channel.
    fn query_local_port(&self) -> Result<LocalPort, TransportError> {
        let node_info = self.ctl(CtlType::GetNodeInfo, "GET_NODEINFO", &[])?;
        // data[0] = 0: the port this client is attached at.
        let port_info = self.ctl(CtlType::GetPortInfo, "GET_PORTINFO", &[0])?;
        let (node_info, port_info) = (
            NodeInfo::new_unchecked(&node_info[..]),
            PortInfo::new_unchecked(&port_info[..]),
        );
        let node_guid = node_info.node_guid();
        let port_num = port_info.local_port_num();
        let lid = port_info.lid();
        // ibsim's rule (do_nodeinfo): a switch's ports share the node GUID, CA port n has
        // NodeGUID + n. Its stored NodeInfo does not carry the attach port's PortGUID.
        let port_guid = if node_info.node_type() == NodeType::Switch {
            node_guid
        } else {
            node_guid.wrapping_add(port_num.into())
        };
        Ok(LocalPort {
            port_num,
            lid,
            port_guid,
            node_guid,
        })
    }

    /// One control request and its reply's 64-byte data area.
    fn ctl(
        &self,
        kind: CtlType,
        request: &'static str,
        data: &[u8],
    ) -> Result<[u8; 64], TransportError> {
        let target = || format!("ibsim @{}:ctl", self.sockname);
        let mut msg = [0u8; CTL_LEN];
        let mut ctl = SimCtl::new_unchecked(&mut msg[..]);
        ctl.set_magic(HostU32(MAGIC));
        ctl.set_client_id(HostU32(self.client_id));
        ctl.set_ctl_type(kind);
        ctl.set_len(HostU32(data.len() as u32));
        ctl.data_mut()[..data.len()].copy_from_slice(data);
        self.ctl
            .send(&msg)
            .map_err(|e| TransportError::os(target(), "send", e))?;
        let mut reply = [0u8; CTL_LEN + 1];
        let n = self.ctl.recv(&mut reply).map_err(|e| {
            let e = if is_timeout(&e) {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no reply within {CTL_TIMEOUT:?}"),
                )
            } else {
                e
            };
            TransportError::os(target(), "recv", e)
        })?;
        let protocol = |reason: String| TransportError::IbsimProtocol {
            sockname: self.sockname.clone(),
            request,
            reason,
        };
        if n != CTL_LEN {
            return Err(protocol(format!("{n} bytes, not {CTL_LEN}")));
        }
        let reply = SimCtl::new_unchecked(&reply[..n]);
        let magic = reply.magic().0;
        if magic != MAGIC {
            return Err(protocol(format!("magic {magic:#x}")));
        }
        if reply.ctl_type() == CtlType::Error {
            return Err(TransportError::IbsimRefused {
                sockname: self.sockname.clone(),
                request,
                reason: "ibsim answered with an error".into(),
            });
        }
        let mut out = [0u8; 64];
        out.copy_from_slice(reply.data());
        Ok(out)
    }
}

impl Transport for IbsimTransport {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        let req = request_datagram(out);
        let n = self.data.send(&req).map_err(|e| {
            TransportError::os(
                format!("ibsim @{}:out{}", self.sockname, self.client_id),
                "send",
                e,
            )
        })?;
        if n != REQUEST_LEN {
            return Err(TransportError::Unsendable {
                target: format!("ibsim @{}:out{}", self.sockname, self.client_id),
                reason: format!("datagram cut to {n} bytes"),
            });
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        let deadline = Instant::now() + timeout;
        // One byte more than a request, so that an oversized datagram shows as such.
        let mut buf = [0u8; REQUEST_LEN + 1];
        let mut left = timeout;
        loop {
            let n = match self.recv_within(&mut buf, left) {
                Ok(Some(n)) => n,
                Ok(None) => return Ok(None),
                Err(e) => {
                    return Err(TransportError::os(
                        format!("ibsim @{}:in (client {})", self.sockname, self.client_id),
                        "recv",
                        e,
                    ));
                }
            };
            if n != REQUEST_LEN {
                // Not from ibsim, whose every datagram is a whole sim_request: skip it rather
                // than fail the sweep, and count it for whoever investigates.
                self.malformed += 1;
                left = deadline.saturating_duration_since(Instant::now());
                continue;
            }
            return Ok(Some(incoming(&buf[..n])));
        }
    }

    fn local_port(&self) -> LocalPort {
        self.local
    }
}

impl IbsimTransport {
    /// One datagram within `timeout`, `None` if none came.
    fn recv_within(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        // SO_RCVTIMEO cannot be zero (zero means "forever"), so a zero timeout polls.
        let waiting = if timeout.is_zero() {
            Waiting::Polling
        } else {
            Waiting::Blocking(Some(timeout))
        };
        if waiting != self.waiting {
            self.data.set_nonblocking(waiting == Waiting::Polling)?;
            if let Waiting::Blocking(timeout) = waiting {
                self.data.set_read_timeout(timeout)?;
            }
            self.waiting = waiting;
        }
        match self.data.recv(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if is_timeout(&e) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// How the data socket waits for a datagram: not at all, or blocking at most so long (`None`:
/// for ever, as a new socket does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    Polling,
    Blocking(Option<Duration>),
}

impl Drop for IbsimTransport {
    fn drop(&mut self) {
        if !self.connected {
            return;
        }
        // ibsim does not clear IsSM on DISCONNECT (only when it finds the client dead), so an
        // SM clears it first, as closing `issm` does on real hardware. Errors are moot here:
        // if ibsim is gone, so is the state.
        if self.role == Role::Sm {
            let _ = self.ctl(CtlType::SetIsSm, "SET_ISSM", &0i32.to_ne_bytes());
        }
        let _ = self.ctl(CtlType::Disconnect, "DISCONNECT", &[]);
    }
}

/// `out` as the `sim_request` datagram an ibsim client sends.
pub(crate) fn request_datagram(out: &Outgoing) -> [u8; REQUEST_LEN] {
    let mut req = [0u8; REQUEST_LEN];
    let mut request = SimRequest::new_unchecked(&mut req[..]);
    let class_qpn = Channel::of(out.class).qp;
    // slid 0: ibsim fills in the LID of our port.
    let (dlid, slid, dqp) = match out.address {
        Address::Directed => (DrPath::PERMISSIVE_LID, DrPath::PERMISSIVE_LID, class_qpn),
        Address::Lid(lid) => (lid, 0, class_qpn),
        Address::Peer(peer) => (peer.lid, 0, peer.qp),
    };
    request.set_dlid(dlid);
    request.set_slid(slid);
    request.set_dqp(dqp);
    request.set_sqp(class_qpn);
    // ibsim carries one MAD and does no RMPP: a longer SA answer is cut to one valid MAD,
    // as OpenSM's answers are cut on ibsim. The length is the message's: a client counts
    // the records of an SA answer by it.
    let mad = single_mad(&out.mad);
    request.set_length(mad.len() as u64);
    request.mad_mut()[..mad.len()].copy_from_slice(&mad);
    req
}

/// What a whole `sim_request` datagram from ibsim brings: a MAD and its sender, or one of our
/// own requests handed back undelivered (status 110).
pub(crate) fn incoming(datagram: &[u8]) -> Incoming {
    let request = SimRequest::new_unchecked(datagram);
    let mad = request.mad().to_vec();
    if request.status() == DROPPED_STATUS {
        Incoming::Dropped { mad }
    } else {
        Incoming::Mad {
            mad,
            from: Peer {
                lid: request.slid(),
                qp: request.sqp(),
                pkey_index: 0,
            },
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The address of the ibsim socket `name`.
fn abstract_addr(name: &str) -> Result<SocketAddr, TransportError> {
    ibsim_addr(name).map_err(|e| TransportError::os(format!("ibsim @{name}"), "socket address", e))
}

fn bind(name: &str) -> Result<UnixDatagram, TransportError> {
    UnixDatagram::bind_addr(&abstract_addr(name)?)
        .map_err(|e| TransportError::os(format!("ibsim @{name}"), "bind", e))
}
