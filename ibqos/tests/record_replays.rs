//! Records the replay files of `sm/tests/replay/`: whole sweeps on the emulated fabric in
//! virtual time, run by the real driver, each MAD the sweep sent and each MAD that reached it
//! written down step by step. Ignored, because it rewrites files of another crate; run it with
//! `cargo test -p ibqos --test record_replays -- --ignored` and review the diff.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ibqos_emu::{Emulator, Faults, Models, Request, attach_port, load_topology};
use ibqos_exchange::OutgoingMad;
use ibqos_mad::{
    Attribute, DrPath, Method, Routing, Smp, SmpRepr, VlArbBlock, VlArbEntry, VlArbModifier,
    VlArbitrationTableRepr,
};
use ibqos_opensm::{Format, load_bytes};
use ibqos_sm::config::sweep_config;
use ibqos_sm::engine::sweep::{Learned, Sweep, SweepMode};
use ibqos_sm::responder::{Heard, Responder};
use ibqos_transport::emulated::EmulatedTransport;
use ibqos_transport::{Incoming, LocalPort, Outgoing, Transport, TransportError};
use serde_json::{Value, json};

/// The configuration every recording runs with, relative to the repository.
const CONFIG: &str = "examples/opensm-qos.conf";

/// One step of a sweep: what reached the SM at `t_ns` after the sweep started (nothing for the
/// start and for a wait that ran out) and the requests the sweep then sent.
struct Step {
    t_ns: u64,
    incoming: Value,
    out: Vec<String>,
}

/// A transport that writes down what passes through it.
struct Recorder<'a> {
    inner: &'a mut EmulatedTransport,
    started: Instant,
    steps: Vec<Step>,
}

impl<'a> Recorder<'a> {
    fn new(inner: &'a mut EmulatedTransport) -> Recorder<'a> {
        let started = inner.now();
        let start = Step {
            t_ns: 0,
            incoming: Value::Null,
            out: Vec::new(),
        };
        Recorder {
            inner,
            started,
            steps: vec![start],
        }
    }
}

impl Transport for Recorder<'_> {
    /// Only the sweep's requests (Get and Set) are the sweep's: the driver itself answers traps
    /// and SMInfo requests.
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        let request = smp(&out.mad).is_some_and(|s| matches!(s.method, Method::Get | Method::Set));
        if let Some(step) = self.steps.last_mut().filter(|_| request) {
            step.out.push(hex(&out.mad));
        }
        self.inner.send(out)
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        let incoming = self.inner.recv(timeout)?;
        // As the driver hands it on: a response to the sweep, a request handed back undelivered,
        // or anything else, which the driver answers itself.
        let recorded = match &incoming {
            None => Value::Null,
            Some(Incoming::Mad { mad, .. }) if smp(mad).is_some_and(|s| s.method.is_response()) => {
                json!({ "response": hex(mad) })
            }
            Some(Incoming::Dropped { mad }) if smp(mad).is_some() => json!({ "dropped": hex(mad) }),
            Some(Incoming::Mad { mad, .. } | Incoming::Dropped { mad }) => {
                json!({ "other": hex(mad) })
            }
        };
        let elapsed = self.inner.now().saturating_duration_since(self.started);
        self.steps.push(Step {
            t_ns: u64::try_from(elapsed.as_nanos()).expect("a sweep shorter than 584 years"),
            incoming: recorded,
            out: Vec::new(),
        });
        Ok(incoming)
    }

    fn local_port(&self) -> LocalPort {
        self.inner.local_port()
    }

    fn now(&self) -> Instant {
        self.inner.now()
    }
}

