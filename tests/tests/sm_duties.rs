//! What an SM owes the rest of the fabric besides configuring it: answering another SM's (or
//! `sminfo`'s) SMInfo query, taking traps, and giving its port's SM claim back when it stops.
//!
//! The daemon runs on two-switch.net at H1; infiniband-diags at H2 is the independent reader.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{parse_summary, write_opensm_conf};
use ibqos_tests::smpquery::{SmpQuery, Target};
use ibqos_tests::{DrPath, Ibsim, SimTools, TestDir, Tool};

/// H1's port GUID in two-switch.net (ibsim: NodeGUID 0x0002c90000100000 + port 1).
const H1_PORT_GUID: &str = "0x2c90000100001";
/// IsSM in PortInfo.CapabilityMask.
const IS_SM: u64 = 1 << 1;
const WAIT: Duration = Duration::from_secs(20);

/// The daemon, killed by its PID if the test ends early.
struct Daemon {
    child: Child,
    lines: Receiver<String>,
}

impl Daemon {
    fn start(
        ibqos: &std::path::Path,
        sim: &Ibsim,
        dir: &TestDir,
        conf: &std::path::Path,
    ) -> Daemon {
        let mut child = Command::new(ibqos)
            .args(["sm", "--json", "--fabric"])
            .arg(format!("ibsim:{}@H1", sim.sockname()))
            .arg("--cache-dir")
            .arg(dir.subdir("cache"))
            .arg("-F")
            .arg(conf)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ibqos sm starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Daemon { child, lines }
    }

    /// The next sweep summary, within [`WAIT`].
    fn next_summary(&self) -> serde_json::Value {
        let line = self
            .lines
            .recv_timeout(WAIT)
            .expect("a sweep summary within the wait");
        let summary: serde_json::Value = serde_json::from_str(&line).expect("summary is JSON");
        parse_summary(&line).expect("summary has every documented field");
        summary
    }

    /// SIGTERM, then the exit status within [`WAIT`].
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM to {pid}");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the SM did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// H1's PortInfo.CapabilityMask, read from H2 through S1 (directed route 0,1,1).
fn h1_capability_mask(tools: &SimTools, sim: &Ibsim) -> u64 {
    let query = SmpQuery::new(tools, sim, "H2");
    let info = query
        .portinfo(&Target::Dr(DrPath(vec![1, 1])), None)
        .expect("H1 PortInfo");
    let raw = info.fields.get("CapMask").expect("CapMask printed");
    u64::from_str_radix(raw.trim_start_matches("0x"), 16).expect("hex CapMask")
}

#[test]
fn answers_sminfo_takes_traps_and_releases_its_port() {
    let tools = SimTools::require();
    let sminfo = Tool::require("sminfo", "infiniband-diags");
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    let dir = TestDir::new("sm-duties");
    let mut sim =
        Ibsim::start_with_console(&tools, &testdata("two-switch.net"), dir.path()).unwrap();
    let conf = write_opensm_conf(dir.path(), "sweep_interval 1\nsm_priority 5\n").unwrap();
    let daemon = Daemon::start(&ibqos, &sim, &dir, &conf);
    let first = daemon.next_summary();
    assert_eq!(first["subnet_up"], true, "first sweep: {first}");
    assert_ne!(
        h1_capability_mask(&tools, &sim) & IS_SM,
        0,
        "the SM's port advertises IsSM"
    );

    // `sminfo` asks the master SM (LID 1 here) for its SMInfo; ibsim hands the query to the SM.
    let out = sim
        .client(&sminfo.path, "H2")
        .output()
        .expect("sminfo runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sminfo: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("sm guid {H1_PORT_GUID}")), "{text}");
    assert!(text.contains("priority 5 state 3 SMINFO_MASTER"), "{text}");

    // Unlinking a port makes its switch send trap 128 to its MasterSMLID, the SM.
    sim.console("Unlink \"S1\"[2]").unwrap();
    let traps: u64 = (0..3)
        .map(|_| daemon.next_summary()["traps"].as_u64().unwrap_or(0))
        .sum();
    assert!(traps > 0, "no trap counted after Unlink");
    sim.console("ReLink \"S1\"[2]").unwrap();

    let status = daemon.terminate();
    assert!(status.success(), "the SM exits 0 on SIGTERM: {status}");
    assert_eq!(
        h1_capability_mask(&tools, &sim) & IS_SM,
        0,
        "IsSM cleared once the SM is gone"
    );
}
