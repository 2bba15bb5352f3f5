//! The performance manager against the emulated fabric, in virtual time: the two-switch fabric
//! brought up by ibqos's SM, then PerfMgr sweeps from the SM's port. The first reads each
//! PMA's ClassPortInfo only; the next two read PortCounters and PortCountersExtended of every
//! port. The totals the PerfMgr keeps are checked against what the emulated PMAs answered, and
//! against their rule that every MAD counts 72 dwords. A fourth sweep follows a clear made behind
//! the PerfMgr's back.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use ibqos_emu::{Emulator, Request, attach_port, load_topology};
use ibqos_exchange::{Engine, Gmp, Message, OutgoingMad, Peer};
use ibqos_fabric::{PortRef, Topology};
use ibqos_mad::{
    AttributeId, Guid, Method, MgmtClass, PerfAttributeId, PerfMgtMad, PortCounters,
    PortCountersExtended, PortCountersExtendedRepr, PortCountersRepr, Status,
};
use ibqos_perfmgr::counters::{DataCounter, DataReading, ErrorCounter};
use ibqos_perfmgr::{PerfMgr, PerfMgrConfig, RemotePort, SubnetNode, SubnetPort};
use ibqos_sm::manager::{Event, Manager, Run};
use ibqos_transport::Transport;
use ibqos_transport::driver::drive;
use ibqos_transport::emulated::EmulatedTransport;

/// Every MAD the emulated PMAs count is 72 dwords (ibsim's figure).
const MAD_DWORDS: u64 = 72;

/// The PerfMgr, with every PerfMgt answer it was handed kept by the port it is about.
struct Recorded {
    pm: PerfMgr,
    /// The last PortCounters and PortCountersExtended answer per (LID, port), and how many
    /// answers of each attribute came.
    counters: HashMap<(u16, u8), PortCountersRepr>,
    extended: HashMap<(u16, u8), PortCountersExtendedRepr>,
    answers: BTreeMap<PerfAttributeId, usize>,
}

impl Recorded {
    fn record(&mut self, mad: &[u8], from: Peer) {
        let Ok(view) = PerfMgtMad::new_checked(mad) else {
            return;
        };
        let attribute = PerfAttributeId::from(u16::from(view.header().attribute_id()));
        *self.answers.entry(attribute).or_default() += 1;
        let data = view.data();
        match attribute {
            PerfAttributeId::PortCounters => {
                let wire = PortCountersRepr::parse(&PortCounters::new_checked(data).unwrap());
                let wire = wire.unwrap();
                self.counters.insert((from.lid, wire.port_select), wire);
            }
            PerfAttributeId::PortCountersExtended => {
                let view = PortCountersExtended::new_checked(data).unwrap();
                let wire = PortCountersExtendedRepr::parse(&view).unwrap();
                self.extended.insert((from.lid, wire.port_select), wire);
            }
            _ => {}
        }
    }
}

impl Engine for Recorded {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.pm.poll_transmit(now)
    }
    fn next_deadline(&self) -> Option<Instant> {
        self.pm.next_deadline()
    }
    fn on_mad(&mut self, now: Instant, mad: &[u8], from: Peer) {
        if Gmp::from_bytes(mad).is_some_and(|gmp| gmp.method == Method::GetResp) {
            self.record(mad, from);
        }
        self.pm.on_mad(now, mad, from);
    }
    fn on_dropped(&mut self, now: Instant, mad: &[u8]) {
        self.pm.on_dropped(now, mad);
    }
    fn on_time(&mut self, now: Instant) {
        self.pm.on_time(now);
    }
}

