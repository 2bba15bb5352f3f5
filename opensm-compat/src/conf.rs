//! opensm.conf, read exactly as OpenSM 3.3.23's `osm_subn_parse_conf_file` reads it
//! (`osm_subnet.c:2231-2294`) and verified as `osm_subn_verify_config` verifies it
//! (`osm_subnet.c:2036-2229`), and written so that OpenSM reads back the same values.

use std::sync::Arc;

use ibqos_text::cnum::is_c_space;
use ibqos_text::{
    Code, Diagnostic, Location, Severity, SourceLine, cap_per_code, display_text,
    sort_in_reading_order,
};

use crate::options::{self, Anchor, Kind, OPTIONS, Value, shown};
use crate::settings::{
    self, QOS_SETS, QosField, Settings, Slot, Store, parse_qos_key, qos_key, qos_prefix,
};
use crate::tables;

/// Where a file sets each option, by OpenSM's name (as [`settings::changed_options`] names it).
pub(crate) type Places = std::collections::BTreeMap<String, Location>;

/// `fgets(line, 1023, f)` (`osm_subnet.c:2259`) returns at most 1022 bytes: a longer line is
/// read in pieces, and OpenSM parses each piece as a line of its own.
const FGETS_MAX: usize = 1022;

/// Reads opensm.conf bytes. Never fails: OpenSM reads any file, so the result is what OpenSM
/// would run with, the diagnostics say what it dropped or bent on the way, and the places
/// where the file sets each option.
pub(crate) fn read(name: &str, bytes: &[u8]) -> (Settings, Vec<Diagnostic>, Places) {
    let file: Arc<str> = Arc::from(name);
    let mut diags = Vec::new();
    if let Some(d) = binary_check(name, bytes) {
        diags.push(d);
    }
    if bytes.iter().all(|b| is_c_space(*b)) {
        diags.push(Diagnostic::note(
            Code::EmptyFile,
            format!("{name} sets no option: OpenSM's defaults apply"),
        ));
    }
    let mut store = Store::defaults();
    for (index, physical) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let content = physical.strip_suffix(b"\n").unwrap_or(physical);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        let line = SourceLine {
            file: Arc::clone(&file),
            number: index + 1,
            text: Arc::from(display_text(content)),
        };
        for (k, piece) in physical.chunks(FGETS_MAX).enumerate() {
            read_piece(&mut store, &line, k * FGETS_MAX, piece, &mut diags);
        }
        if let Some(rest) = physical.get(FGETS_MAX..)
            && rest.iter().any(|b| !is_c_space(*b))
        {
            diags.push(
                Diagnostic::warning(
                    Code::LineSplit,
                    format!(
                        "line is {} bytes long: OpenSM reads 1022 bytes at a time, so from here on it reads {} more line(s)",
                        content.len(),
                        rest.len().div_ceil(FGETS_MAX)
                    ),
                )
                .with_help("the value is cut here, and each further piece starts with what OpenSM takes for a key")
                .at(Some(line.span(FGETS_MAX, content.len().saturating_sub(FGETS_MAX)))),
            );
        }
    }
    verify(&mut store, &mut diags);
    lint(&store, &mut diags);
    let settings = store.to_settings(&mut diags);
    (settings, finish(diags), store.places())
}

/// Sorts diagnostics into reading order (those without a location last) and caps repeats.
pub(crate) fn finish(mut diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    sort_in_reading_order(&mut diags);
    cap_per_code(diags)
}

