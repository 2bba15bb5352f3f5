//! `ibqos sim`: traffic over a fabric with the QoS tables a configuration programs, or those a
//! fabric held (a dump). The simulator and the network it runs on are the `ibqos-sim` crate;
//! this page reads the files, shows progress and prints.

use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ibqos_fabric::netfile::parse_net_file;
use ibqos_sim::ranks::Ranks;
use ibqos_sim::{
    Forwarding, Ranked, Report, Run, Setup, SimError, Tables, WindowCost, describe,
    pfc_delay_table, plot::write_plots, sim, sweep_pfc_delay,
};

use crate::cli::SimArgs;
use crate::commands::{Outcome, dump, load_config_routed, routing_engines_of, setup_on};
use crate::diagnostics::FileError;

/// Steps a run is cut into, to drive the progress bar.
const PROGRESS_STEPS: u64 = 200;
/// A run shorter than this shows no progress bar.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);
/// Intervals of the bandwidth-share chart: few enough that each holds many packets (a 4 KB
/// packet is about 1 us at QDR), so the shares are not quantized into noise.
const PLOT_INTERVALS: usize = 30;

pub fn run(args: &SimArgs) -> Result<Outcome> {
    let tables = match (&args.tables, args.config()) {
        (Some(dump), _) => TableSource::Dump(dump),
        (None, Some(config)) => TableSource::Config(config),
        (None, None) => TableSource::None,
    };
    // The plots are the timeline's only reader.
    let timeline_intervals = if args.plot.is_some() {
        PLOT_INTERVALS
    } else {
        0
    };
    let setup = setup(
        &args.topology,
        tables,
        args.routing_engine.as_deref(),
        &args.traffic,
        args.seed,
        timeline_intervals,
    )?;
    let mut out = std::io::stdout().lock();
    if !args.sweep_pfc_delay.is_empty() {
        let rows = sweep_pfc_delay(
            &setup.network,
            &setup.flows,
            setup.options,
            &args.sweep_pfc_delay,
        )?;
        if args.json {
            writeln!(out, "{}", serde_json::to_string(&rows)?)?;
        } else {
            write!(out, "{}", pfc_delay_table(&rows))?;
        }
        return Ok(Outcome::Success);
    }
    let threads = usize::from(args.threads);
    let report = match processes()? {
        None => {
            thread_notes(&setup, threads);
            simulate(setup.run(threads)?, &setup)?
        }
        Some(ranks) => {
            if ranks.rank() == 0 {
                thread_notes(&setup, threads);
            }
            let run = Ranked::new(&setup.network, &setup.flows, setup.options, threads, ranks)?;
            match simulate(run, &setup)? {
                Some(report) => report,
                // The first process writes the report; the others have nothing to say.
                None => return Ok(Outcome::Success),
            }
        }
    };
    if let Some(deadlock) = &report.deadlock {
        eprintln!(
            "error: the fabric deadlocked at {} us: a credit loop of {} channels (the report \
             names them), {} channels stopped for good",
            deadlock.at_ns as f64 / 1e3,
            deadlock.cycle.len(),
            deadlock.stuck_channels
        );
    }
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
    Ok(match report.deadlock {
        Some(_) => Outcome::Deadlocked,
        None => Outcome::Success,
    })
}

