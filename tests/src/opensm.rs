//! Running the real OpenSM against an ibsim: once (`-o`), or as a daemon answering SA queries.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{command_line, run_bounded};
use crate::{Error, Ibsim, Result, SimTools};

/// `opensm -o` on a small net reaches SUBNET UP in well under a second; the limit only bounds a
/// hang.
const OPENSM_TIMEOUT: Duration = Duration::from_secs(120);

/// How often a starting OpenSM daemon's log is read for SUBNET UP (about 60 ms after exec on a
/// small net).
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// A qos-policy.conf with just the mandatory default level. Without a valid one OpenSM logs
/// "ERR AC10"/"ERR AC04" on every sweep (and brings the subnet up anyway), which would hide real
/// errors in the log. Its level's SL decides every path with qos on, over a partition's `sl=`.
pub const QOS_POLICY: &str = "\
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
end-qos-levels
";

/// The default partition with every port a full member. An empty partitions.conf makes OpenSM
/// log "Partition configuration in error; retrying with default config".
const PARTITIONS: &str = "Default=0x7fff : ALL=full;\n";

/// One finished `opensm -o` run.
#[derive(Debug)]
pub struct OpenSmRun {
    /// Where its config, log and dump files are.
    pub dir: PathBuf,
    /// The config file it ran with.
    pub config_file: PathBuf,
    /// What it printed (config messages and state changes).
    pub stdout: String,
    /// What it printed on stderr (the QoS policy parser's `Error in QoS Policy File` line).
    pub stderr: String,
    /// Its log file (opensm.log).
    pub log: String,
}

impl OpenSmRun {
    /// The log lines reporting an error (`ERR xxxx:`).
    pub fn error_lines(&self) -> Vec<&str> {
        self.log.lines().filter(|l| l.contains(" ERR ")).collect()
    }
}

/// Runs `opensm -o -F <dir>/opensm.conf` attached to `sim` at `node`, and checks that it brought
/// the subnet up. `-o` runs one heavy sweep and exits; ibsim keeps what it programmed.
///
/// The config file is the harness's own lines (every path OpenSM writes, redirected into `dir`;
/// a valid policy and partition file) followed by `options`, so `options` can override them.
pub fn run_opensm_once(
    tools: &SimTools,
    sim: &Ibsim,
    node: &str,
    options: &str,
    dir: &Path,
) -> Result<OpenSmRun> {
    let config_file = write_files(dir, options)?;
    let mut cmd = opensm_command(tools, sim, node, &config_file, dir);
    cmd.arg("-o");
    let line = command_line(&cmd);
    let finished = run_bounded(&mut cmd, OPENSM_TIMEOUT)?.success(&line)?;
    let log_path = dir.join("opensm.log");
    let log = std::fs::read_to_string(&log_path)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", log_path.display())))?;
    let run = OpenSmRun {
        dir: dir.to_owned(),
        config_file,
        stdout: finished.stdout,
        stderr: finished.stderr,
        log,
    };
    if !run.log.contains("SUBNET UP") {
        return Err(Error::new(format!(
            "`{line}` exited without SUBNET UP in {}\n--- stdout ---\n{}",
            log_path.display(),
            run.stdout
        )));
    }
    Ok(run)
}

/// `opensm -F <config_file>` attached to `sim` at `node`, with its cache and temporary files in
/// `dir`.
fn opensm_command(
    tools: &SimTools,
    sim: &Ibsim,
    node: &str,
    config_file: &Path,
    dir: &Path,
) -> Command {
    let mut cmd = sim.client(&tools.opensm.path, node);
    cmd.arg("-F")
        .arg(config_file)
        // OpenSM's cache (guid2lid and friends) and temporary files; the trailing slash matters,
        // OpenSM appends file names to these without a separator.
        .env("OSM_CACHE_DIR", format!("{}/cache/", dir.display()))
        .env("OSM_TMP_DIR", format!("{}/", dir.display()));
    cmd
}

/// A running OpenSM daemon (no `-o`: it keeps sweeping and answers SA queries), killed by its
/// PID when dropped.
#[derive(Debug)]
pub struct OpenSmDaemon {
    child: Child,
    /// Its standard input, with `console local`: OpenSM's console.
    console: Option<ChildStdin>,
    line: String,
    log_path: PathBuf,
    stdout_path: PathBuf,
}

impl OpenSmDaemon {
    /// Starts `opensm -F <dir>/opensm.conf` (the same config as [`run_opensm_once`]) attached
    /// to `sim` at `node`, and waits until its log says SUBNET UP: before that its SA drops every
    /// query (OpenSM `osm_sa_mad_ctrl.c:319-391`).
    pub fn start(
        tools: &SimTools,
        sim: &Ibsim,
        node: &str,
        options: &str,
        dir: &Path,
    ) -> Result<OpenSmDaemon> {
        OpenSmDaemon::start_until(tools, sim, node, options, dir, "SUBNET UP")
    }

