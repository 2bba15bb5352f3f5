//! The SM on a faulty emulated fabric (issue 5). With loss and jitter it converges within two
//! sweeps for every seed. A link flapping in the middle of a sweep is brought back by the next. A
//! dead node leaves the rest of the fabric up, and damaged responses never stop the SM. The fabric
//! dump is the same bytes for the same seed.
//!
//! The fabric runs on virtual time, the SM's timers included: each run depends on its seed
//! alone, not on the machine, and a lost MAD costs no real time.

use std::collections::BTreeMap;
use std::time::Instant;

use ibqos_emu::{Emulator, FaultSchedule, Faults, Flap, Models, Request, builtin_topology, dump};
use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::netfile::parse_net_str;
use ibqos_fabric::{NodeId, PortRef};
use ibqos_mad::{
    Attribute, DrPath, Method, Notice, PhysPortState, PortState, Routing, Smp, SmpRepr, parse_any,
};
use ibqos_sm::config::sweep_config;
use ibqos_sm::engine::qos::qos_sets;
use ibqos_sm::engine::sweep::{Phase, Sweep, SweepConfig};
use ibqos_sm::manager::{Run, SweepReason};
use ibqos_transport::emulated::EmulatedTransport;

mod common;
use common::{EmulatedSm, settings};

const CONFIG: &str = "examples/opensm-qos.conf";

/// The configuration the SM's sweeps run with, for what they should have programmed.
fn config() -> SweepConfig {
    sweep_config(&settings(CONFIG), BTreeMap::new())
}

/// The SM as `ibqos sm` runs it, on `transport`: the first sweep forced, later ones writing
/// what differs, with what earlier sweeps could not keep carried over.
fn daemon(transport: EmulatedTransport) -> EmulatedSm {
    EmulatedSm::new(transport, Run::Daemon, &settings(CONFIG))
}

/// Drives the SM to the end of its next sweep.
fn sweep(sm: &mut EmulatedSm) {
    sm.sweep_done();
}

/// The SM's last finished sweep.
fn last(sm: &EmulatedSm) -> &Sweep {
    sm.manager.last_sweep().unwrap()
}

/// The built-in two-switch fabric on virtual time, the SM at H1, with these models and
/// schedule.
fn fabric(models: Models, schedule: impl FnOnce(&Emulator) -> FaultSchedule) -> EmulatedTransport {
    let topology = parse_net_str(builtin_topology("two-switch").unwrap())
        .unwrap()
        .topology;
    let h1 = PortRef::new(topology.node_by_name("H1").unwrap(), 1);
    let mut emulator = Emulator::new(topology).unwrap();
    emulator.set_models(models);
    let schedule = schedule(&emulator);
    emulator.schedule(&schedule);
    EmulatedTransport::virtual_time(emulator, h1)
}

/// `mad` sent straight to the emulator from the SM's port, at no time past what the fabric has
/// reached: the response's bytes.
fn sm_exchange(
    transport: &mut EmulatedTransport,
    mad: &[u8],
    dlid: Option<u16>,
) -> Option<Vec<u8>> {
    let origin = transport.port();
    let request = Request {
        origin,
        at_ns: 0,
        dlid,
        mad,
    };
    transport
        .emulator_mut()
        .exchange(request)
        .map(|reply| reply.mad)
}

fn no_schedule(_: &Emulator) -> FaultSchedule {
    FaultSchedule::default()
}

fn faulty(seed: u64) -> Models {
    Models {
        faults: Faults {
            loss: 0.05,
            jitter_ns: 50_000,
            ..Faults::default()
        },
        seed,
        ..Models::default()
    }
}

fn node(emulator: &Emulator, name: &str) -> NodeId {
    emulator.topology().node_by_name(name).unwrap()
}

