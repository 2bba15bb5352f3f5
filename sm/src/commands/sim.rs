//! `ibqos sim`: traffic over a fabric with the QoS tables a configuration programs.
//!
//! The simulator (`ibqos_qos::sim`) sees only a neutral [`Network`]; this module builds it the
//! way the SM would program the fabric: LIDs in endport order (as a simple LID manager
//! assigns them) unless the net file gives them, minhop forwarding tables, and per port the
//! planner's tables for its class, capabilities and OperVLs (the lower VLCap of the two ends,
//! capped by `max_op_vls`). Link speed and width come from the traffic file, not the net file:
//! net files carry ibsim's defaults (4x SDR), not the hardware's.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ibqos_fabric::generate::assign_lids;
use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::minhop;
use ibqos_fabric::{NodeId, NodeKind as FabricKind, PortRef, Topology};
use ibqos_qos::sim::traffic::{self, HostDirectory, HostRef, Traffic};
use ibqos_qos::sim::{
    Flow, Link, Network, Node, NodeKind, PortAddr, PortArbitration, Report, SimOptions, Simulation,
};
use ibqos_qos::{
    PortCaps, PortClass, QosConfig, Sl2VlTable, SlToVlModifier, SwitchSl2VlView, VlCount, plan,
    switch_sl2vl,
};
use plotters::prelude::*;

use crate::cli::SimArgs;
use crate::commands::{Outcome, load_config};

/// Steps a run is cut into, to drive the progress bar.
const PROGRESS_STEPS: u64 = 200;
/// A run shorter than this shows no progress bar.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);
/// Intervals of the bandwidth-share chart: few enough that each holds many packets (a 4 KB
/// packet is about 1 us at QDR), so the shares are not quantized into noise.
const PLOT_INTERVALS: usize = 30;
/// Rows of the people's tables before "... more".
const TABLE_ROWS: usize = 20;

/// Everything a run needs, built from the three input files.
#[derive(Debug)]
pub struct Setup {
    pub network: Network,
    pub flows: Vec<Flow>,
    pub options: SimOptions,
}

