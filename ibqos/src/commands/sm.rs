//! `ibqos sm`: the subnet manager. The SM itself is `ibqos_sm::manager`; this page reads its
//! configuration and LID cache, opens the fabric, drives the manager over it, and says what
//! each sweep did: a run that ends (`--once`, `--dry-run`) prints its summary on standard
//! output, as its result; a daemon logs a sweep's summary when it is news.
//!
//! On an emulated or ibsim fabric, which is no subnet of this host's, nothing is written to a
//! system path unless asked for: no cache without `--cache-dir` or `$OSM_CACHE_DIR`, and no
//! dump file in OpenSM's default `dump_files_dir`. On umad, OpenSM's defaults hold.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ibqos_emu::{Latency, dump};
use ibqos_mad::{Guid, SmState};
use ibqos_opensm::{Format, Settings};
use ibqos_perfmgr::PerfMgrConfig;
use ibqos_perfmgr::config::DEFAULT_DUMP_FILE;
use ibqos_perfmgr::dump::{self as perf_dump, DumpFormat, ctime_utc};
use ibqos_text::cnum::{atoi, strtoull};
use tracing::{debug, info, warn};

use crate::cli::SmArgs;
use crate::commands::fabric::{configure_emulator, set_traffic, traffic_news};
use crate::commands::status::Status;
use crate::commands::{Outcome, load_config, reload};
use crate::control::{self, Command, ControlSocket, PerfCommand};
use crate::diagnostics::Report;
use crate::files::{PUBLIC, SECRET, write_atomically, write_text_atomically};
use crate::logging::{Logging, Problems};
use crate::metrics::Exporter;
use crate::port_wait::{ONCE_PORT_WAIT, Waited, wait_for_port};
use crate::signals::{Hangup, Signals};
use crate::systemd::{Watchdog, tell_systemd};
use ibqos_sm::cache::read_guid2lid;
use ibqos_sm::config::{perfmgr_config, response_timeout};
use ibqos_sm::dumps;
use ibqos_sm::election::state_name;
use ibqos_sm::engine::sweep::SweepMode;
use ibqos_sm::manager::{self, Event, Manager, Run};
use ibqos_sm::mkey::{Neighbors, read_guid2mkey, read_neighbors};
use ibqos_sm::sa::SaDb;
use ibqos_sm::summary::SweepSummary;
use ibqos_transport::driver;
use ibqos_transport::fault::{FaultConfig, Faulty};
use ibqos_transport::{Fabric, FabricSpec, OpenOptions, Role, Transport, open_fabric};
use sd_notify::NotifyState;