fn smp(mad: &[u8]) -> Option<SmpRepr> {
    SmpRepr::parse_bytes(mad).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// The built-in two-switch fabric in virtual time, the SM at its first CA.
fn two_switch(models: Models) -> EmulatedTransport {
    let net = load_topology("two-switch").unwrap();
    let attach = attach_port(&net.topology, None).unwrap();
    let mut emulator = Emulator::new(net.topology).unwrap();
    emulator.set_models(models);
    EmulatedTransport::virtual_time(emulator, attach)
}

/// How a recording configures its sweep; written as the file's first line, which is all the
/// replay needs to build the same configuration.
struct Setup {
    mode: SweepMode,
    /// Lines added to the configuration file.
    append: &'static str,
}

impl Setup {
    fn header(&self, fabric: &str, about: &str) -> Value {
        let mode = format!("{:?}", self.mode).to_lowercase();
        json!({ "about": about, "fabric": fabric, "config": CONFIG, "append": self.append,
                "mode": mode })
    }
}

/// One sweep, recorded.
fn sweep(transport: &mut EmulatedTransport, setup: &Setup) -> (Sweep, Vec<Step>) {
    let mut text = std::fs::read(repo(CONFIG)).unwrap();
    text.extend_from_slice(setup.append.as_bytes());
    let settings = load_bytes(CONFIG, &text, Format::OpenSmConf)
        .unwrap()
        .settings;
    let config = ibqos_sm::engine::sweep::SweepConfig {
        mode: setup.mode,
        ..sweep_config(&settings, Default::default())
    };
    let mut recorder = Recorder::new(transport);
    let start = Sweep::start(config, Learned::default(), recorder.now());
    let sweep = drive(&mut recorder, start);
    // The emulator keeps every field, so no sweep learns of one it does not keep; what a sweep
    // learns of P_Key indexes comes from this sweep alone. Each replay starts from nothing
    // learned, as recorded.
    assert!(sweep.learned().unkept.is_empty());
    (sweep, recorder.steps)
}

/// How long to wait for the fabric when the sweep has no deadline sooner.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// Runs one bare sweep to its end over `transport`, as the SM's manager runs it: what the sweep
/// polls is sent, answers go to the sweep, and a trap that reaches the SM is repressed by the
/// SM's responder, whose replies are not the sweep's and so are not recorded. No other SM runs
/// on the recorded fabrics, so no SMInfo request comes.
fn drive(transport: &mut dyn Transport, mut sweep: Sweep) -> Sweep {
    let mut responder = Responder::default();
    loop {
        let now = transport.now();
        while let Some(transmit) = sweep.poll_transmit(now) {
            transport.send(&OutgoingMad::from(&transmit)).unwrap();
        }
        if sweep.is_done() {
            return sweep;
        }
        let wait = sweep
            .next_deadline()
            .map_or(IDLE_WAIT, |d| d.saturating_duration_since(now));
        match transport.recv(wait).unwrap() {
            Some(Incoming::Mad { mad, from }) => match smp(&mad) {
                Some(response) if response.method.is_response() => {
                    sweep.on_response(transport.now(), response)
                }
                _ => match responder.on_request(&mad, from.lid) {
                    Heard::LinkChange(reply)
                    | Heard::Request(reply)
                    | Heard::BadMKey(reply)
                    | Heard::CapabilityChange { repress: reply, .. } => {
                        transport.send(&reply).unwrap()
                    }
                    Heard::SmInfo(_) | Heard::Repressed | Heard::Unanswerable => {}
                },
            },
            Some(Incoming::Dropped { mad }) => {
                if let Some(request) = smp(&mad) {
                    sweep.on_dropped(transport.now(), request)
                }
            }
            None => {}
        }
        sweep.on_time(transport.now());
    }
}

fn write(name: &str, header: Value, sweep: &Sweep, steps: &[Step]) {
    let mut lines = vec![header.to_string()];
    for step in steps {
        let line = json!({ "t_ns": step.t_ns, "in": step.incoming, "out": step.out });
        lines.push(line.to_string());
    }
    let counts = sweep.counts();
    let qos = sweep.qos_counts();
    let end = json!({ "end": {
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
        "changes": sweep.changes().iter().map(|c| {
            let differences: Vec<String> = c.differences.iter().map(ToString::to_string).collect();
            format!("{} {:?} {:#x} sent={}: {}", c.target, c.attribute, c.modifier, c.sent,
                    differences.join("; "))
        }).collect::<Vec<_>>(),
    }});
    lines.push(end.to_string());
    lines.push(String::new());
    let path = repo("sm/tests/replay").join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
}

const FORCED: Setup = Setup {
    mode: SweepMode::Forced,
    append: "",
};

/// A VLArb block that no configuration programs, Set on the SM's own port behind its back.
fn scramble_own_vlarb(transport: &mut EmulatedTransport) {
    let mut entries = [VlArbEntry::default(); 32];
    entries[0] = VlArbEntry { vl: 1, weight: 7 };
    let table = Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries });
    let modifier = VlArbModifier {
        block: VlArbBlock::Low0To31,
        port: 0,
    };
    let route = Routing::Directed(DrPath::request(&[]).unwrap());
    let set = SmpRepr::set(&table, u32::from(modifier), 0x5eed, route);
    let mut mad = [0u8; 256];
    set.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let request = Request {
        origin: transport.port(),
        at_ns: transport.now_ns(),
        dlid: None,
        mad: &mad,
    };
    let answer = transport.emulator_mut().exchange(request);
    assert!(answer.is_some(), "the emulator took the Set");
}

#[test]
#[ignore = "rewrites sm/tests/replay/; run on purpose and review the diff"]
fn record_replays() {
    let mut fabric = two_switch(Models::default());
    let (forced, steps) = sweep(&mut fabric, &FORCED);
    let about = "the first sweep with qos on: every value Set";
    write(
        "forced-qos.jsonl",
        FORCED.header("two-switch", about),
        &forced,
        &steps,
    );

    scramble_own_vlarb(&mut fabric);
    let diff = Setup {
        mode: SweepMode::Diff,
        append: "",
    };
    let (repair, steps) = sweep(&mut fabric, &diff);
    let about = "a diff sweep after the SM port's low VLArb block was changed behind its back";
    write(
        "diff-repair.jsonl",
        diff.header("two-switch", about),
        &repair,
        &steps,
    );

    let dry = Setup {
        mode: SweepMode::DryRun,
        append: "qos_ca_vlarb_low 0:8,1:200,3:16\n",
    };
    let (dry_run, steps) = sweep(&mut fabric, &dry);
    let about = "a dry run of a changed CA VLArb configuration: reads, and no Set";
    write(
        "dry-run.jsonl",
        dry.header("two-switch", about),
        &dry_run,
        &steps,
    );

    let lossy = Models {
        faults: Faults {
            loss: 0.05,
            ..Faults::default()
        },
        seed: 7,
        ..Models::default()
    };
    let (lost, steps) = sweep(&mut two_switch(lossy), &FORCED);
    let about = "a forced sweep on a fabric that loses 5% of MADs each way (seed 7)";
    write(
        "forced-lossy.jsonl",
        FORCED.header("two-switch", about),
        &lost,
        &steps,
    );
}
