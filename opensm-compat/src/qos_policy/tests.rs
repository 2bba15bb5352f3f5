use super::*;
use ibqos_text::Severity;

fn codes(text: &str) -> Vec<Code> {
    let read = read("p.conf", text.as_bytes()).unwrap();
    read.diagnostics.iter().map(|d| d.code).collect()
}

const LEVEL: &str =
    "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\n";

#[test]
fn the_minimal_policy_has_nothing_to_say() {
    let read = read("p.conf", LEVEL.as_bytes()).unwrap();
    assert_eq!(read.policy.qos_levels[0].name, "DEFAULT");
    assert!(read.diagnostics.is_empty());
}

#[test]
fn unquoted_port_names_lose_their_blanks() {
    // Vector 37: the documented `port-name: vs1 HCA-1/P1` is `vs1HCA-1/P1`.
    let text = "port-groups\n port-group\n  name: Virtual Servers\n  port-name: vs1 HCA-1/P1, \
                \"vs1 HCA-1/p2\"\n end-port-group\nend-port-groups\n";
    let read = read("p.conf", text.as_bytes()).unwrap();
    let group = &read.policy.port_groups[0];
    assert_eq!(group.name, "VirtualServers");
    let nodes: Vec<&str> = group.port_names.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(nodes, ["vs1HCA-1", "vs1 HCA-1"]);
    let spaces: Vec<_> = read
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::PolicySpacesDropped)
        .collect();
    assert_eq!(spaces.len(), 2, "{:?}", read.diagnostics);
    assert_eq!(spaces[1].location.as_ref().unwrap().line, 4);
}

#[test]
fn use_keeps_blanks_and_keywords() {
    let text = "qos-levels\n qos-level\n  use: name: sl: 3, qos-level\n  name: DEFAULT\n  sl: 0\n \
                end-qos-level\nend-qos-levels\n";
    let read = read("p.conf", text.as_bytes()).unwrap();
    assert_eq!(
        read.policy.qos_levels[0].usage.as_deref(),
        Some("name: sl: 3, qos-level")
    );
}

#[test]
fn accepted_but_mangled_values_are_warned_about() {
    let level = |fields: &str| {
        format!("qos-levels\n qos-level\n  name: x\n{fields} end-qos-level\nend-qos-levels\n")
    };
    // Vector 34: `sl: 16` parses.
    assert_eq!(codes(&level("  sl: 16\n")), [Code::PolicySlAbove15]);
    assert_eq!(
        codes(&level("  sl: 1\n  packet-life: 300\n  path-bits: 1\n")),
        [Code::PolicyValueTruncated, Code::PolicyPathBitsUnused]
    );
    assert_eq!(codes(&level("  sl: 010\n")), [Code::PolicyOctalNumber]);
    let read = read(
        "p.conf",
        level("  sl: 010\n  packet-life: 300\n").as_bytes(),
    )
    .unwrap();
    assert_eq!(read.policy.qos_levels[0].sl, 8);
    assert_eq!(read.policy.qos_levels[0].packet_life, Some(44));
    assert_eq!(
        codes(&format!("{LEVEL}{LEVEL}")),
        [Code::PolicyDuplicateDefault],
        "vector 40: the first default wins"
    );
}

#[test]
fn huge_guid_ranges_ipoib_and_qos_setup_are_flagged() {
    // Vector 41: OpenSM never returns from a full 64-bit range; we do.
    let text = "port-groups\n port-group\n  name: all\n  port-guid: 0x0-0xFFFFFFFFFFFFFFFF\n \
                end-port-group\nend-port-groups\nqos-ulps\n ipoib : 4\nend-qos-ulps\n\
                qos-setup\nend-qos-setup\n";
    assert_eq!(
        codes(text),
        [
            Code::PolicyHugeGuidRange,
            Code::PolicyIpoibPartition,
            Code::PolicySetupIgnored
        ]
    );
}

