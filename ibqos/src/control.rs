//! The control socket of `ibqos sm` and its client `ibqos ctl`: OpenSM's console, over a Unix
//! socket only its owner (and root) may use. One request per connection, one line of text
//! ("status", "status --json", "sweep", "reload", "dump", "loglevel 0x03", "perf dump mach");
//! one answer: a first line `OK` or `ERR`, then the text.
//!
//! A thread accepts and reads requests, so that a slow or silent client never holds up the
//! SM; the daemon's loop answers them between MADs, where it can read and change its state.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rustix::process::Uid;
use tracing::{info, warn};

/// The longest a client may take to send its request, or to take its answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest request line read.
const MAX_REQUEST: u64 = 256;

/// The socket's file name in the runtime directory systemd makes for the unit
/// (`RuntimeDirectory=`, passed as `$RUNTIME_DIRECTORY`).
pub const SOCKET_NAME: &str = "ctl.sock";

/// Where `ibqos ctl` looks for daemons' sockets when given none: one directory per unit
/// instance, `/run/ibqos/<port GUID>/ctl.sock`.
pub const RUNTIME_ROOT: &str = "/run/ibqos";

/// What an operator asks the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// The SM's state, as OpenSM's console `status` prints it, plus the QoS state.
    Status { json: bool },
    /// A sweep now.
    Sweep,
    /// Read the configuration again, as SIGHUP does.
    Reload,
    /// Write OpenSM's dump files now.
    Dump,
    /// Log what OpenSM's log flags say, until the next reload.
    LogLevel(u8),
    /// The performance manager, as OpenSM's console `perfmgr`.
    Perf(PerfCommand),
    /// The QoS conformance report over the PerfMgr's last readings.
    QosReport { json: bool },
}

/// What an operator asks the performance manager (OpenSM's console `perfmgr ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfCommand {
    /// Its state (`perfmgr`).
    Status,
    /// A sweep now (`perfmgr sweep`).
    Sweep,
    /// Its counters into the dump file (`perfmgr dump_counters [mach]`).
    Dump { machine: bool },
    /// Its counters, of one node (a name or GUID, and `:port`) or all
    /// (`perfmgr print_counters`).
    Counters(Option<String>),
    /// The error counters that are not 0 (`perfmgr print_errors`).
    Errors(Option<String>),
    /// Start or stop the sweep timer (`perfmgr enable`, `perfmgr disable`).
    Enable(bool),
    /// The database's totals to 0 (`perfmgr clear_counters`).
    ClearCounters,
    /// Forget the nodes gone from the subnet (`perfmgr clear_inactive`).
    ClearInactive,
    /// Whether the nodes gone from the subnet leave the database (`perfmgr set_rm_nodes`,
    /// `perfmgr clear_rm_nodes`).
    RemoveNodes(bool),
    /// Whether ClassPortInfo is read before the counters (`perfmgr set_query_cpi`,
    /// `perfmgr clear_query_cpi`).
    QueryCpi(bool),
    /// The PMAs' redirections, of one node or all (`perfmgr dump_redir`).
    Redirections(Option<String>),
    /// Forget the PMAs' redirections, of one node or all (`perfmgr clear_redir`).
    ClearRedirections(Option<String>),
    /// The time between sweeps, as typed (`perfmgr sweep_time`, which reads it with atoi).
    SweepTime(String),
}

impl PerfCommand {
    fn to_words(&self) -> String {
        let with = |word: &str, node: &Option<String>| match node {
            Some(node) => format!("{word} {node}"),
            None => word.to_string(),
        };
        match self {
            PerfCommand::Status => String::new(),
            PerfCommand::Sweep => " sweep".to_string(),
            PerfCommand::Dump { machine: false } => " dump".to_string(),
            PerfCommand::Dump { machine: true } => " dump mach".to_string(),
            PerfCommand::Counters(node) => with(" counters", node),
            PerfCommand::Errors(node) => with(" errors", node),
            PerfCommand::Enable(true) => " enable".to_string(),
            PerfCommand::Enable(false) => " disable".to_string(),
            PerfCommand::ClearCounters => " clear-counters".to_string(),
            PerfCommand::ClearInactive => " clear-inactive".to_string(),
            PerfCommand::RemoveNodes(true) => " set-rm-nodes".to_string(),
            PerfCommand::RemoveNodes(false) => " clear-rm-nodes".to_string(),
            PerfCommand::QueryCpi(true) => " set-query-cpi".to_string(),
            PerfCommand::QueryCpi(false) => " clear-query-cpi".to_string(),
            PerfCommand::Redirections(node) => with(" dump-redir", node),
            PerfCommand::ClearRedirections(node) => with(" clear-redir", node),
            PerfCommand::SweepTime(seconds) => format!(" sweep-time {seconds}"),
        }
    }

