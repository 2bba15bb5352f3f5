//! ibqos's performance manager against OpenSM's, on the same ibsim fabric: each PerfMgr sweeps
//! every second, and each dumps its counters in the machine-readable format (OpenSM through its
//! console, `perfmgr dump_counters mach`; ibqos through `ibqos ctl perf dump mach`).
//!
//! The two dumps must name the same ports of the same nodes, under the same header, and agree on
//! what does not move: the error counters (ibsim's stay 0) and the unicast and multicast
//! packets (ibsim's are always 0). The data counters carry each SM's own MADs, read at different
//! times, so they cannot be equal; in both, every packet counts 72 dwords, as ibsim counts it.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm) fails the test.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use ibqos_tests::SimTools;
use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::OpenSmDaemon;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::fresh_ibsim;
use ibqos_tests::sm::{SmFabric, SmInvocation};

/// Every port of two-switch.net: S1's enhanced port 0 and its 8 ports, S2's 8, the CAs' 6.
const PORTS: usize = 23;

/// How long each PerfMgr has to read every port: two sweeps a second apart, and slack.
const READ_WITHIN: Duration = Duration::from_secs(30);

/// What ibsim counts for every MAD: 72 dwords.
const MAD_DWORDS: u64 = 72;

/// The columns of a machine-readable row: 7 of the port, 13 error and 8 data counters.
const ERRORS: std::ops::Range<usize> = 7..20;
const XMIT_DATA: usize = 20;
const RCV_DATA: usize = 21;
const XMIT_PKTS: usize = 22;
const RCV_PKTS: usize = 23;
const CAST_PKTS: std::ops::Range<usize> = 24..28;

/// A machine-readable dump: its header lines, and its rows by (name, GUID, port).
struct MachineDump {
    headers: Vec<String>,
    rows: BTreeMap<(String, String, String), Vec<String>>,
}

fn read_dump(path: &Path) -> MachineDump {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut headers = Vec::new();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|line| !line.is_empty()) {
        if line.starts_with("Name\t") {
            headers.push(line.to_string());
            continue;
        }
        let fields: Vec<String> = line.split('\t').map(str::to_string).collect();
        assert_eq!(fields.len(), 28, "{line:?} in {}", path.display());
        let key = (fields[0].clone(), fields[1].clone(), fields[3].clone());
        rows.insert(key, fields);
    }
    MachineDump { headers, rows }
}

/// Asks for a dump with `ask` until `path` holds a row for every port.
fn dump_when_read(path: &Path, mut ask: impl FnMut()) -> MachineDump {
    let deadline = Instant::now() + READ_WITHIN;
    loop {
        ask();
        thread::sleep(Duration::from_millis(300));
        let dump = read_dump(path);
        if dump.rows.len() == PORTS {
            return dump;
        }
        assert!(
            Instant::now() < deadline,
            "{} rows in {} after {READ_WITHIN:?}",
            dump.rows.len(),
            path.display()
        );
    }
}

fn number(fields: &[String], column: usize) -> u64 {
    fields[column].parse().unwrap()
}

#[test]
fn ibqos_perfmgr_reads_the_ports_opensms_reads_with_the_same_counters() {
    let tools = SimTools::require();
    let (sim, dir) = fresh_ibsim(&tools, "two-switch.net", "perfmgr-oracle").unwrap();
    let options = "perfmgr TRUE\nperfmgr_sweep_time_s 1\n";

    let opensm_dir = dir.path().join("opensm");
    std::fs::create_dir_all(&opensm_dir).unwrap();
    let opensm_dump = opensm_dir.join("counters.log");
    let conf = format!("{options}event_db_dump_file {}\n", opensm_dump.display());
    let mut opensm =
        OpenSmDaemon::start_with_console(&tools, &sim, "H1", &conf, &opensm_dir).unwrap();
    let theirs = dump_when_read(&opensm_dump, || {
        opensm.console("perfmgr dump_counters mach").unwrap()
    });
    opensm.kill().unwrap();

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
    let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
    let ours = dump_when_read(&ibqos_dump, || {
        // Before the socket is up the request fails; the next try asks again.
        let _ = Command::new(&ibqos)
            .args(["ctl", "--socket"])
            .arg(&socket)
            .args(["perf", "dump", "mach"])
            .output();
    });
    daemon.stop(Duration::from_secs(10)).unwrap();

    assert_eq!(
        ours.headers, theirs.headers,
        "one header per node, the same"
    );
    assert_eq!(
        ours.rows.keys().collect::<Vec<_>>(),
        theirs.rows.keys().collect::<Vec<_>>(),
        "the same ports of the same nodes"
    );
    for (key, mine) in &ours.rows {
        let other = &theirs.rows[key];
        assert_eq!(mine[2], other[2], "{key:?}: Active");
        assert_eq!(mine[ERRORS], other[ERRORS], "{key:?}: error counters");
        assert_eq!(
            mine[CAST_PKTS], other[CAST_PKTS],
            "{key:?}: unicast, multicast"
        );
        for fields in [mine, other] {
            let what = format!("{key:?}: {fields:?}");
            assert_eq!(
                number(fields, XMIT_DATA),
                MAD_DWORDS * number(fields, XMIT_PKTS),
                "{what}"
            );
            assert_eq!(
                number(fields, RCV_DATA),
                MAD_DWORDS * number(fields, RCV_PKTS),
                "{what}"
            );
        }
    }
}
