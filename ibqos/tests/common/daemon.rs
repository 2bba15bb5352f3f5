//! Daemons a test starts: ended by their own PID, signalled with kill(1), and the messages
//! they send to a notify socket the test made as systemd would.

use std::process::Command;

/// A daemon this test started, killed by its PID if the test ends before it does.
pub struct Daemon(pub std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `ibqos sm --cache-dir DIR`: the SM with a LID cache of its own (tests run in parallel, and
/// two sharing a cache would remove it under each other); the caller adds the rest.
pub fn ibqos_sm(cache_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ibqos"));
    command.args(["sm", "--cache-dir"]).arg(cache_dir);
    command
}

/// `kill -s SIGNAL PID`.
pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -s {signal} {pid}");
}

/// A notify socket in `dir`, as systemd makes one, that gives up on a read after ten seconds;
/// its path, for `NOTIFY_SOCKET`.
pub fn notify_socket(
    dir: &std::path::Path,
) -> (std::os::unix::net::UnixDatagram, std::path::PathBuf) {
    let path = dir.join("notify");
    let socket = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    (socket, path)
}

/// The messages a daemon sends to the notify socket until one holds `wanted`.
pub fn notified_until(socket: &std::os::unix::net::UnixDatagram, wanted: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !seen.iter().any(|m: &String| m.contains(wanted)) {
        let n = match socket.recv(&mut buffer) {
            Ok(n) => n,
            // A signal to the test process (a child's end) is no reason to stop waiting.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("waiting for {wanted:?} after {seen:?}: {e}"),
        };
        seen.push(String::from_utf8_lossy(&buffer[..n]).into_owned());
    }
    seen
}
