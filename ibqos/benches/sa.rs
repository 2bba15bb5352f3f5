//! SA throughput: PathRecord Gets answered per second by the SM's subnet administrator, on an
//! emulated fat tree of 10,416 LIDs (176 switches, 10,240 HCAs: `ibqos fabric gen fat-tree
//! --leaves 128 --spines 48 --hosts 80 --radix 128`).
//!
//! `cargo bench -p ibqos --bench sa [-- QUERIES]` (default 200,000). The SM brings the
//! fabric up in virtual time, then answers PathRecord Gets between host pairs drawn from a seeded
//! generator, as rdma_cm asks them (SGID/DGID as LIDs here: SLID | DLID | Reversible |
//! NumbPath), one at a time through the manager: parse, look up, walk the LFTs both ways,
//! build the answer. Prints the rate, and the time to bring the fabric up for scale. A timing
//! belongs here, never in a test.

use std::collections::BTreeMap;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use ibqos_emu::{Emulator, attach_port};
use ibqos_exchange::{Address, Peer};
use ibqos_fabric::generate::fat_tree;
use ibqos_mad::sa::{PathRecord, PathRecordRepr, Record, SA_CLASS_VERSION, SaAttributeId, SaMad};
use ibqos_mad::{AttributeId, Guid, Method, MgmtClass, Status};
use ibqos_opensm::{Format, load_bytes};
use ibqos_sm::manager::{Event, Manager, Run};
use ibqos_transport::Transport;
use ibqos_transport::driver::drive;
use ibqos_transport::emulated::EmulatedTransport;

fn main() {
    let queries: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let topology = fat_tree(128, 48, 80, 128).expect("the fat tree");
    let attach = attach_port(&topology, None).expect("a host to attach at");
    let mut transport =
        EmulatedTransport::virtual_time(Emulator::new(topology).expect("emulator"), attach);
    let settings = load_bytes("(defaults)", b"", Format::OpenSmConf)
        .expect("defaults")
        .settings;
    let port_guid = transport.local_port().port_guid;
    let mut manager = Manager::new(Run::Daemon, &settings, BTreeMap::new(), Guid(port_guid));
    let started = Instant::now();
    loop {
        let event = drive(&mut transport, &mut manager, Manager::poll_event, &|| false)
            .expect("the emulated fabric")
            .expect("nothing interrupts");
        if matches!(event, Event::SweepDone(_)) {
            break;
        }
    }
    let bring_up = started.elapsed();
    let hosts: Vec<u16> = {
        let sweep = manager.last_sweep().expect("a sweep ended");
        sweep
            .subnet()
            .endports()
            .filter(|(guid, _, _)| !sweep.subnet().nodes[guid].is_switch())
            .map(|(_, _, port)| port.lid)
            .collect()
    };
    let mut rng = Pcg64::seed_from_u64(11);
    let mut next = || hosts[rng.random_range(0..hosts.len())];
    let mask = (1 << 4) | (1 << 5) | (1 << 11) | (1 << 12);
    let mut template = [0u8; 64];
    let blank = PathRecordRepr::parse_bytes(&template).expect("64 bytes");
    let now = transport.now();
    let mut answered = 0usize;
    let timer = Instant::now();
    for _ in 0..queries {
        let (slid, dlid) = (next(), next());
        PathRecordRepr {
            slid,
            dlid,
            reversible: true,
            numb_path: 1,
            ..blank
        }
        .emit(&mut PathRecord::new_unchecked(&mut template[..]));
        let mad = request(mask, &template);
        let from = Peer {
            lid: slid,
            qp: 1,
            pkey_index: 0,
        };
        manager.on_mad(now, &mad, from);
        while let Some(out) = manager.poll_transmit(now) {
            if out.address == Address::Peer(from) {
                let status = SaMad::new_checked(&out.mad[..]).expect("an SA answer");
                if status.header().status() == Status::OK {
                    answered += 1;
                }
            }
        }
    }
    let elapsed = timer.elapsed();
    println!(
        "fabric: {} hosts; brought up in {:.2} s (virtual-time emulation, release build)",
        hosts.len(),
        bring_up.as_secs_f64()
    );
    println!(
        "PathRecord Gets: {queries} in {:.3} s = {:.0} per second; {answered} answered with a path",
        elapsed.as_secs_f64(),
        queries as f64 / elapsed.as_secs_f64()
    );
}

/// A SubnAdmGet(PathRecord) with `template` as its record.
fn request(mask: u64, template: &[u8; 64]) -> [u8; 256] {
    let mut mad = [0u8; 256];
    let mut view = SaMad::new_unchecked(&mut mad[..]);
    let mut header = view.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::SubnAdm);
    header.set_class_version(SA_CLASS_VERSION);
    header.set_method(Method::Get);
    header.set_transaction_id(0x0001_0000_0000_0001);
    header.set_attribute_id(AttributeId::from(u16::from(SaAttributeId::PathRecord)));
    view.set_component_mask(mask);
    view.data_mut()[..64].copy_from_slice(template);
    mad
}
