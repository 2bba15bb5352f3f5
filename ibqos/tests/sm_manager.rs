//! The SM's lifetime policy (`ibqos_sm::manager`) without a process: the manager driven over
//! the built-in two-switch fabric emulated in virtual time, as `ibqos sm` drives it, with the
//! Sets counted where they arrive. A sweep interval passes in no real time, so the daemon's
//! waits cost nothing.
//!
//! These live with the binary's tests rather than in transport/tests: they read the settings
//! from the repository's opensm.conf and check the summaries against what `ibqos sm` printed,
//! and only this package depends on everything that takes.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ibqos_emu::{FaultSchedule, Flap};
use ibqos_exchange::Peer;
use ibqos_fabric::{NodeKind, PortRef};
use ibqos_mad::sa::{SaAttributeId, SaMad, SmInfoRecord, SmInfoRecordRepr};
use ibqos_mad::{
    AttributeId, CapabilityMask, Method, Routing, SmInfo, SmInfoRepr, SmState, Smp, SmpRepr,
};
use ibqos_opensm::{Format, Settings};
use ibqos_sm::counters::Counters;
use ibqos_sm::election::StateReason;
use ibqos_sm::engine::sweep::{SetResult, SweepMode, Table};
use ibqos_sm::manager::{Event, Manager, Outcome, Run, STOP_WAIT, SweepReason};
use ibqos_sm::summary::{ChangeSummary, SweepSummary};
use ibqos_transport::Transport;
use ibqos_transport::driver::drive;

mod common;
use common::{EmulatedSm, ask, host, request, settings, two_switch};

const CONFIG: &str = "examples/opensm-qos.conf";

/// The example configuration with one QoS setting edited: the CA ports' low-priority VLArb.
fn edited_settings() -> Settings {
    settings_with("qos_ca_vlarb_low 0:8,1:200,3:16\n")
}

/// The example configuration with `extra` appended.
fn settings_with(extra: &str) -> Settings {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(CONFIG);
    let mut text = std::fs::read(path).unwrap();
    text.extend_from_slice(extra.as_bytes());
    ibqos_opensm::load_bytes("edited", &text, Format::OpenSmConf)
        .unwrap()
        .settings
}

/// The Sets the fabric has handled so far, by AttributeID.
fn sets_handled(sm: &EmulatedSm) -> BTreeMap<u16, u64> {
    sm.transport
        .emulator()
        .handled_all()
        .filter(|(_, method, _)| *method == Method::Set)
        .map(|(attribute, _, count)| (u16::from(attribute), count))
        .collect()
}

/// The Sets handled since `before`, by attribute.
fn sets_since(sm: &EmulatedSm, before: &BTreeMap<u16, u64>) -> BTreeMap<u16, u64> {
    sets_handled(sm)
        .into_iter()
        .map(|(attribute, count)| (attribute, count - before.get(&attribute).unwrap_or(&0)))
        .filter(|(_, count)| *count > 0)
        .collect()
}

fn interval_ns(settings: &Settings) -> u64 {
    u64::from(settings.sm.sweep_interval) * 1_000_000_000
}

#[test]
fn once_is_one_sweep_when_the_subnet_comes_up() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Once, &settings(CONFIG));
    let mut events = Vec::new();
    loop {
        let event = sm.next_event();
        let finished = matches!(event, Event::Finished(_));
        events.push(event);
        if finished {
            break;
        }
    }
    let [
        started,
        Event::StateChanged(master),
        Event::SaveLids(guid2lid),
        Event::SaveMkeys { guid2mkey, .. },
        Event::SweepDone(summary),
        finished,
    ] = &events[..]
    else {
        panic!("{events:#?}")
    };
    // Alone on the fabric, the SM becomes master as its discovery ends.
    assert_eq!(
        (master.from, master.to, master.reason, master.master),
        (
            SmState::Discovering,
            SmState::Master,
            StateReason::NoHigherSm,
            None
        )
    );
    let first = Event::SweepStarted {
        sweep: 1,
        mode: SweepMode::Forced,
        reason: SweepReason::First,
    };
    assert_eq!(*started, first);
    assert_eq!(guid2lid.lines().count(), summary.lids);
    // Every end port's key (none: the configuration has no m_key), as OpenSM caches them too.
    let (keys, problems) = ibqos_sm::mkey::read_guid2mkey(guid2mkey);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!((keys.len(), keys.values().max()), (summary.lids, Some(&0)));
    assert!(summary.subnet_up);
    assert_eq!(*finished, Event::Finished(Outcome::SubnetUp));
}

