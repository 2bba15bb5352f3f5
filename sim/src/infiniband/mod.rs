//! The InfiniBand link: its speeds, widths and wire sizes, and the IBA 7.6.9 VL arbiter.

pub mod arbiter;
pub mod link;
