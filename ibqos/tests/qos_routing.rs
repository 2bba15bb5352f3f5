//! Where a configuration's QoS levels cannot survive its routing engines, as `ibqos check`
//! reports it: the SLs a policy chooses replaced by a layered engine's or cut to bit 3 by
//! torus-2QoS, fewer data VLs than an engine needs, and SL-to-VL tables that merge layers.

mod common;

use common::{check, places, scratch_file};
use tempfile::TempDir;

/// A policy choosing SLs 3 (the default level) and 5.
const POLICY: &str = "\
qos-levels
    qos-level
        name: DEFAULT
        sl: 3
    end-qos-level
    qos-level
        name: Storage
        sl: 5
    end-qos-level
end-qos-levels
";

/// `ibqos check` of an opensm.conf of `lines` after `qos_policy_file` naming [`POLICY`]: its
/// diagnostics of the codes this file is about.
fn qos_routing_diagnostics(lines: &str) -> Vec<common::Found> {
    let dir = TempDir::new().unwrap();
    let policy = scratch_file(&dir, "qos-policy.conf", POLICY);
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!("qos_policy_file {}\n{lines}", policy.display()),
    );
    let (_, found) = check(&conf);
    found
        .into_iter()
        .filter(|(code, ..)| {
            [
                "engine-replaces-sl",
                "engine-short-of-vls",
                "sl2vl-merges-layers",
            ]
            .contains(&code.as_str())
        })
        .collect()
}

#[test]
fn each_engine_that_replaces_or_cuts_the_policys_sls_is_named_at_its_column() {
    let found = qos_routing_diagnostics("qos TRUE\nrouting_engine updn,lash,torus-2QoS,minhop\n");
    assert_eq!(
        places(&found),
        [
            ("engine-replaces-sl", "opensm.conf", 3, 21),
            ("engine-replaces-sl", "opensm.conf", 3, 26),
        ],
        "{found:#?}"
    );
    assert_eq!(
        found[0].4,
        "if lash routes, every PathRecord carries its layer's SL: the SLs the configuration \
         chooses (3 and 5) do not reach the fabric"
    );
    assert_eq!(
        found[1].4,
        "if torus-2QoS routes, it keeps only bit 3 of the SL the configuration chooses: SLs 3 \
         and 5 become its QoS level 0"
    );
}

#[test]
fn with_qos_off_or_engines_that_keep_the_sl_nothing_is_lost() {
    // OpenSM reads the policy only with qos on.
    assert_eq!(
        qos_routing_diagnostics("qos FALSE\nrouting_engine lash\n"),
        []
    );
    assert_eq!(
        qos_routing_diagnostics("qos TRUE\nrouting_engine updn,ftree,dor,sssp\n"),
        []
    );
    // Nue spends one VL unless nue_max_num_vls says otherwise: it keeps the hint.
    assert_eq!(
        qos_routing_diagnostics("qos TRUE\nrouting_engine nue\n"),
        []
    );
    let found = qos_routing_diagnostics("qos TRUE\nrouting_engine nue\nnue_max_num_vls 0\n");
    assert_eq!(
        places(&found),
        [("engine-replaces-sl", "opensm.conf", 3, 16)]
    );
    // On one data VL Nue has one layer whatever nue_max_num_vls asks: it keeps the policy's
    // SL, and its escape paths route any fabric.
    assert_eq!(
        qos_routing_diagnostics("qos TRUE\nrouting_engine nue\nnue_max_num_vls 0\nmax_op_vls 1\n"),
        []
    );
}

#[test]
fn too_few_vls_for_the_engine_are_placed_at_max_op_vls() {
    let found = qos_routing_diagnostics("qos TRUE\nrouting_engine torus-2QoS\nmax_op_vls 2\n");
    assert_eq!(
        places(&found),
        [
            ("engine-replaces-sl", "opensm.conf", 3, 16),
            ("engine-short-of-vls", "opensm.conf", 4, 12),
            ("engine-short-of-vls", "opensm.conf", 4, 12),
        ],
        "{found:#?}"
    );
    assert!(found[1].4.contains("below 4 data VLs"), "{found:#?}");
    assert!(found[2].4.contains("below 8 data VLs"), "{found:#?}");
    let found = qos_routing_diagnostics("routing_engine dfsssp\nmax_op_vls 1\n");
    assert_eq!(
        places(&found),
        [("engine-short-of-vls", "opensm.conf", 3, 12)]
    );
    assert_eq!(
        found[0].4,
        "the switch ports run at most 1 data VL (`max_op_vls`); for dfsssp, it has one VL layer, \
         so it routes only a fabric without a credit loop and fails on any other"
    );
}