/// Where a run's QoS tables come from.
#[derive(Debug, Clone, Copy)]
pub enum TableSource<'a> {
    /// An opensm.conf or ibqos.toml: the tables the SM would program from it.
    Config(&'a Path),
    /// A dump (`ibqos dump`, `ibqos fabric dump`): the tables a fabric held.
    Dump(&'a Path),
    /// None: a lossless-Ethernet run, which has no InfiniBand tables.
    None,
}

/// Reads the topology, the tables' source and the traffic file, and makes the run of them
/// ([`ibqos_sim::sim`]), routed by the engines `routing_engine` lists (else those of the
/// configuration, else minhop; a dump's own LFTs when it has them and no engine is named), to
/// record a timeline of `timeline_intervals` intervals (0: none).
pub fn setup(
    topology: &Path,
    tables_source: TableSource<'_>,
    routing_engine: Option<&str>,
    traffic_file: &Path,
    seed: u64,
    timeline_intervals: usize,
) -> Result<Setup> {
    let traffic = std::fs::read(traffic_file)
        .with_context(|| format!("cannot read {}", traffic_file.display()))?;
    let mut topo = parse_net_file(topology).map_err(FileError::from)?.topology;
    // ibsim loads a net file without nodes; routing would only find that no port has a LID.
    if topo.nodes().next().is_none() {
        anyhow::bail!(
            "{} describes no node: nothing to simulate",
            topology.display()
        );
    }
    // What the tables and the forwarding borrow from, kept for the run's set-up.
    let (loaded, planned, dump, engines);
    let (tables, forwarding) = match tables_source {
        TableSource::None => {
            engines = routing_engines_of(None, routing_engine);
            (None, Forwarding::Engines(&engines))
        }
        TableSource::Config(config) => {
            let going_on = "simulating what OpenSM would make of it";
            loaded = load_config_routed(config, routing_engine, going_on)?;
            if !loaded.settings.qos.enabled {
                eprintln!(
                    "note: `qos` is not TRUE in {}: OpenSM would program none of these tables; \
                     simulating what `qos TRUE` would program",
                    config.display()
                );
            }
            planned = setup_on(&topo, &loaded.settings, config)?;
            engines = routing_engines_of(Some(&loaded), routing_engine);
            let tables = Tables::Planned {
                qos: &loaded.settings.qos,
                setup: &planned,
                max_op_vls: loaded.settings.links.oper_vls_cap(),
            };
            (Some(tables), Forwarding::Engines(&engines))
        }
        TableSource::Dump(path) => {
            dump = dump::read(path)?;
            // The dump's own LFTs, unless engines are named or it has none (an older dump).
            let forwarding = if routing_engine.is_none() && dump.has_lfts() {
                Forwarding::Held(&dump)
            } else {
                engines = routing_engines_of(None, routing_engine);
                Forwarding::Engines(&engines)
            };
            (Some(Tables::Held(&dump)), forwarding)
        }
    };
    let name = traffic_file.display().to_string();
    let made = sim(
        &name,
        &traffic,
        &mut topo,
        tables,
        forwarding,
        seed,
        timeline_intervals,
    );
    let mut setup = made.map_err(|error| match error {
        SimError::Traffic(error) => FileError::from(error).into(),
        SimError::NoTables => anyhow::anyhow!(
            "an InfiniBand run needs its QoS tables: give a configuration (-F or -c) or \
             --tables (a lossless-Ethernet run, [link] flow_control = \"pfc\", needs none)"
        ),
        SimError::Build(error) => {
            let context = match tables_source {
                TableSource::Dump(path) => {
                    format!("{} does not fit {}", path.display(), topology.display())
                }
                _ => format!("cannot simulate {}", topology.display()),
            };
            anyhow::Error::new(error).context(context)
        }
    })?;
    if setup.congestion_from_agents {
        eprintln!(
            "note: the traffic file sets no [congestion_control]: the run has the congestion \
             control the dump's agents hold"
        );
    }
    for attempt in &setup.passed_over {
        eprintln!(
            "note: routing engine `{}` passed over: {}",
            attempt.name, attempt.skipped
        );
    }
    // The Ethernet reports' series over time (DCQCN rates, buffer occupancy) are in the JSON
    // report too, so an Ethernet run always records them.
    if setup.network.ethernet.is_some() {
        setup.options.timeline_intervals = PLOT_INTERVALS;
    }
    Ok(setup)
}

/// What a run on `threads` threads (in each process) should know before it starts.
fn thread_notes(setup: &Setup, threads: usize) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if threads > cores {
        // Each window's end waits for every thread: one waiting for a core holds up all.
        eprintln!(
            "note: --threads {threads} on {cores} cores: the same report, but more slowly than \
             with --threads {cores}"
        );
    }
    if threads > 1 && setup.network.ethernet.is_none() {
        eprintln!(
            "note: --threads {threads}: only a run on one thread watches for credit loops; a \
             deadlock here runs to the end unnamed"
        );
    }
}

