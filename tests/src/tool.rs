//! Finding the external programs the end-to-end tests drive.
//!
//! A missing program fails the test with the apt package to install. It never skips the test:
//! a skipped oracle test looks exactly like a passing one in CI.

use std::path::{Path, PathBuf};

/// Directories searched after `PATH`. OpenSM and smpquery are installed in /usr/sbin, which is
/// not on a normal user's `PATH`.
const SBIN_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/local/sbin"];

/// An external program a test needs.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: &'static str,
    pub path: PathBuf,
}

impl Tool {
    /// Finds the program `name` in `PATH` or the sbin directories.
    ///
    /// # Panics
    /// If it is not installed, with a message naming `apt_package`.
    pub fn require(name: &'static str, apt_package: &str) -> Tool {
        match find_program(name) {
            Some(path) => Tool { name, path },
            None => panic!(
                "required program `{name}` not found in PATH or {SBIN_DIRS:?}; \
                 install the Debian package `{apt_package}` (apt-get install {apt_package})"
            ),
        }
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Everything an ibsim-based test runs: the simulator, its LD_PRELOAD shim, OpenSM, smpquery,
/// ibroute, perfquery, ibccquery and ibccconfig.
#[derive(Debug, Clone)]
pub struct SimTools {
    pub ibsim: Tool,
    /// libumad2sim.so: preloaded into a client, it turns libibumad's device files into a
    /// connection to ibsim.
    pub umad2sim: PathBuf,
    pub opensm: Tool,
    pub smpquery: Tool,
    /// Dumps a switch's linear forwarding table.
    pub ibroute: Tool,
    /// Reads and clears a port's performance counters (PerfMgt GMPs).
    pub perfquery: Tool,
    /// Reads a congestion control agent's attributes (class 0x21).
    pub ibccquery: Tool,
    /// Sets them.
    pub ibccconfig: Tool,
}

impl SimTools {
    /// Finds all of them.
    ///
    /// # Panics
    /// If one is missing, naming its apt package.
    pub fn require() -> SimTools {
        SimTools {
            ibsim: Tool::require("ibsim", "ibsim-utils"),
            umad2sim: require_umad2sim(),
            opensm: Tool::require("opensm", "opensm"),
            smpquery: Tool::require("smpquery", "infiniband-diags"),
            ibroute: Tool::require("ibroute", "infiniband-diags"),
            perfquery: Tool::require("perfquery", "infiniband-diags"),
            ibccquery: Tool::require("ibccquery", "infiniband-diags"),
            ibccconfig: Tool::require("ibccconfig", "infiniband-diags"),
        }
    }
}

/// The shim lives in a multiarch directory (/usr/lib/x86_64-linux-gnu/umad2sim/ on amd64), so
/// look in every /usr/lib/<triplet>/ rather than hard-coding one architecture.
fn require_umad2sim() -> PathBuf {
    const REL: &str = "umad2sim/libumad2sim.so";
    let multiarch = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join(REL));
    let fixed = ["/usr/lib", "/usr/lib64", "/usr/local/lib"]
        .into_iter()
        .map(|dir| Path::new(dir).join(REL));
    multiarch
        .chain(fixed)
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "required library `{REL}` not found under /usr/lib/*/, /usr/lib, /usr/lib64 or \
                 /usr/local/lib; install the Debian package `ibsim-utils` \
                 (apt-get install ibsim-utils)"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_program_on_the_path() {
        assert!(Tool::require("sh", "dash").path.is_file());
    }

    #[test]
    #[should_panic(expected = "install the Debian package `no-such-package`")]
    fn a_missing_program_names_its_package() {
        Tool::require("ibqos-no-such-program", "no-such-package");
    }
}
