//! The `ibqos` command as an administrator runs it: exit statuses, messages for bad input, the
//! JSON shape of `plan`, `migrate` round trips, and the fabrics `fabric gen` writes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{check, ibqos, places, scratch_file};
use ibqos_fabric::Topology;
use ibqos_fabric::netfile::parse_net_str;
use serde_json::Value;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/opensm-qos.conf");
const CONGESTION: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/opensm-cc.conf");
const MISTAKES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/opensm-mistakes.conf"
);

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn plan_json(config_flag: &str, config: &Path, class: &str) -> Value {
    let output = ibqos(&[
        "plan",
        config_flag,
        config.to_str().unwrap(),
        "--class",
        class,
        "--vls",
        "8",
        "--low-cap",
        "8",
        "--high-cap",
        "8",
        "--json",
    ]);
    assert!(output.status.success(), "plan failed: {}", stderr(&output));
    serde_json::from_slice(&output.stdout).expect("plan --json prints one JSON object")
}

fn entries(value: &Value) -> Vec<(u64, u64)> {
    value
        .as_array()
        .expect("a list of entries")
        .iter()
        .map(|e| (e["vl"].as_u64().unwrap(), e["weight"].as_u64().unwrap()))
        .collect()
}

#[test]
fn plan_json_for_the_example_config() {
    let plan = plan_json("-F", Path::new(EXAMPLE), "ca");
    assert_eq!(plan["class"], "ca");
    assert_eq!(plan["qos_enabled"], true);
    let sl2vl: Vec<u64> = plan["sl2vl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(sl2vl, vec![0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15]);
    let mut low = vec![(0, 16), (1, 128), (3, 32)];
    low.resize(8, (0, 0));
    assert_eq!(entries(&plan["vlarb_low"]), low);
    let mut high = vec![(2, 32)];
    high.resize(8, (0, 0));
    assert_eq!(entries(&plan["vlarb_high"]), high);
    assert_eq!(plan["vl_high_limit"], 4);
}

/// A `key=value` line is reported and not applied; the plan is what OpenSM does without it, and
/// only --strict refuses to plan.
#[test]
fn plan_reports_ignored_lines_and_strict_refuses() {
    let plan = plan_json("-F", Path::new(MISTAKES), "ca");
    let codes: Vec<&str> = plan["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"unknown-key"), "{codes:?}");
    assert_eq!(plan["qos_enabled"], false, "`qos true` is FALSE to OpenSM");
    assert_eq!(
        plan["vl_high_limit"], 0,
        "qos_ca_high_limit=6 is not applied"
    );
    let strict = ibqos(&[
        "plan",
        "--strict",
        "-F",
        MISTAKES,
        "--class",
        "ca",
        "--vls",
        "8",
        "--low-cap",
        "8",
        "--high-cap",
        "8",
    ]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(
        stdout(&strict).is_empty(),
        "no plan under --strict: {}",
        stdout(&strict)
    );
}

#[test]
fn plan_for_switch_external_ports_uses_the_swe_set() {
    let plan = plan_json("-F", Path::new(EXAMPLE), "swe");
    let mut low = vec![(0, 32), (1, 128), (2, 16), (3, 32)];
    low.resize(8, (0, 0));
    assert_eq!(entries(&plan["vlarb_low"]), low);
}

#[test]
fn plan_with_one_vl_programs_no_vlarb_and_human_output_says_so() {
    let output = ibqos(&[
        "plan",
        "-F",
        EXAMPLE,
        "--class",
        "ca",
        "--vls",
        "1",
        "--low-cap",
        "8",
        "--high-cap",
        "8",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("VLArb  not programmed"), "{text}");
    assert!(
        text.contains("SL2VL  (payload 00 00 00 00 00 00 00 0f)"),
        "{text}"
    );
    assert!(text.contains("VLHighLimit 0"), "{text}");
}

/// With `congestion_control TRUE` a CA port's plan holds the CACongestionSetting by SL and the
/// table OpenSM sends, in `ibqos dump`'s format; a switch's holds its SwitchCongestionSetting.
#[test]
fn plan_shows_the_congestion_settings_a_port_gets() {
    let ca = plan_json("-F", Path::new(CONGESTION), "ca");
    let ca = &ca["congestion"]["ca"];
    assert_eq!(
        (ca["port_control"].as_u64(), ca["control_map"].as_u64()),
        (Some(1), Some(6))
    );
    assert_eq!(ca["sls"][2], serde_json::json!([300, 2, 4, 1]));
    assert_eq!(ca["ccti_limit"], 5);
    // shift << 14 | multiplier, the entries of `cc_cct 0:0,0:4,1:8,1:16,2:64,3:1000`.
    assert_eq!(
        ca["table"],
        serde_json::json!([0, 4, 0x4008, 0x4010, 0x8040, 0xc3e8])
    );
    let switch = plan_json("-F", Path::new(CONGESTION), "sw0");
    let switch = &switch["congestion"]["switch"];
    assert_eq!(switch["threshold"], 15);
    assert_eq!(switch["cs_return_delay"], 0x4007);
    assert!(switch["victim_mask"].as_str().unwrap().ends_with("0026"));
    let output = ibqos(&[
        "plan",
        "-F",
        CONGESTION,
        "--class",
        "ca",
        "--vls",
        "8",
        "--low-cap",
        "8",
        "--high-cap",
        "8",
    ]);
    let text = stdout(&output);
    assert!(text.contains("CACongestionSetting"), "{text}");
    assert!(
        text.contains("   2         300              2                  4         1"),
        "{text}"
    );
    assert!(
        text.contains("0:0:0 1:0:4 2:1:8 3:1:16 4:2:64 5:3:1000"),
        "{text}"
    );
}

/// Where OpenSM sends something else than the option says, the plan says so: a one-entry table
/// goes out all zero, a threshold wider than 4 bits loses its high bits.
#[test]
fn plan_says_where_opensm_changes_a_congestion_option() {
    let dir = tempfile::tempdir().unwrap();
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        "congestion_control TRUE\ncc_sw_cong_setting_threshold 0x1f\ncc_cct 1:5\n",
    );
    let notes = |class| plan_json("-F", &conf, class)["congestion"]["notes"].clone();
    let ca = notes("ca");
    assert_eq!(
        ca[0],
        "cc_cct has one entry: OpenSM sends CCTI_Limit 0 and an all-zero table"
    );
    let table = &plan_json("-F", &conf, "ca")["congestion"]["ca"]["table"];
    assert_eq!(*table, serde_json::json!([0]));
    let switch = notes("sw0");
    assert_eq!(
        switch[0],
        "cc_sw_cong_setting_threshold 31 is wider than its 4-bit field: OpenSM sends 15"
    );
}

/// Without `congestion_control TRUE` a plan is what it was: no congestion section.
/// A CCTI_Min past the last index of `cc_cct` is an error at its place, in opensm.conf and
/// ibqos.toml alike; with congestion control off it is not looked at.
#[test]
fn check_places_a_ccti_min_past_the_congestion_control_table() {
    let dir = tempfile::tempdir().unwrap();
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        "congestion_control TRUE\ncc_cct 0:0,0:1\ncc_ca_cong_setting_ccti_min 1 1\n\
         cc_ca_cong_setting_ccti_min 2 3\n",
    );
    let (ok, found) = check(&conf);
    assert!(!ok, "{found:?}");
    assert_eq!(
        places(&found),
        [("cc-min-past-limit", "opensm.conf", 4, 29)],
        "{found:#?}"
    );
    assert!(found[0].4.contains("3 for SL 2") && found[0].4.contains("last index, 1"));
    let toml = scratch_file(
        &dir,
        "ibqos.toml",
        "[opensm]\ncongestion_control = true\ncc_cct = \"0:0,0:1\"\n\
         \"cc_ca_cong_setting_ccti_min 2\" = 3\n",
    );
    let (ok, found) = check(&toml);
    assert!(!ok, "{found:?}");
    assert_eq!(
        places(&found),
        [("cc-min-past-limit", "ibqos.toml", 4, 35)],
        "{found:#?}"
    );
    let off = scratch_file(
        &dir,
        "off.conf",
        "congestion_control FALSE\ncc_cct 0:0,0:1\ncc_ca_cong_setting_ccti_min 2 3\n",
    );
    let (_, found) = check(&off);
    assert!(
        !found.iter().any(|f| f.0 == "cc-min-past-limit"),
        "{found:#?}"
    );
}

#[test]
fn plan_without_congestion_control_shows_no_congestion_settings() {
    let dir = tempfile::tempdir().unwrap();
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        "congestion_control FALSE\ncc_cct 1:5\n",
    );
    assert!(plan_json("-F", &conf, "ca").get("congestion").is_none());
    let output = ibqos(&[
        "plan",
        "-F",
        conf.to_str().unwrap(),
        "--class",
        "ca",
        "--vls",
        "8",
        "--low-cap",
        "8",
        "--high-cap",
        "8",
    ]);
    assert!(
        !stdout(&output).contains("ongestion"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn check_reports_like_a_compiler_and_fails_on_errors() {
    let output = ibqos(&["check", MISTAKES]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("unknown-key"), "{text}");
    assert!(
        text.contains("opensm-mistakes.conf:4:1"),
        "file:line:col of the bad line: {text}"
    );
    assert!(
        text.contains("qos_ca_high_limit=6"),
        "the line itself: {text}"
    );
    assert!(text.contains('^'), "a caret: {text}");
}

#[test]
fn check_strict_fails_on_warnings_only_with_strict() {
    let dir = tempfile::tempdir().unwrap();
    let conf = scratch_file(&dir, "opensm.conf", b"qos true\n");
    let relaxed = ibqos(&["check", conf.to_str().unwrap()]);
    assert_eq!(relaxed.status.code(), Some(0), "{}", stdout(&relaxed));
    assert!(stdout(&relaxed).contains("warning"), "{}", stdout(&relaxed));
    let strict = ibqos(&["check", "--strict", conf.to_str().unwrap()]);
    assert_eq!(strict.status.code(), Some(1), "{}", stdout(&strict));
}

#[test]
fn check_json_prints_one_object_per_diagnostic() {
    let output = ibqos(&["check", "--json", MISTAKES]);
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert!(!lines.is_empty());
    let unknown = lines
        .iter()
        .find(|d| d["code"] == "unknown-key")
        .expect("unknown-key");
    assert_eq!(unknown["line"], 4);
    assert_eq!(unknown["severity"], "error");
}

/// One diagnostic, among `check`'s others on standard output.
fn one_unreadable_file_error(output: &Output, path: &str) {
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(output), "");
    let text = stdout(output);
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "one message: {text}");
    assert!(
        errors[0].starts_with("error[unreadable-file]: cannot read"),
        "{text}"
    );
    assert!(errors[0].contains(path), "{text}");
}

#[test]
fn a_missing_file_is_one_clear_error() {
    let output = ibqos(&["check", "/nonexistent/opensm.conf"]);
    one_unreadable_file_error(&output, "/nonexistent/opensm.conf");
}

#[test]
fn a_directory_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    one_unreadable_file_error(&ibqos(&["check", path]), path);
}

/// Garbage of every kind gets diagnostics and exit status 1, never a panic (status 101).
#[test]
fn bad_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    garbage.extend(b"\0\xff\xfe");
    let long_line = vec![b'a'; 10 * 1024 * 1024];
    let invalid_utf8 = b"qos TRUE\nlog_file /var/log/\xff\xfe.log\n".to_vec();
    for (name, bytes) in [
        ("garbage.conf", garbage),
        ("long.conf", long_line),
        ("utf8.conf", invalid_utf8),
    ] {
        let path = scratch_file(&dir, name, &bytes);
        let output = ibqos(&["check", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(1), "{name}: {}", stderr(&output));
        assert!(
            !stdout(&output).is_empty(),
            "{name}: a diagnostic is printed"
        );
        let toml = scratch_file(&dir, &format!("{name}.toml"), &bytes);
        let output = ibqos(&["check", toml.to_str().unwrap()]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{name} as TOML: {}",
            stderr(&output)
        );
    }
}

/// OpenSM strips the CR of CRLF lines with the trailing whitespace; so does ibqos.
#[test]
fn crlf_files_plan_like_lf_files() {
    let dir = tempfile::tempdir().unwrap();
    let lf = std::fs::read_to_string(EXAMPLE).unwrap();
    let crlf = scratch_file(&dir, "crlf.conf", lf.replace('\n', "\r\n").as_bytes());
    let a = plan_json("-F", Path::new(EXAMPLE), "ca");
    let b = plan_json("-F", &crlf, "ca");
    for field in ["sl2vl", "vlarb_low", "vlarb_high", "vl_high_limit"] {
        assert_eq!(a[field], b[field], "{field}");
    }
}

/// opensm.conf -> ibqos.toml -> opensm.conf plans the same tables for every port class.
#[test]
fn migrate_round_trip_keeps_every_table() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("ibqos.toml");
    let back = dir.path().join("opensm.conf");
    let to_toml = ibqos(&["migrate", EXAMPLE, "-o", toml.to_str().unwrap()]);
    assert!(to_toml.status.success(), "{}", stderr(&to_toml));
    let to_conf = ibqos(&[
        "migrate",
        toml.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(to_conf.status.success(), "{}", stderr(&to_conf));
    for class in ["ca", "sw0", "swe", "rtr"] {
        let original = plan_json("-F", Path::new(EXAMPLE), class);
        let via_toml = plan_json("-c", &toml, class);
        let via_conf = plan_json("-F", &back, class);
        for field in [
            "qos_enabled",
            "sl2vl",
            "vlarb_low",
            "vlarb_high",
            "vl_high_limit",
        ] {
            assert_eq!(original[field], via_toml[field], "{class} {field} via TOML");
            assert_eq!(
                original[field], via_conf[field],
                "{class} {field} back in opensm.conf"
            );
        }
    }
}

#[test]
fn migrate_does_not_replace_a_file_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let existing = scratch_file(&dir, "ibqos.toml", b"# mine\n");
    let output = ibqos(&["migrate", EXAMPLE, "-o", existing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("--force"), "{}", stderr(&output));
    assert_eq!(std::fs::read(&existing).unwrap(), b"# mine\n");
    let forced = ibqos(&[
        "migrate",
        EXAMPLE,
        "-o",
        existing.to_str().unwrap(),
        "--force",
    ]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_ne!(std::fs::read(&existing).unwrap(), b"# mine\n");
}

/// What `ibqos fabric gen` wrote to standard output, read back as ibsim reads it.
fn generated(shape: &[&str]) -> Topology {
    let output = ibqos(&[&["fabric", "gen"][..], shape].concat());
    assert!(output.status.success(), "{shape:?}: {}", stderr(&output));
    let net = parse_net_str(&stdout(&output)).expect("a net file");
    assert_eq!(net.notes, vec![], "{shape:?}");
    net.topology
}

#[test]
fn fabric_gen_fat_tree3_defaults_to_the_full_k_ary_tree() {
    let t = generated(&["fat-tree3", "--radix", "4"]);
    assert_eq!(
        (t.switches().count(), t.cas().count(), t.links().count()),
        (20, 16, 48)
    );
    let t = generated(&["fat-tree3", "--radix", "8", "--pods", "2", "--hosts", "1"]);
    // 16 cores, 2 pods of 4 edge and 4 aggregation switches, one host per edge switch.
    assert_eq!((t.switches().count(), t.cas().count()), (32, 8));
}

#[test]
fn fabric_gen_fat_tree_keeps_its_two_level_form() {
    let shared = include_str!("../../fabric/data/fat-tree-16.net");
    let t = generated(&[
        "fat-tree", "--leaves", "4", "--spines", "2", "--hosts", "4", "--radix", "8",
    ]);
    assert_eq!(t, parse_net_str(shared).unwrap().topology);
}

#[test]
fn fabric_gen_refuses_an_impossible_fat_tree3_and_says_why() {
    for (shape, why) in [
        (&["--radix", "5"][..], "even radix of at least 2, not 5"),
        (
            &["--radix", "4", "--pods", "5"],
            "5 pods on 4-port switches",
        ),
        (&["--radix", "4", "--hosts", "3"], "3 hosts per edge switch"),
    ] {
        let output = ibqos(&[&["fabric", "gen", "fat-tree3"][..], shape].concat());
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{shape:?}: {message}");
        assert!(
            message.starts_with("error: impossible shape: ") && message.contains(why),
            "{shape:?}: {message}"
        );
        assert!(output.stdout.is_empty(), "{shape:?}");
    }
}

#[test]
fn help_teaches() {
    let output = ibqos(&["--help"]);
    let text = stdout(&output);
    for word in ["check", "plan", "migrate", "Examples:"] {
        assert!(text.contains(word), "--help mentions {word}: {text}");
    }
}

/// The qos-policy.conf data of opensm-compat's tests.
const POLICY_DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../opensm-compat/tests/data/qos-policy"
);

#[test]
fn check_reports_the_policy_an_opensm_conf_names_or_the_one_given() {
    let dir = tempfile::tempdir().unwrap();
    let full = format!("{POLICY_DATA}/accepted/full.conf");
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!("qos TRUE\nqos_policy_file {full}\n"),
    );
    let output = ibqos(&["check", conf.to_str().unwrap()]);
    let text = stdout(&output);
    assert!(output.status.success(), "warnings only: {text}");
    assert!(text.contains("warning[policy-sl-above-15]"), "{text}");
    assert!(
        text.contains("full.conf:48:13"),
        "located in the policy file: {text}"
    );

    let rejected = format!("{POLICY_DATA}/rejected/two-sl.conf");
    let output = ibqos(&["check", conf.to_str().unwrap(), "--qos-policy", &rejected]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("Error in QoS Policy File (line 5:10): 'qos-level' has multiple 'sl' tags."),
        "OpenSM's own line: {text}"
    );
    assert!(
        !text.contains("policy-sl-above-15"),
        "the named file replaces full.conf: {text}"
    );
}

/// Migrates an opensm.conf holding `options` to ibqos.toml, which must succeed and hold
/// `section`; the scratch directory, the ibqos.toml, and where an opensm.conf written back
/// from it goes (a directory of its own, so side files do not clash).
fn migrated_to_toml(options: &str, section: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let conf = scratch_file(&dir, "opensm.conf", options);
    let toml = dir.path().join("ibqos.toml");
    let back = dir.path().join("out").join("opensm.conf");
    std::fs::create_dir(back.parent().unwrap()).unwrap();
    let to_toml = ibqos(&[
        "migrate",
        conf.to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ]);
    assert!(to_toml.status.success(), "{}", stderr(&to_toml));
    let toml_text = std::fs::read_to_string(&toml).unwrap();
    assert!(toml_text.contains(section), "{toml_text}");
    (dir, toml, back)
}

#[test]
fn migrate_carries_the_policy_to_ibqos_toml_and_back_to_a_policy_file() {
    let full = format!("{POLICY_DATA}/accepted/full.conf");
    let (_dir, toml, back) = migrated_to_toml(
        &format!("qos TRUE\nqos_policy_file {full}\n"),
        "[[qos_policy.port_groups]]",
    );
    let to_conf = ibqos(&[
        "migrate",
        toml.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(to_conf.status.success(), "{}", stderr(&to_conf));
    let policy = back.with_file_name("qos-policy.conf");
    let read = |path: &Path| {
        ibqos_opensm::qos_policy::read("p", &std::fs::read(path).unwrap())
            .unwrap()
            .policy
    };
    assert_eq!(read(&policy), read(Path::new(&full)));
}

const PARTITIONS_DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../opensm-compat/tests/data/partitions"
);

#[test]
fn migrate_carries_the_partitions_to_ibqos_toml_and_back_to_a_partitions_file() {
    let original = format!("{PARTITIONS_DATA}/accepted/full-grammar.conf");
    let (_dir, toml, back) = migrated_to_toml(
        &format!("partition_config_file {original}\n"),
        "[[partitions.partition]]",
    );
    let to_conf = || {
        ibqos(&[
            "migrate",
            toml.to_str().unwrap(),
            "-o",
            back.to_str().unwrap(),
        ])
    };
    let first = to_conf();
    assert!(first.status.success(), "{}", stderr(&first));
    // opensm.conf names the partitions.conf written beside it, which reads back the same.
    let loaded = ibqos_opensm::load(&back).unwrap();
    let written = back.with_file_name("partitions.conf");
    assert_eq!(
        ibqos_opensm::partitions_file(&loaded.settings),
        std::path::absolute(&written).unwrap().to_str().unwrap()
    );
    let read = |path: &Path| {
        ibqos_opensm::partitions::read("p", &std::fs::read(path).unwrap())
            .unwrap()
            .partitions
    };
    assert_eq!(loaded.settings.partitions, Some(read(Path::new(&original))));
    // The partitions.conf is not replaced without --force.
    std::fs::remove_file(&back).unwrap();
    let again = to_conf();
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("partitions.conf exists; pass --force"),
        "{}",
        stderr(&again)
    );
    assert!(
        !back.exists(),
        "nothing written when a file would be replaced"
    );
}

const SETUP_TOML: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/qos-setup.toml");

/// The 1-based number of the `nth` (from 1) line of `text` that is `line`.
fn line_of(text: &str, line: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == line)
        .nth(nth - 1)
        .map(|(i, _)| i + 1)
        .expect("the line is there")
}

