//! Running `ibqos sm --once --json` against an ibsim, and its summary.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use serde_json::Value;

use crate::process::{Finished, command_line, run_bounded};
use crate::{Error, Ibsim, Result};

/// One sweep of a small fabric takes milliseconds; the limit only bounds a hang. It is well above
/// the SM's own worst case: every request of a sweep timing out with its retries.
pub const SM_TIMEOUT: Duration = Duration::from_secs(120);

/// Exit status of a Rust program that panicked.
pub const PANIC_EXIT_CODE: i32 = 101;

/// How the SM reaches ibsim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmFabric {
    /// `--fabric ibsim:SOCKNAME@NODE`: ibqos's native ibsim client, no shim.
    Native,
    /// `--fabric umad` under ibsim's LD_PRELOAD shim (umad2sim), as on a real host.
    Umad,
}

/// An `ibqos sm --once --json` invocation.
#[derive(Debug, Clone)]
pub struct SmInvocation {
    pub fabric: SmFabric,
    /// The node the SM attaches at (port 1 of a CA).
    pub node: String,
    pub cache_dir: PathBuf,
    /// Passed as `-F`; `None` runs with OpenSM's defaults.
    pub opensm_conf: Option<PathBuf>,
    /// More arguments, such as `--fault-loss 0.2`.
    pub extra_args: Vec<String>,
}

impl SmInvocation {
    pub fn new(fabric: SmFabric, node: &str, cache_dir: &Path) -> SmInvocation {
        SmInvocation {
            fabric,
            node: node.to_owned(),
            cache_dir: cache_dir.to_owned(),
            opensm_conf: None,
            extra_args: Vec::new(),
        }
    }

    pub fn opensm_conf(mut self, path: &Path) -> SmInvocation {
        self.opensm_conf = Some(path.to_owned());
        self
    }

    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> SmInvocation {
        self.extra_args
            .extend(args.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// The command line, attached to `sim`.
    pub fn command(&self, ibqos: &Path, sim: &Ibsim) -> Command {
        self.command_with(ibqos, sim, true)
    }

    /// The command line without `--once`: the SM as a daemon, sweeping every
    /// `sweep_interval` seconds until SIGTERM (see [`crate::daemon::Daemon`]).
    pub fn daemon_command(&self, ibqos: &Path, sim: &Ibsim) -> Command {
        self.command_with(ibqos, sim, false)
    }

    fn command_with(&self, ibqos: &Path, sim: &Ibsim, once: bool) -> Command {
        let mut cmd = match self.fabric {
            SmFabric::Native => {
                let mut cmd = Command::new(ibqos);
                // Its stray files (none expected) land in the test's directory too.
                cmd.current_dir(self.cache_dir.parent().unwrap_or(&self.cache_dir));
                cmd.args(["sm", "--fabric"])
                    .arg(format!("ibsim:{}@{}", sim.sockname(), self.node));
                cmd
            }
            SmFabric::Umad => {
                let mut cmd = sim.client(ibqos, &self.node);
                cmd.args(["sm", "--fabric", "umad"]);
                cmd
            }
        };
        if once {
            cmd.arg("--once");
        }
        cmd.args(["--json", "--cache-dir"]).arg(&self.cache_dir);
        if let Some(conf) = &self.opensm_conf {
            cmd.arg("-F").arg(conf);
        }
        cmd.args(&self.extra_args)
            // Logs without colour codes, so failure messages read cleanly.
            .env("NO_COLOR", "1");
        cmd
    }

    /// Runs it against `sim` (bounded by [`SM_TIMEOUT`]) with any exit status.
    pub fn run(&self, ibqos: &Path, sim: &Ibsim) -> Result<SmRun> {
        let mut cmd = self.command(ibqos, sim);
        let line = command_line(&cmd);
        let finished = run_bounded(&mut cmd, SM_TIMEOUT)?;
        Ok(SmRun::new(line, finished))
    }

    /// Runs it and requires SUBNET UP: exit status 0 and `"subnet_up": true`.
    pub fn run_up(&self, ibqos: &Path, sim: &Ibsim) -> Result<(SmRun, SmSummary)> {
        let run = self.run(ibqos, sim)?;
        let summary = run.summary()?;
        if !run.status.success() || !summary.subnet_up {
            return Err(Error::new(format!(
                "`{}` did not bring the subnet up: {}\n{}",
                run.line,
                run.status,
                run.output()
            )));
        }
        Ok((run, summary))
    }
}

/// A finished `ibqos sm` run.
#[derive(Debug)]
pub struct SmRun {
    pub line: String,
    pub status: ExitStatus,
    pub stdout: String,
    /// Its log.
    pub stderr: String,
}

impl SmRun {
    pub fn new(line: String, finished: Finished) -> SmRun {
        SmRun {
            line,
            status: finished.status,
            stdout: finished.stdout,
            stderr: finished.stderr,
        }
    }

    /// The JSON summary it printed.
    pub fn summary(&self) -> Result<SmSummary> {
        parse_summary(&self.stdout).map_err(|e| {
            e.context(format!(
                "summary of `{}` ({})\n{}",
                self.line,
                self.status,
                self.output()
            ))
        })
    }

    /// Both output streams, for failure messages.
    pub fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }

    pub fn panicked(&self) -> bool {
        self.status.code() == Some(PANIC_EXIT_CODE) || self.stderr.contains("panicked at")
    }
}

/// The summary object `ibqos sm --json` prints after a sweep.
#[derive(Debug, Clone)]
pub struct SmSummary {
    pub subnet_up: bool,
    /// "subnet up" or "failed: ...".
    pub result: String,
    pub nodes: u64,
    pub switches: u64,
    pub ports: u64,
    pub lids: u64,
    pub smps_sent: u64,
    pub retries: u64,
    pub timeouts: u64,
    pub error_statuses: u64,
    pub failed_requests: u64,
    pub ports_not_active: u64,
    pub traps: u64,
    pub sm_info_requests: u64,
    pub unsupported_requests: u64,
    /// The whole object, for fields not typed here and for messages.
    pub raw: Value,
}

/// Parses the summary: the last line of `text` that is a JSON object (the SM prints one per
/// sweep; with `--once` that is one).
pub fn parse_summary(text: &str) -> Result<SmSummary> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| Error::new("no JSON summary on stdout"))?;
    let raw: Value = serde_json::from_str(line)
        .map_err(|e| Error::new(format!("summary is not JSON ({e}): {line}")))?;
    let count = |key: &str| -> Result<u64> {
        raw.get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| Error::new(format!("no count \"{key}\" in the summary {raw}")))
    };
    Ok(SmSummary {
        subnet_up: raw
            .get("subnet_up")
            .and_then(Value::as_bool)
            .ok_or_else(|| Error::new(format!("no boolean \"subnet_up\" in {raw}")))?,
        result: raw
            .get("result")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::new(format!("no string \"result\" in {raw}")))?
            .to_owned(),
        nodes: count("nodes")?,
        switches: count("switches")?,
        ports: count("ports")?,
        lids: count("lids")?,
        smps_sent: count("smps_sent")?,
        retries: count("retries")?,
        timeouts: count("timeouts")?,
        error_statuses: count("error_statuses")?,
        failed_requests: count("failed_requests")?,
        ports_not_active: count("ports_not_active")?,
        traps: count("traps")?,
        sm_info_requests: count("sm_info_requests")?,
        unsupported_requests: count("unsupported_requests")?,
        raw,
    })
}

