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
use tracing::{info, warn};

use crate::cli::SmArgs;
use crate::commands::fabric::configure_emulator;
use crate::commands::status::Status;
use crate::commands::{Outcome, load_config, reload};
use crate::control::{self, Command, ControlSocket};
use crate::diagnostics::Report;
use crate::logging::Logging;
use crate::metrics::Exporter;
use crate::port_wait::{ONCE_PORT_WAIT, Waited, wait_for_port};
use crate::signals::{Hangup, Signals};
use crate::systemd::{Watchdog, tell_systemd};
use ibqos_sm::cache::read_guid2lid;
use ibqos_sm::config::response_timeout;
use ibqos_sm::dumps;
use ibqos_sm::election::state_name;
use ibqos_sm::manager::{self, Event, Manager, Run};
use ibqos_sm::mkey::{Neighbors, read_guid2mkey, read_neighbors};
use ibqos_sm::summary::SweepSummary;
use ibqos_transport::driver::next_event_watched;
use ibqos_transport::emulated::EmulatedTransport;
use ibqos_transport::fault::{FaultConfig, Faulty};
use ibqos_transport::{FabricSpec, OpenOptions, Role, Transport, open};
use sd_notify::NotifyState;

pub fn run(args: &SmArgs, logging: &Logging) -> Result<Outcome> {
    let cache_dir = args.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let settings = read_settings(args)?;
    apply_logging(args, &settings, logging)?;
    let metrics = Exporter::start(&args.metrics)?;
    let guid2lid = load_lid_cache(&cache_dir)?;
    let (guid2mkey, neighbors) = load_key_caches(&cache_dir)?;
    let options = OpenOptions {
        role: Role::Sm,
        response_timeout: response_timeout(&settings),
    };
    let signals = Signals::install(Hangup::Reloads)?;
    let mut watchdog = Watchdog::from_env();
    // A run that is to end must not wait for ever for a port this host may not have.
    let port_wait = (args.once || args.dry_run).then_some(ONCE_PORT_WAIT);
    if let FabricSpec::Umad(selector) = &args.fabric
        && wait_for_port(selector, &signals, &mut watchdog, port_wait)? == Waited::Stopped
    {
        tell_systemd(&[NotifyState::Stopping]);
        info!("stopping on signal");
        return Ok(Outcome::Success);
    }
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
    let outcome = drive(
        args,
        transport,
        &mut manager,
        Service {
            signals: &signals,
            watchdog: &mut watchdog,
            logging,
            metrics: metrics.as_ref(),
        },
        &cache_dir,
        settings,
    )?;
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

/// What the daemon answers to and keeps besides the fabric: signals, systemd's watchdog, the
/// log's level and the metrics.
struct Service<'a> {
    signals: &'a Signals,
    watchdog: &'a mut Watchdog,
    logging: &'a Logging,
    metrics: Option<&'a Exporter>,
}

