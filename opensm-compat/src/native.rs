//! ibqos.toml, the native configuration: the same settings in plain terms (VL counts, tables as
//! lists), strict where opensm.conf is lenient, every error pointing at its place.
//!
//! ```toml
//! [qos]
//! enabled = true
//! [qos.ca]
//! high_limit = 6
//! vlarb_high = [{ vl = 0, weight = 4 }]
//! sl2vl = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]
//! [links]
//! max_op_vls = 8
//! [opensm]
//! sminfo_polling_timeout = 10000
//! ```

use std::collections::BTreeMap;
use std::fmt;

use ibqos_mad::Guid;
use ibqos_qos::promise::DEFAULT_TOLERANCE_POINTS;
use ibqos_qos::{PortClass, QosSet, Sl2VlTable, Vl, VlArbEntry, VlArbTable, VlCount};
use ibqos_text::{Code, Diagnostic, Location, MAX_PER_CODE, Severity, cnum};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;

use crate::conf::{self, Places};
use crate::native_partitions::{self, NativePartitions};
use crate::native_policy::{self, NativePolicy, toml_str};
use crate::options::{self, Anchor, Kind, OPTIONS, U64};
use crate::qos_policy;
use crate::settings::{
    MKeySecret, QOS_SETS, QosField, Settings, TYPED_KEYS, parse_qos_key, qos_set, qos_set_mut,
};

/// Integers with a range, each with a message that says what the number is.
macro_rules! ranged {
    ($($name:ident: $t:ty = $min:literal..=$max:literal, $what:literal;)*) => {$(
        #[derive(Debug, Clone, Copy, Deserialize)]
        #[serde(try_from = "i64")]
        struct $name($t);

        impl TryFrom<i64> for $name {
            type Error = String;
            fn try_from(v: i64) -> Result<$name, String> {
                <$t>::try_from(v)
                    .ok()
                    .filter(|v| ($min..=$max).contains(v))
                    .map($name)
                    .ok_or_else(|| format!("{v} is out of range {}-{}: {}", $min, $max, $what))
            }
        }
    )*};
}

ranged! {
    MaxVls: u8 = 1..=15, "max_vls is a number of VLs (OpenSM's 0 means unset: leave the key out)";
    HighLimit: u8 = 0..=255, "high_limit is PortInfo.VLHighLimit, in 4 KB units";
    DataVl: u8 = 0..=14, "a VLArb entry names a data VL (VL15 is never arbitrated)";
    Weight: u8 = 0..=255, "a VLArb weight is 8 bits, in 64-byte units";
    SlVl: u8 = 0..=15, "an SL2VL entry is a VL (15 drops the SL)";
    Priority: u8 = 0..=15, "sm priority is 4 bits";
    Lmc: u8 = 0..=7, "lmc is 3 bits";
    SmSl: u8 = 0..=15, "sm_sl is an SL";
    HoqLife: u8 = 0..=31, "the head-of-queue lifetime is a 5-bit PortInfo field";
    StallCount: u8 = 0..=7, "the VL stall count is a 3-bit PortInfo field";
    WireSmps: u32 = 1..=2147483647, "max_wire_smps is how many SMPs may be outstanding";
}

/// A VL count, 1, 2, 4, 8 or 15 (OpenSM's `max_op_vls` holds the PortInfo encoding instead).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "i64")]
struct OperVls(VlCount);

