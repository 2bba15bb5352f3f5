//! `ibqos sm` on a fabric that misbehaves: SMPs dropped by ibsim, responses lost or damaged by
//! the SM's own fault injection, and an ibsim that dies during the sweep.
//!
//! Every run is bounded (run_bounded); a run that hangs fails the test. A panic (exit status
//! 101, or "panicked at" in the log) fails it too, whatever else happened.

use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use ibqos_tests::process::{command_line, run_bounded_while};
use ibqos_tests::readback::{Failures, Readback};
use ibqos_tests::scenario::{
    Fabric, check_configured, check_configured_except, check_summary_counts, testdata,
};
use ibqos_tests::sm::{SM_TIMEOUT, SmFabric, SmInvocation, SmRun, SmSummary};
use ibqos_tests::{Ibsim, SimTools, TestDir};

const SEEDS: [u64; 3] = [1, 2, 3];

fn two_switch() -> Fabric {
    Fabric::load("two-switch", &testdata("two-switch.net")).unwrap()
}

/// Runs the SM once (native client) with `args`, requiring only that it neither hung nor
/// panicked and printed a summary.
fn run_sm(sim: &Ibsim, fabric: &Fabric, dir: &TestDir, args: &[String]) -> (SmRun, SmSummary) {
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    let run = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .args(args)
        .run(&ibqos, sim)
        .unwrap();
    assert!(
        !run.panicked(),
        "`{}` panicked ({})\n{}",
        run.line,
        run.status,
        run.output()
    );
    let summary = run.summary().unwrap();
    (run, summary)
}

/// Requires SUBNET UP: exit status 0 and the summary saying so.
fn assert_up(run: &SmRun, summary: &SmSummary) {
    assert!(
        run.status.success() && summary.subnet_up,
        "`{}` did not bring the subnet up ({}): {}\n{}",
        run.line,
        run.status,
        summary.result,
        run.output()
    );
}

/// The exit status must agree with the summary: 0 exactly when the subnet came up.
fn assert_status_matches(run: &SmRun, summary: &SmSummary) {
    assert_eq!(
        run.status.success(),
        summary.subnet_up,
        "`{}` exited with {} but its summary says {:?}\n{}",
        run.line,
        run.status,
        summary.result,
        run.output()
    );
}

