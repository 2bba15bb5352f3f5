//! The typed settings both file formats read into, and the raw option store the opensm.conf
//! reader fills exactly as OpenSM fills its `osm_subn_opt_t`.

use std::collections::BTreeMap;

use ibqos_qos::partitions::Partitions;
use ibqos_qos::policy::QosPolicy;
use ibqos_qos::policy::setup::ScopeId;
use ibqos_qos::promise::DEFAULT_TOLERANCE_POINTS;
use ibqos_qos::{PortClass, QosConfig, QosSet, VlCount};
use ibqos_text::{Code, Diagnostic, Location};

use crate::guid_file::GuidList;
use crate::options::{self, Anchor, Kind, OPTIONS, Parsed, Value};
use crate::tables;
use crate::torus_config::TorusConfig;

/// Everything ibqos takes from a configuration file. [`Settings::default`] is OpenSM 3.3.23's
/// defaults, exactly what `opensm -c` writes with no configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `qos` and the five `qos_*` sets, as OpenSM holds them after reading and verifying.
    pub qos: QosConfig,
    /// `qos_policy_file`; `None` is OpenSM's `(null)`.
    pub qos_policy_file: Option<String>,
    /// The policy that file holds, when it loaded (see [`crate::PolicyLoad`]); from
    /// ibqos.toml, its `[qos_policy]`.
    pub qos_policy: Option<QosPolicy>,
    /// ibqos.toml's `[qos] program_policy_setup`: program the per port group tables of the
    /// policy's `qos-setup` section, which OpenSM parses and ignores. opensm.conf cannot say it.
    pub program_policy_setup: bool,
    /// Where each `qos-setup` scope of the policy is written, for messages.
    pub qos_setup_places: BTreeMap<ScopeId, Location>,
    /// ibqos.toml's `[sm] m_key_per_port_secret`: give every port its own M_Key, derived from
    /// this secret and the port GUID, instead of OpenSM's one `m_key` for the whole subnet.
    /// opensm.conf cannot say it.
    pub m_key_per_port_secret: Option<MKeySecret>,
    /// ibqos.toml's `[sm] perfmgr_lanes`: the performance manager reads the per-VL and per-SL
    /// counters as well. opensm.conf cannot say it.
    pub perfmgr_lanes: bool,
    /// ibqos.toml's `[sm] qos_report_tolerance`: how many percentage points a VL's share of a
    /// port's data may be from what its arbitration promises in the QoS conformance report.
    /// opensm.conf cannot say it.
    pub qos_report_tolerance: u8,
    /// ibqos.toml's `[sm] cc_read_back`: the congestion control manager reads back what it
    /// programs, after its Sets and at each later programming, and Sets again what a port does
    /// not hold. On unless turned off; opensm.conf cannot say it (OpenSM never reads back).
    pub cc_read_back: bool,
    /// ibqos.toml's `[sm] cc_key_program`: the congestion control manager programs `cc_key`
    /// into every agent before its other Sets. opensm.conf cannot say it.
    pub cc_key_program: bool,
    /// ibqos.toml's `[sm] cc_key_protect`: the key is programmed with CC_KeyProtectBit set.
    pub cc_key_protect: bool,
    /// ibqos.toml's `[sm] cc_key_lease_period`: CC_KeyLeasePeriod in seconds.
    pub cc_key_lease_period: u16,
    /// The partitions of the partitions.conf an opensm.conf names (`partition_config_file`),
    /// when it loaded (see [`crate::PartitionsLoad`]); from ibqos.toml, its `[partitions]`.
    pub partitions: Option<Partitions>,
    /// The GUID files the routing options name (`root_guid_file`, ...), keyed by the option,
    /// as [`crate::load`] read them; empty from [`crate::load_bytes`].
    pub guid_files: BTreeMap<String, GuidList>,
    /// The torus-2QoS.conf `torus_config` names, as [`crate::load`] read it when
    /// `routing_engine` lists torus-2QoS; `None` otherwise and from [`crate::load_bytes`].
    pub torus_config: Option<TorusConfig>,
    pub sm: SmSettings,
    pub links: LinkSettings,
    /// Every other option OpenSM recognises that the file sets (or that OpenSM's verify step
    /// changed), keyed by OpenSM's name, with the value text OpenSM accepted. Booleans are
    /// normalised to `TRUE`/`FALSE`, since OpenSM reads anything else as FALSE. The per-SL
    /// congestion-control options (`cc_ca_cong_setting_*`, one value per SL) are keyed
    /// `"<name> <SL>"`, e.g. `"cc_ca_cong_setting_ccti_timer 3"`.
    pub opensm: BTreeMap<String, String>,
}