impl TryFrom<i64> for OperVls {
    type Error = String;
    fn try_from(v: i64) -> Result<OperVls, String> {
        let count = u32::try_from(v).unwrap_or(0);
        VlCount::from_count(count)
            .map(OperVls)
            .map_err(|e| format!("max_op_vls: {e}"))
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    vl: DataVl,
    weight: Weight,
}

/// A VLArb table: at most 64 entries; the rest are `0:0`.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "Vec<Entry>")]
struct VlArbList(VlArbTable);

impl TryFrom<Vec<Entry>> for VlArbList {
    type Error = String;
    fn try_from(entries: Vec<Entry>) -> Result<VlArbList, String> {
        if entries.len() > ibqos_qos::VLARB_TABLE_ENTRIES {
            return Err(format!(
                "{} entries: a VLArb table has at most 64",
                entries.len()
            ));
        }
        let entries: Vec<VlArbEntry> = entries
            .iter()
            .map(|e| VlArbEntry::new(e.vl.0, e.weight.0))
            .collect();
        Ok(VlArbList(VlArbTable::from_entries(&entries)))
    }
}

/// An SL2VL table: exactly one VL per SL.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "Vec<SlVl>")]
struct Sl2VlList(Sl2VlTable);

impl TryFrom<Vec<SlVl>> for Sl2VlList {
    type Error = String;
    fn try_from(vls: Vec<SlVl>) -> Result<Sl2VlList, String> {
        let vls: [SlVl; 16] = vls.try_into().map_err(|v: Vec<SlVl>| {
            format!("{} VLs: sl2vl lists exactly 16, one per SL", v.len())
        })?;
        Ok(Sl2VlList(Sl2VlTable(vls.map(|v| Vl::from_nibble(v.0)))))
    }
}

/// A string, integer or boolean, kept as the text OpenSM would read (booleans as TRUE/FALSE).
#[derive(Debug, Clone)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, an integer or a boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
                Ok(Text(options::bool_text(v).to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeFile {
    #[serde(default)]
    qos: NativeQos,
    #[serde(default)]
    sm: NativeSm,
    #[serde(default)]
    links: NativeLinks,
    #[serde(default)]
    opensm: BTreeMap<Spanned<String>, Spanned<Text>>,
    qos_policy: Option<Spanned<NativePolicy>>,
    partitions: Option<NativePartitions>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeQos {
    enabled: Option<bool>,
    policy_file: Option<String>,
    program_policy_setup: Option<bool>,
    default: Option<NativeSet>,
    ca: Option<NativeSet>,
    sw0: Option<NativeSet>,
    swe: Option<NativeSet>,
    rtr: Option<NativeSet>,
}

impl NativeQos {
    fn set(&self, class: Option<PortClass>) -> Option<&NativeSet> {
        match class {
            None => self.default.as_ref(),
            Some(PortClass::Ca) => self.ca.as_ref(),
            Some(PortClass::Sw0) => self.sw0.as_ref(),
            Some(PortClass::Swe) => self.swe.as_ref(),
            Some(PortClass::Rtr) => self.rtr.as_ref(),
        }
    }
}

/// The section name of a set: `default` for the generic one.
fn section(class: Option<PortClass>) -> &'static str {
    class.map_or("default", PortClass::name)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeSet {
    max_vls: Option<MaxVls>,
    high_limit: Option<HighLimit>,
    vlarb_high: Option<VlArbList>,
    vlarb_low: Option<VlArbList>,
    sl2vl: Option<Sl2VlList>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeSm {
    guid: Option<Spanned<Text>>,
    subnet_prefix: Option<Spanned<Text>>,
    priority: Option<Priority>,
    lmc: Option<Lmc>,
    sweep_interval: Option<u32>,
    transaction_timeout: Option<u32>,
    long_transaction_timeout: Option<Spanned<u32>>,
    transaction_retries: Option<u32>,
    max_wire_smps: Option<WireSmps>,
    routing_engine: Option<Spanned<String>>,
    sm_sl: Option<SmSl>,
    log_file: Option<Spanned<String>>,
    dump_files_dir: Option<Spanned<String>>,
    m_key_per_port_secret: Option<Spanned<String>>,
    perfmgr_lanes: Option<bool>,
    qos_report_tolerance: Option<Spanned<u8>>,
    cc_read_back: Option<bool>,
    cc_key_program: Option<Spanned<bool>>,
    cc_key_protect: Option<Spanned<bool>>,
    cc_key_lease_period: Option<Spanned<i64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeLinks {
    max_op_vls: Option<OperVls>,
    head_of_queue_lifetime: Option<HoqLife>,
    leaf_head_of_queue_lifetime: Option<HoqLife>,
    vl_stall_count: Option<StallCount>,
    leaf_vl_stall_count: Option<StallCount>,
    use_optimized_slvl: Option<bool>,
}

/// Collects errors with their places in the source, and where the file sets the options
/// [`changed_options`](crate::changed_options) names.
struct Errors<'a> {
    name: &'a str,
    source: &'a [u8],
    list: Vec<Diagnostic>,
    places: Places,
}

impl Errors<'_> {
    fn at(&self, span: std::ops::Range<usize>) -> Location {
        Location::in_source(self.name, self.source, span.start, span.end)
    }

    fn push(&mut self, span: std::ops::Range<usize>, message: String, help: Option<String>) {
        let mut d = Diagnostic::error(Code::InvalidNative, message).at(Some(self.at(span)));
        d.help = help;
        self.list.push(d);
    }
}

/// Reads ibqos.toml. `Err` holds the errors (with places) when the file cannot be used.
pub(crate) fn read(name: &str, bytes: &[u8]) -> Result<Settings, Vec<Diagnostic>> {
    read_placed(name, bytes).map(|(settings, _)| settings)
}

/// [`read`], with where the file sets each option of `[opensm]` and the strings of `[sm]`.
pub(crate) fn read_placed(name: &str, bytes: &[u8]) -> Result<(Settings, Places), Vec<Diagnostic>> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        vec![
            Diagnostic::error(Code::NotUtf8, "ibqos.toml must be UTF-8 text")
                .at(Some(Location::in_source(name, bytes, at, at + 1))),
        ]
    })?;
    let (file, found) = parse(name, bytes, text)?;
    let mut errors = Errors {
        name,
        source: bytes,
        list: found,
        places: Places::new(),
    };
    let settings = build(file, &mut errors);
    if errors.list.is_empty() {
        Ok((settings, errors.places))
    } else {
        Err(conf::finish(errors.list))
    }
}

/// The file's sections, with the errors of the entries left out of them. serde stops at the first
/// error. So each error's entry (the innermost `key = value` whose key or value holds it) is taken
/// out of the document, and the rest read again. That repeats until nothing more is wrong. Every
/// entry with an error is reported once, however many there are, and [`build`] still checks the
/// rest. `Err` when there is nothing left to read: a syntax error, an error at no entry, or
/// [`MAX_PER_CODE`] errors.
fn parse(
    name: &str,
    bytes: &[u8],
    text: &str,
) -> Result<(NativeFile, Vec<Diagnostic>), Vec<Diagnostic>> {
    let diagnostic = |e: &toml::de::Error| {
        let span = e.span().unwrap_or(0..0);
        Diagnostic::error(Code::InvalidNative, plain_message(e.message()))
            .at(Some(Location::in_source(name, bytes, span.start, span.end)))
    };
    let (mut document, syntax) = toml::de::DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        return Err(conf::finish(syntax.iter().map(diagnostic).collect()));
    }
    let mut found = Vec::new();
    loop {
        let error = match NativeFile::deserialize(toml::de::Deserializer::from(document.clone())) {
            Ok(file) => return Ok((file, found)),
            Err(error) => error,
        };
        found.push(diagnostic(&error));
        // Each pass reads the whole document again: a bound keeps a file of thousands of bad
        // entries from taking minutes.
        if found.len() == MAX_PER_CODE {
            found.push(Diagnostic::note(
                Code::TooManyDiagnostics,
                format!("reading stopped at the first {MAX_PER_CODE} errors"),
            ));
            return Err(conf::finish(found));
        }
        let taken_out = error
            .span()
            .is_some_and(|span| take_out(document.get_mut(), &span));
        if !taken_out {
            return Err(conf::finish(found));
        }
    }
}