    /// The words after `perf`; a node is the rest of the line, spaces and all (a node
    /// description such as "host-one HCA-1").
    fn parse(rest: &str) -> Option<PerfCommand> {
        let (word, node) = match rest.split_once(' ') {
            Some((word, node)) => (word, Some(node.trim().to_string())),
            None => (rest, None),
        };
        let node = node.filter(|node| !node.is_empty());
        Some(match (word, node) {
            ("", None) => PerfCommand::Status,
            ("sweep", None) => PerfCommand::Sweep,
            ("dump", None) => PerfCommand::Dump { machine: false },
            ("dump", Some(mach)) if mach == "mach" => PerfCommand::Dump { machine: true },
            ("counters", node) => PerfCommand::Counters(node),
            ("errors", node) => PerfCommand::Errors(node),
            ("enable", None) => PerfCommand::Enable(true),
            ("disable", None) => PerfCommand::Enable(false),
            ("clear-counters", None) => PerfCommand::ClearCounters,
            ("clear-inactive", None) => PerfCommand::ClearInactive,
            ("set-rm-nodes", None) => PerfCommand::RemoveNodes(true),
            ("clear-rm-nodes", None) => PerfCommand::RemoveNodes(false),
            ("set-query-cpi", None) => PerfCommand::QueryCpi(true),
            ("clear-query-cpi", None) => PerfCommand::QueryCpi(false),
            ("dump-redir", node) => PerfCommand::Redirections(node),
            ("clear-redir", node) => PerfCommand::ClearRedirections(node),
            ("sweep-time", Some(seconds)) => PerfCommand::SweepTime(seconds),
            _ => return None,
        })
    }
}

impl Command {
    /// The request line for this command.
    pub fn to_line(&self) -> String {
        match self {
            Command::Status { json: false } => "status".to_string(),
            Command::Status { json: true } => "status --json".to_string(),
            Command::Sweep => "sweep".to_string(),
            Command::Reload => "reload".to_string(),
            Command::Dump => "dump".to_string(),
            Command::LogLevel(flags) => format!("loglevel {flags:#04x}"),
            Command::Perf(perf) => format!("perf{}", perf.to_words()),
            Command::QosReport { json: false } => "qos-report".to_string(),
            Command::QosReport { json: true } => "qos-report --json".to_string(),
        }
    }

    /// A request line read from a client.
    pub fn parse(line: &str) -> Result<Command, String> {
        if let Some(rest) = line.trim().strip_prefix("perf")
            && (rest.is_empty() || rest.starts_with(' '))
        {
            return PerfCommand::parse(rest.trim_start())
                .map(Command::Perf)
                .ok_or_else(|| {
                    format!(
                        "unknown request {line:?}: perf [sweep | dump [mach] | counters [NODE] \
                         | errors [NODE] | enable | disable | clear-counters | clear-inactive \
                         | set-rm-nodes | clear-rm-nodes | set-query-cpi | clear-query-cpi \
                         | dump-redir [NODE] | clear-redir [NODE] | sweep-time SECONDS]"
                    )
                });
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["status"] => Ok(Command::Status { json: false }),
            ["status", "--json"] => Ok(Command::Status { json: true }),
            ["sweep"] => Ok(Command::Sweep),
            ["reload"] => Ok(Command::Reload),
            ["dump"] => Ok(Command::Dump),
            ["loglevel", flags] => crate::logging::parse_log_flags(flags).map(Command::LogLevel),
            ["qos-report"] => Ok(Command::QosReport { json: false }),
            ["qos-report", "--json"] => Ok(Command::QosReport { json: true }),
            _ => Err(format!(
                "unknown request {line:?}: status [--json], sweep, reload, dump, loglevel FLAGS, \
                 qos-report [--json] or perf ..."
            )),
        }
    }
}

/// A request from a client, to be answered once.
pub struct Request {
    pub command: Command,
    stream: UnixStream,
}

