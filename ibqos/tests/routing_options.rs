//! The routing options as `ibqos check` reports them: each GUID file's bad line at its place,
//! a file that cannot be read at the option naming it, an option no engine that may route
//! reads, and what ibqos does in place of OpenSM's unicast cache.

mod common;

use common::{check, ibqos, places, scratch_file};
use tempfile::TempDir;

#[test]
fn check_places_each_routing_option_and_guid_file_problem() {
    let dir = TempDir::new().unwrap();
    let roots = scratch_file(&dir, "roots", "# spines\n0x10 spine-1\n0x2O\n0x30\n");
    let missing = dir.path().join("cns");
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!(
            "routing_engine minhop\nroot_guid_file {}\ncn_guid_file {}\nuse_ucast_cache TRUE\n\
             port_shifting TRUE\navoid_throttled_links TRUE\n",
            roots.display(),
            missing.display()
        ),
    );
    let (ok, found) = check(&conf);
    assert!(!ok, "{found:?}");
    assert_eq!(
        places(&found),
        [
            ("routing-option-unused", "opensm.conf", 2, 16),
            ("guid-file-unreadable", "opensm.conf", 3, 14),
            ("routing-option-unused", "opensm.conf", 3, 14),
            ("not-acted-on", "opensm.conf", 4, 17),
            ("routing-option-unused", "opensm.conf", 6, 23),
            ("guid-file-stops", "roots", 3, 1),
        ],
        "{found:#?}"
    );
    assert_eq!(
        found[0].4,
        "`root_guid_file` has no effect: only updn, ftree read it, and the engines that may \
         route are minhop",
    );
    assert!(
        found[1].4.starts_with("cannot read cn_guid_file ")
            && found[1].4.ends_with("No such file or directory"),
        "{found:#?}"
    );
    assert!(
        found[3].4.contains("no unicast routing cache"),
        "{found:#?}"
    );
    assert!(
        found[5].4.contains("`0x2O` is not a GUID") && found[5].4.contains("after 1 GUID"),
        "{found:#?}"
    );

    // updn reads the root file and port_shifting, ftree
    // max_reverse_hops: every option set has an engine that may route to read it.
    let conf = scratch_file(
        &dir,
        "updn.conf",
        format!(
            "routing_engine updn,ftree,no_fallback\nroot_guid_file {}\nport_shifting TRUE\n\
             max_reverse_hops 2\n",
            roots.display()
        ),
    );
    let (_, found) = check(&conf);
    let codes: Vec<_> = places(&found)
        .into_iter()
        .filter(|(code, ..)| code.starts_with("routing") || code.starts_with("guid"))
        .collect();
    assert_eq!(codes, [("guid-file-stops", "roots", 3, 1)], "{found:#?}");
}

/// Nue's two options have no effect unless nue may route; with nue listed (and qos on) they
/// raise nothing, and with qos off `nue_max_num_vls` is lost.
#[test]
fn check_places_the_nue_options_only_without_nue() {
    let dir = TempDir::new().unwrap();
    let options = "nue_max_num_vls 2\nnue_include_switches TRUE\n";
    let conf = scratch_file(
        &dir,
        "minhop.conf",
        format!("routing_engine minhop\n{options}"),
    );
    let (_, found) = check(&conf);
    assert_eq!(
        places(&found),
        [
            ("routing-option-unused", "minhop.conf", 2, 17),
            ("routing-option-unused", "minhop.conf", 3, 22),
        ],
        "{found:#?}"
    );
    assert!(found[0].4.contains("only nue reads it"), "{found:#?}");
    let conf = scratch_file(
        &dir,
        "nue.conf",
        format!("routing_engine nue\nqos TRUE\n{options}"),
    );
    let (_, found) = check(&conf);
    assert!(
        !places(&found)
            .iter()
            .any(|(code, ..)| *code == "routing-option-unused"),
        "{found:#?}"
    );
    // With qos off OpenSM's Nue keeps to one layer (WRN NUE48): nue_max_num_vls is lost.
    let conf = scratch_file(
        &dir,
        "no-qos.conf",
        format!("routing_engine nue\n{options}"),
    );
    let (_, found) = check(&conf);
    let unused: Vec<_> = places(&found)
        .into_iter()
        .filter(|(code, ..)| *code == "routing-option-unused")
        .collect();
    assert_eq!(
        unused,
        [("routing-option-unused", "no-qos.conf", 2, 17)],
        "{found:#?}"
    );
    assert!(
        found.iter().any(|d| d.4.contains("WRN NUE48")),
        "{found:#?}"
    );
}