/// Removes the innermost entry of `table` whose key or value holds `span`; whether there was one.
fn take_out(table: &mut toml::de::DeTable<'_>, span: &std::ops::Range<usize>) -> bool {
    let holds = |outer: std::ops::Range<usize>| outer.start <= span.start && span.end <= outer.end;
    for (_, value) in table.iter_mut() {
        if let toml::de::DeValue::Table(inner) = value.get_mut()
            && take_out(inner, span)
        {
            return true;
        }
    }
    let key = table
        .iter()
        .find(|(key, value)| holds(key.span()) || holds(value.span()))
        .map(|(key, _)| key.clone());
    key.is_some_and(|key| table.remove(&key).is_some())
}

/// serde's message in the words of the file: the Rust types it names (`u8`, `i64`, `struct
/// NativeSm`...) said as what the key accepts.
fn plain_message(message: &str) -> String {
    const WORDS: [(&str, &str); 9] = [
        (
            " as i128, expected i64",
            ", expected a number that fits in 64 bits",
        ),
        ("expected i64", "expected a whole number"),
        (
            "expected u64",
            "expected a whole number from 0 to 18446744073709551615",
        ),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected a table"),
        ("expected a borrowed string", "expected a string"),
    ];
    let mut plain = message.trim_end().replace('\n', "; ");
    for (rust, words) in WORDS {
        plain = plain.replace(rust, words);
    }
    // `expected struct NativeQos`: every struct of the file is a table.
    while let Some(at) = plain.find("expected struct ") {
        let name = &plain[at + "expected struct ".len()..];
        let end = name
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(name.len());
        let cut = at + "expected struct ".len() + end;
        plain.replace_range(at..cut, "expected a table");
    }
    plain
}