/// An error when more than a tenth of the bytes are not text.
fn binary_check(name: &str, bytes: &[u8]) -> Option<Diagnostic> {
    let mut bad = 0;
    let mut first = None;
    let mut offset = 0;
    for chunk in bytes.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            if c.is_control() && !c.is_ascii_whitespace() && c != '\x0b' {
                bad += 1;
                first.get_or_insert(offset + i);
            }
        }
        offset += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            bad += chunk.invalid().len();
            first.get_or_insert(offset);
        }
        offset += chunk.invalid().len();
    }
    (bad * 10 > bytes.len()).then(|| {
        Diagnostic::error(
            Code::BinaryFile,
            format!(
                "{name} does not look like a text file: {bad} of its {} bytes are not text",
                bytes.len()
            ),
        )
        .with_help("OpenSM would still read it line by line, ignoring what it does not recognise")
        .at(first.map(|at| Location::in_source(name, bytes, at, at + 1)))
    })
}

/// One `fgets` result: a piece of physical line `line` starting at byte `off`.
fn read_piece(
    store: &mut Store,
    line: &SourceLine,
    off: usize,
    piece: &[u8],
    diags: &mut Vec<Diagnostic>,
) {
    // The rest is C string handling: the piece ends at its first NUL.
    let text = match piece.iter().position(|b| *b == 0) {
        Some(nul) => {
            if piece[nul..].iter().any(|b| *b != 0 && !is_c_space(*b)) {
                diags.push(
                    Diagnostic::warning(
                        Code::NulByte,
                        "NUL byte: OpenSM reads this line only up to here and ignores the rest",
                    )
                    .at(Some(line.span(off + nul, 1))),
                );
            }
            &piece[..nul]
        }
        None => piece,
    };
    // `strchr(line, '#')` truncates, quotes or not (`osm_subnet.c:2260-2264`).
    let hash = text.iter().position(|b| *b == b'#');
    let text = &text[..hash.unwrap_or(text.len())];
    // `strtok_r(line, " \t\n", &p_val)`: the key, and the value starts one byte after it.
    let is_delim = |b: &u8| matches!(b, b' ' | b'\t' | b'\n');
    let Some(key_start) = text.iter().position(|b| !is_delim(b)) else {
        return;
    };
    let key_end = text[key_start..]
        .iter()
        .position(is_delim)
        .map_or(text.len(), |p| key_start + p);
    let key = &text[key_start..key_end];
    let rest = (key_end + 1).min(text.len());
    let (start, end) = clean_val(text, rest);
    let raw = &text[start..end];
    let anchor = Anchor::Line {
        line: line.clone(),
        col0: off + start,
        len: end - start,
    };
    let key_span = Some(line.span(off + key_start, key.len()));
    let Some((index, spelling)) = options::lookup(key) else {
        diags.push(unknown_key(key).at(key_span));
        return;
    };
    let name = OPTIONS[index].key;
    if spelling == options::KeySpelling::Alias {
        diags.push(
            Diagnostic::note(
                Code::AliasKey,
                format!(
                    "`{}` is an old name of `{name}`",
                    String::from_utf8_lossy(key)
                ),
            )
            .at(key_span),
        );
    }
    let hash_at = hash.map(|h| line.span(off + h, 1));
    quote_checks(name, &text[rest..], raw, hash_at, &anchor, diags);
    apply(store, index, raw, anchor, diags);
}

/// `clean_val` (`osm_subnet.c:1693-1713`): strips leading and trailing `isspace`, then one pair
/// of matching surrounding quotes. Returns the value's range in `text`.
fn clean_val(text: &[u8], from: usize) -> (usize, usize) {
    let mut start = from;
    while start < text.len() && is_c_space(text[start]) {
        start += 1;
    }
    let mut end = text.len();
    while end > start && is_c_space(text[end - 1]) {
        end -= 1;
    }
    if end > start && matches!(text[start], b'"' | b'\'') && text[end - 1] == text[start] {
        // A lone quote is both the opening and the closing one: the value becomes empty.
        return if end - start >= 2 {
            (start + 1, end - 1)
        } else {
            (end, end)
        };
    }
    (start, end)
}