/// Runs the manager over the transport to its end: prints each sweep's summary, keeps the LID
/// cache, writes OpenSM's dump files after each sweep that brought the subnet up, stops on
/// SIGTERM or SIGINT, reads the configuration again on SIGHUP or SIGCONT, answers the control
/// socket's requests, keeps the metrics up to date and systemd's watchdog fed.
fn drive(
    args: &SmArgs,
    transport: &mut dyn Transport,
    manager: &mut Manager,
    service: Service,
    cache_dir: &Path,
    settings: Settings,
) -> Result<manager::Outcome> {
    let Service {
        signals,
        watchdog,
        logging,
        metrics,
    } = service;
    let port = transport.local_port().port_guid;
    let control = control_socket(args)
        .map(|path| ControlSocket::bind(&path))
        .transpose()?;
    let mut daemon = Daemon {
        args,
        dumps: Dumps::configured(args, &settings),
        settings,
        logging,
        port,
        sweeps: 0,
        last: None,
    };
    // The port is open and the SM is on it: ready, as systemd's Type=notify means it.
    tell_systemd(&[
        NotifyState::Ready,
        NotifyState::Status(&format!("sweeping the fabric from port {:#018x}", port)),
    ]);
    loop {
        watchdog.keep_alive();
        // A wait for the fabric ends when a signal, a control request or the watchdog's next
        // beat is due, so a quiet fabric between sweeps starves none of them.
        let interrupted = || {
            signals.pending()
                || control.as_ref().is_some_and(ControlSocket::pending)
                || watchdog.due()
        };
        let watch = &mut |m: &Manager| metrics.iter().for_each(|metrics| metrics.watch(m));
        let Some(event) = next_event_watched(transport, manager, &interrupted, watch)? else {
            if signals.take_stop() {
                tell_systemd(&[NotifyState::Stopping]);
                info!("stopping on signal");
                manager.stop(transport.now());
            }
            if signals.take_reload() {
                tell_systemd(&[NotifyState::Reloading, NotifyState::monotonic_usec_now()?]);
                if let Err(error) = daemon.reload(manager) {
                    warn!(%error, "SIGHUP: configuration not re-read; keeping the old one");
                }
                tell_systemd(&[NotifyState::Ready]);
            }
            while let Some(request) = control.as_ref().and_then(ControlSocket::next_request) {
                let answer = daemon.answer(manager, &request.command);
                request.answer(answer);
            }
            continue;
        };
        if let Some(metrics) = metrics {
            metrics.on_event(&event, manager);
        }
        if let Event::SweepDone(summary) = &event {
            let status = format!(
                "{}, {}, {} ports",
                state_name(summary.sm_state),
                summary.result.to_uppercase(),
                summary.ports
            );
            tell_systemd(&[NotifyState::Status(&status)]);
            daemon.sweeps += 1;
            daemon.last = Some(summary.as_ref().clone());
        }
        if let (Event::SweepDone(summary), Some(dumps)) = (&event, &daemon.dumps)
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
                    info!("stopped");
                }
                return Ok(outcome);
            }
        }
    }
}

/// Where the control socket listens: `--control-socket`, else the runtime directory systemd
/// made for the unit; none outside systemd unless asked for.
fn control_socket(args: &SmArgs) -> Option<PathBuf> {
    args.control_socket.clone().or_else(|| {
        std::env::var_os("RUNTIME_DIRECTORY")
            // systemd passes several directories separated by colons; the first is the unit's.
            .and_then(|dirs| {
                dirs.to_str()
                    .and_then(|d| d.split(':').next())
                    .map(PathBuf::from)
            })
            .map(|dir| dir.join(control::SOCKET_NAME))
    })
}

/// What the daemon keeps between events: the configuration in force and what it says to do
/// with each sweep, and what the last sweeps did.
struct Daemon<'a> {
    args: &'a SmArgs,
    settings: Settings,
    dumps: Option<Dumps>,
    logging: &'a Logging,
    port: u64,
    sweeps: u32,
    last: Option<SweepSummary>,
}