/// The settings a parsed file describes, over OpenSM's defaults.
fn build(file: NativeFile, errors: &mut Errors<'_>) -> Settings {
    let mut s = Settings::default();
    let q = &file.qos;
    s.qos.enabled = q.enabled.unwrap_or(s.qos.enabled);
    if let Some(p) = &q.policy_file {
        s.qos_policy_file = Some(p.clone());
    }
    s.program_policy_setup = q.program_policy_setup.unwrap_or(false);
    if let Some(policy) = file.qos_policy {
        // An inline policy wins over `policy_file`, which is kept for opensm.conf.
        let span = policy.span();
        match policy.into_inner().into_policy() {
            Ok((policy, spans)) => {
                s.qos_setup_places = spans
                    .into_iter()
                    .map(|(id, span)| (id, errors.at(span)))
                    .collect();
                if s.program_policy_setup
                    && let Err(problems) = policy.check_setup()
                {
                    errors.list.extend(qos_policy::setup_diagnostics(
                        &problems,
                        &s.qos_setup_places,
                    ));
                }
                s.qos_policy = Some(policy);
            }
            Err(message) => errors.push(span, format!("qos_policy: {message}"), None),
        }
    } else if s.program_policy_setup && q.policy_file.is_none() {
        errors.push(
            0..0,
            "program_policy_setup is on, but there is no QoS policy to take qos-setup from"
                .to_string(),
            Some("add a [qos_policy] or a [qos] policy_file".to_string()),
        );
    }
    s.partitions = file.partitions.map(NativePartitions::into_partitions);
    for class in QOS_SETS {
        let Some(n) = q.set(class) else { continue };
        *qos_set_mut(&mut s.qos, class) = QosSet {
            max_vls: n.max_vls.map(|v| v.0),
            high_limit: n.high_limit.map(|v| v.0),
            vlarb_high: n.vlarb_high.as_ref().map(|t| t.0),
            vlarb_low: n.vlarb_low.as_ref().map(|t| t.0),
            sl2vl: n.sl2vl.as_ref().map(|t| t.0),
        };
    }
    let sm = &file.sm;
    let sm_out = &mut s.sm;
    for (key, value, out) in [
        ("guid", &sm.guid, &mut sm_out.guid),
        (
            "subnet_prefix",
            &sm.subnet_prefix,
            &mut sm_out.subnet_prefix,
        ),
    ] {
        if let Some(v) = value
            && let Some(options::Value::Uint(n)) =
                strict(key, Kind::Uint(U64), v, errors).map(|p| p.value)
        {
            *out = n;
        }
    }
    set(&mut s.sm.priority, sm.priority.map(|v| v.0));
    set(&mut s.sm.lmc, sm.lmc.map(|v| v.0));
    set(&mut s.sm.sweep_interval, sm.sweep_interval);
    set(&mut s.sm.transaction_timeout, sm.transaction_timeout);
    set(&mut s.sm.transaction_retries, sm.transaction_retries);
    set(&mut s.sm.max_wire_smps, sm.max_wire_smps.map(|v| v.0));
    set(&mut s.sm.sm_sl, sm.sm_sl.map(|v| v.0));
    for (key, out, value) in [
        (
            "routing_engine",
            &mut s.sm.routing_engine,
            &sm.routing_engine,
        ),
        ("log_file", &mut s.sm.log_file, &sm.log_file),
        (
            "dump_files_dir",
            &mut s.sm.dump_files_dir,
            &sm.dump_files_dir,
        ),
    ] {
        if let Some(value) = value {
            *out = Some(value.get_ref().clone());
            let place = errors.at(value.span());
            errors.places.insert(key.to_string(), place);
        }
    }
    if let Some(long) = &sm.long_transaction_timeout {
        s.sm.long_transaction_timeout = *long.get_ref();
        if s.sm.long_transaction_timeout < s.sm.transaction_timeout {
            errors.push(
                long.span(),
                format!(
                    "long_transaction_timeout {} is shorter than transaction_timeout {}",
                    s.sm.long_transaction_timeout, s.sm.transaction_timeout
                ),
                Some("OpenSM would raise it to transaction_timeout".to_string()),
            );
        }
    }
    let l = &file.links;
    if let Some(v) = l.max_op_vls {
        s.links.max_op_vls = v.0.encoding();
    }
    set(
        &mut s.links.head_of_queue_lifetime,
        l.head_of_queue_lifetime.map(|v| v.0),
    );
    set(
        &mut s.links.leaf_head_of_queue_lifetime,
        l.leaf_head_of_queue_lifetime.map(|v| v.0),
    );
    set(&mut s.links.vl_stall_count, l.vl_stall_count.map(|v| v.0));
    set(
        &mut s.links.leaf_vl_stall_count,
        l.leaf_vl_stall_count.map(|v| v.0),
    );
    // The one place ibqos.toml does not default to OpenSM: OpenSM's FALSE costs N_up x (N + 1)
    // SL2VL Sets per switch (1332 on a 36-port switch) where one would do, on every switch that
    // advertises optimized programming. ibqos uses it there unless told not to.
    s.links.use_optimized_slvl = l.use_optimized_slvl.unwrap_or(true);
    for (key, value) in &file.opensm {
        if let Some((k, text)) = passthrough(
            key.get_ref(),
            &value.get_ref().0,
            key.span(),
            value.span(),
            errors,
        ) {
            let place = errors.at(value.span());
            errors.places.insert(k.clone(), place);
            s.opensm.insert(k, text);
        }
    }
    check_m_key_lease(&s, &file.opensm, errors);
    s.perfmgr_lanes = file.sm.perfmgr_lanes.unwrap_or(false);
    if let Some(tolerance) = &file.sm.qos_report_tolerance {
        if *tolerance.get_ref() > 100 {
            let message = format!(
                "qos_report_tolerance {} is more than 100 percentage points",
                tolerance.get_ref()
            );
            errors.push(tolerance.span(), message, None);
        } else {
            s.qos_report_tolerance = *tolerance.get_ref();
        }
    }
    read_cc_key_program(&mut s, &file.sm, errors);
    if let Some(secret) = &file.sm.m_key_per_port_secret {
        match MKeySecret::new(secret.get_ref()) {
            Ok(secret) => s.m_key_per_port_secret = Some(secret),
            Err(message) => errors.push(secret.span(), message, None),
        }
        if s.opensm.get("m_key_lookup").is_some_and(|v| v != "TRUE") {
            errors.push(
                secret.span(),
                "m_key_per_port_secret needs m_key_lookup TRUE: the SM finds each port's key by \
                 its GUID"
                    .to_string(),
                None,
            );
        }
    }
    s
}

