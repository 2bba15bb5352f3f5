//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;

use ibqos_opensm::{Format, Loaded, load_bytes};
use serde::Deserialize;

/// One vector of tests/data/vectors.toml (its header says what the fields mean).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vector {
    pub id: String,
    pub conf: String,
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
    #[serde(default)]
    pub codes: Vec<String>,
    #[serde(default)]
    pub at: Vec<String>,
    #[serde(default)]
    pub opensm_says: Vec<String>,
    #[serde(default = "yes")]
    pub oracle: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorFile {
    vector: Vec<Vector>,
}

pub fn vectors() -> Vec<Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/vectors.toml");
    let text = std::fs::read_to_string(path).expect("tests/data/vectors.toml");
    toml::from_str::<VectorFile>(&text)
        .expect("vectors.toml parses")
        .vector
}

pub fn load_conf(bytes: &[u8]) -> Loaded {
    load_bytes("v.conf", bytes, Format::OpenSmConf).expect("opensm.conf always loads")
}

/// The options OpenSM keeps one value per SL for, written `key SL value`.
pub fn is_per_sl(key: &str) -> bool {
    [
        "ccti_timer",
        "ccti_increase",
        "trigger_threshold",
        "ccti_min",
    ]
    .iter()
    .any(|o| key.starts_with(&format!("cc_ca_cong_setting_{o}")))
}

/// `key -> value` of an opensm.conf as written by `opensm -c` or ibqos: the first token is the
/// key, the rest of the line the value. The per-SL options (`key SL value`) are keyed
/// `"key SL"`.
pub fn conf_pairs(text: &str) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        if is_per_sl(key) {
            let (sl, value) = value.split_once(' ').unwrap_or((value, ""));
            pairs.insert(format!("{key} {sl}"), value.to_string());
        } else {
            pairs.insert(key.to_string(), value.to_string());
        }
    }
    pairs
}

/// Strategies for settings.
pub mod strategy {
    use std::collections::BTreeMap;

    use ibqos_opensm::{LinkSettings, Settings, SmSettings};
    use ibqos_qos::{QosConfig, QosSet, Sl2VlTable, Vl, VlArbEntry, VlArbTable};
    use proptest::collection::{btree_map, vec};
    use proptest::option;
    use proptest::prelude::*;

    /// Strings both formats carry: no `#`, newline or NUL (opensm.conf cannot), not `(null)`.
    pub fn text() -> impl Strategy<Value = String> {
        "[ -\"$-~\u{e9}\u{20ac}]{0,24}".prop_filter("(null) is NULL", |s| s != "(null)")
    }

    /// Strings of any kind, for conversions that must report what they cannot carry.
    pub fn any_text() -> impl Strategy<Value = String> {
        prop_oneof![
            text(),
            Just("(null)".to_string()),
            "[\\PC\n\0#\r\t ]{0,24}",
            "[a-z]{1200,1300}",
        ]
    }

    fn vlarb(vl: impl Strategy<Value = u8> + Clone) -> impl Strategy<Value = VlArbTable> + Clone {
        vec((vl, any::<u8>()), 0..=64).prop_map(|entries| {
            let entries: Vec<VlArbEntry> = entries
                .into_iter()
                .map(|(vl, weight)| VlArbEntry::new(vl, weight))
                .collect();
            VlArbTable::from_entries(&entries)
        })
    }

    fn sl2vl() -> impl Strategy<Value = Sl2VlTable> + Clone {
        any::<[u8; 16]>().prop_map(|vls| Sl2VlTable(vls.map(Vl::from_nibble)))
    }

    fn qos_set(
        max_vls: impl Strategy<Value = u8> + Clone,
        vl: impl Strategy<Value = u8> + Clone,
    ) -> impl Strategy<Value = QosSet> + Clone {
        (
            option::of(max_vls),
            option::of(any::<u8>()),
            option::of(vlarb(vl.clone())),
            option::of(vlarb(vl)),
            option::of(sl2vl()),
        )
            .prop_map(
                |(max_vls, high_limit, vlarb_high, vlarb_low, sl2vl)| QosSet {
                    max_vls,
                    high_limit,
                    vlarb_high,
                    vlarb_low,
                    sl2vl,
                },
            )
    }

    fn qos(
        max_vls: impl Strategy<Value = u8> + Clone,
        vl: impl Strategy<Value = u8> + Clone,
    ) -> impl Strategy<Value = QosConfig> {
        let set = qos_set(max_vls, vl);
        (
            any::<bool>(),
            set.clone(),
            set.clone(),
            set.clone(),
            set.clone(),
            set,
        )
            .prop_map(|(enabled, generic, ca, sw0, swe, rtr)| QosConfig {
                enabled,
                generic,
                ca,
                sw0,
                swe,
                rtr,
            })
    }