#[test]
fn once_gives_up_after_four_sweeps() {
    // A dead CA leaves its switch port linked and never ACTIVE: no sweep brings the subnet up.
    let mut transport = two_switch();
    let h3 = transport.emulator().topology().node_by_name("H3").unwrap();
    transport.emulator_mut().schedule(&FaultSchedule {
        flaps: vec![],
        dead: vec![h3],
        ..FaultSchedule::default()
    });
    let mut sm = EmulatedSm::new(transport, Run::Once, &settings(CONFIG));
    let (mut reasons, mut summaries) = (Vec::new(), Vec::new());
    let outcome = loop {
        match sm.next_event() {
            Event::SweepStarted { reason, .. } => reasons.push(reason),
            Event::SweepDone(summary) => summaries.push(summary),
            Event::SaveLids(_)
            | Event::SaveMkeys { .. }
            | Event::StateChanged(_)
            | Event::MulticastUpdated { .. } => {}
            Event::Finished(outcome) => break outcome,
        }
    };
    let not_up = SweepReason::NotUpYet;
    assert_eq!(reasons, [SweepReason::First, not_up, not_up, not_up]);
    // Only the last sweep is reported.
    let [last] = &summaries[..] else {
        panic!("{summaries:#?}")
    };
    assert_eq!((last.sweep, last.subnet_up), (4, false));
    assert_eq!(outcome, Outcome::GaveUp);
    assert!(!Outcome::GaveUp.is_success());
}

#[test]
fn an_sm_asked_for_its_sminfo_while_discovering_discovers_again_in_the_same_mode() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings(CONFIG));
    let started = |event: &Event| match event {
        Event::SweepStarted {
            sweep,
            mode,
            reason,
        } => Some((*sweep, *mode, *reason)),
        _ => None,
    };
    assert_eq!(
        sm.until(started),
        (1, SweepMode::Forced, SweepReason::First)
    );
    // Another SM (at LID 9) reads this one's SMInfo while it discovers: it sees DISCOVERING.
    assert_eq!(own_sminfo(&mut sm).sm_state, SmState::Discovering);
    // The sweep stops after discovery, having Set nothing, and the next one starts at once,
    // forced as the first was; only then is this SM master.
    let events: Vec<Event> = (0..3).map(|_| sm.next_event()).collect();
    let [
        Event::SweepDone(stopped),
        Event::SweepStarted {
            sweep: 2,
            mode: SweepMode::Forced,
            reason: SweepReason::Election,
        },
        Event::StateChanged(change),
    ] = &events[..]
    else {
        panic!("{events:#?}")
    };
    assert!(!stopped.subnet_up);
    assert_eq!(sets_handled(&sm), BTreeMap::new(), "Set before MASTER");
    assert_eq!(
        (change.from, change.to, change.reason),
        (
            SmState::Discovering,
            SmState::Master,
            StateReason::NoHigherSm
        )
    );
    assert!(sm.sweep_done().subnet_up);
}

/// The SMInfo this SM answers at once to another SM (at LID 9).
fn own_sminfo(sm: &mut EmulatedSm) -> SmInfoRepr {
    let get = SmpRepr::get(AttributeId::SmInfo, 0, 0x8000_0007, Routing::Lid);
    let mut mad = [0u8; 256];
    get.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let from = Peer {
        lid: 9,
        qp: 0,
        pkey_index: 0,
    };
    let now = sm.transport.now();
    sm.manager.on_mad(now, &mad, from);
    let answer = sm.manager.poll_transmit(now).expect("SMInfo is answered");
    let answer = SmpRepr::parse_bytes(&answer.mad).unwrap();
    SmInfoRepr::parse(&SmInfo::new_unchecked(&answer.data[..])).unwrap()
}

/// SMPs the manager has sent so far.
fn smps_sent(manager: &Manager) -> u32 {
    let sent: u64 = manager.counters().smps_sent.values().sum();
    u32::try_from(sent).unwrap()
}

