//! OpenSM's PerfMgr against `ibqos fabric serve`: counters preset at and just below the point
//! where OpenSM clears them (three quarters of their range, `perfmgr_check_overflow` and
//! `perfmgr_check_pce_overflow` in `osm_perfmgr.c`). OpenSM must send its clearing Set for the
//! first and not for the second, and the served fabric must clear what the Set names: perfquery
//! reads the counters back. OpenSM's own dump (`event_db_dump_file`, through its console) shows
//! it read each preset value exactly once.
//!
//! The presets are on counters no MAD moves (an error counter, PortXmitWait, the unicast
//! packets), so the boundaries are exact: 49152 and 49151 for a 16-bit counter, 3221225472 and
//! 3221225471 for a 32-bit one, 0xC000000000000000 and one less for a 64-bit one.
//!
//! ibqos's PerfMgr, on another served fabric with the same presets, must clear the same
//! counters and leave the same ones.
//!
//! A missing tool (opensm, libumad2sim.so, smpquery, perfquery) fails the test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::OpenSmDaemon;
use ibqos_tests::perfquery::{PerfQuery, counter_preset, serve_with_presets};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Where OpenSM runs, and where perfquery runs.
const SM_NODE: &str = "H1";
const QUERY_NODE: &str = "H2";

/// Nodes perfquery addresses, by directed route from [`QUERY_NODE`] on two-switch.net.
const TARGETS: [(&str, &[u8]); 4] = [
    ("S1", &[1]),
    ("S2", &[1, 3]),
    ("H3", &[1, 3, 1]),
    ("H4", &[1, 3, 2]),
];

/// OpenSM's first PerfMgr sweep reads ClassPortInfo, the second the counters; a few seconds
/// bound the wait.
const OVERFLOW_WAIT: Duration = Duration::from_secs(60);

/// A counter preset at start: the node (its name in the net file and its NodeDescription, as
/// OpenSM logs it), the port, the attribute and counter, perfquery's flag for the attribute,
/// the value, and whether OpenSM clears it.
struct Preset {
    node: &'static str,
    description: &'static str,
    port: u8,
    attribute: &'static str,
    counter: &'static str,
    flag: Option<&'static str>,
    value: u64,
    cleared: bool,
}

