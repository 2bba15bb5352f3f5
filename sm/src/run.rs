//! Drives the sans-IO sweep over a transport: the only place where the SM meets the clock and
//! the fabric.

use std::time::{Duration, Instant};

use ibqos_mad::{AttributeId, Method, Smp, SmpRepr};
use tracing::{debug, info, warn};

use crate::engine::scheduler::Transmit;
use crate::engine::sweep::{Sweep, SweepConfig};
use crate::transport::{Address, Incoming, Outgoing, Transport, TransportError};

/// How long to wait for the fabric when nothing is due sooner: long enough not to spin, short
/// enough that a stalled sweep is noticed.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// What arrived that was not an answer to the sweep.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unsolicited {
    pub traps: u64,
    /// Requests to the SM (SMInfo from another SM, SA) that this version does not answer.
    pub requests: u64,
    /// Datagrams that are not SMPs at all.
    pub malformed: u64,
}

/// Runs one sweep to SUBNET UP or failure.
pub fn run_sweep(
    transport: &mut dyn Transport,
    config: SweepConfig,
) -> Result<(Sweep, Unsolicited), TransportError> {
    let mut sweep = Sweep::start(config, Instant::now());
    let mut unsolicited = Unsolicited::default();
    loop {
        let now = Instant::now();
        while let Some(transmit) = sweep.poll_transmit(now) {
            transport.send(&outgoing(&transmit))?;
        }
        if sweep.is_done() {
            return Ok((sweep, unsolicited));
        }
        let wait = sweep
            .next_deadline()
            .map_or(IDLE_WAIT, |d| d.saturating_duration_since(now));
        match transport.recv(wait)? {
            Some(Incoming::Mad { mad, slid }) => match parse(&mad) {
                Some(smp) if smp.method.is_response() => sweep.on_response(Instant::now(), smp),
                Some(smp) => note_request(&smp, slid, &mut unsolicited),
                None => unsolicited.malformed += 1,
            },
            Some(Incoming::Dropped { mad }) => match parse(&mad) {
                Some(smp) => sweep.on_dropped(Instant::now(), smp),
                None => unsolicited.malformed += 1,
            },
            None => {}
        }
        sweep.on_time(Instant::now());
    }
}

fn outgoing(transmit: &Transmit) -> Outgoing {
    let mut mad = [0u8; 256];
    transmit.smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let address = transmit.dlid.map_or(Address::Directed, Address::Lid);
    Outgoing { mad, address }
}

/// An SMP from the fabric, or `None` for anything else (a short datagram, another class).
fn parse(mad: &[u8]) -> Option<SmpRepr> {
    match Smp::new_checked(mad).and_then(|smp| SmpRepr::parse(&smp)) {
        Ok(smp) => Some(smp),
        Err(error) => {
            debug!(%error, len = mad.len(), "not an SMP; dropped");
            None
        }
    }
}

fn note_request(smp: &SmpRepr, slid: u16, unsolicited: &mut Unsolicited) {
    if smp.method == Method::Trap && smp.attribute_id == AttributeId::Notice {
        unsolicited.traps += 1;
        info!(slid, "trap received");
    } else {
        unsolicited.requests += 1;
        warn!(slid, attribute = ?smp.attribute_id, method = ?smp.method, "request to the SM not answered");
    }
}
