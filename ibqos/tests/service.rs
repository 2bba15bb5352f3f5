//! `ibqos` as a service: systemd's watchdog fed from the main loop, the SM waiting for its port
//! and its link (in a sysfs tree the test fakes and changes), a stop in the middle of a slow
//! sweep, `ibqos ports` listing the InfiniBand ports and never an Ethernet one.

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::daemon::{Daemon, ibqos_sm, notified_until, notify_socket, signal};
use common::sysfs::{FakePort, add_device, put};
use common::wait_for_text;

const IBQOS: &str = env!("CARGO_BIN_EXE_ibqos");

/// The messages that arrive on `socket` within `span`.
fn notified_within(socket: &UnixDatagram, span: Duration) -> Vec<String> {
    let end = Instant::now() + span;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        socket
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        if let Ok(n) = socket.recv(&mut buffer) {
            seen.push(String::from_utf8_lossy(&buffer[..n]).into_owned());
        }
    }
    seen
}

/// `ibqos sm ARGS` run as systemd runs a unit with `WatchdogSec=`: the shell puts its own PID
/// in WATCHDOG_PID (`pid` "self") or another (the test's), then becomes ibqos with `exec`.
fn sm_under_watchdog(dir: &Path, notify: &Path, pid: &str, usec: u64) -> Daemon {
    let watchdog_pid = match pid {
        "self" => "$$".to_owned(),
        _ => std::process::id().to_string(),
    };
    Daemon(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "WATCHDOG_PID={watchdog_pid} exec \"$0\" sm --cache-dir \"$1\""
            ))
            .arg(IBQOS)
            .arg(dir)
            .env("NOTIFY_SOCKET", notify)
            .env("WATCHDOG_USEC", usec.to_string())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// WatchdogSec=200ms: the main loop sends WATCHDOG=1 about every 100 ms, also while the fabric
/// is quiet between sweeps (the sweep interval is 10 s); a WATCHDOG_PID naming another process
/// means the watchdog is not ours, and nothing is sent.
#[test]
fn the_main_loop_feeds_systemds_watchdog_at_half_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, path) = notify_socket(dir.path());
    let mut daemon = sm_under_watchdog(dir.path(), &path, "self", 200_000);
    notified_until(&socket, "SUBNET UP");
    let beats = notified_within(&socket, Duration::from_millis(1500))
        .iter()
        .filter(|m| m.trim_end() == "WATCHDOG=1")
        .count();
    // 15 at exactly 100 ms; a loaded machine may delay some, but not most.
    assert!((8..=16).contains(&beats), "{beats} beats in 1.5 s");
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());

    let dir = tempfile::tempdir().unwrap();
    let (socket, path) = notify_socket(dir.path());
    let mut daemon = sm_under_watchdog(dir.path(), &path, "other", 200_000);
    notified_until(&socket, "SUBNET UP");
    let messages = notified_within(&socket, Duration::from_millis(1000));
    assert!(
        !messages.iter().any(|m| m.contains("WATCHDOG=1")),
        "{messages:?}"
    );
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
}

/// The SM's port is not there, then there with its link down, then up: the SM waits, says so
/// in STATUS= (and keeps the watchdog fed), and once the link is up goes on to open the umad
/// device sysfs names, which this machine does not have (so it ends there, with that error).
#[test]
fn the_sm_waits_for_its_port_to_appear_and_its_link_to_come_up() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, notify) = notify_socket(dir.path());
    let sysfs = dir.path().join("sys");
    std::fs::create_dir(&sysfs).unwrap();
    let guid = 0x0002_c903_0000_0002_u64;
    let log_path = dir.path().join("log");
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .args(["--fabric", &format!("umad:{guid:#018x}")])
            .env("IBQOS_SYSFS_ROOT", &sysfs)
            .env("NOTIFY_SOCKET", &notify)
            .env("WATCHDOG_USEC", "200000")
            .env_remove("WATCHDOG_PID")
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let absent = notified_until(&socket, "STATUS=");
    assert_eq!(
        absent.last().unwrap().trim_end(),
        "STATUS=waiting for port 0x0002c90300000002 to appear"
    );
    notified_until(&socket, "WATCHDOG=1");
    add_device(
        &sysfs,
        &[FakePort {
            device: "mlx5_0",
            port: 1,
            link_layer: Some("InfiniBand"),
            guid,
            state: "1: DOWN",
            rate: "10 Gb/sec (4X SDR)",
        }],
    );
    let down = notified_until(&socket, "STATUS=");
    assert_eq!(
        down.last().unwrap().trim_end(),
        "STATUS=waiting for link on 0x0002c90300000002"
    );
    put(&sysfs, "infiniband_mad/umad0/ibdev", "mlx5_0");
    put(&sysfs, "infiniband_mad/umad0/port", "1");
    put(&sysfs, "infiniband/mlx5_0/ports/1/state", "2: INIT");
    let status = daemon.0.wait().unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("/dev/infiniband/umad0: open failed"),
        "it went on to open the port's device: {log}"
    );
}

