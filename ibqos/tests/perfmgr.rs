//! The performance manager of a running `ibqos sm` on the built-in emulated fabric, through
//! `ibqos ctl perf`: OpenSM's console `perfmgr` status, `sweep`, `dump_counters [mach]`,
//! `print_counters`, `print_errors`, `clear_inactive`, `clear_counters`, `sweep_time`,
//! `disable`, `set_rm_nodes`, `clear_rm_nodes`, `set_query_cpi`, `clear_query_cpi`,
//! `dump_redir` and `clear_redir`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::daemon::{Daemon, ibqos_sm, notified_until, notify_socket, signal};

/// `ibqos ctl --socket SOCKET REQUEST ARGS`: whether it succeeded, its standard output and
/// error.
fn ctl(socket: &Path, request: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["ctl", "--socket"])
        .arg(socket)
        .arg(request)
        .args(args)
        .output()
        .unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

/// `ibqos ctl --socket SOCKET perf ARGS`.
fn perf(socket: &Path, args: &[&str]) -> (bool, String, String) {
    ctl(socket, "perf", args)
}

fn perf_ok(socket: &Path, args: &[&str]) -> String {
    let (ok, out, err) = perf(socket, args);
    assert!(ok, "ibqos ctl perf {args:?}: {err}");
    out
}

/// A daemon on the two-switch fabric with `conf` as opensm.conf and a control socket: the
/// daemon, its socket, once the subnet is up.
fn daemon(dir: &Path, conf: &str) -> (Daemon, std::path::PathBuf) {
    configured_daemon(dir, "-F", "opensm.conf", conf)
}

/// [`daemon`] with `text` written to `file` in `dir`, which `flag` names to the daemon.
fn configured_daemon(
    dir: &Path,
    flag: &str,
    file: &str,
    text: &str,
) -> (Daemon, std::path::PathBuf) {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    let socket = dir.join("ctl.sock");
    let (notified, notify) = notify_socket(dir);
    let daemon = Daemon(
        ibqos_sm(dir)
            .arg(flag)
            .arg(&path)
            .arg("--control-socket")
            .arg(&socket)
            .env("NOTIFY_SOCKET", &notify)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    notified_until(&notified, "SUBNET UP");
    (daemon, socket)
}

/// Every port of the two-switch fabric (S1's enhanced port 0, 8 + 8 switch ports, 6 CA
/// ports), read and printed.
const PORTS: usize = 23;

#[test]
fn ibqos_ctl_perf_prints_and_dumps_the_counters_as_opensm() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("counters.log");
    let conf = format!(
        "perfmgr TRUE\nperfmgr_sweep_time_s 1\nevent_db_dump_file {}\n",
        dump.display()
    );
    let (mut daemon, socket) = daemon(dir.path(), &conf);

    // The first PerfMgr sweep reads ClassPortInfo; the second, a second later, the counters.
    let deadline = Instant::now() + Duration::from_secs(20);
    let counters = loop {
        let counters = perf_ok(&socket, &["counters"]);
        if counters.matches(" active TRUE port ").count() == PORTS {
            break counters;
        }
        assert!(
            Instant::now() < deadline,
            "never read every port:\n{counters}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        counters.contains("\"sw-one\" 0x2c90000001000 active TRUE port 0\n"),
        "{counters}"
    );

    let status = perf_ok(&socket, &[]);
    for line in [
        "Performance Manager status:",
        "state                        : Enabled",
        "sweep time                   : 1s",
        "remove missing nodes from DB : TRUE",
        "query ClassPortInfo          : TRUE",
    ] {
        assert!(status.contains(line), "{line:?} in\n{status}");
    }

    let one = perf_ok(&socket, &["counters", "sw-one:3"]);
    assert!(
        one.starts_with("\"sw-one\" 0x2c90000001000 active TRUE port 3\n     Last Reset  "),
        "{one}"
    );
    assert_eq!(one.lines().count(), 25, "{one}");
    assert_eq!(perf_ok(&socket, &["errors"]), "", "no error counted");
    assert_eq!(
        perf_ok(&socket, &["counters", "nobody"]),
        "Node nobody not found...\n"
    );

    assert_eq!(
        perf_ok(&socket, &["dump", "mach"]),
        format!("{}\n", dump.display())
    );
    let machine = std::fs::read_to_string(&dump).unwrap();
    let headers = machine.matches("\nName\tGUID\tActive\tPort\t").count();
    assert_eq!(headers, 7, "one header per node:\n{machine}");
    let rows: Vec<&str> = machine
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with("Name\t"))
        .collect();
    assert_eq!(rows.len(), PORTS, "{machine}");
    assert!(rows.iter().all(|row| row.split('\t').count() == 7 + 13 + 8));

    perf_ok(&socket, &["dump"]);
    let human = std::fs::read_to_string(&dump).unwrap();
    assert_eq!(human.matches(" active TRUE port ").count(), PORTS);

    assert_eq!(perf_ok(&socket, &["sweep"]), "sweep initiated...\n");
    // No more sweeps, and the last one's answers in, before the totals are cleared.
    perf_ok(&socket, &["disable"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        perf_ok(&socket, &["clear-inactive"]),
        "Removed 0 nodes from Database\n"
    );
    perf_ok(&socket, &["clear-counters"]);
    let cleared = perf_ok(&socket, &["counters", "sw-one:3"]);
    assert!(
        cleared.contains("     xmit_pkts            : 0 (0.000)\n"),
        "{cleared}"
    );
    let (ok, _, err) = perf(&socket, &["sweep-time", "0"]);
    assert!(
        !ok && err.contains("sweep_time requires a positive time period"),
        "{err}"
    );
    perf_ok(&socket, &["sweep-time", "2"]);
    let status = perf_ok(&socket, &[]);
    assert!(
        status.contains("state                        : Disabled\n"),
        "{status}"
    );
    assert!(
        status.contains("sweep time                   : 2s\n"),
        "{status}"
    );
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
}