impl Request {
    /// Sends the answer: `Ok` text, or `Err` with what went wrong. A client that went away
    /// costs a warning.
    pub fn answer(mut self, answer: Result<String, String>) {
        let (head, body) = match &answer {
            Ok(text) => ("OK", text),
            Err(text) => ("ERR", text),
        };
        if let Err(error) = write!(self.stream, "{head}\n{body}") {
            warn!(%error, "control socket: the client left before its answer");
        }
    }
}

/// The daemon's end: a listening socket, and the requests its thread has read.
pub struct ControlSocket {
    path: PathBuf,
    requests: Receiver<Request>,
    pending: Arc<AtomicBool>,
}

impl ControlSocket {
    /// Listens at `path`, mode 0600, creating its directory (mode 0700) if needed, for root
    /// and the daemon's own user. A socket left by a daemon that died is replaced; one a live
    /// daemon answers on is not.
    pub fn bind(path: &Path) -> Result<ControlSocket> {
        let own = rustix::process::geteuid();
        ControlSocket::bind_for(path, move |uid| uid.is_root() || uid == own)
    }

    /// [`ControlSocket::bind`], taking requests from the users `allowed` accepts.
    fn bind_for(
        path: &Path,
        allowed: impl Fn(Uid) -> bool + Send + 'static,
    ) -> Result<ControlSocket> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        if let Ok(existing) = std::fs::symlink_metadata(path) {
            if !existing.file_type().is_socket() {
                bail!(
                    "{} exists and is not a socket; it is left alone",
                    path.display()
                );
            }
            if UnixStream::connect(path).is_ok() {
                bail!(
                    "another daemon answers on the control socket {}",
                    path.display()
                );
            }
            std::fs::remove_file(path)
                .with_context(|| format!("cannot remove the stale socket {}", path.display()))?;
        }
        let listener = UnixListener::bind(path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        let (sender, requests) = channel();
        let pending = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("control".to_string())
            .spawn(move || accept_requests(listener, sender, flag, allowed))
            .context("cannot start the control socket's thread")?;
        info!(path = %path.display(), "control socket listening");
        Ok(ControlSocket {
            path: path.to_path_buf(),
            requests,
            pending,
        })
    }

    /// Whether a request waits, for a loop that polls it.
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// The next request that waits, if any. The flag is lowered before the channel is read, and
    /// with the thread's raising of it after each send (release, acquire), so a request sent
    /// while the daemon drains the channel is either taken here or leaves the flag up: none
    /// waits unnoticed until some other wake-up.
    pub fn next_request(&self) -> Option<Request> {
        self.pending.swap(false, Ordering::AcqRel);
        let request = self.requests.try_recv().ok();
        if request.is_some() {
            // More may wait; the caller asks again until there is none.
            self.pending.store(true, Ordering::Release);
        }
        request
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The thread: each connection's request is read; one from a user `allowed` accepts is handed
/// to the daemon's loop, any other refused.
fn accept_requests(
    listener: UnixListener,
    sender: Sender<Request>,
    pending: Arc<AtomicBool>,
    allowed: impl Fn(Uid) -> bool,
) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(CLIENT_TIMEOUT));
        let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
        // The request is read before any answer, a refusal included: a socket closed with its
        // request unread resets the connection, and the client would see the reset, not why.
        let mut line = String::new();
        let read = BufReader::new((&stream).take(MAX_REQUEST)).read_line(&mut line);
        let peer = rustix::net::sockopt::socket_peercred(&stream);
        match peer {
            Ok(peer) if allowed(peer.uid) => {}
            _ => {
                let uid =
                    peer.map_or_else(|_| "unknown".to_string(), |p| p.uid.as_raw().to_string());
                warn!(uid, "control socket: refused a client of another user");
                let _ = write!(
                    stream,
                    "ERR\nrefused: uid {uid} is neither root nor the daemon's user"
                );
                continue;
            }
        }
        let command = match read
            .map_err(|e| e.to_string())
            .and_then(|_| Command::parse(&line))
        {
            Ok(command) => command,
            Err(error) => {
                let _ = write!(stream, "ERR\n{error}");
                continue;
            }
        };
        if sender.send(Request { command, stream }).is_err() {
            return;
        }
        pending.store(true, Ordering::Release);
    }
}

