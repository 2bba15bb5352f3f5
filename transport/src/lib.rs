//! MAD transports: how 256-byte MADs reach the fabric and come back.
//!
//! A transport only moves MADs. It does not time requests out, retry them or match responses to
//! requests: that is the MAD scheduler's job above it, which keeps the sweep engine sans-IO. The
//! one piece of judgement a transport makes is [`Incoming::Dropped`]: the fabric handed one of
//! our own requests back undelivered, which both the kernel (after its own timeout) and ibsim
//! (at once, for no route) signal with status `ETIMEDOUT` (110).
//!
//! Transaction IDs: a transport may rewrite bits 63..32 of a request's TID (the kernel puts its
//! agent id there, umad2sim and ibsim put agent and client ids there), so responses must be
//! matched on TID bits 31..0 plus the management class. A response the SM sends to a request it
//! received must carry the request's TID unchanged: ibsim routes it back by TID bits 63..48.

use std::fmt;
use std::io;
use std::str::FromStr;
use std::time::{Duration, Instant};

use ports::PortSelector;

pub mod driver;
pub mod emulated;
pub mod exchange;
pub mod fault;
pub mod ibsim;
pub mod ports;
pub mod shared;
pub mod umad;

pub use ibqos_exchange::{Address, OutgoingMad as Outgoing, Peer};

/// What a transport received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A MAD from the fabric: a response to one of our requests, or a request or trap for the SM.
    /// `from` is the sender: its LID (0xFFFF for a directed-route MAD) and QP.
    Mad { mad: Vec<u8>, from: Peer },
    /// One of our own requests handed back undelivered (umad status ETIMEDOUT). ibsim does this
    /// at once when there is no route or no handler; the kernel after its response timeout. The
    /// bytes are the request as sent (the kernel returns only its 24-byte common header).
    Dropped { mad: Vec<u8> },
}

/// The local port a transport sends from, as known when it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalPort {
    /// The port number: 1.. on a CA, 0 for a switch's management port.
    pub port_num: u8,
    /// The port's LID when the transport was opened (0 before an SM assigned one).
    pub lid: u16,
    pub port_guid: u64,
    pub node_guid: u64,
}

/// Moves MADs between the SM and the fabric.
pub trait Transport {
    /// Sends one MAD. Returns once the MAD is handed to the fabric, not when it is answered.
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError>;

    /// Waits at most `timeout` for one MAD; `Ok(None)` if none came. A zero timeout polls.
    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError>;

    /// The port this transport sends from.
    fn local_port(&self) -> LocalPort;

    /// The time the SM's timers run on: the real clock, except on a fabric emulated in
    /// virtual time, whose timeouts must pass when its responses are late, not when the
    /// machine is slow.
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        (**self).send(out)
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        (**self).recv(timeout)
    }
    fn local_port(&self) -> LocalPort {
        (**self).local_port()
    }
    fn now(&self) -> Instant {
        (**self).now()
    }
}

/// Whether the transport acts as the subnet manager of its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Claims the port for an SM: sets PortInfo.CapabilityMask.IsSM (kernel: holds `issmN`;
    /// ibsim: SET_ISSM) and receives requests and traps sent to the SM (SMInfo, SA, Notice).
    /// At most one SM per port.
    Sm,
    /// Only sends requests and receives their responses, as `smpquery` does. Several clients can
    /// share a port with an SM.
    Client,
}

/// How to open a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    pub role: Role,
    /// How long the kernel waits for the response to a request before handing the request back
    /// as [`Incoming::Dropped`]. The kernel only delivers a response if it is still waiting for
    /// it, so this must not be shorter than the scheduler's own timeout. ibsim ignores it.
    pub response_timeout: Duration,
}

/// Which fabric to talk to: the `--fabric` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FabricSpec {
    /// `ibsim:SOCKNAME@NODE`: a native client of a running ibsim (its `IBSIM_SOCKNAME`),
    /// attached at node NODE (a node id or NodeDescription from the net file).
    Ibsim { sockname: String, node: String },
    /// `umad[:DEVICE[:PORT]]` or `umad:GUID`: the kernel user-MAD interface, the first
    /// InfiniBand port unless a device (and port) or a port GUID (`0x...`) is named.
    Umad(PortSelector),
    /// `sim:TOPOLOGY[@NODE]`: a fabric emulated inside the process. TOPOLOGY is the name of a
    /// built-in fabric (`two-switch`) or a net file's path; the SM attaches at NODE (a node id
    /// or NodeDescription) or at the first CA.
    Emulated {
        topology: String,
        node: Option<String>,
    },
}

