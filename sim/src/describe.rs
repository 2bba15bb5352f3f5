//! The report as a person reads it: flows, SLs, totals per VL over every link, and the busiest
//! links per VL. On Ethernet it shows priorities in place of SLs; per link, the traffic classes
//! and priorities with their pauses and drops; and every switch's pool peaks. With DCQCN it adds
//! the ECN marks per link and priority, and each flow's CNPs, cuts and rates. Each table of rates says
//! over which time they are, and a latency percentile that is a histogram bucket's upper bound
//! is marked `<=`.

use std::fmt::Write as _;

use crate::report::{Deadlock, Histogram, Report};

/// The credit loop that stopped the run: when, how many channels it froze, and its cycle.
fn describe_deadlock(out: &mut String, deadlock: &Deadlock) {
    let _ = writeln!(
        out,
        "DEADLOCK at {} us: a credit loop of {} channels stopped the run; {} channels can never \
         send again.\nNothing moved after it: the figures below are those of a frozen fabric \
         from then on.",
        deadlock.at_ns as f64 / 1e3,
        deadlock.cycle.len(),
        deadlock.stuck_channels
    );
    let _ = writeln!(
        out,
        "The cycle, in the order packets go (each waits for the next one's credits):"
    );
    for channel in &deadlock.cycle_names {
        let _ = writeln!(out, "  {channel}");
    }
    let _ = writeln!(out);
}

/// Rows of each table before "... more".
const TABLE_ROWS: usize = 20;

/// The report as tables: flows, SLs, and the busiest links per VL.
pub fn describe(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Simulated {} us (seed {}): {} events, {} packet-hops\n",
        report.duration_ns as f64 / 1e3,
        report.seed,
        report.events,
        report.packet_hops
    );
    if let Some(deadlock) = &report.deadlock {
        describe_deadlock(&mut out, deadlock);
    }
    let ethernet = report.links.iter().any(|l| l.ethernet.is_some());
    // On Ethernet a flow's class is its priority.
    let (class, classes) = if ethernet {
        ("pri", "Priorities")
    } else {
        ("SL", "SLs")
    };
    let _ = writeln!(
        out,
        "Flows: Gb/s over each flow's active time (its start to its stop, within the run)"
    );
    let _ = writeln!(
        out,
        "{:<28} {:>3} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>8}",
        "flow", class, "sent", "delivered", "Gb/s", "p50 ns", "p99 ns", "max ns", "dropped"
    );
    for f in report.flows.iter().take(TABLE_ROWS) {
        let sl = if f.management {
            "M".to_owned()
        } else {
            f.sl.to_string()
        };
        let _ = writeln!(
            out,
            "{:<28} {:>3} {:>9} {:>9} {:>8.3} {:>9} {:>9} {:>9} {:>8}",
            f.name,
            sl,
            f.sent_packets,
            f.delivered_packets,
            f.throughput_gbps,
            percentile(f.latency_ns.p50),
            percentile(f.latency_ns.p99),
            f.latency_ns.max,
            f.dropped_packets
        );
    }
    more(&mut out, report.flows.len(), "flows");
    let _ = writeln!(
        out,
        "\n{classes}: Gb/s over the whole run ({} us)",
        report.duration_ns as f64 / 1e3
    );
    let _ = writeln!(
        out,
        "{:<4} {:>6} {:>12} {:>9} {:>9} {:>9} {:>8}",
        class, "flows", "bytes", "Gb/s", "p50 ns", "p99 ns", "dropped"
    );
    for s in &report.sls {
        let _ = writeln!(
            out,
            "{:<4} {:>6} {:>12} {:>9.3} {:>9} {:>9} {:>8}",
            s.sl,
            s.flows,
            s.delivered_bytes,
            s.throughput_gbps,
            percentile(s.latency_ns.p50),
            percentile(s.latency_ns.p99),
            s.dropped_packets
        );
    }
    let _ = writeln!(
        out,
        "(<=: a latency histogram bucket's upper bound, at most 6.25% above the percentile; \
         max is exact)"
    );
    if ethernet {
        ethernet_links(&mut out, report);
        dcqcn(&mut out, report);
        return out;
    }
    vl_totals(&mut out, report);
    let mut busiest: Vec<_> = report.links.iter().filter(|l| !l.vls.is_empty()).collect();
    busiest.sort_by_key(|l| std::cmp::Reverse(l.bytes));
    let _ = writeln!(out, "\n{}", LINKS_OVER_THE_RUN);
    let _ = writeln!(
        out,
        "{:<30} {:>3} {:>9} {:>7} {:>7} {:>11} {:>10} {:>10} {:>8}",
        "link (busiest first)",
        "VL",
        "Gb/s",
        "share",
        "util",
        "blocked us",
        "buf mean",
        "buf peak",
        "dropped"
    );
    for link in busiest.iter().take(TABLE_ROWS) {
        let _ = writeln!(out, "{} -> {}", link.from, link.to);
        for v in &link.vls {
            let _ = writeln!(
                out,
                "{:<30} {:>3} {:>9.3} {:>6.1}% {:>6.1}% {:>11.3} {:>10.0} {:>10} {:>8}",
                "",
                v.vl,
                v.throughput_gbps,
                v.share * 100.0,
                v.utilization * 100.0,
                v.blocked_ns as f64 / 1e3,
                v.buffer_mean_bytes,
                v.buffer_peak_bytes,
                v.dropped_packets
            );
        }
    }
    more(&mut out, busiest.len(), "links with traffic");
    out
}

