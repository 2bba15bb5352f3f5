//! OpenSM 3.3.23's option table (`opt_tbl`, `osm_subnet.c:762-928`) and its value parsers
//! (`osm_subnet.c:280-760`), with a diagnostic for every value OpenSM rejects or silently bends.

use ibqos_text::cnum::{self, CNum};
use ibqos_text::{Code, Diagnostic, Location, SourceLine, display_text, source_text};

pub(crate) const U8: u64 = u8::MAX as u64;
pub(crate) const U16: u64 = u16::MAX as u64;
pub(crate) const U32: u64 = u32::MAX as u64;
pub(crate) const U64: u64 = u64::MAX;

/// How OpenSM parses an option (its `parse_fn`), as far as ibqos needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `opts_parse_boolean`: only the exact string `TRUE` is true.
    Bool,
    /// `opts_parse_uint8/16/32`, `net16/32/64`: `strtoul` base 0, the whole string, at most this.
    Uint(u64),
    /// `opts_parse_int32`: `strtol` base 0 without any error checking.
    Int32,
    /// `opts_parse_charp`: any string; `(null)` is NULL.
    Str,
    /// A `qos_*_vlarb_{high,low}` string: a charp that `qos_build_config` parses leniently.
    VlArb,
    /// A `qos_*_sl2vl` string: likewise.
    Sl2Vl,
    /// `opts_parse_256bit`: a hex bitmask.
    Bits256,
    /// `opts_parse_cct_entry`: `shift:multiplier`.
    CctEntry,
    /// `opts_parse_cc_cct`: a list of `shift:multiplier`.
    Cct,
    /// The `cc_ca_cong_setting_*` options: `SL value`, one entry per SL, the value at most this
    /// ([`parse_per_sl`]; [`parse_value`] reads the value part).
    PerSl(u64),
}

/// One row of OpenSM's option table with the default `opensm -c` writes.
#[derive(Debug)]
pub(crate) struct OptionSpec {
    pub key: &'static str,
    pub kind: Kind,
    /// What `opensm -c` writes when nothing is configured; also fixes the number format.
    pub default: &'static str,
}

const fn spec(key: &'static str, kind: Kind, default: &'static str) -> OptionSpec {
    OptionSpec { key, kind, default }
}

use Kind::*;