/// The secret per-port M_Keys are derived from. Its `Debug` shows no byte of it, so that no log
/// or message that prints the settings gives it away.
#[derive(Clone, PartialEq, Eq)]
pub struct MKeySecret(String);

impl MKeySecret {
    /// The fewest bytes a secret may have: 16 bytes is 128 bits if they are random, so that
    /// the keys cannot be found by trying secrets.
    pub const MIN_LEN: usize = 16;

    /// `text` as a secret, or why it cannot be one.
    pub fn new(text: &str) -> Result<MKeySecret, String> {
        if text.len() < Self::MIN_LEN {
            return Err(format!(
                "m_key_per_port_secret has {} bytes; at least {} are needed (e.g. 32 random hex digits)",
                text.len(),
                Self::MIN_LEN
            ));
        }
        Ok(MKeySecret(text.to_string()))
    }

    /// The secret's bytes, for the key derivation only.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl std::fmt::Debug for MKeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MKeySecret(<hidden>)")
    }
}

/// The subnet manager's own options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmSettings {
    /// `guid`: the local port the SM binds to; 0 picks one.
    pub guid: u64,
    /// `subnet_prefix`: the GID prefix of this subnet.
    pub subnet_prefix: u64,
    /// `sm_priority`, 0-15 (OpenSM resets larger values to 0).
    pub priority: u8,
    /// `lmc`, 0-7 (OpenSM resets larger values to 0).
    pub lmc: u8,
    /// `sweep_interval`, seconds; 0 disables periodic light sweeps.
    pub sweep_interval: u32,
    /// `transaction_timeout`, milliseconds per SMP.
    pub transaction_timeout: u32,
    /// `long_transaction_timeout`, milliseconds; OpenSM raises it to `transaction_timeout`.
    pub long_transaction_timeout: u32,
    /// `transaction_retries`.
    pub transaction_retries: u32,
    /// `max_wire_smps`: SMPs outstanding at once; OpenSM turns 0 into 2147483647.
    pub max_wire_smps: u32,
    /// `routing_engine`: a comma-separated list of engines; `None` is OpenSM's default (minhop).
    pub routing_engine: Option<String>,
    /// `sm_sl`: PortInfo.SMSL. OpenSM does not check the file's value (its CLI rejects >15).
    pub sm_sl: u8,
    /// `log_file`.
    pub log_file: Option<String>,
    /// `dump_files_dir`: where OpenSM writes its dumps. OpenSM has no key for its cache
    /// directory (`/var/cache/opensm`, overridden only by the `OSM_CACHE_DIR` environment
    /// variable), so this and `log_file` are the only locations opensm.conf can move.
    pub dump_files_dir: Option<String>,
}

/// What the link manager programs into PortInfo besides QoS tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSettings {
    /// `max_op_vls`: OpenSM's *encoded* OperVLs cap (1 = 1 VL, 2 = 2, 3 = 4, 4 = 8, 5 = 15), not
    /// a count; see [`LinkSettings::oper_vls_cap`].
    pub max_op_vls: u8,
    /// `head_of_queue_lifetime`, switch ports facing switches; a 5-bit field when programmed.
    pub head_of_queue_lifetime: u8,
    /// `leaf_head_of_queue_lifetime`, switch ports facing CAs or routers, and router ports.
    pub leaf_head_of_queue_lifetime: u8,
    /// `vl_stall_count`, switch ports facing switches; a 3-bit field when programmed.
    pub vl_stall_count: u8,
    /// `leaf_vl_stall_count`, switch ports facing CAs or routers.
    pub leaf_vl_stall_count: u8,
    /// `use_optimized_slvl`: one SL2VL MAD per switch where the switch supports it.
    pub use_optimized_slvl: bool,
}

impl LinkSettings {
    /// The OperVLs cap OpenSM applies (`osm_port.c:239-296`): encodings 1-5 are exact, 6-255 cap
    /// nothing (the same as 15 VLs), and 0 makes OpenSM program OperVLs 0 (`None`).
    pub fn oper_vls_cap(&self) -> Option<VlCount> {
        match self.max_op_vls {
            0 => None,
            encoding => Some(VlCount::from_encoding(encoding).unwrap_or(VlCount::Fifteen)),
        }
    }
}

