//! The SONiC PFC pause response-time test plan as a sweep: the same lossless-Ethernet run once
//! per PFC delay (`[pfc] pfc_delay`, in quanta), each judged by the plan's four checks.
//!
//! The plan's roles are read off the run: the *test* priorities are those the pause storms
//! pause, the *test* flows those on a test priority, the *background* flows the others. Its
//! checks, per delay:
//! 1. the background is fully delivered: every background packet sent was delivered (none
//!    dropped, none still in flight, so the flows must stop before the run ends);
//! 2. no test frame is delivered;
//! 3. the test bytes transmitted (the frames the test flows' source ports sent on the test
//!    priorities) against the switch's shared buffer size (`[buffer] shared_buffer_bytes`):
//!    below it while the headroom holds what is in flight, above it once the sender's delay
//!    lets through more than the buffer could ever hold;
//! 4. the ingress drops of the test priorities where the test traffic enters the switch: zero
//!    while the headroom is not exceeded, above zero after.

use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{SimOptions, simulate};
use crate::network::{Flow, Network, NetworkError};
use crate::report::Report;

/// One PFC delay's outcome: what the plan's checks compare, and their verdicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PfcDelayCheck {
    pub pfc_delay: u32,
    pub background_sent: u64,
    pub background_delivered: u64,
    pub test_delivered: u64,
    /// Frame bytes the test flows' sources sent on the test priorities.
    pub test_tx_bytes: u64,
    pub shared_buffer_bytes: u64,
    /// Test-priority frames dropped where the test traffic enters the switch.
    pub ingress_drops: u64,
    /// Check 1: every background packet sent was delivered.
    pub all_background_delivered: bool,
    /// Check 2: no test frame reached its destination.
    pub no_test_delivered: bool,
    /// Check 3: the test bytes transmitted stayed below the shared buffer size.
    pub tx_below_buffer: bool,
}

/// Runs `flows` over `network` (which must be Ethernet, with at least one pause storm) once per
/// delay in `delays`, with `[pfc] pfc_delay` set to it.
pub fn sweep_pfc_delay(
    network: &Network,
    flows: &[Flow],
    options: SimOptions,
    delays: &[u32],
) -> Result<Vec<PfcDelayCheck>, NetworkError> {
    let Some(ethernet) = &network.ethernet else {
        return Err(NetworkError::BadEthernet(
            "the PFC delay sweep is for lossless Ethernet: give [link] flow_control = \"pfc\""
                .into(),
        ));
    };
    let test_priorities = ethernet
        .storms
        .iter()
        .flat_map(|s| &s.config.priorities)
        .fold(0u8, |mask, &p| {
            mask | 1u8.checked_shl(u32::from(p)).unwrap_or(0)
        });
    if test_priorities == 0 {
        return Err(NetworkError::BadEthernet(
            "the PFC delay sweep needs a [[storm]]: its priorities are the test traffic's".into(),
        ));
    }
    let mut network = network.clone();
    delays
        .iter()
        .map(|&delay| {
            if let Some(eth) = &mut network.ethernet {
                eth.pfc.pfc_delay = delay;
            }
            let report = simulate(&network, flows, options)?;
            Ok(check(
                &report,
                delay,
                test_priorities,
                ethernet.buffer.shared_buffer_bytes,
            ))
        })
        .collect()
}

/// The plan's figures of one run.
fn check(report: &Report, pfc_delay: u32, test: u8, shared_buffer_bytes: u64) -> PfcDelayCheck {
    let is_test = |priority: u8| priority < 8 && test >> priority & 1 != 0;
    let mut row = PfcDelayCheck {
        pfc_delay,
        background_sent: 0,
        background_delivered: 0,
        test_delivered: 0,
        test_tx_bytes: 0,
        shared_buffer_bytes,
        ingress_drops: 0,
        all_background_delivered: false,
        no_test_delivered: false,
        tx_below_buffer: false,
    };
    let mut sources: Vec<&str> = Vec::new();
    for flow in &report.flows {
        if is_test(flow.sl) {
            row.test_delivered += flow.delivered_packets;
            if !sources.contains(&&*flow.src) {
                sources.push(&flow.src);
            }
        } else {
            row.background_sent += flow.sent_packets;
            row.background_delivered += flow.delivered_packets;
        }
    }
    let entering = report
        .links
        .iter()
        .filter(|l| sources.contains(&l.from.as_str()))
        .filter_map(|l| l.ethernet.as_ref())
        .flat_map(|e| &e.priorities)
        .filter(|p| is_test(p.priority));
    for p in entering {
        row.test_tx_bytes += p.bytes;
        row.ingress_drops += p.dropped_packets;
    }
    row.all_background_delivered = row.background_delivered == row.background_sent;
    row.no_test_delivered = row.test_delivered == 0;
    row.tx_below_buffer = row.test_tx_bytes < row.shared_buffer_bytes;
    row
}

/// The sweep as the plan's table: one row per delay, each check's figures and verdict.
pub fn pfc_delay_table(rows: &[PfcDelayCheck]) -> String {
    let mut out = String::new();
    let yes = |ok: bool| if ok { "yes" } else { "NO" };
    let _ = writeln!(
        out,
        "{:>10} {:>20} {:>14} {:>26} {:>14}",
        "pfc_delay", "background", "test frames", "test tx bytes", "ingress"
    );
    let _ = writeln!(
        out,
        "{:>10} {:>20} {:>14} {:>26} {:>14}",
        "(quanta)", "all delivered", "delivered", "vs shared buffer", "drops"
    );
    for row in rows {
        let relation = if row.tx_below_buffer { "<" } else { ">=" };
        let _ = writeln!(
            out,
            "{:>10} {:>20} {:>14} {:>26} {:>14}",
            row.pfc_delay,
            format!(
                "{} {}/{}",
                yes(row.all_background_delivered),
                row.background_delivered,
                row.background_sent
            ),
            format!("{} {}", yes(row.no_test_delivered), row.test_delivered),
            format!(
                "{} {relation} {}",
                row.test_tx_bytes, row.shared_buffer_bytes
            ),
            row.ingress_drops
        );
    }
    out
}
