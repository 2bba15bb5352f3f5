//! Drives a sans-IO engine (the subnet [`Manager`], or a read-only survey) over a transport:
//! the only place where the SM meets the clock and the fabric. It sends what the engine polls,
//! waits for the fabric no longer than the engine's next deadline, and hands it what arrives
//! and the time.

use std::time::Duration;

use ibqos_sm::engine::Engine;
use ibqos_sm::engine::scheduler::SchedulerConfig;
use ibqos_sm::engine::survey::Survey;
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
            Some(Incoming::Mad { mad, from }) => engine.on_mad(transport.now(), &mad, from),
            Some(Incoming::Dropped { mad }) => engine.on_dropped(transport.now(), &mad),
            None => {}
        }
        engine.on_time(transport.now());
    }
}