impl Settings {
    /// A number option kept under [`Settings::opensm`], as OpenSM's `strtoul` reads its
    /// accepted text (base 0: `0x` is hex, a leading `0` octal); `None` when the file does not
    /// set it.
    pub fn opensm_uint(&self, key: &str) -> Option<u64> {
        self.opensm
            .get(key)
            .map(|text| ibqos_text::cnum::strtoull(text.as_bytes()))
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Store::defaults().to_settings(&mut Vec::new())
    }
}

/// A typed field's conversion to and from OpenSM's value.
trait OptField: Sized {
    fn to_value(&self) -> Value;
    fn from_value(value: &Value) -> Option<Self>;
}

impl OptField for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
    fn from_value(value: &Value) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

macro_rules! uint_field {
    ($($t:ty),*) => {$(
        impl OptField for $t {
            fn to_value(&self) -> Value {
                Value::Uint(u64::from(*self))
            }
            fn from_value(value: &Value) -> Option<$t> {
                match value {
                    Value::Uint(v) => <$t>::try_from(*v).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
uint_field!(u8, u32, u64);

impl OptField for Option<String> {
    fn to_value(&self) -> Value {
        Value::Str(self.clone())
    }
    fn from_value(value: &Value) -> Option<Option<String>> {
        match value {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }
}

/// The typed options: OpenSM key => field of [`Settings`]. Everything else is either a QoS set
/// field ([`QosField`]) or passed through verbatim.
macro_rules! typed_options {
    ($($key:literal => $($field:ident).+;)*) => {
        /// The keys with a typed field.
        pub(crate) const TYPED_KEYS: &[&str] = &[$($key),*];

        /// The value of typed option `key`.
        fn typed_value(s: &Settings, key: &str) -> Option<Value> {
            match key {
                $($key => Some(s.$($field).+.to_value()),)*
                _ => None,
            }
        }

        /// Sets the field of typed option `key` (one of [`TYPED_KEYS`]) from `value`, if the
        /// value has the field's type.
        fn set_typed(s: &mut Settings, key: &str, value: &Value) {
            match key {
                $($key => {
                    if let Some(v) = OptField::from_value(value) {
                        s.$($field).+ = v;
                    }
                })*
                _ => {}
            }
        }
    };
}

typed_options! {
    "guid" => sm.guid;
    "subnet_prefix" => sm.subnet_prefix;
    "lmc" => sm.lmc;
    "sm_sl" => sm.sm_sl;
    "vl_stall_count" => links.vl_stall_count;
    "leaf_vl_stall_count" => links.leaf_vl_stall_count;
    "head_of_queue_lifetime" => links.head_of_queue_lifetime;
    "leaf_head_of_queue_lifetime" => links.leaf_head_of_queue_lifetime;
    "max_op_vls" => links.max_op_vls;
    "sweep_interval" => sm.sweep_interval;
    "routing_engine" => sm.routing_engine;
    "sm_priority" => sm.priority;
    "max_wire_smps" => sm.max_wire_smps;
    "transaction_timeout" => sm.transaction_timeout;
    "transaction_retries" => sm.transaction_retries;
    "long_transaction_timeout" => sm.long_transaction_timeout;
    "use_optimized_slvl" => links.use_optimized_slvl;
    "log_file" => sm.log_file;
    "dump_files_dir" => sm.dump_files_dir;
    "qos" => qos.enabled;
    "qos_policy_file" => qos_policy_file;
}

/// The five fields of a QoS set, in OpenSM's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QosField {
    MaxVls,
    HighLimit,
    VlArbHigh,
    VlArbLow,
    Sl2Vl,
}

impl QosField {
    pub const ALL: [QosField; 5] = [
        QosField::MaxVls,
        QosField::HighLimit,
        QosField::VlArbHigh,
        QosField::VlArbLow,
        QosField::Sl2Vl,
    ];

    /// The end of the OpenSM key and the field name in ibqos.toml.
    pub const fn name(self) -> &'static str {
        match self {
            QosField::MaxVls => "max_vls",
            QosField::HighLimit => "high_limit",
            QosField::VlArbHigh => "vlarb_high",
            QosField::VlArbLow => "vlarb_low",
            QosField::Sl2Vl => "sl2vl",
        }
    }
}

/// The generic set (`None`) and the four port classes, in OpenSM's order.
pub(crate) const QOS_SETS: [Option<PortClass>; 5] = [
    None,
    Some(PortClass::Ca),
    Some(PortClass::Sw0),
    Some(PortClass::Swe),
    Some(PortClass::Rtr),
];

/// `qos` or `qos_<class>`: the prefix of a set's keys and of OpenSM's messages about it.
pub(crate) fn qos_prefix(class: Option<PortClass>) -> String {
    class.map_or_else(|| "qos".to_string(), |c| format!("qos_{}", c.name()))
}

pub(crate) fn qos_key(class: Option<PortClass>, field: QosField) -> String {
    format!("{}_{}", qos_prefix(class), field.name())
}

/// Which set and field an OpenSM key names, if it is a QoS set key.
pub(crate) fn parse_qos_key(key: &str) -> Option<(Option<PortClass>, QosField)> {
    let rest = key.strip_prefix("qos_")?;
    let (class, field) = PortClass::ALL
        .into_iter()
        .find_map(|c| {
            let field = rest.strip_prefix(c.name())?.strip_prefix('_')?;
            Some((Some(c), field))
        })
        .unwrap_or((None, rest));
    QosField::ALL
        .into_iter()
        .find(|f| f.name() == field)
        .map(|f| (class, f))
}

pub(crate) fn qos_set(q: &QosConfig, class: Option<PortClass>) -> &QosSet {
    class.map_or(&q.generic, |c| q.set(c))
}

pub(crate) fn qos_set_mut(q: &mut QosConfig, class: Option<PortClass>) -> &mut QosSet {
    match class {
        Some(c) => q.set_mut(c),
        None => &mut q.generic,
    }
}

/// One option as a file states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    /// OpenSM's key; `"<name> <SL>"` for a per-SL option.
    pub key: String,
    /// The value as opensm.conf writes it (before quoting).
    pub text: String,
    /// The value for a message: unambiguous (strings quoted, unset said so).
    pub shown: String,
}

/// `shown` for a value: strings quoted so that `"(null)"` and NULL differ.
fn shown_value(value: &Value, text: &str) -> String {
    match value {
        Value::Str(Some(s)) => format!("{s:?}"),
        Value::Raw(s) => format!("{s:?}"),
        _ => text.to_string(),
    }
}

/// The QoS set field's value: the file text (OpenSM's "unset" spelling when unset) and `shown`.
fn qos_field(set: &QosSet, field: QosField) -> (String, String) {
    let text = match field {
        QosField::MaxVls => set.max_vls.map(|v| v.to_string()),
        QosField::HighLimit => set.high_limit.map(|v| v.to_string()),
        QosField::VlArbHigh => set.vlarb_high.as_ref().map(tables::format_vlarb),
        QosField::VlArbLow => set.vlarb_low.as_ref().map(tables::format_vlarb),
        QosField::Sl2Vl => set.sl2vl.as_ref().map(tables::format_sl2vl),
    };
    match text {
        Some(t) => (t.clone(), t),
        None => {
            let unset = match field {
                QosField::MaxVls => "0",
                QosField::HighLimit => "-1",
                _ => options::NULL,
            };
            (unset.to_string(), "unset".to_string())
        }
    }
}

/// Every option of `s` that opensm.conf can hold, in `opensm -c` order.
pub(crate) fn fields(s: &Settings) -> Vec<Field> {
    let mut out = Vec::new();
    for spec in &OPTIONS {
        let key = spec.key;
        if let Some(value) = typed_value(s, key) {
            let text = value.render(spec);
            out.push(Field {
                key: key.to_string(),
                shown: shown_value(&value, &text),
                text,
            });
        } else if let Some((class, field)) = parse_qos_key(key) {
            let (text, shown) = qos_field(qos_set(&s.qos, class), field);
            out.push(Field {
                key: key.to_string(),
                text,
                shown,
            });
        } else {
            let prefix = format!("{key} ");
            let keys: Vec<&String> = match spec.kind {
                Kind::PerSl(_) => s.opensm.keys().filter(|k| k.starts_with(&prefix)).collect(),
                _ => s
                    .opensm
                    .get_key_value(key)
                    .map(|(k, _)| k)
                    .into_iter()
                    .collect(),
            };
            for k in keys {
                let text = s.opensm[k].clone();
                out.push(Field {
                    key: k.clone(),
                    shown: format!("{text:?}"),
                    text,
                });
            }
        }
    }
    out
}

/// `key -> shown` for everything in `s`, passthrough entries opensm.conf cannot hold included:
/// what a conversion compares to find what it lost.
pub(crate) fn describe(s: &Settings) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> =
        fields(s).into_iter().map(|f| (f.key, f.shown)).collect();
    for (k, v) in &s.opensm {
        map.entry(k.clone()).or_insert_with(|| format!("{v:?}"));
    }
    map
}

/// One option whose value differs between two configurations: a line of what a reload applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionChange {
    /// OpenSM's name of the option; `[qos_policy]`, `[partitions]`, `program_policy_setup`,
    /// `m_key_per_port_secret`, `perfmgr_lanes`, `qos_report_tolerance` or a `cc_read_back`,
    /// `cc_key_program`, `cc_key_protect`, `cc_key_lease_period` for what the policy file, the
    /// partitions file or ibqos.toml alone say.
    pub key: String,
    /// The value before, as a message shows it (strings quoted, `unset` for an unset QoS field).
    pub old: String,
    /// The value after.
    pub new: String,
}

/// Every option whose value differs from `old` to `new`, in key order, the contents of the QoS
/// policy and of the partitions included (a file re-read with the same name can say something
/// else). An option the file no longer sets counts as its default, as OpenSM writes it.
pub fn changed_options(old: &Settings, new: &Settings) -> Vec<OptionChange> {
    let shown = |map: &BTreeMap<String, String>, key: &str| {
        map.get(key).cloned().unwrap_or_else(|| {
            let base = key.split(' ').next().unwrap_or(key);
            OPTIONS
                .iter()
                .find(|spec| spec.key == base)
                .map_or_else(|| "unset".to_string(), |spec| format!("{:?}", spec.default))
        })
    };
    let (a, b) = (describe(old), describe(new));
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut changes: Vec<OptionChange> = keys
        .into_iter()
        .map(|key| OptionChange {
            key: key.clone(),
            old: shown(&a, key),
            new: shown(&b, key),
        })
        .filter(|change| change.old != change.new)
        .collect();
    let mut whole = |key: &str, differs: bool, what: &str| {
        if differs {
            changes.push(OptionChange {
                key: key.to_string(),
                old: format!("the {what} before"),
                new: format!("a different {what}"),
            });
        }
    };
    whole("[qos_policy]", old.qos_policy != new.qos_policy, "policy");
    whole(
        "[partitions]",
        old.partitions != new.partitions,
        "set of partitions",
    );
    whole(
        "m_key_per_port_secret",
        old.m_key_per_port_secret != new.m_key_per_port_secret,
        "secret",
    );
    for (key, old, new) in [
        (
            "program_policy_setup",
            old.program_policy_setup,
            new.program_policy_setup,
        ),
        ("perfmgr_lanes", old.perfmgr_lanes, new.perfmgr_lanes),
        ("cc_read_back", old.cc_read_back, new.cc_read_back),
        ("cc_key_program", old.cc_key_program, new.cc_key_program),
        ("cc_key_protect", old.cc_key_protect, new.cc_key_protect),
    ] {
        if old != new {
            changes.push(OptionChange {
                key: key.to_string(),
                old: old.to_string(),
                new: new.to_string(),
            });
        }
    }
    for (key, old, new) in [
        (
            "qos_report_tolerance",
            u16::from(old.qos_report_tolerance),
            u16::from(new.qos_report_tolerance),
        ),
        (
            "cc_key_lease_period",
            old.cc_key_lease_period,
            new.cc_key_lease_period,
        ),
    ] {
        if old != new {
            changes.push(OptionChange {
                key: key.to_string(),
                old: old.to_string(),
                new: new.to_string(),
            });
        }
    }
    changes
}

/// Every option name OpenSM 3.3.23 recognises, in the order `opensm -c` writes them.
pub fn option_names() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().map(|spec| spec.key)
}

/// Warnings for everything in `ours` that reads back differently from `target`.
pub(crate) fn compare(ours: &Settings, back: &Settings, target: &str) -> Vec<Diagnostic> {
    let (a, b) = (describe(ours), describe(back));
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            // Values can be long: a message stays one readable line.
            let show = |v: Option<&String>| match v {
                None => "absent".to_string(),
                Some(v) => match v.char_indices().nth(80) {
                    Some((cut, _)) => format!("{}...", &v[..cut]),
                    None => v.clone(),
                },
            };
            Diagnostic::warning(
                Code::NotExpressible,
                format!(
                    "`{k}` = {} cannot be said exactly in {target}: it reads back as {}",
                    show(a.get(k)),
                    show(b.get(k))
                ),
            )
        })
        .collect()
}

