//! Two ibqos SMs on one emulated fabric (IBA 14.4), in one process and in virtual time, over 100
//! seeds. Each seed places the two SMs at two hosts of the built-in two-switch fabric. It gives
//! them random priorities (equal ones included, so the port GUID decides) and starts them in a
//! random order at random times. It kills them at random: an SM that exits (its port stops
//! advertising IsSM) or hangs (IsSM stays, nothing answers), restarted or not. The SMs reach each
//! other through the fabric (`ibqos_transport::shared`). Their SMInfo polls, HANDOVERs and traps
//! 144 travel it as they travel ibsim. The fabric delays answers by a random jitter, and in some
//! seeds loses a MAD now and then.
//!
//! Every SMP Set an SM sends is recorded with its sender and time, and checked as it leaves: a
//! Set from an SM that is not MASTER, or from a master while the other SM is a master that has
//! sent Sets in its own time as master, fails the seed. Once every start and kill is done and
//! the fabric had time to settle, the live SMs must be one MASTER (the higher by priority, then
//! the lower port GUID, when both live) and STANDBYs, and every CA port must hold the master's
//! SL-to-VL table: each SM is configured with its own (`qos_ca_sl2vl`).
//!
//! A seed that fails is named with its scenario and the states and Sets that led there. The
//! race those seeds found (a second master out of a standby's takeover) has its own test, which
//! restarts the master at every moment of its standby's takeover.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_emu::{Faults, Models, load_topology};
use ibqos_fabric::{NodeKind, PortRef};
use ibqos_mad::{AttributeId, Guid, Method, SmState, SmpRepr};
use ibqos_opensm::{Format, Settings};
use ibqos_sm::election::{StateReason, is_higher, state_name};
use ibqos_sm::manager::{Event, Manager, Run};
use ibqos_transport::shared::SharedFabric;
use ibqos_transport::{Incoming, LocalPort};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

const SEEDS: u64 = 100;
/// `sminfo_polling_timeout` and `polling_retry_number`: a standby takes over within about a
/// second of its master going silent.
const POLL_MS: u64 = 200;
const RETRIES: u64 = 2;
/// `sweep_interval`, seconds: the master's periodic sweep, which also finds a new SM.
const SWEEP_INTERVAL_S: u64 = 2;
/// Starts and kills happen within this time of the start.
const ACTIVE: Duration = Duration::from_secs(12);
/// After the last start or kill: enough for a takeover (the polls), a handover (the next
/// sweep) and the new master's sweep, several times over.
const SETTLE: Duration = Duration::from_secs(15);
/// Where the SMs may sit: the single-port hosts.
const HOSTS: [&str; 4] = ["H1", "H2", "H3", "H4"];
/// Each SM's CA SL-to-VL table (within two VLs, so no port masks it): the fabric shows which
/// SM programmed it.
const SL2VL: [[u8; 16]; 2] = [
    [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
    [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0],
];
/// How likely a MAD is lost on its way, in the seeds whose fabric loses MADs.
const LOSS: f64 = 0.01;
/// The most a seed's fabric delays an answer beyond its latency model.
const MAX_JITTER_NS: u64 = 2_000_000;
/// How many of the last Sets a failed seed shows.
const LAST_SETS_SHOWN: usize = 12;
/// A run that takes more steps than this is stuck.
const MAX_STEPS: u64 = 2_000_000;

/// How an SM is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kill {
    /// The process ends: its port stops advertising IsSM.
    Exit,
    /// The process stops: IsSM stays, and nothing at the port answers.
    Hang,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Start(usize),
    Kill(usize, Kill),
}