/// Warnings for a value that starts with a quote OpenSM does not strip.
fn quote_checks(
    key: &str,
    before_clean: &[u8],
    raw: &[u8],
    hash: Option<Location>,
    anchor: &Anchor,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(&quote) = raw.first().filter(|q| matches!(q, b'"' | b'\'')) else {
        return;
    };
    if raw.len() > 1 && raw.last() == Some(&quote) {
        return;
    }
    let opened = before_clean.iter().filter(|b| **b == quote).count() % 2 == 1;
    let d = match hash {
        Some(hash) if opened => Diagnostic::warning(
            Code::CommentInQuotes,
            format!(
                "`#` starts a comment even inside quotes: OpenSM reads `{key}` as `{}`",
                shown(raw)
            ),
        )
        .with_help("opensm.conf has no way to put `#` in a value")
        .at(Some(hash)),
        _ => Diagnostic::warning(
            Code::UnbalancedQuote,
            format!(
                "`{key}`: the opening quote is never closed, so OpenSM keeps it in the value `{}`",
                shown(raw)
            ),
        )
        .at(Some(anchor.span(0, 1))),
    };
    diags.push(d);
}

/// The error for a key OpenSM does not know, with the likely intended key.
fn unknown_key(key: &[u8]) -> Diagnostic {
    let shown_key = shown(key);
    let d = Diagnostic::error(
        Code::UnknownKey,
        format!("unknown option `{shown_key}`: OpenSM ignores this line"),
    );
    let text = String::from_utf8_lossy(key);
    let known = |k: &str| options::lookup(k.as_bytes()).is_some();
    let help = if let Some((k, v)) = text.split_once(['=', ':']).filter(|(k, _)| known(k)) {
        format!("OpenSM separates key and value by whitespace only: write `{k} {v}`")
    } else if let Some(k) = text.strip_suffix('\r').filter(|k| known(k)) {
        format!(
            "the line ends in a carriage return (DOS line ending) right after `{k}`, and OpenSM keeps it in the key"
        )
    } else if let Some(spec) = OPTIONS.iter().find(|o| o.key.eq_ignore_ascii_case(&text)) {
        format!("keys are case-sensitive: did you mean `{}`?", spec.key)
    } else if let Some(spec) = OPTIONS
        .iter()
        .filter(|o| o.key.len().abs_diff(text.len()) <= 2)
        .min_by_key(|o| edit_distance(o.key.as_bytes(), key))
        .filter(|o| edit_distance(o.key.as_bytes(), key) <= 2)
    {
        format!("did you mean `{}`?", spec.key)
    } else {
        format!(
            "OpenSM prints: Unrecognized token: \"{shown_key}\" (`opensm -c FILE` lists every key)"
        )
    };
    d.with_help(help)
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Applies one `key value` line as the option's `parse_fn` does: a rejected value leaves the
/// previous one in place, an accepted one replaces it (the last line wins).
fn apply(store: &mut Store, index: usize, raw: &[u8], anchor: Anchor, diags: &mut Vec<Diagnostic>) {
    let spec = &OPTIONS[index];
    let origin = Some(&anchor);
    let (parsed, target) = match spec.kind {
        Kind::PerSl(max) => match options::parse_per_sl(spec.key, max, raw, origin, diags) {
            Some((sl, parsed)) => (
                parsed,
                store
                    .per_sl
                    .entry((index, sl))
                    .or_insert_with(|| store.slots[index].clone()),
            ),
            None => return,
        },
        kind => match options::parse_value(spec.key, kind, raw, origin, diags) {
            Some(parsed) => (parsed, &mut store.slots[index]),
            None => return,
        },
    };
    if let Some(previous) = &target.origin
        && target.value != parsed.value
    {
        diags.push(
            Diagnostic::warning(
                Code::DuplicateKey,
                format!(
                    "`{}` is set again on line {}: OpenSM uses the last value",
                    spec.key,
                    anchor.whole().line
                ),
            )
            .at(Some(previous.whole())),
        );
    }
    *target = Slot {
        value: parsed.value,
        text: parsed.text,
        raw: raw.to_vec(),
        origin: Some(anchor),
        set: true,
    };
}

/// Where `key` was set, for a diagnostic about its value.
fn at(store: &Store, key: &str) -> Option<Location> {
    store.origin(key).map(Anchor::whole)
}

/// A verify step that throws a value away (`Invalid Cached Option Value ... Using Default`).
struct Reset {
    key: &'static str,
    invalid: fn(u64) -> bool,
    default: u64,
    valid: &'static str,
}

/// The range checks of `osm_subn_verify_config` (`osm_subnet.c:2036-2229`) that replace a value
/// with a default.
const RESETS: [Reset; 10] = [
    Reset {
        key: "lmc",
        invalid: |v| v > 7,
        default: 0,
        valid: "0-7",
    },
    Reset {
        key: "sm_priority",
        invalid: |v| v > 15,
        default: 0,
        valid: "0-15",
    },
    Reset {
        key: "force_link_speed",
        invalid: |v| v > 15 || (7 < v && v < 15),
        default: 15,
        valid: "0-7 or 15",
    },
    Reset {
        key: "force_link_speed_ext",
        invalid: |v| v > 31 || (7 < v && v < 30),
        default: 31,
        valid: "0-7, 30 or 31",
    },
    Reset {
        key: "force_link_width",
        invalid: |v| v > 255 || (31 < v && v < 255),
        default: 255,
        valid: "0-31 or 255",
    },
    Reset {
        key: "fdr10",
        invalid: |v| v > 2,
        default: 1,
        valid: "0-2",
    },
    Reset {
        key: "max_wire_smps",
        invalid: |v| v > 0x7fff_ffff,
        default: 4,
        valid: "0-2147483647",
    },
    Reset {
        key: "perfmgr_sweep_time_s",
        invalid: |v| v < 1,
        default: 180,
        valid: "1-65535",
    },
    Reset {
        key: "perfmgr_max_outstanding_queries",
        invalid: |v| v < 1,
        default: 500,
        valid: "1-4294967295",
    },
    Reset {
        key: "m_key_protection_level",
        invalid: |v| v > 3,
        default: 2,
        valid: "0-3",
    },
];

/// What `max_wire_smps` 0 (no limit) becomes after the verify step.
const UNLIMITED_WIRE_SMPS: u64 = 0x7fff_ffff;

/// What OpenSM's verify step makes of `value` for `key`: the default for a value a reset rule
/// throws away, the real limit for `max_wire_smps` 0, else `value` itself.
pub(crate) fn verified(key: &str, value: u64) -> u64 {
    match RESETS.iter().find(|rule| rule.key == key) {
        Some(rule) if (rule.invalid)(value) => rule.default,
        _ if key == "max_wire_smps" && value == 0 => UNLIMITED_WIRE_SMPS,
        _ => value,
    }
}

/// The error for a value the verify step replaced.
fn reset(store: &Store, key: &str, what: String, now: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        Code::ResetToDefault,
        format!("`{key}` {what}: OpenSM uses {now} instead"),
    )
    .at(at(store, key))
}

