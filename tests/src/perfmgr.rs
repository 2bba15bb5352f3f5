//! The PerfMgr's machine-readable dump (`perfmgr dump_counters mach`, `ibqos ctl perf dump
//! mach`) as the oracle tests read it: tab-separated rows, a header line before each node.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

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
