//! OpenSM's congestion control manager as a sans-IO library. After a sweep that routed, the
//! caller hands in the subnet's ports; the manager sends the Sets OpenSM derives from its
//! `congestion_control` and `cc_*` options (SwitchCongestionSetting to switches,
//! CACongestionSetting and the CongestionControlTable to CA ports), keeps what each port
//! answered, and stops programming ports without a usable agent.
//!
//! Nothing here touches a socket or reads a clock: MADs and the time go in, MADs to send and
//! notices to log come out, through [`Engine`](ibqos_exchange::Engine).

pub mod config;
mod manager;
mod reader;
mod wire;

pub use config::{CCT_ENTRIES_MAX, CcData, CcOptions, CctOption, KeyProgram};
pub use manager::{CcDrift, CcNodeKind, CcNotice, CcPort, CongestionManager, PortState};
pub use reader::{CcUnread, CongestionReader};