/// With `program_policy_setup`, a scope ibqos cannot program is an error at the scope, found
/// without a fabric: an unknown group, a VL arbitration entry no table holds.
#[test]
fn qos_setup_problems_are_errors_at_their_scope() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(SETUP_TOML)
        .unwrap()
        .replace("groups = [\"Storage\"]", "groups = [\"Nobody\"]")
        .replace("\"1:200\"", "\"15:200\"");
    let toml = scratch_file(&dir, "ibqos.toml", &text);
    let output = ibqos(&["check", toml.to_str().unwrap()]);
    let err = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let at = format!(
        "ibqos.toml:{}:1",
        line_of(&text, "[[qos_policy.vlarb_scopes]]", 1)
    );
    for message in [
        "error[policy-setup-invalid]: vlarb-scope 1: port-group 'Nobody' not found",
        "error[policy-setup-invalid]: vlarb-scope 1: vlarb-high entry 1 is 15:200",
    ] {
        assert!(err.contains(message), "{message}: {err}");
    }
    assert_eq!(err.matches(&at).count(), 2, "both at the scope {at}: {err}");
    // Without the option OpenSM's rule holds: the section is parsed and not programmed.
    let off = scratch_file(
        &dir,
        "off.toml",
        text.replace(
            "program_policy_setup = true",
            "program_policy_setup = false",
        ),
    );
    let output = ibqos(&["check", off.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
}

/// A qos-policy.conf named by ibqos.toml's policy_file: two scopes that give one port
/// different tables are an error at the second scope's keyword in that file, with the first's
/// place; `plan --topology` finds it on the fabric and exits 1.
#[test]
fn conflicting_qos_setup_scopes_in_a_policy_file_fail_the_plan_at_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let policy_text = "port-groups\n  port-group\n    name: Storage\n    \
        port-name: \"host-five HCA-1/P1\"\n  end-port-group\nend-port-groups\n\
        qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\nend-qos-levels\n\
        qos-setup\n  vlarb-tables\n    vlarb-scope\n      group: Storage\n      \
        vlarb-high: 0:1\n    end-vlarb-scope\n    vlarb-scope\n      across: Storage\n      \
        group: Storage\n      vlarb-high: 0:2\n    end-vlarb-scope\n  end-vlarb-tables\n\
        end-qos-setup\n";
    let policy = scratch_file(&dir, "qos-policy.conf", policy_text);
    let toml = scratch_file(
        &dir,
        "ibqos.toml",
        format!(
            "[qos]\nenabled = true\nprogram_policy_setup = true\npolicy_file = \"{}\"\n",
            policy.display()
        ),
    );
    let output = ibqos(&[
        "plan",
        "-c",
        toml.to_str().unwrap(),
        "--topology",
        "two-switch",
    ]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let (first, second) = (
        line_of(policy_text, "vlarb-scope", 1),
        line_of(policy_text, "vlarb-scope", 2),
    );
    assert!(
        err.contains(
            "error[policy-setup-invalid]: vlarb-scope 1 and vlarb-scope 2 both set vlarb-high \
             on host-five HCA-1/P1, to different values"
        ),
        "{err}"
    );
    assert!(
        err.contains(&format!("qos-policy.conf:{second}:5")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "vlarb-scope 1 is at {}:{first}:5",
            policy.display()
        )),
        "{err}"
    );
}

