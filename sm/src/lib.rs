//! The ibqos subnet manager as a library: the SM's lifetime ([`manager`]: which sweep comes next
//! and why, its [`responder`] for what reaches it unasked, and its subnet administrator, [`sa`]), a sans-IO sweep engine
//! (discovery, LIDs, routing, link and QoS managers, the reconciler of diff sweeps) over the
//! MAD scheduler of `ibqos-exchange`, and the per-sweep [`summary`]. Time and MADs come in, MADs and events go out; the
//! transports and the loop that drives them are the `ibqos-transport` crate.

pub mod cache;
pub mod config;
pub mod congestion;
pub mod counters;
pub mod dumps;
pub mod election;
pub mod engine;
pub mod manager;
pub mod mkey;
pub mod perf;
pub mod qos_report;
pub mod responder;
pub mod sa;
pub mod summary;
#[cfg(test)]
mod testing;