/// One option as OpenSM holds it while reading a file.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub value: Value,
    /// The text ibqos keeps for a passthrough option.
    pub text: String,
    /// The value bytes as read: VLArb and SL2VL tables are parsed from these.
    pub raw: Vec<u8>,
    /// The value in the file that set it.
    pub origin: Option<Anchor>,
    /// Set by the file, or changed by OpenSM's verify step: not merely the default.
    pub set: bool,
}

/// OpenSM's `osm_subn_opt_t` as the reader fills it: one slot per option of [`OPTIONS`], plus
/// the per-SL congestion-control entries.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub slots: Vec<Slot>,
    pub per_sl: BTreeMap<(usize, u8), Slot>,
}

impl Store {
    /// OpenSM's defaults (`osm_subn_set_default_opt`), taken from the `opensm -c` texts.
    pub fn defaults() -> Store {
        let slots = OPTIONS
            .iter()
            .map(|spec| {
                let raw = spec.default.as_bytes();
                let Parsed { value, text } =
                    options::parse_value(spec.key, spec.kind, raw, None, &mut Vec::new())
                        .unwrap_or(Parsed {
                            value: Value::Raw(spec.default.to_string()),
                            text: spec.default.to_string(),
                        });
                Slot {
                    value,
                    text,
                    raw: raw.to_vec(),
                    origin: None,
                    set: false,
                }
            })
            .collect();
        Store {
            slots,
            per_sl: BTreeMap::new(),
        }
    }