/// Every link ACTIVE at both ends except those of `except`, and every QoS table the sweep
/// planned held by the fabric: `Err` says what is not.
fn converged(
    emulator: &Emulator,
    sweep: &Sweep,
    config: &SweepConfig,
    except: &[NodeId],
) -> Result<(), String> {
    let t = emulator.topology();
    for (a, b) in t.links() {
        if except.contains(&a.node) || except.contains(&b.node) {
            continue;
        }
        let state = |p| emulator.port_info(p).map(|i| i.port_state);
        if (state(a), state(b)) != (Some(PortState::Active), Some(PortState::Active)) {
            return Err(format!("{a} {b}: {:?} {:?}", state(a), state(b)));
        }
    }
    let sets = qos_sets(
        sweep.subnet(),
        &config.qos,
        sweep.qos_setup(),
        &**sweep.layering(),
        config.use_optimized_slvl,
    );
    if sets.is_empty() {
        return Err("no QoS table planned".into());
    }
    for set in &sets {
        let node = t.node_by_guid(set.node.0).ok_or("unknown node")?;
        let modifier = u32::from(set.modifier);
        let held = emulator.get(
            PortRef::new(node, set.via.port),
            set.block.attribute().id(),
            modifier,
        );
        if held != Ok(set.block.attribute()) {
            return Err(format!("{:#x} {modifier:#x}: {held:?}", set.node.0));
        }
    }
    Ok(())
}

/// The dump a fault-free run leaves: every table as planned.
fn clean_dump() -> String {
    let mut sm = daemon(fabric(Models::default(), no_schedule));
    sweep(&mut sm);
    let first = last(&sm);
    assert_eq!(*first.phase(), Phase::SubnetUp);
    converged(sm.transport.emulator(), first, &config(), &[]).unwrap();
    dump(sm.transport.emulator()).to_json()
}

#[test]
fn with_loss_and_jitter_every_seed_converges_within_two_sweeps() {
    let clean = clean_dump();
    let started = Instant::now();
    for seed in 0..100 {
        let mut sm = daemon(fabric(faulty(seed), no_schedule));
        sweep(&mut sm);
        sweep(&mut sm);
        let second = last(&sm);
        let emulator = sm.transport.emulator();
        if let Err(what) = converged(emulator, second, &config(), &[]) {
            panic!(
                "seed {seed}: {what} {:?} {:?}",
                second.phase(),
                second.counts()
            );
        }
        // No wrong table left anywhere, planned or not: the fabric is the clean run's.
        assert!(
            dump(emulator).to_json() == clean,
            "seed {seed}: the fabric differs from a clean run"
        );
    }
    eprintln!("100 seeds, two sweeps each: {:?}", started.elapsed());
}

#[test]
fn a_link_flapping_in_the_middle_of_a_sweep_comes_back_by_the_next() {
    // How long a clean first sweep takes in virtual time, to strike in its middle.
    let mut clean = daemon(fabric(Models::default(), no_schedule));
    sweep(&mut clean);
    let length = clean.transport.now_ns();
    // Half-way through the first sweep the inter-switch link S1[3]-S2[3] and H2's link S1[2]
    // go down; the first comes back within the sweep, the second ten seconds later, while the
    // SM waits for its next sweep. No random faults: the timeline is the clean sweep's.
    let mut sm = daemon(fabric(Models::default(), |emulator| {
        let s1 = node(emulator, "S1");
        let flap = |port, up_ns| Flap {
            port: PortRef::new(s1, port),
            down_ns: length / 2,
            up_ns: Some(up_ns),
        };
        FaultSchedule {
            flaps: vec![
                flap(3, length * 3 / 4),
                flap(2, length / 2 + 10_000_000_000),
            ],
            dead: vec![],
            ..FaultSchedule::default()
        }
    }));
    let config = config();
    sweep(&mut sm);
    let first = last(&sm);
    assert!(converged(sm.transport.emulator(), first, &config, &[]).is_err());
    // While the SM waits for its next sweep, H2's link comes back: S1, whose PortStateChange
    // the first sweep cleared, sends trap 128, and the SM sweeps at once instead of waiting
    // out the interval. The next sweep brings both links back.
    let flap_ends = length / 2 + 10_000_000_000;
    let (reason, at) = sm.sweep_started();
    assert_eq!(reason, SweepReason::LinkChange);
    assert!(at > flap_ends && at < flap_ends + 1_000_000);
    assert_eq!(sm.transport.emulator().unrepressed_traps(), 0);
    sweep(&mut sm);
    let second = last(&sm);
    assert_eq!(sm.transport.emulator().next_event_ns(), None);
    converged(sm.transport.emulator(), second, &config, &[]).unwrap();
    assert_eq!(*second.phase(), Phase::SubnetUp);
}

