//! What a transport's driver runs.

use std::time::Instant;

use crate::{OutgoingMad, Peer};

/// What a transport's driver runs: the SM, a read-only survey, any user of MADs. MADs and the time go in, MADs to
/// send come out; the caller owns the clock and the fabric.
pub trait Engine {
    /// The next MAD to send, if any is due.
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad>;
    /// When [`on_time`](Engine::on_time) is next needed; `None` when nothing is timed.
    fn next_deadline(&self) -> Option<Instant>;
    /// A MAD from `from` (LID 0xFFFF for a directed-route MAD).
    fn on_mad(&mut self, now: Instant, mad: &[u8], from: Peer);
    /// One of the engine's own MADs handed back undelivered (whole, or only its header).
    fn on_dropped(&mut self, now: Instant, mad: &[u8]);
    /// Time has passed.
    fn on_time(&mut self, now: Instant);
}
