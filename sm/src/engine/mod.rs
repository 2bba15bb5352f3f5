//! The sans-IO subnet manager: it consumes received MADs and the time, and produces MADs to
//! send. It never touches a file descriptor or the clock, which is what makes the emulated
//! fabric, fault injection and deterministic tests cheap.

pub mod discovery;
pub mod groups;
pub mod lids;
pub mod pkeys;
pub mod qos;
pub mod routing;
pub mod subnet;
pub mod survey;
pub mod sweep;
pub mod write;
