//! Reading what a subnet manager programmed, with smpquery (infiniband-diags) as an ibsim client.
//!
//! The readers take a [`Target`]: a LID (LID-routed SMPs, which need the SM to have assigned
//! LIDs, built the forwarding tables and brought the ports to Active), or a directed route
//! (which needs nothing but physically up links). Parsers are separate functions so they can be
//! tested on captured output (tests/testdata/smpquery-*.txt).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::process::{command_line, run_bounded};
use crate::{DrPath, Error, Ibsim, Result, SimTools};

/// One query takes about 15 ms; the limit only bounds a hang (an ibsim that went away).
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// ibsim's power-on SL-to-VL table on every port: SL n to VL n, SL15 to VL7 (`01 23 .. cd e7`).
pub const IBSIM_DEFAULT_SL2VL: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7];

/// Where an SMP goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// LID-routed.
    Lid(u16),
    /// Directed route from the querying client's port.
    Dr(DrPath),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Lid(lid) => write!(f, "LID {lid}"),
            Target::Dr(path) => write!(f, "DR path {path}"),
        }
    }
}

/// One row of an SL-to-VL mapping table: the VL of each SL for packets entering at `in_port`
/// and leaving at `out_port` (both 0 on a CA port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sl2VlRow {
    pub in_port: u8,
    pub out_port: u8,
    pub vls: [u8; 16],
}

/// One VL arbitration table entry. Both `Debug` and `Display` print it as opensm.conf writes it,
/// `vl:weight`, so a mismatch of two tables reads `[0:10, 1:3, ..]`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VlArbEntry {
    pub vl: u8,
    pub weight: u8,
}

impl fmt::Display for VlArbEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.vl, self.weight)
    }
}

impl fmt::Debug for VlArbEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A port's two VL arbitration tables, as many entries each as the port's caps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlArbTables {
    pub low_cap: u8,
    pub high_cap: u8,
    pub low: Vec<VlArbEntry>,
    pub high: Vec<VlArbEntry>,
}

/// The PortInfo fields QoS tests look at, typed, plus every field as smpquery printed it.
/// VL fields are counts of data VLs (8 for smpquery's "VL0-7"), not PortInfo's encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub lid: u16,
    pub local_port: u8,
    /// "Active", "Init", "Down", ...
    pub link_state: String,
    /// "LinkUp", "Polling", ...
    pub phys_link_state: String,
    pub vl_cap: u8,
    pub oper_vls: u8,
    pub vl_high_limit: u8,
    pub vlarb_high_cap: u8,
    pub vlarb_low_cap: u8,
    pub hoq_life: u8,
    pub vl_stall_count: u8,
    /// Every `Name:....value` line, keyed by name.
    pub fields: BTreeMap<String, String>,
}

/// smpquery attached to an ibsim at one node.
#[derive(Debug)]
pub struct SmpQuery<'a> {
    sim: &'a Ibsim,
    program: PathBuf,
    node: String,
    /// The M_Key every query carries (smpquery's default is 0).
    m_key: Option<u64>,
}

impl<'a> SmpQuery<'a> {
    /// Queries are sent from `node`'s port (port 1 of a CA, port 0 of a switch); directed routes
    /// start there.
    pub fn new(tools: &SimTools, sim: &'a Ibsim, node: &str) -> SmpQuery<'a> {
        SmpQuery {
            sim,
            program: tools.smpquery.path.clone(),
            node: node.to_owned(),
            m_key: None,
        }
    }

    /// The same queries carrying `m_key` (`--m_key`), for a fabric an SM protected with it.
    /// They also show the keys (`--show_keys`): smpquery prints PortInfo.M_Key only then.
    pub fn with_m_key(self, m_key: u64) -> SmpQuery<'a> {
        SmpQuery {
            m_key: Some(m_key),
            ..self
        }
    }

    /// `smpquery sl2vl <target> [out_port]`. For a switch, `out_port` selects the output port and
    /// smpquery returns one row per input port (0..=NumPorts); for a CA, give `None`.
    pub fn sl2vl(&self, target: &Target, out_port: Option<u8>) -> Result<Vec<Sl2VlRow>> {
        let text = self.run("sl2vl", target, out_port)?;
        parse_sl2vl(&text).map_err(|e| e.context(format!("sl2vl of {target}")))
    }