/// One seed's scenario.
#[derive(Debug, Clone)]
struct Scenario {
    hosts: [&'static str; 2],
    priorities: [u8; 2],
    /// The fabric's models: answers up to a random time late, so that they overtake each other,
    /// and in some seeds MADs lost.
    models: Models,
    /// In time order.
    actions: Vec<(Duration, Action)>,
    /// Each SM's `ignore_other_sm`.
    ignore_other_sm: [bool; 2],
}

impl Scenario {
    fn new(seed: u64) -> Scenario {
        let mut rng = Pcg64::seed_from_u64(seed);
        let first = rng.random_range(0..HOSTS.len());
        let second = (first + rng.random_range(1..HOSTS.len())) % HOSTS.len();
        // Three priorities for two SMs: equal in about a third of the seeds.
        let priorities = [rng.random_range(0..3u8), rng.random_range(0..3u8)];
        let at = |rng: &mut Pcg64, from: Duration, to: Duration| {
            from + Duration::from_millis(rng.random_range(0..(to - from).as_millis() as u64))
        };
        let models = Models {
            faults: Faults {
                jitter_ns: rng.random_range(0..=MAX_JITTER_NS),
                ..Faults::default()
            },
            seed,
            ..Models::default()
        };
        let mut scenario = Scenario {
            hosts: [HOSTS[first], HOSTS[second]],
            priorities,
            models,
            ignore_other_sm: [false; 2],
            actions: vec![
                (at(&mut rng, Duration::ZERO, ACTIVE / 4), Action::Start(0)),
                (at(&mut rng, Duration::ZERO, ACTIVE / 4), Action::Start(1)),
            ],
        };
        let mut kills: Vec<Duration> = (0..rng.random_range(0..=3))
            .map(|_| at(&mut rng, ACTIVE / 8, ACTIVE))
            .collect();
        kills.sort();
        // The SM that is master when both run, by the rules.
        let guids = scenario.hosts.map(port_guid);
        let higher = usize::from(is_higher(priorities[1], guids[1], priorities[0], guids[0]));
        for killed in kills {
            // The victim is one that runs then; when both do, more often the master, whose
            // death the other must notice.
            let sm = match scenario.alive_at(killed) {
                [false, false] => continue,
                [true, true] if rng.random_bool(0.7) => higher,
                [true, true] => 1 - higher,
                [a, _] => usize::from(!a),
            };
            let kill = if rng.random_bool(0.5) {
                Kill::Exit
            } else {
                Kill::Hang
            };
            scenario.push(killed, Action::Kill(sm, kill));
            if rng.random_bool(0.6) {
                // Half of the restarts come while the other SM takes over from a killed
                // master (its polls go unanswered for about 3 x POLL_MS, then it discovers).
                let delay = if rng.random_bool(0.5) {
                    rng.random_range(2 * POLL_MS..8 * POLL_MS)
                } else {
                    rng.random_range(100..4000)
                };
                let restart = killed + Duration::from_millis(delay);
                scenario.push(restart, Action::Start(sm));
            }
        }
        // Someone must be left to be master: the last SM killed comes back.
        let last = scenario
            .actions
            .last()
            .map(|(at, _)| *at)
            .unwrap_or_default();
        if scenario.alive_at(last) == [false, false]
            && let Some((_, Action::Kill(sm, _))) = scenario.actions.last().copied()
        {
            scenario.push(last + Duration::from_millis(500), Action::Start(sm));
        }
        // Lost MADs in some seeds: a lost poll or two must not make a second master. Drawn
        // last, so that the rest of each seed's scenario does not depend on it.
        if rng.random_bool(0.3) {
            scenario.models.faults.loss = LOSS;
        }
        scenario
    }

    /// Adds an action, keeping the actions in time order.
    fn push(&mut self, at: Duration, action: Action) {
        self.actions.push((at, action));
        self.actions.sort_by_key(|(at, _)| *at);
    }

    /// Which SMs run (and answer) once the actions up to `time` are done: an action that does
    /// not apply (starting a running SM) is skipped, here as in the run.
    fn alive_at(&self, time: Duration) -> [bool; 2] {
        let mut alive = [false; 2];
        for (_, action) in self.actions.iter().take_while(|(at, _)| *at <= time) {
            match *action {
                Action::Start(sm) => alive[sm] = true,
                Action::Kill(sm, _) => alive[sm] = false,
            }
        }
        alive
    }

