//! Drives the sans-IO subnet manager over a transport: the only place where the SM meets the
//! clock and the fabric. It sends what the [`Manager`] polls, waits for the fabric no longer
//! than the manager's next deadline, and hands it what arrives and the time.

use std::time::Duration;

use ibqos_sm::manager::{Event, Manager};

use crate::{Incoming, Transport, TransportError};

/// The longest wait for the fabric: long enough not to spin, short enough that an interrupt (a
/// signal) is noticed at once and a stalled sweep soon.
const POLL_STEP: Duration = Duration::from_millis(50);

/// Feeds `manager` from `transport` until it has an event, which is returned, or until
/// `interrupted()` says so (a signal: tell the manager, then call again), which returns `None`.
pub fn next_event(
    transport: &mut dyn Transport,
    manager: &mut Manager,
    interrupted: &dyn Fn() -> bool,
) -> Result<Option<Event>, TransportError> {
    loop {
        let now = transport.now();
        while let Some(mad) = manager.poll_transmit(now) {
            transport.send(&mad)?;
        }
        if let Some(event) = manager.poll_event() {
            return Ok(Some(event));
        }
        if interrupted() {
            return Ok(None);
        }
        let wait = manager.next_deadline().map_or(POLL_STEP, |d| {
            d.saturating_duration_since(now).min(POLL_STEP)
        });
        match transport.recv(wait)? {
            Some(Incoming::Mad { mad, from }) => manager.on_mad(transport.now(), &mad, from),
            Some(Incoming::Dropped { mad }) => manager.on_dropped(transport.now(), &mad),
            None => {}
        }
        manager.on_time(transport.now());
    }
}
