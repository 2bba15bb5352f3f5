//! One ibsim per test, and the environment that attaches a client to it.
//!
//! Each test starts its own ibsim because ibsim keeps all state a subnet manager wrote (LIDs,
//! port states, SL2VL and VLArb tables) after the SM exits: a second SM run on the same instance
//! would find a configured fabric and the tables of the first run.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::process::command_line;
use crate::{Error, Result, SimTools, TestDir};

/// How long ibsim may take to bind its sockets. It takes a few milliseconds on a small net.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
const READY_POLL: Duration = Duration::from_millis(5);

/// How long ibsim may take to act on a console command (it prints its next prompt).
const CONSOLE_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `ibsim -s -n NETFILE` (or `ibsim -s NETFILE` with a console), killed by its PID
/// when dropped.
///
/// `-s` starts the network at once; `-n` disables the console, without which ibsim spins at 100 %
/// CPU once its stdin is at EOF. Output goes to `ibsim.out` in the test's directory.
#[derive(Debug)]
pub struct Ibsim {
    child: Child,
    sockname: String,
    dir: PathBuf,
    umad2sim: PathBuf,
    /// The write end of ibsim's stdin when it runs with a console. Held open for ibsim's whole
    /// life: at EOF its console loop would spin at 100 % CPU (ibsim 0.10 `ibsim/ibsim.c:551,588`:
    /// `select` finds the console readable again and again, and `readline` returns 0).
    console: Option<ChildStdin>,
    /// Set once [`Ibsim::kill`] has reaped the process.
    killed: bool,
}

impl Ibsim {
    /// Starts ibsim on `netfile` with a socket name of its own, and waits until clients can
    /// connect.
    pub fn start(tools: &SimTools, netfile: &Path, dir: &Path) -> Result<Ibsim> {
        Ibsim::spawn(tools, netfile, dir, false)
    }

    /// Like [`Ibsim::start`], but with ibsim's console enabled (no `-n`) and its stdin a pipe
    /// this guard holds open, so [`Ibsim::console`] can send it commands such as `Error`.
    pub fn start_with_console(tools: &SimTools, netfile: &Path, dir: &Path) -> Result<Ibsim> {
        Ibsim::spawn(tools, netfile, dir, true)
    }

    fn spawn(tools: &SimTools, netfile: &Path, dir: &Path, console: bool) -> Result<Ibsim> {
        let mut cmd = Command::new(&tools.ibsim.path);
        if console {
            cmd.arg("-s").stdin(Stdio::piped());
        } else {
            cmd.args(["-s", "-n"]).stdin(Stdio::null());
        }
        cmd.arg(netfile);
        // ibsim takes its socket name from the environment only.
        Ibsim::launch(tools, dir, |_| cmd)
    }

    /// Starts `ibqos fabric serve NETFILE --attach NODE` (ibqos's emulated fabric behind ibsim's
    /// socket protocol) in place of ibsim. Clients attach to it exactly as to ibsim, at the node
    /// each names (`attach` for those naming none); it has no console.
    pub fn serve(
        tools: &SimTools,
        ibqos: &Path,
        netfile: &Path,
        attach: &str,
        dir: &Path,
    ) -> Result<Ibsim> {
        Ibsim::serve_with(tools, ibqos, netfile, attach, dir, &[])
    }

    /// `ibqos fabric serve NETFILE --attach NODE` and the real ibsim of the same net file, for
    /// tests that hold the one to the other: each with the directory it runs in (`served` and
    /// `ibsim` under `dir`), served first.
    pub fn served_and_real(
        tools: &SimTools,
        ibqos: &Path,
        netfile: &Path,
        attach: &str,
        dir: &TestDir,
    ) -> Result<((Ibsim, PathBuf), (Ibsim, PathBuf))> {
        let (served_dir, ibsim_dir) = (dir.subdir("served"), dir.subdir("ibsim"));
        let served = Ibsim::serve(tools, ibqos, netfile, attach, &served_dir)?;
        let ibsim = Ibsim::start(tools, netfile, &ibsim_dir)?;
        Ok(((served, served_dir), (ibsim, ibsim_dir)))
    }

    /// [`Ibsim::serve`] with more `ibqos fabric serve` arguments (a fault schedule, a latency
    /// model).
    pub fn serve_with(
        tools: &SimTools,
        ibqos: &Path,
        netfile: &Path,
        attach: &str,
        dir: &Path,
        extra: &[&str],
    ) -> Result<Ibsim> {
        Ibsim::launch(tools, dir, |sockname| {
            let mut cmd = Command::new(ibqos);
            cmd.args(["fabric", "serve"])
                .arg(netfile)
                .args(["--attach", attach, "--sockname", sockname])
                .args(extra)
                .stdin(Stdio::null());
            cmd
        })
    }