    /// `smpquery vlarb <target> [port]`. `None` when smpquery reports the port has no VL
    /// arbitration tables (port 0 of a switch without enhanced port 0).
    pub fn vlarb(&self, target: &Target, port: Option<u8>) -> Result<Option<VlArbTables>> {
        let text = self.run("vlarb", target, port)?;
        parse_vlarb(&text).map_err(|e| e.context(format!("vlarb of {target}")))
    }

    /// `smpquery portinfo <target> [port]`.
    pub fn portinfo(&self, target: &Target, port: Option<u8>) -> Result<PortInfo> {
        let text = self.run("portinfo", target, port)?;
        parse_portinfo(&text).map_err(|e| e.context(format!("portinfo of {target}")))
    }

    /// `smpquery <op> <target> [port]`, every field as smpquery prints it ([`dotted_fields`]).
    pub fn fields(
        &self,
        op: &str,
        target: &Target,
        port: Option<u8>,
    ) -> Result<BTreeMap<String, String>> {
        Ok(dotted_fields(&self.run(op, target, port)?))
    }

    /// `smpquery pkeys <target> [port]`: every entry of the port's P_Key table.
    pub fn pkeys(&self, target: &Target, port: Option<u8>) -> Result<Vec<u16>> {
        let text = self.run("pkeys", target, port)?;
        parse_pkeys(&text).map_err(|e| e.context(format!("pkeys of {target}")))
    }

    /// The NodeGUID of the node at `target` (`smpquery nodeinfo`): how `ibqos sm` names nodes
    /// in its JSON output.
    pub fn node_guid(&self, target: &Target) -> Result<u64> {
        let text = self.run("nodeinfo", target, None)?;
        parse_node_guid(&text).map_err(|e| e.context(format!("nodeinfo of {target}")))
    }

    fn run(&self, op: &str, target: &Target, port: Option<u8>) -> Result<String> {
        let mut cmd = self.sim.client(&self.program, &self.node);
        if let Some(m_key) = self.m_key {
            cmd.args(["--show_keys", "--m_key", &format!("{m_key:#x}")]);
        }
        match target {
            Target::Lid(lid) => cmd.args([op.to_owned(), lid.to_string()]),
            Target::Dr(path) => cmd.args(["-D".to_owned(), op.to_owned(), path.to_string()]),
        };
        if let Some(port) = port {
            cmd.arg(port.to_string());
        }
        let line = command_line(&cmd);
        Ok(run_bounded(&mut cmd, QUERY_TIMEOUT)?.success(&line)?.stdout)
    }
}

/// Parses the `Guid:.....0x0002c90000001000` (NodeGUID) line of `smpquery nodeinfo` output.
pub fn parse_node_guid(text: &str) -> Result<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Guid:"))
        .map(|v| v.trim_start_matches('.').trim())
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| Error::new(format!("no 'Guid:' line in:\n{text}")))
}

/// Every `Name:....value` line of smpquery's attribute output, keyed by name (comment lines and
/// the tab-indented lines under a field, such as capability names, are left out).
pub fn dotted_fields(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('\t'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim_start_matches('.').trim().to_owned()))
        .collect()
}

/// Parses `smpquery sl2vl` output:
///
/// ```text
/// # SL2VL table: DR path slid 65535; dlid 65535; 0,1
/// #                 SL: | 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|
/// ports: in  0, out  3: | 0| 1| 2| 3| 4| 5| 6| 7| 0| 1| 2| 3| 4| 5| 6| 7|
/// ```
pub fn parse_sl2vl(text: &str) -> Result<Vec<Sl2VlRow>> {
    let rows = text
        .lines()
        .filter(|l| l.starts_with("ports:"))
        .map(parse_sl2vl_row)
        .collect::<Result<Vec<_>>>()?;
    if rows.is_empty() {
        return Err(Error::new(format!("no SL2VL rows in:\n{text}")));
    }
    Ok(rows)
}

fn parse_sl2vl_row(line: &str) -> Result<Sl2VlRow> {
    let bad = |why: &str| Error::new(format!("{why} in SL2VL row {line:?}"));
    // "ports: in  0, out  3: | 0| 1|...|15|"
    let rest = line
        .strip_prefix("ports:")
        .ok_or_else(|| bad("no 'ports:'"))?;
    let (ports, cells) = rest.split_once(": |").ok_or_else(|| bad("no ': |'"))?;
    let (in_part, out_part) = ports.split_once(',').ok_or_else(|| bad("no ','"))?;
    let number = |s: &str, key: &str| -> Result<u8> {
        s.trim()
            .strip_prefix(key)
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| bad(&format!("no '{key} N'")))
    };
    let in_port = number(in_part, "in")?;
    let out_port = number(out_part, "out")?;
    let vls: Vec<u8> = cells
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| c.parse().map_err(|_| bad(&format!("bad VL {c:?}"))))
        .collect::<Result<_>>()?;
    let vls: [u8; 16] = vls
        .try_into()
        .map_err(|v: Vec<u8>| bad(&format!("{} VLs, not 16", v.len())))?;
    Ok(Sl2VlRow {
        in_port,
        out_port,
        vls,
    })
}