/// Every key OpenSM 3.3.23 recognises (Debian build: perfmgr on, console socket off), in the
/// order `opensm -c` writes them, with the defaults it writes. `dimn_ports_file` is not here: it
/// is an alias ([`ALIASES`]).
pub(crate) static OPTIONS: [OptionSpec; 160] = [
    spec("guid", Uint(U64), "0x0000000000000000"),
    spec("m_key", Uint(U64), "0x0000000000000000"),
    spec("m_key_lease_period", Uint(U16), "0"),
    spec("m_key_protection_level", Uint(U8), "0"),
    spec("m_key_lookup", Bool, "TRUE"),
    spec("sm_key", Uint(U64), "0x0000000000000001"),
    spec("sa_key", Uint(U64), "0x0000000000000001"),
    spec("subnet_prefix", Uint(U64), "0xfe80000000000000"),
    spec("lmc", Uint(U8), "0"),
    spec("lmc_esp0", Bool, "FALSE"),
    spec("sm_sl", Uint(U8), "0"),
    spec("packet_life_time", Uint(U8), "0x12"),
    spec("vl_stall_count", Uint(U8), "0x07"),
    spec("leaf_vl_stall_count", Uint(U8), "0x07"),
    spec("head_of_queue_lifetime", Uint(U8), "0x12"),
    spec("leaf_head_of_queue_lifetime", Uint(U8), "0x10"),
    spec("max_op_vls", Uint(U8), "5"),
    spec("force_link_speed", Uint(U8), "15"),
    spec("force_link_speed_ext", Uint(U8), "31"),
    spec("force_link_width", Uint(U8), "255"),
    spec("fdr10", Uint(U8), "1"),
    spec("subnet_timeout", Uint(U8), "18"),
    spec("local_phy_errors_threshold", Uint(U8), "0x08"),
    spec("overrun_errors_threshold", Uint(U8), "0x08"),
    spec("use_mfttop", Bool, "TRUE"),
    spec("partition_config_file", Str, "/etc/opensm/partitions.conf"),
    spec("no_partition_enforcement", Bool, "FALSE"),
    spec("part_enforce", Str, "both"),
    spec("allow_both_pkeys", Bool, "FALSE"),
    spec("keep_pkey_indexes", Bool, "TRUE"),
    spec("sm_assigned_guid", Uint(U8), "0x00"),
    spec("sweep_interval", Uint(U32), "10"),
    spec("reassign_lids", Bool, "FALSE"),
    spec("force_heavy_sweep", Bool, "FALSE"),
    spec("sweep_on_trap", Bool, "TRUE"),
    spec("port_profile_switch_nodes", Bool, "FALSE"),
    spec("port_prof_ignore_file", Str, "(null)"),
    spec("hop_weights_file", Str, "(null)"),
    spec("port_search_ordering_file", Str, "(null)"),
    spec("routing_engine", Str, "(null)"),
    spec("avoid_throttled_links", Bool, "FALSE"),
    spec("connect_roots", Bool, "FALSE"),
    spec("use_ucast_cache", Bool, "FALSE"),
    spec("lid_matrix_dump_file", Str, "(null)"),
    spec("lfts_file", Str, "(null)"),
    spec("root_guid_file", Str, "(null)"),
    spec("cn_guid_file", Str, "(null)"),
    spec("io_guid_file", Str, "(null)"),
    spec("quasi_ftree_indexing", Bool, "FALSE"),
    spec("max_reverse_hops", Uint(U16), "0"),
    spec("ids_guid_file", Str, "(null)"),
    spec("guid_routing_order_file", Str, "(null)"),
    spec("do_mesh_analysis", Bool, "FALSE"),
    spec("lash_start_vl", Uint(U8), "0"),
    spec("nue_max_num_vls", Uint(U8), "1"),
    spec("nue_include_switches", Bool, "FALSE"),
    spec("port_shifting", Bool, "FALSE"),
    spec("scatter_ports", Uint(U32), "0"),
    spec("guid_routing_order_no_scatter", Bool, "FALSE"),
    spec("sa_db_file", Str, "(null)"),
    spec("sa_db_dump", Bool, "FALSE"),
    spec("torus_config", Str, "/etc/opensm/torus-2QoS.conf"),
    spec("sm_priority", Uint(U8), "0"),
    spec("ignore_other_sm", Bool, "FALSE"),
    spec("sminfo_polling_timeout", Uint(U32), "10000"),
    spec("polling_retry_number", Uint(U32), "4"),
    spec("honor_guid2lid_file", Bool, "FALSE"),
    spec("max_wire_smps", Uint(U32), "4"),
    spec("max_wire_smps2", Uint(U32), "4"),
    spec("max_smps_timeout", Uint(U32), "600000"),
    spec("transaction_timeout", Uint(U32), "200"),
    spec("transaction_retries", Uint(U32), "3"),
    spec("long_transaction_timeout", Uint(U32), "500"),
    spec("max_msg_fifo_timeout", Uint(U32), "10000"),
    spec("single_thread", Bool, "FALSE"),
    spec("daemon", Bool, "FALSE"),
    spec("sm_inactive", Bool, "FALSE"),
    spec("babbling_port_policy", Bool, "FALSE"),
    spec("drop_event_subscriptions", Bool, "FALSE"),
    spec("ipoib_mcgroup_creation_validation", Bool, "TRUE"),
    spec("mcgroup_join_validation", Bool, "TRUE"),
    spec("use_original_extended_sa_rates_only", Bool, "FALSE"),
    spec("use_optimized_slvl", Bool, "FALSE"),
    spec("fsync_high_avail_files", Bool, "TRUE"),
    spec("perfmgr", Bool, "FALSE"),
    spec("perfmgr_redir", Bool, "TRUE"),
    spec("perfmgr_sweep_time_s", Uint(U16), "180"),
    spec("perfmgr_max_outstanding_queries", Uint(U32), "500"),
    spec("perfmgr_ignore_cas", Bool, "FALSE"),
    spec("perfmgr_rm_nodes", Bool, "TRUE"),
    spec("perfmgr_log_errors", Bool, "TRUE"),
    spec("perfmgr_query_cpi", Bool, "TRUE"),
    spec("perfmgr_xmit_wait_log", Bool, "FALSE"),
    spec("perfmgr_xmit_wait_threshold", Uint(U32), "65535"),
    spec("event_db_dump_file", Str, "(null)"),
    spec("event_plugin_name", Str, "(null)"),
    spec("event_plugin_options", Str, "(null)"),
    spec("node_name_map_name", Str, "(null)"),
    spec("log_flags", Uint(U8), "0x03"),
    spec("force_log_flush", Bool, "FALSE"),
    spec("log_file", Str, "/var/log/opensm.log"),
    spec("log_max_size", Uint(U32), "0"),
    spec("accum_log_file", Bool, "TRUE"),
    spec(
        "per_module_logging_file",
        Str,
        "/etc/opensm/per-module-logging.conf",
    ),
    spec("dump_files_dir", Str, "/var/log/"),
    spec("enable_quirks", Bool, "FALSE"),
    spec("no_clients_rereg", Bool, "FALSE"),
    spec("disable_multicast", Bool, "FALSE"),
    spec("exit_on_fatal", Bool, "TRUE"),
    spec("console", Str, "off"),
    spec("console_port", Uint(U16), "10000"),
    spec("qos", Bool, "FALSE"),
    spec("qos_policy_file", Str, "/etc/opensm/qos-policy.conf"),
    spec("suppress_sl2vl_mad_status_errors", Bool, "FALSE"),
    spec("qos_max_vls", Uint(U32), "0"),
    spec("qos_high_limit", Int32, "-1"),
    spec("qos_vlarb_high", VlArb, "(null)"),
    spec("qos_vlarb_low", VlArb, "(null)"),
    spec("qos_sl2vl", Sl2Vl, "(null)"),
    spec("qos_ca_max_vls", Uint(U32), "0"),
    spec("qos_ca_high_limit", Int32, "-1"),
    spec("qos_ca_vlarb_high", VlArb, "(null)"),
    spec("qos_ca_vlarb_low", VlArb, "(null)"),
    spec("qos_ca_sl2vl", Sl2Vl, "(null)"),
    spec("qos_sw0_max_vls", Uint(U32), "0"),
    spec("qos_sw0_high_limit", Int32, "-1"),
    spec("qos_sw0_vlarb_high", VlArb, "(null)"),
    spec("qos_sw0_vlarb_low", VlArb, "(null)"),
    spec("qos_sw0_sl2vl", Sl2Vl, "(null)"),
    spec("qos_swe_max_vls", Uint(U32), "0"),
    spec("qos_swe_high_limit", Int32, "-1"),
    spec("qos_swe_vlarb_high", VlArb, "(null)"),
    spec("qos_swe_vlarb_low", VlArb, "(null)"),
    spec("qos_swe_sl2vl", Sl2Vl, "(null)"),
    spec("qos_rtr_max_vls", Uint(U32), "0"),
    spec("qos_rtr_high_limit", Int32, "-1"),
    spec("qos_rtr_vlarb_high", VlArb, "(null)"),
    spec("qos_rtr_vlarb_low", VlArb, "(null)"),
    spec("qos_rtr_sl2vl", Sl2Vl, "(null)"),
    spec("congestion_control", Bool, "FALSE"),
    spec("cc_key", Uint(U64), "0x0000000000000000"),
    spec("cc_max_outstanding_mads", Uint(U32), "500"),
    spec("cc_sw_cong_setting_control_map", Uint(U32), "0x0"),
    spec(
        "cc_sw_cong_setting_victim_mask",
        Bits256,
        "0x0000000000000000000000000000000000000000000000000000000000000000",
    ),
    spec(
        "cc_sw_cong_setting_credit_mask",
        Bits256,
        "0x0000000000000000000000000000000000000000000000000000000000000000",
    ),
    spec("cc_sw_cong_setting_threshold", Uint(U8), "0x00"),
    spec("cc_sw_cong_setting_packet_size", Uint(U8), "0"),
    spec(
        "cc_sw_cong_setting_credit_starvation_threshold",
        Uint(U8),
        "0x00",
    ),
    spec(
        "cc_sw_cong_setting_credit_starvation_return_delay",
        CctEntry,
        "0:0",
    ),
    spec("cc_sw_cong_setting_marking_rate", Uint(U16), "0"),
    spec("cc_ca_cong_setting_port_control", Uint(U16), "0x0000"),
    spec("cc_ca_cong_setting_control_map", Uint(U16), "0x0000"),
    spec("cc_ca_cong_setting_ccti_timer", PerSl(U16), "0"),
    spec("cc_ca_cong_setting_ccti_increase", PerSl(U8), "0"),
    spec("cc_ca_cong_setting_trigger_threshold", PerSl(U8), "0"),
    spec("cc_ca_cong_setting_ccti_min", PerSl(U8), "0"),
    spec("cc_cct", Cct, "(null)"),
    spec("prefix_routes_file", Str, "/etc/opensm/prefix-routes.conf"),
    spec("consolidate_ipv6_snm_req", Bool, "FALSE"),
    spec("log_prefix", Str, "(null)"),
];