    /// Recognised options ibqos passes through, with values OpenSM accepts as they are.
    fn passthrough() -> impl Strategy<Value = BTreeMap<String, String>> {
        let entry = prop_oneof![
            any::<bool>().prop_map(|b| (
                "m_key_lookup".to_string(),
                if b { "TRUE" } else { "FALSE" }.to_string()
            )),
            any::<u32>().prop_map(|v| ("sminfo_polling_timeout".to_string(), v.to_string())),
            any::<u16>().prop_map(|v| ("console_port".to_string(), v.to_string())),
            any::<u8>().prop_map(|v| ("packet_life_time".to_string(), v.to_string())),
            text().prop_map(|t| ("port_prof_ignore_file".to_string(), t)),
            prop_oneof![Just("both"), Just("in"), Just("out"), Just("off")]
                .prop_map(|p| ("part_enforce".to_string(), p.to_string())),
            (0u8..16, any::<u16>())
                .prop_map(|(sl, v)| (format!("cc_ca_cong_setting_ccti_timer {sl}"), v.to_string())),
            (0u8..16, any::<u8>())
                .prop_map(|(sl, v)| (format!("cc_ca_cong_setting_ccti_min {sl}"), v.to_string())),
        ];
        btree_map(entry, Just(()), 0..6).prop_map(|m| m.into_keys().collect())
    }

    /// Drawn SM option values, grouped as proptest tuples allow (at most 12 per tuple).
    type SmDraw = (
        (u64, u64, u8, u8, u32),
        ((u32, u32), u32, u32),
        (Option<String>, u8, Option<String>, Option<String>),
    );

    /// The SM options from drawn values: (guid, prefix, priority, lmc, sweep interval),
    /// ((timeout, long timeout), retries, max wire SMPs), (engine, SMSL, log file, dump dir).
    fn sm_settings((ids, (timeouts, retries, wire), names): SmDraw) -> SmSettings {
        let (guid, subnet_prefix, priority, lmc, sweep_interval) = ids;
        let (routing_engine, sm_sl, log_file, dump_files_dir) = names;
        SmSettings {
            guid,
            subnet_prefix,
            priority,
            lmc,
            sweep_interval,
            transaction_timeout: timeouts.0,
            long_transaction_timeout: timeouts.1,
            transaction_retries: retries,
            max_wire_smps: wire,
            routing_engine,
            sm_sl,
            log_file,
            dump_files_dir,
        }
    }

    /// The link options from drawn values, in LinkSettings' field order.
    fn link_settings(
        (max_op_vls, hoq, leaf_hoq, stall, leaf_stall, optimized): (u8, u8, u8, u8, u8, bool),
    ) -> LinkSettings {
        LinkSettings {
            max_op_vls,
            head_of_queue_lifetime: hoq,
            leaf_head_of_queue_lifetime: leaf_hoq,
            vl_stall_count: stall,
            leaf_vl_stall_count: leaf_stall,
            use_optimized_slvl: optimized,
        }
    }

    /// Settings both opensm.conf and ibqos.toml can say exactly.
    pub fn expressible() -> impl Strategy<Value = Settings> {
        let timeouts =
            (any::<u32>(), any::<u32>()).prop_map(|(tt, extra)| (tt, tt.saturating_add(extra)));
        let sm = (
            (any::<u64>(), any::<u64>(), 0u8..=15, 0u8..=7, any::<u32>()),
            (timeouts, any::<u32>(), 1u32..=0x7fff_ffff),
            (
                option::of(text()),
                0u8..=15,
                text().prop_map(Some),
                text().prop_map(Some),
            ),
        )
            .prop_map(sm_settings);
        let links =
            (1u8..=5, 0u8..=31, 0u8..=31, 0u8..=7, 0u8..=7, any::<bool>()).prop_map(link_settings);
        (qos(1u8..=15, 0u8..=14), text(), sm, links, passthrough()).prop_map(
            |(qos, policy, sm, links, opensm)| Settings {
                qos,
                qos_policy_file: Some(policy),
                qos_policy: None,
                program_policy_setup: false,
                qos_setup_places: Default::default(),
                m_key_per_port_secret: None,
                perfmgr_lanes: false,
                qos_report_tolerance: ibqos_qos::promise::DEFAULT_TOLERANCE_POINTS,
                cc_read_back: true,
                cc_key_program: false,
                cc_key_protect: false,
                cc_key_lease_period: 0,
                partitions: None,
                guid_files: Default::default(),
                torus_config: None,
                sm,
                links,
                opensm,
            },
        )
    }

    /// Any settings at all, including values one format or the other cannot say.
    pub fn anything() -> impl Strategy<Value = Settings> {
        let sm = (
            (
                any::<u64>(),
                any::<u64>(),
                any::<u8>(),
                any::<u8>(),
                any::<u32>(),
            ),
            ((any::<u32>(), any::<u32>()), any::<u32>(), any::<u32>()),
            (
                option::of(any_text()),
                any::<u8>(),
                option::of(any_text()),
                option::of(any_text()),
            ),
        )
            .prop_map(sm_settings);
        let links = (
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<bool>(),
        )
            .prop_map(link_settings);
        let opensm = btree_map("[a-z_ 0-9]{1,30}", any_text(), 0..4);
        (
            qos(any::<u8>(), any::<u8>()),
            option::of(any_text()),
            sm,
            links,
            opensm,
        )
            .prop_map(|(qos, policy, sm, links, opensm)| Settings {
                qos,
                qos_policy_file: policy,
                qos_policy: None,
                program_policy_setup: false,
                qos_setup_places: Default::default(),
                m_key_per_port_secret: None,
                perfmgr_lanes: false,
                qos_report_tolerance: ibqos_qos::promise::DEFAULT_TOLERANCE_POINTS,
                cc_read_back: true,
                cc_key_program: false,
                cc_key_protect: false,
                cc_key_lease_period: 0,
                partitions: None,
                guid_files: Default::default(),
                torus_config: None,
                sm,
                links,
                opensm,
            })
    }
}
