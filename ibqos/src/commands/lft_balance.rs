//! `ibqos lft-balance`: how evenly the switches' forwarding tables spread routes over their
//! ports (the figures are `ibqos_fabric::routing::lft_load`'s), for a net file routed as the SM
//! would, a live fabric, or a dump. This page finds the routes and prints.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::{Context, Result, bail};
use ibqos_fabric::Topology;
use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::routing::{LftLoad, Routes, SwitchLoad, Toward, lft_load};
use ibqos_qos::VlCount;
use ibqos_sim::held_forwarding;
use serde::Serialize;

use crate::cli::LftBalanceArgs;
use crate::commands::{
    Outcome, dump, fabric, load_config_routed, route_offline, routing_engines_of,
};

/// The report as `--json` prints it.
#[derive(Debug, Serialize)]
struct Report<'a> {
    /// The net file, the live fabric or the dump the routes come from.
    source: String,
    /// The engine that routed a net file; `None` for LFTs a fabric held.
    routed_by: Option<&'static str>,
    /// How many switches are not balanced.
    unbalanced: usize,
    #[serde(flatten)]
    load: &'a LftLoad,
}

/// A fabric's forwarding: the topology with its LIDs, the switches' LFTs, and where they come
/// from.
struct Forwarding {
    topo: Topology,
    routes: Routes,
    /// The net file, the live fabric or the dump.
    source: String,
    /// The engine that routed a net file; `None` for LFTs a fabric held.
    routed_by: Option<&'static str>,
}

pub fn run(args: &LftBalanceArgs) -> Result<Outcome> {
    let Forwarding {
        topo,
        routes,
        source,
        routed_by,
    } = forwarding(args)?;
    let load = lft_load(&topo, &routes).with_context(|| format!("cannot read {source}"))?;
    if load.end_lids == 0 {
        eprintln!("note: no CA or router port of {source} holds a LID: no SM has configured it");
    }
    let report = Report {
        source,
        routed_by,
        unbalanced: load.unbalanced().count(),
        load: &load,
    };
    let text = if args.json {
        let mut json = serde_json::to_string(&report)?;
        json.push('\n');
        json
    } else {
        describe(&report, args.all, args.ports)
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Outcome::Success)
}

/// The forwarding the arguments name.
fn forwarding(args: &LftBalanceArgs) -> Result<Forwarding> {
    if let Some(spec) = &args.fabric {
        let consequence = "no report, since it would lack what they read";
        let surveyed = dump::survey(spec, &args.survey, consequence)?;
        let mut topo = surveyed
            .topology()
            .with_context(|| format!("{spec} as discovered is no consistent fabric"))?;
        let routes = held_routes(&mut topo, &surveyed.dump())?;
        return Ok(Forwarding {
            topo,
            routes,
            source: spec.to_string(),
            routed_by: None,
        });
    }
    let Some(topology) = &args.topology else {
        bail!("give --topology or --fabric");
    };
    let mut topo = fabric::load(topology)?;
    if let Some(path) = &args.dump {
        let held = dump::read_with_lfts(path)?;
        let routes = held_routes(&mut topo, &held)
            .with_context(|| format!("{} does not fit {topology}", path.display()))?;
        return Ok(Forwarding {
            topo,
            routes,
            source: path.display().to_string(),
            routed_by: None,
        });
    }
    let routing_engine = args.routing_engine.as_deref();
    let going_on = "routing as OpenSM would make of it";
    let loaded = args
        .config()
        .map(|config| load_config_routed(config, routing_engine, going_on))
        .transpose()?;
    let engines = routing_engines_of(loaded.as_ref(), routing_engine);
    let vls = loaded
        .and_then(|loaded| loaded.settings.links.oper_vls_cap())
        .unwrap_or(VlCount::Fifteen);
    let routed = route_offline(&mut topo, &engines, vls, topology)?;
    Ok(Forwarding {
        topo,
        routes: routed.routes,
        source: topology.clone(),
        routed_by: Some(routed.engine.name()),
    })
}

/// The LFTs `held` holds, with its LIDs given to `topo`'s end ports.
fn held_routes(topo: &mut Topology, held: &FabricDump) -> Result<Routes> {
    Ok(Routes::from_tables(held_forwarding(topo, held)?))
}