impl Daemon<'_> {
    /// Reads the configuration again and hands it to the manager for the sweep it starts;
    /// what each changed option became, one line each.
    fn reload(&mut self, manager: &mut Manager) -> Result<Vec<String>> {
        let new = read_settings(self.args)?;
        // The new log flags first: they decide which of the report's lines are logged.
        if let Err(error) = apply_logging(self.args, &new, self.logging) {
            warn!(%error, "reload: the log level is unchanged");
        }
        let report = reload::report(&self.settings, &new);
        self.dumps = Dumps::configured(self.args, &new);
        manager.reload(new.clone());
        self.settings = new;
        Ok(report)
    }

    /// The answer to an operator's request on the control socket.
    fn answer(&mut self, manager: &mut Manager, command: &Command) -> Result<String, String> {
        match command {
            Command::Status { json } => {
                let status = Status::of(
                    manager,
                    &self.settings,
                    self.port,
                    self.sweeps,
                    self.last.as_ref(),
                );
                if *json {
                    serde_json::to_string(&status)
                        .map(|text| text + "\n")
                        .map_err(|e| e.to_string())
                } else {
                    Ok(status.to_text())
                }
            }
            Command::Sweep => {
                if manager.sweep_now() {
                    info!("a sweep requested on the control socket");
                    Ok("sweeping now\n".to_string())
                } else {
                    Ok(
                        "a sweep is due or under way already, or the SM is not master: \
                        no sweep added\n"
                            .to_string(),
                    )
                }
            }
            Command::Reload => match self.reload(manager) {
                Ok(lines) if lines.is_empty() => {
                    Ok("configuration re-read; no option changed\n".to_string())
                }
                Ok(lines) => Ok(lines.iter().map(|line| format!("{line}\n")).collect()),
                Err(error) => Err(format!("configuration not re-read: {error:#}")),
            },
            Command::Dump => {
                let Some(dumps) = &self.dumps else {
                    return Err("no dump_files_dir is configured".to_string());
                };
                let Some(sweep) = manager.last_sweep() else {
                    return Err("no sweep has ended yet".to_string());
                };
                let written = dumps.write(sweep);
                Ok(written
                    .iter()
                    .map(|name| format!("{}\n", dumps.dir.join(name).display()))
                    .collect())
            }
            Command::LogLevel(flags) => {
                if std::env::var_os("RUST_LOG").is_some() {
                    return Err("RUST_LOG is set: it decides what is logged".to_string());
                }
                self.logging
                    .set_log_flags(*flags)
                    .map_err(|e| format!("{e:#}"))?;
                info!(
                    flags = format_args!("{flags:#04x}"),
                    "log flags set on the control socket"
                );
                Ok(format!(
                    "log flags {flags:#04x} ({}) until the next reload\n",
                    crate::logging::directives_for(*flags)
                ))
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

/// OpenSM's `log_flags` bit that also turns on its routing dumps (`OSM_LOG_ROUTING`).
const LOG_ROUTING: u8 = 0x40;

/// `log_flags` as OpenSM reads it (strtoul, base 0, kept in a byte); its default 0x03 when
/// not set.
fn log_flags(settings: &Settings) -> u8 {
    settings
        .opensm
        .get("log_flags")
        .map_or(0x03, |text| strtoull(text.as_bytes()) as u8)
}

/// `log_max_size` in megabytes as OpenSM reads it; 0 (no limit) when not set.
fn log_max_size(settings: &Settings) -> u32 {
    settings
        .opensm
        .get("log_max_size")
        .map_or(0, |text| strtoull(text.as_bytes()) as u32)
}

/// The log flags in force: `-D`'s, else the configuration's, as in OpenSM.
fn effective_log_flags(args: &SmArgs, settings: &Settings) -> u8 {
    args.log_flags.unwrap_or_else(|| log_flags(settings))
}

/// The log level of the log flags in force, and the log file's `log_max_size`.
fn apply_logging(args: &SmArgs, settings: &Settings, logging: &Logging) -> Result<()> {
    logging.set_max_size_mb(log_max_size(settings));
    logging.set_log_flags(effective_log_flags(args, settings))
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
    /// The dumps `settings` ask for: none without `dump_files_dir`.
    fn configured(args: &SmArgs, settings: &Settings) -> Option<Dumps> {
        settings.sm.dump_files_dir.as_ref().map(|dir| Dumps {
            dir: PathBuf::from(dir),
            routing: effective_log_flags(args, settings) & LOG_ROUTING != 0,
            qos: settings.qos.enabled,
        })
    }

    /// Writes the files; the names of those written.
    fn write(&self, sweep: &ibqos_sm::engine::sweep::Sweep) -> Vec<&'static str> {
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
        let mut written = Vec::new();
        for (name, text) in files {
            match write_atomically(&self.dir, name, &text, PUBLIC) {
                Ok(()) => written.push(name),
                Err(error) => {
                    warn!(dir = %self.dir.display(), %error, name, "cannot write a dump file")
                }
            }
        }
        written
    }
}

/// Writes `dir/guid2lid` (creating the directory), replacing it atomically.
fn store_lid_cache(dir: &Path, guid2lid: &str) -> std::io::Result<()> {
    write_atomically(dir, "guid2lid", guid2lid, PUBLIC)
}

/// The permissions of a file anyone may read, and of one that holds keys.
pub(crate) const PUBLIC: u32 = 0o644;
const SECRET: u32 = 0o600;

/// Writes `dir/name` (creating the directory) with permissions `mode` by way of a temporary
/// file renamed over it, so a reader never sees half a file. The temporary file is created
/// with `mode`, so a secret is never readable by others, not even for a moment.
pub(crate) fn write_atomically(
    dir: &Path,
    name: &str,
    text: &str,
    mode: u32,
) -> std::io::Result<()> {
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
