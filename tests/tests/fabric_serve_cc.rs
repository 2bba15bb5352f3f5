//! The emulated fabric's congestion control agents, written by ibccconfig and read back by
//! ibccquery (infiniband-diags: libibmad's layouts, not ours) through `ibqos fabric serve`.
//! ibsim cannot be the oracle: it hands class 0x21 to its SMP handlers and corrupts the fabric.
//!
//! What is checked: every field ibccconfig can set lands where libibmad reads it; a Set keeps
//! only what its Control_Map selects; the CCT is addressed by block; a protected CC_Key hides
//! itself from a Get without it and turns away a Set without it, counting the violations.
//! Against OpenSM: both SMs leave the same state. Beyond it: a daemon with the key programmed
//! keys every agent, and Sets again at its next sweep a setting changed behind its back.
//! ibccquery reads only the first 32 bytes of a CongestionLog (its buffer is the log data's
//! size), so only the log's header is checked.
//!
//! A missing tool (libumad2sim.so, smpquery, ibccquery, ibccconfig) fails the test.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::perfquery::PerfQuery;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Where the SM runs, and where the diags run: another CA, so that their MADs cross links.
const SM_NODE: &str = "H1";
const QUERY_NODE: &str = "H2";

/// Agents the diags address, by directed route from [`QUERY_NODE`] on two-switch.net: a switch
/// and the dual-port CA's port 1.
const TARGETS: [(&str, &[u8]); 2] = [("S1", &[1]), ("H5", &[1, 5])];