#[test]
fn ulp_ranges_sort_merge_and_mask() {
    // Vector 39.
    let text =
        "qos-ulps\n any, service-id 0x10-0x5, 0x20 : 2\n any, pkey 0x8001 : 3\nend-qos-ulps\n";
    let read = read("p.conf", text.as_bytes()).unwrap();
    use ibqos_qos::policy::UlpKind;
    let UlpKind::AnyServiceIds(ids) = &read.policy.ulps[0].kind else {
        panic!("{:?}", read.policy.ulps[0]);
    };
    assert_eq!(ids.ranges(), [(5, 0x10), (0x20, 0x20)]);
    let UlpKind::AnyPkeys(pkeys) = &read.policy.ulps[1].kind else {
        panic!("{:?}", read.policy.ulps[1]);
    };
    assert_eq!(pkeys.ranges(), [(1, 1)]);
}

#[test]
fn errors_render_as_opensm_and_as_a_located_diagnostic() {
    let e = read("p.conf", b"qos-ulps\n  default : 16\nend-qos-ulps\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Error in QoS Policy File (line 2:15): illegal SL value."
    );
    let d = e.to_diagnostic();
    assert_eq!(d.severity, Severity::Error);
    let loc = d.location.unwrap();
    assert_eq!((loc.line, loc.col, loc.len), (2, 13, 2), "at the `16`");
}

#[test]
fn a_double_quote_in_a_name_cannot_be_written() {
    let read = read(
        "p.conf",
        b"qos-levels\n qos-level\n  name: a\"b\n  sl: 0\n end-qos-level\nend-qos-levels\n",
    )
    .unwrap();
    assert_eq!(read.policy.qos_levels[0].name, "a\"b");
    let (_, losses) = to_policy_conf(&read.policy);
    assert_eq!(losses.len(), 1);
    let (_, none) = to_policy_conf(&super::read("p.conf", LEVEL.as_bytes()).unwrap().policy);
    assert!(none.is_empty());
}

#[test]
fn garbage_never_panics() {
    for text in [
        &b"\"\"\"\n#"[..],
        b"\x00\xff-:,*0x 0X1g",
        b"port-groups port-group name: \x00 end-port-group end-port-groups",
        b"qos-setup sl2vl-tables sl2vl-scope from: 0-127, 5 to: *",
    ] {
        let _ = read("p.conf", text);
    }
}

#[test]
fn unclosed_comments_and_quotes_are_scanned_once() {
    // Every `#` without a newline after it, and every `"` without a pair, used to make the
    // scanner look to the end of the file: a megabyte of them would take hours.
    // OpenSM: `#` is a stray byte at 1:2; `""` is an empty string, ending at 1:3.
    for (byte, col) in [(b'#', 2), (b'"', 3)] {
        let file = vec![byte; 1 << 20];
        let e = read("p.conf", &file).unwrap_err();
        assert_eq!(
            (e.line, e.col),
            (1, col),
            "the first token is the syntax error"
        );
    }
    let mut quotes = b"qos-levels\n".to_vec();
    quotes.extend(std::iter::repeat_n(b"# c\n\"x\"".as_slice(), 1 << 16).flatten());
    assert!(read("p.conf", &quotes).is_err());
}

#[test]
fn resolve_results_become_diagnostics_of_the_file() {
    let error = ResolveError::NoDefaultLevel;
    let d = resolve_error_diagnostic("p.conf", &error);
    assert_eq!(
        d.to_string(),
        "p.conf: error[policy-invalid]: ERR AC10: Default qos-level (default) not defined."
    );
    let warning = ResolveWarning::RulePkeyWithoutPartition {
        rule: 1,
        pkey: 0x0abc,
    };
    let d = &resolve_diagnostics("p.conf", &[warning])[0];
    assert_eq!(d.code, Code::PolicyUnresolved);
    assert_eq!(
        d.message,
        "ERR AC14: pkey 0x0ABC in match rule - partition doesn't exist"
    );
}