/// The congestion control options beyond OpenSM: the read back, and `cc_key` programmed into
/// the agents with its protection. The key's protection means nothing without the key, and a
/// key of 0 protects nothing (IBA A10.4.1: an agent whose CC_Key is 0 checks no MAD).
fn read_cc_key_program(s: &mut Settings, sm: &NativeSm, errors: &mut Errors<'_>) {
    s.cc_read_back = sm.cc_read_back.unwrap_or(true);
    let program = sm.cc_key_program.as_ref();
    s.cc_key_program = program.is_some_and(|p| *p.get_ref());
    s.cc_key_protect = sm.cc_key_protect.as_ref().is_some_and(|p| *p.get_ref());
    if let Some(period) = &sm.cc_key_lease_period {
        match u16::try_from(*period.get_ref()) {
            Ok(seconds) => s.cc_key_lease_period = seconds,
            Err(_) => errors.push(
                period.span(),
                format!(
                    "cc_key_lease_period {} is not 0-65535 seconds, what CC_KeyLeasePeriod's 16 \
                     bits hold",
                    period.get_ref()
                ),
                None,
            ),
        }
    }
    if !s.cc_key_program {
        let protection = [
            (
                "cc_key_protect",
                sm.cc_key_protect
                    .as_ref()
                    .filter(|p| *p.get_ref())
                    .map(Spanned::span),
            ),
            (
                "cc_key_lease_period",
                sm.cc_key_lease_period
                    .as_ref()
                    .filter(|p| *p.get_ref() != 0)
                    .map(Spanned::span),
            ),
        ];
        for (key, span) in protection {
            if let Some(span) = span {
                let message = format!("{key} needs cc_key_program = true: no key, no protection");
                errors.push(span, message, None);
            }
        }
        return;
    }
    if s.opensm_uint("cc_key").unwrap_or(0) == 0
        && let Some(program) = program
    {
        errors.push(
            program.span(),
            "cc_key_program needs a cc_key other than 0 in [opensm]: an agent whose CC_Key is 0 \
             checks nothing"
                .to_string(),
            Some("set [opensm] cc_key = \"0x...\", a secret 64-bit key".to_string()),
        );
    }
}

/// OpenSM raises an `m_key_lease_period` that is not longer than `sweep_interval` when the keys
/// are protected (`osm_subnet.c:2177-2202`): a lease that runs out between two sweeps would
/// give the fabric away. ibqos.toml says so instead of bending the value.
fn check_m_key_lease(
    s: &Settings,
    opensm: &BTreeMap<Spanned<String>, Spanned<Text>>,
    errors: &mut Errors<'_>,
) {
    let number = |key: &str| s.opensm.get(key).map(|v| cnum::strtoull(v.as_bytes()));
    let (Some(protect), Some(lease)) = (
        number("m_key_protection_level"),
        number("m_key_lease_period"),
    ) else {
        return;
    };
    let sweep = u64::from(s.sm.sweep_interval);
    if protect == 0 || lease == 0 || (sweep != 0 && sweep < lease) {
        return;
    }
    let Some((_, value)) = opensm
        .iter()
        .find(|(k, _)| k.get_ref() == "m_key_lease_period")
    else {
        return;
    };
    let message = if sweep == 0 {
        format!(
            "m_key_lease_period {lease} with protected keys needs periodic sweeps, and sweep_interval is 0"
        )
    } else {
        format!("m_key_lease_period {lease} is not longer than sweep_interval {sweep}")
    };
    errors.push(
        value.span(),
        message,
        Some(
            "the SM must sweep before a lease runs out; OpenSM would change the values".to_string(),
        ),
    );
}

/// Overwrites `out` with what the file says, if it says anything.
fn set<T>(out: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *out = v;
    }
}

/// Reads `value` with OpenSM's parser for `kind`; anything OpenSM would reject or bend is an
/// error here.
fn strict(
    key: &str,
    kind: Kind,
    value: &Spanned<Text>,
    errors: &mut Errors<'_>,
) -> Option<options::Parsed> {
    let anchor = Anchor::Whole(errors.at(value.span()));
    let mut diags = Vec::new();
    let parsed = options::parse_value(
        key,
        kind,
        value.get_ref().0.as_bytes(),
        Some(&anchor),
        &mut diags,
    );
    let mut failed = false;
    for mut d in diags {
        if d.severity >= Severity::Warning {
            failed = true;
            d.severity = Severity::Error;
        }
        errors.list.push(d);
    }
    parsed.filter(|_| !failed)
}

