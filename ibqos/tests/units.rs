//! The systemd units in dist/systemd: `systemd-analyze verify` accepts them (directives,
//! sandboxing settings, the command line and that its program exists), the template's stop
//! timeout fits the SM's stop, and the fan-out
//! ibqos.service starts one ibqos@GUID.service per port that PORTS= names, run here with a
//! `systemctl` that records what it is asked instead of starting anything.
//!
//! What is not verified here: that the units run under a real systemd (this machine has none as
//! PID 1), that `Documentation=man:` pages exist (the packaged units are verified with them by
//! .ci/deb-check once the package is installed), and the sandbox against real
//! /dev/infiniband devices.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ibqos_sm::manager::STOP_WAIT;

mod common;
use common::sysfs::{FakePort, add_device};

const IBQOS: &str = env!("CARGO_BIN_EXE_ibqos");

fn dist(unit: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dist/systemd")
        .join(unit);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The units in `dir`, with /usr/sbin/ibqos replaced by the binary just built, since
/// `systemd-analyze verify` checks that ExecStart's program exists.
fn units_in(dir: &Path) -> [PathBuf; 2] {
    ["ibqos@.service", "ibqos.service"].map(|unit| {
        let path = dir.join(unit);
        std::fs::write(&path, dist(unit).replace("/usr/sbin/ibqos", IBQOS)).unwrap();
        path
    })
}

/// `systemd-analyze verify` of the template (as an instance) and the fan-out unit: exit 0 and
/// nothing said, not even a warning.
#[test]
fn systemd_analyze_verify_accepts_the_units() {
    let dir = tempfile::tempdir().unwrap();
    units_in(dir.path());
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(dir.path().join("ibqos@0x0002c903000a1b2c.service"))
        .arg(dir.path().join("ibqos.service"))
        .output()
        .expect("systemd-analyze (package systemd) must be installed");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && said.is_empty(), "{said}");
}

/// The same check fails on a unit with a mistake, so the test above can fail.
#[test]
fn systemd_analyze_verify_rejects_a_broken_unit() {
    let dir = tempfile::tempdir().unwrap();
    let [template, _] = units_in(dir.path());
    let text = std::fs::read_to_string(&template).unwrap();
    std::fs::write(&template, text.replace("ExecStart=", "ExecStar=")).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(dir.path().join("ibqos@0x0002c903000a1b2c.service"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("ExecStar"), "{said}");
}

/// The template sets its stop timeout: under systemd's default (90 s) a stop that hangs would
/// hold the unit that long. It leaves the SM's own stop (a second at most, its wait for the
/// answers to the SMPs on the wire included) several times over before SIGKILL.
#[test]
fn the_template_sets_a_stop_timeout_the_sms_stop_fits_in() {
    let unit = dist("ibqos@.service");
    let seconds: u64 = unit
        .lines()
        .find_map(|line| line.strip_prefix("TimeoutStopSec="))
        .expect("no TimeoutStopSec= in ibqos@.service")
        .parse()
        .expect("TimeoutStopSec= in whole seconds");
    let timeout = Duration::from_secs(seconds);
    assert!(
        timeout >= 5 * (Duration::from_secs(1) + STOP_WAIT) && timeout < Duration::from_secs(90),
        "TimeoutStopSec={seconds}"
    );
}

/// The shell command of `Exec...=/bin/sh -c '...'` in a unit, with systemd's `$$` (a literal
/// `$`) undone, as systemd hands it to sh.
fn shell_command(unit: &str, key: &str) -> String {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=/bin/sh -c '")))
        .unwrap_or_else(|| panic!("no {key}=/bin/sh -c '...' in {unit}"));
    line.strip_suffix('\'').unwrap().replace("$$", "$")
}

/// Runs the fan-out's condition and start commands with PORTS=`ports`, on a host whose sysfs is
/// `sysfs` and whose `systemctl` only appends its arguments to a file: (the condition's exit
/// status, the start command's exit status, the systemctl calls, the start command's output).
fn fan_out(sysfs: &Path, ports: &str) -> (i32, i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("calls");
    let systemctl = bin.join("systemctl");
    std::fs::write(
        &systemctl,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", calls.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let unit = dist("ibqos.service").replace("/usr/sbin/ibqos", IBQOS);
    let run = |key: &str| {
        Command::new("/bin/sh")
            .arg("-c")
            .arg(shell_command(&unit, key))
            .env("PORTS", ports)
            .env("IBQOS_SYSFS_ROOT", sysfs)
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .output()
            .unwrap()
    };
    let condition = run("ExecCondition");
    let start = run("ExecStart");
    (
        condition.status.code().unwrap(),
        start.status.code().unwrap(),
        std::fs::read_to_string(&calls).unwrap_or_default(),
        String::from_utf8_lossy(&start.stdout).into_owned(),
    )
}

#[test]
fn the_fan_out_starts_one_instance_per_port_that_ports_names() {
    let sysfs = tempfile::tempdir().unwrap();
    let port = |device, link_layer, guid| FakePort {
        device,
        port: 1,
        link_layer: Some(link_layer),
        guid,
        state: "4: ACTIVE",
        rate: "100 Gb/sec (4X EDR)",
    };
    add_device(
        sysfs.path(),
        &[port("irdma0", "Ethernet", 0x0a0b_0cff_fe0d_0e0f)],
    );
    add_device(
        sysfs.path(),
        &[port("mlx5_0", "InfiniBand", 0x0002_c903_0000_0001)],
    );
    add_device(
        sysfs.path(),
        &[port("mlx5_1", "InfiniBand", 0x0002_c903_0000_0002)],
    );

    // ALL: every InfiniBand port, the RoCE one left out.
    let (condition, start, calls, _) = fan_out(sysfs.path(), "ALL");
    assert_eq!((condition, start), (0, 0));
    assert_eq!(
        calls,
        "start --no-block ibqos@0x0002c90300000001.service\n\
         start --no-block ibqos@0x0002c90300000002.service\n"
    );
    // A list: those ports, whatever the host has.
    let (_, start, calls, _) = fan_out(sysfs.path(), "0x0002c90300000002 0x1234");
    assert_eq!(start, 0);
    assert_eq!(
        calls,
        "start --no-block ibqos@0x0002c90300000002.service\n\
         start --no-block ibqos@0x1234.service\n"
    );
    // NONE: the condition fails, which systemd reports as "skipped", not as a failure.
    let (condition, _, _, _) = fan_out(sysfs.path(), "NONE");
    assert_eq!(condition, 1);
    // ALL on a host without InfiniBand: nothing started, and no failure.
    let empty = tempfile::tempdir().unwrap();
    let (_, start, calls, out) = fan_out(empty.path(), "ALL");
    assert_eq!((start, calls.as_str()), (0, ""));
    assert!(out.contains("No InfiniBand port found"), "{out}");
}
