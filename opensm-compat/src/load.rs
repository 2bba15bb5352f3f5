//! Loading a configuration file of either format, and converting between them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ibqos_qos::promise::DEFAULT_TOLERANCE_POINTS;
use ibqos_text::{Code, Diagnostic, Location, source_text};

use crate::guid_file::{self, GUID_FILE_OPTIONS};
use crate::options;
use crate::partitions::{self, PartitionsError, PartitionsRead};
use crate::qos_policy::{self, PolicyError, PolicyRead};
use crate::settings::{Settings, compare};
use crate::torus_config::{self, DEFAULT_TORUS_CONFIG};
use crate::{conf, native};

/// OpenSM's compiled-in `qos_policy_file` (`OSM_DEFAULT_QOS_POLICY_FILE`, `osm_base.h:258-264`):
/// missing there, the file is simply not used.
pub const DEFAULT_POLICY_FILE: &str = "/etc/opensm/qos-policy.conf";

/// The two configuration formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenSM's `key value` opensm.conf, read exactly as OpenSM 3.3.23 reads it.
    OpenSmConf,
    /// ibqos.toml, the native format.
    NativeToml,
}

impl Format {
    /// `.toml` files are native; anything else is read as opensm.conf.
    pub fn from_path(path: &Path) -> Format {
        match path.extension() {
            Some(ext) if ext == "toml" => Format::NativeToml,
            _ => Format::OpenSmConf,
        }
    }
}

/// A configuration file read into settings.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub format: Format,
    pub settings: Settings,
    /// In reading order; those without a location last.
    pub diagnostics: Vec<Diagnostic>,
    /// Where the file sets each option, by the names [`crate::changed_options`] gives them
    /// (from ibqos.toml, those of `[opensm]` and the strings of `[sm]`).
    pub places: BTreeMap<String, Location>,
    /// The file as text, every byte at its offset (each invalid UTF-8 byte is a `?`).
    pub source: String,
    /// What became of the qos-policy.conf an opensm.conf names ([`load`] only; `None` from
    /// [`load_bytes`] and for ibqos.toml, which carries its policy itself).
    pub policy: Option<PolicyLoad>,
    /// What became of the partitions.conf an opensm.conf names (`partition_config_file`, else
    /// OpenSM's compiled-in path); [`load`] of an opensm.conf only.
    pub partitions: Option<PartitionsLoad>,
    /// What the GUID files the routing options name say about themselves ([`load`] only):
    /// where OpenSM stops reading one, a file it cannot open (placed at the option), and GUIDs
    /// it reads as other numbers. So does the torus-2QoS.conf, when torus-2QoS is listed.
    pub guid_files: Vec<Diagnostic>,
}

/// What became of a qos-policy.conf, as OpenSM's `osm_qos_parse_policy_file`
/// (`osm_qos_parser_y.y:2383-2470`) ends: only [`PolicyLoad::Loaded`] gives a policy; any
/// failure drops the whole file.
#[derive(Debug, Clone)]
pub enum PolicyLoad {
    /// `qos_policy_file (null)`: `ERR AC06: QoS policy file name is empty`.
    NoFileName,
    /// Missing at the compiled-in path: no policy, and no message.
    DefaultMissing,
    /// `ERR AC01: Failed opening QoS policy file <path> - <reason>`.
    Unreadable {
        path: String,
        reason: String,
    },
    /// A syntax or grammar-action error: OpenSM's `ERR AC05` and stderr line.
    Rejected {
        path: String,
        error: PolicyError,
    },
    Loaded {
        path: String,
        read: PolicyRead,
    },
}

impl PolicyLoad {
    /// The diagnostics of the policy file: its warnings, or why it is not used.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            PolicyLoad::NoFileName | PolicyLoad::DefaultMissing => Vec::new(),
            PolicyLoad::Unreadable { path, reason } => vec![
                Diagnostic::error(
                    Code::PolicyUnreadable,
                    format!("ERR AC01: Failed opening QoS policy file {path} - {reason}"),
                )
                .at(Some(Location::whole_file(path.clone())))
                .with_help("OpenSM runs without a QoS policy"),
            ],
            PolicyLoad::Rejected { error, .. } => vec![error.to_diagnostic()],
            PolicyLoad::Loaded { read, .. } => read.diagnostics.clone(),
        }
    }
}

/// Loads the qos-policy.conf `path` names as OpenSM does when QoS is on. (OpenSM opens it only
/// with `qos TRUE`; ibqos reads it whatever `qos` says, so `ibqos check` reports on it.)
pub fn load_policy(path: Option<&str>) -> PolicyLoad {
    let Some(path) = path else {
        return PolicyLoad::NoFileName;
    };
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path == DEFAULT_POLICY_FILE => {
            return PolicyLoad::DefaultMissing;
        }
        Err(e) => {
            return PolicyLoad::Unreadable {
                path: path.to_string(),
                reason: strerror(&e),
            };
        }
    };
    match qos_policy::read(path, &bytes) {
        Ok(read) => PolicyLoad::Loaded {
            path: path.to_string(),
            read,
        },
        Err(error) => PolicyLoad::Rejected {
            path: path.to_string(),
            error,
        },
    }
}

