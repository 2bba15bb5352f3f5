//! Drives a sans-IO [`Engine`] (the subnet manager, a read-only survey) over a transport: the
//! only place where an engine meets the clock and the fabric. It sends what the engine polls,
//! waits for the fabric no longer than the engine's next deadline, and hands it what arrives
//! and the time. The caller says what it waits for, so the driver names no engine.

use std::time::Duration;

use ibqos_exchange::Engine;
use ibqos_mad::Mad;

use crate::{Incoming, Transport, TransportError};

/// The tracing target of the records that show every MAD sent and received (OpenSM's FRAMES
/// log flag), at trace level.
pub const FRAMES_TARGET: &str = "ibqos::frames";

/// The longest wait for the fabric: long enough not to spin, short enough that an interrupt (a
/// signal) is noticed at once and a stalled sweep soon.
const POLL_STEP: Duration = Duration::from_millis(50);

/// Feeds `engine` from `transport` until `take` takes something from it, which is returned, or
/// until `interrupted()` says so (a signal: deal with it, then call again), which returns `None`.
///
/// `take` is called each time round the loop (at least every 50 ms), after what was due went
/// out: it may also look at what changes between events, such as the MADs on the wire.
pub fn drive<E: Engine, T>(
    transport: &mut dyn Transport,
    engine: &mut E,
    mut take: impl FnMut(&mut E) -> Option<T>,
    interrupted: &dyn Fn() -> bool,
) -> Result<Option<T>, TransportError> {
    loop {
        let now = transport.now();
        while let Some(mad) = engine.poll_transmit(now) {
            log_frame("sent", &mad.mad);
            transport.send(&mad)?;
        }
        if let Some(taken) = take(engine) {
            return Ok(Some(taken));
        }
        if interrupted() {
            return Ok(None);
        }
        let wait = engine.next_deadline().map_or(POLL_STEP, |d| {
            d.saturating_duration_since(now).min(POLL_STEP)
        });
        match transport.recv(wait)? {
            Some(Incoming::Mad { mad, from }) => {
                log_frame("received", &mad);
                engine.on_mad(transport.now(), &mad, from)
            }
            Some(Incoming::Dropped { mad }) => engine.on_dropped(transport.now(), &mad),
            None => {}
        }
        engine.on_time(transport.now());
    }
}

/// One record of a MAD's header, `direction` "sent" or "received", when frames are logged.
fn log_frame(direction: &str, mad: &[u8]) {
    if !tracing::enabled!(target: FRAMES_TARGET, tracing::Level::TRACE) {
        return;
    }
    match Mad::new_checked(mad) {
        Ok(header) => tracing::trace!(
            target: FRAMES_TARGET,
            direction,
            class = ?header.mgmt_class(),
            method = ?header.method(),
            attribute = ?header.attribute_id(),
            modifier = format_args!("{:#x}", header.attribute_modifier()),
            status = format_args!("{:#06x}", header.status().0),
            tid = format_args!("{:#018x}", header.transaction_id()),
            "MAD"
        ),
        Err(_) => tracing::trace!(
            target: FRAMES_TARGET,
            direction,
            bytes = mad.len(),
            "MAD shorter than its header"
        ),
    }
}