/// Parses `smpquery vlarb` output:
///
/// ```text
/// # VLArbitration tables: DR path slid 65535; dlid 65535; 0,1 port 3 LowCap 8 HighCap 8
/// # Low priority VL Arbitration Table:
/// VL    : |0x0 |0x1 |0x2 |0x3 |0x4 |0x5 |0x6 |0x7 |
/// WEIGHT: |0x0 |0x4 |0x4 |0x4 |0x4 |0x4 |0x4 |0x4 |
/// # High priority VL Arbitration Table:
/// VL    : |0x0 |0x1 |0x2 |0x3 |0x4 |0x5 |0x6 |0x7 |
/// WEIGHT: |0x4 |0x0 |0x0 |0x0 |0x0 |0x0 |0x0 |0x0 |
/// ```
///
/// or, for port 0 of a base-port-0 switch, `# No VLArbitration tables (BSP0): ...` (`None`).
/// smpquery prints a table only if its cap is non-zero, and splits more than 8 entries into
/// several VL/WEIGHT row pairs; both are handled.
pub fn parse_vlarb(text: &str) -> Result<Option<VlArbTables>> {
    let bad = |why: String| Error::new(format!("{why} in VLArb output:\n{text}"));
    if text.starts_with("# No VLArbitration tables") {
        return Ok(None);
    }
    let header = text
        .lines()
        .find(|l| l.starts_with("# VLArbitration tables:"))
        .ok_or_else(|| bad("no '# VLArbitration tables:' header".into()))?;
    let cap = |key: &str| -> Result<u8> {
        let mut words = header.split_whitespace();
        words
            .find(|w| *w == key)
            .and_then(|_| words.next())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(format!("no '{key} N' in the header")))
    };
    let (low_cap, high_cap) = (cap("LowCap")?, cap("HighCap")?);
    let mut tables: [Vec<VlArbEntry>; 2] = [Vec::new(), Vec::new()];
    let mut current: Option<usize> = None;
    let mut pending_vls: Option<Vec<u8>> = None;
    for line in text.lines() {
        if line.starts_with("# Low priority") {
            current = Some(0);
        } else if line.starts_with("# High priority") {
            current = Some(1);
        } else if let Some(cells) = line.strip_prefix("VL    :") {
            pending_vls = Some(hex_cells(cells).map_err(bad)?);
        } else if let Some(cells) = line.strip_prefix("WEIGHT:") {
            let table = current.ok_or_else(|| bad("WEIGHT row before a table title".into()))?;
            let vls = pending_vls
                .take()
                .ok_or_else(|| bad("WEIGHT row without a VL row".into()))?;
            let weights = hex_cells(cells).map_err(bad)?;
            if vls.len() != weights.len() {
                return Err(bad("VL and WEIGHT rows of different lengths".into()));
            }
            tables[table].extend(
                vls.into_iter()
                    .zip(weights)
                    .map(|(vl, weight)| VlArbEntry { vl, weight }),
            );
        }
    }
    let [low, high] = tables;
    if low.len() != usize::from(low_cap) || high.len() != usize::from(high_cap) {
        return Err(bad(format!(
            "{} low and {} high entries for LowCap {low_cap} HighCap {high_cap}",
            low.len(),
            high.len()
        )));
    }
    Ok(Some(VlArbTables {
        low_cap,
        high_cap,
        low,
        high,
    }))
}

/// `|0x0 |0x1 |0x20|` to numbers.
fn hex_cells(cells: &str) -> std::result::Result<Vec<u8>, String> {
    cells
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| {
            c.strip_prefix("0x")
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad cell {c:?}"))
        })
        .collect()
}

