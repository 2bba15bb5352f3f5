//! `ibqos sm` as a daemon (no `--once`): its per-sweep JSON lines, signals, and a bounded stop.
//!
//! The daemon is killed by its PID when the guard is dropped, so a failing test never leaves it
//! running. [`Daemon::stop`] is the orderly end every test makes: SIGTERM, then the process must
//! exit on its own within a time limit.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::process::command_line;
use crate::sm::SmInvocation;
use crate::{Error, Ibsim, Result};

/// A running `ibqos sm --json` daemon.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    line: String,
    lines: Receiver<String>,
    /// Every stdout line so far, for messages.
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    exited: Option<ExitStatus>,
}

impl Daemon {
    /// Starts `invocation` without `--once` against `sim`.
    pub fn start(invocation: &SmInvocation, ibqos: &Path, sim: &Ibsim) -> Result<Daemon> {
        let mut cmd = invocation.daemon_command(ibqos, sim);
        let line = command_line(&cmd);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::new(format!("cannot start `{line}`: {e}")))?;
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = mpsc::channel();
        if let Some(pipe) = child.stdout.take() {
            let log = Arc::clone(&stdout);
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(|l| l.ok()) {
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&line);
                        log.push('\n');
                    }
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        if let Some(mut pipe) = child.stderr.take() {
            let log = Arc::clone(&stderr);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            });
        }
        Ok(Daemon {
            child,
            line,
            lines,
            stdout,
            stderr,
            exited: None,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Both output streams so far, for failure messages.
    pub fn output(&self) -> String {
        let get = |m: &Mutex<String>| m.lock().map(|s| s.clone()).unwrap_or_default();
        format!(
            "`{}`\n--- stdout ---\n{}--- stderr (last 6000 bytes) ---\n{}",
            self.line,
            get(&self.stdout),
            tail(&get(&self.stderr), 6000)
        )
    }

    /// The next per-sweep JSON summary it prints, waiting at most `timeout`.
    pub fn next_summary(&mut self, timeout: Duration) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.trim_start().starts_with('{') => {
                    return serde_json::from_str(&line).map_err(|e| {
                        Error::new(format!("summary line is not JSON ({e}): {line}"))
                    });
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(Error::new(format!(
                        "no sweep summary within {timeout:?}\n{}",
                        self.output()
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.try_wait().ok().flatten();
                    return Err(Error::new(format!(
                        "the daemon closed its stdout (exit status {status:?})\n{}",
                        self.output()
                    )));
                }
            }
        }
    }

    /// Discards the summaries already printed and not yet read (sweeps that ran while the test
    /// was busy), so the next [`Daemon::next_summary`] is of a sweep that ends after this call.
    pub fn drain(&mut self) -> usize {
        self.lines.try_iter().count()
    }

    /// Waits for the end of the next sweep (a fresh summary, after [`Daemon::drain`]) and stops
    /// the daemon right there with SIGSTOP: it is then asleep until its next sweep (a second
    /// away with `sweep_interval 1`), so the test can change the fabric or the config without
    /// racing a sweep. [`Daemon::signal`] `"CONT"` resumes it. Returns that summary.
    pub fn pause_after_next_sweep(&mut self, timeout: Duration) -> Result<Value> {
        self.drain();
        let summary = self.next_summary(timeout)?;
        self.signal("STOP")?;
        Ok(summary)
    }

    /// Sends `signal` (a name `kill -s` knows: HUP, STOP, CONT, TERM) to the daemon's PID.
    pub fn signal(&self, signal: &str) -> Result<()> {
        let pid = self.pid().to_string();
        let status = std::process::Command::new("kill")
            .args(["-s", signal, &pid])
            .status()
            .map_err(|e| Error::new(format!("cannot run kill: {e}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::new(format!(
                "kill -s {signal} {pid} failed: {status}"
            )))
        }
    }

    /// SIGTERM, then waits up to `timeout` for the daemon to exit by itself. An error if it does
    /// not (it is then killed) or exits with a failure status.
    pub fn stop(&mut self, timeout: Duration) -> Result<ExitStatus> {
        self.signal("TERM")?;
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.exited = Some(status);
                    return if status.success() {
                        Ok(status)
                    } else {
                        Err(Error::new(format!(
                            "the daemon exited with {status} on SIGTERM\n{}",
                            self.output()
                        )))
                    };
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    self.kill();
                    return Err(Error::new(format!(
                        "the daemon did not exit within {timeout:?} of SIGTERM; killed\n{}",
                        self.output()
                    )));
                }
                Err(e) => return Err(Error::new(format!("waiting for the daemon: {e}"))),
            }
        }
    }

    fn kill(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            self.exited = self.child.wait().ok();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // By PID: a stopped (SIGSTOP) daemon dies from SIGKILL too.
        self.kill();
    }
}

fn tail(s: &str, bytes: usize) -> &str {
    let mut start = s.len().saturating_sub(bytes);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}