impl FabricSpec {
    /// The built-in emulated fabric: what `ibqos sm` runs against when no --fabric is given,
    /// so that it runs on a machine with no InfiniBand hardware and no ibsim.
    pub fn builtin() -> FabricSpec {
        FabricSpec::Emulated {
            topology: ibqos_emu::DEFAULT_TOPOLOGY.to_owned(),
            node: None,
        }
    }
}

impl Default for FabricSpec {
    fn default() -> Self {
        FabricSpec::Umad(PortSelector::First)
    }
}

/// ibsim copies the node name into `char nodeid[32]`, NUL included.
const IBSIM_NODE_MAX: usize = 31;
/// The socket names are `\0SOCKNAME:ctl<id>\0` in a 108-byte `sun_path`; keep well inside it.
const IBSIM_SOCKNAME_MAX: usize = 80;

/// Why a `--fabric` value was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricSpecError {
    #[error("empty fabric; use sim:TOPOLOGY[@NODE], ibsim:SOCKNAME@NODE or umad[:DEVICE[:PORT]]")]
    Empty,
    #[error(
        "unknown fabric kind `{0}`; use sim:TOPOLOGY[@NODE], ibsim:SOCKNAME@NODE or umad[:DEVICE[:PORT]]"
    )]
    UnknownKind(String),
    #[error(
        "`{0}`: an emulated fabric is sim:TOPOLOGY[@NODE], e.g. sim:two-switch@H3 or sim:fabric.net"
    )]
    EmulatedSyntax(String),
    #[error("`{0}`: an ibsim fabric is ibsim:SOCKNAME@NODE, e.g. ibsim:sim@H1")]
    IbsimSyntax(String),
    #[error("ibsim socket name `{0}` must be 1 to {IBSIM_SOCKNAME_MAX} bytes without NUL or `@`")]
    IbsimSockname(String),
    #[error("ibsim node `{0}` must be 1 to {IBSIM_NODE_MAX} bytes without NUL")]
    IbsimNode(String),
    #[error(
        "`{0}`: a umad fabric is umad, umad:DEVICE, umad:DEVICE:PORT or umad:GUID, e.g. umad:mlx5_0:1 or umad:0x0002c903000a1b2c"
    )]
    UmadSyntax(String),
    #[error("`{0}` is not a port GUID (0x and 1 to 16 hexadecimal digits)")]
    UmadGuid(String),
    #[error("umad port `{0}` is not a port number 0-254")]
    UmadPort(String),
}

impl FromStr for FabricSpec {
    type Err = FabricSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(FabricSpecError::Empty);
        }
        let (kind, rest) = match s.split_once(':') {
            Some((kind, rest)) => (kind, Some(rest)),
            None => (s, None),
        };
        match kind {
            "ibsim" => {
                let rest = rest.ok_or_else(|| FabricSpecError::IbsimSyntax(s.to_owned()))?;
                // The node may itself contain `@` (a NodeDescription); the socket name may not.
                let (sockname, node) = rest
                    .split_once('@')
                    .ok_or_else(|| FabricSpecError::IbsimSyntax(s.to_owned()))?;
                if sockname.is_empty()
                    || sockname.len() > IBSIM_SOCKNAME_MAX
                    || sockname.contains('\0')
                {
                    return Err(FabricSpecError::IbsimSockname(sockname.to_owned()));
                }
                if node.is_empty() || node.len() > IBSIM_NODE_MAX || node.contains('\0') {
                    return Err(FabricSpecError::IbsimNode(node.to_owned()));
                }
                Ok(FabricSpec::Ibsim {
                    sockname: sockname.to_owned(),
                    node: node.to_owned(),
                })
            }
            "umad" => {
                let Some(rest) = rest else {
                    return Ok(FabricSpec::default());
                };
                if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
                    return match hex.len() {
                        1..=16 => u64::from_str_radix(hex, 16)
                            .map(|guid| FabricSpec::Umad(PortSelector::Guid(guid)))
                            .map_err(|_| FabricSpecError::UmadGuid(rest.to_owned())),
                        _ => Err(FabricSpecError::UmadGuid(rest.to_owned())),
                    };
                }
                let (device, port) = match rest.split_once(':') {
                    Some((device, port)) => (device, Some(port)),
                    None => (rest, None),
                };
                if device.is_empty() || device.contains(['/', '\0']) || device.starts_with('.') {
                    return Err(FabricSpecError::UmadSyntax(s.to_owned()));
                }
                let port = port
                    .map(|p| match p.parse::<u8>() {
                        Ok(n) if n < 255 => Ok(n),
                        _ => Err(FabricSpecError::UmadPort(p.to_owned())),
                    })
                    .transpose()?;
                Ok(FabricSpec::Umad(PortSelector::Device {
                    name: device.to_owned(),
                    port,
                }))
            }
            "sim" => {
                let rest = rest.unwrap_or_default();
                // Node names cannot contain `@` (ibsim reserves it), so the last one splits.
                let (topology, node) = match rest.rsplit_once('@') {
                    Some((topology, node)) => (topology, Some(node)),
                    None => (rest, None),
                };
                if topology.is_empty() || node.is_some_and(str::is_empty) {
                    return Err(FabricSpecError::EmulatedSyntax(s.to_owned()));
                }
                Ok(FabricSpec::Emulated {
                    topology: topology.to_owned(),
                    node: node.map(str::to_owned),
                })
            }
            other => Err(FabricSpecError::UnknownKind(other.to_owned())),
        }
    }
}