/// The subnet as the SM left it, as the PerfMgr takes it: every port of a switch at its port
/// 0's LID (port 0 itself if enhanced), every linked port of a CA at its own.
fn subnet(topology: &Topology, emulator: &Emulator) -> Vec<SubnetNode> {
    let lid = |port: PortRef| emulator.port_info(port).unwrap().lid;
    topology
        .nodes()
        .map(|(id, node)| {
            let ports = node
                .existing_ports()
                .filter(|&(number, _)| match number {
                    0 => node.enhanced_port0,
                    _ => node.is_switch() || topology.peer(PortRef::new(id, number)).is_some(),
                })
                .map(|(number, _)| {
                    let here = PortRef::new(id, number);
                    let remote = topology.peer(here).map(|peer| {
                        let far = topology.node(peer.node).unwrap();
                        RemotePort {
                            name: far.description.clone(),
                            guid: far.guid,
                            port: peer.port,
                        }
                    });
                    let addressed = if node.is_switch() {
                        PortRef::new(id, 0)
                    } else {
                        here
                    };
                    SubnetPort {
                        port: number,
                        lid: lid(addressed),
                        remote,
                    }
                })
                .collect();
            SubnetNode {
                guid: node.guid,
                description: node.description.clone(),
                node_type: node.kind.into(),
                enhanced_port0: node.enhanced_port0,
                num_ports: node.num_ports(),
                ports,
            }
        })
        .collect()
}

/// Runs the PerfMgr until `count` answers of `attribute` came and nothing is on the wire.
fn run_until(
    transport: &mut EmulatedTransport,
    recorded: &mut Recorded,
    attribute: PerfAttributeId,
    count: usize,
) {
    let done = |r: &mut Recorded| {
        let answered = r.answers.get(&attribute).copied().unwrap_or(0);
        (answered >= count && r.pm.outstanding() == 0).then_some(())
    };
    drive(transport, recorded, done, &|| false).unwrap();
    assert_eq!(recorded.answers[&attribute], count);
}

