//! The partition manager: from a subnet's partitions to the P_Key table of every end port and
//! of every switch port facing one, placed entry for entry as OpenSM 3.3.23's
//! `osm_pkey_mgr.c` places them, and the partition enforcement of switch ports.
//!
//! Pure functions: the sweep reads the tables the ports hold, hands them here, and sends the
//! blocks that differ.

use std::collections::{BTreeMap, VecDeque};

/// Entries in one P_KeyTable block.
pub const BLOCK: usize = 32;

/// The full-member bit of a P_Key.
const FULL: u16 = 0x8000;

/// The default partition, full member.
const DEFAULT_FULL: u16 = 0xffff;

/// The P_Key without its membership bit.
fn base(pkey: u16) -> u16 {
    pkey & !FULL
}

/// An entry with base 0 holds no P_Key (`ib_pkey_is_invalid`).
fn is_valid(pkey: u16) -> bool {
    base(pkey) != 0
}

/// Which P_Keys count as the same entry: with `allow_both_pkeys` the membership bit tells two
/// apart, without it only the base counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyRule {
    pub allow_both_pkeys: bool,
}

impl KeyRule {
    /// What a P_Key is found by in a port's table.
    pub fn key(self, pkey: u16) -> u16 {
        if self.allow_both_pkeys {
            pkey
        } else {
            base(pkey)
        }
    }

    fn same(self, a: u16, b: u16) -> bool {
        self.key(a) == self.key(b)
    }
}

/// Where a port's P_Keys went in earlier sweeps (OpenSM's `accum_pkeys` and `last_pkey_idx`):
/// with `keep_pkey_indexes` a P_Key keeps its index from sweep to sweep, and new ones go after
/// the last index ever used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PkeyIndexes {
    index_of: BTreeMap<u16, u16>,
    /// One past the highest index in `index_of`, or 0.
    end: u16,
}

impl PkeyIndexes {
    fn remember(&mut self, pkey: u16, index: u16) {
        self.end = self.end.max(index + 1);
        self.index_of.insert(pkey, index);
    }

    /// `clear_accum_pkey_index`: forgets the P_Key remembered at `index` (the first in
    /// OpenSM's map order, the byte-swapped P_Key, should there be several).
    fn forget_index(&mut self, index: u16) {
        let found = self
            .index_of
            .iter()
            .filter(|(_, i)| **i == index)
            .map(|(pkey, _)| *pkey)
            .min_by_key(|pkey| pkey.swap_bytes());
        if let Some(pkey) = found {
            self.index_of.remove(&pkey);
            if self.end == index + 1 {
                self.end = self.index_of.values().map(|i| i + 1).max().unwrap_or(0);
            }
        }
    }
}

/// One end port's P_Keys to place.
#[derive(Debug, Clone, Copy)]
pub struct PortPkeys<'a> {
    /// The P_Keys the port is to hold, in the order OpenSM queues them.
    pub wanted: &'a [u16],
    /// The table the port holds, every block read (an unreadable block as zeros).
    pub held: &'a [u16],
    /// The P_Key an `indx0` partition puts at index 0.
    pub indx0: Option<u16>,
    /// How many entries the port has (NodeInfo.PartitionCap).
    pub capacity: u16,
    pub rule: KeyRule,
}

/// A port's table as the partition manager leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// As long as the table read.
    pub table: Vec<u16>,
    /// P_Keys that did not fit (OpenSM ERR 0512).
    pub left_out: Vec<u16>,
}

/// A P_Key waiting for its place (`osm_pending_pkey_t`).
struct Pending {
    pkey: u16,
    /// Where the port holds it already, if it keeps that place.
    kept_at: Option<u16>,
}

/// Places an end port's P_Keys (`pkey_mgr_process_physical_port` for each partition, then
/// `pkey_mgr_update_port`). A P_Key the port holds keeps its index, unless index 0 must hold the
/// `indx0` or the default P_Key. A P_Key placed in an earlier sweep goes back to its index. A new
/// one goes after the last index used, or into the first free entry when the table ends there.
pub fn place(port: PortPkeys<'_>, indexes: &mut PkeyIndexes) -> Placed {
    let rule = port.rule;
    let indx0 = port.indx0.unwrap_or(0);
    // `osm_pkey_tbl_set` keys the table by the first valid entry of each P_Key.
    let mut held_at: BTreeMap<u16, u16> = BTreeMap::new();
    for (index, &pkey) in port.held.iter().enumerate() {
        if is_valid(pkey) {
            held_at.entry(rule.key(pkey)).or_insert(index as u16);
        }
    }
    let mut pending = VecDeque::new();
    for &pkey in port.wanted {
        let mut kept_at = held_at.get(&rule.key(pkey)).copied();
        if let Some(at) = kept_at {
            let moves = if indx0 != 0 {
                // The indx0 P_Key goes to 0; whatever else is at 0 leaves it.
                rule.same(pkey, indx0) != (at == 0)
            } else if at == 0 {
                base(pkey) != base(DEFAULT_FULL)
            } else {
                rule.same(pkey, DEFAULT_FULL)
            };
            if moves {
                indexes.forget_index(at);
                kept_at = None;
            }
        }
        let entry = Pending { pkey, kept_at };
        // Kept P_Keys are placed first, the last queued first; new ones after, in order.
        match kept_at {
            Some(_) => pending.push_front(entry),
            None => pending.push_back(entry),
        }
    }

    let mut table = vec![0u16; port.held.len()];
    let mut left_out = Vec::new();
    while let Some(entry) = pending.pop_front() {
        let pkey = entry.pkey;
        let (index, remembered) = match entry.kept_at {
            Some(at) => (Some(at), false),
            None => match indexes.index_of.get(&pkey).copied() {
                Some(at) if rule.same(pkey, indx0) || (pkey != indx0 && at == 0) => {
                    // Index 0 is not this P_Key's (or is, and it goes there anew).
                    indexes.forget_index(at);
                    pending.push_back(entry);
                    continue;
                }
                Some(at) => (Some(at), true),
                None => (new_index(pkey, &port, indexes, &table), false),
            },
        };
        let Some(index) = index.filter(|i| usize::from(*i) < table.len()) else {
            left_out.push(pkey);
            continue;
        };
        table[usize::from(index)] = pkey;
        if !remembered {
            indexes.remember(pkey, index);
        }
    }
    Placed { table, left_out }
}

