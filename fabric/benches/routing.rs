//! Routing time, in-process, on a net file: each engine's `unicast` call alone, after the file
//! is read and LIDs given (LMC 0, where the file has none), on 8 data VLs (what ibsim's ports
//! run when OpenSM routes its first sweep). The median of the rounds, in ms.
//!
//! `cargo bench -p ibqos-fabric --bench routing -- NETFILE [ROUNDS [ENGINES]]`, ENGINES a
//! comma-separated list of engine names (default `dfsssp,sssp`); scripts/bench-routing.sh runs
//! it beside OpenSM's DFSSSP.

use std::time::Instant;

use ibqos_fabric::generate::assign_missing_lids;
use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::{ENGINES, RoutingOptions};
use ibqos_qos::VlCount;

fn main() {
    // cargo bench adds `--bench`; every other argument is ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let Some(net) = args.first() else {
        eprintln!(
            "usage: cargo bench -p ibqos-fabric --bench routing -- NETFILE [ROUNDS [ENGINES]]"
        );
        std::process::exit(2);
    };
    let rounds: usize = args
        .get(1)
        .map_or(Ok(3), |r| r.parse())
        .unwrap_or_else(|e| {
            eprintln!("routing bench: ROUNDS: {e}");
            std::process::exit(2);
        });
    let names = args.get(2).map_or("dfsssp,sssp", String::as_str);
    let engines: Vec<_> = names
        .split(',')
        .map(|name| {
            ENGINES
                .iter()
                .find(|e| e.name() == name)
                .unwrap_or_else(|| {
                    eprintln!("routing bench: no engine named {name:?}");
                    std::process::exit(2);
                })
        })
        .collect();
    let mut topo = match parse_net_file(std::path::Path::new(net)) {
        Ok(parsed) => parsed.topology,
        Err(e) => {
            eprintln!("routing bench: {net}: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = assign_missing_lids(&mut topo) {
        eprintln!("routing bench: {net}: {e}");
        std::process::exit(1);
    }
    let options = RoutingOptions::default();
    for engine in engines {
        let mut times: Vec<f64> = (0..rounds.max(1))
            .map(|_| {
                let start = Instant::now();
                let routed = engine.unicast(&topo, &options, VlCount::Eight);
                let ms = start.elapsed().as_secs_f64() * 1e3;
                if let Err(e) = routed {
                    eprintln!("routing bench: {}: {e}", engine.name());
                    std::process::exit(1);
                }
                ms
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!("{} {:.1}", engine.name(), times[times.len() / 2]);
    }
}