    pub fn slot(&self, key: &str) -> Option<&Slot> {
        options::index(key).map(|i| &self.slots[i])
    }

    pub fn value(&self, key: &str) -> Option<&Value> {
        self.slot(key).map(|s| &s.value)
    }

    pub fn uint(&self, key: &str) -> Option<u64> {
        match self.value(key)? {
            Value::Uint(v) => Some(*v),
            _ => None,
        }
    }

    pub fn boolean(&self, key: &str) -> bool {
        matches!(self.value(key), Some(Value::Bool(true)))
    }

    /// Where the file sets each option, by the names [`changed_options`] gives them.
    pub fn places(&self) -> BTreeMap<String, Location> {
        let named = OPTIONS
            .iter()
            .zip(&self.slots)
            .map(|(spec, slot)| (spec.key.to_string(), slot));
        let per_sl = self
            .per_sl
            .iter()
            .map(|((i, sl), slot)| (format!("{} {sl}", OPTIONS[*i].key), slot));
        named
            .chain(per_sl)
            .filter_map(|(key, slot)| Some((key, slot.origin.as_ref()?.whole())))
            .collect()
    }

    pub fn origin(&self, key: &str) -> Option<&Anchor> {
        self.slot(key).and_then(|s| s.origin.as_ref())
    }