#[test]
fn a_link_going_down_after_subnet_up_wakes_the_sm_with_trap_128() {
    let mut sm = daemon(fabric(Models::default(), no_schedule));
    let config = config();
    sweep(&mut sm);
    let first = last(&sm);
    assert_eq!(*first.phase(), Phase::SubnetUp);
    // Nothing happens: the SM waits out its interval.
    let interval_ns = u64::from(settings(CONFIG).sm.sweep_interval) * 1_000_000_000;
    let ended = sm.transport.now_ns();
    assert_eq!(
        sm.sweep_started(),
        (SweepReason::Interval, ended + interval_ns)
    );
    sweep(&mut sm);
    // A cable between the switches is pulled a second later and plugged back in a second
    // after that. Each change wakes the SM within microseconds, not a sweep interval: S1
    // sends trap 128 when its PortStateChange goes from clear to set (S2 too: one trap each
    // until the SM's next sweep clears the bit).
    let down_ns = sm.transport.now_ns() + 1_000_000_000;
    let up_ns = down_ns + 1_000_000_000;
    let s1 = node(sm.transport.emulator(), "S1");
    sm.transport.emulator_mut().schedule(&FaultSchedule {
        flaps: vec![Flap {
            port: PortRef::new(s1, 3),
            down_ns,
            up_ns: Some(up_ns),
        }],
        dead: vec![],
        ..FaultSchedule::default()
    });
    for (change_ns, what) in [(down_ns, "down"), (up_ns, "up")] {
        let (reason, at) = sm.sweep_started();
        assert_eq!(reason, SweepReason::LinkChange, "link {what}");
        let late = at - change_ns;
        assert!(late < 100_000, "link {what}: woken {late} ns after");
        sweep(&mut sm);
        let swept = last(&sm);
        assert_eq!(*swept.phase(), Phase::SubnetUp, "link {what}");
        let all_active = converged(sm.transport.emulator(), swept, &config, &[]);
        assert_eq!(
            all_active.is_ok(),
            what == "up",
            "link {what}: {all_active:?}"
        );
    }
    // Every trap was repressed.
    assert_eq!(sm.transport.emulator().unrepressed_traps(), 0);
}

#[test]
fn trap_128_names_its_switch_and_ends_with_a_repress_of_its_tid() {
    // Before an SM has told the switches where it is, a link change sends no trap.
    let mut transport = fabric(Models::default(), no_schedule);
    let s2 = node(transport.emulator(), "S2");
    let pull = |transport: &mut EmulatedTransport, at_ns| {
        transport.emulator_mut().schedule(&FaultSchedule {
            flaps: vec![Flap {
                port: PortRef::new(s2, 1),
                down_ns: at_ns,
                up_ns: None,
            }],
            dead: vec![],
            ..FaultSchedule::default()
        });
        transport.emulator_mut().advance_to(at_ns);
        transport.emulator_mut().take_traps()
    };
    assert_eq!(pull(&mut transport, 1_000), vec![]);

    let mut sm = daemon(fabric(Models::default(), no_schedule));
    sweep(&mut sm);
    let mut transport = sm.transport;
    let s2_lid = transport
        .emulator()
        .port_info(PortRef::new(s2, 0))
        .unwrap()
        .lid;
    let soon = transport.now_ns() + 1_000;
    let traps = pull(&mut transport, soon);
    assert_eq!(traps.len(), 1, "{traps:?}");
    let trap = &traps[0];
    assert_eq!(trap.to, transport.port());
    assert_eq!(trap.slid, s2_lid);
    let (smp, attribute) = parse_any(&trap.mad).unwrap();
    assert_eq!((smp.method, smp.routing), (Method::Trap, Routing::Lid));
    let Attribute::Notice(notice) = attribute else {
        panic!("{attribute:?}")
    };
    assert!(notice.is_generic);
    assert_eq!((notice.trap_number, notice.producer_type), (128, 2));
    assert_eq!(notice.issuer_lid, s2_lid);
    assert_eq!(
        Notice::new_checked(&smp.data[..])
            .unwrap()
            .trap128_lid_addr(),
        s2_lid
    );
    // S2 gets an M_Key (protection level 2) from a Set that needs none yet.
    const KEY: u64 = 0x5eed;
    let mut keyed = *transport.emulator().port_info(PortRef::new(s2, 0)).unwrap();
    keyed.m_key = KEY;
    keyed.m_key_protect_bits = 2;
    keyed.port_state = PortState::NoChange;
    keyed.port_phys_state = PhysPortState::NoChange;
    let route = Routing::Directed(DrPath::request(&[1, 3]).unwrap());
    let set = SmpRepr::set(&Attribute::PortInfo(keyed), 0, 99, route);
    let mut mad = vec![0; 256];
    set.emit(&mut Smp::new_unchecked(&mut mad[..]));
    assert!(sm_exchange(&mut transport, &mad, None).is_some());
    // A repress with another TID, or without S2's key, leaves the trap standing; its own TID
    // with the key ends it.
    assert_eq!(transport.emulator().unrepressed_traps(), 1);
    let tid = smp.transaction_id;
    for (tid, m_key, left) in [(tid + 1, KEY, 1), (tid, 0, 1), (tid, KEY, 0)] {
        let repress = SmpRepr {
            method: Method::TrapRepress,
            transaction_id: tid,
            m_key,
            ..smp
        };
        let mut mad = vec![0; 256];
        repress.emit(&mut Smp::new_unchecked(&mut mad[..]));
        assert_eq!(sm_exchange(&mut transport, &mad, Some(s2_lid)), None);
        assert_eq!(transport.emulator().unrepressed_traps(), left);
    }
    let violations = transport.emulator().port_info(PortRef::new(s2, 0)).unwrap();
    assert_eq!(
        violations.m_key_violations, 1,
        "the repress without the key"
    );
}