/// ActCount is every SMP the SM sent before the answer, as OpenSM's `qp0_mads_sent`: a standby
/// polling it sees it grow. The SA's SMInfoRecord of this SM carries the same count.
#[test]
fn the_act_count_is_the_smps_sent_in_sminfo_and_the_sminfo_record() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings(CONFIG));
    sm.sweep_done();
    let before = smps_sent(&sm.manager);
    assert!(before > 0);
    let first = own_sminfo(&mut sm);
    assert_eq!((first.sm_state, first.act_count), (SmState::Master, before));
    // The answer itself was an SMP sent.
    assert_eq!(own_sminfo(&mut sm).act_count, before + 1);

    let sent = smps_sent(&sm.manager);
    let smir = request(Method::GetTable, SaAttributeId::SmInfoRecord, 0, 0, |_| {});
    let h1 = host(&sm, "H1");
    let answer = ask(&mut sm, &smir, h1).expect("SMInfoRecords answered");
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    let records: Vec<SmInfoRecordRepr> = view
        .records()
        .map(|r| SmInfoRecordRepr::parse(&SmInfoRecord::new_checked(r).unwrap()).unwrap())
        .collect();
    let [own] = &records[..] else {
        panic!("one SM: {records:?}")
    };
    assert_eq!(own.sm_info.act_count, sent);
}

/// A fresh SM's first sweep as master asks every endport that supports it for a client
/// reregistration, once (OpenSM's `first_time_master_sweep` in `lid_mgr_set_physp_pi`); later
/// sweeps do not; ports without IsClientReregistrationSupported (ibsim's) and switch external
/// ports never; `no_clients_rereg TRUE` none at all.
#[test]
fn the_first_master_sweep_asks_capable_endports_once_to_reregister_clients() {
    for (extra, expected) in [("", 1), ("no_clients_rereg TRUE\n", 0)] {
        let mut transport = two_switch();
        let emulator = transport.emulator_mut();
        let topology = emulator.topology().clone();
        let mut capable = Vec::new();
        let mut incapable = Vec::new();
        for (id, node) in topology.nodes() {
            for port in 0..=node.num_ports() {
                let at = PortRef::new(id, port);
                let endport = match node.kind {
                    NodeKind::Ca => port > 0,
                    _ => port == 0,
                };
                // One host left as ibsim's; every other port, switch ports included, capable.
                if node.name.starts_with("host-two") || emulator.port_info(at).is_none() {
                    incapable.push(at);
                    continue;
                }
                let bit = CapabilityMask::IS_CLIENT_REREGISTRATION_SUPPORTED;
                emulator.set_capability(at, bit, true);
                if endport {
                    capable.push(at)
                } else {
                    incapable.push(at)
                }
            }
        }
        assert!(capable.len() > 4 && incapable.len() > 4);
        let mut sm = EmulatedSm::new(transport, Run::Daemon, &settings_with(extra));
        let counts = |sm: &EmulatedSm, ports: &[PortRef]| -> Vec<u32> {
            let emulator = sm.transport.emulator();
            ports
                .iter()
                .map(|&p| emulator.client_reregistrations(p))
                .collect()
        };
        assert!(sm.sweep_done().subnet_up);
        assert_eq!(
            counts(&sm, &capable),
            vec![expected; capable.len()],
            "{extra}"
        );
        assert_eq!(counts(&sm, &incapable), vec![0; incapable.len()], "{extra}");
        assert!(sm.manager.sweep_now());
        assert!(sm.sweep_done().subnet_up);
        assert_eq!(
            counts(&sm, &capable),
            vec![expected; capable.len()],
            "{extra}"
        );
        // The SM restarted: the ports name it as master already (same port, same LIDs), and
        // its first sweep as master asks again.
        let mut restarted = EmulatedSm::new(sm.transport, Run::Daemon, &settings_with(extra));
        assert!(restarted.sweep_done().subnet_up);
        let again = vec![2 * expected; capable.len()];
        assert_eq!(counts(&restarted, &capable), again, "{extra}");
        assert_eq!(counts(&restarted, &incapable), vec![0; incapable.len()]);
    }
}

