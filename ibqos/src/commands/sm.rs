//! `ibqos sm`: the subnet manager.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ibqos_emu::{Latency, dump};
use ibqos_opensm::{Format, Settings};
use serde_json::{Value, json};
use tracing::{info, warn};

use crate::cli::SmArgs;
use crate::commands::fabric::configure_emulator;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;
use ibqos_sm::cache;
use ibqos_sm::config::sweep_config;
use ibqos_sm::engine::sweep::{Learned, Phase, Sweep, SweepConfig, SweepMode};
use ibqos_transport::driver::{SmIdentity, Unsolicited, Wake, listen, run_sweep};
use ibqos_transport::emulated::EmulatedTransport;
use ibqos_transport::fault::{FaultConfig, Faulty};
use ibqos_transport::{FabricSpec, OpenOptions, Role, Transport, open};

/// Heavy sweeps `--once` makes before it gives up on bringing the subnet up.
const ONCE_MAX_SWEEPS: u32 = 4;

pub fn run(args: &SmArgs) -> Result<Outcome> {
    let cache_dir = args.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let settings = read_settings(args)?;
    let (guid2lid, problems) = cache::load(&cache_dir)
        .with_context(|| format!("cannot read the LID cache in {}", cache_dir.display()))?;
    for problem in problems {
        warn!(cache = %cache_dir.join("guid2lid").display(), %problem, "guid2lid line skipped");
    }
    let mut config = sweep_config(&settings, guid2lid);
    // The first sweep writes everything, as OpenSM's first sweep forces every table; later ones
    // read the fabric and write only what differs.
    config.mode = if args.dry_run {
        SweepMode::DryRun
    } else {
        SweepMode::Forced
    };
    let options = OpenOptions {
        role: Role::Sm,
        response_timeout: config.scheduler.timeout * (config.scheduler.retries + 1),
    };
    let mut fabric = open_fabric(args, &options)?;
    let outcome = serve(args, fabric.transport(), settings, config, &cache_dir)?;
    if let (Some(path), Fabric::Emulated(transport)) = (&args.dump_fabric, &mut fabric) {
        // The fabric as it is now, scheduled flaps up to now included, even those no SMP saw.
        let now = transport.now_ns();
        transport.emulator_mut().advance_to(now);
        std::fs::write(path, dump(transport.emulator()).to_json())
            .with_context(|| format!("cannot write the fabric dump {}", path.display()))?;
    }
    Ok(outcome)
}

/// The SM's transport. An emulated fabric stays a concrete type so that it can be read back.
/// One per run, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Fabric {
    Emulated(EmulatedTransport),
    Other(Box<dyn Transport>),
}

impl Fabric {
    fn transport(&mut self) -> &mut dyn Transport {
        match self {
            Fabric::Emulated(transport) => transport,
            Fabric::Other(transport) => transport.as_mut(),
        }
    }
}

/// Opens the fabric with the fault flags applied: on a `sim:` fabric inside the emulator (the
/// fabric itself loses, damages and delays MADs, and runs the schedule), elsewhere on the
/// receive side, where the flags that need the fabric's inside are refused.
fn open_fabric(args: &SmArgs, options: &OpenOptions) -> Result<Fabric> {
    let FabricSpec::Emulated { topology, node } = &args.fabric else {
        let f = &args.faults;
        let emulated_only = [
            (f.fault_jitter_us > 0, "--fault-jitter-us"),
            (f.fault_schedule.is_some(), "--fault-schedule"),
            (args.dump_fabric.is_some(), "--dump-fabric"),
            (
                args.latency.latency() != Latency::default(),
                "--wire-ns/--switch-sma-ns/--ca-sma-ns",
            ),
        ];
        if let Some((_, flag)) = emulated_only.iter().find(|(given, _)| *given) {
            bail!(
                "{flag} needs an emulated fabric (--fabric sim:TOPOLOGY), not {}",
                args.fabric
            );
        }
        let mut transport = open(&args.fabric, options)?;
        let faults = FaultConfig {
            loss: f.fault_loss,
            corrupt: f.fault_corrupt,
            seed: f.fault_seed,
        };
        if faults.is_active() {
            warn!(
                loss = faults.loss,
                corrupt = faults.corrupt,
                seed = faults.seed,
                "injecting faults on receipt"
            );
            transport = Box::new(Faulty::new(transport, faults));
        }
        return Ok(Fabric::Other(transport));
    };
    let mut transport = EmulatedTransport::open(topology, node.as_deref())?;
    configure_emulator(transport.emulator_mut(), &args.faults, &args.latency)?;
    Ok(Fabric::Emulated(transport))
}