impl fmt::Display for FabricSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FabricSpec::Ibsim { sockname, node } => write!(f, "ibsim:{sockname}@{node}"),
            FabricSpec::Umad(PortSelector::First) => f.write_str("umad"),
            FabricSpec::Umad(PortSelector::Device { name, port: None }) => write!(f, "umad:{name}"),
            FabricSpec::Umad(PortSelector::Device {
                name,
                port: Some(p),
            }) => write!(f, "umad:{name}:{p}"),
            FabricSpec::Umad(PortSelector::Guid(guid)) => write!(f, "umad:{guid:#018x}"),
            FabricSpec::Emulated {
                topology,
                node: None,
            } => write!(f, "sim:{topology}"),
            FabricSpec::Emulated {
                topology,
                node: Some(n),
            } => write!(f, "sim:{topology}@{n}"),
        }
    }
}

/// Opens the transport `spec` names, for a caller that only moves MADs over it.
pub fn open(
    spec: &FabricSpec,
    options: &OpenOptions,
) -> Result<Box<dyn Transport>, TransportError> {
    open_fabric(spec, options).map(Fabric::into_transport)
}

/// Opens the fabric `spec` names. An emulated one stays an [`EmulatedTransport`], so that
/// the caller can set its emulator up (latency, faults) and read it back.
///
/// [`EmulatedTransport`]: emulated::EmulatedTransport
pub fn open_fabric(spec: &FabricSpec, options: &OpenOptions) -> Result<Fabric, TransportError> {
    Ok(match spec {
        FabricSpec::Ibsim { sockname, node } => Fabric::Other(Box::new(
            ibsim::IbsimTransport::connect(sockname, node, options.role)?,
        )),
        FabricSpec::Umad(selector) => {
            Fabric::Other(Box::new(umad::UmadTransport::open(selector, options)?))
        }
        FabricSpec::Emulated { topology, node } => Fabric::Emulated(
            emulated::EmulatedTransport::open(topology, node.as_deref())?,
        ),
    })
}

/// An open fabric: [`open_fabric`]'s answer.
// One per process, so the emulated variant's size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Fabric {
    /// A fabric emulated inside the process, which its caller may reach into.
    Emulated(emulated::EmulatedTransport),
    /// Any other: kernel umad or an ibsim client.
    Other(Box<dyn Transport>),
}

// By hand: a transport behind `dyn` has no `Debug` to derive from.
impl fmt::Debug for Fabric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fabric::Emulated(transport) => f.debug_tuple("Emulated").field(transport).finish(),
            Fabric::Other(_) => f.write_str("Other(..)"),
        }
    }
}

impl Fabric {
    /// The transport, whatever the fabric.
    pub fn transport(&mut self) -> &mut dyn Transport {
        match self {
            Fabric::Emulated(transport) => transport,
            Fabric::Other(transport) => transport.as_mut(),
        }
    }

    /// The transport alone, for a caller that needs nothing else of the fabric.
    pub fn into_transport(self) -> Box<dyn Transport> {
        match self {
            Fabric::Emulated(transport) => Box::new(transport),
            Fabric::Other(transport) => transport,
        }
    }
}

/// Why a transport failed. Every variant names the device or socket, and where the operating
/// system said no, the call and its errno.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A system call failed.
    #[error("{target}: {call} failed")]
    Os {
        /// The device, sysfs file or socket, e.g. `/dev/infiniband/umad0`, `ibsim @sim:ctl`.
        target: String,
        /// The call, e.g. `open`, `ioctl(IB_USER_MAD_REGISTER_AGENT)`, `connect`.
        call: &'static str,
        source: io::Error,
    },
    /// No InfiniBand port to use.
    #[error("no InfiniBand device: {reason}; use --fabric ibsim:NAME@NODE for a simulated fabric")]
    NoDevice { reason: String },
    /// sysfs had something unexpected.
    #[error("{path}: {reason}")]
    Sysfs { path: String, reason: String },
    /// ibsim answered a control request with an error.
    #[error("ibsim @{sockname}: {request} refused: {reason}")]
    IbsimRefused {
        sockname: String,
        request: &'static str,
        reason: String,
    },
    /// ibsim's control reply was not a control reply.
    #[error("ibsim @{sockname}: bad {request} reply: {reason}")]
    IbsimProtocol {
        sockname: String,
        request: &'static str,
        reason: String,
    },
    /// The emulated fabric could not be built: a net file that does not load, an unknown node.
    #[error("emulated fabric `{topology}`: {reason}")]
    Emulated { topology: String, reason: String },
    /// The MAD cannot be sent on this transport.
    #[error("{target}: cannot send: {reason}")]
    Unsendable { target: String, reason: String },
}