    /// Runs the simulator `command` builds for a socket name of its own, with output to
    /// `ibsim.out`, and waits until clients can connect.
    fn launch(
        tools: &SimTools,
        dir: &Path,
        command: impl FnOnce(&str) -> Command,
    ) -> Result<Ibsim> {
        let sockname = format!("ibqos-{}", crate::unique_suffix());
        let mut cmd = command(&sockname);
        let out_path = dir.join("ibsim.out");
        let out = File::create(&out_path)
            .map_err(|e| Error::new(format!("cannot create {}: {e}", out_path.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::new(format!("cannot duplicate a file handle: {e}")))?;
        let program = command_line(&cmd);
        let mut child = cmd
            .env("IBSIM_SOCKNAME", &sockname)
            .current_dir(dir)
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::new(format!("cannot start `{program}`: {e}")))?;
        // From here on the guard owns the process, so every early return below kills it.
        let mut sim = Ibsim {
            console: child.stdin.take(),
            child,
            sockname,
            dir: dir.to_owned(),
            umad2sim: tools.umad2sim.clone(),
            killed: false,
        };
        sim.wait_ready()?;
        Ok(sim)
    }

    /// Waits until ibsim's control socket is bound.
    ///
    /// Its "Network simulator ready." line is not a readiness signal: ibsim prints it before it
    /// binds its sockets (`sim_init_console` runs before `sim_init_conn`). A client started
    /// before the bind does not fail either; it retries every 2 s forever. The bound abstract
    /// socket `@<sockname>:ctl` in /proc/net/unix is exact.
    fn wait_ready(&mut self) -> Result<()> {
        let needle = format!("@{}:ctl@", self.sockname);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::new(format!(
                    "ibsim exited with {status} before it was ready\n--- ibsim.out ---\n{}",
                    self.output()
                )));
            }
            let sockets = std::fs::read_to_string("/proc/net/unix")
                .map_err(|e| Error::new(format!("cannot read /proc/net/unix: {e}")))?;
            if sockets.contains(&needle) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "ibsim did not bind its socket {needle} within {READY_TIMEOUT:?}\n\
                     --- ibsim.out ---\n{}",
                    self.output()
                )));
            }
            thread::sleep(READY_POLL);
        }
    }

    /// The `IBSIM_SOCKNAME` clients must use.
    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    /// What ibsim has printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(self.dir.join("ibsim.out")).unwrap_or_default()
    }

    /// A command for `program` attached to this ibsim at `node` (a node id from the net file):
    /// at port 1 of a CA, at port 0 of a switch.
    ///
    /// The client runs in the test's directory because umad2sim writes its fake sysfs tree to
    /// `./sys-<pid>/` relative to the working directory. ibsim accepts at most 10 clients at once.
    pub fn client(&self, program: &Path, node: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.dir)
            .env("LD_PRELOAD", &self.umad2sim)
            .env("SIM_HOST", node)
            .env("IBSIM_SOCKNAME", &self.sockname)
            // Either of these in the caller's environment would change how the client connects.
            .env_remove("IBSIM_SERVER_NAME")
            .env_remove("IBSIM_SERVER_PORT")
            .env_remove("SIM_SET_ISSM");
        cmd
    }
}

impl Ibsim {
    /// Sends one console command (for example `Error "S1"[3] 100`) and waits until ibsim has
    /// acted on it: it prints a new `sim> ` prompt after each command it has read.
    pub fn console(&mut self, command: &str) -> Result<()> {
        let prompts_before = self.output().matches("sim> ").count();
        let stdin = self.console.as_mut().ok_or_else(|| {
            Error::new("this ibsim has no console; start it with Ibsim::start_with_console")
        })?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| Error::new(format!("cannot send `{command}` to ibsim: {e}")))?;
        let deadline = Instant::now() + CONSOLE_TIMEOUT;
        while self.output().matches("sim> ").count() <= prompts_before {
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "ibsim did not act on `{command}` within {CONSOLE_TIMEOUT:?}\n\
                     --- ibsim.out ---\n{}",
                    self.output()
                )));
            }
            thread::sleep(READY_POLL);
        }
        Ok(())
    }

    /// ibsim's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills ibsim now (by its PID) and reaps it: for tests of a fabric that goes away.
    pub fn kill(&mut self) {
        if !self.killed {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.killed = true;
        }
    }

    /// Sends `signal` (a name `kill -s` knows, such as `STOP`) to ibsim, by its PID.
    pub fn signal(&self, signal: &str) -> Result<()> {
        if self.killed {
            return Err(Error::new("ibsim has already been killed"));
        }
        let status = Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .map_err(|e| Error::new(format!("cannot run kill: {e}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::new(format!(
                "kill -s {signal} {} failed: {status}",
                self.pid()
            )))
        }
    }

    /// Whether a client of this ibsim has bound its data socket (`@<sockname>:in<id>`): the
    /// first thing a native client does, before its CONNECT.
    pub fn has_native_client(&self) -> bool {
        let needle = format!("@{}:in", self.sockname);
        std::fs::read_to_string("/proc/net/unix").is_ok_and(|s| s.contains(&needle))
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        // By PID, never by name: other tests run their own ibsim at the same time. The console
        // pipe (a field) closes only after this, so ibsim never sees EOF while it runs.
        self.kill();
    }
}
