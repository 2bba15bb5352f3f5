//! qos-policy.conf reader against OpenSM's verdicts, kept as data: every file under
//! `data/qos-policy/rejected/` has beside it the stderr line OpenSM 3.3.23 prints for it (the
//! oracle test `tests/tests/qos_policy_oracle.rs` checks them against the real OpenSM); every
//! file under `accepted/` is one OpenSM parses.

use std::path::{Path, PathBuf};

use ibqos_opensm::qos_policy;

fn data(kind: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/qos-policy")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .{ext} files in {}", dir.display());
    files
}

#[test]
fn rejected_files_fail_with_opensms_message_and_position() {
    let mut wrong = Vec::new();
    for conf in data("rejected", "conf") {
        let expected = std::fs::read_to_string(conf.with_extension("expected"))
            .unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        let bytes = std::fs::read(&conf).expect("readable");
        match qos_policy::read("p.conf", &bytes) {
            Ok(_) => wrong.push(format!("{}: accepted", conf.display())),
            Err(e) if e.opensm_line() != expected.trim_end() => wrong.push(format!(
                "{}:\n  ours:   {}\n  OpenSM: {}",
                conf.display(),
                e.opensm_line(),
                expected.trim_end()
            )),
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn accepted_files_parse_and_write_back_to_the_same_policy() {
    for conf in data("accepted", "conf") {
        let bytes = std::fs::read(&conf).expect("readable");
        let read = qos_policy::read("p.conf", &bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        let text = qos_policy::write(&read.policy);
        let back = qos_policy::read("back.conf", text.as_bytes())
            .unwrap_or_else(|e| panic!("{} written back: {e}\n{text}", conf.display()));
        assert_eq!(back.policy, read.policy, "{}:\n{text}", conf.display());
    }
}

/// An opensm.conf naming `policy` (a path), loaded from a temporary directory.
fn load_with_policy(policy: &str) -> ibqos_opensm::Loaded {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = dir.path().join("opensm.conf");
    std::fs::write(&conf, format!("qos TRUE\nqos_policy_file {policy}\n")).expect("writable");
    ibqos_opensm::load(&conf).expect("an opensm.conf always loads")
}

#[test]
fn the_policy_loads_as_opensm_loads_it() {
    use ibqos_opensm::{DEFAULT_POLICY_FILE, PolicyLoad, load_policy};
    if !Path::new(DEFAULT_POLICY_FILE).exists() {
        assert!(matches!(
            load_policy(Some(DEFAULT_POLICY_FILE)),
            PolicyLoad::DefaultMissing
        ));
    }
    assert!(matches!(load_policy(None), PolicyLoad::NoFileName));

    let missing = load_with_policy("/nonexistent/qos-policy.conf");
    assert_eq!(missing.settings.qos_policy, None);
    let diagnostics = missing.policy.expect("an outcome").diagnostics();
    assert_eq!(
        diagnostics[0].message,
        "ERR AC01: Failed opening QoS policy file /nonexistent/qos-policy.conf - No such file or \
         directory"
    );

    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/qos-policy");
    let rejected = load_with_policy(&data.join("rejected/two-sl.conf").display().to_string());
    assert_eq!(
        rejected.settings.qos_policy, None,
        "a failure drops the whole policy"
    );
    assert!(matches!(rejected.policy, Some(PolicyLoad::Rejected { .. })));

    let accepted = load_with_policy(&data.join("accepted/full.conf").display().to_string());
    let policy = accepted.settings.qos_policy.expect("loaded");
    assert_eq!(policy.port_groups[1].name, "VirtualServers");
    let warnings = accepted.policy.expect("an outcome").diagnostics();
    assert!(
        !warnings.is_empty(),
        "full.conf has sl 16, path-bits, qos-setup..."
    );
}

mod round_trip {
    use ibqos_opensm::{Format, Settings, load_bytes, qos_policy, to_native_toml};
    use ibqos_qos::policy::{
        MatchRule, NodeTypes, PortGroup, PortName, QosLevel, QosPolicy, QosSetup, RangeSet,
        Sl2vlScope, Ulp, UlpKind, VlarbScope,
    };
    use proptest::collection::vec;
    use proptest::option;
    use proptest::prelude::*;

    /// Text qos-policy.conf can quote: no double quote, no blank at either end (the parser
    /// strips them).
    fn text() -> impl Strategy<Value = String> {
        "[!#-~]([ !#-~]{0,10}[!#-~])?"
    }

    fn ranges() -> impl Strategy<Value = RangeSet> {
        vec((any::<u64>(), any::<u64>()), 0..3).prop_map(RangeSet::new)
    }

    fn pkeys() -> impl Strategy<Value = RangeSet> {
        vec((any::<u64>(), any::<u64>()), 0..3).prop_map(RangeSet::pkeys)
    }

    fn group() -> impl Strategy<Value = PortGroup> {
        (
            (text(), option::of(text()), ranges()),
            vec((text(), 1u32..), 0..2),
            (pkeys(), vec(text(), 0..2), any::<[bool; 4]>()),
        )
            .prop_map(
                |((name, usage, port_guids), names, (pkeys, partitions, t))| PortGroup {
                    name,
                    usage,
                    port_guids,
                    port_names: names
                        .into_iter()
                        .map(|(node, port)| PortName { node, port })
                        .collect(),
                    pkeys,
                    partitions,
                    node_types: NodeTypes {
                        ca: t[0],
                        switch: t[1],
                        router: t[2],
                        self_port: t[3],
                    },
                },
            )
    }

    fn level() -> impl Strategy<Value = QosLevel> {
        (
            (text(), option::of(text()), any::<u8>()),
            (
                option::of(1u8..=5),
                option::of(2u8..=22),
                option::of(any::<u8>()),
            ),
            (ranges(), pkeys()),
        )
            .prop_map(
                |((name, usage, sl), (mtu, rate, life), (path_bits, pkeys))| QosLevel {
                    name,
                    usage,
                    sl,
                    mtu_limit: mtu,
                    rate_limit: rate,
                    packet_life: life,
                    path_bits,
                    pkeys,
                },
            )
    }

    fn rule() -> impl Strategy<Value = MatchRule> {
        (
            (option::of(text()), ranges(), vec(text(), 0..2)),
            (vec(text(), 0..2), ranges(), pkeys(), text()),
        )
            .prop_map(
                |((usage, qos_classes, sources), (destinations, service_ids, pkeys, level))| {
                    MatchRule {
                        usage,
                        qos_classes,
                        sources,
                        destinations,
                        service_ids,
                        pkeys,
                        level,
                    }
                },
            )
    }

    fn nonempty(set: RangeSet) -> RangeSet {
        if set.is_empty() {
            RangeSet::new([(1, 1)])
        } else {
            set
        }
    }

    fn ulp() -> impl Strategy<Value = Ulp> {
        let ports = vec((0u64..=0xFFFF, 0u64..=0xFFFF), 1..3).prop_map(RangeSet::new);
        (0usize..15, ranges(), pkeys(), ports, 0u8..=15).prop_map(|(k, r, p, ports, sl)| {
            let (r, p) = (nonempty(r), nonempty(p));
            let kind = match k {
                0 => UlpKind::Default,
                1 => UlpKind::Sdp,
                2 => UlpKind::SdpPorts(ports),
                3 => UlpKind::Rds,
                4 => UlpKind::RdsPorts(ports),
                5 => UlpKind::Iser,
                6 => UlpKind::IserPorts(ports),
                7 => UlpKind::SrpTargets(r),
                8 => UlpKind::Ipoib,
                9 => UlpKind::IpoibPkeys(p),
                10 => UlpKind::AnyServiceIds(r),
                11 => UlpKind::AnyPkeys(p),
                12 => UlpKind::AnyTargets(r),
                13 => UlpKind::AnySources(r),
                _ => UlpKind::AnySourcesTargets(r),
            };
            Ulp { kind, sl }
        })
    }

    fn setup() -> impl Strategy<Value = QosSetup> {
        let pairs = || vec((any::<u64>(), any::<u64>()), 0..3);
        let vlarb = (vec(text(), 1..3), vec(text(), 0..2), pairs(), pairs())
            .prop_flat_map(move |s| (Just(s), option::of(any::<u32>())))
            .prop_map(
                |((groups, across, vlarb_high, vlarb_low), limit)| VlarbScope {
                    groups,
                    across,
                    vlarb_high,
                    vlarb_low,
                    vl_high_limit: limit,
                },
            );
        let sl2vl = (
            vec(text(), 1..3),
            vec(text(), 0..2),
            vec(text(), 0..2),
            (any::<u128>(), any::<u128>(), any::<[u8; 16]>()),
        )
            .prop_map(
                |(groups, across_from, across_to, (from, to, table))| Sl2vlScope {
                    groups,
                    across_from,
                    across_to,
                    from,
                    to,
                    sl2vl_table: table.map(|vl| vl & 0xF),
                },
            );
        (vec(vlarb, 0..2), vec(sl2vl, 0..2)).prop_map(|(vlarb_scopes, sl2vl_scopes)| QosSetup {
            vlarb_scopes,
            sl2vl_scopes,
        })
    }

    fn policy() -> impl Strategy<Value = QosPolicy> {
        (
            vec(group(), 0..3),
            vec(level(), 0..3),
            vec(rule(), 0..3),
            vec(ulp(), 0..4),
            setup(),
        )
            .prop_map(
                |(port_groups, qos_levels, match_rules, ulps, setup)| QosPolicy {
                    port_groups,
                    qos_levels,
                    match_rules,
                    ulps,
                    setup,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn qos_policy_conf_reads_back_what_was_written(p in policy()) {
            let (text, losses) = qos_policy::to_policy_conf(&p);
            prop_assert!(losses.is_empty(), "{losses:?}\n{text}");
            let back = qos_policy::read("back.conf", text.as_bytes());
            prop_assert_eq!(back.map(|r| r.policy), Ok(p), "{}", text);
        }

        #[test]
        fn ibqos_toml_carries_the_policy(p in policy()) {
            let settings = Settings { qos_policy: Some(p), ..Settings::default() };
            let (text, losses) = to_native_toml(&settings);
            prop_assert!(losses.is_empty(), "{losses:?}\n{text}");
            let back = load_bytes("ibqos.toml", text.as_bytes(), Format::NativeToml)
                .map_err(|e| e.to_string());
            prop_assert_eq!(back.map(|l| l.settings.qos_policy), Ok(settings.qos_policy));
        }
    }
}