    /// Starts it like [`OpenSmDaemon::start`], and waits until its log holds `text` instead (a
    /// standby never logs SUBNET UP: "Entering STANDBY state").
    pub fn start_until(
        tools: &SimTools,
        sim: &Ibsim,
        node: &str,
        options: &str,
        dir: &Path,
        text: &str,
    ) -> Result<OpenSmDaemon> {
        OpenSmDaemon::spawn(tools, sim, node, options, dir, text, Stdio::null())
    }

    /// Starts it like [`OpenSmDaemon::start`] with OpenSM's console on its standard input
    /// (`console local`), for [`OpenSmDaemon::console`].
    pub fn start_with_console(
        tools: &SimTools,
        sim: &Ibsim,
        node: &str,
        options: &str,
        dir: &Path,
    ) -> Result<OpenSmDaemon> {
        let options = format!("console local\n{options}");
        OpenSmDaemon::spawn(tools, sim, node, &options, dir, "SUBNET UP", Stdio::piped())
    }

    /// Sends one line to OpenSM's console; its answer goes to opensm.stdout ([`output`]).
    ///
    /// [`output`]: OpenSmDaemon::output
    pub fn console(&mut self, command: &str) -> Result<()> {
        let stdin = self.console.as_mut().ok_or_else(|| {
            Error::new("this OpenSM has no console; start it with start_with_console")
        })?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| Error::new(format!("cannot send `{command}` to OpenSM: {e}")))
    }

    fn spawn(
        tools: &SimTools,
        sim: &Ibsim,
        node: &str,
        options: &str,
        dir: &Path,
        text: &str,
        stdin: Stdio,
    ) -> Result<OpenSmDaemon> {
        // OpenSM buffers its log unless told otherwise, and SUBNET UP is written only there.
        let config_file = write_files(dir, &format!("force_log_flush TRUE\n{options}"))?;
        let mut cmd = opensm_command(tools, sim, node, &config_file, dir);
        let line = command_line(&cmd);
        let stdout_path = dir.join("opensm.stdout");
        let out = File::create(&stdout_path)
            .map_err(|e| Error::new(format!("cannot create {}: {e}", stdout_path.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::new(format!("cannot duplicate a file handle: {e}")))?;
        let mut child = cmd
            .current_dir(dir)
            .stdin(stdin)
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::new(format!("cannot start `{line}`: {e}")))?;
        // From here on the guard owns the process, so every early return below kills it.
        let mut daemon = OpenSmDaemon {
            console: child.stdin.take(),
            child,
            line,
            log_path: dir.join("opensm.log"),
            stdout_path,
        };
        daemon.wait_for(text, OPENSM_TIMEOUT)?;
        Ok(daemon)
    }

    /// Waits until its log holds `text` `within` the time given; an error if it exits first.
    pub fn wait_for(&mut self, text: &str, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        while !self.log().contains(text) {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::new(format!(
                    "`{}` exited with {status} before logging {text:?}\n{}",
                    self.line,
                    self.output()
                )));
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "`{}` did not log {text:?} within {within:?}\n{}",
                    self.line,
                    self.output()
                )));
            }
            thread::sleep(POLL_INTERVAL);
        }
        Ok(())
    }

    /// Its log file so far (opensm.log).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Its standard output and log so far, for failure messages.
    pub fn output(&self) -> String {
        let stdout = std::fs::read_to_string(&self.stdout_path).unwrap_or_default();
        format!(
            "--- stdout ---\n{stdout}--- {} ---\n{}",
            self.log_path.display(),
            self.log()
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it (SIGKILL, by its PID) and reaps it: an SM that dies without a word.
    pub fn kill(&mut self) -> Result<()> {
        self.child
            .kill()
            .and_then(|()| self.child.wait().map(drop))
            .map_err(|e| Error::new(format!("cannot kill `{}`: {e}", self.line)))
    }
}

impl Drop for OpenSmDaemon {
    fn drop(&mut self) {
        // By PID, never by name: other tests run their own OpenSM at the same time.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_files(dir: &Path, options: &str) -> Result<PathBuf> {
    // In opensm.conf a '#' starts a comment anywhere on a line, even inside quotes.
    let d = dir.display().to_string();
    if d.contains('#') {
        return Err(Error::new(format!(
            "OpenSM cannot use the directory {d:?}: opensm.conf cannot quote a '#'"
        )));
    }
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map(|()| path.clone())
            .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))
    };
    std::fs::create_dir_all(dir.join("cache"))
        .map_err(|e| Error::new(format!("cannot create {}/cache: {e}", dir.display())))?;
    let policy = write("qos-policy.conf", QOS_POLICY)?;
    let partitions = write("partitions.conf", PARTITIONS)?;
    let mut conf = String::from("# Written by ibqos-tests: every file OpenSM writes or reads.\n");
    writeln!(conf, "log_file {d}/opensm.log").unwrap();
    writeln!(conf, "dump_files_dir {d}/").unwrap();
    writeln!(conf, "partition_config_file {}", partitions.display()).unwrap();
    writeln!(conf, "qos_policy_file {}", policy.display()).unwrap();
    conf.push_str("\n# The test's options.\n");
    conf.push_str(options);
    if !conf.ends_with('\n') {
        conf.push('\n');
    }
    write("opensm.conf", &conf)
}
