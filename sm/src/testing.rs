//! A fabric for the unit tests: the built-in two-switch fabric, emulated in the same process,
//! and the loop that drives the manager or a bare sweep over it in virtual time. Nothing waits:
//! time jumps to the next answer, or to the engine's next deadline when no answer is due.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_emu::{DueQueue, Emulator, Request, attach_port, load_topology};
use ibqos_exchange::smp::parse_smp;
use ibqos_exchange::{Address, Engine, Gmp, Message, OutgoingMad, Peer};
use ibqos_fabric::PortRef;
use ibqos_mad::sa::{SaAttributeId, SaMad};
use ibqos_mad::{
    Attribute, AttributeId, CC_CLASS_VERSION, CcAttributeId, DrPath, Method, MgmtClass, NoticeRepr,
    NoticeType, Routing, Smp, SmpRepr,
};
use ibqos_opensm::Settings;

use crate::config::sweep_config;
use crate::engine::sweep::{Learned, Phase, Sweep, SweepConfig, SweepMode};
use crate::sa::new_sa_mad;

/// How many exchanges a drive may take before the test calls it a hang: a two-switch sweep
/// takes a few hundred.
const STEP_LIMIT: usize = 100_000;

/// The two-switch fabric with an SM on the port a client attaches to, in virtual time.
#[derive(Debug)]
pub(crate) struct Fabric {
    pub emulator: Emulator,
    /// The SM's port.
    pub port: PortRef,
    origin: Instant,
    ns: u64,
    /// Answers and traps on their way to the SM, by the emulated ns they arrive.
    arriving: DueQueue<(Vec<u8>, Peer)>,
    /// Every MAD the engine sent, in order.
    pub sent: Vec<OutgoingMad>,
}

impl Fabric {
    pub fn two_switch() -> Fabric {
        let topology = load_topology("two-switch").unwrap().topology;
        let port = attach_port(&topology, None).unwrap();
        let mut emulator = Emulator::new(topology).unwrap();
        emulator.set_is_sm(port, true);
        Fabric {
            emulator,
            port,
            origin: Instant::now(),
            ns: 0,
            arriving: DueQueue::default(),
            sent: Vec::new(),
        }
    }

    /// The GUID of the SM's port.
    pub fn port_guid(&self) -> u64 {
        self.guid_of(self.port)
    }

    /// The port GUID of `node`'s `port`.
    pub fn guid_of(&self, port: PortRef) -> u64 {
        self.emulator.topology().port(port).unwrap().guid
    }

    /// Port `port` of the node named `name`.
    pub fn port_of(&self, name: &str, port: u8) -> PortRef {
        PortRef::new(self.emulator.topology().node_by_name(name).unwrap(), port)
    }

    /// The LID `port` holds now.
    pub fn lid_of(&self, port: PortRef) -> u16 {
        self.emulator.port_info(port).unwrap().lid
    }

    /// The emulated time now.
    pub fn now(&self) -> Instant {
        self.origin + Duration::from_nanos(self.ns)
    }

    /// One MAD into the fabric: its answer, and any trap a Set made, are on their way back.
    fn send(&mut self, out: OutgoingMad) {
        let (dlid, slid) = match out.address {
            Address::Directed => (None, DrPath::PERMISSIVE_LID),
            Address::Lid(lid) | Address::Peer(Peer { lid, .. }) => (Some(lid), lid),
        };
        let request = Request {
            origin: self.port,
            at_ns: self.ns,
            dlid,
            mad: &out.mad,
        };
        if let Some(reply) = self.emulator.exchange(request) {
            self.arriving
                .push(reply.at_ns, (reply.mad, Peer::lid(slid)));
        }
        self.collect_traps();
        self.sent.push(out);
    }

    /// A Set of `attribute` to `port`'s node, LID-routed from the SM's port but not by the SM:
    /// a change behind its back. Panics unless the node takes it.
    pub fn set_behind_the_back(&mut self, port: PortRef, attribute: &Attribute, modifier: u32) {
        let smp = SmpRepr::set(attribute, modifier, 0x5e7, Routing::Lid);
        let mut mad = vec![0u8; 256];
        smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
        let request = Request {
            origin: self.port,
            at_ns: self.ns,
            dlid: Some(self.lid_of(port)),
            mad: &mad,
        };
        let reply = self.emulator.exchange(request).expect("an answer");
        let answer = SmpRepr::parse(&Smp::new_checked(&reply.mad[..]).unwrap()).unwrap();
        assert_eq!(answer.status, ibqos_mad::Status::OK);
        self.emulator.take_traps();
    }