/// A daemon's opensm.conf for the tests where another SM rewrites its tables behind its back:
/// QoS on, a sweep a second, and non-default tables for every class, so a port it restores is
/// told apart from ibsim's power-on state and from the intruder's tables.
pub const DAEMON_CONF: &str = "\
qos TRUE
sweep_interval 1
qos_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0
qos_vlarb_low 0:16,1:16,2:16,3:16,4:8,5:8,6:8,7:8
qos_vlarb_high 0:4,1:4
qos_ca_vlarb_low 0:10,1:20,2:30,3:40,4:50,5:60,6:70,7:80
";

/// Writes `options` as an opensm.conf for ibqos in `dir`.
pub fn write_opensm_conf(dir: &Path, options: &str) -> Result<PathBuf> {
    let path = dir.join("ibqos-opensm.conf");
    std::fs::write(&path, options)
        .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_summary() {
        let text = r#"{"error_statuses":0,"failed_requests":2,"lids":8,"nodes":7,"ports":24,
            "ports_not_active":0,"result":"subnet up","retries":6,"smps":[],"smps_sent":83,
            "subnet_up":true,"switches":2,"time_to_subnet_up_ms":3.1,"timeouts":8,"traps":0,
            "sm_info_requests":0,"unsupported_requests":0}"#
            .replace('\n', "");
        let s = parse_summary(&format!("noise\n{text}\n")).unwrap();
        assert!(s.subnet_up);
        assert_eq!(s.result, "subnet up");
        assert_eq!((s.nodes, s.switches, s.lids), (7, 2, 8));
        assert_eq!((s.retries, s.timeouts, s.failed_requests), (6, 8, 2));
    }

    #[test]
    fn a_missing_count_is_an_error() {
        let err = parse_summary(r#"{"subnet_up":true,"result":"subnet up"}"#).unwrap_err();
        assert!(err.to_string().contains("\"nodes\""), "{err}");
        assert!(parse_summary("").is_err());
    }
}