/// Parses `smpquery portinfo` output: a `# Port info: ...` header, then one `Name:....value`
/// line per field; capability names follow CapMask on tab-indented lines (ignored).
///
/// ```text
/// # Port info: DR path slid 65535; dlid 65535; 0,1 port 3
/// Lid:.............................0
/// VLCap:...........................VL0-7
/// HoqLife:.........................18
/// OperVLs:.........................VL0-3
/// ```
pub fn parse_portinfo(text: &str) -> Result<PortInfo> {
    let fields = dotted_fields(text);
    let field = |key: &str| -> Result<&str> {
        fields
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| Error::new(format!("no {key} in PortInfo output:\n{text}")))
    };
    let number = |key: &str| -> Result<u64> {
        let v = field(key)?;
        let n = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        n.map_err(|_| Error::new(format!("PortInfo {key} is not a number: {v:?}")))
    };
    let small = |key: &str| -> Result<u8> {
        let n = number(key)?;
        u8::try_from(n).map_err(|_| Error::new(format!("PortInfo {key} out of range: {n}")))
    };
    let vls = |key: &str| -> Result<u8> {
        let v = field(key)?;
        vl_count(v).ok_or_else(|| Error::new(format!("PortInfo {key} is not a VL range: {v:?}")))
    };
    Ok(PortInfo {
        lid: u16::try_from(number("Lid")?).map_err(|_| Error::new("PortInfo Lid out of range"))?,
        local_port: small("LocalPort")?,
        link_state: field("LinkState")?.to_owned(),
        phys_link_state: field("PhysLinkState")?.to_owned(),
        vl_cap: vls("VLCap")?,
        oper_vls: vls("OperVLs")?,
        vl_high_limit: small("VLHighLimit")?,
        vlarb_high_cap: small("VLArbHighCap")?,
        vlarb_low_cap: small("VLArbLowCap")?,
        hoq_life: small("HoqLife")?,
        vl_stall_count: small("VLStallCount")?,
        fields,
    })
}

/// smpquery's VL range (`VL0`, `VL0-1`, `VL0-3`, `VL0-7`, `VL0-14`) as a count of data VLs.
fn vl_count(range: &str) -> Option<u8> {
    match range {
        "VL0" => Some(1),
        _ => range
            .strip_prefix("VL0-")?
            .parse::<u8>()
            .ok()
            .map(|last| last + 1),
    }
}