/// Where a P_Key the port neither holds nor held goes: index 0 for the default P_Key (or the
/// `indx0` one), else after the last index used (1 on a fresh table); past the end of the
/// table, the first free entry from index 1 (never for the default P_Key).
fn new_index(
    pkey: u16,
    port: &PortPkeys<'_>,
    indexes: &mut PkeyIndexes,
    table: &[u16],
) -> Option<u16> {
    let rule = port.rule;
    let index = match port.indx0 {
        Some(indx0) if rule.same(pkey, indx0) => 0,
        None if rule.same(pkey, DEFAULT_FULL) => 0,
        _ => indexes.end.max(1),
    };
    if index < port.capacity {
        return Some(index);
    }
    if rule.same(pkey, DEFAULT_FULL) {
        return None;
    }
    let free = (1..table.len()).find(|&i| !is_valid(table[i]))? as u16;
    if free >= port.capacity {
        return None;
    }
    indexes.forget_index(free);
    Some(free)
}

/// OpenSM's `part_enforce`: which directions a switch port facing an end port checks P_Keys
/// in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartEnforce {
    #[default]
    Both,
    In,
    Out,
    Off,
}

impl PartEnforce {
    /// OpenSM's reading of the option (`osm_subnet.c`): `both`, `in`, `out` or `off`;
    /// anything else is `both`.
    pub fn parse(text: &str) -> PartEnforce {
        match text {
            "in" => PartEnforce::In,
            "out" => PartEnforce::Out,
            "off" => PartEnforce::Off,
            _ => PartEnforce::Both,
        }
    }

    /// PortInfo's PartitionEnforcementInbound and Outbound.
    pub fn bits(self) -> (bool, bool) {
        match self {
            PartEnforce::Both => (true, true),
            PartEnforce::In => (true, false),
            PartEnforce::Out => (false, true),
            PartEnforce::Off => (false, false),
        }
    }
}

/// What the switch port facing an end port gets (`pkey_mgr_update_peer_port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerPlan {
    /// The blocks to write, by block number: the end port's P_Keys in table order, packed from
    /// index 0, a limited P_Key left out where the full one is there too. Blocks past the last
    /// one written are left as they are.
    pub blocks: Vec<(u16, [u16; BLOCK])>,
    /// The enforcement the port is to run.
    pub enforce: PartEnforce,
}

/// The table and enforcement of the switch port facing an end port whose table is `table`,
/// for a switch with `enforcement_cap` entries per port (SwitchInfo.PartitionEnforcementCap).
/// `None`: the switch cannot enforce partitions and is left alone.
pub fn peer_plan(table: &[u16], enforcement_cap: u16, enforce: PartEnforce) -> Option<PeerPlan> {
    if enforcement_cap == 0 {
        return None;
    }
    if enforce == PartEnforce::Off {
        return Some(PeerPlan {
            blocks: Vec::new(),
            enforce,
        });
    }
    // OpenSM walks the blocks up to the last one it placed a P_Key in.
    let used = table
        .iter()
        .rposition(|&pkey| pkey != 0)
        .map_or(0, |last| ((last / BLOCK + 1) * BLOCK).min(table.len()));
    let keys = table[..used]
        .iter()
        .copied()
        .filter(|&pkey| is_valid(pkey) && (pkey & FULL != 0 || !table.contains(&(pkey | FULL))));
    let max_blocks = usize::from(enforcement_cap).div_ceil(BLOCK);
    let mut blocks = Vec::new();
    let mut block = [0u16; BLOCK];
    let mut filled = 0;
    for pkey in keys {
        if blocks.len() >= max_blocks {
            // More P_Keys than the switch port holds: what fitted is written, and the port
            // does not enforce.
            return Some(PeerPlan {
                blocks,
                enforce: PartEnforce::Off,
            });
        }
        block[filled] = pkey;
        filled += 1;
        if filled == BLOCK {
            blocks.push((blocks.len() as u16, block));
            filled = 0;
        }
    }
    if blocks.len() >= max_blocks {
        // OpenSM counts a table that exactly fills the port as overflowing too.
        return Some(PeerPlan {
            blocks,
            enforce: PartEnforce::Off,
        });
    }
    if filled > 0 {
        block[filled..].fill(0);
        blocks.push((blocks.len() as u16, block));
    }
    Some(PeerPlan { blocks, enforce })
}

#[cfg(test)]
mod tests;