/// OpenSM's compiled-in `partition_config_file` (`OSM_DEFAULT_PARTITION_CONFIG_FILE`,
/// `osm_base.h:231-245`).
pub const DEFAULT_PARTITIONS_FILE: &str = "/etc/opensm/partitions.conf";

/// What became of a partitions.conf, as `osm_prtn_make_partitions` (`osm_prtn.c:386-449`)
/// ends: only [`PartitionsLoad::Loaded`] gives the file's partitions; otherwise OpenSM runs
/// with the default partition ([`ibqos_qos::partitions::Partitions::opensm_default`]).
#[derive(Debug, Clone)]
pub enum PartitionsLoad {
    /// `stat` fails: `Partition configuration <path> is not accessible (<reason>)`, logged at
    /// VERBOSE only, so a missing file is the usual way to run with the default.
    Unreadable {
        path: String,
        reason: String,
    },
    /// A parse error, a crash, or nothing defined: OpenSM logs `Partition configuration in
    /// error; retrying with default config`.
    Rejected {
        path: String,
        error: PartitionsError,
    },
    Loaded {
        path: String,
        read: PartitionsRead,
    },
}

impl PartitionsLoad {
    /// The diagnostics of the partitions file: its warnings, or why it is not used.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            // OpenSM's compiled-in file missing is the ordinary no-partitions setup.
            PartitionsLoad::Unreadable { path, .. } if path == DEFAULT_PARTITIONS_FILE => {
                Vec::new()
            }
            PartitionsLoad::Unreadable { path, reason } => vec![
                Diagnostic::error(
                    Code::PartitionsUnreadable,
                    format!("Partition configuration {path} is not accessible ({reason})"),
                )
                .at(Some(Location::whole_file(path.clone())))
                .with_help("OpenSM runs with the Default partition only (every port full, ipoib)"),
            ],
            PartitionsLoad::Rejected { error, .. } => vec![error.to_diagnostic()],
            PartitionsLoad::Loaded { read, .. } => read.diagnostics.clone(),
        }
    }
}

/// The partitions.conf OpenSM reads with `settings`: `partition_config_file`, or its
/// compiled-in path when that is `(null)` (`osm_prtn.c:396-397`).
pub fn partitions_file(settings: &Settings) -> &str {
    settings
        .opensm
        .get("partition_config_file")
        .map(String::as_str)
        .filter(|path| *path != "(null)")
        .unwrap_or(DEFAULT_PARTITIONS_FILE)
}

/// Loads the partitions.conf at `path` as OpenSM does at each heavy sweep.
pub fn load_partitions(path: &str) -> PartitionsLoad {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            return PartitionsLoad::Unreadable {
                path: path.to_string(),
                reason: strerror(&e),
            };
        }
    };
    match partitions::read(path, &bytes) {
        Ok(read) => PartitionsLoad::Loaded {
            path: path.to_string(),
            read,
        },
        Err(error) => PartitionsLoad::Rejected {
            path: path.to_string(),
            error,
        },
    }
}

/// The reason as C's `strerror` words it (Rust adds " (os error N)").
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

impl Loaded {
    /// Whether the file, or a GUID file its routing options name, has an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .chain(&self.guid_files)
            .any(Diagnostic::is_error)
    }

    /// Routes with the engines `names` lists in place of the file's `routing_engine`, as
    /// OpenSM's `-R` does. OpenSM reads `torus_config` whenever the list it routes with names
    /// torus-2QoS, so the file is read here if `names` lists it and the file's own list did
    /// not; its problems join [`Loaded::guid_files`] as at loading.
    pub fn set_routing_engine(&mut self, names: &str) {
        self.settings.sm.routing_engine = Some(names.to_string());
        if self.settings.torus_config.is_none() {
            load_torus_config(self);
        }
    }
}

/// Why a configuration could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// An ibqos.toml with errors: it is strict, so no settings come out of it.
    #[error("{name} is not a usable ibqos.toml: {}", first_message(.diagnostics))]
    Invalid {
        name: String,
        diagnostics: Vec<Diagnostic>,
    },
}

impl LoadError {
    /// Why, as diagnostics: the file's errors, or one saying it cannot be read.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            LoadError::Read { path, .. } => vec![
                Diagnostic::error(Code::UnreadableFile, self.to_string())
                    .at(Some(Location::whole_file(path.display().to_string()))),
            ],
            LoadError::Invalid { diagnostics, .. } => diagnostics.clone(),
        }
    }
}

