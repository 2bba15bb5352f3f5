//! The guid2lid cache: which LIDs each port had, kept across restarts so a restarted SM gives
//! every port its old address (OpenSM's `$OSM_CACHE_DIR/guid2lid`).
//!
//! Same format as OpenSM's, one port per line: `0x<port GUID> 0x<first LID> 0x<last LID>`.
//! Only the text lives here; where the file is kept is the caller's business.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ibqos_mad::Guid;

/// Reads a guid2lid file. A line that does not parse is skipped and reported in the returned
/// list of problems: a damaged cache must not stop the SM, it only costs the old addresses.
pub fn read_guid2lid(text: &str) -> (BTreeMap<u64, u16>, Vec<String>) {
    let mut lids = BTreeMap::new();
    let mut problems = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace().map(parse_hex);
        match (fields.next().flatten(), fields.next().flatten()) {
            (Some(guid), Some(lid)) if lid <= u64::from(u16::MAX) => {
                lids.insert(guid, lid as u16);
            }
            _ => problems.push(format!(
                "line {}: `{line}` is not `GUID LID LID`",
                number + 1
            )),
        }
    }
    (lids, problems)
}

/// A `0x`-prefixed hex number of at most 64 bits, as OpenSM's cache files hold them.
pub(crate) fn parse_hex(field: &str) -> Option<u64> {
    let digits = field
        .strip_prefix("0x")
        .or_else(|| field.strip_prefix("0X"))?;
    u64::from_str_radix(digits, 16).ok()
}

/// The guid2lid file for these ports: (port GUID, base LID, LMC).
pub fn write_guid2lid(ports: impl IntoIterator<Item = (u64, u16, u8)>) -> String {
    let mut out = String::new();
    for (guid, lid, lmc) in ports {
        let span = 1u16 << lmc.min(7);
        let _ = writeln!(
            out,
            "{} {lid:#06x} {:#06x}",
            Guid(guid),
            lid.saturating_add(span - 1)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_opensm_format() {
        let text = write_guid2lid([(0x0002_c900_0010_0001, 1, 1), (0x0002_c900_0000_1000, 4, 1)]);
        assert_eq!(
            text,
            "0x0002c90000100001 0x0001 0x0002\n0x0002c90000001000 0x0004 0x0005\n"
        );
        let (lids, problems) = read_guid2lid(&text);
        assert!(problems.is_empty());
        assert_eq!(lids.get(&0x0002_c900_0000_1000), Some(&4));
    }

    #[test]
    fn damaged_lines_are_skipped_and_reported() {
        let (lids, problems) = read_guid2lid("0x10 0x1 0x1\ngarbage\n0x20\n0x30 0x10000 0x1\n");
        assert_eq!(lids.len(), 1);
        assert_eq!(problems.len(), 3);
        assert!(problems[0].starts_with("line 2"));
    }
}
