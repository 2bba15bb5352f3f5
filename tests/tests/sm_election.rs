//! Two SMs on one ibsim fabric, ibqos and OpenSM 3.3.23, in both roles (IBA 14.4): a lower
//! ibqos stays STANDBY and programs nothing, a higher ibqos started second gets the subnet by
//! HANDOVER from OpenSM, and each takes over when the other, master, is killed.
//!
//! OpenSM runs at H1 and ibqos at H2 of two-switch.net; infiniband-diags at H3 reads who is
//! master (`sminfo`, `saquery SMIR`) and whose tables the fabric holds: every SM programs its
//! own SL-to-VL table on the CA ports (`qos_ca_sl2vl`), and H4's is read back with smpquery,
//! with H4's MasterSMLID. Both SMs poll every `sminfo_polling_timeout` = 500 ms with
//! `polling_retry_number` 2, so a takeover takes seconds (OpenSM's defaults: about a minute).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::OpenSmDaemon;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::smpquery::{SmpQuery, Target};
use ibqos_tests::{DrPath, Ibsim, SimTools, TestDir, Tool};
use serde_json::Value;

const POLL_MS: u64 = 500;
const RETRIES: u64 = 2;
/// OpenSM's CA SL-to-VL table, and ibqos's: within two VLs, so no port masks them.
const OPENSM_SL2VL: [u8; 16] = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1];
const IBQOS_SL2VL: [u8; 16] = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0];
/// How long anything here may take: a sweep of this fabric takes well under a second.
const WAIT: Duration = Duration::from_secs(30);
/// H4, seen from H3: out of H3's port 1 into S2, out of S2's port 2.
const H4: [u8; 2] = [1, 2];

/// Which SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sm {
    OpenSm,
    Ibqos,
}

impl Sm {
    fn sl2vl(self) -> [u8; 16] {
        match self {
            Sm::OpenSm => OPENSM_SL2VL,
            Sm::Ibqos => IBQOS_SL2VL,
        }
    }
}

/// An SM as `sminfo` or an SMInfoRecord shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SmSeen {
    lid: u16,
    guid: u64,
    priority: u8,
    state: u8,
}

/// The two SMs' priorities in a case; they always differ, so a priority names its SM.
#[derive(Debug, Clone, Copy)]
struct Priorities {
    opensm: u8,
    ibqos: u8,
}

impl Priorities {
    fn of(self, sm: Sm) -> u8 {
        match sm {
            Sm::OpenSm => self.opensm,
            Sm::Ibqos => self.ibqos,
        }
    }
}

/// One ibsim with a place for each SM, and the tools that watch them.
struct TwoSms {
    tools: SimTools,
    sim: Ibsim,
    dir: TestDir,
    ibqos_binary: PathBuf,
    sminfo: Tool,
    saquery: Tool,
    priorities: Priorities,
    /// Where ibqos attaches: H2, or a switch (its port 0).
    ibqos_node: &'static str,
}

fn sl2vl_list(table: [u8; 16]) -> String {
    table.map(|vl| vl.to_string()).join(",")
}

/// What both SMs are told: their priority, fast polling, a sweep a second, and QoS on with
/// their own CA table.
fn options(priority: u8, sl2vl: [u8; 16]) -> String {
    format!(
        "sm_priority {priority}\nsminfo_polling_timeout {POLL_MS}\n\
         polling_retry_number {RETRIES}\nsweep_interval 1\nqos TRUE\nqos_ca_sl2vl {}\n",
        sl2vl_list(sl2vl)
    )
}

impl TwoSms {
    fn new(label: &str, priorities: Priorities) -> TwoSms {
        let tools = SimTools::require();
        let dir = TestDir::new(label);
        let sim = Ibsim::start(&tools, &testdata("two-switch.net"), &dir.subdir("ibsim")).unwrap();
        TwoSms {
            tools,
            sim,
            ibqos_binary: ibqos_tests::planner::ibqos_binary().unwrap(),
            sminfo: Tool::require("sminfo", "infiniband-diags"),
            saquery: Tool::require("saquery", "infiniband-diags"),
            dir,
            priorities,
            ibqos_node: "H2",
        }
    }

    /// ibqos at `node` instead of H2.
    fn with_ibqos_at(self, node: &'static str) -> TwoSms {
        TwoSms {
            ibqos_node: node,
            ..self
        }
    }

