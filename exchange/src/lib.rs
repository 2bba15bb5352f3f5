//! The MAD exchange below the subnet manager. It owns where a MAD goes ([`Address`], [`Peer`],
//! [`OutgoingMad`]) and how each management [`class`] travels. Its [`scheduler`] puts requests
//! of any [`Message`] type on the wire, retries them and matches their answers. [`Engine`] is
//! what a transport's driver runs.
//!
//! It knows MADs, not what they are for: the SM, a survey or a client that asks one question
//! all run over it, and every transport speaks its types. Sans-IO: nothing here touches a
//! socket or reads the clock.

// First, so that its macro serves the modules after it.
#[macro_use]
mod message;

mod address;
pub mod class;
mod engine;
pub mod scheduler;
pub mod smp;

pub use address::{Address, OutgoingMad, Peer, Transmit};
pub use engine::Engine;
pub use message::{Gmp, Message};