/// A counter: its attribute, its name, and perfquery's flag for the attribute.
type Kind = (&'static str, &'static str, Option<&'static str>);

/// 16 bits; OpenSM clears from 49152.
const RCV_ERRORS: Kind = ("PortCounters", "PortRcvErrors", None);
/// 32 bits; OpenSM clears from 3221225472.
const XMIT_WAIT: Kind = ("PortCounters", "PortXmitWait", None);
/// 64 bits, PortCountersExtended; OpenSM clears from 0xC000000000000000.
const UNICAST_XMIT: Kind = ("PortCountersExtended", "PortUnicastXmitPkts", Some("-x"));

/// Each kind of counter at its threshold on one port and one below it on another.
const PRESETS: [Preset; 6] = [
    preset(("S1", "sw-one", 3), RCV_ERRORS, 49_152, true),
    preset(("S1", "sw-one", 4), RCV_ERRORS, 49_151, false),
    preset(("S2", "sw-two", 1), XMIT_WAIT, 3_221_225_472, true),
    preset(("S2", "sw-two", 2), XMIT_WAIT, 3_221_225_471, false),
    preset(
        ("H3", "host-three HCA-1", 1),
        UNICAST_XMIT,
        0xc000_0000_0000_0000,
        true,
    ),
    preset(
        ("H4", "host-four HCA-1", 1),
        UNICAST_XMIT,
        0xbfff_ffff_ffff_ffff,
        false,
    ),
];

/// `kind` of port `port` of node `node` (described as `description`) preset to `value`.
const fn preset(
    (node, description, port): (&'static str, &'static str, u8),
    (attribute, counter, flag): Kind,
    value: u64,
    cleared: bool,
) -> Preset {
    Preset {
        node,
        description,
        port,
        attribute,
        counter,
        flag,
        value,
        cleared,
    }
}

impl Preset {
    /// Whether OpenSM's `log` says it cleared this counter's port: `PerfMgr: Counter overflow:
    /// sw-one (0x2c90000001000) port 3; clearing counters`, or `PortCountersExtended overflow`.
    fn cleared_in(&self, log: &str) -> bool {
        let what = if self.flag.is_some() {
            "PortCountersExtended overflow"
        } else {
            "Counter overflow"
        };
        let (head, tail) = (
            format!("PerfMgr: {what}: {} (0x", self.description),
            format!(") port {}; clearing counters", self.port),
        );
        log.lines().any(|l| l.contains(&head) && l.ends_with(&tail))
    }

    /// What perfquery prints for it now.
    fn read(&self, query: &PerfQuery) -> u64 {
        let port = self.port.to_string();
        let mut args: Vec<&str> = self.flag.into_iter().collect();
        args.extend([self.node, port.as_str()]);
        let out = query.run(&args);
        out.lines()
            .find_map(|line| line.strip_prefix(&format!("{}:", self.counter)))
            .and_then(|value| value.trim_start_matches('.').parse().ok())
            .unwrap_or_else(|| panic!("no {} in:\n{out}", self.counter))
    }
}

/// A TCP port nobody listens on now, for OpenSM's loopback console (another process may take
/// it before OpenSM does; then OpenSM's console fails and so does the test, loudly).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// Sends `command` to OpenSM's loopback console at `port` and waits for its next prompt.
fn console(port: u16, command: &str) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(format!("{command}\n").as_bytes()).unwrap();
    let mut said = String::new();
    let mut buf = [0; 1024];
    while said.matches("OpenSM $ ").count() < 2 {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the console closed after: {said}");
        said.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// The lines of OpenSM's human-readable dump for `description`'s port `port`, after the one
/// that names it (`"sw-one" 0x2c90000001000 active TRUE port 3`).
fn dump_block(dump: &str, description: &str, port: u8) -> String {
    let (head, tail) = (format!("\"{description}\" "), format!(" port {port}"));
    let mut lines = dump
        .lines()
        .skip_while(|l| !(l.starts_with(&head) && l.ends_with(&tail)));
    assert!(
        lines.next().is_some(),
        "no {head}...{tail} in the dump:\n{dump}"
    );
    lines
        .take_while(|l| !l.starts_with('"'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The total OpenSM's dump block holds for `name` (`rcv_err : 49152`).
fn dump_total(block: &str, name: &str) -> u64 {
    block
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.split_whitespace().next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no {name} in:\n{block}"))
}

/// `ibqos fabric serve` of two-switch.net with [`PRESETS`], in a test directory named `name`:
/// the tools, the ibqos binary, the directory and the served fabric.
fn served_with_presets(name: &str) -> (SimTools, PathBuf, TestDir, Ibsim) {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new(name);
    let presets: String = PRESETS
        .iter()
        .map(|p| counter_preset(p.node, p.port, p.attribute, p.counter, p.value))
        .collect();
    let netfile = testdata("two-switch.net");
    let served_dir = dir.subdir("served");
    let served =
        serve_with_presets(&tools, &ibqos, &netfile, SM_NODE, &served_dir, &presets).unwrap();
    (tools, ibqos, dir, served)
}

#[test]
fn opensm_perfmgr_clears_served_counters_at_three_quarters_of_their_range() {
    let (tools, _, dir, served) = served_with_presets("fabric-serve-perfmgr-overflow");
    let opensm_dir = dir.subdir("opensm");
    let dump = opensm_dir.join("port-counters.log");
    let console_port = free_port();
    // Verbose logging (0x04) for the overflow lines; the loopback console for dump_counters.
    let options = format!(
        "perfmgr TRUE\nperfmgr_sweep_time_s 1\nevent_db_dump_file {}\nlog_flags 0x07\n\
         console loopback\nconsole_port {console_port}\n",
        dump.display()
    );
    let opensm = OpenSmDaemon::start(&tools, &served, SM_NODE, &options, &opensm_dir).unwrap();
    let query = PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS);

    let deadline = Instant::now() + OVERFLOW_WAIT;
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        while !done() {
            assert!(Instant::now() < deadline, "{what}\n{}", opensm.output());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    for p in PRESETS.iter().filter(|p| p.cleared) {
        let what = format!("{} of {}[{}]", p.counter, p.node, p.port);
        wait(&format!("OpenSM never cleared {what}"), &|| {
            p.cleared_in(&opensm.log())
        });
        // The Set leaves after the line is logged: wait until the fabric has taken it.
        wait(&format!("{what} never read 0"), &|| p.read(&query) == 0);
    }
    // Two more sweeps, in which a clear of the counters below their threshold would come.
    let sweeps = |log: &str| log.matches("Gathering PerfMgr stats").count();
    let after = sweeps(&opensm.log()) + 2;
    wait("no further PerfMgr sweep", &|| {
        sweeps(&opensm.log()) >= after
    });
    let log = opensm.log();
    for p in PRESETS.iter().filter(|p| !p.cleared) {
        let what = format!("{} of {}[{}]", p.counter, p.node, p.port);
        assert!(!p.cleared_in(&log), "OpenSM cleared {what}:\n{log}");
        assert_eq!(p.read(&query), p.value, "{what}");
    }

    // OpenSM read each preset value once: its totals hold them, cleared or not.
    console(console_port, "perfmgr dump_counters");
    let dump = std::fs::read_to_string(&dump).unwrap();
    for p in &PRESETS {
        let name = match p.counter {
            "PortRcvErrors" => "rcv_err",
            "PortXmitWait" => "xmit_wait",
            _ => "unicast_xmit_pkts",
        };
        let block = dump_block(&dump, p.description, p.port);
        let what = format!("{name} of {}[{}]", p.node, p.port);
        assert_eq!(dump_total(&block, name), p.value, "{what}:\n{block}");
    }
}

/// ibqos's PerfMgr against the same presets on a fresh served fabric clears at the same points
/// as OpenSM's: perfquery reads each counter at its threshold back as 0, and each counter one
/// below it, after at least two more sweeps, as preset.
#[test]
fn ibqos_perfmgr_clears_served_counters_where_opensm_does() {
    let (tools, ibqos, dir, served) = served_with_presets("fabric-serve-perfmgr-overflow-ibqos");
    let sm_dir = dir.subdir("ibqos");
    let conf = sm_dir.join("opensm.conf");
    std::fs::write(&conf, "perfmgr TRUE\nperfmgr_sweep_time_s 1\n").unwrap();
    let invocation =
        SmInvocation::new(SmFabric::Native, SM_NODE, &sm_dir.join("cache")).opensm_conf(&conf);
    let mut daemon = Daemon::start(&invocation, &ibqos, &served).unwrap();
    // The LIDs perfquery addresses are the first sweep's.
    let first = daemon.next_summary(OVERFLOW_WAIT).unwrap();
    assert_eq!(first["subnet_up"], true, "{first}");
    let query = PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS);

    let deadline = Instant::now() + OVERFLOW_WAIT;
    for p in PRESETS.iter().filter(|p| p.cleared) {
        let what = format!("{} of {}[{}]", p.counter, p.node, p.port);
        while p.read(&query) != 0 {
            assert!(
                Instant::now() < deadline,
                "ibqos never cleared {what}\n{}",
                daemon.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // The PerfMgr sweeps every second: two more sweeps, in which a clear of the counters below
    // their threshold would come.
    std::thread::sleep(Duration::from_millis(2500));
    for p in PRESETS.iter().filter(|p| !p.cleared) {
        let what = format!("{} of {}[{}]", p.counter, p.node, p.port);
        assert_eq!(p.read(&query), p.value, "ibqos cleared {what}");
    }
    daemon.stop(Duration::from_secs(10)).unwrap();
}
