//! Inputs no configuration should contain: broken encodings, NUL bytes, huge lines, binary
//! garbage, missing files. Each gives a clear diagnostic or error, never a panic.

mod common;

use std::path::Path;

use common::load_conf;
use ibqos_opensm::{Format, LoadError, MAX_PER_CODE, Severity, load, load_bytes};
use proptest::prelude::*;

fn codes(bytes: &[u8]) -> Vec<&'static str> {
    load_conf(bytes)
        .diagnostics
        .iter()
        .map(|d| d.code.as_str())
        .collect()
}

/// Deterministic pseudo-random bytes (an LCG), so the test needs no RNG crate.
fn garbage(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 56) as u8
        })
        .collect()
}

#[test]
fn invalid_utf8_in_a_string_value_is_reported_in_place() {
    let loaded = load_conf(b"routing_engine min\xffhop\n");
    assert_eq!(
        loaded.settings.sm.routing_engine.as_deref(),
        Some("min?hop")
    );
    let d = &loaded.diagnostics[0];
    assert_eq!(
        (d.code.as_str(), d.severity),
        ("invalid-utf8", Severity::Error)
    );
    let loc = d.location.as_ref().expect("located");
    assert_eq!((loc.line, loc.col), (1, 16));
    // One `?` per bad byte keeps byte columns valid in the line text.
    assert_eq!(&*loc.line_text, "routing_engine min?hop");
    assert_eq!(loaded.source, "routing_engine min?hop\n");
}

#[test]
fn invalid_utf8_in_a_key_or_a_table() {
    assert_eq!(codes(b"qos\xff TRUE\n"), vec!["unknown-key"]);
    let loaded = load_conf(b"qos TRUE\nqos_sl2vl 1\xff2,3,4,5,6,7,8,9,10,11,12,13,14,15,0\n");
    let sl2vl = loaded.settings.qos.generic.sl2vl.expect("set");
    assert_eq!(
        sl2vl.0[..3].iter().map(|v| v.get()).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == "nonstandard-separator")
        .expect("reported");
    assert_eq!(d.location.as_ref().map(|l| l.col), Some(12));
}

#[test]
fn nul_bytes_end_the_line_and_nothing_else() {
    let loaded = load_conf(b"\0qos TRUE\nlmc 1\0\nsm_sl 2\n");
    assert!(
        !loaded.settings.qos.enabled,
        "the NUL hides the whole first line"
    );
    assert_eq!((loaded.settings.sm.lmc, loaded.settings.sm.sm_sl), (1, 2));
    assert_eq!(codes(b"\0qos TRUE\n"), vec!["nul-byte"]);
}

#[test]
fn a_ten_megabyte_line_is_read_in_1022_byte_pieces() {
    let mut line = b"qos_vlarb_high ".to_vec();
    while line.len() < 10 << 20 {
        line.extend_from_slice(b"1:1,");
    }
    line.push(b'\n');
    let loaded = load_conf(&line);
    let count = |code: &str| {
        loaded
            .diagnostics
            .iter()
            .filter(|d| d.code.as_str() == code)
            .count()
    };
    assert_eq!(count("line-split"), 1);
    assert_eq!(count("unknown-key"), MAX_PER_CODE, "capped");
    assert_eq!(count("too-many-diagnostics"), 1);
    let table = loaded.settings.qos.generic.vlarb_high.expect("set");
    assert_eq!(table.0[63], ibqos_qos::VlArbEntry::new(1, 1));
    // No newline at all: same, and still no panic.
    let endless = vec![b'a'; 10 << 20];
    assert!(load_conf(&endless).has_errors());
}

#[test]
fn a_key_hidden_past_byte_1022_is_read_as_opensm_reads_it() {
    let mut bytes = vec![b' '; 1022];
    bytes.extend_from_slice(b"qos TRUE\n");
    let loaded = load_conf(&bytes);
    assert!(loaded.settings.qos.enabled);
    assert_eq!(codes(&bytes), vec!["line-split"]);
}

#[test]
fn binary_garbage_is_an_error_but_still_read_as_opensm_would() {
    let bytes = garbage(64 << 10, 7);
    let loaded = load_conf(&bytes);
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.code.as_str() == "binary-file")
    );
    assert!(loaded.has_errors());
    assert!(loaded.diagnostics.len() < 40 * MAX_PER_CODE);
    let native = load_bytes("g.toml", &bytes, Format::NativeToml);
    assert!(matches!(native, Err(LoadError::Invalid { .. })));
}