#[test]
fn an_sl2vl_table_that_merges_two_layers_is_named() {
    // With 4 VLs DFSSSP hands out SLs 0-3: 1 and 2 share VL 1.
    let found = qos_routing_diagnostics(
        "routing_engine dfsssp\nmax_op_vls 3\nqos_ca_sl2vl 0,1,1,3,4,5,6,7,8,9,10,11,12,13,14,7\n",
    );
    assert_eq!(
        places(&found),
        [("sl2vl-merges-layers", "opensm.conf", 4, 14)],
        "{found:#?}"
    );
    assert!(
        found[0]
            .4
            .starts_with("`qos_ca_sl2vl` maps SLs 1 and 2 to VL 1 on ports of 4 data VLs"),
        "{found:#?}"
    );
    // LASH from lash_start_vl 2 hands out SLs 2-3 only: SLs 1 and 2 may share a VL.
    let found = qos_routing_diagnostics(
        "routing_engine lash\nlash_start_vl 2\nmax_op_vls 3\n\
         qos_ca_sl2vl 0,1,1,3,4,5,6,7,8,9,10,11,12,13,14,7\n",
    );
    assert_eq!(places(&found), []);
    // Masked to 2 VLs, the default table keeps SLs 0 and 1 apart; a table mapping SL 1 to VL 2
    // puts it on VL 0 there.
    let found = qos_routing_diagnostics(
        "routing_engine dfsssp\nmax_op_vls 2\nqos_sl2vl 0,2,2,3,4,5,6,7,8,9,10,11,12,13,14,7\n",
    );
    assert_eq!(
        places(&found),
        [("sl2vl-merges-layers", "opensm.conf", 4, 11)],
        "{found:#?}"
    );
}

/// `ibqos plan` says it too, among its diagnostics.
#[test]
fn plan_says_the_policys_sls_do_not_survive() {
    let dir = TempDir::new().unwrap();
    let policy = scratch_file(&dir, "qos-policy.conf", POLICY);
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        format!(
            "qos_policy_file {}\nqos TRUE\nrouting_engine dfsssp\n",
            policy.display()
        ),
    );
    let output = common::ibqos(&[
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
        "--json",
    ]);
    assert!(output.status.success(), "{output:?}");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let codes: Vec<&str> = plan["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"engine-replaces-sl"), "{plan}");
}

/// On a first sweep DFSSSP sizes its layers from the OperVLs the ports ran before (ibsim's and
/// the emulator's 8), then the link manager cuts them to `max_op_vls` 2: the SM says so once,
/// naming the ring's switch-to-switch ports, in a dry run as in a real one.
#[test]
fn the_sm_names_the_ports_short_of_the_routings_vls_once_per_sweep() {
    let dir = TempDir::new().unwrap();
    let net = common::ring_net(&dir, 3, 1);
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        "routing_engine dfsssp\nqos TRUE\nmax_op_vls 2\n",
    );
    let fabric = format!("sim:{}", net.display());
    for mode in ["--once", "--dry-run"] {
        let output = common::ibqos(&[
            "sm",
            mode,
            "--fabric",
            &fabric,
            "-F",
            conf.to_str().unwrap(),
        ]);
        let log = String::from_utf8_lossy(&output.stderr);
        let warnings: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("the routing's layers need more data VLs"))
            .collect();
        assert_eq!(warnings.len(), 1, "{mode}:\n{log}");
        assert!(
            warnings[0].contains("engine=\"dfsssp\"")
                && warnings[0].contains("ports=\"S0/P1, S0/P2, S1/P1, S1/P2, S2/P1, S2/P2\""),
            "{mode}: {}",
            warnings[0]
        );
    }
}

