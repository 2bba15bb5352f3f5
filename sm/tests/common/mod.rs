//! One ibsim per test, killed by PID, and the tools the transport tests need.
//!
//! A copy of the idea in ibqos-tests' `ibsim.rs` (sm cannot depend on that crate). Each test
//! starts its own ibsim with its own socket name: ibsim keeps every table an SM wrote, and
//! tests run in parallel.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// `program` on PATH, or a panic naming the Debian package that provides it: these tests must
/// fail, not skip, on a machine without the oracles.
pub fn tool(program: &str, package: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{program}` not found on PATH: apt-get install {package}"))
}

pub fn umad2sim() -> PathBuf {
    let path = PathBuf::from(UMAD2SIM);
    assert!(
        path.is_file(),
        "{UMAD2SIM} is missing: apt-get install libumad2sim0"
    );
    path
}

pub fn two_switch_net() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/testdata/two-switch.net")
}

/// A scratch directory for one test, removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ibqos-{label}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `ibsim -s -n NETFILE`, killed by its PID when dropped.
#[derive(Debug)]
pub struct Ibsim {
    child: Child,
    sockname: String,
    dir: TempDir,
}

impl Ibsim {
    pub fn start(netfile: &Path) -> Ibsim {
        let ibsim = tool("ibsim", "ibsim-utils");
        let dir = TempDir::new("ibsim");
        let sockname = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = File::create(dir.path().join("ibsim.out")).unwrap();
        let child = Command::new(ibsim)
            .args(["-s", "-n"])
            .arg(netfile)
            .env("IBSIM_SOCKNAME", &sockname)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("cannot start ibsim");
        let mut sim = Ibsim {
            child,
            sockname,
            dir,
        };
        sim.wait_ready();
        sim
    }

    /// ibsim prints "ready" before it binds; its bound control socket in /proc/net/unix is the
    /// readiness signal.
    fn wait_ready(&mut self) {
        let needle = format!("@{}:ctl@", self.sockname);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("ibsim exited with {status}:\n{}", self.output());
            }
            let sockets = std::fs::read_to_string("/proc/net/unix").unwrap();
            if sockets.contains(&needle) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "ibsim did not bind {needle}:\n{}",
                self.output()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ibsim.out")).unwrap_or_default()
    }

    /// `program` attached to this ibsim at `node` through umad2sim. It runs in the scratch
    /// directory because umad2sim writes its fake sysfs to `./sys-<pid>/`.
    pub fn shim_client(&self, program: &Path, node: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.dir.path())
            .env("LD_PRELOAD", umad2sim())
            .env("SIM_HOST", node)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env_remove("IBSIM_SERVER_NAME")
            .env_remove("IBSIM_SERVER_PORT")
            .env_remove("SIM_SET_ISSM");
        cmd
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        // By PID, never by name: other tests run their own ibsim at the same time.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `ibqos` binary under test.
pub fn ibqos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ibqos"))
}

/// Runs `cmd` with a time limit, so that a hang fails the test instead of stalling it.
pub fn run(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the command");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} did not finish within 30 s");
        }
        thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// The value of `Name: value` in ibqos output.
/// The standard output of a command that must have succeeded (else its stderr is the failure).
pub fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

pub fn field<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no `{name}` in:\n{stdout}"))
}

/// The value of `Name:....value` in smpquery output.
pub fn smpquery_field<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| {
            Some(
                l.strip_prefix(name)?
                    .strip_prefix(':')?
                    .trim_start_matches('.'),
            )
        })
        .unwrap_or_else(|| panic!("no `{name}` in:\n{stdout}"))
}
