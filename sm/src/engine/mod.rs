//! The sans-IO subnet manager: it consumes received MADs and the time, and produces MADs to
//! send. It never touches a file descriptor or the clock, which is what makes the emulated
//! fabric, fault injection and deterministic tests cheap.

pub mod credit_loops;
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

use std::collections::BTreeMap;

/// Adds each count of `from` to the same key's in `to`: how the counts a sweep keeps per key
/// (its table writes, its scheduler's timeouts) add up across sweeps.
pub(crate) fn add_counts<K: Ord + Copy>(to: &mut BTreeMap<K, u64>, from: &BTreeMap<K, u64>) {
    for (key, count) in from {
        *to.entry(*key).or_default() += count;
    }
}
