//! The sans-IO subnet manager: it consumes received MADs and the time, and produces MADs to
//! send. It never touches a file descriptor or the clock, which is what makes the emulated
//! fabric, fault injection and deterministic tests cheap.

pub mod discovery;
pub mod groups;
pub mod lids;
pub mod pkeys;
pub mod qos;
pub mod routing;
pub mod scheduler;
pub mod subnet;
pub mod survey;
pub mod sweep;
pub mod write;

use std::time::Instant;

use scheduler::{OutgoingMad, Peer};

/// What a transport's driver runs: the manager, or a survey. MADs and the time go in, MADs to
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