/// `osm_subn_verify_config`: replaces invalid values, as OpenSM does after reading the file.
fn verify(store: &mut Store, diags: &mut Vec<Diagnostic>) {
    for rule in &RESETS {
        if let Some(v) = store.uint(rule.key).filter(|v| (rule.invalid)(*v)) {
            diags.push(reset(
                store,
                rule.key,
                format!("{v} is out of range {}", rule.valid),
                rule.default,
            ));
            store.replace(rule.key, Value::Uint(rule.default));
        }
    }
    if store.uint("max_wire_smps") == Some(0) {
        diags.push(
            Diagnostic::note(
                Code::MaxWireSmpsUnlimited,
                "`max_wire_smps` 0 means no limit: OpenSM uses 2147483647",
            )
            .at(at(store, "max_wire_smps")),
        );
        store.replace("max_wire_smps", Value::Uint(UNLIMITED_WIRE_SMPS));
    }
    let wire = store.uint("max_wire_smps").unwrap_or(4);
    if let Some(v) = store.uint("max_wire_smps2").filter(|v| *v > 0x7fff_ffff) {
        diags.push(reset(
            store,
            "max_wire_smps2",
            format!("{v} is above 2147483647"),
            format!("max_wire_smps ({wire})"),
        ));
        store.replace("max_wire_smps2", Value::Uint(wire));
    }
    if let (Some(long), Some(short)) = (
        store.uint("long_transaction_timeout"),
        store.uint("transaction_timeout"),
    ) && long < short
    {
        diags.push(reset(
            store,
            "long_transaction_timeout",
            format!("{long} is shorter than transaction_timeout"),
            short,
        ));
        store.replace("long_transaction_timeout", Value::Uint(short));
    }
    const CONSOLE: [&str; 3] = ["off", "local", "loopback"];
    const PART_ENFORCE: [&str; 4] = ["both", "in", "out", "off"];
    for (key, choices) in [
        ("console", &CONSOLE[..]),
        ("part_enforce", &PART_ENFORCE[..]),
    ] {
        if let Some(Value::Str(None)) = store.value(key) {
            diags.push(
                Diagnostic::error(
                    Code::OpensmCrash,
                    format!("`{key}` (null) makes OpenSM crash: it compares the NULL string"),
                )
                .with_help(format!("use one of: {}", choices.join(", ")))
                .at(at(store, key)),
            );
            store.replace(key, Value::Str(Some(choices[0].to_string())));
        }
    }
    verify_choice(store, "console", &CONSOLE, diags);
    if store.boolean("no_partition_enforcement") {
        if matches!(store.value("part_enforce"), Some(Value::Str(Some(p))) if p != "off")
            && store.origin("part_enforce").is_some()
        {
            diags.push(
                Diagnostic::warning(
                    Code::Overridden,
                    "`part_enforce` is replaced by `off` because no_partition_enforcement is TRUE",
                )
                .at(at(store, "part_enforce")),
            );
        }
        store.replace("part_enforce", Value::Str(Some("off".to_string())));
    }
    verify_choice(store, "part_enforce", &PART_ENFORCE, diags);
    verify_qos(store, diags);
    verify_mkey_lease(store, diags);
}