/// The status lines the console's `set_*` and `clear_*` requests turn.
fn switches(socket: &Path) -> (bool, bool) {
    let status = perf_ok(socket, &[]);
    let truth = |label: &str| {
        let line = status.lines().find(|line| line.starts_with(label)).unwrap();
        match line.rsplit(": ").next() {
            Some("TRUE") => true,
            Some("FALSE") => false,
            _ => panic!("{line}"),
        }
    };
    (
        truth("remove missing nodes from DB"),
        truth("query ClassPortInfo"),
    )
}

#[test]
fn ibqos_ctl_perf_turns_node_removal_and_classportinfo_and_shows_redirections() {
    let dir = tempfile::tempdir().unwrap();
    let (mut daemon, socket) = daemon(dir.path(), "perfmgr TRUE\nperfmgr_sweep_time_s 1\n");
    assert_eq!(switches(&socket), (true, true));
    assert_eq!(perf_ok(&socket, &["clear-rm-nodes"]), "");
    assert_eq!(switches(&socket), (false, true));
    perf_ok(&socket, &["clear-query-cpi"]);
    assert_eq!(switches(&socket), (false, false));
    perf_ok(&socket, &["set-rm-nodes"]);
    perf_ok(&socket, &["set-query-cpi"]);
    assert_eq!(switches(&socket), (true, true));

    // The emulated PMAs redirect nobody. The nodes are monitored from the first PerfMgr sweep.
    let deadline = Instant::now() + Duration::from_secs(20);
    while perf_ok(&socket, &["counters", "sw-one"]) == "Node sw-one not found...\n" {
        assert!(Instant::now() < deadline, "sw-one never monitored");
        std::thread::sleep(Duration::from_millis(100));
    }
    let title = "\nRedirection Table\n-----------------\n";
    assert_eq!(perf_ok(&socket, &["dump-redir"]), title);
    assert_eq!(perf_ok(&socket, &["dump-redir", "sw-one"]), title);
    assert_eq!(
        perf_ok(&socket, &["dump-redir", "nobody"]),
        format!("{title}Node nobody not found...\n")
    );
    assert_eq!(perf_ok(&socket, &["clear-redir"]), "");
    assert_eq!(
        perf_ok(&socket, &["clear-redir", "0x7"]),
        "Node 0x7 not found...\n"
    );
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
}

