//! The kernel user-MAD interface (`/dev/infiniband/umadN`, `issmN`): real hardware, and ibsim
//! through its LD_PRELOAD shim `libumad2sim.so`.
//!
//! This is the only module of the project allowed `unsafe`: the device is driven with raw
//! `open`/`read`/`write`/`poll`/`ioctl`/`close` and sysfs with `open`/`read` and
//! `opendir`/`readdir`. That is deliberate. umad2sim intercepts exactly the libc symbols `open`,
//! `close`, `read`, `write`, `poll`, `ioctl`, `opendir` and `scandir`; Rust's `std::fs` calls
//! `open64`/`statx` and would read the real `/sys` and miss the fake fds. nix is not used either:
//! its `read` turns any return value other than -1 into a length, and umad2sim's `read` returns
//! `-11` (without setting errno) when its queue is empty.
//!
//! Header size: the kernel's `struct ib_user_mad` header is 64 bytes once
//! `IB_USER_MAD_ENABLE_PKEY` succeeded, 56 before (or on a kernel without it). umad2sim accepts
//! ENABLE_PKEY but ignores it: it keeps using 56 bytes unless libibumad's own `umad_open_port()`
//! ran in the process, and silently drops a MAD written with a 64-byte header. So the header is
//! 56 bytes under umad2sim (detected by the shim being mapped into the process) or without
//! ENABLE_PKEY, and 64 otherwise.

#![allow(unsafe_code)]

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::io;
use std::time::{Duration, Instant};

use super::{
    Address, Incoming, LocalPort, OpenOptions, Outgoing, Peer, Role, Transport, TransportError,
};
use crate::ports::{self, PortPlace, PortSelector, SysfsRoot};
use ibqos_exchange::class::Channel;
use ibqos_mad::sa::{SA_CLASS_VERSION, single_mad};
use ibqos_mad::{Mad, Method, MgmtClass};

/// `struct ib_user_mad` header with `pkey_index` (after ENABLE_PKEY) and without.
const HDR_WITH_PKEY: usize = 64;
const HDR_WITHOUT_PKEY: usize = 56;
const MAD_LEN: usize = 256;
/// The longest message read: far more than any SA request (a MultiPathRecord with every GID a
/// client can name); a claim of more is not believed.
const MAX_RECEIVED_MESSAGE: usize = 64 * 1024;
/// The kernel hands back a timed-out request as the header plus the 24-byte MAD header.
const MAD_COMMON_HEADER: usize = 24;

/// `ib_user_mad_hdr.status` of a request the kernel hands back undelivered: the errno
/// ETIMEDOUT (umad2sim passes ibsim's dropped status, the same number, through unchanged).
const UNDELIVERED: u32 = libc::ETIMEDOUT as u32;

/// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
const IB_USER_MAD_REGISTER_AGENT: libc::c_ulong = 0xc01c_1b01;
/// `_IO(0x1b, 3)`.
const IB_USER_MAD_ENABLE_PKEY: libc::c_ulong = 0x0000_1b03;

/// `struct ib_user_mad_reg_req` (28 bytes).
#[repr(C)]
#[derive(Debug, Default)]
struct RegReq {
    id: u32,
    method_mask: [u32; 4],
    qpn: u8,
    mgmt_class: u8,
    mgmt_class_version: u8,
    oui: [u8; 3],
    rmpp_version: u8,
}

const _: () = assert!(std::mem::size_of::<RegReq>() == 28);

/// The class version of every SMP (IBA 14.2.1.1).
const SMP_CLASS_VERSION: u8 = 1;
/// Methods an SM answers or receives unsolicited: SubnGet/Set (SMInfo from another SM),
/// SubnTrap and SubnTrapRepress.
const SM_SMP_METHODS: &[Method] = &[Method::Get, Method::Set, Method::Trap, Method::TrapRepress];
/// SA methods a request to the SM's port can carry, as OpenSM registers them: Get, Set,
/// GetTable, GetMulti and Delete (OpenSM libvendor/osm_vendor_ibumad.c:930-957).
const SM_SA_METHODS: &[Method] = &[
    Method::Get,
    Method::Set,
    Method::GetTable,
    Method::GetMulti,
    Method::Delete,
];
/// The RMPP version the kernel segments and reassembles a class's long messages with.
const RMPP_VERSION: u8 = 1;