    /// OpenSM at H1, once its log holds `until`.
    fn start_opensm(&self, until: &str) -> OpenSmDaemon {
        let options = options(self.priorities.opensm, OPENSM_SL2VL);
        let dir = self.dir.subdir("opensm");
        OpenSmDaemon::start_until(&self.tools, &self.sim, "H1", &options, &dir, until).unwrap()
    }

    /// ibqos at its node, as a daemon printing a JSON summary per sweep.
    fn start_ibqos(&self) -> Daemon {
        let dir = self.dir.subdir("ibqos");
        let conf = write_opensm_conf(&dir, &options(self.priorities.ibqos, IBQOS_SL2VL)).unwrap();
        let invocation = SmInvocation::new(SmFabric::Native, self.ibqos_node, &dir.join("cache"))
            .opensm_conf(&conf);
        Daemon::start(&invocation, &self.ibqos_binary, &self.sim).unwrap()
    }

    /// Runs an infiniband-diags tool at H3; its standard output.
    fn diag(&self, tool: &Tool, args: &[String]) -> Result<String, String> {
        let out = self
            .sim
            .client(&tool.path, "H3")
            .args(args)
            .output()
            .map_err(|e| format!("{} does not run: {e}", tool.path.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "{} {args:?}: {}\n{stdout}{}",
                tool.path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// `sminfo [LID]`: the master by default (H3's MasterSMLID), else the SM at `lid`.
    fn sminfo(&self, lid: Option<u16>) -> Result<SmSeen, String> {
        let args: Vec<String> = lid.into_iter().map(|l| l.to_string()).collect();
        let text = self.diag(&self.sminfo, &args)?;
        parse_sminfo(&text).ok_or_else(|| format!("unexpected sminfo output: {text}"))
    }

    /// `saquery SMIR`: the SMs the master's SA lists.
    fn sm_info_records(&self) -> Result<Vec<SmSeen>, String> {
        let text = self.diag(&self.saquery, &["SMIR".to_owned()])?;
        Ok(parse_sm_info_records(&text))
    }

    /// H4's SL-to-VL table and MasterSMLID.
    fn h4_tables(&self) -> Result<([u8; 16], u16), String> {
        let query = SmpQuery::new(&self.tools, &self.sim, "H3");
        let target = Target::Dr(DrPath(H4.to_vec()));
        let rows = query.sl2vl(&target, None).map_err(|e| e.to_string())?;
        let row = rows.first().ok_or("H4 has no SL2VL table")?;
        let info = query.portinfo(&target, None).map_err(|e| e.to_string())?;
        let sm_lid = info
            .fields
            .get("SMLid")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no SMLid in H4's PortInfo: {:?}", info.fields))?;
        Ok((row.vls, sm_lid))
    }

    /// Everything a third node sees says `master` is master and the other SM standby: `sminfo`
    /// of the master and of the standby, the master's SMInfoRecords, and H4's SL-to-VL table
    /// and MasterSMLID. Checked until it holds, within [`WAIT`]; the last look otherwise.
    fn expect_master(&self, master: Sm) -> Result<(), String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let seen = self.look(master);
            if seen.is_ok() || Instant::now() >= deadline {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn look(&self, master: Sm) -> Result<(), String> {
        let standby = match master {
            Sm::OpenSm => Sm::Ibqos,
            Sm::Ibqos => Sm::OpenSm,
        };
        let (master_priority, standby_priority) =
            (self.priorities.of(master), self.priorities.of(standby));
        let seen = self.sminfo(None)?;
        if (seen.priority, seen.state) != (master_priority, 3) {
            return Err(format!(
                "sminfo: {seen:?}, expected the {master:?} master (priority {master_priority})"
            ));
        }
        let records = self.sm_info_records()?;
        let find = |priority| records.iter().find(|r| r.priority == priority).copied();
        let (Some(m), Some(s)) = (find(master_priority), find(standby_priority)) else {
            return Err(format!("saquery SMIR lists {records:?}, not both SMs"));
        };
        if (m.state, s.state) != (3, 2) || m.lid != seen.lid || m.guid != seen.guid {
            return Err(format!(
                "saquery SMIR: master {m:?}, standby {s:?}; sminfo said {seen:?}"
            ));
        }
        let standby_seen = self.sminfo(Some(s.lid))?;
        if (standby_seen.priority, standby_seen.state) != (standby_priority, 2) {
            return Err(format!(
                "sminfo {}: {standby_seen:?}, expected the {standby:?} standby",
                s.lid
            ));
        }
        let (sl2vl, sm_lid) = self.h4_tables()?;
        if sl2vl != master.sl2vl() || sm_lid != seen.lid {
            return Err(format!(
                "H4 holds SL2VL {sl2vl:?} and MasterSMLID {sm_lid}; the {master:?} master (LID \
                 {}) programs {:?}",
                seen.lid,
                master.sl2vl()
            ));
        }
        Ok(())
    }
}

/// "sminfo: sm lid 1 sm guid 0x2c90000100001, activity count 5 priority 5 state 3 SMINFO_MASTER"
fn parse_sminfo(text: &str) -> Option<SmSeen> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str| {
        let at = words.iter().position(|w| w.trim_end_matches(',') == key)?;
        words.get(at + 1).map(|w| w.trim_end_matches(','))
    };
    let lid = words
        .windows(3)
        .find(|w| w[0] == "sm" && w[1] == "lid")
        .map(|w| w[2])?;
    let guid = words
        .windows(3)
        .find(|w| w[0] == "sm" && w[1] == "guid")
        .map(|w| w[2].trim_end_matches(','))?;
    Some(SmSeen {
        lid: lid.parse().ok()?,
        guid: u64::from_str_radix(guid.trim_start_matches("0x"), 16).ok()?,
        priority: after("priority")?.parse().ok()?,
        state: after("state")?.parse().ok()?,
    })
}

/// saquery's "SMInfoRecord dump:" blocks, each with tab-indented `Name....value` lines.
fn parse_sm_info_records(text: &str) -> Vec<SmSeen> {
    text.split("SMInfoRecord dump:")
        .skip(1)
        .filter_map(|block| {
            let fields: std::collections::BTreeMap<&str, &str> = block
                .lines()
                .filter_map(|line| line.trim().split_once(".."))
                .map(|(name, value)| (name, value.trim_start_matches('.').trim()))
                .collect();
            let number = |name: &str| -> Option<u64> {
                let value = fields.get(name)?;
                match value.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).ok(),
                    None => value.parse().ok(),
                }
            };
            Some(SmSeen {
                lid: u16::try_from(number("LID")?).ok()?,
                guid: number("GUID")?,
                priority: u8::try_from(number("Priority")?).ok()?,
                state: u8::try_from(number("SMState")?).ok()?,
            })
        })
        .collect()
}

/// The next summary of `ibqos` for which `wanted` holds, within [`WAIT`]; every summary on the
/// way must hold `each`.
fn summary_until(
    ibqos: &mut Daemon,
    wanted: impl Fn(&Value) -> bool,
    each: impl Fn(&Value) -> Result<(), String>,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let summary = ibqos.next_summary(left).unwrap();
        if let Err(broken) = each(&summary) {
            panic!("{broken}\n{}", ibqos.output());
        }
        if wanted(&summary) {
            return summary;
        }
    }
}

