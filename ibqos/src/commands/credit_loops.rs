//! `ibqos credit-loops`: whether the routes a fabric holds (or a net file routed as the SM
//! would) can close a credit loop, by `ibqos_fabric::credit_loops`. This page gathers the
//! forwarding, the port tables and the SLs, and prints.

use std::io::Write as _;

use anyhow::{Context, Result, bail};
use ibqos_fabric::Topology;
use ibqos_fabric::credit_loops::{
    CreditLoop, CreditReport, FabricTables, Misforward, PathSls, Route, SlSet, check,
};
use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::routing::{Layering, Routes, Unlayered};
use ibqos_opensm::Loaded;
use ibqos_qos::policy::setup::SetupTables;
use ibqos_qos::{QosConfig, VlCount};
use ibqos_sim::{Forwarding, NodeVls, Tables, build_nodes};
use ibqos_sm::config::path_sl_hints;
use serde::Serialize;

use crate::cli::CreditLoopsArgs;
use crate::commands::{
    Outcome, dump, fabric, load_config_routed, route_offline, routing_engines_of, setup_on,
};

/// What the checker reads, and where it comes from.
struct Held {
    topo: Topology,
    routes: Routes,
    nodes: Vec<ibqos_sim::Node>,
    layering: std::sync::Arc<dyn Layering>,
    /// The net file, the live fabric or the dump.
    source: String,
    /// The engine that routed a net file; `None` for LFTs a fabric held.
    routed_by: Option<&'static str>,
}