/// The busiest Ethernet link directions, per traffic class and per priority, and the switches'
/// pool peaks.
fn ethernet_links(out: &mut String, report: &Report) {
    let mut busiest: Vec<_> = report
        .links
        .iter()
        .filter_map(|l| Some((l, l.ethernet.as_ref()?)))
        .filter(|(_, e)| !e.traffic_classes.is_empty() || !e.priorities.is_empty())
        .collect();
    busiest.sort_by_key(|(l, _)| std::cmp::Reverse(l.bytes));
    let _ = writeln!(out, "\n{}", LINKS_OVER_THE_RUN);
    let _ = writeln!(
        out,
        "{:<30} {:>3} {:>9} {:>9} {:>7} {:>7}",
        "link (busiest first)", "TC", "frames", "Gb/s", "share", "util"
    );
    for (link, eth) in busiest.iter().take(TABLE_ROWS) {
        let _ = writeln!(out, "{} -> {}", link.from, link.to);
        for t in &eth.traffic_classes {
            let _ = writeln!(
                out,
                "{:<30} {:>3} {:>9} {:>9.3} {:>6.1}% {:>6.1}%",
                "",
                t.tc,
                t.frames,
                t.throughput_gbps,
                t.share * 100.0,
                t.utilization * 100.0
            );
        }
    }
    more(out, busiest.len(), "links with traffic");
    let _ = writeln!(
        out,
        "\n{:<30} {:>3} {:>9} {:>9} {:>11} {:>7} {:>7} {:>8} {:>9}",
        "link (busiest first)",
        "pri",
        "frames",
        "Gb/s",
        "paused us",
        "pause>",
        "pause<",
        "dropped",
        "headroom"
    );
    for (link, eth) in busiest.iter().take(TABLE_ROWS) {
        let _ = writeln!(out, "{} -> {}", link.from, link.to);
        for p in &eth.priorities {
            let _ = writeln!(
                out,
                "{:<30} {:>3} {:>9} {:>9.3} {:>11.3} {:>7} {:>7} {:>8} {:>9}",
                "",
                p.priority,
                p.frames,
                p.throughput_gbps,
                p.paused_ns as f64 / 1e3,
                p.pause_frames_sent,
                p.pause_frames_received,
                p.dropped_packets,
                p.headroom_peak_bytes
            );
        }
    }
    let _ = writeln!(
        out,
        "(pause> sent by the receiving port, pause< received by the sending port; dropped and \
         headroom peak at the receiving switch port)"
    );
    let _ = writeln!(out, "\n{:<30} {:>8} {:>14}", "switch", "pool", "peak bytes");
    for switch in report.switches.iter().take(TABLE_ROWS) {
        for pool in &switch.pools {
            let _ = writeln!(
                out,
                "{:<30} {:>8} {:>14}",
                switch.name, pool.pool, pool.peak_bytes
            );
        }
    }
    more(out, report.switches.len(), "switches");
}