    fn settings(&self, sm: usize) -> Settings {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/opensm-qos.conf");
        let mut text = std::fs::read(path).unwrap();
        let sl2vl: Vec<String> = SL2VL[sm].iter().map(u8::to_string).collect();
        text.extend_from_slice(
            format!(
                "\nsm_priority {}\nsminfo_polling_timeout {POLL_MS}\npolling_retry_number {RETRIES}\n\
                 sweep_interval {SWEEP_INTERVAL_S}\nqos_ca_sl2vl {}\nignore_other_sm {}\n",
                self.priorities[sm],
                sl2vl.join(","),
                if self.ignore_other_sm[sm] { "TRUE" } else { "FALSE" }
            )
            .as_bytes(),
        );
        ibqos_opensm::load_bytes("two-sms.conf", &text, Format::OpenSmConf)
            .unwrap()
            .settings
    }
}

/// The GUID of port 1 of `host` on the two-switch fabric.
fn port_guid(host: &str) -> u64 {
    let topology = load_topology("two-switch").unwrap().topology;
    let id = topology.node_by_name(host).unwrap();
    topology.port(PortRef::new(id, 1)).unwrap().guid
}

/// An SM that runs.
struct Running {
    manager: Manager,
    client: usize,
    port: LocalPort,
    /// Stopped: it answers and sends nothing, and its port still claims IsSM.
    hung: bool,
    /// Since when it is master, and whether it has sent a Set since.
    master: Option<(Instant, bool)>,
}

/// What a run saw, for the message of a seed that fails.
#[derive(Default)]
struct Log {
    lines: Vec<String>,
}

impl Log {
    fn note(&mut self, at: Duration, line: String) {
        self.lines
            .push(format!("{:>8.3}s {line}", at.as_secs_f64()));
    }
}

struct TwoSms {
    scenario: Scenario,
    fabric: SharedFabric,
    origin: Instant,
    sms: [Option<Running>; 2],
    log: Log,
    /// Every Set sent (but SMInfo's, the election's own), in order.
    sets: Vec<SetSent>,
    seen: Seen,
}

/// A Set an SM sent.
#[derive(Debug, Clone, Copy)]
struct SetSent {
    at: Duration,
    sm: usize,
    attribute: AttributeId,
}

/// What a run went through, so that the test shows its seeds cover the cases.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Seen {
    /// Sets sent, by SM.
    sets: [u64; 2],
    /// A master killed while the other SM ran.
    masters_killed: u64,
    /// Standbys that took over from a master that stopped answering.
    takeovers: u64,
    /// Handovers to a higher SM.
    handovers: u64,
}

impl Seen {
    fn add(&mut self, other: Seen) {
        self.sets[0] += other.sets[0];
        self.sets[1] += other.sets[1];
        self.masters_killed += other.masters_killed;
        self.takeovers += other.takeovers;
        self.handovers += other.handovers;
    }
}

impl TwoSms {
    fn new(scenario: Scenario) -> TwoSms {
        let origin = Instant::now();
        let topology = load_topology("two-switch").unwrap().topology;
        let mut fabric = SharedFabric::new(topology, origin).unwrap();
        fabric.emulator_mut().set_models(scenario.models);
        TwoSms {
            scenario,
            fabric,
            origin,
            sms: [None, None],
            log: Log::default(),
            sets: Vec::new(),
            seen: Seen::default(),
        }
    }

    fn since(&self, at: Instant) -> Duration {
        at - self.origin
    }