pub fn run(args: &SmArgs, logging: &Logging) -> Result<Outcome> {
    let settings = read_settings(args)?;
    apply_logging(args, &settings, logging)?;
    let metrics = Exporter::start(&args.metrics)?;
    let cache_dir = cache_dir(args);
    let (guid2lid, guid2mkey, neighbors) = match &cache_dir {
        Some(dir) => {
            let (guid2mkey, neighbors) = load_key_caches(dir);
            (load_lid_cache(dir), guid2mkey, neighbors)
        }
        None => {
            info!("no cache directory (--cache-dir): LIDs and M_Keys are kept for this run only");
            Default::default()
        }
    };
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
    let mut fabric = open_with_faults(args, &options)?;
    let run = if args.dry_run {
        Run::DryRun
    } else if args.once {
        Run::Once
    } else {
        Run::Daemon
    };
    let transport = fabric.transport();
    let port_guid = transport.local_port().port_guid;
    let mut manager = Manager::new(run, &settings, guid2lid, Guid(port_guid))
        .with_key_caches(guid2mkey, neighbors);
    let perfmgr = perfmgr_config(&settings);
    if perfmgr.enabled {
        manager = manager.with_perfmgr(perfmgr, transport.now(), unix_now());
    }
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
        cache_dir.as_deref(),
        settings,
    )?;
    if let Fabric::Emulated(transport) = &mut fabric {
        // The fabric as it is now, scheduled flaps and traffic up to now included, even those
        // no SMP saw.
        let now = transport.now_ns();
        transport.emulator_mut().advance_to(now);
        for event in transport.emulator_mut().take_traffic_events() {
            info!("{}", traffic_news(&args.traffic, event));
        }
        if let Some(path) = &args.dump_fabric {
            std::fs::write(path, dump(transport.emulator()).to_json())
                .with_context(|| format!("cannot write the fabric dump {}", path.display()))?;
        }
    }
    // Dropping the transport releases the port's SM claim (issm) before exit.
    Ok(if outcome.is_success() {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// The wall clock in seconds since the Unix epoch, OpenSM's `time(NULL)`: the PerfMgr dates
/// its readings from it.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}

/// Opens the fabric with the fault flags applied: on a `sim:` fabric inside the emulator (the
/// fabric itself loses, damages and delays MADs, and runs the schedule), elsewhere on the
/// receive side, where the flags that need the fabric's inside are refused.
fn open_with_faults(args: &SmArgs, options: &OpenOptions) -> Result<Fabric> {
    let f = &args.faults;
    if !matches!(args.fabric, FabricSpec::Emulated { .. }) {
        let emulated_only = [
            (f.fault_jitter_us > 0, "--fault-jitter-us"),
            (f.fault_schedule.is_some(), "--fault-schedule"),
            (args.dump_fabric.is_some(), "--dump-fabric"),
            (args.traffic.traffic.is_some(), "--traffic"),
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
    }
    Ok(match open_fabric(&args.fabric, options)? {
        Fabric::Emulated(mut transport) => {
            configure_emulator(transport.emulator_mut(), f, &args.latency)?;
            set_traffic(transport.emulator_mut(), &args.traffic)?;
            Fabric::Emulated(transport)
        }
        Fabric::Other(transport) => {
            let faults = FaultConfig {
                loss: f.fault_loss,
                corrupt: f.fault_corrupt,
                seed: f.fault_seed,
            };
            if !faults.is_active() {
                return Ok(Fabric::Other(transport));
            }
            warn!(
                loss = faults.loss,
                corrupt = faults.corrupt,
                seed = faults.seed,
                "injecting faults on receipt"
            );
            Fabric::Other(Box::new(Faulty::new(transport, faults)))
        }
    })
}

/// What the daemon answers to and keeps besides the fabric: signals, systemd's watchdog, the
/// log's level and the metrics.
struct Service<'a> {
    signals: &'a Signals,
    watchdog: &'a mut Watchdog,
    logging: &'a Logging,
    metrics: Option<&'a Exporter>,
}

/// Runs the manager over the transport to its end. It reports each sweep's summary, keeps the LID
/// cache, and writes OpenSM's dump files after each sweep that brought the subnet up. It stops on
/// SIGTERM or SIGINT, and reads the configuration again on SIGHUP or SIGCONT. It answers the
/// control socket's requests, keeps the metrics up to date and feeds systemd's watchdog.
fn drive(
    args: &SmArgs,
    transport: &mut dyn Transport,
    manager: &mut Manager,
    service: Service,
    cache_dir: Option<&Path>,
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
        problems: Problems::default(),
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
        let watched = |m: &mut Manager| {
            metrics.iter().for_each(|metrics| metrics.watch(m));
            m.poll_event()
        };
        let Some(event) = driver::drive(transport, manager, watched, &interrupted)? else {
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
                let answer = daemon.answer(manager, &request.command, transport.now());
                request.answer(answer);
            }
            continue;
        };
        if let Some(metrics) = metrics {
            metrics.on_event(&event, manager);
        }
        if let Event::SweepDone(summary) = &event {
            report(args, summary, daemon.last.as_ref())?;
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
            && summary.mode != SweepMode::DryRun
            && let Some(sweep) = manager.last_sweep()
        {
            dumps.write(sweep, manager.sa_snapshot(), &mut daemon.problems);
        }
        match event {
            // The election logged it ("Entering MASTER state"); each summary carries the state;
            // the summary was reported above.
            Event::SweepStarted { .. } | Event::StateChanged(_) | Event::SweepDone(_) => {}
            Event::SaveLids(guid2lid) => {
                let files = [("guid2lid", guid2lid, PUBLIC)];
                save_caches(cache_dir, files, &mut daemon.problems);
            }
            Event::SaveMkeys {
                guid2mkey,
                neighbors,
            } => {
                let files = [
                    ("guid2mkey", guid2mkey, SECRET),
                    ("neighbors", neighbors, PUBLIC),
                ];
                save_caches(cache_dir, files, &mut daemon.problems);
            }
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

/// `value` as one line of JSON, the answer to a request's `--json`.
fn json_line(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string(value)
        .map(|text| text + "\n")
        .map_err(|e| e.to_string())
}

/// A sweep's summary, where it belongs. With `--json`, every summary on standard output, one
/// JSON object a line. Otherwise a run that ends prints its summary on standard output, as its
/// result, and a daemon logs it (so that the journal gives each line its priority and
/// `--log-file` gets it) when it is news after `previous`: the first sweep, a sweep that
/// changed something, or one whose outcome differs.
fn report(args: &SmArgs, summary: &SweepSummary, previous: Option<&SweepSummary>) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(summary)?)?;
    } else if args.once || args.dry_run {
        write!(stdout, "{summary}")?;
    } else if summary.is_news_after(previous) {
        let text = summary.to_string();
        let mut lines = text.lines();
        // The first line says how the sweep ended: a warning when a master's sweep did not
        // bring the subnet up (a standby's stops after discovery, as it should).
        if let Some(outcome) = lines.next() {
            if summary.subnet_up || summary.sm_state != SmState::Master {
                info!(target: SUMMARY_TARGET, "{outcome}");
            } else {
                warn!(target: SUMMARY_TARGET, "{outcome}");
            }
        }
        lines.for_each(|line| info!(target: SUMMARY_TARGET, "{line}"));
    } else {
        debug!(sweep = summary.sweep, "sweep summary unchanged; not logged");
    }
    Ok(())
}

/// The log target of a daemon's sweep summaries.
const SUMMARY_TARGET: &str = "ibqos::summary";

/// Writes the cache `files` (name, text, permissions) into `dir`, if there is one; a file that
/// cannot be written costs a warning, once while the problem lasts.
fn save_caches<const N: usize>(
    dir: Option<&Path>,
    files: [(&str, String, u32); N],
    problems: &mut Problems,
) {
    let Some(dir) = dir else { return };
    for (name, text, mode) in files {
        let what = format!("save the cache file {}", dir.join(name).display());
        problems.note(&what, write_atomically(dir, name, &text, mode));
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
    /// Files written after every sweep that could not be, warned of once.
    problems: Problems,
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
    fn answer(
        &mut self,
        manager: &mut Manager,
        command: &Command,
        now: Instant,
    ) -> Result<String, String> {
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
                    json_line(&status)
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
                // The last sweep may be a dry run, which leaves the SA's snapshot as it was:
                // the tables come from the sweep itself.
                let written = dumps.write(sweep, None, &mut self.problems);
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
            Command::Perf(perf) => self.answer_perf(manager, perf, now),
            Command::QosReport { json } => {
                if !self.settings.perfmgr_lanes {
                    return Err(
                        "the QoS report needs the per-VL counters: [sm] perfmgr_lanes = true"
                            .to_string(),
                    );
                }
                let Some(report) = manager.qos_report() else {
                    return Err("the performance manager is off (perfmgr FALSE)".to_string());
                };
                if *json {
                    json_line(&report)
                } else {
                    Ok(report.to_string())
                }
            }
        }
    }

    /// The answer to `ibqos ctl perf ...`, in OpenSM's console words. Dates are printed in
    /// UTC, where OpenSM's ctime uses the local time zone.
    fn answer_perf(
        &mut self,
        manager: &mut Manager,
        command: &PerfCommand,
        now: Instant,
    ) -> Result<String, String> {
        let Some(perfmgr) = manager.perfmgr_mut() else {
            return Err("the performance manager is off (perfmgr FALSE)".to_string());
        };
        let mut text = String::new();
        match command {
            PerfCommand::Status => text = perfmgr.status(),
            // On a standby it discovers the subnet first, as OpenSM's does.
            PerfCommand::Sweep => {
                if !manager.perf_sweep(now) {
                    return Err(
                        "the SM's first sweep is under way: the performance manager \
                                sweeps once it is over"
                            .to_string(),
                    );
                }
                text = "sweep initiated...\n".to_string();
            }
            PerfCommand::Dump { machine } => {
                let format = if *machine {
                    DumpFormat::Machine
                } else {
                    DumpFormat::Human
                };
                let path = perf_dump_path(perfmgr.config(), &self.settings);
                let (dir, name) = match (path.parent(), path.file_name()) {
                    (Some(dir), Some(name)) => (dir, name.to_string_lossy()),
                    _ => return Err(format!("{} names no file", path.display())),
                };
                let db = perfmgr.db();
                write_text_atomically(dir, &name, PUBLIC, |mut out| {
                    perf_dump::dump(db, format, &ctime_utc, &mut out)
                })
                .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
                text = format!("{}\n", path.display());
            }
            PerfCommand::Counters(node) => {
                perf_dump::print(perfmgr.db(), node.as_deref(), false, &ctime_utc, &mut text)
                    .map_err(|e| e.to_string())?;
            }
            PerfCommand::Errors(node) => {
                perf_dump::print(perfmgr.db(), node.as_deref(), true, &ctime_utc, &mut text)
                    .map_err(|e| e.to_string())?;
            }
            PerfCommand::Enable(enabled) => perfmgr.set_enabled(now, *enabled),
            PerfCommand::ClearCounters => {
                perfmgr.clear_counters(now);
                info!("PerfMgr counters cleared");
            }
            PerfCommand::ClearInactive => {
                let removed = perfmgr.delete_inactive();
                text = format!("Removed {removed} nodes from Database\n");
            }
            PerfCommand::RemoveNodes(remove) => perfmgr.set_remove_nodes(*remove),
            PerfCommand::QueryCpi(query) => perfmgr.set_query_cpi(*query),
            PerfCommand::Redirections(node) => perfmgr
                .dump_redirections(node.as_deref(), &mut text)
                .map_err(|e| e.to_string())?,
            PerfCommand::ClearRedirections(node) => perfmgr
                .clear_redirections(node.as_deref(), &mut text)
                .map_err(|e| e.to_string())?,
            PerfCommand::SweepTime(seconds) => {
                // The console reads it with atoi into 16 bits.
                let seconds = atoi(seconds.as_bytes()) as u16;
                if !perfmgr.set_sweep_time(seconds) {
                    return Err(
                        "sweep_time requires a positive time period (in seconds) to \
                                be specified"
                            .to_string(),
                    );
                }
                // A sweep at once, as OpenSM signals one.
                manager.perf_sweep(now);
            }
        }
        Ok(text)
    }
}

/// Where `perfmgr dump_counters` writes, as OpenSM: `event_db_dump_file`, else
/// opensm_port_counters.log in `dump_files_dir`.
fn perf_dump_path(config: &PerfMgrConfig, settings: &Settings) -> PathBuf {
    match &config.dump_file {
        Some(file) => PathBuf::from(file),
        None => {
            let dir = settings
                .sm
                .dump_files_dir
                .as_deref()
                .unwrap_or(OPENSM_DUMP_DIR);
            Path::new(dir).join(DEFAULT_DUMP_FILE)
        }
    }
}

fn read_settings(args: &SmArgs) -> Result<Settings> {
    Ok(match args.config() {
        Some(path) => {
            let loaded = load_config(path)?;
            let mut report = Report::new(false);
            report.extend(loaded.diagnostics);
            // A GUID file that failed changes the routes: said at start and at each reload.
            report.extend(loaded.guid_files);
            eprint!("{}", report.render_human(false));
            loaded.settings
        }
        // No file: ibqos's own defaults, which are an empty ibqos.toml.
        None => ibqos_opensm::load_bytes("(defaults)", b"", Format::NativeToml)?.settings,
    })
}

/// ibqos's cache directory on a host's own subnet (umad), as /var/cache/opensm is OpenSM's.
const SYSTEM_CACHE_DIR: &str = "/var/cache/ibqos";

/// Where the caches live: `--cache-dir`, else `$OSM_CACHE_DIR` as OpenSM reads it, else on umad
/// [`SYSTEM_CACHE_DIR`]; an emulated or ibsim fabric has none unless asked for, so that a trial
/// run writes no system path and shares no cache with the host's SM.
fn cache_dir(args: &SmArgs) -> Option<PathBuf> {
    args.cache_dir
        .clone()
        .or_else(|| std::env::var_os("OSM_CACHE_DIR").map(PathBuf::from))
        .or_else(|| on_umad(args).then(|| PathBuf::from(SYSTEM_CACHE_DIR)))
}

/// Whether the SM runs on this host's own subnet, through the kernel.
fn on_umad(args: &SmArgs) -> bool {
    matches!(args.fabric, FabricSpec::Umad(_))
}

/// The guid2lid cache in `dir`; a missing file is an empty cache, and a damaged line is skipped
/// with a warning (it only costs that port its old address).
fn load_lid_cache(dir: &Path) -> BTreeMap<u64, u16> {
    let (path, text) = read_cache(dir, "guid2lid");
    let (guid2lid, problems) = read_guid2lid(&text);
    for problem in problems {
        warn!(cache = %path.display(), %problem, "guid2lid line skipped");
    }
    guid2lid
}

/// The guid2mkey and neighbors caches in `dir`, likewise: a damaged line costs that port's key
/// (or the name of a route's target) until its lease runs out.
fn load_key_caches(dir: &Path) -> (BTreeMap<u64, u64>, Neighbors) {
    let (path, text) = read_cache(dir, "guid2mkey");
    let (guid2mkey, problems) = read_guid2mkey(&text);
    for problem in problems {
        warn!(cache = %path.display(), %problem, "line skipped");
    }
    let (path, text) = read_cache(dir, "neighbors");
    let (neighbors, problems) = read_neighbors(&text);
    for problem in problems {
        warn!(cache = %path.display(), %problem, "line skipped");
    }
    (guid2mkey, neighbors)
}

/// The path of the cache file `name` in `dir` and its text. A missing file is empty, and so is
/// one that cannot be read, with a warning: a cache only saves work, the SM runs without it.
fn read_cache(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            warn!(cache = %path.display(), %error, "cannot read the cache file; starting without it");
            String::new()
        }
    };
    (path, text)
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