/// A string option that must be one of `choices`, the first being the default. A NULL one
/// crashes OpenSM (`strcmp` on it in `osm_subn_verify_config`; checked: `console (null)` and
/// `part_enforce (null)` make opensm 3.3.23 segfault), which `verify` reports before this.
fn verify_choice(store: &mut Store, key: &str, choices: &[&str], diags: &mut Vec<Diagnostic>) {
    let Some(Value::Str(Some(v))) = store.value(key) else {
        return;
    };
    if choices.contains(&v.as_str()) {
        return;
    }
    let what = format!("`{v}` is not one of {}", choices.join(", "));
    diags.push(reset(store, key, what, choices[0]));
    store.replace(key, Value::Str(Some(choices[0].to_string())));
}

/// `subn_verify_qos_set` for the five sets, which OpenSM runs only when `qos` is TRUE
/// (`osm_subnet.c:2152-2158`); OpenSM's own VLArb/SL2VL warnings are reported as notes.
fn verify_qos(store: &mut Store, diags: &mut Vec<Diagnostic>) {
    let qos = store.boolean("qos");
    let unverified = |key: &str, v: &dyn std::fmt::Display, range: &str| {
        Diagnostic::note(
            Code::QosNotVerified,
            format!(
                "`{key}` {v} is out of range {range}; OpenSM checks QoS options only when qos is TRUE, so it keeps {v} for now"
            ),
        )
        .with_help("ibqos reads it as unset, as OpenSM does once QoS is enabled (qos TRUE or -Q)")
    };
    for class in QOS_SETS {
        let prefix = qos_prefix(class);
        let key = qos_key(class, QosField::MaxVls);
        if let Some(v) = store.uint(&key).filter(|v| *v > 15) {
            if qos {
                diags.push(
                    reset(store, &key, format!("{v} is out of range 1-15"), "15 (unset)")
                        .with_help(format!("OpenSM prints: Invalid Cached Option: {prefix}_max_vls={v}: Using Default = 15")),
                );
                store.replace(&key, Value::Uint(0));
            } else {
                diags.push(unverified(&key, &v, "1-15").at(at(store, &key)));
            }
        }
        let key = qos_key(class, QosField::HighLimit);
        if let Some(&Value::Int(v)) = store.value(&key) {
            if v < -1 {
                diags.push(
                    Diagnostic::warning(
                        Code::HighLimitNegative,
                        format!(
                            "`{key}` {v} is negative: OpenSM treats it as unset, without a message"
                        ),
                    )
                    .with_help("-1 is OpenSM's way of writing unset")
                    .at(at(store, &key)),
                );
            }
            if v > 255 && !qos {
                diags.push(unverified(&key, &v, "0-255").at(at(store, &key)));
            } else if v > 255 {
                diags.push(
                    reset(store, &key, format!("{v} is out of range 0-255"), "unset (VLHighLimit 0 unless the generic set has one)")
                        .with_help(format!("OpenSM prints: Invalid Cached Option: {prefix}_high_limit={v}: Using Default: 0")),
                );
            }
            if qos && !(-1..=255).contains(&v) {
                store.replace(&key, Value::Int(-1));
            }
        }
        if !qos {
            continue;
        }
        for field in [QosField::VlArbLow, QosField::VlArbHigh, QosField::Sl2Vl] {
            let key = qos_key(class, field);
            let Some(slot) = store
                .slot(&key)
                .filter(|s| matches!(s.value, Value::Str(Some(_))))
            else {
                continue;
            };
            let messages = match field {
                QosField::VlArbLow => tables::opensm_vlarb_warnings(&prefix, "low", &slot.raw),
                QosField::VlArbHigh => tables::opensm_vlarb_warnings(&prefix, "high", &slot.raw),
                _ => tables::opensm_sl2vl_warnings(&prefix, &slot.raw),
            };
            for msg in messages {
                let msg = msg.strip_prefix(b" ").unwrap_or(&msg);
                let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
                diags.push(
                    Diagnostic::note(
                        Code::OpensmSays,
                        format!("OpenSM prints: {}", display_text(msg)),
                    )
                    .at(at(store, &key)),
                );
            }
        }
    }
}

