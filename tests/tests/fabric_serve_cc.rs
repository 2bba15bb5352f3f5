//! The emulated fabric's congestion control agents, written by ibccconfig and read back by
//! ibccquery (infiniband-diags: libibmad's layouts, not ours) through `ibqos fabric serve`.
//! ibsim cannot be the oracle: it hands class 0x21 to its SMP handlers and corrupts the fabric.
//!
//! What is checked: every field ibccconfig can set lands where libibmad reads it; a Set keeps
//! only what its Control_Map selects; the CCT is addressed by block; a protected CC_Key hides
//! itself from a Get without it and turns away a Set without it, counting the violations.
//! ibccquery reads only the first 32 bytes of a CongestionLog (its buffer is the log data's
//! size), so only the log's header is checked.
//!
//! A missing tool (libumad2sim.so, smpquery, ibccquery, ibccconfig) fails the test.

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
