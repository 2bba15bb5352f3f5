//! What `ibqos` says when something is wrong, and where it says it: each cause once, every
//! diagnostic of `check` on standard output (as JSON with `--json`), every error of an
//! ibqos.toml in file order and in the file's words, and shapes nobody can address refused.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use common::{ibqos, scratch_file};
use serde_json::Value;
use tempfile::TempDir;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Exits 1 with `cause` said exactly once on standard error.
fn fails_saying_once(output: &Output, cause: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(
        text.matches(cause).count(),
        1,
        "{cause:?} not once in: {text}"
    );
}

/// An ibqos.toml with an error in each section, in an order no sort of the keys gives.
const BAD_TOML: &str = "\
[sm]
priority = 99
bogus = 1
lmc = \"x\"
guid = \"0x12345678901234567890\"
[links]
max_op_vls = 3
[qos.ca]
high_limit = 99999999999999999999
sl2vl = [0, 1]
vlarb_high = [{ vl = 15, weight = 4 }]
";

/// The lines with an error in [`BAD_TOML`].
const BAD_TOML_LINES: [u64; 8] = [2, 3, 4, 5, 7, 9, 10, 11];

#[test]
fn an_os_error_is_said_once() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing.conf");
    let output = ibqos(&["migrate", missing.to_str().unwrap(), "-o", "-"]);
    fails_saying_once(&output, "No such file or directory");

    let empty = scratch_file(&dir, "empty.net", "");
    let output = ibqos(&["fabric", "serve", empty.to_str().unwrap()]);
    fails_saying_once(&output, "the fabric has no node to attach to");

    // A second fabric on the first one's sockets cannot bind them.
    let sockname = format!("ibqos-errors-{}", std::process::id());
    let mut first = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["fabric", "serve", "--sockname", &sockname, "two-switch"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("ibqos fabric serve starts");
    let mut ready = String::new();
    BufReader::new(first.stderr.take().unwrap())
        .read_line(&mut ready)
        .expect("its first line");
    assert!(ready.contains("serving"), "{ready}");
    let second = ibqos(&["fabric", "serve", "--sockname", &sockname, "two-switch"]);
    first.kill().expect("the first fabric stops");
    first.wait().expect("and is reaped");
    fails_saying_once(&second, "Address already in use");
}

#[test]
fn check_json_says_every_problem_in_json_on_stdout() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing.conf");
    let toml = scratch_file(&dir, "ibqos.toml", BAD_TOML);
    let output = ibqos(&[
        "check",
        "--json",
        missing.to_str().unwrap(),
        toml.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "");
    let diagnostics: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert_eq!(diagnostics[0]["code"], "unreadable-file", "{diagnostics:?}");
    assert_eq!(
        diagnostics[0]["file"],
        missing.to_str().unwrap(),
        "{diagnostics:?}"
    );
    let lines: Vec<u64> = diagnostics[1..]
        .iter()
        .map(|d| d["line"].as_u64().expect("located"))
        .collect();
    assert_eq!(lines, BAD_TOML_LINES, "{diagnostics:?}");
}

#[test]
fn every_ibqos_toml_error_is_reported_in_file_order_and_plain_words() {
    let dir = TempDir::new().unwrap();
    let toml = scratch_file(&dir, "ibqos.toml", BAD_TOML);
    let output = ibqos(&["check", toml.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let places: Vec<String> = BAD_TOML_LINES
        .iter()
        .map(|line| format!("ibqos.toml:{line}:"))
        .collect();
    let found: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split("--> ").nth(1))
        .collect();
    assert_eq!(found.len(), places.len(), "{text}");
    for (found, place) in found.iter().zip(&places) {
        assert!(found.ends_with(place) || found.contains(place), "{text}");
    }
    for rust in ["u8", "u32", "i64", "i128", "struct", "Native"] {
        let leaked = text
            .lines()
            .filter(|line| line.starts_with("error"))
            .any(|line| {
                line.split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == rust)
            });
        assert!(!leaked, "{rust} in: {text}");
    }
    assert!(text.contains("8 error(s)"), "{text}");
}