/// The M_Key lease period and the sweep interval pull each other (`osm_subnet.c:2198-2226`).
fn verify_mkey_lease(store: &mut Store, diags: &mut Vec<Diagnostic>) {
    let (Some(protect), Some(lease), Some(sweep)) = (
        store.uint("m_key_protection_level"),
        store.uint("m_key_lease_period"),
        store.uint("sweep_interval"),
    ) else {
        return;
    };
    if protect == 0 || lease == 0 {
        return;
    }
    let mut sweep = sweep;
    if sweep == 0 {
        sweep = lease - 1;
        diags.push(
            Diagnostic::warning(
                Code::Overridden,
                format!("`sweep_interval` 0 (no sweeping) is raised to {sweep} because M_Key leases are protected"),
            )
            .at(at(store, "sweep_interval")),
        );
        store.replace("sweep_interval", Value::Uint(sweep));
    }
    if sweep >= lease {
        // `cl_hton16(sweep_interval + 1)`: the lease period has 16 bits.
        let new = u64::from((sweep + 1) as u16);
        diags.push(
            Diagnostic::warning(
                Code::Overridden,
                format!("`m_key_lease_period` {lease} is not longer than sweep_interval {sweep}: OpenSM uses {new}"),
            )
            .at(at(store, "m_key_lease_period")),
        );
        store.replace("m_key_lease_period", Value::Uint(new));
    }
}