/// The `Name:....value` lines of a diag's output, in order.
fn fields(output: &str) -> Vec<(String, String)> {
    output
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            let value = value.trim_start_matches('.');
            (!name.starts_with('#') && !name.contains(' '))
                .then(|| (name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The value printed for `name` (the first, where several entries print it).
fn field(output: &str, name: &str) -> String {
    fields(output)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in:\n{output}"))
        .1
}

/// The diags at [`QUERY_NODE`].
struct Cc<'a> {
    tools: &'a SimTools,
    diags: PerfQuery<'a>,
}

impl Cc<'_> {
    fn query(&self, args: &[&str]) -> String {
        let out = self.diags.run_tool(&self.tools.ibccquery.path, args);
        assert!(
            out.starts_with("exit status: 0\n"),
            "ibccquery {args:?}: {out}"
        );
        out
    }

    /// ibccconfig with `args`: whether it succeeded, and its output.
    fn config(&self, args: &[&str]) -> (bool, String) {
        let out = self.diags.run_tool(&self.tools.ibccconfig.path, args);
        (out.starts_with("exit status: 0\n"), out)
    }

    fn set(&self, args: &[&str]) {
        let (ok, out) = self.config(args);
        assert!(ok, "ibccconfig {args:?}: {out}");
    }
}

fn served(dir: &TestDir) -> (SimTools, Ibsim) {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let netfile = testdata("two-switch.net");
    let served_dir = dir.subdir("served");
    let served = Ibsim::serve(&tools, &ibqos, &netfile, SM_NODE, &served_dir).unwrap();
    let sm = SmInvocation::new(SmFabric::Native, SM_NODE, &served_dir.join("cache"));
    sm.run_up(&ibqos, &served).unwrap();
    (tools, served)
}

#[test]
fn ibccconfig_writes_and_ibccquery_reads_what_the_agents_keep() {
    let dir = TestDir::new("fabric-serve-cc");
    let (tools, served) = served(&dir);
    let cc = Cc {
        tools: &tools,
        diags: PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS),
    };

    // CongestionInfo: a CA keeps a table, a switch none.
    assert_eq!(field(&cc.query(&["CI", "S1"]), "ControlTableCap"), "0");
    assert_eq!(field(&cc.query(&["CI", "H5"]), "ControlTableCap"), "31");

    // SwitchCongestionSetting with Control_Map 0x1c: threshold and packet size, credit
    // starvation, marking rate; the masks it carries are not selected and stay 0.
    cc.set(&[
        "SS", "S1", "0x1c", "0x6", "0xff", "15", "8", "3", "1:7", "10",
    ]);
    let out = cc.query(&["SS", "S1"]);
    let zero_mask = "0".repeat(64);
    for (name, value) in [
        ("Control_Map", "0x0000001c"),
        ("Victim_Mask", zero_mask.as_str()),
        ("Credit_Mask", zero_mask.as_str()),
        ("Threshold", "0x0f"),
        ("Packet_Size", "8"),
        ("CS_Threshold", "0x03"),
        ("CS_ReturnDelay", "0x4007"),
        ("Marking_Rate", "10"),
    ] {
        assert_eq!(field(&out, name), value, "{name}: {out}");
    }
    // Now the masks too.
    cc.set(&["SS", "S1", "0x3", "0x6", "0xff", "0", "0", "0", "0:0", "0"]);
    let out = cc.query(&["SS", "S1"]);
    assert_eq!(field(&out, "Victim_Mask"), format!("{}06", "0".repeat(62)));
    assert_eq!(field(&out, "Credit_Mask"), format!("{}ff", "0".repeat(62)));
    assert_eq!(field(&out, "Threshold"), "0x0f", "{out}");

    // SwitchPortCongestionSetting of port 2: its element, by block.
    cc.set(&["SP", "S1", "2", "1", "0", "7", "4", "0x203"]);
    let out = cc.query(&["SP", "S1", "2"]);
    for (name, value) in [
        ("Valid", "1"),
        ("Control_Type", "0"),
        ("Threshold", "0x07"),
        ("Packet_Size", "4"),
        ("Cong_Parm_Marking_Rate", "515"),
    ] {
        assert_eq!(field(&out, name), value, "{name}: {out}");
    }
    assert_eq!(field(&cc.query(&["SP", "S1", "1"]), "Valid"), "0");

    // CACongestionSetting: every SL, then with Control_Map 0x8 SL 3 alone takes the entry.
    cc.set(&["CS", "H5", "0", "0xffff", "16", "1", "1", "1"]);
    cc.set(&["CS", "H5", "1", "0x8", "0x150", "2", "3", "1"]);
    let out = cc.query(&["CS", "H5"]);
    assert_eq!(field(&out, "Port_Control"), "0x0001");
    assert_eq!(field(&out, "Control_Map"), "0x0008");
    let timers: Vec<String> = fields(&out)
        .into_iter()
        .filter(|(n, _)| n == "CCTI_Timer")
        .map(|(_, v)| v)
        .collect();
    let mut expected = vec!["16".to_owned(); 16];
    expected[3] = "336".to_owned();
    assert_eq!(timers, expected, "{out}");

    // CongestionControlTable block 1, CCTI_Limit 65: entries 64 and 65.
    cc.set(&["CT", "H5", "65", "1", "0:0", "3:0x3fff"]);
    let out = cc.query(&["CT", "H5"]);
    assert_eq!(field(&out, "CCTI_Limit"), "65");
    let entries: Vec<(String, String)> = fields(&out)
        .windows(3)
        .filter(|w| w[0].0 == "Entry")
        .map(|w| (w[1].1.clone(), w[2].1.clone()))
        .collect();
    assert_eq!(entries.len(), 66, "{out}");
    let mut expected = vec![("0".to_owned(), "0".to_owned()); 66];
    expected[65] = ("3".to_owned(), "16383".to_owned());
    assert_eq!(entries, expected, "{out}");

    // The log and the clock answer.
    let out = cc.query(&["CL", "S1"]);
    assert_eq!(field(&out, "LogType"), "1");
    assert_eq!(field(&out, "LogEventsCounter"), "0");
    assert_eq!(field(&cc.query(&["CL", "H5"]), "LogType"), "2");
    let stamp: u64 = field(&cc.query(&["TI", "H5"]), "Timestamp")
        .parse()
        .unwrap();
    assert!(stamp > 0);
}