#[test]
fn a_dry_run_sends_no_set() {
    let mut sm = EmulatedSm::new(two_switch(), Run::DryRun, &settings(CONFIG));
    let (summaries, outcome) = sm.finish();
    assert_eq!(outcome, Outcome::DryRunDone);
    let [summary] = &summaries[..] else {
        panic!("{summaries:#?}")
    };
    assert_eq!(summary.mode, SweepMode::DryRun);
    assert_eq!(sets_handled(&sm), BTreeMap::new(), "a dry run sent a Set");
    // A fresh fabric holds nothing the SM programs: the dry run lists it all, and sends none.
    assert!(summary.changes.len() > 100, "{}", summary.changes.len());
    assert!(summary.changes.iter().all(|change| !change.sent));
}

/// What a daemon's summaries are news: its first sweep; not a diff sweep of the fabric as it
/// left it; a sweep after a reload that changes values.
#[test]
fn a_summary_is_news_when_the_sweep_changed_something() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings(CONFIG));
    let first = sm.sweep_done();
    assert!(first.is_news_after(None));
    let steady = sm.sweep_done();
    assert!(!steady.is_news_after(Some(&first)), "{steady:?}");
    sm.manager.reload(edited_settings());
    let edited = sm.sweep_done();
    assert!(!edited.changes.is_empty());
    assert!(edited.is_news_after(Some(&steady)), "{edited:?}");
}

#[test]
fn a_reload_sweeps_at_once_and_sets_only_what_changed() {
    let settings = settings(CONFIG);
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    assert_eq!(sm.sweep_done().mode, SweepMode::Forced);
    let ended = sm.transport.now_ns();
    let before = sets_handled(&sm);

    sm.manager.reload(edited_settings());
    assert_eq!(sm.sweep_started(), (SweepReason::Reload, ended));
    let reloaded = sm.sweep_done();
    assert_eq!(reloaded.mode, SweepMode::Diff);
    // The edit changes one VLArb block of each of the six CA ports, and that is all the fabric
    // was sent.
    let vlarb = AttributeId::VlArbitrationTable;
    assert_eq!(
        sets_since(&sm, &before),
        BTreeMap::from([(u16::from(vlarb), 6)])
    );
    assert_eq!(reloaded.changes.len(), 6);
    assert!(
        reloaded
            .changes
            .iter()
            .all(|c| c.attribute == vlarb && c.modifier == 0x1_0000 && c.sent),
        "{:#?}",
        reloaded.changes
    );

    // The next sweep, an interval later, finds nothing to change: the LIDs and what the SM
    // learned were kept across the reload.
    let ended = sm.transport.now_ns();
    let before = sets_handled(&sm);
    let interval = interval_ns(&settings);
    assert_eq!(
        sm.sweep_started(),
        (SweepReason::Interval, ended + interval)
    );
    let quiet = sm.sweep_done();
    assert_eq!(quiet.changes, vec![]);
    assert_eq!(sets_since(&sm, &before), BTreeMap::new());
}

/// Takes the inter-switch link S1[3]-S2[3] down at `down_ns` (emulated), and back at `up_ns`.
/// `ibqos ctl sweep`: a waiting SM sweeps at once, and finds nothing to change; one asked
/// while it sweeps says no, since the sweep under way already reads the fabric as it is.
#[test]
fn an_operators_sweep_starts_at_once_when_the_sm_waits() {
    let settings = settings(CONFIG);
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    assert!(!sm.manager.sweep_now(), "the first sweep is due already");
    sm.sweep_done();
    let ended = sm.transport.now_ns();
    assert!(sm.manager.sweep_now());
    assert_eq!(sm.sweep_started(), (SweepReason::Requested, ended));
    assert!(!sm.manager.sweep_now(), "a sweep is under way");
    assert_eq!(sm.sweep_done().changes, vec![]);
}

fn flap_inter_switch_link(sm: &mut EmulatedSm, down_ns: u64, up_ns: Option<u64>) {
    let emulator = sm.transport.emulator_mut();
    let s1 = emulator.topology().node_by_name("S1").unwrap();
    emulator.schedule(&FaultSchedule {
        flaps: vec![Flap {
            port: PortRef::new(s1, 3),
            down_ns,
            up_ns,
        }],
        dead: vec![],
        ..FaultSchedule::default()
    });
}