#[test]
fn an_empty_file_is_the_defaults() {
    let loaded = load_conf(b"");
    assert_eq!(loaded.settings, ibqos_opensm::Settings::default());
    assert_eq!(codes(b""), vec!["empty-file"]);
    let native = load_bytes("e.toml", b"", Format::NativeToml).expect("valid");
    // OpenSM's defaults, but for ibqos.toml's own: optimized SL2VL where switches offer it.
    let mut expected = ibqos_opensm::Settings::default();
    expected.links.use_optimized_slvl = true;
    assert_eq!(native.settings, expected);
}

#[test]
fn native_files_must_be_utf8() {
    let Err(LoadError::Invalid { diagnostics, .. }) =
        load_bytes("n.toml", b"[qos]\nenabled = tr\xffue\n", Format::NativeToml)
    else {
        panic!("invalid UTF-8 accepted");
    };
    let loc = diagnostics[0].location.as_ref().expect("located");
    assert_eq!(
        (diagnostics[0].code.as_str(), loc.line, loc.col),
        ("not-utf8", 2, 13)
    );
}

#[test]
fn missing_files_name_the_path_and_the_reason() {
    let err = load(Path::new("/nonexistent/ibqos/opensm.conf")).expect_err("missing");
    assert!(matches!(err, LoadError::Read { .. }));
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/ibqos/opensm.conf") && text.contains("No such file"),
        "{text}"
    );
    let dir = load(Path::new("/")).expect_err("a directory");
    assert!(dir.to_string().contains("directory"), "{dir}");
}

#[test]
fn the_extension_picks_the_reader() {
    assert_eq!(
        Format::from_path(Path::new("/etc/ibqos.toml")),
        Format::NativeToml
    );
    assert_eq!(
        Format::from_path(Path::new("/etc/opensm/opensm.conf")),
        Format::OpenSmConf
    );
    assert_eq!(Format::from_path(Path::new("opensm")), Format::OpenSmConf);
}

/// Keys of every kind the reader treats differently.
const KEYS: &[&str] = &[
    "qos",
    "qos_policy_file",
    "qos_max_vls",
    "qos_ca_high_limit",
    "qos_vlarb_high",
    "qos_swe_vlarb_low",
    "qos_rtr_sl2vl",
    "lmc",
    "sm_priority",
    "guid",
    "max_wire_smps",
    "max_wire_smps2",
    "transaction_timeout",
    "long_transaction_timeout",
    "routing_engine",
    "log_file",
    "console",
    "part_enforce",
    "no_partition_enforcement",
    "m_key_protection_level",
    "m_key_lease_period",
    "sweep_interval",
    "dimn_ports_file",
    "port_search_ordering_file",
    "cc_ca_cong_setting_ccti_timer",
    "cc_sw_cong_setting_victim_mask",
    "cc_cct",
    "cc_sw_cong_setting_credit_starvation_return_delay",
    "head_of_queue_lifetime",
    "bogus",
];

/// Bytes values are made of: digits, separators, quotes, comment, NUL, invalid UTF-8.
const VALUE_BYTES: &[u8] = b"0123456789x:,; -\"'#\0\xff\tTRUEFALSE(null)abc";

proptest! {
    #[test]
    fn any_bytes_load_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = load_bytes("f.conf", &bytes, Format::OpenSmConf);
        let _ = load_bytes("f.toml", &bytes, Format::NativeToml);
    }

    /// The fuzz target's property: what the reader read survives a write and a second read.
    #[test]
    fn read_write_read_is_stable(
        lines in proptest::collection::vec(
            (
                prop::sample::select(KEYS),
                "[ \t]{0,2}",
                proptest::collection::vec(prop::sample::select(VALUE_BYTES), 0..40),
            ),
            0..12,
        )
    ) {
        let mut bytes = Vec::new();
        for (key, sep, value) in lines {
            bytes.extend_from_slice(key.as_bytes());
            bytes.extend_from_slice(sep.as_bytes());
            bytes.extend_from_slice(&value);
            bytes.push(b'\n');
        }
        let loaded = load_conf(&bytes);
        let (written, _) = ibqos_opensm::to_opensm_conf(&loaded.settings);
        prop_assert_eq!(load_conf(written.as_bytes()).settings, loaded.settings, "{}", written);
    }

    #[test]
    fn any_opensm_like_text_loads_without_panic(
        lines in proptest::collection::vec("[a-z_]{1,30}[ \t=]{0,2}[ -~\t\r\"']{0,40}", 0..20)
    ) {
        let text = lines.join("\n");
        let loaded = load_bytes("f.conf", text.as_bytes(), Format::OpenSmConf)
            .expect("opensm.conf always loads");
        for d in &loaded.diagnostics {
            if let Some(loc) = &d.location {
                prop_assert!(loc.len >= 1 && loc.col >= 1 && loc.line >= 1);
            }
        }
    }
}