/// Values OpenSM accepts without a word but does not use as written.
fn lint(store: &Store, diags: &mut Vec<Diagnostic>) {
    let mut push = |key: &str, severity: Severity, code: Code, message: String| {
        diags.push(Diagnostic::new(severity, code, message).at(at(store, key)));
    };
    if let Some(v) = store
        .uint("max_op_vls")
        .filter(|_| store.origin("max_op_vls").is_some())
    {
        let encoding =
            "max_op_vls is an encoding, not a count: 1 = 1 VL, 2 = 2, 3 = 4, 4 = 8, 5 = 15";
        match v {
            0 => push(
                "max_op_vls",
                Severity::Warning,
                Code::MaxOpVlsZero,
                format!(
                    "`max_op_vls` 0 makes OpenSM program OperVLs 0, which no port supports ({encoding})"
                ),
            ),
            1..=5 => {}
            _ => push(
                "max_op_vls",
                Severity::Warning,
                Code::MaxOpVlsEncoding,
                format!("`max_op_vls` {v} sets no limit, the same as 5 (15 VLs); {encoding}"),
            ),
        }
    }
    for (key, bits) in [
        ("head_of_queue_lifetime", 5),
        ("leaf_head_of_queue_lifetime", 5),
        ("vl_stall_count", 3),
        ("leaf_vl_stall_count", 3),
    ] {
        let mask = (1u64 << bits) - 1;
        if let Some(v) = store.uint(key).filter(|v| *v > mask) {
            push(
                key,
                Severity::Warning,
                Code::FieldTruncated,
                format!(
                    "`{key}` {v} does not fit the {bits}-bit PortInfo field: OpenSM programs {}",
                    v & mask
                ),
            );
        }
    }
    for key in ["sm_sl", "lash_start_vl", "nue_max_num_vls"] {
        if let Some(v) = store.uint(key).filter(|v| *v > 15) {
            push(
                key,
                Severity::Warning,
                Code::UncheckedValue,
                format!(
                    "`{key}` {v} is above 15: OpenSM's command line rejects it but the file is not checked"
                ),
            );
        }
    }
    let qos = store.boolean("qos");
    let qos_lines = OPTIONS
        .iter()
        .filter(|o| parse_qos_key(o.key).is_some())
        .filter(|o| store.origin(o.key).is_some())
        .count();
    if !qos && qos_lines > 0 {
        let first = OPTIONS
            .iter()
            .find(|o| parse_qos_key(o.key).is_some() && store.origin(o.key).is_some());
        push(
            first.map_or("qos", |o| o.key),
            Severity::Note,
            Code::QosDisabled,
            format!(
                "qos is FALSE, so none of the {qos_lines} qos_* options set here has any effect"
            ),
        );
    }
    for class in QOS_SETS {
        let key = qos_key(class, QosField::MaxVls);
        if store.origin(&key).is_some() && store.uint(&key).is_some_and(|v| (1..=15).contains(&v)) {
            push(
                &key,
                Severity::Note,
                Code::MaxVlsUnused,
                format!("`{key}` is checked by OpenSM but never used to program anything"),
            );
        }
    }
    if qos && matches!(store.value("qos_policy_file"), Some(Value::Str(None))) {
        push("qos_policy_file", Severity::Warning, Code::NoPolicyFile, "qos_policy_file is (null): OpenSM logs `ERR AC06: QoS policy file name is empty` at every sweep".to_string());
    }
}

/// Whether `clean_val` would change `text`, so that it must be written in quotes.
fn needs_quotes(text: &str) -> bool {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(first), Some(last)) => {
            is_c_space(*first)
                || is_c_space(*last)
                || (matches!(first, b'"' | b'\'') && first == last)
        }
        _ => true,
    }
}