#[test]
fn a_trap_128_between_sweeps_makes_a_sweep_at_once() {
    let settings = settings(CONFIG);
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    sm.sweep_done();
    let down_ns = sm.transport.now_ns() + 1_000_000_000;
    flap_inter_switch_link(&mut sm, down_ns, None);
    let (reason, at) = sm.sweep_started();
    assert_eq!(reason, SweepReason::LinkChange);
    assert!(at - down_ns < 100_000, "woken {} ns after", at - down_ns);
    assert!(at - down_ns < interval_ns(&settings) / 1000);
    let woken = sm.sweep_done();
    assert_eq!(woken.link_change_traps, 1, "{woken:?}");
    assert_eq!(sm.transport.emulator().unrepressed_traps(), 0);
}

#[test]
fn a_trap_128_during_a_sweep_makes_another_sweep_at_once() {
    let settings = settings(CONFIG);
    // How long a diff sweep of the clean fabric takes, to strike in the middle of one.
    let mut clean = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    clean.sweep_done();
    let (_, started) = clean.sweep_started();
    clean.sweep_done();
    let length = clean.transport.now_ns() - started;

    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    sm.sweep_done();
    let (reason, started) = sm.sweep_started();
    assert_eq!(reason, SweepReason::Interval);
    // S1[3] goes down half-way through the second sweep and is back a microsecond later.
    let down_ns = started + length / 2;
    flap_inter_switch_link(&mut sm, down_ns, Some(down_ns + 1_000));
    let during = sm.sweep_done();
    assert_eq!(during.link_change_traps, 1, "{during:?}");
    let ended = sm.transport.now_ns();
    assert_eq!(
        sm.sweep_started(),
        (SweepReason::LinkChangeDuringSweep, ended)
    );
    let again = sm.sweep_done();
    assert!(again.subnet_up, "{again:?}");
}

#[test]
fn a_stop_during_a_sweep_sends_nothing_more_and_ends_within_its_wait() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings(CONFIG));
    // Strike in the middle of the first (forced) sweep, Sets on the wire among its SMPs.
    let sent = Cell::new(0);
    let watched = |m: &mut Manager| {
        sent.set(smps_sent(m));
        m.poll_event()
    };
    while drive(&mut sm.transport, &mut sm.manager, watched, &|| {
        sent.get() >= 100
    })
    .unwrap()
    .is_some()
    {}
    let (stopped_at, sent_at_stop) = (sm.transport.now_ns(), smps_sent(&sm.manager));
    assert!(sm.manager.smps_outstanding() > 0, "nothing on the wire");
    sm.manager.stop(sm.transport.now());
    let (summaries, outcome) = sm.finish();
    assert_eq!(outcome, Outcome::Stopped);
    assert_eq!(summaries, [], "the stopped sweep is not reported as done");
    assert_eq!(
        smps_sent(&sm.manager),
        sent_at_stop,
        "SMPs sent after the stop"
    );
    let waited = Duration::from_nanos(sm.transport.now_ns() - stopped_at);
    assert!(waited <= STOP_WAIT, "the stop took {waited:?}");
}

#[test]
fn a_stop_between_sweeps_ends_at_once() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings(CONFIG));
    sm.sweep_done();
    let stopped_at = sm.transport.now_ns();
    sm.manager.stop(sm.transport.now());
    assert_eq!(sm.finish(), (vec![], Outcome::Stopped));
    assert_eq!(sm.transport.now_ns(), stopped_at);
}

