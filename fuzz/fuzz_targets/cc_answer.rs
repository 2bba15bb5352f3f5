//! Any bytes answering the congestion control manager's Gets and Sets (its key programmed and
//! every setting read back): an answer whose header matches the request (so it reaches the
//! echo and read-back checks, with any status), and the same bytes as they came,
//! as an answer and as a MAD handed back undelivered. The manager takes them without a panic
//! and keeps programming. The same answers go to the reader of `ibqos dump --congestion`,
//! whose Gets they answer (a CCTI_Limit of block 0 asks for more blocks): it takes them
//! without a panic, ends, and fills a dump.
#![no_main]

use std::time::{Duration, Instant};

use ibqos_congestion::{
    CcNodeKind, CcOptions, CcPort, CctOption, CongestionManager, CongestionReader, KeyProgram,
};
use ibqos_exchange::scheduler::SchedulerConfig;
use ibqos_exchange::{Engine, Peer};
use ibqos_fabric::dump::FabricDump;
use libfuzzer_sys::fuzz_target;

/// A switch and a CA port, so that every kind of Set goes out, the table in two blocks.
fn ports() -> [CcPort; 2] {
    let port = |guid, port, lid, kind| CcPort {
        port_guid: guid,
        node_guid: guid,
        port,
        lid,
        kind,
    };
    [
        port(0x0002_c900_0000_0001, 0, 1, CcNodeKind::Switch),
        port(0x0002_c900_0000_0002, 1, 2, CcNodeKind::Ca),
    ]
}

/// A dump of a switch (port 0 at LID 1) and a CA (port 1 at LID 2), as a survey reads them.
fn surveyed() -> FabricDump {
    let port = |lid| {
        format!(
            r#"{{"lid":{lid},"port_state":"Active","phys_state":"LinkUp","oper_vls":4,
            "neighbor_mtu":5,"vl_high_limit":0,"hoq_life":0,"vl_stall_count":0,"sl2vl":{{}},
            "vlarb_low":[],"vlarb_high":[]}}"#
        )
    };
    FabricDump::from_json(&format!(
        r#"{{"nodes":{{
        "0x0002c90000000001":{{"name":"S1","kind":"switch","ports":{{"0":{}}}}},
        "0x0002c90000000002":{{"name":"H1","kind":"ca","ports":{{"1":{}}}}}}}}}"#,
        port(1),
        port(2)
    ))
    .expect("a dump")
}

/// `answer` (with `status`) as the answer to `mad`: its header with the response method and
/// the status, the bytes as its log and attribute data.
fn answer_to(mad: &[u8], status: u8, answer: &[u8]) -> Vec<u8> {
    let mut bytes = mad.to_vec();
    if bytes.len() > 32 {
        bytes[3] = 0x81;
        bytes[4..6].copy_from_slice(&u16::from(status).to_be_bytes());
        let data = &mut bytes[32..];
        let n = answer.len().min(data.len());
        data[..n].copy_from_slice(&answer[..n]);
    }
    bytes
}

/// The reader of `ibqos dump --congestion` given `answers`, until it has given up or read all.
fn read_agents(answers: &[(u8, Vec<u8>)]) {
    let mut now = Instant::now();
    let mut dump = surveyed();
    let config = SchedulerConfig {
        max_outstanding: 2,
        timeout: Duration::from_millis(200),
        retries: 1,
    };
    let mut reader = CongestionReader::start(&dump, config);
    let mut answers = answers.iter().cycle().take(4 * answers.len() + 8);
    while !reader.is_done() {
        match (reader.poll_transmit(now), answers.next()) {
            (Some(out), Some((status, answer))) => {
                reader.on_mad(now, &answer_to(&out.mad, *status, answer), Peer::lid(1));
                reader.on_mad(now, answer, Peer::lid(2));
                reader.on_dropped(now, answer);
            }
            _ => {
                now += Duration::from_secs(1);
                reader.on_time(now);
            }
        }
    }
    reader.fill(&mut dump);
    let _ = dump.to_json();
}

fuzz_target!(|answers: Vec<(u8, Vec<u8>)>| {
    read_agents(&answers);
    let mut now = Instant::now();
    let options = CcOptions {
        enabled: true,
        cc_key: 0x1234,
        key_program: Some(KeyProgram {
            protect: true,
            lease_period: 60,
        }),
        switch_control_map: 0x1f,
        ca_control_map: 0xffff,
        cct: (0..70)
            .map(|i| CctOption {
                shift: 1,
                multiplier: i,
            })
            .collect(),
        ..CcOptions::default()
    };
    let mut cc = CongestionManager::new(options);
    for (status, answer) in answers {
        cc.program(&ports(), status & 1 == 0);
        now += Duration::from_millis(300);
        let Some(out) = cc.poll_transmit(now) else {
            cc.on_time(now);
            continue;
        };
        cc.on_mad(now, &answer_to(&out.mad, status, &answer), Peer::lid(1));
        cc.on_mad(now, &answer, Peer::lid(2));
        cc.on_dropped(now, &answer);
        cc.on_time(now + Duration::from_secs(1));
    }
    let _ = cc.take_notices();
    let _ = cc.is_idle();
});