/// `key value`, quoted if need be, if it fits in one `fgets` read.
fn fitting_line(key: &str, text: &str) -> Option<String> {
    let line = if needs_quotes(text) {
        format!("{key} \"{text}\"")
    } else {
        format!("{key} {text}")
    };
    (line.len() <= FGETS_MAX).then_some(line)
}

/// The line for `key` = `text`, under `key` or, when only that fits, an alias of it. opensm.conf
/// cannot carry a newline, NUL or `#` in a value, nor a line longer than 1022 bytes: the value is
/// cut before the first of those, and `to_opensm_conf` reports the cut.
fn line(key: &str, text: &str) -> String {
    let keys: Vec<&str> = std::iter::once(key)
        .chain(
            options::ALIASES
                .iter()
                .filter(|(_, to)| *to == key)
                .map(|(alias, _)| *alias),
        )
        .collect();
    let mut end = text
        .find(['\n', '\0', '#'])
        .unwrap_or(text.len())
        .min(FGETS_MAX);
    loop {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if let Some(line) = keys.iter().find_map(|k| fitting_line(k, &text[..end])) {
            return line;
        }
        end -= 1;
    }
}

/// The opensm.conf text for `s`: every typed option and every passthrough option it holds, in
/// `opensm -c` order, formatted as `opensm -c` formats them.
pub(crate) fn write(s: &Settings) -> String {
    let mut out = String::from(
        "# OpenSM configuration written by ibqos (ibqos-opensm); OpenSM 3.3.23 reads it as intended.\n",
    );
    for field in settings::fields(s) {
        out.push_str(&line(&field.key, &field.text));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_applies_the_verify_rules() {
        assert_eq!(verified("lmc", 7), 7);
        assert_eq!(verified("lmc", 8), 0);
        assert_eq!(verified("sm_priority", 16), 0);
        assert_eq!(verified("max_wire_smps", 0), UNLIMITED_WIRE_SMPS);
        assert_eq!(verified("max_wire_smps", 0x8000_0000), 4);
        assert_eq!(verified("max_wire_smps", 8), 8);
        assert_eq!(verified("sweep_interval", 0), 0, "no rule");
    }

    #[test]
    fn clean_val_matches_opensm() {
        let c = |s: &str| {
            let (a, b) = clean_val(s.as_bytes(), 0);
            s[a..b].to_string()
        };
        assert_eq!(c("  \"0:0,1:64\"  \r\n"), "0:0,1:64");
        assert_eq!(c("'x'"), "x");
        assert_eq!(c("\"x'"), "\"x'");
        assert_eq!(c("\""), "");
        assert_eq!(c("\"\""), "");
        assert_eq!(c(" \t"), "");
    }

    #[test]
    fn quoting_survives_clean_val() {
        for text in ["", " a ", "\"a\"", "'", "a\"", "x y"] {
            let written = line("k", text);
            let (a, b) = clean_val(written.as_bytes(), 2);
            assert_eq!(&written[a..b], text, "{written}");
        }
    }

    #[test]
    fn long_values_use_the_shorter_alias_or_are_cut() {
        let long = "x".repeat(1000);
        assert!(line("port_search_ordering_file", &long).starts_with("dimn_ports_file "));
        let cut = line("log_file", &"y".repeat(5000));
        assert_eq!(cut.len(), FGETS_MAX);
        assert_eq!(line("log_file", "a#b\nc"), "log_file a");
    }

    #[test]
    fn edit_distance_suggests() {
        assert_eq!(edit_distance(b"qos_max_vls", b"qos_max_vl"), 1);
        let d = unknown_key(b"qos_sl2v1");
        assert_eq!(d.help.as_deref(), Some("did you mean `qos_sl2vl`?"));
    }
}