    fn act(&mut self, action: Action) {
        let now = self.since(self.fabric.now());
        match action {
            Action::Start(sm) => {
                if self.sms[sm].as_ref().is_some_and(|r| !r.hung) {
                    return;
                }
                // A hung SM is killed before it is started again.
                if let Some(hung) = self.sms[sm].take() {
                    self.fabric.detach(hung.client);
                }
                let (client, port) = self.fabric.attach_sm(self.scenario.hosts[sm]).unwrap();
                let settings = self.scenario.settings(sm);
                let manager = Manager::new(
                    Run::Daemon,
                    &settings,
                    BTreeMap::new(),
                    Guid(port.port_guid),
                );
                self.log.note(now, format!("SM {sm} starts"));
                self.sms[sm] = Some(Running {
                    manager,
                    client,
                    port,
                    hung: false,
                    master: None,
                });
            }
            Action::Kill(sm, kill) => {
                let other_runs = self.sms[1 - sm].as_ref().is_some_and(|r| !r.hung);
                let Some(running) = self.sms[sm].as_mut().filter(|r| !r.hung) else {
                    return;
                };
                self.log.note(now, format!("SM {sm} killed: {kill:?}"));
                if running.master.is_some() && other_runs {
                    self.seen.masters_killed += 1;
                }
                match kill {
                    Kill::Exit => {
                        let client = running.client;
                        self.sms[sm] = None;
                        self.fabric.detach(client);
                    }
                    Kill::Hang => {
                        running.hung = true;
                        running.master = None;
                    }
                }
            }
        }
    }

    /// The SMs that run and answer.
    fn answering(&mut self) -> impl Iterator<Item = (usize, &mut Running)> {
        self.sms
            .iter_mut()
            .enumerate()
            .filter_map(|(sm, r)| r.as_mut().filter(|r| !r.hung).map(|r| (sm, r)))
    }

    /// Each answering SM sends what it has; every Set is checked as it leaves.
    fn pump(&mut self) -> Result<(), String> {
        let now = self.fabric.now();
        for sm in 0..2 {
            self.follow_states(sm);
            while let Some(running) = self.sms[sm].as_mut().filter(|r| !r.hung) {
                let Some(out) = running.manager.poll_transmit(now) else {
                    break;
                };
                let client = running.client;
                self.check_set(sm, &out.mad)?;
                self.fabric.send(client, &out);
            }
            self.follow_states(sm);
        }
        Ok(())
    }

    /// Notes the SM's changes of state, and when its time as master starts and ends.
    fn follow_states(&mut self, sm: usize) {
        let now = self.fabric.now();
        let at = self.since(now);
        let Some(running) = self.sms[sm].as_mut().filter(|r| !r.hung) else {
            return;
        };
        let mut notes = Vec::new();
        while let Some(event) = running.manager.poll_event() {
            match event {
                Event::StateChanged(change) => {
                    match change.reason {
                        StateReason::MasterLost => self.seen.takeovers += 1,
                        StateReason::HandoverReceived => self.seen.handovers += 1,
                        _ => {}
                    }
                    notes.push(format!(
                        "SM {sm} {} -> {} ({})",
                        state_name(change.from),
                        state_name(change.to),
                        change.reason
                    ))
                }
                Event::Finished(outcome) => notes.push(format!("SM {sm} finished: {outcome:?}")),
                _ => {}
            }
        }
        let is_master = running.manager.election().state() == SmState::Master;
        match (&running.master, is_master) {
            (None, true) => running.master = Some((now, false)),
            (Some(_), false) => running.master = None,
            _ => {}
        }
        for note in notes {
            self.log.note(at, note);
        }
    }