/// An `[opensm]` entry: a recognised option ibqos has no typed field for, and its value as
/// OpenSM would accept it.
fn passthrough(
    key: &str,
    text: &str,
    key_span: std::ops::Range<usize>,
    value_span: std::ops::Range<usize>,
    errors: &mut Errors<'_>,
) -> Option<(String, String)> {
    let (name, sl) = match key.split_once(' ') {
        Some((name, sl)) => (name, Some(sl)),
        None => (key, None),
    };
    let Some(index) = options::index(name) else {
        let help = options::ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, to)| format!("use its current name, `{to}`"));
        errors.push(key_span, format!("`{key}` is not an OpenSM option"), help);
        return None;
    };
    if TYPED_KEYS.contains(&name) || parse_qos_key(name).is_some() {
        errors.push(
            key_span,
            format!("`{name}` has its own setting in ibqos.toml ([qos], [sm] or [links]), not in [opensm]"),
            None,
        );
        return None;
    }
    let kind = OPTIONS[index].kind;
    let key = match (kind, sl.map(str::parse::<u8>)) {
        (Kind::PerSl(_), Some(Ok(sl))) if sl < 16 => format!("{name} {sl}"),
        (Kind::PerSl(_), _) => {
            errors.push(
                key_span,
                format!("`{key}`: a per-SL option is written `\"{name} <SL>\"`, SL 0-15"),
                None,
            );
            return None;
        }
        (_, Some(_)) => {
            errors.push(key_span, format!("`{key}` is not an OpenSM option"), None);
            return None;
        }
        (_, None) => name.to_string(),
    };
    let value = Spanned::new(value_span.clone(), Text(text.to_string()));
    let parsed = strict(name, kind, &value, errors)?;
    // A value OpenSM's verify step replaces (`m_key_protection_level` above 3, ...) is an error
    // here, like every value OpenSM bends.
    if let options::Value::Uint(v) = parsed.value
        && conf::verified(name, v) != v
    {
        errors.push(
            value_span,
            format!(
                "`{name}` {v} is out of range: OpenSM uses {} instead",
                conf::verified(name, v)
            ),
            None,
        );
        return None;
    }
    Some((key, parsed.text))
}

/// A key as TOML writes it: bare when it can be.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        k.to_string()
    } else {
        toml_str(k)
    }
}

/// Whether `[opensm]` can hold `key = text` (what [`passthrough`] accepts).
fn passthrough_ok(key: &str, text: &str) -> bool {
    let mut errors = Errors {
        name: "",
        source: b"",
        list: Vec::new(),
        places: Places::new(),
    };
    passthrough(key, text, 0..0, 0..0, &mut errors).is_some_and(|(k, t)| k == key && t == text)
}

