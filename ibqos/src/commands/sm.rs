//! `ibqos sm`: the subnet manager. The SM itself is `ibqos_sm::manager`; this page reads its
//! configuration and LID cache, opens the fabric, drives the manager over it, and prints what
//! each sweep did.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use ibqos_emu::{Latency, dump};
use ibqos_opensm::{Format, Settings};
use ibqos_text::cnum::strtoull;
use tracing::{debug, info, warn};

use crate::cli::SmArgs;
use crate::commands::fabric::configure_emulator;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;
use crate::signals::{Hangup, Signals};
use ibqos_sm::cache::read_guid2lid;
use ibqos_sm::config::response_timeout;
use ibqos_sm::dumps;
use ibqos_sm::election::state_name;
use ibqos_sm::manager::{self, Event, Manager, Run};
use ibqos_sm::mkey::{Neighbors, read_guid2mkey, read_neighbors};
use ibqos_transport::driver::next_event;
use ibqos_transport::emulated::EmulatedTransport;
use ibqos_transport::fault::{FaultConfig, Faulty};
use ibqos_transport::{FabricSpec, OpenOptions, Role, Transport, open};
use sd_notify::NotifyState;

pub fn run(args: &SmArgs) -> Result<Outcome> {
    let cache_dir = args.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let settings = read_settings(args)?;
    let guid2lid = load_lid_cache(&cache_dir)?;
    let (guid2mkey, neighbors) = load_key_caches(&cache_dir)?;
    let options = OpenOptions {
        role: Role::Sm,
        response_timeout: response_timeout(&settings),
    };
    let mut fabric = open_fabric(args, &options)?;
    let run = if args.dry_run {
        Run::DryRun
    } else if args.once {
        Run::Once
    } else {
        Run::Daemon
    };
    let transport = fabric.transport();
    let port_guid = transport.local_port().port_guid;
    let mut manager =
        Manager::new(run, &settings, guid2lid, port_guid).with_key_caches(guid2mkey, neighbors);
    let dumps = settings.sm.dump_files_dir.as_ref().map(|dir| Dumps {
        dir: PathBuf::from(dir),
        routing: log_flags(&settings) & LOG_ROUTING != 0,
        qos: settings.qos.enabled,
    });
    let outcome = drive(args, transport, &mut manager, &cache_dir, dumps.as_ref())?;
    if let (Some(path), Fabric::Emulated(transport)) = (&args.dump_fabric, &mut fabric) {
        // The fabric as it is now, scheduled flaps up to now included, even those no SMP saw.
        let now = transport.now_ns();
        transport.emulator_mut().advance_to(now);
        std::fs::write(path, dump(transport.emulator()).to_json())
            .with_context(|| format!("cannot write the fabric dump {}", path.display()))?;
    }
    // Dropping the transport releases the port's SM claim (issm) before exit.
    Ok(if outcome.is_success() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
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

/// Runs the manager over the transport to its end: prints each sweep's summary, keeps the LID
/// cache, writes OpenSM's dump files into `dumps` after each sweep that brought the subnet up,
/// stops on SIGTERM or SIGINT and reads the configuration again on SIGHUP.
fn drive(
    args: &SmArgs,
    transport: &mut dyn Transport,
    manager: &mut Manager,
    cache_dir: &Path,
    dumps: Option<&Dumps>,
) -> Result<manager::Outcome> {
    let signals = Signals::install(Hangup::Reloads)?;
    // The port is open and the SM is on it: ready, as systemd's Type=notify means it.
    let port = transport.local_port().port_guid;
    tell_systemd(&[
        NotifyState::Ready,
        NotifyState::Status(&format!("sweeping the fabric from port {:#018x}", port)),
    ]);
    loop {
        let Some(event) = next_event(transport, manager, &|| signals.pending())? else {
            if signals.take_stop() {
                tell_systemd(&[NotifyState::Stopping]);
                manager.stop();
            }
            if signals.take_reload() {
                tell_systemd(&[NotifyState::Reloading, NotifyState::monotonic_usec_now()?]);
                match read_settings(args) {
                    Ok(settings) => {
                        info!("configuration re-read on SIGHUP");
                        manager.reload(settings);
                    }
                    Err(error) => {
                        warn!(%error, "SIGHUP: configuration not re-read; keeping the old one")
                    }
                }
                tell_systemd(&[NotifyState::Ready]);
            }
            continue;
        };
        if let Event::SweepDone(summary) = &event {
            let status = format!(
                "{}, {}, {} ports",
                state_name(summary.sm_state),
                summary.result.to_uppercase(),
                summary.ports
            );
            tell_systemd(&[NotifyState::Status(&status)]);
        }
        if let (Event::SweepDone(summary), Some(dumps)) = (&event, dumps)
            && summary.subnet_up
            && let Some(sweep) = manager.last_sweep()
        {
            dumps.write(sweep);
        }
        match event {
            // The election logged it ("Entering MASTER state"); each summary carries the state.
            Event::SweepStarted { .. } | Event::StateChanged(_) => {}
            Event::SaveLids(guid2lid) => {
                if let Err(error) = store_lid_cache(cache_dir, &guid2lid) {
                    warn!(dir = %cache_dir.display(), %error, "cannot save the LID cache");
                }
            }
            Event::SaveMkeys {
                guid2mkey,
                neighbors,
            } => {
                for (name, text, mode) in [
                    ("guid2mkey", guid2mkey, SECRET),
                    ("neighbors", neighbors, PUBLIC),
                ] {
                    if let Err(error) = write_atomically(cache_dir, name, &text, mode) {
                        warn!(dir = %cache_dir.display(), %error, name, "cannot save a cache file");
                    }
                }
            }
            Event::SweepDone(summary) if args.json => {
                writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    serde_json::to_string(&summary)?
                )?;
            }
            Event::SweepDone(summary) => eprint!("{summary}"),
            Event::MulticastUpdated {
                blocks,
                failed_switches,
            } => info!(
                blocks,
                failed_switches, "multicast forwarding tables programmed after joins or leaves"
            ),
            Event::Finished(outcome) => {
                if outcome == manager::Outcome::Stopped {
                    info!("stopping on signal");
                }
                return Ok(outcome);
            }
        }
    }
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

/// `$OSM_CACHE_DIR` as OpenSM reads it, else ibqos's own cache directory.
fn default_cache_dir() -> PathBuf {
    std::env::var_os("OSM_CACHE_DIR")
        .map_or_else(|| PathBuf::from("/var/cache/ibqos"), PathBuf::from)
}

/// The guid2lid cache in `dir`; a missing file is an empty cache, and a damaged line is skipped
/// with a warning (it only costs that port its old address).
fn load_lid_cache(dir: &Path) -> Result<BTreeMap<u64, u16>> {
    let (path, text) = read_cache(dir, "guid2lid")?;
    let (guid2lid, problems) = read_guid2lid(&text);
    for problem in problems {
        warn!(cache = %path.display(), %problem, "guid2lid line skipped");
    }
    Ok(guid2lid)
}

/// The guid2mkey and neighbors caches in `dir`, likewise: a damaged line costs that port's key
/// (or the name of a route's target) until its lease runs out.
fn load_key_caches(dir: &Path) -> Result<(BTreeMap<u64, u64>, Neighbors)> {
    let (path, text) = read_cache(dir, "guid2mkey")?;
    let (guid2mkey, problems) = read_guid2mkey(&text);
    for problem in problems {
        warn!(cache = %path.display(), %problem, "line skipped");
    }
    let (path, text) = read_cache(dir, "neighbors")?;
    let (neighbors, problems) = read_neighbors(&text);
    for problem in problems {
        warn!(cache = %path.display(), %problem, "line skipped");
    }
    Ok((guid2mkey, neighbors))
}

/// The path of the cache file `name` in `dir` and its text; a missing file is empty.
fn read_cache(dir: &Path, name: &str) -> Result<(PathBuf, String)> {
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok((path, String::new())),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Tells the service manager (systemd's `NOTIFY_SOCKET`, when it set one) how the SM stands; a
/// message that cannot be sent costs only a debug line.
fn tell_systemd(states: &[NotifyState]) {
    if let Err(error) = sd_notify::notify(states) {
        debug!(%error, "cannot notify the service manager");
    }
}

/// OpenSM's `log_flags` bit that also turns on its routing dumps (`OSM_LOG_ROUTING`).
const LOG_ROUTING: u64 = 0x40;

/// `log_flags` as OpenSM reads it (strtoul, base 0); its default 0x03 when not set.
fn log_flags(settings: &Settings) -> u64 {
    settings
        .opensm
        .get("log_flags")
        .map_or(0x03, |text| strtoull(text.as_bytes()))
}

/// Where and which of OpenSM's dump files to write after each sweep that brought the subnet up
/// (`osm_dump_all`): opensm-subnet.lst always; opensm-lfts.dump with the ROUTING log flag, and
/// opensm-sl2vl.dump and ibqos-vlarb.dump (which OpenSM lacks) too when QoS is on.
struct Dumps {
    dir: PathBuf,
    routing: bool,
    qos: bool,
}

impl Dumps {
    fn write(&self, sweep: &ibqos_sm::engine::sweep::Sweep) {
        let mut files = vec![("opensm-subnet.lst", dumps::subnet_lst(sweep.subnet()))];
        if self.routing {
            files.push((
                "opensm-lfts.dump",
                dumps::lfts_dump(sweep.subnet(), sweep.lfts()),
            ));
            if self.qos {
                let db = ibqos_sm::sa::SaDb::new(sweep);
                files.push(("opensm-sl2vl.dump", dumps::sl2vl_dump(&db)));
                files.push(("ibqos-vlarb.dump", dumps::vlarb_dump(&db)));
            }
        }
        for (name, text) in files {
            if let Err(error) = write_atomically(&self.dir, name, &text, PUBLIC) {
                warn!(dir = %self.dir.display(), %error, name, "cannot write a dump file");
            }
        }
    }
}

/// Writes `dir/guid2lid` (creating the directory), replacing it atomically.
fn store_lid_cache(dir: &Path, guid2lid: &str) -> std::io::Result<()> {
    write_atomically(dir, "guid2lid", guid2lid, PUBLIC)
}

/// The permissions of a file anyone may read, and of one that holds keys.
const PUBLIC: u32 = 0o644;
const SECRET: u32 = 0o600;

/// Writes `dir/name` (creating the directory) with permissions `mode` by way of a temporary
/// file renamed over it, so a reader never sees half a file. The temporary file is created
/// with `mode`, so a secret is never readable by others, not even for a moment.
fn write_atomically(dir: &Path, name: &str, text: &str, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{name}.tmp"));
    // A temporary file left by a crash may have other permissions; start afresh.
    match std::fs::remove_file(&tmp) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    file.write_all(text.as_bytes())?;
    // The umask may have taken bits away from `mode`; never added any.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    drop(file);
    std::fs::rename(tmp, dir.join(name))
}