    /// A Set from `sm` (other than SMInfo, the election's own): `sm` must be master, and the
    /// other SM no master that has sent Sets in its time as master.
    fn check_set(&mut self, sm: usize, mad: &[u8]) -> Result<(), String> {
        let Ok(smp) = SmpRepr::parse_bytes(mad) else {
            return Ok(());
        };
        if smp.method != Method::Set || smp.attribute_id == AttributeId::SmInfo {
            return Ok(());
        }
        // Its time as master is up to date before its Set counts in it.
        self.follow_states(sm);
        let at = self.since(self.fabric.now());
        self.sets.push(SetSent {
            at,
            sm,
            attribute: smp.attribute_id,
        });
        let state = self.sms[sm].as_ref().map(|r| r.manager.election().state());
        if state != Some(SmState::Master) {
            return Err(format!(
                "at {at:?} SM {sm}, {}, sent a Set of {:?}",
                state.map_or("gone", state_name),
                smp.attribute_id
            ));
        }
        let other = 1 - sm;
        if let Some(Running {
            master: Some((since, true)),
            ..
        }) = self.sms[other].as_ref().filter(|r| !r.hung)
        {
            return Err(format!(
                "at {at:?} SM {sm} sent a Set of {:?} while SM {other} is master since {:?} and \
                 has sent Sets",
                smp.attribute_id,
                self.since(*since)
            ));
        }
        if let Some((_, sent)) = self.sms[sm].as_mut().and_then(|r| r.master.as_mut()) {
            *sent = true;
        }
        Ok(())
    }

    /// Runs the scenario and then lets the fabric settle.
    fn run(&mut self) -> Result<(), String> {
        let actions = self.scenario.actions.clone();
        let end = self.origin + actions.last().map_or(Duration::ZERO, |(at, _)| *at) + SETTLE;
        let mut actions = actions.into_iter().peekable();
        for _ in 0..MAX_STEPS {
            let now = self.fabric.now();
            while let Some((_, action)) = actions.next_if(|(at, _)| self.origin + *at <= now) {
                self.act(action);
            }
            self.pump()?;
            if let Some((client, incoming)) = self.fabric.recv() {
                self.deliver(client, incoming);
                continue;
            }
            let mut timed = false;
            for (_, running) in self.answering() {
                if running.manager.next_deadline().is_some_and(|d| d <= now) {
                    running.manager.on_time(now);
                    timed = true;
                }
            }
            if timed {
                continue;
            }
            if now >= end {
                return Ok(());
            }
            let fabric_due = self.fabric.next_due();
            let action_due = actions.peek().map(|(at, _)| self.origin + *at);
            let next = self
                .answering()
                .filter_map(|(_, r)| r.manager.next_deadline())
                .chain(fabric_due)
                .chain(action_due)
                .fold(end, Instant::min);
            self.fabric.advance_to(next);
            for (_, running) in self.answering() {
                running.manager.on_time(next);
            }
        }
        Err(format!("stuck: {MAX_STEPS} steps without reaching the end"))
    }

    /// What arrived for `client` goes to its SM, if it runs and answers.
    fn deliver(&mut self, client: usize, incoming: Incoming) {
        let now = self.fabric.now();
        let Some(running) = self
            .sms
            .iter_mut()
            .flatten()
            .find(|r| r.client == client && !r.hung)
        else {
            return;
        };
        match incoming {
            Incoming::Mad { mad, from } => running.manager.on_mad(now, &mad, from),
            Incoming::Dropped { mad } => running.manager.on_dropped(now, &mad),
        }
    }

