//! ibqos's performance manager against OpenSM's, on the same ibsim fabric: each PerfMgr sweeps
//! every second, and each dumps its counters in the machine-readable format (OpenSM through its
//! console, `perfmgr dump_counters mach`; ibqos through `ibqos ctl perf dump mach`).
//!
//! The two dumps must name the same ports of the same nodes, under the same header, and agree on
//! what does not move: the error counters (ibsim's stay 0) and the unicast and multicast
//! packets (ibsim's are always 0). Here the data counters carry each SM's own MADs, read at
//! different times, so they cannot be equal; in both, every packet counts 72 dwords, as ibsim
//! counts it. `perfmgr_data_oracle` compares them value for value, on fabrics where only the
//! PerfMgrs' MADs move them.
//!
//! Before each SM starts, ibsim's console sets S2 port 6's SymbolErrorCounter to 50000, past
//! three quarters of its 16 bits. Each PerfMgr logs the growth (ERR 5431) in the same words and
//! clears the counters with a Set: two sweeps later its total is still 50000. Then the counter
//! is set to 3, and each counts it from 0 with no out-of-band clear (ERR 540A).
//!
//! Last, each writes the human-readable dump: line for line the same, numbers aside.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm) fails the test.

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::OpenSmDaemon;
use ibqos_tests::perfmgr::{
    self, CAST_PKTS, ERRORS, MachineDump, TWO_SWITCH_PORTS as PORTS, assert_mad_sized,
    assert_same_ports_and_errors, number,
};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// How long each PerfMgr has to read every port: two sweeps a second apart, and slack.
const READ_WITHIN: Duration = Duration::from_secs(30);

/// Asks for a dump with `ask` until `path` holds a row for every port and `done` holds.
fn dump_when(
    path: &Path,
    ask: &mut impl FnMut(),
    done: impl Fn(&MachineDump) -> bool,
) -> MachineDump {
    perfmgr::dump_when(path, PORTS, READ_WITHIN, ask, done)
}

/// The node and port whose counter ibsim's console sets: a switch port without a link, which
/// no MAD crosses.
const SET_AT: &str = "\"S2\"[6]";

/// S2 port 6's SymbolErrorCounter total in a dump.
fn symbol_errors(dump: &MachineDump) -> u64 {
    let key = (
        "sw-two".to_string(),
        "0x2c90000002000".to_string(),
        "6".to_string(),
    );
    dump.rows
        .get(&key)
        .map_or(0, |fields| number(fields, ERRORS.start))
}

/// The log line of a PerfMgr that saw S2 port 6's SymbolErrorCounter grow by `growth`.
fn growth_logged(growth: u64) -> String {
    format!(
        "ERR 5431: SymbolErrorCounter : {growth} : node \"sw-two\" (NodeGUID: 0x2c90000002000) \
         : port 6"
    )
}

/// One SM's PerfMgr on `sim`: its first full dump, with S2 port 6 near full, and then that the
/// counter it cleared counts again from 0. `log` gives the SM's log so far.
fn near_full_then_cleared(
    sim: &mut Ibsim,
    path: &Path,
    mut ask: impl FnMut(),
    log: impl Fn() -> String,
) -> MachineDump {
    let first = dump_when(path, &mut ask, |dump| symbol_errors(dump) == 50_000);
    // Two sweeps later the total is the same: the counter was cleared, not read again.
    thread::sleep(Duration::from_millis(2500));
    let later = dump_when(path, &mut ask, |_| true);
    assert_eq!(symbol_errors(&later), 50_000);
    sim.console(&format!(
        "PerformanceSet {SET_AT} PortCounters.SymbolErrorCounter=3"
    ))
    .unwrap();
    dump_when(path, &mut ask, |dump| symbol_errors(dump) == 50_003);
    let log = log();
    for growth in [50_000, 3] {
        assert!(log.contains(&growth_logged(growth)), "{growth}:\n{log}");
    }
    assert!(
        !log.contains("540A"),
        "the clear did not reach ibsim:\n{log}"
    );
    first
}

/// The human-readable dump `ask` writes over the machine-readable one at `path`.
fn human_dump(path: &Path, ask: impl FnOnce()) -> String {
    let before = std::fs::read_to_string(path).unwrap();
    ask();
    let deadline = Instant::now() + READ_WITHIN;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // A file being written is not the machine dump any more, and not whole yet.
        if text != before && text.matches(" active TRUE port ").count() == PORTS {
            return text;
        }
        assert!(Instant::now() < deadline, "no human-readable dump:\n{text}");
        thread::sleep(Duration::from_millis(100));
    }
}