    /// A congestion control Set of `attribute` (its data, after the CC_Key and the log data)
    /// to `port`'s agent, carrying `cc_key`, not by the SM: a change behind its back. Whether
    /// the agent answered (a wrong key drops it).
    pub fn cc_set_behind_the_back(
        &mut self,
        port: PortRef,
        attribute: CcAttributeId,
        data: &[u8],
        cc_key: u64,
    ) -> bool {
        let mut gmp = Gmp::get(
            MgmtClass::CongestionControl,
            CC_CLASS_VERSION,
            AttributeId::from(u16::from(attribute)),
            0,
        );
        gmp.method = Method::Set;
        gmp.payload[..8].copy_from_slice(&cc_key.to_be_bytes());
        gmp.payload[40..40 + data.len()].copy_from_slice(data);
        let mad = gmp.to_bytes();
        let request = Request {
            origin: self.port,
            at_ns: self.ns,
            dlid: Some(self.lid_of(port)),
            mad: &mad,
        };
        self.emulator.exchange(request).is_some()
    }

    /// `mad` from `from` reaches the SM now, after what is already on its way by now.
    pub fn arrive(&mut self, mad: Vec<u8>, from: Peer) {
        self.arriving.push(self.ns, (mad, from));
    }

    /// Whatever was on its way to the SM is lost.
    pub fn lose_arrivals(&mut self) {
        self.arriving.retain(|_| false);
    }

    /// The traps the fabric raised for the SM's port join the answers on their way.
    pub fn collect_traps(&mut self) {
        for trap in self.emulator.take_traps() {
            if trap.to == self.port {
                self.arriving
                    .push(trap.at_ns, (trap.mad, Peer::lid(trap.slid)));
            }
        }
    }

    /// Sends all `engine` has to send now.
    pub fn flush(&mut self, engine: &mut impl Engine) {
        while let Some(out) = engine.poll_transmit(self.now()) {
            self.send(out);
        }
    }

    /// The next answer arrives or the engine's next deadline passes, whichever is first.
    /// `false` when neither will come.
    fn next(&mut self, engine: &mut impl Engine) -> bool {
        let arrival = self.arriving.next_ns();
        let deadline = engine
            .next_deadline()
            .map(|at| u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap());
        match (arrival, deadline) {
            (Some(at), None) => self.arrive_now(engine, at),
            (Some(at), Some(deadline)) if at <= deadline => self.arrive_now(engine, at),
            (_, Some(at)) => {
                self.ns = self.ns.max(at);
                engine.on_time(self.now());
            }
            (None, None) => return false,
        }
        true
    }

    /// The MAD due at `at` reaches the engine.
    fn arrive_now(&mut self, engine: &mut impl Engine, at: u64) {
        let (at, (mad, from)) = self.arriving.pop_due(at).unwrap();
        self.ns = self.ns.max(at);
        engine.on_mad(self.now(), &mad, from);
    }

    /// Runs `engine` until `done` holds, checked each time what it had to send went out;
    /// panics on a hang.
    pub fn drive<E: Engine>(&mut self, engine: &mut E, mut done: impl FnMut(&mut E) -> bool) {
        for _ in 0..STEP_LIMIT {
            self.flush(engine);
            if done(engine) {
                return;
            }
            assert!(self.next(engine), "nothing more happens, and not done");
        }
        panic!("not done after {STEP_LIMIT} steps");
    }

    /// The MADs sent since the `from`th, as SMPs (others left out).
    pub fn smps_sent_since(&self, from: usize) -> Vec<SmpRepr> {
        self.sent[from..]
            .iter()
            .filter_map(|out| SmpRepr::parse(&Smp::new_checked(&out.mad[..]).ok()?).ok())
            .collect()
    }
}

/// A bare sweep as the transport's driver would run it.
#[derive(Debug)]
pub(crate) struct Bare(pub Sweep);