/// `plan --topology` on a configuration that does not program qos-setup says why, and that every
/// port gets its class's tables.
#[test]
fn plan_topology_says_when_qos_setup_is_not_programmed() {
    let output = ibqos(&["plan", "-F", EXAMPLE, "--topology", "two-switch"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("no qos-setup tables: the configuration has no QoS policy"),
        "{text}"
    );
}

/// `plan --topology` routes the fabric as the SM would, with the configuration's engines or
/// `--routing-engine`: it says which routed, notes each passed over, and fails when none does.
#[test]
fn plan_topology_routes_with_the_configured_engines() {
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "-c",
            SETUP_TOML,
            "--topology",
            "two-switch",
            "--json",
        ];
        args.extend(extra);
        ibqos(&args)
    };
    let engine = |output: &Output| {
        assert!(output.status.success(), "{}", stderr(output));
        let report: Value = serde_json::from_str(&stdout(output)).unwrap();
        report["routing_engine"].as_str().unwrap().to_owned()
    };
    assert_eq!(engine(&plan(&[])), "minhop");
    // Two switches of equal load give updn no root, as OpenSM finds none: dnup routes.
    let listed = plan(&["--routing-engine", "file,updn,dnup"]);
    assert_eq!(engine(&listed), "dnup");
    assert!(
        stderr(&listed).contains("note: routing engine `file` passed over"),
        "{}",
        stderr(&listed)
    );
    assert!(
        stderr(&listed)
            .contains("note: routing engine `updn` passed over: no root switches were found"),
        "{}",
        stderr(&listed)
    );
    let none = plan(&["--routing-engine", "file,no_fallback"]);
    assert!(!none.status.success());
    assert!(
        stderr(&none).contains("cannot route two-switch: no routing engine could route"),
        "{}",
        stderr(&none)
    );
}

/// opensm.conf cannot say `program_policy_setup`: migrating says so.
#[test]
fn migrating_program_policy_setup_to_opensm_conf_warns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("opensm.conf");
    let output = ibqos(&["migrate", SETUP_TOML, "-o", out.to_str().unwrap()]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("`program_policy_setup` cannot be said in opensm.conf"),
        "{err}"
    );
}

/// `--metrics-listen` on a port another process holds: the SM refuses to start, before it
/// touches the fabric, and says which address and why.
#[test]
fn sm_refuses_a_metrics_port_in_use() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap();
    let out = ibqos(&[
        "sm",
        "--once",
        "--cache-dir",
        cache,
        "--metrics-listen",
        &port,
    ]);
    let err = stderr(&out);
    assert!(!out.status.success(), "started on a port in use: {err}");
    assert!(
        err.contains(&format!("cannot listen for metrics on 127.0.0.1:{port}"))
            && err.contains("in use"),
        "{err}"
    );
    assert!(!err.contains("SUBNET UP"), "swept before refusing: {err}");
}