/// Checks `summary` against the JSON and the text `ibqos sm` printed for the same sweep at
/// b83334c (ibqos/tests/data/sm-summary, captured with `ibqos sm --once --json`, `--dry-run`,
/// and a daemon given SIGHUP after the same edit as [`edited_settings`]). Two things a sweep in
/// virtual time cannot reproduce are taken from each capture: the time to SUBNET UP, and the
/// order of the changes, which is the order their reads were answered in on the real clock
/// (the list itself must be the same).
///
/// When a sweep's SMPs change on purpose (the partition manager's P_Key reads came after the
/// capture), `IBQOS_BLESS=1` rewrites the captures from this run, keeping their times; review
/// the diff.
fn assert_printed_as_before(summary: &SweepSummary, capture: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sm-summary");
    let read = |ext| std::fs::read_to_string(dir.join(format!("{capture}.{ext}"))).unwrap();
    if std::env::var_os("IBQOS_BLESS").is_some() {
        bless(summary, &dir, capture, &read("json"), &read("txt"));
    }
    let (json, text) = (read("json"), read("txt"));
    let captured: serde_json::Value = serde_json::from_str(&json).unwrap();
    let captured_changes: Vec<String> = captured["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change.to_string())
        .collect();
    let mut timed = summary.clone();
    let position = |change: &ChangeSummary| {
        let json = serde_json::to_string(change).unwrap();
        captured_changes.iter().position(|c| *c == json)
    };
    timed.changes.sort_by_key(position);
    let positions: Vec<_> = timed.changes.iter().map(position).collect();
    let all: Vec<_> = (0..captured_changes.len()).map(Some).collect();
    assert_eq!(positions, all, "{capture}: not the changes captured");
    timed.time_to_subnet_up_ms = captured["time_to_subnet_up_ms"].as_f64();
    assert_eq!(
        serde_json::to_string(&timed).unwrap() + "\n",
        json,
        "{capture}"
    );
    timed.time_to_subnet_up_ms = printed_time_to_subnet_up(&text);
    assert_eq!(timed.to_string(), text, "{capture}");
}

/// The time to SUBNET UP a text summary printed on its last line (a dry run's time to its
/// end), if it printed one.
fn printed_time_to_subnet_up(text: &str) -> Option<f64> {
    let line = text.lines().last()?;
    ["time to SUBNET UP: ", "dry run: "]
        .iter()
        .find_map(|label| line.strip_prefix(label))
        .and_then(|ms| ms.strip_suffix(" ms"))
        .map(|ms| ms.parse().unwrap())
}

/// Rewrites a capture from `summary`, with the capture's own time to SUBNET UP and the changes
/// in this run's order.
fn bless(summary: &SweepSummary, dir: &Path, capture: &str, json: &str, text: &str) {
    let captured: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut timed = summary.clone();
    timed.time_to_subnet_up_ms = captured["time_to_subnet_up_ms"].as_f64();
    std::fs::write(
        dir.join(format!("{capture}.json")),
        serde_json::to_string(&timed).unwrap() + "\n",
    )
    .unwrap();
    timed.time_to_subnet_up_ms = printed_time_to_subnet_up(text);
    std::fs::write(dir.join(format!("{capture}.txt")), timed.to_string()).unwrap();
}

#[test]
fn summaries_print_as_before() {
    let settings = settings(CONFIG);
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    assert_printed_as_before(&sm.sweep_done(), "forced");
    sm.manager.reload(edited_settings());
    assert_printed_as_before(&sm.sweep_done(), "diff");

    let mut dry_run = EmulatedSm::new(two_switch(), Run::DryRun, &settings);
    let (summaries, _) = dry_run.finish();
    assert_printed_as_before(&summaries[0], "dryrun");
}

/// The qos-setup example with `program_policy_setup` as given.
fn setup_settings(program: bool) -> Settings {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/qos-setup.toml");
    let text = std::fs::read_to_string(path).unwrap().replace(
        "program_policy_setup = true",
        &format!("program_policy_setup = {program}"),
    );
    ibqos_opensm::load_bytes("qos-setup.toml", text.as_bytes(), Format::NativeToml)
        .unwrap()
        .settings
}

/// Turning `program_policy_setup` on by SIGHUP: the reload's sweep Sets exactly the per-group
/// tables, and nothing else. Those are the high VLArb block (8 entries, one Set) and VLHighLimit
/// (in PortInfo) on the 4 ports of the storage scope. And the 19 SL-to-VL entries: 9 inputs to each
/// switch's port 5, and switch one's port 1 to port 2.
#[test]
fn a_reload_that_turns_qos_setup_on_sets_only_the_group_tables() {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &setup_settings(false));
    assert_eq!(sm.sweep_done().mode, SweepMode::Forced);
    let before = sets_handled(&sm);
    sm.manager.reload(setup_settings(true));
    let reloaded = sm.sweep_done();
    assert_eq!(reloaded.mode, SweepMode::Diff);
    assert_eq!(
        sets_since(&sm, &before),
        BTreeMap::from([
            (u16::from(AttributeId::PortInfo), 4),
            (u16::from(AttributeId::SlToVlMappingTable), 19),
            (u16::from(AttributeId::VlArbitrationTable), 4),
        ])
    );
}