impl Engine for Bare {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.0.poll_transmit(now).map(|t| OutgoingMad::from(&t))
    }
    fn next_deadline(&self) -> Option<Instant> {
        self.0.next_deadline()
    }
    fn on_mad(&mut self, now: Instant, mad: &[u8], _from: Peer) {
        if let Some(smp) = parse_smp(mad) {
            self.0.on_response(now, smp);
        }
    }
    fn on_dropped(&mut self, now: Instant, mad: &[u8]) {
        if let Some(smp) = parse_smp(mad) {
            self.0.on_dropped(now, smp);
        }
    }
    fn on_time(&mut self, now: Instant) {
        self.0.on_time(now);
    }
}

/// The sweep configuration of `settings`, in `mode`.
pub(crate) fn config(settings: &Settings, mode: SweepMode) -> SweepConfig {
    SweepConfig {
        mode,
        ..sweep_config(settings, BTreeMap::new())
    }
}

/// A bare sweep of `config` on `fabric`, run to its end.
pub(crate) fn sweep(fabric: &mut Fabric, config: SweepConfig, learned: Learned) -> Sweep {
    let mut bare = Bare(Sweep::start(config, learned, fabric.now()));
    fabric.drive(&mut bare, |bare| bare.0.is_done());
    bare.0
}

/// The settings of an opensm.conf made of `text`.
pub(crate) fn settings(text: &str) -> Settings {
    ibqos_opensm::load_bytes(
        "test.conf",
        text.as_bytes(),
        ibqos_opensm::Format::OpenSmConf,
    )
    .unwrap()
    .settings
}

/// A forced sweep of the two-switch fabric with `text` as opensm.conf, which must bring the
/// subnet up: the fabric and the sweep.
pub(crate) fn subnet_up(text: &str) -> (Fabric, Sweep) {
    let mut fabric = Fabric::two_switch();
    let sweep = sweep(
        &mut fabric,
        config(&settings(text), SweepMode::Forced),
        Learned::default(),
    );
    assert_eq!(*sweep.phase(), Phase::SubnetUp);
    (fabric, sweep)
}

/// The settings of an opensm.conf whose partitions.conf, in `dir`, makes H2 and H3 full
/// members of `hosts` (0x0101); the Default partition has every port, the SM's in full.
pub(crate) fn partitioned(fabric: &Fabric, dir: &tempfile::TempDir) -> Settings {
    let guid = |name| format!("{:#018x}", fabric.guid_of(fabric.port_of(name, 1)));
    let partitions = dir.path().join("partitions.conf");
    let text = format!(
        "Default=0x7fff : ALL, SELF=full ;\nhosts=0x0101 : {}=full, {}=full ;\n",
        guid("H2"),
        guid("H3")
    );
    std::fs::write(&partitions, text).unwrap();
    let conf = dir.path().join("opensm.conf");
    let line = format!("partition_config_file {}\n", partitions.display());
    std::fs::write(&conf, line).unwrap();
    ibqos_opensm::load(&conf).unwrap().settings
}

/// An SA request of `attribute` with `method`, `mask`, `sm_key` and a template written by
/// `template`.
pub(crate) fn sa_request(
    method: Method,
    attribute: SaAttributeId,
    mask: u64,
    sm_key: u64,
    template: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    let mut mad = new_sa_mad(method, attribute, 0x0001_0000_0000_4242);
    let mut view = SaMad::new_unchecked(&mut mad[..]);
    view.set_sm_key(sm_key);
    view.set_component_mask(mask);
    template(view.data_mut());
    mad
}

/// Trap `number` (a generic notice from a switch) as LID `issuer` sends it to the SM.
pub(crate) fn trap(number: u16, issuer: u16) -> Vec<u8> {
    let notice = NoticeRepr {
        is_generic: true,
        notice_type: NoticeType::Urgent,
        producer_type: NoticeRepr::PRODUCER_SWITCH,
        trap_number: number,
        issuer_lid: issuer,
        notice_toggle: false,
        notice_count: 0,
        data_details: [0; 54],
    };
    let smp = SmpRepr {
        method: Method::Trap,
        transaction_id: 0x1234_0000_0042,
        data: Attribute::Notice(notice).to_data(),
        ..SmpRepr::get(AttributeId::Notice, 0, 0, Routing::Lid)
    };
    let mut mad = vec![0u8; 256];
    smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
    mad
}