/// SIGTERM while waiting for the port: STOPPING=1 and a clean exit.
#[test]
fn the_sm_stops_on_sigterm_while_it_waits() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, notify) = notify_socket(dir.path());
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .args(["--fabric", "umad"])
            .env("IBQOS_SYSFS_ROOT", dir.path().join("no-sys"))
            .env("NOTIFY_SOCKET", &notify)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let waiting = notified_until(&socket, "STATUS=");
    assert_eq!(
        waiting.last().unwrap().trim_end(),
        "STATUS=waiting for an InfiniBand port to appear"
    );
    signal(daemon.0.id(), "TERM");
    notified_until(&socket, "STOPPING=1");
    assert!(daemon.0.wait().unwrap().success());
}

/// Waits up to `limit` for `daemon` to exit; its exit status.
fn exit_within(daemon: &mut Daemon, limit: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = daemon.0.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < end, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGTERM in the middle of a slow sweep (a 4x4 torus whose switches take 60 ms to answer an
/// SMP, so that the P_Key tables being Set leave seconds of sweep): the SM sends nothing more,
/// exits within about a second and says so, and its metrics textfile no longer says master.
#[test]
fn sigterm_in_the_middle_of_a_slow_sweep_stops_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("torus.net");
    let generated = Command::new(IBQOS)
        .args(["fabric", "gen", "torus", "--x", "4", "--y", "4", "-o"])
        .arg(&net)
        .status()
        .unwrap();
    assert!(generated.success());
    let (log, textfile) = (dir.path().join("sm.log"), dir.path().join("ibqos.prom"));
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .arg("--fabric")
            .arg(format!("sim:{}", net.display()))
            .args(["--switch-sma-ns", "60000000", "--log-file"])
            .arg(&log)
            .arg("--metrics-textfile")
            .arg(&textfile)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_text(&log, "programming P_Key tables", Duration::from_secs(60));
    let master = std::fs::read_to_string(&textfile).unwrap();
    assert!(
        master.contains("ibqos_sm_state{state=\"master\"} 1"),
        "{master}"
    );
    let asked = Instant::now();
    signal(daemon.0.id(), "TERM");
    let status = exit_within(&mut daemon, Duration::from_secs(30));
    let took = asked.elapsed();
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status}\n{said}");
    assert!(
        took < Duration::from_millis(1500),
        "the stop took {took:?}\n{said}"
    );
    assert!(said.contains("stopping during a sweep"), "{said}");
    assert!(said.trim_end().ends_with("stopped"), "{said}");
    assert!(!said.contains("SUBNET UP"), "the sweep went on:\n{said}");
    let after = std::fs::read_to_string(&textfile).unwrap();
    assert!(
        after.contains("ibqos_sm_state{state=\"master\"} 0"),
        "{after}"
    );
    assert!(
        after.contains("ibqos_sm_state{state=\"not_active\"} 1"),
        "{after}"
    );
}

