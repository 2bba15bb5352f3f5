//! The checker's report as text: what the command prints and what the SM logs.

use std::fmt::Write as _;

use super::{CreditLoop, CreditReport, Misforward, Route};
use crate::Topology;

pub(super) fn report(report: &CreditReport, topology: &Topology) -> String {
    let mut out = String::new();
    let size = format!(
        "{} channels between switches, {} dependencies",
        report.channels, report.dependencies
    );
    if report.loops.is_empty() {
        let _ = writeln!(out, "No credit loop: {size}.");
    } else {
        let count = report.loops.len();
        let loops = if count == 1 { "loop" } else { "loops" };
        let _ = writeln!(out, "{count} credit {loops}: {size}.");
    }
    for (number, found) in report.loops.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nLoop {}: {} channels, on a cycle among {} that depend on one another",
            number + 1,
            found.channels.len(),
            found.component
        );
        let _ = writeln!(out, "  {}", cycle(found, topology));
        for (k, channel) in found.channels.iter().enumerate() {
            let next = found.channels[(k + 1) % found.channels.len()];
            let _ = writeln!(
                out,
                "  {} waits on {}: {}",
                channel.display(topology),
                next.display(topology),
                route(found.closing[k], topology)
            );
        }
    }
    if report.misforward_count > 0 {
        let _ = writeln!(
            out,
            "\n{} forwarding entries cannot deliver{}:",
            report.misforward_count,
            shown(report.misforwards.len(), report.misforward_count)
        );
        for misforward in &report.misforwards {
            let _ = writeln!(out, "  {}", self::misforward(*misforward, topology));
        }
    }
    if report.discard_count > 0 {
        let _ = writeln!(
            out,
            "\n{} channels drop packets (VL15, or a VL above the port's OperVLs){}:",
            report.discard_count,
            shown(report.discards.len(), report.discard_count)
        );
        for discard in &report.discards {
            let _ = writeln!(
                out,
                "  {} drops {}",
                discard.channel.display(topology),
                route(discard.route, topology)
            );
        }
    }
    out
}

/// ` (the first N shown)` when not all are listed.
fn shown(listed: usize, total: usize) -> String {
    if listed < total {
        format!(" (the first {listed} shown)")
    } else {
        String::new()
    }
}

pub(super) fn cycle(found: &CreditLoop, topology: &Topology) -> String {
    let mut line: Vec<String> = found
        .channels
        .iter()
        .map(|c| c.display(topology).to_string())
        .collect();
    if let Some(first) = line.first().cloned() {
        line.push(first);
    }
    line.join(" -> ")
}

/// `LID 5 "H0_0"[1] to LID 9 "H2_0"[1] on SL0`.
pub(super) fn route(route: Route, topology: &Topology) -> String {
    let end = |lid: u16| match topology.lid_owner(lid) {
        Some(port) => format!("LID {lid} {}", topology.describe(port)),
        None => format!("LID {lid}"),
    };
    format!(
        "{} to {} on SL{}",
        end(route.slid),
        end(route.dlid),
        route.sl.get()
    )
}

fn misforward(misforward: Misforward, topology: &Topology) -> String {
    let name = |id| {
        topology
            .node(id)
            .map_or_else(|| id.to_string(), |n| format!("{:?}", n.name))
    };
    match misforward {
        Misforward::NoRoute { switch, dlid } => {
            format!("{} has no route to LID {dlid}", name(switch))
        }
        Misforward::PortZero { switch, dlid } => format!(
            "{} sends LID {dlid} to its port 0, which does not answer it",
            name(switch)
        ),
        Misforward::Unlinked { port, dlid } => format!(
            "{} sends LID {dlid} out of a port with no link",
            topology.describe(port)
        ),
        Misforward::WrongEnd { port, dlid } => format!(
            "{} sends LID {dlid} to an end port that does not answer it",
            topology.describe(port)
        ),
        Misforward::Loop { switch, dlid } => format!(
            "{} is on a forwarding loop for LID {dlid}: its packets come back to it",
            name(switch)
        ),
    }
}
