//! The database as OpenSM prints it, byte for byte (`osm_perfmgr_db.c`): the human-readable
//! dump of `dump_counters` and the console's `print_counters` and `print_errors`, and the
//! tab-separated one of `dump_counters mach`. Also the console's `dump_redir` table
//! (`osm_console.c`).
//!
//! Dates are the caller's: OpenSM prints `ctime` (local time), which needs the time zone, so
//! every function takes the formatter. [`ctime_utc`] is `ctime` with the zone UTC.

use std::fmt::{self, Write};

use ibqos_text::cnum;

use crate::counters::{DataCounter, ErrorCounter, UnixTime};
use crate::db::{Database, DbNode, DbPort};

/// A date as `ctime` prints it, without its newline: "Sat Nov 28 19:26:55 2026".
pub type DateFormat<'a> = &'a dyn Fn(UnixTime) -> String;

/// Which of the two dump formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpFormat {
    /// The default: a block per port.
    Human,
    /// `mach`: tab-separated, with a header line before every node.
    Machine,
}

/// `perfmgr_db_dump`: every node, in the database's order.
pub fn dump(
    db: &Database,
    format: DumpFormat,
    date: DateFormat,
    out: &mut impl Write,
) -> fmt::Result {
    for node in db.nodes() {
        match format {
            DumpFormat::Human => write_node_human(node, None, false, date, out)?,
            DumpFormat::Machine => write_node_machine(node, date, out)?,
        }
    }
    Ok(())
}

/// The console's `print_counters [name|guid][:port]` (`errors_only` false) and
/// `print_errors [name|guid]` (true). `selector` is what follows the command: a node by its
/// GUID when the whole of it reads as a C number, else by its name, with a port after the first
/// colon; `None` prints every node.
pub fn print(
    db: &Database,
    selector: Option<&str>,
    errors_only: bool,
    date: DateFormat,
    out: &mut impl Write,
) -> fmt::Result {
    let Some(selector) = selector else {
        for node in db.nodes() {
            write_node_human(node, None, errors_only, date, out)?;
        }
        return Ok(());
    };
    let (name, port) = match selector.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (selector, None),
    };
    let wanted = NodeSelector::parse(name);
    match db
        .nodes()
        .find(|node| wanted.matches(node.guid, &node.name))
    {
        Some(node) => write_node_human(node, port, errors_only, date, out),
        None => wanted.not_found(out),
    }
}

/// The node a console command names: by its GUID when the whole of the text reads as a C
/// number, else by its name (the first node with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSelector<'a> {
    Guid(u64),
    Name(&'a str),
}

impl<'a> NodeSelector<'a> {
    pub fn parse(text: &'a str) -> NodeSelector<'a> {
        let number = cnum::scan(text.as_bytes(), 0);
        if number.end == text.len() {
            NodeSelector::Guid(number.strtoul())
        } else {
            NodeSelector::Name(text)
        }
    }

    pub fn matches(self, guid: u64, name: &str) -> bool {
        match self {
            NodeSelector::Guid(wanted) => guid == wanted,
            NodeSelector::Name(wanted) => name == wanted,
        }
    }

    /// The console's line for a node it does not know.
    pub fn not_found(self, out: &mut impl Write) -> fmt::Result {
        match self {
            NodeSelector::Guid(guid) => writeln!(out, "Node {guid:#x} not found..."),
            NodeSelector::Name(name) => writeln!(out, "Node {name} not found..."),
        }
    }
}

/// A monitored node with the ports whose PMA redirected the PerfMgr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectedNode {
    pub guid: u64,
    pub name: String,
    pub enhanced_port0: bool,
    /// In port order; none when no PMA of the node redirected.
    pub ports: Vec<RedirectedPort>,
}

/// Where a port's PMA sent the PerfMgr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedirectedPort {
    pub port: u8,
    pub valid: bool,
    /// The LID the port is asked at without the redirection.
    pub original_lid: u16,
    pub lid: u16,
    pub p_key: u16,
    pub qp: u32,
    pub p_key_index: u16,
}

/// The console's `dump_redir [name|guid]`: a block per node with redirected ports, under the
/// table's title; `redirect` is `perfmgr_redir`, whose absence is said first.
pub fn redirections(
    redirect: bool,
    nodes: &[RedirectedNode],
    selector: Option<&str>,
    out: &mut impl Write,
) -> fmt::Result {
    if !redirect {
        writeln!(out, "Perfmgr redirection not enabled")?;
    }
    write!(out, "\nRedirection Table\n-----------------\n")?;
    let Some(selector) = selector else {
        return nodes
            .iter()
            .try_for_each(|node| write_redirected(node, out));
    };
    let wanted = NodeSelector::parse(selector);
    match nodes
        .iter()
        .find(|node| wanted.matches(node.guid, &node.name))
    {
        Some(node) => write_redirected(node, out),
        None => wanted.not_found(out),
    }
}