pub fn run(args: &CreditLoopsArgs) -> Result<Outcome> {
    let routing_engine = args.routing_engine.as_deref();
    let going_on = "checking what OpenSM would make of it";
    let loaded = args
        .config()
        .map(|path| load_config_routed(path, routing_engine, going_on))
        .transpose()?;
    let held = held(args, loaded.as_ref())?;
    if !held
        .topo
        .endports()
        .any(|p| held.topo.port(p).is_some_and(|p| p.lid != 0))
    {
        eprintln!(
            "note: no end port of {} holds a LID: no SM has configured it, so no path exists",
            held.source
        );
    }
    let hints = loaded
        .as_ref()
        .map_or(SlSet::SL0, |l| path_sl_hints(&l.settings));
    let sls = if args.every_sl {
        PathSls::Every
    } else {
        PathSls::Routed {
            layering: &*held.layering,
            hints,
        }
    };
    let vls = NodeVls(&held.nodes);
    let tables = FabricTables {
        topology: &held.topo,
        routes: &held.routes,
        vls: &vls,
    };
    let report = check(tables, sls);
    let text = if args.json {
        let mut json = serde_json::to_string(&JsonReport::new(&held, &report, sls))?;
        json.push('\n');
        json
    } else {
        let routed = held
            .routed_by
            .map_or_else(String::new, |engine| format!(" (routed by {engine})"));
        format!(
            "Credit loops of {}{routed}, {}:\n{}",
            held.source,
            describe_sls(sls),
            report.describe(&held.topo)
        )
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(if report.is_free() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

fn describe_sls(sls: PathSls<'_>) -> String {
    match sls {
        PathSls::Every => "every SL on every path".to_owned(),
        PathSls::Routed { hints, .. } => {
            let list: Vec<String> = hints.iter().map(|sl| sl.get().to_string()).collect();
            format!(
                "paths on the SLs PathRecords give for SL {}",
                list.join(", ")
            )
        }
    }
}

/// The forwarding and tables the arguments name.
fn held(args: &CreditLoopsArgs, loaded: Option<&Loaded>) -> Result<Held> {
    if let Some(spec) = &args.fabric {
        let consequence = "no report, since it would lack what they read";
        let surveyed = dump::survey(spec, &args.survey, consequence)?;
        let topo = surveyed
            .topology()
            .with_context(|| format!("{spec} as discovered is no consistent fabric"))?;
        return from_dump(topo, &surveyed.dump(), spec.to_string());
    }
    let Some(topology) = &args.topology else {
        bail!("give --topology or --fabric");
    };
    let mut topo = fabric::load(topology)?;
    if let Some(path) = &args.dump {
        let dump = dump::read_with_lfts(path)?;
        return from_dump(topo, &dump, path.display().to_string())
            .with_context(|| format!("{} does not fit {topology}", path.display()));
    }
    let engines = routing_engines_of(loaded, args.routing_engine.as_deref());
    let max_op_vls = loaded.and_then(|loaded| loaded.settings.links.oper_vls_cap());
    let routed = route_offline(
        &mut topo,
        &engines,
        max_op_vls.unwrap_or(VlCount::Fifteen),
        topology,
    )?;
    let (default_qos, planned);
    let (qos, setup) = match (loaded, args.config()) {
        (Some(loaded), Some(config)) => {
            planned = setup_on(&topo, &loaded.settings, config)?;
            (&loaded.settings.qos, &planned)
        }
        _ => {
            default_qos = (QosConfig::default(), SetupTables::default());
            (&default_qos.0, &default_qos.1)
        }
    };
    let tables = Tables::Planned {
        qos,
        setup,
        max_op_vls,
    };
    let forwarding = Forwarding::Routed {
        routes: &routed.routes,
        layering: &routed.layering,
    };
    let nodes = build_nodes(&mut topo, tables, forwarding)
        .with_context(|| format!("cannot plan the tables of {topology}"))?
        .nodes;
    Ok(Held {
        topo,
        routes: routed.routes,
        nodes,
        layering: routed.layering,
        source: topology.clone(),
        routed_by: Some(routed.engine.name()),
    })
}

/// The LFTs, LIDs and tables `dump` holds, on `topo`.
fn from_dump(mut topo: Topology, dump: &FabricDump, source: String) -> Result<Held> {
    let nodes = build_nodes(&mut topo, Tables::Held(dump), Forwarding::Held(dump))?.nodes;
    let lfts = topo
        .switches()
        .map(|(id, _)| (id, nodes[id.index()].lft.clone()))
        .collect();
    Ok(Held {
        topo,
        routes: Routes::from_tables(lfts),
        nodes,
        layering: std::sync::Arc::new(Unlayered),
        source,
        routed_by: None,
    })
}

/// The report as `--json` prints it.
#[derive(Serialize)]
struct JsonReport {
    source: String,
    routed_by: Option<&'static str>,
    /// `every` or the SLs PathRecords are asked for.
    sls: JsonSls,
    credit_loops: usize,
    channels: usize,
    dependencies: usize,
    loops: Vec<JsonLoop>,
    misforward_count: usize,
    misforwards: Vec<JsonMisforward>,
    discard_count: usize,
    discards: Vec<JsonDiscard>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum JsonSls {
    Every,
    Requested(Vec<u8>),
}

#[derive(Serialize)]
struct JsonChannel {
    node: String,
    guid: String,
    port: u8,
    vl: u8,
}

#[derive(Serialize)]
struct JsonRoute {
    slid: u16,
    dlid: u16,
    sl: u8,
}

#[derive(Serialize)]
struct JsonLoop {
    /// The cycle; the last channel depends on the first.
    channels: Vec<JsonChannel>,
    /// Per channel, one route that holds it while asking for the next.
    closing: Vec<JsonRoute>,
    /// The channels of the strongly connected component around the cycle.
    component: usize,
}

#[derive(Serialize)]
struct JsonMisforward {
    kind: &'static str,
    node: String,
    /// The port the LFT sends to, where the problem is a port.
    port: Option<u8>,
    dlid: u16,
}

#[derive(Serialize)]
struct JsonDiscard {
    channel: JsonChannel,
    route: JsonRoute,
}

impl JsonReport {
    fn new(held: &Held, report: &CreditReport, sls: PathSls<'_>) -> JsonReport {
        let topo = &held.topo;
        let channel = |c: ibqos_fabric::credit_loops::Channel| {
            let node = topo.node(c.from.node);
            JsonChannel {
                node: node.map_or_else(String::new, |n| n.name.clone()),
                guid: FabricDump::node_key(node.map_or(0, |n| n.guid)),
                port: c.from.port,
                vl: c.vl.get(),
            }
        };
        let node_name = |id| topo.node(id).map_or_else(String::new, |n| n.name.clone());
        JsonReport {
            source: held.source.clone(),
            routed_by: held.routed_by,
            sls: match sls {
                PathSls::Every => JsonSls::Every,
                PathSls::Routed { hints, .. } => {
                    JsonSls::Requested(hints.iter().map(|sl| sl.get()).collect())
                }
            },
            credit_loops: report.loops.len(),
            channels: report.channels,
            dependencies: report.dependencies,
            loops: report
                .loops
                .iter()
                .map(|found: &CreditLoop| JsonLoop {
                    channels: found.channels.iter().map(|&c| channel(c)).collect(),
                    closing: found.closing.iter().map(|&r| json_route(r)).collect(),
                    component: found.component,
                })
                .collect(),
            misforward_count: report.misforward_count,
            misforwards: report
                .misforwards
                .iter()
                .map(|&m| {
                    let (kind, node, port, dlid) = match m {
                        Misforward::NoRoute { switch, dlid } => ("no_route", switch, None, dlid),
                        Misforward::PortZero { switch, dlid } => ("port_zero", switch, None, dlid),
                        Misforward::Loop { switch, dlid } => ("loop", switch, None, dlid),
                        Misforward::Unlinked { port, dlid } => {
                            ("unlinked", port.node, Some(port.port), dlid)
                        }
                        Misforward::WrongEnd { port, dlid } => {
                            ("wrong_end", port.node, Some(port.port), dlid)
                        }
                    };
                    JsonMisforward {
                        kind,
                        node: node_name(node),
                        port,
                        dlid,
                    }
                })
                .collect(),
            discard_count: report.discard_count,
            discards: report
                .discards
                .iter()
                .map(|d| JsonDiscard {
                    channel: channel(d.channel),
                    route: json_route(d.route),
                })
                .collect(),
        }
    }
}

fn json_route(route: Route) -> JsonRoute {
    JsonRoute {
        slid: route.slid,
        dlid: route.dlid,
        sl: route.sl.get(),
    }
}