/// Old names OpenSM still accepts for a field (`osm_subnet.c:807`).
pub(crate) const ALIASES: [(&str, &str); 1] = [("dimn_ports_file", "port_search_ordering_file")];

/// The index in [`OPTIONS`] of `key`, spelt exactly (OpenSM compares with `strcmp`).
pub(crate) fn index(key: &str) -> Option<usize> {
    OPTIONS.iter().position(|o| o.key == key)
}

/// How a key read from a file names its option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeySpelling {
    /// The option's own key.
    Current,
    /// An old name OpenSM still accepts ([`ALIASES`]).
    Alias,
}

/// The option a key read from a file names, and how it was spelt.
pub(crate) fn lookup(key: &[u8]) -> Option<(usize, KeySpelling)> {
    if let Some(i) = OPTIONS.iter().position(|o| o.key.as_bytes() == key) {
        return Some((i, KeySpelling::Current));
    }
    let (_, target) = ALIASES.iter().find(|(alias, _)| alias.as_bytes() == key)?;
    index(target).map(|i| (i, KeySpelling::Alias))
}

/// A value as OpenSM holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Bool(bool),
    Uint(u64),
    Int(i32),
    /// `None` is C's NULL, written `(null)`.
    Str(Option<String>),
    /// The congestion-control values that ibqos only carries: the accepted text.
    Raw(String),
}