fn first_message(diagnostics: &[Diagnostic]) -> String {
    match diagnostics {
        [] => "no reason given".to_string(),
        [only] => only.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

/// Reads `path`, choosing the format by its extension ([`Format::from_path`]).
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let bytes = std::fs::read(path).map_err(|error| LoadError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    let name = path.display().to_string();
    let mut loaded = load_bytes(&name, &bytes, Format::from_path(path))?;
    let native = loaded.format == Format::NativeToml;
    load_guid_files(&mut loaded);
    load_torus_config(&mut loaded);
    // ibqos.toml is strict: a GUID file it names must read to its end.
    if native && loaded.guid_files.iter().any(Diagnostic::is_error) {
        return Err(LoadError::Invalid {
            name,
            diagnostics: loaded.guid_files,
        });
    }
    // ibqos.toml's own [partitions] wins; without it, a partition_config_file it names loads as
    // opensm.conf's does, and must load (ibqos.toml is strict) unless it is OpenSM's default
    // path and absent, the ordinary setup without partitions.
    let named = loaded.settings.opensm.contains_key("partition_config_file");
    if !native || (loaded.settings.partitions.is_none() && named) {
        let mut partitions = load_partitions(partitions_file(&loaded.settings));
        let failed = partitions.diagnostics();
        if native && failed.iter().any(Diagnostic::is_error) {
            return Err(LoadError::Invalid {
                name,
                diagnostics: failed,
            });
        }
        if let PartitionsLoad::Loaded { read, .. } = &mut partitions {
            let settings = &loaded.settings;
            let allow_both = settings
                .opensm
                .get("allow_both_pkeys")
                .is_some_and(|v| v == "TRUE");
            let notes = read.option_notes(settings.qos.enabled, allow_both);
            read.diagnostics.extend(notes);
            loaded.settings.partitions = Some(read.partitions.clone());
        }
        loaded.partitions = Some(partitions);
    }
    let settings = &mut loaded.settings;
    // ibqos.toml's own [qos_policy] wins over its policy_file.
    if native && (settings.qos_policy.is_some() || settings.qos_policy_file.is_none()) {
        return Ok(loaded);
    }
    let mut policy = load_policy(settings.qos_policy_file.as_deref());
    if let PolicyLoad::Loaded { read, .. } = &mut policy {
        if settings.program_policy_setup {
            read.diagnostics
                .retain(|d| d.code != Code::PolicySetupIgnored);
        }
        settings.qos_policy = Some(read.policy.clone());
        settings.qos_setup_places = read.setup_places.clone();
        if settings.program_policy_setup
            && let Err(problems) = read.policy.check_setup()
        {
            return Err(LoadError::Invalid {
                name,
                diagnostics: qos_policy::setup_diagnostics(&problems, &settings.qos_setup_places),
            });
        }
    }
    // ibqos.toml is strict: a policy file it names must load.
    let failed = policy.diagnostics();
    if native && failed.iter().any(Diagnostic::is_error) {
        return Err(LoadError::Invalid {
            name,
            diagnostics: failed,
        });
    }
    loaded.policy = Some(policy);
    Ok(loaded)
}

/// Reads the GUID files the routing options of `loaded` name into its settings. A file that
/// cannot be opened is reported at the option that names it.
fn load_guid_files(loaded: &mut Loaded) {
    for option in GUID_FILE_OPTIONS {
        let settings = &mut loaded.settings;
        let Some(path) = settings.opensm.get(option).filter(|p| *p != options::NULL) else {
            continue;
        };
        let mut file = guid_file::load(option, path);
        for d in &mut file.diagnostics {
            if d.code == Code::GuidFileUnreadable {
                d.location = loaded.places.get(option).cloned().or(d.location.take());
            }
        }
        settings.guid_files.insert(option.to_string(), file.list);
        loaded.guid_files.extend(file.diagnostics);
    }
}

/// Reads the torus-2QoS.conf `torus_config` names (OpenSM's default path when unset) into the
/// settings of `loaded`, when `routing_engine` lists torus-2QoS: OpenSM reads it only then.
/// A list given in place of the file's reads it too ([`Loaded::set_routing_engine`]).
fn load_torus_config(loaded: &mut Loaded) {
    let settings = &mut loaded.settings;
    let listed = settings.sm.routing_engine.as_deref().is_some_and(|names| {
        names
            .split([',', ' ', '\t', '\n'])
            .any(|name| name == TORUS_2QOS)
    });
    if !listed {
        return;
    }
    let path = settings
        .opensm
        .get(TORUS_CONFIG)
        .map_or(DEFAULT_TORUS_CONFIG, String::as_str);
    let mut file = torus_config::load(path);
    for d in &mut file.diagnostics {
        if d.code == Code::TorusConfigUnreadable {
            d.location = loaded
                .places
                .get(TORUS_CONFIG)
                .cloned()
                .or(d.location.take());
        }
    }
    settings.torus_config = Some(file.config);
    loaded.guid_files.extend(file.diagnostics);
}

/// The engine that reads `torus_config`, as `routing_engine` spells it.
const TORUS_2QOS: &str = "torus-2QoS";
const TORUS_CONFIG: &str = "torus_config";

/// Reads `bytes` as a file called `name` (used in locations) of `format`. An opensm.conf always
/// loads, as it does in OpenSM, with errors among the diagnostics; an ibqos.toml with an error
/// does not.
pub fn load_bytes(name: &str, bytes: &[u8], format: Format) -> Result<Loaded, LoadError> {
    let (settings, diagnostics, places) = match format {
        Format::OpenSmConf => conf::read(name, bytes),
        Format::NativeToml => {
            let (settings, places) =
                native::read_placed(name, bytes).map_err(|diagnostics| LoadError::Invalid {
                    name: name.to_string(),
                    diagnostics,
                })?;
            (settings, Vec::new(), places)
        }
    };
    Ok(Loaded {
        format,
        settings,
        diagnostics,
        places,
        source: source_text(bytes),
        policy: None,
        partitions: None,
        guid_files: Vec::new(),
    })
}

/// `s` as an opensm.conf that OpenSM reads back to the same values, formatted as `opensm -c`
/// formats them, with a warning for each value opensm.conf cannot carry (a `#` or a newline in a
/// string, a `(null)` string, a value OpenSM's verify step would replace...).
pub fn to_opensm_conf(s: &Settings) -> (String, Vec<Diagnostic>) {
    let text = conf::write(s);
    let (back, ..) = conf::read("opensm.conf", text.as_bytes());
    let mut diagnostics = compare(s, &back, "opensm.conf");
    if s.program_policy_setup {
        diagnostics.push(Diagnostic::warning(
            Code::NotExpressible,
            "`program_policy_setup` cannot be said in opensm.conf: OpenSM programs nothing \
             from qos-policy.conf's qos-setup",
        ));
    }
    if s.m_key_per_port_secret.is_some() {
        diagnostics.push(Diagnostic::warning(
            Code::NotExpressible,
            "`m_key_per_port_secret` cannot be said in opensm.conf: OpenSM gives every port \
             the one `m_key`",
        ));
    }
    if s.qos_report_tolerance != DEFAULT_TOLERANCE_POINTS {
        diagnostics.push(Diagnostic::warning(
            Code::NotExpressible,
            "`qos_report_tolerance` cannot be said in opensm.conf: OpenSM makes no QoS \
             conformance report",
        ));
    }
    if s.perfmgr_lanes {
        diagnostics.push(Diagnostic::warning(
            Code::NotExpressible,
            "`perfmgr_lanes` cannot be said in opensm.conf: OpenSM's PerfMgr reads no per-VL \
             or per-SL counter",
        ));
    }
    if !s.cc_read_back {
        diagnostics.push(Diagnostic::warning(
            Code::NotExpressible,
            "`cc_read_back = false` cannot be said in opensm.conf: ibqos reads congestion \
             control back there, OpenSM never does",
        ));
    }
    if s.cc_key_program {
        diagnostics.push(Diagnostic::warning(
            Code::NotExpressible,
            "`cc_key_program` cannot be said in opensm.conf: OpenSM never programs `cc_key` \
             into the congestion control agents",
        ));
    }
    (text, diagnostics)
}

/// `s` as ibqos.toml (its policy and partitions as `[qos_policy]` and `[partitions]`), with a
/// warning for each value ibqos.toml cannot say (an encoded `max_op_vls` of 0 or 6-255, a
/// head-of-queue lifetime wider than its field, a NULL log file...).
pub fn to_native_toml(s: &Settings) -> (String, Vec<Diagnostic>) {
    let text = native::write(s);
    let diagnostics = match native::read("ibqos.toml", text.as_bytes()) {
        Ok(back) => {
            let mut losses = compare(s, &back, "ibqos.toml");
            if back.qos_policy != s.qos_policy {
                losses.push(Diagnostic::warning(
                    Code::NotExpressible,
                    "the QoS policy cannot be said exactly in ibqos.toml's [qos_policy]",
                ));
            }
            if back.partitions != s.partitions {
                losses.push(Diagnostic::warning(
                    Code::NotExpressible,
                    "the partitions cannot be said exactly in ibqos.toml's [partitions]",
                ));
            }
            losses
        }
        // The writer only writes what the reader accepts; this is a bug, reported, not hidden.
        Err(errors) => errors
            .into_iter()
            .map(|mut d| {
                d.message = format!(
                    "ibqos wrote an ibqos.toml it cannot read back: {}",
                    d.message
                );
                d
            })
            .collect(),
    };
    (text, diagnostics)
}
