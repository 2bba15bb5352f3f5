//! Any bytes answering the performance manager's queries: a PerfMgt answer whose header matches
//! the query (so it reaches the counters, the overflow clears and the redirection), and the same
//! bytes as they came, as an answer and as a MAD handed back undelivered. The PerfMgr takes
//! them without a panic, and its database still prints in both of OpenSM's formats. The
//! per-VL and per-SL reads (`perfmgr_lanes`) are on, so their answers are fuzzed too.
#![no_main]

use std::time::{Duration, Instant};

use ibqos_exchange::{Engine, Peer};
use ibqos_mad::NodeType;
use ibqos_perfmgr::dump::{DumpFormat, ctime_utc, dump};
use ibqos_perfmgr::{PerfMgr, PerfMgrConfig, SubnetNode, SubnetPort};
use libfuzzer_sys::fuzz_target;

/// A switch with two ports and a CA, so that ClassPortInfo, PortCounters and
/// PortCountersExtended queries and their clears all go out.
fn subnet() -> Vec<SubnetNode> {
    let port = |port, lid| SubnetPort {
        port,
        lid,
        remote: None,
    };
    vec![
        SubnetNode {
            guid: 0x0002_c900_0000_0001,
            description: "S1".into(),
            node_type: NodeType::Switch,
            enhanced_port0: false,
            num_ports: 2,
            ports: vec![port(1, 1), port(2, 1)],
        },
        SubnetNode {
            guid: 0x0002_c900_0000_0002,
            description: "H1/U1".into(),
            node_type: NodeType::Ca,
            enhanced_port0: false,
            num_ports: 1,
            ports: vec![port(1, 2)],
        },
    ]
}

fuzz_target!(|answers: Vec<Vec<u8>>| {
    let mut now = Instant::now();
    let config = PerfMgrConfig {
        lanes: true,
        ..PerfMgrConfig::default()
    };
    let mut pm = PerfMgr::new(config, now, 1_700_000_000);
    pm.set_subnet(subnet());
    for answer in answers {
        now += Duration::from_secs(1);
        pm.sweep(now);
        let Some(out) = pm.poll_transmit(now) else {
            continue;
        };
        // The query's own header with the response method, and the bytes as its data.
        let mut bytes = out.mad.clone();
        if bytes.len() > 64 {
            bytes[3] = 0x81;
            let data = &mut bytes[64..];
            let n = answer.len().min(data.len());
            data[..n].copy_from_slice(&answer[..n]);
        }
        pm.on_mad(now, &bytes, Peer::lid(1));
        pm.on_mad(now, &answer, Peer::lid(2));
        pm.on_dropped(now, &answer);
        pm.on_time(now + Duration::from_secs(5));
    }
    let mut text = String::new();
    for format in [DumpFormat::Human, DumpFormat::Machine] {
        let _ = dump(pm.db(), format, &ctime_utc, &mut text);
    }
    pm.take_notices();
});
