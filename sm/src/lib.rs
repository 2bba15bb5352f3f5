//! The ibqos subnet manager as a library: a sans-IO sweep engine (discovery, LIDs, routing, link
//! and QoS managers, the reconciler of diff sweeps) over a MAD scheduler. Time and MADs come in,
//! MADs go out; the transports and the loop that drives them are the `ibqos-transport` crate.

pub mod cache;
pub mod config;
pub mod engine;