/// A file descriptor closed with the plain `close` symbol (which umad2sim intercepts).
#[derive(Debug)]
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: self.0 came from a successful open() and is owned by this value alone, so it
        // is closed exactly once.
        unsafe {
            libc::close(self.0);
        }
    }
}

/// A umad device port opened for MADs.
#[derive(Debug)]
pub struct UmadTransport {
    /// Held (opened) while the SM runs: the kernel sets IsSM on the port while it is open.
    /// Declared before `fd` so that it is closed first.
    issm: Option<Fd>,
    fd: Fd,
    device_path: String,
    hdr_len: usize,
    /// ibsim's shim is loaded: it does no RMPP.
    under_umad2sim: bool,
    /// (management class, agent id) as registered.
    agents: Vec<(MgmtClass, u32)>,
    response_timeout_ms: u32,
    local: LocalPort,
    malformed: u64,
}

impl UmadTransport {
    /// Opens the InfiniBand port `selector` names, found under the sysfs root
    /// [`SysfsRoot::from_env`] gives.
    pub fn open(selector: &PortSelector, options: &OpenOptions) -> Result<Self, TransportError> {
        let root = SysfsRoot::from_env();
        let place = ports::find_port(&root, selector)?;
        let umad = umad_index(&root, &place)?;
        let local = read_local_port(&root, &place)?;
        let device_path = format!("/dev/infiniband/umad{umad}");
        let fd = open_path(
            &device_path,
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )?;
        // SAFETY: fd is an open umad fd; ENABLE_PKEY takes no argument.
        let rc = unsafe { libc::ioctl(fd.0, IB_USER_MAD_ENABLE_PKEY) };
        let pkey_enabled = if rc == 0 {
            true
        } else {
            let e = io::Error::last_os_error();
            // Kernels before 2.6.35 (ABI without pkey_index) do not know the ioctl.
            if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOTTY)) {
                return Err(TransportError::os(
                    device_path,
                    "ioctl(IB_USER_MAD_ENABLE_PKEY)",
                    e,
                ));
            }
            false
        };
        let under_umad2sim = umad2sim_loaded();
        let hdr_len = if pkey_enabled && !under_umad2sim {
            HDR_WITH_PKEY
        } else {
            HDR_WITHOUT_PKEY
        };
        let mut transport = UmadTransport {
            issm: None,
            fd,
            device_path,
            hdr_len,
            under_umad2sim,
            agents: Vec::new(),
            response_timeout_ms: u32::try_from(options.response_timeout.as_millis())
                .unwrap_or(u32::MAX)
                .max(1),
            local,
            malformed: 0,
        };
        // Every class a MAD can arrive in must have an agent before anything can arrive:
        // umad2sim dereferences NULL (and the process dies) on a MAD of a class nobody
        // registered, and the SM's own trap 144 arrives as soon as issm is opened.
        let sm = options.role == Role::Sm;
        let smp_methods = if sm { SM_SMP_METHODS } else { &[] };
        transport.register(MgmtClass::SubnDirectedRoute, SMP_CLASS_VERSION, smp_methods)?;
        transport.register(MgmtClass::SubnLid, SMP_CLASS_VERSION, smp_methods)?;
        if sm {
            // With RMPP, the kernel segments the SA's long answers and reassembles long
            // requests (GetMulti), as it does for OpenSM.
            transport.register(MgmtClass::SubnAdm, SA_CLASS_VERSION, SM_SA_METHODS)?;
            let issm_path = format!("/dev/infiniband/issm{umad}");
            // O_NONBLOCK: if another SM holds the port, fail with EAGAIN instead of waiting.
            let issm = open_path(
                &issm_path,
                libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
            .map_err(|e| match e {
                TransportError::Os { source, .. }
                    if source.raw_os_error() == Some(libc::EAGAIN) =>
                {
                    TransportError::os(
                        issm_path,
                        "open",
                        io::Error::new(
                            io::ErrorKind::WouldBlock,
                            "another SM already holds this port",
                        ),
                    )
                }
                other => other,
            })?;
            transport.issm = Some(issm);
        }
        Ok(transport)
    }

    /// The `struct ib_user_mad` header size in use: 56 or 64 bytes.
    pub fn header_len(&self) -> usize {
        self.hdr_len
    }

    /// Received MADs that were dropped because they were shorter than a MAD header or carried
    /// a status other than 0 and ETIMEDOUT (neither the kernel nor umad2sim produces them).
    pub fn malformed_count(&self) -> u64 {
        self.malformed
    }

    /// Registers an agent for `class` at `version`, which also receives the requests of
    /// `methods` sent to the port. Its QP and RMPP are the class's ([`Channel::of`]).
    fn register(
        &mut self,
        class: MgmtClass,
        version: u8,
        methods: &[Method],
    ) -> Result<(), TransportError> {
        let channel = Channel::of(class);
        let mgmt_class = u8::from(class);
        let mut req = RegReq {
            // 0 or 1: the special QPs are the only ones an agent registers on.
            qpn: channel.qp as u8,
            mgmt_class,
            mgmt_class_version: version,
            rmpp_version: if channel.rmpp { RMPP_VERSION } else { 0 },
            ..RegReq::default()
        };
        for &method in methods {
            let m = u8::from(method);
            req.method_mask[usize::from(m / 32)] |= 1 << (m % 32);
        }
        // SAFETY: req is a live, properly laid out struct ib_user_mad_reg_req (size checked at
        // compile time) that the kernel reads and writes (the agent id) during the call only.
        let rc = unsafe { libc::ioctl(self.fd.0, IB_USER_MAD_REGISTER_AGENT, &mut req) };
        if rc < 0 {
            return Err(TransportError::os(
                format!("{} (class {mgmt_class:#04x})", self.device_path),
                "ioctl(IB_USER_MAD_REGISTER_AGENT)",
                io::Error::last_os_error(),
            ));
        }
        self.agents.push((class, req.id));
        Ok(())
    }

    fn os_error(&self, call: &'static str) -> TransportError {
        TransportError::os(self.device_path.clone(), call, io::Error::last_os_error())
    }
}

