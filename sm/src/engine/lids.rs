//! The LID manager: a base LID for every endport (CA and router ports, switch port 0), each
//! owning 2^LMC LIDs aligned to that size.
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

/// Gives every endport of `subnet` a base LID.
pub fn assign_lids(
    subnet: &mut Subnet,
    lmc: u8,
    guid2lid: &BTreeMap<u64, u16>,
) -> Result<(), LidError> {
    if lmc > 7 {
        return Err(LidError::BadLmc(lmc));
    }
    let span = 1u16 << lmc;
    let usable = |lid: u16| {
        lid != 0
            && lid.is_multiple_of(span)
            && lid
                .checked_add(span - 1)
                .is_some_and(|end| end <= MAX_UNICAST_LID)
    };
    // The SM's own port first, then the rest in OpenSM's port table order (osm_lid_mgr.c: our
    // SM's port, then `port_guid_tbl`), so a fresh fabric gets the LIDs OpenSM gives it.
    let mut order: Vec<(PortKey, u64)> = subnet
        .endports()
        .map(|(guid, port, p)| (PortKey::new(guid, port), p.guid))
        .collect();
    order.sort_by_key(|(key, guid)| (Some(*key) != subnet.sm_port, Guid(*guid).opensm_order()));
    let order: Vec<PortKey> = order.into_iter().map(|(key, _)| key).collect();
    let mut taken: BTreeSet<u16> = BTreeSet::new();
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
        for key in &order {
            if chosen.contains_key(key) {
                continue;
            }
            if let Some(lid) = prefer(*key).filter(|lid| usable(*lid) && !taken.contains(lid)) {
                taken.insert(lid);
                chosen.insert(*key, lid);
            }
        }
    }
    let mut next = span;
    for key in &order {
        if chosen.contains_key(key) {
            continue;
        }
        while taken.contains(&next) {
            next = next.checked_add(span).unwrap_or(0);
        }
        if !usable(next) {
            return Err(LidError::Exhausted {
                endports: order.len(),
                lmc,
                needed: order.len() * usize::from(span),
            });
        }
        taken.insert(next);
        chosen.insert(*key, next);
    }
    for (key, lid) in chosen {
        if let Some(port) = subnet.port_mut(key) {
            port.lid = lid;
        }
    }
    Ok(())
}
