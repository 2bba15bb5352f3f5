//! `ibqos fabric`: emulated fabrics served over ibsim's socket protocol, and generated fabrics
//! written as net files.

use std::io::Write as _;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use ibqos_emu::serve::{Server, Switchboard};
use ibqos_emu::{
    CounterPresets, Emulator, FaultSchedule, Faults, Models, SAMPLE_NS, TrafficEvent, TrafficPlan,
    TrafficPlanError, attach_port, dump, load_topology,
};
use ibqos_fabric::netfile::to_net_file;
use ibqos_fabric::{Topology, generate};
use ibqos_text::Code;

use tracing::warn;

use crate::cli::{
    FabricCommand, FabricDumpArgs, FabricGenArgs, FabricServeArgs, FaultArgs, GenShape,
    LatencyArgs, TrafficArgs,
};
use crate::commands::Outcome;
use crate::diagnostics::FileError;
use crate::signals::{Hangup, Signals};

pub fn run(command: &FabricCommand) -> Result<Outcome> {
    match command {
        FabricCommand::Serve(args) => serve(args),
        FabricCommand::Gen(args) => gen_net_file(args),
        FabricCommand::Dump(args) => dump_fabric(args),
    }
}

fn serve(args: &FabricServeArgs) -> Result<Outcome> {
    let started = Instant::now();
    let topology = load(&args.topology)?;
    let nodes = topology.nodes().count();
    let mut board = Switchboard::new(topology, args.attach.as_deref())?;
    configure_emulator(board.emulator_mut(), &args.faults, &args.latency)?;
    if let Some(path) = &args.preset_counters {
        let emulator = board.emulator_mut();
        let presets = CounterPresets::load(path, emulator.topology()).map_err(FileError::from)?;
        emulator.preset_counters(&presets);
    }
    set_traffic(board.emulator_mut(), &args.traffic)?;
    let mut server = Server::bind(board, &args.sockname)?;
    let signals = Signals::install(Hangup::Ends)?;
    let attach = server.switchboard().default_port();
    let attach_name = server
        .switchboard()
        .emulator()
        .topology()
        .node(attach.node)
        .map_or_else(String::new, |n| n.name.clone());
    // One line when the sockets are bound: scripts wait for it (or for @NAME:ctl in
    // /proc/net/unix) before they start clients.
    let latency = args.latency.latency();
    eprintln!(
        "ibqos fabric: serving {nodes} nodes at @{}:ctl, clients naming no node attach at \
         \"{attach_name}\"[{}]; SMAs answer in {} ns (switch) / {} ns (CA) plus {} ns a link \
         (loaded in {:.3} s)",
        args.sockname,
        attach.port,
        latency.switch_sma_ns,
        latency.ca_sma_ns,
        latency.wire_ns,
        started.elapsed().as_secs_f64()
    );
    server.run(signals.stop(), &mut |event| {
        eprintln!("ibqos fabric: {}", traffic_news(&args.traffic, event));
    })?;
    if let Some(path) = &args.dump {
        let json = dump(server.switchboard().emulator()).to_json();
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let s = server.switchboard().stats();
    eprintln!(
        "ibqos fabric: stopped; {} MADs ({} answered, {} forwarded, {} dropped), {} traps, {} \
         control requests, {} malformed datagrams",
        s.mads, s.answered, s.forwarded, s.dropped, s.traps, s.control, s.malformed
    );
    Ok(Outcome::Success)
}

/// Applies the fault and latency flags to an emulated fabric (`ibqos sm --fabric sim:` and
/// `ibqos fabric serve` take the same ones).
pub(crate) fn configure_emulator(
    emulator: &mut Emulator,
    faults: &FaultArgs,
    latency: &LatencyArgs,
) -> Result<()> {
    let injected = Faults {
        loss: faults.fault_loss,
        corrupt: faults.fault_corrupt,
        jitter_ns: faults.fault_jitter_us.saturating_mul(1000),
    };
    if injected != Faults::default() {
        warn!(
            loss = injected.loss,
            corrupt = injected.corrupt,
            jitter_ns = injected.jitter_ns,
            seed = faults.fault_seed,
            "the emulated fabric injects faults"
        );
    }
    emulator.set_models(Models {
        latency: latency.latency(),
        faults: injected,
        seed: faults.fault_seed,
    });
    if let Some(path) = &faults.fault_schedule {
        let schedule = FaultSchedule::load(path, emulator.topology()).map_err(FileError::from)?;
        emulator.schedule(&schedule);
    }
    Ok(())
}

/// Runs the traffic file the traffic flags name inside `emulator`, in real time: a bad file is
/// an error at its place in the file, before the fabric starts.
pub(crate) fn set_traffic(emulator: &mut Emulator, args: &TrafficArgs) -> Result<()> {
    let Some(path) = &args.traffic else {
        return Ok(());
    };
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path.display().to_string();
    let plan = TrafficPlan::new(&name, bytes, emulator.topology(), args.traffic_seed);
    let plan = plan.map_err(|error| match error {
        TrafficPlanError::File(error) => FileError::from(error).into(),
        error => anyhow!(error),
    })?;
    let start_ns = args.traffic_start_ms.saturating_mul(1_000_000);
    // A sampling interval of simulated time per turn of the clock at most: the fabric keeps
    // answering while a slow simulation catches up.
    emulator.set_traffic(plan.starting_at(start_ns).in_steps_of(SAMPLE_NS));
    Ok(())
}

/// What happened to the traffic inside the fabric, as a line for the log; when it ends, its
/// outcome is written where --traffic-report says first.
pub(crate) fn traffic_news(args: &TrafficArgs, event: TrafficEvent) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    match event {
        TrafficEvent::Waiting { at_ns, why } => {
            format!("traffic waits at {:.3} ms: {why}", ms(at_ns))
        }
        TrafficEvent::Started { at_ns } => format!("traffic starts at {:.3} ms", ms(at_ns)),
        TrafficEvent::Rebuilt { at_ns } => format!(
            "a table changed: the traffic goes on over the tables held at {:.3} ms",
            ms(at_ns)
        ),
        TrafficEvent::NotRebuilt { at_ns, why } => format!(
            "a table changed at {:.3} ms, but the traffic goes on over the tables it had: {why}",
            ms(at_ns)
        ),
        TrafficEvent::Finished(outcome) => {
            let mut news = format!(
                "traffic ran from {:.3} ms to {:.3} ms; the counters had all of it at {:.3} ms",
                ms(outcome.started_ns),
                ms(outcome.ended_ns),
                ms(outcome.counted_ns)
            );
            if let Some(path) = &args.traffic_report {
                let written = serde_json::to_string(&outcome)
                    .map_err(std::io::Error::other)
                    .and_then(|json| write_whole(path, &json));
                match written {
                    Ok(()) => news += &format!("; report in {}", path.display()),
                    Err(e) => news += &format!("; cannot write {}: {e}", path.display()),
                }
            }
            news
        }
    }
}