impl Transport for UmadTransport {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        let unsendable = |reason: String| TransportError::Unsendable {
            target: self.device_path.clone(),
            reason,
        };
        let class = out.class;
        let agent = self
            .agents
            .iter()
            .find(|(c, _)| *c == class)
            .map(|&(_, id)| id)
            .ok_or_else(|| {
                unsendable(format!(
                    "no agent registered for management class {:#04x}",
                    u8::from(class)
                ))
            })?;
        let method = Mad::new_checked(&out.mad[..])
            .map_err(|_| unsendable(format!("{} bytes are no MAD", out.mad.len())))?
            .method();
        // The kernel delivers a response only while it waits for it, and only for a request
        // sent with a timeout. Responses and TrapRepress expect no answer.
        let expects_response = !method.is_response() && method != Method::TrapRepress;
        let Channel {
            qp: class_qpn,
            qkey,
            ..
        } = Channel::of(class);
        let (lid, qpn, pkey_index) = match out.address {
            Address::Directed => (0xffff, class_qpn, 0),
            Address::Lid(lid) => (lid, class_qpn, 0),
            Address::Peer(peer) => (peer.lid, peer.qp, peer.pkey_index),
        };
        // An SA answer longer than one MAD is written whole: the kernel's RMPP (the agent is
        // registered with RMPP version 1) cuts it into segments. umad2sim does no RMPP and would
        // cut it silently, so under the shim it is cut here, to a valid single MAD.
        let message = if self.under_umad2sim {
            Cow::Owned(single_mad(&out.mad))
        } else {
            Cow::Borrowed(&out.mad[..])
        };
        let mut buf = vec![0u8; self.hdr_len + message.len()];
        buf[0..4].copy_from_slice(&agent.to_ne_bytes());
        let timeout = if expects_response {
            self.response_timeout_ms
        } else {
            0
        };
        buf[8..12].copy_from_slice(&timeout.to_ne_bytes());
        // retries (12..16) 0: the scheduler retries.
        buf[20..24].copy_from_slice(&qpn.to_be_bytes());
        buf[24..28].copy_from_slice(&qkey.to_be_bytes());
        buf[28..30].copy_from_slice(&lid.to_be_bytes());
        if self.hdr_len == HDR_WITH_PKEY {
            buf[56..58].copy_from_slice(&pkey_index.to_ne_bytes());
        }
        buf[self.hdr_len..].copy_from_slice(&message);
        // SAFETY: buf is a live buffer of buf.len() bytes that write() only reads.
        let n = unsafe { libc::write(self.fd.0, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(self.os_error("write"));
        }
        if n as usize != buf.len() {
            return Err(unsendable(format!("write took {n} of {} bytes", buf.len())));
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; self.hdr_len + MAD_LEN];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut pfd = libc::pollfd {
                fd: self.fd.0,
                events: libc::POLLIN,
                revents: 0,
            };
            // Round up, so that a short wait is not a busy loop of zero-millisecond polls.
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: pfd is one live pollfd, matching the count 1. umad2sim's poll looks at
            // the first umad fd only, so the umad fd is polled alone.
            let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(TransportError::os(self.device_path.clone(), "poll", e));
            }
            if ready > 0 {
                // SAFETY: buf is a live, writable buffer of buf.len() bytes.
                let n = unsafe { libc::read(self.fd.0, buf.as_mut_ptr().cast(), buf.len()) };
                if n == -1 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::ENOSPC) {
                        // A request the kernel's RMPP reassembled (a GetMulti spanning
                        // segments) is longer than the buffer: the kernel wrote the header,
                        // whose length field is the whole message with its header, and keeps
                        // the message queued for a read with room enough (linux
                        // user_mad.c `copy_recv_mad`).
                        let needed = u32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
                        let needed = usize::try_from(needed).unwrap_or(usize::MAX);
                        if needed > buf.len() && needed <= MAX_RECEIVED_MESSAGE {
                            buf.resize(needed, 0);
                            continue;
                        }
                    }
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) {
                        return Err(TransportError::os(self.device_path.clone(), "read", e));
                    }
                } else if n >= 0
                    && let Some(incoming) = self.decode(&buf[..n as usize])
                {
                    return Ok(Some(incoming));
                }
                // n < -1: umad2sim returns -EWOULDBLOCK itself when its queue is empty.
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    fn local_port(&self) -> LocalPort {
        self.local
    }
}

