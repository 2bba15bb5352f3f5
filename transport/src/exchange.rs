//! One request through the [`Scheduler`] over a transport, for a client that asks a question
//! and waits for its answer (`ibqos query`; an SMP, or a GMP of any class): the same TIDs, retries, timeouts and response
//! matching as a sweep, driven by the smallest loop that gives it the clock and the fabric.

use std::time::Duration;

use ibqos_exchange::scheduler::{Completion, Request, Scheduler};
use ibqos_exchange::{Message, OutgoingMad};
use ibqos_mad::Mad;

use crate::{Incoming, Transport, TransportError};

/// Submits `request` and drives `scheduler` over `transport` until it completes: an answer, or
/// a failure once its retries are spent. The scheduler must hold nothing else, since the first
/// completion is taken to be this request's. What reaches the port and is no response (a trap,
/// a request for an SM) is not for a client and is left unanswered.
pub fn exchange<C, M: Message>(
    transport: &mut dyn Transport,
    scheduler: &mut Scheduler<C, M>,
    request: Request<C, M>,
) -> Result<Completion<C, M>, TransportError> {
    scheduler.submit(request);
    loop {
        let now = transport.now();
        if let Some(done) = scheduler.poll_timeouts(now).into_iter().next() {
            return Ok(done);
        }
        while let Some(transmit) = scheduler.poll_transmit(now) {
            transport.send(&OutgoingMad::from(&transmit))?;
        }
        let wait = scheduler
            .next_deadline()
            .map_or(Duration::ZERO, |deadline| {
                deadline.saturating_duration_since(now)
            });
        let done = match transport.recv(wait)? {
            Some(Incoming::Mad { mad, .. }) => M::from_bytes(&mad)
                .filter(|answer| answer.method().is_response())
                .and_then(|response| scheduler.on_response(response)),
            Some(Incoming::Dropped { mad }) => Mad::new_checked(&mad[..])
                .ok()
                .and_then(|header| scheduler.on_dropped_header(&header)),
            None => None,
        };
        if let Some(done) = done {
            return Ok(done);
        }
    }
}
