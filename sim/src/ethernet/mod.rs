//! Lossless Ethernet: the models of PFC, the switch buffer, ETS, DCQCN and the host's QoS, the
//! engine's Ethernet link mode that calls them, and the SONiC PFC delay sweep.

pub mod dcqcn;
pub(crate) mod engine;
pub mod ets;
pub mod frame;
pub mod host_qos;
pub mod pfc;
pub mod shared_buffer;
pub mod sonic;
pub(crate) mod state;