/// `ibqos ctl`'s end: sends `command` to the daemon on `path`; its answer, or the daemon's
/// refusal as an error.
pub fn ask(path: &Path, command: &Command) -> Result<String> {
    let kind = std::fs::metadata(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::PermissionDenied => permission_denied(path),
            _ => anyhow::Error::new(error)
                .context(format!("no control socket at {}", path.display())),
        })?
        .file_type();
    if !kind.is_socket() {
        bail!(
            "{} is not a socket: give the path `ibqos sm --control-socket` listens on",
            path.display()
        );
    }
    let mut stream = UnixStream::connect(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::PermissionDenied => permission_denied(path),
        std::io::ErrorKind::ConnectionRefused => anyhow::anyhow!(
            "no daemon answers on {}: the socket is left from one that stopped",
            path.display()
        ),
        _ => anyhow::Error::new(error).context(format!("cannot connect to {}", path.display())),
    })?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let sent = writeln!(stream, "{}", command.to_line());
    // A daemon may answer and close before it reads the request (a refusal), and a reset may
    // follow its answer: what it said comes first, the failures only when it said nothing.
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    if answer.is_empty() {
        sent.context("cannot send the request")?;
        read.context("the daemon's answer")?;
    }
    let answer = String::from_utf8_lossy(&answer);
    match answer.split_once('\n') {
        Some(("OK", text)) => Ok(text.to_string()),
        Some(("ERR", text)) => bail!("{text}"),
        _ => bail!("not an answer of ibqos sm: {answer:?}"),
    }
}

fn permission_denied(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "permission denied on {}: the control socket is for root and the daemon's user only \
         (mode 0600, in a directory of mode 0700)",
        path.display()
    )
}

/// The socket `ibqos ctl` talks to when given none: the one daemon's under [`RUNTIME_ROOT`].
pub fn find_socket() -> Result<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(RUNTIME_ROOT)
        .map(|dir| {
            dir.filter_map(|entry| entry.ok())
                .map(|entry| entry.path().join(SOCKET_NAME))
                .filter(|path| path.exists())
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!(
            "no daemon's control socket under {RUNTIME_ROOT}: is ibqos sm running (as a \
             systemd unit, or with --control-socket PATH, then give --socket PATH)?"
        ),
        many => bail!(
            "{} daemons' control sockets under {RUNTIME_ROOT}; choose one with --socket: {}",
            many.len(),
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client the daemon refuses learns why, not "Connection reset by peer" or nothing.
    #[test]
    fn a_refused_client_is_told_why() {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let path = dir.path().join("ctl.sock");
        let _socket = ControlSocket::bind_for(&path, |_| false).expect("listening");
        for _ in 0..20 {
            let error = ask(&path, &Command::Status { json: false }).expect_err("refused");
            assert!(
                format!("{error:#}").starts_with("refused: uid "),
                "{error:#}"
            );
        }
    }

    #[test]
    fn every_command_reads_back_from_its_request_line() {
        for command in [
            Command::Status { json: false },
            Command::Status { json: true },
            Command::Sweep,
            Command::Reload,
            Command::Dump,
            Command::LogLevel(0x43),
            Command::Perf(PerfCommand::Status),
            Command::Perf(PerfCommand::Sweep),
            Command::Perf(PerfCommand::Dump { machine: false }),
            Command::Perf(PerfCommand::Dump { machine: true }),
            Command::Perf(PerfCommand::Counters(None)),
            Command::Perf(PerfCommand::Counters(Some("host-one HCA-1:1".into()))),
            Command::Perf(PerfCommand::Errors(Some("0x2c90000001000".into()))),
            Command::Perf(PerfCommand::Enable(false)),
            Command::Perf(PerfCommand::ClearCounters),
            Command::Perf(PerfCommand::ClearInactive),
            Command::Perf(PerfCommand::RemoveNodes(false)),
            Command::Perf(PerfCommand::QueryCpi(true)),
            Command::Perf(PerfCommand::Redirections(None)),
            Command::Perf(PerfCommand::ClearRedirections(Some("sw-one".into()))),
            Command::Perf(PerfCommand::SweepTime("30".into())),
            Command::QosReport { json: false },
            Command::QosReport { json: true },
        ] {
            assert_eq!(Command::parse(&command.to_line()), Ok(command));
        }
    }

    #[test]
    fn a_bad_request_is_refused_with_what_is_understood() {
        for line in [
            "",
            "statu",
            "status --yaml",
            "loglevel",
            "loglevel 0x100",
            "sweep now",
            "perfx",
            "perf dump json",
            "perf clear",
        ] {
            let error = Command::parse(line).unwrap_err();
            assert!(
                error.contains("unknown request") || error.contains("not a log flag mask"),
                "{line:?}: {error}"
            );
        }
    }
}