/// `Error "S1"[3] 100` drops every SMP sent out through S1 port 3, one of the two parallel
/// S1-S2 links. The SM must give up on those requests, find S2 through the other link, and
/// configure the whole fabric anyway. It may call the sweep incomplete (requests did fail), so
/// only the end state is required, not SUBNET UP. The error is lifted before reading back, so
/// the readers see the fabric the SM left, not the fault.
///
/// ibsim applies the error to every SMP that enters S1 by port 3, so it drops both the
/// requests that come back that way and the responses of requests sent out through it.
#[test]
fn smps_dropped_on_one_of_two_parallel_links() {
    let tools = SimTools::require();
    let dir = TestDir::new("sm-fault-link");
    let fabric = two_switch();
    let mut sim = Ibsim::start_with_console(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    sim.console("Error \"S1\"[3] 100").unwrap();
    let (run, summary) = run_sm(&sim, &fabric, &dir, &[]);
    sim.console("Error \"S1\"[3] 0").unwrap();

    assert_status_matches(&run, &summary);
    let mut f = Failures::new("SMPs dropped at S1[3]");
    f.check(summary.failed_requests > 0 && summary.retries > 0, || {
        format!(
            "every SMP through S1[3] was dropped, yet the summary reports failed_requests {} \
             and retries {}: {}",
            summary.failed_requests, summary.retries, summary.raw
        )
    });
    let (nodes, switches, lids) = fabric.expected_counts();
    f.check(
        (summary.nodes, summary.switches, summary.lids) == (nodes, switches, lids),
        || format!("summary counts differ from the net file: {}", summary.raw),
    );
    let rb = Readback::read(&tools, &sim, &fabric.topology, &fabric.query_node).unwrap();
    // The SM never learns what is behind S1[3] (every answer across that link is dropped), so
    // it may leave that link in Init; the routes must then avoid it.
    let blind_link = [("S1".to_owned(), 3), ("S2".to_owned(), 3)];
    check_configured_except(&mut f, &fabric, &rb, &[], &blind_link);
    f.assert_none();
}

/// `Error "H3" 100`: H3 answers nothing, as if dead. The SM must log, retry, give up on H3 and
/// configure the rest: every other CA Active, with a LID, reaching every other endport.
#[test]
fn a_dead_hca_does_not_stop_the_rest() {
    let tools = SimTools::require();
    let dir = TestDir::new("sm-fault-dead-hca");
    let fabric = two_switch();
    let mut sim = Ibsim::start_with_console(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    sim.console("Error \"H3\" 100").unwrap();
    let (run, summary) = run_sm(&sim, &fabric, &dir, &[]);
    sim.console("Error \"H3\" 0").unwrap();
    assert_status_matches(&run, &summary);

    let mut f = Failures::new("dead H3");
    f.check(summary.failed_requests > 0 && summary.retries > 0, || {
        format!(
            "H3 answered nothing, yet the summary reports failed_requests {} and retries {}: {}",
            summary.failed_requests, summary.retries, summary.raw
        )
    });
    f.check(run.stderr.contains("WARN"), || {
        format!("no warning logged about H3:\n{}", run.stderr)
    });
    let rb = Readback::read(&tools, &sim, &fabric.topology, &fabric.query_node).unwrap();
    check_configured(&mut f, &fabric, &rb, &["H3"]);
    f.assert_none();
}

/// Runs the SM with `args` on a fresh two-switch ibsim per seed; it must come up and leave the
/// same end state as a clean run. Returns each seed's summary.
fn survives_faults(label: &str, args: &[&str]) -> Vec<SmSummary> {
    let tools = SimTools::require();
    let fabric = two_switch();
    SEEDS
        .iter()
        .map(|seed| {
            let dir = TestDir::new(&format!("{label}-{seed}"));
            // A fresh ibsim per seed: the end state must be this run's work alone.
            let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
            let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            all.extend(["--fault-seed".to_owned(), seed.to_string()]);
            let (run, summary) = run_sm(&sim, &fabric, &dir, &all);
            assert_up(&run, &summary);
            let rb = Readback::read(&tools, &sim, &fabric.topology, &fabric.query_node).unwrap();
            let mut f = Failures::new(format!("{label}, seed {seed}"));
            check_summary_counts(&mut f, &fabric, &summary);
            check_configured(&mut f, &fabric, &rb, &[]);
            f.assert_none();
            summary
        })
        .collect()
}

/// A fifth of all responses lost: the SM retries and still brings everything up.
#[test]
fn lost_responses_are_retried() {
    for (seed, s) in SEEDS
        .iter()
        .zip(survives_faults("sm-loss", &["--fault-loss", "0.2"]))
    {
        assert!(
            s.retries > 0 && s.timeouts > 0,
            "seed {seed}: 20 % loss, yet retries {} and timeouts {}: {}",
            s.retries,
            s.timeouts,
            s.raw
        );
    }
}

/// A fifth of all responses truncated or with bytes flipped: no panic, SUBNET UP, and the damage
/// noticed somewhere in the counters (a flipped TID or status shows as an unmatched answer, an
/// error status or a retry; a flipped payload byte can go unnoticed, so only the total is
/// required to be non-zero).
#[test]
fn corrupt_responses_do_not_panic() {
    for (seed, s) in SEEDS
        .iter()
        .zip(survives_faults("sm-corrupt", &["--fault-corrupt", "0.2"]))
    {
        let count = |key: &str| s.raw.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
        let noticed =
            s.retries + s.error_statuses + count("mismatched_answers") + count("unmatched_answers");
        assert!(
            noticed > 0,
            "seed {seed}: 20 % of responses damaged, yet no counter moved: {}",
            s.raw
        );
    }
}

/// How long the SM may take to notice its fabric is gone: its transaction timeout times its
/// retries per request, plus slack for a loaded machine. OpenSM's defaults are 200 ms x 4.
const GONE_DEADLINE: Duration = Duration::from_secs(60);

/// What happened around ibsim's death.
#[derive(Debug, Default)]
struct Interruption {
    /// Whether the SM was still running when ibsim was frozen; false means the sweep finished
    /// first and the attempt proves nothing.
    sm_was_running: bool,
    killed_at: Option<Instant>,
    problem: Option<String>,
}

/// Waits for the SM to attach, lets it run for `delay`, freezes ibsim (SIGSTOP, so the SM cannot
/// finish in the meantime), checks the SM is still running, then kills ibsim.
fn kill_fabric_during_sweep(sim: &mut Ibsim, sm: &mut Child, delay: Duration) -> Interruption {
    let mut result = Interruption::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sim.has_native_client() {
        if Instant::now() >= deadline || sm.try_wait().ok().flatten().is_some() {
            result.problem = Some("the SM never attached to ibsim".to_owned());
            return result;
        }
        thread::sleep(Duration::from_micros(200));
    }
    thread::sleep(delay);
    if let Err(e) = sim.signal("STOP") {
        result.problem = Some(e.to_string());
        return result;
    }
    result.sm_was_running = matches!(sm.try_wait(), Ok(None));
    sim.kill();
    result.killed_at = Some(Instant::now());
    result
}

/// ibsim dies (SIGKILL) while the SM sweeps fat-tree-16: the SM must exit with an error, within
/// a bounded time, without panicking. The sweep takes about 10 ms, so ibsim is frozen first and
/// the attempt repeated, with a shorter delay, if the sweep won the race.
#[test]
fn fabric_killed_during_the_sweep() {
    let tools = SimTools::require();
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    let fabric = Fabric::load("fat-tree-16", &testdata("fat-tree-16.net")).unwrap();
    for delay_us in [3000, 1000, 300, 0] {
        let dir = TestDir::new("sm-fault-kill");
        let mut sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
        let mut cmd = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
            .command(&ibqos, &sim);
        let line = command_line(&cmd);
        let mut interruption = Interruption::default();
        let finished = run_bounded_while(&mut cmd, SM_TIMEOUT, |sm| {
            interruption = kill_fabric_during_sweep(&mut sim, sm, Duration::from_micros(delay_us));
        })
        .unwrap_or_else(|e| panic!("the SM hung after ibsim was killed: {e}"));
        let exited_at = Instant::now();
        if let Some(problem) = interruption.problem {
            panic!("`{line}`: {problem}");
        }
        if !interruption.sm_was_running {
            continue;
        }
        let run = SmRun::new(line, finished);
        assert!(
            !run.panicked(),
            "`{}` panicked:\n{}",
            run.line,
            run.output()
        );
        assert!(
            !run.status.success(),
            "`{}` exited 0 although ibsim died during its sweep\n{}",
            run.line,
            run.output()
        );
        let took = exited_at - interruption.killed_at.expect("killed");
        assert!(
            took < GONE_DEADLINE,
            "`{}` took {took:?} to exit after ibsim died",
            run.line
        );
        return;
    }
    panic!("the sweep finished before ibsim could be stopped, at every delay down to 0");
}