#[test]
fn a_protected_cc_key_turns_away_a_set_without_it() {
    let dir = TestDir::new("fabric-serve-cc-key");
    let (tools, served) = served(&dir);
    let cc = Cc {
        tools: &tools,
        diags: PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS),
    };
    cc.set(&["CK", "H5", "0x1234", "1", "60", "0"]);
    let out = cc.query(&["CK", "H5"]);
    assert_eq!(field(&out, "CC_Key"), "0x0000000000000000", "hidden: {out}");
    assert_eq!(field(&out, "CC_KeyProtectBit"), "1");
    assert_eq!(field(&out, "CC_KeyLeasePeriod"), "60");

    let (ok, out) = cc.config(&["CS", "H5", "1", "0x1", "9", "9", "9", "9"]);
    assert!(!ok, "a Set without the key was answered: {out}");
    let out = cc.query(&["-c", "0x1234", "CK", "H5"]);
    assert_eq!(field(&out, "CC_Key"), "0x0000000000001234", "{out}");
    let violations: u32 = field(&out, "CC_KeyViolations").parse().unwrap();
    assert!(violations >= 1, "{out}");
    assert_eq!(field(&cc.query(&["CS", "H5"]), "Port_Control"), "0x0000");

    cc.set(&["-c", "0x1234", "CS", "H5", "1", "0x1", "9", "9", "9", "9"]);
    let out = cc.query(&["CS", "H5"]);
    assert_eq!(field(&out, "Port_Control"), "0x0001", "{out}");
    assert_eq!(field(&out, "CCTI_Timer"), "9", "{out}");
}

/// Every agent of two-switch.net by directed route from [`QUERY_NODE`], and what ibccquery
/// reads of it: a switch's SwitchCongestionSetting, a CA port's CACongestionSetting and table.
const AGENTS: [(&str, &[u8], &[&str]); 8] = [
    ("S1", &[1], &["SS"]),
    ("S2", &[1, 3], &["SS"]),
    ("H1", &[1, 1], &["CS", "CT"]),
    ("H2", &[], &["CS", "CT"]),
    ("H3", &[1, 3, 1], &["CS", "CT"]),
    ("H4", &[1, 3, 2], &["CS", "CT"]),
    ("H5/1", &[1, 5], &["CS", "CT"]),
    ("H5/2", &[1, 3, 5], &["CS", "CT"]),
];

/// The agents of [`AGENTS`] on nodes other than `without_cc`.
fn agents(
    without_cc: &[&str],
) -> impl Iterator<Item = &'static (&'static str, &'static [u8], &'static [&'static str])> {
    AGENTS.iter().filter(move |(name, _, _)| {
        let node = name.split('/').next().unwrap_or(name);
        !without_cc.contains(&node)
    })
}