#[test]
fn a_dead_node_leaves_the_rest_of_the_fabric_up() {
    let transport = fabric(faulty(9), |emulator| FaultSchedule {
        flaps: vec![],
        dead: vec![node(emulator, "H3")],
        ..FaultSchedule::default()
    });
    let h3 = node(transport.emulator(), "H3");
    let mut sm = daemon(transport);
    sweep(&mut sm);
    sweep(&mut sm);
    let second = last(&sm);
    converged(sm.transport.emulator(), second, &config(), &[h3]).unwrap();
    let h3_guid = sm.transport.emulator().topology().node(h3).unwrap().guid;
    assert!(!second.subnet().nodes.contains_key(&h3_guid));

    // Its end state differs from a clean run's exactly at H3 and its switch S2, whose port
    // to H3 cannot go ACTIVE, once LIDs and the LFTs they index are left out: H3 holds none,
    // so those after it in GUID order move down one.
    let without_lids = |text: &str| {
        let mut dump = FabricDump::from_json(text).unwrap();
        for node in dump.nodes.values_mut() {
            node.lft.clear();
            for port in node.ports.values_mut() {
                port.lid = 0;
            }
        }
        dump
    };
    let clean = without_lids(&clean_dump());
    let after = without_lids(&dump(sm.transport.emulator()).to_json());
    let differing: Vec<&str> = after
        .nodes
        .iter()
        .filter(|(guid, n)| clean.nodes[*guid] != **n)
        .map(|(_, n)| n.name.as_str())
        .collect();
    assert_eq!(differing, ["sw-two", "host-three HCA-1"]);
}

#[test]
fn damaged_responses_never_stop_the_sm() {
    for seed in 0..20 {
        let models = Models {
            faults: Faults {
                loss: 0.05,
                corrupt: 0.2,
                jitter_ns: 50_000,
            },
            seed,
            ..Models::default()
        };
        let mut sm = daemon(fabric(models, no_schedule));
        for _ in 0..3 {
            sweep(&mut sm);
        }
    }
}

#[test]
fn the_dump_is_the_same_bytes_for_the_same_seed() {
    let run = |seed| {
        let mut sm = daemon(fabric(faulty(seed), no_schedule));
        sweep(&mut sm);
        dump(sm.transport.emulator()).to_json()
    };
    assert_eq!(run(17), run(17));
}