#[test]
fn ibqos_ctl_perf_says_when_the_performance_manager_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let (mut daemon, socket) = daemon(dir.path(), "perfmgr FALSE\n");
    let (ok, _, err) = perf(&socket, &["dump"]);
    assert!(!ok);
    assert!(
        err.contains("the performance manager is off (perfmgr FALSE)"),
        "{err}"
    );
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
}

/// `ibqos ctl --socket SOCKET qos-report ARGS`.
fn qos_report(socket: &Path, args: &[&str]) -> (bool, String, String) {
    ctl(socket, "qos-report", args)
}

/// The ports the SM programs VL arbitration on: the linked ones (5 + 5 switch ports, 6 CA
/// ports) and S1's enhanced port 0.
const PROGRAMMED: usize = 17;

/// `ibqos ctl qos-report` holds every port the SM programmed VL arbitration on to it, once the
/// PerfMgr read the port twice. The embedded fabric's only traffic is MADs, which never make a
/// VL wait: every port read is idle, in text and in JSON, with the configured tolerance.
#[test]
fn ibqos_ctl_qos_report_judges_every_port_with_vl_arbitration() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "[qos]\nenabled = true\n[sm]\nperfmgr_lanes = true\nqos_report_tolerance = 3\n\
                [opensm]\nperfmgr = true\nperfmgr_sweep_time_s = 1\n";
    let (mut daemon, socket) = configured_daemon(dir.path(), "-c", "ibqos.toml", toml);
    let deadline = Instant::now() + Duration::from_secs(20);
    let json = loop {
        let (ok, out, err) = qos_report(&socket, &["--json"]);
        assert!(ok, "{err}");
        let json: serde_json::Value = serde_json::from_str(&out).unwrap();
        let verdicts: Vec<&str> = json["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|port| port["verdict"].as_str().unwrap())
            .collect();
        // Every port but S1's port 0, which has no link to carry what it sends.
        if !verdicts.is_empty() && verdicts.iter().filter(|v| **v != "idle").count() == 1 {
            break json;
        }
        assert!(Instant::now() < deadline, "never read every port:\n{out}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(json["tolerance_points"], 3);
    let ports = json["ports"].as_array().unwrap();
    assert_eq!(ports.len(), PROGRAMMED, "{json}");
    let port0 = &ports[0];
    assert_eq!(
        (
            &port0["node_guid"],
            &port0["node"],
            &port0["port"],
            &port0["verdict"]
        ),
        (
            &serde_json::json!("0x0002c90000001000"),
            &serde_json::json!("sw-one"),
            &serde_json::json!(0),
            &serde_json::json!("unread")
        )
    );
    assert!(
        ports
            .iter()
            .all(|port| port["vls"] == serde_json::json!([]))
    );

    let (ok, text, err) = qos_report(&socket, &[]);
    assert!(ok, "{err}");
    assert_eq!(
        text,
        format!(
            "QoS conformance, tolerance 3 points: 0 outside, 0 conforming, {} idle, 1 unread\n",
            PROGRAMMED - 1
        )
    );
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
}

/// Without the per-VL counters there is no report, and the answer says what is missing.
#[test]
fn ibqos_ctl_qos_report_needs_perfmgr_lanes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut daemon, socket) = daemon(dir.path(), "qos TRUE\nperfmgr TRUE\n");
    let (ok, out, err) = qos_report(&socket, &[]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("the QoS report needs the per-VL counters: [sm] perfmgr_lanes = true"),
        "{err}"
    );
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
}
