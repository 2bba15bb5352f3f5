//! Credit loops: the channel dependency graph a fabric's forwarding and SL-to-VL tables make, and
//! its cycles.
//!
//! A lossless link stops sending on a VL when the receiver's buffer for that VL is full. A
//! packet waiting in one channel's buffer for credits on the next channel makes the first
//! depend on the second; a cycle of such dependencies can stop the fabric for good.

mod channel;

pub use channel::{Channel, ChannelDisplay};