/// The manager's counters, checked against two other counts: what the fabric handled (every
/// SMP sent reached an SMA, every one was answered) and what the sweep summaries list (the
/// table Sets are the SL2VL and VLArb Sets the forced sweep sent). A reload that edits the CA
/// ports' low-priority VLArb is drift a diff sweep finds and repairs, in that table alone.
#[test]
fn counters_agree_with_the_fabric_and_the_summaries() {
    let settings = settings(CONFIG);
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    let forced = sm.sweep_done();
    let counters = sm.manager.counters().clone();
    let handled: BTreeMap<(AttributeId, Method), u64> = sm
        .transport
        .emulator()
        .handled_all()
        .map(|(attribute, method, count)| ((attribute, method), count))
        .collect();
    assert_eq!(counters.smps_sent, handled);
    let sent: u64 = counters.smps_sent.values().sum();
    assert_eq!(sent, forced.smps_sent);
    assert_eq!(counters.smps_received.values().sum::<u64>(), sent);
    let summary_sets = |attribute: &str| {
        let smp = forced
            .smps
            .iter()
            .find(|s| s.attribute == attribute && s.method == "Set");
        smp.map_or(0, |s| s.count)
    };
    let sets = |counters: &Counters, table, result| {
        let count = counters.tables.sets.get(&(table, result));
        count.copied().unwrap_or(0)
    };
    assert_eq!(
        sets(&counters, Table::Sl2Vl, SetResult::Ok),
        summary_sets("SlToVlMappingTable")
    );
    assert_eq!(
        sets(&counters, Table::VlArbLow, SetResult::Ok)
            + sets(&counters, Table::VlArbHigh, SetResult::Ok),
        summary_sets("VlArbitrationTable")
    );
    assert!(sets(&counters, Table::VlArbHigh, SetResult::Ok) > 0);
    // Every port QoS programs has its VLHighLimit in its PortInfo Set, echoed back as sent.
    assert_eq!(
        sets(&counters, Table::VlHighLimit, SetResult::Ok),
        forced.qos_ports_configured as u64
    );
    assert_eq!(sets(&counters, Table::Sl2Vl, SetResult::Failed), 0);
    assert!(
        counters.tables.drift_found.is_empty(),
        "a forced sweep reads nothing back"
    );

    sm.manager.reload(edited_settings());
    let reloaded = sm.sweep_done();
    let after = sm.manager.counters();
    assert_eq!(reloaded.changes.len(), 6);
    assert_eq!(
        after.tables.drift_found,
        BTreeMap::from([(Table::VlArbLow, 6)])
    );
    assert_eq!(
        after.tables.drift_repaired,
        BTreeMap::from([(Table::VlArbLow, 6)])
    );
    // The diff sweep Set only those six, and found every other table in place.
    assert_eq!(
        sets(after, Table::VlArbLow, SetResult::Ok),
        sets(&counters, Table::VlArbLow, SetResult::Ok) + 6
    );
    assert_eq!(
        sets(after, Table::Sl2Vl, SetResult::Skipped),
        summary_sets("SlToVlMappingTable")
    );
    assert_eq!(
        sets(after, Table::VlHighLimit, SetResult::Skipped),
        forced.qos_ports_configured as u64
    );
    assert_eq!(sm.manager.smps_outstanding(), 0, "between sweeps");
}

/// A trap 128 is counted by its number.
#[test]
fn traps_are_counted_by_number() {
    let settings = settings(CONFIG);
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, &settings);
    sm.sweep_done();
    assert!(sm.manager.counters().traps.is_empty());
    let down_ns = sm.transport.now_ns() + 1_000_000_000;
    flap_inter_switch_link(&mut sm, down_ns, None);
    let woken = sm.sweep_done();
    assert_eq!(
        sm.manager.counters().traps,
        BTreeMap::from([(128, woken.link_change_traps)])
    );
}