/// ECN marks per link direction and priority, and each DCQCN flow's CNPs and rates; nothing
/// on a run without them.
fn dcqcn(out: &mut String, report: &Report) {
    let flows: Vec<_> = report
        .flows
        .iter()
        .filter_map(|f| Some((f, f.dcqcn.as_ref()?)))
        .collect();
    if flows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{:<30} {:>3} {:>9}", "ECN marks", "pri", "marked");
    let marks: Vec<_> = report
        .links
        .iter()
        .filter_map(|l| Some((l, l.ethernet.as_ref()?)))
        .flat_map(|(l, e)| e.priorities.iter().map(move |p| (l, p)))
        .filter(|(_, p)| p.ecn_marks > 0)
        .collect();
    for (link, p) in marks.iter().take(TABLE_ROWS) {
        let _ = writeln!(
            out,
            "{:<30} {:>3} {:>9}",
            format!("{} -> {}", link.from, link.to),
            p.priority,
            p.ecn_marks
        );
    }
    more(out, marks.len(), "marking link priorities");
    let _ = writeln!(
        out,
        "\n{:<28} {:>9} {:>9} {:>7} {:>10} {:>10}",
        "DCQCN flow", "CNPs sent", "CNPs rcvd", "cuts", "final Gb/s", "min Gb/s"
    );
    for (flow, d) in flows.iter().take(TABLE_ROWS) {
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>9} {:>7} {:>10.3} {:>10.3}",
            flow.name,
            d.cnps_sent,
            d.cnps_received,
            d.rate_cuts,
            d.final_rate_gbps,
            d.min_rate_gbps
        );
    }
    more(out, flows.len(), "flows");
}

/// The caption of the link tables: their rates are over the run, as the SLs' are.
const LINKS_OVER_THE_RUN: &str = "Links: Gb/s and util over the whole run";

/// A latency percentile as read from its histogram: `<=` before a bucket's upper bound, the
/// value alone when it is exact.
fn percentile(ns: u64) -> String {
    if Histogram::is_exact(ns) {
        ns.to_string()
    } else {
        format!("<={ns}")
    }
}

fn more(out: &mut String, total: usize, what: &str) {
    if total > TABLE_ROWS {
        let _ = writeln!(
            out,
            "... {} more {what} (all of them with --json)",
            total - TABLE_ROWS
        );
    }
}

/// Per VL, summed over every link direction: what a fabric of thousands of links comes to.
fn vl_totals(out: &mut String, report: &Report) {
    #[derive(Default)]
    struct Total {
        links: usize,
        packets: u64,
        bytes: u64,
        blocked_ns: u64,
        dropped: u64,
    }
    let mut totals: std::collections::BTreeMap<u8, Total> = std::collections::BTreeMap::new();
    for v in report.links.iter().flat_map(|l| &l.vls) {
        let t = totals.entry(v.vl).or_default();
        t.links += 1;
        t.packets += v.packets;
        t.bytes += v.bytes;
        t.blocked_ns += v.blocked_ns;
        t.dropped += v.dropped_packets;
    }
    let _ = writeln!(
        out,
        "\n{:<4} {:>7} {:>11} {:>14} {:>14} {:>8}",
        "VL", "links", "packets", "bytes", "blocked us", "dropped"
    );
    for (vl, t) in &totals {
        let _ = writeln!(
            out,
            "{:<4} {:>7} {:>11} {:>14} {:>14.3} {:>8}",
            vl,
            t.links,
            t.packets,
            t.bytes,
            t.blocked_ns as f64 / 1e3,
            t.dropped
        );
    }
}