    /// The end: one master, the expected one, the others standby, and the master's tables on
    /// every CA port.
    fn check_end(&self) -> Result<(), String> {
        let answering: Vec<(usize, &Running)> = self
            .sms
            .iter()
            .enumerate()
            .filter_map(|(sm, r)| r.as_ref().filter(|r| !r.hung).map(|r| (sm, r)))
            .collect();
        let states: Vec<(usize, SmState)> = answering
            .iter()
            .map(|(sm, r)| (*sm, r.manager.election().state()))
            .collect();
        let masters: Vec<usize> = states
            .iter()
            .filter(|(_, s)| *s == SmState::Master)
            .map(|(sm, _)| *sm)
            .collect();
        let shown: Vec<String> = states
            .iter()
            .map(|(sm, s)| format!("SM {sm} {}", state_name(*s)))
            .collect();
        let [master] = masters[..] else {
            return Err(format!("not one master at the end: {}", shown.join(", ")));
        };
        if let Some((sm, state)) = states
            .iter()
            .find(|(sm, s)| *sm != master && *s != SmState::Standby)
        {
            return Err(format!(
                "SM {sm} is {} at the end, not STANDBY",
                state_name(*state)
            ));
        }
        let priorities = self.scenario.priorities;
        let expected = answering
            .iter()
            .map(|(sm, r)| (*sm, priorities[*sm], r.port.port_guid))
            .reduce(|a, b| if is_higher(b.1, b.2, a.1, a.2) { b } else { a })
            .map(|(sm, _, _)| sm);
        if expected != Some(master) {
            return Err(format!(
                "SM {master} is master at the end, not SM {expected:?} (higher priority, then \
                 lower GUID): {}",
                shown.join(", ")
            ));
        }
        let emulator = self.fabric.emulator();
        for (id, node) in emulator.topology().nodes() {
            if node.kind != NodeKind::Ca {
                continue;
            }
            for port in 1..=node.num_ports() {
                let held = emulator.sl2vl(PortRef::new(id, port), 0).map(|t| t.vls);
                if held != Some(SL2VL[master]) {
                    return Err(format!(
                        "{} port {port} holds SL2VL {held:?}, not master SM {master}'s",
                        node.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One seed: `Err` with what went wrong and how it came to be.
fn seed(seed: u64) -> Result<Seen, String> {
    play(Scenario::new(seed)).map_err(|problem| format!("seed {seed}: {problem}"))
}

/// One scenario: `Err` with what went wrong and how it came to be.
fn play(scenario: Scenario) -> Result<Seen, String> {
    let mut run = TwoSms::new(scenario.clone());
    let result = run.run().and_then(|()| run.check_end());
    for set in &run.sets {
        run.seen.sets[set.sm] += 1;
    }
    result.map(|()| run.seen).map_err(|problem| {
        let last_sets = run.sets.iter().rev().take(LAST_SETS_SHOWN).rev();
        let last_sets: Vec<String> = last_sets
            .map(|set| format!("  {:?} SM {} Set {:?}", set.at, set.sm, set.attribute))
            .collect();
        format!(
            "{problem}\n  scenario: {scenario:?}\n{}\n  the last Sets:\n{}",
            run.log.lines.join("\n"),
            last_sets.join("\n")
        )
    })
}

#[test]
fn two_sms_with_random_starts_priorities_and_kills_keep_one_master_sending_sets() {
    let mut failures = Vec::new();
    let mut seen = Seen::default();
    for n in 0..SEEDS {
        match seed(n) {
            Ok(this) => seen.add(this),
            Err(failure) => failures.push(failure),
        }
    }
    eprintln!("over {SEEDS} seeds: {seen:?}");
    assert!(
        failures.is_empty(),
        "{} of {SEEDS} seeds failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // The seeds cover what the checks are for: both SMs programmed the fabric, masters were
    // killed with a standby there to take over, and mastership was handed over.
    assert!(seen.sets.iter().all(|&n| n > 0), "{seen:?}");
    assert!(seen.masters_killed >= 10, "{seen:?}");
    assert!(seen.takeovers >= 10, "{seen:?}");
    assert!(seen.handovers >= 10, "{seen:?}");
}

/// The race the seeds found (a seed or two in a hundred hit it): the master hangs, its standby
/// takes over, and the master is restarted while the standby's discovery waits for the hung
/// port's SMInfo. The restarted SM reads the other as DISCOVERING, and lower, and becomes
/// master; the other must not become master too. Restarted every 25 ms across the takeover:
/// the polls (3 x 200 ms), then the discovery and its timeouts.
#[test]
fn a_master_restarted_while_its_standby_takes_over_is_the_only_master() {
    let hang = Duration::from_secs(4);
    let failures: Vec<String> = (800..1800)
        .step_by(25)
        .map(|delay| {
            let scenario = Scenario {
                hosts: ["H1", "H2"],
                priorities: [1, 0],
                models: Models::default(),
                ignore_other_sm: [false; 2],
                actions: vec![
                    (Duration::from_millis(500), Action::Start(0)),
                    (Duration::from_millis(1000), Action::Start(1)),
                    (hang, Action::Kill(0, Kill::Hang)),
                    (hang + Duration::from_millis(delay), Action::Start(0)),
                ],
            };
            play(scenario).map_err(|problem| format!("restarted after {delay} ms: {problem}"))
        })
        .filter_map(Result::err)
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A new master asks every CA port for a client reregistration in its first sweep as master, once,
/// so that the hosts register again with its SA. It asks the ports with
/// IsClientReregistrationSupported, which ibsim's lack and this fabric's are given. The new master
/// is the first master when it starts, then the standby that takes over when the master exits, or
/// the higher SM the master hands over to. Periodic sweeps in between and after ask nothing.
#[test]
fn each_new_master_asks_every_ca_port_once_for_a_client_reregistration() {
    let ms = Duration::from_millis;
    let cases = [
        // SM 0 is higher: master, and SM 1 standby takes over when it exits.
        (
            [1, 0],
            vec![
                (ms(500), Action::Start(0)),
                (ms(1000), Action::Start(1)),
                (ms(4000), Action::Kill(0, Kill::Exit)),
            ],
            (1, 0),
        ),
        // SM 1 is higher and comes later: SM 0 hands over to it.
        (
            [0, 1],
            vec![(ms(500), Action::Start(0)), (ms(4000), Action::Start(1))],
            (0, 1),
        ),
    ];
    for (priorities, actions, takeovers_and_handovers) in cases {
        let scenario = Scenario {
            hosts: ["H1", "H2"],
            priorities,
            models: Models::default(),
            actions,
            ignore_other_sm: [false; 2],
        };
        let mut run = TwoSms::new(scenario);
        let emulator = run.fabric.emulator_mut();
        let topology = emulator.topology().clone();
        let ca_ports: Vec<PortRef> = topology
            .nodes()
            .filter(|(_, node)| node.kind == NodeKind::Ca)
            .flat_map(|(id, node)| (1..=node.num_ports()).map(move |p| PortRef::new(id, p)))
            .collect();
        let bit = ibqos_mad::CapabilityMask::IS_CLIENT_REREGISTRATION_SUPPORTED;
        for &port in &ca_ports {
            emulator.set_capability(port, bit, true);
        }
        run.run().and_then(|()| run.check_end()).unwrap();
        assert_eq!(
            (run.seen.takeovers, run.seen.handovers),
            takeovers_and_handovers,
            "{}",
            run.log.lines.join("\n")
        );
        let emulator = run.fabric.emulator();
        let counts: Vec<u32> = ca_ports
            .iter()
            .map(|&p| emulator.client_reregistrations(p))
            .collect();
        assert_eq!(
            counts,
            vec![2; ca_ports.len()],
            "priorities {priorities:?}\n{}",
            run.log.lines.join("\n")
        );
    }
}

/// `ignore_other_sm TRUE`: the SM reads no other SM's SMInfo and becomes master whatever runs,
/// as OpenSM does. A lower SM started next to a master becomes a second master and sends Sets
/// (which the harness reports); without the option it stays standby.
#[test]
fn an_sm_that_ignores_other_sms_is_master_next_to_a_higher_master() {
    let scenario = |ignore| Scenario {
        hosts: ["H1", "H2"],
        priorities: [1, 0],
        models: Models::default(),
        actions: vec![
            (Duration::from_millis(500), Action::Start(0)),
            (Duration::from_millis(2500), Action::Start(1)),
        ],
        ignore_other_sm: [false, ignore],
    };
    play(scenario(false)).unwrap();
    let problem = play(scenario(true)).unwrap_err();
    assert!(
        problem.contains("SM 1 DISCOVERING -> MASTER (no master and no higher SM found)")
            && problem.contains("SM 1 sent a Set of")
            && problem.contains("while SM 0 is master"),
        "{problem}"
    );
}