pub fn run(args: &SimArgs) -> Result<Outcome> {
    let config = args.config().expect("clap requires a configuration");
    let setup = setup(
        &args.topology,
        config,
        &args.traffic,
        args.seed,
        args.plot.is_some(),
    )?;
    let report = simulate(&setup)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        write!(out, "{}", describe(&report))?;
    }
    if let Some(dir) = &args.plot {
        let written = write_plots(dir, &report)?;
        for path in written {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(Outcome::Success)
}

/// Reads the topology, configuration and traffic files and builds the network and flows.
pub fn setup(
    topology: &Path,
    config: &Path,
    traffic_file: &Path,
    seed: u64,
    timeline: bool,
) -> Result<Setup> {
    let loaded = load_config(config)?;
    if loaded.has_errors() {
        eprintln!(
            "note: {} has errors (see `ibqos check`); simulating what OpenSM would make of it",
            config.display()
        );
    }
    if !loaded.settings.qos.enabled {
        eprintln!(
            "note: `qos` is not TRUE in {}: OpenSM would program none of these tables; \
             simulating what `qos TRUE` would program",
            config.display()
        );
    }
    let bytes = std::fs::read(traffic_file)
        .with_context(|| format!("cannot read {}", traffic_file.display()))?;
    let traffic = traffic::parse(&traffic_file.display().to_string(), &bytes)?;
    let mut topo = parse_net_file(topology)?.topology;
    let max_op_vls = loaded.settings.links.oper_vls_cap();
    let network = build_network(&mut topo, &loaded.settings.qos, max_op_vls, &traffic)?;
    let flows = traffic.flows(&Hosts(&topo), seed)?;
    Ok(Setup {
        network,
        flows,
        options: SimOptions {
            duration_ps: traffic.duration_ps,
            seed,
            arbiter: traffic.arbiter,
            timeline_intervals: if timeline { PLOT_INTERVALS } else { 0 },
        },
    })
}

/// Runs a set-up simulation, with a progress bar on a terminal when it takes over a second.
pub fn simulate(setup: &Setup) -> Result<Report> {
    let mut sim = Simulation::new(&setup.network, &setup.flows, setup.options)?;
    let started = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let end = setup.options.duration_ps;
    for step in 1..=PROGRESS_STEPS {
        sim.run_until(end / PROGRESS_STEPS * step);
        if bar.is_none() && started.elapsed() > PROGRESS_AFTER && std::io::stderr().is_terminal() {
            bar = Some(indicatif::ProgressBar::new(PROGRESS_STEPS));
        }
        if let Some(bar) = &bar {
            bar.set_position(step);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(sim.finish())
}

/// The hosts of a topology, by name or NodeDescription.
struct Hosts<'t>(&'t Topology);

impl Hosts<'_> {
    fn host(&self, id: NodeId) -> Result<HostRef, String> {
        let node = self.0.node(id).ok_or("not in the topology")?;
        if node.is_switch() {
            return Err(format!(
                "`{}` is a switch: traffic runs between hosts",
                node.name
            ));
        }
        let (port, lid) = node
            .existing_ports()
            .find(|(_, p)| p.peer.is_some() && p.lid != 0)
            .map(|(n, p)| (n, p.lid))
            .ok_or_else(|| format!("host `{}` has no linked port", node.name))?;
        Ok(HostRef {
            name: node.name.clone(),
            port: PortAddr {
                node: id.index(),
                port,
            },
            lid,
        })
    }
}

impl HostDirectory for Hosts<'_> {
    fn find(&self, name: &str) -> Result<HostRef, String> {
        if let Some(id) = self.0.node_by_name(name) {
            return self.host(id);
        }
        let mut by_description = self.0.nodes().filter(|(_, n)| n.description == name);
        match (by_description.next(), by_description.next()) {
            (Some((id, _)), None) => self.host(id),
            (Some(_), Some(_)) => Err("several nodes have this NodeDescription".into()),
            (None, _) => Err("no node has this name or NodeDescription".into()),
        }
    }

    fn all(&self) -> Vec<HostRef> {
        self.0
            .nodes()
            .filter_map(|(id, _)| self.host(id).ok())
            .collect()
    }
}

/// OperVLs of a port: the lower VLCap of the two ends, capped by `max_op_vls`.
fn oper_vls(topo: &Topology, port: PortRef, max_op_vls: Option<VlCount>) -> Option<VlCount> {
    let here = topo.port(port)?;
    let peer = topo.port(here.peer?)?;
    let vls = here.link.vl_cap.min(peer.link.vl_cap);
    Some(max_op_vls.map_or(vls, |cap| vls.min(cap)))
}