/// Writes `text` to `path` whole or not at all, for a reader that waits for the file.
fn write_whole(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    crate::files::write_atomically(dir, &name, text, crate::files::PUBLIC)
}

/// A built-in fabric by name, else a net file.
pub(crate) fn load(topology: &str) -> Result<Topology> {
    let net = load_topology(topology).map_err(|error| {
        let mut unusable = error.to_diagnostic();
        if unusable.code == Code::UnreadableFile {
            unusable.help = Some(format!(
                "{topology}: not a built-in fabric (two-switch), nor a readable net file"
            ));
        }
        FileError(vec![unusable])
    })?;
    Ok(net.topology)
}

/// `ibqos fabric dump`: every port's state of an emulated fabric as loaded, in the format
/// `ibqos sm --dump-fabric` writes after a run (so the two can be compared).
fn dump_fabric(args: &FabricDumpArgs) -> Result<Outcome> {
    let topology = load(&args.topology)?;
    let attach = attach_port(&topology, args.attach.as_deref())
        .map_err(|reason| anyhow!("{}: {reason}", args.topology))?;
    let mut emulator = Emulator::new(topology)?;
    emulator.set_is_sm(attach, true);
    let json = dump(&emulator).to_json();
    match &args.output {
        Some(path) => std::fs::write(path, json)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout().lock().write_all(json.as_bytes())?,
    }
    Ok(Outcome::Success)
}

fn gen_net_file(args: &FabricGenArgs) -> Result<Outcome> {
    let topology = match args.shape {
        GenShape::FatTree {
            leaves,
            spines,
            hosts,
            radix,
        } => generate::fat_tree(leaves, spines, hosts, radix),
        GenShape::FatTree3 { radix, pods, hosts } => {
            // The full k-ary tree unless told otherwise; an odd radix is refused by the generator.
            generate::fat_tree3(radix, pods.unwrap_or(radix), hosts.unwrap_or(radix / 2))
        }
        GenShape::Ring { switches, hosts } => generate::ring(switches, hosts),
        GenShape::Torus { x, y, hosts } => generate::torus_2d(x, y, hosts),
        GenShape::Mesh { x, y, hosts } => generate::mesh_2d(x, y, hosts),
        GenShape::Dragonfly {
            groups,
            switches,
            hosts,
        } => generate::dragonfly(groups, switches, hosts),
    }?;
    let text = to_net_file(&topology)?;
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(Outcome::Success)
}