/// The ibqos.toml text for `s`. Values ibqos.toml cannot say are written as the closest value it
/// can (what OpenSM would effectively use); `to_native_toml` reports each of them.
pub(crate) fn write(s: &Settings) -> String {
    let mut out =
        String::from("# ibqos configuration, written by ibqos (ibqos-opensm).\n\n[qos]\n");
    let kv = |out: &mut String, key: &str, value: String| {
        out.push_str(&format!("{key} = {value}\n"));
    };
    kv(&mut out, "enabled", s.qos.enabled.to_string());
    if let Some(p) = &s.qos_policy_file {
        kv(&mut out, "policy_file", toml_str(p));
    }
    if s.program_policy_setup {
        kv(&mut out, "program_policy_setup", "true".to_string());
    }
    for class in QOS_SETS {
        let set = qos_set(&s.qos, class);
        if set.is_empty() {
            continue;
        }
        out.push_str(&format!("\n[qos.{}]\n", section(class)));
        for field in QosField::ALL {
            let value = match field {
                QosField::MaxVls => set
                    .max_vls
                    .filter(|v| (1..=15).contains(v))
                    .map(|v| v.to_string()),
                QosField::HighLimit => set.high_limit.map(|v| v.to_string()),
                QosField::VlArbHigh => set.vlarb_high.as_ref().map(vlarb_list),
                QosField::VlArbLow => set.vlarb_low.as_ref().map(vlarb_list),
                QosField::Sl2Vl => set.sl2vl.as_ref().map(|t| {
                    let vls: Vec<String> = t.0.iter().map(|v| v.get().to_string()).collect();
                    format!("[{}]", vls.join(", "))
                }),
            };
            if let Some(value) = value {
                kv(&mut out, field.name(), value);
            }
        }
    }
    let sm = &s.sm;
    out.push_str("\n[sm]\n");
    kv(&mut out, "guid", toml_str(&Guid(sm.guid).to_string()));
    kv(
        &mut out,
        "subnet_prefix",
        toml_str(&format!("0x{:016x}", sm.subnet_prefix)),
    );
    // Values OpenSM's verify step would replace are written as what it replaces them with.
    let priority = conf::verified("sm_priority", sm.priority.into());
    let lmc = conf::verified("lmc", sm.lmc.into());
    let wire = conf::verified("max_wire_smps", sm.max_wire_smps.into());
    let numbers: [(&str, u64); 8] = [
        ("priority", priority),
        ("lmc", lmc),
        ("sweep_interval", sm.sweep_interval.into()),
        ("transaction_timeout", sm.transaction_timeout.into()),
        (
            "long_transaction_timeout",
            sm.long_transaction_timeout
                .max(sm.transaction_timeout)
                .into(),
        ),
        ("transaction_retries", sm.transaction_retries.into()),
        ("max_wire_smps", wire),
        ("sm_sl", (sm.sm_sl & 0xf).into()),
    ];
    for (key, value) in numbers {
        kv(&mut out, key, value.to_string());
    }
    for (key, value) in [
        ("routing_engine", &sm.routing_engine),
        ("log_file", &sm.log_file),
        ("dump_files_dir", &sm.dump_files_dir),
    ] {
        if let Some(v) = value {
            kv(&mut out, key, toml_str(v));
        }
    }
    if let Some(secret) = &s.m_key_per_port_secret {
        let text = String::from_utf8_lossy(secret.expose());
        kv(&mut out, "m_key_per_port_secret", toml_str(&text));
    }
    if s.perfmgr_lanes {
        kv(&mut out, "perfmgr_lanes", "true".to_string());
    }
    if s.qos_report_tolerance != DEFAULT_TOLERANCE_POINTS {
        kv(
            &mut out,
            "qos_report_tolerance",
            s.qos_report_tolerance.to_string(),
        );
    }
    if !s.cc_read_back {
        kv(&mut out, "cc_read_back", "false".to_string());
    }
    if s.cc_key_program {
        kv(&mut out, "cc_key_program", "true".to_string());
        kv(&mut out, "cc_key_protect", s.cc_key_protect.to_string());
        kv(
            &mut out,
            "cc_key_lease_period",
            s.cc_key_lease_period.to_string(),
        );
    }
    let l = &s.links;
    out.push_str("\n[links]\n");
    let max_op_vls = l.oper_vls_cap().unwrap_or(VlCount::One);
    kv(&mut out, "max_op_vls", max_op_vls.count().to_string());
    for (key, value, bits) in [
        ("head_of_queue_lifetime", l.head_of_queue_lifetime, 0x1f),
        (
            "leaf_head_of_queue_lifetime",
            l.leaf_head_of_queue_lifetime,
            0x1f,
        ),
        ("vl_stall_count", l.vl_stall_count, 0x7),
        ("leaf_vl_stall_count", l.leaf_vl_stall_count, 0x7),
    ] {
        kv(&mut out, key, (value & bits).to_string());
    }
    kv(
        &mut out,
        "use_optimized_slvl",
        l.use_optimized_slvl.to_string(),
    );
    let entries: Vec<(&String, &String)> = s
        .opensm
        .iter()
        .filter(|(k, v)| passthrough_ok(k, v))
        .collect();
    if !entries.is_empty() {
        out.push_str("\n[opensm]\n");
        for (k, v) in entries {
            kv(&mut out, &toml_key(k), toml_str(v));
        }
    }
    if let Some(policy) = &s.qos_policy {
        out.push_str(&native_policy::write(policy));
    }
    if let Some(partitions) = &s.partitions {
        out.push_str(&native_partitions::write(partitions));
    }
    out
}