/// Runs `run`, of `setup`, with a progress bar on a terminal when it takes over a second; its
/// report (`None` from a process of a run across several but the first, which says nothing).
pub fn simulate<R: Steps>(mut run: R, setup: &Setup) -> Result<R::Report> {
    run.time_with(Instant::now);
    let started = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let end = setup.options.duration_ps;
    for step in 1..=PROGRESS_STEPS {
        run.run_until(end / PROGRESS_STEPS * step);
        if bar.is_none() && started.elapsed() > PROGRESS_AFTER && std::io::stderr().is_terminal() {
            let style = indicatif::ProgressStyle::with_template("{bar:40} {percent:>3}% {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar = Some(indicatif::ProgressBar::new(PROGRESS_STEPS).with_style(style));
        }
        if let Some(bar) = &bar {
            bar.set_position(step);
            bar.set_message(progress_message(
                run.now_ps(),
                end,
                run.events(),
                started.elapsed(),
            ));
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(cost) = run.window_cost() {
        // One write, so that the lines of processes sharing a terminal do not interleave.
        let line = format!("note: {}\n", window_cost_line(&cost));
        std::io::stderr().write_all(line.as_bytes())?;
    }
    Ok(run.finish())
}

/// What cutting a run into windows cost a process, for the partition and window length to be
/// judged by: a line for each process.
fn window_cost_line(cost: &WindowCost) -> String {
    let share = |part: f64, whole: f64| 100.0 * part / whole.max(f64::MIN_POSITIVE);
    let spent = cost.spent;
    let total = (spent.working + spent.waiting + spent.merging).as_secs_f64();
    let (process, handed) = if cost.processes > 1 {
        let mb = |bytes: u64| bytes as f64 / 1e6;
        (
            format!("process {} of {}, ", cost.process, cost.processes),
            format!(
                "; it handed the others {:.1} MB of logs and {:.1} MB of crossings",
                mb(cost.handed.log_bytes),
                mb(cost.handed.crossing_bytes)
            ),
        )
    } else {
        (String::new(), String::new())
    };
    format!(
        "{process}{} thread{}: {} windows of {:.1} ns; {:.1} % of its {} events crossed to \
         another partition; its threads spent {:.1} % of their time waiting at the windows' \
         ends and {:.1} % merging{handed}",
        cost.partitions,
        if cost.partitions == 1 { "" } else { "s" },
        cost.windows,
        cost.window_ps as f64 / 1e3,
        share(cost.crossings as f64, cost.events as f64),
        cost.events,
        share(spent.waiting.as_secs_f64(), total),
        share(spent.merging.as_secs_f64(), total),
    )
}

/// A run [`simulate`] takes in steps: on this process alone, or across processes.
pub trait Steps {
    type Report;
    fn run_until(&mut self, until: u64);
    fn now_ps(&self) -> u64;
    /// The events this process handled.
    fn events(&self) -> u64;
    /// Times where a split run's threads spend their time, on `clock`.
    fn time_with(&mut self, clock: fn() -> Instant);
    /// What cutting the run into windows cost this process, if it is cut.
    fn window_cost(&self) -> Option<WindowCost>;
    fn finish(self) -> Self::Report;
}

impl Steps for Run<'_> {
    type Report = Report;
    fn run_until(&mut self, until: u64) {
        Run::run_until(self, until);
    }
    fn now_ps(&self) -> u64 {
        Run::now_ps(self)
    }
    fn events(&self) -> u64 {
        Run::events(self)
    }
    fn time_with(&mut self, clock: fn() -> Instant) {
        Run::time_with(self, clock);
    }
    fn window_cost(&self) -> Option<WindowCost> {
        Run::window_cost(self)
    }
    fn finish(self) -> Report {
        Run::finish(self)
    }
}

impl Steps for Ranked<'_> {
    type Report = Option<Report>;
    fn run_until(&mut self, until: u64) {
        Ranked::run_until(self, until);
    }
    fn now_ps(&self) -> u64 {
        Ranked::now_ps(self)
    }
    fn events(&self) -> u64 {
        Ranked::events(self)
    }
    fn time_with(&mut self, clock: fn() -> Instant) {
        Ranked::time_with(self, clock);
    }
    fn window_cost(&self) -> Option<WindowCost> {
        Some(Ranked::window_cost(self))
    }
    fn finish(self) -> Option<Report> {
        Ranked::finish(self)
    }
}

/// How many processes an MPI launcher (`mpirun`, `mpiexec`) started this one among, from the
/// variables it sets: MPICH's and Intel MPI's Hydra (`PMI_SIZE`), Open MPI's.
fn launched_among() -> Option<usize> {
    ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.parse().ok())
}

/// The processes of a run across several, when an MPI launcher started more than one.
#[cfg(feature = "mpi")]
fn processes() -> Result<Option<Box<dyn Ranks>>> {
    Ok(match launched_among() {
        Some(n) if n > 1 => Some(Box::new(ibqos_sim_mpi::MpiRanks::init()?)),
        _ => None,
    })
}

/// The processes of a run across several: none, as this build has no MPI, which it says when
/// an MPI launcher started more than one (each would run the whole simulation and print it).
#[cfg(not(feature = "mpi"))]
fn processes() -> Result<Option<Box<dyn Ranks>>> {
    match launched_among() {
        Some(n) if n > 1 => anyhow::bail!(
            "started as one of {n} MPI processes, but this ibqos was built without MPI: build \
             it with `cargo build --release -p ibqos --features mpi` (it needs an MPI library \
             and libclang), or run it without mpirun"
        ),
        _ => Ok(None),
    }
}

/// What the progress bar says beside the bar: simulated time against the run's, and the
/// events handled per second of wall time.
fn progress_message(now_ps: u64, end_ps: u64, events: u64, elapsed: Duration) -> String {
    let rate = events as f64 / elapsed.as_secs_f64().max(1e-9);
    format!(
        "{:.1} of {:.1} us simulated, {events} events, {:.1} M events/s",
        now_ps as f64 / 1e6,
        end_ps as f64 / 1e6,
        rate / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_message_says_simulated_time_and_event_rate() {
        assert_eq!(
            progress_message(
                250_000_000,
                1_000_000_000,
                3_000_000,
                Duration::from_secs(2)
            ),
            "250.0 of 1000.0 us simulated, 3000000 events, 1.5 M events/s"
        );
    }
}