fn state(summary: &Value) -> &str {
    summary["sm_state"].as_str().unwrap_or("")
}

fn is_master_and_up(summary: &Value) -> bool {
    state(summary) == "MASTER" && summary["subnet_up"] == true
}

/// A summary whose sweep sent nothing but Gets.
fn only_gets(summary: &Value) -> Result<(), String> {
    let smps = summary["smps"].as_array().cloned().unwrap_or_default();
    match smps.iter().find(|smp| smp["method"] != "Get") {
        Some(set) => Err(format!("a standby ibqos sent {set}: {summary}")),
        None => Ok(()),
    }
}

fn anything(_: &Value) -> Result<(), String> {
    Ok(())
}

#[test]
fn ibqos_of_lower_priority_stays_standby_and_sets_nothing() {
    let two = TwoSms::new(
        "election-lower",
        Priorities {
            opensm: 5,
            ibqos: 1,
        },
    );
    let opensm = two.start_opensm("SUBNET UP");
    let mut ibqos = two.start_ibqos();
    let standby = summary_until(&mut ibqos, |s| state(s) == "STANDBY", only_gets);
    assert_eq!(standby["master"]["priority"], 5, "{standby}");
    // Several polling periods later it is still standby and has sent no Set: a summary would
    // have come with any sweep.
    std::thread::sleep(Duration::from_millis(POLL_MS * (RETRIES + 4)));
    while let Ok(summary) = ibqos.next_summary(Duration::ZERO) {
        only_gets(&summary).unwrap();
        assert_eq!(state(&summary), "STANDBY", "{summary}");
    }
    if let Err(wrong) = two.expect_master(Sm::OpenSm) {
        panic!("{wrong}\n{}\n{}", ibqos.output(), opensm.output());
    }
    ibqos.stop(WAIT).unwrap();
}