/// A VLArb table as a TOML array of inline tables, four entries a line. VLs above 14 are
/// written as OpenSM reads them, mod 15.
fn vlarb_list(table: &VlArbTable) -> String {
    let entries: Vec<String> = table
        .significant_entries()
        .iter()
        .map(|e| format!("{{ vl = {}, weight = {} }}", e.vl % 15, e.weight))
        .collect();
    if entries.is_empty() {
        return "[]".to_string();
    }
    let lines: Vec<String> = entries
        .chunks(4)
        .map(|c| format!("  {},", c.join(", ")))
        .collect();
    format!("[\n{}\n]", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<(usize, usize, String)> {
        match read("t.toml", text.as_bytes()) {
            Ok(_) => Vec::new(),
            Err(diags) => diags
                .into_iter()
                .map(|d| {
                    let l = d.location.expect("located");
                    (l.line, l.col, d.message)
                })
                .collect(),
        }
    }

    #[test]
    fn strict_values_point_at_their_place() {
        let e = errors("[qos.ca]\nvlarb_high = [{ vl = 15, weight = 4 }]\n");
        assert_eq!((e[0].0, e[0].1), (2, 22), "{e:?}");
        assert!(e[0].2.contains("0-14"), "{e:?}");
        let e = errors("[qos.default]\nsl2vl = [0, 1]\n");
        assert_eq!((e[0].0, e[0].1), (2, 9), "{e:?}");
        let e = errors("[links]\nmax_op_vls = 3\n");
        assert_eq!((e[0].0, e[0].1), (2, 14), "{e:?}");
        let e = errors("[sm]\nbogus = 1\n");
        assert_eq!(e[0].0, 2, "{e:?}");
        let e = errors("[opensm]\nm_key_lookup = \"true\"\n");
        assert_eq!((e[0].0, e[0].1), (2, 16), "{e:?}");
        let e = errors("[opensm]\nlmc = 1\n");
        assert_eq!((e[0].0, e[0].1), (2, 1), "{e:?}");
        let e = errors("[sm]\ntransaction_timeout = 300\nlong_transaction_timeout = 100\n");
        assert_eq!((e[0].0, e[0].1), (3, 28), "{e:?}");
    }

    /// Every entry with an error is reported, in file order, and then the rest is checked as
    /// a whole (the GUID); the messages name no Rust type.
    #[test]
    fn every_error_is_reported_in_file_order_in_plain_words() {
        let e = errors(
            "[sm]\npriority = 99\nbogus = 1\nlmc = \"x\"\nguid = \"0x1ffffffffffffffff\"\n\
             [qos]\nenabled = 5\n[qos.ca]\nhigh_limit = 99999999999999999999\n",
        );
        let lines: Vec<usize> = e.iter().map(|(line, _, _)| *line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 7, 9], "{e:?}");
        for (_, _, message) in &e {
            let words = message.split(|c: char| !c.is_alphanumeric());
            for word in words {
                assert!(
                    !["u8", "u32", "i64", "i128", "struct", "NativeQos"].contains(&word),
                    "{message}"
                );
            }
        }
        assert!(e[2].2.contains("expected a whole number"), "{e:?}");
        assert!(e[5].2.contains("fits in 64 bits"), "{e:?}");
    }

    /// Every error costs a reading of the rest: a file of thousands stops at the first hundred.
    #[test]
    fn thousands_of_errors_stop_at_a_hundred() {
        let mut text = String::from("[sm]\n");
        for i in 0..5000 {
            text.push_str(&format!("bogus{i} = 1\n"));
        }
        let started = std::time::Instant::now();
        let Err(diagnostics) = read("t.toml", text.as_bytes()) else {
            panic!("no key is known");
        };
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        assert_eq!(diagnostics.len(), MAX_PER_CODE + 1);
        let last = &diagnostics[MAX_PER_CODE];
        assert!(last.message.starts_with("reading stopped"), "{last:?}");
    }

    #[test]
    fn passthrough_values_are_normalised() {
        let s = read(
            "t.toml",
            b"[opensm]\nm_key_lookup = false\n\"cc_ca_cong_setting_ccti_timer 3\" = 5\n",
        )
        .expect("valid");
        assert_eq!(s.opensm["m_key_lookup"], "FALSE");
        assert_eq!(s.opensm["cc_ca_cong_setting_ccti_timer 3"], "5");
    }

    #[test]
    fn m_key_values_opensm_would_bend_are_errors() {
        let e = errors("[opensm]\nm_key_protection_level = 7\n");
        assert_eq!((e[0].0, e[0].1), (2, 26), "{e:?}");
        assert!(e[0].2.contains("OpenSM uses 2"), "{e:?}");
        let lease = "[sm]\nsweep_interval = 10\n[opensm]\nm_key_protection_level = 2\n";
        let e = errors(&format!("{lease}m_key_lease_period = 10\n"));
        assert_eq!((e[0].0, e[0].1), (5, 22), "{e:?}");
        assert!(
            e[0].2.contains("not longer than sweep_interval 10"),
            "{e:?}"
        );
        assert!(errors(&format!("{lease}m_key_lease_period = 11\n")).is_empty());
        // Unprotected keys need no lease check.
        let free = "[sm]\nsweep_interval = 10\n[opensm]\nm_key_lease_period = 5\n";
        assert!(errors(free).is_empty());
    }

    #[test]
    fn the_per_port_secret_is_read_checked_kept_and_hidden() {
        const SECRET: &str = "0123456789abcdef0123";
        let text = format!("[sm]\nm_key_per_port_secret = \"{SECRET}\"\n");
        let s = read("t.toml", text.as_bytes()).expect("valid");
        let secret = s.m_key_per_port_secret.as_ref().expect("read");
        assert_eq!(secret.expose(), SECRET.as_bytes());
        assert!(!format!("{s:?}").contains(SECRET), "Debug shows the secret");
        let back = read("t.toml", write(&s).as_bytes()).expect("written readable");
        assert_eq!(back.m_key_per_port_secret, s.m_key_per_port_secret);
        let e = errors("[sm]\nm_key_per_port_secret = \"short\"\n");
        assert_eq!((e[0].0, e[0].1), (2, 25), "{e:?}");
        assert!(e[0].2.contains("at least 16"), "{e:?}");
        let e = errors(&format!("{text}[opensm]\nm_key_lookup = \"FALSE\"\n"));
        assert!(e[0].2.contains("needs m_key_lookup TRUE"), "{e:?}");
    }
}
