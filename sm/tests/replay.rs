//! Replays the sweeps recorded in `replay/` (see its README) against a bare [`Sweep`]: no
//! fabric, no transport, only the recorded MADs and times going in. Each step must make the
//! sweep send exactly the recorded requests, bytes and transaction IDs and order, and the
//! sweep must end where the recording ended.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ibqos_mad::{Smp, SmpRepr};
use ibqos_opensm::{Format, load_bytes};
use ibqos_sm::config::sweep_config;
use ibqos_sm::engine::sweep::{Learned, Sweep, SweepConfig, SweepMode};
use serde_json::{Value, json};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex bytes"))
        .collect()
}

fn smp(mad: &[u8]) -> SmpRepr {
    SmpRepr::parse(&Smp::new_checked(mad).expect("an SMP")).expect("an SMP")
}

/// The configuration the header line names: a file of the repository, lines added to it, and
/// the sweep's mode.
fn config(header: &Value) -> SweepConfig {
    let name = header["config"].as_str().expect("config");
    let mut text = std::fs::read(repo(name)).unwrap();
    text.extend_from_slice(header["append"].as_str().expect("append").as_bytes());
    let settings = load_bytes(name, &text, Format::OpenSmConf)
        .unwrap()
        .settings;
    let mode = match header["mode"].as_str() {
        Some("forced") => SweepMode::Forced,
        Some("diff") => SweepMode::Diff,
        Some("dryrun") => SweepMode::DryRun,
        other => panic!("mode {other:?}"),
    };
    SweepConfig {
        mode,
        ..sweep_config(&settings, Default::default())
    }
}

/// Where the sweep ended, in the recording's terms.
fn end(sweep: &Sweep) -> Value {
    let counts = sweep.counts();
    let qos = sweep.qos_counts();
    let changes: Vec<String> = sweep
        .changes()
        .iter()
        .map(|c| {
            let differences: Vec<String> = c.differences.iter().map(ToString::to_string).collect();
            let (target, sent) = (&c.target, c.sent);
            let differences = differences.join("; ");
            format!(
                "{target} {:?} {:#x} sent={sent}: {differences}",
                c.attribute, c.modifier
            )
        })
        .collect();
    json!({
        "phase": format!("{:?}", sweep.phase()),
        "nodes": counts.nodes,
        "switches": counts.switches,
        "ports": counts.ports,
        "lids": counts.lids,
        "failed_requests": counts.failed_requests,
        "ports_not_active": counts.ports_not_active,
        "qos_configured": qos.configured,
        "qos_verified": qos.verified,
        "qos_failed": qos.failed,
        "changes": changes,
    })
}

/// Replays one recording; `Err` says at which line it went another way.
fn replay(text: &str) -> Result<(), String> {
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().ok_or("an empty file")?;
    let header: Value = serde_json::from_str(header).map_err(|e| e.to_string())?;
    let origin = Instant::now();
    let mut sweep = Sweep::start(config(&header), Learned::default(), origin);
    for (index, line) in lines {
        let at = |what: String| format!("line {}: {what}", index + 1);
        let step: Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        if let Some(recorded) = step.get("end") {
            if !sweep.is_done() {
                return Err(at(format!("the sweep is still {:?}", sweep.phase())));
            }
            let ended = end(&sweep);
            return if ended == *recorded {
                Ok(())
            } else {
                Err(at(format!("ended {ended}, recorded {recorded}")))
            };
        }
        if sweep.is_done() {
            return Err(at(format!("the sweep ended early, {:?}", sweep.phase())));
        }
        // As the driver does: the MAD that came in, then the time, then what is due to go out.
        let now = origin + Duration::from_nanos(step["t_ns"].as_u64().ok_or(at("no t_ns".into()))?);
        let incoming = &step["in"];
        if let Some(mad) = incoming["response"].as_str() {
            sweep.on_response(now, smp(&unhex(mad)));
        } else if let Some(mad) = incoming["dropped"].as_str() {
            sweep.on_dropped(now, smp(&unhex(mad)));
        }
        sweep.on_time(now);
        let mut sent = Vec::new();
        while let Some(transmit) = sweep.poll_transmit(now) {
            let mut mad = [0u8; 256];
            transmit.mad.emit(&mut Smp::new_unchecked(&mut mad[..]));
            sent.push(Value::from(hex(&mad)));
        }
        let recorded = step["out"].as_array().ok_or(at("no out".into()))?;
        if let Some(i) =
            (0..sent.len().max(recorded.len())).find(|&i| sent.get(i) != recorded.get(i))
        {
            return Err(at(format!(
                "request {i} of the step: sent {:?}, recorded {:?}",
                sent.get(i).and_then(Value::as_str),
                recorded.get(i).and_then(Value::as_str)
            )));
        }
    }
    Err("no end line".into())
}

fn replay_file(name: &str) {
    let text = std::fs::read_to_string(repo("sm/tests/replay").join(name)).unwrap();
    if let Err(why) = replay(&text) {
        panic!("{name}: {why}");
    }
}

#[test]
fn forced_sweep_with_qos() {
    replay_file("forced-qos.jsonl");
}

#[test]
fn diff_sweep_repairs_a_table_changed_behind_its_back() {
    replay_file("diff-repair.jsonl");
}

#[test]
fn dry_run_reads_and_sets_nothing() {
    replay_file("dry-run.jsonl");
}

#[test]
fn forced_sweep_on_a_lossy_fabric() {
    replay_file("forced-lossy.jsonl");
}

/// A replay notices a sweep that goes another way: one flipped bit in one recorded request
/// (in its attribute data, past the header) fails it at that request.
#[test]
fn a_changed_recording_fails() {
    let text = std::fs::read_to_string(repo("sm/tests/replay/forced-qos.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut step: Value = serde_json::from_str(&lines[1]).unwrap();
    let first = step["out"][0].as_str().unwrap().to_string();
    // Byte 100 is in the SMP's data: '0' -> '1' flips its low bit of the high nibble.
    let flip = if &first[200..201] == "0" { "1" } else { "0" };
    let changed = format!("{}{flip}{}", &first[..200], &first[201..]);
    step["out"][0] = Value::from(changed);
    lines[1] = step.to_string();
    let result = replay(&lines.join("\n"));
    let why = result.expect_err("a changed recording replayed");
    assert!(why.starts_with("line 2: request 0 of the step"), "{why}");
}