/// ibqos.toml is strict: a GUID file that does not read to its end refuses it, at the place
/// of the option in [opensm].
#[test]
fn an_ibqos_toml_naming_a_bad_guid_file_is_refused() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("order");
    let toml = scratch_file(
        &dir,
        "ibqos.toml",
        format!(
            "[opensm]\nguid_routing_order_file = \"{}\"\n",
            missing.display()
        ),
    );
    let (ok, found) = check(&toml);
    assert!(!ok);
    assert_eq!(
        places(&found),
        [("guid-file-unreadable", "ibqos.toml", 2, 27)],
        "{found:#?}"
    );
}

/// A GUID file the SM cannot read is said when the configuration is read, at the option, and
/// again at each routing, as OpenSM logs it at each; the fabric is routed all the same.
#[test]
fn the_sm_says_a_guid_file_failed_when_it_reads_it_and_when_it_routes() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("roots");
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!(
            "routing_engine updn\nroot_guid_file {}\n",
            missing.display()
        ),
    );
    let cache = dir.path().join("cache");
    let output = ibqos(&[
        "sm",
        "--once",
        "--cache-dir",
        cache.to_str().unwrap(),
        "--fabric",
        "sim:two-switch",
        "-F",
        conf.to_str().unwrap(),
    ]);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{log}");
    let read = format!("cannot read root_guid_file {}", missing.display());
    assert_eq!(log.matches(&read).count(), 1, "{log}");
    assert!(log.contains("opensm.conf:2:16"), "{log}");
    let routed = log
        .lines()
        .filter(|line| line.contains("root_guid_file") && line.contains("not read to its end"))
        .count();
    assert_eq!(routed, 1, "{log}");
}

/// `--routing-engine` naming torus-2QoS reads the configuration's `torus_config`, as OpenSM's
/// `-R` does and as the configuration's own `routing_engine` would: `credit-loops`,
/// `lft-balance`, `plan` and `sim` all route the torus with it.
#[test]
fn the_routing_engine_flag_reads_torus_config() {
    let dir = TempDir::new().unwrap();
    let (net, torus_conf) = common::torus_4x4_net(&dir, 1);
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!("qos TRUE\ntorus_config {}\n", torus_conf.display()),
    );
    let traffic = scratch_file(
        &dir,
        "traffic.toml",
        "duration_us = 5\n[[pattern]]\nkind = \"all-to-all\"\npayload = 256\n",
    );
    let (net, conf, traffic) = (
        net.to_str().unwrap(),
        conf.to_str().unwrap(),
        traffic.to_str().unwrap(),
    );
    let engine = ["--routing-engine", "torus-2QoS,no_fallback"];
    let runs: [&[&str]; 4] = [
        &["credit-loops", "--topology", net, "-F", conf],
        &["lft-balance", "--topology", net, "-F", conf, "--json"],
        &["plan", "-F", conf, "--topology", net],
        &["sim", "--topology", net, "-F", conf, "--traffic", traffic],
    ];
    for run in runs {
        let output = ibqos(&[run, &engine].concat());
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{run:?}: {stdout}{stderr}");
        assert!(!stderr.contains("passed over"), "{run:?}: {stderr}");
    }
    let checked = ibqos(&[runs[0], &engine].concat());
    let text = String::from_utf8_lossy(&checked.stdout);
    assert!(text.contains("(routed by torus-2QoS)"), "{text}");
}

/// A `torus_config` that cannot be read, with torus-2QoS chosen by `--routing-engine`, is said
/// as when the configuration lists the engine: the file has errors, and torus-2QoS passes
/// over with OpenSM's error line.
#[test]
fn the_routing_engine_flag_says_a_torus_config_cannot_be_read() {
    let dir = TempDir::new().unwrap();
    let net = common::ring_net(&dir, 3, 1);
    let missing = dir.path().join("torus-2QoS.conf");
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!("qos TRUE\ntorus_config {}\n", missing.display()),
    );
    let output = ibqos(&[
        "credit-loops",
        "--topology",
        net.to_str().unwrap(),
        "-F",
        conf.to_str().unwrap(),
        "--routing-engine",
        "torus-2QoS",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("opensm.conf has errors"), "{stderr}");
    let passed_over = format!(
        "note: routing engine `torus-2QoS` passed over: ERR 4E11: Opening {}: No such file or \
         directory",
        missing.display()
    );
    assert!(stderr.contains(&passed_over), "{stderr}");
}