impl TransportError {
    fn os(target: impl Into<String>, call: &'static str, source: io::Error) -> Self {
        TransportError::Os {
            target: target.into(),
            call,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ibsim_spec() {
        assert_eq!(
            "ibsim:sim@H1".parse(),
            Ok(FabricSpec::Ibsim {
                sockname: "sim".into(),
                node: "H1".into()
            })
        );
        // A NodeDescription may contain `@`; the split is at the first one.
        assert_eq!(
            "ibsim:s@host@rack".parse(),
            Ok(FabricSpec::Ibsim {
                sockname: "s".into(),
                node: "host@rack".into()
            })
        );
    }

    #[test]
    fn parses_umad_specs() {
        assert_eq!("umad".parse(), Ok(FabricSpec::default()));
        assert_eq!(
            "umad:mlx5_0".parse(),
            Ok(FabricSpec::Umad(PortSelector::Device {
                name: "mlx5_0".into(),
                port: None
            }))
        );
        assert_eq!(
            "umad:mlx5_0:2".parse(),
            Ok(FabricSpec::Umad(PortSelector::Device {
                name: "mlx5_0".into(),
                port: Some(2)
            }))
        );
        let by_guid = "umad:0x0002c903000a1b2c".parse();
        assert_eq!(
            by_guid,
            Ok(FabricSpec::Umad(PortSelector::Guid(0x0002_c903_000a_1b2c)))
        );
        assert_eq!(by_guid.unwrap().to_string(), "umad:0x0002c903000a1b2c");
        for bad in ["umad:0x", "umad:0x12345678901234567", "umad:0xfoo"] {
            assert!(
                matches!(bad.parse::<FabricSpec>(), Err(FabricSpecError::UmadGuid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn parses_emulated_specs() {
        assert_eq!(
            "sim:fat.net".parse(),
            Ok(FabricSpec::Emulated {
                topology: "fat.net".into(),
                node: None
            })
        );
        assert_eq!(
            "sim:dir@x/fat.net@S1".parse(),
            Ok(FabricSpec::Emulated {
                topology: "dir@x/fat.net".into(),
                node: Some("S1".into())
            })
        );
        assert_eq!(FabricSpec::builtin().to_string(), "sim:two-switch");
    }

    #[test]
    fn rejects_bad_specs_with_a_reason() {
        let cases = [
            ("", FabricSpecError::Empty),
            ("ibsim", FabricSpecError::IbsimSyntax("ibsim".into())),
            (
                "ibsim:sim",
                FabricSpecError::IbsimSyntax("ibsim:sim".into()),
            ),
            ("ibsim:@H1", FabricSpecError::IbsimSockname("".into())),
            ("ibsim:sim@", FabricSpecError::IbsimNode("".into())),
            (
                "ibsim:sim@0123456789012345678901234567890123",
                FabricSpecError::IbsimNode("0123456789012345678901234567890123".into()),
            ),
            ("umad:", FabricSpecError::UmadSyntax("umad:".into())),
            ("umad:../x", FabricSpecError::UmadSyntax("umad:../x".into())),
            ("umad:mlx5_0:x", FabricSpecError::UmadPort("x".into())),
            ("umad:mlx5_0:300", FabricSpecError::UmadPort("300".into())),
            ("sim", FabricSpecError::EmulatedSyntax("sim".into())),
            ("sim:", FabricSpecError::EmulatedSyntax("sim:".into())),
            ("sim:@H1", FabricSpecError::EmulatedSyntax("sim:@H1".into())),
            (
                "sim:a.net@",
                FabricSpecError::EmulatedSyntax("sim:a.net@".into()),
            ),
            ("rdma", FabricSpecError::UnknownKind("rdma".into())),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<FabricSpec>(), Err(want), "{input:?}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "ibsim:sim@H1",
            "umad",
            "umad:mlx5_0",
            "umad:mlx5_0:1",
            "sim:two-switch",
            "sim:/tmp/fat.net@H1",
        ] {
            assert_eq!(s.parse::<FabricSpec>().unwrap().to_string(), s);
        }
    }
}