/// The simulator's view of `topo` with the tables `qos` programs and minhop routes.
pub fn build_network(
    topo: &mut Topology,
    qos: &QosConfig,
    max_op_vls: Option<VlCount>,
    traffic: &Traffic,
) -> Result<Network> {
    let unassigned = topo.endports().any(|ep| {
        topo.port(ep)
            .is_some_and(|p| p.lid == 0 && (p.peer.is_some() || ep.port == 0))
    });
    if unassigned {
        assign_lids(topo, 0).map_err(|e| anyhow!("cannot assign LIDs: {e}"))?;
    }
    let routes = minhop(topo)?;
    let mut nodes = Vec::with_capacity(topo.len());
    for (id, fnode) in topo.nodes() {
        let kind = if fnode.is_switch() {
            NodeKind::Switch
        } else {
            NodeKind::Host
        };
        let mut node = Node::new(
            fnode.name.clone(),
            kind,
            fnode.num_ports(),
            PortArbitration::default(),
            Sl2VlTable::ALL_VL0,
        );
        let mut up = vec![None; usize::from(fnode.num_ports())];
        for (p, port) in fnode.existing_ports() {
            node.lids[usize::from(p)] = port.lid;
            let Some(oper) = oper_vls(topo, PortRef::new(id, p), max_op_vls) else {
                continue;
            };
            let class = match fnode.kind {
                FabricKind::Switch => PortClass::Swe,
                FabricKind::Ca => PortClass::Ca,
                FabricKind::Router => PortClass::Rtr,
            };
            let caps = PortCaps {
                vl_cap: port.link.vl_cap,
                oper_vls: oper,
                vlarb_low_cap: port.link.vlarb_low_cap,
                vlarb_high_cap: port.link.vlarb_high_cap,
                sl_mapping_supported: port.link.sl_mapping_supported,
            };
            let planned = plan(qos, class, &caps)
                .with_context(|| format!("planning {}", topo.describe(PortRef::new(id, p))))?;
            node.arbitration[usize::from(p)] = PortArbitration {
                high: planned.vlarb_high(),
                low: planned.vlarb_low(),
                high_limit: planned.vl_high_limit,
            };
            if fnode.is_switch() {
                up[usize::from(p) - 1] = Some(oper);
            } else if let Some(table) = planned.sl2vl {
                node.set_sl2vl(0, p, table);
            }
        }
        if fnode.is_switch() {
            let port0 = fnode.port(0);
            let view = SwitchSl2VlView {
                enhanced_port0: fnode.enhanced_port0,
                optimized_supported: false,
                port0_oper_vls: port0.map_or(VlCount::One, |p| p.link.vl_cap),
                ports: up,
            };
            let supported = port0.is_some_and(|p| p.link.sl_mapping_supported);
            let all = 0..=fnode.num_ports();
            for set in switch_sl2vl(qos, &view, supported, false) {
                let pairs: Vec<(u8, u8)> = match set.scope {
                    SlToVlModifier::Pair { input, output } => vec![(input, output)],
                    SlToVlModifier::AllOutputs { input } => {
                        all.clone().map(|o| (input, o)).collect()
                    }
                    SlToVlModifier::AllInputs { output } => {
                        all.clone().map(|i| (i, output)).collect()
                    }
                    SlToVlModifier::All => all
                        .clone()
                        .flat_map(|i| all.clone().map(move |o| (i, o)))
                        .collect(),
                };
                for (input, output) in pairs {
                    node.set_sl2vl(input, output, set.table);
                }
            }
            node.lft = routes.lft(id).map(<[u8]>::to_vec).unwrap_or_default();
        }
        nodes.push(node);
    }
    let links = topo
        .links()
        .map(|(a, b)| Link {
            a: PortAddr {
                node: a.node.index(),
                port: a.port,
            },
            b: PortAddr {
                node: b.node.index(),
                port: b.port,
            },
            params: traffic.link,
        })
        .collect();
    Ok(Network { nodes, links })
}

/// The report as a person reads it: flows, SLs, and the busiest links per VL.
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
    let _ = writeln!(
        out,
        "{:<28} {:>3} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>8}",
        "flow", "SL", "sent", "delivered", "Gb/s", "p50 ns", "p99 ns", "max ns", "dropped"
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
            f.latency_ns.p50,
            f.latency_ns.p99,
            f.latency_ns.max,
            f.dropped_packets
        );
    }
    more(&mut out, report.flows.len(), "flows");
    let _ = writeln!(
        out,
        "\n{:<4} {:>6} {:>12} {:>9} {:>9} {:>9} {:>8}",
        "SL", "flows", "bytes", "Gb/s", "p50 ns", "p99 ns", "dropped"
    );
    for s in &report.sls {
        let _ = writeln!(
            out,
            "{:<4} {:>6} {:>12} {:>9.3} {:>9} {:>9} {:>8}",
            s.sl,
            s.flows,
            s.delivered_bytes,
            s.throughput_gbps,
            s.latency_ns.p50,
            s.latency_ns.p99,
            s.dropped_packets
        );
    }
    let mut busiest: Vec<_> = report.links.iter().filter(|l| !l.vls.is_empty()).collect();
    busiest.sort_by_key(|l| std::cmp::Reverse(l.bytes));
    let _ = writeln!(
        out,
        "\n{:<30} {:>3} {:>9} {:>7} {:>7} {:>11} {:>10} {:>10} {:>8}",
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

fn more(out: &mut String, total: usize, what: &str) {
    if total > TABLE_ROWS {
        let _ = writeln!(
            out,
            "... {} more {what} (all of them with --json)",
            total - TABLE_ROWS
        );
    }
}

/// Writes `share_per_vl.svg` and `latency_cdf.svg` into `dir`; returns their paths.
pub fn write_plots(dir: &Path, report: &Report) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    if let Some(timeline) = &report.timeline {
        let path = dir.join("share_per_vl.svg");
        plot_shares(&path, report, timeline).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        written.push(path);
    }
    if report.sl_latency.iter().any(|(_, h)| h.count() > 0) {
        let path = dir.join("latency_cdf.svg");
        plot_cdf(&path, report).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        written.push(path);
    }
    if written.is_empty() {
        bail!("nothing to plot: no link carried traffic");
    }
    Ok(written)
}

type PlotResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Bandwidth share per VL over time on the busiest link: each VL's bytes in an interval over
/// what the link could carry in it.
fn plot_shares(path: &Path, report: &Report, timeline: &ibqos_qos::sim::Timeline) -> PlotResult {
    let link = report
        .links
        .iter()
        .find(|l| l.from == timeline.from && l.to == timeline.to)
        .ok_or("the busiest link is missing from the report")?;
    let capacity = link.gbps * timeline.interval_ns as f64 / 8.0;
    let interval_us = timeline.interval_ns as f64 / 1e3;
    let end_us = report.duration_ns as f64 / 1e3;
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Bandwidth share per VL, {} -> {}",
                timeline.from, timeline.to
            ),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..end_us, 0f64..1.05f64)?;
    chart
        .configure_mesh()
        .x_desc("time (us)")
        .y_desc("share of link bandwidth")
        .draw()?;
    for (i, (vl, series)) in timeline.vls.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points = series
            .iter()
            .enumerate()
            .map(|(k, bytes)| ((k as f64 + 0.5) * interval_us, *bytes as f64 / capacity));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(format!("VL {vl}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Latency CDF per SL (log time axis).
fn plot_cdf(path: &Path, report: &Report) -> PlotResult {
    let max = report
        .sl_latency
        .iter()
        .flat_map(|(_, h)| h.cdf())
        .map(|(v, _)| v)
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let min = report
        .sl_latency
        .iter()
        .flat_map(|(_, h)| h.cdf())
        .map(|(v, _)| v)
        .min()
        .unwrap_or(1)
        .max(1) as f64;
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Latency CDF per SL", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((min * 0.9..max * 1.1).log_scale(), 0f64..1.02f64)?;
    chart
        .configure_mesh()
        .x_labels(20)
        .x_label_formatter(&|v| compact_ns(*v))
        .light_line_style(WHITE)
        .x_desc("latency (ns, log scale)")
        .y_desc("fraction of packets")
        .draw()?;
    for (i, (sl, histogram)) in report
        .sl_latency
        .iter()
        .filter(|(_, h)| h.count() > 0)
        .enumerate()
    {
        let color = Palette99::pick(i).to_rgba();
        // A step line: each fraction holds until the next bucket.
        let mut points = Vec::new();
        let mut last = 0.0;
        for (value, fraction) in histogram.cdf() {
            let x = (value as f64).max(min);
            points.push((x, last));
            points.push((x, fraction));
            last = fraction;
        }
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(format!("SL {sl}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// A latency axis label that stays short on a log axis: 900, 2k, 30k, 1.5M.
fn compact_ns(ns: f64) -> String {
    match ns {
        n if n >= 1e6 => format!("{}M", trim_float(n / 1e6)),
        n if n >= 1e3 => format!("{}k", trim_float(n / 1e3)),
        n => format!("{n:.0}"),
    }
}

fn trim_float(x: f64) -> String {
    let text = format!("{x:.1}");
    text.strip_suffix(".0").unwrap_or(&text).to_string()
}