impl Value {
    /// The value as `opensm -c` writes it for `spec`.
    pub fn render(&self, spec: &OptionSpec) -> String {
        match self {
            Value::Bool(b) => bool_text(*b).to_string(),
            Value::Uint(v) => match spec.default.strip_prefix("0x") {
                Some(digits) => format!("0x{v:0width$x}", width = digits.len()),
                None => v.to_string(),
            },
            Value::Int(v) => v.to_string(),
            Value::Str(s) => s.as_deref().unwrap_or(NULL).to_string(),
            Value::Raw(s) => s.clone(),
        }
    }
}

/// OpenSM's spelling of a NULL string.
pub(crate) const NULL: &str = "(null)";

pub(crate) fn bool_text(b: bool) -> &'static str {
    if b { "TRUE" } else { "FALSE" }
}

/// Where the bytes of a value came from, to point diagnostics at them.
#[derive(Debug, Clone)]
pub(crate) enum Anchor {
    /// A value in an opensm.conf line: byte `off` of the value is byte `col0 + off` of the line.
    Line {
        line: SourceLine,
        col0: usize,
        len: usize,
    },
    /// A value whose bytes do not map one to one onto the file (a TOML string): every span is
    /// the whole value.
    Whole(Location),
}

impl Anchor {
    /// The span of `len` bytes at byte `off` of the value.
    pub fn span(&self, off: usize, len: usize) -> Location {
        match self {
            Anchor::Line { line, col0, .. } => line.span(col0 + off, len),
            Anchor::Whole(loc) => loc.clone(),
        }
    }

    /// The whole value.
    pub fn whole(&self) -> Location {
        match self {
            Anchor::Line { line, col0, len } => line.span(*col0, *len),
            Anchor::Whole(loc) => loc.clone(),
        }
    }
}

/// `span` for an optional anchor (defaults have none).
pub(crate) fn span(anchor: Option<&Anchor>, off: usize, len: usize) -> Option<Location> {
    anchor.map(|a| a.span(off, len))
}

pub(crate) fn whole(anchor: Option<&Anchor>) -> Option<Location> {
    anchor.map(Anchor::whole)
}

/// A value for a one-line message: made printable and cut at 60 characters.
pub(crate) fn shown(raw: &[u8]) -> String {
    let text = display_text(raw);
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// A value OpenSM accepted, and the text ibqos keeps for it (verbatim, except booleans, which
/// are normalised to what OpenSM understood).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub value: Value,
    pub text: String,
}