/// OpenSM's default `dump_files_dir`, which every opensm.conf holds unless it names another.
const OPENSM_DUMP_DIR: &str = "/var/log/";

impl Dumps {
    /// The dumps `settings` ask for: none without `dump_files_dir`, and none in OpenSM's default
    /// one but on umad, where a real OpenSM's files are not to be overwritten by a trial run.
    fn configured(args: &SmArgs, settings: &Settings) -> Option<Dumps> {
        let dir = settings.sm.dump_files_dir.as_ref()?;
        if !on_umad(args) && Path::new(dir) == Path::new(OPENSM_DUMP_DIR) {
            debug!(
                dir,
                "no dump files: OpenSM's default directory, and the fabric is not umad"
            );
            return None;
        }
        Some(Dumps {
            dir: PathBuf::from(dir),
            routing: effective_log_flags(args, settings) & LOG_ROUTING != 0,
            qos: settings.qos.enabled,
        })
    }

    /// Writes the files of `sweep`, the tables as verified from `snapshot` (the SA's of that
    /// sweep, made anew if there is none); the names of those written. Each file's text goes to
    /// the file as it is made, so none is held whole. A file that cannot be written
    /// is warned of once while the problem lasts, not after every sweep.
    fn write(
        &self,
        sweep: &ibqos_sm::engine::sweep::Sweep,
        snapshot: Option<&SaDb>,
        problems: &mut Problems,
    ) -> Vec<&'static str> {
        let mut written = Vec::new();
        let mut write = |name: &'static str, fill: &dyn Fn(&mut dyn fmt::Write) -> fmt::Result| {
            let outcome = write_text_atomically(&self.dir, name, PUBLIC, fill);
            if outcome.is_ok() {
                written.push(name);
            }
            let what = format!("write the dump file {}", self.dir.join(name).display());
            problems.note(&what, outcome);
        };
        write("opensm-subnet.lst", &|out| {
            dumps::subnet_lst(sweep.subnet(), out)
        });
        if self.routing {
            write("opensm-lfts.dump", &|out| {
                dumps::lfts_dump(sweep.subnet(), sweep.lfts(), out)
            });
            if self.qos {
                let made;
                let db = match snapshot {
                    Some(db) => db,
                    None => {
                        made = SaDb::new(sweep);
                        &made
                    }
                };
                write("opensm-sl2vl.dump", &|out| dumps::sl2vl_dump(db, out));
                write("ibqos-vlarb.dump", &|out| dumps::vlarb_dump(db, out));
            }
        }
        written
    }
}
