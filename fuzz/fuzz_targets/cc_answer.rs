//! Any bytes answering the congestion control manager's Sets: an answer whose header matches
//! the Set (so it reaches the echo checks, with any status), and the same bytes as they came,
//! as an answer and as a MAD handed back undelivered. The manager takes them without a panic
//! and keeps programming.
#![no_main]

use std::time::{Duration, Instant};

use ibqos_congestion::{CcNodeKind, CcOptions, CcPort, CctOption, CongestionManager};
use ibqos_exchange::{Engine, Peer};
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

fuzz_target!(|answers: Vec<(u8, Vec<u8>)>| {
    let mut now = Instant::now();
    let options = CcOptions {
        enabled: true,
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
        // The Set's own header with the response method and a fuzzed status, the bytes as its
        // log and attribute data.
        let mut bytes = out.mad.clone();
        if bytes.len() > 32 {
            bytes[3] = 0x81;
            bytes[4..6].copy_from_slice(&u16::from(status).to_be_bytes());
            let data = &mut bytes[32..];
            let n = answer.len().min(data.len());
            data[..n].copy_from_slice(&answer[..n]);
        }
        cc.on_mad(now, &bytes, Peer::lid(1));
        cc.on_mad(now, &answer, Peer::lid(2));
        cc.on_dropped(now, &answer);
        cc.on_time(now + Duration::from_secs(1));
    }
    let _ = cc.take_notices();
    let _ = cc.is_idle();
});
