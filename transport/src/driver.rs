//! Drives a sans-IO engine (the subnet [`Manager`], or a read-only survey) over a transport:
//! the only place where the SM meets the clock and the fabric. It sends what the engine polls,
//! waits for the fabric no longer than the engine's next deadline, and hands it what arrives
//! and the time.

use std::time::Duration;

use ibqos_mad::Mad;
use ibqos_sm::engine::Engine;
use ibqos_sm::engine::scheduler::SchedulerConfig;
use ibqos_sm::engine::survey::Survey;
use ibqos_sm::manager::{Event, Manager};

use crate::{Incoming, Transport, TransportError};

/// The tracing target of the records that show every MAD sent and received (OpenSM's FRAMES
/// log flag), at trace level.
pub const FRAMES_TARGET: &str = "ibqos::frames";

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
    next_event_watched(transport, manager, interrupted, &mut |_| {})
}

/// [`next_event`], showing the manager to `watch` each time round the loop (at least every
/// 50 ms), after what was due went out: for what changes between events, such as the
/// SMPs on the wire.
pub fn next_event_watched(
    transport: &mut dyn Transport,
    manager: &mut Manager,
    interrupted: &dyn Fn() -> bool,
    watch: &mut dyn FnMut(&Manager),
) -> Result<Option<Event>, TransportError> {
    let take = |manager: &mut Manager| {
        watch(manager);
        manager.poll_event()
    };
    run_until(transport, manager, take, interrupted)
}

/// A read-only survey of the fabric behind `transport`, run to its end.
pub fn survey(
    transport: &mut dyn Transport,
    config: SchedulerConfig,
) -> Result<Survey, TransportError> {
    let mut survey = Survey::start(config);
    run_until(
        transport,
        &mut survey,
        |s: &mut Survey| s.is_done().then_some(()),
        &|| false,
    )?;
    Ok(survey)
}

/// Feeds `engine` from `transport` until `take` takes something from it, which is returned, or
/// until `interrupted()` says so, which returns `None`.
fn run_until<E: Engine, T>(
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