impl UmadTransport {
    fn decode(&mut self, packet: &[u8]) -> Option<Incoming> {
        if packet.len() < self.hdr_len + MAD_COMMON_HEADER {
            self.malformed += 1;
            return None;
        }
        let status = u32::from_ne_bytes([packet[4], packet[5], packet[6], packet[7]]);
        let mad = packet[self.hdr_len..].to_vec();
        match status {
            0 => Some(Incoming::Mad {
                mad,
                from: Peer {
                    lid: u16::from_be_bytes([packet[28], packet[29]]),
                    qp: u32::from_be_bytes([packet[20], packet[21], packet[22], packet[23]]),
                    pkey_index: if self.hdr_len == HDR_WITH_PKEY {
                        u16::from_ne_bytes([packet[56], packet[57]])
                    } else {
                        0
                    },
                },
            }),
            UNDELIVERED => Some(Incoming::Dropped { mad }),
            _ => {
                self.malformed += 1;
                None
            }
        }
    }
}

/// Whether ibsim's umad2sim shim is loaded: it keeps the 56-byte header whatever ENABLE_PKEY
/// says (see the module documentation).
fn umad2sim_loaded() -> bool {
    // /proc is not redirected by the shim, so std may read it.
    std::fs::read_to_string("/proc/self/maps").is_ok_and(|maps| maps.contains("umad2sim"))
}

/// N of the `umadN` serving (device, port), from `/sys/class/infiniband_mad/umadN/{ibdev,port}`.
fn umad_index(root: &SysfsRoot, place: &PortPlace) -> Result<u32, TransportError> {
    let class = root.infiniband_mad();
    let entries = list_dir(&class).map_err(|e| TransportError::os(class.clone(), "opendir", e))?;
    for entry in entries {
        let Some(n) = entry
            .strip_prefix("umad")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = format!("{class}/{entry}");
        let read = |f: &str| {
            read_sysfs(&format!("{dir}/{f}"))
                .map_err(|e| TransportError::os(format!("{dir}/{f}"), "read", e))
        };
        if read("ibdev")? == place.device && read("port")? == place.port.to_string() {
            return Ok(n);
        }
    }
    Err(TransportError::NoDevice {
        reason: format!(
            "no umad device for {} port {} in {class} (is the ib_umad module loaded?)",
            place.device, place.port
        ),
    })
}

