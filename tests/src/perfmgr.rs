//! The PerfMgr's machine-readable dump (`perfmgr dump_counters mach`, `ibqos ctl perf dump
//! mach`) as the oracle tests read it: tab-separated rows, a header line before each node.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

/// The columns of a row: 7 of the port (name, GUID, active, port, three dates), then 13 error
/// and 8 data counters.
pub const DATES: Range<usize> = 4..7;
pub const ERRORS: Range<usize> = 7..20;
pub const XMIT_DATA: usize = 20;
pub const RCV_DATA: usize = 21;
pub const XMIT_PKTS: usize = 22;
pub const RCV_PKTS: usize = 23;
pub const CAST_PKTS: Range<usize> = 24..28;
const COLUMNS: usize = 28;

/// Every port of two-switch.net a PerfMgr reads: S1's enhanced port 0 and its 8 ports, S2's 8,
/// the CAs' 6.
pub const TWO_SWITCH_PORTS: usize = 23;

/// What ibsim counts for every MAD that crosses a link: 72 dwords.
pub const MAD_DWORDS: u64 = 72;

/// A machine-readable dump: its header lines, and its rows by (name, GUID, port).
#[derive(Debug)]
pub struct MachineDump {
    pub headers: Vec<String>,
    pub rows: BTreeMap<(String, String, String), Vec<String>>,
}

/// The dump at `path`; empty when there is none yet.
pub fn read_dump(path: &Path) -> MachineDump {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut headers = Vec::new();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|line| !line.is_empty()) {
        if line.starts_with("Name\t") {
            headers.push(line.to_string());
            continue;
        }
        let fields: Vec<String> = line.split('\t').map(str::to_string).collect();
        assert_eq!(fields.len(), COLUMNS, "{line:?} in {}", path.display());
        let key = (fields[0].clone(), fields[1].clone(), fields[3].clone());
        rows.insert(key, fields);
    }
    MachineDump { headers, rows }
}

/// The counter in `column` of a row.
pub fn number(fields: &[String], column: usize) -> u64 {
    fields[column].parse().unwrap()
}

/// Asks for a dump with `ask` until `path` holds a row for each of `ports` and `done` holds;
/// fails after `within`.
pub fn dump_when(
    path: &Path,
    ports: usize,
    within: Duration,
    ask: &mut impl FnMut(),
    done: impl Fn(&MachineDump) -> bool,
) -> MachineDump {
    let deadline = Instant::now() + within;
    loop {
        ask();
        thread::sleep(Duration::from_millis(300));
        let dump = read_dump(path);
        if dump.rows.len() == ports && done(&dump) {
            return dump;
        }
        assert!(
            Instant::now() < deadline,
            "{} rows in {} after {within:?}",
            dump.rows.len(),
            path.display()
        );
    }
}

/// Two PerfMgrs' dumps name the same ports of the same nodes under the same headers, and
/// agree on whether each node is active and on every error counter.
pub fn assert_same_ports_and_errors(ours: &MachineDump, theirs: &MachineDump) {
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
    }
}

/// A row's data counters as ibsim moves them, only with MADs: 72 dwords a packet.
pub fn assert_mad_sized(fields: &[String]) {
    assert_eq!(
        number(fields, XMIT_DATA),
        MAD_DWORDS * number(fields, XMIT_PKTS),
        "{fields:?}"
    );
    assert_eq!(
        number(fields, RCV_DATA),
        MAD_DWORDS * number(fields, RCV_PKTS),
        "{fields:?}"
    );
}