    /// Replaces a value the way OpenSM's verify step does.
    pub fn replace(&mut self, key: &str, value: Value) {
        if let Some(i) = options::index(key) {
            let text = value.render(&OPTIONS[i]);
            let slot = &mut self.slots[i];
            slot.raw = text.clone().into_bytes();
            slot.text = text;
            slot.value = value;
            slot.set = true;
        }
    }

    /// The typed settings. VLArb and SL2VL strings are parsed here, as `qos_build_config`
    /// parses them, and report what they lose; values OpenSM would hold but that mean "unset"
    /// to `qos_build_config` (`max_vls` 0 or above 15, `high_limit` outside 0-255) become `None`.
    pub fn to_settings(&self, diags: &mut Vec<Diagnostic>) -> Settings {
        let mut s = blank();
        for (spec, slot) in OPTIONS.iter().zip(&self.slots) {
            let key = spec.key;
            if TYPED_KEYS.contains(&key) {
                set_typed(&mut s, key, &slot.value);
                continue;
            }
            if let Some((class, field)) = parse_qos_key(key) {
                let origin = slot.origin.as_ref();
                let set = qos_set_mut(&mut s.qos, class);
                match (field, &slot.value) {
                    (QosField::MaxVls, Value::Uint(v)) => {
                        set.max_vls = u8::try_from(*v).ok().filter(|v| (1..=15).contains(v));
                    }
                    (QosField::HighLimit, Value::Int(v)) => {
                        set.high_limit = u8::try_from(*v).ok();
                    }
                    (QosField::VlArbHigh | QosField::VlArbLow, Value::Str(Some(_))) => {
                        let table = tables::parse_vlarb(key, &slot.raw, origin, diags);
                        if field == QosField::VlArbHigh {
                            set.vlarb_high = Some(table);
                        } else {
                            set.vlarb_low = Some(table);
                        }
                    }
                    (QosField::Sl2Vl, Value::Str(Some(_))) => {
                        set.sl2vl = Some(tables::parse_sl2vl(key, &slot.raw, origin, diags));
                    }
                    _ => {}
                }
                continue;
            }
            if slot.set {
                s.opensm.insert(key.to_string(), slot.text.clone());
            }
        }
        for ((i, sl), slot) in &self.per_sl {
            s.opensm
                .insert(format!("{} {sl}", OPTIONS[*i].key), slot.text.clone());
        }
        s
    }
}

