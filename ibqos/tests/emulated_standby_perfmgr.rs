//! The performance manager of a STANDBY SM, as OpenSM's runs it: two ibqos SMs on the built-in
//! two-switch fabric, in one process and in virtual time (`ibqos_transport::shared`). The
//! master (H1) has no PerfMgr; the standby (H2) has one. The standby never sweeps the subnet
//! for the SM, so every PerfMgr sweep starts with a discovery of its own: it reads every port's
//! counters at the LIDs the master gave, sends no Set, and drops a node it no longer finds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_emu::{FaultSchedule, Flap, load_topology};
use ibqos_fabric::PortRef;
use ibqos_mad::{AttributeId, Guid, Method, SmState, SmpRepr};
use ibqos_opensm::Format;
use ibqos_sm::config::perfmgr_config;
use ibqos_sm::manager::{Manager, Run};
use ibqos_transport::Incoming;
use ibqos_transport::shared::SharedFabric;

/// How many exchanges a run may take before the test calls it a hang.
const MAX_STEPS: usize = 1_000_000;

/// Every port of the two-switch fabric the PerfMgr reads: S1's enhanced port 0, 8 + 8 switch
/// ports, 6 CA ports.
const PORTS: usize = 23;

/// An SM on the shared fabric.
struct Sm {
    manager: Manager,
    client: usize,
    /// SMP Sets it sent, SMInfo's (the election's own) aside.
    sets: usize,
}

impl Sm {
    fn start(fabric: &mut SharedFabric, host: &str, conf: &str) -> Sm {
        let settings = ibqos_opensm::load_bytes("sm.conf", conf.as_bytes(), Format::OpenSmConf)
            .unwrap()
            .settings;
        let (client, port) = fabric.attach_sm(host).unwrap();
        let mut manager = Manager::new(
            Run::Daemon,
            &settings,
            BTreeMap::new(),
            Guid(port.port_guid),
        );
        let perfmgr = perfmgr_config(&settings);
        if perfmgr.enabled {
            manager = manager.with_perfmgr(perfmgr, fabric.now(), 0);
        }
        Sm {
            manager,
            client,
            sets: 0,
        }
    }
}

/// Drives both SMs and the fabric until `end`, in virtual time.
fn run_until(fabric: &mut SharedFabric, sms: &mut [Sm], end: Instant) {
    for _ in 0..MAX_STEPS {
        let now = fabric.now();
        for sm in sms.iter_mut() {
            while let Some(out) = sm.manager.poll_transmit(now) {
                let set = SmpRepr::parse_bytes(&out.mad).is_ok_and(|smp| {
                    smp.method == Method::Set && smp.attribute_id != AttributeId::SmInfo
                });
                sm.sets += usize::from(set);
                fabric.send(sm.client, &out);
            }
            while sm.manager.poll_event().is_some() {}
        }
        if let Some((client, incoming)) = fabric.recv() {
            let sm = sms.iter_mut().find(|sm| sm.client == client).unwrap();
            match incoming {
                Incoming::Mad { mad, from } => sm.manager.on_mad(now, &mad, from),
                Incoming::Dropped { mad } => sm.manager.on_dropped(now, &mad),
            }
            continue;
        }
        let mut timed = false;
        for sm in sms.iter_mut() {
            if sm.manager.next_deadline().is_some_and(|due| due <= now) {
                sm.manager.on_time(now);
                timed = true;
            }
        }
        if timed {
            continue;
        }
        if now >= end {
            return;
        }
        let next = sms
            .iter()
            .filter_map(|sm| sm.manager.next_deadline())
            .chain(fabric.next_due())
            .fold(end, Instant::min);
        fabric.advance_to(next);
    }
    panic!("stuck: {MAX_STEPS} steps without reaching the end");
}

#[test]
fn a_standby_discovers_the_subnet_for_its_perfmgr_and_reads_every_port() {
    let origin = Instant::now();
    let topology = load_topology("two-switch").unwrap().topology;
    let guid_of = |name: &str| {
        let id = topology.node_by_name(name).unwrap();
        topology.node(id).unwrap().guid
    };
    let (h1, h4) = (guid_of("H1"), guid_of("H4"));
    let h4_port = PortRef::new(topology.node_by_name("H4").unwrap(), 1);
    let mut fabric = SharedFabric::new(topology, origin).unwrap();
    let mut sms = [
        Sm::start(&mut fabric, "H1", "sm_priority 10\nsweep_interval 2\n"),
        Sm::start(
            &mut fabric,
            "H2",
            "sm_priority 1\nsweep_interval 2\nperfmgr TRUE\nperfmgr_sweep_time_s 1\n",
        ),
    ];

    // PerfMgr sweeps at 1 s (ClassPortInfo), 2 s and 3 s (the counters).
    run_until(&mut fabric, &mut sms, origin + Duration::from_millis(3500));
    let [master, standby] = &sms;
    assert_eq!(master.manager.election().state(), SmState::Master);
    assert_eq!(standby.manager.election().state(), SmState::Standby);
    assert_eq!(standby.sets, 0, "a standby's discovery only reads");
    let perfmgr = standby.manager.perfmgr().unwrap();
    let db = perfmgr.db();
    let read = db.nodes().flat_map(|node| &node.ports);
    assert_eq!(read.filter(|port| port.valid).count(), PORTS);
    // The master's SMPs crossed H1's link before the PerfMgr's first reading, and its
    // discovery SMPs after: the totals grew from one reading to the next.
    let h1_port = &db.node(h1).unwrap().ports[1];
    assert!(h1_port.data_total.counts[0] > 0, "{h1_port:?}");
    assert!(db.node(h4).is_some_and(|node| node.active));

    // A sweep the operator asks for discovers first too: its first MAD is a directed NodeInfo.
    let now = fabric.now();
    assert!(sms[1].manager.perf_sweep(now));
    let first = sms[1].manager.poll_transmit(now).unwrap();
    let smp = SmpRepr::parse_bytes(&first.mad).unwrap();
    assert_eq!(
        (smp.method, smp.attribute_id),
        (Method::Get, AttributeId::NodeInfo)
    );
    fabric.send(sms[1].client, &first);

    // H4's link goes down: the master sweeps it away, and the standby's next discovery no
    // longer finds H4, which leaves the PerfMgr's database (perfmgr_rm_nodes TRUE).
    let down = fabric.now() + Duration::from_millis(100);
    let down_ns = u64::try_from((down - origin).as_nanos()).unwrap();
    fabric.emulator_mut().schedule(&FaultSchedule {
        flaps: vec![Flap {
            port: h4_port,
            down_ns,
            up_ns: None,
        }],
        dead: Vec::new(),
        ..FaultSchedule::default()
    });
    run_until(&mut fabric, &mut sms, down + Duration::from_millis(1500));
    let [master, standby] = &sms;
    assert_eq!(master.manager.election().state(), SmState::Master);
    assert_eq!(standby.manager.election().state(), SmState::Standby);
    assert_eq!(standby.sets, 0);
    let db = standby.manager.perfmgr().unwrap().db();
    assert!(db.node(h4).is_none(), "H4 is gone from the subnet");
    assert!(db.node(h1).is_some());
}