/// Reads `raw` as OpenSM's parser for `kind` does. `None` means OpenSM rejects the value and
/// keeps the previous one; the reason is in `diags`.
pub(crate) fn parse_value(
    key: &str,
    kind: Kind,
    raw: &[u8],
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Parsed> {
    let here = || whole(anchor);
    let verbatim = || source_text(raw);
    let value = match kind {
        Bool => {
            let value = raw == b"TRUE";
            if !value && raw != b"FALSE" {
                diags.push(
                    Diagnostic::warning(
                        Code::NotTrue,
                        format!(
                            "`{key}` is `{}`, which OpenSM reads as FALSE: only the exact word TRUE is true",
                            shown(raw)
                        ),
                    )
                    .with_help("write TRUE or FALSE")
                    .at(here()),
                );
            }
            return Some(Parsed {
                value: Value::Bool(value),
                text: bool_text(value).to_string(),
            });
        }
        Uint(max) | PerSl(max) => {
            let value = parse_uint(key, max, raw, anchor, diags)?;
            if NIBBLE_KEYS.contains(&key) && value > 0xf {
                diags.push(
                    Diagnostic::warning(
                        Code::FieldTruncated,
                        format!(
                            "`{key}` {value} does not fit its 4-bit field: OpenSM shifts it into \
                             the high nibble and programs {}",
                            value & 0xf
                        ),
                    )
                    .at(here()),
                );
            }
            Value::Uint(value)
        }
        Int32 => Value::Int(parse_int32(key, raw, anchor, diags)),
        Str | VlArb | Sl2Vl if raw == NULL.as_bytes() => Value::Str(None),
        Str => {
            if std::str::from_utf8(raw).is_err() {
                // OpenSM keeps the raw bytes (a path, a name); ibqos cannot carry them through
                // TOML or back, so the value it holds differs from OpenSM's: an error.
                diags.push(
                    Diagnostic::error(
                        Code::InvalidUtf8,
                        format!(
                            "`{key}` is not valid UTF-8: ibqos replaces each invalid byte with `?`"
                        ),
                    )
                    .with_help("write the value in UTF-8")
                    .at(here()),
                );
            }
            Value::Str(Some(verbatim()))
        }
        VlArb | Sl2Vl => Value::Str(Some(verbatim())),
        Bits256 => {
            let digits = raw
                .strip_prefix(b"0x")
                .or_else(|| raw.strip_prefix(b"0X"))
                .unwrap_or(raw);
            let problem = if !digits.iter().all(u8::is_ascii_hexdigit) {
                Some("invalid hex digit in bitmask")
            } else if digits.is_empty() {
                Some("invalid length bitmask")
            } else {
                None
            };
            if let Some(problem) = problem {
                diags.push(rejected(
                    Code::InvalidValue,
                    key,
                    raw,
                    problem,
                    problem,
                    anchor,
                ));
                return None;
            }
            if digits.len() > 64 {
                diags.push(
                    Diagnostic::warning(
                        Code::ValueTruncated,
                        format!(
                            "`{key}` has {} hex digits: OpenSM uses the first 64",
                            digits.len()
                        ),
                    )
                    .at(here()),
                );
            }
            Value::Raw(verbatim())
        }
        CctEntry | Cct => {
            let entries: Vec<&[u8]> = if kind == CctEntry {
                vec![raw]
            } else if raw == NULL.as_bytes() {
                Vec::new()
            } else {
                raw.split(|b| *b == b',')
                    .filter(|t| !t.is_empty())
                    .collect()
            };
            if entries.iter().any(|e| !e.contains(&b':')) {
                let msg = "invalid CCT entry";
                diags.push(rejected(
                    Code::InvalidValue,
                    key,
                    raw,
                    "an entry is not `shift:multiplier`",
                    msg,
                    anchor,
                ));
                return None;
            }
            for entry in &entries {
                cct_entry_quirks(key, raw, entry, anchor, diags);
            }
            if kind == Cct && entries.len() == 1 {
                diags.push(
                    Diagnostic::warning(
                        Code::FieldTruncated,
                        format!(
                            "`{key}` has one entry: OpenSM sends CCTI_Limit 0 and leaves the \
                             entry out, an all-zero table (ibqos does the same, so that both \
                             leave the same tables)"
                        ),
                    )
                    .with_help("give at least two entries, the first usually 0:0")
                    .at(here()),
                );
            }
            if entries.len() > 128 {
                diags.push(
                    Diagnostic::warning(
                        Code::ValueTruncated,
                        format!(
                            "`{key}` lists {} entries: OpenSM uses the first 128",
                            entries.len()
                        ),
                    )
                    .at(here()),
                );
            }
            Value::Raw(verbatim())
        }
    };
    Some(Parsed {
        value,
        text: verbatim(),
    })
}

/// The congestion control options OpenSM shifts into a 4-bit field (`cc_setup_mad_data`).
const NIBBLE_KEYS: [&str; 2] = [
    "cc_sw_cong_setting_threshold",
    "cc_sw_cong_setting_credit_starvation_threshold",
];

/// A warning for a `shift:multiplier` entry that does not fit its fields: OpenSM writes
/// `shift << 14 | multiplier` into 16 bits unmasked, so a larger shift loses bits and a larger
/// multiplier runs into the shift.
fn cct_entry_quirks(
    key: &str,
    raw: &[u8],
    entry: &[u8],
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(colon) = entry.iter().position(|b| *b == b':') else {
        return;
    };
    let shift = cnum::scan(&entry[..colon], 0).strtoul() as u8;
    let multiplier = cnum::scan(&entry[colon + 1..], 0).strtoul() as u16;
    if shift <= 3 && multiplier <= 0x3fff {
        return;
    }
    let sent = ((u32::from(shift) << 14) as u16) | multiplier;
    let offset = entry.as_ptr() as usize - raw.as_ptr() as usize;
    diags.push(
        Diagnostic::warning(
            Code::FieldTruncated,
            format!(
                "`{key}` entry `{}` does not fit a CCT entry (shift 0-3, multiplier 0-16383): \
                 OpenSM sends 0x{sent:04x}, shift {} and multiplier {}",
                shown(entry),
                sent >> 14,
                sent & 0x3fff
            ),
        )
        .at(span(anchor, offset, entry.len())),
    );
}

/// An error for a value OpenSM refuses: it prints `opensm_says` and keeps the previous value.
fn rejected(
    code: Code,
    key: &str,
    raw: &[u8],
    why: &str,
    opensm_says: &str,
    anchor: Option<&Anchor>,
) -> Diagnostic {
    let what = if raw.is_empty() {
        format!("`{key}` has no value")
    } else {
        format!("`{key}` `{}`: {why}", shown(raw))
    };
    Diagnostic::error(
        code,
        format!("{what}; OpenSM ignores the line and keeps the previous value"),
    )
    .with_help(format!("OpenSM prints: {opensm_says}"))
    .at(whole(anchor))
}

/// `opts_strtoul` / `opts_strtoull` (`osm_subnet.c:280-322`): the whole string must be a number
/// no larger than `max`.
fn parse_uint(
    key: &str,
    max: u64,
    raw: &[u8],
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) -> Option<u64> {
    let n = cnum::scan(raw, 0);
    if raw.is_empty() || n.end != raw.len() {
        let opensm = format!(
            "-E- Parsing error in field {key}, expected numeric input received: {}",
            shown(raw)
        );
        diags.push(rejected(
            Code::NotNumeric,
            key,
            raw,
            "expected a number",
            &opensm,
            anchor,
        ));
        return None;
    }
    let value = n.strtoul();
    if value > max || n.overflow {
        let mut d = Diagnostic::error(
            Code::OutOfRange,
            format!(
                "`{key}` {} is out of range 0-{max}: OpenSM ignores the line and keeps the previous value",
                shown(raw)
            ),
        )
        .with_help(format!(
            "OpenSM prints: -E- Parsing error in field {key}, value out of range"
        ))
        .at(whole(anchor));
        if n.negative {
            d.message
                .push_str(&format!(" (strtoul reads a negative number as {value})"));
        }
        diags.push(d);
        return None;
    }
    number_quirks(&format!("`{key}`"), raw, &n, value, anchor, diags);
    Some(value)
}

/// Warnings for an unsigned number OpenSM accepts but reads differently from how it looks;
/// `read_as` is the value OpenSM ends up with.
pub(crate) fn number_quirks(
    what: &str,
    s: &[u8],
    n: &CNum,
    read_as: impl std::fmt::Display,
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) {
    let text = n.text(s);
    if n.negative && n.magnitude != 0 {
        diags.push(
            Diagnostic::warning(
                Code::NegativeNumber,
                format!(
                    "{what}: `{}` is negative; OpenSM reads it as {read_as}",
                    shown(text)
                ),
            )
            .at(span(anchor, n.start, text.len())),
        );
    }
    octal_quirk(what, s, n, anchor, diags);
}

/// A warning for `010`, which C reads as octal 8.
fn octal_quirk(
    what: &str,
    s: &[u8],
    n: &CNum,
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) {
    if let Some(decimal) = n.octal_surprise(s) {
        let text = n.text(s);
        diags.push(
            Diagnostic::warning(
                Code::OctalNumber,
                format!(
                    "{what}: `{}` has a leading 0, so OpenSM reads it as octal: {}, not {decimal}",
                    shown(text),
                    n.magnitude
                ),
            )
            .with_help("drop the leading zeros")
            .at(span(anchor, n.start, text.len())),
        );
    }
}

/// `opts_parse_int32` (`osm_subnet.c:377-390`): `strtol` with no checks, stored in 32 bits.
fn parse_int32(key: &str, raw: &[u8], anchor: Option<&Anchor>, diags: &mut Vec<Diagnostic>) -> i32 {
    let n = cnum::scan(raw, 0);
    let long = n.strtol();
    // C converts the long to int32_t by keeping the low 32 bits.
    let value = long as i32;
    let here = || whole(anchor);
    if !n.digits {
        diags.push(
            Diagnostic::warning(
                Code::IntNotNumeric,
                format!(
                    "`{key}` `{}` is not a number: OpenSM reads it as 0",
                    shown(raw)
                ),
            )
            .at(here()),
        );
        return 0;
    }
    if n.end != raw.len() {
        diags.push(
            Diagnostic::warning(
                Code::IntTrailingGarbage,
                format!(
                    "`{key}` `{}`: OpenSM reads {long} and ignores `{}`",
                    shown(raw),
                    shown(&raw[n.end..])
                ),
            )
            .at(span(anchor, n.end, raw.len() - n.end)),
        );
    }
    if i64::from(value) != long || n.overflow {
        diags.push(
            Diagnostic::warning(
                Code::IntWrapped,
                format!(
                    "`{key}` {} does not fit in 32 bits: OpenSM reads it as {value}",
                    shown(n.text(raw))
                ),
            )
            .at(here()),
        );
    }
    octal_quirk(&format!("`{key}`"), raw, &n, anchor, diags);
    value
}

/// `parse_ca_cong_common` (`osm_subnet.c:656-686`): `SL value`, the SL read with a bare
/// `strtoul` into a `uint8_t`. Returns the SL and the value, which is the rest of the string.
pub(crate) fn parse_per_sl(
    key: &str,
    max: u64,
    raw: &[u8],
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) -> Option<(u8, Parsed)> {
    let is_delim = |b: &u8| *b == b' ' || *b == b'\t';
    let sl_start = raw.iter().position(|b| !is_delim(b));
    let sl_end = sl_start.map(|s| s + raw[s..].iter().position(is_delim).unwrap_or(raw.len() - s));
    let value_start =
        sl_end.and_then(|e| raw[e..].iter().position(|b| !is_delim(b)).map(|p| e + p));
    let (Some(sl_start), Some(sl_end), Some(value_start)) = (sl_start, sl_end, value_start) else {
        let (why, msg) = if raw == NULL.as_bytes() {
            ("`(null)` does not reset a per-SL option", "nothing")
        } else {
            (
                "expected `SL value`",
                "value must be specified in addition to SL",
            )
        };
        diags.push(rejected(Code::InvalidValue, key, raw, why, msg, anchor));
        return None;
    };
    let sl_text = &raw[sl_start..sl_end];
    let n = cnum::scan(sl_text, 0);
    let sl = n.strtoul() as u8;
    if sl >= 16 {
        diags.push(rejected(
            Code::InvalidValue,
            key,
            raw,
            "the SL is not 0-15",
            "invalid SL specified",
            anchor,
        ));
        return None;
    }
    if !n.digits || n.end != sl_text.len() || n.strtoul() > U8 {
        diags.push(
            Diagnostic::warning(
                Code::SlMisread,
                format!("`{key}`: OpenSM reads the SL `{}` as {sl}", shown(sl_text)),
            )
            .at(span(anchor, sl_start, sl_text.len())),
        );
    }
    let sub = anchor.map(|a| shift(a, value_start, raw.len() - value_start));
    let parsed = parse_value(key, Uint(max), &raw[value_start..], sub.as_ref(), diags)?;
    Some((sl, parsed))
}

/// The anchor of the part of a value starting at `off`.
fn shift(anchor: &Anchor, off: usize, len: usize) -> Anchor {
    match anchor {
        Anchor::Line { line, col0, .. } => Anchor::Line {
            line: line.clone(),
            col0: col0 + off,
            len,
        },
        Anchor::Whole(loc) => Anchor::Whole(loc.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(kind: Kind, raw: &str) -> (Option<Value>, Vec<Code>) {
        let mut diags = Vec::new();
        let value = parse_value("k", kind, raw.as_bytes(), None, &mut diags).map(|p| p.value);
        (value, diags.iter().map(|d| d.code).collect())
    }

    #[test]
    fn every_default_parses_silently() {
        for spec in &OPTIONS {
            let mut diags = Vec::new();
            let parsed = parse_value(
                spec.key,
                spec.kind,
                spec.default.as_bytes(),
                None,
                &mut diags,
            );
            let parsed = parsed.unwrap_or_else(|| panic!("{} default rejected", spec.key));
            assert!(diags.is_empty(), "{}: {diags:?}", spec.key);
            assert_eq!(parsed.value.render(spec), spec.default, "{}", spec.key);
        }
    }

    /// The congestion control values OpenSM bends on their way to the wire: a threshold past
    /// its nibble, a CCT entry past its fields, a one-entry table.
    #[test]
    fn congestion_values_that_do_not_fit_their_fields() {
        let codes = |key: &str, kind: Kind, raw: &str| {
            let mut diags = Vec::new();
            let value = parse_value(key, kind, raw.as_bytes(), None, &mut diags);
            assert!(value.is_some(), "{key} {raw}: OpenSM accepts it");
            let messages: Vec<String> = diags.iter().map(|d| d.message.clone()).collect();
            (diags.iter().map(|d| d.code).collect::<Vec<_>>(), messages)
        };
        let threshold = "cc_sw_cong_setting_threshold";
        assert_eq!(codes(threshold, Uint(U8), "15").0, []);
        let (found, messages) = codes(threshold, Uint(U8), "0x1f");
        assert_eq!(found, [Code::FieldTruncated]);
        assert!(messages[0].ends_with("programs 15"), "{messages:?}");
        // Other 8-bit options keep their whole byte.
        assert_eq!(
            codes("cc_sw_cong_setting_packet_size", Uint(U8), "0x1f").0,
            []
        );

        let delay = "cc_sw_cong_setting_credit_starvation_return_delay";
        assert_eq!(codes(delay, CctEntry, "3:16383").0, []);
        let (found, messages) = codes(delay, CctEntry, "5:0x7fff");
        assert_eq!(found, [Code::FieldTruncated]);
        assert!(
            messages[0].contains("OpenSM sends 0x7fff, shift 1 and multiplier 16383"),
            "{messages:?}"
        );
        assert_eq!(codes("cc_cct", Cct, "0:0,1:2").0, []);
        assert_eq!(
            codes("cc_cct", Cct, "0:0,1:16384").0,
            [Code::FieldTruncated]
        );
        let (found, messages) = codes("cc_cct", Cct, "1:5");
        assert_eq!(found, [Code::FieldTruncated]);
        assert!(messages[0].contains("one entry"), "{messages:?}");
    }

    #[test]
    fn uint_parser() {
        assert_eq!(parse(Uint(U8), "0x12"), (Some(Value::Uint(18)), vec![]));
        assert_eq!(
            parse(Uint(U8), "010"),
            (Some(Value::Uint(8)), vec![Code::OctalNumber])
        );
        assert_eq!(parse(Uint(U8), "256"), (None, vec![Code::OutOfRange]));
        assert_eq!(parse(Uint(U32), "-1"), (None, vec![Code::OutOfRange]));
        assert_eq!(
            parse(Uint(U64), "-1"),
            (Some(Value::Uint(u64::MAX)), vec![Code::NegativeNumber])
        );
        assert_eq!(parse(Uint(U8), ""), (None, vec![Code::NotNumeric]));
        assert_eq!(parse(Uint(U8), "0x"), (None, vec![Code::NotNumeric]));
        assert_eq!(parse(Uint(U8), "5 "), (None, vec![Code::NotNumeric]));
    }

    #[test]
    fn int32_parser() {
        assert_eq!(
            parse(Int32, "abc"),
            (Some(Value::Int(0)), vec![Code::IntNotNumeric])
        );
        assert_eq!(
            parse(Int32, "5x"),
            (Some(Value::Int(5)), vec![Code::IntTrailingGarbage])
        );
        assert_eq!(
            parse(Int32, "4294967295"),
            (Some(Value::Int(-1)), vec![Code::IntWrapped])
        );
        assert_eq!(parse(Int32, "-5"), (Some(Value::Int(-5)), vec![]));
    }

    #[test]
    fn bool_and_strings() {
        assert_eq!(
            parse(Bool, "true"),
            (Some(Value::Bool(false)), vec![Code::NotTrue])
        );
        assert_eq!(parse(Bool, "FALSE"), (Some(Value::Bool(false)), vec![]));
        assert_eq!(parse(Str, "(null)"), (Some(Value::Str(None)), vec![]));
        assert_eq!(
            parse(Str, ""),
            (Some(Value::Str(Some(String::new()))), vec![])
        );
        assert_eq!(parse(Bits256, "0xfg"), (None, vec![Code::InvalidValue]));
        assert_eq!(parse(Cct, "1:2,3"), (None, vec![Code::InvalidValue]));
    }

    #[test]
    fn per_sl_values() {
        let mut diags = Vec::new();
        let got = parse_per_sl("k", U8, b"260 9", None, &mut diags).map(|(sl, p)| (sl, p.value));
        assert_eq!(got, Some((4, Value::Uint(9))));
        assert_eq!(diags[0].code, Code::SlMisread);
        assert!(parse_per_sl("k", U8, b"16 1", None, &mut diags).is_none());
        assert!(parse_per_sl("k", U8, b"2", None, &mut diags).is_none());
        assert!(parse_per_sl("k", U8, b"1 2 3", None, &mut diags).is_none());
    }
}
