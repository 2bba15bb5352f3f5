//! Running a program with a time limit.
//!
//! Every client of ibsim is run this way: a umad2sim client whose ibsim is gone retries its
//! connection forever, so an unbounded wait would hang the test run instead of failing it.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How often a running child is checked. smpquery against ibsim takes about 15 ms.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// A program that ran to completion (with any exit status).
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// The output if the program exited with status 0, else an error with both streams.
    pub fn success(self, what: &str) -> Result<Finished> {
        if self.status.success() {
            Ok(self)
        } else {
            Err(Error::new(format!(
                "{what} failed with {}\n--- stdout ---\n{}--- stderr ---\n{}",
                self.status, self.stdout, self.stderr
            )))
        }
    }
}

/// The program and its arguments, for messages.
pub fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `cmd` with stdin closed and both output streams captured. If it has not exited after
/// `timeout`, it is killed by its PID (`Child::kill`, then reaped) and an error returned with the
/// output so far.
pub fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<Finished> {
    run_bounded_while(cmd, timeout, |_| ())
}

/// Like [`run_bounded`], but calls `meanwhile` with the running child right after it started
/// (for a test that acts on the world while the program runs, such as killing its fabric). The
/// time limit counts from the start, `meanwhile` included.
pub fn run_bounded_while(
    cmd: &mut Command,
    timeout: Duration,
    meanwhile: impl FnOnce(&mut Child),
) -> Result<Finished> {
    let line = command_line(cmd);
    match run_limited_while(cmd, timeout, meanwhile)? {
        Ended::Exited(finished) => Ok(finished),
        Ended::Killed { stdout, stderr } => Err(Error::new(format!(
            "`{line}` did not finish within {timeout:?} and was killed\n\
             --- stdout ---\n{stdout}--- stderr ---\n{stderr}"
        ))),
    }
}

/// How a program run with a time limit ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself (with any status).
    Exited(Finished),
    /// It overran its time limit and was killed by its PID; what it had written so far.
    Killed { stdout: String, stderr: String },
}

/// Like [`run_bounded`], but a program that overruns is an outcome, not an error: for a program
/// whose hang is the behaviour under test (osmtest waiting forever on an answer that never comes).
pub fn run_limited(cmd: &mut Command, timeout: Duration) -> Result<Ended> {
    run_limited_while(cmd, timeout, |_| ())
}

fn run_limited_while(
    cmd: &mut Command,
    timeout: Duration,
    meanwhile: impl FnOnce(&mut Child),
) -> Result<Ended> {
    let deadline = Instant::now() + timeout;
    let line = command_line(cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(format!("cannot start `{line}`: {e}")))?;
    // Drain both pipes on their own threads so a chatty child never blocks on a full pipe.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    meanwhile(&mut child);
    let status = wait_until(&mut child, deadline)
        .map_err(|e| Error::new(format!("waiting for `{line}`: {e}")))?;
    let (stdout, stderr) = (join(stdout), join(stderr));
    Ok(match status {
        Some(status) => Ended::Exited(Finished {
            status,
            stdout,
            stderr,
        }),
        None => Ended::Killed { stdout, stderr },
    })
}

/// Waits for `child` until `deadline`; past it, kills it by PID and returns `None`.
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            // kill() fails only if the child has exited meanwhile; wait() reaps it either way.
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        thread::sleep(POLL_INTERVAL);
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error just ends the capture; what was read so far is still useful.
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn join(reader: JoinHandle<String>) -> String {
    reader
        .join()
        .unwrap_or_else(|_| "<output reader panicked>".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_status() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let done = run_bounded(&mut cmd, Duration::from_secs(30)).unwrap();
        assert_eq!(
            (done.stdout.as_str(), done.stderr.as_str()),
            ("out\n", "err\n")
        );
        assert_eq!(done.status.code(), Some(3));
        let err = done.success("sh").unwrap_err().to_string();
        assert!(err.contains("sh failed") && err.contains("err"), "{err}");
    }

    #[test]
    fn kills_a_child_that_overruns() {
        let start = Instant::now();
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let err = run_bounded(&mut cmd, Duration::from_millis(100)).unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn an_overrun_is_an_outcome_with_the_output_so_far() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; exec sleep 30"]);
        match run_limited(&mut cmd, Duration::from_millis(300)).unwrap() {
            Ended::Killed { stdout, .. } => assert_eq!(stdout, "started\n"),
            Ended::Exited(done) => panic!("sleep 30 exited: {done:?}"),
        }
    }
}