/// The report as text: a headline, the unbalanced switches (or all) as a table, with `ports`
/// each listed switch's ports, and the worst switch.
fn describe(report: &Report<'_>, all: bool, ports: bool) -> String {
    let load = report.load;
    let mut out = String::new();
    let routed = report
        .routed_by
        .map_or_else(String::new, |engine| format!(" (routed by {engine})"));
    let _ = writeln!(
        out,
        "LFT balance of {}{routed}: {} switches, {} CA and router LIDs",
        report.source,
        load.switches.len(),
        load.end_lids
    );
    let listed: Vec<&SwitchLoad> = if all {
        load.switches.iter().collect()
    } else {
        load.unbalanced().collect()
    };
    if !listed.is_empty() {
        out.push('\n');
        out.push_str(&switch_table(&listed));
    }
    if ports {
        for switch in &listed {
            out.push('\n');
            out.push_str(&port_table(switch));
        }
    }
    out.push('\n');
    let total = load.switches.len();
    let rule = "the ports toward other switches differ by";
    if report.unbalanced == 0 {
        let _ = writeln!(
            out,
            "All {total} switches are balanced: on each, {rule} at most one route."
        );
    } else {
        let _ = writeln!(
            out,
            "{} of {total} switches are unbalanced: on each, {rule} more than one route.",
            report.unbalanced
        );
    }
    if let Some((switch, worst)) = load
        .worst()
        .and_then(|s| Some((s, s.worst.as_ref()?)))
        .filter(|(s, _)| !s.balanced)
    {
        let _ = writeln!(
            out,
            "Worst: {}, port {} carries {} of its {} routes ({}), spread {}.",
            switch.name,
            worst.port,
            worst.routes,
            switch.routes,
            percent(worst.share),
            switch.spread
        );
    }
    let unrouted: u32 = load.switches.iter().map(|s| s.unrouted).sum();
    if unrouted > 0 {
        let _ = writeln!(
            out,
            "{unrouted} CA and router LIDs have no route on some switch (column `unrouted`)."
        );
    }
    out
}

/// One row per switch, columns aligned.
fn switch_table(switches: &[&SwitchLoad]) -> String {
    let header = [
        "switch",
        "guid",
        "ports",
        "routes",
        "min",
        "max",
        "spread",
        "worst port",
        "share",
        "unrouted",
    ]
    .map(String::from);
    let rows = switches.iter().map(|s| {
        let counted = s.ports.iter().filter(|p| p.toward != Toward::EndNode);
        let (worst, share) = s.worst.as_ref().map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |w| (w.port.to_string(), percent(w.share)),
        );
        [
            s.name.clone(),
            s.guid.clone(),
            counted.count().to_string(),
            s.routes.to_string(),
            s.min.to_string(),
            s.max.to_string(),
            s.spread.to_string(),
            worst,
            share,
            s.unrouted.to_string(),
        ]
    });
    let (left, right) = (Align::Left, Align::Right);
    let align = [
        left, left, right, right, right, right, right, right, right, right,
    ];
    table(align, std::iter::once(header).chain(rows).collect())
}

/// One switch's ports: where each leads and the routes it carries.
fn port_table(switch: &SwitchLoad) -> String {
    let header = ["port", "toward", "routes", ""].map(String::from);
    let rows = switch.ports.iter().map(|p| {
        let (toward, note) = match p.toward {
            Toward::Switch => ("switch", ""),
            Toward::EndNode => ("end node", "not counted"),
            Toward::Unlinked => ("nothing", "unlinked, yet routed to"),
        };
        [
            p.port.to_string(),
            toward.to_owned(),
            p.routes.to_string(),
            note.to_owned(),
        ]
    });
    let align = [Align::Right, Align::Left, Align::Right, Align::Left];
    let rows = table(align, std::iter::once(header).chain(rows).collect());
    let mut out = format!("{} {}\n", switch.name, switch.guid);
    for row in rows.lines() {
        let _ = writeln!(out, "  {row}");
    }
    out
}

/// How a column's cells line up.
#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

/// Rows as text, each column aligned as `align` says, two spaces apart, without trailing
/// blanks.
fn table<const N: usize>(align: [Align; N], rows: Vec<[String; N]>) -> String {
    let mut widths = [0; N];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let cells = row
            .iter()
            .zip(widths)
            .zip(align)
            .map(|((cell, width), align)| match align {
                Align::Left => format!("{cell:<width$}"),
                Align::Right => format!("{cell:>width$}"),
            });
        out.push_str(cells.collect::<Vec<_>>().join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}
