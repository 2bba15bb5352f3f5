//! ibqos's performance manager against OpenSM's on ibsim, every field of their dumps compared,
//! the data counters included, timestamps aside.
//!
//! Why the data counters can be equal. ibsim moves a port's counters only with MADs: each hop
//! adds 1 packet and 72 dwords to the sender's Xmit and the receiver's Rcv counters. It handles
//! one MAD at a time, in the order they arrive: the request's hops are counted, the PMA answers
//! with the counters as they are then, and the answer's hops are counted. So a reading depends
//! only on the MADs that crossed the port before it. The test makes those the same for both SMs:
//!
//! - Each SM runs alone on a fresh ibsim of two-switch.net, at H1, with the same options. Both
//!   route with minhop to the same LFTs (the routing oracle holds that), so a MAD from H1 to a
//!   node crosses the same ports under either SM.
//! - Neither sweeps the subnet again after SUBNET UP (`sweep_interval 3600`), and the PerfMgr's
//!   timer never fires (`perfmgr_sweep_time_s 3600`): each PerfMgr sweep is asked for on the
//!   console, and the next only once the last has every answer in.
//! - After SUBNET UP, ibsim's console sets every port's PortCountersExtended data counters to 0
//!   (`PerformanceSet`), which is where the dumps' data come from (the PMAs advertise them,
//!   CapabilityMask bit 9). From then on only the PerfMgrs' MADs move the counters.
//! - Both PerfMgrs ask the same queries in the same order: a sweep of ClassPortInfo (one per
//!   switch, one per CA port), then sweeps of PortCounters and PortCountersExtended, node by
//!   node in host-order GUID order, port by port. Each total is the first reading (counted
//!   from 0) plus every later growth, so every total is the same.
//!
//! The dumps are compared after the first counters sweep and again two sweeps later. Any error
//! in how ibqos reads, subtracts or adds the counters shows as a difference; unicast and
//! multicast stay 0 on ibsim, and the error counters too.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm) fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::OpenSmDaemon;
use ibqos_tests::perfmgr::{
    DATES, MachineDump, TWO_SWITCH_PORTS, XMIT_PKTS, assert_mad_sized,
    assert_same_ports_and_errors, number, read_dump,
};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Every port of two-switch.net the PerfMgrs read, by ibsim's node name: S1's enhanced port 0
/// and its 8 ports, S2's 8 (its port 0 is a base one), the CAs' 6.
const NODE_PORTS: [(&str, &[u8]); 7] = [
    ("S1", &[0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ("S2", &[1, 2, 3, 4, 5, 6, 7, 8]),
    ("H1", &[1]),
    ("H2", &[1]),
    ("H3", &[1]),
    ("H4", &[1]),
    ("H5", &[1, 2]),
];

/// The counters of PortCountersExtended that fill the dumps' data columns on ibsim.
const DATA_COUNTERS: [&str; 4] = ["PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"];

/// Both SMs' options: no sweep after SUBNET UP, no PerfMgr sweep but those asked for.
const OPTIONS: &str = "perfmgr TRUE\nperfmgr_sweep_time_s 3600\nsweep_interval 3600\n";

/// Counters sweeps between the two dumps compared.
const LATER_SWEEPS: usize = 2;

/// How long an SM may take to come up, a PerfMgr sweep to end, or a dump to be written.
const WITHIN: Duration = Duration::from_secs(30);

/// One SM with its PerfMgr's console.
enum Sm {
    /// OpenSM, whose console answers into `stdout`.
    OpenSm {
        opensm: OpenSmDaemon,
        stdout: PathBuf,
    },
    Ibqos {
        daemon: Daemon,
        ibqos: PathBuf,
        socket: PathBuf,
    },
}

impl Sm {
    /// `perfmgr WORDS` on OpenSM's console, `ibqos ctl perf WORDS` for ibqos: what it printed,
    /// once it printed it.
    fn perf(&mut self, opensm_words: &str, ibqos_words: &[&str]) -> String {
        match self {
            Sm::OpenSm { opensm, stdout } => {
                let printed = || std::fs::read_to_string(&*stdout).unwrap_or_default();
                let before = printed().len();
                opensm
                    .console(format!("perfmgr {opensm_words}").trim_end())
                    .unwrap();
                thread::sleep(Duration::from_millis(200));
                printed().get(before..).unwrap_or_default().to_string()
            }
            Sm::Ibqos { ibqos, socket, .. } => {
                let out = Command::new(ibqos)
                    .args(["ctl", "--socket"])
                    .arg(&socket)
                    .arg("perf")
                    .args(ibqos_words)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
                String::from_utf8(out.stdout).unwrap()
            }
        }
    }

    /// A PerfMgr sweep, waited for until it is over and every answer is in.
    fn sweep(&mut self) {
        self.perf("sweep", &["sweep"]);
        let deadline = Instant::now() + WITHIN;
        loop {
            thread::sleep(Duration::from_millis(300));
            let status = self.perf("", &[]);
            let status = status
                .rsplit("Performance Manager status:")
                .next()
                .unwrap_or_default();
            if status.contains("sweep state                  : Sleeping\n")
                && status.contains("outstanding queries/max      : 0/")
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the sweep never ended:\n{status}"
            );
        }
    }

    /// The machine-readable dump, once written whole to `path`.
    fn dump(&mut self, path: &Path) -> MachineDump {
        let _ = std::fs::remove_file(path);
        self.perf("dump_counters mach", &["dump", "mach"]);
        let deadline = Instant::now() + WITHIN;
        loop {
            thread::sleep(Duration::from_millis(200));
            let text = std::fs::read_to_string(path).unwrap_or_default();
            if text
                .lines()
                .filter(|line| line.starts_with("Name\t"))
                .count()
                == NODE_PORTS.len()
                && std::fs::read_to_string(path).unwrap_or_default() == text
            {
                let dump = read_dump(path);
                assert_eq!(dump.rows.len(), TWO_SWITCH_PORTS, "{text}");
                return dump;
            }
            assert!(Instant::now() < deadline, "no whole dump:\n{text}");
        }
    }

    fn stop(self) {
        match self {
            Sm::OpenSm { mut opensm, .. } => opensm.kill().unwrap(),
            Sm::Ibqos { mut daemon, .. } => {
                daemon.stop(Duration::from_secs(10)).unwrap();
            }
        }
    }
}

/// Which SM a run starts.
#[derive(Debug, Clone, Copy)]
enum Which {
    OpenSm,
    Ibqos,
}

/// One SM on a fresh ibsim: its dump after the first counters sweep, and after
/// [`LATER_SWEEPS`] more.
fn dumps(tools: &SimTools, dir: &Path, which: Which) -> (MachineDump, MachineDump) {
    let dir = dir.join(format!("{which:?}").to_lowercase());
    std::fs::create_dir_all(&dir).unwrap();
    let dump_path = dir.join("counters.log");
    let conf = format!("{OPTIONS}event_db_dump_file {}\n", dump_path.display());
    let mut sim = Ibsim::start_with_console(tools, &testdata("two-switch.net"), &dir).unwrap();
    let mut sm = match which {
        Which::OpenSm => Sm::OpenSm {
            opensm: OpenSmDaemon::start_with_console(tools, &sim, "H1", &conf, &dir).unwrap(),
            stdout: dir.join("opensm.stdout"),
        },
        Which::Ibqos => {
            let ibqos = ibqos_binary().unwrap();
            let conf_path = dir.join("opensm.conf");
            std::fs::write(&conf_path, conf).unwrap();
            let socket = dir.join("ctl.sock");
            let invocation = SmInvocation::new(SmFabric::Native, "H1", &dir.join("cache"))
                .opensm_conf(&conf_path)
                .args(&["--control-socket", socket.to_str().unwrap()]);
            let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
            let first = daemon.next_summary(WITHIN).unwrap();
            assert_eq!(first["subnet_up"], true, "{first}");
            Sm::Ibqos {
                daemon,
                ibqos,
                socket,
            }
        }
    };
    // Whatever the SM still had on the wire after SUBNET UP has arrived.
    thread::sleep(Duration::from_secs(1));
    for (node, ports) in NODE_PORTS {
        for port in ports {
            for counter in DATA_COUNTERS {
                sim.console(&format!(
                    "PerformanceSet \"{node}\"[{port}] PortCountersExtended.{counter}=0"
                ))
                .unwrap();
            }
        }
    }
    // ClassPortInfo, then the first counters.
    sm.sweep();
    sm.sweep();
    let first = sm.dump(&dump_path);
    for _ in 0..LATER_SWEEPS {
        sm.sweep();
    }
    let later = sm.dump(&dump_path);
    sm.stop();
    sim.kill();
    (first, later)
}

/// Every field of every row the same, the dates aside.
fn assert_same(ours: &MachineDump, theirs: &MachineDump, when: &str) {
    assert_same_ports_and_errors(ours, theirs);
    for (key, mine) in &ours.rows {
        let other = &theirs.rows[key];
        for (column, (a, b)) in mine.iter().zip(other).enumerate() {
            if !DATES.contains(&column) {
                assert_eq!(
                    a,
                    b,
                    "{when}: {key:?} column {column} ({})\nours   {mine:?}\ntheirs {other:?}",
                    theirs.headers[0].split('\t').nth(column).unwrap_or("?")
                );
            }
        }
        // What ibsim counts, so the comparison is of real readings.
        assert_mad_sized(mine);
    }
}

#[test]
fn ibqos_perfmgr_totals_every_counter_as_opensms_on_ibsim() {
    let tools = SimTools::require();
    let dir = TestDir::new("perfmgr-data-oracle");
    let (their_first, their_later) = dumps(&tools, dir.path(), Which::OpenSm);
    let (our_first, our_later) = dumps(&tools, dir.path(), Which::Ibqos);
    assert_same(&our_first, &their_first, "after the first counters sweep");
    assert_same(&our_later, &their_later, "two sweeps later");
    // The PerfMgr's own MADs crossed H1's link at every sweep: the totals grew.
    let h1 = |dump: &MachineDump| {
        let row = dump.rows.iter().find(|(key, _)| key.0 == "host-one HCA-1");
        number(row.unwrap().1, XMIT_PKTS)
    };
    assert!(h1(&our_later) > h1(&our_first) && h1(&our_first) > 0);
}