/// A starting point whose typed fields [`Store::to_settings`] all overwrite.
fn blank() -> Settings {
    Settings {
        qos: QosConfig::default(),
        qos_policy_file: None,
        qos_policy: None,
        program_policy_setup: false,
        qos_setup_places: BTreeMap::new(),
        m_key_per_port_secret: None,
        perfmgr_lanes: false,
        qos_report_tolerance: DEFAULT_TOLERANCE_POINTS,
        cc_read_back: true,
        cc_key_program: false,
        cc_key_protect: false,
        cc_key_lease_period: 0,
        partitions: None,
        guid_files: BTreeMap::new(),
        torus_config: None,
        sm: SmSettings {
            guid: 0,
            subnet_prefix: 0,
            priority: 0,
            lmc: 0,
            sweep_interval: 0,
            transaction_timeout: 0,
            long_transaction_timeout: 0,
            transaction_retries: 0,
            max_wire_smps: 0,
            routing_engine: None,
            sm_sl: 0,
            log_file: None,
            dump_files_dir: None,
        },
        links: LinkSettings {
            max_op_vls: 0,
            head_of_queue_lifetime: 0,
            leaf_head_of_queue_lifetime: 0,
            vl_stall_count: 0,
            leaf_vl_stall_count: 0,
            use_optimized_slvl: false,
        },
        opensm: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_keys_are_opensm_keys() {
        for key in TYPED_KEYS {
            assert!(options::index(key).is_some(), "{key}");
        }
        for class in QOS_SETS {
            for field in QosField::ALL {
                let key = qos_key(class, field);
                assert!(options::index(&key).is_some(), "{key}");
                assert_eq!(parse_qos_key(&key), Some((class, field)));
            }
        }
    }

    #[test]
    fn defaults_are_opensm_defaults() {
        let s = Settings::default();
        assert_eq!(s.sm.subnet_prefix, 0xfe80_0000_0000_0000);
        assert_eq!(s.sm.transaction_timeout, 200);
        assert_eq!(s.sm.long_transaction_timeout, 500);
        assert_eq!(s.sm.max_wire_smps, 4);
        assert_eq!(s.sm.log_file.as_deref(), Some("/var/log/opensm.log"));
        assert_eq!(s.links.max_op_vls, 5);
        assert_eq!(s.links.head_of_queue_lifetime, 0x12);
        assert_eq!(
            s.qos_policy_file.as_deref(),
            Some("/etc/opensm/qos-policy.conf")
        );
        assert!(!s.qos.enabled);
        assert_eq!(s.qos, QosConfig::default());
        assert!(s.opensm.is_empty());
    }

    #[test]
    fn oper_vls_cap() {
        let mut links = Settings::default().links;
        let caps: Vec<Option<u8>> = [0, 1, 3, 5, 6, 255]
            .into_iter()
            .map(|e| {
                links.max_op_vls = e;
                links.oper_vls_cap().map(|c| c.count())
            })
            .collect();
        assert_eq!(
            caps,
            vec![None, Some(1), Some(4), Some(15), Some(15), Some(15)]
        );
    }
}