/// A policy whose levels choose SLs 1 (the default level), 2 and 3.
const THREE_LEVELS: &str = "\
qos-levels
    qos-level
        name: default
        sl: 1
    end-qos-level
    qos-level
        name: Storage
        sl: 2
    end-qos-level
    qos-level
        name: Interactive
        sl: 3
    end-qos-level
end-qos-levels
";

/// What the SM's warning about the policy's SLs says, whichever way the engine replaces them.
const POLICY_SLS_REPLACED: &str = "the SLs the QoS policy's levels choose";

/// The lines of `ibqos sm --once`'s log on the emulated fabric `net`, with an opensm.conf of
/// `lines` written in `dir`, that contain `needle`.
fn sm_log_lines(dir: &TempDir, net: &std::path::Path, lines: &str, needle: &str) -> Vec<String> {
    let conf = scratch_file(dir, "opensm.conf", lines);
    let fabric = format!("sim:{}", net.display());
    let output = common::ibqos(&[
        "sm",
        "--once",
        "--fabric",
        &fabric,
        "-F",
        conf.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let log = String::from_utf8_lossy(&output.stderr);
    log.lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}

/// The SM says in one warning per sweep which SLs of the policy the engine that routed
/// replaces: LASH and DFSSSP give every path their layer's SL, torus-2QoS keeps bit 3 alone.
/// Minhop keeps them, and without a policy there are none to replace.
#[test]
fn the_sm_names_the_policys_sls_the_engine_replaces_once_per_sweep() {
    let dir = TempDir::new().unwrap();
    let (net, torus_conf) = common::torus_4x4_net(&dir, 1);
    let policy = scratch_file(&dir, "qos-policy.conf", THREE_LEVELS);
    let qos = format!("qos TRUE\ntorus_config {}\n", torus_conf.display());
    let with_policy = format!("{qos}qos_policy_file {}\n", policy.display());
    for engine in ["lash", "dfsssp", "torus-2QoS"] {
        let lines = format!("routing_engine {engine},no_fallback\n{with_policy}");
        let warnings = sm_log_lines(&dir, &net, &lines, POLICY_SLS_REPLACED);
        assert_eq!(warnings.len(), 1, "{engine}: {warnings:#?}");
        assert!(
            warnings[0].contains("WARN")
                && warnings[0].contains(&format!("engine=\"{engine}\""))
                && warnings[0].contains("sls=\"1, 2, 3\""),
            "{}",
            warnings[0]
        );
    }
    let minhop = format!("routing_engine minhop\n{with_policy}");
    assert_eq!(
        sm_log_lines(&dir, &net, &minhop, POLICY_SLS_REPLACED),
        Vec::<String>::new()
    );
    let no_policy = format!("routing_engine lash,no_fallback\n{qos}");
    assert_eq!(
        sm_log_lines(&dir, &net, &no_policy, POLICY_SLS_REPLACED),
        Vec::<String>::new()
    );
}

/// torus-2QoS on switch ports of 2 data VLs routes, as OpenSM's does, without the turn bit
/// (no route around a failed switch) and without the QoS bit, and the SM says both, each once
/// per sweep; on ports of 8 it says nothing.
#[test]
fn the_sm_says_what_torus_2qos_does_without_on_too_few_vls() {
    let dir = TempDir::new().unwrap();
    let (net, torus_conf) = common::torus_4x4_net(&dir, 1);
    let torus = format!(
        "routing_engine torus-2QoS,no_fallback\nqos TRUE\ntorus_config {}\n",
        torus_conf.display()
    );
    let needle = "run too few data VLs for the routing";
    let warnings = sm_log_lines(&dir, &net, &format!("{torus}max_op_vls 2\n"), needle);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    for (warning, needed, without) in [
        (&warnings[0], 4, "around a failed switch"),
        (&warnings[1], 8, "one QoS level"),
    ] {
        assert!(
            warning.contains("WARN")
                && warning.contains("switch ports linked to a switch")
                && warning.contains(without)
                && warning.contains("engine=\"torus-2QoS\"")
                && warning.contains(&format!("have=2 needed={needed}")),
            "{warning}"
        );
    }
    assert_eq!(
        sm_log_lines(&dir, &net, &torus, needle),
        Vec::<String>::new()
    );
}
