//! A management class the SM does not use, through the exchange: a PerfMgt (class 0x04)
//! ClassPortInfo Get, scheduled, sent and matched as the SM's SMPs are, to a switch's PMA on
//! the emulated fabric and under ibsim. Adding the class took its wire layout (mad's
//! PerfMgtMad and ClassPortInfo) and this handler, nothing in the exchange or the transports.
//!
//! The switch is S1 of fabric/data/two-switch.net, one hop from the client, addressed by the
//! LID an SM gave it. ibsim's PMAs (and the emulated ones, which answer as they do) say class
//! version 1, PortCountersExtended, PortXmitWait and, on a switch, AllPortSelect.

use std::collections::BTreeMap;
use std::time::Duration;

use ibqos_emu::{Emulator, attach_port, load_topology};
use ibqos_exchange::Gmp;
use ibqos_exchange::scheduler::{Completion, Request, Scheduler, SchedulerConfig};
use ibqos_fabric::PortRef;
use ibqos_mad::{
    AttributeId, ClassPortInfo, ClassPortInfoRepr, DrPath, Guid, Method, MgmtClass,
    PerfAttributeId, PerfCapabilityMask, PerfMgtMad, PortInfo, PortInfoRepr, Routing, SmpRepr,
};
use ibqos_sm::manager::{Event, Manager, Run};
use ibqos_tests::SimTools;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::fresh_ibsim;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_transport::driver::drive;
use ibqos_transport::emulated::EmulatedTransport;
use ibqos_transport::exchange::exchange;
use ibqos_transport::ibsim::IbsimTransport;
use ibqos_transport::{Role, Transport};

/// The PerfMgt class version of IBA 16.1.1, the one every PMA here implements.
const PERF_CLASS_VERSION: u8 = 1;

const CONFIG: SchedulerConfig = SchedulerConfig {
    max_outstanding: 1,
    timeout: Duration::from_millis(500),
    retries: 2,
};

/// What a switch's PMA answers: ibsim's (emu/src/perf.rs answers the same).
fn switch_capabilities() -> PerfCapabilityMask {
    PerfCapabilityMask::ALL_PORT_SELECT
        | PerfCapabilityMask::EXTENDED_WIDTH
        | PerfCapabilityMask::PORT_XMIT_WAIT
}

/// The answer of one request through the exchange, which must come.
fn answered<M: ibqos_exchange::Message>(
    transport: &mut dyn Transport,
    mad: M,
    dlid: Option<u16>,
) -> M {
    let mut scheduler = Scheduler::new(CONFIG);
    let request = Request {
        mad,
        dlid,
        node: 0,
        timeout: None,
        context: (),
    };
    match exchange(transport, &mut scheduler, request).unwrap() {
        Completion::Answered { response, .. } => response,
        Completion::Failed { failure, .. } => panic!("no answer: {failure}"),
    }
}

/// The LID of S1, one hop from the client, read from its port 0's PortInfo.
fn s1_lid(transport: &mut dyn Transport) -> u16 {
    let route = Routing::Directed(DrPath::request(&[1]).unwrap());
    let smp = answered(
        transport,
        SmpRepr::get(AttributeId::PortInfo, 0, 0, route),
        None,
    );
    let info = PortInfoRepr::parse(&PortInfo::new_checked(&smp.data[..]).unwrap()).unwrap();
    assert_ne!(info.lid, 0, "the SM gave S1 no LID");
    info.lid
}

/// The ClassPortInfo of the PMA at `lid`, by a PerfMgt Get through the exchange.
fn perf_class_port_info(transport: &mut dyn Transport, lid: u16) -> ClassPortInfoRepr {
    let get = Gmp::get(
        MgmtClass::PerfMgt,
        PERF_CLASS_VERSION,
        AttributeId::from(u16::from(PerfAttributeId::ClassPortInfo)),
        0,
    );
    let answer = answered(transport, get, Some(lid));
    assert_eq!(
        (answer.class, answer.method),
        (MgmtClass::PerfMgt, Method::GetResp)
    );
    let bytes = ibqos_exchange::Message::to_bytes(&answer);
    let mad = PerfMgtMad::new_checked(&bytes[..]).unwrap();
    ClassPortInfoRepr::parse(&ClassPortInfo::new_checked(mad.data()).unwrap()).unwrap()
}

fn assert_switch_pma(info: &ClassPortInfoRepr) {
    assert_eq!(info.base_version, 1);
    assert_eq!(info.class_version, PERF_CLASS_VERSION);
    assert_eq!(info.capability_mask, switch_capabilities());
    assert_eq!(info.resp_time_value, 0x12, "about a second, ibsim's");
    assert_eq!(info.redirect_lid, 0, "no redirection");
}

#[test]
fn perfmgt_class_port_info_through_the_exchange_on_the_emulated_fabric() {
    let topology = load_topology("two-switch").unwrap().topology;
    let attach = attach_port(&topology, Some("H1")).unwrap();
    let s1 = topology.node_by_name("S1").unwrap();
    let mut transport = EmulatedTransport::virtual_time(Emulator::new(topology).unwrap(), attach);
    let settings = ibqos_opensm::Settings::default();
    let port_guid = transport.local_port().port_guid;
    let mut manager = Manager::new(Run::Daemon, &settings, BTreeMap::new(), Guid(port_guid));
    let summary = loop {
        let event = drive(&mut transport, &mut manager, Manager::poll_event, &|| false).unwrap();
        if let Some(Event::SweepDone(summary)) = event {
            break summary;
        }
    };
    assert!(summary.subnet_up, "{summary:?}");

    let lid = s1_lid(&mut transport);
    let s1_port0 = transport.emulator().port_info(PortRef::new(s1, 0)).unwrap();
    assert_eq!(lid, s1_port0.lid);
    assert_switch_pma(&perf_class_port_info(&mut transport, lid));
}

#[test]
fn perfmgt_class_port_info_through_the_exchange_under_ibsim() {
    let (sim, dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "exchange-perfmgt").unwrap();
    let ibqos = ibqos_binary().unwrap();
    SmInvocation::new(SmFabric::Native, "H1", dir.path())
        .run_up(&ibqos, &sim)
        .unwrap();
    let mut client = IbsimTransport::connect(sim.sockname(), "H2", Role::Client).unwrap();
    let lid = s1_lid(&mut client);
    assert_switch_pma(&perf_class_port_info(&mut client, lid));
}