/// Everything ibccquery reads of every agent of `sim` but those of the nodes `without_cc`,
/// each answer under its agent's name, the `# ...: Lid N` header lines left out (the two SMs
/// need not give the same LIDs).
fn cc_state(tools: &SimTools, sim: &Ibsim, without_cc: &[&str]) -> String {
    let targets: Vec<(&'static str, &[u8])> = AGENTS.iter().map(|&(n, p, _)| (n, p)).collect();
    let diags = PerfQuery::new(tools, sim, QUERY_NODE, &targets);
    let cc = Cc { tools, diags };
    let mut state = String::new();
    for (name, _, ops) in agents(without_cc) {
        for op in *ops {
            let out = cc.query(&[op, name]);
            state.push_str(&format!("== {name} {op}\n"));
            for line in out.lines().filter(|line| !line.starts_with("# ")) {
                state.push_str(line);
                state.push('\n');
            }
        }
    }
    state
}

/// A served fabric's CC state: what ibccquery reads of every agent, and every agent's whole
/// state as the emulator dumps it when it stops (the table below CCTI_Limit included, which
/// ibccquery does not print).
#[derive(Debug, PartialEq)]
struct CcState {
    read: String,
    dumped: Vec<(String, u8, Value)>,
}

/// `ibqos fabric serve --dump` in `dir`, its nodes `without_cc` left without an agent,
/// brought up by `bring_up`, and its CC state.
fn cc_state_after(
    dir: &Path,
    without_cc: &[&str],
    bring_up: impl FnOnce(&SimTools, &Path, &Ibsim),
) -> CcState {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let netfile = testdata("two-switch.net");
    let dump = dir.join("fabric.json");
    let schedule = dir.join("faults.toml");
    let entries: String = without_cc
        .iter()
        .map(|node| format!("[[without_cc]]\nnode = \"{node}\"\n"))
        .collect();
    std::fs::write(&schedule, entries).unwrap();
    let (dump_arg, schedule_arg) = (dump.display().to_string(), schedule.display().to_string());
    let args = ["--dump", &dump_arg, "--fault-schedule", &schedule_arg];
    let served = Ibsim::serve_with(&tools, &ibqos, &netfile, SM_NODE, dir, &args).unwrap();
    bring_up(&tools, &ibqos, &served);
    let read = cc_state(&tools, &served, without_cc);
    served.signal("TERM").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        match std::fs::read_to_string(&dump) {
            Ok(text) if text.ends_with('\n') => break text,
            _ if Instant::now() > deadline => panic!("no dump at {}", dump.display()),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    CcState {
        read,
        dumped: congestion_sections(&text),
    }
}

/// Every port's `congestion` section in the fabric dump `text`, by node name and port number.
fn congestion_sections(text: &str) -> Vec<(String, u8, Value)> {
    let fabric: Value = serde_json::from_str(text).unwrap();
    let mut dumped = Vec::new();
    for node in fabric["nodes"].as_object().unwrap().values() {
        for (number, port) in node["ports"].as_object().unwrap() {
            if let Some(cc) = port.get("congestion") {
                let name = node["name"].as_str().unwrap().to_owned();
                dumped.push((name, number.parse().unwrap(), cc.clone()));
            }
        }
    }
    dumped.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    dumped
}

/// The CC state OpenSM leaves on a fresh served fabric with `options` (its nodes `without_cc`
/// without an agent), and the state `ibqos sm --once` leaves on another like it.
fn both_sms(name: &str, options: &str, without_cc: &[&str]) -> (CcState, CcState) {
    let dir = TestDir::new(name);
    let opensm_dir = dir.subdir("opensm");
    let theirs = cc_state_after(&opensm_dir, without_cc, |tools, _, served| {
        let run = run_opensm_once(tools, served, SM_NODE, options, &opensm_dir.join("sm")).unwrap();
        assert_eq!(run.error_lines(), Vec::<&str>::new(), "{}", run.log);
    });
    let ibqos_dir = dir.subdir("ibqos");
    let ours = cc_state_after(&ibqos_dir, without_cc, |_, ibqos, served| {
        let conf = ibqos_dir.join("opensm.conf");
        std::fs::write(&conf, options).unwrap();
        let sm = SmInvocation::new(SmFabric::Native, SM_NODE, &ibqos_dir.join("cache"))
            .opensm_conf(&conf);
        sm.run_up(ibqos, served).unwrap();
    });
    // Every switch and CA port with an agent was reached.
    let reached = agents(without_cc).count();
    assert_eq!(theirs.dumped.len(), reached, "{:?}", theirs.dumped);
    (theirs, ours)
}

/// Every option OpenSM sends, none at its default, the switch masks right-aligned.
const OPTIONS: &str = include_str!("../../examples/opensm-cc.conf");

/// OpenSM 3.3.23 and ibqos, each alone on a fresh served fabric with the same options, leave
/// every switch's and CA port's agent holding the same settings and table: read by ibccquery,
/// and whole in the emulator's dump.
#[test]
fn opensm_and_ibqos_leave_the_same_congestion_control_state() {
    let (theirs, ours) = both_sms("fabric-serve-cc-opensm", OPTIONS, &[]);
    // Not two fabrics left at power-on: the options reached the agents.
    let read = &theirs.read;
    assert!(
        read.contains("Marking_Rate:....................10"),
        "{read}"
    );
    assert!(
        read.contains("CCTI_Limit:......................5"),
        "{read}"
    );
    assert_eq!(ours, theirs);
}

/// A one-entry `cc_cct`: OpenSM sends CCTI_Limit 0 and an all-zero block, and ibqos sends the
/// same, so the tables agree. ibccquery prints no entry at CCTI_Limit 0: the dump shows it.
#[test]
fn a_one_entry_table_is_left_as_opensm_leaves_it() {
    let options = "congestion_control TRUE\ncc_ca_cong_setting_port_control 1\ncc_cct 1:5\n";
    let (theirs, ours) = both_sms("fabric-serve-cc-one-entry", options, &[]);
    // Programmed (the port control), with the table's one entry left out: entry 0 is 0.
    let read = &theirs.read;
    assert!(
        read.contains("Port_Control:....................0x0001"),
        "{read}"
    );
    for (name, _, cc) in &theirs.dumped {
        if let Some(ca) = cc.get("ca") {
            assert_eq!(ca["table"], serde_json::json!([0]), "{name}: {cc}");
        }
    }
    assert_eq!(ours, theirs);
}

/// A switch without a congestion control agent answers status 0x0008, as ibsim's switches
/// answer a SwitchCongestionSetting Set: both SMs give it up and program every other agent
/// alike.
#[test]
fn a_switch_answering_unsupported_is_left_as_opensm_leaves_it() {
    let (theirs, ours) = both_sms("fabric-serve-cc-unsupported", OPTIONS, &["S2"]);
    assert!(
        theirs.read.contains("Marking_Rate:....................10"),
        "{}",
        theirs.read
    );
    assert!(
        !theirs.dumped.iter().any(|(name, _, _)| name == "sw-two"),
        "{:?}",
        theirs.dumped
    );
    assert_eq!(ours, theirs);
}

/// `ibqos dump --congestion` of a served fabric `ibqos sm` programmed reads, over the wire, what
/// the emulator's own dump says every agent holds; S2, without an agent, is named and left out.
#[test]
fn ibqos_dump_reads_the_congestion_state_the_emulator_holds() {
    let test_dir = TestDir::new("fabric-serve-cc-dump");
    let dir = test_dir.path();
    let live = dir.join("live.json");
    let mut log = String::new();
    let served = cc_state_after(dir, &["S2"], |_, ibqos, served| {
        let conf = dir.join("opensm.conf");
        std::fs::write(&conf, OPTIONS).unwrap();
        let sm =
            SmInvocation::new(SmFabric::Native, SM_NODE, &dir.join("cache")).opensm_conf(&conf);
        sm.run_up(ibqos, served).unwrap();
        let fabric = format!("ibsim:{}@{QUERY_NODE}", served.sockname());
        let out = std::process::Command::new(ibqos)
            .args(["dump", "--congestion", "--fabric", &fabric, "-o"])
            .arg(&live)
            .output()
            .unwrap();
        log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
    });
    assert!(
        log.contains(
            "[0]: SwitchCongestionSetting (modifier 0x0): answered status 0x0008; its \
                      congestion settings are not in the dump"
        ),
        "{log}"
    );
    assert!(log.contains("(7 agents read)"), "{log}");
    let read = congestion_sections(&std::fs::read_to_string(&live).unwrap());
    assert_eq!(read.len(), 7, "{read:?}");
    assert_eq!(read, served.dumped);
}

/// Beyond OpenSM, as ibqos.toml asks: every agent gets the CC_Key, protected, and a daemon
/// sweeping every second reads its settings back.
const KEYED: &str = "[sm]\nsweep_interval = 1\ncc_key_program = true\ncc_key_protect = true\n\
                     cc_key_lease_period = 60\n[opensm]\ncongestion_control = true\n\
                     cc_key = \"0x1234\"\ncc_sw_cong_setting_control_map = \"0x1f\"\n\
                     cc_sw_cong_setting_threshold = \"0xf\"\n\
                     cc_sw_cong_setting_marking_rate = 10\n\
                     cc_ca_cong_setting_port_control = \"1\"\n\
                     cc_ca_cong_setting_control_map = \"0x2\"\n\
                     \"cc_ca_cong_setting_ccti_timer 1\" = 150\ncc_cct = \"0:0,1:5\"\n";

/// How long a daemon's sweep may take to end.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(30);

/// `ibqos sm` with [`KEYED`] programs the key into every agent before its settings, so a Set
/// without it is turned away; a switch setting rewritten behind its back (by ibccconfig, with
/// the key) is read back and Set again at the next sweep.
#[test]
fn a_daemon_programs_the_key_and_sets_again_what_changed_behind_its_back() {
    let test_dir = TestDir::new("fabric-serve-cc-read-back");
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let netfile = testdata("two-switch.net");
    let served_dir = test_dir.subdir("served");
    let served = Ibsim::serve(&tools, &ibqos, &netfile, SM_NODE, &served_dir).unwrap();
    let toml = test_dir.path().join("ibqos.toml");
    std::fs::write(&toml, KEYED).unwrap();
    let sm =
        SmInvocation::new(SmFabric::Native, SM_NODE, &served_dir.join("cache")).opensm_conf(&toml);
    let mut daemon = Daemon::start(&sm, &ibqos, &served).unwrap();
    let summary = daemon.pause_after_next_sweep(SUMMARY_TIMEOUT).unwrap();
    assert_eq!(summary["subnet_up"], true, "{}", daemon.output());
    let cc = Cc {
        tools: &tools,
        diags: PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS),
    };

    for target in ["S1", "H5"] {
        let out = cc.query(&["CK", target]);
        assert_eq!(field(&out, "CC_Key"), "0x0000000000000000", "hidden: {out}");
        assert_eq!(field(&out, "CC_KeyProtectBit"), "1", "{out}");
        let out = cc.query(&["-c", "0x1234", "CK", target]);
        assert_eq!(field(&out, "CC_Key"), "0x0000000000001234", "{out}");
        assert_eq!(field(&out, "CC_KeyLeasePeriod"), "60", "{out}");
    }
    assert_eq!(field(&cc.query(&["SS", "S1"]), "Marking_Rate"), "10");
    let rewrite = ["SS", "S1", "0x10", "0", "0", "0", "0", "0", "0:0", "3"];
    let (taken, out) = cc.config(&rewrite);
    assert!(!taken, "a Set without the key was answered: {out}");
    let keyed: Vec<&str> = ["-c", "0x1234"].iter().chain(&rewrite).copied().collect();
    cc.set(&keyed);
    assert_eq!(field(&cc.query(&["SS", "S1"]), "Marking_Rate"), "3");

    daemon.signal("CONT").unwrap();
    daemon.pause_after_next_sweep(SUMMARY_TIMEOUT).unwrap();
    let out = cc.query(&["SS", "S1"]);
    assert_eq!(
        field(&out, "Marking_Rate"),
        "10",
        "{out}\n{}",
        daemon.output()
    );
    let log = daemon.output();
    assert!(
        log.contains("does not hold the SwitchCongestionSetting it was programmed with"),
        "{log}"
    );
    daemon.signal("CONT").unwrap();
    daemon.stop(SUMMARY_TIMEOUT).unwrap();
}
