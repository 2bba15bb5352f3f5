//! The LID manager: a base LID for every endport. A CA or router port owns 2^LMC LIDs aligned
//! to that size, a switch's port 0 one LID.
//!
//! A port keeps, in this order of preference, the LID the guid2lid cache of an earlier run gave
//! it, the LID it already holds, or else the lowest free range: so a restarted SM, or a fabric
//! another SM configured, keeps its addresses and nothing has to be re-learned by the hosts.

use std::collections::{BTreeMap, BTreeSet};

use ibqos_mad::Guid;

use super::subnet::{PortKey, Subnet};

/// The highest unicast LID; 0xC000 and up are multicast.
pub const MAX_UNICAST_LID: u16 = 0xbfff;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LidError {
    #[error(
        "the unicast LID space is full: {endports} endports with LMC {lmc} need {needed} LIDs, \
         more than the {MAX_UNICAST_LID} there are"
    )]
    Exhausted {
        endports: usize,
        lmc: u8,
        needed: usize,
    },
    #[error("LMC {0} is out of range 0-7")]
    BadLmc(u8),
}

/// The LMC of an endport when the subnet's is `lmc`: OpenSM gives a base switch port 0 none
/// (`lmc_esp0`, which would give an enhanced port 0 the subnet's, is not supported).
pub fn endport_lmc(is_switch: bool, lmc: u8) -> u8 {
    if is_switch { 0 } else { lmc }
}

/// Gives every endport of `subnet` a base LID and the 2^LMC LIDs after it, its LMC as
/// [`endport_lmc`] says.
pub fn assign_lids(
    subnet: &mut Subnet,
    lmc: u8,
    guid2lid: &BTreeMap<u64, u16>,
) -> Result<(), LidError> {
    if lmc > 7 {
        return Err(LidError::BadLmc(lmc));
    }
    // The SM's own port first, then the rest in OpenSM's port table order (osm_lid_mgr.c: our
    // SM's port, then `port_guid_tbl`), so a fresh fabric gets the LIDs OpenSM gives it.
    let mut order: Vec<(PortKey, u64, u16)> = subnet
        .endports()
        .map(|(guid, port, p)| {
            let is_switch = subnet.nodes.get(&guid).is_some_and(|n| n.is_switch());
            let span = 1u16 << endport_lmc(is_switch, lmc);
            (PortKey::new(guid, port), p.guid, span)
        })
        .collect();
    order.sort_by_key(|(key, guid, _)| (Some(*key) != subnet.sm_port, Guid(*guid).opensm_order()));
    let mut taken: BTreeSet<u16> = BTreeSet::new();
    let free = |taken: &BTreeSet<u16>, lid: u16, span: u16| {
        lid != 0
            && lid.is_multiple_of(span)
            && lid.checked_add(span - 1).is_some_and(|end| {
                end <= MAX_UNICAST_LID && taken.range(lid..=end).next().is_none()
            })
    };
    let mut chosen: BTreeMap<PortKey, u16> = BTreeMap::new();
    let preferences: [&dyn Fn(PortKey) -> Option<u16>; 2] = [
        &|key| {
            subnet
                .port(key)
                .and_then(|p| guid2lid.get(&p.guid).copied())
        },
        &|key| subnet.port(key).map(|p| p.info.lid),
    ];
    for prefer in preferences {
        for &(key, _, span) in &order {
            if chosen.contains_key(&key) {
                continue;
            }
            if let Some(lid) = prefer(key).filter(|lid| free(&taken, *lid, span)) {
                taken.extend(lid..lid + span);
                chosen.insert(key, lid);
            }
        }
    }
    // The rest from a cursor that only moves up, each range aligned to its size: on a fabric
    // without LIDs, OpenSM's free-range search does the same, and leaves the LIDs an alignment
    // skips unused.
    let mut next: u16 = 1;
    for &(key, _, span) in &order {
        if chosen.contains_key(&key) {
            continue;
        }
        let mut lid = next.next_multiple_of(span);
        while lid < MAX_UNICAST_LID && !free(&taken, lid, span) {
            lid = lid.saturating_add(1).next_multiple_of(span);
        }
        if !free(&taken, lid, span) {
            let needed = order.iter().map(|(_, _, span)| usize::from(*span)).sum();
            return Err(LidError::Exhausted {
                endports: order.len(),
                lmc,
                needed,
            });
        }
        taken.extend(lid..lid + span);
        chosen.insert(key, lid);
        next = lid + span;
    }
    for (key, lid) in chosen {
        if let Some(port) = subnet.port_mut(key) {
            port.lid = lid;
        }
    }
    Ok(())
}