/// `dump_redir_entry`.
fn write_redirected(node: &RedirectedNode, out: &mut impl Write) -> fmt::Result {
    if node.ports.is_empty() {
        return Ok(());
    }
    write!(
        out,
        "   Node GUID       ESP0   Name\n   ---------       ----   ----\n   {:#x} {}      {}\n",
        node.guid,
        u8::from(node.enhanced_port0),
        node.name
    )?;
    write!(
        out,
        "\n   Port Valid  LIDs     PKey  QP    PKey Index\n   ---- -----  ----     ----  --    ----------\n"
    )?;
    for port in &node.ports {
        writeln!(
            out,
            "   {}    {}      {}->{}  {:#x} {:#x}   {}",
            port.port,
            u8::from(port.valid),
            port.original_lid,
            port.lid,
            port.p_key,
            port.qp,
            port.p_key_index
        )?;
    }
    writeln!(out)
}

/// The ports of `node` to print: all, or the one `port` names when it is one of them (else a
/// warning and all, as `dump_node_hr`).
fn port_range(
    node: &DbNode,
    port: Option<&str>,
    out: &mut impl Write,
) -> Result<(usize, usize), fmt::Error> {
    let all = (node.first_port(), node.ports.len());
    let Some(text) = port else {
        return Ok(all);
    };
    let number = cnum::scan(text.as_bytes(), 0);
    // OpenSM keeps strtoul's result in an int.
    let wanted = number.strtoul() as i32;
    let in_range = usize::try_from(wanted)
        .ok()
        .filter(|p| (all.0..all.1).contains(p));
    match in_range {
        Some(p) if number.end == text.len() => Ok((p, p + 1)),
        _ => {
            writeln!(out, "Warning: \"{text}\" is not a valid port")?;
            Ok(all)
        }
    }
}

fn active(node: &DbNode) -> &'static str {
    if node.active { "TRUE" } else { "FALSE" }
}

/// `dump_node_hr`.
fn write_node_human(
    node: &DbNode,
    port: Option<&str>,
    errors_only: bool,
    date: DateFormat,
    out: &mut impl Write,
) -> fmt::Result {
    let (first, end) = port_range(node, port, out)?;
    for (number, port) in node.ports.iter().enumerate().take(end).skip(first) {
        if !port.valid {
            continue;
        }
        let errors = &port.error_total;
        if errors_only && errors.counts.iter().all(|&n| n == 0) {
            continue;
        }
        writeln!(
            out,
            "\"{}\" {:#x} active {} port {number}",
            node.name,
            node.guid,
            active(node)
        )?;
        writeln!(out, "     {:<21}: {}", "Last Reset", date(port.last_reset))?;
        writeln!(
            out,
            "     {:<21}: {}",
            "Last Error Update",
            date(errors.time)
        )?;
        for counter in ErrorCounter::ALL {
            let value = errors.get(counter);
            if !errors_only || value != 0 {
                writeln!(out, "     {:<21}: {value}", counter.hr_name())?;
            }
        }
        if errors_only {
            continue;
        }
        write_data_human(port, date, out)?;
    }
    Ok(())
}

fn write_data_human(port: &DbPort, date: DateFormat, out: &mut impl Write) -> fmt::Result {
    let data = &port.data_total;
    writeln!(out, "     {:<21}: {}", "Last Data Update", date(data.time))?;
    for counter in DataCounter::ALL {
        let value = data.get(counter);
        writeln!(
            out,
            "     {:<21}: {value}{}",
            counter.name(),
            human_size(value, counter.is_data())
        )?;
    }
    Ok(())
}

/// `dump_hr_dc`: the value in 1024-based units, data counters times 4 and in bytes, computed in
/// single precision as OpenSM does.
fn human_size(value: u64, data: bool) -> String {
    let mut unit = 0;
    let mut div: u64 = 1;
    let mut rest = value / 1024;
    while rest != 0 {
        unit += 1;
        rest /= 1024;
        div *= 1024;
    }
    let mut scaled = value as f32;
    if data {
        scaled *= 4.0;
        if scaled / div as f32 > 1024.0 {
            unit += 1;
            div *= 1024;
        }
    }
    scaled /= div as f32;
    let unit = ["", "K", "M", "G", "T", "P", "E"].get(unit).unwrap_or(&"");
    let bytes = if data { "B" } else { "" };
    format!(" ({:5.3}{unit}{bytes})", f64::from(scaled))
}