/// `ibqos ports ARGS` on the sysfs tree at `root`: what it printed on standard output and on
/// standard error.
fn ports(root: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(IBQOS)
        .arg("ports")
        .args(args)
        .env("IBQOS_SYSFS_ROOT", root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = |bytes| String::from_utf8(bytes).unwrap();
    (text(out.stdout), text(out.stderr))
}

/// A host with a RoCE device (link_layer Ethernet), a two-port HCA and an old-kernel device
/// without link_layer files: every InfiniBand port in order, the Ethernet one never.
#[test]
fn ports_lists_the_infiniband_ports_and_never_an_ethernet_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let port = |device, port, link_layer, guid, state, rate| FakePort {
        device,
        port,
        link_layer,
        guid,
        state,
        rate,
    };
    add_device(
        root,
        &[port(
            "irdma0",
            1,
            Some("Ethernet"),
            0x0a0b_0cff_fe0d_0e0f,
            "4: ACTIVE",
            "100 Gb/sec (4X EDR)",
        )],
    );
    add_device(
        root,
        &[
            port(
                "mlx5_0",
                1,
                Some("InfiniBand"),
                0x0002_c903_0000_0001,
                "4: ACTIVE",
                "200 Gb/sec (4X HDR)",
            ),
            port(
                "mlx5_0",
                2,
                Some("InfiniBand"),
                0x0002_c903_0000_0002,
                "1: DOWN",
                "10 Gb/sec (4X SDR)",
            ),
        ],
    );
    add_device(
        root,
        &[port(
            "qib0",
            1,
            None,
            0x0011_7500_0070_0001,
            "2: INIT",
            "40 Gb/sec (4X QDR)",
        )],
    );
    assert_eq!(
        ports(root, &[]).0,
        "CA      PORT  GUID                STATE         RATE\n\
         mlx5_0     1  0x0002c90300000001  ACTIVE        200 Gb/sec (4X HDR)\n\
         mlx5_0     2  0x0002c90300000002  DOWN          10 Gb/sec (4X SDR)\n\
         qib0       1  0x0011750000700001  INIT          40 Gb/sec (4X QDR)\n"
    );
    assert_eq!(
        ports(root, &["--guids"]).0,
        "0x0002c90300000001\n0x0002c90300000002\n0x0011750000700001\n"
    );
}

/// No InfiniBand port, for want of a driver or with only Ethernet ones: nothing on standard
/// output (no table heading, no GUID for the fan-out unit), why on standard error, success.
#[test]
fn ports_with_no_infiniband_port_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent");
    for args in [&[][..], &["--guids"]] {
        assert_eq!(
            ports(&absent, args),
            (
                String::new(),
                format!(
                    "no InfiniBand port: {}/infiniband does not exist (no RDMA driver \
                     loaded)\n",
                    absent.display()
                )
            )
        );
    }
    add_device(
        dir.path(),
        &[FakePort {
            device: "irdma0",
            port: 1,
            link_layer: Some("Ethernet"),
            guid: 0x0a0b_0cff_fe0d_0e0f,
            state: "4: ACTIVE",
            rate: "100 Gb/sec (4X EDR)",
        }],
    );
    assert_eq!(
        ports(dir.path(), &[]),
        (
            String::new(),
            "no InfiniBand port: no RDMA device has one\n".to_string()
        )
    );
}

/// `sm --once` on umad where the host has no InfiniBand port: it says what it waits for and
/// for how long, then gives up with an error that says what it waited for and why.
#[test]
fn once_on_umad_gives_up_waiting_for_a_port_that_does_not_come() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("stderr");
    let started = Instant::now();
    let mut sm = Daemon(
        ibqos_sm(dir.path())
            .args(["--once", "--fabric", "umad"])
            .env("IBQOS_SYSFS_ROOT", dir.path().join("no-sys"))
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap(),
    );
    let status = exit_within(&mut sm, Duration::from_secs(20));
    let took = started.elapsed();
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(
        (Duration::from_secs(10)..Duration::from_secs(15)).contains(&took),
        "gave up after {took:?}"
    );
    assert!(
        said.contains("waiting for an InfiniBand port to appear (giving up after 10 s)"),
        "{said}"
    );
    let gave_up = format!(
        "gave up after 10 s waiting for an InfiniBand port to appear: {}/infiniband does \
         not exist (no RDMA driver loaded)",
        dir.path().join("no-sys").display()
    );
    assert!(said.contains(&gave_up), "{said}");
}