#[test]
fn check_prints_every_file_s_diagnostics_on_stdout() {
    let dir = TempDir::new().unwrap();
    let conf = scratch_file(&dir, "opensm.conf", "qos true\n");
    let toml = scratch_file(&dir, "ibqos.toml", "[sm]\npriority = 99\n");
    let output = ibqos(&["check", conf.to_str().unwrap(), toml.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "");
    let text = stdout(&output);
    assert!(text.contains("warning[not-true]"), "{text}");
    assert!(text.contains("error[invalid-native]"), "{text}");
}

#[test]
fn check_warns_for_each_option_ibqos_does_not_act_on() {
    let dir = TempDir::new().unwrap();
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        "qos TRUE\nevent_plugin_name osmeventplugin\nperfmgr FALSE\nrouting_engine file\nperfmgr_sweep_time_s 180\n",
    );
    let output = ibqos(&["check", "--json", conf.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let warned: Vec<(u64, String)> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .filter(|d| d["code"] == "not-acted-on")
        .map(|d| (d["line"].as_u64().unwrap(), d["message"].to_string()))
        .collect();
    // perfmgr FALSE is OpenSM's default; perfmgr_sweep_time_s 180 too.
    let lines: Vec<u64> = warned.iter().map(|(line, _)| *line).collect();
    assert_eq!(lines, [2, 4], "{warned:?}");
    assert!(warned[0].1.contains("event_plugin_name"), "{warned:?}");
    assert!(warned[1].1.contains("file"), "{warned:?}");

    let toml = scratch_file(
        &dir,
        "ibqos.toml",
        "[sm]\nlog_file = \"/var/log/ibqos.log\"\nm_key_per_port_secret = \"0123456789abcdef0123\"\n\
         [opensm]\nevent_plugin_name = \"osmeventplugin\"\nm_key_lookup = true\n",
    );
    let output = ibqos(&["check", "--json", toml.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<u64> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .filter(|d| d["code"] == "not-acted-on")
        .map(|d| d["line"].as_u64().expect("located"))
        .collect();
    // The per-port secret is ibqos.toml's own, and used.
    assert_eq!(lines, [2, 5]);
}

/// The performance manager's options are acted on, `perfmgr_redir` and the dump file included.
#[test]
fn check_takes_the_perfmgr_options_as_used() {
    let dir = TempDir::new().unwrap();
    let conf = scratch_file(
        &dir,
        "opensm.conf",
        "perfmgr TRUE\nperfmgr_sweep_time_s 60\nperfmgr_redir FALSE\n\
         perfmgr_xmit_wait_log TRUE\nevent_db_dump_file /var/log/ibqos/counters.log\n",
    );
    let output = ibqos(&["check", "--json", conf.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let warned: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .filter(|d| d["code"] == "not-acted-on")
        .collect();
    assert!(warned.is_empty(), "{warned:?}");
}

/// Each name of `routing_engine` that does not route gets one warning at its own column: one
/// OpenSM has and ibqos does not yet, one no engine has; both say what routes in their place.
#[test]
fn check_places_each_routing_engine_it_cannot_route_with() {
    let dir = TempDir::new().unwrap();
    let located = |name: &str, text: &str| {
        let file = scratch_file(&dir, name, text);
        let output = ibqos(&["check", "--json", file.to_str().unwrap()]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
            .map(|d| {
                let at = (d["line"].as_u64().unwrap(), d["col"].as_u64().unwrap());
                (
                    d["code"].as_str().unwrap().to_owned(),
                    at,
                    d["message"].to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let conf = located("opensm.conf", "qos TRUE\nrouting_engine file,foo\n");
    let places: Vec<_> = conf
        .iter()
        .map(|(code, at, _)| (code.as_str(), *at))
        .collect();
    assert_eq!(
        places,
        [
            ("not-acted-on", (2, 16)),
            ("unknown-routing-engine", (2, 21))
        ],
        "{conf:?}"
    );
    assert!(
        conf[0]
            .2
            .contains("ibqos has no routing engine `file` yet: minhop routes")
    );
    assert!(conf[1].2.contains("`foo` is unknown"), "{conf:?}");

    let toml = located("ibqos.toml", "[sm]\nrouting_engine = \"foo,updn\"\n");
    let places: Vec<_> = toml
        .iter()
        .map(|(code, at, _)| (code.as_str(), *at))
        .collect();
    assert_eq!(places, [("unknown-routing-engine", (2, 19))], "{toml:?}");
    assert!(toml[0].2.contains("updn routes in its place"), "{toml:?}");

    let text = stdout(&ibqos(&[
        "check",
        dir.path().join("opensm.conf").to_str().unwrap(),
    ]));
    assert!(text.contains("opensm.conf:2:21"), "{text}");
    assert!(
        text.contains(
            "help: ibqos routes with minhop, updn, dnup, ftree, dor, lash, dfsssp, sssp, \
             torus-2QoS, nue; OpenSM also has file"
        ),
        "{text}"
    );
}

#[test]
fn sim_on_a_net_file_without_nodes_names_the_file() {
    let dir = TempDir::new().unwrap();
    let empty = scratch_file(&dir, "empty.net", "");
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let output = ibqos(&[
        "sim",
        "--topology",
        empty.to_str().unwrap(),
        "-F",
        &format!("{examples}/opensm-qos.conf"),
        "--traffic",
        &format!("{examples}/sim/traffic.toml"),
    ]);
    fails_saying_once(&output, "empty.net describes no node");
}

#[test]
fn fabric_gen_refuses_shapes_beyond_the_unicast_lid_space() {
    for (x, y) in [("100000", "100000"), ("250", "250")] {
        let output = ibqos(&["fabric", "gen", "torus", "--x", x, "--y", y]);
        fails_saying_once(&output, "the unicast LID space holds 49151");
        assert_eq!(stdout(&output), "");
        assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
    }
}

#[test]
fn fabric_serve_refuses_counter_presets_it_cannot_set_before_it_binds() {
    let dir = TempDir::new().unwrap();
    let presets = scratch_file(
        &dir,
        "presets.toml",
        "[[counter]]\nnode = \"S1\"\nport = 3\nattribute = \"PortVLXmitWaitCounters\"\n\
         counter = \"PortVLXmitWait1\"\nvalue = 65536\n",
    );
    let sockname = format!("ibqos-presets-{}", std::process::id());
    let output = ibqos(&[
        "fabric",
        "serve",
        "two-switch",
        "--sockname",
        &sockname,
        "--preset-counters",
        presets.to_str().unwrap(),
    ]);
    fails_saying_once(
        &output,
        "error[counter-too-large]: PortVLXmitWait1 holds at most 65535, not 65536\n \
         --> ",
    );
    assert!(
        stderr(&output).contains("presets.toml:6:9"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("serving"), "{}", stderr(&output));
}