/// A human-readable dump without what two runs cannot share: every number is 0, and what a
/// data counter's value says in units is left out.
fn shape(dump: &str) -> String {
    let mut shaped = String::new();
    let mut in_units = false;
    for c in dump.chars() {
        match c {
            '(' if !in_units => {
                in_units = true;
                shaped.push(c);
            }
            ')' if in_units => {
                in_units = false;
                shaped.push(c);
            }
            _ if in_units => {}
            '0'..='9' if shaped.ends_with('0') => {}
            '0'..='9' => shaped.push('0'),
            _ => shaped.push(c),
        }
    }
    shaped
}

#[test]
fn ibqos_perfmgr_reads_the_ports_opensms_reads_with_the_same_counters() {
    let tools = SimTools::require();
    let dir = TestDir::new("perfmgr-oracle");
    let mut sim =
        Ibsim::start_with_console(&tools, &testdata("two-switch.net"), dir.path()).unwrap();
    let near_full = format!("PerformanceSet {SET_AT} PortCounters.SymbolErrorCounter=50000");
    let options = "perfmgr TRUE\nperfmgr_sweep_time_s 1\n";

    let opensm_dir = dir.path().join("opensm");
    std::fs::create_dir_all(&opensm_dir).unwrap();
    let opensm_dump = opensm_dir.join("counters.log");
    let conf = format!("{options}event_db_dump_file {}\n", opensm_dump.display());
    sim.console(&near_full).unwrap();
    let opensm = std::cell::RefCell::new(
        OpenSmDaemon::start_with_console(&tools, &sim, "H1", &conf, &opensm_dir).unwrap(),
    );
    let theirs = near_full_then_cleared(
        &mut sim,
        &opensm_dump,
        || {
            let mut opensm = opensm.borrow_mut();
            opensm.console("perfmgr dump_counters mach").unwrap()
        },
        || opensm.borrow().log(),
    );
    let their_human = human_dump(&opensm_dump, || {
        let mut opensm = opensm.borrow_mut();
        opensm.console("perfmgr dump_counters").unwrap()
    });
    opensm.borrow_mut().kill().unwrap();

    let ibqos = ibqos_binary().unwrap();
    let ibqos_dir = dir.path().join("ibqos");
    std::fs::create_dir_all(&ibqos_dir).unwrap();
    let ibqos_dump = ibqos_dir.join("counters.log");
    let conf_path = ibqos_dir.join("opensm.conf");
    let conf = format!("{options}event_db_dump_file {}\n", ibqos_dump.display());
    std::fs::write(&conf_path, conf).unwrap();
    let socket = ibqos_dir.join("ctl.sock");
    // ibsim keeps a killed client's node: ibqos attaches at another CA.
    let invocation = SmInvocation::new(SmFabric::Native, "H2", &ibqos_dir.join("cache"))
        .opensm_conf(&conf_path)
        .args(&["--control-socket", socket.to_str().unwrap()]);
    sim.console(&near_full).unwrap();
    let daemon = std::cell::RefCell::new(Daemon::start(&invocation, &ibqos, &sim).unwrap());
    let ours = near_full_then_cleared(
        &mut sim,
        &ibqos_dump,
        || {
            // Before the socket is up the request fails; the next try asks again.
            let _ = Command::new(&ibqos)
                .args(["ctl", "--socket"])
                .arg(&socket)
                .args(["perf", "dump", "mach"])
                .output();
        },
        || daemon.borrow().output(),
    );
    let our_human = human_dump(&ibqos_dump, || {
        let asked = Command::new(&ibqos)
            .args(["ctl", "--socket"])
            .arg(&socket)
            .args(["perf", "dump"])
            .output()
            .unwrap();
        assert!(asked.status.success(), "{asked:?}");
    });
    daemon.borrow_mut().stop(Duration::from_secs(10)).unwrap();
    let (our_human, their_human) = (shape(&our_human), shape(&their_human));
    for (n, (mine, other)) in our_human.lines().zip(their_human.lines()).enumerate() {
        assert_eq!(mine, other, "line {} of the human-readable dumps", n + 1);
    }
    assert_eq!(our_human.lines().count(), their_human.lines().count());

    assert_same_ports_and_errors(&ours, &theirs);
    for (key, mine) in &ours.rows {
        let other = &theirs.rows[key];
        assert_eq!(
            mine[CAST_PKTS], other[CAST_PKTS],
            "{key:?}: unicast, multicast"
        );
        assert_mad_sized(mine);
        assert_mad_sized(other);
    }
}