/// Parses `smpquery pkeys` output: rows of eight entries after the index of the first, then
/// the capacity line, which must agree with the count.
///
/// ```text
///    0: 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
/// 8 pkeys capacity for this port
/// ```
pub fn parse_pkeys(text: &str) -> Result<Vec<u16>> {
    let mut entries = Vec::new();
    let mut capacity = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(count) = line.strip_suffix(" pkeys capacity for this port") {
            capacity = Some(
                count
                    .parse::<usize>()
                    .map_err(|e| Error::new(format!("capacity line {line:?}: {e}")))?,
            );
            continue;
        }
        let (index, values) = line
            .split_once(':')
            .ok_or_else(|| Error::new(format!("not a P_Key row: {line:?}")))?;
        if index.trim().parse::<usize>().ok() != Some(entries.len()) {
            return Err(Error::new(format!("row {line:?} out of order")));
        }
        for value in values.split_whitespace() {
            let hex = value
                .strip_prefix("0x")
                .ok_or_else(|| Error::new(format!("not a P_Key: {value:?}")))?;
            entries.push(
                u16::from_str_radix(hex, 16)
                    .map_err(|e| Error::new(format!("P_Key {value:?}: {e}")))?,
            );
        }
    }
    match capacity {
        Some(count) if count <= entries.len() => {
            entries.truncate(count);
            Ok(entries)
        }
        Some(count) => Err(Error::new(format!(
            "{count} P_Keys of capacity but {} listed",
            entries.len()
        ))),
        None => Err(Error::new("no capacity line")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkeys_rows_and_capacity() {
        let text = "   0: 0xffff 0x8001 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000\n\
                    8 pkeys capacity for this port\n";
        assert_eq!(
            parse_pkeys(text).unwrap(),
            [0xffff, 0x8001, 0, 0, 0, 0, 0, 0]
        );
        assert!(parse_pkeys("   0: 0xffff\n").is_err(), "no capacity line");
        assert!(parse_pkeys("   8: 0xffff\n1 pkeys capacity for this port").is_err());
        assert!(parse_pkeys("   0: 0xffff\n9 pkeys capacity for this port").is_err());
    }

    #[test]
    fn switch_sl2vl_has_a_row_per_input_port() {
        let rows = parse_sl2vl(include_str!("../testdata/smpquery-sl2vl-switch.txt")).unwrap();
        assert_eq!(rows.len(), 9);
        for (i, row) in rows.iter().enumerate() {
            assert_eq!((row.in_port, row.out_port), (i as u8, 3));
            assert_eq!(row.vls, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]);
        }
    }

    #[test]
    fn ca_sl2vl_is_one_row() {
        let rows = parse_sl2vl(include_str!("../testdata/smpquery-sl2vl-ca.txt")).unwrap();
        let expected = Sl2VlRow {
            in_port: 0,
            out_port: 0,
            vls: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3],
        };
        assert_eq!(rows, [expected]);
    }

    #[test]
    fn sl2vl_row_with_wrong_width_is_an_error() {
        let text = "ports: in  0, out  0: | 0| 1| 2|\n";
        assert!(parse_sl2vl(text).is_err());
        assert!(parse_sl2vl("").is_err());
    }

    #[test]
    fn vlarb_tables() {
        let t = parse_vlarb(include_str!("../testdata/smpquery-vlarb.txt"))
            .unwrap()
            .unwrap();
        let e = |vl, weight| VlArbEntry { vl, weight };
        assert_eq!((t.low_cap, t.high_cap), (8, 8));
        let low: Vec<_> = (0..8)
            .map(|vl| e(vl, if vl == 0 { 0 } else { 4 }))
            .collect();
        let high: Vec<_> = (0..8)
            .map(|vl| e(vl, if vl == 0 { 4 } else { 0 }))
            .collect();
        assert_eq!(t.low, low);
        assert_eq!(t.high, high);
    }

    #[test]
    fn vlarb_on_base_port_0_is_none() {
        let t = parse_vlarb(include_str!("../testdata/smpquery-vlarb-bsp0.txt")).unwrap();
        assert_eq!(t, None);
    }

    #[test]
    fn vlarb_with_a_second_block() {
        // smpquery prints one VL/WEIGHT row pair per 32-entry block, hex digits in upper case.
        fn row<S: AsRef<str>>(cells: &[S]) -> String {
            cells
                .iter()
                .map(|c| format!("{:<4}|", c.as_ref()))
                .collect()
        }
        let vls: Vec<String> = (0..32).map(|i| format!("0x{:X}", i % 15)).collect();
        let weights: Vec<String> = (0..32).map(|i| format!("0x{:X}", i + 1)).collect();
        let text = format!(
            "# VLArbitration tables: Lid 2 port 1 LowCap 34 HighCap 0\n\
             # Low priority VL Arbitration Table:\n\
             VL    : |{}\nWEIGHT: |{}\nVL    : |{}\nWEIGHT: |{}\n",
            row(&vls),
            row(&weights),
            row(&["0xE", "0x0"]),
            row(&["0xFF", "0x10"]),
        );
        let t = parse_vlarb(&text).unwrap().unwrap();
        assert_eq!(t.low.len(), 34);
        assert_eq!(t.low[31], VlArbEntry { vl: 1, weight: 32 });
        assert_eq!(
            t.low[32],
            VlArbEntry {
                vl: 14,
                weight: 255
            }
        );
        assert!(t.high.is_empty());
    }

    #[test]
    fn switch_portinfo() {
        let p = parse_portinfo(include_str!("../testdata/smpquery-portinfo-switch.txt")).unwrap();
        assert_eq!(p.lid, 0);
        assert_eq!(p.local_port, 2);
        assert_eq!(
            (p.link_state.as_str(), p.phys_link_state.as_str()),
            ("Active", "LinkUp")
        );
        assert_eq!((p.vl_cap, p.oper_vls), (8, 4));
        assert_eq!((p.vlarb_low_cap, p.vlarb_high_cap), (8, 8));
        assert_eq!((p.hoq_life, p.vl_stall_count, p.vl_high_limit), (18, 7, 0));
        assert_eq!(p.fields["CapMask"], "0x0");
    }

    #[test]
    fn ca_portinfo() {
        let p = parse_portinfo(include_str!("../testdata/smpquery-portinfo-ca.txt")).unwrap();
        assert_eq!(p.lid, 8);
        assert_eq!(p.local_port, 2);
        assert_eq!((p.vl_cap, p.oper_vls), (8, 4));
        assert_eq!(p.hoq_life, 0);
        assert_eq!(p.fields["GidPrefix"], "0xfe80000000000000");
    }

    #[test]
    fn vl_ranges() {
        assert_eq!(vl_count("VL0"), Some(1));
        assert_eq!(vl_count("VL0-1"), Some(2));
        assert_eq!(vl_count("VL0-14"), Some(15));
        assert_eq!(vl_count("Reserved"), None);
    }
}