#[test]
fn ibqos_of_higher_priority_started_second_gets_the_subnet_by_handover() {
    handover_to_ibqos_at("H2", "election-handover-to-ibqos");
}

/// The same from a managed switch: ibqos at S2's port 0 is elected, programs the subnet, and
/// OpenSM at H1 goes standby.
#[test]
fn ibqos_at_a_switch_gets_the_subnet_by_handover() {
    handover_to_ibqos_at("S2", "election-handover-to-ibqos-at-switch");
}

/// OpenSM of priority 1 brings the subnet up; ibqos of priority 10, started second at `node`,
/// must get it by handover, and every observer must then see ibqos as master.
fn handover_to_ibqos_at(node: &'static str, label: &str) {
    let two = TwoSms::new(
        label,
        Priorities {
            opensm: 1,
            ibqos: 10,
        },
    )
    .with_ibqos_at(node);
    let mut opensm = two.start_opensm("SUBNET UP");
    let mut ibqos = two.start_ibqos();
    summary_until(&mut ibqos, is_master_and_up, anything);
    opensm.wait_for("Entering STANDBY state", WAIT).unwrap();
    if let Err(wrong) = two.expect_master(Sm::Ibqos) {
        panic!("{wrong}\n{}\n{}", ibqos.output(), opensm.output());
    }
    ibqos.stop(WAIT).unwrap();
}

#[test]
fn ibqos_standby_takes_over_when_opensm_is_killed() {
    let two = TwoSms::new(
        "election-ibqos-takes-over",
        Priorities {
            opensm: 5,
            ibqos: 1,
        },
    );
    let mut opensm = two.start_opensm("SUBNET UP");
    let mut ibqos = two.start_ibqos();
    summary_until(&mut ibqos, |s| state(s) == "STANDBY", only_gets);
    opensm.kill().unwrap();
    let killed = Instant::now();
    summary_until(&mut ibqos, is_master_and_up, anything);
    let took = killed.elapsed();
    eprintln!("ibqos took over {took:?} after OpenSM was killed");
    // Polls every POLL_MS: the last answered one, RETRIES + 1 unanswered, then the sweep.
    let bound = Duration::from_millis(POLL_MS * (RETRIES + 2)) + Duration::from_secs(3);
    assert!(took <= bound, "takeover took {took:?}, more than {bound:?}");
    let (sl2vl, _) = two.h4_tables().unwrap();
    assert_eq!(sl2vl, IBQOS_SL2VL, "H4's table after the takeover");
    let master = two.sminfo(None).unwrap();
    assert_eq!((master.priority, master.state), (1, 3), "{master:?}");
    ibqos.stop(WAIT).unwrap();
}

#[test]
fn opensm_standby_takes_over_when_ibqos_is_killed() {
    let two = TwoSms::new(
        "election-opensm-takes-over",
        Priorities {
            opensm: 1,
            ibqos: 5,
        },
    );
    let mut ibqos = two.start_ibqos();
    summary_until(&mut ibqos, is_master_and_up, anything);
    let mut opensm = two.start_opensm("Entering STANDBY state");
    if let Err(wrong) = two.expect_master(Sm::Ibqos) {
        panic!("{wrong}\n{}\n{}", ibqos.output(), opensm.output());
    }
    ibqos.signal("KILL").unwrap();
    let killed = Instant::now();
    opensm.wait_for("Entering MASTER state", WAIT).unwrap();
    eprintln!(
        "OpenSM took over {:?} after ibqos was killed",
        killed.elapsed()
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let master = two.sminfo(None);
        let tables = two.h4_tables();
        let done = matches!(&master, Ok(m) if (m.priority, m.state) == (1, 3))
            && matches!(&tables, Ok((sl2vl, _)) if *sl2vl == OPENSM_SL2VL);
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after the takeover: sminfo {master:?}, H4 {tables:?}\n{}",
            opensm.output()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}