fn read_local_port(root: &SysfsRoot, place: &PortPlace) -> Result<LocalPort, TransportError> {
    let read = |f: &str| {
        let path = format!("{}/{}/{f}", root.infiniband(), place.device);
        read_sysfs(&path)
            .map_err(|e| TransportError::os(path.clone(), "read", e))
            .map(|s| (path, s))
    };
    let bad = |path: String, text: &str, what: &str| TransportError::Sysfs {
        path,
        reason: format!("`{text}` is not {what}"),
    };
    let (path, text) = read(&format!("ports/{}/lid", place.port))?;
    let lid = u16::from_str_radix(text.trim_start_matches("0x"), 16)
        .map_err(|_| bad(path, &text, "a hexadecimal LID"))?;
    let (path, text) = read("node_guid")?;
    let node_guid = ports::parse_guid(&text).ok_or_else(|| bad(path, &text, "a GUID"))?;
    Ok(LocalPort {
        port_num: place.port,
        lid,
        port_guid: ports::port_guid(root, place)?,
        node_guid,
    })
}

fn c_path(path: &str) -> io::Result<CString> {
    CString::new(path).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

fn open_path(path: &str, flags: libc::c_int) -> Result<Fd, TransportError> {
    let c = c_path(path).map_err(|e| TransportError::os(path, "open", e))?;
    // SAFETY: c is a NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        return Err(TransportError::os(path, "open", io::Error::last_os_error()));
    }
    Ok(Fd(fd))
}

/// A small sysfs file, trimmed, read through the intercepted `open`/`read`.
pub(crate) fn read_sysfs(path: &str) -> io::Result<String> {
    let c = c_path(path)?;
    // SAFETY: c is a NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = Fd(fd);
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    loop {
        // SAFETY: chunk is a live, writable buffer of chunk.len() bytes.
        let n = unsafe { libc::read(fd.0, chunk.as_mut_ptr().cast(), chunk.len()) };
        match n {
            0 => break,
            n if n > 0 => out.extend_from_slice(&chunk[..n as usize]),
            _ => return Err(io::Error::last_os_error()),
        }
        // sysfs attributes are one page at most; anything longer is not one.
        if out.len() > 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "longer than a sysfs attribute",
            ));
        }
    }
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// The names in a directory, `.` and `..` left out, through the intercepted `opendir`.
pub(crate) fn list_dir(path: &str) -> io::Result<Vec<String>> {
    let c = c_path(path)?;
    // SAFETY: c is a NUL-terminated path that outlives the call.
    let dir = unsafe { libc::opendir(c.as_ptr()) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: dir is an open DIR* from opendir, not yet closed.
        let entry = unsafe { libc::readdir(dir) };
        if entry.is_null() {
            break;
        }
        // SAFETY: readdir returned a valid dirent whose d_name is NUL-terminated; it stays
        // valid until the next readdir/closedir on dir, and the name is copied out before.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
        let name = name.to_string_lossy();
        if name != "." && name != ".." {
            names.push(name.into_owned());
        }
    }
    // SAFETY: dir is open and closed exactly once, here.
    unsafe {
        libc::closedir(dir);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reg_req_layout_matches_the_kernel() {
        assert_eq!(std::mem::offset_of!(RegReq, method_mask), 4);
        assert_eq!(std::mem::offset_of!(RegReq, qpn), 20);
        assert_eq!(std::mem::offset_of!(RegReq, mgmt_class), 21);
        assert_eq!(std::mem::offset_of!(RegReq, mgmt_class_version), 22);
        assert_eq!(std::mem::offset_of!(RegReq, oui), 23);
        assert_eq!(std::mem::offset_of!(RegReq, rmpp_version), 26);
    }
}
