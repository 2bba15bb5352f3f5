//! OpenSM's performance manager (PerfMgr) as a sans-IO library. After each SM sweep the caller
//! hands in the subnet; on its own timer the PerfMgr reads every port's PMA (ClassPortInfo,
//! PortCounters, PortCountersExtended, all on SL 0 as OpenSM), keeps the totals in its
//! database, clears counters close to full, and notices counters cleared behind its back and
//! error counters that grew. The database prints in OpenSM's formats. With `perfmgr_lanes` it
//! also reads the per-VL and per-SL counters and keeps their rates ([`lanes`]).
//!
//! Nothing here touches a socket or a file or reads a clock: MADs and the time go in, MADs to
//! send and notices to log come out, through [`Engine`](ibqos_exchange::Engine).

pub mod config;
pub mod counters;
pub mod db;
pub mod dump;
pub mod lanes;
mod manager;
pub mod notice;

pub use config::PerfMgrConfig;
pub use db::Database;
pub use manager::{PerfMgr, SubnetNode, SubnetPort, SweepState};
pub use notice::{Level, Notice, RemotePort};