/// `dump_node_mr`: the header, then a line per valid port.
fn write_node_machine(node: &DbNode, date: DateFormat, out: &mut impl Write) -> fmt::Result {
    write!(
        out,
        "\nName\tGUID\tActive\tPort\tLast Reset\tLast Error Update\tLast Data Update"
    )?;
    let errors = ErrorCounter::ALL.iter().map(|c| c.name());
    for name in errors.chain(DataCounter::ALL.iter().map(|c| c.name())) {
        write!(out, "\t{name}")?;
    }
    writeln!(out)?;
    for (number, port) in node.ports.iter().enumerate().skip(node.first_port()) {
        if !port.valid {
            continue;
        }
        write!(
            out,
            "{}\t{:#x}\t{}\t{number}\t{}\t{}\t{}",
            node.name,
            node.guid,
            active(node),
            date(port.last_reset),
            date(port.error_total.time),
            date(port.data_total.time)
        )?;
        for value in port
            .error_total
            .counts
            .iter()
            .chain(&port.data_total.counts)
        {
            write!(out, "\t{value}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// `ctime` without its newline, in UTC: "Thu Jan  1 00:00:00 1970".
pub fn ctime_utc(time: UnixTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = time.div_euclid(86_400);
    let seconds = time.rem_euclid(86_400);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    // Days to a civil date (Howard Hinnant's algorithm, proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{weekday} {} {day:>2} {:02}:{:02}:{:02} {year}",
        MONTHS[(month - 1) as usize],
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::Reading;

    /// 2026-11-28 19:26:55 UTC, the date of the reference dump.
    const T0: UnixTime = 1_795_894_015;

    #[test]
    fn ctime_utc_is_ctimes_layout() {
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime_utc(T0), "Sat Nov 28 19:26:55 2026");
        assert_eq!(ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ctime_utc(-1), "Wed Dec 31 23:59:59 1969");
    }

    #[test]
    fn sizes_are_in_1024_units_with_data_in_bytes() {
        assert_eq!(human_size(40_824, true), " (159.469KB)");
        assert_eq!(human_size(0, true), " (0.000B)");
        assert_eq!(human_size(0, false), " (0.000)");
        assert_eq!(human_size(255, true), " (1020.000B)");
        assert_eq!(human_size(257, true), " (1.004KB)");
        assert_eq!(human_size(1088, false), " (1.062K)");
        assert_eq!(human_size(u64::MAX, false), " (16.000E)");
        assert_eq!(human_size(u64::MAX, true), " (64.000EB)");
    }

    /// Two nodes: a switch with port 1 read (errors and data) and port 2 never read, and a CA
    /// no longer monitored whose port 1 has errors.
    fn database() -> Database {
        let mut db = Database::default();
        db.create_entry(0x20_0000, false, 3, "S1", T0);
        db.create_entry(0x10_0002, false, 2, "H1/U1", T0);
        db.mark_active(0x20_0000, true);
        let mut errors = Reading::zero(T0 + 12);
        errors.counts[ErrorCounter::LinkDowned as usize] = 2;
        db.add_errors(0x10_0002, 1, &errors);
        db.add_errors(0x20_0000, 1, &Reading::zero(T0 + 12));
        let mut data = Reading::zero(T0 + 12);
        data.counts = [40_824, 40_896, 567, 568, 0, 0, 0, 0];
        db.add_data(0x20_0000, 1, &data, false);
        db
    }

    fn human(db: &Database) -> String {
        let mut out = String::new();
        dump(db, DumpFormat::Human, &ctime_utc, &mut out).unwrap();
        out
    }

    /// S1 port 1's block, every counter at 0 but the data ones.
    const S1_PORT_1: &str = "\
\"S1\" 0x200000 active TRUE port 1
     Last Reset           : Sat Nov 28 19:26:55 2026
     Last Error Update    : Sat Nov 28 19:27:07 2026
     symbol_err_cnt       : 0
     link_err_recover     : 0
     link_downed          : 0
     rcv_err              : 0
     rcv_rem_phys_err     : 0
     rcv_switch_relay_err : 0
     xmit_discards        : 0
     xmit_constraint_err  : 0
     rcv_constraint_err   : 0
     link_integrity_err   : 0
     buf_overrun_err      : 0
     vl15_dropped         : 0
     xmit_wait            : 0
     Last Data Update     : Sat Nov 28 19:27:07 2026
     xmit_data            : 40824 (159.469KB)
     rcv_data             : 40896 (159.750KB)
     xmit_pkts            : 567 (567.000)
     rcv_pkts             : 568 (568.000)
     unicast_xmit_pkts    : 0 (0.000)
     unicast_rcv_pkts     : 0 (0.000)
     multicast_xmit_pkts  : 0 (0.000)
     multicast_rcv_pkts   : 0 (0.000)
";

    #[test]
    fn the_human_dump_is_opensms() {
        let h1 = printed(Some("H1/U1"), false);
        assert_eq!(human(&database()), format!("{h1}{S1_PORT_1}"));
        // The CA: no longer monitored, one error, its data never read (dated 0, as OpenSM's
        // zeroed totals are).
        let lines: Vec<&str> = h1.lines().collect();
        assert_eq!(lines.len(), 25);
        assert_eq!(lines[0], "\"H1/U1\" 0x100002 active FALSE port 1");
        assert_eq!(lines[5], "     link_downed          : 2");
        assert_eq!(
            lines[16],
            "     Last Data Update     : Thu Jan  1 00:00:00 1970"
        );
        assert_eq!(lines[17], "     xmit_data            : 0 (0.000B)");
        assert_eq!(lines[19], "     xmit_pkts            : 0 (0.000)");
    }

    #[test]
    fn the_machine_dump_repeats_its_header_per_node() {
        let header = "\nName\tGUID\tActive\tPort\tLast Reset\tLast Error Update\t\
            Last Data Update\tsymbol_err_cnt\tlink_err_recover\tlink_downed\trcv_err\t\
            rcv_rem_phys_err\trcv_switch_relay_err\txmit_discards\txmit_constraint_err\t\
            rcv_constraint_err\tlink_int_err\tbuf_overrun_err\tvl15_dropped\txmit_wait\t\
            xmit_data\trcv_data\txmit_pkts\trcv_pkts\tunicast_xmit_pkts\tunicast_rcv_pkts\t\
            multicast_xmit_pkts\tmulticast_rcv_pkts\n";
        let reset = "Sat Nov 28 19:26:55 2026";
        let read = "Sat Nov 28 19:27:07 2026";
        let epoch = "Thu Jan  1 00:00:00 1970";
        let expected = format!(
            "{header}H1/U1\t0x100002\tFALSE\t1\t{reset}\t{read}\t{epoch}\
             \t0\t0\t2\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\n\
             {header}S1\t0x200000\tTRUE\t1\t{reset}\t{read}\t{read}\
             \t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t40824\t40896\t567\t568\t0\t0\t0\t0\n"
        );
        let mut out = String::new();
        dump(&database(), DumpFormat::Machine, &ctime_utc, &mut out).unwrap();
        assert_eq!(out, expected);
    }

    fn printed(selector: Option<&str>, errors_only: bool) -> String {
        let mut out = String::new();
        print(&database(), selector, errors_only, &ctime_utc, &mut out).unwrap();
        out
    }

    #[test]
    fn print_counters_finds_a_node_by_guid_or_name_and_a_port() {
        let s1 = printed(Some("S1"), false);
        assert!(
            s1.starts_with("\"S1\" 0x200000 active TRUE port 1\n"),
            "{s1}"
        );
        assert_eq!(printed(Some("0x200000"), false), s1);
        assert_eq!(printed(Some("2097152:1"), false), s1);
        assert_eq!(printed(Some("S1:2"), false), "", "port 2 was never read");
        assert_eq!(
            printed(Some("S1:3"), false),
            format!("Warning: \"3\" is not a valid port\n{s1}")
        );
        assert_eq!(
            printed(Some("S1:x"), false),
            format!("Warning: \"x\" is not a valid port\n{s1}")
        );
        assert_eq!(printed(Some("S9"), false), "Node S9 not found...\n");
        assert_eq!(printed(Some("0x7"), false), "Node 0x7 not found...\n");
        assert_eq!(printed(None, false), human(&database()));
    }

    #[test]
    fn print_errors_shows_only_ports_and_counters_with_errors() {
        let expected = "\
\"H1/U1\" 0x100002 active FALSE port 1
     Last Reset           : Sat Nov 28 19:26:55 2026
     Last Error Update    : Sat Nov 28 19:27:07 2026
     link_downed          : 2
";
        assert_eq!(printed(None, true), expected);
        assert_eq!(printed(Some("S1"), true), "");
    }
}