/// Sweeps until the subnet is up (`--once`) or a stop signal, re-reading the configuration on
/// SIGHUP.
fn serve(
    args: &SmArgs,
    transport: &mut dyn Transport,
    mut settings: Settings,
    mut config: SweepConfig,
    cache_dir: &Path,
) -> Result<Outcome> {
    let once = args.once || args.dry_run;
    let stop = Arc::new(AtomicBool::new(false));
    let reload = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install the SIGTERM/SIGINT handler")?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload))
        .context("cannot install the SIGHUP handler")?;
    let mut unsolicited = Unsolicited::default();
    let mut learned = Learned::default();
    for sweep_number in 1.. {
        let identity = SmIdentity {
            port_guid: transport.local_port().port_guid,
            priority: settings.sm.priority,
        };
        let (sweep, during) = run_sweep(
            transport,
            config.clone(),
            std::mem::take(&mut learned),
            identity,
            std::mem::take(&mut unsolicited),
        )?;
        if config.mode != SweepMode::DryRun {
            save_lids(&sweep, cache_dir, config.lmc);
        }
        learned = sweep.learned().clone();
        let up = *sweep.phase() == Phase::SubnetUp;
        // A trap 128 during the sweep: a link changed after discovery saw it, so what the sweep
        // found may be stale already; sweep again at once, as OpenSM does.
        let link_changed = during.link_changes > 0;
        // With --once, sweep again at once until the subnet is up, as `opensm -o` does, and
        // report only the last sweep. A dry run is one sweep.
        let last_once =
            once && ((up && !link_changed) || args.dry_run || sweep_number >= ONCE_MAX_SWEEPS);
        if !once || last_once {
            let summary = summary(&sweep, &during, sweep_number, config.mode);
            if args.json {
                writeln!(std::io::stdout().lock(), "{summary}")?;
            } else {
                eprint!("{}", describe(&summary));
            }
        }
        if last_once {
            // Dropping the transport releases the port's SM claim (issm) before exit.
            return Ok(if up || args.dry_run {
                Outcome::Success
            } else {
                Outcome::Failed
            });
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if link_changed {
            info!(
                traps = during.link_changes,
                "a link changed during the sweep; sweeping again"
            );
        } else if once {
            warn!(sweep = sweep_number, "subnet not up yet; sweeping again");
        } else {
            let until = transport.now() + interval(&settings);
            let signalled = || stop.load(Ordering::Relaxed) || reload.load(Ordering::Relaxed);
            match listen(transport, until, identity, &mut unsolicited, &signalled)? {
                Wake::LinkChange => info!("trap 128: a link changed; sweeping now"),
                Wake::Due | Wake::Interrupted => {}
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        if reload.swap(false, Ordering::Relaxed) {
            // SIGHUP: read the configuration again; the next sweep applies what changed.
            match read_settings(args) {
                Ok(new) => {
                    info!("configuration re-read on SIGHUP");
                    settings = new;
                    let guid2lid = std::mem::take(&mut config.guid2lid);
                    config = sweep_config(&settings, guid2lid);
                }
                Err(error) => {
                    warn!(%error, "SIGHUP: configuration not re-read; keeping the old one")
                }
            }
        }
        config.mode = SweepMode::Diff;
    }
    info!("stopping on signal");
    Ok(Outcome::Success)
}

fn read_settings(args: &SmArgs) -> Result<Settings> {
    Ok(match args.config() {
        Some(path) => {
            let loaded = load_config(path)?;
            let mut report = Report::new(false);
            report.extend(loaded.diagnostics);
            eprint!("{}", report.render_human(false));
            loaded.settings
        }
        // No file: ibqos's own defaults, which are an empty ibqos.toml.
        None => ibqos_opensm::load_bytes("(defaults)", b"", Format::NativeToml)?.settings,
    })
}

fn interval(settings: &Settings) -> Duration {
    Duration::from_secs(u64::from(settings.sm.sweep_interval.max(1)))
}

/// `$OSM_CACHE_DIR` as OpenSM reads it, else ibqos's own cache directory.
fn default_cache_dir() -> PathBuf {
    std::env::var_os("OSM_CACHE_DIR")
        .map_or_else(|| PathBuf::from("/var/cache/ibqos"), PathBuf::from)
}

fn save_lids(sweep: &Sweep, dir: &Path, lmc: u8) {
    let ports = sweep
        .subnet()
        .endports()
        .filter(|(_, _, p)| p.lid != 0)
        .map(|(_, _, p)| (p.guid, p.lid));
    if let Err(error) = cache::store(dir, &cache::write_guid2lid(ports, lmc)) {
        warn!(dir = %dir.display(), %error, "cannot save the LID cache");
    }
}

/// The end-of-sweep summary as one JSON object.
fn summary(sweep: &Sweep, unsolicited: &Unsolicited, sweep_number: u32, mode: SweepMode) -> Value {
    let counts = sweep.counts();
    let qos = sweep.qos_counts();
    let stats = sweep.stats();
    let smps: Vec<Value> = stats
        .sent
        .iter()
        .map(|((attribute, method), count)| {
            json!({"attribute": attribute.to_string(), "method": method.to_string(), "count": count})
        })
        .collect();
    let phase = match sweep.phase() {
        Phase::SubnetUp => "subnet up".to_string(),
        Phase::Failed(reason) => format!("failed: {reason}"),
        Phase::Incomplete {
            failed_requests,
            ports_not_active,
        } => format!(
            "incomplete: {failed_requests} requests failed, {ports_not_active} linked ports not ACTIVE"
        ),
        other => format!("{other:?}"),
    };
    let changes: Vec<Value> = sweep
        .changes()
        .iter()
        .map(|c| {
            json!({
                "target": c.target,
                "attribute": format!("{:?}", c.attribute),
                "modifier": format!("{:#x}", c.modifier),
                "differences": c.differences.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "sent": c.sent,
            })
        })
        .collect();
    json!({
        "sweep": sweep_number,
        "mode": format!("{mode:?}").to_lowercase(),
        "changes": changes,
        "subnet_up": *sweep.phase() == Phase::SubnetUp,
        "result": phase,
        "nodes": counts.nodes,
        "switches": counts.switches,
        "ports": counts.ports,
        "lids": counts.lids,
        "smps_sent": stats.total_sent(),
        "smps": smps,
        "retries": stats.retries,
        "timeouts": stats.timeouts,
        "error_statuses": stats.error_statuses,
        "mismatched_answers": stats.mismatched,
        "unmatched_answers": stats.unmatched,
        "failed_requests": counts.failed_requests,
        "ports_not_active": counts.ports_not_active,
        "qos_ports_configured": qos.configured,
        "qos_ports_verified": qos.verified,
        "qos_ports_failed": qos.failed,
        "time_to_subnet_up_ms": sweep.subnet_up_after().map(|d| d.as_secs_f64() * 1000.0),
        "traps": unsolicited.traps,
        "link_change_traps": unsolicited.link_changes,
        "sm_info_requests": unsolicited.sm_info,
        "unsupported_requests": unsolicited.unsupported,
        "malformed_mads": unsolicited.malformed,
    })
}

/// The summary as a person reads it.
fn describe(summary: &Value) -> String {
    let mut out = format!(
        "{}: {} nodes ({} switches), {} ports, {} LIDs\n",
        summary["result"].as_str().unwrap_or("?"),
        summary["nodes"],
        summary["switches"],
        summary["ports"],
        summary["lids"],
    );
    out.push_str(&format!(
        "SMPs sent: {} ({} retries, {} timeouts, {} error statuses, {} requests failed)\n",
        summary["smps_sent"],
        summary["retries"],
        summary["timeouts"],
        summary["error_statuses"],
        summary["failed_requests"],
    ));
    for smp in summary["smps"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  {:<24} {:<8} {}\n",
            smp["attribute"].as_str().unwrap_or("?"),
            smp["method"].as_str().unwrap_or("?"),
            smp["count"]
        ));
    }
    if summary["qos_ports_configured"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!(
            "QoS: {} ports configured, {} verified, {} failed\n",
            summary["qos_ports_configured"],
            summary["qos_ports_verified"],
            summary["qos_ports_failed"],
        ));
    }
    let changes = summary["changes"].as_array().map_or(&[][..], Vec::as_slice);
    if summary["mode"] != "forced" {
        let verb = if summary["mode"] == "dryrun" {
            "would change"
        } else {
            "changed"
        };
        out.push_str(&format!("{} values {verb}:\n", changes.len()));
        for change in changes {
            let differences: Vec<&str> = change["differences"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            out.push_str(&format!(
                "  {} {} {}: {}\n",
                change["target"].as_str().unwrap_or("?"),
                change["attribute"].as_str().unwrap_or("?"),
                change["modifier"].as_str().unwrap_or("?"),
                differences.join("; "),
            ));
        }
    }
    if let Some(ms) = summary["time_to_subnet_up_ms"].as_f64() {
        out.push_str(&format!("time to SUBNET UP: {ms:.1} ms\n"));
    }
    out
}