#[test]
fn the_perfmgr_accumulates_what_the_emulated_pmas_count() {
    let topology = load_topology("two-switch").unwrap().topology;
    let attach = attach_port(&topology, Some("H1")).unwrap();
    let emulator = Emulator::new(topology.clone()).unwrap();
    let mut transport = EmulatedTransport::virtual_time(emulator, attach);
    let settings = ibqos_opensm::Settings::default();
    let port_guid = transport.local_port().port_guid;
    let mut manager = Manager::new(Run::Daemon, &settings, BTreeMap::new(), Guid(port_guid));
    loop {
        let event = drive(&mut transport, &mut manager, Manager::poll_event, &|| false).unwrap();
        if let Some(Event::SweepDone(summary)) = event {
            assert!(summary.subnet_up, "{summary:?}");
            break;
        }
    }

    let nodes = subnet(&topology, transport.emulator());
    // Every switch port (S1's enhanced port 0 too) and every CA port.
    let monitored: usize = nodes.iter().map(|node| node.ports.len()).sum();
    assert_eq!(monitored, 1 + 8 + 8 + 4 + 2);
    let config = PerfMgrConfig {
        enabled: true,
        ..PerfMgrConfig::default()
    };
    let mut pm = PerfMgr::new(config, transport.now(), 1_795_894_015);
    pm.set_subnet(nodes);
    let mut recorded = Recorded {
        pm,
        counters: HashMap::new(),
        extended: HashMap::new(),
        answers: BTreeMap::new(),
    };

    // The first sweep: one ClassPortInfo per switch and per CA port, and no counters.
    run_until(
        &mut transport,
        &mut recorded,
        PerfAttributeId::ClassPortInfo,
        2 + 6,
    );
    assert_eq!(recorded.answers.len(), 1, "{:?}", recorded.answers);
    run_until(
        &mut transport,
        &mut recorded,
        PerfAttributeId::PortCountersExtended,
        monitored,
    );
    assert_eq!(recorded.answers[&PerfAttributeId::PortCounters], monitored);
    let first = recorded.extended.clone();
    run_until(
        &mut transport,
        &mut recorded,
        PerfAttributeId::PortCountersExtended,
        2 * monitored,
    );

    let mut grown = 0;
    for node in recorded.pm.db().nodes() {
        let topology_node = topology
            .node(topology.node_by_guid(node.guid).unwrap())
            .unwrap();
        assert!(node.active, "{}", node.name);
        for (number, port) in node.ports.iter().enumerate().skip(node.first_port()) {
            let number = u8::try_from(number).unwrap();
            let at = if topology_node.is_switch() { 0 } else { number };
            let lid = transport
                .emulator()
                .port_info(PortRef::new(topology.node_by_guid(node.guid).unwrap(), at))
                .unwrap()
                .lid;
            let Some(extended) = recorded.extended.get(&(lid, number)) else {
                assert!(
                    !port.valid,
                    "{} port {number} read but not recorded",
                    node.name
                );
                continue;
            };
            let data = &port.data_total;
            let what = format!("{} port {number}", node.name);
            // The totals are the last reading: counting from 0, with no clear in between.
            let read = DataReading::from_extended(extended, true, data.time);
            assert_eq!(data.counts, read.counts, "{what}");
            assert_eq!(
                data.get(DataCounter::XmitData),
                MAD_DWORDS * extended.port_xmit_pkts
            );
            let errors = recorded.counters[&(lid, number)];
            let link_downed = port.error_total.get(ErrorCounter::LinkDowned);
            assert_eq!(link_downed, u64::from(errors.link_downed_counter), "{what}");
            if extended.port_rcv_pkts > first[&(lid, number)].port_rcv_pkts {
                grown += 1;
            }
        }
    }
    // Between the sweeps each port saw at least the second sweep's queries or their answers.
    assert!(grown > 0);
    assert!(recorded.pm.take_notices().is_empty());

    // Someone else clears S2 port 3's data counters: the next sweep says so and counts the
    // reading after the clear from 0.
    let s2 = topology.node_by_name("S2").unwrap();
    let s2_guid = topology.node(s2).unwrap().guid;
    let s2_lid = transport
        .emulator()
        .port_info(PortRef::new(s2, 0))
        .unwrap()
        .lid;
    let before = recorded.pm.db().node(s2_guid).unwrap().ports[3].data_total;
    clear_extended(&mut transport, s2_lid, 3);
    run_until(
        &mut transport,
        &mut recorded,
        PerfAttributeId::PortCountersExtended,
        3 * monitored,
    );
    let notices: Vec<String> = recorded
        .pm
        .take_notices()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        notices,
        [format!(
            "PerfMgr: ERR 540B: Detected an out of band data counter clear on node sw-two \
             ({s2_guid:#x}) port 3"
        )]
    );
    let after = recorded.pm.db().node(s2_guid).unwrap().ports[3].data_total;
    let read = recorded.extended[&(s2_lid, 3)].port_rcv_pkts;
    assert_eq!(
        after.get(DataCounter::RcvPkts),
        before.get(DataCounter::RcvPkts) + read
    );

    // Without `perfmgr_lanes` the MADs are OpenSM's, though these PMAs answer every per-VL and
    // per-SL attribute: ClassPortInfo once per PMA, then the two counter attributes per port
    // and sweep, and nothing else.
    assert_eq!(
        recorded.answers,
        BTreeMap::from([
            (PerfAttributeId::ClassPortInfo, 2 + 6),
            (PerfAttributeId::PortCounters, 3 * monitored),
            (PerfAttributeId::PortCountersExtended, 3 * monitored),
        ])
    );
}

/// A PortCountersExtended Set clearing every data counter of `port` at `lid`, sent from the
/// SM's port behind the PerfMgr's back.
fn clear_extended(transport: &mut EmulatedTransport, lid: u16, port: u8) {
    let mut mad = [0u8; 256];
    let mut view = PerfMgtMad::new_unchecked(&mut mad[..]);
    let mut header = view.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::PerfMgt);
    header.set_class_version(1);
    header.set_method(Method::Set);
    header.set_transaction_id(0x0bad);
    header.set_attribute_id(AttributeId::from(u16::from(
        PerfAttributeId::PortCountersExtended,
    )));
    let len = PortCountersExtended::<&[u8]>::LEN;
    let mut set = PortCountersExtended::new_unchecked(&mut view.data_mut()[..len]);
    set.set_port_select(port);
    set.set_counter_select(0x00ff);
    let request = Request {
        origin: transport.port(),
        at_ns: transport.now_ns(),
        dlid: Some(lid),
        mad: &mad,
    };
    let reply = transport
        .emulator_mut()
        .exchange(request)
        .expect("an answer");
    let answer = PerfMgtMad::new_checked(&reply.mad[..]).unwrap();
    assert_eq!(answer.header().status(), Status::OK);
}
