//! The InfiniBand link: its speeds, widths and wire sizes, the IBA 7.6.9 VL arbiter, and
//! congestion control (IBA annex A10).

pub mod arbiter;
pub mod cc;
pub mod link;
